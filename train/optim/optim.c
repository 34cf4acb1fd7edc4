/* SPDX-License-Identifier: MIT */
/* optim.c: schedules, clipping and AdamW (see optim.h). */
#include <math.h>

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

    o->ops = ops;
    o->table = table;
    o->lo = lo;
    o->hi = hi;
    o->t = 0;
    /* (An empty range still gets a buffer: alloc(0) may return NULL.) */
    o->bytes = 2 * (n ? n : 1) * sizeof(float);
    o->m = ops->alloc(o->bytes / 2, "AdamW moments");
    o->v = ops->alloc(o->bytes / 2, "AdamW moments");
    if (o->m == NULL || o->v == NULL) {
        optim_release(o);
        return -1;
    }
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
    }
    o->m = o->v = NULL;
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
optim_grad_sumsq_split(const struct optimizer *o, const float *grads,
                       double *split, double *whole)
{
    *split = *whole = 0;
    for (size_t i = 0; i < o->table->n; i++) {
        const struct param_tensor *t = &o->table->t[i];
        size_t a, b;

        if (!t->tied_copy && owned_part(o, t, &a, &b)) {
            double s = o->ops->sumsq(grads + (a - o->lo), b - a);

            if (t->tp != TP_REPLICATED && o->table->tp_size > 1)
                *split += s;
            else
                *whole += s;
        }
    }
}

double
optim_grad_sumsq(const struct optimizer *o, const float *grads)
{
    double split, whole;

    optim_grad_sumsq_split(o, grads, &split, &whole);
    return split + whole;
}

double
optim_grad_norm(const struct optimizer *o, const float *grads)
{
    return sqrt(optim_grad_sumsq(o, grads));
}

int
optim_apply(struct optimizer *o, float *params, const float *grads, double lr,
            const struct adamw_params *p, double norm)
{
    float scale = 1.0f;

    if (!isfinite(norm))
        return -1;
    if (p->grad_clip > 0)
        scale = (float)(p->grad_clip / fmax(norm, p->grad_clip));
    o->t++;
    for (size_t i = 0; i < o->table->n; i++) {
        const struct param_tensor *t = &o->table->t[i];
        size_t a, b;

        if (!owned_part(o, t, &a, &b))
            continue;
        o->ops->adamw(params + (a - o->lo), grads + (a - o->lo),
                      o->m + (a - o->lo), o->v + (a - o->lo), b - a, (float)lr,
                      (float)p->beta1, (float)p->beta2, (float)p->eps,
                      t->decay ? (float)p->weight_decay : 0.0f, scale,
                      (int)o->t);
    }
    return 0;
}

int
optim_step(struct optimizer *o, float *params, const float *grads, double lr,
           const struct adamw_params *p, double *norm_out)
{
    double norm = optim_grad_norm(o, grads);

    if (norm_out)
        *norm_out = norm;
    return optim_apply(o, params, grads, lr, p, norm);
}
