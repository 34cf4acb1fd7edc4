/* SPDX-License-Identifier: MIT */
/*
 * lac_fuzz.h: what the LAC fuzz targets share: the tiny package of
 * tests/lac_fixture.h compiled once into a model in the target's scratch
 * directory (fuzz_tmp_dir(), removed at exit), and a check that a text's
 * words cover it exactly.
 */
#ifndef LAC_FUZZ_H
#define LAC_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lac_fixture.h"
#include "fuzz.h"
#include "tok.h"
#include "tok_lac_int.h"

static char lac_fuzz_dir[FUZZ_PATH_MAX], lac_fuzz_model[FUZZ_PATH_MAX + 16];

/* The fixture's model (compiled on first use). */
static const char *
lac_fuzz_setup(void)
{
    if (lac_fuzz_model[0] == '\0') {
        fuzz_tmp_path(lac_fuzz_dir, sizeof(lac_fuzz_dir), "lac");
        if (mkdir(lac_fuzz_dir, 0700) != 0 || lac_fixture_write(lac_fuzz_dir))
            abort();
        snprintf(lac_fuzz_model, sizeof(lac_fuzz_model), "%s/lac.model",
                 lac_fuzz_dir);
        if (tok_lac_compile(lac_fuzz_dir, lac_fuzz_model, "fuzz", NULL) < 0)
            abort();
    }
    return lac_fuzz_model;
}

/* Run texts through both networks (each in one batch, and in small
 * groups with the long-text windows when `small`), aborting unless the
 * words of each text cover it in order. */
static void
lac_fuzz_cut(const struct tok_lac *l, int modes, const char *const *texts,
             const size_t *lens, size_t n, int small)
{
    struct tok_lac_words w;

    tok_lac_words_init(&w);
    for (int mode = 0; mode < 2; mode++) {
        struct tok_lac_batch *b;

        if (!(modes & (1 << mode)))
            continue;
        if (tok_lac_batch_new(&b, l, (enum tok_lac_mode)mode, NULL) < 0)
            abort();
        if (small)
            tok_lac_batch_set_limits(b, 2, 5);
        for (size_t i = 0; i < n; i++)
            if (tok_lac_batch_add(b, texts[i], lens[i], 0, NULL) < 0)
                break; /* invalid UTF-8: refused, nothing added */
        if (tok_lac_batch_run(b, NULL) < 0)
            abort();
        for (size_t i = 0; i < tok_lac_batch_count(b); i++) {
            size_t len, at = 0;

            tok_lac_batch_text(b, i, &len);
            tok_lac_words_clear(&w);
            if (tok_lac_batch_words(b, i, &w, NULL) < 0)
                abort();
            for (size_t k = 0; k < w.n; k++) {
                if (w.starts[k] != at || w.ends[k] <= at ||
                    tok_lac_tag_name(l, w.tags[k], NULL) == NULL)
                    abort();
                at = w.ends[k];
            }
            if (at != len)
                abort();
        }
        tok_lac_batch_free(b);
    }
    tok_lac_words_release(&w);
}

#endif /* LAC_FUZZ_H */
