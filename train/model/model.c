/* SPDX-License-Identifier: MIT */
/*
 * model.c: building a model (tensor table, parameter and activation
 * buffers), its initialisation, and the forward/backward entry points that
 * hand over to model_ernie.c and model_gpt.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "util/tr_util.h"

uint64_t
model_site_seed(const struct model *m, int layer, int site)
{
    return ops_splitmix64(
        m->fo.seed ^
        ops_splitmix64(((uint64_t)(layer + 2) << 8) | (uint64_t)site));
}

/* Carve the activation arena: a first pass (base NULL) only counts. */
struct carver {
    char *base;
    size_t used;
};

static void *
carve(struct carver *c, size_t bytes)
{
    void *p = c->base ? c->base + c->used : NULL;

    c->used += (bytes + 63) & ~(size_t)63;
    return p;
}

#define CF(n) ((float *)carve(c, (size_t)(n) * sizeof(float)))
#define CI(n) ((int32_t *)carve(c, (size_t)(n) * sizeof(int32_t)))
#define SF(n) ((float *)carve(sc, (size_t)(n) * sizeof(float)))

/* One layer's activations (the attention probabilities only if TT). */
static void
carve_layer(struct carver *c, struct layer_acts *a, size_t BT, size_t C,
            size_t Cl, size_t I, size_t TT)
{
    a->qkv = CF(3 * BT * Cl);
    a->att = TT ? CF(TT) : NULL;
    a->atty = CF(BT * Cl);
    a->r1 = CF(BT * C);
    a->ln1 = CF(BT * C);
    a->ln1_mean = CF(BT);
    a->ln1_rstd = CF(BT);
    a->fch = CF(BT * I);
    a->fch_act = CF(BT * I);
    a->r2 = CF(BT * C);
    a->ln2 = CF(BT * C);
    a->ln2_mean = CF(BT);
    a->ln2_rstd = CF(BT);
}

static void
layout_acts(struct model *m, struct carver *c, struct carver *sc)
{
    const struct model_config *k = &m->cfg;
    size_t BT = (size_t)m->max_B * (size_t)m->max_T, C = (size_t)k->hidden_size;
    /* This rank's part under tensor parallelism: heads, MLP, vocab. */
    size_t Cl = (size_t)m->Cl, I = (size_t)m->Il, NH = (size_t)m->NHl;
    size_t TT = (size_t)m->max_T * (size_t)m->max_T * NH * (size_t)m->max_B;
    size_t V = (size_t)m->Vl, B = (size_t)m->max_B;
    size_t M = (size_t)m->max_M;
    size_t rows = k->type == MODEL_GPT ? BT : M;

    struct layer_acts one;
    float *shared_att = NULL;

    /* Full recompute: one set of layer activations for all layers, plus
     * each layer's output (the next layer's input); core_attn: the
     * attention probabilities shared.  What a backward recomputes, and
     * the gradients' scratch, come from sc: the micro-batches in flight
     * (pipeline slots) share it. */
    if (m->recompute == RECOMPUTE_FULL)
        carve_layer(sc, &one, BT, C, Cl, I, TT);
    else if (m->recompute == RECOMPUTE_CORE_ATTN)
        shared_att = SF(TT);
    for (int l = m->l_first; l < m->l_end; l++) {
        struct layer_acts *a = &m->la[l];

        if (m->recompute == RECOMPUTE_FULL) {
            *a = one;
            if (k->type == MODEL_GPT)
                a->r2 = CF(BT * C);
            else
                a->ln2 = CF(BT * C);
            continue;
        }
        /* (In the counting pass the pointers are all NULL.) */
        if (m->recompute == RECOMPUTE_CORE_ATTN) {
            carve_layer(c, a, BT, C, Cl, I, 0);
            a->att = shared_att;
        } else {
            carve_layer(c, a, BT, C, Cl, I, TT);
        }
    }
    m->emb = CF(BT * C);
    m->xin = CF(BT * C);
    m->tmp = SF(BT * C);
    m->logits = CF(rows * V);
    m->losses = CF(rows ? rows : 1);
    m->rowmax = CF(rows ? rows : 1);
    m->xsums = (double *)carve(c, 2 * (rows ? rows : 1) * sizeof(double));
    m->g0 = CF(BT * C);
    m->g1 = SF(BT * C);
    m->g2 = SF(BT * C);
    m->g3 = SF(BT * C);
    m->gq = SF(3 * BT * Cl);
    m->gi0 = SF(BT * I);
    m->gi1 = SF(BT * I);
    m->gatt = SF(TT);
    m->ids = CI(BT);
    m->vids = m->tp.size > 1 ? CI(BT) : m->ids;
    m->pos_ids = CI(BT);
    m->labels = CI(BT);
    if (k->type == MODEL_GPT) {
        m->lnf = CF(BT * C);
        m->lnf_mean = CF(BT);
        m->lnf_rstd = CF(BT);
        return;
    }
    m->emb_ln = CF(BT * C);
    m->emb_mean = CF(BT);
    m->emb_rstd = CF(BT);
    m->key_bias = CF(BT);
    m->type_ids = CI(BT);
    m->task_ids = CI(BT);
    m->mg = CF(M * C);
    m->mt = CF(M * C);
    m->mta = CF(M * C);
    m->mln = CF(M * C);
    m->mm = CF(M);
    m->mr = CF(M);
    m->gm0 = SF(M * C);
    m->gm1 = SF(M * C);
    m->gm2 = SF(M * C);
    m->mpos = CI(M);
    m->mlab = CI(M);
    m->cls = CF(B * C);
    m->pool_pre = CF(B * C);
    m->pooled = CF(B * C);
    m->sop_logits = CF(B * 2);
    m->sop_losses = CF(B);
    m->gb0 = SF(B * C);
    m->gb1 = SF(B * C);
    m->gb2 = SF(B * C);
    m->cls_rows = CI(B);
    m->sop_lab = CI(B);
}

int
model_create(struct model **out, const struct model_config *cfg,
             const struct ops *ops, int max_B, int max_T, int max_M, char *err,
             size_t errlen)
{
    return model_create_recompute(out, cfg, ops, max_B, max_T, max_M,
                                  RECOMPUTE_NONE, err, errlen);
}

int
model_create_recompute(struct model **out, const struct model_config *cfg,
                       const struct ops *ops, int max_B, int max_T, int max_M,
                       enum model_recompute recompute, char *err, size_t errlen)
{
    return model_create_par(out, cfg, ops, max_B, max_T, max_M, recompute, NULL,
                            err, errlen);
}

/* The sizes of a model of cfg as tensor-parallel rank tp_rank of tp_size
 * and stage pp_rank of pp_size, and its tensor table (m->lo, m->ho). */
static int
build_table(struct model *m, const struct model_config *cfg, int tp_size,
            int tp_rank, int pp, int pp_rank)
{
    int n = tp_size;

    m->cfg = *cfg;
    m->pp = pp;
    m->pp_rank = pp_rank;
    m->l_first = pp_rank * cfg->num_layers / pp;
    m->l_end = (pp_rank + 1) * cfg->num_layers / pp;
    m->pre = pp_rank == 0;
    m->post = pp_rank == pp - 1;
    m->tp.size = n;
    m->tp.rank = tp_rank;
    m->Cl = cfg->hidden_size / n;
    m->NHl = cfg->num_heads / n;
    m->h0 = m->tp.rank * m->NHl;
    m->Il = cfg->intermediate_size / n;
    m->Vl = (cfg->vocab_size + n - 1) / n;
    m->v0 = m->tp.rank * m->Vl;
    m->V_valid =
        cfg->vocab_size - m->v0 < m->Vl ? cfg->vocab_size - m->v0 : m->Vl;
    params_init_tp(&m->table, n, m->tp.rank);
    m->lo = calloc((size_t)cfg->num_layers, sizeof(*m->lo));
    if (m->lo == NULL)
        return -1;
    return cfg->type == MODEL_GPT ? model_gpt_table(m) : model_ernie_table(m);
}

int
model_table_build(const struct model_config *cfg, int tp_size, int tp_rank,
                  struct param_table *out, char *err, size_t errlen)
{
    struct model *m;
    struct config_err ce;
    int rc;

    params_init(out);
    if (config_check(cfg, &ce) < 0)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (tp_size < 1 || tp_rank < 0 || tp_rank >= tp_size ||
        cfg->num_heads % tp_size || cfg->intermediate_size % tp_size)
        return tr_fail(err, errlen,
                       "tensor parallel degree %d must divide the attention "
                       "heads (%d) and the intermediate size (%d)",
                       tp_size, cfg->num_heads, cfg->intermediate_size);
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return tr_fail(err, errlen, "out of memory");
    rc = build_table(m, cfg, tp_size, tp_rank, 1, 0);
    if (rc == 0)
        *out = m->table;
    else
        params_release(&m->table);
    free(m->lo);
    free(m);
    return rc < 0 ? tr_fail(err, errlen, "out of memory") : 0;
}

/* Each part's span of the flat layout, and its buffers: the flat ones
 * where the model holds them. */
static int
find_parts(struct model *m)
{
    size_t n = (size_t)m->cfg.num_layers + 2;

    m->parts = calloc(n, sizeof(*m->parts));
    if (m->parts == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        m->parts[i].lo = SIZE_MAX;
    for (size_t i = 0; i < m->table.n; i++) {
        const struct param_tensor *t = &m->table.t[i];
        struct model_part *p = &m->parts[t->layer + 2];

        p->lo = t->offset < p->lo ? t->offset : p->lo;
        p->hi = t->offset + t->numel > p->hi ? t->offset + t->numel : p->hi;
    }
    for (size_t i = 0; i < n; i++) {
        struct model_part *p = &m->parts[i];

        if (p->lo > p->hi)
            p->lo = p->hi = 0;
        p->p = m->params ? m->params + p->lo : NULL;
        p->g = m->grads ? m->grads + p->lo : NULL;
    }
    return 0;
}

int
model_create_par(struct model **out, const struct model_config *cfg,
                 const struct ops *ops, int max_B, int max_T, int max_M,
                 enum model_recompute recompute, const struct model_par *par,
                 char *err, size_t errlen)
{
    struct model *m;
    const struct model_tp *tp = par ? &par->tp : NULL;
    int n = tp && tp->size > 1 ? tp->size : 1;
    int pp = par && par->pp_size > 1 ? par->pp_size : 1;
    int pp_rank = pp > 1 ? par->pp_rank : 0;
    int slots = par && par->slots > 1 ? par->slots : 1;
    struct config_err ce;
    struct carver c = { NULL, 0 }, sc = { NULL, 0 };
    size_t bytes;

    *out = NULL;
    if (config_check(cfg, &ce) < 0)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (max_B < 1 || max_T < 1 || max_M < 0 ||
        (cfg->type == MODEL_ERNIE && max_M < 1))
        return tr_fail(err, errlen, "bad micro-batch size %d x %d (%d masked)",
                       max_B, max_T, max_M);
    if (max_T > cfg->max_position)
        return tr_fail(err, errlen,
                       "sequence length %d exceeds the model's %d positions",
                       max_T, cfg->max_position);
    if (n > 1 && (cfg->num_heads % n || cfg->intermediate_size % n ||
                  tp->rank < 0 || tp->rank >= n || tp->all_reduce == NULL))
        return tr_fail(err, errlen,
                       "tensor parallel degree %d must divide the attention "
                       "heads (%d) and the intermediate size (%d)",
                       n, cfg->num_heads, cfg->intermediate_size);
    if (pp > cfg->num_layers || pp_rank < 0 || pp_rank >= pp)
        return tr_fail(err, errlen,
                       "%d pipeline stages for %d layers: each stage needs at "
                       "least one layer",
                       pp, cfg->num_layers);
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return tr_fail(err, errlen, "out of memory");
    m->n_slots = slots;
    if (n > 1)
        m->tp = *tp;
    m->ops = ops;
    m->max_B = max_B;
    m->max_T = max_T;
    m->max_M = cfg->type == MODEL_ERNIE ? max_M : 0;
    m->recompute = recompute;
    m->la = calloc((size_t)cfg->num_layers, sizeof(*m->la));
    if (m->la == NULL ||
        build_table(m, cfg, n, n > 1 ? tp->rank : 0, pp, pp_rank) < 0)
        goto oom;
    bytes = m->table.total * sizeof(float);
    if (!(par && par->shard_params) &&
        (m->params = ops->alloc(bytes, "parameters")) == NULL)
        goto oom;
    if (!(par && par->shard_grads) &&
        (m->grads = ops->alloc(bytes, "gradients")) == NULL)
        goto oom;
    m->arenas = calloc((size_t)slots, sizeof(*m->arenas));
    m->slot_state = calloc((size_t)slots, sizeof(*m->slot_state));
    if (m->arenas == NULL || m->slot_state == NULL || find_parts(m) < 0)
        goto oom;
    /* One slot: one arena for everything; more: an arena per slot and one
     * shared. */
    layout_acts(m, &c, slots > 1 ? &sc : &c);
    m->arena_bytes = c.used;
    m->shared_bytes = sc.used;
    for (int i = 0; i < slots; i++)
        if ((m->arenas[i] = ops->alloc(c.used, "activations")) == NULL)
            goto oom;
    if (slots > 1 &&
        (m->shared_arena = ops->alloc(sc.used, "activations")) == NULL)
        goto oom;
    m->host_scratch = malloc((size_t)max_B * (size_t)max_T * sizeof(int32_t));
    m->host_f = malloc(((size_t)max_B * (size_t)max_T > (size_t)m->max_M
                            ? (size_t)max_B * (size_t)max_T
                            : (size_t)m->max_M) *
                       sizeof(float));
    if (m->host_scratch == NULL || m->host_f == NULL)
        goto oom;
    c.base = m->arenas[0];
    c.used = 0;
    sc.base = m->shared_arena;
    sc.used = 0;
    layout_acts(m, &c, slots > 1 ? &sc : &c);
    *out = m;
    return 0;
oom:
    bytes = m->table.total;
    model_free(m);
    return tr_fail(err, errlen, "out of memory for the model (%zu parameters)",
                   bytes);
}

void
model_free(struct model *m)
{
    if (m == NULL)
        return;
    if (m->ops) {
        m->ops->release(m->params);
        m->ops->release(m->grads);
        for (int i = 0; m->arenas && i < m->n_slots; i++)
            m->ops->release(m->arenas[i]);
        m->ops->release(m->shared_arena);
    }
    free(m->host_scratch);
    free(m->host_f);
    free(m->arenas);
    free(m->slot_state);
    free(m->lo);
    free(m->la);
    free(m->parts);
    params_release(&m->table);
    free(m);
}

const struct model_config *
model_cfg(const struct model *m)
{
    return &m->cfg;
}

const struct param_table *
model_table(const struct model *m)
{
    return &m->table;
}

const struct ops *
model_ops(const struct model *m)
{
    return m->ops;
}

float *
model_params(struct model *m)
{
    return m->params;
}

float *
model_grads(struct model *m)
{
    return m->grads;
}

size_t
model_param_bytes(const struct model *m)
{
    return m->params ? m->table.total * sizeof(float) : 0;
}

size_t
model_grad_bytes(const struct model *m)
{
    return m->grads ? m->table.total * sizeof(float) : 0;
}

size_t
model_activation_bytes(const struct model *m)
{
    return m->arena_bytes * (size_t)m->n_slots + m->shared_bytes;
}

int
model_init_params(struct model *m, uint64_t seed)
{
    float *host;

    if (m->params == NULL)
        return -1;
    host = malloc(m->table.total * sizeof(float));
    if (host == NULL)
        return -1;
    params_fill_init(&m->table, seed, host);
    m->ops->upload(m->params, host, m->table.total * sizeof(float));
    free(host);
    return 0;
}

void
model_zero_grad(struct model *m)
{
    if (m->grads)
        m->ops->zero(m->grads, m->table.total * sizeof(float));
}

/* Upload n ids after checking them against [lo, hi). */
static int
upload_ids(struct model *m, int32_t *dst, const int32_t *src, size_t n,
           int32_t lo, int32_t hi, const char *what, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (src[i] < lo || src[i] >= hi)
            return tr_fail(err, errlen, "%s[%zu] = %d is outside [%d, %d)",
                           what, i, src[i], lo, hi);
    m->ops->upload(dst, src, n * sizeof(int32_t));
    return 0;
}

/* Tensor parallelism: the ids as rows of this rank's shard of the vocab,
 * -1 for the other shards'. */
static void
upload_vocab_ids(struct model *m, const int32_t *ids, size_t n)
{
    int32_t *h = m->host_scratch;

    if (m->tp.size == 1)
        return;
    for (size_t i = 0; i < n; i++)
        h[i] = ids[i] >= m->v0 && ids[i] < m->v0 + m->V_valid ? ids[i] - m->v0
                                                              : -1;
    m->ops->upload(m->vids, h, n * sizeof(int32_t));
}

void
model_lm_xent(struct model *m, const int32_t *targets, int rows)
{
    const struct ops *op = m->ops;
    float *d = m->fo.grad_scale > 0 ? m->logits : NULL;
    float dscale = m->fo.grad_scale / (float)rows;

    if (m->tp.size == 1) {
        op->xent(m->losses, d, m->logits, targets, rows, m->Vl, dscale);
        return;
    }
    /* Vocab-parallel (Megatron): the max and the sums meet over the
     * ranks; no rank ever holds a whole row. */
    op->xent_max(m->rowmax, m->logits, rows, m->Vl, m->V_valid);
    m->tp.all_reduce(m->tp.ctx, m->rowmax, (size_t)rows, MODEL_MAX_F32);
    op->xent_partial(m->xsums, m->logits, m->rowmax, targets, rows, m->Vl,
                     m->V_valid, m->v0);
    m->tp.all_reduce(m->tp.ctx, m->xsums, 2 * (size_t)rows, MODEL_SUM_F64);
    op->xent_finish(m->losses, d, m->logits, m->rowmax, m->xsums, targets, rows,
                    m->Vl, m->V_valid, m->v0, dscale);
}

static int
upload_ernie(struct model *m, const struct batch *b, char *err, size_t errlen)
{
    const struct model_config *k = &m->cfg;
    size_t BT = (size_t)b->B * (size_t)b->T;
    int32_t *h = m->host_scratch;
    float *kb = m->host_f;

    if (b->M < 1 || b->M > m->max_M)
        return tr_fail(err, errlen, "%d masked slots; the model takes 1 to %d",
                       b->M, m->max_M);
    if (upload_ids(m, m->ids, b->input_ids, BT, 0, k->vocab_size, "input_ids",
                   err, errlen) < 0 ||
        upload_ids(m, m->type_ids, b->token_type_ids, BT, 0, k->type_vocab_size,
                   "token_type_ids", err, errlen) < 0 ||
        upload_ids(m, m->mpos, b->masked_positions, (size_t)b->M, 0,
                   (int32_t)BT, "masked_positions", err, errlen) < 0 ||
        upload_ids(m, m->mlab, b->masked_labels, (size_t)b->M, -1,
                   k->vocab_size, "masked_labels", err, errlen) < 0)
        return -1;
    if (k->binary_head && upload_ids(m, m->sop_lab, b->sop_labels, (size_t)b->B,
                                     0, 2, "sop_labels", err, errlen) < 0)
        return -1;
    upload_vocab_ids(m, b->input_ids, BT);
    for (size_t i = 0; i < BT; i++)
        h[i] = k->task_id;
    m->ops->upload(m->task_ids, h, BT * sizeof(int32_t));
    for (int i = 0; i < b->B; i++)
        h[i] = i * b->T;
    m->ops->upload(m->cls_rows, h, (size_t)b->B * sizeof(int32_t));
    /* The additive key mask of PaddleNLP's input_mask: -1e4 on padding. */
    for (size_t i = 0; i < BT; i++)
        kb[i] = b->attention_mask && !b->attention_mask[i] ? -10000.0f : 0.0f;
    m->ops->upload(m->key_bias, kb, BT * sizeof(float));
    return 0;
}

int
model_forward(struct model *m, const struct batch *b,
              const struct forward_opts *o, struct losses *out, char *err,
              size_t errlen)
{
    const struct model_config *k = &m->cfg;
    size_t BT;
    int32_t *h = m->host_scratch;

    if (b->B < 1 || b->B > m->max_B || b->T < 1 || b->T > m->max_T)
        return tr_fail(err, errlen, "batch %d x %d exceeds the model's %d x %d",
                       b->B, b->T, m->max_B, m->max_T);
    BT = (size_t)b->B * (size_t)b->T;
    m->B = b->B;
    m->T = b->T;
    m->M = k->type == MODEL_ERNIE ? b->M : 0;
    m->fo = *o;
    for (size_t i = 0; i < BT; i++)
        h[i] = (int32_t)(i % (size_t)b->T);
    m->ops->upload(m->pos_ids, h, BT * sizeof(int32_t));
    memset(out, 0, sizeof(*out));
    if (k->type == MODEL_GPT) {
        if (upload_ids(m, m->ids, b->input_ids, BT, 0, k->vocab_size,
                       "input_ids", err, errlen) < 0 ||
            upload_ids(m, m->labels, b->labels, BT, -1, k->vocab_size, "labels",
                       err, errlen) < 0)
            return -1;
        upload_vocab_ids(m, b->input_ids, BT);
        model_gpt_forward(m);
    } else {
        if (upload_ernie(m, b, err, errlen) < 0)
            return -1;
        model_ernie_forward(m);
    }
    if (m->post) {
        /* Per-row losses summed on the host in row order: deterministic. */
        size_t rows = k->type == MODEL_GPT ? BT : (size_t)m->M;
        float *l = m->host_f; /* rows and B are within its size */
        double s = 0;

        m->ops->download(l, m->losses, rows * sizeof(float));
        for (size_t i = 0; i < rows; i++)
            s += l[i];
        out->lm_loss = s / (double)rows;
        if (k->type == MODEL_ERNIE && k->binary_head) {
            s = 0;
            m->ops->download(l, m->sop_losses, (size_t)b->B * sizeof(float));
            for (int i = 0; i < b->B; i++)
                s += l[i];
            out->sop_loss = s / b->B;
        }
        out->loss = out->lm_loss + out->sop_loss;
    }
    return 0;
}

void
model_backward(struct model *m)
{
    if (m->cfg.type == MODEL_GPT)
        model_gpt_backward(m);
    else
        model_ernie_backward(m);
}

void
model_set_layer_hook(struct model *m, void (*fn)(void *ctx, int layer),
                     void *ctx)
{
    m->layer_hook = fn;
    m->layer_hook_ctx = ctx;
}

void
model_part_range(const struct model *m, int part, size_t *lo, size_t *hi)
{
    if (part < PARAM_POST || part >= m->cfg.num_layers) {
        *lo = *hi = 0;
        return;
    }
    *lo = m->parts[part + 2].lo;
    *hi = m->parts[part + 2].hi;
}

void
model_layer_range(const struct model *m, int l, size_t *lo, size_t *hi)
{
    model_part_range(m, l < 0 ? m->cfg.num_layers : l, lo, hi);
}

void
model_bind_params(struct model *m, int part, float *p)
{
    if (part >= PARAM_POST && part < m->cfg.num_layers)
        m->parts[part + 2].p = p;
}

void
model_bind_grads(struct model *m, int part, float *g)
{
    if (part >= PARAM_POST && part < m->cfg.num_layers)
        m->parts[part + 2].g = g;
}

/* The part holding offset off: the embeddings [0, hi), the heads [lo,
 * total), else the last of this stage's layers starting at or before it. */
static const struct model_part *
part_of(const struct model *m, size_t off)
{
    const struct model_part *pre = &m->parts[PARAM_PRE + 2];
    const struct model_part *post = &m->parts[PARAM_POST + 2];
    int a = m->l_first, b = m->l_end - 1;

    if (off < pre->hi)
        return pre;
    if (post->hi > post->lo && off >= post->lo)
        return post;
    while (a < b) {
        int mid = a + (b - a + 1) / 2;

        if (m->parts[mid + 2].lo <= off)
            a = mid;
        else
            b = mid - 1;
    }
    return &m->parts[a + 2];
}

float *
model_param_at(const struct model *m, size_t off)
{
    const struct model_part *p = part_of(m, off);

    return p->p ? p->p + (off - p->lo) : NULL;
}

float *
model_grad_at(const struct model *m, size_t off)
{
    const struct model_part *p = part_of(m, off);

    return p->g ? p->g + (off - p->lo) : NULL;
}

void
model_stage_layers(const struct model *m, int *first, int *end)
{
    *first = m->l_first;
    *end = m->l_end;
}

void
model_use_slot(struct model *m, int slot)
{
    struct carver c = { NULL, 0 }, sc = { NULL, 0 };
    struct slot_state *s;

    if (slot == m->slot || slot < 0 || slot >= m->n_slots)
        return;
    s = &m->slot_state[m->slot];
    s->B = m->B, s->T = m->T, s->M = m->M, s->fo = m->fo;
    m->slot = slot;
    s = &m->slot_state[slot];
    m->B = s->B, m->T = s->T, m->M = s->M, m->fo = s->fo;
    c.base = m->arenas[slot];
    sc.base = m->shared_arena;
    layout_acts(m, &c, &sc);
}

float *
model_stage_input(struct model *m)
{
    return m->xin;
}

const float *
model_stage_output(const struct model *m)
{
    const struct layer_acts *a = &m->la[m->l_end - 1];

    return m->cfg.type == MODEL_GPT ? a->r2 : a->ln2;
}

float *
model_stage_doutput(struct model *m)
{
    return m->g0;
}

const float *
model_stage_dinput(const struct model *m)
{
    return m->g0;
}

void
model_set_param_hook(struct model *m,
                     void (*fn)(void *ctx, int layer, int need), void *ctx)
{
    m->param_hook = fn;
    m->param_hook_ctx = ctx;
}
