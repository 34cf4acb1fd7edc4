/* SPDX-License-Identifier: MIT */
/*
 * test_train_io.c: unit tests of the trainer's file formats.  safetensors:
 * round trips of every dtype size through st_write and st_open, the exact
 * bytes of a small file, a file as the Rust library documents it, the
 * writer's refusals, every validation of the reader on hand-made corrupt
 * files (each with its message), truncation at every length and single
 * byte changes.  config: the defaults, PaddleNLP's ERNIE 3.0 config from
 * the shared data ($DATA), GPT-2 keys, the errors, and write/read round
 * trips.  Files go to a fresh directory under $TMPDIR (default /tmp),
 * removed at the end.
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness.h"
#include "../harness_files.h"
#include "model/config.h"
#include "ckpt/safetensors.h"

/* A safetensors file at path: the 8-byte length of header (padded with
 * spaces to pad_to bytes if longer), the header, then n_data bytes
 * 0, 1, 2, ... */
static void
make_st(const char *path, const char *header, size_t pad_to, size_t n_data)
{
    size_t hlen = strlen(header) > pad_to ? strlen(header) : pad_to;
    unsigned char *buf = malloc(8 + hlen + n_data + 1);

    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memset(buf + 8, ' ', hlen);
    memcpy(buf + 8, header, strlen(header));
    for (size_t i = 0; i < n_data; i++)
        buf[8 + hlen + i] = (unsigned char)i;
    write_file(path, buf, 8 + hlen + n_data);
    free(buf);
}

/* Open path expecting failure with a message naming the file and
 * containing sub. */
#define CHECK_ST_FAILS(path, sub)                    \
    do {                                             \
        struct st_file *f_ = (struct st_file *)1;    \
        struct st_err e_;                            \
        memset(&e_, 0, sizeof(e_));                  \
        CHECK_EQ_INT(st_open(&f_, (path), &e_), -1); \
        CHECK(f_ == NULL);                           \
        CHECK_MSG(e_, (path));                       \
        CHECK_MSG(e_, (sub));                        \
        if (f_ != NULL && f_ != (struct st_file *)1) \
            st_close(f_);                            \
    } while (0)

/* A hand-made file with header h and n data bytes must fail with sub. */
#define CHECK_BAD_HEADER(dir, h, n, sub)                          \
    do {                                                          \
        make_st(path_of((dir), "bad.safetensors"), (h), 0, (n));  \
        CHECK_ST_FAILS(path_of((dir), "bad.safetensors"), (sub)); \
    } while (0)

static int
tensors_equal(const struct st_tensor *a, const struct st_tensor *b)
{
    if (strcmp(a->name, b->name) != 0 || a->dtype != b->dtype ||
        a->ndim != b->ndim || a->nbytes != b->nbytes)
        return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

/* ------------------------------------------------------- safetensors */

static void
test_st_dtypes(void)
{
    CHECK_EQ_STR(st_dtype_name(ST_F32), "F32");
    CHECK_EQ_STR(st_dtype_name(ST_BF16), "BF16");
    CHECK_EQ_STR(st_dtype_name(ST_BOOL), "BOOL");
    CHECK_EQ_STR(st_dtype_name(ST_F8_E4M3), "F8_E4M3");
    CHECK_EQ_INT(st_dtype_bits(ST_F32), 32);
    CHECK_EQ_INT(st_dtype_bits(ST_F16), 16);
    CHECK_EQ_INT(st_dtype_bits(ST_I64), 64);
    CHECK_EQ_INT(st_dtype_bits(ST_C64), 64);
    CHECK_EQ_INT(st_dtype_bits(ST_U8), 8);
    CHECK_EQ_INT(st_dtype_bits(ST_F4), 4);
    CHECK_EQ_INT(st_dtype_bits(ST_F6_E3M2), 6);
    CHECK(st_dtype_name(ST_N_DTYPES) == NULL);
    CHECK_EQ_INT(st_dtype_bits((enum st_dtype) - 1), 0);
    for (int t = 0; t < ST_N_DTYPES; t++)
        CHECK(st_dtype_name((enum st_dtype)t) != NULL &&
              st_dtype_bits((enum st_dtype)t) > 0);
}

/* The exact bytes st_write produces for two tensors and metadata. */
static void
test_st_exact_bytes(void)
{
    const char *dir = test_dir("st_exact");
    static const float w[6] = { 1, 2, 3, 4, 5, 6 };
    static const int64_t ids[2] = { 7, -1 };
    static const char *const meta[] = { "format", "pt", NULL };
    static const char want_hdr[] =
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
        "\"ids\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[24,40]}}";
    struct st_tensor t[2] = {
        { "w", ST_F32, 2, { 2, 3 }, w, sizeof(w) },
        { "ids", ST_I64, 1, { 2 }, ids, sizeof(ids) },
    };
    struct st_err e;
    unsigned char *buf;
    size_t len, hlen = (sizeof(want_hdr) - 1 + 7) / 8 * 8;
    int n_tmp;

    CHECK_EQ_INT(st_write(path_of(dir, "a.safetensors"), t, 2, meta, &e), 0);
    buf = read_file(path_of(dir, "a.safetensors"), &len);
    CHECK(buf != NULL);
    if (buf == NULL)
        return;
    CHECK_EQ_INT(len, 8 + hlen + 40);
    CHECK_EQ_INT(hlen % 8, 0);
    CHECK_EQ_INT(buf[0], hlen);
    CHECK_EQ_INT(buf[1] | buf[2] | buf[3] | buf[4] | buf[5] | buf[6] | buf[7],
                 0);
    if (len == 8 + hlen + 40) {
        CHECK_EQ_MEM(buf + 8, want_hdr, sizeof(want_hdr) - 1);
        for (size_t i = 8 + sizeof(want_hdr) - 1; i < 8 + hlen; i++)
            CHECK_EQ_INT(buf[i], ' ');
        CHECK_EQ_MEM(buf + 8 + hlen, w, sizeof(w));
        CHECK_EQ_MEM(buf + 8 + hlen + 24, ids, sizeof(ids));
    }
    free(buf);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 1);
    CHECK_EQ_INT(n_tmp, 0);
}

/* Write tensors of every dtype size, scalars, empty tensors, odd sizes;
 * read them back. */
static void
test_st_roundtrip(void)
{
    const char *dir = test_dir("st_roundtrip");
    const char *path = path_of(dir, "m.safetensors");
    static const char *const meta[] = {
        "format", "pt",   "step",           "1200", "empty",
        "",       "note", "a\"b\\c\n\x01é", NULL
    };
    float f32[12];
    uint16_t bf16[5];
    double f64[3] = { 1.5, -2.25, 1e300 };
    uint8_t u8[7] = { 1, 2, 3, 4, 5, 6, 7 };
    int32_t scalar = -5;
    uint8_t f4[3] = { 0x12, 0x34, 0x56 };
    struct st_tensor t[] = {
        { "bert.embeddings.word_embeddings.weight",
          ST_F32,
          2,
          { 3, 4 },
          f32,
          sizeof(f32) },
        { "half", ST_BF16, 1, { 5 }, bf16, sizeof(bf16) },
        { "empty", ST_F32, 2, { 0, 7 }, NULL, 0 },
        { "doubles", ST_F64, 3, { 1, 3, 1 }, f64, sizeof(f64) },
        { "bytes", ST_U8, 1, { 7 }, u8, sizeof(u8) },
        { "scalar", ST_I32, 0, { 0 }, &scalar, sizeof(scalar) },
        { "nibbles", ST_F4, 2, { 2, 3 }, f4, sizeof(f4) },
        { "name \"with\" \\ escapes\t and ünïcödé 😀", ST_U8, 1, { 0 }, u8, 0 },
    };
    size_t n = sizeof(t) / sizeof(t[0]);
    struct st_file *f = NULL;
    struct st_err e;
    int n_tmp;

    for (int i = 0; i < 12; i++)
        f32[i] = (float)i * 0.5f - 1;
    for (int i = 0; i < 5; i++)
        bf16[i] = (uint16_t)(0x3f80 + i);
    CHECK_EQ_INT(st_write(path, t, n, meta, &e), 0);
    CHECK_EQ_INT(st_open(&f, path, &e), 0);
    if (f == NULL) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    CHECK_EQ_INT(st_count(f), n);
    for (size_t i = 0; i < n && i < st_count(f); i++) {
        const struct st_tensor *a = st_at(f, i);
        size_t bytes = (st_dtype_bits(a->dtype) + 7) / 8;

        CHECK(tensors_equal(a, &t[i]));
        CHECK(st_find(f, t[i].name) == a);
        CHECK((uintptr_t)a->data % bytes == 0);
    }
    CHECK(st_at(f, n) == NULL);
    CHECK(st_find(f, "absent") == NULL);
    CHECK(st_find(f, "") == NULL);
    CHECK_EQ_STR(st_meta(f, "format"), "pt");
    CHECK_EQ_STR(st_meta(f, "step"), "1200");
    CHECK_EQ_STR(st_meta(f, "empty"), "");
    CHECK_EQ_STR(st_meta(f, "note"), "a\"b\\c\n\x01é");
    CHECK(st_meta(f, "absent") == NULL);
    st_close(f);
    st_close(NULL);

    /* No tensors and no metadata: "{}" and 6 spaces. */
    CHECK_EQ_INT(st_write(path, NULL, 0, NULL, &e), 0);
    CHECK_EQ_INT(st_open(&f, path, &e), 0);
    if (f != NULL) {
        CHECK_EQ_INT(st_count(f), 0);
        CHECK(st_find(f, "x") == NULL);
        CHECK(st_meta(f, "format") == NULL);
        st_close(f);
    }
    CHECK_EQ_INT(count_files(dir, &n_tmp), 1);
    CHECK_EQ_INT(n_tmp, 0);
}

/* A file as the Rust library's documentation shows it: a 60-byte header
 * (not padded to 8), keys in any order, readers must cope. */
static void
test_st_foreign_files(void)
{
    const char *dir = test_dir("st_foreign");
    static const char odd[] =
        " {\n \"b\" : { \"data_offsets\" : [ 4 , 12 ] , \"shape\" : [2],"
        " \"dtype\" : \"F32\", \"x\": [1, 2.5e3, {\"y\": null, \"z\":"
        " [true, false, \"\\u00e9\"]}] },\r\n\t\"a\\u00e9\\ud83d\\ude00\": "
        "{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
        "\"__metadata__\":{\"k\":\"v\\/w\"}}  ";
    struct st_file *f = NULL;
    struct st_err e;
    const struct st_tensor *t;

    make_st(path_of(dir, "doc.safetensors"),
            "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,"
            "16]}}",
            0, 16);
    CHECK_EQ_INT(st_open(&f, path_of(dir, "doc.safetensors"), &e), 0);
    if (f != NULL) {
        CHECK_EQ_INT(st_count(f), 1);
        t = st_find(f, "test");
        CHECK(t != NULL && t->dtype == ST_I32 && t->ndim == 2 &&
              t->shape[0] == 2 && t->shape[1] == 2 && t->nbytes == 16);
        st_close(f);
    }

    /* Offsets out of header order, white space, escapes, fields we do not
     * know (ignored), a header length that leaves F32 data unaligned (it
     * is copied), metadata last, and null metadata elsewhere. */
    /* The header's length is 1 mod 4, so b's data are not 4-aligned. */
    make_st(path_of(dir, "odd.safetensors"), odd,
            strlen(odd) + (5 - strlen(odd) % 4) % 4, 12);
    CHECK_EQ_INT(st_open(&f, path_of(dir, "odd.safetensors"), &e), 0);
    if (f != NULL) {
        static const unsigned char want_b[8] = { 4, 5, 6, 7, 8, 9, 10, 11 };

        CHECK_EQ_INT(st_count(f), 2);
        CHECK_EQ_STR(st_at(f, 0)->name, "a\xc3\xa9\xf0\x9f\x98\x80");
        CHECK_EQ_STR(st_at(f, 1)->name, "b");
        t = st_find(f, "b");
        CHECK(t != NULL && (uintptr_t)t->data % 4 == 0);
        if (t != NULL)
            CHECK_EQ_MEM(t->data, want_b, 8);
        CHECK_EQ_STR(st_meta(f, "k"), "v/w");
        st_close(f);
    }
    make_st(path_of(dir, "null.safetensors"), "{\"__metadata__\":null}", 8, 0);
    CHECK_EQ_INT(st_open(&f, path_of(dir, "null.safetensors"), &e), 0);
    if (f != NULL) {
        CHECK_EQ_INT(st_count(f), 0);
        CHECK(st_meta(f, "k") == NULL);
        st_close(f);
    }
    /* Empty tensors share offsets with their neighbours. */
    make_st(path_of(dir, "empty.safetensors"),
            "{\"z2\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
            "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
            "\"z1\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[4,4]},"
            "\"z0\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
            0, 4);
    CHECK_EQ_INT(st_open(&f, path_of(dir, "empty.safetensors"), &e), 0);
    if (f != NULL) {
        CHECK_EQ_INT(st_count(f), 4);
        CHECK_EQ_STR(st_at(f, 0)->name, "z0");
        CHECK_EQ_STR(st_at(f, 1)->name, "a");
        CHECK_EQ_STR(st_at(f, 2)->name, "z2");
        CHECK_EQ_STR(st_at(f, 3)->name, "z1");
        st_close(f);
    } else {
        fprintf(stderr, "%s\n", e.msg);
    }
}

static void
test_st_write_errors(void)
{
    const char *dir = test_dir("st_write_errors");
    const char *path = path_of(dir, "w.safetensors");
    float x[4] = { 0 };
    struct st_tensor good = { "x", ST_F32, 1, { 4 }, x, sizeof(x) };
    struct st_tensor t[2];
    static const char *const dup_meta[] = { "k", "1", "k", "2", NULL };
    static const char *const null_value[] = { "k", NULL };
    static const char *const bad_utf8_meta[] = { "k", "\xff", NULL };
    struct st_err e;
    int n_tmp;

#define CHECK_WRITE_FAILS(tt, n, meta, sub)                      \
    do {                                                         \
        memset(&e, 0, sizeof(e));                                \
        CHECK_EQ_INT(st_write(path, (tt), (n), (meta), &e), -1); \
        CHECK_MSG(e, (sub));                                     \
    } while (0)

    t[0] = good;
    t[0].name = NULL;
    CHECK_WRITE_FAILS(t, 1, NULL, "tensor 0 has no name");
    t[0] = good;
    t[0].name = "__metadata__";
    CHECK_WRITE_FAILS(t, 1, NULL, "reserves");
    t[0].name = "bad\xc3";
    CHECK_WRITE_FAILS(t, 1, NULL, "not valid UTF-8");
    t[0] = good;
    t[1] = good;
    CHECK_WRITE_FAILS(t, 2, NULL, "tensor name 'x' appears twice");
    t[1].name = "y";
    CHECK_WRITE_FAILS(t, 2, dup_meta, "metadata key 'k' appears twice");
    CHECK_WRITE_FAILS(t, 2, null_value, "metadata key 'k' has no value");
    CHECK_WRITE_FAILS(t, 2, bad_utf8_meta, "not valid UTF-8");
    t[0].nbytes = 12;
    CHECK_WRITE_FAILS(t, 2, NULL, "shape [4] of F32 is 16 bytes, nbytes is 12");
    t[0] = good;
    t[0].shape[0] = -4;
    CHECK_WRITE_FAILS(t, 1, NULL, "negative dimension");
    t[0] = good;
    t[0].ndim = 9;
    CHECK_WRITE_FAILS(t, 1, NULL, "ndim 9");
    t[0].ndim = -1;
    CHECK_WRITE_FAILS(t, 1, NULL, "ndim -1");
    t[0] = good;
    t[0].dtype = ST_N_DTYPES;
    CHECK_WRITE_FAILS(t, 1, NULL, "bad dtype");
    t[0] = good;
    t[0].data = NULL;
    CHECK_WRITE_FAILS(t, 1, NULL, "has no data");
    t[0] = good;
    t[0].ndim = 3;
    t[0].shape[0] = INT64_MAX;
    t[0].shape[1] = INT64_MAX;
    t[0].shape[2] = 2;
    CHECK_WRITE_FAILS(t, 1, NULL, "more than 2^64 elements");
    t[0] = good;
    t[0].dtype = ST_F4;
    t[0].shape[0] = 3;
    CHECK_WRITE_FAILS(t, 1, NULL, "does not fill whole bytes");
    CHECK_WRITE_FAILS(NULL, 1, NULL, "NULL");
    /* Nothing was written, not even a temporary file. */
    CHECK_EQ_INT(count_files(dir, &n_tmp), 0);

    memset(&e, 0, sizeof(e));
    CHECK_EQ_INT(
        st_write(path_of(dir, "no/such/dir/w.safetensors"), &good, 1, NULL, &e),
        -1);
    CHECK_MSG(e, "cannot create");
    CHECK_MSG(e, "no/such/dir/w.safetensors.tmp.");
    CHECK_EQ_INT(st_write(path, &good, 1, NULL, NULL), 0);
    /* Replacing a file: the old one stays until the rename. */
    good.shape[0] = 2;
    good.nbytes = 8;
    CHECK_EQ_INT(st_write(path, &good, 1, NULL, &e), 0);
    {
        struct st_file *f = NULL;

        CHECK_EQ_INT(st_open(&f, path, &e), 0);
        CHECK(f != NULL && st_count(f) == 1 && st_at(f, 0)->nbytes == 8);
        st_close(f);
    }
    CHECK_EQ_INT(count_files(dir, &n_tmp), 1);
    CHECK_EQ_INT(n_tmp, 0);
#undef CHECK_WRITE_FAILS
}

/* st_writer: the data one tensor at a time give st_write()'s bytes; a
 * tensor of the wrong size, one too many, or a close before the last is
 * refused, and an abandoned or refused file leaves nothing behind. */
static void
test_st_writer(void)
{
    const char *dir = test_dir("st_writer");
    static const char *const meta[] = { "format", "pt", NULL };
    float x[4] = { 1, -2, 3.5f, -0.0f }, y[3] = { 7, 8, 9 };
    struct st_tensor t[2] = { { "x", ST_F32, 2, { 2, 2 }, x, sizeof(x) },
                              { "y", ST_F32, 1, { 3 }, y, sizeof(y) } };
    struct st_tensor bare[2];
    struct st_writer *w;
    struct st_err e;
    unsigned char *a, *b;
    size_t la, lb;
    int n_tmp;

    memcpy(bare, t, sizeof(t));
    bare[0].data = bare[1].data = NULL; /* the header needs no data */
    CHECK_EQ_INT(st_write(path_of(dir, "all"), t, 2, meta, &e), 0);
    CHECK_EQ_INT(st_writer_open(&w, path_of(dir, "one"), bare, 2, meta, &e), 0);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 2); /* its temporary */
    CHECK_EQ_INT(n_tmp, 1);
    CHECK_EQ_INT(st_writer_put(w, x, sizeof(x), &e), 0);
    CHECK_EQ_INT(st_writer_put(w, y, sizeof(y), &e), 0);
    CHECK_EQ_INT(st_writer_close(w, &e), 0);
    a = read_file(path_of(dir, "all"), &la);
    b = read_file(path_of(dir, "one"), &lb);
    CHECK(a != NULL && b != NULL && la == lb && memcmp(a, b, la) == 0);
    free(a);
    free(b);

    CHECK_EQ_INT(st_writer_open(&w, path_of(dir, "bad"), bare, 2, NULL, &e), 0);
    CHECK_EQ_INT(st_writer_put(w, x, sizeof(x) - 4, &e), -1);
    CHECK_MSG(e, "tensor 0 of 2 given 12 bytes (its header says 16)");
    st_writer_abort(w);
    CHECK_EQ_INT(st_writer_open(&w, path_of(dir, "bad"), bare, 2, NULL, &e), 0);
    CHECK_EQ_INT(st_writer_put(w, x, sizeof(x), &e), 0);
    CHECK_EQ_INT(st_writer_close(w, &e), -1);
    CHECK_MSG(e, "1 of its 2 tensors written");
    CHECK_EQ_INT(st_writer_open(&w, path_of(dir, "bad"), bare, 1, NULL, &e), 0);
    CHECK_EQ_INT(st_writer_put(w, x, sizeof(x), &e), 0);
    CHECK_EQ_INT(st_writer_put(w, y, sizeof(y), &e), -1);
    CHECK_MSG(e, "tensor 1 of 1");
    st_writer_abort(w);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 2); /* all, one */
    CHECK_EQ_INT(n_tmp, 0);
}

static void
test_st_open_errors(void)
{
    const char *dir = test_dir("st_open_errors");
    struct st_file *f = (struct st_file *)1;
    struct st_err e;

    CHECK_EQ_INT(st_open(&f, path_of(dir, "absent"), &e), -1);
    CHECK(f == NULL);
    CHECK_MSG(e, "cannot open '");
    CHECK_MSG(e, "absent': No such file or directory");
    CHECK_ST_FAILS(dir, "is not a regular file");
    write_file(path_of(dir, "empty"), "", 0);
    CHECK_ST_FAILS(path_of(dir, "empty"), "0 bytes is too short");
    write_file(path_of(dir, "five"), "\x02\0\0\0\0", 5);
    CHECK_ST_FAILS(path_of(dir, "five"), "5 bytes is too short");
    CHECK_EQ_INT(st_open_buffer(&f, "", 0, NULL, &e), -1);
    CHECK_MSG(e, "'buffer': 0 bytes");
    CHECK_EQ_INT(st_open_buffer(&f, "", 0, "mem", NULL), -1);
}

/* Every validation of the reader, each on a hand-made file. */
static void
test_st_corrupt_headers(void)
{
    const char *dir = test_dir("st_corrupt");
    const char *path = path_of(dir, "bad.safetensors");
    unsigned char b[24] = { 0 };

    /* The header length. */
    b[5] = 1; /* 2^40 */
    write_file(path, b, 24);
    CHECK_ST_FAILS(path, "header length 1099511627776 at byte 0 is absurd");
    b[5] = 0;
    b[0] = 17;
    write_file(path, b, 24);
    CHECK_ST_FAILS(path, "header length 17 at byte 0 passes the end of the "
                         "file (24 bytes): file truncated?");
    make_st(path, "", 0, 0);
    CHECK_ST_FAILS(path, "header JSON at byte 8: the header is not a JSON "
                         "object");

    /* JSON syntax. */
    CHECK_BAD_HEADER(dir, "[]", 0, "byte 8: the header is not a JSON object");
    CHECK_BAD_HEADER(dir, "{", 0, "byte 9: expected a string, found the end");
    CHECK_BAD_HEADER(dir, "{abc}", 0, "byte 9: expected a string, found 'a'");
    CHECK_BAD_HEADER(dir, "{\"a\" 1}", 0, "byte 13: expected ':', found '1'");
    CHECK_BAD_HEADER(dir, "{\"a", 0, "byte 9: unterminated string");
    CHECK_BAD_HEADER(dir, "{} x", 0, "byte 11: text after the header's JSON");
    make_st(path, "{}", 8, 0); /* padded with NULs, not spaces */
    {
        size_t len;
        unsigned char *buf = read_file(path, &len);

        if (buf != NULL) {
            memset(buf + 10, 0, 6);
            write_file(path, buf, len);
            free(buf);
        }
        CHECK_ST_FAILS(path, "byte 10: text after the header's JSON object");
    }
    CHECK_BAD_HEADER(dir, "{\"a\xff\":1}", 0, "byte 11: invalid UTF-8");
    CHECK_BAD_HEADER(dir, "{\"a\xc0\xaf\":1}", 0, "invalid UTF-8");
    CHECK_BAD_HEADER(dir, "{\"a\xed\xa0\x80\":1}", 0, "invalid UTF-8");
    CHECK_BAD_HEADER(dir, "{\"a\tb\":1}", 0, "control character 0x09");
    CHECK_BAD_HEADER(dir, "{\"\\ud800\":1}", 0, "unpaired surrogate \\uD800");
    CHECK_BAD_HEADER(dir, "{\"\\udc00x\":1}", 0, "unpaired surrogate \\uDC00");
    CHECK_BAD_HEADER(dir, "{\"\\u12g4\":1}", 0, "bad \\u escape");
    CHECK_BAD_HEADER(dir, "{\"\\x\":1}", 0, "bad escape");
    CHECK_BAD_HEADER(dir, "{\"a\\u0000\":1}", 0, "\\u0000 in a name");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":"
                     "[0,1],\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "[[[[[[[[[[[]]]]]}}",
                     1, "nested more than 128 deep");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "[0,1],\"x\":tru}}",
                     1, "expected a JSON value, found 't'");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "[0,1],\"x\":-}}",
                     1, "bad number");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "[0,1],\"x\":1.}}",
                     1, "bad number");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "[0,1]},}",
                     1, "expected a string, found '}'");

    /* Tensor entries. */
    CHECK_BAD_HEADER(dir, "{\"a\":[]}", 0,
                     "tensor 'a': its entry is not a JSON object (byte 13)");
    CHECK_BAD_HEADER(dir, "{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                     "tensor 'a': its entry has no 'dtype'");
    CHECK_BAD_HEADER(dir, "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}",
                     1, "tensor 'a': its entry has no 'shape'");
    CHECK_BAD_HEADER(dir, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1,
                     "tensor 'a': its entry has no 'data_offsets'");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":8,\"shape\":[1],\"data_offsets\":[0,"
                     "1]}}",
                     1, "tensor 'a': 'dtype' is not a string");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":"
                     "[0,1]}}",
                     1, "tensor 'a': unknown dtype 'F31'");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":"
                     "[0,4]}}",
                     4, "unknown dtype 'f32'");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,"
                     "1]}}",
                     1, "tensor 'a': 'shape' is not an array");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets"
                     "\":[0,1]}}",
                     1, "'shape' holds something other than a number");
    CHECK_BAD_HEADER(
        dir,
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":"
        "[0,1]}}",
        1, "'shape' holds a number that is not an integer");
    CHECK_BAD_HEADER(
        dir,
        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1e0],\"data_offsets\":"
        "[0,1]}}",
        1, "not an integer");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":"
                     "[0,1]}}",
                     1, "tensor 'a': 'shape' holds a negative number");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,-0],"
                     "\"data_offsets\":[0,0]}}",
                     0, "negative number");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808]"
                     ",\"data_offsets\":[0,1]}}",
                     1, "'shape' holds a number of 2^63 or more");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999"
                     "9],\"data_offsets\":[0,1]}}",
                     1, "2^63 or more");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                     "\"data_offsets\":[0,1]}}",
                     1, "'shape' has more than 8 elements");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "[0,1,2]}}",
                     1, "'data_offsets' has 3 elements, not 2");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "[1]}}",
                     1, "'data_offsets' has 1 elements, not 2");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":"
                     "{}}}",
                     1, "'data_offsets' is not an array");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],"
                     "\"data_offsets\":[0,1]}}",
                     1, "tensor 'a': 'dtype' appears twice");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"shape\":[1],"
                     "\"data_offsets\":[0,1]}}",
                     1, "'shape' appears twice");

    /* Sizes and offsets. */
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                     "\"data_offsets\":[0,20]}}",
                     20,
                     "tensor 'a': shape [2, 3] of F32 needs 24 bytes, "
                     "data_offsets [0, 20] hold 20");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,"
                     "4611686018427387904],\"data_offsets\":[0,0]}}",
                     0, "has more than 2^64 elements");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904]"
                     ",\"data_offsets\":[0,0]}}",
                     0, "has more than 2^64 bits");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":"
                     "[0,1]}}",
                     1, "shape [3] of F4 does not fill whole bytes");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":"
                     "[2,1]}}",
                     2, "data_offsets [2, 1] begin after they end");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]}}",
                     3,
                     "tensor 'a': data_offsets [0, 4] pass the end of the "
                     "data (3 bytes after the header): file truncated?");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
                     "\"data_offsets\":[2,6]}}",
                     6,
                     "tensor 'b' (data_offsets [2, 6]) overlaps tensor 'a' "
                     "(data_offsets [0, 4])");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
                     "\"data_offsets\":[0,4]}}",
                     4, "overlaps");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[2],"
                     "\"data_offsets\":[6,8]}}",
                     8,
                     "data bytes [4, 6) before tensor 'b' belong to no "
                     "tensor");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[2,6]}}",
                     6, "data bytes [0, 2) before tensor 'a'");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]}}",
                     5,
                     "data bytes [4, 5) after the last tensor belong to no "
                     "tensor");
    CHECK_BAD_HEADER(dir, "{}", 1, "data bytes [0, 1) after the last tensor");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]},\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
                     "\"data_offsets\":[4,8]}}",
                     8, "tensor 'a' appears twice in the header");
    CHECK_BAD_HEADER(dir,
                     "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":"
                     "[0,4]},\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
                     "\"data_offsets\":[0,4]}}",
                     4, "tensor 'a' appears twice");

    /* Metadata. */
    CHECK_BAD_HEADER(dir, "{\"__metadata__\":[]}", 0,
                     "'__metadata__' is not an object");
    CHECK_BAD_HEADER(dir, "{\"__metadata__\":{\"k\":1}}", 0,
                     "metadata value of 'k' is not a string");
    CHECK_BAD_HEADER(dir, "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
                     "metadata key 'k' appears twice");
    CHECK_BAD_HEADER(dir, "{\"__metadata__\":{},\"__metadata__\":{}}", 0,
                     "'__metadata__' appears twice");
}

/* A small file cut at every length fails with a message; whole, it
 * opens. */
static void
test_st_truncated_every_byte(void)
{
    const char *dir = test_dir("st_truncated");
    const char *path = path_of(dir, "full.safetensors");
    const char *cut = path_of(dir, "cut.safetensors");
    static const float w[3] = { 1, 2, 3 };
    static const uint16_t h[2] = { 1, 2 };
    static const char *const meta[] = { "format", "pt", NULL };
    struct st_tensor t[2] = {
        { "w", ST_F32, 1, { 3 }, w, sizeof(w) },
        { "h", ST_F16, 2, { 1, 2 }, h, sizeof(h) },
    };
    struct st_file *f = NULL;
    struct st_err e;
    unsigned char *buf;
    size_t len;

    CHECK_EQ_INT(st_write(path, t, 2, meta, &e), 0);
    buf = read_file(path, &len);
    CHECK(buf != NULL && len > 16);
    if (buf == NULL)
        return;
    for (size_t n = 0; n < len; n++) {
        write_file(cut, buf, n);
        CHECK_ST_FAILS(cut, n < 8 ? "is too short" : "file truncated?");
        memset(&e, 0, sizeof(e));
        CHECK_EQ_INT(st_open_buffer(&f, buf, n, "cut", &e), -1);
        CHECK(f == NULL);
        CHECK(strncmp(e.msg, "'cut': ", 7) == 0);
        /* Cut in the header or in the data: the message says so. */
        CHECK_MSG(e, n < 8 ? "is too short" : "file truncated?");
        if (n >= len - 16)
            CHECK_MSG(e, "pass the end of the data");
        else if (n >= 8)
            CHECK_MSG(e, "header length");
    }
    write_file(cut, buf, len);
    CHECK_EQ_INT(st_open(&f, cut, &e), 0);
    st_close(f);
    free(buf);
}

/* Any single byte changed: the reader fails cleanly or opens a file whose
 * tensors still lie inside the buffer. */
static void
test_st_every_byte_changed(void)
{
    const char *dir = test_dir("st_bytes");
    const char *path = path_of(dir, "full.safetensors");
    static const float w[3] = { 1, 2, 3 };
    static const uint8_t u[5] = { 1, 2, 3, 4, 5 };
    static const char *const meta[] = { "k", "v", NULL };
    struct st_tensor t[2] = {
        { "w", ST_F32, 1, { 3 }, w, sizeof(w) },
        { "u8", ST_U8, 2, { 5, 1 }, u, sizeof(u) },
    };
    static const unsigned char repl[] = { 0,   ' ', '"',  '\\', '0', '9',
                                          '-', '[', ']',  '{',  '}', ',',
                                          ':', 'e', 0x80, 0xff };
    struct st_file *f = NULL;
    struct st_err e;
    unsigned char *buf;
    size_t len;
    int n_ok = 0;

    CHECK_EQ_INT(st_write(path, t, 2, meta, &e), 0);
    buf = read_file(path, &len);
    if (buf == NULL)
        return;
    for (size_t i = 0; i < len; i++) {
        unsigned char old = buf[i];

        for (size_t k = 0; k < sizeof(repl); k++) {
            buf[i] = repl[k];
            e.msg[0] = '\0';
            if (st_open_buffer(&f, buf, len, "x", &e) < 0) {
                CHECK(f == NULL);
                CHECK(strncmp(e.msg, "'x': ", 5) == 0);
                continue;
            }
            n_ok++;
            for (size_t j = 0; j < st_count(f); j++) {
                const struct st_tensor *a = st_at(f, j);
                const unsigned char *d = (const unsigned char *)a->data;

                CHECK(a->nbytes <= len);
                if (d >= buf && d < buf + len)
                    CHECK(a->nbytes <= (size_t)(buf + len - d));
                CHECK(st_find(f, a->name) == a);
            }
            st_close(f);
        }
        buf[i] = old;
    }
    /* The data bytes and several header bytes may change freely. */
    CHECK(n_ok > 0);
    free(buf);
}

/* ------------------------------------------------------------ config */

static void
test_config_defaults(void)
{
    struct model_config c;
    struct config_err e;

    config_defaults(&c, MODEL_ERNIE);
    CHECK_EQ_INT(c.type, MODEL_ERNIE);
    CHECK_EQ_INT(c.vocab_size, 30522);
    CHECK_EQ_INT(c.hidden_size, 768);
    CHECK_EQ_INT(c.num_layers, 12);
    CHECK_EQ_INT(c.num_heads, 12);
    CHECK_EQ_INT(c.intermediate_size, 3072);
    CHECK_EQ_INT(c.max_position, 512);
    CHECK_EQ_INT(c.hidden_act, OPS_ACT_GELU);
    CHECK(c.hidden_dropout == 0.1f && c.attention_dropout == 0.1f &&
          c.embedding_dropout == 0.1f);
    CHECK(c.initializer_range == 0.02f);
    CHECK(c.layer_norm_eps == 1e-12f);
    CHECK_EQ_INT(c.type_vocab_size, 2);
    CHECK_EQ_INT(c.task_type_vocab_size, 3);
    CHECK_EQ_INT(c.use_task_id, 1);
    CHECK_EQ_INT(c.task_id, 0);
    CHECK_EQ_INT(c.pad_token_id, 0);
    CHECK_EQ_INT(c.binary_head, 1);
    CHECK_EQ_INT(config_check(&c, &e), 0);

    config_defaults(&c, MODEL_GPT);
    CHECK_EQ_INT(c.type, MODEL_GPT);
    CHECK_EQ_INT(c.vocab_size, 50257);
    CHECK_EQ_INT(c.hidden_size, 768);
    CHECK_EQ_INT(c.num_layers, 12);
    CHECK_EQ_INT(c.num_heads, 12);
    CHECK_EQ_INT(c.intermediate_size, 3072);
    CHECK_EQ_INT(c.max_position, 1024);
    CHECK_EQ_INT(c.hidden_act, OPS_ACT_GELU_TANH);
    CHECK(c.hidden_dropout == 0.1f && c.attention_dropout == 0.1f &&
          c.embedding_dropout == 0.1f);
    CHECK(c.initializer_range == 0.02f);
    CHECK(c.layer_norm_eps == 1e-5f);
    CHECK_EQ_INT(config_check(&c, &e), 0);
}

static const char *
data_path(const char *rel)
{
    static char path[1024];
    const char *data = getenv("DATA");

    if (data == NULL || *data == '\0')
        data = "../shared/data";
    snprintf(path, sizeof(path), "%s/%s", data, rel);
    return path;
}

/* PaddleNLP's ERNIE 3.0 base config: sent_type_vocab_size, no
 * intermediate_size (ErnieConfig's 3072 stays), trailing white space. */
static void
test_config_ernie_paddle(void)
{
    const char *path = data_path("vocab/ernie-3.0-base-zh.config.json");
    struct model_config c;
    struct config_err e;

    if (access(path, R_OK) != 0)
        SKIP("shared data not found (set DATA=)");
    config_defaults(&c, MODEL_ERNIE);
    CHECK_EQ_INT(config_read_json(&c, path, &e), 0);
    CHECK_EQ_INT(c.vocab_size, 40000);
    CHECK_EQ_INT(c.hidden_size, 768);
    CHECK_EQ_INT(c.num_layers, 12);
    CHECK_EQ_INT(c.num_heads, 12);
    CHECK_EQ_INT(c.intermediate_size, 3072);
    CHECK_EQ_INT(c.max_position, 2048);
    CHECK_EQ_INT(c.hidden_act, OPS_ACT_GELU);
    CHECK_EQ_INT(c.type_vocab_size, 4);
    CHECK_EQ_INT(c.task_type_vocab_size, 3);
    CHECK_EQ_INT(c.use_task_id, 1);
    CHECK(c.hidden_dropout == 0.1f && c.attention_dropout == 0.1f &&
          c.embedding_dropout == 0.1f);
    CHECK(c.initializer_range == 0.02f);
    CHECK(c.layer_norm_eps == 1e-12f);
    CHECK_EQ_INT(c.pad_token_id, 0);
    CHECK_EQ_INT(config_check(&c, &e), 0);
}

static void
write_text(const char *path, const char *text)
{
    write_file(path, text, strlen(text));
}

/* GPT-2 keys, as in Hugging Face's gpt2-medium config.json. */
static void
test_config_gpt_keys(void)
{
    const char *dir = test_dir("config_gpt");
    const char *path = path_of(dir, "config.json");
    struct model_config c;
    struct config_err e;

    write_text(path, "{\n  \"activation_function\": \"gelu_new\",\n"
                     "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
                     "  \"attn_pdrop\": 0.2,\n  \"bos_token_id\": 50256,\n"
                     "  \"embd_pdrop\": 0.05,\n  \"eos_token_id\": 50256,\n"
                     "  \"initializer_range\": 0.01,\n"
                     "  \"layer_norm_epsilon\": 1e-05,\n"
                     "  \"model_type\": \"gpt2\",\n  \"n_ctx\": 1024,\n"
                     "  \"n_embd\": 1024,\n  \"n_head\": 16,\n"
                     "  \"n_inner\": null,\n  \"n_layer\": 24,\n"
                     "  \"n_positions\": 2048,\n  \"resid_pdrop\": 0.15,\n"
                     "  \"pad_token_id\": null,\n"
                     "  \"task_specific_params\": {\"text-generation\": "
                     "{\"do_sample\": true, \"max_length\": 50}},\n"
                     "  \"vocab_size\": 50257\n}\n");
    config_defaults(&c, MODEL_GPT);
    CHECK_EQ_INT(config_read_json(&c, path, &e), 0);
    CHECK_EQ_INT(c.vocab_size, 50257);
    CHECK_EQ_INT(c.hidden_size, 1024);
    CHECK_EQ_INT(c.num_layers, 24);
    CHECK_EQ_INT(c.num_heads, 16);
    CHECK_EQ_INT(c.intermediate_size, 4096);
    CHECK_EQ_INT(c.max_position, 2048);
    CHECK_EQ_INT(c.hidden_act, OPS_ACT_GELU_TANH);
    CHECK(c.hidden_dropout == 0.15f);
    CHECK(c.attention_dropout == 0.2f);
    CHECK(c.embedding_dropout == 0.05f);
    CHECK(c.initializer_range == 0.01f);
    CHECK(c.layer_norm_eps == 1e-5f);
    CHECK_EQ_INT(config_check(&c, &e), 0);

    /* No n_inner: GPT2Config's None, 4 * n_embd; an explicit one stays;
     * "gelu_pytorch_tanh" is gelu_new; hidden_size is n_embd's alias. */
    write_text(path, "{\"n_embd\": 256, \"n_head\": 4, \"activation_function\":"
                     " \"gelu_pytorch_tanh\"}");
    config_defaults(&c, MODEL_GPT);
    CHECK_EQ_INT(config_read_json(&c, path, &e), 0);
    CHECK_EQ_INT(c.hidden_size, 256);
    CHECK_EQ_INT(c.intermediate_size, 1024);
    CHECK_EQ_INT(c.hidden_act, OPS_ACT_GELU_TANH);
    write_text(path, "{\"hidden_size\": 256, \"n_embd\": 256, \"n_inner\": 500,"
                     " \"activation_function\": \"relu\"}");
    config_defaults(&c, MODEL_GPT);
    CHECK_EQ_INT(config_read_json(&c, path, &e), 0);
    CHECK_EQ_INT(c.hidden_size, 256);
    CHECK_EQ_INT(c.intermediate_size, 500);
    CHECK_EQ_INT(c.hidden_act, OPS_ACT_RELU);

    /* Hugging Face's ERNIE keys, integral floats, use_task_id as 0/1. */
    write_text(path, "{\"model_type\": \"ernie\", \"type_vocab_size\": 2,"
                     " \"intermediate_size\": 0, \"hidden_size\": 64.0,"
                     " \"num_attention_heads\": 4, \"use_task_id\": 0,"
                     " \"layer_norm_eps\": 1e-5, \"pad_token_id\": 1,"
                     " \"hidden_dropout_prob\": 0, \"task_id\": 2}");
    config_defaults(&c, MODEL_ERNIE);
    CHECK_EQ_INT(config_read_json(&c, path, &e), 0);
    CHECK_EQ_INT(c.hidden_size, 64);
    CHECK_EQ_INT(c.intermediate_size, 256);
    CHECK_EQ_INT(c.use_task_id, 0);
    CHECK_EQ_INT(c.task_id, 2);
    CHECK_EQ_INT(c.pad_token_id, 1);
    CHECK(c.layer_norm_eps == 1e-5f);
    CHECK(c.hidden_dropout == 0 && c.embedding_dropout == 0);
}

static void
test_config_errors(void)
{
    const char *dir = test_dir("config_errors");
    const char *path = path_of(dir, "config.json");
    struct model_config c, before;
    struct config_err e;

#define CHECK_CONFIG_FAILS(type, text, sub)               \
    do {                                                  \
        write_text(path, (text));                         \
        config_defaults(&c, (type));                      \
        before = c;                                       \
        memset(&e, 0, sizeof(e));                         \
        CHECK_EQ_INT(config_read_json(&c, path, &e), -1); \
        CHECK_MSG(e, path);                               \
        CHECK_MSG(e, (sub));                              \
        CHECK_EQ_MEM(&c, &before, sizeof(c));             \
    } while (0)

    CHECK_CONFIG_FAILS(MODEL_ERNIE, "", "not valid JSON at byte 0");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"vocab_size\": 5", "not valid JSON");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"vocab_size\": 5,}", "not valid JSON");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{} {}", "text after the object");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "[1]", "the JSON is array, not an object");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_size\": \"768\"}",
                       "'hidden_size' must be an integer, not string");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_size\": true}",
                       "'hidden_size' must be an integer, not boolean");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_size\": null}",
                       "'hidden_size' is null");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_size\": 768.5}",
                       "'hidden_size' is 768.5, not an integer");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_size\": 0}",
                       "'hidden_size' is 0, out of range [1, 2147483647]");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"num_hidden_layers\": 3000000000}",
                       "'num_hidden_layers' is 3000000000, out of range");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"vocab_size\": 1e20}",
                       "'vocab_size' is 1e+20, out of range");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"vocab_size\": -3}",
                       "'vocab_size' is -3, out of range");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"sent_type_vocab_size\": 0}",
                       "'sent_type_vocab_size' is 0, out of range");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"use_task_id\": 2}",
                       "'use_task_id' is 2, out of range [0, 1]");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"use_task_id\": \"yes\"}",
                       "'use_task_id' must be an integer, not string");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_dropout_prob\": 1.0}",
                       "'hidden_dropout_prob' is 1, must be in [0, 1)");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"attention_probs_dropout_prob\": -0.1}",
                       "must be in [0, 1)");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_dropout_prob\": \"0.1\"}",
                       "'hidden_dropout_prob' must be a number, not string");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"layer_norm_eps\": 0}",
                       "'layer_norm_eps' is 0, must be in (0, 1)");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"layer_norm_eps\": 1e-50}",
                       "'layer_norm_eps' is 1e-50, must be in (0, 1)");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"initializer_range\": -1}",
                       "must be at least 0");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_act\": \"swish\"}",
                       "'hidden_act' is 'swish', an unknown activation");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"hidden_act\": 1}",
                       "'hidden_act' must be a string, not int");
    CHECK_CONFIG_FAILS(MODEL_GPT, "{\"activation_function\": \"gelu_fast\"}",
                       "'activation_function' is 'gelu_fast', an unknown");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"model_type\": \"gpt2\"}",
                       "'model_type' is 'gpt2', not an ERNIE model");
    CHECK_CONFIG_FAILS(MODEL_GPT, "{\"model_type\": \"ernie\"}",
                       "'model_type' is 'ernie', not a GPT model");
    CHECK_CONFIG_FAILS(MODEL_GPT, "{\"model_type\": 2}",
                       "'model_type' must be a string");
    CHECK_CONFIG_FAILS(MODEL_GPT, "{\"hidden_size\": 768, \"n_embd\": 1024}",
                       "'hidden_size' and 'n_embd' disagree");
    CHECK_CONFIG_FAILS(MODEL_GPT, "{\"n_embd\": 600000000}",
                       "4 * hidden size 600000000 is too large");
    CHECK_CONFIG_FAILS(MODEL_ERNIE, "{\"vocab_size\": 100, \"x\": \"\xff\"}",
                       "not valid JSON");

    memset(&e, 0, sizeof(e));
    CHECK_EQ_INT(config_read_json(&c, path_of(dir, "absent.json"), &e), -1);
    CHECK_MSG(e, "cannot open '");
    CHECK_MSG(e, "absent.json': No such file or directory");
#undef CHECK_CONFIG_FAILS
}

static void
test_config_check(void)
{
    struct model_config c;
    struct config_err e;

#define CHECK_BAD(type, stmt, sub)              \
    do {                                        \
        config_defaults(&c, (type));            \
        stmt;                                   \
        memset(&e, 0, sizeof(e));               \
        CHECK_EQ_INT(config_check(&c, &e), -1); \
        CHECK_MSG(e, (sub));                    \
    } while (0)

    CHECK_BAD(MODEL_ERNIE, c.hidden_size = 770,
              "hidden_size 770 is not divisible by num_heads 12");
    CHECK_BAD(MODEL_GPT, c.num_heads = 0, "num_heads 0");
    CHECK_BAD(MODEL_GPT, c.vocab_size = -1, "vocab_size -1");
    CHECK_BAD(MODEL_GPT, c.intermediate_size = 0,
              "intermediate_size 0 must be positive");
    CHECK_BAD(MODEL_ERNIE, c.hidden_dropout = 1, "dropouts must be in [0, 1)");
    CHECK_BAD(MODEL_ERNIE, c.attention_dropout = NAN, "dropouts");
    CHECK_BAD(MODEL_ERNIE, c.layer_norm_eps = 0, "layer_norm_eps 0");
    CHECK_BAD(MODEL_ERNIE, c.initializer_range = -1, "initializer_range -1");
    CHECK_BAD(MODEL_ERNIE, c.hidden_act = OPS_ACT_TANH, "hidden_act");
    CHECK_BAD(MODEL_ERNIE, c.type_vocab_size = 1, "type_vocab_size 1");
    CHECK_BAD(MODEL_ERNIE, c.pad_token_id = 30522,
              "pad_token_id 30522 is not in [0, vocab_size 30522)");
    CHECK_BAD(MODEL_ERNIE, c.task_id = 3,
              "task_id 3 is not in [0, task_type_vocab_size 3)");
    CHECK_BAD(MODEL_ERNIE, c.binary_head = 2, "binary_head 2");
    CHECK_BAD(MODEL_ERNIE, c.type = (enum model_type)7, "model type 7");
    /* GPT ignores the ERNIE-only fields. */
    config_defaults(&c, MODEL_GPT);
    c.type_vocab_size = 0;
    c.pad_token_id = -1;
    CHECK_EQ_INT(config_check(&c, &e), 0);
    config_defaults(&c, MODEL_ERNIE);
    c.use_task_id = 0;
    c.task_id = 9;
    CHECK_EQ_INT(config_check(&c, &e), 0);
#undef CHECK_BAD
}

static void
check_configs_equal(const struct model_config *a, const struct model_config *b)
{
    CHECK_EQ_INT(a->type, b->type);
    CHECK_EQ_INT(a->vocab_size, b->vocab_size);
    CHECK_EQ_INT(a->hidden_size, b->hidden_size);
    CHECK_EQ_INT(a->num_layers, b->num_layers);
    CHECK_EQ_INT(a->num_heads, b->num_heads);
    CHECK_EQ_INT(a->intermediate_size, b->intermediate_size);
    CHECK_EQ_INT(a->max_position, b->max_position);
    CHECK_EQ_INT(a->hidden_act, b->hidden_act);
    CHECK(a->hidden_dropout == b->hidden_dropout);
    CHECK(a->attention_dropout == b->attention_dropout);
    CHECK(a->embedding_dropout == b->embedding_dropout);
    CHECK(a->initializer_range == b->initializer_range);
    CHECK(a->layer_norm_eps == b->layer_norm_eps);
    if (a->type == MODEL_GPT)
        return;
    CHECK_EQ_INT(a->type_vocab_size, b->type_vocab_size);
    CHECK_EQ_INT(a->task_type_vocab_size, b->task_type_vocab_size);
    CHECK_EQ_INT(a->use_task_id, b->use_task_id);
    CHECK_EQ_INT(a->task_id, b->task_id);
    CHECK_EQ_INT(a->pad_token_id, b->pad_token_id);
}

static void
test_config_roundtrip(void)
{
    const char *dir = test_dir("config_roundtrip");
    const char *path = path_of(dir, "config.json");
    struct model_config a, b;
    struct config_err e;
    unsigned char *text;
    size_t len;
    int n_tmp;

    /* ERNIE, odd values: every float must come back bit for bit. */
    config_defaults(&a, MODEL_ERNIE);
    a.vocab_size = 40000;
    a.hidden_size = 96;
    a.num_layers = 3;
    a.num_heads = 6;
    a.intermediate_size = 200;
    a.max_position = 2048;
    a.hidden_act = OPS_ACT_RELU;
    a.hidden_dropout = 0.037f;
    a.attention_dropout = 1.0f / 3;
    a.embedding_dropout = a.hidden_dropout;
    a.initializer_range = 0.0123456789f;
    a.layer_norm_eps = 1e-7f;
    a.type_vocab_size = 4;
    a.task_type_vocab_size = 5;
    a.use_task_id = 0;
    a.task_id = 0;
    a.pad_token_id = 7;
    CHECK_EQ_INT(config_write_json(&a, path, &e), 0);
    config_defaults(&b, MODEL_ERNIE);
    CHECK_EQ_INT(config_read_json(&b, path, &e), 0);
    check_configs_equal(&a, &b);
    text = read_file(path, &len);
    if (text != NULL) {
        text[len] = '\0';
        CHECK(strstr((char *)text, "\"model_type\": \"ernie\"") != NULL);
        CHECK(strstr((char *)text, "[\"ErnieForPreTraining\"]") != NULL);
        CHECK(strstr((char *)text, "\"hidden_dropout_prob\": 0.037,") != NULL);
        CHECK(strstr((char *)text, "\"layer_norm_eps\": 1e-07,") != NULL);
        CHECK(strstr((char *)text, "\"use_task_id\": false") != NULL);
        CHECK(strstr((char *)text, "\"hidden_act\": \"relu\"") != NULL);
        free(text);
    }

    /* The defaults, both models; gelu_new for ERNIE. */
    config_defaults(&a, MODEL_ERNIE);
    a.hidden_act = OPS_ACT_GELU_TANH;
    CHECK_EQ_INT(config_write_json(&a, path, &e), 0);
    config_defaults(&b, MODEL_ERNIE);
    b.vocab_size = 5;
    CHECK_EQ_INT(config_read_json(&b, path, &e), 0);
    check_configs_equal(&a, &b);
    config_defaults(&a, MODEL_GPT);
    CHECK_EQ_INT(config_write_json(&a, path, &e), 0);
    config_defaults(&b, MODEL_GPT);
    b.num_layers = 2;
    CHECK_EQ_INT(config_read_json(&b, path, &e), 0);
    check_configs_equal(&a, &b);
    text = read_file(path, &len);
    if (text != NULL) {
        text[len] = '\0';
        CHECK(strstr((char *)text, "\"model_type\": \"gpt2\"") != NULL);
        CHECK(strstr((char *)text, "[\"GPT2LMHeadModel\"]") != NULL);
        CHECK(strstr((char *)text, "\"n_inner\": null") != NULL);
        CHECK(strstr((char *)text, "\"resid_pdrop\": 0.1,") != NULL);
        CHECK(strstr((char *)text, "\"tie_word_embeddings\": true") != NULL);
        CHECK(strstr((char *)text, "\"activation_function\": \"gelu_new\"") !=
              NULL);
        free(text);
    }

    /* GPT with its own n_inner, an exact gelu and three dropouts. */
    a.hidden_size = 128;
    a.num_heads = 2;
    a.intermediate_size = 100;
    a.hidden_act = OPS_ACT_GELU;
    a.hidden_dropout = 0.25f;
    a.attention_dropout = 0;
    a.embedding_dropout = 0.3f;
    a.layer_norm_eps = 3e-6f;
    CHECK_EQ_INT(config_write_json(&a, path, &e), 0);
    config_defaults(&b, MODEL_GPT);
    CHECK_EQ_INT(config_read_json(&b, path, &e), 0);
    check_configs_equal(&a, &b);

    /* An invalid config is not written; the old file stays. */
    a.num_heads = 3;
    memset(&e, 0, sizeof(e));
    CHECK_EQ_INT(config_write_json(&a, path, &e), -1);
    CHECK_MSG(e, "not divisible");
    config_defaults(&b, MODEL_GPT);
    CHECK_EQ_INT(config_read_json(&b, path, &e), 0);
    CHECK_EQ_INT(b.hidden_size, 128);
    a.num_heads = 2;
    memset(&e, 0, sizeof(e));
    CHECK_EQ_INT(config_write_json(&a, path_of(dir, "no/dir/config.json"), &e),
                 -1);
    CHECK_MSG(e, "cannot create '");
    CHECK_EQ_INT(count_files(dir, &n_tmp), 1);
    CHECK_EQ_INT(n_tmp, 0);
}

TESTS(test_train_io, TEST(test_st_dtypes), TEST(test_st_exact_bytes),
      TEST(test_st_roundtrip), TEST(test_st_foreign_files),
      TEST(test_st_write_errors), TEST(test_st_writer),
      TEST(test_st_open_errors), TEST(test_st_corrupt_headers),
      TEST(test_st_truncated_every_byte), TEST(test_st_every_byte_changed),
      TEST(test_config_defaults), TEST(test_config_ernie_paddle),
      TEST(test_config_gpt_keys), TEST(test_config_errors),
      TEST(test_config_check), TEST(test_config_roundtrip))
