/* SPDX-License-Identifier: MIT */
/*
 * run.h: what every file of the `train` program shares, at the bottom of
 * its layers (main.c, trainer/, step/, zero/, data/, run/): the state of
 * one run (struct run), the program's messages, and the tests' faults.
 * Unlike libtrain, whose functions return their errors, the program's
 * files stop the run on an error: fatal() names the rank and exits 1.
 * Never installed.
 */
#ifndef TRAIN_RUN_H
#define TRAIN_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ckpt/checkpoint.h"
#include "ckpt/hf_tokenizer.h"
#include "cli/args.h"
#include "log/peak.h"
#include "model/config.h"
#include "model/model.h"
#include "optim/optim.h"

struct comm;
struct ds_corpus;
struct events;
struct loader;
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

/* The doubles of struct run's scalars buffer. */
#define RUN_SCALARS 8

/* The losses of micro-batches, summed in backend memory and read at once
 * (step/loss_sums.c, step.h). */
struct loss_sums {
    double *dev;     /* backend memory: [cap][2], model_forward()'s sums */
    double *host;    /* [cap][2] */
    int (*shape)[3]; /* each micro-batch's B, T and M */
    size_t n, cap;
    struct losses acc; /* what was read early (n reached cap) */
    int64_t n_read;    /* micro-batches read since the last loss_sums_read */
    int64_t bad;       /* the first of them whose loss is not finite, or -1 */
    double bad_loss;   /* its loss */
};

/* The vocabulary ERNIE's samples are masked with (vocab_open(),
 * data/datasets.h). */
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
    const struct ops *ops; /* the compute backend (ops_open()) */
    char device_why[512];  /* why that one (ops_open()'s message) */
    struct comm *comm;
    struct optimizer opt;
    /* A step's scalars in backend memory: scalars (the collectives on a
     * few doubles: losses over the replicas, evaluation), norm_check
     * (loss_check() of the gradient norm); the losses until read; the
     * optimizer's scalars as last read (step_read()). */
    double *scalars; /* RUN_SCALARS doubles */
    struct ops_step *norm_check;
    struct loss_sums train_losses;
    struct ops_step last;
    /* float16: the loss scale in backend memory (the optimizer's) and how
     * it changes; NULL, and zeros, otherwise. */
    const float *loss_scale;
    struct ops_step_opts scaling;
    struct lr_params lr;
    struct adamw_params adam;
    struct loader *train, *valid; /* data/loader.h */
    int accumulate;               /* micro-batches per step on each rank */
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
    /* Sharding stages 2 and 3 (zero/): each rank allocates what it owns
     * instead of the flat buffers.  Stage 2: the gradients of its range,
     * summed over the micro-steps (gacc); the embeddings' and heads'
     * whole, written throughout a backward and reduced to their owners
     * after it (ends_g); and two buckets of a layer that each layer's
     * backward fills in turn, reduced to their owners as soon as it is
     * done.  Stage 3 also: the fp32 master weights of its range, which it
     * updates (pshard), and their compute copy (pcshard: the backend's
     * dtype; pshard itself in float32); the compute copy of the
     * embeddings and heads whole, gathered after every update (ends_p);
     * and two layer buffers of the compute copy: the layer in use and the
     * next one, whose gather is under way (the prefetch).  What the model
     * reads is gathered in its compute dtype (half the bytes in 16 bits);
     * gradients, moments and master weights stay fp32. */
    int stage2, stage3;
    float *gacc, *pshard;
    void *pcshard;
    float *ends_g[2]; /* [PARAM_POST + 2], [PARAM_PRE + 2] */
    void *ends_p[2];
    float *bucket[2];
    int bucket_next;
    void *lbuf[2];
    int lbuf_layer[2]; /* the layer a buffer holds or receives, or -1 */
    int prefetched;    /* the layer whose gather is under way, or -1 */
    size_t *clip_off;  /* sh + 1 scratch bounds */
    /* Backend memory zero/ allocated for the parameters and gradients:
     * this rank's range (stage 3's parameters: the master weights and
     * their compute copy), the embeddings and heads, the layer buffers
     * (the start report). */
    struct zero_mem {
        size_t range, ends, layers;
    } pmem, gmem;
    struct train_state st;
    char *args_json;
    FILE *jsonl;
    unsigned event_targets;     /* --report_to */
    struct events *events;      /* rank 0's TensorBoard/VisualDL files */
    double flops, peak_gflops;  /* model FLOPs since the last log line */
    struct cpu_peak cpu_peak;   /* how peak_gflops was found (not given) */
    struct gpu_peak gpu_peak;   /* the same on a GPU */
    struct ops_device_info dev; /* the backend's device */
    int64_t saved_last;         /* the global step model_last holds */
    /* Tests: TRAIN_TEST_KILL_AT_STEP raises SIGKILL after that step,
     * TRAIN_TEST_SIGNAL_AT_STEP raises TRAIN_TEST_SIGNAL (TERM, USR1 or
     * INT) there, TRAIN_TEST_STALL_AT_STEP hangs before its gradient
     * all-reduce; on every rank, or on rank TRAIN_TEST_RANK only. */
    int64_t kill_at, stall_at, signal_at;
    int test_signal;
    int test_rank;
    /* TRAIN_TEST_REPORT_STAGING: log the host memory each checkpoint save
     * and load staged at most. */
    int report_staging;
    /* Tests: TRAIN_TEST_DUMP_BATCHES names a directory where a run of one
     * rank writes every micro-batch it evaluates (test_dump_batch()), or
     * NULL. */
    const char *dump_batches;
};

/* ------------------------------------------------------------------------ */
/* run/test_hooks.c: the tests' faults                                      */

/* read_test_hooks: the TRAIN_TEST_* variables (struct run). */
void read_test_hooks(struct run *r);

/* test_hook_due: whether a test fault set for step `at` fires at `step`
 * on this rank. */
int test_hook_due(const struct run *r, int64_t at, int64_t step);

/* test_dump_batch: with TRAIN_TEST_DUMP_BATCHES (one rank), micro-batch i
 * of an evaluation of split `name` as <dir>/<name>-<i>.safetensors, the
 * I32 tensors of tests/conformance/train_torch_run.py's batches; else
 * nothing. */
void test_dump_batch(const struct run *r, const char *name, int i,
                     const struct batch *b);

#endif /* TRAIN_RUN_H */
