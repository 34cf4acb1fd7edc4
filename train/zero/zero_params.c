/* SPDX-License-Identifier: MIT */
/*
 * zero_params.c: sharding's parameters.  After the update each rank holds
 * only its range fresh, so the others are gathered (stages 1 and 2: into
 * the flat fp32 master weights every rank holds, whose compute copy is
 * then refreshed).  At stage 3 a rank holds the master weights of its
 * range only and their compute copy (what AdamW updates, both at once),
 * the compute copy of the embeddings and heads whole (gathered after each
 * update: the first and last steps of every pass use them), and two layer
 * buffers of it: before a layer's forward and its backward its compute
 * copy is gathered into one (in the compute dtype: half the bytes of
 * fp32 in bfloat16 and float16), while the gather of the next layer of
 * the pass fills the other (the prefetch), and the buffer is free again
 * once the layer is done.  Also: where each of a rank's buffers keeps
 * which elements (checkpoints read and write through it).
 */
#include "ckpt/checkpoint.h"
#include "comm.h"
#include "zero.h"

float *
zero_range_params(struct run *r)
{
    return r->stage3 ? r->pshard : model_params(r->m) + r->opt.lo;
}

void *
zero_range_compute_params(struct run *r)
{
    size_t es = ops_dtype_size(model_ops(r->m)->dtype);

    return r->stage3 ? r->pcshard
                     : (char *)model_compute_params(r->m) + r->opt.lo * es;
}

float *
zero_buffer(struct run *r, int b, size_t *lo, size_t *hi)
{
    *lo = r->opt.lo;
    *hi = r->opt.hi;
    if (b == CKPT_EXP_AVG)
        return r->opt.m;
    if (b == CKPT_EXP_AVG_SQ)
        return r->opt.v;
    if (r->stage3)
        return r->pshard;
    *lo = 0;
    *hi = model_table(r->m)->total;
    return model_params(r->m);
}

/* Stage 3: the compute copy of parameters [a, b) gathered into buf
 * (element a first, the backend's dtype) from the ranks owning their
 * pieces, this rank's copied in from its range first; start: only started
 * (complete once the comm's wait_all() returns). */
static void
gather_params(struct run *r, void *buf, size_t a, size_t b, int start)
{
    const struct ops *op = model_ops(r->m);
    size_t *clip, lo = r->opt.lo, es = ops_dtype_size(op->dtype);
    enum comm_dtype t = op->dtype == OPS_F32 ? COMM_F32 : COMM_B16;
    int me = r->sh_rank;

    if (b <= a)
        return;
    clip = zero_clip(r, a, b);
    if (clip[me + 1] > clip[me])
        op->copy((char *)buf + clip[me] * es,
                 (char *)r->pcshard + (a + clip[me] - lo) * es,
                 (clip[me + 1] - clip[me]) * es);
    if ((start ? r->comm->all_gather_ranges_start : r->comm->all_gather_ranges)(
            r->comm, buf, clip, t, COMM_SHARDING) < 0)
        fatal("gathering parameters: %s", r->comm->error);
}

/* The layer buffer holding (or receiving) layer l, or -1; l -1: a free
 * one. */
static int
slot_of(const struct run *r, int l)
{
    return r->lbuf_layer[0] == l ? 0 : r->lbuf_layer[1] == l ? 1 : -1;
}

/* Stage 3: layer l's compute copy in a layer buffer and bound; the gather
 * of the next layer of the pass (forward: l + 1, backward: l - 1) started
 * into the other.  The first layer of a pass waits for its own. */
static void
use_layer(struct run *r, int l, int need)
{
    size_t a, b;
    int first, end, next, s;

    if (r->prefetched >= 0) {
        if (r->comm->wait_all(r->comm) < 0)
            fatal("gathering parameters: %s", r->comm->error);
        if (r->prefetched != l) /* (a pass cut short: not used) */
            r->lbuf_layer[slot_of(r, r->prefetched)] = -1;
        r->prefetched = -1;
    }
    model_layer_range(r->m, l, &a, &b);
    s = slot_of(r, l);
    if (s < 0) {
        s = slot_of(r, -1);
        if (s < 0)
            fatal("sharding stage 3: no layer buffer free for layer %d", l);
        gather_params(r, r->lbuf[s], a, b, 0);
        r->lbuf_layer[s] = l;
    }
    model_bind_params(r->m, l, r->lbuf[s]);
    model_stage_layers(r->m, &first, &end);
    next = need == MODEL_PARAMS_FORWARD ? l + 1 : l - 1;
    if (next >= first && next < end && slot_of(r, next) < 0 &&
        (s = slot_of(r, -1)) >= 0) {
        model_layer_range(r->m, next, &a, &b);
        gather_params(r, r->lbuf[s], a, b, 1);
        r->lbuf_layer[s] = next;
        r->prefetched = next;
    }
}

void
zero_part_hook(void *ctx, int l, int need)
{
    struct run *r = ctx;

    if (need == MODEL_PARAMS_DONE) {
        int s = slot_of(r, l);

        if (r->stage3 && s >= 0) {
            r->lbuf_layer[s] = -1;
            model_bind_params(r->m, l, NULL);
        }
        return;
    }
    if (r->stage3)
        use_layer(r, l, need);
    if (need == MODEL_PARAMS_BACKWARD)
        zero_grad_bucket(r, l);
}

/* Stage 3: the embeddings and heads gathered whole from their owners. */
static void
gather_ends(struct run *r)
{
    static const int ends[2] = { PARAM_POST, PARAM_PRE };

    for (int e = 0; e < 2; e++) {
        size_t a, b;

        model_part_range(r->m, ends[e], &a, &b);
        gather_params(r, r->ends_p[e], a, b, 0);
    }
}

void
zero_params_ready(struct run *r)
{
    const struct ops *op = model_ops(r->m);

    if (!r->stage3) {
        model_params_changed(r->m, 0, model_table(r->m)->total);
        return;
    }
    if (r->pcshard != r->pshard)
        op->cast(r->pcshard, op->dtype, r->pshard, OPS_F32,
                 r->opt.hi - r->opt.lo);
    gather_ends(r);
}

void
zero_after_update(struct run *r, int64_t step)
{
    if (r->stage3) { /* the layers are gathered when needed */
        gather_ends(r);
    } else if (r->sh > 1) {
        if (r->comm->all_gather_ranges(r->comm, model_params(r->m),
                                       r->shard_off, COMM_F32,
                                       COMM_SHARDING) < 0)
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        /* The other ranks' ranges (this one's: by the update itself). */
        model_params_changed(r->m, 0, r->opt.lo);
        model_params_changed(r->m, r->opt.hi, model_table(r->m)->total);
    }
}
