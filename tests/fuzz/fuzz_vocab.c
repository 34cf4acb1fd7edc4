/* SPDX-License-Identifier: MIT */
/*
 * fuzz_vocab.c: the vocab parser on arbitrary bytes.  Whatever it accepts
 * must be self-consistent: every id's token finds that id again, and the
 * ##<CJK> extension keeps that true.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "tok.h"

static void
check_consistent(const struct tok_vocab *v)
{
    for (size_t id = 0; id < tok_vocab_n_ids(v); id++) {
        size_t len;
        const char *t = tok_vocab_token(v, (tok_id)id, &len);

        if (t != NULL && tok_vocab_find(v, t, len) != (tok_id)id)
            abort();
    }
    if (tok_vocab_special(v, TOK_SPECIAL_UNK) < 0)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tok_vocab *v = NULL;
    struct tok_err e;

    if (tok_vocab_parse(&v, (const char *)data, size, "fuzz", &e) < 0) {
        if (v != NULL || e.code >= 0)
            abort();
        return 0;
    }
    check_consistent(v);
    if (tok_vocab_extend_chinese(v, &e) < 0)
        abort();
    check_consistent(v);
    tok_vocab_free(v);
    return 0;
}
