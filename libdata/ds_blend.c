/* SPDX-License-Identifier: MIT */
/*
 * ds_blend.c: blending several datasets by weight (ernie-data.md 7.2 and
 * 7.4): PaddleNLP's per-dataset sample counts with the 1.005 over-request,
 * BlendableDataset's normalization with np.sum, and
 * helpers.cpp::build_blending_indices.
 */
#include <math.h>
#include <stdlib.h>

#include "ds_int.h"

int
ds_blend_counts(const double *weights, size_t n, uint64_t total,
                uint64_t *counts, struct ds_err *err)
{
    double sum = 0;

    for (size_t i = 0; i < n; i++) {
        if (!isfinite(weights[i]) || weights[i] < 0)
            return ds_err_set(err, DS_EINVAL,
                              "blend: weight %zu (%g) is negative or not "
                              "finite",
                              i, weights[i]);
        sum += weights[i];
    }
    if (!(sum > 0) || !isfinite(sum))
        return ds_err_set(err, DS_EINVAL,
                          "blend: the %zu weights sum to %g; give at least "
                          "one positive weight",
                          n, sum);
    for (size_t i = 0; i < n; i++) {
        double c = ceil((double)total * (weights[i] / sum) * 1.005);

        if (!(c < 9223372036854775808.0))
            return ds_err_set(err, DS_EINVAL,
                              "blend: %llu samples of dataset %zu overflow",
                              (unsigned long long)total, i);
        counts[i] = (uint64_t)c;
    }
    return 0;
}

/* numpy's pairwise_sum (umath/loops_utils.h) for doubles. */
static double
pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.;

        for (size_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        size_t i;

        for (int k = 0; k < 8; k++)
            r[k] = a[k];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += a[i + k];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    size_t n2 = n / 2;

    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

int
ds_blend_normalize(double *w, size_t n, struct ds_err *err)
{
    double sum = pairwise_sum(w, n);

    if (sum == 0 || !isfinite(sum))
        return ds_err_set(err, DS_EINVAL, "blend: the %zu weights sum to %g", n,
                          sum);
    for (size_t i = 0; i < n; i++)
        w[i] /= sum;
    return 0;
}

int
ds_blend_build(const double *w, size_t n, uint64_t size,
               uint16_t *dataset_index, int64_t *dataset_sample_index,
               struct ds_err *err)
{
    int64_t *taken;

    if (n == 0 || n > 32767)
        return ds_err_set(err, DS_EINVAL,
                          "blend: %zu datasets (1 to 32767 are supported)", n);
    taken = (int64_t *)calloc(n, sizeof(*taken));
    if (taken == NULL)
        return ds_err_nomem(err);
    for (uint64_t s = 0; s < size; s++) {
        double x = s > 1 ? (double)s : 1.0;
        size_t best = 0;
        double best_err = w[0] * x - (double)taken[0];

        for (size_t i = 1; i < n; i++) {
            double e = w[i] * x - (double)taken[i];

            if (e > best_err) {
                best = i;
                best_err = e;
            }
        }
        dataset_index[s] = (uint16_t)best;
        dataset_sample_index[s] = taken[best]++;
    }
    free(taken);
    return 0;
}
