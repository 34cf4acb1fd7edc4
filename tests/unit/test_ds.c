/* SPDX-License-Identifier: MIT */
/*
 * test_ds.c: unit tests of libdata's dataset formats: the worked example
 * of the spec byte for byte, round trips of both formats and both token
 * dtypes through every accessor, the empty corpus, the writer's argument
 * and range errors, its temporary files, and ds_open's refusal of
 * truncated and corrupt files, each with the code and the message.
 * Files go to a fresh directory under $TMPDIR (default /tmp), removed at
 * the end.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "../harness.h"
#include "../harness_files.h"
#include "ds.h"

/* The corpus of spec section 10a: doc 0 = [5,6,7] [8]; doc 1 = [9,10]. */
static int
write_10a(const char *prefix, enum ds_format fmt, enum ds_dtype dt)
{
    static const int32_t s0[] = { 5, 6, 7 }, s1[] = { 8 }, s2[] = { 9, 10 };
    struct ds_writer *w = NULL;
    struct ds_err e;

    if (ds_writer_open(&w, prefix, fmt, dt, &e) < 0 ||
        ds_writer_add_sentence(w, s0, 3, &e) < 0 ||
        ds_writer_add_sentence(w, s1, 1, &e) < 0 ||
        ds_writer_end_document(w, &e) < 0 ||
        ds_writer_add_sentence(w, s2, 2, &e) < 0 ||
        ds_writer_commit(w, &e) < 0) {
        fprintf(stderr, "write_10a: %s\n", e.msg);
        return -1;
    }
    return 0;
}

/* Open prefix expecting failure with code and a message containing sub. */
#define CHECK_OPEN_FAILS(prefix, want_code, sub)                \
    do {                                                        \
        struct ds_dataset *d_ = NULL;                           \
        struct ds_err e_;                                       \
        memset(&e_, 0, sizeof(e_));                             \
        CHECK_EQ_INT(ds_open(&d_, (prefix), &e_), (want_code)); \
        CHECK_EQ_INT(e_.code, (want_code));                     \
        CHECK(d_ == NULL);                                      \
        CHECK_MSG(e_, (sub));                                   \
    } while (0)

/* ------------------------------------------------------- basic queries */

static void
test_version_strerror_dtypes(void)
{
    CHECK_EQ_STR(ds_version(), DS_VERSION_STRING);
    CHECK_EQ_STR(ds_strerror(DS_EFORMAT), "malformed dataset file");
    CHECK_EQ_STR(ds_strerror(DS_ERANGE), "value out of range");
    CHECK_EQ_STR(ds_strerror(42), "unknown error");
    CHECK_EQ_INT(ds_dtype_size(DS_DTYPE_UINT16), 2);
    CHECK_EQ_INT(ds_dtype_size(DS_DTYPE_INT32), 4);
    CHECK_EQ_INT(ds_dtype_size(DS_DTYPE_UINT8), 1);
    CHECK_EQ_INT(ds_dtype_size(DS_DTYPE_FLOAT64), 8);
    CHECK_EQ_INT(ds_dtype_size(DS_DTYPE_UINT64), 8);
    CHECK_EQ_INT(ds_dtype_size((enum ds_dtype)0), 0);
    CHECK_EQ_INT(ds_dtype_size((enum ds_dtype)11), 0);
    CHECK_EQ_STR(ds_dtype_name(DS_DTYPE_UINT16), "uint16");
    CHECK_EQ_STR(ds_dtype_name(DS_DTYPE_FLOAT32), "float32");
    CHECK_EQ_STR(ds_dtype_name((enum ds_dtype)99), "unknown");
}

static void
test_output_names(void)
{
    char *n[2];

    CHECK_EQ_INT(ds_output_names("a/p", DS_FORMAT_MMAP, n), 0);
    CHECK_EQ_STR(n[0], "a/p.bin");
    CHECK_EQ_STR(n[1], "a/p.idx");
    free(n[0]);
    free(n[1]);
    CHECK_EQ_INT(ds_output_names("a/p", DS_FORMAT_NPY, n), 0);
    CHECK_EQ_STR(n[0], "a/p_ids.npy");
    CHECK_EQ_STR(n[1], "a/p_idx.npz");
    free(n[0]);
    free(n[1]);
    CHECK_EQ_INT(ds_output_names("a/p", (enum ds_format)7, n), DS_EINVAL);
}

/* ------------------------------------------------- spec 10a, exactly */

static const unsigned char spec_idx[94] = {
    0x4d, 0x4d, 0x49, 0x44, 0x49, 0x44, 0x58, 0x00, 0x00, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static const unsigned char spec_bin[12] = {
    0x05, 0x00, 0x06, 0x00, 0x07, 0x00, 0x08, 0x00, 0x09, 0x00, 0x0a, 0x00
};

/* np.save's header for uint16 of shape (6,): 128 bytes. */
static void
npy_header_6_u2(unsigned char h[128])
{
    static const char dict[] =
        "{'descr': '<u2', 'fortran_order': False, 'shape': (6,), }";

    memcpy(h, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(h + 10, ' ', 118);
    memcpy(h + 10, dict, sizeof(dict) - 1);
    h[127] = '\n';
}

static void
test_spec_10a_mmap_bytes(void)
{
    const char *dir = test_dir("spec_mmap");
    unsigned char *idx, *bin;
    size_t idx_len, bin_len;
    int n_tmp;

    CHECK_EQ_INT(write_10a(path_of(dir, "c"), DS_FORMAT_MMAP, DS_DTYPE_UINT16),
                 0);
    idx = read_file(path_of(dir, "c.idx"), &idx_len);
    bin = read_file(path_of(dir, "c.bin"), &bin_len);
    CHECK_EQ_INT(idx_len, 94);
    CHECK_EQ_INT(bin_len, 12);
    if (idx_len == 94)
        CHECK_EQ_MEM(idx, spec_idx, 94);
    if (bin_len == 12)
        CHECK_EQ_MEM(bin, spec_bin, 12);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);
    free(idx);
    free(bin);
}

static void
test_spec_10a_npy_bytes(void)
{
    const char *dir = test_dir("spec_npy");
    unsigned char *npy, hdr[128];
    size_t len;
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int n_tmp;

    CHECK_EQ_INT(write_10a(path_of(dir, "c"), DS_FORMAT_NPY, DS_DTYPE_UINT16),
                 0);
    npy = read_file(path_of(dir, "c_ids.npy"), &len);
    npy_header_6_u2(hdr);
    CHECK_EQ_INT(len, 140);
    if (len == 140) {
        CHECK_EQ_MEM(npy, hdr, 128);
        CHECK_EQ_MEM(npy + 128, spec_bin, 12);
    }
    free(npy);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);

    CHECK_EQ_INT(ds_open(&d, path_of(dir, "c"), &e), 0);
    if (d == NULL)
        return;
    CHECK_EQ_INT(ds_dataset_format(d), DS_FORMAT_NPY);
    CHECK_EQ_INT(ds_dataset_dtype(d), DS_DTYPE_UINT16);
    CHECK_EQ_INT(ds_dataset_n_sentences(d), 3);
    CHECK_EQ_INT(ds_dataset_n_documents(d), 2);
    CHECK_EQ_INT(ds_sentence_len(d, 0), 3);
    CHECK_EQ_INT(ds_sentence_len(d, 1), 1);
    CHECK_EQ_INT(ds_sentence_len(d, 2), 2);
    CHECK_EQ_INT(ds_document_first(d, 0), 0);
    CHECK_EQ_INT(ds_document_first(d, 1), 2);
    CHECK_EQ_INT(ds_document_first(d, 2), 3);
    CHECK_EQ_MEM(ds_dataset_tokens(d), spec_bin, 12);
    ds_close(d);
}

/* The same zip numpy 1.26 writes for the 10a corpus (np.savez: stored,
 * Zip64 extras in the local headers), from the npz fuzz corpus. */
static void
test_npz_from_numpy_is_read(void)
{
    const char *dir = test_dir("numpy_npz");
    unsigned char *z;
    size_t len;
    struct ds_dataset *d = NULL;
    struct ds_err e;

    z = read_file("testdata/fuzz/npz/numpy-savez-10a", &len);
    if (z == NULL)
        SKIP("testdata/fuzz/npz/numpy-savez-10a not found (run from the "
             "top directory)");
    CHECK_EQ_INT(write_10a(path_of(dir, "c"), DS_FORMAT_NPY, DS_DTYPE_UINT16),
                 0);
    write_file(path_of(dir, "c_idx.npz"), z, len);
    free(z);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "c"), &e), 0);
    if (d == NULL) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    CHECK_EQ_INT(ds_dataset_n_sentences(d), 3);
    CHECK_EQ_INT(ds_dataset_n_documents(d), 2);
    CHECK_EQ_INT(ds_sentence_start(d, 2), 4);
    ds_close(d);
}

/* ---------------------------------------------------------- round trips */

/* A deterministic corpus: LCG-driven documents of 0..5 sentences (an empty
 * document is ended too, and must vanish) of 1..9 tokens, ids spread over
 * the dtype's range, plus one sentence longer than the writer's buffer. */
struct corpus {
    int32_t *ids;
    uint32_t *lens; /* per recorded sentence */
    uint64_t *doc_first;
    uint64_t n_ids, n_sent, n_docs;
};

static uint32_t
lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*s >> 33);
}

static int
write_corpus(const char *prefix, enum ds_format fmt, enum ds_dtype dt,
             uint64_t n_docs, struct corpus *c)
{
    struct ds_writer *w = NULL;
    struct ds_err e;
    uint64_t seed = 12345;
    size_t cap_ids = 4 << 20, cap_s = 1024;
    int32_t buf[16];
    const size_t long_len = 3u << 20; /* 3M tokens: past the 4 MiB buffer */

    memset(c, 0, sizeof(*c));
    c->ids = malloc(cap_ids * sizeof(int32_t) + long_len * sizeof(int32_t));
    c->lens = malloc(cap_s * sizeof(uint32_t));
    c->doc_first = malloc((n_docs + 2) * sizeof(uint64_t));
    if (c->ids == NULL || c->lens == NULL || c->doc_first == NULL)
        return -1;
    if (ds_writer_open(&w, prefix, fmt, dt, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    c->doc_first[0] = 0;
    for (uint64_t d = 0; d < n_docs; d++) {
        uint32_t n_s = lcg(&seed) % 6;

        for (uint32_t s = 0; s < n_s; s++) {
            uint32_t len = 1 + lcg(&seed) % 9;

            for (uint32_t i = 0; i < len; i++) {
                uint32_t r = lcg(&seed);

                buf[i] = dt == DS_DTYPE_UINT16 ? (int32_t)(r & 0xFFFF)
                                               : (int32_t)(r * 2654435761u);
            }
            if (d == 3 && s == 0) {
                buf[0] = dt == DS_DTYPE_UINT16 ? 65535 : INT32_MIN;
                buf[len - 1] = dt == DS_DTYPE_UINT16 ? 0 : INT32_MAX;
            }
            if (ds_writer_add_sentence(w, buf, len, &e) < 0) {
                fprintf(stderr, "%s\n", e.msg);
                ds_writer_abort(w);
                return -1;
            }
            memcpy(c->ids + c->n_ids, buf, len * sizeof(int32_t));
            c->n_ids += len;
            if (c->n_sent == cap_s) {
                cap_s *= 2;
                c->lens = realloc(c->lens, cap_s * sizeof(uint32_t));
                if (c->lens == NULL)
                    return -1;
            }
            c->lens[c->n_sent++] = len;
        }
        if (d == n_docs / 2) {
            /* One long sentence in a document of its own. */
            for (size_t i = 0; i < long_len; i++)
                c->ids[c->n_ids + i] = (int32_t)(i % 50000);
            if (ds_writer_add_sentence(w, c->ids + c->n_ids, long_len, &e) <
                0) {
                ds_writer_abort(w);
                return -1;
            }
            c->n_ids += long_len;
            c->lens[c->n_sent++] = (uint32_t)long_len;
            n_s++;
        }
        if (ds_writer_end_document(w, &e) < 0 ||
            ds_writer_end_document(w, &e) < 0) {
            ds_writer_abort(w);
            return -1;
        }
        if (n_s > 0)
            c->doc_first[++c->n_docs] = c->n_sent;
    }
    if (ds_writer_n_sentences(w) != c->n_sent ||
        ds_writer_n_documents(w) != c->n_docs ||
        ds_writer_n_tokens(w) != c->n_ids) {
        fprintf(stderr, "writer counts differ\n");
        ds_writer_abort(w);
        return -1;
    }
    if (ds_writer_commit(w, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    return 0;
}

static void
corpus_free(struct corpus *c)
{
    free(c->ids);
    free(c->lens);
    free(c->doc_first);
}

static void
check_roundtrip(enum ds_format fmt, enum ds_dtype dt, const char *name)
{
    const char *dir = test_dir(name);
    const char *prefix = path_of(dir, "rt");
    struct corpus c;
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int32_t *got;
    uint64_t pos = 0, bad = 0;
    int n_tmp;

    /* 30000 documents: the pointers are rebuilt in several chunks. */
    if (write_corpus(prefix, fmt, dt, 30000, &c) < 0) {
        CHECK(!"write_corpus failed");
        corpus_free(&c);
        return;
    }
    CHECK_EQ_INT(count_files(dir, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);
    CHECK_EQ_INT(ds_open(&d, prefix, &e), 0);
    if (d == NULL) {
        fprintf(stderr, "%s\n", e.msg);
        corpus_free(&c);
        return;
    }
    CHECK_EQ_INT(ds_dataset_format(d), fmt);
    CHECK_EQ_INT(ds_dataset_dtype(d), dt);
    CHECK_EQ_INT(ds_dataset_n_sentences(d), c.n_sent);
    CHECK_EQ_INT(ds_dataset_n_documents(d), c.n_docs);
    CHECK_EQ_INT(ds_dataset_n_tokens(d), c.n_ids);
    for (uint64_t i = 0; i < c.n_sent; i++) {
        if (ds_sentence_len(d, i) != c.lens[i] ||
            ds_sentence_start(d, i) != pos)
            bad++;
        pos += c.lens[i];
    }
    CHECK_EQ_INT(bad, 0);
    for (uint64_t k = 0; k <= c.n_docs; k++)
        if (ds_document_first(d, k) != c.doc_first[k])
            bad++;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(ds_document_first(d, c.n_docs), c.n_sent);
    /* Out of range accessors give 0. */
    CHECK_EQ_INT(ds_sentence_len(d, c.n_sent), 0);
    CHECK_EQ_INT(ds_sentence_start(d, c.n_sent), 0);
    CHECK_EQ_INT(ds_document_first(d, c.n_docs + 1), 0);

    got = malloc(c.n_ids * sizeof(int32_t));
    if (got != NULL) {
        CHECK_EQ_INT(ds_read_tokens(d, 0, c.n_ids, got, &e), 0);
        CHECK_EQ_MEM(got, c.ids, c.n_ids * sizeof(int32_t));
        CHECK_EQ_INT(ds_read_tokens(d, 7, 3, got, &e), 0);
        CHECK_EQ_MEM(got, c.ids + 7, 3 * sizeof(int32_t));
        free(got);
    }
    /* The raw array is the file's little-endian dtype. */
    if (dt == DS_DTYPE_UINT16) {
        const unsigned char *t = ds_dataset_tokens(d);

        CHECK_EQ_INT(t[2] | t[3] << 8, c.ids[1]);
    } else {
        const unsigned char *t = ds_dataset_tokens(d);

        CHECK_EQ_INT((int32_t)((uint32_t)t[4] | (uint32_t)t[5] << 8 |
                               (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24),
                     c.ids[1]);
    }
    /* Reading past the end. */
    CHECK_EQ_INT(ds_read_tokens(d, c.n_ids, 0, NULL, &e), 0);
    CHECK_EQ_INT(ds_read_tokens(d, c.n_ids - 1, 2, (int32_t[2]){ 0 }, &e),
                 DS_ERANGE);
    CHECK_MSG(e, "past the end");
    CHECK_EQ_INT(ds_read_tokens(d, UINT64_MAX, 1, (int32_t[1]){ 0 }, &e),
                 DS_ERANGE);
    ds_close(d);
    corpus_free(&c);
}

static void
test_roundtrip_mmap_uint16(void)
{
    check_roundtrip(DS_FORMAT_MMAP, DS_DTYPE_UINT16, "rt_mmap_u16");
}

static void
test_roundtrip_mmap_int32(void)
{
    check_roundtrip(DS_FORMAT_MMAP, DS_DTYPE_INT32, "rt_mmap_i32");
}

static void
test_roundtrip_npy_uint16(void)
{
    check_roundtrip(DS_FORMAT_NPY, DS_DTYPE_UINT16, "rt_npy_u16");
}

static void
test_roundtrip_npy_int32(void)
{
    check_roundtrip(DS_FORMAT_NPY, DS_DTYPE_INT32, "rt_npy_i32");
}

/* Both pairs present: the npy pair wins, as in PaddleNLP. */
static void
test_open_prefers_npy_pair(void)
{
    const char *dir = test_dir("both");
    static const int32_t one[] = { 1 };
    struct ds_writer *w = NULL;
    struct ds_dataset *d = NULL;
    struct ds_err e;

    CHECK_EQ_INT(write_10a(path_of(dir, "p"), DS_FORMAT_MMAP, DS_DTYPE_INT32),
                 0);
    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "p"), DS_FORMAT_NPY,
                                DS_DTYPE_UINT16, &e),
                 0);
    CHECK_EQ_INT(ds_writer_add_sentence(w, one, 1, &e), 0);
    CHECK_EQ_INT(ds_writer_commit(w, &e), 0);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "p"), &e), 0);
    if (d != NULL) {
        CHECK_EQ_INT(ds_dataset_format(d), DS_FORMAT_NPY);
        CHECK_EQ_INT(ds_dataset_n_tokens(d), 1);
    }
    ds_close(d);
    /* With only one file of the npy pair, the mmap pair is used. */
    unlink(path_of(dir, "p_idx.npz"));
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "p"), &e), 0);
    if (d != NULL) {
        CHECK_EQ_INT(ds_dataset_format(d), DS_FORMAT_MMAP);
        CHECK_EQ_INT(ds_dataset_dtype(d), DS_DTYPE_INT32);
        CHECK_EQ_INT(ds_dataset_n_tokens(d), 6);
    }
    ds_close(d);
}

/* ------------------------------------------------------- empty corpus */

static void
check_empty(enum ds_format fmt, const char *name)
{
    const char *dir = test_dir(name);
    const char *prefix = path_of(dir, "e");
    struct ds_writer *w = NULL;
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int32_t x;

    CHECK_EQ_INT(ds_writer_open(&w, prefix, fmt, DS_DTYPE_UINT16, &e), 0);
    if (w == NULL)
        return;
    CHECK_EQ_INT(ds_writer_end_document(w, &e), 0); /* not recorded */
    CHECK_EQ_INT(ds_writer_n_documents(w), 0);
    CHECK_EQ_INT(ds_writer_commit(w, &e), 0);
    if (fmt == DS_FORMAT_MMAP) {
        /* PaddleNLP writes N = 0, M = 1, doc_idx = [0]: 42 bytes. */
        size_t len;
        unsigned char *idx = read_file(path_of(dir, "e.idx"), &len);
        unsigned char want[42];

        memcpy(want, spec_idx, 18);
        memset(want + 18, 0, 24);
        want[26] = 1;
        CHECK_EQ_INT(len, 42);
        if (len == 42)
            CHECK_EQ_MEM(idx, want, 42);
        free(idx);
        free(read_file(path_of(dir, "e.bin"), &len));
        CHECK_EQ_INT(len, 0);
    }
    CHECK_EQ_INT(ds_open(&d, prefix, &e), 0);
    if (d == NULL) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    CHECK_EQ_INT(ds_dataset_n_sentences(d), 0);
    CHECK_EQ_INT(ds_dataset_n_documents(d), 0);
    CHECK_EQ_INT(ds_dataset_n_tokens(d), 0);
    CHECK_EQ_INT(ds_document_first(d, 0), 0);
    CHECK(ds_dataset_tokens(d) == NULL);
    CHECK_EQ_INT(ds_read_tokens(d, 0, 0, &x, &e), 0);
    CHECK_EQ_INT(ds_read_tokens(d, 0, 1, &x, &e), DS_ERANGE);
    ds_close(d);
}

static void
test_empty_corpus_mmap(void)
{
    check_empty(DS_FORMAT_MMAP, "empty_mmap");
}

static void
test_empty_corpus_npy(void)
{
    check_empty(DS_FORMAT_NPY, "empty_npy");
}

/* ------------------------------------------------------- writer errors */

static void
test_writer_rejects_bad_arguments(void)
{
    const char *dir = test_dir("args");
    struct ds_writer *w = NULL;
    struct ds_err e;
    int32_t id = 1;

    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "a"), DS_FORMAT_MMAP,
                                DS_DTYPE_INT64, &e),
                 DS_EINVAL);
    CHECK_MSG(e, "int64");
    CHECK(w == NULL);
    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "a"), (enum ds_format)5,
                                DS_DTYPE_INT32, &e),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_writer_open(&w, "", DS_FORMAT_MMAP, DS_DTYPE_INT32, &e),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "no/such/dir/a"),
                                DS_FORMAT_MMAP, DS_DTYPE_INT32, &e),
                 DS_EIO);
    CHECK_MSG(e, "cannot create");
    /* The file asked for, not its temporary name. */
    CHECK_MSG(e, "no/such/dir/a.bin'");
    CHECK(strstr(e.msg, ".tmp.") == NULL);
    CHECK(w == NULL);
    /* A prefix without a file name, or that is a directory, is refused
     * (it gave "dir/.bin", or "dir.bin" beside the directory). */
    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "out/"), DS_FORMAT_MMAP,
                                DS_DTYPE_INT32, &e),
                 DS_EINVAL);
    CHECK_MSG(e, "has no file name");
    CHECK_EQ_INT(ds_writer_open(&w, dir, DS_FORMAT_MMAP, DS_DTYPE_INT32, &e),
                 DS_EINVAL);
    CHECK_MSG(e, "is a directory");
    CHECK(w == NULL);
    CHECK_EQ_INT(ds_prefix_check(path_of(dir, "x"), &e), 0);

    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "a"), DS_FORMAT_MMAP,
                                DS_DTYPE_INT32, &e),
                 0);
    if (w == NULL)
        return;
    CHECK_EQ_INT(ds_writer_add_sentence(w, &id, 0, &e), DS_EINVAL);
    CHECK_MSG(e, "empty sentence");
    ds_writer_abort(w);
    ds_writer_abort(NULL);
}

static void
test_writer_uint16_range(void)
{
    const char *dir = test_dir("range");
    static const int32_t bad[] = { 1, 70000, 2 }, neg[] = { -1 },
                         ok[] = { 65535, 0 };
    struct ds_writer *w = NULL;
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int32_t got[2];

    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "r"), DS_FORMAT_MMAP,
                                DS_DTYPE_UINT16, &e),
                 0);
    if (w == NULL)
        return;
    CHECK_EQ_INT(ds_writer_add_sentence(w, bad, 3, &e), DS_ERANGE);
    CHECK_EQ_INT(e.code, DS_ERANGE);
    CHECK_MSG(e, "70000");
    CHECK_MSG(e, "uint16");
    CHECK_MSG(e, "position 1");
    CHECK_EQ_INT(ds_writer_add_sentence(w, neg, 1, &e), DS_ERANGE);
    CHECK_MSG(e, "-1");
    /* Nothing of the refused sentences was written; the writer goes on. */
    CHECK_EQ_INT(ds_writer_n_sentences(w), 0);
    CHECK_EQ_INT(ds_writer_n_tokens(w), 0);
    CHECK_EQ_INT(ds_writer_add_sentence(w, ok, 2, &e), 0);
    CHECK_EQ_INT(ds_writer_commit(w, &e), 0);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "r"), &e), 0);
    if (d == NULL)
        return;
    CHECK_EQ_INT(ds_dataset_n_tokens(d), 2);
    CHECK_EQ_INT(ds_dataset_n_documents(d), 1);
    CHECK_EQ_INT(ds_read_tokens(d, 0, 2, got, &e), 0);
    CHECK_EQ_INT(got[0], 65535);
    CHECK_EQ_INT(got[1], 0);
    ds_close(d);
}

static void
test_writer_abort_leaves_nothing(void)
{
    static const int32_t s[] = { 1, 2, 3 };
    enum ds_format fmts[2] = { DS_FORMAT_MMAP, DS_FORMAT_NPY };

    for (int f = 0; f < 2; f++) {
        const char *dir = test_dir(f ? "abort_npy" : "abort_mmap");
        struct ds_writer *w = NULL;
        struct ds_err e;
        int n_tmp;

        CHECK_EQ_INT(
            ds_writer_open(&w, path_of(dir, "a"), fmts[f], DS_DTYPE_UINT16, &e),
            0);
        if (w == NULL)
            continue;
        CHECK_EQ_INT(ds_writer_add_sentence(w, s, 3, &e), 0);
        CHECK_EQ_INT(ds_writer_end_document(w, &e), 0);
        /* Not committed: only temporaries exist. */
        CHECK(count_files(dir, &n_tmp) >= 2);
        CHECK_EQ_INT(count_files(dir, &n_tmp), n_tmp);
        ds_writer_abort(w);
        CHECK_EQ_INT(count_files(dir, &n_tmp), 0);
    }
}

/* A commit replaces an older dataset of the same prefix whole. */
static void
test_writer_commit_replaces(void)
{
    const char *dir = test_dir("replace");
    static const int32_t s[] = { 4, 4 };
    struct ds_writer *w = NULL;
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int n_tmp;

    CHECK_EQ_INT(write_10a(path_of(dir, "p"), DS_FORMAT_MMAP, DS_DTYPE_UINT16),
                 0);
    CHECK_EQ_INT(ds_writer_open(&w, path_of(dir, "p"), DS_FORMAT_MMAP,
                                DS_DTYPE_UINT16, &e),
                 0);
    if (w == NULL)
        return;
    /* While the new one is written, the old one still reads. */
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "p"), &e), 0);
    if (d != NULL)
        CHECK_EQ_INT(ds_dataset_n_tokens(d), 6);
    ds_close(d);
    CHECK_EQ_INT(ds_writer_add_sentence(w, s, 2, &e), 0);
    CHECK_EQ_INT(ds_writer_commit(w, &e), 0);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "p"), &e), 0);
    if (d != NULL)
        CHECK_EQ_INT(ds_dataset_n_tokens(d), 2);
    ds_close(d);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);
}

/* ------------------------------------------------ corrupt mmap datasets */

/* Write the 10a .idx with byte edits, and a .bin of bin_len bytes. */
static void
write_idx_variant(const char *dir, const unsigned char *idx, size_t idx_len,
                  size_t bin_len)
{
    unsigned char bin[64] = { 0 };

    memcpy(bin, spec_bin, sizeof(spec_bin));
    write_file(path_of(dir, "x.idx"), idx, idx_len);
    write_file(path_of(dir, "x.bin"), bin, bin_len);
}

static void
check_idx_edit(const char *dir, size_t off, const unsigned char *bytes,
               size_t n, const char *sub)
{
    unsigned char idx[94];

    memcpy(idx, spec_idx, sizeof(idx));
    memcpy(idx + off, bytes, n);
    write_idx_variant(dir, idx, sizeof(idx), sizeof(spec_bin));
    CHECK_OPEN_FAILS(path_of(dir, "x"), DS_EFORMAT, sub);
}

static void
test_open_mmap_corrupt(void)
{
    const char *dir = test_dir("bad_mmap");
    char x[4400];
    unsigned char idx[128];
    struct ds_dataset *d = NULL;
    struct ds_err e;

    snprintf(x, sizeof(x), "%s", path_of(dir, "x"));
    /* The intact pair opens. */
    write_idx_variant(dir, spec_idx, 94, 12);
    CHECK_EQ_INT(ds_open(&d, x, &e), 0);
    ds_close(d);

    check_idx_edit(dir, 0, (const unsigned char *)"MMIDIDY", 7,
                   "bad magic at byte 0");
    check_idx_edit(dir, 0, (const unsigned char *)"TNTIDX\0\0", 8,
                   "lazy (TNTIDX) index is not supported");
    check_idx_edit(dir, 9, (const unsigned char[]){ 2 }, 1,
                   "version 2 at byte 9, expected 1");
    check_idx_edit(dir, 17, (const unsigned char[]){ 11 }, 1,
                   "unknown dtype code 11 at byte 17");
    check_idx_edit(dir, 17, (const unsigned char[]){ 7 }, 1,
                   "dtype code 7 (float32) at byte 17 is not an integer");
    check_idx_edit(dir, 18, (const unsigned char[]){ 5 }, 1,
                   "x.idx': N=5 sentences and M=3 document entries need 118 "
                   "bytes, the file has 94");
    check_idx_edit(dir, 18, (const unsigned char[]){ 3, 0, 0, 0, 0, 0, 0, 32 },
                   8, "need more than 18446744073709551615 bytes");
    check_idx_edit(dir, 26, (const unsigned char[]){ 0 }, 1,
                   "doc_idx is empty");
    check_idx_edit(dir, 38, (const unsigned char[]){ 0xff, 0xff, 0xff, 0xff },
                   4, "sizes[1] (byte 38) = -1 is negative");
    check_idx_edit(dir, 54, (const unsigned char[]){ 4 }, 1,
                   "pointers[1] (byte 54) = 4, expected 6 (pointers are not "
                   "contiguous)");
    check_idx_edit(dir, 46, (const unsigned char[]){ 2 }, 1,
                   "pointers[0] (byte 46) = 2, expected 0");
    check_idx_edit(dir, 70, (const unsigned char[]){ 1 }, 1,
                   "doc_idx[0] (byte 70) = 1, expected 0");
    check_idx_edit(dir, 86, (const unsigned char[]){ 2 }, 1,
                   "doc_idx[2] (byte 86) = 2, the last entry, should be the "
                   "number of sentences, 3");
    check_idx_edit(dir, 78, (const unsigned char[]){ 9 }, 1,
                   "doc_idx[1] (byte 78) = 9 is past the 3 sentences");
    /* An empty document, doc_idx = [0, 0, 3], is read as it is. */
    memcpy(idx, spec_idx, 94);
    idx[78] = 0;
    write_idx_variant(dir, idx, 94, 12);
    CHECK_EQ_INT(ds_open(&d, x, &e), 0);
    if (d != NULL) {
        CHECK_EQ_INT(ds_dataset_n_documents(d), 2);
        CHECK_EQ_INT(ds_document_first(d, 1), 0);
    }
    ds_close(d);
    /* A decreasing doc_idx: [0, 3, 2] with N = 3 fails at entry 2. */
    {
        unsigned char b[94];

        memcpy(b, spec_idx, 94);
        b[78] = 3;
        b[86] = 2;
        write_idx_variant(dir, b, 94, 12);
        CHECK_OPEN_FAILS(x, DS_EFORMAT,
                         "doc_idx[2] (byte 86) = 2 is less than doc_idx[1] "
                         "= 3");
    }

    /* Truncations: the header, then the arrays. */
    write_idx_variant(dir, spec_idx, 30, 12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT,
                     "the file has 30 bytes, an index header "
                     "needs 34");
    write_idx_variant(dir, spec_idx, 93, 12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "need 94 bytes, the file has 93");
    write_idx_variant(dir, spec_idx, 0, 12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "the file has 0 bytes");

    /* The .bin must hold exactly the tokens. */
    write_idx_variant(dir, spec_idx, 94, 10);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "x.bin': the file has 10 bytes, but '");
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "lists 6 tokens of uint16 (12 bytes)");
    write_idx_variant(dir, spec_idx, 94, 14);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "the file has 14 bytes");

    /* Bytes after doc_idx (Megatron's modes) are allowed. */
    memcpy(idx, spec_idx, 94);
    memset(idx + 94, 1, 3);
    write_idx_variant(dir, idx, 97, 12);
    CHECK_EQ_INT(ds_open(&d, x, &e), 0);
    if (d != NULL)
        CHECK_EQ_INT(ds_dataset_n_sentences(d), 3);
    ds_close(d);

    /* Missing files. */
    unlink(path_of(dir, "x.bin"));
    CHECK_OPEN_FAILS(x, DS_EIO, "cannot open '");
    CHECK_OPEN_FAILS(x, DS_EIO, "x.bin': No such file or directory");
    unlink(path_of(dir, "x.idx"));
    CHECK_OPEN_FAILS(x, DS_EIO, "not found: neither");
}

/* Every single-byte change of the 10a .idx either still opens or fails
 * with DS_EFORMAT, never worse. */
static void
test_open_mmap_every_byte(void)
{
    const char *dir = test_dir("bytes");
    int opened = 0, refused = 0, other = 0;

    for (size_t off = 0; off < sizeof(spec_idx); off++) {
        static const unsigned char vals[] = {
            0x00, 0x01, 0x08, 0x7f, 0x80, 0xff
        };

        for (size_t v = 0; v < sizeof(vals); v++) {
            unsigned char b[94];
            struct ds_dataset *d = NULL;
            struct ds_err e;
            int rc;

            if (spec_idx[off] == vals[v])
                continue;
            memcpy(b, spec_idx, sizeof(b));
            b[off] = vals[v];
            write_idx_variant(dir, b, sizeof(b), 12);
            rc = ds_open(&d, path_of(dir, "x"), &e);
            if (rc == 0) {
                int32_t t[6];

                opened++;
                CHECK_EQ_INT(ds_read_tokens(d, 0, 6, t, &e), 0);
                ds_close(d);
            } else if (rc == DS_EFORMAT) {
                refused++;
            } else {
                other++;
            }
        }
    }
    CHECK_EQ_INT(other, 0);
    CHECK(refused > 400);
    CHECK(opened > 0); /* e.g. token-neutral dtype changes (8 <-> 3) */
}

/* A uint32 or int64 token file with values beyond int32. */
static void
test_read_tokens_wide_dtypes(void)
{
    const char *dir = test_dir("wide");
    unsigned char idx[34 + 12 + 16], bin[16];
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int32_t t[2];

    /* One sentence of two tokens, one document. */
    memset(idx, 0, sizeof(idx));
    memcpy(idx, "MMIDIDX\0\0\1", 10);
    idx[17] = DS_DTYPE_UINT32;
    idx[18] = 1;
    idx[26] = 2;
    idx[34] = 2;
    idx[54] = 1; /* doc_idx = [0, 1] */
    memset(bin, 0, sizeof(bin));
    bin[0] = 7;
    bin[4] = 0;
    bin[5] = 0;
    bin[6] = 0;
    bin[7] = 0x80; /* 2^31 */
    write_file(path_of(dir, "w.idx"), idx, sizeof(idx));
    write_file(path_of(dir, "w.bin"), bin, 8);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "w"), &e), 0);
    if (d != NULL) {
        CHECK_EQ_INT(ds_dataset_dtype(d), DS_DTYPE_UINT32);
        CHECK_EQ_INT(ds_read_tokens(d, 0, 1, t, &e), 0);
        CHECK_EQ_INT(t[0], 7);
        CHECK_EQ_INT(ds_read_tokens(d, 0, 2, t, &e), DS_ERANGE);
        CHECK_MSG(e, "token 1 = 2147483648 does not fit int32");
    }
    ds_close(d);

    idx[17] = DS_DTYPE_INT64;
    memset(bin, 0xff, 16); /* -1, -1 */
    bin[15] = 0x80;        /* INT64_MIN + ... */
    write_file(path_of(dir, "w.idx"), idx, sizeof(idx));
    write_file(path_of(dir, "w.bin"), bin, 16);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "w"), &e), 0);
    if (d != NULL) {
        CHECK_EQ_INT(ds_read_tokens(d, 0, 1, t, &e), 0);
        CHECK_EQ_INT(t[0], -1);
        CHECK_EQ_INT(ds_read_tokens(d, 1, 1, t, &e), DS_ERANGE);
        CHECK_MSG(e, "token 1 = -");
    }
    ds_close(d);
}

/* Offsets past 4 GiB: a sparse 16 GiB .bin of int32 tokens holding two
 * sentences of INT32_MAX tokens and one of 1.  Costs a few KiB of disk. */
static void
test_open_large_offsets(void)
{
    const char *dir = test_dir("large");
    const uint64_t big = INT32_MAX, n_tok = 2 * big + 1;
    unsigned char idx[34 + 12 * 3 + 8 * 2];
    unsigned char last[4] = { 0x2a, 0, 0, 0 };
    struct ds_dataset *d = NULL;
    struct ds_err e;
    int32_t t[2];
    FILE *f;

    memset(idx, 0, sizeof(idx));
    memcpy(idx, "MMIDIDX\0\0\1", 10);
    idx[17] = DS_DTYPE_INT32;
    idx[18] = 3;
    idx[26] = 2;
    for (int i = 0; i < 3; i++) {
        uint64_t size = i < 2 ? big : 1, ptr = (uint64_t)i * big * 4;

        for (int k = 0; k < 4; k++)
            idx[34 + 4 * i + k] = (unsigned char)(size >> (8 * k));
        for (int k = 0; k < 8; k++)
            idx[46 + 8 * i + k] = (unsigned char)(ptr >> (8 * k));
    }
    idx[70 + 8] = 3; /* doc_idx = [0, 3] */
    write_file(path_of(dir, "l.idx"), idx, sizeof(idx));
    f = fopen(path_of(dir, "l.bin"), "wb");
    if (f == NULL || fseeko(f, (off_t)(n_tok * 4 - 4), SEEK_SET) != 0 ||
        fwrite(last, 1, 4, f) != 4 || fclose(f) != 0)
        SKIP("no sparse 16 GiB file here");
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "l"), &e), 0);
    if (d == NULL) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    CHECK_EQ_INT(ds_dataset_n_tokens(d), n_tok);
    CHECK_EQ_INT(ds_sentence_len(d, 1), big);
    CHECK_EQ_INT(ds_sentence_start(d, 1), big);
    CHECK_EQ_INT(ds_sentence_start(d, 2), 2 * big);
    CHECK_EQ_INT(ds_read_tokens(d, n_tok - 2, 2, t, &e), 0);
    CHECK_EQ_INT(t[0], 0);
    CHECK_EQ_INT(t[1], 42);
    CHECK_EQ_INT(ds_read_tokens(d, n_tok - 1, 2, t, &e), DS_ERANGE);
    CHECK_MSG(e, "tokens 4294967294..4294967296 are past the end "
                 "(4294967295 tokens)");
    ds_close(d);
    unlink(path_of(dir, "l.bin"));
}

/* ------------------------------------------------- corrupt npy datasets */

/* Write an .npy whose header dict is `dict` (padded to 128 bytes) and
 * ndata bytes of data. */
static void
write_npy_dict(const char *path, const char *dict, size_t ndata)
{
    unsigned char b[256];
    size_t dl = strlen(dict);

    memcpy(b, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(b + 10, ' ', 118);
    memcpy(b + 10, dict, dl < 117 ? dl : 117);
    b[127] = '\n';
    memcpy(b + 128, spec_bin, 12);
    write_file(path, b, 128 + ndata);
}

/* A zip with the given members (name, data, len), stored. */
static void
write_zip(const char *path, const char *const *names,
          const unsigned char *const *data, const size_t *lens, int n)
{
    zip_t *za;
    int zerr;

    unlink(path);
    za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (za == NULL) {
        fprintf(stderr, "zip_open %s failed\n", path);
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        zip_source_t *s = zip_source_buffer(za, data[i], lens[i], 0);

        if (s == NULL || zip_file_add(za, names[i], s, 0) < 0) {
            fprintf(stderr, "zip_file_add failed\n");
            exit(1);
        }
    }
    if (zip_close(za) < 0) {
        fprintf(stderr, "zip_close failed\n");
        exit(1);
    }
}

/* An NPY (header + little-endian data) of n elements of dtype t. */
static unsigned char *
npy_blob(const char *descr, unsigned width, const int64_t *v, size_t n,
         size_t *len)
{
    unsigned char *b = malloc(128 + n * width);
    char dict[128];

    snprintf(dict, sizeof(dict),
             "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }",
             descr, n);
    memcpy(b, "\x93NUMPY\x01\x00\x76\x00", 10);
    memset(b + 10, ' ', 118);
    memcpy(b + 10, dict, strlen(dict));
    b[127] = '\n';
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < width; k++)
            b[128 + i * width + k] = (unsigned char)((uint64_t)v[i] >> (8 * k));
    *len = 128 + n * width;
    return b;
}

static void
write_npz(const char *path, const char *lens_descr, unsigned lens_w,
          const int64_t *lens, size_t n_lens, const int64_t *docs,
          size_t n_docs, bool with_docs)
{
    const char *names[2] = { "lens.npy", "docs.npy" };
    const unsigned char *data[2];
    size_t len[2];
    unsigned char *a, *b;

    a = npy_blob(lens_descr, lens_w, lens, n_lens, &len[0]);
    b = npy_blob("<i8", 8, docs, n_docs, &len[1]);
    data[0] = a;
    data[1] = b;
    write_zip(path, names, data, len, with_docs ? 2 : 1);
    free(a);
    free(b);
}

static void
test_open_npy_corrupt(void)
{
    const char *dir = test_dir("bad_npy");
    char x[4400], ids[4400], npz[4400];
    static const int64_t lens[] = { 3, 1, 2 }, docs[] = { 0, 2, 3 },
                         bad_lens[] = { 3, 1, 1 }, neg_lens[] = { 3, -1, 4 },
                         bad_docs[] = { 0, 2, 2 };
    static const char good[] =
        "{'descr': '<u2', 'fortran_order': False, 'shape': (6,), }";
    struct ds_dataset *d = NULL;
    struct ds_err e;
    unsigned char junk[200];

    snprintf(x, sizeof(x), "%s/x", dir);
    snprintf(ids, sizeof(ids), "%s/x_ids.npy", dir);
    snprintf(npz, sizeof(npz), "%s/x_idx.npz", dir);
    write_npy_dict(ids, good, 12);
    write_npz(npz, "<i4", 4, lens, 3, docs, 3, true);
    CHECK_EQ_INT(ds_open(&d, x, &e), 0);
    if (d != NULL) {
        CHECK_EQ_INT(ds_dataset_n_documents(d), 2);
        CHECK_EQ_INT(ds_sentence_start(d, 2), 4);
    }
    ds_close(d);

    /* Older numpy: keys in another order, 16-byte padding is fine too, a
     * Python 2 long, spaces, no trailing comma. */
    write_npy_dict(ids,
                   "{'fortran_order': False, 'shape': (6L,), "
                   "'descr': '<u2'}",
                   12);
    CHECK_EQ_INT(ds_open(&d, x, &e), 0);
    ds_close(d);
    write_npy_dict(ids,
                   "{\"descr\": \"<u2\", \"fortran_order\": False, "
                   "\"shape\": ( 6 , ) }",
                   12);
    CHECK_EQ_INT(ds_open(&d, x, &e), 0);
    ds_close(d);

    /* The ids file. */
    write_npy_dict(ids, good, 10);
    CHECK_OPEN_FAILS(x, DS_EFORMAT,
                     "x_ids.npy': shape (6,) of uint16 needs 12 bytes after "
                     "the 128-byte header, the file has 10");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': False, "
                   "'shape': (3, 2), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "shape (3, 2) is not 1-D");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': False, "
                   "'shape': (6), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "shape (6) is not 1-D");
    write_npy_dict(ids,
                   "{'descr': '>u2', 'fortran_order': False, "
                   "'shape': (6,), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "descr '>u2' is not supported");
    write_npy_dict(ids,
                   "{'descr': '<f4', 'fortran_order': False, "
                   "'shape': (3,), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "dtype float32 is not an integer type");
    write_npy_dict(ids, "{'descr': '<u2', 'shape': (6,), }", 12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "header lacks 'fortran_order'");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': No, "
                   "'shape': (6,), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "'fortran_order' is not True or False");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': False, "
                   "'shape': (6,), 'x': 1}",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "NPY header at byte 66: unexpected key");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': False, "
                   "'shape': (6,), } x",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "junk after the header dict");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': False, "
                   "'shape': (-6,), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "expected a non-negative integer");
    write_npy_dict(ids,
                   "{'descr': '<u2', 'fortran_order': False, "
                   "'shape': (99999999999999999999,), }",
                   12);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "does not fit int64");
    memset(junk, 'x', sizeof(junk));
    write_file(ids, junk, sizeof(junk));
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "x_ids.npy': not an NPY file");
    memcpy(junk, "\x93NUMPY\x04\x00", 8);
    write_file(ids, junk, sizeof(junk));
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "NPY version 4.0 at byte 6");
    memcpy(junk, "\x93NUMPY\x01\x00\xff\x00", 10);
    write_file(ids, junk, sizeof(junk));
    CHECK_OPEN_FAILS(x, DS_EFORMAT,
                     "NPY header length 255 at byte 8 passes "
                     "the end of the file (200 bytes)");
    write_npy_dict(ids, good, 12);

    /* The npz. */
    write_npz(npz, "<i4", 4, lens, 3, docs, 3, false);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "x_idx.npz': no member 'docs.npy'");
    write_npz(npz, "<i8", 8, lens, 3, docs, 3, true);
    CHECK_OPEN_FAILS(x, DS_EFORMAT,
                     "x_idx.npz:lens.npy': dtype int64, expected int32");
    write_npz(npz, "<i4", 4, bad_lens, 3, docs, 3, true);
    CHECK_OPEN_FAILS(x, DS_EFORMAT,
                     "x_idx.npz': lens add up to 5 tokens, but '");
    write_npz(npz, "<i4", 4, neg_lens, 3, docs, 3, true);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "lens[1] = -1 is negative");
    write_npz(npz, "<i4", 4, lens, 3, bad_docs, 3, true);
    CHECK_OPEN_FAILS(x, DS_EFORMAT,
                     "docs[2] = 2, the last entry, should be "
                     "the number of sentences, 3");
    write_npz(npz, "<i4", 4, lens, 3, docs, 0, true);
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "docs is empty");
    write_file(npz, junk, sizeof(junk));
    CHECK_OPEN_FAILS(x, DS_EFORMAT, "x_idx.npz': not a readable zip");
    /* A truncated real npz. */
    CHECK_EQ_INT(write_10a(x, DS_FORMAT_NPY, DS_DTYPE_UINT16), 0);
    {
        size_t len;
        unsigned char *z = read_file(npz, &len);

        if (z != NULL && len > 40) {
            write_file(npz, z, len - 30);
            CHECK_OPEN_FAILS(x, DS_EFORMAT, "not a readable zip");
        }
        free(z);
    }
}

/* Deflated members are read too. */
static void
test_npz_deflated(void)
{
    const char *dir = test_dir("deflate");
    static const int64_t lens[] = { 3, 1, 2 }, docs[] = { 0, 2, 3 };
    const char *names[2] = { "lens.npy", "docs.npy" };
    const unsigned char *data[2];
    size_t len[2];
    unsigned char *a, *b;
    struct ds_dataset *d = NULL;
    struct ds_err e;
    zip_t *za;
    int zerr;

    CHECK_EQ_INT(write_10a(path_of(dir, "x"), DS_FORMAT_NPY, DS_DTYPE_UINT16),
                 0);
    a = npy_blob("<i4", 4, lens, 3, &len[0]);
    b = npy_blob("<i8", 8, docs, 3, &len[1]);
    data[0] = a;
    data[1] = b;
    unlink(path_of(dir, "x_idx.npz"));
    za = zip_open(path_of(dir, "x_idx.npz"), ZIP_CREATE, &zerr);
    for (int i = 0; za != NULL && i < 2; i++) {
        zip_source_t *s = zip_source_buffer(za, data[i], len[i], 0);
        zip_int64_t k = zip_file_add(za, names[i], s, 0);

        CHECK(k >= 0);
        CHECK_EQ_INT(
            zip_set_file_compression(za, (zip_uint64_t)k, ZIP_CM_DEFLATE, 9),
            0);
    }
    CHECK(za != NULL && zip_close(za) == 0);
    free(a);
    free(b);
    CHECK_EQ_INT(ds_open(&d, path_of(dir, "x"), &e), 0);
    if (d != NULL)
        CHECK_EQ_INT(ds_document_first(d, 1), 2);
    else
        fprintf(stderr, "%s\n", e.msg);
    ds_close(d);
}

TESTS(test_ds, TEST(test_version_strerror_dtypes), TEST(test_output_names),
      TEST(test_spec_10a_mmap_bytes), TEST(test_spec_10a_npy_bytes),
      TEST(test_npz_from_numpy_is_read), TEST(test_roundtrip_mmap_uint16),
      TEST(test_roundtrip_mmap_int32), TEST(test_roundtrip_npy_uint16),
      TEST(test_roundtrip_npy_int32), TEST(test_open_prefers_npy_pair),
      TEST(test_empty_corpus_mmap), TEST(test_empty_corpus_npy),
      TEST(test_writer_rejects_bad_arguments), TEST(test_writer_uint16_range),
      TEST(test_writer_abort_leaves_nothing), TEST(test_writer_commit_replaces),
      TEST(test_open_mmap_corrupt), TEST(test_open_mmap_every_byte),
      TEST(test_read_tokens_wide_dtypes), TEST(test_open_large_offsets),
      TEST(test_open_npy_corrupt), TEST(test_npz_deflated))
