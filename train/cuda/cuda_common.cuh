/* SPDX-License-Identifier: MIT */
/*
 * cuda_common.cuh: what the CUDA backend's files share: the backend's
 * state (one GPU per process), the checks that record a failed CUDA or
 * cuBLAS call in the sticky status instead of exiting (ops.h: an op never
 * exits; STYLE G6's CUDA_CHECK is for programs), loads and stores of the
 * compute dtype (float, bf16, half) through float, deterministic warp and
 * block reductions, and the prototypes of each file's ops.  Internal to
 * train/cuda/.
 */
#ifndef TRAIN_CUDA_COMMON_CUH
#define TRAIN_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_host.h"
#include "ops.h"

/* ------------------------------------------------------------ state */

/* The backend: one GPU, one compute stream (every op, in order), one copy
 * stream (upload_async). */
struct cuda_backend {
    struct cuda_status st;
    int open;
    int device, sm, n_sm;
    size_t smem_optin; /* the most shared memory a block may ask for */
    enum ops_dtype dtype;
    int deterministic, tf32;
    cudaStream_t stream, copy_stream;
    /* upload_wait() records compute_mark on the compute stream (after the
     * work queued so far: upload_async() waits for it) and copy_done[k % 2]
     * on the copy stream (the k-th call; the next call waits for it on the
     * host). */
    cudaEvent_t copy_done[2], compute_mark;
    unsigned long long n_waits;
    cublasLtHandle_t lt;
    void *lt_ws; /* cuBLASLt's fixed workspace */
    size_t lt_ws_bytes;
    struct cuda_gemm_cache gemms;
    /* The ops' own temporary memory (partial sums, sort buffers, cuDNN's
     * workspace), grown on demand; ops run one after another on the
     * stream, so they share it. */
    void *scratch;
    size_t scratch_bytes;
    struct cuda_ptr_map allocs;
    size_t in_use, peak; /* bytes held through cudaMalloc */
    void *cudnn;         /* cudnnHandle_t, NULL without one */
    long cudnn_version;
    void *sdpa; /* attention_cudnn.cu's plans */
    char notice[CUDA_MSG_MAX];
    int notice_unread;
};

extern struct cuda_backend cuda_g;

/* cuda_op_begin: called first by every op, with its name: 0 to go on, -1
 * when an earlier failure made the backend a no-op (or it is closed). */
static inline int
cuda_op_begin(const char *op)
{
    if (cuda_g.st.failed || !cuda_g.open)
        return -1;
    cuda_g.st.op = op;
    cuda_g.st.queued = op;
    return 0;
}

/* A notice for the log, kept until notice() reads it (the first stays). */
void cuda_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cuda_scratch: at least bytes of the backend's scratch memory (aligned to
 * 256), valid until the next op that asks for scratch; NULL after
 * recording an out-of-memory failure. */
void *cuda_scratch(size_t bytes, const char *what);

/* Device memory with accounting (the memory report and out-of-memory
 * messages); NULL after recording the failure. */
void *cuda_malloc_tracked(size_t bytes, const char *what);
void cuda_free_tracked(void *p);

/* ------------------------------------------------------------ checks */

/* Each returns 1 when the call succeeded, else records it (expression,
 * file:line and the library's message) and returns 0. */
int cuda_ok(cudaError_t e, const char *expr, const char *file, int line);
int cublas_ok(cublasStatus_t s, const char *expr, const char *file, int line);

#define CUDA_OK(expr)   cuda_ok((expr), #expr, __FILE__, __LINE__)
#define CUBLAS_OK(expr) cublas_ok((expr), #expr, __FILE__, __LINE__)
/* After a kernel launch: a bad launch configuration shows at once; a
 * fault while it runs shows at the next sync() (or here, with
 * CUDA_LAUNCH_BLOCKING=1, which pins it to this op). */
#define LAUNCH_OK() \
    cuda_ok(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

/* A bad argument of an op, recorded as "cuda: OP: ...". */
int cuda_bad_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------ launches */

#define THREADS 256

/* Blocks of a grid-stride loop over n elements: enough to fill the GPU,
 * never more than the elements need. */
static inline unsigned
grid_for(size_t n, int threads)
{
    size_t want = (n + (size_t)threads - 1) / (size_t)threads;
    size_t cap = (size_t)(cuda_g.n_sm > 0 ? cuda_g.n_sm : 1) * 16;

    if (want < 1)
        want = 1;
    return (unsigned)(want < cap ? want : cap);
}

/* ------------------------------------------------------------ dtypes */

__device__ __forceinline__ float
to_float(float x)
{
    return x;
}

__device__ __forceinline__ float
to_float(__nv_bfloat16 x)
{
    return __bfloat162float(x);
}

__device__ __forceinline__ float
to_float(__half x)
{
    return __half2float(x);
}

/* Round to nearest even. */
template <typename T> __device__ __forceinline__ T from_float(float x);

template <>
__device__ __forceinline__ float
from_float<float>(float x)
{
    return x;
}

template <>
__device__ __forceinline__ __nv_bfloat16
from_float<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

template <>
__device__ __forceinline__ __half
from_float<__half>(float x)
{
    return __float2half_rn(x);
}

/* Runs the statements with T the C++ type of dtype dt. */
#define DISPATCH_DTYPE(dt, T, ...)   \
    do {                             \
        switch (dt) {                \
        case OPS_BF16: {             \
            typedef __nv_bfloat16 T; \
            __VA_ARGS__;             \
            break;                   \
        }                            \
        case OPS_F16: {              \
            typedef __half T;        \
            __VA_ARGS__;             \
            break;                   \
        }                            \
        default: {                   \
            typedef float T;         \
            __VA_ARGS__;             \
            break;                   \
        }                            \
        }                            \
    } while (0)

/* Runs the statements with R = the registers a lane holds of a head of D
 * columns (D / 32 rounded up to 1, 2, 4 or 8; D <= 256). */
#define DISPATCH_HEAD(D, R, ...) \
    do {                         \
        if ((D) <= 32) {         \
            const int R = 1;     \
            __VA_ARGS__;         \
        } else if ((D) <= 64) {  \
            const int R = 2;     \
            __VA_ARGS__;         \
        } else if ((D) <= 128) { \
            const int R = 4;     \
            __VA_ARGS__;         \
        } else {                 \
            const int R = 8;     \
            __VA_ARGS__;         \
        }                        \
    } while (0)

static inline size_t
dtype_bytes(enum ops_dtype dt)
{
    return dt == OPS_F32 ? 4 : 2;
}

/* ------------------------------------------------------------ reductions */

/* Butterfly sums over a warp: every lane ends with the same bits (IEEE
 * addition commutes, and each level pairs the same two values in both
 * lanes), in an order fixed by the lane numbers: deterministic. */
template <typename F>
__device__ __forceinline__ F
warp_sum(F v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The max, NaN-ignoring as the CPU's `x > max ? x : max`. */
__device__ __forceinline__ float
warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32): the warps' sums, then
 * warp 0 adds them in warp order; every thread gets the total.  buf: 32
 * elements of shared memory, free again on return. */
template <typename F>
__device__ F
block_sum(F v, F *buf)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int n_warps = blockDim.x / 32;

    v = warp_sum(v);
    __syncthreads(); /* buf may still be read by a previous call */
    if (lane == 0)
        buf[warp] = v;
    __syncthreads();
    v = lane < n_warps ? buf[lane] : (F)0;
    if (warp == 0) {
        v = warp_sum(v);
        if (lane == 0)
            buf[0] = v;
    }
    __syncthreads();
    return buf[0];
}

__device__ __forceinline__ float
block_max(float v, float *buf)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int n_warps = blockDim.x / 32;

    v = warp_max(v);
    __syncthreads();
    if (lane == 0)
        buf[warp] = v;
    __syncthreads();
    v = lane < n_warps ? buf[lane] : -INFINITY;
    if (warp == 0) {
        v = warp_max(v);
        if (lane == 0)
            buf[0] = v;
    }
    __syncthreads();
    return buf[0];
}

/* keep / (1 - p) for dropout element i: 0 or scale (ops.h's bits). */
__device__ __forceinline__ float
dropout_factor(uint64_t seed, uint64_t i, float p, float scale)
{
    return ops_dropout_uniform(seed, i) >= p ? scale : 0.0f;
}

/* ------------------------------------------------------------ the ops */

/* Each file's ops, with ops.h's signatures (struct ops in ops_cuda.cu). */

/* matmul.cu */
void cuda_linear_fwd(void *y, const void *x, const void *w, const void *b,
                     int M, int K, int N);
void cuda_linear_act_fwd(void *y, void *pre, const void *x, const void *w,
                         const void *b, int M, int K, int N, enum ops_act act);
void cuda_linear_bwd(void *dx, float *dw, float *db, const void *dy,
                     const void *x, const void *w, int M, int K, int N);
void cuda_matmul_release(void);

/* layernorm.cu */
void cuda_layernorm_fwd(void *y, float *mean, float *rstd, const void *x,
                        const void *w, const void *b, int n, int C, float eps);
void cuda_residual_layernorm_fwd(void *r, void *y, float *mean, float *rstd,
                                 const void *a, const void *bb, const void *w,
                                 const void *b, int n, int C, float eps);
void cuda_layernorm_bwd(void *dx, float *dw, float *db, const void *dy,
                        const void *x, const void *w, const float *mean,
                        const float *rstd, int n, int C);

/* elementwise.cu */
void cuda_act_fwd(void *y, const void *x, size_t n, enum ops_act act);
void cuda_act_bwd(void *dx, const void *dy, const void *x, size_t n,
                  enum ops_act act);
void cuda_add(void *y, const void *a, const void *b, size_t n);
void cuda_accumulate(void *y, const void *x, size_t n);
void cuda_scale(void *x, size_t n, float s);
void cuda_accumulate_f32(float *y, const float *x, size_t n);
void cuda_scale_f32(float *x, size_t n, float s);
void cuda_dropout_fwd(void *y, const void *x, size_t n, float p, uint64_t seed);
void cuda_dropout_bwd(void *dx, const void *dy, size_t n, float p,
                      uint64_t seed);
void cuda_cast(void *dst, enum ops_dtype dst_type, const void *src,
               enum ops_dtype src_type, size_t n);
/* y = f(x) in the compute dtype, queued without the op bookkeeping (for
 * linear_act_fwd). */
void cuda_act_launch(void *y, const void *x, size_t n, enum ops_act act);
/* y += x in the compute dtype, likewise (attention's cuDNN path). */
void cuda_accumulate_launch(void *y, const void *x, size_t n);

/* encoder.cu */
void cuda_embed_fwd(void *y, const int32_t *ids, const void *table, int n,
                    int C, int accumulate);
void cuda_embed_bwd(float *dtable, const void *dy, const int32_t *ids, int n,
                    int C, int32_t skip_id);
void cuda_gather_rows(void *y, const void *x, const int32_t *rows, int n,
                      int C);
void cuda_scatter_add_rows(void *dx, const void *dy, const int32_t *rows, int n,
                           int C);

/* attention.cu (the exact kernel; cuDNN's through attention_cudnn.cu) */
size_t cuda_attention_state_bytes_op(int B, int T, int NH);
size_t cuda_attention_scratch_bytes_op(int B, int T, int NH, int C);
void cuda_attention_fwd(void *out, void *state, const void *qkv,
                        const float *key_bias, int B, int T, int C, int NH,
                        int h0, int NH_all, int causal, float p, uint64_t seed);
void cuda_attention_bwd(void *dqkv, void *scratch, const void *dout,
                        const void *out, const void *qkv, const void *state,
                        const float *key_bias, int B, int T, int C, int NH,
                        int h0, int NH_all, int causal, float p, uint64_t seed);

/* attention_kv.cu */
void cuda_attention_kv_fwd(void *out, void *kc, void *vc, const void *qkv,
                           const int32_t *pos, int B, int n, int C, int NH,
                           int S, int T_max);

/* attention_cudnn.cu: 1 when cuDNN ran the op, 0 when it cannot (the
 * caller falls back to the exact kernel; the reason became a notice), -1
 * on a recorded failure. */
int cuda_sdpa_fwd(void *out, float *lse, const void *qkv, const float *key_bias,
                  int B, int T, int C, int NH, int h0, int causal, float p,
                  uint64_t seed);
int cuda_sdpa_bwd(void *dqkv, void *scratch, const void *dout, const void *out,
                  const void *qkv, const float *lse, const float *key_bias,
                  int B, int T, int C, int NH, int h0, int causal, float p,
                  uint64_t seed);
/* cuda_sdpa_open: a cuDNN handle on the compute stream (failures leave
 * cuda_g.cudnn NULL and the exact kernel in use); cuda_sdpa_close: the
 * plans and the handle. */
void cuda_sdpa_open(void);
void cuda_sdpa_close(void);

/* classifier.cu */
void cuda_xent(float *losses, void *dlogits, const void *logits,
               const int32_t *targets, int n, int V, int V_valid, float dscale,
               const float *loss_scale);
void cuda_xent_max(float *rowmax, const void *logits, int n, int V,
                   int V_valid);
void cuda_xent_partial(double *sums, const void *logits, const float *rowmax,
                       const int32_t *targets, int n, int V, int V_valid,
                       int v0);
void cuda_xent_finish(float *losses, void *dlogits, const void *logits,
                      const float *rowmax, const double *sums,
                      const int32_t *targets, int n, int V, int V_valid, int v0,
                      float dscale, const float *loss_scale);

/* reduce.cu */
void cuda_sum_acc(double *acc, const float *x, size_t n, double scale);
void cuda_sumsq_acc(double *acc, const float *x, size_t n);
void cuda_loss_check(struct ops_step *st, const double *loss, int64_t step);
void cuda_step_prepare(struct ops_step *st, const struct ops_step_opts *o);
void cuda_step_finish(struct ops_step *st);

/* adamw.cu */
void cuda_adamw(float *p, void *pc, const float *grad, float *m, float *v,
                size_t n, float lr, float b1, float b2, float eps, float wd,
                const struct ops_step *st);

#endif /* TRAIN_CUDA_COMMON_CUH */
