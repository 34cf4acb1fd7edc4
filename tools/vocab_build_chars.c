/* SPDX-License-Identifier: MIT */
/*
 * vocab-build chars: count the characters of a corpus as the seed's
 * gen_char.py does (every code point of every line, newlines included),
 * on N threads with one count table each, merged at the end, and write
 * them as vocab-charcount(5); with -m, add up count files instead.  See
 * vocab-build(1).
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vocab.h"
#include "vocab_build.h"
#include "vocab_build_ernie.h"
#include "banned.h"

#define CHUNK_SIZE (1u << 20)

enum { OPT_SHARD = 256 };

static void
usage(void)
{
    fprintf(stderr, "usage: vocab-build chars [-hPqsV] [-j threads] "
                    "[-o output] [--shard i/n]\n"
                    "                         [file | dir ...]\n"
                    "       vocab-build chars -m [-hqV] [-o output] "
                    "counts ...\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: vocab-build chars [-hPqsV] [-j threads] [-o output] "
           "[--shard i/n]\n"
           "                         [file | dir ...]\n"
           "       vocab-build chars -m [-hqV] [-o output] counts ...\n"
           "\n"
           "Count every character (code point) of every line, newlines "
           "included, as the\nseed's gen_char.py does, and write "
           "'char<TAB>count' lines by descending count\n(ties by code "
           "point): vocab-charcount(5).  Directories are read recursively"
           "\n(JSON files skipped); files may be zstd-compressed; no file "
           "or '-' reads\nstdin.  \"\\r\\n\" and \"\\r\" count as "
           "\"\\n\" (Python's text mode).\n"
           "\n"
           "  -m, --merge            add up count files instead of counting "
           "text\n"
           "      --shard I/N        count only the I-th of N runs of the "
           "files, cut by size\n"
           "                         (one task of a cluster job; -m adds the "
           "N up)\n"
           "  -s, --skip-bad         skip lines with invalid UTF-8 (and count "
           "them)\n"
           "  -j, --threads N        worker threads (default: online CPUs)\n"
           "  -o, --output FILE      write to FILE (via a temporary file) "
           "instead of stdout\n"
           "  -P, --progress         show progress on stderr even if it is not "
           "a terminal\n"
           "  -q, --quiet            no progress, no summary\n"
           "  -h, --help             show this help and exit\n"
           "  -V, --version          show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

int
vb_read_input(const char *path, struct tok_buf *out)
{
    struct cli_input *in = cli_input_open(path);
    char buf[1 << 16];
    long got;

    if (in == NULL)
        return -1;
    while ((got = cli_input_read(in, buf, sizeof(buf))) > 0)
        if (tok_buf_append(out, buf, (size_t)got) < 0) {
            warnx("'%s': out of memory", cli_input_name(in));
            got = -1;
            break;
        }
    cli_input_close(in);
    if (got < 0)
        return -1;
    return tok_buf_append(out, "", 0) < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Counting                                                                  */

struct count_ctx {
    struct vocab_counts **tables; /* one per worker, made on first use */
    bool skip_bad;
};

static size_t
count_newlines(const char *s, size_t len)
{
    size_t n = 0;
    const char *end = s + len;

    while ((s = memchr(s, '\n', (size_t)(end - s))) != NULL) {
        n++;
        s++;
    }
    return n;
}

static void
count_chunk(void *vctx, unsigned worker, const char *s, size_t len,
            uint64_t first_line, struct cli_chunk_result *r)
{
    struct count_ctx *c = vctx;
    struct tok_err e;
    uint64_t line = first_line;
    size_t pos = 0;

    if (!cli_jsonl_check(r, s, len, first_line, "text",
                         "give the text of the field instead (e.g. jq -r "
                         ".text FILE)"))
        return;
    /* The lines, for the progress line. */
    r->n_records = count_newlines(s, len) + (len > 0 && s[len - 1] != '\n');
    if (c->tables[worker] == NULL &&
        vocab_counts_new(&c->tables[worker], &e) < 0) {
        cli_chunk_error(r, line, "%s", e.msg);
        return;
    }
    while (pos < len) {
        struct vocab_counts *t = c->tables[worker];
        const char *bad, *ls, *nl;
        size_t off;
        int rc = vocab_counts_add_text(t, s + pos, len - pos, &off, &e);

        if (rc == 0)
            return;
        if (rc != TOK_EUTF8) {
            cli_chunk_error(r, line, "%s", e.msg);
            return;
        }
        /* Name the line and the offset in it; with -s, count the lines
         * before it and go on after it. */
        bad = s + pos + off;
        for (ls = bad; ls > s + pos && ls[-1] != '\n'; ls--)
            ;
        line += count_newlines(s + pos, (size_t)(ls - (s + pos)));
        if (!cli_chunk_bad(r, c->skip_bad, line,
                           "invalid UTF-8 at byte offset %zu (byte 0x%02X)",
                           (size_t)(bad - ls), (unsigned char)*bad))
            return;
        if (ls > s + pos &&
            vocab_counts_add_text(t, s + pos, (size_t)(ls - (s + pos)), NULL,
                                  &e) < 0) {
            cli_chunk_error(r, line, "%s", e.msg);
            return;
        }
        nl = memchr(bad, '\n', (size_t)(s + len - bad));
        pos = nl ? (size_t)(nl + 1 - s) : len;
        line++;
    }
}

static int
discard(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return 0;
}

/* The files of a directory that are text: not JSON (which would be
 * refused when read: cli_jsonl_check). */
static const char *
not_text(const char *path)
{
    return cli_is_json_name(path) ? "JSON, not text" : NULL;
}

int
vb_chars_count(char *const *paths, int n_paths, const struct cli_shard *shard,
               unsigned n_threads, bool skip_bad, bool quiet, bool progress,
               struct vocab_counts *counts)
{
    struct cli_files files = { NULL, 0, 0, 0 };
    struct count_ctx ctx;
    struct cli_progress prog;
    struct cli_output sink;
    struct cli_run run;
    struct tok_err e;
    int rval = 0;

    rval = cli_files_expand(&files, n_paths, paths, not_text, "text ", quiet);
    if (rval == 0 && shard != NULL && shard->n > 0 &&
        cli_files_shard(&files, shard, quiet) != 0) {
        cli_files_release(&files);
        return 2;
    }
    cli_progress_init(&prog, !quiet && (progress || isatty(STDERR_FILENO)));
    prog.unit = "lines";
    prog.total = files.total_bytes;

    memset(&ctx, 0, sizeof(ctx));
    ctx.skip_bad = skip_bad;
    ctx.tables = calloc(n_threads, sizeof(*ctx.tables));
    if (ctx.tables == NULL)
        err(1, NULL);
    memset(&run, 0, sizeof(run));
    run.n_threads = n_threads;
    run.chunk_size = CHUNK_SIZE;
    run.records = CLI_RECORDS_LINES;
    run.quiet = quiet;
    run.progress = progress;
    run.fn = count_chunk;
    run.ctx = &ctx;
    run.prog = &prog;
    /* The pipeline's own output stays empty: the counts are written once
     * every input is read. */
    cli_output_sink(&sink, discard, NULL);
    /* Only empty directories: nothing to read (the caller reports the
     * empty corpus). */
    if (files.n > 0 || n_paths == 0)
        rval |= cli_run_files(&run, (int)files.n, files.v, &sink);
    for (unsigned i = 0; i < n_threads; i++) {
        if (rval == 0 && ctx.tables[i] != NULL &&
            vocab_counts_merge(counts, ctx.tables[i], &e) < 0) {
            warnx("%s", e.msg);
            rval = 1;
        }
        vocab_counts_free(ctx.tables[i]);
    }
    free(ctx.tables);
    cli_files_release(&files);
    return rval;
}

int
vb_chars_write(const struct vocab_counts *counts, struct cli_output *out)
{
    struct vocab_charcount *entries = NULL;
    struct tok_buf text;
    struct tok_err e;
    int64_t n;
    int rval = 1;

    tok_buf_init(&text);
    n = vocab_counts_sorted(counts, &entries, &e);
    if (n < 0) {
        warnx("%s", e.msg);
    } else if (n == 0) {
        warnx("no characters counted: the input is empty");
    } else if (vocab_charcount_format(entries, (size_t)n, &text, &e) < 0) {
        warnx("%s", e.msg);
    } else if (cli_output_write(out, text.data, text.len) == 0) {
        rval = cli_output_commit(out) == 0 ? 0 : 1;
        goto done;
    }
    cli_output_abort(out);
done:
    free(entries);
    tok_buf_release(&text);
    return rval;
}

/* -m: add up count files. */
static int
merge_counts(char *const *paths, int n_paths, struct vocab_counts *counts)
{
    struct tok_buf data;
    int rval = 0;

    tok_buf_init(&data);
    for (int i = 0; i < n_paths; i++) {
        struct vocab_charcount *e = NULL;
        struct tok_err er;
        const char *name = strcmp(paths[i], "-") == 0 ? "<stdin>" : paths[i];
        int64_t n;

        tok_buf_clear(&data);
        if (vb_read_input(paths[i], &data) < 0) {
            rval = 1;
            continue;
        }
        n = vocab_charcount_parse(data.data, data.len, name, &e, &er);
        if (n < 0) {
            warnx("%s", er.msg);
            rval = 1;
            continue;
        }
        for (int64_t k = 0; k < n; k++)
            if (vocab_counts_add(counts, e[k].cp, e[k].count, &er) < 0) {
                warnx("counts '%s': %s", name, er.msg);
                rval = 1;
                break;
            }
        free(e);
    }
    tok_buf_release(&data);
    return rval;
}

int
vb_chars_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' },
        { "threads", required_argument, NULL, 'j' },
        { "merge", no_argument, NULL, 'm' },
        { "output", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "skip-bad", no_argument, NULL, 's' },
        { "version", no_argument, NULL, 'V' },
        { "shard", required_argument, NULL, OPT_SHARD },
        { NULL, 0, NULL, 0 }
    };
    struct cli_shard shard = { 0, 0 };
    unsigned n_threads = cli_default_threads();
    bool merge = false, progress = false, quiet = false, skip_bad = false;
    const char *out_path = NULL;
    struct vocab_counts *counts;
    struct cli_output out;
    struct tok_err e;
    int ch, rval;

    static char prog[] = "vocab-build chars";

    /* getopt names argv[0] in its messages. */
    argv[0] = prog;
    while ((ch = getopt_long(argc, argv, "hj:mo:PqsV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'h':
            help();
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'm':
            merge = true;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'P':
            progress = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 's':
            skip_bad = true;
            break;
        case 'V':
            cli_print_version("vocab-build");
            return cli_exit_status(0);
        case OPT_SHARD:
            if (!cli_shard_parse(optarg, &shard))
                usage();
            break;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (merge && argc == 0) {
        warnx("-m needs the count files to add up");
        usage();
    }
    if (merge && shard.n > 0) {
        warnx("--shard counts a part of the text; -m adds the parts' counts "
              "up: not both");
        usage();
    }
    if (vocab_counts_new(&counts, &e) < 0)
        errx(1, "%s", e.msg);
    cli_output_open(&out, out_path);
    if (merge)
        rval = merge_counts(argv, argc, counts);
    else
        rval = vb_chars_count(argv, argc, &shard, n_threads, skip_bad, quiet,
                              progress, counts);
    if (rval == 2) { /* the shard: a usage error */
        cli_output_abort(&out);
        vocab_counts_free(counts);
        return cli_exit_status(EXIT_USAGE);
    }
    if (rval == 0)
        rval = vb_chars_write(counts, &out);
    else
        cli_output_abort(&out);
    vocab_counts_free(counts);
    return cli_exit_status(rval);
}
