/* SPDX-License-Identifier: MIT */
/*
 * wwm.h: the "##" whole-word marks of create-pretraining-data
 * (ernie-data.md 4.5).  A sentence's words are collected (jieba's, or the
 * words of a pre-segmented text), then its tokens are marked: a token that
 * holds a Chinese character starts the longest window of at most
 * max_word_len tokens whose concatenation is one of the words, and the
 * window's other tokens become "##" + token.
 */
#ifndef WWM_H
#define WWM_H

#include <stddef.h>

#include "tok.h"

/* Words are compared up to 8 bytes at a time: the bytes of every word
 * given to wwm_add_word() must be followed by WWM_SLACK readable bytes of
 * the same buffer.  wwm_keep_slack() gives a tok_buf that many zero bytes
 * past its length (its length unchanged); 0, or -1 when out of memory. */
#define WWM_SLACK 8
int wwm_keep_slack(struct tok_buf *b);

struct wwm_vocab; /* what the marking reads of each id of a vocab */
struct wwm;       /* one worker's sentence */

/* wwm_vocab_new: the tables of vocab (ids to tokens), where cont_ids
 * (tok_vocab_n_ids(vocab) of them, from tok_vocab_cont_ids()) gives the
 * id of each token's "##" form in the vocab extended with the "##<CJK>"
 * tokens (-1: none), for windows of at most max_word_len tokens (1 to
 * 64), and sep, the word separator of pre-segmented text (wwm_split),
 * valid UTF-8.  NULL with errno set (out of memory, EINVAL for a sep that
 * is not UTF-8, or EOVERFLOW for a token of 4 GB or more). */
struct wwm_vocab *wwm_vocab_new(const struct tok_vocab *vocab,
                                const tok_id *cont_ids, size_t max_word_len,
                                const char *sep);
void wwm_vocab_free(struct wwm_vocab *v); /* NULL is a no-op */

/* wwm_new: a sentence, NULL when out of memory.  One a thread. */
struct wwm *wwm_new(void);
void wwm_free(struct wwm *m); /* NULL is a no-op */

/* wwm_clear: start a new sentence, with no words. */
void wwm_clear(struct wwm *m);

/* wwm_add_word: p[0..len) is a word of the sentence (followed by
 * WWM_SLACK readable bytes).  0, or -1 when out of memory. */
int wwm_add_word(struct wwm *m, const char *p, size_t len);

/* wwm_add_spans: wwm_add_word() for each word s[starts[i], ends[i]) of
 * n (tok_jieba_cut()'s words), leaving out those of one character, which
 * the marking never looks up.  0, or -1 when out of memory. */
int wwm_add_spans(struct wwm *m, const char *s, const size_t *starts,
                  const size_t *ends, size_t n);

/* wwm_split: add the words of the pre-segmented sentence s[0..len) (with
 * WWM_SLACK readable bytes after it), as PaddleNLP finds them: Python's
 * s.split(sep), the second of two empty strings in a row standing for a
 * separator that was a word.  *joined gets the text its tokenizer sees,
 * the words joined without separator (owned by m, until the next call).
 * 0, or -1 when out of memory. */
int wwm_split(struct wwm *m, const struct wwm_vocab *v, const char *s,
              size_t len, const char **joined, size_t *joined_len);

/* wwm_mark: mark ids[0..n), the tokens of the sentence, against its
 * words, in place: the other tokens of each window become their "##"
 * ids.  chars (NULL, or n entries) is the tokenizer's chars array (see
 * struct tok_encoding): tokens it knows are compared as code points,
 * without their strings.  0, or -1 when out of memory. */
int wwm_mark(struct wwm *m, const struct wwm_vocab *v, tok_id *ids,
             const uint32_t *chars, size_t n);

#endif /* WWM_H */
