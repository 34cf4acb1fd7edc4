/* SPDX-License-Identifier: MIT */
/*
 * checkpointing.c: the run's checkpoints: where a run starts (resumed
 * from output_dir/model_last, the weights of --continue_training, or a
 * fresh initialisation) and the saves of model_last and model_<step>.  A
 * model split by tensor or pipeline parallelism goes through a whole model
 * (ckpt/whole.h); a sharded optimizer's moments are gathered (zero/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "ckpt/safetensors.h"
#include "ckpt/weights.h"
#include "ckpt/whole.h"
#include "comm.h"
#include "step/step.h"
#include "trainer.h"
#include "util/tr_util.h"
#include "zero/zero.h"

/* Whether this rank holds a part of the model (tensor or pipeline
 * parallelism): checkpoints then go through a whole model (whole.h). */
static int
split_model(const struct run *r)
{
    return r->tp > 1 || r->pp > 1;
}

/* After a resume: the compute copy of the weights read, and the step's
 * scalars in backend memory from the checkpoint's: AdamW's step count,
 * the steps skipped, and float16's loss scale where the checkpoint has one
 * (else --scale_loss's, as set up). */
static void
resumed_state(struct run *r)
{
    struct ops_step st;
    int64_t t = r->opt.t; /* the checkpoint's (optim_state_get() resets it) */

    model_params_changed(r->m, 0, model_table(r->m)->total);
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
 * transformers' save_pretrained's) into the model, through a whole model
 * where the model is split; flag names the argument in errors. */
static void
load_weights(struct run *r, const char *path, const char *flag)
{
    char err[1024];
    struct st_file *f;
    struct st_err se;
    size_t unused = 0;
    struct whole w;
    struct model *into = r->m;

    if (split_model(r)) { /* the whole model, then this rank's part */
        if (whole_create(&w, r->m, err, sizeof(err)) < 0)
            fatal("%s: %s", flag, err);
        into = w.m;
    }
    if (st_open(&f, path, &se) < 0)
        fatal("%s: %s", flag, se.msg);
    if (weights_load_buffer(model_table(into), model_ops(into),
                            model_params(into), "", f, &unused, &se) < 0)
        fatal("%s: %s: %s", flag, path, se.msg);
    st_close(f);
    if (split_model(r)) {
        if (whole_scatter(&w, r->m, NULL, err, sizeof(err)) < 0)
            fatal("%s: %s", flag, err);
        whole_release(&w);
    }
    model_params_changed(r->m, 0, model_table(r->m)->total);
    log_info("weights from %s%s", path,
             unused ? " (some of its tensors are not in this model)" : "");
}

/* A checkpoint of ours (trainer_state.json and model.safetensors: the
 * moments are not needed) into the model, its state into r->st. */
static void
load_checkpoint_weights(struct run *r, const char *dir, const char *flag)
{
    char err[1024];
    struct whole w;

    if (split_model(r)) {
        if (whole_create(&w, r->m, err, sizeof(err)) < 0 ||
            ckpt_load(dir, w.m, NULL, &r->st, err, sizeof(err)) < 0 ||
            whole_scatter(&w, r->m, NULL, err, sizeof(err)) < 0)
            fatal("%s: cannot evaluate %s: %s", flag, dir, err);
        whole_release(&w);
    } else if (ckpt_load(dir, r->m, NULL, &r->st, err, sizeof(err)) < 0) {
        fatal("%s: cannot evaluate %s: %s", flag, dir, err);
    }
    model_params_changed(r->m, 0, model_table(r->m)->total);
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

    memset(&r->st, 0, sizeof(r->st));
    r->st.seed = (uint64_t)a->seed;
    r->st.global_batch_size = r->gbs;
    r->st.micro_batch_size = a->micro_batch_size;
    if (asprintf(&last, "%s/model_last", a->output_dir) < 0)
        fatal("out of memory");
    if (ckpt_exists(last)) {
        struct optimizer full, *o = &r->opt;
        struct whole w;

        if (r->sh > 1) { /* read every moment, keep this rank's range */
            if (optim_create(&full, model_ops(r->m), model_table(r->m)) < 0)
                fatal("out of memory reading the optimizer state");
            o = &full;
        }
        if (split_model(r)) { /* read the whole model, keep this rank's part */
            if (whole_create(&w, r->m, err, sizeof(err)) < 0)
                fatal("cannot resume from %s: %s", last, err);
            if (ckpt_load(last, w.m, &w.opt, &r->st, err, sizeof(err)) < 0 ||
                whole_scatter(&w, r->m, o, err, sizeof(err)) < 0)
                fatal("cannot resume from %s: %s", last, err);
            whole_release(&w);
        } else if (ckpt_load(last, r->m, o, &r->st, err, sizeof(err)) < 0) {
            fatal("cannot resume from %s: %s", last, err);
        }
        if (o == &full) {
            zero_take_moments(r, &full);
            optim_release(&full);
        }
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
        if (model_init_params(r->m, (uint64_t)a->seed) < 0)
            fatal("out of memory");
    }
    free(last);
}

void
save(struct run *r, const char *name, int keep_backup)
{
    char *dir, err[1024];
    struct optimizer full;
    const struct optimizer *o = &r->opt;
    struct model *m = r->m;
    struct whole w;
    /* The ranks that hold what world rank 0 writes: its tensor-parallel
     * group (every other replica holds the same). */
    int writer = r->replica == 0;

    /* Done with the steps so far (a NaN among them stops the run before it
     * is saved); AdamW's step count and the loss scaling for the
     * checkpoint. */
    step_read(r, r->st.global_step);
    r->st.optimizer_step = r->opt.t;
    r->st.skipped_steps = r->last.n_skipped;
    r->st.loss_scale = r->loss_scale != NULL ? r->last.loss_scale : 0;
    r->st.loss_scale_incr_count = r->last.good_steps;
    r->st.loss_scale_decr_count = r->last.bad_steps;
    /* Checkpoints hold every moment (global coordinates), so a sharded
     * run gathers them first; all ranks take part. */
    if (r->sh > 1) {
        zero_gather_moments(r, &full);
        o = &full;
    }
    for (int l = 0; r->stage3 && l < r->cfg.num_layers; l++)
        zero_stage3_params(r, l, MODEL_PARAMS_FORWARD);
    if (split_model(r) && writer) { /* whole tensors from the parts */
        if (whole_create(&w, r->m, err, sizeof(err)) < 0 ||
            whole_gather(&w, r->m, o, r->comm, err, sizeof(err)) < 0)
            fatal("step %lld: cannot save: %s", (long long)r->st.global_step,
                  err);
        m = w.m;
    }
    if (strcmp(name, "model_last") == 0)
        r->saved_last = r->st.global_step;
    if (r->comm->rank == 0) { /* the same weights and moments everywhere */
        if (asprintf(&dir, "%s/%s", r->a.output_dir, name) < 0)
            fatal("out of memory");
        if (ckpt_save_files(dir, m, m == r->m ? o : &w.opt, &r->st,
                            r->args_json, r->tok.files, r->tok.n_files,
                            keep_backup, err, sizeof(err)) < 0)
            fatal("step %lld: cannot save %s: %s", (long long)r->st.global_step,
                  dir, err);
        log_info("saved %s", dir);
        free(dir);
    }
    if (m != r->m)
        whole_release(&w);
    if (o == &full)
        optim_release(&full);
    for (int l = 0; r->stage3 && l < r->cfg.num_layers; l++)
        zero_stage3_params(r, l, MODEL_PARAMS_DONE);
}
