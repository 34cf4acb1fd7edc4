/* SPDX-License-Identifier: MIT */
/*
 * vocab-build bpe: train a GPT byte-level BPE and write DIR/vocab.json and
 * DIR/merges.txt as Hugging Face tokenizers' ByteLevelBPETokenizer does
 * (train(), then save_model()).  Words are counted on N threads through
 * the ordered pipeline, one table per thread; the merges are made by
 * vocab_bpe_train() (vocab/vocab_bpe.c).  See vocab-build(1).
 */
#include <err.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vocab.h"
#include "vocab_build.h"
#include "banned.h"

#define CHUNK_SIZE (1u << 20)

static const char default_special[] = "<|endoftext|>";

static void
usage(void)
{
    fprintf(stderr,
            "usage: vocab-build bpe [-hPqV] [-j threads] [-m min_frequency] "
            "[-o dir]\n"
            "                       [-S token] [-s vocab_size] [file ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: vocab-build bpe [-hPqV] [-j threads] [-m min_frequency] "
           "[-o dir]\n"
           "                       [-S token] [-s vocab_size] [file ...]\n"
           "\n"
           "Train a GPT byte-level BPE on text files (zstd too; none or '-' "
           "is stdin) and\nwrite dir/vocab.json and dir/merges.txt as Hugging "
           "Face tokenizers'\nByteLevelBPETokenizer().train() and save_model() "
           "do.\n"
           "\n"
           "  -s, --vocab-size N     tokens in the vocab (default 30000)\n"
           "  -m, --min-frequency N  merge only pairs seen N times or more "
           "(default 2)\n"
           "  -S, --special TOKEN    a special token (ids from 0, repeatable; "
           "default\n"
           "                         <|endoftext|>; -S '' gives none)\n"
           "  -o, --output DIR       the directory to write (made if missing; "
           "default .)\n"
           "  -j, --threads N        threads counting words (default: online "
           "CPUs)\n"
           "  -P, --progress         show progress on stderr even if it is not "
           "a terminal\n"
           "  -q, --quiet            no progress, no summary\n"
           "  -h, --help             show this help and exit\n"
           "  -V, --version          show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(cli_exit_status(0));
}

/* ------------------------------------------------------------------------ */

struct ctx {
    struct vocab_bpe_words **words; /* one table per worker */
};

static void
count_chunk(void *arg, unsigned worker, const char *lines, size_t len,
            uint64_t first_line, struct cli_chunk_result *res)
{
    struct ctx *c = (struct ctx *)arg;
    struct tok_err e;
    size_t bad = 0;

    if (!cli_jsonl_check(res, lines, len, first_line, "text",
                         "give the text of the field instead (e.g. jq -r "
                         ".text FILE)"))
        return;
    /* The lines, for the progress line. */
    for (const char *p = lines, *end = lines + len; p < end; res->n_records++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        p = nl ? nl + 1 : end;
    }
    if (vocab_bpe_words_add_lines(c->words[worker], lines, len, &bad, &e) < 0)
        cli_chunk_error(res, first_line + bad, "%s", e.msg);
}

static int
discard(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    (void)p;
    (void)n;
    return 0;
}

static int
write_file(const char *dir, const char *name, const struct tok_buf *b)
{
    struct cli_output out;
    char *path;
    int rc = 0;

    if (asprintf(&path, "%s/%s", dir, name) < 0)
        err(1, NULL);
    cli_output_open(&out, path);
    if (cli_output_write(&out, b->data, b->len) < 0) {
        cli_output_abort(&out);
        rc = 1;
    } else if (cli_output_commit(&out) != 0) {
        rc = 1;
    }
    free(path);
    return rc;
}

int
vb_bpe_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' },
        { "threads", required_argument, NULL, 'j' },
        { "min-frequency", required_argument, NULL, 'm' },
        { "output", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "special", required_argument, NULL, 'S' },
        { "vocab-size", required_argument, NULL, 's' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    struct vocab_bpe_options opt;
    const char **special = NULL;
    size_t n_special = 0;
    bool special_given = false, quiet = false, progress = false;
    const char *dir = ".";
    unsigned n_threads = cli_default_threads();
    struct ctx c;
    struct cli_run run;
    struct cli_output sink;
    struct tok_buf vocab_json, merges_txt;
    struct tok_err e;
    double t0 = cli_now();
    int64_t n_tokens;
    int ch, rval;

    static char prog[] = "vocab-build bpe";

    /* getopt names argv[0] in its messages. */
    argv[0] = prog;
    opt.vocab_size = 30000;
    opt.min_frequency = 2;
    special = (const char **)calloc((size_t)argc + 1, sizeof(*special));
    if (special == NULL)
        err(1, NULL);
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hj:m:o:PqS:s:V", longopts, NULL)) !=
           -1) {
        switch (ch) {
        case 'h':
            help();
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'm':
            opt.min_frequency =
                cli_parse_u64(optarg, 0, UINT64_MAX, "min-frequency");
            break;
        case 'o':
            dir = optarg;
            break;
        case 'P':
            progress = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'S':
            special_given = true;
            if (*optarg == '\0') {
                n_special = 0; /* -S '': no special tokens */
                break;
            }
            if (tok_utf8_check(optarg, strlen(optarg)) != strlen(optarg)) {
                warnx("invalid special token '%s': not UTF-8", optarg);
                usage();
            }
            special[n_special++] = optarg;
            break;
        case 's':
            opt.vocab_size =
                (size_t)cli_parse_u64(optarg, 1, INT32_MAX, "vocab-size");
            break;
        case 'V':
            cli_print_version("vocab-build");
            return cli_exit_status(0);
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (!special_given)
        special[n_special++] = default_special;
    opt.special = special;
    opt.n_special = n_special;

    /* The directory first, so that a bad -o fails before the work. */
    if (cli_mkdirs(dir) < 0) {
        free(special);
        return cli_exit_status(1);
    }

    c.words = (struct vocab_bpe_words **)calloc(n_threads, sizeof(*c.words));
    if (c.words == NULL)
        err(1, NULL);
    for (unsigned i = 0; i < n_threads; i++)
        if (vocab_bpe_words_new(&c.words[i], &e) < 0)
            errx(1, "%s", e.msg);
    cli_output_sink(&sink, discard, NULL);
    memset(&run, 0, sizeof(run));
    run.n_threads = n_threads;
    run.chunk_size = CHUNK_SIZE;
    run.records = CLI_RECORDS_LINES;
    run.quiet = quiet;
    run.progress = progress;
    run.fn = count_chunk;
    run.ctx = &c;
    run.unit = "lines";
    rval = cli_run_files(&run, argc, argv, &sink);
    if (rval != 0) {
        warnx("bpe: nothing written to '%s': an input failed", dir);
        goto done;
    }
    for (unsigned i = 1; i < n_threads; i++) {
        if (vocab_bpe_words_merge(c.words[0], c.words[i], &e) < 0)
            errx(1, "%s", e.msg);
        vocab_bpe_words_free(c.words[i]);
        c.words[i] = NULL;
    }
    if (vocab_bpe_words_distinct(c.words[0]) == 0) {
        warnx("bpe: the input has no text: nothing to train on");
        rval = 1;
        goto done;
    }
    if (!quiet && (progress || isatty(STDERR_FILENO)))
        fprintf(stderr,
                "vocab-build: bpe: %llu words (%zu distinct), "
                "merging\n",
                (unsigned long long)vocab_bpe_words_total(c.words[0]),
                vocab_bpe_words_distinct(c.words[0]));
    tok_buf_init(&vocab_json);
    tok_buf_init(&merges_txt);
    n_tokens = vocab_bpe_train(c.words[0], &opt, &vocab_json, &merges_txt, &e);
    if (n_tokens < 0)
        errx(1, "bpe: %s", e.msg);
    rval = write_file(dir, "vocab.json", &vocab_json) ||
           write_file(dir, "merges.txt", &merges_txt);
    if (rval == 0 && !quiet) {
        size_t n_merges = 0;

        for (size_t i = 0; i < merges_txt.len; i++)
            n_merges += merges_txt.data[i] == '\n';
        fprintf(stderr,
                "vocab-build: bpe: %llu words (%zu distinct), %lld tokens, "
                "%zu merges in '%s' (%.1f s)\n",
                (unsigned long long)vocab_bpe_words_total(c.words[0]),
                vocab_bpe_words_distinct(c.words[0]), (long long)n_tokens,
                n_merges - 1, dir, cli_now() - t0);
    }
    tok_buf_release(&vocab_json);
    tok_buf_release(&merges_txt);
done:
    for (unsigned i = 0; i < n_threads; i++)
        vocab_bpe_words_free(c.words[i]);
    free(c.words);
    free(special);
    return cli_exit_status(rval);
}
