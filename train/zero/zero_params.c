/* SPDX-License-Identifier: MIT */
/*
 * zero_params.c: sharding's parameters.  After the update each rank holds
 * only its range fresh, so the others are gathered (stages 1 and 2); at
 * stage 3 a rank keeps only its range of the layers between uses: a
 * layer's parameters are gathered before its forward and its backward,
 * the next layer's gather under way meanwhile, and dropped after.
 */
#include "comm.h"
#include "zero.h"

/* Stage 3: parameters [a, b) gathered from the ranks owning its pieces;
 * start: only started (complete after the comm's wait_all()). */
static void
gather_params_how(struct run *r, size_t a, size_t b, int start)
{
    for (int k = 0; k <= r->sh; k++) {
        size_t o = r->shard_off[k];

        r->clip_off[k] = (o < a ? a : o > b ? b : o) - a;
    }
    if (b > a &&
        (start ? r->comm->all_gather_ranges_start : r->comm->all_gather_ranges)(
            r->comm, model_params(r->m) + a, r->clip_off, COMM_F32,
            COMM_SHARDING) < 0)
        fatal("gathering parameters: %s", r->comm->error);
    if (!start) /* (a started gather: once it is waited for) */
        model_params_changed(r->m, a, b);
}

void
zero_gather_params(struct run *r, size_t a, size_t b)
{
    gather_params_how(r, a, b, 0);
}

/* Stage 3: drop parameters [a, b), but for this rank's range. */
static void
drop_params(struct run *r, size_t a, size_t b)
{
    const struct ops *op = model_ops(r->m);
    float *p = model_params(r->m);
    size_t lo = r->opt.lo, hi = r->opt.hi;
    size_t e1 = b < lo ? b : lo, s2 = a > hi ? a : hi;

    if (a < e1)
        op->zero(p + a, (e1 - a) * sizeof(float));
    if (s2 < b)
        op->zero(p + s2, (b - s2) * sizeof(float));
}

/* Stage 3's parameter hook: a layer's parameters gathered before use and
 * dropped after.  While a layer computes, the gather of the next one in
 * the pass (forward: l + 1, backward: l - 1) is already under way (the
 * prefetch); the first layer of a pass waits for its own. */
void
zero_stage3_params(void *ctx, int l, int need)
{
    struct run *r = ctx;
    size_t a, b;
    int first, end, next;

    model_layer_range(r->m, l, &a, &b);
    if (need == MODEL_PARAMS_DONE) {
        drop_params(r, a, b);
        return;
    }
    if (r->prefetched >= 0) {
        size_t pa, pb;

        if (r->comm->wait_all(r->comm) < 0)
            fatal("gathering parameters: %s", r->comm->error);
        model_layer_range(r->m, r->prefetched, &pa, &pb);
        model_params_changed(r->m, pa, pb);
    }
    if (r->prefetched != l) {
        if (r->prefetched >= 0) { /* (a pass cut short: not used) */
            size_t pa, pb;

            model_layer_range(r->m, r->prefetched, &pa, &pb);
            drop_params(r, pa, pb);
        }
        zero_gather_params(r, a, b);
    }
    r->prefetched = -1;
    model_stage_layers(r->m, &first, &end);
    next = need == MODEL_PARAMS_FORWARD ? l + 1 : l - 1;
    if (next >= first && next < end) {
        model_layer_range(r->m, next, &a, &b);
        gather_params_how(r, a, b, 1);
        r->prefetched = next;
    }
}

void
zero_stage3_start(struct run *r)
{
    r->prefetched = -1;
    for (int l = 0; l < r->cfg.num_layers; l++)
        zero_stage3_params(r, l, MODEL_PARAMS_DONE);
    model_set_param_hook(r->m, zero_stage3_params, r);
}

void
zero_after_update(struct run *r, int64_t step)
{
    if (r->stage3) { /* the layers are gathered when needed */
        zero_gather_params(r, 0, r->layers_lo);
        zero_gather_params(r, r->layers_hi, model_table(r->m)->total);
    } else if (r->sh > 1) {
        if (r->comm->all_gather_ranges(r->comm, model_params(r->m),
                                       r->shard_off, COMM_F32,
                                       COMM_SHARDING) < 0)
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        /* The other ranks' ranges (this one's: by the update itself). */
        model_params_changed(r->m, 0, r->opt.lo);
        model_params_changed(r->m, r->opt.hi, model_table(r->m)->total);
    }
    if (r->stage2) /* the range's gradients, for the next step */
        model_ops(r->m)->zero(model_grads(r->m) + r->opt.lo,
                              (r->opt.hi - r->opt.lo) * sizeof(float));
}
