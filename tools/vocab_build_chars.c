/* SPDX-License-Identifier: MIT */
/* vocab-build chars: placeholder until the subcommand lands. */
#include <err.h>

#include "vocab_build.h"

int
vb_chars_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    warnx("chars: not implemented yet");
    return 1;
}
