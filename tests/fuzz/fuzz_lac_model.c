/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lac_model.c: the LAC model reader (tok_lac_open) on damaged models.
 * The input edits the fixture's model (tests/lac_fixture.h): byte 0 holds
 * flags (bit 0: recompute the checksums afterwards, so that the checks
 * behind them are reached; bit 1: the rest of the input is the whole
 * model), bytes 1-4 how many bytes to cut off its end, then records of
 * five bytes, a little-endian offset and a byte to XOR there.  Whatever
 * opens must segment texts with words that cover them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lac_fuzz.h"

static unsigned char *model;
static size_t model_len;

static void
load(void)
{
    FILE *f = fopen(lac_fuzz_setup(), "rb");
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0)
        abort();
    rewind(f);
    model_len = (size_t)n;
    if ((model = malloc(model_len)) == NULL ||
        fread(model, 1, model_len, f) != model_len)
        abort();
    fclose(f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const texts[] = {
        "\xe7\x99\xbe\xe5\xba\xa6\xe6\x98\xaf\xe4\xb8\x80\xe5\xae\xb6",
        "ab12 c", "",
        "\xf0\xa0\xae\xb7\xf0\xa0\xae\xb7 A\tz\xe9\xab\x98\xe7\xa7\x91"
    };
    static const size_t lens[] = { 15, 6, 0, 16 };
    struct tok_lac *l;
    unsigned char *m;
    size_t len;
    int flags;

    if (model == NULL)
        load();
    if (size < 5)
        return 0;
    flags = data[0];
    if (flags & 2) {
        len = size - 1;
        if ((m = malloc(len ? len : 1)) == NULL)
            abort();
        memcpy(m, data + 1, len);
    } else {
        uint32_t cut;

        memcpy(&cut, data + 1, 4);
        len = model_len - cut % (model_len + 1);
        if ((m = malloc(model_len)) == NULL)
            abort();
        memcpy(m, model, model_len);
        for (size_t i = 5; i + 5 <= size && len > 0; i += 5) {
            uint32_t off;

            memcpy(&off, data + i, 4);
            m[off % len] ^= data[i + 4];
        }
    }
    if (flags & 1)
        tok_lac_model_fix_checksums(m, len);
    if ((l = calloc(1, sizeof(*l))) == NULL)
        abort();
    if (tok_lac_open_mem(l, m, len, "fuzz", 0, NULL) == 0)
        lac_fuzz_cut(l, 3, texts, lens, 4, flags & 4);
    tok_lac_close(l);
    free(m);
    return 0;
}
