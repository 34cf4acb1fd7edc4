/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_optim.c: the cases of the step: the sums kept in backend
 * memory, loss_check, step_prepare, step_finish, AdamW.
 * The tolerances' rules are at the top of ops_compare.h.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

/* ------------------------------------------------------------ reductions */

/* sum_acc and sumsq_acc: double sums of float terms (squares exact in
 * double) in a fixed order on each side: |d| <= DBL_EPSILON (n sum|term|
 * + |acc0|), the worst case of an n-term double sum. */
void
oc_case_reduce(struct oc *c, const struct oc_model *m)
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
void
oc_case_step(struct oc *c, const struct oc_model *m)
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
void
oc_case_adamw(struct oc *c, const struct oc_model *m)
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
            own = oc_copy(p[r], n);
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
            double step = oc_maxabs_delta(p[0], p0, n);

            snprintf(op, sizeof(op), "%s.p", name);
            oc_check(c, op, sh, p, n,
                     4 * OC_EPS * oc_maxabs(p[0], n) + 16 * OC_EPS * step,
                     OC_NR(c), NULL);
            snprintf(op, sizeof(op), "%s.m", name);
            oc_check(c, op, sh, mm, n, 4 * OC_EPS * oc_maxabs(mm[0], n),
                     OC_NR(c), NULL);
            snprintf(op, sizeof(op), "%s.v", name);
            oc_check(c, op, sh, vv, n, 4 * OC_EPS * oc_maxabs(vv[0], n),
                     OC_NR(c), NULL);
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
