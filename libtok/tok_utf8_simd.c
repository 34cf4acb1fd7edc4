/* SPDX-License-Identifier: MIT */
/*
 * tok_utf8_simd.c: is a buffer valid UTF-8?  32 bytes a step with AVX2.
 *
 * The algorithm is Keiser and Lemire's ("Validating UTF-8 in less than one
 * instruction per byte", Software: Practice and Experience 51(5), 2021):
 * three 16-entry tables, looked up by the high nibble of the previous byte,
 * its low nibble and the high nibble of the current byte, flag every
 * ill-formed pair of bytes (too short, too long, overlong, surrogate, above
 * U+10FFFF); what they cannot see, a third or fourth byte that must be a
 * continuation, is checked with the bytes two and three back.  It accepts
 * exactly Unicode's well-formed sequences (Table 3-7), as the scalar
 * validator does; tests/unit/test_tok.c compares the two.
 *
 * Only whether the buffer is valid comes out: the caller finds the offset
 * of the first bad byte, rarely needed, with the scalar validator.  Written
 * here because no packaged C library validates UTF-8 with SIMD, and the
 * scalar pass was 18 % of create-pretraining-data's time
 * (docs/benchmarks-history.md).
 */
#include <string.h>

/* Before tok_int.h: its banned.h poisons names that mm_malloc.h uses. */
#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>
#endif

#include "tok_int.h"

#if defined(__x86_64__) && defined(__GNUC__)

#    define AVX2 __attribute__((target("avx2")))

/* Error bits of a pair of bytes (previous, current). */
enum {
    TOO_SHORT = 1 << 0,  /* lead followed by a lead or ASCII */
    TOO_LONG = 1 << 1,   /* ASCII followed by a continuation */
    OVERLONG_3 = 1 << 2, /* E0 80..9F */
    TOO_LARGE = 1 << 3,  /* F4 90..BF, F5..FF 80..BF */
    SURROGATE = 1 << 4,  /* ED A0..BF */
    OVERLONG_2 = 1 << 5, /* C0..C1 80..BF */
    TOO_LARGE_1000 = 1 << 6,
    OVERLONG_4 = 1 << 6, /* F0 80..8F */
    TWO_CONTS = 1 << 7,  /* continuation after continuation */
    CARRY = TOO_SHORT | TOO_LONG | TWO_CONTS,
};

static AVX2 __m256i
table16(int8_t t0, int8_t t1, int8_t t2, int8_t t3, int8_t t4, int8_t t5,
        int8_t t6, int8_t t7, int8_t t8, int8_t t9, int8_t t10, int8_t t11,
        int8_t t12, int8_t t13, int8_t t14, int8_t t15)
{
    return _mm256_setr_epi8(t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11,
                            t12, t13, t14, t15, t0, t1, t2, t3, t4, t5, t6, t7,
                            t8, t9, t10, t11, t12, t13, t14, t15);
}

/* x shifted right by n bytes across the 32, with prev's last n bytes
 * coming in first: the bytes n positions before each of x's. */
#    define PREV(x, prev, n)                                                  \
        _mm256_alignr_epi8((x), _mm256_permute2x128_si256((prev), (x), 0x21), \
                           16 - (n))

static AVX2 __m256i
high_nibbles(__m256i x)
{
    return _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0F));
}

/* The error bits of 32 bytes x that follow prev (the previous 32). */
static AVX2 __m256i
block_errors(__m256i x, __m256i prev)
{
    const __m256i byte_1_high =
        table16(TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
                TOO_LONG, TOO_LONG, (int8_t)TWO_CONTS, (int8_t)TWO_CONTS,
                (int8_t)TWO_CONTS, (int8_t)TWO_CONTS, TOO_SHORT | OVERLONG_2,
                TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,
                (int8_t)(TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4));
    const __m256i byte_1_low =
        table16((int8_t)(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4),
                (int8_t)(CARRY | OVERLONG_2), (int8_t)CARRY, (int8_t)CARRY,
                (int8_t)(CARRY | TOO_LARGE),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000),
                (int8_t)(CARRY | TOO_LARGE | TOO_LARGE_1000));
    const __m256i byte_2_high = table16(
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
        TOO_SHORT, TOO_SHORT,
        (int8_t)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 |
                 TOO_LARGE_1000 | OVERLONG_4),
        (int8_t)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE),
        (int8_t)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE),
        (int8_t)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE),
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT);
    __m256i prev1 = PREV(x, prev, 1), prev2, prev3, special, must23;

    special = _mm256_and_si256(
        _mm256_and_si256(
            _mm256_shuffle_epi8(byte_1_high, high_nibbles(prev1)),
            _mm256_shuffle_epi8(
                byte_1_low, _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)))),
        _mm256_shuffle_epi8(byte_2_high, high_nibbles(x)));
    /* A byte two after E0..FF or three after F0..FF must continue it:
     * those set bit 7 of must23, which TWO_CONTS (also bit 7) must match. */
    prev2 = PREV(x, prev, 2);
    prev3 = PREV(x, prev, 3);
    must23 = _mm256_or_si256(
        _mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80))),
        _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80))));
    must23 = _mm256_and_si256(must23, _mm256_set1_epi8((char)0x80));
    return _mm256_xor_si256(must23, special);
}

/* Non-zero where the last bytes of x start a sequence that needs more
 * bytes than are left in x. */
static AVX2 __m256i
incomplete(__m256i x)
{
    const __m256i max = _mm256_setr_epi8(
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1),
        (char)(0xE0 - 1), (char)(0xC0 - 1));

    return _mm256_subs_epu8(x, max);
}

static AVX2 int
valid_avx2(const unsigned char *s, size_t len)
{
    __m256i prev = _mm256_setzero_si256(), err = prev, pending = prev;
    unsigned char tail[32];
    size_t i = 0;

    for (; i + 32 <= len; i += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(s + i));

        if (_mm256_movemask_epi8(x) == 0) {
            /* All ASCII: only a sequence left open before is an error. */
            err = _mm256_or_si256(err, pending);
            pending = _mm256_setzero_si256();
        } else {
            err = _mm256_or_si256(err, block_errors(x, prev));
            pending = incomplete(x);
        }
        prev = x;
    }
    /* The rest, padded with NULs (ASCII), which also ends an open one. */
    memset(tail, 0, sizeof(tail));
    memcpy(tail, s + i, len - i);
    err = _mm256_or_si256(
        err, block_errors(_mm256_loadu_si256((const __m256i *)tail), prev));
    return _mm256_testz_si256(err, err);
}

int
tok_utf8_simd_valid(const char *s, size_t len)
{
    static int have = -1; /* benign race: every thread stores the same */

    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    if (!have)
        return -1;
    return valid_avx2((const unsigned char *)s, len);
}

#else

int
tok_utf8_simd_valid(const char *s, size_t len)
{
    (void)s;
    (void)len;
    return -1;
}

#endif
