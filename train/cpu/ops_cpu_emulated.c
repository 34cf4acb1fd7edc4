/* SPDX-License-Identifier: MIT */
/*
 * ops_cpu_emulated.c: the CPU backend computing in bfloat16 or float16,
 * the CPU twin of the CUDA backend's mixed precision (so the AMP plumbing
 * is tested without a GPU).  Activations, their gradients and the
 * parameters' compute copy are 16-bit values; each op converts its 16-bit
 * operands to fp32, runs the fp32 kernel (ops_cpu.c) and rounds its 16-bit
 * outputs to nearest even; what ops.h keeps in fp32 (LayerNorm
 * statistics, losses, parameter gradients, master weights, moments) stays
 * so.  A fused op is its two ops in turn, each output rounded.  Slow (a
 * conversion and an allocation per operand), and meant to be.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_int.h"

/* ------------------------------------------------------------ operands */

/* The fp32 copies an op works on, freed together. */
struct work {
    enum ops_dtype d;
    const char *op;
    void *held[8];
    int n_held;
};

static float *
hold(struct work *w, float *p)
{
    if (p != NULL)
        w->held[w->n_held++] = p;
    return p;
}

/* An fp32 scratch of n elements (NULL once the backend has failed). */
static float *
fresh(struct work *w, size_t n)
{
    return cpu_failed()
               ? NULL
               : hold(w, cpu_scratch((n ? n : 1) * sizeof(float), w->op));
}

/* x[0..n) of the work's dtype as fp32 (NULL for NULL). */
static float *
in(struct work *w, const void *x, size_t n)
{
    float *f;

    if (x == NULL || (f = fresh(w, n)) == NULL)
        return NULL;
    cpu_cast(f, OPS_F32, x, w->d, n);
    return f;
}

/* y[0..n) = f rounded to the work's dtype. */
static void
out(const struct work *w, void *y, const float *f, size_t n)
{
    if (y != NULL && !cpu_failed())
        cpu_cast(y, w->d, f, OPS_F32, n);
}

static void
done(struct work *w)
{
    for (int i = 0; i < w->n_held; i++)
        cpu_scratch_free(w->held[i]);
}

#define WORK(name) struct work w = { d, name, { 0 }, 0 }

/* Whether the op may run: the backend has not failed (and the copies it
 * took are all there). */
static int
ready(void)
{
    return !cpu_failed();
}

/* ------------------------------------------------------------ ops */

static void
emu_linear_fwd(enum ops_dtype d, void *y, const void *x, const void *wt,
               const void *b, int M, int K, int N)
{
    WORK("linear_fwd");
    size_t ny = (size_t)M * (size_t)N;
    float *xf = in(&w, x, (size_t)M * (size_t)K);
    float *wf = in(&w, wt, (size_t)N * (size_t)K), *bf = in(&w, b, (size_t)N);
    float *yf = fresh(&w, ny);

    if (ready()) {
        cpu_f32_linear_fwd(yf, xf, wf, bf, M, K, N);
        out(&w, y, yf, ny);
    }
    done(&w);
}

static void
emu_act_fwd(enum ops_dtype d, void *y, const void *x, size_t n,
            enum ops_act act)
{
    WORK("act_fwd");
    float *xf = in(&w, x, n);

    if (ready()) {
        cpu_f32_act_fwd(xf, xf, n, act);
        out(&w, y, xf, n);
    }
    done(&w);
}

static void
emu_linear_act_fwd(enum ops_dtype d, void *y, void *pre, const void *x,
                   const void *wt, const void *b, int M, int K, int N,
                   enum ops_act act)
{
    emu_linear_fwd(d, pre, x, wt, b, M, K, N);
    emu_act_fwd(d, y, pre, (size_t)M * (size_t)N, act);
}

static void
emu_linear_bwd(enum ops_dtype d, void *dx, float *dw, float *db, const void *dy,
               const void *x, const void *wt, int M, int K, int N)
{
    WORK("linear_bwd");
    size_t nx = (size_t)M * (size_t)K;
    float *dyf = in(&w, dy, (size_t)M * (size_t)N);
    float *xf = dw != NULL ? in(&w, x, nx) : NULL;
    float *wf = dx != NULL ? in(&w, wt, (size_t)N * (size_t)K) : NULL;
    float *dxf = in(&w, dx, nx);

    if (ready()) {
        cpu_f32_linear_bwd(dxf, dw, db, dyf, xf, wf, M, K, N);
        out(&w, dx, dxf, nx);
    }
    done(&w);
}

/* Rows of a table looked up element by element: the table (a vocabulary)
 * is not converted whole. */
static void
emu_embed_fwd(enum ops_dtype d, void *y, const int32_t *ids, const void *table,
              int n, int C, int accumulate)
{
    if (!ready())
        return;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        size_t at = (size_t)i * (size_t)C;
        float row[256];

        if (ids[i] < 0 && accumulate)
            continue; /* another rank's shard: adds nothing */
        for (int j0 = 0; j0 < C; j0 += 256) {
            int nj = C - j0 < 256 ? C - j0 : 256;

            if (ids[i] < 0)
                memset(row, 0, (size_t)nj * sizeof(float));
            else
                cpu_cast(row, OPS_F32,
                         (const char *)table +
                             ((size_t)ids[i] * (size_t)C + (size_t)j0) * 2,
                         d, (size_t)nj);
            if (accumulate) {
                float cur[256];

                cpu_cast(cur, OPS_F32, (char *)y + (at + (size_t)j0) * 2, d,
                         (size_t)nj);
                for (int j = 0; j < nj; j++)
                    row[j] += cur[j];
            }
            cpu_cast((char *)y + (at + (size_t)j0) * 2, d, row, OPS_F32,
                     (size_t)nj);
        }
    }
}

static void
emu_embed_bwd(enum ops_dtype d, float *dtable, const void *dy,
              const int32_t *ids, int n, int C, int32_t skip_id)
{
    WORK("embed_bwd");
    float *dyf = in(&w, dy, (size_t)n * (size_t)C);

    if (ready())
        cpu_f32_embed_bwd(dtable, dyf, ids, n, C, skip_id);
    done(&w);
}

static void
emu_layernorm_fwd(enum ops_dtype d, void *y, float *mean, float *rstd,
                  const void *x, const void *wt, const void *b, int n, int C,
                  float eps)
{
    WORK("layernorm_fwd");
    size_t nx = (size_t)n * (size_t)C;
    float *xf = in(&w, x, nx), *wf = in(&w, wt, (size_t)C);
    float *bf = in(&w, b, (size_t)C), *yf = fresh(&w, nx);

    if (ready()) {
        cpu_f32_layernorm_fwd(yf, mean, rstd, xf, wf, bf, n, C, eps);
        out(&w, y, yf, nx);
    }
    done(&w);
}

static void
emu_add(enum ops_dtype d, void *y, const void *a, const void *b, size_t n)
{
    WORK("add");
    float *af = in(&w, a, n), *bf = in(&w, b, n);

    if (ready()) {
        cpu_f32_add(af, af, bf, n);
        out(&w, y, af, n);
    }
    done(&w);
}

static void
emu_residual_layernorm_fwd(enum ops_dtype d, void *r, void *y, float *mean,
                           float *rstd, const void *a, const void *bb,
                           const void *wt, const void *b, int n, int C,
                           float eps)
{
    emu_add(d, r, a, bb, (size_t)n * (size_t)C);
    emu_layernorm_fwd(d, y, mean, rstd, r, wt, b, n, C, eps);
}

static void
emu_layernorm_bwd(enum ops_dtype d, void *dx, float *dw, float *db,
                  const void *dy, const void *x, const void *wt,
                  const float *mean, const float *rstd, int n, int C)
{
    WORK("layernorm_bwd");
    size_t nx = (size_t)n * (size_t)C;
    float *dyf = in(&w, dy, nx), *xf = in(&w, x, nx);
    float *wf = in(&w, wt, (size_t)C), *dxf = in(&w, dx, nx);

    if (ready()) {
        cpu_f32_layernorm_bwd(dxf, dw, db, dyf, xf, wf, mean, rstd, n, C);
        out(&w, dx, dxf, nx);
    }
    done(&w);
}

static void
emu_act_bwd(enum ops_dtype d, void *dx, const void *dy, const void *x, size_t n,
            enum ops_act act)
{
    WORK("act_bwd");
    float *dyf = in(&w, dy, n), *xf = in(&w, x, n), *dxf = in(&w, dx, n);

    if (ready()) {
        cpu_f32_act_bwd(dxf, dyf, xf, n, act);
        out(&w, dx, dxf, n);
    }
    done(&w);
}

static void
emu_accumulate(enum ops_dtype d, void *y, const void *x, size_t n)
{
    emu_add(d, y, y, x, n);
}

static void
emu_scale(enum ops_dtype d, void *x, size_t n, float s)
{
    WORK("scale");
    float *xf = in(&w, x, n);

    if (ready()) {
        cpu_f32_scale(xf, n, s);
        out(&w, x, xf, n);
    }
    done(&w);
}

static void
emu_dropout_fwd(enum ops_dtype d, void *y, const void *x, size_t n, float p,
                uint64_t seed)
{
    WORK("dropout_fwd");
    float *xf = in(&w, x, n);

    if (ready()) {
        cpu_f32_dropout_fwd(xf, xf, n, p, seed);
        out(&w, y, xf, n);
    }
    done(&w);
}

static void
emu_dropout_bwd(enum ops_dtype d, void *dx, const void *dy, size_t n, float p,
                uint64_t seed)
{
    WORK("dropout_bwd");
    float *dyf = in(&w, dy, n), *dxf = in(&w, dx, n);

    if (ready()) {
        cpu_f32_dropout_bwd(dxf, dyf, n, p, seed);
        out(&w, dx, dxf, n);
    }
    done(&w);
}

/* The state is the fp32 probabilities, as in the float32 table. */
static void
emu_attention_fwd(enum ops_dtype d, void *outp, void *state, const void *qkv,
                  const float *key_bias, int B, int T, int C, int NH, int h0,
                  int NH_all, int causal, float p, uint64_t seed)
{
    WORK("attention_fwd");
    size_t BT = (size_t)B * (size_t)T;
    float *qkvf = in(&w, qkv, 3 * BT * (size_t)C);
    float *of = fresh(&w, BT * (size_t)C);

    if (ready()) {
        cpu_f32_attention_fwd(of, state, qkvf, key_bias, B, T, C, NH, h0,
                              NH_all, causal, p, seed);
        out(&w, outp, of, BT * (size_t)C);
    }
    done(&w);
}

static void
emu_attention_bwd(enum ops_dtype d, void *dqkv, void *scratch, const void *dout,
                  const void *qkv, const void *state, int B, int T, int C,
                  int NH, int h0, int NH_all, float p, uint64_t seed)
{
    WORK("attention_bwd");
    size_t BT = (size_t)B * (size_t)T, nq = 3 * BT * (size_t)C;
    float *doutf = in(&w, dout, BT * (size_t)C), *qkvf = in(&w, qkv, nq);
    float *dqf = in(&w, dqkv, nq);

    if (ready()) {
        cpu_f32_attention_bwd(dqf, scratch, doutf, qkvf, state, B, T, C, NH, h0,
                              NH_all, p, seed);
        out(&w, dqkv, dqf, nq);
    }
    done(&w);
}

/* The caches' rows up to the last new position go through fp32 and back
 * (the old rows unchanged: a 16-bit value converts back exactly; the new
 * ones are the 16-bit keys and values of qkv). */
static void
emu_attention_kv_fwd(enum ops_dtype d, void *outp, void *kc, void *vc,
                     const void *qkv, const int32_t *pos, int B, int n, int C,
                     int NH, int S, int T_max)
{
    WORK("attention_kv_fwd");
    int L_max = 0;
    size_t rows = (size_t)B * (size_t)n, nc;
    float *qkvf, *kf, *vf, *of;

    for (int b = 0; b < B; b++)
        L_max = pos[b] + n > L_max ? pos[b] + n : L_max;
    nc = (size_t)L_max * (size_t)S * (size_t)C;
    qkvf = in(&w, qkv, 3 * rows * (size_t)C);
    kf = in(&w, kc, nc);
    vf = in(&w, vc, nc);
    of = fresh(&w, rows * (size_t)C);
    if (ready()) {
        (void)T_max;
        cpu_f32_attention_kv_fwd(of, kf, vf, qkvf, pos, B, n, C, NH, S, L_max);
        out(&w, outp, of, rows * (size_t)C);
        out(&w, kc, kf, nc);
        out(&w, vc, vf, nc);
    }
    done(&w);
}

/* The gradient of the loss is formed in fp32 (with the loss scale) and
 * rounded once; it may overwrite the logits, already copied. */
static void
emu_xent(enum ops_dtype d, float *losses, void *dlogits, const void *logits,
         const int32_t *targets, int n, int V, int V_valid, float dscale,
         const float *loss_scale)
{
    WORK("xent");
    size_t nl = (size_t)n * (size_t)V;
    float *lf = in(&w, logits, nl);

    if (ready()) {
        cpu_f32_xent(losses, dlogits ? lf : NULL, lf, targets, n, V, V_valid,
                     cpu_xent_scale(dscale, loss_scale));
        out(&w, dlogits, lf, nl);
    }
    done(&w);
}

static void
emu_xent_max(enum ops_dtype d, float *rowmax, const void *logits, int n, int V,
             int V_valid)
{
    WORK("xent_max");
    float *lf = in(&w, logits, (size_t)n * (size_t)V);

    if (ready())
        cpu_f32_xent_max(rowmax, lf, n, V, V_valid);
    done(&w);
}

static void
emu_xent_partial(enum ops_dtype d, double *sums, const void *logits,
                 const float *rowmax, const int32_t *targets, int n, int V,
                 int V_valid, int v0)
{
    WORK("xent_partial");
    float *lf = in(&w, logits, (size_t)n * (size_t)V);

    if (ready())
        cpu_f32_xent_partial(sums, lf, rowmax, targets, n, V, V_valid, v0);
    done(&w);
}

static void
emu_xent_finish(enum ops_dtype d, float *losses, void *dlogits,
                const void *logits, const float *rowmax, const double *sums,
                const int32_t *targets, int n, int V, int V_valid, int v0,
                float dscale, const float *loss_scale)
{
    WORK("xent_finish");
    size_t nl = (size_t)n * (size_t)V;
    float *lf = in(&w, logits, nl);

    if (ready()) {
        cpu_f32_xent_finish(losses, dlogits ? lf : NULL, lf, rowmax, sums,
                            targets, n, V, V_valid, v0,
                            cpu_xent_scale(dscale, loss_scale));
        out(&w, dlogits, lf, nl);
    }
    done(&w);
}

static void
emu_gather_rows(enum ops_dtype d, void *y, const void *x, const int32_t *rows,
                int n, int C)
{
    if (ready())
        cpu_rows_copy(y, x, rows, n, (size_t)C * ops_dtype_size(d));
}

/* dx's rows up to the largest named, in fp32, summed in i order, rounded
 * once. */
static void
emu_scatter_add_rows(enum ops_dtype d, void *dx, const void *dy,
                     const int32_t *rows, int n, int C)
{
    WORK("scatter_add_rows");
    int32_t top = -1;
    size_t nx;
    float *dyf, *dxf;

    for (int i = 0; i < n; i++)
        top = rows[i] > top ? rows[i] : top;
    nx = (size_t)(top + 1) * (size_t)C;
    dyf = in(&w, dy, (size_t)n * (size_t)C);
    dxf = in(&w, dx, nx);
    if (ready() && top >= 0) {
        cpu_f32_scatter_add_rows(dxf, dyf, rows, n, C);
        out(&w, dx, dxf, nx);
    }
    done(&w);
}

/* The master weights update in fp32; the compute copy is their rounding. */
static void
emu_adamw(enum ops_dtype d, float *p, void *pc, const float *grad, float *m,
          float *v, size_t n, float lr, float b1, float b2, float eps, float wd,
          const struct ops_step *st)
{
    if (!ready() || st->skip)
        return;
    cpu_f32_adamw(p, grad, m, v, n, lr, b1, b2, eps, wd, st);
    if (pc != NULL)
        cpu_cast(pc, d, p, OPS_F32, n);
}

/* ------------------------------------------------------------ tables */

/* A table's entries for dtype D: the ops above with D bound, the rest
 * (memory, status, fp32 reductions, the step) the float32 table's. */
#define EMULATED(S, D)                                                         \
    static void S##_linear_fwd(void *y, const void *x, const void *w,          \
                               const void *b, int M, int K, int N)             \
    {                                                                          \
        emu_linear_fwd(D, y, x, w, b, M, K, N);                                \
    }                                                                          \
    static void S##_linear_act_fwd(void *y, void *pre, const void *x,          \
                                   const void *w, const void *b, int M, int K, \
                                   int N, enum ops_act act)                    \
    {                                                                          \
        emu_linear_act_fwd(D, y, pre, x, w, b, M, K, N, act);                  \
    }                                                                          \
    static void S##_linear_bwd(void *dx, float *dw, float *db, const void *dy, \
                               const void *x, const void *w, int M, int K,     \
                               int N)                                          \
    {                                                                          \
        emu_linear_bwd(D, dx, dw, db, dy, x, w, M, K, N);                      \
    }                                                                          \
    static void S##_embed_fwd(void *y, const int32_t *ids, const void *t,      \
                              int n, int C, int acc)                           \
    {                                                                          \
        emu_embed_fwd(D, y, ids, t, n, C, acc);                                \
    }                                                                          \
    static void S##_embed_bwd(float *dt, const void *dy, const int32_t *ids,   \
                              int n, int C, int32_t skip)                      \
    {                                                                          \
        emu_embed_bwd(D, dt, dy, ids, n, C, skip);                             \
    }                                                                          \
    static void S##_layernorm_fwd(void *y, float *mean, float *rstd,           \
                                  const void *x, const void *w, const void *b, \
                                  int n, int C, float eps)                     \
    {                                                                          \
        emu_layernorm_fwd(D, y, mean, rstd, x, w, b, n, C, eps);               \
    }                                                                          \
    static void S##_residual_layernorm_fwd(                                    \
        void *r, void *y, float *mean, float *rstd, const void *a,             \
        const void *bb, const void *w, const void *b, int n, int C, float eps) \
    {                                                                          \
        emu_residual_layernorm_fwd(D, r, y, mean, rstd, a, bb, w, b, n, C,     \
                                   eps);                                       \
    }                                                                          \
    static void S##_layernorm_bwd(                                             \
        void *dx, float *dw, float *db, const void *dy, const void *x,         \
        const void *w, const float *mean, const float *rstd, int n, int C)     \
    {                                                                          \
        emu_layernorm_bwd(D, dx, dw, db, dy, x, w, mean, rstd, n, C);          \
    }                                                                          \
    static void S##_act_fwd(void *y, const void *x, size_t n,                  \
                            enum ops_act act)                                  \
    {                                                                          \
        emu_act_fwd(D, y, x, n, act);                                          \
    }                                                                          \
    static void S##_act_bwd(void *dx, const void *dy, const void *x, size_t n, \
                            enum ops_act act)                                  \
    {                                                                          \
        emu_act_bwd(D, dx, dy, x, n, act);                                     \
    }                                                                          \
    static void S##_add(void *y, const void *a, const void *b, size_t n)       \
    {                                                                          \
        emu_add(D, y, a, b, n);                                                \
    }                                                                          \
    static void S##_accumulate(void *y, const void *x, size_t n)               \
    {                                                                          \
        emu_accumulate(D, y, x, n);                                            \
    }                                                                          \
    static void S##_scale(void *x, size_t n, float s)                          \
    {                                                                          \
        emu_scale(D, x, n, s);                                                 \
    }                                                                          \
    static void S##_dropout_fwd(void *y, const void *x, size_t n, float p,     \
                                uint64_t seed)                                 \
    {                                                                          \
        emu_dropout_fwd(D, y, x, n, p, seed);                                  \
    }                                                                          \
    static void S##_dropout_bwd(void *dx, const void *dy, size_t n, float p,   \
                                uint64_t seed)                                 \
    {                                                                          \
        emu_dropout_bwd(D, dx, dy, n, p, seed);                                \
    }                                                                          \
    static void S##_attention_fwd(                                             \
        void *o, void *st, const void *qkv, const float *kb, int B, int T,     \
        int C, int NH, int h0, int NH_all, int causal, float p, uint64_t seed) \
    {                                                                          \
        emu_attention_fwd(D, o, st, qkv, kb, B, T, C, NH, h0, NH_all, causal,  \
                          p, seed);                                            \
    }                                                                          \
    static void S##_attention_bwd(                                             \
        void *dqkv, void *scr, const void *dout, const void *o,                \
        const void *qkv, const void *st, const float *kb, int B, int T, int C, \
        int NH, int h0, int NH_all, int causal, float p, uint64_t seed)        \
    {                                                                          \
        (void)o, (void)kb, (void)causal;                                       \
        emu_attention_bwd(D, dqkv, scr, dout, qkv, st, B, T, C, NH, h0,        \
                          NH_all, p, seed);                                    \
    }                                                                          \
    static void S##_attention_kv_fwd(                                          \
        void *o, void *kc, void *vc, const void *qkv, const int32_t *pos,      \
        int B, int n, int C, int NH, int S, int T_max)                         \
    {                                                                          \
        emu_attention_kv_fwd(D, o, kc, vc, qkv, pos, B, n, C, NH, S, T_max);   \
    }                                                                          \
    static void S##_xent(float *l, void *dl, const void *lg, const int32_t *t, \
                         int n, int V, int Vv, float ds, const float *ls)      \
    {                                                                          \
        emu_xent(D, l, dl, lg, t, n, V, Vv, ds, ls);                           \
    }                                                                          \
    static void S##_xent_max(float *mx, const void *lg, int n, int V, int Vv)  \
    {                                                                          \
        emu_xent_max(D, mx, lg, n, V, Vv);                                     \
    }                                                                          \
    static void S##_xent_partial(double *s, const void *lg, const float *mx,   \
                                 const int32_t *t, int n, int V, int Vv,       \
                                 int v0)                                       \
    {                                                                          \
        emu_xent_partial(D, s, lg, mx, t, n, V, Vv, v0);                       \
    }                                                                          \
    static void S##_xent_finish(float *l, void *dl, const void *lg,            \
                                const float *mx, const double *s,              \
                                const int32_t *t, int n, int V, int Vv,        \
                                int v0, float ds, const float *ls)             \
    {                                                                          \
        emu_xent_finish(D, l, dl, lg, mx, s, t, n, V, Vv, v0, ds, ls);         \
    }                                                                          \
    static void S##_gather_rows(void *y, const void *x, const int32_t *r,      \
                                int n, int C)                                  \
    {                                                                          \
        emu_gather_rows(D, y, x, r, n, C);                                     \
    }                                                                          \
    static void S##_scatter_add_rows(void *dx, const void *dy,                 \
                                     const int32_t *r, int n, int C)           \
    {                                                                          \
        emu_scatter_add_rows(D, dx, dy, r, n, C);                              \
    }                                                                          \
    static void S##_adamw(float *p, void *pc, const float *g, float *m,        \
                          float *v, size_t n, float lr, float b1, float b2,    \
                          float eps, float wd, const struct ops_step *st)      \
    {                                                                          \
        emu_adamw(D, p, pc, g, m, v, n, lr, b1, b2, eps, wd, st);              \
    }                                                                          \
    static void S##_fill(struct ops *o)                                        \
    {                                                                          \
        *o = cpu_ops_f32;                                                      \
        o->dtype = D;                                                          \
        o->linear_fwd = S##_linear_fwd;                                        \
        o->linear_act_fwd = S##_linear_act_fwd;                                \
        o->linear_bwd = S##_linear_bwd;                                        \
        o->embed_fwd = S##_embed_fwd;                                          \
        o->embed_bwd = S##_embed_bwd;                                          \
        o->layernorm_fwd = S##_layernorm_fwd;                                  \
        o->residual_layernorm_fwd = S##_residual_layernorm_fwd;                \
        o->layernorm_bwd = S##_layernorm_bwd;                                  \
        o->act_fwd = S##_act_fwd;                                              \
        o->act_bwd = S##_act_bwd;                                              \
        o->add = S##_add;                                                      \
        o->accumulate = S##_accumulate;                                        \
        o->scale = S##_scale;                                                  \
        o->dropout_fwd = S##_dropout_fwd;                                      \
        o->dropout_bwd = S##_dropout_bwd;                                      \
        o->attention_fwd = S##_attention_fwd;                                  \
        o->attention_bwd = S##_attention_bwd;                                  \
        o->attention_kv_fwd = S##_attention_kv_fwd;                            \
        o->xent = S##_xent;                                                    \
        o->xent_max = S##_xent_max;                                            \
        o->xent_partial = S##_xent_partial;                                    \
        o->xent_finish = S##_xent_finish;                                      \
        o->gather_rows = S##_gather_rows;                                      \
        o->scatter_add_rows = S##_scatter_add_rows;                            \
        o->adamw = S##_adamw;                                                  \
    }

EMULATED(bf16, OPS_BF16)
EMULATED(f16, OPS_F16)

const struct ops *
cpu_ops_emulated(enum ops_dtype dtype)
{
    /* Filled on first use (ops_open() runs before any thread starts). */
    static struct ops tables[2];
    static int filled;

    if (!filled) {
        bf16_fill(&tables[0]);
        f16_fill(&tables[1]);
        filled = 1;
    }
    return &tables[dtype == OPS_BF16 ? 0 : 1];
}
