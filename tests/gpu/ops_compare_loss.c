/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_loss.c: the cases of the loss: softmax cross-entropy
 * over the padded vocab, its vocab-parallel trio, the MLM rows.
 * The tolerances' rules are at the top of ops_compare.h.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

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
    return xent_tol_loss(V, mx) * mg + 2 * OC_EPS * dscale +
           oc_bf16_tol(c, 2, mg);
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
void
oc_case_xent(struct oc *c, const struct oc_model *m)
{
    int n = m->mlm ? oc_n_mlm(m) : m->B * m->T, V = m->V, Vv = m->V_valid;
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
        oc_check(c, op, sh, loss[inplace], n, xent_tol_loss(Vv, mx), OC_NR(c),
                 NULL);
        snprintf(op, sizeof(op), "xent%s.dlogits",
                 inplace ? ".in_place_scaled" : "");
        oc_check(c, op, sh, dl[inplace], nl,
                 xent_tol_grad(c, Vv, mx, mg, dscale * (inplace ? ls : 1)),
                 OC_NR(c), NULL);
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
    int n = m->mlm ? oc_n_mlm(m) : m->B * m->T;
    int Vv = (m->V_valid + S - 1) / S;
    int Vs = S == 1 ? m->V : (int)oc_round_up((size_t)Vv, OPS_VOCAB_ALIGN);
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
                 OC_NR(c), NULL);
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
        oc_check(c, op, sh, loss, n, xent_tol_loss(m->V_valid, mx), OC_NR(c),
                 NULL);
    }
    oc_free_runs(loss);
    free(t);
    free(valid);
    free(vm2);
}

void
oc_case_xent_vp(struct oc *c, const struct oc_model *m)
{
    xent_vp_case(c, m, 1);
    xent_vp_case(c, m, 2);
}

/* ------------------------------------------------------------ MLM rows */

/* gather_rows: a copy, exact; scatter_add_rows: the repeats of a row
 * summed in i order, the initial value before or after: |d| <= eps
 * (repeats max|dy| + max|dx0|) (bf16: 2 roundings a repeat). */
void
oc_case_rows(struct oc *c, const struct oc_model *m)
{
    int n = oc_n_mlm(m), BT = m->B * m->T, C = m->C, real = (int)(0.15 * BT);
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
             OC_SUM_EPS *
                     ((n - real + 1) * oc_maxabs(dy, ny) + oc_maxabs(dx0, nx)) +
                 oc_bf16_tol(c, 2.0 * (n - real + 1), oc_maxabs(dx[0], nx)),
             OC_NR(c), NULL);
    oc_free_runs(y);
    oc_free_runs(dx);
out:
    free(x);
    free(dy);
    free(dx0);
    free(rows);
}
