/* SPDX-License-Identifier: MIT */
/*
 * ops.h: the trainer's compute interface.  The model (model.c) is written
 * once against this table of functions; a backend fills it: cpu (OpenBLAS
 * SGEMM + OpenMP loops, ops_cpu.c) now, cuda later.  Every buffer passed
 * to an op lives in the backend's memory (host memory for cpu, device
 * memory for cuda) and is moved across only with upload()/download().
 *
 * Conventions, for every op:
 * - fp32, row-major, contiguous.  Sizes are element counts.
 * - A linear layer's weight is [out, in], as torch.nn.Linear stores it.
 * - Backward ops ACCUMULATE (+=) into every gradient they write, inputs'
 *   and parameters' alike; the model zeroes activation gradients before a
 *   backward pass and parameter gradients at the start of each step, so
 *   micro-batches accumulate.  A NULL gradient pointer means "not needed".
 * - Results are deterministic: the same inputs and thread count give the
 *   same bits (no atomics, no scheduling-dependent reduction order); any
 *   thread count gives results within fp32 rounding of each other.
 */
#ifndef TRAIN_OPS_H
#define TRAIN_OPS_H

#include <stddef.h>
#include <stdint.h>

enum ops_act {
    OPS_ACT_GELU,      /* exact: x * 0.5 * (1 + erf(x / sqrt(2))) */
    OPS_ACT_GELU_TANH, /* GPT-2's "gelu_new": tanh approximation */
    OPS_ACT_RELU,
    OPS_ACT_TANH, /* the pooler */
};

/* Dropout draws: element i of a tensor is kept iff
 * ops_dropout_uniform(seed, i) >= p, and kept elements are scaled by
 * 1 / (1 - p).  seed is derived by the model from (run seed, step, micro
 * step, layer, site), so the mask is recomputed in backward instead of
 * stored, and does not depend on the thread count.  p == 0 is the identity
 * (no draws). */

struct ops {
    const char *name; /* "cpu" */

    /* Memory.  alloc returns zeroed memory aligned to 64 bytes, or NULL;
     * what names the buffer ("parameters") in messages. */
    void *(*alloc)(size_t bytes, const char *what);
    void (*release)(void *p);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    /* Within backend memory: dst = src (no overlap); zero. */
    void (*copy)(void *dst, const void *src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    /* Free and total bytes of the backend's memory, and the most bytes
     * its alloc() buffers have held at once in this process (the CPU:
     * MemAvailable and MemTotal of the host). */
    void (*mem_info)(size_t *free_bytes, size_t *total_bytes,
                     size_t *peak_bytes);

    /* y[M,N] = x[M,K] . w[N,K]^T + b[N] (b may be NULL). */
    void (*linear_fwd)(float *y, const float *x, const float *w, const float *b,
                       int M, int K, int N);
    /* dx[M,K] += dy[M,N] . w[N,K];  dw[N,K] += dy^T . x;
     * db[N] += column sums of dy.  Any of dx, dw, db may be NULL. */
    void (*linear_bwd)(float *dx, float *dw, float *db, const float *dy,
                       const float *x, const float *w, int M, int K, int N);

    /* y[i,:] = table[ids[i],:] (accumulate == 0) or += (accumulate != 0),
     * for i < n; C columns.  A negative id reads as a row of zeros (a
     * token another tensor-parallel rank's shard of the vocab holds). */
    void (*embed_fwd)(float *y, const int32_t *ids, const float *table, int n,
                      int C, int accumulate);
    /* dtable[ids[i],:] += dy[i,:], except rows whose id == skip_id (the
     * padding_idx of torch.nn.Embedding; -1 for none) and negative ids. */
    void (*embed_bwd)(float *dtable, const float *dy, const int32_t *ids, int n,
                      int C, int32_t skip_id);

    /* y = (x - mean) * rstd * w + b per row of C; mean[n], rstd[n] saved
     * for backward (biased variance, as torch.nn.LayerNorm). */
    void (*layernorm_fwd)(float *y, float *mean, float *rstd, const float *x,
                          const float *w, const float *b, int n, int C,
                          float eps);
    void (*layernorm_bwd)(float *dx, float *dw, float *db, const float *dy,
                          const float *x, const float *w, const float *mean,
                          const float *rstd, int n, int C);

    /* y = f(x) elementwise; backward dx += dy * f'(x) from the input x. */
    void (*act_fwd)(float *y, const float *x, size_t n, enum ops_act act);
    void (*act_bwd)(float *dx, const float *dy, const float *x, size_t n,
                    enum ops_act act);

    /* y = a + b (y may alias a or b);  y += x. */
    void (*add)(float *y, const float *a, const float *b, size_t n);
    void (*accumulate)(float *y, const float *x, size_t n);
    /* x *= s. */
    void (*scale)(float *x, size_t n, float s);
    /* y += x on fp32 buffers (gradients, ZeRO's buffers). */
    void (*accumulate_f32)(float *y, const float *x, size_t n);

    /* Dropout: y = x * keep / (1 - p);  backward dx += dy * keep / (1 - p).
     * y may alias x. */
    void (*dropout_fwd)(float *y, const float *x, size_t n, float p,
                        uint64_t seed);
    void (*dropout_bwd)(float *dx, const float *dy, size_t n, float p,
                        uint64_t seed);

    /* Multi-head self-attention core.  qkv[B,T,3C] holds for each token
     * q (columns 0..C), k (C..2C) and v (2C..3C); head h uses columns
     * h*D..(h+1)*D of each, D = C / NH.  scores = q.k^T / sqrt(D) +
     * key_bias[b, key] (key_bias [B,T], additive, e.g. 0 / -10000 for
     * padding; may be NULL), causal != 0 masks keys after the query (as
     * -inf: probability exactly 0); att[B,NH,T,T] = softmax(scores) is
     * saved for backward; probs dropped with (p, seed) as above, then
     * out[B,T,C] = probs . v with heads side by side.  The heads are
     * heads h0..h0+NH-1 of a model with NH_all (tensor parallelism splits
     * them): probability (b, h, i, j) draws dropout element
     * ((b * NH_all + h0 + h) * T + i) * T + j, so every split draws the
     * masks of the whole model (h0 = 0, NH_all = NH without a split). */
    void (*attention_fwd)(float *out, float *att, const float *qkv,
                          const float *key_bias, int B, int T, int C, int NH,
                          int h0, int NH_all, int causal, float p,
                          uint64_t seed);
    /* dqkv[B,T,3C] += the gradient of out given dout[B,T,C]; scratch holds
     * B*NH*T*T floats (contents undefined on return). */
    void (*attention_bwd)(float *dqkv, float *scratch, const float *dout,
                          const float *qkv, const float *att, int B, int T,
                          int C, int NH, int h0, int NH_all, int causal,
                          float p, uint64_t seed);

    /* Softmax cross-entropy per row of logits[n,V]: losses[i] =
     * logsumexp(row) - row[t_i] for targets t_i >= 0, 0 where t_i < 0
     * (ignored).  If dlogits is not NULL it is SET (not accumulated) to
     * (softmax(row) - onehot(t_i)) * dscale on valid rows and 0 on ignored
     * ones; it may alias logits. */
    void (*xent)(float *losses, float *dlogits, const float *logits,
                 const int32_t *targets, int n, int V, float dscale);

    /* Vocab-parallel cross-entropy (Megatron): each tensor-parallel rank
     * holds columns v0..v0+V-1 of the logits, of which the first V_valid
     * are real (the rest pad the vocab to a multiple of the ranks and are
     * ignored).  Per row: xent_max gives the shard's max (-inf if
     * V_valid is 0), to be max-reduced over the ranks; xent_partial, given
     * that global max, sums[2i] = sum of exp(x - max) over the valid
     * columns and sums[2i+1] = the target's logit if this shard holds it,
     * else 0, to be sum-reduced; xent_finish then sets losses as xent does
     * (max + log(sum) - target logit; 0 where t < 0) and, if dlogits is
     * not NULL, this shard's part of the gradient (0 on pad columns; may
     * alias logits). */
    void (*xent_max)(float *rowmax, const float *logits, int n, int V,
                     int V_valid);
    void (*xent_partial)(double *sums, const float *logits, const float *rowmax,
                         const int32_t *targets, int n, int V, int V_valid,
                         int v0);
    void (*xent_finish)(float *losses, float *dlogits, const float *logits,
                        const float *rowmax, const double *sums,
                        const int32_t *targets, int n, int V, int V_valid,
                        int v0, float dscale);

    /* y[i,:] = x[rows[i],:] for i < n;  backward dx[rows[i],:] += dy[i,:]
     * (rows may repeat: summed in i order). */
    void (*gather_rows)(float *y, const float *x, const int32_t *rows, int n,
                        int C);
    void (*scatter_add_rows)(float *dx, const float *dy, const int32_t *rows,
                             int n, int C);

    /* Sum of squares of x[0..n), accumulated in double, returned to the
     * host (for the global gradient norm). */
    double (*sumsq)(const float *x, size_t n);

    /* One AdamW step on n parameters as torch.optim.AdamW (decoupled
     * decay): p *= 1 - lr*wd; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
     * p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with
     * g = grad * grad_scale (the clipping factor); t >= 1 is the step. */
    void (*adamw)(float *p, const float *grad, float *m, float *v, size_t n,
                  float lr, float b1, float b2, float eps, float wd,
                  float grad_scale, int t);
};

/* The uniform draw in [0, 1) for element i of a dropout site: the top 24
 * bits of splitmix64(seed ^ splitmix64(i)), times 2^-24.  Pure; backends
 * must give exactly these bits. */
static inline uint64_t
ops_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static inline float
ops_dropout_uniform(uint64_t seed, uint64_t i)
{
    return (float)(ops_splitmix64(seed ^ ops_splitmix64(i)) >> 40) *
           (1.0f / 16777216.0f);
}

/* The CPU backend: OpenBLAS SGEMM and OpenMP loops.  threads <= 0 keeps
 * OpenMP's default (OMP_NUM_THREADS or the cores). */
const struct ops *ops_cpu(int threads);

#endif /* TRAIN_OPS_H */
