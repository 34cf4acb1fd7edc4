/* SPDX-License-Identifier: MIT */
/*
 * layernorm.cu: LayerNorm forward (with the residual add fused in, as
 * residual_layernorm_fwd) and backward (ops.h).
 *
 * One warp per row.  The statistics are the CPU's: the mean and the
 * biased variance in two passes, each accumulated in double, rounded to
 * float once (so eps = 1e-12, ERNIE's, still sees an exact variance), and
 * y = ((x - mean) * rstd) * w + b in explicitly rounded float operations.
 * Backward's dx is llm.c's formula, also in the CPU's order.  dw and db
 * are column sums over the rows: each block sums a fixed chunk of rows per
 * column in double into scratch, and a second kernel adds the chunks in
 * order (no atomics: the same bits every run, whatever the GPU).
 */
#include "cuda_common.cuh"

#define ROWS_PER_BLOCK 8 /* warps per block, a row each */
#define DWDB_ROWS      128

/* The statistics of a row held by a warp (each lane reads columns lane,
 * lane + 32, ...): returns the mean and rstd, the same in every lane. */
template <typename T>
__device__ __forceinline__ void
row_stats(const T *xr, int C, float eps, float *mean, float *rstd)
{
    int lane = threadIdx.x % 32;
    double sum = 0.0, var = 0.0;
    float m;

    for (int j = lane; j < C; j += 32)
        sum += (double)to_float(xr[j]);
    sum = warp_sum(sum);
    m = (float)(sum / C);
    for (int j = lane; j < C; j += 32) {
        double d = (double)to_float(xr[j]) - (double)m;

        var += d * d;
    }
    var = warp_sum(var);
    *mean = m;
    *rstd = (float)(1.0 / sqrt(var / C + (double)eps));
}

template <typename T>
__device__ __forceinline__ void
row_normalize(T *yr, const T *xr, const T *w, const T *b, int C, float m,
              float s)
{
    for (int j = threadIdx.x % 32; j < C; j += 32)
        yr[j] = from_float<T>(
            __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(to_float(xr[j]), m), s),
                                to_float(w[j])),
                      to_float(b[j])));
}

/* The row's statistics for backward (either may be NULL), by lane 0. */
__device__ __forceinline__ void
store_stats(float *mean, float *rstd, int row, float m, float s)
{
    if (threadIdx.x % 32 == 0) {
        if (mean != NULL)
            mean[row] = m;
        if (rstd != NULL)
            rstd[row] = s;
    }
}

template <typename T>
__global__ void
layernorm_fwd_kernel(T *y, float *mean, float *rstd, const T *x, const T *w,
                     const T *b, int n, int C, float eps)
{
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    const T *xr = x + (size_t)row * C;
    float m, s;

    if (row >= n)
        return;
    row_stats(xr, C, eps, &m, &s);
    row_normalize(y + (size_t)row * C, xr, w, b, C, m, s);
    store_stats(mean, rstd, row, m, s);
}

/* r = a + bb (rounded to T), then y = layernorm(r).  Each lane reads back
 * only the columns it wrote, so r may alias a. */
template <typename T>
__global__ void
residual_layernorm_fwd_kernel(T *r, T *y, float *mean, float *rstd, const T *a,
                              const T *bb, const T *w, const T *b, int n, int C,
                              float eps)
{
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    size_t off = (size_t)row * C;
    float m, s;

    if (row >= n)
        return;
    for (int j = threadIdx.x % 32; j < C; j += 32)
        r[off + j] = from_float<T>(
            __fadd_rn(to_float(a[off + j]), to_float(bb[off + j])));
    row_stats(r + off, C, eps, &m, &s);
    row_normalize(y + off, r + off, w, b, C, m, s);
    store_stats(mean, rstd, row, m, s);
}

/* dx += rstd * ((dnorm - mean(dnorm)) - norm * mean(dnorm * norm)), with
 * dnorm = dy * w and norm = (x - mean) * rstd. */
template <typename T>
__global__ void
layernorm_dx_kernel(T *dx, const T *dy, const T *x, const T *w,
                    const float *mean, const float *rstd, int n, int C)
{
    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    size_t off = (size_t)row * C;
    double sum_d = 0.0, sum_dn = 0.0;
    float m, s, md, mdn;

    if (row >= n)
        return;
    m = mean[row];
    s = rstd[row];
    for (int j = lane; j < C; j += 32) {
        float norm = __fmul_rn(__fsub_rn(to_float(x[off + j]), m), s);
        float dnorm = __fmul_rn(to_float(dy[off + j]), to_float(w[j]));

        sum_d += dnorm;
        sum_dn += (double)dnorm * norm;
    }
    md = (float)(warp_sum(sum_d) / C);
    mdn = (float)(warp_sum(sum_dn) / C);
    for (int j = lane; j < C; j += 32) {
        float norm = __fmul_rn(__fsub_rn(to_float(x[off + j]), m), s);
        float dnorm = __fmul_rn(to_float(dy[off + j]), to_float(w[j]));
        float g =
            __fmul_rn(s, __fsub_rn(__fsub_rn(dnorm, md), __fmul_rn(norm, mdn)));

        dx[off + j] = from_float<T>(__fadd_rn(to_float(dx[off + j]), g));
    }
}

/* Partial column sums of dy * norm and dy over chunk blockIdx.y of
 * DWDB_ROWS rows, in double: part_w and part_b [chunks, C]. */
template <typename T>
__global__ void
layernorm_dwdb_partial(double *part_w, double *part_b, const T *dy, const T *x,
                       const float *mean, const float *rstd, int n, int C)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int r0 = blockIdx.y * DWDB_ROWS, r1 = min(n, r0 + DWDB_ROWS);
    double acc_w = 0.0, acc_b = 0.0;

    if (j >= C)
        return;
    for (int i = r0; i < r1; i++) {
        float d = to_float(dy[(size_t)i * C + j]);
        float norm = __fmul_rn(
            __fsub_rn(to_float(x[(size_t)i * C + j]), mean[i]), rstd[i]);

        acc_w += (double)d * norm;
        acc_b += d;
    }
    part_w[(size_t)blockIdx.y * C + j] = acc_w;
    part_b[(size_t)blockIdx.y * C + j] = acc_b;
}

__global__ void
layernorm_dwdb_finish(float *dw, float *db, const double *part_w,
                      const double *part_b, int C, int n_chunks)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    double w = 0.0, b = 0.0;

    if (j >= C)
        return;
    for (int c = 0; c < n_chunks; c++) {
        w += part_w[(size_t)c * C + j];
        b += part_b[(size_t)c * C + j];
    }
    if (dw != NULL)
        dw[j] += (float)w;
    if (db != NULL)
        db[j] += (float)b;
}

/* ------------------------------------------------------------ ops */

static unsigned
row_blocks(int n)
{
    return (unsigned)((n + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
}

void
cuda_layernorm_fwd(void *y, float *mean, float *rstd, const void *x,
                   const void *w, const void *b, int n, int C, float eps)
{
    if (cuda_op_begin("layernorm_fwd") != 0 ||
        cuda_check_rows(&cuda_g.st, "layernorm_fwd", n, C) != 0 || n == 0)
        return;
    if (y == NULL || x == NULL || w == NULL || b == NULL) {
        cuda_bad_arg("y, x, w and b are needed");
        return;
    }
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   layernorm_fwd_kernel<T>
                   <<<row_blocks(n), 32 * ROWS_PER_BLOCK, 0, cuda_g.stream>>>(
                       (T *)y, mean, rstd, (const T *)x, (const T *)w,
                       (const T *)b, n, C, eps));
    LAUNCH_OK();
}

void
cuda_residual_layernorm_fwd(void *r, void *y, float *mean, float *rstd,
                            const void *a, const void *bb, const void *w,
                            const void *b, int n, int C, float eps)
{
    if (cuda_op_begin("residual_layernorm_fwd") != 0 ||
        cuda_check_rows(&cuda_g.st, "residual_layernorm_fwd", n, C) != 0 ||
        n == 0)
        return;
    if (r == NULL || y == NULL || a == NULL || bb == NULL || w == NULL ||
        b == NULL) {
        cuda_bad_arg("r, y, a, bb, w and b are needed");
        return;
    }
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   residual_layernorm_fwd_kernel<T>
                   <<<row_blocks(n), 32 * ROWS_PER_BLOCK, 0, cuda_g.stream>>>(
                       (T *)r, (T *)y, mean, rstd, (const T *)a, (const T *)bb,
                       (const T *)w, (const T *)b, n, C, eps));
    LAUNCH_OK();
}

void
cuda_layernorm_bwd(void *dx, float *dw, float *db, const void *dy,
                   const void *x, const void *w, const float *mean,
                   const float *rstd, int n, int C)
{
    if (cuda_op_begin("layernorm_bwd") != 0 ||
        cuda_check_rows(&cuda_g.st, "layernorm_bwd", n, C) != 0 || n == 0)
        return;
    if (dy == NULL || x == NULL || mean == NULL || rstd == NULL ||
        (dx != NULL && w == NULL)) {
        cuda_bad_arg("dy, x, mean, rstd (and w for dx) are needed");
        return;
    }
    if (dx != NULL) {
        DISPATCH_DTYPE(
            cuda_g.dtype, T,
            layernorm_dx_kernel<T>
            <<<row_blocks(n), 32 * ROWS_PER_BLOCK, 0, cuda_g.stream>>>(
                (T *)dx, (const T *)dy, (const T *)x, (const T *)w, mean, rstd,
                n, C));
        if (!LAUNCH_OK())
            return;
    }
    if (dw != NULL || db != NULL) {
        int n_chunks = (n + DWDB_ROWS - 1) / DWDB_ROWS;
        size_t part = (size_t)n_chunks * (size_t)C;
        double *part_w = (double *)cuda_scratch(2 * part * sizeof(double),
                                                "layernorm_bwd's partial sums");
        dim3 grid((unsigned)((C + THREADS - 1) / THREADS), (unsigned)n_chunks);

        if (part_w == NULL)
            return;
        if (n_chunks > 65535) {
            cuda_bad_arg("%d rows (at most %d)", n, 65535 * DWDB_ROWS);
            return;
        }
        DISPATCH_DTYPE(cuda_g.dtype, T,
                       layernorm_dwdb_partial<T>
                       <<<grid, THREADS, 0, cuda_g.stream>>>(
                           part_w, part_w + part, (const T *)dy, (const T *)x,
                           mean, rstd, n, C));
        if (!LAUNCH_OK())
            return;
        layernorm_dwdb_finish<<<grid.x, THREADS, 0, cuda_g.stream>>>(
            dw, db, part_w, part_w + part, C, n_chunks);
        LAUNCH_OK();
    }
}
