/* SPDX-License-Identifier: MIT */
/*
 * ds_mmidx.c: the .idx file of the Megatron/PaddleNLP mmap dataset
 * ("MMIDIDX", spec section 5.2, ds-mmap(5)): the parser, which checks every
 * field against the file's size and the arrays against each other, and the
 * header the writer puts in front of the arrays.
 */
#include <inttypes.h>
#include <stdio.h>

#include "ds_int.h"

static const unsigned char lazy_magic[8] = {
    'T', 'N', 'T', 'I', 'D', 'X', 0, 0
};

/* The size an .idx with N sentences and M doc_idx entries needs, or
 * UINT64_MAX if that does not fit 64 bits. */
static uint64_t
idx_size(uint64_t n, uint64_t m)
{
    uint64_t a, b, s;

    if (__builtin_mul_overflow(n, 12, &a) || __builtin_mul_overflow(m, 8, &b) ||
        __builtin_add_overflow(a, b, &s) ||
        __builtin_add_overflow(s, DS_IDX_HEADER_LEN, &s))
        return UINT64_MAX;
    return s;
}

static int
check_pointers(const struct ds_idx *x, const char *name, struct ds_err *err)
{
    uint64_t expect = 0, itemsize = ds_dtype_size(x->dtype);

    for (uint64_t i = 0; i < x->n; i++) {
        uint64_t ptr = ds_le64(x->pointers + 8 * i);

        if (ptr != expect)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': pointers[%" PRIu64 "] (byte %" PRIu64
                              ") = %" PRId64 ", expected %" PRIu64
                              " (pointers are not contiguous)",
                              name, i, DS_IDX_HEADER_LEN + 4 * x->n + 8 * i,
                              (int64_t)ptr, expect);
        /* The sizes are checked already: each below 2^31, so this cannot
         * overflow before the last few of 2^33 maximal sentences. */
        if (__builtin_add_overflow(
                expect, (uint64_t)ds_le32(x->sizes + 4 * i) * itemsize,
                &expect))
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': the byte size of the first %" PRIu64
                              " sentences overflows 64 bits",
                              name, i + 1);
    }
    return 0;
}

int
ds_idx_parse(const void *p, size_t len, const char *name, struct ds_idx *out,
             struct ds_err *err)
{
    const unsigned char *b = p;
    uint64_t version, need;
    unsigned code;
    int rc;

    memset(out, 0, sizeof(*out));
    if (len >= 8 && memcmp(b, lazy_magic, 8) == 0)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': a lazy (TNTIDX) index is not supported; "
                          "write the dataset in the mmap format",
                          name);
    if (len < DS_IDX_HEADER_LEN)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': the file has %zu bytes, an index header "
                          "needs %d",
                          name, len, DS_IDX_HEADER_LEN);
    if (memcmp(b, DS_IDX_MAGIC, DS_IDX_MAGIC_LEN) != 0)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': bad magic at byte 0 (not an MMIDIDX index)",
                          name);
    version = ds_le64(b + 9);
    if (version != 1)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': version %" PRIu64 " at byte 9, expected 1",
                          name, version);
    code = b[17];
    if (!ds_dtype_is_int((enum ds_dtype)code)) {
        if (ds_dtype_size((enum ds_dtype)code) != 0)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': dtype code %u (%s) at byte 17 is not an "
                              "integer type",
                              name, code, ds_dtype_name((enum ds_dtype)code));
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': unknown dtype code %u at byte 17", name, code);
    }
    out->dtype = (enum ds_dtype)code;
    out->n = ds_le64(b + 18);
    out->m = ds_le64(b + 26);
    need = idx_size(out->n, out->m);
    if (need > len)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': N=%" PRIu64 " sentences and M=%" PRIu64
                          " document entries need %s%" PRIu64
                          " bytes, the file has %zu",
                          name, out->n, out->m,
                          need == UINT64_MAX ? "more than " : "", need, len);
    out->sizes = b + DS_IDX_HEADER_LEN;
    out->pointers = out->sizes + 4 * out->n;
    out->doc_idx = out->pointers + 8 * out->n;

    rc = ds_check_sizes(out->sizes, out->n, name, "sizes", DS_IDX_HEADER_LEN,
                        &out->n_tokens, err);
    if (rc < 0)
        return rc;
    rc = check_pointers(out, name, err);
    if (rc < 0)
        return rc;
    return ds_check_doc_idx(out->doc_idx, out->m, out->n, name, "doc_idx",
                            DS_IDX_HEADER_LEN + 12 * out->n, err);
}

void
ds_idx_header(enum ds_dtype t, uint64_t n, uint64_t m,
              unsigned char out[DS_IDX_HEADER_LEN])
{
    memcpy(out, DS_IDX_MAGIC, DS_IDX_MAGIC_LEN);
    ds_put64(out + 9, 1);
    out[17] = (unsigned char)t;
    ds_put64(out + 18, n);
    ds_put64(out + 26, m);
}
