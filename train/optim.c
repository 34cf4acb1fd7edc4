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
optim_create(struct optimizer *o, const struct ops *ops,
             const struct param_table *table)
{
    o->ops = ops;
    o->table = table;
    o->t = 0;
    o->m = ops->alloc(table->total * sizeof(float));
    o->v = ops->alloc(table->total * sizeof(float));
    if (o->m == NULL || o->v == NULL) {
        optim_release(o);
        return -1;
    }
    return 0;
}

void
optim_release(struct optimizer *o)
{
    if (o->ops) {
        o->ops->release(o->m);
        o->ops->release(o->v);
    }
    o->m = o->v = NULL;
}

double
optim_grad_norm(const struct optimizer *o, const float *grads)
{
    double s = 0;

    for (size_t i = 0; i < o->table->n; i++) {
        const struct param_tensor *t = &o->table->t[i];

        s += o->ops->sumsq(grads + t->offset, t->numel);
    }
    return sqrt(s);
}

int
optim_step(struct optimizer *o, float *params, const float *grads, double lr,
           const struct adamw_params *p, double *norm_out)
{
    double norm = optim_grad_norm(o, grads);
    float scale = 1.0f;

    if (norm_out)
        *norm_out = norm;
    if (!isfinite(norm))
        return -1;
    if (p->grad_clip > 0)
        scale = (float)(p->grad_clip / fmax(norm, p->grad_clip));
    o->t++;
    for (size_t i = 0; i < o->table->n; i++) {
        const struct param_tensor *t = &o->table->t[i];

        o->ops->adamw(params + t->offset, grads + t->offset, o->m + t->offset,
                      o->v + t->offset, t->numel, (float)lr, (float)p->beta1,
                      (float)p->beta2, (float)p->eps,
                      t->decay ? (float)p->weight_decay : 0.0f, scale,
                      (int)o->t);
    }
    return 0;
}
