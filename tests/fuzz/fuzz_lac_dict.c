/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lac_dict.c: LAC user dictionaries (tok_lac_load_customization) and
 * the segmentation of arbitrary text with them, on the fixture's model
 * (tests/lac_fixture.h).  The input is the dictionary, a NUL byte, then
 * texts separated by newlines; byte 0 of the dictionary's first line
 * being ';' makes ";" the piece separator.  Whatever the dictionary, the
 * words of every text must cover it exactly, in both networks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lac_fuzz.h"

static struct tok_lac *lac;
static char user_path[FUZZ_PATH_MAX];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t dict_len = nul ? (size_t)(nul - data) : size;
    const char *texts[64];
    size_t lens[64], n = 0;

    if (lac == NULL) {
        if (tok_lac_open(&lac, lac_fuzz_setup(), 0, NULL) < 0)
            abort();
        fuzz_tmp_path(user_path, sizeof(user_path), "user.dic");
    }
    fuzz_write_file(user_path, data, dict_len);
    /* A failed load keeps the dictionary before it. */
    tok_lac_load_customization(lac, user_path,
                               dict_len && data[0] == ';' ? ";" : NULL, NULL);
    if (nul != NULL) {
        const char *p = (const char *)nul + 1, *end = (const char *)data + size;

        while (n < 64) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));

            texts[n] = p;
            lens[n++] = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (nl == NULL)
                break;
            p = nl + 1;
        }
    }
    lac_fuzz_cut(lac, 3, texts, lens, n, n > 2);
    return 0;
}
