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

/* Carve the activation arena: a first pass (base NULL) only counts.
 * Every buffer starts on a 256-byte line (OPS_ALIGN elements of fp32). */
struct carver {
    char *base;
    size_t used;
};

static void *
carve(struct carver *c, size_t bytes)
{
    void *p = c->base ? c->base + c->used : NULL;

    c->used += (bytes + 255) & ~(size_t)255;
    return p;
}

/* n elements of the compute dtype; of float; of double. */
#define CA(n) carve(c, (size_t)(n)*m->esize)
#define CF(n) ((float *)carve(c, (size_t)(n) * sizeof(float)))
#define SA(n) carve(sc, (size_t)(n)*m->esize)
#define SF(n) ((float *)carve(sc, (size_t)(n) * sizeof(float)))

/* One layer's activations (the attention's state only if att_bytes). */
static void
carve_layer(const struct model *m, struct carver *c, struct layer_acts *a,
            size_t BT, size_t C, size_t Cl, size_t I, size_t att_bytes)
{
    a->qkv = CA(3 * BT * Cl);
    a->att = att_bytes ? carve(c, att_bytes) : NULL;
    a->atty = CA(BT * Cl);
    a->r1 = CA(BT * C);
    a->ln1 = CA(BT * C);
    a->ln1_mean = CF(BT);
    a->ln1_rstd = CF(BT);
    a->fch = CA(BT * I);
    a->fch_act = CA(BT * I);
    a->r2 = CA(BT * C);
    a->ln2 = CA(BT * C);
    a->ln2_mean = CF(BT);
    a->ln2_rstd = CF(BT);
}

static void
layout_acts(struct model *m, struct carver *c, struct carver *sc)
{
    const struct model_config *k = &m->cfg;
    size_t BT = (size_t)m->max_B * (size_t)m->max_T, C = (size_t)k->hidden_size;
    /* This rank's part under tensor parallelism: heads, MLP, vocab. */
    size_t Cl = (size_t)m->Cl, I = (size_t)m->Il;
    size_t att = m->ops->attention_state_bytes(m->max_B, m->max_T, m->NHl);
    size_t V = (size_t)m->Vl, B = (size_t)m->max_B;
    size_t M = (size_t)m->max_M;
    size_t rows = k->type == MODEL_GPT ? BT : M;

    struct layer_acts one;
    void *shared_att = NULL;

    /* Full recompute: one set of layer activations for all layers, plus
     * each layer's output (the next layer's input); core_attn: the
     * attention's state shared.  What a backward recomputes, and the
     * gradients' scratch, come from sc: the micro-batches in flight
     * (pipeline slots) share it. */
    if (m->recompute == RECOMPUTE_FULL)
        carve_layer(m, sc, &one, BT, C, Cl, I, att);
    else if (m->recompute == RECOMPUTE_CORE_ATTN)
        shared_att = carve(sc, att);
    for (int l = m->l_first; l < m->l_end; l++) {
        struct layer_acts *a = &m->la[l];

        if (m->recompute == RECOMPUTE_FULL) {
            *a = one;
            if (k->type == MODEL_GPT)
                a->r2 = CA(BT * C);
            else
                a->ln2 = CA(BT * C);
            continue;
        }
        /* (In the counting pass the pointers are all NULL.) */
        if (m->recompute == RECOMPUTE_CORE_ATTN) {
            carve_layer(m, c, a, BT, C, Cl, I, 0);
            a->att = shared_att;
        } else {
            carve_layer(m, c, a, BT, C, Cl, I, att);
        }
    }
    m->emb = CA(BT * C);
    m->xin = CA(BT * C);
    m->tmp = SA(BT * C);
    m->logits = CA(rows * V);
    m->losses = CF(rows ? rows : 1);
    m->rowmax = CF(rows ? rows : 1);
    m->xsums = (double *)carve(c, 2 * (rows ? rows : 1) * sizeof(double));
    m->g0 = CA(BT * C);
    m->g1 = SA(BT * C);
    m->g2 = SA(BT * C);
    m->g3 = SA(BT * C);
    m->gq = SA(3 * BT * Cl);
    m->gi0 = SA(BT * I);
    m->gi1 = SA(BT * I);
    m->gatt = carve(
        sc, m->ops->attention_scratch_bytes(m->max_B, m->max_T, m->NHl, m->Cl));
    /* Tensor-parallel sums of 16-bit activations go through fp32. */
    m->tp_f32 = m->tp.size > 1 && m->ops->dtype != OPS_F32
                    ? SF((BT > M ? BT : M) * C)
                    : NULL;
    if (k->type == MODEL_GPT) {
        m->lnf = CA(BT * C);
        m->lnf_mean = CF(BT);
        m->lnf_rstd = CF(BT);
        return;
    }
    m->emb_ln = CA(BT * C);
    m->emb_mean = CF(BT);
    m->emb_rstd = CF(BT);
    m->mg = CA(M * C);
    m->mt = CA(M * C);
    m->mta = CA(M * C);
    m->mln = CA(M * C);
    m->mm = CF(M);
    m->mr = CF(M);
    m->gm0 = SA(M * C);
    m->gm1 = SA(M * C);
    m->gm2 = SA(M * C);
    m->cls = CA(B * C);
    m->pool_pre = CA(B * C);
    m->pooled = CA(B * C);
    m->sop_logits = CA(B * 2);
    m->sop_losses = CF(B);
    m->gb0 = SA(B * C);
    m->gb1 = SA(B * C);
    m->gb2 = SA(B * C);
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
    /* The vocabulary padded to OPS_VOCAB_ALIGN rows on each rank (as the
     * table's TP_VOCAB tensors are); a rank's shard may be all pad. */
    m->Vl = (cfg->vocab_size + OPS_VOCAB_ALIGN * n - 1) /
            (OPS_VOCAB_ALIGN * n) * OPS_VOCAB_ALIGN;
    m->v0 = m->tp.rank * m->Vl;
    m->V_valid = cfg->vocab_size - m->v0 < 0       ? 0
                 : cfg->vocab_size - m->v0 < m->Vl ? cfg->vocab_size - m->v0
                                                   : m->Vl;
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

/* Each part's span of the flat layout (the pad after its last tensor
 * included, so that the parts of a stage tile its flat buffers), and its
 * buffers: the flat ones where the model holds them. */
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
        p->hi = (p->hi + OPS_ALIGN - 1) / OPS_ALIGN * OPS_ALIGN;
        p->p = m->pc ? model_at(m, m->pc, p->lo) : NULL;
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
    m->esize = ops_dtype_size(ops->dtype);
    m->max_B = max_B;
    m->max_T = max_T;
    m->max_M = cfg->type == MODEL_ERNIE ? max_M : 0;
    m->recompute = recompute;
    m->la = calloc((size_t)cfg->num_layers, sizeof(*m->la));
    m->arenas = calloc((size_t)slots, sizeof(*m->arenas));
    m->slot_state = calloc((size_t)slots, sizeof(*m->slot_state));
    if (m->la == NULL || m->arenas == NULL || m->slot_state == NULL ||
        build_table(m, cfg, n, n > 1 ? tp->rank : 0, pp, pp_rank) < 0)
        goto oom;
    /* The flat buffers, but those sharding stages 2 and 3 leave to zero/
     * (each rank holds its range of them). */
    if (!(par && par->shard_params)) {
        m->params = ops->alloc(m->table.total * sizeof(float), "parameters");
        if (m->params == NULL)
            goto no_memory;
        m->pc = m->params;
        if (ops->dtype != OPS_F32 &&
            (m->pc = ops->alloc(m->table.total * m->esize,
                                "the parameters' compute copy")) == NULL)
            goto no_memory;
    }
    if (!(par && par->shard_grads) &&
        (m->grads = ops->alloc(m->table.total * sizeof(float), "gradients")) ==
            NULL)
        goto no_memory;
    if (find_parts(m) < 0)
        goto oom;
    /* One slot: one arena for everything; more: an arena per slot and one
     * shared. */
    layout_acts(m, &c, slots > 1 ? &sc : &c);
    m->arena_bytes = c.used;
    m->shared_bytes = sc.used;
    for (int i = 0; i < slots; i++)
        if ((m->arenas[i] = ops->alloc(c.used, "activations")) == NULL)
            goto no_memory;
    if (slots > 1 &&
        (m->shared_arena = ops->alloc(sc.used, "activations")) == NULL)
        goto no_memory;
    /* Two batch buffers a slot on the backend, two pinned on the host. */
    m->batch_bytes = model_batch_layout(m, NULL, &m->bb);
    m->batch_dev =
        ops->alloc(2 * (size_t)slots * m->batch_bytes, "micro-batches");
    if (m->batch_dev == NULL)
        goto no_memory;
    for (int i = 0; i < 2; i++)
        if ((m->batch_host[i] = ops->host_alloc(m->batch_bytes)) == NULL)
            goto oom;
    c.base = m->arenas[0];
    c.used = 0;
    sc.base = m->shared_arena;
    sc.used = 0;
    layout_acts(m, &c, slots > 1 ? &sc : &c);
    model_batch_select(m);
    *out = m;
    return 0;
no_memory:
    tr_fail(err, errlen, "%s", ops->error());
    model_free(m);
    return -1;
oom:
    tr_fail(err, errlen, "out of memory for the model (%zu parameters)",
            m->table.total);
    model_free(m);
    return -1;
}

void
model_free(struct model *m)
{
    if (m == NULL)
        return;
    model_hits_release(m);
    if (m->ops) {
        if (m->pc != m->params)
            m->ops->release(m->pc);
        m->ops->release(m->params);
        m->ops->release(m->grads);
        for (int i = 0; m->arenas && i < m->n_slots; i++)
            m->ops->release(m->arenas[i]);
        m->ops->release(m->shared_arena);
        m->ops->release(m->batch_dev);
        for (int i = 0; i < 2; i++)
            m->ops->host_release(m->batch_host[i]);
    }
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

void *
model_compute_params(struct model *m)
{
    return m->pc;
}

void
model_params_changed(struct model *m, size_t lo, size_t hi)
{
    if (m->pc != m->params && hi > lo)
        m->ops->cast(model_at(m, m->pc, lo), m->ops->dtype, m->params + lo,
                     OPS_F32, hi - lo);
}

size_t
model_param_bytes(const struct model *m)
{
    return m->params ? m->table.total * sizeof(float) : 0;
}

size_t
model_compute_param_bytes(const struct model *m)
{
    return m->pc != m->params ? m->table.total * m->esize : 0;
}

size_t
model_grad_bytes(const struct model *m)
{
    return m->grads ? m->table.total * sizeof(float) : 0;
}

size_t
model_activation_bytes(const struct model *m)
{
    return m->arena_bytes * (size_t)m->n_slots + m->shared_bytes +
           2 * (size_t)m->n_slots * m->batch_bytes;
}

int
model_init_params(struct model *m, uint64_t seed)
{
    float *host;

    if (m->params == NULL)
        return -1;
    /* (calloc: the pads between the tensors are zero too.) */
    host = calloc(m->table.total ? m->table.total : 1, sizeof(float));
    if (host == NULL)
        return -1;
    params_fill_init(&m->table, seed, host);
    m->ops->upload(m->params, host, m->table.total * sizeof(float));
    free(host);
    model_params_changed(m, 0, m->table.total);
    return 0;
}

void
model_zero_grad(struct model *m)
{
    if (m->grads)
        m->ops->zero(m->grads, m->table.total * sizeof(float));
}

void
model_tp_sum(struct model *m, void *x, size_t n)
{
    const struct ops *op = m->ops;

    if (m->tp.size == 1)
        return;
    if (op->dtype == OPS_F32) {
        m->tp.all_reduce(m->tp.ctx, x, n, MODEL_SUM_F32);
        return;
    }
    op->cast(m->tp_f32, OPS_F32, x, op->dtype, n);
    m->tp.all_reduce(m->tp.ctx, m->tp_f32, n, MODEL_SUM_F32);
    op->cast(x, op->dtype, m->tp_f32, OPS_F32, n);
}

void
model_lm_xent(struct model *m, const int32_t *targets, int rows)
{
    const struct ops *op = m->ops;
    void *d = m->fo.grad_scale > 0 ? m->logits : NULL;
    float dscale = m->fo.grad_scale / (float)rows;

    if (m->tp.size == 1) {
        op->xent(m->losses, d, m->logits, targets, rows, m->Vl, m->V_valid,
                 dscale, m->fo.loss_scale);
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
                    m->Vl, m->V_valid, m->v0, dscale, m->fo.loss_scale);
}

int
model_forward(struct model *m, const struct batch *b,
              const struct forward_opts *o, double *sums, char *err,
              size_t errlen)
{
    const struct model_config *k = &m->cfg;

    if (b->B < 1 || b->B > m->max_B || b->T < 1 || b->T > m->max_T)
        return tr_fail(err, errlen, "batch %d x %d exceeds the model's %d x %d",
                       b->B, b->T, m->max_B, m->max_T);
    if (k->type == MODEL_ERNIE && (b->M < 1 || b->M > m->max_M))
        return tr_fail(err, errlen, "%d masked slots; the model takes 1 to %d",
                       b->M, m->max_M);
    if (model_batch_upload(m, b, err, errlen) < 0)
        return -1;
    m->B = b->B;
    m->T = b->T;
    m->M = k->type == MODEL_ERNIE ? b->M : 0;
    m->fo = *o;
    if (k->type == MODEL_GPT)
        model_gpt_forward(m);
    else
        model_ernie_forward(m);
    if (m->post) {
        /* The rows' losses summed in row order: deterministic. */
        size_t rows =
            k->type == MODEL_GPT ? (size_t)b->B * (size_t)b->T : (size_t)m->M;

        m->ops->sum_acc(&sums[0], m->losses, rows, 1.0);
        if (k->type == MODEL_ERNIE && k->binary_head)
            m->ops->sum_acc(&sums[1], m->sop_losses, (size_t)b->B, 1.0);
    }
    return 0;
}

void
model_losses(const struct model *m, int B, int T, int M, const double sums[2],
             struct losses *out)
{
    const struct model_config *k = &m->cfg;
    double rows = k->type == MODEL_GPT ? (double)B * T : (double)M;

    /* (Divided, not multiplied by an inverse: the bits the trainer has
     * always logged.) */
    out->lm_loss = sums[0] / rows;
    out->sop_loss =
        k->type == MODEL_ERNIE && k->binary_head ? sums[1] / B : 0.0;
    out->loss = out->lm_loss + out->sop_loss;
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
model_bind_params(struct model *m, int part, void *p)
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

void *
model_param_at(const struct model *m, size_t off)
{
    const struct model_part *p = part_of(m, off);

    return p->p ? model_at(m, p->p, off - p->lo) : NULL;
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
    model_batch_select(m);
}

void *
model_stage_input(struct model *m)
{
    return m->xin;
}

const void *
model_stage_output(const struct model *m)
{
    const struct layer_acts *a = &m->la[m->l_end - 1];

    return m->cfg.type == MODEL_GPT ? a->r2 : a->ln2;
}

void *
model_stage_doutput(struct model *m)
{
    return m->g0;
}

const void *
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
