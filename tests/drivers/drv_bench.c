/* SPDX-License-Identifier: MIT */
/*
 * drv_bench.c: the C side of bench/samples.sh, one thread.
 *
 *   drv_bench repeat SRC OUT MIN_TOKENS   SRC's documents, over and over,
 *                                         into the mmap dataset OUT
 *   drv_bench mapping PREFIX MNS L SSP SEED   best of 3 ds_mapping_build()
 *                                         over every document of PREFIX
 *   drv_bench ernie PREFIX VOCAB N        N ERNIE samples (seq 512) over
 *                                         the mapping of PREFIX
 *   drv_bench gpt PREFIX N SEQ_LEN        N GPT samples of SEQ_LEN + 1
 *   drv_bench window-floor PREFIX N SEQ_LEN   the copy alone: N windows
 *                                         of SEQ_LEN + 1 uint16 tokens at
 *                                         random places of PREFIX's mapped
 *                                         tokens widened to int32, each
 *                                         prefetched 4 ahead; no index
 *   drv_bench shuffle-floor ROWS          the swaps alone: Fisher-Yates
 *                                         over ROWS 12-byte rows with a
 *                                         xorshift generator, partners
 *                                         drawn and prefetched 16 ahead
 *
 * Each timing mode prints "seconds count" on stdout (count: mapping rows,
 * or samples built) and a check value on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ds.h"
#include "tok.h"

/* GPT samples are fetched as the trainer does: a micro-batch at a time. */
#define BATCH 32

static double
now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void
die(const char *what, const struct ds_err *e)
{
    fprintf(stderr, "drv_bench: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static struct ds_dataset *
open_ds(const char *prefix)
{
    struct ds_dataset *d;
    struct ds_err e;

    if (ds_open(&d, prefix, &e) < 0)
        die(prefix, &e);
    return d;
}

/* docs (n_docs + 1 entries) and sizes of every document of d. */
static void
docs_sizes(const struct ds_dataset *d, int64_t **docs, int32_t **sizes)
{
    uint64_t m = ds_dataset_n_documents(d), n = ds_dataset_n_sentences(d);

    *docs = (int64_t *)malloc((size_t)(m + 1) * sizeof(**docs));
    *sizes = (int32_t *)malloc((size_t)n * sizeof(**sizes));
    if (*docs == NULL || *sizes == NULL)
        die("docs", NULL);
    for (uint64_t k = 0; k <= m; k++)
        (*docs)[k] = (int64_t)ds_document_first(d, k);
    for (uint64_t i = 0; i < n; i++)
        (*sizes)[i] = (int32_t)ds_sentence_len(d, i);
}

static int
repeat(const char *src, const char *out, uint64_t min_tokens)
{
    struct ds_dataset *d = open_ds(src);
    struct ds_writer *w;
    struct ds_err e;
    uint64_t m = ds_dataset_n_documents(d);
    int32_t *ids = NULL;
    size_t cap = 0;

    if (ds_writer_open(&w, out, DS_FORMAT_MMAP, ds_dataset_dtype(d), &e) < 0)
        die(out, &e);
    while (ds_writer_n_tokens(w) < min_tokens) {
        for (uint64_t k = 0; k < m; k++) {
            for (uint64_t s = ds_document_first(d, k);
                 s < ds_document_first(d, k + 1); s++) {
                size_t n = ds_sentence_len(d, s);

                if (n > cap) {
                    cap = n;
                    ids = (int32_t *)realloc(ids, cap * sizeof(*ids));
                }
                if (ds_read_tokens(d, ds_sentence_start(d, s), n, ids, &e) <
                        0 ||
                    ds_writer_add_sentence(w, ids, n, &e) < 0)
                    die(out, &e);
            }
            if (ds_writer_end_document(w, &e) < 0)
                die(out, &e);
        }
    }
    printf("%llu tokens %llu documents\n",
           (unsigned long long)ds_writer_n_tokens(w),
           (unsigned long long)ds_writer_n_documents(w));
    if (ds_writer_commit(w, &e) < 0)
        die(out, &e);
    free(ids);
    ds_close(d);
    return 0;
}

static int
mapping(char **argv)
{
    struct ds_dataset *d = open_ds(argv[0]);
    struct ds_mapping_params p;
    struct ds_mapping *m;
    struct ds_err e;
    int64_t *docs;
    int32_t *sizes;
    double best = 1e30;
    uint64_t rows = 0;

    docs_sizes(d, &docs, &sizes);
    memset(&p, 0, sizeof(p));
    p.max_num_samples = strtoull(argv[1], NULL, 10);
    p.num_epochs = DS_MAPPING_EPOCHS_ANY;
    p.max_seq_len = atoi(argv[2]);
    p.short_seq_prob = strtod(argv[3], NULL);
    p.seed = atoi(argv[4]);
    p.min_num_sent = 2;
    for (int r = 0; r < 3; r++) {
        double t0 = now(), t;

        if (ds_mapping_build(&m, docs, (size_t)ds_dataset_n_documents(d), sizes,
                             (size_t)ds_dataset_n_sentences(d), &p, &e) < 0)
            die("mapping", &e);
        t = now() - t0;
        best = t < best ? t : best;
        rows = ds_mapping_n(m);
        ds_mapping_free(m);
    }
    printf("%.6f %llu\n", best, (unsigned long long)rows);
    free(docs);
    free(sizes);
    ds_close(d);
    return 0;
}

static int
ernie(char **argv)
{
    struct ds_dataset *d = open_ds(argv[0]);
    struct ds_mapping_params p;
    struct ds_mapping *m;
    struct ds_ernie_opts o;
    struct ds_ernie_ctx *ctx;
    struct ds_ernie_sample s;
    struct tok_vocab *v;
    struct tok_err te;
    struct ds_err e;
    uint64_t n = strtoull(argv[2], NULL, 10), check = 0, row[3];
    size_t n_base, n_ids;
    const char **tokens;
    int64_t *docs;
    int32_t *sizes;
    double t0;

    if (tok_vocab_load(&v, argv[1], &te) < 0)
        return fprintf(stderr, "drv_bench: %s\n", te.msg), 1;
    n_base = tok_vocab_n_ids(v);
    if (tok_vocab_extend_chinese(v, &te) < 0)
        return 1;
    n_ids = tok_vocab_n_ids(v);
    tokens = (const char **)malloc(n_ids * sizeof(*tokens));
    for (size_t i = 0; i < n_ids; i++) {
        tokens[i] = tok_vocab_token(v, (tok_id)i, NULL);
        if (tokens[i] == NULL)
            tokens[i] = "";
    }
    memset(&o, 0, sizeof(o));
    o.max_seq_len = 512;
    o.masked_lm_prob = 0.15;
    o.max_ngrams = 3;
    o.binary_head = 1;
    o.cls_id = tok_vocab_find(v, "[CLS]", 5);
    o.sep_id = tok_vocab_find(v, "[SEP]", 5);
    o.mask_id = tok_vocab_find(v, "[MASK]", 6);
    o.pad_id = tok_vocab_find(v, "[PAD]", 5);
    o.seed = 1234;
    if (ds_ernie_ctx_new(&ctx, &o, tokens, n_ids, n_base, &e) < 0 ||
        ds_ernie_sample_init(&s, ctx, &e) < 0)
        die("ernie", &e);
    docs_sizes(d, &docs, &sizes);
    memset(&p, 0, sizeof(p));
    p.max_num_samples = n;
    p.num_epochs = DS_MAPPING_EPOCHS_ANY;
    p.max_seq_len = 509;
    p.short_seq_prob = 0.1;
    p.seed = 1234;
    p.min_num_sent = 2;
    if (ds_mapping_build(&m, docs, (size_t)ds_dataset_n_documents(d), sizes,
                         (size_t)ds_dataset_n_sentences(d), &p, &e) < 0)
        die("mapping", &e);
    t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        ds_mapping_row(m, i, row);
        if (ds_ernie_sample_build(ctx, d, row[0], row[1], (uint32_t)row[2], i,
                                  &s, &e) < 0)
            die("sample", &e);
        check += s.n_masked + s.n_tokens;
    }
    printf("%.6f %llu\n", now() - t0, (unsigned long long)n);
    fprintf(stderr, "check %llu\n", (unsigned long long)check);
    ds_mapping_free(m);
    ds_ernie_sample_release(&s);
    ds_ernie_ctx_free(ctx);
    free(tokens);
    free(docs);
    free(sizes);
    tok_vocab_free(v);
    ds_close(d);
    return 0;
}

static int
gpt(char **argv)
{
    struct ds_dataset *d = open_ds(argv[0]);
    uint64_t n = strtoull(argv[1], NULL, 10), n_items, check = 0, *docs;
    uint32_t seq = (uint32_t)strtoul(argv[2], NULL, 10);
    struct ds_gpt *g;
    struct ds_err e;
    int32_t *win;
    double t0;

    n_items = ds_dataset_n_sentences(d);
    docs = (uint64_t *)malloc((size_t)n_items * sizeof(*docs));
    win = (int32_t *)malloc(BATCH * ((size_t)seq + 1) * sizeof(*win));
    for (uint64_t k = 0; k < n_items; k++)
        docs[k] = k;
    if (ds_gpt_build(&g, d, docs, (size_t)n_items, n, seq, 1234, NULL, &e) < 0)
        die("gpt", &e);
    t0 = now();
    for (uint64_t i = 0; i < n; i += BATCH) {
        uint64_t idx[BATCH];
        size_t m = n - i < BATCH ? (size_t)(n - i) : BATCH;

        for (size_t k = 0; k < m; k++)
            idx[k] = i + k;
        if (ds_gpt_samples(g, d, idx, m, win, &e) < 0)
            die("gpt sample", &e);
        check += (uint64_t)win[i % (seq + 1)];
    }
    printf("%.6f %llu\n", now() - t0, (unsigned long long)n);
    fprintf(stderr, "check %llu\n", (unsigned long long)check);
    ds_gpt_free(g);
    free(win);
    free(docs);
    ds_close(d);
    return 0;
}

/* What a GPT sample costs at least on this machine: its window's copy
 * from the page cache, without the index lookups of a real sample. */
static int
window_floor(char **argv)
{
    struct ds_dataset *d = open_ds(argv[0]);
    uint64_t n = strtoull(argv[1], NULL, 10), check = 0,
             x = 88172645463325252ull;
    size_t row = (size_t)strtoul(argv[2], NULL, 10) + 1, ahead = 4;
    uint64_t span = ds_dataset_n_tokens(d), *at;
    const uint16_t *tok = ds_dataset_tokens(d);
    int32_t *win = (int32_t *)malloc(BATCH * row * sizeof(*win));
    double t0;

    if (ds_dataset_dtype(d) != DS_DTYPE_UINT16 || span <= row) {
        fprintf(stderr, "drv_bench: window-floor wants uint16 tokens\n");
        return 1;
    }
    at = (uint64_t *)malloc((size_t)n * sizeof(*at));
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        at[i] = x % (span - row);
    }
    t0 = now();
    for (uint64_t i = 0; i < n; i++) {
        int32_t *w = win + (i % BATCH) * row;

        if (i + ahead < n)
            for (size_t b = 0; b < row * 2; b += 64)
                __builtin_prefetch((const char *)(tok + at[i + ahead]) + b);
        /* ds_read_tokens' own widening, through the library */
        if (ds_read_tokens(d, at[i], row, w, NULL) < 0)
            return 1;
        check += (uint64_t)w[i % row];
    }
    printf("%.6f %llu\n", now() - t0, (unsigned long long)n);
    fprintf(stderr, "check %llu\n", (unsigned long long)check);
    free(at);
    free(win);
    ds_close(d);
    return 0;
}

/* What the mapping's final shuffle costs at least: its swaps over rows of
 * the same size with prefetched partners and the cheapest generator. */
static int
shuffle_floor(char **argv)
{
    uint64_t n = strtoull(argv[0], NULL, 10), x = 88172645463325252ull;
    uint32_t *r = (uint32_t *)malloc((size_t)n * 12);
    uint64_t ahead[16], drawn;
    double t0;

    for (uint64_t i = 0; i < 3 * n; i++)
        r[i] = (uint32_t)i;
    t0 = now();
    drawn = n - 1;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint32_t *a, *b;

        for (; drawn > 0 && drawn + 16 > i; drawn--) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            ahead[drawn % 16] = x % (drawn + 1);
            __builtin_prefetch(r + 3 * ahead[drawn % 16], 1);
        }
        a = r + 3 * i, b = r + 3 * ahead[i % 16];
        for (int k = 0; k < 3; k++) {
            uint32_t t = a[k];

            a[k] = b[k], b[k] = t;
        }
    }
    printf("%.6f %llu\n", now() - t0, (unsigned long long)n);
    fprintf(stderr, "check %u\n", r[n / 2]);
    free(r);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "repeat") == 0)
        return repeat(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    if (argc == 7 && strcmp(argv[1], "mapping") == 0)
        return mapping(argv + 2);
    if (argc == 5 && strcmp(argv[1], "ernie") == 0)
        return ernie(argv + 2);
    if (argc == 5 && strcmp(argv[1], "gpt") == 0)
        return gpt(argv + 2);
    if (argc == 5 && strcmp(argv[1], "window-floor") == 0)
        return window_floor(argv + 2);
    if (argc == 3 && strcmp(argv[1], "shuffle-floor") == 0)
        return shuffle_floor(argv + 2);
    fprintf(stderr, "usage: drv_bench repeat SRC OUT MIN_TOKENS | mapping "
                    "PREFIX MNS L SSP SEED | ernie PREFIX VOCAB N | gpt "
                    "PREFIX N SEQ_LEN | window-floor PREFIX N SEQ_LEN | "
                    "shuffle-floor ROWS\n");
    return 2;
}
