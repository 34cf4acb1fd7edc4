/* SPDX-License-Identifier: MIT */
/*
 * step.h: a training step: the micro-steps (micro.c), in the pipeline's
 * 1F1B order across stages (pipeline.c), the reduction, the norm and the
 * update (step.c).
 */
#ifndef TRAIN_STEP_H
#define TRAIN_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "run/run.h"

/* train_step: global step `step` at learning rate lr: the micro-steps
 * (their losses added to acc), the gradients reduced over the replicas,
 * their global norm (returned), the update.  comm_sent: the bytes this
 * rank sent for it. */
double train_step(struct run *r, int64_t step, double lr, struct losses *acc,
                  double *comm_sent);

/* check_loss: stop on a loss that is not finite, naming the step. */
void check_loss(int64_t step, const struct losses *L, const char *what);

/* micro_steps_plain: the micro-steps of a step one after the other (one
 * rank, or a stage without neighbours). */
void micro_steps_plain(struct run *r, int64_t step, struct losses *acc);

/* load_micro, forward_micro, backward_micro: micro-step k's batch into
 * its activation slot, its forward (losses added to acc), its backward
 * with the reduction hooks of the layout. */
void load_micro(struct run *r, int64_t step, int k, struct batch *b);
void forward_micro(struct run *r, int64_t step, int k, const struct batch *b,
                   struct losses *acc);
void backward_micro(struct run *r, int k);

/* micro_steps_1f1b: the pipeline's micro-steps (step/pipeline.c). */
void micro_steps_1f1b(struct run *r, int64_t step, struct losses *acc);

/* stage_bytes: the bytes of activations a micro-batch passes between
 * pipeline stages. */
size_t stage_bytes(const struct run *r, const struct batch *b);

/* p2p: stop if a pipeline transfer (rc < 0) failed. */
void p2p(struct run *r, int rc, int64_t step);

/* sync_tied: the tied word embeddings' gradients summed over the first
 * and last pipeline stages. */
void sync_tied(struct run *r, int64_t step);

#endif /* TRAIN_STEP_H */
