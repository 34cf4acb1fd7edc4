/* SPDX-License-Identifier: MIT */
/* vocab-build all: placeholder until the subcommand lands. */
#include <err.h>

#include "vocab_build.h"

int
vb_all_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    warnx("all: not implemented yet");
    return 1;
}
