/* SPDX-License-Identifier: MIT */
/*
 * classifier.cu: softmax cross-entropy (ops.h xent) and its
 * vocab-parallel form (xent_max, xent_partial, xent_finish), fused as
 * llm.c's classifier: one block per row reads the logits, and the loss
 * and the gradient are written (the gradient over the logits themselves
 * when they alias); the probabilities are never stored.
 *
 * Only the first V_valid columns are the vocabulary (the rest pad it to
 * a multiple of 128: their gradient is 0).  Numerics are the CPU's: the
 * row max in float, the sum of exp(x - max) accumulated in double (a
 * block reduction in a fixed order: the same bits every run), the loss
 * formed in double and rounded once, the gradient exp(x - max) * (1 /
 * sum) * scale in float with scale = dscale times fp16's loss scale,
 * applied before the gradient is rounded to the dtype.  A target at or
 * beyond V_valid (bad input the CPU would assert on) gives a NaN loss,
 * which loss_check() reports with the step.
 */
#include "cuda_common.cuh"

#define XENT_THREADS 512

/* One row's max over columns [0, V) (NaN-ignoring), every thread gets it. */
template <typename T>
__device__ float
row_max(const T *x, int V, float *buf)
{
    float m = -INFINITY;

    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float v = to_float(x[j]);

        m = v > m ? v : m;
    }
    return block_max(m, buf);
}

template <typename T>
__device__ double
row_sum_exp(const T *x, int V, float max, double *buf)
{
    double s = 0.0;

    for (int j = threadIdx.x; j < V; j += blockDim.x)
        s += (double)expf(__fsub_rn(to_float(x[j]), max));
    return block_sum(s, buf);
}

/* d[j] = exp(x[j] - max) * inv * dscale for j < V_valid (less dscale at
 * column t, if 0 <= t < V_valid), 0 for V_valid <= j < V.  d may alias x:
 * each element is read and written by one thread. */
template <typename T>
__device__ void
row_grad(T *d, const T *x, int V, int V_valid, float max, float inv,
         float dscale, int t)
{
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        float g = 0.0f;

        if (j < V_valid) {
            g = __fmul_rn(__fmul_rn(expf(__fsub_rn(to_float(x[j]), max)), inv),
                          dscale);
            if (j == t)
                g = __fsub_rn(g, dscale);
        }
        d[j] = from_float<T>(g);
    }
}

/* A row that contributes no loss: losses[row] = value (0 for an ignored
 * target, NaN for a bad one), and a zero gradient (d may be NULL). */
template <typename T>
__device__ void
row_without_loss(float *losses, size_t row, float value, T *d, int V)
{
    if (threadIdx.x == 0)
        losses[row] = value;
    if (d != NULL)
        for (int j = threadIdx.x; j < V; j += blockDim.x)
            d[j] = from_float<T>(0.0f);
}

/* dscale times fp16's loss scale (in device memory; NULL: 1), as the CPU
 * multiplies them: once, in float. */
__device__ __forceinline__ float
grad_scale(float dscale, const float *loss_scale)
{
    return loss_scale != NULL ? dscale * *loss_scale : dscale;
}

template <typename T>
__global__ void
xent_kernel(float *losses, T *dlogits, const T *logits, const int32_t *targets,
            int V, int V_valid, float dscale, const float *loss_scale)
{
    __shared__ float fbuf[32];
    __shared__ double dbuf[32];
    size_t row = blockIdx.x;
    const T *x = logits + row * V;
    T *d = dlogits != NULL ? dlogits + row * V : NULL;
    int t = targets[row];
    float max, xt;
    double sum;

    if (t < 0) {
        row_without_loss(losses, row, 0.0f, d, V);
        return;
    }
    if (t >= V_valid) {
        row_without_loss(losses, row, NAN, d, V);
        return;
    }
    /* Read before any thread overwrites the row (the reductions below
     * synchronise the block first). */
    xt = to_float(x[t]);
    max = row_max(x, V_valid, fbuf);
    sum = row_sum_exp(x, V_valid, max, dbuf);
    if (threadIdx.x == 0)
        losses[row] = (float)((double)max + log(sum) - xt);
    if (d != NULL)
        row_grad(d, x, V, V_valid, max, (float)(1.0 / sum),
                 grad_scale(dscale, loss_scale), t);
}

template <typename T>
__global__ void
xent_max_kernel(float *rowmax, const T *logits, int V, int V_valid)
{
    __shared__ float fbuf[32];
    float m = row_max(logits + (size_t)blockIdx.x * V, V_valid, fbuf);

    if (threadIdx.x == 0)
        rowmax[blockIdx.x] = m;
}

template <typename T>
__global__ void
xent_partial_kernel(double *sums, const T *logits, const float *rowmax,
                    const int32_t *targets, int V, int V_valid, int v0)
{
    __shared__ double dbuf[32];
    size_t row = blockIdx.x;
    const T *x = logits + row * V;
    int t = targets[row];
    double s = 0.0;

    if (t >= 0)
        s = row_sum_exp(x, V_valid, rowmax[row], dbuf);
    if (threadIdx.x == 0) {
        sums[2 * row] = s;
        sums[2 * row + 1] =
            t >= v0 && t < v0 + V_valid ? (double)to_float(x[t - v0]) : 0.0;
    }
}

template <typename T>
__global__ void
xent_finish_kernel(float *losses, T *dlogits, const T *logits,
                   const float *rowmax, const double *sums,
                   const int32_t *targets, int V, int V_valid, int v0,
                   float dscale, const float *loss_scale)
{
    size_t row = blockIdx.x;
    const T *x = logits + row * V;
    T *d = dlogits != NULL ? dlogits + row * V : NULL;
    int t = targets[row];
    float max = rowmax[row];
    double sum = sums[2 * row];

    if (t < 0) {
        row_without_loss(losses, row, 0.0f, d, V);
        return;
    }
    if (threadIdx.x == 0)
        losses[row] =
            (float)((double)max + log(sum) - (float)sums[2 * row + 1]);
    if (d != NULL)
        row_grad(d, x, V, V_valid, max, (float)(1.0 / sum),
                 grad_scale(dscale, loss_scale),
                 t >= v0 && t < v0 + V_valid ? t - v0 : -1);
}

/* ------------------------------------------------------------ ops */

static int
check_xent(int n, int V, int V_valid, int v0, const void *out,
           const void *logits, const void *targets)
{
    if (cuda_check_xent(&cuda_g.st, cuda_g.st.op, n, V, V_valid, v0) != 0)
        return -1;
    if (n > 0 && (out == NULL || logits == NULL || targets == NULL))
        return cuda_bad_arg("a buffer is NULL");
    return 0;
}

void
cuda_xent(float *losses, void *dlogits, const void *logits,
          const int32_t *targets, int n, int V, int V_valid, float dscale,
          const float *loss_scale)
{
    if (cuda_op_begin("xent") != 0 ||
        check_xent(n, V, V_valid, 0, losses, logits, targets) != 0 || n == 0)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   xent_kernel<T>
                   <<<(unsigned)n, XENT_THREADS, 0, cuda_g.stream>>>(
                       losses, (T *)dlogits, (const T *)logits, targets, V,
                       V_valid, dscale, loss_scale));
    LAUNCH_OK();
}

void
cuda_xent_max(float *rowmax, const void *logits, int n, int V, int V_valid)
{
    if (cuda_op_begin("xent_max") != 0 ||
        check_xent(n, V, V_valid, 0, rowmax, logits, logits) != 0 || n == 0)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   xent_max_kernel<T>
                   <<<(unsigned)n, XENT_THREADS, 0, cuda_g.stream>>>(
                       rowmax, (const T *)logits, V, V_valid));
    LAUNCH_OK();
}

void
cuda_xent_partial(double *sums, const void *logits, const float *rowmax,
                  const int32_t *targets, int n, int V, int V_valid, int v0)
{
    if (cuda_op_begin("xent_partial") != 0 ||
        check_xent(n, V, V_valid, v0, sums, logits, targets) != 0 || n == 0)
        return;
    if (rowmax == NULL) {
        cuda_bad_arg("rowmax is NULL");
        return;
    }
    DISPATCH_DTYPE(
        cuda_g.dtype, T,
        xent_partial_kernel<T><<<(unsigned)n, XENT_THREADS, 0, cuda_g.stream>>>(
            sums, (const T *)logits, rowmax, targets, V, V_valid, v0));
    LAUNCH_OK();
}

void
cuda_xent_finish(float *losses, void *dlogits, const void *logits,
                 const float *rowmax, const double *sums,
                 const int32_t *targets, int n, int V, int V_valid, int v0,
                 float dscale, const float *loss_scale)
{
    if (cuda_op_begin("xent_finish") != 0 ||
        check_xent(n, V, V_valid, v0, losses, logits, targets) != 0 || n == 0)
        return;
    if (rowmax == NULL || sums == NULL) {
        cuda_bad_arg("rowmax and sums are needed");
        return;
    }
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   xent_finish_kernel<T>
                   <<<(unsigned)n, XENT_THREADS, 0, cuda_g.stream>>>(
                       losses, (T *)dlogits, (const T *)logits, rowmax, sums,
                       targets, V, V_valid, v0, dscale, loss_scale));
    LAUNCH_OK();
}
