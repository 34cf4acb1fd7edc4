/* SPDX-License-Identifier: MIT */
/*
 * ds_check.c: the consistency checks of the sentence sizes and the
 * document index, which the .idx (sizes, doc_idx) and the .npz (lens,
 * docs) share.  Both arrays are little-endian and unaligned.
 */
#include <inttypes.h>
#include <stdio.h>

#include "ds_int.h"

/* " (byte 86)" when the array has a place in a file worth naming. */
static const char *
at_byte(char *buf, size_t cap, uint64_t base, uint64_t i, unsigned width)
{
    if (base == UINT64_MAX)
        return "";
    snprintf(buf, cap, " (byte %" PRIu64 ")", base + i * width);
    return buf;
}

int
ds_check_sizes(const unsigned char *p, uint64_t n, const char *name,
               const char *field, uint64_t base, uint64_t *n_tokens,
               struct ds_err *err)
{
    uint64_t sum = 0;
    char at[48];

    for (uint64_t i = 0; i < n; i++) {
        int32_t s = (int32_t)ds_le32(p + 4 * i);

        if (s < 0)
            return ds_err_set(
                err, DS_EFORMAT,
                "'%s': %s[%" PRIu64 "]%s = %" PRId32 " is negative", name,
                field, i, at_byte(at, sizeof(at), base, i, 4), s);
        if (__builtin_add_overflow(sum, (uint64_t)s, &sum))
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': %s: the sum of the first %" PRIu64
                              " entries overflows 64 bits",
                              name, field, i + 1);
    }
    *n_tokens = sum;
    return 0;
}

int
ds_check_doc_idx(const unsigned char *p, uint64_t m, uint64_t n_sentences,
                 const char *name, const char *field, uint64_t base,
                 struct ds_err *err)
{
    int64_t prev = 0;
    char at[48];

    if (m == 0)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': %s is empty (it needs at least the leading 0)",
                          name, field);
    for (uint64_t k = 0; k < m; k++) {
        int64_t d = (int64_t)ds_le64(p + 8 * k);

        if (k == 0 && d != 0)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': %s[0]%s = %" PRId64 ", expected 0", name,
                              field, at_byte(at, sizeof(at), base, 0, 8), d);
        if (d < prev)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': %s[%" PRIu64 "]%s = %" PRId64
                              " is less than %s[%" PRIu64 "] = %" PRId64,
                              name, field, k,
                              at_byte(at, sizeof(at), base, k, 8), d, field,
                              k - 1, prev);
        if ((uint64_t)d > n_sentences)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': %s[%" PRIu64 "]%s = %" PRId64
                              " is past the %" PRIu64 " sentences",
                              name, field, k,
                              at_byte(at, sizeof(at), base, k, 8), d,
                              n_sentences);
        prev = d;
    }
    if ((uint64_t)prev != n_sentences)
        return ds_err_set(
            err, DS_EFORMAT,
            "'%s': %s[%" PRIu64 "]%s = %" PRId64 ", the last entry, "
            "should be the number of sentences, %" PRIu64,
            name, field, m - 1, at_byte(at, sizeof(at), base, m - 1, 8), prev,
            n_sentences);
    return 0;
}
