/* SPDX-License-Identifier: MIT */
/*
 * args.h: the `train` tool's arguments: the seed's flag names
 * (run_pretrain.py, ernie-data.md 8.1) with its defaults, read from a JSON
 * config file (--config, keys = flag names) and then from the command
 * line, which wins.
 */
#ifndef TRAIN_ARGS_H
#define TRAIN_ARGS_H

#include <stddef.h>
#include <stdio.h>

struct train_args {
    char *model_type;             /* ernie | gpt */
    char *model_name_or_path;     /* config.json, or a dir holding one */
    char *tokenizer_name_or_path; /* vocab.txt or a dir holding one */
    int continue_training;        /* load the weights in model_name_or_path */
    char *input_dir;              /* prefix, or "w1 prefix1 w2 prefix2 ..." */
    char *output_dir;
    char *split;
    int binary_head;
    int max_seq_len;
    int micro_batch_size;
    int global_batch_size; /* 0: micro_batch_size (one rank) */
    double weight_decay, grad_clip, max_lr, min_lr, warmup_rate;
    double adam_beta1, adam_beta2, adam_epsilon;
    int max_steps, decay_steps; /* decay_steps 0: max_steps */
    int checkpoint_steps, save_steps, logging_freq, eval_freq, eval_iters;
    double hidden_dropout_prob, attention_probs_dropout_prob; /* < 0: config */
    int seed;
    int check_accuracy; /* dropouts forced to 0 */
    char *device;       /* cpu | cuda | auto */
    char
        *lr_decay_style; /* linear | cosine | auto (ernie linear, gpt cosine) */
    double masked_lm_prob, short_seq_prob;
    int favor_longer_ngram, geometric_ngram, max_ngrams;
    int threads;        /* 0: OpenMP's default */
    double peak_gflops; /* for MFU; 0: measure SGEMM at start */
    char *cache_dir;    /* index caches; NULL: beside the data */
    char *report_to;    /* event files: tensorboard,visualdl | all | none */
    char *logging_dir;  /* their directory; NULL: output_dir/runs */
    /* The parallel layout (docs/parallel.md). */
    int tp, pp, dp, sharding_degree, sharding_stage; /* dp 0: the rest */
    double comm_timeout;     /* seconds a collective may wait; 0: forever */
    int overlap_grad_reduce; /* data parallel: reduce layers during backward */
    int use_recompute;
    char *recompute_granularity; /* full | core_attn */
};

/* args_parse: defaults, then --config FILE (anywhere on the line), then the
 * flags (--name value or --name=value; a bare boolean flag means true).
 * Returns 0, 1 after printing help (--help), or -1 after printing an
 * error naming the flag or the config file and key. */
int args_parse(struct train_args *a, int argc, char **argv);
void args_release(struct train_args *a);

/* args_print: every argument as the seed logs them, "name : value". */
void args_print(const struct train_args *a, FILE *out, const char *prefix);

/* args_to_json: every argument as a JSON object (malloc'd), or NULL. */
char *args_to_json(const struct train_args *a);

#endif /* TRAIN_ARGS_H */
