/* SPDX-License-Identifier: MIT */
/*
 * fuzz_idx.c: the .idx (MMIDIDX) parser on arbitrary bytes.  What it
 * accepts must be a consistent index (every sentence inside the token
 * range, doc_idx from 0 to N), and the same arrays behind a header written
 * by ds_idx_header() must parse to the same result.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "ds_int.h"

static void
check(const struct ds_idx *x)
{
    uint64_t item = ds_dtype_size(x->dtype), sum = 0, prev = 0;

    if (!ds_dtype_is_int(x->dtype))
        abort();
    for (uint64_t i = 0; i < x->n; i++) {
        uint64_t size = ds_le32(x->sizes + 4 * i);
        uint64_t ptr = ds_le64(x->pointers + 8 * i);

        if (size > INT32_MAX || ptr != sum * item)
            abort();
        sum += size;
    }
    if (sum != x->n_tokens || x->m == 0 || ds_le64(x->doc_idx) != 0 ||
        ds_le64(x->doc_idx + 8 * (x->m - 1)) != x->n)
        abort();
    for (uint64_t k = 0; k < x->m; k++) {
        uint64_t d = ds_le64(x->doc_idx + 8 * k);

        if (d < prev || d > x->n)
            abort();
        prev = d;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ds_idx x, y;
    struct ds_err e;
    unsigned char *copy;
    size_t arrays;

    if (ds_idx_parse(data, size, "fuzz", &x, &e) < 0) {
        if (e.code != DS_EFORMAT)
            abort();
        return 0;
    }
    check(&x);
    arrays = (size_t)(12 * x.n + 8 * x.m);
    copy = malloc(DS_IDX_HEADER_LEN + arrays);
    if (copy == NULL)
        return 0;
    ds_idx_header(x.dtype, x.n, x.m, copy);
    memcpy(copy + DS_IDX_HEADER_LEN, x.sizes, arrays);
    if (ds_idx_parse(copy, DS_IDX_HEADER_LEN + arrays, "again", &y, &e) < 0 ||
        y.dtype != x.dtype || y.n != x.n || y.m != x.m ||
        y.n_tokens != x.n_tokens)
        abort();
    free(copy);
    return 0;
}
