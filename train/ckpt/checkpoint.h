/* SPDX-License-Identifier: MIT */
/*
 * checkpoint.h: the trainer's checkpoint directories.  A checkpoint is a
 * directory that transformers loads as it is (from_pretrained) and the
 * trainer resumes from:
 *
 *   model.safetensors      the weights under Hugging Face names and
 *                          layouts, metadata {"format": "pt"}
 *   config.json            config_write_json() of the model's config
 *   optimizer.safetensors  AdamW's moments: "exp_avg.<name>" and
 *                          "exp_avg_sq.<name>", laid out as the weights
 *   trainer_state.json     {"format": "erniekit-trainer-state",
 *                          "version": 1, "model_type": "ernie" | "gpt",
 *                          "global_step", "consumed_samples",
 *                          "optimizer_step", "global_batch_size",
 *                          "micro_batch_size", "seed", "learning_rate",
 *                          "skipped_steps", float16's "loss_scale",
 *                          "loss_scale_incr_count" and
 *                          "loss_scale_decr_count" (these four optional),
 *                          "args": {the run's arguments}}
 *   vocab.txt              a copy of the run's vocabulary, if it has one
 *   ...                    and the files the caller adds (ckpt_save_files:
 *                          the tokenizer's, hf_tokenizer.h)
 */
#ifndef TRAIN_CHECKPOINT_H
#define TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "weights.h"

#ifdef __cplusplus
extern "C" {
#endif

struct model;
struct optimizer;

#define CKPT_STATE_FORMAT  "erniekit-trainer-state"
#define CKPT_STATE_VERSION 1

/* Where training stands; all counts are non-negative. */
struct train_state {
    int64_t global_step;    /* optimizer steps taken by the schedule */
    int64_t optimizer_step; /* AdamW's t (saved from o->t) */
    uint64_t consumed_samples;
    uint64_t seed;
    int64_t global_batch_size, micro_batch_size;
    double learning_rate; /* of the last step */
    /* Steps skipped for gradients that were not finite (float16's loss
     * scaling); float16's loss scale (0: none, the run had no loss
     * scaling) and Paddle's counts of the finite steps since it last
     * changed and of the non-finite ones since it last shrank.  Optional
     * in the file: absent, 0. */
    int64_t skipped_steps;
    double loss_scale;
    int64_t loss_scale_incr_count, loss_scale_decr_count;
};

/* ckpt_save: write a checkpoint of m, o and s to dir.  Everything goes
 * into "<dir>.tmp.<pid>" first (each file fsync'ed); then the temporary
 * directory takes dir's place, the old dir becomes "<dir>_bak" when
 * keep_backup is set (replacing an older backup) and is removed
 * otherwise, and dir's parent is fsync'ed.  dir is never missing in
 * between where the file system can swap two names atomically (Linux's
 * RENAME_EXCHANGE).  The optimizer step written is o->t, not
 * s->optimizer_step.  args_json is a JSON object (the run's arguments,
 * stored under "args"; NULL: {}); vocab_path is copied to vocab.txt
 * (NULL: none).  Returns 0, or -1 with a message in err naming the file
 * and what is wrong; on failure the temporary directory is removed and
 * dir is as it was, except where only discarding the old checkpoint or
 * renaming it to "<dir>_bak" failed after the new one took its place
 * (the message then begins "saved '<dir>', but").  A SIGINT while the
 * files are written removes the temporary directory (interrupt.h). */
int ckpt_save(const char *dir, struct model *m, const struct optimizer *o,
              const struct train_state *s, const char *args_json,
              const char *vocab_path, int keep_backup, char *err,
              size_t errlen);

/* A file a checkpoint carries besides its own: a copy of src, or, when
 * src is NULL, text. */
struct ckpt_file {
    const char *name; /* its name in the checkpoint ("tokenizer_config.json") */
    const char *src;  /* a file to copy, or NULL */
    const char *text; /* NUL-terminated, when src is NULL */
};

/* ckpt_save_files: ckpt_save() with the files files[0..n_files) in the
 * checkpoint instead of vocab.txt, written (and synced) with the others
 * before the checkpoint takes dir's place. */
int ckpt_save_files(const char *dir, struct model *m, const struct optimizer *o,
                    const struct train_state *s, const char *args_json,
                    const struct ckpt_file *files, size_t n_files,
                    int keep_backup, char *err, size_t errlen);

/* The buffers a checkpoint's tensors come from (the b of weights.h's
 * callbacks): the weights, AdamW's first and second moments. */
enum ckpt_buffer { CKPT_WEIGHTS, CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };

/* A checkpoint's tensors, whole and one at a time (weights.h): table is
 * the whole model's (model_table_build() with tp_size 1: global
 * coordinates, whatever the layout that trains it); get() and put() move
 * buffer b's tensor t between host memory and the ranks that hold its
 * parts. */
struct ckpt_tensors {
    const struct param_table *table;
    weights_get_fn get;
    weights_put_fn put;
    void *ctx;
};

/* ckpt_save_tensors: ckpt_save_files() of the tensors src gives, the
 * model of config cfg, AdamW's step optimizer_step: model.safetensors and
 * optimizer.safetensors are written one tensor at a time through a
 * tensor-sized host buffer (src->get() fills it), so no rank ever holds
 * the model in host memory.  write 0 (the ranks other than the writer):
 * write nothing, only make the same src->get() calls in the same order
 * (host NULL: the gathers the writer's calls take part in); returns 0, or
 * -1 with get()'s error. */
int ckpt_save_tensors(const char *dir, const struct model_config *cfg,
                      const struct ckpt_tensors *src, int64_t optimizer_step,
                      const struct train_state *s, const char *args_json,
                      const struct ckpt_file *files, size_t n_files,
                      int keep_backup, int write, char *err, size_t errlen);

/* ckpt_load_tensors: ckpt_load() through dst: every tensor of
 * model.safetensors (and with optimizer, of optimizer.safetensors) is
 * handed to dst->put() whole, one at a time, from the mapped file (a
 * transposed one through a tensor-sized host buffer); s->optimizer_step
 * is AdamW's step for the caller to set. */
int ckpt_load_tensors(const char *dir, const struct model_config *cfg,
                      const struct ckpt_tensors *dst, int optimizer,
                      struct train_state *s, char *err, size_t errlen);
/* ckpt_write_dir: a directory written as a checkpoint is (ckpt_save_files()
 * is this with the checkpoint's own files): fill (NULL: none) writes files
 * into tmp, the new directory "<dir>.tmp.<pid>", each synced; then
 * files[0..n_files) are added, tmp is synced and takes dir's place (the
 * old dir kept as "<dir>_bak" with keep_backup, else removed), and dir's
 * parent is synced.  Returns 0, or -1 with err naming the file and what is
 * wrong (fill's message, when it fails); the temporary directory is then
 * removed, and a SIGINT while the files are written removes it too. */
int ckpt_write_dir(const char *dir,
                   int (*fill)(const char *tmp, void *ctx, char *err,
                               size_t errlen),
                   void *ctx, const struct ckpt_file *files, size_t n_files,
                   int keep_backup, char *err, size_t errlen);

/* ckpt_load: load the checkpoint in dir into m (its weights must be
 * exactly m's tensors, shapes included) and, when o is not NULL, the
 * moments into o with o->t = optimizer_step; *s gets trainer_state.json
 * (every field required, of the right type and non-negative; an unknown
 * format or version, or another model type, is an error).  When dir has a
 * config.json, its sizes must equal m's.  Returns 0, or -1 with err naming
 * the file and what is wrong (missing, truncated or corrupt file, missing
 * tensor, wrong shape, mismatched config).  On failure *s is untouched,
 * but m and o may have been partly loaded. */
int ckpt_load(const char *dir, struct model *m, struct optimizer *o,
              struct train_state *s, char *err, size_t errlen);

/* ckpt_read_state: read dir's trainer_state.json into *s, as ckpt_load()
 * does, for a run of model type `type`.  Returns 0, or -1 with err naming
 * the file and what is wrong; on failure *s may be partly written. */
int ckpt_read_state(const char *dir, enum model_type type,
                    struct train_state *s, char *err, size_t errlen);

/* ckpt_clean_stale: remove from dir (an output directory) what
 * interrupted runs left: ckpt_save()'s temporary directories
 * "<name>.tmp.<pid>" and "<name>.old.<pid>", and any other
 * "<file>.tmp.<pid>", whose pid is not this process's and, with
 * check_pid, not a process alive on this host (without check_pid the
 * caller knows that no other process writes to dir).  report (NULL: none)
 * is told of each before it is removed.  Returns the number removed, or
 * -1 with err naming what could not be read or removed. */
int ckpt_clean_stale(const char *dir, int check_pid,
                     void (*report)(const char *path, int is_dir, void *ctx),
                     void *ctx, char *err, size_t errlen);

/* ckpt_exists: 1 if dir holds a complete checkpoint (trainer_state.json,
 * model.safetensors and optimizer.safetensors are regular files), else
 * 0. */
int ckpt_exists(const char *dir);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_CHECKPOINT_H */
