/* SPDX-License-Identifier: MIT */
/*
 * optim.h: the learning-rate schedules of the seed (PaddleNLP's
 * LinearAnnealingWithWarmupDecay, CosineAnnealingWithWarmupDecay), global
 * gradient-norm clipping (Paddle's ClipGradByGlobalNorm), float16's loss
 * scaling and AdamW with decoupled weight decay over a model's tensor
 * table, on the fp32 master weights.
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

/* An optimizer over a range of a model's flat buffers.  Its step's
 * scalars (struct ops_step: the gradients' sum of squares, the clipping
 * factor, the AdamW step count, float16's loss scale, the NaN check) live
 * in backend memory, so a step runs with no host round trip; t is the
 * host's copy of the step count, as of optim_state_get() or _set(). */
struct optimizer {
    const struct ops *ops;
    const struct param_table *table;
    size_t lo, hi;       /* the range of the flat buffers it owns (sharding) */
    float *m, *v;        /* moments of lo..hi-1, backend memory */
    struct ops_step *st; /* backend memory */
    size_t bytes;        /* backend memory allocated for m, v and st */
    int64_t t;           /* steps taken (host copy of st->t) */
};

/* optim_create: zeroed moments for the whole table, and the step's
 * scalars (t 0, loss scale 1, no bad step).  Returns 0 or -1 (no memory:
 * the backend's error() says how much was asked). */
int optim_create(struct optimizer *o, const struct ops *ops,
                 const struct param_table *table);
/* optim_create_range: moments for elements lo..hi-1 of the flat buffers
 * only (sharding: each rank steps its own range; ranges cut tensors
 * anywhere). */
int optim_create_range(struct optimizer *o, const struct ops *ops,
                       const struct param_table *table, size_t lo, size_t hi);
void optim_release(struct optimizer *o);

/* optim_grad_sumsq: acc (backend memory) += the sum of squares of the
 * owned range of grads, tensor by tensor in table order (each tensor's
 * part summed in double, then added): a pipeline stage's copy of the tied
 * embeddings is not counted (its twin is), nor, under tensor parallelism,
 * are the replicated tensors on ranks other than 0, so the sum over every
 * rank counts each parameter once.  Here and in optim_apply(), grads,
 * params and pc hold the owned range [lo, hi), element lo first (for a
 * whole-table optimizer, the flat buffers). */
void optim_grad_sumsq(const struct optimizer *o, const float *grads,
                      double *acc);

/* optim_prepare: from o->st->sumsq (the global sum of squares: the
 * caller sums it over the ranks), the step's clipping (grad_clip > 0:
 * grads scaled by grad_clip / max(norm, grad_clip), Paddle's rule) and,
 * per ls (NULL: none), float16's loss scaling: ops.h's step_prepare(). */
void optim_prepare(struct optimizer *o, const struct adamw_params *p,
                   const struct ops_step_opts *ls);

/* optim_apply: the AdamW update of the owned range at learning rate lr
 * (o->st's clipping; nothing if the step is skipped), decay only on
 * tensors with `decay` set (weights and embeddings; not biases and
 * norms); pc (the parameters' compute copy, of the backend's dtype; params
 * itself, or NULL, in float32) receives the new values.  Then the step
 * count advances (unless skipped). */
void optim_apply(struct optimizer *o, float *params, void *pc,
                 const float *grads, double lr, const struct adamw_params *p);

/* optim_step: one whole step on one rank: the sum of squares of the owned
 * range (the whole table), optim_prepare() without loss scaling,
 * optim_apply().  Waits for the backend: *norm_out (may be NULL) receives
 * the norm before clipping.  Returns 0, or -1 if the norm is not finite
 * (nothing is updated then) or the backend failed. */
int optim_step(struct optimizer *o, float *params, void *pc, const float *grads,
               double lr, const struct adamw_params *p, double *norm_out);

/* optim_state_get: the step's scalars from backend memory into *st (may
 * be NULL), and o->t from them; waits for the backend.  Returns 0, or -1
 * if the backend failed (its error() says why).  optim_state_set: the
 * reverse (a resumed run's step count, loss scale and counts); o->t =
 * st->t. */
int optim_state_get(struct optimizer *o, struct ops_step *st);
void optim_state_set(struct optimizer *o, const struct ops_step *st);

#endif /* TRAIN_OPTIM_H */
