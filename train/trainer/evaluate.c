/* SPDX-License-Identifier: MIT */
/*
 * evaluate.c: the losses of the valid split every eval_freq steps and of
 * the test split at the end, on every rank as in training (a pipeline
 * passes activations on, with no backward), averaged over the replicas.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "data/datasets.h"
#include "step/step.h"
#include "trainer.h"

/* Seconds between the progress lines of an evaluation. */
#define EVAL_PROGRESS_SECONDS 10.0

/* Evaluate `iters` micro-batches of a split on each rank, continuing its
 * loader (each data-parallel rank reads its slice, as in training); the
 * losses are averaged over every rank's micro-batches.  announce: say
 * what is evaluated before starting (the long test evaluation); a line
 * every EVAL_PROGRESS_SECONDS tells how far it is.  With out, the
 * accuracies too (model_hits(): a wait for the backend per micro-batch),
 * and what was measured into *out. */
void
evaluate(struct run *r, struct loader *l, const char *name, int iters,
         int announce, struct eval_result *out)
{
    struct losses sum;
    struct forward_opts fo = { 0, 0, 0.0f, NULL };
    struct loss_sums ls;
    struct batch b;
    char err[1024], eta[32];
    double t0 = now(), t_said = t0, sums[8], dt;
    int64_t bad, hits[4] = { 0, 0, 0, 0 };
    double bad_loss;
    int n = 0;

    if (announce)
        log_info("%s step %lld: evaluating the %s split, %d micro-batches of "
                 "%d sequences",
                 name, (long long)r->st.global_step, name, iters * r->replicas,
                 r->a.micro_batch_size);
    model_use_slot(r->m, 0);
    loss_sums_init(r, &ls, iters < 4096 ? (size_t)iters : 4096);
    for (int i = 0; i < iters; i++) {
        struct comm *c = r->comm;

        if (i > 0 && now() - t_said >= EVAL_PROGRESS_SECONDS) {
            t_said = now();
            fmt_duration(eta, sizeof(eta), (t_said - t0) / i * (iters - i));
            log_info("%s step %lld: %d of %d micro-batches, %.0f s, eta: %s",
                     name, (long long)r->st.global_step, i * r->replicas,
                     iters * r->replicas, t_said - t0, eta);
        }
        if (loader_next(l, &b))
            break;
        /* Pipeline: each stage passes its output on (no backward). */
        if (r->pp_rank > 0)
            p2p(r,
                c->recv(c, model_stage_input(r->m), stage_bytes(r, &b),
                        r->pp_rank - 1, COMM_PP),
                r->st.global_step);
        test_dump_batch(r, name, i, &b);
        if (model_forward(r->m, &b, &fo, loss_sums_next(r, &ls, &b), err,
                          sizeof(err)) < 0)
            fatal("%s step %d: %s", name, i, err);
        if (out != NULL && model_hits(r->m, &b, hits, err, sizeof(err)) < 0)
            fatal("%s step %d: %s", name, i, err);
        if (r->pp_rank < r->pp - 1)
            p2p(r,
                c->send(c, model_stage_output(r->m), stage_bytes(r, &b),
                        r->pp_rank + 1, COMM_PP),
                r->st.global_step);
        n++;
    }
    /* The evaluation's one wait for the backend. */
    if (r->ops->sync() < 0)
        fatal("%s step %lld: %s", name, (long long)r->st.global_step,
              r->ops->error());
    loss_sums_read(r, &ls, &sum, &bad, &bad_loss);
    loss_sums_release(r, &ls);
    if (bad >= 0)
        fatal("the %s loss is %s at global step %lld (micro-batch %lld of "
              "the evaluation); stopping (lower --max_lr, set --grad_clip, "
              "or check the data)",
              name, isinf(bad_loss) ? "inf" : "nan",
              (long long)r->st.global_step, (long long)bad + 1);
    sums[0] = sum.loss, sums[1] = sum.lm_loss, sums[2] = sum.sop_loss;
    sums[3] = r->pp_rank == r->pp - 1 ? n : 0; /* the last stage counts */
    for (int k = 0; k < 4; k++) /* (model_hits() adds nothing elsewhere) */
        sums[4 + k] = (double)hits[k];
    replicas_sum(r, sums, 8, r->st.global_step);
    sum.loss = sums[0], sum.lm_loss = sums[1], sum.sop_loss = sums[2];
    n = (int)sums[3];
    if (out != NULL) {
        memset(out, 0, sizeof(*out));
        out->n = n;
        out->samples = (int64_t)n * r->a.micro_batch_size;
        for (int k = 0; k < 4; k++)
            out->hits[k] = (int64_t)sums[4 + k];
        if (n > 0) {
            out->mean.loss = sum.loss / n;
            out->mean.lm_loss = sum.lm_loss / n;
            out->mean.sop_loss = sum.sop_loss / n;
        }
    }
    if (n == 0) {
        log_info("%s step %lld: no %s data", name, (long long)r->st.global_step,
                 name);
        return;
    }
    /* batch: the micro-batches of every rank. */
    dt = now() - t0;
    if (out != NULL)
        out->seconds = dt;
    log_info("%s step %lld, batch: %d, loss: %.6f, lm_loss: %.6f, sop_loss: "
             "%.6f, ips: %.0f seqs/s, time: %.1f s",
             name, (long long)r->st.global_step, n, sum.loss / n,
             sum.lm_loss / n, sum.sop_loss / n, n * r->a.micro_batch_size / dt,
             dt);
    if (r->events) {
        struct losses mean = { sum.loss / n, sum.lm_loss / n,
                               sum.sop_loss / n };

        report_eval(r, name, &mean);
    }
    if (r->jsonl) {
        fprintf(r->jsonl,
                "{\"%s_step\": %lld, \"loss\": %.9g, \"lm_loss\": %.9g, "
                "\"sop_loss\": %.9g}\n",
                name, (long long)r->st.global_step, sum.loss / n,
                sum.lm_loss / n, sum.sop_loss / n);
        fflush(r->jsonl);
    }
}

void
evaluate_test(struct run *r)
{
    struct loader *test = open_loader(r, DS_SPLIT_TEST);

    evaluate(r, test, "test", 10 * r->a.eval_iters * r->accumulate, 1, NULL);
    loader_free(test);
}
