/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_mutants.c: planted faults for ops_compare --self-test.  Each
 * is the CPU backend's table with one behaviour broken the way a GPU
 * kernel could be (TF32 left on, a dropout seed or head offset off, a
 * mask ignored, a reduction in float, a non-deterministic result); the
 * self-test runs the comparison with it as the backend under test and
 * requires the rows named to fail and every other row to pass, so the
 * tolerances are shown to be tight enough to catch the fault and loose
 * enough to pass the rest.  The wrappers read and write the buffers
 * directly: the CPU backend's memory is host memory.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

const struct oc_mutant oc_mutants[] = {
    { "tf32", "GEMM inputs rounded to TF32", "linear_", 0 },
    { "bias", "linear_fwd drops the bias", "linear_fwd.qkv", 0 },
    { "nondet", "linear_fwd's output off by an ulp every other call",
      "linear_fwd", 0 },
    { "gelu", "exact GELU computed by the tanh approximation", "act_fwd.gelu",
      0 },
    { "ln_eps", "LayerNorm's eps off by 1e-4", "layernorm_fwd", 0 },
    { "ln_db", "LayerNorm backward skips db", "layernorm_bwd.db", 0 },
    { "dropout_seed", "dropout draws with another seed", "dropout_fwd", 0 },
    { "att_h0", "attention ignores the head offset h0",
      "attention_fwd.tp_rank1 attention_bwd.tp_rank1", 0 },
    { "att_bias", "attention ignores key_bias", "attention_fwd attention_bwd",
      0 },
    { "att_causal", "attention ignores the causal mask",
      "attention_fwd attention_bwd", 0 },
    { "kv_pos", "attention_kv_fwd takes every position one further",
      "attention_kv_fwd", 0 },
    { "xent_grad", "xent's gradient scaled by 1.001",
      "xent.dlogits xent.in_place_scaled.dlogits", 0 },
    { "xent_pads", "the vocab's pad columns counted as real",
      "xent.losses xent.dlogits xent.in_place_scaled xent_max xent_partial "
      "xent_finish",
      0 },
    { "embed_skip", "embedding backward ignores skip_id", "embed_bwd", 0 },
    { "gather_off", "gather_rows reads row 1 for row 0", "gather_rows", 0 },
    { "sumsq_float", "sum of squares accumulated in float", "sumsq_acc", 0 },
    { "adamw_lr", "AdamW's lr off by 1e-4 relative",
      "adamw.decay.p adamw.no_decay.p", 0 },
    { "adamw_skip", "AdamW ignores st->skip", "adamw.skipped", 0 },
    { "clip_off", "step_prepare ignores max_norm",
      "step_prepare.clip step_prepare.scale_grows step_prepare.scale_holds",
      0 },
    { "cast_trunc", "float32 to bfloat16 by truncation", "cast.f32>bf16", 0 },
    { "loss_check_off", "loss_check never records a bad step", "loss_check.nan",
      0 },
    { "ln_eps_bf16", "bf16 section: LayerNorm's eps off by 1e-2",
      "layernorm_fwd residual_layernorm_fwd", 1 },
};
const int oc_n_mutants = sizeof(oc_mutants) / sizeof(oc_mutants[0]);

static const struct ops *base;
static struct ops mut;
static const char *active;

/* ------------------------------------------------------------ GEMMs */

/* Round to TF32 (10 bits of mantissa, to nearest even), as tensor cores
 * read fp32 operands when TF32 is allowed. */
static float *
tf32_copy(const void *src, size_t n)
{
    const float *x = src;
    float *y = oc_xmalloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++) {
        uint32_t u;

        memcpy(&u, &x[i], 4);
        u += 0xfffu + ((u >> 13) & 1u);
        u &= ~0x1fffu;
        memcpy(&y[i], &u, 4);
    }
    return y;
}

static void
m_linear_fwd(void *y, const void *x, const void *w, const void *b, int M, int K,
             int N)
{
    static unsigned calls;

    if (strcmp(active, "bias") == 0) {
        base->linear_fwd(y, x, w, NULL, M, K, N);
    } else if (strcmp(active, "nondet") == 0) {
        base->linear_fwd(y, x, w, b, M, K, N);
        if (calls++ % 2 == 0)
            ((float *)y)[0] = nextafterf(((float *)y)[0], INFINITY);
    } else {
        float *tx = tf32_copy(x, (size_t)M * K);
        float *tw = tf32_copy(w, (size_t)N * K);

        base->linear_fwd(y, tx, tw, b, M, K, N);
        free(tx);
        free(tw);
    }
}

static void
m_linear_act_fwd(void *y, void *pre, const void *x, const void *w,
                 const void *b, int M, int K, int N, enum ops_act act)
{
    float *tx = tf32_copy(x, (size_t)M * K), *tw = tf32_copy(w, (size_t)N * K);

    base->linear_act_fwd(y, pre, tx, tw, b, M, K, N, act);
    free(tx);
    free(tw);
}

static void
m_linear_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
             const void *w, int M, int K, int N)
{
    float *tdy = tf32_copy(dy, (size_t)M * N),
          *tx = tf32_copy(x, (size_t)M * K);
    float *tw = tf32_copy(w, (size_t)N * K);

    base->linear_bwd(dx, dw, db, tdy, tx, tw, M, K, N);
    free(tdy);
    free(tx);
    free(tw);
}

/* ------------------------------------------------------------ layers */

static void
m_act_fwd(void *y, const void *x, size_t n, enum ops_act act)
{
    base->act_fwd(y, x, n, act == OPS_ACT_GELU ? OPS_ACT_GELU_TANH : act);
}

static void
m_layernorm_fwd(void *y, float *mean, float *rstd, const void *x, const void *w,
                const void *b, int n, int C, float eps)
{
    float d = strcmp(active, "ln_eps") == 0 ? 1e-4f : 1e-2f;

    base->layernorm_fwd(y, mean, rstd, x, w, b, n, C, eps + d);
}

static void
m_residual_layernorm_fwd(void *r, void *y, float *mean, float *rstd,
                         const void *a, const void *bb, const void *w,
                         const void *b, int n, int C, float eps)
{
    base->residual_layernorm_fwd(r, y, mean, rstd, a, bb, w, b, n, C,
                                 eps + 1e-2f);
}

static void
m_layernorm_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
                const void *w, const float *mean, const float *rstd, int n,
                int C)
{
    (void)db;
    base->layernorm_bwd(dx, dw, NULL, dy, x, w, mean, rstd, n, C);
}

static void
m_dropout_fwd(void *y, const void *x, size_t n, float p, uint64_t seed)
{
    base->dropout_fwd(y, x, n, p, seed ^ 1);
}

static void
m_attention_fwd(void *out, void *state, const void *qkv, const float *kb, int B,
                int T, int C, int NH, int h0, int NH_all, int causal, float p,
                uint64_t seed)
{
    if (strcmp(active, "att_h0") == 0)
        h0 = 0;
    else if (strcmp(active, "att_bias") == 0)
        kb = NULL;
    else
        causal = 0;
    base->attention_fwd(out, state, qkv, kb, B, T, C, NH, h0, NH_all, causal, p,
                        seed);
}

static void
m_attention_bwd(void *dqkv, void *scratch, const void *dout, const void *out,
                const void *qkv, const void *state, const float *kb, int B,
                int T, int C, int NH, int h0, int NH_all, int causal, float p,
                uint64_t seed)
{
    if (strcmp(active, "att_h0") == 0)
        h0 = 0;
    else if (strcmp(active, "att_bias") == 0)
        kb = NULL;
    else
        causal = 0;
    base->attention_bwd(dqkv, scratch, dout, out, qkv, state, kb, B, T, C, NH,
                        h0, NH_all, causal, p, seed);
}

static void
m_xent(float *losses, void *dl, const void *logits, const int32_t *t, int n,
       int V, int V_valid, float dscale, const float *loss_scale)
{
    if (strcmp(active, "xent_pads") == 0)
        V_valid = V;
    else
        dscale *= 1.001f;
    base->xent(losses, dl, logits, t, n, V, V_valid, dscale, loss_scale);
}

static void
m_xent_max(float *rowmax, const void *logits, int n, int V, int V_valid)
{
    (void)V_valid;
    base->xent_max(rowmax, logits, n, V, V);
}

static void
m_xent_partial(double *sums, const void *logits, const float *rowmax,
               const int32_t *targets, int n, int V, int V_valid, int v0)
{
    (void)V_valid;
    base->xent_partial(sums, logits, rowmax, targets, n, V, V, v0);
}

static void
m_embed_bwd(float *dtable, const void *dy, const int32_t *ids, int n, int C,
            int32_t skip_id)
{
    (void)skip_id;
    base->embed_bwd(dtable, dy, ids, n, C, -1);
}

static void
m_gather_rows(void *y, const void *x, const int32_t *rows, int n, int C)
{
    int32_t *r = oc_xmalloc((size_t)n * 4);

    memcpy(r, rows, (size_t)n * 4);
    r[0] += 1;
    base->gather_rows(y, x, r, n, C);
    free(r);
}

/* ------------------------------------------------------------ the step */

static void
m_sumsq_acc(double *acc, const float *x, size_t n)
{
    float s = 0.0f;

    for (size_t i = 0; i < n; i++)
        s += x[i] * x[i];
    *acc += s;
}

static void
m_adamw(float *p, void *pc, const float *grad, float *m, float *v, size_t n,
        float lr, float b1, float b2, float eps, float wd,
        const struct ops_step *st)
{
    struct ops_step s = *st;

    if (strcmp(active, "adamw_lr") == 0)
        lr *= 1.0001f;
    else
        s.skip = 0;
    base->adamw(p, pc, grad, m, v, n, lr, b1, b2, eps, wd, &s);
}

static void
m_step_prepare(struct ops_step *st, const struct ops_step_opts *o)
{
    struct ops_step_opts so = *o;

    so.max_norm = 0.0f;
    base->step_prepare(st, &so);
}

static void
m_loss_check(struct ops_step *st, const double *loss, int64_t step)
{
    (void)st;
    (void)loss;
    (void)step;
}

static void
m_cast(void *dst, enum ops_dtype dt, const void *src, enum ops_dtype st,
       size_t n)
{
    if (dt == OPS_BF16 && st == OPS_F32) {
        const uint32_t *s = src;
        uint16_t *d = dst;

        for (size_t i = 0; i < n; i++)
            d[i] = (uint16_t)(s[i] >> 16);
        return;
    }
    base->cast(dst, dt, src, st, n);
}

static void
m_attention_kv_fwd(void *out, void *kc, void *vc, const void *qkv,
                   const int32_t *pos, int B, int n, int C, int NH, int S,
                   int T_max)
{
    int32_t moved[64];

    for (int b = 0; b < B && b < 64; b++)
        moved[b] = pos[b] + 1;
    base->attention_kv_fwd(out, kc, vc, qkv, moved, B, n, C, NH, S, T_max);
}

/* ------------------------------------------------------------ the table */

const struct ops *
oc_mutant_ops(const struct ops *b, const char *name)
{
    base = b;
    mut = *b;
    active = name;
    if (strcmp(name, "tf32") == 0) {
        mut.linear_fwd = m_linear_fwd;
        mut.linear_act_fwd = m_linear_act_fwd;
        mut.linear_bwd = m_linear_bwd;
    } else if (strcmp(name, "bias") == 0 || strcmp(name, "nondet") == 0) {
        mut.linear_fwd = m_linear_fwd;
    } else if (strcmp(name, "gelu") == 0) {
        mut.act_fwd = m_act_fwd;
    } else if (strcmp(name, "ln_eps") == 0) {
        mut.layernorm_fwd = m_layernorm_fwd;
    } else if (strcmp(name, "ln_eps_bf16") == 0) {
        mut.layernorm_fwd = m_layernorm_fwd;
        mut.residual_layernorm_fwd = m_residual_layernorm_fwd;
    } else if (strcmp(name, "ln_db") == 0) {
        mut.layernorm_bwd = m_layernorm_bwd;
    } else if (strcmp(name, "dropout_seed") == 0) {
        mut.dropout_fwd = m_dropout_fwd;
    } else if (strncmp(name, "att_", 4) == 0) {
        mut.attention_fwd = m_attention_fwd;
        mut.attention_bwd = m_attention_bwd;
    } else if (strcmp(name, "kv_pos") == 0) {
        mut.attention_kv_fwd = m_attention_kv_fwd;
    } else if (strcmp(name, "xent_grad") == 0) {
        mut.xent = m_xent;
    } else if (strcmp(name, "xent_pads") == 0) {
        mut.xent = m_xent;
        mut.xent_max = m_xent_max;
        mut.xent_partial = m_xent_partial;
    } else if (strcmp(name, "embed_skip") == 0) {
        mut.embed_bwd = m_embed_bwd;
    } else if (strcmp(name, "gather_off") == 0) {
        mut.gather_rows = m_gather_rows;
    } else if (strcmp(name, "sumsq_float") == 0) {
        mut.sumsq_acc = m_sumsq_acc;
    } else if (strncmp(name, "adamw_", 6) == 0) {
        mut.adamw = m_adamw;
    } else if (strcmp(name, "clip_off") == 0) {
        mut.step_prepare = m_step_prepare;
    } else if (strcmp(name, "loss_check_off") == 0) {
        mut.loss_check = m_loss_check;
    } else if (strcmp(name, "cast_trunc") == 0) {
        mut.cast = m_cast;
    }
    return &mut;
}
