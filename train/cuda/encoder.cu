/* SPDX-License-Identifier: MIT */
/*
 * encoder.cu: rows by index (ops.h): embed_fwd and gather_rows (a row per
 * index, a negative index reading as zeros), embed_bwd and
 * scatter_add_rows (a row's gradient added at its index).
 *
 * The backward ops are deterministic without float atomics, as llm.c's
 * encoder backward: the (index, position) pairs are sorted by index with
 * CUB's radix sort, which is stable, so each index's positions stay in
 * increasing order; then one block per distinct index adds its rows in
 * that order, starting from the gradient already there, in float: the
 * CPU's loop (dx[rows[i]] += dy[i] for i in order) to the bit in fp32.
 */
#include <cub/cub.cuh>
#include <limits.h>

#include "cuda_common.cuh"

/* y[i, j] = table[ids[i], j] (+ y[i, j] when accumulate); 0 for ids < 0. */
template <typename T>
__global__ void
rows_fwd_kernel(T *y, const int32_t *ids, const T *table, int n, int C,
                int accumulate)
{
    size_t total = (size_t)n * C;

    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(e / C), j = (int)(e % C), id = ids[i];
        float v = id < 0 ? 0.0f : to_float(table[(size_t)id * C + j]);

        if (accumulate) {
            if (id >= 0)
                y[e] = from_float<T>(__fadd_rn(to_float(y[e]), v));
        } else {
            y[e] = from_float<T>(v);
        }
    }
}

/* The sort's keys: the index, or INT_MAX for a skipped row (after every
 * real index, never summed). */
__global__ void
rows_keys_kernel(int32_t *keys, int32_t *pos, const int32_t *ids, int n,
                 int32_t skip)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i >= n)
        return;
    keys[i] = ids[i] < 0 || ids[i] == skip ? INT_MAX : ids[i];
    pos[i] = i;
}

/* Block s: if sorted position s starts a run of equal keys, the run's rows
 * dy[pos[s..]] are added to dx[key] in order, the block's threads over the
 * columns.  dx of type D (float for embeddings, the compute dtype for
 * scatter_add_rows), dy of type T. */
template <typename D, typename T>
__global__ void
rows_bwd_kernel(D *dx, const T *dy, const int32_t *keys, const int32_t *pos,
                int n, int C)
{
    int s = blockIdx.x, key = keys[s], end = s + 1;

    if (key == INT_MAX || (s > 0 && keys[s - 1] == key))
        return;
    while (end < n && keys[end] == key)
        end++;
    for (int j = threadIdx.x; j < C; j += blockDim.x) {
        float acc = to_float(dx[(size_t)key * C + j]);

        for (int r = s; r < end; r++)
            acc = __fadd_rn(acc, to_float(dy[(size_t)pos[r] * C + j]));
        dx[(size_t)key * C + j] = from_float<D>(acc);
    }
}

/* The sorted (key, position) pairs of ids in scratch; NULL after a
 * recorded failure. */
static int32_t *
sorted_rows(const int32_t *ids, int n, int32_t skip, int32_t **pos_out)
{
    size_t temp = 0, nb = ((size_t)n * sizeof(int32_t) + 255) / 256 * 256;
    int32_t *keys, *pos, *keys_out, *pos_out_;
    char *buf;

    if (!CUDA_OK(cub::DeviceRadixSort::SortPairs(
            (void *)NULL, temp, (const int32_t *)NULL, (int32_t *)NULL,
            (const int32_t *)NULL, (int32_t *)NULL, n, 0, 32, cuda_g.stream)))
        return NULL;
    buf = (char *)cuda_scratch(4 * nb + temp, "the sort of row indices");
    if (buf == NULL)
        return NULL;
    keys = (int32_t *)buf;
    pos = (int32_t *)(buf + nb);
    keys_out = (int32_t *)(buf + 2 * nb);
    pos_out_ = (int32_t *)(buf + 3 * nb);
    rows_keys_kernel<<<(n + THREADS - 1) / THREADS, THREADS, 0,
                       cuda_g.stream>>>(keys, pos, ids, n, skip);
    if (!LAUNCH_OK() || !CUDA_OK(cub::DeviceRadixSort::SortPairs(
                            buf + 4 * nb, temp, keys, keys_out, pos, pos_out_,
                            n, 0, 32, cuda_g.stream)))
        return NULL;
    *pos_out = pos_out_;
    return keys_out;
}

/* ------------------------------------------------------------ ops */

static int
check_rows_args(int n, int C, const void *a, const void *b, const void *ids)
{
    if (cuda_check_rows(&cuda_g.st, cuda_g.st.op, n, C) != 0)
        return -1;
    if (n > 0 && (a == NULL || b == NULL || ids == NULL))
        return cuda_bad_arg("a buffer is NULL");
    return 0;
}

static void
rows_fwd(void *y, const int32_t *ids, const void *table, int n, int C,
         int accumulate)
{
    size_t total = (size_t)n * (size_t)C;

    DISPATCH_DTYPE(cuda_g.dtype, T,
                   rows_fwd_kernel<T>
                   <<<grid_for(total, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)y, ids, (const T *)table, n, C, accumulate));
    LAUNCH_OK();
}

void
cuda_embed_fwd(void *y, const int32_t *ids, const void *table, int n, int C,
               int accumulate)
{
    if (cuda_op_begin("embed_fwd") != 0 ||
        check_rows_args(n, C, y, table, ids) != 0 || n == 0)
        return;
    rows_fwd(y, ids, table, n, C, accumulate);
}

void
cuda_gather_rows(void *y, const void *x, const int32_t *rows, int n, int C)
{
    if (cuda_op_begin("gather_rows") != 0 ||
        check_rows_args(n, C, y, x, rows) != 0 || n == 0)
        return;
    rows_fwd(y, rows, x, n, C, 0);
}

/* Threads per block of the backward: up to a row of 1024 columns in one
 * pass. */
static unsigned
bwd_threads(int C)
{
    return C >= 1024 ? 1024u : (unsigned)((C + 31) / 32 * 32);
}

void
cuda_embed_bwd(float *dtable, const void *dy, const int32_t *ids, int n, int C,
               int32_t skip_id)
{
    int32_t *keys, *pos = NULL;

    if (cuda_op_begin("embed_bwd") != 0 ||
        check_rows_args(n, C, dtable, dy, ids) != 0 || n == 0)
        return;
    if ((keys = sorted_rows(ids, n, skip_id, &pos)) == NULL)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   rows_bwd_kernel<float, T>
                   <<<(unsigned)n, bwd_threads(C), 0, cuda_g.stream>>>(
                       dtable, (const T *)dy, keys, pos, n, C));
    LAUNCH_OK();
}

void
cuda_scatter_add_rows(void *dx, const void *dy, const int32_t *rows, int n,
                      int C)
{
    int32_t *keys, *pos = NULL;

    if (cuda_op_begin("scatter_add_rows") != 0 ||
        check_rows_args(n, C, dx, dy, rows) != 0 || n == 0)
        return;
    if ((keys = sorted_rows(rows, n, -1, &pos)) == NULL)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   rows_bwd_kernel<T, T>
                   <<<(unsigned)n, bwd_threads(C), 0, cuda_g.stream>>>(
                       (T *)dx, (const T *)dy, keys, pos, n, C));
    LAUNCH_OK();
}
