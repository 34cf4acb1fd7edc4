/* SPDX-License-Identifier: MIT */
/*
 * ds_rng.c: the random number generators of the training-sample layer
 * (ernie-data.md 7.1): MT19937 and MT19937-64 exactly as the C++ standard
 * defines std::mt19937 and std::mt19937_64, and the primitives of numpy's
 * legacy RandomState (numpy/random/mtrand.pyx, distributions.c,
 * legacy-distributions.c) that PaddleNLP's dataset code calls.
 */
#include <math.h>

#include "ds_int.h"

#define MT_N   624
#define MT_M   397
#define MT64_N 312
#define MT64_M 156

void
ds_mt32_init(struct ds_mt32 *g, uint32_t seed)
{
    g->mt[0] = seed;
    for (unsigned i = 1; i < MT_N; i++)
        g->mt[i] = 1812433253u * (g->mt[i - 1] ^ (g->mt[i - 1] >> 30)) + i;
    g->pos = MT_N;
}

/* One element of the twist: from mt[i], mt[i + 1] and mt[i + M] (indices
 * modulo N). */
static inline uint32_t
mt32_mix(uint32_t a, uint32_t b, uint32_t m)
{
    uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);

    return m ^ (y >> 1) ^ ((0u - (y & 1u)) & 0x9908b0dfu);
}

/* The twist in three loops without wrap-around indices, so the compiler
 * vectorizes the first two (it did not with the indices taken modulo N). */
static void
mt32_twist(struct ds_mt32 *g)
{
    uint32_t *mt = g->mt;
    unsigned i;

    for (i = 0; i < MT_N - MT_M; i++)
        mt[i] = mt32_mix(mt[i], mt[i + 1], mt[i + MT_M]);
    for (; i < MT_N - 1; i++)
        mt[i] = mt32_mix(mt[i], mt[i + 1], mt[i + MT_M - MT_N]);
    mt[MT_N - 1] = mt32_mix(mt[MT_N - 1], mt[0], mt[MT_M - 1]);
    g->pos = 0;
}

uint32_t
ds_mt32_next(struct ds_mt32 *g)
{
    uint32_t y;

    if (g->pos >= MT_N)
        mt32_twist(g);
    y = g->mt[g->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

void
ds_mt64_init(struct ds_mt64 *g, uint64_t seed)
{
    g->mt[0] = seed;
    for (unsigned i = 1; i < MT64_N; i++)
        g->mt[i] =
            6364136223846793005ull * (g->mt[i - 1] ^ (g->mt[i - 1] >> 62)) + i;
    g->pos = MT64_N;
}

static inline uint64_t
mt64_mix(uint64_t a, uint64_t b, uint64_t m)
{
    uint64_t y = (a & 0xffffffff80000000ull) | (b & 0x7fffffffull);

    return m ^ (y >> 1) ^ ((0ull - (y & 1u)) & 0xb5026f5aa96619e9ull);
}

static void
mt64_twist(struct ds_mt64 *g)
{
    uint64_t *mt = g->mt;
    unsigned i;

    for (i = 0; i < MT64_N - MT64_M; i++)
        mt[i] = mt64_mix(mt[i], mt[i + 1], mt[i + MT64_M]);
    for (; i < MT64_N - 1; i++)
        mt[i] = mt64_mix(mt[i], mt[i + 1], mt[i + MT64_M - MT64_N]);
    mt[MT64_N - 1] = mt64_mix(mt[MT64_N - 1], mt[0], mt[MT64_M - 1]);
    g->pos = 0;
}

uint64_t
ds_mt64_next(struct ds_mt64 *g)
{
    uint64_t x;

    if (g->pos >= MT64_N)
        mt64_twist(g);
    x = g->mt[g->pos++];
    x ^= (x >> 29) & 0x5555555555555555ull;
    x ^= (x << 17) & 0x71d67fffeda60000ull;
    x ^= (x << 37) & 0xfff7eee000000000ull;
    x ^= x >> 43;
    return x;
}

/* ------------------------------------------------------------------------ */
/* numpy's legacy RandomState                                               */

double
ds_rs_random(struct ds_mt32 *g)
{
    uint32_t a = ds_mt32_next(g) >> 5, b = ds_mt32_next(g) >> 6;

    return (a * 67108864.0 + b) / 9007199254740992.0;
}

/* random_bounded_uint64 with use_masked (and random_interval, which
 * shuffle uses and which draws the same way). */
uint64_t
ds_rs_bounded(struct ds_mt32 *g, uint64_t r)
{
    uint64_t mask = r, v;

    if (r == 0)
        return 0;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    if (r <= 0xffffffffu) {
        do
            v = ds_mt32_next(g) & mask;
        while (v > r);
        return v;
    }
    do {
        uint64_t hi = ds_mt32_next(g);

        v = (hi << 32 | ds_mt32_next(g)) & mask;
    } while (v > r);
    return v;
}

int64_t
ds_rs_randint(struct ds_mt32 *g, int64_t lo, int64_t hi)
{
    uint64_t r = (uint64_t)hi - 1 - (uint64_t)lo;

    return (int64_t)((uint64_t)lo + ds_rs_bounded(g, r));
}

void
ds_rs_shuffle(struct ds_mt32 *g, void *base, size_t n, size_t size)
{
    unsigned char *p = (unsigned char *)base, tmp[64];

    if (n < 2)
        return;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)ds_rs_bounded(g, i);

        if (j == i)
            continue;
        for (size_t off = 0; off < size; off += sizeof(tmp)) {
            size_t k = size - off < sizeof(tmp) ? size - off : sizeof(tmp);

            memcpy(tmp, p + i * size + off, k);
            memcpy(p + i * size + off, p + j * size + off, k);
            memcpy(p + j * size + off, tmp, k);
        }
    }
}

size_t
ds_rs_choice(struct ds_mt32 *g, const double *p, size_t n)
{
    double total = 0, u, cum = 0;

    if (p == NULL)
        return (size_t)ds_rs_randint(g, 0, (int64_t)n);
    /* cdf = p.cumsum(); cdf /= cdf[-1]; searchsorted(u, side='right') */
    for (size_t i = 0; i < n; i++)
        total += p[i];
    u = ds_rs_random(g);
    for (size_t i = 0; i < n; i++) {
        cum += p[i];
        if (cum / total > u)
            return i;
    }
    return n - 1;
}

int64_t
ds_rs_geometric(struct ds_mt32 *g, double p)
{
    if (p >= 0.333333333333333333333333) {
        double u = ds_rs_random(g), sum = p, prod = p, q = 1.0 - p;
        int64_t x = 1;

        while (u > sum) {
            prod *= q;
            sum += prod;
            x++;
        }
        return x;
    }
    return (int64_t)ceil(log(1.0 - ds_rs_random(g)) / log(1.0 - p));
}
