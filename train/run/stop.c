/* SPDX-License-Identifier: MIT */
/*
 * stop.c: how a run stops early.  SIGTERM and SIGUSR1 (cli/interrupt.h)
 * stop every rank at the same step boundary, model_last holding that step;
 * the tests' faults (TRAIN_TEST_*: a kill, a signal or a hung rank after a
 * given step) are read here.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/interrupt.h"
#include "comm.h"
#include "run.h"

void
read_test_hooks(struct run *r)
{
    if (getenv("TRAIN_TEST_KILL_AT_STEP"))
        r->kill_at = strtoll(getenv("TRAIN_TEST_KILL_AT_STEP"), NULL, 10);
    if (getenv("TRAIN_TEST_STALL_AT_STEP"))
        r->stall_at = strtoll(getenv("TRAIN_TEST_STALL_AT_STEP"), NULL, 10);
    if (getenv("TRAIN_TEST_SIGNAL_AT_STEP")) {
        const char *sn = getenv("TRAIN_TEST_SIGNAL");

        r->signal_at = strtoll(getenv("TRAIN_TEST_SIGNAL_AT_STEP"), NULL, 10);
        r->test_signal = sn && !strcmp(sn, "USR1")  ? SIGUSR1
                         : sn && !strcmp(sn, "INT") ? SIGINT
                                                    : SIGTERM;
    }
    r->test_rank =
        getenv("TRAIN_TEST_RANK") ? atoi(getenv("TRAIN_TEST_RANK")) : -1;
}

int
test_hook_due(const struct run *r, int64_t at, int64_t step)
{
    return at == step && (r->test_rank < 0 || r->test_rank == g_rank);
}

/* The signal (SIGTERM or SIGUSR1) on which every rank stops at this step
 * boundary, or 0: received by any rank, it is the job's decision (the
 * ranks must stop at the same step, or the next collective would hang). */
int
stop_signal(struct run *r)
{
    double sig = interrupt_pending();

    if (g_world > 1 &&
        r->comm->all_reduce_max(r->comm, &sig, 1, COMM_F64, COMM_WORLD) < 0)
        fatal("global step %lld: %s", (long long)r->st.global_step,
              r->comm->error);
    return (int)sig;
}

/* Stop on signal sig: model_last holds this step (saved now unless it
 * does already), as Megatron-LM's --exit-signal-handler does. */
int
stop_run(struct run *r, int sig)
{
    const char *name = sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM";

    if (r->st.global_step == 0) {
        log_info("%s received: stopping before the first step", name);
        return sig;
    }
    if (r->st.global_step > r->saved_last)
        save(r, "model_last", 1);
    log_info("%s received: stopping after global step %lld, which %s/"
             "model_last holds; the same command resumes the run",
             name, (long long)r->st.global_step, r->a.output_dir);
    return sig;
}
