/* SPDX-License-Identifier: MIT */
/*
 * test_ds_gpt.c: unit tests of libdata's GPT samples: two small cases
 * whose doc_idx, sample_idx and shuffle_idx were printed by
 * paddlenlp.data.causal_dataset's own functions (PaddleNLP 2.8.1, numpy
 * 1.26, tool_helpers' build_sample_idx), one with the separate last epoch;
 * every window's tokens; the cache name's md5; the cache written, read
 * back, and rebuilt when truncated; built once by 4 processes that ask
 * for it at once, and unlocked where no lock can be had; the argument
 * errors.  Files go to a
 * fresh directory under $TMPDIR (default /tmp), removed at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "ds.h"

static char tmp_root[4096];

static void
cleanup(void)
{
    char cmd[4200];

    if (tmp_root[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tmp_root);
    }
}

/* The dataset of the reference cases: six items of sizes 5 3 7 2 9 4,
 * token at position p = 1000 + p. */
static const uint32_t sizes[6] = { 5, 3, 7, 2, 9, 4 };

static struct ds_dataset *
open_fixture(void)
{
    static char prefix[4200];
    struct ds_dataset *d = NULL;
    struct ds_writer *w = NULL;
    int32_t ids[16];
    int32_t pos = 0;

    if (tmp_root[0] == '\0') {
        const char *t = getenv("TMPDIR");

        snprintf(tmp_root, sizeof(tmp_root), "%s/test_ds_gpt.XXXXXX",
                 t && *t ? t : "/tmp");
        if (mkdtemp(tmp_root) == NULL) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(cleanup);
    }
    snprintf(prefix, sizeof(prefix), "%s/data", tmp_root);
    if (ds_writer_open(&w, prefix, DS_FORMAT_MMAP, DS_DTYPE_INT32, NULL) < 0)
        return NULL;
    for (int i = 0; i < 6; i++) {
        for (uint32_t k = 0; k < sizes[i]; k++)
            ids[k] = 1000 + pos++;
        ds_writer_add_sentence(w, ids, sizes[i], NULL);
        ds_writer_end_document(w, NULL);
    }
    if (ds_writer_commit(w, NULL) < 0 || ds_open(&d, prefix, NULL) < 0)
        return NULL;
    return d;
}

static const uint64_t docs[5] = { 1, 2, 3, 4, 5 };

/* Every sample's tokens against a walk of doc_idx from sample_idx. */
static void
check_windows(const struct ds_gpt *g, const struct ds_dataset *d,
              uint32_t seq_len)
{
    uint64_t n, n_rows, n_doc;
    const uint64_t *sh = ds_gpt_shuffle_idx(g, &n);
    const int32_t *si = ds_gpt_sample_idx(g, &n_rows);
    const int32_t *di = ds_gpt_doc_idx(g, &n_doc);
    int32_t got[64], want[64];

    for (uint64_t i = 0; i < n; i++) {
        uint64_t j = sh[i], k = 0;
        int32_t p = si[2 * j], o = si[2 * j + 1];

        CHECK_EQ_INT(ds_gpt_sample(g, d, i, got, NULL), 0);
        while (k < (uint64_t)seq_len + 1) {
            uint64_t start = ds_sentence_start(d, (uint64_t)di[p]);

            want[k++] = (int32_t)(1000 + start + (uint64_t)o);
            if (++o == (int32_t)sizes[di[p]]) {
                p++;
                o = 0;
            }
        }
        CHECK_EQ_MEM(got, want, ((size_t)seq_len + 1) * sizeof(int32_t));
    }
}

static void
check_case(const struct ds_gpt *g, const int32_t *doc, size_t n_doc,
           const int32_t *sample, size_t n_rows, const uint32_t *shuf,
           size_t n_shuf)
{
    uint64_t n;
    const int32_t *a = ds_gpt_doc_idx(g, &n);

    CHECK_EQ_INT(n, n_doc);
    if (n == n_doc)
        CHECK_EQ_MEM(a, doc, n * sizeof(int32_t));
    a = ds_gpt_sample_idx(g, &n);
    CHECK_EQ_INT(n, n_rows);
    if (n == n_rows)
        CHECK_EQ_MEM(a, sample, 2 * n * sizeof(int32_t));
    const uint64_t *s = ds_gpt_shuffle_idx(g, &n);
    CHECK_EQ_INT(n, n_shuf);
    for (uint64_t i = 0; i < n && n == n_shuf; i++)
        CHECK_EQ_INT(s[i], shuf[i]);
}

static void
test_gpt_one_epoch(void)
{
    static const int32_t doc[] = { 5, 1, 2, 3, 4 };
    static const int32_t sample[] = {
        0, 0, 1, 0, 2, 1, 2, 5, 4, 0, 4, 4, 4, 8
    };
    static const uint32_t shuf[] = { 5, 2, 3, 1, 0, 4 };
    struct ds_dataset *d = open_fixture();
    struct ds_gpt *g = NULL;

    CHECK(d != NULL);
    if (d == NULL)
        return;
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 6, 4, 1234, NULL, NULL), 0);
    if (g != NULL) {
        CHECK_EQ_INT(ds_gpt_n_epochs(g), 1);
        CHECK_EQ_INT(ds_gpt_n_samples(g), 6);
        CHECK_EQ_INT(ds_gpt_separate_last_epoch(g), 0);
        check_case(g, doc, 5, sample, 7, shuf, 6);
        check_windows(g, d, 4);
    }
    ds_gpt_free(g);
    ds_close(d);
}

static void
test_gpt_separate_last_epoch(void)
{
    static const int32_t doc[] = { 1, 2, 3, 3, 1, 5, 2, 5, 4, 5,
                                   1, 3, 2, 4, 4, 1, 3, 2, 4, 5 };
    static const int32_t sample[] = { 0,  0, 1,  1, 1,  5, 3,  0, 4,  2,
                                      5,  3, 6,  3, 7,  0, 8,  0, 8,  4,
                                      8,  8, 9,  3, 11, 0, 12, 2, 12, 6,
                                      13, 3, 13, 7, 14, 2, 14, 6, 15, 1,
                                      17, 0, 17, 4, 18, 1, 18, 5, 19, 0 };
    static const uint32_t shuf[] = { 10, 0, 3,  5,  8,  17, 14, 9,
                                     2,  6, 4,  1,  15, 13, 12, 11,
                                     16, 7, 23, 22, 18, 21, 20, 19 };
    struct ds_dataset *d = open_fixture();
    struct ds_gpt *g = NULL;

    if (d == NULL)
        return;
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 20, 4, 5, NULL, NULL), 0);
    if (g != NULL) {
        CHECK_EQ_INT(ds_gpt_n_epochs(g), 4);
        CHECK_EQ_INT(ds_gpt_separate_last_epoch(g), 1);
        check_case(g, doc, 20, sample, 25, shuf, 24);
        check_windows(g, d, 4);
    }
    ds_gpt_free(g);
    ds_close(d);
}

static void
test_gpt_cache_hash(void)
{
    struct ds_gpt_cache c = { NULL, "data/wiki", "train", "949,50,1" };
    char h[33];

    CHECK_EQ_INT(ds_gpt_cache_hash(&c, 100, 1024, 1234, h), 0);
    CHECK_EQ_STR(h, "e5823f2a96b23ae9fd87af7a03a3be03");
    c.split = NULL;
    CHECK_EQ_INT(ds_gpt_cache_hash(&c, 100, 1024, 1234, h), DS_EINVAL);
}

static void
same_arrays(const struct ds_gpt *a, const struct ds_gpt *b)
{
    uint64_t n, n2;
    const void *p = ds_gpt_doc_idx(a, &n), *q = ds_gpt_doc_idx(b, &n2);

    CHECK_EQ_INT(n, n2);
    CHECK_EQ_MEM(p, q, n * sizeof(int32_t));
    p = ds_gpt_sample_idx(a, &n);
    q = ds_gpt_sample_idx(b, &n2);
    CHECK_EQ_INT(n, n2);
    CHECK_EQ_MEM(p, q, 2 * n * sizeof(int32_t));
    p = ds_gpt_shuffle_idx(a, &n);
    q = ds_gpt_shuffle_idx(b, &n2);
    CHECK_EQ_INT(n, n2);
    CHECK_EQ_MEM(p, q, n * sizeof(uint64_t));
}

static void
test_gpt_cache_round_trip(void)
{
    struct ds_dataset *d = open_fixture();
    struct ds_gpt *g = NULL, *g2 = NULL;
    char dir[4200], path[4400], h[33];
    struct ds_gpt_cache c = { dir, "p", "train", "949,50,1" };
    FILE *f;

    if (d == NULL)
        return;
    snprintf(dir, sizeof(dir), "%s/cache", tmp_root);
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 20, 4, 5, &c, NULL), 0);
    CHECK_EQ_INT(ds_gpt_build(&g2, d, docs, 5, 20, 4, 5, &c, NULL), 0);
    if (g == NULL || g2 == NULL)
        goto out;
    CHECK_EQ_INT(ds_gpt_from_cache(g), 0);
    CHECK_EQ_INT(ds_gpt_from_cache(g2), 1);
    same_arrays(g, g2);
    ds_gpt_free(g2);
    g2 = NULL;
    /* A truncated shuffle_idx is rebuilt. */
    ds_gpt_cache_hash(&c, 20, 4, 5, h);
    snprintf(path, sizeof(path), "%s/%s_shuffle_idx.npy", dir, h);
    CHECK(truncate(path, 130) == 0);
    CHECK_EQ_INT(ds_gpt_build(&g2, d, docs, 5, 20, 4, 5, &c, NULL), 0);
    if (g2 != NULL) {
        CHECK_EQ_INT(ds_gpt_from_cache(g2), 0);
        same_arrays(g, g2);
    }
    /* The .dsc holds the description PaddleNLP hashes. */
    snprintf(path, sizeof(path), "%s/%s.dsc", dir, h);
    f = fopen(path, "r");
    CHECK(f != NULL);
    if (f != NULL) {
        char buf[256] = "";
        size_t k = fread(buf, 1, sizeof(buf) - 1, f);

        buf[k] = '\0';
        CHECK_EQ_STR(buf, "GPT Dataset\n\nData prefix p\nDataset name train\n"
                          "Number of samples 20\nSequence length 4\n"
                          "Random seed 5\nSplit 949,50,1\n");
        fclose(f);
    }
out:
    ds_gpt_free(g);
    ds_gpt_free(g2);
    ds_close(d);
}

#define N_RACE 4

/* What one racing process saw: the three arrays, if they fit. */
struct race_rec {
    int rc, from_cache;
    uint64_t n_doc, n_rows, n_shuf;
    int32_t doc[64], sample[2 * 64];
    uint64_t shuf[64];
};

static void
race_child(const struct ds_dataset *d, const struct ds_gpt_cache *c, int go,
           int res)
{
    struct race_rec r;
    struct ds_gpt *g = NULL;
    char ch;

    memset(&r, 0, sizeof(r));
    /* all start when the parent closes the pipe's other end */
    if (read(go, &ch, 1) != 0)
        _exit(2);
    r.rc = ds_gpt_build(&g, d, docs, 5, 20, 4, 5, c, NULL);
    if (g != NULL) {
        const int32_t *a = ds_gpt_doc_idx(g, &r.n_doc),
                      *b = ds_gpt_sample_idx(g, &r.n_rows);
        const uint64_t *s = ds_gpt_shuffle_idx(g, &r.n_shuf);

        r.from_cache = ds_gpt_from_cache(g);
        if (r.n_doc <= 64 && r.n_rows <= 64 && r.n_shuf <= 64) {
            memcpy(r.doc, a, r.n_doc * sizeof(int32_t));
            memcpy(r.sample, b, 2 * r.n_rows * sizeof(int32_t));
            memcpy(r.shuf, s, r.n_shuf * sizeof(uint64_t));
        }
    }
    ds_gpt_free(g);
    /* one write under PIPE_BUF: atomic; _exit: no atexit cleanup */
    _exit(write(res, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3);
}

static void
test_gpt_cache_race(void)
{
    struct ds_dataset *d = open_fixture();
    struct ds_gpt *ref = NULL;
    char dir[4200], lock[4400], h[33];
    struct ds_gpt_cache c = { dir, "p", "train", "949,50,1" };
    int go[2], res[2], n_built = 0, n_ok = 0;
    pid_t pid[N_RACE];
    uint64_t n_doc = 0, n_rows = 0, n_shuf = 0;
    const int32_t *doc, *sample;
    const uint64_t *shuf;

    if (d == NULL)
        return;
    snprintf(dir, sizeof(dir), "%s/race", tmp_root);
    CHECK_EQ_INT(ds_gpt_build(&ref, d, docs, 5, 20, 4, 5, NULL, NULL), 0);
    if (ref == NULL || pipe(go) < 0 || pipe(res) < 0) {
        ds_gpt_free(ref);
        ds_close(d);
        SKIP("no reference or no pipe");
    }
    doc = ds_gpt_doc_idx(ref, &n_doc);
    sample = ds_gpt_sample_idx(ref, &n_rows);
    shuf = ds_gpt_shuffle_idx(ref, &n_shuf);
    CHECK(n_doc <= 64 && n_rows <= 64 && n_shuf <= 64);
    fflush(NULL);
    for (int i = 0; i < N_RACE; i++) {
        if ((pid[i] = fork()) == 0) {
            close(go[1]);
            close(res[0]);
            race_child(d, &c, go[0], res[1]);
        }
        CHECK(pid[i] > 0);
    }
    close(go[0]);
    close(res[1]);
    close(go[1]);
    for (int i = 0; i < N_RACE; i++) {
        struct race_rec r;

        if (read(res[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
            break;
        n_ok++;
        CHECK_EQ_INT(r.rc, 0);
        CHECK_EQ_INT(r.n_doc, n_doc);
        CHECK_EQ_INT(r.n_rows, n_rows);
        CHECK_EQ_INT(r.n_shuf, n_shuf);
        if (r.n_doc == n_doc && r.n_rows == n_rows && r.n_shuf == n_shuf &&
            n_doc <= 64 && n_rows <= 64 && n_shuf <= 64) {
            CHECK_EQ_MEM(r.doc, doc, n_doc * sizeof(int32_t));
            CHECK_EQ_MEM(r.sample, sample, 2 * n_rows * sizeof(int32_t));
            CHECK_EQ_MEM(r.shuf, shuf, n_shuf * sizeof(uint64_t));
        }
        n_built += !r.from_cache;
    }
    close(res[0]);
    for (int i = 0; i < N_RACE; i++) {
        int st = -1;

        if (pid[i] > 0)
            CHECK(waitpid(pid[i], &st, 0) == pid[i] && WIFEXITED(st) &&
                  WEXITSTATUS(st) == 0);
    }
    CHECK_EQ_INT(n_ok, N_RACE);
    CHECK_EQ_INT(n_built, 1);
    ds_gpt_cache_hash(&c, 20, 4, 5, h);
    snprintf(lock, sizeof(lock), "%s/%s.dsc.lock", dir, h);
    CHECK(access(lock, F_OK) != 0); /* removed by the builder */
    ds_gpt_free(ref);
    ds_close(d);
}

/* Where no lock can be had the arrays are built unlocked and cached; a
 * valid cache is read without a lock. */
static void
test_gpt_cache_no_lock(void)
{
    struct ds_dataset *d = open_fixture();
    struct ds_gpt *g = NULL, *g2 = NULL;
    char dir[4200], lock[4400], h[33];
    struct ds_gpt_cache c = { dir, "p", "train", "949,50,1" };

    if (d == NULL)
        return;
    snprintf(dir, sizeof(dir), "%s/nolock", tmp_root);
    CHECK_EQ_INT(mkdir(dir, 0777), 0);
    ds_gpt_cache_hash(&c, 20, 4, 5, h);
    snprintf(lock, sizeof(lock), "%s/%s.dsc.lock", dir, h);
    /* a lock file that cannot be opened, even by root */
    CHECK_EQ_INT(symlink("/nonexistent/dir/lock", lock), 0);
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 20, 4, 5, &c, NULL), 0);
    CHECK_EQ_INT(ds_gpt_build(&g2, d, docs, 5, 20, 4, 5, &c, NULL), 0);
    if (g != NULL && g2 != NULL) {
        CHECK_EQ_INT(ds_gpt_from_cache(g), 0);
        CHECK_EQ_INT(ds_gpt_from_cache(g2), 1);
        same_arrays(g, g2);
    }
    ds_gpt_free(g2);
    g2 = NULL;
    /* A read-only directory: the valid cache is read, no lock made. */
    unlink(lock);
    CHECK_EQ_INT(chmod(dir, 0555), 0);
    CHECK_EQ_INT(ds_gpt_build(&g2, d, docs, 5, 20, 4, 5, &c, NULL), 0);
    if (g != NULL && g2 != NULL) {
        CHECK_EQ_INT(ds_gpt_from_cache(g2), 1);
        same_arrays(g, g2);
    }
    CHECK(access(lock, F_OK) != 0);
    chmod(dir, 0755);
    ds_gpt_free(g);
    ds_gpt_free(g2);
    ds_close(d);
}

static void
test_gpt_errors(void)
{
    struct ds_dataset *d = open_fixture();
    struct ds_gpt *g = NULL;
    struct ds_err e = { 0, "" };
    static const uint64_t bad[2] = { 1, 6 };
    struct ds_gpt_cache c = { NULL, NULL, "train", "1" };
    int32_t buf[8];

    if (d == NULL)
        return;
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 0, 10, 4, 1, NULL, &e), DS_EINVAL);
    CHECK(strstr(e.msg, "no documents") != NULL);
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 10, 0, 1, NULL, &e), DS_EINVAL);
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 10, 4, 1ull << 32, NULL, &e),
                 DS_EINVAL);
    CHECK(strstr(e.msg, "2^32") != NULL);
    CHECK_EQ_INT(ds_gpt_build(&g, d, bad, 2, 10, 4, 1, NULL, &e), DS_ERANGE);
    CHECK(strstr(e.msg, "document 6") != NULL);
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 10, 4, 1, &c, &e), DS_EINVAL);
    CHECK(g == NULL);
    CHECK_EQ_INT(ds_gpt_build(&g, d, docs, 5, 0, 4, 1, NULL, &e), 0);
    if (g != NULL) {
        CHECK_EQ_INT(ds_gpt_sample(g, d, ds_gpt_n_samples(g), buf, &e),
                     DS_ERANGE);
        CHECK(strstr(e.msg, "past") != NULL);
    }
    ds_gpt_free(g);
    ds_close(d);
}

/* ds_gpt_samples (grouped, prefetching) gives ds_gpt_sample's bytes, for
 * uint16 and int32 files (the widening fast path and the plain copy),
 * windows across documents, lengths not a multiple of the vector width,
 * and a list longer than a group in any order; an index past the end is
 * an error. */
static void
test_gpt_samples_batch(void)
{
    static const enum ds_dtype dtypes[2] = { DS_DTYPE_UINT16, DS_DTYPE_INT32 };
    static char prefix[4200];
    static int32_t ids[300], got[100 * 38], want[38];
    static uint64_t idx[100], docs40[40];
    struct ds_err e = { 0, "" };

    ds_close(open_fixture()); /* makes tmp_root */
    for (int t = 0; t < 2; t++) {
        struct ds_writer *w = NULL;
        struct ds_dataset *d = NULL;
        struct ds_gpt *g = NULL;
        uint64_t n, state = 12345;

        snprintf(prefix, sizeof(prefix), "%s/batch%d", tmp_root, t);
        CHECK_EQ_INT(
            ds_writer_open(&w, prefix, DS_FORMAT_MMAP, dtypes[t], NULL), 0);
        for (int k = 0; k < 40; k++) {
            uint32_t len = 1 + (uint32_t)(k * 37 % 61);

            for (uint32_t i = 0; i < len; i++)
                ids[i] = (int32_t)((k * 1009 + i * 31) % 65000);
            ds_writer_add_sentence(w, ids, len, NULL);
            ds_writer_end_document(w, NULL);
            docs40[k] = (uint64_t)k;
        }
        CHECK_EQ_INT(ds_writer_commit(w, NULL), 0);
        CHECK_EQ_INT(ds_open(&d, prefix, NULL), 0);
        if (d == NULL)
            continue;
        CHECK_EQ_INT(ds_gpt_build(&g, d, docs40, 40, 100, 37, 7, NULL, NULL),
                     0);
        if (g == NULL) {
            ds_close(d);
            continue;
        }
        n = ds_gpt_n_samples(g) < 100 ? ds_gpt_n_samples(g) : 100;
        CHECK(n > 40);
        for (uint64_t k = 0; k < n; k++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            idx[k] = (state >> 33) % ds_gpt_n_samples(g);
        }
        CHECK_EQ_INT(ds_gpt_samples(g, d, idx, (size_t)n, got, NULL), 0);
        for (uint64_t k = 0; k < n; k++) {
            uint64_t rows, ndoc;
            const uint64_t *sh = ds_gpt_shuffle_idx(g, &rows);
            const int32_t *si = ds_gpt_sample_idx(g, &rows);
            const int32_t *di = ds_gpt_doc_idx(g, &ndoc);
            uint64_t j = sh[idx[k]];
            int32_t p = si[2 * j], o = si[2 * j + 1];

            /* The ids as written, walking the window by hand. */
            for (int m = 0; m < 38; m++) {
                want[m] = (int32_t)((di[p] * 1009 + o * 31) % 65000);
                if (++o == (int32_t)(1 + di[p] * 37 % 61)) {
                    p++;
                    o = 0;
                }
            }
            CHECK_EQ_MEM(got + k * 38, want, sizeof(want));
            CHECK_EQ_INT(ds_gpt_sample(g, d, idx[k], want, NULL), 0);
            CHECK_EQ_MEM(got + k * 38, want, sizeof(want));
        }
        idx[n / 2] = ds_gpt_n_samples(g);
        CHECK_EQ_INT(ds_gpt_samples(g, d, idx, (size_t)n, got, &e), DS_ERANGE);
        CHECK(strstr(e.msg, "past") != NULL);
        ds_gpt_free(g);
        ds_close(d);
    }
}

TESTS(ds_gpt, TEST(test_gpt_one_epoch), TEST(test_gpt_separate_last_epoch),
      TEST(test_gpt_cache_hash), TEST(test_gpt_cache_round_trip),
      TEST(test_gpt_cache_race), TEST(test_gpt_cache_no_lock),
      TEST(test_gpt_errors), TEST(test_gpt_samples_batch))
