/* SPDX-License-Identifier: MIT */
/*
 * vocab_bpe.c: byte-level BPE training for GPT, as Hugging Face tokenizers'
 * ByteLevelBPETokenizer().train() does it (BpeTrainer in
 * tokenizers/src/models/bpe/trainer.rs, 0.20.3): words counted after
 * GPT-2's pre-tokenization, special tokens first, the 256-symbol byte
 * alphabet in code point order, then the merges, most frequent pair first,
 * with HF's priority queue and its quirks, and vocab.json and merges.txt
 * written as save_model() writes them.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "vocab.h"
#include "banned.h"

/* set_err: fill err (if not NULL); returns code. */
static int __attribute__((format(printf, 3, 4)))
set_err(struct tok_err *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

static int
nomem(struct tok_err *err)
{
    return set_err(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
}

static uint64_t
mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t
hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;

    while (len >= 8) {
        uint64_t v;

        memcpy(&v, s, 8);
        h = (h ^ v) * 0x100000001B3ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    if (len > 0) {
        uint64_t v = 0;

        memcpy(&v, s, len);
        h = (h ^ v) * 0x100000001B3ull;
    }
    return mix64(h);
}

/* grow: make room for need elements of elem bytes in *p. */
static int
grow(void *pp, size_t *cap, size_t need, size_t elem)
{
    void **p = (void **)pp;
    size_t n = *cap ? *cap : 16;
    void *q;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    q = realloc(*p, n * elem);
    if (q == NULL)
        return TOK_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Word counts                                                               */

/* A slot of the word table; len 0 is an empty slot (words are never
 * empty). */
struct word_slot {
    uint64_t hash;
    uint64_t count;
    uint64_t off; /* bytes at arena + off */
    uint32_t len;
};

struct vocab_bpe_words {
    struct word_slot *slots;
    size_t mask, n;
    char *arena;
    size_t arena_len, arena_cap;
    uint64_t n_total;
    pcre2_code *re;
    pcre2_match_data *md;
    bool jit;
};

int
vocab_bpe_words_new(struct vocab_bpe_words **out, struct tok_err *err)
{
    struct vocab_bpe_words *w;
    int ec;
    PCRE2_SIZE eo;

    *out = NULL;
    w = (struct vocab_bpe_words *)calloc(1, sizeof(*w));
    if (w == NULL)
        return nomem(err);
    w->mask = 1023;
    w->slots = (struct word_slot *)calloc(w->mask + 1, sizeof(*w->slots));
    w->re = pcre2_compile(
        (PCRE2_SPTR)tok_bpe_gpt2_pattern(), PCRE2_ZERO_TERMINATED,
        PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &ec, &eo, NULL);
    if (w->slots == NULL || w->re == NULL)
        goto fail;
    /* JIT is an optimization; the interpreter gives the same result. */
    w->jit = pcre2_jit_compile(w->re, PCRE2_JIT_COMPLETE) == 0;
    w->md = pcre2_match_data_create(1, NULL);
    if (w->md == NULL)
        goto fail;
    *out = w;
    return 0;
fail:
    vocab_bpe_words_free(w);
    return nomem(err);
}

void
vocab_bpe_words_free(struct vocab_bpe_words *w)
{
    if (w == NULL)
        return;
    free(w->slots);
    free(w->arena);
    pcre2_match_data_free(w->md);
    pcre2_code_free(w->re);
    free(w);
}

size_t
vocab_bpe_words_distinct(const struct vocab_bpe_words *w)
{
    return w->n;
}

uint64_t
vocab_bpe_words_total(const struct vocab_bpe_words *w)
{
    return w->n_total;
}

static int
words_rehash(struct vocab_bpe_words *w)
{
    size_t mask = w->mask * 2 + 1;
    struct word_slot *s =
        (struct word_slot *)calloc(mask + 1, sizeof(*w->slots));

    if (s == NULL)
        return TOK_ENOMEM;
    for (size_t i = 0; i <= w->mask; i++) {
        size_t j;

        if (w->slots[i].len == 0)
            continue;
        for (j = w->slots[i].hash & mask; s[j].len; j = (j + 1) & mask)
            ;
        s[j] = w->slots[i];
    }
    free(w->slots);
    w->slots = s;
    w->mask = mask;
    return 0;
}

/* words_add: count word s[0..len) count more times. */
static int
words_add(struct vocab_bpe_words *w, const char *s, size_t len, uint64_t h,
          uint64_t count)
{
    size_t i;

    assert(len > 0);
    if (len > UINT32_MAX)
        return TOK_ERANGE;
    for (i = h & w->mask; w->slots[i].len; i = (i + 1) & w->mask) {
        struct word_slot *sl = &w->slots[i];

        if (sl->hash == h && sl->len == len &&
            memcmp(w->arena + sl->off, s, len) == 0) {
            sl->count += count;
            w->n_total += count;
            return 0;
        }
    }
    if (grow(&w->arena, &w->arena_cap, w->arena_len + len, 1) < 0)
        return TOK_ENOMEM;
    memcpy(w->arena + w->arena_len, s, len);
    w->slots[i].hash = h;
    w->slots[i].count = count;
    w->slots[i].off = w->arena_len;
    w->slots[i].len = (uint32_t)len;
    w->arena_len += len;
    w->n++;
    w->n_total += count;
    /* At most half full, so that probes stay short. */
    if (w->n * 2 > w->mask)
        return words_rehash(w);
    return 0;
}

static int
re_match(const struct vocab_bpe_words *w, const char *s, size_t len, size_t pos)
{
    /* The line is valid UTF-8, so pcre2_match()'s checks are not needed. */
    if (w->jit)
        return pcre2_jit_match(w->re, (PCRE2_SPTR)s, len, pos,
                               PCRE2_NO_UTF_CHECK, w->md, NULL);
    return pcre2_match(w->re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK,
                       w->md, NULL);
}

/* count_line: pre-tokenize one line (valid UTF-8) and count its words.
 * As HF's ByteLevel pre-tokenizer: the regex's matches, and any text
 * between them, are the words. */
static int
count_line(struct vocab_bpe_words *w, const char *s, size_t len,
           struct tok_err *err)
{
    size_t pos = 0;
    int rc;

    while (pos < len) {
        const PCRE2_SIZE *ov;

        rc = re_match(w, s, len, pos);
        if (rc == PCRE2_ERROR_NOMATCH)
            return words_add(w, s + pos, len - pos,
                             hash_bytes(s + pos, len - pos), 1);
        if (rc < 0) {
            PCRE2_UCHAR msg[120];

            pcre2_get_error_message(rc, msg, sizeof(msg));
            return set_err(err, TOK_ERANGE,
                           "cannot split the line at byte %zu: %s", pos,
                           (const char *)msg);
        }
        ov = pcre2_get_ovector_pointer(w->md);
        assert(ov[1] > ov[0] && ov[0] >= pos);
        if (ov[0] > pos &&
            (rc = words_add(w, s + pos, ov[0] - pos,
                            hash_bytes(s + pos, ov[0] - pos), 1)) < 0)
            return rc;
        if ((rc = words_add(w, s + ov[0], ov[1] - ov[0],
                            hash_bytes(s + ov[0], ov[1] - ov[0]), 1)) < 0)
            return rc;
        pos = ov[1];
    }
    return 0;
}

int
vocab_bpe_words_add_lines(struct vocab_bpe_words *w, const char *text,
                          size_t len, size_t *bad_line, struct tok_err *err)
{
    size_t line = 0;
    const char *end = text + len;

    while (text < end) {
        const char *nl = (const char *)memchr(text, '\n', (size_t)(end - text));
        size_t n = nl ? (size_t)(nl - text) + 1 : (size_t)(end - text);
        size_t bad = tok_utf8_check(text, n);
        int rc;

        if (bad != n) {
            if (bad_line != NULL)
                *bad_line = line;
            return set_err(err, TOK_EUTF8,
                           "invalid UTF-8 at byte %zu of the line "
                           "(byte 0x%02X)",
                           bad + 1, (unsigned)(unsigned char)text[bad]);
        }
        if ((rc = count_line(w, text, n, err)) < 0) {
            if (bad_line != NULL)
                *bad_line = line;
            if (rc == TOK_ENOMEM)
                return nomem(err);
            if (rc == TOK_ERANGE && err != NULL && err->code != TOK_ERANGE)
                set_err(err, rc, "a word of 4 GiB or more");
            return rc;
        }
        text += n;
        line++;
    }
    return 0;
}

int
vocab_bpe_words_merge(struct vocab_bpe_words *dst,
                      const struct vocab_bpe_words *src, struct tok_err *err)
{
    for (size_t i = 0; i <= src->mask; i++) {
        const struct word_slot *sl = &src->slots[i];

        if (sl->len && words_add(dst, src->arena + sl->off, sl->len, sl->hash,
                                 sl->count) < 0)
            return nomem(err);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Tokens                                                                    */

/* The vocab being built: id -> string (in the byte alphabet) and back. */
struct tokens {
    char *arena;
    size_t arena_len, arena_cap;
    uint64_t *off; /* by id */
    uint32_t *len;
    size_t n, cap;
    uint32_t *slots; /* id + 1, 0 is empty */
    uint64_t *slot_hash;
    size_t mask;
};

static int64_t
tokens_find(const struct tokens *t, const char *s, size_t len, uint64_t h)
{
    for (size_t i = h & t->mask; t->slots[i]; i = (i + 1) & t->mask) {
        uint32_t id = t->slots[i] - 1;

        if (t->slot_hash[i] == h && t->len[id] == len &&
            memcmp(t->arena + t->off[id], s, len) == 0)
            return id;
    }
    return -1;
}

static int
tokens_rehash(struct tokens *t)
{
    size_t mask = t->mask ? t->mask * 2 + 1 : 1023;
    uint32_t *slots = (uint32_t *)calloc(mask + 1, sizeof(*slots));
    uint64_t *hs = (uint64_t *)malloc((mask + 1) * sizeof(*hs));

    if (slots == NULL || hs == NULL) {
        free(slots);
        free(hs);
        return TOK_ENOMEM;
    }
    for (size_t i = 0; i < t->n; i++) {
        uint64_t h = hash_bytes(t->arena + t->off[i], t->len[i]);
        size_t j;

        for (j = h & mask; slots[j]; j = (j + 1) & mask)
            ;
        slots[j] = (uint32_t)i + 1;
        hs[j] = h;
    }
    free(t->slots);
    free(t->slot_hash);
    t->slots = slots;
    t->slot_hash = hs;
    t->mask = mask;
    return 0;
}

/* tokens_intern: the id of s[0..len), added if new.  Returns the id or
 * TOK_ENOMEM. */
static int64_t
tokens_intern(struct tokens *t, const char *s, size_t len)
{
    uint64_t h = hash_bytes(s, len);
    int64_t id = tokens_find(t, s, len, h);
    size_t i;

    if (id >= 0)
        return id;
    if (t->n >= INT32_MAX || len > UINT32_MAX)
        return TOK_ERANGE;
    if (grow(&t->off, &t->cap, t->n + 1, sizeof(*t->off)) < 0 ||
        (t->len = (uint32_t *)realloc(t->len, t->cap * sizeof(*t->len))) ==
            NULL ||
        grow(&t->arena, &t->arena_cap, t->arena_len + len + 1, 1) < 0)
        return TOK_ENOMEM;
    memcpy(t->arena + t->arena_len, s, len);
    t->arena[t->arena_len + len] = '\0';
    t->off[t->n] = t->arena_len;
    t->len[t->n] = (uint32_t)len;
    t->arena_len += len + 1;
    for (i = h & t->mask; t->slots[i]; i = (i + 1) & t->mask)
        ;
    t->slots[i] = (uint32_t)t->n + 1;
    t->slot_hash[i] = h;
    t->n++;
    if (t->n * 2 > t->mask && tokens_rehash(t) < 0)
        return TOK_ENOMEM;
    return (int64_t)t->n - 1;
}

static void
tokens_release(struct tokens *t)
{
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->slots);
    free(t->slot_hash);
}

/* ------------------------------------------------------------------------ */
/* Pair counts                                                               */

#define EMPTY_PAIR UINT64_MAX

static uint64_t
pair_of(uint32_t a, uint32_t b)
{
    return (uint64_t)a << 32 | b;
}

/* pair -> count, HF's pair_counts.  Entries are never removed. */
struct pair_map {
    uint64_t *key;
    int64_t *count;
    uint32_t *idx; /* the pair's index while the queue is first built */
    size_t mask, n;
};

static int
pair_map_init(struct pair_map *m, size_t n_hint)
{
    m->mask = 1023;
    while (m->mask < n_hint * 2)
        m->mask = m->mask * 2 + 1;
    m->n = 0;
    m->key = (uint64_t *)malloc((m->mask + 1) * sizeof(*m->key));
    m->count = (int64_t *)malloc((m->mask + 1) * sizeof(*m->count));
    m->idx = (uint32_t *)malloc((m->mask + 1) * sizeof(*m->idx));
    if (m->key == NULL || m->count == NULL || m->idx == NULL)
        return TOK_ENOMEM;
    memset(m->key, 0xFF, (m->mask + 1) * sizeof(*m->key));
    return 0;
}

static void
pair_map_release(struct pair_map *m)
{
    free(m->key);
    free(m->count);
    free(m->idx);
}

static int
pair_map_rehash(struct pair_map *m)
{
    struct pair_map n;

    if (pair_map_init(&n, (m->mask + 1)) < 0) {
        pair_map_release(&n);
        return TOK_ENOMEM;
    }
    for (size_t i = 0; i <= m->mask; i++) {
        size_t j;

        if (m->key[i] == EMPTY_PAIR)
            continue;
        for (j = mix64(m->key[i]) & n.mask; n.key[j] != EMPTY_PAIR;
             j = (j + 1) & n.mask)
            ;
        n.key[j] = m->key[i];
        n.count[j] = m->count[i];
        n.idx[j] = m->idx[i];
    }
    n.n = m->n;
    pair_map_release(m);
    *m = n;
    return 0;
}

/* pair_map_slot: the slot of pair, inserted with count 0 if new; or -1
 * when out of memory. */
static ptrdiff_t
pair_map_slot(struct pair_map *m, uint64_t pair)
{
    size_t i;

    for (i = mix64(pair) & m->mask; m->key[i] != EMPTY_PAIR;
         i = (i + 1) & m->mask)
        if (m->key[i] == pair)
            return (ptrdiff_t)i;
    if ((m->n + 1) * 2 > m->mask) {
        if (pair_map_rehash(m) < 0)
            return -1;
        return pair_map_slot(m, pair);
    }
    m->key[i] = pair;
    m->count[i] = 0;
    m->idx[i] = UINT32_MAX;
    m->n++;
    return (ptrdiff_t)i;
}

static int64_t
pair_map_count(const struct pair_map *m, uint64_t pair)
{
    for (size_t i = mix64(pair) & m->mask; m->key[i] != EMPTY_PAIR;
         i = (i + 1) & m->mask)
        if (m->key[i] == pair)
            return m->count[i];
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The queue: HF's BinaryHeap<Merge>                                         */

/* A candidate merge, HF's Merge: a pair, its count when pushed, and the
 * words where it was seen (HF's `pos`), which a merge visits.  A pair can
 * have several entries, each with its own words. */
struct cand {
    uint64_t count;
    uint64_t pair;
    uint32_t *words;
    uint32_t n_words;
    bool owned; /* words is malloc'd (else it is in the first lists) */
};

struct queue {
    struct cand *c;
    size_t n, cap;
};

/* Merge's Ord: the higher count first, then the smaller pair. */
static bool
cand_before(const struct cand *a, const struct cand *b)
{
    return a->count != b->count ? a->count > b->count : a->pair < b->pair;
}

static int
queue_push(struct queue *q, const struct cand *c)
{
    size_t i;

    if (grow(&q->c, &q->cap, q->n + 1, sizeof(*q->c)) < 0)
        return TOK_ENOMEM;
    for (i = q->n++; i > 0; i = (i - 1) / 2) {
        size_t parent = (i - 1) / 2;

        if (!cand_before(c, &q->c[parent]))
            break;
        q->c[i] = q->c[parent];
    }
    q->c[i] = *c;
    return 0;
}

static struct cand
queue_pop(struct queue *q)
{
    struct cand top = q->c[0], last = q->c[--q->n];
    size_t i = 0;

    for (;;) {
        size_t k = 2 * i + 1;

        if (k >= q->n)
            break;
        if (k + 1 < q->n && cand_before(&q->c[k + 1], &q->c[k]))
            k++;
        if (!cand_before(&q->c[k], &last))
            break;
        q->c[i] = q->c[k];
        i = k;
    }
    if (q->n > 0)
        q->c[i] = last;
    return top;
}

/* ------------------------------------------------------------------------ */
/* Training                                                                  */

/* A distinct word: its symbols (token ids) at sym + off, n_sym of them. */
struct word {
    uint64_t count;
    uint64_t off;
    uint32_t n_sym;
};

/* The pairs a merge step made (HF's where_to_update): pair -> the words
 * that gained it, each once. */
struct step_pairs {
    uint64_t *key; /* hash table of pairs, EMPTY_PAIR is empty */
    uint32_t *slot_entry;
    size_t mask;
    struct step_entry {
        uint64_t pair;
        uint32_t *words;
        uint32_t n, cap;
    } * e;
    size_t n, cap;
};

struct trainer {
    const struct vocab_bpe_words *in;
    struct tokens tok;
    struct word *words;
    size_t n_words;
    uint32_t *sym;
    struct pair_map pairs;
    struct queue queue;
    uint32_t *first_words; /* the first lists, one block */
    struct step_pairs step;
    uint64_t *merge_pair; /* the merges in order */
    size_t n_merges, cap_merges;
};

static int
step_init(struct step_pairs *s)
{
    s->mask = 255;
    s->key = (uint64_t *)malloc((s->mask + 1) * sizeof(*s->key));
    s->slot_entry = (uint32_t *)malloc((s->mask + 1) * sizeof(uint32_t));
    if (s->key == NULL || s->slot_entry == NULL)
        return TOK_ENOMEM;
    memset(s->key, 0xFF, (s->mask + 1) * sizeof(*s->key));
    return 0;
}

static void
step_release(struct step_pairs *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->e[i].words);
    free(s->e);
    free(s->key);
    free(s->slot_entry);
}

/* step_clear: forget the pairs (keeping the memory). */
static void
step_clear(struct step_pairs *s)
{
    for (size_t i = 0; i < s->n; i++) {
        size_t j;

        for (j = mix64(s->e[i].pair) & s->mask; s->key[j] != s->e[i].pair;
             j = (j + 1) & s->mask)
            ;
        s->key[j] = EMPTY_PAIR;
        s->e[i].n = 0;
    }
    /* Every key goes, so the probe chains stay whole. */
    s->n = 0;
}

static int
step_rehash(struct step_pairs *s)
{
    size_t mask = s->mask * 2 + 1;
    uint64_t *key = (uint64_t *)malloc((mask + 1) * sizeof(*key));
    uint32_t *se = (uint32_t *)malloc((mask + 1) * sizeof(*se));

    if (key == NULL || se == NULL) {
        free(key);
        free(se);
        return TOK_ENOMEM;
    }
    memset(key, 0xFF, (mask + 1) * sizeof(*key));
    for (size_t i = 0; i < s->n; i++) {
        size_t j;

        for (j = mix64(s->e[i].pair) & mask; key[j] != EMPTY_PAIR;
             j = (j + 1) & mask)
            ;
        key[j] = s->e[i].pair;
        se[j] = (uint32_t)i;
    }
    free(s->key);
    free(s->slot_entry);
    s->key = key;
    s->slot_entry = se;
    s->mask = mask;
    return 0;
}

/* step_add: word w gained pair. */
static int
step_add(struct step_pairs *s, uint64_t pair, uint32_t w)
{
    struct step_entry *e;
    size_t j;

    for (j = mix64(pair) & s->mask; s->key[j] != EMPTY_PAIR;
         j = (j + 1) & s->mask)
        if (s->key[j] == pair)
            break;
    if (s->key[j] == EMPTY_PAIR) {
        if (s->n >= s->cap) {
            size_t old = s->cap;

            if (grow(&s->e, &s->cap, s->n + 1, sizeof(*s->e)) < 0)
                return TOK_ENOMEM;
            memset(s->e + old, 0, (s->cap - old) * sizeof(*s->e));
        }
        s->key[j] = pair;
        s->slot_entry[j] = (uint32_t)s->n;
        s->e[s->n].pair = pair;
        s->e[s->n].n = 0;
        s->n++;
        if (s->n * 2 > s->mask && step_rehash(s) < 0)
            return TOK_ENOMEM;
        e = &s->e[s->n - 1];
    } else {
        e = &s->e[s->slot_entry[j]];
    }
    /* A word's changes come together, so the last word is the only
     * possible repeat. */
    if (e->n > 0 && e->words[e->n - 1] == w)
        return 0;
    if (e->n == e->cap) {
        size_t cap = e->cap;

        if (grow(&e->words, &cap, (size_t)e->n + 1, sizeof(*e->words)) < 0)
            return TOK_ENOMEM;
        e->cap = (uint32_t)cap;
    }
    e->words[e->n++] = w;
    return 0;
}

static int
cmp_word_slot(const void *pa, const void *pb, void *arena)
{
    const struct word_slot *a = (const struct word_slot *)pa;
    const struct word_slot *b = (const struct word_slot *)pb;
    const char *base = (const char *)arena;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(base + a->off, base + b->off, n);

    if (c != 0)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* setup: the special tokens, the alphabet, and the words as symbols, in
 * the order of their bytes (so that nothing depends on how they were
 * counted). */
static int
setup(struct trainer *t, const struct vocab_bpe_options *opt,
      struct tok_err *err)
{
    const struct vocab_bpe_words *in = t->in;
    uint32_t byte_cp[256], byte_id[256];
    struct word_slot *ws;
    size_t n_sym = 0;
    int64_t id;

    if (tokens_rehash(&t->tok) < 0)
        return nomem(err);
    /* 1. Special tokens, in the order given, each once. */
    for (size_t i = 0; i < opt->n_special; i++)
        if (tokens_intern(&t->tok, opt->special[i], strlen(opt->special[i])) <
            0)
            return nomem(err);
    /* 2. The alphabet: the 256 symbols in code point order (HF sorts the
     * chars it has seen plus its initial alphabet, and a byte-level word
     * has no other). */
    tok_bpe_gpt2_alphabet(byte_cp);
    for (uint32_t cp = 0; cp < 0x144; cp++)
        for (int c = 0; c < 256; c++) {
            char s[4];
            size_t n;

            if (byte_cp[c] != cp)
                continue;
            n = tok_utf8_encode(cp, s);
            if ((id = tokens_intern(&t->tok, s, n)) < 0)
                return nomem(err);
            byte_id[c] = (uint32_t)id;
        }
    /* 3. The words. */
    ws = (struct word_slot *)malloc((in->n ? in->n : 1) * sizeof(*ws));
    t->words = (struct word *)malloc((in->n ? in->n : 1) * sizeof(*t->words));
    if (ws == NULL || t->words == NULL) {
        free(ws);
        return nomem(err);
    }
    for (size_t i = 0; i <= in->mask; i++)
        if (in->slots[i].len)
            ws[t->n_words++] = in->slots[i];
    assert(t->n_words == in->n);
    qsort_r(ws, t->n_words, sizeof(*ws), cmp_word_slot, in->arena);
    for (size_t i = 0; i < t->n_words; i++)
        n_sym += ws[i].len;
    t->sym = (uint32_t *)malloc((n_sym ? n_sym : 1) * sizeof(*t->sym));
    if (t->sym == NULL) {
        free(ws);
        return nomem(err);
    }
    n_sym = 0;
    for (size_t i = 0; i < t->n_words; i++) {
        const unsigned char *s = (const unsigned char *)in->arena + ws[i].off;

        t->words[i].count = ws[i].count;
        t->words[i].off = n_sym;
        t->words[i].n_sym = ws[i].len;
        for (uint32_t k = 0; k < ws[i].len; k++)
            t->sym[n_sym++] = byte_id[s[k]];
    }
    free(ws);
    return 0;
}

/* count_pairs: HF's count_pairs() and the first queue: every pair of
 * adjacent symbols with its count, and one entry per pair with the words
 * that have it. */
static int
count_pairs(struct trainer *t, struct tok_err *err)
{
    uint32_t *n_in, *last, *fill;
    uint64_t *start;
    size_t n_pairs = 0, total = 0;
    int rc = 0;

    if (pair_map_init(&t->pairs, t->n_words) < 0)
        return nomem(err);
    /* Pass 1: counts, and in how many words each pair is. */
    n_in = last = fill = NULL;
    start = NULL;
    size_t cap = 0;
    for (size_t w = 0; w < t->n_words; w++) {
        const uint32_t *s = t->sym + t->words[w].off;

        for (uint32_t k = 0; k + 1 < t->words[w].n_sym; k++) {
            ptrdiff_t j = pair_map_slot(&t->pairs, pair_of(s[k], s[k + 1]));
            uint32_t p;

            if (j < 0)
                goto nomem;
            if (t->pairs.idx[j] == UINT32_MAX) {
                if (n_pairs >= cap) {
                    size_t c2 = cap;

                    if (grow(&n_in, &c2, n_pairs + 1, sizeof(*n_in)) < 0 ||
                        grow(&last, &cap, n_pairs + 1, sizeof(*last)) < 0)
                        goto nomem;
                }
                t->pairs.idx[j] = (uint32_t)n_pairs;
                n_in[n_pairs] = 0;
                last[n_pairs] = UINT32_MAX;
                n_pairs++;
            }
            p = t->pairs.idx[j];
            t->pairs.count[j] += (int64_t)t->words[w].count;
            if (last[p] != w) {
                last[p] = (uint32_t)w;
                n_in[p]++;
                total++;
            }
        }
    }
    /* Pass 2: the lists of words, in one block. */
    start = (uint64_t *)malloc((n_pairs + 1) * sizeof(*start));
    fill = (uint32_t *)malloc((n_pairs ? n_pairs : 1) * sizeof(*fill));
    t->first_words = (uint32_t *)malloc((total ? total : 1) * sizeof(uint32_t));
    if (start == NULL || fill == NULL || t->first_words == NULL)
        goto nomem;
    start[0] = 0;
    for (size_t p = 0; p < n_pairs; p++) {
        start[p + 1] = start[p] + n_in[p];
        fill[p] = 0;
        last[p] = UINT32_MAX;
    }
    for (size_t w = 0; w < t->n_words; w++) {
        const uint32_t *s = t->sym + t->words[w].off;

        for (uint32_t k = 0; k + 1 < t->words[w].n_sym; k++) {
            ptrdiff_t j = pair_map_slot(&t->pairs, pair_of(s[k], s[k + 1]));
            uint32_t p = t->pairs.idx[j];

            if (last[p] != w) {
                last[p] = (uint32_t)w;
                t->first_words[start[p] + fill[p]++] = (uint32_t)w;
            }
        }
    }
    /* The queue: every pair with a positive count. */
    for (size_t i = 0; i <= t->pairs.mask; i++) {
        struct cand c;
        uint32_t p;

        if (t->pairs.key[i] == EMPTY_PAIR || t->pairs.count[i] <= 0)
            continue;
        p = t->pairs.idx[i];
        c.count = (uint64_t)t->pairs.count[i];
        c.pair = t->pairs.key[i];
        c.words = t->first_words + start[p];
        c.n_words = n_in[p];
        c.owned = false;
        if (queue_push(&t->queue, &c) < 0)
            goto nomem;
    }
    goto done;
nomem:
    rc = nomem(err);
done:
    free(n_in);
    free(last);
    free(fill);
    free(start);
    return rc;
}

/* change: HF's pair_counts update for one change of a word. */
static int
change(struct trainer *t, uint32_t a, uint32_t b, int sign, uint32_t w)
{
    uint64_t pair = pair_of(a, b);
    ptrdiff_t j = pair_map_slot(&t->pairs, pair);

    if (j < 0)
        return TOK_ENOMEM;
    t->pairs.count[j] += sign * (int64_t)t->words[w].count;
    if (sign > 0)
        return step_add(&t->step, pair, w);
    return 0;
}

/* merge_word: HF's Word::merge(): replace each (a, b) of word w by id,
 * left to right, and report the pairs lost and gained. */
static int
merge_word(struct trainer *t, uint32_t w, uint32_t a, uint32_t b, uint32_t id)
{
    uint32_t *s = t->sym + t->words[w].off;
    uint32_t n = t->words[w].n_sym, r = 0, o = 0;
    int rc;

    while (r < n) {
        if (s[r] == a && r + 1 < n && s[r + 1] == b) {
            if (o > 0 && ((rc = change(t, s[o - 1], a, -1, w)) < 0 ||
                          (rc = change(t, s[o - 1], id, 1, w)) < 0))
                return rc;
            s[o++] = id;
            r += 2;
            if (r < n && ((rc = change(t, b, s[r], -1, w)) < 0 ||
                          (rc = change(t, id, s[r], 1, w)) < 0))
                return rc;
        } else {
            s[o++] = s[r++];
        }
    }
    t->words[w].n_sym = o;
    return 0;
}

static int
add_merge(struct trainer *t, uint64_t pair)
{
    if (grow(&t->merge_pair, &t->cap_merges, t->n_merges + 1,
             sizeof(*t->merge_pair)) < 0)
        return TOK_ENOMEM;
    t->merge_pair[t->n_merges++] = pair;
    return 0;
}

/* merge_loop: HF's step 5, "Do merges". */
static int
merge_loop(struct trainer *t, const struct vocab_bpe_options *opt,
           struct tok_err *err)
{
    struct tok_buf joined;
    int rc = 0;

    tok_buf_init(&joined);
    while (t->tok.n < opt->vocab_size && t->queue.n > 0) {
        struct cand top = queue_pop(&t->queue);
        uint64_t now = (uint64_t)pair_map_count(&t->pairs, top.pair);
        uint32_t a = (uint32_t)(top.pair >> 32), b = (uint32_t)top.pair;
        int64_t id;

        /* An entry whose count is out of date goes back with the count of
         * now (and its own words). */
        if (top.count != now) {
            top.count = now;
            if (queue_push(&t->queue, &top) < 0)
                goto nomem;
            continue;
        }
        if (top.count < 1 || opt->min_frequency > top.count) {
            if (top.owned)
                free(top.words);
            break;
        }
        tok_buf_clear(&joined);
        if (tok_buf_append(&joined, t->tok.arena + t->tok.off[a],
                           t->tok.len[a]) < 0 ||
            tok_buf_append(&joined, t->tok.arena + t->tok.off[b],
                           t->tok.len[b]) < 0)
            goto nomem;
        id = tokens_intern(&t->tok, joined.data, joined.len);
        if (id == TOK_ERANGE) {
            rc = set_err(err, TOK_ERANGE, "too many tokens");
            goto done;
        }
        if (id < 0 || add_merge(t, top.pair) < 0)
            goto nomem;
        for (uint32_t i = 0; i < top.n_words; i++)
            if (merge_word(t, top.words[i], a, b, (uint32_t)id) < 0)
                goto nomem;
        if (top.owned)
            free(top.words);
        /* The pairs that gained words go in with their count of now. */
        for (size_t i = 0; i < t->step.n; i++) {
            struct step_entry *e = &t->step.e[i];
            int64_t count = pair_map_count(&t->pairs, e->pair);
            struct cand c;

            if (count <= 0)
                continue;
            c.count = (uint64_t)count;
            c.pair = e->pair;
            c.words = e->words;
            c.n_words = e->n;
            c.owned = true;
            if (queue_push(&t->queue, &c) < 0)
                goto nomem;
            e->words = NULL; /* the queue owns them now */
            e->cap = 0;
        }
        step_clear(&t->step);
    }
    goto done;
nomem:
    rc = nomem(err);
done:
    tok_buf_release(&joined);
    return rc;
}

/* write_files: vocab.json (serde_json, by id, no newline) and merges.txt
 * (a "#version: 0.2" line, then the merges in order; a pair merged twice
 * appears once, at its last place, as HF's merges map keeps it). */
static int
write_files(const struct trainer *t, struct tok_buf *vocab_json,
            struct tok_buf *merges_txt, struct tok_err *err)
{
    struct pair_map last;
    int rc = 0;

    if (tok_buf_append(vocab_json, "{", 1) < 0)
        return nomem(err);
    for (size_t id = 0; id < t->tok.n; id++) {
        char num[24];
        int n = snprintf(num, sizeof(num), ":%zu", id);

        if ((id > 0 && tok_buf_append(vocab_json, ",", 1) < 0) ||
            tok_json_string(vocab_json, t->tok.arena + t->tok.off[id],
                            t->tok.len[id]) < 0 ||
            tok_buf_append(vocab_json, num, (size_t)n) < 0)
            return nomem(err);
    }
    if (tok_buf_append(vocab_json, "}", 1) < 0 ||
        tok_buf_append(merges_txt, "#version: 0.2\n", 14) < 0)
        return nomem(err);
    if (pair_map_init(&last, t->n_merges) < 0)
        goto nomem;
    for (size_t i = 0; i < t->n_merges; i++) {
        ptrdiff_t j = pair_map_slot(&last, t->merge_pair[i]);

        if (j < 0)
            goto nomem;
        last.count[j] = (int64_t)i;
    }
    for (size_t i = 0; i < t->n_merges; i++) {
        uint32_t a = (uint32_t)(t->merge_pair[i] >> 32);
        uint32_t b = (uint32_t)t->merge_pair[i];

        if (pair_map_count(&last, t->merge_pair[i]) != (int64_t)i)
            continue;
        if (tok_buf_append(merges_txt, t->tok.arena + t->tok.off[a],
                           t->tok.len[a]) < 0 ||
            tok_buf_append(merges_txt, " ", 1) < 0 ||
            tok_buf_append(merges_txt, t->tok.arena + t->tok.off[b],
                           t->tok.len[b]) < 0 ||
            tok_buf_append(merges_txt, "\n", 1) < 0)
            goto nomem;
    }
    goto done;
nomem:
    rc = nomem(err);
done:
    pair_map_release(&last);
    return rc;
}

int64_t
vocab_bpe_train(const struct vocab_bpe_words *words,
                const struct vocab_bpe_options *opt, struct tok_buf *vocab_json,
                struct tok_buf *merges_txt, struct tok_err *err)
{
    struct trainer t;
    int rc;

    for (size_t i = 0; i < opt->n_special; i++) {
        size_t len = strlen(opt->special[i]);

        if (len == 0 || tok_utf8_check(opt->special[i], len) != len)
            return set_err(err, TOK_EINVAL,
                           "special token %zu is empty or not UTF-8", i + 1);
    }
    if (words->n == 0)
        return set_err(err, TOK_EINVAL, "no words to train on");
    memset(&t, 0, sizeof(t));
    t.in = words;
    if ((rc = setup(&t, opt, err)) < 0 || (rc = count_pairs(&t, err)) < 0)
        goto done;
    if (step_init(&t.step) < 0) {
        rc = nomem(err);
        goto done;
    }
    if ((rc = merge_loop(&t, opt, err)) < 0 ||
        (rc = write_files(&t, vocab_json, merges_txt, err)) < 0)
        goto done;
    rc = 0;
done:
    for (size_t i = 0; i < t.queue.n; i++)
        if (t.queue.c[i].owned)
            free(t.queue.c[i].words);
    free(t.queue.c);
    step_release(&t.step);
    pair_map_release(&t.pairs);
    tokens_release(&t.tok);
    free(t.words);
    free(t.sym);
    free(t.first_words);
    free(t.merge_pair);
    return rc < 0 ? rc : (int64_t)t.tok.n;
}
