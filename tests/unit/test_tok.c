/* SPDX-License-Identifier: MIT */
/*
 * test_tok.c: unit tests of libtok: UTF-8, vocab loading and its errors,
 * the ##<CJK> extension, encode/decode, offsets, limits and threads.  The
 * exactness against the reference tokenizers on real text is tested by
 * tests/conformance; these tests pin the library's own contracts.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "tok.h"

static const char toy_vocab[] =
    "[PAD]\n[CLS]\n[SEP]\n[MASK]\n[UNK]\n我\n爱\n北\n京\n天\n安\n门\n今\n日\n"
    "晴\nhe\n##llo\nworld\n。\n";

/* The WordPiece example of Google BERT's docstring: un ##aff ##able. */
static const char wp_vocab[] = "[UNK]\n[CLS]\n[SEP]\nun\n##aff\n##able\naff\n"
                               "able\n,\n!\nhello\n##s\nworld\ncafe\na\n##a\n";

static struct tok_vocab *
vocab_from(const char *text)
{
    struct tok_vocab *v = NULL;
    struct tok_err e;

    if (tok_vocab_parse(&v, text, strlen(text), "test", &e) < 0)
        fprintf(stderr, "vocab: %s\n", e.msg);
    return v;
}

static struct tok_tokenizer *
tokenizer_from(const struct tok_vocab *v, enum tok_flavor fl, int lower)
{
    struct tok_tokenizer *t = NULL;
    struct tok_opts o;

    tok_opts_init(&o, fl);
    o.lowercase = lower;
    if (tok_tokenizer_new(&t, v, &o, NULL) < 0)
        return NULL;
    return t;
}

/* Encode and render as space-separated tokens into buf. */
static void
encode_tokens(const struct tok_tokenizer *t, const struct tok_vocab *v,
              const char *text, char *buf, size_t cap)
{
    struct tok_encoding e;
    size_t off = 0;

    tok_encoding_init(&e);
    buf[0] = '\0';
    if (tok_encode(t, text, strlen(text), &e, NULL) == 0) {
        for (size_t i = 0; i < e.n; i++) {
            const char *s = tok_vocab_token(v, e.ids[i], NULL);
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? " " : "",
                                    s ? s : "?");
        }
    }
    tok_encoding_release(&e);
}

/* ------------------------------------------------------------------ UTF-8 */

static void
test_utf8_roundtrip_all_codepoints(void)
{
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        char b[4];
        uint32_t back = 0;
        size_t n = tok_utf8_encode(cp, b);

        if (cp >= 0xD800 && cp <= 0xDFFF) {
            CHECK_EQ_INT(n, 0);
            continue;
        }
        if (tok_utf8_decode(b, n, &back) != n || back != cp ||
            tok_utf8_check(b, n) != n) {
            CHECK_EQ_INT(back, cp);
            return;
        }
    }
    CHECK_EQ_INT(tok_utf8_encode(0x110000, (char[4]){ 0 }), 0);
}

static void
test_utf8_check_rejects(void)
{
    /* Overlong, surrogate, above U+10FFFF, truncated, stray continuation. */
    CHECK_EQ_INT(tok_utf8_check("ab\xC0\xAF", 4), 2);
    CHECK_EQ_INT(tok_utf8_check("\xE0\x80\xAF", 3), 0);
    CHECK_EQ_INT(tok_utf8_check("x\xED\xA0\x80", 4), 1);
    CHECK_EQ_INT(tok_utf8_check("\xF4\x90\x80\x80", 4), 0);
    CHECK_EQ_INT(tok_utf8_check("\xE4\xB8", 2), 0);
    CHECK_EQ_INT(tok_utf8_check("abcdefghij\x80", 11), 10);
    CHECK_EQ_INT(tok_utf8_check("\xE4\xB8\xAD\xF0\x9F\x98\x80", 7), 7);
}

static void
test_utf8_sanitize_maximal_subparts(void)
{
    /* Unicode 15, section 3.9, Table 3-8: U+FFFD per maximal subpart. */
    static const char in[] = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80"
                             "\xBF\x64";
    static const char want[] = "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                               "b\xEF\xBF\xBD"
                               "c\xEF\xBF\xBD\xEF\xBF\xBD"
                               "d";
    struct tok_buf b;
    struct tok_err e;
    size_t off = 99;

    tok_buf_init(&b);
    CHECK_EQ_INT(
        tok_utf8_sanitize(in, sizeof(in) - 1, TOK_UTF8_REPLACE, &b, NULL, &e),
        6);
    CHECK_EQ_INT(b.len, sizeof(want) - 1);
    CHECK_EQ_MEM(b.data, want, sizeof(want) - 1);
    tok_buf_clear(&b);
    CHECK_EQ_INT(
        tok_utf8_sanitize(in, sizeof(in) - 1, TOK_UTF8_SKIP, &b, NULL, &e), 6);
    CHECK_EQ_STR(b.data, "abcd");
    tok_buf_clear(&b);
    CHECK_EQ_INT(
        tok_utf8_sanitize(in, sizeof(in) - 1, TOK_UTF8_STRICT, &b, &off, &e),
        TOK_EUTF8);
    CHECK_EQ_INT(off, 1);
    CHECK_EQ_INT(e.code, TOK_EUTF8);
    CHECK(strstr(e.msg, "offset 1") != NULL);
    CHECK_EQ_INT(b.len, 0);
    tok_buf_release(&b);
}

/* ------------------------------------------------------------------ vocab */

static void
test_vocab_plain_ids_are_line_numbers(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);

    CHECK(v != NULL);
    if (v == NULL)
        return;
    CHECK_EQ_INT(tok_vocab_size(v), 19);
    CHECK_EQ_INT(tok_vocab_find(v, "he", 2), 15);
    CHECK_EQ_INT(tok_vocab_find(v, "##llo", 5), 16);
    CHECK_EQ_INT(tok_vocab_find(v, "nope", 4), -1);
    CHECK_EQ_STR(tok_vocab_token(v, 17, NULL), "world");
    CHECK(tok_vocab_token(v, 19, NULL) == NULL);
    CHECK(tok_vocab_token(v, -1, NULL) == NULL);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_PAD), 0);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_CLS), 1);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_UNK), 4);
    tok_vocab_free(v);
}

static void
test_vocab_tab_format_and_crlf(void)
{
    static const char text[] = "[PAD]\t0\r\nb\t2\r\n[UNK]\t1\r\nc\t3";
    struct tok_vocab *v = vocab_from(text);

    CHECK(v != NULL);
    if (v == NULL)
        return;
    CHECK_EQ_INT(tok_vocab_size(v), 4);
    CHECK_EQ_INT(tok_vocab_find(v, "b", 1), 2);
    CHECK_EQ_INT(tok_vocab_find(v, "c", 1), 3);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_UNK), 1);
    CHECK_EQ_STR(tok_vocab_token(v, 2, NULL), "b");
    tok_vocab_free(v);
}

static void
test_vocab_repeated_token_keeps_last_id(void)
{
    struct tok_vocab *v = vocab_from("[UNK]\nx\ny\nx\n");

    CHECK(v != NULL);
    if (v == NULL)
        return;
    CHECK_EQ_INT(tok_vocab_find(v, "x", 1), 3);
    CHECK(tok_vocab_token(v, 1, NULL) == NULL);
    CHECK_EQ_INT(tok_vocab_size(v), 3);
    CHECK_EQ_INT(tok_vocab_n_ids(v), 4);
    tok_vocab_free(v);
}

static void
test_vocab_repeats_name_lines(void)
{
    /* Plain: lines are ids + 1; a third "x" repeats the second. */
    struct tok_vocab *v = vocab_from("[UNK]\nx\ny\nx\nz\nx\n");
    const struct tok_vocab_repeat *r;
    size_t n = 99;

    CHECK(v != NULL);
    if (v == NULL)
        return;
    r = tok_vocab_repeats(v, &n);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_EQ_INT(r[0].id, 3);
        CHECK_EQ_INT(r[0].dropped_id, 1);
        CHECK_EQ_INT(r[0].line, 4);
        CHECK_EQ_INT(r[0].first_line, 2);
        CHECK_EQ_INT(r[1].id, 5);
        CHECK_EQ_INT(r[1].dropped_id, 3);
        CHECK_EQ_INT(r[1].line, 6);
        CHECK_EQ_INT(r[1].first_line, 4);
        CHECK_EQ_STR(tok_vocab_token(v, r[1].id, NULL), "x");
    }
    tok_vocab_free(v);

    /* token<TAB>id: the lines, not the ids, of the two entries. */
    v = vocab_from("x\t2\n[UNK]\t0\nx\t1\n");
    CHECK(v != NULL);
    if (v == NULL)
        return;
    r = tok_vocab_repeats(v, &n);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ_INT(r[0].id, 1);
        CHECK_EQ_INT(r[0].dropped_id, 2);
        CHECK_EQ_INT(r[0].line, 3);
        CHECK_EQ_INT(r[0].first_line, 1);
    }
    tok_vocab_free(v);

    v = vocab_from(wp_vocab);
    CHECK(v != NULL);
    if (v != NULL) {
        tok_vocab_repeats(v, &n);
        CHECK_EQ_INT(n, 0);
    }
    tok_vocab_free(v);
}

static void
check_vocab_error(const char *text, size_t len, const char *needle)
{
    struct tok_vocab *v = (struct tok_vocab *)1;
    struct tok_err e;

    memset(&e, 0, sizeof(e));
    CHECK_EQ_INT(tok_vocab_parse(&v, text, len, "bad.txt", &e), TOK_EFORMAT);
    CHECK(v == NULL);
    CHECK_EQ_INT(e.code, TOK_EFORMAT);
    if (strstr(e.msg, needle) == NULL) {
        fprintf(stderr, "message '%s' lacks '%s'\n", e.msg, needle);
        CHECK(0);
    }
}

static void
test_vocab_errors_name_file_and_line(void)
{
    check_vocab_error("", 0, "'bad.txt' is empty");
    check_vocab_error("a\nb\n", 4, "no [UNK]");
    check_vocab_error("a\t0\n[UNK]\tx\n", 12, "line 2: id 'x' is not a number");
    check_vocab_error("a\t0\n[UNK]\t0\n", 12, "line 2: id 0 is already used");
    check_vocab_error("a\t0\n[UNK]\t7\n", 12, "line 2: id 7 is out of range");
    check_vocab_error("a\t0\n[UNK]\n", 10, "line 2: no TAB");
    check_vocab_error("[UNK]\nb\xff\n", 9, "line 2: invalid UTF-8");
}

static void
test_vocab_load_missing_file(void)
{
    struct tok_vocab *v;
    struct tok_err e;

    CHECK_EQ_INT(tok_vocab_load(&v, "/nonexistent/vocab.txt", &e), TOK_EIO);
    CHECK(strstr(e.msg, "cannot open vocab '/nonexistent/vocab.txt'") != NULL);
    CHECK(v == NULL);
}

static void
test_vocab_extend_chinese_spec_vector(void)
{
    /* ernie-data.md 10b, produced by PaddleNLP's extend_chinese_char():
     * ##我 = 19 ... ##晴 = 28, in vocab order. */
    static const char *const chars[] = { "我", "爱", "北", "京", "天",
                                         "安", "门", "今", "日", "晴" };
    struct tok_vocab *v = vocab_from(toy_vocab);
    char buf[8];

    if (v == NULL) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(tok_vocab_extend_chinese(v, NULL), 10);
    CHECK_EQ_INT(tok_vocab_extend_chinese(v, NULL), 0);
    CHECK_EQ_INT(tok_vocab_size(v), 19);
    CHECK_EQ_INT(tok_vocab_n_ids(v), 29);
    for (int i = 0; i < 10; i++) {
        snprintf(buf, sizeof(buf), "##%s", chars[i]);
        CHECK_EQ_INT(tok_vocab_find(v, buf, strlen(buf)), 19 + i);
        CHECK_EQ_STR(tok_vocab_token(v, 19 + i, NULL), buf);
    }
    CHECK_EQ_INT(tok_vocab_find(v, "##。", strlen("##。")), -1);
    tok_vocab_free(v);
}

static void
test_vocab_real_files(void)
{
    const char *data = getenv("DATA");
    char path[1024];
    struct tok_vocab *v;
    struct tok_err e;

    if (data == NULL || *data == '\0')
        data = "../shared/data";
    snprintf(path, sizeof(path), "%s/vocab/bert-base-chinese.vocab.txt", data);
    if (tok_vocab_load(&v, path, &e) < 0)
        SKIP("shared data not found (set DATA=)");
    CHECK_EQ_INT(tok_vocab_size(v), 21128);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_UNK), 100);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_CLS), 101);
    tok_vocab_free(v);
    snprintf(path, sizeof(path), "%s/vocab/ernie-3.0-base-zh.vocab.txt", data);
    CHECK_EQ_INT(tok_vocab_load(&v, path, &e), 0);
    if (v == NULL)
        return;
    /* shared/data/README.md: 39,980 entries, [PAD]=0 [CLS]=1 [SEP]=2
     * [MASK]=3 [UNK]=39979.  "$" is there twice (ids 12084 and 18005):
     * like a Python dict, the last id wins and V counts it once. */
    CHECK_EQ_INT(tok_vocab_size(v), 39979);
    CHECK_EQ_INT(tok_vocab_n_ids(v), 39980);
    CHECK_EQ_INT(tok_vocab_find(v, "$", 1), 18005);
    CHECK(tok_vocab_token(v, 12084, NULL) == NULL);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_PAD), 0);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_CLS), 1);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_SEP), 2);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_MASK), 3);
    CHECK_EQ_INT(tok_vocab_special(v, TOK_SPECIAL_UNK), 39979);
    /* PaddleNLP 2.8.1's extend_chinese_char() on this vocab adds 20902
     * tokens numbered from len(tokenizer) = 39979, so "##的" shares [UNK]'s
     * id and decodes as "##的" (its added_tokens_decoder wins); all fit
     * uint16 (ernie-data.md 4.4).  The CLI conformance suite checks the
     * same against PaddleNLP itself. */
    CHECK_EQ_INT(tok_vocab_extend_chinese(v, NULL), 20902);
    CHECK_EQ_INT(tok_vocab_find(v, "##\xe7\x9a\x84", 5), 39979); /* ##的 */
    CHECK_EQ_INT(tok_vocab_find(v, "##\xe4\xb8\x80", 5), 39980); /* ##一 */
    CHECK_EQ_INT(tok_vocab_find(v, "[UNK]", 5), 39979);
    CHECK_EQ_STR(tok_vocab_token(v, 39979, NULL), "##\xe7\x9a\x84");
    CHECK_EQ_INT(tok_vocab_n_ids(v), 60881);
    tok_vocab_free(v);
}

/* A copy extended, the original left as loaded: the copy answers every id
 * and token as the same file loaded and extended again (ERNIE's vocab,
 * with its repeated "$" and its extension sharing [UNK]'s id). */
/* tok_vocab_cont_ids() of a vocab as loaded, and of one extended, give
 * for every id what tok_vocab_find() of "##" + its token answers in the
 * extended vocab, and count the ids the extension adds: ERNIE's vocab
 * (its repeated "$" makes the first "##" id [UNK]'s) and BERT's (whose
 * own "##<CJK>" tokens are found, not added). */
static void
check_cont_ids(const char *file, int64_t want_added)
{
    const char *data = getenv("DATA");
    char path[1024], buf[300];
    struct tok_vocab *v, *ext;
    struct tok_err e;
    tok_id *cont, *cont_ext;
    size_t n;

    if (data == NULL || *data == '\0')
        data = "../shared/data";
    snprintf(path, sizeof(path), "%s/vocab/%s", data, file);
    if (tok_vocab_load(&v, path, &e) < 0)
        SKIP("shared data not found (set DATA=)");
    CHECK_EQ_INT(tok_vocab_load(&ext, path, &e), 0);
    n = tok_vocab_n_ids(v);
    cont = malloc(n * sizeof(*cont));
    CHECK_EQ_INT(tok_vocab_cont_ids(v, cont), want_added);
    CHECK_EQ_INT(tok_vocab_extend_chinese(ext, NULL), want_added);
    cont_ext = malloc(tok_vocab_n_ids(ext) * sizeof(*cont_ext));
    CHECK_EQ_INT(tok_vocab_cont_ids(ext, cont_ext), 0);
    for (size_t id = 0; id < n; id++) {
        size_t len;
        const char *t = tok_vocab_token(v, (tok_id)id, &len);
        tok_id want = -1;

        if (t != NULL && len + 2 <= sizeof(buf)) {
            buf[0] = buf[1] = '#';
            memcpy(buf + 2, t, len);
            want = tok_vocab_find(ext, buf, len + 2);
        }
        if (cont[id] != want) {
            fprintf(stderr, "%s: id %zu: %d, want %d\n", file, id,
                    (int)cont[id], (int)want);
            CHECK(0);
            break;
        }
    }
    /* Extended already: the same ids of "##" forms, none added. */
    for (size_t id = 0; id < n; id++)
        if (tok_vocab_token(v, (tok_id)id, NULL) != NULL &&
            cont_ext[id] != cont[id]) {
            fprintf(stderr, "%s: id %zu extended: %d, want %d\n", file, id,
                    (int)cont_ext[id], (int)cont[id]);
            CHECK(0);
            break;
        }
    free(cont);
    free(cont_ext);
    tok_vocab_free(v);
    tok_vocab_free(ext);
}

static void
test_vocab_cont_ids(void)
{
    check_cont_ids("ernie-3.0-base-zh.vocab.txt", 20902);
    check_cont_ids("bert-base-chinese.vocab.txt", 0);
}

static void
test_vocab_copy(void)
{
    const char *data = getenv("DATA");
    char path[1024];
    struct tok_vocab *v, *c = NULL, *ref;
    struct tok_err e;

    if (data == NULL || *data == '\0')
        data = "../shared/data";
    snprintf(path, sizeof(path), "%s/vocab/ernie-3.0-base-zh.vocab.txt", data);
    if (tok_vocab_load(&v, path, &e) < 0)
        SKIP("shared data not found (set DATA=)");
    CHECK_EQ_INT(tok_vocab_load(&ref, path, &e), 0);
    CHECK_EQ_INT(tok_vocab_copy(&c, v, &e), 0);
    if (c == NULL || ref == NULL) {
        tok_vocab_free(v);
        tok_vocab_free(ref);
        return;
    }
    CHECK_EQ_INT(tok_vocab_extend_chinese(c, NULL), 20902);
    CHECK_EQ_INT(tok_vocab_extend_chinese(ref, NULL), 20902);
    CHECK_EQ_INT(tok_vocab_n_ids(c), tok_vocab_n_ids(ref));
    CHECK_EQ_INT(tok_vocab_size(c), tok_vocab_size(ref));
    for (size_t id = 0; id < tok_vocab_n_ids(ref); id++) {
        size_t lc = 0, lr = 0;
        const char *tc = tok_vocab_token(c, (tok_id)id, &lc);
        const char *tr = tok_vocab_token(ref, (tok_id)id, &lr);

        if ((tc == NULL) != (tr == NULL) ||
            (tr != NULL &&
             (lc != lr || memcmp(tc, tr, lr) != 0 ||
              tok_vocab_find(c, tr, lr) != tok_vocab_find(ref, tr, lr)))) {
            fprintf(stderr, "id %zu differs in the copy\n", id);
            CHECK(0);
            break;
        }
    }
    /* The original is untouched: no "##" tokens, 39980 ids. */
    CHECK_EQ_INT(tok_vocab_n_ids(v), 39980);
    CHECK_EQ_INT(tok_vocab_find(v, "##\xe7\x9a\x84", 5), -1); /* ##的 */
    CHECK_EQ_INT(tok_vocab_find(v, "[UNK]", 5), 39979);
    CHECK_EQ_STR(tok_vocab_token(v, 39979, NULL), "[UNK]");
    {
        /* The file repeats "$" (lines 12085 and 18006), in the copy too. */
        size_t n = 0;
        const struct tok_vocab_repeat *r = tok_vocab_repeats(c, &n);

        CHECK_EQ_INT(n, 1);
        if (n == 1) {
            CHECK_EQ_STR(tok_vocab_token(c, r[0].id, NULL), "$");
            CHECK_EQ_INT(r[0].first_line, 12085);
            CHECK_EQ_INT(r[0].line, 18006);
            CHECK_EQ_INT(r[0].dropped_id, 12084);
        }
    }
    tok_vocab_free(v);
    tok_vocab_free(c);
    tok_vocab_free(ref);
}

/* ----------------------------------------------------------------- encode */

static void
test_encode_wordpiece_greedy(void)
{
    struct tok_vocab *v = vocab_from(wp_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_BERT, 1);
    char buf[512];

    CHECK(t != NULL);
    encode_tokens(t, v, "unaffable", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "un ##aff ##able");
    encode_tokens(t, v, "Hello, WORLDS!", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "hello , world ##s !");
    /* No piece fits "x": the whole word is [UNK], nothing partial. */
    encode_tokens(t, v, "unaffx able", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "[UNK] able");
    encode_tokens(t, v, "Café", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "cafe");
    encode_tokens(t, v, "", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "");
    encode_tokens(t, v, " \t\r\n ", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "");
    /* Special tokens in the text are matched before normalization. */
    encode_tokens(t, v, "[CLS]un[SEP] [cls]", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "[CLS] un [SEP] [UNK] [UNK] [UNK]");
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_encode_cased_keeps_accents(void)
{
    struct tok_vocab *v = vocab_from(wp_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_BERT, 0);
    char buf[256];

    encode_tokens(t, v, "Café cafe", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "[UNK] cafe");
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_encode_max_chars_per_word(void)
{
    struct tok_vocab *v = vocab_from(wp_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_BERT, 1);
    struct tok_encoding e;
    char word[102];

    memset(word, 'a', sizeof(word));
    tok_encoding_init(&e);
    /* 100 characters: a ##a ##a ... (100 tokens); 101: one [UNK]. */
    CHECK_EQ_INT(tok_encode(t, word, 100, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 100);
    tok_encoding_clear(&e);
    CHECK_EQ_INT(tok_encode(t, word, 101, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 1);
    CHECK_EQ_INT(e.ids[0], tok_vocab_special(v, TOK_SPECIAL_UNK));
    tok_encoding_release(&e);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_encode_huge_word_is_one_unk(void)
{
    struct tok_vocab *v = vocab_from(wp_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_BERT, 1);
    struct tok_encoding e;
    size_t len = 20u << 20;
    char *big = malloc(len);

    if (big == NULL) {
        CHECK(0);
        return;
    }
    memset(big, 'a', len);
    memcpy(big + len / 2, ",", 1);
    tok_encoding_init(&e);
    e.want_offsets = 1;
    CHECK_EQ_INT(tok_encode(t, big, len, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 3); /* [UNK] , [UNK] */
    if (e.n == 3) {
        CHECK_EQ_INT(e.starts[0], 0);
        CHECK_EQ_INT(e.ends[0], len / 2);
        CHECK_EQ_INT(e.starts[1], len / 2);
        CHECK_EQ_INT(e.ends[2], len);
    }
    tok_encoding_release(&e);
    free(big);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_encode_offsets_cover_source_bytes(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    struct tok_encoding e;
    static const char text[] = "我爱北京 HeLLo\tworld。";
    static const size_t want[][2] = { { 0, 3 },   { 3, 6 },   { 6, 9 },
                                      { 9, 12 },  { 13, 15 }, { 15, 18 },
                                      { 19, 24 }, { 24, 27 } };

    tok_encoding_init(&e);
    e.want_offsets = 1;
    CHECK_EQ_INT(tok_encode(t, text, strlen(text), &e, NULL), 0);
    CHECK_EQ_INT(e.n, 8);
    for (size_t i = 0; i < e.n && i < 8; i++) {
        CHECK_EQ_INT(e.starts[i], want[i][0]);
        CHECK_EQ_INT(e.ends[i], want[i][1]);
    }
    tok_encoding_release(&e);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

/* Offsets switched on after a call sized the arrays without them: the
 * next call must allocate them before its first token. */
static void
test_encode_offsets_switched_on_later(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    struct tok_encoding e;
    static const char text[] = "我爱北京";

    tok_encoding_init(&e);
    CHECK_EQ_INT(tok_encode(t, text, 6, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 2);
    CHECK(e.starts == NULL);
    e.want_offsets = 1;
    CHECK_EQ_INT(tok_encode(t, text + 6, 6, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 4);
    CHECK(e.starts != NULL && e.ends != NULL);
    if (e.starts != NULL && e.ends != NULL) {
        CHECK_EQ_INT(e.starts[2], 0);
        CHECK_EQ_INT(e.ends[2], 3);
        CHECK_EQ_INT(e.starts[3], 3);
        CHECK_EQ_INT(e.ends[3], 6);
    }
    tok_encoding_release(&e);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

/* chars: the code point of each token that is one character of the text,
 * unchanged (ideographs, punctuation); 0 for WordPiece pieces, [UNK] (a
 * character the vocab lacks) and a compatibility ideograph that NFD
 * changes.  Switched on after an earlier call, as offsets can be. */
static void
test_encode_chars(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    struct tok_encoding e;
    static const char text[] = "\xe4\xbb\x8a" /* 今, before */
                               "我爱hello好。\xef\xa4\x80北";
    static const uint32_t want[] = {
        0x6211, 0x7231, 0, 0, 0, 0x3002, 0, 0x5317
    };

    tok_encoding_init(&e);
    CHECK_EQ_INT(tok_encode(t, text, 3, &e, NULL), 0);
    CHECK(e.chars == NULL);
    e.want_chars = 1;
    tok_encoding_clear(&e);
    CHECK_EQ_INT(tok_encode(t, text + 3, strlen(text) - 3, &e, NULL), 0);
    CHECK_EQ_INT(e.n, 8);
    CHECK(e.chars != NULL);
    if (e.chars != NULL && e.n == 8)
        for (size_t i = 0; i < 8; i++)
            CHECK_EQ_INT(e.chars[i], want[i]);
    CHECK_EQ_INT(e.ids[4], tok_vocab_special(v, TOK_SPECIAL_UNK));
    tok_encoding_release(&e);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

/* A run of ideographs longer than the arrays' first capacities (256,
 * 512), for each choice of the optional arrays and with or without the
 * caller's word that the text is valid UTF-8: every token, offset and
 * chars entry as the characters give them, up to a character the vocab
 * lacks ([UNK], on the general path) and after a word still open. */
static void
test_encode_long_cjk_run(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    static const char *chars[] = { "我", "爱", "北", "京", "天", "安", "门" };
    static const uint32_t cps[] = { 0x6211, 0x7231, 0x5317, 0x4EAC,
                                    0x5929, 0x5B89, 0x95E8 };
    enum { RUN = 700 };
    char *text = malloc(2 + 3 * RUN + 3 + 1);
    size_t len = 0;

    if (text == NULL)
        return;
    memcpy(text, "he", 2); /* the word "he", closed by the run */
    len = 2;
    for (size_t i = 0; i < RUN; i++, len += 3)
        memcpy(text + len, chars[i % 7], 3);
    memcpy(text + len, "好", 3); /* not in the vocab */
    len += 3;
    for (int opts = 0; opts < 8; opts++) {
        struct tok_encoding e;

        tok_encoding_init(&e);
        e.want_offsets = opts & 1;
        e.want_chars = (opts >> 1) & 1;
        e.valid_utf8 = (opts >> 2) & 1;
        CHECK_EQ_INT(tok_encode(t, text, len, &e, NULL), 0);
        CHECK_EQ_INT(e.n, RUN + 2);
        if (e.n != RUN + 2)
            goto next;
        CHECK_EQ_INT(e.ids[0], tok_vocab_find(v, "he", 2));
        CHECK_EQ_INT(e.ids[RUN + 1], tok_vocab_special(v, TOK_SPECIAL_UNK));
        for (size_t i = 0; i < RUN; i++) {
            size_t k = i + 1;

            CHECK_EQ_INT(e.ids[k], tok_vocab_find(v, chars[i % 7], 3));
            if (e.want_offsets) {
                CHECK_EQ_INT(e.starts[k], 2 + 3 * i);
                CHECK_EQ_INT(e.ends[k], 2 + 3 * i + 3);
            }
            if (e.want_chars)
                CHECK_EQ_INT(e.chars[k], cps[i % 7]);
        }
        if (e.want_chars) {
            CHECK_EQ_INT(e.chars[0], 0);
            CHECK_EQ_INT(e.chars[RUN + 1], 0);
        }
    next:
        tok_encoding_release(&e);
    }
    free(text);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_encode_invalid_utf8_names_offset(void)
{
    struct tok_vocab *v = vocab_from(wp_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_BERT, 1);
    struct tok_encoding e;
    struct tok_err err;

    tok_encoding_init(&e);
    CHECK_EQ_INT(tok_encode(t, "hello \xff world", 13, &e, &err), TOK_EUTF8);
    CHECK_EQ_INT(e.n, 0);
    CHECK(strstr(err.msg, "byte offset 6") != NULL);
    tok_encoding_release(&e);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_decode_roundtrip(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    struct tok_encoding e;
    struct tok_buf b;
    struct tok_err err;
    static const tok_id ext[] = { 5, 25, 7, 8 }; /* 我 ##门 北 京 */

    tok_encoding_init(&e);
    tok_buf_init(&b);
    CHECK_EQ_INT(tok_encode(t, "hello world 我爱", 18, &e, NULL), 0);
    CHECK_EQ_INT(tok_decode(t, e.ids, e.n, &b, NULL), 0);
    CHECK_EQ_STR(b.data, "hello world 我 爱");
    CHECK_EQ_INT(tok_decode(t, ext, 4, &b, &err), TOK_ERANGE);
    CHECK(strstr(err.msg, "id 25 at position 1") != NULL);
    CHECK_EQ_STR(b.data, "hello world 我 爱"); /* left as it was */
    CHECK_EQ_INT(tok_vocab_extend_chinese((struct tok_vocab *)v, NULL), 10);
    tok_buf_clear(&b);
    CHECK_EQ_INT(tok_decode(t, ext, 4, &b, NULL), 0);
    CHECK_EQ_STR(b.data, "我门 北 京");
    tok_buf_release(&b);
    tok_encoding_release(&e);
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

static void
test_flavor_symbols(void)
{
    struct tok_vocab *v = vocab_from("[UNK]\na\n##a\n$\n€\n");
    struct tok_tokenizer *ernie = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    struct tok_tokenizer *bert = tokenizer_from(v, TOK_FLAVOR_BERT, 1);
    char buf[128];

    /* '$' is ASCII punctuation for both; '€' (Sc) is split only by
     * PaddleNLP's BasicTokenizer. */
    encode_tokens(ernie, v, "a$a€a", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "a $ a € a");
    encode_tokens(bert, v, "a$a€a", buf, sizeof(buf));
    CHECK_EQ_STR(buf, "a $ [UNK]");
    tok_tokenizer_free(ernie);
    tok_tokenizer_free(bert);
    tok_vocab_free(v);
}

/* Many threads share one tokenizer; each must get the same ids. */
struct thread_job {
    const struct tok_tokenizer *t;
    const char *text;
    size_t n_ids;
    tok_id first, last;
};

static void *
thread_main(void *arg)
{
    struct thread_job *j = arg;
    struct tok_encoding e;

    tok_encoding_init(&e);
    for (int k = 0; k < 200; k++) {
        tok_encoding_clear(&e);
        tok_encode(j->t, j->text, strlen(j->text), &e, NULL);
    }
    j->n_ids = e.n;
    j->first = e.n ? e.ids[0] : -1;
    j->last = e.n ? e.ids[e.n - 1] : -1;
    tok_encoding_release(&e);
    return NULL;
}

static void
test_encode_threads_share_tokenizer(void)
{
    struct tok_vocab *v = vocab_from(toy_vocab);
    struct tok_tokenizer *t = tokenizer_from(v, TOK_FLAVOR_ERNIE, 1);
    struct thread_job jobs[4];
    pthread_t tid[4];

    for (int i = 0; i < 4; i++) {
        jobs[i].t = t;
        jobs[i].text = "我爱北京天安门 hello world。今日晴";
        pthread_create(&tid[i], NULL, thread_main, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        CHECK_EQ_INT(jobs[i].n_ids, 14);
        CHECK_EQ_INT(jobs[i].first, 5);
        CHECK_EQ_INT(jobs[i].last, 14);
    }
    tok_tokenizer_free(t);
    tok_vocab_free(v);
}

TESTS(test_tok, TEST(test_utf8_roundtrip_all_codepoints),
      TEST(test_utf8_check_rejects), TEST(test_utf8_sanitize_maximal_subparts),
      TEST(test_vocab_plain_ids_are_line_numbers),
      TEST(test_vocab_tab_format_and_crlf),
      TEST(test_vocab_repeated_token_keeps_last_id),
      TEST(test_vocab_repeats_name_lines),
      TEST(test_vocab_errors_name_file_and_line),
      TEST(test_vocab_load_missing_file),
      TEST(test_vocab_extend_chinese_spec_vector), TEST(test_vocab_real_files),
      TEST(test_vocab_copy), TEST(test_vocab_cont_ids),
      TEST(test_encode_wordpiece_greedy), TEST(test_encode_cased_keeps_accents),
      TEST(test_encode_max_chars_per_word),
      TEST(test_encode_huge_word_is_one_unk),
      TEST(test_encode_offsets_cover_source_bytes),
      TEST(test_encode_offsets_switched_on_later), TEST(test_encode_chars),
      TEST(test_encode_long_cjk_run),
      TEST(test_encode_invalid_utf8_names_offset), TEST(test_decode_roundtrip),
      TEST(test_flavor_symbols), TEST(test_encode_threads_share_tokenizer))
