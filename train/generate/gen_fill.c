/* SPDX-License-Identifier: MIT */
/*
 * gen_fill.c: fill-mask probabilities (gen_fill.h) through the model's own
 * forward pass (model_forward(), evaluation mode: no dropout, no
 * gradient), whose masked-LM head leaves the masked rows' logits in the
 * model's logits buffer; they come down once and go through a softmax
 * here, in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen_fill.h"
#include "model/model_int.h"
#include "util/tr_util.h"

int
gen_fill_probs(struct model *m, const struct batch *b, float *probs, char *err,
               size_t errlen)
{
    const struct ops *op = m->ops;
    struct forward_opts fo = { 0, 0, 0.0f, NULL };
    size_t rows = (size_t)b->M, V = (size_t)m->cfg.vocab_size;
    size_t Vl = (size_t)m->Vl;
    double *sums;
    float *host = NULL, *f32 = NULL;
    int rc = -1;

    if (m->cfg.type != MODEL_ERNIE || m->tp.size != 1 || m->pp != 1)
        return tr_fail(err, errlen,
                       "fill-mask needs a whole ERNIE model on one rank");
    sums = op->alloc(2 * sizeof(double), "the losses");
    host = malloc(rows * Vl * sizeof(float));
    if (op->dtype != OPS_F32)
        f32 = op->alloc(rows * Vl * sizeof(float), "logits");
    if (sums == NULL || host == NULL || (op->dtype != OPS_F32 && !f32)) {
        tr_fail(err, errlen, "%s", sums ? "out of memory" : op->error());
        goto out;
    }
    if (model_forward(m, b, &fo, sums, err, errlen) < 0)
        goto out;
    if (op->dtype != OPS_F32)
        op->cast(f32, OPS_F32, m->logits, op->dtype, rows * Vl);
    if (op->download(host, f32 ? f32 : m->logits, rows * Vl * sizeof(float)) <
        0) {
        tr_fail(err, errlen, "%s", op->error());
        goto out;
    }
    for (size_t i = 0; i < rows; i++) {
        const float *x = host + i * Vl;
        float *p = probs + i * V;
        double max = -INFINITY, sum = 0.0;

        for (size_t j = 0; j < V; j++)
            max = x[j] > max ? x[j] : max;
        for (size_t j = 0; j < V; j++)
            sum += exp((double)x[j] - max);
        for (size_t j = 0; j < V; j++)
            p[j] = (float)(exp((double)x[j] - max) / sum);
    }
    rc = 0;
out:
    op->release(sums);
    op->release(f32);
    free(host);
    return rc;
}
