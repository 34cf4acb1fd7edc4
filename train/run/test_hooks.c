/* SPDX-License-Identifier: MIT */
/*
 * test_hooks.c: the faults the tests inject through the environment
 * (TRAIN_TEST_*: a kill, a signal or a hung rank after a given step, on
 * every rank or one; a report of checkpoints' staging memory), read once
 * and checked where they fire; and the micro-batches an evaluation reads,
 * written out for the tests that run them through transformers and
 * PaddleNLP.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/safetensors.h"
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
    r->dump_batches = getenv("TRAIN_TEST_DUMP_BATCHES");
    if (r->dump_batches != NULL && g_world > 1)
        fatal("TRAIN_TEST_DUMP_BATCHES: one rank only");
}

int
test_hook_due(const struct run *r, int64_t at, int64_t step)
{
    return at == step && (r->test_rank < 0 || r->test_rank == g_rank);
}

/* An I32 tensor of b's, one or two dimensions. */
static struct st_tensor
i32(const char *name, const int32_t *data, int d0, int d1)
{
    struct st_tensor t;

    memset(&t, 0, sizeof(t));
    t.name = name;
    t.dtype = ST_I32;
    t.ndim = d1 > 0 ? 2 : 1;
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.data = data;
    t.nbytes = (size_t)d0 * (size_t)(d1 > 0 ? d1 : 1) * sizeof(int32_t);
    return t;
}

void
test_dump_batch(const struct run *r, const char *name, int i,
                const struct batch *b)
{
    struct st_tensor t[6];
    struct st_err e;
    char path[4096];
    size_t n = 0;

    if (r->dump_batches == NULL)
        return;
    snprintf(path, sizeof(path), "%s/%s-%d.safetensors", r->dump_batches, name,
             i);
    t[n++] = i32("input_ids", b->input_ids, b->B, b->T);
    if (r->cfg.type == MODEL_GPT) {
        t[n++] = i32("labels", b->labels, b->B, b->T);
    } else {
        t[n++] = i32("token_type_ids", b->token_type_ids, b->B, b->T);
        t[n++] = i32("attention_mask", b->attention_mask, b->B, b->T);
        t[n++] = i32("masked_positions", b->masked_positions, b->M, 0);
        t[n++] = i32("masked_labels", b->masked_labels, b->M, 0);
        t[n++] = i32("sop_labels", b->sop_labels, b->B, 0);
    }
    if (st_write(path, t, n, NULL, &e) < 0)
        fatal("TRAIN_TEST_DUMP_BATCHES: %s", e.msg);
}
