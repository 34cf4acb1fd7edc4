/* SPDX-License-Identifier: MIT */
/*
 * micro.c: the micro-steps of a training step: each micro-batch's forward
 * (its dropout seed keyed by its place in the global batch) and backward
 * (with the reduction hooks of the layout, zero/), and the micro-batches
 * one after the other (pipeline.c has the 1F1B order).
 */
#include "data/loader.h"
#include "log/flops.h"
#include "ops.h"
#include "step.h"
#include "zero/zero.h"

/* The dropout seed of micro-batch `micro` of this rank: keyed by the
 * micro-batch's place in the global batch (rank r's micro-step k holds the
 * samples a single rank reads at micro-step k * dp + r), so every
 * data-parallel layout draws the masks of one rank accumulating. */
static uint64_t
micro_seed(const struct run *r, int64_t step, int micro)
{
    uint64_t global =
        (uint64_t)micro * (uint64_t)r->replicas + (uint64_t)r->replica;

    return ops_splitmix64((uint64_t)r->a.seed ^
                          ops_splitmix64(((uint64_t)step << 16) | global));
}

/* Micro-step k's batch into its slot (the forward follows; a stage after
 * the first receives its input before it). */
void
load_micro(struct run *r, int64_t step, int k, struct batch *b)
{
    model_use_slot(r->m, k % r->slots);
    if (loader_next(r->train, b))
        fatal("global step %lld: the training data ran out", (long long)step);
}

void
forward_micro(struct run *r, int64_t step, int k, const struct batch *b)
{
    struct forward_opts fo;
    double *sums = loss_sums_next(r, &r->train_losses, b);
    char err[1024];

    model_use_slot(r->m, k % r->slots);
    fo.dropout = 1;
    fo.seed = micro_seed(r, step, k);
    fo.grad_scale = 1.0f / (float)r->accumulate;
    fo.loss_scale = r->loss_scale;
    if (model_forward(r->m, b, &fo, sums, err, sizeof(err)) < 0)
        fatal("global step %lld: %s", (long long)step, err);
    if (r->pp_rank == r->pp - 1) { /* the losses are the last stage's */
        r->ops->loss_check(r->opt.st, &sums[0], step);
        r->ops->loss_check(r->opt.st, &sums[1], step);
    }
    r->flops += train_flops(&r->cfg, b->B, b->T, b->M) / (r->tp * r->pp);
}

void
backward_micro(struct run *r, int k)
{
    model_use_slot(r->m, k % r->slots);
    if (r->overlap && k == r->accumulate - 1)
        model_set_layer_hook(r->m, zero_layer_grads_ready, r);
    if (r->stage2)
        model_set_layer_hook(r->m, zero_stage2_layer_ready, r);
    model_backward(r->m);
    model_set_layer_hook(r->m, NULL, NULL);
    if (r->stage2) /* the embeddings and heads */
        zero_shard_heads(r, r->pp > 1);
}

/* One rank, or a pipeline stage without neighbours: forward and backward
 * of each micro-batch in turn. */
void
micro_steps_plain(struct run *r, int64_t step)
{
    for (int k = 0; k < r->accumulate; k++) {
        struct batch b;

        load_micro(r, step, k, &b);
        forward_micro(r, step, k, &b);
        backward_micro(r, k);
    }
}
