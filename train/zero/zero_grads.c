/* SPDX-License-Identifier: MIT */
/*
 * zero_grads.c: data parallelism and sharding (ZeRO, Paddle's sharding
 * stages) as ownership ranges over the flat layout: sharding rank k owns
 * [shard_off[k], shard_off[k+1]) of the parameters, gradients and
 * moments, cut anywhere.  This file sets the ranges and the buffers of
 * stages 2 and 3 up, and brings the replicas' gradients to where the
 * optimizer needs them: all-reduced (stage 0, overlapped with the
 * backward layer by layer when it can be), reduce-scattered at the end of
 * the step (stage 1), or reduced to their owners as the backward finishes
 * each layer, from a layer-sized bucket (stage 2), so that a rank never
 * holds the whole gradients.  zero_params.c holds stage 3's parameters.
 */
#include <stdlib.h>

#include "comm.h"
#include "zero.h"

/* Whether the layers' tensors form one contiguous run of the flat layout,
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

/* Backend memory for one of zero/'s buffers, its bytes counted in *acc
 * (the start report); NULL for none. */
static void *
zero_alloc(struct run *r, size_t *acc, size_t bytes, const char *what)
{
    void *p;

    if (bytes == 0)
        return NULL;
    p = model_ops(r->m)->alloc(bytes, what);
    if (p == NULL)
        fatal("%s", model_ops(r->m)->error());
    *acc += bytes;
    return p;
}

/* Stages 2 and 3: this rank's buffers (run.h), bound to the model's
 * parts where they are whole.  The parameters' buffers the model reads
 * (the embeddings' and heads', the layer buffers) hold the compute copy,
 * in the backend's dtype; the rest is fp32. */
static void
setup_sharded(struct run *r)
{
    const struct ops *op = model_ops(r->m);
    size_t n = r->opt.hi - r->opt.lo, most = 0, lo, hi;
    size_t es = ops_dtype_size(op->dtype), f = sizeof(float);
    static const int ends[2] = { PARAM_POST, PARAM_PRE };
    int first, end;

    model_stage_layers(r->m, &first, &end);
    for (int l = first; l < end; l++) {
        model_layer_range(r->m, l, &lo, &hi);
        most = hi - lo > most ? hi - lo : most;
    }
    r->gacc = zero_alloc(r, &r->gmem.range, n * f, "gradients (sharded)");
    if (r->stage3) {
        r->pshard =
            zero_alloc(r, &r->pmem.range, n * f, "parameters (sharded)");
        r->pcshard = op->dtype == OPS_F32
                         ? (void *)r->pshard
                         : zero_alloc(r, &r->pmem.range, n * es,
                                      "the parameters' compute copy (sharded)");
    }
    for (int e = 0; e < 2; e++) {
        model_part_range(r->m, ends[e], &lo, &hi);
        r->ends_g[e] = zero_alloc(r, &r->gmem.ends, (hi - lo) * f,
                                  "gradients (embeddings and heads)");
        model_bind_grads(r->m, ends[e], r->ends_g[e]);
        if (!r->stage3)
            continue;
        r->ends_p[e] = zero_alloc(r, &r->pmem.ends, (hi - lo) * es,
                                  "parameters (embeddings and heads)");
        model_bind_params(r->m, ends[e], r->ends_p[e]);
    }
    for (int i = 0; i < 2; i++) {
        r->bucket[i] = zero_alloc(r, &r->gmem.layers, most * f,
                                  "gradients (layer buckets)");
        if (r->stage3)
            r->lbuf[i] = zero_alloc(r, &r->pmem.layers, most * es,
                                    "parameters (layer buffers)");
    }
    r->prefetched = -1;
    r->lbuf_layer[0] = r->lbuf_layer[1] = -1;
    model_set_param_hook(r->m, zero_part_hook, r);
}

void
zero_setup(struct run *r)
{
    const struct train_args *a = &r->a;
    const struct ops *op = model_ops(r->m);
    size_t n = model_table(r->m)->total;

    /* Sharding: rank k of the group owns [off[k], off[k+1]) of the flat
     * layout, cut anywhere (no tensor needs to divide) on a multiple of
     * OPS_ALIGN (ops.h's shard bounds; n is one). */
    r->shard_off = calloc((size_t)r->sh + 1, sizeof(*r->shard_off));
    r->clip_off = calloc((size_t)r->sh + 1, sizeof(*r->clip_off));
    if (r->shard_off == NULL || r->clip_off == NULL)
        fatal("out of memory");
    for (int k = 0; k <= r->sh; k++)
        r->shard_off[k] = (n / (size_t)r->sh * (size_t)k +
                           n % (size_t)r->sh * (size_t)k / (size_t)r->sh) /
                          OPS_ALIGN * OPS_ALIGN;
    if (optim_create_range(&r->opt, op, model_table(r->m),
                           r->shard_off[r->sh_rank],
                           r->shard_off[r->sh_rank + 1]) < 0)
        fatal("%s", op->error());
    r->overlap = a->overlap_grad_reduce && r->dp > 1 && r->sh == 1 &&
                 layers_contiguous(r);
    if (r->sh > 1 && a->sharding_stage >= 2) {
        if (!layers_contiguous(r))
            fatal("sharding stage 2 needs the layers' tensors in one run");
        r->stage2 = 1;
        r->stage3 = a->sharding_stage == 3;
        setup_sharded(r);
    }
}

void
zero_release(struct run *r)
{
    const struct ops *op = model_ops(r->m);
    void *bufs[] = { r->gacc,      r->pshard,    r->ends_g[0], r->ends_g[1],
                     r->ends_p[0], r->ends_p[1], r->bucket[0], r->bucket[1],
                     r->lbuf[0],   r->lbuf[1] };

    if (r->pcshard != r->pshard) /* (16 bits: a buffer of its own) */
        op->release(r->pcshard);
    for (size_t i = 0; i < sizeof(bufs) / sizeof(*bufs); i++)
        op->release(bufs[i]);
    free(r->shard_off);
    free(r->clip_off);
    r->shard_off = r->clip_off = NULL;
}

float *
zero_range_grads(struct run *r)
{
    return r->stage2 ? r->gacc : model_grads(r->m) + r->opt.lo;
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
    float *g = model_grads(r->m), *own = zero_range_grads(r);
    size_t n = r->opt.hi - r->opt.lo;

    if (r->replicas == 1)
        return;
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
    /* (Stage 2: the sharding sums are in the range already.) */
    if (!r->stage2 && r->sh > 1 &&
        r->comm->reduce_scatter_ranges(r->comm, g, r->shard_off, COMM_F32,
                                       COMM_SHARDING) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    if (r->dp > 1 &&
        r->comm->all_reduce_sum(r->comm, own, n, COMM_F32, COMM_DP) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    model_ops(r->m)->scale_f32(own, n, 1.0f / (float)r->replicas);
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

size_t *
zero_clip(struct run *r, size_t a, size_t b)
{
    for (int k = 0; k <= r->sh; k++) {
        size_t o = r->shard_off[k];

        r->clip_off[k] = (o < a ? a : o > b ? b : o) - a;
    }
    return r->clip_off;
}

/* Stage 2: the gradients g of [a, b) (a bucket, or the embeddings' or
 * heads' buffer: element a first) reduced to the sharding ranks owning
 * their pieces, in one reduce-scatter of the ranges clipped to [a, b);
 * this rank adds its piece to its range, and g is left undefined. */
static void
reduce_to_owners(struct run *r, float *g, size_t a, size_t b)
{
    size_t *clip, lo = r->opt.lo;
    int me = r->sh_rank;

    if (b <= a)
        return;
    clip = zero_clip(r, a, b);
    if (r->comm->reduce_scatter_ranges(r->comm, g, clip, COMM_F32,
                                       COMM_SHARDING) < 0)
        fatal("%s", r->comm->error);
    if (clip[me + 1] > clip[me])
        model_ops(r->m)->accumulate_f32(r->gacc + (a + clip[me] - lo),
                                        g + clip[me], clip[me + 1] - clip[me]);
}

void
zero_shard_region(struct run *r, size_t a, size_t b)
{
    float *g;

    if (b <= a)
        return;
    g = model_grad_at(r->m, a);
    reduce_to_owners(r, g, a, b);
    model_ops(r->m)->zero(g, (b - a) * sizeof(float));
}

/* Stage 2: layer l's backward is done: its bucket goes to the owners and
 * is free again. */
void
zero_stage2_layer_ready(void *ctx, int l)
{
    struct run *r = ctx;
    size_t lo, hi;

    model_layer_range(r->m, l, &lo, &hi);
    reduce_to_owners(r, model_grad_at(r->m, lo), lo, hi);
    model_bind_grads(r->m, l, NULL);
}

void
zero_grad_bucket(struct run *r, int l)
{
    size_t lo, hi;
    float *b = r->bucket[r->bucket_next];

    r->bucket_next ^= 1;
    model_layer_range(r->m, l, &lo, &hi);
    model_ops(r->m)->zero(b, (hi - lo) * sizeof(float));
    model_bind_grads(r->m, l, b);
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
    static const int ends[2] = { PARAM_PRE, PARAM_POST };
    size_t hole_lo = skip_tied ? r->tied_off : 0;
    size_t hole_hi = skip_tied ? r->tied_off + r->tied_n : 0;

    for (int i = 0; i < 2; i++) {
        size_t a, b;

        model_part_range(r->m, ends[i], &a, &b);
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
    if (r->stage2) /* every bucket and end was zeroed after its reduction */
        model_ops(r->m)->zero(r->gacc, (r->opt.hi - r->opt.lo) * sizeof(float));
    else
        model_zero_grad(r->m);
}
