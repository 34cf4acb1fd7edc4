/* SPDX-License-Identifier: MIT */
/*
 * safetensors.h: Hugging Face's safetensors format, the trainer's weight
 * and checkpoint exchange format.  A file is an 8-byte little-endian
 * header length N, N bytes of JSON (padded with spaces), then the data:
 *
 *     {"__metadata__": {"k": "v"},
 *      "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
 *      ...}
 *
 * data_offsets are relative to the start of the data, and the tensors
 * cover the data exactly: sorted by offset, each starts where the one
 * before ends, the first at 0, the last at the end of the file.  Tensor
 * bytes are in the host's order: this module assumes (and checks at
 * compile time) a little-endian host, as the format is little-endian.
 */
#ifndef TRAIN_SAFETENSORS_H
#define TRAIN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many dimensions per tensor (the format has no limit). */
#define ST_MAX_DIMS 8
/* A header longer than this is refused, as the Python library does. */
#define ST_MAX_HEADER 100000000

/* The dtypes of the format, with their names in the header ("F32", ...).
 * ST_F4, ST_F6_E2M3 and ST_F6_E3M2 are narrower than a byte: a tensor of
 * them must fill whole bytes. */
enum st_dtype {
    ST_BOOL,
    ST_U8,
    ST_I8,
    ST_I16,
    ST_U16,
    ST_F16,
    ST_BF16,
    ST_I32,
    ST_U32,
    ST_F32,
    ST_F64,
    ST_I64,
    ST_U64,
    ST_C64,
    ST_F8_E5M2,
    ST_F8_E4M3,
    ST_F8_E8M0,
    ST_F8_E4M3FNUZ,
    ST_F8_E5M2FNUZ,
    ST_F4,
    ST_F6_E2M3,
    ST_F6_E3M2,
    ST_N_DTYPES
};

/* One tensor.  nbytes is shape product x element size; data points to
 * nbytes bytes (any pointer, even NULL, when nbytes is 0). */
struct st_tensor {
    const char *name;
    enum st_dtype dtype;
    int ndim; /* 0 (a scalar) to ST_MAX_DIMS */
    int64_t shape[ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
};

/* The message of a failure, naming the file and what is wrong; written
 * only on failure. */
struct st_err {
    char msg[512];
};

/* st_dtype_name: "F32" for ST_F32 ...; NULL for a value out of range. */
const char *st_dtype_name(enum st_dtype dtype);

/* st_dtype_bits: the size of one element in bits (32 for ST_F32, 4 for
 * ST_F4); 0 for a value out of range. */
size_t st_dtype_bits(enum st_dtype dtype);

/* st_write: write the n tensors t[0..n) (data in host memory) and the
 * metadata pairs meta_kv = { k0, v0, k1, v1, ..., NULL } (meta_kv may be
 * NULL: no "__metadata__") to path.  The header lists "__metadata__"
 * first, then the tensors in the order given; their data follow in that
 * order, back to back, the first at an offset that is a multiple of 8 in
 * the file.  (The format allows no gaps, so a tensor is aligned to its
 * element size only when the tensors before it fill multiples of it; a
 * file of one dtype always is.)  Names and metadata must be valid UTF-8,
 * unique, and no tensor may be named "__metadata__".  The file is written
 * as "<path>.tmp.<pid>", fsync'ed and renamed over path, so path is either
 * the old file or the whole new one.  Returns 0, or -1 with err (NULL
 * allowed) saying what is wrong: a bad tensor (named), or an I/O error
 * (the temporary file is removed). */
int st_write(const char *path, const struct st_tensor *t, size_t n,
             const char *const *meta_kv, struct st_err *err);

/* st_writer_open: st_write() one tensor at a time: the header of t[0..n)
 * (their data are not read, and may be NULL) and the metadata are
 * written to "<path>.tmp.<pid>" now; st_writer_put() then writes each
 * tensor's data in turn (nbytes must be the next tensor's), and
 * st_writer_close() checks that all came, fsyncs and renames the file
 * over path.  The same bytes as st_write() of the same tensors.
 * st_writer_abort() removes the temporary file; st_writer_close() frees
 * the writer whether it succeeds or not, as st_writer_abort() does.  Each
 * returns 0, or -1 with err (NULL allowed; a failed put leaves the
 * writer to abort). */
struct st_writer;
int st_writer_open(struct st_writer **out, const char *path,
                   const struct st_tensor *t, size_t n,
                   const char *const *meta_kv, struct st_err *err);
int st_writer_put(struct st_writer *w, const void *data, size_t nbytes,
                  struct st_err *err);
int st_writer_close(struct st_writer *w, struct st_err *err);
void st_writer_abort(struct st_writer *w);

/* A safetensors file opened for reading: immutable, so safe for
 * concurrent readers. */
struct st_file;

/* st_open: map path read-only and validate all of it: the header length,
 * the JSON (strict RFC 8259, UTF-8; unknown fields of a tensor entry are
 * ignored), each tensor's dtype, shape and data_offsets against each
 * other, that the tensors cover the data exactly without overlap, and
 * that names and metadata keys are unique.  On success *out is the file
 * (st_close frees it); on failure *out is NULL and err says what is wrong,
 * naming the file, the tensor and the byte.  Returns 0 or -1. */
int st_open(struct st_file **out, const char *path, struct st_err *err);

/* st_open_buffer: st_open on the len bytes at buf, which must stay valid
 * and unchanged until st_close; name is used in messages (NULL: "buffer").
 * For tests, fuzzing and files read by other means. */
int st_open_buffer(struct st_file **out, const void *buf, size_t len,
                   const char *name, struct st_err *err);

/* st_count: the number of tensors. */
size_t st_count(const struct st_file *f);

/* st_at: tensor i (i < st_count(f)), in the order of their data in the
 * file (ties between empty tensors in header order).  Its name and data
 * stay valid until st_close.  data is aligned to the element size (a
 * tensor stored unaligned is copied once, at open). */
const struct st_tensor *st_at(const struct st_file *f, size_t i);

/* st_find: the tensor named name, or NULL if there is none. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);

/* st_meta: the value of "__metadata__" key, or NULL if absent; valid
 * until st_close. */
const char *st_meta(const struct st_file *f, const char *key);

/* st_close: unmap and free f; NULL is allowed. */
void st_close(struct st_file *f);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_SAFETENSORS_H */
