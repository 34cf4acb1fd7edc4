/* SPDX-License-Identifier: MIT */
/*
 * ds_npz.c: PaddleNLP's <prefix>_idx.npz, a zip archive (np.savez) of two
 * NPY arrays, lens.npy (int32 tokens per sentence) and docs.npy (int64
 * cumulative sentence count per document, with a leading 0); see
 * ds-npy(5).  libzip reads it from memory, finding members through the
 * central directory (Zip64, stored or deflated, as numpy may write), and
 * writes it stored from two complete NPY files.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <zip.h>

#include "ds_int.h"

/* zlib cannot inflate more than about 1032 bytes from one, so a member
 * that claims more is corrupt; refusing it early also keeps a crafted
 * size from asking for terabytes of memory. */
#define MAX_INFLATE_RATIO 1032

/* Read member `member` of za whole into a malloc'd buffer. */
static int
read_member(zip_t *za, size_t zip_len, const char *name, const char *member,
            unsigned char **out, size_t *out_len, struct ds_err *err)
{
    zip_stat_t st;
    zip_file_t *zf;
    zip_int64_t idx, got;
    unsigned char *buf, extra;
    int rc;

    *out = NULL;
    idx = zip_name_locate(za, member, 0);
    if (idx < 0)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': no member '%s' (an _idx.npz holds lens.npy "
                          "and docs.npy)",
                          name, member);
    zip_stat_init(&st);
    if (zip_stat_index(za, (zip_uint64_t)idx, 0, &st) < 0 ||
        (st.valid &
         (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
            (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
        return ds_err_set(err, DS_EFORMAT, "'%s': cannot stat member '%s': %s",
                          name, member, zip_strerror(za));
    if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': member '%s' uses compression method %d "
                          "(only stored and deflated are supported)",
                          name, member, (int)st.comp_method);
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) &&
        st.encryption_method != ZIP_EM_NONE)
        return ds_err_set(err, DS_EFORMAT, "'%s': member '%s' is encrypted",
                          name, member);
    if (st.comp_size > zip_len ||
        (st.comp_method == ZIP_CM_STORE && st.size != st.comp_size) ||
        st.size / MAX_INFLATE_RATIO > st.comp_size || st.size >= SIZE_MAX)
        return ds_err_set(err, DS_EFORMAT,
                          "'%s': member '%s' has impossible sizes (%" PRIu64
                          " bytes stored as %" PRIu64 ")",
                          name, member, (uint64_t)st.size,
                          (uint64_t)st.comp_size);
    buf = malloc(st.size ? (size_t)st.size : 1);
    if (buf == NULL)
        return ds_err_nomem(err);
    zf = zip_fopen_index(za, (zip_uint64_t)idx, 0);
    if (zf == NULL) {
        rc = ds_err_set(err, DS_EFORMAT, "'%s': cannot open member '%s': %s",
                        name, member, zip_strerror(za));
        free(buf);
        return rc;
    }
    /* Read one byte more than the size: libzip checks the CRC when it
     * reaches the end, and a member longer than it says is corrupt too. */
    got = zip_fread(zf, buf, st.size);
    if (got == (zip_int64_t)st.size)
        got = zip_fread(zf, &extra, 1) == 0 ? got : -2;
    if (got != (zip_int64_t)st.size) {
        rc = ds_err_set(err, DS_EFORMAT, "'%s': cannot read member '%s': %s",
                        name, member,
                        got == -2 ? "longer than its size"
                        : got < 0 ? zip_file_strerror(zf)
                                  : "shorter than its size");
        zip_fclose(zf);
        free(buf);
        return rc;
    }
    zip_fclose(zf);
    *out = buf;
    *out_len = (size_t)st.size;
    return 0;
}

/* Parse member data as a 1-D NPY of dtype want. */
static int
parse_member(const unsigned char *p, size_t len, const char *name,
             const char *member, enum ds_dtype want, struct ds_npy *npy,
             struct ds_err *err)
{
    char mname[300];
    int rc;

    snprintf(mname, sizeof(mname), "%s:%s", name, member);
    rc = ds_npy_parse(p, len, mname, npy, err);
    if (rc < 0)
        return rc;
    if (npy->dtype != want)
        return ds_err_set(err, DS_EFORMAT, "'%s': dtype %s, expected %s", mname,
                          ds_dtype_name(npy->dtype), ds_dtype_name(want));
    return 0;
}

int
ds_npz_parse(const void *p, size_t len, const char *name, struct ds_npz *out,
             struct ds_err *err)
{
    zip_error_t ze;
    zip_source_t *src;
    zip_t *za;
    size_t lens_len = 0, docs_len = 0;
    struct ds_npy npy;
    int rc;

    memset(out, 0, sizeof(*out));
    zip_error_init(&ze);
    src = zip_source_buffer_create(p, len, 0, &ze);
    if (src == NULL) {
        zip_error_fini(&ze);
        return ds_err_nomem(err);
    }
    za = zip_open_from_source(src, ZIP_RDONLY, &ze);
    if (za == NULL) {
        rc = ds_err_set(err, DS_EFORMAT, "'%s': not a readable zip: %s", name,
                        zip_error_strerror(&ze));
        zip_source_free(src);
        zip_error_fini(&ze);
        return rc;
    }
    zip_error_fini(&ze);
    rc = read_member(za, len, name, "lens.npy", &out->lens_mem, &lens_len, err);
    if (rc == 0)
        rc = read_member(za, len, name, "docs.npy", &out->docs_mem, &docs_len,
                         err);
    zip_discard(za);
    if (rc < 0)
        goto fail;

    rc = parse_member(out->lens_mem, lens_len, name, "lens.npy", DS_DTYPE_INT32,
                      &npy, err);
    if (rc < 0)
        goto fail;
    out->lens = out->lens_mem + npy.data_off;
    out->n = npy.n;
    rc = parse_member(out->docs_mem, docs_len, name, "docs.npy", DS_DTYPE_INT64,
                      &npy, err);
    if (rc < 0)
        goto fail;
    out->docs = out->docs_mem + npy.data_off;
    out->m = npy.n;

    rc = ds_check_sizes(out->lens, out->n, name, "lens", UINT64_MAX,
                        &out->n_tokens, err);
    if (rc < 0)
        goto fail;
    rc = ds_check_doc_idx(out->docs, out->m, out->n, name, "docs", UINT64_MAX,
                          err);
    if (rc < 0)
        goto fail;
    return 0;

fail:
    ds_npz_release(out);
    return rc;
}

void
ds_npz_release(struct ds_npz *z)
{
    free(z->lens_mem);
    free(z->docs_mem);
    memset(z, 0, sizeof(*z));
}

/* ------------------------------------------------------------------------ */

/* Add file `path` as the stored member `member`, dated 1980-01-01 00:00
 * (the first DOS date) so that the same data gives the same bytes. */
static int
add_member(zip_t *za, const char *zip_path, const char *member,
           const char *path, struct ds_err *err)
{
    zip_source_t *src;
    zip_int64_t idx;

    src = zip_source_file(za, path, 0, -1);
    if (src == NULL)
        return ds_err_set(err, DS_EIO, "cannot read '%s': %s", path,
                          zip_strerror(za));
    idx = zip_file_add(za, member, src, 0);
    if (idx < 0) {
        zip_source_free(src);
        return ds_err_set(err, DS_EIO, "cannot add '%s' to '%s': %s", member,
                          zip_path, zip_strerror(za));
    }
    if (zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) < 0 ||
        zip_file_set_dostime(za, (zip_uint64_t)idx, 0, (1 << 5) | 1, 0) < 0)
        return ds_err_set(err, DS_EIO, "cannot add '%s' to '%s': %s", member,
                          zip_path, zip_strerror(za));
    return 0;
}

int
ds_npz_write(const char *path, const char *lens_path, const char *docs_path,
             struct ds_err *err)
{
    zip_error_t ze;
    zip_t *za;
    int zerr, rc;

    za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (za == NULL) {
        zip_error_init_with_code(&ze, zerr);
        rc = ds_err_set(err, DS_EIO, "cannot create '%s': %s", path,
                        zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return rc;
    }
    if ((rc = add_member(za, path, "lens.npy", lens_path, err)) < 0 ||
        (rc = add_member(za, path, "docs.npy", docs_path, err)) < 0) {
        zip_discard(za);
        return rc;
    }
    /* zip_close writes "<path>.XXXXXX" and renames it to path. */
    if (zip_close(za) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot write '%s': %s", path,
                        zip_strerror(za));
        zip_discard(za);
        return rc;
    }
    return 0;
}
