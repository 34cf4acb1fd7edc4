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

/* One entry of a character-count table. */
struct vocab_charcount {
    uint32_t cp;    /* a Unicode scalar value */
    uint64_t count; /* >= 1 */
};

/* A table from code points to uint64 counts: a flat array for the BMP
 * (512 KiB) plus a hash table for the other planes, so its memory is
 * bounded by the number of distinct characters, not by the input.  Not
 * thread-safe: give each thread its own table and merge them. */
struct vocab_counts;

/* vocab_counts_new: an empty table in *out; free it with
 * vocab_counts_free().  Returns 0 or TOK_ENOMEM. */
int vocab_counts_new(struct vocab_counts **out, struct tok_err *err);

/* vocab_counts_free: NULL is a no-op. */
void vocab_counts_free(struct vocab_counts *c);

/* vocab_counts_add_text: count every code point of the UTF-8 text
 * s[0..len) as the seed's gen_char.py does, reading in Python's text mode:
 * newlines are counted, and "\r\n" or a lone "\r" counts as one "\n"
 * (universal newlines), so a "\r" is never counted.  Because a "\r" at
 * the end of s counts as a line end, split text only after a "\n".
 * Returns 0, TOK_EUTF8 (s is not valid UTF-8: nothing is counted, the
 * offset of the first bad byte goes to *bad_off, which may be NULL, and
 * err names it) or TOK_ENOMEM (the counts are then unspecified). */
int vocab_counts_add_text(struct vocab_counts *c, const char *s, size_t len,
                          size_t *bad_off, struct tok_err *err);

/* vocab_counts_add: add n to the count of cp.  Returns 0, TOK_EINVAL (cp
 * is a surrogate or above U+10FFFF), TOK_ERANGE (the count would pass
 * 2^64 - 1; nothing is added) or TOK_ENOMEM. */
int vocab_counts_add(struct vocab_counts *c, uint32_t cp, uint64_t n,
                     struct tok_err *err);

/* vocab_counts_merge: add every count of src to dst.  Returns 0,
 * TOK_ERANGE (a sum overflows; dst is then partly merged) or TOK_ENOMEM. */
int vocab_counts_merge(struct vocab_counts *dst, const struct vocab_counts *src,
                       struct tok_err *err);

/* vocab_counts_n_chars: the number of distinct characters counted. */
size_t vocab_counts_n_chars(const struct vocab_counts *c);

/* vocab_counts_sorted: the characters with their counts, by descending
 * count, ties by ascending code point (the order of vocab-charcount(5)).
 * Returns the number of entries (>= 0) and sets *out (caller frees with
 * free(); NULL when there are none), or TOK_ENOMEM. */
int64_t vocab_counts_sorted(const struct vocab_counts *c,
                            struct vocab_charcount **out, struct tok_err *err);

/* vocab_charcount_format: append e[0..n) to out in the text format of
 * vocab-charcount(5): "char<TAB>count\n" a line, with the characters
 * that cannot stand raw (controls, "\\", U+2028, U+2029, U+FEFF)
 * escaped.  Returns 0 or TOK_ENOMEM. */
int vocab_charcount_format(const struct vocab_charcount *e, size_t n,
                           struct tok_buf *out, struct tok_err *err);

/* vocab_charcount_parse: read a vocab-charcount(5) file from
 * data[0..len), named `name` in messages, into *out (entries in file
 * order; caller frees with free(); NULL when empty).  The parser is
 * strict: every line is "char<TAB>count\n" with one character (raw or
 * escaped), a decimal count in 1..2^64-1 without sign or leading zero,
 * no character twice, and a final newline.  Returns the number of entries
 * (>= 0), TOK_EFORMAT (err names the file, line and cause: bad escape,
 * bad count, duplicate character, truncated last line, invalid UTF-8) or
 * TOK_ENOMEM. */
int64_t vocab_charcount_parse(const char *data, size_t len, const char *name,
                              struct vocab_charcount **out,
                              struct tok_err *err);

/* vocab_file_read: read the whole file at path into out (appended).
 * Returns 0, TOK_EIO (the path and the reason in err) or TOK_ENOMEM. */
int vocab_file_read(const char *path, struct tok_buf *out, struct tok_err *err);

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

/* The seed's count threshold for characters outside the Han block. */
#define VOCAB_MERGE_DEFAULT_THRESHOLD 200

/* Ids a vocab may use with its "##<CJK>" extension (uint16). */
#define VOCAB_MERGE_MAX_IDS 65536

/* What vocab_merge() wrote, by step of ernie-data.md section 6.4. */
struct vocab_merge_stats {
    size_t n_tokens;   /* lines of vocab.txt: V */
    size_t n_han;      /* U+4E00..U+9FA5 characters (always 20902) */
    size_t n_han_seen; /* of which found in the counts (step 2) */
    size_t n_english;  /* tokens written by step 4 */
    size_t n_other;    /* tokens written by step 5 */
    size_t n_ext;      /* "##<CJK>" ids extend_chinese_char() would add */
};

/* vocab_merge: the seed's merge_vocab.py (ernie-data.md section 6.4):
 * special tokens, the Han characters U+4E00..U+9FA5 by descending count
 * and then the unseen ones by descending code point, the English pieces
 * of eng_vocab ("piece<TAB>score" lines, spm_train's .vocab), and the
 * characters counted at least `threshold` times, each normalized as
 * PaddleNLP's BasicTokenizer(do_lower_case=True) does.  Appends vocab.txt
 * (one token a line) to out.
 *   counts     IN: the character counts in file order; ties in count keep
 *              this order (the seed's Python stable sort)
 *   eng_vocab  IN: the text of eng.vocab, named eng_name in messages
 *   stats      OUT: may be NULL; filled on success and on TOK_ERANGE
 * Returns 0, TOK_EFORMAT (a bad eng.vocab line: not two fields, invalid
 * UTF-8; the line is named), TOK_ERANGE (V plus the "##<CJK>" extension
 * would exceed VOCAB_MERGE_MAX_IDS ids; err says by how much; out is left
 * as it was) or TOK_ENOMEM.  Thread-safe (no shared state). */
int vocab_merge(const struct vocab_charcount *counts, size_t n_counts,
                const char *eng_vocab, size_t eng_len, const char *eng_name,
                uint64_t threshold, struct tok_buf *out,
                struct vocab_merge_stats *stats, struct tok_err *err);

/* vocab_merge_norm: norm() of the merge: the concatenation of the tokens
 * PaddleNLP's BasicTokenizer(do_lower_case=True).tokenize() makes of the
 * UTF-8 text s[0..len) (controls dropped, whitespace removed, Python's
 * str.lower() with its final-sigma rule, NFD, marks of category Mn
 * dropped).  Appends the UTF-8 result to out.  Returns 0, TOK_EUTF8 or
 * TOK_ENOMEM.  Thread-safe. */
int vocab_merge_norm(const char *s, size_t len, struct tok_buf *out,
                     struct tok_err *err);

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
