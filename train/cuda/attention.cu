/* SPDX-License-Identifier: MIT */
/*
 * attention.cu: the attention core (ops.h attention_fwd, attention_bwd).
 * bf16/f16 go to cuDNN's fused flash attention (attention_cudnn.cu) when
 * it can run the shape; fp32, and any shape cuDNN cannot, run the exact
 * kernels here, in float whatever the dtype, with the CPU's dropout bits.
 *
 * Forward, flash-style: a block takes ATT_ROWS query rows of one (batch,
 * head), a warp per row, and walks the keys in tiles of 32 staged in
 * shared memory; each lane scores one key, and the row keeps an online
 * softmax (running max m and sum l, the output rescaled as m grows).
 * The output is divided by l at the end and the row's log-sum-exp m +
 * log(l) is the state [B,NH,T] that backward needs: no [T,T] matrix is
 * stored.  Probability (b, h, i, j) is dropped with dropout element
 * ((b * NH_all + h0 + h) * T + i) * T + j, as on the CPU.
 *
 * Backward recomputes the probabilities from q, k and the log-sum-exp, in
 * three kernels and without atomics: D_i = dout_i . out_i per row (with
 * dropout, rowsum(dP * P) is still that); then dk and dv, a warp per key
 * walking the queries in order; then dq, a warp per query walking the
 * keys in order.  Each output element is written by one thread, so the
 * results are the same bits every run.
 *
 * Against the CPU (which forms the [T,T] probabilities) the results agree
 * to fp32 rounding, not bit for bit: the sums run in other orders.
 */
#include "cuda_common.cuh"

#define ATT_ROWS 8  /* warps per block: query rows (forward, dq) or keys */
#define ATT_KEYS 32 /* a tile of keys (or queries), a lane each */

struct att_args {
    int B, T, C, NH, D, h0, NH_all, causal;
    float alpha, p, scale; /* 1/sqrt(D); dropout p and 1/(1-p) */
    uint64_t seed;
    const float *key_bias; /* [B,T] or NULL */
};

/* Dropout element of probability (b, h, i, 0) (add j). */
__device__ __forceinline__ uint64_t
drop_row(const struct att_args &a, int b, int h, int i)
{
    return (((uint64_t)b * (uint64_t)a.NH_all + (uint64_t)(a.h0 + h)) *
                (uint64_t)a.T +
            (uint64_t)i) *
           (uint64_t)a.T;
}

/* Stages rows r0..r0+n-1 (n <= rows) of the qkv part at column col into
 * dst[rows][ld] as float, zeros past T; all threads of the block. */
template <typename T>
__device__ __forceinline__ void
stage_rows(float *dst, int ld, int rows, const T *head, int col, int r0,
           const struct att_args &a)
{
    size_t row3 = (size_t)3 * a.C;

    for (int e = threadIdx.x; e < rows * a.D; e += blockDim.x) {
        int r = e / a.D, d = e % a.D, t = r0 + r;

        dst[r * ld + d] =
            t < a.T ? to_float(head[(size_t)t * row3 + col + d]) : 0.0f;
    }
}

/* The same from a [B,T,C] tensor (out, dout) at head column hc. */
template <typename T>
__device__ __forceinline__ void
stage_rows_c(float *dst, int ld, int rows, const T *x, int r0,
             const struct att_args &a)
{
    for (int e = threadIdx.x; e < rows * a.D; e += blockDim.x) {
        int r = e / a.D, d = e % a.D, t = r0 + r;

        dst[r * ld + d] = t < a.T ? to_float(x[(size_t)t * a.C + d]) : 0.0f;
    }
}

__device__ __forceinline__ float
dot_rows(const float *x, const float *y, int D)
{
    float s = 0.0f;

    for (int d = 0; d < D; d++)
        s += x[d] * y[d];
    return s;
}

/* ------------------------------------------------------------ forward */

template <typename T, int R>
__global__ void
attn_fwd_kernel(T *out, float *lse, const T *qkv, struct att_args a)
{
    extern __shared__ float sm[];
    int D = a.D, ldk = D | 1;
    float *sq = sm;                  /* [ATT_ROWS][D] */
    float *sk = sq + ATT_ROWS * D;   /* [ATT_KEYS][ldk] */
    float *sv = sk + ATT_KEYS * ldk; /* [ATT_KEYS][D] */
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int bh = blockIdx.x, b = bh / a.NH, h = bh % a.NH;
    int i0 = blockIdx.y * ATT_ROWS, i = i0 + warp;
    const T *head = qkv + (size_t)b * a.T * 3 * a.C + (size_t)h * D;
    const float *bias =
        a.key_bias != NULL ? a.key_bias + (size_t)b * a.T : NULL;
    int last = a.causal ? min(i, a.T - 1) : a.T - 1; /* the row's last key */
    int n_keys = a.causal ? min(a.T, i0 + ATT_ROWS) : a.T;
    uint64_t drop = drop_row(a, b, h, i);
    float m = -INFINITY, l = 0.0f, acc[R];

#pragma unroll
    for (int r = 0; r < R; r++)
        acc[r] = 0.0f;
    stage_rows(sq, D, ATT_ROWS, head, 0, i0, a);
    for (int j0 = 0; j0 < n_keys; j0 += ATT_KEYS) {
        int j = j0 + lane;
        float s = -INFINITY, m_new, shift, corr, e, pd;

        __syncthreads(); /* the previous tile is used up */
        stage_rows(sk, ldk, ATT_KEYS, head, a.C, j0, a);
        stage_rows(sv, D, ATT_KEYS, head, 2 * a.C, j0, a);
        __syncthreads();
        if (i >= a.T || j0 > last)
            continue; /* warp-uniform */
        if (j <= last) {
            s = dot_rows(sq + warp * D, sk + lane * ldk, D) * a.alpha;
            if (bias != NULL)
                s += bias[j];
        }
        m_new = fmaxf(m, warp_max(s));
        /* Every score so far -inf (a bias of -inf): nothing to rescale. */
        shift = m_new == -INFINITY ? 0.0f : m_new;
        corr = expf(m - shift);
        e = expf(s - shift);
        l = l * corr + warp_sum(e);
        pd = e;
        if (a.p > 0.0f && j <= last)
            pd = e * dropout_factor(a.seed, drop + (uint64_t)j, a.p, a.scale);
#pragma unroll
        for (int r = 0; r < R; r++)
            acc[r] *= corr;
        for (int jj = 0; jj < ATT_KEYS; jj++) {
            float pj = __shfl_sync(0xffffffffu, pd, jj);

#pragma unroll
            for (int r = 0; r < R; r++)
                if (lane + 32 * r < D)
                    acc[r] += pj * sv[jj * D + lane + 32 * r];
        }
        m = m_new;
    }
    if (i < a.T) {
        float inv = 1.0f / l;
        T *o = out + ((size_t)b * a.T + i) * a.C + (size_t)h * D;

#pragma unroll
        for (int r = 0; r < R; r++)
            if (lane + 32 * r < D)
                o[lane + 32 * r] = from_float<T>(acc[r] * inv);
        if (lane == 0)
            lse[(size_t)bh * a.T + i] = m + logf(l);
    }
}

/* ------------------------------------------------------------ backward */

/* drow[(b*NH + h)*T + i] = dout_i . out_i over the head's D columns; a
 * warp per row. */
template <typename T>
__global__ void
attn_rowdot_kernel(float *drow, const T *dout, const T *out, struct att_args a)
{
    size_t row = (size_t)blockIdx.x * ATT_ROWS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    size_t bh, i, b, h, off;
    float s = 0.0f;

    if (row >= (size_t)a.B * a.NH * a.T)
        return;
    bh = row / a.T;
    i = row % a.T;
    b = bh / a.NH;
    h = bh % a.NH;
    off = (b * a.T + i) * a.C + h * a.D;
    for (int d = lane; d < a.D; d += 32)
        s += to_float(dout[off + d]) * to_float(out[off + d]);
    s = warp_sum(s);
    if (lane == 0)
        drow[row] = s;
}

/* dk and dv: a warp per key j, the lanes over the queries of a tile:
 * P = exp(s - lse_i), dS = P * (f * (dout_i . v_j) - D_i);
 * dv_j += sum_i P f dout_i, dk_j += alpha * sum_i dS q_i. */
template <typename T, int R>
__global__ void
attn_dkdv_kernel(T *dqkv, const T *dout, const T *qkv, const float *lse,
                 const float *drow, struct att_args a)
{
    extern __shared__ float sm[];
    int D = a.D, ldk = D | 1;
    float *kj = sm;                   /* [ATT_ROWS][D]: the block's keys */
    float *vj = kj + ATT_ROWS * D;    /* [ATT_ROWS][D] */
    float *sq = vj + ATT_ROWS * D;    /* [ATT_KEYS][ldk]: a tile of queries */
    float *sdo = sq + ATT_KEYS * ldk; /* [ATT_KEYS][ldk] */
    float *slse = sdo + ATT_KEYS * ldk, *sdr = slse + ATT_KEYS;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int bh = blockIdx.x, b = bh / a.NH, h = bh % a.NH;
    int jb = blockIdx.y * ATT_ROWS, j = jb + warp;
    const T *head = qkv + (size_t)b * a.T * 3 * a.C + (size_t)h * D;
    const T *dhead = dout + (size_t)b * a.T * a.C + (size_t)h * D;
    float bias = 0.0f, acc_k[R], acc_v[R];
    int start = a.causal ? jb / ATT_KEYS * ATT_KEYS : 0;

    if (a.key_bias != NULL && j < a.T)
        bias = a.key_bias[(size_t)b * a.T + j];
#pragma unroll
    for (int r = 0; r < R; r++)
        acc_k[r] = acc_v[r] = 0.0f;
    stage_rows(kj, D, ATT_ROWS, head, a.C, jb, a);
    stage_rows(vj, D, ATT_ROWS, head, 2 * a.C, jb, a);
    for (int i0 = start; i0 < a.T; i0 += ATT_KEYS) {
        int i = i0 + lane;
        bool valid = i < a.T && j < a.T && (!a.causal || i >= j);
        float P = 0.0f, dS = 0.0f, pd = 0.0f;

        __syncthreads();
        stage_rows(sq, ldk, ATT_KEYS, head, 0, i0, a);
        stage_rows_c(sdo, ldk, ATT_KEYS, dhead, i0, a);
        if (threadIdx.x < ATT_KEYS) {
            int t = i0 + threadIdx.x;

            slse[threadIdx.x] = t < a.T ? lse[(size_t)bh * a.T + t] : 0.0f;
            sdr[threadIdx.x] = t < a.T ? drow[(size_t)bh * a.T + t] : 0.0f;
        }
        __syncthreads();
        if (j >= a.T || (a.causal && i0 + ATT_KEYS - 1 < j))
            continue; /* warp-uniform: no query of the tile sees key j */
        if (valid) {
            float s =
                dot_rows(sq + lane * ldk, kj + warp * D, D) * a.alpha + bias;
            float dpd = dot_rows(sdo + lane * ldk, vj + warp * D, D);
            float f =
                a.p > 0.0f
                    ? dropout_factor(a.seed, drop_row(a, b, h, i) + (uint64_t)j,
                                     a.p, a.scale)
                    : 1.0f;

            P = expf(s - slse[lane]);
            dS = P * (dpd * f - sdr[lane]);
            pd = P * f;
        }
        for (int ii = 0; ii < ATT_KEYS; ii++) {
            float pi = __shfl_sync(0xffffffffu, pd, ii);
            float di = __shfl_sync(0xffffffffu, dS, ii);

#pragma unroll
            for (int r = 0; r < R; r++) {
                int d = lane + 32 * r;

                if (d < D) {
                    acc_v[r] += pi * sdo[ii * ldk + d];
                    acc_k[r] += di * sq[ii * ldk + d];
                }
            }
        }
    }
    if (j < a.T) {
        T *dk = dqkv + ((size_t)b * a.T + j) * 3 * a.C + a.C + (size_t)h * D;
        T *dv = dk + a.C;

#pragma unroll
        for (int r = 0; r < R; r++) {
            int d = lane + 32 * r;

            if (d < D) {
                dk[d] = from_float<T>(to_float(dk[d]) + a.alpha * acc_k[r]);
                dv[d] = from_float<T>(to_float(dv[d]) + acc_v[r]);
            }
        }
    }
}

/* dq: a warp per query i, the lanes over the keys of a tile:
 * dq_i += alpha * sum_j dS_ij k_j. */
template <typename T, int R>
__global__ void
attn_dq_kernel(T *dqkv, const T *dout, const T *qkv, const float *lse,
               const float *drow, struct att_args a)
{
    extern __shared__ float sm[];
    int D = a.D, ldk = D | 1;
    float *sq = sm;                  /* [ATT_ROWS][D]: the block's queries */
    float *sdo = sq + ATT_ROWS * D;  /* [ATT_ROWS][D] */
    float *sk = sdo + ATT_ROWS * D;  /* [ATT_KEYS][ldk]: a tile of keys */
    float *sv = sk + ATT_KEYS * ldk; /* [ATT_KEYS][ldk] */
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int bh = blockIdx.x, b = bh / a.NH, h = bh % a.NH;
    int i0 = blockIdx.y * ATT_ROWS, i = i0 + warp;
    const T *head = qkv + (size_t)b * a.T * 3 * a.C + (size_t)h * D;
    const T *dhead = dout + (size_t)b * a.T * a.C + (size_t)h * D;
    const float *bias =
        a.key_bias != NULL ? a.key_bias + (size_t)b * a.T : NULL;
    int last = a.causal ? min(i, a.T - 1) : a.T - 1;
    int n_keys = a.causal ? min(a.T, i0 + ATT_ROWS) : a.T;
    float li = 0.0f, di = 0.0f, acc[R];
    uint64_t drop = drop_row(a, b, h, i);

    if (i < a.T) {
        li = lse[(size_t)bh * a.T + i];
        di = drow[(size_t)bh * a.T + i];
    }
#pragma unroll
    for (int r = 0; r < R; r++)
        acc[r] = 0.0f;
    stage_rows(sq, D, ATT_ROWS, head, 0, i0, a);
    stage_rows_c(sdo, D, ATT_ROWS, dhead, i0, a);
    for (int j0 = 0; j0 < n_keys; j0 += ATT_KEYS) {
        int j = j0 + lane;
        float dS = 0.0f;

        __syncthreads();
        stage_rows(sk, ldk, ATT_KEYS, head, a.C, j0, a);
        stage_rows(sv, ldk, ATT_KEYS, head, 2 * a.C, j0, a);
        __syncthreads();
        if (i >= a.T || j0 > last)
            continue; /* warp-uniform */
        if (j <= last) {
            float s = dot_rows(sq + warp * D, sk + lane * ldk, D) * a.alpha;
            float dpd = dot_rows(sdo + warp * D, sv + lane * ldk, D);
            float f = a.p > 0.0f ? dropout_factor(a.seed, drop + (uint64_t)j,
                                                  a.p, a.scale)
                                 : 1.0f;

            if (bias != NULL)
                s += bias[j];
            dS = expf(s - li) * (dpd * f - di);
        }
        for (int jj = 0; jj < ATT_KEYS; jj++) {
            float dj = __shfl_sync(0xffffffffu, dS, jj);

#pragma unroll
            for (int r = 0; r < R; r++)
                if (lane + 32 * r < D)
                    acc[r] += dj * sk[jj * ldk + lane + 32 * r];
        }
    }
    if (i < a.T) {
        T *dq = dqkv + ((size_t)b * a.T + i) * 3 * a.C + (size_t)h * D;

#pragma unroll
        for (int r = 0; r < R; r++) {
            int d = lane + 32 * r;

            if (d < D)
                dq[d] = from_float<T>(to_float(dq[d]) + a.alpha * acc[r]);
        }
    }
}

/* ------------------------------------------------------------ launches */

/* Lets kernel use smem bytes of dynamic shared memory (past the 48 KiB
 * every block gets); 0 or -1 after recording why not. */
static int
allow_smem(const void *kernel, size_t smem)
{
    if (smem <= 48 * 1024)
        return 0;
    if (smem > cuda_g.smem_optin)
        return cuda_bad_arg("head size needs %zu bytes of shared memory, the "
                            "GPU gives a block %zu",
                            smem, cuda_g.smem_optin);
    return CUDA_OK(cudaFuncSetAttribute(
               kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem))
               ? 0
               : -1;
}

static struct att_args
att_args(const float *key_bias, int B, int T, int C, int NH, int h0, int NH_all,
         int causal, float p, uint64_t seed)
{
    struct att_args a;

    a.B = B, a.T = T, a.C = C, a.NH = NH, a.D = C / NH;
    a.h0 = h0, a.NH_all = NH_all, a.causal = causal != 0;
    a.alpha = 1.0f / sqrtf((float)a.D);
    a.p = p;
    a.scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    a.seed = seed;
    a.key_bias = key_bias;
    return a;
}

template <typename T, int R>
static void
exact_fwd(void *out, float *lse, const void *qkv, const struct att_args &a)
{
    size_t smem =
        (size_t)(ATT_ROWS * a.D + ATT_KEYS * (a.D | 1) + ATT_KEYS * a.D) *
        sizeof(float);
    dim3 grid((unsigned)(a.B * a.NH),
              (unsigned)((a.T + ATT_ROWS - 1) / ATT_ROWS));

    if (allow_smem((const void *)attn_fwd_kernel<T, R>, smem) != 0)
        return;
    attn_fwd_kernel<T, R><<<grid, 32 * ATT_ROWS, smem, cuda_g.stream>>>(
        (T *)out, lse, (const T *)qkv, a);
    LAUNCH_OK();
}

template <typename T, int R>
static void
exact_bwd(void *dqkv, float *drow, const void *dout, const void *out,
          const void *qkv, const float *lse, const struct att_args &a)
{
    size_t rows = (size_t)a.B * a.NH * a.T;
    size_t smem_kv =
        (size_t)(2 * ATT_ROWS * a.D + 2 * ATT_KEYS * (a.D | 1) + 2 * ATT_KEYS) *
        sizeof(float);
    size_t smem_q =
        (size_t)(2 * ATT_ROWS * a.D + 2 * ATT_KEYS * (a.D | 1)) * sizeof(float);
    dim3 grid((unsigned)(a.B * a.NH),
              (unsigned)((a.T + ATT_ROWS - 1) / ATT_ROWS));

    attn_rowdot_kernel<T>
        <<<(unsigned)((rows + ATT_ROWS - 1) / ATT_ROWS), 32 * ATT_ROWS, 0,
           cuda_g.stream>>>(drow, (const T *)dout, (const T *)out, a);
    if (!LAUNCH_OK() ||
        allow_smem((const void *)attn_dkdv_kernel<T, R>, smem_kv) != 0 ||
        allow_smem((const void *)attn_dq_kernel<T, R>, smem_q) != 0)
        return;
    attn_dkdv_kernel<T, R><<<grid, 32 * ATT_ROWS, smem_kv, cuda_g.stream>>>(
        (T *)dqkv, (const T *)dout, (const T *)qkv, lse, drow, a);
    if (!LAUNCH_OK())
        return;
    attn_dq_kernel<T, R><<<grid, 32 * ATT_ROWS, smem_q, cuda_g.stream>>>(
        (T *)dqkv, (const T *)dout, (const T *)qkv, lse, drow, a);
    LAUNCH_OK();
}

/* ------------------------------------------------------------ ops */

size_t
cuda_attention_state_bytes_op(int B, int T, int NH)
{
    return cuda_attention_state_bytes(B, T, NH);
}

size_t
cuda_attention_scratch_bytes_op(int B, int T, int NH, int C)
{
    return cuda_attention_scratch_bytes(B, T, NH, C, cuda_g.dtype);
}

static int
check_att(const char *op, const void *a, const void *b, const void *c, int B,
          int T, int C, int NH, int h0, int NH_all, float p)
{
    if (cuda_check_attention(&cuda_g.st, op, B, T, C, NH, h0, NH_all, p) != 0)
        return -1;
    if (B > 0 && (a == NULL || b == NULL || c == NULL))
        return cuda_bad_arg("a buffer is NULL");
    if ((T + ATT_ROWS - 1) / ATT_ROWS > 65535)
        return cuda_bad_arg("T = %d is too long (at most %d)", T,
                            65535 * ATT_ROWS);
    return 0;
}

void
cuda_attention_fwd(void *out, void *state, const void *qkv,
                   const float *key_bias, int B, int T, int C, int NH, int h0,
                   int NH_all, int causal, float p, uint64_t seed)
{
    struct att_args a;

    if (cuda_op_begin("attention_fwd") != 0 ||
        check_att("attention_fwd", out, state, qkv, B, T, C, NH, h0, NH_all,
                  p) != 0 ||
        B == 0)
        return;
    if (cuda_g.dtype != OPS_F32 &&
        cuda_sdpa_fwd(out, (float *)state, qkv, key_bias, B, T, C, NH, h0,
                      causal, p, seed) != 0)
        return; /* done by cuDNN, or failed */
    cuda_g.st.op = "attention_fwd";
    a = att_args(key_bias, B, T, C, NH, h0, NH_all, causal, p, seed);
    DISPATCH_DTYPE(
        cuda_g.dtype, T_,
        DISPATCH_HEAD(a.D, R, exact_fwd<T_, R>(out, (float *)state, qkv, a)));
}

void
cuda_attention_bwd(void *dqkv, void *scratch, const void *dout, const void *out,
                   const void *qkv, const void *state, const float *key_bias,
                   int B, int T, int C, int NH, int h0, int NH_all, int causal,
                   float p, uint64_t seed)
{
    struct att_args a;

    if (cuda_op_begin("attention_bwd") != 0 ||
        check_att("attention_bwd", dqkv, dout, qkv, B, T, C, NH, h0, NH_all,
                  p) != 0 ||
        B == 0)
        return;
    if (scratch == NULL || out == NULL || state == NULL) {
        cuda_bad_arg("scratch, out and state are needed");
        return;
    }
    if (cuda_g.dtype != OPS_F32 &&
        cuda_sdpa_bwd(dqkv, scratch, dout, out, qkv, (const float *)state,
                      key_bias, B, T, C, NH, h0, causal, p, seed) != 0)
        return;
    cuda_g.st.op = "attention_bwd";
    a = att_args(key_bias, B, T, C, NH, h0, NH_all, causal, p, seed);
    DISPATCH_DTYPE(
        cuda_g.dtype, T_,
        DISPATCH_HEAD(a.D, R,
                      exact_bwd<T_, R>(dqkv, (float *)scratch, dout, out, qkv,
                                       (const float *)state, a)));
}
