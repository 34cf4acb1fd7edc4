/* SPDX-License-Identifier: MIT */
/*
 * test_train_ops.c: unit tests of the CPU backend of the trainer's compute
 * interface (train/ops.h, train/cpu/ops_cpu.c).  Every forward op is checked
 * against a naive reference loop in double on small random shapes, and
 * every backward op against central finite differences of a scalar loss
 * (sum(out * r), r random) taken through that double reference.  Then the
 * contract's cross-cutting rules: backward ops accumulate, results are
 * bit-identical run to run, and 1 and 2 threads agree.
 *
 * Tolerances: a check passes when |got - want| <= atol + rtol * |want|
 * for every element.  The backend computes in float, so against the
 * double reference its error is a few float roundings of the O(1) terms
 * summed (~1e-6 on these sizes); forward checks use atol = rtol = 1e-5.
 * Finite differences use h = 1e-4 in double: truncation error ~h^2 =
 * 1e-8, cancellation ~1e-16 / h = 1e-12, so the float error dominates
 * again and gradients use atol = 5e-5, rtol = 1e-4.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "ops.h"

#define FWD_ATOL  1e-5
#define FWD_RTOL  1e-5
#define GRAD_ATOL 5e-5
#define GRAD_RTOL 1e-4
#define FD_H      1e-4

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 42;

/* Uniform in [-1, 1). */
static float
frand(void)
{
    rng_state = ops_splitmix64(rng_state);
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* Uniform in [0, n). */
static int32_t
irand(int32_t n)
{
    rng_state = ops_splitmix64(rng_state);
    return (int32_t)(rng_state % (uint64_t)n);
}

static void *
xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (p == NULL) {
        perror("calloc");
        exit(1);
    }
    return p;
}

static float *
frandom(size_t n)
{
    float *x = xcalloc(n, sizeof(float));

    for (size_t i = 0; i < n; i++)
        x[i] = frand();
    return x;
}

static float *
fcopy(const float *x, size_t n)
{
    float *y = xcalloc(n, sizeof(float));

    memcpy(y, x, n * sizeof(float));
    return y;
}

static double *
to_double(const float *x, size_t n)
{
    double *d = xcalloc(n, sizeof(double));

    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

static double
dot(const double *a, const double *b, size_t n)
{
    double s = 0.0;

    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Every got[i] within atol + rtol * |want[i]|; reports the worst. */
#define CHECK_CLOSE(got, want, n, atol, rtol) \
    check_close(__FILE__, __LINE__, #got, (got), (want), (n), (atol), (rtol))

static void
check_close(const char *file, int line, const char *what, const float *got,
            const double *want, size_t n, double atol, double rtol)
{
    size_t worst = 0;
    double worst_ratio = 0.0;

    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]);
        double ratio = err == 0.0 ? 0.0 : err / (atol + rtol * fabs(want[i]));

        if (!(ratio <= worst_ratio)) { /* also catches NaN */
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (!(worst_ratio <= 1.0)) {
        fprintf(stderr, "%s:%d: %s[%zu] = %.9g, want %.9g (%zu elements)\n",
                file, line, what, worst, got[worst], want[worst], n);
        harness_failed_checks++;
    }
}

/* Central differences of loss(ctx) with respect to each x[i]. */
static void
fd_grad(double *g, double *x, size_t n, double (*loss)(void *), void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        double save = x[i], up, down;

        x[i] = save + FD_H;
        up = loss(ctx);
        x[i] = save - FD_H;
        down = loss(ctx);
        x[i] = save;
        g[i] = (up - down) / (2 * FD_H);
    }
}

static const struct ops *
cpu(void)
{
    return ops_cpu(2);
}

/* ------------------------------------------------------------ references */

static void
ref_linear(double *y, const double *x, const double *w, const double *b, int M,
           int K, int N)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = b != NULL ? b[j] : 0.0;

            for (int k = 0; k < K; k++)
                s += x[(size_t)i * K + k] * w[(size_t)j * K + k];
            y[(size_t)i * N + j] = s;
        }
}

static void
ref_layernorm(double *y, const double *x, const double *w, const double *b,
              int n, int C, double eps)
{
    for (int i = 0; i < n; i++) {
        const double *xr = x + (size_t)i * C;
        double mean = 0.0, var = 0.0;

        for (int j = 0; j < C; j++)
            mean += xr[j] / C;
        for (int j = 0; j < C; j++)
            var += (xr[j] - mean) * (xr[j] - mean) / C;
        for (int j = 0; j < C; j++)
            y[(size_t)i * C + j] =
                (xr[j] - mean) / sqrt(var + eps) * w[j] + b[j];
    }
}

static double
ref_act(double x, enum ops_act act)
{
    switch (act) {
    case OPS_ACT_GELU:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case OPS_ACT_GELU_TANH:
        return 0.5 * x *
               (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case OPS_ACT_RELU:
        return x > 0.0 ? x : 0.0;
    case OPS_ACT_TANH:
        return tanh(x);
    }
    return NAN;
}

/* keep / (1 - p) of dropout element i, in double. */
static double
ref_keep(uint64_t seed, uint64_t i, float p)
{
    if (p == 0.0f)
        return 1.0;
    return ops_dropout_uniform(seed, i) >= p ? 1.0 / (1.0 - p) : 0.0;
}

struct att_shape {
    int B, T, C, NH, causal;
    float p;
    int use_bias;
};

static void
ref_attention(double *out, double *att, const double *qkv, const float *kb,
              const struct att_shape *s, uint64_t seed)
{
    int T = s->T, C = s->C, D = C / s->NH;

    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->NH; h++)
            for (int i = 0; i < T; i++) {
                size_t bhi = (((size_t)b * s->NH + h) * T + i) * T;
                double *row = att + bhi, max = -INFINITY, sum = 0.0;
                const double *q = qkv + ((size_t)b * T + i) * 3 * C + h * D;
                int nk = s->causal ? i + 1 : T;

                for (int j = 0; j < T; j++) {
                    const double *k =
                        qkv + ((size_t)b * T + j) * 3 * C + C + h * D;

                    row[j] = dot(q, k, D) / sqrt(D) +
                             (kb != NULL ? kb[b * T + j] : 0.0);
                    if (j < nk && row[j] > max)
                        max = row[j];
                }
                for (int j = 0; j < T; j++) {
                    row[j] = j < nk ? exp(row[j] - max) : 0.0;
                    sum += row[j];
                }
                for (int j = 0; j < T; j++)
                    row[j] /= sum;
                for (int d = 0; d < D; d++) {
                    double o = 0.0;

                    for (int j = 0; j < T; j++)
                        o += row[j] * ref_keep(seed, bhi + j, s->p) *
                             qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * D +
                                 d];
                    out[((size_t)b * T + i) * C + h * D + d] = o;
                }
            }
}

/* Sum of the per-row losses of valid rows. */
static double
ref_xent(double *losses, const double *x, const int32_t *targets, int n, int V)
{
    double total = 0.0;

    for (int i = 0; i < n; i++) {
        const double *r = x + (size_t)i * V;
        double max = -INFINITY, sum = 0.0;

        losses[i] = 0.0;
        if (targets[i] < 0)
            continue;
        for (int j = 0; j < V; j++)
            max = fmax(max, r[j]);
        for (int j = 0; j < V; j++)
            sum += exp(r[j] - max);
        losses[i] = max + log(sum) - r[targets[i]];
        total += losses[i];
    }
    return total;
}

/* ------------------------------------------------------------ memory */

static void
test_ops_alloc_aligned_zeroed(void)
{
    const struct ops *o = cpu();
    size_t sizes[] = { 0, 1, 63, 64, 1000 };

    CHECK_EQ_STR(o->name, "cpu");
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        unsigned char *p = o->alloc(sizes[k], "test"), host[1000];
        size_t i = 0;

        CHECK(p != NULL);
        if (p == NULL)
            continue;
        CHECK_EQ_INT((uintptr_t)p % 64, 0);
        while (i < sizes[k] && p[i] == 0)
            i++;
        CHECK_EQ_INT(i, sizes[k]);
        memset(host, 7, sizes[k]);
        o->upload(p, host, sizes[k]);
        memset(host, 0, sizes[k]);
        o->download(host, p, sizes[k]);
        CHECK(sizes[k] == 0 || (host[0] == 7 && host[sizes[k] - 1] == 7));
        o->zero(p, sizes[k]);
        CHECK(sizes[k] == 0 || p[sizes[k] - 1] == 0);
        o->release(p);
    }
    o->release(NULL);
}

/* ------------------------------------------------------------ linear */

struct linear_ctx {
    double *x, *w, *b, *r, *y;
    int M, K, N;
};

static double
linear_loss(void *arg)
{
    struct linear_ctx *c = arg;

    ref_linear(c->y, c->x, c->w, c->b, c->M, c->K, c->N);
    return dot(c->y, c->r, (size_t)c->M * c->N);
}

static void
test_ops_linear_fwd(void)
{
    const struct ops *o = cpu();
    int M = 7, K = 13, N = 5;
    float *x = frandom(M * K), *w = frandom(N * K), *b = frandom(N);
    float *y = frandom(M * N);
    double *xd = to_double(x, M * K), *wd = to_double(w, N * K);
    double *bd = to_double(b, N), *want = xcalloc(M * N, sizeof(double));

    o->linear_fwd(y, x, w, b, M, K, N);
    ref_linear(want, xd, wd, bd, M, K, N);
    CHECK_CLOSE(y, want, M * N, FWD_ATOL, FWD_RTOL);
    o->linear_fwd(y, x, w, NULL, M, K, N);
    ref_linear(want, xd, wd, NULL, M, K, N);
    CHECK_CLOSE(y, want, M * N, FWD_ATOL, FWD_RTOL);
    free(x), free(w), free(b), free(y), free(xd), free(wd), free(bd);
    free(want);
}

static void
test_ops_linear_bwd(void)
{
    const struct ops *o = cpu();
    int M = 6, K = 11, N = 19;
    float *x = frandom(M * K), *w = frandom(N * K), *b = frandom(N);
    float *dy = frandom(M * N);
    float *dx = xcalloc(M * K, 4), *dw = xcalloc(N * K, 4);
    float *db = xcalloc(N, 4), *db_only = xcalloc(N, 4);
    struct linear_ctx c = { to_double(x, M * K),
                            to_double(w, N * K),
                            to_double(b, N),
                            to_double(dy, M * N),
                            xcalloc(M * N, 8),
                            M,
                            K,
                            N };
    double *g = xcalloc(N * K, sizeof(double));

    o->linear_bwd(dx, dw, db, dy, x, w, M, K, N);
    fd_grad(g, c.x, M * K, linear_loss, &c);
    CHECK_CLOSE(dx, g, M * K, GRAD_ATOL, GRAD_RTOL);
    fd_grad(g, c.w, N * K, linear_loss, &c);
    CHECK_CLOSE(dw, g, N * K, GRAD_ATOL, GRAD_RTOL);
    fd_grad(g, c.b, N, linear_loss, &c);
    CHECK_CLOSE(db, g, N, GRAD_ATOL, GRAD_RTOL);
    /* NULL gradients are skipped; the one asked for is the same. */
    o->linear_bwd(NULL, NULL, db_only, dy, x, w, M, K, N);
    CHECK_EQ_MEM(db_only, db, N * sizeof(float));
    free(x), free(w), free(b), free(dy), free(dx), free(dw), free(db);
    free(db_only), free(c.x), free(c.w), free(c.b), free(c.r), free(c.y);
    free(g);
}

/* ------------------------------------------------------------ rows */

struct embed_ctx {
    double *table, *r;
    const int32_t *ids;
    int n, C;
};

/* sum(table[ids] * r): what embed_fwd and gather_rows compute, weighed. */
static double
embed_loss(void *arg)
{
    struct embed_ctx *c = arg;
    double s = 0.0;

    for (int i = 0; i < c->n; i++)
        s += dot(c->table + (size_t)c->ids[i] * c->C, c->r + (size_t)i * c->C,
                 c->C);
    return s;
}

static void
test_ops_embed(void)
{
    const struct ops *o = cpu();
    int V = 5, n = 9, C = 37; /* C spans three column blocks, one partial */
    const int32_t ids[] = { 3, 0, 3, 4, 1, 3, 0, 2, 3 };
    float *table = frandom(V * C), *y = frandom(n * C);
    float *dy = frandom(n * C), *dtable = xcalloc(V * C, 4);
    float *y0 = fcopy(y, n * C);
    struct embed_ctx c = { to_double(table, V * C), to_double(dy, n * C), ids,
                           n, C };
    double *want = xcalloc(n * C, sizeof(double));

    o->embed_fwd(y, ids, table, n, C, 0);
    for (int i = 0; i < n * C; i++)
        want[i] = c.table[ids[i / C] * C + i % C];
    CHECK_CLOSE(y, want, n * C, 0, 0);
    memcpy(y, y0, n * C * sizeof(float));
    o->embed_fwd(y, ids, table, n, C, 1);
    for (int i = 0; i < n * C; i++)
        want[i] += y0[i];
    CHECK_CLOSE(y, want, n * C, FWD_ATOL, FWD_RTOL);

    /* Row 3 is the padding row: its gradient stays 0, as torch's. */
    o->embed_bwd(dtable, dy, ids, n, C, 3);
    fd_grad(want, c.table, V * C, embed_loss, &c);
    memset(want + 3 * C, 0, C * sizeof(double));
    CHECK_CLOSE(dtable, want, V * C, GRAD_ATOL, GRAD_RTOL);
    memset(dtable, 0, V * C * sizeof(float));
    o->embed_bwd(dtable, dy, ids, n, C, -1);
    fd_grad(want, c.table, V * C, embed_loss, &c);
    CHECK_CLOSE(dtable, want, V * C, GRAD_ATOL, GRAD_RTOL);
    free(table), free(y), free(dy), free(dtable), free(y0), free(c.table);
    free(c.r), free(want);
}

static void
test_ops_gather_scatter(void)
{
    const struct ops *o = cpu();
    int R = 6, n = 8, C = 21;
    const int32_t rows[] = { 5, 5, 0, 2, 5, 1, 0, 3 };
    float *x = frandom(R * C), *y = xcalloc(n * C, 4), *dy = frandom(n * C);
    float *dx = xcalloc(R * C, 4);
    struct embed_ctx c = { to_double(x, R * C), to_double(dy, n * C), rows, n,
                           C };
    double *want = xcalloc(R * C, sizeof(double));

    o->gather_rows(y, x, rows, n, C);
    for (int i = 0; i < n * C; i++)
        CHECK(y[i] == x[rows[i / C] * C + i % C]);
    o->scatter_add_rows(dx, dy, rows, n, C);
    fd_grad(want, c.table, R * C, embed_loss, &c);
    CHECK_CLOSE(dx, want, R * C, GRAD_ATOL, GRAD_RTOL);
    free(x), free(y), free(dy), free(dx), free(c.table), free(c.r);
    free(want);
}

/* ------------------------------------------------------------ layernorm */

struct ln_ctx {
    double *x, *w, *b, *r, *y;
    int n, C;
    double eps;
};

static double
ln_loss(void *arg)
{
    struct ln_ctx *c = arg;

    ref_layernorm(c->y, c->x, c->w, c->b, c->n, c->C, c->eps);
    return dot(c->y, c->r, (size_t)c->n * c->C);
}

static void
test_ops_layernorm(void)
{
    const struct ops *o = cpu();
    int n = 5, C = 24;
    float eps = 1e-5f;
    float *x = frandom(n * C), *w = frandom(C), *b = frandom(C);
    float *y = xcalloc(n * C, 4), *mean = xcalloc(n, 4), *rstd = xcalloc(n, 4);
    float *dy = frandom(n * C), *dx = xcalloc(n * C, 4);
    float *dw = xcalloc(C, 4), *db = xcalloc(C, 4);
    struct ln_ctx c = { to_double(x, n * C),
                        to_double(w, C),
                        to_double(b, C),
                        to_double(dy, n * C),
                        xcalloc(n * C, 8),
                        n,
                        C,
                        eps };
    double *g = xcalloc(n * C, sizeof(double));

    for (int i = 0; i < C; i++) /* an offset row tests the variance */
        x[i] += 100.0f, c.x[i] += 100.0;
    o->layernorm_fwd(y, mean, rstd, x, w, b, n, C, eps);
    ln_loss(&c);
    CHECK_CLOSE(y, c.y, n * C, 1e-4, FWD_RTOL); /* x + 100: 1e-7 * 100 */
    o->layernorm_bwd(dx, dw, db, dy, x, w, mean, rstd, n, C);
    fd_grad(g, c.x, n * C, ln_loss, &c);
    CHECK_CLOSE(dx, g, n * C, GRAD_ATOL, GRAD_RTOL);
    fd_grad(g, c.w, C, ln_loss, &c);
    CHECK_CLOSE(dw, g, C, GRAD_ATOL, GRAD_RTOL);
    fd_grad(g, c.b, C, ln_loss, &c);
    CHECK_CLOSE(db, g, C, GRAD_ATOL, GRAD_RTOL);
    free(x), free(w), free(b), free(y), free(mean), free(rstd), free(dy);
    free(dx), free(dw), free(db), free(c.x), free(c.w), free(c.b), free(c.r);
    free(c.y), free(g);
}

/* ------------------------------------------------------------ elementwise */

static void
test_ops_act(void)
{
    const struct ops *o = cpu();
    enum ops_act acts[] = { OPS_ACT_GELU, OPS_ACT_GELU_TANH, OPS_ACT_RELU,
                            OPS_ACT_TANH };
    size_t n = 301;
    float *x = frandom(n), *dy = frandom(n), *y = xcalloc(n, 4);
    float *dx = xcalloc(n, 4), zero = 0.0f, one = 1.0f, d0 = 0.0f;
    double *want = xcalloc(n, sizeof(double));

    for (size_t i = 0; i < n; i++) /* [-4, 4), away from relu's kink */
        x[i] = 4.0f * x[i] + (fabsf(x[i]) < 0.01f ? 0.05f : 0.0f);
    for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); k++) {
        o->act_fwd(y, x, n, acts[k]);
        for (size_t i = 0; i < n; i++)
            want[i] = ref_act(x[i], acts[k]);
        CHECK_CLOSE(y, want, n, FWD_ATOL, FWD_RTOL);
        memset(dx, 0, n * sizeof(float));
        o->act_bwd(dx, dy, x, n, acts[k]);
        /* Elementwise, so the loss sum(f(x) * dy) differentiates alone
         * per element. */
        for (size_t i = 0; i < n; i++)
            want[i] = dy[i] *
                      (ref_act(x[i] + FD_H, acts[k]) -
                       ref_act(x[i] - FD_H, acts[k])) /
                      (2 * FD_H);
        CHECK_CLOSE(dx, want, n, GRAD_ATOL, GRAD_RTOL);
    }
    o->act_bwd(&d0, &one, &zero, 1, OPS_ACT_RELU);
    CHECK(d0 == 0.0f); /* relu'(0) = 0, as torch */
    free(x), free(dy), free(y), free(dx), free(want);
}

static void
test_ops_add_accumulate_scale(void)
{
    const struct ops *o = cpu();
    size_t n = 1001;
    float *a = frandom(n), *b = frandom(n), *y = xcalloc(n, 4);
    float *a0 = fcopy(a, n);

    o->add(y, a, b, n);
    for (size_t i = 0; i < n; i++)
        CHECK(y[i] == a[i] + b[i]);
    o->add(a, a, b, n); /* y aliases a */
    CHECK_EQ_MEM(a, y, n * sizeof(float));
    o->accumulate(y, b, n);
    for (size_t i = 0; i < n; i++)
        CHECK(y[i] == (a0[i] + b[i]) + b[i]);
    memcpy(y, b, n * sizeof(float));
    o->scale(b, n, 0.5f);
    for (size_t i = 0; i < n; i++)
        CHECK(b[i] == y[i] * 0.5f);
    free(a), free(b), free(y), free(a0);
}

struct dropout_ctx {
    double *x, *r;
    size_t n;
    float p;
    uint64_t seed;
};

static double
dropout_loss(void *arg)
{
    struct dropout_ctx *c = arg;
    double s = 0.0;

    for (size_t i = 0; i < c->n; i++)
        s += c->x[i] * ref_keep(c->seed, i, c->p) * c->r[i];
    return s;
}

static void
test_ops_dropout(void)
{
    const struct ops *o = cpu();
    size_t n = 20000, n_fd = 500, kept = 0;
    uint64_t seed = 0x1234;
    float p = 0.1f;
    float *x = frandom(n), *y = xcalloc(n, 4), *dy = frandom(n);
    float *dx = xcalloc(n, 4), *x0 = fcopy(x, n);
    /* Differences over the first n_fd elements only: each loss
     * evaluation is O(n). */
    struct dropout_ctx c = { to_double(x, n), to_double(dy, n), n_fd, p, seed };
    double *want = xcalloc(n, sizeof(double));

    o->dropout_fwd(y, x, n, p, seed);
    for (size_t i = 0; i < n; i++) {
        want[i] = x[i] * ref_keep(seed, i, p);
        kept += y[i] != 0.0f;
    }
    CHECK_CLOSE(y, want, n, FWD_ATOL, FWD_RTOL);
    CHECK(kept > 0.88 * n && kept < 0.92 * n); /* 18000 +- 42 expected */
    o->dropout_fwd(x, x, n, p, seed);          /* in place */
    CHECK_EQ_MEM(x, y, n * sizeof(float));
    o->dropout_bwd(dx, dy, n, p, seed);
    fd_grad(want, c.x, n_fd, dropout_loss, &c);
    CHECK_CLOSE(dx, want, n_fd, GRAD_ATOL, GRAD_RTOL);

    /* p == 0: a copy forward, a plain accumulate backward. */
    o->dropout_fwd(y, x0, n, 0.0f, seed);
    CHECK_EQ_MEM(y, x0, n * sizeof(float));
    memcpy(dx, x0, n * sizeof(float));
    o->dropout_bwd(dx, dy, n, 0.0f, seed);
    for (size_t i = 0; i < n; i++)
        CHECK(dx[i] == x0[i] + dy[i]);
    free(x), free(y), free(dy), free(dx), free(x0), free(c.x), free(c.r);
    free(want);
}

/* ------------------------------------------------------------ attention */

static const struct att_shape att_shapes[] = {
    /* B  T   C  NH causal p     bias */
    { 2, 7, 16, 2, 0, 0.0f, 0 }, { 2, 7, 16, 2, 1, 0.0f, 0 },
    { 2, 5, 48, 3, 0, 0.0f, 1 }, { 2, 9, 64, 4, 1, 0.0f, 1 },
    { 2, 7, 16, 2, 0, 0.1f, 1 }, { 2, 11, 32, 2, 1, 0.1f, 0 },
    { 2, 6, 32, 4, 1, 0.1f, 1 },
};

/* key_bias[B,T]: 0, or -10000 on the last key of batch 0 and on the
 * second and fourth keys of batch 1 (padding). */
static float *
att_key_bias(const struct att_shape *s)
{
    float *kb = xcalloc((size_t)s->B * s->T, 4);

    kb[s->T - 1] = -10000.0f;
    if (s->B > 1)
        kb[s->T + 1] = kb[s->T + 3] = -10000.0f;
    return kb;
}

struct att_ctx {
    const struct att_shape *s;
    double *qkv, *r, *out, *att;
    const float *kb;
    uint64_t seed;
};

static double
att_loss(void *arg)
{
    struct att_ctx *c = arg;

    ref_attention(c->out, c->att, c->qkv, c->kb, c->s, c->seed);
    return dot(c->out, c->r, (size_t)c->s->B * c->s->T * c->s->C);
}

/* Forward against the reference and backward against finite differences
 * for one shape. */
static void
check_attention(const struct att_shape *s, int check_bwd)
{
    const struct ops *o = cpu();
    size_t n_qkv = (size_t)s->B * s->T * 3 * s->C;
    size_t n_out = (size_t)s->B * s->T * s->C;
    size_t n_att = (size_t)s->B * s->NH * s->T * s->T;
    uint64_t seed = 0xA77E;
    float *qkv = frandom(n_qkv), *kb = s->use_bias ? att_key_bias(s) : NULL;
    float *out = xcalloc(n_out, 4), *att = xcalloc(n_att, 4);
    float *dout = frandom(n_out), *dqkv = xcalloc(n_qkv, 4);
    float *scratch = xcalloc(n_att, 4);
    struct att_ctx c = {
        s,  NULL, to_double(dout, n_out), xcalloc(n_out, 8), xcalloc(n_att, 8),
        kb, seed
    };
    double *g = xcalloc(n_qkv, sizeof(double));
    size_t masked_nonzero = 0;

    for (size_t i = 0; i < n_qkv; i++)
        qkv[i] *= 2.0f; /* peakier softmax than with [-1, 1) */
    c.qkv = to_double(qkv, n_qkv);
    o->attention_fwd(out, att, qkv, kb, s->B, s->T, s->C, s->NH, 0, s->NH,
                     s->causal, s->p, seed);
    att_loss(&c);
    CHECK_CLOSE(att, c.att, n_att, FWD_ATOL, FWD_RTOL);
    CHECK_CLOSE(out, c.out, n_out, FWD_ATOL, FWD_RTOL);
    for (size_t e = 0; s->causal && e < n_att; e++)
        masked_nonzero += e % s->T > e / s->T % s->T && att[e] != 0.0f;
    CHECK_EQ_INT(masked_nonzero, 0);
    if (check_bwd) {
        o->attention_bwd(dqkv, scratch, dout, qkv, att, s->B, s->T, s->C, s->NH,
                         0, s->NH, s->causal, s->p, seed);
        fd_grad(g, c.qkv, n_qkv, att_loss, &c);
        CHECK_CLOSE(dqkv, g, n_qkv, GRAD_ATOL, GRAD_RTOL);
    }
    if (harness_failed_checks)
        fprintf(stderr, "  in B=%d T=%d C=%d NH=%d causal=%d p=%g bias=%d\n",
                s->B, s->T, s->C, s->NH, s->causal, s->p, s->use_bias);
    free(qkv), free(kb), free(out), free(att), free(dout), free(dqkv);
    free(scratch), free(c.qkv), free(c.r), free(c.out), free(c.att), free(g);
}

static void
test_ops_attention(void)
{
    for (size_t k = 0; k < sizeof(att_shapes) / sizeof(att_shapes[0]); k++)
        check_attention(&att_shapes[k], 1);
}

/* T = 130 crosses the forward's 128 x 128 dropout tiles on both axes. */
static void
test_ops_attention_tiles(void)
{
    const struct att_shape tiled[] = { { 1, 130, 16, 2, 0, 0.1f, 1 },
                                       { 1, 130, 16, 2, 1, 0.1f, 0 } };

    check_attention(&tiled[0], 0);
    check_attention(&tiled[1], 0);
}

/* Tensor parallelism: the heads split over two ranks (each with its own
 * q, k, v columns, h0 and NH_all) give the whole model's outputs and
 * gradients, dropout included (the masks are drawn at the whole model's
 * head index). */
static void
test_ops_attention_heads_split(void)
{
    const struct ops *o = cpu();
    const int B = 2, T = 6, C = 16, NH = 4, n = 2, Cl = C / n;
    size_t n_qkv = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C;
    size_t n_att = (size_t)B * NH * T * T;
    float *qkv = frandom(n_qkv), *dout = frandom(n_out), *kb = frandom(B * T);
    float *out = xcalloc(n_out, 4), *att = xcalloc(n_att, 4);
    float *dqkv = xcalloc(n_qkv, 4), *scratch = xcalloc(n_att, 4);

    o->attention_fwd(out, att, qkv, kb, B, T, C, NH, 0, NH, 0, 0.3f, 99);
    o->attention_bwd(dqkv, scratch, dout, qkv, att, B, T, C, NH, 0, NH, 0, 0.3f,
                     99);
    for (int r = 0; r < n; r++) {
        size_t nl = (size_t)B * T * Cl;
        float *q = xcalloc(3 * nl, 4), *dq = xcalloc(3 * nl, 4);
        float *d = xcalloc(nl, 4), *y = xcalloc(nl, 4);
        float *a = xcalloc(n_att / n, 4), *sc = xcalloc(n_att / n, 4);
        double *want_y = xcalloc(nl, 8), *want_dq = xcalloc(3 * nl, 8);

        /* This rank's columns of q, k and v, of dout and of the results. */
        for (size_t t = 0; t < (size_t)B * T; t++) {
            for (int part = 0; part < 3; part++)
                for (int j = 0; j < Cl; j++) {
                    size_t from = t * 3 * C + (size_t)part * C + r * Cl + j;
                    size_t to = t * 3 * Cl + (size_t)part * Cl + j;

                    q[to] = qkv[from];
                    want_dq[to] = dqkv[from];
                }
            for (int j = 0; j < Cl; j++) {
                d[t * Cl + j] = dout[t * C + r * Cl + j];
                want_y[t * Cl + j] = out[t * C + r * Cl + j];
            }
        }
        o->attention_fwd(y, a, q, kb, B, T, Cl, NH / n, r * NH / n, NH, 0, 0.3f,
                         99);
        o->attention_bwd(dq, sc, d, q, a, B, T, Cl, NH / n, r * NH / n, NH, 0,
                         0.3f, 99);
        CHECK_CLOSE(y, want_y, nl, 1e-6, 1e-6);
        CHECK_CLOSE(dq, want_dq, 3 * nl, 1e-6, 1e-6);
        free(q), free(dq), free(d), free(y), free(a), free(sc);
        free(want_y), free(want_dq);
    }
    free(qkv), free(dout), free(kb), free(out), free(att), free(dqkv);
    free(scratch);
}

/* ------------------------------------------------------------ xent */

struct xent_ctx {
    double *x, *losses;
    const int32_t *targets;
    int n, V;
    double dscale;
};

static double
xent_loss(void *arg)
{
    struct xent_ctx *c = arg;

    return c->dscale * ref_xent(c->losses, c->x, c->targets, c->n, c->V);
}

static void
test_ops_xent(void)
{
    const struct ops *o = cpu();
    int n = 6, V = 37;
    const int32_t targets[] = { 3, -1, 36, 0, -100, 17 };
    float dscale = 0.25f; /* 1 / valid rows */
    float *x = frandom(n * V), *losses = xcalloc(n, 4), *x0;
    float *d = xcalloc(n * V, 4), *losses2 = xcalloc(n, 4);
    struct xent_ctx c = { NULL, xcalloc(n, 8), targets, n, V, dscale };
    double *g = xcalloc(n * V, sizeof(double));

    for (int i = 0; i < n * V; i++)
        x[i] *= 5.0f;
    c.x = to_double(x, n * V);
    x0 = fcopy(x, n * V);
    o->xent(losses, d, x, targets, n, V, dscale);
    xent_loss(&c);
    CHECK_CLOSE(losses, c.losses, n, FWD_ATOL, FWD_RTOL);
    CHECK(losses[1] == 0.0f && losses[4] == 0.0f);
    fd_grad(g, c.x, n * V, xent_loss, &c);
    CHECK_CLOSE(d, g, n * V, GRAD_ATOL, GRAD_RTOL);
    for (int j = 0; j < V; j++)
        CHECK(d[V + j] == 0.0f);
    /* dlogits may alias logits; no dlogits at all is fine too. */
    o->xent(losses2, x, x, targets, n, V, dscale);
    CHECK_EQ_MEM(losses2, losses, n * sizeof(float));
    CHECK_EQ_MEM(x, d, n * V * sizeof(float));
    memset(losses2, 0, n * sizeof(float));
    o->xent(losses2, NULL, x0, targets, n, V, dscale);
    CHECK_EQ_MEM(losses2, losses, n * sizeof(float));
    free(x), free(losses), free(d), free(losses2), free(c.x), free(c.losses);
    free(x0), free(g);
}

/* Vocab-parallel cross-entropy: V = 37 over two shards of 19 columns
 * (the second with 18 real ones and a pad column holding garbage), the
 * max and the sums reduced as the ranks would, give xent's losses and
 * gradients. */
static void
test_ops_xent_vocab_parallel(void)
{
    const struct ops *o = cpu();
    enum { N = 5, V = 37, VL = 19 };
    const int32_t targets[N] = { 3, -1, 36, 18, 19 };
    float *x = frandom(N * V), *loss = xcalloc(N, 4);
    float part[2][N * VL], dpart[2][N * VL], mx[2][N], lp[2][N];
    double sums[2][2 * N];
    double *want_l = xcalloc(N, 8), *want_d = xcalloc(N * VL, 8);

    for (int r = 0; r < 2; r++) {
        int valid = r ? V - VL : VL;

        for (int i = 0; i < N; i++)
            for (int j = 0; j < VL; j++)
                part[r][i * VL + j] =
                    j < valid ? x[i * V + r * VL + j] * 4.0f : 1e4f;
        o->xent_max(mx[r], part[r], N, VL, valid);
    }
    for (int i = 0; i < N; i++) /* the all-reduce max */
        mx[0][i] = mx[1][i] = mx[0][i] > mx[1][i] ? mx[0][i] : mx[1][i];
    for (int r = 0; r < 2; r++)
        o->xent_partial(sums[r], part[r], mx[r], targets, N, VL,
                        r ? V - VL : VL, r * VL);
    for (int i = 0; i < 2 * N; i++) /* the all-reduce sum */
        sums[0][i] = sums[1][i] = sums[0][i] + sums[1][i];
    for (int r = 0; r < 2; r++) {
        int valid = r ? V - VL : VL;

        memcpy(dpart[r], part[r], sizeof(part[r]));
        o->xent_finish(lp[r], dpart[r], dpart[r], mx[r], sums[r], targets, N,
                       VL, valid, r * VL, 0.25f);
    }
    { /* xent of the whole rows (the logits times 4: peakier rows) */
        float *x4 = xcalloc(N * V, 4), *d4 = xcalloc(N * V, 4);

        for (int i = 0; i < N * V; i++)
            x4[i] = x[i] * 4.0f;
        o->xent(loss, d4, x4, targets, N, V, 0.25f);
        for (int i = 0; i < N; i++)
            want_l[i] = loss[i];
        for (int r = 0; r < 2; r++) {
            int valid = r ? V - VL : VL;

            for (int i = 0; i < N; i++)
                for (int j = 0; j < VL; j++)
                    want_d[i * VL + j] = j < valid ? d4[i * V + r * VL + j] : 0;
            CHECK_CLOSE(lp[r], want_l, N, 1e-5, 1e-6);
            CHECK_CLOSE(dpart[r], want_d, N * VL, 1e-7, 1e-5);
        }
        free(x4), free(d4);
    }
    free(x), free(loss), free(want_l), free(want_d);
}

/* Negative ids (another shard's tokens) read as zero rows and get no
 * gradient. */
static void
test_ops_embed_negative_ids(void)
{
    const struct ops *o = cpu();
    const int32_t ids[3] = { 1, -1, 0 };
    float table[2 * 3] = { 1, 2, 3, 4, 5, 6 }, y[9], dt[6] = { 0 };
    float dy[9] = { 1, 1, 1, 2, 2, 2, 3, 3, 3 };
    const float want_y[9] = { 4, 5, 6, 0, 0, 0, 1, 2, 3 };
    const float want_dt[6] = { 3, 3, 3, 1, 1, 1 };

    memset(y, 0x7f, sizeof(y));
    o->embed_fwd(y, ids, table, 3, 3, 0);
    CHECK_EQ_MEM(y, want_y, sizeof(y));
    o->embed_fwd(y, ids, table, 3, 3, 1);
    for (int i = 0; i < 9; i++)
        CHECK(y[i] == 2 * want_y[i]);
    o->embed_bwd(dt, dy, ids, 3, 3, -1);
    CHECK_EQ_MEM(dt, want_dt, sizeof(dt));
}

/* ------------------------------------------------------------ optimizer */

static void
test_ops_sumsq(void)
{
    const struct ops *o = cpu();
    size_t n = 100003; /* 25 chunks, the last partial */
    float *x = frandom(n);
    double want = 0.0, got;

    for (size_t i = 0; i < n; i++)
        want += (double)x[i] * x[i];
    got = o->sumsq(x, n);
    CHECK(fabs(got - want) <= 1e-12 * want);
    CHECK(o->sumsq(x, 0) == 0.0);
    CHECK(o->sumsq(x, 1) == (double)x[0] * x[0]);
    free(x);
}

static void
test_ops_adamw(void)
{
    const struct ops *o = cpu();
    size_t n = 1000;
    float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    float gs = 0.5f;
    float *p = frandom(n), *m = xcalloc(n, 4), *v = xcalloc(n, 4);
    double *pd = to_double(p, n), *md = xcalloc(n, 8), *vd = xcalloc(n, 8);

    for (int t = 1; t <= 3; t++) {
        float *grad = frandom(n);

        o->adamw(p, grad, m, v, n, lr, b1, b2, eps, wd, gs, t);
        for (size_t i = 0; i < n; i++) {
            double g = (double)grad[i] * gs;

            pd[i] *= 1.0 - (double)lr * wd;
            md[i] = b1 * md[i] + (1.0 - b1) * g;
            vd[i] = b2 * vd[i] + (1.0 - b2) * g * g;
            pd[i] -= lr / (1.0 - pow(b1, t)) * md[i] /
                     (sqrt(vd[i]) / sqrt(1.0 - pow(b2, t)) + eps);
        }
        free(grad);
    }
    /* Float rounding of p (~6e-8) and of the O(lr) update. */
    CHECK_CLOSE(p, pd, n, 1e-6, 1e-6);
    CHECK_CLOSE(m, md, n, 1e-6, 1e-5);
    CHECK_CLOSE(v, vd, n, 1e-8, 1e-5);
    free(p), free(m), free(v), free(pd), free(md), free(vd);
}

/* ------------------------------------------------------------ contract */

/* One input set for every op, on sizes where OpenBLAS and the OpenMP
 * loops do split work between threads. */
enum {
    LM = 128,
    LK = 96,
    LN = 80, /* linear */
    NN = 64,
    NC = 80,   /* layernorm */
    NA = 5000, /* act, dropout */
    EV = 20,
    EN = 200,
    EC = 80, /* embed, scatter */
    AB = 2,
    AT = 37,
    AC = 64,
    ANH = 4, /* attention */
    XN = 16,
    XV = 300,    /* xent */
    SN = 100003, /* sumsq, adamw */
    N_FWD = LM * LN + NN * NC + 2 * NN + 2 * NA + EN * EC + AB * AT * AC +
            AB * ANH * AT * AT + XN + XN * XV,
    N_GRAD = LM * LK + LN * LK + LN + NN * NC + 2 * NC + 2 * NA + 2 * EV * EC +
             AB * AT * 3 * AC,
};

struct fixture {
    float *lx, *lw, *lb, *ldy, *nx, *nw, *nb, *ndy, *ax, *ady, *table;
    float *edy, *qkv, *kb, *adout, *logits, *sx, *scratch;
    int32_t ids[EN], targets[XN];
};

static void
fixture_init(struct fixture *f)
{
    f->lx = frandom(LM * LK), f->lw = frandom(LN * LK), f->lb = frandom(LN);
    f->ldy = frandom(LM * LN), f->nx = frandom(NN * NC), f->nw = frandom(NC);
    f->nb = frandom(NC), f->ndy = frandom(NN * NC), f->ax = frandom(NA);
    f->ady = frandom(NA), f->table = frandom(EV * EC);
    f->edy = frandom(EN * EC), f->qkv = frandom(AB * AT * 3 * AC);
    f->kb = xcalloc(AB * AT, 4), f->adout = frandom(AB * AT * AC);
    f->logits = frandom(XN * XV), f->sx = frandom(SN);
    f->scratch = xcalloc(AB * ANH * AT * AT, 4);
    f->kb[AT - 1] = f->kb[AT + 5] = -10000.0f;
    for (int i = 0; i < EN; i++)
        f->ids[i] = irand(EV);
    for (int i = 0; i < XN; i++)
        f->targets[i] = i % 5 == 4 ? -1 : irand(XV);
}

static void
fixture_release(struct fixture *f)
{
    float *all[] = {
        f->lx,  f->lw,  f->lb,    f->ldy,    f->nx,    f->nw,
        f->nb,  f->ndy, f->ax,    f->ady,    f->table, f->edy,
        f->qkv, f->kb,  f->adout, f->logits, f->sx,    f->scratch
    };

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        free(all[i]);
}

/* Every forward op, SETTING fwd[N_FWD], then every backward op,
 * ACCUMULATING into grad[N_GRAD]; returns sumsq of the fixture. */
static double
run_ops(const struct ops *o, struct fixture *f, float *fwd, float *grad)
{
    float *ly = fwd, *ny = ly + LM * LN, *mean = ny + NN * NC;
    float *rstd = mean + NN, *ay = rstd + NN, *dy = ay + NA;
    float *ey = dy + NA, *aout = ey + EN * EC, *att = aout + AB * AT * AC;
    float *loss = att + AB * ANH * AT * AT, *dlogits = loss + XN;
    float *ldx = grad, *ldw = ldx + LM * LK, *ldb = ldw + LN * LK;
    float *ndx = ldb + LN, *ndw = ndx + NN * NC, *ndb = ndw + NC;
    float *adx = ndb + NC, *ddx = adx + NA, *dtable = ddx + NA;
    float *sdx = dtable + EV * EC, *dqkv = sdx + EV * EC;

    CHECK(dlogits + XN * XV == fwd + N_FWD);
    CHECK(dqkv + AB * AT * 3 * AC == grad + N_GRAD);
    o->linear_fwd(ly, f->lx, f->lw, f->lb, LM, LK, LN);
    o->layernorm_fwd(ny, mean, rstd, f->nx, f->nw, f->nb, NN, NC, 1e-5f);
    o->act_fwd(ay, f->ax, NA, OPS_ACT_GELU_TANH);
    o->dropout_fwd(dy, f->ax, NA, 0.1f, 99);
    o->embed_fwd(ey, f->ids, f->table, EN, EC, 0);
    o->attention_fwd(aout, att, f->qkv, f->kb, AB, AT, AC, ANH, 0, ANH, 1, 0.1f,
                     7);
    o->xent(loss, dlogits, f->logits, f->targets, XN, XV, 1.0f / XN);

    o->linear_bwd(ldx, ldw, ldb, f->ldy, f->lx, f->lw, LM, LK, LN);
    o->layernorm_bwd(ndx, ndw, ndb, f->ndy, f->nx, f->nw, mean, rstd, NN, NC);
    o->act_bwd(adx, f->ady, f->ax, NA, OPS_ACT_GELU);
    o->dropout_bwd(ddx, f->ady, NA, 0.1f, 99);
    o->embed_bwd(dtable, f->edy, f->ids, EN, EC, 0);
    o->scatter_add_rows(sdx, f->edy, f->ids, EN, EC);
    o->attention_bwd(dqkv, f->scratch, aout, f->qkv, att, AB, AT, AC, ANH, 0,
                     ANH, 1, 0.1f, 7);
    return o->sumsq(f->sx, SN);
}

/* Calling a backward op twice adds its gradient twice: from a random
 * starting gradient g0, twice gives g0 + 2 (once - g0).  Forward outputs
 * are set, so they come out the same. */
static void
test_ops_backward_accumulates(void)
{
    struct fixture f;
    float *fwd1 = xcalloc(N_FWD, 4), *fwd2 = xcalloc(N_FWD, 4);
    float *g0 = frandom(N_GRAD), *g1 = fcopy(g0, N_GRAD);
    float *g2 = fcopy(g0, N_GRAD);
    double *want = xcalloc(N_GRAD, sizeof(double));

    fixture_init(&f);
    run_ops(cpu(), &f, fwd1, g1);
    run_ops(cpu(), &f, fwd2, g2);
    run_ops(cpu(), &f, fwd2, g2);
    CHECK_EQ_MEM(fwd1, fwd2, N_FWD * sizeof(float));
    for (size_t i = 0; i < N_GRAD; i++)
        want[i] = g0[i] + 2.0 * ((double)g1[i] - g0[i]);
    CHECK_CLOSE(g2, want, N_GRAD, 1e-5, 1e-5);
    fixture_release(&f);
    free(fwd1), free(fwd2), free(g0), free(g1), free(g2), free(want);
}

/* The same inputs give the same bits; 1 and 2 threads agree within the
 * file's fp32 tolerances (the column-parallel reductions and sumsq bit for
 * bit).  OpenBLAS may pick another SGEMM blocking for one thread: on an
 * AVX-512 AMD EPYC a 96-term dot product of -0.0079 moved by 1.4e-6, as
 * rounding allows for terms of about 0.3. */
static void
test_ops_deterministic_threads(void)
{
    struct fixture f;
    float *fwd[3], *grad[3], *pm[3];
    double ss[3], *want = xcalloc(N_GRAD > N_FWD ? N_GRAD : N_FWD, 8);
    int threads[3] = { 2, 2, 1 };

    fixture_init(&f);
    for (int r = 0; r < 3; r++) {
        const struct ops *o = ops_cpu(threads[r]);

        fwd[r] = xcalloc(N_FWD, 4), grad[r] = xcalloc(N_GRAD, 4);
        pm[r] = xcalloc(3 * SN, 4);
        ss[r] = run_ops(o, &f, fwd[r], grad[r]);
        memcpy(pm[r], f.sx, SN * sizeof(float));
        o->adamw(pm[r], f.sx + 1, pm[r] + SN, pm[r] + 2 * SN, SN - 1, 1e-3f,
                 0.9f, 0.999f, 1e-8f, 0.1f, 0.7f, 1);
    }
    ops_cpu(2);
    CHECK_EQ_MEM(fwd[0], fwd[1], N_FWD * sizeof(float));
    CHECK_EQ_MEM(grad[0], grad[1], N_GRAD * sizeof(float));
    CHECK_EQ_MEM(pm[0], pm[1], 3 * SN * sizeof(float));
    CHECK(ss[0] == ss[1] && ss[0] == ss[2]);
    for (size_t i = 0; i < N_FWD; i++)
        want[i] = fwd[0][i];
    CHECK_CLOSE(fwd[2], want, N_FWD, FWD_ATOL, FWD_RTOL);
    for (size_t i = 0; i < N_GRAD; i++)
        want[i] = grad[0][i];
    CHECK_CLOSE(grad[2], want, N_GRAD, GRAD_ATOL, GRAD_RTOL);
    CHECK_EQ_MEM(pm[0], pm[2], 3 * SN * sizeof(float));
    fixture_release(&f);
    for (int r = 0; r < 3; r++)
        free(fwd[r]), free(grad[r]), free(pm[r]);
    free(want);
}

TESTS(test_train_ops, TEST(test_ops_alloc_aligned_zeroed),
      TEST(test_ops_linear_fwd), TEST(test_ops_linear_bwd),
      TEST(test_ops_embed), TEST(test_ops_gather_scatter),
      TEST(test_ops_layernorm), TEST(test_ops_act),
      TEST(test_ops_add_accumulate_scale), TEST(test_ops_dropout),
      TEST(test_ops_attention), TEST(test_ops_attention_tiles),
      TEST(test_ops_attention_heads_split), TEST(test_ops_xent),
      TEST(test_ops_xent_vocab_parallel), TEST(test_ops_embed_negative_ids),
      TEST(test_ops_sumsq), TEST(test_ops_adamw),
      TEST(test_ops_backward_accumulates), TEST(test_ops_deterministic_threads))
