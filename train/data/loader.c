/* SPDX-License-Identifier: MIT */
/*
 * loader.c: micro-batches from the dataset layer (libdata's corpus), in
 * PaddleNLP's collation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "run/run.h"

struct loader *
loader_new(const struct ds_corpus *c, enum ds_split split, enum model_type type,
           int B, int T, int M_max)
{
    size_t BT = (size_t)B * (size_t)T;
    struct ds_err e;
    struct loader *l = calloc(1, sizeof(*l));

    if (l == NULL)
        fatal("out of memory");
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
    return l;
}

void
loader_free(struct loader *l)
{
    if (l == NULL)
        return;
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
    free(l);
}

/* The next micro-batch (PaddleNLP's collation, ernie-data.md 7.7): ERNIE
 * rows padded to max_seq_len, masked slots flattened to b*T + position and
 * padded to a multiple of 8 with (0, -1).  Returns 0, or 1 at the end of
 * the split. */
int
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

int
max_masked(const struct train_args *a)
{
    /* Per sample at most max(1, round(len * p)) <= ceil(T * p) + 1. */
    int per = (int)ceil(a->max_seq_len * a->masked_lm_prob) + 1;

    return (a->micro_batch_size * per + 7) / 8 * 8;
}
