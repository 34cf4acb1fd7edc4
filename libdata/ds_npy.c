/* SPDX-License-Identifier: MIT */
/*
 * ds_npy.c: the NPY array format (numpy's format.py, versions 1.0 to 3.0):
 * a parser for the header of 1-D arrays and the header np.save writes.
 *
 * The header is a Python dict literal.  Instead of a Python evaluator this
 * file reads the small grammar numpy has ever written: the three keys in
 * any order, string values without escapes, True/False, and a tuple of
 * decimal integers (with Python 2's 'L' suffix allowed).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

#include "ds_int.h"

static const unsigned char npy_magic[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };

/* A cursor over the header text, for messages with byte offsets. */
struct hdr {
    const char *s;
    size_t pos, len;
    size_t base; /* offset of s in the file */
    const char *name;
    struct ds_err *err;
};

static int
hdr_fail(struct hdr *h, const char *what)
{
    return ds_err_set(h->err, DS_EFORMAT, "'%s': NPY header at byte %zu: %s",
                      h->name, h->base + h->pos, what);
}

static void
skip_ws(struct hdr *h)
{
    while (h->pos < h->len && (h->s[h->pos] == ' ' || h->s[h->pos] == '\t' ||
                               h->s[h->pos] == '\n' || h->s[h->pos] == '\r' ||
                               h->s[h->pos] == '\f' || h->s[h->pos] == '\v'))
        h->pos++;
}

static bool
eat(struct hdr *h, char c)
{
    skip_ws(h);
    if (h->pos < h->len && h->s[h->pos] == c) {
        h->pos++;
        return true;
    }
    return false;
}

/* A quoted string without escapes; its contents go to *p and *n. */
static int
parse_string(struct hdr *h, const char **p, size_t *n)
{
    char q;
    size_t start;

    skip_ws(h);
    if (h->pos >= h->len || (h->s[h->pos] != '\'' && h->s[h->pos] != '"'))
        return hdr_fail(h, "expected a quoted string");
    q = h->s[h->pos++];
    start = h->pos;
    while (h->pos < h->len && h->s[h->pos] != q) {
        if (h->s[h->pos] == '\\' || h->s[h->pos] == '\n')
            return hdr_fail(h, "unsupported character in a string");
        h->pos++;
    }
    if (h->pos >= h->len)
        return hdr_fail(h, "unterminated string");
    *p = h->s + start;
    *n = h->pos - start;
    h->pos++;
    return 0;
}

static bool
is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static int
parse_bool(struct hdr *h, bool *out)
{
    size_t start;

    skip_ws(h);
    start = h->pos;
    while (h->pos < h->len && is_ident_char(h->s[h->pos]))
        h->pos++;
    if (h->pos - start == 4 && memcmp(h->s + start, "True", 4) == 0)
        *out = true;
    else if (h->pos - start == 5 && memcmp(h->s + start, "False", 5) == 0)
        *out = false;
    else {
        h->pos = start;
        return hdr_fail(h, "'fortran_order' is not True or False");
    }
    return 0;
}

/* A non-negative decimal integer that fits int64 (numpy's intp). */
static int
parse_int(struct hdr *h, uint64_t *out)
{
    uint64_t x = 0;
    size_t start;

    skip_ws(h);
    start = h->pos;
    while (h->pos < h->len && h->s[h->pos] >= '0' && h->s[h->pos] <= '9') {
        unsigned d = (unsigned)(h->s[h->pos] - '0');

        if (x > ((uint64_t)INT64_MAX - d) / 10)
            return hdr_fail(h, "a dimension does not fit int64");
        x = x * 10 + d;
        h->pos++;
    }
    if (h->pos == start)
        return hdr_fail(h, "expected a non-negative integer in 'shape'");
    if (h->pos < h->len && (h->s[h->pos] == 'L' || h->s[h->pos] == 'l'))
        h->pos++; /* Python 2's long literal */
    *out = x;
    return 0;
}

/* A tuple of integers; must be 1-D: "(n,)". */
static int
parse_shape(struct hdr *h, uint64_t *n)
{
    size_t dims = 0, start;
    bool comma = false;

    skip_ws(h);
    start = h->pos;
    if (!eat(h, '('))
        return hdr_fail(h, "'shape' is not a tuple");
    while (!eat(h, ')')) {
        uint64_t x = 0;
        int rc;

        if (dims > 0 && !comma)
            return hdr_fail(h, "expected ',' or ')' in 'shape'");
        rc = parse_int(h, &x);
        if (rc < 0)
            return rc;
        if (dims++ == 0)
            *n = x;
        comma = eat(h, ',');
    }
    if (dims != 1 || !comma) {
        size_t end = h->pos;

        h->pos = start;
        return ds_err_set(h->err, DS_EFORMAT,
                          "'%s': NPY header at byte %zu: shape %.*s is not "
                          "1-D",
                          h->name, h->base + start, (int)(end - start),
                          h->s + start);
    }
    return 0;
}

static int
parse_dict(struct hdr *h, struct ds_npy *out)
{
    unsigned seen = 0;
    int rc;

    if (!eat(h, '{'))
        return hdr_fail(h, "expected '{'");
    while (!eat(h, '}')) {
        const char *key, *val;
        size_t klen, vlen, vpos;
        bool fortran;

        rc = parse_string(h, &key, &klen);
        if (rc < 0)
            return rc;
        if (!eat(h, ':'))
            return hdr_fail(h, "expected ':'");
        if (klen == 5 && memcmp(key, "descr", 5) == 0) {
            skip_ws(h);
            vpos = h->pos;
            rc = parse_string(h, &val, &vlen);
            if (rc < 0)
                return rc;
            out->dtype = ds_dtype_from_descr(val, vlen);
            if (out->dtype == 0) {
                h->pos = vpos;
                return ds_err_set(
                    h->err, DS_EFORMAT,
                    "'%s': NPY header at byte %zu: descr '%.*s' is not "
                    "supported (a little-endian integer or float type is "
                    "needed)",
                    h->name, h->base + vpos, (int)(vlen > 16 ? 16 : vlen), val);
            }
            seen |= 1;
        } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
            /* True is harmless: a 1-D array has one layout. */
            rc = parse_bool(h, &fortran);
            if (rc < 0)
                return rc;
            seen |= 2;
        } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
            rc = parse_shape(h, &out->n);
            if (rc < 0)
                return rc;
            seen |= 4;
        } else {
            h->pos = (size_t)(key - h->s) - 1;
            return hdr_fail(h, "unexpected key (only 'descr', "
                               "'fortran_order' and 'shape' are allowed)");
        }
        if (!eat(h, ',')) {
            if (!eat(h, '}'))
                return hdr_fail(h, "expected ',' or '}'");
            break;
        }
    }
    skip_ws(h);
    if (h->pos != h->len)
        return hdr_fail(h, "junk after the header dict");
    if (seen != 7)
        return ds_err_set(h->err, DS_EFORMAT, "'%s': NPY header lacks %s",
                          h->name,
                          !(seen & 1)   ? "'descr'"
                          : !(seen & 2) ? "'fortran_order'"
                                        : "'shape'");
    return 0;
}

int
ds_npy_parse(const void *p, size_t len, const char *name, struct ds_npy *out,
             struct ds_err *err)
{
    const unsigned char *b = p;
    struct hdr h;
    size_t hlen, hoff, size;
    int rc;

    memset(out, 0, sizeof(*out));
    if (len < 10 || memcmp(b, npy_magic, 6) != 0)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': not an NPY file (bad magic at byte 0)", name);
    if (b[6] < 1 || b[6] > 3 || b[7] != 0)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': NPY version %u.%u at byte 6 is not "
                          "supported (1.0, 2.0 or 3.0)",
                          name, b[6], b[7]);
    out->major = b[6];
    if (out->major == 1) {
        hlen = ds_le16(b + 8);
        hoff = 10;
    } else {
        if (len < 12)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': NPY file of %zu bytes is too short "
                              "for its header",
                              name, len);
        hlen = ds_le32(b + 8);
        hoff = 12;
    }
    if (hlen > len - hoff)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': NPY header length %zu at byte 8 passes the "
                          "end of the file (%zu bytes)",
                          name, hlen, len);
    h.s = (const char *)b + hoff;
    h.pos = 0;
    h.len = hlen;
    h.base = hoff;
    h.name = name;
    h.err = err;
    rc = parse_dict(&h, out);
    if (rc < 0)
        return rc;
    out->data_off = hoff + hlen;
    size = ds_dtype_size(out->dtype);
    if (out->n > (len - out->data_off) / size)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': shape (%" PRIu64 ",) of %s needs %s%" PRIu64
                          " bytes after the %zu-byte header, the file has "
                          "%zu",
                          name, out->n, ds_dtype_name(out->dtype),
                          out->n > UINT64_MAX / size ? "more than " : "",
                          out->n > UINT64_MAX / size ? UINT64_MAX
                                                     : out->n * size,
                          out->data_off, len - out->data_off);
    return 0;
}

void
ds_npy_header(enum ds_dtype t, uint64_t n, unsigned char out[DS_NPY_HEADER_LEN])
{
    int k;

    /* np.save: the dict, spaces, and a '\n' so the data starts at a
     * multiple of 64; for a 1-D array that is always 128 bytes, since
     * numpy also reserves room for a 21-digit length. */
    memcpy(out, npy_magic, 6);
    out[6] = 1;
    out[7] = 0;
    ds_put16(out + 8, DS_NPY_HEADER_LEN - 10);
    k = snprintf((char *)out + 10, DS_NPY_HEADER_LEN - 10,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRIu64
                 ",), }",
                 ds_dtype_descr(t), n);
    assert(k > 0 && k < DS_NPY_HEADER_LEN - 11);
    memset(out + 10 + k, ' ', DS_NPY_HEADER_LEN - 11 - (size_t)k);
    out[DS_NPY_HEADER_LEN - 1] = '\n';
}
