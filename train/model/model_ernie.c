/* SPDX-License-Identifier: MIT */
/*
 * model_ernie.c: ERNIE for pre-training (ernie-data.md 9.2-9.4): word +
 * position + token type (+ task type) embeddings, LayerNorm, dropout; a
 * post-LN encoder; the MLM head on the masked rows (dense, activation,
 * LayerNorm, the tied word embeddings, a bias); the pooler and the SOP
 * head.  Tensor names are transformers' ErnieForPreTraining.
 */
#include <stdio.h>

#include "model_int.h"

/* A tensor of the table, initialised with the config's range; adjacent:
 * right after the one before (MODEL_ADJACENT). */
static int
add_at(struct model *m, size_t *off, const char *name, int64_t d0, int64_t d1,
       enum tp_split tp, int layer, enum param_init init, int adjacent)
{
    return model_add_tensor(m, off, name, d0, d1, tp, layer, init,
                            m->cfg.initializer_range,
                            adjacent ? MODEL_ADJACENT : 0);
}

static int
add(struct model *m, size_t *off, const char *name, int64_t d0, int64_t d1,
    enum tp_split tp, int layer, enum param_init init)
{
    return add_at(m, off, name, d0, d1, tp, layer, init, 0);
}

int
model_ernie_table(struct model *m)
{
    const struct model_config *k = &m->cfg;
    struct head_off *h = &m->ho;
    int64_t C = k->hidden_size, I = k->intermediate_size;
    char n[PARAM_NAME_MAX];
    size_t skip;
    int rc = 0;

    rc |= add(m, &h->word, "ernie.embeddings.word_embeddings.weight",
              k->vocab_size, C, TP_VOCAB, PARAM_PRE, INIT_NORMAL);
    if (m->pre && rc == 0)
        m->table.t[m->table.n - 1].zero_row = k->pad_token_id;
    rc |= add(m, &h->pos, "ernie.embeddings.position_embeddings.weight",
              k->max_position, C, TP_REPLICATED, PARAM_PRE, INIT_NORMAL);
    rc |= add(m, &h->type, "ernie.embeddings.token_type_embeddings.weight",
              k->type_vocab_size, C, TP_REPLICATED, PARAM_PRE, INIT_NORMAL);
    if (k->use_task_id)
        rc |= add(m, &h->task, "ernie.embeddings.task_type_embeddings.weight",
                  k->task_type_vocab_size, C, TP_REPLICATED, PARAM_PRE,
                  INIT_NORMAL);
    rc |= add(m, &h->emb_ln_w, "ernie.embeddings.LayerNorm.weight", C, 0,
              TP_REPLICATED, PARAM_PRE, INIT_ONES);
    rc |= add(m, &h->emb_ln_b, "ernie.embeddings.LayerNorm.bias", C, 0,
              TP_REPLICATED, PARAM_PRE, INIT_ZEROS);
    for (int l = 0; l < k->num_layers && rc == 0; l++) {
        struct layer_off *o = &m->lo[l];
        static const char *const qkv[3] = { "query", "key", "value" };

#define NAME(fmt) (snprintf(n, sizeof(n), "ernie.encoder.layer.%d." fmt, l), n)
        /* q, k, v weights adjacent, then their biases: one fused linear
         * (k and v right after q, with no pad between). */
        for (int j = 0; j < 3; j++) {
            snprintf(n, sizeof(n),
                     "ernie.encoder.layer.%d.attention.self.%s.weight", l,
                     qkv[j]);
            rc |= add_at(m, j ? &skip : &o->qkv_w, n, C, C, TP_COLUMN, l,
                         INIT_NORMAL, j > 0);
        }
        for (int j = 0; j < 3; j++) {
            snprintf(n, sizeof(n),
                     "ernie.encoder.layer.%d.attention.self.%s.bias", l,
                     qkv[j]);
            rc |= add_at(m, j ? &skip : &o->qkv_b, n, C, 0, TP_COLUMN, l,
                         INIT_ZEROS, j > 0);
        }
        rc |= add(m, &o->proj_w, NAME("attention.output.dense.weight"), C, C,
                  TP_ROW, l, INIT_NORMAL);
        rc |= add(m, &o->proj_b, NAME("attention.output.dense.bias"), C, 0,
                  TP_REPLICATED, l, INIT_ZEROS);
        rc |= add(m, &o->ln1_w, NAME("attention.output.LayerNorm.weight"), C, 0,
                  TP_REPLICATED, l, INIT_ONES);
        rc |= add(m, &o->ln1_b, NAME("attention.output.LayerNorm.bias"), C, 0,
                  TP_REPLICATED, l, INIT_ZEROS);
        rc |= add(m, &o->fc_w, NAME("intermediate.dense.weight"), I, C,
                  TP_COLUMN, l, INIT_NORMAL);
        rc |= add(m, &o->fc_b, NAME("intermediate.dense.bias"), I, 0, TP_COLUMN,
                  l, INIT_ZEROS);
        rc |= add(m, &o->fc2_w, NAME("output.dense.weight"), C, I, TP_ROW, l,
                  INIT_NORMAL);
        rc |= add(m, &o->fc2_b, NAME("output.dense.bias"), C, 0, TP_REPLICATED,
                  l, INIT_ZEROS);
        rc |= add(m, &o->ln2_w, NAME("output.LayerNorm.weight"), C, 0,
                  TP_REPLICATED, l, INIT_ONES);
        rc |= add(m, &o->ln2_b, NAME("output.LayerNorm.bias"), C, 0,
                  TP_REPLICATED, l, INIT_ZEROS);
#undef NAME
    }
    rc |= model_add_tied_copy(
        m, &h->word, "ernie.embeddings.word_embeddings.weight", k->vocab_size,
        C, k->initializer_range, k->pad_token_id);
    if (k->binary_head) {
        rc |= add(m, &h->pool_w, "ernie.pooler.dense.weight", C, C,
                  TP_REPLICATED, PARAM_POST, INIT_NORMAL);
        rc |= add(m, &h->pool_b, "ernie.pooler.dense.bias", C, 0, TP_REPLICATED,
                  PARAM_POST, INIT_ZEROS);
    }
    rc |= add(m, &h->mlm_w, "cls.predictions.transform.dense.weight", C, C,
              TP_REPLICATED, PARAM_POST, INIT_NORMAL);
    rc |= add(m, &h->mlm_b, "cls.predictions.transform.dense.bias", C, 0,
              TP_REPLICATED, PARAM_POST, INIT_ZEROS);
    rc |= add(m, &h->mlm_ln_w, "cls.predictions.transform.LayerNorm.weight", C,
              0, TP_REPLICATED, PARAM_POST, INIT_ONES);
    rc |= add(m, &h->mlm_ln_b, "cls.predictions.transform.LayerNorm.bias", C, 0,
              TP_REPLICATED, PARAM_POST, INIT_ZEROS);
    rc |= add(m, &h->mlm_bias, "cls.predictions.bias", k->vocab_size, 0,
              TP_VOCAB, PARAM_POST, INIT_ZEROS);
    if (k->binary_head) {
        rc |= add(m, &h->sop_w, "cls.seq_relationship.weight", 2, C,
                  TP_REPLICATED, PARAM_POST, INIT_NORMAL);
        rc |= add(m, &h->sop_b, "cls.seq_relationship.bias", 2, 0,
                  TP_REPLICATED, PARAM_POST, INIT_ZEROS);
    }
    return rc ? -1 : 0;
}

void
model_ernie_layer_fwd(struct model *m, int l, const void *x)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct layer_off *o = &m->lo[l];
    struct layer_acts *a = &m->la[l];
    int BT = m->B * m->T, C = k->hidden_size;

    /* Post-LN: each residual addition feeds a LayerNorm, one op each. */
    model_attention_fwd(m, l, x, 0, m->bb.key_bias);
    op->residual_layernorm_fwd(a->r1, a->ln1, a->ln1_mean, a->ln1_rstd, x,
                               m->tmp, P(o->ln1_w), P(o->ln1_b), BT, C,
                               k->layer_norm_eps);
    model_mlp_fwd(m, l, a->ln1);
    op->residual_layernorm_fwd(a->r2, a->ln2, a->ln2_mean, a->ln2_rstd, a->ln1,
                               m->tmp, P(o->ln2_w), P(o->ln2_b), BT, C,
                               k->layer_norm_eps);
}

void
model_ernie_forward(struct model *m)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct head_off *h = &m->ho;
    int B = m->B, T = m->T, M = m->M, BT = B * T;
    int C = k->hidden_size, V = m->Vl;
    size_t n = (size_t)BT * (size_t)C;
    const void *x;

    /* Embeddings; a later pipeline stage starts from the input it
     * received. */
    x = m->xin;
    if (m->pre) {
        model_embed_tokens(m, m->emb);
        op->embed_fwd(m->emb, m->bb.type_ids, P(h->type), BT, C, 1);
        if (k->use_task_id)
            op->embed_fwd(m->emb, m->bb.task_ids, P(h->task), BT, C, 1);
        op->layernorm_fwd(m->emb_ln, m->emb_mean, m->emb_rstd, m->emb,
                          P(h->emb_ln_w), P(h->emb_ln_b), BT, C,
                          k->layer_norm_eps);
        op->dropout_fwd(m->emb_ln, m->emb_ln, n,
                        model_drop_p(m, k->hidden_dropout),
                        model_site_seed(m, -1, SITE_EMB));
        x = m->emb_ln;
    }

    /* Post-LN encoder layers (this stage's). */
    for (int l = m->l_first; l < m->l_end; l++) {
        model_layer_params(m, l, MODEL_PARAMS_FORWARD);
        model_ernie_layer_fwd(m, l, x);
        model_layer_params(m, l, MODEL_PARAMS_DONE);
        x = m->la[l].ln2;
    }
    if (!m->post)
        return;

    /* MLM head on the masked rows; the logits turn into their gradient
     * when a backward pass follows. */
    op->gather_rows(m->mg, x, m->bb.mpos, M, C);
    op->linear_act_fwd(m->mta, m->mt, m->mg, P(h->mlm_w), P(h->mlm_b), M, C, C,
                       k->hidden_act);
    op->layernorm_fwd(m->mln, m->mm, m->mr, m->mta, P(h->mlm_ln_w),
                      P(h->mlm_ln_b), M, C, k->layer_norm_eps);
    op->linear_fwd(m->logits, m->mln, P(h->word), P(h->mlm_bias), M, C, V);
    model_lm_xent(m, m->bb.mlab, M);

    /* Pooler and SOP head. */
    if (k->binary_head) {
        op->gather_rows(m->cls, x, m->bb.cls_rows, B, C);
        op->linear_act_fwd(m->pooled, m->pool_pre, m->cls, P(h->pool_w),
                           P(h->pool_b), B, C, C, OPS_ACT_TANH);
        op->linear_fwd(m->sop_logits, m->pooled, P(h->sop_w), P(h->sop_b), B, C,
                       2);
        op->xent(m->sop_losses, m->fo.grad_scale > 0 ? m->sop_logits : NULL,
                 m->sop_logits, m->bb.sop_lab, B, 2, 2,
                 m->fo.grad_scale / (float)B, m->fo.loss_scale);
    }
}

void
model_ernie_backward(struct model *m)
{
    const struct ops *op = m->ops;
    const struct model_config *k = &m->cfg;
    const struct head_off *h = &m->ho;
    int B = m->B, T = m->T, M = m->M, BT = B * T;
    int C = k->hidden_size, V = m->Vl;
    size_t n = (size_t)BT * (size_t)C;
    size_t nM = (size_t)M * (size_t)C, nB = (size_t)B * (size_t)C;

    /* g0: the gradient of the encoder's output (of this stage's output,
     * received, on a stage before the last). */
    if (!m->post)
        goto layers;
    op->zero(m->g0, n * m->esize);

    /* MLM head. */
    op->zero(m->gm0, nM * m->esize);
    op->linear_bwd(m->gm0, G(h->word), G(h->mlm_bias), m->logits, m->mln,
                   P(h->word), M, C, V);
    model_tp_sum(m, m->gm0, nM);
    op->zero(m->gm1, nM * m->esize);
    op->layernorm_bwd(m->gm1, G(h->mlm_ln_w), G(h->mlm_ln_b), m->gm0, m->mta,
                      P(h->mlm_ln_w), m->mm, m->mr, M, C);
    op->zero(m->gm2, nM * m->esize);
    op->act_bwd(m->gm2, m->gm1, m->mt, nM, k->hidden_act);
    op->zero(m->gm0, nM * m->esize);
    op->linear_bwd(m->gm0, G(h->mlm_w), G(h->mlm_b), m->gm2, m->mg, P(h->mlm_w),
                   M, C, C);
    op->scatter_add_rows(m->g0, m->gm0, m->bb.mpos, M, C);

    /* SOP head and pooler. */
    if (k->binary_head) {
        op->zero(m->gb0, nB * m->esize);
        op->linear_bwd(m->gb0, G(h->sop_w), G(h->sop_b), m->sop_logits,
                       m->pooled, P(h->sop_w), B, C, 2);
        op->zero(m->gb1, nB * m->esize);
        op->act_bwd(m->gb1, m->gb0, m->pool_pre, nB, OPS_ACT_TANH);
        op->zero(m->gb2, nB * m->esize);
        op->linear_bwd(m->gb2, G(h->pool_w), G(h->pool_b), m->gb1, m->cls,
                       P(h->pool_w), B, C, C);
        op->scatter_add_rows(m->g0, m->gb2, m->bb.cls_rows, B, C);
    }

    /* Layers, last to first; g0 carries the gradient of each output. */
layers:
    for (int l = m->l_end - 1; l >= m->l_first; l--) {
        const struct layer_off *o = &m->lo[l];
        const struct layer_acts *a = &m->la[l];
        const void *x = l > m->l_first ? m->la[l - 1].ln2
                        : m->pre       ? m->emb_ln
                                       : m->xin;

        model_layer_params(m, l, MODEL_PARAMS_BACKWARD);
        if (m->recompute == RECOMPUTE_FULL)
            model_ernie_layer_fwd(m, l, x);
        /* ln2 = LN(r2), r2 = ln1 + drop(fc2(act(fc(ln1)))) */
        op->zero(m->g1, n * m->esize);
        op->layernorm_bwd(m->g1, G(o->ln2_w), G(o->ln2_b), m->g0, a->r2,
                          P(o->ln2_w), a->ln2_mean, a->ln2_rstd, BT, C);
        model_mlp_bwd(m, l, m->g1, m->g1, a->ln1);
        /* ln1 = LN(r1), r1 = x + drop(proj(attention(qkv(x)))) */
        op->zero(m->g0, n * m->esize);
        op->layernorm_bwd(m->g0, G(o->ln1_w), G(o->ln1_b), m->g1, a->r1,
                          P(o->ln1_w), a->ln1_mean, a->ln1_rstd, BT, C);
        model_attention_bwd(m, l, m->g0, m->g0, x, 0);
        model_layer_done(m, l);
        model_layer_params(m, l, MODEL_PARAMS_DONE);
    }

    /* Embeddings: emb_ln = drop(LN(word + pos + type + task)); a later
     * stage sends g0 back instead. */
    if (!m->pre)
        return;
    op->zero(m->g1, n * m->esize);
    op->dropout_bwd(m->g1, m->g0, n, model_drop_p(m, k->hidden_dropout),
                    model_site_seed(m, -1, SITE_EMB));
    op->zero(m->g2, n * m->esize);
    op->layernorm_bwd(m->g2, G(h->emb_ln_w), G(h->emb_ln_b), m->g1, m->emb,
                      P(h->emb_ln_w), m->emb_mean, m->emb_rstd, BT, C);
    op->embed_bwd(G(h->word), m->g2, m->bb.vids, BT, C,
                  k->pad_token_id >= m->v0 &&
                          k->pad_token_id < m->v0 + m->V_valid
                      ? k->pad_token_id - m->v0
                      : -1);
    op->embed_bwd(G(h->pos), m->g2, m->bb.pos_ids, BT, C, -1);
    op->embed_bwd(G(h->type), m->g2, m->bb.type_ids, BT, C, -1);
    if (k->use_task_id)
        op->embed_bwd(G(h->task), m->g2, m->bb.task_ids, BT, C, -1);
}
