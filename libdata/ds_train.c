/* SPDX-License-Identifier: MIT */
/*
 * ds_train.c: the training datasets the trainer reads (ernie-data.md 7.2,
 * 7.4, 7.8): a corpus list from PaddleNLP's --input_dir (ds_list.c),
 * split by document, one samples index per corpus and split (ERNIE
 * mapping or GPT arrays, cached), blended when weighted, and the
 * DistributedBatchSampler order of global sample indices.  It only wires
 * together ds_split.c, ds_mapping.c, ds_blend.c, ds_ernie.c and ds_gpt.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ds_int.h"

#define LONG_SENTENCE_LEN 512 /* build_mapping's limit (ds_mapping.c) */

static const char *const split_names[3] = { "train", "valid", "test" };

/* One corpus of the list and its three split indexes. */
struct part {
    char *prefix;
    double weight; /* as given; 1 for an unweighted prefix */
    struct ds_dataset *d;
    struct ds_mapping *map[3]; /* ERNIE */
    struct ds_gpt *gpt[3];     /* GPT */
    int has[3];                /* the split has a dataset */
    uint64_t n[3];             /* its samples */
    uint64_t req[3];           /* the samples asked of it */
    uint64_t skipped[3];       /* ERNIE documents yielding no sample */
};

struct ds_corpus {
    enum ds_corpus_kind kind;
    uint32_t max_seq_len;
    struct ds_ernie_ctx *ctx; /* ERNIE */
    struct part *parts;
    size_t n_parts;
    int blended;
    size_t n_built;
    size_t n_stale; /* stale locks and temporaries removed */
    uint64_t n[3];
    uint16_t *bidx[3]; /* blended: dataset_index */
    int64_t *bsidx[3]; /* blended: dataset_sample_index */
};

/* ------------------------------------------------------------------------ */
/* The spec string                                                          */

/* Fill c->parts from spec (prefixes and weights only). */
static int
parse_spec(struct ds_corpus *c, const char *spec, struct ds_err *err)
{
    struct ds_corpus_list l;
    int rc;

    if ((rc = ds_corpus_list_parse(&l, spec, err)) < 0)
        return rc;
    c->blended = l.weighted;
    c->n_parts = l.n;
    c->parts = (struct part *)calloc(c->n_parts, sizeof(struct part));
    if (c->parts == NULL) {
        ds_corpus_list_release(&l);
        return ds_err_nomem(err);
    }
    for (size_t i = 0; i < c->n_parts; i++) {
        c->parts[i].prefix = l.prefixes[i];
        c->parts[i].weight = l.weights[i];
        l.prefixes[i] = NULL; /* the part owns it */
    }
    ds_corpus_list_release(&l);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Building one corpus's splits                                             */

/* Prefix the message of a failed call with the corpus and split. */
static int
wrap(struct ds_err *err, int rc, const struct part *p, int k,
     const struct ds_err *inner)
{
    return ds_err_set(err, rc, "corpus '%s' split '%s': %s", p->prefix,
                      split_names[k], inner->msg);
}

/* The mapping's file prefix: the data's, or cache_dir/basename. */
static char *
mapping_prefix(const char *prefix, const char *cache_dir)
{
    const char *base;
    char *s;
    size_t len;

    if (cache_dir == NULL)
        return strdup(prefix);
    base = strrchr(prefix, '/');
    base = base ? base + 1 : prefix;
    len = strlen(cache_dir) + strlen(base) + 2;
    if ((s = (char *)malloc(len)) != NULL)
        snprintf(s, len, "%s/%s", cache_dir, base);
    return s;
}

/* The directory of prefix ("." for none) and its base name, malloc'd. */
static int
split_prefix(const char *prefix, char **dir, char **base)
{
    const char *slash = strrchr(prefix, '/');

    *dir = slash == NULL     ? ds_path_cat(".", "", NULL)
           : slash == prefix ? ds_path_cat("/", "", NULL)
                             : ds_path_cat(prefix, "", NULL);
    *base = ds_path_cat(slash ? slash + 1 : prefix, "", NULL);
    if (*dir != NULL && slash != NULL && slash != prefix)
        (*dir)[slash - prefix] = '\0';
    return *dir != NULL && *base != NULL ? 0 : DS_ENOMEM;
}

/* Remove what interrupted cache builds left where this corpus list's
 * caches live (ds_cache_clean()). */
static int
clean_stale(struct ds_corpus *c, const char *cache_dir, struct ds_err *err)
{
    bool gpt = c->kind == DS_CORPUS_GPT;

    for (size_t i = 0; i < c->n_parts; i++) {
        char *dir, *base, *ic = NULL;

        if (split_prefix(c->parts[i].prefix, &dir, &base) < 0 ||
            (gpt && (ic = ds_path_cat(dir, "/index-cache", NULL)) == NULL)) {
            free(dir);
            free(base);
            return ds_err_nomem(err);
        }
        if (gpt)
            ds_cache_clean(ic, NULL, true, &c->n_stale);
        else
            ds_cache_clean(dir, base, false, &c->n_stale);
        if (cache_dir != NULL)
            ds_cache_clean(cache_dir, gpt ? NULL : base, gpt, &c->n_stale);
        free(ic);
        free(dir);
        free(base);
    }
    return 0;
}

static int
build_ernie(struct ds_corpus *c, struct part *p, const int64_t split[4],
            const uint64_t req[3], const struct ds_corpus_opts *o,
            struct ds_err *err)
{
    uint64_t n_sent = ds_dataset_n_sentences(p->d);
    int32_t *sizes = NULL;
    int64_t *docs = NULL;
    char *mpfx = NULL;
    struct ds_err e = { 0, "" };
    int rc = 0;

    if (n_sent > SIZE_MAX / sizeof(int32_t) ||
        (uint64_t)split[3] >= SIZE_MAX / sizeof(int64_t))
        return ds_err_nomem(err);
    sizes = (int32_t *)malloc((n_sent ? n_sent : 1) * sizeof(int32_t));
    docs = (int64_t *)malloc(((size_t)split[3] + 1) * sizeof(int64_t));
    mpfx = mapping_prefix(p->prefix, o->cache_dir);
    if (sizes == NULL || docs == NULL || mpfx == NULL) {
        rc = ds_err_nomem(err);
        goto out;
    }
    for (uint64_t s = 0; s < n_sent; s++)
        sizes[s] = (int32_t)ds_sentence_len(p->d, s);
    for (int64_t k = 0; k <= split[3]; k++)
        docs[k] = (int64_t)ds_document_first(p->d, (uint64_t)k);

    for (int k = 0; k < 3; k++) {
        struct ds_mapping_params mp;
        int64_t lo = split[k], hi = split[k + 1];
        int built = 0;

        if (hi <= lo || req[k] == 0)
            continue;
        mp.max_num_samples = req[k];
        mp.num_epochs = DS_MAPPING_EPOCHS_ANY;
        mp.max_seq_len = (int32_t)o->max_seq_len - 3;
        mp.short_seq_prob = o->short_seq_prob;
        mp.seed = (int32_t)o->seed;
        mp.min_num_sent = o->ernie.binary_head ? 2 : 1;
        for (int64_t dd = lo; dd < hi; dd++) {
            int64_t first = docs[dd], last = docs[dd + 1];
            int skip = last - first < mp.min_num_sent;

            for (int64_t s = first; !skip && last - first > 1 && s < last; s++)
                skip = sizes[s] > LONG_SENTENCE_LEN;
            p->skipped[k] += (uint64_t)skip;
        }
        if (o->cache_dir != NULL) { /* a valid file beside the data first */
            char *beside =
                ds_mapping_cache_name(p->prefix, split_names[k], &mp);

            if (beside == NULL) {
                rc = ds_err_nomem(err);
                goto out;
            }
            rc = ds_mapping_load(&p->map[k], beside, docs + lo,
                                 (size_t)(hi - lo), (size_t)n_sent, &mp, NULL);
            free(beside);
        }
        if (o->cache_dir == NULL || rc < 0)
            rc = ds_mapping_get(&p->map[k], mpfx, split_names[k], docs + lo,
                                (size_t)(hi - lo), sizes, (size_t)n_sent, &mp,
                                &built, &e);
        if (rc < 0) {
            rc = wrap(err, rc, p, k, &e);
            goto out;
        }
        c->n_built += (size_t)(built != 0);
        p->has[k] = 1;
        p->n[k] = ds_mapping_n(p->map[k]);
    }
out:
    free(mpfx);
    free(docs);
    free(sizes);
    return rc;
}

static int
build_gpt(struct ds_corpus *c, struct part *p, const int64_t split[4],
          const uint64_t req[3], const struct ds_corpus_opts *o,
          const char *split_str, struct ds_err *err)
{
    struct ds_err e = { 0, "" };
    uint64_t *docs;
    int rc = 0;

    if ((uint64_t)split[3] > SIZE_MAX / sizeof(uint64_t))
        return ds_err_nomem(err);
    docs = (uint64_t *)malloc(((size_t)split[3] + 1) * sizeof(uint64_t));
    if (docs == NULL)
        return ds_err_nomem(err);
    for (int64_t i = 0; i < split[3]; i++)
        docs[i] = (uint64_t)i;
    for (int k = 0; k < 3; k++) {
        struct ds_gpt_cache cache;
        int64_t lo = split[k], hi = split[k + 1];

        if (hi <= lo || req[k] == 0)
            continue;
        cache.dir = o->cache_dir;
        cache.data_prefix = p->prefix;
        cache.name = split_names[k];
        cache.split = split_str;
        rc = ds_gpt_build(&p->gpt[k], p->d, docs + lo, (size_t)(hi - lo),
                          req[k], o->max_seq_len, o->seed, &cache, &e);
        if (rc < 0) {
            rc = wrap(err, rc, p, k, &e);
            break;
        }
        c->n_built += (size_t)!ds_gpt_from_cache(p->gpt[k]);
        p->has[k] = 1;
        p->n[k] = ds_gpt_n_samples(p->gpt[k]);
    }
    free(docs);
    return rc;
}

static int
check_opts(const struct ds_corpus_opts *o, struct ds_err *err)
{
    if (o->kind != DS_CORPUS_ERNIE && o->kind != DS_CORPUS_GPT)
        return ds_err_set(err, DS_EINVAL, "corpus: unknown kind %d",
                          (int)o->kind);
    if (o->kind == DS_CORPUS_ERNIE) {
        if (o->max_seq_len < 5 || o->max_seq_len > INT32_MAX)
            return ds_err_set(err, DS_EINVAL,
                              "corpus: max_seq_len %u out of range (5.."
                              "2^31-1: the samples hold max_seq_len - 3 "
                              "tokens of text, at least 2)",
                              o->max_seq_len);
        if (o->seed > INT32_MAX)
            return ds_err_set(err, DS_EINVAL,
                              "corpus: seed %llu does not fit build_mapping's "
                              "int32",
                              (unsigned long long)o->seed);
        if (!(o->short_seq_prob >= 0 && o->short_seq_prob <= 1))
            return ds_err_set(err, DS_EINVAL,
                              "corpus: short_seq_prob %g outside [0, 1]",
                              o->short_seq_prob);
    } else if (o->max_seq_len == 0 || o->max_seq_len >= INT32_MAX) {
        return ds_err_set(err, DS_EINVAL, "corpus: max_seq_len %u out of range",
                          o->max_seq_len);
    }
    return 0;
}

/* Blend split k of every corpus, as build_train_valid_test_datasets. */
static int
blend_split(struct ds_corpus *c, int k, const struct ds_corpus_opts *o,
            struct ds_err *err)
{
    size_t n = c->n_parts, present = 0;
    double *w;
    double sum = 0;
    uint64_t size = 0;
    int rc;

    for (size_t i = 0; i < n; i++)
        present += (size_t)c->parts[i].has[k];
    if (present == 0)
        return 0;
    if (present < n) {
        for (size_t i = 0; i < n; i++)
            if (!c->parts[i].has[k])
                return ds_err_set(
                    err, DS_EINVAL,
                    "corpus '%s' split '%s': no documents, while other "
                    "corpora of the list have some (PaddleNLP cannot "
                    "blend that split either); change --split or the list",
                    c->parts[i].prefix, split_names[k]);
    }
    /* ERNIE blends all the mapping rows; GPT the counts asked of the
     * corpora (causal_dataset's train_num_samples: their sum, a little
     * over the request). */
    for (size_t i = 0; i < n; i++)
        size +=
            o->kind == DS_CORPUS_GPT ? c->parts[i].req[k] : c->parts[i].n[k];
    if ((w = (double *)malloc(n * sizeof(double))) == NULL)
        return ds_err_nomem(err);
    for (size_t i = 0; i < n; i++)
        sum += c->parts[i].weight;
    for (size_t i = 0; i < n; i++)
        w[i] = c->parts[i].weight / sum;
    c->bidx[k] = (uint16_t *)malloc((size ? size : 1) * sizeof(uint16_t));
    c->bsidx[k] = (int64_t *)malloc((size ? size : 1) * sizeof(int64_t));
    if (size > SIZE_MAX / sizeof(int64_t) || c->bidx[k] == NULL ||
        c->bsidx[k] == NULL) {
        free(w);
        return ds_err_nomem(err);
    }
    rc = ds_blend_normalize(w, n, err);
    if (rc == 0)
        rc = ds_blend_build(w, n, size, c->bidx[k], c->bsidx[k], err);
    free(w);
    if (rc == 0)
        c->n[k] = size;
    return rc;
}

int
ds_corpus_open(struct ds_corpus **out, const char *spec,
               const struct ds_corpus_opts *opts,
               const char *const *vocab_tokens, size_t n_tokens, size_t n_base,
               struct ds_err *err)
{
    const char *split_str = opts->split ? opts->split : "949,50,1";
    struct ds_corpus *c;
    uint64_t *counts = NULL;
    double *weights = NULL;
    int rc;

    *out = NULL;
    if ((rc = check_opts(opts, err)) < 0)
        return rc;
    if (spec == NULL)
        return ds_err_set(err, DS_EINVAL, "corpus list: no spec");
    if ((c = (struct ds_corpus *)calloc(1, sizeof(*c))) == NULL)
        return ds_err_nomem(err);
    c->kind = opts->kind;
    c->max_seq_len = opts->max_seq_len;
    if (opts->cache_dir != NULL && mkdir(opts->cache_dir, 0777) < 0 &&
        errno != EEXIST) {
        rc = ds_err_set(err, DS_EIO, "cannot create cache directory '%s': %s",
                        opts->cache_dir, strerror(errno));
        goto fail;
    }
    if ((rc = parse_spec(c, spec, err)) < 0 ||
        (rc = clean_stale(c, opts->cache_dir, err)) < 0)
        goto fail;
    if (opts->kind == DS_CORPUS_ERNIE) {
        struct ds_ernie_opts eo = opts->ernie;

        eo.max_seq_len = opts->max_seq_len;
        eo.seed = opts->seed;
        rc =
            ds_ernie_ctx_new(&c->ctx, &eo, vocab_tokens, n_tokens, n_base, err);
        if (rc < 0)
            goto fail;
    }

    /* Per-corpus requested counts: the 1.005 over-request when weighted. */
    counts = (uint64_t *)calloc(4 * c->n_parts, sizeof(uint64_t));
    weights = (double *)malloc(c->n_parts * sizeof(double));
    if (counts == NULL || weights == NULL) {
        rc = ds_err_nomem(err);
        goto fail;
    }
    for (size_t i = 0; i < c->n_parts; i++)
        weights[i] = c->parts[i].weight;
    for (int k = 0; k < 3 && c->blended; k++) {
        uint64_t *col = counts + 3 * c->n_parts;

        rc = ds_blend_counts(weights, c->n_parts, opts->n_samples[k], col, err);
        if (rc < 0)
            goto fail;
        for (size_t i = 0; i < c->n_parts; i++)
            counts[3 * i + (size_t)k] = col[i];
    }

    for (size_t i = 0; i < c->n_parts; i++) {
        struct part *p = &c->parts[i];
        struct ds_err e = { 0, "" };
        int64_t split[4];
        uint64_t n_units;
        uint64_t req[3];

        for (int k = 0; k < 3; k++)
            p->req[k] = req[k] =
                c->blended ? counts[3 * i + (size_t)k] : opts->n_samples[k];
        if ((rc = ds_open(&p->d, p->prefix, err)) < 0)
            goto fail;
        n_units = opts->kind == DS_CORPUS_GPT ? ds_dataset_n_sentences(p->d)
                                              : ds_dataset_n_documents(p->d);
        if ((rc = ds_split_indices(split_str, (int64_t)n_units, split, &e)) <
            0) {
            rc = ds_err_set(err, rc, "corpus '%s': %s", p->prefix, e.msg);
            goto fail;
        }
        if (opts->kind == DS_CORPUS_ERNIE)
            rc = build_ernie(c, p, split, req, opts, err);
        else
            rc = build_gpt(c, p, split, req, opts, split_str, err);
        if (rc < 0)
            goto fail;
    }

    for (int k = 0; k < 3; k++) {
        if (!c->blended)
            c->n[k] = c->parts[0].n[k];
        else if ((rc = blend_split(c, k, opts, err)) < 0)
            goto fail;
    }
    free(counts);
    free(weights);
    *out = c;
    return 0;
fail:
    free(counts);
    free(weights);
    ds_corpus_close(c);
    return rc;
}

void
ds_corpus_close(struct ds_corpus *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; c->parts != NULL && i < c->n_parts; i++) {
        struct part *p = &c->parts[i];

        for (int k = 0; k < 3; k++) {
            ds_mapping_free(p->map[k]);
            ds_gpt_free(p->gpt[k]);
        }
        ds_close(p->d);
        free(p->prefix);
    }
    for (int k = 0; k < 3; k++) {
        free(c->bidx[k]);
        free(c->bsidx[k]);
    }
    free(c->parts);
    ds_ernie_ctx_free(c->ctx);
    free(c);
}

int
ds_corpus_each_prefix(const char *spec,
                      int (*fn)(void *arg, const char *prefix), void *arg,
                      struct ds_err *err)
{
    struct ds_corpus c;
    int rc;

    memset(&c, 0, sizeof(c));
    rc = parse_spec(&c, spec, err);
    for (size_t i = 0; rc == 0 && i < c.n_parts; i++)
        rc = fn(arg, c.parts[i].prefix);
    for (size_t i = 0; c.parts != NULL && i < c.n_parts; i++)
        free(c.parts[i].prefix);
    free(c.parts);
    return rc;
}

uint64_t
ds_corpus_n_samples(const struct ds_corpus *c, enum ds_split which)
{
    return (unsigned)which < 3 ? c->n[which] : 0;
}

size_t
ds_corpus_n_corpora(const struct ds_corpus *c)
{
    return c->n_parts;
}

uint64_t
ds_corpus_n_skipped(const struct ds_corpus *c, size_t i, enum ds_split which)
{
    if (i >= c->n_parts || (unsigned)which >= 3)
        return 0;
    return c->parts[i].skipped[which];
}

size_t
ds_corpus_n_built(const struct ds_corpus *c)
{
    return c->n_built;
}

size_t
ds_corpus_n_stale(const struct ds_corpus *c)
{
    return c->n_stale;
}

/* ------------------------------------------------------------------------ */
/* Samples                                                                  */

int
ds_sample_init(struct ds_sample *s, const struct ds_corpus *c,
               struct ds_err *err)
{
    memset(s, 0, sizeof(*s));
    s->kind = c->kind;
    if (c->kind == DS_CORPUS_ERNIE)
        return ds_ernie_sample_init(&s->ernie, c->ctx, err);
    s->tokens =
        (int32_t *)malloc(((size_t)c->max_seq_len + 1) * sizeof(int32_t));
    if (s->tokens == NULL)
        return ds_err_nomem(err);
    s->n_tokens = c->max_seq_len + 1;
    return 0;
}

void
ds_sample_release(struct ds_sample *s)
{
    if (s->kind == DS_CORPUS_ERNIE)
        ds_ernie_sample_release(&s->ernie);
    free(s->tokens);
    memset(s, 0, sizeof(*s));
}

int
ds_corpus_sample(const struct ds_corpus *c, enum ds_split which, uint64_t i,
                 struct ds_sample *out, struct ds_err *err)
{
    const struct part *p;
    uint32_t part = 0;
    uint64_t j = i, row[3];

    if ((unsigned)which >= 3)
        return ds_err_set(err, DS_EINVAL, "corpus: unknown split %d",
                          (int)which);
    if (i >= c->n[which])
        return ds_err_set(err, DS_ERANGE,
                          "corpus: sample %llu of split '%s', which has %llu",
                          (unsigned long long)i, split_names[which],
                          (unsigned long long)c->n[which]);
    if (out->kind != c->kind)
        return ds_err_set(err, DS_EINVAL,
                          "corpus: the sample buffers were made for the "
                          "other kind (ds_sample_init)");
    if (c->blended) {
        part = c->bidx[which][i];
        j = (uint64_t)c->bsidx[which][i];
    }
    p = &c->parts[part];
    if (j >= p->n[which])
        return ds_err_set(err, DS_ERANGE,
                          "corpus '%s' split '%s': blended sample %llu is "
                          "its sample %llu, past its %llu (blending does "
                          "not wrap around)",
                          p->prefix, split_names[which], (unsigned long long)i,
                          (unsigned long long)j,
                          (unsigned long long)p->n[which]);
    out->corpus = part;
    out->corpus_index = j;
    if (c->kind == DS_CORPUS_GPT)
        return ds_gpt_sample(p->gpt[which], p->d, j, out->tokens, err);
    ds_mapping_row(p->map[which], j, row);
    return ds_ernie_sample_build(c->ctx, p->d, row[0], row[1], (uint32_t)row[2],
                                 j, &out->ernie, err);
}

/* ------------------------------------------------------------------------ */
/* Data order across ranks                                                  */

int
ds_corpus_batch_indices(const struct ds_corpus *c,
                        const struct ds_position *pos, uint32_t dp_rank,
                        uint32_t dp_world, uint32_t micro_batch,
                        uint64_t *indices, struct ds_err *err)
{
    uint64_t chunk, first, n;

    if (dp_world == 0 || micro_batch == 0 || dp_rank >= dp_world)
        return ds_err_set(err, DS_EINVAL,
                          "batch: rank %u of %u ranks with micro-batch %u",
                          dp_rank, dp_world, micro_batch);
    if ((unsigned)pos->split >= 3)
        return ds_err_set(err, DS_EINVAL, "batch: unknown split %d",
                          (int)pos->split);
    n = c->n[pos->split];
    chunk = (uint64_t)micro_batch * dp_world;
    /* drop_last: only whole chunks are read. */
    if (pos->consumed_samples > n || n - pos->consumed_samples < chunk)
        return ds_err_set(err, DS_ERANGE,
                          "batch: split '%s' has %llu samples; %llu consumed "
                          "leave no whole batch of %llu",
                          split_names[pos->split], (unsigned long long)n,
                          (unsigned long long)pos->consumed_samples,
                          (unsigned long long)chunk);
    first = pos->consumed_samples + (uint64_t)dp_rank * micro_batch;
    for (uint32_t k = 0; k < micro_batch; k++)
        indices[k] = first + k;
    return 0;
}
