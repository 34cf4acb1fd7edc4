/* SPDX-License-Identifier: MIT */
/* whole.c: tensor-parallel parts to the whole model and back (see
 * whole.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whole.h"
#include "util/tr_util.h"

int
whole_create(struct whole *w, const struct model *part, char *err,
             size_t errlen)
{
    const struct model_config *k = model_cfg(part);

    memset(w, 0, sizeof(*w));
    if (model_create(&w->m, k, model_ops(part), 1, 1,
                     k->type == MODEL_ERNIE ? 1 : 0, err, errlen) < 0)
        return -1;
    if (optim_create(&w->opt, model_ops(part), model_table(w->m)) < 0) {
        whole_release(w);
        return tr_fail(err, errlen,
                       "out of memory for the whole model's "
                       "optimizer state");
    }
    return 0;
}

void
whole_release(struct whole *w)
{
    if (w->m)
        optim_release(&w->opt);
    model_free(w->m);
    memset(w, 0, sizeof(*w));
}

/* One buffer of part's layout (backend memory) gathered into `whole`
 * (backend memory, laid out as the whole table wt): each rank writes what
 * it owns into zeros, and the sums over the tensor-parallel group and the
 * pipeline stages are the whole (exactly: one term of each sum is not 0). */
static int
gather_one(const struct model *part, const float *buf,
           const struct param_table *wt, float *whole, struct comm *c,
           char *err, size_t errlen)
{
    const struct ops *op = model_ops(part);
    const struct param_table *pt = model_table(part);
    float *host = malloc(pt->total * sizeof(float) + 1);
    float *whole_host = calloc(wt->total, sizeof(float));
    int rc = -1;

    if (host == NULL || whole_host == NULL) {
        tr_fail(err, errlen, "out of memory gathering the model");
        goto out;
    }
    op->download(host, buf, pt->total * sizeof(float));
    params_to_global(pt, c->group_rank(c, COMM_TP), host, wt, whole_host);
    op->upload(whole, whole_host, wt->total * sizeof(float));
    if ((c->group_size(c, COMM_TP) > 1 &&
         c->all_reduce_sum(c, whole, wt->total, COMM_F32, COMM_TP) < 0) ||
        (c->group_size(c, COMM_PP) > 1 &&
         c->all_reduce_sum(c, whole, wt->total, COMM_F32, COMM_PP) < 0)) {
        tr_fail(err, errlen, "gathering the model's parts: %s", c->error);
        goto out;
    }
    rc = 0;
out:
    free(host);
    free(whole_host);
    return rc;
}

int
whole_gather(struct whole *w, const struct model *part,
             const struct optimizer *o, struct comm *c, char *err,
             size_t errlen)
{
    const struct param_table *wt = model_table(w->m);

    if (gather_one(part, model_params((struct model *)part), wt,
                   model_params(w->m), c, err, errlen) < 0)
        return -1;
    if (o == NULL)
        return 0;
    if (gather_one(part, o->m, wt, w->opt.m, c, err, errlen) < 0 ||
        gather_one(part, o->v, wt, w->opt.v, c, err, errlen) < 0)
        return -1;
    w->opt.t = o->t;
    return 0;
}

/* This rank's part of `whole` (laid out as wt) into buf (part's layout). */
static int
scatter_one(struct model *part, float *buf, const struct param_table *wt,
            const float *whole, char *err, size_t errlen)
{
    const struct ops *op = model_ops(part);
    const struct param_table *pt = model_table(part);
    float *host = malloc(pt->total * sizeof(float));
    float *whole_host = malloc(wt->total * sizeof(float));

    if (host == NULL || whole_host == NULL) {
        free(host);
        free(whole_host);
        return tr_fail(err, errlen, "out of memory reading the model");
    }
    op->download(whole_host, whole, wt->total * sizeof(float));
    params_from_global(pt, pt->tp_rank, host, wt, whole_host);
    op->upload(buf, host, pt->total * sizeof(float));
    free(host);
    free(whole_host);
    return 0;
}

int
whole_scatter(const struct whole *w, struct model *part, struct optimizer *o,
              char *err, size_t errlen)
{
    const struct param_table *wt = model_table(w->m);

    if (scatter_one(part, model_params(part), wt, model_params(w->m), err,
                    errlen) < 0)
        return -1;
    if (o == NULL)
        return 0;
    if (scatter_one(part, o->m, wt, w->opt.m, err, errlen) < 0 ||
        scatter_one(part, o->v, wt, w->opt.v, err, errlen) < 0)
        return -1;
    o->t = w->opt.t;
    return 0;
}
