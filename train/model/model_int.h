/* SPDX-License-Identifier: MIT */
/*
 * model_int.h: the model's insides, shared by model.c (table, buffers,
 * entry points), model_batch.c (micro-batches up to the backend),
 * model_blocks.c, model_ernie.c and model_gpt.c (forward and backward).
 *
 * Types: "act" buffers (activations, their gradients, the parameters'
 * compute copy) hold elements of the backend's compute dtype (ops->dtype,
 * m->esize bytes each) and are void *; LayerNorm statistics, losses and
 * the parameters' gradients and master weights are float.
 */
#ifndef TRAIN_MODEL_INT_H
#define TRAIN_MODEL_INT_H

#include "model.h"

/* Offsets (in elements) of one layer's tensors in the flat buffers.  q, k
 * and v (weights, then biases) are adjacent, so they form one fused
 * [3C, C] weight and one [3C] bias. */
struct layer_off {
    size_t qkv_w, qkv_b;   /* ERNIE query/key/value; GPT-2 c_attn */
    size_t proj_w, proj_b; /* attention output projection */
    size_t ln1_w, ln1_b;   /* ERNIE: after attention; GPT: before it */
    size_t fc_w, fc_b;     /* C -> I */
    size_t fc2_w, fc2_b;   /* I -> C */
    size_t ln2_w, ln2_b;   /* ERNIE: after the MLP; GPT: before it */
};

/* A part of the model (a layer, the embeddings or the heads): the
 * elements [lo, hi) of the flat layout its tensors span (hi rounded up to
 * OPS_ALIGN, where the next part starts), and where its parameters and
 * gradients are now: p (act: the compute copy) and g (fp32) hold element
 * lo first (the flat buffers, or what model_bind_params/grads() gave;
 * NULL: none). */
struct model_part {
    size_t lo, hi;
    void *p;
    float *g;
};

/* Offsets of the tensors outside the layers (unused ones stay 0). */
struct head_off {
    size_t word, pos, type, task;                      /* embeddings */
    size_t emb_ln_w, emb_ln_b;                         /* ERNIE */
    size_t pool_w, pool_b;                             /* ERNIE pooler */
    size_t mlm_w, mlm_b, mlm_ln_w, mlm_ln_b, mlm_bias; /* ERNIE MLM head */
    size_t sop_w, sop_b;                               /* ERNIE SOP head */
    size_t lnf_w, lnf_b;                               /* GPT final norm */
};

/* Saved activations of one layer (act, but the float statistics).
 * ERNIE: r1 = x + attn, ln1 = LN(r1), r2 = ln1 + mlp, ln2 = LN(r2) is the
 * output.  GPT: ln1 = LN(x), r1 = x + attn, ln2 = LN(r1), r2 = r1 + mlp
 * is the output. */
struct layer_acts {
    void *qkv;  /* [BT, 3C] */
    void *att;  /* the attention's state (attention_state_bytes()) */
    void *atty; /* [BT, C] attention output, before the projection */
    void *r1, *ln1;
    float *ln1_mean, *ln1_rstd;
    void *fch, *fch_act; /* [BT, I] before and after the activation */
    void *r2, *ln2;
    float *ln2_mean, *ln2_rstd;
};

/* A micro-batch's ids and masks in backend memory (model_batch.c), laid
 * out alike in the pinned host buffer they go up from. */
struct batch_bufs {
    int32_t *ids, *vids, *pos_ids, *labels; /* [BT] */
    int32_t *type_ids, *task_ids;           /* [BT] ERNIE */
    int32_t *mpos, *mlab;                   /* [M] ERNIE */
    int32_t *cls_rows, *sop_lab;            /* [B] ERNIE */
    float *key_bias;                        /* [BT] ERNIE additive mask */
};

struct model {
    struct model_config cfg;
    const struct ops *ops;
    size_t esize; /* bytes of an element of the compute dtype */
    /* Tensor parallelism: this rank's sizes (C/tp of the attention, heads,
     * I/tp of the MLP, rows of the padded vocab of which V_valid real,
     * starting at v0, and its first head h0); tp.size 1 without. */
    struct model_tp tp;
    int Cl, NHl, Il, Vl, V_valid, v0, h0;
    /* Pipeline parallelism: this stage's layers [l_first, l_end); pre:
     * it holds the embeddings (first stage), post: the heads (last). */
    int pp, pp_rank, l_first, l_end, pre, post;
    struct param_table table;
    struct layer_off *lo;
    struct head_off ho;
    /* The flat buffers: the fp32 master weights (what the optimizer,
     * sharding and checkpoints see), their compute copy (act; params
     * itself when the compute dtype is float32) and the fp32 gradients;
     * NULL where model_par's shard_params (params, pc) or shard_grads
     * (grads) said so.  The parts: [0] the heads (PARAM_POST), [1] the
     * embeddings (PARAM_PRE), [2 + l] layer l. */
    float *params, *grads;
    void *pc;
    struct model_part *parts;
    int max_B, max_T, max_M;
    enum model_recompute recompute;

    /* Activations (one arena per slot), sized for max_B x max_T; the
     * pointers below are carved from the slot in use, whose batch and
     * options are saved in slot_state when another is taken. */
    void **arenas;
    size_t arena_bytes;
    void *shared_arena; /* what the slots share (more than one slot) */
    size_t shared_bytes;
    int n_slots, slot;
    struct slot_state {
        int B, T, M;
        struct forward_opts fo;
        int batch_set; /* which of its two batch buffers holds its batch */
    } * slot_state;
    void *xin; /* [BT, C] the stage's input (not the first stage) */
    struct layer_acts *la;
    void *emb; /* [BT, C] ERNIE: sum of embeddings; GPT: output */
    void *emb_ln;
    float *emb_mean, *emb_rstd; /* ERNIE: LN (+ dropout) output */
    void *tmp;     /* [BT, C] projection output before the residual */
    void *logits;  /* GPT [BT, V]; ERNIE [M, V]; dlogits after forward */
    float *losses; /* [BT] or [M] per-row CE */
    float *rowmax; /* [BT] or [M]: vocab-parallel CE's maxima */
    double *xsums; /* [2 BT] or [2 M]: its sums */
    void *lnf;     /* GPT final norm */
    float *lnf_mean, *lnf_rstd;
    /* ERNIE heads */
    void *mg, *mt, *mta, *mln; /* MLM rows [M, C] */
    float *mm, *mr;            /* their LayerNorm's statistics [M] */
    void *cls, *pool_pre, *pooled, *sop_logits; /* [B, ...] */
    float *sop_losses;
    /* Gradient scratch (act); gatt: the attention's scratch */
    void *g0, *g1, *g2, *g3, *gq, *gi0, *gi1, *gatt;
    void *gm0, *gm1, *gm2, *gb0, *gb1, *gb2;
    float *tp_f32; /* tensor parallelism in 16 bits: sums go through fp32 */

    /* The micro-batches' ids (model_batch.c): two buffers per slot in
     * backend memory, taken in turn, so one goes up while the other is
     * read; two pinned host buffers, also in turn. */
    void *batch_dev;
    void *batch_host[2];
    size_t batch_bytes;
    int host_next;
    struct batch_bufs bb; /* the slot's current batch */

    /* The batch being processed and the forward's options. */
    int B, T, M;
    struct forward_opts fo;

    /* model_hits() (model_hits.c): the rows' maxima and target logits in
     * backend memory and their host copies, for up to hit_cap rows;
     * allocated at its first call, freed by model_free(). */
    struct model_hit_bufs *hits;

    /* model_set_layer_hook(), model_set_param_hook() */
    void (*layer_hook)(void *ctx, int layer);
    void *layer_hook_ctx;
    void (*param_hook)(void *ctx, int layer, int need);
    void *param_hook_ctx;
};

/* Element `i` of an act buffer. */
static inline void *
model_at(const struct model *m, const void *base, size_t i)
{
    return (char *)base + i * m->esize;
}

/* Call the parameter hook, if any: layer l's parameters are needed by a
 * forward or a backward, or done with (MODEL_PARAMS_*). */
static inline void
model_layer_params(struct model *m, int l, int need)
{
    if (m->param_hook)
        m->param_hook(m->param_hook_ctx, l, need);
}

/* Call the layer hook, if any, for layer l. */
static inline void
model_layer_done(struct model *m, int l)
{
    if (m->layer_hook)
        m->layer_hook(m->layer_hook_ctx, l);
}

/* Tensor parallelism: the group's sum of x[0..n) (act) in place (nothing
 * without); a 16-bit x is summed in fp32. */
void model_tp_sum(struct model *m, void *x, size_t n);

/* The row-parallel bias: added once, by rank 0, before the sum. */
#define ROW_BIAS(off) (m->tp.rank == 0 ? P(off) : NULL)

/* The head's logits over this rank's shard of the vocab, their CE into
 * m->losses and (grad_scale > 0) their gradient in place. */
void model_lm_xent(struct model *m, const int32_t *targets, int rows);

/* Dropout sites of a layer (or of the embeddings, layer -1), and the seed
 * of one: layer l, site k. */
enum { SITE_ATT_PROBS, SITE_ATT_OUT, SITE_MLP_OUT, SITE_EMB };
uint64_t model_site_seed(const struct model *m, int layer, int site);

/* Whether this pipeline stage holds tensors of `layer` (an index,
 * PARAM_PRE or PARAM_POST). */
static inline int
model_on_stage(const struct model *m, int layer)
{
    return layer == PARAM_PRE    ? m->pre
           : layer == PARAM_POST ? m->post
                                 : layer >= m->l_first && layer < m->l_end;
}

/* model_batch.c: the batch buffers' layout (the bytes of one) for the
 * model's sizes, and the pointers of one at base; b's ids checked and
 * staged into a pinned buffer, uploaded into the slot's next batch buffer
 * (returns 0, or -1 with err naming the id out of range, before anything
 * is uploaded). */
size_t model_batch_layout(const struct model *m, void *base,
                          struct batch_bufs *bb);
int model_batch_upload(struct model *m, const struct batch *b, char *err,
                       size_t errlen);
/* The slot's current batch buffer (after model_use_slot()). */
void model_batch_select(struct model *m);

/* model_blocks.c: a tensor appended to the table (its offset in *off),
 * if this pipeline stage holds it (else nothing, *off = 0); flags:
 * Hugging Face stores it [in, out] (GPT-2's Conv1D), it goes right after
 * the tensor before (params_add_adjacent()); the dropout rate in force (0
 * when the forward runs without dropout). */
enum { MODEL_HF_TRANSPOSED = 1, MODEL_ADJACENT = 2 };
int model_add_tensor(struct model *m, size_t *off, const char *name, int64_t d0,
                     int64_t d1, enum tp_split tp, int layer,
                     enum param_init init, float std, unsigned flags);
float model_drop_p(const struct model *m, float p);
/* y[BT, C] = word + position embeddings of the batch (the words
 * vocab-parallel: each rank looks up the ids of its shard; the others'
 * rows are 0, so the sum over the ranks is exact). */
void model_embed_tokens(struct model *m, void *y);
/* The last pipeline stage's copy of the tied word embeddings (a stage
 * that is not also the first), after its layers. */
int model_add_tied_copy(struct model *m, size_t *off, const char *name,
                        int64_t V, int64_t C, float std, int64_t zero_row);

/* The sublayers of layer l, forward: m->tmp = drop(proj(attention(qkv(x))))
 * and m->tmp = drop(fc2(act(fc(x)))), saving what backward needs.
 * Backward: dx += the gradient through the sublayer given dout, the
 * gradient of m->tmp (dout may be dx: it is read first).  Scratch: g2,
 * g3, gq, gatt, gi0, gi1. */
void model_attention_fwd(struct model *m, int l, const void *x, int causal,
                         const float *key_bias);
void model_mlp_fwd(struct model *m, int l, const void *x);
void model_attention_bwd(struct model *m, int l, const void *dout, void *dx,
                         const void *x, int causal);
void model_mlp_bwd(struct model *m, int l, const void *dout, void *dx,
                   const void *x);

/* The forward of one layer (model_ernie.c, model_gpt.c), also run again
 * by a full-recompute backward: x is the layer's input. */
void model_ernie_layer_fwd(struct model *m, int l, const void *x);
void model_gpt_layer_fwd(struct model *m, int l, const void *x);

/* model_hits.c: what model_hits() allocated (NULL allowed). */
void model_hits_release(struct model *m);

/* Per-architecture parts. */
int model_ernie_table(struct model *m);
int model_gpt_table(struct model *m);
void model_ernie_forward(struct model *m);
void model_gpt_forward(struct model *m);
void model_ernie_backward(struct model *m);
void model_gpt_backward(struct model *m);

/* A parameter's compute copy (act) and its gradient (fp32) at offset off
 * of the flat layout, in whichever buffer holds its part now
 * (model_param_at(), model_grad_at()). */
#define P(off) model_param_at(m, off)
#define G(off) model_grad_at(m, off)

#endif /* TRAIN_MODEL_INT_H */
