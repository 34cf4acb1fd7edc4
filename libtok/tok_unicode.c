/* SPDX-License-Identifier: MIT */
/*
 * tok_unicode.c: the character classes of the BERT basic tokenizer and the
 * lowercase + NFD step, both from utf8proc's Unicode tables.
 *
 * The class table has one byte per code point (1.1 MB), built once per
 * process, so the tokenizer's inner loop is a table lookup.  The rules are
 * those of the Python references (unicodedata + str.lower()); the Unicode
 * version is utf8proc's (see tok_unicode_version()).
 */
#include <pthread.h>
#include <stdlib.h>
#include <utf8proc.h>

#include "tok_int.h"

#define N_CODEPOINTS 0x110000

static uint8_t *cc_table;
static pthread_once_t cc_once = PTHREAD_ONCE_INIT;
static pthread_once_t cc_high_once = PTHREAD_ONCE_INIT;

/* BERT's _is_chinese_char ranges (Google BERT, PaddleNLP, transformers). */
static bool
is_bert_cjk(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B820 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* PaddleNLP's _is_symbol extras, besides category S*. */
static bool
is_paddle_extra_symbol(uint32_t cp)
{
    switch (cp) {
    case 0x00AD:
    case 0x00B2:
    case 0x00BA:
    case 0x3007:
    case 0x00B5:
    case 0x00D8:
    case 0x014B:
    case 0x01B1:
        return true;
    }
    return false;
}

static bool
is_ascii_punct(uint32_t cp)
{
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
           (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
}

size_t
tok_normalize_cp(uint32_t cp, uint32_t *out, uint8_t *ccc)
{
    utf8proc_int32_t low[2], dec[TOK_NORM_MAX];
    size_t n_low, n = 0;

    /* Python's full lowercase mapping differs from the simple one only for
     * U+0130 (SpecialCasing.txt; the other entries are conditional). */
    if (cp == 0x130) {
        low[0] = 0x69;
        low[1] = 0x307;
        n_low = 2;
    } else {
        low[0] = utf8proc_tolower((utf8proc_int32_t)cp);
        n_low = 1;
    }
    for (size_t i = 0; i < n_low; i++) {
        int last = 0;
        utf8proc_ssize_t k = utf8proc_decompose_char(low[i], dec, TOK_NORM_MAX,
                                                     UTF8PROC_DECOMPOSE, &last);

        if (k < 0 || (size_t)k > TOK_NORM_MAX - n) {
            /* Cannot happen with Unicode's tables; keep the character. */
            dec[0] = low[i];
            k = 1;
        }
        for (utf8proc_ssize_t j = 0; j < k; j++) {
            out[n] = (uint32_t)dec[j];
            ccc[n] = (uint8_t)utf8proc_get_property(dec[j])->combining_class;
            n++;
        }
    }
    return n;
}

/* Whether lowercasing + NFD might change cp or give it a combining class,
 * or it is Mn: false for a character with no lowercase mapping, no
 * decomposition and class 0 (most of them: every CJK ideograph), which
 * spares the table's build the decomposition of 280,000 characters.
 * Hangul syllables decompose by algorithm, without a mapping in the
 * tables; U+0130 has Python's special lowercasing.
 * tests/unit/test_unicode.c checks the table against tok_normalize_cp()
 * for every code point. */
static bool
may_normalize(uint32_t cp, const utf8proc_property_t *p)
{
    return p->category == UTF8PROC_CATEGORY_MN ||
           p->lowercase_seqindex != UINT16_MAX ||
           p->decomp_seqindex != UINT16_MAX || p->combining_class != 0 ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || cp == 0x130;
}

/* The class bits of one code point. */
static uint8_t
class_of(uint32_t cp)
{
    const utf8proc_property_t *p;
    uint8_t f = 0;
    int cat;

    if (cp >= 0xD800 && cp <= 0xDFFF)
        return TOK_CC_DROP;
    p = utf8proc_get_property((utf8proc_int32_t)cp);
    cat = p->category;
    switch (cat) {
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
        if (cp != '\t' && cp != '\n' && cp != '\r')
            f |= TOK_CC_DROP;
        break;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        f |= TOK_CC_PUNCT;
        break;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
        f |= TOK_CC_SYMBOL;
        break;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
        f |= TOK_CC_SPACE;
        break;
    case UTF8PROC_CATEGORY_MN:
        f |= TOK_CC_MN;
        break;
    }
    if (cp == 0 || cp == 0xFFFD)
        f |= TOK_CC_DROP;
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r')
        f |= TOK_CC_SPACE;
    if (is_ascii_punct(cp))
        f |= TOK_CC_PUNCT;
    if (is_paddle_extra_symbol(cp))
        f |= TOK_CC_SYMBOL;
    if (is_bert_cjk(cp))
        f |= TOK_CC_CJK;
    if (cat != UTF8PROC_CATEGORY_CN && !(f & TOK_CC_DROP) &&
        may_normalize(cp, p)) {
        uint32_t out[TOK_NORM_MAX];
        uint8_t ccc[TOK_NORM_MAX];
        size_t n = tok_normalize_cp(cp, out, ccc);

        if (n != 1 || out[0] != cp || ccc[0] != 0 || (f & TOK_CC_MN))
            f |= TOK_CC_NORM;
    }
    return f;
}

/* The table is built in two parts: up to TOK_CC_EAGER when first asked
 * for, and the rest (the planes that hold little but unassigned and
 * private-use code points, four fifths of the loop) only when a
 * character there is met (tok_cc_class_high). */
static void
build_cc_table(void)
{
    uint8_t *t = calloc(N_CODEPOINTS, 1);

    if (t == NULL)
        return;
    for (uint32_t cp = 0; cp < TOK_CC_EAGER; cp++)
        t[cp] = class_of(cp);
    cc_table = t;
}

static void
build_cc_high(void)
{
    for (uint32_t cp = TOK_CC_EAGER; cp < N_CODEPOINTS; cp++)
        cc_table[cp] = class_of(cp);
}

const uint8_t *
tok_cc_table(void)
{
    pthread_once(&cc_once, build_cc_table);
    return cc_table;
}

uint8_t
tok_cc_class_high(uint32_t cp)
{
    if (cp >= N_CODEPOINTS)
        return 0;
    pthread_once(&cc_high_once, build_cc_high);
    return cc_table[cp];
}
