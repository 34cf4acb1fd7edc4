/* SPDX-License-Identifier: MIT */
/*
 * test_train_cuda.c: unit tests of the CUDA backend's host side
 * (train/cuda/cuda_host.c), which runs on any machine: the sticky status
 * and its messages, byte counts and the out-of-memory message, the
 * allocation map, the row-major -> cuBLASLt mapping of the linear layer's
 * three GEMMs (checked against a column-major GEMM that follows cuBLAS's
 * definition), the algorithm cache, the ops' shape checks, the attention
 * buffers' sizes and cuDNN's applicability, and the optimizer step's
 * arithmetic (against the CPU backend's formulas, bit for bit).
 *
 * Then ops_cuda() itself: linked with the backend where this build has
 * one (mk/cuda.mk), so the link is tested here; on a machine without a GPU
 * it must return NULL with a message that says why, never crash.  The
 * kernels run only on a GPU (tests/gpu/, make test-gpu).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "cuda/cuda_host.h"
#include "ops.h"

static uint64_t rng_state = 7;

static float
frand(void)
{
    rng_state = ops_splitmix64(rng_state);
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* ------------------------------------------------------------ status */

static void
test_status_keeps_the_first_failure(void)
{
    struct cuda_status st = { 0 };

    CHECK_EQ_INT(cuda_status_fail(&st, "first %d", 1), -1);
    CHECK_EQ_INT(cuda_status_fail(&st, "second"), -1);
    CHECK_EQ_INT(st.failed, 1);
    CHECK_EQ_STR(st.msg, "cuda: first 1");
}

static void
test_status_call_names_op_and_place(void)
{
    struct cuda_status st = { 0 };

    st.op = "layernorm_bwd";
    cuda_status_call(&st, "cudaMemsetAsync(p, 0, n, s)", "invalid argument",
                     "train/cuda/x.cu", 12);
    CHECK_EQ_STR(st.msg, "cuda: layernorm_bwd: cudaMemsetAsync(p, 0, n, s): "
                         "invalid argument (train/cuda/x.cu:12)");
}

static void
test_status_async_names_the_last_queued_op(void)
{
    struct cuda_status st = { 0 };

    st.op = "sync";
    st.queued = "attention_bwd";
    cuda_status_async(&st, "an illegal memory access was encountered");
    CHECK_EQ_STR(st.msg, "cuda: an illegal memory access was encountered "
                         "(detected after attention_bwd; "
                         "CUDA_LAUNCH_BLOCKING=1 names the op that caused it)");
}

static void
test_status_message_is_truncated_safely(void)
{
    struct cuda_status st = { 0 };
    char big[2000];

    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cuda_status_fail(&st, "%s", big);
    CHECK_EQ_INT(strlen(st.msg), CUDA_MSG_MAX - 1);
    CHECK(strncmp(st.msg, "cuda: xxx", 9) == 0);
}

/* ------------------------------------------------------------ memory */

static void
test_format_bytes(void)
{
    char b[32];

    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), 0), "0 bytes");
    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), 1023), "1023 bytes");
    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), 1536), "1.50 KiB");
    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), 3u << 29), "1.50 GiB");
    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), (size_t)84933908480ULL),
                 "79.1 GiB");
    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), (size_t)600 << 20), "600 MiB");
    /* 9.999 GiB rounds to 10.0, not "10.00". */
    CHECK_EQ_STR(cuda_format_bytes(b, sizeof(b), (size_t)10736344498ULL),
                 "10.0 GiB");
}

static void
test_oom_message_says_asked_free_and_total(void)
{
    char m[CUDA_MSG_MAX];

    cuda_oom_message(m, sizeof(m), 3u << 29, "activations", (size_t)858993459,
                     (size_t)84933908480ULL);
    CHECK_EQ_STR(m, "out of memory: alloc of 1.50 GiB (activations) with "
                    "819 MiB free of 79.1 GiB; a smaller "
                    "--per_device_train_batch_size or --recompute needs "
                    "less");
    cuda_oom_message(m, sizeof(m), 512, NULL, 0, 1024);
    CHECK(strstr(m, "alloc of 512 bytes (unnamed) with 0 bytes free of "
                    "1.00 KiB") != NULL);
}

static void
test_ptr_map_put_take_grow(void)
{
    struct cuda_ptr_map m = { 0 };
    size_t n = 5000, size = 0;

    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(
            cuda_ptr_map_put(&m, (void *)(uintptr_t)((i + 1) * 256), i * 3 + 1),
            0);
    CHECK_EQ_INT(m.n, n);
    /* Every other one out, then back in with another size. */
    for (size_t i = 0; i < n; i += 2) {
        CHECK_EQ_INT(
            cuda_ptr_map_take(&m, (void *)(uintptr_t)((i + 1) * 256), &size),
            0);
        CHECK_EQ_INT(size, i * 3 + 1);
    }
    CHECK_EQ_INT(m.n, n / 2);
    CHECK_EQ_INT(cuda_ptr_map_take(&m, (void *)(uintptr_t)256, &size), -1);
    for (size_t i = 0; i < n; i += 2)
        CHECK_EQ_INT(
            cuda_ptr_map_put(&m, (void *)(uintptr_t)((i + 1) * 256), 7), 0);
    for (size_t i = 0; i < n; i++) {
        size = 0;
        CHECK_EQ_INT(
            cuda_ptr_map_take(&m, (void *)(uintptr_t)((i + 1) * 256), &size),
            0);
        CHECK_EQ_INT(size, i % 2 == 0 ? 7 : i * 3 + 1);
    }
    CHECK_EQ_INT(m.n, 0);
    CHECK_EQ_INT(cuda_ptr_map_put(&m, NULL, 1), -1);
    CHECK_EQ_INT(cuda_ptr_map_take(&m, NULL, &size), -1);
    cuda_ptr_map_release(&m);
    CHECK(m.keys == NULL && m.cap == 0);
}

static void
test_ptr_map_churn_stays_small(void)
{
    struct cuda_ptr_map m = { 0 };
    size_t size;

    /* Allocate-and-free cycles (activations per step) must not grow the
     * table without bound: deleted slots are swept by rebuilds. */
    for (size_t i = 0; i < 100000; i++) {
        void *p = (void *)(uintptr_t)((i % 1000 + 1) * 4096 + (i / 1000) * 256);

        CHECK_EQ_INT(cuda_ptr_map_put(&m, p, i), 0);
        CHECK_EQ_INT(cuda_ptr_map_take(&m, p, &size), 0);
        CHECK_EQ_INT(size, i);
    }
    CHECK(m.cap <= 1024);
    cuda_ptr_map_release(&m);
}

static void
test_ptr_align(void)
{
    CHECK_EQ_INT(cuda_ptr_align(NULL), 256);
    CHECK_EQ_INT(cuda_ptr_align((void *)(uintptr_t)0x1000), 256);
    CHECK_EQ_INT(cuda_ptr_align((void *)(uintptr_t)0x1080), 128);
    CHECK_EQ_INT(cuda_ptr_align((void *)(uintptr_t)0x1004), 4);
    CHECK_EQ_INT(cuda_ptr_align((void *)(uintptr_t)0x1002), 2);
    CHECK_EQ_INT(cuda_ptr_align((void *)(uintptr_t)0x1001), 1);
}

/* ------------------------------------------------------------ GEMMs */

/* D(m x n) = op(A) . op(B), column-major as cuBLAS defines it: element
 * (i, j) of a matrix with leading dimension ld is at [i + j * ld]. */
static void
gemm_colmajor(const struct cuda_gemm_shape *s, const double *a, const double *b,
              double *d)
{
    for (int64_t j = 0; j < s->n; j++)
        for (int64_t i = 0; i < s->m; i++) {
            double acc = 0.0;

            for (int64_t l = 0; l < s->k; l++) {
                double av = s->trans_a ? a[l + i * s->lda] : a[i + l * s->lda];
                double bv = s->trans_b ? b[j + l * s->ldb] : b[l + j * s->ldb];

                acc += av * bv;
            }
            d[i + j * s->ldd] = acc;
        }
}

/* The stored shapes agree with op(A) m x k and op(B) k x n. */
static void
check_shape_consistent(const struct cuda_gemm_shape *s)
{
    CHECK(s->trans_a ? s->a_rows == s->k && s->a_cols == s->m
                     : s->a_rows == s->m && s->a_cols == s->k);
    CHECK(s->trans_b ? s->b_rows == s->n && s->b_cols == s->k
                     : s->b_rows == s->k && s->b_cols == s->n);
    CHECK(s->lda >= s->a_rows && s->ldb >= s->b_rows && s->ldd >= s->m);
}

static const double *
pick(enum cuda_gemm_operand o, const double *x, const double *w,
     const double *dy)
{
    return o == CUDA_OPND_X ? x : o == CUDA_OPND_W ? w : dy;
}

static void
test_gemm_shapes_match_the_row_major_layer(void)
{
    enum { M = 5, K = 7, N = 3 };
    double x[M * K], w[N * K], dy[M * N], d[M * K + N * K + M * N];
    struct cuda_gemm_shape s;

    for (int i = 0; i < M * K; i++)
        x[i] = frand();
    for (int i = 0; i < N * K; i++)
        w[i] = frand();
    for (int i = 0; i < M * N; i++)
        dy[i] = frand();

    /* y[i, j] = sum_k x[i, k] w[j, k] */
    cuda_gemm_shape(CUDA_GEMM_FWD, M, K, N, &s);
    check_shape_consistent(&s);
    gemm_colmajor(&s, pick(s.a_is, x, w, dy), pick(s.b_is, x, w, dy), d);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0.0;

            for (int k = 0; k < K; k++)
                want += x[i * K + k] * w[j * K + k];
            CHECK(fabs(d[i * N + j] - want) < 1e-12);
        }

    /* dx[i, k] = sum_j dy[i, j] w[j, k] */
    cuda_gemm_shape(CUDA_GEMM_DX, M, K, N, &s);
    check_shape_consistent(&s);
    gemm_colmajor(&s, pick(s.a_is, x, w, dy), pick(s.b_is, x, w, dy), d);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) {
            double want = 0.0;

            for (int j = 0; j < N; j++)
                want += dy[i * N + j] * w[j * K + k];
            CHECK(fabs(d[i * K + k] - want) < 1e-12);
        }

    /* dw[j, k] = sum_i dy[i, j] x[i, k] */
    cuda_gemm_shape(CUDA_GEMM_DW, M, K, N, &s);
    check_shape_consistent(&s);
    gemm_colmajor(&s, pick(s.a_is, x, w, dy), pick(s.b_is, x, w, dy), d);
    for (int j = 0; j < N; j++)
        for (int k = 0; k < K; k++) {
            double want = 0.0;

            for (int i = 0; i < M; i++)
                want += dy[i * N + j] * x[i * K + k];
            CHECK(fabs(d[j * K + k] - want) < 1e-12);
        }
}

static struct cuda_gemm_key
key_of(int i)
{
    struct cuda_gemm_key k;

    memset(&k, 0, sizeof(k));
    k.kind = i % 3;
    k.m = 64 + i;
    k.n = 128 + 7 * i;
    k.k = 768;
    k.dtype_ab = i % 2;
    k.align = cuda_gemm_align_code(256, 256, 16, 16, 256);
    return k;
}

static void
test_gemm_cache_finds_what_was_put(void)
{
    struct cuda_gemm_cache c = { 0 };
    unsigned char algo[CUDA_GEMM_ALGO_BYTES];
    struct cuda_gemm_key k;
    const struct cuda_gemm_entry *e;

    for (int i = 0; i < 1000; i++) {
        k = key_of(i);
        memset(algo, i & 0xff, sizeof(algo));
        CHECK_EQ_INT(cuda_gemm_cache_put(&c, &k, algo, (size_t)i * 16), 0);
    }
    CHECK_EQ_INT(c.n, 1000);
    for (int i = 0; i < 1000; i++) {
        k = key_of(i);
        e = cuda_gemm_cache_find(&c, &k);
        CHECK(e != NULL);
        if (e != NULL) {
            CHECK_EQ_INT(e->algo[0], i & 0xff);
            CHECK_EQ_INT(e->algo[CUDA_GEMM_ALGO_BYTES - 1], i & 0xff);
            CHECK_EQ_INT(e->workspace, (size_t)i * 16);
        }
    }
    /* Another alignment is another key: cuBLASLt picks by alignment. */
    k = key_of(3);
    k.align = cuda_gemm_align_code(256, 256, 16, 16, 4);
    CHECK(cuda_gemm_cache_find(&c, &k) == NULL);
    /* The same key again replaces, and does not count twice. */
    k = key_of(5);
    memset(algo, 0xab, sizeof(algo));
    CHECK_EQ_INT(cuda_gemm_cache_put(&c, &k, algo, 1), 0);
    CHECK_EQ_INT(c.n, 1000);
    e = cuda_gemm_cache_find(&c, &k);
    CHECK(e != NULL && e->algo[0] == 0xab && e->workspace == 1);
    cuda_gemm_cache_release(&c);
    CHECK(cuda_gemm_cache_find(&c, &k) == NULL);
}

static void
test_gemm_align_code_separates_operands(void)
{
    CHECK(cuda_gemm_align_code(256, 16, 16, 16, 16) !=
          cuda_gemm_align_code(16, 256, 16, 16, 16));
    CHECK(cuda_gemm_align_code(16, 16, 16, 16, 4) !=
          cuda_gemm_align_code(16, 16, 16, 16, 8));
    CHECK_EQ_INT(cuda_gemm_align_code(1, 1, 1, 1, 1), 0);
}

/* ------------------------------------------------------------ shapes */

/* Runs a check on a fresh status: its result and whether it failed with
 * a message naming the op. */
#define CHECK_ARGS(call, want_ok)                           \
    do {                                                    \
        struct cuda_status st_ = { 0 };                     \
        int r_ = (call);                                    \
        CHECK_EQ_INT(r_, (want_ok) ? 0 : -1);               \
        CHECK_EQ_INT(st_.failed, (want_ok) ? 0 : 1);        \
        if (!(want_ok))                                     \
            CHECK(strncmp(st_.msg, "cuda: op: ", 10) == 0); \
    } while (0)

static void
test_checks_accept_good_and_refuse_bad_arguments(void)
{
    CHECK_ARGS(cuda_check_rows(&st_, "op", 0, 768), 1);
    CHECK_ARGS(cuda_check_rows(&st_, "op", 16, 768), 1);
    CHECK_ARGS(cuda_check_rows(&st_, "op", -1, 768), 0);
    CHECK_ARGS(cuda_check_rows(&st_, "op", 16, 0), 0);

    CHECK_ARGS(cuda_check_linear(&st_, "op", 0, 8, 0), 1);
    CHECK_ARGS(cuda_check_linear(&st_, "op", 4, 8, 16), 1);
    CHECK_ARGS(cuda_check_linear(&st_, "op", 4, 0, 16), 0);
    CHECK_ARGS(cuda_check_linear(&st_, "op", -4, 8, 16), 0);

    CHECK_ARGS(cuda_check_dropout(&st_, "op", 0.0f), 1);
    CHECK_ARGS(cuda_check_dropout(&st_, "op", 0.1f), 1);
    CHECK_ARGS(cuda_check_dropout(&st_, "op", 1.0f), 0);
    CHECK_ARGS(cuda_check_dropout(&st_, "op", -0.1f), 0);
    CHECK_ARGS(cuda_check_dropout(&st_, "op", NAN), 0);

    CHECK_ARGS(cuda_check_attention(&st_, "op", 2, 16, 64, 4, 0, 4, 0.1f), 1);
    CHECK_ARGS(cuda_check_attention(&st_, "op", 2, 16, 64, 2, 2, 4, 0.0f), 1);
    CHECK_ARGS(cuda_check_attention(&st_, "op", 2, 16, 64, 3, 0, 3, 0.0f), 0);
    CHECK_ARGS(cuda_check_attention(&st_, "op", 2, 16, 64, 2, 3, 4, 0.0f), 0);
    CHECK_ARGS(cuda_check_attention(&st_, "op", 2, 0, 64, 2, 0, 2, 0.0f), 0);
    CHECK_ARGS(cuda_check_attention(&st_, "op", 1, 8, 1024, 2, 0, 2, 0.0f),
               0); /* heads of 512 */
    CHECK_ARGS(cuda_check_attention(&st_, "op", 1, 8, 64, 2, 0, 2, 1.0f), 0);

    CHECK_ARGS(cuda_check_xent(&st_, "op", 4, 128, 100, 0), 1);
    CHECK_ARGS(cuda_check_xent(&st_, "op", 4, 128, 0, 256), 1);
    CHECK_ARGS(cuda_check_xent(&st_, "op", 4, 128, 129, 0), 0);
    CHECK_ARGS(cuda_check_xent(&st_, "op", 4, 0, 0, 0), 0);
    CHECK_ARGS(cuda_check_xent(&st_, "op", -1, 128, 128, 0), 0);
}

static void
test_check_message_shows_the_values(void)
{
    struct cuda_status st = { 0 };

    cuda_check_attention(&st, "attention_fwd", 2, 16, 100, 3, 0, 3, 0.0f);
    CHECK(strstr(st.msg, "attention_fwd") != NULL);
    CHECK(strstr(st.msg, "C = 100") != NULL && strstr(st.msg, "NH = 3"));
}

/* ------------------------------------------------------------ attention */

static void
test_attention_buffer_sizes(void)
{
    /* The log-sum-exp [B,NH,T], in 256-byte units. */
    CHECK_EQ_INT(cuda_attention_state_bytes(16, 1024, 12), 16 * 12 * 1024 * 4);
    CHECK_EQ_INT(cuda_attention_state_bytes(1, 3, 1), 256);
    CHECK_EQ_INT(cuda_attention_scratch_bytes(16, 1024, 12, 768, OPS_F32),
                 16 * 12 * 1024 * 4);
    /* bf16: also cuDNN's dq, dk, dv [B,T,3C]. */
    CHECK_EQ_INT(cuda_attention_scratch_bytes(16, 1024, 12, 768, OPS_BF16),
                 16 * 12 * 1024 * 4 + 16 * 1024 * 3 * 768 * 2);
    CHECK_EQ_INT(cuda_attention_scratch_bytes(1, 3, 1, 8, OPS_F16), 256 + 256);
    CHECK_EQ_INT(cuda_attention_state_bytes(0, 128, 12), 0);
}

static void
test_sdpa_applicability(void)
{
    CHECK(cuda_sdpa_unsupported(OPS_F32, 128, 64, 91900, 90) != NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 128, 64, 91900, 90) == NULL);
    CHECK(cuda_sdpa_unsupported(OPS_F16, 1024, 128, 91900, 80) == NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 128, 70, 91900, 90) != NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 128, 256, 91900, 90) != NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 128, 64, 8906, 90) != NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 128, 64, 91900, 75) != NULL);
    /* Up to 9.15.0 the keys must be a multiple of 128; after, any. */
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 100, 64, 91500, 90) != NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 100, 64, 91501, 90) == NULL);
    CHECK(cuda_sdpa_unsupported(OPS_BF16, 1, 64, 91900, 90) != NULL);
}

/* ------------------------------------------------------------ optimizer */

static struct ops_step
step_of(double sumsq, float loss_scale)
{
    struct ops_step st;

    memset(&st, 0, sizeof(st));
    st.sumsq = sumsq;
    st.loss_scale = loss_scale;
    st.bad_step = -1;
    return st;
}

/* The CPU backend's step_prepare (train/cpu/ops_cpu.c), the reference. */
static void
ref_step_prepare(struct ops_step *st, const struct ops_step_opts *o)
{
    double scale = st->loss_scale, ss = st->sumsq;

    if (!isfinite(ss)) {
        st->skip = 1;
        st->grad_scale = 0.0f;
        st->n_skipped++;
    } else {
        double norm = sqrt(ss) / scale;
        double clip =
            o->max_norm > 0 ? o->max_norm / fmax(norm, o->max_norm) : 1.0;

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

            if (isfinite(s))
                st->loss_scale = s;
            st->good_steps = 0;
        }
    }
}

static void
test_step_prepare_clips_as_the_cpu_optimizer(void)
{
    struct ops_step_opts o = { 1.0f, 0, 0, 0.0f, 0, 0.0f, 0.0f };

    /* The CPU optimizer's scale before ops.h v2, (float)(grad_clip /
     * fmax(norm, grad_clip)) in double: the same bits for norms around
     * the clip. */
    for (int i = 0; i < 2000; i++) {
        double norm = 0.05 * (i + 1) * (1.0 + 0.001 * frand());
        struct ops_step st = step_of(norm * norm, 1.0f);
        float want;

        o.max_norm = (i % 3 == 0) ? 0.05f : 1.0f;
        want = (float)((double)o.max_norm /
                       fmax(sqrt(norm * norm), (double)o.max_norm));
        cuda_step_prepare_math(&st, &o);
        CHECK_EQ_INT(st.skip, 0);
        CHECK(memcmp(&st.grad_scale, &want, sizeof(want)) == 0);
        CHECK(st.sumsq == norm * norm);
    }
    {
        struct ops_step st = step_of(100.0, 1.0f);

        o.max_norm = 0.0f; /* no clipping */
        cuda_step_prepare_math(&st, &o);
        CHECK(st.grad_scale == 1.0f && st.skip == 0);
    }
}

static void
test_step_prepare_divides_out_the_loss_scale(void)
{
    struct ops_step_opts o = { 1.0f, 0, 0, 0.0f, 0, 0.0f, 0.0f };
    /* Gradients scaled by 1024 with a true norm of 2: clip to 1, so each
     * is multiplied by 0.5 / 1024, and the sum of squares reads as the
     * true gradients'. */
    struct ops_step st = step_of(2048.0 * 2048.0, 1024.0f);

    cuda_step_prepare_math(&st, &o);
    CHECK(st.grad_scale == 0.5f / 1024.0f);
    CHECK(st.sumsq == 4.0);
    CHECK_EQ_INT(st.skip, 0);
}

static void
test_step_prepare_skips_and_shrinks_as_paddle(void)
{
    /* decr_every_n_nan_or_inf = 2, decr_ratio 0.5, min_scale 1. */
    struct ops_step_opts o = { 1.0f, 1, 3, 2.0f, 2, 0.5f, 1.0f };
    struct ops_step st = step_of(INFINITY, 1024.0f);

    cuda_step_prepare_math(&st, &o);
    CHECK(st.skip == 1 && st.grad_scale == 0.0f && st.n_skipped == 1);
    CHECK(st.loss_scale == 1024.0f && st.bad_steps == 1);
    st.sumsq = NAN;
    cuda_step_prepare_math(&st, &o);
    CHECK(st.skip == 1 && st.n_skipped == 2);
    CHECK(st.loss_scale == 512.0f && st.bad_steps == 0);
    /* A finite step in between starts the count again. */
    st.sumsq = INFINITY;
    cuda_step_prepare_math(&st, &o);
    st.sumsq = 1.0;
    cuda_step_prepare_math(&st, &o);
    CHECK(st.skip == 0 && st.bad_steps == 0 && st.good_steps == 1);
    st.sumsq = INFINITY;
    cuda_step_prepare_math(&st, &o);
    CHECK(st.loss_scale == 512.0f && st.good_steps == 0);
    /* Never under min_scale. */
    o.decr_every = 1;
    st.loss_scale = 1.5f;
    st.sumsq = INFINITY;
    cuda_step_prepare_math(&st, &o);
    CHECK(st.loss_scale == 1.0f);
    /* Without dynamic scaling the scale stays. */
    o.dynamic = 0;
    st = step_of(-NAN, 1.0f);
    cuda_step_prepare_math(&st, &o);
    CHECK(st.skip == 1 && st.loss_scale == 1.0f && st.n_skipped == 1);
}

static void
test_step_prepare_grows_the_scale(void)
{
    struct ops_step_opts o = { 0.0f, 1, 2, 2.0f, 1, 0.5f, 1.0f };
    struct ops_step st = step_of(64.0, 8.0f);

    cuda_step_prepare_math(&st, &o);
    CHECK(st.loss_scale == 8.0f && st.good_steps == 1);
    st.sumsq = 64.0;
    cuda_step_prepare_math(&st, &o);
    CHECK(st.loss_scale == 16.0f && st.good_steps == 0);
    /* A scale that would overflow stays. */
    st = step_of(1.0, FLT_MAX);
    st.good_steps = 1;
    cuda_step_prepare_math(&st, &o);
    CHECK(st.loss_scale == FLT_MAX && st.good_steps == 0);
}

static void
test_step_prepare_matches_the_cpu_backend(void)
{
    struct ops_step_opts o = { 1.0f, 1, 3, 2.0f, 2, 0.5f, 1.0f };
    struct ops_step a = step_of(0.0, 65536.0f), b;

    /* A long run of random steps, some non-finite: every field agrees. */
    for (int i = 0; i < 5000; i++) {
        double norm = 4.0 * (frand() + 1.0) * a.loss_scale;
        double ss = i % 7 == 3 ? INFINITY : i % 11 == 5 ? NAN : norm * norm;

        o.max_norm = i % 5 == 0 ? 0.0f : 1.0f;
        a.sumsq = ss;
        b = a;
        cuda_step_prepare_math(&a, &o);
        ref_step_prepare(&b, &o);
        if (!(isnan(a.sumsq) && isnan(b.sumsq)))
            CHECK(memcmp(&a.sumsq, &b.sumsq, sizeof(a.sumsq)) == 0);
        CHECK(memcmp(&a.grad_scale, &b.grad_scale, 4) == 0);
        CHECK(memcmp(&a.loss_scale, &b.loss_scale, 4) == 0);
        CHECK(a.skip == b.skip && a.good_steps == b.good_steps &&
              a.bad_steps == b.bad_steps && a.n_skipped == b.n_skipped);
    }
}

static void
test_adamw_consts_are_the_cpu_optimizer_s(void)
{
    float lr = 3e-4f, b1 = 0.9f, b2 = 0.999f, wd = 0.01f;

    for (int t = 1; t < 3000; t += 7) {
        struct cuda_adamw_consts k = cuda_adamw_consts(lr, b1, b2, wd, t);
        /* As train/cpu/ops_cpu.c's cpu_adamw computes them. */
        double bc1 = 1.0 - pow(b1, t);
        float step = (float)(lr / bc1);
        float bc2_sqrt = (float)sqrt(1.0 - pow(b2, t));
        float decay = (float)(1.0 - (double)lr * wd);
        float c1 = (float)(1.0 - b1), c2 = (float)(1.0 - b2);

        CHECK(memcmp(&k.step, &step, 4) == 0);
        CHECK(memcmp(&k.bc2_sqrt, &bc2_sqrt, 4) == 0);
        CHECK(memcmp(&k.decay, &decay, 4) == 0);
        CHECK(memcmp(&k.c1, &c1, 4) == 0);
        CHECK(memcmp(&k.c2, &c2, 4) == 0);
    }
}

/* ------------------------------------------------------------ the backend */

static void
test_ops_cuda_without_a_gpu_fails_cleanly(void)
{
    struct ops_request r;
    const struct ops *o;
    char err[256] = "";

    memset(&r, 0, sizeof(r));
    r.device = "cuda";
    r.dtype = OPS_F32;
    o = ops_cuda(&r, err, sizeof(err));
    if (o != NULL) {
        o->close();
        SKIP("a GPU is visible: the no-GPU path is not taken here");
    }
    /* The reason, without the "--device cuda: " ops_open() adds. */
    CHECK(err[0] != '\0');
    CHECK(strstr(err, "no GPU is visible") != NULL ||
          strstr(err, "no CUDA backend") != NULL ||
          strstr(err, "driver") != NULL);
    CHECK(strncmp(err, "--device", 8) != 0);
    /* Again, and with nowhere to put the message: still no crash. */
    CHECK(ops_cuda(&r, NULL, 0) == NULL);
    CHECK(ops_cuda(&r, err, 1) == NULL);
    CHECK_EQ_STR(err, "");
}

/* Where a GPU is visible (make test-gpu, the GPU bundle): a smoke test of
 * the backend's plumbing, and of dropout's bits against the CPU's.  The
 * op-by-op comparison with the CPU backend is tests/gpu/'s. */
static void
test_ops_cuda_smoke_on_a_gpu(void)
{
    struct ops_request r;
    const struct ops *o;
    char err[256] = "";
    enum { N = 4099 };
    static float h[N], back[N];
    float *d;
    size_t free_b = 0, total_b = 0, peak_b = 0;

    memset(&r, 0, sizeof(r));
    r.device = "cuda";
    r.dtype = OPS_F32;
    r.deterministic = 1;
    o = ops_cuda(&r, err, sizeof(err));
    if (o == NULL)
        SKIP("no GPU is visible");
    CHECK_EQ_STR(o->name, "cuda");
    CHECK(o->device >= 0 && o->dtype == OPS_F32);
    CHECK(strstr(err, "compute capability") != NULL);
    for (int i = 0; i < N; i++)
        h[i] = frand();
    d = o->alloc(N * sizeof(float), "smoke");
    CHECK(d != NULL);
    if (d == NULL) {
        o->close();
        return;
    }
    /* Fresh memory is zero; uploads and downloads are exact. */
    CHECK_EQ_INT(o->download(back, d, sizeof(back)), 0);
    CHECK(back[0] == 0.0f && back[N - 1] == 0.0f);
    o->upload(d, h, sizeof(h));
    o->scale(d, N, 2.0f);
    CHECK_EQ_INT(o->download(back, d, sizeof(back)), 0);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == 2.0f * h[i]);
    /* Dropout keeps exactly the elements the CPU keeps. */
    o->upload(d, h, sizeof(h));
    o->dropout_fwd(d, d, N, 0.25f, 99);
    CHECK_EQ_INT(o->download(back, d, sizeof(back)), 0);
    for (int i = 0; i < N; i++)
        CHECK(back[i] == (ops_dropout_uniform(99, (uint64_t)i) >= 0.25f
                              ? h[i] * (1.0f / 0.75f)
                              : 0.0f));
    o->mem_info(&free_b, &total_b, &peak_b);
    CHECK(total_b > 0 && peak_b >= N * sizeof(float));
    CHECK_EQ_INT(o->sync(), 0);
    CHECK(o->notice == NULL || o->notice() == NULL);
    o->release(d);
    /* A bad argument is recorded, sticky, and named. */
    o->dropout_fwd(NULL, NULL, 8, 1.5f, 1);
    CHECK_EQ_INT(o->sync(), -1);
    CHECK(strstr(o->error(), "dropout_fwd") != NULL);
    o->close();
    /* Out of memory says what was asked for. */
    o = ops_cuda(&r, err, sizeof(err));
    CHECK(o != NULL);
    if (o != NULL) {
        CHECK(o->alloc((size_t)1 << 50, "the test's petabyte") == NULL);
        CHECK(strstr(o->error(), "out of memory: alloc of 1.00 PiB (the "
                                 "test's petabyte) with ") != NULL);
        CHECK_EQ_INT(o->sync(), -1);
        o->close();
    }
}

static void
test_ops_cuda_refuses_an_unknown_dtype(void)
{
    struct ops_request r;
    char err[256] = "";

    memset(&r, 0, sizeof(r));
    r.device = "cuda";
    r.dtype = (enum ops_dtype)7;
    CHECK(ops_cuda(&r, err, sizeof(err)) == NULL);
    CHECK(err[0] != '\0');
}

TESTS(train_cuda, TEST(test_status_keeps_the_first_failure),
      TEST(test_status_call_names_op_and_place),
      TEST(test_status_async_names_the_last_queued_op),
      TEST(test_status_message_is_truncated_safely), TEST(test_format_bytes),
      TEST(test_oom_message_says_asked_free_and_total),
      TEST(test_ptr_map_put_take_grow), TEST(test_ptr_map_churn_stays_small),
      TEST(test_ptr_align), TEST(test_gemm_shapes_match_the_row_major_layer),
      TEST(test_gemm_cache_finds_what_was_put),
      TEST(test_gemm_align_code_separates_operands),
      TEST(test_checks_accept_good_and_refuse_bad_arguments),
      TEST(test_check_message_shows_the_values),
      TEST(test_attention_buffer_sizes), TEST(test_sdpa_applicability),
      TEST(test_step_prepare_clips_as_the_cpu_optimizer),
      TEST(test_step_prepare_divides_out_the_loss_scale),
      TEST(test_step_prepare_skips_and_shrinks_as_paddle),
      TEST(test_step_prepare_grows_the_scale),
      TEST(test_step_prepare_matches_the_cpu_backend),
      TEST(test_adamw_consts_are_the_cpu_optimizer_s),
      TEST(test_ops_cuda_without_a_gpu_fails_cleanly),
      TEST(test_ops_cuda_smoke_on_a_gpu),
      TEST(test_ops_cuda_refuses_an_unknown_dtype))
