/* SPDX-License-Identifier: MIT */
/*
 * tok_jieba_cut.c: jieba 0.42.1's accurate mode, jieba.cut(text, HMM=...).
 *
 * The text is split into "han-ish" runs (CJK U+4E00..U+9FD5, ASCII letters
 * and digits, + # & . _ % -) and the rest.  The rest yields each whitespace
 * character (or CR LF) as a word and every other character alone.  A run is
 * cut by the maximum-probability route through its DAG of dictionary words;
 * consecutive single characters of the route are then either kept, or (with
 * the HMM) regrouped by Viterbi over B/M/E/S for Han characters and by
 * finalseg's re_skip (through PCRE2) for ASCII.  jieba's other regexes are
 * character classes, tested here on the code points the DAG walk decodes
 * anyway: as PCRE2 calls they were 12-20 % of the time.  Every comparison,
 * tie-break and floating-point sum is in jieba's order, so the words are
 * identical.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok_int.h"

struct cut_scratch {
    pcre2_match_data *md;
    uint32_t *cps;  /* code points of the current run */
    size_t *boff;   /* byte offset of each, plus the end */
    double *score;  /* route score from each position */
    uint32_t *next; /* route: last index of the word starting here */
    uint8_t *back;  /* Viterbi back pointers, 4 per character */
    uint8_t *label; /* Viterbi state of each character */
    size_t cap, cap_back;
};

struct cut {
    const struct tok_jieba *j;
    const char *text;
    struct tok_words *w;
    struct cut_scratch *s;
    int rc;
};

/* Append a word, growing the arrays; the slow path of emit(). */
static void
emit_grow(struct cut *c, size_t start, size_t end)
{
    struct tok_words *w = c->w;
    size_t cap = w->cap ? 2 * w->cap : 256;
    size_t *s = realloc(w->starts, cap * sizeof(*s));
    size_t *e;

    if (s == NULL) {
        c->rc = TOK_ENOMEM;
        return;
    }
    w->starts = s;
    e = realloc(w->ends, cap * sizeof(*e));
    if (e == NULL) {
        c->rc = TOK_ENOMEM;
        return;
    }
    w->ends = e;
    w->cap = cap;
    w->starts[w->n] = start;
    w->ends[w->n] = end;
    w->n++;
}

/* Append the word text[start..end), unless empty or after an error
 * (inline: it runs once a word). */
static inline void
emit(struct cut *c, size_t start, size_t end)
{
    struct tok_words *w = c->w;

    if (start == end || c->rc)
        return;
    if (w->n == w->cap) {
        emit_grow(c, start, end);
        return;
    }
    w->starts[w->n] = start;
    w->ends[w->n] = end;
    w->n++;
}

/* Iterate the matches of finalseg's re_skip over text[a..b): calls fn for
 * each gap and each match, in order; `is_match` tells which. */
typedef void (*piece_fn)(struct cut *c, size_t a, size_t b, int is_match);

static void
split(struct cut *c, size_t a, size_t b, piece_fn fn)
{
    const pcre2_code *re = c->j->re_hmm_skip;
    size_t pos = a;

    while (pos < b && !c->rc) {
        /* The JIT entry skips pcre2_match()'s per-call checks; the text
         * is valid UTF-8 and the pattern compiled, so none are needed. */
        int rc = c->j->re_hmm_skip_jit
                     ? pcre2_jit_match(re, (PCRE2_SPTR)c->text, b, pos,
                                       PCRE2_NO_UTF_CHECK, c->s->md, NULL)
                     : pcre2_match(re, (PCRE2_SPTR)c->text, b, pos,
                                   PCRE2_NO_UTF_CHECK, c->s->md, NULL);
        PCRE2_SIZE *ov;

        if (rc < 0)
            break;
        ov = pcre2_get_ovector_pointer(c->s->md);
        {
            /* Copy the match out: fn may run nested splits. */
            size_t ms = ov[0], me = ov[1];

            if (ms > pos)
                fn(c, pos, ms, 0);
            fn(c, ms, me, 1);
            pos = me;
        }
    }
    if (pos < b && !c->rc)
        fn(c, pos, b, 0);
}

static int
reserve(struct cut_scratch *s, size_t n)
{
    size_t cap = s->cap ? s->cap : 256;
    void *p;

    if (n + 1 <= s->cap)
        return 0;
    while (cap < n + 1)
        cap *= 2;
#define GROW(field)                                 \
    p = realloc(s->field, cap * sizeof(*s->field)); \
    if (p == NULL)                                  \
        return TOK_ENOMEM;                          \
    s->field = p;
    GROW(cps)
    GROW(boff)
    GROW(score)
    GROW(next)
#undef GROW
    s->cap = cap;
    return 0;
}

/* Whether FREQ.get(word) > 0 for cps[a..b) (b > a): a word of positive
 * frequency, which its slot's value index tells (0: frequency 0). */
static bool
is_word(const struct tok_jieba *j, const uint32_t *cps, size_t a, size_t b)
{
    uint32_t node = 0;
    uint64_t v = 0;

    for (size_t i = a; i < b; i++) {
        v = tok_jieba_step(j, node, cps[i], &node);
        if (!(v & TOK_JSLOT_USED))
            return false;
    }
    return tok_jslot_val(v) != 0;
}

/* ------------------------------------------------------------------------ */
/* finalseg: the HMM                                                         */

/* One Viterbi step into state y from its two allowed predecessors a and
 * b (jieba's PrevStatus): max over (V[prev] + trans[prev][y] + em, prev)
 * tuples, summed in that order; on equal sums the tuple with the larger
 * state letter wins, which is b when b_wins_tie.  Stores the winner's
 * back pointer. */
static inline double
viterbi_step(double va, double ta, double vb, double tb, double em, int a,
             int b, bool b_wins_tie, uint8_t *back)
{
    double pa = va + ta + em, pb = vb + tb + em;
    bool take_b = b_wins_tie ? pb >= pa : pb > pa;

    *back = (uint8_t)(take_b ? b : a);
    return take_b ? pb : pa;
}

/* Viterbi over the Han characters cps[a..b) and emit the words. */
static void
viterbi(struct cut *c, size_t a, size_t b)
{
    const struct tok_jieba *j = c->j;
    struct cut_scratch *s = c->s;
    const uint32_t *cps = s->cps;
    /* finalseg's begin starts at 0, the start of its block: here a.  A
     * path may reach E without a B (its first characters' B and S
     * emissions missing, as for 嬿 in "中国嬿媞"). */
    size_t n = b - a, begin = a;
    double v[4];
    int state;
    /* The eight transitions PrevStatus allows, t_<from><to>. */
    const double t_eb = j->trans[TOK_HMM_E][TOK_HMM_B],
                 t_sb = j->trans[TOK_HMM_S][TOK_HMM_B],
                 t_mm = j->trans[TOK_HMM_M][TOK_HMM_M],
                 t_bm = j->trans[TOK_HMM_B][TOK_HMM_M],
                 t_be = j->trans[TOK_HMM_B][TOK_HMM_E],
                 t_me = j->trans[TOK_HMM_M][TOK_HMM_E],
                 t_ss = j->trans[TOK_HMM_S][TOK_HMM_S],
                 t_es = j->trans[TOK_HMM_E][TOK_HMM_S];

    if (4 * n > s->cap_back) {
        uint8_t *bk = realloc(s->back, 4 * n), *lb;

        if (bk == NULL) {
            c->rc = TOK_ENOMEM;
            return;
        }
        s->back = bk;
        lb = realloc(s->label, 4 * n);
        if (lb == NULL) {
            c->rc = TOK_ENOMEM;
            return;
        }
        s->label = lb;
        s->cap_back = 4 * n;
    }
    for (int y = 0; y < 4; y++)
        v[y] = j->start[y] + j->emit[4 * (size_t)(cps[a] - TOK_HAN_LO) + y];
    for (size_t t = 1; t < n; t++) {
        /* The four emissions of a character share one cache line. */
        const double *em4 = &j->emit[4 * (size_t)(cps[a + t] - TOK_HAN_LO)];
        uint8_t *bk = &s->back[4 * t];
        double nb, nm, ne, ns;

        /* Ties: B from E or S takes S, M from M or B takes M, E from B
         * or M takes M, S from S or E takes S (the larger letter). */
        nb =
            viterbi_step(v[TOK_HMM_E], t_eb, v[TOK_HMM_S], t_sb, em4[TOK_HMM_B],
                         TOK_HMM_E, TOK_HMM_S, true, &bk[TOK_HMM_B]);
        nm =
            viterbi_step(v[TOK_HMM_M], t_mm, v[TOK_HMM_B], t_bm, em4[TOK_HMM_M],
                         TOK_HMM_M, TOK_HMM_B, false, &bk[TOK_HMM_M]);
        ne =
            viterbi_step(v[TOK_HMM_B], t_be, v[TOK_HMM_M], t_me, em4[TOK_HMM_E],
                         TOK_HMM_B, TOK_HMM_M, true, &bk[TOK_HMM_E]);
        ns =
            viterbi_step(v[TOK_HMM_S], t_ss, v[TOK_HMM_E], t_es, em4[TOK_HMM_S],
                         TOK_HMM_S, TOK_HMM_E, false, &bk[TOK_HMM_S]);
        v[TOK_HMM_B] = nb;
        v[TOK_HMM_M] = nm;
        v[TOK_HMM_E] = ne;
        v[TOK_HMM_S] = ns;
    }
    /* max((V[E], 'E'), (V[S], 'S')): S on a tie. */
    state = v[TOK_HMM_S] >= v[TOK_HMM_E] ? TOK_HMM_S : TOK_HMM_E;
    for (size_t t = n; t-- > 0;) {
        s->label[t] = (uint8_t)state;
        if (t)
            state = s->back[4 * t + (size_t)state];
    }
    for (size_t t = 0; t < n; t++) {
        int label = s->label[t];
        size_t i = a + t;

        if (label == TOK_HMM_B) {
            begin = i;
        } else if (label == TOK_HMM_E || label == TOK_HMM_S) {
            size_t from = label == TOK_HMM_E ? begin : i;

            if (j->force_split) {
                /* A word once added with frequency 0 is forced apart, even
                 * if added again later: jieba never empties its
                 * Force_Split_Words. */
                uint32_t node = 0;
                for (size_t k = from; k <= i && (k == from || node); k++)
                    node = tok_jieba_child(j, node, cps[k]);
                if (node && j->force_split[node]) {
                    for (size_t k = from; k <= i; k++)
                        emit(c, s->boff[k], s->boff[k + 1]);
                    continue;
                }
            }
            emit(c, s->boff[from], s->boff[i + 1]);
        }
    }
}

static void
hmm_skip_piece(struct cut *c, size_t a, size_t b, int is_match)
{
    (void)is_match;
    emit(c, a, b);
}

static bool
is_hmm_han(uint32_t cp)
{
    return cp >= TOK_HAN_LO && cp <= TOK_HAN_HI;
}

/* finalseg.cut() of the buffer cps[lo..hi): runs of Han characters (its
 * re_han, a character class, found on the decoded code points) go to
 * Viterbi, the text between them through its re_skip. */
static void
finalseg(struct cut *c, size_t lo, size_t hi)
{
    const struct cut_scratch *s = c->s;
    size_t i = lo;

    while (i < hi && !c->rc) {
        size_t k = i;

        while (k < hi && is_hmm_han(s->cps[k]))
            k++;
        if (k > i) {
            viterbi(c, i, k);
            i = k;
            continue;
        }
        while (k < hi && !is_hmm_han(s->cps[k]))
            k++;
        split(c, s->boff[i], s->boff[k], hmm_skip_piece);
        i = k;
    }
}

/* ------------------------------------------------------------------------ */
/* The DAG and the route                                                     */

static bool
is_ascii_alnum(uint32_t cp)
{
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
           (cp >= 'A' && cp <= 'Z');
}

/* The route's single characters cps[lo..hi) (hi > lo), with the HMM. */
static void
flush_hmm(struct cut *c, size_t lo, size_t hi)
{
    const struct cut_scratch *s = c->s;

    if (hi - lo == 1) {
        emit(c, s->boff[lo], s->boff[hi]);
    } else if (is_word(c->j, s->cps, lo, hi)) {
        for (size_t k = lo; k < hi; k++)
            emit(c, s->boff[k], s->boff[k + 1]);
    } else {
        finalseg(c, lo, hi);
    }
}

/* How far ahead of the DAG walk (which goes right to left) the first
 * table lookup of a position is prefetched: the walks of nearby positions
 * are independent, so their loads can overlap.  Until 2026-11-26 GCC
 * compiled these prefetches away (see tok_prefetch()); made real, they
 * took 5-12 % off `segment` (docs/benchmarks-history.md).  3, 4 and 5
 * measured alike; a second stage that also prefetched the depth-3 lookup
 * (reading the depth-2 slot) was 20 % slower. */
#define PREFETCH_AHEAD 3

/* Prefetch the filter word and the table slot of the edge by cps[1] from
 * the node of cps[0], the lookup the walk from cps[0] makes first. */
static inline void
prefetch_pair(const struct tok_jieba *j, const uint32_t *cps)
{
    uint64_t r;
    uint32_t node;

    if (cps[0] >= TOK_JROOT_N)
        return;
    r = j->root[cps[0]];
    if (!(r & TOK_JSLOT_USED))
        return;
    node = (uint32_t)(r & TOK_JNODE_MAX);
    tok_prefetch(&j->bloom[tok_bloom_word(tok_jedge_product(node, cps[1]))]);
    tok_prefetch(&j->slots[tok_jedge_hash(node, cps[1]) & j->edge_mask]);
}

/* re_han_default's ASCII members (letters, digits, + # & . _ % -), a bit
 * per byte value. */
static const uint64_t hanish_ascii[2] = {
    /* 0-63: # % & + - . and 0-9 */
    (1ULL << '#') | (1ULL << '%') | (1ULL << '&') | (1ULL << '+') |
        (1ULL << '-') | (1ULL << '.') | (0x3FFULL << '0'),
    /* 64-127: A-Z _ a-z */
    (0x3FFFFFFULL << ('A' - 64)) | (1ULL << ('_' - 64)) |
        (0x3FFFFFFULL << ('a' - 64)),
};

/* Decode the run of re_han_default's class ([\u4E00-\u9FD5] and the
 * ASCII above) that starts at text[a] (ends before len) into the scratch,
 * set *end past it, and compute its route (jieba's get_DAG + calc,
 * fused).  Returns its length in code points, 0 if text[a] is not in the
 * class. */
static size_t
cut_block(struct cut *c, size_t a, size_t len, size_t *end)
{
    const struct tok_jieba *j = c->j;
    struct cut_scratch *s = c->s;
    const unsigned char *t = (const unsigned char *)c->text;
    const double lt = j->logtotal;
    size_t n = 0, b = a;

    while (b < len) {
        uint32_t *cps;
        size_t *boff, stop;

        if (n + 1 >= s->cap && reserve(s, n + 1) < 0) {
            c->rc = TOK_ENOMEM;
            return 0;
        }
        /* Each code point takes a byte or more, so the bytes up to stop
         * fit the room left: the inner loop checks no capacity, and its
         * arrays and bounds live in registers. */
        cps = s->cps;
        boff = s->boff;
        stop = b + (s->cap - 1 - n) < len ? b + (s->cap - 1 - n) : len;
        while (b < stop) {
            uint32_t cp = t[b];
            size_t k = 1;

            if (cp < 0x80) {
                if (!((hanish_ascii[cp >> 6] >> (cp & 63)) & 1))
                    goto decoded;
            } else if ((cp & 0xF0) == 0xE0) {
                cp = ((cp & 0x0F) << 12) | ((uint32_t)(t[b + 1] & 0x3F) << 6) |
                     (t[b + 2] & 0x3F);
                if (cp < TOK_HAN_LO || cp > TOK_HAN_HI)
                    goto decoded;
                k = 3;
            } else {
                goto decoded;
            }
            cps[n] = cp;
            boff[n] = b;
            n++;
            b += k;
        }
    }
decoded:
    *end = b;
    if (n == 0)
        return 0;
    s->boff[n] = b;
    s->score[n] = 0.0;
    /* calc(): right to left, max over the DAG's ends of
     * (log(freq) - logtotal) + score[end + 1]; an equal score goes to the
     * larger end, as Python's max over (score, end) tuples does.  The DAG
     * (get_DAG) is walked on the fly: words starting at idx are the trie
     * path from cps[idx] while it lasts. */
    for (size_t idx = n; idx-- > 0;) {
        uint32_t node;
        uint64_t v = tok_jieba_step(j, 0, s->cps[idx], &node);
        /* No word yet: every score is finite, so the first one wins. */
        double best = -INFINITY;
        size_t best_x = idx;

        if (idx > PREFETCH_AHEAD)
            prefetch_pair(j, s->cps + idx - PREFETCH_AHEAD);

        for (size_t i = idx; v & TOK_JSLOT_USED;) {
            if (tok_jslot_val(v) != 0) { /* a word, not only a prefix */
                double sc = (tok_jieba_logf(j, v) - lt) + s->score[i + 1];

                if (sc >= best) {
                    best = sc;
                    best_x = i;
                }
            }
            if ((v & TOK_JSLOT_LEAF) || ++i >= n)
                break; /* a leaf: no longer word starts here */
            v = tok_jieba_hashed(j, node, s->cps[i], &node);
        }
        if (best == -INFINITY) /* no word: the character alone, log(1) */
            best = (0.0 - lt) + s->score[idx + 1];
        s->score[idx] = best;
        s->next[idx] = (uint32_t)best_x;
    }
    return n;
}

/* Walk the route of the run just cut (cps[0..n)) and emit its words. */
static void
walk_route(struct cut *c, size_t n, int hmm)
{
    const struct cut_scratch *s = c->s;
    size_t x = 0, lo = 0, hi = 0;

    while (x < n && !c->rc) {
        size_t y = s->next[x] + 1;

        if (hmm) {
            if (y - x == 1) {
                if (hi == lo)
                    lo = x;
                hi = y;
            } else {
                if (hi > lo) /* the call is not cheap: most words skip it */
                    flush_hmm(c, lo, hi);
                lo = hi = 0;
                emit(c, s->boff[x], s->boff[y]);
            }
        } else {
            if (y - x == 1 && is_ascii_alnum(s->cps[x])) {
                if (hi == lo)
                    lo = x;
                hi = y;
            } else {
                if (hi > lo)
                    emit(c, s->boff[lo], s->boff[hi]);
                lo = hi = 0;
                emit(c, s->boff[x], s->boff[y]);
            }
        }
        x = y;
    }
    if (hmm && hi > lo)
        flush_hmm(c, lo, hi);
    else if (hi > lo)
        emit(c, s->boff[lo], s->boff[hi]);
}

/* ------------------------------------------------------------------------ */
/* The top level                                                             */

int
tok_jieba_cut(const struct tok_jieba *j, const char *text, size_t len,
              int flags, struct tok_words *w, struct tok_err *err)
{
    struct cut c;
    struct cut_scratch *s;
    int hmm = flags & TOK_JIEBA_HMM;
    size_t pos = 0;

    if (!(flags & TOK_JIEBA_TRUSTED)) {
        size_t bad = tok_utf8_check(text, len);

        if (bad != len)
            return tok_err_set(err, TOK_EUTF8,
                               "invalid UTF-8 at byte offset %zu (byte 0x%02X)",
                               bad, (unsigned)(unsigned char)text[bad]);
    }
    if (w->scratch == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL || (s->md = pcre2_match_data_create(4, NULL)) == NULL) {
            free(s);
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
        }
        w->scratch = s;
    }
    c.j = j;
    c.text = text;
    c.w = w;
    c.s = w->scratch;
    c.rc = 0;
    /* re_han_default.split(): each run of the class is cut by the DAG;
     * between runs, re_skip.split() yields "\r\n", each whitespace
     * character, and every other character alone: in accurate mode that
     * is one word a character, with "\r\n" kept together. */
    while (pos < len && !c.rc) {
        size_t end, n = cut_block(&c, pos, len, &end);

        if (n) {
            walk_route(&c, n, hmm);
            pos = end;
        } else {
            uint32_t cp;
            size_t k = tok_utf8_decode_valid(text + pos, &cp);

            if (cp == '\r' && pos + 1 < len && text[pos + 1] == '\n')
                k = 2;
            emit(&c, pos, pos + k);
            pos += k;
        }
    }
    if (c.rc)
        return tok_err_set(err, c.rc, "%s", tok_strerror(c.rc));
    return 0;
}

void
tok_words_init(struct tok_words *w)
{
    memset(w, 0, sizeof(*w));
}

void
tok_words_clear(struct tok_words *w)
{
    w->n = 0;
}

void
tok_words_release(struct tok_words *w)
{
    struct cut_scratch *s = w->scratch;

    if (s) {
        pcre2_match_data_free(s->md);
        free(s->cps);
        free(s->boff);
        free(s->score);
        free(s->next);
        free(s->back);
        free(s->label);
        free(s);
    }
    free(w->starts);
    free(w->ends);
    tok_words_init(w);
}
