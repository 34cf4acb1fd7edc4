/* SPDX-License-Identifier: MIT */
/*
 * ds_mapping.c: the ERNIE samples mapping (ernie-data.md 7.3), identical to
 * PaddleNLP's helpers.cpp::build_mapping, and its cached .npy file (5.6).
 *
 * helpers.cpp runs its epoch loop twice (count, then fill) with the same
 * seed, so both passes see the same draws; one pass into a growing array
 * gives the same rows.  Whether a document yields samples does not depend
 * on the draws, so it is decided once for all epochs.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ds_int.h"

#define LONG_SENTENCE_LEN DS_MAPPING_LONG_SENTENCE
#define NPY_HDR           128 /* np.save's header length for an (n, 3) array */

struct ds_mapping {
    uint64_t n;
    bool wide;  /* uint64 rows, else uint32 */
    void *rows; /* 3 * n elements: malloc'd, or inside map */
    struct ds_map map;
};

static struct ds_mapping *
mapping_new(void)
{
    return (struct ds_mapping *)calloc(1, sizeof(struct ds_mapping));
}

void
ds_mapping_free(struct ds_mapping *m)
{
    if (m == NULL)
        return;
    if (m->map.p != NULL)
        ds_unmap(&m->map);
    else
        free(m->rows);
    free(m);
}

uint64_t
ds_mapping_n(const struct ds_mapping *m)
{
    return m->n;
}

enum ds_dtype
ds_mapping_dtype(const struct ds_mapping *m)
{
    return m->wide ? DS_DTYPE_UINT64 : DS_DTYPE_UINT32;
}

const void *
ds_mapping_rows(const struct ds_mapping *m)
{
    return m->rows;
}

void
ds_mapping_row(const struct ds_mapping *m, uint64_t i, uint64_t row[3])
{
    for (int k = 0; k < 3; k++)
        row[k] = m->wide ? ((const uint64_t *)m->rows)[3 * i + k]
                         : ((const uint32_t *)m->rows)[3 * i + k];
}

/* ------------------------------------------------------------------------ */
/* Building                                                                 */

static int
check_params(const int64_t *docs, size_t n_docs, size_t n_sizes,
             const struct ds_mapping_params *p, int32_t *ratio,
             struct ds_err *err)
{
    if (p->max_seq_len < 2)
        return ds_err_set(err, DS_EINVAL,
                          "mapping: max_seq_len %d (after the 3 special "
                          "tokens) must be at least 2",
                          (int)p->max_seq_len);
    if (!(p->short_seq_prob >= 0 && p->short_seq_prob <= 1))
        return ds_err_set(err, DS_EINVAL,
                          "mapping: short_seq_prob %g is not in [0, 1]",
                          p->short_seq_prob);
    if (p->short_seq_prob > 0 && 1.0 / p->short_seq_prob >= 2147483647.0)
        return ds_err_set(err, DS_EINVAL,
                          "mapping: short_seq_prob %g is too small",
                          p->short_seq_prob);
    if (p->min_num_sent < 1 || p->num_epochs < 0)
        return ds_err_set(err, DS_EINVAL,
                          "mapping: min_num_sent %d or num_epochs %d out of "
                          "range",
                          (int)p->min_num_sent, (int)p->num_epochs);
    if (docs[0] < 0 || (uint64_t)docs[n_docs] > n_sizes)
        return ds_err_set(err, DS_EINVAL,
                          "mapping: documents cover sentences %" PRId64
                          "..%" PRId64 ", outside the %zu sentences",
                          docs[0], docs[n_docs], n_sizes);
    for (size_t k = 0; k < n_docs; k++)
        if (docs[k + 1] < docs[k])
            return ds_err_set(err, DS_EINVAL,
                              "mapping: docs[%zu] = %" PRId64
                              " is below docs[%zu] = %" PRId64,
                              k + 1, docs[k + 1], k, docs[k]);
    /* C round(): half away from zero. */
    *ratio =
        p->short_seq_prob > 0 ? (int32_t)round(1.0 / p->short_seq_prob) : 0;
    return 0;
}

static inline uint32_t
target_len(struct ds_mt32 *g, uint32_t ratio, uint32_t L)
{
    uint32_t r;

    if (ratio == 0)
        return L;
    r = ds_mt32_next(g);
    if (r % ratio == 0)
        return 2 + r % (L - 1);
    return L;
}

/* A growing array of rows. */
struct rows {
    void *p;
    uint64_t n, cap;
    bool wide;
};

static int
rows_grow(struct rows *r)
{
    uint64_t cap = r->cap ? r->cap * 2 : 4096;
    size_t item = r->wide ? 24 : 12;
    void *p;

    if (cap > SIZE_MAX / item)
        return DS_ENOMEM;
    p = realloc(r->p, (size_t)cap * item);
    if (p == NULL)
        return DS_ENOMEM;
    r->p = p;
    r->cap = cap;
    return 0;
}

static inline void
rows_put(struct rows *r, uint64_t a, uint64_t b, uint64_t c)
{
    if (r->wide) {
        uint64_t *q = (uint64_t *)r->p + 3 * r->n;

        q[0] = a, q[1] = b, q[2] = c;
    } else {
        uint32_t *q = (uint32_t *)r->p + 3 * r->n;

        q[0] = (uint32_t)a, q[1] = (uint32_t)b, q[2] = (uint32_t)c;
    }
    r->n++;
}

/* Swap rows a and b of r. */
static inline void
rows_swap(struct rows *r, uint64_t a, uint64_t b)
{
    if (r->wide) {
        uint64_t *x = (uint64_t *)r->p + 3 * a, *y = (uint64_t *)r->p + 3 * b;

        for (int k = 0; k < 3; k++) {
            uint64_t t = x[k];

            x[k] = y[k], y[k] = t;
        }
    } else {
        uint32_t *x = (uint32_t *)r->p + 3 * a, *y = (uint32_t *)r->p + 3 * b;

        for (int k = 0; k < 3; k++) {
            uint32_t t = x[k];

            x[k] = y[k], y[k] = t;
        }
    }
}

/* How many swaps ahead of the one being made their partners are drawn
 * and prefetched: each swap's partner is a random row of the whole array,
 * a cache miss, and the draws do not depend on the rows. */
#define SHUFFLE_AHEAD 16

/* Fisher-Yates with std::mt19937_64(seed + 1), as helpers.cpp: for i from
 * n - 1 down to 1, swap rows i and (draw % (i + 1)), the draws in that
 * order. */
static void
rows_shuffle(struct rows *r, int32_t seed)
{
    struct ds_mt64 g;
    uint64_t ahead[SHUFFLE_AHEAD];
    size_t item = r->wide ? 24 : 12;
    uint64_t drawn;

    if (r->n < 2)
        return;
    /* seed + 1 is an int, converted to the generator's uint64. */
    ds_mt64_init(&g, (uint64_t)((int64_t)seed + 1));
    /* ahead[i % SHUFFLE_AHEAD] holds the partner of row i, for the rows
     * from i down to drawn + 1 (drawn: the next row to draw for). */
    drawn = r->n - 1;
    for (uint64_t i = r->n - 1; i > 0; i--) {
        uint64_t j;

        for (; drawn > 0 && drawn + SHUFFLE_AHEAD > i; drawn--) {
            uint64_t d = ds_mt64_next(&g) % (drawn + 1);

            ahead[drawn % SHUFFLE_AHEAD] = d;
            __builtin_prefetch((char *)r->p + d * item, 1);
        }
        j = ahead[i % SHUFFLE_AHEAD];
        rows_swap(r, i, j);
    }
}

int
ds_mapping_build(struct ds_mapping **out, const int64_t *docs, size_t n_docs,
                 const int32_t *sizes, size_t n_sizes,
                 const struct ds_mapping_params *p, struct ds_err *err)
{
    struct rows r = { NULL, 0, 0, n_sizes > UINT32_MAX };
    struct ds_mt32 g;
    unsigned char *usable;
    const uint32_t L = (uint32_t)p->max_seq_len;
    const int64_t mns = p->min_num_sent;
    uint32_t ratio;
    int32_t ratio_i;
    int rc;

    *out = NULL;
    if ((rc = check_params(docs, n_docs, n_sizes, p, &ratio_i, err)) < 0)
        return rc;
    ratio = (uint32_t)ratio_i;

    /* Documents that yield samples: enough sentences and, with two or
     * more, none longer than LONG_SENTENCE_LEN. */
    usable = (unsigned char *)malloc(n_docs ? n_docs : 1);
    if (usable == NULL)
        return ds_err_nomem(err);
    for (size_t d = 0; d < n_docs; d++) {
        int64_t first = docs[d], last = docs[d + 1];
        bool ok = last - first >= mns;

        if (ok && last - first > 1)
            for (int64_t s = first; s < last; s++)
                if (sizes[s] > LONG_SENTENCE_LEN) {
                    ok = false;
                    break;
                }
        usable[d] = ok;
    }

    ds_mt32_init(&g, (uint32_t)p->seed);
    for (int32_t epoch = 0; epoch < p->num_epochs; epoch++) {
        if (r.n >= p->max_num_samples)
            break;
        if (epoch > 0 && r.n == 0) {
            free(usable);
            return ds_err_set(err, DS_EINVAL,
                              "mapping: none of the %zu documents yields a "
                              "sample (each needs %d sentence(s), and no "
                              "sentence over %d tokens when it has more "
                              "than one)",
                              n_docs, (int)mns, LONG_SENTENCE_LEN);
        }
        for (size_t d = 0; d < n_docs; d++) {
            int64_t first = docs[d], last = docs[d + 1];
            int64_t remain = last - first, nsent = 0, seq = 0, start = first;
            uint32_t tgt;

            if (!usable[d])
                continue;
            tgt = target_len(&g, ratio, L);
            for (int64_t s = first; s < last; s++) {
                seq += sizes[s];
                nsent++;
                remain--;
                if ((seq >= tgt && remain > 1 && nsent >= mns) || remain == 0) {
                    if (r.n == r.cap && rows_grow(&r) < 0) {
                        free(usable);
                        free(r.p);
                        return ds_err_nomem(err);
                    }
                    rows_put(&r, (uint64_t)start, (uint64_t)s + 1, tgt);
                    start = s + 1;
                    tgt = target_len(&g, ratio, L);
                    seq = 0;
                    nsent = 0;
                }
            }
        }
    }
    free(usable);
    rows_shuffle(&r, p->seed);

    if ((*out = mapping_new()) == NULL) {
        free(r.p);
        return ds_err_nomem(err);
    }
    (*out)->n = r.n;
    (*out)->wide = r.wide;
    (*out)->rows = r.p;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The cached file                                                          */

char *
ds_mapping_cache_name(const char *prefix, const char *split,
                      const struct ds_mapping_params *p)
{
    char tail[256];
    size_t off = 0;

    if (p->num_epochs != DS_MAPPING_EPOCHS_ANY)
        off += (size_t)snprintf(tail + off, sizeof(tail) - off, "_%dep",
                                (int)p->num_epochs);
    if (p->max_num_samples != (uint64_t)INT64_MAX - 1)
        off += (size_t)snprintf(tail + off, sizeof(tail) - off,
                                "_%" PRIu64 "mns", p->max_num_samples);
    snprintf(tail + off, sizeof(tail) - off, "_%dmsl_%0.2fssp_%ds.npy",
             (int)p->max_seq_len, p->short_seq_prob, (int)p->seed);
    {
        size_t len = strlen(prefix) + strlen(split) + strlen(tail) + 16;
        char *name = (char *)malloc(len);

        if (name != NULL)
            snprintf(name, len, "%s_%s_indexmap%s", prefix, split, tail);
        return name;
    }
}

/* np.save's header for an (n, 3) array of uint32 or uint64: the dict, the
 * spaces numpy reserves for a 21-digit first dimension, padding, '\n'. */
static void
npy_header(bool wide, uint64_t n, unsigned char out[NPY_HDR])
{
    int k;

    memcpy(out, "\x93NUMPY\x01\x00", 8);
    ds_put16(out + 8, NPY_HDR - 10);
    k = snprintf((char *)out + 10, NPY_HDR - 10,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (%" PRIu64
                 ", 3), }",
                 wide ? "<u8" : "<u4", n);
    memset(out + 10 + k, ' ', NPY_HDR - 11 - (size_t)k);
    out[NPY_HDR - 1] = '\n';
}

int
ds_mapping_save(const struct ds_mapping *m, const char *path,
                struct ds_err *err)
{
    struct ds_wfile f;
    unsigned char hdr[NPY_HDR];
    char *tmp = ds_tmp_name(path);
    int rc;

    if (tmp == NULL)
        return ds_err_nomem(err);
    if ((rc = ds_wfile_open(&f, tmp, false, 1 << 20, err)) < 0)
        return rc;
    npy_header(m->wide, m->n, hdr);
    ds_wfile_write(&f, hdr, sizeof(hdr));
    ds_wfile_write(&f, m->rows, (size_t)m->n * (m->wide ? 24 : 12));
    if ((rc = ds_wfile_close(&f, true, err)) < 0) {
        ds_wfile_discard(&f);
        return rc;
    }
    if (rename(f.path, path) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot rename '%s' to '%s': %s", f.path,
                        path, strerror(errno));
        ds_wfile_discard(&f);
        return rc;
    }
    ds_fsync_dir(path);
    free(f.path);
    free(f.buf);
    return 0;
}

/* Parse the NPY header of a mapping: version 1.0 or 2.0 and the dict
 * np.save writes for a C-order (n, 3) '<u4' or '<u8' array, padded with
 * spaces to a '\n'.  Sets *wide, *n and *off (the data offset). */
static int
parse_header(const unsigned char *p, size_t len, const char *name, bool *wide,
             uint64_t *n, size_t *off, struct ds_err *err)
{
    static const char lead[] = "{'descr': '<u";
    static const char mid[] = "', 'fortran_order': False, 'shape': (";
    size_t hlen, pos, i;
    uint64_t x = 0;

    if (len < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
        return ds_err_set(err, DS_EFORMAT, "'%s': not an NPY file", name);
    if (p[6] == 1 && p[7] == 0) {
        hlen = ds_le16(p + 8);
        pos = 10;
    } else if (p[6] == 2 && p[7] == 0 && len >= 12) {
        hlen = ds_le32(p + 8);
        pos = 12;
    } else
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': NPY version %u.%u is not 1.0 or 2.0", name,
                          p[6], p[7]);
    if (hlen > len - pos)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': the NPY header (%zu bytes) passes the end "
                          "of the file (%zu bytes)",
                          name, hlen, len);
    *off = pos + hlen;
    if (hlen < sizeof(lead) + sizeof(mid) + 8 ||
        memcmp(p + pos, lead, sizeof(lead) - 1) != 0)
        goto bad;
    i = pos + sizeof(lead) - 1;
    if (p[i] == '4')
        *wide = false;
    else if (p[i] == '8')
        *wide = true;
    else
        goto bad;
    i++;
    if (memcmp(p + i, mid, sizeof(mid) - 1) != 0)
        goto bad;
    i += sizeof(mid) - 1;
    if (i >= *off || p[i] < '0' || p[i] > '9')
        goto bad;
    while (i < *off && p[i] >= '0' && p[i] <= '9') {
        if (x > (UINT64_MAX - 9) / 10)
            goto bad;
        x = x * 10 + (uint64_t)(p[i++] - '0');
    }
    if (*off - i < 7 || memcmp(p + i, ", 3), }", 7) != 0)
        goto bad;
    for (i += 7; i + 1 < *off; i++)
        if (p[i] != ' ')
            goto bad;
    if (p[*off - 1] != '\n')
        goto bad;
    *n = x;
    return 0;
bad:
    return ds_err_set(err, DS_EFORMAT,
                      "'%s': the NPY header is not that of an (n, 3) uint32 "
                      "or uint64 C-order array",
                      name);
}

/* The document of sentence s: the k with docs[k] <= s < docs[k + 1]. */
static size_t
find_doc(const int64_t *docs, size_t n_docs, uint64_t s)
{
    size_t lo = 0, hi = n_docs; /* docs[lo] <= s < docs[hi] */

    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;

        if ((uint64_t)docs[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Check the mapping file p[0..len) against the documents it indexes. */
static int
mapping_check(const unsigned char *p, size_t len, const char *name,
              const int64_t *docs, size_t n_docs, size_t n_sizes,
              const struct ds_mapping_params *prm, bool *wide, uint64_t *n,
              size_t *off, struct ds_err *err)
{
    int32_t ratio;
    size_t item;
    int rc;

    if ((rc = check_params(docs, n_docs, n_sizes, prm, &ratio, err)) < 0)
        return rc;
    if ((rc = parse_header(p, len, name, wide, n, off, err)) < 0)
        return rc;
    if (*wide != (n_sizes > UINT32_MAX))
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': rows are %s, %zu sentences need %s", name,
                          *wide ? "uint64" : "uint32", n_sizes,
                          n_sizes > UINT32_MAX ? "uint64" : "uint32");
    item = *wide ? 24 : 12;
    if (*n > (len - *off) / item || (len - *off) != *n * item)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': %" PRIu64 " rows need %" PRIu64
                          " bytes after the header, the file has %zu",
                          name, *n, *n * item, len - *off);
    if (prm->num_epochs == DS_MAPPING_EPOCHS_ANY && *n < prm->max_num_samples)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': %" PRIu64 " rows, fewer than the %" PRIu64
                          " samples asked for",
                          name, *n, prm->max_num_samples);
    for (uint64_t i = 0; i < *n; i++) {
        const unsigned char *q = p + *off + i * item;
        uint64_t a = *wide ? ds_le64(q) : ds_le32(q);
        uint64_t b = *wide ? ds_le64(q + 8) : ds_le32(q + 4);
        uint64_t t = *wide ? ds_le64(q + 16) : ds_le32(q + 8);
        size_t k;

        if (n_docs == 0 || a < (uint64_t)docs[0] ||
            a >= (uint64_t)docs[n_docs] ||
            (k = find_doc(docs, n_docs, a), b <= a) ||
            b > (uint64_t)docs[k + 1])
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': row %" PRIu64 " (%" PRIu64 ", %" PRIu64
                              ") is not a sentence range of one document "
                              "(stale cache?)",
                              name, i, a, b);
        /* PaddleNLP's cache name leaves out min_num_sent: a mapping built
         * without the SOP head (1) must not serve one with it (2). */
        if (b - a < (uint64_t)prm->min_num_sent)
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': row %" PRIu64 " holds %" PRIu64
                              " sentence(s), fewer than %d (built for "
                              "another binary_head: stale cache)",
                              name, i, b - a, (int)prm->min_num_sent);
        if (t < 2 || t > (uint64_t)prm->max_seq_len ||
            (ratio == 0 && t != (uint64_t)prm->max_seq_len))
            return ds_err_set(err, DS_EFORMAT,
                              "'%s': row %" PRIu64 " has target length %" PRIu64
                              ", not in [2, %d] (stale cache?)",
                              name, i, t, (int)prm->max_seq_len);
    }
    return 0;
}

int
ds_mapping_load(struct ds_mapping **out, const char *path, const int64_t *docs,
                size_t n_docs, size_t n_sizes,
                const struct ds_mapping_params *p, struct ds_err *err)
{
    struct ds_map map;
    bool wide = false;
    uint64_t n = 0;
    size_t off = 0;
    int rc;

    *out = NULL;
    if ((rc = ds_map_file(path, &map, err)) < 0)
        return rc;
    rc = mapping_check(map.p, map.len, path, docs, n_docs, n_sizes, p, &wide,
                       &n, &off, err);
    if (rc < 0) {
        ds_unmap(&map);
        return rc;
    }
    if ((*out = mapping_new()) == NULL) {
        ds_unmap(&map);
        return ds_err_nomem(err);
    }
    (*out)->n = n;
    (*out)->wide = wide;
    if (off % (wide ? 8 : 4) == 0) {
        (*out)->map = map;
        (*out)->rows = (void *)(map.p + off);
        return 0;
    }
    /* A header length numpy never writes: copy to aligned memory. */
    (*out)->rows = malloc(n ? (size_t)n * (wide ? 24 : 12) : 1);
    if ((*out)->rows == NULL) {
        ds_unmap(&map);
        ds_mapping_free(*out);
        *out = NULL;
        return ds_err_nomem(err);
    }
    memcpy((*out)->rows, map.p + off, (size_t)n * (wide ? 24 : 12));
    ds_unmap(&map);
    return 0;
}

int
ds_mapping_get(struct ds_mapping **out, const char *prefix, const char *split,
               const int64_t *docs, size_t n_docs, const int32_t *sizes,
               size_t n_sizes, const struct ds_mapping_params *p, int *built,
               struct ds_err *err)
{
    char *name = ds_mapping_cache_name(prefix, split, p);
    int rc, lock;

    *out = NULL;
    if (name == NULL)
        return ds_err_nomem(err);
    if (built)
        *built = 0;
    if (ds_mapping_load(out, name, docs, n_docs, n_sizes, p, NULL) == 0) {
        free(name);
        return 0;
    }
    /* Build once per node: the processes that wait here load what the
     * first one wrote.  Without a lock, each builds and renames. */
    lock = ds_cache_lock(name);
    if (lock >= 0 &&
        ds_mapping_load(out, name, docs, n_docs, n_sizes, p, NULL) == 0) {
        ds_cache_unlock(lock, name);
        free(name);
        return 0;
    }
    if (built)
        *built = 1;
    rc = ds_mapping_build(out, docs, n_docs, sizes, n_sizes, p, err);
    if (rc == 0 && (rc = ds_mapping_save(*out, name, err)) < 0) {
        ds_mapping_free(*out);
        *out = NULL;
    }
    ds_cache_unlock(lock, name);
    free(name);
    return rc;
}
