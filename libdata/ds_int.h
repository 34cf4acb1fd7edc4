/* SPDX-License-Identifier: MIT */
/*
 * ds_int.h: internals shared by the libdata sources; never installed.
 *
 * The parsers here work on memory buffers (a mapped file or a fuzzer's
 * input), so that the fuzz targets reach them without touching files.  The
 * file helpers give the writer large buffered writes and the reader
 * read-only mappings.
 */
#ifndef DS_INT_H
#define DS_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "ds.h"
#include "banned.h"

/* ds_err_set: fill err (if not NULL) with code and a printf-style message;
 * returns code so callers can write `return ds_err_set(err, ...)`. */
int ds_err_set(struct ds_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ds_err_nomem: ds_err_set(err, DS_ENOMEM, "out of memory"). */
int ds_err_nomem(struct ds_err *err);

/* ------------------------------------------------------------------------ */
/* Little-endian fields, at any alignment                                    */

static inline uint16_t
ds_le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
ds_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static inline uint64_t
ds_le64(const unsigned char *p)
{
    return (uint64_t)ds_le32(p) | (uint64_t)ds_le32(p + 4) << 32;
}

static inline void
ds_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void
ds_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void
ds_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* ------------------------------------------------------------------------ */
/* Data types (ds_dtype.c)                                                   */

/* ds_dtype_is_int: t is a known integer type (every code but 6 and 7). */
bool ds_dtype_is_int(enum ds_dtype t);

/* ds_dtype_descr: numpy's descr string of t as np.save writes it ("<u2",
 * "|u1", "<i8"...), or NULL for an unknown code. */
const char *ds_dtype_descr(enum ds_dtype t);

/* ds_dtype_from_descr: the dtype of a numpy descr s[0..len): an optional
 * byte-order mark ('<', '|' or '='; '|' only for one-byte types), a kind
 * ('u', 'i' or 'f') and a size.  Returns 0 for anything else, big-endian
 * ('>') included. */
enum ds_dtype ds_dtype_from_descr(const char *s, size_t len);

/* ------------------------------------------------------------------------ */
/* NPY arrays (ds_npy.c)                                                     */

/* The header length np.save gives every 1-D array: the data starts here. */
#define DS_NPY_HEADER_LEN 128

/* A parsed NPY file: a 1-D C-order array of n elements of dtype, whose data
 * starts data_off bytes into the file. */
struct ds_npy {
    enum ds_dtype dtype;
    unsigned major; /* format version 1, 2 or 3 */
    uint64_t n;
    size_t data_off;
};

/* ds_npy_parse: parse and check the NPY file p[0..len): magic, version
 * 1.0/2.0/3.0, the header dict ('descr' a little-endian integer or float
 * type, 'fortran_order' False, 'shape' 1-D), and that len holds the n
 * elements (trailing bytes are ignored, as numpy ignores them).  `name`
 * is used in messages.  Returns 0 or DS_EFORMAT. */
int ds_npy_parse(const void *p, size_t len, const char *name,
                 struct ds_npy *out, struct ds_err *err);

/* ds_npy_header: the DS_NPY_HEADER_LEN bytes np.save (numpy 1.26) writes
 * before a 1-D array of n elements of t. */
void ds_npy_header(enum ds_dtype t, uint64_t n,
                   unsigned char out[DS_NPY_HEADER_LEN]);

/* ------------------------------------------------------------------------ */
/* Index arrays shared by both formats (ds_check.c)                          */

/* ds_check_sizes: sizes[0..n) (little-endian int32 at p) are all >= 0;
 * stores their sum in *n_tokens.  Messages name the file and the array
 * ("'x.idx': sizes[4] (byte 50) = -1 is negative"); base is the byte
 * offset of p in its file, or UINT64_MAX if it has none worth naming.
 * Returns 0 or DS_EFORMAT. */
int ds_check_sizes(const unsigned char *p, uint64_t n, const char *name,
                   const char *field, uint64_t base, uint64_t *n_tokens,
                   struct ds_err *err);

/* ds_check_doc_idx: doc_idx[0..m) (little-endian int64 at p) has m >= 1,
 * doc_idx[0] == 0, never decreases, and ends at n_sentences.  Messages as
 * ds_check_sizes().  Returns 0 or DS_EFORMAT. */
int ds_check_doc_idx(const unsigned char *p, uint64_t m, uint64_t n_sentences,
                     const char *name, const char *field, uint64_t base,
                     struct ds_err *err);

/* ------------------------------------------------------------------------ */
/* The MMIDIDX index (ds_mmidx.c)                                            */

#define DS_IDX_MAGIC      "MMIDIDX\0\0"
#define DS_IDX_MAGIC_LEN  9
#define DS_IDX_HEADER_LEN 34

/* A parsed .idx: the arrays point into the parsed buffer (unaligned,
 * little-endian). */
struct ds_idx {
    enum ds_dtype dtype;
    uint64_t n;                    /* N, sentences */
    uint64_t m;                    /* M, doc_idx entries (documents + 1) */
    uint64_t n_tokens;             /* sum of sizes */
    const unsigned char *sizes;    /* int32[N] */
    const unsigned char *pointers; /* int64[N], byte offsets in the .bin */
    const unsigned char *doc_idx;  /* int64[M] */
};

/* ds_idx_parse: parse and check an .idx p[0..len): magic, version 1, an
 * integer dtype code, N and M against len, sizes >= 0, pointers contiguous
 * from 0, doc_idx from 0 to N without decreasing.  Bytes after doc_idx are
 * allowed.  The .bin's size is for the caller to check against n_tokens.
 * Returns 0 or DS_EFORMAT. */
int ds_idx_parse(const void *p, size_t len, const char *name,
                 struct ds_idx *out, struct ds_err *err);

/* ds_idx_header: the DS_IDX_HEADER_LEN bytes before the arrays. */
void ds_idx_header(enum ds_dtype t, uint64_t n, uint64_t m,
                   unsigned char out[DS_IDX_HEADER_LEN]);

/* ------------------------------------------------------------------------ */
/* The _idx.npz archive (ds_npz.c)                                           */

/* A parsed npz: copies of the two members' data (little-endian). */
struct ds_npz {
    unsigned char *lens_mem;   /* the lens.npy member, malloc'd */
    unsigned char *docs_mem;   /* the docs.npy member, malloc'd */
    const unsigned char *lens; /* int32[n] inside lens_mem */
    const unsigned char *docs; /* int64[m] inside docs_mem */
    uint64_t n;                /* sentences */
    uint64_t m;                /* docs entries (documents + 1) */
    uint64_t n_tokens;         /* sum of lens */
};

/* ds_npz_parse: read the zip p[0..len) (members found through the central
 * directory; Zip64, stored or deflated) and check its members lens.npy
 * (int32, each >= 0) and docs.npy (int64, from 0 to len(lens) without
 * decreasing).  On success the caller releases out with ds_npz_release().
 * Returns 0, DS_EFORMAT or DS_ENOMEM. */
int ds_npz_parse(const void *p, size_t len, const char *name,
                 struct ds_npz *out, struct ds_err *err);

/* ds_npz_release: free the members; a zeroed struct is fine. */
void ds_npz_release(struct ds_npz *z);

/* ds_npz_write: write a stored zip to `path` with the members lens.npy and
 * docs.npy copied from the complete NPY files lens_path and docs_path, as
 * np.savez(path, lens=..., docs=...) does.  Returns 0 or DS_EIO. */
int ds_npz_write(const char *path, const char *lens_path, const char *docs_path,
                 struct ds_err *err);

/* ------------------------------------------------------------------------ */
/* Files (ds_file.c)                                                         */

/* ds_path_cat: a malloc'd a + b + c (c may be NULL), or NULL. */
char *ds_path_cat(const char *a, const char *b, const char *c);

/* ds_tmp_name: a malloc'd "<path>.tmp.<pid>", or NULL. */
char *ds_tmp_name(const char *path);

/* A file written through a large buffer.  off counts every byte written
 * so far (flushed or not); writes past a failure are dropped and the
 * failure is reported by the next flush or close. */
struct ds_wfile {
    int fd;
    char *path; /* owned */
    unsigned char *buf;
    size_t len, cap;
    uint64_t off;
    uint64_t flushed, kicked; /* bytes written; of those, sent to disk */
    int err_no;               /* errno of the first failed write, 0 if none */
};

/* ds_wfile_open: create (truncate) path for writing (and reading back if
 * rw) with a buffer of cap bytes.  Takes ownership of path, also on
 * failure.  Returns 0, DS_EIO or DS_ENOMEM. */
int ds_wfile_open(struct ds_wfile *f, char *path, bool rw, size_t cap,
                  struct ds_err *err);

/* ds_wfile_space: room for n <= f->cap bytes at the end of the buffer
 * (flushing first if needed); the caller fills it and calls
 * ds_wfile_advance(f, n). */
unsigned char *ds_wfile_space(struct ds_wfile *f, size_t n);

static inline void
ds_wfile_advance(struct ds_wfile *f, size_t n)
{
    f->len += n;
    f->off += n;
}

/* ds_wfile_write: append p[0..n). */
void ds_wfile_write(struct ds_wfile *f, const void *p, size_t n);

/* ds_wfile_flush: write the buffer out.  Returns 0 or DS_EIO. */
int ds_wfile_flush(struct ds_wfile *f, struct ds_err *err);

/* ds_wfile_pwrite: flush, then write p[0..n) at byte off (a header patch).
 * Returns 0 or DS_EIO. */
int ds_wfile_pwrite(struct ds_wfile *f, const void *p, size_t n, uint64_t off,
                    struct ds_err *err);

/* ds_wfile_pread: flush, then read exactly n bytes at off.  Returns 0 or
 * DS_EIO. */
int ds_wfile_pread(struct ds_wfile *f, void *p, size_t n, uint64_t off,
                   struct ds_err *err);

/* ds_wfile_close: flush, fsync if sync, close; keeps the file.  The path
 * stays in f->path for a rename.  Returns 0 or DS_EIO. */
int ds_wfile_close(struct ds_wfile *f, bool sync, struct ds_err *err);

/* ds_wfile_discard: close if open, unlink, free the path and buffer. */
void ds_wfile_discard(struct ds_wfile *f);

/* A read-only mapping of a whole file (p is NULL for an empty file). */
struct ds_map {
    const unsigned char *p;
    size_t len;
};

/* ds_map_file: map path read-only.  Returns 0, DS_EIO (err names the file
 * and what failed) or DS_ENOMEM. */
int ds_map_file(const char *path, struct ds_map *m, struct ds_err *err);

/* ds_unmap: undo ds_map_file(); a zeroed map is fine. */
void ds_unmap(struct ds_map *m);

/* ds_fsync_dir: fsync the directory that holds path (best effort). */
void ds_fsync_dir(const char *path);

/* ------------------------------------------------------------------------ */
/* Index cache locks (ds_cache.c)                                            */

/* ds_cache_lock: an exclusive flock(2) on "<path>.lock" (created 0644 if
 * missing), waiting while another process holds it, so that the processes
 * of one node building the same cache build it once.  The holder removes
 * the lock file when done (ds_cache_unlock()); a process that waited then
 * holds a lock on a file no longer there, sees it (the inode at the path
 * is not its own) and locks the path anew.  Returns the lock's
 * descriptor, or -1 where no lock can be had (the directory is not
 * writable, flock() fails with ENOLCK or EOPNOTSUPP as on some network
 * file systems, no memory): the caller then goes on unlocked, as before
 * there was a lock, and temp + rename keeps the cache whole. */
int ds_cache_lock(const char *path);

/* ds_cache_unlock: remove "<path>.lock" (while still holding it) and
 * release a ds_cache_lock() descriptor; fd -1 is a no-op. */
void ds_cache_unlock(int fd, const char *path);

/* ds_cache_clean: remove from directory dir what interrupted index-cache
 * builds left: lock files nobody holds ("<cache>.lock") and temporaries
 * ("<cache>.tmp.<pid>") of processes gone (not alive on this host) whose
 * lock nobody holds.  The caches are ERNIE samples mappings whose name
 * begins "<base>_" (base NULL: none) and, with gpt, the md5-named GPT
 * files.  Adds the number removed to *n_removed.  Best effort: what
 * cannot be removed stays. */
void ds_cache_clean(const char *dir, const char *base, bool gpt,
                    size_t *n_removed);

#endif /* DS_INT_H */
