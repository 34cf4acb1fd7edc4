/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jieba_cut.c: jieba segmentation of arbitrary bytes with the real
 * model: $JIEBA_MODEL, else the build's (FUZZ_JIEBA_MODEL, the absolute
 * path of build/jieba.model given by the Makefile), so the target runs
 * from any directory.  The first byte picks the HMM; the rest is the
 * text.  Invalid UTF-8 must be rejected with nothing written; valid text
 * must come back as words that cover it exactly, in order, each non-empty
 * and starting on a character boundary.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "tok.h"

#ifndef FUZZ_JIEBA_MODEL
#    define FUZZ_JIEBA_MODEL "build/jieba.model"
#endif

static struct tok_jieba *j;

/* The model is a prerequisite of this target, not an input: without it,
 * say so and stop before the first input. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *path = getenv("JIEBA_MODEL");
    struct tok_err e;

    (void)argc;
    (void)argv;
    if (path == NULL || path[0] == '\0')
        path = FUZZ_JIEBA_MODEL;
    if (tok_jieba_open(&j, path, &e) < 0) {
        fprintf(stderr,
                "fuzz_jieba_cut: %s\n(the jieba model: make builds it; "
                "set JIEBA_MODEL to its path)\n",
                e.msg);
        exit(1);
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tok_words w;
    const char *text = (const char *)data + 1;
    size_t len, at = 0;
    int rc;

    if (size == 0)
        return 0;
    len = size - 1;
    tok_words_init(&w);
    rc = tok_jieba_cut(j, text, len, data[0] & TOK_JIEBA_HMM, &w, NULL);
    if (tok_utf8_check(text, len) != len) {
        if (rc != TOK_EUTF8 || w.n != 0)
            abort();
    } else {
        if (rc != 0)
            abort();
        for (size_t i = 0; i < w.n; i++) {
            uint32_t cp;

            if (w.starts[i] != at || w.ends[i] <= w.starts[i] ||
                tok_utf8_decode(text + at, len - at, &cp) == 0)
                abort();
            at = w.ends[i];
        }
        if (at != len)
            abort();
    }
    tok_words_release(&w);
    return 0;
}
