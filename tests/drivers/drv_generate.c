/* SPDX-License-Identifier: MIT */
/*
 * drv_generate.c: generation's logits processors (train/generate/
 * gen_logits.c) on recorded rows of logits, for
 * tests/conformance/generate_run.py, which applies transformers' own
 * processors to the same rows and compares.  Reads cases from stdin, one
 * per three lines:
 *
 *   V n_new eos min_new repetition_penalty sample temperature top_k top_p
 *       draws seed
 *   the history: n ids (the prompt and the tokens so far)
 *   the logits: V numbers
 *
 * and writes, for each case, the processed scores ("-inf" for the tokens
 * filtered out, else %.9g) on one line and, when draws > 0, the counts
 * of `draws` tokens drawn from them (gen_sample() with the stream of
 * gen_rng_seed(seed, 0, 0)) on the next.  Exit 1 on malformed input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate/gen_logits.h"

static char *
read_line(FILE *f)
{
    char *line = NULL;
    size_t cap = 0;

    if (getline(&line, &cap, f) < 0) {
        free(line);
        return NULL;
    }
    return line;
}

static int
run_case(const char *head, FILE *in)
{
    struct gen_filter f;
    int V, n_new, min_new, sample, top_k, draws;
    long eos;
    double rep, temp, top_p;
    unsigned long long seed;
    char *hist_line = read_line(in), *logit_line = read_line(in), *p, *end;
    int32_t *hist = NULL;
    size_t n_hist = 0;
    float *s;
    struct gen_scratch *sc;

    if (hist_line == NULL || logit_line == NULL ||
        sscanf(head, "%d %d %ld %d %lf %d %lf %d %lf %d %llu", &V, &n_new, &eos,
               &min_new, &rep, &sample, &temp, &top_k, &top_p, &draws,
               &seed) != 11 ||
        V < 1) {
        fprintf(stderr, "drv_generate: a malformed case\n");
        return -1;
    }
    hist = malloc((strlen(hist_line) / 2 + 1) * sizeof(int32_t));
    s = malloc((size_t)V * sizeof(float));
    sc = gen_scratch_new(V);
    if (hist == NULL || s == NULL || sc == NULL)
        return -1;
    for (p = hist_line;; p = end) {
        long v = strtol(p, &end, 10);

        if (end == p)
            break;
        hist[n_hist++] = (int32_t)v;
    }
    p = logit_line;
    for (int i = 0; i < V; i++, p = end) {
        s[i] = strtof(p, &end);
        if (end == p) {
            fprintf(stderr, "drv_generate: %d logits, want %d\n", i, V);
            return -1;
        }
    }
    f.repetition_penalty = (float)rep;
    f.min_new_tokens = min_new;
    f.eos_id = (int32_t)eos;
    f.sample = sample;
    f.temperature = (float)temp;
    f.top_k = top_k;
    f.top_p = (float)top_p;
    gen_filter_apply(s, V, &f, hist, n_hist, n_new, sc);
    for (int i = 0; i < V; i++) {
        if (s[i] == -INFINITY)
            printf("%s-inf", i ? " " : "");
        else
            printf("%s%.9g", i ? " " : "", s[i]);
    }
    putchar('\n');
    if (draws > 0) {
        int *count = calloc((size_t)V, sizeof(int));
        struct gen_rng r;

        gen_rng_seed(&r, seed, 0, 0);
        for (int d = 0; d < draws; d++)
            count[gen_sample(s, V, gen_rng_uniform(&r))]++;
        for (int i = 0; i < V; i++)
            printf("%s%d", i ? " " : "", count[i]);
        putchar('\n');
        free(count);
    }
    free(hist);
    free(s);
    free(hist_line);
    free(logit_line);
    gen_scratch_free(sc);
    return 0;
}

int
main(void)
{
    char *head;

    while ((head = read_line(stdin)) != NULL) {
        int rc = head[0] == '\n' ? 0 : run_case(head, stdin);

        free(head);
        if (rc < 0)
            return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
