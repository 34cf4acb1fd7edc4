/* SPDX-License-Identifier: MIT */
/*
 * drv_gpt.c: the GPT samples of libdata for tests/conformance/
 * samples_gpt_run.py.
 *
 *   drv_gpt [-c DIR -p DATA_PREFIX -N NAME -s SPLIT] [-a OUTDIR]
 *           [-t FILE -n COUNT] [-B] PREFIX FIRST END NUM_SAMPLES SEQ_LEN SEED
 *
 * builds the samples of items FIRST..END-1 of the dataset PREFIX and
 * prints "n_samples E epochs E separate S from_cache C hash H".  -c uses
 * the cache in DIR (with the description strings -p, -N, -s); -a writes
 * doc_idx.i32, sample_idx.i32 and shuffle_idx.u64 (raw, native order) to
 * OUTDIR; -t writes the tokens of samples 0..COUNT-1 (int32, native order)
 * to FILE; -B times ds_gpt_sample over every sample on one thread and
 * prints "samples_per_s X".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ds.h"

static int
write_raw(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct ds_gpt_cache cache = { NULL, NULL, "train", "949,50,1" };
    const char *arrays = NULL, *tokfile = NULL;
    uint64_t count = 0, first, end, n_samples, seed, n;
    unsigned long seq_len;
    struct ds_dataset *d = NULL;
    struct ds_gpt *g = NULL;
    struct ds_err err = { 0, "" };
    uint64_t *docs;
    int32_t *buf;
    int c, bench = 0, use_cache = 0;
    char hash[33] = "-";

    while ((c = getopt(argc, argv, "c:p:N:s:a:t:n:B")) != -1) {
        switch (c) {
        case 'c':
            cache.dir = optarg;
            use_cache = 1;
            break;
        case 'p':
            cache.data_prefix = optarg;
            break;
        case 'N':
            cache.name = optarg;
            break;
        case 's':
            cache.split = optarg;
            break;
        case 'a':
            arrays = optarg;
            break;
        case 't':
            tokfile = optarg;
            break;
        case 'n':
            count = strtoull(optarg, NULL, 10);
            break;
        case 'B':
            bench = 1;
            break;
        default:
            return 2;
        }
    }
    if (argc - optind != 6) {
        fprintf(stderr, "usage: see drv_gpt.c\n");
        return 2;
    }
    first = strtoull(argv[optind + 1], NULL, 10);
    end = strtoull(argv[optind + 2], NULL, 10);
    n_samples = strtoull(argv[optind + 3], NULL, 10);
    seq_len = strtoul(argv[optind + 4], NULL, 10);
    seed = strtoull(argv[optind + 5], NULL, 10);
    if (cache.data_prefix == NULL)
        cache.data_prefix = argv[optind];
    if (ds_open(&d, argv[optind], &err) < 0) {
        fprintf(stderr, "drv_gpt: %s\n", err.msg);
        return 1;
    }
    docs = malloc((end > first ? end - first : 1) * sizeof(*docs));
    for (uint64_t i = first; i < end; i++)
        docs[i - first] = i;
    if (ds_gpt_build(&g, d, docs, end > first ? end - first : 0, n_samples,
                     (uint32_t)seq_len, seed, use_cache ? &cache : NULL,
                     &err) < 0) {
        fprintf(stderr, "drv_gpt: %s (%s)\n", err.msg, ds_strerror(err.code));
        return 1;
    }
    if (use_cache)
        ds_gpt_cache_hash(&cache, n_samples, (uint32_t)seq_len, seed, hash);
    printf("n_samples %" PRIu64 " epochs %" PRIu64
           " separate %d from_cache %d hash %s\n",
           ds_gpt_n_samples(g), ds_gpt_n_epochs(g),
           ds_gpt_separate_last_epoch(g), ds_gpt_from_cache(g), hash);
    if (arrays != NULL) {
        const void *p;

        p = ds_gpt_doc_idx(g, &n);
        if (write_raw(arrays, "doc_idx.i32", p, n * 4) < 0)
            return 1;
        p = ds_gpt_sample_idx(g, &n);
        if (write_raw(arrays, "sample_idx.i32", p, n * 8) < 0)
            return 1;
        p = ds_gpt_shuffle_idx(g, &n);
        if (write_raw(arrays, "shuffle_idx.u64", p, n * 8) < 0)
            return 1;
    }
    buf = malloc(((size_t)seq_len + 1) * sizeof(int32_t));
    if (tokfile != NULL) {
        FILE *f = fopen(tokfile, "wb");

        if (count > ds_gpt_n_samples(g))
            count = ds_gpt_n_samples(g);
        for (uint64_t i = 0; f != NULL && i < count; i++) {
            if (ds_gpt_sample(g, d, i, buf, &err) < 0) {
                fprintf(stderr, "drv_gpt: sample %" PRIu64 ": %s\n", i,
                        err.msg);
                return 1;
            }
            fwrite(buf, sizeof(int32_t), (size_t)seq_len + 1, f);
        }
        if (f == NULL || fclose(f) != 0) {
            perror(tokfile);
            return 1;
        }
    }
    if (bench) {
        struct timespec t0, t1;
        uint64_t sum = 0;
        double s;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (uint64_t i = 0; i < ds_gpt_n_samples(g); i++) {
            ds_gpt_sample(g, d, i, buf, NULL);
            sum += (uint32_t)buf[seq_len / 2];
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("samples_per_s %.0f (checksum %" PRIu64 ")\n",
               (double)ds_gpt_n_samples(g) / s, sum);
    }
    free(buf);
    free(docs);
    ds_gpt_free(g);
    ds_close(d);
    return 0;
}
