/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jieba_cut.c: jieba segmentation of arbitrary bytes with the real
 * model ($JIEBA_MODEL, default build/jieba.model).  The first byte picks the
 * HMM; the rest is the text.  Invalid UTF-8 must be rejected with nothing
 * written; valid text must come back as words that cover it exactly, in
 * order, each non-empty and starting on a character boundary.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "tok.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tok_jieba *j;
    struct tok_words w;
    const char *text = (const char *)data + 1;
    size_t len, at = 0;
    int rc;

    if (size == 0)
        return 0;
    if (j == NULL) {
        const char *path = getenv("JIEBA_MODEL");

        if (tok_jieba_open(&j, path ? path : "build/jieba.model", NULL) < 0)
            abort(); /* the model is a prerequisite of this target */
    }
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
