/* SPDX-License-Identifier: MIT */
/*
 * model_hits.c: the accuracy of the heads on a micro-batch (evaluation's
 * MLM, SOP and next-token accuracies), from the ops the losses use:
 * xent_max gives each row's highest logit and xent_partial the target's
 * (both summed or maxed over a vocab-parallel group as the loss is), so a
 * row is predicted right when the two are equal.  No backend needs an
 * argmax of its own.
 */
#include <stdlib.h>

#include "model_int.h"
#include "util/tr_util.h"

struct model_hit_bufs {
    size_t cap;   /* rows */
    float *max;   /* backend memory [cap] */
    double *sums; /* backend memory [2 cap] */
    float *max_h; /* host copies */
    double *sums_h;
};

void
model_hits_release(struct model *m)
{
    struct model_hit_bufs *h = m->hits;

    if (h == NULL)
        return;
    m->ops->release(h->max);
    m->ops->release(h->sums);
    free(h->max_h);
    free(h->sums_h);
    free(h);
    m->hits = NULL;
}

/* The buffers, for the most rows a micro-batch has: GPT's tokens,
 * ERNIE's masked slots or sequences. */
static int
hit_bufs(struct model *m, char *err, size_t errlen)
{
    struct model_hit_bufs *h;
    size_t cap = m->cfg.type == MODEL_GPT
                     ? (size_t)m->max_B * (size_t)m->max_T
                     : (size_t)(m->max_M > m->max_B ? m->max_M : m->max_B);

    if (m->hits != NULL)
        return 0;
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return tr_fail(err, errlen, "out of memory");
    m->hits = h;
    h->cap = cap;
    h->max = m->ops->alloc(cap * sizeof(float), "accuracy");
    h->sums = m->ops->alloc(2 * cap * sizeof(double), "accuracy");
    h->max_h = malloc(cap * sizeof(float));
    h->sums_h = malloc(2 * cap * sizeof(double));
    if (h->max == NULL || h->sums == NULL)
        return tr_fail(err, errlen, "%s", m->ops->error());
    if (h->max_h == NULL || h->sums_h == NULL)
        return tr_fail(err, errlen, "out of memory");
    return 0;
}

/* The rows of logits [rows, V] (columns v0.. of the vocab, V_valid of
 * them real; split: over the tensor-parallel group) whose target
 * (targets_dev in backend memory, targets its host copy) is the highest:
 * *hit += those, *n += the rows with a target. */
static int
count(struct model *m, const void *logits, const int32_t *targets_dev,
      const int32_t *targets, int rows, int V, int V_valid, int v0, int split,
      int64_t *hit, int64_t *n, char *err, size_t errlen)
{
    const struct ops *op = m->ops;
    struct model_hit_bufs *h = m->hits;

    op->xent_max(h->max, logits, rows, V, V_valid);
    if (split)
        m->tp.all_reduce(m->tp.ctx, h->max, (size_t)rows, MODEL_MAX_F32);
    op->xent_partial(h->sums, logits, h->max, targets_dev, rows, V, V_valid,
                     v0);
    if (split)
        m->tp.all_reduce(m->tp.ctx, h->sums, 2 * (size_t)rows, MODEL_SUM_F64);
    if (op->download(h->max_h, h->max, (size_t)rows * sizeof(float)) < 0 ||
        op->download(h->sums_h, h->sums, 2 * (size_t)rows * sizeof(double)) < 0)
        return tr_fail(err, errlen, "%s", op->error());
    for (int i = 0; i < rows; i++) {
        if (targets[i] < 0)
            continue;
        ++*n;
        /* The target's logit, widened exactly, against the row's
         * highest: equal when it is the prediction. */
        if (h->sums_h[2 * i + 1] >= (double)h->max_h[i])
            ++*hit;
    }
    return 0;
}

int
model_hits(struct model *m, const struct batch *b, int64_t hits[4], char *err,
           size_t errlen)
{
    const struct model_config *k = &m->cfg;

    if (!m->post)
        return 0;
    if (hit_bufs(m, err, errlen) < 0)
        return -1;
    if (k->type == MODEL_GPT)
        return count(m, m->logits, m->bb.labels, b->labels, b->B * b->T, m->Vl,
                     m->V_valid, m->v0, m->tp.size > 1, &hits[0], &hits[1], err,
                     errlen);
    if (count(m, m->logits, m->bb.mlab, b->masked_labels, b->M, m->Vl,
              m->V_valid, m->v0, m->tp.size > 1, &hits[0], &hits[1], err,
              errlen) < 0)
        return -1;
    if (!k->binary_head)
        return 0;
    /* The SOP head is whole on every rank. */
    return count(m, m->sop_logits, m->bb.sop_lab, b->sop_labels, b->B, 2, 2, 0,
                 0, &hits[2], &hits[3], err, errlen);
}
