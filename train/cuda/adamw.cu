/* SPDX-License-Identifier: MIT */
/*
 * adamw.cu: the fused AdamW step over a flat range (ops.h adamw): fp32
 * master weights, gradients and moments, and the compute copy of the
 * updated weights (bf16/f16, rounded to nearest even) written in the same
 * pass.  The step's scalars stay on the device: grad_scale (clipping, the
 * loss scale), skip and t come from struct ops_step, read by every block.
 *
 * The arithmetic is the CPU's to the bit in fp32: the scalars in double,
 * rounded to float once (cuda_adamw_consts(), shared with the host), and
 * per element torch's update in explicitly rounded float operations,
 * never fused into an FMA.
 */
#include "cuda_common.cuh"

template <typename T>
__global__ void
adamw_kernel(float *p, T *pc, const float *grad, float *m, float *v, size_t n,
             float lr, float b1, float b2, float eps, float wd,
             const struct ops_step *st)
{
    __shared__ struct cuda_adamw_consts k;
    __shared__ float grad_scale;
    __shared__ int skip;

    if (threadIdx.x == 0) {
        skip = st->skip;
        grad_scale = st->grad_scale;
        if (!skip)
            k = cuda_adamw_consts(lr, b1, b2, wd, st->t + 1);
    }
    __syncthreads();
    if (skip)
        return;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = __fmul_rn(grad[i], grad_scale);
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(k.c1, g));
        float vi =
            __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(k.c2, g), g));
        float pi = __fmul_rn(p[i], k.decay);

        pi = __fsub_rn(
            pi,
            __fmul_rn(k.step, __fdiv_rn(mi, __fadd_rn(__fdiv_rn(__fsqrt_rn(vi),
                                                                k.bc2_sqrt),
                                                      eps))));
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        if (pc != NULL)
            pc[i] = from_float<T>(pi);
    }
}

void
cuda_adamw(float *p, void *pc, const float *grad, float *m, float *v, size_t n,
           float lr, float b1, float b2, float eps, float wd,
           const struct ops_step *st)
{
    if (cuda_op_begin("adamw") != 0 || n == 0)
        return;
    if (p == NULL || grad == NULL || m == NULL || v == NULL || st == NULL) {
        cuda_bad_arg("p, grad, m, v and st are needed");
        return;
    }
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   adamw_kernel<T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       p, (T *)pc, grad, m, v, n, lr, b1, b2, eps, wd, st));
    LAUNCH_OK();
}
