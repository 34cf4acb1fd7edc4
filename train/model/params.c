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
    params_init_tp(pt, 1, 0);
}

void
params_init_tp(struct param_table *pt, int tp_size, int tp_rank)
{
    memset(pt, 0, sizeof(*pt));
    pt->tp_size = tp_size;
    pt->tp_rank = tp_rank;
}

void
params_release(struct param_table *pt)
{
    free(pt->t);
    params_init_tp(pt, pt->tp_size, pt->tp_rank);
}

/* params_add() and params_add_adjacent(): adjacent places the tensor right
 * after the one before, else at the next OPS_ALIGN boundary. */
static long
add(struct param_table *pt, const char *name, int64_t d0, int64_t d1,
    enum tp_split tp, int layer, enum param_init init, float std, int adjacent)
{
    struct param_tensor *t;
    size_t len = strlen(name);
    int64_t n = pt->tp_size > 0 ? pt->tp_size : 1, l0 = d0, l1 = d1;

    if (len >= PARAM_NAME_MAX || d0 <= 0 || d1 < 0)
        return -1;
    switch (n > 1 ? tp : TP_REPLICATED) {
    case TP_REPLICATED:
        break;
    case TP_COLUMN:
    case TP_COLUMN_QKV:
        if (d0 % (tp == TP_COLUMN_QKV ? 3 * n : n))
            return -1;
        l0 = d0 / n;
        break;
    case TP_ROW:
        if (d1 % n)
            return -1;
        l1 = d1 / n;
        break;
    case TP_VOCAB:
        break;
    }
    /* Megatron's rule: the vocabulary padded to a multiple of
     * OPS_VOCAB_ALIGN rows on each rank, whatever the split. */
    if (tp == TP_VOCAB)
        l0 = (d0 + OPS_VOCAB_ALIGN * n - 1) / (OPS_VOCAB_ALIGN * n) *
             OPS_VOCAB_ALIGN;
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
    t->shape[0] = l0;
    t->shape[1] = l1;
    t->gshape[0] = d0;
    t->gshape[1] = d1;
    t->numel = (size_t)l0 * (size_t)(l1 ? l1 : 1);
    /* total is a multiple of OPS_ALIGN: the pads come after each tensor */
    t->offset = adjacent && pt->n > 0 ? t[-1].offset + t[-1].numel : pt->total;
    t->tp = tp;
    t->layer = layer;
    t->decay = t->ndim == 2;
    t->init = init;
    t->std = std;
    t->zero_row = -1;
    pt->total = (t->offset + t->numel + OPS_ALIGN - 1) / OPS_ALIGN * OPS_ALIGN;
    return (long)pt->n++;
}

long
params_add(struct param_table *pt, const char *name, int64_t d0, int64_t d1,
           enum tp_split tp, int layer, enum param_init init, float std)
{
    return add(pt, name, d0, d1, tp, layer, init, std, 0);
}

long
params_add_adjacent(struct param_table *pt, const char *name, int64_t d0,
                    int64_t d1, enum tp_split tp, int layer,
                    enum param_init init, float std)
{
    return add(pt, name, d0, d1, tp, layer, init, std, 1);
}

size_t
params_count(const struct param_table *pt)
{
    size_t n = 0;

    for (size_t i = 0; i < pt->n; i++) {
        const struct param_tensor *t = &pt->t[i];

        for (size_t k = 0; k < t->numel; k++)
            n += params_global_index(t, pt->tp_size, pt->tp_rank, k) >= 0;
    }
    return n;
}

int64_t
params_rows_saved(const struct param_tensor *t)
{
    return t->tp == TP_VOCAB && t->gshape[0] < t->shape[0] ? t->gshape[0]
                                                           : t->shape[0];
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

int64_t
params_global_index(const struct param_tensor *t, int tp_size, int rank,
                    size_t k)
{
    int64_t cols = t->ndim == 2 ? t->shape[1] : 1;
    int64_t row = (int64_t)k / cols, col = (int64_t)k % cols;
    int64_t gcols = t->ndim == 2 ? t->gshape[1] : 1;

    if (tp_size <= 1 && t->tp != TP_VOCAB)
        return (int64_t)k;
    switch (t->tp) {
    case TP_REPLICATED:
        return (int64_t)k;
    case TP_COLUMN:
    case TP_VOCAB:
        row += (int64_t)rank * t->shape[0];
        if (row >= t->gshape[0])
            return -1; /* a pad row of the vocab */
        break;
    case TP_COLUMN_QKV: {
        int64_t part = t->shape[0] / 3; /* rows of q (k, v) per rank */

        row =
            row / part * (t->gshape[0] / 3) + (int64_t)rank * part + row % part;
        break;
    }
    case TP_ROW:
        col += (int64_t)rank * t->shape[1];
        break;
    }
    return row * gcols + col;
}

void
params_fill_tensor(const struct param_table *pt, const struct param_tensor *t,
                   uint64_t seed, float *host)
{
    uint64_t key = params_hash(t->name, seed);
    int64_t gcols = t->ndim == 2 ? t->gshape[1] : 1;

    for (size_t k = 0; k < t->numel; k++) {
        int64_t g = params_global_index(t, pt->tp_size, pt->tp_rank, k);

        if (g < 0 ||
            (t->zero_row >= 0 && t->ndim == 2 && g / gcols == t->zero_row))
            host[k] = 0.0f;
        else if (t->init == INIT_NORMAL)
            host[k] = (float)(params_normal(key, (uint64_t)g) * t->std);
        else
            host[k] = t->init == INIT_ONES ? 1.0f : 0.0f;
    }
}

void
params_fill_init(const struct param_table *pt, uint64_t seed, float *host)
{
    for (size_t i = 0; i < pt->n; i++)
        params_fill_tensor(pt, &pt->t[i], seed, host + pt->t[i].offset);
}

void
params_part_to_whole(const struct param_tensor *t, int tp_size, int rank,
                     const float *part, float *whole)
{
    for (size_t k = 0; k < t->numel; k++) {
        int64_t g = params_global_index(t, tp_size, rank, k);

        if (g >= 0)
            whole[g] = part[k];
    }
}

void
params_part_from_whole(const struct param_tensor *t, int tp_size, int rank,
                       float *part, const float *whole)
{
    for (size_t k = 0; k < t->numel; k++) {
        int64_t g = params_global_index(t, tp_size, rank, k);

        part[k] = g >= 0 ? whole[g] : 0.0f;
    }
}

/* The whole table's tensor of part's tensor i (by name; the same index
 * when the tables agree). */
static const struct param_tensor *
whole_of(const struct param_table *part, size_t i, const struct param_table *wt)
{
    if (i < wt->n && strcmp(wt->t[i].name, part->t[i].name) == 0)
        return &wt->t[i];
    return params_find(wt, part->t[i].name);
}

void
params_to_global(const struct param_table *part, int rank,
                 const float *host_part, const struct param_table *wt,
                 float *host_whole)
{
    for (size_t i = 0; i < part->n; i++) {
        const struct param_tensor *t = &part->t[i], *w = whole_of(part, i, wt);

        if (w == NULL || t->tied_copy || (rank != 0 && t->tp == TP_REPLICATED))
            continue;
        params_part_to_whole(t, part->tp_size, rank, host_part + t->offset,
                             host_whole + w->offset);
    }
}

void
params_from_global(const struct param_table *part, int rank, float *host_part,
                   const struct param_table *wt, const float *host_whole)
{
    for (size_t i = 0; i < part->n; i++) {
        const struct param_tensor *t = &part->t[i], *w = whole_of(part, i, wt);
        float *dst = host_part + t->offset;

        if (w == NULL) /* (tables of one model have the same names) */
            memset(dst, 0, t->numel * sizeof(*dst));
        else
            params_part_from_whole(t, part->tp_size, rank, dst,
                                   host_whole + w->offset);
    }
}
