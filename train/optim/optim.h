/* SPDX-License-Identifier: MIT */
/*
 * optim.h: the learning-rate schedules of the seed (PaddleNLP's
 * LinearAnnealingWithWarmupDecay, CosineAnnealingWithWarmupDecay), global
 * gradient-norm clipping (Paddle's ClipGradByGlobalNorm) and AdamW with
 * decoupled weight decay over a model's tensor table.
 */
#ifndef TRAIN_OPTIM_H
#define TRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "model/params.h"

enum lr_schedule { LR_LINEAR = 0, LR_COSINE = 1, LR_CONSTANT = 2 };

struct lr_params {
    enum lr_schedule kind;
    double max_lr, min_lr;
    double warmup_steps; /* warmup_rate * max_steps (a float, as the seed) */
    double decay_steps;
};

/* lr_at: the learning rate of the optimizer step that produces global step
 * `step` (1-based), ernie-data.md 8.4:
 *   max_lr * step / w                         if w > 0 and step <= w
 *   min_lr                                    if step > decay_steps
 *   min_lr + f * (max_lr - min_lr)            otherwise, where r = (step -
 *   w) / (d - w) and f = 1 - r (linear) or 0.5 * (cos(pi r) + 1) (cosine).
 * LR_CONSTANT gives max_lr. */
double lr_at(const struct lr_params *p, int64_t step);

struct adamw_params {
    double beta1, beta2, eps, weight_decay;
    double grad_clip; /* > 0: clip the global norm to this */
};

struct optimizer {
    const struct ops *ops;
    const struct param_table *table;
    size_t lo, hi; /* the range of the flat buffers it owns (sharding) */
    float *m, *v;  /* moments of lo..hi-1, backend memory */
    size_t bytes;  /* backend memory allocated for them */
    int64_t t;     /* steps taken */
};

/* optim_create: zeroed moments for the whole table.  Returns 0 or -1 (no
 * memory). */
int optim_create(struct optimizer *o, const struct ops *ops,
                 const struct param_table *table);
/* optim_create_range: moments for elements lo..hi-1 of the flat buffers
 * only (sharding: each rank steps its own range; ranges cut tensors
 * anywhere). */
int optim_create_range(struct optimizer *o, const struct ops *ops,
                       const struct param_table *table, size_t lo, size_t hi);
void optim_release(struct optimizer *o);

/* optim_grad_sumsq: the sum of squares of the owned range of grads, per
 * tensor (the parts of tensors) in double, in table order (a pipeline
 * stage's copy of the tied embeddings not counted: its twin is).  Here
 * and in optim_apply(), grads and params hold the owned range [lo, hi),
 * element lo first (for a whole-table optimizer, the flat buffers). */
double optim_grad_sumsq(const struct optimizer *o, const float *grads);

/* optim_grad_sumsq_split: the same, in two sums: of the tensors tensor
 * parallelism splits (*split) and of the replicated ones (*whole). */
void optim_grad_sumsq_split(const struct optimizer *o, const float *grads,
                            double *split, double *whole);

/* optim_grad_norm: sqrt(optim_grad_sumsq()): the global L2 norm when the
 * optimizer owns the whole table. */
double optim_grad_norm(const struct optimizer *o, const float *grads);

/* optim_apply: optim_step()'s update of the owned range, given the global
 * gradient norm (summed over every range).  Returns -1 if norm is not
 * finite (nothing is updated then). */
int optim_apply(struct optimizer *o, float *params, const float *grads,
                double lr, const struct adamw_params *p, double norm);

/* optim_step: one AdamW step at learning rate lr: clip (if grad_clip > 0:
 * grads scaled by grad_clip / max(norm, grad_clip)), decay only tensors
 * with `decay` set (weights and embeddings; not biases and norms), update
 * params and the moments.  *norm_out (may be NULL) receives the norm
 * before clipping.  Returns 0, or -1 if the norm is not finite (nothing
 * is updated then). */
int optim_step(struct optimizer *o, float *params, const float *grads,
               double lr, const struct adamw_params *p, double *norm_out);

#endif /* TRAIN_OPTIM_H */
