/* SPDX-License-Identifier: MIT */
/*
 * gen_load.h: a checkpoint directory opened for inference: ours (train's
 * model_<step>/, erniekit-checkpoint(5)) or Hugging Face's
 * save_pretrained() of a GPT-2, ERNIE or BERT model: config.json (its
 * "model_type", gpt2 or ernie/bert, says which; BERT is ERNIE without
 * task embeddings, its tensors named "bert."), model.safetensors (F32)
 * and the tokenizer files (GPT: vocab.json and merges.txt; ERNIE:
 * vocab.txt and, optional, tokenizer_config.json), then the model built
 * on a backend with those weights.
 */
#ifndef TRAIN_GEN_LOAD_H
#define TRAIN_GEN_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

struct model;
struct ops;
struct st_file;
struct tok_bpe;
struct tok_vocab;
struct tok_tokenizer;
struct tok_buf;

struct gen_checkpoint {
    char *dir;
    struct model_config cfg;
    struct st_file *weights;
    /* The tokenizer: GPT's byte-level BPE, or ERNIE's WordPiece. */
    struct tok_bpe *bpe;
    struct tok_vocab *vocab;
    struct tok_tokenizer *wordpiece;
    int32_t endoftext; /* BPE: the id of "<|endoftext|>", or -1 */
    int bert_names;    /* ERNIE's tensors under "bert." (BertForMaskedLM) */
};

/* gen_checkpoint_open: read dir's config.json, map its model.safetensors
 * (checking it whole) and load its tokenizer.  Returns 0, or -1 with err
 * naming the file and what is wrong (not a directory, a missing file, a
 * config of another model type, a tokenizer file that does not parse).
 * Release c with gen_checkpoint_close() in every case. */
int gen_checkpoint_open(struct gen_checkpoint *c, const char *dir, char *err,
                        size_t errlen);
void gen_checkpoint_close(struct gen_checkpoint *c);

/* gen_checkpoint_model: the model on ops, made for batches of max_B x
 * max_T tokens and max_M masked rows (ERNIE), with the checkpoint's
 * weights.  Returns 0 and *out (model_free() it), or -1 with err (a
 * missing tensor or one of another shape, named; out of memory). */
int gen_checkpoint_model(struct gen_checkpoint *c, const struct ops *ops,
                         int max_B, int max_T, int max_M, struct model **out,
                         char *err, size_t errlen);

/* gen_encode: the ids of text[0..len) (valid UTF-8) by the checkpoint's
 * tokenizer, into *ids (malloc'd; NULL when there are none) and *n_ids:
 * BPE with "<|endoftext|>" in the text as its own id (as transformers'
 * GPT2Tokenizer takes it), or WordPiece with its special tokens
 * ("[MASK]") matched in the text.  Returns 0, or -1 with err. */
int gen_encode(const struct gen_checkpoint *c, const char *text, size_t len,
               int32_t **ids, size_t *n_ids, char *err, size_t errlen);

/* gen_decode: the text of ids[0..n) appended to out: BPE's bytes with an
 * invalid UTF-8 sequence replaced by U+FFFD (as transformers decodes with
 * errors="replace"), special tokens skipped when skip_special, ids
 * without a token (a model's vocabulary larger than the tokenizer's)
 * left out, as HF tokenizers' decode(); WordPiece:
 * the tokens joined (tok_decode()).  Returns 0, or -1 with err. */
int gen_decode(const struct gen_checkpoint *c, const int32_t *ids, size_t n,
               int skip_special, struct tok_buf *out, char *err, size_t errlen);

#endif /* TRAIN_GEN_LOAD_H */
