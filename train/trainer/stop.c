/* SPDX-License-Identifier: MIT */
/*
 * stop.c: how a run stops early: SIGTERM and SIGUSR1 (cli/interrupt.h)
 * stop every rank at the same step boundary, model_last holding that step.
 */
#include <signal.h>

#include "cli/interrupt.h"
#include "comm.h"
#include "trainer.h"

/* The signal (SIGTERM or SIGUSR1) on which every rank stops at this step
 * boundary, or 0: received by any rank, it is the job's decision (the
 * ranks must stop at the same step, or the next collective would hang). */
int
stop_signal(struct run *r)
{
    double sig = interrupt_pending();

    if (g_world == 1)
        return (int)sig;
    /* Through the backend's scalars buffer, where the collectives'
     * buffers live (GPU memory under NCCL). */
    r->ops->upload(r->scalars, &sig, sizeof(sig));
    if (r->comm->all_reduce_max(r->comm, r->scalars, 1, COMM_F64, COMM_WORLD) <
        0)
        fatal("global step %lld: %s", (long long)r->st.global_step,
              r->comm->error);
    if (r->ops->download(&sig, r->scalars, sizeof(sig)) < 0)
        fatal("global step %lld: %s", (long long)r->st.global_step,
              r->ops->error());
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
