/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_layers.c: the cases of the layers' ops: the linear
 * layers, embeddings, LayerNorm, activations, elementwise ops, dropout.
 * The tolerances' rules are at the top of ops_compare.h.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

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
    tol = OC_SUM_EPS *
          (K * oc_maxabs(x, (size_t)M * K) * oc_maxabs(w, (size_t)N * K) +
           (bias ? oc_maxabs(b, N) : 0.0));
    tol += oc_bf16_tol(c, 2, oc_maxabs(y[0], (size_t)M * N));
    snprintf(op, sizeof(op), "linear_fwd.%s", what);
    snprintf(sh, sizeof(sh), "%s %dx%dx%d", m->name, M, K, N);
    oc_check(c, op, sh, y, (size_t)M * N, tol, OC_NR(c), NULL);
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
    tol_pre = OC_SUM_EPS *
              (K * oc_maxabs(x, (size_t)M * K) * oc_maxabs(w, (size_t)N * K) +
               oc_maxabs(b, N));
    tol_y = 1.13 * tol_pre +
            8 * OC_EPS * fmax(oc_maxabs(pre[0], n), oc_maxabs(y[0], n)) +
            oc_bf16_tol(c, 2, oc_maxabs(y[0], n)) +
            oc_bf16_tol(c, 2 * 1.13, oc_maxabs(pre[0], n));
    tol_pre += oc_bf16_tol(c, 2, oc_maxabs(pre[0], n));
    snprintf(sh, sizeof(sh), "%s %dx%dx%d", m->name, M, K, N);
    snprintf(op, sizeof(op), "linear_act_fwd.%s.pre", what);
    oc_check(c, op, sh, pre, n, tol_pre, OC_NR(c), NULL);
    snprintf(op, sizeof(op), "linear_act_fwd.%s.y", what);
    oc_check(c, op, sh, y, n, tol_y, OC_NR(c), NULL);
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
    tx = OC_SUM_EPS * (N * mdy * oc_maxabs(w, nw) + oc_maxabs(dx0, nx)) +
         oc_bf16_tol(c, 2, oc_maxabs(dx[0], nx));
    tw = OC_SUM_EPS * (M * mdy * oc_maxabs(x, nx) + oc_maxabs(dw0, nw)) +
         oc_bf16_tol(c, 2, oc_maxabs_delta(dw[0], dw0, nw));
    snprintf(sh, sizeof(sh), "%s %dx%dx%d", m->name, M, K, N);
    snprintf(op, sizeof(op), "linear_bwd.%s.dx", what);
    oc_check(c, op, sh, dx, nx, tx, OC_NR(c), NULL);
    snprintf(op, sizeof(op), "linear_bwd.%s.dw", what);
    oc_check(c, op, sh, dw, nw, tw, OC_NR(c), NULL);
    if (bias) {
        tb = OC_SUM_EPS * (M * mdy + oc_maxabs(db0, N)) +
             oc_bf16_tol(c, 2, oc_maxabs_delta(db[0], db0, N));
        snprintf(op, sizeof(op), "linear_bwd.%s.db", what);
        oc_check(c, op, sh, db, N, tb, OC_NR(c), NULL);
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
void
oc_case_linear(struct oc *c, const struct oc_model *m)
{
    int BT = m->B * m->T, head_rows = m->mlm ? oc_n_mlm(m) : BT;

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
void
oc_case_embed(struct oc *c, const struct oc_model *m)
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
             oc_bf16_tol(c, 2, oc_maxabs(ya[0], ny)), OC_NR(c), NULL);
    oc_check(c, "embed_fwd.tp_shard", sh, ytp, ny, 0.0, 0.0, NULL);
    snprintf(sh, sizeof(sh), "%s skip %d, %d repeats", m->name, m->skip_id,
             most);
    oc_check(c, "embed_bwd", sh, dt, nt,
             OC_SUM_EPS * (most * oc_maxabs(dy, ny) + oc_maxabs(dt0, nt)),
             OC_NR(c), NULL);
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
void
oc_case_layernorm(struct oc *c, const struct oc_model *m)
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
    double mx, mr, mxh, ty, eps = OC_SUM_EPS;
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
         4 * eps * oc_maxabs(y[0], nx) + oc_bf16_tol(c, 2, oc_maxabs(y[0], nx));
    snprintf(sh, sizeof(sh), "%s %dx%d eps %g", m->name, n, C, m->ln_eps);
    oc_check(c, "layernorm_fwd.y", sh, y, nx, ty, OC_NR(c), NULL);
    oc_check(c, "layernorm_fwd.mean", sh, mu, n, eps * C * mx, OC_NR(c), NULL);
    oc_check(c, "layernorm_fwd.rstd", sh, rs, n, eps * C * mr, OC_NR(c), NULL);
    oc_check(c, "residual_layernorm_fwd.r", sh, rr, nx,
             oc_bf16_tol(c, 2, oc_maxabs(rr[0], nx)), OC_NR(c), NULL);
    /* bf16: the statistics may be of r before or after its rounding. */
    oc_check(c, "residual_layernorm_fwd.y", sh, ry, nx,
             ty + oc_bf16_tol(c, 2, oc_maxabs(xr, nx) * mr * oc_maxabs(w, C)),
             OC_NR(c), NULL);
    oc_check(c, "residual_layernorm_fwd.mean", sh, rmu, n,
             eps * C * oc_maxabs(xr, nx) + oc_bf16_tol(c, 2, oc_maxabs(xr, nx)),
             OC_NR(c), NULL);
    oc_check(c, "residual_layernorm_fwd.rstd", sh, rrs, n,
             eps * C * mr + oc_bf16_tol(c, 2, mr), OC_NR(c), NULL);

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
                     oc_bf16_tol(c, 2, oc_maxabs(dx[0], nx));

        oc_check(c, "layernorm_bwd.dx", sh, dx, nx, tdx, OC_NR_BWD(c), NULL);
        oc_check(c, "layernorm_bwd.dw", sh, dw, C,
                 eps * (n * mdy * mxh + oc_maxabs(dw0, C)), OC_NR_BWD(c), NULL);
        oc_check(c, "layernorm_bwd.db", sh, db, C,
                 eps * (n * mdy + oc_maxabs(db0, C)), OC_NR_BWD(c), NULL);
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
         oc_bf16_tol(c, 2, oc_maxabs(y[0], n));
    tdx = 8 * OC_EPS * oc_maxabs(dy, n) * (1 + mx) * (1 + mx) * exact +
          OC_EPS * oc_maxabs(dx0, n) + 4 * OC_EPS * oc_maxabs(dx[0], n) +
          oc_bf16_tol(c, 2, oc_maxabs(dx[0], n));
    snprintf(sh, sizeof(sh), "%s %zu", model, n);
    snprintf(op, sizeof(op), "act_fwd.%s", act_name(act));
    oc_check(c, op, sh, y, n, ty, OC_NR(c), NULL);
    snprintf(op, sizeof(op), "act_bwd.%s", act_name(act));
    oc_check(c, op, sh, dx, n, tdx, OC_NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(dx);
    free(x);
    free(dy);
    free(dx0);
}

void
oc_case_act(struct oc *c, const struct oc_model *m)
{
    act_case(c, m->name, m->act, (size_t)m->B * m->T * m->I);
}

void
oc_case_act_other(struct oc *c, const struct oc_model *m)
{
    size_t n = (size_t)m->B * m->T * m->C + 13;

    act_case(c, "pooler, relu", OPS_ACT_TANH, n);
    act_case(c, "pooler, relu", OPS_ACT_RELU, n);
}

/* ------------------------------------------------------------ elementwise */

/* add (y aliasing a), accumulate, scale, accumulate_f32, scale_f32: one
 * rounding each, so exact in fp32 (bf16: 2 roundings a step). */
void
oc_case_elementwise(struct oc *c, const struct oc_model *m)
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
    oc_check(c, "add.aliased", sh, add, n,
             oc_bf16_tol(c, 2, oc_maxabs(add[0], n)), OC_NR(c), NULL);
    oc_check(c, "accumulate", sh, acc, n,
             oc_bf16_tol(c, 4, oc_maxabs(acc[0], n)), OC_NR(c), NULL);
    oc_check(c, "scale", sh, sc, n, oc_bf16_tol(c, 6, oc_maxabs(sc[0], n)),
             OC_NR(c), NULL);
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
void
oc_case_dropout(struct oc *c, const struct oc_model *m)
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
             2 * OC_EPS * oc_maxabs(y[0], n) +
                 oc_bf16_tol(c, 2, oc_maxabs(y[0], n)),
             OC_NR(c), NULL);
    oc_check(c, "dropout_fwd.in_place", sh, yi, n,
             2 * OC_EPS * oc_maxabs(yi[0], n) +
                 oc_bf16_tol(c, 2, oc_maxabs(yi[0], n)),
             OC_NR(c), NULL);
    oc_check_count(c, "dropout_bwd.mask", sh, bad_bwd, n * OC_RUNS,
                   "dropped elements' dx changed");
    oc_check(c, "dropout_bwd.dx", sh, dx, n,
             2 * OC_EPS * oc_maxabs(dy, n) / (1 - p) +
                 2 * OC_EPS * oc_maxabs(dx[0], n) +
                 oc_bf16_tol(c, 2, oc_maxabs(dx[0], n)),
             OC_NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(yi);
    oc_free_runs(dx);
    free(x);
    free(dy);
    free(dx0);
    free(keep);
}
