/* SPDX-License-Identifier: MIT */
/*
 * test_ds_ernie.c: unit tests of libdata's ERNIE samples: the three
 * build_training_sample vectors of the spec (§10b, produced by PaddleNLP's
 * own code) exactly, the same sample read from a dataset file, and edge
 * cases: truncation, binary_head=false with one sentence, padding of short
 * sequences, samples made only of "##" pieces, the to_chinese_char
 * fallback (§11.5), masked_lm_prob 0, and the argument and range errors.
 * Randomised agreement with a Python transcription of §7.6 and numpy is
 * the conformance suite's job (tests/conformance/samples_ernie_run.py).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "ds.h"

/* The toy vocab of §10b: 19 base tokens, then ##我=19 ... ##晴=28. */
static const char *const toy_vocab[] = {
    "[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "我",   "爱",   "北",
    "京",    "天",    "安",    "门",     "今",    "日",   "晴",   "he",
    "##llo", "world", "。",    "##我",   "##爱",  "##北", "##京", "##天",
    "##安",  "##门",  "##今",  "##日",   "##晴"
};
#define TOY_N    29
#define TOY_BASE 19

/* s0 = 我 爱 北 ##京 天 ##安 ##门 。, s1 = 今 ##日 天 ##晴 。,
 * s2 = he ##llo world 。 */
static const int32_t toy_ids[] = { 5,  6, 7,  22, 9,  24, 25, 18, 12,
                                   27, 9, 28, 18, 15, 16, 17, 18 };
static const uint32_t toy_lens[] = { 8, 5, 4 };

static struct ds_ernie_opts
toy_opts(void)
{
    struct ds_ernie_opts o;

    memset(&o, 0, sizeof(o));
    o.max_seq_len = 24;
    o.masked_lm_prob = 0.15;
    o.max_ngrams = 3;
    o.favor_longer_ngram = 0;
    o.binary_head = 1;
    o.cls_id = 1;
    o.sep_id = 2;
    o.mask_id = 3;
    o.pad_id = 0;
    o.seed = 1234;
    return o;
}

struct fixture {
    struct ds_ernie_ctx *ctx;
    struct ds_ernie_sample s;
};

static int
fixture_open(struct fixture *f, const struct ds_ernie_opts *o,
             const char *const *vocab, size_t n, size_t n_base)
{
    struct ds_err err;

    memset(f, 0, sizeof(*f));
    if (ds_ernie_ctx_new(&f->ctx, o, vocab, n, n_base, &err) != 0) {
        fprintf(stderr, "ds_ernie_ctx_new: %s\n", err.msg);
        return -1;
    }
    if (ds_ernie_sample_init(&f->s, f->ctx, &err) != 0) {
        ds_ernie_ctx_free(f->ctx);
        return -1;
    }
    return 0;
}

static void
fixture_close(struct fixture *f)
{
    ds_ernie_sample_release(&f->s);
    ds_ernie_ctx_free(f->ctx);
}

/* The sample equals the expected arrays (n_real tokens, types given as
 * the number of type-0 tokens then type-1 up to n_real). */
static void
check_sample(const struct ds_ernie_sample *s, const int32_t *ids,
             uint32_t n_real, uint32_t n_type0, const int32_t *pos,
             const int32_t *labels, uint32_t n_masked, int is_random)
{
    CHECK_EQ_INT(s->n_tokens, n_real);
    for (uint32_t i = 0; i < 24; i++) {
        CHECK_EQ_INT(s->input_ids[i], ids[i]);
        CHECK_EQ_INT(s->token_type_ids[i], i < n_type0  ? 0
                                           : i < n_real ? 1
                                                        : 0);
    }
    CHECK_EQ_INT(s->n_masked, n_masked);
    for (uint32_t i = 0; i < n_masked && i < s->n_masked; i++) {
        CHECK_EQ_INT(s->masked_positions[i], pos[i]);
        CHECK_EQ_INT(s->masked_labels[i], labels[i]);
    }
    for (uint32_t i = 0, k = 0; i < 24; i++) {
        int m = k < n_masked && pos[k] == (int32_t)i;

        CHECK_EQ_INT(s->loss_mask[i], m);
        k += m;
    }
    CHECK_EQ_INT(s->is_random, is_random);
}

static const int32_t v0_ids[24] = { 1,  3,  3,  17, 18, 2,  5, 6, 7, 8, 9, 10,
                                    11, 18, 12, 13, 9,  14, 3, 2, 0, 0, 0, 0 };
static const int32_t v0_pos[] = { 1, 2, 18 }, v0_lab[] = { 15, 16, 18 };
static const int32_t v1_ids[24] = { 1,  5,  6, 7, 8, 9, 10, 11, 18, 12, 13, 9,
                                    14, 18, 2, 3, 3, 3, 18, 2,  0,  0,  0,  0 };
static const int32_t v1_pos[] = { 15, 16, 17 }, v1_lab[] = { 15, 16, 17 };
static const int32_t v7_ids[24] = { 1,  15, 16, 3,  3, 2,  5,  6, 7, 8, 9, 10,
                                    11, 3,  12, 13, 9, 14, 18, 2, 0, 0, 0, 0 };
static const int32_t v7_pos[] = { 3, 4, 13 }, v7_lab[] = { 17, 18, 18 };

/* ------------------------------------------------------------------ */

static void
test_ernie_spec_vectors(void)
{
    struct ds_ernie_opts o = toy_opts();
    struct fixture f;
    struct ds_err err;

    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3, 20, 0,
                                           &f.s, &err),
                 0);
    check_sample(&f.s, v0_ids, 20, 6, v0_pos, v0_lab, 3, 1);
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3, 20, 1,
                                           &f.s, &err),
                 0);
    check_sample(&f.s, v1_ids, 20, 15, v1_pos, v1_lab, 3, 0);
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3, 20, 7,
                                           &f.s, &err),
                 0);
    check_sample(&f.s, v7_ids, 20, 6, v7_pos, v7_lab, 3, 1);
    CHECK_EQ_INT(f.s.truncated, 0);
    fixture_close(&f);
}

/* The same vectors through ds_open: a dataset written with ds_writer,
 * the three sentences after an unrelated first document. */
static void
test_ernie_from_dataset(void)
{
    struct ds_ernie_opts o = toy_opts();
    char dir[] = "/tmp/test_ds_ernie.XXXXXX", prefix[64];
    struct ds_writer *w = NULL;
    struct ds_dataset *d = NULL;
    struct fixture f;
    struct ds_err err;
    const int32_t other[] = { 4, 4, 4 };

    if (mkdtemp(dir) == NULL) {
        SKIP("mkdtemp failed");
    }
    snprintf(prefix, sizeof(prefix), "%s/toy", dir);
    CHECK_EQ_INT(
        ds_writer_open(&w, prefix, DS_FORMAT_MMAP, DS_DTYPE_UINT16, &err), 0);
    if (w == NULL)
        return;
    ds_writer_add_sentence(w, other, 3, &err);
    ds_writer_end_document(w, &err);
    for (int i = 0, off = 0; i < 3; off += (int)toy_lens[i++])
        CHECK_EQ_INT(
            ds_writer_add_sentence(w, toy_ids + off, toy_lens[i], &err), 0);
    CHECK_EQ_INT(ds_writer_commit(w, &err), 0);
    CHECK_EQ_INT(ds_open(&d, prefix, &err), 0);
    if (d == NULL || fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        ds_close(d);
        return;
    }
    CHECK_EQ_INT(ds_ernie_sample_build(f.ctx, d, 1, 4, 20, 7, &f.s, &err), 0);
    check_sample(&f.s, v7_ids, 20, 6, v7_pos, v7_lab, 3, 1);
    CHECK_EQ_INT(ds_ernie_sample_build(f.ctx, d, 1, 5, 20, 7, &f.s, &err),
                 DS_ERANGE);
    CHECK(strstr(err.msg, "[1, 5)") != NULL);
    fixture_close(&f);
    ds_close(d);
    snprintf(prefix, sizeof(prefix), "%s/toy.bin", dir);
    unlink(prefix);
    snprintf(prefix, sizeof(prefix), "%s/toy.idx", dir);
    unlink(prefix);
    rmdir(dir);
}

/* Invariants every sample keeps. */
static void
check_invariants(const struct ds_ernie_sample *s, const struct ds_ernie_opts *o,
                 uint32_t tgt)
{
    uint32_t seps = 0;

    CHECK(s->n_tokens <= tgt + 3);
    CHECK(s->n_tokens <= o->max_seq_len);
    CHECK_EQ_INT(s->input_ids[0], o->cls_id);
    CHECK_EQ_INT(s->input_ids[s->n_tokens - 1], o->sep_id);
    for (uint32_t i = 0; i < s->n_tokens; i++)
        seps += s->input_ids[i] == o->sep_id && !s->loss_mask[i];
    CHECK(seps >= 1);
    for (uint32_t i = s->n_tokens; i < o->max_seq_len; i++) {
        CHECK_EQ_INT(s->input_ids[i], o->pad_id);
        CHECK_EQ_INT(s->token_type_ids[i], o->pad_id);
        CHECK_EQ_INT(s->loss_mask[i], 0);
    }
    for (uint32_t k = 0; k < s->n_masked; k++) {
        CHECK(s->masked_positions[k] > 0);
        CHECK((uint32_t)s->masked_positions[k] < s->n_tokens);
        if (k > 0)
            CHECK(s->masked_positions[k] > s->masked_positions[k - 1]);
        CHECK(s->masked_labels[k] < TOY_BASE); /* never an added ## id */
    }
    CHECK(s->n_masked <= (uint32_t)(o->masked_lm_prob * tgt) + 1);
}

static void
test_ernie_truncation(void)
{
    struct ds_ernie_opts o = toy_opts();
    struct fixture f;
    struct ds_err err;

    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    for (uint32_t tgt = 2; tgt <= 21; tgt++)
        for (uint64_t idx = 0; idx < 50; idx++) {
            CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3,
                                                   tgt, idx, &f.s, &err),
                         0);
            check_invariants(&f.s, &o, tgt);
            CHECK_EQ_INT(f.s.truncated, tgt < 17);
            if (tgt < 17)
                CHECK_EQ_INT(f.s.n_tokens, tgt + 3);
        }
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3, 25, 0,
                                           &f.s, &err),
                 DS_EINVAL);
    CHECK(strstr(err.msg, "exceeds max_seq_len 24") != NULL);
    fixture_close(&f);

    /* the target must leave room for [CLS] [SEP] [SEP]: 17 + 3 > 19 */
    o.max_seq_len = 19;
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3, 19, 0,
                                           &f.s, &err),
                 DS_ERANGE);
    CHECK(strstr(err.msg, "20 tokens") != NULL);
    fixture_close(&f);
}

/* binary_head=false: one segment, no B, no swap, any sentence count. */
static void
test_ernie_no_binary_head(void)
{
    struct ds_ernie_opts o = toy_opts();
    struct fixture f;
    struct ds_err err;

    o.binary_head = 0;
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    for (uint64_t idx = 0; idx < 20; idx++) {
        CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 1, 20,
                                               idx, &f.s, &err),
                     0);
        CHECK_EQ_INT(f.s.n_tokens, 10); /* [CLS] s0 [SEP] */
        CHECK_EQ_INT(f.s.is_random, 0);
        for (uint32_t i = 0; i < 10; i++)
            CHECK_EQ_INT(f.s.token_type_ids[i], 0);
        check_invariants(&f.s, &o, 20);
        CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 3, 21,
                                               idx, &f.s, &err),
                     0);
        CHECK_EQ_INT(f.s.n_tokens, 19);
    }
    fixture_close(&f);

    /* with binary_head, one sentence is an error */
    o.binary_head = 1;
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 1, 20, 0,
                                           &f.s, &err),
                 DS_EINVAL);
    CHECK(strstr(err.msg, "binary_head") != NULL);
    CHECK_EQ_INT(ds_ernie_sample_build_ids(f.ctx, toy_ids, toy_lens, 0, 20, 0,
                                           &f.s, &err),
                 DS_EINVAL);
    fixture_close(&f);
}

/* A short sample is padded; the bare-character mapping shows 京 for
 * ##京 in input and labels; masked_lm_prob 0 masks nothing. */
static void
test_ernie_short_and_unmasked(void)
{
    struct ds_ernie_opts o = toy_opts();
    struct fixture f;
    struct ds_err err;
    const int32_t ids[] = { 7, 22, 25, 16 };
    const uint32_t lens[] = { 2, 2 };

    o.masked_lm_prob = 0.0;
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(
        ds_ernie_sample_build_ids(f.ctx, ids, lens, 2, 20, 3, &f.s, &err), 0);
    CHECK_EQ_INT(f.s.n_tokens, 7);
    CHECK_EQ_INT(f.s.n_masked, 0);
    CHECK_EQ_INT(f.s.input_ids[0], 1);
    if (f.s.is_random) { /* [CLS] ##门 ##llo [SEP] 北 ##京 [SEP] */
        CHECK_EQ_INT(f.s.input_ids[1], 11);
        CHECK_EQ_INT(f.s.input_ids[2], 16);
        CHECK_EQ_INT(f.s.input_ids[5], 8);
    } else { /* [CLS] 北 ##京 [SEP] ##门 ##llo [SEP] */
        CHECK_EQ_INT(f.s.input_ids[2], 8);
        CHECK_EQ_INT(f.s.input_ids[4], 11);
        CHECK_EQ_INT(f.s.input_ids[5], 16);
    }
    for (uint32_t i = 7; i < 24; i++) {
        CHECK_EQ_INT(f.s.input_ids[i], 0);
        CHECK_EQ_INT(f.s.token_type_ids[i], 0);
    }
    fixture_close(&f);
}

/* Only "##" pieces: one word spanning [SEP] (spec §11.6), so masking is
 * all or nothing within the budget. */
static void
test_ernie_all_continuations(void)
{
    struct ds_ernie_opts o = toy_opts();
    struct fixture f;
    struct ds_err err;
    const int32_t ids[] = { 16, 22, 16, 25, 16, 16 };
    const uint32_t lens[] = { 2, 2, 2 };

    o.masked_lm_prob = 0.5;
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    for (uint64_t idx = 0; idx < 40; idx++) {
        CHECK_EQ_INT(
            ds_ernie_sample_build_ids(f.ctx, ids, lens, 3, 20, idx, &f.s, &err),
            0);
        check_invariants(&f.s, &o, 20);
        /* 9 tokens, round(4.5) = 4 to predict < 6 pieces: nothing */
        CHECK_EQ_INT(f.s.n_tokens, 9);
        CHECK_EQ_INT(f.s.n_masked, 0);
    }
    o.masked_lm_prob = 0.8; /* round(7.2) = 7 >= 6: all six */
    fixture_close(&f);
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(
        ds_ernie_sample_build_ids(f.ctx, ids, lens, 3, 20, 0, &f.s, &err), 0);
    CHECK_EQ_INT(f.s.n_masked, 6);
    fixture_close(&f);
}

/* "##X" whose X is not in the vocab becomes the last token ([SEP]),
 * PaddleNLP's stale-variable fallback (spec §11.5). */
static void
test_ernie_chinese_char_fallback(void)
{
    static const char *const vocab[] = { "[PAD]",  "[CLS]", "[SEP]",
                                         "[MASK]", "a",     "##龍" };
    struct ds_ernie_opts o = toy_opts();
    struct fixture f;
    struct ds_err err;
    const int32_t ids[] = { 4, 5, 4 };
    const uint32_t lens[] = { 2, 1 };

    o.masked_lm_prob = 0.0;
    if (fixture_open(&f, &o, vocab, 6, 5) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(
        ds_ernie_sample_build_ids(f.ctx, ids, lens, 2, 20, 0, &f.s, &err), 0);
    CHECK_EQ_INT(f.s.n_tokens, 6);
    for (uint32_t i = 0; i < 6; i++)
        CHECK(f.s.input_ids[i] != 5);
    /* [CLS] a ##龍 [SEP] a [SEP], or swapped [CLS] a [SEP] a ##龍 [SEP] */
    CHECK_EQ_INT(f.s.input_ids[f.s.is_random ? 4 : 2], 2);
    fixture_close(&f);
}

static void
test_ernie_errors(void)
{
    struct ds_ernie_opts o = toy_opts();
    struct ds_ernie_ctx *ctx = NULL;
    struct fixture f;
    struct ds_err err;
    const int32_t bad[] = { 5, 99, 6 };
    const uint32_t lens[] = { 2, 1 };

    o.max_ngrams = 0;
    CHECK_EQ_INT(ds_ernie_ctx_new(&ctx, &o, toy_vocab, TOY_N, TOY_BASE, &err),
                 DS_EINVAL);
    CHECK(strstr(err.msg, "max_ngrams") != NULL);
    o = toy_opts();
    o.mask_id = 40;
    CHECK_EQ_INT(ds_ernie_ctx_new(&ctx, &o, toy_vocab, TOY_N, TOY_BASE, &err),
                 DS_EINVAL);
    CHECK(strstr(err.msg, "[MASK] id 40") != NULL);
    o = toy_opts();
    o.masked_lm_prob = 1.5;
    CHECK_EQ_INT(ds_ernie_ctx_new(&ctx, &o, toy_vocab, TOY_N, TOY_BASE, &err),
                 DS_EINVAL);
    o = toy_opts();
    CHECK_EQ_INT(ds_ernie_ctx_new(&ctx, &o, toy_vocab, TOY_N, 0, &err),
                 DS_EINVAL);
    CHECK(ctx == NULL);
    if (fixture_open(&f, &o, toy_vocab, TOY_N, TOY_BASE) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(
        ds_ernie_sample_build_ids(f.ctx, bad, lens, 2, 20, 0, &f.s, &err),
        DS_ERANGE);
    CHECK(strstr(err.msg, "token id 99") != NULL);
    fixture_close(&f);
    ds_ernie_ctx_free(NULL);
}

TESTS(test_ds_ernie, TEST(test_ernie_spec_vectors),
      TEST(test_ernie_from_dataset), TEST(test_ernie_truncation),
      TEST(test_ernie_no_binary_head), TEST(test_ernie_short_and_unmasked),
      TEST(test_ernie_all_continuations),
      TEST(test_ernie_chinese_char_fallback), TEST(test_ernie_errors))
