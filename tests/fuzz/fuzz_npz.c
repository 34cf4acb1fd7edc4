/* SPDX-License-Identifier: MIT */
/*
 * fuzz_npz.c: the _idx.npz reader (libzip from memory, then the two NPY
 * members and their consistency checks) on arbitrary bytes.  What it
 * accepts must be a consistent pair: lens >= 0 adding up to n_tokens, and
 * docs from 0 to len(lens) without decreasing.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "ds_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ds_npz z;
    struct ds_err e;
    uint64_t sum = 0, prev = 0;

    if (ds_npz_parse(data, size, "fuzz", &z, &e) < 0) {
        if (e.code != DS_EFORMAT && e.code != DS_ENOMEM)
            abort();
        if (z.lens_mem != NULL || z.docs_mem != NULL)
            abort();
        return 0;
    }
    for (uint64_t i = 0; i < z.n; i++) {
        int32_t s = (int32_t)ds_le32(z.lens + 4 * i);

        if (s < 0)
            abort();
        sum += (uint64_t)s;
    }
    if (sum != z.n_tokens || z.m == 0 || ds_le64(z.docs) != 0 ||
        ds_le64(z.docs + 8 * (z.m - 1)) != z.n)
        abort();
    for (uint64_t k = 0; k < z.m; k++) {
        uint64_t d = ds_le64(z.docs + 8 * k);

        if (d < prev || d > z.n)
            abort();
        prev = d;
    }
    ds_npz_release(&z);
    return 0;
}
