/* SPDX-License-Identifier: MIT */
/*
 * tok_vocab.c: loading WordPiece vocabularies and looking tokens up.
 *
 * Tokens live in one arena; two open-addressing hash tables index them: one
 * by their exact bytes, one holding only the "##x" continuation tokens keyed
 * by x, which is the lookup WordPiece makes for every non-initial piece.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"

static const char *const special_names[TOK_SPECIAL_COUNT] = { "[PAD]", "[UNK]",
                                                              "[CLS]", "[SEP]",
                                                              "[MASK]" };

uint64_t
tok_hash_bytes(const char *s, size_t len)
{
    uint64_t h = TOK_HASH_INIT;

    for (size_t i = 0; i < len; i++)
        h = tok_hash_step(h, (unsigned char)s[i]);
    return tok_hash_final(h);
}

#define hash_bytes tok_hash_bytes

tok_id
tok_map_find(const struct tok_vocab *v, const struct tok_map *m,
             const char *key, size_t len, size_t key_skip, uint64_t hash)
{
    size_t i = (size_t)hash & m->mask;
    uint16_t tag = (uint16_t)(hash >> 32);
    uint16_t slot_len = len < TOK_SLOT_LONG ? (uint16_t)len : TOK_SLOT_LONG;
    uint64_t head = tok_key_head(key, len);

    for (;;) {
        const struct tok_slot *sl = &m->slots[i];

        if (sl->id < 0)
            return -1;
        if (sl->tag == tag && sl->len == slot_len && sl->head == head) {
            const struct tok_entry *en;

            if (len <= 8)
                return sl->id;
            en = &v->entries[m->entry_of[i]];
            if (en->len == len + key_skip &&
                memcmp(v->arena + en->off + key_skip + 8, key + 8, len - 8) ==
                    0)
                return sl->id;
        }
        i = (i + 1) & m->mask;
    }
}

static bool
is_cont(const struct tok_vocab *v, const struct tok_entry *en)
{
    return en->len >= 2 && memcmp(v->arena + en->off, "##", 2) == 0;
}

/* The slots for n keys: at most two thirds full (a slot is 16 bytes, and
 * a miss reads on through the run of used slots, most of it in one line). */
static size_t
map_slots(size_t n)
{
    size_t slots = 16;

    while (slots < n + n / 2 + 2)
        slots *= 2;
    return slots;
}

/* Put entry e into m (the "##" table, keyed without "##", if cont). */
static void
map_insert(struct tok_vocab *v, struct tok_map *m, size_t e, bool cont)
{
    const struct tok_entry *en = &v->entries[e];
    size_t skip = cont ? 2 : 0, klen = en->len - skip, i;
    uint64_t h = hash_bytes(v->arena + en->off + skip, klen);
    struct tok_slot *sl;

    i = (size_t)h & m->mask;
    while (m->slots[i].id >= 0)
        i = (i + 1) & m->mask;
    sl = &m->slots[i];
    sl->id = en->id;
    m->entry_of[i] = (int32_t)e;
    sl->tag = (uint16_t)(h >> 32);
    sl->len = klen < TOK_SLOT_LONG ? (uint16_t)klen : TOK_SLOT_LONG;
    sl->head = tok_key_head(v->arena + en->off + skip, klen);
    if (cont && klen > v->max_cont_len)
        v->max_cont_len = klen;
    if (!cont && en->len > v->max_whole_len)
        v->max_whole_len = en->len;
}

static int
map_build(struct tok_vocab *v, struct tok_map *m, bool cont)
{
    size_t n = 0, slots;

    for (size_t e = 0; e < v->n_entries; e++)
        if (!cont || is_cont(v, &v->entries[e]))
            n++;
    slots = map_slots(n);
    free(m->slots);
    free(m->entry_of);
    m->slots = malloc(slots * sizeof(*m->slots));
    m->entry_of = malloc(slots * sizeof(*m->entry_of));
    if (m->slots == NULL || m->entry_of == NULL)
        return TOK_ENOMEM;
    memset(m->slots, 0xFF, slots * sizeof(*m->slots));
    m->mask = slots - 1;
    for (size_t e = 0; e < v->n_entries; e++)
        if (!cont || is_cont(v, &v->entries[e]))
            map_insert(v, m, e, cont);
    return 0;
}

static int
maps_build(struct tok_vocab *v)
{
    v->max_whole_len = 0;
    v->max_cont_len = 0;
    if (map_build(v, &v->whole, false) < 0 || map_build(v, &v->cont, true) < 0)
        return TOK_ENOMEM;
    return 0;
}

/* Find a token among the entries added so far (during loading, before the
 * final maps exist) with a small temporary table. */
struct load_map {
    int32_t *slots;
    size_t mask;
};

static int32_t
load_map_find_or_add(struct tok_vocab *v, struct load_map *lm, size_t e_new)
{
    const struct tok_entry *en = &v->entries[e_new];
    const char *key = v->arena + en->off;
    size_t i = (size_t)hash_bytes(key, en->len) & lm->mask;

    for (;;) {
        int32_t e = lm->slots[i];

        if (e < 0) {
            lm->slots[i] = (int32_t)e_new;
            return -1;
        }
        if (v->entries[e].len == en->len &&
            memcmp(v->arena + v->entries[e].off, key, en->len) == 0)
            return e;
        i = (i + 1) & lm->mask;
    }
}

static int
arena_add(struct tok_vocab *v, const char *s, size_t len, size_t *off)
{
    if (v->arena_len + len + 1 > v->arena_cap) {
        size_t cap = v->arena_cap ? v->arena_cap : 4096;
        char *a;

        while (cap < v->arena_len + len + 1)
            cap *= 2;
        a = realloc(v->arena, cap);
        if (a == NULL)
            return TOK_ENOMEM;
        v->arena = a;
        v->arena_cap = cap;
    }
    memcpy(v->arena + v->arena_len, s, len);
    v->arena[v->arena_len + len] = '\0';
    *off = v->arena_len;
    v->arena_len += len + 1;
    return 0;
}

static int
entries_reserve(struct tok_vocab *v, size_t n)
{
    struct tok_entry *e;

    if (n <= v->cap_entries)
        return 0;
    e = realloc(v->entries, n * sizeof(*e));
    if (e == NULL)
        return TOK_ENOMEM;
    v->entries = e;
    v->cap_entries = n;
    return 0;
}

/* Parse a decimal id with no sign, no spaces and no junk. */
static bool
parse_id(const char *s, size_t len, uint64_t *out)
{
    uint64_t x = 0;

    if (len == 0 || len > 10)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *out = x;
    return true;
}

static size_t
count_lines(const char *data, size_t len)
{
    size_t n = 0;
    const char *p = data, *end = data + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        n++;
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    return n;
}

/* Record that the token of id, on line, repeats that of dropped_id on
 * first_line.  Returns 0 or TOK_ENOMEM. */
static int
add_repeat(struct tok_vocab *v, tok_id id, tok_id dropped_id, size_t line,
           size_t first_line)
{
    struct tok_vocab_repeat *r;

    /* Grown one at a time at powers of two. */
    if ((v->n_repeats & (v->n_repeats - 1)) == 0) {
        size_t cap = v->n_repeats ? 2 * v->n_repeats : 1;

        r = realloc(v->repeats, cap * sizeof(*r));
        if (r == NULL)
            return TOK_ENOMEM;
        v->repeats = r;
    }
    r = &v->repeats[v->n_repeats++];
    r->id = id;
    r->dropped_id = dropped_id;
    r->line = line;
    r->first_line = first_line;
    return 0;
}

const struct tok_vocab_repeat *
tok_vocab_repeats(const struct tok_vocab *v, size_t *n)
{
    *n = v->n_repeats;
    return v->repeats;
}

int
tok_vocab_parse(struct tok_vocab **out, const char *data, size_t len,
                const char *name, struct tok_err *err)
{
    struct tok_vocab *v;
    struct load_map lm = { NULL, 0 };
    size_t n_lines = count_lines(data, len), line = 0, slots = 16;
    int32_t *line_of_id = NULL;
    const char *p = data, *end = data + len;
    bool tabbed;
    int rc = TOK_ENOMEM;

    *out = NULL;
    if (n_lines == 0)
        return tok_err_set(err, TOK_EFORMAT, "vocab '%s' is empty", name);
    if (n_lines > INT32_MAX / 4)
        return tok_err_set(err, TOK_EFORMAT, "vocab '%s' has too many lines",
                           name);
    {
        const char *nl = memchr(data, '\n', len);
        tabbed = memchr(data, '\t', nl ? (size_t)(nl - data) : len) != NULL;
    }
    v = calloc(1, sizeof(*v));
    if (v == NULL)
        goto fail_nomem;
    while (slots < 2 * n_lines + 2)
        slots *= 2;
    lm.slots = malloc(slots * sizeof(*lm.slots));
    line_of_id = malloc(n_lines * sizeof(*line_of_id));
    v->by_id = malloc(n_lines * sizeof(*v->by_id));
    if (lm.slots == NULL || line_of_id == NULL || v->by_id == NULL ||
        entries_reserve(v, n_lines) < 0)
        goto fail_nomem;
    lm.mask = slots - 1;
    memset(lm.slots, 0xFF, slots * sizeof(*lm.slots));
    memset(line_of_id, 0xFF, n_lines * sizeof(*line_of_id));
    memset(v->by_id, 0xFF, n_lines * sizeof(*v->by_id));

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        size_t tlen = (size_t)(eol - p), bad;
        uint64_t id = line;
        struct tok_entry *en;
        int32_t prev;

        line++;
        if (tlen > 0 && p[tlen - 1] == '\r')
            tlen--;
        if (tabbed) {
            const char *tab = memchr(p, '\t', tlen);

            if (tab == NULL) {
                rc = tok_err_set(err, TOK_EFORMAT,
                                 "vocab '%s' line %zu: no TAB before the id "
                                 "(the first line has 'token<TAB>id')",
                                 name, line);
                goto fail;
            }
            if (!parse_id(tab + 1, (size_t)(p + tlen - tab - 1), &id)) {
                rc = tok_err_set(
                    err, TOK_EFORMAT,
                    "vocab '%s' line %zu: id '%.*s' is not a "
                    "number",
                    name, line,
                    (int)(p + tlen - tab - 1 > 32 ? 32 : p + tlen - tab - 1),
                    tab + 1);
                goto fail;
            }
            if (id >= n_lines) {
                rc = tok_err_set(err, TOK_EFORMAT,
                                 "vocab '%s' line %zu: id %llu is out of "
                                 "range (the file has %zu lines)",
                                 name, line, (unsigned long long)id, n_lines);
                goto fail;
            }
            if (line_of_id[id] >= 0) {
                rc = tok_err_set(err, TOK_EFORMAT,
                                 "vocab '%s' line %zu: id %llu is already "
                                 "used on line %d",
                                 name, line, (unsigned long long)id,
                                 (int)line_of_id[id]);
                goto fail;
            }
            line_of_id[id] = (int32_t)line;
            tlen = (size_t)(tab - p);
        }
        bad = tok_utf8_check(p, tlen);
        if (bad != tlen) {
            rc = tok_err_set(err, TOK_EFORMAT,
                             "vocab '%s' line %zu: invalid UTF-8 at byte %zu "
                             "of the token",
                             name, line, bad + 1);
            goto fail;
        }
        en = &v->entries[v->n_entries];
        if (arena_add(v, p, tlen, &en->off) < 0)
            goto fail_nomem;
        en->len = (uint32_t)tlen;
        en->id = (tok_id)id;
        prev = load_map_find_or_add(v, &lm, v->n_entries);
        if (prev >= 0) {
            /* A repeated token keeps its last id, as a Python dict does;
             * the repeat is kept for the tools to report. */
            tok_id old = v->entries[prev].id;

            if (add_repeat(v, (tok_id)id, old, line,
                           tabbed ? (size_t)line_of_id[old] : (size_t)old + 1) <
                0)
                goto fail_nomem;
            v->by_id[v->entries[prev].id] = -1;
            v->entries[prev].id = (tok_id)id;
            v->by_id[id] = prev;
        } else {
            v->by_id[id] = (int32_t)v->n_entries;
            v->n_entries++;
        }
        if (id + 1 > v->n_ids)
            v->n_ids = (size_t)id + 1;
        p = nl ? nl + 1 : end;
    }
    v->n_base = v->n_entries;
    if (maps_build(v) < 0)
        goto fail_nomem;
    for (int s = 0; s < TOK_SPECIAL_COUNT; s++) {
        size_t n = strlen(special_names[s]);
        v->special[s] = tok_map_find(v, &v->whole, special_names[s], n, 0,
                                     hash_bytes(special_names[s], n));
    }
    if (v->special[TOK_SPECIAL_UNK] < 0) {
        rc = tok_err_set(err, TOK_EFORMAT, "vocab '%s' has no [UNK] token",
                         name);
        goto fail;
    }
    free(lm.slots);
    free(line_of_id);
    *out = v;
    return 0;

fail_nomem:
    rc = tok_err_set(err, TOK_ENOMEM, "cannot load vocab '%s': %s", name,
                     tok_strerror(TOK_ENOMEM));
fail:
    free(lm.slots);
    free(line_of_id);
    tok_vocab_free(v);
    return rc;
}

int
tok_vocab_load(struct tok_vocab **out, const char *path, struct tok_err *err)
{
    FILE *f;
    char *data = NULL;
    size_t len = 0, cap = 0;
    int rc;

    *out = NULL;
    f = fopen(path, "rb");
    if (f == NULL)
        return tok_err_set(err, TOK_EIO, "cannot open vocab '%s': %s", path,
                           strerror(errno));
    for (;;) {
        size_t n;

        if (len == cap) {
            char *d;

            cap = cap ? cap * 2 : 1 << 20;
            d = realloc(data, cap);
            if (d == NULL) {
                free(data);
                fclose(f);
                return tok_err_set(err, TOK_ENOMEM,
                                   "cannot read vocab '%s': %s", path,
                                   tok_strerror(TOK_ENOMEM));
            }
            data = d;
        }
        n = fread(data + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        rc = tok_err_set(err, TOK_EIO, "cannot read vocab '%s': %s", path,
                         strerror(errno));
        free(data);
        fclose(f);
        return rc;
    }
    fclose(f);
    rc = tok_vocab_parse(out, data ? data : "", len, path, err);
    free(data);
    return rc;
}

/* A block of cap elements of size elem holding the first n of p, or
 * NULL (also when p is NULL: nothing to copy). */
static void *
dup_array(const void *p, size_t n, size_t cap, size_t elem)
{
    void *q;

    if (p == NULL)
        return NULL;
    q = malloc(cap ? cap * elem : 1);
    if (q != NULL && n)
        memcpy(q, p, n * elem);
    return q;
}

int
tok_vocab_copy(struct tok_vocab **out, const struct tok_vocab *v,
               struct tok_err *err)
{
    struct tok_vocab *c = malloc(sizeof(*c));
    size_t n_whole = v->whole.slots ? v->whole.mask + 1 : 0;
    size_t n_cont = v->cont.slots ? v->cont.mask + 1 : 0;

    *out = NULL;
    if (c == NULL)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    *c = *v;
    c->arena = dup_array(v->arena, v->arena_len, v->arena_cap, 1);
    c->entries = dup_array(v->entries, v->n_entries, v->cap_entries,
                           sizeof(*v->entries));
    c->cap_entries = v->cap_entries;
    c->by_id = dup_array(v->by_id, v->n_ids, v->n_ids + 1, sizeof(*v->by_id));
    c->whole.slots =
        dup_array(v->whole.slots, n_whole, n_whole, sizeof(*v->whole.slots));
    c->whole.entry_of = dup_array(v->whole.entry_of, n_whole, n_whole,
                                  sizeof(*v->whole.entry_of));
    c->cont.slots =
        dup_array(v->cont.slots, n_cont, n_cont, sizeof(*v->cont.slots));
    c->cont.entry_of =
        dup_array(v->cont.entry_of, n_cont, n_cont, sizeof(*v->cont.entry_of));
    c->repeats =
        dup_array(v->repeats, v->n_repeats, v->n_repeats, sizeof(*v->repeats));
    if ((v->arena && !c->arena) || (v->entries && !c->entries) ||
        (v->repeats && !c->repeats) || (v->by_id && !c->by_id) ||
        (v->whole.slots && !c->whole.slots) ||
        (v->whole.entry_of && !c->whole.entry_of) ||
        (v->cont.slots && !c->cont.slots) ||
        (v->cont.entry_of && !c->cont.entry_of)) {
        tok_vocab_free(c);
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    if (c->by_id)
        c->by_id[v->n_ids] = -1;
    *out = c;
    return 0;
}

void
tok_vocab_free(struct tok_vocab *v)
{
    if (v == NULL)
        return;
    free(v->arena);
    free(v->entries);
    free(v->by_id);
    free(v->whole.slots);
    free(v->whole.entry_of);
    free(v->cont.slots);
    free(v->cont.entry_of);
    free(v->repeats);
    free(v);
}

size_t
tok_vocab_size(const struct tok_vocab *v)
{
    return v->n_base;
}

size_t
tok_vocab_n_ids(const struct tok_vocab *v)
{
    return v->n_ids;
}

tok_id
tok_vocab_find(const struct tok_vocab *v, const char *t, size_t len)
{
    return tok_map_find(v, &v->whole, t, len, 0, hash_bytes(t, len));
}

const char *
tok_vocab_token(const struct tok_vocab *v, tok_id id, size_t *len)
{
    int32_t e;

    if (id < 0 || (size_t)id >= v->n_ids)
        return NULL;
    e = v->by_id[id];
    if (e < 0)
        return NULL;
    if (len)
        *len = v->entries[e].len;
    return v->arena + v->entries[e].off;
}

tok_id
tok_vocab_special(const struct tok_vocab *v, enum tok_special s)
{
    if ((int)s < 0 || s >= TOK_SPECIAL_COUNT)
        return -1;
    return v->special[s];
}

/* Whether entry e is one character of U+4E00..U+9FA5: a token that
 * tok_vocab_extend_chinese() gives a "##" form. */
static bool
is_cjk_char_entry(const struct tok_vocab *v, int32_t e)
{
    uint32_t cp;

    return e >= 0 && v->entries[e].len == 3 &&
           tok_utf8_decode(v->arena + v->entries[e].off, 3, &cp) == 3 &&
           cp >= 0x4E00 && cp <= 0x9FA5;
}

/* Whether the vocab has "##" + the token of entry e. */
static tok_id
cont_of_entry(const struct tok_vocab *v, int32_t e)
{
    const char *t = v->arena + v->entries[e].off;
    size_t len = v->entries[e].len;

    return tok_map_find(v, &v->cont, t, len, 2, hash_bytes(t, len));
}

size_t
tok_vocab_cont_ids(const struct tok_vocab *v, tok_id *out)
{
    size_t k = 0;

    /* The ids tok_vocab_extend_chinese() would add, in its order. */
    for (size_t id = 0; id < v->n_ids; id++) {
        int32_t e = v->by_id[id];

        if (e < 0) {
            out[id] = -1;
            continue;
        }
        out[id] = cont_of_entry(v, e);
        if (out[id] < 0 && !v->extended && id < v->n_base &&
            is_cjk_char_entry(v, e))
            out[id] = (tok_id)(v->n_base + k++);
    }
    return k;
}

int64_t
tok_vocab_extend_chinese(struct tok_vocab *v, struct tok_err *err)
{
    /* PaddleNLP scans ids 0..V-1 and numbers the new tokens from
     * len(tokenizer) = V, the count of distinct tokens.  When the vocab
     * repeats a token, V < n_ids and the first new ids are live ones
     * (ernie-3.0-base-zh: "##的" gets 39979, [UNK]'s id); we do the same, so
     * the files match PaddleNLP's and its trainer reads them the same way,
     * and an id so shared decodes as the new token, as in PaddleNLP. */
    size_t n_add = 0, base = v->n_base, n_slots;
    int32_t *by_id;

    if (v->extended)
        return 0;
    /* Pass 1 counts, pass 2 adds; "##c" tokens cannot match each other. */
    for (int pass = 0; pass < 2; pass++) {
        size_t k = 0;

        for (size_t id = 0; id < base; id++) {
            int32_t e = v->by_id[id];
            char buf[6];
            size_t off;

            if (!is_cjk_char_entry(v, e) || cont_of_entry(v, e) >= 0)
                continue;
            if (pass == 0) {
                n_add++;
                continue;
            }
            buf[0] = '#';
            buf[1] = '#';
            memcpy(buf + 2, v->arena + v->entries[e].off, 3);
            if (arena_add(v, buf, 5, &off) < 0)
                goto nomem;
            v->entries[v->n_entries].off = off;
            v->entries[v->n_entries].len = 5;
            v->entries[v->n_entries].id = (tok_id)(base + k);
            v->by_id[base + k] = (int32_t)v->n_entries;
            v->n_entries++;
            k++;
        }
        if (pass == 0) {
            if (entries_reserve(v, v->n_entries + n_add) < 0)
                goto nomem;
            n_slots = base + n_add > v->n_ids ? base + n_add : v->n_ids;
            by_id = realloc(v->by_id, (n_slots + 1) * sizeof(*by_id));
            if (by_id == NULL)
                goto nomem;
            for (size_t i = v->n_ids; i < n_slots + 1; i++)
                by_id[i] = -1;
            v->by_id = by_id;
        }
    }
    if (base + n_add > v->n_ids)
        v->n_ids = base + n_add;
    v->extended = true;
    if (maps_build(v) < 0)
        goto nomem;
    return (int64_t)n_add;
nomem:
    return tok_err_set(err, TOK_ENOMEM, "cannot add ##<CJK> ids: %s",
                       tok_strerror(TOK_ENOMEM));
}
