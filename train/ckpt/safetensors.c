/* SPDX-License-Identifier: MIT */
/*
 * safetensors.c: the safetensors reader and writer.  The reader maps the
 * file, parses the JSON header with a small strict parser of its own (it
 * must see duplicate keys, offsets up to 2^64-1 and the byte of every
 * error, which a general JSON library hides), and checks the tensors
 * against each other as the Python library does.  The writer builds the
 * header in memory and writes header and data through a temporary file,
 * the data one tensor at a time (st_writer), so a caller never needs
 * more than one tensor in memory.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "banned.h"
#include "safetensors.h"
#include "util/tr_util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#    error "safetensors.c assumes a little-endian host"
#endif

/* JSON nesting deeper than this (inside ignored fields) is refused, so a
 * hostile header cannot exhaust the stack (serde_json stops at 128). */
#define MAX_DEPTH 128

static const struct {
    const char *name;
    unsigned bits;
} dtypes[ST_N_DTYPES] = {
    [ST_BOOL] = { "BOOL", 8 },
    [ST_U8] = { "U8", 8 },
    [ST_I8] = { "I8", 8 },
    [ST_I16] = { "I16", 16 },
    [ST_U16] = { "U16", 16 },
    [ST_F16] = { "F16", 16 },
    [ST_BF16] = { "BF16", 16 },
    [ST_I32] = { "I32", 32 },
    [ST_U32] = { "U32", 32 },
    [ST_F32] = { "F32", 32 },
    [ST_F64] = { "F64", 64 },
    [ST_I64] = { "I64", 64 },
    [ST_U64] = { "U64", 64 },
    [ST_C64] = { "C64", 64 },
    [ST_F8_E5M2] = { "F8_E5M2", 8 },
    [ST_F8_E4M3] = { "F8_E4M3", 8 },
    [ST_F8_E8M0] = { "F8_E8M0", 8 },
    [ST_F8_E4M3FNUZ] = { "F8_E4M3FNUZ", 8 },
    [ST_F8_E5M2FNUZ] = { "F8_E5M2FNUZ", 8 },
    [ST_F4] = { "F4", 4 },
    [ST_F6_E2M3] = { "F6_E2M3", 6 },
    [ST_F6_E3M2] = { "F6_E3M2", 6 },
};

struct st_file {
    void *map; /* our mapping of the file, or NULL (st_open_buffer) */
    size_t map_len;
    size_t n;
    struct st_tensor *t;              /* [n], in data order */
    const struct st_tensor **by_name; /* [n], sorted by name */
    size_t n_meta;
    const char **meta;     /* [2 * n_meta]: key, value, by key */
    char *strs;            /* the decoded strings */
    unsigned char *copies; /* aligned copies of unaligned data */
};

const char *
st_dtype_name(enum st_dtype dtype)
{
    return (unsigned)dtype < ST_N_DTYPES ? dtypes[dtype].name : NULL;
}

size_t
st_dtype_bits(enum st_dtype dtype)
{
    return (unsigned)dtype < ST_N_DTYPES ? dtypes[dtype].bits : 0;
}

static int fail(struct st_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(struct st_err *err, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL) {
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The length of the valid UTF-8 sequence at s[0..n) (n > 0), or 0:
 * no overlong forms, surrogates or code points past U+10FFFF. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];

    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4)
        return 0;
    if (c < 0xE0)
        return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
            (c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))
            return 0;
        return 3;
    }
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
        (s[3] & 0xC0) != 0x80 || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] >= 0x90))
        return 0;
    return 4;
}

static bool
utf8_valid(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);

    for (size_t i = 0, k; i < n; i += k)
        if ((k = utf8_len(u + i, n - i)) == 0)
            return false;
    return true;
}

static int
cmp_strs(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sort s[0..n) and return a string that appears twice in it, or NULL. */
static const char *
find_duplicate(const char **s, size_t n)
{
    if (n < 2)
        return NULL;
    qsort((void *)s, n, sizeof(*s), cmp_strs);
    for (size_t i = 1; i < n; i++)
        if (strcmp(s[i - 1], s[i]) == 0)
            return s[i];
    return NULL;
}

/* "[2, 3]" for a shape, into buf. */
static const char *
shape_str(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = 0;

    buf[k++] = '[';
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%" PRId64, d ? ", " : "",
                              shape[d]);
    if (k + 2 <= cap) {
        buf[k++] = ']';
        buf[k] = '\0';
    } else {
        buf[cap - 1] = '\0';
    }
    return buf;
}

/* The size in bytes of a tensor of dtype and shape into *nbytes, or an
 * explanation in why (a static string) of why there is none. */
static bool
tensor_bytes(enum st_dtype dtype, const int64_t *shape, int ndim,
             uint64_t *nbytes, const char **why)
{
    uint64_t count = 1, bits;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            *why = "has a negative dimension";
            return false;
        }
        if (shape[d] != 0 && count > UINT64_MAX / (uint64_t)shape[d]) {
            *why = "has more than 2^64 elements";
            return false;
        }
        count *= (uint64_t)shape[d];
    }
    if (count > UINT64_MAX / dtypes[dtype].bits) {
        *why = "has more than 2^64 bits";
        return false;
    }
    bits = count * dtypes[dtype].bits;
    if (bits % 8 != 0) {
        *why = "does not fill whole bytes";
        return false;
    }
    if (bits / 8 > SIZE_MAX) {
        *why = "is larger than the address space";
        return false;
    }
    *nbytes = bits / 8;
    return true;
}

/* ------------------------------------------------------------ parser */

struct entry {
    struct st_tensor t;
    uint64_t begin, end;
    size_t index; /* in the header */
};

struct parser {
    const char *s; /* the header */
    size_t len, pos;
    const char *file;
    struct st_err *err;
    char *arena; /* decoded strings; never more than len + 1 bytes */
    size_t used, cap;
    struct entry *e;
    size_t n, cap_e;
    const char **meta; /* key, value, ... */
    size_t n_meta, cap_meta;
    bool have_meta;
};

/* Header bytes start after the 8-byte length. */
#define AT(p, i) ((size_t)(i) + 8)

static int bad(struct parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A JSON syntax error at header position pos. */
static int
bad(struct parser *p, size_t pos, const char *fmt, ...)
{
    char what[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return fail(p->err, "'%s': header JSON at byte %zu: %s", p->file,
                AT(p, pos), what);
}

static int tbad(struct parser *p, const char *name, size_t pos, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

/* A problem with tensor name, at header position pos. */
static int
tbad(struct parser *p, const char *name, size_t pos, const char *fmt, ...)
{
    char what[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return fail(p->err, "'%s': tensor '%.150s': %s (byte %zu)", p->file, name,
                what, AT(p, pos));
}

/* The character at pos, described for a message. */
static const char *
char_at(const struct parser *p, size_t pos, char buf[16])
{
    unsigned char c;

    if (pos >= p->len)
        return "the end of the header";
    c = (unsigned char)p->s[pos];
    if (c > 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

static int
unexpected(struct parser *p, const char *wanted)
{
    char buf[16];

    return bad(p, p->pos, "expected %s, found %s", wanted,
               char_at(p, p->pos, buf));
}

static void
skip_ws(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

/* Consume c (after white space) or fail with "expected <wanted>". */
static int
expect(struct parser *p, char c, const char *wanted)
{
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != c)
        return unexpected(p, wanted);
    p->pos++;
    skip_ws(p);
    return 0;
}

static bool
peek(struct parser *p, char c)
{
    return p->pos < p->len && p->s[p->pos] == c;
}

/* Enter the object at p->pos (a '{'): 1 if a member follows, 0 if it is
 * empty (and consumed). */
static int
begin_object(struct parser *p)
{
    p->pos++;
    skip_ws(p);
    if (peek(p, '}')) {
        p->pos++;
        return 0;
    }
    return 1;
}

/* After a member of an object: 1 if another follows (the ',' consumed), 0
 * at the end (the '}' consumed), -1 on anything else. */
static int
next_member(struct parser *p)
{
    skip_ws(p);
    if (peek(p, ',')) {
        p->pos++;
        skip_ws(p);
        return 1;
    }
    if (peek(p, '}')) {
        p->pos++;
        return 0;
    }
    return unexpected(p, "',' or '}'");
}

static int
hex4(const struct parser *p, size_t pos, uint32_t *cp)
{
    *cp = 0;
    if (p->len - pos < 4)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        char c = p->s[pos + i];
        unsigned d;

        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        *cp = *cp << 4 | d;
    }
    return 0;
}

static size_t
put_utf8(char *o, uint32_t cp)
{
    unsigned char *u = (unsigned char *)o;

    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    u[0] = (unsigned char)(0xF0 | cp >> 18);
    u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parse the string at p->pos (a '"'); decode it into the arena and point
 * *out at it, or only check it when out is NULL.  A decoded string is
 * never longer than its JSON text, quotes included, so the arena of
 * header length + 1 bytes always has room. */
static int
parse_string(struct parser *p, const char **out)
{
    char *o = p->arena + p->used;
    size_t start = p->pos, k = 0;

    if (!peek(p, '"'))
        return unexpected(p, "a string");
    p->pos++;
    for (;;) {
        unsigned char c;
        uint32_t cp, lo;
        size_t m;

        if (p->pos >= p->len)
            return bad(p, start, "unterminated string");
        c = (unsigned char)p->s[p->pos];
        if (c == '"')
            break;
        if (c < 0x20)
            return bad(p, p->pos, "control character 0x%02x in a string", c);
        if (c != '\\') {
            m = utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
            if (m == 0)
                return bad(p, p->pos, "invalid UTF-8 in a string");
            if (out != NULL)
                memcpy(o + k, p->s + p->pos, m);
            k += m;
            p->pos += m;
            continue;
        }
        if (p->pos + 1 >= p->len)
            return bad(p, start, "unterminated string");
        switch (p->s[p->pos + 1]) {
        case '"':
            cp = '"';
            break;
        case '\\':
            cp = '\\';
            break;
        case '/':
            cp = '/';
            break;
        case 'b':
            cp = '\b';
            break;
        case 'f':
            cp = '\f';
            break;
        case 'n':
            cp = '\n';
            break;
        case 'r':
            cp = '\r';
            break;
        case 't':
            cp = '\t';
            break;
        case 'u':
            if (hex4(p, p->pos + 2, &cp) < 0)
                return bad(p, p->pos, "bad \\u escape");
            if (cp >= 0xDC00 && cp < 0xE000)
                return bad(p, p->pos, "unpaired surrogate \\u%04X", cp);
            if (cp >= 0xD800 && cp < 0xDC00) {
                if (p->len - p->pos < 12 || p->s[p->pos + 6] != '\\' ||
                    p->s[p->pos + 7] != 'u' || hex4(p, p->pos + 8, &lo) < 0 ||
                    lo < 0xDC00 || lo >= 0xE000)
                    return bad(p, p->pos, "unpaired surrogate \\u%04X", cp);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p->pos += 6;
            }
            if (cp == 0 && out != NULL)
                return bad(p, p->pos, "\\u0000 in a name or metadata string");
            p->pos += 4;
            break;
        default:
            return bad(p, p->pos, "bad escape in a string");
        }
        p->pos += 2;
        if (out != NULL)
            k += put_utf8(o + k, cp);
    }
    p->pos++;
    if (out != NULL) {
        o[k] = '\0';
        p->used += k + 1;
        assert(p->used <= p->cap);
        *out = o;
    }
    return 0;
}

struct number {
    bool neg, is_int, overflow;
    uint64_t v;
};

/* Scan a JSON number at p->pos. */
static int
scan_number(struct parser *p, struct number *num)
{
    size_t start = p->pos;

    memset(num, 0, sizeof(*num));
    num->is_int = true;
    if (peek(p, '-')) {
        num->neg = true;
        p->pos++;
    }
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
        return bad(p, start, "bad number");
    if (p->s[p->pos] == '0') {
        p->pos++;
    } else {
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            unsigned d = (unsigned)(p->s[p->pos++] - '0');

            if (num->v > (UINT64_MAX - d) / 10)
                num->overflow = true;
            else
                num->v = num->v * 10 + d;
        }
    }
    if (peek(p, '.')) {
        num->is_int = false;
        p->pos++;
        if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
            return bad(p, start, "bad number");
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
            p->pos++;
    }
    if (peek(p, 'e') || peek(p, 'E')) {
        num->is_int = false;
        p->pos++;
        if (peek(p, '+') || peek(p, '-'))
            p->pos++;
        if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
            return bad(p, start, "bad number");
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
            p->pos++;
    }
    return 0;
}

static int
literal(struct parser *p, const char *word)
{
    size_t n = strlen(word);

    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return unexpected(p, "a JSON value");
    p->pos += n;
    return 0;
}

/* Check and skip any JSON value (an ignored field). */
static int
skip_value(struct parser *p, int depth)
{
    char c = p->pos < p->len ? p->s[p->pos] : '\0';
    bool obj = c == '{';
    struct number num;

    switch (c) {
    case '"':
        return parse_string(p, NULL);
    case 't':
        return literal(p, "true");
    case 'f':
        return literal(p, "false");
    case 'n':
        return literal(p, "null");
    case '{':
    case '[':
        if (depth >= MAX_DEPTH)
            return bad(p, p->pos, "nested more than %d deep", MAX_DEPTH);
        p->pos++;
        skip_ws(p);
        if (peek(p, obj ? '}' : ']')) {
            p->pos++;
            return 0;
        }
        for (;;) {
            if (obj && (parse_string(p, NULL) < 0 || expect(p, ':', "':'") < 0))
                return -1;
            if (skip_value(p, depth + 1) < 0)
                return -1;
            skip_ws(p);
            if (peek(p, ',')) {
                p->pos++;
                skip_ws(p);
            } else if (peek(p, obj ? '}' : ']')) {
                p->pos++;
                return 0;
            } else {
                return unexpected(p, obj ? "',' or '}'" : "',' or ']'");
            }
        }
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return scan_number(p, &num);
        return unexpected(p, "a JSON value");
    }
}

/* A non-negative integer below 2^63 of field `what` of tensor name. */
static int
parse_index(struct parser *p, const char *name, const char *what, int64_t *out)
{
    struct number num;
    size_t at = p->pos;
    char c = p->pos < p->len ? p->s[p->pos] : '\0';

    if (c != '-' && (c < '0' || c > '9'))
        return tbad(p, name, at, "'%s' holds something other than a number",
                    what);
    if (scan_number(p, &num) < 0)
        return -1;
    if (!num.is_int)
        return tbad(p, name, at, "'%s' holds a number that is not an integer",
                    what);
    if (num.neg)
        return tbad(p, name, at, "'%s' holds a negative number", what);
    if (num.overflow || num.v > INT64_MAX)
        return tbad(p, name, at, "'%s' holds a number of 2^63 or more", what);
    *out = (int64_t)num.v;
    return 0;
}

/* An array of non-negative integers into v[0..*n), at most max of them. */
static int
parse_index_array(struct parser *p, const char *name, const char *what,
                  int64_t *v, int max, int *n)
{
    size_t at = p->pos;

    *n = 0;
    if (!peek(p, '['))
        return tbad(p, name, at, "'%s' is not an array", what);
    p->pos++;
    skip_ws(p);
    if (peek(p, ']')) {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (*n == max)
            return tbad(p, name, at, "'%s' has more than %d elements", what,
                        max);
        if (parse_index(p, name, what, &v[(*n)++]) < 0)
            return -1;
        skip_ws(p);
        if (peek(p, ']')) {
            p->pos++;
            return 0;
        }
        if (expect(p, ',', "',' or ']'") < 0)
            return -1;
    }
}

static int
parse_tensor(struct parser *p, struct entry *e)
{
    const char *name = e->t.name, *key, *dtype = NULL;
    size_t at = p->pos, dtype_at = 0;
    bool have_shape = false, have_offsets = false;
    int64_t off[3];
    int n_off = 0, d, more;

    if (!peek(p, '{'))
        return tbad(p, name, at, "its entry is not a JSON object");
    for (more = begin_object(p); more > 0; more = next_member(p)) {
        size_t key_at = p->pos;

        if (parse_string(p, &key) < 0 || expect(p, ':', "':'") < 0)
            return -1;
        if ((strcmp(key, "dtype") == 0 && dtype != NULL) ||
            (strcmp(key, "shape") == 0 && have_shape) ||
            (strcmp(key, "data_offsets") == 0 && have_offsets))
            return tbad(p, name, key_at, "'%s' appears twice", key);
        if (strcmp(key, "dtype") == 0) {
            dtype_at = p->pos;
            if (!peek(p, '"'))
                return tbad(p, name, p->pos, "'dtype' is not a string");
            if (parse_string(p, &dtype) < 0)
                return -1;
        } else if (strcmp(key, "shape") == 0) {
            if (parse_index_array(p, name, "shape", e->t.shape, ST_MAX_DIMS,
                                  &e->t.ndim) < 0)
                return -1;
            have_shape = true;
        } else if (strcmp(key, "data_offsets") == 0) {
            size_t off_at = p->pos;

            if (parse_index_array(p, name, "data_offsets", off, 3, &n_off) < 0)
                return -1;
            if (n_off != 2)
                return tbad(p, name, off_at,
                            "'data_offsets' has %d elements, not 2 "
                            "([begin, end])",
                            n_off);
            have_offsets = true;
        } else if (skip_value(p, 1) < 0) {
            return -1;
        }
    }
    if (more < 0)
        return -1;
    if (dtype == NULL || !have_shape || !have_offsets)
        return tbad(p, name, at, "its entry has no '%s'",
                    dtype == NULL ? "dtype"
                    : !have_shape ? "shape"
                                  : "data_offsets");
    for (d = 0; d < ST_N_DTYPES; d++)
        if (strcmp(dtype, dtypes[d].name) == 0)
            break;
    if (d == ST_N_DTYPES)
        return tbad(p, name, dtype_at, "unknown dtype '%.40s'", dtype);
    e->t.dtype = (enum st_dtype)d;
    e->begin = (uint64_t)off[0];
    e->end = (uint64_t)off[1];
    return 0;
}

static int
parse_meta(struct parser *p)
{
    size_t at = p->pos;
    int more;

    if (p->have_meta)
        return bad(p, at, "'__metadata__' appears twice");
    p->have_meta = true;
    if (peek(p, 'n'))
        return literal(p, "null");
    if (!peek(p, '{'))
        return bad(p, at, "'__metadata__' is not an object");
    for (more = begin_object(p); more > 0; more = next_member(p)) {
        const char *k, *v;

        if (p->n_meta == p->cap_meta) {
            size_t cap = p->cap_meta ? 2 * p->cap_meta : 8;
            const char **m =
                (const char **)realloc((void *)p->meta, 2 * cap * sizeof(*m));

            if (m == NULL)
                return fail(p->err, "'%s': out of memory", p->file);
            p->meta = m;
            p->cap_meta = cap;
        }
        if (parse_string(p, &k) < 0 || expect(p, ':', "':'") < 0)
            return -1;
        if (!peek(p, '"'))
            return bad(p, p->pos, "metadata value of '%.150s' is not a string",
                       k);
        if (parse_string(p, &v) < 0)
            return -1;
        p->meta[2 * p->n_meta] = k;
        p->meta[2 * p->n_meta + 1] = v;
        p->n_meta++;
    }
    if (more < 0)
        return -1;
    return 0;
}

static int
parse_header(struct parser *p)
{
    int more;

    skip_ws(p);
    if (!peek(p, '{'))
        return bad(p, p->pos, "the header is not a JSON object");
    for (more = begin_object(p); more > 0; more = next_member(p)) {
        const char *key;

        if (parse_string(p, &key) < 0 || expect(p, ':', "':'") < 0)
            return -1;
        if (strcmp(key, "__metadata__") == 0) {
            if (parse_meta(p) < 0)
                return -1;
        } else {
            struct entry *e;

            if (p->n == p->cap_e) {
                size_t cap = p->cap_e ? 2 * p->cap_e : 16;

                e = (struct entry *)realloc(p->e, cap * sizeof(*e));
                if (e == NULL)
                    return fail(p->err, "'%s': out of memory", p->file);
                p->e = e;
                p->cap_e = cap;
            }
            e = &p->e[p->n];
            memset(e, 0, sizeof(*e));
            e->t.name = key;
            e->index = p->n;
            p->n++;
            if (parse_tensor(p, e) < 0)
                return -1;
        }
    }
    if (more < 0)
        return -1;
    skip_ws(p);
    if (p->pos != p->len)
        return bad(p, p->pos, "text after the header's JSON object");
    return 0;
}

/* ------------------------------------------------------------ reader */

static int
cmp_entry_offsets(const void *a, const void *b)
{
    const struct entry *x = (const struct entry *)a;
    const struct entry *y = (const struct entry *)b;

    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int
cmp_tensor_names(const void *a, const void *b)
{
    const struct st_tensor *x = *(const struct st_tensor *const *)a;
    const struct st_tensor *y = *(const struct st_tensor *const *)b;

    return strcmp(x->name, y->name);
}

/* Check each tensor's dtype, shape and offsets against each other and
 * the data size. */
static int
check_entries(struct parser *p, uint64_t data_len)
{
    for (size_t i = 0; i < p->n; i++) {
        struct entry *e = &p->e[i];
        char sh[160];
        const char *why;
        uint64_t nbytes;

        if (!tensor_bytes(e->t.dtype, e->t.shape, e->t.ndim, &nbytes, &why))
            return fail(p->err, "'%s': tensor '%.150s': shape %s of %s %s",
                        p->file, e->t.name,
                        shape_str(sh, sizeof(sh), e->t.shape, e->t.ndim),
                        dtypes[e->t.dtype].name, why);
        if (e->begin > e->end)
            return fail(p->err,
                        "'%s': tensor '%.150s': data_offsets [%" PRIu64
                        ", %" PRIu64 "] begin after they end",
                        p->file, e->t.name, e->begin, e->end);
        if (e->end - e->begin != nbytes)
            return fail(p->err,
                        "'%s': tensor '%.150s': shape %s of %s needs %" PRIu64
                        " bytes, data_offsets [%" PRIu64 ", %" PRIu64
                        "] hold %" PRIu64,
                        p->file, e->t.name,
                        shape_str(sh, sizeof(sh), e->t.shape, e->t.ndim),
                        dtypes[e->t.dtype].name, nbytes, e->begin, e->end,
                        e->end - e->begin);
        if (e->end > data_len)
            return fail(p->err,
                        "'%s': tensor '%.150s': data_offsets [%" PRIu64
                        ", %" PRIu64 "] pass the end of the data (%" PRIu64
                        " bytes after the header): file truncated?",
                        p->file, e->t.name, e->begin, e->end, data_len);
        e->t.nbytes = (size_t)nbytes;
    }
    return 0;
}

/* No two tensors have the same name, no two metadata pairs the same key
 * (the pairs end up sorted by key). */
static int
check_unique(struct parser *p)
{
    const char **names, *dup;

    names = (const char **)malloc((p->n ? p->n : 1) * sizeof(*names));
    if (names == NULL)
        return fail(p->err, "'%s': out of memory", p->file);
    for (size_t i = 0; i < p->n; i++)
        names[i] = p->e[i].t.name;
    dup = find_duplicate(names, p->n);
    free((void *)names);
    if (dup != NULL)
        return fail(p->err, "'%s': tensor '%.150s' appears twice in the header",
                    p->file, dup);
    if (p->n_meta > 1)
        qsort((void *)p->meta, p->n_meta, 2 * sizeof(*p->meta), cmp_strs);
    for (size_t i = 1; i < p->n_meta; i++)
        if (strcmp(p->meta[2 * i - 2], p->meta[2 * i]) == 0)
            return fail(p->err, "'%s': metadata key '%.150s' appears twice",
                        p->file, p->meta[2 * i]);
    return 0;
}

/* The tensors, sorted by offset, cover [0, data_len) once. */
static int
check_coverage(struct parser *p, uint64_t data_len)
{
    uint64_t pos = 0;

    if (p->n > 1)
        qsort(p->e, p->n, sizeof(*p->e), cmp_entry_offsets);
    for (size_t i = 0; i < p->n; i++) {
        const struct entry *e = &p->e[i];

        if (e->begin > pos)
            return fail(p->err,
                        "'%s': data bytes [%" PRIu64 ", %" PRIu64
                        ") before tensor '%.150s' belong to no tensor",
                        p->file, pos, e->begin, e->t.name);
        if (e->begin < pos)
            return fail(p->err,
                        "'%s': tensor '%.150s' (data_offsets [%" PRIu64
                        ", %" PRIu64 "]) overlaps tensor '%.150s' "
                        "(data_offsets [%" PRIu64 ", %" PRIu64 "])",
                        p->file, e->t.name, e->begin, e->end,
                        p->e[i - 1].t.name, p->e[i - 1].begin, p->e[i - 1].end);
        pos = e->end;
    }
    if (pos != data_len)
        return fail(p->err,
                    "'%s': data bytes [%" PRIu64 ", %" PRIu64
                    ") after the last tensor belong to no tensor",
                    p->file, pos, data_len);
    return 0;
}

/* Fill f from the parsed header: tensors in data order, pointing into
 * data (or at aligned copies), name and metadata indexes. */
static int
build(struct parser *p, struct st_file *f, const unsigned char *data)
{
    size_t copy_len = 0, copy_off = 0;

    f->n = p->n;
    f->t = (struct st_tensor *)calloc(p->n ? p->n : 1, sizeof(*f->t));
    f->by_name =
        (const struct st_tensor **)calloc(p->n ? p->n : 1, sizeof(*f->by_name));
    if (f->t == NULL || f->by_name == NULL)
        return fail(p->err, "'%s': out of memory", p->file);
    for (size_t i = 0; i < p->n; i++) {
        size_t align = (dtypes[p->e[i].t.dtype].bits + 7) / 8;
        static const double no_data; /* aligned for every dtype */

        f->t[i] = p->e[i].t;
        f->t[i].data = f->t[i].nbytes ? (const void *)(data + p->e[i].begin)
                                      : (const void *)&no_data;
        f->by_name[i] = &f->t[i];
        if (f->t[i].nbytes > 0 && (uintptr_t)f->t[i].data % align != 0)
            copy_len += (f->t[i].nbytes + 15) & ~(size_t)15;
    }
    if (p->n > 1)
        qsort((void *)f->by_name, p->n, sizeof(*f->by_name), cmp_tensor_names);
    f->n_meta = p->n_meta;
    f->meta = p->meta;
    p->meta = NULL;

    if (copy_len > 0) {
        /* malloc aligns to 16, more than any element needs. */
        f->copies = (unsigned char *)malloc(copy_len);
        if (f->copies == NULL)
            return fail(p->err, "'%s': out of memory", p->file);
        for (size_t i = 0; i < p->n; i++) {
            size_t align = (dtypes[f->t[i].dtype].bits + 7) / 8;

            if (f->t[i].nbytes == 0 || (uintptr_t)f->t[i].data % align == 0)
                continue;
            memcpy(f->copies + copy_off, f->t[i].data, f->t[i].nbytes);
            f->t[i].data = f->copies + copy_off;
            copy_off += (f->t[i].nbytes + 15) & ~(size_t)15;
        }
    }
    return 0;
}

static uint64_t
le64(const unsigned char *b)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static int
open_common(struct st_file **out, const unsigned char *buf, size_t len,
            const char *file, void *map, struct st_err *err)
{
    struct parser p;
    struct st_file *f;
    uint64_t hlen;
    int rc = -1;

    *out = NULL;
    memset(&p, 0, sizeof(p));
    f = (struct st_file *)calloc(1, sizeof(*f));
    if (f == NULL) {
        if (map != NULL)
            munmap(map, len);
        return fail(err, "'%s': out of memory", file);
    }
    f->map = map;
    f->map_len = len;
    if (len < 8) {
        fail(err,
             "'%s': %zu bytes is too short for a safetensors file (the "
             "header length alone is 8)",
             file, len);
        goto out;
    }
    hlen = le64(buf);
    if (hlen > ST_MAX_HEADER) {
        fail(err,
             "'%s': header length %" PRIu64 " at byte 0 is absurd (more "
             "than %d): not a safetensors file?",
             file, hlen, ST_MAX_HEADER);
        goto out;
    }
    if (hlen > len - 8) {
        fail(err,
             "'%s': header length %" PRIu64 " at byte 0 passes the end of "
             "the file (%zu bytes): file truncated?",
             file, hlen, len);
        goto out;
    }
    p.s = (const char *)buf + 8;
    p.len = (size_t)hlen;
    p.file = file;
    p.err = err;
    p.cap = p.len + 1;
    p.arena = (char *)malloc(p.cap);
    if (p.arena == NULL) {
        fail(err, "'%s': out of memory", file);
        goto out;
    }
    f->strs = p.arena;
    if (parse_header(&p) < 0 || check_entries(&p, len - 8 - hlen) < 0 ||
        check_unique(&p) < 0 || check_coverage(&p, len - 8 - hlen) < 0 ||
        build(&p, f, buf + 8 + hlen) < 0)
        goto out;
    rc = 0;
out:
    free(p.e);
    free((void *)p.meta);
    if (rc < 0)
        st_close(f);
    else
        *out = f;
    return rc;
}

int
st_open_buffer(struct st_file **out, const void *buf, size_t len,
               const char *name, struct st_err *err)
{
    return open_common(out, (const unsigned char *)buf, len,
                       name ? name : "buffer", NULL, err);
}

int
st_open(struct st_file **out, const char *path, struct st_err *err)
{
    struct stat st;
    void *map;
    int fd;

    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, "cannot open '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) < 0) {
        int e = errno;

        close(fd);
        return fail(err, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return fail(err, "'%s' is larger than the address space", path);
    }
    if (st.st_size < 8) {
        unsigned char small[8];
        ssize_t n = pread(fd, small, sizeof(small), 0);

        close(fd);
        return open_common(out, small, n > 0 ? (size_t)n : 0, path, NULL, err);
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return fail(err, "cannot map '%s': %s", path, strerror(errno));
    return open_common(out, (const unsigned char *)map, (size_t)st.st_size,
                       path, map, err);
}

size_t
st_count(const struct st_file *f)
{
    return f->n;
}

const struct st_tensor *
st_at(const struct st_file *f, size_t i)
{
    return i < f->n ? &f->t[i] : NULL;
}

const struct st_tensor *
st_find(const struct st_file *f, const char *name)
{
    struct st_tensor key;
    const struct st_tensor *k = &key, *const * hit;

    if (f->n == 0)
        return NULL;
    key.name = name;
    hit = (const struct st_tensor *const *)bsearch(
        &k, f->by_name, f->n, sizeof(*f->by_name), cmp_tensor_names);
    return hit ? *hit : NULL;
}

const char *
st_meta(const struct st_file *f, const char *key)
{
    const char *const *hit;

    if (f->n_meta == 0)
        return NULL;
    hit = (const char *const *)bsearch(&key, f->meta, f->n_meta,
                                       2 * sizeof(*f->meta), cmp_strs);
    return hit ? hit[1] : NULL;
}

void
st_close(struct st_file *f)
{
    if (f == NULL)
        return;
    if (f->map != NULL)
        munmap(f->map, f->map_len);
    free(f->t);
    free((void *)f->by_name);
    free((void *)f->meta);
    free(f->strs);
    free(f->copies);
    free(f);
}

/* ------------------------------------------------------------ writer */

/* A growing buffer; oom is set (and nothing more appended) on failure. */
struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void
sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;

        while (cap - b->len < n)
            cap *= 2;
        p = (char *)realloc(b->p, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void
sb_str(struct sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void
sb_u64(struct sbuf *b, uint64_t v)
{
    char buf[24];
    int k = snprintf(buf, sizeof(buf), "%" PRIu64, v);

    sb_add(b, buf, (size_t)k);
}

/* s as a JSON string: quotes, backslashes and control characters escaped,
 * everything else (valid UTF-8) as is, as serde_json writes it. */
static void
sb_json(struct sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";

    sb_add(b, "\"", 1);
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        char esc[6] = { '\\', 'u', '0', '0', hex[*u >> 4], hex[*u & 15] };

        switch (*u) {
        case '"':
            sb_add(b, "\\\"", 2);
            break;
        case '\\':
            sb_add(b, "\\\\", 2);
            break;
        case '\b':
            sb_add(b, "\\b", 2);
            break;
        case '\f':
            sb_add(b, "\\f", 2);
            break;
        case '\n':
            sb_add(b, "\\n", 2);
            break;
        case '\r':
            sb_add(b, "\\r", 2);
            break;
        case '\t':
            sb_add(b, "\\t", 2);
            break;
        default:
            if (*u < 0x20)
                sb_add(b, esc, 6);
            else
                sb_add(b, (const char *)u, 1);
        }
    }
    sb_add(b, "\"", 1);
}

/* A tensor of a header; need_data: its data must be there too. */
static int
check_tensor(const char *path, const struct st_tensor *t, size_t i,
             bool need_data, struct st_err *err)
{
    char sh[160];
    const char *why;
    uint64_t nbytes;

    if (t->name == NULL)
        return fail(err, "cannot write '%s': tensor %zu has no name", path, i);
    if (!utf8_valid(t->name))
        return fail(err,
                    "cannot write '%s': the name of tensor %zu is not valid "
                    "UTF-8",
                    path, i);
    if (strcmp(t->name, "__metadata__") == 0)
        return fail(err,
                    "cannot write '%s': tensor %zu is named '__metadata__', "
                    "which the format reserves",
                    path, i);
    if ((unsigned)t->dtype >= ST_N_DTYPES)
        return fail(err, "cannot write '%s': tensor '%.150s': bad dtype %d",
                    path, t->name, (int)t->dtype);
    if (t->ndim < 0 || t->ndim > ST_MAX_DIMS)
        return fail(err,
                    "cannot write '%s': tensor '%.150s': ndim %d is not in "
                    "[0, %d]",
                    path, t->name, t->ndim, ST_MAX_DIMS);
    if (!tensor_bytes(t->dtype, t->shape, t->ndim, &nbytes, &why))
        return fail(err, "cannot write '%s': tensor '%.150s': shape %s %s",
                    path, t->name, shape_str(sh, sizeof(sh), t->shape, t->ndim),
                    why);
    if (nbytes != t->nbytes)
        return fail(err,
                    "cannot write '%s': tensor '%.150s': shape %s of %s is "
                    "%" PRIu64 " bytes, nbytes is %zu",
                    path, t->name, shape_str(sh, sizeof(sh), t->shape, t->ndim),
                    dtypes[t->dtype].name, nbytes, t->nbytes);
    if (need_data && t->nbytes > 0 && t->data == NULL)
        return fail(err, "cannot write '%s': tensor '%.150s' has no data", path,
                    t->name);
    return 0;
}

/* The header of st_write, padded with spaces to a multiple of 8, into b. */
static int
make_header(const char *path, const struct st_tensor *t, size_t n,
            const char *const *meta_kv, bool need_data, struct sbuf *b,
            struct st_err *err)
{
    size_t n_meta = 0;
    uint64_t off = 0;
    const char **names, *dup, *what = "tensor name";

    for (size_t i = 0; i < n; i++)
        if (check_tensor(path, &t[i], i, need_data, err) < 0)
            return -1;
    /* { k0, v0, ..., NULL }: a NULL value ends the array too. */
    for (; meta_kv != NULL && meta_kv[2 * n_meta] != NULL; n_meta++) {
        const char *k = meta_kv[2 * n_meta], *v = meta_kv[2 * n_meta + 1];

        if (v == NULL)
            return fail(err,
                        "cannot write '%s': metadata key '%.150s' has no "
                        "value",
                        path, k);
        if (!utf8_valid(k) || !utf8_valid(v))
            return fail(err,
                        "cannot write '%s': metadata '%.150s' is not valid "
                        "UTF-8",
                        path, k);
    }
    names = (const char **)malloc((n + n_meta + 1) * sizeof(*names));
    if (names == NULL)
        return fail(err, "cannot write '%s': out of memory", path);
    for (size_t i = 0; i < n; i++)
        names[i] = t[i].name;
    dup = find_duplicate(names, n);
    if (dup == NULL) {
        for (size_t i = 0; i < n_meta; i++)
            names[i] = meta_kv[2 * i];
        dup = find_duplicate(names, n_meta);
        what = "metadata key";
    }
    free((void *)names);
    if (dup != NULL)
        return fail(err, "cannot write '%s': %s '%.150s' appears twice", path,
                    what, dup);

    sb_str(b, "{");
    if (n_meta > 0) {
        sb_str(b, "\"__metadata__\":{");
        for (size_t i = 0; i < n_meta; i++) {
            if (i)
                sb_str(b, ",");
            sb_json(b, meta_kv[2 * i]);
            sb_str(b, ":");
            sb_json(b, meta_kv[2 * i + 1]);
        }
        sb_str(b, "}");
    }
    for (size_t i = 0; i < n; i++) {
        if (i || n_meta)
            sb_str(b, ",");
        sb_json(b, t[i].name);
        sb_str(b, ":{\"dtype\":\"");
        sb_str(b, dtypes[t[i].dtype].name);
        sb_str(b, "\",\"shape\":[");
        for (int d = 0; d < t[i].ndim; d++) {
            if (d)
                sb_str(b, ",");
            sb_u64(b, (uint64_t)t[i].shape[d]);
        }
        sb_str(b, "],\"data_offsets\":[");
        sb_u64(b, off);
        sb_str(b, ",");
        if (t[i].nbytes > UINT64_MAX - off)
            return fail(err, "cannot write '%s': more than 2^64 bytes", path);
        off += t[i].nbytes;
        sb_u64(b, off);
        sb_str(b, "]}");
    }
    sb_str(b, "}");
    while (!b->oom && b->len % 8 != 0)
        sb_str(b, " ");
    if (b->oom)
        return fail(err, "cannot write '%s': out of memory", path);
    if (b->len > ST_MAX_HEADER)
        return fail(err,
                    "cannot write '%s': the header would be %zu bytes, "
                    "more than readers accept (%d)",
                    path, b->len, ST_MAX_HEADER);
    return 0;
}

/* A file being written: its temporary, and the bytes of the tensors'
 * data still to come, one tensor after the other. */
struct st_writer {
    char *path, *tmp;
    int fd;
    size_t *nbytes; /* of each tensor, in order */
    size_t n, next;
};

void
st_writer_abort(struct st_writer *w)
{
    if (w == NULL)
        return;
    if (w->fd >= 0) {
        close(w->fd);
        unlink(w->tmp);
    }
    free(w->path);
    free(w->tmp);
    free(w->nbytes);
    free(w);
}

int
st_writer_open(struct st_writer **out, const char *path,
               const struct st_tensor *t, size_t n, const char *const *meta_kv,
               struct st_err *err)
{
    struct sbuf hdr = { 0 };
    unsigned char len8[8];
    struct st_writer *w;
    size_t tmp_len;

    *out = NULL;
    if (path == NULL || (n > 0 && t == NULL))
        return fail(err, "st_writer_open: %s is NULL", path ? "t" : "path");
    if (make_header(path, t, n, meta_kv, false, &hdr, err) < 0) {
        free(hdr.p);
        return -1;
    }
    w = (struct st_writer *)calloc(1, sizeof(*w));
    tmp_len = strlen(path) + 32;
    if (w == NULL || (w->path = strdup(path)) == NULL ||
        (w->tmp = (char *)malloc(tmp_len)) == NULL ||
        (w->nbytes = (size_t *)malloc((n ? n : 1) * sizeof(size_t))) == NULL) {
        if (w != NULL)
            w->fd = -1;
        st_writer_abort(w);
        free(hdr.p);
        return fail(err, "cannot write '%s': out of memory", path);
    }
    w->n = n;
    for (size_t i = 0; i < n; i++)
        w->nbytes[i] = t[i].nbytes;
    snprintf(w->tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        fail(err, "cannot create '%s': %s", w->tmp, strerror(errno));
        st_writer_abort(w);
        free(hdr.p);
        return -1;
    }
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)hdr.len >> (8 * i));
    if (tr_write_all(w->fd, len8, 8) < 0 ||
        tr_write_all(w->fd, hdr.p, hdr.len) < 0) {
        fail(err, "cannot write '%s': %s", w->tmp, strerror(errno));
        st_writer_abort(w);
        free(hdr.p);
        return -1;
    }
    free(hdr.p);
    *out = w;
    return 0;
}

int
st_writer_put(struct st_writer *w, const void *data, size_t nbytes,
              struct st_err *err)
{
    if (w->next >= w->n || nbytes != w->nbytes[w->next])
        return fail(err,
                    "cannot write '%s': tensor %zu of %zu given %zu bytes "
                    "(its header says %zu)",
                    w->path, w->next, w->n, nbytes,
                    w->next < w->n ? w->nbytes[w->next] : (size_t)0);
    if (nbytes > 0 && data == NULL)
        return fail(err, "cannot write '%s': tensor %zu has no data", w->path,
                    w->next);
    if (tr_write_all(w->fd, data, nbytes) < 0)
        return fail(err, "cannot write '%s': %s", w->tmp, strerror(errno));
    w->next++;
    return 0;
}

int
st_writer_close(struct st_writer *w, struct st_err *err)
{
    int rc = -1, fd;

    if (w->next != w->n) {
        fail(err, "cannot write '%s': %zu of its %zu tensors written", w->path,
             w->next, w->n);
        goto out;
    }
    if (fsync(w->fd) < 0) {
        fail(err, "cannot sync '%s': %s", w->tmp, strerror(errno));
        goto out;
    }
    fd = w->fd;
    w->fd = -1;
    if (close(fd) < 0) {
        fail(err, "cannot write '%s': %s", w->tmp, strerror(errno));
        unlink(w->tmp);
        goto out;
    }
    if (rename(w->tmp, w->path) < 0) {
        fail(err, "cannot rename '%s' to '%s': %s", w->tmp, w->path,
             strerror(errno));
        unlink(w->tmp);
        goto out;
    }
    tr_sync_parent(w->path);
    rc = 0;
out:
    st_writer_abort(w);
    return rc;
}

int
st_write(const char *path, const struct st_tensor *t, size_t n,
         const char *const *meta_kv, struct st_err *err)
{
    struct st_writer *w;

    if (path == NULL || (n > 0 && t == NULL))
        return fail(err, "st_write: %s is NULL", path ? "t" : "path");
    for (size_t i = 0; i < n; i++)
        if (check_tensor(path, &t[i], i, true, err) < 0)
            return -1;
    if (st_writer_open(&w, path, t, n, meta_kv, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (st_writer_put(w, t[i].data, t[i].nbytes, err) < 0) {
            st_writer_abort(w);
            return -1;
        }
    return st_writer_close(w, err);
}
