/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_tables.c: the LAC engine's small data structures: the code-point
 * trie (small_seg.dic's words, user phrases), the hash of byte strings
 * (word.dic's words), and the tag table, which interns LAC's tag strings
 * with what its code derives from each (see tok_lac_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tok_lac_int.h"

/* ------------------------------------------------------------------------ */
/* The trie (heap)                                                           */

#define TRIE_MAX_NODES 0x7FFFFFFFu

int
tok_lac_trie_init(struct tok_lac_trie *t)
{
    memset(t, 0, sizeof(*t));
    t->keys = calloc(64, sizeof(*t->keys));
    t->vals = calloc(64, sizeof(*t->vals));
    if (t->keys == NULL || t->vals == NULL) {
        tok_lac_trie_release(t);
        return TOK_ENOMEM;
    }
    t->mask = 63;
    t->max_probe = 1;
    t->n_nodes = 1;
    return 0;
}

void
tok_lac_trie_release(struct tok_lac_trie *t)
{
    free(t->keys);
    free(t->vals);
    memset(t, 0, sizeof(*t));
}

/* Put key -> val into the table (which has room), counting its probes. */
static void
trie_put(struct tok_lac_trie *t, uint64_t key, uint32_t val)
{
    size_t i = tok_lac_trie_home(key) & t->mask, probes = 1;

    while (t->keys[i] != 0) {
        i = (i + 1) & t->mask;
        probes++;
    }
    t->keys[i] = key;
    t->vals[i] = val;
    if (probes > t->max_probe)
        t->max_probe = probes;
}

static int
trie_grow(struct tok_lac_trie *t)
{
    struct tok_lac_trie old = *t;
    size_t slots = 2 * (old.mask + 1);

    t->keys = calloc(slots, sizeof(*t->keys));
    t->vals = calloc(slots, sizeof(*t->vals));
    if (t->keys == NULL || t->vals == NULL) {
        free(t->keys);
        free(t->vals);
        *t = old;
        return TOK_ENOMEM;
    }
    t->mask = slots - 1;
    t->max_probe = 1;
    for (size_t i = 0; i <= old.mask; i++)
        if (old.keys[i] != 0)
            trie_put(t, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
    return 0;
}

/* The slot of key, or of the empty slot where it would go. */
static size_t
trie_slot(const struct tok_lac_trie *t, uint64_t key)
{
    size_t i = tok_lac_trie_home(key) & t->mask;

    while (t->keys[i] != 0 && t->keys[i] != key)
        i = (i + 1) & t->mask;
    return i;
}

int
tok_lac_trie_insert(struct tok_lac_trie *t, const uint32_t *cps, size_t n,
                    uint32_t *node)
{
    uint32_t at = 0;

    for (size_t k = 0; k < n; k++) {
        uint64_t key = (((uint64_t)at << 21) | cps[k]) + 1;
        size_t i = trie_slot(t, key);

        if (t->keys[i] == 0) {
            int rc;

            if (t->n_nodes >= TRIE_MAX_NODES)
                return TOK_ERANGE;
            /* At most half full: short probes. */
            if (2 * (t->n_edges + 1) > t->mask + 1) {
                if ((rc = trie_grow(t)) < 0)
                    return rc;
                i = trie_slot(t, key);
            }
            trie_put(t, key, (uint32_t)t->n_nodes);
            t->n_nodes++;
            t->n_edges++;
            i = trie_slot(t, key);
        }
        if (k + 1 == n)
            t->vals[i] |= TOK_LAC_TRIE_WORD;
        at = t->vals[i] & ~TOK_LAC_TRIE_WORD;
    }
    *node = at;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Byte strings                                                              */

uint32_t
tok_lac_hash_bytes(const char *s, size_t len)
{
    uint64_t h = tok_hash_final(tok_hash_bytes(s, len));
    uint32_t v = (uint32_t)(h >> 32);

    return v ? v : 1; /* 0 marks an empty slot */
}

/* ------------------------------------------------------------------------ */
/* Tags                                                                      */

static size_t
tag_home(const struct tok_lac_tags *t, const char *s, size_t len)
{
    return (size_t)tok_lac_hash_bytes(s, len) & t->index_mask;
}

static int
tags_reindex(struct tok_lac_tags *t, size_t cap)
{
    uint32_t *ix = malloc(cap * sizeof(*ix));

    if (ix == NULL)
        return TOK_ENOMEM;
    memset(ix, 0xff, cap * sizeof(*ix));
    free(t->index);
    t->index = ix;
    t->index_mask = cap - 1;
    for (size_t k = 0; k < t->n; k++) {
        size_t i = tag_home(t, t->v[k].s, t->v[k].len);

        while (ix[i] != UINT32_MAX)
            i = (i + 1) & t->index_mask;
        ix[i] = (uint32_t)k;
    }
    return 0;
}

/* The entry of s[0..len), or UINT32_MAX; *slot gets its index slot. */
static uint32_t
tags_find(const struct tok_lac_tags *t, const char *s, size_t len, size_t *slot)
{
    size_t i = tag_home(t, s, len);

    for (; t->index[i] != UINT32_MAX; i = (i + 1) & t->index_mask) {
        const struct tok_lac_tag *e = &t->v[t->index[i]];

        if (e->len == len && memcmp(e->s, s, len) == 0)
            break;
    }
    *slot = i;
    return t->index[i];
}

/* Add s[0..len) without its derivations; *id gets the entry. */
static int
tags_add(struct tok_lac_tags *t, const char *s, size_t len, uint32_t *id)
{
    struct tok_lac_tag *e;
    size_t slot;
    int rc;

    if (t->index == NULL && (rc = tags_reindex(t, 64)) < 0)
        return rc;
    if ((*id = tags_find(t, s, len, &slot)) != UINT32_MAX)
        return 0;
    if (len > UINT32_MAX / 2 || t->n >= UINT32_MAX / 2)
        return TOK_ERANGE;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct tok_lac_tag *v = realloc(t->v, cap * sizeof(*v));

        if (v == NULL)
            return TOK_ENOMEM;
        t->v = v;
        t->cap = cap;
    }
    e = &t->v[t->n];
    memset(e, 0, sizeof(*e));
    if ((e->s = malloc(len + 1)) == NULL)
        return TOK_ENOMEM;
    memcpy(e->s, s, len);
    e->s[len] = '\0';
    e->len = (uint32_t)len;
    e->to_i = e->to_b = e->to_dash_i = UINT32_MAX;
    e->starts_word = len > 0 && (s[len - 1] == 'B' || s[len - 1] == 'S');
    *id = (uint32_t)t->n++;
    if (2 * t->n > t->index_mask + 1)
        return tags_reindex(t, 2 * (t->index_mask + 1));
    t->index[slot] = *id;
    return 0;
}

/* Python's s[:-k] of a UTF-8 string: all but its last k code points. */
size_t
tok_lac_drop_last(const char *s, size_t len, size_t k)
{
    while (k-- > 0 && len > 0) {
        len--;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    return len;
}

int
tok_lac_tags_intern(struct tok_lac_tags *t, const char *s, size_t len,
                    uint32_t *id)
{
    size_t first = t->n;
    char *buf = NULL;
    int rc;

    if ((rc = tags_add(t, s, len, id)) < 0)
        return rc;
    /* Derive from every entry added since, until nothing new comes: each
     * derivation is no longer than its source, so this ends. */
    for (size_t k = first; k < t->n; k++) {
        const char suffix[3][2] = { "I", "B", "-" };

        for (int d = 0; d < 3; d++) {
            struct tok_lac_tag *e = &t->v[k];
            size_t keep = tok_lac_drop_last(e->s, e->len, d == 2 ? 2 : 1), n;
            uint32_t got;
            char *nb = realloc(buf, keep + 2);

            if (nb == NULL) {
                free(buf);
                return TOK_ENOMEM;
            }
            buf = nb;
            memcpy(buf, e->s, keep);
            n = keep;
            if (d == 2) {
                buf[n++] = '-';
                buf[n++] = 'I';
            } else {
                buf[n++] = suffix[d][0];
            }
            if ((rc = tags_add(t, buf, n, &got)) < 0) {
                free(buf);
                return rc;
            }
            e = &t->v[k]; /* tags_add may have moved it */
            if (d == 0)
                e->to_i = got;
            else if (d == 1)
                e->to_b = got;
            else
                e->to_dash_i = got;
        }
    }
    free(buf);
    return 0;
}

void
tok_lac_tags_release(struct tok_lac_tags *t)
{
    for (size_t k = 0; k < t->n; k++)
        free(t->v[k].s);
    free(t->v);
    free(t->index);
    memset(t, 0, sizeof(*t));
}
