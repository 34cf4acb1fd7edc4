/* SPDX-License-Identifier: MIT */
/*
 * cli_json.c: one string field out of one JSONL record, as the tools that
 * read JSONL (tokenize -k, segment -f jsonl/wudao) need it, with the same
 * errors for all of them.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#    include <emmintrin.h>
#endif

#include "cli.h"
#include "banned.h"

static bool
json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* ------------------------------------------------------------------------ */
/* The fast path                                                             */
/*
 * json-c reads a record a byte at a time through its state machine and
 * copies every string twice; on create-pretraining-data's JSONL that was
 * 14 % of all instructions.  Most records are one flat object of string
 * members with no \u escape, {"text": "..."}: those are read here, a
 * vector of 16 bytes at a time, and everything else (numbers, nesting, \u,
 * control characters, anything malformed, or no such field) goes to json-c,
 * which decides, so the two paths cannot disagree (fuzz_json checks it).
 * Duplicate keys: the last one wins, as in json-c.
 */

/* The offset of the first '"', '\\' or control character in s[0..n), or
 * n if none. */
static size_t
string_stop(const char *s, size_t n)
{
    size_t i = 0;

#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  ctl = _mm_set1_epi8(0x1F);

    for (; i + 16 <= n; i += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i));
        /* b <= 0x1F (unsigned): max(b, 0x1F) == 0x1F */
        __m128i hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(b, quote), _mm_cmpeq_epi8(b, bslash)),
            _mm_cmpeq_epi8(_mm_max_epu8(b, ctl), ctl));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);

        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
#endif
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\' || c < 0x20)
            break;
    }
    return i;
}

/* The byte a short escape \c stands for, or -1 (\u and the invalid ones:
 * json-c's business). */
static int
short_escape(char c)
{
    switch (c) {
    case '"':
    case '\\':
    case '/':
        return c;
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default:
        return -1;
    }
}

/* Read the string whose opening quote is before *pp, up to its closing
 * quote, into out if out is not NULL.  Returns 0 with *pp after the closing
 * quote, -1 if the string is not for the fast path, -2 if out of memory. */
static int
fast_string(const char **pp, const char *end, struct tok_buf *out)
{
    const char *p = *pp;

    for (;;) {
        size_t k = string_stop(p, (size_t)(end - p));
        int c;

        if (out != NULL && k > 0 && tok_buf_append(out, p, k) < 0)
            return -2;
        p += k;
        if (p == end || *p != '\\') {
            if (p == end || *p != '"')
                return -1; /* unterminated, or a control character */
            *pp = p + 1;
            return 0;
        }
        if (p + 1 == end || (c = short_escape(p[1])) < 0)
            return -1;
        if (out != NULL && tok_buf_append(out, &(char){ (char)c }, 1) < 0)
            return -2;
        p += 2;
    }
}

static const char *
skip_json_space(const char *p, const char *end)
{
    while (p < end && json_space(*p))
        p++;
    return p;
}

/* The field `key` of the record p[0..end) into out (NUL-terminated).
 * Returns 1 if done, 0 if the record is not for the fast path (out is then
 * garbage), -2 if out of memory. */
static int
fast_field(const char *p, const char *end, const char *key, size_t key_len,
           struct tok_buf *out)
{
    bool found = false;

    if (p == end || *p++ != '{')
        return 0;
    for (;;) {
        const char *k;
        bool mine;
        int rc;

        p = skip_json_space(p, end);
        if (p == end || *p++ != '"')
            return 0;
        k = p;
        if ((rc = fast_string(&p, end, NULL)) < 0)
            return rc == -2 ? -2 : 0;
        /* Keys are compared as raw bytes, so one with an escape (which
         * might unescape to the key) is json-c's. */
        if (memchr(k, '\\', (size_t)(p - 1 - k)) != NULL)
            return 0;
        mine = (size_t)(p - 1 - k) == key_len && memcmp(k, key, key_len) == 0;
        p = skip_json_space(p, end);
        if (p == end || *p++ != ':')
            return 0;
        p = skip_json_space(p, end);
        if (p == end || *p++ != '"')
            return 0;
        if (mine) {
            tok_buf_clear(out); /* a later duplicate replaces it */
            found = true;
        }
        if ((rc = fast_string(&p, end, mine ? out : NULL)) < 0)
            return rc == -2 ? -2 : 0;
        p = skip_json_space(p, end);
        if (p == end)
            return 0;
        if (*p == '}')
            break;
        if (*p++ != ',')
            return 0;
    }
    if (skip_json_space(p + 1, end) != end || !found)
        return 0;
    return tok_buf_append(out, "", 0) < 0 ? -2 : 1;
}

int
cli_json_field(struct json_tokener **jt, const char *s, size_t len,
               const char *key, struct tok_buf *out, char *why, size_t why_len)
{
    const char *p = skip_json_space(s, s + len), *end = s + len;

    if (p == end)
        return 0; /* a blank line carries no record */
    switch (fast_field(p, end, key, strlen(key), out)) {
    case 1:
        return 1;
    case -2:
        snprintf(why, why_len, "out of memory");
        return -2;
    }
    return cli_json_field_jsonc(jt, s, len, key, out, why, why_len);
}

int
cli_json_field_jsonc(struct json_tokener **jt, const char *s, size_t len,
                     const char *key, struct tok_buf *out, char *why,
                     size_t why_len)
{
    struct json_object *obj, *field;
    enum json_tokener_error je;
    const char *p = skip_json_space(s, s + len), *end = s + len;
    int rc = 1;

    if (p == end)
        return 0; /* a blank line carries no record */
    json_tokener_reset(*jt);
    obj = json_tokener_parse_ex(*jt, p, (int)(end - p));
    je = json_tokener_get_error(*jt);
    if (obj == NULL || je != json_tokener_success) {
        json_object_put(obj);
        snprintf(why, why_len, "invalid JSON: %s",
                 je == json_tokener_continue ? "unexpected end of record"
                                             : json_tokener_error_desc(je));
        /* json_tokener_reset() leaves a \uD800-\uDBFF escape a failed
         * parse ended after, to pair with the next record's first low
         * surrogate escape (json-c 0.16): the next record gets a tokener
         * of its own, so that it reads the same whatever came before. */
        json_tokener_free(*jt);
        if ((*jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH)) == NULL) {
            snprintf(why, why_len, "out of memory");
            return -2;
        }
        return -1;
    }
    for (p += json_tokener_get_parse_end(*jt); p < end && json_space(*p); p++)
        ;
    if (p != end) {
        snprintf(why, why_len, "invalid JSON: text after the value");
        rc = -1;
    } else if (!json_object_is_type(obj, json_type_object) ||
               !json_object_object_get_ex(obj, key, &field) ||
               !json_object_is_type(field, json_type_string)) {
        snprintf(why, why_len, "no string field '%s'", key);
        rc = -1;
    } else {
        /* json-c 0.16 turns a lone surrogate escape into U+FFFD, which
         * both tools then treat as the Python references treat the
         * surrogate; bytes another library might leave that are not UTF-8
         * are dropped here, so the text is always valid. */
        tok_buf_clear(out);
        if (tok_utf8_sanitize(json_object_get_string(field),
                              (size_t)json_object_get_string_len(field),
                              TOK_UTF8_SKIP, out, NULL, NULL) < 0 ||
            tok_buf_append(out, "", 0) < 0) {
            snprintf(why, why_len, "out of memory");
            rc = -2;
        }
    }
    json_object_put(obj);
    return rc;
}
