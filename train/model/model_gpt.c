/* SPDX-License-Identifier: MIT */
/*
 * model_gpt.c: GPT-2 (transformers' GPT2LMHeadModel): token + learned
 * position embeddings, dropout, pre-LN decoder layers with causal
 * attention, a final LayerNorm and the LM head tied to the token
 * embeddings.  c_attn/c_proj/c_fc weights are kept [out, in] like every
 * linear here; Hugging Face stores them [in, out] (Conv1D), which the
 * table's hf_transposed flag records for checkpoints.
 */
#include <math.h>
#include <stdio.h>

#include "model_int.h"

int
model_gpt_table(struct model *m)
{
    const struct model_config *k = &m->cfg;
    struct head_off *h = &m->ho;
    int64_t C = k->hidden_size, I = k->intermediate_size;
    float std = k->initializer_range;
    /* GPT-2's scaled init of the projections into the residual stream. */
    float std_res = (float)(k->initializer_range / sqrt(2.0 * k->num_layers));
    char n[PARAM_NAME_MAX];
    int rc = 0;

    rc |= model_add_tensor(m, &h->word, "transformer.wte.weight", k->vocab_size,
                           C, TP_VOCAB, PARAM_PRE, INIT_NORMAL, std, 0);
    rc |=
        model_add_tensor(m, &h->pos, "transformer.wpe.weight", k->max_position,
                         C, TP_REPLICATED, PARAM_PRE, INIT_NORMAL, std, 0);
    for (int l = 0; l < k->num_layers && rc == 0; l++) {
        struct layer_off *o = &m->lo[l];

#define NAME(fmt) (snprintf(n, sizeof(n), "transformer.h.%d." fmt, l), n)
        rc |= model_add_tensor(m, &o->ln1_w, NAME("ln_1.weight"), C, 0,
                               TP_REPLICATED, l, INIT_ONES, 0, 0);
        rc |= model_add_tensor(m, &o->ln1_b, NAME("ln_1.bias"), C, 0,
                               TP_REPLICATED, l, INIT_ZEROS, 0, 0);
        rc |= model_add_tensor(m, &o->qkv_w, NAME("attn.c_attn.weight"), 3 * C,
                               C, TP_COLUMN_QKV, l, INIT_NORMAL, std,
                               MODEL_HF_TRANSPOSED);
        rc |= model_add_tensor(m, &o->qkv_b, NAME("attn.c_attn.bias"), 3 * C, 0,
                               TP_COLUMN_QKV, l, INIT_ZEROS, 0, 0);
        rc |= model_add_tensor(m, &o->proj_w, NAME("attn.c_proj.weight"), C, C,
                               TP_ROW, l, INIT_NORMAL, std_res,
                               MODEL_HF_TRANSPOSED);
        rc |= model_add_tensor(m, &o->proj_b, NAME("attn.c_proj.bias"), C, 0,
                               TP_REPLICATED, l, INIT_ZEROS, 0, 0);
        rc |= model_add_tensor(m, &o->ln2_w, NAME("ln_2.weight"), C, 0,
                               TP_REPLICATED, l, INIT_ONES, 0, 0);
        rc |= model_add_tensor(m, &o->ln2_b, NAME("ln_2.bias"), C, 0,
                               TP_REPLICATED, l, INIT_ZEROS, 0, 0);
        rc |= model_add_tensor(m, &o->fc_w, NAME("mlp.c_fc.weight"), I, C,
                               TP_COLUMN, l, INIT_NORMAL, std,
                               MODEL_HF_TRANSPOSED);
        rc |= model_add_tensor(m, &o->fc_b, NAME("mlp.c_fc.bias"), I, 0,
                               TP_COLUMN, l, INIT_ZEROS, 0, 0);
        rc |= model_add_tensor(m, &o->fc2_w, NAME("mlp.c_proj.weight"), C, I,
                               TP_ROW, l, INIT_NORMAL, std_res,
                               MODEL_HF_TRANSPOSED);
        rc |= model_add_tensor(m, &o->fc2_b, NAME("mlp.c_proj.bias"), C, 0,
                               TP_REPLICATED, l, INIT_ZEROS, 0, 0);
#undef NAME
    }
    rc |= model_add_tied_copy(m, &h->word, "transformer.wte.weight",
                              k->vocab_size, C, std, -1);
    rc |= model_add_tensor(m, &h->lnf_w, "transformer.ln_f.weight", C, 0,
                           TP_REPLICATED, PARAM_POST, INIT_ONES, 0, 0);
    rc |= model_add_tensor(m, &h->lnf_b, "transformer.ln_f.bias", C, 0,
                           TP_REPLICATED, PARAM_POST, INIT_ZEROS, 0, 0);
    return rc ? -1 : 0;
}

void
model_gpt_layer_fwd(struct model *m, int l, const void *x)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    struct layer_acts *a = &m->la[l];
    int BT = m->B * m->T, C = k->hidden_size;
    size_t n = (size_t)BT * (size_t)C;

    op->layernorm_fwd(a->ln1, a->ln1_mean, a->ln1_rstd, x, P(o->ln1_w),
                      P(o->ln1_b), BT, C, k->layer_norm_eps);
    model_attention_fwd(m, l, a->ln1, 1, NULL);
    /* r1 = x + attention, ln2 = LN(r1): one op. */
    op->residual_layernorm_fwd(a->r1, a->ln2, a->ln2_mean, a->ln2_rstd, x,
                               m->tmp, P(o->ln2_w), P(o->ln2_b), BT, C,
                               k->layer_norm_eps);
    model_mlp_fwd(m, l, a->ln2);
    op->add(a->r2, a->r1, m->tmp, n);
}

void
model_gpt_forward(struct model *m)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct head_off *h = &m->ho;
    int BT = m->B * m->T, C = k->hidden_size, V = m->Vl;
    size_t n = (size_t)BT * (size_t)C;
    const void *x;

    /* A later pipeline stage starts from the input it received. */
    x = m->xin;
    if (m->pre) {
        model_embed_tokens(m, m->emb);
        op->dropout_fwd(m->emb, m->emb, n,
                        model_drop_p(m, k->embedding_dropout),
                        model_site_seed(m, -1, SITE_EMB));
        x = m->emb;
    }
    for (int l = m->l_first; l < m->l_end; l++) {
        model_layer_params(m, l, MODEL_PARAMS_FORWARD);
        model_gpt_layer_fwd(m, l, x);
        model_layer_params(m, l, MODEL_PARAMS_DONE);
        x = m->la[l].r2;
    }
    if (!m->post)
        return;
    op->layernorm_fwd(m->lnf, m->lnf_mean, m->lnf_rstd, x, P(h->lnf_w),
                      P(h->lnf_b), BT, C, k->layer_norm_eps);
    op->linear_fwd(m->logits, m->lnf, P(h->word), NULL, BT, C, V);
    model_lm_xent(m, m->bb.labels, BT);
}

void
model_gpt_backward(struct model *m)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct head_off *h = &m->ho;
    int BT = m->B * m->T, C = k->hidden_size, V = m->Vl;
    size_t n = (size_t)BT * (size_t)C;

    /* LM head and final norm; g0 then carries the residual stream's
     * gradient down through the layers (a stage before the last received
     * it). */
    if (!m->post)
        goto layers;
    op->zero(m->g1, n * m->esize);
    op->linear_bwd(m->g1, G(h->word), NULL, m->logits, m->lnf, P(h->word), BT,
                   C, V);
    model_tp_sum(m, m->g1, n);
    op->zero(m->g0, n * m->esize);
    op->layernorm_bwd(m->g0, G(h->lnf_w), G(h->lnf_b), m->g1,
                      m->la[m->l_end - 1].r2, P(h->lnf_w), m->lnf_mean,
                      m->lnf_rstd, BT, C);
layers:
    for (int l = m->l_end - 1; l >= m->l_first; l--) {
        const struct layer_off *o = &m->lo[l];
        const struct layer_acts *a = &m->la[l];
        const void *x = l > m->l_first ? m->la[l - 1].r2
                        : m->pre       ? m->emb
                                       : m->xin;

        model_layer_params(m, l, MODEL_PARAMS_BACKWARD);
        if (m->recompute == RECOMPUTE_FULL)
            model_gpt_layer_fwd(m, l, x);
        /* r2 = r1 + drop(fc2(act(fc(LN2(r1))))) */
        op->zero(m->g1, n * m->esize);
        model_mlp_bwd(m, l, m->g0, m->g1, a->ln2);
        op->layernorm_bwd(m->g0, G(o->ln2_w), G(o->ln2_b), m->g1, a->r1,
                          P(o->ln2_w), a->ln2_mean, a->ln2_rstd, BT, C);
        /* r1 = x + drop(proj(attention(qkv(LN1(x))))) */
        op->zero(m->g1, n * m->esize);
        model_attention_bwd(m, l, m->g0, m->g1, a->ln1, 1);
        op->layernorm_bwd(m->g0, G(o->ln1_w), G(o->ln1_b), m->g1, x,
                          P(o->ln1_w), a->ln1_mean, a->ln1_rstd, BT, C);
        model_layer_done(m, l);
        model_layer_params(m, l, MODEL_PARAMS_DONE);
    }
    if (!m->pre)
        return;
    op->zero(m->g1, n * m->esize);
    op->dropout_bwd(m->g1, m->g0, n, model_drop_p(m, k->embedding_dropout),
                    model_site_seed(m, -1, SITE_EMB));
    op->embed_bwd(G(h->word), m->g1, m->bb.vids, BT, C, -1);
    op->embed_bwd(G(h->pos), m->g1, m->bb.pos_ids, BT, C, -1);
}
