/* SPDX-License-Identifier: MIT */
/*
 * zero_grads.c: data parallelism and sharding (ZeRO, Paddle's sharding
 * stages) as ownership ranges over the flat buffers: sharding rank k owns
 * [shard_off[k], shard_off[k+1]) of the parameters, gradients and
 * moments, cut anywhere.  This file sets the ranges up and brings the
 * replicas' gradients to where the optimizer needs them: all-reduced
 * (stage 0, overlapped with the backward layer by layer when it can be),
 * reduce-scattered at the end of the step (stage 1), or reduced to their
 * owners as the backward finishes each layer (stage 2).  zero_params.c
 * holds stage 3's parameters, zero_moments.c the moments for checkpoints.
 */
#include <stdlib.h>

#include "comm.h"
#include "zero.h"

/* Whether the layers' tensors form one contiguous run of the flat buffers,
 * layer after layer (so the layer buckets and the two ends cover
 * everything once); sets r->layers_lo/hi. */
static int
layers_contiguous(struct run *r)
{
    size_t lo, hi, prev_hi = 0;
    int first, end;

    model_stage_layers(r->m, &first, &end);
    for (int l = first; l < end; l++) {
        model_layer_range(r->m, l, &lo, &hi);
        if (l == first)
            r->layers_lo = lo;
        else if (lo != prev_hi)
            return 0;
        prev_hi = hi;
    }
    r->layers_hi = prev_hi;
    return end > first;
}

void
zero_setup(struct run *r)
{
    const struct train_args *a = &r->a;
    const struct ops *op = model_ops(r->m);
    size_t n = model_table(r->m)->total;

    /* Sharding: rank k of the group owns [off[k], off[k+1]) of the flat
     * buffers, cut anywhere (no tensor needs to divide). */
    r->shard_off = calloc((size_t)r->sh + 1, sizeof(*r->shard_off));
    if (r->shard_off == NULL)
        fatal("out of memory");
    for (int k = 0; k <= r->sh; k++)
        r->shard_off[k] = n / (size_t)r->sh * (size_t)k +
                          n % (size_t)r->sh * (size_t)k / (size_t)r->sh;
    if (optim_create_range(&r->opt, op, model_table(r->m),
                           r->shard_off[r->sh_rank],
                           r->shard_off[r->sh_rank + 1]) < 0)
        fatal("out of memory for the optimizer");
    r->overlap = a->overlap_grad_reduce && r->dp > 1 && r->sh == 1 &&
                 layers_contiguous(r);
    if (r->sh > 1 && a->sharding_stage >= 2) {
        if (!layers_contiguous(r))
            fatal("sharding stage 2 needs the layers' tensors in one run");
        r->stage2 = 1;
        r->stage3 = a->sharding_stage == 3;
        r->gacc = op->alloc((r->opt.hi - r->opt.lo) * sizeof(float),
                            "sharding's gradient sums");
        r->clip_off = calloc((size_t)r->sh + 1, sizeof(*r->clip_off));
        if (r->gacc == NULL || r->clip_off == NULL)
            fatal("out of memory");
    }
}

/* The mean of the replicas' gradients, where the optimizer needs it: the
 * whole buffer on every data-parallel rank; with sharding, each rank's own
 * range only (reduce-scattered over the sharding group, then all-reduced
 * over the data-parallel group).  Overlapped: the layers are on their way
 * already; the embeddings and heads (the tied word embeddings get their
 * last gradient at the very end) follow now. */
void
zero_reduce_grads(struct run *r, int64_t step)
{
    float *g = model_grads(r->m);
    size_t lo = r->opt.lo, n = r->opt.hi - r->opt.lo;

    if (r->replicas == 1)
        return;
    if (r->stage2) { /* the sharding sums are in gacc already */
        model_ops(r->m)->accumulate_f32(g + lo, r->gacc, n);
        if (r->dp > 1 &&
            r->comm->all_reduce_sum(r->comm, g + lo, n, COMM_F32, COMM_DP) < 0)
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        model_ops(r->m)->scale_f32(g + lo, n, 1.0f / (float)r->replicas);
        return;
    }
    if (r->overlap) {
        size_t total = model_table(r->m)->total;

        if (r->comm->all_reduce_sum_start(r->comm, g, r->layers_lo, COMM_F32,
                                          COMM_DP) < 0 ||
            r->comm->all_reduce_sum_start(r->comm, g + r->layers_hi,
                                          total - r->layers_hi, COMM_F32,
                                          COMM_DP) < 0 ||
            r->comm->wait_all(r->comm) < 0)
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        model_ops(r->m)->scale_f32(g, total, 1.0f / (float)r->replicas);
        return;
    }
    if (r->sh > 1 && r->comm->reduce_scatter_ranges(
                         r->comm, g, r->shard_off, COMM_F32, COMM_SHARDING) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    if (r->dp > 1 &&
        r->comm->all_reduce_sum(r->comm, g + lo, n, COMM_F32, COMM_DP) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    model_ops(r->m)->scale_f32(g + lo, n, 1.0f / (float)r->replicas);
}

/* The backward hook of the overlapped reduction: layer l's gradients are
 * complete, start their all-reduce (one bucket a layer). */
void
zero_layer_grads_ready(void *ctx, int l)
{
    struct run *r = ctx;
    size_t lo, hi;

    model_layer_range(r->m, l, &lo, &hi);
    if (r->comm->all_reduce_sum_start(r->comm, model_grads(r->m) + lo, hi - lo,
                                      COMM_F32, COMM_DP) < 0 ||
        r->comm->test_all(r->comm) < 0)
        fatal("%s", r->comm->error);
}

/* Stage 2: reduce grads[a, b) to the sharding ranks owning its pieces,
 * add this rank's piece to its accumulator, and discard the region (it
 * reads as zero again for the next micro-step). */
void
zero_shard_region(struct run *r, size_t a, size_t b)
{
    const struct ops *op = model_ops(r->m);
    float *g = model_grads(r->m);

    for (int k = 0; k < r->sh; k++) {
        size_t pa = a > r->shard_off[k] ? a : r->shard_off[k];
        size_t pb = b < r->shard_off[k + 1] ? b : r->shard_off[k + 1];

        if (pa >= pb)
            continue;
        if (r->comm->reduce_sum(r->comm, g + pa, pb - pa, COMM_F32, k,
                                COMM_SHARDING) < 0)
            fatal("%s", r->comm->error);
        if (k == r->sh_rank)
            op->accumulate_f32(r->gacc + (pa - r->opt.lo), g + pa, pb - pa);
    }
    if (b > a)
        op->zero(g + a, (b - a) * sizeof(float));
}

void
zero_stage2_layer_ready(void *ctx, int l)
{
    struct run *r = ctx;
    size_t lo, hi;

    model_layer_range(r->m, l, &lo, &hi);
    zero_shard_region(r, lo, hi);
}

/* Stage 2: the embeddings' and heads' gradients to their owners after a
 * micro-step's backward, but (skip_tied) for the tied word embeddings of a
 * pipeline's first or last stage: the other stage's half of their sum
 * comes only once every micro-step is done, so they accumulate until
 * then (a collective of the embedding group in the middle of 1F1B would
 * wait for a stage that waits for this one). */
void
zero_shard_heads(struct run *r, int skip_tied)
{
    size_t total = model_table(r->m)->total;
    size_t hole_lo = skip_tied ? r->tied_off : total;
    size_t hole_hi = skip_tied ? r->tied_off + r->tied_n : total;
    size_t ends[2][2] = { { 0, r->layers_lo }, { r->layers_hi, total } };

    for (int i = 0; i < 2; i++) {
        size_t a = ends[i][0], b = ends[i][1];

        if (hole_lo >= a && hole_hi <= b && hole_hi > hole_lo) {
            zero_shard_region(r, a, hole_lo);
            zero_shard_region(r, hole_hi, b);
        } else {
            zero_shard_region(r, a, b);
        }
    }
}

void
zero_clear_grads(struct run *r)
{
    if (r->stage2) /* every region was discarded: zero, untouched */
        model_ops(r->m)->zero(r->gacc, (r->opt.hi - r->opt.lo) * sizeof(float));
    else
        model_zero_grad(r->m);
}
