/* SPDX-License-Identifier: MIT */
/*
 * train: pretrain ERNIE (MLM + SOP) or GPT on id files made by
 * create-pretraining-data, as PaddleNLP's run_pretrain.py does: the same
 * flags, data order, learning-rate schedule, log lines and checkpoint
 * cadence.  See train(1) and erniekit-checkpoint(5).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "ckpt/checkpoint.h"
#include "comm.h"
#include "model/config.h"
#include "data/data_meta.h"
#include "ds.h"
#include "log/events.h"
#include "ckpt/hf_tokenizer.h"
#include "cli/interrupt.h"
#include "model/model.h"
#include "ops.h"
#include "optim/optim.h"
#include "log/peak.h"
#include "log/runlog.h"
#include "ckpt/safetensors.h"
#include "tok.h"
#include "ckpt/whole.h"
#include "ckpt/weights.h"

/* ------------------------------------------------------------------------ */
/* Logging, in PaddleNLP's logger format                                     */

/* This process's rank and the number of ranks: only rank 0 logs; errors
 * name the rank when there are several. */
static int g_rank, g_world = 1;

static void __attribute__((format(printf, 1, 2))) log_info(const char *fmt, ...)
{
    struct timeval tv;
    struct tm tm;
    char ts[32];
    va_list ap;

    if (g_rank != 0)
        return;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(stderr, "[%s,%03d] [    INFO] - ", ts, (int)(tv.tv_usec / 1000));
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void __attribute__((format(printf, 1, 2), noreturn))
fatal(const char *fmt, ...)
{
    va_list ap;

    if (g_world > 1)
        fprintf(stderr, "train: rank %d: ", g_rank);
    else
        fprintf(stderr, "train: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1); /* without MPI_Finalize: mpirun ends the other ranks */
}

/* A problem with the arguments: exit status 2, as for usage errors. */
static void __attribute__((format(printf, 1, 2), noreturn))
usage_error(const char *fmt, ...)
{
    va_list ap;

    /* Every rank checks the same arguments: one message is enough.  The
     * others wait a moment, so that mpirun (which ends the job at the
     * first exit) does not stop rank 0 before it has said why. */
    if (g_rank == 0) {
        fprintf(stderr, "train: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (see train --help)\n", stderr);
    } else {
        sleep(2);
    }
    exit(2);
}

static double
now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* Vocabulary and model configuration                                        */

/* path itself if it is a file, else path/name. */
static char *
file_in(const char *path, const char *name)
{
    struct stat st;
    char *out;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&out, "%s/%s", path, name) < 0)
            fatal("out of memory");
    } else if ((out = strdup(path)) == NULL) {
        fatal("out of memory");
    }
    return out;
}

struct vocab {
    struct tok_vocab *v;
    const char **tokens;
    size_t n_tokens, n_base;
    int32_t cls, sep, mask, pad;
};

static int32_t
vocab_special(const struct vocab *vc, const char *path, const char *t)
{
    tok_id id = tok_vocab_find(vc->v, t, strlen(t));

    if (id < 0)
        fatal("vocab '%s' has no %s token", path, t);
    return (int32_t)id;
}

static void
vocab_open(struct vocab *vc, const char *path)
{
    struct tok_err e;

    if (tok_vocab_load(&vc->v, path, &e) < 0)
        fatal("%s", e.msg);
    vc->n_base = tok_vocab_n_ids(vc->v);
    /* The "##<CJK>" ids PaddleNLP's tokenizer adds (the samples map them
     * back to their characters). */
    if (tok_vocab_extend_chinese(vc->v, &e) < 0)
        fatal("%s: %s", path, e.msg);
    vc->n_tokens = tok_vocab_n_ids(vc->v);
    vc->tokens = calloc(vc->n_tokens, sizeof(*vc->tokens));
    if (vc->tokens == NULL)
        fatal("out of memory");
    for (size_t i = 0; i < vc->n_tokens; i++) {
        const char *t = tok_vocab_token(vc->v, (tok_id)i, NULL);

        vc->tokens[i] = t ? t : "";
    }
    vc->cls = vocab_special(vc, path, "[CLS]");
    vc->sep = vocab_special(vc, path, "[SEP]");
    vc->mask = vocab_special(vc, path, "[MASK]");
    vc->pad = vocab_special(vc, path, "[PAD]");
}

static void
model_config_from_args(struct model_config *c, const struct train_args *a,
                       const char *config_path)
{
    struct config_err ce;

    config_defaults(c, strcmp(a->model_type, "gpt") == 0 ? MODEL_GPT
                                                         : MODEL_ERNIE);
    if (config_read_json(c, config_path, &ce) < 0)
        fatal("%s", ce.msg);
    if (a->hidden_dropout_prob >= 0) {
        c->hidden_dropout = (float)a->hidden_dropout_prob;
        c->embedding_dropout = (float)a->hidden_dropout_prob;
    }
    if (a->attention_probs_dropout_prob >= 0)
        c->attention_dropout = (float)a->attention_probs_dropout_prob;
    if (a->check_accuracy)
        c->hidden_dropout = c->attention_dropout = c->embedding_dropout = 0;
    c->binary_head = c->type == MODEL_ERNIE ? a->binary_head : 0;
    if (config_check(c, &ce) < 0)
        fatal("%s: %s", config_path, ce.msg);
}

/* ------------------------------------------------------------------------ */
/* Micro-batches from the dataset layer                                      */

struct loader {
    const struct ds_corpus *c;
    uint32_t dp_rank, dp_world; /* this rank's slice of each global chunk */
    enum ds_split split;
    struct ds_position pos;
    int B, T, M_max;
    enum model_type type;
    struct ds_sample *s;
    uint64_t *idx;
    int32_t *ids, *types, *mask, *mpos, *mlab, *sop, *labels;
};

static void
loader_init(struct loader *l, const struct ds_corpus *c, enum ds_split split,
            enum model_type type, int B, int T, int M_max)
{
    size_t BT = (size_t)B * (size_t)T;
    struct ds_err e;

    memset(l, 0, sizeof(*l));
    l->c = c;
    l->split = split;
    l->pos.split = split;
    l->B = B;
    l->T = T;
    l->M_max = M_max;
    l->type = type;
    l->dp_rank = 0;
    l->dp_world = 1;
    l->s = calloc((size_t)B, sizeof(*l->s));
    l->idx = calloc((size_t)B, sizeof(*l->idx));
    l->ids = calloc(BT, sizeof(int32_t));
    l->types = calloc(BT, sizeof(int32_t));
    l->mask = calloc(BT, sizeof(int32_t));
    l->labels = calloc(BT, sizeof(int32_t));
    l->mpos = calloc((size_t)M_max + 1, sizeof(int32_t));
    l->mlab = calloc((size_t)M_max + 1, sizeof(int32_t));
    l->sop = calloc((size_t)B, sizeof(int32_t));
    if (!l->s || !l->idx || !l->ids || !l->types || !l->mask || !l->labels ||
        !l->mpos || !l->mlab || !l->sop)
        fatal("out of memory");
    for (int i = 0; i < B; i++)
        if (ds_sample_init(&l->s[i], c, &e) < 0)
            fatal("%s", e.msg);
}

static void
loader_release(struct loader *l)
{
    for (int i = 0; l->s && i < l->B; i++)
        ds_sample_release(&l->s[i]);
    free(l->s);
    free(l->idx);
    free(l->ids);
    free(l->types);
    free(l->mask);
    free(l->labels);
    free(l->mpos);
    free(l->mlab);
    free(l->sop);
}

/* The next micro-batch (PaddleNLP's collation, ernie-data.md 7.7): ERNIE
 * rows padded to max_seq_len, masked slots flattened to b*T + position and
 * padded to a multiple of 8 with (0, -1).  Returns 0, or 1 at the end of
 * the split. */
static int
loader_next(struct loader *l, struct batch *b)
{
    struct ds_err e;
    int T = l->T, rc = 0;

    if (ds_corpus_batch_indices(l->c, &l->pos, l->dp_rank, l->dp_world,
                                (uint32_t)l->B, l->idx, &e) < 0)
        return 1;
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < l->B; i++) {
        struct ds_err ei;

        if (ds_corpus_sample(l->c, l->split, l->idx[i], &l->s[i], &ei) < 0) {
#pragma omp critical
            {
                if (!rc)
                    fprintf(stderr, "train: sample %llu: %s\n",
                            (unsigned long long)l->idx[i], ei.msg);
                rc = -1;
            }
        }
    }
    if (rc < 0)
        exit(1);
    l->pos.consumed_samples += (uint64_t)l->B * l->dp_world;
    memset(b, 0, sizeof(*b));
    b->B = l->B;
    b->T = T;
    b->input_ids = l->ids;
    if (l->type == MODEL_GPT) {
        for (int i = 0; i < l->B; i++) {
            memcpy(l->ids + (size_t)i * T, l->s[i].tokens,
                   (size_t)T * sizeof(int32_t));
            memcpy(l->labels + (size_t)i * T, l->s[i].tokens + 1,
                   (size_t)T * sizeof(int32_t));
        }
        b->labels = l->labels;
        return 0;
    }
    {
        int m = 0;

        for (int i = 0; i < l->B; i++) {
            const struct ds_ernie_sample *s = &l->s[i].ernie;

            memcpy(l->ids + (size_t)i * T, s->input_ids,
                   (size_t)T * sizeof(int32_t));
            memcpy(l->types + (size_t)i * T, s->token_type_ids,
                   (size_t)T * sizeof(int32_t));
            for (int t = 0; t < T; t++)
                l->mask[(size_t)i * T + t] = (uint32_t)t < s->n_tokens;
            if (m + (int)s->n_masked > l->M_max)
                fatal("micro-batch has more than %d masked tokens", l->M_max);
            for (uint32_t k = 0; k < s->n_masked; k++) {
                l->mpos[m] = i * T + s->masked_positions[k];
                l->mlab[m] = s->masked_labels[k];
                m++;
            }
            l->sop[i] = s->is_random;
        }
        b->M = (m + 7) / 8 * 8;
        if (b->M == 0)
            b->M = 8;
        for (int k = m; k < b->M; k++) {
            l->mpos[k] = 0;
            l->mlab[k] = -1;
        }
    }
    b->token_type_ids = l->types;
    b->attention_mask = l->mask;
    b->masked_positions = l->mpos;
    b->masked_labels = l->mlab;
    b->sop_labels = l->sop;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

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

/* The dropout seed of micro-batch `micro` of this rank: keyed by the
 * micro-batch's place in the global batch (rank r's micro-step k holds the
 * samples a single rank reads at micro-step k * dp + r), so every
 * data-parallel layout draws the masks of one rank accumulating. */
static uint64_t
micro_seed(const struct run *r, int64_t step, int micro)
{
    uint64_t global =
        (uint64_t)micro * (uint64_t)r->replicas + (uint64_t)r->replica;

    return ops_splitmix64((uint64_t)r->a.seed ^
                          ops_splitmix64(((uint64_t)step << 16) | global));
}

/* ------------------------------------------------------------------------ */
/* Reporting: the MFU peak, durations, the event files                       */

static void
log_peak(const struct run *r)
{
    const struct cpu_peak *p = &r->cpu_peak;

    if (r->a.peak_gflops > 0)
        log_info("MFU peak: %.1f GFLOP/s (--peak_gflops)", r->peak_gflops);
    else
        log_info("MFU peak: %.1f GFLOP/s, this CPU's FP32 peak: %d core(s) x "
                 "%.3f GHz (%s) x %d FLOPs a cycle (%s); --peak_gflops "
                 "sets another",
                 r->peak_gflops, p->cores, p->ghz, p->clock_from,
                 p->flops_per_cycle, p->isa);
}

/* s seconds as H:MM:SS (hours not wrapped). */
static void
fmt_duration(char *out, size_t len, double s)
{
    long long t;

    if (!(s >= 0) || s > 1e12) {
        snprintf(out, len, "?");
        return;
    }
    t = llround(s);
    snprintf(out, len, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
}

/* Rank 0: the event files in --logging_dir (default output_dir/runs). */
static void
open_events(struct run *r)
{
    char err[1024], *dir;
    const char *tb, *vdl;

    if (r->event_targets == 0)
        return;
    if (r->a.logging_dir ? (dir = strdup(r->a.logging_dir)) == NULL
                         : asprintf(&dir, "%s/runs", r->a.output_dir) < 0)
        fatal("out of memory");
    if (events_open(&r->events, r->event_targets, dir, r->st.global_step + 1,
                    err, sizeof(err)) < 0)
        fatal("%s", err);
    tb = events_path(r->events, EVENTS_TENSORBOARD);
    vdl = events_path(r->events, EVENTS_VISUALDL);
    log_info("event files (tensorboard or visualdl --logdir %s):%s%s%s%s", dir,
             tb ? " TensorBoard " : "", tb ? tb : "", vdl ? " VisualDL " : "",
             vdl ? vdl : "");
    free(dir);
}

/* A step's scalars to the event files; a file that cannot be written is
 * reported once and left (training goes on). */
static void
report(struct run *r, int64_t step, const struct event_scalar *s, size_t n)
{
    char err[1024];

    if (events_write(r->events, step, s, n, err, sizeof(err)) < 0)
        fprintf(stderr, "train: warning: %s; no more events go to it\n", err);
}

/* The scalars of an evaluation of split `name` ("valid", "test"). */
static void
report_eval(struct run *r, const char *name, const struct losses *mean)
{
    char tags[3][64];
    struct event_scalar s[3];
    size_t n = 0;

    snprintf(tags[0], sizeof(tags[0]), "%s/loss", name);
    snprintf(tags[1], sizeof(tags[1]), "%s/lm_loss", name);
    snprintf(tags[2], sizeof(tags[2]), "%s/sop_loss", name);
    s[n++] = (struct event_scalar){ tags[0], mean->loss };
    if (r->cfg.type == MODEL_ERNIE)
        s[n++] = (struct event_scalar){ tags[1], mean->lm_loss };
    if (r->cfg.type == MODEL_ERNIE && r->cfg.binary_head)
        s[n++] = (struct event_scalar){ tags[2], mean->sop_loss };
    report(r, r->st.global_step, s, n);
}

/* Model FLOPs of one training micro-batch: 3 x the forward's matrix
 * products (backward = 2 x forward; no recompute), counting the MLM head
 * on its M rows only and attention's two products in full (not halved for
 * the causal mask), as Megatron's 72 B s l h^2 (1 + s/6h + V/12lh) form
 * does for GPT. */
static double
train_flops(const struct model_config *c, int B, int T, int M)
{
    double BT = (double)B * T, C = c->hidden_size, I = c->intermediate_size;
    double V = c->vocab_size;
    double layer = 2 * BT * C * (3 * C + C + 2 * I) + 4.0 * B * T * T * C;
    double head = c->type == MODEL_GPT
                      ? 2 * BT * C * V
                      : 2.0 * M * C * (C + V) +
                            (c->binary_head ? 2.0 * B * C * (C + 2) : 0);

    return 3 * (c->num_layers * layer + head);
}

/* The datasets' sidecars against the run's model and vocab, before
 * anything is built (ds-meta(5)). */
static void
check_data_meta(const struct run *r)
{
    const struct train_args *a = &r->a;
    char msg[1024];
    int rc =
        data_meta_check(a->input_dir, r->cfg.type == MODEL_GPT, r->vocab_path,
                        a->tokenizer_name_or_path ? a->tokenizer_name_or_path
                                                  : a->model_name_or_path,
                        r->cfg.vocab_size, msg, sizeof(msg));

    if (rc < 0)
        fatal("%s", msg);
    if (rc > 0)
        log_info("note: %s", msg);
}

static void
open_data(struct run *r)
{
    struct ds_corpus_opts o;
    struct ds_err e;
    const struct train_args *a = &r->a;

    memset(&o, 0, sizeof(o));
    o.kind = r->cfg.type == MODEL_GPT ? DS_CORPUS_GPT : DS_CORPUS_ERNIE;
    o.split = a->split;
    o.max_seq_len = (uint32_t)a->max_seq_len;
    o.seed = (uint64_t)a->seed;
    o.short_seq_prob = a->short_seq_prob;
    /* ernie-data.md 8.3: T = gbs * max_steps; the valid and test counts
     * from the evaluation cadence. */
    o.n_samples[0] = (uint64_t)r->gbs * (uint64_t)a->max_steps;
    o.n_samples[1] = (uint64_t)r->gbs *
                     (uint64_t)(a->max_steps / a->eval_freq + 1) *
                     (uint64_t)a->eval_iters;
    o.n_samples[2] = (uint64_t)r->gbs * 10 * (uint64_t)a->eval_iters;
    o.cache_dir = a->cache_dir;
    if (o.kind == DS_CORPUS_ERNIE) {
        o.ernie.masked_lm_prob = a->masked_lm_prob;
        o.ernie.max_ngrams = (uint32_t)a->max_ngrams;
        o.ernie.favor_longer_ngram = a->favor_longer_ngram;
        o.ernie.geometric_ngram = a->geometric_ngram;
        o.ernie.binary_head = a->binary_head;
        o.ernie.cls_id = r->vocab.cls;
        o.ernie.sep_id = r->vocab.sep;
        o.ernie.mask_id = r->vocab.mask;
        o.ernie.pad_id = r->vocab.pad;
    }
    if (ds_corpus_open(&r->corpus, a->input_dir, &o,
                       o.kind == DS_CORPUS_ERNIE ? r->vocab.tokens : NULL,
                       r->vocab.n_tokens, r->vocab.n_base, &e) < 0)
        fatal("%s", e.msg);
    log_info("data: %llu train, %llu valid, %llu test samples (%zu index "
             "file(s) built)",
             (unsigned long long)ds_corpus_n_samples(r->corpus, DS_SPLIT_TRAIN),
             (unsigned long long)ds_corpus_n_samples(r->corpus, DS_SPLIT_VALID),
             (unsigned long long)ds_corpus_n_samples(r->corpus, DS_SPLIT_TEST),
             ds_corpus_n_built(r->corpus));
    if (ds_corpus_n_stale(r->corpus) > 0)
        log_info("data: removed %zu lock and temporary file(s) that "
                 "interrupted index builds had left",
                 ds_corpus_n_stale(r->corpus));
}

static int
max_masked(const struct train_args *a)
{
    /* Per sample at most max(1, round(len * p)) <= ceil(T * p) + 1. */
    int per = (int)ceil(a->max_seq_len * a->masked_lm_prob) + 1;

    return (a->micro_batch_size * per + 7) / 8 * 8;
}

static int layers_contiguous(struct run *r);
static void stage3_params(void *ctx, int l, int need);

/* This process's rank as mpirun or srun gives it in the environment (0
 * when started plainly), before MPI starts. */
static int
launcher_rank(void)
{
    const char *env_rank = getenv("OMPI_COMM_WORLD_RANK");

    if (env_rank == NULL)
        env_rank = getenv("PMIX_RANK");
    if (env_rank == NULL)
        env_rank = getenv("PMI_RANK");
    return env_rank ? atoi(env_rank) : 0;
}

/* The ranks: one without mpirun, else MPI with the layout's groups.  Only
 * data parallelism runs so far; the other degrees are refused clearly. */
static void
setup_comm(struct run *r)
{
    const struct train_args *a = &r->a;
    struct comm_layout l = { a->tp, a->sharding_degree, a->dp, a->pp };
    char err[512];

    g_rank = launcher_rank(); /* until MPI says */
    if (comm_launched_by_mpi()) {
        r->comm = comm_mpi(NULL, NULL, &l, a->comm_timeout, err, sizeof(err));
        if (r->comm == NULL)
            usage_error("%s", err);
    } else {
        int want = a->tp * a->pp * a->sharding_degree * (a->dp ? a->dp : 1);

        if (want != 1)
            usage_error("this layout needs %d ranks: start it with mpirun "
                        "-np %d (or make train NP=%d)",
                        want, want, want);
        r->comm = comm_single();
    }
    g_rank = r->comm->rank;
    g_world = r->comm->world;
    r->dp = r->comm->group_size(r->comm, COMM_DP);
    r->dp_rank = r->comm->group_rank(r->comm, COMM_DP);
    r->sh = r->comm->group_size(r->comm, COMM_SHARDING);
    r->sh_rank = r->comm->group_rank(r->comm, COMM_SHARDING);
    r->tp = r->comm->group_size(r->comm, COMM_TP);
    r->tp_rank = r->comm->group_rank(r->comm, COMM_TP);
    r->pp = r->comm->group_size(r->comm, COMM_PP);
    r->pp_rank = r->comm->group_rank(r->comm, COMM_PP);
    r->replicas = r->dp * r->sh;
    r->replica = r->sh_rank + r->sh * r->dp_rank;
}

/* mkdir -p path, as os.makedirs(exist_ok=True); on failure -1 with errno
 * and the directory that could not be made in failed. */
static int
make_dirs(const char *path, char failed[PATH_MAX])
{
    size_t n = strlen(path);
    struct stat st;

    if (n == 0 || n >= PATH_MAX) {
        errno = n ? ENAMETOOLONG : ENOENT;
        snprintf(failed, PATH_MAX, "%s", path);
        return -1;
    }
    memcpy(failed, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (failed[i] != '/' && failed[i] != '\0')
            continue;
        failed[i] = '\0';
        if (mkdir(failed, 0777) < 0 && errno != EEXIST)
            return -1;
        if (i < n)
            failed[i] = '/';
    }
    if (stat(path, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* A directory the run writes to: made with its parents, writable. */
static void
check_dir(const char *flag, const char *dir)
{
    char failed[PATH_MAX];

    if (make_dirs(dir, failed) < 0) {
        if (strcmp(failed, dir) == 0)
            fatal("%s '%s': cannot create it: %s", flag, dir, strerror(errno));
        fatal("%s '%s': cannot create '%s': %s", flag, dir, failed,
              strerror(errno));
    }
    if (access(dir, W_OK | X_OK) < 0)
        fatal("%s '%s': not writable: %s", flag, dir, strerror(errno));
}

static void
report_stale(const char *path, int is_dir, void *ctx)
{
    (void)ctx;
    log_info("removing '%s', %s an earlier run left unfinished", path,
             is_dir ? "a checkpoint" : "a temporary file");
}

/* The lock rank 0 holds on the output directory while it runs (never
 * released: the exit does). */
static int g_output_lock = -1;

/* Rank 0 owns the output directory: no other run may write to it at the
 * same time, and what interrupted runs left there is removed. */
static void
take_output_dir(const char *dir)
{
    char err[1024];
    int locked = 0;

    g_output_lock = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_output_lock >= 0 && flock(g_output_lock, LOCK_EX | LOCK_NB) == 0) {
        locked = 1;
    } else if (g_output_lock >= 0 && errno == EWOULDBLOCK) {
        fatal("--output_dir '%s' is in use by another train run; wait for "
              "it to end, or pick another --output_dir",
              dir);
    }
    /* Without a lock (a file system without flock()), a temporary of a
     * process alive on this host is left alone. */
    if (ckpt_clean_stale(dir, !locked, report_stale, NULL, err, sizeof(err)) <
        0)
        fatal("%s", err);
}

/* Every path of the run before anything is built: the data (a
 * directory's datasets are listed), the output and cache directories
 * (made with their parents, as PaddleNLP and transformers make
 * output_dir).  The model config and the vocabulary were read already. */
static void
check_paths(struct run *r)
{
    const struct train_args *a = &r->a;
    struct ds_corpus_list l;
    struct ds_err e;

    if (ds_corpus_list_parse(&l, a->input_dir, &e) < 0)
        fatal("--input_dir: %s", e.msg);
    if (l.from_dir) {
        char names[1024];
        size_t len = 0;

        names[0] = '\0';
        for (size_t i = 0; i < l.n && len < sizeof(names); i++) {
            int w = i < 8 ? snprintf(names + len, sizeof(names) - len, "%s%s",
                                     i ? ", " : "", l.prefixes[i])
                          : snprintf(names + len, sizeof(names) - len,
                                     ", ... (%zu more)", l.n - i);

            if (w < 0)
                break;
            len += (size_t)w;
            if (i >= 8)
                break;
        }
        log_info("--input_dir '%s': %zu dataset%s%s: %s", a->input_dir, l.n,
                 l.n == 1 ? "" : "s",
                 l.n > 1 ? ", blended with weight 1 each (as PaddleNLP does)"
                         : "",
                 names);
    }
    ds_corpus_list_release(&l);
    if (a->continue_training) { /* the weights (unless model_last wins) */
        char *w = file_in(a->model_name_or_path, "model.safetensors"), *last;

        if (asprintf(&last, "%s/model_last", a->output_dir) < 0)
            fatal("out of memory");
        if (access(last, F_OK) != 0) {
            struct st_file *f;
            struct st_err se;

            if (st_open(&f, w, &se) < 0)
                fatal("--continue_training: %s", se.msg);
            st_close(f);
        }
        free(last);
        free(w);
    }
    check_dir("--output_dir", a->output_dir);
    if (a->cache_dir != NULL)
        check_dir("--cache_dir", a->cache_dir);
    if (g_rank == 0)
        take_output_dir(a->output_dir);
}

/* The model's tensor-parallel all-reduce, over COMM_TP. */
static void
tp_all_reduce(void *ctx, void *buf, size_t n, enum model_reduce how)
{
    struct comm *c = ((struct run *)ctx)->comm;
    int rc = how == MODEL_MAX_F32
                 ? c->all_reduce_max(c, buf, n, COMM_F32, COMM_TP)
                 : c->all_reduce_sum(c, buf, n,
                                     how == MODEL_SUM_F64 ? COMM_F64 : COMM_F32,
                                     COMM_TP);

    if (rc < 0)
        fatal("tensor parallel: %s", c->error);
}

/* Whether path is a directory holding name. */
static int
dir_has(const char *path, const char *name)
{
    struct stat st;
    char *f;
    int yes;

    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    if (asprintf(&f, "%s/%s", path, name) < 0)
        fatal("out of memory");
    yes = access(f, F_OK) == 0;
    free(f);
    return yes;
}

/* The tokenizer files every checkpoint carries (hf_tokenizer.h): ERNIE's
 * vocabulary; GPT's byte-level BPE from --tokenizer_name_or_path or the
 * model's directory, whose "<|endoftext|>" is also the config's bos and
 * eos token. */
static void
tokenizer_files(struct run *r)
{
    const struct train_args *a = &r->a;
    struct model_config *c = &r->cfg;
    const char *bpe = a->tokenizer_name_or_path;
    char err[1024];

    if (c->type == MODEL_ERNIE) {
        if (hf_tokenizer_wordpiece(&r->tok, r->vocab_path, c->max_position, err,
                                   sizeof(err)) < 0)
            fatal("%s", err);
        return;
    }
    if (bpe == NULL && dir_has(a->model_name_or_path, "vocab.json"))
        bpe = a->model_name_or_path;
    if (bpe == NULL) {
        log_info("no tokenizer (give --tokenizer_name_or_path, the "
                 "directory of vocab.json and merges.txt): the checkpoints "
                 "will have no tokenizer files");
    } else {
        if (hf_tokenizer_bpe(&r->tok, bpe, c->max_position, err, sizeof(err)) <
            0)
            fatal("%s", err);
        if (r->tok.n_tokens > (size_t)c->vocab_size)
            fatal("vocab '%s' has %zu tokens but the model config '%s' only "
                  "%d (vocab_size)",
                  r->tok.files[0].src, r->tok.n_tokens, r->config_path,
                  c->vocab_size);
        if (r->tok.eos_id >= 0)
            c->bos_token_id = c->eos_token_id = r->tok.eos_id;
    }
    /* An id outside the vocabulary (GPT-2's 50256 in a small model's
     * config) is no token: written null. */
    if (c->bos_token_id >= c->vocab_size)
        c->bos_token_id = -1;
    if (c->eos_token_id >= c->vocab_size)
        c->eos_token_id = -1;
}

static void
setup(struct run *r)
{
    const struct train_args *a = &r->a;
    char err[1024];
    const struct ops *op;

    setup_comm(r);
    /* The flags' own ranges were checked as they were read (args.c). */
    {
        long long per_step = (long long)a->micro_batch_size * r->replicas;

        if (a->gradient_accumulation_steps > 0 && a->global_batch_size > 0 &&
            a->global_batch_size != per_step * a->gradient_accumulation_steps)
            usage_error("--global_batch_size %d and "
                        "--gradient_accumulation_steps %d disagree: %d "
                        "accumulation steps of micro_batch_size %d x dp %d x "
                        "sharding %d make %lld",
                        a->global_batch_size, a->gradient_accumulation_steps,
                        a->gradient_accumulation_steps, a->micro_batch_size,
                        r->dp, r->sh,
                        per_step * a->gradient_accumulation_steps);
        if (per_step * (a->gradient_accumulation_steps > 0
                            ? a->gradient_accumulation_steps
                            : 1) >
            INT_MAX)
            usage_error("--micro_batch_size %d x %d ranks x %d accumulation "
                        "steps is too large",
                        a->micro_batch_size, r->replicas,
                        a->gradient_accumulation_steps);
        r->gbs = a->global_batch_size ? a->global_batch_size
                 : a->gradient_accumulation_steps > 0
                     ? (int)(per_step * a->gradient_accumulation_steps)
                     : (int)per_step;
    }
    if (r->gbs % (a->micro_batch_size * r->replicas))
        usage_error("global_batch_size %d is not a multiple of "
                    "micro_batch_size %d x dp %d x sharding %d",
                    r->gbs, a->micro_batch_size, r->dp, r->sh);
    r->accumulate = r->gbs / (a->micro_batch_size * r->replicas);
    if (strcmp(a->device, "cuda") == 0)
        fatal("--device cuda: this build has no CUDA backend yet");
    if (events_parse_targets(a->report_to, &r->event_targets, err,
                             sizeof(err)) < 0)
        usage_error("%s", err);

    r->config_path = file_in(
        a->config_name ? a->config_name : a->model_name_or_path, "config.json");
    model_config_from_args(&r->cfg, a, r->config_path);
    if (r->cfg.type == MODEL_ERNIE) {
        r->vocab_path =
            file_in(a->tokenizer_name_or_path ? a->tokenizer_name_or_path
                                              : a->model_name_or_path,
                    "vocab.txt");
        vocab_open(&r->vocab, r->vocab_path);
        if (r->vocab.n_base > (size_t)r->cfg.vocab_size)
            fatal("vocab '%s' has %zu tokens but the model config '%s' only "
                  "%d (vocab_size)",
                  r->vocab_path, r->vocab.n_base, r->config_path,
                  r->cfg.vocab_size);
    }
    tokenizer_files(r);
    if (a->max_seq_len > r->cfg.max_position)
        fatal("--max_seq_len %d exceeds the model's %d positions (%s)",
              a->max_seq_len, r->cfg.max_position, r->config_path);
    check_data_meta(r);
    /* The other paths, before a byte of the model is built. */
    check_paths(r);

    op = ops_cpu(a->threads);
    {
        struct model_par par = {
            { r->tp, r->tp_rank, tp_all_reduce, r }, r->pp, r->pp_rank, 1
        };

        /* 1F1B holds the activations of up to pp - stage micro-batches. */
        if (r->pp > 1)
            par.slots = r->pp - r->pp_rank < r->accumulate ? r->pp - r->pp_rank
                                                           : r->accumulate;
        r->slots = par.slots;
        if (r->pp > r->cfg.num_layers)
            usage_error("--pp %d: the model has only %d layers (%s); each "
                        "pipeline stage needs at least one",
                        r->pp, r->cfg.num_layers, r->config_path);

        if (r->tp > 1 &&
            (r->cfg.num_heads % r->tp || r->cfg.intermediate_size % r->tp))
            usage_error("--tp %d must divide the model's attention heads (%d) "
                        "and intermediate size (%d) (%s)",
                        r->tp, r->cfg.num_heads, r->cfg.intermediate_size,
                        r->config_path);
        if (model_create_par(&r->m, &r->cfg, op, a->micro_batch_size,
                             a->max_seq_len,
                             r->cfg.type == MODEL_ERNIE ? max_masked(a) : 0,
                             !a->use_recompute ? RECOMPUTE_NONE
                             : strcmp(a->recompute_granularity, "full") == 0
                                 ? RECOMPUTE_FULL
                                 : RECOMPUTE_CORE_ATTN,
                             &par, err, sizeof(err)) < 0)
            fatal("%s", err);
    }
    {
        /* The word embeddings (first stage) or their copy (last): the
         * tied pair whose gradients the embedding group sums. */
        const struct param_table *pt = model_table(r->m);

        for (size_t i = 0; i < pt->n; i++)
            if (pt->t[i].tp == TP_VOCAB && pt->t[i].ndim == 2) {
                r->tied_off = pt->t[i].offset;
                r->tied_n = pt->t[i].numel;
                break;
            }
    }
    {
        /* Sharding: rank k of the group owns [off[k], off[k+1]) of the
         * flat buffers, cut anywhere (no tensor needs to divide). */
        size_t n = model_table(r->m)->total;

        r->shard_off = calloc((size_t)r->sh + 1, sizeof(*r->shard_off));
        if (r->shard_off == NULL)
            fatal("out of memory");
        for (int k = 0; k <= r->sh; k++)
            r->shard_off[k] = n / (size_t)r->sh * (size_t)k +
                              n % (size_t)r->sh * (size_t)k / (size_t)r->sh;
        if (optim_create_range(&r->opt, op, model_table(r->m),
                               r->shard_off[r->sh_rank],
                               r->shard_off[r->sh_rank + 1]) < 0)
            fatal("out of memory for the optimizer");
    }
    r->overlap = a->overlap_grad_reduce && r->dp > 1 && r->sh == 1 &&
                 layers_contiguous(r);
    if (r->sh > 1 && a->sharding_stage >= 2) {
        if (!layers_contiguous(r))
            fatal("sharding stage 2 needs the layers' tensors in one run");
        r->stage2 = 1;
        r->stage3 = a->sharding_stage == 3;
        r->gacc = op->alloc((r->opt.hi - r->opt.lo) * sizeof(float));
        r->clip_off = calloc((size_t)r->sh + 1, sizeof(*r->clip_off));
        if (r->gacc == NULL || r->clip_off == NULL)
            fatal("out of memory");
    }
    r->lr.kind = strcmp(a->lr_decay_style, "cosine") == 0   ? LR_COSINE
                 : strcmp(a->lr_decay_style, "linear") == 0 ? LR_LINEAR
                 : r->cfg.type == MODEL_GPT                 ? LR_COSINE
                                                            : LR_LINEAR;
    r->lr.max_lr = a->max_lr;
    r->lr.min_lr = a->min_lr;
    r->lr.warmup_steps = a->warmup_steps > 0 ? (double)a->warmup_steps
                                             : a->warmup_rate * a->max_steps;
    r->lr.decay_steps = a->decay_steps ? a->decay_steps : a->max_steps;
    r->adam.beta1 = a->adam_beta1;
    r->adam.beta2 = a->adam_beta2;
    r->adam.eps = a->adam_epsilon;
    r->adam.weight_decay = a->weight_decay;
    r->adam.grad_clip = a->grad_clip;
    r->peak_gflops = a->peak_gflops;
    if (r->peak_gflops <= 0) {
        /* The processor's FP32 peak (the same every run), not a timing. */
        if (peak_cpu(omp_get_max_threads(), &r->cpu_peak) < 0)
            fatal("cannot tell this CPU's peak from /proc/cpuinfo: give "
                  "--peak_gflops");
        r->peak_gflops = r->cpu_peak.gflops;
    }
}

/* Sharding: a whole-table optimizer holding every rank's moments, for
 * saving (the transient price: the full moments on every rank). */
static void
gather_moments(struct run *r, struct optimizer *full)
{
    const struct ops *op = model_ops(r->m);
    size_t lo = r->opt.lo, n = r->opt.hi - r->opt.lo;

    if (optim_create(full, op, model_table(r->m)) < 0)
        fatal("out of memory gathering the optimizer state");
    full->t = r->opt.t;
    op->zero(full->m + lo, n * sizeof(float));
    op->zero(full->v + lo, n * sizeof(float));
    op->accumulate(full->m + lo, r->opt.m, n);
    op->accumulate(full->v + lo, r->opt.v, n);
    if (r->comm->all_gather_ranges(r->comm, full->m, r->shard_off, COMM_F32,
                                   COMM_SHARDING) < 0 ||
        r->comm->all_gather_ranges(r->comm, full->v, r->shard_off, COMM_F32,
                                   COMM_SHARDING) < 0)
        fatal("gathering the optimizer state: %s", r->comm->error);
}

/* Sharding: keep this rank's range of a whole-table optimizer. */
static void
take_moments(struct run *r, const struct optimizer *full)
{
    const struct ops *op = model_ops(r->m);
    size_t lo = r->opt.lo, n = r->opt.hi - r->opt.lo;

    op->zero(r->opt.m, n * sizeof(float));
    op->zero(r->opt.v, n * sizeof(float));
    op->accumulate(r->opt.m, full->m + lo, n);
    op->accumulate(r->opt.v, full->v + lo, n);
    r->opt.t = full->t;
}

/* Whether this rank holds a part of the model (tensor or pipeline
 * parallelism): checkpoints then go through a whole model (whole.h). */
static int
split_model(const struct run *r)
{
    return r->tp > 1 || r->pp > 1;
}

static void
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
            take_moments(r, &full);
            optim_release(&full);
        }
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
        struct st_file *f;
        struct st_err se;
        size_t unused = 0;
        struct whole w;
        struct model *into = r->m;

        if (split_model(r)) { /* the whole model, then this rank's part */
            if (whole_create(&w, r->m, err, sizeof(err)) < 0)
                fatal("--continue_training: %s", err);
            into = w.m;
        }
        if (st_open(&f, path, &se) < 0)
            fatal("--continue_training: %s", se.msg);
        if (weights_load_buffer(model_table(into), model_ops(into),
                                model_params(into), "", f, &unused, &se) < 0)
            fatal("--continue_training: %s: %s", path, se.msg);
        st_close(f);
        if (split_model(r)) {
            if (whole_scatter(&w, r->m, NULL, err, sizeof(err)) < 0)
                fatal("--continue_training: %s", err);
            whole_release(&w);
        }
        log_info("weights from %s%s", path,
                 unused ? " (some of its tensors are not in this model)" : "");
        free(path);
    } else {
        if (model_init_params(r->m, (uint64_t)a->seed) < 0)
            fatal("out of memory");
    }
    free(last);
}

static void
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

    /* Checkpoints hold every moment (global coordinates), so a sharded
     * run gathers them first; all ranks take part. */
    if (r->sh > 1) {
        gather_moments(r, &full);
        o = &full;
    }
    for (int l = 0; r->stage3 && l < r->cfg.num_layers; l++)
        stage3_params(r, l, MODEL_PARAMS_FORWARD);
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
        stage3_params(r, l, MODEL_PARAMS_DONE);
}

static void
check_loss(int64_t step, const struct losses *L, const char *what)
{
    if (!isfinite(L->loss))
        fatal("global step %lld: %s loss is %f; stopping (lower --max_lr, "
              "set --grad_clip, or check the data)",
              (long long)step, what, L->loss);
}

static size_t stage_bytes(const struct run *r, const struct batch *b);
static void p2p(struct run *r, int rc, int64_t step);

/* Sum losses x[0..n) over every replica (the data-parallel and sharding
 * ranks) and the pipeline stages (only the last has them). */
static void
replicas_sum(struct run *r, double *x, size_t n, int64_t step)
{
    if ((r->dp > 1 &&
         r->comm->all_reduce_sum(r->comm, x, n, COMM_F64, COMM_DP) < 0) ||
        (r->sh > 1 &&
         r->comm->all_reduce_sum(r->comm, x, n, COMM_F64, COMM_SHARDING) < 0) ||
        (r->pp > 1 &&
         r->comm->all_reduce_sum(r->comm, x, n, COMM_F64, COMM_PP) < 0))
        fatal("global step %lld: %s", (long long)step, r->comm->error);
}

/* Seconds between the progress lines of an evaluation. */
#define EVAL_PROGRESS_SECONDS 10.0

/* Evaluate `iters` micro-batches of a split on each rank, continuing its
 * loader (each data-parallel rank reads its slice, as in training); the
 * losses are averaged over every rank's micro-batches.  announce: say
 * what is evaluated before starting (the long test evaluation); a line
 * every EVAL_PROGRESS_SECONDS tells how far it is. */
static void
evaluate(struct run *r, struct loader *l, const char *name, int iters,
         int announce)
{
    struct losses sum = { 0, 0, 0 }, L;
    struct forward_opts fo = { 0, 0, 0.0f };
    struct batch b;
    char err[1024], eta[32];
    double t0 = now(), t_said = t0, sums[4], dt;
    int n = 0;

    if (announce)
        log_info("%s step %lld: evaluating the %s split, %d micro-batches of "
                 "%d sequences",
                 name, (long long)r->st.global_step, name, iters * r->replicas,
                 r->a.micro_batch_size);
    model_use_slot(r->m, 0);
    for (int i = 0; i < iters; i++) {
        struct comm *c = r->comm;

        if (i > 0 && now() - t_said >= EVAL_PROGRESS_SECONDS) {
            t_said = now();
            fmt_duration(eta, sizeof(eta), (t_said - t0) / i * (iters - i));
            log_info("%s step %lld: %d of %d micro-batches, %.0f s, eta: %s",
                     name, (long long)r->st.global_step, i * r->replicas,
                     iters * r->replicas, t_said - t0, eta);
        }
        if (loader_next(l, &b))
            break;
        /* Pipeline: each stage passes its output on (no backward). */
        if (r->pp_rank > 0)
            p2p(r,
                c->recv(c, model_stage_input(r->m), stage_bytes(r, &b),
                        r->pp_rank - 1, COMM_PP),
                r->st.global_step);
        if (model_forward(r->m, &b, &fo, &L, err, sizeof(err)) < 0)
            fatal("%s step %d: %s", name, i, err);
        if (r->pp_rank < r->pp - 1)
            p2p(r,
                c->send(c, model_stage_output(r->m), stage_bytes(r, &b),
                        r->pp_rank + 1, COMM_PP),
                r->st.global_step);
        else
            check_loss(r->st.global_step, &L, name);
        sum.loss += L.loss;
        sum.lm_loss += L.lm_loss;
        sum.sop_loss += L.sop_loss;
        n++;
    }
    sums[0] = sum.loss, sums[1] = sum.lm_loss, sums[2] = sum.sop_loss;
    sums[3] = r->pp_rank == r->pp - 1 ? n : 0; /* the last stage counts */
    replicas_sum(r, sums, 4, r->st.global_step);
    sum.loss = sums[0], sum.lm_loss = sums[1], sum.sop_loss = sums[2];
    n = (int)sums[3];
    if (n == 0) {
        log_info("%s step %lld: no %s data", name, (long long)r->st.global_step,
                 name);
        return;
    }
    /* batch: the micro-batches of every rank. */
    dt = now() - t0;
    log_info("%s step %lld, batch: %d, loss: %.6f, lm_loss: %.6f, sop_loss: "
             "%.6f, ips: %.0f seqs/s, time: %.1f s",
             name, (long long)r->st.global_step, n, sum.loss / n,
             sum.lm_loss / n, sum.sop_loss / n, n * r->a.micro_batch_size / dt,
             dt);
    if (r->events) {
        struct losses mean = { sum.loss / n, sum.lm_loss / n,
                               sum.sop_loss / n };

        report_eval(r, name, &mean);
    }
    if (r->jsonl) {
        fprintf(r->jsonl,
                "{\"%s_step\": %lld, \"loss\": %.9g, \"lm_loss\": %.9g, "
                "\"sop_loss\": %.9g}\n",
                name, (long long)r->st.global_step, sum.loss / n,
                sum.lm_loss / n, sum.sop_loss / n);
        fflush(r->jsonl);
    }
}

/* The backward hook of the overlapped reduction: layer l's gradients are
 * complete, start their all-reduce (one bucket a layer). */
static void
layer_grads_ready(void *ctx, int l)
{
    struct run *r = ctx;
    size_t lo, hi;

    model_layer_range(r->m, l, &lo, &hi);
    if (r->comm->all_reduce_sum_start(r->comm, model_grads(r->m) + lo, hi - lo,
                                      COMM_F32, COMM_DP) < 0 ||
        r->comm->test_all(r->comm) < 0)
        fatal("%s", r->comm->error);
}

/* Whether the layers' tensors form one contiguous run of the flat buffers,
 * layer after layer (so the layer buckets and the two ends cover
 * everything once); sets r->layers_lo/hi. */
static int
layers_contiguous(struct run *r)
{
    size_t lo, hi, prev_hi = 0;
    int first, end;

    model_stage_layers(r->m, &first, &end);
    for (int l = first; l < end; l++) {
        model_layer_range(r->m, l, &lo, &hi);
        if (l == first)
            r->layers_lo = lo;
        else if (lo != prev_hi)
            return 0;
        prev_hi = hi;
    }
    r->layers_hi = prev_hi;
    return end > first;
}

/* The mean of the replicas' gradients, where the optimizer needs it: the
 * whole buffer on every data-parallel rank; with sharding, each rank's own
 * range only (reduce-scattered over the sharding group, then all-reduced
 * over the data-parallel group).  Overlapped: the layers are on their way
 * already; the embeddings and heads (the tied word embeddings get their
 * last gradient at the very end) follow now. */
/* Stage 2: reduce grads[a, b) to the sharding ranks owning its pieces,
 * add this rank's piece to its accumulator, and discard the region (it
 * reads as zero again for the next micro-step). */
static void
shard_region(struct run *r, size_t a, size_t b)
{
    const struct ops *op = model_ops(r->m);
    float *g = model_grads(r->m);

    for (int k = 0; k < r->sh; k++) {
        size_t pa = a > r->shard_off[k] ? a : r->shard_off[k];
        size_t pb = b < r->shard_off[k + 1] ? b : r->shard_off[k + 1];

        if (pa >= pb)
            continue;
        if (r->comm->reduce_sum(r->comm, g + pa, pb - pa, COMM_F32, k,
                                COMM_SHARDING) < 0)
            fatal("%s", r->comm->error);
        if (k == r->sh_rank)
            op->accumulate(r->gacc + (pa - r->opt.lo), g + pa, pb - pa);
    }
    if (b > a)
        op->discard(g + a, (b - a) * sizeof(float));
}

/* Stage 3: parameters [a, b) gathered from the ranks owning its pieces;
 * start: only started (complete after the comm's wait_all()). */
static void
gather_params_how(struct run *r, size_t a, size_t b, int start)
{
    for (int k = 0; k <= r->sh; k++) {
        size_t o = r->shard_off[k];

        r->clip_off[k] = (o < a ? a : o > b ? b : o) - a;
    }
    if (b > a &&
        (start ? r->comm->all_gather_ranges_start : r->comm->all_gather_ranges)(
            r->comm, model_params(r->m) + a, r->clip_off, COMM_F32,
            COMM_SHARDING) < 0)
        fatal("gathering parameters: %s", r->comm->error);
}

static void
gather_params(struct run *r, size_t a, size_t b)
{
    gather_params_how(r, a, b, 0);
}

/* Stage 3: drop parameters [a, b), but for this rank's range. */
static void
drop_params(struct run *r, size_t a, size_t b)
{
    const struct ops *op = model_ops(r->m);
    float *p = model_params(r->m);
    size_t lo = r->opt.lo, hi = r->opt.hi;
    size_t e1 = b < lo ? b : lo, s2 = a > hi ? a : hi;

    if (a < e1)
        op->discard(p + a, (e1 - a) * sizeof(float));
    if (s2 < b)
        op->discard(p + s2, (b - s2) * sizeof(float));
}

/* Stage 3's parameter hook: a layer's parameters gathered before use and
 * dropped after.  While a layer computes, the gather of the next one in
 * the pass (forward: l + 1, backward: l - 1) is already under way (the
 * prefetch); the first layer of a pass waits for its own. */
static void
stage3_params(void *ctx, int l, int need)
{
    struct run *r = ctx;
    size_t a, b;
    int first, end, next;

    model_layer_range(r->m, l, &a, &b);
    if (need == MODEL_PARAMS_DONE) {
        drop_params(r, a, b);
        return;
    }
    if (r->prefetched >= 0 && r->comm->wait_all(r->comm) < 0)
        fatal("gathering parameters: %s", r->comm->error);
    if (r->prefetched != l) {
        if (r->prefetched >= 0) { /* (a pass cut short: not used) */
            size_t pa, pb;

            model_layer_range(r->m, r->prefetched, &pa, &pb);
            drop_params(r, pa, pb);
        }
        gather_params(r, a, b);
    }
    r->prefetched = -1;
    model_stage_layers(r->m, &first, &end);
    next = need == MODEL_PARAMS_FORWARD ? l + 1 : l - 1;
    if (next >= first && next < end) {
        model_layer_range(r->m, next, &a, &b);
        gather_params_how(r, a, b, 1);
        r->prefetched = next;
    }
}

static void
stage2_layer_ready(void *ctx, int l)
{
    struct run *r = ctx;
    size_t lo, hi;

    model_layer_range(r->m, l, &lo, &hi);
    shard_region(r, lo, hi);
}

static void
reduce_grads(struct run *r, int64_t step)
{
    float *g = model_grads(r->m);
    size_t lo = r->opt.lo, n = r->opt.hi - r->opt.lo;

    if (r->replicas == 1)
        return;
    if (r->stage2) { /* the sharding sums are in gacc already */
        model_ops(r->m)->accumulate(g + lo, r->gacc, n);
        if (r->dp > 1 &&
            r->comm->all_reduce_sum(r->comm, g + lo, n, COMM_F32, COMM_DP) < 0)
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        model_ops(r->m)->scale(g + lo, n, 1.0f / (float)r->replicas);
        return;
    }
    if (r->overlap) {
        size_t total = model_table(r->m)->total;

        if (r->comm->all_reduce_sum_start(r->comm, g, r->layers_lo, COMM_F32,
                                          COMM_DP) < 0 ||
            r->comm->all_reduce_sum_start(r->comm, g + r->layers_hi,
                                          total - r->layers_hi, COMM_F32,
                                          COMM_DP) < 0 ||
            r->comm->wait_all(r->comm) < 0)
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        model_ops(r->m)->scale(g, total, 1.0f / (float)r->replicas);
        return;
    }
    if (r->sh > 1 && r->comm->reduce_scatter_ranges(
                         r->comm, g, r->shard_off, COMM_F32, COMM_SHARDING) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    if (r->dp > 1 &&
        r->comm->all_reduce_sum(r->comm, g + lo, n, COMM_F32, COMM_DP) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    model_ops(r->m)->scale(g + lo, n, 1.0f / (float)r->replicas);
}

/* ------------------------------------------------------------------------ */
/* The micro-steps of a step: one after the other, or the pipeline's 1F1B   */

/* The bytes of activations a micro-batch passes between stages. */
static size_t
stage_bytes(const struct run *r, const struct batch *b)
{
    return (size_t)b->B * (size_t)b->T * (size_t)r->cfg.hidden_size *
           sizeof(float);
}

static void
p2p(struct run *r, int rc, int64_t step)
{
    if (rc < 0)
        fatal("global step %lld: pipeline: %s", (long long)step,
              r->comm->error);
}

/* Micro-step k's batch into its slot (the forward follows; a stage after
 * the first receives its input before it). */
static void
load_micro(struct run *r, int64_t step, int k, struct batch *b)
{
    model_use_slot(r->m, k % r->slots);
    if (loader_next(&r->train, b))
        fatal("global step %lld: the training data ran out", (long long)step);
}

static void
forward_micro(struct run *r, int64_t step, int k, const struct batch *b,
              struct losses *acc)
{
    struct forward_opts fo;
    struct losses L;
    char err[1024];

    model_use_slot(r->m, k % r->slots);
    fo.dropout = 1;
    fo.seed = micro_seed(r, step, k);
    fo.grad_scale = 1.0f / (float)r->accumulate;
    if (model_forward(r->m, b, &fo, &L, err, sizeof(err)) < 0)
        fatal("global step %lld: %s", (long long)step, err);
    if (r->pp_rank == r->pp - 1) /* the losses are the last stage's */
        check_loss(step, &L, "training");
    r->flops += train_flops(&r->cfg, b->B, b->T, b->M) / (r->tp * r->pp);
    acc->loss += L.loss;
    acc->lm_loss += L.lm_loss;
    acc->sop_loss += L.sop_loss;
}

/* The tied word embeddings' gradients summed over the first and last
 * stages (both then step the same values). */
static void
sync_tied(struct run *r, int64_t step)
{
    float *g = model_grads(r->m);

    if (r->pp > 1 && (r->pp_rank == 0 || r->pp_rank == r->pp - 1) &&
        r->comm->all_reduce_sum(r->comm, g + r->tied_off, r->tied_n, COMM_F32,
                                COMM_EMBEDDING) < 0)
        fatal("global step %lld: %s", (long long)step, r->comm->error);
}

/* Stage 2: the embeddings' and heads' gradients to their owners after a
 * micro-step's backward, but (skip_tied) for the tied word embeddings of a
 * pipeline's first or last stage: the other stage's half of their sum
 * comes only once every micro-step is done, so they accumulate until
 * then (a collective of the embedding group in the middle of 1F1B would
 * wait for a stage that waits for this one). */
static void
shard_heads(struct run *r, int skip_tied)
{
    size_t total = model_table(r->m)->total;
    size_t hole_lo = skip_tied ? r->tied_off : total;
    size_t hole_hi = skip_tied ? r->tied_off + r->tied_n : total;
    size_t ends[2][2] = { { 0, r->layers_lo }, { r->layers_hi, total } };

    for (int i = 0; i < 2; i++) {
        size_t a = ends[i][0], b = ends[i][1];

        if (hole_lo >= a && hole_hi <= b && hole_hi > hole_lo) {
            shard_region(r, a, hole_lo);
            shard_region(r, hole_hi, b);
        } else {
            shard_region(r, a, b);
        }
    }
}

static void
backward_micro(struct run *r, int k)
{
    model_use_slot(r->m, k % r->slots);
    if (r->overlap && k == r->accumulate - 1)
        model_set_layer_hook(r->m, layer_grads_ready, r);
    if (r->stage2)
        model_set_layer_hook(r->m, stage2_layer_ready, r);
    model_backward(r->m);
    model_set_layer_hook(r->m, NULL, NULL);
    if (r->stage2) /* the embeddings and heads */
        shard_heads(r, r->pp > 1);
}

/* One rank, or a pipeline stage without neighbours: forward and backward
 * of each micro-batch in turn. */
static void
micro_steps_plain(struct run *r, int64_t step, struct losses *acc)
{
    for (int k = 0; k < r->accumulate; k++) {
        struct batch b;

        load_micro(r, step, k, &b);
        forward_micro(r, step, k, &b, acc);
        backward_micro(r, k);
    }
}

/* Micro-step k's batch, and on a stage after the first its input from the
 * stage before. */
static void
load_input(struct run *r, int64_t step, int k, struct batch *b)
{
    struct comm *c = r->comm;

    load_micro(r, step, k, b);
    if (r->pp_rank > 0)
        p2p(r,
            c->recv(c, model_stage_input(r->m), stage_bytes(r, b),
                    r->pp_rank - 1, COMM_PP),
            step);
}

/* Pipeline stages, 1F1B (Megatron's schedule without interleaving): stage
 * s of p runs warm = min(p - s - 1, m) forwards, then alternates one
 * forward and one backward, then the remaining backwards.  Activations go
 * to the next stage, gradients back to the previous; where a stage sends
 * one way while its neighbour sends the other, both go in one sendrecv. */
static void
micro_steps_1f1b(struct run *r, int64_t step, struct losses *acc)
{
    struct comm *c = r->comm;
    int s = r->pp_rank, p = r->pp, m = r->accumulate;
    int first = s == 0, last = s == p - 1;
    int warm = p - s - 1 < m ? p - s - 1 : m, steady = m - warm;
    int fk = 0, bk = 0;
    struct batch b;

    for (int i = 0; i < warm; i++, fk++) {
        load_input(r, step, fk, &b);
        forward_micro(r, step, fk, &b, acc);
        p2p(r,
            c->send(c, model_stage_output(r->m), stage_bytes(r, &b), s + 1,
                    COMM_PP),
            step);
    }
    if (steady > 0)
        load_input(r, step, fk, &b);
    for (int i = 0; i < steady; i++, fk++, bk++) {
        size_t n = stage_bytes(r, &b);

        forward_micro(r, step, fk, &b, acc);
        if (!last) { /* this output on, the gradient of micro bk back */
            const float *out = model_stage_output(r->m);

            model_use_slot(r->m, bk % r->slots);
            p2p(r,
                c->sendrecv(c, out, n, model_stage_doutput(r->m), n, s + 1,
                            COMM_PP),
                step);
        }
        backward_micro(r, bk);
        if (i == steady - 1) {
            if (!first)
                p2p(r, c->send(c, model_stage_dinput(r->m), n, s - 1, COMM_PP),
                    step);
            continue;
        }
        {
            const float *din = model_stage_dinput(r->m);

            load_micro(r, step, fk + 1, &b);
            if (!first) /* the gradient back, micro fk + 1's input in */
                p2p(r,
                    c->sendrecv(c, din, n, model_stage_input(r->m),
                                stage_bytes(r, &b), s - 1, COMM_PP),
                    step);
        }
    }
    for (int i = 0; i < warm; i++, bk++) {
        size_t n = stage_bytes(r, &b);

        model_use_slot(r->m, bk % r->slots);
        p2p(r, c->recv(c, model_stage_doutput(r->m), n, s + 1, COMM_PP), step);
        backward_micro(r, bk);
        if (!first)
            p2p(r, c->send(c, model_stage_dinput(r->m), n, s - 1, COMM_PP),
                step);
    }
}

static void
micro_steps(struct run *r, int64_t step, struct losses *acc)
{
    if (r->pp > 1)
        micro_steps_1f1b(r, step, acc);
    else
        micro_steps_plain(r, step, acc);
    sync_tied(r, step);
    if (r->stage2 && r->pp > 1) /* the tied pair, kept until now */
        shard_region(r, r->tied_off, r->tied_off + r->tied_n);
}

/* The signal (SIGTERM or SIGUSR1) on which every rank stops at this step
 * boundary, or 0: received by any rank, it is the job's decision (the
 * ranks must stop at the same step, or the next collective would hang). */
static int
stop_signal(struct run *r)
{
    double sig = interrupt_pending();

    if (g_world > 1 &&
        r->comm->all_reduce_max(r->comm, &sig, 1, COMM_F64, COMM_WORLD) < 0)
        fatal("global step %lld: %s", (long long)r->st.global_step,
              r->comm->error);
    return (int)sig;
}

/* Stop on signal sig: model_last holds this step (saved now unless it
 * does already), as Megatron-LM's --exit-signal-handler does. */
static int
stop_run(struct run *r, int sig)
{
    const char *name = sig == SIGUSR1 ? "SIGUSR1" : "SIGTERM";

    if (r->st.global_step == 0) {
        log_info("%s received: stopping before the first step", name);
        return sig;
    }
    if (r->st.global_step > r->saved_last)
        save(r, "model_last", 1);
    log_info("%s received: stopping after global step %lld, which %s/"
             "model_last holds; the same command resumes the run",
             name, (long long)r->st.global_step, r->a.output_dir);
    return sig;
}

/* The run's steps; returns 0, or the signal that stopped it. */
static int
train_loop(struct run *r)
{
    const struct train_args *a = &r->a;
    struct losses acc = { 0, 0, 0 };
    double t_log = now(), norm = 0, comm_sent = 0;
    int first_step = 1;
    int logged = 0;

    r->train.pos.consumed_samples = r->st.consumed_samples;
    /* The valid loader resumes where PaddleNLP's would (7.8): eval_iters
     * global batches per evaluation so far. */
    r->valid.pos.consumed_samples =
        (uint64_t)r->gbs * (uint64_t)((r->st.global_step + 1) / a->eval_freq) *
        (uint64_t)a->eval_iters;
    while (r->st.global_step < a->max_steps) {
        int64_t step = r->st.global_step + 1;
        double lr = lr_at(&r->lr, step);
        int sig = stop_signal(r);

        if (sig)
            return stop_run(r, sig);

        if (r->stage2) /* every region was discarded: zero, untouched */
            model_ops(r->m)->zero(r->gacc,
                                  (r->opt.hi - r->opt.lo) * sizeof(float));
        else
            model_zero_grad(r->m);
        comm_sent = comm_sent_total(r->comm); /* (overlapped: from here) */
        micro_steps(r, step, &acc);
        if (r->stall_at == step && (r->test_rank < 0 || r->test_rank == g_rank))
            for (;;)
                pause(); /* a hung rank, for the watchdog tests */
        reduce_grads(r, step);
        {
            /* The global norm: each sharding rank has its range; the
             * tensor-parallel ranks each a part of the split tensors and
             * the same replicated ones (counted once). */
            double ss[2];
            int n = r->tp > 1 ? 2 : 1; /* [split, replicated] or [all] */

            optim_grad_sumsq_split(&r->opt, model_grads(r->m), &ss[0], &ss[1]);
            if (n == 1)
                ss[0] += ss[1], ss[1] = 0;
            if ((r->sh > 1 &&
                 r->comm->all_reduce_sum(r->comm, ss, (size_t)n, COMM_F64,
                                         COMM_SHARDING) < 0) ||
                (r->tp > 1 && r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64,
                                                      COMM_TP) < 0))
                fatal("global step %lld: %s", (long long)step, r->comm->error);
            ss[0] += ss[1]; /* each stage its own tensors (copies not) */
            if (r->pp > 1 &&
                r->comm->all_reduce_sum(r->comm, ss, 1, COMM_F64, COMM_PP) < 0)
                fatal("global step %lld: %s", (long long)step, r->comm->error);
            norm = sqrt(ss[0]);
        }
        if (optim_apply(&r->opt, model_params(r->m), model_grads(r->m), lr,
                        &r->adam, norm) < 0)
            fatal("global step %lld: the gradient norm is %f; stopping",
                  (long long)step, norm);
        if (r->stage3) { /* the layers are gathered when needed */
            gather_params(r, 0, r->layers_lo);
            gather_params(r, r->layers_hi, model_table(r->m)->total);
        } else if (r->sh > 1 && r->comm->all_gather_ranges(
                                    r->comm, model_params(r->m), r->shard_off,
                                    COMM_F32, COMM_SHARDING) < 0) {
            fatal("global step %lld: %s", (long long)step, r->comm->error);
        }
        if (r->stage2) /* the range's gradients, for the next step */
            model_ops(r->m)->discard(model_grads(r->m) + r->opt.lo,
                                     (r->opt.hi - r->opt.lo) * sizeof(float));
        /* What the step sent for the gradients and the update, per rank
         * (ring-algorithm bytes: docs/parallel.md's formulas). */
        comm_sent = comm_sent_total(r->comm) - comm_sent;
        if (first_step) { /* (one rank sends nothing: no line) */
            if (g_world > 1)
                log_info("communication per step: %.3f MB sent per rank",
                         comm_sent / 1e6);
            first_step = 0;
        }
        r->st.global_step = step;
        r->st.optimizer_step = r->opt.t;
        r->st.consumed_samples = r->train.pos.consumed_samples;
        r->st.learning_rate = lr;
        if (r->kill_at == step && (r->test_rank < 0 || r->test_rank == g_rank))
            raise(SIGKILL); /* tests: a crash right after this step */
        if (r->signal_at == step &&
            (r->test_rank < 0 || r->test_rank == g_rank))
            raise(r->test_signal); /* tests: a signal after this step */
        logged++;
        if (step % a->logging_freq == 0) {
            double dt = now() - t_log, n = (double)logged * r->accumulate;
            double sums[3] = { acc.loss, acc.lm_loss, acc.sop_loss };

            /* The losses averaged over the replicas. */
            replicas_sum(r, sums, 3, step);
            acc.loss = sums[0] / r->replicas;
            acc.lm_loss = sums[1] / r->replicas;
            acc.sop_loss = sums[2] / r->replicas;
            double speed = logged / dt, ips = speed * r->gbs;
            double tps = ips * a->max_seq_len;
            double mfu = r->flops / dt / (r->peak_gflops * 1e9);
            char eta[32];

            /* The steps left at the recent step time (evaluation and
             * saving not counted). */
            fmt_duration(eta, sizeof(eta), (a->max_steps - step) / speed);
            if (r->cfg.type == MODEL_ERNIE && r->cfg.binary_head)
                log_info("global step %lld, loss: %.6f, lm_loss: %.6f, "
                         "sop_loss: %.6f, speed: %.2f steps/s, ips: %.2f "
                         "seqs/s, learning rate: %.5e, tokens/s: %.0f, "
                         "mfu: %.1f%%, grad_norm: %.4f, eta: %s",
                         (long long)step, acc.loss / n, acc.lm_loss / n,
                         acc.sop_loss / n, speed, ips, lr, tps, 100 * mfu, norm,
                         eta);
            else
                log_info("global step %lld, loss: %.6f, speed: %.2f steps/s, "
                         "ips: %.2f seqs/s, learning rate: %.5e, tokens/s: "
                         "%.0f, mfu: %.1f%%, grad_norm: %.4f, eta: %s",
                         (long long)step, acc.loss / n, speed, ips, lr, tps,
                         100 * mfu, norm, eta);
            if (r->events) {
                struct event_scalar sc[] = {
                    { "train/loss", acc.loss / n },
                    { "train/learning_rate", lr },
                    { "train/grad_norm", norm },
                    { "train/steps_per_second", speed },
                    { "train/samples_per_second", ips },
                    { "train/tokens_per_second", tps },
                    { "train/mfu", mfu },
                    { "train/lm_loss", acc.lm_loss / n },
                    { "train/sop_loss", acc.sop_loss / n },
                };
                size_t k = r->cfg.type == MODEL_GPT ? 7
                           : r->cfg.binary_head     ? 9
                                                    : 8;

                report(r, step, sc, k);
            }
            if (r->jsonl) {
                fprintf(r->jsonl,
                        "{\"global_step\": %lld, \"loss\": %.9g, "
                        "\"lm_loss\": %.9g, \"sop_loss\": %.9g, "
                        "\"learning_rate\": %.9g, \"steps_per_second\": %.6g, "
                        "\"samples_per_second\": %.6g, \"tokens_per_second\": "
                        "%.6g, \"mfu\": %.6g, \"grad_norm\": %.9g, "
                        "\"consumed_samples\": %llu, \"comm_bytes\": %.17g}\n",
                        (long long)step, acc.loss / n, acc.lm_loss / n,
                        acc.sop_loss / n, lr, speed, ips, tps, mfu, norm,
                        (unsigned long long)r->st.consumed_samples, comm_sent);
                fflush(r->jsonl);
            }
            memset(&acc, 0, sizeof(acc));
            logged = 0;
            r->flops = 0;
            t_log = now();
        }
        {
            /* Evaluation and saving do not count in the training speed. */
            double t_aside = now();

            if (step % a->eval_freq == 0 && a->eval_iters > 0 && a->do_eval)
                evaluate(r, &r->valid, "valid", a->eval_iters * r->accumulate,
                         0);
            if (step % a->checkpoint_steps == 0 || step == a->max_steps)
                save(r, "model_last", 1);
            if (step % a->save_steps == 0 || step == a->max_steps) {
                char name[64];

                snprintf(name, sizeof(name), "model_%lld", (long long)step);
                save(r, name, 0);
            }
            t_log += now() - t_aside;
        }
    }
    {
        int sig = stop_signal(r);

        if (sig)
            return stop_run(r, sig);
    }
    if (a->eval_iters > 0 && a->do_predict) {
        struct loader test;

        loader_init(&test, r->corpus, DS_SPLIT_TEST, r->cfg.type,
                    a->micro_batch_size, a->max_seq_len, max_masked(a));
        test.dp_rank = (uint32_t)r->replica;
        test.dp_world = (uint32_t)r->replicas;
        evaluate(r, &test, "test", 10 * a->eval_iters * r->accumulate, 1);
        loader_release(&test);
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct run r;
    int rc, stopped;
    char *log_path, err[1024];

    memset(&r, 0, sizeof(r));
    rc = args_parse(&r.a, argc, argv, err, sizeof(err));
    if (rc != ARGS_OK) {
        /* Every rank reads the same arguments: rank 0 says what is
         * wrong, the others wait a moment for it (as usage_error()). */
        if (rc == ARGS_EMPTY)
            args_usage(stderr);
        else if (rc == ARGS_ERROR && launcher_rank() == 0)
            fprintf(stderr, "train: %s (see train --help)\n", err);
        else if (rc == ARGS_ERROR)
            sleep(2);
        args_release(&r.a);
        return rc == ARGS_HELP ? 0 : 2;
    }
    if (interrupt_install() < 0)
        fatal("cannot install the signal handlers: %s", strerror(errno));
    setup(&r);
    if (getenv("TRAIN_TEST_KILL_AT_STEP"))
        r.kill_at = strtoll(getenv("TRAIN_TEST_KILL_AT_STEP"), NULL, 10);
    if (getenv("TRAIN_TEST_STALL_AT_STEP"))
        r.stall_at = strtoll(getenv("TRAIN_TEST_STALL_AT_STEP"), NULL, 10);
    if (getenv("TRAIN_TEST_SIGNAL_AT_STEP")) {
        const char *sn = getenv("TRAIN_TEST_SIGNAL");

        r.signal_at = strtoll(getenv("TRAIN_TEST_SIGNAL_AT_STEP"), NULL, 10);
        r.test_signal = sn && !strcmp(sn, "USR1")  ? SIGUSR1
                        : sn && !strcmp(sn, "INT") ? SIGINT
                                                   : SIGTERM;
    }
    r.test_rank =
        getenv("TRAIN_TEST_RANK") ? atoi(getenv("TRAIN_TEST_RANK")) : -1;
    r.args_json = args_to_json(&r.a);
    log_info("%s", "----------- Configuration Arguments -----------");
    if (g_rank == 0)
        args_print(&r.a, stderr, "");
    for (const char *n = r.a.notes; n && *n;) { /* aliases with no effect */
        const char *nl = strchr(n, '\n');

        log_info("note: %.*s", (int)(nl ? nl - n : (long)strlen(n)), n);
        n = nl ? nl + 1 : n + strlen(n);
    }
    log_info("model: %s, %zu parameters, %.1f MB of activations; "
             "accumulate %d micro-batches; device cpu (%s)",
             r.cfg.type == MODEL_GPT ? "gpt" : "ernie", model_table(r.m)->total,
             model_activation_bytes(r.m) / 1e6, r.accumulate,
             model_ops(r.m)->name);
    log_peak(&r);
    log_info("ranks: %d (%s); tensor parallel %d x sharding %d (stage %d) "
             "x data parallel %d x pipeline %d, this rank's data slice %d",
             g_world, r.comm->name, r.tp, r.sh, r.a.sharding_stage, r.dp, r.pp,
             r.replica);
    if (r.pp > 1) /* the idle share of 1F1B: (p - 1) / (m + p - 1) */
        log_info("pipeline: %d stages, %d micro-batches a step (1F1B): "
                 "bubble fraction %.3f",
                 r.pp, r.accumulate,
                 (double)(r.pp - 1) / (r.accumulate + r.pp - 1));
    {
        /* fp32 parameters and gradients, AdamW's two moments (of this
         * rank's range when sharded). */
        size_t total = model_table(r.m)->total;
        double p = (double)total * sizeof(float) / 1e6;
        double o = 2.0 * (double)(r.opt.hi - r.opt.lo) * sizeof(float) / 1e6;
        double g = p;

        if (r.stage2) {
            /* Resident at most: the range's sums, the embeddings and
             * heads (written from the start of the backward to its end)
             * and the largest layer being reduced. */
            size_t big = 0, lo, hi;

            for (int l = 0; l < r.cfg.num_layers; l++) {
                model_layer_range(r.m, l, &lo, &hi);
                big = hi - lo > big ? hi - lo : big;
            }
            g = (double)(r.opt.hi - r.opt.lo + r.layers_lo +
                         (total - r.layers_hi) + big) *
                sizeof(float) / 1e6;
            if (r.stage3) /* the parameters alike */
                p = g;
        }
        log_info("memory per rank: parameters %.1f MB, gradients %.1f MB, "
                 "optimizer %.1f MB, activations %.1f MB",
                 p, g, o, model_activation_bytes(r.m) / 1e6);
    }
    open_data(&r);
    load_or_init(&r);
    if (r.stage3) { /* keep this rank's range of the layers only */
        r.prefetched = -1;
        for (int l = 0; l < r.cfg.num_layers; l++)
            stage3_params(&r, l, MODEL_PARAMS_DONE);
        model_set_param_hook(r.m, stage3_params, &r);
    }
    loader_init(&r.train, r.corpus, DS_SPLIT_TRAIN, r.cfg.type,
                r.a.micro_batch_size, r.a.max_seq_len, max_masked(&r.a));
    r.train.dp_rank = (uint32_t)r.replica;
    r.train.dp_world = (uint32_t)r.replicas;
    loader_init(&r.valid, r.corpus, DS_SPLIT_VALID, r.cfg.type,
                r.a.micro_batch_size, r.a.max_seq_len, max_masked(&r.a));
    r.valid.dp_rank = (uint32_t)r.replica;
    r.valid.dp_world = (uint32_t)r.replicas;
    if (asprintf(&log_path, "%s/train_log.jsonl", r.a.output_dir) < 0)
        fatal("out of memory");
    if (g_rank == 0) { /* the log of the run, as rank 0 sees it */
        size_t dropped;

        /* It goes on from the step resumed, as if never interrupted. */
        if (runlog_trim(log_path, r.st.global_step, &dropped, err,
                        sizeof(err)) < 0)
            fatal("%s", err);
        if (dropped > 0)
            log_info("%s: dropped %zu record%s after global step %lld, "
                     "written by the interrupted run",
                     log_path, dropped, dropped == 1 ? "" : "s",
                     (long long)r.st.global_step);
        r.jsonl = fopen(log_path, "a");
        if (r.jsonl == NULL)
            fatal("cannot open %s: %s", log_path, strerror(errno));
        open_events(&r);
    }
    free(log_path);
    stopped = train_loop(&r);
    if (r.jsonl)
        fclose(r.jsonl);
    events_close(r.events);
    loader_release(&r.train);
    loader_release(&r.valid);
    optim_release(&r.opt);
    if (r.gacc)
        model_ops(r.m)->release(r.gacc);
    model_free(r.m);
    ds_corpus_close(r.corpus);
    free(r.args_json);
    tok_vocab_free(r.vocab.v);
    free(r.vocab.tokens);
    free(r.vocab_path);
    hf_tokenizer_release(&r.tok);
    free(r.config_path);
    free(r.shard_off);
    free(r.clip_off);
    args_release(&r.a);
    r.comm->destroy(r.comm);
    /* Stopped by a signal: the status a shell gives a process it ended,
     * so that a script does not take the run for finished. */
    return stopped ? 128 + stopped : 0;
}
