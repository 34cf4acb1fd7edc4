/* SPDX-License-Identifier: MIT */
/*
 * fuzz_userdict.c: the jieba user-dictionary parser on arbitrary bytes, on
 * top of a tiny model compiled once from a three-word dictionary and
 * jieba's HMM tables ($JIEBA_HMM_DIR, default Debian's python3-jieba
 * finalseg directory).  Whatever it accepts, the segmenter must still cover
 * a test sentence exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "tok.h"

static char model_path[FUZZ_PATH_MAX], dict_path[FUZZ_PATH_MAX],
    user_path[FUZZ_PATH_MAX];

static void
setup(void)
{
    const char *hmm = getenv("JIEBA_HMM_DIR");
    FILE *f;

    fuzz_tmp_path(dict_path, sizeof(dict_path), "dict.txt");
    fuzz_tmp_path(model_path, sizeof(model_path), "jieba.model");
    fuzz_tmp_path(user_path, sizeof(user_path), "user.dict");
    f = fopen(dict_path, "w");
    if (f == NULL)
        abort();
    fputs("\xe4\xb8\xad\xe6\x96\x87 100 n\n\xe5\x88\x86\xe8\xaf\x8d 50 v\n"
          "AT&T 3 nz\n",
          f);
    fclose(f);
    if (tok_jieba_compile(dict_path,
                          hmm ? hmm
                              : "/usr/lib/python3/dist-packages/"
                                "jieba/finalseg",
                          model_path, NULL) < 0)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char sentence[] = "\xe4\xb8\xad\xe6\x96\x87\xe5\x88\x86"
                                   "\xe8\xaf\x8d AT&T test 123";
    struct tok_jieba *j;
    struct tok_words w;
    size_t at = 0;

    if (model_path[0] == '\0')
        setup();
    fuzz_write_file(user_path, data, size);
    if (tok_jieba_open(&j, model_path, NULL) < 0)
        abort();
    if (tok_jieba_load_userdict(j, user_path, NULL) >= 0) {
        tok_words_init(&w);
        for (int hmm = 0; hmm < 2; hmm++) {
            tok_words_clear(&w);
            at = 0;
            if (tok_jieba_cut(j, sentence, sizeof(sentence) - 1,
                              hmm ? TOK_JIEBA_HMM : 0, &w, NULL) != 0)
                abort();
            for (size_t i = 0; i < w.n; i++) {
                if (w.starts[i] != at || w.ends[i] <= at)
                    abort();
                at = w.ends[i];
            }
            if (at != sizeof(sentence) - 1)
                abort();
        }
        tok_words_release(&w);
    }
    tok_jieba_close(j);
    return 0;
}
