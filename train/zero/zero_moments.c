/* SPDX-License-Identifier: MIT */
/*
 * zero_moments.c: a sharded optimizer's moments in the checkpoints'
 * global coordinates: every rank's range gathered into a whole-table
 * optimizer for a save, and this rank's range taken from one on resume.
 */
#include "comm.h"
#include "zero.h"

/* Sharding: a whole-table optimizer holding every rank's moments, for
 * saving (the transient price: the full moments on every rank). */
void
zero_gather_moments(struct run *r, struct optimizer *full)
{
    const struct ops *op = model_ops(r->m);
    size_t lo = r->opt.lo, n = r->opt.hi - r->opt.lo;

    if (optim_create(full, op, model_table(r->m)) < 0)
        fatal("out of memory gathering the optimizer state");
    full->t = r->opt.t;
    op->copy(full->m + lo, r->opt.m, n * sizeof(float));
    op->copy(full->v + lo, r->opt.v, n * sizeof(float));
    if (r->comm->all_gather_ranges(r->comm, full->m, r->shard_off, COMM_F32,
                                   COMM_SHARDING) < 0 ||
        r->comm->all_gather_ranges(r->comm, full->v, r->shard_off, COMM_F32,
                                   COMM_SHARDING) < 0)
        fatal("gathering the optimizer state: %s", r->comm->error);
}

/* Sharding: keep this rank's range of a whole-table optimizer. */
void
zero_take_moments(struct run *r, const struct optimizer *full)
{
    const struct ops *op = model_ops(r->m);
    size_t lo = r->opt.lo, n = r->opt.hi - r->opt.lo;

    op->copy(r->opt.m, full->m + lo, n * sizeof(float));
    op->copy(r->opt.v, full->v + lo, n * sizeof(float));
    r->opt.t = full->t;
}
