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

/* Byte-level BPE training for GPT, giving the vocab.json and merges.txt of
 * Hugging Face tokenizers' (0.20.3) ByteLevelBPETokenizer().train(files,
 * vocab_size, min_frequency, special_tokens=...) and save_model(dir).
 * Training is two steps: count the words of the text (any number of
 * tables, e.g. one per thread, merged), then train on the counts.
 * tok_bpe_load() and HF load the result. */

/* Word counts: each line of the text, with its line end, split as HF's
 * ByteLevel pre-tokenizer (add_prefix_space=False) does, by GPT-2's regex
 * through PCRE2; the words are kept as their UTF-8 bytes.  Not
 * thread-safe: give each thread its own table and merge them. */
struct vocab_bpe_words;

/* vocab_bpe_words_new: an empty table in *out; free it with
 * vocab_bpe_words_free().  Returns 0 or TOK_ENOMEM. */
int vocab_bpe_words_new(struct vocab_bpe_words **out, struct tok_err *err);

/* vocab_bpe_words_free: NULL is a no-op. */
void vocab_bpe_words_free(struct vocab_bpe_words *w);

/* vocab_bpe_words_add_lines: count the words of text[0..len), whole
 * lines (each ends after its "\n", the last may have none), each line
 * pre-tokenized on its own as HF's trainer reads files.  Returns 0,
 * TOK_EUTF8 (a line is not valid UTF-8: *bad_line, which may be NULL, is
 * its 0-based index in text, err names the byte; the lines before it are
 * counted), TOK_ERANGE (the regex engine gave up on a line, or a word of
 * 4 GiB; *bad_line as for TOK_EUTF8) or TOK_ENOMEM. */
int vocab_bpe_words_add_lines(struct vocab_bpe_words *w, const char *text,
                              size_t len, size_t *bad_line,
                              struct tok_err *err);

/* vocab_bpe_words_merge: add every count of src to dst.  Returns 0 or
 * TOK_ENOMEM (dst is then partly merged). */
int vocab_bpe_words_merge(struct vocab_bpe_words *dst,
                          const struct vocab_bpe_words *src,
                          struct tok_err *err);

/* vocab_bpe_words_distinct: the number of distinct words. */
size_t vocab_bpe_words_distinct(const struct vocab_bpe_words *w);

/* vocab_bpe_words_total: the number of words counted. */
uint64_t vocab_bpe_words_total(const struct vocab_bpe_words *w);

/* Training options: HF's BpeTrainer with ByteLevel's initial alphabet. */
struct vocab_bpe_options {
    size_t vocab_size;          /* stop when the vocab has this many */
    uint64_t min_frequency;     /* stop at a pair counted fewer times */
    const char *const *special; /* NUL-terminated UTF-8, non-empty: ids */
    size_t n_special;           /* 0.. in this order (a repeat is skipped) */
};

/* vocab_bpe_train: train on the counts of words and append vocab.json
 * (one JSON object, tokens by id, no final newline) to vocab_json and
 * merges.txt ("#version: 0.2", then one "left right" line per merge) to
 * merges_txt, byte for byte as HF writes them.  The vocab is the special
 * tokens, the 256 byte symbols in code point order, then one token per
 * merge; merges are made most frequent pair first (ties: the smaller pair
 * of ids), until the vocab has vocab_size tokens or the best pair is seen
 * fewer than min_frequency times.  The result does not depend on how the
 * words were split between tables.  Where HF's output depends on its hash
 * maps' order (two queue entries of the same pair with the same count,
 * which needs a token made by two different merges) this gives one of
 * HF's possible outputs.  Returns the vocab size (> 0), TOK_EINVAL (no
 * words, or a special token is empty or not UTF-8) or TOK_ENOMEM; the
 * buffers may then hold a partial file.  Thread-safe: words is only
 * read. */
int64_t vocab_bpe_train(const struct vocab_bpe_words *words,
                        const struct vocab_bpe_options *opt,
                        struct tok_buf *vocab_json, struct tok_buf *merges_txt,
                        struct tok_err *err);

#ifdef __cplusplus
}
#endif
#endif /* VOCAB_H */
