/* SPDX-License-Identifier: MIT */
/*
 * fuzz_safetensors.c: the safetensors reader on arbitrary bytes.  What it
 * accepts must describe tensors that cover the data after the header
 * exactly, each found again by name; written back with st_write and read
 * again, they must come back the same, byte for byte.  A refusal must
 * come with a message naming the input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "ckpt/safetensors.h"

static int
same(const struct st_tensor *a, const struct st_tensor *b)
{
    if (strcmp(a->name, b->name) != 0 || a->dtype != b->dtype ||
        a->ndim != b->ndim || a->nbytes != b->nbytes)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_file *f = NULL, *g = NULL;
    struct st_tensor *t;
    struct st_err e;
    uint64_t hlen = 0, total = 0;
    char path[FUZZ_PATH_MAX];
    size_t n;

    e.msg[0] = '\0';
    if (st_open_buffer(&f, data, size, "fuzz", &e) < 0) {
        if (f != NULL || strncmp(e.msg, "'fuzz': ", 8) != 0)
            abort();
        return 0;
    }
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | data[i];
    n = st_count(f);
    for (size_t i = 0; i < n; i++) {
        const struct st_tensor *a = st_at(f, i);

        if (a == NULL || st_find(f, a->name) != a || a->ndim < 0 ||
            a->ndim > ST_MAX_DIMS || st_dtype_name(a->dtype) == NULL)
            abort();
        total += a->nbytes;
    }
    if (st_at(f, n) != NULL || total != size - 8 - hlen)
        abort();

    /* Round trip (metadata aside: the API does not list its keys). */
    t = (struct st_tensor *)malloc((n ? n : 1) * sizeof(*t));
    if (t == NULL)
        abort();
    for (size_t i = 0; i < n; i++)
        t[i] = *st_at(f, i);
    fuzz_tmp_path(path, sizeof(path), "round-trip.safetensors");
    if (st_write(path, t, n, NULL, &e) < 0 || st_open(&g, path, &e) < 0 ||
        st_count(g) != n)
        abort();
    for (size_t i = 0; i < n; i++)
        if (!same(st_at(f, i), st_at(g, i)))
            abort();
    unlink(path);
    st_close(g);
    st_close(f);
    free(t);
    return 0;
}
