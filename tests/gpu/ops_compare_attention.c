/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_attention.c: the cases of the attention core: full heads
 * with and without dropout, a tensor-parallel rank's heads.
 * The tolerances' rules are at the top of ops_compare.h.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

/* ------------------------------------------------------------ attention */

/* One attention case: NH heads h0.. of NH_all, D = C_all / NH_all.
 * Forward: out = P.v with P the softmax of D-term scores: a score is off
 * by at most eps sqrt(D) max|q| max|k|, which moves P's row by twice
 * that (in L1), and the T-term sum of P v adds eps T max|v|:  |d| <= eps
 * max|v| (T + 2 sqrt(D) max|q| max|k|) / (1 - p); bf16: P may be rounded
 * before P.v (2 roundings of max|v|) and out is (2 roundings).
 * Backward: the terms' magnitudes depend on the column sums of P, which
 * only the op sees, so the bound scales with the largest reference
 * gradient of each third: |d| <= 4 eps (T + D) max|ref - initial| + eps
 * max|initial| (bf16: 8 roundings), with ||d|| / ||ref|| under the
 * backward limit. */
static void
attention_case(struct oc *c, const struct oc_model *m, const char *what, int h0,
               int NH, float p, const float *key_bias)
{
    int B = m->B, T = m->T, D = m->C / m->NH, C = NH * D, NH_all = m->NH;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
    const uint64_t seed = 0xfeedface12345678ULL;
    float *qkv = oc_xmalloc(nq * 4), *dout = oc_uniform(c, no, 1.0);
    float *dqkv0 = oc_uniform(c, nq, 0.01), *out[OC_RUNS], *dq[3][OC_RUNS];
    double mq = 0, mk = 0, mv = 0, tol;
    char op[80], sh[96];

    for (size_t i = 0; i < nq; i++) {
        int part = (int)(i % (3 * (size_t)C) / C); /* q, k or v */
        double a = part == 2 ? 1.0 : 2.0;

        qkv[i] = (float)(a * (2.0 * ((oc_next(c) >> 11) / 9007199254740992.0) -
                              1.0));
    }
    oc_round_act(c, qkv, nq);
    for (size_t i = 0; i < nq; i++) {
        int part = (int)(i % (3 * (size_t)C) / C);
        double a = fabs(qkv[i]);

        if (part == 0)
            mq = fmax(mq, a);
        else if (part == 1)
            mk = fmax(mk, a);
        else
            mv = fmax(mv, a);
    }
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        void *d_qkv = oc_put_act(c, qkv, nq, "qkv");
        void *d_out = oc_blank(c, no * oc_act_size(c), "out");
        void *d_dout = oc_put_act(c, dout, no, "dout");
        void *d_dqkv = oc_put_act(c, dqkv0, nq, "dqkv");
        void *state = oc_blank(c, o->attention_state_bytes(B, T, NH), "state");
        void *scratch =
            oc_blank(c, o->attention_scratch_bytes(B, T, NH, C), "scratch");
        float *d_bias = key_bias
                            ? oc_put(c, key_bias, (size_t)B * T * 4, "key_bias")
                            : NULL;
        float *g;

        o->attention_fwd(d_out, state, d_qkv, d_bias, B, T, C, NH, h0, NH_all,
                         m->causal, p, seed);
        oc_sync(c, "attention_fwd");
        out[r] = oc_get_act(c, d_out, no, "attention_fwd");
        o->attention_bwd(d_dqkv, scratch, d_dout, d_out, d_qkv, state, d_bias,
                         B, T, C, NH, h0, NH_all, m->causal, p, seed);
        oc_sync(c, "attention_bwd");
        g = oc_get_act(c, d_dqkv, nq, "attention_bwd");
        oc_pool_free(c);
        /* Split dqkv into its q, k and v thirds. */
        for (int part = 0; part < 3; part++) {
            float *t = oc_xmalloc(no * 4);

            for (size_t row = 0; row < (size_t)B * T; row++)
                memcpy(t + row * C, g + row * 3 * C + (size_t)part * C,
                       (size_t)C * 4);
            dq[part][r] = t;
        }
        free(g);
    }
    snprintf(sh, sizeof(sh), "%s B%d T%d D%d h%d-%d/%d%s p %g", m->name, B, T,
             D, h0, h0 + NH - 1, NH_all,
             key_bias    ? " bias"
             : m->causal ? " causal"
                         : "",
             p);
    tol = OC_EPS * mv * (T + 2 * sqrt(D) * mq * mk) / (1 - p) +
          oc_bf16_tol(c, 2, mv / (1 - p)) +
          oc_bf16_tol(c, 2, oc_maxabs(out[0], no));
    snprintf(op, sizeof(op), "attention_fwd.%s", what);
    oc_check(c, op, sh, out, no, tol, OC_NR(c), NULL);
    for (int part = 0; part < 3; part++) {
        static const char *const name[3] = { "dq", "dk", "dv" };
        float *init = oc_xmalloc(no * 4);
        double mref = 0, minit;

        for (size_t row = 0; row < (size_t)B * T; row++)
            memcpy(init + row * C, dqkv0 + row * 3 * C + (size_t)part * C,
                   (size_t)C * 4);
        mref = oc_maxabs_delta(dq[part][0], init, no);
        minit = oc_maxabs(init, no);
        tol = 4 * OC_EPS * (T + D) * mref + OC_EPS * minit +
              oc_bf16_tol(c, 8, mref) + oc_bf16_tol(c, 2, minit);
        snprintf(op, sizeof(op), "attention_bwd.%s.%s", what, name[part]);
        oc_check(c, op, sh, dq[part], no, tol, OC_NR_BWD(c), NULL);
        oc_free_runs(dq[part]);
        free(init);
    }
    oc_free_runs(out);
    free(qkv);
    free(dout);
    free(dqkv0);
}

/* Full heads without and with dropout, and rank 1 of 2 of tensor
 * parallelism (heads NH/2..NH-1, dropout drawn as the whole model's).
 * ERNIE's batch is padded: key_bias -10000 past each row's length.  The
 * bf16 section runs without dropout: cuDNN's fused attention draws its
 * own bits (ops.h). */
void
oc_case_attention(struct oc *c, const struct oc_model *m)
{
    float *bias = NULL;
    float p = c->dt == OPS_F32 ? 0.1f : 0.0f;

    if (!m->causal) {
        bias = oc_xmalloc((size_t)m->B * m->T * 4);
        for (int b = 0; b < m->B; b++) {
            int len = m->T - b * (m->T / 3); /* T, then 2/3 T, ... */

            for (int j = 0; j < m->T; j++)
                bias[(size_t)b * m->T + j] = j < len ? 0.0f : -10000.0f;
        }
    }
    attention_case(c, m, "heads", 0, m->NH, 0.0f, bias);
    if (p > 0)
        attention_case(c, m, "heads_dropout", 0, m->NH, p, bias);
    attention_case(c, m, "tp_rank1", m->NH / 2, m->NH / 2, p, bias);
    free(bias);
}

/* ------------------------------------------------------------ attention_kv */

/* Attention over a key/value cache (generation): the first half of each
 * sequence at once, then one token more at the next position, in B of
 * B + 1 cache slots.  Out: attention_fwd's bound over T keys (no
 * dropout); the cache rows written are copies of k and v: exact. */
void
oc_case_attention_kv(struct oc *c, const struct oc_model *m)
{
    int B = m->B, T = m->T, C = m->C, NH = m->NH, D = C / NH, S = B + 1;
    int n1 = T / 2;
    size_t nq = (size_t)B * T * 3 * C, nc = (size_t)T * S * C;
    float *qkv, *out1[OC_RUNS], *out2[OC_RUNS];
    float *cache[OC_RUNS];
    double mq = 0, mk = 0, mv = 0, tol;
    int32_t pos1[64], pos2[64];
    char sh[96];
    size_t bad = 0, n_rows = 0;

    if (!m->causal || B > 64)
        return;
    qkv = oc_xmalloc(nq * 4);
    for (size_t i = 0; i < nq; i++) {
        int part = (int)(i % (3 * (size_t)C) / C);

        qkv[i] =
            (float)((part == 2 ? 1.0 : 2.0) *
                    (2.0 * ((oc_next(c) >> 11) / 9007199254740992.0) - 1.0));
    }
    oc_round_act(c, qkv, nq);
    for (size_t i = 0; i < nq; i++) {
        int part = (int)(i % (3 * (size_t)C) / C);
        double a = fabs(qkv[i]);

        mq = part == 0 ? fmax(mq, a) : mq;
        mk = part == 1 ? fmax(mk, a) : mk;
        mv = part == 2 ? fmax(mv, a) : mv;
    }
    for (int b = 0; b < B; b++) {
        pos1[b] = 0;
        pos2[b] = n1;
    }
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        size_t rows1 = (size_t)B * n1;
        float *in1 = oc_xmalloc(rows1 * 3 * C * 4);
        float *in2 = oc_xmalloc((size_t)B * 3 * C * 4);
        void *kc = oc_blank(c, nc * oc_act_size(c), "kc");
        void *vc = oc_blank(c, nc * oc_act_size(c), "vc");
        void *d_out1 = oc_blank(c, rows1 * C * oc_act_size(c), "out");
        void *d_out2 = oc_blank(c, (size_t)B * C * oc_act_size(c), "out");
        void *d_in1, *d_in2, *d_pos1, *d_pos2;

        for (int b = 0; b < B; b++) {
            memcpy(in1 + (size_t)b * n1 * 3 * C, qkv + (size_t)b * T * 3 * C,
                   (size_t)n1 * 3 * C * 4);
            memcpy(in2 + (size_t)b * 3 * C, qkv + ((size_t)b * T + n1) * 3 * C,
                   (size_t)3 * C * 4);
        }
        d_in1 = oc_put_act(c, in1, rows1 * 3 * C, "qkv");
        d_in2 = oc_put_act(c, in2, (size_t)B * 3 * C, "qkv");
        d_pos1 = oc_put(c, pos1, (size_t)B * 4, "pos");
        d_pos2 = oc_put(c, pos2, (size_t)B * 4, "pos");
        o->attention_kv_fwd(d_out1, kc, vc, d_in1, d_pos1, B, n1, C, NH, S, T);
        o->attention_kv_fwd(d_out2, kc, vc, d_in2, d_pos2, B, 1, C, NH, S, T);
        oc_sync(c, "attention_kv_fwd");
        out1[r] = oc_get_act(c, d_out1, rows1 * C, "attention_kv_fwd");
        out2[r] = oc_get_act(c, d_out2, (size_t)B * C, "attention_kv_fwd");
        cache[r] = oc_get_act(c, kc, nc, "attention_kv_fwd");
        oc_pool_free(c);
        free(in1);
        free(in2);
    }
    /* Rows t * S + b, t <= n1, b < B of the key cache: q's neighbours. */
    for (int t = 0; t <= n1; t++)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < C; j++) {
                size_t at = ((size_t)t * S + b) * C + j;
                float want = qkv[((size_t)b * T + t) * 3 * C + C + j];

                n_rows++;
                bad += cache[1][at] != want || cache[0][at] != want;
            }
    snprintf(sh, sizeof(sh), "%s B%d T%d D%d cache", m->name, B, T, D);
    oc_check_count(c, "attention_kv_fwd.cache", sh, bad, n_rows,
                   "keys not copied exactly");
    tol = OC_EPS * mv * (T + 2 * sqrt(D) * mq * mk) + oc_bf16_tol(c, 2, mv) +
          oc_bf16_tol(c, 2, oc_maxabs(out1[0], 1));
    snprintf(sh, sizeof(sh), "%s B%d n%d D%d", m->name, B, n1, D);
    oc_check(c, "attention_kv_fwd.prompt", sh, out1, (size_t)B * n1 * C, tol,
             OC_NR(c), NULL);
    snprintf(sh, sizeof(sh), "%s B%d pos %d D%d", m->name, B, n1, D);
    oc_check(c, "attention_kv_fwd.step", sh, out2, (size_t)B * C, tol, OC_NR(c),
             NULL);
    oc_free_runs(out1);
    oc_free_runs(out2);
    oc_free_runs(cache);
    free(qkv);
}
