/* SPDX-License-Identifier: MIT */
/*
 * drv_rng.c: libdata's RNGs and split for tests/conformance/
 * samples_rng_run.py.  Reads one command a line from stdin and prints one
 * line of results for each:
 *
 *   mt32 SEED N            N outputs of std::mt19937(SEED)
 *   mt64 SEED N            N outputs of std::mt19937_64(SEED)
 *   random SEED N          N RandomState(SEED).random_sample() (%.17g)
 *   randint SEED LO HI N   N RandomState(SEED).randint(LO, HI)
 *   shuffle SEED N         RandomState(SEED).shuffle(np.arange(N))
 *   choice SEED K N P...   K RandomState(SEED).choice(N, p=P) in a row
 *   geometric SEED N P     N RandomState(SEED).geometric(P)
 *   split D STRING         split_indices(STRING, D), or "error CODE"
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ds.h"

int
main(void)
{
    static char line[1 << 20];
    struct ds_mt32 g;

    while (fgets(line, sizeof(line), stdin) != NULL) {
        char cmd[16];
        uint64_t seed = 0;
        long long n = 0, lo = 0, hi = 0;
        int off = 0;

        if (sscanf(line, "%15s%n", cmd, &off) != 1)
            continue;
        if (strcmp(cmd, "split") == 0) {
            int64_t o[4];
            int rc;
            char *s = line + off;

            n = strtoll(s, &s, 10);
            while (*s == ' ')
                s++;
            s[strcspn(s, "\n")] = '\0';
            rc = ds_split_indices(s, n, o, NULL);
            if (rc == DS_EINVAL)
                printf("error %d\n", rc);
            else
                printf("%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
                       o[0], o[1], o[2], o[3]);
        } else if (strcmp(cmd, "mt64") == 0) {
            struct ds_mt64 g64;

            sscanf(line + off, "%" SCNu64 " %lld", &seed, &n);
            ds_mt64_init(&g64, seed);
            for (long long i = 0; i < n; i++)
                printf("%s%" PRIu64, i ? " " : "", ds_mt64_next(&g64));
            printf("\n");
        } else if (strcmp(cmd, "randint") == 0) {
            sscanf(line + off, "%" SCNu64 " %lld %lld %lld", &seed, &lo, &hi,
                   &n);
            ds_mt32_init(&g, (uint32_t)seed);
            for (long long i = 0; i < n; i++)
                printf("%s%" PRId64, i ? " " : "",
                       ds_rs_randint(&g, (int64_t)lo, (int64_t)hi));
            printf("\n");
        } else if (strcmp(cmd, "geometric") == 0) {
            double p;

            sscanf(line + off, "%" SCNu64 " %lld %lf", &seed, &n, &p);
            ds_mt32_init(&g, (uint32_t)seed);
            for (long long i = 0; i < n; i++)
                printf("%s%" PRId64, i ? " " : "", ds_rs_geometric(&g, p));
            printf("\n");
        } else if (strcmp(cmd, "choice") == 0) {
            char *s = line + off;
            long long k;
            double *p;

            seed = strtoull(s, &s, 10);
            k = strtoll(s, &s, 10);
            n = strtoll(s, &s, 10);
            p = (double *)malloc((size_t)n * sizeof(*p));
            if (p == NULL)
                return 1;
            for (long long i = 0; i < n; i++)
                p[i] = strtod(s, &s);
            ds_mt32_init(&g, (uint32_t)seed);
            for (long long i = 0; i < k; i++)
                printf("%s%zu", i ? " " : "", ds_rs_choice(&g, p, (size_t)n));
            printf("\n");
            free(p);
        } else {
            sscanf(line + off, "%" SCNu64 " %lld", &seed, &n);
            ds_mt32_init(&g, (uint32_t)seed);
            if (strcmp(cmd, "mt32") == 0) {
                for (long long i = 0; i < n; i++)
                    printf("%s%" PRIu32, i ? " " : "", ds_mt32_next(&g));
            } else if (strcmp(cmd, "random") == 0) {
                for (long long i = 0; i < n; i++)
                    printf("%s%.17g", i ? " " : "", ds_rs_random(&g));
            } else if (strcmp(cmd, "shuffle") == 0) {
                int64_t *a = (int64_t *)malloc((size_t)(n ? n : 1) * 8);

                if (a == NULL)
                    return 1;
                for (long long i = 0; i < n; i++)
                    a[i] = i;
                ds_rs_shuffle(&g, a, (size_t)n, sizeof(*a));
                for (long long i = 0; i < n; i++)
                    printf("%s%" PRId64, i ? " " : "", a[i]);
                free(a);
            } else {
                fprintf(stderr, "drv_rng: unknown command '%s'\n", cmd);
                return 2;
            }
            printf("\n");
        }
    }
    return 0;
}
