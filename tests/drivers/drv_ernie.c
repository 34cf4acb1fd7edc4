/* SPDX-License-Identifier: MIT */
/*
 * drv_ernie.c: the ERNIE samples of libdata for tests/conformance/
 * samples_ernie_run.py and one-off checks against PaddleNLP.
 *
 *   drv_ernie VOCAB N_BASE MAX_SEQ_LEN MASKED_LM_PROB MAX_NGRAMS
 *             NGRAM_MODE BINARY_HEAD CLS SEP MASK PAD SEED [PREFIX]
 *
 * NGRAM_MODE: bit 0 favor_longer_ngram, bit 1 geometric n-gram sizes.
 * VOCAB holds one token a line (ids 0.., the first N_BASE the base vocab).
 * Each line of stdin is a sample, "IDX TGT N_SENT LEN_1..LEN_N ID..."
 * (the ids of the sentences back to back) or, with PREFIX (a dataset),
 * "IDX TGT START END".  For each, one line on stdout:
 *   "ok IS_RANDOM TRUNCATED N_TOKENS | IDS | TYPES | POSITIONS | LABELS"
 * with MAX_SEQ_LEN ids and types (padding included), or "err CODE MSG".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ds.h"

static char **
read_vocab(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    char **tok = NULL, *line = NULL;
    size_t cap = 0, lcap = 0;
    ssize_t len;

    *n = 0;
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    while ((len = getline(&line, &lcap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            tok = (char **)realloc(tok, cap * sizeof(*tok));
            if (tok == NULL)
                exit(2);
        }
        tok[(*n)++] = strdup(line);
    }
    free(line);
    fclose(f);
    return tok;
}

/* The next integer of *p (advanced), or 0 with *ok cleared. */
static long long
next_int(char **p, int *ok)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(*p, &end, 10);
    if (end == *p || errno)
        *ok = 0;
    *p = end;
    return v;
}

static void
print_sample(const struct ds_ernie_sample *s, uint32_t lmax)
{
    printf("ok %d %d %u |", s->is_random, s->truncated, s->n_tokens);
    for (uint32_t i = 0; i < lmax; i++)
        printf(" %d", s->input_ids[i]);
    printf(" |");
    for (uint32_t i = 0; i < lmax; i++)
        printf(" %d", s->token_type_ids[i]);
    printf(" |");
    for (uint32_t i = 0; i < s->n_masked; i++)
        printf(" %d", s->masked_positions[i]);
    printf(" |");
    for (uint32_t i = 0; i < s->n_masked; i++)
        printf(" %d", s->masked_labels[i]);
    printf("\n");
}

int
main(int argc, char **argv)
{
    struct ds_ernie_opts o;
    struct ds_ernie_ctx *ctx = NULL;
    struct ds_ernie_sample s;
    struct ds_dataset *d = NULL;
    struct ds_err err;
    char **vocab, *line = NULL;
    size_t n_vocab, lcap = 0, icap = 0, lens_cap = 0;
    int32_t *ids = NULL;
    uint32_t *lens = NULL;
    int rc = 0;

    if (argc != 13 && argc != 14) {
        fprintf(stderr, "usage: drv_ernie VOCAB N_BASE MAX_SEQ_LEN "
                        "MASKED_LM_PROB MAX_NGRAMS NGRAM_MODE BINARY_HEAD "
                        "CLS SEP MASK PAD SEED [PREFIX]\n");
        return 2;
    }
    vocab = read_vocab(argv[1], &n_vocab);
    if (vocab == NULL)
        return 2;
    memset(&o, 0, sizeof(o));
    o.max_seq_len = (uint32_t)strtoul(argv[3], NULL, 10);
    o.masked_lm_prob = strtod(argv[4], NULL);
    o.max_ngrams = (uint32_t)strtoul(argv[5], NULL, 10);
    o.favor_longer_ngram = atoi(argv[6]) & 1;
    o.geometric_ngram = (atoi(argv[6]) & 2) != 0;
    o.binary_head = atoi(argv[7]);
    o.cls_id = atoi(argv[8]);
    o.sep_id = atoi(argv[9]);
    o.mask_id = atoi(argv[10]);
    o.pad_id = atoi(argv[11]);
    o.seed = strtoull(argv[12], NULL, 10);
    if (ds_ernie_ctx_new(&ctx, &o, (const char *const *)vocab, n_vocab,
                         strtoul(argv[2], NULL, 10), &err) != 0 ||
        ds_ernie_sample_init(&s, ctx, &err) != 0 ||
        (argc == 14 && ds_open(&d, argv[13], &err) != 0)) {
        fprintf(stderr, "drv_ernie: %s\n", err.msg);
        return 2;
    }

    while (getline(&line, &lcap, stdin) >= 0) {
        char *p = line;
        int ok = 1, r;
        uint64_t idx = (uint64_t)next_int(&p, &ok);
        uint32_t tgt = (uint32_t)next_int(&p, &ok);

        if (d) {
            uint64_t start = (uint64_t)next_int(&p, &ok);
            uint64_t end = (uint64_t)next_int(&p, &ok);

            r = ok ? ds_ernie_sample_build(ctx, d, start, end, tgt, idx, &s,
                                           &err)
                   : -100;
        } else {
            size_t n_sent = (size_t)next_int(&p, &ok), n_ids = 0;

            if (n_sent > lens_cap) {
                lens_cap = n_sent;
                lens = (uint32_t *)realloc(lens, n_sent * sizeof(*lens));
            }
            for (size_t i = 0; ok && i < n_sent; i++)
                n_ids += lens[i] = (uint32_t)next_int(&p, &ok);
            if (n_ids > icap) {
                icap = n_ids;
                ids = (int32_t *)realloc(ids, n_ids * sizeof(*ids));
            }
            for (size_t i = 0; ok && i < n_ids; i++)
                ids[i] = (int32_t)next_int(&p, &ok);
            r = ok ? ds_ernie_sample_build_ids(ctx, ids, lens, n_sent, tgt, idx,
                                               &s, &err)
                   : -100;
        }
        if (r == -100) {
            fprintf(stderr, "drv_ernie: bad input line\n");
            rc = 2;
            break;
        }
        if (r == 0)
            print_sample(&s, o.max_seq_len);
        else
            printf("err %d %s\n", r, err.msg);
    }
    free(line);
    free(ids);
    free(lens);
    ds_ernie_sample_release(&s);
    ds_ernie_ctx_free(ctx);
    ds_close(d);
    for (size_t i = 0; i < n_vocab; i++)
        free(vocab[i]);
    free(vocab);
    return rc;
}
