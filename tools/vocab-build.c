/* SPDX-License-Identifier: MIT */
/*
 * vocab-build: build vocabularies: the ERNIE Chinese+English recipe
 * (chars, english, merge, all) and GPT byte-level BPE (bpe).  This file
 * only dispatches to the subcommands (tools/vocab_build_*.c); see
 * vocab-build(1).
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "vocab_build.h"
#include "banned.h"

static const struct {
    const char *name;
    int (*main)(int, char **);
    const char *what;
} subcommands[] = {
    { "chars", vb_chars_main, "count the characters of a corpus" },
    { "english", vb_english_main,
      "train the English pieces (sentencepiece BPE)" },
    { "merge", vb_merge_main, "merge char counts and English pieces" },
    { "all", vb_all_main, "chars, english and merge in one run" },
    { "bpe", vb_bpe_main, "train a GPT byte-level BPE (vocab.json)" },
};

static void
usage(FILE *f)
{
    fprintf(f, "usage: vocab-build [-hV] command [options] [args]\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].what);
    fprintf(f, "\n'vocab-build COMMAND -h' describes a command.\n");
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return cli_exit_status(0);
    }
    if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
        cli_print_version("vocab-build");
        return cli_exit_status(0);
    }
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].main(argc - 1, argv + 1);
    warnx("unknown command '%s'", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
