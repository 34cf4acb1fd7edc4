/* SPDX-License-Identifier: MIT */
/*
 * run.h: the state of one `train` run (struct run) and the functions that
 * the program's files share: run/ (messages, setup, checkpointing,
 * evaluation, reports, stopping), data/ (the vocabulary, the corpus and
 * its loaders), step/ (a training step, the micro-steps, the 1F1B
 * pipeline) and zero/ (data parallelism and sharding).  Unlike libtrain,
 * whose functions return their errors, these stop the run on one (fatal()
 * names the rank and exits 1), as a program may.  Never installed.
 */
#ifndef TRAIN_RUN_H
#define TRAIN_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ckpt/checkpoint.h"
#include "ckpt/hf_tokenizer.h"
#include "cli/args.h"
#include "data/loader.h"
#include "log/peak.h"
#include "model/config.h"
#include "model/model.h"
#include "optim/optim.h"

struct comm;
struct ds_corpus;
struct events;
struct event_scalar;
struct tok_vocab;

/* ------------------------------------------------------------------------ */
/* run/messages.c: logging, in PaddleNLP's logger format                    */

/* This process's rank and the number of ranks: only rank 0 logs; errors
 * name the rank when there are several. */
extern int g_rank, g_world;

/* log_info: a line of PaddleNLP's logger ("[date time,ms] [    INFO] -
 * ..."), on rank 0 only. */
void __attribute__((format(printf, 1, 2))) log_info(const char *fmt, ...);

/* fatal: "train: [rank R: ]message" on stderr, exit 1 (without
 * MPI_Finalize: mpirun ends the other ranks). */
void __attribute__((format(printf, 1, 2), noreturn))
fatal(const char *fmt, ...);

/* usage_error: a problem with the arguments, said once by rank 0; exit
 * status 2, as for usage errors. */
void __attribute__((format(printf, 1, 2), noreturn))
usage_error(const char *fmt, ...);

/* now: seconds on the monotonic clock. */
double now(void);

/* fmt_duration: s seconds as H:MM:SS (hours not wrapped), "?" if s is
 * not a duration. */
void fmt_duration(char *out, size_t len, double s);

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

/* The vocabulary ERNIE's samples are masked with (data/datasets.c). */
struct vocab {
    struct tok_vocab *v;
    const char **tokens;
    size_t n_tokens, n_base;
    int32_t cls, sep, mask, pad;
};

struct run {
    struct train_args a;
    struct model_config cfg;
    struct vocab vocab;
    char *vocab_path, *config_path;
    struct hf_tokenizer tok; /* the tokenizer files of the checkpoints */
    struct ds_corpus *corpus;
    struct model *m;
    struct comm *comm;
    struct optimizer opt;
    struct lr_params lr;
    struct adamw_params adam;
    struct loader train, valid;
    int accumulate; /* micro-batches per step on each rank */
    int gbs;
    int dp, dp_rank; /* the data-parallel group: size, this rank's place */
    int sh, sh_rank; /* the sharding group */
    int tp, tp_rank; /* the tensor-parallel group */
    int pp, pp_rank; /* the pipeline: stages, this rank's */
    int slots;       /* micro-batches in flight on this stage (1F1B) */
    size_t tied_off, tied_n; /* the word embeddings (or their copy) */
    /* The dp x sharding ranks that read different samples, and this
     * rank's place among them (sharding ranks are data parallel too). */
    int replicas, replica;
    size_t *shard_off; /* sh + 1 bounds: sharding rank k steps [k, k+1) */
    /* Data parallel without sharding: each layer's gradients all-reduced
     * as soon as the last micro-step's backward finishes them. */
    int overlap;
    size_t layers_lo, layers_hi; /* the layers' part of the flat buffers */
    /* Sharding stage 2: each layer's gradients are reduced to their owners
     * as the backward finishes them, then discarded; gacc sums this rank's
     * range over the micro-steps. */
    int stage2;
    float *gacc;
    /* Sharding stage 3: the parameters too; a layer's are gathered before
     * its forward and backward and dropped after. */
    int stage3;
    int prefetched;   /* the layer whose gather is under way, or -1 */
    size_t *clip_off; /* sh + 1 scratch bounds */
    struct train_state st;
    char *args_json;
    FILE *jsonl;
    unsigned event_targets;    /* --report_to */
    struct events *events;     /* rank 0's TensorBoard/VisualDL files */
    double flops, peak_gflops; /* model FLOPs since the last log line */
    struct cpu_peak cpu_peak;  /* how peak_gflops was found (not given) */
    int64_t saved_last;        /* the global step model_last holds */
    /* Tests: TRAIN_TEST_KILL_AT_STEP raises SIGKILL after that step,
     * TRAIN_TEST_SIGNAL_AT_STEP raises TRAIN_TEST_SIGNAL (TERM, USR1 or
     * INT) there, TRAIN_TEST_STALL_AT_STEP hangs before its gradient
     * all-reduce; on every rank, or on rank TRAIN_TEST_RANK only. */
    int64_t kill_at, stall_at, signal_at;
    int test_signal;
    int test_rank;
};

/* ------------------------------------------------------------------------ */
/* run/setup.c, run/paths.c: from the arguments to a model and optimizer    */

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
/* data/datasets.c: the vocabulary, the sidecars, the corpus, the loaders   */

/* vocab_open: a vocab.txt with the "##<CJK>" ids PaddleNLP's tokenizer
 * adds, and its four special tokens. */
void vocab_open(struct vocab *vc, const char *path);

/* check_data_meta: the datasets' sidecars against the run's model and
 * vocab, before anything is built (ds-meta(5)). */
void check_data_meta(const struct run *r);

/* open_data: the corpus of --input_dir, its three splits sized by the
 * run (ernie-data.md 8.3). */
void open_data(struct run *r);

/* open_loader: a loader of split reading this rank's slice of each
 * global batch. */
void open_loader(struct run *r, struct loader *l, enum ds_split split);

/* ------------------------------------------------------------------------ */
/* run/checkpointing.c: resume, initialise, save                            */

/* load_or_init: resume from output_dir/model_last, else take the weights
 * of --continue_training, else initialise. */
void load_or_init(struct run *r);

/* save: the checkpoint output_dir/name of this step (all ranks take
 * part; world rank 0 writes); keep_backup: keep the one it replaces as
 * name_bak until it is written. */
void save(struct run *r, const char *name, int keep_backup);

/* ------------------------------------------------------------------------ */
/* run/evaluate.c                                                            */

/* evaluate: `iters` micro-batches of a split on each rank, continuing its
 * loader; the losses averaged over every rank's micro-batches, logged and
 * recorded.  announce: say what is evaluated before starting. */
void evaluate(struct run *r, struct loader *l, const char *name, int iters,
              int announce);

/* evaluate_test: the test split at the end of the run (--do_predict). */
void evaluate_test(struct run *r);

/* ------------------------------------------------------------------------ */
/* run/report.c: what the run says about itself                             */

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
/* run/stop.c: signals at step boundaries, and the tests' faults            */

/* read_test_hooks: the TRAIN_TEST_* variables (struct run). */
void read_test_hooks(struct run *r);

/* test_hook_due: whether a test fault set for step `at` fires at `step`
 * on this rank. */
int test_hook_due(const struct run *r, int64_t at, int64_t step);

/* stop_signal: the signal (SIGTERM or SIGUSR1) on which every rank stops
 * at this step boundary, or 0. */
int stop_signal(struct run *r);

/* stop_run: stop on signal sig, model_last holding this step; returns
 * sig. */
int stop_run(struct run *r, int sig);

/* ------------------------------------------------------------------------ */
/* step/: a training step                                                    */

/* train_step: global step `step` at learning rate lr: the micro-steps
 * (their losses added to acc), the gradients reduced over the replicas,
 * their global norm (returned), the update.  comm_sent: the bytes this
 * rank sent for it. */
double train_step(struct run *r, int64_t step, double lr, struct losses *acc,
                  double *comm_sent);

/* check_loss: stop on a loss that is not finite, naming the step. */
void check_loss(int64_t step, const struct losses *L, const char *what);

/* micro_steps: the micro-steps of a step, one after the other or the
 * pipeline's 1F1B, and the tied embeddings' gradients summed. */
void micro_steps(struct run *r, int64_t step, struct losses *acc);

/* load_micro, forward_micro, backward_micro: micro-step k's batch into
 * its activation slot, its forward (losses added to acc), its backward
 * with the reduction hooks of the layout. */
void load_micro(struct run *r, int64_t step, int k, struct batch *b);
void forward_micro(struct run *r, int64_t step, int k, const struct batch *b,
                   struct losses *acc);
void backward_micro(struct run *r, int k);

/* micro_steps_1f1b: the pipeline's micro-steps (step/pipeline.c). */
void micro_steps_1f1b(struct run *r, int64_t step, struct losses *acc);

/* stage_bytes: the bytes of activations a micro-batch passes between
 * pipeline stages. */
size_t stage_bytes(const struct run *r, const struct batch *b);

/* p2p: stop if a pipeline transfer (rc < 0) failed. */
void p2p(struct run *r, int rc, int64_t step);

/* sync_tied: the tied word embeddings' gradients summed over the first
 * and last pipeline stages. */
void sync_tied(struct run *r, int64_t step);

/* ------------------------------------------------------------------------ */
/* zero/: data parallelism and sharding over the flat buffers              */

/* zero_setup: this rank's range of the flat buffers (sharding), the
 * optimizer over it, and what the layout reduces as the backward goes
 * (overlap, stage 2, stage 3). */
void zero_setup(struct run *r);

/* zero_clear_grads: a step's gradients zeroed before its micro-steps
 * (stage 2: this rank's accumulator; the buffer was discarded). */
void zero_clear_grads(struct run *r);

/* zero_reduce_grads: the mean of the replicas' gradients where the
 * optimizer needs it. */
void zero_reduce_grads(struct run *r, int64_t step);

/* zero_layer_grads_ready, zero_stage2_layer_ready: the backward's layer
 * hooks (model_set_layer_hook()) of the overlapped all-reduce and of
 * stage 2. */
void zero_layer_grads_ready(void *ctx, int l);
void zero_stage2_layer_ready(void *ctx, int l);

/* zero_shard_region: stage 2: gradients [a, b) reduced to their owners,
 * added to this rank's accumulator, and discarded. */
void zero_shard_region(struct run *r, size_t a, size_t b);

/* zero_shard_heads: stage 2: the embeddings' and heads' gradients to
 * their owners after a micro-step's backward (skip_tied: but the tied
 * word embeddings of a pipeline's end stages). */
void zero_shard_heads(struct run *r, int skip_tied);

/* zero_gather_params: parameters [a, b) from the sharding ranks owning
 * their pieces. */
void zero_gather_params(struct run *r, size_t a, size_t b);

/* zero_after_update: the parameters the other sharding ranks updated
 * gathered (stage 3: the embeddings and heads; the layers when needed),
 * and stage 2's gradient range discarded for the next step. */
void zero_after_update(struct run *r, int64_t step);

/* zero_stage3_params: stage 3's parameter hook (model_set_param_hook()). */
void zero_stage3_params(void *ctx, int l, int need);

/* zero_stage3_start: stage 3: keep this rank's range of the layers only,
 * and gather each layer when the model needs it. */
void zero_stage3_start(struct run *r);

/* zero_gather_moments: sharding: a whole-table optimizer holding every
 * rank's moments, for saving; zero_take_moments: keep this rank's range
 * of one. */
void zero_gather_moments(struct run *r, struct optimizer *full);
void zero_take_moments(struct run *r, const struct optimizer *full);

#endif /* TRAIN_RUN_H */
