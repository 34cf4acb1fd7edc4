/* SPDX-License-Identifier: MIT */
/*
 * vocab-build english: the English pieces of the seed's vocab, trained by
 * libsentencepiece as `spm_train --model_type=bpe --vocab_size=17000`
 * trains them (vocab_spm_train() of vocab.h), written as eng.vocab
 * ("piece<TAB>score" lines) and, on request, the model.  See
 * vocab-build(1).
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vocab.h"
#include "vocab_build.h"
#include "banned.h"

/* sentencepiece's default num_threads: the model records the count, so
 * this default gives the model spm_train gives.  The pieces do not depend
 * on it. */
#define DEFAULT_THREADS 16
#define MAX_THREADS     128

static void
usage(void)
{
    fprintf(stderr, "usage: vocab-build english [-hqV] [-j threads] "
                    "[-m model] [-o vocab]\n"
                    "                           [-s vocab_size] file ...\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: vocab-build english [-hqV] [-j threads] [-m model] "
           "[-o vocab]\n"
           "                           [-s vocab_size] file ...\n"
           "\n"
           "Train the English pieces of the ERNIE vocab as the seed does: "
           "sentencepiece BPE\nwith every option at its default, as\n"
           "  spm_train --input=FILE,... --model_prefix=eng --vocab_size=17000 "
           "--model_type=bpe\n"
           "whose eng.vocab (piece<TAB>score lines) is written byte for "
           "byte.  Files are\nplain text, one sentence a line, or "
           "zstd-compressed.\n"
           "\n"
           "  -s, --vocab-size N   pieces, <unk> <s> </s> included (default "
           "17000)\n"
           "  -o, --output FILE    the vocab (default eng.vocab)\n"
           "  -m, --model FILE     also write the sentencepiece model\n"
           "  -j, --threads N      sentencepiece's threads, 1..128 (default "
           "16, as spm_train);\n"
           "                       the pieces do not depend on it\n"
           "  -q, --quiet          no log from sentencepiece, only errors\n"
           "  -h, --help           show this help and exit\n"
           "  -V, --version        show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(cli_exit_status(0));
}

int
vb_english_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' },
        { "threads", required_argument, NULL, 'j' },
        { "model", required_argument, NULL, 'm' },
        { "output", required_argument, NULL, 'o' },
        { "quiet", no_argument, NULL, 'q' },
        { "vocab-size", required_argument, NULL, 's' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const char *vocab_path = "eng.vocab", *model_path = NULL;
    uint64_t vocab_size = VOCAB_SPM_DEFAULT_SIZE;
    unsigned n_threads = DEFAULT_THREADS;
    bool quiet = false;
    struct tok_err e;
    int ch;

    argv[0] = "vocab-build english"; /* for getopt's messages */
    optind = 1;
    while ((ch = getopt_long(argc, argv, "hj:m:o:qs:V", longopts, NULL)) !=
           -1) {
        switch (ch) {
        case 'h':
            help();
            break;
        case 'j':
            n_threads =
                (unsigned)cli_parse_u64(optarg, 1, MAX_THREADS, "thread count");
            break;
        case 'm':
            model_path = optarg;
            break;
        case 'o':
            vocab_path = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 's':
            vocab_size = cli_parse_u64(optarg, 1, INT32_MAX, "vocab size");
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
    if (argc == 0) {
        warnx("english: no input file (sentencepiece reads files, not "
              "stdin)");
        usage();
    }
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "-") == 0) {
            warnx("english: cannot read stdin: give a file");
            usage();
        }
    if (strcmp(vocab_path, "-") == 0 ||
        (model_path && strcmp(model_path, "-") == 0)) {
        warnx("english: cannot write stdout: give a file");
        usage();
    }
    if (model_path && strcmp(model_path, vocab_path) == 0) {
        warnx("english: the vocab and the model are the same file '%s'",
              vocab_path);
        usage();
    }

    if (vocab_spm_train((const char *const *)argv, (size_t)argc,
                        (size_t)vocab_size, n_threads, vocab_path, model_path,
                        quiet, &e) != 0) {
        warnx("english: %s", e.msg);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "vocab-build: english: %llu pieces in '%s'\n",
                (unsigned long long)vocab_size, vocab_path);
    return cli_exit_status(0);
}
