/* SPDX-License-Identifier: MIT */
/*
 * checkpointing.c: the run's checkpoints: where a run starts (resumed
 * from output_dir/model_last, the weights of --continue_training, or a
 * fresh initialisation) and the saves of model_last and model_<step>.
 * Whatever the layout, the tensors move whole, one at a time, between the
 * files and the ranks that hold their parts (tensors.c): no rank ever
 * holds the whole model for it, in backend or host memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/safetensors.h"
#include "ckpt/weights.h"
#include "comm.h"
#include "step/step.h"
#include "trainer.h"
#include "util/tr_util.h"
#include "zero/zero.h"

/* TRAIN_TEST_REPORT_STAGING: what a checkpoint's save or load staged in
 * host memory at most (rank 0's), against its largest tensor. */
static void
report_staging(const struct run *r, const struct tensor_io *io,
               const char *what)
{
    size_t most = 0;

    if (!r->report_staging)
        return;
    for (size_t i = 0; i < io->whole.n; i++)
        most = io->whole.t[i].numel > most ? io->whole.t[i].numel : most;
    log_info("checkpoint staging (%s): %zu bytes of host memory at most; "
             "largest tensor %zu bytes, model %zu bytes",
             what, tr_stage_peak(), most * sizeof(float),
             io->whole.total * sizeof(float));
}

/* After a resume: the step's scalars in backend memory from the
 * checkpoint's: AdamW's step count, the steps skipped, and float16's loss
 * scale where the checkpoint has one (else --scale_loss's, as set up).
 * (The compute copy of the weights read: zero_params_ready().) */
static void
resumed_state(struct run *r)
{
    struct ops_step st;
    int64_t t = r->opt.t; /* the checkpoint's (optim_state_get() resets it) */

    if (optim_state_get(&r->opt, &st) < 0)
        fatal("%s", r->ops->error());
    st.t = (int32_t)t;
    st.n_skipped = (int32_t)r->st.skipped_steps;
    if (r->loss_scale != NULL && r->st.loss_scale > 0) {
        st.loss_scale = (float)r->st.loss_scale;
        st.good_steps = (int32_t)r->st.loss_scale_incr_count;
        st.bad_steps = (int32_t)r->st.loss_scale_decr_count;
    }
    optim_state_set(&r->opt, &st);
}

/* The weights of the safetensors file path (one of our checkpoints', or
 * transformers' save_pretrained's) into the master weights, one tensor at
 * a time to the ranks that hold its parts; flag names the argument in
 * errors.  (The compute copy: zero_params_ready().) */
static void
load_weights(struct run *r, const char *path, const char *flag)
{
    struct tensor_io io;
    struct st_file *f;
    struct st_err se;
    size_t unused = 0;

    tensors_open(&io, r, 0);
    if (st_open(&f, path, &se) < 0)
        fatal("%s: %s", flag, se.msg);
    if (weights_load(f, &io.whole, "", CKPT_WEIGHTS, io.ct.put, io.ct.ctx,
                     &unused, &se) < 0)
        fatal("%s: %s: %s", flag, path, se.msg);
    st_close(f);
    tensors_close(&io);
    log_info("weights from %s%s", path,
             unused ? " (some of its tensors are not in this model)" : "");
}

/* A checkpoint of ours (trainer_state.json and model.safetensors: the
 * moments are not needed) into the master weights, its state into
 * r->st. */
static void
load_checkpoint_weights(struct run *r, const char *dir, const char *flag)
{
    char err[1024];
    struct tensor_io io;

    tensors_open(&io, r, 0);
    if (ckpt_load_tensors(dir, &r->cfg, &io.ct, 0, &r->st, err, sizeof(err)) <
        0)
        fatal("%s: cannot evaluate %s: %s", flag, dir, err);
    tensors_close(&io);
}

/* Whether dir/name is a regular file. */
static int
has_file(const char *dir, const char *name)
{
    char *path = tr_file_in_dir(dir, name);
    int yes = path != NULL;

    free(path);
    return yes;
}

char *
load_for_eval(struct run *r)
{
    const struct train_args *a = &r->a;
    const char *mp = a->model_name_or_path;
    char *last, *dir = NULL;

    memset(&r->st, 0, sizeof(r->st));
    if (asprintf(&last, "%s/model_last", a->output_dir) < 0)
        fatal("out of memory");
    if (has_file(mp, "trainer_state.json") &&
        has_file(mp, "model.safetensors")) {
        dir = strdup(mp); /* a checkpoint of ours, named */
    } else if (ckpt_exists(last)) {
        dir = strdup(last); /* where training would resume */
    } else if (access(last, F_OK) == 0) {
        fatal("--do_eval: %s is not a complete checkpoint "
              "(trainer_state.json, model.safetensors and "
              "optimizer.safetensors); name the checkpoint to evaluate "
              "with --model_name_or_path",
              last);
    } else if (has_file(mp, "model.safetensors")) {
        char *path = file_in(mp, "model.safetensors");

        /* transformers' save_pretrained: weights, no step */
        load_weights(r, path, "--model_name_or_path");
        zero_params_ready(r);
        free(path);
        free(last);
        log_info("evaluating %s (no trainer_state.json: as at global step "
                 "0)",
                 mp);
        if ((dir = strdup(mp)) == NULL)
            fatal("out of memory");
        return dir;
    } else {
        fatal("--do_eval: no checkpoint to evaluate: --model_name_or_path "
              "'%s' holds no model.safetensors and '%s' does not exist; "
              "give a checkpoint directory (a model_<step>/ of train) as "
              "--model_name_or_path, or the --output_dir of the run",
              mp, last);
    }
    free(last);
    if (dir == NULL)
        fatal("out of memory");
    load_checkpoint_weights(r, dir, "--do_eval");
    zero_params_ready(r);
    log_info("evaluating %s at global step %lld (%llu samples consumed)", dir,
             (long long)r->st.global_step,
             (unsigned long long)r->st.consumed_samples);
    return dir;
}

void
load_or_init(struct run *r)
{
    char err[1024], *last;
    const struct train_args *a = &r->a;
    struct tensor_io io;

    memset(&r->st, 0, sizeof(r->st));
    r->st.seed = (uint64_t)a->seed;
    r->st.global_batch_size = r->gbs;
    r->st.micro_batch_size = a->micro_batch_size;
    if (asprintf(&last, "%s/model_last", a->output_dir) < 0)
        fatal("out of memory");
    if (ckpt_exists(last)) {
        /* Every rank reads the tensors and keeps what it holds of them. */
        tensors_open(&io, r, 0);
        if (ckpt_load_tensors(last, &r->cfg, &io.ct, 1, &r->st, err,
                              sizeof(err)) < 0)
            fatal("cannot resume from %s: %s", last, err);
        report_staging(r, &io, "load");
        tensors_close(&io);
        r->opt.t = r->st.optimizer_step;
        resumed_state(r);
        if (r->st.global_batch_size != r->gbs)
            fatal("%s was written with global_batch_size %lld; this run has "
                  "%d",
                  last, (long long)r->st.global_batch_size, r->gbs);
        r->saved_last = r->st.global_step;
        /* What this run's checkpoints will record. */
        r->st.seed = (uint64_t)a->seed;
        r->st.micro_batch_size = a->micro_batch_size;
        log_info("resuming from %s at global step %lld (%llu samples "
                 "consumed)",
                 last, (long long)r->st.global_step,
                 (unsigned long long)r->st.consumed_samples);
    } else if (access(last, F_OK) == 0) {
        /* Saves are atomic, so a partial model_last was damaged later. */
        fatal("%s is not a complete checkpoint (trainer_state.json, "
              "model.safetensors and optimizer.safetensors); move it away, "
              "or rename %s_bak to resume from the one before",
              last, last);
    } else if (a->continue_training) {
        /* Weights only: one of our checkpoints, or a directory saved by
         * transformers' save_pretrained (model.safetensors). */
        char *path = file_in(a->model_name_or_path, "model.safetensors");

        load_weights(r, path, "--continue_training");
        free(path);
    } else {
        tensors_init(r, (uint64_t)a->seed);
    }
    zero_params_ready(r);
    free(last);
}

void
save(struct run *r, const char *name, int keep_backup)
{
    char *dir = NULL, err[1024];
    struct tensor_io io;
    int writer = r->comm->rank == 0;

    /* Done with the steps so far (a NaN among them stops the run before it
     * is saved); AdamW's step count and the loss scaling for the
     * checkpoint. */
    step_read(r, r->st.global_step);
    r->st.optimizer_step = r->opt.t;
    r->st.skipped_steps = r->last.n_skipped;
    r->st.loss_scale = r->loss_scale != NULL ? r->last.loss_scale : 0;
    r->st.loss_scale_incr_count = r->last.good_steps;
    r->st.loss_scale_decr_count = r->last.bad_steps;
    /* Every rank takes part in gathering each tensor; rank 0 writes. */
    if (strcmp(name, "model_last") == 0)
        r->saved_last = r->st.global_step;
    if (writer && asprintf(&dir, "%s/%s", r->a.output_dir, name) < 0)
        fatal("out of memory");
    tensors_open(&io, r, 1);
    if (ckpt_save_tensors(dir ? dir : name, &r->cfg, &io.ct, r->opt.t, &r->st,
                          r->args_json, r->tok.files, r->tok.n_files,
                          keep_backup, writer, err, sizeof(err)) < 0)
        fatal("step %lld: cannot save %s: %s", (long long)r->st.global_step,
              dir ? dir : name, err);
    report_staging(r, &io, "save");
    tensors_close(&io);
    if (writer)
        log_info("saved %s", dir);
    free(dir);
}
