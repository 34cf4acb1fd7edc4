/* SPDX-License-Identifier: MIT */
/*
 * vocab_chars.c: character counts, the first step of the ERNIE vocab
 * recipe (ernie-data.md 6.2): a code point -> count table fed with UTF-8
 * text, and the text format of vocab-charcount(5) that stores it.
 *
 * The table is a flat array for the BMP, where almost every character of
 * real text lives, so the counting loop is a decode and an increment, plus
 * a small open-addressing hash table for the supplementary planes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vocab.h"
#include "banned.h"

#define N_BMP  0x10000u
#define MAX_CP 0x10FFFFu

struct sup_entry {
    uint32_t cp; /* 0: empty slot (0 is in the BMP, never here) */
    uint64_t count;
};

struct vocab_counts {
    uint64_t *bmp; /* [N_BMP] */
    struct sup_entry *sup;
    size_t sup_mask; /* slots - 1 */
    size_t sup_used;
};

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

int
vocab_counts_new(struct vocab_counts **out, struct tok_err *err)
{
    struct vocab_counts *c = calloc(1, sizeof(*c));

    if (c == NULL)
        goto nomem;
    c->bmp = calloc(N_BMP, sizeof(*c->bmp));
    c->sup_mask = 63;
    c->sup = calloc(c->sup_mask + 1, sizeof(*c->sup));
    if (c->bmp == NULL || c->sup == NULL)
        goto nomem;
    *out = c;
    return 0;
nomem:
    vocab_counts_free(c);
    return err_set(err, TOK_ENOMEM, "out of memory");
}

void
vocab_counts_free(struct vocab_counts *c)
{
    if (c == NULL)
        return;
    free(c->bmp);
    free(c->sup);
    free(c);
}

/* ------------------------------------------------------------------------ */
/* The supplementary planes                                                  */

static size_t
sup_slot(uint32_t cp, size_t mask)
{
    return (size_t)(((uint64_t)cp * 0x9E3779B97F4A7C15ULL) >> 40) & mask;
}

static int
sup_grow(struct vocab_counts *c)
{
    size_t mask = c->sup_mask * 2 + 1;
    struct sup_entry *t = calloc(mask + 1, sizeof(*t));

    if (t == NULL)
        return TOK_ENOMEM;
    for (size_t i = 0; i <= c->sup_mask; i++) {
        size_t j;

        if (c->sup[i].cp == 0)
            continue;
        for (j = sup_slot(c->sup[i].cp, mask); t[j].cp != 0; j = (j + 1) & mask)
            ;
        t[j] = c->sup[i];
    }
    free(c->sup);
    c->sup = t;
    c->sup_mask = mask;
    return 0;
}

/* The count of cp (>= U+10000), inserted at 0 if absent; NULL if out of
 * memory. */
static uint64_t *
sup_find(struct vocab_counts *c, uint32_t cp)
{
    size_t i;

    if ((c->sup_used + 1) * 4 > (c->sup_mask + 1) * 3 && sup_grow(c) != 0)
        return NULL;
    for (i = sup_slot(cp, c->sup_mask); c->sup[i].cp != 0;
         i = (i + 1) & c->sup_mask)
        if (c->sup[i].cp == cp)
            return &c->sup[i].count;
    c->sup[i].cp = cp;
    c->sup_used++;
    return &c->sup[i].count;
}

/* ------------------------------------------------------------------------ */
/* Counting text                                                             */

/* Add d (1, or 2^64 - 1 to take a count back) for every character of
 * s[0..len), validating the UTF-8 as it goes (RFC 3629).  Returns len, or
 * the offset of the first invalid sequence (everything before it counted);
 * *nomem is set when the hash table could not grow. */
static size_t
scan(struct vocab_counts *c, const unsigned char *s, size_t len, uint64_t d,
     bool *nomem)
{
    uint64_t *bmp = c->bmp;
    size_t i = 0;

    while (i < len) {
        unsigned b = s[i];
        uint32_t cp;

        if (b < 0x80) {
            /* Python's universal newlines: "\r\n" and "\r" read as "\n". */
            if (b == '\r') {
                if (i + 1 < len && s[i + 1] == '\n') {
                    i++;
                    continue;
                }
                b = '\n';
            }
            bmp[b] += d;
            i++;
        } else if (b >= 0xE0 && b <= 0xEF) {
            if (len - i < 3 || (s[i + 1] & 0xC0) != 0x80 ||
                (s[i + 2] & 0xC0) != 0x80)
                return i;
            cp = ((uint32_t)(b & 0x0F) << 12) |
                 ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))
                return i;
            bmp[cp] += d;
            i += 3;
        } else if (b >= 0xC2 && b <= 0xDF) {
            if (len - i < 2 || (s[i + 1] & 0xC0) != 0x80)
                return i;
            bmp[((b & 0x1F) << 6) | (s[i + 1] & 0x3F)] += d;
            i += 2;
        } else if (b >= 0xF0 && b <= 0xF4) {
            uint64_t *cnt;

            if (len - i < 4 || (s[i + 1] & 0xC0) != 0x80 ||
                (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return i;
            cp = ((uint32_t)(b & 0x07) << 18) |
                 ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                 ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            if (cp < 0x10000 || cp > MAX_CP)
                return i;
            if ((cnt = sup_find(c, cp)) == NULL) {
                *nomem = true;
                return i;
            }
            *cnt += d;
            i += 4;
        } else {
            return i;
        }
    }
    return len;
}

int
vocab_counts_add_text(struct vocab_counts *c, const char *s, size_t len,
                      size_t *bad_off, struct tok_err *err)
{
    const unsigned char *u = (const unsigned char *)s;
    bool nomem = false;
    size_t end = scan(c, u, len, 1, &nomem);

    if (end == len)
        return 0;
    /* Take back what was counted, so a rejected text counts nothing. */
    scan(c, u, end, UINT64_MAX, &nomem);
    if (nomem)
        return err_set(err, TOK_ENOMEM, "out of memory");
    if (bad_off != NULL)
        *bad_off = end;
    return err_set(err, TOK_EUTF8,
                   "invalid UTF-8 at byte offset %zu (byte 0x%02X)", end,
                   u[end]);
}

int
vocab_counts_add(struct vocab_counts *c, uint32_t cp, uint64_t n,
                 struct tok_err *err)
{
    uint64_t *cnt;

    if (cp > MAX_CP || (cp >= 0xD800 && cp <= 0xDFFF))
        return err_set(err, TOK_EINVAL, "U+%04X is not a character",
                       (unsigned)cp);
    cnt = cp < N_BMP ? &c->bmp[cp] : sup_find(c, cp);
    if (cnt == NULL)
        return err_set(err, TOK_ENOMEM, "out of memory");
    if (*cnt > UINT64_MAX - n)
        return err_set(err, TOK_ERANGE,
                       "the count of U+%04X would pass 2^64 - 1", (unsigned)cp);
    *cnt += n;
    return 0;
}

int
vocab_counts_merge(struct vocab_counts *dst, const struct vocab_counts *src,
                   struct tok_err *err)
{
    int rc;

    for (uint32_t cp = 0; cp < N_BMP; cp++)
        if (src->bmp[cp] &&
            (rc = vocab_counts_add(dst, cp, src->bmp[cp], err)) < 0)
            return rc;
    for (size_t i = 0; i <= src->sup_mask; i++)
        if (src->sup[i].cp && src->sup[i].count &&
            (rc = vocab_counts_add(dst, src->sup[i].cp, src->sup[i].count,
                                   err)) < 0)
            return rc;
    return 0;
}

size_t
vocab_counts_n_chars(const struct vocab_counts *c)
{
    size_t n = 0;

    for (uint32_t cp = 0; cp < N_BMP; cp++)
        n += c->bmp[cp] != 0;
    for (size_t i = 0; i <= c->sup_mask; i++)
        n += c->sup[i].cp != 0 && c->sup[i].count != 0;
    return n;
}

static int
cmp_count_desc(const void *pa, const void *pb)
{
    const struct vocab_charcount *a = pa, *b = pb;

    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return (a->cp > b->cp) - (a->cp < b->cp);
}

int64_t
vocab_counts_sorted(const struct vocab_counts *c, struct vocab_charcount **out,
                    struct tok_err *err)
{
    size_t n = vocab_counts_n_chars(c), k = 0;
    struct vocab_charcount *e;

    *out = NULL;
    if (n == 0)
        return 0;
    e = malloc(n * sizeof(*e));
    if (e == NULL)
        return err_set(err, TOK_ENOMEM, "out of memory");
    for (uint32_t cp = 0; cp < N_BMP; cp++)
        if (c->bmp[cp]) {
            e[k].cp = cp;
            e[k++].count = c->bmp[cp];
        }
    for (size_t i = 0; i <= c->sup_mask; i++)
        if (c->sup[i].cp && c->sup[i].count) {
            e[k].cp = c->sup[i].cp;
            e[k++].count = c->sup[i].count;
        }
    qsort(e, n, sizeof(*e), cmp_count_desc);
    *out = e;
    return (int64_t)n;
}

/* ------------------------------------------------------------------------ */
/* The text format (vocab-charcount(5))                                      */

/* Characters written as escapes: C0 and C1 controls, DEL, the backslash,
 * the line and paragraph separators (which some readers split lines on)
 * and the byte order mark (which some readers drop at the start). */
static bool
needs_escape(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == '\\' ||
           cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF;
}

static size_t
utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int
vocab_charcount_format(const struct vocab_charcount *e, size_t n,
                       struct tok_buf *out, struct tok_err *err)
{
    static const char hex[] = "0123456789ABCDEF";

    for (size_t i = 0; i < n; i++) {
        char line[48];
        size_t len = 0;
        uint32_t cp = e[i].cp;
        uint64_t v = e[i].count;
        char digits[24];
        int nd = 0;

        if (!needs_escape(cp)) {
            len = utf8_put(cp, line);
        } else {
            line[len++] = '\\';
            switch (cp) {
            case '\n':
                line[len++] = 'n';
                break;
            case '\t':
                line[len++] = 't';
                break;
            case '\r':
                line[len++] = 'r';
                break;
            case '\\':
                line[len++] = '\\';
                break;
            default:
                line[len++] = 'u';
                for (int sh = 12; sh >= 0; sh -= 4)
                    line[len++] = hex[(cp >> sh) & 0xF];
            }
        }
        line[len++] = '\t';
        do {
            digits[nd++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (nd)
            line[len++] = digits[--nd];
        line[len++] = '\n';
        if (tok_buf_append(out, line, len) < 0)
            return err_set(err, TOK_ENOMEM, "out of memory");
    }
    return 0;
}

static int
hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* Parse the character field f[0..len) into *cp; on error, write the
 * reason to why and return false. */
static bool
parse_char(const char *f, size_t len, uint32_t *cp, char *why, size_t why_len)
{
    if (len == 0) {
        snprintf(why, why_len, "empty character field");
        return false;
    }
    if (f[0] == '\\') {
        if (len == 2 &&
            (f[1] == 'n' || f[1] == 't' || f[1] == 'r' || f[1] == '\\')) {
            *cp = f[1] == 'n'   ? '\n'
                  : f[1] == 't' ? '\t'
                  : f[1] == 'r' ? '\r'
                                : '\\';
            return true;
        }
        if (len == 6 && f[1] == 'u') {
            uint32_t v = 0;
            int k;

            for (k = 2; k < 6 && hexval(f[k]) >= 0; k++)
                v = v * 16 + (uint32_t)hexval(f[k]);
            if (k == 6 && !(v >= 0xD800 && v <= 0xDFFF)) {
                *cp = v;
                return true;
            }
        }
        snprintf(why, why_len,
                 "bad escape '%.*s' (use \\n, \\t, \\r, \\\\ or \\uXXXX)",
                 (int)(len < 16 ? len : 16), f);
        return false;
    }
    {
        size_t k = tok_utf8_decode(f, len, cp);

        if (k == 0) {
            snprintf(why, why_len, "invalid UTF-8 in the character field");
            return false;
        }
        if (k != len) {
            if (tok_utf8_check(f, len) != len)
                snprintf(why, why_len, "invalid UTF-8 in the character field");
            else
                snprintf(why, why_len, "more than one character in '%.*s'",
                         (int)(len < 32 ? len : 32), f);
            return false;
        }
        if (needs_escape(*cp)) {
            snprintf(why, why_len,
                     "U+%04X must be written as an escape (\\u%04X)",
                     (unsigned)*cp, (unsigned)*cp);
            return false;
        }
    }
    return true;
}

static bool
parse_count(const char *f, size_t len, uint64_t *v)
{
    uint64_t x = 0;

    if (len == 0 || f[0] == '0')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned dgt = (unsigned char)f[i] - '0';

        if (dgt > 9 || x > (UINT64_MAX - dgt) / 10)
            return false;
        x = x * 10 + dgt;
    }
    *v = x;
    return true;
}

int64_t
vocab_charcount_parse(const char *data, size_t len, const char *name,
                      struct vocab_charcount **out, struct tok_err *err)
{
    struct vocab_charcount *e = NULL;
    size_t n = 0, cap = 0, line = 0;
    uint8_t *seen = NULL;
    const char *p = data, *end = data + len;
    int rc;

    *out = NULL;
    seen = calloc((MAX_CP + 1) / 8, 1);
    if (seen == NULL)
        goto nomem;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *tab;
        char why[128];
        uint32_t cp;
        uint64_t count;

        line++;
        if (nl == NULL) {
            rc = err_set(err, TOK_EFORMAT,
                         "counts '%s' line %zu: truncated last line (no "
                         "newline at the end)",
                         name, line);
            goto fail;
        }
        tab = memchr(p, '\t', (size_t)(nl - p));
        if (tab == NULL) {
            rc = err_set(err, TOK_EFORMAT,
                         "counts '%s' line %zu: no TAB (want "
                         "'char<TAB>count')",
                         name, line);
            goto fail;
        }
        if (!parse_char(p, (size_t)(tab - p), &cp, why, sizeof(why))) {
            rc = err_set(err, TOK_EFORMAT, "counts '%s' line %zu: %s", name,
                         line, why);
            goto fail;
        }
        if (!parse_count(tab + 1, (size_t)(nl - tab - 1), &count)) {
            int k = (int)(nl - tab - 1);

            rc = err_set(err, TOK_EFORMAT,
                         "counts '%s' line %zu: bad count '%.*s' (want a "
                         "decimal in 1..2^64-1)",
                         name, line, k < 24 ? k : 24, tab + 1);
            goto fail;
        }
        if (seen[cp >> 3] & (1u << (cp & 7))) {
            rc = err_set(err, TOK_EFORMAT,
                         "counts '%s' line %zu: duplicate character U+%04X",
                         name, line, (unsigned)cp);
            goto fail;
        }
        seen[cp >> 3] |= (uint8_t)(1u << (cp & 7));
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            struct vocab_charcount *t = realloc(e, ncap * sizeof(*e));

            if (t == NULL)
                goto nomem;
            e = t;
            cap = ncap;
        }
        e[n].cp = cp;
        e[n++].count = count;
        p = nl + 1;
    }
    free(seen);
    *out = e;
    return (int64_t)n;
nomem:
    rc = err_set(err, TOK_ENOMEM, "out of memory");
fail:
    free(seen);
    free(e);
    return rc;
}

int
vocab_file_read(const char *path, struct tok_buf *out, struct tok_err *err)
{
    FILE *fp = fopen(path, "rb");
    char buf[1 << 16];
    size_t got;

    if (fp == NULL)
        return err_set(err, TOK_EIO, "cannot open '%s': %s", path,
                       strerror(errno));
    while ((got = fread(buf, 1, sizeof(buf), fp)) > 0)
        if (tok_buf_append(out, buf, got) < 0) {
            fclose(fp);
            return err_set(err, TOK_ENOMEM, "out of memory");
        }
    if (ferror(fp)) {
        int e = errno;

        fclose(fp);
        return err_set(err, TOK_EIO, "cannot read '%s': %s", path, strerror(e));
    }
    fclose(fp);
    /* Make data non-NULL even for an empty file. */
    return tok_buf_append(out, "", 0) < 0
               ? err_set(err, TOK_ENOMEM, "out of memory")
               : 0;
}
