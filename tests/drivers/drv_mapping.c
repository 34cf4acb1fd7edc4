/* SPDX-License-Identifier: MIT */
/*
 * drv_mapping.c: build_mapping, its cache and blending for
 * tests/conformance/samples_rng_run.py.
 *
 *   drv_mapping build DOCS SIZES MNS MSL SSP SEED MIN_SENT EPOCHS OUT
 *       DOCS (int64) and SIZES (int32) are raw native-order files; writes
 *       the rows (raw, uint32 or uint64) to OUT and prints
 *       "rows N dtype D build_s T" (T: ds_mapping_build alone).
 *   drv_mapping get PREFIX SPLIT DOCS SIZES MNS MSL SSP SEED MIN_SENT EPOCHS
 *       ds_mapping_get: prints "rows N built B" or "error CODE MESSAGE".
 *   drv_mapping blend SIZE W...
 *       prints dataset_index, then dataset_sample_index, one line each.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ds.h"

static void *
read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    void *p;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        perror(path);
        exit(2);
    }
    rewind(f);
    p = malloc((size_t)n + 8);
    if (p == NULL || fread(p, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void
params(char **a, struct ds_mapping_params *p)
{
    p->max_num_samples = strtoull(a[0], NULL, 10);
    p->max_seq_len = (int32_t)atoi(a[1]);
    p->short_seq_prob = strtod(a[2], NULL);
    p->seed = (int32_t)atoi(a[3]);
    p->min_num_sent = (int32_t)atoi(a[4]);
    p->num_epochs = (int32_t)atoi(a[5]);
}

int
main(int argc, char **argv)
{
    struct ds_mapping_params p;
    struct ds_mapping *m = NULL;
    struct ds_err e;
    size_t dlen, slen;
    int64_t *docs;
    int32_t *sizes;
    int rc;

    if (argc >= 3 && strcmp(argv[1], "blend") == 0) {
        uint64_t size = strtoull(argv[2], NULL, 10);
        size_t n = (size_t)(argc - 3);
        double *w = (double *)malloc((n ? n : 1) * sizeof(*w));
        uint16_t *di = (uint16_t *)malloc((size ? size : 1) * 2);
        int64_t *dsi = (int64_t *)malloc((size ? size : 1) * 8);

        if (w == NULL || di == NULL || dsi == NULL)
            return 2;
        for (size_t i = 0; i < n; i++)
            w[i] = strtod(argv[3 + i], NULL);
        if ((rc = ds_blend_build(w, n, size, di, dsi, &e)) < 0) {
            printf("error %d %s\n", rc, e.msg);
            return 1;
        }
        for (uint64_t s = 0; s < size; s++)
            printf("%s%u", s ? " " : "", di[s]);
        printf("\n");
        for (uint64_t s = 0; s < size; s++)
            printf("%s%" PRId64, s ? " " : "", dsi[s]);
        printf("\n");
        free(w);
        free(di);
        free(dsi);
        return 0;
    }
    if (argc == 11 && strcmp(argv[1], "build") == 0) {
        struct timespec t0, t1;
        FILE *f;
        size_t item;

        docs = (int64_t *)read_all(argv[2], &dlen);
        sizes = (int32_t *)read_all(argv[3], &slen);
        params(argv + 4, &p);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = ds_mapping_build(&m, docs, dlen / 8 - 1, sizes, slen / 4, &p, &e);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (rc < 0) {
            printf("error %d %s\n", rc, e.msg);
            return 1;
        }
        item = ds_mapping_dtype(m) == DS_DTYPE_UINT64 ? 24 : 12;
        f = fopen(argv[10], "wb");
        if (f == NULL ||
            fwrite(ds_mapping_rows(m), item, (size_t)ds_mapping_n(m), f) !=
                (size_t)ds_mapping_n(m) ||
            fclose(f) != 0) {
            perror(argv[10]);
            return 2;
        }
        printf("rows %" PRIu64 " dtype %s build_s %.6f\n", ds_mapping_n(m),
               ds_dtype_name(ds_mapping_dtype(m)),
               (double)(t1.tv_sec - t0.tv_sec) +
                   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    } else if (argc == 12 && strcmp(argv[1], "get") == 0) {
        int built = -1;

        docs = (int64_t *)read_all(argv[4], &dlen);
        sizes = (int32_t *)read_all(argv[5], &slen);
        params(argv + 6, &p);
        rc = ds_mapping_get(&m, argv[2], argv[3], docs, dlen / 8 - 1, sizes,
                            slen / 4, &p, &built, &e);
        if (rc < 0) {
            printf("error %d %s\n", rc, e.msg);
            return 1;
        }
        printf("rows %" PRIu64 " built %d\n", ds_mapping_n(m), built);
    } else {
        fprintf(stderr, "usage: see tests/drivers/drv_mapping.c\n");
        return 2;
    }
    ds_mapping_free(m);
    free(docs);
    free(sizes);
    return 0;
}
