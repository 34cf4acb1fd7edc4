/* SPDX-License-Identifier: MIT */
/*
 * weights.h: a model's flat buffers to and from safetensors files under
 * Hugging Face names and layouts (GPT-2's Conv1D weights [in, out]; tied
 * weights stored once), so transformers loads what we save and we load
 * what it saves.
 */
#ifndef TRAIN_WEIGHTS_H
#define TRAIN_WEIGHTS_H

#include <stddef.h>

#include "model/params.h"
#include "safetensors.h"

struct ops;

/* weights_save_buffer: write the table's tensors of buf (backend memory,
 * table->total floats) to path under prefix + name ("" for weights,
 * "grad." ...) plus the extra host tensors extra[0..n_extra) and metadata
 * pairs (NULL-terminated, may be NULL).  Atomic (st_write).  Returns 0 or
 * -1 with err. */
int weights_save_buffer(const struct param_table *table, const struct ops *ops,
                        const float *buf, const char *prefix, const char *path,
                        const struct st_tensor *extra, size_t n_extra,
                        const char *const *meta, struct st_err *err);

/* weights_load_buffer: fill buf (backend memory) with the tensors named
 * prefix + name from the open file f, checking dtype F32 and shape (the
 * Hugging Face shape: transposed where hf_transposed).  A GPT-2 name also
 * matches without its "transformer." prefix (GPT2Model's files).  Returns
 * 0, or -1 with err naming the first missing or mismatched tensor.
 * *n_unused (may be NULL) receives how many tensors of f were not used,
 * not counting the ones tied weights and buffers leave (decoder, lm_head,
 * position_ids, attention masks). */
int weights_load_buffer(const struct param_table *table, const struct ops *ops,
                        float *buf, const char *prefix, const struct st_file *f,
                        size_t *n_unused, struct st_err *err);

#endif /* TRAIN_WEIGHTS_H */
