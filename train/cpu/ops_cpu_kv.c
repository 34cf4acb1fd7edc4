/* SPDX-License-Identifier: MIT */
/*
 * ops_cpu_kv.c: the CPU's attention over a key/value cache (ops.h
 * attention_kv_fwd), the core of generation: the new tokens' keys and
 * values go into the caches, then each (sequence, head) scores its new
 * queries against every cached key with one SGEMM, takes the causal
 * softmax of each row (ops_cpu.c's) and weighs the values with another
 * SGEMM, as attention_fwd does for a whole sequence; a decoding step's
 * single row goes through plain loops instead.
 */
#include <assert.h>
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "cpu_int.h"

/* Rows a call may have and still go through plain loops (a decoding
 * step's one token): SGEMM's packing costs more than it saves there. */
#define KV_LOOP_ROWS 4

/* One query row's attention over L keys: scores s[0..L), their softmax,
 * then o[0..D) = the values weighed. */
static void
kv_row(float *o, float *s, const float *q, const float *k, const float *v,
       size_t ld, int D, int L, float alpha)
{
    for (int j = 0; j < L; j++) {
        const float *kj = k + (size_t)j * ld;
        float dot = 0.0f;

#pragma omp simd reduction(+ : dot)
        for (int d = 0; d < D; d++)
            dot += q[d] * kj[d];
        s[j] = dot * alpha;
    }
    cpu_softmax_row(s, NULL, L, L);
    for (int d = 0; d < D; d++)
        o[d] = 0.0f;
    for (int j = 0; j < L; j++) {
        const float *vj = v + (size_t)j * ld;
        float p = s[j];

#pragma omp simd
        for (int d = 0; d < D; d++)
            o[d] += p * vj[d];
    }
}

void
cpu_f32_attention_kv_fwd(float *out, float *kc, float *vc, const float *qkv,
                         const int32_t *pos, int B, int n, int C, int NH, int S,
                         int T_max)
{
    int D = C / NH, L_max = 0;
    float alpha = 1.0f / sqrtf((float)D);
    size_t ld = (size_t)S * (size_t)C, row3 = 3 * (size_t)C;
    float *scores;

    assert(C % NH == 0 && B <= S && n >= 1);
    for (int b = 0; b < B; b++) {
        assert(pos[b] >= 0 && pos[b] + n <= T_max);
        L_max = pos[b] + n > L_max ? pos[b] + n : L_max;
    }
    (void)T_max;
    /* The new keys and values, each a row of the caches. */
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B * n; r++) {
        int b = r / n, i = r % n;
        size_t at = ((size_t)(pos[b] + i) * (size_t)S + (size_t)b) * C;

        memcpy(kc + at, qkv + (size_t)r * row3 + C, (size_t)C * sizeof(float));
        memcpy(vc + at, qkv + (size_t)r * row3 + 2 * (size_t)C,
               (size_t)C * sizeof(float));
    }
    /* A thread's scores: n rows of up to L_max keys. */
    scores = cpu_scratch((size_t)omp_get_max_threads() * (size_t)n *
                             (size_t)L_max * sizeof(float),
                         "attention_kv_fwd");
    if (scores == NULL)
        return;
        /* Single-threaded SGEMMs inside (OpenBLAS's OpenMP build runs one
         * thread when called from a parallel region). */
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH, L = pos[b] + n;
        float *s = scores + (size_t)omp_get_thread_num() * (size_t)n * L_max;
        const float *q = qkv + (size_t)b * n * row3 + (size_t)h * D;
        const float *k = kc + (size_t)b * C + (size_t)h * D;
        const float *v = vc + (size_t)b * C + (size_t)h * D;

        float *o = out + (size_t)b * n * C + (size_t)h * D;

        if (n > KV_LOOP_ROWS) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, L, D, alpha,
                        q, (int)row3, k, (int)ld, 0.0f, s, L);
            for (int i = 0; i < n; i++)
                cpu_softmax_row(s + (size_t)i * L, NULL, pos[b] + i + 1, L);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, L,
                        1.0f, s, L, v, (int)ld, 0.0f, o, C);
            continue;
        }
        for (int i = 0; i < n; i++)
            kv_row(o + (size_t)i * C, s, q + (size_t)i * row3, k, v, ld, D,
                   pos[b] + i + 1, alpha);
    }
    cpu_scratch_free(scores);
}
