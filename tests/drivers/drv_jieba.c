/* SPDX-License-Identifier: MIT */
/*
 * drv_jieba.c: tok_jieba_cut() as a filter, for the conformance suite to
 * compare every word it returns, whitespace words included (which the
 * segment tool drops, as PaddleNLP does), with jieba.cut().
 *
 *   drv_jieba [-c] MODEL HMM [USERDICT] < texts > words
 *
 * Each text comes as its length in bytes on a line of its own, then its
 * bytes; each goes out as one line of its words' byte spans, "start-end"
 * separated by spaces.  HMM is 1 or 0.  It reads the model's edge table
 * from the mapping (TOK_JIEBA_OPEN_MAPPED), or with -c from a copy
 * (TOK_JIEBA_OPEN_COPY); the segment tool, which the suite also runs,
 * opens it with 0 (the file's huge pages, or a copy): every way of
 * opening a model is compared with jieba.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok.h"

static void
die(const char *what, const struct tok_err *e)
{
    fprintf(stderr, "drv_jieba: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

int
main(int argc, char **argv)
{
    struct tok_jieba *j;
    struct tok_words w;
    struct tok_err e;
    char *buf = NULL;
    size_t cap = 0, len;

    int hmm, flags = TOK_JIEBA_OPEN_MAPPED;

    if (argc > 1 && strcmp(argv[1], "-c") == 0) {
        flags = TOK_JIEBA_OPEN_COPY;
        argc--;
        argv++;
    }
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: drv_jieba [-c] MODEL HMM [USERDICT] < texts\n");
        return 2;
    }
    hmm = atoi(argv[2]) ? TOK_JIEBA_HMM : 0;
    if (tok_jieba_open_flags(&j, argv[1], flags, &e) < 0)
        die("open", &e);
    if (argc == 4 && tok_jieba_load_userdict(j, argv[3], &e) < 0)
        die("user dictionary", &e);
    tok_words_init(&w);
    while (scanf("%zu", &len) == 1 && getchar() == '\n') {
        if (len + 1 > cap) {
            cap = len + 1;
            buf = realloc(buf, cap);
            if (buf == NULL)
                die("read", NULL);
        }
        if (fread(buf, 1, len, stdin) != len)
            die("read", NULL);
        tok_words_clear(&w);
        if (tok_jieba_cut(j, buf, len, hmm, &w, &e) < 0)
            die("cut", &e);
        for (size_t i = 0; i < w.n; i++)
            printf("%s%zu-%zu", i ? " " : "", w.starts[i], w.ends[i]);
        putchar('\n');
    }
    free(buf);
    tok_words_release(&w);
    tok_jieba_close(j);
    return ferror(stdout) ? 1 : 0;
}
