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
 * with every other trainer option at its default, and write the vocab
 * ("piece<TAB>score" lines, byte-identical to spm_train's P.vocab) to
 * vocab_path and, when model_path is not NULL, the model (byte-identical
 * to P.model given the same inputs, P and thread count, which the model
 * records) to model_path.  P is vocab_path without a final ".vocab".
 * Inputs are read as they are (text, one sentence a line); zstd inputs
 * (recognised by their magic number) are decompressed to temporary files
 * in $TMPDIR first, and the model then records those names.  Outputs are
 * written as "<path>.tmp.<pid>" and renamed only when all succeeded.
 *   input_paths  IN: at least one path; not "-" (no stdin)
 *   vocab_size   IN: the number of pieces, special ones included (>= 1)
 *   n_threads    IN: sentencepiece's num_threads, 1..128 (0: its default,
 *                16); the pieces do not depend on it
 *   quiet        IN: silence sentencepiece's log (else its progress and
 *                warnings go to stderr, as spm_train's do)
 * Returns 0, or a negative tok_status with err set (NULL allowed):
 * TOK_EIO when an input cannot be read or an output cannot be written
 * (the path named), TOK_EFORMAT for bad zstd data, TOK_EINVAL for an
 * empty corpus or a vocab size the corpus cannot supply (sentencepiece's
 * reason in err->msg), TOK_ENOMEM.
 * Not thread-safe: sentencepiece's log level is global. */
int vocab_spm_train(const char *const *input_paths, size_t n_inputs,
                    size_t vocab_size, unsigned n_threads,
                    const char *vocab_path, const char *model_path, int quiet,
                    struct tok_err *err);

/* ------------------------------------------------------------------------ */
/* The ERNIE merge (vocab_merge.c)                                           */

/* ------------------------------------------------------------------------ */
/* Byte-level BPE training (vocab_bpe.c)                                     */

#ifdef __cplusplus
}
#endif
#endif /* VOCAB_H */
