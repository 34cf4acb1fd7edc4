/* SPDX-License-Identifier: MIT */
/*
 * step.c: one training step: the gradients cleared, the micro-steps
 * (micro.c, pipeline.c), the replicas' gradients reduced (zero/), their
 * global norm over every rank's part, the AdamW update with clipping, and
 * the parameters the update leaves to the other ranks brought back.
 */
#include <math.h>
#include <unistd.h>

#include "comm.h"
#include "step.h"
#include "zero/zero.h"

/* The micro-steps: one after the other, or the pipeline's 1F1B; then the
 * tied embeddings' gradients summed over the first and last stages. */
static void
micro_steps(struct run *r, int64_t step, struct losses *acc)
{
    if (r->pp > 1)
        micro_steps_1f1b(r, step, acc);
    else
        micro_steps_plain(r, step, acc);
    sync_tied(r, step);
    if (r->stage2 && r->pp > 1) /* the tied pair, kept until now */
        zero_shard_region(r, r->tied_off, r->tied_off + r->tied_n);
}

/* The global norm: each sharding rank has its range; the tensor-parallel
 * ranks each a part of the split tensors and the same replicated ones
 * (counted once). */
static double
grad_norm(struct run *r, int64_t step)
{
    double ss[2];
    int n = r->tp > 1 ? 2 : 1; /* [split, replicated] or [all] */

    optim_grad_sumsq_split(&r->opt, zero_range_grads(r), &ss[0], &ss[1]);
    if (n == 1)
        ss[0] += ss[1], ss[1] = 0;
    if ((r->sh > 1 && r->comm->all_reduce_sum(r->comm, ss, (size_t)n, COMM_F64,
                                              COMM_SHARDING) < 0) ||
        (r->tp > 1 &&
         r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64, COMM_TP) < 0))
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    ss[0] += ss[1]; /* each stage its own tensors (copies not) */
    if (r->pp > 1 &&
        r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64, COMM_PP) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    return sqrt(ss[0]);
}

double
train_step(struct run *r, int64_t step, double lr, struct losses *acc,
           double *comm_sent)
{
    double norm;

    zero_clear_grads(r);
    *comm_sent = comm_sent_total(r->comm); /* (overlapped: from here) */
    micro_steps(r, step, acc);
    if (test_hook_due(r, r->stall_at, step))
        for (;;)
            pause(); /* a hung rank, for the watchdog tests */
    zero_reduce_grads(r, step);
    norm = grad_norm(r, step);
    if (optim_apply(&r->opt, zero_range_params(r), zero_range_grads(r), lr,
                    &r->adam, norm) < 0)
        fatal("global step %lld: the gradient norm is %f; stopping",
              (long long)step, norm);
    zero_after_update(r, step);
    /* What the step sent for the gradients and the update, per rank
     * (ring-algorithm bytes: docs/parallel.md's formulas). */
    *comm_sent = comm_sent_total(r->comm) - *comm_sent;
    return norm;
}
