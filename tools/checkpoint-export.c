/* SPDX-License-Identifier: MIT */
/*
 * checkpoint-export: a checkpoint of train (or a transformers
 * save_pretrained directory of ERNIE or GPT-2) written in PaddleNLP's
 * layout, model_state.pdparams, config.json and the tokenizer's files,
 * for PaddleNLP's from_pretrained() (fine-tuning with ErnieModel,
 * ErnieForSequenceClassification, ...).  Thin over libtrain's
 * paddle_export().  See checkpoint-export(1).
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/paddle_export.h"
#include "cli.h"
#include "banned.h"

#define USAGE_LINE \
    "usage: checkpoint-export [-fhqV] [-F format] -o directory checkpoint\n"

static void
usage(void)
{
    fputs(USAGE_LINE, stderr);
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf(USAGE_LINE
           "\n"
           "Write the checkpoint directory CHECKPOINT (a model_<step>/ of "
           "train, or a\n"
           "directory of transformers' save_pretrained) as PaddleNLP's "
           "from_pretrained()\n"
           "reads it: model_state.pdparams, config.json and the "
           "tokenizer's files.\n"
           "\n"
           "  -o, --output DIR   the directory to write (new, empty, or an "
           "earlier export\n"
           "                     with -f); written whole or not at all\n"
           "  -F, --format NAME  paddle (PaddleNLP 2.5 and later; the "
           "default and only one)\n"
           "  -f, --force        replace DIR when it holds an earlier "
           "export\n"
           "  -q, --quiet        say nothing but errors\n"
           "  -h, --help         show this help and exit\n"
           "  -V, --version      show the version and exit\n"
           "\n"
           "Exit status: 0 written, 1 failure, 2 usage error.  See "
           "checkpoint-export(1).\n");
    exit(0);
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "format", required_argument, NULL, 'F' },
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { "output", required_argument, NULL, 'o' },
        { "quiet", no_argument, NULL, 'q' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    static const char *const formats[] = { "paddle", NULL };
    struct paddle_export_info info;
    const char *out = NULL;
    int ch, force = 0, quiet = 0;
    char msg[2048];

    while ((ch = getopt_long(argc, argv, "F:fho:qV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'F':
            if (cli_parse_choice(optarg, "format", formats) < 0)
                usage();
            break;
        case 'f':
            force = 1;
            break;
        case 'h':
            help();
            break;
        case 'o':
            out = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'V':
            cli_print_version("checkpoint-export");
            return 0;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (argc != 1 || out == NULL || out[0] == '\0') {
        if (argc != 1)
            warnx(argc ? "one checkpoint at a time" : "no checkpoint given");
        else
            warnx("no output directory given (-o)");
        usage();
    }
    if (paddle_export(argv[0], out, force, &info, msg, sizeof(msg)) < 0)
        errx(1, "%s", msg);
    if (info.note[0])
        warnx("note: %s", info.note);
    if (!info.has_tokenizer)
        warnx("note: '%s' has no tokenizer files: '%s' has none either",
              argv[0], out);
    if (!quiet)
        fprintf(stderr, "checkpoint-export: wrote '%s': %s, %zu tensors%s\n",
                out, info.architecture, info.n_tensors,
                info.has_tokenizer ? ", with the tokenizer" : "");
    return 0;
}
