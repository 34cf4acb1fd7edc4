/* SPDX-License-Identifier: MIT */
/* vocab-build english: placeholder until the subcommand lands. */
#include <err.h>

#include "vocab_build.h"

int
vb_english_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    warnx("english: not implemented yet");
    return 1;
}
