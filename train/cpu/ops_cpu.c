/* SPDX-License-Identifier: MIT */
/*
 * ops_cpu.c: the CPU backend of the compute interface (ops.h), the
 * reference every faster backend is tested against: its fp32 kernels,
 * memory and status, and the float32 table (ops_cpu_emulated.c builds the
 * bfloat16 and float16 ones on these kernels).  GEMMs go to OpenBLAS (its
 * OpenMP build, so it shares our thread pool), everything else is plain
 * loops under `omp parallel for schedule(static)`.  Backend memory is
 * host memory: ops run at once, uploads are copies, and the only failure
 * is running out of memory (recorded, sticky, as ops.h says).
 *
 * Determinism: no reduction is split across threads.  A sum over rows
 * (bias and LayerNorm parameter gradients, embedding and scatter
 * gradients) is parallelized over blocks of columns instead, each block
 * walking the rows in order; sumsq adds fixed-size chunks in index order.
 * So results do not depend on the thread count, except through OpenBLAS's
 * own partitioning of large GEMMs.
 */
#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_int.h"

/* Columns per task of the column-parallel reductions: one 64-byte line. */
#define COL_BLOCK 16

/* The hot loops are built for AVX-512, AVX2 and plain x86-64, the best
 * chosen at load time. */
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

/* linear_fwd with at most this many rows of x reads the weight once
 * itself (generation's steps) instead of calling SGEMM. */
#define LINEAR_SKINNY_M 8

/* Side of the square tile of dropped attention probabilities staged on
 * the stack (64 KiB, well inside an OpenMP worker's stack). */
#define ATT_TILE 128

/* sumsq adds chunks of this many elements, in double (in SUMSQ_LANES
 * interleaved partial sums, so the loop vectorizes), then the chunk sums
 * in index order; SUMSQ_ROUND chunks are summed in parallel at a time. */
#define SUMSQ_CHUNK 4096
#define SUMSQ_ROUND 256
#define SUMSQ_LANES 16

static int
imin(int a, int b)
{
    return a < b ? a : b;
}

/* ------------------------------------------------------------ status */

static char cpu_error_msg[512];
static int cpu_error_set;

void
cpu_fail(const char *fmt, ...)
{
    va_list ap;
    int n;

    if (cpu_error_set)
        return; /* the first failure is the one to report */
    n = snprintf(cpu_error_msg, sizeof(cpu_error_msg), "cpu: ");
    va_start(ap, fmt);
    vsnprintf(cpu_error_msg + n, sizeof(cpu_error_msg) - (size_t)n, fmt, ap);
    va_end(ap);
    cpu_error_set = 1;
}

int
cpu_failed(void)
{
    return cpu_error_set;
}

static int
cpu_sync(void)
{
    return cpu_error_set ? -1 : 0;
}

static const char *
cpu_error(void)
{
    return cpu_error_msg;
}

/* A field of /proc/meminfo ("MemAvailable:") in bytes, or 0. */
static size_t
proc_kb(const char *path, const char *field)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t len = strlen(field), kb = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, len) == 0) {
            kb = strtoull(line + len, NULL, 10);
            break;
        }
    fclose(f);
    return kb * 1024;
}

/* ------------------------------------------------------------ memory */

#define GIB (1024.0 * 1024.0 * 1024.0)

static void *
aligned_zeroed(size_t bytes, size_t align)
{
    size_t len = (bytes + align - 1) / align * align;
    void *p;

    if (len < bytes) /* (overflow) */
        return NULL;
    p = aligned_alloc(align, len ? len : align);
    if (p != NULL)
        memset(p, 0, len);
    return p;
}

/* Each alloc() buffer starts after a header of ALLOC_HEADER bytes (the
 * alignment kept) holding its size, so release() can count it back: the
 * bytes held (as asked) and their most at once, mem_info()'s peak, as the
 * CUDA backend counts its cudaMalloc()s (the trainer's memory report
 * sets them beside its own sums). */
#define ALLOC_HEADER 256
static _Atomic size_t held_bytes, peak_bytes;

static void
cpu_mem_info(size_t *free_bytes, size_t *total_bytes, size_t *peak)
{
    if (free_bytes)
        *free_bytes = proc_kb("/proc/meminfo", "MemAvailable:");
    if (total_bytes)
        *total_bytes = proc_kb("/proc/meminfo", "MemTotal:");
    if (peak)
        *peak = atomic_load(&peak_bytes);
}

static void *
cpu_alloc(size_t bytes, const char *what)
{
    char *base;
    size_t avail, total, now, peak;

    if (cpu_error_set)
        return NULL;
    base = bytes <= SIZE_MAX - ALLOC_HEADER
               ? aligned_zeroed(ALLOC_HEADER + bytes, ALLOC_HEADER)
               : NULL;
    if (base == NULL) {
        cpu_mem_info(&avail, &total, NULL);
        cpu_fail("out of memory: alloc of %.2f GiB (%s) with %.2f GiB free "
                 "of %.2f GiB",
                 bytes / GIB, what ? what : "?", avail / GIB, total / GIB);
        return NULL;
    }
    memcpy(base, &bytes, sizeof(bytes));
    now = atomic_fetch_add(&held_bytes, bytes) + bytes;
    peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now))
        ;
    return base + ALLOC_HEADER;
}

static void
cpu_release(void *p)
{
    char *base;
    size_t bytes;

    if (p == NULL)
        return;
    base = (char *)p - ALLOC_HEADER;
    memcpy(&bytes, base, sizeof(bytes));
    atomic_fetch_sub(&held_bytes, bytes);
    free(base);
}

void *
cpu_scratch(size_t bytes, const char *op)
{
    void *p = aligned_zeroed(bytes, 64);

    if (p == NULL)
        cpu_fail("out of memory: %.2f GiB of scratch in %s", bytes / GIB, op);
    return p;
}

void
cpu_scratch_free(void *p)
{
    free(p);
}

/* Host memory is as good as pinned here: plain malloc. */
static void *
cpu_host_alloc(size_t bytes)
{
    return aligned_zeroed(bytes, 64);
}

static void
cpu_host_release(void *p)
{
    free(p);
}

static int
cpu_download(void *host_dst, const void *src, size_t bytes)
{
    if (cpu_error_set)
        return -1;
    memcpy(host_dst, src, bytes);
    return 0;
}

static void
cpu_copy(void *dst, const void *src, size_t bytes)
{
    if (!cpu_error_set && bytes > 0)
        memcpy(dst, src, bytes);
}

/* Uploads are copies; the ops run in order, so there is nothing to wait
 * for. */
static void
cpu_upload_wait(void)
{
}

static void
cpu_zero(void *p, size_t bytes)
{
    if (!cpu_error_set && bytes > 0)
        memset(p, 0, bytes);
}

static void *
cpu_queue(void)
{
    return NULL;
}

static void
cpu_cast_op(void *dst, enum ops_dtype dst_type, const void *src,
            enum ops_dtype src_type, size_t n)
{
    if (!cpu_error_set)
        cpu_cast(dst, dst_type, src, src_type, n);
}

/* ------------------------------------------------------------ linear */

/* 16 floats as one value (GCC's vector extension: AVX-512's register, two
 * of AVX2's, four of SSE's in each clone), loaded from any address. */
typedef float f32x16 __attribute__((vector_size(64), aligned(4), may_alias));
#define LOAD16(p) (*(const f32x16 *)(p))

/* y[N] = x[K] . w[N,K]^T (+ b): a dot product per row of w, in two
 * interleaved vector sums (so that the adds do not wait on each other),
 * then the 16 lanes in order, then the tail. */
CLONES static void
linear_fwd_gemv(float *y, const float *x, const float *w, const float *b, int K,
                int N)
{
    int K0 = K / 32 * 32;

#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *wr = w + (size_t)n * K;
        f32x16 a0 = { 0 }, a1 = { 0 };
        float s = 0.0f;

        for (int k = 0; k < K0; k += 32) {
            a0 += LOAD16(x + k) * LOAD16(wr + k);
            a1 += LOAD16(x + k + 16) * LOAD16(wr + k + 16);
        }
        a0 += a1;
        for (int j = 0; j < 16; j++)
            s += a0[j];
        for (int k = K0; k < K; k++)
            s += x[k] * wr[k];
        y[n] = b != NULL ? b[n] + s : s;
    }
}

/* y[M,N] = x[M,K] . w[N,K]^T (+ b) for a few rows of x (generation's
 * decoding steps): w is read once, four of its rows at a time against
 * every row of x (held in L1), each output one dot product in a fixed
 * order.  OpenBLAS's SGEMM packs the whole of w for such a call and reads
 * it twice: these run at the memory's speed, 3-4x faster at M = 1. */
CLONES static void
linear_fwd_skinny(float *y, const float *x, const float *w, const float *b,
                  int M, int K, int N)
{
    int n_quads = (N + 3) / 4;

    if (M == 1) {
        linear_fwd_gemv(y, x, w, b, K, N);
        return;
    }
#pragma omp parallel for schedule(static)
    for (int q = 0; q < n_quads; q++) {
        int n = 4 * q, rows = N - n < 4 ? N - n : 4;
        const float *w0 = w + (size_t)n * K;
        const float *w1 = rows > 1 ? w0 + K : w0;
        const float *w2 = rows > 2 ? w0 + 2 * (size_t)K : w0;
        const float *w3 = rows > 3 ? w0 + 3 * (size_t)K : w0;

        for (int m = 0; m < M; m++) {
            const float *xr = x + (size_t)m * K;
            float s[4], s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            float *yr = y + (size_t)m * N + n;

#pragma omp simd reduction(+ : s0, s1, s2, s3)
            for (int k = 0; k < K; k++) {
                s0 += xr[k] * w0[k];
                s1 += xr[k] * w1[k];
                s2 += xr[k] * w2[k];
                s3 += xr[k] * w3[k];
            }
            s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
            for (int r = 0; r < rows; r++)
                yr[r] = b != NULL ? b[n + r] + s[r] : s[r];
        }
    }
}

void
cpu_f32_linear_fwd(float *y, const float *x, const float *w, const float *b,
                   int M, int K, int N)
{
    if (M == 0 || N == 0)
        return;
    assert(K > 0);
    if (M <= LINEAR_SKINNY_M) {
        linear_fwd_skinny(y, x, w, b, M, K, N);
        return;
    }
    /* With a bias, y starts as b in every row and the GEMM adds to it. */
    if (b != NULL) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i++)
            memcpy(y + (size_t)i * N, b, (size_t)N * sizeof(float));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w,
                K, b != NULL ? 1.0f : 0.0f, y, N);
}

/* db[N] += column sums of dy[M,N], each column summed in row order in
 * double. */
static void
col_sums_add(float *db, const float *dy, int M, int N)
{
    int n_blocks = (N + COL_BLOCK - 1) / COL_BLOCK;

#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < n_blocks; blk++) {
        int j0 = blk * COL_BLOCK, nj = imin(COL_BLOCK, N - j0);
        double acc[COL_BLOCK] = { 0 };

        if (nj == COL_BLOCK) {
            /* A constant width keeps acc in vector registers. */
            for (int i = 0; i < M; i++) {
                const float *row = dy + (size_t)i * N + j0;

                for (int j = 0; j < COL_BLOCK; j++)
                    acc[j] += row[j];
            }
        } else {
            for (int i = 0; i < M; i++) {
                const float *row = dy + (size_t)i * N + j0;

                for (int j = 0; j < nj; j++)
                    acc[j] += row[j];
            }
        }
        for (int j = 0; j < nj; j++)
            db[j0 + j] += (float)acc[j];
    }
}

void
cpu_f32_linear_bwd(float *dx, float *dw, float *db, const float *dy,
                   const float *x, const float *w, int M, int K, int N)
{
    if (M == 0 || N == 0 || K == 0)
        return;
    if (dx != NULL)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.0f,
                    dy, N, w, K, 1.0f, dx, K);
    if (dw != NULL)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.0f, dy,
                    N, x, K, 1.0f, dw, K);
    if (db != NULL)
        col_sums_add(db, dy, M, N);
}

/* ------------------------------------------------------------ rows */

void
cpu_f32_embed_fwd(float *y, const int32_t *ids, const float *table, int n,
                  int C, int accumulate)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *src = table + (size_t)(ids[i] < 0 ? 0 : ids[i]) * C;
        float *dst = y + (size_t)i * C;

        if (ids[i] < 0) { /* another rank's shard of the vocab */
            if (!accumulate)
                memset(dst, 0, (size_t)C * sizeof(float));
        } else if (accumulate) {
            for (int j = 0; j < C; j++)
                dst[j] += src[j];
        } else {
            memcpy(dst, src, (size_t)C * sizeof(float));
        }
    }
}

/* dx[rows[i],:] += dy[i,:] for i in order, skipping rows[i] == skip and
 * negative rows (another rank's shard of the vocab).
 * Rows repeat, so threads own blocks of columns, never rows. */
static void
rows_add(float *dx, const float *dy, const int32_t *rows, int n, int C,
         int32_t skip)
{
    int n_blocks = (C + COL_BLOCK - 1) / COL_BLOCK;

#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < n_blocks; blk++) {
        int j0 = blk * COL_BLOCK, nj = imin(COL_BLOCK, C - j0);

        for (int i = 0; i < n; i++) {
            const float *src = dy + (size_t)i * C + j0;
            float *dst;

            if (rows[i] == skip || rows[i] < 0)
                continue;
            dst = dx + (size_t)rows[i] * C + j0;
            for (int j = 0; j < nj; j++)
                dst[j] += src[j];
        }
    }
}

void
cpu_f32_embed_bwd(float *dtable, const float *dy, const int32_t *ids, int n,
                  int C, int32_t skip_id)
{
    rows_add(dtable, dy, ids, n, C, skip_id);
}

void
cpu_f32_scatter_add_rows(float *dx, const float *dy, const int32_t *rows, int n,
                         int C)
{
    rows_add(dx, dy, rows, n, C, -1);
}

/* ------------------------------------------------------------ layernorm */

/* Mean and variance in two passes over the row, each accumulated in
 * double, so eps = 1e-12 (ERNIE) still sees an exact variance. */
void
cpu_f32_layernorm_fwd(float *y, float *mean, float *rstd, const float *x,
                      const float *w, const float *b, int n, int C, float eps)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *xr = x + (size_t)i * C;
        float *yr = y + (size_t)i * C;
        double sum = 0.0, var = 0.0;
        float m, s;

        for (int j = 0; j < C; j++)
            sum += xr[j];
        m = (float)(sum / C);
        for (int j = 0; j < C; j++) {
            double d = (double)xr[j] - m;

            var += d * d;
        }
        s = (float)(1.0 / sqrt(var / C + eps));
        for (int j = 0; j < C; j++)
            yr[j] = (xr[j] - m) * s * w[j] + b[j];
        if (mean != NULL)
            mean[i] = m;
        if (rstd != NULL)
            rstd[i] = s;
    }
}

/* dx += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), with
 * dnorm = dy * w and norm = (x - mean) * rstd (llm.c's formula). */
static void
layernorm_dx(float *dx, const float *dy, const float *x, const float *w,
             const float *mean, const float *rstd, int n, int C)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *dyr = dy + (size_t)i * C, *xr = x + (size_t)i * C;
        float *dxr = dx + (size_t)i * C;
        double sum_d = 0.0, sum_dn = 0.0;
        float md, mdn;

        for (int j = 0; j < C; j++) {
            float norm = (xr[j] - mean[i]) * rstd[i];
            float dnorm = dyr[j] * w[j];

            sum_d += dnorm;
            sum_dn += (double)dnorm * norm;
        }
        md = (float)(sum_d / C);
        mdn = (float)(sum_dn / C);
        for (int j = 0; j < C; j++) {
            float norm = (xr[j] - mean[i]) * rstd[i];
            float dnorm = dyr[j] * w[j];

            dxr[j] += rstd[i] * (dnorm - md - norm * mdn);
        }
    }
}

/* dw += sum over rows of dy * norm, db += sum of dy: column blocks, rows
 * in order, accumulated in double. */
static void
layernorm_dwdb(float *dw, float *db, const float *dy, const float *x,
               const float *mean, const float *rstd, int n, int C)
{
    int n_blocks = (C + COL_BLOCK - 1) / COL_BLOCK;

#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < n_blocks; blk++) {
        int j0 = blk * COL_BLOCK, nj = imin(COL_BLOCK, C - j0);
        double acc_w[COL_BLOCK] = { 0 }, acc_b[COL_BLOCK] = { 0 };

        for (int i = 0; i < n; i++) {
            const float *dyr = dy + (size_t)i * C + j0;
            const float *xr = x + (size_t)i * C + j0;

            for (int j = 0; j < nj; j++) {
                float norm = (xr[j] - mean[i]) * rstd[i];

                acc_w[j] += (double)dyr[j] * norm;
                acc_b[j] += dyr[j];
            }
        }
        for (int j = 0; j < nj; j++) {
            if (dw != NULL)
                dw[j0 + j] += (float)acc_w[j];
            if (db != NULL)
                db[j0 + j] += (float)acc_b[j];
        }
    }
}

void
cpu_f32_layernorm_bwd(float *dx, float *dw, float *db, const float *dy,
                      const float *x, const float *w, const float *mean,
                      const float *rstd, int n, int C)
{
    if (dx != NULL)
        layernorm_dx(dx, dy, x, w, mean, rstd, n, C);
    if (dw != NULL || db != NULL)
        layernorm_dwdb(dw, db, dy, x, mean, rstd, n, C);
}

/* ------------------------------------------------------------ activations */

#define INV_SQRT2      0.70710678118654752f
#define INV_SQRT_2PI   0.39894228040143268f
#define SQRT_2_OVER_PI 0.79788456080286536f
#define GELU_CUBE      0.044715f

/* glibc's vector math (libmvec, which -lm pulls in as needed): in the
 * `omp simd` loops of the target_clones functions below, GCC calls the 4-,
 * 8- or 16-wide variant of these for the clone's instruction set.  With
 * the scalar calls the loss over a 40k vocabulary cost twice the logits'
 * GEMM, and GELU as much as the MLP's GEMMs (BENCHMARKS.md, "train"). */
#pragma omp declare simd notinbranch
extern float expf(float);
#pragma omp declare simd notinbranch
extern float erff(float);
#pragma omp declare simd notinbranch
extern float tanhf(float);

/* Elements per task of the elementwise loops. */
#define SPAN 4096

static float
act_f(float x, enum ops_act act)
{
    switch (act) {
    case OPS_ACT_GELU:
        return 0.5f * x * (1.0f + erff(x * INV_SQRT2));
    case OPS_ACT_GELU_TANH:
        return 0.5f * x *
               (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_CUBE * x * x * x)));
    case OPS_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case OPS_ACT_TANH:
        return tanhf(x);
    }
    assert(!"unknown activation");
    return 0.0f;
}

/* f'(x); relu's is 0 at x <= 0, as torch's. */
static float
act_df(float x, enum ops_act act)
{
    float t;

    switch (act) {
    case OPS_ACT_GELU:
        return 0.5f * (1.0f + erff(x * INV_SQRT2)) +
               x * INV_SQRT_2PI * expf(-0.5f * x * x);
    case OPS_ACT_GELU_TANH:
        t = tanhf(SQRT_2_OVER_PI * (x + GELU_CUBE * x * x * x));
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * SQRT_2_OVER_PI *
                                       (1.0f + 3.0f * GELU_CUBE * x * x);
    case OPS_ACT_RELU:
        return x > 0.0f ? 1.0f : 0.0f;
    case OPS_ACT_TANH:
        t = tanhf(x);
        return 1.0f - t * t;
    }
    assert(!"unknown activation");
    return 0.0f;
}

/* y = f(x) over one span; a loop per activation, so each vectorizes. */
CLONES static void
act_fwd_span(float *y, const float *x, size_t n, enum ops_act act)
{
    switch (act) {
    case OPS_ACT_GELU:
#pragma omp simd
        for (size_t i = 0; i < n; i++)
            y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * INV_SQRT2));
        return;
    case OPS_ACT_GELU_TANH:
#pragma omp simd
        for (size_t i = 0; i < n; i++)
            y[i] = 0.5f * x[i] *
                   (1.0f + tanhf(SQRT_2_OVER_PI *
                                 (x[i] + GELU_CUBE * x[i] * x[i] * x[i])));
        return;
    default:
        for (size_t i = 0; i < n; i++)
            y[i] = act_f(x[i], act);
    }
}

/* dx += dy * f'(x) over one span. */
CLONES static void
act_bwd_span(float *dx, const float *dy, const float *x, size_t n,
             enum ops_act act)
{
    switch (act) {
    case OPS_ACT_GELU:
#pragma omp simd
        for (size_t i = 0; i < n; i++)
            dx[i] += dy[i] * (0.5f * (1.0f + erff(x[i] * INV_SQRT2)) +
                              x[i] * INV_SQRT_2PI * expf(-0.5f * x[i] * x[i]));
        return;
    case OPS_ACT_GELU_TANH:
#pragma omp simd
        for (size_t i = 0; i < n; i++) {
            float t =
                tanhf(SQRT_2_OVER_PI * (x[i] + GELU_CUBE * x[i] * x[i] * x[i]));

            dx[i] += dy[i] * (0.5f * (1.0f + t) +
                              0.5f * x[i] * (1.0f - t * t) * SQRT_2_OVER_PI *
                                  (1.0f + 3.0f * GELU_CUBE * x[i] * x[i]));
        }
        return;
    default:
        for (size_t i = 0; i < n; i++)
            dx[i] += dy[i] * act_df(x[i], act);
    }
}

void
cpu_f32_act_fwd(float *y, const float *x, size_t n, enum ops_act act)
{
    long spans = (long)((n + SPAN - 1) / SPAN);

#pragma omp parallel for schedule(static)
    for (long k = 0; k < spans; k++) {
        size_t lo = (size_t)k * SPAN, len = n - lo < SPAN ? n - lo : SPAN;

        act_fwd_span(y + lo, x + lo, len, act);
    }
}

void
cpu_f32_act_bwd(float *dx, const float *dy, const float *x, size_t n,
                enum ops_act act)
{
    long spans = (long)((n + SPAN - 1) / SPAN);

#pragma omp parallel for schedule(static)
    for (long k = 0; k < spans; k++) {
        size_t lo = (size_t)k * SPAN, len = n - lo < SPAN ? n - lo : SPAN;

        act_bwd_span(dx + lo, dy + lo, x + lo, len, act);
    }
}

/* ------------------------------------------------------------ elementwise */

void
cpu_f32_add(float *y, const float *a, const float *b, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

void
cpu_f32_accumulate(float *y, const float *x, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

void
cpu_f32_scale(float *x, size_t n, float s)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

/* keep / (1 - p) for element i: 0 or the scale. */
static float
dropout_factor(uint64_t seed, uint64_t i, float p, float scale)
{
    return ops_dropout_uniform(seed, i) >= p ? scale : 0.0f;
}

void
cpu_f32_dropout_fwd(float *y, const float *x, size_t n, float p, uint64_t seed)
{
    float scale;

    assert(p >= 0.0f && p < 1.0f);
    if (p == 0.0f) {
        if (y != x)
            memcpy(y, x, n * sizeof(float));
        return;
    }
    scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] * dropout_factor(seed, i, p, scale);
}

void
cpu_f32_dropout_bwd(float *dx, const float *dy, size_t n, float p,
                    uint64_t seed)
{
    float scale;

    assert(p >= 0.0f && p < 1.0f);
    if (p == 0.0f) {
        cpu_f32_accumulate(dx, dy, n);
        return;
    }
    scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        dx[i] += dy[i] * dropout_factor(seed, i, p, scale);
}

/* ------------------------------------------------------------ attention */

/* One (b, h) pair: its views of q, k, v (D columns, row stride 3C), and
 * where its att block and its dropout draws start. */
struct head {
    const float *q, *k, *v;
    size_t off;  /* ((b * NH + h) * T) * T: the att block */
    size_t drop; /* ((b * NH_all + h0 + h) * T) * T: its dropout index */
    int b, h, D;
};

static struct head
head_at(const float *qkv, int bh, int T, int C, int NH, int h0, int NH_all)
{
    struct head hd;

    hd.D = C / NH;
    hd.b = bh / NH;
    hd.h = bh % NH;
    hd.q = qkv + (size_t)hd.b * T * 3 * C + (size_t)hd.h * hd.D;
    hd.k = hd.q + C;
    hd.v = hd.q + 2 * C;
    hd.off = (size_t)bh * T * T;
    hd.drop = ((size_t)hd.b * (size_t)NH_all + (size_t)(h0 + hd.h)) * T * T;
    return hd;
}

/* Softmax of one row of scores in place over its first n_keys entries
 * (the rest, causally masked, become exactly 0), after adding bias. */
CLONES static void
softmax_row(float *row, const float *bias, int n_keys, int T)
{
    float max = -INFINITY, sum = 0.0f, inv;

    if (bias != NULL) {
#pragma omp simd
        for (int j = 0; j < n_keys; j++)
            row[j] += bias[j];
    }
#pragma omp simd reduction(max : max)
    for (int j = 0; j < n_keys; j++)
        max = row[j] > max ? row[j] : max;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < n_keys; j++) {
        row[j] = expf(row[j] - max);
        sum += row[j];
    }
    inv = 1.0f / sum;
#pragma omp simd
    for (int j = 0; j < n_keys; j++)
        row[j] *= inv;
    for (int j = n_keys; j < T; j++)
        row[j] = 0.0f;
}

/* For ops_cpu_kv.c: a cloned function is called through its resolver
 * only from its own file (clang binds other files' calls to no clone). */
void
cpu_softmax_row(float *row, const float *bias, int n_keys, int T)
{
    softmax_row(row, bias, n_keys, T);
}

/* out_h = dropped(att_h) . v_h.  The dropped probabilities go through a
 * stack buffer, one ATT_TILE x ATT_TILE tile of (queries, keys) at a time,
 * so the forward pass needs no allocation and att keeps the undropped
 * softmax.  Causally, tiles wholly after the diagonal are all 0: skipped. */
static void
attention_pv_dropped(float *out_h, const float *att_h, const struct head *hd,
                     int T, int C, int causal, float p, uint64_t seed)
{
    float buf[ATT_TILE * ATT_TILE];
    float scale = 1.0f / (1.0f - p);

    for (int i0 = 0; i0 < T; i0 += ATT_TILE) {
        int ni = imin(ATT_TILE, T - i0);
        int n_keys = causal ? i0 + ni : T;

        for (int j0 = 0; j0 < n_keys; j0 += ATT_TILE) {
            int nj = imin(ATT_TILE, n_keys - j0);

            for (int i = 0; i < ni; i++) {
                size_t at = (size_t)(i0 + i) * T + j0;

                for (int j = 0; j < nj; j++)
                    buf[i * nj + j] =
                        att_h[at + j] *
                        dropout_factor(seed, hd->drop + at + j, p, scale);
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, hd->D,
                        nj, 1.0f, buf, nj, hd->v + (size_t)j0 * 3 * C, 3 * C,
                        j0 > 0 ? 1.0f : 0.0f, out_h + (size_t)i0 * C, C);
        }
    }
}

void
cpu_f32_attention_fwd(float *out, float *att, const float *qkv,
                      const float *key_bias, int B, int T, int C, int NH,
                      int h0, int NH_all, int causal, float p, uint64_t seed)
{
    int D = C / NH;
    float alpha = 1.0f / sqrtf((float)D);

    assert(C % NH == 0 && p >= 0.0f && p < 1.0f && h0 + NH <= NH_all);
    /* Single-threaded SGEMMs inside: OpenBLAS's OpenMP build runs one
     * thread when called from a parallel region. */
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        struct head hd = head_at(qkv, bh, T, C, NH, h0, NH_all);
        float *att_h = att + hd.off;
        float *out_h = out + (size_t)hd.b * T * C + (size_t)hd.h * D;
        const float *bias =
            key_bias != NULL ? key_bias + (size_t)hd.b * T : NULL;

        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, alpha,
                    hd.q, 3 * C, hd.k, 3 * C, 0.0f, att_h, T);
        for (int i = 0; i < T; i++)
            softmax_row(att_h + (size_t)i * T, bias, causal ? i + 1 : T, T);
        if (p > 0.0f)
            attention_pv_dropped(out_h, att_h, &hd, T, C, causal, p, seed);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T,
                        1.0f, att_h, T, hd.v, 3 * C, 0.0f, out_h, C);
    }
}

/* s[T,T] = att_h with the dropout mask and scale applied. */
static void
att_dropped(float *s, const float *att_h, size_t off, int T, float p,
            uint64_t seed)
{
    float scale = 1.0f / (1.0f - p);

    for (size_t e = 0; e < (size_t)T * T; e++)
        s[e] = att_h[e] * dropout_factor(seed, off + e, p, scale);
}

/* dscores = att * (dprobs - rowsum(dprobs * att)) in place over dprobs;
 * the causally masked entries have att == 0 and come out 0. */
static void
softmax_bwd_rows(float *s, const float *att_h, int T)
{
    for (int i = 0; i < T; i++) {
        float *sr = s + (size_t)i * T;
        const float *ar = att_h + (size_t)i * T;
        float dot = 0.0f;

        for (int j = 0; j < T; j++)
            dot += sr[j] * ar[j];
        for (int j = 0; j < T; j++)
            sr[j] = ar[j] * (sr[j] - dot);
    }
}

void
cpu_f32_attention_bwd(float *dqkv, float *scratch, const float *dout,
                      const float *qkv, const float *att, int B, int T, int C,
                      int NH, int h0, int NH_all, float p, uint64_t seed)
{
    int D = C / NH;
    float alpha = 1.0f / sqrtf((float)D);

    /* (Causal or not: att is 0 on masked keys, all backward needs.) */
    assert(C % NH == 0 && p >= 0.0f && p < 1.0f && h0 + NH <= NH_all);
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        struct head hd = head_at(qkv, bh, T, C, NH, h0, NH_all);
        const float *att_h = att + hd.off, *probs = att_h;
        const float *dout_h = dout + (size_t)hd.b * T * C + (size_t)hd.h * D;
        float *s = scratch + hd.off;
        float *dq = dqkv + (hd.q - qkv), *dk = dq + C, *dv = dq + 2 * C;

        /* dv += dropped(att)^T . dout, the dropped probs staged in s. */
        if (p > 0.0f) {
            att_dropped(s, att_h, hd.drop, T, p, seed);
            probs = s;
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, 1.0f,
                    probs, T, dout_h, C, 1.0f, dv, 3 * C);

        /* dprobs = dout . v^T, through the same mask, then the softmax. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, 1.0f,
                    dout_h, C, hd.v, 3 * C, 0.0f, s, T);
        if (p > 0.0f) {
            float scale = 1.0f / (1.0f - p);

            for (size_t e = 0; e < (size_t)T * T; e++)
                s[e] *= dropout_factor(seed, hd.drop + e, p, scale);
        }
        softmax_bwd_rows(s, att_h, T);

        /* scores = alpha * q . k^T, so dq += alpha * dscores . k and
         * dk += alpha * dscores^T . q. */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, alpha,
                    s, T, hd.k, 3 * C, 1.0f, dq, 3 * C);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, alpha, s,
                    T, hd.q, 3 * C, 1.0f, dk, 3 * C);
    }
}

/* ------------------------------------------------------------ loss */

/* One row of cpu_xent: its loss, and its gradient into d (may alias x).
 * The sum of exp(x - max) is accumulated in double (in the vector
 * width's partial sums); logsumexp and the loss are formed in double and
 * rounded once. */
CLONES static float
xent_row(float *d, const float *x, int t, int V, float dscale)
{
    float max = -INFINITY, inv, xt = x[t], loss;
    double sum = 0.0;

#pragma omp simd reduction(max : max)
    for (int j = 0; j < V; j++)
        max = x[j] > max ? x[j] : max;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++)
        sum += expf(x[j] - max);
    loss = (float)((double)max + log(sum) - xt);
    if (d == NULL)
        return loss;
    inv = (float)(1.0 / sum);
#pragma omp simd
    for (int j = 0; j < V; j++)
        d[j] = expf(x[j] - max) * inv * dscale;
    d[t] -= dscale;
    return loss;
}

void
cpu_f32_xent(float *losses, float *dlogits, const float *logits,
             const int32_t *targets, int n, int V, int V_valid, float dscale)
{
    assert(V_valid >= 0 && V_valid <= V);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *x = logits + (size_t)i * V;
        float *d = dlogits != NULL ? dlogits + (size_t)i * V : NULL;
        int t = targets[i];

        if (t < 0) {
            losses[i] = 0.0f;
            if (d != NULL)
                memset(d, 0, (size_t)V * sizeof(float));
            continue;
        }
        assert(t < V_valid);
        losses[i] = xent_row(d, x, t, V_valid, dscale);
        if (d != NULL && V > V_valid) /* the vocabulary's pad columns */
            memset(d + V_valid, 0, (size_t)(V - V_valid) * sizeof(float));
    }
}

/* Vocab-parallel cross-entropy: the same sums as xent_row, split over
 * the shards of the vocab (see ops.h). */
void
cpu_f32_xent_max(float *rowmax, const float *logits, int n, int V, int V_valid)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *x = logits + (size_t)i * V;
        float max = -INFINITY;

        for (int j = 0; j < V_valid; j++)
            max = x[j] > max ? x[j] : max;
        rowmax[i] = max;
    }
}

/* Whether target t falls in this shard's valid columns. */
static int
shard_holds(int t, int V_valid, int v0)
{
    return t >= v0 && t < v0 + V_valid;
}

CLONES static double
sum_exp(const float *x, int V_valid, float max)
{
    double sum = 0.0;

#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V_valid; j++)
        sum += expf(x[j] - max);
    return sum;
}

void
cpu_f32_xent_partial(double *sums, const float *logits, const float *rowmax,
                     const int32_t *targets, int n, int V, int V_valid, int v0)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *x = logits + (size_t)i * V;
        int t = targets[i];

        sums[2 * i] = t < 0 ? 0.0 : sum_exp(x, V_valid, rowmax[i]);
        sums[2 * i + 1] = shard_holds(t, V_valid, v0) ? x[t - v0] : 0.0;
    }
}

void
cpu_f32_xent_finish(float *losses, float *dlogits, const float *logits,
                    const float *rowmax, const double *sums,
                    const int32_t *targets, int n, int V, int V_valid, int v0,
                    float dscale)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const float *x = logits + (size_t)i * V;
        float *d = dlogits != NULL ? dlogits + (size_t)i * V : NULL;
        int t = targets[i];
        float max = rowmax[i], inv;

        if (t < 0) {
            losses[i] = 0.0f;
            if (d != NULL)
                memset(d, 0, (size_t)V * sizeof(float));
            continue;
        }
        losses[i] =
            (float)((double)max + log(sums[2 * i]) - (float)sums[2 * i + 1]);
        if (d == NULL)
            continue;
        inv = (float)(1.0 / sums[2 * i]);
        for (int j = 0; j < V_valid; j++)
            d[j] = expf(x[j] - max) * inv * dscale;
        for (int j = V_valid; j < V; j++)
            d[j] = 0.0f;
        if (shard_holds(t, V_valid, v0))
            d[t - v0] -= dscale;
    }
}

/* ------------------------------------------------------------ optimizer */

static double
cpu_sumsq(const float *x, size_t n)
{
    size_t n_chunks = (n + SUMSQ_CHUNK - 1) / SUMSQ_CHUNK;
    double total = 0.0;

    for (size_t c0 = 0; c0 < n_chunks; c0 += SUMSQ_ROUND) {
        int nc =
            (int)(n_chunks - c0 < SUMSQ_ROUND ? n_chunks - c0 : SUMSQ_ROUND);
        double part[SUMSQ_ROUND];

#pragma omp parallel for schedule(static)
        for (int c = 0; c < nc; c++) {
            size_t lo = (c0 + c) * SUMSQ_CHUNK;
            size_t hi = lo + SUMSQ_CHUNK < n ? lo + SUMSQ_CHUNK : n;
            /* SUMSQ_LANES partial sums, element i into lane i % LANES,
             * added in lane order: vectorizes, same bits on any thread
             * count. */
            double lane[SUMSQ_LANES] = { 0 }, s = 0.0;
            size_t i = lo;

            for (; i + SUMSQ_LANES <= hi; i += SUMSQ_LANES)
                for (int k = 0; k < SUMSQ_LANES; k++)
                    lane[k] += (double)x[i + k] * x[i + k];
            for (int k = 0; i < hi; i++, k++)
                lane[k] += (double)x[i] * x[i];
            for (int k = 0; k < SUMSQ_LANES; k++)
                s += lane[k];
            part[c] = s;
        }
        for (int c = 0; c < nc; c++)
            total += part[c];
    }
    return total;
}

/* acc[0] += scale * the sum of x in index order, in double (a
 * micro-batch's losses: as many as its rows, a pass of no consequence). */
static void
cpu_sum_acc(double *acc, const float *x, size_t n, double scale)
{
    double s = 0;

    if (cpu_error_set)
        return;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    acc[0] += scale * s;
}

static void
cpu_sumsq_acc(double *acc, const float *x, size_t n)
{
    if (!cpu_error_set)
        acc[0] += cpu_sumsq(x, n);
}

static void
cpu_loss_check(struct ops_step *st, const double *loss, int64_t step)
{
    if (!cpu_error_set && !isfinite(*loss) && st->bad_step == -1)
        st->bad_step = step;
}

static void
cpu_step_prepare(struct ops_step *st, const struct ops_step_opts *o)
{
    double scale = st->loss_scale, ss = st->sumsq;

    if (cpu_error_set)
        return;
    if (!isfinite(ss)) {
        st->skip = 1;
        st->grad_scale = 0.0f;
        st->n_skipped++;
    } else {
        /* Paddle's ClipGradByGlobalNorm: clip / max(norm, clip). */
        double norm = sqrt(ss) / scale;
        double clip =
            o->max_norm > 0 ? o->max_norm / fmax(norm, o->max_norm) : 1.0;

        st->skip = 0;
        st->grad_scale = (float)(clip / scale);
    }
    st->sumsq = ss / (scale * scale);
    if (!o->dynamic)
        return;
    /* Paddle's update of the loss scaling (AmpScaler._update). */
    if (st->skip) {
        st->good_steps = 0;
        if (++st->bad_steps >= o->decr_every) {
            double s = scale * o->decr_ratio;

            st->loss_scale = (float)(s < o->min_scale ? o->min_scale : s);
            st->bad_steps = 0;
        }
    } else {
        st->bad_steps = 0;
        if (++st->good_steps >= o->incr_every) {
            float s = (float)(scale * o->incr_ratio);

            if (isfinite(s))
                st->loss_scale = s;
            st->good_steps = 0;
        }
    }
}

/* As torch.optim.AdamW (non-fused, foreach or not): the bias corrections,
 * step size and decay factor in double (Python floats), rounded to float
 * once; the per-element update in float. */
void
cpu_f32_adamw(float *p, const float *grad, float *m, float *v, size_t n,
              float lr, float b1, float b2, float eps, float wd,
              const struct ops_step *st)
{
    int t = st->t + 1;
    double bc1 = 1.0 - pow(b1, t);
    float step = (float)(lr / bc1);
    float bc2_sqrt = (float)sqrt(1.0 - pow(b2, t));
    float decay = (float)(1.0 - (double)lr * wd);
    float c1 = (float)(1.0 - b1), c2 = (float)(1.0 - b2);
    float grad_scale = st->grad_scale;

    if (st->skip)
        return;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] * grad_scale;
        float mi = b1 * m[i] + c1 * g;
        float vi = b2 * v[i] + c2 * g * g;

        m[i] = mi;
        v[i] = vi;
        p[i] *= decay;
        p[i] -= step * (mi / (sqrtf(vi) / bc2_sqrt + eps));
    }
}

static void
cpu_adamw(float *p, void *pc, const float *grad, float *m, float *v, size_t n,
          float lr, float b1, float b2, float eps, float wd,
          const struct ops_step *st)
{
    if (cpu_error_set || st->skip)
        return;
    cpu_f32_adamw(p, grad, m, v, n, lr, b1, b2, eps, wd, st);
    if (pc != NULL && pc != p)
        memcpy(pc, p, n * sizeof(float));
}

static void
cpu_step_finish(struct ops_step *st)
{
    if (!cpu_error_set && !st->skip)
        st->t++;
}

/* ------------------------------------------------------------ the table */

/* The float32 table's entries: the kernels above on backend memory, once
 * the backend has not failed. */
#define LIVE()            \
    do {                  \
        if (cpu_failed()) \
            return;       \
    } while (0)

static void
f32_linear_fwd(void *y, const void *x, const void *w, const void *b, int M,
               int K, int N)
{
    LIVE();
    cpu_f32_linear_fwd(y, x, w, b, M, K, N);
}

static void
f32_linear_act_fwd(void *y, void *pre, const void *x, const void *w,
                   const void *b, int M, int K, int N, enum ops_act act)
{
    LIVE();
    cpu_f32_linear_fwd(pre, x, w, b, M, K, N);
    cpu_f32_act_fwd(y, pre, (size_t)M * (size_t)N, act);
}

static void
f32_linear_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
               const void *w, int M, int K, int N)
{
    LIVE();
    cpu_f32_linear_bwd(dx, dw, db, dy, x, w, M, K, N);
}

static void
f32_embed_fwd(void *y, const int32_t *ids, const void *table, int n, int C,
              int accumulate)
{
    LIVE();
    cpu_f32_embed_fwd(y, ids, table, n, C, accumulate);
}

static void
f32_embed_bwd(float *dtable, const void *dy, const int32_t *ids, int n, int C,
              int32_t skip_id)
{
    LIVE();
    cpu_f32_embed_bwd(dtable, dy, ids, n, C, skip_id);
}

static void
f32_layernorm_fwd(void *y, float *mean, float *rstd, const void *x,
                  const void *w, const void *b, int n, int C, float eps)
{
    LIVE();
    cpu_f32_layernorm_fwd(y, mean, rstd, x, w, b, n, C, eps);
}

static void
f32_residual_layernorm_fwd(void *r, void *y, float *mean, float *rstd,
                           const void *a, const void *bb, const void *w,
                           const void *b, int n, int C, float eps)
{
    LIVE();
    cpu_f32_add(r, a, bb, (size_t)n * (size_t)C);
    cpu_f32_layernorm_fwd(y, mean, rstd, r, w, b, n, C, eps);
}

static void
f32_layernorm_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
                  const void *w, const float *mean, const float *rstd, int n,
                  int C)
{
    LIVE();
    cpu_f32_layernorm_bwd(dx, dw, db, dy, x, w, mean, rstd, n, C);
}

static void
f32_act_fwd(void *y, const void *x, size_t n, enum ops_act act)
{
    LIVE();
    cpu_f32_act_fwd(y, x, n, act);
}

static void
f32_act_bwd(void *dx, const void *dy, const void *x, size_t n, enum ops_act act)
{
    LIVE();
    cpu_f32_act_bwd(dx, dy, x, n, act);
}

static void
f32_add(void *y, const void *a, const void *b, size_t n)
{
    LIVE();
    cpu_f32_add(y, a, b, n);
}

static void
f32_accumulate(void *y, const void *x, size_t n)
{
    LIVE();
    cpu_f32_accumulate(y, x, n);
}

static void
f32_scale(void *x, size_t n, float s)
{
    LIVE();
    cpu_f32_scale(x, n, s);
}

static void
f32_accumulate_f32(float *y, const float *x, size_t n)
{
    LIVE();
    cpu_f32_accumulate(y, x, n);
}

static void
f32_scale_f32(float *x, size_t n, float s)
{
    LIVE();
    cpu_f32_scale(x, n, s);
}

static void
f32_dropout_fwd(void *y, const void *x, size_t n, float p, uint64_t seed)
{
    LIVE();
    cpu_f32_dropout_fwd(y, x, n, p, seed);
}

static void
f32_dropout_bwd(void *dx, const void *dy, size_t n, float p, uint64_t seed)
{
    LIVE();
    cpu_f32_dropout_bwd(dx, dy, n, p, seed);
}

/* The CPU keeps the attention probabilities [B, NH, T, T] in fp32 (every
 * dtype), and backward stages as many floats in scratch. */
static size_t
cpu_attention_state_bytes(int B, int T, int NH)
{
    return (size_t)B * (size_t)NH * (size_t)T * (size_t)T * sizeof(float);
}

static size_t
cpu_attention_scratch_bytes(int B, int T, int NH, int C)
{
    (void)C;
    return cpu_attention_state_bytes(B, T, NH);
}

static void
f32_attention_fwd(void *out, void *state, const void *qkv,
                  const float *key_bias, int B, int T, int C, int NH, int h0,
                  int NH_all, int causal, float p, uint64_t seed)
{
    LIVE();
    cpu_f32_attention_fwd(out, state, qkv, key_bias, B, T, C, NH, h0, NH_all,
                          causal, p, seed);
}

static void
f32_attention_kv_fwd(void *out, void *kc, void *vc, const void *qkv,
                     const int32_t *pos, int B, int n, int C, int NH, int S,
                     int T_max)
{
    LIVE();
    cpu_f32_attention_kv_fwd(out, kc, vc, qkv, pos, B, n, C, NH, S, T_max);
}

static void
f32_attention_bwd(void *dqkv, void *scratch, const void *dout, const void *out,
                  const void *qkv, const void *state, const float *key_bias,
                  int B, int T, int C, int NH, int h0, int NH_all, int causal,
                  float p, uint64_t seed)
{
    (void)out, (void)key_bias, (void)causal; /* all in the probabilities */
    LIVE();
    cpu_f32_attention_bwd(dqkv, scratch, dout, qkv, state, B, T, C, NH, h0,
                          NH_all, p, seed);
}

float
cpu_xent_scale(float dscale, const float *loss_scale)
{
    return loss_scale != NULL ? dscale * *loss_scale : dscale;
}

static void
f32_xent(float *losses, void *dlogits, const void *logits,
         const int32_t *targets, int n, int V, int V_valid, float dscale,
         const float *loss_scale)
{
    LIVE();
    cpu_f32_xent(losses, dlogits, logits, targets, n, V, V_valid,
                 cpu_xent_scale(dscale, loss_scale));
}

static void
f32_xent_max(float *rowmax, const void *logits, int n, int V, int V_valid)
{
    LIVE();
    cpu_f32_xent_max(rowmax, logits, n, V, V_valid);
}

static void
f32_xent_partial(double *sums, const void *logits, const float *rowmax,
                 const int32_t *targets, int n, int V, int V_valid, int v0)
{
    LIVE();
    cpu_f32_xent_partial(sums, logits, rowmax, targets, n, V, V_valid, v0);
}

static void
f32_xent_finish(float *losses, void *dlogits, const void *logits,
                const float *rowmax, const double *sums, const int32_t *targets,
                int n, int V, int V_valid, int v0, float dscale,
                const float *loss_scale)
{
    LIVE();
    cpu_f32_xent_finish(losses, dlogits, logits, rowmax, sums, targets, n, V,
                        V_valid, v0, cpu_xent_scale(dscale, loss_scale));
}

/* Rows are copied as they are, whatever the dtype: the same function
 * serves every table. */
void
cpu_rows_copy(void *y, const void *x, const int32_t *rows, int n,
              size_t row_bytes)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++)
        memcpy((char *)y + (size_t)i * row_bytes,
               (const char *)x + (size_t)rows[i] * row_bytes, row_bytes);
}

static void
f32_gather_rows(void *y, const void *x, const int32_t *rows, int n, int C)
{
    LIVE();
    cpu_rows_copy(y, x, rows, n, (size_t)C * sizeof(float));
}

static void
f32_scatter_add_rows(void *dx, const void *dy, const int32_t *rows, int n,
                     int C)
{
    LIVE();
    cpu_f32_scatter_add_rows(dx, dy, rows, n, C);
}

static void
cpu_device_info(struct ops_device_info *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "cpu");
}

/* The CPU takes no fallbacks. */
static const char *
cpu_notice(void)
{
    return NULL;
}

/* Host memory, no streams: nothing to tear down. */
static void
cpu_close(void)
{
}

const struct ops cpu_ops_f32 = {
    .name = "cpu",
    .dtype = OPS_F32,
    .device = -1,
    .sync = cpu_sync,
    .error = cpu_error,
    .notice = cpu_notice,
    .mem_info = cpu_mem_info,
    .device_info = cpu_device_info,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .host_alloc = cpu_host_alloc,
    .host_release = cpu_host_release,
    .download = cpu_download,
    .upload = cpu_copy,
    .upload_async = cpu_copy,
    .upload_wait = cpu_upload_wait,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .cast = cpu_cast_op,
    .queue = cpu_queue,
    .linear_fwd = f32_linear_fwd,
    .linear_act_fwd = f32_linear_act_fwd,
    .linear_bwd = f32_linear_bwd,
    .embed_fwd = f32_embed_fwd,
    .embed_bwd = f32_embed_bwd,
    .layernorm_fwd = f32_layernorm_fwd,
    .residual_layernorm_fwd = f32_residual_layernorm_fwd,
    .layernorm_bwd = f32_layernorm_bwd,
    .act_fwd = f32_act_fwd,
    .act_bwd = f32_act_bwd,
    .add = f32_add,
    .accumulate = f32_accumulate,
    .scale = f32_scale,
    .accumulate_f32 = f32_accumulate_f32,
    .scale_f32 = f32_scale_f32,
    .dropout_fwd = f32_dropout_fwd,
    .dropout_bwd = f32_dropout_bwd,
    .attention_state_bytes = cpu_attention_state_bytes,
    .attention_scratch_bytes = cpu_attention_scratch_bytes,
    .attention_fwd = f32_attention_fwd,
    .attention_bwd = f32_attention_bwd,
    .attention_kv_fwd = f32_attention_kv_fwd,
    .xent = f32_xent,
    .xent_max = f32_xent_max,
    .xent_partial = f32_xent_partial,
    .xent_finish = f32_xent_finish,
    .gather_rows = f32_gather_rows,
    .scatter_add_rows = f32_scatter_add_rows,
    .sum_acc = cpu_sum_acc,
    .sumsq_acc = cpu_sumsq_acc,
    .loss_check = cpu_loss_check,
    .step_prepare = cpu_step_prepare,
    .adamw = cpu_adamw,
    .step_finish = cpu_step_finish,
    .close = cpu_close,
};

const struct ops *
ops_cpu(int threads, enum ops_dtype dtype)
{
    if (threads > 0) {
        omp_set_num_threads(threads);
        openblas_set_num_threads(threads);
    }
    return dtype == OPS_F32 ? &cpu_ops_f32 : cpu_ops_emulated(dtype);
}
