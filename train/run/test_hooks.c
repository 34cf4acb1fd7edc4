/* SPDX-License-Identifier: MIT */
/*
 * test_hooks.c: the faults the tests inject through the environment
 * (TRAIN_TEST_*: a kill, a signal or a hung rank after a given step, on
 * every rank or one; a report of checkpoints' staging memory), read once
 * and checked where they fire.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

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
    r->report_staging = getenv("TRAIN_TEST_REPORT_STAGING") != NULL;
}

int
test_hook_due(const struct run *r, int64_t at, int64_t step)
{
    return at == step && (r->test_rank < 0 || r->test_rank == g_rank);
}
