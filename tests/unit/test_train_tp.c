/* SPDX-License-Identifier: MIT */
/*
 * test_train_tp.c: unit tests of how tensor parallelism cuts the tensor
 * table (train/model/params.c): each split kind's local shape and the place of
 * a rank's elements in the whole tensor (GPT-2's fused c_attn by heads,
 * a padded vocab), and, on tiny ERNIE and GPT models with an odd vocab,
 * that the ranks' parts cover every element of the whole once, that
 * cutting and joining are inverse, and that each rank's initialisation
 * is its part of the whole model's (so a layout never changes the
 * starting point); and the model's parts, which sharding stages 2 and 3
 * bind to buffers of their own.  The collectives themselves run in
 * tests/train/parallel.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "model/config.h"
#include "model/model.h"
#include "ops.h"
#include "model/params.h"

static void
no_reduce(void *ctx, void *buf, size_t n, enum model_reduce how)
{
    (void)ctx, (void)buf, (void)n, (void)how;
}

static void
test_tp_shapes_and_places(void)
{
    struct param_table pt;
    const struct param_tensor *t;

    params_init_tp(&pt, 2, 1);
    /* c_attn of C = 4: rows q0..q3 k0..k3 v0..v3; rank 1 has heads 2, 3. */
    CHECK(params_add(&pt, "qkv", 12, 2, TP_COLUMN_QKV, 0, INIT_NORMAL, 1) == 0);
    CHECK(params_add(&pt, "row", 4, 6, TP_ROW, 0, INIT_NORMAL, 1) == 1);
    CHECK(params_add(&pt, "vocab", 300, 2, TP_VOCAB, -1, INIT_NORMAL, 1) == 2);
    CHECK(params_add(&pt, "col", 6, 0, TP_COLUMN, 0, INIT_ZEROS, 0) == 3);
    CHECK(params_add(&pt, "odd", 5, 0, TP_COLUMN, 0, INIT_ZEROS, 0) < 0);
    CHECK(params_add(&pt, "bad_qkv", 8, 2, TP_COLUMN_QKV, 0, INIT_ZEROS, 0) <
          0);
    t = &pt.t[0];
    CHECK_EQ_INT(t->shape[0], 6);
    CHECK_EQ_INT(t->gshape[0], 12);
    {
        /* local rows 0..5 = q2 q3 k2 k3 v2 v3 = whole rows 2 3 6 7 10 11 */
        const int64_t rows[6] = { 2, 3, 6, 7, 10, 11 };

        for (int i = 0; i < 6; i++) {
            CHECK_EQ_INT(params_global_index(t, 2, 1, (size_t)i * 2),
                         rows[i] * 2);
            CHECK_EQ_INT(params_global_index(t, 2, 1, (size_t)i * 2 + 1),
                         rows[i] * 2 + 1);
        }
    }
    t = &pt.t[1]; /* [4, 6] by columns: rank 1 has columns 3..5 */
    CHECK_EQ_INT(t->shape[1], 3);
    CHECK_EQ_INT(params_global_index(t, 2, 1, 0), 3);
    CHECK_EQ_INT(params_global_index(t, 2, 1, 4), 6 + 4);
    /* 300 rows padded to 2 x 256 (OPS_VOCAB_ALIGN x 2): rank 1 has rows
     * 256..299, then pads. */
    t = &pt.t[2];
    CHECK_EQ_INT(t->shape[0], 2 * OPS_VOCAB_ALIGN);
    CHECK_EQ_INT(params_global_index(t, 2, 1, 0), 512);
    CHECK_EQ_INT(params_global_index(t, 2, 1, 2 * 43 + 1), 599);
    CHECK_EQ_INT(params_global_index(t, 2, 1, 2 * 44), -1);
    CHECK_EQ_INT(params_global_index(t, 2, 1, 511), -1);
    CHECK_EQ_INT(params_global_index(&pt.t[3], 2, 1, 2), 5);
    /* Offsets on OPS_ALIGN elements, pads between the tensors. */
    CHECK_EQ_INT(pt.t[1].offset, OPS_ALIGN);
    CHECK_EQ_INT(pt.t[2].offset, 2 * OPS_ALIGN);
    CHECK_EQ_INT(pt.t[3].offset, 2 * OPS_ALIGN + 512);
    CHECK_EQ_INT(pt.total, 3 * OPS_ALIGN + 512);
    CHECK_EQ_INT(params_count(&pt), 12 + 12 + 2 * 44 + 3);
    params_release(&pt);
    /* One rank: the vocabulary padded all the same, the pads never
     * saved. */
    params_init_tp(&pt, 1, 0);
    CHECK(params_add(&pt, "vocab", 300, 2, TP_VOCAB, -1, INIT_NORMAL, 1) == 0);
    t = &pt.t[0];
    CHECK_EQ_INT(t->shape[0], 3 * OPS_VOCAB_ALIGN);
    CHECK_EQ_INT(params_rows_saved(t), 300);
    CHECK_EQ_INT(params_global_index(t, 1, 0, 599), 599);
    CHECK_EQ_INT(params_global_index(t, 1, 0, 600), -1);
    CHECK_EQ_INT(params_count(&pt), 600);
    params_release(&pt);
}

/* A tiny model's config: 2 layers of 4 heads, an odd vocabulary (the
 * second rank's shard ends in a pad). */
static void
tiny_config(struct model_config *c, enum model_type type)
{
    config_defaults(c, type);
    c->vocab_size = 41;
    c->hidden_size = 8;
    c->num_layers = 2;
    c->num_heads = 4;
    c->intermediate_size = 16;
    c->max_position = 16;
}

static struct model *
tiny(enum model_type type, int size, int rank)
{
    struct model_config c;
    struct model_par par = { { size, rank, no_reduce, NULL }, 1, 0, 1, 0, 0 };
    struct model *m = NULL;
    char err[256];

    tiny_config(&c, type);
    if (model_create_par(&m, &c, ops_cpu(1, OPS_F32), 2, 4, 2, RECOMPUTE_NONE,
                         &par, err, sizeof(err)) < 0 ||
        model_init_params(m, 5) < 0) {
        fprintf(stderr, "tiny: %s\n", err);
        exit(1);
    }
    return m;
}

static void
check_parts(enum model_type type, int size)
{
    struct model *whole = tiny(type, 1, 0);
    const struct param_table *wt = model_table(whole);
    size_t n = wt->total;
    float *joined = calloc(n, sizeof(float));
    unsigned char *seen = calloc(n, 1), *real = calloc(n, 1);
    size_t twice = 0, missed = 0;

    /* The whole's parameters (not its pads) NaN until written. */
    for (size_t i = 0; i < wt->n; i++)
        for (size_t k = 0; k < wt->t[i].numel; k++)
            if (params_global_index(&wt->t[i], 1, 0, k) >= 0) {
                memset(&joined[wt->t[i].offset + k], 0xff, sizeof(float));
                real[wt->t[i].offset + k] = 1;
            }
    for (int r = 0; r < size; r++) {
        struct model *part = tiny(type, size, r);
        const struct param_table *pt = model_table(part);
        float *cut = calloc(pt->total, sizeof(float)); /* (pads 0) */

        CHECK(pt->total < n);
        /* the rank's own init is its cut of the whole model's */
        params_from_global(pt, r, cut, wt, model_params(whole));
        CHECK_EQ_MEM(cut, model_params(part), pt->total * sizeof(float));
        params_to_global(pt, r, model_params(part), wt, joined);
        for (size_t i = 0; i < pt->n; i++)
            for (size_t k = 0; k < pt->t[i].numel; k++) {
                int64_t g = params_global_index(&pt->t[i], size, r, k);

                if (g >= 0 && pt->t[i].tp != TP_REPLICATED)
                    twice += seen[wt->t[i].offset + (size_t)g]++ > 0;
                else if (g >= 0)
                    seen[wt->t[i].offset + (size_t)g] = 1;
            }
        free(cut);
        model_free(part);
    }
    for (size_t i = 0; i < n; i++)
        missed += real[i] && !seen[i];
    CHECK_EQ_INT(twice, 0);
    CHECK_EQ_INT(missed, 0);
    CHECK_EQ_MEM(joined, model_params(whole), n * sizeof(float));
    free(joined);
    free(seen);
    free(real);
    model_free(whole);
}

static void
test_tp_ernie_parts(void)
{
    check_parts(MODEL_ERNIE, 2);
    check_parts(MODEL_ERNIE, 4);
}

static void
test_tp_gpt_parts(void)
{
    check_parts(MODEL_GPT, 2);
    check_parts(MODEL_GPT, 4);
}

/* Sharding stages 2 and 3's parts: a model made without the flat buffers
 * (model_par's shard_params, shard_grads), each part bound to a buffer of
 * the compute copy (bfloat16: 2 bytes an element) and one of fp32
 * gradients, computes the flat model's losses and gradients bit for bit;
 * the parts tile the flat layout on OPS_ALIGN bounds. */
static void
check_bound_parts(enum model_type type)
{
    const struct ops *ops = ops_cpu(1, OPS_BF16);
    struct model_config c;
    struct model_par pa = { { 1, 0, NULL, NULL }, 1, 0, 1, 0, 0 };
    struct model_par pb = { { 1, 0, NULL, NULL }, 1, 0, 1, 1, 1 };
    struct forward_opts fo = { 1, 9, 1.0f, NULL };
    struct model *a = NULL, *b = NULL;
    int32_t ids[8], tt[8] = { 0 }, mask[8], mpos[2] = { 1, 6 },
                    mlab[2] = { 7, 30 }, sop[2] = { 0, 1 }, lab[8];
    struct batch bt = { 2, 4, ids, tt, mask, 2, mpos, mlab, sop, lab };
    void *pbuf[8];
    float *gbuf[8];
    double *sums[2], hs[2][2];
    size_t total, prev = 0, lo, hi;
    char err[256] = "";

    tiny_config(&c, type);
    for (int i = 0; i < 8; i++)
        ids[i] = (i * 7 + 3) % 41, lab[i] = (i * 5 + 1) % 41, mask[i] = 1;
    CHECK_EQ_INT(model_create_par(&a, &c, ops, 2, 4, 2, RECOMPUTE_NONE, &pa,
                                  err, sizeof(err)),
                 0);
    CHECK_EQ_INT(model_create_par(&b, &c, ops, 2, 4, 2, RECOMPUTE_NONE, &pb,
                                  err, sizeof(err)),
                 0);
    CHECK_EQ_INT(model_init_params(a, 5), 0);
    total = model_table(a)->total;
    CHECK(model_params(b) == NULL && model_compute_params(b) == NULL &&
          model_grads(b) == NULL);
    CHECK(model_param_bytes(b) == 0 && model_compute_param_bytes(b) == 0 &&
          model_grad_bytes(b) == 0);
    CHECK_EQ_INT(model_compute_param_bytes(a), total * 2);
    /* The parts in the flat layout's order: the embeddings, the layers,
     * the heads. */
    for (int k = 0; k < 4; k++) {
        int part = k == 0 ? PARAM_PRE : k == 3 ? PARAM_POST : k - 1;

        model_part_range(b, part, &lo, &hi);
        CHECK(lo == prev && hi > lo && lo % OPS_ALIGN == 0 &&
              hi % OPS_ALIGN == 0);
        prev = hi;
        pbuf[k] = ops->alloc((hi - lo) * 2, "test");
        gbuf[k] = ops->alloc((hi - lo) * sizeof(float), "test");
        ops->copy(pbuf[k], (char *)model_compute_params(a) + lo * 2,
                  (hi - lo) * 2);
        model_bind_params(b, part, pbuf[k]);
        model_bind_grads(b, part, gbuf[k]);
        CHECK(model_param_at(b, lo) == pbuf[k]);
        CHECK(model_param_at(b, hi - 1) == (char *)pbuf[k] + (hi - lo - 1) * 2);
        CHECK(model_grad_at(b, hi - 1) == gbuf[k] + (hi - lo - 1));
    }
    CHECK_EQ_INT(prev, total);
    sums[0] = ops->alloc(2 * sizeof(double), "test");
    sums[1] = ops->alloc(2 * sizeof(double), "test");
    CHECK_EQ_INT(model_forward(a, &bt, &fo, sums[0], err, sizeof(err)), 0);
    model_backward(a);
    CHECK_EQ_INT(model_forward(b, &bt, &fo, sums[1], err, sizeof(err)), 0);
    model_backward(b);
    CHECK_EQ_INT(ops->download(hs[0], sums[0], sizeof(hs[0])), 0);
    CHECK_EQ_INT(ops->download(hs[1], sums[1], sizeof(hs[1])), 0);
    CHECK(hs[0][0] > 0);
    CHECK_EQ_MEM(hs[0], hs[1], sizeof(hs[0]));
    for (int k = 0; k < 4; k++) {
        int part = k == 0 ? PARAM_PRE : k == 3 ? PARAM_POST : k - 1;

        model_part_range(b, part, &lo, &hi);
        CHECK_EQ_MEM(gbuf[k], model_grads(a) + lo, (hi - lo) * sizeof(float));
        ops->release(pbuf[k]);
        ops->release(gbuf[k]);
    }
    ops->release(sums[0]);
    ops->release(sums[1]);
    model_free(a);
    model_free(b);
}

static void
test_parts_bind_compute_copy(void)
{
    check_bound_parts(MODEL_GPT);
    check_bound_parts(MODEL_ERNIE);
}

/* A degree that does not divide the heads is refused. */
static void
test_tp_refuses(void)
{
    struct model_config c;
    struct model_par par = { { 3, 0, no_reduce, NULL }, 1, 0, 1, 0, 0 };
    struct model *m = NULL;
    char err[256] = "";

    tiny_config(&c, MODEL_GPT);
    c.num_layers = 1;
    CHECK(model_create_par(&m, &c, ops_cpu(1, OPS_F32), 2, 4, 0, RECOMPUTE_NONE,
                           &par, err, sizeof(err)) < 0);
    CHECK(m == NULL);
    CHECK(strstr(err, "must divide") != NULL);
}

TESTS(test_train_tp, TEST(test_tp_shapes_and_places), TEST(test_tp_ernie_parts),
      TEST(test_tp_gpt_parts), TEST(test_tp_refuses),
      TEST(test_parts_bind_compute_copy))
