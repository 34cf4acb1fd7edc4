/* SPDX-License-Identifier: MIT */
/*
 * ops_compare.h: what the files of the op-by-op comparison share
 * (tests/gpu/ops_compare.c: the harness, the table of cases and main();
 * ops_compare_{memory,layers,attention,loss,optim}.c: the cases, one
 * function a family of ops, each tolerance stated beside it;
 * ops_compare_mutants.c: planted faults for the self-test).  Every op of
 * ops.h runs on a reference backend (the CPU) and on the backend under
 * test (CUDA, or the CPU again), from the same host inputs, and each
 * output is compared within a tolerance relative to the magnitude of the
 * terms that make it up.
 *
 * The tolerances' rules.  A tolerance is an absolute bound on |test -
 * ref| for each element: eps is FLT_EPSILON (2^-23), K the number of
 * terms of a sum, max|x| the largest input.  A K-term fp32 sum computed
 * in two orders differs by a few ulps of its largest partial sums, at most
 * K max|term|: OC_SUM_EPS = 4 eps, times K times the terms' largest
 * magnitude (the CPU with 1 and 2 threads, whose OpenBLAS splits the
 * GEMMs otherwise, used up to 0.2 of that at real shapes; TF32, at 2^-11
 * a product, lands 20 times outside).  Sums of positive terms that both
 * sides form in one pass (softmax denominators) use Higham's
 * probabilistic sqrt(K) eps.  Exact ops (copies, one addition, one
 * rounding) must be exact.  In the bf16 section every output stored in
 * bf16 adds k x 2^-8 x its scale (oc_bf16_tol(): k counts the roundings,
 * doubled, as either side may round to the neighbour); fp32 outputs
 * (gradients of parameters, statistics, losses) keep their fp32 bounds,
 * the inputs being the same bf16 numbers on both sides.  Besides, the
 * norm-wise ||d|| / ||ref|| is held to OC_NR_* below.
 */
#ifndef OPS_COMPARE_H
#define OPS_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* One model's layer shapes at a small batch. */
struct oc_model {
    const char *name; /* "gpt2-124M", "ernie-base", ... */
    int B, T, C, NH;
    int I;       /* the MLP's inner width */
    int V;       /* the vocab padded to OPS_VOCAB_ALIGN */
    int V_valid; /* the real vocab (V_valid <= V) */
    int n_types; /* token types (ERNIE), 0 for none */
    int causal;
    enum ops_act act;
    float ln_eps;
    int skip_id; /* embed_bwd's padding id, -1 for none */
    int mlm;     /* ERNIE: the MLM head runs on gathered rows */
};

/* The comparison's state. */
struct oc {
    const struct ops *ref;  /* the reference: the CPU backend */
    const struct ops *test; /* the backend under test */
    /* The CPU's thread counts for each side (0: leave as it is): in the
     * CPU-against-CPU mode the two sides run with different counts, so
     * OpenBLAS partitions the GEMMs differently and the tolerances meet
     * real rounding differences. */
    int ref_threads, test_threads;
    enum ops_dtype dt; /* the section's compute dtype (F32 or BF16) */
    uint64_t rng;      /* the inputs' generator state */
    const char *only;  /* run the cases whose op name contains this */
    int quiet;         /* self-test: no table, just the counts */
    int n_pass, n_fail;
    char failed[4096];  /* the failing rows' names, '|'-separated */
    double worst;       /* the largest worst |d| / tol of a row... */
    char worst_at[160]; /* ...and its row */
    /* The buffers of the side running now, released after it. */
    const struct ops *pool_ops;
    void *pool[64];
    int n_pool;
};

/* The three runs of a case: 0 the reference, 1 and 2 the backend under
 * test (twice: the same inputs must give the same bits). */
#define OC_RUNS 3

/* The side of run r, its CPU thread count set. */
const struct ops *oc_side(struct oc *c, int r);

/* Backend buffers of the side running now (released by oc_pool_free()):
 * zeroed, or holding a copy of host data; act buffers hold the backend's
 * compute dtype, converted from and to float on the host.  A failure
 * (no memory, an error of the backend) ends the program with the
 * backend's message and the op it happened in. */
void *oc_blank(struct oc *c, size_t bytes, const char *what);
void *oc_put(struct oc *c, const void *host, size_t bytes, const char *what);
void *oc_put_act(struct oc *c, const float *host, size_t n, const char *what);
void oc_pool_free(struct oc *c);
float *oc_get_act(struct oc *c, const void *dev, size_t n, const char *op);
float *oc_get_f32(struct oc *c, const void *dev, size_t n, const char *op);
double *oc_get_f64(struct oc *c, const void *dev, size_t n, const char *op);
void oc_get(struct oc *c, void *host, const void *dev, size_t bytes,
            const char *op);
/* Waits for the side's queue; a failed op ends the program, naming it. */
void oc_sync(struct oc *c, const char *op);
size_t oc_act_size(const struct oc *c); /* bytes of an act element */

/* Inputs: uniform in [-a, a), rounded to the section's dtype (so both
 * sides see the same numbers); ids. */
float *oc_uniform(struct oc *c, size_t n, double a);
float *oc_away_from_zero(struct oc *c, size_t n, double lo, double hi);
void oc_round_act(const struct oc *c, float *x, size_t n);
void oc_round_to(enum ops_dtype t, float *x, size_t n);
uint64_t oc_next(struct oc *c);
int32_t *oc_ids(struct oc *c, size_t n, int lo, int hi);
void *oc_xmalloc(size_t bytes);

/* Host conversions (round to nearest even; NaN stays NaN). */
uint16_t oc_f32_to_bf16(float f);
float oc_bf16_to_f32(uint16_t h);
uint16_t oc_f32_to_f16(float f);
float oc_f16_to_f32(uint16_t h);

double oc_maxabs(const float *x, size_t n);

/* Compares run 1 (and run 2's bits) with run 0 and prints a row: pass
 * when every |d| <= tol, ||d|| / ||ref|| <= normrel and the two runs of
 * the test side agree bit for bit.  mask (NULL: all) selects the
 * elements the contract defines. */
void oc_check(struct oc *c, const char *op, const char *shape, float *v[],
              size_t n, double tol, double normrel, const unsigned char *mask);
void oc_check_f64(struct oc *c, const char *op, const char *shape, double *v[],
                  size_t n, double tol, const unsigned char *mask);
/* A row for a count of mismatches that must be zero (masks, exact
 * conversions, fields of struct ops_step). */
void oc_check_count(struct oc *c, const char *op, const char *shape, size_t bad,
                    size_t n, const char *what);
void oc_free_runs(float *v[]);
/* Whether case `op` is selected by --only. */
int oc_selected(const struct oc *c, const char *op);

/* FLT_EPSILON, the spacing of floats at 1 (2^-23). */
#define OC_EPS 1.1920928955078125e-07
/* bf16's unit roundoff (2^-8): half its spacing at 1. */
#define OC_BF16_U 0.00390625
/* The norm-wise limits ||d|| / ||ref||: fp32 lands near 1e-7 and TF32
 * near 3e-4 (METHOD.md), so 1e-5 tells them apart; a backward pass with
 * cancellation (LayerNorm's, attention's) gets 1e-4; bf16 operands land
 * between 1e-3 and 1e-2. */
#define OC_NR_F32      1e-5
#define OC_NR_F32_BWD  1e-4
#define OC_NR_BF16     1e-2
#define OC_NR_BF16_BWD 3e-2

/* The cases, in the order they run (oc_cases[], ops_compare.c); each
 * prints its rows.  The out-of-memory one runs last, apart: it leaves the
 * backend failed. */
void oc_case_memory(struct oc *c, const struct oc_model *m);
void oc_case_cast(struct oc *c, const struct oc_model *m);
void oc_case_linear(struct oc *c, const struct oc_model *m);
void oc_case_embed(struct oc *c, const struct oc_model *m);
void oc_case_layernorm(struct oc *c, const struct oc_model *m);
void oc_case_act(struct oc *c, const struct oc_model *m);
void oc_case_act_other(struct oc *c, const struct oc_model *m);
void oc_case_elementwise(struct oc *c, const struct oc_model *m);
void oc_case_dropout(struct oc *c, const struct oc_model *m);
void oc_case_attention(struct oc *c, const struct oc_model *m);
void oc_case_attention_kv(struct oc *c, const struct oc_model *m);
void oc_case_xent(struct oc *c, const struct oc_model *m);
void oc_case_xent_vp(struct oc *c, const struct oc_model *m);
void oc_case_rows(struct oc *c, const struct oc_model *m);
void oc_case_reduce(struct oc *c, const struct oc_model *m);
void oc_case_step(struct oc *c, const struct oc_model *m);
void oc_case_adamw(struct oc *c, const struct oc_model *m);

struct oc_case {
    const char *op; /* for --only */
    void (*run)(struct oc *c, const struct oc_model *m);
    int per_model; /* 1: once a model, 0: once */
    int f32_only;  /* skipped in the bf16 section */
};
extern const struct oc_case oc_cases[];
extern const int oc_n_cases;
/* Out of memory: last, as it leaves the backend failed (ops.h: the first
 * failure is sticky). */
void oc_case_oom(struct oc *c);

/* What the cases share. */
#define OC_SUM_EPS   (4 * OC_EPS)
#define OC_NR(c)     ((c)->dt == OPS_F32 ? OC_NR_F32 : OC_NR_BF16)
#define OC_NR_BWD(c) ((c)->dt == OPS_F32 ? OC_NR_F32_BWD : OC_NR_BF16_BWD)
/* k x bf16's unit roundoff x scale in the bf16 section, else 0. */
double oc_bf16_tol(const struct oc *c, double k, double scale);
size_t oc_round_up(size_t n, size_t a);
/* The MLM head's rows: 15 % of the tokens, padded to a multiple of 8 by
 * slots that repeat row 0 (as the trainer's batches do). */
int oc_n_mlm(const struct oc_model *m);
float *oc_copy(const float *x, size_t n);
double oc_maxabs_delta(const float *a, const float *b, size_t n);

/* The planted faults of --self-test (ops_compare_mutants.c): a copy of
 * the CPU backend's table with one behaviour broken, and the prefixes of
 * the rows that must catch it (' '-separated).  Needs a backend whose
 * memory is host memory (the CPU). */
struct oc_mutant {
    const char *name;
    const char *what;
    const char *caught_by;
    int bf16; /* run in the bf16 section (else the fp32 one) */
};
extern const struct oc_mutant oc_mutants[];
extern const int oc_n_mutants;
const struct ops *oc_mutant_ops(const struct ops *base, const char *name);

#endif /* OPS_COMPARE_H */
