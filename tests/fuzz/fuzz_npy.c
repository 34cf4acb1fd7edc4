/* SPDX-License-Identifier: MIT */
/*
 * fuzz_npy.c: the NPY header parser on arbitrary bytes.  What it accepts
 * must describe data inside the input, and the header np.save would write
 * for the same array must parse back to the same dtype and length.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "ds_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ds_npy npy, again;
    struct ds_err e;
    unsigned char *copy;
    unsigned sum = 0;
    size_t item, n_bytes;

    if (ds_npy_parse(data, size, "fuzz", &npy, &e) < 0) {
        if (e.code != DS_EFORMAT)
            abort();
        return 0;
    }
    item = ds_dtype_size(npy.dtype);
    if (item == 0 || npy.major < 1 || npy.major > 3 || npy.data_off > size ||
        npy.n > (size - npy.data_off) / item)
        abort();
    n_bytes = (size_t)npy.n * item;
    for (size_t i = 0; i < n_bytes; i++)
        sum += data[npy.data_off + i];

    copy = malloc(DS_NPY_HEADER_LEN + n_bytes);
    if (copy == NULL)
        return 0;
    ds_npy_header(npy.dtype, npy.n, copy);
    memcpy(copy + DS_NPY_HEADER_LEN, data + npy.data_off, n_bytes);
    if (ds_npy_parse(copy, DS_NPY_HEADER_LEN + n_bytes, "again", &again, &e) <
            0 ||
        again.dtype != npy.dtype || again.n != npy.n ||
        again.data_off != DS_NPY_HEADER_LEN || again.major != 1)
        abort();
    free(copy);
    return (int)(sum & 0);
}
