/* SPDX-License-Identifier: MIT */
/* args.c: the `train` tool's arguments (see args.h), table-driven. */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

enum kind { K_STR, K_INT, K_DBL, K_BOOL };

struct spec {
    const char *name;
    enum kind kind;
    size_t off;
    const char *dflt; /* NULL: none */
    const char *help;
};

#define S(n, d, h)                                      \
    {                                                   \
#        n, K_STR, offsetof(struct train_args, n), d, h \
    }
#define I(n, d, h)                                      \
    {                                                   \
#        n, K_INT, offsetof(struct train_args, n), d, h \
    }
#define D(n, d, h)                                      \
    {                                                   \
#        n, K_DBL, offsetof(struct train_args, n), d, h \
    }
#define B(n, d, h)                                       \
    {                                                    \
#        n, K_BOOL, offsetof(struct train_args, n), d, h \
    }

static const struct spec specs[] = {
    S(model_type, NULL, "ernie or gpt"),
    S(model_name_or_path, NULL, "config.json, or a directory holding one"),
    S(tokenizer_name_or_path, NULL, "vocab.txt or its directory (ERNIE)"),
    B(continue_training, "0", "load the weights of model_name_or_path"),
    S(input_dir, NULL, "data prefix, or \"w1 prefix1 w2 prefix2 ...\""),
    S(output_dir, NULL, "logs and checkpoints"),
    S(split, "949,50,1", "train,valid,test document split"),
    B(binary_head, "1", "ERNIE: sentence-order prediction (else MLM only)"),
    I(max_seq_len, "1024", "tokens per sequence"),
    I(micro_batch_size, "8", "sequences per micro-step"),
    I(global_batch_size, "0", "sequences per step (0: micro_batch_size)"),
    D(weight_decay, "0.0", "AdamW decay (not on biases and norms)"),
    D(grad_clip, "0.0", "global-norm clipping (0: off)"),
    D(max_lr, "1e-5", "peak learning rate"),
    D(min_lr, "5e-5", "final learning rate"),
    D(warmup_rate, "0.01", "warmup steps = warmup_rate * max_steps"),
    D(adam_beta1, "0.9", NULL),
    D(adam_beta2, "0.999", NULL),
    D(adam_epsilon, "1e-8", NULL),
    I(max_steps, "500000", "optimizer steps"),
    I(decay_steps, "360000", "end of the decay (0: max_steps)"),
    I(checkpoint_steps, "500", "rolling model_last/ every N steps"),
    I(save_steps, "500", "model_<step>/ every N steps"),
    I(logging_freq, "1", "a log line every N steps"),
    S(report_to, "all",
      "event files: tensorboard, visualdl, all or none (comma-separated)"),
    S(logging_dir, NULL, "where the event files go (default: output_dir/runs)"),
    I(eval_freq, "500", "validation every N steps"),
    I(eval_iters, "10", "validation micro-batches (x accumulation)"),
    D(hidden_dropout_prob, "-1", "override the config's (-1: keep)"),
    D(attention_probs_dropout_prob, "-1", "override the config's (-1: keep)"),
    I(seed, "1234", "data and dropout seed"),
    B(check_accuracy, "0", "dropouts off"),
    S(device, "auto", "cpu, cuda or auto"),
    S(lr_decay_style, "auto",
      "linear, cosine or auto (ERNIE linear, GPT cosine)"),
    D(masked_lm_prob, "0.15", NULL),
    D(short_seq_prob, "0.1", NULL),
    B(favor_longer_ngram, "0", NULL),
    B(geometric_ngram, "0", "n-gram sizes min(geometric(0.2), max_ngrams)"),
    I(max_ngrams, "3", NULL),
    I(threads, "0", "CPU threads (0: OpenMP's default)"),
    D(peak_gflops, "0", "peak for MFU (0: measure SGEMM at start)"),
    S(cache_dir, NULL, "index caches (default: beside the data)"),
    I(dp, "0", "data-parallel degree (0: the ranks left by the others)"),
    I(tp, "1", "tensor-parallel degree"),
    I(pp, "1", "pipeline-parallel degree"),
    I(sharding_degree, "1", "sharding (ZeRO) degree"),
    I(sharding_stage, "1", "sharding stage: 1, 2 or 3"),
    D(comm_timeout, "600", "seconds a collective may wait (0: forever)"),
    B(use_recompute, "0", "recompute activations in the backward pass"),
    S(recompute_granularity, "full",
      "full (whole layers) or core_attn (attention probabilities)"),
    B(overlap_grad_reduce, "1",
      "data parallel: all-reduce each layer's gradients during backward"),
};
#define N_SPECS (sizeof(specs) / sizeof(*specs))

static const struct spec *
find(const char *name, size_t len)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (strlen(specs[i].name) == len &&
            strncmp(specs[i].name, name, len) == 0)
            return &specs[i];
    return NULL;
}

/* Set one argument from text; where names the source for errors. */
static int
set(struct train_args *a, const struct spec *s, const char *v,
    const char *where)
{
    char *end;
    void *p = (char *)a + s->off;

    errno = 0;
    switch (s->kind) {
    case K_STR: {
        char *d = strdup(v);

        if (d == NULL)
            return -1;
        free(*(char **)p);
        *(char **)p = d;
        return 0;
    }
    case K_INT: {
        long x = strtol(v, &end, 10);

        if (*v == '\0' || *end || errno || x < -2147483647L - 1 ||
            x > 2147483647L)
            break;
        *(int *)p = (int)x;
        return 0;
    }
    case K_DBL: {
        double x = strtod(v, &end);

        if (*v == '\0' || *end || errno || !isfinite(x))
            break;
        *(double *)p = x;
        return 0;
    }
    case K_BOOL:
        if (!strcmp(v, "1") || !strcasecmp(v, "true")) {
            *(int *)p = 1;
            return 0;
        }
        if (!strcmp(v, "0") || !strcasecmp(v, "false")) {
            *(int *)p = 0;
            return 0;
        }
        break;
    }
    fprintf(stderr, "train: %s: bad value '%s' for %s\n", where, v, s->name);
    return -1;
}

static int
read_config(struct train_args *a, const char *path)
{
    struct json_object *j = json_object_from_file(path);
    int rc = 0;

    if (j == NULL || !json_object_is_type(j, json_type_object)) {
        fprintf(stderr, "train: cannot read config file '%s': %s\n", path,
                j ? "not a JSON object" : json_util_get_last_err());
        json_object_put(j);
        return -1;
    }
    json_object_object_foreach(j, key, val)
    {
        const struct spec *s = find(key, strlen(key));

        if (s == NULL) {
            fprintf(stderr, "train: %s: unknown key '%s'\n", path, key);
            rc = -1;
            break;
        }
        if (json_object_is_type(val, json_type_boolean))
            rc = set(a, s, json_object_get_boolean(val) ? "1" : "0", path);
        else if (json_object_is_type(val, json_type_null))
            continue;
        else
            rc = set(a, s, json_object_get_string(val), path);
        if (rc < 0)
            break;
    }
    json_object_put(j);
    return rc;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: train [--config FILE] [--NAME VALUE ...]\n\n");
    for (size_t i = 0; i < N_SPECS; i++)
        fprintf(f, "  --%-30s %s%s%s%s\n", specs[i].name,
                specs[i].help ? specs[i].help : "", specs[i].dflt ? " [" : "",
                specs[i].dflt ? specs[i].dflt : "", specs[i].dflt ? "]" : "");
    fprintf(f, "\nSee train(1).\n");
}

int
args_parse(struct train_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof(*a));
    for (size_t i = 0; i < N_SPECS; i++)
        if (specs[i].dflt && set(a, &specs[i], specs[i].dflt, "default") < 0)
            return -1;
    /* The config file first, so the command line wins. */
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;

        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(argv[i], "--config"))
            v = i + 1 < argc ? argv[++i] : "";
        else if (!strncmp(argv[i], "--config=", 9))
            v = argv[i] + 9;
        if (v && read_config(a, v) < 0)
            return -1;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq, *v;
        const struct spec *s;

        if (!strcmp(arg, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(arg, "--config=", 9))
            continue;
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "train: unexpected argument '%s'\n", arg);
            usage(stderr);
            return -1;
        }
        arg += 2;
        eq = strchr(arg, '=');
        s = find(arg, eq ? (size_t)(eq - arg) : strlen(arg));
        if (s == NULL) {
            fprintf(stderr, "train: unknown flag '%s'\n", argv[i]);
            return -1;
        }
        if (eq)
            v = eq + 1;
        else if (s->kind == K_BOOL &&
                 (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)))
            v = "1";
        else if (i + 1 < argc)
            v = argv[++i];
        else {
            fprintf(stderr, "train: %s needs a value\n", argv[i]);
            return -1;
        }
        if (set(a, s, v, "command line") < 0)
            return -1;
    }
    return 0;
}

void
args_release(struct train_args *a)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (specs[i].kind == K_STR) {
            char **p = (char **)((char *)a + specs[i].off);

            free(*p);
            *p = NULL;
        }
}

static void
value_text(const struct train_args *a, const struct spec *s, char *buf,
           size_t len)
{
    const void *p = (const char *)a + s->off;

    switch (s->kind) {
    case K_STR:
        snprintf(buf, len, "%s",
                 *(char *const *)p ? *(char *const *)p : "None");
        break;
    case K_INT:
        snprintf(buf, len, "%d", *(const int *)p);
        break;
    case K_DBL:
        snprintf(buf, len, "%.17g", *(const double *)p);
        break;
    case K_BOOL:
        snprintf(buf, len, "%s", *(const int *)p ? "True" : "False");
        break;
    }
}

void
args_print(const struct train_args *a, FILE *out, const char *prefix)
{
    char v[4096];

    for (size_t i = 0; i < N_SPECS; i++) {
        value_text(a, &specs[i], v, sizeof(v));
        fprintf(out, "%s%-20s:%s\n", prefix, specs[i].name, v);
    }
}

char *
args_to_json(const struct train_args *a)
{
    struct json_object *j = json_object_new_object();
    char *out;

    if (j == NULL)
        return NULL;
    for (size_t i = 0; i < N_SPECS; i++) {
        const void *p = (const char *)a + specs[i].off;
        struct json_object *v = NULL;

        switch (specs[i].kind) {
        case K_STR:
            v = *(char *const *)p ? json_object_new_string(*(char *const *)p)
                                  : NULL;
            break;
        case K_INT:
            v = json_object_new_int(*(const int *)p);
            break;
        case K_DBL:
            v = json_object_new_double(*(const double *)p);
            break;
        case K_BOOL:
            v = json_object_new_boolean(*(const int *)p);
            break;
        }
        json_object_object_add(j, specs[i].name, v);
    }
    out = strdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
    json_object_put(j);
    return out;
}
