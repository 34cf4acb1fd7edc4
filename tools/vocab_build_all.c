/* SPDX-License-Identifier: MIT */
/*
 * vocab-build all: the seed's whole ERNIE vocab recipe in one run: count
 * the characters of the Chinese corpus (chars), train the English pieces
 * with sentencepiece BPE (english), and merge them into vocab.txt (merge),
 * with a line on stderr per step.  See vocab-build(1).
 */
#include <err.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "vocab.h"
#include "vocab_build.h"
#include "vocab_build_ernie.h"
#include "banned.h"

#define MAX_SPM_THREADS 128

static void
usage(void)
{
    fprintf(stderr,
            "usage: vocab-build all [-hPqsV] [-c counts] [-e eng.vocab] "
            "[-j threads]\n"
            "                       [-n size] [-o output] [-t threshold] "
            "-E english\n"
            "                       [file | dir ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: vocab-build all [-hPqsV] [-c counts] [-e eng.vocab] "
           "[-j threads]\n"
           "                       [-n size] [-o output] [-t threshold] "
           "-E english\n"
           "                       [file | dir ...]\n"
           "\n"
           "The seed's ERNIE vocab recipe in one run: count the characters "
           "of the corpus\n(files, directories, or stdin), train the English "
           "pieces on the -E text\n(sentencepiece BPE), and merge both into "
           "vocab.txt.\n"
           "\n"
           "  -E, --english FILE     English text for the pieces (repeat for "
           "more files)\n"
           "  -n, --english-size N   English pieces, special ones included "
           "(default 17000)\n"
           "  -t, --threshold N      minimum count of the other characters "
           "(default 200)\n"
           "  -c, --counts FILE      also keep the character counts in FILE\n"
           "  -e, --eng-vocab FILE   also keep the English pieces in FILE\n"
           "  -s, --skip-bad         skip corpus lines with invalid UTF-8 "
           "(and count them)\n"
           "  -j, --threads N        worker threads (default: online CPUs)\n"
           "  -o, --output FILE      write vocab.txt to FILE (via a temporary "
           "file)\n"
           "                         instead of stdout\n"
           "  -P, --progress         show progress on stderr even if it is not "
           "a terminal\n"
           "  -q, --quiet            no progress, no summary\n"
           "  -h, --help             show this help and exit\n"
           "  -V, --version          show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input, too many "
           "ids), 2 usage error.\n");
    exit(0);
}

struct english {
    const char **v;
    size_t n;
};

static void
english_add(struct english *l, const char *path)
{
    l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
    if (l->v == NULL)
        err(1, NULL);
    l->v[l->n++] = path;
}

static void step(bool quiet, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
step(bool quiet, const char *fmt, ...)
{
    va_list ap;

    if (quiet)
        return;
    fputs("vocab-build: all: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int
run_all(int argc, char **argv, const struct english *english, size_t size,
        uint64_t threshold, unsigned n_threads, bool skip_bad, bool quiet,
        bool progress, const char *counts_path, const char *eng_path,
        const char *out_path)
{
    struct vocab_counts *counts = NULL;
    struct vocab_charcount *entries = NULL;
    struct cli_output out, counts_out;
    struct tok_buf eng;
    struct tok_err e;
    char tmpdir[4096] = "", *tmp_eng = NULL;
    double t0 = cli_now();
    int64_t n;
    int rval = 1;

    tok_buf_init(&eng);
    /* Fail before hours of counting, not after. */
    for (size_t i = 0; i < english->n; i++)
        if (strcmp(english->v[i], "-") == 0 ||
            access(english->v[i], R_OK) != 0) {
            warn("cannot read the English text '%s'", english->v[i]);
            return 1;
        }
    if (vocab_counts_new(&counts, &e) < 0)
        errx(1, "%s", e.msg);
    cli_output_open(&out, out_path);
    if (counts_path != NULL)
        cli_output_open(&counts_out, counts_path);
    if (eng_path == NULL) {
        const char *t = getenv("TMPDIR");

        snprintf(tmpdir, sizeof(tmpdir), "%s/vocab-build.XXXXXX",
                 t && *t ? t : "/tmp");
        if (mkdtemp(tmpdir) == NULL) {
            warn("cannot create a directory in '%s'", t && *t ? t : "/tmp");
            tmpdir[0] = '\0';
            goto fail;
        }
        if (asprintf(&tmp_eng, "%s/eng.vocab", tmpdir) < 0)
            err(1, NULL);
        eng_path = tmp_eng;
    }

    step(quiet, "[1/3] chars: counting the corpus");
    if (vb_chars_count(argv, argc, NULL, n_threads, skip_bad, quiet, progress,
                       counts) != 0)
        goto fail;
    n = vocab_counts_sorted(counts, &entries, &e);
    if (n < 0) {
        warnx("%s", e.msg);
        goto fail;
    }
    if (n == 0) {
        warnx("no characters counted: the corpus is empty");
        goto fail;
    }
    if (counts_path != NULL) {
        int rc = vb_chars_write(counts, &counts_out);

        counts_path = NULL; /* committed or removed */
        if (rc != 0)
            goto fail;
    }
    step(quiet, "[1/3] chars: %lld distinct characters (%.1f s)", (long long)n,
         cli_now() - t0);

    t0 = cli_now();
    step(quiet,
         "[2/3] english: training %zu pieces on %zu file%s "
         "(sentencepiece BPE)",
         size, english->n, english->n == 1 ? "" : "s");
    if (vocab_spm_train(english->v, english->n, size,
                        n_threads < MAX_SPM_THREADS ? n_threads
                                                    : MAX_SPM_THREADS,
                        eng_path, NULL, 1, &e) != 0) {
        warnx("english: %s", e.msg);
        goto fail;
    }
    step(quiet, "[2/3] english: done (%.1f s)", cli_now() - t0);

    step(quiet, "[3/3] merge");
    if (vb_read_input(eng_path, &eng) < 0)
        goto fail;
    rval = vb_merge_write(entries, (size_t)n, eng.data, eng.len, eng_path,
                          threshold, &out, quiet);
    goto done;
fail:
    cli_output_abort(&out);
    if (counts_path != NULL)
        cli_output_abort(&counts_out);
done:
    if (tmp_eng != NULL) {
        unlink(tmp_eng);
        free(tmp_eng);
    }
    if (tmpdir[0] != '\0')
        rmdir(tmpdir);
    free(entries);
    vocab_counts_free(counts);
    tok_buf_release(&eng);
    return rval;
}

int
vb_all_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "english", required_argument, NULL, 'E' },
        { "counts", required_argument, NULL, 'c' },
        { "eng-vocab", required_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' },
        { "threads", required_argument, NULL, 'j' },
        { "english-size", required_argument, NULL, 'n' },
        { "output", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "skip-bad", no_argument, NULL, 's' },
        { "threshold", required_argument, NULL, 't' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    struct english english = { NULL, 0 };
    const char *counts_path = NULL, *eng_path = NULL, *out_path = NULL;
    uint64_t size = VOCAB_SPM_DEFAULT_SIZE;
    uint64_t threshold = VOCAB_MERGE_DEFAULT_THRESHOLD;
    unsigned n_threads = cli_default_threads();
    bool progress = false, quiet = false, skip_bad = false;
    int ch, rval;

    static char prog[] = "vocab-build all";

    /* getopt names argv[0] in its messages. */
    argv[0] = prog;
    while ((ch = getopt_long(argc, argv, "E:c:e:hj:n:o:Pqst:V", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'E':
            english_add(&english, optarg);
            break;
        case 'c':
            counts_path = optarg;
            break;
        case 'e':
            eng_path = optarg;
            break;
        case 'h':
            help();
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'n':
            size = cli_parse_u64(optarg, 1, 1000000, "english-size");
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
        case 't':
            threshold = cli_parse_u64(optarg, 0, UINT64_MAX, "threshold");
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
    if (english.n == 0) {
        warnx("give the English text for the pieces with -E FILE");
        usage();
    }
    rval = run_all(argc, argv, &english, (size_t)size, threshold, n_threads,
                   skip_bad, quiet, progress, counts_path, eng_path, out_path);
    free(english.v);
    return cli_exit_status(rval);
}
