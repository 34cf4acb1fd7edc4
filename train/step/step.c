/* SPDX-License-Identifier: MIT */
/*
 * step.c: one training step: the gradients cleared, the micro-steps
 * (micro.c, pipeline.c), the replicas' gradients reduced (zero/), their
 * global sum of squares over every rank's part (in backend memory, the
 * collectives on it too), the clipping factor and float16's loss scale
 * (step_prepare), the AdamW update, and the parameters the update leaves
 * to the other ranks brought back.  Nothing waits for the backend:
 * step_read() does, once per logging interval, and stops the run there
 * if a loss or the norm was not finite, naming the step.
 */
#include <math.h>
#include <unistd.h>

#include "comm.h"
#include "step.h"
#include "zero/zero.h"

/* The micro-steps: one after the other, or the pipeline's 1F1B; then the
 * tied embeddings' gradients summed over the first and last stages. */
static void
micro_steps(struct run *r, int64_t step)
{
    if (r->pp > 1)
        micro_steps_1f1b(r, step);
    else
        micro_steps_plain(r, step);
    sync_tied(r, step);
    if (r->stage2 && r->pp > 1) /* the tied pair, kept until now */
        zero_shard_region(r, r->tied_off, r->tied_off + r->tied_n);
}

/* The gradients' global sum of squares into the optimizer's step: each
 * sharding rank has its range, the tensor-parallel ranks each a part of
 * the split tensors (the replicated ones counted on rank 0), each
 * pipeline stage its own tensors (a tied copy not counted). */
static void
grad_sumsq(struct run *r, int64_t step)
{
    double *ss = &r->opt.st->sumsq;

    r->ops->zero(ss, sizeof(*ss));
    optim_grad_sumsq(&r->opt, zero_range_grads(r), ss);
    if ((r->sh > 1 && r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64,
                                              COMM_SHARDING) < 0) ||
        (r->tp > 1 &&
         r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64, COMM_TP) < 0) ||
        (r->pp > 1 &&
         r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64, COMM_PP) < 0))
        fatal("global step %lld: %s", (long long)step, r->comm->error);
}

void
train_step(struct run *r, int64_t step, double lr, double *comm_sent)
{
    zero_clear_grads(r);
    *comm_sent = comm_sent_total(r->comm); /* (overlapped: from here) */
    micro_steps(r, step);
    if (test_hook_due(r, r->stall_at, step))
        for (;;)
            pause(); /* a hung rank, for the watchdog tests */
    zero_reduce_grads(r, step);
    grad_sumsq(r, step);
    optim_prepare(&r->opt, &r->adam, r->loss_scale ? &r->scaling : NULL);
    /* A norm that is not finite skips the step; but for float16's loss
     * scaling, which is made for that, it stops the run (step_read()). */
    if (r->loss_scale == NULL)
        r->ops->loss_check(r->norm_check, &r->opt.st->sumsq, step);
    optim_apply(&r->opt, zero_range_params(r), zero_range_compute_params(r),
                zero_range_grads(r), lr, &r->adam);
    zero_after_update(r, step);
    /* What the step sent for the gradients and the update, per rank
     * (ring-algorithm bytes: docs/parallel.md's formulas). */
    *comm_sent = comm_sent_total(r->comm) - *comm_sent;
}

void
step_read(struct run *r, int64_t step)
{
    struct ops_step nc;
    const char *notice;

    if (r->ops->sync() < 0)
        fatal("global step %lld: %s", (long long)step, r->ops->error());
    /* The fallbacks the backend took since the last read, each said once. */
    while ((notice = r->ops->notice()) != NULL)
        log_info("%s", notice);
    if (optim_state_get(&r->opt, &r->last) < 0 ||
        r->ops->download(&nc, r->norm_check, sizeof(nc)) < 0)
        fatal("global step %lld: %s", (long long)step, r->ops->error());
    if (r->last.bad_step >= 0) {
        struct losses L;
        double v = NAN;

        /* (Its value: among the losses not read yet, the run ends.) */
        loss_sums_read(r, &r->train_losses, &L, NULL, &v);
        fatal("the training loss is %s at global step %lld; stopping "
              "(lower --max_lr, set --grad_clip, or check the data)",
              isinf(v) ? "inf" : "nan", (long long)r->last.bad_step);
    }
    if (nc.bad_step >= 0)
        fatal("the gradient norm is not finite at global step %lld; "
              "stopping (lower --max_lr, set --grad_clip, or check the data)",
              (long long)nc.bad_step);
}
