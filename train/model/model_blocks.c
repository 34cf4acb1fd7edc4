/* SPDX-License-Identifier: MIT */
/*
 * model_blocks.c: what ERNIE's post-LN and GPT-2's pre-LN layers share:
 * adding a tensor to the table, the dropout rate in force, and the
 * attention and MLP sublayers forward and backward.  The layers differ
 * only in where their LayerNorms and residual additions sit, which stays
 * in model_ernie.c and model_gpt.c.
 */
#include "model_int.h"

int
model_add_tensor(struct model *m, size_t *off, const char *name, int64_t d0,
                 int64_t d1, enum tp_split tp, int layer, enum param_init init,
                 float std, unsigned flags)
{
    long i;

    *off = 0;
    if (!model_on_stage(m, layer))
        return 0;
    i = (flags & MODEL_ADJACENT ? params_add_adjacent : params_add)(
        &m->table, name, d0, d1, tp, layer, init, std);
    if (i < 0)
        return -1;
    m->table.t[i].hf_transposed = (flags & MODEL_HF_TRANSPOSED) != 0;
    *off = m->table.t[i].offset;
    return 0;
}

int
model_add_tied_copy(struct model *m, size_t *off, const char *name, int64_t V,
                    int64_t C, float std, int64_t zero_row)
{
    long i;

    if (!m->post || m->pre)
        return 0;
    i = params_add(&m->table, name, V, C, TP_VOCAB, PARAM_POST, INIT_NORMAL,
                   std);
    if (i < 0)
        return -1;
    m->table.t[i].tied_copy = 1;
    m->table.t[i].zero_row = zero_row;
    *off = m->table.t[i].offset;
    return 0;
}

void
model_embed_tokens(struct model *m, void *y)
{
    const struct ops *op = m->ops;
    int BT = m->B * m->T, C = m->cfg.hidden_size;

    op->embed_fwd(y, m->bb.vids, P(m->ho.word), BT, C, 0);
    model_tp_sum(m, y, (size_t)BT * (size_t)C);
    op->embed_fwd(y, m->bb.pos_ids, P(m->ho.pos), BT, C, 1);
}

float
model_drop_p(const struct model *m, float p)
{
    return m->fo.dropout ? p : 0.0f;
}

/* The backward of a column-parallel linear [BT, C] -> [BT, N] (this
 * rank's N columns): its weight and bias gradients, and dx += the input
 * gradient summed over the ranks (their partial sums go through scratch,
 * BT x C elements, as dx already holds other gradients). */
static void
model_column_bwd(struct model *m, void *dx, float *dw, float *db,
                 const void *dy, const void *x, const void *w, int N,
                 void *scratch)
{
    const struct ops *op = m->ops;
    int BT = m->B * m->T, C = m->cfg.hidden_size;
    size_t n = (size_t)BT * (size_t)C;

    if (m->tp.size == 1) {
        op->linear_bwd(dx, dw, db, dy, x, w, BT, C, N);
        return;
    }
    op->zero(scratch, n * m->esize);
    op->linear_bwd(scratch, dw, db, dy, x, w, BT, C, N);
    model_tp_sum(m, scratch, n);
    op->accumulate(dx, scratch, n);
}

void
model_attention_fwd(struct model *m, int l, const void *x, int causal,
                    const float *key_bias)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    struct layer_acts *a = &m->la[l];
    int BT = m->B * m->T, C = k->hidden_size, Cl = m->Cl;

    /* Column-parallel q, k, v (this rank's heads), row-parallel output
     * projection: the ranks' partial sums meet in one all-reduce. */
    op->linear_fwd(a->qkv, x, P(o->qkv_w), P(o->qkv_b), BT, C, 3 * Cl);
    op->attention_fwd(a->atty, a->att, a->qkv, key_bias, m->B, m->T, Cl, m->NHl,
                      m->h0, k->num_heads, causal,
                      model_drop_p(m, k->attention_dropout),
                      model_site_seed(m, l, SITE_ATT_PROBS));
    op->linear_fwd(m->tmp, a->atty, P(o->proj_w), ROW_BIAS(o->proj_b), BT, Cl,
                   C);
    model_tp_sum(m, m->tmp, (size_t)BT * (size_t)C);
    op->dropout_fwd(m->tmp, m->tmp, (size_t)BT * (size_t)C,
                    model_drop_p(m, k->hidden_dropout),
                    model_site_seed(m, l, SITE_ATT_OUT));
}

void
model_mlp_fwd(struct model *m, int l, const void *x)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    struct layer_acts *a = &m->la[l];
    int BT = m->B * m->T, C = k->hidden_size, I = m->Il;

    /* The first linear and its activation in one op (cuBLASLt's GELU
     * epilogue on a GPU); fch keeps the linear's output for backward. */
    op->linear_act_fwd(a->fch_act, a->fch, x, P(o->fc_w), P(o->fc_b), BT, C, I,
                       k->hidden_act);
    op->linear_fwd(m->tmp, a->fch_act, P(o->fc2_w), ROW_BIAS(o->fc2_b), BT, I,
                   C);
    model_tp_sum(m, m->tmp, (size_t)BT * (size_t)C);
    op->dropout_fwd(m->tmp, m->tmp, (size_t)BT * (size_t)C,
                    model_drop_p(m, k->hidden_dropout),
                    model_site_seed(m, l, SITE_MLP_OUT));
}

void
model_attention_bwd(struct model *m, int l, const void *dout, void *dx,
                    const void *x, int causal)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    const struct layer_acts *a = &m->la[l];
    int BT = m->B * m->T, C = k->hidden_size, Cl = m->Cl;
    size_t n = (size_t)BT * (size_t)C, nl = (size_t)BT * (size_t)Cl;

    const float *key_bias = causal ? NULL : m->bb.key_bias;

    op->zero(m->g2, n * m->esize);
    op->dropout_bwd(m->g2, dout, n, model_drop_p(m, k->hidden_dropout),
                    model_site_seed(m, l, SITE_ATT_OUT));
    op->zero(m->g3, nl * m->esize);
    op->linear_bwd(m->g3, G(o->proj_w), G(o->proj_b), m->g2, a->atty,
                   P(o->proj_w), BT, Cl, C);
    if (m->recompute == RECOMPUTE_CORE_ATTN) /* the shared state */
        op->attention_fwd(a->atty, a->att, a->qkv, key_bias, m->B, m->T, Cl,
                          m->NHl, m->h0, k->num_heads, causal,
                          model_drop_p(m, k->attention_dropout),
                          model_site_seed(m, l, SITE_ATT_PROBS));
    op->zero(m->gq, 3 * nl * m->esize);
    op->attention_bwd(m->gq, m->gatt, m->g3, a->atty, a->qkv, a->att, key_bias,
                      m->B, m->T, Cl, m->NHl, m->h0, k->num_heads, causal,
                      model_drop_p(m, k->attention_dropout),
                      model_site_seed(m, l, SITE_ATT_PROBS));
    model_column_bwd(m, dx, G(o->qkv_w), G(o->qkv_b), m->gq, x, P(o->qkv_w),
                     3 * Cl, m->g3);
}

void
model_mlp_bwd(struct model *m, int l, const void *dout, void *dx, const void *x)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    const struct layer_acts *a = &m->la[l];
    int BT = m->B * m->T, C = k->hidden_size, I = m->Il;
    size_t n = (size_t)BT * (size_t)C, nI = (size_t)BT * (size_t)I;

    op->zero(m->g2, n * m->esize);
    op->dropout_bwd(m->g2, dout, n, model_drop_p(m, k->hidden_dropout),
                    model_site_seed(m, l, SITE_MLP_OUT));
    op->zero(m->gi0, nI * m->esize);
    op->linear_bwd(m->gi0, G(o->fc2_w), G(o->fc2_b), m->g2, a->fch_act,
                   P(o->fc2_w), BT, I, C);
    op->zero(m->gi1, nI * m->esize);
    op->act_bwd(m->gi1, m->gi0, a->fch, nI, k->hidden_act);
    model_column_bwd(m, dx, G(o->fc_w), G(o->fc_b), m->gi1, x, P(o->fc_w), I,
                     m->g2);
}
