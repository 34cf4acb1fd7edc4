/* SPDX-License-Identifier: MIT */
/*
 * zero.h: data parallelism and sharding (ZeRO, Paddle's sharding stages)
 * as ownership ranges over the flat layout of the parameters, gradients
 * and moments: the gradients (zero_grads.c) and the parameters
 * (zero_params.c).  Stages 2 and 3 allocate what a rank owns, not the
 * flat buffers, and point the model at the buffers of the part in use
 * (model_bind_params(), model_bind_grads()).
 */
#ifndef TRAIN_ZERO_H
#define TRAIN_ZERO_H

#include <stddef.h>
#include <stdint.h>

#include "optim/optim.h"
#include "run/run.h"

/* zero_setup: this rank's range of the flat layout (sharding), the
 * optimizer over it, what the layout reduces as the backward goes
 * (overlap, stage 2, stage 3), and at stages 2 and 3 the buffers this
 * rank holds (run.h) and the model's hook that binds them. */
void zero_setup(struct run *r);

/* zero_release: what zero_setup() allocated. */
void zero_release(struct run *r);

/* zero_clear_grads: a step's gradients zeroed before its micro-steps
 * (stage 2: this rank's range; the buckets and the embeddings' and
 * heads' buffers are zeroed as they are reduced). */
void zero_clear_grads(struct run *r);

/* zero_reduce_grads: the mean of the replicas' gradients where the
 * optimizer needs it. */
void zero_reduce_grads(struct run *r, int64_t step);

/* zero_range_params, zero_range_compute_params, zero_range_grads: the
 * fp32 master weights, their compute copy (the backend's dtype; the
 * master itself in float32) and the fp32 gradients of this rank's range
 * [opt.lo, opt.hi), element opt.lo first, for the optimizer
 * (optim_apply()). */
float *zero_range_params(struct run *r);
void *zero_range_compute_params(struct run *r);
float *zero_range_grads(struct run *r);

/* zero_layer_grads_ready, zero_stage2_layer_ready: the backward's layer
 * hooks (model_set_layer_hook()) of the overlapped all-reduce and of
 * stage 2 (the layer's bucket to the ranks owning its pieces). */
void zero_layer_grads_ready(void *ctx, int l);
void zero_stage2_layer_ready(void *ctx, int l);

/* zero_shard_region: stage 2: gradients [a, b) of the embeddings or the
 * heads reduced to their owners, added to this rank's range, and zeroed
 * (for the next micro-step). */
void zero_shard_region(struct run *r, size_t a, size_t b);

/* zero_shard_heads: stage 2: the embeddings' and heads' gradients to
 * their owners after a micro-step's backward (skip_tied: but the tied
 * word embeddings of a pipeline's end stages). */
void zero_shard_heads(struct run *r, int skip_tied);

/* zero_part_hook: stages 2 and 3: the model's parameter hook
 * (model_set_param_hook()): a layer's compute copy gathered into a layer
 * buffer before its forward and its backward (stage 3, the next layer's
 * gather started meanwhile) and its buffer given back after; a bucket for
 * its gradients before its backward (stage 2). */
void zero_part_hook(void *ctx, int l, int need);

/* zero_grad_bucket: stage 2: the next of the two layer buckets, zeroed,
 * bound to layer l's gradients before its backward (the two take turns,
 * so that a layer's reduction may still read one, on a GPU's
 * communication stream, while the layer below fills the other). */
void zero_grad_bucket(struct run *r, int l);

/* zero_after_update: the parameters the other sharding ranks updated
 * gathered (stage 3: the embeddings and heads; the layers when needed). */
void zero_after_update(struct run *r, int64_t step);

/* zero_params_ready: the master weights have been written (loaded or
 * initialised, zero_buffer()): the compute copy of what this rank holds
 * is refreshed from them (model_params_changed(), or stage 3's range),
 * and stage 3 gathers the embeddings and heads from their owners. */
void zero_params_ready(struct run *r);

/* zero_clip: the sharding ranks' ranges clipped to [a, b) and made
 * relative to a (r->clip_off: sh + 1 bounds from 0 to b - a): which rank
 * owns which piece of [a, b), as the ranged collectives take it. */
size_t *zero_clip(struct run *r, size_t a, size_t b);

/* zero_buffer: where this rank keeps buffer b (enum ckpt_buffer: the
 * weights, or AdamW's first or second moments) of its flat layout: the
 * elements [*lo, *hi), element *lo first; the rest is the other sharding
 * ranks' (*lo 0 and *hi the table's total: this rank holds it all). */
float *zero_buffer(struct run *r, int b, size_t *lo, size_t *hi);

#endif /* TRAIN_ZERO_H */
