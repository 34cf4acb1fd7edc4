/* SPDX-License-Identifier: MIT */
/*
 * args.h: the `train` tool's arguments: the seed's flag names
 * (run_pretrain.py, ernie-data.md 8.1) with its defaults, read from JSON
 * config files (--config, keys = flag names) and then from the command
 * line, which wins.  The names of PaddleNLP's newer TrainingArguments
 * (and a few of Megatron-LM's) are aliases of the flags of the same
 * meaning; those that cannot be honoured here are refused with a reason.
 */
#ifndef TRAIN_ARGS_H
#define TRAIN_ARGS_H

#include <stddef.h>
#include <stdio.h>

struct train_args {
    char *model_type;             /* ernie | gpt */
    char *model_name_or_path;     /* config.json, or a dir holding one */
    char *config_name;            /* the config, if not model_name_or_path's */
    char *tokenizer_name_or_path; /* vocab.txt or a dir holding one */
    int continue_training;        /* load the weights in model_name_or_path */
    char *input_dir; /* prefix, directory, "w1 prefix1 w2 prefix2 ..." */
    char *output_dir;
    char *split;
    int binary_head;
    int max_seq_len;
    int micro_batch_size;
    int global_batch_size;           /* 0: from the accumulation */
    int gradient_accumulation_steps; /* 0: from global_batch_size */
    int per_device_eval_batch_size;  /* 0, or micro_batch_size */
    double weight_decay, grad_clip, max_lr, min_lr, warmup_rate;
    int warmup_steps; /* > 0: overrides warmup_rate */
    double adam_beta1, adam_beta2, adam_epsilon;
    int max_steps, decay_steps; /* decay_steps 0: max_steps */
    int checkpoint_steps, save_steps, logging_freq, eval_freq, eval_iters;
    int do_train;   /* 0: evaluate a checkpoint only (--do_eval without
                       --do_train, or --do_train false) */
    int do_eval;    /* evaluate the valid split every eval_freq steps */
    int do_predict; /* evaluate the test split at the end */
    double hidden_dropout_prob, attention_probs_dropout_prob; /* < 0: config */
    int seed;
    int check_accuracy; /* dropouts forced to 0 */
    char *device;       /* cpu | cuda | auto */
    /* Mixed precision (PaddleNLP's names; the float16 loss scaling is
     * Paddle's GradScaler's). */
    int use_amp;
    char *amp_dtype;      /* bfloat16 | float16 */
    char *fp16_opt_level; /* O1 | O2: the same here */
    double scale_loss;    /* float16: the initial loss scale */
    int use_dynamic_loss_scaling;
    int incr_every_n_steps, decr_every_n_nan_or_inf;
    double incr_ratio, decr_ratio;
    char
        *lr_decay_style; /* linear | cosine | auto (ernie linear, gpt cosine) */
    double masked_lm_prob, short_seq_prob;
    int favor_longer_ngram, geometric_ngram, max_ngrams;
    int threads;        /* 0: OpenMP's default */
    double peak_gflops; /* for MFU; 0: the CPU's FP32 peak (peak.c) */
    char *cache_dir;    /* index caches; NULL: beside the data */
    char *report_to;    /* event files: tensorboard,visualdl | all | none */
    char *logging_dir;  /* their directory; NULL: output_dir/runs */
    /* The parallel layout (docs/parallel.md). */
    int tp, pp, dp, sharding_degree, sharding_stage; /* dp 0: the rest */
    char *placement;         /* inter_first | intra_first (comm.h) */
    char *comm_backend;      /* auto | nccl | host (comm.h) */
    double comm_timeout;     /* seconds a collective may wait; 0: forever */
    int overlap_grad_reduce; /* data parallel: reduce layers during backward */
    int use_recompute;
    char *recompute_granularity; /* full | core_attn */
    /* Not flags: what parsing noted (aliases accepted with no effect
     * here), one line each, or NULL; owned. */
    char *notes;
};

enum args_status {
    ARGS_OK = 0,
    ARGS_HELP = 1,  /* --help: the usage was printed to stdout */
    ARGS_EMPTY = 2, /* no arguments at all: print the usage */
    ARGS_ERROR = -1 /* err says what is wrong: a usage error */
};

/* args_parse: defaults, then every --config FILE in order (wherever they
 * stand), then the other flags (--name value or --name=value; a bare
 * boolean flag means true), each value checked against its flag's type
 * and range as it is set; then the required flags and the aliases'
 * conditions.  Returns an args_status; on ARGS_ERROR, err names the flag
 * (or the config file and key) and the value, and suggests the nearest
 * known name for an unknown one.  Release a with args_release() in every
 * case. */
int args_parse(struct train_args *a, int argc, char **argv, char *err,
               size_t errlen);
void args_release(struct train_args *a);

/* args_usage: the flags, each with its help and default, and the
 * aliases. */
void args_usage(FILE *out);

/* args_print: every argument as the seed logs them, "name : value"
 * (numbers in the shortest form that reads back the same). */
void args_print(const struct train_args *a, FILE *out, const char *prefix);

/* args_to_json: every argument as a JSON object (malloc'd), or NULL. */
char *args_to_json(const struct train_args *a);

#endif /* TRAIN_ARGS_H */
