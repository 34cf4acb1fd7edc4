/* SPDX-License-Identifier: MIT */
/*
 * ds_dataset.c: opening a dataset in either format and reading it.
 *
 * Both formats end up as the same three little-endian arrays (sizes,
 * doc_idx, and where each sentence starts), read in place from the mapped
 * .idx or from the npz members, over a read-only mapping of the tokens.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ds_int.h"

struct ds_dataset {
    enum ds_format format;
    enum ds_dtype dtype;
    size_t itemsize;
    uint64_t n_sentences;
    uint64_t m; /* doc_idx entries: documents + 1 */
    uint64_t n_tokens;
    char *tokens_name;             /* the token file, for messages */
    struct ds_map tokens_map;      /* .bin or _ids.npy */
    struct ds_map idx_map;         /* .idx (MMAP only) */
    struct ds_npz npz;             /* lens and docs (NPY only) */
    const unsigned char *tokens;   /* the token array, NULL if empty */
    const unsigned char *sizes;    /* int32[N] */
    const unsigned char *pointers; /* MMAP: int64[N] byte offsets */
    const unsigned char *doc_idx;  /* int64[M] */
    uint64_t *starts;              /* NPY: element offsets [N] */
};

void
ds_close(struct ds_dataset *d)
{
    if (d == NULL)
        return;
    ds_unmap(&d->tokens_map);
    ds_unmap(&d->idx_map);
    ds_npz_release(&d->npz);
    free(d->starts);
    free(d->tokens_name);
    free(d);
}

static bool
exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static int
open_mmap(struct ds_dataset *d, const char *idx_name, struct ds_err *err)
{
    struct ds_idx x;
    uint64_t need;
    int rc;

    d->format = DS_FORMAT_MMAP;
    rc = ds_map_file(idx_name, &d->idx_map, err);
    if (rc < 0)
        return rc;
    rc = ds_idx_parse(d->idx_map.p, d->idx_map.len, idx_name, &x, err);
    if (rc < 0)
        return rc;
    rc = ds_map_file(d->tokens_name, &d->tokens_map, err);
    if (rc < 0)
        return rc;
    d->dtype = x.dtype;
    d->itemsize = ds_dtype_size(x.dtype);
    need = x.n_tokens * d->itemsize; /* no overflow: ds_idx_parse checked */
    if (d->tokens_map.len != need)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': the file has %zu bytes, but '%s' lists "
                          "%" PRIu64 " tokens of %s (%" PRIu64 " bytes)",
                          d->tokens_name, d->tokens_map.len, idx_name,
                          x.n_tokens, ds_dtype_name(x.dtype), need);
    d->n_sentences = x.n;
    d->m = x.m;
    d->n_tokens = x.n_tokens;
    d->sizes = x.sizes;
    d->pointers = x.pointers;
    d->doc_idx = x.doc_idx;
    d->tokens = d->tokens_map.p;
    return 0;
}

static int
open_npy(struct ds_dataset *d, const char *npz_name, struct ds_err *err)
{
    struct ds_map zm;
    struct ds_npy npy;
    uint64_t pos = 0;
    int rc;

    d->format = DS_FORMAT_NPY;
    rc = ds_map_file(d->tokens_name, &d->tokens_map, err);
    if (rc < 0)
        return rc;
    rc = ds_npy_parse(d->tokens_map.p, d->tokens_map.len, d->tokens_name, &npy,
                      err);
    if (rc < 0)
        return rc;
    if (!ds_dtype_is_int(npy.dtype))
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': dtype %s is not an integer type",
                          d->tokens_name, ds_dtype_name(npy.dtype));
    /* numpy reads the whole npz; so do we, through a mapping. */
    rc = ds_map_file(npz_name, &zm, err);
    if (rc < 0)
        return rc;
    rc = ds_npz_parse(zm.p, zm.len, npz_name, &d->npz, err);
    ds_unmap(&zm);
    if (rc < 0)
        return rc;
    if (d->npz.n_tokens != npy.n)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': lens add up to %" PRIu64 " tokens, but '%s' "
                          "holds %" PRIu64,
                          npz_name, d->npz.n_tokens, d->tokens_name, npy.n);
    d->dtype = npy.dtype;
    d->itemsize = ds_dtype_size(npy.dtype);
    d->n_sentences = d->npz.n;
    d->m = d->npz.m;
    d->n_tokens = npy.n;
    d->sizes = d->npz.lens;
    d->doc_idx = d->npz.docs;
    d->tokens = npy.n > 0 ? d->tokens_map.p + npy.data_off : NULL;
    /* PaddleNLP's CompatibleIndexedDataset keeps the same cumulative sum. */
    d->starts = malloc(d->n_sentences ? d->n_sentences * sizeof(uint64_t) : 1);
    if (d->starts == NULL)
        return ds_err_nomem(err);
    for (uint64_t i = 0; i < d->n_sentences; i++) {
        d->starts[i] = pos;
        pos += ds_le32(d->sizes + 4 * i);
    }
    return 0;
}

int
ds_open(struct ds_dataset **out, const char *prefix, struct ds_err *err)
{
    struct ds_dataset *d;
    char *npy = NULL, *npz = NULL, *idx = NULL, *bin = NULL;
    int rc;

    *out = NULL;
    if (prefix == NULL || prefix[0] == '\0')
        return ds_err_set(err, DS_EINVAL, "empty dataset prefix");
    d = calloc(1, sizeof(*d));
    npy = ds_path_cat(prefix, "_ids.npy", NULL);
    npz = ds_path_cat(prefix, "_idx.npz", NULL);
    idx = ds_path_cat(prefix, ".idx", NULL);
    bin = ds_path_cat(prefix, ".bin", NULL);
    if (d == NULL || npy == NULL || npz == NULL || idx == NULL || bin == NULL) {
        rc = ds_err_nomem(err);
        goto fail;
    }
    /* The order of PaddleNLP's make_dataset: the npy pair wins. */
    if (exists(npy) && exists(npz)) {
        d->tokens_name = npy;
        npy = NULL;
        rc = open_npy(d, npz, err);
    } else if (exists(idx) || exists(bin)) {
        d->tokens_name = bin;
        bin = NULL;
        rc = open_mmap(d, idx, err);
    } else {
        rc = ds_err_set(err, DS_EIO,
                        "dataset '%s' not found: neither '%s' and '%s' nor "
                        "'%s' and '%s' exist",
                        prefix, idx, bin, npy, npz);
    }
    if (rc < 0)
        goto fail;
    free(npy);
    free(npz);
    free(idx);
    free(bin);
    *out = d;
    return 0;

fail:
    free(npy);
    free(npz);
    free(idx);
    free(bin);
    ds_close(d);
    return rc;
}

enum ds_format
ds_dataset_format(const struct ds_dataset *d)
{
    return d->format;
}

enum ds_dtype
ds_dataset_dtype(const struct ds_dataset *d)
{
    return d->dtype;
}

uint64_t
ds_dataset_n_sentences(const struct ds_dataset *d)
{
    return d->n_sentences;
}

uint64_t
ds_dataset_n_documents(const struct ds_dataset *d)
{
    return d->m - 1;
}

uint64_t
ds_dataset_n_tokens(const struct ds_dataset *d)
{
    return d->n_tokens;
}

uint32_t
ds_sentence_len(const struct ds_dataset *d, uint64_t i)
{
    return i < d->n_sentences ? ds_le32(d->sizes + 4 * i) : 0;
}

uint64_t
ds_sentence_start(const struct ds_dataset *d, uint64_t i)
{
    if (i >= d->n_sentences)
        return 0;
    if (d->starts != NULL)
        return d->starts[i];
    return ds_le64(d->pointers + 8 * i) / d->itemsize;
}

void
ds_prefetch_sentence(const struct ds_dataset *d, uint64_t i)
{
    if (i >= d->n_sentences)
        return;
    __builtin_prefetch(d->sizes + 4 * i);
    if (d->starts != NULL)
        __builtin_prefetch(&d->starts[i]);
    else
        __builtin_prefetch(d->pointers + 8 * i);
}

void
ds_prefetch_tokens(const struct ds_dataset *d, uint64_t pos, size_t n)
{
    const unsigned char *p, *end;

    if (pos >= d->n_tokens)
        return;
    if (n > d->n_tokens - pos)
        n = (size_t)(d->n_tokens - pos);
    p = d->tokens + pos * d->itemsize;
    end = p + n * d->itemsize;
    for (; p < end; p += 64)
        __builtin_prefetch(p);
}

uint64_t
ds_document_first(const struct ds_dataset *d, uint64_t k)
{
    return k < d->m ? ds_le64(d->doc_idx + 8 * k) : 0;
}

const void *
ds_dataset_tokens(const struct ds_dataset *d)
{
    return d->n_tokens > 0 ? d->tokens : NULL;
}

/* A stored value that does not fit int32: v, or -mag if negative. */
static int
too_big(const struct ds_dataset *d, uint64_t pos, bool negative, uint64_t mag,
        struct ds_err *err)
{
    return ds_err_set(err, DS_ERANGE,
                      "'%s': token %" PRIu64 " = %s%" PRIu64
                      " does not fit int32",
                      d->tokens_name, pos, negative ? "-" : "", mag);
}

int
ds_read_tokens(const struct ds_dataset *d, uint64_t pos, size_t n, int32_t *out,
               struct ds_err *err)
{
    const unsigned char *p;

    if (pos > d->n_tokens || n > d->n_tokens - pos)
        return ds_err_set(err, DS_ERANGE,
                          "'%s': tokens %" PRIu64 "..%" PRIu64
                          " are past the end (%" PRIu64 " tokens)",
                          d->tokens_name, pos, pos + (uint64_t)n, d->n_tokens);
    if (n == 0)
        return 0;
    p = d->tokens + pos * d->itemsize;
    switch (d->dtype) {
    case DS_DTYPE_UINT8:
        for (size_t i = 0; i < n; i++)
            out[i] = p[i];
        break;
    case DS_DTYPE_INT8:
        for (size_t i = 0; i < n; i++)
            out[i] = (int8_t)p[i];
        break;
    case DS_DTYPE_INT16:
        for (size_t i = 0; i < n; i++)
            out[i] = (int16_t)ds_le16(p + 2 * i);
        break;
    case DS_DTYPE_UINT16:
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    {
        /* The hot path of every sample: widened 8 at a time with the
         * compiler's vector extension (-O2 does not vectorize the plain
         * loop), the rest one by one. */
        typedef uint16_t u16x8 __attribute__((vector_size(16)));
        typedef int32_t i32x8 __attribute__((vector_size(32)));
        size_t i = 0;

        for (; i + 8 <= n; i += 8) {
            u16x8 v;
            i32x8 w;

            memcpy(&v, p + 2 * i, sizeof(v));
            w = __builtin_convertvector(v, i32x8);
            memcpy(out + i, &w, sizeof(w));
        }
        for (; i < n; i++) {
            uint16_t v;

            memcpy(&v, p + 2 * i, sizeof(v));
            out[i] = v;
        }
    }
#else
        for (size_t i = 0; i < n; i++)
            out[i] = ds_le16(p + 2 * i);
#endif
    break;
    case DS_DTYPE_INT32:
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(out, p, n * sizeof(*out));
#else
        for (size_t i = 0; i < n; i++)
            out[i] = (int32_t)ds_le32(p + 4 * i);
#endif
        break;
    case DS_DTYPE_UINT32:
        for (size_t i = 0; i < n; i++) {
            uint32_t v = ds_le32(p + 4 * i);

            if (v > INT32_MAX)
                return too_big(d, pos + i, false, v, err);
            out[i] = (int32_t)v;
        }
        break;
    case DS_DTYPE_INT64:
        for (size_t i = 0; i < n; i++) {
            int64_t v = (int64_t)ds_le64(p + 8 * i);

            if (v > INT32_MAX || v < INT32_MIN)
                return too_big(d, pos + i, v < 0,
                               v < 0 ? 0 - (uint64_t)v : (uint64_t)v, err);
            out[i] = (int32_t)v;
        }
        break;
    case DS_DTYPE_UINT64:
        for (size_t i = 0; i < n; i++) {
            uint64_t v = ds_le64(p + 8 * i);

            if (v > INT32_MAX)
                return too_big(d, pos + i, false, v, err);
            out[i] = (int32_t)v;
        }
        break;
    default: /* floats are refused by ds_open */
        return ds_err_set(err, DS_EFORMAT, "'%s': not an integer dtype",
                          d->tokens_name);
    }
    return 0;
}
