/* SPDX-License-Identifier: MIT */
/*
 * vocab.h: the public API of the vocab module: building vocabularies the
 * way the seed recipe does (character counts, sentencepiece BPE English
 * pieces, the ERNIE merge rules) and byte-level BPE training for GPT.
 * Its command is vocab-build(1).  Functions return 0 (or a count >= 0) or
 * a negative enum tok_status code, with details in struct tok_err, as
 * libtok does.
 */
#ifndef VOCAB_H
#define VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tok.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Character counts (vocab_chars.c)                                          */

/* ------------------------------------------------------------------------ */
/* English pieces: sentencepiece BPE (vocab_spm.cc)                          */

/* The seed's English vocab size (ernie-data.md section 6.3). */
#define VOCAB_SPM_DEFAULT_SIZE 17000

/* vocab_spm_train: train a sentencepiece BPE model on the text files
 * input_paths[0..n_inputs) exactly as
 *   spm_train --input=F1,F2,... --model_prefix=P --vocab_size=N \
 *             --model_type=bpe
 * with every other trainer option at its default, and write P.vocab
 * ("piece<TAB>score" lines, byte-identical to spm_train's) and, when
 * want_model is set, P.model.  Inputs are read as they are (plain text,
 * one sentence a line; a ".zst" input is decompressed to a temporary file
 * first).  Both outputs are written as temporary files beside out_prefix
 * and renamed only when everything succeeded.
 *   input_paths  IN: at least one path; not "-" (stdin is not supported)
 *   vocab_size   IN: the number of pieces, special ones included (>= 1)
 *   n_threads    IN: sentencepiece's num_threads (0: its default, 16);
 *                the output does not depend on it
 *   out_prefix   IN: the output path without ".vocab"/".model"
 *   quiet        IN: silence sentencepiece's log on stderr (else its
 *                progress is shown there, as spm_train shows it)
 * Returns 0, or a negative tok_status with err set (NULL allowed):
 * TOK_EIO when an input cannot be read or an output cannot be written
 * (the path named), TOK_EINVAL for an empty corpus or a vocab size the
 * corpus cannot supply (sentencepiece's reason in err->msg), TOK_ENOMEM.
 * Not thread-safe: sentencepiece's trainer and log level are global. */
int vocab_spm_train(const char *const *input_paths, size_t n_inputs,
                    size_t vocab_size, unsigned n_threads,
                    const char *out_prefix, int want_model, int quiet,
                    struct tok_err *err);

/* ------------------------------------------------------------------------ */
/* The ERNIE merge (vocab_merge.c)                                           */

/* ------------------------------------------------------------------------ */
/* Byte-level BPE training (vocab_bpe.c)                                     */

#ifdef __cplusplus
}
#endif
#endif /* VOCAB_H */
