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

/* ------------------------------------------------------------------------ */
/* The ERNIE merge (vocab_merge.c)                                           */

/* ------------------------------------------------------------------------ */
/* Byte-level BPE training (vocab_bpe.c)                                     */

#ifdef __cplusplus
}
#endif
#endif /* VOCAB_H */
