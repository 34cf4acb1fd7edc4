/* SPDX-License-Identifier: MIT */
/*
 * ds.h: the public API of libdata's token dataset formats.
 *
 * libdata writes and reads the two on-disk forms of a tokenized corpus that
 * PaddleNLP and Megatron-LM use: the mmap pair <prefix>.bin + <prefix>.idx
 * (see ds-mmap(5)) and PaddleNLP's older pair <prefix>_ids.npy +
 * <prefix>_idx.npz (see ds-npy(5)).  It is the only libdata header other
 * modules include; see libdata(3).
 */
#ifndef DS_H
#define DS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DS_VERSION_MAJOR  0
#define DS_VERSION_MINOR  1
#define DS_VERSION_PATCH  0
#define DS_VERSION_STRING "0.1.0"

/* ds_version: the run-time library version as "X.Y.Z" (static string). */
const char *ds_version(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/* Status codes.  Values are pinned, and the same numbers as libtok's. */
enum ds_status {
    DS_OK = 0,
    DS_ENOMEM = -1,  /* out of memory */
    DS_EIO = -2,     /* a file could not be opened, read, written, renamed */
    DS_EFORMAT = -3, /* malformed dataset file */
    DS_EINVAL = -6,  /* invalid argument */
    DS_ERANGE = -7   /* id, size or position out of range */
};

/* ds_strerror: a static description of a status code; never NULL. */
const char *ds_strerror(int code);

/* Error details.  Library calls take a `struct ds_err *` as their last
 * parameter (NULL allowed) and write it only on failure, so one check after
 * a chain of calls is enough.  msg names the file and the byte offset or
 * field that is wrong, e.g. "'x.idx': N=5 sentences and M=3 document
 * entries need 118 bytes, the file has 90". */
struct ds_err {
    int code;
    char msg[320];
};

/* ------------------------------------------------------------------------ */
/* Data types                                                                */

/* The dtype codes of the .idx header (PaddleNLP's table; Megatron agrees on
 * every integer code). */
enum ds_dtype {
    DS_DTYPE_UINT8 = 1,
    DS_DTYPE_INT8 = 2,
    DS_DTYPE_INT16 = 3,
    DS_DTYPE_INT32 = 4,
    DS_DTYPE_INT64 = 5,
    DS_DTYPE_FLOAT64 = 6,
    DS_DTYPE_FLOAT32 = 7,
    DS_DTYPE_UINT16 = 8,
    DS_DTYPE_UINT32 = 9,
    DS_DTYPE_UINT64 = 10
};

/* ds_dtype_size: bytes per element of t, or 0 for an unknown code. */
size_t ds_dtype_size(enum ds_dtype t);

/* ds_dtype_name: numpy's name of t ("uint16", "int32", ...), or "unknown"
 * (static strings). */
const char *ds_dtype_name(enum ds_dtype t);

/* The two file pairs. */
enum ds_format {
    DS_FORMAT_MMAP = 0, /* <prefix>.bin + <prefix>.idx (MMIDIDX) */
    DS_FORMAT_NPY = 1   /* <prefix>_ids.npy + <prefix>_idx.npz */
};

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */

/* A dataset being written: sentences (runs of token ids) grouped into
 * documents.  The result is byte-identical to what PaddleNLP writes for the
 * same sentences: MMapIndexedDatasetBuilder (add_item per sentence,
 * end_document per document, finalize) for DS_FORMAT_MMAP, np.save and
 * np.savez (stored) for DS_FORMAT_NPY (the zip's timestamps aside, which
 * are fixed at 1980-01-01 so that output is reproducible).
 *
 * Every output is written as "<final name>.tmp.<pid>" and renamed only by
 * ds_writer_commit(), so a killed run never leaves a file that looks
 * complete.  Memory stays flat whatever the corpus size: sizes and document
 * boundaries are streamed to temporary files next to the outputs (also
 * named "*.tmp.<pid>").  A writer is not thread-safe. */
struct ds_writer;

/* ds_prefix_check: whether `prefix` can name the files of a dataset to
 * write: it must have a file name after its last '/' ("out/" would give
 * "out/.bin"), and must not be an existing directory (the files would
 * land beside it, "out.bin", not in it).  Returns 0, or DS_EINVAL with a
 * message that says what to give instead. */
int ds_prefix_check(const char *prefix, struct ds_err *err);

/* ds_writer_open: start writing the dataset `prefix` (a path without
 * suffix, as ds_prefix_check() accepts; its directory must exist) in
 * `format`, with tokens stored as `dtype`, which must be DS_DTYPE_UINT16
 * or DS_DTYPE_INT32.  On success *out owns the writer: finish with
 * ds_writer_commit() or ds_writer_abort().  Returns 0, DS_EINVAL (bad
 * prefix, format or dtype), DS_EIO (a file cannot be created; err names
 * the final file, not its temporary name) or DS_ENOMEM. */
int ds_writer_open(struct ds_writer **out, const char *prefix,
                   enum ds_format format, enum ds_dtype dtype,
                   struct ds_err *err);

/* ds_writer_add_sentence: append one sentence of n >= 1 ids to the current
 * document.  Returns 0; DS_EINVAL for n == 0; DS_ERANGE if an id does not
 * fit the dtype (err names the id, its position and the dtype) or n exceeds
 * INT32_MAX; nothing of the sentence is written then and the writer stays
 * usable.  DS_EIO on a write error, after which every call fails. */
int ds_writer_add_sentence(struct ds_writer *w, const int32_t *ids, size_t n,
                           struct ds_err *err);

/* ds_writer_end_document: close the current document.  A document without
 * sentences is not recorded (a dataset never holds an empty document), so
 * calling it twice in a row is harmless.  Returns 0 or DS_EIO. */
int ds_writer_end_document(struct ds_writer *w, struct ds_err *err);

/* Counts so far: sentences added, documents ended (an open document is not
 * counted yet), tokens added. */
uint64_t ds_writer_n_sentences(const struct ds_writer *w);
uint64_t ds_writer_n_documents(const struct ds_writer *w);
uint64_t ds_writer_n_tokens(const struct ds_writer *w);

/* ds_writer_commit: end an open document, write the headers and index
 * arrays, fsync every file, and rename each to its final name (the token
 * file first, the index last, since readers discover a dataset by its
 * index).  Frees w whatever happens; on failure the temporaries are
 * removed.  A final file is touched only by the two renames at the very
 * end: only a failure of the second leaves a new token file beside an old
 * index (which ds_open() refuses unless their sizes happen to agree).
 * Returns 0, DS_EIO or DS_ENOMEM. */
int ds_writer_commit(struct ds_writer *w, struct ds_err *err);

/* ds_writer_abort: remove the temporaries and free w; NULL is a no-op. */
void ds_writer_abort(struct ds_writer *w);

/* ds_output_names: the two final file names of `prefix` in `format`, token
 * file first (e.g. "p.bin", "p.idx"), into names[0] and names[1]; the
 * caller frees each with free().  Returns 0, DS_EINVAL (bad format) or
 * DS_ENOMEM (then names[] holds NULLs). */
int ds_output_names(const char *prefix, enum ds_format format, char *names[2]);

/* ------------------------------------------------------------------------ */
/* Sidecar: how a dataset was made (ds_meta.c)                               */
/*
 * PREFIX.json beside a dataset's files records how its ids were made: the
 * tokenizer, a SHA-256 of its vocab, the options that change the ids, the
 * dtype and counts, and the tool and version that wrote it (ds-meta(5)).
 * create-pretraining-data and merge write it; merge, dataset-inspect and
 * the trainer read it, so that ids of different vocabularies are never
 * mixed silently.  Datasets from PaddleNLP or Megatron have none.
 */

#define DS_META_VERSION 1  /* the "erniekit_dataset" value written */
#define DS_META_HEX     65 /* a SHA-256 in hex digits, and a NUL */

/* One sidecar.  Strings are NUL-terminated; "" is "not recorded" (null in
 * the file), and so is -1 for the tri-state and numeric fields. */
struct ds_meta {
    /* Who wrote it. */
    char tool[48];         /* "create-pretraining-data", "merge" */
    char tool_version[24]; /* e.g. "0.1.0" */
    char created[24];      /* "YYYY-MM-DDTHH:MM:SSZ" (UTC) */
    /* The files it describes. */
    enum ds_format format;
    enum ds_dtype dtype;
    uint64_t n_documents, n_sentences, n_tokens;
    uint64_t n_inputs; /* merge: the datasets merged; 0 otherwise */
    /* What the ids mean: compared by ds_meta_compare(). */
    char tokenizer[16];              /* "ernie", "bert" or "gpt2-bpe" */
    int64_t vocab_size;              /* the vocab's ids (lines, or
                                        vocab.json's tokens) */
    char vocab_sha256[DS_META_HEX];  /* of vocab.txt or vocab.json */
    char merges_sha256[DS_META_HEX]; /* of merges.txt (gpt2-bpe) */
    int lowercase;                   /* 1, 0, or -1 */
    int whole_word_marks;            /* "##" marks on Chinese words */
    int split_sentences;             /* one item a sentence */
    int append_eod;                  /* an end-of-document id */
    int keep_whitespace;             /* leading/trailing space kept */
    /* How, for people; not compared. */
    char vocab[1024];           /* the vocab path as given */
    char sentence_splitter[16]; /* "lines" or "icu" */
    char segmenter[16];         /* jieba, lac-seg, lac-lac, presegmented */
    int64_t max_word_length;    /* longest word marked, in tokens */
    int64_t max_repeated_len;   /* runs longer collapse; -1: kept */
};

/* ds_meta_init: clear m (everything "not recorded"), with tool and
 * version (either may be NULL) and `created` set to now, or to
 * $SOURCE_DATE_EPOCH when that is set (reproducible output). */
void ds_meta_init(struct ds_meta *m, const char *tool, const char *version);

/* ds_meta_path: the sidecar's name, "<prefix>.json", malloc'd (the
 * caller frees), or NULL when out of memory. */
char *ds_meta_path(const char *prefix);

/* ds_meta_read: read the sidecar of dataset `prefix` into m.  Returns 1
 * (read), 0 (there is none: m is ds_meta_init()'s, all unrecorded),
 * DS_EIO (unreadable), DS_EFORMAT (not JSON, not a sidecar, a newer
 * version, a field of the wrong type or missing; err names the file and
 * the field) or DS_ENOMEM.  Unknown keys are ignored. */
int ds_meta_read(const char *prefix, struct ds_meta *m, struct ds_err *err);

/* ds_meta_write: write m as the sidecar of `prefix`, under a temporary
 * name renamed into place.  An existing "<prefix>.json" that is not a
 * sidecar is never replaced (DS_EINVAL; see ds_meta_check_name()).
 * Returns 0, DS_EINVAL, DS_EIO or DS_ENOMEM. */
int ds_meta_write(const char *prefix, const struct ds_meta *m,
                  struct ds_err *err);

/* ds_meta_check_name: 0 if the sidecar of `prefix` may be written: no
 * "<prefix>.json" exists, or it is a sidecar (which a new dataset
 * replaces).  DS_EINVAL if another file has that name (a user's JSON):
 * err says so and suggests another prefix.  Writers call it before
 * writing anything. */
int ds_meta_check_name(const char *prefix, struct ds_err *err);

/* ds_meta_remove: remove the sidecar of `prefix` if there is one (a
 * dataset being replaced loses its old record before its new files are
 * renamed into place, so that no sidecar ever describes other files).
 * Returns 0 or DS_EIO. */
int ds_meta_remove(const char *prefix, struct ds_err *err);

/* ds_meta_stale: whether m (read for `prefix`) describes other files
 * than the dataset there now: the token file that ds_open() would map
 * (the .npy pair if both exist, else the .bin) does not hold
 * m->n_tokens tokens of m->dtype.  Cheap: one stat(), nothing opened.
 * Returns 1 (stale; err says why, naming the files), 0 (fresh) or
 * DS_EIO (no token file). */
int ds_meta_stale(const char *prefix, const struct ds_meta *m,
                  struct ds_err *err);

/* Fields of ds_meta_compare(), or'ed. */
#define DS_META_TOKENIZER 1u /* WordPiece ("ernie", "bert") or gpt2-bpe */
#define DS_META_VOCAB     2u /* vocab_size, vocab_sha256, merges_sha256 */
#define DS_META_OPTIONS   4u /* lowercase ... keep_whitespace */
#define DS_META_ALL       7u

/* ds_meta_compare: compare the `fields` of a and b that both record.
 * "ernie" and "bert" are the same kind of tokenizer here: they differ in
 * how text is split, not in what an id means.  Returns 0 if they agree,
 * else 1 with the first difference in diff[0..len) as "<field>: <a's>
 * vs <b's>" (e.g. "tokenizer: ernie vs gpt2-bpe"). */
int ds_meta_compare(const struct ds_meta *a, const struct ds_meta *b,
                    unsigned fields, char *diff, size_t len);

/* ds_meta_file_sha256: the SHA-256 of the file at path, in lowercase hex
 * (what sha256sum prints).  Returns 0, DS_EIO or DS_ENOMEM. */
int ds_meta_file_sha256(const char *path, char hex[DS_META_HEX],
                        struct ds_err *err);

/* ds_meta_combine: fold input `in` into the sidecar `acc` of a merge:
 * the fields that are not compared and differ become unrecorded; the
 * counts are left to the caller.  Call it after ds_meta_compare() found
 * them equal (the compared fields of acc stay as they are). */
void ds_meta_combine(struct ds_meta *acc, const struct ds_meta *in);

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */

/* An open dataset: N sentences in M-1 documents, T tokens.  Immutable once
 * open: any number of threads may read it at once. */
struct ds_dataset;

/* ds_open: open the dataset `prefix`, detecting its format as PaddleNLP's
 * make_dataset does: if <prefix>_ids.npy and <prefix>_idx.npz both exist it
 * is DS_FORMAT_NPY, else <prefix>.idx + <prefix>.bin (DS_FORMAT_MMAP).  The
 * token file is mapped read-only; the .idx is mapped; the .npz is read into
 * memory (as numpy does).  Every header field is checked against the file
 * sizes and every index array is checked for consistency (see ds-mmap(5)
 * and ds-npy(5)); the token dtype is the file's.  Free with ds_close().
 * Returns 0, DS_EIO (a file is missing or unreadable), DS_EFORMAT (err
 * names the file and the field) or DS_ENOMEM. */
int ds_open(struct ds_dataset **out, const char *prefix, struct ds_err *err);

/* ds_close: unmap and free; NULL is a no-op. */
void ds_close(struct ds_dataset *d);

enum ds_format ds_dataset_format(const struct ds_dataset *d);
enum ds_dtype ds_dataset_dtype(const struct ds_dataset *d);
uint64_t ds_dataset_n_sentences(const struct ds_dataset *d);
/* ds_dataset_n_documents: M - 1, where M is the length of doc_idx. */
uint64_t ds_dataset_n_documents(const struct ds_dataset *d);
uint64_t ds_dataset_n_tokens(const struct ds_dataset *d);

/* ds_sentence_len: the number of tokens of sentence i (sizes[i]), or 0 if
 * i >= ds_dataset_n_sentences(). */
uint32_t ds_sentence_len(const struct ds_dataset *d, uint64_t i);

/* ds_sentence_start: the position of sentence i's first token, in tokens
 * (elements, not bytes), or 0 if i >= ds_dataset_n_sentences(). */
uint64_t ds_sentence_start(const struct ds_dataset *d, uint64_t i);

/* ds_prefetch_sentence, ds_prefetch_tokens: hints that sentence i's size
 * and start, or the n tokens at position pos, will be read soon (for loops
 * that fetch many samples; they never fault and need no check). */
void ds_prefetch_sentence(const struct ds_dataset *d, uint64_t i);
void ds_prefetch_tokens(const struct ds_dataset *d, uint64_t pos, size_t n);

/* ds_document_first: doc_idx[k], the first sentence of document k, for k in
 * 0..ds_dataset_n_documents() inclusive (the last is N); 0 past that. */
uint64_t ds_document_first(const struct ds_dataset *d, uint64_t k);

/* ds_read_tokens: copy the n tokens at positions pos..pos+n-1 to out as
 * int32.  Returns 0; DS_ERANGE if the range passes the end (err names it),
 * or if a stored value does not fit int32 (uint32, int64 or uint64 files;
 * err names its position); out is then partly written.  Thread-safe. */
int ds_read_tokens(const struct ds_dataset *d, uint64_t pos, size_t n,
                   int32_t *out, struct ds_err *err);

/* ds_dataset_tokens: the mapped token array, ds_dataset_n_tokens() elements
 * of ds_dataset_dtype() in little-endian byte order, for fast paths; NULL
 * for a dataset without tokens.  Valid until ds_close().  It is aligned to
 * the element size for every file that numpy, PaddleNLP or this library
 * writes (the .bin is mapped from offset 0; an .npy's data starts at a
 * multiple of 16 or 64), not for a hand-made .npy with an odd header
 * length. */
const void *ds_dataset_tokens(const struct ds_dataset *d);

/* ------------------------------------------------------------------------ */
/* ERNIE samples                                                             */

/* One ERNIE pre-training sample as PaddleNLP's ErnieDataset.__getitem__
 * builds it (ernie_dataset.py build_training_sample with dataset_utils.py
 * create_masked_lm_predictions, to_chinese_char=True): a sentence-order
 * pair [CLS] A [SEP] B [SEP] (A and B swapped half the time), truncated to
 * the target length, with whole-word n-gram masking (80% [MASK], 10% kept,
 * 10% a random base-vocab id) and "##<CJK char>" pieces shown to the model,
 * and used as labels, as their bare characters.  Every random draw is
 * numpy's RandomState((seed + idx) mod 2^32), in PaddleNLP's order, so a
 * sample is identical to PaddleNLP's for the same inputs. */

/* The largest max_ngrams accepted. */
#define DS_ERNIE_MAX_NGRAMS 128

struct ds_ernie_opts {
    uint32_t max_seq_len;   /* padded length (--max_seq_len, e.g. 512) */
    double masked_lm_prob;  /* e.g. 0.15; 0 disables masking */
    uint32_t max_ngrams;    /* 1..DS_ERNIE_MAX_NGRAMS (--max_ngrams, 3) */
    int favor_longer_ngram; /* n-gram weights 1/n reversed if nonzero */
    int geometric_ngram;    /* n = min(geometric(0.2), max_ngrams) instead
                               (SpanBERT; Megatron's geometric_dist) */
    int binary_head;        /* nonzero: SOP pairs; zero: MLM only, no B */
    int32_t cls_id, sep_id, mask_id, pad_id;
    uint64_t seed; /* sample idx uses RandomState((seed + idx) mod 2^32) */
};

/* A sample context: the options plus the vocabulary tables.  Immutable
 * once made: any number of threads may build samples with it at once. */
struct ds_ernie_ctx;

/* ds_ernie_ctx_new: make a context from opts and the vocabulary as
 * PaddleNLP's ErnieDataset sees it: tokens[0..n_tokens-1] are the UTF-8
 * strings of ids 0..n_tokens-1, the base vocab first (ids 0..n_base-1,
 * where random replacements are drawn) and then the added "##" tokens of
 * extend_chinese_char().  The strings are not kept.  Where a string occurs
 * twice, the higher id is the one "##x" -> "x" maps to (dict update order).
 * Free with ds_ernie_ctx_free().  Returns 0, DS_EINVAL (err names the bad
 * option: max_seq_len < 3, masked_lm_prob outside [0,1], max_ngrams out of
 * range, n_base == 0 or > n_tokens, a special id outside the vocab) or
 * DS_ENOMEM. */
int ds_ernie_ctx_new(struct ds_ernie_ctx **out,
                     const struct ds_ernie_opts *opts,
                     const char *const *tokens, size_t n_tokens, size_t n_base,
                     struct ds_err *err);

/* ds_ernie_ctx_free: free; NULL is a no-op. */
void ds_ernie_ctx_free(struct ds_ernie_ctx *ctx);

/* The caller's buffers for one sample, max_seq_len entries each, made by
 * ds_ernie_sample_init() for one context and reused for every sample (no
 * allocation per sample).  One per thread. */
struct ds_ernie_sample {
    int32_t *input_ids;        /* n_tokens ids, then pad_id */
    int32_t *token_type_ids;   /* 0 (A) / 1 (B), then pad_id as PaddleNLP */
    int32_t *masked_positions; /* n_masked positions, ascending */
    int32_t *masked_labels;    /* n_masked label ids, same order */
    uint8_t *loss_mask;        /* 1 at masked positions, else 0 */
    uint32_t n_tokens;         /* real tokens; input_mask is 0 on these */
    uint32_t n_masked;
    int is_random; /* 1: A and B were swapped (next_sentence_label) */
    int truncated; /* 1: tokens were cut to reach the target length */
    void *work;    /* private scratch */
};

/* ds_ernie_sample_init: allocate s's buffers for ctx.  Returns 0 or
 * DS_ENOMEM (s then holds NULLs and may be released). */
int ds_ernie_sample_init(struct ds_ernie_sample *s,
                         const struct ds_ernie_ctx *ctx, struct ds_err *err);

/* ds_ernie_sample_release: free s's buffers and zero it; harmless twice. */
void ds_ernie_sample_release(struct ds_ernie_sample *s);

/* ds_ernie_sample_build: build sample idx from sentences
 * start..end-1 of d (a samples-mapping row (start, end, target_seq_len))
 * into out.  idx is the index within its split dataset (with blending, the
 * dataset_sample_index), which seeds the draws.  Returns 0; DS_EINVAL if
 * the range is empty, if binary_head and it has fewer than 2 sentences,
 * if target_seq_len > max_seq_len, or if the first segment is empty;
 * DS_ERANGE if the range passes the end of d, a token id is outside the
 * vocabulary, or the sample does not fit max_seq_len (target_seq_len >
 * max_seq_len - 3 with a B segment); err says which.  out is then
 * unspecified.  Thread-safe for distinct out. */
int ds_ernie_sample_build(const struct ds_ernie_ctx *ctx,
                          const struct ds_dataset *d, uint64_t start,
                          uint64_t end, uint32_t target_seq_len, uint64_t idx,
                          struct ds_ernie_sample *out, struct ds_err *err);

/* ds_ernie_sample_build_ids: the same from sentences in memory: n_sent
 * sentences of sent_lens[i] ids each, stored back to back in ids. */
int ds_ernie_sample_build_ids(const struct ds_ernie_ctx *ctx,
                              const int32_t *ids, const uint32_t *sent_lens,
                              size_t n_sent, uint32_t target_seq_len,
                              uint64_t idx, struct ds_ernie_sample *out,
                              struct ds_err *err);

/* ------------------------------------------------------------------------ */
/* Training samples: RNGs, split, mapping, blending                         */
/*
 * The index layer under the ERNIE and GPT samples, identical to PaddleNLP
 * (ernie-data.md 7.1-7.4): the C++ standard's Mersenne Twisters, numpy's
 * legacy RandomState primitives, the document split of --split, the
 * samples mapping of helpers.cpp::build_mapping with its cached .npy file
 * (5.6), and the blending indices of helpers.cpp::build_blending_indices.
 */

/* MT19937 as std::mt19937(seed) and numpy's RandomState(seed) (both use
 * init_genrand); numpy.random.MT19937(seed) seeds differently (through
 * SeedSequence) and gives another stream. */
struct ds_mt32 {
    uint32_t mt[624];
    unsigned pos;
};

/* MT19937-64 as std::mt19937_64(seed). */
struct ds_mt64 {
    uint64_t mt[312];
    unsigned pos;
};

void ds_mt32_init(struct ds_mt32 *g, uint32_t seed);
uint32_t ds_mt32_next(struct ds_mt32 *g);
void ds_mt64_init(struct ds_mt64 *g, uint64_t seed);
uint64_t ds_mt64_next(struct ds_mt64 *g);

/* numpy's legacy RandomState primitives on a ds_mt32 seeded with
 * ds_mt32_init(g, seed) = RandomState(seed), for seed in 0..2^32-1.
 *
 * ds_rs_random: random_sample(), a double in [0, 1) from two draws (53 bits).
 * ds_rs_bounded: a uniform integer in [0, r] by masked rejection, as
 *   randint and shuffle draw it: no draw for r == 0; 32-bit draws for
 *   r < 2^32; two draws (high word first) per try above.
 * ds_rs_randint: randint(lo, hi) for int64 (hi exclusive, lo < hi):
 *   lo + bounded(hi - 1 - lo).
 * ds_rs_shuffle: shuffle(x) of n items of `size` bytes at base (a 1-D array
 *   or a list): for i = n-1 down to 1 swap items i and bounded(i).
 * ds_rs_choice: the index choice(n, p=p) returns (one random_sample(),
 *   also for n == 1; searchsorted on the cumulative sum normalized by its
 *   last element); with p == NULL, randint(0, n).  n >= 1; p is not
 *   checked as numpy checks it (non-negative, sums to 1).
 * ds_rs_geometric: geometric(p), a count >= 1, 0 < p <= 1, from one
 *   random_sample(): for p >= 1/3 the first X whose cumulative probability
 *   reaches it, else ceil(log(1 - u) / log(1 - p)) (numpy's two methods). */
double ds_rs_random(struct ds_mt32 *g);
uint64_t ds_rs_bounded(struct ds_mt32 *g, uint64_t r);
int64_t ds_rs_randint(struct ds_mt32 *g, int64_t lo, int64_t hi);
void ds_rs_shuffle(struct ds_mt32 *g, void *base, size_t n, size_t size);
size_t ds_rs_choice(struct ds_mt32 *g, const double *p, size_t n);
int64_t ds_rs_geometric(struct ds_mt32 *g, double p);

/* ds_split_indices: PaddleNLP's get_train_valid_test_split_(s, n_docs): s
 * is "949,50,1" (or "949/50/1", or one number), padded with zeros to three
 * weights (extra ones ignored), normalized; each boundary adds
 * round-half-even(f * n_docs), and the excess over n_docs is taken off
 * boundaries 1..3.  out[0..4) are document indices: split k holds
 * documents out[k]..out[k+1]-1 (none if out[k+1] <= out[k]).  Returns 0;
 * DS_EINVAL (err says why) for an unparsable or negative weight or a zero
 * sum; DS_ERANGE when a boundary comes out negative (odd weights such as
 * "0,1,1" on 3 documents; out still holds Python's values). */
int ds_split_indices(const char *s, int64_t n_docs, int64_t out[4],
                     struct ds_err *err);

/* Parameters of a samples mapping (helpers.cpp::build_mapping). */
struct ds_mapping_params {
    uint64_t max_num_samples; /* stop at the first epoch end with >= this */
    int32_t num_epochs;       /* 2^31-2 (DS_MAPPING_EPOCHS_ANY): unbounded */
    int32_t max_seq_len;      /* L: the trainer's max_seq_len - 3; >= 2 */
    double short_seq_prob;    /* in [0, 1] */
    int32_t seed;
    int32_t min_num_sent; /* 2 with binary_head (SOP), else 1 */
};

#define DS_MAPPING_EPOCHS_ANY 2147483646

/* A document of two or more sentences with a sentence longer than this
 * (in tokens) yields no sample (build_mapping's LONG_SENTENCE_LEN). */
#define DS_MAPPING_LONG_SENTENCE 512

/* A samples mapping: n rows (start sentence, end sentence exclusive,
 * target length), shuffled, of uint32 (DS_DTYPE_UINT32) or uint64. */
struct ds_mapping;

/* ds_mapping_build: build the mapping of the documents docs[0..n_docs]
 * (n_docs + 1 absolute sentence indices into sizes[0..n_sizes)), exactly
 * as build_mapping: short targets, documents with a sentence over 512
 * tokens skipped (when they have 2+ sentences), whole epochs, the final
 * MT19937-64 shuffle.  Rows are uint32 if n_sizes < 2^32, else uint64.
 * Returns 0, DS_EINVAL (bad parameter, docs out of order or out of sizes,
 * or no document yields a sample: err says which) or DS_ENOMEM. */
int ds_mapping_build(struct ds_mapping **out, const int64_t *docs,
                     size_t n_docs, const int32_t *sizes, size_t n_sizes,
                     const struct ds_mapping_params *p, struct ds_err *err);

/* ds_mapping_cache_name: the malloc'd file name of 5.6,
 * "<prefix>_<split>_indexmap[_<E>ep]_<S>mns_<L>msl_<P>ssp_<seed>s.npy"
 * (_<E>ep only for a bounded num_epochs), or NULL when out of memory. */
char *ds_mapping_cache_name(const char *prefix, const char *split,
                            const struct ds_mapping_params *p);

/* ds_mapping_save: write m to path as np.save does ((n, 3) C order), via
 * "<path>.tmp.<pid>" and a rename, so readers never see a partial file.
 * Returns 0 or DS_EIO. */
int ds_mapping_save(const struct ds_mapping *m, const char *path,
                    struct ds_err *err);

/* ds_mapping_load: map the .npy at path (written by us or by numpy) and
 * check it against the data it indexes: the NPY header ('<u4' or '<u8' as
 * n_sizes requires, shape (n, 3)), the file length, and every row (start
 * < end within one document of docs, target in [2, L], or L when
 * short_seq_prob is 0), and n >= max_num_samples for an unbounded epoch
 * count.  Returns 0, DS_EIO (cannot open), DS_EFORMAT (stale, corrupt or
 * truncated: err names the file and the first fault) or DS_ENOMEM. */
int ds_mapping_load(struct ds_mapping **out, const char *path,
                    const int64_t *docs, size_t n_docs, size_t n_sizes,
                    const struct ds_mapping_params *p, struct ds_err *err);

/* ds_mapping_get: ds_mapping_load() of ds_mapping_cache_name(prefix,
 * split, p) if it is valid, else ds_mapping_build() and ds_mapping_save()
 * (replacing a stale or corrupt file).  *built says which (may be NULL).
 * The build happens once per node: a miss takes an exclusive flock(2) on
 * "<name>.lock" (created 0644, removed by the builder), loads again (another
 * process may have just built it) and builds and saves only if still
 * missing or stale; processes that waited load its file (*built 0).
 * Where no lock can be had (directory not writable, flock() failing with
 * ENOLCK or EOPNOTSUPP), each builds unlocked, and the rename keeps the
 * file whole.  Returns as the two calls. */
int ds_mapping_get(struct ds_mapping **out, const char *prefix,
                   const char *split, const int64_t *docs, size_t n_docs,
                   const int32_t *sizes, size_t n_sizes,
                   const struct ds_mapping_params *p, int *built,
                   struct ds_err *err);

uint64_t ds_mapping_n(const struct ds_mapping *m);
enum ds_dtype ds_mapping_dtype(const struct ds_mapping *m);
/* ds_mapping_rows: the 3 * n elements of ds_mapping_dtype(), host order
 * (little-endian). */
const void *ds_mapping_rows(const struct ds_mapping *m);
/* ds_mapping_row: row i (i < n) as three uint64. */
void ds_mapping_row(const struct ds_mapping *m, uint64_t i, uint64_t row[3]);
/* ds_mapping_free: unmap or free; NULL is a no-op. */
void ds_mapping_free(struct ds_mapping *m);

/* ds_blend_counts: the samples to request from each of n datasets for a
 * total of `total`: w_i / sum(w) (sequential sum), then
 * ceil(total * w_i * 1.005) (PaddleNLP's over-request).  Returns 0 or
 * DS_EINVAL (a negative or non-finite weight, a zero sum, a count beyond
 * 2^63). */
int ds_blend_counts(const double *weights, size_t n, uint64_t total,
                    uint64_t *counts, struct ds_err *err);

/* ds_blend_normalize: w /= np.sum(w) in place (numpy's pairwise sum from
 * 8 weights on), as BlendableDataset does.  Returns 0 or DS_EINVAL (a
 * zero or non-finite sum). */
int ds_blend_normalize(double *w, size_t n, struct ds_err *err);

/* ds_blend_build: build_blending_indices for `size` samples over n
 * datasets with the (normalized) weights w: sample s comes from the
 * dataset whose w_i * max(s, 1) - taken_i is largest (the first on ties),
 * as its next sample.  dataset_index[s] and dataset_sample_index[s] for s
 * < size.  Returns 0 or DS_EINVAL (n == 0 or n > 32767). */
int ds_blend_build(const double *w, size_t n, uint64_t size,
                   uint16_t *dataset_index, int64_t *dataset_sample_index,
                   struct ds_err *err);

/* ------------------------------------------------------------------------ */
/* GPT samples                                                               */

/* The samples of a GPT split, as paddlenlp.data.causal_dataset.GPTDataset
 * (2.8; after Megatron's gpt_dataset.py) builds them: every item of the
 * dataset is a document; doc_idx repeats the split's documents once an
 * epoch, for as many epochs as num_samples windows need, shuffled with
 * numpy's RandomState(seed) (the last epoch on its own when it would give
 * fewer than 80% of an epoch's samples); sample_idx cuts doc_idx into
 * windows of seq_len + 1 tokens that overlap by one; shuffle_idx orders
 * them.  Sample i is window shuffle_idx[i].  See libdata(3).
 *
 * Immutable once built: any number of threads may call ds_gpt_sample() at
 * once. */
struct ds_gpt;

/* The cache of the three arrays: the files PaddleNLP 2.8 reads and writes,
 * <dir>/<md5>.dsc, <md5>_doc_idx.npy, <md5>_sample_idx.npy and
 * <md5>_shuffle_idx.npy, where md5 is that of its description text (data
 * prefix, name, num_samples, seq_len, seed, split).  The strings must be
 * the ones the trainer gives GPTDataset for the two sides to share files. */
struct ds_gpt_cache {
    const char *dir;         /* NULL: dirname(data_prefix)/index-cache;
                                else read from there too, built in dir */
    const char *data_prefix; /* the dataset's prefix as the trainer names it */
    const char *name;        /* "train", "valid" or "test" */
    const char *split;       /* the --split string, e.g. "949,50,1" */
};

/* ds_gpt_build: the samples of the split documents[0..n_docs) (item
 * numbers of d, e.g. split_start..split_end-1) for num_samples samples of
 * seq_len + 1 tokens.  With a cache, complete files whose arrays fit d
 * and the parameters are read (see ds_gpt_from_cache()); otherwise, or if
 * they are corrupt or stale, the arrays are built and written there, each
 * file as a temporary renamed into place (the directory is created).
 * With dir set, complete files in dirname(data_prefix)/index-cache are
 * read too, as PaddleNLP's and Megatron-LM's data_cache_path (those
 * look there first); a miss builds in dir.
 * Once per node: a miss takes an exclusive flock(2) on "<md5>.dsc.lock"
 * (created 0644, removed by the builder), reads the cache again and builds only if
 * it is still missing or stale; processes that waited read the files the
 * first one wrote (ds_gpt_from_cache() 1).  Where no lock can be had
 * (directory not writable, flock() failing with ENOLCK or EOPNOTSUPP),
 * each builds unlocked, as ds_mapping_get().
 * Returns 0; DS_EINVAL (no documents, no tokens, seq_len 0, seed past
 * 2^32 - 1, an incomplete cache struct); DS_ERANGE (a document past d, or
 * more epochs or samples than PaddleNLP's int32 arrays hold); DS_EIO (the
 * cache cannot be written; err names the file); DS_ENOMEM. */
int ds_gpt_build(struct ds_gpt **out, const struct ds_dataset *d,
                 const uint64_t *documents, size_t n_docs, uint64_t num_samples,
                 uint32_t seq_len, uint64_t seed,
                 const struct ds_gpt_cache *cache, struct ds_err *err);

/* ds_gpt_free: free; NULL is a no-op. */
void ds_gpt_free(struct ds_gpt *g);

/* ds_gpt_n_samples: len(GPTDataset), the windows of all epochs, which is
 * at least num_samples. */
uint64_t ds_gpt_n_samples(const struct ds_gpt *g);
uint64_t ds_gpt_n_epochs(const struct ds_gpt *g);
/* 1 if the last epoch was shuffled separately, else 0. */
int ds_gpt_separate_last_epoch(const struct ds_gpt *g);
/* 1 if ds_gpt_build() read the arrays from the cache, else 0. */
int ds_gpt_from_cache(const struct ds_gpt *g);

/* The arrays, valid until ds_gpt_free(): doc_idx (*n = epochs x
 * documents), sample_idx (*n_rows = samples + 1 pairs of (position in
 * doc_idx, token offset)), shuffle_idx (*n = samples). */
const int32_t *ds_gpt_doc_idx(const struct ds_gpt *g, uint64_t *n);
const int32_t *ds_gpt_sample_idx(const struct ds_gpt *g, uint64_t *n_rows);
const uint64_t *ds_gpt_shuffle_idx(const struct ds_gpt *g, uint64_t *n);

/* ds_gpt_cache_hash: the md5 in the cache names, 32 hex digits and a NUL.
 * Returns 0, DS_EINVAL (a NULL string) or DS_ENOMEM. */
int ds_gpt_cache_hash(const struct ds_gpt_cache *c, uint64_t num_samples,
                      uint32_t seq_len, uint64_t seed, char out[33]);

/* ds_gpt_sample: the seq_len + 1 tokens of sample i (GPTDataset[i]
 * ["text"]) into tokens; d must be the dataset g was built on.  No
 * allocation; thread-safe.  Returns 0, DS_ERANGE (i >= n_samples, or a
 * token that does not fit int32). */
int ds_gpt_sample(const struct ds_gpt *g, const struct ds_dataset *d,
                  uint64_t i, int32_t *tokens, struct ds_err *err);

/* ds_gpt_samples: ds_gpt_sample() of samples idx[0..n), sample k into
 * tokens + k * (seq_len + 1).  The same bytes, faster: the index lookups
 * of several samples are issued together (each is a cache miss, and one
 * sample's lookups depend on each other).  Stops at the first error. */
int ds_gpt_samples(const struct ds_gpt *g, const struct ds_dataset *d,
                   const uint64_t *idx, size_t n, int32_t *tokens,
                   struct ds_err *err);

/* ------------------------------------------------------------------------ */
/* Training datasets                                                         */
/*
 * What the trainer reads: PaddleNLP's build_train_valid_test_datasets
 * (ernie-data.md 7.2) over one corpus or a weighted list of corpora.  Each
 * corpus is split by document (ds_split_indices), each split gets its
 * samples (ERNIE: ds_mapping_get; GPT: ds_gpt_build), and with a weight
 * list the splits are blended (ds_blend_*) as PaddleNLP blends them.  An
 * open corpus list is immutable: any number of threads may fetch samples
 * from it at once, each into its own struct ds_sample.
 */

enum ds_split { DS_SPLIT_TRAIN = 0, DS_SPLIT_VALID = 1, DS_SPLIT_TEST = 2 };

enum ds_corpus_kind { DS_CORPUS_ERNIE = 0, DS_CORPUS_GPT = 1 };

struct ds_corpus_opts {
    enum ds_corpus_kind kind;
    const char *split;          /* --split, e.g. "949,50,1"; NULL: that one */
    uint32_t max_seq_len;       /* ERNIE: the padded length; GPT: seq_len */
    uint64_t seed;              /* --seed (ERNIE: < 2^31; GPT: < 2^32) */
    double short_seq_prob;      /* ERNIE only, in [0, 1] */
    uint64_t n_samples[3];      /* requested train/valid/test counts (8.3) */
    const char *cache_dir;      /* NULL: PaddleNLP's places (see below) */
    struct ds_ernie_opts ernie; /* ERNIE only; max_seq_len, seed ignored */
};

/* The corpora of a --input_dir, as ds_corpus_list_parse() reads it. */
struct ds_corpus_list {
    size_t n;        /* corpora, at least 1 */
    char **prefixes; /* their dataset prefixes (owned) */
    double *weights; /* their weights as given; 1 where none is */
    int weighted;    /* blended: a weight list, or a directory of several */
    int from_dir;    /* the spec named a directory */
};

/* ds_corpus_list_parse: the corpora of PaddleNLP's --input_dir spec, each
 * checked to exist (both files of one of the two formats):
 *
 *   - a path that exists as given: a directory, or a dataset prefix
 *     (blanks and all);
 *   - "@FILE": the list held in FILE (the words below, any white space
 *     between them, '#' to the end of a line a comment);
 *   - otherwise words separated by blanks, quoted as a POSIX shell quotes
 *     them ('...' literal; "..." where \" and \\ are escapes; a backslash
 *     outside quotes escapes the next character): one word is a directory
 *     or a prefix; more are PaddleNLP's weight list "w1 prefix1 w2 prefix2
 *     ...", weights positive decimal numbers, prefixes not directories.
 *
 * A directory stands for every dataset in it, as PaddleNLP's
 * get_train_data_file() lists them: each "<base>.idx" with its
 * "<base>.bin" and each "<base>_idx.npz" with its "<base>_ids.npy" (one
 * prefix however many forms), sorted by name (byte order), the prefix
 * os.path.join(dir, base); one dataset is used alone, several are blended
 * with weight 1 each.  Release with ds_corpus_list_release() (also after
 * a failure).  Returns 0; DS_EINVAL (an empty spec or list file, an
 * unterminated quote, a weight that is not a positive number, a weight
 * without its prefix, a directory in a weight list, a directory without
 * datasets, more than 32767 corpora); DS_EIO (a dataset or a file of its
 * pair missing, an unreadable directory or list file: err names it);
 * DS_ENOMEM. */
int ds_corpus_list_parse(struct ds_corpus_list *l, const char *spec,
                         struct ds_err *err);

/* ds_corpus_list_release: free the list; a zeroed list is fine. */
void ds_corpus_list_release(struct ds_corpus_list *l);

/* A list of corpora opened for training. */
struct ds_corpus;

/* ds_corpus_open: open the corpora of spec and build every split.
 *
 * spec is PaddleNLP's --input_dir list, read by ds_corpus_list_parse():
 * one prefix ("data/wudao"), a directory of datasets, or "w1 prefix1 w2
 * prefix2 ...".  With a single prefix each split is that corpus's
 * samples.  With a weight list (even of one pair) the weights are
 * normalized (sequential sum), corpus i is built
 * with ceil(n_samples[k] * w_i * 1.005) samples for split k, and split k
 * is the blend (ds_blend_build, weights normalized again) of the corpora's
 * split k, of size: ERNIE, the sum of their mapping lengths; GPT, the
 * sum of the counts asked of the corpora, a little over n_samples[k]
 * (PaddleNLP 2.8's causal_dataset; newer PaddleNLP asks 20 more of each).  Blended sample s is sample
 * dataset_sample_index[s] of corpus dataset_index[s], which also seeds
 * its ERNIE masking.
 *
 * Each corpus is split as ds_split_indices(split, D) with D its documents
 * (ERNIE) or its items (GPT, where every item is a document).  A split
 * without documents has no dataset, as in PaddleNLP: its count is 0 and
 * ds_corpus_sample() on it returns DS_ERANGE; in a blend, a split present
 * in some corpora and missing from others is an error (PaddleNLP fails an
 * assertion there).  A split requested with 0 samples is not built either
 * (count 0; PaddleNLP raises "Need to specify either max_num_samples or
 * num_epochs").
 *
 * ERNIE: the mapping is ds_mapping_get() with max_num_samples
 * n_samples[k], unbounded epochs, L = max_seq_len - 3, min_num_sent 2
 * with ernie.binary_head else 1, cached as "<prefix>_<split>_indexmap_..."
 * beside the data; with cache_dir, a valid file beside the data is read,
 * and otherwise the file of the prefix's base name in cache_dir is read or
 * built (the directory is created, one level).  As in
 * build_mapping, a document with two or more sentences one of which is
 * longer than 512 tokens yields no sample (ds_corpus_n_skipped() counts
 * those, and the documents with too few sentences); a sentence longer
 * than max_seq_len - 3 in a kept document is cut by the truncation (the
 * sample's `truncated`).  vocab_tokens, n_tokens and n_base are as for
 * ds_ernie_ctx_new().  GPT: ds_gpt_build() with seq_len = max_seq_len,
 * cached in dirname(prefix)/index-cache or (read from there too) in
 * cache_dir; vocab_tokens may be NULL.  Before anything is built, what
 * interrupted builds left in those places is removed (ds_cache_clean():
 * lock files nobody holds, temporaries of processes gone); see
 * ds_corpus_n_stale().
 *
 * Free with ds_corpus_close().  Returns 0; DS_EINVAL (a bad spec: a
 * missing prefix after a weight, a weight that is not a positive number,
 * an empty spec; a bad option; a split string ds_split_indices()
 * rejects; a split in some corpora only; every document of a split
 * skipped; err names the corpus and split); DS_EIO or DS_EFORMAT (a
 * dataset file, from ds_open(); a cache that cannot be written);
 * DS_ERANGE; DS_ENOMEM. */
int ds_corpus_open(struct ds_corpus **out, const char *spec,
                   const struct ds_corpus_opts *opts,
                   const char *const *vocab_tokens, size_t n_tokens,
                   size_t n_base, struct ds_err *err);

/* ds_corpus_each_prefix: call fn(arg, prefix) for each corpus of spec,
 * in order, read as ds_corpus_open() reads it, without opening anything
 * (to check the datasets' sidecars before any work).  Stops at the first
 * nonzero return of fn and returns it; DS_EINVAL (a bad spec, as
 * ds_corpus_open()) or DS_ENOMEM before any call. */
int ds_corpus_each_prefix(const char *spec,
                          int (*fn)(void *arg, const char *prefix), void *arg,
                          struct ds_err *err);

/* ds_corpus_close: close the datasets and free; NULL is a no-op. */
void ds_corpus_close(struct ds_corpus *c);

/* ds_corpus_n_samples: the samples of split `which` (0 for a split that
 * has no dataset). */
uint64_t ds_corpus_n_samples(const struct ds_corpus *c, enum ds_split which);

/* ds_corpus_n_corpora: the number of prefixes in the spec. */
size_t ds_corpus_n_corpora(const struct ds_corpus *c);

/* ds_corpus_n_skipped: ERNIE: the documents of corpus i's split that
 * yield no sample (too few sentences, or a sentence over 512 tokens);
 * GPT: 0. */
uint64_t ds_corpus_n_skipped(const struct ds_corpus *c, size_t i,
                             enum ds_split which);

/* ds_corpus_n_built: how many of the per-corpus split indexes were built
 * by ds_corpus_open() rather than read from the cache. */
size_t ds_corpus_n_built(const struct ds_corpus *c);

/* ds_corpus_n_stale: how many stale lock files and temporaries of index
 * caches ds_corpus_open() removed. */
size_t ds_corpus_n_stale(const struct ds_corpus *c);

/* One fetched sample, in buffers the caller owns (one per thread, reused
 * for every sample).  kind says which part is filled. */
struct ds_sample {
    enum ds_corpus_kind kind;
    struct ds_ernie_sample ernie; /* ERNIE; is_random is the SOP label */
    int32_t *tokens;              /* GPT: n_tokens = max_seq_len + 1 ids */
    uint32_t n_tokens;
    uint32_t corpus;       /* the corpus it came from (0 if one) */
    uint64_t corpus_index; /* its index in that corpus's split */
};

/* ds_sample_init: allocate s's buffers for c.  Returns 0 or DS_ENOMEM (s
 * may then be released). */
int ds_sample_init(struct ds_sample *s, const struct ds_corpus *c,
                   struct ds_err *err);

/* ds_sample_release: free s's buffers and zero it; harmless twice. */
void ds_sample_release(struct ds_sample *s);

/* ds_corpus_sample: sample i of split `which` into out (made by
 * ds_sample_init() for c).  No allocation; thread-safe for distinct out.
 * Returns 0; DS_ERANGE (i >= ds_corpus_n_samples(), or a blended sample
 * past its corpus's samples, 7.4's missing wrap-around); the errors of
 * ds_ernie_sample_build() and ds_gpt_sample(). */
int ds_corpus_sample(const struct ds_corpus *c, enum ds_split which, uint64_t i,
                     struct ds_sample *out, struct ds_err *err);

/* A reading position: what the trainer checkpoints.  It counts samples
 * consumed by all data-parallel ranks together, so it stays valid when
 * the number of ranks changes.  After every micro-step (each rank having
 * read one micro-batch) consumed_samples grows by micro_batch * dp_world;
 * PaddleNLP resumes training at global_batch_size * global_step. */
struct ds_position {
    uint64_t consumed_samples;
    enum ds_split split;
};

/* ds_corpus_batch_indices: the global sample indices of rank dp_rank's
 * next micro-batch, PaddleNLP's DistributedBatchSampler order (7.8): the
 * stream from consumed_samples is cut into chunks of micro_batch *
 * dp_world and rank r takes [r * micro_batch, (r + 1) * micro_batch) of
 * the first chunk, into indices[0..micro_batch).  Returns 0; DS_EINVAL
 * (dp_world or micro_batch 0, dp_rank >= dp_world); DS_ERANGE when the
 * chunk passes the split's end (drop_last: the epoch is over). */
int ds_corpus_batch_indices(const struct ds_corpus *c,
                            const struct ds_position *pos, uint32_t dp_rank,
                            uint32_t dp_world, uint32_t micro_batch,
                            uint64_t *indices, struct ds_err *err);

#ifdef __cplusplus
}
#endif
#endif /* DS_H */
