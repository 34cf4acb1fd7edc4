/* SPDX-License-Identifier: MIT */
/*
 * step.h: a training step: the micro-steps (micro.c), in the pipeline's
 * 1F1B order across stages (pipeline.c), the reduction, the norm and the
 * update (step.c), and the losses kept in backend memory until they are
 * read (loss_sums.c).  A step never waits for the backend: what the host
 * needs (losses, norm, the NaN checks, float16's loss scale) is read once
 * per logging interval (step_read()).
 */
#ifndef TRAIN_STEP_H
#define TRAIN_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "run/run.h"

/* train_step: global step `step` at learning rate lr: the micro-steps
 * (their losses into r->train_losses), the gradients reduced over the
 * replicas, their global norm, the update (skipped, in backend memory,
 * when the gradients are not finite).  comm_sent: the bytes this rank
 * sent for it. */
void train_step(struct run *r, int64_t step, double lr, double *comm_sent);

/* step_read: wait for the backend and read the step's scalars into
 * r->last (the norm, float16's loss scale, the skipped steps); stop,
 * naming the step, on a backend failure, a loss that was not finite, or a
 * gradient norm that was not finite (but with float16, whose dynamic loss
 * scaling skips such steps).  `step`: the last step taken. */
void step_read(struct run *r, int64_t step);

/* micro_steps_plain: the micro-steps of a step one after the other (one
 * rank, or a stage without neighbours). */
void micro_steps_plain(struct run *r, int64_t step);

/* load_micro, forward_micro, backward_micro: micro-step k's batch into
 * its activation slot, its forward (losses into r->train_losses), its
 * backward with the reduction hooks of the layout. */
void load_micro(struct run *r, int64_t step, int k, struct batch *b);
void forward_micro(struct run *r, int64_t step, int k, const struct batch *b);
void backward_micro(struct run *r, int k);

/* micro_steps_1f1b: the pipeline's micro-steps (step/pipeline.c). */
void micro_steps_1f1b(struct run *r, int64_t step);

/* loss_sums.c: the losses of micro-batches, two doubles each in backend
 * memory (model_forward()'s sums), read at once.  loss_sums_init: room
 * for cap micro-batches (more are read early, on the host, in order).
 * loss_sums_next: the zeroed sums of micro-batch b.  loss_sums_read:
 * *out = the sum of the micro-batches' losses since the last read (each
 * one's means, model_losses(), added in order); *bad (may be NULL) = the
 * first of them whose loss is not finite, counted from 0, or -1, and
 * *bad_loss (may be NULL) its loss. */
void loss_sums_init(struct run *r, struct loss_sums *ls, size_t cap);
void loss_sums_release(struct run *r, struct loss_sums *ls);
double *loss_sums_next(struct run *r, struct loss_sums *ls,
                       const struct batch *b);
void loss_sums_read(struct run *r, struct loss_sums *ls, struct losses *out,
                    int64_t *bad, double *bad_loss);

/* stage_bytes: the bytes of activations a micro-batch passes between
 * pipeline stages. */
size_t stage_bytes(const struct run *r, const struct batch *b);

/* p2p: stop if a pipeline transfer (rc < 0) failed. */
void p2p(struct run *r, int rc, int64_t step);

/* sync_tied: the tied word embeddings' gradients summed over the first
 * and last pipeline stages. */
void sync_tied(struct run *r, int64_t step);

#endif /* TRAIN_STEP_H */
