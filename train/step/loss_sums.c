/* SPDX-License-Identifier: MIT */
/*
 * loss_sums.c: the losses of micro-batches, kept in backend memory: each
 * micro-batch's forward adds the sums of its rows' losses into its own
 * two doubles (model_forward()), and the host reads them all at once, at
 * the logging interval or the end of an evaluation, turning them into
 * means exactly as it did when it read each micro-batch's losses (so the
 * logged values keep their bits).  A step thus never waits for them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "step.h"

void
loss_sums_init(struct run *r, struct loss_sums *ls, size_t cap)
{
    memset(ls, 0, sizeof(*ls));
    ls->cap = cap ? cap : 1;
    ls->bad = -1;
    ls->dev = r->ops->alloc(ls->cap * 2 * sizeof(double), "the losses");
    ls->host = malloc(ls->cap * 2 * sizeof(double));
    ls->shape = malloc(ls->cap * sizeof(*ls->shape));
    if (ls->dev == NULL)
        fatal("%s", r->ops->error());
    if (ls->host == NULL || ls->shape == NULL)
        fatal("out of memory");
}

void
loss_sums_release(struct run *r, struct loss_sums *ls)
{
    if (r->ops)
        r->ops->release(ls->dev);
    free(ls->host);
    free(ls->shape);
    memset(ls, 0, sizeof(*ls));
}

/* Fold the sums held into ls->acc, in micro-batch order, and empty the
 * buffer. */
static void
fold(struct run *r, struct loss_sums *ls)
{
    if (ls->n == 0)
        return;
    if (r->ops->download(ls->host, ls->dev, ls->n * 2 * sizeof(double)) < 0)
        fatal("%s", r->ops->error());
    for (size_t i = 0; i < ls->n; i++) {
        struct losses L;

        model_losses(r->m, ls->shape[i][0], ls->shape[i][1], ls->shape[i][2],
                     ls->host + 2 * i, &L);
        if (!isfinite(L.loss) && ls->bad < 0) {
            ls->bad = ls->n_read;
            ls->bad_loss = L.loss;
        }
        ls->acc.loss += L.loss;
        ls->acc.lm_loss += L.lm_loss;
        ls->acc.sop_loss += L.sop_loss;
        ls->n_read++;
    }
    r->ops->zero(ls->dev, ls->n * 2 * sizeof(double));
    ls->n = 0;
}

double *
loss_sums_next(struct run *r, struct loss_sums *ls, const struct batch *b)
{
    if (ls->n == ls->cap) /* (a long interval: read early, on the host) */
        fold(r, ls);
    ls->shape[ls->n][0] = b->B;
    ls->shape[ls->n][1] = b->T;
    ls->shape[ls->n][2] = b->M;
    return ls->dev + 2 * ls->n++;
}

void
loss_sums_read(struct run *r, struct loss_sums *ls, struct losses *out,
               int64_t *bad, double *bad_loss)
{
    fold(r, ls);
    *out = ls->acc;
    if (bad)
        *bad = ls->bad;
    if (bad_loss)
        *bad_loss = ls->bad < 0 ? 0 : ls->bad_loss;
    memset(&ls->acc, 0, sizeof(ls->acc));
    ls->n_read = 0;
    ls->bad = -1;
}
