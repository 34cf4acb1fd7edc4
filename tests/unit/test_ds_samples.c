/* SPDX-License-Identifier: MIT */
/*
 * test_ds_samples.c: unit tests of the training-sample index layer: the
 * MT19937 / MT19937-64 vectors and numpy RandomState draws of spec 7.1,
 * the split_indices, build_mapping and build_blending_indices vectors of
 * spec 10b (produced by PaddleNLP's own code), the cache file's name,
 * round trip, and its refusal of truncated, corrupt and stale files; the
 * cache built once by 4 processes that ask for it at once, and built
 * unlocked where no lock can be had.
 * Files go to a fresh directory under $TMPDIR (default /tmp).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "ds.h"

static void
test_mt32_vectors(void)
{
    static const uint32_t s1234[5] = { 822569775u, 2137449171u, 2671936806u,
                                       3512589365u, 1880026316u };
    struct ds_mt32 g;

    ds_mt32_init(&g, 5489);
    CHECK_EQ_INT(ds_mt32_next(&g), 3499211612u);
    ds_mt32_init(&g, 1234);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(ds_mt32_next(&g), s1234[i]);
    /* The 10000th output of std::mt19937 (default seed), as the C++
     * standard requires. */
    ds_mt32_init(&g, 5489);
    for (int i = 1; i < 10000; i++)
        ds_mt32_next(&g);
    CHECK_EQ_INT(ds_mt32_next(&g), 4123659995u);
}

static void
test_mt64_vectors(void)
{
    struct ds_mt64 g;

    ds_mt64_init(&g, 5489);
    CHECK(ds_mt64_next(&g) == 14514284786278117030ull);
    ds_mt64_init(&g, 1235);
    CHECK(ds_mt64_next(&g) == 12475983374653888083ull);
    CHECK(ds_mt64_next(&g) == 573922149886606219ull);
    CHECK(ds_mt64_next(&g) == 5802434057304372554ull);
    /* The standard's 10000th output of std::mt19937_64. */
    ds_mt64_init(&g, 5489);
    for (int i = 1; i < 10000; i++)
        ds_mt64_next(&g);
    CHECK(ds_mt64_next(&g) == 9981545732273789042ull);
}

static void
test_rs_primitives(void)
{
    struct ds_mt32 g;
    int64_t a[10];
    double p[3] = { 0.2, 0.5, 0.3 };

    /* np.random.RandomState(0).random_sample() == 0.5488135039273248 */
    ds_mt32_init(&g, 0);
    CHECK(ds_rs_random(&g) == 0.5488135039273248);
    /* RandomState(1234).randint(0, 10, size=5) == [3, 6, 5, 4, 8] */
    ds_mt32_init(&g, 1234);
    CHECK_EQ_INT(ds_rs_randint(&g, 0, 10), 3);
    CHECK_EQ_INT(ds_rs_randint(&g, 0, 10), 6);
    CHECK_EQ_INT(ds_rs_randint(&g, 0, 10), 5);
    CHECK_EQ_INT(ds_rs_randint(&g, 0, 10), 4);
    CHECK_EQ_INT(ds_rs_randint(&g, 0, 10), 8);
    /* bounded(0) draws nothing */
    ds_mt32_init(&g, 7);
    CHECK_EQ_INT(ds_rs_bounded(&g, 0), 0);
    CHECK_EQ_INT(g.pos, 624);
    /* x = np.arange(10); RandomState(42).shuffle(x) ->
     * [8, 1, 5, 0, 7, 2, 9, 4, 3, 6] */
    for (int i = 0; i < 10; i++)
        a[i] = i;
    ds_mt32_init(&g, 42);
    ds_rs_shuffle(&g, a, 10, sizeof(a[0]));
    {
        static const int64_t want[10] = { 8, 1, 5, 0, 7, 2, 9, 4, 3, 6 };

        CHECK_EQ_MEM(a, want, sizeof(want));
    }
    /* RandomState(3).choice(3, p=[.2,.5,.3]) == 1 (u = 0.5507979) */
    ds_mt32_init(&g, 3);
    CHECK_EQ_INT(ds_rs_choice(&g, p, 3), 1);
}

static void
test_split_vectors(void)
{
    int64_t o[4];
    struct ds_err e;

    CHECK_EQ_INT(ds_split_indices("949,50,1", 1000, o, &e), 0);
    CHECK(o[0] == 0 && o[1] == 949 && o[2] == 999 && o[3] == 1000);
    CHECK_EQ_INT(ds_split_indices("949,50,1", 7, o, &e), 0);
    CHECK(o[0] == 0 && o[1] == 7 && o[2] == 7 && o[3] == 7);
    CHECK_EQ_INT(ds_split_indices("98,2,0", 333, o, &e), 0);
    CHECK(o[0] == 0 && o[1] == 326 && o[2] == 333 && o[3] == 333);
    /* half-even: 2.5 -> 2 twice, then the missing document goes back */
    CHECK_EQ_INT(ds_split_indices("1/1", 5, o, &e), 0);
    CHECK(o[1] == 3 && o[2] == 5 && o[3] == 5);
    CHECK_EQ_INT(ds_split_indices("1", 4, o, &e), 0);
    CHECK(o[1] == 4 && o[3] == 4);
    CHECK_EQ_INT(ds_split_indices("0,0,0", 4, o, &e), DS_EINVAL);
    CHECK_EQ_INT(ds_split_indices("9x,1", 4, o, &e), DS_EINVAL);
    CHECK_EQ_INT(ds_split_indices("-1,2", 4, o, &e), DS_EINVAL);
    CHECK_EQ_INT(ds_split_indices("0,1,1", 3, o, &e), DS_ERANGE);
    CHECK(o[1] == -1 && o[2] == 1 && o[3] == 3);
}

static const int32_t v_sizes[15] = { 30, 40, 50, 20,  20, 600, 10, 5,
                                     70, 80, 90, 100, 15, 15,  15 };
static const int64_t v_docs[7] = { 0, 3, 5, 7, 8, 12, 15 };

static const uint32_t v_map1[20][3] = {
    { 8, 10, 8 },    { 12, 15, 44 },  { 8, 10, 24 }, { 3, 5, 68 },
    { 10, 12, 68 },  { 3, 5, 77 },    { 8, 10, 82 }, { 0, 3, 100 },
    { 12, 15, 44 },  { 10, 12, 58 },  { 8, 10, 28 }, { 0, 3, 74 },
    { 12, 15, 100 }, { 12, 15, 77 },  { 0, 3, 100 }, { 3, 5, 68 },
    { 0, 3, 100 },   { 10, 12, 100 }, { 3, 5, 100 }, { 10, 12, 27 }
};
static const uint32_t v_map2[12][3] = {
    { 12, 15, 100 }, { 8, 10, 100 },  { 10, 12, 100 }, { 7, 8, 100 },
    { 7, 8, 100 },   { 3, 5, 100 },   { 3, 5, 100 },   { 12, 15, 100 },
    { 0, 3, 100 },   { 10, 12, 100 }, { 0, 3, 100 },   { 8, 10, 100 }
};

static const struct ds_mapping_params v_p1 = { 20,   DS_MAPPING_EPOCHS_ANY,
                                               100,  0.5,
                                               1234, 2 };
static const struct ds_mapping_params v_p2 = { 10,   DS_MAPPING_EPOCHS_ANY,
                                               100,  0.0,
                                               1234, 1 };

static void
test_mapping_vectors(void)
{
    struct ds_mapping *m;
    struct ds_err e;

    CHECK_EQ_INT(ds_mapping_build(&m, v_docs, 6, v_sizes, 15, &v_p1, &e), 0);
    CHECK_EQ_INT(ds_mapping_n(m), 20);
    CHECK_EQ_INT(ds_mapping_dtype(m), DS_DTYPE_UINT32);
    CHECK_EQ_MEM(ds_mapping_rows(m), v_map1, sizeof(v_map1));
    ds_mapping_free(m);
    CHECK_EQ_INT(ds_mapping_build(&m, v_docs, 6, v_sizes, 15, &v_p2, &e), 0);
    CHECK_EQ_INT(ds_mapping_n(m), 12);
    CHECK_EQ_MEM(ds_mapping_rows(m), v_map2, sizeof(v_map2));
    {
        uint64_t row[3];

        ds_mapping_row(m, 11, row);
        CHECK(row[0] == 8 && row[1] == 10 && row[2] == 100);
    }
    ds_mapping_free(m);
}

static void
test_mapping_errors(void)
{
    struct ds_mapping *m;
    struct ds_err e;
    struct ds_mapping_params p = v_p1;
    static const int64_t bad_docs[3] = { 0, 5, 3 };
    static const int64_t only_long[2] = { 5, 7 }; /* 600 + 10 */

    p.max_seq_len = 1;
    CHECK_EQ_INT(ds_mapping_build(&m, v_docs, 6, v_sizes, 15, &p, &e),
                 DS_EINVAL);
    p = v_p1;
    p.short_seq_prob = 1.5;
    CHECK_EQ_INT(ds_mapping_build(&m, v_docs, 6, v_sizes, 15, &p, &e),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_mapping_build(&m, bad_docs, 2, v_sizes, 15, &v_p1, &e),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_mapping_build(&m, v_docs, 6, v_sizes, 14, &v_p1, &e),
                 DS_EINVAL);
    CHECK_EQ_INT(ds_mapping_build(&m, only_long, 1, v_sizes, 15, &v_p1, &e),
                 DS_EINVAL);
    CHECK(strstr(e.msg, "yields") != NULL);
    CHECK(m == NULL);
    /* max_num_samples 0: an empty mapping, as helpers.cpp */
    p = v_p1;
    p.max_num_samples = 0;
    CHECK_EQ_INT(ds_mapping_build(&m, only_long, 1, v_sizes, 15, &p, &e), 0);
    CHECK_EQ_INT(ds_mapping_n(m), 0);
    ds_mapping_free(m);
}

static void
test_mapping_cache(void)
{
    char dir[] = "/tmp/test_ds_samples.XXXXXX", prefix[64];
    struct ds_mapping *m, *m2;
    struct ds_err e;
    char *name;
    int built = -1;
    FILE *f;
    long len;

    if (mkdtemp(dir) == NULL)
        SKIP("mkdtemp failed");
    snprintf(prefix, sizeof(prefix), "%s/wudao", dir);
    {
        struct ds_mapping_params p = { 512000000, DS_MAPPING_EPOCHS_ANY,
                                       509,       0.1,
                                       1234,      2 };

        name = ds_mapping_cache_name("data/wudao", "train", &p);
        CHECK_EQ_STR(name, "data/wudao_train_indexmap_512000000mns_509msl_"
                           "0.10ssp_1234s.npy");
        free(name);
        p.num_epochs = 3;
        name = ds_mapping_cache_name("x", "valid", &p);
        CHECK_EQ_STR(
            name, "x_valid_indexmap_3ep_512000000mns_509msl_0.10ssp_1234s.npy");
        free(name);
    }
    CHECK_EQ_INT(ds_mapping_get(&m, prefix, "train", v_docs, 6, v_sizes, 15,
                                &v_p1, &built, &e),
                 0);
    CHECK_EQ_INT(built, 1);
    CHECK_EQ_MEM(ds_mapping_rows(m), v_map1, sizeof(v_map1));
    ds_mapping_free(m);
    CHECK_EQ_INT(ds_mapping_get(&m2, prefix, "train", v_docs, 6, v_sizes, 15,
                                &v_p1, &built, &e),
                 0);
    CHECK_EQ_INT(built, 0);
    CHECK_EQ_INT(ds_mapping_n(m2), 20);
    CHECK_EQ_MEM(ds_mapping_rows(m2), v_map1, sizeof(v_map1));
    ds_mapping_free(m2);

    name = ds_mapping_cache_name(prefix, "train", &v_p1);
    /* the file is np.save's: 128-byte header + 20 * 12 bytes */
    f = fopen(name, "rb");
    CHECK(f != NULL);
    if (f) {
        char hdr[129] = { 0 };

        CHECK_EQ_INT(fread(hdr, 1, 128, f), 128);
        fseek(f, 0, SEEK_END);
        len = ftell(f);
        CHECK_EQ_INT(len, 128 + 240);
        CHECK(strstr(hdr + 10, "{'descr': '<u4', 'fortran_order': False, "
                               "'shape': (20, 3), }") == hdr + 10);
        fclose(f);
    }
    /* truncated: detected, then rebuilt by get */
    CHECK_EQ_INT(truncate(name, 128 + 239), 0);
    CHECK_EQ_INT(ds_mapping_load(&m, name, v_docs, 6, 15, &v_p1, &e),
                 DS_EFORMAT);
    CHECK(strstr(e.msg, "rows need") != NULL);
    CHECK_EQ_INT(ds_mapping_get(&m, prefix, "train", v_docs, 6, v_sizes, 15,
                                &v_p1, &built, &e),
                 0);
    CHECK_EQ_INT(built, 1);
    ds_mapping_free(m);
    /* stale: other documents (rows cross a document boundary) */
    {
        static const int64_t other[4] = { 0, 2, 9, 15 };

        CHECK_EQ_INT(ds_mapping_load(&m, name, other, 3, 15, &v_p1, &e),
                     DS_EFORMAT);
        CHECK(strstr(e.msg, "stale") != NULL);
    }
    /* corrupt header */
    f = fopen(name, "r+b");
    if (f) {
        fseek(f, 20, SEEK_SET);
        fputc('X', f);
        fclose(f);
    }
    CHECK_EQ_INT(ds_mapping_load(&m, name, v_docs, 6, 15, &v_p1, &e),
                 DS_EFORMAT);
    CHECK_EQ_INT(
        ds_mapping_load(&m, "/nonexistent/x.npy", v_docs, 6, 15, &v_p1, &e),
        DS_EIO);
    {
        char lock[160]; /* the builder's lock file stays (see above) */

        snprintf(lock, sizeof(lock), "%s.lock", name);
        unlink(lock);
    }
    unlink(name);
    free(name);
    CHECK_EQ_INT(rmdir(dir), 0); /* nothing left behind */
}

#define N_RACE 4

/* What one racing process saw. */
struct race_rec {
    int rc, built;
    uint64_t n;
    uint32_t rows[20][3];
};

static void
test_mapping_cache_race(void)
{
    char dir[] = "/tmp/test_ds_samples.XXXXXX", prefix[64], *name;
    int go[2], res[2], n_built = 0, n_ok = 0;
    pid_t pid[N_RACE];

    if (mkdtemp(dir) == NULL)
        SKIP("mkdtemp failed");
    if (pipe(go) < 0 || pipe(res) < 0)
        SKIP("pipe failed");
    snprintf(prefix, sizeof(prefix), "%s/wudao", dir);
    for (int i = 0; i < N_RACE; i++) {
        if ((pid[i] = fork()) == 0) {
            struct race_rec r;
            struct ds_mapping *m = NULL;
            char c;

            memset(&r, 0, sizeof(r));
            close(go[1]);
            close(res[0]);
            /* all start when the parent closes go[1] */
            if (read(go[0], &c, 1) != 0)
                _exit(2);
            r.rc = ds_mapping_get(&m, prefix, "train", v_docs, 6, v_sizes, 15,
                                  &v_p1, &r.built, NULL);
            if (m != NULL) {
                r.n = ds_mapping_n(m);
                if (r.n == 20)
                    memcpy(r.rows, ds_mapping_rows(m), sizeof(r.rows));
            }
            ds_mapping_free(m);
            /* one write under PIPE_BUF: atomic */
            _exit(write(res[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3);
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
        CHECK_EQ_INT(r.n, 20);
        CHECK_EQ_MEM(r.rows, v_map1, sizeof(v_map1));
        n_built += r.built;
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

    name = ds_mapping_cache_name(prefix, "train", &v_p1);
    if (name != NULL) {
        char lock[128];

        snprintf(lock, sizeof(lock), "%s.lock", name);
        CHECK(access(lock, F_OK) != 0); /* removed by the builder */
        unlink(lock);
        unlink(name);
        free(name);
    }
    rmdir(dir);
}

/* Where no lock can be had the cache is built unlocked; a valid cache is
 * read without one (a read-only cache directory). */
static void
test_mapping_cache_no_lock(void)
{
    char dir[] = "/tmp/test_ds_samples.XXXXXX", prefix[64], lock[160];
    struct ds_mapping *m = NULL;
    struct ds_err e;
    char *name;
    int built = -1;

    if (mkdtemp(dir) == NULL)
        SKIP("mkdtemp failed");
    snprintf(prefix, sizeof(prefix), "%s/wudao", dir);
    name = ds_mapping_cache_name(prefix, "train", &v_p1);
    if (name == NULL)
        SKIP("out of memory");
    snprintf(lock, sizeof(lock), "%s.lock", name);
    /* a lock file that cannot be opened, even by root */
    CHECK_EQ_INT(symlink("/nonexistent/dir/lock", lock), 0);
    CHECK_EQ_INT(ds_mapping_get(&m, prefix, "train", v_docs, 6, v_sizes, 15,
                                &v_p1, &built, &e),
                 0);
    CHECK_EQ_INT(built, 1);
    if (m != NULL)
        CHECK_EQ_MEM(ds_mapping_rows(m), v_map1, sizeof(v_map1));
    ds_mapping_free(m);
    m = NULL;
    unlink(lock);
    /* A read-only directory: the valid cache is loaded, no lock made. */
    CHECK_EQ_INT(chmod(dir, 0555), 0);
    CHECK_EQ_INT(ds_mapping_get(&m, prefix, "train", v_docs, 6, v_sizes, 15,
                                &v_p1, &built, &e),
                 0);
    CHECK_EQ_INT(built, 0);
    if (m != NULL)
        CHECK_EQ_MEM(ds_mapping_rows(m), v_map1, sizeof(v_map1));
    ds_mapping_free(m);
    m = NULL;
    CHECK(access(lock, F_OK) != 0);
    /* Missing there: built unlocked; saving fails as before (not as root,
     * who writes anyway). */
    if (geteuid() != 0) {
        CHECK_EQ_INT(ds_mapping_get(&m, prefix, "valid", v_docs, 6, v_sizes, 15,
                                    &v_p1, &built, &e),
                     DS_EIO);
        CHECK_EQ_INT(built, 1);
        CHECK(m == NULL);
    }
    chmod(dir, 0700);
    unlink(name);
    free(name);
    rmdir(dir);
}

static void
test_blend_vectors(void)
{
    double w[2] = { 0.7, 0.3 };
    uint16_t di[10];
    int64_t dsi[10];
    static const uint16_t want_di[10] = { 0, 1, 0, 0, 1, 0, 0, 1, 0, 0 };
    static const int64_t want_dsi[10] = { 0, 0, 1, 2, 1, 3, 4, 2, 5, 6 };
    uint64_t counts[2];
    double raw[2] = { 3, 1 };
    struct ds_err e;

    CHECK_EQ_INT(ds_blend_build(w, 2, 10, di, dsi, &e), 0);
    CHECK_EQ_MEM(di, want_di, sizeof(want_di));
    CHECK_EQ_MEM(dsi, want_dsi, sizeof(want_dsi));
    /* ceil(1000 * 0.75 * 1.005) = 754, ceil(1000 * 0.25 * 1.005) = 252 */
    CHECK_EQ_INT(ds_blend_counts(raw, 2, 1000, counts, &e), 0);
    CHECK_EQ_INT(counts[0], 754);
    CHECK_EQ_INT(counts[1], 252);
    CHECK_EQ_INT(ds_blend_normalize(raw, 2, &e), 0);
    CHECK(raw[0] == 0.75 && raw[1] == 0.25);
    raw[0] = raw[1] = 0;
    CHECK_EQ_INT(ds_blend_counts(raw, 2, 10, counts, &e), DS_EINVAL);
    CHECK_EQ_INT(ds_blend_build(w, 0, 10, di, dsi, &e), DS_EINVAL);
}

TESTS(test_ds_samples, TEST(test_mt32_vectors), TEST(test_mt64_vectors),
      TEST(test_rs_primitives), TEST(test_split_vectors),
      TEST(test_mapping_vectors), TEST(test_mapping_errors),
      TEST(test_mapping_cache), TEST(test_mapping_cache_race),
      TEST(test_mapping_cache_no_lock), TEST(test_blend_vectors))
