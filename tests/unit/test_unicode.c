/* SPDX-License-Identifier: MIT */
/*
 * test_unicode.c: the SIMD UTF-8 validator (tok_utf8_simd.c) against the
 * scalar one, which test_tok.c pins to Unicode's Table 3-7: every byte
 * pair and every triple with a lead byte, at each place around a 32-byte
 * step, in ASCII and in CJK text; and random text with random damage.  A
 * verdict that differs fails with the bytes.  And the character class
 * table (tok_unicode.c): its shortcut for characters that normalization
 * leaves alone, against tok_normalize_cp() for every code point, and its
 * lazily built upper planes.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <utf8proc.h>

#include "../harness.h"
#include "tok_int.h"

/* Does the SIMD pass agree with the scalar one on s[0..len)? */
static int
agrees(const unsigned char *s, size_t len)
{
    int simd = tok_utf8_simd_valid((const char *)s, len);
    int scalar = tok_utf8_check_scalar((const char *)s, len) == len;

    return simd == scalar;
}

static void
report(const unsigned char *s, size_t len)
{
    fprintf(stderr, "verdicts differ (simd %d) on %zu bytes:",
            tok_utf8_simd_valid((const char *)s, len), len);
    for (size_t i = 0; i < len; i++)
        fprintf(stderr, " %02X", s[i]);
    fprintf(stderr, "\n");
}

/* Fill buf[0..len) with valid text: ASCII, or 中 (E4 B8 AD) repeated with
 * ASCII to pad. */
static void
fill(unsigned char *buf, size_t len, int cjk)
{
    memset(buf, 'a', len);
    if (cjk)
        for (size_t i = 0; i + 3 <= len; i += 3)
            memcpy(buf + i, "\xE4\xB8\xAD", 3);
}

static void
test_simd_pairs_and_triples(void)
{
    /* Places around the ends of the first and second 32-byte steps and
     * the padded tail; the text before is whole characters (multiples of
     * 3 in CJK). */
    static const size_t at[] = { 0, 30, 31, 32, 33, 60, 61, 62, 63, 93 };
    unsigned char buf[96];

    if (tok_utf8_simd_valid("", 0) < 0) {
        SKIP("no AVX2 on this machine: the SIMD pass never runs");
        return;
    }
    for (int cjk = 0; cjk < 2; cjk++) {
        for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
            size_t p = cjk ? at[k] / 3 * 3 : at[k];

            for (unsigned a = 0x80; a < 0x100; a++) {
                for (unsigned b = 0; b < 0x100; b++) {
                    fill(buf, sizeof(buf), cjk);
                    buf[p] = (unsigned char)a;
                    if (p + 1 < sizeof(buf))
                        buf[p + 1] = (unsigned char)b;
                    if (!agrees(buf, sizeof(buf))) {
                        report(buf, sizeof(buf));
                        CHECK(0);
                        return;
                    }
                    if (a < 0xC0 || p + 2 >= sizeof(buf))
                        continue;
                    for (unsigned c = 0x70; c < 0xD0; c++) {
                        buf[p + 2] = (unsigned char)c;
                        if (!agrees(buf, sizeof(buf))) {
                            report(buf, sizeof(buf));
                            CHECK(0);
                            return;
                        }
                    }
                }
            }
            /* The same sequences at the very end of the text. */
            for (unsigned a = 0x80; a < 0x100; a++) {
                size_t len = p + 1;

                fill(buf, len, cjk);
                buf[p] = (unsigned char)a;
                if (!agrees(buf, len)) {
                    report(buf, len);
                    CHECK(0);
                    return;
                }
            }
        }
    }
}

/* xorshift64*: a fixed stream, so a failure repeats. */
static uint64_t
next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

static void
test_simd_random_text(void)
{
    unsigned char buf[400];
    uint64_t x = 20261123;
    int n_valid = 0, n_invalid = 0;

    if (tok_utf8_simd_valid("", 0) < 0) {
        SKIP("no AVX2 on this machine: the SIMD pass never runs");
        return;
    }
    for (int round = 0; round < 200000; round++) {
        size_t len = 0, want = 1 + next(&x) % 380;
        int damage = (int)(next(&x) % 4); /* 0..3 random bytes */

        while (len < want) {
            /* Code points of every length, surrogates and all. */
            static const uint32_t top[] = { 0x80, 0x800, 0x10000, 0x110000 };
            uint32_t cp = (uint32_t)(next(&x) % top[next(&x) % 4]);
            char enc[4];
            size_t n = tok_utf8_encode(cp, enc);

            if (n == 0 || len + n > want)
                break;
            memcpy(buf + len, enc, n);
            len += n;
        }
        for (int d = 0; d < damage && len > 0; d++)
            buf[next(&x) % len] = (unsigned char)next(&x);
        if (!agrees(buf, len)) {
            report(buf, len);
            CHECK(0);
            return;
        }
        if (tok_utf8_check_scalar((const char *)buf, len) == len)
            n_valid++;
        else
            n_invalid++;
    }
    /* Both verdicts were exercised. */
    CHECK(n_valid > 10000);
    CHECK(n_invalid > 10000);
}

static void
test_check_uses_offset_of_scalar(void)
{
    /* tok_utf8_check() on long text: the same offsets as before. */
    unsigned char buf[200];

    fill(buf, sizeof(buf), 1);
    CHECK_EQ_INT(tok_utf8_check((const char *)buf, sizeof(buf)), sizeof(buf));
    buf[150] = 0xFF;
    CHECK_EQ_INT(tok_utf8_check((const char *)buf, sizeof(buf)), 150);
    fill(buf, sizeof(buf), 1);
    buf[199] = 0xE4; /* a lead at the very end: truncated */
    CHECK_EQ_INT(tok_utf8_check((const char *)buf, sizeof(buf)), 199);
}

static void
test_class_norm_bit_for_every_code_point(void)
{
    const uint8_t *cc = tok_cc_table();

    CHECK(cc != NULL);
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        uint8_t f = tok_cc_class(cc, cp);
        bool want = false;

        if (!(f & TOK_CC_DROP) &&
            utf8proc_get_property((utf8proc_int32_t)cp)->category !=
                UTF8PROC_CATEGORY_CN) {
            uint32_t out[TOK_NORM_MAX];
            uint8_t ccc[TOK_NORM_MAX];
            size_t n = tok_normalize_cp(cp, out, ccc);

            want = n != 1 || out[0] != cp || ccc[0] != 0 || (f & TOK_CC_MN);
        }
        if (want != !!(f & TOK_CC_NORM)) {
            fprintf(stderr, "U+%04X: NORM %d, expected %d\n", (unsigned)cp,
                    !!(f & TOK_CC_NORM), want);
            CHECK(0);
            return;
        }
    }
}

static void
test_class_upper_planes(void)
{
    const uint8_t *cc = tok_cc_table();

    /* Below and above TOK_CC_EAGER, and past the last code point. */
    CHECK_EQ_INT(tok_cc_class(cc, 0x4E2D), TOK_CC_CJK);  /* 中 */
    CHECK_EQ_INT(tok_cc_class(cc, 0x20000), TOK_CC_CJK); /* Ext B */
    CHECK_EQ_INT(tok_cc_class(cc, 0x2F800), TOK_CC_CJK | TOK_CC_NORM);
    CHECK_EQ_INT(tok_cc_class(cc, 0x1F600), TOK_CC_SYMBOL); /* emoji */
    CHECK_EQ_INT(tok_cc_class(cc, 0x30000), 0);             /* Ext G */
    CHECK_EQ_INT(tok_cc_class(cc, 0xE0001), TOK_CC_DROP);   /* Cf tag */
    CHECK_EQ_INT(tok_cc_class(cc, 0xF0000), TOK_CC_DROP);   /* Co */
    CHECK_EQ_INT(tok_cc_class(cc, 0x50000), TOK_CC_DROP);   /* Cn */
    CHECK_EQ_INT(tok_cc_class(cc, 0x110000), 0);
}

TESTS(test_unicode, TEST(test_simd_pairs_and_triples),
      TEST(test_simd_random_text), TEST(test_check_uses_offset_of_scalar),
      TEST(test_class_norm_bit_for_every_code_point),
      TEST(test_class_upper_planes))
