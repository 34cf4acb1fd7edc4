/* SPDX-License-Identifier: MIT */
/*
 * test_ds_train.c: unit tests of libdata's training datasets
 * (ds_corpus_*): split counts and samples against the lower-level calls
 * (ds_split_indices, ds_mapping_build + ds_ernie_sample_build,
 * ds_gpt_build + ds_gpt_sample), a 0.7/0.3 blend against ds_blend_counts
 * and ds_blend_build, cache reuse, every documented error, and the
 * DistributedBatchSampler order across a change of data-parallel ranks.
 * Files go to a fresh directory under $TMPDIR (default /tmp).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness.h"
#include "ds.h"

static char tmp_root[4096];

static void
cleanup(void)
{
    char cmd[4200];

    if (tmp_root[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tmp_root);
    }
}

/* path = tmp_root/name, the directory made on first use. */
static const char *
tmp_path(char *buf, size_t cap, const char *name)
{
    if (tmp_root[0] == '\0') {
        const char *t = getenv("TMPDIR");

        snprintf(tmp_root, sizeof(tmp_root), "%s/test_ds_train.XXXXXX",
                 t && *t ? t : "/tmp");
        if (mkdtemp(tmp_root) == NULL) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(cleanup);
    }
    snprintf(buf, cap, "%s/%s", tmp_root, name);
    return buf;
}

/* A vocab of 4 specials and 36 plain tokens. */
#define VOCAB_N 40
static const char *vocab[VOCAB_N];
static char vocab_text[VOCAB_N][8];

static void
vocab_init(void)
{
    static const char *const sp[4] = { "[PAD]", "[CLS]", "[SEP]", "[MASK]" };

    for (int i = 0; i < VOCAB_N; i++) {
        if (i < 4)
            snprintf(vocab_text[i], sizeof(vocab_text[i]), "%s", sp[i]);
        else
            snprintf(vocab_text[i], sizeof(vocab_text[i]), "t%d", i);
        vocab[i] = vocab_text[i];
    }
}

/* The format write_corpus() writes. */
static enum ds_format corpus_format = DS_FORMAT_MMAP;

/* Write corpus `name`: n_docs documents of 1 + (doc % max_sent) sentences
 * (at least min_sent) of 3..14 tokens, ids 4..39 from an LCG; a sentence
 * of long_len tokens replaces the first one of every document whose number
 * is a multiple of long_every (0: none).  Returns the prefix. */
static const char *
write_corpus(char *prefix, size_t cap, const char *name, int n_docs,
             int min_sent, int max_sent, uint32_t seed, int long_every,
             int long_len)
{
    struct ds_writer *w = NULL;
    static int32_t ids[1024];
    uint32_t x = seed;

    tmp_path(prefix, cap, name);
    if (ds_writer_open(&w, prefix, corpus_format, DS_DTYPE_UINT16, NULL) < 0)
        return NULL;
    for (int d = 0; d < n_docs; d++) {
        int n_sent = min_sent + d % (max_sent - min_sent + 1);

        for (int s = 0; s < n_sent; s++) {
            int len;

            x = x * 1103515245u + 12345u;
            len = 3 + (int)((x >> 16) % 12);
            if (s == 0 && long_every > 0 && d % long_every == 0)
                len = long_len;
            for (int k = 0; k < len; k++) {
                x = x * 1103515245u + 12345u;
                ids[k] = 4 + (int32_t)((x >> 16) % 36);
            }
            ds_writer_add_sentence(w, ids, (size_t)len, NULL);
        }
        ds_writer_end_document(w, NULL);
    }
    if (ds_writer_commit(w, NULL) < 0)
        return NULL;
    return prefix;
}

static struct ds_corpus_opts
ernie_opts(const char *cache_dir)
{
    struct ds_corpus_opts o;

    memset(&o, 0, sizeof(o));
    o.kind = DS_CORPUS_ERNIE;
    o.split = "8,1,1";
    o.max_seq_len = 32;
    o.seed = 1234;
    o.short_seq_prob = 0.1;
    o.n_samples[0] = 100;
    o.n_samples[1] = 10;
    o.n_samples[2] = 5;
    o.cache_dir = cache_dir;
    o.ernie.masked_lm_prob = 0.15;
    o.ernie.max_ngrams = 3;
    o.ernie.binary_head = 1;
    o.ernie.cls_id = 1;
    o.ernie.sep_id = 2;
    o.ernie.mask_id = 3;
    o.ernie.pad_id = 0;
    return o;
}

static struct ds_corpus_opts
gpt_opts(const char *cache_dir)
{
    struct ds_corpus_opts o;

    memset(&o, 0, sizeof(o));
    o.kind = DS_CORPUS_GPT;
    o.split = "8,1,1";
    o.max_seq_len = 8;
    o.seed = 1234;
    o.n_samples[0] = 40;
    o.n_samples[1] = 6;
    o.n_samples[2] = 3;
    o.cache_dir = cache_dir;
    return o;
}

static int
ernie_equal(const struct ds_ernie_sample *a, const struct ds_ernie_sample *b,
            uint32_t max_seq_len)
{
    size_t n = max_seq_len * sizeof(int32_t);

    return a->n_tokens == b->n_tokens && a->n_masked == b->n_masked &&
           a->is_random == b->is_random && a->truncated == b->truncated &&
           memcmp(a->input_ids, b->input_ids, n) == 0 &&
           memcmp(a->token_type_ids, b->token_type_ids, n) == 0 &&
           memcmp(a->masked_positions, b->masked_positions,
                  a->n_masked * sizeof(int32_t)) == 0 &&
           memcmp(a->masked_labels, b->masked_labels,
                  a->n_masked * sizeof(int32_t)) == 0 &&
           memcmp(a->loss_mask, b->loss_mask, max_seq_len) == 0;
}

/* The reference of one ERNIE corpus's split k with count req: the mapping
 * built directly from the dataset. */
static struct ds_mapping *
ref_mapping(const struct ds_dataset *d, const char *split, int k, uint64_t req,
            const struct ds_corpus_opts *o)
{
    struct ds_mapping_params mp;
    struct ds_mapping *m = NULL;
    int64_t sp[4], docs[512];
    int32_t sizes[4096];
    uint64_t ns = ds_dataset_n_sentences(d);

    if (ds_split_indices(split, (int64_t)ds_dataset_n_documents(d), sp, NULL) <
            0 ||
        ns > 4096 || sp[k + 1] - sp[k] >= 511)
        return NULL;
    for (uint64_t s = 0; s < ns; s++)
        sizes[s] = (int32_t)ds_sentence_len(d, s);
    for (int64_t j = sp[k]; j <= sp[k + 1]; j++)
        docs[j - sp[k]] = (int64_t)ds_document_first(d, (uint64_t)j);
    mp.max_num_samples = req;
    mp.num_epochs = DS_MAPPING_EPOCHS_ANY;
    mp.max_seq_len = (int32_t)o->max_seq_len - 3;
    mp.short_seq_prob = o->short_seq_prob;
    mp.seed = (int32_t)o->seed;
    mp.min_num_sent = o->ernie.binary_head ? 2 : 1;
    if (ds_mapping_build(&m, docs, (size_t)(sp[k + 1] - sp[k]), sizes,
                         (size_t)ns, &mp, NULL) < 0)
        return NULL;
    return m;
}

/* Every sample of split k of c against corpus d's mapping m, sample i
 * of c being sample map_i[i] of m (identity when map_i is NULL); only
 * samples from i = c_req on may be past m. */
static void
check_ernie_split(const struct ds_corpus *c, int k, const struct ds_dataset *d,
                  const struct ds_mapping *m, const struct ds_ernie_ctx *ctx,
                  const uint16_t *part, uint16_t which, const int64_t *map_i,
                  uint64_t c_req)
{
    struct ds_sample s;
    struct ds_ernie_sample ref;
    uint64_t n = ds_corpus_n_samples(c, (enum ds_split)k);

    CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
    CHECK_EQ_INT(ds_ernie_sample_init(&ref, ctx, NULL), 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = map_i ? (uint64_t)map_i[i] : i, row[3];

        if (part != NULL && part[i] != which)
            continue;
        if (j >= ds_mapping_n(m)) {
            /* Blending does not wrap around (7.4): past the mapping,
             * where PaddleNLP raises IndexError.  The first requested
             * samples never get there (the 1.005 over-request). */
            CHECK(i >= c_req);
            CHECK_EQ_INT(ds_corpus_sample(c, (enum ds_split)k, i, &s, NULL),
                         DS_ERANGE);
            continue;
        }
        CHECK_EQ_INT(ds_corpus_sample(c, (enum ds_split)k, i, &s, NULL), 0);
        CHECK_EQ_INT(s.corpus_index, j);
        ds_mapping_row(m, j, row);
        CHECK_EQ_INT(ds_ernie_sample_build(ctx, d, row[0], row[1],
                                           (uint32_t)row[2], j, &ref, NULL),
                     0);
        CHECK(ernie_equal(&s.ernie, &ref, 32));
    }
    ds_ernie_sample_release(&ref);
    ds_sample_release(&s);
}

static struct ds_ernie_ctx *
ref_ctx(const struct ds_corpus_opts *o)
{
    struct ds_ernie_opts eo = o->ernie;
    struct ds_ernie_ctx *ctx = NULL;

    eo.max_seq_len = o->max_seq_len;
    eo.seed = o->seed;
    if (ds_ernie_ctx_new(&ctx, &eo, vocab, VOCAB_N, VOCAB_N, NULL) < 0)
        return NULL;
    return ctx;
}

/* ------------------------------------------------------------------------ */

static void
test_corpus_ernie_samples(void)
{
    char pfx[4200], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c1"));
    struct ds_corpus *c = NULL;
    struct ds_dataset *d = NULL;
    struct ds_ernie_ctx *ctx = ref_ctx(&o);
    struct ds_err err = { 0, "" };

    CHECK(write_corpus(pfx, sizeof(pfx), "a", 40, 1, 4, 7, 0, 0) != NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, pfx, &o, vocab, VOCAB_N, VOCAB_N, &err), 0);
    CHECK_EQ_INT(ds_open(&d, pfx, NULL), 0);
    if (c == NULL || d == NULL || ctx == NULL) {
        fprintf(stderr, "open: %s\n", err.msg);
        goto out;
    }
    CHECK_EQ_INT(ds_corpus_n_corpora(c), 1);
    CHECK_EQ_INT(ds_corpus_n_built(c), 3);
    for (int k = 0; k < 3; k++) {
        struct ds_mapping *m = ref_mapping(d, "8,1,1", k, o.n_samples[k], &o);
        uint64_t n = ds_corpus_n_samples(c, (enum ds_split)k);

        CHECK(m != NULL);
        if (m == NULL)
            continue;
        CHECK_EQ_INT(n, ds_mapping_n(m));
        CHECK(n >= o.n_samples[k]);
        check_ernie_split(c, k, d, m, ctx, NULL, 0, NULL, UINT64_MAX);
        ds_mapping_free(m);
    }
    /* One sentence a document in a quarter of them: skipped for SOP. */
    CHECK(ds_corpus_n_skipped(c, 0, DS_SPLIT_TRAIN) > 0);
out:
    ds_ernie_ctx_free(ctx);
    ds_close(d);
    ds_corpus_close(c);
}

static void
test_corpus_ernie_cache_reuse(void)
{
    char pfx[4200], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c2"));
    struct ds_corpus *c1 = NULL, *c2 = NULL;
    struct ds_sample s1, s2;

    CHECK(write_corpus(pfx, sizeof(pfx), "b", 30, 2, 3, 11, 0, 0) != NULL);
    CHECK_EQ_INT(ds_corpus_open(&c1, pfx, &o, vocab, VOCAB_N, VOCAB_N, NULL),
                 0);
    CHECK_EQ_INT(ds_corpus_open(&c2, pfx, &o, vocab, VOCAB_N, VOCAB_N, NULL),
                 0);
    if (c1 == NULL || c2 == NULL)
        goto out;
    CHECK_EQ_INT(ds_corpus_n_built(c1), 3);
    CHECK_EQ_INT(ds_corpus_n_built(c2), 0);
    CHECK_EQ_INT(ds_sample_init(&s1, c1, NULL), 0);
    CHECK_EQ_INT(ds_sample_init(&s2, c2, NULL), 0);
    for (int k = 0; k < 3; k++) {
        uint64_t n = ds_corpus_n_samples(c1, (enum ds_split)k);

        CHECK_EQ_INT(ds_corpus_n_samples(c2, (enum ds_split)k), n);
        for (uint64_t i = 0; i < n; i++) {
            CHECK_EQ_INT(ds_corpus_sample(c1, (enum ds_split)k, i, &s1, NULL),
                         0);
            CHECK_EQ_INT(ds_corpus_sample(c2, (enum ds_split)k, i, &s2, NULL),
                         0);
            CHECK(ernie_equal(&s1.ernie, &s2.ernie, 32));
        }
    }
    ds_sample_release(&s1);
    ds_sample_release(&s2);
    ds_sample_release(&s2); /* harmless twice */
out:
    ds_corpus_close(c1);
    ds_corpus_close(c2);
}

/* PaddleNLP's mapping cache names leave out binary_head: a cache written
 * by an MLM-only run (samples of one sentence) is stale for an SOP run,
 * which rebuilds it instead of failing on its first one-sentence sample. */
static void
test_corpus_cache_binary_head(void)
{
    char pfx[4200], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c10"));
    struct ds_corpus *c = NULL;
    struct ds_sample s;

    /* A first sentence of 40 tokens reaches any target alone: one-sentence
     * samples when the head is off. */
    CHECK(write_corpus(pfx, sizeof(pfx), "bh", 40, 3, 4, 17, 1, 40) != NULL);
    o.ernie.binary_head = 0;
    CHECK_EQ_INT(ds_corpus_open(&c, pfx, &o, vocab, VOCAB_N, VOCAB_N, NULL), 0);
    CHECK_EQ_INT(ds_corpus_n_built(c), 3);
    ds_corpus_close(c);
    c = NULL;
    o.ernie.binary_head = 1;
    CHECK_EQ_INT(ds_corpus_open(&c, pfx, &o, vocab, VOCAB_N, VOCAB_N, NULL), 0);
    if (c == NULL)
        return;
    CHECK(ds_corpus_n_built(c) >= 1); /* the stale ones */
    CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
    for (int k = 0; k < 3; k++)
        for (uint64_t i = 0; i < ds_corpus_n_samples(c, (enum ds_split)k); i++)
            CHECK_EQ_INT(ds_corpus_sample(c, (enum ds_split)k, i, &s, NULL), 0);
    ds_sample_release(&s);
    ds_corpus_close(c);
}

static void
test_corpus_gpt_samples(void)
{
    char pfx[4200], cache[4200];
    struct ds_corpus_opts o = gpt_opts(tmp_path(cache, sizeof(cache), "c3"));
    struct ds_corpus *c = NULL, *c2 = NULL;
    struct ds_dataset *d = NULL;
    struct ds_sample s;
    int32_t want[9];
    int64_t sp[4];
    uint64_t docs[64];

    CHECK(write_corpus(pfx, sizeof(pfx), "g", 50, 1, 1, 3, 0, 0) != NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, pfx, &o, NULL, 0, 0, NULL), 0);
    CHECK_EQ_INT(ds_open(&d, pfx, NULL), 0);
    if (c == NULL || d == NULL)
        goto out;
    CHECK_EQ_INT(ds_corpus_n_built(c), 3);
    CHECK_EQ_INT(ds_split_indices("8,1,1", 50, sp, NULL), 0);
    for (int i = 0; i < 50; i++)
        docs[i] = (uint64_t)i;
    CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
    CHECK_EQ_INT(s.n_tokens, 9);
    for (int k = 0; k < 3; k++) {
        struct ds_gpt *g = NULL;
        uint64_t n = ds_corpus_n_samples(c, (enum ds_split)k);

        CHECK_EQ_INT(ds_gpt_build(&g, d, docs + sp[k],
                                  (size_t)(sp[k + 1] - sp[k]), o.n_samples[k],
                                  8, 1234, NULL, NULL),
                     0);
        if (g == NULL)
            continue;
        CHECK_EQ_INT(n, ds_gpt_n_samples(g));
        for (uint64_t i = 0; i < n; i++) {
            CHECK_EQ_INT(ds_corpus_sample(c, (enum ds_split)k, i, &s, NULL), 0);
            CHECK_EQ_INT(ds_gpt_sample(g, d, i, want, NULL), 0);
            CHECK_EQ_MEM(s.tokens, want, sizeof(want));
        }
        ds_gpt_free(g);
    }
    ds_sample_release(&s);
    /* The second open reads the three splits from the cache. */
    CHECK_EQ_INT(ds_corpus_open(&c2, pfx, &o, NULL, 0, 0, NULL), 0);
    if (c2 != NULL)
        CHECK_EQ_INT(ds_corpus_n_built(c2), 0);
out:
    ds_corpus_close(c2);
    ds_close(d);
    ds_corpus_close(c);
}

static void
test_corpus_blend(void)
{
    char pa[4200], pb[4200], cache[4200], spec[9000];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c4"));
    struct ds_corpus *c = NULL;
    struct ds_dataset *d[2] = { NULL, NULL };
    struct ds_ernie_ctx *ctx = ref_ctx(&o);
    const double w[2] = { 0.7, 0.3 };
    struct ds_err err = { 0, "" };

    CHECK(write_corpus(pa, sizeof(pa), "ba", 40, 2, 4, 21, 0, 0) != NULL);
    CHECK(write_corpus(pb, sizeof(pb), "bb", 30, 2, 3, 22, 0, 0) != NULL);
    snprintf(spec, sizeof(spec), " 0.7 %s\t0.3  %s ", pa, pb);
    CHECK_EQ_INT(ds_corpus_open(&c, spec, &o, vocab, VOCAB_N, VOCAB_N, &err),
                 0);
    CHECK_EQ_INT(ds_open(&d[0], pa, NULL), 0);
    CHECK_EQ_INT(ds_open(&d[1], pb, NULL), 0);
    if (c == NULL || d[0] == NULL || d[1] == NULL || ctx == NULL) {
        fprintf(stderr, "open: %s\n", err.msg);
        goto out;
    }
    CHECK_EQ_INT(ds_corpus_n_corpora(c), 2);
    for (int k = 0; k < 3; k++) {
        uint64_t counts[2], size = 0;
        struct ds_mapping *m[2];
        double wn[2] = { 0.7 / (0.7 + 0.3), 0.3 / (0.7 + 0.3) };
        uint16_t *bi;
        int64_t *bs;

        CHECK_EQ_INT(ds_blend_counts(w, 2, o.n_samples[k], counts, NULL), 0);
        for (int i = 0; i < 2; i++) {
            m[i] = ref_mapping(d[i], "8,1,1", k, counts[i], &o);
            CHECK(m[i] != NULL);
            size += m[i] ? ds_mapping_n(m[i]) : 0;
        }
        CHECK_EQ_INT(ds_corpus_n_samples(c, (enum ds_split)k), size);
        bi = (uint16_t *)malloc(size * sizeof(uint16_t));
        bs = (int64_t *)malloc(size * sizeof(int64_t));
        CHECK_EQ_INT(ds_blend_normalize(wn, 2, NULL), 0);
        CHECK_EQ_INT(ds_blend_build(wn, 2, size, bi, bs, NULL), 0);
        for (int i = 0; i < 2 && m[0] != NULL && m[1] != NULL; i++)
            check_ernie_split(c, k, d[i], m[i], ctx, bi, (uint16_t)i, bs,
                              o.n_samples[k]);
        for (uint64_t i = 0; i < size; i += 7) {
            struct ds_sample s;

            CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
            if (ds_corpus_sample(c, (enum ds_split)k, i, &s, NULL) == 0)
                CHECK_EQ_INT(s.corpus, bi[i]);
            ds_sample_release(&s);
        }
        free(bi);
        free(bs);
        ds_mapping_free(m[0]);
        ds_mapping_free(m[1]);
    }
out:
    ds_ernie_ctx_free(ctx);
    ds_close(d[0]);
    ds_close(d[1]);
    ds_corpus_close(c);
}

static void
test_corpus_blend_gpt(void)
{
    char pa[4200], pb[4200], cache[4200], spec[9000];
    struct ds_corpus_opts o = gpt_opts(tmp_path(cache, sizeof(cache), "c5"));
    struct ds_corpus *c = NULL;
    struct ds_sample s;
    const double w[2] = { 0.7, 0.3 };
    uint64_t counts[2];

    CHECK(write_corpus(pa, sizeof(pa), "ga", 50, 1, 1, 31, 0, 0) != NULL);
    CHECK(write_corpus(pb, sizeof(pb), "gb", 40, 1, 1, 32, 0, 0) != NULL);
    snprintf(spec, sizeof(spec), "7 %s 3 %s", pa, pb);
    CHECK_EQ_INT(ds_corpus_open(&c, spec, &o, NULL, 0, 0, NULL), 0);
    if (c == NULL)
        return;
    CHECK_EQ_INT(ds_blend_counts(w, 2, 40, counts, NULL), 0);
    CHECK_EQ_INT(counts[0], 29); /* ceil(40 * 0.7 * 1.005) */
    CHECK_EQ_INT(counts[1], 13);
    /* GPT blends the counts asked of the corpora (PaddleNLP 2.8's
     * causal_dataset; samples_gpt_run.py compares with it). */
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(ds_blend_counts(w, 2, o.n_samples[k], counts, NULL), 0);
        CHECK_EQ_INT(ds_corpus_n_samples(c, (enum ds_split)k),
                     counts[0] + counts[1]);
    }
    CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
    for (uint64_t i = 0; i < 40; i++)
        CHECK_EQ_INT(ds_corpus_sample(c, DS_SPLIT_TRAIN, i, &s, NULL), 0);
    ds_sample_release(&s);
    ds_corpus_close(c);
}

static int
open_err(const char *spec, const struct ds_corpus_opts *o, struct ds_err *e)
{
    struct ds_corpus *c = (struct ds_corpus *)&c; /* must become NULL */
    int rc;

    memset(e, 0, sizeof(*e));
    rc = ds_corpus_open(&c, spec, o, vocab, VOCAB_N, VOCAB_N, e);
    CHECK(c == NULL);
    if (rc == 0)
        ds_corpus_close(c);
    return rc;
}

static void
test_corpus_errors_spec(void)
{
    char pa[4200], spec[9000], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c6"));
    struct ds_err e;

    CHECK(write_corpus(pa, sizeof(pa), "ea", 20, 2, 3, 41, 0, 0) != NULL);
    snprintf(spec, sizeof(spec), "0.7 %s 0.3", pa);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "weight '0.3' has no prefix") != NULL);
    snprintf(spec, sizeof(spec), "%s %s", pa, pa);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "is not a number") != NULL);
    snprintf(spec, sizeof(spec), "0.5x %s", pa);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "'0.5x' is not a number") != NULL);
    snprintf(spec, sizeof(spec), "1 %s -1 %s", pa, pa);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "'-1' must be positive") != NULL);
    snprintf(spec, sizeof(spec), "0 %s", pa);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EINVAL);
    CHECK_EQ_INT(open_err("  \t ", &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "empty spec") != NULL);
    /* A missing prefix: ds_open()'s message, naming the file. */
    snprintf(spec, sizeof(spec), "1 %s 1 %s/nope", pa, tmp_root);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EIO);
    CHECK(strstr(e.msg, "nope.idx") != NULL);
    /* Bad options. */
    o.max_seq_len = 4;
    CHECK_EQ_INT(open_err(pa, &o, &e), DS_EINVAL);
    o = ernie_opts(cache);
    o.split = "1,x,1";
    CHECK_EQ_INT(open_err(pa, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, pa) != NULL);
    o = ernie_opts(cache);
    o.kind = DS_CORPUS_GPT;
    o.seed = 1ull << 40;
    CHECK_EQ_INT(open_err(pa, &o, &e), DS_EINVAL);
}

static void
test_corpus_errors_splits(void)
{
    char pa[4200], pb[4200], spec[9000], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c7"));
    struct ds_corpus *c = NULL;
    struct ds_sample s;
    struct ds_err e = { 0, "" };

    /* 3 documents with "949,50,1": valid and test have none. */
    CHECK(write_corpus(pa, sizeof(pa), "sa", 3, 2, 3, 51, 0, 0) != NULL);
    CHECK(write_corpus(pb, sizeof(pb), "sb", 40, 2, 3, 52, 0, 0) != NULL);
    o.split = "949,50,1";
    CHECK_EQ_INT(ds_corpus_open(&c, pa, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    if (c != NULL) {
        CHECK(ds_corpus_n_samples(c, DS_SPLIT_TRAIN) >= 100);
        CHECK_EQ_INT(ds_corpus_n_samples(c, DS_SPLIT_VALID), 0);
        CHECK_EQ_INT(ds_corpus_n_samples(c, DS_SPLIT_TEST), 0);
        CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
        CHECK_EQ_INT(ds_corpus_sample(c, DS_SPLIT_VALID, 0, &s, &e), DS_ERANGE);
        CHECK(strstr(e.msg, "split 'valid', which has 0") != NULL);
        CHECK_EQ_INT(ds_corpus_sample(c, DS_SPLIT_TRAIN, 0, &s, NULL), 0);
        ds_sample_release(&s);
        ds_corpus_close(c);
    }
    /* Blended, valid exists in one corpus only: PaddleNLP cannot either. */
    snprintf(spec, sizeof(spec), "1 %s 1 %s", pb, pa);
    CHECK_EQ_INT(open_err(spec, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "split 'valid': no documents") != NULL);
    CHECK(strstr(e.msg, pa) != NULL);
}

static void
test_corpus_long_sentences(void)
{
    char pa[4200], pb[4200], pc[4200], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c8"));
    struct ds_corpus *c = NULL;
    struct ds_sample s;
    struct ds_err e = { 0, "" };
    uint64_t trunc = 0;

    /* Every third document holds a sentence of 600 tokens: skipped. */
    CHECK(write_corpus(pa, sizeof(pa), "la", 30, 2, 3, 61, 3, 600) != NULL);
    o.split = "1,0,0";
    CHECK_EQ_INT(ds_corpus_open(&c, pa, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    if (c != NULL) {
        CHECK_EQ_INT(ds_corpus_n_skipped(c, 0, DS_SPLIT_TRAIN), 10);
        CHECK_EQ_INT(ds_corpus_n_samples(c, DS_SPLIT_VALID), 0);
        ds_corpus_close(c);
    }
    /* Sentences of 40 tokens, longer than max_seq_len 32: kept, and the
     * samples truncated. */
    CHECK(write_corpus(pb, sizeof(pb), "lb", 10, 2, 2, 62, 1, 40) != NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, pb, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    if (c != NULL) {
        CHECK_EQ_INT(ds_corpus_n_skipped(c, 0, DS_SPLIT_TRAIN), 0);
        CHECK_EQ_INT(ds_sample_init(&s, c, NULL), 0);
        for (uint64_t i = 0; i < ds_corpus_n_samples(c, DS_SPLIT_TRAIN); i++) {
            CHECK_EQ_INT(ds_corpus_sample(c, DS_SPLIT_TRAIN, i, &s, NULL), 0);
            CHECK(s.ernie.n_tokens <= 32);
            trunc += (uint64_t)s.ernie.truncated;
        }
        CHECK(trunc > 0);
        ds_sample_release(&s);
        ds_corpus_close(c);
    }
    /* Every document skipped: a clear error. */
    CHECK(write_corpus(pc, sizeof(pc), "lc", 5, 2, 2, 63, 1, 600) != NULL);
    CHECK_EQ_INT(open_err(pc, &o, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "split 'train'") != NULL);
    CHECK(strstr(e.msg, "none of the 5 documents yields a sample") != NULL);
}

/* The global indices of one global step of `accum` micro-steps on
 * `world` ranks, in (micro-step, rank, k) order; the position advances. */
static int
global_step(const struct ds_corpus *c, struct ds_position *pos, uint32_t world,
            uint32_t micro, uint32_t accum, uint64_t *out)
{
    size_t n = 0;

    for (uint32_t a = 0; a < accum; a++) {
        for (uint32_t r = 0; r < world; r++) {
            if (ds_corpus_batch_indices(c, pos, r, world, micro, out + n,
                                        NULL) < 0)
                return -1;
            /* PaddleNLP's order: rank r's slice of the chunk. */
            for (uint32_t k = 0; k < micro; k++)
                CHECK_EQ_INT(out[n + k],
                             pos->consumed_samples + (uint64_t)r * micro + k);
            n += micro;
        }
        pos->consumed_samples += (uint64_t)micro * world;
    }
    return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void
test_corpus_position_resume(void)
{
    char pa[4200], cache[4200];
    struct ds_corpus_opts o = gpt_opts(tmp_path(cache, sizeof(cache), "c9"));
    struct ds_corpus *c = NULL;
    struct ds_position p4 = { 0, DS_SPLIT_TRAIN }, p1 = { 0, DS_SPLIT_TRAIN };
    struct ds_position p2;
    uint64_t a[16], b[16], idx[4];
    struct ds_sample s1, s2;
    struct ds_err e = { 0, "" };
    const uint32_t micro = 2, gbs = 8;

    CHECK(write_corpus(pa, sizeof(pa), "pa", 60, 1, 1, 71, 0, 0) != NULL);
    o.n_samples[0] = 64;
    CHECK_EQ_INT(ds_corpus_open(&c, pa, &o, NULL, 0, 0, NULL), 0);
    if (c == NULL)
        return;
    CHECK_EQ_INT(ds_sample_init(&s1, c, NULL), 0);
    CHECK_EQ_INT(ds_sample_init(&s2, c, NULL), 0);
    /* k = 3 global steps on 4 ranks (accumulate 1), against world 1
     * (accumulate 4). */
    for (int step = 0; step < 3; step++) {
        CHECK_EQ_INT(global_step(c, &p4, 4, micro, 1, a), 0);
        CHECK_EQ_INT(global_step(c, &p1, 1, micro, 4, b), 0);
        CHECK_EQ_MEM(a, b, gbs * sizeof(uint64_t));
    }
    CHECK_EQ_INT(p4.consumed_samples, 3 * gbs);
    /* Resume the checkpointed position on 2 ranks (accumulate 2): each
     * global step reads, as a set, what world 1 reads next. */
    p2 = p4;
    while (p1.consumed_samples + gbs <=
           ds_corpus_n_samples(c, DS_SPLIT_TRAIN)) {
        CHECK_EQ_INT(global_step(c, &p2, 2, micro, 2, a), 0);
        CHECK_EQ_INT(global_step(c, &p1, 1, micro, 4, b), 0);
        qsort(a, gbs, sizeof(uint64_t), cmp_u64);
        qsort(b, gbs, sizeof(uint64_t), cmp_u64);
        CHECK_EQ_MEM(a, b, gbs * sizeof(uint64_t));
        for (uint32_t i = 0; i < gbs; i++) {
            CHECK_EQ_INT(ds_corpus_sample(c, DS_SPLIT_TRAIN, a[i], &s1, NULL),
                         0);
            CHECK_EQ_INT(ds_corpus_sample(c, DS_SPLIT_TRAIN, b[i], &s2, NULL),
                         0);
            CHECK_EQ_MEM(s1.tokens, s2.tokens, s1.n_tokens * sizeof(int32_t));
        }
    }
    CHECK_EQ_INT(p2.consumed_samples, p1.consumed_samples);
    /* drop_last: a partial chunk is not read. */
    p2.consumed_samples = ds_corpus_n_samples(c, DS_SPLIT_TRAIN) - 3;
    CHECK_EQ_INT(ds_corpus_batch_indices(c, &p2, 0, 2, micro, idx, &e),
                 DS_ERANGE);
    p2.consumed_samples = ds_corpus_n_samples(c, DS_SPLIT_TRAIN) - 4;
    CHECK_EQ_INT(ds_corpus_batch_indices(c, &p2, 1, 2, micro, idx, NULL), 0);
    CHECK_EQ_INT(idx[1], ds_corpus_n_samples(c, DS_SPLIT_TRAIN) - 1);
    CHECK_EQ_INT(ds_corpus_batch_indices(c, &p2, 2, 2, micro, idx, NULL),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_corpus_batch_indices(c, &p2, 0, 0, micro, idx, NULL),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_corpus_batch_indices(c, &p2, 0, 1, 0, idx, NULL),
                 DS_EINVAL);
    ds_sample_release(&s1);
    ds_sample_release(&s2);
    ds_corpus_close(c);
    ds_corpus_close(NULL);
}

/* A checksum of every train sample, fetched by one thread into its own
 * buffers. */
struct sum_job {
    const struct ds_corpus *c;
    uint64_t sum;
    int failed;
};

static void *
sum_samples(void *arg)
{
    struct sum_job *j = (struct sum_job *)arg;
    struct ds_sample s;
    uint64_t n = ds_corpus_n_samples(j->c, DS_SPLIT_TRAIN);

    if (ds_sample_init(&s, j->c, NULL) < 0) {
        j->failed = 1;
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (ds_corpus_sample(j->c, DS_SPLIT_TRAIN, i, &s, NULL) < 0) {
            j->failed = 1;
            continue;
        }
        for (uint32_t k = 0; k < s.ernie.n_tokens; k++)
            j->sum = j->sum * 31 + (uint64_t)s.ernie.input_ids[k];
        for (uint32_t k = 0; k < s.ernie.n_masked; k++)
            j->sum = j->sum * 37 + (uint64_t)s.ernie.masked_labels[k];
        j->sum = j->sum * 3 + (uint64_t)s.ernie.is_random;
    }
    ds_sample_release(&s);
    return NULL;
}

static void
test_corpus_threads(void)
{
    char pfx[4200], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "ct"));
    struct ds_corpus *c = NULL;
    struct sum_job serial = { NULL, 0, 0 }, jobs[4];
    pthread_t t[4];

    CHECK(write_corpus(pfx, sizeof(pfx), "t", 40, 2, 4, 81, 0, 0) != NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, pfx, &o, vocab, VOCAB_N, VOCAB_N, NULL), 0);
    if (c == NULL)
        return;
    serial.c = c;
    sum_samples(&serial);
    CHECK(!serial.failed);
    for (int i = 0; i < 4; i++) {
        jobs[i] = serial;
        jobs[i].sum = 0;
        CHECK_EQ_INT(pthread_create(&t[i], NULL, sum_samples, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(!jobs[i].failed);
        CHECK_EQ_INT(jobs[i].sum, serial.sum);
    }
    ds_corpus_close(c);
}

/* ------------------------------------------------------------------------ */
/* The corpus list: quoting, directories, list files                        */

/* mkdir tmp_root/name; the path into buf. */
static const char *
tmp_dir(char *buf, size_t cap, const char *name)
{
    tmp_path(buf, cap, name);
    if (mkdir(buf, 0777) < 0)
        perror(buf);
    return buf;
}

static bool
exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Create the empty file tmp_root/name. */
static void
touch(const char *name)
{
    char path[4200];
    FILE *f = fopen(tmp_path(path, sizeof(path), name), "w");

    CHECK(f != NULL);
    if (f != NULL)
        fclose(f);
}

static void
test_corpus_list_quoting(void)
{
    char d[4200], pa[4200], pb[4200], spec[13000], cache[4200];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c11"));
    struct ds_corpus_list l;
    struct ds_corpus *c = NULL;
    struct ds_err e = { 0, "" };

    tmp_dir(d, sizeof(d), "sp ace");
    tmp_dir(d, sizeof(d), "sp ace/out dir");
    CHECK(write_corpus(pa, sizeof(pa), "sp ace/out dir/q", 30, 2, 3, 61, 0,
                       0) != NULL);
    CHECK(write_corpus(pb, sizeof(pb), "qb", 30, 2, 3, 62, 0, 0) != NULL);
    /* A path that exists as given: blanks and all. */
    CHECK_EQ_INT(ds_corpus_list_parse(&l, pa, &e), 0);
    CHECK_EQ_INT(l.n, 1);
    CHECK(!l.weighted && !l.from_dir);
    if (l.n == 1)
        CHECK_EQ_STR(l.prefixes[0], pa);
    ds_corpus_list_release(&l);
    /* Quoted in a weight list, both kinds of quotes and a backslash. */
    snprintf(spec, sizeof(spec), "1 \"%s\"  2.5 '%s'", pa, pb);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), 0);
    CHECK_EQ_INT(l.n, 2);
    CHECK(l.weighted);
    if (l.n == 2) {
        CHECK_EQ_STR(l.prefixes[0], pa);
        CHECK_EQ_STR(l.prefixes[1], pb);
        CHECK(l.weights[0] == 1 && l.weights[1] == 2.5);
    }
    ds_corpus_list_release(&l);
    snprintf(spec, sizeof(spec), "3 %s/sp\\ ace/out\\ dir/q 1 %s", tmp_root,
             pb);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), 0);
    if (l.n == 2)
        CHECK_EQ_STR(l.prefixes[0], pa);
    ds_corpus_list_release(&l);
    /* The corpus opens through the quoted list. */
    snprintf(spec, sizeof(spec), "1 \"%s\" 1 %s", pa, pb);
    CHECK_EQ_INT(ds_corpus_open(&c, spec, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    if (c != NULL)
        CHECK_EQ_INT(ds_corpus_n_corpora(c), 2);
    ds_corpus_close(c);
    /* A path with blanks that does not exist: both readings named. */
    snprintf(spec, sizeof(spec), "%s/sp ace/out dir/nope", tmp_root);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "not found") != NULL);
    CHECK(strstr(e.msg, "not a weight list") != NULL);
    CHECK(strstr(e.msg, "/sp' is not a number") != NULL);
    snprintf(spec, sizeof(spec), "1 \"%s", pa);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "unterminated \" quote") != NULL);
    /* A list names each of its files when one is missing. */
    snprintf(spec, sizeof(spec), "1 '%s' 1 '%s/sp ace/gone'", pa, tmp_root);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), DS_EIO);
    CHECK(strstr(e.msg, "gone.idx") != NULL);
    CHECK(l.n == 0 && l.prefixes == NULL);
}

static void
test_corpus_list_dir(void)
{
    char d[4200], p[4200], spec[13000], cache[4200], path[4300];
    struct ds_corpus_opts o = ernie_opts(tmp_path(cache, sizeof(cache), "c12"));
    struct ds_corpus *c1 = NULL, *c2 = NULL;
    struct ds_corpus_list l;
    struct ds_err e = { 0, "" };
    struct ds_sample s1, s2;

    tmp_dir(d, sizeof(d), "dd");
    CHECK(write_corpus(p, sizeof(p), "dd/c", 30, 2, 3, 71, 0, 0) != NULL);
    CHECK(write_corpus(p, sizeof(p), "dd/a", 30, 2, 3, 72, 0, 0) != NULL);
    corpus_format = DS_FORMAT_NPY;
    CHECK(write_corpus(p, sizeof(p), "dd/b", 30, 2, 3, 73, 0, 0) != NULL);
    CHECK(write_corpus(p, sizeof(p), "dd/a", 30, 2, 3, 72, 0, 0) != NULL);
    corpus_format = DS_FORMAT_MMAP;
    /* Not datasets: a lone .bin, notes, a directory, a hidden "." file. */
    touch("dd/lone.bin");
    touch("dd/notes.txt");
    touch("dd/.idx");
    tmp_dir(p, sizeof(p), "dd/index-cache");
    CHECK_EQ_INT(ds_corpus_list_parse(&l, d, &e), 0);
    CHECK_EQ_INT(l.n, 3);
    CHECK(l.weighted && l.from_dir);
    if (l.n == 3) {
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof(path), "%s/%c", d, 'a' + i);
            CHECK_EQ_STR(l.prefixes[i], path);
            CHECK(l.weights[i] == 1);
        }
    }
    ds_corpus_list_release(&l);
    /* os.path.join: no double slash after "dd/". */
    snprintf(spec, sizeof(spec), "%s/", d);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), 0);
    if (l.n == 3) {
        snprintf(path, sizeof(path), "%s/a", d);
        CHECK_EQ_STR(l.prefixes[0], path);
    }
    ds_corpus_list_release(&l);
    /* The directory is the weight list "1 a 1 b 1 c", sample for sample. */
    snprintf(spec, sizeof(spec), "1 %s/a 1 %s/b 1 %s/c", d, d, d);
    CHECK_EQ_INT(ds_corpus_open(&c1, d, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    CHECK_EQ_INT(ds_corpus_open(&c2, spec, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    if (c1 != NULL && c2 != NULL) {
        uint64_t n = ds_corpus_n_samples(c1, DS_SPLIT_TRAIN);

        CHECK_EQ_INT(ds_corpus_n_corpora(c1), 3);
        CHECK_EQ_INT(ds_corpus_n_samples(c2, DS_SPLIT_TRAIN), n);
        CHECK_EQ_INT(ds_sample_init(&s1, c1, NULL), 0);
        CHECK_EQ_INT(ds_sample_init(&s2, c2, NULL), 0);
        for (uint64_t i = 0; i < n; i++) {
            CHECK_EQ_INT(ds_corpus_sample(c1, DS_SPLIT_TRAIN, i, &s1, NULL), 0);
            CHECK_EQ_INT(ds_corpus_sample(c2, DS_SPLIT_TRAIN, i, &s2, NULL), 0);
            CHECK(s1.corpus == s2.corpus);
            CHECK(ernie_equal(&s1.ernie, &s2.ernie, 32));
        }
        ds_sample_release(&s1);
        ds_sample_release(&s2);
    }
    ds_corpus_close(c1);
    ds_corpus_close(c2);
    /* One dataset: used alone, as PaddleNLP does. */
    tmp_dir(d, sizeof(d), "d1");
    CHECK(write_corpus(p, sizeof(p), "d1/only", 30, 2, 3, 74, 0, 0) != NULL);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, d, &e), 0);
    CHECK(l.n == 1 && !l.weighted && l.from_dir);
    ds_corpus_list_release(&l);
    /* Refused: an empty directory, an index without its data, a directory
     * in a weight list. */
    tmp_dir(d, sizeof(d), "d0");
    CHECK_EQ_INT(ds_corpus_list_parse(&l, d, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "holds no dataset") != NULL);
    touch("d0/x.idx");
    CHECK_EQ_INT(ds_corpus_list_parse(&l, d, &e), DS_EIO);
    CHECK(strstr(e.msg, "x.idx' has no '") != NULL);
    snprintf(spec, sizeof(spec), "1 %s/dd 1 %s/dd/a", tmp_root, tmp_root);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "is a directory") != NULL);
}

static void
test_corpus_list_file(void)
{
    char pa[4200], pb[4200], lst[4200], spec[4300];
    struct ds_corpus_list l;
    struct ds_err e = { 0, "" };
    FILE *f;

    CHECK(write_corpus(pa, sizeof(pa), "sp ace/lf a", 20, 2, 3, 81, 0, 0) !=
          NULL);
    CHECK(write_corpus(pb, sizeof(pb), "lfb", 20, 2, 3, 82, 0, 0) != NULL);
    f = fopen(tmp_path(lst, sizeof(lst), "list.txt"), "w");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    fprintf(f, "# the corpora of the run\n0.7 \"%s\"\n\n0.3 %s # wiki\n", pa,
            pb);
    fclose(f);
    snprintf(spec, sizeof(spec), "@%s", lst);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), 0);
    CHECK_EQ_INT(l.n, 2);
    if (l.n == 2) {
        CHECK_EQ_STR(l.prefixes[0], pa);
        CHECK_EQ_STR(l.prefixes[1], pb);
        CHECK(l.weights[0] == 0.7 && l.weights[1] == 0.3);
    }
    ds_corpus_list_release(&l);
    snprintf(spec, sizeof(spec), "@%s.gone", lst);
    CHECK_EQ_INT(ds_corpus_list_parse(&l, spec, &e), DS_EIO);
    CHECK(strstr(e.msg, "list.txt.gone") != NULL);
}

/* Locks and temporaries of interrupted cache builds are removed, those of
 * live processes and those held are kept, and a build leaves no lock. */
static void
test_corpus_stale_locks(void)
{
    char d[4200], p[4200], path[4300], gp[4200], ic[4300];
    struct ds_corpus_opts o = ernie_opts(NULL);
    struct ds_corpus *c = NULL;
    struct ds_err e = { 0, "" };
    static const char *const md5 = "0123456789abcdef0123456789abcdef";
    int held;

    tmp_dir(d, sizeof(d), "st");
    CHECK(write_corpus(p, sizeof(p), "st/s", 30, 2, 3, 91, 0, 0) != NULL);
    touch("st/s_train_indexmap_1mns_29msl_0.10ssp_1s.npy.lock");
    touch("st/s_test_indexmap_1mns_29msl_0.10ssp_1s.npy.tmp.999999999");
    snprintf(path, sizeof(path), "st/s_test_indexmap_2mns.npy.tmp.%ld",
             (long)getppid());
    touch(path);
    touch("st/other_train_indexmap_1mns.npy.lock");
    touch("st/unrelated.lock");
    touch("st/s_valid_indexmap_1mns.npy.lock");
    held =
        open(tmp_path(path, sizeof(path), "st/s_valid_indexmap_1mns.npy.lock"),
             O_RDWR);
    CHECK(held >= 0 && flock(held, LOCK_EX) == 0);
    CHECK_EQ_INT(ds_corpus_open(&c, p, &o, vocab, VOCAB_N, VOCAB_N, &e), 0);
    if (c != NULL) {
        CHECK_EQ_INT(ds_corpus_n_stale(c), 2);
        CHECK_EQ_INT(ds_corpus_n_built(c), 3);
    }
    ds_corpus_close(c);
    c = NULL;
    CHECK(!exists(tmp_path(path, sizeof(path),
                           "st/s_train_indexmap_1mns_29msl_0.10ssp_1s.npy."
                           "lock")));
    CHECK(!exists(tmp_path(path, sizeof(path),
                           "st/s_test_indexmap_1mns_29msl_0.10ssp_1s.npy.tmp."
                           "999999999")));
    CHECK(exists(
        tmp_path(path, sizeof(path), "st/s_valid_indexmap_1mns.npy.lock")));
    CHECK(exists(
        tmp_path(path, sizeof(path), "st/other_train_indexmap_1mns.npy.lock")));
    CHECK(exists(tmp_path(path, sizeof(path), "st/unrelated.lock")));
    snprintf(gp, sizeof(gp), "st/s_test_indexmap_2mns.npy.tmp.%ld",
             (long)getppid());
    CHECK(exists(tmp_path(path, sizeof(path), gp)));
    close(held);
    /* The three builds left no lock beside their mappings. */
    {
        char cmd[4500];

        snprintf(cmd, sizeof(cmd),
                 "test $(ls '%s' | grep -c 'indexmap_.*\\.lock$') -eq 2", d);
        CHECK_EQ_INT(system(cmd), 0);
    }
    /* GPT: index-cache/ beside the data. */
    tmp_dir(d, sizeof(d), "sg");
    CHECK(write_corpus(gp, sizeof(gp), "sg/g", 50, 1, 1, 92, 0, 0) != NULL);
    tmp_dir(ic, sizeof(ic), "sg/index-cache");
    snprintf(path, sizeof(path), "sg/index-cache/%s.dsc.lock", md5);
    touch(path);
    snprintf(path, sizeof(path), "sg/index-cache/%s_doc_idx.npy.tmp.999999999",
             md5);
    touch(path);
    o = gpt_opts(NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, gp, &o, NULL, 0, 0, &e), 0);
    if (c != NULL)
        CHECK_EQ_INT(ds_corpus_n_stale(c), 2);
    ds_corpus_close(c);
    {
        char cmd[9000];

        snprintf(cmd, sizeof(cmd),
                 "test $(ls '%s' | grep -c '\\.lock$\\|\\.tmp\\.') -eq 0 && "
                 "test $(ls '%s' | grep -c 'dsc$') -eq 3",
                 ic, ic);
        CHECK_EQ_INT(system(cmd), 0);
    }
}

/* With a cache directory, caches beside the data are read (PaddleNLP's and
 * Megatron-LM's order); missing ones are built in the cache directory. */
static void
test_corpus_cache_dir_beside(void)
{
    char d[4200], p[4200], gp[4200], cache[4200], cmd[9000];
    struct ds_corpus_opts o = ernie_opts(NULL);
    struct ds_corpus *c = NULL;

    tmp_dir(d, sizeof(d), "bs");
    CHECK(write_corpus(p, sizeof(p), "bs/e", 30, 2, 3, 93, 0, 0) != NULL);
    CHECK(write_corpus(gp, sizeof(gp), "bs/g", 50, 1, 1, 94, 0, 0) != NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, p, &o, vocab, VOCAB_N, VOCAB_N, NULL), 0);
    ds_corpus_close(c);
    o.cache_dir = tmp_path(cache, sizeof(cache), "bs-cache");
    CHECK_EQ_INT(ds_corpus_open(&c, p, &o, vocab, VOCAB_N, VOCAB_N, NULL), 0);
    if (c != NULL)
        CHECK_EQ_INT(ds_corpus_n_built(c), 0);
    ds_corpus_close(c);
    o = gpt_opts(NULL);
    CHECK_EQ_INT(ds_corpus_open(&c, gp, &o, NULL, 0, 0, NULL), 0);
    ds_corpus_close(c);
    o.cache_dir = cache;
    CHECK_EQ_INT(ds_corpus_open(&c, gp, &o, NULL, 0, 0, NULL), 0);
    if (c != NULL)
        CHECK_EQ_INT(ds_corpus_n_built(c), 0);
    ds_corpus_close(c);
    snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", cache);
    CHECK_EQ_INT(system(cmd), 0);
    /* A new count is built there, not beside the data. */
    o.n_samples[0] = 41;
    CHECK_EQ_INT(ds_corpus_open(&c, gp, &o, NULL, 0, 0, NULL), 0);
    if (c != NULL)
        CHECK_EQ_INT(ds_corpus_n_built(c), 1);
    ds_corpus_close(c);
    snprintf(cmd, sizeof(cmd),
             "test $(ls '%s' | grep -c 'dsc$') -eq 1 && "
             "test $(ls '%s/bs/index-cache' | grep -c 'dsc$') -eq 3",
             cache, tmp_root);
    CHECK_EQ_INT(system(cmd), 0);
}

static void
test_init(void)
{
    vocab_init();
}

TESTS(ds_train, TEST(test_init), TEST(test_corpus_ernie_samples),
      TEST(test_corpus_ernie_cache_reuse), TEST(test_corpus_cache_binary_head),
      TEST(test_corpus_gpt_samples), TEST(test_corpus_blend),
      TEST(test_corpus_blend_gpt), TEST(test_corpus_errors_spec),
      TEST(test_corpus_errors_splits), TEST(test_corpus_long_sentences),
      TEST(test_corpus_position_resume), TEST(test_corpus_threads),
      TEST(test_corpus_list_quoting), TEST(test_corpus_list_dir),
      TEST(test_corpus_list_file), TEST(test_corpus_stale_locks),
      TEST(test_corpus_cache_dir_beside))
