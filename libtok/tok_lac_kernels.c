/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_kernels.c: the numeric kernels of the LAC engine: the matrix
 * product of a GRU step (rows of several texts at once), its gates, and
 * exp.  The scalar versions define the arithmetic (tok_lac_int.h); the
 * AVX2 and AVX-512 versions do the same operations lane by lane, every
 * sum a chain of fused multiply-adds in the same order, so all three give
 * the same bits (tests/unit/test_lac.c compares them).  Chosen at run time
 * from what the CPU offers; the build needs no -march.  Written here
 * rather than through a BLAS because a BLAS does not promise that a row's
 * result is independent of the other rows of the product (its kernels
 * change with the matrix sizes), and a text's words must not depend on the
 * batch it is run in.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* Before tok_int.h: its banned.h poisons names that mm_malloc.h uses. */
#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>
#endif

#include "tok_lac_int.h"

/* exp's clamp, range reduction and polynomial (Cephes' expf). */
#define EXP_LO -87.0f
#define EXP_HI 88.0f
#define LOG2E  1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f
#define SIG_LO -40.0f
#define SIG_HI 13.0f

/* max and min as the SIMD instructions compute them: the second operand
 * unless the first is greater (less), so NaN gives the bound. */
static inline float
vmax(float a, float b)
{
    return a > b ? a : b;
}

static inline float
vmin(float a, float b)
{
    return a < b ? a : b;
}

float
tok_lac_expf(float x)
{
    float fx, r, p, y, scale;
    int32_t n;
    uint32_t bits;

    x = vmin(vmax(x, EXP_LO), EXP_HI);
    fx = rintf(x * LOG2E);
    r = fmaf(fx, -LN2_HI, x);
    r = fmaf(fx, -LN2_LO, r);
    p = EXP_P0;
    p = fmaf(p, r, EXP_P1);
    p = fmaf(p, r, EXP_P2);
    p = fmaf(p, r, EXP_P3);
    p = fmaf(p, r, EXP_P4);
    p = fmaf(p, r, EXP_P5);
    y = fmaf(p, r * r, r);
    y = y + 1.0f;
    n = (int32_t)fx;
    bits = (uint32_t)(n + 127) << 23;
    memcpy(&scale, &bits, sizeof(scale));
    return y * scale;
}

float
tok_lac_sigmoid(float x)
{
    float t = vmin(vmax(x, SIG_LO), SIG_HI);

    return 1.0f / (1.0f + tok_lac_expf(-t));
}

float
tok_lac_tanh(float x)
{
    return 2.0f / (1.0f + tok_lac_expf(-2.0f * x)) - 1.0f;
}

/* ------------------------------------------------------------------------ */
/* Scalar                                                                    */

static void
gemm_scalar(size_t M, size_t N, size_t K, const float *const *A, const float *W,
            size_t ldw, float *const *C, bool acc)
{
    for (size_t i = 0; i < M; i++) {
        const float *a = A[i];
        float *c = C[i];

        if (!acc)
            for (size_t j = 0; j < N; j++)
                c[j] = 0.0f;
        /* k outermost: each c[j] still sums in k order. */
        for (size_t k = 0; k < K; k++) {
            const float *w = W + k * ldw;

            for (size_t j = 0; j < N; j++)
                c[j] = fmaf(a[k], w[j], c[j]);
        }
    }
}

/* g + b, the gates' input (b NULL: g). */
static inline float
gate_in(const float *g, const float *b, size_t j)
{
    return b ? g[j] + b[j] : g[j];
}

static void
gates_ur_scalar(size_t M, size_t D, const float *const *g, const float *b,
                const float *gur, const float *h, float *u, float *rh)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *hi = h + i * D;
        const float *gu = gur ? gur + i * 2 * D : NULL;
        float *ui = u + i * D, *rhi = rh + i * D;

        for (size_t j = 0; j < D; j++)
            ui[j] = tok_lac_sigmoid(gate_in(gi, b, j) + (gu ? gu[j] : 0.0f));
        for (size_t j = 0; j < D; j++)
            rhi[j] = tok_lac_sigmoid(gate_in(gi, b, D + j) +
                                     (gu ? gu[D + j] : 0.0f)) *
                     hi[j];
    }
}

static void
gates_c_scalar(size_t M, size_t D, const float *const *g, const float *b,
               const float *gc, const float *u, float *h)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *ui = u + i * D;
        const float *gci = gc ? gc + i * D : NULL;
        float *hi = h + i * D;

        for (size_t j = 0; j < D; j++) {
            float c =
                tok_lac_tanh(gate_in(gi, b, 2 * D + j) + (gci ? gci[j] : 0.0f));
            float uh = ui[j] * hi[j], uc = ui[j] * c;

            hi[j] = (hi[j] - uh) + uc;
        }
    }
}

static void
viterbi_scalar(size_t L, const float *prev, const float *trans, const float *e,
               float *alpha, uint8_t *track)
{
    for (size_t i = 0; i < L; i++) {
        float best = -FLT_MAX;
        size_t arg = 0;

        for (size_t j = 0; j < L; j++) {
            float s = prev[j] + trans[j * L + i];

            if (s > best) {
                best = s;
                arg = j;
            }
        }
        alpha[i] = best + e[i];
        track[i] = (uint8_t)arg;
    }
}

static const struct tok_lac_kernels kernels_scalar = {
    "scalar", gemm_scalar, gates_ur_scalar, gates_c_scalar, viterbi_scalar
};

#if defined(__x86_64__) && defined(__GNUC__)

/* ------------------------------------------------------------------------ */
/* AVX-512                                                                   */

#    define AVX512 __attribute__((target("avx512f")))

static AVX512 inline __m512
exp512(__m512 x)
{
    __m512 fx, r, p, y, scale;
    __m512i n;

    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP_LO)),
                      _mm512_set1_ps(EXP_HI));
    fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_fmadd_ps(fx, _mm512_set1_ps(-LN2_HI), x);
    r = _mm512_fmadd_ps(fx, _mm512_set1_ps(-LN2_LO), r);
    p = _mm512_set1_ps(EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
    y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
    n = _mm512_cvttps_epi32(fx);
    scale = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
    return _mm512_mul_ps(y, scale);
}

static AVX512 inline __m512
sigmoid512(__m512 x)
{
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 t = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(SIG_LO)),
                             _mm512_set1_ps(SIG_HI));
    __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), t));

    return _mm512_div_ps(one, _mm512_add_ps(one, e));
}

static AVX512 inline __m512
tanh512(__m512 x)
{
    __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
    __m512 e = exp512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), x));

    return _mm512_sub_ps(_mm512_div_ps(two, _mm512_add_ps(one, e)), one);
}

static AVX512 inline __mmask16
mask16(size_t n)
{
    return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
}

/* R rows x NV vectors of 16 columns of C from column j0; with a mask m
 * (NV 1), only its lanes.  R, NV and whether m is all ones are constants
 * where it is called, so the compiler unrolls the loops and keeps the
 * R x NV sums in registers (the mask too: AVX-512 has 7). */
static AVX512 inline __attribute__((always_inline)) void
tile512(const int R, const int NV, size_t K, const float *const *A,
        const float *W, size_t ldw, float *const *C, bool acc, size_t j0,
        const __mmask16 m)
{
    __m512 c[8][16];
    const float *w = W + j0;

#    pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#    pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            c[r][v] = acc ? _mm512_maskz_loadu_ps(m, C[r] + j0 + 16 * v)
                          : _mm512_setzero_ps();
    for (size_t k = 0; k < K; k++, w += ldw) {
        __m512 wv[16];

#    pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            wv[v] = _mm512_maskz_loadu_ps(m, w + 16 * v);
#    pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_set1_ps(A[r][k]);

#    pragma GCC unroll 16
            for (int v = 0; v < NV; v++)
                c[r][v] = _mm512_fmadd_ps(x, wv[v], c[r][v]);
        }
    }
#    pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#    pragma GCC unroll 16
        for (int v = 0; v < NV; v++)
            _mm512_mask_storeu_ps(C[r] + j0 + 16 * v, m, c[r][v]);
}

/* All columns of R rows: NV vectors at a time, then one at a time, then
 * the last lanes. */
#    define ROWS512(R, NV)                                                    \
        static AVX512 void rows512_##R(size_t N, size_t K,                    \
                                       const float *const *A, const float *W, \
                                       size_t ldw, float *const *C, bool acc) \
        {                                                                     \
            size_t j0 = 0;                                                    \
                                                                              \
            for (; j0 + 16 * (NV) <= N; j0 += 16 * (NV))                      \
                tile512(R, NV, K, A, W, ldw, C, acc, j0, 0xFFFF);             \
            for (; j0 + 16 <= N; j0 += 16)                                    \
                tile512(R, 1, K, A, W, ldw, C, acc, j0, 0xFFFF);              \
            if (j0 < N)                                                       \
                tile512(R, 1, K, A, W, ldw, C, acc, j0, mask16(N - j0));      \
        }
ROWS512(8, 2)
ROWS512(4, 4)
ROWS512(2, 8)
ROWS512(1, 16)

/* Rows in tiles of 8 (32 columns at a time), the rest in tiles of 4, 2
 * and 1 with wider column blocks: always 16 independent sums or more in
 * flight.  Each element's sum is the same chain over k whichever tile
 * computes it. */
static AVX512 void
gemm_avx512(size_t M, size_t N, size_t K, const float *const *A, const float *W,
            size_t ldw, float *const *C, bool acc)
{
    size_t i = 0;

    for (; i + 8 <= M; i += 8)
        rows512_8(N, K, A + i, W, ldw, C + i, acc);
    if (i + 4 <= M) {
        rows512_4(N, K, A + i, W, ldw, C + i, acc);
        i += 4;
    }
    if (i + 2 <= M) {
        rows512_2(N, K, A + i, W, ldw, C + i, acc);
        i += 2;
    }
    if (i < M)
        rows512_1(N, K, A + i, W, ldw, C + i, acc);
}

/* g[j..j+16) + b (b NULL: g), lanes of m. */
static AVX512 inline __m512
gate_in512(const float *g, const float *b, size_t j, __mmask16 m)
{
    __m512 x = _mm512_maskz_loadu_ps(m, g + j);

    return b ? _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, b + j)) : x;
}

static AVX512 void
gates_ur_avx512(size_t M, size_t D, const float *const *g, const float *b,
                const float *gur, const float *h, float *u, float *rh)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *hi = h + i * D;
        const float *gu = gur ? gur + i * 2 * D : NULL;
        float *ui = u + i * D, *rhi = rh + i * D;

        for (size_t j = 0; j < D; j += 16) {
            __mmask16 m = mask16(D - j);
            __m512 zu = gate_in512(gi, b, j, m);
            __m512 zr = gate_in512(gi, b, D + j, m);

            zu = _mm512_add_ps(zu, gu ? _mm512_maskz_loadu_ps(m, gu + j)
                                      : _mm512_setzero_ps());
            zr = _mm512_add_ps(zr, gu ? _mm512_maskz_loadu_ps(m, gu + D + j)
                                      : _mm512_setzero_ps());
            _mm512_mask_storeu_ps(ui + j, m, sigmoid512(zu));
            _mm512_mask_storeu_ps(
                rhi + j, m,
                _mm512_mul_ps(sigmoid512(zr),
                              _mm512_maskz_loadu_ps(m, hi + j)));
        }
    }
}

static AVX512 void
gates_c_avx512(size_t M, size_t D, const float *const *g, const float *b,
               const float *gc, const float *u, float *h)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *ui = u + i * D;
        const float *gci = gc ? gc + i * D : NULL;
        float *hi = h + i * D;

        for (size_t j = 0; j < D; j += 16) {
            __mmask16 m = mask16(D - j);
            __m512 x = _mm512_add_ps(gate_in512(gi, b, 2 * D + j, m),
                                     gci ? _mm512_maskz_loadu_ps(m, gci + j)
                                         : _mm512_setzero_ps());
            __m512 c = tanh512(x);
            __m512 uj = _mm512_maskz_loadu_ps(m, ui + j);
            __m512 hj = _mm512_maskz_loadu_ps(m, hi + j);
            __m512 uh = _mm512_mul_ps(uj, hj), uc = _mm512_mul_ps(uj, c);

            _mm512_mask_storeu_ps(hi + j, m,
                                  _mm512_add_ps(_mm512_sub_ps(hj, uh), uc));
        }
    }
}

/* Sixteen tags i at a time: for each j in order, where prev[j] +
 * trans[j][i] is greater, it becomes the best and j the argument. */
static AVX512 void
viterbi_avx512(size_t L, const float *prev, const float *trans, const float *e,
               float *alpha, uint8_t *track)
{
    for (size_t i = 0; i < L; i += 16) {
        __mmask16 m = mask16(L - i);
        __m512 best = _mm512_set1_ps(-FLT_MAX);
        __m512i arg = _mm512_setzero_si512();

        for (size_t j = 0; j < L; j++) {
            __m512 sc =
                _mm512_add_ps(_mm512_set1_ps(prev[j]),
                              _mm512_maskz_loadu_ps(m, trans + j * L + i));
            __mmask16 gt = _mm512_cmp_ps_mask(sc, best, _CMP_GT_OQ);

            best = _mm512_mask_mov_ps(best, gt, sc);
            arg = _mm512_mask_mov_epi32(arg, gt, _mm512_set1_epi32((int)j));
        }
        _mm512_mask_storeu_ps(
            alpha + i, m, _mm512_add_ps(best, _mm512_maskz_loadu_ps(m, e + i)));
        _mm512_mask_cvtepi32_storeu_epi8(track + i, m, arg);
    }
}

static const struct tok_lac_kernels kernels_avx512 = {
    "avx512", gemm_avx512, gates_ur_avx512, gates_c_avx512, viterbi_avx512
};

/* ------------------------------------------------------------------------ */
/* AVX2 + FMA                                                                */

#    define AVX2 __attribute__((target("avx2,fma")))

static AVX2 inline __m256
exp256(__m256 x)
{
    __m256 fx, r, p, y, scale;
    __m256i n;

    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP_LO)),
                      _mm256_set1_ps(EXP_HI));
    fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)),
                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fmadd_ps(fx, _mm256_set1_ps(-LN2_HI), x);
    r = _mm256_fmadd_ps(fx, _mm256_set1_ps(-LN2_LO), r);
    p = _mm256_set1_ps(EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P5));
    y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    n = _mm256_cvttps_epi32(fx);
    scale = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(y, scale);
}

static AVX2 inline __m256
sigmoid256(__m256 x)
{
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 t = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(SIG_LO)),
                             _mm256_set1_ps(SIG_HI));
    __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), t));

    return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

static AVX2 inline __m256
tanh256(__m256 x)
{
    __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
    __m256 e = exp256(_mm256_mul_ps(_mm256_set1_ps(-2.0f), x));

    return _mm256_sub_ps(_mm256_div_ps(two, _mm256_add_ps(one, e)), one);
}

/* The lane mask of the first n of 8 lanes. */
static AVX2 inline __m256i
mask8(size_t n)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : (int)n), lanes);
}

/* R rows x NV vectors of 8 columns of C from column j0, as tile512();
 * masked (NV 1) with the lane mask m when `masked`. */
static AVX2 inline __attribute__((always_inline)) void
tile256(const int R, const int NV, size_t K, const float *const *A,
        const float *W, size_t ldw, float *const *C, bool acc, size_t j0,
        const bool masked, __m256i m)
{
    __m256 c[4][8];
    const float *w = W + j0;

#    pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#    pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            c[r][v] = !acc     ? _mm256_setzero_ps()
                      : masked ? _mm256_maskload_ps(C[r] + j0, m)
                               : _mm256_loadu_ps(C[r] + j0 + 8 * v);
    for (size_t k = 0; k < K; k++, w += ldw) {
        __m256 wv[8];

#    pragma GCC unroll 8
        for (int v = 0; v < NV; v++)
            wv[v] =
                masked ? _mm256_maskload_ps(w, m) : _mm256_loadu_ps(w + 8 * v);
#    pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 x = _mm256_broadcast_ss(A[r] + k);

#    pragma GCC unroll 8
            for (int v = 0; v < NV; v++)
                c[r][v] = _mm256_fmadd_ps(x, wv[v], c[r][v]);
        }
    }
#    pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#    pragma GCC unroll 8
        for (int v = 0; v < NV; v++) {
            if (masked)
                _mm256_maskstore_ps(C[r] + j0, m, c[r][v]);
            else
                _mm256_storeu_ps(C[r] + j0 + 8 * v, c[r][v]);
        }
}

#    define ROWS256(R, NV)                                                    \
        static AVX2 void rows256_##R(size_t N, size_t K,                      \
                                     const float *const *A, const float *W,   \
                                     size_t ldw, float *const *C, bool acc)   \
        {                                                                     \
            size_t j0 = 0;                                                    \
                                                                              \
            for (; j0 + 8 * (NV) <= N; j0 += 8 * (NV))                        \
                tile256(R, NV, K, A, W, ldw, C, acc, j0, false,               \
                        _mm256_setzero_si256());                              \
            for (; j0 + 8 <= N; j0 += 8)                                      \
                tile256(R, 1, K, A, W, ldw, C, acc, j0, false,                \
                        _mm256_setzero_si256());                              \
            if (j0 < N)                                                       \
                tile256(R, 1, K, A, W, ldw, C, acc, j0, true, mask8(N - j0)); \
        }
ROWS256(4, 2)
ROWS256(2, 4)
ROWS256(1, 8)

static AVX2 void
gemm_avx2(size_t M, size_t N, size_t K, const float *const *A, const float *W,
          size_t ldw, float *const *C, bool acc)
{
    size_t i = 0;

    for (; i + 4 <= M; i += 4)
        rows256_4(N, K, A + i, W, ldw, C + i, acc);
    if (i + 2 <= M) {
        rows256_2(N, K, A + i, W, ldw, C + i, acc);
        i += 2;
    }
    if (i < M)
        rows256_1(N, K, A + i, W, ldw, C + i, acc);
}

/* g[j..j+8) + b (b NULL: g), lanes of m. */
static AVX2 inline __m256
gate_in256(const float *g, const float *b, size_t j, __m256i m)
{
    __m256 x = _mm256_maskload_ps(g + j, m);

    return b ? _mm256_add_ps(x, _mm256_maskload_ps(b + j, m)) : x;
}

static AVX2 void
gates_ur_avx2(size_t M, size_t D, const float *const *g, const float *b,
              const float *gur, const float *h, float *u, float *rh)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *hi = h + i * D;
        const float *gu = gur ? gur + i * 2 * D : NULL;
        float *ui = u + i * D, *rhi = rh + i * D;

        for (size_t j = 0; j < D; j += 8) {
            __m256i m = mask8(D - j);
            __m256 zu = gate_in256(gi, b, j, m);
            __m256 zr = gate_in256(gi, b, D + j, m);

            zu = _mm256_add_ps(zu, gu ? _mm256_maskload_ps(gu + j, m)
                                      : _mm256_setzero_ps());
            zr = _mm256_add_ps(zr, gu ? _mm256_maskload_ps(gu + D + j, m)
                                      : _mm256_setzero_ps());
            _mm256_maskstore_ps(ui + j, m, sigmoid256(zu));
            _mm256_maskstore_ps(
                rhi + j, m,
                _mm256_mul_ps(sigmoid256(zr), _mm256_maskload_ps(hi + j, m)));
        }
    }
}

static AVX2 void
gates_c_avx2(size_t M, size_t D, const float *const *g, const float *b,
             const float *gc, const float *u, float *h)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *ui = u + i * D;
        const float *gci = gc ? gc + i * D : NULL;
        float *hi = h + i * D;

        for (size_t j = 0; j < D; j += 8) {
            __m256i m = mask8(D - j);
            __m256 x = _mm256_add_ps(gate_in256(gi, b, 2 * D + j, m),
                                     gci ? _mm256_maskload_ps(gci + j, m)
                                         : _mm256_setzero_ps());
            __m256 c = tanh256(x);
            __m256 uj = _mm256_maskload_ps(ui + j, m);
            __m256 hj = _mm256_maskload_ps(hi + j, m);
            __m256 uh = _mm256_mul_ps(uj, hj), uc = _mm256_mul_ps(uj, c);

            _mm256_maskstore_ps(hi + j, m,
                                _mm256_add_ps(_mm256_sub_ps(hj, uh), uc));
        }
    }
}

static AVX2 void
viterbi_avx2(size_t L, const float *prev, const float *trans, const float *e,
             float *alpha, uint8_t *track)
{
    for (size_t i = 0; i < L; i += 8) {
        __m256i m = mask8(L - i);
        __m256 best = _mm256_set1_ps(-FLT_MAX);
        __m256i arg = _mm256_setzero_si256();
        int32_t a[8];

        for (size_t j = 0; j < L; j++) {
            __m256 sc = _mm256_add_ps(_mm256_set1_ps(prev[j]),
                                      _mm256_maskload_ps(trans + j * L + i, m));
            __m256 gt = _mm256_cmp_ps(sc, best, _CMP_GT_OQ);

            best = _mm256_blendv_ps(best, sc, gt);
            arg = _mm256_castps_si256(_mm256_blendv_ps(
                _mm256_castsi256_ps(arg),
                _mm256_castsi256_ps(_mm256_set1_epi32((int)j)), gt));
        }
        _mm256_maskstore_ps(alpha + i, m,
                            _mm256_add_ps(best, _mm256_maskload_ps(e + i, m)));
        _mm256_storeu_si256((__m256i *)a, arg);
        for (size_t k = 0; k < 8 && i + k < L; k++)
            track[i + k] = (uint8_t)a[k];
    }
}

static const struct tok_lac_kernels kernels_avx2 = {
    "avx2", gemm_avx2, gates_ur_avx2, gates_c_avx2, viterbi_avx2
};

#endif /* x86-64 */

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

static const struct tok_lac_kernels *all_kernels[3];
static size_t n_kernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

static void
find_kernels(void)
{
    all_kernels[n_kernels++] = &kernels_scalar;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        all_kernels[n_kernels++] = &kernels_avx2;
    if (__builtin_cpu_supports("avx512f"))
        all_kernels[n_kernels++] = &kernels_avx512;
#endif
}

const struct tok_lac_kernels *
tok_lac_kernels_best(void)
{
    pthread_once(&kernels_once, find_kernels);
    return all_kernels[n_kernels - 1];
}

const struct tok_lac_kernels *const *
tok_lac_kernels_all(size_t *n)
{
    pthread_once(&kernels_once, find_kernels);
    *n = n_kernels;
    return all_kernels;
}
