/* SPDX-License-Identifier: MIT */
/*
 * train: pretrain ERNIE (MLM + SOP) or GPT on id files made by
 * create-pretraining-data, as PaddleNLP's run_pretrain.py does: the same
 * flags, data order, learning-rate schedule, log lines and checkpoint
 * cadence.  See train(1) and erniekit-checkpoint(5).
 *
 * This file is the program: the flags, the setup, the training loop.
 * Which file defines what, from the top layer down (train/README.md):
 *
 *   the program (its files stop the run on an error)
 *     trainer/setup.c     ranks, batch sizes, config, vocab, model, optimizer
 *     trainer/paths.c     input, output and cache paths; the output lock
 *     trainer/checkpointing.c  resume, --continue_training or init; saves
 *     trainer/tensors.c   the model's tensors whole, one at a time, for them
 *     trainer/evaluate.c  the valid and test splits
 *     trainer/eval_only.c a checkpoint evaluated without training
 *     trainer/report.c    start lines, the step line, train_log.jsonl, events
 *     trainer/stop.c      SIGTERM/SIGUSR1 at a step boundary
 *     step/step.c         one step: micro-steps, reduction, norm, AdamW;
 *                         the one read of the backend per logging interval
 *     step/micro.c        a micro-step's forward and backward
 *     step/pipeline.c     the 1F1B schedule, stage-to-stage transfers
 *     step/loss_sums.c    the losses in backend memory until read
 *     zero/zero_grads.c   data parallelism, sharding's ranges, stages 0-2
 *     zero/zero_params.c  sharding's parameters, stage 3's layer buffers
 *     data/datasets.c     vocabulary, sidecar check, corpus, loaders
 *     data/loader.c       micro-batches in PaddleNLP's collation
 *     run/run.h           struct run, shared by all of the above
 *     run/messages.c      log lines in PaddleNLP's format, fatal(), usage
 *     run/test_hooks.c    the tests' faults (TRAIN_TEST_*)
 *   libtrain (its functions return their errors)
 *     ckpt/               safetensors, weights, checkpoints, tokenizer
 *                         files
 *     cli/args.c          the flags, PaddleNLP's names, config files
 *     cli/interrupt.c     signal handlers
 *     optim/optim.c       learning-rate schedules, clipping, AdamW
 *     log/                event files, train_log.jsonl, FLOPs, the peak
 *     model/              config.json, the tensor table, ERNIE and GPT,
 *                         the micro-batches' way up (model_batch.c)
 *     ops.h, cpu/, cuda/  the compute interface; its CPU backend (the
 *                         reference, fp32 and emulated bf16/fp16); the CUDA
 *                         backend (cuda/README.md); ops_select.c chooses
 *     comm.h, comm/       the communication interface; one rank, MPI, NCCL
 *     util/tr_util.c      fail(), write_all(), mkdir -p, a parent's fsync
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/interrupt.h"
#include "data/datasets.h"
#include "step/step.h"
#include "trainer/trainer.h"

/* The run's steps; returns 0, or the signal that stopped it. */
static int
train_loop(struct run *r)
{
    const struct train_args *a = &r->a;
    struct losses acc;
    double t_log = now(), comm_sent = 0;
    int first_step = 1;
    int logged = 0;

    r->train->pos.consumed_samples = r->st.consumed_samples;
    /* The valid loader resumes where PaddleNLP's would (7.8): eval_iters
     * global batches per evaluation so far. */
    r->valid->pos.consumed_samples =
        (uint64_t)r->gbs * (uint64_t)((r->st.global_step + 1) / a->eval_freq) *
        (uint64_t)a->eval_iters;
    while (r->st.global_step < a->max_steps) {
        int64_t step = r->st.global_step + 1;
        double lr = lr_at(&r->lr, step);
        int sig = stop_signal(r);

        if (sig)
            return stop_run(r, sig);

        train_step(r, step, lr, &comm_sent);
        if (first_step) { /* (one rank sends nothing: no line) */
            if (g_world > 1)
                log_info("communication per step: %.3f MB sent per rank",
                         comm_sent / 1e6);
            first_step = 0;
        }
        r->st.global_step = step;
        r->st.consumed_samples = r->train->pos.consumed_samples;
        r->st.learning_rate = lr;
        if (test_hook_due(r, r->kill_at, step))
            raise(SIGKILL); /* tests: a crash right after this step */
        if (test_hook_due(r, r->signal_at, step))
            raise(r->test_signal); /* tests: a signal after this step */
        logged++;
        if (step % a->logging_freq == 0) {
            /* The one wait for the backend in the interval: its losses,
             * norm and checks. */
            step_read(r, step);
            loss_sums_read(r, &r->train_losses, &acc, NULL, NULL);
            report_step(r, step, lr, sqrt(r->last.sumsq), comm_sent, &acc,
                        logged, now() - t_log);
            logged = 0;
            r->flops = 0;
            t_log = now();
        }
        {
            /* Evaluation and saving do not count in the training speed. */
            double t_aside = now();

            if (step % a->eval_freq == 0 && a->eval_iters > 0 && a->do_eval)
                evaluate(r, r->valid, "valid", a->eval_iters * r->accumulate, 0,
                         NULL);
            if (step % a->checkpoint_steps == 0 || step == a->max_steps)
                save(r, "model_last", 1);
            if (step % a->save_steps == 0 || step == a->max_steps) {
                char name[64];

                snprintf(name, sizeof(name), "model_%lld", (long long)step);
                save(r, name, 0);
            }
            t_log += now() - t_aside;
        }
    }
    {
        int sig = stop_signal(r);

        if (sig)
            return stop_run(r, sig);
    }
    if (a->eval_iters > 0 && a->do_predict)
        evaluate_test(r);
    return 0;
}

int
main(int argc, char **argv)
{
    struct run r;
    int rc, stopped;
    char err[1024];

    memset(&r, 0, sizeof(r));
    rc = args_parse(&r.a, argc, argv, err, sizeof(err));
    if (rc != ARGS_OK) {
        /* Every rank reads the same arguments: rank 0 says what is
         * wrong, the others wait a moment for it (as usage_error()). */
        if (rc == ARGS_EMPTY)
            args_usage(stderr);
        else if (rc == ARGS_ERROR && launcher_rank() == 0)
            fprintf(stderr, "train: %s (see train --help)\n", err);
        else if (rc == ARGS_ERROR)
            sleep(2);
        args_release(&r.a);
        return rc == ARGS_HELP ? 0 : 2;
    }
    if (interrupt_install() < 0)
        fatal("cannot install the signal handlers: %s", strerror(errno));
    setup(&r);
    read_test_hooks(&r);
    r.args_json = args_to_json(&r.a);
    report_start(&r);
    open_data(&r);
    if (!r.a.do_train) { /* --do_eval alone: evaluate a checkpoint */
        evaluate_checkpoint(&r);
        run_release(&r);
        return 0;
    }
    load_or_init(&r);
    r.train = open_loader(&r, DS_SPLIT_TRAIN);
    r.valid = open_loader(&r, DS_SPLIT_VALID);
    open_records(&r);
    stopped = train_loop(&r);
    run_release(&r);
    /* Stopped by a signal: the status a shell gives a process it ended,
     * so that a script does not take the run for finished. */
    return stopped ? 128 + stopped : 0;
}
