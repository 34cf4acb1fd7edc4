/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_cases.c: the cases of the op-by-op comparison, one function
 * a family of ops, each with its tolerances stated beside it.
 *
 * Tolerances are absolute bounds on |test - ref| for each element, from
 * the magnitude of the terms that make it up: eps is FLT_EPSILON (2^-23),
 * K the number of terms of a sum, max|x| the largest input.  A K-term
 * fp32 sum computed in two orders differs by a few ulps of its largest
 * partial sums, at most K max|term|: SUM_EPS = 4 eps, times K times the
 * terms' largest magnitude (the CPU with 1 and 2 threads, whose OpenBLAS
 * splits the GEMMs otherwise, used up to 0.2 of that at real shapes;
 * TF32, at 2^-11 a product, lands 20 times outside).  Sums of positive terms that both sides form in one pass
 * (softmax denominators) use Higham's probabilistic sqrt(K) eps.  Exact
 * ops (copies, one addition, one rounding) must be exact.  In the bf16
 * section every output stored in bf16 adds k x 2^-8 x max|ref| (k counts
 * the roundings, doubled: either side may round to the neighbour);
 * fp32 outputs (gradients of parameters, statistics, losses) keep their
 * fp32 bounds, the inputs being the same bf16 numbers on both sides.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

#define SUM_EPS   (4 * OC_EPS)
#define NR(c)     ((c)->dt == OPS_F32 ? OC_NR_F32 : OC_NR_BF16)
#define NR_BWD(c) ((c)->dt == OPS_F32 ? OC_NR_F32_BWD : OC_NR_BF16_BWD)

/* k x bf16's unit roundoff x scale in the bf16 section, else 0. */
static double
bft(const struct oc *c, double k, double scale)
{
    return c->dt == OPS_F32 ? 0.0 : k * OC_BF16_U * scale;
}

static size_t
round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* The MLM head's rows: 15 % of the tokens, padded to a multiple of 8 by
 * slots that repeat row 0 (as the trainer's batches do). */
static int
n_mlm(const struct oc_model *m)
{
    return (int)round_up((size_t)(0.15 * m->B * m->T), 8);
}

static float *
copy_of(const float *x, size_t n)
{
    float *y = oc_xmalloc(n * sizeof(float));

    memcpy(y, x, n * sizeof(float));
    return y;
}

static double
maxabs_delta(const float *a, const float *b, size_t n)
{
    double m = 0.0;

    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* ------------------------------------------------------------ memory */

/* copy, zero, upload and download at odd offsets and sizes, pinned
 * uploads on the copy queue, mem_info, queue: all exact. */
static void
case_memory(struct oc *c, const struct oc_model *m)
{
    const size_t n = 1000003; /* odd: no vector width divides it */
    unsigned char *src = oc_xmalloc(n), *out[OC_RUNS][4];
    size_t bad[4] = { 0 }, info_bad = 0;

    (void)m;
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(oc_next(c) & 0xff);
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        unsigned char *a = oc_put(c, src, n, "memory a");
        unsigned char *b = oc_blank(c, n, "memory b");
        unsigned char *pin = o->host_alloc(n);
        size_t fr = 0, tot = 0, peak = 0;

        if (pin == NULL) {
            fprintf(stderr, "ops_compare: host_alloc of %zu bytes failed\n", n);
            exit(1);
        }
        for (int k = 0; k < 4; k++)
            out[r][k] = oc_xmalloc(n);
        o->copy(b + 1, a + 3, n - 7);
        oc_sync(c, "copy");
        oc_get(c, out[r][0], b, n, "copy");
        o->zero(b + 5, 1001);
        oc_get(c, out[r][1], b, n, "zero");
        o->upload(b + 7, src + 11, n - 20);
        oc_get(c, out[r][2], b, n, "upload");
        memcpy(pin, src, n);
        o->upload_async(a + 2, pin + 1, n - 9);
        o->upload_wait();
        o->zero(b, n);
        o->copy(b, a, n); /* ordered after the upload by upload_wait */
        oc_sync(c, "upload_async");
        oc_get(c, out[r][3], b, n, "upload_async");
        o->host_release(pin);
        o->mem_info(&fr, &tot, &peak);
        if (!(tot > 0 && fr <= tot))
            info_bad++;
        if ((o->queue() != NULL) != (strcmp(o->name, "cpu") != 0))
            info_bad++;
        oc_pool_free(c);
    }
    /* What each must hold, from src alone. */
    for (int r = 0; r < OC_RUNS; r++) {
        unsigned char *w = oc_xmalloc(n);

        memset(w, 0, n);
        memcpy(w + 1, src + 3, n - 7);
        for (size_t i = 0; i < n; i++)
            bad[0] += out[r][0][i] != w[i];
        memset(w + 5, 0, 1001);
        for (size_t i = 0; i < n; i++)
            bad[1] += out[r][1][i] != w[i];
        memcpy(w + 7, src + 11, n - 20);
        for (size_t i = 0; i < n; i++)
            bad[2] += out[r][2][i] != w[i];
        memcpy(w, src, n);
        memcpy(w + 2, src + 1, n - 9);
        for (size_t i = 0; i < n; i++)
            bad[3] += out[r][3][i] != w[i];
        free(w);
        for (int k = 0; k < 4; k++)
            free(out[r][k]);
    }
    oc_check_count(c, "copy", "1000003 bytes, offsets", bad[0], n * 3,
                   "bytes differ");
    oc_check_count(c, "zero", "1001 of 1000003", bad[1], n * 3, "bytes differ");
    oc_check_count(c, "upload.download", "odd offsets", bad[2], n * 3,
                   "bytes differ");
    oc_check_count(c, "upload_async.upload_wait", "pinned, odd offsets", bad[3],
                   n * 3, "bytes differ");
    oc_check_count(c, "mem_info.queue", "free <= total; queue", info_bad,
                   2 * OC_RUNS, "wrong");
    free(src);
}

/* ------------------------------------------------------------ cast */

/* The special values every conversion must get right, then random ones
 * over the whole exponent range. */
static float *
cast_inputs(struct oc *c, size_t n)
{
    static const float special[] = {
        0.0f,
        -0.0f,
        1.0f,
        -1.0f,
        1.00390625f /* bf16 tie */,
        1.01171875f,
        65504.0f,
        65519.0f,
        65520.0f /* f16 overflow */,
        FLT_MAX,
        -FLT_MAX,
        1e-40f /* subnormal */,
        1.4e-45f,
        6e-8f,
        5.9604645e-08f /* f16 min subnormal */,
        2.9802322e-08f /* tie */,
        3.3961775e38f,
        1.1754944e-38f,
    };
    float *x = oc_xmalloc(n * sizeof(float));
    size_t k = sizeof(special) / sizeof(special[0]);

    for (size_t i = 0; i < n; i++) {
        if (i < k) {
            x[i] = special[i];
        } else if (i < k + 3) {
            x[i] = i == k ? INFINITY : i == k + 1 ? -INFINITY : NAN;
        } else {
            uint32_t u = (uint32_t)oc_next(c);

            memcpy(&x[i], &u, sizeof(u)); /* any bit pattern */
            if (isnan(x[i]))
                x[i] = 0.5f;
        }
    }
    return x;
}

static size_t
bits_differ16(const uint16_t *a, const uint16_t *b, size_t n, int bf16)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++) {
        float fa = bf16 ? oc_bf16_to_f32(a[i]) : oc_f16_to_f32(a[i]);
        float fb = bf16 ? oc_bf16_to_f32(b[i]) : oc_f16_to_f32(b[i]);

        if (isnan(fa) && isnan(fb))
            continue;
        bad += a[i] != b[i];
    }
    return bad;
}

static size_t
bits_differ32(const float *a, const float *b, size_t n)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++)
        if (!(isnan(a[i]) && isnan(b[i])))
            bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return bad;
}

/* cast: every side against the host's round to nearest even, bit for bit
 * (NaN for NaN). */
static void
case_cast(struct oc *c, const struct oc_model *m)
{
    const size_t n = 100003;
    float *x = cast_inputs(c, n);
    uint16_t *want16 = oc_xmalloc(n * 2), *got16 = oc_xmalloc(n * 2);
    uint16_t *in16 = oc_xmalloc(n * 2);
    float *want32 = oc_xmalloc(n * 4), *got32 = oc_xmalloc(n * 4);
    size_t bad[4] = { 0 };

    (void)m;
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);

        for (int bf = 0; bf < 2; bf++) {
            enum ops_dtype t = bf ? OPS_BF16 : OPS_F16;
            void *d32 = oc_put(c, x, n * 4, "cast in"), *d16;

            for (size_t i = 0; i < n; i++)
                want16[i] = bf ? oc_f32_to_bf16(x[i]) : oc_f32_to_f16(x[i]);
            d16 = oc_blank(c, n * 2, "cast out");
            o->cast(d16, t, d32, OPS_F32, n);
            oc_sync(c, "cast");
            oc_get(c, got16, d16, n * 2, "cast");
            bad[bf ? 0 : 2] += bits_differ16(got16, want16, n, bf);
            /* Back: every 16-bit pattern's float. */
            for (size_t i = 0; i < n; i++)
                in16[i] = (uint16_t)(i & 0xffff);
            for (size_t i = 0; i < n; i++)
                want32[i] =
                    bf ? oc_bf16_to_f32(in16[i]) : oc_f16_to_f32(in16[i]);
            o->upload(d16, in16, n * 2);
            o->cast(d32, OPS_F32, d16, t, n);
            oc_sync(c, "cast");
            oc_get(c, got32, d32, n * 4, "cast");
            bad[bf ? 1 : 3] += bits_differ32(got32, want32, n);
        }
        oc_pool_free(c);
    }
    oc_check_count(c, "cast.f32>bf16", "100003 + specials", bad[0], n * OC_RUNS,
                   "differ from RNE");
    oc_check_count(c, "cast.bf16>f32", "every pattern", bad[1], n * OC_RUNS,
                   "differ");
    oc_check_count(c, "cast.f32>f16", "100003 + specials", bad[2], n * OC_RUNS,
                   "differ from RNE");
    oc_check_count(c, "cast.f16>f32", "every pattern", bad[3], n * OC_RUNS,
                   "differ");
    free(x);
    free(want16);
    free(got16);
    free(in16);
    free(want32);
    free(got32);
}

/* ------------------------------------------------------------ linear */

/* linear_fwd: y = x.w^T + b, a K-term sum: |d| <= eps (K max|x| max|w| +
 * max|b|); bf16: + 2 roundings of y. */
static void
linear_fwd_case(struct oc *c, const struct oc_model *m, const char *what, int M,
                int K, int N, int bias)
{
    float *x = oc_uniform(c, (size_t)M * K, 1.0);
    float *w = oc_uniform(c, (size_t)N * K, 0.05);
    float *b = oc_uniform(c, (size_t)N, 0.1), *y[OC_RUNS];
    char op[64], sh[64];
    double tol;

    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *dx = oc_put_act(c, x, (size_t)M * K, "x");
        void *dw = oc_put_act(c, w, (size_t)N * K, "w");
        void *db = bias ? oc_put_act(c, b, N, "b") : NULL;
        void *dy = oc_blank(c, (size_t)M * N * oc_act_size(c), "y");

        o->linear_fwd(dy, dx, dw, db, M, K, N);
        oc_sync(c, "linear_fwd");
        y[r] = oc_get_act(c, dy, (size_t)M * N, "linear_fwd");
        oc_pool_free(c);
    }
    tol = SUM_EPS *
          (K * oc_maxabs(x, (size_t)M * K) * oc_maxabs(w, (size_t)N * K) +
           (bias ? oc_maxabs(b, N) : 0.0));
    tol += bft(c, 2, oc_maxabs(y[0], (size_t)M * N));
    snprintf(op, sizeof(op), "linear_fwd.%s", what);
    snprintf(sh, sizeof(sh), "%s %dx%dx%d", m->name, M, K, N);
    oc_check(c, op, sh, y, (size_t)M * N, tol, NR(c), NULL);
    oc_free_runs(y);
    free(x);
    free(w);
    free(b);
}

/* linear_act_fwd: pre as linear_fwd; y = f(pre): |d| <= max|f'| |dpre| +
 * 8 eps max(|pre|, |y|) (erf, tanh: a few ulp on either side). */
static void
linear_act_case(struct oc *c, const struct oc_model *m, const char *what, int M,
                int K, int N, enum ops_act act)
{
    float *x = oc_uniform(c, (size_t)M * K, 1.0);
    float *w = oc_uniform(c, (size_t)N * K, 0.1);
    float *b = oc_uniform(c, (size_t)N, 0.1), *y[OC_RUNS], *pre[OC_RUNS];
    char op[64], sh[64];
    double tol_pre, tol_y;
    size_t n = (size_t)M * N;

    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *dx = oc_put_act(c, x, (size_t)M * K, "x");
        void *dw = oc_put_act(c, w, (size_t)N * K, "w");
        void *db = oc_put_act(c, b, N, "b");
        void *dy = oc_blank(c, n * oc_act_size(c), "y");
        void *dp = oc_blank(c, n * oc_act_size(c), "pre");

        o->linear_act_fwd(dy, dp, dx, dw, db, M, K, N, act);
        oc_sync(c, "linear_act_fwd");
        y[r] = oc_get_act(c, dy, n, "linear_act_fwd");
        pre[r] = oc_get_act(c, dp, n, "linear_act_fwd");
        oc_pool_free(c);
    }
    tol_pre = SUM_EPS *
              (K * oc_maxabs(x, (size_t)M * K) * oc_maxabs(w, (size_t)N * K) +
               oc_maxabs(b, N));
    tol_y = 1.13 * tol_pre +
            8 * OC_EPS * fmax(oc_maxabs(pre[0], n), oc_maxabs(y[0], n)) +
            bft(c, 2, oc_maxabs(y[0], n)) +
            bft(c, 2 * 1.13, oc_maxabs(pre[0], n));
    tol_pre += bft(c, 2, oc_maxabs(pre[0], n));
    snprintf(sh, sizeof(sh), "%s %dx%dx%d", m->name, M, K, N);
    snprintf(op, sizeof(op), "linear_act_fwd.%s.pre", what);
    oc_check(c, op, sh, pre, n, tol_pre, NR(c), NULL);
    snprintf(op, sizeof(op), "linear_act_fwd.%s.y", what);
    oc_check(c, op, sh, y, n, tol_y, NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(pre);
    free(x);
    free(w);
    free(b);
}

/* linear_bwd, accumulating into gradients that hold values already:
 * dx += dy.w (N terms), dw += dy^T.x (M terms), db += sum of dy (M
 * terms): |d| <= eps (terms x the factors' maxima + max|initial|).  bf16:
 * dx stored in bf16 (2 roundings); dw, db are fp32 but the GEMM's
 * product may be rounded to bf16 before it is added (2 roundings of the
 * increment). */
static void
linear_bwd_case(struct oc *c, const struct oc_model *m, const char *what, int M,
                int K, int N, int bias)
{
    size_t nx = (size_t)M * K, nw = (size_t)N * K, ny = (size_t)M * N;
    float *x = oc_uniform(c, nx, 1.0), *w = oc_uniform(c, nw, 0.05);
    float *dy = oc_uniform(c, ny, 0.01), *dx0 = oc_uniform(c, nx, 0.01);
    float *dw0 = oc_uniform(c, nw, 0.1), *db0 = oc_uniform(c, N, 0.1);
    float *dx[OC_RUNS], *dw[OC_RUNS], *db[OC_RUNS] = { NULL };
    char op[80], sh[64];
    double mdy, tx, tw, tb;

    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_x = oc_put_act(c, x, nx, "x"), *d_w = oc_put_act(c, w, nw, "w");
        void *d_dy = oc_put_act(c, dy, ny, "dy");
        void *d_dx = oc_put_act(c, dx0, nx, "dx");
        float *d_dw = oc_put(c, dw0, nw * sizeof(float), "dw");
        float *d_db = bias ? oc_put(c, db0, N * sizeof(float), "db") : NULL;

        o->linear_bwd(d_dx, d_dw, d_db, d_dy, d_x, d_w, M, K, N);
        oc_sync(c, "linear_bwd");
        dx[r] = oc_get_act(c, d_dx, nx, "linear_bwd");
        dw[r] = oc_get_f32(c, d_dw, nw, "linear_bwd");
        if (bias)
            db[r] = oc_get_f32(c, d_db, N, "linear_bwd");
        oc_pool_free(c);
    }
    mdy = oc_maxabs(dy, ny);
    tx = SUM_EPS * (N * mdy * oc_maxabs(w, nw) + oc_maxabs(dx0, nx)) +
         bft(c, 2, oc_maxabs(dx[0], nx));
    tw = SUM_EPS * (M * mdy * oc_maxabs(x, nx) + oc_maxabs(dw0, nw)) +
         bft(c, 2, maxabs_delta(dw[0], dw0, nw));
    snprintf(sh, sizeof(sh), "%s %dx%dx%d", m->name, M, K, N);
    snprintf(op, sizeof(op), "linear_bwd.%s.dx", what);
    oc_check(c, op, sh, dx, nx, tx, NR(c), NULL);
    snprintf(op, sizeof(op), "linear_bwd.%s.dw", what);
    oc_check(c, op, sh, dw, nw, tw, NR(c), NULL);
    if (bias) {
        tb = SUM_EPS * (M * mdy + oc_maxabs(db0, N)) +
             bft(c, 2, maxabs_delta(db[0], db0, N));
        snprintf(op, sizeof(op), "linear_bwd.%s.db", what);
        oc_check(c, op, sh, db, N, tb, NR(c), NULL);
        oc_free_runs(db);
    }
    oc_free_runs(dx);
    oc_free_runs(dw);
    free(x);
    free(w);
    free(dy);
    free(dx0);
    free(dw0);
    free(db0);
}

/* A layer's four products and the LM (or MLM) head. */
static void
case_linear(struct oc *c, const struct oc_model *m)
{
    int BT = m->B * m->T, head_rows = m->mlm ? n_mlm(m) : BT;

    linear_fwd_case(c, m, "qkv", BT, m->C, 3 * m->C, 1);
    linear_act_case(c, m, "fc", BT, m->C, m->I, m->act);
    linear_bwd_case(c, m, "fcproj", BT, m->I, m->C, 1);
    linear_fwd_case(c, m, "head", head_rows, m->C, m->V, 0);
    linear_bwd_case(c, m, "head", head_rows, m->C, m->V, 0);
}

/* ------------------------------------------------------------ embedding */

/* Token ids as text has them: a few very frequent (Zipf-like), so rows
 * repeat many times in a batch. */
static int32_t *
zipf_ids(struct oc *c, size_t n, int V)
{
    int32_t *ids = oc_xmalloc(n * sizeof(int32_t));

    for (size_t i = 0; i < n; i++) {
        double u = (double)(oc_next(c) >> 11) / 9007199254740992.0;

        ids[i] = (int32_t)fmin(V - 1, floor(exp(u * log((double)V))) - 1);
    }
    return ids;
}

/* embed_fwd: a copy (exact), or one addition (exact in fp32; bf16: 2
 * roundings); embed_bwd: each row's increments summed in i order, the
 * initial value added before or after: |d| <= eps (max repeats x
 * max|dy| + max|initial|). */
static void
case_embed(struct oc *c, const struct oc_model *m)
{
    int n = m->B * m->T, C = m->C, Vh = m->V / 2;
    size_t nt = (size_t)m->V * C, ny = (size_t)n * C;
    float *table = oc_uniform(c, nt, 0.1), *y0 = oc_uniform(c, ny, 0.1);
    float *dy = oc_uniform(c, ny, 0.01), *dt0 = oc_uniform(c, nt, 0.01);
    int32_t *ids = zipf_ids(c, n, m->V_valid), *tp = oc_xmalloc(n * 4);
    float *y[OC_RUNS], *ya[OC_RUNS], *ytp[OC_RUNS], *dt[OC_RUNS];
    int *count = calloc((size_t)m->V, sizeof(int)), most = 0;
    char sh[64];

    /* Tensor parallelism: rank 1 of 2 holds rows Vh.., so the ids below
     * are negative there (another rank's rows: zeros). */
    for (int i = 0; i < n; i++)
        tp[i] = ids[i] - Vh;
    if (m->skip_id >= 0)
        for (int i = 0; i < n; i += 7)
            ids[i] = m->skip_id; /* padding */
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        size_t row = (size_t)C * oc_act_size(c);
        void *d_t = oc_put_act(c, table, nt, "table");
        void *d_y = oc_blank(c, ny * oc_act_size(c), "y");
        void *d_ya = oc_put_act(c, y0, ny, "y"),
             *d_dy = oc_put_act(c, dy, ny, "dy");
        int32_t *d_ids = oc_put(c, ids, (size_t)n * 4, "ids");
        int32_t *d_tp = oc_put(c, tp, (size_t)n * 4, "ids tp");
        float *d_dt = oc_put(c, dt0, nt * sizeof(float), "dtable");

        o->embed_fwd(d_y, d_ids, d_t, n, C, 0);
        o->embed_fwd(d_ya, d_ids, d_t, n, C, 1);
        oc_sync(c, "embed_fwd");
        y[r] = oc_get_act(c, d_y, ny, "embed_fwd");
        ya[r] = oc_get_act(c, d_ya, ny, "embed_fwd");
        /* Rank 1's shard: the table's rows Vh..V. */
        o->embed_fwd(d_y, d_tp, (const char *)d_t + (size_t)Vh * row, n, C, 0);
        oc_sync(c, "embed_fwd");
        ytp[r] = oc_get_act(c, d_y, ny, "embed_fwd");
        o->embed_bwd(d_dt, d_dy, d_ids, n, C, m->skip_id);
        oc_sync(c, "embed_bwd");
        dt[r] = oc_get_f32(c, d_dt, nt, "embed_bwd");
        oc_pool_free(c);
    }
    for (int i = 0; i < n; i++)
        if (ids[i] != m->skip_id && ++count[ids[i]] > most)
            most = count[ids[i]];
    snprintf(sh, sizeof(sh), "%s %dx%d of %d", m->name, n, C, m->V);
    oc_check(c, "embed_fwd.copy", sh, y, ny, 0.0, 0.0, NULL);
    oc_check(c, "embed_fwd.accumulate", sh, ya, ny,
             bft(c, 2, oc_maxabs(ya[0], ny)), NR(c), NULL);
    oc_check(c, "embed_fwd.tp_shard", sh, ytp, ny, 0.0, 0.0, NULL);
    snprintf(sh, sizeof(sh), "%s skip %d, %d repeats", m->name, m->skip_id,
             most);
    oc_check(c, "embed_bwd", sh, dt, nt,
             SUM_EPS * (most * oc_maxabs(dy, ny) + oc_maxabs(dt0, nt)), NR(c),
             NULL);
    oc_free_runs(y);
    oc_free_runs(ya);
    oc_free_runs(ytp);
    oc_free_runs(dt);
    free(table);
    free(y0);
    free(dy);
    free(dt0);
    free(ids);
    free(tp);
    free(count);
}

/* ------------------------------------------------------------ layernorm */

/* Rows with an offset (cancellation in a one-pass variance) and their
 * statistics on the host, in double. */
static float *
ln_inputs(struct oc *c, int n, int C)
{
    float *x = oc_uniform(c, (size_t)n * C, 1.0);

    for (int i = 0; i < n; i++) {
        float off = (float)((int)(oc_next(c) % 7) - 3);

        for (int j = 0; j < C; j++)
            x[(size_t)i * C + j] += off;
    }
    oc_round_act(c, x, (size_t)n * C);
    return x;
}

static void
ln_stats(const float *x, int n, int C, float eps, float *mean, float *rstd)
{
    for (int i = 0; i < n; i++) {
        double s = 0, v = 0;

        for (int j = 0; j < C; j++)
            s += x[(size_t)i * C + j];
        s /= C;
        for (int j = 0; j < C; j++) {
            double d = x[(size_t)i * C + j] - s;

            v += d * d;
        }
        mean[i] = (float)s;
        rstd[i] = (float)(1.0 / sqrt(v / C + eps));
    }
}

static double
max_xhat(const float *x, const float *mean, const float *rstd, int n, int C)
{
    double mx = 0;

    for (int i = 0; i < n; i++)
        for (int j = 0; j < C; j++)
            mx = fmax(mx, fabs((x[(size_t)i * C + j] - mean[i]) * rstd[i]));
    return mx;
}

/* layernorm_fwd (and with the residual fused, r aliasing a): the mean
 * and the variance are C-term sums: |dmean| <= eps C max|x|, |drstd| <=
 * eps C max|rstd|; y: |d| <= eps C (max|x| max|rstd| + max|xhat|) max|w|
 * + 4 eps max|y|; r = a + b exact (bf16: 2 roundings).  layernorm_bwd:
 * dx from two C-term means of dy w and dy w xhat: |d| <= eps C max|rstd|
 * max|dy| max|w| (1 + max|xhat|)^2 + eps max|dx0| + 4 eps max|dx|; dw, db
 * are n-term sums: eps (n max|dy| max|xhat| + max|dw0|). */
static void
case_layernorm(struct oc *c, const struct oc_model *m)
{
    int n = m->B * m->T, C = m->C;
    size_t nx = (size_t)n * C;
    float *x = ln_inputs(c, n, C), *a = oc_uniform(c, nx, 1.0);
    float *w = oc_away_from_zero(c, C, 0.8, 1.2);
    float *b = oc_uniform(c, C, 0.1), *bb = oc_xmalloc(nx * sizeof(float));
    float *dy = oc_uniform(c, nx, 0.01), *dx0 = oc_uniform(c, nx, 0.01);
    float *dw0 = oc_uniform(c, C, 0.1), *db0 = oc_uniform(c, C, 0.1);
    float *mean = oc_xmalloc(n * 4), *rstd = oc_xmalloc(n * 4);
    float *xr = oc_xmalloc(nx * 4);
    float *y[OC_RUNS], *mu[OC_RUNS], *rs[OC_RUNS], *ry[OC_RUNS], *rr[OC_RUNS];
    float *rmu[OC_RUNS], *rrs[OC_RUNS], *dx[OC_RUNS], *dw[OC_RUNS];
    float *db[OC_RUNS];
    double mx, mr, mxh, ty, eps = SUM_EPS;
    char sh[64];

    /* The residual: x = a + bb with bb = x - a, so both rows look alike. */
    for (size_t i = 0; i < nx; i++)
        bb[i] = x[i] - a[i];
    oc_round_act(c, bb, nx);
    for (size_t i = 0; i < nx; i++)
        xr[i] = a[i] + bb[i];
    oc_round_act(c, xr, nx);
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_x = oc_put_act(c, x, nx, "x"), *d_w = oc_put_act(c, w, C, "w");
        void *d_b = oc_put_act(c, b, C, "b");
        void *d_y = oc_blank(c, nx * oc_act_size(c), "y");
        float *d_m = oc_blank(c, n * 4, "mean"), *d_r = oc_blank(c, n * 4, "r");
        void *d_a = oc_put_act(c, a, nx, "a"),
             *d_bb = oc_put_act(c, bb, nx, "bb");

        o->layernorm_fwd(d_y, d_m, d_r, d_x, d_w, d_b, n, C, m->ln_eps);
        oc_sync(c, "layernorm_fwd");
        y[r] = oc_get_act(c, d_y, nx, "layernorm_fwd");
        mu[r] = oc_get_f32(c, d_m, n, "layernorm_fwd");
        rs[r] = oc_get_f32(c, d_r, n, "layernorm_fwd");
        o->residual_layernorm_fwd(d_a, d_y, d_m, d_r, d_a, d_bb, d_w, d_b, n, C,
                                  m->ln_eps);
        oc_sync(c, "residual_layernorm_fwd");
        rr[r] = oc_get_act(c, d_a, nx, "residual_layernorm_fwd");
        ry[r] = oc_get_act(c, d_y, nx, "residual_layernorm_fwd");
        rmu[r] = oc_get_f32(c, d_m, n, "residual_layernorm_fwd");
        rrs[r] = oc_get_f32(c, d_r, n, "residual_layernorm_fwd");
        oc_pool_free(c);
    }
    ln_stats(x, n, C, m->ln_eps, mean, rstd);
    mx = oc_maxabs(x, nx);
    mr = oc_maxabs(rstd, n);
    mxh = max_xhat(x, mean, rstd, n, C);
    ty = eps * C * (mx * mr + mxh) * oc_maxabs(w, C) +
         4 * eps * oc_maxabs(y[0], nx) + bft(c, 2, oc_maxabs(y[0], nx));
    snprintf(sh, sizeof(sh), "%s %dx%d eps %g", m->name, n, C, m->ln_eps);
    oc_check(c, "layernorm_fwd.y", sh, y, nx, ty, NR(c), NULL);
    oc_check(c, "layernorm_fwd.mean", sh, mu, n, eps * C * mx, NR(c), NULL);
    oc_check(c, "layernorm_fwd.rstd", sh, rs, n, eps * C * mr, NR(c), NULL);
    oc_check(c, "residual_layernorm_fwd.r", sh, rr, nx,
             bft(c, 2, oc_maxabs(rr[0], nx)), NR(c), NULL);
    /* bf16: the statistics may be of r before or after its rounding. */
    oc_check(c, "residual_layernorm_fwd.y", sh, ry, nx,
             ty + bft(c, 2, oc_maxabs(xr, nx) * mr * oc_maxabs(w, C)), NR(c),
             NULL);
    oc_check(c, "residual_layernorm_fwd.mean", sh, rmu, n,
             eps * C * oc_maxabs(xr, nx) + bft(c, 2, oc_maxabs(xr, nx)), NR(c),
             NULL);
    oc_check(c, "residual_layernorm_fwd.rstd", sh, rrs, n,
             eps * C * mr + bft(c, 2, mr), NR(c), NULL);

    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_x = oc_put_act(c, x, nx, "x"), *d_w = oc_put_act(c, w, C, "w");
        void *d_dy = oc_put_act(c, dy, nx, "dy");
        void *d_dx = oc_put_act(c, dx0, nx, "dx");
        float *d_dw = oc_put(c, dw0, C * 4, "dw"),
              *d_db = oc_put(c, db0, C * 4, "db");
        float *d_m = oc_put(c, mean, n * 4, "mean");
        float *d_r = oc_put(c, rstd, n * 4, "rstd");

        o->layernorm_bwd(d_dx, d_dw, d_db, d_dy, d_x, d_w, d_m, d_r, n, C);
        oc_sync(c, "layernorm_bwd");
        dx[r] = oc_get_act(c, d_dx, nx, "layernorm_bwd");
        dw[r] = oc_get_f32(c, d_dw, C, "layernorm_bwd");
        db[r] = oc_get_f32(c, d_db, C, "layernorm_bwd");
        oc_pool_free(c);
    }
    {
        double mdy = oc_maxabs(dy, nx), k = 1 + mxh;
        double tdx = eps * C * mr * mdy * oc_maxabs(w, C) * k * k +
                     eps * oc_maxabs(dx0, nx) + 4 * eps * oc_maxabs(dx[0], nx) +
                     bft(c, 2, oc_maxabs(dx[0], nx));

        oc_check(c, "layernorm_bwd.dx", sh, dx, nx, tdx, NR_BWD(c), NULL);
        oc_check(c, "layernorm_bwd.dw", sh, dw, C,
                 eps * (n * mdy * mxh + oc_maxabs(dw0, C)), NR_BWD(c), NULL);
        oc_check(c, "layernorm_bwd.db", sh, db, C,
                 eps * (n * mdy + oc_maxabs(db0, C)), NR_BWD(c), NULL);
    }
    oc_free_runs(y);
    oc_free_runs(mu);
    oc_free_runs(rs);
    oc_free_runs(ry);
    oc_free_runs(rr);
    oc_free_runs(rmu);
    oc_free_runs(rrs);
    oc_free_runs(dx);
    oc_free_runs(dw);
    oc_free_runs(db);
    free(x);
    free(a);
    free(w);
    free(b);
    free(bb);
    free(dy);
    free(dx0);
    free(dw0);
    free(db0);
    free(mean);
    free(rstd);
    free(xr);
}

/* ------------------------------------------------------------ activations */

static const char *
act_name(enum ops_act a)
{
    switch (a) {
    case OPS_ACT_GELU:
        return "gelu";
    case OPS_ACT_GELU_TANH:
        return "gelu_tanh";
    case OPS_ACT_RELU:
        return "relu";
    case OPS_ACT_TANH:
        return "tanh";
    }
    return "?";
}

/* act_fwd: |d| <= 8 eps max(|x|, |y|) (erf, tanh, exp within a few ulp
 * on each side; the products around them); ReLU exact.  act_bwd: dx +=
 * dy f'(x): |d| <= 8 eps max|dy| (1 + max|x|)^2 + eps max|dx0| + 4 eps
 * max|dx| (GELU-tanh's derivative has x^3 terms). */
static void
act_case(struct oc *c, const char *model, enum ops_act act, size_t n)
{
    float *x = oc_away_from_zero(c, n, 1e-3, 4.0), *dy = oc_uniform(c, n, 1.0);
    float *dx0 = oc_uniform(c, n, 1.0), *y[OC_RUNS], *dx[OC_RUNS];
    char op[64], sh[64];
    double exact = act == OPS_ACT_RELU ? 0.0 : 1.0, mx = oc_maxabs(x, n);
    double ty, tdx;

    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_x = oc_put_act(c, x, n, "x");
        void *d_y = oc_blank(c, n * oc_act_size(c), "y");
        void *d_dy = oc_put_act(c, dy, n, "dy"),
             *d_dx = oc_put_act(c, dx0, n, "dx");

        o->act_fwd(d_y, d_x, n, act);
        o->act_bwd(d_dx, d_dy, d_x, n, act);
        oc_sync(c, "act");
        y[r] = oc_get_act(c, d_y, n, "act_fwd");
        dx[r] = oc_get_act(c, d_dx, n, "act_bwd");
        oc_pool_free(c);
    }
    ty = exact * 8 * OC_EPS * fmax(mx, oc_maxabs(y[0], n)) +
         bft(c, 2, oc_maxabs(y[0], n));
    tdx = 8 * OC_EPS * oc_maxabs(dy, n) * (1 + mx) * (1 + mx) * exact +
          OC_EPS * oc_maxabs(dx0, n) + 4 * OC_EPS * oc_maxabs(dx[0], n) +
          bft(c, 2, oc_maxabs(dx[0], n));
    snprintf(sh, sizeof(sh), "%s %zu", model, n);
    snprintf(op, sizeof(op), "act_fwd.%s", act_name(act));
    oc_check(c, op, sh, y, n, ty, NR(c), NULL);
    snprintf(op, sizeof(op), "act_bwd.%s", act_name(act));
    oc_check(c, op, sh, dx, n, tdx, NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(dx);
    free(x);
    free(dy);
    free(dx0);
}

static void
case_act(struct oc *c, const struct oc_model *m)
{
    act_case(c, m->name, m->act, (size_t)m->B * m->T * m->I);
}

static void
case_act_other(struct oc *c, const struct oc_model *m)
{
    size_t n = (size_t)m->B * m->T * m->C + 13;

    act_case(c, "pooler, relu", OPS_ACT_TANH, n);
    act_case(c, "pooler, relu", OPS_ACT_RELU, n);
}

/* ------------------------------------------------------------ elementwise */

/* add (y aliasing a), accumulate, scale, accumulate_f32, scale_f32: one
 * rounding each, so exact in fp32 (bf16: 2 roundings a step). */
static void
case_elementwise(struct oc *c, const struct oc_model *m)
{
    size_t n = (size_t)m->B * m->T * m->C + 13;
    float *a = oc_uniform(c, n, 1.0), *b = oc_uniform(c, n, 1.0);
    float *fa = oc_xmalloc(n * 4), *fb = oc_xmalloc(n * 4);
    float *add[OC_RUNS], *acc[OC_RUNS], *sc[OC_RUNS], *f[OC_RUNS];
    float *fs[OC_RUNS];
    char sh[64];

    for (size_t i = 0; i < n; i++) {
        fa[i] = (float)(a[i] * 1.000123);
        fb[i] = (float)(b[i] * 0.999871);
    }
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_a = oc_put_act(c, a, n, "a"), *d_b = oc_put_act(c, b, n, "b");
        float *d_fa = oc_put(c, fa, n * 4, "fa"),
              *d_fb = oc_put(c, fb, n * 4, "fb");

        o->add(d_a, d_a, d_b, n);
        oc_sync(c, "add");
        add[r] = oc_get_act(c, d_a, n, "add");
        o->accumulate(d_a, d_b, n);
        oc_sync(c, "accumulate");
        acc[r] = oc_get_act(c, d_a, n, "accumulate");
        o->scale(d_a, n, 0.7f);
        oc_sync(c, "scale");
        sc[r] = oc_get_act(c, d_a, n, "scale");
        o->accumulate_f32(d_fa, d_fb, n);
        oc_sync(c, "accumulate_f32");
        f[r] = oc_get_f32(c, d_fa, n, "accumulate_f32");
        o->scale_f32(d_fb, n, 0.3f);
        oc_sync(c, "scale_f32");
        fs[r] = oc_get_f32(c, d_fb, n, "scale_f32");
        oc_pool_free(c);
    }
    snprintf(sh, sizeof(sh), "%zu", n);
    oc_check(c, "add.aliased", sh, add, n, bft(c, 2, oc_maxabs(add[0], n)),
             NR(c), NULL);
    oc_check(c, "accumulate", sh, acc, n, bft(c, 4, oc_maxabs(acc[0], n)),
             NR(c), NULL);
    oc_check(c, "scale", sh, sc, n, bft(c, 6, oc_maxabs(sc[0], n)), NR(c),
             NULL);
    oc_check(c, "accumulate_f32", sh, f, n, 0.0, 0.0, NULL);
    oc_check(c, "scale_f32", sh, fs, n, 0.0, 0.0, NULL);
    oc_free_runs(fs);
    oc_free_runs(add);
    oc_free_runs(acc);
    oc_free_runs(sc);
    oc_free_runs(f);
    free(a);
    free(b);
    free(fa);
    free(fb);
}

/* ------------------------------------------------------------ dropout */

/* dropout: the kept elements are those with ops_dropout_uniform(seed, i)
 * >= p on every backend, counted against the host's own draws; the
 * values x / (1 - p) within 2 ulp (x * (1 / (1 - p)) or x / (1 - p));
 * backward: dropped elements keep dx exactly, kept ones within 2 ulp
 * of dy / (1 - p) plus the addition's rounding. */
static void
case_dropout(struct oc *c, const struct oc_model *m)
{
    size_t n = (size_t)m->B * m->T * m->C + 13;
    const float p = 0.1f;
    const uint64_t seed = 0x0123456789abcdefULL;
    float *x = oc_away_from_zero(c, n, 0.5, 1.5), *dy = oc_uniform(c, n, 1.0);
    float *dx0 = oc_away_from_zero(c, n, 0.5, 1.5);
    float *y[OC_RUNS], *yi[OC_RUNS], *dx[OC_RUNS];
    unsigned char *keep = oc_xmalloc(n);
    size_t bad_mask = 0, bad_bwd = 0, kept = 0;
    char sh[64];

    for (size_t i = 0; i < n; i++)
        kept += keep[i] = ops_dropout_uniform(seed, i) >= p;
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_x = oc_put_act(c, x, n, "x");
        void *d_y = oc_blank(c, n * oc_act_size(c), "y");
        void *d_dy = oc_put_act(c, dy, n, "dy"),
             *d_dx = oc_put_act(c, dx0, n, "dx");

        o->dropout_fwd(d_y, d_x, n, p, seed);
        oc_sync(c, "dropout_fwd");
        y[r] = oc_get_act(c, d_y, n, "dropout_fwd");
        o->dropout_fwd(d_x, d_x, n, p, seed);
        oc_sync(c, "dropout_fwd");
        yi[r] = oc_get_act(c, d_x, n, "dropout_fwd");
        o->dropout_bwd(d_dx, d_dy, n, p, seed);
        oc_sync(c, "dropout_bwd");
        dx[r] = oc_get_act(c, d_dx, n, "dropout_bwd");
        oc_pool_free(c);
        for (size_t i = 0; i < n; i++) {
            bad_mask += (y[r][i] != 0.0f) != keep[i];
            bad_mask += (yi[r][i] != 0.0f) != keep[i];
            bad_bwd += !keep[i] && dx[r][i] != dx0[i];
        }
    }
    snprintf(sh, sizeof(sh), "%zu, p %g, %zu kept", n, p, kept);
    oc_check_count(c, "dropout_fwd.mask", sh, bad_mask, 2 * n * OC_RUNS,
                   "elements kept or dropped against the host's draws");
    oc_check(c, "dropout_fwd.y", sh, y, n,
             2 * OC_EPS * oc_maxabs(y[0], n) + bft(c, 2, oc_maxabs(y[0], n)),
             NR(c), NULL);
    oc_check(c, "dropout_fwd.in_place", sh, yi, n,
             2 * OC_EPS * oc_maxabs(yi[0], n) + bft(c, 2, oc_maxabs(yi[0], n)),
             NR(c), NULL);
    oc_check_count(c, "dropout_bwd.mask", sh, bad_bwd, n * OC_RUNS,
                   "dropped elements' dx changed");
    oc_check(c, "dropout_bwd.dx", sh, dx, n,
             2 * OC_EPS * oc_maxabs(dy, n) / (1 - p) +
                 2 * OC_EPS * oc_maxabs(dx[0], n) +
                 bft(c, 2, oc_maxabs(dx[0], n)),
             NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(yi);
    oc_free_runs(dx);
    free(x);
    free(dy);
    free(dx0);
    free(keep);
}

/* ------------------------------------------------------------ attention */

/* One attention case: NH heads h0.. of NH_all, D = C_all / NH_all.
 * Forward: out = P.v with P the softmax of D-term scores: a score is off
 * by at most eps sqrt(D) max|q| max|k|, which moves P's row by twice
 * that (in L1), and the T-term sum of P v adds eps T max|v|:  |d| <= eps
 * max|v| (T + 2 sqrt(D) max|q| max|k|) / (1 - p); bf16: P may be rounded
 * before P.v (2 roundings of max|v|) and out is (2 roundings).
 * Backward: the terms' magnitudes depend on the column sums of P, which
 * only the op sees, so the bound scales with the largest reference
 * gradient of each third: |d| <= 4 eps (T + D) max|ref - initial| + eps
 * max|initial| (bf16: 8 roundings), with ||d|| / ||ref|| under the
 * backward limit. */
static void
attention_case(struct oc *c, const struct oc_model *m, const char *what, int h0,
               int NH, float p, const float *key_bias)
{
    int B = m->B, T = m->T, D = m->C / m->NH, C = NH * D, NH_all = m->NH;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
    const uint64_t seed = 0xfeedface12345678ULL;
    float *qkv = oc_xmalloc(nq * 4), *dout = oc_uniform(c, no, 1.0);
    float *dqkv0 = oc_uniform(c, nq, 0.01), *out[OC_RUNS], *dq[3][OC_RUNS];
    double mq = 0, mk = 0, mv = 0, tol;
    char op[80], sh[96];

    for (size_t i = 0; i < nq; i++) {
        int part = (int)(i % (3 * (size_t)C) / C); /* q, k or v */
        double a = part == 2 ? 1.0 : 2.0;

        qkv[i] = (float)(a * (2.0 * ((oc_next(c) >> 11) / 9007199254740992.0) -
                              1.0));
    }
    oc_round_act(c, qkv, nq);
    for (size_t i = 0; i < nq; i++) {
        int part = (int)(i % (3 * (size_t)C) / C);
        double a = fabs(qkv[i]);

        if (part == 0)
            mq = fmax(mq, a);
        else if (part == 1)
            mk = fmax(mk, a);
        else
            mv = fmax(mv, a);
    }
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_qkv = oc_put_act(c, qkv, nq, "qkv");
        void *d_out = oc_blank(c, no * oc_act_size(c), "out");
        void *d_dout = oc_put_act(c, dout, no, "dout");
        void *d_dqkv = oc_put_act(c, dqkv0, nq, "dqkv");
        void *state = oc_blank(c, o->attention_state_bytes(B, T, NH), "state");
        void *scratch =
            oc_blank(c, o->attention_scratch_bytes(B, T, NH, C), "scratch");
        float *d_bias = key_bias
                            ? oc_put(c, key_bias, (size_t)B * T * 4, "key_bias")
                            : NULL;
        float *g;

        o->attention_fwd(d_out, state, d_qkv, d_bias, B, T, C, NH, h0, NH_all,
                         m->causal, p, seed);
        oc_sync(c, "attention_fwd");
        out[r] = oc_get_act(c, d_out, no, "attention_fwd");
        o->attention_bwd(d_dqkv, scratch, d_dout, d_out, d_qkv, state, d_bias,
                         B, T, C, NH, h0, NH_all, m->causal, p, seed);
        oc_sync(c, "attention_bwd");
        g = oc_get_act(c, d_dqkv, nq, "attention_bwd");
        oc_pool_free(c);
        /* Split dqkv into its q, k and v thirds. */
        for (int part = 0; part < 3; part++) {
            float *t = oc_xmalloc(no * 4);

            for (size_t row = 0; row < (size_t)B * T; row++)
                memcpy(t + row * C, g + row * 3 * C + (size_t)part * C,
                       (size_t)C * 4);
            dq[part][r] = t;
        }
        free(g);
    }
    snprintf(sh, sizeof(sh), "%s B%d T%d D%d h%d-%d/%d%s p %g", m->name, B, T,
             D, h0, h0 + NH - 1, NH_all,
             key_bias    ? " bias"
             : m->causal ? " causal"
                         : "",
             p);
    tol = OC_EPS * mv * (T + 2 * sqrt(D) * mq * mk) / (1 - p) +
          bft(c, 2, mv / (1 - p)) + bft(c, 2, oc_maxabs(out[0], no));
    snprintf(op, sizeof(op), "attention_fwd.%s", what);
    oc_check(c, op, sh, out, no, tol, NR(c), NULL);
    for (int part = 0; part < 3; part++) {
        static const char *const name[3] = { "dq", "dk", "dv" };
        float *init = oc_xmalloc(no * 4);
        double mref = 0, minit;

        for (size_t row = 0; row < (size_t)B * T; row++)
            memcpy(init + row * C, dqkv0 + row * 3 * C + (size_t)part * C,
                   (size_t)C * 4);
        mref = maxabs_delta(dq[part][0], init, no);
        minit = oc_maxabs(init, no);
        tol = 4 * OC_EPS * (T + D) * mref + OC_EPS * minit + bft(c, 8, mref) +
              bft(c, 2, minit);
        snprintf(op, sizeof(op), "attention_bwd.%s.%s", what, name[part]);
        oc_check(c, op, sh, dq[part], no, tol, NR_BWD(c), NULL);
        oc_free_runs(dq[part]);
        free(init);
    }
    oc_free_runs(out);
    free(qkv);
    free(dout);
    free(dqkv0);
}

/* Full heads without and with dropout, and rank 1 of 2 of tensor
 * parallelism (heads NH/2..NH-1, dropout drawn as the whole model's).
 * ERNIE's batch is padded: key_bias -10000 past each row's length.  The
 * bf16 section runs without dropout: cuDNN's fused attention draws its
 * own bits (ops.h). */
static void
case_attention(struct oc *c, const struct oc_model *m)
{
    float *bias = NULL;
    float p = c->dt == OPS_F32 ? 0.1f : 0.0f;

    if (!m->causal) {
        bias = oc_xmalloc((size_t)m->B * m->T * 4);
        for (int b = 0; b < m->B; b++) {
            int len = m->T - b * (m->T / 3); /* T, then 2/3 T, ... */

            for (int j = 0; j < m->T; j++)
                bias[(size_t)b * m->T + j] = j < len ? 0.0f : -10000.0f;
        }
    }
    attention_case(c, m, "heads", 0, m->NH, 0.0f, bias);
    if (p > 0)
        attention_case(c, m, "heads_dropout", 0, m->NH, p, bias);
    attention_case(c, m, "tp_rank1", m->NH / 2, m->NH / 2, p, bias);
    free(bias);
}

/* ------------------------------------------------------------ loss */

/* Targets: about 10 % ignored (-100), the rest in [0, V). */
static int32_t *
targets(struct oc *c, int n, int V)
{
    int32_t *t = oc_ids(c, n, 0, V);

    for (int i = 0; i < n; i++)
        if (oc_next(c) % 10 == 0)
            t[i] = -100;
    return t;
}

static unsigned char *
valid_rows(const int32_t *t, int n)
{
    unsigned char *v = oc_xmalloc(n);

    for (int i = 0; i < n; i++)
        v[i] = t[i] >= 0;
    return v;
}

/* The bounds of a softmax cross-entropy over V columns: the loss is max
 * + log(sum) - x_t, the sum of V positive terms (sqrt(V) eps), each exp
 * within a few ulp of its argument x - max (rounded: eps max|x|):
 * |dloss| <= 4 eps (sqrt(V) + 2 max|x| + 4); dlogits = p dscale - onehot
 * dscale: |d| <= 4 eps (sqrt(V) + 2 max|x| + 4) max|dlogits| + 2 eps
 * dscale. */
static double
xent_tol_loss(int V, double mx)
{
    return 4 * OC_EPS * (sqrt(V) + 2 * mx + 4);
}

static double
xent_tol_grad(const struct oc *c, int V, double mx, double mg, double dscale)
{
    return xent_tol_loss(V, mx) * mg + 2 * OC_EPS * dscale + bft(c, 2, mg);
}

/* Logits of n rows of V columns, the first V_valid real: the pad columns
 * hold 50, above every real logit, so that a pad counted anywhere shows. */
static float *
padded_logits(struct oc *c, int n, int V, int V_valid, double *mx)
{
    float *x = oc_uniform(c, (size_t)n * V, 6.0);

    *mx = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < V; j++) {
            float *v = &x[(size_t)i * V + j];

            if (j >= V_valid)
                *v = 50.0f;
            else
                *mx = fmax(*mx, fabs(*v));
        }
    return x;
}

/* xent on the LM head's rows (GPT: every token; ERNIE: the MLM rows) over
 * the padded vocab: dlogits apart with no loss scale, and in place (the
 * fused classifier) with fp16's loss scale 8 from backend memory. */
static void
case_xent(struct oc *c, const struct oc_model *m)
{
    int n = m->mlm ? n_mlm(m) : m->B * m->T, V = m->V, Vv = m->V_valid;
    size_t nl = (size_t)n * V;
    double mx;
    float *logits = padded_logits(c, n, V, Vv, &mx);
    float *loss[2][OC_RUNS], *dl[2][OC_RUNS];
    const float ls = 8.0f;
    int32_t *t = targets(c, n, Vv);
    unsigned char *valid = valid_rows(t, n);
    int n_valid = 0;
    float dscale;
    char sh[64];

    for (int i = 0; i < n; i++)
        n_valid += valid[i];
    dscale = 1.0f / (float)n_valid;
    for (int r = 0; r < OC_RUNS; r++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            const struct ops *o = oc_side(c, r);
            void *d_l = oc_put_act(c, logits, nl, "logits");
            void *d_d = inplace ? d_l : oc_blank(c, nl * oc_act_size(c), "dl");
            float *d_loss = oc_blank(c, (size_t)n * 4, "losses");
            float *d_ls = inplace ? oc_put(c, &ls, 4, "loss_scale") : NULL;
            int32_t *d_t = oc_put(c, t, (size_t)n * 4, "targets");

            o->xent(d_loss, d_d, d_l, d_t, n, V, Vv, dscale, d_ls);
            oc_sync(c, "xent");
            loss[inplace][r] = oc_get_f32(c, d_loss, n, "xent");
            dl[inplace][r] = oc_get_act(c, d_d, nl, "xent");
            oc_pool_free(c);
        }
    }
    snprintf(sh, sizeof(sh), "%s %dx%d (%d real)", m->name, n, V, Vv);
    for (int inplace = 0; inplace < 2; inplace++) {
        char op[64];
        double mg = oc_maxabs(dl[inplace][0], nl);

        snprintf(op, sizeof(op), "xent%s.losses",
                 inplace ? ".in_place_scaled" : "");
        oc_check(c, op, sh, loss[inplace], n, xent_tol_loss(Vv, mx), NR(c),
                 NULL);
        snprintf(op, sizeof(op), "xent%s.dlogits",
                 inplace ? ".in_place_scaled" : "");
        oc_check(c, op, sh, dl[inplace], nl,
                 xent_tol_grad(c, Vv, mx, mg, dscale * (inplace ? ls : 1)),
                 NR(c), NULL);
        oc_free_runs(loss[inplace]);
        oc_free_runs(dl[inplace]);
    }
    free(logits);
    free(t);
    free(valid);
}

/* The vocab-parallel trio over S shards of V_valid columns each (padded
 * to OPS_VOCAB_ALIGN), the reductions done on the host as the comm
 * backend would (max, then sum in shard order).  rowmax is exact;
 * sums[2i] (rows with a target) within 4 eps (sqrt(V) + 2 max|x| + 4) of
 * the sum; sums[2i+1] is the target's logit, exact; losses and dlogits
 * as xent's. */
static void
xent_vp_case(struct oc *c, const struct oc_model *m, int S)
{
    int n = m->mlm ? n_mlm(m) : m->B * m->T;
    int Vv = (m->V_valid + S - 1) / S;
    int Vs = S == 1 ? m->V : (int)round_up((size_t)Vv, OPS_VOCAB_ALIGN);
    size_t nl = (size_t)n * Vs;
    float *logits[2], *rmax[2][OC_RUNS], *loss[OC_RUNS], *dl[2][OC_RUNS];
    double *sums[2][OC_RUNS];
    int32_t *t = targets(c, n, m->V_valid);
    unsigned char *valid = valid_rows(t, n), *vm2 = oc_xmalloc(2 * n);
    float dscale;
    const float ls = 4.0f; /* two shards: with fp16's loss scale */
    int n_valid = 0, vv[2];
    double mx = 0;
    char sh[80];

    for (int i = 0; i < n; i++) {
        n_valid += valid[i];
        vm2[2 * i] = valid[i];
        vm2[2 * i + 1] = 1;
    }
    dscale = 1.0f / (float)n_valid;
    for (int s = 0; s < S; s++) {
        vv[s] = s + 1 < S ? Vv : m->V_valid - Vv * (S - 1);
        logits[s] = oc_uniform(c, nl, 6.0);
        for (int i = 0; i < n; i++) /* pads: anything, even large */
            for (int j = vv[s]; j < Vs; j++)
                logits[s][(size_t)i * Vs + j] = 50.0f;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < vv[s]; j++)
                mx = fmax(mx, fabs(logits[s][(size_t)i * Vs + j]));
    }
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_l[2];
        float *d_max[2], *d_loss = oc_blank(c, (size_t)n * 4, "losses");
        double *d_sums[2], *hs = oc_xmalloc((size_t)2 * n * 8);
        float *hm = oc_xmalloc((size_t)n * 4);
        int32_t *d_t = oc_put(c, t, (size_t)n * 4, "targets");
        float *d_ls = S == 2 ? oc_put(c, &ls, 4, "loss_scale") : NULL;

        for (int s = 0; s < S; s++) {
            d_l[s] = oc_put_act(c, logits[s], nl, "logits");
            d_max[s] = oc_blank(c, (size_t)n * 4, "rowmax");
            d_sums[s] = oc_blank(c, (size_t)n * 16, "sums");
            o->xent_max(d_max[s], d_l[s], n, Vs, vv[s]);
            oc_sync(c, "xent_max");
            rmax[s][r] = oc_get_f32(c, d_max[s], n, "xent_max");
        }
        for (int i = 0; i < n; i++) {
            hm[i] = rmax[0][r][i];
            for (int s = 1; s < S; s++)
                hm[i] = fmaxf(hm[i], rmax[s][r][i]);
        }
        for (int s = 0; s < S; s++) {
            o->upload(d_max[s], hm, (size_t)n * 4);
            o->xent_partial(d_sums[s], d_l[s], d_max[s], d_t, n, Vs, vv[s],
                            s * Vv);
            oc_sync(c, "xent_partial");
            sums[s][r] =
                oc_get_f64(c, d_sums[s], (size_t)2 * n, "xent_partial");
        }
        for (int i = 0; i < 2 * n; i++) {
            hs[i] = sums[0][r][i];
            for (int s = 1; s < S; s++)
                hs[i] += sums[s][r][i];
        }
        for (int s = 0; s < S; s++) {
            o->upload(d_sums[s], hs, (size_t)2 * n * 8);
            o->xent_finish(d_loss, d_l[s], d_l[s], d_max[s], d_sums[s], d_t, n,
                           Vs, vv[s], s * Vv, dscale, d_ls);
            oc_sync(c, "xent_finish");
            dl[s][r] = oc_get_act(c, d_l[s], nl, "xent_finish");
        }
        loss[r] = oc_get_f32(c, d_loss, n, "xent_finish");
        free(hs);
        free(hm);
        oc_pool_free(c);
    }
    for (int s = 0; s < S; s++) {
        char op[64];
        double ms = 0;

        snprintf(sh, sizeof(sh), "%s %dx%d (%d real) %d/%d", m->name, n, Vs,
                 vv[s], s, S);
        snprintf(op, sizeof(op), "xent_max.shards%d", S);
        oc_check(c, op, sh, rmax[s], n, 0.0, 0.0, NULL);
        for (int i = 0; i < n; i++)
            if (valid[i])
                ms = fmax(ms, sums[s][0][2 * i]);
        snprintf(op, sizeof(op), "xent_partial.shards%d", S);
        oc_check_f64(c, op, sh, sums[s], (size_t)2 * n,
                     xent_tol_loss(vv[s], mx) * ms, vm2);
        snprintf(op, sizeof(op), "xent_finish.shards%d.dlogits", S);
        oc_check(c, op, sh, dl[s], nl,
                 xent_tol_grad(c, m->V_valid, mx, oc_maxabs(dl[s][0], nl),
                               dscale * (S == 2 ? ls : 1)),
                 NR(c), NULL);
        oc_free_runs(rmax[s]);
        for (int r = 0; r < OC_RUNS; r++)
            free(sums[s][r]);
        oc_free_runs(dl[s]);
        free(logits[s]);
    }
    {
        char op[64];

        snprintf(op, sizeof(op), "xent_finish.shards%d.losses", S);
        snprintf(sh, sizeof(sh), "%s %d rows, V %d", m->name, n, m->V_valid);
        oc_check(c, op, sh, loss, n, xent_tol_loss(m->V_valid, mx), NR(c),
                 NULL);
    }
    oc_free_runs(loss);
    free(t);
    free(valid);
    free(vm2);
}

static void
case_xent_vp(struct oc *c, const struct oc_model *m)
{
    xent_vp_case(c, m, 1);
    xent_vp_case(c, m, 2);
}

/* ------------------------------------------------------------ MLM rows */

/* gather_rows: a copy, exact; scatter_add_rows: the repeats of a row
 * summed in i order, the initial value before or after: |d| <= eps
 * (repeats max|dy| + max|dx0|) (bf16: 2 roundings a repeat). */
static void
case_rows(struct oc *c, const struct oc_model *m)
{
    int n = n_mlm(m), BT = m->B * m->T, C = m->C, real = (int)(0.15 * BT);
    size_t nx = (size_t)BT * C, ny = (size_t)n * C;
    float *x = oc_uniform(c, nx, 1.0), *dy = oc_uniform(c, ny, 1.0);
    float *dx0 = oc_uniform(c, nx, 1.0), *y[OC_RUNS], *dx[OC_RUNS];
    int32_t *rows = oc_xmalloc((size_t)n * 4);
    char sh[64];

    if (!m->mlm)
        goto out;
    for (int i = 0; i < n; i++) /* ascending positions, then row 0 */
        rows[i] = i < real ? (int32_t)((size_t)i * BT / real) : 0;
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_x = oc_put_act(c, x, nx, "x");
        void *d_y = oc_blank(c, ny * oc_act_size(c), "y");
        void *d_dy = oc_put_act(c, dy, ny, "dy"),
             *d_dx = oc_put_act(c, dx0, nx, "dx");
        int32_t *d_rows = oc_put(c, rows, (size_t)n * 4, "rows");

        o->gather_rows(d_y, d_x, d_rows, n, C);
        o->scatter_add_rows(d_dx, d_dy, d_rows, n, C);
        oc_sync(c, "gather_rows");
        y[r] = oc_get_act(c, d_y, ny, "gather_rows");
        dx[r] = oc_get_act(c, d_dx, nx, "scatter_add_rows");
        oc_pool_free(c);
    }
    snprintf(sh, sizeof(sh), "%s %d of %d rows x %d", m->name, n, BT, C);
    oc_check(c, "gather_rows", sh, y, ny, 0.0, 0.0, NULL);
    oc_check(c, "scatter_add_rows", sh, dx, nx,
             SUM_EPS *
                     ((n - real + 1) * oc_maxabs(dy, ny) + oc_maxabs(dx0, nx)) +
                 bft(c, 2.0 * (n - real + 1), oc_maxabs(dx[0], nx)),
             NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(dx);
out:
    free(x);
    free(dy);
    free(dx0);
    free(rows);
}

/* ------------------------------------------------------------ reductions */

/* sum_acc and sumsq_acc: double sums of float terms (squares exact in
 * double) in a fixed order on each side: |d| <= DBL_EPSILON (n sum|term|
 * + |acc0|), the worst case of an n-term double sum. */
static void
case_reduce(struct oc *c, const struct oc_model *m)
{
    size_t n = (size_t)m->B * m->T * m->C * 4 + 7, n1 = n / 3;
    float *x = oc_uniform(c, n, 1.0);
    double *s[OC_RUNS], *q[OC_RUNS], acc0 = 1.5, scale = 1.0 / (double)n;
    double abs_sum = 0, sq_sum = 0;
    char sh[64];

    for (size_t i = 0; i < n; i++) {
        abs_sum += fabs(x[i]);
        sq_sum += (double)x[i] * x[i];
    }
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        float *d_x = oc_put(c, x, n * 4, "x");
        double *d_s = oc_put(c, &acc0, 8, "acc");
        double *d_q = oc_put(c, &acc0, 8, "acc");

        o->sum_acc(d_s, d_x, n, scale);
        o->sumsq_acc(d_q, d_x, n1);
        o->sumsq_acc(d_q, d_x + n1, n - n1);
        oc_sync(c, "sum_acc");
        s[r] = oc_get_f64(c, d_s, 1, "sum_acc");
        q[r] = oc_get_f64(c, d_q, 1, "sumsq_acc");
        oc_pool_free(c);
    }
    snprintf(sh, sizeof(sh), "%zu", n);
    oc_check_f64(c, "sum_acc", sh, s, 1,
                 DBL_EPSILON * (n * abs_sum * scale + acc0), NULL);
    snprintf(sh, sizeof(sh), "%zu + %zu", n1, n - n1);
    oc_check_f64(c, "sumsq_acc", sh, q, 1, DBL_EPSILON * (n * sq_sum + acc0),
                 NULL);
    for (int r = 0; r < OC_RUNS; r++) {
        free(s[r]);
        free(q[r]);
    }
    free(x);
}

/* ------------------------------------------------------------ the step */

/* The fields of two results that differ: all exact (sumsq: both NaN
 * counts as equal) but grad_scale, within 4 ulp. */
static size_t
step_differs(const struct ops_step *a, const struct ops_step *b)
{
    float d = fabsf(a->grad_scale - b->grad_scale);
    int sumsq_same =
        a->sumsq == b->sumsq || (isnan(a->sumsq) && isnan(b->sumsq));

    return (a->skip != b->skip) + (a->t != b->t) +
           (a->loss_scale != b->loss_scale) + (a->good_steps != b->good_steps) +
           (a->bad_steps != b->bad_steps) + (a->n_skipped != b->n_skipped) +
           (a->bad_step != b->bad_step) + !sumsq_same +
           !(d <= 4 * FLT_EPSILON * fabsf(b->grad_scale));
}

/* One of loss_check (kind 0), step_prepare (1), step_finish (2) on a
 * backend copy of *st, which receives the result. */
static void
run_step(struct oc *c, struct ops_step *st, const struct ops_step_opts *so,
         double loss, int64_t step, int kind)
{
    const struct ops *o = c->pool_ops;
    struct ops_step *d_st = oc_put(c, st, sizeof(*st), "step");
    double *d_loss = oc_put(c, &loss, 8, "loss");

    if (kind == 0)
        o->loss_check(d_st, d_loss, step);
    else if (kind == 1)
        o->step_prepare(d_st, so); /* the settings: host memory */
    else
        o->step_finish(d_st);
    oc_sync(c, "step");
    oc_get(c, st, d_st, sizeof(*st), "step");
}

/* loss_check, step_prepare (clipping, a non-finite norm, fp16's dynamic
 * loss scale growing, shrinking on the decr_every-th non-finite step in a
 * row, at its floor) and step_finish: the fields exact, grad_scale within
 * 4 ulp; the reference against the host's formula too for skip,
 * grad_scale and sumsq (ops.h). */
static void
case_step(struct oc *c, const struct oc_model *m)
{
    struct ops_step base;
    static const struct ops_step_opts opts[4] = {
        { .max_norm = 1.0f,
          .incr_ratio = 2.0f,
          .decr_ratio = 0.5f,
          .min_scale = 1.0f }, /* clip to 1 */
        { .max_norm = 0.0f,
          .incr_ratio = 2.0f,
          .decr_ratio = 0.5f,
          .min_scale = 1.0f }, /* no clipping */
        { .max_norm = 1.0f,
          .dynamic = 1,
          .incr_every = 3,
          .incr_ratio = 2.0f,
          .decr_every = 1,
          .decr_ratio = 0.5f,
          .min_scale = 512.0f },
        { .max_norm = 1.0f,
          .dynamic = 1,
          .incr_every = 3,
          .incr_ratio = 2.0f,
          .decr_every = 2,
          .decr_ratio = 0.5f,
          .min_scale = 1.0f },
    };
    static const struct {
        const char *name;
        int kind; /* 0 loss_check, 1 step_prepare, 2 step_finish */
        double loss_or_sumsq;
        int64_t step;
        int opts, bad0, skip0;
        float scale0;
        int good0, bad_steps0;
    } cases[] = {
        { "loss_check.finite", 0, 2.5, 17, 0, -1, 0, 1, 0, 0 },
        { "loss_check.nan", 0, NAN, 17, 0, -1, 0, 1, 0, 0 },
        { "loss_check.inf_after_nan", 0, INFINITY, 18, 0, 5, 0, 1, 0, 0 },
        { "step_prepare.clip", 1, 25.0, 0, 0, -1, 0, 1, 0, 0 },
        { "step_prepare.clip_idle", 1, 0.25, 0, 0, -1, 0, 1, 0, 0 },
        { "step_prepare.max_norm_0", 1, 25.0, 0, 1, -1, 0, 1, 0, 0 },
        { "step_prepare.inf", 1, INFINITY, 0, 0, -1, 0, 1, 0, 0 },
        { "step_prepare.nan", 1, NAN, 0, 0, -1, 0, 1, 0, 0 },
        { "step_prepare.scale_grows", 1, 9437184.0, 0, 2, -1, 0, 1024, 2, 0 },
        { "step_prepare.scale_holds", 1, 9437184.0, 0, 2, -1, 0, 1024, 0, 0 },
        { "step_prepare.scale_halves", 1, NAN, 0, 2, -1, 0, 1024, 2, 0 },
        { "step_prepare.scale_floor", 1, INFINITY, 0, 2, -1, 0, 512, 0, 0 },
        { "step_prepare.decr_every_2_first", 1, NAN, 0, 3, -1, 0, 64, 1, 0 },
        { "step_prepare.decr_every_2_second", 1, NAN, 0, 3, -1, 0, 64, 0, 1 },
        { "step_finish", 2, 0, 0, 0, -1, 0, 1, 0, 0 },
        { "step_finish.skipped", 2, 0, 0, 0, -1, 1, 1, 0, 0 },
    };

    (void)m;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct ops_step got[OC_RUNS];
        size_t bad = 0;

        memset(&base, 0, sizeof(base));
        base.t = 9;
        base.loss_scale = cases[k].scale0;
        base.good_steps = cases[k].good0;
        base.bad_steps = cases[k].bad_steps0;
        base.n_skipped = 3;
        base.bad_step = cases[k].bad0;
        base.skip = cases[k].skip0;
        base.grad_scale = 0.25f;
        if (cases[k].kind == 1)
            base.sumsq = cases[k].loss_or_sumsq;
        for (int r = 0; r < OC_RUNS; r++) {
            got[r] = base;
            oc_side(c, r);
            run_step(c, &got[r], &opts[cases[k].opts], cases[k].loss_or_sumsq,
                     cases[k].step, cases[k].kind);
            oc_pool_free(c);
        }
        bad += step_differs(&got[1], &got[0]) + step_differs(&got[2], &got[1]);
        /* The reference against the contract where it is explicit. */
        if (cases[k].kind == 0) {
            int64_t want = cases[k].bad0 >= 0                 ? cases[k].bad0
                           : isfinite(cases[k].loss_or_sumsq) ? -1
                                                              : cases[k].step;

            bad += got[0].bad_step != want;
        } else if (cases[k].kind == 1) {
            double s = cases[k].loss_or_sumsq, ls = cases[k].scale0;
            double mn = opts[cases[k].opts].max_norm, norm = sqrt(s) / ls;
            int finite = isfinite(s);
            float want = 0.0f;

            if (finite)
                want = (float)(mn > 0 ? (1.0 / ls) * mn / fmax(norm, mn)
                                      : 1.0 / ls);
            bad += got[0].skip != !finite;
            bad += finite &&
                   !(fabsf(got[0].grad_scale - want) <= 4 * FLT_EPSILON * want);
            bad += finite && !(fabs(got[0].sumsq - s / (ls * ls)) <=
                               4 * DBL_EPSILON * s / (ls * ls));
        } else {
            bad += got[0].t != base.t + !base.skip;
        }
        oc_check_count(c, cases[k].name, "struct ops_step", bad, 8 * 2 + 3,
                       "fields differ");
    }
}

/* adamw over a flat buffer with decay, without, and skipped: m and v
 * within 4 eps of their magnitude; p within 4 eps max|p| + 16 eps
 * max|step| (sqrt, a division and the bias corrections round on either
 * side); the compute copy is the side's own p in the compute dtype, bit
 * for bit; a skipped step changes nothing. */
static void
case_adamw(struct oc *c, const struct oc_model *m)
{
    size_t n = (size_t)m->B * m->T * m->C * 4 + 7;
    float *p0 = oc_uniform(c, n, 0.1), *g = oc_uniform(c, n, 0.01);
    float *m0 = oc_uniform(c, n, 1e-3), *v0 = oc_uniform(c, n, 1e-5);
    float *p[OC_RUNS], *mm[OC_RUNS], *vv[OC_RUNS], *pc[OC_RUNS];
    struct ops_step st;
    const float lr = 3e-4f;
    char sh[64];

    for (size_t i = 0; i < n; i++) {
        v0[i] = fabsf(v0[i]);
        /* p0 exact in the compute dtype, so a skipped step's copy holds
         * exactly p0 */
    }
    oc_round_act(c, p0, n);
    for (int variant = 0; variant < 3; variant++) {
        const char *name = variant == 0   ? "adamw.decay"
                           : variant == 1 ? "adamw.no_decay"
                                          : "adamw.skipped";
        float wd = variant == 1 ? 0.0f : 0.1f;
        size_t bad_pc = 0, bad_skip = 0;
        char op[64];

        memset(&st, 0, sizeof(st));
        st.t = 9;
        st.grad_scale = 0.5f;
        st.loss_scale = 1.0f;
        st.skip = variant == 2;
        st.bad_step = -1;
        for (int r = 0; r < OC_RUNS; r++) {
            const struct ops *o = oc_side(c, r);
            float *d_p = oc_put(c, p0, n * 4, "p"),
                  *d_g = oc_put(c, g, n * 4, "g");
            float *d_m = oc_put(c, m0, n * 4, "m"),
                  *d_v = oc_put(c, v0, n * 4, "v");
            void *d_pc = oc_put_act(c, p0, n, "pc");
            struct ops_step *d_st = oc_put(c, &st, sizeof(st), "step");
            float *own;

            o->adamw(d_p, d_pc, d_g, d_m, d_v, n, lr, 0.9f, 0.95f, 1e-8f, wd,
                     d_st);
            oc_sync(c, "adamw");
            p[r] = oc_get_f32(c, d_p, n, "adamw");
            mm[r] = oc_get_f32(c, d_m, n, "adamw");
            vv[r] = oc_get_f32(c, d_v, n, "adamw");
            pc[r] = oc_get_act(c, d_pc, n, "adamw");
            own = copy_of(p[r], n);
            oc_round_to(o->dtype, own, n);
            for (size_t i = 0; i < n; i++)
                bad_pc += memcmp(&own[i], &pc[r][i], 4) != 0;
            if (st.skip)
                for (size_t i = 0; i < n; i++)
                    bad_skip += p[r][i] != p0[i] || mm[r][i] != m0[i] ||
                                vv[r][i] != v0[i];
            free(own);
            oc_pool_free(c);
        }
        snprintf(sh, sizeof(sh), "%zu, t 10, wd %g", n, wd);
        if (st.skip) {
            oc_check_count(c, name, sh, bad_skip, n * OC_RUNS,
                           "p, m or v changed");
        } else {
            double step = maxabs_delta(p[0], p0, n);

            snprintf(op, sizeof(op), "%s.p", name);
            oc_check(c, op, sh, p, n,
                     4 * OC_EPS * oc_maxabs(p[0], n) + 16 * OC_EPS * step,
                     NR(c), NULL);
            snprintf(op, sizeof(op), "%s.m", name);
            oc_check(c, op, sh, mm, n, 4 * OC_EPS * oc_maxabs(mm[0], n), NR(c),
                     NULL);
            snprintf(op, sizeof(op), "%s.v", name);
            oc_check(c, op, sh, vv, n, 4 * OC_EPS * oc_maxabs(vv[0], n), NR(c),
                     NULL);
        }
        snprintf(op, sizeof(op), "%s.compute_copy", name);
        oc_check_count(c, op, sh, bad_pc, n * OC_RUNS,
                       "differ from the side's own p, rounded");
        oc_free_runs(p);
        oc_free_runs(mm);
        oc_free_runs(vv);
        oc_free_runs(pc);
    }
    free(p0);
    free(g);
    free(m0);
    free(v0);
}

/* ------------------------------------------------------------ OOM */

/* Out of memory: alloc returns NULL, error() names the buffer, and the
 * failure is sticky (sync() returns -1).  Last: the backend stays
 * failed. */
void
oc_case_oom(struct oc *c)
{
    const struct ops *o = c->test;
    const char *what = "an impossible 1 PiB buffer";
    void *p = o->alloc((size_t)1 << 50, what);
    const char *e = o->error();

    oc_check_count(c, "alloc.oom.null", "1 PiB", p != NULL, 1,
                   "allocations succeeded");
    if (p != NULL)
        o->release(p);
    oc_check_count(c, "alloc.oom.message", "names the buffer",
                   e == NULL || strstr(e, what) == NULL, 1,
                   "messages without the buffer's name");
    if (!c->quiet)
        printf("     message: %s\n", e != NULL ? e : "(null)");
    oc_check_count(c, "alloc.oom.sticky", "sync() after", o->sync() != -1, 1,
                   "syncs returned 0");
}

/* ------------------------------------------------------------ the table */

const struct oc_case oc_cases[] = {
    { "memory", case_memory, 0, 1 },
    { "cast", case_cast, 0, 1 },
    { "linear", case_linear, 1, 0 },
    { "embed", case_embed, 1, 0 },
    { "layernorm", case_layernorm, 1, 0 },
    { "act", case_act, 1, 0 },
    { "act", case_act_other, 0, 0 },
    { "add accumulate scale", case_elementwise, 0, 0 },
    { "dropout", case_dropout, 0, 0 },
    { "attention", case_attention, 1, 0 },
    { "xent", case_xent, 1, 0 },
    { "xent_max xent_partial xent_finish", case_xent_vp, 1, 0 },
    { "gather_rows scatter_add_rows", case_rows, 1, 0 },
    { "sum_acc sumsq_acc", case_reduce, 0, 1 },
    { "loss_check step_prepare step_finish", case_step, 0, 1 },
    { "adamw", case_adamw, 0, 0 },
};
const int oc_n_cases = sizeof(oc_cases) / sizeof(oc_cases[0]);
