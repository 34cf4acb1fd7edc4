/* SPDX-License-Identifier: MIT */
/*
 * reduce.cu: the reductions whose results stay on the device (ops.h):
 * sum_acc (a micro-batch's losses), sumsq_acc (the gradient norm's sum of
 * squares, a range of the flat buffer at a time), loss_check (the NaN
 * check, naming the step), step_prepare (clipping and fp16's loss scale,
 * cuda_step_prepare_math() in cuda_host.h, unit-tested on the CPU) and
 * step_finish.
 *
 * Sums are deterministic: each block sums a fixed chunk of SUM_CHUNK
 * elements (thread t takes elements t, t + 256, ..., then a fixed tree),
 * in double, and one block then adds the chunks' sums in order.  The
 * partition depends only on n, so the bits are the same on every run and
 * every GPU.
 */
#include "cuda_common.cuh"

#define SUM_CHUNK 8192

/* part[blockIdx.x] = the sum over the block's chunk of x (squared when
 * squares). */
template <bool squares>
__global__ void
sum_partial(double *part, const float *x, size_t n)
{
    __shared__ double buf[32];
    size_t lo = (size_t)blockIdx.x * SUM_CHUNK;
    size_t hi = lo + SUM_CHUNK < n ? lo + SUM_CHUNK : n;
    double s = 0.0;

    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        double v = x[i];

        s += squares ? v * v : v;
    }
    s = block_sum(s, buf);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

/* acc[0] += scale * (the chunks' sums, added in order by thread; then the
 * threads' sums in a fixed tree). */
__global__ void
sum_finish(double *acc, const double *part, size_t n_chunks, double scale)
{
    __shared__ double buf[32];
    double s = 0.0;

    for (size_t c = threadIdx.x; c < n_chunks; c += blockDim.x)
        s += part[c];
    s = block_sum(s, buf);
    if (threadIdx.x == 0)
        acc[0] += scale * s;
}

static void
sum_into(double *acc, const float *x, size_t n, double scale, bool squares)
{
    size_t n_chunks = (n + SUM_CHUNK - 1) / SUM_CHUNK;
    double *part;

    if (acc == NULL || (n > 0 && x == NULL)) {
        cuda_bad_arg("acc and x are needed");
        return;
    }
    if (n == 0)
        return;
    if (n_chunks > 0x7fffffffu) {
        cuda_bad_arg("%zu elements are too many", n);
        return;
    }
    part = (double *)cuda_scratch(n_chunks * sizeof(double), "partial sums");
    if (part == NULL)
        return;
    if (squares)
        sum_partial<true>
            <<<(unsigned)n_chunks, THREADS, 0, cuda_g.stream>>>(part, x, n);
    else
        sum_partial<false>
            <<<(unsigned)n_chunks, THREADS, 0, cuda_g.stream>>>(part, x, n);
    if (!LAUNCH_OK())
        return;
    sum_finish<<<1, 1024, 0, cuda_g.stream>>>(acc, part, n_chunks, scale);
    LAUNCH_OK();
}

void
cuda_sum_acc(double *acc, const float *x, size_t n, double scale)
{
    if (cuda_op_begin("sum_acc") != 0)
        return;
    sum_into(acc, x, n, scale, false);
}

void
cuda_sumsq_acc(double *acc, const float *x, size_t n)
{
    if (cuda_op_begin("sumsq_acc") != 0)
        return;
    sum_into(acc, x, n, 1.0, true);
}

/* ------------------------------------------------------------ the step */

__global__ void
loss_check_kernel(struct ops_step *st, const double *loss, int64_t step)
{
    double l = *loss;

    if (!((l - l) == 0.0) && st->bad_step == -1)
        st->bad_step = step;
}

__global__ void
step_prepare_kernel(struct ops_step *st, struct ops_step_opts o)
{
    cuda_step_prepare_math(st, &o);
}

__global__ void
step_finish_kernel(struct ops_step *st)
{
    if (!st->skip)
        st->t += 1;
}

void
cuda_loss_check(struct ops_step *st, const double *loss, int64_t step)
{
    if (cuda_op_begin("loss_check") != 0)
        return;
    if (st == NULL || loss == NULL) {
        cuda_bad_arg("st and loss are needed");
        return;
    }
    loss_check_kernel<<<1, 1, 0, cuda_g.stream>>>(st, loss, step);
    LAUNCH_OK();
}

void
cuda_step_prepare(struct ops_step *st, const struct ops_step_opts *o)
{
    if (cuda_op_begin("step_prepare") != 0)
        return;
    if (st == NULL || o == NULL) {
        cuda_bad_arg("st and o are needed");
        return;
    }
    /* o is host memory: passed by value. */
    step_prepare_kernel<<<1, 1, 0, cuda_g.stream>>>(st, *o);
    LAUNCH_OK();
}

void
cuda_step_finish(struct ops_step *st)
{
    if (cuda_op_begin("step_finish") != 0)
        return;
    if (st == NULL) {
        cuda_bad_arg("st is NULL");
        return;
    }
    step_finish_kernel<<<1, 1, 0, cuda_g.stream>>>(st);
    LAUNCH_OK();
}
