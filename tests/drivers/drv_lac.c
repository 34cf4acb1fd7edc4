/* SPDX-License-Identifier: MIT */
/*
 * drv_lac.c: the LAC engine as a filter, for the conformance suite to
 * compare every word (and tag) with LAC 2.1.2's own, and to read the
 * Viterbi margin of each text.
 *
 *   drv_lac [-k kernels] [-r rows] [-p positions] [-U userdict] [-1]
 *           MODEL seg|lac < texts > results
 *
 * Each text comes as its length in bytes on a line of its own, then its
 * bytes; all are run as one batch (-1: each alone), and each goes out as
 * one line of JSON: {"w": [words], "t": [tag names], "m": margin}, the
 * margin null where it was not measured.  -k picks the kernels (scalar,
 * avx2, avx512), -r and -p the group limits (tok_lac_batch_set_limits()).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok.h"
#include "tok_lac_int.h"

static void
die(const char *what, const struct tok_err *e)
{
    fprintf(stderr, "drv_lac: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static void
put_json_string(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void
print_results(const struct tok_lac *l, const struct tok_lac_batch *b, size_t i,
              struct tok_lac_words *w)
{
    struct tok_err e;
    size_t len;
    const char *s = tok_lac_batch_text(b, i, &len);
    double m = tok_lac_batch_margin(b, i);

    tok_lac_words_clear(w);
    if (tok_lac_batch_words(b, i, w, &e) < 0)
        die("words", &e);
    fputs("{\"w\": [", stdout);
    for (size_t k = 0; k < w->n; k++) {
        if (k)
            fputs(", ", stdout);
        put_json_string(s + w->starts[k], w->ends[k] - w->starts[k]);
    }
    fputs("], \"t\": [", stdout);
    for (size_t k = 0; k < w->n; k++) {
        size_t tl;
        const char *t = tok_lac_tag_name(l, w->tags[k], &tl);

        if (k)
            fputs(", ", stdout);
        put_json_string(t, tl);
    }
    if (isnan(m))
        fputs("], \"m\": null}\n", stdout);
    else if (isinf(m))
        fputs("], \"m\": 1e300}\n", stdout);
    else
        printf("], \"m\": %.9g}\n", m);
}

int
main(int argc, char **argv)
{
    struct tok_lac *l;
    struct tok_lac_batch *b;
    struct tok_lac_words w;
    struct tok_err e;
    const struct tok_lac_kernels *kern = NULL;
    const char *user = NULL;
    size_t rows = 0, pos = 0, len, cap = 0;
    char *buf = NULL;
    bool alone = false;
    enum tok_lac_mode mode;
    int ch;

    while ((ch = getopt(argc, argv, "1k:p:r:U:")) != -1) {
        switch (ch) {
        case '1':
            alone = true;
            break;
        case 'k': {
            size_t n;
            const struct tok_lac_kernels *const *all = tok_lac_kernels_all(&n);

            for (size_t k = 0; k < n; k++)
                if (strcmp(all[k]->name, optarg) == 0)
                    kern = all[k];
            if (kern == NULL) {
                fprintf(stderr, "drv_lac: no kernels '%s' on this CPU\n",
                        optarg);
                return 3;
            }
            break;
        }
        case 'p':
            pos = strtoul(optarg, NULL, 10);
            break;
        case 'r':
            rows = strtoul(optarg, NULL, 10);
            break;
        case 'U':
            user = optarg;
            break;
        default:
            goto usage;
        }
    }
    if (argc - optind != 2)
        goto usage;
    if (strcmp(argv[optind + 1], "seg") == 0)
        mode = TOK_LAC_SEG;
    else if (strcmp(argv[optind + 1], "lac") == 0)
        mode = TOK_LAC_LAC;
    else
        goto usage;
    if (tok_lac_open(&l, argv[optind], 1 << mode, &e) < 0)
        die("open", &e);
    if (user && tok_lac_load_customization(l, user, NULL, &e) < 0)
        die("user dictionary", &e);
    if (tok_lac_batch_new(&b, l, mode, &e) < 0)
        die("batch", &e);
    tok_lac_batch_set_kernels(b, kern);
    tok_lac_batch_set_limits(b, rows, pos);
    tok_lac_batch_want_margins(b, true);
    tok_lac_words_init(&w);
    while (scanf("%zu", &len) == 1 && getchar() == '\n') {
        if (len + 1 > cap) {
            cap = len + 1;
            if ((buf = realloc(buf, cap)) == NULL)
                die("read", NULL);
        }
        if (fread(buf, 1, len, stdin) != len)
            die("read", NULL);
        if (tok_lac_batch_add(b, buf, len, 0, &e) < 0)
            die("add", &e);
        if (alone) {
            if (tok_lac_batch_run(b, &e) < 0)
                die("run", &e);
            print_results(l, b, 0, &w);
            tok_lac_batch_clear(b);
        }
    }
    if (!alone) {
        if (tok_lac_batch_run(b, &e) < 0)
            die("run", &e);
        for (size_t i = 0; i < tok_lac_batch_count(b); i++)
            print_results(l, b, i, &w);
    }
    tok_lac_words_release(&w);
    tok_lac_batch_free(b);
    tok_lac_close(l);
    free(buf);
    return 0;
usage:
    fprintf(stderr, "usage: drv_lac [-1] [-k kernels] [-r rows] [-p positions] "
                    "[-U userdict] MODEL seg|lac < texts\n");
    return 2;
}
