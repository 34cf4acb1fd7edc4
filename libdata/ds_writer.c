/* SPDX-License-Identifier: MIT */
/*
 * ds_writer.c: writing a dataset in either format, streaming.
 *
 * Tokens go straight to the token file; the size of each sentence goes to
 * the index file itself (.idx) or to a temporary lens.npy, and each
 * document boundary to a temporary doc_idx file, so memory stays flat.  At
 * commit the .idx gets its byte pointers, recomputed from the sizes it
 * already holds, then doc_idx; the headers, whose counts are known only
 * then, are patched in; the npz is zipped from the two temporary NPY files.
 * Every file has a "*.tmp.<pid>" name until the final renames.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_int.h"

#define TOKENS_BUF (4u << 20)
#define INDEX_BUF  (256u << 10)

/* Sizes are read back from the .idx in chunks of this many entries. */
#define POINTER_CHUNK 16384

struct ds_writer {
    enum ds_format format;
    enum ds_dtype dtype;
    size_t itemsize;
    char *names[2];         /* final names: token file, index file */
    struct ds_wfile tokens; /* .bin, or _ids.npy after its header */
    struct ds_wfile sizes;  /* the .idx after its header, or lens.npy */
    struct ds_wfile docs;   /* doc_idx (int64, leading 0), maybe after a
                               NPY header */
    uint64_t sizes_off;     /* where the sizes start in `sizes` */
    uint64_t docs_off;      /* where doc_idx starts in `docs` */
    char *npz_tmp;          /* the zip's temporary name, at commit */
    uint64_t n_sentences;
    uint64_t n_documents;
    uint64_t n_tokens;
    uint64_t doc_first; /* n_sentences when the open document began */
    bool failed;        /* a write failed: every later call fails */
};

int
ds_output_names(const char *prefix, enum ds_format format, char *names[2])
{
    names[0] = names[1] = NULL;
    if (format == DS_FORMAT_MMAP) {
        names[0] = ds_path_cat(prefix, ".bin", NULL);
        names[1] = ds_path_cat(prefix, ".idx", NULL);
    } else if (format == DS_FORMAT_NPY) {
        names[0] = ds_path_cat(prefix, "_ids.npy", NULL);
        names[1] = ds_path_cat(prefix, "_idx.npz", NULL);
    } else
        return DS_EINVAL;
    if (names[0] == NULL || names[1] == NULL) {
        free(names[0]);
        free(names[1]);
        names[0] = names[1] = NULL;
        return DS_ENOMEM;
    }
    return 0;
}

static void
writer_free(struct ds_writer *w)
{
    ds_wfile_discard(&w->tokens);
    ds_wfile_discard(&w->sizes);
    ds_wfile_discard(&w->docs);
    if (w->npz_tmp != NULL)
        unlink(w->npz_tmp);
    free(w->npz_tmp);
    free(w->names[0]);
    free(w->names[1]);
    free(w);
}

void
ds_writer_abort(struct ds_writer *w)
{
    if (w != NULL)
        writer_free(w);
}

/* Open "<final><part>.tmp.<pid>" into f and write `header_len` zero bytes
 * (the header's place, filled at commit; zeros never look like a valid
 * header). */
static int
open_part(struct ds_wfile *f, const char *final, const char *part, bool rw,
          size_t cap, size_t header_len, struct ds_err *err)
{
    char *base = ds_path_cat(final, part, NULL);
    char *tmp = base ? ds_tmp_name(base) : NULL;
    int rc;

    free(base);
    rc = ds_wfile_open(f, tmp, rw, cap, err);
    if (rc == DS_EIO) {
        /* Name the file the user asked for, not its temporary name
         * (a missing directory is the usual cause). */
        int e = errno;

        return ds_err_set(err, DS_EIO, "cannot create '%s': %s", final,
                          strerror(e));
    }
    if (rc < 0)
        return rc;
    memset(ds_wfile_space(f, header_len), 0, header_len);
    ds_wfile_advance(f, header_len);
    return 0;
}

int
ds_prefix_check(const char *prefix, struct ds_err *err)
{
    const char *slash, *base;
    struct stat st;
    bool is_dir;

    if (prefix == NULL || prefix[0] == '\0')
        return ds_err_set(err, DS_EINVAL, "empty dataset prefix");
    slash = strrchr(prefix, '/');
    base = slash ? slash + 1 : prefix;
    is_dir = stat(prefix, &st) == 0 && S_ISDIR(st.st_mode);
    if (base[0] != '\0' && !is_dir)
        return 0;
    return ds_err_set(err, DS_EINVAL,
                      "dataset prefix '%s' %s: add one, as in '%s%sNAME' "
                      "(files NAME.bin, NAME.idx, ...)",
                      prefix,
                      base[0] == '\0' ? "has no file name"
                                      : "is a directory, not a file name",
                      prefix, base[0] == '\0' ? "" : "/");
}

int
ds_writer_open(struct ds_writer **out, const char *prefix,
               enum ds_format format, enum ds_dtype dtype, struct ds_err *err)
{
    struct ds_writer *w;
    size_t hdr;
    int rc;

    *out = NULL;
    if ((rc = ds_prefix_check(prefix, err)) < 0)
        return rc;
    if (format != DS_FORMAT_MMAP && format != DS_FORMAT_NPY)
        return ds_err_set(err, DS_EINVAL, "unknown dataset format %d",
                          (int)format);
    if (dtype != DS_DTYPE_UINT16 && dtype != DS_DTYPE_INT32)
        return ds_err_set(err, DS_EINVAL,
                          "cannot store tokens as %s (code %d): use uint16 "
                          "or int32",
                          ds_dtype_name(dtype), (int)dtype);
    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return ds_err_nomem(err);
    w->tokens.fd = w->sizes.fd = w->docs.fd = -1;
    w->format = format;
    w->dtype = dtype;
    w->itemsize = ds_dtype_size(dtype);
    if (ds_output_names(prefix, format, w->names) < 0) {
        free(w);
        return ds_err_nomem(err);
    }
    if (format == DS_FORMAT_MMAP) {
        hdr = 0;
        w->sizes_off = DS_IDX_HEADER_LEN;
        w->docs_off = 0;
        rc = open_part(&w->tokens, w->names[0], "", false, TOKENS_BUF, 0, err);
        if (rc == 0)
            rc = open_part(&w->sizes, w->names[1], "", true, INDEX_BUF,
                           DS_IDX_HEADER_LEN, err);
        if (rc == 0)
            rc = open_part(&w->docs, w->names[1], ".doc_idx", true, INDEX_BUF,
                           0, err);
    } else {
        hdr = DS_NPY_HEADER_LEN;
        w->sizes_off = w->docs_off = DS_NPY_HEADER_LEN;
        rc =
            open_part(&w->tokens, w->names[0], "", false, TOKENS_BUF, hdr, err);
        if (rc == 0)
            rc = open_part(&w->sizes, w->names[1], ".lens", false, INDEX_BUF,
                           hdr, err);
        if (rc == 0)
            rc = open_part(&w->docs, w->names[1], ".docs", false, INDEX_BUF,
                           hdr, err);
    }
    if (rc < 0) {
        writer_free(w);
        return rc;
    }
    /* doc_idx starts with 0. */
    memset(ds_wfile_space(&w->docs, 8), 0, 8);
    ds_wfile_advance(&w->docs, 8);
    *out = w;
    return 0;
}

static int
failed_error(const struct ds_writer *w, struct ds_err *err)
{
    return ds_err_set(err, DS_EIO,
                      "'%s': an earlier write failed; the dataset cannot be "
                      "committed",
                      w->names[1]);
}

/* A flush catches a write error early (the buffers only report them when
 * they next write). */
static int
check_io(struct ds_writer *w, struct ds_err *err)
{
    if (w->tokens.err_no == 0 && w->sizes.err_no == 0 && w->docs.err_no == 0)
        return 0;
    w->failed = true;
    if (w->tokens.err_no)
        return ds_wfile_flush(&w->tokens, err);
    if (w->sizes.err_no)
        return ds_wfile_flush(&w->sizes, err);
    return ds_wfile_flush(&w->docs, err);
}

/* The loops over a sentence's ids go in blocks of this many: a fixed
 * count GCC vectorizes at -O2. */
#define STORE_BLOCK 16

/* ids[0..n), each known to fit, as little-endian uint16 at p. */
static void
put_u16s(unsigned char *p, const int32_t *ids, size_t n)
{
    size_t j = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; j + STORE_BLOCK <= n; j += STORE_BLOCK) {
        uint16_t block[STORE_BLOCK];

        for (size_t b = 0; b < STORE_BLOCK; b++)
            block[b] = (uint16_t)ids[j + b];
        memcpy(p + 2 * j, block, sizeof(block));
    }
#endif
    for (; j < n; j++)
        ds_put16(p + 2 * j, (uint16_t)ids[j]);
}

int
ds_writer_add_sentence(struct ds_writer *w, const int32_t *ids, size_t n,
                       struct ds_err *err)
{
    size_t chunk = TOKENS_BUF / w->itemsize;

    if (w->failed)
        return failed_error(w, err);
    if (n == 0)
        return ds_err_set(err, DS_EINVAL,
                          "'%s': empty sentence (a sentence needs at least "
                          "one token)",
                          w->names[0]);
    if (n > INT32_MAX)
        return ds_err_set(err, DS_ERANGE,
                          "'%s': a sentence of %zu tokens is longer than "
                          "the format's limit, %d",
                          w->names[0], n, INT32_MAX);
    if (w->dtype == DS_DTYPE_UINT16) {
        uint32_t all = 0;
        size_t i = 0;

        /* One pass, the search only on failure.  Blocks of a fixed count,
         * which GCC vectorizes at -O2 (its cheapest cost model takes no
         * loop that needs a scalar epilogue). */
        for (; i + STORE_BLOCK <= n; i += STORE_BLOCK)
            for (size_t j = 0; j < STORE_BLOCK; j++)
                all |= (uint32_t)ids[i + j];
        for (; i < n; i++)
            all |= (uint32_t)ids[i];
        for (size_t k = 0; all > UINT16_MAX && k < n; k++)
            if ((uint32_t)ids[k] > UINT16_MAX)
                return ds_err_set(
                    err, DS_ERANGE,
                    "'%s': token id %" PRId32 " (position %zu of sentence "
                    "%" PRIu64 ") does not fit uint16; write int32 tokens",
                    w->names[0], ids[k], k, w->n_sentences);
    }
    for (size_t i = 0; i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        unsigned char *p = ds_wfile_space(&w->tokens, k * w->itemsize);

        if (w->dtype == DS_DTYPE_UINT16)
            put_u16s(p, ids + i, k);
        else
            for (size_t j = 0; j < k; j++)
                ds_put32(p + 4 * j, (uint32_t)ids[i + j]);
        ds_wfile_advance(&w->tokens, k * w->itemsize);
    }
    ds_put32(ds_wfile_space(&w->sizes, 4), (uint32_t)n);
    ds_wfile_advance(&w->sizes, 4);
    w->n_sentences++;
    w->n_tokens += n;
    return check_io(w, err);
}

int
ds_writer_end_document(struct ds_writer *w, struct ds_err *err)
{
    if (w->failed)
        return failed_error(w, err);
    if (w->n_sentences == w->doc_first)
        return 0; /* never an empty document */
    ds_put64(ds_wfile_space(&w->docs, 8), w->n_sentences);
    ds_wfile_advance(&w->docs, 8);
    w->n_documents++;
    w->doc_first = w->n_sentences;
    return check_io(w, err);
}

uint64_t
ds_writer_n_sentences(const struct ds_writer *w)
{
    return w->n_sentences;
}

uint64_t
ds_writer_n_documents(const struct ds_writer *w)
{
    return w->n_documents;
}

uint64_t
ds_writer_n_tokens(const struct ds_writer *w)
{
    return w->n_tokens;
}

/* ------------------------------------------------------------------------ */
/* Commit                                                                    */

/* Append the byte pointers of the .idx, computed from the sizes it holds
 * (PaddleNLP's _get_pointers: a running sum of size * itemsize). */
static int
append_pointers(struct ds_writer *w, struct ds_err *err)
{
    unsigned char *chunk = malloc(4 * POINTER_CHUNK);
    uint64_t addr = 0;
    int rc = 0;

    if (chunk == NULL)
        return ds_err_nomem(err);
    for (uint64_t i = 0; i < w->n_sentences && rc == 0; i += POINTER_CHUNK) {
        size_t k = w->n_sentences - i < POINTER_CHUNK
                       ? (size_t)(w->n_sentences - i)
                       : POINTER_CHUNK;

        rc = ds_wfile_pread(&w->sizes, chunk, 4 * k, w->sizes_off + 4 * i, err);
        for (size_t j = 0; j < k && rc == 0; j++) {
            ds_put64(ds_wfile_space(&w->sizes, 8), addr);
            ds_wfile_advance(&w->sizes, 8);
            addr += (uint64_t)ds_le32(chunk + 4 * j) * w->itemsize;
        }
    }
    free(chunk);
    return rc;
}

/* Append the doc_idx temporary to the .idx. */
static int
append_doc_idx(struct ds_writer *w, struct ds_err *err)
{
    uint64_t len = w->docs.off, off = 0;
    int rc = 0;

    while (off < len && rc == 0) {
        size_t k = len - off < INDEX_BUF ? (size_t)(len - off) : INDEX_BUF;
        unsigned char *p = ds_wfile_space(&w->sizes, k);

        rc = ds_wfile_pread(&w->docs, p, k, off, err);
        ds_wfile_advance(&w->sizes, k);
        off += k;
    }
    return rc;
}

/* Rename f's temporary to `final`; the path is freed either way. */
static int
rename_part(struct ds_wfile *f, const char *final, struct ds_err *err)
{
    int rc = 0;

    if (rename(f->path, final) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot rename '%s' to '%s': %s", f->path,
                        final, strerror(errno));
        unlink(f->path);
    }
    free(f->path);
    f->path = NULL;
    return rc;
}

static int
commit_mmap(struct ds_writer *w, struct ds_err *err)
{
    unsigned char h[DS_IDX_HEADER_LEN];
    int rc;

    ds_idx_header(w->dtype, w->n_sentences, w->n_documents + 1, h);
    if ((rc = ds_wfile_close(&w->tokens, true, err)) < 0 ||
        (rc = append_pointers(w, err)) < 0 ||
        (rc = append_doc_idx(w, err)) < 0 ||
        (rc = ds_wfile_pwrite(&w->sizes, h, sizeof(h), 0, err)) < 0 ||
        (rc = ds_wfile_close(&w->sizes, true, err)) < 0)
        return rc;
    ds_wfile_discard(&w->docs);
    if ((rc = rename_part(&w->tokens, w->names[0], err)) < 0 ||
        (rc = rename_part(&w->sizes, w->names[1], err)) < 0)
        return rc;
    return 0;
}

static int
sync_file(const char *path, struct ds_err *err)
{
    FILE *f = fopen(path, "rb");
    int rc = 0;

    if (f == NULL || fsync(fileno(f)) < 0)
        rc = ds_err_set(err, DS_EIO, "cannot sync '%s': %s", path,
                        strerror(errno));
    if (f != NULL)
        fclose(f);
    return rc;
}

static int
commit_npy(struct ds_writer *w, struct ds_err *err)
{
    unsigned char h[3][DS_NPY_HEADER_LEN];
    int rc;

    ds_npy_header(w->dtype, w->n_tokens, h[0]);
    ds_npy_header(DS_DTYPE_INT32, w->n_sentences, h[1]);
    ds_npy_header(DS_DTYPE_INT64, w->n_documents + 1, h[2]);
    w->npz_tmp = ds_tmp_name(w->names[1]);
    if (w->npz_tmp == NULL)
        return ds_err_nomem(err);
    if ((rc = ds_wfile_pwrite(&w->tokens, h[0], sizeof(h[0]), 0, err)) < 0 ||
        (rc = ds_wfile_close(&w->tokens, true, err)) < 0 ||
        (rc = ds_wfile_pwrite(&w->sizes, h[1], sizeof(h[1]), 0, err)) < 0 ||
        (rc = ds_wfile_close(&w->sizes, false, err)) < 0 ||
        (rc = ds_wfile_pwrite(&w->docs, h[2], sizeof(h[2]), 0, err)) < 0 ||
        (rc = ds_wfile_close(&w->docs, false, err)) < 0 ||
        (rc = ds_npz_write(w->npz_tmp, w->sizes.path, w->docs.path, err)) < 0 ||
        (rc = sync_file(w->npz_tmp, err)) < 0)
        return rc;
    ds_wfile_discard(&w->sizes);
    ds_wfile_discard(&w->docs);
    if ((rc = rename_part(&w->tokens, w->names[0], err)) < 0)
        return rc;
    if (rename(w->npz_tmp, w->names[1]) < 0)
        return ds_err_set(err, DS_EIO, "cannot rename '%s' to '%s': %s",
                          w->npz_tmp, w->names[1], strerror(errno));
    free(w->npz_tmp);
    w->npz_tmp = NULL;
    return 0;
}

int
ds_writer_commit(struct ds_writer *w, struct ds_err *err)
{
    int rc;

    if (w->failed) {
        rc = failed_error(w, err);
        writer_free(w);
        return rc;
    }
    rc = ds_writer_end_document(w, err);
    if (rc == 0)
        rc = w->format == DS_FORMAT_MMAP ? commit_mmap(w, err)
                                         : commit_npy(w, err);
    if (rc == 0)
        ds_fsync_dir(w->names[1]);
    writer_free(w);
    return rc;
}
