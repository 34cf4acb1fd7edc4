/* SPDX-License-Identifier: MIT */
/*
 * tok_bpe.c: GPT-2 byte-level BPE, as Hugging Face tokenizers'
 * ByteLevelBPETokenizer(vocab, merges) does it: vocab.json and merges.txt,
 * GPT-2's pre-tokenization regex (PCRE2), the bytes-to-unicode alphabet,
 * and merges applied lowest rank first with HF's own priority queue, so
 * that even odd merge tables give HF's ids.  Decoding maps the alphabet
 * back to bytes.
 */
#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok_int.h"

/* GPT-2's pattern.  Oniguruma (HF) and Python's regex module (GPT-2) take
 * \s to be Unicode White_Space, which has U+0085 and PCRE2's \s has not,
 * so the set is spelled out. */
#define WS                                                                 \
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
    "\\x{202F}\\x{205F}\\x{3000}"
static const char gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+"
    "|[" WS "]+(?![^" WS "])|[" WS "]+";

/* The alphabet's code points are U+0021..U+0143. */
#define CP_LIMIT 0x144

/* A slot of the table of whole tokens.  A token of up to WHOLE_INLINE
 * bytes has them in w, zero-padded, so a hit costs one cache line; a
 * longer one has its first 8 bytes in w[0] and its offset in b->raw in
 * w[1]. */
struct whole_slot {
    uint64_t w[2];
    uint32_t len; /* 0: an empty slot */
    tok_id id;
};

#define WHOLE_INLINE 16

/* A slot of the pair table: (left id, right id) -> (rank, merged id). */
struct merge_slot {
    uint64_t pair; /* left << 32 | right, or EMPTY_PAIR */
    uint32_t rank;
    tok_id id;
};

#define EMPTY_PAIR UINT64_MAX

/* A slot of by_str: an index into entries (-1 when empty) and the high
 * bits of the token's hash, so most misses cost no string compare. */
struct str_slot {
    uint32_t tag;
    int32_t entry;
};

struct tok_bpe {
    char *arena; /* token bytes, each NUL-terminated */
    size_t arena_len, arena_cap;
    struct tok_entry *entries; /* one per distinct token */
    size_t n_entries, cap_entries;
    struct str_slot *by_str; /* token bytes -> entry */
    size_t str_mask;
    int32_t *by_id; /* id -> entry, hashed by id; -1 is empty */
    size_t id_mask;
    struct merge_slot *merges;
    size_t merge_mask, n_merges;
    /* The tokens that BPE makes from their own bytes, by those bytes: most
     * words of a text are one, and one look-up replaces their merging. */
    struct whole_slot *whole;
    size_t whole_mask;
    char *raw;                 /* the bytes of those longer than WHOLE_INLINE */
    bool shared_ids;           /* two tokens have the same id */
    tok_id byte_id[256];       /* id of the one-symbol token of a byte */
    uint32_t byte_cp[256];     /* bytes_to_unicode */
    int16_t cp_byte[CP_LIMIT]; /* its inverse, -1 outside the alphabet */
    pcre2_code *re;
    bool re_jit;
};

/* ------------------------------------------------------------------------ */
/* Tables                                                                    */

static uint64_t
mix64(uint64_t x)
{
    x *= 0x9E3779B97F4A7C15ULL;
    return x ^ (x >> 29);
}

static size_t
table_size(size_t n)
{
    size_t slots = 16;

    while (slots < 2 * n + 2)
        slots *= 2;
    return slots;
}

static int32_t
str_find(const struct tok_bpe *b, const char *s, size_t len, uint64_t h)
{
    size_t i = (size_t)h & b->str_mask;
    uint32_t tag = (uint32_t)(h >> 32);

    for (;;) {
        const struct str_slot *sl = &b->by_str[i];
        const struct tok_entry *en;

        if (sl->entry < 0)
            return -1;
        en = &b->entries[sl->entry];
        if (sl->tag == tag && en->len == len &&
            memcmp(b->arena + en->off, s, len) == 0)
            return sl->entry;
        i = (i + 1) & b->str_mask;
    }
}

static int32_t
id_find(const struct tok_bpe *b, tok_id id)
{
    size_t i;

    if (id < 0 || b->by_id == NULL)
        return -1;
    i = (size_t)mix64((uint64_t)id) & b->id_mask;
    for (;;) {
        int32_t e = b->by_id[i];

        if (e < 0 || b->entries[e].id == id)
            return e;
        i = (i + 1) & b->id_mask;
    }
}

/* The slot of `pair`: its own, or the empty one where it would go. */
static struct merge_slot *
merge_slot(const struct tok_bpe *b, uint64_t pair)
{
    size_t i = (size_t)(mix64(pair) >> 20) & b->merge_mask;

    for (;;) {
        struct merge_slot *m = &b->merges[i];

        if (m->pair == pair || m->pair == EMPTY_PAIR)
            return m;
        i = (i + 1) & b->merge_mask;
    }
}

static const struct merge_slot *
merge_find(const struct tok_bpe *b, tok_id left, tok_id right)
{
    const struct merge_slot *m =
        merge_slot(b, (uint64_t)(uint32_t)left << 32 | (uint32_t)right);

    return m->pair == EMPTY_PAIR ? NULL : m;
}

const char *
tok_bpe_gpt2_pattern(void)
{
    return gpt2_regex;
}

void
tok_bpe_gpt2_alphabet(uint32_t byte_cp[256])
{
    uint32_t next = 0x100;

    for (int c = 0; c < 256; c++) {
        bool printable =
            (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;

        byte_cp[c] = printable ? (uint32_t)c : next++;
    }
}

static void
init_alphabet(struct tok_bpe *b)
{
    for (int i = 0; i < CP_LIMIT; i++)
        b->cp_byte[i] = -1;
    tok_bpe_gpt2_alphabet(b->byte_cp);
    for (int c = 0; c < 256; c++) {
        assert(b->byte_cp[c] < CP_LIMIT);
        b->cp_byte[b->byte_cp[c]] = (int16_t)c;
    }
}

/* ------------------------------------------------------------------------ */
/* Merging: HF's Word::merge_all()                                           */

/* A symbol of the word being merged: a token covering input bytes
 * [start, end).  prev/next link the live symbols; a dead one was merged
 * into its left neighbour.  Symbol 0 is never dead.  merge_scan() keeps
 * the merge of the symbol with its right neighbour in rank/merged. */
struct sym {
    tok_id id;
    bool dead;
    ptrdiff_t prev, next; /* -1 at the ends */
    size_t start, end;
    uint32_t rank; /* NO_RANK: no merge */
    tok_id merged;
};

#define NO_RANK UINT32_MAX

/* Words of up to this many symbols merge by scanning (merge_scan). */
#define SCAN_MAX 32

/* A candidate merge of symbol pos with its right neighbour, made when
 * that pair was (left, right). */
struct cand {
    uint32_t rank;
    tok_id id, left, right;
    size_t pos;
};

struct scratch {
    struct sym *sym;
    size_t cap_sym;
    struct cand *heap;
    size_t cap_heap, n_heap;
};

static int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap ? *cap : 64;
    void *q;

    if (need <= *cap)
        return 0;
    while (c < need)
        c *= 2;
    q = realloc(*p, c * elem);
    if (q == NULL)
        return TOK_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* The heap orders candidates as HF's BinaryHeap of Merge: lowest rank
 * first, then leftmost position. */
static bool
cand_before(const struct cand *a, const struct cand *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void
heap_push(struct scratch *s, const struct cand *c)
{
    size_t i = s->n_heap++;

    while (i > 0) {
        size_t parent = (i - 1) / 2;

        if (!cand_before(c, &s->heap[parent]))
            break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = *c;
}

static struct cand
heap_pop(struct scratch *s)
{
    struct cand top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0, n = s->n_heap;

    for (;;) {
        size_t k = 2 * i + 1;

        if (k >= n)
            break;
        if (k + 1 < n && cand_before(&s->heap[k + 1], &s->heap[k]))
            k++;
        if (!cand_before(&s->heap[k], &last))
            break;
        s->heap[i] = s->heap[k];
        i = k;
    }
    if (n > 0)
        s->heap[i] = last;
    return top;
}

/* Push the merge of live symbol pos with its right neighbour, if any. */
static void
push_pair(const struct tok_bpe *b, struct scratch *s, size_t pos)
{
    const struct merge_slot *m;
    struct cand c;

    if (s->sym[pos].next < 0)
        return;
    c.left = s->sym[pos].id;
    c.right = s->sym[s->sym[pos].next].id;
    m = merge_find(b, c.left, c.right);
    if (m == NULL)
        return;
    c.rank = m->rank;
    c.id = m->id;
    c.pos = pos;
    heap_push(s, &c);
}

/* Merge symbol pos with its right neighbour into token id. */
static void
merge_at(struct sym *sym, size_t pos, tok_id id)
{
    struct sym *cur = &sym[pos], *right = &sym[cur->next];

    cur->id = id;
    cur->end = right->end;
    cur->next = right->next;
    right->dead = true;
    if (cur->next >= 0)
        sym[cur->next].prev = (ptrdiff_t)pos;
}

/* HF's Word::merge_all(), the reference: a heap of candidate merges, each
 * checked when it comes out, since merges next to it may have changed its
 * pair since it went in. */
static int
merge_heap(const struct tok_bpe *b, struct scratch *s, size_t n)
{
    /* Each merge pushes at most two candidates and removes a symbol, so
     * the heap never holds more than 3n. */
    if (grow((void **)&s->heap, &s->cap_heap, 3 * n, sizeof(*s->heap)) < 0)
        return TOK_ENOMEM;
    s->n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        push_pair(b, s, i);
    while (s->n_heap) {
        struct cand top = heap_pop(s);
        const struct sym *cur = &s->sym[top.pos], *right;

        if (cur->dead || cur->next < 0)
            continue;
        right = &s->sym[cur->next];
        /* A stale candidate is one whose pair no longer makes its token:
         * HF compares the merged ids only, and so do we.  An unchanged
         * pair needs no look-up. */
        if (cur->id != top.left || right->id != top.right) {
            const struct merge_slot *m = merge_find(b, cur->id, right->id);

            if (m == NULL || m->id != top.id)
                continue;
        }
        merge_at(s->sym, top.pos, top.id);
        if (cur->prev >= 0)
            push_pair(b, s, (size_t)cur->prev);
        push_pair(b, s, top.pos);
    }
    return 0;
}

static void
set_rank(const struct tok_bpe *b, struct sym *sym, size_t i)
{
    const struct merge_slot *m =
        sym[i].next < 0 ? NULL : merge_find(b, sym[i].id, sym[sym[i].next].id);

    sym[i].rank = m ? m->rank : NO_RANK;
    sym[i].merged = m ? m->id : -1;
}

/* The fast path for short words: merge the live pair of lowest rank,
 * leftmost on a tie, until none has a merge, keeping each symbol's rank
 * with its right neighbour.  This is merge_heap() without its stale
 * candidates, and gives its result whenever no two tokens share an id:
 * a candidate for pair (A, B) at a symbol goes stale only when the
 * symbol or its neighbour grows, and then the symbol's pair spells a
 * longer string than A B, so its merged token (found by its string) has
 * another id, and merge_heap() skips the candidate. */
static void
merge_scan(const struct tok_bpe *b, struct sym *sym, size_t n)
{
    for (size_t i = 0; i < n; i++)
        set_rank(b, sym, i);
    for (;;) {
        uint32_t best = NO_RANK;
        ptrdiff_t at = -1;

        for (ptrdiff_t i = 0; i >= 0; i = sym[i].next) {
            if (sym[i].rank < best) {
                best = sym[i].rank;
                at = i;
            }
        }
        if (at < 0)
            return;
        merge_at(sym, (size_t)at, sym[at].merged);
        if (sym[at].prev >= 0)
            set_rank(b, sym, (size_t)sym[at].prev);
        set_rank(b, sym, (size_t)at);
    }
}

/* BPE over the bytes text[start, end): each byte becomes the symbol of its
 * alphabet character (one not in the vocab is dropped, as HF does without
 * an unknown token), then the symbols merge.  The result is the linked
 * list of live symbols from s->sym[0]; returns their number before merging
 * (0: nothing to emit) or TOK_ENOMEM.  `reference` forces merge_heap(). */
static int64_t
bpe_merge(const struct tok_bpe *b, struct scratch *s, const char *text,
          size_t start, size_t end, bool reference)
{
    size_t n = 0;

    if (grow((void **)&s->sym, &s->cap_sym, end - start, sizeof(*s->sym)) < 0)
        return TOK_ENOMEM;
    for (size_t i = start; i < end; i++) {
        tok_id id = b->byte_id[(unsigned char)text[i]];

        if (id < 0)
            continue;
        s->sym[n].id = id;
        s->sym[n].dead = false;
        s->sym[n].prev = (ptrdiff_t)n - 1;
        s->sym[n].next = (ptrdiff_t)n + 1;
        s->sym[n].start = i;
        s->sym[n].end = i + 1;
        n++;
    }
    if (n == 0)
        return 0;
    s->sym[n - 1].next = -1;
    if (!reference && n <= SCAN_MAX && !b->shared_ids)
        merge_scan(b, s->sym, n);
    else if (merge_heap(b, s, n) < 0)
        return TOK_ENOMEM;
    return (int64_t)n;
}

static void
scratch_release(struct scratch *s)
{
    free(s->sym);
    free(s->heap);
}

/* ------------------------------------------------------------------------ */
/* Whole tokens                                                              */

/* The key of s[0..len) in the table of whole tokens: its first bytes in
 * w[0..1] and the hash. */
static uint64_t
whole_key(const char *s, size_t len, uint64_t w[2])
{
    w[0] = w[1] = 0;
    if (len > WHOLE_INLINE) {
        memcpy(w, s, 8);
        return tok_hash_bytes(s, len);
    }
    memcpy(w, s, len);
    return mix64(w[0] ^ mix64(w[1] ^ len));
}

static tok_id
whole_find(const struct tok_bpe *b, const char *s, size_t len)
{
    uint64_t w[2];
    size_t i = (size_t)(whole_key(s, len, w) >> 16) & b->whole_mask;

    for (;; i = (i + 1) & b->whole_mask) {
        const struct whole_slot *sl = &b->whole[i];

        if (sl->len == 0)
            return -1;
        if (sl->len != len || sl->w[0] != w[0])
            continue;
        if (len <= WHOLE_INLINE ? sl->w[1] == w[1]
                                : memcmp(b->raw + sl->w[1], s, len) == 0)
            return sl->id;
    }
}

/* The bytes of a token (its characters through the inverse alphabet) into
 * out, which has room for len bytes; false if a character is not in the
 * alphabet. */
static bool
token_bytes(const struct tok_bpe *b, const char *t, size_t len, char *out,
            size_t *n_out)
{
    size_t n = 0;

    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(t + i, len - i, &cp);

        if (k == 0 || cp >= CP_LIMIT || b->cp_byte[cp] < 0)
            return false;
        out[n++] = (char)b->cp_byte[cp];
        i += k;
    }
    *n_out = n;
    return true;
}

/* Run BPE on the bytes of every token of two or more bytes, and index
 * those that come out as that one token.  The table is a cache computed
 * by the reference merge itself, so using it cannot change a result. */
static int
build_whole(struct tok_bpe *b)
{
    struct scratch s;
    size_t slots = table_size(b->n_entries), n_raw = 0;
    char *raw;
    int rc = 0;

    memset(&s, 0, sizeof(s));
    b->raw = malloc(b->arena_len + 1);
    b->whole = calloc(slots, sizeof(*b->whole));
    if (b->raw == NULL || b->whole == NULL)
        return TOK_ENOMEM;
    b->whole_mask = slots - 1;
    for (size_t e = 0; e < b->n_entries; e++) {
        const struct tok_entry *en = &b->entries[e];
        struct whole_slot *sl;
        uint64_t w[2];
        size_t len, i;
        int64_t n;

        raw = b->raw + n_raw;
        if (!token_bytes(b, b->arena + en->off, en->len, raw, &len) ||
            len < 2 || len > UINT32_MAX)
            continue;
        n = bpe_merge(b, &s, raw, 0, len, true);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        if (n == 0 || s.sym[0].next >= 0 || s.sym[0].id != en->id)
            continue;
        i = (size_t)(whole_key(raw, len, w) >> 16) & b->whole_mask;
        while (b->whole[i].len != 0)
            i = (i + 1) & b->whole_mask;
        sl = &b->whole[i];
        sl->w[0] = w[0];
        sl->w[1] = w[1];
        sl->len = (uint32_t)len;
        sl->id = en->id;
        if (len > WHOLE_INLINE) {
            sl->w[1] = n_raw;
            n_raw += len;
        }
    }
    scratch_release(&s);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

static int
read_file(const char *what, const char *path, char **data, size_t *len,
          struct tok_err *err)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 0;
    int rc = 0;

    *data = NULL;
    *len = 0;
    if (f == NULL)
        return tok_err_set(err, TOK_EIO, "cannot open %s '%s': %s", what, path,
                           strerror(errno));
    for (;;) {
        size_t n;

        if (*len == cap) {
            char *d;

            cap = cap ? cap * 2 : 1 << 16;
            d = realloc(*data, cap);
            if (d == NULL) {
                rc = tok_err_set(err, TOK_ENOMEM, "cannot read %s '%s': %s",
                                 what, path, tok_strerror(TOK_ENOMEM));
                goto fail;
            }
            *data = d;
        }
        n = fread(*data + *len, 1, cap - *len, f);
        *len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        rc = tok_err_set(err, TOK_EIO, "cannot read %s '%s': %s", what, path,
                         strerror(errno));
        goto fail;
    }
    fclose(f);
    return 0;
fail:
    fclose(f);
    free(*data);
    *data = NULL;
    return rc;
}

/* Add a token (distinct bytes: json-c has merged repeated keys). */
static int
entry_add(struct tok_bpe *b, const char *s, size_t len, tok_id id)
{
    struct tok_entry *en;

    if (b->arena_len + len + 1 > b->arena_cap) {
        size_t cap = b->arena_cap ? b->arena_cap : 1 << 16;
        char *a;

        while (cap < b->arena_len + len + 1)
            cap *= 2;
        a = realloc(b->arena, cap);
        if (a == NULL)
            return TOK_ENOMEM;
        b->arena = a;
        b->arena_cap = cap;
    }
    if (b->n_entries == b->cap_entries) {
        size_t cap = b->cap_entries ? 2 * b->cap_entries : 1024;
        struct tok_entry *e = realloc(b->entries, cap * sizeof(*e));

        if (e == NULL)
            return TOK_ENOMEM;
        b->entries = e;
        b->cap_entries = cap;
    }
    en = &b->entries[b->n_entries++];
    en->off = b->arena_len;
    en->len = (uint32_t)len;
    en->id = id;
    memcpy(b->arena + b->arena_len, s, len);
    b->arena[b->arena_len + len] = '\0';
    b->arena_len += len + 1;
    return 0;
}

static int
index_entries(struct tok_bpe *b)
{
    size_t n = table_size(b->n_entries);

    b->by_str = malloc(n * sizeof(*b->by_str));
    b->by_id = malloc(n * sizeof(*b->by_id));
    if (b->by_str == NULL || b->by_id == NULL)
        return TOK_ENOMEM;
    memset(b->by_str, 0xFF, n * sizeof(*b->by_str));
    memset(b->by_id, 0xFF, n * sizeof(*b->by_id));
    b->str_mask = b->id_mask = n - 1;
    for (size_t e = 0; e < b->n_entries; e++) {
        const struct tok_entry *en = &b->entries[e];
        uint64_t h = tok_hash_bytes(b->arena + en->off, en->len);
        size_t i = (size_t)h & b->str_mask;

        while (b->by_str[i].entry >= 0)
            i = (i + 1) & b->str_mask;
        b->by_str[i].entry = (int32_t)e;
        b->by_str[i].tag = (uint32_t)(h >> 32);
        /* An id given to two tokens decodes as the first of them. */
        if (id_find(b, en->id) >= 0) {
            b->shared_ids = true;
        } else {
            i = (size_t)mix64((uint64_t)en->id) & b->id_mask;
            while (b->by_id[i] >= 0)
                i = (i + 1) & b->id_mask;
            b->by_id[i] = (int32_t)e;
        }
    }
    return 0;
}

static void
line_col(const char *s, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (s[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)s[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

/* vocab.json: one JSON object of token -> id.  As HF's BPE::read_file: a
 * value that is not a number is ignored, and a number that is not a
 * non-negative integer is an error (ids must also fit tok_id here). */
static int
parse_vocab(struct tok_bpe *b, const char *data, size_t len, const char *name,
            struct tok_err *err)
{
    struct json_tokener *jt;
    struct json_object *obj = NULL;
    enum json_tokener_error je;
    size_t bad = tok_utf8_check(data, len), end;
    int rc = 0;

    if (bad != len)
        return tok_err_set(err, TOK_EFORMAT,
                           "vocab '%s': invalid UTF-8 at byte offset %zu", name,
                           bad);
    if (len > INT_MAX)
        return tok_err_set(err, TOK_EFORMAT, "vocab '%s': larger than 2 GiB",
                           name);
    jt = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
    if (jt == NULL)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    json_tokener_set_flags(jt, JSON_TOKENER_STRICT |
                                   JSON_TOKENER_ALLOW_TRAILING_CHARS);
    obj = json_tokener_parse_ex(jt, data, (int)len);
    je = json_tokener_get_error(jt);
    end = json_tokener_get_parse_end(jt);
    json_tokener_free(jt);
    if (obj == NULL || je != json_tokener_success) {
        size_t line, col;

        line_col(data, end, &line, &col);
        rc = tok_err_set(
            err, TOK_EFORMAT,
            "vocab '%s' line %zu column %zu: invalid JSON: %s", name, line, col,
            je == json_tokener_continue  ? "unexpected end of file"
            : je == json_tokener_success ? "null, not an object"
                                         : json_tokener_error_desc(je));
        goto out;
    }
    for (; end < len; end++) {
        if (data[end] != ' ' && data[end] != '\t' && data[end] != '\n' &&
            data[end] != '\r') {
            size_t line, col;

            line_col(data, end, &line, &col);
            rc = tok_err_set(err, TOK_EFORMAT,
                             "vocab '%s' line %zu column %zu: text after the "
                             "JSON object",
                             name, line, col);
            goto out;
        }
    }
    if (!json_object_is_type(obj, json_type_object)) {
        rc = tok_err_set(err, TOK_EFORMAT,
                         "vocab '%s': not a JSON object of token: id", name);
        goto out;
    }
    {
        json_object_object_foreach(obj, key, val)
        {
            int64_t id;

            if (json_object_is_type(val, json_type_double)) {
                rc = tok_err_set(err, TOK_EFORMAT,
                                 "vocab '%s': the id of '%.64s' is not an "
                                 "integer",
                                 name, key);
                goto out;
            }
            if (!json_object_is_type(val, json_type_int))
                continue; /* HF skips what is not a number */
            id = json_object_get_int64(val);
            if (id < 0 || id > INT32_MAX) {
                rc = tok_err_set(err, TOK_EFORMAT,
                                 "vocab '%s': the id of '%.64s' is out of "
                                 "range 0..%d",
                                 name, key, INT32_MAX);
                goto out;
            }
            if (entry_add(b, key, strlen(key), (tok_id)id) < 0) {
                rc = tok_err_set(err, TOK_ENOMEM, "%s",
                                 tok_strerror(TOK_ENOMEM));
                goto out;
            }
        }
    }
    if (index_entries(b) < 0)
        rc = tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
out:
    json_object_put(obj);
    return rc;
}

static bool
merge_token(const struct tok_bpe *b, const char *s, size_t len, tok_id *id,
            const char *name, size_t line, struct tok_err *err)
{
    int32_t e = str_find(b, s, len, tok_hash_bytes(s, len));

    if (e >= 0) {
        *id = b->entries[e].id;
        return true;
    }
    tok_err_set(err, TOK_EFORMAT,
                "merges '%s' line %zu: '%.*s' is not in the "
                "vocab",
                name, line, (int)(len > 64 ? 64 : len), s);
    return false;
}

/* merges.txt: lines "a b" (one space, so exactly two parts), rank = order;
 * lines starting with "#version" are skipped wherever they are, a final
 * "\r" is dropped, as HF's convert_merges_to_hashmap() does.  The parts and
 * their concatenation must be tokens of the vocab.  A pair listed twice
 * keeps its last rank (HF collects the pairs into a hash map). */
static int
parse_merges(struct tok_bpe *b, const char *data, size_t len, const char *name,
             struct tok_err *err)
{
    size_t n_lines = 0, line = 0, rank = 0, slots;
    char *joined = NULL;
    size_t cap_joined = 0;
    int rc = 0;

    for (size_t i = 0; i < len; i++)
        n_lines += data[i] == '\n';
    slots = table_size(n_lines + 1);
    b->merges = malloc(slots * sizeof(*b->merges));
    if (b->merges == NULL)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    for (size_t i = 0; i < slots; i++)
        b->merges[i].pair = EMPTY_PAIR;
    b->merge_mask = slots - 1;

    for (const char *p = data, *end = data + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *sp, *sp2;
        tok_id left, right, merged;
        struct merge_slot *m;
        size_t la, lb;

        line++;
        if (n && p[n - 1] == '\r')
            n--;
        if (tok_utf8_check(p, n) != n) {
            rc = tok_err_set(err, TOK_EFORMAT,
                             "merges '%s' line %zu: invalid UTF-8", name, line);
            goto out;
        }
        if (n >= 8 && memcmp(p, "#version", 8) == 0)
            goto next;
        sp = memchr(p, ' ', n);
        sp2 = sp ? memchr(sp + 1, ' ', n - (size_t)(sp + 1 - p)) : NULL;
        if (sp == NULL || sp2 != NULL) {
            rc = tok_err_set(err, TOK_EFORMAT,
                             "merges '%s' line %zu: expected two tokens "
                             "separated by one space",
                             name, line);
            goto out;
        }
        la = (size_t)(sp - p);
        lb = n - la - 1;
        if (la + lb + 1 > cap_joined) {
            char *j = realloc(joined, la + lb + 1);

            if (j == NULL) {
                rc = tok_err_set(err, TOK_ENOMEM, "%s",
                                 tok_strerror(TOK_ENOMEM));
                goto out;
            }
            joined = j;
            cap_joined = la + lb + 1;
        }
        memcpy(joined, p, la);
        memcpy(joined + la, sp + 1, lb);
        if (!merge_token(b, p, la, &left, name, line, err) ||
            !merge_token(b, sp + 1, lb, &right, name, line, err) ||
            !merge_token(b, joined, la + lb, &merged, name, line, err)) {
            rc = TOK_EFORMAT;
            goto out;
        }
        if (rank >= NO_RANK) {
            rc = tok_err_set(err, TOK_EFORMAT,
                             "merges '%s' line %zu: too many merges", name,
                             line);
            goto out;
        }
        m = merge_slot(b, (uint64_t)(uint32_t)left << 32 | (uint32_t)right);
        if (m->pair == EMPTY_PAIR)
            b->n_merges++;
        m->pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
        m->rank = (uint32_t)rank++;
        m->id = merged;
    next:
        p = nl ? nl + 1 : end;
    }
out:
    free(joined);
    return rc;
}

static int
compile_regex(struct tok_bpe *b, struct tok_err *err)
{
    int ec;
    PCRE2_SIZE eo;

    b->re = pcre2_compile((PCRE2_SPTR)gpt2_regex, PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &ec, &eo,
                          NULL);
    if (b->re == NULL)
        return tok_err_set(err, TOK_ENOMEM, "cannot compile the GPT-2 regex");
    /* JIT is an optimization; the interpreter gives the same result. */
    b->re_jit = pcre2_jit_compile(b->re, PCRE2_JIT_COMPLETE) == 0;
    return 0;
}

int
tok_bpe_parse(struct tok_bpe **out, const char *vocab, size_t vocab_len,
              const char *vocab_name, const char *merges, size_t merges_len,
              const char *merges_name, struct tok_err *err)
{
    struct tok_bpe *b;
    int rc;

    *out = NULL;
    b = calloc(1, sizeof(*b));
    if (b == NULL)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    init_alphabet(b);
    if ((rc = parse_vocab(b, vocab, vocab_len, vocab_name, err)) < 0 ||
        (rc = parse_merges(b, merges, merges_len, merges_name, err)) < 0 ||
        (rc = compile_regex(b, err)) < 0)
        goto fail;
    for (int c = 0; c < 256; c++) {
        char s[2];
        size_t n = tok_utf8_encode(b->byte_cp[c], s);

        b->byte_id[c] = tok_bpe_find(b, s, n);
    }
    if ((rc = build_whole(b)) < 0) {
        tok_err_set(err, rc, "%s", tok_strerror(rc));
        goto fail;
    }
    *out = b;
    return 0;
fail:
    tok_bpe_free(b);
    return rc;
}

int
tok_bpe_load(struct tok_bpe **out, const char *vocab_json,
             const char *merges_txt, struct tok_err *err)
{
    char *v = NULL, *m = NULL;
    size_t vlen, mlen;
    int rc;

    *out = NULL;
    if ((rc = read_file("vocab", vocab_json, &v, &vlen, err)) == 0 &&
        (rc = read_file("merges", merges_txt, &m, &mlen, err)) == 0)
        rc = tok_bpe_parse(out, v, vlen, vocab_json, m, mlen, merges_txt, err);
    free(v);
    free(m);
    return rc;
}

void
tok_bpe_free(struct tok_bpe *b)
{
    if (b == NULL)
        return;
    pcre2_code_free(b->re);
    free(b->whole);
    free(b->raw);
    free(b->merges);
    free(b->by_id);
    free(b->by_str);
    free(b->entries);
    free(b->arena);
    free(b);
}

size_t
tok_bpe_vocab_size(const struct tok_bpe *b)
{
    return b->n_entries;
}

size_t
tok_bpe_n_merges(const struct tok_bpe *b)
{
    return b->n_merges;
}

tok_id
tok_bpe_find(const struct tok_bpe *b, const char *t, size_t len)
{
    int32_t e = str_find(b, t, len, tok_hash_bytes(t, len));

    return e < 0 ? -1 : b->entries[e].id;
}

const char *
tok_bpe_token(const struct tok_bpe *b, tok_id id, size_t *len)
{
    int32_t e = id_find(b, id);

    if (e < 0)
        return NULL;
    if (len)
        *len = b->entries[e].len;
    return b->arena + b->entries[e].off;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */

struct state {
    const struct tok_bpe *b;
    struct tok_encoding *e;
    struct scratch s; /* per call: the encoding's scratch is WordPiece's */
    bool reference;   /* merge every word with merge_heap() */
    int rc;
};

static int
emit(struct state *st, tok_id id, size_t start, size_t end)
{
    if (tok_encoding_push(st->e, id, start, end) < 0)
        return st->rc = TOK_ENOMEM;
    return 0;
}

/* One pre-token text[start, end). */
static void
bpe_word(struct state *st, const char *text, size_t start, size_t end)
{
    const struct tok_bpe *b = st->b;
    struct scratch *s = &st->s;
    tok_id w;
    int64_t n;

    if (end - start == 1) {
        tok_id id = b->byte_id[(unsigned char)text[start]];

        if (id >= 0)
            emit(st, id, start, end);
        return;
    }
    w = st->reference ? -1 : whole_find(b, text + start, end - start);
    if (w >= 0) {
        emit(st, w, start, end);
        return;
    }
    n = bpe_merge(b, s, text, start, end, st->reference);
    if (n < 0) {
        st->rc = (int)n;
        return;
    }
    for (ptrdiff_t i = 0; n > 0 && i >= 0 && st->rc == 0; i = s->sym[i].next)
        emit(st, s->sym[i].id, s->sym[i].start, s->sym[i].end);
}

static int
re_match(const struct tok_bpe *b, const char *text, size_t len, size_t pos,
         pcre2_match_data *md)
{
    /* The text is valid UTF-8, so pcre2_match()'s checks are not needed. */
    if (b->re_jit)
        return pcre2_jit_match(b->re, (PCRE2_SPTR)text, len, pos,
                               PCRE2_NO_UTF_CHECK, md, NULL);
    return pcre2_match(b->re, (PCRE2_SPTR)text, len, pos, PCRE2_NO_UTF_CHECK,
                       md, NULL);
}

static int
encode(const struct tok_bpe *b, const char *text, size_t len,
       struct tok_encoding *e, bool reference, struct tok_err *err)
{
    struct state st;
    pcre2_match_data *md;
    size_t bad, pos = 0, n_start = e->n;

    bad = e->valid_utf8 ? len : tok_utf8_check(text, len);
    if (bad != len)
        return tok_err_set(err, TOK_EUTF8,
                           "invalid UTF-8 at byte offset %zu (byte 0x%02X)",
                           bad, (unsigned)(unsigned char)text[bad]);
    if (tok_encoding_ready(e) < 0)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    memset(&st, 0, sizeof(st));
    st.b = b;
    st.e = e;
    st.reference = reference;
    md = pcre2_match_data_create(1, NULL);
    if (md == NULL)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    /* The pattern matches every character, so the pieces tile the text;
     * a gap between matches would still be one piece (HF's Isolated). */
    while (pos < len && st.rc == 0) {
        int rc = re_match(b, text, len, pos, md);
        const PCRE2_SIZE *ov;

        if (rc == PCRE2_ERROR_NOMATCH) {
            bpe_word(&st, text, pos, len);
            break;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[120];

            pcre2_get_error_message(rc, msg, sizeof(msg));
            st.rc = tok_err_set(err, TOK_ERANGE,
                                "cannot split the text at byte offset %zu: %s",
                                pos, (const char *)msg);
            break;
        }
        ov = pcre2_get_ovector_pointer(md);
        assert(ov[1] > ov[0] && ov[0] >= pos);
        if (ov[0] > pos)
            bpe_word(&st, text, pos, ov[0]);
        bpe_word(&st, text, ov[0], ov[1]);
        pos = ov[1];
    }
    pcre2_match_data_free(md);
    scratch_release(&st.s);
    if (st.rc < 0) {
        e->n = n_start;
        if (st.rc == TOK_ENOMEM)
            tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
        return st.rc;
    }
    return 0;
}

int
tok_bpe_encode(const struct tok_bpe *b, const char *text, size_t len,
               struct tok_encoding *e, struct tok_err *err)
{
    return encode(b, text, len, e, false, err);
}

int
tok_bpe_encode_reference(const struct tok_bpe *b, const char *text, size_t len,
                         struct tok_encoding *e, struct tok_err *err)
{
    return encode(b, text, len, e, true, err);
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */

/* Turn the token just appended at out->data[at..) into bytes, in place
 * (never longer): each character of the alphabet becomes its byte; a token
 * with any other character stays as it is (HF's ByteLevel decoder). */
static void
unmap_tail(const struct tok_bpe *b, struct tok_buf *out, size_t at)
{
    char *t = out->data + at;
    size_t len = out->len - at, n = 0;

    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = tok_utf8_decode(t + i, len - i, &cp);

        if (k == 0 || cp >= CP_LIMIT || b->cp_byte[cp] < 0)
            return;
        i += k;
    }
    for (size_t i = 0; i < len;) {
        uint32_t cp;

        i += tok_utf8_decode(t + i, len - i, &cp);
        t[n++] = (char)b->cp_byte[cp];
    }
    out->len = at + n;
    out->data[out->len] = '\0';
}

int
tok_bpe_decode(const struct tok_bpe *b, const tok_id *ids, size_t n,
               struct tok_buf *out, struct tok_err *err)
{
    size_t len0 = out->len;

    for (size_t i = 0; i < n; i++) {
        size_t len, at = out->len;
        const char *tok = tok_bpe_token(b, ids[i], &len);

        if (tok == NULL) {
            out->len = len0;
            if (out->data)
                out->data[len0] = '\0';
            return tok_err_set(err, TOK_ERANGE,
                               "id %ld at position %zu is not in the vocab",
                               (long)ids[i], i);
        }
        if (tok_buf_append(out, tok, len) < 0)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
        unmap_tail(b, out, at);
    }
    if (out->data == NULL && tok_buf_append(out, "", 0) < 0)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    return 0;
}
