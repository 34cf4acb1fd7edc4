/* SPDX-License-Identifier: MIT */
/*
 * gen_gpt.c: GPT-2's forward pass with a key/value cache (gen_gpt.h).
 * The layers are model_gpt.c's, row by row: LayerNorm, the fused q/k/v
 * projection, attention over the cache (ops->attention_kv_fwd), the
 * output projection, the residual and LayerNorm in one op, the MLP with
 * its activation fused, the residual; then only the rows whose next
 * token is wanted go through the final LayerNorm and the tied LM head.
 * Parameters are read in place through P() (the model's compute copy).
 */
#include <stdlib.h>
#include <string.h>

#include "gen_gpt.h"
#include "model/model_int.h"
#include "util/tr_util.h"

struct gen_gpt {
    struct model *m;
    const struct ops *op;
    int S, ctx, R; /* slots, positions, rows a call */
    int C, I, L, V, Vl;
    void *cache;              /* [L][2][ctx][S][C] act: keys, values */
    void *x, *ln, *qkv, *att; /* [R, C], [R, C], [R, 3C], [R, C] act */
    void *tmp, *fch;          /* [R, C], [R, I] act */
    float *mean, *rstd;       /* [R] */
    void *lx, *lln;           /* [S, C] act: the rows of the LM head */
    float *lmean, *lrstd;     /* [S] */
    void *logits;             /* [S, Vl] act */
    float *logits32;          /* [S, Vl] fp32 (a 16-bit dtype) */
    int32_t *d_ids, *d_posids, *d_pos, *d_rows; /* [R], [R], [S], [S] */
    int32_t *d_from;                            /* [ctx S] (beams) */
    void *scratch;                              /* [ctx, S, C] act (beams) */
    /* Host staging. */
    int32_t *h_posids, *h_rows, *h_from;
    float *h_logits; /* [S, Vl] */
    int *h_which;    /* [S]: the sequence of each LM-head row */
};

static void *
layer_cache(const struct gen_gpt *g, int l, int which)
{
    size_t one = (size_t)g->ctx * (size_t)g->S * (size_t)g->C;

    return model_at(g->m, g->cache, ((size_t)l * 2 + (size_t)which) * one);
}

void
gen_gpt_free(struct gen_gpt *g)
{
    if (g == NULL)
        return;
    if (g->op) {
        void *bufs[] = {
            g->cache,    g->x,     g->ln,     g->qkv,    g->att,
            g->tmp,      g->fch,   g->mean,   g->rstd,   g->lx,
            g->lln,      g->lmean, g->lrstd,  g->logits, g->d_ids,
            g->d_posids, g->d_pos, g->d_rows, g->d_from, g->scratch
        };

        for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
            g->op->release(bufs[i]);
        if ((void *)g->logits32 != g->logits)
            g->op->release(g->logits32);
    }
    free(g->h_posids);
    free(g->h_rows);
    free(g->h_from);
    free(g->h_logits);
    free(g->h_which);
    free(g);
}

int
gen_gpt_new(struct gen_gpt **out, struct model *m, int slots, int ctx,
            int rows_max, char *err, size_t errlen)
{
    const struct model_config *k = &m->cfg;
    const struct ops *op = m->ops;
    struct gen_gpt *g;
    size_t es = m->esize, R, S, C, I;

    *out = NULL;
    if (k->type != MODEL_GPT || m->tp.size != 1 || m->pp != 1)
        return tr_fail(err, errlen,
                       "generation needs a whole GPT model on one rank");
    if (slots < 1 || ctx < 1 || ctx > k->max_position || rows_max < slots)
        return tr_fail(err, errlen,
                       "bad generation sizes: %d sequences of %d positions "
                       "(the model has %d), %d rows",
                       slots, ctx, k->max_position, rows_max);
    g = calloc(1, sizeof(*g));
    if (g == NULL)
        return tr_fail(err, errlen, "out of memory");
    g->m = m;
    g->op = op;
    g->S = slots, g->ctx = ctx, g->R = rows_max;
    g->C = k->hidden_size, g->I = k->intermediate_size, g->L = k->num_layers;
    g->V = k->vocab_size, g->Vl = m->Vl;
    R = (size_t)rows_max, S = (size_t)slots, C = (size_t)g->C, I = (size_t)g->I;
    g->cache = op->alloc((size_t)g->L * 2 * (size_t)ctx * S * C * es,
                         "the key/value cache");
    g->x = op->alloc(R * C * es, "generation activations");
    g->ln = op->alloc(R * C * es, "generation activations");
    g->qkv = op->alloc(3 * R * C * es, "generation activations");
    g->att = op->alloc(R * C * es, "generation activations");
    g->tmp = op->alloc(R * C * es, "generation activations");
    g->fch = op->alloc(R * I * es, "generation activations");
    g->mean = op->alloc(R * sizeof(float), "generation activations");
    g->rstd = op->alloc(R * sizeof(float), "generation activations");
    g->lx = op->alloc(S * C * es, "generation activations");
    g->lln = op->alloc(S * C * es, "generation activations");
    g->lmean = op->alloc(S * sizeof(float), "generation activations");
    g->lrstd = op->alloc(S * sizeof(float), "generation activations");
    g->logits = op->alloc(S * (size_t)g->Vl * es, "logits");
    g->logits32 = op->dtype == OPS_F32
                      ? g->logits
                      : op->alloc(S * (size_t)g->Vl * sizeof(float), "logits");
    g->d_ids = op->alloc(R * sizeof(int32_t), "token ids");
    g->d_posids = op->alloc(R * sizeof(int32_t), "token ids");
    g->d_pos = op->alloc(S * sizeof(int32_t), "token ids");
    g->d_rows = op->alloc(S * sizeof(int32_t), "token ids");
    if (g->cache == NULL || g->x == NULL || g->ln == NULL || g->qkv == NULL ||
        g->att == NULL || g->tmp == NULL || g->fch == NULL || g->mean == NULL ||
        g->rstd == NULL || g->lx == NULL || g->lln == NULL ||
        g->lmean == NULL || g->lrstd == NULL || g->logits == NULL ||
        g->logits32 == NULL || g->d_ids == NULL || g->d_posids == NULL ||
        g->d_pos == NULL || g->d_rows == NULL) {
        tr_fail(err, errlen, "%s", op->error());
        gen_gpt_free(g);
        return -1;
    }
    g->h_posids = malloc(R * sizeof(int32_t));
    g->h_rows = malloc(S * sizeof(int32_t));
    g->h_logits = malloc(S * (size_t)g->Vl * sizeof(float));
    g->h_which = malloc(S * sizeof(int));
    if (g->h_posids == NULL || g->h_rows == NULL || g->h_logits == NULL ||
        g->h_which == NULL) {
        gen_gpt_free(g);
        return tr_fail(err, errlen, "out of memory");
    }
    *out = g;
    return 0;
}

int
gen_gpt_vocab(const struct gen_gpt *g)
{
    return g->V;
}

int
gen_gpt_slots(const struct gen_gpt *g)
{
    return g->S;
}

int
gen_gpt_ctx(const struct gen_gpt *g)
{
    return g->ctx;
}

int
gen_gpt_rows_max(const struct gen_gpt *g)
{
    return g->R;
}

/* One decoder layer over rows x[0..rows) of B sequences x n tokens. */
static void
layer_fwd(struct gen_gpt *g, int l, int B, int n)
{
    struct model *m = g->m;
    const struct ops *op = g->op;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    int rows = B * n, C = g->C;

    op->layernorm_fwd(g->ln, g->mean, g->rstd, g->x, P(o->ln1_w), P(o->ln1_b),
                      rows, C, k->layer_norm_eps);
    op->linear_fwd(g->qkv, g->ln, P(o->qkv_w), P(o->qkv_b), rows, C, 3 * C);
    op->attention_kv_fwd(g->att, layer_cache(g, l, 0), layer_cache(g, l, 1),
                         g->qkv, g->d_pos, B, n, C, k->num_heads, g->S, g->ctx);
    op->linear_fwd(g->tmp, g->att, P(o->proj_w), P(o->proj_b), rows, C, C);
    /* x += attention, ln = LN(x): one op. */
    op->residual_layernorm_fwd(g->x, g->ln, g->mean, g->rstd, g->x, g->tmp,
                               P(o->ln2_w), P(o->ln2_b), rows, C,
                               k->layer_norm_eps);
    op->linear_act_fwd(g->fch, g->fch, g->ln, P(o->fc_w), P(o->fc_b), rows, C,
                       g->I, k->hidden_act);
    op->linear_fwd(g->tmp, g->fch, P(o->fc2_w), P(o->fc2_b), rows, g->I, C);
    op->add(g->x, g->x, g->tmp, (size_t)rows * (size_t)C);
}

int
gen_gpt_forward(struct gen_gpt *g, int B, int n, const int32_t *ids,
                const int32_t *pos, const int32_t *last, float *logits,
                char *err, size_t errlen)
{
    struct model *m = g->m;
    const struct ops *op = g->op;
    const struct model_config *k = &m->cfg;
    int rows = B * n, n_out = 0;

    if (B < 1 || B > g->S || n < 1 || rows > g->R)
        return tr_fail(err, errlen,
                       "%d sequences x %d tokens exceed the decoder's %d x %d "
                       "rows",
                       B, n, g->S, g->R);
    for (int b = 0; b < B; b++) {
        if (pos[b] < 0 || pos[b] + n > g->ctx)
            return tr_fail(err, errlen,
                           "positions %d..%d of sequence %d are outside the "
                           "context of %d",
                           pos[b], pos[b] + n - 1, b, g->ctx);
        for (int i = 0; i < n; i++) {
            int32_t id = ids[b * n + i];

            if (id < 0 || id >= g->V)
                return tr_fail(err, errlen,
                               "token id %d is outside the vocabulary of %d",
                               id, g->V);
            g->h_posids[b * n + i] = pos[b] + i;
        }
        if (last[b] >= n)
            return tr_fail(err, errlen, "row %d of %d tokens", last[b], n);
        if (last[b] >= 0) {
            g->h_rows[n_out] = b * n + last[b];
            g->h_which[n_out++] = b;
        }
    }
    op->upload(g->d_ids, ids, (size_t)rows * sizeof(int32_t));
    op->upload(g->d_posids, g->h_posids, (size_t)rows * sizeof(int32_t));
    op->upload(g->d_pos, pos, (size_t)B * sizeof(int32_t));
    op->upload(g->d_rows, g->h_rows, (size_t)n_out * sizeof(int32_t));
    op->embed_fwd(g->x, g->d_ids, P(m->ho.word), rows, g->C, 0);
    op->embed_fwd(g->x, g->d_posids, P(m->ho.pos), rows, g->C, 1);
    for (int l = 0; l < g->L; l++)
        layer_fwd(g, l, B, n);
    if (n_out > 0) {
        /* The final norm and the LM head on the wanted rows only. */
        op->gather_rows(g->lx, g->x, g->d_rows, n_out, g->C);
        op->layernorm_fwd(g->lln, g->lmean, g->lrstd, g->lx, P(m->ho.lnf_w),
                          P(m->ho.lnf_b), n_out, g->C, k->layer_norm_eps);
        op->linear_fwd(g->logits, g->lln, P(m->ho.word), NULL, n_out, g->C,
                       g->Vl);
        if (op->dtype != OPS_F32)
            op->cast(g->logits32, OPS_F32, g->logits, op->dtype,
                     (size_t)n_out * (size_t)g->Vl);
    }
    if ((n_out > 0 ? op->download(g->h_logits, g->logits32,
                                  (size_t)n_out * (size_t)g->Vl * sizeof(float))
                   : op->sync()) < 0)
        return tr_fail(err, errlen, "%s", op->error());
    for (int r = 0; r < n_out; r++)
        memcpy(logits + (size_t)g->h_which[r] * (size_t)g->V,
               g->h_logits + (size_t)r * (size_t)g->Vl,
               (size_t)g->V * sizeof(float));
    return 0;
}

int
gen_gpt_reorder(struct gen_gpt *g, const int32_t *from, int n_slots, int len,
                char *err, size_t errlen)
{
    const struct ops *op = g->op;
    size_t rows = (size_t)len * (size_t)g->S;
    size_t bytes = rows * (size_t)g->C * g->m->esize;

    if (n_slots < 1 || n_slots > g->S || len < 1 || len > g->ctx)
        return tr_fail(err, errlen, "bad reorder of %d slots, %d positions",
                       n_slots, len);
    if (g->scratch == NULL) { /* beam search only */
        size_t all = (size_t)g->ctx * (size_t)g->S;

        g->scratch = op->alloc(all * (size_t)g->C * g->m->esize,
                               "beam search's cache scratch");
        g->d_from = op->alloc(all * sizeof(int32_t), "beam search's indexes");
        g->h_from = malloc(all * sizeof(int32_t));
        if (g->scratch == NULL || g->d_from == NULL)
            return tr_fail(err, errlen, "%s", op->error());
        if (g->h_from == NULL)
            return tr_fail(err, errlen, "out of memory");
    }
    /* Row t * S + s of each cache takes row t * S + from[s]; the slots
     * past n_slots keep theirs. */
    for (size_t t = 0; t < (size_t)len; t++)
        for (int s = 0; s < g->S; s++)
            g->h_from[t * (size_t)g->S + (size_t)s] =
                (int32_t)(t * (size_t)g->S) + (s < n_slots ? from[s] : s);
    op->upload(g->d_from, g->h_from, rows * sizeof(int32_t));
    for (int l = 0; l < g->L; l++)
        for (int w = 0; w < 2; w++) {
            op->gather_rows(g->scratch, layer_cache(g, l, w), g->d_from,
                            (int)rows, g->C);
            op->copy(layer_cache(g, l, w), g->scratch, bytes);
        }
    if (op->sync() < 0)
        return tr_fail(err, errlen, "%s", op->error());
    return 0;
}
