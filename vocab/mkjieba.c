/* SPDX-License-Identifier: MIT */
/*
 * mkjieba: the build-time recipe that compiles jieba's dictionary and HMM
 * tables (as Debian's python3-jieba installs them) into the binary model
 * that segment(1) maps.  Run by the Makefile; not installed.
 *
 *     mkjieba [-d dict.txt] [-m finalseg-dir] -o jieba.model
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "tok.h"

int
main(int argc, char **argv)
{
    const char *dict = "/usr/lib/python3/dist-packages/jieba/dict.txt";
    const char *hmm = "/usr/lib/python3/dist-packages/jieba/finalseg";
    const char *out = NULL;
    struct tok_err e;
    int ch;

    while ((ch = getopt(argc, argv, "d:m:o:")) != -1) {
        switch (ch) {
        case 'd':
            dict = optarg;
            break;
        case 'm':
            hmm = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        default:
            fprintf(stderr, "usage: mkjieba [-d dict] [-m hmmdir] -o model\n");
            return 2;
        }
    }
    if (out == NULL) {
        fprintf(stderr, "usage: mkjieba [-d dict] [-m hmmdir] -o model\n");
        return 2;
    }
    if (tok_jieba_compile(dict, hmm, out, &e) < 0)
        errx(1, "%s (install python3-jieba: scripts/install-deps)", e.msg);
    return 0;
}
