/* SPDX-License-Identifier: MIT */
/*
 * test_train_generate.c: unit tests of generation (train/generate/) and
 * its op, attention over a key/value cache (ops.h attention_kv_fwd).
 * The op and the cached decoder are checked against what they must equal
 * (attention_fwd over the whole sequence; the model's own forward pass,
 * model_forward()'s logits); the processors against their definitions on
 * small rows worked out in the comments; beam search's bookkeeping
 * against transformers' rules; the search for the promises of
 * gen_search.h (a batch gives each prompt what it gets alone, the same
 * seed the same tokens).  transformers itself is the oracle of
 * tests/conformance/generate_run.py.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "generate/gen_beam.h"
#include "generate/gen_gpt.h"
#include "generate/gen_load.h"
#include "generate/gen_logits.h"
#include "generate/gen_search.h"
#include "model/model_int.h"
#include "ops.h"
#include "tok.h"

static uint64_t rng_state = 7;

/* Uniform in [-1, 1). */
static float
frand(void)
{
    rng_state = ops_splitmix64(rng_state);
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

static void *
xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (p == NULL) {
        perror("calloc");
        exit(1);
    }
    return p;
}

/* max |a - b| over n. */
static double
max_diff(const float *a, const float *b, size_t n)
{
    double d = 0;

    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

/* ------------------------------------------------------------ the op */

/* Sequences of T tokens whose q, k, v are qkv[b] (as attention_fwd takes
 * them): attention_fwd's causal output over each whole sequence must be
 * what attention_kv_fwd gives chunk by chunk, each sequence at its own
 * positions (sequence 1 runs one token behind, and goes over a position
 * twice: the rewrite is the same), in slots of a cache with a spare one. */
static void
check_kv(const struct ops *o, double tol)
{
    enum { B = 2, T = 9, C = 16, NH = 2, S = 3 };
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
    float *qkv = xcalloc(nq, 4), *ref = xcalloc(no, 4), *att;
    float *out = xcalloc(no, 4), *q16, *o16;
    size_t es = ops_dtype_size(o->dtype), nc = (size_t)T * S * C;
    void *kc = o->alloc(nc * es, "kc"), *vc = o->alloc(nc * es, "vc");
    void *qk = o->alloc(3 * (size_t)T * C * B * es, "qkv");
    void *ok = o->alloc((size_t)T * C * B * es, "out");
    int32_t *pos = o->alloc(B * sizeof(int32_t), "pos");
    const struct ops *f = ops_cpu(2, OPS_F32);
    /* (n, pos of sequence 0, pos of sequence 1) of each call */
    static const int calls[][3] = {
        { 4, 0, 0 }, { 2, 4, 3 }, { 1, 6, 5 }, { 1, 7, 6 }, { 2, 7, 7 }
    };

    for (size_t i = 0; i < nq; i++)
        qkv[i] = 2.0f * frand();
    /* Round q, k, v to the dtype first: both sides see the same inputs. */
    q16 = xcalloc(nq, es);
    f->cast(q16, o->dtype, qkv, OPS_F32, nq);
    f->cast(qkv, OPS_F32, q16, o->dtype, nq);
    att = xcalloc((size_t)B * NH * T * T, 4);
    f->attention_fwd(ref, att, qkv, NULL, B, T, C, NH, 0, NH, 1, 0.0f, 0);
    for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
        int n = calls[c][0], p[B] = { calls[c][1], calls[c][2] };
        float *rows = xcalloc((size_t)B * n * 3 * C, 4);
        float *got = xcalloc((size_t)B * n * C, 4);

        for (int b = 0; b < B; b++)
            for (int i = 0; i < n; i++)
                memcpy(rows + ((size_t)b * n + i) * 3 * C,
                       qkv + ((size_t)b * T + p[b] + i) * 3 * C,
                       3 * C * sizeof(float));
        o16 = xcalloc((size_t)B * n * 3 * C, es);
        f->cast(o16, o->dtype, rows, OPS_F32, (size_t)B * n * 3 * C);
        o->upload(qk, o16, (size_t)B * n * 3 * C * es);
        o->upload(pos, p, sizeof(p));
        o->attention_kv_fwd(ok, kc, vc, qk, pos, B, n, C, NH, S, T);
        CHECK_EQ_INT(o->download(o16, ok, (size_t)B * n * C * es), 0);
        f->cast(got, OPS_F32, o16, o->dtype, (size_t)B * n * C);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n; i++)
                memcpy(out + ((size_t)b * T + p[b] + i) * C,
                       got + ((size_t)b * n + i) * C, C * sizeof(float));
        free(rows), free(got), free(o16);
    }
    CHECK(max_diff(out, ref, no) <= tol);
    if (harness_failed_checks)
        fprintf(stderr, "  %s: max |d| %g\n", ops_dtype_name(o->dtype),
                max_diff(out, ref, no));
    o->release(kc), o->release(vc), o->release(qk), o->release(ok);
    o->release(pos);
    free(qkv), free(ref), free(att), free(out), free(q16);
}

static void
test_attention_kv_matches_attention(void)
{
    check_kv(ops_cpu(2, OPS_F32), 1e-6);
}

/* bfloat16: the output rounded once (2^-8 relative of values below 2). */
static void
test_attention_kv_bf16(void)
{
    check_kv(ops_cpu(2, OPS_BF16), 2.0 / 128);
}

/* ------------------------------------------------------------ the decoder */

static struct model *
tiny_gpt(int max_B, int max_T)
{
    struct model_config c;
    struct model *m = NULL;
    char err[256];

    config_defaults(&c, MODEL_GPT);
    c.vocab_size = 50;
    c.hidden_size = 32;
    c.num_layers = 2;
    c.num_heads = 4;
    c.intermediate_size = 64;
    c.max_position = 24;
    if (model_create(&m, &c, ops_cpu(2, OPS_F32), max_B, max_T, 0, err,
                     sizeof(err)) < 0 ||
        model_init_params(m, 11) < 0) {
        fprintf(stderr, "tiny_gpt: %s\n", err);
        exit(1);
    }
    /* Scale the weights up: init's 0.02 gives near-uniform logits, where
     * every choice is a near tie. */
    {
        float *p = model_params(m);
        const struct param_table *t = model_table(m);

        for (size_t i = 0; i < t->total; i++)
            p[i] *= 10.0f;
        for (size_t i = 0; i < t->n; i++)
            if (t->t[i].init == INIT_ONES)
                for (size_t j = 0; j < t->t[i].numel; j++)
                    p[t->t[i].offset + j] = 1.0f;
        model_params_changed(m, 0, t->total);
    }
    return m;
}

/* model_forward()'s logits (the model's own, fp32) of B sequences of T. */
static float *
full_logits(struct model *m, const int32_t *ids, int B, int T)
{
    int32_t *labels = xcalloc((size_t)B * T, 4);
    struct forward_opts fo = { 0, 0, 0.0f, NULL };
    struct batch b;
    double *sums = m->ops->alloc(16, "sums");
    float *l = xcalloc((size_t)B * T * m->Vl, 4);
    char err[256];

    memset(&b, 0, sizeof(b));
    b.B = B, b.T = T, b.input_ids = ids, b.labels = labels;
    CHECK(model_forward(m, &b, &fo, sums, err, sizeof(err)) == 0);
    m->ops->download(l, m->logits, (size_t)B * T * m->Vl * 4);
    m->ops->release(sums);
    free(labels);
    return l;
}

/* The cached decoder gives the logits of the model's forward pass: a
 * prompt at once, then a token at a time, sequences of other lengths
 * side by side, one of them in chunks of 3 tokens. */
static void
test_gen_gpt_matches_model(void)
{
    enum { B = 2, T = 10 };
    struct model *m = tiny_gpt(B, T);
    struct gen_gpt *g;
    int32_t ids[B * T], V = 50;
    float *ref, *got = xcalloc((size_t)B * V, 4);
    char err[256];
    double worst = 0;

    for (int i = 0; i < B * T; i++)
        ids[i] = (int32_t)((i * 7 + 3) % V);
    ref = full_logits(m, ids, B, T);
    CHECK(gen_gpt_new(&g, m, 3, 24, 12, err, sizeof(err)) == 0);
    /* Prefill: 4 tokens of sequence 0, 6 of sequence 1 (padded). */
    {
        int32_t in[2 * 6], pos[2] = { 0, 0 }, last[2] = { 3, 5 };

        for (int i = 0; i < 6; i++) {
            in[i] = i < 4 ? ids[i] : 0;
            in[6 + i] = ids[T + i];
        }
        CHECK(gen_gpt_forward(g, 2, 6, in, pos, last, got, err, sizeof(err)) ==
              0);
        for (int b = 0; b < 2; b++)
            worst = fmax(worst,
                         max_diff(got + (size_t)b * V,
                                  ref + ((size_t)b * T + last[b]) * m->Vl, V));
    }
    /* Then one token each step, sequence 0 from position 4, 1 from 6. */
    for (int s = 0; s < 4; s++) {
        int32_t in[2] = { ids[4 + s], ids[T + 6 + s] };
        int32_t pos[2] = { 4 + s, 6 + s }, last[2] = { 0, 0 };

        CHECK(gen_gpt_forward(g, 2, 1, in, pos, last, got, err, sizeof(err)) ==
              0);
        for (int b = 0; b < 2; b++)
            worst = fmax(worst,
                         max_diff(got + (size_t)b * V,
                                  ref + ((size_t)b * T + pos[b]) * m->Vl, V));
    }
    CHECK(worst < 1e-4);
    if (harness_failed_checks)
        fprintf(stderr, "  max |d| %g\n", worst);
    /* A position past the context, an id outside the vocabulary. */
    {
        int32_t in[1] = { 1 }, pos[1] = { 24 }, last[1] = { 0 };

        CHECK(gen_gpt_forward(g, 1, 1, in, pos, last, got, err, sizeof(err)) <
              0);
        CHECK(strstr(err, "outside the context of 24") != NULL);
        pos[0] = 0;
        in[0] = 50;
        CHECK(gen_gpt_forward(g, 1, 1, in, pos, last, got, err, sizeof(err)) <
              0);
        CHECK(strstr(err, "token id 50 is outside the vocabulary") != NULL);
    }
    gen_gpt_free(g);
    model_free(m);
    free(ref), free(got);
}

/* ------------------------------------------------------------ processors */

/* Repetition penalty: a seen token's positive logit divided, a negative
 * one multiplied, each once however often it was seen. */
static void
test_repetition_penalty(void)
{
    float s[4] = { 2.0f, -1.0f, 0.5f, 3.0f };
    int32_t hist[] = { 0, 1, 0, 0 };
    struct gen_scratch *sc = gen_scratch_new(4);

    gen_repetition_penalty(s, 4, hist, 4, 2.0f, sc);
    CHECK(s[0] == 1.0f && s[1] == -2.0f && s[2] == 0.5f && s[3] == 3.0f);
    gen_repetition_penalty(s, 4, hist + 3, 1, 2.0f, sc);
    CHECK(s[0] == 0.5f);
    gen_scratch_free(sc);
}

/* Top-k keeps what ties with the k-th largest (TopKLogitsWarper's
 * scores < kth); k >= V keeps all. */
static void
test_top_k(void)
{
    float s[6] = { 1, 5, 3, 5, 3, -2 };
    struct gen_scratch *sc = gen_scratch_new(6);

    gen_top_k(s, 6, 3, sc); /* sorted: 5 5 3 3 1 -2: the 3rd is 3 */
    CHECK(s[0] == -INFINITY && s[1] == 5 && s[2] == 3 && s[3] == 5 &&
          s[4] == 3 && s[5] == -INFINITY);
    gen_top_k(s, 6, 1, sc);
    CHECK(s[1] == 5 && s[3] == 5 && s[2] == -INFINITY);
    gen_scratch_free(sc);
}

/* Top-p over probabilities 0.1, 0.2, 0.3, 0.4 (logits their logs): the
 * ascending cumulative sums are 0.1, 0.3, 0.6, 1.0; p = 0.75 removes the
 * tokens whose sum is <= 0.25 (the 0.1 one); p = 0.35 those <= 0.65 (all
 * but 0.4); a tiny p keeps the largest. */
static void
test_top_p(void)
{
    static const float probs[4] = { 0.2f, 0.4f, 0.1f, 0.3f };
    struct gen_scratch *sc = gen_scratch_new(4);
    float s[4];

    for (int i = 0; i < 4; i++)
        s[i] = logf(probs[i]);
    gen_top_p(s, 4, 0.75f, sc);
    CHECK(s[2] == -INFINITY && s[0] > -INFINITY && s[1] > -INFINITY &&
          s[3] > -INFINITY);
    for (int i = 0; i < 4; i++)
        s[i] = logf(probs[i]);
    gen_top_p(s, 4, 0.35f, sc);
    CHECK(s[1] > -INFINITY && s[0] == -INFINITY && s[2] == -INFINITY &&
          s[3] == -INFINITY);
    for (int i = 0; i < 4; i++)
        s[i] = logf(probs[i]);
    gen_top_p(s, 4, 1e-6f, sc);
    CHECK(s[1] > -INFINITY && s[3] == -INFINITY);
    gen_scratch_free(sc);
}

/* The processors in transformers' order: min new tokens bans eos, the
 * temperature divides, then top-k and top-p see the divided scores. */
static void
test_filter_order(void)
{
    struct gen_filter f = { 1.0f, 2, 0, 1, 0.5f, 2, 1.0f };
    float s[3] = { 9.0f, 1.0f, 2.0f };
    struct gen_scratch *sc = gen_scratch_new(3);

    gen_filter_apply(s, 3, &f, NULL, 0, 1, sc);
    CHECK(s[0] == -INFINITY && s[1] == 2.0f && s[2] == 4.0f);
    s[0] = 9.0f, s[1] = 1.0f, s[2] = 2.0f;
    gen_filter_apply(s, 3, &f, NULL, 0, 2, sc); /* 2 new: eos allowed */
    CHECK(s[0] == 18.0f && s[1] == -INFINITY && s[2] == 4.0f);
    CHECK(gen_argmax(s, 3) == 0);
    gen_scratch_free(sc);
}

/* A draw inverts the cumulative distribution; many draws follow it. */
static void
test_sample(void)
{
    float s[4] = { logf(0.5f), -INFINITY, logf(0.25f), logf(0.25f) };
    struct gen_rng r;
    int count[4] = { 0 };

    CHECK(gen_sample(s, 4, 0.0) == 0);
    CHECK(gen_sample(s, 4, 0.49) == 0);
    CHECK(gen_sample(s, 4, 0.51) == 2);
    CHECK(gen_sample(s, 4, 0.76) == 3);
    CHECK(gen_sample(s, 4, 0.9999999) == 3);
    gen_rng_seed(&r, 1, 2, 3);
    for (int i = 0; i < 40000; i++)
        count[gen_sample(s, 4, gen_rng_uniform(&r))]++;
    /* 4 standard deviations of a binomial(40000, 0.25): 346. */
    CHECK(count[1] == 0);
    CHECK(abs(count[0] - 20000) < 400 && abs(count[2] - 10000) < 350);
    /* The same key, the same stream; another key, another. */
    {
        struct gen_rng a, b, c;

        gen_rng_seed(&a, 9, 4, 0);
        gen_rng_seed(&b, 9, 4, 0);
        gen_rng_seed(&c, 9, 4, 1);
        for (int i = 0; i < 8; i++) {
            double x = gen_rng_uniform(&a), y = gen_rng_uniform(&b);

            CHECK(x == y && x >= 0.0 && x < 1.0);
            CHECK(gen_rng_uniform(&c) != x);
        }
    }
}

/* log_softmax: exp sums to 1, differences are the logits'. */
static void
test_log_softmax(void)
{
    float s[3] = { 1.0f, 2.0f, 3.0f };
    double sum = 0;

    gen_log_softmax(s, 3);
    for (int i = 0; i < 3; i++)
        sum += exp(s[i]);
    CHECK(fabs(sum - 1.0) < 1e-6);
    CHECK(fabs((s[2] - s[0]) - 2.0f) < 1e-6);
}

/* ------------------------------------------------------------ beams */

/* BeamHypotheses: scores sum / len^penalty, the worst dropped once there
 * are more than num_beams, is_done against the best attainable score. */
static void
test_beam_hypotheses(void)
{
    struct gen_beams b;
    int32_t ids[3] = { 5, 6, 7 };

    CHECK(gen_beams_init(&b, 2, 1.0, 0) == 0);
    CHECK(gen_beams_add(&b, ids, 1, 1, -4.0, 2) == 0); /* -2 */
    CHECK(b.worst == -2.0);
    CHECK(gen_beams_add(&b, ids, 2, 1, -3.0, 3) == 0); /* -1 */
    CHECK(b.n_hyps == 2 && b.worst == -2.0);
    CHECK(gen_beams_add(&b, ids, 3, 0, -9.0, 3) == 0); /* -3: not kept */
    CHECK(b.n_hyps == 2);
    CHECK(gen_beams_add(&b, ids, 3, 0, -4.5, 3) == 0); /* -1.5: kept */
    CHECK(b.n_hyps == 2 && b.worst == -1.5);
    CHECK(b.hyps[gen_beams_hyp_rank(&b, 0)].score == -1.0);
    CHECK(b.hyps[gen_beams_hyp_rank(&b, 1)].score == -1.5);
    CHECK(gen_beams_hyp_rank(&b, 2) == -1);
    /* Done when the best open beam cannot beat -1.5 any more. */
    CHECK(gen_beams_is_done(&b, -6.0, 4));  /* -1.5 >= -6/4 */
    CHECK(!gen_beams_is_done(&b, -5.0, 4)); /* -1.25 */
    gen_beams_release(&b);
    /* Equal scores: the one added last comes out first. */
    CHECK(gen_beams_init(&b, 3, 0.0, 1) == 0);
    gen_beams_add(&b, ids, 1, 1, -1.0, 1);
    gen_beams_add(&b, ids + 1, 1, 1, -1.0, 1);
    CHECK(b.hyps[gen_beams_hyp_rank(&b, 0)].ids[0] == 6);
    CHECK(!gen_beams_is_done(&b, -1.0, 1)); /* 2 of 3 */
    gen_beams_add(&b, ids, 1, 1, -5.0, 1);
    CHECK(gen_beams_is_done(&b, 0.0, 1)); /* early stopping */
    gen_beams_release(&b);
}

/* The 2K best of K x V candidates, best first, ties by flat index. */
static void
test_beam_top(void)
{
    float s[2 * 4] = { 0.1f, 0.9f, 0.5f, 0.5f, 0.7f, 0.5f, -1, 0.2f };
    struct gen_cand c[4];

    gen_beams_top(s, 2, 4, 4, c);
    CHECK(c[0].beam == 0 && c[0].token == 1);
    CHECK(c[1].beam == 1 && c[1].token == 0);
    CHECK(c[2].beam == 0 && c[2].token == 2);
    CHECK(c[3].beam == 0 && c[3].token == 3 && c[3].score == 0.5f);
}

/* ------------------------------------------------------------ the search */

static const int32_t prompt_a[] = { 3, 9, 27, 31, 4 };
static const int32_t prompt_b[] = { 8, 1 };
static const int32_t prompt_c[] = { 40, 2, 2, 17, 5, 6, 7, 11 };

/* Prompts run together give each the tokens it gets alone, for each
 * strategy; sampling twice with one seed gives the same tokens, and
 * another seed others. */
static void
check_batch_alone(enum gen_strategy st)
{
    struct model *m = tiny_gpt(1, 1);
    struct gen_gpt *g;
    struct gen_params p;
    const struct gen_prompt prompts[3] = { { prompt_a, 5, 0 },
                                           { prompt_b, 2, 1 },
                                           { prompt_c, 8, 2 } };
    struct gen_output all[6], one[2];
    char err[256];

    memset(&p, 0, sizeof(p));
    p.strategy = st;
    p.filter = (struct gen_filter){ 1.3f, 1, 7, 0, 0.8f, 10, 0.9f };
    p.max_new_tokens = 9;
    p.num_return = 2;
    p.num_beams = 3;
    p.length_penalty = 1.0;
    p.seed = 5;
    CHECK(gen_gpt_new(&g, m, 9, 24, 12, err, sizeof(err)) == 0);
    CHECK(gen_run(g, &p, prompts, 3, all, NULL, NULL, err, sizeof(err)) == 0);
    for (int q = 0; q < 3; q++) {
        CHECK(gen_run(g, &p, &prompts[q], 1, one, NULL, NULL, err,
                      sizeof(err)) == 0);
        for (int j = 0; j < 2; j++) {
            const struct gen_output *a = &all[q * 2 + j], *b = &one[j];

            CHECK(a->n == b->n && a->finish == b->finish);
            CHECK(a->n >= 1 && a->n <= 9);
            CHECK(a->n == b->n &&
                  memcmp(a->ids, b->ids, (size_t)a->n * 4) == 0);
            CHECK(a->finish == GEN_FINISH_LENGTH ? a->n == 9
                                                 : a->ids[a->n - 1] == 7);
        }
        gen_outputs_release(one, 2);
    }
    if (st == GEN_SAMPLING) {
        struct gen_output other[6];
        int same = 1;

        p.seed = 6;
        CHECK(gen_run(g, &p, prompts, 3, other, NULL, NULL, err, sizeof(err)) ==
              0);
        for (int j = 0; j < 6; j++)
            same &=
                other[j].n == all[j].n &&
                memcmp(other[j].ids, all[j].ids, (size_t)other[j].n * 4) == 0;
        CHECK(!same);
        gen_outputs_release(other, 6);
    }
    gen_outputs_release(all, 6);
    gen_gpt_free(g);
    model_free(m);
}

static void
test_search_greedy_batch(void)
{
    check_batch_alone(GEN_GREEDY);
}

static void
test_search_sampling_batch(void)
{
    check_batch_alone(GEN_SAMPLING);
}

static void
test_search_beam_batch(void)
{
    check_batch_alone(GEN_BEAM);
}

/* The context: a 20-token prompt in 24 positions gets 4 new tokens. */
static void
test_search_context(void)
{
    struct model *m = tiny_gpt(1, 1);
    struct gen_gpt *g;
    struct gen_params p;
    int32_t ids[24];
    struct gen_prompt pr = { ids, 20, 0 };
    struct gen_output o;
    char err[256];

    for (int i = 0; i < 24; i++)
        ids[i] = i;
    memset(&p, 0, sizeof(p));
    p.strategy = GEN_GREEDY;
    p.filter = (struct gen_filter){ 1.0f, 0, -1, 0, 1.0f, 0, 1.0f };
    p.max_new_tokens = 50;
    p.num_return = 1;
    CHECK(gen_gpt_new(&g, m, 1, 24, 16, err, sizeof(err)) == 0);
    CHECK(gen_run(g, &p, &pr, 1, &o, NULL, NULL, err, sizeof(err)) == 0);
    CHECK(o.n == 4 && o.finish == GEN_FINISH_CONTEXT);
    gen_outputs_release(&o, 1);
    pr.n = 24;
    CHECK(gen_run(g, &p, &pr, 1, &o, NULL, NULL, err, sizeof(err)) < 0);
    CHECK(strstr(err, "a prompt of 24 tokens") != NULL);
    gen_gpt_free(g);
    model_free(m);
}

/* ------------------------------------------------------------ tokenizer */

/* BPE prompts: "<|endoftext|>" is its own token wherever it stands; the
 * text of new tokens leaves out the end of text and ids the tokenizer
 * lacks, and a character cut short reads U+FFFD. */
static void
test_bpe_encode_decode(void)
{
    static const char vocab[] = "{\"a\": 0, \"b\": 1, \"ab\": 2, "
                                "\"<|endoftext|>\": 3, \"\u00e4\": 4}";
    static const char merges[] = "#version: 0.2\na b\n";
    struct gen_checkpoint c;
    struct tok_err te;
    struct tok_buf out;
    int32_t *ids = NULL, gen[] = { 0, 2, 7, 3, 1, 4 };
    size_t n = 0;
    char err[256];

    memset(&c, 0, sizeof(c));
    c.cfg.eos_token_id = 3;
    CHECK(tok_bpe_parse(&c.bpe, vocab, sizeof(vocab) - 1, "vocab.json", merges,
                        sizeof(merges) - 1, "merges.txt", &te) == 0);
    c.endoftext = 3;
    CHECK(gen_encode(&c, "ab<|endoftext|>ba<|endoftext|>", 30, &ids, &n, err,
                     sizeof(err)) == 0);
    CHECK(n == 5 && ids[0] == 2 && ids[1] == 3 && ids[2] == 1 && ids[3] == 0 &&
          ids[4] == 3);
    free(ids);
    tok_buf_init(&out);
    CHECK(gen_decode(&c, gen, 6, 1, &out, err, sizeof(err)) == 0);
    CHECK(out.len == 7 && memcmp(out.data, "aabb\xef\xbf\xbd", 7) == 0);
    tok_buf_release(&out);
    tok_bpe_free(c.bpe);
}

TESTS(train_generate, TEST(test_attention_kv_matches_attention),
      TEST(test_attention_kv_bf16), TEST(test_gen_gpt_matches_model),
      TEST(test_repetition_penalty), TEST(test_top_k), TEST(test_top_p),
      TEST(test_filter_order), TEST(test_sample), TEST(test_log_softmax),
      TEST(test_beam_hypotheses), TEST(test_beam_top),
      TEST(test_search_greedy_batch), TEST(test_search_sampling_batch),
      TEST(test_search_beam_batch), TEST(test_search_context),
      TEST(test_bpe_encode_decode))
