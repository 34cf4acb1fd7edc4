/* SPDX-License-Identifier: MIT */
/*
 * create-pretraining-data: JSONL documents to the token files the trainers
 * read (<prefix>.bin/.idx or <prefix>_ids.npy/_idx.npz), as PaddleNLP's
 * create_pretraining_data.py writes them: sentence splitting, WordPiece or
 * byte-level BPE, and the "##" whole-word marks of Chinese words.  Workers
 * turn chunks of lines into packed id records; the main thread writes them
 * in input order through libdata.  See create-pretraining-data(1).
 */
#include <err.h>
#include <getopt.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unicode/ubrk.h>
#include <unicode/utext.h>
#include <unistd.h>

#include "cli.h"
#include "ds.h"
#include "tok.h"
#include "banned.h"

#define CHUNK_SIZE (1u << 20)

enum tokenizer { TOKENIZER_ERNIE, TOKENIZER_BERT, TOKENIZER_GPT2_BPE };
enum splitter { SPLIT_NONE, SPLIT_NEWLINE, SPLIT_ICU };

/* A word of the current sentence: bytes [off, off + len) of `base`. */
struct word {
    const char *p;
    size_t len;
    uint64_t hash; /* hash_bytes(), on the hashed path only */
    int32_t next;  /* the next candidate of its first code point, or -1 */
};

/* What the marking reads of a token, per vocab id, in 16 bytes: its first
 * code point if it holds a U+4E00..9FA5 (else 0), its length and its
 * first 8 bytes (zero-padded), so a window is compared with a word without
 * reading the token's string (in the vocab, a cache miss away) unless it
 * is longer.  Its hash_bytes(), for the hashed path, is in tok_hash. */
struct mark_tok {
    uint32_t cjk_first;
    uint32_t len;
    uint64_t head;
};

/* The words of a sentence that start with code point cp, for the hashed
 * path: the longest, in bytes, and bit L of lens for each length L (bit
 * 63: 63 or more). */
struct first {
    uint32_t cp; /* UINT32_MAX: an empty slot */
    uint32_t max;
    uint64_t lens;
};

/* The candidates of a code point, for the marking by chains: the distinct
 * words of the sentence that start with it, a chain through word.next
 * from chains[cp % CHAIN_HEADS] (-1: none).  Indexed directly, no
 * probing: code points that share an entry share a chain, whose other
 * words then fail to match at their first token. */
#define CHAIN_HEADS 0x2000u /* 32 KB; a sentence has a few hundred */
#define CHAIN_MAX   16

struct worker {
    struct json_tokener *jt;
    struct tok_buf field;     /* the document text */
    struct tok_buf collapsed; /* after --max-repeated-len */
    struct tok_buf joined;    /* --cn-splited: the words joined */
    struct tok_encoding enc;
    struct tok_words words;
    struct word *wordv;
    size_t n_words, cap_words;
    int32_t *set; /* open addressing over wordv, -1 = empty */
    uint32_t *multi; /* the indexes of the words of two characters or more */
    size_t cap_multi;
    size_t set_cap;
    struct first *first; /* by first code point, set_cap slots (hashed) */
    int32_t *chains;   /* CHAIN_HEADS chain heads */
    uint32_t *touched; /* the entries of chains the sentence set */
    size_t n_touched;
    bool hashed; /* the sentence's words are in set, by hash */
    int32_t *marked;
    size_t n_marked, cap_marked;
    size_t last_sentence; /* offset of the last sentence record in out */
    UBreakIterator *brk;
};

struct ctx {
    enum tokenizer tokenizer;
    enum splitter splitter;
    const struct tok_tokenizer *tok;
    const struct tok_vocab *vocab; /* as loaded: id -> token string */
    const struct tok_vocab *ext;   /* with the "##<CJK>" ids */
    const struct tok_bpe *bpe;
    const struct tok_jieba *jieba;
    const char *json_key;
    const char *dimer; /* with TEXT_SLACK bytes after it */
    size_t dimer_len;
    bool wwm, cn_splited, skip_bad;
    size_t max_word_len;
    long max_repeat; /* -1: keep runs */
    tok_id eos;      /* -1: none */
    tok_id unk;
    /* per id of vocab: if the token has a U+4E00..9FA5, its first code
     * point, else 0 (one small array for the marking's every token) */
    struct mark_tok *mark_tok;
    uint64_t *tok_hash; /* per id of vocab: hash_bytes() of its token */
    const char **tok_s; /* per id of vocab: its token ("" if none) */
    uint64_t *pow;      /* P^len for each token length (see hash_bytes) */
    tok_id *cont_id;    /* per id of vocab: the id of "##" + token */
    size_t n_vocab_ids;
    bool has_empty_token; /* an id of the vocab without bytes */
    struct worker *workers;
};

/* What the main thread does with the records. */
struct sink {
    struct ds_writer *writer;
    struct cli_progress *prog;
    uint64_t docs_in;
    struct ds_err err;
    bool failed;
};

static void
usage(void)
{
    fprintf(stderr, "usage: create-pretraining-data [-ehPqSsVW] [-f format] "
                    "[-j threads] [-k key]\n"
                    "           [-T tokenizer] [--chinese] [--cn-splited] "
                    "[...] -v vocab -o prefix\n"
                    "           [file|dir ...]\n");
    exit(EXIT_USAGE);
}

static void
help(void)
{
    printf("usage: create-pretraining-data [options] -v vocab -o prefix "
           "[file|dir ...]\n"
           "\n"
           "Turn JSONL documents (one JSON object a line) into the token files "
           "the trainers\nread: PREFIX.bin + PREFIX.idx (Megatron/PaddleNLP "
           "mmap, default) or\nPREFIX_ids.npy + PREFIX_idx.npz (-f npy), "
           "byte-identical to PaddleNLP's\ncreate_pretraining_data.py.  A "
           "directory is read recursively: its *.jsonl and\n*.zst files, in "
           "sorted order.  No input or '-' reads stdin.\n"
           "\n"
           "  -v, --vocab PATH          vocab.txt, or a directory with "
           "vocab.txt (WordPiece)\n"
           "                            or vocab.json + merges.txt "
           "(gpt2-bpe)\n"
           "  -T, --tokenizer NAME      ernie (default), bert or gpt2-bpe\n"
           "  -M, --merges FILE         merges.txt, when -v names vocab.json\n"
           "  -o, --output-prefix PFX   write PFX.bin/.idx (or PFX_ids.npy/"
           "_idx.npz)\n"
           "  -f, --format NAME         mmap (default) or npy\n"
           "  -k, --json-key KEY        the field to read (default 'text')\n"
           "  -S, --split-sentences     one item per sentence (needed for "
           "ERNIE's SOP)\n"
           "      --chinese             with -S: sentences are the lines of "
           "the text\n"
           "                            (else ICU's sentence rules)\n"
           "  -W, --cn-whole-word-segment\n"
           "                            mark Chinese words with ## (jieba, "
           "or --cn-splited)\n"
           "      --cn-splited          the text is already segmented: words "
           "are split by\n"
           "                            --cn-split-dimer (default ' ')\n"
           "      --cn-split-dimer STR  the word separator of --cn-splited\n"
           "      --max-word-length N   longest word marked, in tokens "
           "(default 6)\n"
           "  -m, --jieba-model FILE    the compiled jieba model\n"
           "  -U, --user-dict FILE      add a jieba user dictionary\n"
           "      --max-repeated-len N  collapse runs of more than N equal "
           "characters to one\n"
           "                            (default 100, as PaddleNLP; 'none' "
           "keeps them)\n"
           "  -e, --append-eos          end each document with <|endoftext|> "
           "(gpt2-bpe)\n"
           "  -s, --skip-bad            skip bad records (and count them) "
           "instead of failing\n"
           "  -j, --threads N           worker threads (default: online "
           "CPUs)\n"
           "      --log-interval N      a progress line every N documents\n"
           "  -P, --progress            show progress even if stderr is not a "
           "terminal\n"
           "  -q, --quiet               no progress, no summary\n"
           "  -h, --help                show this help and exit\n"
           "  -V, --version             show the version and exit\n"
           "\n"
           "Exit status: 0 success, 1 failure (I/O, bad input), 2 usage "
           "error.\n");
    exit(0);
}

/* ------------------------------------------------------------------------ */
/* Text helpers                                                              */

/* Does s[0..len) (valid UTF-8) hold a run of more than n equal code
 * points other than '\n'?  Two code points are equal when their bytes
 * are, and the length of each comes from its lead byte. */
static bool
has_long_run(const char *str, size_t len, long n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 1, k, prev_k = 0;

    if (n >= 71) {
        /* A run of more than n code points of k bytes is periodic with
         * period k over (n + 1) k bytes, so it holds at least 64
         * consecutive places p where s[p..p+8) = s[p+k..p+k+8), one of
         * them a multiple of 64.  No such sample, no run: most text is
         * done in a glance, the rest is scanned below. */
        bool maybe = false;

        for (size_t p = 0; p + 9 <= len && !maybe; p += 64) {
            uint64_t a, b;

            memcpy(&a, s + p, 8);
            for (size_t d = 1; d <= 4 && p + 8 + d <= len; d++) {
                memcpy(&b, s + p + d, 8);
                maybe |= a == b;
            }
        }
        if (!maybe)
            return false;
    }

    for (size_t i = 0; i < len; i += k, prev_k = k) {
        bool same;

        k = s[i] < 0x80 ? 1 : s[i] < 0xE0 ? 2 : s[i] < 0xF0 ? 3 : 4;
        same = k == prev_k && s[i] != '\n' && s[i] == s[i - k];
        for (size_t b = 1; same && b < k; b++)
            same = s[i + b] == s[i - k + b];
        if (!same)
            run = 1;
        else if (++run > (size_t)n)
            return true;
    }
    return false;
}

/* Python's re.sub(r"(.)\1{N,}", r"\1", text): a run of more than N equal
 * code points other than '\n' becomes one.  Returns 0 when the text has
 * no such run (out is untouched), 1 when out holds the new text, -1 when
 * out of memory. */
static int
collapse_runs(const char *s, size_t len, long n, struct tok_buf *out)
{
    size_t i = 0;

    if (!has_long_run(s, len, n))
        return 0;
    tok_buf_clear(out);
    while (i < len) {
        uint32_t cp;
        size_t k = tok_utf8_decode(s + i, len - i, &cp), j = i + k;
        size_t run = 1;

        while (j + k <= len && memcmp(s + j, s + i, k) == 0) {
            j += k;
            run++;
        }
        if (cp != '\n' && run > (size_t)n) {
            if (tok_buf_append(out, s + i, k) < 0)
                return -1;
        } else if (tok_buf_append(out, s + i, j - i) < 0) {
            return -1;
        }
        i = j;
    }
    return tok_buf_append(out, "", 0) < 0 ? -1 : 1;
}

/* Python's str.strip(): drop leading and trailing whitespace. */
static void
strip(const char **s, size_t *len)
{
    const char *p = *s, *end = *s + *len;

    while (p < end) {
        uint32_t cp;
        size_t k = tok_utf8_decode(p, (size_t)(end - p), &cp);

        if (k == 0 || !cli_is_space(cp))
            break;
        p += k;
    }
    while (end > p) {
        const char *q = end - 1;
        uint32_t cp;

        while (q > p && ((unsigned char)*q & 0xC0) == 0x80)
            q--;
        if (tok_utf8_decode(q, (size_t)(end - q), &cp) != (size_t)(end - q) ||
            !cli_is_space(cp))
            break;
        end = q;
    }
    *s = p;
    *len = (size_t)(end - p);
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

/* Text the marking reads (documents, the word separator) keeps TEXT_SLACK
 * readable bytes after its end, so that up to 8 bytes of a word are
 * compared with one load whatever its length. */
#define TEXT_SLACK 8

static int
keep_slack(struct tok_buf *b)
{
    if (tok_buf_append(b, "\0\0\0\0\0\0\0\0", TEXT_SLACK) < 0)
        return -1;
    b->len -= TEXT_SLACK;
    return 0;
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

/* The bytes of the UTF-8 sequence that lead byte c starts (valid UTF-8). */
static inline size_t
utf8_lead_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* The first code point of p[0..len) (valid UTF-8, len >= 1). */
static inline uint32_t
first_code_point(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;

    if (s[0] < 0x80)
        return s[0];
    if (s[0] >= 0xE0 && s[0] < 0xF0 && len >= 3)
        return ((uint32_t)(s[0] & 0x0F) << 12) |
               ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
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
/* Words of a sentence and their set                                         */

static int
add_word(struct worker *w, const char *p, size_t len)
{
    if (w->n_words == w->cap_words) {
        size_t cap = w->cap_words ? 2 * w->cap_words : 256;
        struct word *v = realloc(w->wordv, cap * sizeof(*v));

        if (v == NULL)
            return -1;
        w->wordv = v;
        w->cap_words = cap;
    }
    w->wordv[w->n_words].p = p;
    w->wordv[w->n_words].len = len;
    w->n_words++;
    return 0;
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

/* Put word i into the set by hash (unless an equal word is there). */
static void
hash_word(struct worker *w, size_t i)
{
    struct word *x = &w->wordv[i];
    size_t at, cap = w->set_cap;

    x->hash = hash_bytes(x->p, x->len);
    at = set_slot(x->hash, cap);
    /* A word seen before is not added again: equal keys would make one
     * long chain. */
    for (; w->set[at] >= 0; at = (at + 1) & (cap - 1)) {
        const struct word *y = &w->wordv[w->set[at]];

        if (y->hash == x->hash && y->len == x->len &&
            same_bytes(y->p, x->p, x->len))
            return;
    }
    w->set[at] = (int32_t)i;
}

/* The sentence's words as the marking looks them up: by first code point,
 * each with its distinct words in a chain, which the marking compares
 * with the tokens from each Chinese token directly (no hashing).  A
 * sentence where more than CHAIN_MAX distinct words share a chain (never
 * seen in real text, but a line can be made so) would make that
 * quadratic: its words go into a hash set instead, and the marking hashes
 * windows (w->hashed). */
static int
build_set(struct worker *w)
{
    size_t cap, n_multi = 0;

    w->hashed = false;
    if (w->chains == NULL) {
        if ((w->chains = malloc(CHAIN_HEADS * sizeof(*w->chains))) == NULL)
            return -1;
        memset(w->chains, 0xff, CHAIN_HEADS * sizeof(*w->chains));
    }
    /* Forget the last sentence's chains. */
    for (size_t k = 0; k < w->n_touched; k++)
        w->chains[w->touched[k]] = -1;
    w->n_touched = 0;
    if (w->n_words > w->cap_multi) {
        uint32_t *m = realloc(w->multi, w->n_words * sizeof(*m));
        uint32_t *t;

        if (m == NULL)
            return -1;
        w->multi = m;
        if ((t = realloc(w->touched, w->n_words * sizeof(*t))) == NULL)
            return -1;
        w->touched = t;
        w->cap_multi = w->n_words;
    }
    /* A word of one character never equals a window of two tokens or more
     * (each token holds at least one whole character), and a window of one
     * token needs no lookup: only longer words enter the set.  That leaves
     * out most repeats (的, ，) of a sentence.  Picked without a branch:
     * one- and two-character words alternate at random. */
    for (size_t i = 0; i < w->n_words; i++) {
        const struct word *x = &w->wordv[i];

        w->multi[n_multi] = (uint32_t)i;
        n_multi += x->len > utf8_lead_len((unsigned char)x->p[0]);
    }
    for (size_t k = 0; k < n_multi; k++) {
        size_t i = w->multi[k];
        struct word *x = &w->wordv[i];
        int32_t *ch, j;
        uint32_t cp;
        size_t n = 0;

        if ((cp = first_code_point(x->p, x->len)) == UINT32_MAX)
            continue; /* no token starts with it */
        ch = &w->chains[cp % CHAIN_HEADS];
        if (*ch < 0)
            w->touched[w->n_touched++] = cp % CHAIN_HEADS;
        for (j = *ch; j >= 0; j = w->wordv[j].next, n++) {
            const struct word *y = &w->wordv[j];
            uint64_t head;

            if (y->len != x->len)
                continue;
            if (x->len > 8 ? memcmp(y->p, x->p, x->len) == 0
                           : (memcpy(&head, y->p, 8),
                              same_head(x->p, head, x->len)))
                break;
        }
        if (j >= 0)
            continue; /* seen before */
        if (n == CHAIN_MAX) {
            w->hashed = true;
            break;
        }
        x->next = *ch;
        *ch = (int32_t)i;
    }
    if (!w->hashed)
        return 0;
    /* The hashed path: every word of two characters or more, and the
     * first code points' lengths of all of them. */
    cap = 16;
    while (cap < 2 * w->n_words)
        cap *= 2;
    if (cap > w->set_cap) {
        int32_t *s = realloc(w->set, cap * sizeof(*s));
        struct first *f;

        if (s == NULL)
            return -1;
        w->set = s;
        f = realloc(w->first, cap * sizeof(*f));
        if (f == NULL)
            return -1;
        w->first = f;
    }
    w->set_cap = cap;
    memset(w->set, 0xff, cap * sizeof(*w->set));
    for (size_t i = 0; i < cap; i++)
        w->first[i].cp = UINT32_MAX;
    for (size_t i = 0; i < w->n_words; i++) {
        struct word *x = &w->wordv[i];
        struct first *f;
        uint32_t cp;

        if (x->len == 0 || x->len <= utf8_lead_len((unsigned char)x->p[0]) ||
            (cp = first_code_point(x->p, x->len)) == UINT32_MAX)
            continue;
        hash_word(w, i);
        f = first_slot(w->first, cap, cp);
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

/* The words of the sentence that start with code point cp, or NULL. */
static const struct first *
longest_from(const struct worker *w, uint32_t cp)
{
    const struct first *f = first_slot(w->first, w->set_cap, cp);

    return f->cp == cp ? f : NULL;
}

/* Is the concatenation of the tokens ids[0..n), len bytes whose
 * hash_bytes() is h, a word of the sentence? */
static bool
in_set(const struct ctx *c, const struct worker *w, const tok_id *ids, size_t n,
       size_t len, uint64_t h)
{
    size_t at = set_slot(h, w->set_cap);

    for (; w->set[at] >= 0; at = (at + 1) & (w->set_cap - 1)) {
        const struct word *x = &w->wordv[w->set[at]];
        size_t off = 0, k = 0;

        if (x->hash != h || x->len != len)
            continue;
        for (; k < n; k++) {
            size_t tl = c->mark_tok[ids[k]].len;

            if (!same_bytes(x->p + off, c->tok_s[ids[k]], tl))
                break;
            off += tl;
        }
        if (k == n)
            return true;
    }
    return false;
}

/* Bit j of the result: s[j] == ch, for j < n (n <= 64). */
static inline uint64_t
byte_mask(const char *s, size_t n, char ch)
{
    uint64_t m = 0;

#if defined(__SSE2__)
    if (n == 64) {
        const __m128i want = _mm_set1_epi8(ch);

        for (int k = 0; k < 4; k++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(s + 16 * k));

            m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, want))
                 << (16 * k);
        }
        return m;
    }
#endif
    for (size_t j = 0; j < n; j++)
        m |= (uint64_t)(s[j] == ch) << j;
    return m;
}

/* One string of text.split(dimer), p[0..n), as PaddleNLP repairs them: the
 * second of two empty strings in a row stands for a separator that was a
 * word. */
static int
split_word(const struct ctx *c, struct worker *w, const char *p, size_t n,
           bool *prev_empty)
{
    if (n == 0 && *prev_empty) {
        *prev_empty = false;
        return add_word(w, c->dimer, c->dimer_len);
    }
    *prev_empty = n == 0;
    return add_word(w, p, n);
}

/* Python's text.split(dimer), then PaddleNLP's repair (split_word). */
static int
split_words(const struct ctx *c, struct worker *w, const char *s, size_t len)
{
    const char *p = s, *end = s + len;
    bool prev_empty = false;

    if (c->dimer_len == 1) {
        /* The separators of 64 bytes at a time, as a bit mask: a word
         * costs a bit scan, not a memchr call (most are 3-6 bytes). */
        for (size_t base = 0; base < len; base += 64) {
            size_t n = len - base < 64 ? len - base : 64;
            uint64_t m = byte_mask(s + base, n, c->dimer[0]);

            for (; m; m &= m - 1) {
                const char *hit = s + base + __builtin_ctzll(m);

                if (split_word(c, w, p, (size_t)(hit - p), &prev_empty) < 0)
                    return -1;
                p = hit + 1;
            }
        }
        if (split_word(c, w, p, (size_t)(end - p), &prev_empty) < 0)
            return -1;
    } else {
        for (;;) {
            const char *hit =
                c->dimer_len && (size_t)(end - p) >= c->dimer_len
                    ? memmem(p, (size_t)(end - p), c->dimer, c->dimer_len)
                    : NULL;
            const char *we = hit ? hit : end;

            if (split_word(c, w, p, (size_t)(we - p), &prev_empty) < 0)
                return -1;
            if (hit == NULL)
                break;
            p = hit + c->dimer_len;
        }
    }
    /* The text the tokenizer sees: the words joined without separator,
     * no longer than s (a repaired word stands for a separator of s). */
    tok_buf_clear(&w->joined);
    if (tok_buf_append(&w->joined, s, len) < 0 ||
        tok_buf_append(&w->joined, "                ", 16) < 0)
        return -1; /* room for len bytes, and 16 to spare */
    {
        char *d = w->joined.data;
        size_t at = 0;

        for (size_t i = 0; i < w->n_words; i++) {
            const struct word *x = &w->wordv[i];

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
        w->joined.len = at;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* One sentence                                                              */

static int
reserve_marked(struct worker *w, size_t n)
{
    if (n > w->cap_marked) {
        size_t cap = w->cap_marked ? w->cap_marked : 256;
        int32_t *m;

        while (cap < n)
            cap *= 2;
        m = realloc(w->marked, cap * sizeof(*m));
        if (m == NULL)
            return -1;
        w->marked = m;
        w->cap_marked = cap;
    }
    return 0;
}

/* mark_whole_words (ernie-data.md 4.5) over w->enc: a token holding a
 * Chinese character starts the longest window of at most max_word_len
 * tokens whose concatenation is a word; the window's other tokens become
 * "##" + token.  The result goes to w->marked. */
/* How many tokens of ids[0..max_l) (at least 1) spell the word p[0..len),
 * 0 if none do; tokens of no bytes after it count too (the longest window
 * wins).  Tokens of up to 8 bytes are compared from their mark_tok. */
static size_t
spell_count(const struct ctx *c, const tok_id *ids, size_t max_l,
            const char *p, size_t len)
{
    size_t off = 0, k = 0;

    while (off < len) {
        const struct mark_tok *t;

        if (k == max_l)
            return 0;
        t = &c->mark_tok[ids[k]];
        if (t->len > len - off)
            return 0;
        if (t->len <= 8 ? !same_head(p + off, t->head, t->len)
                        : memcmp(p + off, c->tok_s[ids[k]], t->len) != 0)
            return 0;
        off += t->len;
        k++;
    }
    while (c->has_empty_token && k < max_l && c->mark_tok[ids[k]].len == 0)
        k++;
    return k;
}

/* The most tokens of ids[0..max_l) whose concatenation is one of the
 * words of the chain from head, 1 if none: by comparing each with the
 * tokens. */
static size_t
longest_by_chain(const struct ctx *c, const struct worker *w,
                 const tok_id *ids, size_t max_l, int32_t head)
{
    size_t best = 1;

    for (int32_t j = head; j >= 0; j = w->wordv[j].next) {
        size_t k = spell_count(c, ids, max_l, w->wordv[j].p, w->wordv[j].len);

        if (k > best)
            best = k;
    }
    return best;
}

/* The same, by hashing each window (longest first) and looking it up in
 * the sentence's hash set: for sentences with long chains. */
static size_t
longest_by_hash(const struct ctx *c, const struct worker *w,
                const tok_id *ids, size_t max_l, const struct first *f)
{
    size_t ends[64], wlen = 0, n_prefix = 0, l;
    uint64_t hashes[64], h = 0;

    /* The hash of each window, longer by a token each time, while no
     * longer than the longest word. */
    for (size_t k = 0; k < max_l; k++) {
        const struct mark_tok *tt = &c->mark_tok[ids[k]];

        if (wlen + tt->len > f->max)
            break; /* no word is that long */
        wlen += tt->len;
        h = h * c->pow[tt->len] + c->tok_hash[ids[k]];
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
            in_set(c, w, ids, l, len, hashes[l - 1]))
            break;
    }
    return l == 0 ? 1 : l;
}

/* mark_whole_words (ernie-data.md 4.5) over w->enc: a token holding a
 * Chinese character starts the longest window of at most max_word_len
 * tokens whose concatenation is a word; the window's other tokens become
 * "##" + token.  The result goes to w->marked. */
static int
mark_whole_words(const struct ctx *c, struct worker *w)
{
    const tok_id *ids = w->enc.ids;
    size_t n = w->enc.n, i = 0, m = 0;

    if (reserve_marked(w, n) < 0)
        return -1;
    while (i < n) {
        size_t max_l = n - i < c->max_word_len ? n - i : c->max_word_len;
        const struct mark_tok *t0 = &c->mark_tok[ids[i]];
        size_t l;

        /* A window that is a word starts with that word's first code
         * point, so only words that start with this token's can be it. */
        if (t0->cjk_first == 0) {
            w->marked[m++] = ids[i++];
            continue;
        }
        if (!w->hashed) {
            int32_t head = w->chains[t0->cjk_first % CHAIN_HEADS];

            if (head < 0) {
                w->marked[m++] = ids[i++];
                continue;
            }
            l = longest_by_chain(c, w, ids + i, max_l, head);
        } else {
            const struct first *f = longest_from(w, t0->cjk_first);

            /* If no such word is longer than the token, the window is
             * the token alone. */
            if (f == NULL || f->max <= t0->len) {
                w->marked[m++] = ids[i++];
                continue;
            }
            l = longest_by_hash(c, w, ids + i, max_l, f);
        }
        w->marked[m++] = ids[i];
        for (size_t k = 1; k < l; k++)
            w->marked[m++] = c->cont_id[ids[i + k]];
        i += l;
    }
    w->n_marked = m;
    return 0;
}

/* Tokenize one stripped sentence into (ids, n).  Returns -1 when out of
 * memory. */
static int
tokenize_sentence(const struct ctx *c, struct worker *w, const char *s,
                  size_t len, const int32_t **ids, size_t *n)
{
    const char *text = s;
    size_t text_len = len;

    tok_encoding_clear(&w->enc);
    if (c->tokenizer == TOKENIZER_GPT2_BPE) {
        if (tok_bpe_encode(c->bpe, s, len, &w->enc, NULL) < 0)
            return -1;
        goto plain;
    }
    if (!c->wwm) {
        if (tok_encode(c->tok, s, len, &w->enc, NULL) < 0)
            return -1;
        goto plain;
    }
    w->n_words = 0;
    if (c->cn_splited) {
        if (split_words(c, w, s, len) < 0)
            return -1;
        text = w->joined.data;
        text_len = w->joined.len;
    } else {
        tok_words_clear(&w->words);
        if (tok_jieba_cut(c->jieba, s, len, TOK_JIEBA_HMM | TOK_JIEBA_TRUSTED,
                          &w->words, NULL) < 0)
            return -1;
        for (size_t i = 0; i < w->words.n; i++)
            if (add_word(w, s + w->words.starts[i],
                         w->words.ends[i] - w->words.starts[i]) < 0)
                return -1;
    }
    if (build_set(w) < 0 ||
        tok_encode(c->tok, text, text_len, &w->enc, NULL) < 0 ||
        mark_whole_words(c, w) < 0)
        return -1;
    *ids = w->marked;
    *n = w->n_marked;
    return 0;
plain:
    *ids = w->enc.ids;
    *n = w->enc.n;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Records: per document u32 n_sentences, then per sentence u32 n and n
 * int32 ids, in native byte order (they never leave the process). */

static int
put_u32(struct tok_buf *b, uint32_t v)
{
    return tok_buf_append(b, &v, sizeof(v));
}

static int
put_sentence(const struct ctx *c, struct worker *w, const char *s, size_t len,
             struct tok_buf *out, uint32_t *n_sent)
{
    const int32_t *ids;
    size_t n;

    strip(&s, &len);
    if (len == 0)
        return 0;
    if (tokenize_sentence(c, w, s, len, &ids, &n) < 0)
        return -1;
    if (n == 0)
        return 0;
    if (n > UINT32_MAX - 1)
        return -1;
    w->last_sentence = out->len;
    if (put_u32(out, (uint32_t)n) < 0 ||
        tok_buf_append(out, ids, n * sizeof(*ids)) < 0)
        return -1;
    (*n_sent)++;
    return 0;
}

static int
put_document(const struct ctx *c, struct worker *w, const char *text,
             size_t len, struct tok_buf *out)
{
    size_t head = out->len;
    uint32_t n_sent = 0;

    if (put_u32(out, 0) < 0)
        return -1;
    switch (c->splitter) {
    case SPLIT_NONE:
        if (put_sentence(c, w, text, len, out, &n_sent) < 0)
            return -1;
        break;
    case SPLIT_NEWLINE: {
        const char *p = text, *end = text + len;

        for (;;) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *le = nl ? nl : end;

            if (put_sentence(c, w, p, (size_t)(le - p), out, &n_sent) < 0)
                return -1;
            if (nl == NULL)
                break;
            p = nl + 1;
        }
        break;
    }
    case SPLIT_ICU: {
        UErrorCode ec = U_ZERO_ERROR;
        UText *ut = utext_openUTF8(NULL, text, (int64_t)len, &ec);
        int32_t a, b;

        if (U_FAILURE(ec))
            return -1;
        ubrk_setUText(w->brk, ut, &ec);
        if (U_FAILURE(ec)) {
            utext_close(ut);
            return -1;
        }
        a = ubrk_first(w->brk);
        while ((b = ubrk_next(w->brk)) != UBRK_DONE) {
            if (put_sentence(c, w, text + a, (size_t)(b - a), out, &n_sent) <
                0) {
                utext_close(ut);
                return -1;
            }
            a = b;
        }
        utext_close(ut);
        break;
    }
    }
    if (n_sent && c->eos >= 0) {
        /* The eos id ends the document's last sentence. */
        uint32_t n_last;

        memcpy(&n_last, out->data + w->last_sentence, sizeof(n_last));
        n_last++;
        memcpy(out->data + w->last_sentence, &n_last, sizeof(n_last));
        if (tok_buf_append(out, &c->eos, sizeof(c->eos)) < 0)
            return -1;
    }
    memcpy(out->data + head, &n_sent, sizeof(n_sent));
    return 0;
}

static void
process_chunk(void *arg, unsigned worker, const char *lines, size_t len,
              uint64_t first_line, struct cli_chunk_result *r)
{
    const struct ctx *c = arg;
    struct worker *w = &c->workers[worker];
    const char *p = lines, *end = lines + len;
    uint64_t line = first_line;

    for (; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *rec = p, *rec_end = nl ? nl : end;
        size_t n = (size_t)(rec_end - rec), bad;
        const char *text;
        size_t text_len;
        char why[200];
        int k;

        p = nl ? nl + 1 : end;
        bad = tok_utf8_check(rec, n);
        if (bad != n) {
            if (!cli_chunk_bad(r, c->skip_bad, line,
                               "invalid UTF-8 at byte offset %zu of the record",
                               bad))
                return;
            continue;
        }
        k = cli_json_field(w->jt, rec, n, c->json_key, &w->field, why,
                           sizeof(why));
        if (k == -2) {
            cli_chunk_error(r, line, "%s", why);
            return;
        }
        if (k == 0)
            continue; /* a blank line */
        if (k < 0) {
            if (!cli_chunk_bad(r, c->skip_bad, line, "%s", why))
                return;
            continue;
        }
        if (keep_slack(&w->field) < 0)
            goto nomem;
        text = w->field.data;
        text_len = w->field.len;
        if (c->max_repeat >= 0) {
            int got =
                collapse_runs(text, text_len, c->max_repeat, &w->collapsed);

            if (got < 0 || (got > 0 && keep_slack(&w->collapsed) < 0))
                goto nomem;
            if (got > 0) {
                text = w->collapsed.data;
                text_len = w->collapsed.len;
            }
        }
        r->n_records++;
        if (put_document(c, w, text, text_len, &r->out) < 0)
            goto nomem;
    }
    return;
nomem:
    cli_chunk_error(r, line, "out of memory");
}

/* The main thread: hand the records of one chunk, in order, to libdata. */
static int
sink_write(void *arg, const void *data, size_t len)
{
    struct sink *s = arg;
    const char *p = data, *end = p + len;
    uint64_t docs = 0;

    while (p < end) {
        uint32_t n_sent;

        memcpy(&n_sent, p, sizeof(n_sent));
        p += sizeof(n_sent);
        for (uint32_t i = 0; i < n_sent; i++) {
            uint32_t n;

            memcpy(&n, p, sizeof(n));
            p += sizeof(n);
            if (ds_writer_add_sentence(s->writer,
                                       (const int32_t *)(const void *)p, n,
                                       &s->err) < 0)
                goto fail;
            p += (size_t)n * sizeof(int32_t);
        }
        if (ds_writer_end_document(s->writer, &s->err) < 0)
            goto fail;
        docs++;
    }
    s->docs_in += docs;
    cli_progress_docs(s->prog, docs);
    return 0;
fail:
    warnx("%s", s->err.msg);
    s->failed = true;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

/* PaddleNLP reads *.jsonl and *.zst files of a directory. */
static bool
is_corpus_file(const char *path)
{
    return cli_ends_with(path, ".jsonl") || cli_ends_with(path, ".zst");
}

/* ------------------------------------------------------------------------ */
/* Vocabularies                                                              */

/* path, or path/name when path is a directory; malloc'd. */
static char *
in_dir(const char *path, const char *name)
{
    struct stat st;
    char *p;

    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&p, "%s/%s", path, name) < 0)
            err(1, NULL);
        return p;
    }
    p = strdup(path);
    if (p == NULL)
        err(1, NULL);
    return p;
}

static void
prepare_marks(struct ctx *c)
{
    size_t n = tok_vocab_n_ids(c->vocab);

    c->n_vocab_ids = n;
    size_t max_len = 0;

    c->mark_tok = calloc(n ? n : 1, sizeof(*c->mark_tok));
    c->tok_hash = calloc(n ? n : 1, sizeof(*c->tok_hash));
    c->cont_id = malloc((n ? n : 1) * sizeof(*c->cont_id));
    c->tok_s = calloc(n ? n : 1, sizeof(*c->tok_s));
    if (c->mark_tok == NULL || c->tok_hash == NULL || c->cont_id == NULL ||
        c->tok_s == NULL)
        err(1, NULL);
    for (size_t id = 0; id < n; id++) {
        size_t len;
        const char *t = tok_vocab_token(c->vocab, (tok_id)id, &len);
        char buf[256], *cont = buf;
        struct mark_tok *mt = &c->mark_tok[id];
        tok_id k;

        c->cont_id[id] = c->unk;
        c->tok_s[id] = t ? t : "";
        if (t == NULL)
            continue; /* an unused id: the tokenizer never gives it */
        if (len == 0)
            c->has_empty_token = true;
        if (len > UINT32_MAX)
            errx(1, "a token of the vocab is too long");
        mt->len = (uint32_t)len;
        memcpy(&mt->head, t, len < 8 ? len : 8); /* as same_head() reads */
        c->tok_hash[id] = hash_bytes(t, len);
        if (len > max_len)
            max_len = len;
        if (has_cjk(t, len) && tok_utf8_decode(t, len, &mt->cjk_first) == 0)
            mt->cjk_first = 0; /* cannot be: the vocab is valid UTF-8 */
        /* "##" + token, on the stack unless it is a long one */
        if (len + 2 > sizeof(buf) && (cont = malloc(len + 2)) == NULL)
            err(1, NULL);
        cont[0] = cont[1] = '#';
        memcpy(cont + 2, t, len);
        k = tok_vocab_find(c->ext, cont, len + 2);
        if (k >= 0)
            c->cont_id[id] = k;
        if (cont != buf)
            free(cont);
    }
    c->pow = malloc((max_len + 1) * sizeof(*c->pow));
    if (c->pow == NULL)
        err(1, NULL);
    c->pow[0] = 1;
    for (size_t l = 1; l <= max_len; l++)
        c->pow[l] = c->pow[l - 1] * HASH_P;
}

/* ------------------------------------------------------------------------ */

enum {
    OPT_CHINESE = 256,
    OPT_CN_SPLITED,
    OPT_CN_SPLIT_DIMER,
    OPT_MAX_WORD_LENGTH,
    OPT_MAX_REPEATED_LEN,
    OPT_LOG_INTERVAL
};

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "vocab", required_argument, NULL, 'v' },
        { "tokenizer", required_argument, NULL, 'T' },
        { "merges", required_argument, NULL, 'M' },
        { "output-prefix", required_argument, NULL, 'o' },
        { "format", required_argument, NULL, 'f' },
        { "json-key", required_argument, NULL, 'k' },
        { "split-sentences", no_argument, NULL, 'S' },
        { "chinese", no_argument, NULL, OPT_CHINESE },
        { "cn-whole-word-segment", no_argument, NULL, 'W' },
        { "cn-splited", no_argument, NULL, OPT_CN_SPLITED },
        { "cn-split-dimer", required_argument, NULL, OPT_CN_SPLIT_DIMER },
        { "max-word-length", required_argument, NULL, OPT_MAX_WORD_LENGTH },
        { "jieba-model", required_argument, NULL, 'm' },
        { "user-dict", required_argument, NULL, 'U' },
        { "max-repeated-len", required_argument, NULL, OPT_MAX_REPEATED_LEN },
        { "append-eos", no_argument, NULL, 'e' },
        { "skip-bad", no_argument, NULL, 's' },
        { "threads", required_argument, NULL, 'j' },
        { "log-interval", required_argument, NULL, OPT_LOG_INTERVAL },
        { "progress", no_argument, NULL, 'P' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 }
    };
    struct ctx c;
    struct sink sink;
    struct cli_output out;
    struct cli_run run;
    struct cli_progress prog;
    struct cli_files files = { NULL, 0, 0, 0 };
    struct tok_vocab *vocab = NULL, *ext = NULL;
    struct tok_tokenizer *tok = NULL;
    struct tok_bpe *bpe = NULL;
    struct tok_jieba *jieba = NULL;
    struct tok_err e;
    struct ds_err de;
    enum ds_format format = DS_FORMAT_MMAP;
    enum ds_dtype dtype;
    const char *vocab_path = NULL, *merges_path = NULL, *prefix = NULL;
    const char *model = NULL, *user_dict = NULL;
    char *model_alloc = NULL, *dimer_buf = NULL;
    unsigned n_threads = cli_default_threads();
    bool quiet = false, progress = false, split = false, chinese = false;
    bool append_eos = false;
    uint64_t log_every = 0, total = 0;
    size_t vocab_size;
    int ch, rval;

    memset(&c, 0, sizeof(c));
    c.tokenizer = TOKENIZER_ERNIE;
    c.json_key = "text";
    c.dimer = " ";
    c.max_word_len = 6;
    c.max_repeat = 100;
    c.eos = -1;

    while ((ch = getopt_long(argc, argv, "ef:hj:k:M:m:o:PqSsT:U:v:VW", longopts,
                             NULL)) != -1) {
        switch (ch) {
        case 'e':
            append_eos = true;
            break;
        case 'f': {
            static const char *const formats[] = { "mmap", "npy", NULL };
            int k = cli_parse_choice(optarg, "format", formats);

            if (k < 0)
                usage();
            format = k == 0 ? DS_FORMAT_MMAP : DS_FORMAT_NPY;
            break;
        }
        case 'h':
            help();
            break;
        case 'j':
            n_threads = (unsigned)cli_parse_u64(optarg, 1, 256, "threads");
            break;
        case 'k':
            c.json_key = optarg;
            break;
        case 'M':
            merges_path = optarg;
            break;
        case 'm':
            model = optarg;
            break;
        case 'o':
            prefix = optarg;
            break;
        case 'P':
            progress = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'S':
            split = true;
            break;
        case 's':
            c.skip_bad = true;
            break;
        case 'T': {
            /* In enum tokenizer order. */
            static const char *const names[] = { "ernie", "bert", "gpt2-bpe",
                                                 NULL };
            int k = cli_parse_choice(optarg, "tokenizer", names);

            if (k < 0)
                usage();
            c.tokenizer = (enum tokenizer)k;
            break;
        }
        case 'U':
            user_dict = optarg;
            break;
        case 'v':
            vocab_path = optarg;
            break;
        case 'V':
            cli_print_version("create-pretraining-data");
            return 0;
        case 'W':
            c.wwm = true;
            break;
        case OPT_CHINESE:
            chinese = true;
            break;
        case OPT_CN_SPLITED:
            c.cn_splited = true;
            break;
        case OPT_CN_SPLIT_DIMER:
            c.dimer = optarg;
            break;
        case OPT_MAX_WORD_LENGTH:
            c.max_word_len =
                (size_t)cli_parse_u64(optarg, 1, 64, "max-word-length");
            break;
        case OPT_MAX_REPEATED_LEN:
            c.max_repeat = strcmp(optarg, "none") == 0
                               ? -1
                               : (long)cli_parse_u64(optarg, 0, 1u << 30,
                                                     "max-repeated-len");
            break;
        case OPT_LOG_INTERVAL:
            log_every = cli_parse_u64(optarg, 1, UINT64_MAX, "log-interval");
            break;
        default:
            usage();
        }
    }
    argc -= optind;
    argv += optind;
    if (vocab_path == NULL || prefix == NULL) {
        warnx("%s is required", vocab_path == NULL ? "--vocab" : "-o PREFIX");
        usage();
    }
    c.dimer_len = strlen(c.dimer);
    if ((dimer_buf = calloc(c.dimer_len + TEXT_SLACK, 1)) == NULL)
        err(1, NULL);
    memcpy(dimer_buf, c.dimer, c.dimer_len);
    c.dimer = dimer_buf;
    if (c.cn_splited && c.dimer_len == 0) {
        warnx("--cn-split-dimer must not be empty");
        usage();
    }
    if (c.tokenizer == TOKENIZER_GPT2_BPE && c.wwm) {
        warnx("--cn-whole-word-segment needs a WordPiece tokenizer "
              "(ernie or bert)");
        usage();
    }
    if (append_eos && c.tokenizer != TOKENIZER_GPT2_BPE) {
        warnx("--append-eos: the %s tokenizer has no end-of-text token",
              c.tokenizer == TOKENIZER_ERNIE ? "ernie" : "bert");
        usage();
    }
    c.splitter = !split ? SPLIT_NONE : chinese ? SPLIT_NEWLINE : SPLIT_ICU;

    /* The tokenizer, and the dtype PaddleNLP would pick for it. */
    if (c.tokenizer == TOKENIZER_GPT2_BPE) {
        char *vj = in_dir(vocab_path, "vocab.json");
        char *mt = merges_path ? strdup(merges_path)
                               : in_dir(vocab_path, "merges.txt");

        if (mt == NULL)
            err(1, NULL);
        if (merges_path == NULL && strcmp(vj, vocab_path) == 0) {
            warnx("--vocab names a file: give merges.txt with --merges");
            usage();
        }
        if (tok_bpe_load(&bpe, vj, mt, &e) < 0)
            errx(1, "%s", e.msg);
        free(vj);
        free(mt);
        vocab_size = tok_bpe_vocab_size(bpe);
        if (append_eos) {
            c.eos = tok_bpe_find(bpe, "<|endoftext|>", 13);
            if (c.eos < 0)
                errx(1, "--append-eos: the vocab has no '<|endoftext|>'");
        }
    } else {
        char *vt = in_dir(vocab_path, "vocab.txt");
        struct tok_opts o;

        if (tok_vocab_load(&vocab, vt, &e) < 0)
            errx(1, "%s", e.msg);
        tok_opts_init(&o, c.tokenizer == TOKENIZER_ERNIE ? TOK_FLAVOR_ERNIE
                                                         : TOK_FLAVOR_BERT);
        if (tok_tokenizer_new(&tok, vocab, &o, &e) < 0)
            errx(1, "%s", e.msg);
        vocab_size = tok_vocab_size(vocab);
        c.unk = tok_vocab_special(vocab, TOK_SPECIAL_UNK);
        if (c.wwm) {
            int64_t added;

            if (tok_vocab_load(&ext, vt, &e) < 0)
                errx(1, "%s", e.msg);
            added = tok_vocab_extend_chinese(ext, &e);
            if (added < 0)
                errx(1, "%s", e.msg);
            if (tok_vocab_n_ids(vocab) > vocab_size && added > 0 && !quiet)
                warnx("warning: '%s' repeats tokens, so (as in PaddleNLP) the "
                      "first '##' ids reuse ids %zu..%zu of the vocab",
                      vt, vocab_size, tok_vocab_n_ids(vocab) - 1);
            c.vocab = vocab;
            c.ext = ext;
            prepare_marks(&c);
        }
        free(vt);
        c.tok = tok;
        c.vocab = vocab;
    }
    /* PaddleNLP: uint16 if vocab_size < 2**16 - 1, else int32; the "##"
     * ids must fit too, which PaddleNLP does not check. */
    dtype = vocab_size < 65535 ? DS_DTYPE_UINT16 : DS_DTYPE_INT32;
    if (dtype == DS_DTYPE_INT32 && !quiet)
        warnx("the vocab has %zu tokens (more than 65534): ids are stored "
              "as int32",
              vocab_size);
    if (dtype == DS_DTYPE_UINT16 && ext && tok_vocab_n_ids(ext) > 65536) {
        dtype = DS_DTYPE_INT32;
        if (!quiet)
            warnx("with the '##' ids the vocab needs %zu ids (more than "
                  "65536): ids are stored as int32",
                  tok_vocab_n_ids(ext));
    }

    if (c.wwm && !c.cn_splited) {
        if (model == NULL) {
            model_alloc = cli_jieba_model_path();
            if (model_alloc == NULL)
                err(1, NULL);
            model = model_alloc;
        }
        if (tok_jieba_open(&jieba, model, &e) < 0)
            errx(1, "%s", e.msg);
        if (user_dict && tok_jieba_load_userdict(jieba, user_dict, &e) < 0)
            errx(1, "%s", e.msg);
        c.jieba = jieba;
    }
    c.bpe = bpe;

    c.workers = calloc(n_threads, sizeof(*c.workers));
    if (c.workers == NULL)
        err(1, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        struct worker *w = &c.workers[i];

        w->jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        if (w->jt == NULL)
            err(1, NULL);
        tok_buf_init(&w->field);
        tok_buf_init(&w->collapsed);
        tok_buf_init(&w->joined);
        tok_encoding_init(&w->enc);
        tok_words_init(&w->words);
        if (c.splitter == SPLIT_ICU) {
            UErrorCode ec = U_ZERO_ERROR;

            w->brk = ubrk_open(UBRK_SENTENCE, "", NULL, 0, &ec);
            if (U_FAILURE(ec))
                errx(1, "cannot open ICU sentence breaker: %s",
                     u_errorName(ec));
        }
    }

    if (cli_files_expand(&files, argc, argv, is_corpus_file,
                         "*.jsonl or *.zst ", "not *.jsonl or *.zst",
                         quiet) != 0)
        return cli_exit_status(1);
    total = files.total_bytes;
    if (argc > 0 && files.n == 0)
        errx(1, "no input: the directories hold no *.jsonl or *.zst file");
    if (ds_writer_open(&sink.writer, prefix, format, dtype, &de) < 0)
        errx(1, "%s", de.msg);
    sink.docs_in = 0;
    sink.failed = false;
    sink.prog = &prog;
    cli_progress_init(&prog, !quiet && (progress || isatty(STDERR_FILENO)));
    prog.total = total;
    prog.log_every = quiet ? 0 : log_every;
    prog.next_log = log_every;
    cli_output_sink(&out, sink_write, &sink);

    memset(&run, 0, sizeof(run));
    run.n_threads = n_threads;
    run.chunk_size = CHUNK_SIZE;
    run.records = CLI_RECORDS_LINES;
    run.quiet = quiet;
    run.progress = progress;
    run.fn = process_chunk;
    run.ctx = &c;
    run.prog = &prog;
    rval = cli_run_files(&run, (int)files.n, files.v, &out);
    if (rval == 0 && ds_writer_n_documents(sink.writer) == 0) {
        /* PaddleNLP fails here too (a division by zero in its summary);
         * an empty dataset is never what was meant. */
        warnx("no document has a token (%llu read): nothing written",
              (unsigned long long)sink.docs_in);
        rval = 1;
    }
    if (rval == 0) {
        uint64_t n_docs = ds_writer_n_documents(sink.writer);
        uint64_t n_sent = ds_writer_n_sentences(sink.writer);
        uint64_t n_tok = ds_writer_n_tokens(sink.writer);

        if (ds_writer_commit(sink.writer, &de) < 0) {
            warnx("%s", de.msg);
            rval = 1;
        } else if (!quiet) {
            char *names[2] = { NULL, NULL };

            if (ds_output_names(prefix, format, names) == 0)
                fprintf(stderr,
                        "create-pretraining-data: wrote %s and %s (%s): "
                        "%llu documents of %llu read, %llu sentences, %llu "
                        "tokens (%.2f a sentence, %.2f a document)\n",
                        names[0], names[1], ds_dtype_name(dtype),
                        (unsigned long long)n_docs,
                        (unsigned long long)sink.docs_in,
                        (unsigned long long)n_sent, (unsigned long long)n_tok,
                        n_sent ? (double)n_tok / (double)n_sent : 0.0,
                        n_docs ? (double)n_tok / (double)n_docs : 0.0);
            free(names[0]);
            free(names[1]);
        }
    } else {
        ds_writer_abort(sink.writer);
    }

    for (unsigned i = 0; i < n_threads; i++) {
        struct worker *w = &c.workers[i];

        json_tokener_free(w->jt);
        tok_buf_release(&w->field);
        tok_buf_release(&w->collapsed);
        tok_buf_release(&w->joined);
        tok_encoding_release(&w->enc);
        tok_words_release(&w->words);
        free(w->wordv);
        free(w->set);
        free(w->first);
        free(w->chains);
        free(w->multi);
        free(w->touched);
        free(w->marked);
        if (w->brk)
            ubrk_close(w->brk);
    }
    cli_files_release(&files);
    free(c.workers);
    free(c.mark_tok);
    free(dimer_buf);
    free(c.tok_hash);
    free(c.pow);
    free(c.cont_id);
    free(c.tok_s);
    free(model_alloc);
    tok_jieba_close(jieba);
    tok_tokenizer_free(tok);
    tok_vocab_free(vocab);
    tok_vocab_free(ext);
    tok_bpe_free(bpe);
    return cli_exit_status(rval);
}
