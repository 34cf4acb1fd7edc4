/* SPDX-License-Identifier: MIT */
/*
 * elementwise.cu: the elementwise ops (ops.h): activations forward and
 * backward (exact and tanh GELU, ReLU, tanh), add, accumulate, scale,
 * accumulate_f32, cast, and dropout with the CPU's counter-based bits
 * (ops_dropout_uniform(), the same function compiled for the device), so
 * that both backends drop the same elements.
 *
 * Numerics: the formulas and their order are the CPU backend's
 * (train/cpu/ops_cpu.c), written with explicitly rounded operations
 * (__fmul_rn, __fadd_rn: never fused into an FMA, as the CPU's C11 build
 * does not fuse), so that in fp32 everything but erff/tanhf/expf (within
 * 2 ulp of glibc's) rounds as the CPU does.  bf16/f16 values are computed
 * in float and rounded once to nearest even.
 */
#include "cuda_common.cuh"

#define INV_SQRT2      0.70710678118654752f
#define INV_SQRT_2PI   0.39894228040143268f
#define SQRT_2_OVER_PI 0.79788456080286536f
#define GELU_CUBE      0.044715f

/* x + a*x^3 as the CPU evaluates it: x + ((a*x)*x)*x. */
__device__ __forceinline__ float
gelu_inner(float x)
{
    return __fmul_rn(
        SQRT_2_OVER_PI,
        __fadd_rn(x, __fmul_rn(__fmul_rn(__fmul_rn(GELU_CUBE, x), x), x)));
}

__device__ __forceinline__ float
act_f(float x, enum ops_act act)
{
    switch (act) {
    case OPS_ACT_GELU:
        return __fmul_rn(__fmul_rn(0.5f, x),
                         __fadd_rn(1.0f, erff(__fmul_rn(x, INV_SQRT2))));
    case OPS_ACT_GELU_TANH:
        return __fmul_rn(__fmul_rn(0.5f, x),
                         __fadd_rn(1.0f, tanhf(gelu_inner(x))));
    case OPS_ACT_RELU:
        return x > 0.0f ? x : 0.0f;
    default: /* OPS_ACT_TANH */
        return tanhf(x);
    }
}

/* f'(x), in the CPU's order; relu's is 0 at x <= 0, as torch's. */
__device__ __forceinline__ float
act_df(float x, enum ops_act act)
{
    float t, a, b;

    switch (act) {
    case OPS_ACT_GELU:
        a = __fmul_rn(0.5f, __fadd_rn(1.0f, erff(__fmul_rn(x, INV_SQRT2))));
        b = __fmul_rn(__fmul_rn(x, INV_SQRT_2PI),
                      expf(__fmul_rn(__fmul_rn(-0.5f, x), x)));
        return __fadd_rn(a, b);
    case OPS_ACT_GELU_TANH:
        t = tanhf(gelu_inner(x));
        a = __fmul_rn(0.5f, __fadd_rn(1.0f, t));
        b = __fmul_rn(
            __fmul_rn(
                __fmul_rn(__fmul_rn(0.5f, x), __fsub_rn(1.0f, __fmul_rn(t, t))),
                SQRT_2_OVER_PI),
            __fadd_rn(1.0f, __fmul_rn(__fmul_rn(3.0f * GELU_CUBE, x), x)));
        return __fadd_rn(a, b);
    case OPS_ACT_RELU:
        return x > 0.0f ? 1.0f : 0.0f;
    default: /* OPS_ACT_TANH */
        t = tanhf(x);
        return __fsub_rn(1.0f, __fmul_rn(t, t));
    }
}

template <typename T>
__global__ void
act_fwd_kernel(T *y, const T *x, size_t n, enum ops_act act)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_float<T>(act_f(to_float(x[i]), act));
}

template <typename T>
__global__ void
act_bwd_kernel(T *dx, const T *dy, const T *x, size_t n, enum ops_act act)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dx[i] = from_float<T>(
            __fadd_rn(to_float(dx[i]),
                      __fmul_rn(to_float(dy[i]), act_df(to_float(x[i]), act))));
}

static int
check_act(enum ops_act act)
{
    if (act != OPS_ACT_GELU && act != OPS_ACT_GELU_TANH &&
        act != OPS_ACT_RELU && act != OPS_ACT_TANH)
        return cuda_bad_arg("unknown activation %d", (int)act);
    return 0;
}

void
cuda_act_launch(void *y, const void *x, size_t n, enum ops_act act)
{
    if (n == 0 || check_act(act) != 0)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   act_fwd_kernel<T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)y, (const T *)x, n, act));
    LAUNCH_OK();
}

/* A NULL buffer among the named ones is a bad argument (n > 0). */
static int
null_arg(const void *a, const char *na, const void *b, const char *nb)
{
    if (a == NULL)
        return cuda_bad_arg("%s is NULL", na);
    if (b == NULL)
        return cuda_bad_arg("%s is NULL", nb);
    return 0;
}

void
cuda_act_fwd(void *y, const void *x, size_t n, enum ops_act act)
{
    if (cuda_op_begin("act_fwd") != 0 || n == 0 ||
        null_arg(y, "y", x, "x") != 0)
        return;
    cuda_act_launch(y, x, n, act);
}

void
cuda_act_bwd(void *dx, const void *dy, const void *x, size_t n,
             enum ops_act act)
{
    if (cuda_op_begin("act_bwd") != 0 || n == 0 ||
        null_arg(dx, "dx", dy, "dy") != 0 || null_arg(x, "x", x, "x") != 0 ||
        check_act(act) != 0)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   act_bwd_kernel<T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)dx, (const T *)dy, (const T *)x, n, act));
    LAUNCH_OK();
}

/* ------------------------------------------------------------ arithmetic */

template <typename T>
__global__ void
add_kernel(T *y, const T *a, const T *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_float<T>(__fadd_rn(to_float(a[i]), to_float(b[i])));
}

template <typename T>
__global__ void
scale_kernel(T *x, size_t n, float s)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = from_float<T>(__fmul_rn(to_float(x[i]), s));
}

/* y += x, y of type Y and x of type X. */
template <typename Y, typename X>
__global__ void
accumulate_kernel(Y *y, const X *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_float<Y>(__fadd_rn(to_float(y[i]), to_float(x[i])));
}

void
cuda_add(void *y, const void *a, const void *b, size_t n)
{
    if (cuda_op_begin("add") != 0 || n == 0 || null_arg(y, "y", a, "a") != 0 ||
        null_arg(b, "b", b, "b") != 0)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   add_kernel<T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)y, (const T *)a, (const T *)b, n));
    LAUNCH_OK();
}

void
cuda_accumulate_launch(void *y, const void *x, size_t n)
{
    if (n == 0)
        return;
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   accumulate_kernel<T, T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)y, (const T *)x, n));
    LAUNCH_OK();
}

void
cuda_accumulate(void *y, const void *x, size_t n)
{
    if (cuda_op_begin("accumulate") != 0 || n == 0 ||
        null_arg(y, "y", x, "x") != 0)
        return;
    cuda_accumulate_launch(y, x, n);
}

void
cuda_scale(void *x, size_t n, float s)
{
    if (cuda_op_begin("scale") != 0 || n == 0 || null_arg(x, "x", x, "x") != 0)
        return;
    DISPATCH_DTYPE(
        cuda_g.dtype, T,
        scale_kernel<T>
        <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>((T *)x, n, s));
    LAUNCH_OK();
}

void
cuda_scale_f32(float *x, size_t n, float s)
{
    if (cuda_op_begin("scale_f32") != 0 || n == 0 ||
        null_arg(x, "x", x, "x") != 0)
        return;
    scale_kernel<float>
        <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(x, n, s);
    LAUNCH_OK();
}

void
cuda_accumulate_f32(float *y, const float *x, size_t n)
{
    if (cuda_op_begin("accumulate_f32") != 0 || n == 0 ||
        null_arg(y, "y", x, "x") != 0)
        return;
    accumulate_kernel<float, float>
        <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(y, x, n);
    LAUNCH_OK();
}

/* ------------------------------------------------------------ cast */

template <typename D, typename S>
__global__ void
cast_kernel(D *dst, const S *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = from_float<D>(to_float(src[i]));
}

void
cuda_cast(void *dst, enum ops_dtype dst_type, const void *src,
          enum ops_dtype src_type, size_t n)
{
    unsigned grid = grid_for(n, THREADS);

    if (cuda_op_begin("cast") != 0 || n == 0 ||
        null_arg(dst, "dst", src, "src") != 0)
        return;
    if ((dst_type != OPS_F32 && dst_type != OPS_BF16 && dst_type != OPS_F16) ||
        (src_type != OPS_F32 && src_type != OPS_BF16 && src_type != OPS_F16)) {
        cuda_bad_arg("unknown dtype (%d to %d)", (int)src_type, (int)dst_type);
        return;
    }
    if (dst_type == src_type) {
        CUDA_OK(cudaMemcpyAsync(dst, src, n * dtype_bytes(dst_type),
                                cudaMemcpyDeviceToDevice, cuda_g.stream));
        return;
    }
    /* Every pair goes through float, which holds bf16 and f16 exactly:
     * one rounding, to nearest even. */
    DISPATCH_DTYPE(dst_type, D,
                   DISPATCH_DTYPE(src_type, S,
                                  cast_kernel<D, S>
                                  <<<grid, THREADS, 0, cuda_g.stream>>>(
                                      (D *)dst, (const S *)src, n)));
    LAUNCH_OK();
}

/* ------------------------------------------------------------ dropout */

template <typename T>
__global__ void
dropout_fwd_kernel(T *y, const T *x, size_t n, float p, float scale,
                   uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_float<T>(
            __fmul_rn(to_float(x[i]), dropout_factor(seed, i, p, scale)));
}

template <typename T>
__global__ void
dropout_bwd_kernel(T *dx, const T *dy, size_t n, float p, float scale,
                   uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dx[i] = from_float<T>(__fadd_rn(
            to_float(dx[i]),
            __fmul_rn(to_float(dy[i]), dropout_factor(seed, i, p, scale))));
}

void
cuda_dropout_fwd(void *y, const void *x, size_t n, float p, uint64_t seed)
{
    if (cuda_op_begin("dropout_fwd") != 0 ||
        cuda_check_dropout(&cuda_g.st, "dropout_fwd", p) != 0 || n == 0 ||
        null_arg(y, "y", x, "x") != 0)
        return;
    if (p == 0.0f) {
        if (y != x)
            CUDA_OK(cudaMemcpyAsync(y, x, n * dtype_bytes(cuda_g.dtype),
                                    cudaMemcpyDeviceToDevice, cuda_g.stream));
        return;
    }
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   dropout_fwd_kernel<T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)y, (const T *)x, n, p, 1.0f / (1.0f - p), seed));
    LAUNCH_OK();
}

void
cuda_dropout_bwd(void *dx, const void *dy, size_t n, float p, uint64_t seed)
{
    if (cuda_op_begin("dropout_bwd") != 0 ||
        cuda_check_dropout(&cuda_g.st, "dropout_bwd", p) != 0 || n == 0 ||
        null_arg(dx, "dx", dy, "dy") != 0)
        return;
    if (p == 0.0f) {
        cuda_accumulate_launch(dx, dy, n);
        return;
    }
    DISPATCH_DTYPE(cuda_g.dtype, T,
                   dropout_bwd_kernel<T>
                   <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                       (T *)dx, (const T *)dy, n, p, 1.0f / (1.0f - p), seed));
    LAUNCH_OK();
}
