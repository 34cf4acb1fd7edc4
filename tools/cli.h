/* SPDX-License-Identifier: MIT */
/*
 * cli.h: helpers shared by the command-line tools: number parsing, inputs
 * (plain or zstd, files or stdin), outputs written through a temporary file
 * and renamed, progress on stderr, and an ordered parallel pipeline that
 * processes an input in chunks of whole lines on N threads while writing
 * results in input order.
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tok.h"

#define EXIT_USAGE 2

/* cli_parse_u64: parse a decimal in [min, max]; no sign, no junk, no
 * overflow.  On error prints "<prog>: invalid <what> '<s>': ..." and exits
 * with EXIT_USAGE. */
uint64_t cli_parse_u64(const char *s, uint64_t min, uint64_t max,
                       const char *what);

/* cli_parse_choice: the index of s in the NULL-terminated names, or -1
 * after printing "<prog>: invalid <what> '<s>': use a, b or c" (the caller
 * then prints its usage and exits 2). */
int cli_parse_choice(const char *s, const char *what, const char *const *names);

/* cli_default_threads: the number of online CPUs (at least 1). */
unsigned cli_default_threads(void);

/* cli_print_version: "<tool> (<project>) X.Y.Z" on stdout. */
void cli_print_version(const char *tool);

/* Where the installed programs are (cli_path.c): cli_tooldir_rel is the
 * directory of the commands relative to the front command's (BINDIR to
 * LIBEXECDIR/erniekit: "../libexec/erniekit"), cli_datadir_rel the data
 * relative to the commands' ("../../share/erniekit"). */
extern const char cli_tooldir_rel[];
extern const char cli_datadir_rel[];

/* cli_exe_dir: the directory of the running program, from /proc/self/exe
 * (so with symbolic links resolved).  Returns a malloc'd path, or NULL
 * with errno set. */
char *cli_exe_dir(void);

/* cli_path_join: dir/rel, each leading "../" of rel taking the last
 * component off dir.  Returns a malloc'd path, or NULL when out of
 * memory. */
char *cli_path_join(const char *dir, const char *rel);

/* cli_vocab_load: tok_vocab_load(path), exiting with its message on
 * failure; unless quiet, a warning names each token the file repeats
 * (tok_vocab_repeats(): the later line's id wins, as in Hugging Face and
 * PaddleNLP, whose loaders say nothing). */
struct tok_vocab *cli_vocab_load(const char *path, bool quiet);

/* cli_mkdirs: make the directory dir and any missing parents (mkdir -p).
 * Returns 0, or -1 after a warning naming the one that could not be
 * made. */
int cli_mkdirs(const char *dir);

/* cli_jieba_model_path: the compiled jieba model to use: $SEGMENT_MODEL,
 * else jieba.model beside the running program (a build tree), else the
 * installed one, in cli_datadir_rel from the program (returned whether or
 * not it is there, so that the error names it).  Returns a malloc'd path,
 * or NULL with errno set. */
char *cli_jieba_model_path(void);

/* cli_jieba_open: the jieba segmenter of model (NULL: the one
 * cli_jieba_model_path() finds), with user_dict's words (NULL: none);
 * exits with the library's message on failure.  input_bytes is the
 * size of the input when known (0 if not): below CLI_JIEBA_COPY_MIN the
 * model is opened TOK_JIEBA_OPEN_MAPPED, its edge table read from the
 * mapping as it is (on the file's huge pages where the page cache has
 * them), since checking for those pages (which reads the whole table in)
 * or copying the table to huge pages (see jieba-model(5)) costs
 * milliseconds that a small input does not win back. */
#define CLI_JIEBA_COPY_MIN ((uint64_t)8 << 20)
struct tok_jieba *cli_jieba_open(const char *model, const char *user_dict,
                                 uint64_t input_bytes);

/* cli_lac_model_path: the compiled LAC model to use (lac-model(5)):
 * $LAC_MODEL, else lac.model beside the running program, else the
 * installed one, as cli_jieba_model_path().  NULL with errno set. */
char *cli_lac_model_path(void);

/* cli_lac_open: the LAC model (NULL: the one cli_lac_model_path() finds),
 * with only network `mode` checked and mapped, and user_dict (NULL: none)
 * loaded as LAC's load_customization(); exits with the library's message
 * on failure. */
struct tok_lac *cli_lac_open(const char *model, const char *user_dict,
                             enum tok_lac_mode mode);

/* Which segmenter a tool runs: jieba, or LAC with one of its networks. */
struct cli_segmenter {
    bool lac;
    enum tok_lac_mode lac_mode;
};

/* cli_parse_seg_func: the seed's --cn_seg_func: "jieba", "lac" (LAC's lac
 * network) or "seg" (its seg network).  0, or -1 after a message (the
 * caller prints its usage and exits 2). */
int cli_parse_seg_func(const char *s, struct cli_segmenter *seg);

/* The segmenter flags segment and create-pretraining-data share:
 * --engine jieba|lac, --lac-mode seg|lac (LAC's networks; it implies
 * lac) and the seed's --cn-seg-func jieba|lac|seg, as getopt_long()
 * entries (CLI_SEGMENTER_OPTIONS, their values above any tool's own).
 * cli_segmenter_flag(): whether opt was one of them (1), taken into f;
 * -1 after a message (the caller prints its usage and exits 2); 0 if it
 * is another flag.  cli_segmenter_done(): the segmenter they give, once
 * every flag is read (0, or -1 after a message: --lac-mode with --engine
 * jieba). */
enum { CLI_OPT_ENGINE = 0x1000, CLI_OPT_LAC_MODE, CLI_OPT_CN_SEG_FUNC };
#define CLI_SEGMENTER_OPTIONS                                       \
    { "engine", required_argument, NULL, CLI_OPT_ENGINE },          \
        { "lac-mode", required_argument, NULL, CLI_OPT_LAC_MODE },  \
    {                                                               \
        "cn-seg-func", required_argument, NULL, CLI_OPT_CN_SEG_FUNC \
    }
struct cli_segmenter_flags {
    struct cli_segmenter seg; /* jieba until a flag says otherwise */
    int engine;               /* --engine: -1 not given, 0 jieba, 1 lac */
    bool mode;                /* LAC's network given */
};
int cli_segmenter_flag(struct cli_segmenter_flags *f, int opt, const char *arg);
int cli_segmenter_done(struct cli_segmenter_flags *f);

/* cli_segmenter_name: "jieba", "lac-seg" or "lac-lac" (the sidecar's
 * name of it, ds-meta(5)). */
const char *cli_segmenter_name(const struct cli_segmenter *seg);

/* cli_stored_bytes: the summed size of the NULL-terminated list of
 * inputs ("-": standard input) as stored, compressed or not, if every
 * one is a regular file, else 0 (unknown). */
uint64_t cli_stored_bytes(char *const *files);

/* cli_plain_bytes: the summed size of the inputs named by argv[0..argc)
 * (none, or "-": standard input) if every one is a regular file and none
 * a .zst, else 0 (unknown). */
uint64_t cli_plain_bytes(int argc, char *const *argv);

/* ------------------------------------------------------------------------ */
/* Sentence breaks by ICU (cli_icu.c)                                        */

/* ICU's sentence break iterator; ICU itself is loaded on first use (see
 * cli_icu.c).  cli_sentences_new exits with a message if ICU cannot be
 * loaded or the iterator opened; make one per thread. */
struct cli_sentences;
struct cli_sentences *cli_sentences_new(void);

/* cli_sentences_each: call fn(ctx, start, end) for each sentence
 * text[start..end) of text[0..len), in order, until fn returns non-zero.
 * Returns fn's last result, -1 if ICU fails, or CLI_SENTENCES_TOO_LONG if
 * len is over ICU's 32-bit offsets (2 GiB). */
#define CLI_SENTENCES_TOO_LONG (-3)
#define CLI_SENTENCES_TOO_LONG_MSG \
    "a document of %zu bytes: ICU's sentence breaks reach 2 GiB at most"
int cli_sentences_each(struct cli_sentences *s, const char *text, size_t len,
                       int (*fn)(void *ctx, size_t start, size_t end),
                       void *ctx);

/* cli_sentences_free: NULL is a no-op. */
void cli_sentences_free(struct cli_sentences *s);

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

struct cli_input;

/* cli_input_open: open path ("-" is stdin).  zstd-compressed data is
 * recognised by its magic number and decompressed on the fly.  Returns NULL
 * after printing a warning. */
struct cli_input *cli_input_open(const char *path);

/* cli_input_read: read up to n bytes.  Returns the count, 0 at the end, or
 * -1 after printing a warning naming the input. */
long cli_input_read(struct cli_input *in, char *buf, size_t n);

/* cli_input_stored_bytes: the bytes read from the file so far, as
 * stored: the compressed ones of zstd data. */
uint64_t cli_input_stored_bytes(const struct cli_input *in);

/* cli_input_name: the name used in messages ("<stdin>" for "-"). */
const char *cli_input_name(const struct cli_input *in);

/* cli_input_json_array: read the input as one JSON array (WuDao's
 * layout) and hand out each element as one line of JSON: newlines inside an
 * element become spaces, the array's brackets and commas go.  A malformed
 * array is an error naming the line.  Call right after cli_input_open(). */
void cli_input_json_array(struct cli_input *in);

/* cli_input_close: NULL is a no-op. */
void cli_input_close(struct cli_input *in);

/* ------------------------------------------------------------------------ */
/* Input lists (cli_files.c)                                                 */

/* A tool's input files; v is NULL-terminated (for cli_run_files). */
struct cli_files {
    char **v;
    size_t n, cap;
    uint64_t total_bytes; /* sum of sizes as stored, 0 unless all are
                           * regular files */
};

/* Why a file a directory holds is not an input of the tool (such as "not
 * *.jsonl"), or NULL if it is. */
typedef const char *(*cli_skip_fn)(const char *path);

/* cli_files_expand: each argument as given, except that a directory
 * stands for the files under it, recursively, sorted by path, that skip()
 * keeps (skip NULL: all); unless quiet, the files a directory gives are
 * named ("'<dir>': N files: a, b, ..."), the others reported as
 * "'<path>': <why>, skipped", and a directory without one as "'<dir>': no
 * <kind>files".  Two inputs that are one corpus plain and
 * zstd-compressed ("x.jsonl" and "x.jsonl.zst") are an error.  Sets
 * total_bytes (cli_stored_bytes) when every input is a regular file.
 * Returns 0, or 1 after a warning (an unreadable directory, such a
 * pair); exits when out of memory. */
int cli_files_expand(struct cli_files *f, int argc, char *const *argv,
                     cli_skip_fn skip, const char *kind, bool quiet);
void cli_files_add(struct cli_files *f, const char *path);
void cli_files_release(struct cli_files *f);

/* One of n parts of a tool's inputs (--shard i/n), for a cluster job of
 * n tasks that each take one; n 0: all the inputs. */
struct cli_shard {
    unsigned i, n;
};
#define CLI_SHARDS_MAX 65536

/* cli_shard_parse: "i/n" with 0 <= i < n <= CLI_SHARDS_MAX (Slurm's
 * $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); false after a message
 * naming --shard (the caller prints its usage and exits 2). */
bool cli_shard_parse(const char *s, struct cli_shard *sh);

/* cli_files_shard: keep shard sh of the inputs f, in their order: the
 * list cut into sh->n runs of whole files of about equal stored size
 * (each file in the run that holds its middle byte, every run at least
 * one file), so that the shards' outputs, one after another, are the
 * output of all the inputs, whatever n is.  Every input must be a file
 * (standard input cannot be dealt out), and there must be at least n.
 * Unless quiet, names the files of the shard.  Sets total_bytes.
 * Returns 0, or 2 after a message (a usage error: every task of the job
 * fails alike).  sh->n 0: nothing to do. */
int cli_files_shard(struct cli_files *f, const struct cli_shard *sh,
                    bool quiet);

/* cli_is_json_name: is path named as JSON or JSONL (*.jsonl, *.json,
 * plain or .zst), Megatron-LM's examples calling JSONL *.json? */
bool cli_is_json_name(const char *path);

/* cli_ends_with: does s end with suffix? */
bool cli_ends_with(const char *s, const char *suffix);

/* ------------------------------------------------------------------------ */
/* Outputs                                                                   */

/* An output file written as "<path>.tmp.<pid>" and renamed on commit, so an
 * interrupted run never leaves a file that looks complete.  "-" or NULL is
 * stdout, which is written directly.  A path ending in ".zst" is written
 * zstd-compressed. */
struct cli_output {
    /* When set, bytes go to sink(sink_ctx, p, n) (returning 0, or -1 after
     * a warning) instead of a file, and commit/abort only forget it: for
     * tools whose output is not one byte stream (cli_output_sink). */
    int (*sink)(void *sink_ctx, const void *p, size_t n);
    void *sink_ctx;
    FILE *fp;
    char *path;     /* final name, NULL for stdout */
    char *tmp_path; /* temporary name, NULL for stdout; path itself when
                     * in_place */
    bool in_place;  /* path is a device or FIFO, written directly */
    void *zcs;      /* ZSTD_CStream when compressing */
    char *zbuf;
    size_t zcap;
};

/* cli_output_write: write n bytes; returns 0 or -1 after a warning. */
int cli_output_write(struct cli_output *o, const void *p, size_t n);

/* cli_output_open: open path ("-" or NULL: stdout) for writing, through a
 * temporary file beside it that commit renames into place; a path that
 * is a device or a FIFO is written directly.  Exits with status 1 (after
 * a message) on failure. */
void cli_output_open(struct cli_output *o, const char *path);

/* cli_output_commit: flush, check, close and rename; returns 0, or -1 after
 * a warning (the temporary file is removed). */
int cli_output_commit(struct cli_output *o);

/* cli_output_abort: close and remove the temporary file. */
void cli_output_abort(struct cli_output *o);

/* cli_output_sink: an output that hands every write to fn. */
void cli_output_sink(struct cli_output *o,
                     int (*fn)(void *ctx, const void *p, size_t n), void *ctx);

/* ------------------------------------------------------------------------ */
/* Progress                                                                  */

/* One progress line for every tool: "<prog>: 45%, 12.3 MB, 8123
 * documents, 5.1 MB/s, ETA 0:03", redrawn in place on a terminal (a few
 * times a second) or added as a line every 10 s elsewhere (a log), and a
 * summary line at the end ("<prog>: 27.2 MB, 12345 documents in 0:05
 * (5.1 MB/s, 2469 documents/s)").  The share and the ETA come from the
 * bytes of the inputs as stored (the compressed bytes of a .zst) when
 * their total is known (for a tool that reports no input to it, merge,
 * from the bytes counted).  $ERNIEKIT_PROGRESS_INTERVAL sets the seconds
 * between lines. */
struct cli_progress {
    bool on;          /* draw at all (-P, or stderr is a terminal) */
    bool tty;         /* stderr is a terminal: redraw in place */
    bool drawn;       /* a line is on the terminal without a newline */
    const char *unit; /* what the records are (default "records") */
    double t_start, t_last, interval;
    uint64_t bytes; /* bytes read (after decompression) */
    uint64_t total; /* the inputs' stored size, 0 if unknown (no ETA) */
    uint64_t done;  /* stored bytes of the inputs finished */
    const struct cli_input *in; /* the input being read, or NULL */
    bool has_inputs;            /* cli_progress_input() was called */
    uint64_t records;           /* records done */
    uint64_t log_every;         /* also a log line every N records (0: none) */
    uint64_t next_log;
};

/* cli_progress_init: start the clock; draw only if on. */
void cli_progress_init(struct cli_progress *p, bool on);
/* cli_progress_add: count bytes read and redraw when it is time. */
void cli_progress_add(struct cli_progress *p, uint64_t bytes);
/* cli_progress_input: in (NULL: none) is now the input being read; the
 * one before is done.  in must stay open until the next call. */
void cli_progress_input(struct cli_progress *p, const struct cli_input *in);
/* cli_progress_records: count n more records done. */
void cli_progress_records(struct cli_progress *p, uint64_t n);
/* cli_progress_done: end the input, and print the summary line if on. */
void cli_progress_done(struct cli_progress *p);
double cli_now(void);

/* ------------------------------------------------------------------------ */
/* The ordered parallel pipeline                                             */

/* Where records end.  The pipeline hands workers whole records only:
 * CLI_RECORDS_LINES cuts after a newline; CLI_RECORDS_BLANK after a blank
 * line (only Unicode whitespace), so a record is a block of lines. */
enum cli_records { CLI_RECORDS_LINES, CLI_RECORDS_BLANK };

/* What a worker reports about one chunk. */
struct cli_chunk_result {
    struct tok_buf out; /* bytes to write, in order */
    int status;         /* 0, or 1 for a fatal error in the chunk */
    uint64_t err_line;  /* 1-based line of the error, in the input */
    char err_msg[320];
    uint64_t n_skipped; /* records skipped (when the tool allows it) */
    uint64_t n_records; /* records processed */
};

/* Process lines[0..len) (whole lines, each ending in '\n' except perhaps
 * the input's last) whose first line is line number first_line (1-based).
 * `worker` is 0..n_threads-1, for per-thread state. */
typedef void (*cli_chunk_fn)(void *ctx, unsigned worker, const char *lines,
                             size_t len, uint64_t first_line,
                             struct cli_chunk_result *res);

struct cli_pipeline_stats {
    uint64_t n_records, n_skipped, bytes_in;
};

/* cli_pipeline_run: read `in` in chunks of about chunk_size bytes of whole
 * lines, run fn on n_threads threads, and write each chunk's output to out
 * in input order.  Stops at the first chunk with status != 0 after writing
 * the output before it, and prints "<prog>: <name>:<line>: <msg>".
 * Returns 0, or 1 on error (input, output or a chunk's). */
int cli_pipeline_run(struct cli_input *in, struct cli_output *out,
                     unsigned n_threads, size_t chunk_size,
                     enum cli_records records, cli_chunk_fn fn, void *ctx,
                     struct cli_progress *progress,
                     struct cli_pipeline_stats *stats);

/* cli_chunk_error: stop the run at `line` with a message (printf-style). */
void cli_chunk_error(struct cli_chunk_result *r, uint64_t line, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));

/* cli_chunk_bad: a bad record at `line`: counted when skip_bad, else an
 * error as cli_chunk_error.  Returns true if processing goes on. */
bool cli_chunk_bad(struct cli_chunk_result *r, bool skip_bad, uint64_t line,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* How a tool runs its inputs through the pipeline. */
struct cli_run {
    unsigned n_threads;
    size_t chunk_size;
    enum cli_records records;
    bool json_array; /* inputs are JSON arrays (cli_input_json_array) */
    bool quiet, progress;
    cli_chunk_fn fn;
    void *ctx;
    struct cli_progress *prog; /* the caller's, initialized, or NULL */
    const char *unit; /* what the records are, for the progress line made
                       * when prog is NULL (NULL: "records") */
};

/* cli_run_files: run the files (none means stdin) through the pipeline
 * into out, one after another; an input that cannot be read is reported
 * and the others still run; skipped records are reported per file.  Then
 * commit out (or remove it after a failure).  Returns the exit status. */
int cli_run_files(const struct cli_run *run, int argc, char *const *argv,
                  struct cli_output *out);

/* cli_exit_status: close stdout, checking for a write error; returns the
 * final exit status for `rval`. */
int cli_exit_status(int rval);

struct json_tokener;

/* cli_json_field: parse the JSONL record s[0..len) (valid UTF-8) with *jt
 * and put its string field `key` into out, as valid UTF-8 (NUL-terminated).
 * Returns 1; 0 for a blank line (no record); -1 for a bad record (invalid
 * JSON, text after the value, no such string field) or -2 when out of
 * memory, with the reason in why.  After invalid JSON, *jt is a new
 * tokener (json-c's reset does not forget all of a failed parse). */
int cli_json_field(struct json_tokener **jt, const char *s, size_t len,
                   const char *key, struct tok_buf *out, char *why,
                   size_t why_len);

/* cli_json_field_jsonc: cli_json_field() with every record read by json-c,
 * not only those its fast path leaves (flat objects of strings without
 * \u escapes are read by hand there): for the tests that check the two
 * agree. */
int cli_json_field_jsonc(struct json_tokener **jt, const char *s, size_t len,
                         const char *key, struct tok_buf *out, char *why,
                         size_t why_len);

/* cli_jsonl_check: for a tool that reads text, the chunk lines[0..len)
 * whose first line is first_line: if it is the start of an input and its
 * first line that is not blank is a JSON object with a string field
 * `key`, the input is JSONL given as text (which the tool would mangle):
 * set r's error, "a JSON object with a "<key>" field: the input is JSONL,
 * not text; <advice>", and return false.  Else true. */
bool cli_jsonl_check(struct cli_chunk_result *r, const char *lines, size_t len,
                     uint64_t first_line, const char *key, const char *advice);

/* cli_is_blank_line: true if s[0..len) holds only Python's whitespace
 * (str.isspace(): the 29 code points of Unicode White_Space plus
 * U+001C..U+001F). */
bool cli_is_blank_line(const char *s, size_t len);

/* cli_is_space: Python's str.isspace() for one code point. */
bool cli_is_space(uint32_t cp);

#endif /* CLI_H */
