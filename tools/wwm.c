/* SPDX-License-Identifier: MIT */
/*
 * wwm.c: the "##" whole-word marks of create-pretraining-data (see wwm.h).
 *
 * A sentence's words of two characters or more are chained by their first
 * code point; at each token that holds a Chinese character, the words of
 * its chain are compared with the tokens from there, each token through
 * the first 8 bytes kept in its per-id entry.  A sentence where too many
 * distinct words share a chain (a made-up line can be so) would make that
 * quadratic; its words go into a hash set instead, and each window of
 * tokens is hashed and looked up.  Both give PaddleNLP's marks exactly.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#    include <emmintrin.h>
#endif

#include "wwm.h"
#include "banned.h"

/* A word of the sentence. */
struct word {
    const char *p;
    size_t len;
    uint64_t hash;   /* hash_bytes(), on the hashed path only */
    int32_t next;    /* the next word of its chain, or -1 */
    uint32_t cps_at; /* its code points in wwm.cps, or NO_CPS */
    uint32_t nch;    /* their count, max_word_len + 1 if more */
};

#define NO_CPS UINT32_MAX

/* What the marking reads of a token, per vocab id, in 16 bytes: its first
 * code point if it holds a U+4E00..9FA5 (else 0), its length and its
 * first 8 bytes (zero-padded), so a window is compared with a word without
 * reading the token's string (in the vocab, a cache miss away) unless it
 * is longer. */
struct mark_tok {
    uint32_t cjk_first;
    uint32_t len;
    uint64_t head;
};

struct wwm_vocab {
    struct mark_tok *tok; /* per id of the vocab */
    uint64_t *has_cjk;    /* bit per id: its cjk_first is not 0 */
    uint64_t *starts;     /* bit per BMP code point: some id's cjk_first */
    bool astral_starts;   /* some id's cjk_first is past the BMP */
    uint64_t *hash;       /* per id: hash_bytes() of its token */
    const char **str;     /* per id: its token ("" if none) */
    tok_id *cont;         /* per id: the id of "##" + token (else [UNK]) */
    uint64_t *pow;        /* P^len for each token length (see hash_bytes) */
    bool has_empty_token; /* an id of the vocab whose token is "" */
    size_t max_word_len;
    char *sep; /* with WWM_SLACK bytes after it */
    size_t sep_len;
};

/* The words of a sentence that start with code point cp, for the hashed
 * path: the longest, in bytes, and bit L of lens for each length L (bit
 * 63: 63 or more). */
struct first {
    uint32_t cp; /* UINT32_MAX: an empty slot */
    uint32_t max;
    uint64_t lens;
};

/* The chains: the distinct words that start with code point cp, through
 * word.next from chains[cp % CHAIN_HEADS] (-1: none).  Indexed directly,
 * no probing: code points that share an entry share a chain, whose other
 * words then fail to match at their first token.  A chain of more than
 * CHAIN_MAX words sends the sentence down the hashed path. */
#define CHAIN_HEADS 0x800u /* 8 KB (32 KB missed L1 18 % more often) */
#define CHAIN_MAX   16

struct wwm {
    struct word *words;
    size_t n_words, cap_words;
    uint32_t *multi;   /* the words of two characters or more */
    uint32_t *touched; /* the entries of chains this sentence set */
    size_t n_touched, cap_multi;
    int32_t *chains;     /* CHAIN_HEADS of them */
    bool hashed;         /* the sentence takes the hashed path */
    int32_t *set;        /* the hashed path: open addressing over words */
    struct first *first; /* the hashed path: by first code point */
    size_t set_cap;
    uint32_t *cps; /* the chained words' first code points */
    size_t n_cps, cap_cps;
    struct tok_buf joined; /* wwm_split's text */
};

/* ------------------------------------------------------------------------ */
/* Bytes                                                                     */

/* Make room for need elements of elem bytes in *p (capacity *cap,
 * doubled from first).  0, or -1 when out of memory. */
static int
grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    size_t c = *cap ? *cap : first;
    void *q;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    if ((q = realloc(*p, c * elem)) == NULL)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

int
wwm_keep_slack(struct tok_buf *b)
{
    static const char zeros[WWM_SLACK];

    if (tok_buf_append(b, zeros, WWM_SLACK) < 0)
        return -1;
    b->len -= WWM_SLACK;
    return 0;
}

/* Equal bytes?  Words are a few bytes: a loop, not a call. */
static inline bool
same_bytes(const char *a, const char *b, size_t n)
{
    if (n > 16)
        return memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* The mask of the first n bytes in memory of a 64-bit word (n <= 8). */
static inline uint64_t
first_bytes_mask(size_t n)
{
    uint64_t all = ~0ULL;

    if (n == 8)
        return all;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return ~(all >> (8 * n));
#else
    return ~(all << (8 * n));
#endif
}

/* p[0..n) == the first n bytes of head (n <= 8); p has 8 readable bytes. */
static inline bool
same_head(const char *p, uint64_t head, size_t n)
{
    uint64_t x;

    memcpy(&x, p, 8);
    return ((x ^ head) & first_bytes_mask(n)) == 0;
}

/* Two words of equal length n, each with WWM_SLACK bytes after it. */
static inline bool
same_word(const char *a, const char *b, size_t n)
{
    uint64_t head;

    if (n > 8)
        return memcmp(a, b, n) == 0;
    memcpy(&head, a, 8);
    return same_head(b, head, n);
}

/* The bytes of the UTF-8 sequence that lead byte c starts (valid UTF-8),
 * from a table of 4-bit entries by its high nibble. */
static inline size_t
utf8_lead_len(unsigned char c)
{
    return (size_t)(0x4322111111111111ull >> ((c >> 4) * 4)) & 0xF;
}

/* The code point of the three-byte sequence at s (lead E0..EF, valid). */
static inline uint32_t
decode3(const unsigned char *s)
{
    return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) |
           (s[2] & 0x3F);
}

/* The first code point of p[0..len) (valid UTF-8, len >= 1). */
static inline uint32_t
first_code_point(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;

    if (s[0] < 0x80)
        return s[0];
    if (s[0] >= 0xE0 && s[0] < 0xF0 && len >= 3)
        return decode3(s);
    {
        uint32_t cp = 0;

        return tok_utf8_decode(p, len, &cp) ? cp : UINT32_MAX;
    }
}

/* The polynomial hash sum of p[i] * P^(n-1-i), modulo 2^64: the hash of
 * a concatenation a b is hash(a) * P^len(b) + hash(b), so a window of
 * tokens is hashed from each token's hash and power, without its bytes.
 * Its low bits are poorly mixed (as a code point's are): the sentence's
 * tables index by set_slot(). */
#define HASH_P 0x100000001b3ull

static uint64_t
hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0;

    for (size_t i = 0; i < n; i++)
        h = h * HASH_P + (unsigned char)p[i];
    return h;
}

static inline size_t
set_slot(uint64_t h, size_t cap)
{
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* True if t contains a code point in U+4E00..U+9FA5 (the marking rule's
 * "Chinese character"). */
static bool
has_cjk(const char *t, size_t len)
{
    for (size_t i = 0; i + 3 <= len; i++) {
        unsigned char a = (unsigned char)t[i];

        if (a >= 0xE4 && a <= 0xE9) {
            uint32_t cp;

            if (tok_utf8_decode(t + i, len - i, &cp) == 3 && cp >= 0x4E00 &&
                cp <= 0x9FA5)
                return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */

struct wwm_vocab *
wwm_vocab_new(const struct tok_vocab *vocab, const tok_id *cont_ids,
              size_t max_word_len, const char *sep)
{
    size_t n = tok_vocab_n_ids(vocab), max_len = 0;
    struct wwm_vocab *v = calloc(1, sizeof(*v));
    tok_id unk = tok_vocab_special(vocab, TOK_SPECIAL_UNK);

    if (v == NULL)
        return NULL;
    if (tok_utf8_check(sep, strlen(sep)) != strlen(sep)) {
        free(v); /* the words it splits off must be whole characters */
        errno = EINVAL;
        return NULL;
    }
    v->max_word_len = max_word_len;
    v->sep_len = strlen(sep);
    v->tok = calloc(n ? n : 1, sizeof(*v->tok));
    v->hash = calloc(n ? n : 1, sizeof(*v->hash));
    v->cont = malloc((n ? n : 1) * sizeof(*v->cont));
    v->str = calloc(n ? n : 1, sizeof(*v->str));
    v->has_cjk = calloc(n / 64 + 1, sizeof(*v->has_cjk));
    v->starts = calloc(0x10000 / 64, sizeof(*v->starts));
    v->sep = calloc(v->sep_len + WWM_SLACK, 1);
    if (v->tok == NULL || v->hash == NULL || v->cont == NULL ||
        v->str == NULL || v->has_cjk == NULL || v->starts == NULL ||
        v->sep == NULL)
        goto fail;
    memcpy(v->sep, sep, v->sep_len);
    for (size_t id = 0; id < n; id++) {
        size_t len;
        const char *t = tok_vocab_token(vocab, (tok_id)id, &len);
        struct mark_tok *mt = &v->tok[id];

        v->cont[id] = unk;
        v->str[id] = t ? t : "";
        if (t == NULL)
            continue; /* an unused id: the tokenizer never gives it */
        if (len == 0)
            v->has_empty_token = true;
        if (len > UINT32_MAX) {
            errno = EOVERFLOW;
            goto fail;
        }
        mt->len = (uint32_t)len;
        memcpy(&mt->head, t, len < 8 ? len : 8); /* as same_head() reads */
        v->hash[id] = hash_bytes(t, len);
        if (len > max_len)
            max_len = len;
        if (has_cjk(t, len) && tok_utf8_decode(t, len, &mt->cjk_first) == 0)
            mt->cjk_first = 0; /* cannot be: the vocab is valid UTF-8 */
        if (mt->cjk_first) {
            v->has_cjk[id / 64] |= 1ULL << (id % 64);
            if (mt->cjk_first < 0x10000)
                v->starts[mt->cjk_first / 64] |= 1ULL << (mt->cjk_first % 64);
            else
                v->astral_starts = true;
        }
        if (cont_ids[id] >= 0)
            v->cont[id] = cont_ids[id];
    }
    if ((v->pow = malloc((max_len + 1) * sizeof(*v->pow))) == NULL)
        goto fail;
    v->pow[0] = 1;
    for (size_t l = 1; l <= max_len; l++)
        v->pow[l] = v->pow[l - 1] * HASH_P;
    return v;
fail:
    wwm_vocab_free(v);
    return NULL;
}

void
wwm_vocab_free(struct wwm_vocab *v)
{
    if (v == NULL)
        return;
    free(v->tok);
    free(v->has_cjk);
    free(v->starts);
    free(v->hash);
    free(v->str);
    free(v->cont);
    free(v->pow);
    free(v->sep);
    free(v);
}

struct wwm *
wwm_new(void)
{
    struct wwm *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return NULL;
    tok_buf_init(&m->joined);
    m->chains = malloc(CHAIN_HEADS * sizeof(*m->chains));
    if (m->chains == NULL) {
        free(m);
        return NULL;
    }
    memset(m->chains, 0xff, CHAIN_HEADS * sizeof(*m->chains));
    return m;
}

void
wwm_free(struct wwm *m)
{
    if (m == NULL)
        return;
    free(m->words);
    free(m->multi);
    free(m->touched);
    free(m->chains);
    free(m->set);
    free(m->first);
    free(m->cps);
    tok_buf_release(&m->joined);
    free(m);
}

void
wwm_clear(struct wwm *m)
{
    m->n_words = 0;
}

int
wwm_add_word(struct wwm *m, const char *p, size_t len)
{
    if (grow((void **)&m->words, &m->cap_words, m->n_words + 1,
             sizeof(*m->words), 256) < 0)
        return -1;
    m->words[m->n_words].p = p;
    m->words[m->n_words].len = len;
    m->n_words++;
    return 0;
}

int
wwm_add_spans(struct wwm *m, const char *s, const size_t *starts,
              const size_t *ends, size_t n)
{
    if (grow((void **)&m->words, &m->cap_words, m->n_words + n,
             sizeof(*m->words), 256) < 0)
        return -1;
    /* Only words of two characters or more count (see build_words);
     * each is written and kept without a branch.  The count stays in a
     * local: a store to a word's len (a size_t) could alias m->n_words. */
    struct word *words = m->words;
    size_t n_words = m->n_words;

    for (size_t i = 0; i < n; i++) {
        struct word *x = &words[n_words];
        const char *p = s + starts[i];
        size_t len = ends[i] - starts[i];

        x->p = p;
        x->len = len;
        n_words += len > utf8_lead_len((unsigned char)p[0]);
    }
    m->n_words = n_words;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Pre-segmented text                                                        */

/* Bit j of the result: s[j] == ch, for j < n (n <= 64). */
static inline uint64_t
byte_mask(const char *s, size_t n, char ch)
{
    uint64_t mask = 0;

#if defined(__SSE2__)
    if (n == 64) {
        const __m128i want = _mm_set1_epi8(ch);

        for (int k = 0; k < 4; k++) {
            __m128i b = _mm_loadu_si128((const __m128i *)(s + 16 * k));

            mask |=
                (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, want))
                << (16 * k);
        }
        return mask;
    }
#endif
    for (size_t j = 0; j < n; j++)
        mask |= (uint64_t)(s[j] == ch) << j;
    return mask;
}

/* One string of s.split(sep), p[0..n), as PaddleNLP repairs them: the
 * second of two empty strings in a row stands for a separator that was a
 * word. */
static int
split_word(struct wwm *m, const struct wwm_vocab *v, const char *p, size_t n,
           bool *prev_empty)
{
    if (n == 0 && *prev_empty) {
        *prev_empty = false;
        return wwm_add_word(m, v->sep, v->sep_len);
    }
    *prev_empty = n == 0;
    return wwm_add_word(m, p, n);
}

int
wwm_split(struct wwm *m, const struct wwm_vocab *v, const char *s, size_t len,
          const char **joined, size_t *joined_len)
{
    const char *p = s, *end = s + len;
    size_t first = m->n_words;
    bool prev_empty = false;

    if (v->sep_len == 1) {
        /* The separators of 64 bytes at a time, as a bit mask: a word
         * costs a bit scan, not a memchr call (most are 3-6 bytes). */
        for (size_t base = 0; base < len; base += 64) {
            size_t n = len - base < 64 ? len - base : 64;
            uint64_t mask = byte_mask(s + base, n, v->sep[0]);

            for (; mask; mask &= mask - 1) {
                const char *hit = s + base + __builtin_ctzll(mask);

                if (split_word(m, v, p, (size_t)(hit - p), &prev_empty) < 0)
                    return -1;
                p = hit + 1;
            }
        }
        if (split_word(m, v, p, (size_t)(end - p), &prev_empty) < 0)
            return -1;
    } else {
        for (;;) {
            const char *hit =
                v->sep_len && (size_t)(end - p) >= v->sep_len
                    ? memmem(p, (size_t)(end - p), v->sep, v->sep_len)
                    : NULL;
            const char *we = hit ? hit : end;

            if (split_word(m, v, p, (size_t)(we - p), &prev_empty) < 0)
                return -1;
            if (hit == NULL)
                break;
            p = hit + v->sep_len;
        }
    }
    /* The words joined without separator: no longer than s (a repaired
     * word stands for a separator of s), plus 16 bytes to spare. */
    tok_buf_clear(&m->joined);
    if (tok_buf_append(&m->joined, s, len) < 0 ||
        tok_buf_append(&m->joined, "                ", 16) < 0)
        return -1;
    {
        char *d = m->joined.data;
        size_t at = 0;

        for (size_t i = first; i < m->n_words; i++) {
            const struct word *x = &m->words[i];
            /* One fixed 16-byte move for a short word with 16 bytes of s
             * after its start; a repaired word is the separator. */
            uintptr_t a = (uintptr_t)x->p, lo = (uintptr_t)s;

            if (x->len <= 16 && a >= lo && a - lo + 16 <= len)
                memcpy(d + at, x->p, 16);
            else
                memcpy(d + at, x->p, x->len);
            at += x->len;
        }
        d[at] = '\0';
        m->joined.len = at;
    }
    *joined = m->joined.data;
    *joined_len = m->joined.len;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The sentence's words                                                      */

/* Can a window that starts with code point cp be looked up?  Only a
 * token that holds a Chinese character starts one, and the window's first
 * code point is that token's (its cjk_first): words that start with any
 * other code point (numbers, Latin words) are never looked up, and are
 * left out of the chains (16 distinct years in a paragraph would send it
 * down the hashed path). */
static inline bool
may_start(const struct wwm_vocab *v, uint32_t cp)
{
    if (cp >= 0x10000)
        return v->astral_starts;
    return (v->starts[cp / 64] >> (cp % 64)) & 1;
}

/* The slot of cp in the first-code-point table: its own, or the empty
 * one where it would go. */
static struct first *
first_slot(struct first *t, size_t cap, uint32_t cp)
{
    size_t at = set_slot(cp, cap);

    while (t[at].cp != UINT32_MAX && t[at].cp != cp)
        at = (at + 1) & (cap - 1);
    return &t[at];
}

/* Put word i into the hash set (unless an equal word is there: equal keys
 * would make one long run of slots). */
static void
hash_word(struct wwm *m, size_t i)
{
    struct word *x = &m->words[i];
    size_t at, cap = m->set_cap;

    x->hash = hash_bytes(x->p, x->len);
    at = set_slot(x->hash, cap);
    for (; m->set[at] >= 0; at = (at + 1) & (cap - 1)) {
        const struct word *y = &m->words[m->set[at]];

        if (y->hash == x->hash && y->len == x->len &&
            same_bytes(y->p, x->p, x->len))
            return;
    }
    m->set[at] = (int32_t)i;
}

/* The hashed path's tables: every word of two characters or more in the
 * set, and the lengths of those of each first code point. */
static int
build_hashed(struct wwm *m, const struct wwm_vocab *v)
{
    size_t cap = 16;

    while (cap < 2 * m->n_words)
        cap *= 2;
    if (cap > m->set_cap) {
        int32_t *s = realloc(m->set, cap * sizeof(*s));
        struct first *f;

        if (s == NULL)
            return -1;
        m->set = s;
        if ((f = realloc(m->first, cap * sizeof(*f))) == NULL)
            return -1;
        m->first = f;
    }
    m->set_cap = cap;
    memset(m->set, 0xff, cap * sizeof(*m->set));
    for (size_t i = 0; i < cap; i++)
        m->first[i].cp = UINT32_MAX;
    for (size_t i = 0; i < m->n_words; i++) {
        struct word *x = &m->words[i];
        struct first *f;
        uint32_t cp;

        if (x->len <= utf8_lead_len((unsigned char)x->p[0]) ||
            (cp = first_code_point(x->p, x->len)) == UINT32_MAX ||
            !may_start(v, cp))
            continue;
        hash_word(m, i);
        f = first_slot(m->first, cap, cp);
        if (f->cp != cp) {
            f->cp = cp;
            f->max = 0;
            f->lens = 0;
        }
        if (x->len > f->max)
            f->max = (uint32_t)x->len;
        f->lens |= 1ULL << (x->len < 63 ? x->len : 63);
    }
    return 0;
}

/* Keep the first code points of word x, at most max of them, for
 * spell_chars(); x->nch gets their count, max + 1 if it has more. */
static int
keep_chars(struct wwm *m, struct word *x, size_t max)
{
    const unsigned char *s = (const unsigned char *)x->p;
    size_t at = 0, k = 0;
    uint32_t *out;

    if (grow((void **)&m->cps, &m->cap_cps, m->n_cps + max, sizeof(*m->cps),
             1024) < 0)
        return -1;
    out = m->cps + m->n_cps;
    if (x->len % 3 == 0) {
        /* Most words are Chinese: three bytes a character, each decoded
         * with no test but its lead byte's. */
        size_t nch = x->len / 3, take = nch < max ? nch : max;

        for (; k < take && (s[3 * k] & 0xF0) == 0xE0; k++)
            out[k] = decode3(s + 3 * k);
        if (k == take) {
            k = nch > max ? max + 1 : nch;
            goto kept;
        }
        k = 0;
    }
    for (; at < x->len; k++) {
        uint32_t cp;
        size_t n;

        if (k == max) {
            k = max + 1;
            break;
        }
        if (s[at] >= 0xE0 && s[at] < 0xF0 && x->len - at >= 3) {
            cp = decode3(s + at);
            n = 3;
        } else if ((n = tok_utf8_decode(x->p + at, x->len - at, &cp)) == 0) {
            x->cps_at = NO_CPS; /* not UTF-8: compared by bytes */
            return 0;
        }
        out[k] = cp;
        at += n;
    }
kept:
    x->cps_at = (uint32_t)m->n_cps;
    x->nch = (uint32_t)k;
    m->n_cps += k < max ? k : max;
    return 0;
}

/* The sentence's words as the marking looks them up: the distinct words of
 * two characters or more, chained by first code point, or on the hashed
 * path when a chain would pass CHAIN_MAX. */
static int
build_words(struct wwm *m, const struct wwm_vocab *v)
{
    size_t n_multi = 0;

    m->hashed = false;
    m->n_cps = 0;
    /* Forget the last sentence's chains. */
    for (size_t k = 0; k < m->n_touched; k++)
        m->chains[m->touched[k]] = -1;
    m->n_touched = 0;
    if (m->n_words > m->cap_multi) {
        uint32_t *u = realloc(m->multi, m->n_words * sizeof(*u));

        if (u == NULL)
            return -1;
        m->multi = u;
        if ((u = realloc(m->touched, m->n_words * sizeof(*u))) == NULL)
            return -1;
        m->touched = u;
        m->cap_multi = m->n_words;
    }
    /* A word of one character never equals a window of two tokens or more
     * (each token holds at least one whole character), and a window of one
     * token needs no lookup: only longer words count.  That leaves out
     * most repeats (的, ，) of a sentence.  Picked without a branch: one-
     * and two-character words alternate at random.  (An empty word reads
     * the byte after it, which WWM_SLACK makes readable.) */
    for (size_t i = 0; i < m->n_words; i++) {
        const struct word *x = &m->words[i];

        m->multi[n_multi] = (uint32_t)i;
        n_multi += x->len > utf8_lead_len((unsigned char)x->p[0]);
    }
    for (size_t k = 0; k < n_multi; k++) {
        size_t i = m->multi[k], n = 0;
        struct word *x = &m->words[i];
        int32_t *ch, j;
        uint32_t cp;

        if ((cp = first_code_point(x->p, x->len)) == UINT32_MAX ||
            !may_start(v, cp))
            continue; /* no window that is looked up starts with it */
        ch = &m->chains[cp % CHAIN_HEADS];
        if (*ch < 0)
            m->touched[m->n_touched++] = cp % CHAIN_HEADS;
        for (j = *ch; j >= 0; j = m->words[j].next, n++)
            if (m->words[j].len == x->len &&
                same_word(m->words[j].p, x->p, x->len))
                break;
        if (j >= 0)
            continue; /* seen before */
        if (n == CHAIN_MAX) {
            m->hashed = true;
            return build_hashed(m, v);
        }
        /* Longest first: the first word that matches is the answer. */
        while (*ch >= 0 && m->words[*ch].len > x->len)
            ch = &m->words[*ch].next;
        x->next = *ch;
        *ch = (int32_t)i;
        if (keep_chars(m, x, v->max_word_len) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The marking                                                               */

/* How many tokens of ids[0..max_l) (at least 1) spell the word p[0..len),
 * 0 if none do; tokens of no bytes after it count too (the longest window
 * wins).  Tokens of up to 8 bytes are compared from their mark_tok. */
static size_t
spell_count(const struct wwm_vocab *v, const tok_id *ids, size_t max_l,
            const char *p, size_t len)
{
    size_t off = 0, k = 0;

    while (off < len) {
        const struct mark_tok *t;

        if (k == max_l)
            return 0;
        t = &v->tok[ids[k]];
        if (t->len > len - off)
            return 0;
        if (t->len <= 8 ? !same_head(p + off, t->head, t->len)
                        : memcmp(p + off, v->str[ids[k]], t->len) != 0)
            return 0;
        off += t->len;
        k++;
    }
    while (v->has_empty_token && k < max_l && v->tok[ids[k]].len == 0)
        k++;
    return k;
}

/* spell_count() by code points, for tokens whose chars entries (see
 * struct tok_encoding) are known: w[0..nch) against chars[0..max_l).
 * Each such token is one character, so the word is spelled by nch tokens
 * or by none; -1 when a token on the way is not known to be one
 * character (then only its bytes can tell). */
static inline long
spell_chars(const uint32_t *w, size_t nch, const uint32_t *chars, size_t max_l)
{
    for (size_t k = 0; k < nch; k++) {
        uint32_t c;

        if (k == max_l)
            return 0;
        c = chars[k];
        if (c == 0)
            return -1;
        if (c != w[k])
            return 0;
    }
    return (long)nch;
}

/* The most tokens of ids[0..max_l) whose concatenation is one of the
 * words of the chain from head, 1 if none: by comparing each with the
 * tokens, as code points where chars (or NULL) knows them. */
static size_t
longest_by_chain(const struct wwm *m, const struct wwm_vocab *v,
                 const tok_id *ids, const uint32_t *chars, size_t max_l,
                 int32_t head)
{
    for (int32_t j = head; j >= 0; j = m->words[j].next) {
        const struct word *x = &m->words[j];
        long k = -1;

        if (chars != NULL && x->cps_at != NO_CPS)
            k = spell_chars(m->cps + x->cps_at, x->nch, chars, max_l);
        if (k < 0)
            k = (long)spell_count(v, ids, max_l, x->p, x->len);
        if (k > 0)
            return (size_t)k;
    }
    return 1;
}

/* Is the concatenation of the tokens ids[0..n), len bytes whose
 * hash_bytes() is h, a word of the sentence? */
static bool
in_set(const struct wwm *m, const struct wwm_vocab *v, const tok_id *ids,
       size_t n, size_t len, uint64_t h)
{
    size_t at = set_slot(h, m->set_cap);

    for (; m->set[at] >= 0; at = (at + 1) & (m->set_cap - 1)) {
        const struct word *x = &m->words[m->set[at]];
        size_t off = 0, k = 0;

        if (x->hash != h || x->len != len)
            continue;
        for (; k < n; k++) {
            size_t tl = v->tok[ids[k]].len;

            if (!same_bytes(x->p + off, v->str[ids[k]], tl))
                break;
            off += tl;
        }
        if (k == n)
            return true;
    }
    return false;
}

/* The same as longest_by_chain, on the hashed path: each window (longest
 * first) hashed and looked up in the sentence's set. */
static size_t
longest_by_hash(const struct wwm *m, const struct wwm_vocab *v,
                const tok_id *ids, size_t max_l, const struct first *f)
{
    size_t ends[64], wlen = 0, n_prefix = 0, l;
    uint64_t hashes[64], h = 0;

    /* The hash of each window, longer by a token each time, while no
     * longer than the longest word. */
    for (size_t k = 0; k < max_l; k++) {
        const struct mark_tok *tt = &v->tok[ids[k]];

        if (wlen + tt->len > f->max)
            break; /* no word is that long */
        wlen += tt->len;
        h = h * v->pow[tt->len] + v->hash[ids[k]];
        ends[k] = wlen;
        hashes[k] = h;
        n_prefix = k + 1;
    }
    /* Longest first; only lengths that such a word has; a window of one
     * token is the answer when nothing longer is a word, so it needs no
     * lookup. */
    for (l = n_prefix; l > 1; l--) {
        size_t len = ends[l - 1];

        if ((f->lens >> (len < 63 ? len : 63)) & 1 &&
            in_set(m, v, ids, l, len, hashes[l - 1]))
            break;
    }
    return l == 0 ? 1 : l;
}

int
wwm_mark(struct wwm *m, const struct wwm_vocab *v, tok_id *ids,
         const uint32_t *chars, size_t n)
{
    size_t i = 0;

    /* A token of no bytes can end a window (see spell_count): only bytes
     * tell where. */
    if (v->has_empty_token)
        chars = NULL;
    if (build_words(m, v) < 0)
        return -1;
    /* In place: a window is decided from its first token on, and only its
     * other tokens change. */
    while (i < n) {
        size_t max_l = n - i < v->max_word_len ? n - i : v->max_word_len;
        uint32_t c = chars ? chars[i] : 0, cjk;
        size_t l;

        /* The token's first code point if it holds a Chinese character:
         * from chars when it is one character, else from its mark_tok,
         * read only for the few ids whose bit says so (a Latin or digit
         * piece would miss the cache for nothing). */
        if (c != 0)
            cjk = c >= 0x4E00 && c <= 0x9FA5 ? c : 0;
        else
            cjk = v->has_cjk[(size_t)ids[i] / 64] >> ((size_t)ids[i] % 64) & 1
                      ? v->tok[ids[i]].cjk_first
                      : 0;
        /* A window that is a word starts with that word's first code
         * point, so only words that start with this token's can be it. */
        if (cjk == 0) {
            i++;
            continue;
        }
        if (!m->hashed) {
            int32_t head = m->chains[cjk % CHAIN_HEADS];

            if (head < 0) {
                i++;
                continue;
            }
            l = longest_by_chain(m, v, ids + i, chars ? chars + i : NULL, max_l,
                                 head);
        } else {
            const struct first *f = first_slot(m->first, m->set_cap, cjk);

            /* If no such word is longer than the token, the window is the
             * token alone. */
            if (f->cp != cjk || f->max <= v->tok[ids[i]].len) {
                i++;
                continue;
            }
            l = longest_by_hash(m, v, ids + i, max_l, f);
        }
        for (size_t j = 1; j < l; j++)
            ids[i + j] = v->cont[ids[i + j]];
        i += l;
    }
    return 0;
}
