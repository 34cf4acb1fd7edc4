/* SPDX-License-Identifier: MIT */
/*
 * zero.h: data parallelism and sharding (ZeRO, Paddle's sharding stages)
 * as ownership ranges over the flat buffers: the gradients (zero_grads.c),
 * the parameters (zero_params.c) and the moments (zero_moments.c).
 */
#ifndef TRAIN_ZERO_H
#define TRAIN_ZERO_H

#include <stddef.h>
#include <stdint.h>

#include "optim/optim.h"
#include "run/run.h"

/* zero_setup: this rank's range of the flat buffers (sharding), the
 * optimizer over it, and what the layout reduces as the backward goes
 * (overlap, stage 2, stage 3). */
void zero_setup(struct run *r);

/* zero_clear_grads: a step's gradients zeroed before its micro-steps
 * (stage 2: this rank's accumulator; the buffer was discarded). */
void zero_clear_grads(struct run *r);

/* zero_reduce_grads: the mean of the replicas' gradients where the
 * optimizer needs it. */
void zero_reduce_grads(struct run *r, int64_t step);

/* zero_layer_grads_ready, zero_stage2_layer_ready: the backward's layer
 * hooks (model_set_layer_hook()) of the overlapped all-reduce and of
 * stage 2. */
void zero_layer_grads_ready(void *ctx, int l);
void zero_stage2_layer_ready(void *ctx, int l);

/* zero_shard_region: stage 2: gradients [a, b) reduced to their owners,
 * added to this rank's accumulator, and discarded. */
void zero_shard_region(struct run *r, size_t a, size_t b);

/* zero_shard_heads: stage 2: the embeddings' and heads' gradients to
 * their owners after a micro-step's backward (skip_tied: but the tied
 * word embeddings of a pipeline's end stages). */
void zero_shard_heads(struct run *r, int skip_tied);

/* zero_gather_params: parameters [a, b) from the sharding ranks owning
 * their pieces. */
void zero_gather_params(struct run *r, size_t a, size_t b);

/* zero_after_update: the parameters the other sharding ranks updated
 * gathered (stage 3: the embeddings and heads; the layers when needed),
 * and stage 2's gradient range discarded for the next step. */
void zero_after_update(struct run *r, int64_t step);

/* zero_stage3_params: stage 3's parameter hook (model_set_param_hook()). */
void zero_stage3_params(void *ctx, int l, int need);

/* zero_stage3_start: stage 3: keep this rank's range of the layers only,
 * and gather each layer when the model needs it. */
void zero_stage3_start(struct run *r);

/* zero_gather_moments: sharding: a whole-table optimizer holding every
 * rank's moments, for saving; zero_take_moments: keep this rank's range
 * of one. */
void zero_gather_moments(struct run *r, struct optimizer *full);
void zero_take_moments(struct run *r, const struct optimizer *full);

#endif /* TRAIN_ZERO_H */
