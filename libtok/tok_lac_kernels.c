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

/* The rows of a tile: M is padded to a multiple of it with a row of zeros
 * read and a scratch row written, which changes no other row. */
#    define R512 8

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

/* R512 rows x 32 columns (or 16, one vector) of C from column j0. */
static AVX512 inline void
tile512x2(size_t K, const float *const *A, const float *W, size_t ldw,
          float *const *C, bool acc, size_t j0, __mmask16 m0, __mmask16 m1)
{
    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61,
        c70, c71;
    const float *a0 = A[0], *a1 = A[1], *a2 = A[2], *a3 = A[3], *a4 = A[4],
                *a5 = A[5], *a6 = A[6], *a7 = A[7];
    const float *w = W + j0;

#    define LOAD_C(r)                                                         \
        c##r##0 =                                                             \
            acc ? _mm512_maskz_loadu_ps(m0, C[r] + j0) : _mm512_setzero_ps(); \
        c##r##1 = acc ? _mm512_maskz_loadu_ps(m1, C[r] + j0 + 16)             \
                      : _mm512_setzero_ps();
    LOAD_C(0)
    LOAD_C(1)
    LOAD_C(2)
    LOAD_C(3)
    LOAD_C(4)
    LOAD_C(5)
    LOAD_C(6)
    LOAD_C(7)
    for (size_t k = 0; k < K; k++, w += ldw) {
        __m512 w0 = _mm512_maskz_loadu_ps(m0, w);
        __m512 w1 = _mm512_maskz_loadu_ps(m1, w + 16);
        __m512 x;

#    define STEP(r)                                \
        x = _mm512_set1_ps(a##r[k]);               \
        c##r##0 = _mm512_fmadd_ps(x, w0, c##r##0); \
        c##r##1 = _mm512_fmadd_ps(x, w1, c##r##1);
        STEP(0)
        STEP(1)
        STEP(2)
        STEP(3)
        STEP(4)
        STEP(5)
        STEP(6)
        STEP(7)
    }
#    define STORE_C(r)                                 \
        _mm512_mask_storeu_ps(C[r] + j0, m0, c##r##0); \
        _mm512_mask_storeu_ps(C[r] + j0 + 16, m1, c##r##1);
    STORE_C(0)
    STORE_C(1)
    STORE_C(2)
    STORE_C(3)
    STORE_C(4)
    STORE_C(5)
    STORE_C(6)
    STORE_C(7)
#    undef LOAD_C
#    undef STEP
#    undef STORE_C
}

static AVX512 inline void
tile512x1(size_t K, const float *const *A, const float *W, size_t ldw,
          float *const *C, bool acc, size_t j0, __mmask16 m0)
{
    __m512 c0, c1, c2, c3, c4, c5, c6, c7;
    const float *a0 = A[0], *a1 = A[1], *a2 = A[2], *a3 = A[3], *a4 = A[4],
                *a5 = A[5], *a6 = A[6], *a7 = A[7];
    const float *w = W + j0;

#    define LOAD_C(r) \
        c##r = acc ? _mm512_maskz_loadu_ps(m0, C[r] + j0) : _mm512_setzero_ps();
    LOAD_C(0)
    LOAD_C(1)
    LOAD_C(2)
    LOAD_C(3)
    LOAD_C(4)
    LOAD_C(5)
    LOAD_C(6)
    LOAD_C(7)
    for (size_t k = 0; k < K; k++, w += ldw) {
        __m512 w0 = _mm512_maskz_loadu_ps(m0, w);

#    define STEP(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(a##r[k]), w0, c##r);
        STEP(0)
        STEP(1)
        STEP(2)
        STEP(3)
        STEP(4)
        STEP(5)
        STEP(6)
        STEP(7)
    }
#    define STORE_C(r) _mm512_mask_storeu_ps(C[r] + j0, m0, c##r);
    STORE_C(0)
    STORE_C(1)
    STORE_C(2)
    STORE_C(3)
    STORE_C(4)
    STORE_C(5)
    STORE_C(6)
    STORE_C(7)
#    undef LOAD_C
#    undef STEP
#    undef STORE_C
}

/* A zero row to read and a row to write for the padding of a tile; K and
 * N are at most TOK_LAC_MAX_K. */
#    define PAD_LEN 4096
static const float pad_zero[PAD_LEN];
static __thread float pad_out[PAD_LEN];

static AVX512 void
gemm_avx512(size_t M, size_t N, size_t K, const float *const *A, const float *W,
            size_t ldw, float *const *C, bool acc)
{
    for (size_t i = 0; i < M; i += R512) {
        const float *a[R512];
        float *c[R512];
        size_t r = 0;

        for (; r < R512 && i + r < M; r++) {
            a[r] = A[i + r];
            c[r] = C[i + r];
        }
        for (; r < R512; r++) {
            a[r] = pad_zero;
            c[r] = pad_out;
        }
        for (size_t j0 = 0; j0 < N; j0 += 32) {
            size_t nj = N - j0;

            if (nj > 16)
                tile512x2(K, a, W, ldw, c, acc, j0, mask16(nj),
                          mask16(nj - 16));
            else
                tile512x1(K, a, W, ldw, c, acc, j0, mask16(nj));
        }
    }
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
#    define R256 4

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

/* R256 rows x 16 columns of C from column j0. */
static AVX2 inline void
tile256(size_t K, const float *const *A, const float *W, size_t ldw,
        float *const *C, bool acc, size_t j0, __m256i m0, __m256i m1)
{
    __m256 c00, c01, c10, c11, c20, c21, c30, c31;
    const float *a0 = A[0], *a1 = A[1], *a2 = A[2], *a3 = A[3];
    const float *w = W + j0;

#    define LOAD_C(r)                                                      \
        c##r##0 =                                                          \
            acc ? _mm256_maskload_ps(C[r] + j0, m0) : _mm256_setzero_ps(); \
        c##r##1 =                                                          \
            acc ? _mm256_maskload_ps(C[r] + j0 + 8, m1) : _mm256_setzero_ps();
    LOAD_C(0)
    LOAD_C(1)
    LOAD_C(2)
    LOAD_C(3)
    for (size_t k = 0; k < K; k++, w += ldw) {
        __m256 w0 = _mm256_maskload_ps(w, m0);
        __m256 w1 = _mm256_maskload_ps(w + 8, m1);
        __m256 x;

#    define STEP(r)                                \
        x = _mm256_broadcast_ss(a##r + k);         \
        c##r##0 = _mm256_fmadd_ps(x, w0, c##r##0); \
        c##r##1 = _mm256_fmadd_ps(x, w1, c##r##1);
        STEP(0)
        STEP(1)
        STEP(2)
        STEP(3)
    }
#    define STORE_C(r)                               \
        _mm256_maskstore_ps(C[r] + j0, m0, c##r##0); \
        _mm256_maskstore_ps(C[r] + j0 + 8, m1, c##r##1);
    STORE_C(0)
    STORE_C(1)
    STORE_C(2)
    STORE_C(3)
#    undef LOAD_C
#    undef STEP
#    undef STORE_C
}

static AVX2 void
gemm_avx2(size_t M, size_t N, size_t K, const float *const *A, const float *W,
          size_t ldw, float *const *C, bool acc)
{
    for (size_t i = 0; i < M; i += R256) {
        const float *a[R256];
        float *c[R256];
        size_t r = 0;

        for (; r < R256 && i + r < M; r++) {
            a[r] = A[i + r];
            c[r] = C[i + r];
        }
        for (; r < R256; r++) {
            a[r] = pad_zero;
            c[r] = pad_out;
        }
        for (size_t j0 = 0; j0 < N; j0 += 16) {
            size_t nj = N - j0;

            tile256(K, a, W, ldw, c, acc, j0, mask8(nj),
                    mask8(nj > 8 ? nj - 8 : 0));
        }
    }
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
