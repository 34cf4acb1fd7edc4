/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_batch.c: LAC's run() over a batch of texts: each text to ids
 * (the `seg` network: one id a character after q2b; the `lac` network:
 * segment.py's fast_cut() over small_seg.dic first, a token found in
 * word.dic one id, any other one id a character), the networks over
 * groups of texts of similar lengths (tok_lac_net.c), then the tags back
 * to characters (a word id's tag on its first character, t[:-2] + "-I"
 * on the others), the user dictionary, and words as LAC's parse_result()
 * makes them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tok_lac_int.h"

/* Defaults of a group: the most rows run together, and positions (the
 * long-text window too): about 13 MB of working memory for the seg
 * network, 21 MB for the lac network. */
#define MAX_ROWS 128
#define MAX_POS  16384

struct text {
    size_t off, len; /* bytes in the arena */
    size_t char_off, n_chars;
    size_t pos_off, n_pos;
};

struct tok_lac_batch {
    const struct tok_lac *lac;
    const struct tok_lac_mode_data *m;
    const struct tok_lac_kernels *K;
    size_t max_rows, max_pos;
    struct tok_buf arena; /* the texts, each followed by 16 NULs */
    struct text *texts;
    size_t n, cap, n_run; /* texts; those run */
    bool custom;          /* a user dictionary applied: ctags */
    uint32_t *ctags;      /* per character of the texts run */
    size_t ctags_cap;
    /* Per position of the texts run: ids, characters (`lac` network),
     * tags. */
    uint32_t *ids, *toklen;
    size_t ids_cap, toklen_cap;
    uint8_t *ptags;
    size_t ptags_cap;
    size_t *order, order_cap;
    /* A group's lanes, and its texts' window positions, ids and edges. */
    size_t *lane_len, *lane_rank, *lane_base, *lane_steps, *lane_at;
    size_t lane_cap;
    size_t *lane_of, lane_of_cap, *wpos, wpos_cap;
    uint32_t *wids;
    size_t wids_cap;
    uint8_t *wedge;
    size_t wedge_cap;
    uint8_t *route_len; /* fast_cut's word lengths, per character */
    size_t route_cap;
    double *route_ring;
    size_t ring_cap;
    struct tok_lac_work work;
    bool want_margins;
    double *margins;
    size_t margins_cap;
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
    if ((q = realloc(*p, c * elem)) == NULL)
        return TOK_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

int
tok_lac_batch_new(struct tok_lac_batch **out, const struct tok_lac *l,
                  enum tok_lac_mode mode, struct tok_err *err)
{
    struct tok_lac_batch *b;

    *out = NULL;
    if ((mode != TOK_LAC_SEG && mode != TOK_LAC_LAC) || !l->mode[mode].present)
        return tok_err_set(err, TOK_EINVAL,
                           "the LAC model was not opened with the %s network",
                           mode == TOK_LAC_LAC ? "lac" : "seg");
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    b->lac = l;
    b->m = &l->mode[mode];
    b->K = tok_lac_kernels_best();
    b->max_rows = MAX_ROWS;
    b->max_pos = MAX_POS;
    tok_buf_init(&b->arena);
    *out = b;
    return 0;
}

void
tok_lac_batch_free(struct tok_lac_batch *b)
{
    if (b == NULL)
        return;
    tok_buf_release(&b->arena);
    free(b->texts);
    free(b->ctags);
    free(b->ids);
    free(b->toklen);
    free(b->ptags);
    free(b->order);
    free(b->lane_len);
    free(b->lane_rank);
    free(b->lane_base);
    free(b->lane_steps);
    free(b->lane_at);
    free(b->lane_of);
    free(b->wpos);
    free(b->wids);
    free(b->wedge);
    free(b->route_len);
    free(b->route_ring);
    free(b->margins);
    tok_lac_work_release(&b->work);
    free(b);
}

void
tok_lac_batch_clear(struct tok_lac_batch *b)
{
    tok_buf_clear(&b->arena);
    b->n = 0;
    b->n_run = 0;
}

void
tok_lac_batch_set_limits(struct tok_lac_batch *b, size_t max_rows,
                         size_t max_pos)
{
    if (max_rows)
        b->max_rows = max_rows;
    if (max_pos)
        b->max_pos = max_pos;
}

void
tok_lac_batch_set_kernels(struct tok_lac_batch *b,
                          const struct tok_lac_kernels *k)
{
    b->K = k ? k : tok_lac_kernels_best();
}

void
tok_lac_batch_want_margins(struct tok_lac_batch *b, bool on)
{
    b->want_margins = on;
}

double
tok_lac_batch_margin(const struct tok_lac_batch *b, size_t i)
{
    return b->want_margins && i < b->n_run ? b->margins[i] : NAN;
}

int64_t
tok_lac_batch_add(struct tok_lac_batch *b, const char *text, size_t len,
                  int trusted, struct tok_err *err)
{
    static const char pad[16];
    struct text *t;
    size_t bad;

    if (!trusted && (bad = tok_utf8_check(text, len)) != len)
        return tok_err_set(err, TOK_EUTF8, "invalid UTF-8 at byte offset %zu",
                           bad);
    if (grow((void **)&b->texts, &b->cap, b->n + 1, sizeof(*b->texts)) < 0)
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    t = &b->texts[b->n];
    memset(t, 0, sizeof(*t));
    t->off = b->arena.len;
    t->len = len;
    if (tok_buf_append(&b->arena, text, len) < 0 ||
        tok_buf_append(&b->arena, pad, sizeof(pad)) < 0)
        return tok_err_set(err, TOK_ENOMEM, "out of memory");
    return (int64_t)b->n++;
}

size_t
tok_lac_batch_count(const struct tok_lac_batch *b)
{
    return b->n;
}

size_t
tok_lac_batch_bytes(const struct tok_lac_batch *b)
{
    return b->arena.len - 16 * b->n;
}

const char *
tok_lac_batch_text(const struct tok_lac_batch *b, size_t i, size_t *len)
{
    if (i >= b->n)
        return NULL;
    if (len)
        *len = b->texts[i].len;
    return b->arena.data + b->texts[i].off;
}

/* ------------------------------------------------------------------------ */
/* Texts to ids                                                              */

/* Append a position: its id and (the `lac` network) its characters. */
static int
push_pos(struct tok_lac_batch *b, size_t *n_pos, uint32_t id, size_t chars)
{
    if (grow((void **)&b->ids, &b->ids_cap, *n_pos + 1, sizeof(*b->ids)) < 0)
        return TOK_ENOMEM;
    if (b->m->has_dict) {
        if (chars > UINT32_MAX || grow((void **)&b->toklen, &b->toklen_cap,
                                       *n_pos + 1, sizeof(*b->toklen)) < 0)
            return TOK_ENOMEM;
        b->toklen[*n_pos] = (uint32_t)chars;
    }
    b->ids[*n_pos] = id;
    (*n_pos)++;
    return 0;
}

/* The id of a multi-character token s[0..len) in word.dic, or -1. */
static int64_t
word_id(const struct tok_lac_words_map *wm, const char *s, size_t len)
{
    uint32_t h = tok_lac_hash_bytes(s, len);
    size_t i = h & wm->mask;

    for (size_t left = wm->max_probe; left > 0; left--) {
        const uint32_t *e = wm->slots + 4 * i;

        if (e[0] == 0)
            return -1;
        if (e[0] == h && e[2] == len && memcmp(wm->pool + e[1], s, len) == 0)
            return e[3];
        i = (i + 1) & wm->mask;
    }
    return -1;
}

/* One token of fast_cut(): the n characters at s[0..len): one id if it is
 * a word of word.dic, else one a character. */
static int
push_token(struct tok_lac_batch *b, size_t *n_pos, const char *s, size_t len,
           size_t n)
{
    if (n >= 2) {
        int64_t id = word_id(&b->m->words, s, len);

        if (id >= 0)
            return push_pos(b, n_pos, (uint32_t)id, n);
    }
    for (size_t at = 0; at < len;) {
        uint32_t cp;

        at += tok_utf8_decode_valid(s + at, &cp);
        if (push_pos(b, n_pos, tok_lac_char_id(b->m, cp), 1) < 0)
            return TOK_ENOMEM;
    }
    return 0;
}

static bool
ascii_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

/* segment.py's fast_cut() over the n characters of s[0..len), then the
 * ids of its tokens.  The route is found from the end: route[idx] = max
 * over the DAG's ends j of (log(f) - logtotal + route[j + 1], j), f the
 * length of the word idx..j (1 for one character) and the larger j
 * winning a tie, as Python's max() of tuples; only the length of the
 * chosen word is kept a character, and the scores of the next few. */
static int
fast_cut(struct tok_lac_batch *b, const char *s, size_t len, size_t n,
         size_t *n_pos)
{
    const struct tok_lac_dict *d = &b->m->dict;
    const double logtotal = d->logs[0];
    size_t R = d->max_len + 1, at = len;
    double *ring;

    if (grow((void **)&b->route_len, &b->route_cap, n + 1, 1) < 0 ||
        grow((void **)&b->route_ring, &b->ring_cap, R, sizeof(double)) < 0)
        return TOK_ENOMEM;
    ring = b->route_ring;
    ring[n % R] = 0.0;
    for (size_t idx = n; idx-- > 0;) {
        double best;
        size_t best_j = idx, q;
        uint32_t node = 0;

        /* Back to the start of character idx. */
        do
            at--;
        while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80);
        best = (d->logs[1] - logtotal) + ring[(idx + 1) % R];
        q = at;
        for (size_t k = 1; k <= d->max_len && q < len; k++) {
            uint32_t cp, v;

            q += tok_utf8_decode_valid(s + q, &cp);
            if ((v = tok_lac_trie_step(&d->trie, node, cp)) == 0)
                break;
            node = v & ~TOK_LAC_TRIE_WORD;
            if ((v & TOK_LAC_TRIE_WORD) && k >= 2) {
                size_t j = idx + k - 1;
                double sc = (d->logs[k] - logtotal) + ring[(j + 1) % R];

                if (sc > best || (sc == best && j > best_j)) {
                    best = sc;
                    best_j = j;
                }
            }
        }
        ring[idx % R] = best;
        b->route_len[idx] = (uint8_t)(best_j - idx + 1);
    }
    /* The tokens, runs of single ASCII letters and digits merged. */
    {
        size_t run = 0, run_at = 0;

        at = 0;
        for (size_t idx = 0; idx < n;) {
            size_t e = idx + b->route_len[idx], end = at;

            for (size_t k = idx; k < e; k++) {
                uint32_t cp;

                end += tok_utf8_decode_valid(s + end, &cp);
            }
            if (e - idx == 1 && end - at == 1 &&
                ascii_alnum((unsigned char)s[at])) {
                if (run++ == 0)
                    run_at = at;
            } else {
                if (run > 0 &&
                    push_token(b, n_pos, s + run_at, at - run_at, run) < 0)
                    return TOK_ENOMEM;
                run = 0;
                if (push_token(b, n_pos, s + at, end - at, e - idx) < 0)
                    return TOK_ENOMEM;
            }
            idx = e;
            at = end;
        }
        if (run > 0 && push_token(b, n_pos, s + run_at, at - run_at, run) < 0)
            return TOK_ENOMEM;
    }
    return 0;
}

/* The ids of the texts from b->n_run on, after those of the texts run
 * before (since the last clear). */
static int
texts_to_ids(struct tok_lac_batch *b)
{
    size_t n_chars = 0, n_pos = 0;

    if (b->n_run > 0) {
        const struct text *t = &b->texts[b->n_run - 1];

        n_chars = t->char_off + t->n_chars;
        n_pos = t->pos_off + t->n_pos;
    }
    for (size_t i = b->n_run; i < b->n; i++) {
        struct text *t = &b->texts[i];
        const char *s = b->arena.data + t->off;
        size_t k = 0;

        t->char_off = n_chars;
        t->pos_off = n_pos;
        if (b->m->has_dict) {
            for (size_t at = 0; at < t->len; at++)
                k += ((unsigned char)s[at] & 0xC0) != 0x80;
            if (fast_cut(b, s, t->len, k, &n_pos) < 0)
                return TOK_ENOMEM;
        } else {
            for (size_t at = 0; at < t->len; k++) {
                uint32_t cp;

                at += tok_utf8_decode_valid(s + at, &cp);
                if (push_pos(b, &n_pos, tok_lac_char_id(b->m, cp), 1) < 0)
                    return TOK_ENOMEM;
            }
        }
        t->n_chars = k;
        n_chars += k;
        t->n_pos = n_pos - t->pos_off;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The networks                                                              */

/* Texts longest first (ties in index order): a merge sort, since qsort's
 * comparison could not see the texts without a global. */
static void
sort_by_length(const struct text *texts, size_t *v, size_t n, size_t *tmp)
{
    if (n < 2)
        return;
    sort_by_length(texts, v, n / 2, tmp);
    sort_by_length(texts, v + n / 2, n - n / 2, tmp);
    {
        size_t i = 0, j = n / 2, k = 0;

        while (i < n / 2 || j < n) {
            bool left;

            if (i == n / 2)
                left = false;
            else if (j == n)
                left = true;
            else {
                size_t la = texts[v[i]].n_pos, lb = texts[v[j]].n_pos;

                left = la > lb || (la == lb && v[i] < v[j]);
            }
            tmp[k++] = left ? v[i++] : v[j++];
        }
        memcpy(v, tmp, n * sizeof(*v));
    }
}

/* How many lanes for n texts: about two texts a lane, so that the lanes
 * come out of about equal length, and a multiple of 8, the rows of the
 * matrix kernels' widest tiles (fewer rows are slower a row). */
static size_t
lanes(size_t n, size_t max_rows)
{
    size_t rows = n / 2 >= 8 ? n / 2 - n / 2 % 8 : n < 8 ? n : 8;

    return rows < max_rows ? rows : max_rows;
}

/* Lay a group's texts (order[0..n), longest first, positions pos in
 * all) out in `rows` lanes of about equal length: each text to the lane
 * with the fewest positions so far, the lanes then longest first, each a
 * run of window positions holding its texts one after another. */
static int
lay_out(struct tok_lac_batch *b, const size_t *order, size_t n, size_t rows,
        size_t pos)
{
    size_t *load = b->lane_len, *at;

    if (grow((void **)&b->lane_of, &b->lane_of_cap, n, sizeof(size_t)) < 0 ||
        grow((void **)&b->wpos, &b->wpos_cap, n, sizeof(size_t)) < 0 ||
        grow((void **)&b->wids, &b->wids_cap, pos, sizeof(uint32_t)) < 0 ||
        grow((void **)&b->wedge, &b->wedge_cap, pos, 1) < 0)
        return TOK_ENOMEM;
    for (size_t l = 0; l < rows; l++)
        load[l] = 0;
    for (size_t k = 0; k < n; k++) {
        size_t best = 0;

        for (size_t l = 1; l < rows; l++)
            if (load[l] < load[best])
                best = l;
        b->lane_of[k] = best;
        load[best] += b->texts[order[k]].n_pos;
    }
    /* Lanes longest first (ties by index): a small sort of rows. */
    for (size_t l = 0; l < rows; l++)
        b->lane_rank[l] = l;
    for (size_t l = 1; l < rows; l++)
        for (size_t m = l; m > 0; m--) {
            size_t x = b->lane_rank[m - 1], y = b->lane_rank[m];

            if (load[x] > load[y] || (load[x] == load[y] && x < y))
                break;
            b->lane_rank[m - 1] = y;
            b->lane_rank[m] = x;
        }
    at = b->lane_at;
    for (size_t r = 0, p = 0; r < rows; r++) {
        size_t l = b->lane_rank[r];

        b->lane_base[r] = p;
        b->lane_steps[r] = load[l];
        at[l] = p;
        p += load[l];
    }
    for (size_t k = 0; k < n; k++) {
        const struct text *t = &b->texts[order[k]];
        size_t p = at[b->lane_of[k]];

        b->wpos[k] = p;
        memcpy(b->wids + p, b->ids + t->pos_off, t->n_pos * sizeof(uint32_t));
        memset(b->wedge + p, 0, t->n_pos);
        b->wedge[p] |= TOK_LAC_START;
        b->wedge[p + t->n_pos - 1] |= TOK_LAC_END;
        at[b->lane_of[k]] += t->n_pos;
    }
    return 0;
}

static int
run_networks(struct tok_lac_batch *b, size_t n_pos)
{
    const struct tok_lac_net *net = &b->m->net;
    size_t n_texts = b->n - b->n_run, i = 0;
    size_t *tmp;
    int rc;

    if (grow((void **)&b->ptags, &b->ptags_cap, n_pos + 1, 1) < 0 ||
        grow((void **)&b->order, &b->order_cap, 2 * n_texts + 1,
             sizeof(*b->order)) < 0 ||
        grow((void **)&b->lane_len, &b->lane_cap, b->max_rows, sizeof(size_t)) <
            0)
        return TOK_ENOMEM;
    if ((b->lane_rank = realloc(b->lane_rank, b->lane_cap * sizeof(size_t))) ==
            NULL ||
        (b->lane_base = realloc(b->lane_base, b->lane_cap * sizeof(size_t))) ==
            NULL ||
        (b->lane_steps =
             realloc(b->lane_steps, b->lane_cap * sizeof(size_t))) == NULL ||
        (b->lane_at = realloc(b->lane_at, b->lane_cap * sizeof(size_t))) ==
            NULL)
        return TOK_ENOMEM;
    if (b->want_margins && grow((void **)&b->margins, &b->margins_cap, b->n + 1,
                                sizeof(double)) < 0)
        return TOK_ENOMEM;
    for (size_t k = 0; k < n_texts; k++)
        b->order[k] = b->n_run + k;
    tmp = b->order + n_texts;
    sort_by_length(b->texts, b->order, n_texts, tmp);
    while (i < n_texts) {
        const struct text *t = &b->texts[b->order[i]];
        struct tok_lac_group g;
        size_t n = 0, pos = 0, rows;

        if (t->n_pos == 0) {
            if (b->want_margins)
                b->margins[b->order[i]] = NAN;
            i++;
            continue;
        }
        if (t->n_pos > b->max_pos) {
            double m = NAN;

            if ((rc = tok_lac_work_reserve(&b->work, net, 1, b->max_pos)) < 0)
                return rc;
            if ((rc = tok_lac_run_long(b->K, net, &b->work, b->ids + t->pos_off,
                                       t->n_pos, b->max_pos,
                                       b->ptags + t->pos_off,
                                       b->want_margins ? &m : NULL)) < 0)
                return rc;
            if (b->want_margins)
                b->margins[b->order[i]] = m;
            i++;
            continue;
        }
        /* The texts that fit the window, in lanes. */
        while (i + n < n_texts) {
            const struct text *u = &b->texts[b->order[i + n]];

            if (u->n_pos == 0 || pos + u->n_pos > b->max_pos)
                break;
            pos += u->n_pos;
            n++;
        }
        rows = lanes(n, b->max_rows);
        if ((rc = lay_out(b, b->order + i, n, rows, pos)) < 0 ||
            (rc = tok_lac_work_reserve(&b->work, net, rows, pos)) < 0)
            return rc;
        g.rows = rows;
        g.base = b->lane_base;
        g.len = b->lane_steps;
        g.ids = b->wids;
        g.edge = b->wedge;
        tok_lac_run_passes(b->K, net, &b->work, &g);
        for (size_t k = 0; k < n; k++) {
            const struct text *u = &b->texts[b->order[i + k]];
            double m;

            tok_lac_decode(b->K, net, &b->work, b->wpos[k], u->n_pos,
                           b->ptags + u->pos_off, b->want_margins ? &m : NULL);
            if (b->want_margins)
                b->margins[b->order[i + k]] = m;
        }
        i += n;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Tags back to characters                                                   */

/* The characters' tags of text t, for the user dictionary: a word id's
 * tag on its first character, t[:-2] + "-I" on the others. */
static void
char_tags(struct tok_lac_batch *b, const struct text *t)
{
    const struct tok_lac_tag *tv = b->lac->tags.v;
    const uint32_t *tag_of = b->m->tag_of;
    uint32_t *ct = b->ctags + t->char_off;
    size_t c = 0;

    for (size_t p = t->pos_off; p < t->pos_off + t->n_pos; p++) {
        uint32_t tag = tag_of[b->ptags[p]];
        size_t chars = b->toklen ? b->toklen[p] : 1;

        ct[c++] = tag;
        for (size_t k = 1; k < chars; k++)
            ct[c++] = tv[tag].to_dash_i;
    }
    tok_lac_custom_apply(b->lac, b->arena.data + t->off, t->len, ct);
}

int
tok_lac_batch_run(struct tok_lac_batch *b, struct tok_err *err)
{
    size_t n_chars, n_pos;
    int rc;

    if (b->n_run == b->n)
        return 0;
    if (!b->m->has_dict) {
        free(b->toklen); /* one character a position */
        b->toklen = NULL;
        b->toklen_cap = 0;
    }
    if ((rc = texts_to_ids(b)) < 0)
        return tok_err_set(err, rc, "out of memory");
    {
        const struct text *last = &b->texts[b->n - 1];

        n_chars = last->char_off + last->n_chars;
        n_pos = last->pos_off + last->n_pos;
    }
    if ((rc = run_networks(b, n_pos)) < 0)
        return tok_err_set(err, rc, "out of memory");
    b->custom = b->lac->custom != NULL;
    if (b->custom) {
        if (grow((void **)&b->ctags, &b->ctags_cap, n_chars + 1,
                 sizeof(*b->ctags)) < 0)
            return tok_err_set(err, TOK_ENOMEM, "out of memory");
        for (size_t i = b->n_run; i < b->n; i++)
            char_tags(b, &b->texts[i]);
    }
    b->n_run = b->n;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Words                                                                     */

void
tok_lac_words_init(struct tok_lac_words *w)
{
    memset(w, 0, sizeof(*w));
}

void
tok_lac_words_release(struct tok_lac_words *w)
{
    free(w->starts);
    free(w->ends);
    free(w->tags);
    memset(w, 0, sizeof(*w));
}

void
tok_lac_words_clear(struct tok_lac_words *w)
{
    w->n = 0;
}

static int
words_grow(struct tok_lac_words *w)
{
    size_t cap = w->cap ? 2 * w->cap : 64;
    size_t *s = realloc(w->starts, cap * sizeof(*s)), *e;
    uint32_t *t;

    if (s == NULL)
        return TOK_ENOMEM;
    w->starts = s;
    if ((e = realloc(w->ends, cap * sizeof(*e))) == NULL)
        return TOK_ENOMEM;
    w->ends = e;
    if ((t = realloc(w->tags, cap * sizeof(*t))) == NULL)
        return TOK_ENOMEM;
    w->tags = t;
    w->cap = cap;
    return 0;
}

int
tok_lac_batch_words(const struct tok_lac_batch *b, size_t i,
                    struct tok_lac_words *w, struct tok_err *err)
{
    const struct tok_lac_tag *tv = b->lac->tags.v;
    const struct text *t;
    const char *s;
    size_t at = 0;

    if (i >= b->n_run)
        return tok_err_set(err, TOK_EINVAL, "no text %zu in the batch run", i);
    t = &b->texts[i];
    s = b->arena.data + t->off;
    /* A word starts at the first character and at each tag ending in B or
     * S; its tag is its last character's.  Without a user dictionary the
     * characters' tags follow from the positions': a word id's other
     * characters take t[:-2] + "-I", which starts no word. */
    for (size_t p = 0, c = 0; p < t->n_pos; p++) {
        size_t chars = b->toklen ? b->toklen[t->pos_off + p] : 1;
        uint32_t tag = b->m->tag_of[b->ptags[t->pos_off + p]];

        for (size_t k = 0; k < chars; k++, c++) {
            uint32_t cp, ct;

            if (b->custom)
                ct = b->ctags[t->char_off + c];
            else
                ct = k == 0 ? tag : tv[tag].to_dash_i;
            if (c == 0 || tv[ct].starts_word) {
                if (w->n == w->cap && words_grow(w) < 0)
                    return tok_err_set(err, TOK_ENOMEM, "out of memory");
                w->starts[w->n] = at;
                w->n++;
            }
            at += tok_utf8_decode_valid(s + at, &cp);
            w->ends[w->n - 1] = at;
            w->tags[w->n - 1] = ct;
        }
    }
    return 0;
}
