/* SPDX-License-Identifier: MIT */
/*
 * cuda_host.h: the CUDA backend's host-side logic, in plain C so that it
 * is built and unit-tested on machines without a GPU
 * (tests/unit/test_train_cuda.c): the sticky error status and its
 * messages, byte counts for people, the pointer -> size map behind the
 * memory report, the row-major -> cuBLASLt mapping of the three GEMMs of a
 * linear layer, the cache of pinned cuBLASLt algorithms, the shape checks
 * every op runs first, the attention buffers' sizes and when cuDNN's fused
 * attention is used, and the optimizer's step arithmetic (shared with the
 * device code through CUDA_HD).  Nothing here calls CUDA.
 */
#ifndef TRAIN_CUDA_HOST_H
#define TRAIN_CUDA_HOST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* Functions compiled for both the host and the device (by nvcc). */
#ifdef __CUDACC__
#    define CUDA_HD __host__ __device__
#else
#    define CUDA_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ status */

#define CUDA_MSG_MAX 512

/* The backend's sticky error: the first failure's message, after which
 * every op is a no-op.  op names the entry point running (a static
 * string) and queued the last one that queued device work, so that a
 * fault found later (at sync, download) can say after which op it was
 * detected. */
struct cuda_status {
    int failed;
    const char *op, *queued;
    char msg[CUDA_MSG_MAX];
};

/* cuda_status_fail: record "cuda: " and the message (printf's fmt), if no
 * failure was recorded before; later failures are dropped (the first
 * explains the rest).  Returns -1. */
int cuda_status_fail(struct cuda_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* cuda_status_call: a library call that failed, as "cuda: OP: EXPR:
 * WHY (FILE:LINE)", recorded as cuda_status_fail() does.  Returns -1. */
int cuda_status_call(struct cuda_status *st, const char *expr, const char *why,
                     const char *file, int line);

/* cuda_status_async: an error found at a synchronisation point (sync,
 * download) or in a later call, that a kernel of an earlier op caused:
 * "cuda: WHY (detected after QUEUED; CUDA_LAUNCH_BLOCKING=1 names the op
 * that caused it)".  Returns -1. */
int cuda_status_async(struct cuda_status *st, const char *why);

/* ------------------------------------------------------------ memory */

/* cuda_format_bytes: n as "512 bytes", "12.0 KiB", "1.50 GiB", "79.1 GiB"
 * (three significant digits) into buf.  Returns buf. */
char *cuda_format_bytes(char *buf, size_t len, size_t n);

/* cuda_oom_message: the out-of-memory message of an alloc() of asked
 * bytes named what (may be NULL) when free of total bytes were free,
 * without the "cuda: " prefix: "out of memory: alloc of 1.50 GiB
 * (activations) with 0.80 GiB free of 79.1 GiB; ...". */
void cuda_oom_message(char *buf, size_t len, size_t asked, const char *what,
                      size_t free_bytes, size_t total_bytes);

/* The sizes of the live allocations, so that release() can subtract
 * them: an open-addressing table of pointer -> size, grown as needed. */
struct cuda_ptr_map {
    uintptr_t *keys; /* 0: empty, 1: deleted */
    size_t *sizes;
    size_t cap, n, used; /* used: live and deleted slots */
};

/* cuda_ptr_map_put: record p (not NULL) -> size.  0, or -1 (no memory). */
int cuda_ptr_map_put(struct cuda_ptr_map *m, const void *p, size_t size);
/* cuda_ptr_map_take: remove p and return its size in *size; 0, or -1 if p
 * is not in the map. */
int cuda_ptr_map_take(struct cuda_ptr_map *m, const void *p, size_t *size);
void cuda_ptr_map_release(struct cuda_ptr_map *m);

/* cuda_ptr_align: the largest power of two (at most 256) that divides the
 * address p; 256 for NULL. */
unsigned cuda_ptr_align(const void *p);

/* ------------------------------------------------------------ GEMMs */

/* The three GEMMs of a linear layer y[M,N] = x[M,K] . w[N,K]^T (row-major,
 * ops.h), in cuBLASLt's column-major terms.  A row-major [r,c] matrix is a
 * column-major [c,r] one with the same leading dimension, so:
 *   FWD: y^T[N,M] = w^T... as D(N x M) = op_T(A = w: K x N, ld K) .
 *        op_N(B = x: K x M, ld K)
 *   DX:  dx^T[K,M] += D(K x M) = op_N(A = w: K x N, ld K) .
 *        op_N(B = dy: N x M, ld N)
 *   DW:  dw^T[K,N] += D(K x N) = op_N(A = x: K x M, ld K) .
 *        op_T(B = dy: N x M, ld N) */
enum cuda_gemm_kind { CUDA_GEMM_FWD, CUDA_GEMM_DX, CUDA_GEMM_DW };

/* Which of the layer's buffers an operand is. */
enum cuda_gemm_operand { CUDA_OPND_X, CUDA_OPND_W, CUDA_OPND_DY };

struct cuda_gemm_shape {
    int trans_a, trans_b;              /* 1: the operand is transposed */
    int64_t m, n, k;                   /* D is m x n, the sum runs over k */
    int64_t a_rows, a_cols, lda;       /* A as stored (column-major) */
    int64_t b_rows, b_cols, ldb;       /* B as stored */
    int64_t ldd;                       /* C and D: m x n */
    enum cuda_gemm_operand a_is, b_is; /* the buffers of A and B */
};

void cuda_gemm_shape(enum cuda_gemm_kind kind, int M, int K, int N,
                     struct cuda_gemm_shape *s);

/* What selects a cuBLASLt algorithm: the same key always gets the same
 * (cached) algorithm, so results are bit-identical run to run.  Every
 * field is an int32_t, so the struct has no padding to hash. */
struct cuda_gemm_key {
    int32_t kind, m, n, k;
    int32_t dtype_ab, dtype_cd, compute, epilogue;
    int32_t beta_one;
    int32_t align; /* log2 of the alignments of A, B, C, D, bias/aux, 4 bits
                      each */
};

/* An algorithm, as cuBLASLt's opaque cublasLtMatmulAlgo_t (64 bytes). */
#define CUDA_GEMM_ALGO_BYTES 64

struct cuda_gemm_entry {
    struct cuda_gemm_key key;
    unsigned char algo[CUDA_GEMM_ALGO_BYTES];
    size_t workspace;
    int used;
};

struct cuda_gemm_cache {
    struct cuda_gemm_entry *e;
    size_t cap, n;
};

/* cuda_gemm_align_code: the align field of a key from the five
 * alignments (bytes, powers of two). */
int32_t cuda_gemm_align_code(unsigned a, unsigned b, unsigned c, unsigned d,
                             unsigned extra);
/* cuda_gemm_cache_find: the entry of key, or NULL. */
const struct cuda_gemm_entry *
cuda_gemm_cache_find(const struct cuda_gemm_cache *c,
                     const struct cuda_gemm_key *key);
/* cuda_gemm_cache_put: add key's algorithm (algo: CUDA_GEMM_ALGO_BYTES).
 * 0, or -1 (no memory). */
int cuda_gemm_cache_put(struct cuda_gemm_cache *c,
                        const struct cuda_gemm_key *key, const void *algo,
                        size_t workspace);
void cuda_gemm_cache_release(struct cuda_gemm_cache *c);

/* ------------------------------------------------------------ shapes */

/* Each op checks its arguments before it queues anything; a bad one is
 * recorded in st ("cuda: OP: WHAT") and the check returns -1.  The
 * backend calls these; the unit test calls them on good and bad
 * arguments. */
int cuda_check_rows(struct cuda_status *st, const char *op, long long n,
                    long long C);
int cuda_check_linear(struct cuda_status *st, const char *op, int M, int K,
                      int N);
int cuda_check_dropout(struct cuda_status *st, const char *op, float p);
int cuda_check_attention(struct cuda_status *st, const char *op, int B, int T,
                         int C, int NH, int h0, int NH_all, float p);
int cuda_check_xent(struct cuda_status *st, const char *op, int n, int V,
                    int V_valid, int v0);

/* The fp32 (exact) attention kernel keeps each lane's part of a head in
 * registers: heads up to this size. */
#define CUDA_ATT_MAX_HEAD 256

/* ------------------------------------------------------------ attention */

/* attention_state_bytes(): the rows' log-sum-exp, [B,NH,T] floats. */
size_t cuda_attention_state_bytes(int B, int T, int NH);
/* attention_scratch_bytes() for compute dtype dt: the exact kernel's
 * rowsum(dout * out) [B,NH,T] floats, and with bf16/f16 also room for
 * cuDNN's dq, dk, dv [B,T,3C] (cuDNN sets them; the op accumulates). */
size_t cuda_attention_scratch_bytes(int B, int T, int NH, int C,
                                    enum ops_dtype dt);

/* cuda_sdpa_unsupported: NULL when cuDNN's fused attention handles the
 * shape (compute dtype dt, head size D, cuDNN version, compute capability
 * major*10+minor), else why not (a static string), so the op falls back
 * to the exact kernel and says so once. */
const char *cuda_sdpa_unsupported(enum ops_dtype dt, int T, int D,
                                  long cudnn_version, int sm);

/* ------------------------------------------------------------ optimizer */

/* The step's scalars (ops.h, step_prepare), as the CPU backend computes
 * them (train/cpu/ops_cpu.c, cpu_step_prepare), bit for bit: Paddle's
 * ClipGradByGlobalNorm, clip = max_norm / max(norm, max_norm) of the true
 * norm (the loss scale divided out), in double and rounded once; sumsq
 * divided by the loss scale squared; with o->dynamic Paddle's update of
 * the loss scale (AmpScaler._update).  A non-finite sum skips the step.
 * (x - x == 0 tests finiteness on both sides without <math.h>'s macro.) */
static inline CUDA_HD void
cuda_step_prepare_math(struct ops_step *st, const struct ops_step_opts *o)
{
    double scale = st->loss_scale, ss = st->sumsq;

    if (!((ss - ss) == 0.0)) {
        st->skip = 1;
        st->grad_scale = 0.0f;
        st->n_skipped += 1;
    } else {
        double norm = sqrt(ss) / scale;
        double clip = o->max_norm > 0
                          ? o->max_norm / fmax(norm, (double)o->max_norm)
                          : 1.0;

        st->skip = 0;
        st->grad_scale = (float)(clip / scale);
    }
    st->sumsq = ss / (scale * scale);
    if (!o->dynamic)
        return;
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

            if ((s - s) == 0.0f)
                st->loss_scale = s;
            st->good_steps = 0;
        }
    }
}

/* The scalars of an AdamW step t (>= 1) as the CPU computes them: the bias
 * corrections, step size and decay in double (torch's Python floats),
 * rounded to float once. */
struct cuda_adamw_consts {
    float step, bc2_sqrt, decay, c1, c2;
};

static inline CUDA_HD struct cuda_adamw_consts
cuda_adamw_consts(float lr, float b1, float b2, float wd, int t)
{
    struct cuda_adamw_consts k;

    k.step = (float)(lr / (1.0 - pow(b1, (double)t)));
    k.bc2_sqrt = (float)sqrt(1.0 - pow(b2, (double)t));
    k.decay = (float)(1.0 - (double)lr * wd);
    k.c1 = (float)(1.0 - b1);
    k.c2 = (float)(1.0 - b2);
    return k;
}

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_CUDA_HOST_H */
