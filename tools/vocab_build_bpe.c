/* SPDX-License-Identifier: MIT */
/* vocab-build bpe: placeholder until the subcommand lands. */
#include <err.h>

#include "vocab_build.h"

int
vb_bpe_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    warnx("bpe: not implemented yet");
    return 1;
}
