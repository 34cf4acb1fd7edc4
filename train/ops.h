/* SPDX-License-Identifier: MIT */
/*
 * ops.h: the trainer's compute interface (version 2: a device memory
 * model).  The model (train/model/) is written once against this table of
 * functions; a backend fills it: cpu (OpenBLAS SGEMM + OpenMP loops,
 * train/cpu/) and cuda (cuBLASLt, cuDNN and small kernels, train/cuda/).
 * The backend is chosen in one place, ops_open() (train/ops_select.c).
 *
 * Memory.  Every buffer passed to an op lives in the backend's memory
 * (host memory for cpu, device memory for cuda), is allocated by alloc()
 * and crosses to the host only through upload*()/download().  Ops are
 * queued in order on one compute queue (a CUDA stream; the CPU runs them
 * at once); the host never waits except in sync() and download().  An op
 * never exits: the first failure (an asynchronous CUDA fault, a cuBLAS
 * error, out of memory) is recorded, later ops become no-ops, and sync()
 * and download() return -1 with the message in error().  The trainer
 * calls sync() at its logging interval, so a step runs with no host round
 * trip.
 *
 * Types.  `enum ops_dtype` names element types.  Each backend has a
 * compute dtype (dtype below: F32, BF16 or F16 as --use_amp asks; the CPU
 * emulates the 16-bit ones, every op computing in fp32 and rounding its
 * 16-bit outputs): activations, activation gradients and the
 * parameters' compute copy are of that type, and are passed as `void *`
 * ("act" in the comments).  Parameter gradients, the fp32 master weights,
 * the AdamW moments, LayerNorm statistics, losses and norms are always
 * `float` (or `double` where it says so), whatever the compute dtype.
 * Sizes are element counts; row-major, contiguous.  A linear layer's
 * weight is [out, in], as torch.nn.Linear stores it.
 *
 * Conventions, for every op:
 * - Backward ops ACCUMULATE (+=) into every gradient they write, inputs'
 *   and parameters' alike; the model zeroes activation gradients before a
 *   backward pass and parameter gradients at the start of each step, so
 *   micro-batches accumulate (in fp32).  A NULL gradient means "not
 *   needed".
 * - Results are deterministic: the same inputs and thread count give the
 *   same bits (no float atomics, no scheduling-dependent reduction order);
 *   any thread count gives results within fp32 rounding of each other.
 * - Every op of the cuda backend has its twin in the cpu backend, and the
 *   two are compared (fp32, TF32 off) by tests/gpu/ops_compare.c.
 */
#ifndef TRAIN_OPS_H
#define TRAIN_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ops_dtype { OPS_F32, OPS_BF16, OPS_F16 };

enum ops_act {
    OPS_ACT_GELU,      /* exact: x * 0.5 * (1 + erf(x / sqrt(2))) */
    OPS_ACT_GELU_TANH, /* GPT-2's "gelu_new": tanh approximation */
    OPS_ACT_RELU,
    OPS_ACT_TANH, /* the pooler */
};

/* Tensor offsets and shard bounds in the flat buffers are multiples of
 * OPS_ALIGN elements (vectorised kernels, 16-byte loads of bf16; but a
 * tensor that continues another, as ERNIE's key after its query in one
 * fused linear, follows it directly), and a
 * vocabulary is padded to a multiple of OPS_VOCAB_ALIGN rows in each
 * rank's local shape (Megatron's rule; the pad rows are never saved, and
 * their logits are ignored). */
#define OPS_ALIGN       64
#define OPS_VOCAB_ALIGN 128

/* The scalars of one optimizer step, in backend memory: written by
 * step_prepare() from the gradients' sum of squares, read by adamw(), never
 * read by the host inside a step.  The trainer reads a copy (download) at
 * its logging interval, and saves it in checkpoints. */
struct ops_step {
    double sumsq;       /* IN: the gradients' global sum of squares (of the
                           scaled gradients); step_prepare() divides it by
                           loss_scale^2, so it then reads as the true
                           gradients' (the norm the log shows) */
    float grad_scale;   /* OUT: multiply gradients by this (clip / loss
                           scale); 0 when the step is skipped */
    int32_t skip;       /* OUT: 1 if the gradients are not finite */
    int32_t t;          /* AdamW's step count (bias correction): advanced
                           by step_finish() when not skipped */
    float loss_scale;   /* fp16: the loss scale (the gradients of the loss
                           times this: xent()'s loss_scale); 1 otherwise */
    int32_t good_steps; /* finite steps in a row since the scale last
                           changed (Paddle's incr_count) */
    int32_t n_skipped;  /* steps skipped so far */
    int32_t bad_steps;  /* non-finite steps since the scale last shrank
                           (Paddle's decr_count) */
    int64_t bad_step;   /* the first global step whose loss was not finite,
                           -1 if none (loss_check()) */
};

/* Settings of step_prepare(): clipping and fp16's dynamic loss scaling
 * (Paddle's GradScaler, which PaddleNLP builds from --scale_loss:
 * incr_every_n_steps, decr_every_n_nan_or_inf, incr_ratio, decr_ratio). */
struct ops_step_opts {
    float max_norm;   /* > 0: clip to this global norm (Paddle's rule) */
    int dynamic;      /* 1: dynamic loss scaling (fp16) */
    int incr_every;   /* grow the scale after this many finite steps */
    float incr_ratio; /* by this factor */
    int decr_every;   /* shrink it after this many non-finite steps */
    float decr_ratio; /* by this factor */
    float min_scale;  /* never below this */
};

/* What a backend's device is (device_info()), for the log and MFU's
 * peak. */
struct ops_device_info {
    char name[256]; /* "NVIDIA H100 80GB HBM3"; "cpu" */
    int cc;         /* compute capability, major * 10 + minor; 0: CPU */
    int sms;        /* streaming multiprocessors */
    int clock_khz;  /* their maximum clock */
    int tf32;       /* fp32 GEMMs in TF32 */
};

struct ops {
    const char *name;     /* "cpu", "cuda" */
    enum ops_dtype dtype; /* the compute dtype */
    int device;           /* the GPU's ordinal; -1 for the CPU */

    /* ---- status */
    /* Wait for every queued op; 0, or -1 once an op has failed. */
    int (*sync)(void);
    /* The first failure's message ("" if none), e.g. "cuda: out of
     * memory: alloc of 1.50 GiB (activations) with 0.80 GiB free of 79.1
     * GiB" or "cuda: an illegal memory access was encountered (detected
     * after layernorm_bwd)".  Static storage. */
    const char *(*error)(void);
    /* A notice for the log, or NULL if none: a fallback the backend took
     * without failing (e.g. "cuda: attention: cuDNN's fused attention is
     * not used (...): the exact kernel computes it").  Each notice is
     * returned once; static storage, valid until the next call. */
    const char *(*notice)(void);
    /* Device memory: free and total bytes, and the most this process has
     * held; the CPU reports the host's (free = MemAvailable). */
    void (*mem_info)(size_t *free_bytes, size_t *total_bytes,
                     size_t *peak_bytes);
    void (*device_info)(struct ops_device_info *d);

    /* ---- memory */
    /* Zeroed memory aligned to 256 bytes, or NULL (error() says how much
     * was asked and what is free); what names the buffer in messages. */
    void *(*alloc)(size_t bytes, const char *what);
    void (*release)(void *p); /* NULL: nothing */
    /* Page-locked host memory (cudaHostAlloc; malloc on the CPU) for
     * upload_async(); NULL on failure. */
    void *(*host_alloc)(size_t bytes);
    void (*host_release)(void *p);
    /* Synchronous copies between host memory and backend memory: download
     * waits for the queue first; returns 0 or -1 (a failed op, before or
     * in it). */
    int (*download)(void *host_dst, const void *src, size_t bytes);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    /* An upload from page-locked memory (host_alloc) on the copy queue,
     * overlapping the compute queue.  It starts once the compute ops
     * queued before the last upload_wait() are done (so dst may be a
     * buffer they read), not waiting for the later ones: with two
     * buffers taken in turn, the next micro-batch goes up while the
     * current one computes.  upload_wait() orders the compute queue
     * after every upload_async() so far, and returns once the uploads
     * queued before the previous upload_wait() are complete, so the
     * pinned memory of the last but one may be written again (a wait on
     * the host only when the device is that far behind).  Otherwise the
     * host must not touch pinned_src until the next sync() (or
     * download). */
    void (*upload_async)(void *dst, const void *pinned_src, size_t bytes);
    void (*upload_wait)(void);
    /* Within backend memory: dst = src (no overlap); zero. */
    void (*copy)(void *dst, const void *src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    /* dst[i] = (dst_type)src[i], round to nearest even. */
    void (*cast)(void *dst, enum ops_dtype dst_type, const void *src,
                 enum ops_dtype src_type, size_t n);
    /* The compute queue's handle (a cudaStream_t; NULL on the CPU), for
     * the comm backend, whose collectives are queued after the ops before
     * them. */
    void *(*queue)(void);

    /* ---- layers (act: the compute dtype) */
    /* y[M,N] = x[M,K] . w[N,K]^T + b[N] (b may be NULL); act y, x, w,
     * b. */
    void (*linear_fwd)(void *y, const void *x, const void *w, const void *b,
                       int M, int K, int N);
    /* linear_fwd then y = f(pre): pre[M,N] keeps the linear's output for
     * backward (cuBLASLt's GELU_AUX epilogue; pre may be y only for
     * inference). */
    void (*linear_act_fwd)(void *y, void *pre, const void *x, const void *w,
                           const void *b, int M, int K, int N,
                           enum ops_act act);
    /* dx[M,K] += dy[M,N] . w[N,K] (act);  dw[N,K] += dy^T . x and db[N]
     * += column sums of dy (fp32).  Any of dx, dw, db may be NULL. */
    void (*linear_bwd)(void *dx, float *dw, float *db, const void *dy,
                       const void *x, const void *w, int M, int K, int N);

    /* y[i,:] = table[ids[i],:] (accumulate == 0) or += (accumulate != 0),
     * for i < n; C columns; act y and table.  A negative id reads as a row
     * of zeros (a token another tensor-parallel rank's shard holds). */
    void (*embed_fwd)(void *y, const int32_t *ids, const void *table, int n,
                      int C, int accumulate);
    /* dtable[ids[i],:] += dy[i,:] (fp32 dtable, act dy), except rows whose
     * id == skip_id (-1 for none) and negative ids; summed in i order for
     * each row (deterministic, no atomics). */
    void (*embed_bwd)(float *dtable, const void *dy, const int32_t *ids, int n,
                      int C, int32_t skip_id);

    /* y = (x - mean) * rstd * w + b per row of C (act y, x, w, b); fp32
     * mean[n], rstd[n] saved for backward (biased variance, as
     * torch.nn.LayerNorm; statistics in fp32). */
    void (*layernorm_fwd)(void *y, float *mean, float *rstd, const void *x,
                          const void *w, const void *b, int n, int C,
                          float eps);
    /* r = a + bb, then y = layernorm(r) (the residual fused; r may alias
     * a). */
    void (*residual_layernorm_fwd)(void *r, void *y, float *mean, float *rstd,
                                   const void *a, const void *bb, const void *w,
                                   const void *b, int n, int C, float eps);
    /* dx += (act), dw += and db += (fp32). */
    void (*layernorm_bwd)(void *dx, float *dw, float *db, const void *dy,
                          const void *x, const void *w, const float *mean,
                          const float *rstd, int n, int C);

    /* y = f(x) elementwise; backward dx += dy * f'(x) from the input x. */
    void (*act_fwd)(void *y, const void *x, size_t n, enum ops_act act);
    void (*act_bwd)(void *dx, const void *dy, const void *x, size_t n,
                    enum ops_act act);

    /* y = a + b (y may alias a or b);  y += x;  x *= s (act). */
    void (*add)(void *y, const void *a, const void *b, size_t n);
    void (*accumulate)(void *y, const void *x, size_t n);
    void (*scale)(void *x, size_t n, float s);
    /* The same on fp32 buffers (gradients, ZeRO's buffers). */
    void (*accumulate_f32)(float *y, const float *x, size_t n);
    void (*scale_f32)(float *x, size_t n, float s);

    /* Dropout: y = x * keep / (1 - p);  backward dx += dy * keep / (1 -
     * p); y may alias x; element i is kept iff ops_dropout_uniform(seed,
     * i) >= p (below), on every backend. */
    void (*dropout_fwd)(void *y, const void *x, size_t n, float p,
                        uint64_t seed);
    void (*dropout_bwd)(void *dx, const void *dy, size_t n, float p,
                        uint64_t seed);

    /* Multi-head self-attention core.  qkv[B,T,3C] holds for each token
     * q (columns 0..C), k (C..2C) and v (2C..3C); head h uses columns
     * h*D..(h+1)*D of each, D = C / NH.  scores = q.k^T / sqrt(D) +
     * key_bias[b, key] (fp32 [B,T], additive, e.g. 0 / -10000 for
     * padding; may be NULL), causal != 0 masks keys after the query;
     * probabilities dropped with (p, seed), then out[B,T,C] = probs . v
     * with heads side by side.  The heads are h0..h0+NH-1 of a model with
     * NH_all (tensor parallelism splits them): probability (b, h, i, j)
     * draws dropout element ((b * NH_all + h0 + h) * T + i) * T + j.
     * state (attention_state_bytes()) is what backward needs, the
     * backend's choice: the CPU keeps the probabilities [B,NH,T,T], CUDA
     * the rows' log-sum-exp [B,NH,T] of a flash-style kernel.  (cuDNN's
     * fused attention, used for bf16/f16, draws its own dropout bits:
     * train(1) says so.) */
    size_t (*attention_state_bytes)(int B, int T, int NH);
    size_t (*attention_scratch_bytes)(int B, int T, int NH, int C);
    void (*attention_fwd)(void *out, void *state, const void *qkv,
                          const float *key_bias, int B, int T, int C, int NH,
                          int h0, int NH_all, int causal, float p,
                          uint64_t seed);
    /* dqkv[B,T,3C] += the gradient given dout[B,T,C]; out is the
     * forward's output; scratch (attention_scratch_bytes()) is left
     * undefined. */
    void (*attention_bwd)(void *dqkv, void *scratch, const void *dout,
                          const void *out, const void *qkv, const void *state,
                          const float *key_bias, int B, int T, int C, int NH,
                          int h0, int NH_all, int causal, float p,
                          uint64_t seed);

    /* Attention over a key/value cache, for generation (no dropout, no
     * backward).  Sequence b < B adds n tokens, at positions pos[b] ..
     * pos[b] + n - 1 (pos: int32 [B] in backend memory): qkv[B,n,3C] as
     * attention_fwd's.  Their keys and values are first written into the
     * caches kc and vc, [T_max, S, C] each (act; the key of sequence b at
     * position t is row t * S + b, S >= B), then out[B,n,C] = softmax(q .
     * k^T / sqrt(D)) . v over the keys of positions 0 .. the query's own
     * (causal), heads side by side, D = C / NH.  The rows below pos[b]
     * must have been written by earlier calls; pos[b] + n <= T_max.  A
     * prompt run at once or a token at a time gives the same results
     * within fp32 rounding. */
    void (*attention_kv_fwd)(void *out, void *kc, void *vc, const void *qkv,
                             const int32_t *pos, int B, int n, int C, int NH,
                             int S, int T_max);

    /* Softmax cross-entropy per row of logits[n,V] (act; the row's
     * statistics in fp32), of whose V columns the first V_valid are real
     * (the rest pad the vocabulary: ignored): losses[i] = logsumexp(row)
     * - row[t_i] (fp32) for targets t_i >= 0, 0 where t_i < 0 (ignored).
     * If dlogits is not NULL it is SET to (softmax(row) - onehot(t_i)) *
     * dscale * *loss_scale on valid rows, 0 on ignored rows and pad
     * columns; it may alias logits (the fused classifier: the
     * probabilities are never written).  loss_scale is fp16's loss scale
     * in backend memory (struct ops_step's), applied before the gradient
     * is rounded to the dtype; NULL: 1. */
    void (*xent)(float *losses, void *dlogits, const void *logits,
                 const int32_t *targets, int n, int V, int V_valid,
                 float dscale, const float *loss_scale);
    /* Vocab-parallel cross-entropy (Megatron): each tensor-parallel rank
     * holds columns v0..v0+V-1 of the logits, of which the first V_valid
     * are real.  xent_max: each row's max over this shard (-inf if
     * V_valid is 0), to be max-reduced over the ranks; xent_partial,
     * given that global max: sums[2i] = sum of exp(x - max) over the
     * valid columns, sums[2i+1] = the target's logit if this shard holds
     * it, else 0, to be sum-reduced; xent_finish sets losses as xent does
     * and, if dlogits is not NULL, this shard's gradient (0 on pad
     * columns; may alias logits; times *loss_scale as in xent). */
    void (*xent_max)(float *rowmax, const void *logits, int n, int V,
                     int V_valid);
    void (*xent_partial)(double *sums, const void *logits, const float *rowmax,
                         const int32_t *targets, int n, int V, int V_valid,
                         int v0);
    void (*xent_finish)(float *losses, void *dlogits, const void *logits,
                        const float *rowmax, const double *sums,
                        const int32_t *targets, int n, int V, int V_valid,
                        int v0, float dscale, const float *loss_scale);

    /* y[i,:] = x[rows[i],:] for i < n;  backward dx[rows[i],:] += dy[i,:]
     * (rows may repeat: summed in i order); act. */
    void (*gather_rows)(void *y, const void *x, const int32_t *rows, int n,
                        int C);
    void (*scatter_add_rows)(void *dx, const void *dy, const int32_t *rows,
                             int n, int C);

    /* ---- reductions kept in backend memory */
    /* acc[0] += scale * (the sum of x[0..n)), summed in double in a fixed
     * order (a micro-batch's losses into the step's sums). */
    void (*sum_acc)(double *acc, const float *x, size_t n, double scale);
    /* acc[0] += the sum of squares of x[0..n), in double, in a fixed order
     * (the gradient norm; called once per range of the flat buffer). */
    void (*sumsq_acc)(double *acc, const float *x, size_t n);
    /* If loss (a double in backend memory) is not finite and
     * st->bad_step is -1, st->bad_step = step (the NaN check, read by the
     * host at its next logging interval). */
    void (*loss_check)(struct ops_step *st, const double *loss, int64_t step);
    /* From st->sumsq (all-reduced by the caller): st->skip (not finite;
     * st->n_skipped counts it), st->grad_scale = (1 / loss_scale) x
     * max_norm / max(norm, max_norm) with norm = sqrt(sumsq) / loss_scale
     * (Paddle's ClipGradByGlobalNorm; no clipping when max_norm <= 0),
     * computed in double and rounded once; sumsq /= loss_scale^2; then
     * with o->dynamic the loss scale's update, Paddle's: a non-finite step
     * zeroes good_steps and, the decr_every-th in a row, multiplies the
     * scale by decr_ratio (not below min_scale); a finite one zeroes
     * bad_steps and, the incr_every-th in a row, multiplies it by
     * incr_ratio (if that stays finite). */
    void (*step_prepare)(struct ops_step *st, const struct ops_step_opts *o);

    /* ---- optimizer */
    /* One AdamW step on n parameters as torch.optim.AdamW (decoupled
     * decay) unless st->skip: p *= 1 - lr*wd (wd only where decay);
     * m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g; p -= (lr / (1 - b1^t))
     * * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with g = grad *
     * st->grad_scale and t = st->t + 1.  p, grad, m, v fp32; if pc is not
     * NULL it receives the updated p in the compute dtype (the compute
     * copy).  Does not advance st->t: step_finish() does, once for all
     * the calls of a step. */
    void (*adamw)(float *p, void *pc, const float *grad, float *m, float *v,
                  size_t n, float lr, float b1, float b2, float eps, float wd,
                  const struct ops_step *st);
    /* st->t += 1 unless st->skip (after the step's adamw calls). */
    void (*step_finish)(struct ops_step *st);

    /* ---- teardown */
    void (*close)(void);
};

/* The uniform draw in [0, 1) for element i of a dropout site: the top 24
 * bits of splitmix64(seed ^ splitmix64(i)), times 2^-24.  Pure; every
 * backend gives exactly these bits (the CUDA kernels call these very
 * functions: OPS_HD compiles them for the device too). */
#ifdef __CUDACC__
#    define OPS_HD __host__ __device__
#else
#    define OPS_HD
#endif

static inline OPS_HD uint64_t
ops_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static inline OPS_HD float
ops_dropout_uniform(uint64_t seed, uint64_t i)
{
    return (float)(ops_splitmix64(seed ^ ops_splitmix64(i)) >> 40) *
           (1.0f / 16777216.0f);
}

/* The size of an element of t. */
size_t ops_dtype_size(enum ops_dtype t);
const char *ops_dtype_name(enum ops_dtype t); /* "float32", "bfloat16", ... */

/* What ops_open() is asked for. */
struct ops_request {
    const char *device;   /* "cpu", "cuda" or "auto" (--device) */
    enum ops_dtype dtype; /* compute dtype (the CPU emulates BF16, F16) */
    int local_rank;       /* this process's rank on its node: its GPU is
                             local_rank % the GPUs visible */
    int threads;          /* CPU threads (0: OpenMP's default) */
    int deterministic;    /* CUDA: pinned cuBLASLt algorithms, a fixed
                             workspace, deterministic attention backward */
    int tf32;             /* CUDA, fp32: allow TF32 in GEMMs (off for the
                             comparisons with the CPU) */
};

/* ops_open: the backend for r, chosen here and nowhere else ("auto":
 * CUDA when this build has it and a GPU is visible, else the CPU).  On
 * success err holds why this one (for the caller's log: "--device auto:
 * no GPU is visible (...); the CPU"); else NULL with the message in err:
 * "--device cuda: this build has no CUDA backend (make config shows why)",
 * "--device cuda: no GPU is visible (cudaGetDeviceCount: ...)". */
const struct ops *ops_open(const struct ops_request *r, char *err,
                           size_t errlen);

/* The backends (ops_open() calls them): the CPU (always built; threads
 * <= 0 keeps OpenMP's default; a 16-bit dtype is emulated) and CUDA
 * (train/cuda/, in builds with CUDA; else a stub that says why). */
const struct ops *ops_cpu(int threads, enum ops_dtype dtype);
const struct ops *ops_cuda(const struct ops_request *r, char *err,
                           size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_OPS_H */
