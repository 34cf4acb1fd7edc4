/* SPDX-License-Identifier: MIT */
/*
 * mklac: the build-time recipe that compiles Baidu LAC 2.1.2's networks and
 * dictionaries (the LAC directory of its PyPI source archive) into the
 * binary model that segment(1) maps with --engine lac (lac-model(5)).  Run
 * by the Makefile; not installed.
 *
 *     mklac -d LAC-dir [-p provenance] -o lac.model
 */
#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "tok.h"

static void
usage(void)
{
    fprintf(stderr, "usage: mklac -d LAC-dir [-p provenance] -o model\n");
    exit(2);
}

int
main(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *prov = NULL;
    struct tok_err e;
    int ch;

    while ((ch = getopt(argc, argv, "d:o:p:")) != -1) {
        switch (ch) {
        case 'd':
            dir = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'p':
            prov = optarg;
            break;
        default:
            usage();
        }
    }
    if (dir == NULL || out == NULL || optind != argc)
        usage();
    if (tok_lac_compile(dir, out, prov, &e) < 0)
        errx(1, "%s", e.msg);
    return 0;
}
