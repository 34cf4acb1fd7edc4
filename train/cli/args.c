/* SPDX-License-Identifier: MIT */
/*
 * args.c: the `train` tool's arguments (see args.h), table-driven: each
 * flag's type, default, range or choices and help; then the aliases,
 * PaddleNLP's TrainingArguments (and Megatron-LM's) names mapped to the
 * flag of the same meaning, accepted as having no effect here, or refused
 * with the reason.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "model/config.h"
#include "banned.h"

enum kind { K_STR, K_INT, K_DBL, K_BOOL };

enum {
    LO_OPEN = 1,  /* the range excludes lo */
    HI_OPEN = 2,  /* the range excludes hi */
    REQUIRED = 4, /* a string flag that must be given */
};

struct spec {
    const char *name;
    enum kind kind;
    size_t off;
    const char *dflt;    /* NULL: none */
    const char *help;    /* NULL: none */
    double lo, hi;       /* numbers: the range (inclusive unless *_OPEN) */
    unsigned flags;      /* LO_OPEN, HI_OPEN, REQUIRED */
    const char *choices; /* strings: "a|b|c" (NULL: any) */
};

#define OFF(n) offsetof(struct train_args, n)
#define ANY    (-HUGE_VAL), HUGE_VAL
#define S(n, d, h)                            \
    {                                         \
#        n, K_STR, OFF(n), d, h, ANY, 0, NULL \
    }
#define SR(n, h)                                        \
    {                                                   \
#        n, K_STR, OFF(n), NULL, h, ANY, REQUIRED, NULL \
    }
#define SC(n, d, c, h)                                      \
    {                                                       \
#        n, K_STR, OFF(n), d, h, ANY, (d) ? 0 : REQUIRED, c \
    }
#define I(n, d, lo, hi, h)                       \
    {                                            \
#        n, K_INT, OFF(n), d, h, lo, hi, 0, NULL \
    }
#define D(n, d, lo, hi, f, h)                    \
    {                                            \
#        n, K_DBL, OFF(n), d, h, lo, hi, f, NULL \
    }
#define B(n, d, h)                             \
    {                                          \
#        n, K_BOOL, OFF(n), d, h, ANY, 0, NULL \
    }
#define BIG INT_MAX

static const struct spec specs[] = {
    SC(model_type, NULL, "ernie|gpt", "ernie or gpt"),
    SR(model_name_or_path, "config.json, or a directory holding one"),
    S(config_name, NULL, "the model's config.json if not model_name_or_path's"),
    S(tokenizer_name_or_path, NULL, "vocab.txt or its directory (ERNIE)"),
    B(continue_training, "0", "load the weights of model_name_or_path"),
    SR(input_dir,
       "data prefix, directory, \"w1 prefix1 w2 prefix2 ...\" or @FILE"),
    SR(output_dir, "logs and checkpoints (made with its parents)"),
    S(split, "949,50,1", "train,valid,test document split"),
    B(binary_head, "1", "ERNIE: sentence-order prediction (else MLM only)"),
    I(max_seq_len, "1024", 4, BIG, "tokens per sequence"),
    I(micro_batch_size, "8", 1, BIG, "sequences per micro-step"),
    I(global_batch_size, "0", 0, BIG, "sequences per step (0: micro x dp)"),
    I(gradient_accumulation_steps, "0", 0, BIG,
      "micro-steps per step (0: from global_batch_size)"),
    I(per_device_eval_batch_size, "0", 0, BIG,
      "evaluation micro-batch (0: micro_batch_size, the only one)"),
    D(weight_decay, "0.0", 0, HUGE_VAL, 0,
      "AdamW decay (not on biases and norms)"),
    D(grad_clip, "0.0", 0, HUGE_VAL, 0, "global-norm clipping (0: off)"),
    D(max_lr, "1e-5", 0, HUGE_VAL, 0, "peak learning rate"),
    D(min_lr, "5e-5", 0, HUGE_VAL, 0, "final learning rate"),
    D(warmup_rate, "0.01", 0, 1, 0, "warmup steps = warmup_rate * max_steps"),
    I(warmup_steps, "0", 0, BIG, "warmup steps (0: from warmup_rate)"),
    D(adam_beta1, "0.9", 0, 1, HI_OPEN, NULL),
    D(adam_beta2, "0.999", 0, 1, HI_OPEN, NULL),
    D(adam_epsilon, "1e-8", 0, HUGE_VAL, 0, NULL),
    I(max_steps, "500000", 1, BIG, "optimizer steps"),
    I(decay_steps, "360000", 0, BIG, "end of the decay (0: max_steps)"),
    I(checkpoint_steps, "500", 1, BIG, "rolling model_last/ every N steps"),
    I(save_steps, "500", 1, BIG, "model_<step>/ every N steps"),
    I(logging_freq, "1", 1, BIG, "a log line every N steps"),
    S(report_to, "all",
      "event files: tensorboard, visualdl, all or none (comma-separated)"),
    S(logging_dir, NULL, "where the event files go (default: output_dir/runs)"),
    I(eval_freq, "500", 1, BIG, "validation every N steps"),
    I(eval_iters, "10", 0, BIG, "validation micro-batches (x accumulation)"),
    B(do_train, "1",
      "train (false, or --do_eval without --do_train: evaluate a checkpoint)"),
    B(do_eval, "1", "evaluate the valid split every eval_freq steps"),
    B(do_predict, "1", "evaluate the test split at the end"),
    D(hidden_dropout_prob, "-1", -HUGE_VAL, 1, HI_OPEN,
      "override the config's (-1: keep)"),
    D(attention_probs_dropout_prob, "-1", -HUGE_VAL, 1, HI_OPEN,
      "override the config's (-1: keep)"),
    I(seed, "1234", 0, BIG, "data and dropout seed"),
    B(check_accuracy, "0", "dropouts off"),
    SC(device, "auto", "cpu|cuda|auto",
       "cpu, cuda or auto (CUDA when built with it and a GPU is visible)"),
    B(use_amp, "0",
      "mixed precision: compute in --amp_dtype, fp32 master weights"),
    SC(amp_dtype, "bfloat16", "bfloat16|float16", "--use_amp's compute dtype"),
    SC(fp16_opt_level, "O2", "O1|O2",
       "AMP level (both: a 16-bit compute copy, fp32 master weights)"),
    D(scale_loss, "32768", 0, HUGE_VAL, LO_OPEN,
      "float16: the initial loss scale"),
    B(use_dynamic_loss_scaling, "1",
      "float16: grow and shrink the loss scale (else keep it)"),
    I(incr_every_n_steps, "2000", 1, BIG,
      "float16: grow the scale after N finite steps in a row"),
    I(decr_every_n_nan_or_inf, "1", 1, BIG,
      "float16: shrink it after N non-finite steps (skipped)"),
    D(incr_ratio, "2", 1, HUGE_VAL, LO_OPEN, "float16: the growth factor"),
    D(decr_ratio, "0.5", 0, 1, LO_OPEN | HI_OPEN, "float16: the shrink factor"),
    SC(lr_decay_style, "auto", "linear|cosine|auto",
       "linear, cosine or auto (ERNIE linear, GPT cosine)"),
    D(masked_lm_prob, "0.15", 0, 1, 0, NULL),
    D(short_seq_prob, "0.1", 0, 1, 0, NULL),
    B(favor_longer_ngram, "0", NULL),
    B(geometric_ngram, "0", "n-gram sizes min(geometric(0.2), max_ngrams)"),
    I(max_ngrams, "3", 1, BIG, NULL),
    I(threads, "0", 0, BIG, "CPU threads (0: OpenMP's default)"),
    D(peak_gflops, "0", 0, HUGE_VAL, 0,
      "peak for MFU (0: the CPU's FP32 peak from /proc/cpuinfo)"),
    S(cache_dir, NULL, "index caches (default: beside the data)"),
    I(dp, "0", 0, BIG,
      "data-parallel degree (0: the ranks left by the others)"),
    I(tp, "1", 1, BIG, "tensor-parallel degree"),
    I(pp, "1", 1, BIG, "pipeline-parallel degree"),
    I(sharding_degree, "1", 1, BIG, "sharding (ZeRO) degree"),
    I(sharding_stage, "1", 1, 3, "sharding stage: 1, 2 or 3"),
    SC(placement, "inter_first", "inter_first|intra_first",
       "rank order: inter_first (tp, sharding, dp, pp: pipeline stages "
       "across nodes) or intra_first (tp, pp, sharding, dp)"),
    SC(comm_backend, "auto", "auto|nccl|host",
       "several ranks' collectives: auto (NCCL on GPUs, else MPI or TCP), "
       "nccl, or host (MPI or TCP through host memory: ranks may share a "
       "GPU)"),
    D(comm_timeout, "600", 0, HUGE_VAL, 0,
      "seconds a collective or the rendezvous may wait (0: forever)"),
    B(use_recompute, "0", "recompute activations in the backward pass"),
    SC(recompute_granularity, "full", "full|core_attn",
       "full (whole layers) or core_attn (attention probabilities)"),
    B(overlap_grad_reduce, "1",
      "data parallel: all-reduce each layer's gradients during backward"),
};
#define N_SPECS (sizeof(specs) / sizeof(*specs))

/* ------------------------------------------------------------------------ */
/* Aliases                                                                   */

enum alias_kind {
    AL_SAME,    /* the target flag, the same value */
    AL_DEGREE,  /* a parallel degree: PaddleNLP's -1 (unset) is 1 */
    AL_FALSE,   /* a boolean accepted false only (why: true's reason) */
    AL_TRUE,    /* a boolean accepted true only */
    AL_IGNORED, /* accepted, no effect here (why) */
    AL_REFUSED, /* refused (why) */
    AL_CHOICE,  /* words mapped to target values: arg "from=to|..." */
    AL_EPOCHS,  /* num_train_epochs: only beside max_steps */
    AL_AMP,     /* a boolean: true sets use_amp and amp_dtype = arg */
};

struct alias {
    const char *name;
    enum alias_kind kind;
    const char *target; /* the flag set, or NULL */
    const char *arg;    /* AL_CHOICE: "word=value|..." (value "": nothing) */
    const char *why;
    int is_bool; /* takes a boolean (a bare flag means true) */
};

static const struct alias aliases[] = {
    /* PaddleNLP's TrainingArguments */
    { "per_device_train_batch_size", AL_SAME, "micro_batch_size", NULL, NULL,
      0 },
    { "learning_rate", AL_SAME, "max_lr", NULL, NULL, 0 },
    { "logging_steps", AL_SAME, "logging_freq", NULL, NULL, 0 },
    { "eval_steps", AL_SAME, "eval_freq", NULL, NULL, 0 },
    { "warmup_ratio", AL_SAME, "warmup_rate", NULL, NULL, 0 },
    { "max_grad_norm", AL_SAME, "grad_clip", NULL, NULL, 0 },
    { "recompute", AL_SAME, "use_recompute", NULL, NULL, 1 },
    { "tensor_parallel_degree", AL_DEGREE, "tp", NULL, NULL, 0 },
    { "pipeline_parallel_degree", AL_DEGREE, "pp", NULL, NULL, 0 },
    { "sharding_parallel_degree", AL_DEGREE, "sharding_degree", NULL, NULL, 0 },
    { "sharding", AL_CHOICE, "sharding_stage", "=|stage1=1|stage2=2|stage3=3",
      "the stages are stage1, stage2 and stage3, without offload", 0 },
    { "lr_scheduler_type", AL_CHOICE, "lr_decay_style",
      "linear=linear|cosine=cosine",
      "the schedules here are PaddleNLP's linear and cosine annealing with "
      "warmup (--lr_decay_style)",
      0 },
    { "evaluation_strategy", AL_CHOICE, "do_eval", "steps=1|no=0",
      "evaluation runs every --eval_steps optimizer steps", 0 },
    { "save_strategy", AL_CHOICE, NULL,
      "steps=", "checkpoints are saved every --save_steps optimizer steps", 0 },
    { "logging_strategy", AL_CHOICE, NULL, "steps=",
      "a log line is written every --logging_steps optimizer steps", 0 },
    { "optim", AL_CHOICE, NULL, "adamw=", "the optimizer is AdamW", 0 },
    { "fp16", AL_AMP, NULL, "float16", NULL, 1 },
    { "bf16", AL_AMP, NULL, "bfloat16", NULL, 1 },
    { "fp16_full_eval", AL_FALSE, NULL, NULL,
      "evaluation computes as training does (--use_amp)", 1 },
    { "bf16_full_eval", AL_FALSE, NULL, NULL,
      "evaluation computes as training does (--use_amp)", 1 },
    { "amp_master_grad", AL_IGNORED, NULL, NULL,
      "the gradients are fp32 here whatever --use_amp", 1 },
    /* Paddle's GradScaler's name of --scale_loss */
    { "init_loss_scaling", AL_SAME, "scale_loss", NULL, NULL, 0 },
    { "overwrite_output_dir", AL_FALSE, NULL, NULL,
      "a run resumes from output_dir/model_last; start afresh in another "
      "--output_dir, or remove the old one",
      1 },
    { "resume_from_checkpoint", AL_REFUSED, NULL, NULL,
      "a run resumes from output_dir/model_last by itself; to start from "
      "other weights use --continue_training --model_name_or_path DIR",
      0 },
    { "save_total_limit", AL_REFUSED, NULL, NULL,
      "the model_<step> checkpoints are never removed; pick --save_steps", 0 },
    { "num_train_epochs", AL_EPOCHS, NULL, NULL,
      "this trainer counts optimizer steps: give --max_steps (which "
      "overrides num_train_epochs in PaddleNLP too)",
      0 },
    { "dataloader_num_workers", AL_IGNORED, NULL, NULL,
      "the samples are built by the OpenMP threads (--threads)", 0 },
    { "disable_tqdm", AL_IGNORED, NULL, NULL, "there is no progress bar", 1 },
    { "log_on_each_node", AL_IGNORED, NULL, NULL, "rank 0 logs", 1 },
    { "skip_memory_metrics", AL_IGNORED, NULL, NULL,
      "the memory per rank is logged at the start", 1 },
    { "skip_profile_timer", AL_IGNORED, NULL, NULL, "there is no profiler", 1 },
    { "local_rank", AL_IGNORED, NULL, NULL,
      "the ranks come from mpirun or srun", 0 },
    /* PaddleNLP's run_pretrain arguments */
    { "min_learning_rate", AL_SAME, "min_lr", NULL, NULL, 0 },
    { "max_seq_length", AL_SAME, "max_seq_len", NULL, NULL, 0 },
    { "tokenizer_name", AL_SAME, "tokenizer_name_or_path", NULL, NULL, 0 },
    { "data_cache", AL_SAME, "cache_dir", NULL, NULL, 0 },
    { "share_folder", AL_IGNORED, NULL, NULL,
      "index caches are built once for all ranks that share a directory, "
      "under a lock",
      1 },
    { "data_impl", AL_IGNORED, NULL, NULL,
      "the format is read from the files (.bin/.idx or _ids.npy/_idx.npz)", 0 },
    { "skip_warmup", AL_IGNORED, NULL, NULL,
      "the data files are memory-mapped, never read ahead", 1 },
    /* Megatron-LM's */
    { "data_cache_path", AL_SAME, "cache_dir", NULL, NULL, 0 },
};
#define N_ALIASES (sizeof(aliases) / sizeof(*aliases))

/* ------------------------------------------------------------------------ */
/* Parsing                                                                   */

struct parse {
    struct train_args *a;
    unsigned char given[N_SPECS]; /* set from a file or the command line */
    const char *epochs;           /* num_train_epochs as named, or NULL */
    char epochs_shown[PATH_MAX + 160];
    const char *sharding; /* how the sharding alias set a stage, or NULL */
    char sharding_shown[PATH_MAX + 200];
    int do_eval_named; /* --do_eval itself was given (not an alias) */
    char *err;
    size_t errlen;
};

static int __attribute__((format(printf, 2, 3)))
fail(struct parse *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->err, p->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const struct spec *
find_spec(const char *name)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (strcmp(specs[i].name, name) == 0)
            return &specs[i];
    return NULL;
}

static const struct alias *
find_alias(const char *name)
{
    for (size_t i = 0; i < N_ALIASES; i++)
        if (strcmp(aliases[i].name, name) == 0)
            return &aliases[i];
    return NULL;
}

/* The optimal string alignment distance (Levenshtein with adjacent
 * transpositions), for the names of flags: short. */
static size_t
distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t d[64][64];

    if (la >= 64 || lb >= 64)
        return 64;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t c = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j - 1] + c;

            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

static const char *
known_name(size_t i)
{
    return i < N_SPECS ? specs[i].name : aliases[i - N_SPECS].name;
}

/* " (did you mean --x?)" for the known names nearest to name: within a
 * third of its length, or else those that contain it; "" if none. */
static void
suggest(const char *name, const char *dash, char *out, size_t cap)
{
    size_t n = N_SPECS + N_ALIASES, best = (size_t)-1, len = 0, n_pick = 0;
    size_t limit = strlen(name) / 3 > 1 ? strlen(name) / 3 : 1;
    const char *pick[3];

    for (size_t i = 0; i < n; i++) {
        size_t d = distance(name, known_name(i));

        best = d < best ? d : best;
    }
    for (size_t i = 0; i < n && n_pick < 3; i++)
        if (best <= limit ? distance(name, known_name(i)) == best
                          : strlen(name) >= 4 && strstr(known_name(i), name))
            pick[n_pick++] = known_name(i);
    out[0] = '\0';
    for (size_t k = 0; k < n_pick; k++) {
        int w = snprintf(out + len, cap - len, "%s%s%s",
                         k == 0            ? "; did you mean "
                         : k + 1 == n_pick ? " or "
                                           : ", ",
                         dash, pick[k]);

        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
    if (n_pick > 0 && len + 2 < cap)
        snprintf(out + len, cap - len, "?");
}

/* The range of s in words: "at least 1", "in [0, 1)". */
static void
range_text(const struct spec *s, char *out, size_t cap)
{
    if (s->hi == HUGE_VAL || (s->kind == K_INT && s->hi >= INT_MAX))
        snprintf(out, cap, "%s %g", s->flags & LO_OPEN ? "above" : "at least",
                 s->lo);
    else if (s->lo == -HUGE_VAL)
        snprintf(out, cap, "%s %g", s->flags & HI_OPEN ? "below" : "at most",
                 s->hi);
    else if (s->kind == K_INT && s->hi - s->lo <= 3) {
        size_t len = 0;

        for (double v = s->lo; v <= s->hi && len < cap; v++)
            len += (size_t)snprintf(out + len, cap - len, "%s%g",
                                    v == s->lo   ? ""
                                    : v == s->hi ? " or "
                                                 : ", ",
                                    v);
    } else if (s->kind == K_INT)
        snprintf(out, cap, "between %g and %g", s->lo, s->hi);
    else
        snprintf(out, cap, "in %c%g, %g%c", s->flags & LO_OPEN ? '(' : '[',
                 s->lo, s->hi, s->flags & HI_OPEN ? ')' : ']');
}

static bool
in_range(const struct spec *s, double v)
{
    return (s->flags & LO_OPEN ? v > s->lo : v >= s->lo) &&
           (s->flags & HI_OPEN ? v < s->hi : v <= s->hi);
}

/* The choices "a|b|c" as "a, b or c". */
static void
choices_text(const char *c, char *out, size_t cap)
{
    size_t len = 0, n = 1;

    for (const char *q = c; *q; q++)
        n += *q == '|';
    for (size_t k = 0; k < n && len < cap; k++) {
        const char *end = strchr(c, '|');
        size_t w = end ? (size_t)(end - c) : strlen(c);
        int r = snprintf(out + len, cap - len, "%s%.*s",
                         k == 0       ? ""
                         : k + 1 == n ? " or "
                                      : ", ",
                         (int)w, c);

        if (r < 0)
            break;
        len += (size_t)r;
        c = end ? end + 1 : c + w;
    }
}

static bool
is_choice(const char *choices, const char *v)
{
    size_t n = strlen(v);

    for (const char *c = choices; c != NULL;) {
        const char *end = strchr(c, '|');
        size_t w = end ? (size_t)(end - c) : strlen(c);

        if (w == n && strncmp(c, v, n) == 0)
            return true;
        c = end ? end + 1 : NULL;
    }
    return false;
}

static int
parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "true")) {
        *out = 1;
        return 0;
    }
    if (!strcmp(v, "0") || !strcasecmp(v, "false")) {
        *out = 0;
        return 0;
    }
    return -1;
}

/* Set flag s from text v; shown is how the user named it ("--max_steps"
 * or "'run.json': max_steps"), for messages. */
static int
set(struct parse *p, const struct spec *s, const char *v, const char *shown)
{
    void *field = (char *)p->a + s->off;
    char range[96];
    char *end;

    errno = 0;
    switch (s->kind) {
    case K_STR: {
        char *d;

        /* PaddleNLP's --device gpu is our cuda. */
        if (s->off == OFF(device) && strcmp(v, "gpu") == 0)
            v = "cuda";
        if (s->choices != NULL && !is_choice(s->choices, v)) {
            choices_text(s->choices, range, sizeof(range));
            return fail(p, "%s '%s': must be %s", shown, v, range);
        }
        if ((d = strdup(v)) == NULL)
            return fail(p, "out of memory");
        free(*(char **)field);
        *(char **)field = d;
        break;
    }
    case K_INT: {
        long x = strtol(v, &end, 10);

        if (*v == '\0' || *end || errno || x < INT_MIN || x > INT_MAX)
            return fail(p, "%s '%s': not an integer", shown, v);
        if (!in_range(s, (double)x)) {
            range_text(s, range, sizeof(range));
            return fail(p, "%s %ld: must be %s", shown, x, range);
        }
        *(int *)field = (int)x;
        break;
    }
    case K_DBL: {
        double x = strtod(v, &end);

        if (*v == '\0' || *end || errno || !isfinite(x))
            return fail(p, "%s '%s': not a finite number", shown, v);
        if (!in_range(s, x)) {
            range_text(s, range, sizeof(range));
            return fail(p, "%s %s: must be %s", shown, v, range);
        }
        *(double *)field = x;
        break;
    }
    case K_BOOL:
        if (parse_bool(v, (int *)field) < 0)
            return fail(p, "%s '%s': must be true or false (or 1 or 0)", shown,
                        v);
        break;
    }
    p->given[s - specs] = 1;
    return 0;
}

/* Add "shown has no effect here: why" to the notes. */
static int
note(struct parse *p, const char *shown, const char *why)
{
    size_t old = p->a->notes ? strlen(p->a->notes) : 0;
    size_t add = strlen(shown) + strlen(why) + 32;
    char *n = (char *)realloc(p->a->notes, old + add);

    if (n == NULL)
        return fail(p, "out of memory");
    snprintf(n + old, add, "%s has no effect here: %s\n", shown, why);
    p->a->notes = n;
    return 0;
}

/* Apply alias al with text v (see set()). */
static int
set_alias(struct parse *p, const struct alias *al, const char *v,
          const char *shown)
{
    const struct spec *t = al->target ? find_spec(al->target) : NULL;
    char text[96];
    int b;

    switch (al->kind) {
    case AL_SAME:
        return set(p, t, v, shown);
    case AL_DEGREE:
        if (strcmp(v, "-1") == 0)
            return 0; /* PaddleNLP's "not used": ours stays 1 */
        return set(p, t, v, shown);
    case AL_FALSE:
    case AL_TRUE:
        if (parse_bool(v, &b) < 0)
            return fail(p, "%s '%s': must be true or false (or 1 or 0)", shown,
                        v);
        if (b != (al->kind == AL_TRUE))
            return fail(p, "%s %s: not supported: %s", shown,
                        b ? "true" : "false", al->why);
        return 0;
    case AL_IGNORED:
        return note(p, shown, al->why);
    case AL_REFUSED:
        return fail(p, "%s: not supported: %s", shown, al->why);
    case AL_EPOCHS:
        snprintf(p->epochs_shown, sizeof(p->epochs_shown), "%s", shown);
        p->epochs = p->epochs_shown;
        return 0;
    case AL_AMP: /* PaddleNLP's --fp16, --bf16 */
        if (parse_bool(v, &b) < 0)
            return fail(p, "%s '%s': must be true or false (or 1 or 0)", shown,
                        v);
        if (!b)
            return 0;
        if (set(p, find_spec("use_amp"), "1", shown) < 0)
            return -1;
        return set(p, find_spec("amp_dtype"), al->arg, shown);
    case AL_CHOICE:
        for (const char *c = al->arg; c != NULL;) {
            const char *eq = strchr(c, '='), *end = strchr(c, '|');
            size_t w = (size_t)(eq - c),
                   vl = end ? (size_t)(end - eq - 1) : strlen(eq + 1);

            if (strlen(v) == w && strncmp(c, v, w) == 0) {
                if (vl == 0 || t == NULL)
                    return 0;
                snprintf(text, sizeof(text), "%.*s", (int)vl, eq + 1);
                if (t->off == OFF(sharding_stage)) {
                    snprintf(p->sharding_shown, sizeof(p->sharding_shown),
                             "%s %s", shown, v);
                    p->sharding = p->sharding_shown;
                }
                return set(p, t, text, shown);
            }
            c = end ? end + 1 : NULL;
        }
        return fail(p, "%s '%s': not supported: %s", shown, v, al->why);
    }
    return 0;
}

/* Set the flag or alias `name` (dashes read as underscores) to v. */
static int
set_name(struct parse *p, const char *name, const char *v, const char *shown,
         const char *dash)
{
    const struct spec *s = find_spec(name);
    const struct alias *al = s ? NULL : find_alias(name);
    char hint[160];

    if (s != NULL && s->off == OFF(do_eval))
        p->do_eval_named = 1;
    if (s != NULL)
        return set(p, s, v, shown);
    if (al != NULL)
        return set_alias(p, al, v, shown);
    suggest(name, dash, hint, sizeof(hint));
    return fail(p, "%s: unknown %s%s", shown, dash[0] ? "flag" : "key", hint);
}

/* name[0..len) with '-' read as '_', into out. */
static void
normalize(const char *name, size_t len, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", (int)len, name);
    for (char *q = out; *q; q++)
        if (*q == '-')
            *q = '_';
}

static int
read_config(struct parse *p, const char *path)
{
    struct config_err ce;
    struct json_object *j;
    int rc = 0;

    if (path[0] == '\0')
        return fail(p, "--config needs a file");
    j = config_json_object(path, &ce);
    if (j == NULL)
        return fail(p, "--config: %s", ce.msg);
    json_object_object_foreach(j, key, val)
    {
        enum json_type t = json_object_get_type(val);
        char name[128], shown[PATH_MAX + 160];
        const char *v;

        normalize(key, strlen(key), name, sizeof(name));
        snprintf(shown, sizeof(shown), "'%s': %s", path, key);
        if (t == json_type_null)
            continue; /* the default */
        if (t == json_type_array || t == json_type_object) {
            rc = fail(p, "%s: must be a string, number or boolean, not %s",
                      shown, json_type_to_name(t));
            break;
        }
        v = t == json_type_boolean
                ? (json_object_get_boolean(val) ? "true" : "false")
                : json_object_get_string(val);
        if ((rc = set_name(p, name, v, shown, "")) < 0)
            break;
    }
    json_object_put(j);
    return rc;
}

/* What the flags say together, once all are read. */
static int
check_parsed(struct parse *p)
{
    const struct train_args *a = p->a;

    for (size_t i = 0; i < N_SPECS; i++)
        if ((specs[i].flags & REQUIRED) &&
            *(char *const *)((const char *)a + specs[i].off) == NULL) {
            char c[64] = "";

            if (specs[i].choices != NULL)
                choices_text(specs[i].choices, c, sizeof(c));
            return fail(p, "--%s is required%s%s%s", specs[i].name,
                        c[0] ? " (" : "", c, c[0] ? ")" : "");
        }
    if (p->epochs != NULL) {
        const struct alias *al = find_alias("num_train_epochs");

        if (!p->given[find_spec("max_steps") - specs])
            return fail(p, "%s: not supported without --max_steps: %s",
                        p->epochs, al->why);
        if (note(p, p->epochs, "--max_steps is given (as in PaddleNLP)") < 0)
            return -1;
    }
    if (a->per_device_eval_batch_size != 0 &&
        a->per_device_eval_batch_size != a->micro_batch_size)
        return fail(p,
                    "--per_device_eval_batch_size %d: not supported: "
                    "evaluation reads micro-batches of --micro_batch_size "
                    "(per_device_train_batch_size) %d",
                    a->per_device_eval_batch_size, a->micro_batch_size);
    /* PaddleNLP's run_pretrain.py trains only with --do_train: --do_eval
     * without it evaluates a checkpoint.  Without either, train trains. */
    if (!p->given[find_spec("do_train") - specs])
        p->a->do_train = !(p->do_eval_named && a->do_eval);
    if (!a->do_train && !a->do_eval && !a->do_predict)
        return fail(p, "--do_train false with --do_eval false and "
                       "--do_predict false: nothing to do");
    if (!a->do_train && a->eval_iters == 0)
        return fail(p, "--eval_iters 0: an evaluation without training "
                       "reads at least one micro-batch");
    if (p->sharding != NULL && !p->given[find_spec("sharding_degree") - specs])
        return fail(p,
                    "%s: give the degree too (--sharding_parallel_degree N "
                    "or --sharding_degree N); PaddleNLP's default, every "
                    "data-parallel rank, is not taken here",
                    p->sharding);
    return 0;
}

void
args_usage(FILE *f)
{
    fprintf(f, "usage: train [--config FILE] --model_type ernie|gpt "
               "--model_name_or_path PATH\n"
               "             --input_dir SPEC --output_dir DIR [--NAME VALUE "
               "...]\n\n");
    for (size_t i = 0; i < N_SPECS; i++)
        fprintf(f, "  --%-30s %s%s%s%s%s\n", specs[i].name,
                specs[i].help ? specs[i].help : "",
                specs[i].flags & REQUIRED ? " (required)" : "",
                specs[i].dflt ? " [" : "", specs[i].dflt ? specs[i].dflt : "",
                specs[i].dflt ? "]" : "");
    fprintf(f, "\nPaddleNLP's and Megatron-LM's names:\n");
    for (size_t i = 0; i < N_ALIASES; i++) {
        const struct alias *al = &aliases[i];

        if (al->kind == AL_SAME || al->kind == AL_DEGREE)
            fprintf(f, "  --%-30s = --%s\n", al->name, al->target);
        else if (al->kind == AL_CHOICE && al->target != NULL)
            fprintf(f, "  --%-30s sets --%s\n", al->name, al->target);
        else
            fprintf(f, "  --%-30s %s\n", al->name,
                    al->kind == AL_IGNORED  ? "accepted, no effect"
                    : al->kind == AL_FALSE  ? "false only"
                    : al->kind == AL_TRUE   ? "true only"
                    : al->kind == AL_EPOCHS ? "with --max_steps only"
                    : al->kind == AL_CHOICE ? "its default only"
                                            : "refused");
    }
    fprintf(f, "\nSee train(1).\n");
}

int
args_parse(struct train_args *a, int argc, char **argv, char *err,
           size_t errlen)
{
    struct parse p;

    memset(a, 0, sizeof(*a));
    memset(&p, 0, sizeof(p));
    p.a = a;
    p.err = err;
    p.errlen = errlen;
    for (size_t i = 0; i < N_SPECS; i++)
        if (specs[i].dflt && set(&p, &specs[i], specs[i].dflt, "default") < 0)
            return ARGS_ERROR;
    memset(p.given, 0, sizeof(p.given));
    if (argc <= 1)
        return ARGS_EMPTY;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            args_usage(stdout);
            return ARGS_HELP;
        }
    /* The config files first, so the command line wins. */
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;

        if (!strcmp(argv[i], "--config"))
            v = i + 1 < argc ? argv[++i] : "";
        else if (!strncmp(argv[i], "--config=", 9))
            v = argv[i] + 9;
        if (v && read_config(&p, v) < 0)
            return ARGS_ERROR;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq, *v;
        const struct spec *s;
        const struct alias *al;
        char name[128];
        size_t len;
        int is_bool;

        if (!strcmp(arg, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(arg, "--config=", 9))
            continue;
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            fail(&p,
                 "unexpected argument '%s': flags are --name value or "
                 "--name=value",
                 arg);
            return ARGS_ERROR;
        }
        arg += 2;
        eq = strchr(arg, '=');
        len = eq ? (size_t)(eq - arg) : strlen(arg);
        normalize(arg, len, name, sizeof(name));
        s = find_spec(name);
        al = s ? NULL : find_alias(name);
        is_bool = (s && s->kind == K_BOOL) || (al && al->is_bool);
        if (eq)
            v = eq + 1;
        else if (is_bool && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2)))
            v = "1";
        else if (i + 1 < argc && (s || al))
            v = argv[++i];
        else if (s || al) {
            fail(&p, "%.*s needs a value", (int)(len + 2), argv[i]);
            return ARGS_ERROR;
        } else {
            v = "";
        }
        {
            char shown[160];

            snprintf(shown, sizeof(shown), "--%.*s", (int)len, arg);
            if (set_name(&p, name, v, shown, "--") < 0)
                return ARGS_ERROR;
        }
    }
    return check_parsed(&p) < 0 ? ARGS_ERROR : ARGS_OK;
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
    free(a->notes);
    a->notes = NULL;
}

/* ------------------------------------------------------------------------ */
/* Printing                                                                  */

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
        config_format_double(buf, len, *(const double *)p);
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
        char num[40];

        switch (specs[i].kind) {
        case K_STR:
            v = *(char *const *)p ? json_object_new_string(*(char *const *)p)
                                  : NULL;
            break;
        case K_INT:
            v = json_object_new_int(*(const int *)p);
            break;
        case K_DBL:
            config_format_double(num, sizeof(num), *(const double *)p);
            v = json_object_new_double_s(*(const double *)p, num);
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
