/* SPDX-License-Identifier: MIT */
/*
 * hf_tokenizer.h: the run's tokenizer as the files a checkpoint carries so
 * that transformers' AutoTokenizer.from_pretrained(checkpoint) loads it:
 *
 *   ERNIE (WordPiece): vocab.txt, one token a line (a "token<TAB>id"
 *   vocabulary is rewritten so, in id order), tokenizer_config.json
 *   (BertTokenizer, lower-casing, [UNK] [SEP] [PAD] [CLS] [MASK]) and
 *   special_tokens_map.json;
 *
 *   GPT (byte-level BPE): vocab.json and merges.txt as they are,
 *   tokenizer_config.json (GPT2Tokenizer, "<|endoftext|>" as the bos, eos
 *   and unk token when the vocabulary has it) and special_tokens_map.json.
 */
#ifndef TRAIN_HF_TOKENIZER_H
#define TRAIN_HF_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HF_TOKENIZER_EOS "<|endoftext|>"

struct hf_tokenizer {
    struct ckpt_file files[4]; /* for ckpt_save_files() */
    size_t n_files;
    size_t n_tokens; /* one past the largest id of the vocabulary */
    int32_t eos_id;  /* BPE: the id of "<|endoftext|>", or -1 */
    char *owned[6];  /* the texts and paths files[] points to */
};

/* hf_tokenizer_wordpiece: the files of a WordPiece vocabulary (tok-vocab(5),
 * either format) for a model of model_max_length positions.  Returns 0,
 * or -1 with err naming the file (unreadable, a bad "token<TAB>id" line). */
int hf_tokenizer_wordpiece(struct hf_tokenizer *t, const char *vocab_txt,
                           int model_max_length, char *err, size_t errlen);

/* hf_tokenizer_bpe: the files of a byte-level BPE: path is a directory
 * holding vocab.json and merges.txt, or the vocab.json file with
 * merges.txt beside it.  Returns 0, or -1 with err naming the file
 * (missing, unreadable, vocab.json not an object of token ids). */
int hf_tokenizer_bpe(struct hf_tokenizer *t, const char *path,
                     int model_max_length, char *err, size_t errlen);

/* hf_tokenizer_release: free what t holds; a zeroed t is fine. */
void hf_tokenizer_release(struct hf_tokenizer *t);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_HF_TOKENIZER_H */
