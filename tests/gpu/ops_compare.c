/* SPDX-License-Identifier: MIT */
/*
 * ops_compare.c: every op of ops.h on the backend under test (CUDA)
 * against the CPU backend, on random inputs of real layer shapes (GPT-2
 * 124M and ERNIE-base at a small batch), with a stated tolerance per
 * output and the worst error seen printed in a table.  The float32
 * section runs with TF32 off; the bfloat16 section compares with the CPU
 * on the same (bf16-rounded) inputs, within looser bounds.  Each output
 * of the backend under test is computed twice and must be the same bits.
 *
 *   ops_compare [--dtype float32|bfloat16] [--shapes real|small]
 *               [--only OP] [--seed N]       CUDA against the CPU
 *   ops_compare --cpu [...]                  the CPU against the CPU (1
 *                                            and 2 threads): the harness
 *   ops_compare --self-test                  --cpu, both sections, then
 *                                            planted faults that must fail
 *   ops_compare --cpu --mutant NAME [...]    the table with one planted
 *                                            fault (ops_compare_mutants.c)
 *
 * Without a GPU (or a CUDA build) the CUDA mode prints "skipped: no GPU"
 * and exits 0.  The cases and their tolerances are in
 * ops_compare_{memory,layers,attention,loss,optim}.c, the planted faults
 * in ops_compare_mutants.c; tests/gpu/README.md describes them.  Exit 0 when every row passes, 1
 * otherwise, 2 on a usage error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

#define EXIT_USAGE 2

static const char *usage_text =
    "usage: ops_compare [--cpu] [--self-test] [--dtype float32|bfloat16]\n"
    "                   [--mutant name] [--only op] [--seed n]\n"
    "                   [--shapes real|small]\n";

/* ------------------------------------------------------------ the models */

/* GPT-2 124M (vocab 50257 padded to 50304) at T 1024 and ERNIE-base
 * (ernie-3.0's 40000 ids padded to 40064) at seq 512, batch 2. */
static const struct oc_model models_real[] = {
    { "gpt2-124M", 2, 1024, 768, 12, 3072, 50304, 50257, 0, 1,
      OPS_ACT_GELU_TANH, 1e-5f, -1, 0 },
    { "ernie-base", 2, 512, 768, 12, 3072, 40064, 40000, 4, 0, OPS_ACT_GELU,
      1e-12f, 0, 1 },
};
/* The same structure, small enough for the CPU on both sides in CI. */
static const struct oc_model models_small[] = {
    { "gpt2-small", 2, 64, 64, 4, 256, 1024, 1000, 0, 1, OPS_ACT_GELU_TANH,
      1e-5f, -1, 0 },
    { "ernie-small", 2, 48, 64, 4, 256, 1024, 1000, 4, 0, OPS_ACT_GELU, 1e-12f,
      0, 1 },
};

/* ------------------------------------------------------------ failure */

static struct oc *the_oc; /* for the counts in a fatal message */
static const char *suite_name = "ops-compare";

static void __attribute__((noreturn))
fatal_backend(const struct ops *o, const char *op, const char *what)
{
    const char *e = o->error != NULL ? o->error() : "";

    printf("FAIL %s: the %s backend failed in %s: %s\n", op, o->name, what,
           e != NULL && *e ? e : "(no message)");
    printf("%s: %d passed, %d failed, 0 skipped\n", suite_name,
           the_oc ? the_oc->n_pass : 0, (the_oc ? the_oc->n_fail : 0) + 1);
    exit(1);
}

void *
oc_xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (p == NULL) {
        fprintf(stderr, "ops_compare: out of host memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ------------------------------------------------------------ sides */

const struct ops *
oc_side(struct oc *c, int r)
{
    const struct ops *o = r == 0 ? c->ref : c->test;
    int threads = r == 0 ? c->ref_threads : c->test_threads;

    if (threads > 0 && strcmp(o->name, "cpu") == 0)
        ops_cpu(threads, o->dtype);
    c->pool_ops = o;
    c->n_pool = 0;
    return o;
}

size_t
oc_act_size(const struct oc *c)
{
    return ops_dtype_size(c->pool_ops->dtype);
}

void *
oc_blank(struct oc *c, size_t bytes, const char *what)
{
    const struct ops *o = c->pool_ops;
    void *p;

    if (c->n_pool == (int)(sizeof(c->pool) / sizeof(c->pool[0]))) {
        fprintf(stderr, "ops_compare: more than %d buffers in a case\n",
                c->n_pool);
        exit(1);
    }
    p = o->alloc(bytes ? bytes : 1, what);
    if (p == NULL)
        fatal_backend(o, what, "alloc");
    c->pool[c->n_pool++] = p;
    return p;
}

void *
oc_put(struct oc *c, const void *host, size_t bytes, const char *what)
{
    void *p = oc_blank(c, bytes, what);

    c->pool_ops->upload(p, host, bytes);
    return p;
}

void *
oc_put_act(struct oc *c, const float *host, size_t n, const char *what)
{
    enum ops_dtype t = c->pool_ops->dtype;
    uint16_t *h;
    void *p;

    if (t == OPS_F32)
        return oc_put(c, host, n * sizeof(float), what);
    h = oc_xmalloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++)
        h[i] = t == OPS_BF16 ? oc_f32_to_bf16(host[i]) : oc_f32_to_f16(host[i]);
    p = oc_put(c, h, n * sizeof(uint16_t), what);
    free(h);
    return p;
}

void
oc_pool_free(struct oc *c)
{
    for (int i = 0; i < c->n_pool; i++)
        c->pool_ops->release(c->pool[i]);
    c->n_pool = 0;
}

void
oc_sync(struct oc *c, const char *op)
{
    if (c->pool_ops->sync() < 0)
        fatal_backend(c->pool_ops, op, "the op or one before it");
}

void
oc_get(struct oc *c, void *host, const void *dev, size_t bytes, const char *op)
{
    if (c->pool_ops->download(host, dev, bytes) < 0)
        fatal_backend(c->pool_ops, op, "download");
}

float *
oc_get_f32(struct oc *c, const void *dev, size_t n, const char *op)
{
    float *h = oc_xmalloc(n * sizeof(float));

    oc_get(c, h, dev, n * sizeof(float), op);
    return h;
}

double *
oc_get_f64(struct oc *c, const void *dev, size_t n, const char *op)
{
    double *h = oc_xmalloc(n * sizeof(double));

    oc_get(c, h, dev, n * sizeof(double), op);
    return h;
}

float *
oc_get_act(struct oc *c, const void *dev, size_t n, const char *op)
{
    enum ops_dtype t = c->pool_ops->dtype;
    uint16_t *h;
    float *f;

    if (t == OPS_F32)
        return oc_get_f32(c, dev, n, op);
    h = oc_xmalloc(n * sizeof(uint16_t));
    f = oc_xmalloc(n * sizeof(float));
    oc_get(c, h, dev, n * sizeof(uint16_t), op);
    for (size_t i = 0; i < n; i++)
        f[i] = t == OPS_BF16 ? oc_bf16_to_f32(h[i]) : oc_f16_to_f32(h[i]);
    free(h);
    return f;
}

/* ------------------------------------------------------------ numbers */

uint16_t
oc_f32_to_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40); /* quiet, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float
oc_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Through GCC's _Float16 (IEEE binary16, round to nearest even). */
uint16_t
oc_f32_to_f16(float f)
{
    _Float16 h = (_Float16)f;
    uint16_t u;

    memcpy(&u, &h, sizeof(u));
    return u;
}

float
oc_f16_to_f32(uint16_t u)
{
    _Float16 h;

    memcpy(&h, &u, sizeof(h));
    return (float)h;
}

uint64_t
oc_next(struct oc *c)
{
    c->rng += 0x9E3779B97F4A7C15ULL;
    return ops_splitmix64(c->rng);
}

static double
unit(struct oc *c)
{
    return (double)(oc_next(c) >> 11) * (1.0 / 9007199254740992.0);
}

void
oc_round_to(enum ops_dtype t, float *x, size_t n)
{
    if (t == OPS_BF16)
        for (size_t i = 0; i < n; i++)
            x[i] = oc_bf16_to_f32(oc_f32_to_bf16(x[i]));
    else if (t == OPS_F16)
        for (size_t i = 0; i < n; i++)
            x[i] = oc_f16_to_f32(oc_f32_to_f16(x[i]));
}

void
oc_round_act(const struct oc *c, float *x, size_t n)
{
    oc_round_to(c->dt, x, n);
}

float *
oc_uniform(struct oc *c, size_t n, double a)
{
    float *x = oc_xmalloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++)
        x[i] = (float)((2.0 * unit(c) - 1.0) * a);
    oc_round_act(c, x, n);
    return x;
}

/* |x| in [lo, hi), random sign: no element is 0 (dropout's masks, ReLU). */
float *
oc_away_from_zero(struct oc *c, size_t n, double lo, double hi)
{
    float *x = oc_xmalloc(n * sizeof(float));

    for (size_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * unit(c);

        x[i] = (float)(oc_next(c) & 1 ? -v : v);
    }
    oc_round_act(c, x, n);
    return x;
}

int32_t *
oc_ids(struct oc *c, size_t n, int lo, int hi)
{
    int32_t *ids = oc_xmalloc(n * sizeof(int32_t));

    for (size_t i = 0; i < n; i++)
        ids[i] = lo + (int32_t)(oc_next(c) % (uint64_t)(hi - lo));
    return ids;
}

double
oc_maxabs(const float *x, size_t n)
{
    double m = 0.0;

    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > m)
            m = fabs(x[i]);
    return m;
}

double
oc_bf16_tol(const struct oc *c, double k, double scale)
{
    return c->dt == OPS_F32 ? 0.0 : k * OC_BF16_U * scale;
}

size_t
oc_round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

int
oc_n_mlm(const struct oc_model *m)
{
    return (int)oc_round_up((size_t)(0.15 * m->B * m->T), 8);
}

float *
oc_copy(const float *x, size_t n)
{
    float *y = oc_xmalloc(n * sizeof(float));

    memcpy(y, x, n * sizeof(float));
    return y;
}

double
oc_maxabs_delta(const float *a, const float *b, size_t n)
{
    double m = 0.0;

    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* ------------------------------------------------------------ checking */

int
oc_selected(const struct oc *c, const char *op)
{
    return c->only == NULL || strstr(op, c->only) != NULL;
}

static void
note_failure(struct oc *c, const char *op)
{
    size_t len = strlen(c->failed);

    c->n_fail++;
    if (len + strlen(op) + 2 < sizeof(c->failed))
        snprintf(c->failed + len, sizeof(c->failed) - len, "%s%s",
                 len ? "|" : "", op);
}

static void
row(struct oc *c, const char *op, const char *shape, double maxref,
    double worst, double tol, double normrel, double nr_limit, int same, int ok)
{
    double ratio = tol > 0 ? worst / tol : (worst > 0 ? INFINITY : 0.0);

    if (ok)
        c->n_pass++;
    else
        note_failure(c, op);
    if (!(ratio <= c->worst)) {
        c->worst = ratio;
        snprintf(c->worst_at, sizeof(c->worst_at), "%s (%s)", op, shape);
    }
    if (c->quiet)
        return;
    printf("%-4s %-32s %-36s %9.2e %9.2e %9.2e %6.3f %9.2e ",
           ok ? "ok" : "FAIL", op, shape, maxref, worst, tol, ratio, normrel);
    if (isinf(nr_limit))
        printf("%7s %s\n", "-", same ? "same" : "DIFF");
    else
        printf("%7.0e %s\n", nr_limit, same ? "same" : "DIFF");
}

static void
header(const struct oc *c)
{
    if (c->quiet)
        return;
    printf("%-4s %-32s %-36s %9s %9s %9s %6s %9s %7s %s\n", "", "op.output",
           "shape", "max|ref|", "worst|d|", "tol", "d/tol", "|d|/|ref|",
           "limit", "rerun");
}

/* |b - a|, NaN where exactly one of them is NaN or they are unequal
 * infinities (so it fails every comparison). */
static double
diff(double a, double b)
{
    if (a == b || (isnan(a) && isnan(b)))
        return 0.0;
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b))
        return INFINITY;
    return fabs(b - a);
}

void
oc_check(struct oc *c, const char *op, const char *shape, float *v[], size_t n,
         double tol, double normrel, const unsigned char *mask)
{
    double worst = 0.0, maxref = 0.0, dd = 0.0, rr = 0.0, nr;
    int same = memcmp(v[1], v[2], n * sizeof(float)) == 0;

    for (size_t i = 0; i < n; i++) {
        double d;

        if (mask != NULL && !mask[i])
            continue;
        d = diff(v[0][i], v[1][i]);
        if (!(d <= worst))
            worst = d;
        if (isfinite(v[0][i])) {
            maxref = fmax(maxref, fabs(v[0][i]));
            rr += (double)v[0][i] * v[0][i];
        }
        dd += isfinite(d) ? d * d : INFINITY;
    }
    nr = rr > 0 ? sqrt(dd / rr) : (dd > 0 ? INFINITY : 0.0);
    row(c, op, shape, maxref, worst, tol, nr, normrel, same,
        worst <= tol && nr <= normrel && same);
}

void
oc_check_f64(struct oc *c, const char *op, const char *shape, double *v[],
             size_t n, double tol, const unsigned char *mask)
{
    double worst = 0.0, maxref = 0.0;
    int same = memcmp(v[1], v[2], n * sizeof(double)) == 0;

    for (size_t i = 0; i < n; i++) {
        double d;

        if (mask != NULL && !mask[i])
            continue;
        d = diff(v[0][i], v[1][i]);
        if (!(d <= worst))
            worst = d;
        if (isfinite(v[0][i]))
            maxref = fmax(maxref, fabs(v[0][i]));
    }
    row(c, op, shape, maxref, worst, tol, maxref > 0 ? worst / maxref : 0.0,
        INFINITY, same, worst <= tol && same);
}

void
oc_check_count(struct oc *c, const char *op, const char *shape, size_t bad,
               size_t n, const char *what)
{
    int ok = bad == 0;

    if (ok)
        c->n_pass++;
    else
        note_failure(c, op);
    if (c->quiet)
        return;
    printf("%-4s %-32s %-36s %zu of %zu %s\n", ok ? "ok" : "FAIL", op, shape,
           bad, n, what);
}

void
oc_free_runs(float *v[])
{
    for (int r = 0; r < OC_RUNS; r++) {
        free(v[r]);
        v[r] = NULL;
    }
}

/* ------------------------------------------------------------ the cases */

const struct oc_case oc_cases[] = {
    { "memory", oc_case_memory, 0, 1 },
    { "cast", oc_case_cast, 0, 1 },
    { "linear", oc_case_linear, 1, 0 },
    { "embed", oc_case_embed, 1, 0 },
    { "layernorm", oc_case_layernorm, 1, 0 },
    { "act", oc_case_act, 1, 0 },
    { "act", oc_case_act_other, 0, 0 },
    { "add accumulate scale", oc_case_elementwise, 0, 0 },
    { "dropout", oc_case_dropout, 0, 0 },
    { "attention", oc_case_attention, 1, 0 },
    { "attention_kv_fwd", oc_case_attention_kv, 1, 0 },
    { "xent", oc_case_xent, 1, 0 },
    { "xent_max xent_partial xent_finish", oc_case_xent_vp, 1, 0 },
    { "gather_rows scatter_add_rows", oc_case_rows, 1, 0 },
    { "sum_acc sumsq_acc", oc_case_reduce, 0, 1 },
    { "loss_check step_prepare step_finish", oc_case_step, 0, 1 },
    { "adamw", oc_case_adamw, 0, 0 },
};
const int oc_n_cases = sizeof(oc_cases) / sizeof(oc_cases[0]);

/* ------------------------------------------------------------ sections */

/* Every case of oc_cases once, on the models. */
static void
run_section(struct oc *c, const struct oc_model *models, int n_models)
{
    header(c);
    for (int k = 0; k < oc_n_cases; k++) {
        const struct oc_case *cs = &oc_cases[k];

        if (!oc_selected(c, cs->op) || (cs->f32_only && c->dt != OPS_F32))
            continue;
        for (int i = 0; i < (cs->per_model ? n_models : 1); i++)
            cs->run(c, &models[i]);
    }
}

static const struct ops *
open_backend(const char *device, enum ops_dtype dt, char *err, size_t errlen)
{
    struct ops_request r;

    memset(&r, 0, sizeof(r));
    r.device = device;
    r.dtype = dt;
    r.local_rank = 0;
    r.threads = 0;
    r.deterministic = 1;
    r.tf32 = 0;
    return ops_open(&r, err, errlen);
}

/* The CPU reference of a section: the CPU in the section's dtype if it
 * computes in it (bf16 emulated: 16-bit storage, fp32 inside), else in
 * float32 on the same bf16-rounded inputs. */
static const struct ops *
open_reference(enum ops_dtype dt, int quiet)
{
    char err[512];
    const struct ops *o = open_backend("cpu", dt, err, sizeof(err));

    if (o == NULL && dt != OPS_F32) {
        if (!quiet)
            printf("reference: the CPU in float32 on %s-rounded inputs "
                   "(%s)\n",
                   ops_dtype_name(dt), err);
        o = open_backend("cpu", OPS_F32, err, sizeof(err));
    }
    if (o == NULL) {
        fprintf(stderr, "ops_compare: cannot open the CPU backend: %s\n", err);
        exit(1);
    }
    return o;
}

static int
count_rows_skipped(void)
{
    return oc_n_cases; /* one a case family: what would have run */
}

/* The self-test: both sections on the CPU, then every planted fault must
 * fail the rows that should catch it and no other. */
static int
self_test(struct oc *c, const struct oc_model *models, int n_models)
{
    int pass = 0, fail = 0;
    const enum ops_dtype dts[2] = { OPS_F32, OPS_BF16 };

    for (int s = 0; s < 3; s++) {
        c->dt = dts[s > 0];
        c->ref = c->test = open_reference(c->dt, 0);
        if (s < 2) {
            printf("\n== the CPU against the CPU (%d and %d threads), %s\n",
                   c->ref_threads, c->test_threads, ops_dtype_name(c->dt));
        } else {
            /* The bf16 bounds hold an fp32 computation on the same bf16
             * inputs (a backend under test may keep more precision inside
             * than the CPU's emulation does). */
            c->test = open_reference(OPS_F32, 0);
            printf("\n== the CPU in float32 against the CPU's emulated "
                   "bfloat16, on the same bf16 inputs\n");
        }
        c->n_pass = c->n_fail = 0;
        c->failed[0] = '\0';
        c->worst = 0;
        run_section(c, models, n_models);
        printf("%s: %d rows passed, %d failed; worst |d|/tol %.3g at %s\n",
               ops_dtype_name(c->dt), c->n_pass, c->n_fail, c->worst,
               c->worst_at);
        pass += c->n_pass;
        fail += c->n_fail;
    }
    printf("\n== planted faults: each must fail the rows named, and only "
           "those\n");
    for (int k = 0; k < oc_n_mutants; k++) {
        const struct oc_mutant *mu = &oc_mutants[k];
        char caught[4096], *save = NULL, *tok;
        int ok = 1, any = 0;

        c->dt = mu->bf16 ? OPS_BF16 : OPS_F32;
        c->ref = open_reference(c->dt, 1);
        c->test = oc_mutant_ops(c->ref, mu->name);
        c->quiet = 1;
        c->n_pass = c->n_fail = 0;
        c->failed[0] = '\0';
        run_section(c, models, n_models);
        c->quiet = 0;
        /* Every failed row is one the fault should reach... */
        snprintf(caught, sizeof(caught), "%s", c->failed);
        for (tok = strtok_r(caught, "|", &save); tok != NULL;
             tok = strtok_r(NULL, "|", &save)) {
            int expected = 0;
            char want[256], *s2 = NULL, *w;

            snprintf(want, sizeof(want), "%s", mu->caught_by);
            for (w = strtok_r(want, " ", &s2); w != NULL;
                 w = strtok_r(NULL, " ", &s2))
                if (strncmp(tok, w, strlen(w)) == 0)
                    expected = 1;
            if (!expected) {
                ok = 0;
                printf("     %s also failed %s\n", mu->name, tok);
            }
            any = 1;
        }
        /* ...and each named row family caught it. */
        {
            char want[256], *s2 = NULL, *w;

            snprintf(want, sizeof(want), "%s", mu->caught_by);
            for (w = strtok_r(want, " ", &s2); w != NULL;
                 w = strtok_r(NULL, " ", &s2)) {
                const char *f = c->failed;
                int hit = 0;

                while (f != NULL && *f) {
                    if (strncmp(f, w, strlen(w)) == 0)
                        hit = 1;
                    f = strchr(f, '|');
                    if (f != NULL)
                        f++;
                }
                if (!hit) {
                    ok = 0;
                    printf("     %s was not caught by %s\n", mu->name, w);
                }
            }
        }
        if (ok && any)
            pass++;
        else
            fail++;
        printf("%-4s planted fault %s (%s): %d rows failed, caught by %s\n",
               ok && any ? "ok" : "FAIL", mu->name, mu->what, c->n_fail,
               mu->caught_by);
    }
    /* Last, as it leaves the backend failed: out of memory. */
    c->dt = OPS_F32;
    c->ref = c->test = open_reference(OPS_F32, 1);
    c->n_pass = c->n_fail = 0;
    printf("\n== out of memory (the backend stays failed afterwards)\n");
    oc_case_oom(c);
    pass += c->n_pass;
    fail += c->n_fail;
    printf("%s: %d passed, %d failed, 0 skipped\n", suite_name, pass, fail);
    return fail ? 1 : 0;
}

int
main(int argc, char **argv)
{
    struct oc c;
    int cpu = 0, selftest = 0, small = -1, n_models;
    const struct oc_model *models;
    const char *dtype = "float32", *mutant = NULL;
    char err[512];

    memset(&c, 0, sizeof(c));
    c.rng = 1;
    the_oc = &c;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--cpu") == 0) {
            cpu = 1;
        } else if (strcmp(a, "--self-test") == 0) {
            cpu = selftest = 1;
        } else if (strcmp(a, "--dtype") == 0 && v != NULL) {
            dtype = v;
            i++;
        } else if (strcmp(a, "--mutant") == 0 && v != NULL) {
            mutant = v;
            cpu = 1;
            i++;
        } else if (strcmp(a, "--only") == 0 && v != NULL) {
            c.only = v;
            i++;
        } else if (strcmp(a, "--seed") == 0 && v != NULL) {
            c.rng = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--shapes") == 0 && v != NULL &&
                   (strcmp(v, "real") == 0 || strcmp(v, "small") == 0)) {
            small = strcmp(v, "small") == 0;
            i++;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else {
            fprintf(stderr, "ops_compare: bad argument '%s'\n", a);
            fputs(usage_text, stderr);
            return EXIT_USAGE;
        }
    }
    if (strcmp(dtype, "float32") == 0) {
        c.dt = OPS_F32;
    } else if (strcmp(dtype, "bfloat16") == 0) {
        c.dt = OPS_BF16;
        suite_name = "ops-compare-bf16";
    } else {
        fprintf(stderr, "ops_compare: --dtype %s: float32 or bfloat16\n",
                dtype);
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    if (small < 0)
        small = cpu; /* the CPU on both sides: CI's 2 cores */
    models = small ? models_small : models_real;
    n_models = 2;

    if (cpu) {
        c.ref_threads = 1;
        c.test_threads = 2;
    }
    if (selftest) {
        suite_name = "ops-compare-self-test";
        return self_test(&c, models, n_models);
    }
    c.ref = open_reference(c.dt, 0);
    if (cpu) {
        c.test = c.ref;
        if (mutant != NULL) {
            int k = 0;

            while (k < oc_n_mutants && strcmp(oc_mutants[k].name, mutant))
                k++;
            if (k == oc_n_mutants) {
                fprintf(stderr, "ops_compare: --mutant %s: no such fault\n",
                        mutant);
                return EXIT_USAGE;
            }
            printf("planted fault %s: %s\n", mutant, oc_mutants[k].what);
            c.test = oc_mutant_ops(c.ref, mutant);
        }
    } else {
        c.test = open_backend("cuda", c.dt, err, sizeof(err));
        if (c.test == NULL) {
            if (strstr(err, "no GPU") != NULL ||
                strstr(err, "no CUDA backend") != NULL) {
                printf("ops_compare: skipped: no GPU (%s)\n", err);
                printf("%s: 0 passed, 0 failed, %d skipped\n", suite_name,
                       count_rows_skipped());
                return 0;
            }
            printf("FAIL ops_open cuda: %s\n", err);
            printf("%s: 0 passed, 1 failed, 0 skipped\n", suite_name);
            return 1;
        }
    }
    printf("ops_compare: %s (%s) against the reference %s (%s), %s shapes, "
           "seed %llu%s\n",
           c.test->name, ops_dtype_name(c.test->dtype), c.ref->name,
           ops_dtype_name(c.ref->dtype), small ? "small" : "real",
           (unsigned long long)c.rng,
           c.test->dtype == OPS_F32 && !cpu ? ", TF32 off" : "");
    run_section(&c, models, n_models);
    if (c.only == NULL || strstr("oom", c.only) != NULL) {
        c.ref_threads = 0;
        oc_case_oom(&c);
    }
    if (c.n_fail)
        printf("failed: %s\n", c.failed);
    printf("worst |d|/tol: %.3g at %s\n", c.worst, c.worst_at);
    printf("%s: %d passed, %d failed, 0 skipped\n", suite_name, c.n_pass,
           c.n_fail);
    if (c.test->close != NULL)
        c.test->close();
    return c.n_fail ? 1 : 0;
}
