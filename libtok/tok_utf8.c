/* SPDX-License-Identifier: MIT */
/*
 * tok_utf8.c: UTF-8 decoding, validation and repair, and struct tok_buf.
 *
 * Validation follows Unicode's Table 3-7 (well-formed byte sequences): no
 * overlong forms, no surrogates, nothing above U+10FFFF.  Repair replaces
 * each "maximal subpart" of an ill-formed sequence by one U+FFFD, which is
 * what Python's decode(errors="replace") does.
 */
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"

/* The valid range of the second byte after a given lead byte (Table 3-7);
 * later continuation bytes are always 0x80..0xBF. */
static int
lead_info(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80)
        return 1;
    if (b < 0xC2)
        return 0;
    if (b < 0xE0)
        return 2;
    if (b < 0xF0) {
        if (b == 0xE0)
            *lo = 0xA0;
        else if (b == 0xED)
            *hi = 0x9F;
        return 3;
    }
    if (b < 0xF5) {
        if (b == 0xF0)
            *lo = 0x90;
        else if (b == 0xF4)
            *hi = 0x8F;
        return 4;
    }
    return 0;
}

/* Length of the maximal subpart of an ill-formed sequence at s (>= 1). */
static size_t
bad_len(const unsigned char *s, size_t len)
{
    unsigned char lo, hi;
    int n = lead_info(s[0], &lo, &hi);
    size_t i = 1;

    if (n == 0)
        return 1;
    while (i < (size_t)n && i < len) {
        if (s[i] < lo || s[i] > hi)
            break;
        lo = 0x80;
        hi = 0xBF;
        i++;
    }
    return i;
}

size_t
tok_utf8_decode(const char *str, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char lo, hi;
    int n;
    uint32_t c;

    if (len == 0)
        return 0;
    n = lead_info(s[0], &lo, &hi);
    if (n == 1) {
        *cp = s[0];
        return 1;
    }
    if (n == 0 || len < (size_t)n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    c = s[0] & (0xFF >> (n + 1));
    c = (c << 6) | (s[1] & 0x3F);
    for (int i = 2; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    *cp = c;
    return (size_t)n;
}

size_t
tok_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;

    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

size_t
tok_utf8_check(const char *str, size_t len)
{
    /* Long text: is it valid, 32 bytes a step?  Only an invalid one, or a
     * machine without AVX2, takes the scalar pass, which finds the
     * offset. */
    if (len >= 64 && tok_utf8_simd_valid(str, len) == 1)
        return len;
    return tok_utf8_check_scalar(str, len);
}

size_t
tok_utf8_check_scalar(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    uint32_t cp;

    while (i < len) {
        size_t n;

        /* Skip ASCII eight bytes at a time. */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        /* The common three-byte form (CJK) inline: E1..EC or EE..EF, two
         * continuation bytes.  E0 and ED have narrower ranges. */
        if (s[i] >= 0xE1 && s[i] <= 0xEF && s[i] != 0xED && i + 3 <= len &&
            (s[i + 1] & 0xC0) == 0x80 && (s[i + 2] & 0xC0) == 0x80) {
            i += 3;
            continue;
        }
        n = tok_utf8_decode(str + i, len - i, &cp);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

int64_t
tok_utf8_sanitize(const char *s, size_t len, enum tok_utf8_policy policy,
                  struct tok_buf *out, size_t *bad_off, struct tok_err *err)
{
    static const char fffd[3] = { (char)0xEF, (char)0xBF, (char)0xBD };
    size_t i = 0, good = tok_utf8_check(s, len);
    int64_t n_bad = 0;

    if (good == len) {
        if (tok_buf_append(out, s, len) < 0)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
        return 0;
    }
    if (policy == TOK_UTF8_STRICT) {
        if (bad_off)
            *bad_off = good;
        return tok_err_set(err, TOK_EUTF8,
                           "invalid UTF-8 at byte offset %zu (byte 0x%02X)",
                           good, (unsigned)(unsigned char)s[good]);
    }
    while (i < len) {
        size_t ok = i + tok_utf8_check(s + i, len - i);
        size_t n;

        if (tok_buf_append(out, s + i, ok - i) < 0)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
        if (ok == len)
            break;
        n = bad_len((const unsigned char *)s + ok, len - ok);
        if (policy == TOK_UTF8_REPLACE && tok_buf_append(out, fffd, 3) < 0)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
        n_bad++;
        i = ok + n;
    }
    return n_bad;
}

/* ------------------------------------------------------------------------ */

void
tok_buf_init(struct tok_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void
tok_buf_release(struct tok_buf *b)
{
    free(b->data);
    tok_buf_init(b);
}

void
tok_buf_clear(struct tok_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

int
tok_buf_append(struct tok_buf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *d;

        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2)
                return TOK_ENOMEM;
            cap *= 2;
        }
        d = realloc(b->data, cap);
        if (d == NULL)
            return TOK_ENOMEM;
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int
tok_json_string(struct tok_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t from = 0;

    if (tok_buf_append(b, "\"", 1) < 0)
        return TOK_ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[6];
        size_t n = 2;

        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        if (tok_buf_append(b, s + from, i - from) < 0 ||
            tok_buf_append(b, esc, n) < 0)
            return TOK_ENOMEM;
        from = i + 1;
    }
    if (tok_buf_append(b, s + from, len - from) < 0)
        return TOK_ENOMEM;
    return tok_buf_append(b, "\"", 1);
}
