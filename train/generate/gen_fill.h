/* SPDX-License-Identifier: MIT */
/*
 * gen_fill.h: ERNIE's fill-mask: the masked-LM head's probabilities over
 * the vocabulary at chosen positions of a batch of texts, as transformers'
 * ErnieForMaskedLM (and a fill-mask pipeline) gives them: the model's
 * forward pass without dropout, the logits of the masked rows, their
 * softmax.
 */
#ifndef TRAIN_GEN_FILL_H
#define TRAIN_GEN_FILL_H

#include <stddef.h>

struct model;
struct batch;

/* gen_fill_probs: the probabilities of every token at the b->M positions
 * b->masked_positions of batch b (input_ids, token_type_ids,
 * attention_mask; masked_labels -1 and sop_labels 0 are the caller's) into
 * probs[i * V .. i * V + V), V the model's vocabulary, for an ERNIE model
 * made for batches this large.  Returns 0, or -1 with err (the batch too
 * large, an id out of range, the backend's failure). */
int gen_fill_probs(struct model *m, const struct batch *b, float *probs,
                   char *err, size_t errlen);

#endif /* TRAIN_GEN_FILL_H */
