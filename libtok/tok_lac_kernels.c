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

static void
gates_ur_scalar(size_t M, size_t D, const float *const *g, const float *gur,
                const float *h, float *u, float *rh)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *hi = h + i * D;
        const float *gu = gur ? gur + i * 2 * D : NULL;
        float *ui = u + i * D, *rhi = rh + i * D;

        for (size_t j = 0; j < D; j++)
            ui[j] = tok_lac_sigmoid(gi[j] + (gu ? gu[j] : 0.0f));
        for (size_t j = 0; j < D; j++)
            rhi[j] =
                tok_lac_sigmoid(gi[D + j] + (gu ? gu[D + j] : 0.0f)) * hi[j];
    }
}

static void
gates_c_scalar(size_t M, size_t D, const float *const *g, const float *gc,
               const float *u, float *h)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i] + 2 * D, *ui = u + i * D;
        const float *gci = gc ? gc + i * D : NULL;
        float *hi = h + i * D;

        for (size_t j = 0; j < D; j++) {
            float c = tok_lac_tanh(gi[j] + (gci ? gci[j] : 0.0f));
            float uh = ui[j] * hi[j], uc = ui[j] * c;

            hi[j] = (hi[j] - uh) + uc;
        }
    }
}

static const struct tok_lac_kernels kernels_scalar = { "scalar", gemm_scalar,
                                                       gates_ur_scalar,
                                                       gates_c_scalar };

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

static AVX512 void
gates_ur_avx512(size_t M, size_t D, const float *const *g, const float *gur,
                const float *h, float *u, float *rh)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *hi = h + i * D;
        const float *gu = gur ? gur + i * 2 * D : NULL;
        float *ui = u + i * D, *rhi = rh + i * D;

        for (size_t j = 0; j < D; j += 16) {
            __mmask16 m = mask16(D - j);
            __m512 zu = _mm512_maskz_loadu_ps(m, gi + j);
            __m512 zr = _mm512_maskz_loadu_ps(m, gi + D + j);

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
gates_c_avx512(size_t M, size_t D, const float *const *g, const float *gc,
               const float *u, float *h)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i] + 2 * D, *ui = u + i * D;
        const float *gci = gc ? gc + i * D : NULL;
        float *hi = h + i * D;

        for (size_t j = 0; j < D; j += 16) {
            __mmask16 m = mask16(D - j);
            __m512 x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, gi + j),
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

static const struct tok_lac_kernels kernels_avx512 = { "avx512", gemm_avx512,
                                                       gates_ur_avx512,
                                                       gates_c_avx512 };

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

static AVX2 void
gates_ur_avx2(size_t M, size_t D, const float *const *g, const float *gur,
              const float *h, float *u, float *rh)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i], *hi = h + i * D;
        const float *gu = gur ? gur + i * 2 * D : NULL;
        float *ui = u + i * D, *rhi = rh + i * D;

        for (size_t j = 0; j < D; j += 8) {
            __m256i m = mask8(D - j);
            __m256 zu = _mm256_maskload_ps(gi + j, m);
            __m256 zr = _mm256_maskload_ps(gi + D + j, m);

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
gates_c_avx2(size_t M, size_t D, const float *const *g, const float *gc,
             const float *u, float *h)
{
    for (size_t i = 0; i < M; i++) {
        const float *gi = g[i] + 2 * D, *ui = u + i * D;
        const float *gci = gc ? gc + i * D : NULL;
        float *hi = h + i * D;

        for (size_t j = 0; j < D; j += 8) {
            __m256i m = mask8(D - j);
            __m256 x = _mm256_add_ps(_mm256_maskload_ps(gi + j, m),
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

static const struct tok_lac_kernels kernels_avx2 = { "avx2", gemm_avx2,
                                                     gates_ur_avx2,
                                                     gates_c_avx2 };

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
