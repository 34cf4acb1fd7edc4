/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c: pipeline parallelism: the 1F1B schedule of a step's
 * micro-batches over the stages, the activations and their gradients
 * passed between neighbours, and the tied word embeddings' gradients
 * summed over the first and last stages.
 */
#include "comm.h"
#include "step.h"

/* The bytes of activations a micro-batch passes between stages. */
size_t
stage_bytes(const struct run *r, const struct batch *b)
{
    return (size_t)b->B * (size_t)b->T * (size_t)r->cfg.hidden_size *
           ops_dtype_size(r->ops->dtype);
}

void
p2p(struct run *r, int rc, int64_t step)
{
    if (rc < 0)
        fatal("global step %lld: pipeline: %s", (long long)step,
              r->comm->error);
}

/* The tied word embeddings' gradients summed over the first and last
 * stages (both then step the same values). */
void
sync_tied(struct run *r, int64_t step)
{
    if (r->pp > 1 && (r->pp_rank == 0 || r->pp_rank == r->pp - 1) &&
        r->comm->all_reduce_sum(r->comm, model_grad_at(r->m, r->tied_off),
                                r->tied_n, COMM_F32, COMM_EMBEDDING) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
}

/* Micro-step k's batch, and on a stage after the first its input from the
 * stage before. */
static void
load_input(struct run *r, int64_t step, int k, struct batch *b)
{
    struct comm *c = r->comm;

    load_micro(r, step, k, b);
    if (r->pp_rank > 0)
        p2p(r,
            c->recv(c, model_stage_input(r->m), stage_bytes(r, b),
                    r->pp_rank - 1, COMM_PP),
            step);
}

/* Pipeline stages, 1F1B (Megatron's schedule without interleaving): stage
 * s of p runs warm = min(p - s - 1, m) forwards, then alternates one
 * forward and one backward, then the remaining backwards.  Activations go
 * to the next stage, gradients back to the previous; where a stage sends
 * one way while its neighbour sends the other, both go in one sendrecv. */
void
micro_steps_1f1b(struct run *r, int64_t step)
{
    struct comm *c = r->comm;
    int s = r->pp_rank, p = r->pp, m = r->accumulate;
    int first = s == 0, last = s == p - 1;
    int warm = p - s - 1 < m ? p - s - 1 : m, steady = m - warm;
    int fk = 0, bk = 0;
    struct batch b;

    for (int i = 0; i < warm; i++, fk++) {
        load_input(r, step, fk, &b);
        forward_micro(r, step, fk, &b);
        p2p(r,
            c->send(c, model_stage_output(r->m), stage_bytes(r, &b), s + 1,
                    COMM_PP),
            step);
    }
    if (steady > 0)
        load_input(r, step, fk, &b);
    for (int i = 0; i < steady; i++, fk++, bk++) {
        size_t n = stage_bytes(r, &b);

        forward_micro(r, step, fk, &b);
        if (!last) { /* this output on, the gradient of micro bk back */
            const void *out = model_stage_output(r->m);

            model_use_slot(r->m, bk % r->slots);
            p2p(r,
                c->sendrecv(c, out, n, model_stage_doutput(r->m), n, s + 1,
                            COMM_PP),
                step);
        }
        backward_micro(r, bk);
        if (i == steady - 1) {
            if (!first)
                p2p(r, c->send(c, model_stage_dinput(r->m), n, s - 1, COMM_PP),
                    step);
            continue;
        }
        {
            const void *din = model_stage_dinput(r->m);

            load_micro(r, step, fk + 1, &b);
            if (!first) /* the gradient back, micro fk + 1's input in */
                p2p(r,
                    c->sendrecv(c, din, n, model_stage_input(r->m),
                                stage_bytes(r, &b), s - 1, COMM_PP),
                    step);
        }
    }
    for (int i = 0; i < warm; i++, bk++) {
        size_t n = stage_bytes(r, &b);

        model_use_slot(r->m, bk % r->slots);
        p2p(r, c->recv(c, model_stage_doutput(r->m), n, s + 1, COMM_PP), step);
        backward_micro(r, bk);
        if (!first)
            p2p(r, c->send(c, model_stage_dinput(r->m), n, s - 1, COMM_PP),
                step);
    }
}
