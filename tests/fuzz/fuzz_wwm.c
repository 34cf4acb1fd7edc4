/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wwm.c: create-pretraining-data's whole-word marks (tools/wwm.c)
 * against the rule as ernie-data.md 4.5 writes it, on pre-segmented
 * sentences drawn from a small alphabet (eight Chinese characters, Latin
 * letters and digits, an upper-case letter the tokenizer lowers, a
 * comma, the space that separates words) so that words repeat, share
 * first characters (past the 16 a chain holds) and span tokens.  The
 * first byte picks the longest window (1-8 tokens, bits 0-2), whether the
 * marking gets the tokenizer's chars array (bit 3) and whether the last
 * letter of the alphabet is a Chinese character the vocab lacks, which
 * becomes [UNK] (bit 4); each further byte a character.  The marks must
 * be the rule's, token for token.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/wwm.h"
#include "fuzz.h"
#include "tok.h"

static const char vocab_text[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
    "\xe4\xb8\xad\n\xe5\x9b\xbd\n\xe4\xba\xba\n\xe5\xa4\xa7\n" /* 中国人大 */
    "\xe5\xad\xa6\n\xe7\x94\x9f\n\xe7\x9a\x84\n\xe6\x98\xaf\n" /* 学生的是 */
    "a\nb\nab\n##a\n##b\n##ab\n1\n##1\n\xef\xbc\x8c\n";        /* ， */

static const char *const alphabet[16] = {
    "\xe4\xb8\xad",
    "\xe5\x9b\xbd",
    "\xe4\xba\xba",
    "\xe5\xa4\xa7",
    "\xe5\xad\xa6",
    "\xe7\x94\x9f",
    "\xe7\x9a\x84",
    "\xe6\x98\xaf",
    "a",
    "b",
    "A",
    "1",
    "\xef\xbc\x8c",
    " ",
    " ",
    "\xe4\xb8\xad",
};

/* Does t hold a character of U+4E00..U+9FA5? */
static bool
has_cjk(const char *t, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(t + i, len - i, &cp);

        if (k == 0)
            return false;
        if (cp >= 0x4E00 && cp <= 0x9FA5)
            return true;
        i += k;
    }
    return false;
}

/* Is w[0..n) one of the words? */
static bool
in_words(const char *const *wp, const size_t *wl, size_t n_words, const char *w,
         size_t n)
{
    for (size_t i = 0; i < n_words; i++)
        if (wl[i] == n && memcmp(wp[i], w, n) == 0)
            return true;
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tok_vocab *v, *ext;
    static struct tok_tokenizer *t;
    static struct wwm_vocab *marks[8];
    static struct wwm *m;
    struct tok_buf text, win;
    struct tok_encoding e;
    tok_id *out;
    const char *joined, **wp;
    size_t joined_len, max_l, *wl, n_words = 0;

    if (v == NULL) {
        struct tok_opts o;
        tok_id *cont;

        if (tok_vocab_parse(&v, vocab_text, sizeof(vocab_text) - 1, "fuzz",
                            NULL) < 0 ||
            tok_vocab_copy(&ext, v, NULL) < 0 ||
            tok_vocab_extend_chinese(ext, NULL) < 0)
            abort();
        tok_opts_init(&o, TOK_FLAVOR_ERNIE);
        if (tok_tokenizer_new(&t, v, &o, NULL) < 0 || (m = wwm_new()) == NULL)
            abort();
        /* The "##" ids without the extended copy; the rule below looks
         * them up in the copy. */
        cont = malloc(tok_vocab_n_ids(v) * sizeof(*cont));
        if (cont == NULL)
            abort();
        tok_vocab_cont_ids(v, cont);
        for (size_t k = 0; k < 8; k++)
            if ((marks[k] = wwm_vocab_new(v, cont, k + 1, " ")) == NULL)
                abort();
        /* A separator that is not UTF-8 (half of 中) is refused. */
        errno = 0;
        if (wwm_vocab_new(v, cont, 1, "\xe4\xb8") != NULL || errno != EINVAL)
            abort();
        free(cont);
    }
    if (size == 0 || size > 4096)
        return 0;
    max_l = (size_t)(data[0] & 7) + 1;
    tok_buf_init(&text);
    tok_buf_init(&win);
    for (size_t i = 1; i < size; i++) {
        const char *a = alphabet[data[i] & 15];

        if ((data[i] & 15) == 15 && (data[0] & 16))
            a = "\xe5\xa5\xbd"; /* 好, not in the vocab */
        if (tok_buf_append(&text, a, strlen(a)) < 0)
            abort();
    }
    if (tok_buf_append(&text, "", 0) < 0 || wwm_keep_slack(&text) < 0)
        abort();
    wwm_clear(m);
    if (wwm_split(m, marks[max_l - 1], text.data ? text.data : "", text.len,
                  &joined, &joined_len) < 0)
        abort();
    tok_encoding_init(&e);
    e.want_chars = (data[0] & 8) != 0;
    if (tok_encode(t, joined, joined_len, &e, NULL) < 0)
        abort();
    /* The marks go into a copy: the rule below reads the tokens. */
    out = malloc((e.n ? e.n : 1) * sizeof(*out));
    if (out == NULL)
        abort();
    if (e.n > 0) /* a text of no tokens has no ids array (e.ids NULL) */
        memcpy(out, e.ids, e.n * sizeof(*out));
    if (wwm_mark(m, marks[max_l - 1], out, e.want_chars ? e.chars : NULL, e.n) <
        0)
        abort();

    /* The rule: the words are text.split(" ") with empty strings repaired
     * (the second of two in a row is a " "); at each token that holds a
     * Chinese character, the longest window of at most max_l tokens whose
     * concatenation is a word marks its other tokens "##". */
    wp = malloc((text.len + 2) * sizeof(*wp));
    wl = malloc((text.len + 2) * sizeof(*wl));
    if (wp == NULL || wl == NULL)
        abort();
    {
        const char *p = text.data ? text.data : "", *end = p + text.len;
        bool prev_empty = false;

        for (;;) {
            const char *hit = memchr(p, ' ', (size_t)(end - p));
            size_t n = (size_t)((hit ? hit : end) - p);

            if (n == 0 && prev_empty) {
                wp[n_words] = " ";
                wl[n_words++] = 1;
                prev_empty = false;
            } else {
                wp[n_words] = p;
                wl[n_words++] = n;
                prev_empty = n == 0;
            }
            if (hit == NULL)
                break;
            p = hit + 1;
        }
    }
    for (size_t i = 0; i < e.n;) {
        size_t len, l = 1;
        const char *tk = tok_vocab_token(v, e.ids[i], &len);

        if (tk != NULL && has_cjk(tk, len)) {
            for (size_t L = e.n - i < max_l ? e.n - i : max_l; L > 1; L--) {
                win.len = 0;
                for (size_t k = 0; k < L; k++) {
                    const char *s = tok_vocab_token(v, e.ids[i + k], &len);

                    if (tok_buf_append(&win, s, len) < 0)
                        abort();
                }
                if (in_words(wp, wl, n_words, win.data, win.len)) {
                    l = L;
                    break;
                }
            }
        }
        if (out[i] != e.ids[i])
            abort();
        for (size_t k = 1; k < l; k++) {
            char buf[64];
            const char *s = tok_vocab_token(v, e.ids[i + k], &len);
            tok_id want;

            if (len + 2 > sizeof(buf))
                abort();
            buf[0] = buf[1] = '#';
            memcpy(buf + 2, s, len);
            want = tok_vocab_find(ext, buf, len + 2);
            if (want < 0)
                want = tok_vocab_special(v, TOK_SPECIAL_UNK);
            if (out[i + k] != want)
                abort();
        }
        i += l;
    }
    free(out);
    free(wp);
    free(wl);
    tok_encoding_release(&e);
    tok_buf_release(&text);
    tok_buf_release(&win);
    return 0;
}
