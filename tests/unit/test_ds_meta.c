/* SPDX-License-Identifier: MIT */
/*
 * test_ds_meta.c: unit tests of the dataset sidecar (ds_meta.c): the
 * SHA-256 against FIPS 180-2's vectors, a round trip of every field, the
 * file's layout, missing and malformed sidecars with their messages, the
 * refusal to replace a JSON file that is not a sidecar, stale records,
 * the comparison and the merge's folding of inputs, and the corpus list's
 * prefixes.  Files go to a fresh directory under $TMPDIR.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "../harness_files.h"
#include "ds.h"

static void
put_text(const char *path, const char *s)
{
    write_file(path, s, strlen(s));
}

/* A record as create-pretraining-data writes one. */
static void
sample_meta(struct ds_meta *m)
{
    ds_meta_init(m, "create-pretraining-data", "9.8.7");
    m->format = DS_FORMAT_MMAP;
    m->dtype = DS_DTYPE_UINT16;
    m->n_documents = 2;
    m->n_sentences = 3;
    m->n_tokens = 6;
    snprintf(m->tokenizer, sizeof(m->tokenizer), "ernie");
    m->vocab_size = 40000;
    memset(m->vocab_sha256, 'a', 64);
    m->vocab_sha256[64] = '\0';
    m->lowercase = 1;
    m->whole_word_marks = 1;
    m->split_sentences = 1;
    m->append_eod = 0;
    m->keep_whitespace = 0;
    snprintf(m->vocab, sizeof(m->vocab), "vocab/ernie \"3.0\".txt");
    snprintf(m->sentence_splitter, sizeof(m->sentence_splitter), "lines");
    snprintf(m->segmenter, sizeof(m->segmenter), "jieba");
    m->max_word_length = 6;
    m->max_repeated_len = 100;
}

/* The corpus of spec section 10a: 6 tokens, uint16. */
static void
write_10a(const char *prefix, enum ds_format fmt)
{
    static const int32_t s0[] = { 5, 6, 7 }, s1[] = { 8 }, s2[] = { 9, 10 };
    struct ds_writer *w = NULL;
    struct ds_err e;

    if (ds_writer_open(&w, prefix, fmt, DS_DTYPE_UINT16, &e) < 0 ||
        ds_writer_add_sentence(w, s0, 3, &e) < 0 ||
        ds_writer_add_sentence(w, s1, 1, &e) < 0 ||
        ds_writer_end_document(w, &e) < 0 ||
        ds_writer_add_sentence(w, s2, 2, &e) < 0 ||
        ds_writer_commit(w, &e) < 0) {
        fprintf(stderr, "write_10a: %s\n", e.msg);
        exit(1);
    }
}

static void
test_meta_sha256_vectors(void)
{
    const char *dir = test_dir("sha");
    char hex[DS_META_HEX];
    struct ds_err e;

    put_text(path_of(dir, "abc"), "abc");
    CHECK_EQ_INT(ds_meta_file_sha256(path_of(dir, "abc"), hex, &e), 0);
    CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223"
                      "b00361a396177a9cb410ff61f20015ad");
    put_text(path_of(dir, "empty"), "");
    CHECK_EQ_INT(ds_meta_file_sha256(path_of(dir, "empty"), hex, &e), 0);
    CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb924"
                      "27ae41e4649b934ca495991b7852b855");
    /* 56 bytes: the two-block vector. */
    put_text(path_of(dir, "two"),
             "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
    CHECK_EQ_INT(ds_meta_file_sha256(path_of(dir, "two"), hex, &e), 0);
    CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039"
                      "a33ce45964ff2167f6ecedd419db06c1");
    CHECK_EQ_INT(ds_meta_file_sha256(path_of(dir, "none"), hex, &e), DS_EIO);
    CHECK_MSG(e, "cannot open '");
    CHECK_MSG(e, "none': No such file");
}

static void
test_meta_roundtrip(void)
{
    const char *dir = test_dir("roundtrip");
    const char *p = path_of(dir, "d");
    struct ds_meta m, r;
    struct ds_err e;
    unsigned char *text;
    size_t len;

    setenv("SOURCE_DATE_EPOCH", "86400", 1);
    sample_meta(&m);
    unsetenv("SOURCE_DATE_EPOCH");
    CHECK_EQ_STR(m.created, "1970-01-02T00:00:00Z");
    CHECK_EQ_INT(ds_meta_write(p, &m, &e), 0);
    CHECK_EQ_INT(ds_meta_read(p, &r, &e), 1);
    CHECK_EQ_STR(r.tool, "create-pretraining-data");
    CHECK_EQ_STR(r.tool_version, "9.8.7");
    CHECK_EQ_STR(r.created, "1970-01-02T00:00:00Z");
    CHECK_EQ_INT(r.format, DS_FORMAT_MMAP);
    CHECK_EQ_INT(r.dtype, DS_DTYPE_UINT16);
    CHECK_EQ_INT(r.n_documents, 2);
    CHECK_EQ_INT(r.n_sentences, 3);
    CHECK_EQ_INT(r.n_tokens, 6);
    CHECK_EQ_INT(r.n_inputs, 0);
    CHECK_EQ_STR(r.tokenizer, "ernie");
    CHECK_EQ_INT(r.vocab_size, 40000);
    CHECK_EQ_STR(r.vocab_sha256, m.vocab_sha256);
    CHECK_EQ_STR(r.merges_sha256, "");
    CHECK_EQ_INT(r.lowercase, 1);
    CHECK_EQ_INT(r.whole_word_marks, 1);
    CHECK_EQ_INT(r.split_sentences, 1);
    CHECK_EQ_INT(r.append_eod, 0);
    CHECK_EQ_INT(r.keep_whitespace, 0);
    CHECK_EQ_STR(r.vocab, "vocab/ernie \"3.0\".txt");
    CHECK_EQ_STR(r.sentence_splitter, "lines");
    CHECK_EQ_STR(r.segmenter, "jieba");
    CHECK_EQ_INT(r.max_word_length, 6);
    CHECK_EQ_INT(r.max_repeated_len, 100);

    /* The layout of ds-meta(5): one key a line, null where unrecorded. */
    text = read_file(path_of(dir, "d.json"), &len);
    CHECK(text != NULL);
    if (text != NULL) {
        text[len] = '\0';
        CHECK(strncmp((char *)text, "{\n  \"erniekit_dataset\": 1,\n", 27) ==
              0);
        CHECK_MSG_STR((char *)text, "\n  \"merges_sha256\": null,\n");
        CHECK_MSG_STR((char *)text, "\n  \"vocab\": \"vocab/ernie \\\"3.0\\\"."
                                    "txt\",\n");
        CHECK_MSG_STR((char *)text, "\n  \"max_repeated_len\": 100\n}\n");
        CHECK(strstr((char *)text, "\"inputs\"") == NULL);
    }
    free(text);

    /* A merge, BPE, runs kept, unrecorded details. */
    m.n_inputs = 3;
    snprintf(m.tokenizer, sizeof(m.tokenizer), "gpt2-bpe");
    memset(m.merges_sha256, '0', 64);
    m.merges_sha256[64] = '\0';
    m.max_repeated_len = INT64_MAX;
    m.max_word_length = -1;
    m.segmenter[0] = '\0';
    m.append_eod = 1;
    CHECK_EQ_INT(ds_meta_write(p, &m, &e), 0);
    CHECK_EQ_INT(ds_meta_read(p, &r, &e), 1);
    CHECK_EQ_INT(r.n_inputs, 3);
    CHECK_EQ_STR(r.tokenizer, "gpt2-bpe");
    CHECK_EQ_STR(r.merges_sha256, m.merges_sha256);
    CHECK_EQ_INT(r.max_repeated_len, INT64_MAX);
    CHECK_EQ_INT(r.max_word_length, -1);
    CHECK_EQ_STR(r.segmenter, "");
    CHECK_EQ_INT(r.append_eod, 1);
    text = read_file(path_of(dir, "d.json"), &len);
    if (text != NULL) {
        text[len] = '\0';
        CHECK_MSG_STR((char *)text, "\"max_repeated_len\": \"none\"");
        CHECK_MSG_STR((char *)text, "\"inputs\": 3,");
        CHECK_MSG_STR((char *)text, "\"segmenter\": null,");
    }
    free(text);
    {
        int n_tmp;

        CHECK_EQ_INT(count_files(dir, &n_tmp), 1);
        CHECK_EQ_INT(n_tmp, 0);
    }
}

static void
test_meta_missing_and_malformed(void)
{
    const char *dir = test_dir("bad");
    const char *p = path_of(dir, "d");
    const char *json = path_of(dir, "d.json");
    struct ds_meta m, good;
    struct ds_err e;

    CHECK_EQ_INT(ds_meta_read(p, &m, &e), 0);
    CHECK_EQ_STR(m.tokenizer, "");
    CHECK_EQ_INT(m.vocab_size, -1);
    CHECK_EQ_INT(m.whole_word_marks, -1);

    put_text(json, "{\"erniekit_dataset\": 1,");
    CHECK_EQ_INT(ds_meta_read(p, &m, &e), DS_EFORMAT);
    CHECK_MSG(e, "d.json' is not JSON: ");
    put_text(json, "{} x");
    CHECK_EQ_INT(ds_meta_read(p, &m, &e), DS_EFORMAT);
    CHECK_MSG(e, "is not JSON");
    put_text(json, "[1, 2]\n");
    CHECK_EQ_INT(ds_meta_read(p, &m, &e), DS_EFORMAT);
    CHECK_MSG(e, "is not a dataset sidecar (not a JSON object)");
    put_text(json, "{\"name\": \"a user's file\"}\n");
    CHECK_EQ_INT(ds_meta_read(p, &m, &e), DS_EFORMAT);
    CHECK_MSG(e, "is not a dataset sidecar (no \"erniekit_dataset\" key)");
    put_text(json, "{\"erniekit_dataset\": 2}\n");
    CHECK_EQ_INT(ds_meta_read(p, &m, &e), DS_EFORMAT);
    CHECK_MSG(e, "sidecar version 2 is not one this erniekit reads (1)");

    /* Each required field: drop it, or give it the wrong type. */
    sample_meta(&good);
    CHECK_EQ_INT(ds_meta_write(p, &good, &e), 0);
    {
        size_t len;
        unsigned char *text = read_file(json, &len);
        static const struct {
            const char *from, *to, *msg;
        } cases[] = {
            { "\"tokenizer\": \"ernie\"", "\"tokenizer\": null",
              "no \"tokenizer\" (a sidecar needs it)" },
            { "\"tokenizer\": \"ernie\"", "\"tokenizer\": \"wp\"",
              "\"tokenizer\" is not \"ernie\", \"bert\"" },
            { "\"vocab_size\": 40000", "\"vocab_size\": \"40000\"",
              "\"vocab_size\" is not an integer" },
            { "\"vocab_size\": 40000", "\"vocab_size\": -1",
              "\"vocab_size\" is not a count" },
            { "\"whole_word_marks\": true", "\"whole_word_marks\": 1",
              "\"whole_word_marks\" is not true or false" },
            { "\"dtype\": \"uint16\"", "\"dtype\": \"u2\"",
              "\"dtype\" is not a numpy integer type" },
            { "\"format\": \"mmap\"", "\"format\": \"bin\"",
              "\"format\" is not \"mmap\" or \"npy\"" },
            { "\"tokens\": 6", "\"tokenz\": 6", "no \"tokens\"" },
            /* json-c reads these as 2^63 - 1 unless asked */
            { "\"tokens\": 6", "\"tokens\": 99999999999999999999",
              "\"tokens\" is not a count (0 to 2^63 - 1)" },
            { "\"vocab_size\": 40000", "\"vocab_size\": 18446744073709551616",
              "\"vocab_size\" is not a count" },
            { "\"tokens\": 6", "\"tokens\": 9223372036854775808",
              "\"tokens\" is not a count (0 to 2^63 - 1)" },
            { "\"vocab_sha256\": \"aaaa", "\"vocab_sha256\": \"Aaaa",
              "\"vocab_sha256\" is not 64 lowercase hex digits" },
        };

        CHECK(text != NULL);
        for (size_t i = 0; text && i < sizeof(cases) / sizeof(*cases); i++) {
            char *s = malloc(len + 64), *at;

            text[len] = '\0';
            at = strstr((char *)text, cases[i].from);
            CHECK(at != NULL);
            if (at == NULL) {
                free(s);
                continue;
            }
            snprintf(s, len + 64, "%.*s%s%s", (int)(at - (char *)text),
                     (char *)text, cases[i].to, at + strlen(cases[i].from));
            put_text(json, s);
            memset(&e, 0, sizeof(e));
            CHECK_EQ_INT(ds_meta_read(p, &m, &e), DS_EFORMAT);
            CHECK_MSG(e, cases[i].msg);
            CHECK_MSG(e, "d.json'");
            /* A failed read leaves nothing half-filled. */
            CHECK_EQ_STR(m.tokenizer, "");
            free(s);
        }
        free(text);
    }
}

static void
test_meta_never_replaces_other_json(void)
{
    const char *dir = test_dir("name");
    const char *p = path_of(dir, "wudao");
    const char *json = path_of(dir, "wudao.json");
    const char *raw = "[{\"title\": \"raw WuDao\", \"content\": \"...\"}]\n";
    struct ds_meta m;
    struct ds_err e;
    unsigned char *text;
    size_t len;

    CHECK_EQ_INT(ds_meta_check_name(p, &e), 0);
    put_text(json, raw);
    CHECK_EQ_INT(ds_meta_check_name(p, &e), DS_EINVAL);
    CHECK_MSG(e, "wudao.json' exists and is not a dataset sidecar");
    CHECK_MSG(e, "choose another output prefix");
    sample_meta(&m);
    CHECK_EQ_INT(ds_meta_write(p, &m, &e), DS_EINVAL);
    text = read_file(json, &len);
    CHECK(text != NULL && len == strlen(raw) && memcmp(text, raw, len) == 0);
    free(text);
    CHECK_EQ_INT(ds_meta_remove(p, &e), 0); /* it is the caller's call */
    /* An old sidecar is replaced, a corrupt one too. */
    CHECK_EQ_INT(ds_meta_write(p, &m, &e), 0);
    CHECK_EQ_INT(ds_meta_check_name(p, &e), 0);
    put_text(json, "{\"erniekit_dataset\": 1}");
    CHECK_EQ_INT(ds_meta_check_name(p, &e), 0);
    CHECK_EQ_INT(ds_meta_remove(p, &e), 0);
    CHECK_EQ_INT(ds_meta_remove(p, &e), 0);
    CHECK_EQ_INT(ds_meta_read(p, &m, &e), 0);
}

static void
test_meta_stale(void)
{
    const char *dir = test_dir("stale");
    const char *p = path_of(dir, "d");
    struct ds_meta m;
    struct ds_err e;

    sample_meta(&m);
    CHECK_EQ_INT(ds_meta_stale(p, &m, &e), DS_EIO);
    CHECK_MSG(e, "d.bin': No such file");
    write_10a(p, DS_FORMAT_MMAP);
    CHECK_EQ_INT(ds_meta_stale(p, &m, &e), 0);
    m.n_tokens = 7;
    CHECK_EQ_INT(ds_meta_stale(p, &m, &e), 1);
    CHECK_MSG(e, "d.json' records 7 uint16 tokens, which '");
    CHECK_MSG(e, "d.bin' does not hold (12 bytes): it describes earlier "
                 "files");
    m.n_tokens = 3;
    m.dtype = DS_DTYPE_INT32;
    CHECK_EQ_INT(ds_meta_stale(p, &m, &e), 0);
    /* The npy pair is what ds_open() reads when both exist. */
    write_10a(p, DS_FORMAT_NPY);
    m.n_tokens = 6;
    m.dtype = DS_DTYPE_UINT16;
    CHECK_EQ_INT(ds_meta_stale(p, &m, &e), 0);
    m.n_tokens = 70;
    CHECK_EQ_INT(ds_meta_stale(p, &m, &e), 1);
    CHECK_MSG(e, "d_ids.npy' does not hold (140 bytes)");
}

static void
test_meta_compare(void)
{
    struct ds_meta a, b;
    char diff[256];

    sample_meta(&a);
    sample_meta(&b);
    diff[0] = '\0';
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 0);
    CHECK_EQ_STR(diff, "");
    /* Not compared: the tool, the counts, the details. */
    b.n_tokens = 99;
    snprintf(b.tool, sizeof(b.tool), "merge");
    b.max_word_length = 4;
    snprintf(b.vocab, sizeof(b.vocab), "elsewhere/vocab.txt");
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 0);
    /* ernie and bert ids mean the same tokens. */
    snprintf(b.tokenizer, sizeof(b.tokenizer), "bert");
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 0);
    snprintf(b.tokenizer, sizeof(b.tokenizer), "gpt2-bpe");
    b.vocab_size = 50257;
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 1);
    CHECK_EQ_STR(diff, "tokenizer: ernie vs gpt2-bpe");
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_VOCAB, diff, sizeof(diff)), 1);
    CHECK_EQ_STR(diff, "vocab_size: 40000 vs 50257");
    sample_meta(&b);
    b.vocab_sha256[63] = 'b';
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 1);
    CHECK_MSG_STR(diff, "vocab_sha256: aaaa");
    CHECK_MSG_STR(diff, "a vs aaaa");
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_TOKENIZER | DS_META_OPTIONS,
                                 diff, sizeof(diff)),
                 0);
    /* A field one side does not record is not compared. */
    b.vocab_sha256[0] = '\0';
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 0);
    b.whole_word_marks = 0;
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 1);
    CHECK_EQ_STR(diff, "whole_word_marks: true vs false");
    b.whole_word_marks = -1;
    b.keep_whitespace = 1;
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_ALL, diff, sizeof(diff)), 1);
    CHECK_EQ_STR(diff, "keep_whitespace: false vs true");
    CHECK_EQ_INT(ds_meta_compare(&a, &b, DS_META_VOCAB, diff, sizeof(diff)), 0);
}

static void
test_meta_combine(void)
{
    struct ds_meta acc, in;

    sample_meta(&acc);
    sample_meta(&in);
    ds_meta_combine(&acc, &in);
    CHECK_EQ_STR(acc.tokenizer, "ernie");
    CHECK_EQ_STR(acc.segmenter, "jieba");
    CHECK_EQ_INT(acc.max_word_length, 6);
    snprintf(in.tokenizer, sizeof(in.tokenizer), "bert");
    snprintf(in.sentence_splitter, sizeof(in.sentence_splitter), "icu");
    in.max_repeated_len = INT64_MAX;
    ds_meta_combine(&acc, &in);
    CHECK_EQ_STR(acc.tokenizer, "wordpiece");
    CHECK_EQ_STR(acc.sentence_splitter, "");
    CHECK_EQ_INT(acc.max_repeated_len, -1);
    CHECK_EQ_STR(acc.vocab, "vocab/ernie \"3.0\".txt");
    CHECK_EQ_STR(acc.vocab_sha256, in.vocab_sha256);
    CHECK_EQ_INT(acc.whole_word_marks, 1);
}

struct prefixes {
    char got[256];
    int n, stop_at;
};

static int
collect(void *arg, const char *prefix)
{
    struct prefixes *p = arg;
    size_t len = strlen(p->got);

    snprintf(p->got + len, sizeof(p->got) - len, "[%s]", prefix);
    return ++p->n == p->stop_at ? 42 : 0;
}

static void
test_corpus_each_prefix(void)
{
    struct prefixes p = { "", 0, 0 };
    struct ds_err e;
    const char *dir = test_dir("each_prefix");
    static const char *const files[] = { "data/wudao.bin", "data/wudao.idx",
                                         "a.bin",          "a.idx",
                                         "d.bin",          "d.idx",
                                         "b/c.bin",        "b/c.idx" };
    char cwd[4096], path[4300];

    /* The list is read against the file system (a directory expands, a
     * missing prefix is an error): the prefixes exist, relative to dir. */
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/data", dir);
        mkdir(path, 0777);
        snprintf(path, sizeof(path), "%s/b", dir);
        mkdir(path, 0777);
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        write_file(path, "", 0);
    }
    CHECK(chdir(dir) == 0);
    CHECK_EQ_INT(ds_corpus_each_prefix("data/wudao", collect, &p, &e), 0);
    CHECK_EQ_STR(p.got, "[data/wudao]");
    memset(&p, 0, sizeof(p));
    CHECK_EQ_INT(ds_corpus_each_prefix(" 1 a\t0.5  b/c ", collect, &p, &e), 0);
    CHECK_EQ_STR(p.got, "[a][b/c]");
    memset(&p, 0, sizeof(p));
    p.stop_at = 1;
    CHECK_EQ_INT(ds_corpus_each_prefix("1 a 2 d", collect, &p, &e), 42);
    CHECK_EQ_STR(p.got, "[a]");
    memset(&p, 0, sizeof(p));
    CHECK_EQ_INT(ds_corpus_each_prefix("1 a 2", collect, &p, &e), DS_EINVAL);
    CHECK_MSG(e, "weight '2' has no prefix after it");
    CHECK_EQ_INT(ds_corpus_each_prefix("x a 2 b", collect, &p, &e), DS_EINVAL);
    CHECK_MSG(e, "weight 'x' is not a number");
    CHECK_EQ_INT(p.n, 0);
    CHECK(chdir(cwd) == 0);
}

TESTS(test_ds_meta, TEST(test_meta_sha256_vectors), TEST(test_meta_roundtrip),
      TEST(test_meta_missing_and_malformed),
      TEST(test_meta_never_replaces_other_json), TEST(test_meta_stale),
      TEST(test_meta_compare), TEST(test_meta_combine),
      TEST(test_corpus_each_prefix))
