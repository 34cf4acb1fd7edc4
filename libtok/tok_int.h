/* SPDX-License-Identifier: MIT */
/*
 * tok_int.h: internals shared by the libtok sources; never installed.
 *
 * It holds the vocab's layout (a string arena plus two open-addressing hash
 * tables), the per-code-point class table that drives the basic tokenizer,
 * and the error helper every file uses.
 */
#ifndef TOK_INT_H
#define TOK_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "tok.h"
#include "banned.h"

/* tok_err_set: fill err (if not NULL) with code and a printf-style message;
 * returns code so callers can write `return tok_err_set(err, ...)`. */
int tok_err_set(struct tok_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ------------------------------------------------------------------------ */
/* UTF-8 (tok_utf8.c, tok_utf8_simd.c)                                       */

/* tok_utf8_check() without the SIMD pass; and that pass alone: 1 if
 * s[0..len) is valid UTF-8, 0 if not, -1 where it cannot run (no AVX2). */
size_t tok_utf8_check_scalar(const char *s, size_t len);
int tok_utf8_simd_valid(const char *s, size_t len);

/* The code point of the three-byte sequence at s (lead byte E0..EF, valid
 * UTF-8: no checks). */
static inline uint32_t
tok_utf8_decode3(const unsigned char *s)
{
    return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) |
           (s[2] & 0x3F);
}

/* Decode the code point at p, in text already checked to be valid UTF-8
 * (no bounds or form checks: the hot loops' decoder); returns its length. */
static inline size_t
tok_utf8_decode_valid(const char *p, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)p;

    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xF0) == 0xE0) { /* three bytes, all of CJK: first */
        *cp = tok_utf8_decode3(s);
        return 3;
    }
    if (s[0] < 0xE0) {
        *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
          ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    return 4;
}

/* ------------------------------------------------------------------------ */
/* Character classes (tok_unicode.c)                                         */

/* Bits of the per-code-point class table.  Categories come from utf8proc. */
enum {
    TOK_CC_DROP =
        1 << 0, /* removed by clean_text: NUL, U+FFFD, C* but \t\n\r */
    TOK_CC_SPACE = 1 << 1,  /* separates words: \t \n \r, Zs, Zl, Zp */
    TOK_CC_CJK = 1 << 2,    /* BERT's "Chinese character" ranges */
    TOK_CC_PUNCT = 1 << 3,  /* ASCII non-alnum printables, or P* */
    TOK_CC_SYMBOL = 1 << 4, /* S*, or one of PaddleNLP's 8 extras */
    TOK_CC_NORM = 1 << 5,   /* changed by lowercase + NFD + drop Mn */
    TOK_CC_MN = 1 << 6      /* category Mn (dropped after NFD) */
};

/* tok_cc_table: the class table for U+0000..U+10FFFF, built on first use
 * (thread-safe, once per process).  Returns NULL only if out of memory.
 * Entries from TOK_CC_EAGER up are filled only when tok_cc_class_high()
 * first runs: read the table through tok_cc_class(). */
const uint8_t *tok_cc_table(void);
uint8_t tok_cc_class_high(uint32_t cp);

#define TOK_CC_EAGER 0x30000u /* the BMP, SMP and SIP (CJK extensions B-F) */

static inline uint8_t
tok_cc_class(const uint8_t *cc, uint32_t cp)
{
    return cp < TOK_CC_EAGER ? cc[cp] : tok_cc_class_high(cp);
}

/* Maximum code points tok_normalize_cp() can produce for one input. */
#define TOK_NORM_MAX 24

/* tok_normalize_cp: lowercase cp the way Python's str.lower() does (full
 * mapping, so U+0130 gives "i" U+0307) and decompose the result canonically
 * (NFD, not reordered).  Writes up to TOK_NORM_MAX code points to out and
 * their canonical combining classes to ccc; returns the count. */
size_t tok_normalize_cp(uint32_t cp, uint32_t *out, uint8_t *ccc);

/* ------------------------------------------------------------------------ */
/* Vocabulary (tok_vocab.c)                                                  */

/* An open-addressing hash table from byte strings (in the vocab's arena) to
 * ids.  A slot holds the token's id (-1 when empty), bits of the key's
 * hash, its length and its first 8 bytes: a key of up to 8 bytes (most
 * WordPiece lookups) is found or passed over, and its id read, without the
 * entry or the arena, each a cache miss away.  Only a longer key reads its
 * entry, through entry_of. */
struct tok_slot {
    uint64_t head; /* tok_key_head() of the key */
    tok_id id;
    uint16_t tag; /* bits 32-47 of its hash */
    uint16_t len; /* its length, or TOK_SLOT_LONG for that or more */
};

struct tok_map {
    struct tok_slot *slots;
    int32_t *entry_of; /* per slot: the index of its entry */
    size_t mask;       /* number of slots - 1, a power of two minus one */
};

#define TOK_SLOT_LONG 0xFFFFu

/* The first 8 bytes of key[0..len) (fewer zero-padded), as a slot keeps
 * them; the same function on both sides, so byte order does not matter. */
static inline uint64_t
tok_key_head(const char *key, size_t len)
{
    uint64_t h = 0;

    if (len >= 8) {
        memcpy(&h, key, 8);
        return h;
    }
    for (size_t k = 0; k < len; k++)
        h |= (uint64_t)(unsigned char)key[k] << (8 * k);
    return h;
}

/* The hash of the tables: FNV-1a over the bytes, then a final mix.  The
 * FNV state can be carried forward a byte at a time (tok_hash_step), so
 * WordPiece hashes every prefix of a piece in one pass. */
#define TOK_HASH_INIT 0xcbf29ce484222325ULL

static inline uint64_t
tok_hash_step(uint64_t h, unsigned char c)
{
    return (h ^ c) * 0x100000001b3ULL;
}

static inline uint64_t
tok_hash_final(uint64_t h)
{
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 32);
}

uint64_t tok_hash_bytes(const char *s, size_t len);

struct tok_entry {
    size_t off; /* token bytes at arena + off, NUL-terminated */
    uint32_t len;
    tok_id id;
};

struct tok_vocab {
    char *arena;
    size_t arena_len, arena_cap;
    struct tok_entry *entries; /* one per distinct token, extension too */
    size_t n_entries, cap_entries;
    int32_t *by_id;       /* id -> entry index, or -1 */
    size_t n_ids;         /* one past the largest id */
    size_t n_base;        /* V: distinct tokens before the extension */
    struct tok_map whole; /* every token, exact bytes */
    struct tok_map cont;  /* tokens "##x", keyed by x */
    size_t max_whole_len; /* longest token in bytes */
    size_t max_cont_len;  /* longest x of a "##x" token */
    tok_id special[TOK_SPECIAL_COUNT];
    bool extended;
    struct tok_vocab_repeat *repeats; /* tokens the file repeats */
    size_t n_repeats;
};

/* tok_map_find: the id of key[0..len) in m, or -1.  Entries of m
 * are compared from byte key_skip on (2 for the "##" table).  hash is
 * tok_hash_bytes(key, len). */
tok_id tok_map_find(const struct tok_vocab *v, const struct tok_map *m,
                    const char *key, size_t len, size_t key_skip,
                    uint64_t hash);

/* ------------------------------------------------------------------------ */
/* Tokenizer (tok_encode.c)                                                  */

/* tok_encoding_grow: make room in e for one more token (ids, and offsets
 * and chars when wanted, also if they were switched on after the arrays
 * were sized).  Returns 0 or TOK_ENOMEM. */
int tok_encoding_grow(struct tok_encoding *e);

/* tok_encoding_ready: at the start of an encoding call, make sure the
 * offset and chars arrays exist if wanted (the caller may have switched
 * them on after the arrays were sized), so that tok_encoding_push() need
 * only check the capacity.  Returns 0 or TOK_ENOMEM. */
static inline int
tok_encoding_ready(struct tok_encoding *e)
{
    if ((e->want_offsets && (e->starts == NULL || e->ends == NULL)) ||
        (e->want_chars && e->chars == NULL))
        return tok_encoding_grow(e);
    return 0;
}

/* tok_encoding_push_char: append id covering text[start, end) to e, with
 * cp as its chars entry (see struct tok_encoding); the one way both
 * tokenizers (WordPiece, BPE) emit, after tok_encoding_ready().  Returns
 * 0 or TOK_ENOMEM. */
static inline int
tok_encoding_push_char(struct tok_encoding *e, tok_id id, size_t start,
                       size_t end, uint32_t cp)
{
    if (e->n == e->cap && tok_encoding_grow(e) < 0)
        return TOK_ENOMEM;
    e->ids[e->n] = id;
    if (e->want_offsets) {
        e->starts[e->n] = start;
        e->ends[e->n] = end;
    }
    if (e->want_chars)
        e->chars[e->n] = cp;
    e->n++;
    return 0;
}

/* tok_encoding_push: the same for a token that is not known to be one
 * character of the text. */
static inline int
tok_encoding_push(struct tok_encoding *e, tok_id id, size_t start, size_t end)
{
    return tok_encoding_push_char(e, id, start, end, 0);
}

/* Code points below this bound have direct single-character id tables. */
#define TOK_DIRECT_MAX 0x30000
/* The code points of UTF-8 lead bytes E4..E9: U+4000..U+9FFF, which hold
 * the CJK Unified Ideographs that most Chinese text is made of. */
#define TOK_CJK_RUN_LO 0x4000u
#define TOK_CJK_RUN_N  0x6000u
#define TOK_CJK_RUN_NO INT32_MIN

struct tok_tokenizer {
    const struct tok_vocab *vocab;
    struct tok_opts opts;
    const uint8_t *cc;  /* class table */
    uint8_t split_mask; /* TOK_CC_PUNCT, plus TOK_CC_SYMBOL for ERNIE */
    tok_id unk;
    tok_id *direct_whole;    /* cp -> id of the one-character token, or -1 */
    bool ascii_in_word[128]; /* see ascii_word() in tok_encode.c */
    tok_id *cjk_run;         /* cp - TOK_CJK_RUN_LO -> the id of a character of
                        the vocab that is always a token of its own, else
                        TOK_CJK_RUN_NO */
    const char *special_str[TOK_SPECIAL_COUNT];
    size_t special_len[TOK_SPECIAL_COUNT];
};

/* tok_encode_reference: tok_encode() with every character through the
 * general path (no runs of CJK taken at once, no ASCII words), for tests
 * that check the fast paths against it. */
int tok_encode_reference(const struct tok_tokenizer *t, const char *text,
                         size_t len, struct tok_encoding *e,
                         struct tok_err *err);

/* ------------------------------------------------------------------------ */
/* jieba (tok_jieba_model.c, tok_jieba_cut.c)                                */

/* HMM states in jieba's iteration order "BMES". */
enum { TOK_HMM_B, TOK_HMM_M, TOK_HMM_E, TOK_HMM_S };

/* Emission tables cover the Han range of finalseg's regex, the only
 * characters the HMM ever sees. */
#define TOK_HAN_LO 0x4E00
#define TOK_HAN_HI 0x9FD5
#define TOK_EMIT_N (TOK_HAN_HI - TOK_HAN_LO + 1)

/* The prefix trie's edges, 8 bytes each, in one open-addressing hash
 * table keyed by (parent, code point).  A node's id is the index of the
 * slot that holds the edge into it; the root is node 0, whose slot holds a
 * sentinel that no search matches.  A slot packs, from bit 63 down: used;
 * leaf (the child has no children, so a walk can stop there); the index
 * of the child's frequency in the model's value tables (19 bits, 0: a
 * prefix only, whose frequency is 0); and the key, parent << 21 | cp (43
 * bits).  Having the child's weight and leafness in the slot makes each
 * step of the DAG walk one access to the table, and 8 bytes a slot keep
 * the table at 8 MB, where 16 (with the child's id and a double) took 16
 * MB: 8-12 % faster (docs/benchmarks-history.md).  The children of the
 * root by BMP code points are also in a direct table (root), whose
 * entries hold the used, leaf and value bits of their slot and the
 * child's id in bits 0..21. */
#define TOK_JSLOT_USED      (1ULL << 63)
#define TOK_JSLOT_LEAF      (1ULL << 62)
#define TOK_JSLOT_VAL_SHIFT 43
#define TOK_JVAL_MAX        ((1u << 19) - 1)
#define TOK_JSLOT_KEY       ((1ULL << 43) - 1)
#define TOK_JNODE_MAX       ((1u << 22) - 1)
#define TOK_JROOT_N         0x10000u
/* The sentinel in slot 0: a code point above U+10FFFF, never looked up. */
#define TOK_JSLOT_SENTINEL (TOK_JSLOT_USED | TOK_JSLOT_KEY)

static inline uint64_t
tok_jedge_key(uint32_t parent, uint32_t cp)
{
    return ((uint64_t)parent << 21) | cp;
}

/* The slot hash of edge (parent, cp); its low bits index the table.
 * Fibonacci hashing: one multiply, keeping the product's upper bits. */
static inline size_t
tok_jedge_hash(uint32_t parent, uint32_t cp)
{
    return (size_t)((tok_jedge_key(parent, cp) * 0x9E3779B97F4A7C15ULL) >> 28);
}

/* A slot's (or root entry's) value index and its parent and code point. */
static inline uint32_t
tok_jslot_val(uint64_t v)
{
    return (uint32_t)(v >> TOK_JSLOT_VAL_SHIFT) & TOK_JVAL_MAX;
}

static inline uint32_t
tok_jslot_parent(uint64_t v)
{
    return (uint32_t)((v & TOK_JSLOT_KEY) >> 21);
}

static inline uint32_t
tok_jslot_cp(uint64_t v)
{
    return (uint32_t)(v & 0x1FFFFF);
}

struct tok_jieba {
    void *map; /* the mapped model file, or NULL */
    size_t map_len;
    uint64_t *slots;           /* the edge table; node id = slot index */
    size_t edge_mask, n_edges; /* n_edges: slots in use, the sentinel not */
    size_t max_probe; /* no search reads more slots (a bound, for a bad file) */
    uint64_t *root;   /* the root's children by BMP code points */
    uint64_t *bloom;  /* the edge filter, stored in the model */
    /* The value tables, by a slot's value index (masked with vals_mask, so
     * a damaged file cannot index past them): log(freq) and freq. */
    const double *logf;
    const int64_t *freqv;
    size_t n_vals, vals_mask; /* indexes 1..n_vals in use; 0: freq 0 */
    uint32_t *val_of;         /* heap: hash of freq -> index, or 0 */
    size_t val_of_mask;
    uint8_t *force_split; /* per node, or NULL: user words of freq 0 */
    const double *emit;   /* [TOK_EMIT_N][4], MIN_FLOAT where jieba has none */
    double start[4], trans[4][4];
    int64_t total;
    double logtotal;
    size_t n_words;
    bool heap; /* arrays are private, growable copies */
    double *emit_heap;
    void *re_hmm_skip;    /* pcre2_code: finalseg's re_skip */
    bool re_hmm_skip_jit; /* JIT-compiled: match with pcre2_jit_match() */
};

/* The edge filter: 2^22 bits (512 KB, half this core's L2), a blocked Bloom
 * filter: each edge sets three bits of one 64-bit word.  More than half of
 * the segmenter's lookups are for edges that do not exist; the filter
 * answers most of them (about 3 % false positives) without touching the
 * 8 MB table.  One bit an edge in 2^23 bits (1 MB) had the same false
 * positive rate and took the whole L2 (docs/benchmarks-history.md).  The
 * compiler stores it in the model, so opening one costs no pass over the
 * table. */
#define TOK_BLOOM_BITS 22

static inline uint64_t
tok_jedge_product(uint32_t parent, uint32_t cp)
{
    return tok_jedge_key(parent, cp) * 0x9E3779B97F4A7C15ULL;
}

/* The filter word of an edge (the product's top bits) and its three bits
 * in that word (from a second multiply, whose top bits mix all of it). */
static inline size_t
tok_bloom_word(uint64_t product)
{
    return (size_t)(product >> (64 - (TOK_BLOOM_BITS - 6)));
}

static inline uint64_t
tok_bloom_mask(uint64_t product)
{
    uint64_t h = product * 0xD6E8FEB86659FD93ULL;

    return (1ULL << (h >> 58)) | (1ULL << ((h >> 52) & 63)) |
           (1ULL << ((h >> 46) & 63));
}

static inline void
tok_bloom_set(uint64_t *bloom, uint32_t parent, uint32_t cp)
{
    uint64_t p = tok_jedge_product(parent, cp);

    bloom[tok_bloom_word(p)] |= tok_bloom_mask(p);
}

/* A prefetch the compiler keeps.  GCC 12 at -O1 and above deletes a
 * __builtin_prefetch() whose address comes from loads made only for it
 * (the cutter's look-ahead, prefetch_pair(), compiled to nothing); an asm
 * statement cannot be deleted.  A CLI case of `make test`
 * (tests/cli/segment/prefetch.sh) counts the prefetches in the cutter's
 * object. */
static inline void
tok_prefetch(const void *p)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p);
#endif
}

/* Trie access, shared by the model and the cutter (inline: it is the
 * segmenter's inner loop).  tok_jieba_hashed(): the slot of the edge from
 * node by cp in the hash table, 0 if there is none, and in *child its
 * index, the child's id.  tok_jieba_step(): the same from any node, the
 * root's BMP children from the direct table. */
static inline uint64_t
tok_jieba_hashed(const struct tok_jieba *j, uint32_t node, uint32_t cp,
                 uint32_t *child)
{
    const uint64_t want = tok_jedge_key(node, cp);
    size_t i;
    uint64_t p, m;

    p = tok_jedge_product(node, cp);
    m = tok_bloom_mask(p);
    i = tok_jedge_hash(node, cp) & j->edge_mask;
    /* The slot's line is fetched while the filter is read: a hit then
     * waits for the slower of the two loads, not for both in turn (the
     * filter's verdict is a coin toss the branch predictor cannot call). */
    tok_prefetch(&j->slots[i]);
    if ((j->bloom[tok_bloom_word(p)] & m) != m)
        return 0;
    for (size_t left = j->max_probe; left > 0; left--) {
        uint64_t v = j->slots[i];

        if (!(v & TOK_JSLOT_USED))
            return 0;
        if ((v & TOK_JSLOT_KEY) == want) {
            *child = (uint32_t)i;
            return v;
        }
        i = (i + 1) & j->edge_mask;
    }
    return 0; /* only in a damaged table: a valid one has an empty slot
               * within max_probe of every start */
}

static inline uint64_t
tok_jieba_step(const struct tok_jieba *j, uint32_t node, uint32_t cp,
               uint32_t *child)
{
    if (node == 0 && cp < TOK_JROOT_N) {
        uint64_t v = j->root[cp];

        *child = (uint32_t)(v & TOK_JNODE_MAX);
        return v;
    }
    return tok_jieba_hashed(j, node, cp, child);
}

/* log(freq) of the node a slot leads to (its value index not 0). */
static inline double
tok_jieba_logf(const struct tok_jieba *j, uint64_t v)
{
    return j->logf[tok_jslot_val(v) & j->vals_mask];
}

/* The child's id (0 if none). */
uint32_t tok_jieba_child(const struct tok_jieba *j, uint32_t node, uint32_t cp);

/* ------------------------------------------------------------------------ */
/* Byte-level BPE (tok_bpe.c)                                                */

/* tok_bpe_encode_reference: tok_bpe_encode() with every word merged by the
 * reference algorithm (HF's priority queue) and no shortcut (the table of
 * whole tokens, the scan of short words), for tests that check the fast
 * paths against it. */
int tok_bpe_encode_reference(const struct tok_bpe *b, const char *text,
                             size_t len, struct tok_encoding *e,
                             struct tok_err *err);

#endif /* TOK_INT_H */
