/* SPDX-License-Identifier: MIT */
/*
 * cpu_dtype.c: the element types of the CPU backend: bfloat16 and
 * float16 to and from float32, rounding to nearest even as the GPU's
 * conversions do (__float2bfloat16_rn, __float2half_rn), and the cast op
 * over buffers of any two types.
 */
#include <math.h>
#include <string.h>

#include "cpu_int.h"

static uint32_t
bits_of(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static float
float_of(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* bfloat16 is float32's upper half: add half an ulp of the kept part (less
 * one when the kept part is even, so ties go to even) and truncate.  A
 * carry out of the mantissa steps the exponent: up to infinity, right. */
uint16_t
cpu_bf16_from_f32(float f)
{
    uint32_t u = bits_of(f);

    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep it quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float
cpu_f32_from_bf16(uint16_t h)
{
    return float_of((uint32_t)h << 16);
}

/* float16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.  Normal
 * results round the 23-bit mantissa to 10; below 2^-14 the result is
 * subnormal (a multiple of 2^-24), rounded as an integer count of 2^-24
 * from the value with its hidden bit; from 65520 up, infinity. */
uint16_t
cpu_f16_from_f32(float f)
{
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    int32_t e = (int32_t)(a >> 23) - 127; /* unbiased exponent */
    uint32_t mant, r;

    if (a > 0x7F800000u) /* NaN */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a == 0x7F800000u || e > 15) /* infinity, or too large */
        return (uint16_t)(sign | 0x7C00u);
    if (e >= -14) { /* normal */
        mant = a & 0x7FFFFFu;
        r = ((uint32_t)(e + 15) << 10) | (mant >> 13);
        /* Round on the 13 dropped bits; a carry may reach infinity. */
        if ((mant & 0x1FFFu) > 0x1000u ||
            ((mant & 0x1FFFu) == 0x1000u && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    if (e < -25) /* below half the smallest subnormal: 0 */
        return sign;
    /* Subnormal: the value / 2^-24 = (1.mant) x 2^(e + 24), e + 24 in
     * [-1, 9]: shift the 24-bit significand right by -(e + 24) + 23. */
    {
        uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
        int shift = 23 - (e + 24); /* 14 .. 24 */
        uint32_t half = 1u << (shift - 1), rest = sig & ((1u << shift) - 1u);

        r = sig >> shift;
        if (rest > half || (rest == half && (r & 1u)))
            r++; /* (may become the smallest normal: right) */
        return (uint16_t)(sign | r);
    }
}

float
cpu_f32_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;

    if (e == 0x1F) /* infinity, NaN */
        return float_of(sign | 0x7F800000u | (mant << 13));
    if (e == 0) /* zero, subnormal: mant x 2^-24, exact in float */
        return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
    return float_of(sign | ((e + 112u) << 23) | (mant << 13));
}

/* Element i of a buffer of type t, as float32. */
static float
load(const void *src, enum ops_dtype t, size_t i)
{
    switch (t) {
    case OPS_BF16:
        return cpu_f32_from_bf16(((const uint16_t *)src)[i]);
    case OPS_F16:
        return cpu_f32_from_f16(((const uint16_t *)src)[i]);
    case OPS_F32:
        break;
    }
    return ((const float *)src)[i];
}

void
cpu_cast(void *dst, enum ops_dtype dst_type, const void *src,
         enum ops_dtype src_type, size_t n)
{
    if (dst_type == src_type) {
        if (dst != src)
            memmove(dst, src, n * ops_dtype_size(dst_type));
        return;
    }
    /* (Threads only where they pay: the emulated ops cast rows too.) */
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (size_t i = 0; i < n; i++) {
        float f = load(src, src_type, i);

        switch (dst_type) {
        case OPS_BF16:
            ((uint16_t *)dst)[i] = cpu_bf16_from_f32(f);
            break;
        case OPS_F16:
            ((uint16_t *)dst)[i] = cpu_f16_from_f32(f);
            break;
        case OPS_F32:
            ((float *)dst)[i] = f;
            break;
        }
    }
}
