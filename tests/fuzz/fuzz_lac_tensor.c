/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lac_tensor.c: the reader of Paddle's parameter files (LoDTensor:
 * versions, LoD levels, a TensorDesc protobuf, float data), which
 * mklac runs on LAC's package, on arbitrary bytes: whatever it accepts
 * lies inside the input.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tok_lac_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t dims[4];
    size_t rank, n;
    const unsigned char *p;
    struct tok_err e;

    if (tok_lac_tensor_parse(data, size, "fuzz", dims, &rank, &p, &n, &e) ==
        0) {
        uint64_t count = 1;

        for (size_t k = 0; k < rank; k++)
            count *= dims[k];
        if (rank == 0 || rank > 4 || count != n || p < data ||
            (size_t)(p - data) + 4 * n != size)
            abort();
    }
    return 0;
}
