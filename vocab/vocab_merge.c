/* SPDX-License-Identifier: MIT */
/*
 * vocab_merge.c: the ERNIE merge, the seed's merge_vocab.py
 * (ernie-data.md 6.4): special tokens, the Han block by frequency, the
 * English sentencepiece pieces and the frequent other characters, written
 * once each in that order, with the seed's norm(): the tokens of
 * PaddleNLP's BasicTokenizer(do_lower_case=True), concatenated.
 *
 * norm() follows the Python code rather than libtok's tokenizer, because
 * it must also give the lowercase that the tokenizer never needs to spell
 * out: Python's str.lower() over a whole word (U+0130 becomes two code
 * points, a capital sigma at the end of a word becomes a final sigma) and
 * the canonical order of NFD.  The character tables are utf8proc's, as in
 * libtok.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "vocab.h"
#include "banned.h"

#define HAN_LO 0x4E00u
#define HAN_HI 0x9FA5u
#define N_HAN  (HAN_HI - HAN_LO + 1)

static int err_set(struct tok_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
err_set(struct tok_err *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

/* A growable array of code points. */
struct cps {
    uint32_t *v;
    uint8_t *ccc; /* canonical combining classes, during norm() */
    size_t n, cap;
};

static int
cps_push(struct cps *a, uint32_t cp, uint8_t ccc)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        uint32_t *v = realloc(a->v, cap * sizeof(*v));
        uint8_t *c;

        if (v == NULL)
            return TOK_ENOMEM;
        a->v = v;
        c = realloc(a->ccc, cap);
        if (c == NULL)
            return TOK_ENOMEM;
        a->ccc = c;
        a->cap = cap;
    }
    a->v[a->n] = cp;
    a->ccc[a->n++] = ccc;
    return 0;
}

static void
cps_release(struct cps *a)
{
    free(a->v);
    free(a->ccc);
}

/* ------------------------------------------------------------------------ */
/* norm(): BasicTokenizer(do_lower_case=True), tokens concatenated           */

static int
category(uint32_t cp)
{
    return utf8proc_category((utf8proc_int32_t)cp);
}

/* _clean_text drops NUL, U+FFFD and _is_control (category C*, but not
 * \t \n \r). */
static bool
is_dropped(uint32_t cp)
{
    if (cp == 0 || cp == 0xFFFD)
        return true;
    if (cp == '\t' || cp == '\n' || cp == '\r')
        return false;
    switch (category(cp)) {
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
        return true;
    }
    return false;
}

/* What splits words once controls are gone: _is_whitespace (\t \n \r,
 * space, Zs) and the rest of str.split()'s whitespace that survives
 * _clean_text (Zl, Zp). */
static bool
is_separator(uint32_t cp)
{
    int cat;

    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r')
        return true;
    cat = category(cp);
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
           cat == UTF8PROC_CATEGORY_ZP;
}

/* BasicTokenizer._is_chinese_char: each such character is a word. */
static bool
is_bert_cjk(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B820 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* Case_Ignorable: categories Mn Me Cf Lm Sk, and Word_Break MidLetter,
 * MidNumLet and Single_Quote. */
static bool
is_case_ignorable(uint32_t cp)
{
    switch (cp) {
    case 0x0027:
    case 0x002E:
    case 0x003A:
    case 0x00B7:
    case 0x0387:
    case 0x055F:
    case 0x05F4:
    case 0x2018:
    case 0x2019:
    case 0x2024:
    case 0x2027:
    case 0xFE13:
    case 0xFE52:
    case 0xFE55:
    case 0xFF07:
    case 0xFF0E:
    case 0xFF1A:
        return true;
    }
    switch (category(cp)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return true;
    }
    return false;
}

/* Cased: Lu Ll Lt, or a letter with a case mapping (circled letters, Roman
 * numerals), or the two Other_Lowercase letters of Latin-1. */
static bool
is_cased(uint32_t cp)
{
    int cat = category(cp);
    utf8proc_int32_t c = (utf8proc_int32_t)cp;

    return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
           cat == UTF8PROC_CATEGORY_LT || utf8proc_tolower(c) != c ||
           utf8proc_toupper(c) != c || cp == 0xAA || cp == 0xBA;
}

/* Python's str.lower() of w[i] inside the word w[0..n): the full mapping
 * (U+0130 gives "i" U+0307) and the Final_Sigma rule for U+03A3.  Writes
 * one or two code points to out; returns the count. */
static size_t
lower_in_word(const uint32_t *w, size_t n, size_t i, uint32_t *out)
{
    uint32_t cp = w[i];

    if (cp == 0x130) {
        out[0] = 0x69;
        out[1] = 0x307;
        return 2;
    }
    if (cp == 0x3A3) {
        size_t j = i;
        bool final = false;

        while (j > 0 && is_case_ignorable(w[j - 1]))
            j--;
        if (j > 0 && is_cased(w[j - 1])) {
            j = i + 1;
            while (j < n && is_case_ignorable(w[j]))
                j++;
            final = j == n || !is_cased(w[j]);
        }
        out[0] = final ? 0x3C2 : 0x3C3;
        return 1;
    }
    out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
    return 1;
}

/* Lowercase, NFD (with the canonical reordering) and drop Mn: one word
 * w[0..n) appended to out. */
static int
norm_word(const uint32_t *w, size_t n, struct cps *tmp, struct cps *out)
{
    tmp->n = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t low[2];
        size_t n_low = lower_in_word(w, n, i, low);

        for (size_t k = 0; k < n_low; k++) {
            utf8proc_int32_t dec[32];
            int last = 0;
            utf8proc_ssize_t nd = utf8proc_decompose_char(
                (utf8proc_int32_t)low[k], dec, 32, UTF8PROC_DECOMPOSE, &last);

            if (nd < 0 || nd > 32) {
                dec[0] = (utf8proc_int32_t)low[k];
                nd = 1;
            }
            for (utf8proc_ssize_t j = 0; j < nd; j++) {
                const utf8proc_property_t *p = utf8proc_get_property(dec[j]);

                if (cps_push(tmp, (uint32_t)dec[j],
                             (uint8_t)p->combining_class) < 0)
                    return TOK_ENOMEM;
            }
        }
    }
    /* Canonical ordering: a stable sort by class inside each run of
     * non-starters (insertion sort: the runs are short). */
    for (size_t i = 1; i < tmp->n; i++) {
        uint32_t cp = tmp->v[i];
        uint8_t cc = tmp->ccc[i];
        size_t j = i;

        if (cc == 0)
            continue;
        while (j > 0 && tmp->ccc[j - 1] > cc) {
            tmp->v[j] = tmp->v[j - 1];
            tmp->ccc[j] = tmp->ccc[j - 1];
            j--;
        }
        tmp->v[j] = cp;
        tmp->ccc[j] = cc;
    }
    for (size_t i = 0; i < tmp->n; i++)
        if (category(tmp->v[i]) != UTF8PROC_CATEGORY_MN &&
            cps_push(out, tmp->v[i], 0) < 0)
            return TOK_ENOMEM;
    return 0;
}

/* norm() of in[0..n), appended to out.  word and tmp are scratch. */
static int
norm_cps(const uint32_t *in, size_t n, struct cps *word, struct cps *tmp,
         struct cps *out)
{
    word->n = 0;
    for (size_t i = 0; i <= n; i++) {
        uint32_t cp = i < n ? in[i] : ' ';

        if (i < n && is_dropped(cp))
            continue;
        if (is_separator(cp) || is_bert_cjk(cp)) {
            if (word->n && norm_word(word->v, word->n, tmp, out) < 0)
                return TOK_ENOMEM;
            word->n = 0;
            if (is_bert_cjk(cp) && norm_word(&cp, 1, tmp, out) < 0)
                return TOK_ENOMEM;
            continue;
        }
        if (cps_push(word, cp, 0) < 0)
            return TOK_ENOMEM;
    }
    return 0;
}

/* Decode valid UTF-8 s[0..len) into out; false at the first bad byte,
 * whose offset goes to *bad. */
static bool
decode_utf8(const char *s, size_t len, struct cps *out, size_t *bad, int *rc)
{
    out->n = 0;
    *rc = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(s + i, len - i, &cp);

        if (k == 0) {
            *bad = i;
            return false;
        }
        if (cps_push(out, cp, 0) < 0) {
            *rc = TOK_ENOMEM;
            return false;
        }
        i += k;
    }
    return true;
}

static int
encode_utf8(const uint32_t *v, size_t n, struct tok_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        char b[4];
        size_t k = tok_utf8_encode(v[i], b);

        if (tok_buf_append(out, b, k) < 0)
            return TOK_ENOMEM;
    }
    return 0;
}

int
vocab_merge_norm(const char *s, size_t len, struct tok_buf *out,
                 struct tok_err *err)
{
    struct cps in = { 0 }, word = { 0 }, tmp = { 0 }, res = { 0 };
    size_t bad = 0;
    int rc = 0;

    if (!decode_utf8(s, len, &in, &bad, &rc)) {
        if (rc == 0)
            rc = err_set(err, TOK_EUTF8, "invalid UTF-8 at byte offset %zu",
                         bad);
    } else if (norm_cps(in.v, in.n, &word, &tmp, &res) < 0 ||
               encode_utf8(res.v, res.n, out) < 0 ||
               tok_buf_append(out, "", 0) < 0) {
        rc = TOK_ENOMEM;
    }
    if (rc == TOK_ENOMEM)
        err_set(err, rc, "out of memory");
    cps_release(&in);
    cps_release(&word);
    cps_release(&tmp);
    cps_release(&res);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The written tokens (FINAL)                                                */

struct set_slot {
    size_t off; /* the token at text.data + off */
    uint32_t len;
    uint32_t tag; /* 0: empty; else high bits of the hash, | 1 */
};

struct merger {
    struct tok_buf text; /* vocab.txt so far */
    size_t n_lines;
    struct set_slot *slots;
    size_t mask;
    size_t used;
    struct cps in, norm, word, tmp; /* scratch for add() */
    struct tok_buf piece;
};

static uint64_t
hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

/* The slot of t[0..len): its own if present, else the empty one where it
 * goes. */
static struct set_slot *
set_slot(const struct merger *m, const char *t, size_t len, uint64_t h)
{
    uint32_t tag = (uint32_t)(h >> 32) | 1;
    size_t i = (size_t)h & m->mask;

    for (;; i = (i + 1) & m->mask) {
        struct set_slot *s = &m->slots[i];

        if (s->tag == 0)
            return s;
        if (s->tag == tag && s->len == len &&
            memcmp(m->text.data + s->off, t, len) == 0)
            return s;
    }
}

static int
set_grow(struct merger *m)
{
    size_t mask = m->mask ? 2 * m->mask + 1 : 4095;
    struct set_slot *old = m->slots;
    size_t old_n = m->mask ? m->mask + 1 : 0;

    m->slots = calloc(mask + 1, sizeof(*m->slots));
    if (m->slots == NULL) {
        m->slots = old;
        return TOK_ENOMEM;
    }
    m->mask = mask;
    for (size_t i = 0; i < old_n; i++)
        if (old[i].tag) {
            const char *t = m->text.data + old[i].off;
            struct set_slot *s =
                set_slot(m, t, old[i].len, hash_bytes(t, old[i].len));

            *s = old[i];
        }
    free(old);
    return 0;
}

static bool
set_has(const struct merger *m, const char *t, size_t len)
{
    return set_slot(m, t, len, hash_bytes(t, len))->tag != 0;
}

/* Write t[0..len) as a line unless it was written before.  Returns 1 if
 * written, 0 if not, or TOK_ENOMEM. */
static int
emit(struct merger *m, const char *t, size_t len)
{
    uint64_t h = hash_bytes(t, len);
    struct set_slot *s;
    size_t off;

    if ((m->used + 1) * 2 > m->mask + 1) {
        if (set_grow(m) < 0)
            return TOK_ENOMEM;
    }
    s = set_slot(m, t, len, h);
    if (s->tag != 0)
        return 0;
    off = m->text.len;
    if (tok_buf_append(&m->text, t, len) < 0 ||
        tok_buf_append(&m->text, "\n", 1) < 0)
        return TOK_ENOMEM;
    s->off = off;
    s->len = (uint32_t)len;
    s->tag = (uint32_t)(h >> 32) | 1;
    m->used++;
    m->n_lines++;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* add(): the seed's add_vocab()                                             */

/* "<[/a-z]+>" at the start: sentencepiece's control pieces. */
static bool
is_control_piece(const char *t, size_t len)
{
    size_t i = 1;

    if (len < 3 || t[0] != '<')
        return false;
    while (i < len && ((t[i] >= 'a' && t[i] <= 'z') || t[i] == '/'))
        i++;
    return i > 1 && i < len && t[i] == '>';
}

/* "\[[A-Z]+\]" at the start: [PAD] and its kind. */
static bool
is_bracket_token(const char *t, size_t len)
{
    size_t i = 1;

    if (len < 3 || t[0] != '[')
        return false;
    while (i < len && t[i] >= 'A' && t[i] <= 'Z')
        i++;
    return i > 1 && i < len && t[i] == ']';
}

static bool
is_verbatim_first(char ch)
{
    return ch == '#' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9');
}

/* Kana and CJK symbols, or Hangul Jamo: these also get a "##" twin. */
static bool
is_jk(uint32_t cp)
{
    return (cp >= 0x3040 && cp <= 0x33FF) || (cp >= 0x1100 && cp <= 0x11FF);
}

/* add_vocab(t): t[0..len) is valid UTF-8.  Returns the number of tokens
 * written (>= 0) or TOK_ENOMEM. */
static int
add(struct merger *m, const char *t, size_t len)
{
    size_t bad;
    int rc, n = 0;

    if (is_control_piece(t, len))
        return 0;
    if ((len > 0 && is_verbatim_first(t[0])) || is_bracket_token(t, len))
        return emit(m, t, len);
    /* (The seed's branch for "##<Han>" is unreachable: '#' is verbatim.) */
    if (!decode_utf8(t, len, &m->in, &bad, &rc))
        return rc < 0 ? rc : TOK_EINVAL;
    m->norm.n = 0;
    if (norm_cps(m->in.v, m->in.n, &m->word, &m->tmp, &m->norm) < 0)
        return TOK_ENOMEM;
    for (size_t i = 0; i < m->norm.n; i++) {
        uint32_t k = m->norm.v[i];
        char b[6] = { '#', '#' };
        size_t kl = tok_utf8_encode(k, b + 2);

        /* norm() leaves no whitespace or control characters. */
        if ((rc = emit(m, b + 2, kl)) < 0)
            return rc;
        n += rc;
        if (rc == 1 && is_jk(k)) {
            if ((rc = emit(m, b, kl + 2)) < 0)
                return rc;
            n += rc;
        }
    }
    return n;
}

static int
add_cp(struct merger *m, uint32_t cp)
{
    char b[4];
    size_t k = tok_utf8_encode(cp, b);

    return add(m, b, k);
}

/* ------------------------------------------------------------------------ */
/* eng.vocab                                                                 */

/* Python's str.isspace(). */
static bool
py_isspace(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
           cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The next line of s[*pos..len) as Python's text mode reads it (a line
 * ends at "\n", "\r\n" or "\r"), without its end.  False at the end. */
static bool
next_line(const char *s, size_t len, size_t *pos, size_t *start,
          size_t *line_len)
{
    size_t i = *pos;

    if (i >= len)
        return false;
    *start = i;
    while (i < len && s[i] != '\n' && s[i] != '\r')
        i++;
    *line_len = i - *start;
    if (i < len && s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
        i++;
    *pos = i < len ? i + 1 : i;
    return true;
}

/* Step 4: the pieces of eng.vocab in file order. */
static int
add_english(struct merger *m, const char *s, size_t len, const char *name,
            size_t *n_written, struct tok_err *err)
{
    size_t pos = 0, start, line_len, line = 0;

    while (next_line(s, len, &pos, &start, &line_len)) {
        const char *l = s + start;
        size_t bad, n_fields = 0, f0 = 0, f0_end = 0;
        bool in_field = false;
        int rc;

        line++;
        if (!decode_utf8(l, line_len, &m->in, &bad, &rc)) {
            if (rc < 0)
                return err_set(err, rc, "out of memory");
            return err_set(err, TOK_EFORMAT,
                           "eng.vocab '%s' line %zu: invalid UTF-8 at byte "
                           "%zu",
                           name, line, bad);
        }
        /* line.strip().split() must give (piece, score). */
        for (size_t i = 0, off = 0; i < m->in.n; i++) {
            uint32_t cp = m->in.v[i];
            size_t w = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

            if (py_isspace(cp)) {
                if (in_field && n_fields == 1)
                    f0_end = off;
                in_field = false;
            } else if (!in_field) {
                in_field = true;
                if (++n_fields == 1)
                    f0 = off;
            }
            off += w;
            if (i + 1 == m->in.n && in_field && n_fields == 1)
                f0_end = off;
        }
        if (n_fields != 2)
            return err_set(err, TOK_EFORMAT,
                           "eng.vocab '%s' line %zu: %zu field%s, want "
                           "'piece<TAB>score'",
                           name, line, n_fields, n_fields == 1 ? "" : "s");
        /* "▁x" -> "x" (the seed drops the first character of any piece
         * holding a "▁"); "<...>" stays and is dropped by add(); any other
         * piece continues a word: "##x". */
        tok_buf_clear(&m->piece);
        {
            const char *p = l + f0;
            size_t plen = f0_end - f0;

            if (memmem(p, plen, "\xE2\x96\x81", 3) != NULL) {
                uint32_t cp;
                size_t k = tok_utf8_decode(p, plen, &cp);

                rc = tok_buf_append(&m->piece, p + k, plen - k);
            } else if (is_control_piece(p, plen)) {
                rc = tok_buf_append(&m->piece, p, plen);
            } else {
                rc = tok_buf_append(&m->piece, "##", 2);
                if (rc == 0)
                    rc = tok_buf_append(&m->piece, p, plen);
            }
        }
        if (rc < 0 || (rc = add(m, m->piece.data, m->piece.len)) < 0)
            return err_set(err, TOK_ENOMEM, "out of memory");
        *n_written += (size_t)rc;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The merge                                                                 */

struct ranked {
    size_t i; /* index in the counts: the tie order */
    uint64_t count;
};

static int
cmp_ranked(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;

    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

int
vocab_merge(const struct vocab_charcount *counts, size_t n_counts,
            const char *eng_vocab, size_t eng_len, const char *eng_name,
            uint64_t threshold, struct tok_buf *out,
            struct vocab_merge_stats *stats, struct tok_err *err)
{
    static const char *const specials[] = { "[PAD]", "[CLS]", "[SEP]", "[MASK]",
                                            "[UNK]" };
    struct merger m;
    struct vocab_merge_stats st;
    struct ranked *order = NULL;
    uint8_t *han_left = NULL;
    struct cps one = { 0 }, normed = { 0 };
    int rc = 0;

    memset(&m, 0, sizeof(m));
    memset(&st, 0, sizeof(st));
    tok_buf_init(&m.text);
    tok_buf_init(&m.piece);
    order = malloc((n_counts ? n_counts : 1) * sizeof(*order));
    han_left = malloc(N_HAN);
    if (order == NULL || han_left == NULL || set_grow(&m) < 0)
        goto nomem;
    memset(han_left, 1, N_HAN);

    /* 1. Special tokens. */
    for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++)
        if (add(&m, specials[i], strlen(specials[i])) < 0)
            goto nomem;

    /* 2. Han characters by descending count: Python's stable sort, so ties
     * keep the order of the counts. */
    for (size_t i = 0; i < n_counts; i++) {
        order[i].i = i;
        order[i].count = counts[i].count;
    }
    qsort(order, n_counts, sizeof(*order), cmp_ranked);
    for (size_t r = 0; r < n_counts; r++) {
        uint32_t cp = counts[order[r].i].cp;

        one.n = 0;
        normed.n = 0;
        if (cps_push(&one, cp, 0) < 0 ||
            norm_cps(one.v, 1, &m.word, &m.tmp, &normed) < 0)
            goto nomem;
        if (normed.n == 1 && normed.v[0] >= HAN_LO && normed.v[0] <= HAN_HI &&
            han_left[normed.v[0] - HAN_LO]) {
            if (add_cp(&m, normed.v[0]) < 0)
                goto nomem;
            han_left[normed.v[0] - HAN_LO] = 0;
            st.n_han_seen++;
        }
    }

    /* 3. The Han characters not seen, by descending code point. */
    for (uint32_t cp = HAN_HI + 1; cp-- > HAN_LO;) {
        char b[4];
        size_t k = tok_utf8_encode(cp, b);

        if (han_left[cp - HAN_LO] && emit(&m, b, k) < 0)
            goto nomem;
    }
    st.n_han = N_HAN;

    /* 4. The English pieces. */
    rc = add_english(&m, eng_vocab, eng_len, eng_name, &st.n_english, err);
    if (rc < 0)
        goto fail;

    /* 5. Every other character counted at least `threshold` times. */
    for (size_t r = 0; r < n_counts && order[r].count >= threshold; r++) {
        int k = add_cp(&m, counts[order[r].i].cp);

        if (k < 0)
            goto nomem;
        st.n_other += (size_t)k;
    }

    /* The "##<Han>" ids extend_chinese_char() adds at run time. */
    st.n_tokens = m.n_lines;
    for (uint32_t cp = HAN_LO; cp <= HAN_HI; cp++) {
        char b[6] = { '#', '#' };
        size_t k = tok_utf8_encode(cp, b + 2);

        st.n_ext += !set_has(&m, b, k + 2);
    }
    if (stats != NULL)
        *stats = st;
    if (st.n_tokens + st.n_ext > VOCAB_MERGE_MAX_IDS) {
        rc = err_set(err, TOK_ERANGE,
                     "vocab would need %zu ids with the %zu ##<CJK> "
                     "extension, %zu more than uint16 holds",
                     st.n_tokens + st.n_ext, st.n_ext,
                     st.n_tokens + st.n_ext - VOCAB_MERGE_MAX_IDS);
        goto fail;
    }
    if (tok_buf_append(out, m.text.data, m.text.len) < 0)
        goto nomem;
    goto done;
nomem:
    rc = err_set(err, TOK_ENOMEM, "out of memory");
fail:
done:
    free(order);
    free(han_left);
    free(m.slots);
    tok_buf_release(&m.text);
    tok_buf_release(&m.piece);
    cps_release(&m.in);
    cps_release(&m.norm);
    cps_release(&m.word);
    cps_release(&m.tmp);
    cps_release(&one);
    cps_release(&normed);
    return rc;
}
