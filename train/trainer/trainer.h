/* SPDX-License-Identifier: MIT */
/*
 * trainer.h: the top of the `train` program, what main() drives around
 * the steps, as PaddleNLP's Trainer does: the setup, the paths, the
 * checkpoints (resume, save), evaluation, reports, and stopping on a
 * signal.
 */
#ifndef TRAIN_TRAINER_H
#define TRAIN_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "run/run.h"

struct loader;

/* ------------------------------------------------------------------------ */
/* trainer/setup.c, trainer/paths.c: from the arguments to a model           */

/* launcher_rank: this process's rank as mpirun or srun gives it in the
 * environment (0 when started plainly), before MPI starts. */
int launcher_rank(void);

/* setup: the ranks and their groups, the batch sizes, the model config,
 * vocabulary and tokenizer files, every path, then the model, the
 * optimizer (over this rank's range, zero_setup()), the schedule and the
 * MFU peak. */
void setup(struct run *r);

/* run_release: free what setup() and the run made, in one place. */
void run_release(struct run *r);

/* file_in: path itself if it is a file, else path/name (caller frees). */
char *file_in(const char *path, const char *name);

/* check_paths: every path of the run before anything is built: the data
 * (a directory's datasets are listed), --continue_training's weights, the
 * output and cache directories (made with their parents); rank 0 locks
 * the output directory and removes what interrupted runs left there. */
void check_paths(struct run *r);

/* ------------------------------------------------------------------------ */
/* trainer/checkpointing.c: resume, initialise, save                         */

/* load_or_init: resume from output_dir/model_last, else take the weights
 * of --continue_training, else initialise. */
void load_or_init(struct run *r);

/* load_for_eval: the weights and state of the checkpoint to evaluate
 * (--do_eval without training): --model_name_or_path when it is a
 * checkpoint of train (trainer_state.json and model.safetensors), else
 * output_dir/model_last, as training would resume, else the
 * model.safetensors of --model_name_or_path (transformers'
 * save_pretrained; at global step 0); no checkpoint is an error.  Returns
 * the directory evaluated (caller frees). */
char *load_for_eval(struct run *r);

/* save: the checkpoint output_dir/name of this step (all ranks take
 * part; world rank 0 writes); keep_backup: keep the one it replaces as
 * name_bak until it is written. */
void save(struct run *r, const char *name, int keep_backup);

/* ------------------------------------------------------------------------ */
/* trainer/tensors.c: the model's tensors whole, one at a time               */

/* The checkpoints' view of the model: its tensors whole (io->ct), gathered
 * from and handed to the ranks that hold their parts. */
struct tensor_io {
    struct run *r;
    struct param_table whole; /* the checkpoints' layout (tp 1) */
    struct param_table parts; /* the same, as this tensor-parallel rank's */
    float *dev;  /* backend: where a tensor's parts meet (saving) */
    float *host; /* host: rank 0's parts of a tensor (saving), or one part
                    (loading); NULL without tensor parallelism */
    struct ckpt_tensors ct;
};

/* tensors_open: io for a save (saving 1: every rank calls it, and
 * ckpt_save_tensors() with io->ct) or a load; its buffers are one tensor
 * each.  tensors_close: free them. */
void tensors_open(struct tensor_io *io, struct run *r, int saving);
void tensors_close(struct tensor_io *io);

/* tensors_init: this rank's parameters initialised (params_fill_tensor()),
 * one tensor at a time, into what its buffers hold. */
void tensors_init(struct run *r, uint64_t seed);

/* ------------------------------------------------------------------------ */
/* trainer/evaluate.c                                                        */

/* What an evaluation measured, over every rank. */
struct eval_result {
    int n;              /* micro-batches read (0: the split had none) */
    int64_t samples;    /* their sequences */
    struct losses mean; /* the means of the micro-batches' losses */
    /* model_hits(): the language-model rows predicted right and those with
     * a target, then the same for ERNIE's SOP head */
    int64_t hits[4];
    double seconds;
};

/* evaluate: `iters` micro-batches of a split on each rank, continuing its
 * loader; the losses averaged over every rank's micro-batches, logged and
 * recorded.  announce: say what is evaluated before starting.  With out
 * (NULL: none), the accuracies too, and the results into *out. */
void evaluate(struct run *r, struct loader *l, const char *name, int iters,
              int announce, struct eval_result *out);

/* evaluate_test: the test split at the end of the run (--do_predict). */
void evaluate_test(struct run *r);

/* ------------------------------------------------------------------------ */
/* trainer/eval_only.c                                                       */

/* evaluate_checkpoint: without training (--do_train false), the
 * checkpoint of load_for_eval() on the valid split (--do_eval: the
 * micro-batches training's evaluation at its step read) and the test
 * split (--do_predict), with the accuracies, logged and written to
 * output_dir/eval_results.json; an empty split asked for is an error. */
void evaluate_checkpoint(struct run *r);

/* ------------------------------------------------------------------------ */
/* trainer/report.c: what the run says about itself                          */

/* report_start: the arguments, the model, the MFU peak, the layout and
 * the memory per rank, before the data is opened. */
void report_start(const struct run *r);

/* open_records: rank 0's train_log.jsonl (trimmed to the step resumed
 * from) and event files. */
void open_records(struct run *r);

/* replicas_sum: losses x[0..n) summed over every replica (the
 * data-parallel and sharding ranks) and the pipeline stages (only the
 * last has them). */
void replicas_sum(struct run *r, double *x, size_t n, int64_t step);

/* report_step: the log line and records of the `logged` steps up to
 * `step`: acc holds their losses summed on this rank (averaged over the
 * replicas here), dt the seconds they took, comm_sent the bytes the last
 * one sent. */
void report_step(struct run *r, int64_t step, double lr, double norm,
                 double comm_sent, struct losses *acc, int logged, double dt);

/* report_eval: the scalars of an evaluation of split `name` to the event
 * files. */
void report_eval(struct run *r, const char *name, const struct losses *mean);

/* ------------------------------------------------------------------------ */
/* trainer/stop.c: signals at step boundaries                                */
/* stop_signal: the signal (SIGTERM or SIGUSR1) on which every rank stops
 * at this step boundary, or 0. */
int stop_signal(struct run *r);

/* stop_run: stop on signal sig, model_last holding this step; returns
 * sig. */
int stop_run(struct run *r, int sig);

#endif /* TRAIN_TRAINER_H */
