/* SPDX-License-Identifier: MIT */
/*
 * data_meta.h: the trainer's check of its datasets' sidecars (ds-meta(5))
 * against the model and vocab of the run, made before anything is built.
 */
#ifndef TRAIN_DATA_META_H
#define TRAIN_DATA_META_H

#include <stddef.h>

/* data_meta_check: read the sidecar of each corpus of spec (--input_dir)
 * and compare it with the run: gpt != 0 reads gpt2-bpe ids, else
 * WordPiece ids of the vocab.txt vocab_path, whose SHA-256 must be the
 * datasets' (or that of its ids written in the other format of
 * tok-vocab(5): the same vocabulary, as a checkpoint's copy); for GPT, tokenizer (--tokenizer_name_or_path, or the model's
 * path) is compared too when it is a directory holding vocab.json and
 * merges.txt, and a dataset of a vocab larger than model_vocab_size does
 * not fit the embeddings.  Returns 0 (every dataset recorded and
 * agreeing), 1 (those recorded agree, but some have no sidecar or a stale
 * one: msg is a note naming them) or -1 (msg names the dataset, its
 * sidecar, the field and both values; or a sidecar that cannot be read,
 * or a bad spec). */
int data_meta_check(const char *spec, int gpt, const char *vocab_path,
                    const char *tokenizer, long model_vocab_size, char *msg,
                    size_t len);

#endif /* TRAIN_DATA_META_H */
