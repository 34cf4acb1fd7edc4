/* SPDX-License-Identifier: MIT */
/*
 * ds_gpt.c: GPT training samples, as paddlenlp.data.causal_dataset (after
 * Megatron's gpt_dataset.py) builds them (ernie-data.md 7.9): doc_idx (the
 * split's items repeated once an epoch and shuffled, the last epoch
 * separately when it is short), sample_idx (where each seq_len + 1 window
 * starts, overlapping its neighbour by one token), shuffle_idx (the sample
 * order), and the windows themselves.  The shuffles are numpy's legacy
 * RandomState(seed).shuffle, draw for draw (7.1, ds_rng.c).
 *
 * The three arrays are cached under PaddleNLP 2.8's names (an md5 of its
 * description text, 5.6) and in np.save's format, so that either side
 * reuses the other's files; each file is written as a temporary and
 * renamed, by one process of the node at a time (a flock on a lock file
 * beside the .dsc, ds_cache_lock()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_int.h"

struct ds_gpt {
    uint64_t n_docs;    /* documents of the split */
    uint64_t n_epochs;  /* e */
    uint64_t n_samples; /* S = (e * tokens_per_epoch - 1) / seq_len */
    uint32_t seq_len;
    bool separate_last;    /* the last epoch was shuffled on its own */
    bool from_cache;       /* the arrays were read from the cache */
    int32_t *doc_idx;      /* [e * n_docs] item numbers */
    int32_t *sample_idx;   /* [S + 1][2]: (position in doc_idx, offset) */
    uint64_t *shuffle_idx; /* [S] */
};

/* ------------------------------------------------------------------------ */
/* MD5 (RFC 1321), for PaddleNLP's cache names                               */

static const uint32_t md5_k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
    0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
    0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391
};
static const unsigned char md5_r[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21
};

static void
md5_block(uint32_t h[4], const unsigned char *p)
{
    uint32_t w[16], a = h[0], b = h[1], c = h[2], d = h[3];

    for (int i = 0; i < 16; i++)
        w[i] = ds_le32(p + 4 * i);
    for (int i = 0; i < 64; i++) {
        uint32_t f, t;
        int g;

        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) % 16;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) % 16;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) % 16;
        }
        t = d;
        d = c;
        c = b;
        f += a + md5_k[i] + w[g];
        b += (f << md5_r[i]) | (f >> (32 - md5_r[i]));
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

/* md5 of s[0..n) as 32 lower-case hex digits and a NUL. */
static void
md5_hex(const char *s, size_t n, char out[33])
{
    uint32_t h[4] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476 };
    unsigned char tail[128];
    size_t full = n - n % 64, rest = n % 64, tn;

    for (size_t i = 0; i < full; i += 64)
        md5_block(h, (const unsigned char *)s + i);
    memset(tail, 0, sizeof(tail));
    memcpy(tail, s + full, rest);
    tail[rest] = 0x80;
    tn = rest < 56 ? 64 : 128;
    ds_put64(tail + tn - 8, (uint64_t)n * 8);
    md5_block(h, tail);
    if (tn == 128)
        md5_block(h, tail + 64);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", (h[i / 4] >> (8 * (i % 4))) & 0xff);
}

/* ------------------------------------------------------------------------ */
/* Building (causal_dataset._build_index_mappings)                           */

static void
gpt_free_arrays(struct ds_gpt *g)
{
    free(g->doc_idx);
    free(g->sample_idx);
    free(g->shuffle_idx);
    g->doc_idx = NULL;
    g->sample_idx = NULL;
    g->shuffle_idx = NULL;
}

/* tool_helpers' build_sample_idx (= _build_sample_idx). */
static void
build_sample_idx(struct ds_gpt *g, const struct ds_dataset *d)
{
    int64_t pos = 0, off = 0;

    g->sample_idx[0] = 0;
    g->sample_idx[1] = 0;
    for (uint64_t s = 1; s <= g->n_samples; s++) {
        int64_t remaining = (int64_t)g->seq_len + 1;

        while (remaining != 0) {
            int64_t len =
                (int64_t)ds_sentence_len(d, (uint64_t)g->doc_idx[pos]) - off;

            remaining -= len;
            if (remaining <= 0) {
                off += remaining + len - 1;
                remaining = 0;
            } else {
                pos++;
                off = 0;
            }
        }
        g->sample_idx[2 * s] = (int32_t)pos;
        g->sample_idx[2 * s + 1] = (int32_t)off;
    }
}

static int
gpt_compute(struct ds_gpt *g, const struct ds_dataset *d,
            const uint64_t *documents, uint64_t num_samples, uint64_t seed,
            struct ds_err *err)
{
    uint64_t n = g->n_docs, e = g->n_epochs, first_samples = g->n_samples;
    struct ds_mt32 *m;

    m = malloc(sizeof(*m));
    g->doc_idx = malloc((size_t)(e * n) * sizeof(int32_t));
    g->sample_idx = malloc((size_t)(g->n_samples + 1) * 2 * sizeof(int32_t));
    g->shuffle_idx =
        malloc((size_t)(g->n_samples ? g->n_samples : 1) * sizeof(uint64_t));
    if (m == NULL || g->doc_idx == NULL || g->sample_idx == NULL ||
        g->shuffle_idx == NULL) {
        free(m);
        return ds_err_nomem(err);
    }
    ds_mt32_init(m, (uint32_t)seed);
    for (uint64_t k = 0; k < e; k++)
        for (uint64_t i = 0; i < n; i++)
            g->doc_idx[k * n + i] = (int32_t)documents[i];
    if (g->separate_last) {
        ds_rs_shuffle(m, g->doc_idx, (size_t)((e - 1) * n), sizeof(int32_t));
        ds_rs_shuffle(m, g->doc_idx + (e - 1) * n, (size_t)n, sizeof(int32_t));
    } else {
        ds_rs_shuffle(m, g->doc_idx, (size_t)(e * n), sizeof(int32_t));
    }
    build_sample_idx(g, d);
    (void)num_samples;
    if (g->separate_last) {
        uint64_t tpe = 0;

        for (uint64_t i = 0; i < n; i++)
            tpe += ds_sentence_len(d, documents[i]);
        first_samples = ((e - 1) * tpe - 1) / g->seq_len;
    }
    for (uint64_t i = 0; i < g->n_samples; i++)
        g->shuffle_idx[i] = i;
    ds_rs_shuffle(m, g->shuffle_idx, (size_t)first_samples, sizeof(uint64_t));
    if (first_samples != g->n_samples)
        ds_rs_shuffle(m, g->shuffle_idx + first_samples,
                      (size_t)(g->n_samples - first_samples), sizeof(uint64_t));
    free(m);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Cache files: np.save's NPY format, 1-D or [rows][2]                      */

/* The np.save header of an array of descr with the shape text (e.g.
 * "(7,)" or "(8, 2)"): magic, version 1.0, the dict padded with spaces to
 * a multiple of 64 bytes, '\n'.  Returns its length. */
static size_t
npy_header(unsigned char *out, size_t cap, const char *descr, const char *shape)
{
    int k;
    size_t total;

    memcpy(out, "\x93NUMPY\x01\x00", 8);
    k = snprintf((char *)out + 10, cap - 10,
                 "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                 descr, shape);
    total = 10 + (size_t)k + 1;
    total = (total + 63) / 64 * 64;
    memset(out + 10 + k, ' ', total - 11 - (size_t)k);
    out[total - 1] = '\n';
    ds_put16(out + 8, (uint16_t)(total - 10));
    return total;
}

/* Write an NPY file at path (through path.tmp.<pid>, renamed): shape text
 * and elements of size `size` from p, converted to little-endian. */
static int
npy_write(const char *path, const char *descr, const char *shape, const void *p,
          uint64_t n, size_t size, struct ds_err *err)
{
    unsigned char hdr[256];
    struct ds_wfile f;
    char *tmp = ds_tmp_name(path);
    size_t hlen;
    int rc;

    if (tmp == NULL)
        return ds_err_nomem(err);
    rc = ds_wfile_open(&f, tmp, false, 1 << 20, err);
    if (rc < 0)
        return rc;
    hlen = npy_header(hdr, sizeof(hdr), descr, shape);
    ds_wfile_write(&f, hdr, hlen);
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *q = ds_wfile_space(&f, size);

        if (size == 4)
            ds_put32(q, ((const uint32_t *)p)[i]);
        else
            ds_put64(q, ((const uint64_t *)p)[i]);
        ds_wfile_advance(&f, size);
    }
    rc = ds_wfile_close(&f, true, err);
    if (rc == 0 && rename(f.path, path) != 0)
        rc = ds_err_set(err, DS_EIO, "cannot rename '%s' to '%s': %s", f.path,
                        path, strerror(errno));
    if (rc == 0) {
        free(f.path);
        f.path = NULL;
    }
    ds_wfile_discard(&f);
    return rc;
}

/* An NPY file read whole: descr, shape (rows, cols; cols 0 for 1-D), and
 * the little-endian data. */
struct npy_in {
    struct ds_map map;
    char descr[8];
    uint64_t rows, cols;
    const unsigned char *data;
};

static const char *
hdr_find(const char *h, size_t n, const char *key)
{
    size_t k = strlen(key);

    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(h + i, key, k) == 0)
            return h + i + k;
    return NULL;
}

static const char *
hdr_uint(const char *p, const char *end, uint64_t *v)
{
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    for (*v = 0; p < end && *p >= '0' && *p <= '9'; p++) {
        if (*v > (UINT64_MAX - 9) / 10)
            return NULL;
        *v = *v * 10 + (uint64_t)(*p - '0');
    }
    return p;
}

/* Read path; want_cols is 0 for a 1-D array, 2 for [rows][2].  Returns 0,
 * or DS_EIO/DS_EFORMAT with err set. */
static int
npy_read(const char *path, unsigned want_cols, struct npy_in *in,
         struct ds_err *err)
{
    const unsigned char *b;
    const char *h, *end, *p, *q;
    size_t hlen, hoff, size, len;
    uint64_t need;
    int rc;

    memset(in, 0, sizeof(*in));
    rc = ds_map_file(path, &in->map, err);
    if (rc < 0)
        return rc;
    b = in->map.p;
    len = in->map.len;
    if (len < 12 || memcmp(b, "\x93NUMPY", 6) != 0 || b[6] < 1 || b[6] > 3)
        return ds_err_set(err, DS_EFORMAT, "'%s': not an NPY file", path);
    hlen = b[6] == 1 ? ds_le16(b + 8) : ds_le32(b + 8);
    hoff = b[6] == 1 ? 10 : 12;
    if (hlen > len - hoff)
        return ds_err_set(err, DS_EFORMAT, "'%s': NPY header passes the end",
                          path);
    h = (const char *)b + hoff;
    end = h + hlen;
    p = hdr_find(h, hlen, "'descr': '");
    q = p ? memchr(p, '\'', (size_t)(end - p)) : NULL;
    if (q == NULL || q - p >= (ptrdiff_t)sizeof(in->descr) ||
        hdr_find(h, hlen, "'fortran_order': False") == NULL)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': NPY header lacks a descr or is Fortran-order",
                          path);
    memcpy(in->descr, p, (size_t)(q - p));
    if (strcmp(in->descr, "<i4") == 0 || strcmp(in->descr, "<u4") == 0)
        size = 4;
    else if (strcmp(in->descr, "<i8") == 0 || strcmp(in->descr, "<u8") == 0)
        size = 8;
    else
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': dtype '%s' is not a little-endian 32- or "
                          "64-bit integer",
                          path, in->descr);
    p = hdr_find(h, hlen, "'shape': (");
    if (p == NULL || (p = hdr_uint(p, end, &in->rows)) == NULL)
        return ds_err_set(err, DS_EFORMAT, "'%s': NPY header lacks a shape",
                          path);
    if (p < end && *p == ',')
        p++;
    if (hdr_uint(p, end, &in->cols) == NULL)
        in->cols = 0;
    if (in->cols != want_cols)
        return ds_err_set(err, DS_EFORMAT, "'%s': shape has %s, expected %s",
                          path, in->cols ? "two axes" : "one axis",
                          want_cols ? "(rows, 2)" : "one axis");
    need = in->rows * (want_cols ? want_cols : 1);
    if (in->rows > UINT64_MAX / 16 || need > (len - hoff - hlen) / size)
        return ds_err_set(err, DS_EFORMAT, "'%s': the file is truncated", path);
    in->data = b + hoff + hlen;
    return 0;
}

static int64_t
npy_get(const struct npy_in *in, uint64_t i)
{
    switch (in->descr[1]) {
    case 'i':
        if (in->descr[2] == '4')
            return (int32_t)ds_le32(in->data + 4 * i);
        return (int64_t)ds_le64(in->data + 8 * i);
    default:
        if (in->descr[2] == '4')
            return ds_le32(in->data + 4 * i);
        return ds_le64(in->data + 8 * i) > INT64_MAX
                   ? -1
                   : (int64_t)ds_le64(in->data + 8 * i);
    }
}

/* The cache file names: <dir>/<md5>{.dsc,_doc_idx.npy,_sample_idx.npy,
 * _shuffle_idx.npy}, and the description text. */
struct cache_names {
    char *desc;
    char *path[4];
};

static const char *const cache_suffix[4] = { ".dsc", "_doc_idx.npy",
                                             "_sample_idx.npy",
                                             "_shuffle_idx.npy" };

static void
cache_names_release(struct cache_names *c)
{
    free(c->desc);
    for (int i = 0; i < 4; i++)
        free(c->path[i]);
    memset(c, 0, sizeof(*c));
}

static char *
describe(const struct ds_gpt_cache *c, uint64_t num_samples, uint32_t seq_len,
         uint64_t seed)
{
#define GPT_DESC                                                         \
    "GPT Dataset\n\nData prefix %s\nDataset name %s\nNumber of samples " \
    "%" PRIu64 "\nSequence length %" PRIu32 "\nRandom seed %" PRIu64     \
    "\nSplit %s\n"
    int n = snprintf(NULL, 0, GPT_DESC, c->data_prefix, c->name, num_samples,
                     seq_len, seed, c->split);
    char *s = n < 0 ? NULL : malloc((size_t)n + 1);

    if (s != NULL)
        snprintf(s, (size_t)n + 1, GPT_DESC, c->data_prefix, c->name,
                 num_samples, seq_len, seed, c->split);
    return s;
#undef GPT_DESC
}

static char *
cache_dir(const struct ds_gpt_cache *c)
{
    const char *slash;
    char *dir;
    size_t n;

    if (c->dir != NULL)
        return ds_path_cat(c->dir, "", NULL);
    /* os.path.join(os.path.dirname(data_prefix), "index-cache") */
    slash = strrchr(c->data_prefix, '/');
    if (slash == NULL)
        return ds_path_cat("index-cache", "", NULL);
    n = (size_t)(slash - c->data_prefix);
    while (n > 0 && c->data_prefix[n - 1] == '/')
        n--;
    if (n == 0)
        return ds_path_cat("/index-cache", "", NULL);
    dir = malloc(n + sizeof("/index-cache"));
    if (dir != NULL) {
        memcpy(dir, c->data_prefix, n);
        memcpy(dir + n, "/index-cache", sizeof("/index-cache"));
    }
    return dir;
}

static int
cache_names_init(struct cache_names *cn, const struct ds_gpt_cache *c,
                 uint64_t num_samples, uint32_t seq_len, uint64_t seed,
                 struct ds_err *err)
{
    char hash[33], *dir, *base;

    memset(cn, 0, sizeof(*cn));
    cn->desc = describe(c, num_samples, seq_len, seed);
    dir = cache_dir(c);
    if (cn->desc == NULL || dir == NULL) {
        free(dir);
        cache_names_release(cn);
        return ds_err_nomem(err);
    }
    md5_hex(cn->desc, strlen(cn->desc), hash);
    base = ds_path_cat(dir, "/", hash);
    free(dir);
    for (int i = 0; i < 4 && base != NULL; i++)
        if ((cn->path[i] = ds_path_cat(base, cache_suffix[i], NULL)) == NULL)
            break;
    if (base == NULL || cn->path[3] == NULL) {
        free(base);
        cache_names_release(cn);
        return ds_err_nomem(err);
    }
    free(base);
    return 0;
}

int
ds_gpt_cache_hash(const struct ds_gpt_cache *c, uint64_t num_samples,
                  uint32_t seq_len, uint64_t seed, char out[33])
{
    char *desc;

    if (c == NULL || c->data_prefix == NULL || c->name == NULL ||
        c->split == NULL)
        return DS_EINVAL;
    desc = describe(c, num_samples, seq_len, seed);
    if (desc == NULL)
        return DS_ENOMEM;
    md5_hex(desc, strlen(desc), out);
    free(desc);
    return 0;
}

/* Read the three arrays from the cache into g and check that they fit
 * the dataset and the parameters, window by window, so that
 * ds_gpt_sample() can trust them.  Returns 0, or < 0 with err set (the
 * caller rebuilds). */
static int
cache_load(struct ds_gpt *g, const struct ds_dataset *d,
           const struct cache_names *cn, struct ds_err *err)
{
    struct npy_in a[3];
    uint64_t n_doc = g->n_epochs * g->n_docs, S = g->n_samples;
    uint64_t n_items = ds_dataset_n_sentences(d);
    unsigned char *seen = NULL;
    int rc = 0;

    memset(a, 0, sizeof(a));
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = npy_read(cn->path[i + 1], i == 1 ? 2 : 0, &a[i], err);
    if (rc < 0)
        goto out;
    if (a[0].rows != n_doc || a[1].rows != S + 1 || a[2].rows != S) {
        rc = ds_err_set(
            err, DS_EFORMAT,
            "'%s': cached arrays have %" PRIu64 ", %" PRIu64 " and %" PRIu64
            " rows, expected %" PRIu64 ", %" PRIu64 " and %" PRIu64,
            cn->path[1], a[0].rows, a[1].rows, a[2].rows, n_doc, S + 1, S);
        goto out;
    }
    g->doc_idx = malloc((size_t)(n_doc ? n_doc : 1) * sizeof(int32_t));
    g->sample_idx = malloc((size_t)(S + 1) * 2 * sizeof(int32_t));
    g->shuffle_idx = malloc((size_t)(S ? S : 1) * sizeof(uint64_t));
    seen = calloc((size_t)(S / 8 + 1), 1);
    if (g->doc_idx == NULL || g->sample_idx == NULL || g->shuffle_idx == NULL ||
        seen == NULL) {
        rc = ds_err_nomem(err);
        goto out;
    }
    for (uint64_t i = 0; i < n_doc; i++) {
        int64_t v = npy_get(&a[0], i);

        if (v < 0 || (uint64_t)v >= n_items || v > INT32_MAX) {
            rc = ds_err_set(err, DS_EFORMAT,
                            "'%s': doc_idx[%" PRIu64 "] = %" PRId64
                            " is not an item of the dataset",
                            cn->path[1], i, v);
            goto out;
        }
        g->doc_idx[i] = (int32_t)v;
    }
    for (uint64_t i = 0; i <= S; i++) {
        int64_t p = npy_get(&a[1], 2 * i), o = npy_get(&a[1], 2 * i + 1);

        if (p < 0 || (uint64_t)p >= n_doc || o < 0 ||
            (uint64_t)o >= ds_sentence_len(d, (uint64_t)g->doc_idx[p]) ||
            (i == 0 && (p != 0 || o != 0))) {
            rc = ds_err_set(err, DS_EFORMAT,
                            "'%s': sample_idx[%" PRIu64 "] = (%" PRId64
                            ", %" PRId64 ") is out of range",
                            cn->path[2], i, p, o);
            goto out;
        }
        g->sample_idx[2 * i] = (int32_t)p;
        g->sample_idx[2 * i + 1] = (int32_t)o;
        if (i > 0) {
            /* The window from the previous row must hold seq_len + 1. */
            int64_t p0 = g->sample_idx[2 * i - 2],
                    o0 = g->sample_idx[2 * i - 1];
            uint64_t n = 0;

            if (p < p0 || (p == p0 && o < o0))
                n = 0;
            else if (p == p0)
                n = (uint64_t)(o - o0 + 1);
            else {
                n = ds_sentence_len(d, (uint64_t)g->doc_idx[p0]) - (uint64_t)o0;
                for (int64_t k = p0 + 1; k < p && n <= g->seq_len; k++)
                    n += ds_sentence_len(d, (uint64_t)g->doc_idx[k]);
                n += (uint64_t)o + 1;
            }
            if (n != (uint64_t)g->seq_len + 1) {
                rc = ds_err_set(err, DS_EFORMAT,
                                "'%s': sample %" PRIu64 " is not %" PRIu64
                                " tokens long",
                                cn->path[2], i - 1, (uint64_t)g->seq_len + 1);
                goto out;
            }
        }
    }
    for (uint64_t i = 0; i < S; i++) {
        int64_t v = npy_get(&a[2], i);

        if (v < 0 || (uint64_t)v >= S || (seen[v / 8] >> (v % 8)) & 1) {
            rc = ds_err_set(err, DS_EFORMAT,
                            "'%s': shuffle_idx[%" PRIu64 "] = %" PRId64
                            " is out of range or repeated",
                            cn->path[3], i, v);
            goto out;
        }
        seen[v / 8] |= (unsigned char)(1u << (v % 8));
        g->shuffle_idx[i] = (uint64_t)v;
    }
out:
    free(seen);
    for (int i = 0; i < 3; i++)
        ds_unmap(&a[i].map);
    if (rc < 0)
        gpt_free_arrays(g);
    return rc;
}

/* Read the cache into g if its four files are there, whole and fresh. */
static bool
cache_try_load(struct ds_gpt *g, const struct ds_dataset *d,
               const struct cache_names *cn)
{
    for (int i = 0; i < 4; i++)
        if (access(cn->path[i], F_OK) != 0)
            return false;
    return cache_load(g, d, cn, NULL) == 0;
}

/* With a cache directory, the files PaddleNLP and Megatron-LM look for
 * first: those of dirname(data_prefix)/index-cache (read, never built). */
static bool
beside_try_load(struct ds_gpt *g, const struct ds_dataset *d,
                const struct ds_gpt_cache *c, uint64_t num_samples,
                uint32_t seq_len, uint64_t seed)
{
    struct ds_gpt_cache beside = *c;
    struct cache_names cn;
    bool ok;

    beside.dir = NULL;
    if (cache_names_init(&cn, &beside, num_samples, seq_len, seed, NULL) < 0)
        return false;
    ok = cache_try_load(g, d, &cn);
    cache_names_release(&cn);
    return ok;
}

/* os.makedirs(data_cache_dir, exist_ok=True), one level: the directory
 * of path. */
static int
cache_mkdir(const char *path, struct ds_err *err)
{
    char *dir = ds_path_cat(path, "", NULL), *slash;
    int rc = 0;

    if (dir == NULL)
        return ds_err_nomem(err);
    slash = strrchr(dir, '/');
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0777) < 0 && errno != EEXIST)
            rc = ds_err_set(err, DS_EIO,
                            "cannot create the cache directory '%s': %s", dir,
                            strerror(errno));
    }
    free(dir);
    return rc;
}

static int
cache_store(const struct ds_gpt *g, const struct cache_names *cn,
            struct ds_err *err)
{
    char shape[64];
    uint64_t S = g->n_samples, n_doc = g->n_epochs * g->n_docs;
    struct ds_wfile f;
    char *tmp;
    bool wide = S >= UINT32_MAX - 1;
    uint32_t *u32 = NULL;
    int rc;

    if ((rc = cache_mkdir(cn->path[0], err)) < 0)
        return rc;
    /* .dsc first, shuffle_idx last: PaddleNLP's other ranks wait for the
     * three arrays and load shuffle_idx to see that it is complete. */
    if ((tmp = ds_tmp_name(cn->path[0])) == NULL)
        return ds_err_nomem(err);
    rc = ds_wfile_open(&f, tmp, false, 4096, err);
    if (rc < 0)
        return rc;
    ds_wfile_write(&f, cn->desc, strlen(cn->desc));
    rc = ds_wfile_close(&f, true, err);
    if (rc == 0 && rename(f.path, cn->path[0]) != 0)
        rc = ds_err_set(err, DS_EIO, "cannot rename '%s' to '%s': %s", f.path,
                        cn->path[0], strerror(errno));
    if (rc == 0) {
        free(f.path);
        f.path = NULL;
    }
    ds_wfile_discard(&f);
    if (rc < 0)
        return rc;
    snprintf(shape, sizeof(shape), "(%" PRIu64 ",)", n_doc);
    rc = npy_write(cn->path[1], "<i4", shape, g->doc_idx, n_doc, 4, err);
    if (rc < 0)
        return rc;
    snprintf(shape, sizeof(shape), "(%" PRIu64 ", 2)", S + 1);
    rc = npy_write(cn->path[2], "<i4", shape, g->sample_idx, 2 * (S + 1), 4,
                   err);
    if (rc < 0)
        return rc;
    snprintf(shape, sizeof(shape), "(%" PRIu64 ",)", S);
    if (wide)
        return npy_write(cn->path[3], "<i8", shape, g->shuffle_idx, S, 8, err);
    u32 = malloc((size_t)(S ? S : 1) * sizeof(uint32_t));
    if (u32 == NULL)
        return ds_err_nomem(err);
    for (uint64_t i = 0; i < S; i++)
        u32[i] = (uint32_t)g->shuffle_idx[i];
    rc = npy_write(cn->path[3], "<u4", shape, u32, S, 4, err);
    free(u32);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* API                                                                       */

int
ds_gpt_build(struct ds_gpt **out, const struct ds_dataset *d,
             const uint64_t *documents, size_t n_docs, uint64_t num_samples,
             uint32_t seq_len, uint64_t seed, const struct ds_gpt_cache *cache,
             struct ds_err *err)
{
    uint64_t tpe = 0, total, n_items = ds_dataset_n_sentences(d);
    struct cache_names cn;
    struct ds_gpt *g;
    int rc, lock = -1;

    *out = NULL;
    if (n_docs == 0)
        return ds_err_set(err, DS_EINVAL,
                          "GPT samples: the split has no "
                          "documents");
    if (seq_len == 0)
        return ds_err_set(err, DS_EINVAL, "GPT samples: seq_len is 0");
    if (seed > UINT32_MAX)
        return ds_err_set(err, DS_EINVAL,
                          "GPT samples: seed %" PRIu64
                          " is past 2^32 - 1, which numpy's RandomState "
                          "refuses",
                          seed);
    if (cache != NULL && (cache->data_prefix == NULL || cache->name == NULL ||
                          cache->split == NULL))
        return ds_err_set(err, DS_EINVAL,
                          "GPT samples: the cache needs data_prefix, name "
                          "and split");
    for (size_t i = 0; i < n_docs; i++) {
        if (documents[i] >= n_items || documents[i] > INT32_MAX)
            return ds_err_set(err, DS_ERANGE,
                              "GPT samples: document %" PRIu64
                              " (entry %zu) is past the dataset's %" PRIu64
                              " items",
                              documents[i], i, n_items);
        tpe += ds_sentence_len(d, documents[i]);
    }
    if (tpe == 0)
        return ds_err_set(err, DS_EINVAL,
                          "GPT samples: the split's %zu documents hold no "
                          "tokens",
                          n_docs);
    g = calloc(1, sizeof(*g));
    if (g == NULL)
        return ds_err_nomem(err);
    g->n_docs = n_docs;
    g->seq_len = seq_len;
    /* _num_epochs */
    for (g->n_epochs = 1, total = tpe; (total - 1) / seq_len < num_samples &&
                                       g->n_epochs * n_docs <= INT32_MAX;
         g->n_epochs++)
        total += tpe;
    g->n_samples = (total - 1) / seq_len;
    if (g->n_epochs * n_docs > INT32_MAX) {
        rc = ds_err_set(err, DS_ERANGE,
                        "GPT samples: %" PRIu64 " epochs of %zu documents"
                        " do not fit PaddleNLP's int32 doc_idx and "
                        "sample_idx",
                        g->n_epochs, n_docs);
        free(g);
        return rc;
    }
    if (g->n_epochs > 1) {
        uint64_t minus_one = ((g->n_epochs - 1) * tpe - 1) / seq_len;
        uint64_t last = num_samples - minus_one;
        uint64_t per_epoch = (tpe - 1) / seq_len;

        g->separate_last = last < (uint64_t)(0.80 * (double)per_epoch);
    }
    if (cache != NULL) {
        rc = cache_names_init(&cn, cache, num_samples, seq_len, seed, err);
        if (rc < 0) {
            free(g);
            return rc;
        }
        if (cache_try_load(g, d, &cn) ||
            (cache->dir != NULL &&
             beside_try_load(g, d, cache, num_samples, seq_len, seed))) {
            g->from_cache = true;
            cache_names_release(&cn);
            *out = g;
            return 0;
        }
        /* Build once per node, under "<md5>.dsc.lock": the processes that
         * wait load what the first one wrote.  Without a lock (the
         * directory cannot be written, or flock() is not supported), each
         * builds, and cache_store() reports what it cannot write. */
        (void)cache_mkdir(cn.path[0], NULL);
        lock = ds_cache_lock(cn.path[0]);
        if (lock >= 0 && cache_try_load(g, d, &cn)) {
            ds_cache_unlock(lock, cn.path[0]);
            g->from_cache = true;
            cache_names_release(&cn);
            *out = g;
            return 0;
        }
    }
    rc = gpt_compute(g, d, documents, num_samples, seed, err);
    if (rc == 0 && cache != NULL)
        rc = cache_store(g, &cn, err);
    if (cache != NULL) {
        ds_cache_unlock(lock, cn.path[0]);
        cache_names_release(&cn);
    }
    if (rc < 0) {
        ds_gpt_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void
ds_gpt_free(struct ds_gpt *g)
{
    if (g == NULL)
        return;
    gpt_free_arrays(g);
    free(g);
}

uint64_t
ds_gpt_n_samples(const struct ds_gpt *g)
{
    return g->n_samples;
}

uint64_t
ds_gpt_n_epochs(const struct ds_gpt *g)
{
    return g->n_epochs;
}

int
ds_gpt_separate_last_epoch(const struct ds_gpt *g)
{
    return g->separate_last;
}

int
ds_gpt_from_cache(const struct ds_gpt *g)
{
    return g->from_cache;
}

const int32_t *
ds_gpt_doc_idx(const struct ds_gpt *g, uint64_t *n)
{
    *n = g->n_epochs * g->n_docs;
    return g->doc_idx;
}

const int32_t *
ds_gpt_sample_idx(const struct ds_gpt *g, uint64_t *n_rows)
{
    *n_rows = g->n_samples + 1;
    return g->sample_idx;
}

const uint64_t *
ds_gpt_shuffle_idx(const struct ds_gpt *g, uint64_t *n)
{
    *n = g->n_samples;
    return g->shuffle_idx;
}

int
ds_gpt_sample(const struct ds_gpt *g, const struct ds_dataset *d, uint64_t i,
              int32_t *tokens, struct ds_err *err)
{
    uint64_t j;
    int32_t p0, o0, p1, o1;
    int rc;

    if (i >= g->n_samples)
        return ds_err_set(err, DS_ERANGE,
                          "GPT sample %" PRIu64 " is past the %" PRIu64
                          " samples",
                          i, g->n_samples);
    j = g->shuffle_idx[i];
    p0 = g->sample_idx[2 * j];
    o0 = g->sample_idx[2 * j + 1];
    p1 = g->sample_idx[2 * j + 2];
    o1 = g->sample_idx[2 * j + 3];
    if (p0 == p1)
        return ds_read_tokens(
            d, ds_sentence_start(d, (uint64_t)g->doc_idx[p0]) + (uint64_t)o0,
            (size_t)(o1 - o0 + 1), tokens, err);
    for (int32_t p = p0; p <= p1; p++) {
        uint64_t item = (uint64_t)g->doc_idx[p];
        uint64_t from = p == p0 ? (uint64_t)o0 : 0;
        uint64_t to = p == p1 ? (uint64_t)o1 + 1 : ds_sentence_len(d, item);

        rc = ds_read_tokens(d, ds_sentence_start(d, item) + from,
                            (size_t)(to - from), tokens, err);
        if (rc < 0)
            return rc;
        tokens += to - from;
    }
    return 0;
}

/* Samples fetched together by ds_gpt_samples(): enough misses in flight to
 * hide the memory latency, few enough to stay in the L1 cache. */
#define GPT_GROUP 16

/* Issue the loads of group idx[0..m): the index lookups, stage by stage
 * (each stage loads what the one before prefetched), then the first
 * tokens of every window and of the document after it. */
static int
prefetch_group(const struct ds_gpt *g, const struct ds_dataset *d,
               const uint64_t *idx, size_t m, size_t n_tokens)
{
    uint64_t j[GPT_GROUP];

    for (size_t k = 0; k < m; k++) {
        if (idx[k] >= g->n_samples)
            return -1;
        j[k] = g->shuffle_idx[idx[k]];
        __builtin_prefetch(&g->sample_idx[2 * j[k]]);
    }
    for (size_t k = 0; k < m; k++)
        __builtin_prefetch(&g->doc_idx[g->sample_idx[2 * j[k]]]);
    for (size_t k = 0; k < m; k++) {
        int32_t p = g->sample_idx[2 * j[k]];

        ds_prefetch_sentence(d, (uint64_t)g->doc_idx[p]);
        if (g->sample_idx[2 * j[k] + 2] > p)
            ds_prefetch_sentence(d, (uint64_t)g->doc_idx[p + 1]);
    }
    for (size_t k = 0; k < m; k++) {
        uint64_t item = (uint64_t)g->doc_idx[g->sample_idx[2 * j[k]]];

        ds_prefetch_tokens(d,
                           ds_sentence_start(d, item) +
                               (uint64_t)g->sample_idx[2 * j[k] + 1],
                           n_tokens);
    }
    return 0;
}

/* Prefetch every token of sample i (its indices already loaded by
 * prefetch_group): the part in each document it spans, so its copy finds
 * its 2 KB in the cache instead of waiting for the hardware prefetcher to
 * find each range. */
static void
prefetch_window(const struct ds_gpt *g, const struct ds_dataset *d, uint64_t i)
{
    uint64_t j = g->shuffle_idx[i];
    int32_t p0 = g->sample_idx[2 * j], o0 = g->sample_idx[2 * j + 1];
    int32_t p1 = g->sample_idx[2 * j + 2], o1 = g->sample_idx[2 * j + 3];

    for (int32_t p = p0; p <= p1; p++) {
        uint64_t item = (uint64_t)g->doc_idx[p];
        uint64_t from = p == p0 ? (uint64_t)o0 : 0;
        uint64_t to = p == p1 ? (uint64_t)o1 + 1 : ds_sentence_len(d, item);

        if (to > from)
            ds_prefetch_tokens(d, ds_sentence_start(d, item) + from,
                               (size_t)(to - from));
    }
}

/* How many samples ahead of the copy a window is prefetched. */
#define GPT_WINDOW_AHEAD 4

int
ds_gpt_samples(const struct ds_gpt *g, const struct ds_dataset *d,
               const uint64_t *idx, size_t n, int32_t *tokens,
               struct ds_err *err)
{
    const size_t row = (size_t)g->seq_len + 1;

    /* While one group is copied, the next one's loads are in flight. */
    if (n > 0)
        prefetch_group(g, d, idx, n < GPT_GROUP ? n : GPT_GROUP, 128);
    for (size_t k = 0; k < n && k < GPT_WINDOW_AHEAD; k++)
        if (idx[k] < g->n_samples)
            prefetch_window(g, d, idx[k]);
    for (size_t base = 0; base < n; base += GPT_GROUP) {
        size_t m = n - base < GPT_GROUP ? n - base : GPT_GROUP;
        size_t next = base + GPT_GROUP;

        if (next < n)
            prefetch_group(g, d, idx + next,
                           n - next < GPT_GROUP ? n - next : GPT_GROUP, 128);
        for (size_t k = 0; k < m; k++) {
            size_t ahead = base + k + GPT_WINDOW_AHEAD;
            int rc;

            if (ahead < n && idx[ahead] < g->n_samples)
                prefetch_window(g, d, idx[ahead]);
            rc = ds_gpt_sample(g, d, idx[base + k], tokens + (base + k) * row,
                               err);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}
