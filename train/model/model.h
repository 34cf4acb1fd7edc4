/* SPDX-License-Identifier: MIT */
/*
 * model.h: ERNIE (post-LN encoder, MLM + SOP heads, as PaddleNLP's
 * ErnieForPretraining / transformers' ErnieForPreTraining) and GPT-2
 * (pre-LN decoder, tied LM head), written once against struct ops.
 *
 * A model owns its parameters and gradients (flat buffers in the backend's
 * memory, described by the tensor table) and its activations for
 * micro-batches of up to B sequences of T tokens.  A training micro-step
 * is model_forward() with a grad_scale, then model_backward(), which adds
 * this micro-batch's gradients (times grad_scale) to the gradient buffer.
 *
 * Precision: activations, their gradients and a compute copy of the
 * parameters are of the backend's compute dtype (ops->dtype); the
 * parameters' master weights (model_params(), what the optimizer,
 * sharding and checkpoints see), their gradients, LayerNorm statistics and
 * losses are fp32.  Nothing in a step waits for the backend: the losses
 * are summed into backend memory, for the caller to read when it likes.
 */
#ifndef TRAIN_MODEL_H
#define TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ops.h"
#include "params.h"

/* A micro-batch in host memory.  ERNIE uses input_ids, token_type_ids,
 * attention_mask, the masked slots and sop_labels; GPT uses input_ids and
 * labels. */
struct batch {
    int B, T;
    const int32_t *input_ids;      /* [B*T] */
    const int32_t *token_type_ids; /* [B*T] */
    const int32_t *attention_mask; /* [B*T]: 1 real token, 0 padding */
    int M; /* masked slots, padding slots included (PaddleNLP's M) */
    const int32_t *masked_positions; /* [M]: b*T + position */
    const int32_t *masked_labels;    /* [M]: -1 for a padding slot */
    const int32_t *sop_labels;       /* [B]: 1 if A and B were swapped */
    const int32_t *labels;           /* GPT [B*T]: the next token */
};

struct losses {
    double loss;     /* lm_loss + sop_loss (GPT: lm_loss) */
    double lm_loss;  /* ERNIE: sum of masked CE / M; GPT: mean CE */
    double sop_loss; /* mean CE over the batch; 0 without binary head */
};

struct forward_opts {
    int dropout;      /* 1: the config's dropouts; 0: none (evaluation) */
    uint64_t seed;    /* dropout stream of this micro-step */
    float grad_scale; /* > 0: a backward pass follows; its loss is scaled */
    /* float16's loss scale in backend memory (struct ops_step's), which
     * multiplies the loss's gradient too; NULL: none */
    const float *loss_scale;
};

struct model;

/* Recomputation in the backward pass, to hold fewer activations: none;
 * full (each layer keeps only its output, and runs its forward again just
 * before its backward); core_attn (the attention probabilities, the
 * largest activation, are recomputed per layer).  The results are the
 * same bits. */
enum model_recompute {
    RECOMPUTE_NONE,
    RECOMPUTE_FULL,
    RECOMPUTE_CORE_ATTN,
};

/* Tensor parallelism (Megatron): the model is rank `rank` of `size`; it
 * keeps its part of each split tensor (heads, MLP columns, a shard of the
 * vocab) and calls all_reduce on the tensor-parallel group where the
 * partial results meet (in place, over the backend's memory; the callee
 * handles failures). */
enum model_reduce { MODEL_SUM_F32, MODEL_SUM_F64, MODEL_MAX_F32 };

struct model_tp {
    int size, rank;
    void (*all_reduce)(void *ctx, void *buf, size_t n, enum model_reduce how);
    void *ctx;
};

/* model_create: build the tensor table of cfg and allocate parameters,
 * gradients and activations for micro-batches of at most max_B x max_T
 * tokens and max_M masked slots (ERNIE).  Parameters are uninitialised:
 * call model_init_params() or load them (then model_params_changed()).
 * Returns 0, or -1 with a message in err (bad sizes, out of memory: the
 * backend's message, saying how much was asked and what is free). */
/* model_create_recompute: model_create() with a recomputation mode. */
int model_create_recompute(struct model **out, const struct model_config *cfg,
                           const struct ops *ops, int max_B, int max_T,
                           int max_M, enum model_recompute recompute, char *err,
                           size_t errlen);
/* Parallel layouts: tensor parallelism (tp.size 0 or 1: none; the heads
 * and the intermediate size must divide by it), and pipeline parallelism:
 * stage pp_rank of pp_size holds layers [pp_rank L / pp_size, (pp_rank +
 * 1) L / pp_size), the first stage the embeddings, the last the final
 * norm and the heads with a copy of the tied word embeddings (tied_copy
 * in the table; the caller keeps the copies equal).  slots: micro-batches
 * whose activations are held at once (the pipeline schedule's), each
 * with its own activation memory (0 or 1: one). */
struct model_par {
    struct model_tp tp;
    int pp_size, pp_rank;
    int slots;
    /* Sharding stages 2 and 3 (ZeRO): 1 allocates no flat gradient
     * (parameter) buffer; the caller gives each part's before the model
     * writes (reads) them: model_bind_grads() (model_bind_params()). */
    int shard_grads, shard_params;
};

/* model_create_par: model_create_recompute() in a parallel layout (par
 * NULL: none). */
int model_create_par(struct model **out, const struct model_config *cfg,
                     const struct ops *ops, int max_B, int max_T, int max_M,
                     enum model_recompute recompute,
                     const struct model_par *par, char *err, size_t errlen);
int model_create(struct model **out, const struct model_config *cfg,
                 const struct ops *ops, int max_B, int max_T, int max_M,
                 char *err, size_t errlen);
void model_free(struct model *m);

const struct model_config *model_cfg(const struct model *m);
const struct param_table *model_table(const struct model *m);
const struct ops *model_ops(const struct model *m);
/* The flat buffers, in the backend's memory: table->total floats each;
 * the parameters are the fp32 master weights (NULL when model_par's
 * shard_params, shard_grads left them out). */
float *model_params(struct model *m);
float *model_grads(struct model *m);
/* The parameters' compute copy (ops->dtype; model_params() itself in
 * float32), for the optimizer to write (adamw's pc); NULL with
 * shard_params. */
void *model_compute_params(struct model *m);
/* model_params_changed: master parameters [lo, hi) were written outside
 * the optimizer (initialised, loaded, gathered): their compute copy is
 * refreshed (nothing in float32, nor without the flat buffers). */
void model_params_changed(struct model *m, size_t lo, size_t hi);
/* Bytes of backend memory allocated for the flat buffers (the fp32
 * master weights; their compute copy where it is apart from them; the
 * gradients) and for the activations (with the micro-batches' ids). */
size_t model_param_bytes(const struct model *m);
size_t model_compute_param_bytes(const struct model *m);
size_t model_grad_bytes(const struct model *m);
size_t model_activation_bytes(const struct model *m);

/* model_table_build: the tensor table of the whole model of cfg (every
 * layer, no pipeline stage, so no tied copy) as tensor-parallel rank
 * tp_rank of tp_size holds it, without a model: the layout of checkpoints
 * (tp_size 1) and of each rank's parts of their tensors.  Returns 0, or
 * -1 with err; params_release() frees it. */
int model_table_build(const struct model_config *cfg, int tp_size, int tp_rank,
                      struct param_table *out, char *err, size_t errlen);

/* model_init_params: Hugging Face's initialisation (normal(0,
 * initializer_range) weights and embeddings, zero biases, unit norms, the
 * padding row zero; GPT-2's residual projections scaled by
 * 1/sqrt(2 * layers)) from a layout-independent counter-based stream. */
int model_init_params(struct model *m, uint64_t seed);

/* model_forward: the losses of batch b; with grad_scale > 0 also prepares
 * the backward pass.  sums (backend memory, 2 doubles) receives, added,
 * the sum of the LM losses of its rows (GPT: tokens; ERNIE: masked
 * slots) and of its SOP losses (on the last pipeline stage; the others
 * add nothing); model_losses() turns them into means.  b's ids go up to
 * the backend while the previous micro-batch computes (pinned memory,
 * double-buffered), b may be reused once this returns.  Returns 0, or -1
 * with err (batch larger than the model was made for, an id out of
 * range). */
int model_forward(struct model *m, const struct batch *b,
                  const struct forward_opts *o, double *sums, char *err,
                  size_t errlen);

/* model_losses: the losses of a micro-batch of B x T tokens and M masked
 * slots from its sums (host copies of model_forward()'s): lm_loss =
 * sums[0] / its rows, sop_loss = sums[1] / B, loss = their sum. */
void model_losses(const struct model *m, int B, int T, int M,
                  const double sums[2], struct losses *out);

/* model_hits: how many rows of batch b the model predicts right, after
 * model_forward() of b without a backward pass (grad_scale 0: the logits
 * are kept): hits[0] += the language-model rows whose target has the
 * highest logit (GPT: tokens; ERNIE: masked slots), hits[1] += the rows
 * with a target (ERNIE's padding slots, label -1, have none), hits[2] and
 * hits[3] likewise for ERNIE's SOP head (nothing without it).  A target
 * whose logit ties with the row's highest counts as predicted.  On the
 * last pipeline stage (the others add nothing), with every
 * tensor-parallel rank of it (the maxima and logits meet over the
 * group).  Waits for the backend: it reads the rows' maxima back.
 * Returns 0, or -1 with err (out of memory, the backend's error). */
int model_hits(struct model *m, const struct batch *b, int64_t hits[4],
               char *err, size_t errlen);

/* model_backward: add the gradients of the last model_forward() (made with
 * grad_scale > 0) to the gradient buffer. */
void model_backward(struct model *m);

/* model_zero_grad: zero the gradient buffer (none without a flat one). */
void model_zero_grad(struct model *m);

/* model_set_layer_hook: call fn(ctx, l) in model_backward() as soon as
 * layer l's gradients are complete (layers last to first), so their
 * reduction can start while the rest of the backward runs; NULL removes
 * it. */
void model_set_layer_hook(struct model *m, void (*fn)(void *ctx, int layer),
                          void *ctx);

/* model_set_param_hook: call fn(ctx, l, MODEL_PARAMS_FORWARD) before layer
 * l's parameters are read by its forward, fn(ctx, l, MODEL_PARAMS_BACKWARD)
 * before its backward (and recompute), and fn(ctx, l, MODEL_PARAMS_DONE)
 * once they are no longer needed (sharding stage 3 gathers and drops them;
 * the pass's direction tells which layer comes next); NULL removes it. */
enum { MODEL_PARAMS_DONE, MODEL_PARAMS_FORWARD, MODEL_PARAMS_BACKWARD };
void model_set_param_hook(struct model *m,
                          void (*fn)(void *ctx, int layer, int need),
                          void *ctx);

/* model_layer_range: the elements [*lo, *hi) of the flat buffers that
 * layer l's tensors occupy (they are contiguous, the pads after them
 * included, so layer l + 1 starts at *hi; empty for a layer of another
 * pipeline stage).  model_part_range: the same for a part: a layer, the
 * embeddings (PARAM_PRE) or the heads with the last stage's tied copy
 * (PARAM_POST); the flat layout is the embeddings, the layers in order,
 * then the heads. */
void model_layer_range(const struct model *m, int l, size_t *lo, size_t *hi);
void model_part_range(const struct model *m, int part, size_t *lo, size_t *hi);

/* model_bind_params, model_bind_grads: where the model reads the
 * parameters, and adds the gradients, of a part from now on: p (the
 * compute copy, of ops->dtype) and g (fp32) hold the part's elements [lo,
 * hi) (model_part_range()), element lo first, in the backend's memory;
 * NULL: none (the part must not be used).  Sharding stage 3 gathers a
 * layer's compute copy into a buffer before each use; stage 2 gives each
 * layer's backward a bucket to reduce from. */
void model_bind_params(struct model *m, int part, void *p);
void model_bind_grads(struct model *m, int part, float *g);

/* model_param_at, model_grad_at: the parameter's compute copy (gradient)
 * at offset off of the flat layout, in the buffer that holds its part
 * now; NULL if none does. */
void *model_param_at(const struct model *m, size_t off);
float *model_grad_at(const struct model *m, size_t off);

/* Pipeline parallelism.  model_stage_layers: this stage's layers [*first,
 * *end).  model_use_slot: the micro-batch slot the next forward or
 * backward uses (its activations, batch and options).  Around a slot's
 * forward: a stage other than the first receives its input into
 * model_stage_input() ([B T, C] elements of the compute dtype, of the
 * slot's batch) first; a
 * stage other than the last sends model_stage_output() after.  Around its
 * backward: a stage other than the last receives the output's gradient
 * into model_stage_doutput() first; a stage other than the first sends
 * model_stage_dinput() after.  Only the last stage computes losses (the
 * others' model_forward gives 0). */
void model_stage_layers(const struct model *m, int *first, int *end);
void model_use_slot(struct model *m, int slot);
void *model_stage_input(struct model *m);
const void *model_stage_output(const struct model *m);
void *model_stage_doutput(struct model *m);
const void *model_stage_dinput(const struct model *m);

#endif /* TRAIN_MODEL_H */
