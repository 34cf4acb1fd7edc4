/* SPDX-License-Identifier: MIT */
/* vocab-build merge: placeholder until the subcommand lands. */
#include <err.h>

#include "vocab_build.h"

int
vb_merge_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    warnx("merge: not implemented yet");
    return 1;
}
