/* SPDX-License-Identifier: MIT */
/* optim.c: schedules, clipping and AdamW (see optim.h). */
#include <math.h>
#include <string.h>

#include "optim.h"

double
lr_at(const struct lr_params *p, int64_t step)
{
    double e = (double)step, w = p->warmup_steps, d = p->decay_steps, r;

    if (p->kind == LR_CONSTANT)
        return p->max_lr;
    if (w > 0 && e <= w)
        return p->max_lr * e / w;
    if (e > d)
        return p->min_lr;
    r = (e - w) / (d - w);
    if (p->kind == LR_COSINE)
        return p->min_lr +
               0.5 * (cos(M_PI * r) + 1.0) * (p->max_lr - p->min_lr);
    return p->min_lr + (1.0 - r) * (p->max_lr - p->min_lr);
}

int
optim_create_range(struct optimizer *o, const struct ops *ops,
                   const struct param_table *table, size_t lo, size_t hi)
{
    size_t n = hi - lo;
    struct ops_step st;

    o->ops = ops;
    o->table = table;
    o->lo = lo;
    o->hi = hi;
    o->t = 0;
    o->st = NULL;
    /* (An empty range still gets a buffer: alloc(0) may return NULL.) */
    o->bytes = 2 * (n ? n : 1) * sizeof(float) + sizeof(*o->st);
    o->m = ops->alloc((n ? n : 1) * sizeof(float), "AdamW's moments");
    o->v = o->m ? ops->alloc((n ? n : 1) * sizeof(float), "AdamW's moments")
                : NULL;
    o->st = o->v ? ops->alloc(sizeof(*o->st), "the step's scalars") : NULL;
    if (o->st == NULL) {
        optim_release(o);
        return -1;
    }
    memset(&st, 0, sizeof(st));
    st.loss_scale = 1.0f;
    st.bad_step = -1;
    optim_state_set(o, &st);
    return 0;
}

int
optim_create(struct optimizer *o, const struct ops *ops,
             const struct param_table *table)
{
    return optim_create_range(o, ops, table, 0, table->total);
}

void
optim_release(struct optimizer *o)
{
    if (o->ops) {
        o->ops->release(o->m);
        o->ops->release(o->v);
        o->ops->release(o->st);
    }
    o->m = o->v = NULL;
    o->st = NULL;
    o->bytes = 0;
}

/* The part of tensor t inside the owned range: [*a, *b), false if none. */
static int
owned_part(const struct optimizer *o, const struct param_tensor *t, size_t *a,
           size_t *b)
{
    *a = t->offset > o->lo ? t->offset : o->lo;
    *b = t->offset + t->numel < o->hi ? t->offset + t->numel : o->hi;
    return *a < *b;
}

void
optim_grad_sumsq(const struct optimizer *o, const float *grads, double *acc)
{
    const struct param_table *pt = o->table;

    for (size_t i = 0; i < pt->n; i++) {
        const struct param_tensor *t = &pt->t[i];
        size_t a, b;

        if (t->tied_copy ||
            (pt->tp_size > 1 && pt->tp_rank != 0 && t->tp == TP_REPLICATED))
            continue;
        if (owned_part(o, t, &a, &b))
            o->ops->sumsq_acc(acc, grads + (a - o->lo), b - a);
    }
}

void
optim_prepare(struct optimizer *o, const struct adamw_params *p,
              const struct ops_step_opts *ls)
{
    struct ops_step_opts so;

    if (ls != NULL)
        so = *ls;
    else
        memset(&so, 0, sizeof(so));
    so.max_norm = p->grad_clip > 0 ? (float)p->grad_clip : 0.0f;
    o->ops->step_prepare(o->st, &so);
}

void
optim_apply(struct optimizer *o, float *params, void *pc, const float *grads,
            double lr, const struct adamw_params *p)
{
    size_t es = ops_dtype_size(o->ops->dtype);

    if (pc == (void *)params) /* float32: the master is the compute copy */
        pc = NULL;
    for (size_t i = 0; i < o->table->n; i++) {
        const struct param_tensor *t = &o->table->t[i];
        size_t a, b;

        if (!owned_part(o, t, &a, &b))
            continue;
        o->ops->adamw(
            params + (a - o->lo), pc ? (char *)pc + (a - o->lo) * es : NULL,
            grads + (a - o->lo), o->m + (a - o->lo), o->v + (a - o->lo), b - a,
            (float)lr, (float)p->beta1, (float)p->beta2, (float)p->eps,
            t->decay ? (float)p->weight_decay : 0.0f, o->st);
    }
    o->ops->step_finish(o->st);
}

int
optim_step(struct optimizer *o, float *params, void *pc, const float *grads,
           double lr, const struct adamw_params *p, double *norm_out)
{
    struct ops_step st;

    o->ops->zero(&o->st->sumsq, sizeof(o->st->sumsq));
    optim_grad_sumsq(o, grads, &o->st->sumsq);
    optim_prepare(o, p, NULL);
    optim_apply(o, params, pc, grads, lr, p);
    if (optim_state_get(o, &st) < 0)
        return -1;
    if (norm_out)
        *norm_out = sqrt(st.sumsq);
    return st.skip ? -1 : 0;
}

int
optim_state_get(struct optimizer *o, struct ops_step *st)
{
    struct ops_step tmp;

    if (st == NULL)
        st = &tmp;
    if (o->ops->download(st, o->st, sizeof(*st)) < 0)
        return -1;
    o->t = st->t;
    return 0;
}

void
optim_state_set(struct optimizer *o, const struct ops_step *st)
{
    o->ops->upload(o->st, st, sizeof(*st));
    o->t = st->t;
}
