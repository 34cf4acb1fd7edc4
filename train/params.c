/* SPDX-License-Identifier: MIT */
/* params.c: the tensor table (see params.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "params.h"

void
params_init(struct param_table *pt)
{
    memset(pt, 0, sizeof(*pt));
}

void
params_release(struct param_table *pt)
{
    free(pt->t);
    params_init(pt);
}

long
params_add(struct param_table *pt, const char *name, int64_t d0, int64_t d1,
           enum tp_split tp, int layer, enum param_init init, float std)
{
    struct param_tensor *t;
    size_t len = strlen(name);

    if (len >= PARAM_NAME_MAX || d0 <= 0 || d1 < 0)
        return -1;
    if (pt->n == pt->cap) {
        size_t cap = pt->cap ? 2 * pt->cap : 64;
        struct param_tensor *p = realloc(pt->t, cap * sizeof(*p));

        if (p == NULL)
            return -1;
        pt->t = p;
        pt->cap = cap;
    }
    t = &pt->t[pt->n];
    memset(t, 0, sizeof(*t));
    memcpy(t->name, name, len + 1);
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    t->offset = pt->total;
    t->tp = tp;
    t->layer = layer;
    t->decay = t->ndim == 2;
    t->init = init;
    t->std = std;
    t->zero_row = -1;
    pt->total += t->numel;
    return (long)pt->n++;
}

const struct param_tensor *
params_find(const struct param_table *pt, const char *name)
{
    for (size_t i = 0; i < pt->n; i++)
        if (strcmp(pt->t[i].name, name) == 0)
            return &pt->t[i];
    return NULL;
}

uint64_t
params_hash(const char *s, uint64_t seed)
{
    uint64_t h = 0xCBF29CE484222325ULL ^ ops_splitmix64(seed);

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001B3ULL;
    }
    return h;
}

double
params_normal(uint64_t key, uint64_t k)
{
    /* Two 53-bit uniforms in (0, 1] and [0, 1). */
    uint64_t a = ops_splitmix64(key ^ ops_splitmix64(2 * k));
    uint64_t b = ops_splitmix64(key ^ ops_splitmix64(2 * k + 1));
    double u1 = ((double)(a >> 11) + 1.0) * 0x1.0p-53;
    double u2 = (double)(b >> 11) * 0x1.0p-53;

    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void
params_fill_init(const struct param_table *pt, uint64_t seed, float *host)
{
    for (size_t i = 0; i < pt->n; i++) {
        const struct param_tensor *t = &pt->t[i];
        float *p = host + t->offset;
        uint64_t key = params_hash(t->name, seed);

        switch (t->init) {
        case INIT_NORMAL:
            for (size_t k = 0; k < t->numel; k++)
                p[k] = (float)(params_normal(key, k) * t->std);
            break;
        case INIT_ZEROS:
            memset(p, 0, t->numel * sizeof(*p));
            break;
        case INIT_ONES:
            for (size_t k = 0; k < t->numel; k++)
                p[k] = 1.0f;
            break;
        }
        if (t->zero_row >= 0 && t->ndim == 2 && t->zero_row < t->shape[0])
            memset(p + (size_t)t->zero_row * (size_t)t->shape[1], 0,
                   (size_t)t->shape[1] * sizeof(*p));
    }
}
