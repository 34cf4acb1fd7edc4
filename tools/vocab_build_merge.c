/* SPDX-License-Identifier: MIT */
/*
 * vocab-build merge: the seed's merge_vocab.py: character counts
 * (vocab-charcount(5)) plus the English pieces (spm_train's eng.vocab)
 * give the ERNIE vocab.txt, checked to leave room for the "##<CJK>"
 * extension within uint16.  See vocab-build(1).
 */
#include <err.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vocab.h"
#include "vocab_build.h"
#include "vocab_build_ernie.h"
#include "banned.h"

static void
usage(void)
{
    fprintf(stderr, "usage: vocab-build merge [-hqV] [-o output] "
                    "[-t threshold] -c counts -e eng.vocab\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: vocab-build merge [-hqV] [-o output] [-t threshold] "
           "-c counts -e eng.vocab\n"
           "\n"
           "Merge character counts and English sentencepiece pieces into an "
           "ERNIE vocab.txt\nas the seed's merge_vocab.py does: [PAD] [CLS] "
           "[SEP] [MASK] [UNK], the Han\ncharacters U+4E00-U+9FA5 by "
           "descending count (then the unseen ones), the English\npieces "
           "('##' for word continuations), then every character counted at "
           "least\nthreshold times, normalized as BasicTokenizer does.\n"
           "\n"
           "  -c, --counts FILE      character counts (vocab-build chars)\n"
           "  -e, --eng-vocab FILE   English pieces, 'piece<TAB>score' "
           "(spm_train's .vocab)\n"
           "  -t, --threshold N      minimum count of the other characters "
           "(default 200)\n"
           "  -o, --output FILE      write to FILE (via a temporary file) "
           "instead of stdout\n"
           "  -q, --quiet            no summary\n"
           "  -h, --help             show this help and exit\n"
           "  -V, --version          show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input, too many "
           "ids), 2 usage error.\n");
    exit(0);
}

int
vb_merge_write(const struct vocab_charcount *counts, size_t n_counts,
               const char *eng, size_t eng_len, const char *eng_name,
               uint64_t threshold, struct cli_output *out, bool quiet)
{
    struct vocab_merge_stats st;
    struct tok_buf vocab;
    struct tok_err e;
    int rval = 1;

    tok_buf_init(&vocab);
    memset(&st, 0, sizeof(st));
    if (vocab_merge(counts, n_counts, eng, eng_len, eng_name, threshold, &vocab,
                    &st, &e) < 0) {
        if (e.code == TOK_ERANGE)
            warnx("%s; lower the English vocab size or raise -t", e.msg);
        else
            warnx("%s", e.msg);
        cli_output_abort(out);
    } else if (cli_output_write(out, vocab.data, vocab.len) < 0) {
        cli_output_abort(out);
    } else if (cli_output_commit(out) == 0) {
        rval = 0;
        if (!quiet)
            fprintf(stderr,
                    "vocab-build: merge: %zu tokens: 5 special, %zu Han (%zu "
                    "counted), %zu from the English pieces, %zu other; with "
                    "the %zu ##<CJK> ids, %zu of 65536 ids\n",
                    st.n_tokens, st.n_han, st.n_han_seen, st.n_english,
                    st.n_other, st.n_ext, st.n_tokens + st.n_ext);
    }
    tok_buf_release(&vocab);
    return rval;
}

/* Read the two inputs and merge them. */
static int
merge_files(const char *counts_path, const char *eng_path, uint64_t threshold,
            const char *out_path, bool quiet)
{
    struct tok_buf counts_text, eng;
    struct vocab_charcount *counts = NULL;
    struct cli_output out;
    struct tok_err e;
    int64_t n = -1;
    int rval = 1;

    tok_buf_init(&counts_text);
    tok_buf_init(&eng);
    if (vb_read_input(counts_path, &counts_text) < 0 ||
        vb_read_input(eng_path, &eng) < 0)
        goto done;
    n = vocab_charcount_parse(counts_text.data, counts_text.len, counts_path,
                              &counts, &e);
    if (n < 0) {
        warnx("%s", e.msg);
        goto done;
    }
    if (n == 0) {
        warnx("counts '%s' is empty: count a corpus with 'vocab-build "
              "chars'",
              counts_path);
        goto done;
    }
    cli_output_open(&out, out_path);
    rval = vb_merge_write(counts, (size_t)n, eng.data, eng.len, eng_path,
                          threshold, &out, quiet);
done:
    free(counts);
    tok_buf_release(&counts_text);
    tok_buf_release(&eng);
    return rval;
}

int
vb_merge_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "counts", required_argument, NULL, 'c' },
        { "eng-vocab", required_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' },
        { "output", required_argument, NULL, 'o' },
        { "quiet", no_argument, NULL, 'q' },
        { "threshold", required_argument, NULL, 't' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    const char *counts = NULL, *eng = NULL, *out_path = NULL;
    uint64_t threshold = VOCAB_MERGE_DEFAULT_THRESHOLD;
    bool quiet = false;
    int ch;

    static char prog[] = "vocab-build merge";

    /* getopt names argv[0] in its messages. */
    argv[0] = prog;
    while ((ch = getopt_long(argc, argv, "c:e:ho:qt:V", longopts, NULL)) !=
           -1) {
        switch (ch) {
        case 'c':
            counts = optarg;
            break;
        case 'e':
            eng = optarg;
            break;
        case 'h':
            help();
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'q':
            quiet = true;
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
    if (optind != argc) {
        warnx("unexpected operand '%s'", argv[optind]);
        usage();
    }
    if (counts == NULL || eng == NULL) {
        warnx("give the counts with -c FILE and the English pieces with -e "
              "FILE");
        usage();
    }
    return cli_exit_status(
        merge_files(counts, eng, threshold, out_path, quiet));
}
