/* SPDX-License-Identifier: MIT */
/*
 * gen_logits.c: the logits processors of generation, greedy choice,
 * log-softmax and sampling (gen_logits.h), each written after
 * transformers 4.46's generation/logits_process.py and torch's CPU
 * kernels, so that the filtered distributions are theirs: fp32 scores,
 * fp32 softmax probabilities (1/sum times each exponential, as torch's
 * softmax), cumulative sums in double (torch's CPU cumsum accumulates
 * floats in double).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen_logits.h"
#include "ops.h"

struct gen_scratch {
    int V;
    float *vals;    /* [V] */
    int32_t *idx;   /* [V] */
    uint32_t *seen; /* [V]: epoch of the last mark */
    uint32_t epoch;
};

struct gen_scratch *
gen_scratch_new(int V)
{
    struct gen_scratch *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->V = V;
    s->vals = malloc((size_t)V * sizeof(float));
    s->idx = malloc((size_t)V * sizeof(int32_t));
    s->seen = calloc((size_t)V, sizeof(uint32_t));
    if (s->vals == NULL || s->idx == NULL || s->seen == NULL) {
        gen_scratch_free(s);
        return NULL;
    }
    return s;
}

void
gen_scratch_free(struct gen_scratch *s)
{
    if (s == NULL)
        return;
    free(s->vals);
    free(s->idx);
    free(s->seen);
    free(s);
}

void
gen_repetition_penalty(float *scores, int V, const int32_t *hist, size_t n,
                       float penalty, struct gen_scratch *s)
{
    if (++s->epoch == 0) { /* wrapped: forget every mark */
        memset(s->seen, 0, (size_t)s->V * sizeof(uint32_t));
        s->epoch = 1;
    }
    /* torch.gather then scatter: a repeated token is penalized once. */
    for (size_t i = 0; i < n; i++) {
        int32_t t = hist[i];

        if (t < 0 || t >= V || s->seen[t] == s->epoch)
            continue;
        s->seen[t] = s->epoch;
        scores[t] = scores[t] < 0 ? scores[t] * penalty : scores[t] / penalty;
    }
}

/* The k-th largest of v[0..n) (k >= 1, k <= n), by quickselect. */
static float
kth_largest(float *v, int n, int k)
{
    int lo = 0, hi = n - 1, want = k - 1;

    while (lo < hi) {
        float pivot = v[lo + (hi - lo) / 2];
        int i = lo, j = hi;

        while (i <= j) { /* descending: larger values first */
            while (v[i] > pivot)
                i++;
            while (v[j] < pivot)
                j--;
            if (i <= j) {
                float t = v[i];

                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            return v[want];
    }
    return v[want];
}

void
gen_top_k(float *scores, int V, int k, struct gen_scratch *s)
{
    float kth;

    if (k <= 0 || k >= V)
        return;
    memcpy(s->vals, scores, (size_t)V * sizeof(float));
    kth = kth_largest(s->vals, V, k);
    for (int i = 0; i < V; i++)
        if (scores[i] < kth)
            scores[i] = -INFINITY;
}

/* Ascending scores; ties (whose order torch.sort leaves unspecified) by
 * index. */
static int
by_score(const void *a, const void *b, void *keys)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    float x = ((const float *)keys)[i], y = ((const float *)keys)[j];

    if (x != y)
        return x < y ? -1 : 1;
    return (i > j) - (i < j);
}

void
gen_top_p(float *scores, int V, float p, struct gen_scratch *s)
{
    int n = 0;
    float max, inv, limit = (float)(1.0 - (double)p);
    double sum = 0.0, cum = 0.0;

    if (p >= 1.0f)
        return;
    /* Filtered-out tokens weigh 0: they sort first, their cumulative sum
     * stays 0 <= 1 - p, and they stay out; only the others are sorted. */
    for (int i = 0; i < V; i++)
        if (scores[i] > -INFINITY)
            s->idx[n++] = i;
    if (n <= 1)
        return;
    qsort_r(s->idx, (size_t)n, sizeof(int32_t), by_score, scores);
    max = scores[s->idx[n - 1]];
    for (int j = 0; j < n; j++) {
        s->vals[j] = expf(scores[s->idx[j]] - max);
        sum += s->vals[j];
    }
    inv = 1.0f / (float)sum;
    /* All but the largest (min_tokens_to_keep = 1). */
    for (int j = 0; j < n - 1; j++) {
        cum += (double)(s->vals[j] * inv);
        if ((float)cum <= limit)
            scores[s->idx[j]] = -INFINITY;
    }
}

void
gen_filter_apply(float *scores, int V, const struct gen_filter *f,
                 const int32_t *hist, size_t n_hist, int n_new,
                 struct gen_scratch *s)
{
    if (f->repetition_penalty != 1.0f)
        gen_repetition_penalty(scores, V, hist, n_hist, f->repetition_penalty,
                               s);
    if (f->eos_id >= 0 && f->eos_id < V && n_new < f->min_new_tokens)
        scores[f->eos_id] = -INFINITY;
    if (!f->sample)
        return;
    if (f->temperature != 1.0f)
        for (int i = 0; i < V; i++)
            scores[i] = scores[i] / f->temperature;
    gen_top_k(scores, V, f->top_k, s);
    gen_top_p(scores, V, f->top_p, s);
}

int32_t
gen_argmax(const float *scores, int V)
{
    int32_t best = 0;

    for (int i = 1; i < V; i++)
        if (scores[i] > scores[best])
            best = i;
    return best;
}

void
gen_log_softmax(float *scores, int V)
{
    float max = -INFINITY, lse;
    double sum = 0.0;

    for (int i = 0; i < V; i++)
        max = scores[i] > max ? scores[i] : max;
    for (int i = 0; i < V; i++)
        sum += expf(scores[i] - max);
    lse = logf((float)sum);
    for (int i = 0; i < V; i++)
        scores[i] = scores[i] - max - lse;
}

void
gen_rng_seed(struct gen_rng *r, uint64_t seed, uint64_t prompt, uint64_t seq)
{
    r->state =
        ops_splitmix64(seed ^ ops_splitmix64(prompt ^ ops_splitmix64(seq + 1)));
}

double
gen_rng_uniform(struct gen_rng *r)
{
    r->state += 0x9E3779B97F4A7C15ULL;
    return (double)(ops_splitmix64(r->state) >> 11) * 0x1.0p-53;
}

int32_t
gen_sample(const float *scores, int V, double u)
{
    float max = -INFINITY;
    double total = 0.0, target, acc = 0.0;
    int32_t last = -1;

    for (int i = 0; i < V; i++)
        max = scores[i] > max ? scores[i] : max;
    if (max == -INFINITY)
        return 0;
    for (int i = 0; i < V; i++)
        if (scores[i] > -INFINITY)
            total += exp((double)scores[i] - (double)max);
    target = u * total;
    for (int i = 0; i < V; i++) {
        if (scores[i] == -INFINITY)
            continue;
        acc += exp((double)scores[i] - (double)max);
        last = i;
        if (acc > target)
            return i;
    }
    return last; /* u * total rounded up to the sum */
}
