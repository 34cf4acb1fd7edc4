/* SPDX-License-Identifier: MIT */
/*
 * drv_corpus.c: a GPT corpus list opened as the trainer opens it
 * (ds_corpus_open), for tests/conformance/samples_gpt_run.py's blending
 * check against PaddleNLP's build_train_valid_test_datasets.
 *
 *   drv_corpus SPEC SPLIT SEQ_LEN SEED N_TRAIN N_VALID N_TEST CACHE_DIR
 *              COUNT TOKENS_FILE
 *
 * SPEC is the --input_dir list ("7 data/a 3 data/b").  Prints one line per
 * split, "SPLIT N_SAMPLES", and writes the tokens of samples
 * 0..min(COUNT, N)-1 of train, then valid, then test (int32, native order,
 * SEQ_LEN + 1 a sample) to TOKENS_FILE.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ds.h"

int
main(int argc, char **argv)
{
    static const char *const names[3] = { "train", "valid", "test" };
    struct ds_corpus_opts o;
    struct ds_corpus *c = NULL;
    struct ds_sample s;
    struct ds_err err;
    uint64_t count;
    FILE *out;

    if (argc != 11) {
        fprintf(stderr, "usage: drv_corpus SPEC SPLIT SEQ_LEN SEED N_TRAIN "
                        "N_VALID N_TEST CACHE_DIR COUNT TOKENS_FILE\n");
        return 2;
    }
    memset(&o, 0, sizeof(o));
    o.kind = DS_CORPUS_GPT;
    o.split = argv[2];
    o.max_seq_len = (uint32_t)strtoul(argv[3], NULL, 10);
    o.seed = strtoull(argv[4], NULL, 10);
    for (int k = 0; k < 3; k++)
        o.n_samples[k] = strtoull(argv[5 + k], NULL, 10);
    o.cache_dir = argv[8];
    count = strtoull(argv[9], NULL, 10);
    if (ds_corpus_open(&c, argv[1], &o, NULL, 0, 0, &err) != 0 ||
        ds_sample_init(&s, c, &err) != 0) {
        fprintf(stderr, "drv_corpus: %s\n", err.msg);
        return 1;
    }
    out = fopen(argv[10], "wb");
    if (out == NULL) {
        perror(argv[10]);
        return 1;
    }
    for (int k = 0; k < 3; k++) {
        uint64_t n = ds_corpus_n_samples(c, (enum ds_split)k);

        printf("%s %" PRIu64 "\n", names[k], n);
        for (uint64_t i = 0; i < n && i < count; i++) {
            if (ds_corpus_sample(c, (enum ds_split)k, i, &s, &err) != 0) {
                fprintf(stderr, "drv_corpus: %s sample %" PRIu64 ": %s\n",
                        names[k], i, err.msg);
                return 1;
            }
            if (fwrite(s.tokens, sizeof(*s.tokens), s.n_tokens, out) !=
                s.n_tokens) {
                perror(argv[10]);
                return 1;
            }
        }
    }
    if (fclose(out) != 0) {
        perror(argv[10]);
        return 1;
    }
    ds_sample_release(&s);
    ds_corpus_close(c);
    return 0;
}
