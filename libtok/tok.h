/* SPDX-License-Identifier: MIT */
/*
 * tok.h: the public API of libtok, the tokenization library.
 *
 * libtok turns UTF-8 text into BERT/ERNIE WordPiece ids that are identical to
 * the reference tokenizers (PaddleNLP's ErnieTokenizer, Google BERT and the
 * Hugging Face BertWordPiece tokenizer), and turns ids back into text.  It is
 * the only libtok header other modules include; see libtok(3).
 */
#ifndef TOK_H
#define TOK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOK_VERSION_MAJOR  0
#define TOK_VERSION_MINOR  1
#define TOK_VERSION_PATCH  0
#define TOK_VERSION_STRING "0.1.0"

/* tok_version: the run-time library version as "X.Y.Z" (static string). */
const char *tok_version(void);

/* tok_unicode_version: the Unicode version of the character tables libtok
 * uses (utf8proc's), e.g. "15.0.0" (static string). */
const char *tok_unicode_version(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/* Status codes.  Values are pinned: they never change meaning. */
enum tok_status {
    TOK_OK = 0,
    TOK_ENOMEM = -1,  /* out of memory */
    TOK_EIO = -2,     /* a file could not be opened or read */
    TOK_EFORMAT = -3, /* malformed input file (vocab) */
    TOK_EUTF8 = -4,   /* invalid UTF-8 in text */
    TOK_ESPACE = -5,  /* caller buffer too small */
    TOK_EINVAL = -6,  /* invalid argument */
    TOK_ERANGE = -7   /* id or size out of range */
};

/* tok_strerror: a static description of a status code; never NULL. */
const char *tok_strerror(int code);

/* Error details.  Library calls take a `struct tok_err *` as their last
 * parameter (NULL allowed) and write it only on failure, so one check after
 * a chain of calls is enough.  msg names the input and the cause, e.g.
 * "vocab 'v.txt' line 7: id '3x' is not a number". */
struct tok_err {
    int code;
    char msg[256];
};

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */

/* How text with invalid UTF-8 is treated. */
enum tok_utf8_policy {
    TOK_UTF8_STRICT = 0,  /* reject: TOK_EUTF8 with the byte offset */
    TOK_UTF8_REPLACE = 1, /* replace each maximal invalid subpart by U+FFFD */
    TOK_UTF8_SKIP = 2     /* drop the invalid bytes */
};

/* tok_utf8_check: validate UTF-8 (RFC 3629: no overlongs, no surrogates, at
 * most U+10FFFF).  Returns len if s[0..len) is valid, else the byte offset of
 * the first invalid sequence.  Thread-safe. */
size_t tok_utf8_check(const char *s, size_t len);

/* tok_utf8_decode: decode one code point at s[0..len), len >= 1.  Stores it
 * in *cp and returns its length in bytes (1-4), or 0 if the bytes at s do
 * not start a valid sequence (then *cp is untouched).  Thread-safe. */
size_t tok_utf8_decode(const char *s, size_t len, uint32_t *cp);

/* tok_utf8_encode: write cp (<= U+10FFFF, not a surrogate) as UTF-8 to
 * out[0..4) and return its length, or 0 for an invalid code point. */
size_t tok_utf8_encode(uint32_t cp, char *out);

/* A growable byte buffer the caller owns (init/release/clear). */
struct tok_buf {
    char *data; /* NUL-terminated when len > 0 or after any append */
    size_t len;
    size_t cap;
};
void tok_buf_init(struct tok_buf *b);
void tok_buf_release(struct tok_buf *b); /* frees data; b can be reused */
void tok_buf_clear(struct tok_buf *b);   /* len = 0, keeps memory */
/* tok_buf_append: append n bytes.  Returns 0 or TOK_ENOMEM. */
int tok_buf_append(struct tok_buf *b, const void *p, size_t n);

/* tok_json_string: append the JSON string of s[0..len) (valid UTF-8),
 * quotes included, as Python's json.dumps(s, ensure_ascii=False) and
 * serde_json write it: \" \\ \n \r \t \b \f, other control characters
 * as \u00xx, the rest as they are.  Returns 0 or TOK_ENOMEM. */
int tok_json_string(struct tok_buf *b, const char *s, size_t len);

/* tok_utf8_sanitize: apply `policy` to s[0..len) and append the result to
 * out.  Under TOK_UTF8_STRICT nothing is appended and TOK_EUTF8 is returned
 * with the offset of the first bad byte in err->msg and *bad_off (may be
 * NULL).  Returns the number of invalid sequences replaced or skipped (>= 0)
 * or a negative status.  Thread-safe. */
int64_t tok_utf8_sanitize(const char *s, size_t len,
                          enum tok_utf8_policy policy, struct tok_buf *out,
                          size_t *bad_off, struct tok_err *err);

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

typedef int32_t tok_id;

/* Special tokens, looked up by their usual names in the vocab. */
enum tok_special {
    TOK_SPECIAL_PAD = 0, /* "[PAD]" */
    TOK_SPECIAL_UNK,     /* "[UNK]" (required) */
    TOK_SPECIAL_CLS,     /* "[CLS]" */
    TOK_SPECIAL_SEP,     /* "[SEP]" */
    TOK_SPECIAL_MASK,    /* "[MASK]" */
    TOK_SPECIAL_COUNT
};

struct tok_vocab;

/* tok_vocab_load: read a vocab file.  Two formats are accepted, decided by
 * the first line: one token per line (id = 0-based line number, the
 * BERT/PaddleNLP/HF convention), or "token<TAB>id" per line (ERNIE's own
 * files), where the ids must be 0..n-1 in any order.  A trailing "\r" is
 * dropped from every line.  A token that occurs twice keeps its last id, as
 * in the Python references (see tok_vocab_repeats()).  "[UNK]" must be
 * present.
 * On success *out owns the vocab; free it with tok_vocab_free().
 * Errors: TOK_EIO (cannot open/read), TOK_EFORMAT (line named in err),
 * TOK_ENOMEM. */
int tok_vocab_load(struct tok_vocab **out, const char *path,
                   struct tok_err *err);

/* tok_vocab_parse: as tok_vocab_load, from memory.  `name` is used in error
 * messages.  The vocab copies what it needs from data. */
int tok_vocab_parse(struct tok_vocab **out, const char *data, size_t len,
                    const char *name, struct tok_err *err);

/* tok_vocab_copy: *out gets a copy of v that owns its memory (as parsing
 * the file again would give, at a fraction of the cost), to extend with
 * tok_vocab_extend_chinese() while v stays as it is.  TOK_ENOMEM. */
int tok_vocab_copy(struct tok_vocab **out, const struct tok_vocab *v,
                   struct tok_err *err);

/* tok_vocab_cont_ids: for each id of v (tok_vocab_n_ids(v) of them),
 * out[id] gets the id of "##" + its token in v as
 * tok_vocab_extend_chinese() extends it (v itself if it is extended), or
 * -1: what tok_vocab_find() answers on a copy so extended, without the
 * copy.  Returns the number of ids the extension adds (what
 * tok_vocab_extend_chinese() returns), numbered from tok_vocab_size(v). */
size_t tok_vocab_cont_ids(const struct tok_vocab *v, tok_id *out);

/* A token that the vocab file holds twice.  As in Hugging Face's
 * BertTokenizer and tokenizers' WordPiece and in PaddleNLP's Vocab, the
 * later line wins: the token gets `id`, and `dropped_id` (the id of the
 * earlier line) is left without a token, never produced by encoding.
 * Lines are 1-based lines of the file. */
struct tok_vocab_repeat {
    tok_id id, dropped_id;
    size_t line, first_line;
};

/* tok_vocab_repeats: the tokens the file repeats, in the order of their
 * later lines; *n gets the count (0: none, and NULL may be returned).
 * Owned by the vocab, valid until tok_vocab_free(); the token of each is
 * tok_vocab_token(v, id). */
const struct tok_vocab_repeat *tok_vocab_repeats(const struct tok_vocab *v,
                                                 size_t *n);

/* tok_vocab_free: free a vocab; NULL is a no-op. */
void tok_vocab_free(struct tok_vocab *v);

/* tok_vocab_size: the base vocabulary size V (number of distinct tokens, as
 * PaddleNLP's len(vocab)); the extension of tok_vocab_extend_chinese() is not
 * counted. */
size_t tok_vocab_size(const struct tok_vocab *v);

/* tok_vocab_n_ids: one past the largest id, extension included. */
size_t tok_vocab_n_ids(const struct tok_vocab *v);

/* tok_vocab_find: the id of token t[0..len) (exact bytes), extension tokens
 * included, or -1 if absent. */
tok_id tok_vocab_find(const struct tok_vocab *v, const char *t, size_t len);

/* tok_vocab_token: the token of `id`, its length in *len (may be NULL).
 * Returns NULL if no token has that id.  The string is owned by the vocab,
 * NUL-terminated, and valid until tok_vocab_free(). */
const char *tok_vocab_token(const struct tok_vocab *v, tok_id id, size_t *len);

/* tok_vocab_special: the id of a special token, or -1 if the vocab lacks it
 * (TOK_SPECIAL_UNK is always present). */
tok_id tok_vocab_special(const struct tok_vocab *v, enum tok_special s);

/* tok_vocab_extend_chinese: PaddleNLP's extend_chinese_char(): for every
 * id 0..V-1, in order, whose token is a single code point in U+4E00..U+9FA5
 * and whose "##" form is not in the vocab, add "##<char>" with ids V, V+1,
 * ... where V = tok_vocab_size().  As in PaddleNLP, a vocab that repeats a
 * token has ids up to n_ids - 1 > V - 1, so the first new tokens share
 * live ids (ernie-3.0-base-zh: "##的" gets 39979, [UNK]'s id); such an id
 * then decodes as the new token, and lookups of the old token still give
 * it.  Calling it twice adds nothing more.  Strings returned by
 * tok_vocab_token() before the call are invalidated.  Returns the number
 * of tokens added (>= 0) or TOK_ENOMEM.  Not thread-safe: call it before
 * sharing the vocab. */
int64_t tok_vocab_extend_chinese(struct tok_vocab *v, struct tok_err *err);

/* After loading (and the optional extension) a vocab is immutable and safe
 * to use from any number of threads at once. */

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

/* Whose tokenizer to reproduce.  They differ in one rule only: PaddleNLP's
 * BasicTokenizer also isolates symbols (category S*, and U+00AD U+00B2
 * U+00BA U+3007 U+00B5 U+00D8 U+014B U+01B1) like punctuation. */
enum tok_flavor {
    TOK_FLAVOR_ERNIE = 0, /* PaddleNLP ErnieTokenizer / BertTokenizer */
    TOK_FLAVOR_BERT = 1   /* Google BERT, HF BertWordPiece, transformers */
};

struct tok_opts {
    enum tok_flavor flavor;
    int lowercase;             /* lowercase and strip accents (default 1) */
    size_t max_chars_per_word; /* longer words become [UNK] (default 100) */
    int split_special;         /* match "[CLS]" etc. in the text (def. 1) */
};

/* tok_opts_init: the defaults for a flavor. */
void tok_opts_init(struct tok_opts *o, enum tok_flavor flavor);

struct tok_tokenizer;

/* tok_tokenizer_new: a WordPiece tokenizer over `vocab`, which must outlive
 * it.  Returns 0 and sets *out, or TOK_ENOMEM / TOK_EINVAL.  The tokenizer
 * is immutable: any number of threads may call tok_encode() on it at once,
 * each with its own struct tok_encoding. */
int tok_tokenizer_new(struct tok_tokenizer **out, const struct tok_vocab *vocab,
                      const struct tok_opts *opts, struct tok_err *err);

/* tok_tokenizer_free: NULL is a no-op. */
void tok_tokenizer_free(struct tok_tokenizer *t);

/* The result of one tok_encode() call, owned by the caller.  ids[i] covers
 * bytes [starts[i], ends[i]) of the input text (offsets are filled only when
 * want_offsets is set).  With want_chars, chars[i] is the code point of
 * token i when tok_encode() emitted it as one character of the text,
 * unchanged (a CJK ideograph or a punctuation character, each a word
 * of its own), and 0 otherwise
 * (0 does not rule that out); a caller can then compare such tokens as
 * code points without the vocab's strings.  tok_bpe_encode() sets chars[i]
 * to 0.  A caller that has checked the text already sets valid_utf8, and
 * the encoders skip their own check (invalid text then gives undefined
 * results).  Reuse one encoding for many calls: it keeps its memory and
 * scratch space. */
struct tok_encoding {
    tok_id *ids;
    size_t *starts;
    size_t *ends;
    uint32_t *chars;
    size_t n;         /* number of tokens */
    size_t cap;       /* capacity of ids/starts/ends/chars */
    int want_offsets; /* set by the caller; default 0 */
    int want_chars;   /* set by the caller; default 0 */
    int valid_utf8;   /* set by the caller; default 0 */
    void *scratch;    /* private: per-call working memory */
};
void tok_encoding_init(struct tok_encoding *e);
void tok_encoding_release(struct tok_encoding *e);
void tok_encoding_clear(struct tok_encoding *e);

/* tok_encode: tokenize text[0..len), which must be valid UTF-8, and append
 * the ids (and offsets) to e.  Returns 0, TOK_EUTF8 (err names the byte
 * offset; nothing is appended) or TOK_ENOMEM.  Memory used is proportional
 * to the number of tokens, not to the length of the longest word. */
int tok_encode(const struct tok_tokenizer *t, const char *text, size_t len,
               struct tok_encoding *e, struct tok_err *err);

/* tok_decode: append the text of ids[0..n) to out: tokens joined by spaces,
 * except that a "##" continuation piece is glued to the token before it
 * (the references' convert_tokens_to_string).  Extension ids are decoded as
 * "##<char>".  Returns 0, TOK_ERANGE (err names the position of the unknown
 * id; out is left as it was) or TOK_ENOMEM. */
int tok_decode(const struct tok_tokenizer *t, const tok_id *ids, size_t n,
               struct tok_buf *out, struct tok_err *err);

/* ------------------------------------------------------------------------ */
/* Chinese word segmentation: the jieba engine                               */

/* A jieba 0.42.1 segmenter: its prefix dictionary, DAG and maximum-log-
 * probability route, and the HMM (Viterbi over B/M/E/S) for runs of single
 * characters, with jieba's exact grouping of non-Han text.  The model is a
 * binary file compiled from jieba's dict.txt and finalseg tables (see
 * tok_jieba_compile() and jieba-model(5)) and loaded with mmap. */
struct tok_jieba;

/* tok_jieba_compile: read jieba's dictionary (`dict_path`, lines "word freq
 * [tag]") and HMM tables (`hmm_dir`/prob_start.py, prob_trans.py,
 * prob_emit.py, as Debian's python3-jieba ships them) and write the binary
 * model to out_path (through a temporary file, renamed at the end).
 * Returns 0, TOK_EIO, TOK_EFORMAT (file and line named) or TOK_ENOMEM. */
int tok_jieba_compile(const char *dict_path, const char *hmm_dir,
                      const char *out_path, struct tok_err *err);

/* tok_jieba_open: map a compiled model.  Checks magic, version and every
 * size against the file.  The model is mapped 2 MB aligned and advised
 * for transparent huge pages; where the file's cached pages are not 2 MB
 * folios the kernel can map whole, the 16 MB edge table is copied to
 * anonymous memory advised for them (fewer TLB misses: see
 * jieba-model(5)).  Free with tok_jieba_close().  Returns 0, TOK_EIO,
 * TOK_EFORMAT or TOK_ENOMEM. */
int tok_jieba_open(struct tok_jieba **out, const char *model_path,
                   struct tok_err *err);

/* Flags of tok_jieba_open_flags(). */
enum {
    TOK_JIEBA_OPEN_MAPPED = 1, /* read the edge table from the mapping */
    TOK_JIEBA_OPEN_COPY = 2    /* copy it to anonymous memory in any case */
};

/* tok_jieba_open_flags: tok_jieba_open() with flags (0: the same).
 * TOK_JIEBA_OPEN_MAPPED never copies (a short input does not win back the
 * copy's cost); TOK_JIEBA_OPEN_COPY always does (without MAPPED). */
int tok_jieba_open_flags(struct tok_jieba **out, const char *model_path,
                         int flags, struct tok_err *err);

/* tok_jieba_close: NULL is a no-op. */
void tok_jieba_close(struct tok_jieba *j);

/* tok_jieba_load_userdict: add the words of a user dictionary, as jieba's
 * load_userdict(): one "word [freq] [tag]" a line, UTF-8 (a BOM is
 * skipped), a missing freq suggested from the current dictionary, freq 0
 * forcing the word apart.  Lines are applied in order, so later lines see
 * earlier ones.  Not thread-safe: call it before sharing the segmenter.
 * Returns the number of words added, TOK_EIO, TOK_EFORMAT, TOK_ERANGE (the
 * trie would exceed 2^21 nodes) or TOK_ENOMEM. */
int64_t tok_jieba_load_userdict(struct tok_jieba *j, const char *path,
                                struct tok_err *err);

/* tok_jieba_n_words: dictionary words (frequency > 0 or user words). */
size_t tok_jieba_n_words(const struct tok_jieba *j);

/* Words found by tok_jieba_cut(), as byte spans of the text; the caller
 * owns it (init/release/clear) and can reuse it for many calls. */
struct tok_words {
    size_t *starts;
    size_t *ends;
    size_t n;
    size_t cap;
    void *scratch; /* private */
};
void tok_words_init(struct tok_words *w);
void tok_words_release(struct tok_words *w);
void tok_words_clear(struct tok_words *w);

/* Flags of tok_jieba_cut(). */
#define TOK_JIEBA_HMM     1 /* jieba.cut(HMM=True) */
#define TOK_JIEBA_TRUSTED 2 /* the caller has validated the UTF-8 */

/* tok_jieba_cut: segment text[0..len) (valid UTF-8) as jieba.cut(text,
 * HMM=flags & TOK_JIEBA_HMM) does, appending the words to w.  The words
 * cover the text exactly, in order; whitespace characters are words too
 * ("\r\n" is one).  The UTF-8 is checked unless TOK_JIEBA_TRUSTED is set
 * (then invalid text is undefined behaviour).  Returns 0, TOK_EUTF8 or
 * TOK_ENOMEM.  Thread-safe: any number of threads may cut with one
 * segmenter, each with its own struct tok_words. */
int tok_jieba_cut(const struct tok_jieba *j, const char *text, size_t len,
                  int flags, struct tok_words *w, struct tok_err *err);

/* ------------------------------------------------------------------------ */
/* Chinese word segmentation: the LAC engine                                 */

/* Baidu LAC 2.1.2 (Lexical Analysis of Chinese) without Paddle: its two
 * networks, `seg` (words) and `lac` (words with part-of-speech and entity
 * tags), each an embedding, two bidirectional GRU layers, an output layer
 * and CRF Viterbi decoding, with LAC's character normalisation (q2b.dic,
 * one pass), its out-of-vocabulary rule, the `lac` network's dictionary
 * pre-segmentation (small_seg.dic) and its user dictionaries
 * (LAC.load_customization()).  The model is a binary file compiled from
 * the LAC 2.1.2 package (see tok_lac_compile() and lac-model(5)) and
 * loaded with mmap.
 *
 * The arithmetic is float32 in a fixed order (every sum a chain of fused
 * multiply-adds in index order, exp by one polynomial), so the tags of a
 * text do not depend on the CPU, the SIMD path taken, the batch the text
 * is run in or the thread: the same text always gives the same words.
 * They equal LAC's except where LAC's own float arithmetic (Paddle's MKL
 * kernels) falls on the other side of a near tie between two Viterbi
 * paths. */
struct tok_lac;

/* The two networks. */
enum tok_lac_mode {
    TOK_LAC_SEG = 0, /* LAC(mode='seg'): words */
    TOK_LAC_LAC = 1  /* LAC(mode='lac'): words and their tags */
};

/* Flags of tok_lac_open(): which networks to map and check. */
#define TOK_LAC_OPEN_SEG (1 << TOK_LAC_SEG)
#define TOK_LAC_OPEN_LAC (1 << TOK_LAC_LAC)

/* tok_lac_compile: read the LAC package directory `package_dir` (the
 * `LAC` directory of the LAC 2.1.2 source archive, holding seg_model/ and
 * lac_model/, each with model/ (Paddle parameter files) and conf/
 * (word.dic, tag.dic, q2b.dic, small_seg.dic)) and write the binary model
 * to out_path (through a temporary file, renamed at the end).
 * `provenance` (NULL allowed) is stored in the model as text (the archive
 * and its SHA-256).  Returns 0, TOK_EIO, TOK_EFORMAT (file, line or
 * parameter named) or TOK_ENOMEM. */
int tok_lac_compile(const char *package_dir, const char *out_path,
                    const char *provenance, struct tok_err *err);

/* tok_lac_open: map a compiled model and check the networks `modes` asks
 * for (TOK_LAC_OPEN_SEG, TOK_LAC_OPEN_LAC, or both): magic, version, every
 * size and index against the file, and a checksum of every part read.
 * Free with tok_lac_close().  Returns 0, TOK_EIO, TOK_EFORMAT (the part
 * named) or TOK_ENOMEM. */
int tok_lac_open(struct tok_lac **out, const char *model_path, int modes,
                 struct tok_err *err);

/* tok_lac_close: NULL is a no-op. */
void tok_lac_close(struct tok_lac *l);

/* tok_lac_provenance: the text the model was compiled with (see
 * tok_lac_compile()), "" if none.  Owned by the model. */
const char *tok_lac_provenance(const struct tok_lac *l);

/* tok_lac_load_customization: LAC.load_customization(path, sep): a user
 * dictionary, one entry a line: phrase pieces split at whitespace (sep
 * NULL) or at the string sep, each "text" or "text/TAG"; a phrase shorter
 * than two characters without a tag on its first piece is ignored.  Where
 * a phrase occurs in a text, its tags are rewritten as LAC does (every
 * piece a word, TAG-I for tagged pieces, the phrase's first character a
 * B), for both networks.  As in LAC, a new file replaces the phrases of
 * the one before (a later line of one file replaces an earlier equal
 * phrase).  The file is UTF-8, read as Python reads it (universal
 * newlines; a BOM is a character of the first phrase).  Not thread-safe:
 * call it before sharing the model.  Returns the number of phrases,
 * TOK_EIO, TOK_EFORMAT (invalid UTF-8, line named), TOK_EINVAL (an empty
 * sep) or TOK_ENOMEM. */
int64_t tok_lac_load_customization(struct tok_lac *l, const char *path,
                                   const char *sep, struct tok_err *err);

/* tok_lac_tag_name: the name of a word's tag (see tok_lac_batch_words()):
 * LAC's tag string without its last two characters ("n", "PER", "" for
 * `seg`'s tags and for LAC's O), its length in *len (may be NULL).  Owned
 * by the model; valid until tok_lac_close(), or NULL for an unknown id. */
const char *tok_lac_tag_name(const struct tok_lac *l, uint32_t tag,
                             size_t *len);

/* A batch: texts segmented together, so that each step of the GRUs is a
 * matrix product over many texts.  One batch a thread; texts are copied
 * in.  Memory is proportional to the texts added (a few bytes a
 * character) plus a bounded working set, whatever their lengths: a text of
 * any length is one sequence, as in LAC. */
struct tok_lac_batch;

/* tok_lac_batch_new: an empty batch over network `mode` of l (which must
 * outlive it and have been opened with that network).  Returns 0,
 * TOK_EINVAL or TOK_ENOMEM. */
int tok_lac_batch_new(struct tok_lac_batch **out, const struct tok_lac *l,
                      enum tok_lac_mode mode, struct tok_err *err);

/* tok_lac_batch_free: NULL is a no-op. */
void tok_lac_batch_free(struct tok_lac_batch *b);

/* tok_lac_batch_clear: remove every text (memory is kept for reuse). */
void tok_lac_batch_clear(struct tok_lac_batch *b);

/* tok_lac_batch_add: add text[0..len) (valid UTF-8, checked unless
 * `trusted`) as the next text.  Returns its index (0, 1, ...), TOK_EUTF8
 * (byte offset in err) or TOK_ENOMEM. */
int64_t tok_lac_batch_add(struct tok_lac_batch *b, const char *text, size_t len,
                          int trusted, struct tok_err *err);

/* tok_lac_batch_count: the number of texts; tok_lac_batch_bytes: their
 * bytes in all (for a caller deciding when to run). */
size_t tok_lac_batch_count(const struct tok_lac_batch *b);
size_t tok_lac_batch_bytes(const struct tok_lac_batch *b);

/* tok_lac_batch_run: segment every text added since the last run.
 * Returns 0 or TOK_ENOMEM. */
int tok_lac_batch_run(struct tok_lac_batch *b, struct tok_err *err);

/* tok_lac_batch_text: text i as copied in (followed by at least 16 NUL
 * bytes), its length in *len.  Valid until the batch is cleared. */
const char *tok_lac_batch_text(const struct tok_lac_batch *b, size_t i,
                               size_t *len);

/* Words of a text, as byte spans of tok_lac_batch_text(), with their
 * tags; the caller owns it (init/release/clear) and can reuse it. */
struct tok_lac_words {
    size_t *starts;
    size_t *ends;
    uint32_t *tags; /* tok_lac_tag_name() */
    size_t n;
    size_t cap;
};
void tok_lac_words_init(struct tok_lac_words *w);
void tok_lac_words_release(struct tok_lac_words *w);
void tok_lac_words_clear(struct tok_lac_words *w);

/* tok_lac_batch_words: append the words of text i (after a run) to w,
 * exactly as LAC.run(text) gives them: they cover the text in order,
 * whitespace included (a word can hold spaces: "机 器"); an empty text has
 * none.  Returns 0, TOK_EINVAL (i out of range or not run) or
 * TOK_ENOMEM. */
int tok_lac_batch_words(const struct tok_lac_batch *b, size_t i,
                        struct tok_lac_words *w, struct tok_err *err);

/* A loaded model (with its user dictionary) is immutable: any number of
 * threads may use it at once, each with its own batch. */

/* ------------------------------------------------------------------------ */
/* Byte-level BPE                                                            */

/* GPT-2's byte-level BPE, giving the ids of Hugging Face tokenizers'
 * ByteLevelBPETokenizer(vocab, merges) (add_prefix_space=False, no
 * dropout, no unknown token): the text is split by GPT-2's regex, each
 * piece's UTF-8 bytes become symbols of the 256-character bytes-to-unicode
 * alphabet, and merges apply lowest rank first (leftmost on a tie).  A
 * byte whose symbol is not in the vocab is dropped.  No special tokens are
 * recognized in the text: "<|endoftext|>" there is ordinary text, as in HF
 * when the tokenizer is built from the two files; add such ids yourself.
 * Tokens are the vocab's strings, i.e. in the alphabet ("Ġ" for a space). */
struct tok_bpe;

/* tok_bpe_load: read HF/GPT-2 model files.  vocab_json is one JSON object
 * {"token": id, ...}: ids are integers in 0..INT32_MAX, a value that is not
 * a number is ignored (as HF does), a repeated key keeps its last id.
 * merges_txt has one "a b" pair a line (exactly one space; a final "\r" is
 * dropped; lines starting with "#version" are skipped); the rank of a merge
 * is its order, and a pair listed twice keeps its last rank.  Both parts
 * and their concatenation must be tokens of the vocab.
 * On success *out owns the model; free it with tok_bpe_free().
 * Errors: TOK_EIO (cannot open/read, file named), TOK_EFORMAT (invalid
 * UTF-8 or JSON with its line and column, a bad id, or a merges line named
 * by file and line number with the token missing from the vocab),
 * TOK_ENOMEM. */
int tok_bpe_load(struct tok_bpe **out, const char *vocab_json,
                 const char *merges_txt, struct tok_err *err);

/* tok_bpe_parse: as tok_bpe_load, from memory: vocab[0..vocab_len) and
 * merges[0..merges_len), named vocab_name and merges_name in messages.
 * The model copies what it needs. */
int tok_bpe_parse(struct tok_bpe **out, const char *vocab, size_t vocab_len,
                  const char *vocab_name, const char *merges, size_t merges_len,
                  const char *merges_name, struct tok_err *err);

/* tok_bpe_free: NULL is a no-op. */
void tok_bpe_free(struct tok_bpe *b);

/* tok_bpe_vocab_size: the number of tokens of vocab.json (distinct keys
 * with an id), HF's get_vocab_size(). */
size_t tok_bpe_vocab_size(const struct tok_bpe *b);

/* tok_bpe_n_merges: the number of distinct merge pairs. */
size_t tok_bpe_n_merges(const struct tok_bpe *b);

/* tok_bpe_find: the id of vocab string t[0..len) (as stored, i.e. in the
 * alphabet: "Ġthe", not " the"), or -1. */
tok_id tok_bpe_find(const struct tok_bpe *b, const char *t, size_t len);

/* tok_bpe_token: the vocab string of `id` and its length in *len (may be
 * NULL), or NULL if no token has that id.  An id given to two tokens
 * names the first in the file.  Owned by the model, NUL-terminated, valid
 * until tok_bpe_free(). */
const char *tok_bpe_token(const struct tok_bpe *b, tok_id id, size_t *len);

/* tok_bpe_encode: append the ids of text[0..len), which must be valid
 * UTF-8, to e (and their offsets when e->want_offsets: the exact byte span
 * of each token in the text, which may split a UTF-8 character where HF
 * widens it to whole characters).  Returns 0, TOK_EUTF8 (err names the byte
 * offset; nothing is appended), TOK_ERANGE (the regex engine gave up on the
 * text; nothing is appended) or TOK_ENOMEM.  The model is immutable after
 * loading: any number of threads may encode with it at once, each with its
 * own struct tok_encoding.  The encoding may be shared with tok_encode(). */
int tok_bpe_encode(const struct tok_bpe *b, const char *text, size_t len,
                   struct tok_encoding *e, struct tok_err *err);

/* tok_bpe_decode: append the bytes of ids[0..n) to out: each token's
 * alphabet characters mapped back to bytes (a token holding any other
 * character is copied as it is, as HF's ByteLevel decoder does).  The
 * result is the encoded text again; ids that split a character can give
 * invalid UTF-8, which is left as it is (HF replaces it by U+FFFD).
 * Returns 0, TOK_ERANGE (err names the position of the unknown id; out is
 * left as it was) or TOK_ENOMEM.  Thread-safe. */
int tok_bpe_decode(const struct tok_bpe *b, const tok_id *ids, size_t n,
                   struct tok_buf *out, struct tok_err *err);

/* tok_bpe_gpt2_pattern: GPT-2's pre-tokenization regex as a PCRE2 pattern
 * (compile with PCRE2_UTF | PCRE2_UCP); \s is spelled out as Unicode
 * White_Space, as Oniguruma (HF) and Python's regex module take it.  For
 * BPE trainers, which must split text exactly as the tokenizer does. */
const char *tok_bpe_gpt2_pattern(void);

/* tok_bpe_gpt2_alphabet: GPT-2's bytes_to_unicode(): the code point that
 * stands for each byte in vocab.json and merges.txt. */
void tok_bpe_gpt2_alphabet(uint32_t byte_cp[256]);

#ifdef __cplusplus
}
#endif
#endif /* TOK_H */
