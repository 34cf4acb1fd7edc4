/* SPDX-License-Identifier: MIT */
/*
 * test_lac.c: the LAC engine (libtok/tok_lac_*.c) on a tiny package written
 * by tests/lac_fixture.h: compiling and its errors, the model's checks,
 * the kernels (every SIMD path bit for bit against the scalar one), the
 * batch's paths (groups, texts alone, the long-text windows) against each
 * other and against a plain implementation of the network written here
 * from its definition, LAC's pre-segmentation and q2b rules, and user
 * dictionaries.  With the real model ($LAC_MODEL, built from LAC 2.1.2)
 * a few sentences against LAC's own output; the suite
 * tests/conformance/lac_run.py compares whole corpora.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../harness.h"
#include "../harness_files.h"
#include "../lac_fixture.h"
#include "tok.h"
#include "tok_lac_int.h"

/* The fixture compiled once: its directory and model. */
static char fixture_dir[4400], fixture_model[4500];

static const char *
fixture(void)
{
    struct tok_err e;

    if (fixture_model[0] == '\0') {
        const char *d = test_dir("fixture");

        snprintf(fixture_dir, sizeof(fixture_dir), "%s", d);
        if (lac_fixture_write(fixture_dir) < 0) {
            fprintf(stderr, "cannot write the fixture\n");
            exit(1);
        }
        snprintf(fixture_model, sizeof(fixture_model), "%s/lac.model",
                 fixture_dir);
        if (tok_lac_compile(fixture_dir, fixture_model, "fixture", &e) < 0) {
            fprintf(stderr, "compile: %s\n", e.msg);
            exit(1);
        }
    }
    return fixture_model;
}

static struct tok_lac *
open_fixture(void)
{
    struct tok_lac *l = NULL;
    struct tok_err e;

    if (tok_lac_open(&l, fixture(), 0, &e) < 0)
        fprintf(stderr, "open: %s\n", e.msg);
    return l;
}

/* The words of text under network mode, as "w1|w2|..." and tags "t1|..."
 * (static buffers). */
static const char *
cut(const struct tok_lac *l, enum tok_lac_mode mode, const char *text,
    const char **tags)
{
    static char out[4096], tg[4096];
    struct tok_lac_batch *b;
    struct tok_lac_words w;
    struct tok_err e;
    size_t at = 0, tat = 0, len;
    const char *s;

    out[0] = tg[0] = '\0';
    if (tok_lac_batch_new(&b, l, mode, &e) < 0)
        return NULL;
    tok_lac_words_init(&w);
    if (tok_lac_batch_add(b, text, strlen(text), 0, &e) < 0 ||
        tok_lac_batch_run(b, &e) < 0 || tok_lac_batch_words(b, 0, &w, &e) < 0)
        return NULL;
    s = tok_lac_batch_text(b, 0, &len);
    for (size_t k = 0; k < w.n; k++) {
        size_t tl;
        const char *t = tok_lac_tag_name(l, w.tags[k], &tl);

        at +=
            (size_t)snprintf(out + at, sizeof(out) - at, "%s%.*s", k ? "|" : "",
                             (int)(w.ends[k] - w.starts[k]), s + w.starts[k]);
        tat += (size_t)snprintf(tg + tat, sizeof(tg) - tat, "%s%.*s",
                                k ? "|" : "", (int)tl, t);
    }
    tok_lac_words_release(&w);
    tok_lac_batch_free(b);
    if (tags)
        *tags = tg;
    return out;
}

/* ------------------------------------------------------------------------ */

static void
test_lac_compile_open(void)
{
    struct tok_lac *l = open_fixture();
    const struct tok_lac_mode_data *m;

    CHECK(l != NULL);
    if (l == NULL)
        return;
    CHECK_EQ_STR(tok_lac_provenance(l), "fixture");
    m = &l->mode[TOK_LAC_LAC];
    CHECK(m->present && l->mode[TOK_LAC_SEG].present);
    CHECK_EQ_INT(m->net.L, 9);
    CHECK_EQ_INT(m->net.D, 5);
    CHECK_EQ_INT(l->mode[TOK_LAC_SEG].net.E, 0); /* the projection table */
    CHECK(l->mode[TOK_LAC_SEG].net.proj0 != NULL && m->net.emb != NULL);
    /* tag.dic's later line for id 6 wins; "07" is no id's key. */
    CHECK_EQ_STR(l->tags.v[m->tag_of[6]].s, "PER-B");
    CHECK_EQ_STR(l->tags.v[m->tag_of[7]].s, "O");
    CHECK_EQ_STR(l->tags.v[m->tag_of[1]].s, "n-I");
    tok_lac_close(l);
}

static void
test_lac_q2b_and_oov(void)
{
    struct tok_lac *l = open_fixture();
    const struct tok_lac_mode_data *m;

    if (l == NULL) {
        CHECK(0);
        return;
    }
    m = &l->mode[TOK_LAC_SEG];
    /* ids are word.dic's line ids: A is 7, B 8, 高 14, OOV 20. */
    CHECK_EQ_INT(tok_lac_char_id(m, 0x9AD8), 14); /* 高 */
    CHECK_EQ_INT(tok_lac_char_id(m, 0x81FA), 14); /* 臺 -> 高 */
    CHECK_EQ_INT(tok_lac_char_id(m, 'A'), 8);     /* A -> B */
    CHECK_EQ_INT(tok_lac_char_id(m, 0xFF21), 7);  /* Ａ -> A, once */
    CHECK_EQ_INT(tok_lac_char_id(m, 0xFF11), 5);  /* １ -> 1 */
    CHECK_EQ_INT(tok_lac_char_id(m, 0x20BB7), 19);
    CHECK_EQ_INT(tok_lac_char_id(m, 'z'), 20);
    CHECK_EQ_INT(tok_lac_char_id(m, 0x10FFFF), 20);
    CHECK_EQ_INT(tok_lac_char_id(&l->mode[TOK_LAC_LAC], 'z'), 25);
    tok_lac_close(l);
}

/* Words always cover their text, in order. */
static void
test_lac_words_cover(void)
{
    static const char *const texts[] = { "百度是一家高科技公司",
                                         "ab12 c\tAB",
                                         "",
                                         " ",
                                         "𠮷𠮷z臺",
                                         "Ａ１ａ",
                                         "高科技",
                                         "a",
                                         "一家一家一家一家一家一家一家" };
    struct tok_lac *l = open_fixture();

    if (l == NULL) {
        CHECK(0);
        return;
    }
    for (int mode = 0; mode < 2; mode++)
        for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
            const char *w = cut(l, (enum tok_lac_mode)mode, texts[k], NULL);
            char joined[4096];
            size_t n = 0;

            CHECK(w != NULL);
            if (w == NULL)
                continue;
            for (const char *p = w; *p; p++)
                if (*p != '|')
                    joined[n++] = *p;
            joined[n] = '\0';
            CHECK_EQ_STR(joined, texts[k]);
        }
    tok_lac_close(l);
}

/* The `lac` network: a token of the pre-segmentation that is a word of
 * word.dic is one position, so one word (its other characters take
 * t[:-2] + "-I"); runs of single ASCII letters and digits are one token. */
static void
test_lac_presegmentation(void)
{
    struct tok_lac *l = open_fixture();

    if (l == NULL) {
        CHECK(0);
        return;
    }
    /* 高科技: small_seg scores a word by log(len), so one word of three
     * beats 高科 + 技 and 高 + 科技 whatever their counts. */
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "高科技", NULL), "高科技");
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "百度", NULL), "百度");
    /* "1" "2" merged into "12", a word of word.dic. */
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "12", NULL), "12");
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "ab", NULL), "ab");
    tok_lac_close(l);
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */

static float
frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 9) & 0x7FFF) / 4096.0f - 4.0f;
}

static void
test_lac_kernels_agree(void)
{
    size_t nk;
    const struct tok_lac_kernels *const *all = tok_lac_kernels_all(&nk);
    static const size_t shapes[][3] = { { 1, 1, 1 },    { 13, 37, 11 },
                                        { 9, 288, 96 }, { 17, 4, 192 },
                                        { 8, 49, 256 }, { 3, 16, 5 } };
    uint32_t seed = 7;

    CHECK(nk >= 1 && strcmp(all[0]->name, "scalar") == 0);
    printf("# kernels on this CPU:");
    for (size_t k = 0; k < nk; k++)
        printf(" %s", all[k]->name);
    printf("\n");
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = malloc(M * K * sizeof(float));
        float *W = malloc(K * N * sizeof(float));
        float *C0 = malloc(M * N * sizeof(float));
        float *C1 = malloc(M * N * sizeof(float));
        const float **ar = malloc(M * sizeof(*ar));
        float **c0 = malloc(M * sizeof(*c0)), **c1 = malloc(M * sizeof(*c1));

        for (size_t i = 0; i < M * K; i++)
            A[i] = frand(&seed);
        for (size_t i = 0; i < K * N; i++)
            W[i] = frand(&seed) / 8.0f;
        for (size_t i = 0; i < M; i++) {
            ar[i] = A + i * K;
            c0[i] = C0 + i * N;
            c1[i] = C1 + i * N;
        }
        for (size_t k = 1; k < nk; k++)
            for (int acc = 0; acc < 2; acc++) {
                for (size_t i = 0; i < M * N; i++)
                    C0[i] = C1[i] = frand(&seed);
                all[0]->gemm(M, N, K, ar, W, N, c0, acc);
                all[k]->gemm(M, N, K, ar, W, N, c1, acc);
                CHECK_EQ_MEM(C0, C1, M * N * sizeof(float));
            }
        free(A);
        free(W);
        free(C0);
        free(C1);
        free(ar);
        free(c0);
        free(c1);
    }
    /* The gates, over the whole range of exp's clamp. */
    for (size_t D = 1; D <= 40; D += 13) {
        size_t M = 5;
        float *g = malloc(M * 3 * D * sizeof(float));
        float *gur = malloc(M * 2 * D * sizeof(float));
        float *gc = malloc(M * D * sizeof(float));
        float *h0 = malloc(M * D * sizeof(float));
        float *u[2], *rh[2], *h[2];
        const float **gr = malloc(M * sizeof(*gr));

        for (size_t i = 0; i < M * 3 * D; i++)
            g[i] = frand(&seed) * (i % 3 ? 30.0f : 1.0f);
        for (size_t i = 0; i < M * 2 * D; i++)
            gur[i] = frand(&seed);
        for (size_t i = 0; i < M * D; i++) {
            gc[i] = frand(&seed) * 12.0f;
            h0[i] = frand(&seed) / 4.0f;
        }
        g[0] = NAN;
        for (size_t i = 0; i < M; i++)
            gr[i] = g + i * 3 * D;
        for (int v = 0; v < 2; v++) {
            u[v] = malloc(M * D * sizeof(float));
            rh[v] = malloc(M * D * sizeof(float));
            h[v] = malloc(M * D * sizeof(float));
        }
        for (size_t k = 1; k < nk; k++)
            for (int zero = 0; zero < 4; zero++) {
                /* zero & 1: no products; zero & 2: a bias. */
                const float *bias = zero & 2 ? gur : NULL;

                for (int v = 0; v < 2; v++) {
                    const struct tok_lac_kernels *kk = v ? all[k] : all[0];

                    memcpy(h[v], h0, M * D * sizeof(float));
                    kk->gates_ur(M, D, gr, bias, zero & 1 ? NULL : gur, h[v],
                                 u[v], rh[v]);
                    kk->gates_c(M, D, gr, bias, zero & 1 ? NULL : gc, u[v],
                                h[v]);
                }
                CHECK_EQ_MEM(u[0], u[1], M * D * sizeof(float));
                CHECK_EQ_MEM(rh[0], rh[1], M * D * sizeof(float));
                CHECK_EQ_MEM(h[0], h[1], M * D * sizeof(float));
            }
        for (int v = 0; v < 2; v++) {
            free(u[v]);
            free(rh[v]);
            free(h[v]);
        }
        free(g);
        free(gur);
        free(gc);
        free(h0);
        free(gr);
    }
}

/* Viterbi steps: every kernel picks the same first maximum, ties (scores
 * on a coarse grid) and NaN included. */
static void
test_lac_viterbi_agree(void)
{
    size_t nk;
    const struct tok_lac_kernels *const *all = tok_lac_kernels_all(&nk);
    uint32_t seed = 3;

    for (size_t L = 1; L <= 60; L += 7) {
        float *prev = malloc(L * sizeof(float)), *e = malloc(L * sizeof(float));
        float *tr = malloc(L * L * sizeof(float));
        float *a0 = malloc(L * sizeof(float)), *a1 = malloc(L * sizeof(float));
        uint8_t *t0 = malloc(L), *t1 = malloc(L);

        for (int round = 0; round < 20; round++) {
            for (size_t i = 0; i < L; i++) {
                prev[i] = (float)(int)frand(&seed);
                e[i] = frand(&seed);
            }
            for (size_t i = 0; i < L * L; i++)
                tr[i] = (float)(int)frand(&seed);
            if (round == 1)
                prev[L / 2] = NAN;
            if (round == 2)
                for (size_t i = 0; i < L; i++)
                    prev[i] = -INFINITY;
            for (size_t k = 1; k < nk; k++) {
                all[0]->viterbi(L, prev, tr, e, a0, t0);
                all[k]->viterbi(L, prev, tr, e, a1, t1);
                CHECK_EQ_MEM(a0, a1, L * sizeof(float));
                CHECK_EQ_MEM(t0, t1, L);
            }
        }
        free(prev);
        free(e);
        free(tr);
        free(a0);
        free(a1);
        free(t0);
        free(t1);
    }
}

/* exp within 2 ulp of the true value, sigmoid and tanh within 3e-7 of
 * double precision (inside their clamps). */
static void
test_lac_exp_accuracy(void)
{
    double worst = 0, worst_s = 0, worst_t = 0;

    for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
        double t = exp((double)x), got = tok_lac_expf(x);
        double ulp = ldexp(1.0, ilogb(t) - 23);

        if (fabs(got - t) / ulp > worst)
            worst = fabs(got - t) / ulp;
    }
    for (float x = -30.0f; x <= 13.0f; x += 0.00731f) {
        double s = 1.0 / (1.0 + exp(-(double)x));
        double th = tanh((double)x);

        if (fabs(tok_lac_sigmoid(x) - s) > worst_s)
            worst_s = fabs(tok_lac_sigmoid(x) - s);
        if (fabs(tok_lac_tanh(x) - th) > worst_t)
            worst_t = fabs(tok_lac_tanh(x) - th);
    }
    printf("# exp: %.2f ulp at worst; sigmoid %.2g, tanh %.2g\n", worst,
           worst_s, worst_t);
    CHECK(worst <= 2.0);
    CHECK(worst_s <= 3e-7);
    CHECK(worst_t <= 3e-7);
    /* Paddle's clamp: sigmoid(x) for x > 13 is sigmoid(13). */
    CHECK(tok_lac_sigmoid(50.0f) == tok_lac_sigmoid(13.0f));
    CHECK(tok_lac_sigmoid(-50.0f) == tok_lac_sigmoid(-40.0f));
    CHECK(tok_lac_tanh(-100.0f) == -1.0f && tok_lac_tanh(100.0f) == 1.0f);
}

/* ------------------------------------------------------------------------ */
/* The network, plainly, for one text of ids (no batching, no windows)      */

static void
plain_gru(const struct tok_lac_net *net, int k, const float *const *g, size_t n,
          bool reverse, float *out, size_t ld)
{
    size_t D = net->D;
    const float *wur = net->w_gru[k], *wc = net->w_gru[k] + D * 2 * D;
    float *h = calloc(D, sizeof(float)), *u = malloc(D * sizeof(float));
    float *r = malloc(D * sizeof(float)), *rh = malloc(D * sizeof(float));

    for (size_t s = 0; s < n; s++) {
        size_t t = reverse ? n - 1 - s : s;

        for (size_t j = 0; j < 2 * D; j++) {
            float acc = 0.0f;

            for (size_t q = 0; q < D; q++)
                acc = fmaf(h[q], wur[q * 2 * D + j], acc);
            (j < D ? u : r)[j % D] = tok_lac_sigmoid(g[t][j] + acc);
        }
        for (size_t j = 0; j < D; j++)
            rh[j] = r[j] * h[j];
        for (size_t j = 0; j < D; j++) {
            float acc = 0.0f, c;

            for (size_t q = 0; q < D; q++)
                acc = fmaf(rh[q], wc[q * D + j], acc);
            c = tok_lac_tanh(g[t][2 * D + j] + acc);
            h[j] = (h[j] - u[j] * h[j]) + u[j] * c;
        }
        memcpy(out + t * ld, h, D * sizeof(float));
    }
    free(h);
    free(u);
    free(r);
    free(rh);
}

/* The gates' inputs of GRU k at each position: x W + b (the biases summed
 * first), or the seg network's table. */
static float **
plain_inputs(const struct tok_lac_net *net, int k, const uint32_t *ids,
             const float *x, size_t n)
{
    size_t D = net->D, in = k < 2 ? net->E : 2 * D;
    float **g = malloc(n * sizeof(*g));

    for (size_t t = 0; t < n; t++) {
        g[t] = malloc(3 * D * sizeof(float));
        if (k < 2 && net->proj0) {
            memcpy(g[t], net->proj0 + (size_t)ids[t] * 6 * D + k * 3 * D,
                   3 * D * sizeof(float));
            continue;
        }
        for (size_t j = 0; j < 3 * D; j++) {
            const float *xt =
                k < 2 ? net->emb + (size_t)ids[t] * net->E : x + t * 2 * D;
            float acc = 0.0f;

            for (size_t q = 0; q < in; q++)
                acc = fmaf(xt[q], net->w_in[k][q * 3 * D + j], acc);
            g[t][j] = acc + (net->b_in[k][j] + net->b_gru[k][j]);
        }
    }
    return g;
}

static double
plain_margin(const struct tok_lac_net *net, const uint32_t *ids, size_t n)
{
    size_t D = net->D, L = net->L;
    float *l0 = malloc(n * 2 * D * sizeof(float));
    float *l1 = malloc(n * 2 * D * sizeof(float));
    float *em = malloc(n * L * sizeof(float));
    double m;

    for (int k = 0; k < 4; k++) {
        float **g = plain_inputs(net, k, ids, l0, n);

        plain_gru(net, k, (const float *const *)g, n, k % 2,
                  (k < 2 ? l0 : l1) + (k % 2) * D, 2 * D);
        for (size_t t = 0; t < n; t++)
            free(g[t]);
        free(g);
    }
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < L; j++) {
            float acc = 0.0f;

            for (size_t q = 0; q < 2 * D; q++)
                acc = fmaf(l1[t * 2 * D + q], net->w_out[q * L + j], acc);
            em[t * L + j] = acc + net->b_out[j];
        }
    m = tok_lac_viterbi_margin(em, n, L, net->crf);
    free(l0);
    free(l1);
    free(em);
    return m;
}

/* Random texts over the fixture's characters (and a few others), some
 * longer than a small window. */
static size_t
random_text(uint32_t *s, char *out, size_t max_chars)
{
    static const char *const extra[] = { "z", "\xe8\x87\xba", "\xef\xbc\xa1" };
    size_t n = 1 + (*s = *s * 1664525u + 1013904223u) % max_chars, at = 0;

    for (size_t k = 0; k < n; k++) {
        uint32_t r = (*s = *s * 1664525u + 1013904223u) >> 8;
        const char *c = r % 8 == 0 ? extra[r % 3]
                                   : lac_fixture_chars[r % LAC_FIXTURE_N_CHARS];

        memcpy(out + at, c, strlen(c));
        at += strlen(c);
    }
    return at;
}

/* Every path gives the same tags and margins: one batch, each text
 * alone, small groups with the long-text windows, scalar kernels; and the
 * margins equal those of the plain network (seg: ids are characters). */
static void
test_lac_paths_agree(void)
{
    struct tok_lac *l = open_fixture();
    enum { N_TEXTS = 90 };
    static char texts[N_TEXTS][1024];
    static size_t lens[N_TEXTS];
    uint32_t seed = 99;

    if (l == NULL) {
        CHECK(0);
        return;
    }
    for (size_t i = 0; i < N_TEXTS; i++)
        lens[i] = random_text(&seed, texts[i],
                              i % 10 == 0  ? 200
                              : i % 3 == 0 ? 4
                                           : 30);
    for (int mode = 0; mode < 2; mode++) {
        struct tok_lac_batch *b[5];
        struct tok_lac_words w[5];
        struct tok_err e;

        for (int v = 0; v < 5; v++) {
            CHECK(tok_lac_batch_new(&b[v], l, (enum tok_lac_mode)mode, &e) ==
                  0);
            tok_lac_batch_want_margins(b[v], true);
            tok_lac_words_init(&w[v]);
        }
        tok_lac_batch_set_limits(b[2], 3, 7);
        /* Lanes of several texts, fewer than the kernels' 8 rows. */
        tok_lac_batch_set_limits(b[4], 5, 60);
        tok_lac_batch_set_kernels(b[3], tok_lac_kernels_all(&(size_t){ 0 })[0]);
        for (size_t i = 0; i < N_TEXTS; i++)
            for (int v = 0; v < 5; v++)
                if (v != 1)
                    tok_lac_batch_add(b[v], texts[i], lens[i], 0, &e);
        for (int v = 0; v < 5; v++)
            if (v != 1)
                CHECK(tok_lac_batch_run(b[v], &e) == 0);
        for (size_t i = 0; i < N_TEXTS; i++) {
            double m1;

            /* Alone, in a batch reused (cleared) each time. */
            tok_lac_batch_clear(b[1]);
            tok_lac_batch_add(b[1], texts[i], lens[i], 0, &e);
            CHECK(tok_lac_batch_run(b[1], &e) == 0);
            for (int v = 0; v < 5; v++) {
                tok_lac_words_clear(&w[v]);
                CHECK(tok_lac_batch_words(b[v], v == 1 ? 0 : i, &w[v], &e) ==
                      0);
            }
            m1 = tok_lac_batch_margin(b[0], i);
            for (int v = 1; v < 5; v++) {
                CHECK_EQ_INT(w[v].n, w[0].n);
                if (w[v].n == w[0].n) {
                    CHECK_EQ_MEM(w[v].ends, w[0].ends, w[0].n * sizeof(size_t));
                    CHECK_EQ_MEM(w[v].tags, w[0].tags,
                                 w[0].n * sizeof(uint32_t));
                }
                CHECK(tok_lac_batch_margin(b[v], v == 1 ? 0 : i) == m1);
            }
            if (mode == TOK_LAC_SEG) {
                const struct tok_lac_mode_data *md = &l->mode[mode];
                uint32_t ids[1024];
                size_t n = 0;

                for (size_t at = 0; at < lens[i];) {
                    uint32_t cp;

                    at += tok_utf8_decode(texts[i] + at, lens[i] - at, &cp);
                    ids[n++] = tok_lac_char_id(md, cp);
                }
                CHECK(plain_margin(&md->net, ids, n) == m1);
            }
        }
        for (int v = 0; v < 5; v++) {
            tok_lac_words_release(&w[v]);
            tok_lac_batch_free(b[v]);
        }
    }
    /* The lac network's layer 0 (embedding and projection), plainly: texts
     * without dictionary words, so ids are characters. */
    {
        static const char *const plain[] = { "是是家", "家是百家是", "司" };
        const struct tok_lac_mode_data *md = &l->mode[TOK_LAC_LAC];

        for (size_t k = 0; k < 3; k++) {
            struct tok_lac_batch *b;
            struct tok_err e;
            uint32_t ids[16];
            size_t n = 0;

            CHECK(tok_lac_batch_new(&b, l, TOK_LAC_LAC, &e) == 0);
            tok_lac_batch_want_margins(b, true);
            tok_lac_batch_add(b, plain[k], strlen(plain[k]), 0, &e);
            CHECK(tok_lac_batch_run(b, &e) == 0);
            for (size_t at = 0; at < strlen(plain[k]);) {
                uint32_t cp;

                at +=
                    tok_utf8_decode(plain[k] + at, strlen(plain[k]) - at, &cp);
                ids[n++] = tok_lac_char_id(md, cp);
            }
            CHECK(plain_margin(&md->net, ids, n) == tok_lac_batch_margin(b, 0));
            tok_lac_batch_free(b);
        }
    }
    tok_lac_close(l);
}

/* ------------------------------------------------------------------------ */
/* User dictionaries                                                         */

static void
test_lac_customization(void)
{
    struct tok_lac *l = open_fixture();
    const char *dir = test_dir("custom");
    const char *tags;
    struct tok_err e;

    if (l == NULL) {
        CHECK(0);
        return;
    }
    /* Pieces are words; a tagged piece takes its tag; a phrase of one
     * character without a tag is ignored (百); CR ends a line as in
     * Python's text mode; "/x" is text (no tag before position 1). */
    write_file(path_of(dir, "u.txt"),
               "\xe7\x99\xbe\xe5\xba\xa6 \xe5\x85\xac\xe5\x8f\xb8\n"
               "\xe9\xab\x98\xe7\xa7\x91/SEASON \xe6\x8a\x80\r"
               "\xe7\x99\xbe\n  \n/x\n",
               42);
    CHECK_EQ_INT(tok_lac_load_customization(l, path_of(dir, "u.txt"), NULL, &e),
                 3);
    for (int mode = 0; mode < 2; mode++) {
        CHECK_EQ_STR(cut(l, (enum tok_lac_mode)mode, "百度公司", NULL),
                     "百度|公司");
        CHECK_EQ_STR(cut(l, (enum tok_lac_mode)mode, "高科技", &tags),
                     "高科|技");
        CHECK(strncmp(tags, "SEASON|", 7) == 0);
    }
    /* A separator; a new file replaces the phrases of the one before. */
    write_file(path_of(dir, "v.txt"), "公;司/ORG\n", strlen("公;司/ORG\n"));
    CHECK_EQ_INT(tok_lac_load_customization(l, path_of(dir, "v.txt"), ";", &e),
                 1);
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "公司", &tags), "公|司");
    CHECK(strstr(tags, "|ORG") != NULL);
    CHECK(strstr(cut(l, TOK_LAC_LAC, "高科技", &tags), "|") == NULL);
    /* Errors. */
    write_file(path_of(dir, "bad.txt"), "ok\n\xff\n", 5);
    CHECK_EQ_INT(
        tok_lac_load_customization(l, path_of(dir, "bad.txt"), NULL, &e),
        TOK_EFORMAT);
    CHECK_MSG(e, "line 2: invalid UTF-8");
    CHECK_EQ_INT(tok_lac_load_customization(l, path_of(dir, "none"), NULL, &e),
                 TOK_EIO);
    CHECK_MSG(e, "none");
    CHECK_EQ_INT(tok_lac_load_customization(l, dir, NULL, &e), TOK_EIO);
    CHECK_EQ_INT(tok_lac_load_customization(l, path_of(dir, "v.txt"), "", &e),
                 TOK_EINVAL);
    /* The dictionary before the failures is kept. */
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "公司", NULL), "公|司");
    tok_lac_close(l);
}

/* ------------------------------------------------------------------------ */
/* Bad models and packages                                                   */

static void
test_lac_bad_models(void)
{
    const char *dir = test_dir("bad-models");
    unsigned char *m;
    size_t len;
    struct tok_lac *l = NULL;
    struct tok_lac_batch *b;
    struct tok_err e;

    m = read_file(fixture(), &len);
    CHECK(m != NULL && len > 4096);
    if (m == NULL)
        return;
    write_file(path_of(dir, "trunc"), m, len - 100);
    CHECK_EQ_INT(tok_lac_open(&l, path_of(dir, "trunc"), 0, &e), TOK_EFORMAT);
    CHECK_MSG(e, "truncated");
    write_file(path_of(dir, "short"), m, 50);
    CHECK_EQ_INT(tok_lac_open(&l, path_of(dir, "short"), 0, &e), TOK_EFORMAT);
    CHECK_MSG(e, "not a LAC model");
    m[len - 200] ^= 1; /* in the last part's data */
    write_file(path_of(dir, "flip"), m, len);
    CHECK_EQ_INT(tok_lac_open(&l, path_of(dir, "flip"), 0, &e), TOK_EFORMAT);
    CHECK_MSG(e, "damaged");
    m[len - 200] ^= 1;
    m[8] = 9; /* version */
    write_file(path_of(dir, "version"), m, len);
    CHECK_EQ_INT(tok_lac_open(&l, path_of(dir, "version"), 0, &e), TOK_EFORMAT);
    CHECK_MSG(e, "version 9");
    CHECK_EQ_INT(tok_lac_open(&l, path_of(dir, "missing"), 0, &e), TOK_EIO);
    CHECK_MSG(e, "missing");
    CHECK_EQ_INT(tok_lac_open(&l, dir, 0, &e), TOK_EIO);
    CHECK(l == NULL);
    /* A network not opened. */
    CHECK_EQ_INT(tok_lac_open(&l, fixture(), TOK_LAC_OPEN_SEG, &e), 0);
    CHECK_EQ_INT(tok_lac_batch_new(&b, l, TOK_LAC_LAC, &e), TOK_EINVAL);
    tok_lac_close(l);
    free(m);
}

/* Rewrite file `name` of the fixture's lac_model/conf (or model/). */
static void
put_fixture_file(const char *pkg, const char *name, const char *text,
                 size_t len)
{
    char p[4600];

    snprintf(p, sizeof(p), "%s/lac_model/%s", pkg, name);
    write_file(p, text, len);
}

static void
test_lac_bad_packages(void)
{
    static const struct {
        const char *file, *text, *msg;
    } cases[] = {
        { "conf/word.dic", "0\ta\n", "no OOV entry" },
        { "conf/word.dic", "0\ta\n1\tb\nx\tOOV\n", "line 3: id 'x' is not" },
        { "conf/word.dic", "0\ta\n99\tOOV\n", "outside the embedding" },
        { "conf/word.dic", "0\t\xc3\n", "line 1: invalid UTF-8" },
        { "conf/tag.dic", "0\tn-B\n", "no tag for id 1" },
        { "conf/small_seg.dic", "ab 3\nabc\n", "line 2: not \"word count\"" },
        { "conf/small_seg.dic", "ab x\n", "line 1: count is not a number" },
        { "conf/small_seg.dic", "ab -3\n", "total count -3" },
        { "model/crfw", "\0\0\0\0", "not a Paddle tensor" },
        { "model/fc_4.b_0", "", "not a Paddle tensor" },
    };
    const char *out = path_of(test_dir("bad-packages"), "m");
    struct tok_err e;

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char name[32];
        const char *pkg;

        snprintf(name, sizeof(name), "pkg%zu", k);
        pkg = test_dir(name);
        CHECK(lac_fixture_write(pkg) == 0);
        put_fixture_file(pkg, cases[k].file, cases[k].text,
                         k == 8 ? 4 : strlen(cases[k].text));
        CHECK(tok_lac_compile(pkg, out, NULL, &e) < 0);
        CHECK_MSG(e, cases[k].msg);
        CHECK_MSG(e, k >= 8 ? "model/" : cases[k].file);
    }
    /* A shape that does not fit: gru_1's weight for a D of 4. */
    {
        const char *pkg = test_dir("pkg-shape");
        char p[4600];

        CHECK(lac_fixture_write(pkg) == 0);
        snprintf(p, sizeof(p), "%s/lac_model/model", pkg);
        CHECK(lac_fixture_tensor(p, "gru_1.w_0", 4, 12, 1.0f) == 0);
        CHECK(tok_lac_compile(pkg, out, NULL, &e) < 0);
        CHECK_MSG(e, "gru_1.w_0': shape [4, 12], expected [5, 15]");
        CHECK_EQ_INT(tok_lac_compile(path_of(pkg, "nowhere"), out, NULL, &e),
                     TOK_EIO);
    }
    CHECK(access(out, F_OK) != 0);
}

/* ------------------------------------------------------------------------ */
/* The real model                                                            */

static void
test_lac_real_model(void)
{
    const char *path = getenv("LAC_MODEL");
    struct tok_lac *l;
    struct tok_err e;
    const char *tags;

    if (path == NULL || access(path, R_OK) != 0)
        SKIP("no LAC model ($LAC_MODEL): built with WITH_LAC=0?");
    CHECK_EQ_INT(tok_lac_open(&l, path, 0, &e), 0);
    if (l == NULL)
        return;
    CHECK(strstr(tok_lac_provenance(l), "LAC 2.1.2") != NULL);
    /* LAC 2.1.2's own output: LAC(mode='seg').run(...) and mode='lac'. */
    CHECK_EQ_STR(cut(l, TOK_LAC_SEG, "百度是一家高科技公司", NULL),
                 "百度|是|一家|高科技|公司");
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "百度是一家高科技公司", &tags),
                 "百度|是|一家|高科技|公司");
    CHECK_EQ_STR(tags, "ORG|v|m|n|n");
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "工具 😀𠮷\t", &tags), "工具 😀𠮷\t");
    CHECK_EQ_STR(tags, "");
    CHECK_EQ_STR(cut(l, TOK_LAC_SEG, "机 器学习", NULL), "机 器|学习");
    CHECK_EQ_STR(cut(l, TOK_LAC_LAC, "ＡＢＣ１２３ 臺灣", &tags),
                 "ＡＢＣ１２３| |臺灣");
    CHECK_EQ_STR(tags, "n|w|LOC");
    tok_lac_close(l);
}

TESTS(test_lac, TEST(test_lac_compile_open), TEST(test_lac_q2b_and_oov),
      TEST(test_lac_words_cover), TEST(test_lac_presegmentation),
      TEST(test_lac_kernels_agree), TEST(test_lac_viterbi_agree),
      TEST(test_lac_exp_accuracy), TEST(test_lac_paths_agree),
      TEST(test_lac_customization), TEST(test_lac_bad_models),
      TEST(test_lac_bad_packages), TEST(test_lac_real_model))
