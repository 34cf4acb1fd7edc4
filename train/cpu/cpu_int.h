/* SPDX-License-Identifier: MIT */
/*
 * cpu_int.h: the CPU backend's insides, shared by ops_cpu.c (the fp32
 * kernels, memory, status and the float32 table), ops_cpu_emulated.c
 * (the bfloat16 and float16 tables: each op on fp32 copies of its 16-bit
 * operands, its outputs rounded) and cpu_dtype.c (the conversions).
 * Never installed.
 */
#ifndef TRAIN_CPU_INT_H
#define TRAIN_CPU_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* ------------------------------------------------------------ status */

/* The backend's sticky status (ops.h): cpu_fail() records the first
 * failure ("cpu: " + the message); once failed, every op returns at once
 * and sync() and download() return -1. */
void __attribute__((format(printf, 1, 2))) cpu_fail(const char *fmt, ...);
int cpu_failed(void);

/* malloc'ed scratch aligned to 64 bytes, or NULL after cpu_fail() naming
 * the op; cpu_scratch_free(NULL) is a no-op. */
void *cpu_scratch(size_t bytes, const char *op);
void cpu_scratch_free(void *p);

/* ------------------------------------------------------------ dtypes */

/* Round to nearest even; NaN stays NaN, overflow becomes infinity. */
uint16_t cpu_bf16_from_f32(float f);
uint16_t cpu_f16_from_f32(float f);
float cpu_f32_from_bf16(uint16_t h);
float cpu_f32_from_f16(uint16_t h);

/* dst[i] = (dst_type)src[i] (ops.h's cast). */
void cpu_cast(void *dst, enum ops_dtype dst_type, const void *src,
              enum ops_dtype src_type, size_t n);

/* ------------------------------------------------------------ fp32 kernels */

/* The float32 table's ops on float buffers (ops.h's contracts); the
 * emulated tables call them on fp32 copies. */
void cpu_f32_linear_fwd(float *y, const float *x, const float *w,
                        const float *b, int M, int K, int N);
void cpu_f32_linear_bwd(float *dx, float *dw, float *db, const float *dy,
                        const float *x, const float *w, int M, int K, int N);
void cpu_f32_embed_fwd(float *y, const int32_t *ids, const float *table, int n,
                       int C, int accumulate);
void cpu_f32_embed_bwd(float *dtable, const float *dy, const int32_t *ids,
                       int n, int C, int32_t skip_id);
void cpu_f32_scatter_add_rows(float *dx, const float *dy, const int32_t *rows,
                              int n, int C);
void cpu_f32_layernorm_fwd(float *y, float *mean, float *rstd, const float *x,
                           const float *w, const float *b, int n, int C,
                           float eps);
void cpu_f32_layernorm_bwd(float *dx, float *dw, float *db, const float *dy,
                           const float *x, const float *w, const float *mean,
                           const float *rstd, int n, int C);
void cpu_f32_act_fwd(float *y, const float *x, size_t n, enum ops_act act);
void cpu_f32_act_bwd(float *dx, const float *dy, const float *x, size_t n,
                     enum ops_act act);
void cpu_f32_add(float *y, const float *a, const float *b, size_t n);
void cpu_f32_accumulate(float *y, const float *x, size_t n);
void cpu_f32_scale(float *x, size_t n, float s);
void cpu_f32_dropout_fwd(float *y, const float *x, size_t n, float p,
                         uint64_t seed);
void cpu_f32_dropout_bwd(float *dx, const float *dy, size_t n, float p,
                         uint64_t seed);
void cpu_f32_attention_fwd(float *out, float *att, const float *qkv,
                           const float *key_bias, int B, int T, int C, int NH,
                           int h0, int NH_all, int causal, float p,
                           uint64_t seed);
void cpu_f32_attention_bwd(float *dqkv, float *scratch, const float *dout,
                           const float *qkv, const float *att, int B, int T,
                           int C, int NH, int h0, int NH_all, float p,
                           uint64_t seed);
/* ops_cpu_kv.c: attention_kv_fwd on float buffers. */
void cpu_f32_attention_kv_fwd(float *out, float *kc, float *vc,
                              const float *qkv, const int32_t *pos, int B,
                              int n, int C, int NH, int S, int T_max);
/* Softmax of row[0..n_keys) in place after adding bias[0..n_keys) (NULL:
 * none); row[n_keys..T) becomes 0. */
void cpu_softmax_row(float *row, const float *bias, int n_keys, int T);
void cpu_f32_xent(float *losses, float *dlogits, const float *logits,
                  const int32_t *targets, int n, int V, int V_valid,
                  float dscale);
void cpu_f32_xent_max(float *rowmax, const float *logits, int n, int V,
                      int V_valid);
void cpu_f32_xent_partial(double *sums, const float *logits,
                          const float *rowmax, const int32_t *targets, int n,
                          int V, int V_valid, int v0);
void cpu_f32_xent_finish(float *losses, float *dlogits, const float *logits,
                         const float *rowmax, const double *sums,
                         const int32_t *targets, int n, int V, int V_valid,
                         int v0, float dscale);
void cpu_f32_adamw(float *p, const float *grad, float *m, float *v, size_t n,
                   float lr, float b1, float b2, float eps, float wd,
                   const struct ops_step *st);

/* y[i] = x[rows[i]] for rows of row_bytes bytes (gather_rows, any
 * dtype). */
void cpu_rows_copy(void *y, const void *x, const int32_t *rows, int n,
                   size_t row_bytes);

/* dscale times the loss scale in backend memory (NULL: 1). */
float cpu_xent_scale(float dscale, const float *loss_scale);

/* The float32 table; ops_cpu_emulated.c's tables start from a copy. */
extern const struct ops cpu_ops_f32;
const struct ops *cpu_ops_emulated(enum ops_dtype dtype);

#endif /* TRAIN_CPU_INT_H */
