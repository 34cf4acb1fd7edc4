/* SPDX-License-Identifier: MIT */
/*
 * attention_kv.cu: attention over a key/value cache (ops.h
 * attention_kv_fwd), for generation.  One kernel copies the new tokens'
 * keys and values into the caches; then a warp per (query row, head)
 * walks the row's keys in tiles of 32, a lane scoring one key, with an
 * online softmax (running max and sum, the output rescaled as the max
 * grows), as attention.cu's forward does; each lane holds D / 32 of the
 * output's columns.  Scores, softmax and sums in float whatever the
 * dtype.  Against the CPU (SGEMMs and a row softmax) the results agree to
 * fp32 rounding.
 */
#include "cuda_common.cuh"

#define KV_WARPS 4 /* warps (query rows x heads) per block */
#define KV_KEYS  32

struct kv_args {
    int B, n, C, NH, D, S;
    float alpha;
};

template <typename T>
__global__ void
kv_write_kernel(T *kc, T *vc, const T *qkv, const int32_t *pos,
                struct kv_args a)
{
    size_t total = (size_t)a.B * a.n * a.C, row3 = 3 * (size_t)a.C;

    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t r = e / a.C, j = e % a.C;
        int b = (int)(r / a.n), i = (int)(r % a.n);
        size_t at = ((size_t)(pos[b] + i) * a.S + b) * a.C + j;

        kc[at] = qkv[r * row3 + a.C + j];
        vc[at] = qkv[r * row3 + 2 * a.C + j];
    }
}

/* A warp per (query row, head) pair: pair = block * KV_WARPS + warp, its
 * row pair / NH and head pair % NH. */
template <typename T, int R>
__global__ void
kv_attn_kernel(T *out, const T *kc, const T *vc, const T *qkv,
               const int32_t *pos, struct kv_args a)
{
    __shared__ float sq[KV_WARPS][32 * R];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t pair = (size_t)blockIdx.x * KV_WARPS + warp;
    size_t rows = (size_t)a.B * a.n, row3 = 3 * (size_t)a.C;
    size_t r = pair / a.NH, ldc = (size_t)a.S * a.C;
    int h = (int)(pair % a.NH), D = a.D, b, last;
    float m = -INFINITY, l = 0.0f, acc[R];
    const T *q, *kh, *vh;

    if (r >= rows)
        return; /* warp-uniform: no block-wide barrier below */
    b = (int)(r / a.n);
    last = pos[b] + (int)(r % a.n); /* the row's own position */
    q = qkv + r * row3 + (size_t)h * D;
    kh = kc + (size_t)b * a.C + (size_t)h * D;
    vh = vc + (size_t)b * a.C + (size_t)h * D;
    for (int d = lane; d < 32 * R; d += 32)
        sq[warp][d] = d < D ? to_float(q[d]) : 0.0f;
    __syncwarp();
#pragma unroll
    for (int e = 0; e < R; e++)
        acc[e] = 0.0f;
    for (int j0 = 0; j0 <= last; j0 += KV_KEYS) {
        int j = j0 + lane;
        float s = -INFINITY, m_new, corr, p;

        if (j <= last) {
            const T *k = kh + (size_t)j * ldc;

            s = 0.0f;
            for (int d = 0; d < D; d++)
                s += sq[warp][d] * to_float(k[d]);
            s *= a.alpha;
        }
        m_new = fmaxf(m, warp_max(s));
        corr = expf(m - m_new); /* m_new is finite: key j0 is in range */
        p = expf(s - m_new);
        l = l * corr + warp_sum(p);
#pragma unroll
        for (int e = 0; e < R; e++)
            acc[e] *= corr;
        for (int jj = 0; jj < KV_KEYS && j0 + jj <= last; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            const T *v = vh + (size_t)(j0 + jj) * ldc;

#pragma unroll
            for (int e = 0; e < R; e++)
                if (lane + 32 * e < D)
                    acc[e] += pj * to_float(v[lane + 32 * e]);
        }
        m = m_new;
    }
    {
        float inv = 1.0f / l;
        T *o = out + r * a.C + (size_t)h * D;

#pragma unroll
        for (int e = 0; e < R; e++)
            if (lane + 32 * e < D)
                o[lane + 32 * e] = from_float<T>(acc[e] * inv);
    }
}

template <typename T, int R>
static void
kv_fwd(void *out, void *kc, void *vc, const void *qkv, const int32_t *pos,
       const struct kv_args &a)
{
    size_t total = (size_t)a.B * a.n * a.C;
    size_t pairs = (size_t)a.B * a.n * a.NH;

    kv_write_kernel<T><<<grid_for(total, THREADS), THREADS, 0, cuda_g.stream>>>(
        (T *)kc, (T *)vc, (const T *)qkv, pos, a);
    if (!LAUNCH_OK())
        return;
    kv_attn_kernel<T, R><<<(unsigned)((pairs + KV_WARPS - 1) / KV_WARPS),
                           32 * KV_WARPS, 0, cuda_g.stream>>>(
        (T *)out, (const T *)kc, (const T *)vc, (const T *)qkv, pos, a);
    LAUNCH_OK();
}

void
cuda_attention_kv_fwd(void *out, void *kc, void *vc, const void *qkv,
                      const int32_t *pos, int B, int n, int C, int NH, int S,
                      int T_max)
{
    struct kv_args a;

    if (cuda_op_begin("attention_kv_fwd") != 0)
        return;
    if (B < 0 || n <= 0 || C <= 0 || NH <= 0 || C % NH != 0 || S < B ||
        T_max < n) {
        cuda_bad_arg("B = %d, n = %d, C = %d, NH = %d, S = %d, T_max = %d "
                     "(n > 0, C a multiple of NH, B <= S, n <= T_max)",
                     B, n, C, NH, S, T_max);
        return;
    }
    if (C / NH > CUDA_ATT_MAX_HEAD) {
        cuda_bad_arg("head size %d (at most %d)", C / NH, CUDA_ATT_MAX_HEAD);
        return;
    }
    if (B == 0)
        return;
    if (out == NULL || kc == NULL || vc == NULL || qkv == NULL || pos == NULL) {
        cuda_bad_arg("a buffer is NULL");
        return;
    }
    if ((size_t)B * n * NH / KV_WARPS + 1 > 0x7fffffffu) {
        cuda_bad_arg("%d x %d rows of %d heads are too many", B, n, NH);
        return;
    }
    a.B = B, a.n = n, a.C = C, a.NH = NH, a.D = C / NH, a.S = S;
    a.alpha = 1.0f / sqrtf((float)a.D);
    DISPATCH_DTYPE(
        cuda_g.dtype, T_,
        DISPATCH_HEAD(a.D, R, kv_fwd<T_, R>(out, kc, vc, qkv, pos, a)));
}
