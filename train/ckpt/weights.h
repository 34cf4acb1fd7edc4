/* SPDX-License-Identifier: MIT */
/*
 * weights.h: a model's tensors to and from safetensors files under
 * Hugging Face names and layouts (GPT-2's Conv1D weights [in, out]; tied
 * weights stored once), so transformers loads what we save and we load
 * what it saves.  Tensors move one at a time, whole, through host memory
 * (tr_stage_alloc(): a save or load stages about one tensor, never the
 * model), between the file and wherever their owners keep them: the
 * callbacks below, or a flat buffer in backend memory.
 */
#ifndef TRAIN_WEIGHTS_H
#define TRAIN_WEIGHTS_H

#include <stddef.h>

#include "model/params.h"
#include "safetensors.h"

struct ops;

/* weights_get_fn: buffer b's tensor t (a tensor of the table being
 * saved) into host[0..t->numel), whole, in our layout ([out, in]; a
 * vocabulary's pad rows last, which the file leaves out); host is NULL on
 * a rank that only helps gather it (weights_save()'s write 0).
 * weights_put_fn: buffer b's tensor t from host[0..t->numel), whole, in
 * our layout (the pad rows zero; the owner keeps what it holds of it).
 * Both return 0, or -1 with err->msg set. */
typedef int (*weights_get_fn)(void *ctx, int b, const struct param_tensor *t,
                              float *host, struct st_err *err);
typedef int (*weights_put_fn)(void *ctx, int b, const struct param_tensor *t,
                              const float *host, struct st_err *err);

/* weights_save: write to path, for each of the n_bufs buffers bufs[k] in
 * turn, every tensor of table in table order under prefixes[k] + name, F32
 * in Hugging Face's layout (no vocabulary pad rows: params_rows_saved()),
 * then the host tensors extra[0..n_extra), with the metadata pairs meta
 * (NULL-terminated, may be NULL): the header first, then each tensor as
 * get() gives it, through one tensor-sized host buffer (two for a
 * transposed one), so the file is st_write()'s byte for byte and atomic
 * as its.  write 0: write
 * nothing, only call get() (host NULL) for the same tensors in the same
 * order (a rank whose part the writer gathers).  Returns 0 or -1 with
 * err. */
int weights_save(const char *path, const struct param_table *table,
                 const char *const *prefixes, const int *bufs, int n_bufs,
                 weights_get_fn get, void *ctx, const struct st_tensor *extra,
                 size_t n_extra, const char *const *meta, int write,
                 struct st_err *err);

/* weights_load: hand put() buffer b's tensors of table, named prefix +
 * name in the open file f, one at a time, whole in our layout, checking
 * dtype F32 and shape (the Hugging Face shape: transposed where
 * hf_transposed; a vocabulary without its pad rows).  A GPT-2 name also
 * matches without its "transformer." prefix (GPT2Model's files).
 * Returns 0, or -1 with err naming the first missing or mismatched tensor
 * (or put()'s failure).  *n_unused (may be NULL) receives how many
 * tensors of f were not used, not counting the ones tied weights and
 * buffers leave (decoder, lm_head, position_ids, attention masks) or
 * those of other prefixes. */
int weights_load(const struct st_file *f, const struct param_table *table,
                 const char *prefix, int b, weights_put_fn put, void *ctx,
                 size_t *n_unused, struct st_err *err);

/* weights_save_buffer: weights_save() of one flat buffer buf (backend
 * memory, laid out as table) under prefix + name ("" for weights,
 * "grad." ...), each tensor downloaded in turn, and the extra host
 * tensors. */
int weights_save_buffer(const struct param_table *table, const struct ops *ops,
                        const float *buf, const char *prefix, const char *path,
                        const struct st_tensor *extra, size_t n_extra,
                        const char *const *meta, struct st_err *err);

/* weights_load_buffer: weights_load() into one flat buffer buf (backend
 * memory, laid out as table), each tensor uploaded in turn. */
int weights_load_buffer(const struct param_table *table, const struct ops *ops,
                        float *buf, const char *prefix, const struct st_file *f,
                        size_t *n_unused, struct st_err *err);

#endif /* TRAIN_WEIGHTS_H */
