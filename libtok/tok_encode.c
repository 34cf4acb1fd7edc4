/* SPDX-License-Identifier: MIT */
/*
 * tok_encode.c: the BERT basic tokenizer and WordPiece, in one streaming
 * pass over the text.
 *
 * The references build new strings at every step (clean, pad CJK, split on
 * whitespace, lowercase, NFD, drop Mn, split on punctuation, WordPiece).
 * Each of those steps is local to a whitespace-separated word, so here one
 * left-to-right scan feeds normalized code points into the current "piece"
 * (the text between punctuation inside a word) and runs WordPiece whenever a
 * piece ends.  A piece longer than max_chars_per_word becomes [UNK] without
 * being stored, so memory does not grow with the length of a word.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"

/* A normalized code point waiting in the piece or in the reorder buffer,
 * with the byte span of the input character it came from. */
struct ncp {
    uint32_t cp;
    uint8_t ccc;
    size_t start, end;
};

struct scratch {
    struct ncp *piece; /* the current piece (at most max_chars + 1) */
    size_t n_piece, cap_piece;
    size_t n_total;   /* code points in the piece, counting overflow */
    size_t piece_end; /* end of the last input character of the piece */
    struct ncp *pend; /* a run of non-starters awaiting canonical order */
    size_t n_pend, cap_pend;
    char *bytes; /* the piece as UTF-8, for vocab lookups */
    size_t cap_bytes;
    size_t *boff; /* byte offset of each code point in bytes */
    size_t cap_boff;
    uint64_t *hash; /* FNV state after each candidate end */
    size_t cap_hash;
};

struct state {
    const struct tok_tokenizer *t;
    struct tok_encoding *e;
    struct scratch *s;
    int rc;
};

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

/* (inline: it runs once a token) */
static inline int
emit(struct state *st, tok_id id, size_t start, size_t end)
{
    if (tok_encoding_push(st->e, id, start, end) < 0)
        return st->rc = TOK_ENOMEM;
    return 0;
}

/* The same for a token that is the one character cp of text[start, end),
 * unchanged. */
static inline int
emit_char(struct state *st, tok_id id, size_t start, size_t end, uint32_t cp)
{
    if (tok_encoding_push_char(st->e, id, start, end, cp) < 0)
        return st->rc = TOK_ENOMEM;
    return 0;
}

static tok_id
lookup_single(const struct tok_tokenizer *t, uint32_t cp)
{
    char buf[4];
    size_t n;

    if (cp < TOK_DIRECT_MAX)
        return t->direct_whole[cp];
    n = tok_utf8_encode(cp, buf);
    return tok_vocab_find(t->vocab, buf, n);
}

/* ------------------------------------------------------------------------ */
/* WordPiece                                                                 */

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

/* Greedy longest-match-first over n >= 2 characters, character k being
 * bytes[boff[k], boff[k + 1]) (with boff NULL: bytes[k], one byte each)
 * and coming from text[start, end) of piece[k] (with piece NULL: from
 * text[base + k, base + k + 1)).  [UNK] spans [span_start, span_end). */
static void
wordpiece_chars(struct state *st, const char *bytes, const size_t *boff,
                size_t n, const struct ncp *piece, size_t base,
                size_t span_start, size_t span_end)
{
    const struct tok_tokenizer *t = st->t;
    const struct tok_vocab *v = t->vocab;
    struct scratch *s = st->s;
    size_t first = st->e->n, start = 0;

#define BOFF(k) (boff ? boff[k] : (k))
    if (grow((void **)&s->hash, &s->cap_hash, n + 1, sizeof(uint64_t)) < 0) {
        st->rc = TOK_ENOMEM;
        return;
    }
    while (start < n) {
        size_t end = n, maxlen = start ? v->max_cont_len : v->max_whole_len;
        const struct tok_map *m = start ? &v->cont : &v->whole;
        size_t skip = start ? 2 : 0;
        tok_id found = -1;
        uint64_t h = TOK_HASH_INIT;

        while (end > start && BOFF(end) - BOFF(start) > maxlen)
            end--;
        /* The hash of every candidate [start, k), in one forward pass. */
        for (size_t k = start, b = BOFF(start); k < end; k++) {
            for (; b < BOFF(k + 1); b++)
                h = tok_hash_step(h, (unsigned char)bytes[b]);
            s->hash[k + 1] = h;
        }
        for (; end > start; end--) {
            const char *key = bytes + BOFF(start);
            size_t klen = BOFF(end) - BOFF(start);

            found = tok_map_find(v, m, key, klen, skip,
                                 tok_hash_final(s->hash[end]));
            if (found >= 0)
                break;
        }
        if (found < 0) {
            /* No piece fits at `start`: the whole word is [UNK]. */
            st->e->n = first;
            emit(st, t->unk, span_start, span_end);
            return;
        }
        if (emit(st, found, piece ? piece[start].start : base + start,
                 piece ? piece[end - 1].end : base + end) < 0)
            return;
        start = end;
    }
#undef BOFF
}

/* Greedy longest-match-first over the current piece. */
static void
wordpiece(struct state *st)
{
    const struct tok_tokenizer *t = st->t;
    struct scratch *s = st->s;
    size_t n = s->n_piece, nb = 0;
    size_t span_start, span_end = s->piece_end;

    if (s->n_total == 0)
        return;
    span_start = s->piece[0].start;
    if (s->n_total > t->opts.max_chars_per_word) {
        emit(st, t->unk, span_start, span_end);
        return;
    }
    if (n == 1) {
        tok_id id = lookup_single(t, s->piece[0].cp);
        emit(st, id < 0 ? t->unk : id, span_start, span_end);
        return;
    }
    if (grow((void **)&s->bytes, &s->cap_bytes, 4 * n + 1, 1) < 0 ||
        grow((void **)&s->boff, &s->cap_boff, n + 1, sizeof(size_t)) < 0) {
        st->rc = TOK_ENOMEM;
        return;
    }
    for (size_t k = 0; k < n; k++) {
        s->boff[k] = nb;
        nb += tok_utf8_encode(s->piece[k].cp, s->bytes + nb);
    }
    s->boff[n] = nb;
    wordpiece_chars(st, s->bytes, s->boff, n, s->piece, 0, span_start,
                    span_end);
}

static void
end_piece(struct state *st)
{
    wordpiece(st);
    st->s->n_piece = 0;
    st->s->n_total = 0;
}

/* A normalized code point, in canonical order, enters the word; verbatim
 * when it is the input character text[start, end) itself. */
static void
push_norm(struct state *st, uint32_t cp, uint8_t ccc, size_t start, size_t end,
          bool verbatim)
{
    const struct tok_tokenizer *t = st->t;
    struct scratch *s = st->s;
    uint8_t f = tok_cc_class(t->cc, cp);

    if (t->opts.lowercase && (f & TOK_CC_MN))
        return;
    if (f & t->split_mask) {
        tok_id id;

        end_piece(st);
        id = lookup_single(t, cp);
        emit_char(st, id < 0 ? t->unk : id, start, end,
                  verbatim && id >= 0 ? cp : 0);
        return;
    }
    if (s->n_total == 0)
        s->piece_end = end;
    s->n_total++;
    if (end > s->piece_end)
        s->piece_end = end;
    if (s->n_piece > t->opts.max_chars_per_word)
        return; /* already too long: only the span is tracked */
    if (grow((void **)&s->piece, &s->cap_piece, s->n_piece + 1,
             sizeof(*s->piece)) < 0) {
        st->rc = TOK_ENOMEM;
        return;
    }
    s->piece[s->n_piece].cp = cp;
    s->piece[s->n_piece].ccc = ccc;
    s->piece[s->n_piece].start = start;
    s->piece[s->n_piece].end = end;
    s->n_piece++;
}

/* Emit the pending non-starters sorted by combining class (stable), which
 * completes NFD's canonical ordering. */
static void
flush_pending(struct state *st)
{
    struct scratch *s = st->s;

    for (size_t i = 1; i < s->n_pend; i++) {
        struct ncp x = s->pend[i];
        size_t j = i;

        while (j > 0 && s->pend[j - 1].ccc > x.ccc) {
            s->pend[j] = s->pend[j - 1];
            j--;
        }
        s->pend[j] = x;
    }
    for (size_t i = 0; i < s->n_pend; i++)
        push_norm(st, s->pend[i].cp, s->pend[i].ccc, s->pend[i].start,
                  s->pend[i].end, false);
    s->n_pend = 0;
}

static void
end_word(struct state *st)
{
    if (st->s->n_pend)
        flush_pending(st);
    end_piece(st);
}

/* One input character (not dropped, not whitespace) enters the word. */
static void
feed(struct state *st, uint32_t cp, size_t start, size_t end)
{
    const struct tok_tokenizer *t = st->t;
    struct scratch *s = st->s;
    uint32_t out[TOK_NORM_MAX];
    uint8_t ccc[TOK_NORM_MAX];
    size_t n;

    if (!t->opts.lowercase || !(tok_cc_class(t->cc, cp) & TOK_CC_NORM)) {
        if (s->n_pend)
            flush_pending(st);
        push_norm(st, cp, 0, start, end, true);
        return;
    }
    if (cp < 0x80) {
        if (s->n_pend)
            flush_pending(st);
        push_norm(st, cp | 0x20, 0, start, end, false); /* only A-Z: NORM */
        return;
    }
    n = tok_normalize_cp(cp, out, ccc);
    for (size_t i = 0; i < n; i++) {
        if (ccc[i] == 0) {
            if (s->n_pend)
                flush_pending(st);
            push_norm(st, out[i], 0, start, end, false);
            continue;
        }
        if (grow((void **)&s->pend, &s->cap_pend, s->n_pend + 1,
                 sizeof(*s->pend)) < 0) {
            st->rc = TOK_ENOMEM;
            return;
        }
        s->pend[s->n_pend].cp = out[i];
        s->pend[s->n_pend].ccc = ccc[i];
        s->pend[s->n_pend].start = start;
        s->pend[s->n_pend].end = end;
        s->n_pend++;
    }
}

/* The ideographs of s[j, stop) that cjk_run() takes, appended to e,
 * which has room for them; returns where they end. */
static inline size_t
cjk_fill(struct tok_encoding *e, const tok_id *run, const unsigned char *s,
         size_t j, size_t stop, bool offsets, bool chars)
{
    size_t n = e->n;

    for (; stop - j >= 3 && s[j] >= 0xE4 && s[j] <= 0xE9; j += 3, n++) {
        uint32_t cp = tok_utf8_decode3(s + j);
        tok_id id = run[cp - TOK_CJK_RUN_LO];

        if (id == TOK_CJK_RUN_NO)
            break;
        e->ids[n] = id;
        if (offsets) {
            e->starts[n] = j;
            e->ends[n] = j + 3;
        }
        if (chars)
            e->chars[n] = cp;
    }
    e->n = n;
    return j;
}

/* A run of characters from text[i] that are each a token of their own
 * (CJK ideographs that normalization leaves alone): each emitted with one
 * table load, without the class checks and the word state of the general
 * path.  Returns the end of the run, i if text[i] does not start one.
 * text is valid UTF-8, so a lead byte E4..E9 has its two bytes. */
static size_t
cjk_run(struct state *st, const char *text, size_t len, size_t i)
{
    const unsigned char *s = (const unsigned char *)text;
    const tok_id *run = st->t->cjk_run;
    struct tok_encoding *e = st->e;
    size_t j = i;

    if (len - i < 3 ||
        run[tok_utf8_decode3(s + i) - TOK_CJK_RUN_LO] == TOK_CJK_RUN_NO)
        return i;
    if (st->s->n_total || st->s->n_pend) {
        end_word(st);
        if (st->rc)
            return i;
    }
    for (;;) {
        /* As many characters as the arrays have room for, without a
         * capacity check or the optional arrays' flags a character. */
        size_t room = e->cap - e->n, stop;

        if (room == 0) {
            if (tok_encoding_grow(e) < 0) {
                st->rc = TOK_ENOMEM;
                return j;
            }
            continue;
        }
        stop = len - j >= 3 * room ? j + 3 * room : len;
        /* The flags as constants where it counts (no offsets). */
        if (e->want_offsets)
            j = cjk_fill(e, run, s, j, stop, true, e->want_chars);
        else if (e->want_chars)
            j = cjk_fill(e, run, s, j, stop, false, true);
        else
            j = cjk_fill(e, run, s, j, stop, false, false);
        /* Stopped by the room left (the arrays are full): go on. */
        if (e->n < e->cap || len - j < 3 || s[j] < 0xE4 || s[j] > 0xE9)
            return j;
    }
}

static inline unsigned char
tok_ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c | 0x20) : c;
}

/* A word of ASCII letters and digits from text[i] that the general path
 * would make one piece of (nothing pending before it; after it the end,
 * white space, punctuation or a character of cjk_run(), each of which
 * ends a piece): its bytes lowered and given to WordPiece as they are,
 * without a code point a character.  Returns its end, i if text[i] does
 * not start one (then the general path takes it). */
static size_t
ascii_word(struct state *st, const char *text, size_t len, size_t i)
{
    const struct tok_tokenizer *t = st->t;
    const unsigned char *s = (const unsigned char *)text;
    struct scratch *sc = st->s;
    size_t j = i, n;
    unsigned char c;

    if (sc->n_total || sc->n_pend)
        return i;
    while (j < len && s[j] < 0x80 && t->ascii_in_word[s[j]])
        j++;
    n = j - i;
    if (n == 0 || n > t->opts.max_chars_per_word)
        return i;
    if (j < len) {
        c = s[j];
        if (c < 0x80) {
            if (!(tok_cc_class(t->cc, c) & (TOK_CC_SPACE | t->split_mask)))
                return i; /* a dropped character joins what follows */
        } else if (c < 0xE4 || c > 0xE9 || len - j < 3 ||
                   t->cjk_run[tok_utf8_decode3(s + j) - TOK_CJK_RUN_LO] ==
                       TOK_CJK_RUN_NO) {
            return i;
        }
    }
    if (n == 1) {
        tok_id id =
            lookup_single(t, t->opts.lowercase ? tok_ascii_lower(s[i]) : s[i]);

        emit(st, id < 0 ? t->unk : id, i, j);
        return j;
    }
    if (grow((void **)&sc->bytes, &sc->cap_bytes, n + 1, 1) < 0) {
        st->rc = TOK_ENOMEM;
        return j;
    }
    for (size_t k = 0; k < n; k++)
        sc->bytes[k] =
            (char)(t->opts.lowercase ? tok_ascii_lower(s[i + k]) : s[i + k]);
    wordpiece_chars(st, sc->bytes, NULL, n, NULL, i, i, j);
    return j;
}

/* If a special token starts at text[i], return its index, else -1. */
static int
match_special(const struct tok_tokenizer *t, const char *text, size_t len,
              size_t i)
{
    for (int k = 0; k < TOK_SPECIAL_COUNT; k++) {
        size_t n = t->special_len[k];

        if (n && n <= len - i && memcmp(text + i, t->special_str[k], n) == 0)
            return k;
    }
    return -1;
}

/* tok_encode(), with or without the fast paths for runs of CJK and for
 * ASCII words (without: every character through the general path). */
static int
encode(const struct tok_tokenizer *t, const char *text, size_t len,
       struct tok_encoding *e, struct tok_err *err, bool fast)
{
    struct state st;
    size_t bad, i = 0, n_start = e->n;

    bad = e->valid_utf8 ? len : tok_utf8_check(text, len);
    if (bad != len)
        return tok_err_set(err, TOK_EUTF8,
                           "invalid UTF-8 at byte offset %zu (byte 0x%02X)",
                           bad, (unsigned)(unsigned char)text[bad]);
    if (e->scratch == NULL) {
        e->scratch = calloc(1, sizeof(struct scratch));
        if (e->scratch == NULL)
            return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    }
    if (tok_encoding_ready(e) < 0)
        return tok_err_set(err, TOK_ENOMEM, "%s", tok_strerror(TOK_ENOMEM));
    st.t = t;
    st.e = e;
    st.s = e->scratch;
    st.rc = 0;
    st.s->n_piece = st.s->n_total = st.s->n_pend = 0;

    while (i < len && st.rc == 0) {
        unsigned char c = (unsigned char)text[i];
        uint32_t cp;
        size_t n;
        uint8_t f;

        if (c == '[' && t->opts.split_special) {
            int k = match_special(t, text, len, i);

            if (k >= 0) {
                tok_id id = tok_vocab_special(t->vocab, (enum tok_special)k);

                end_word(&st);
                emit(&st, id < 0 ? t->unk : id, i, i + t->special_len[k]);
                i += t->special_len[k];
                continue;
            }
        }
        if (!fast) {
            /* the general path only */
        } else if (c >= 0xE4 && c <= 0xE9) {
            size_t end = cjk_run(&st, text, len, i);

            if (end > i) {
                i = end;
                continue;
            }
        } else if (c < 0x80 && t->ascii_in_word[c]) {
            size_t end = ascii_word(&st, text, len, i);

            if (end > i) {
                i = end;
                continue;
            }
        }
        n = tok_utf8_decode_valid(text + i, &cp); /* checked on entry */
        f = tok_cc_class(t->cc, cp);
        if (f & TOK_CC_DROP) {
            /* Removed before splitting, so it joins its neighbours. */
        } else if (f & TOK_CC_SPACE) {
            end_word(&st);
        } else if ((f & TOK_CC_CJK) && !(f & (TOK_CC_NORM | TOK_CC_MN))) {
            /* Most of Chinese text: a word of its own that normalization
             * leaves alone, so its token is the character's own (what
             * feed() and wordpiece() would find, without them). */
            tok_id id;

            if (st.s->n_total || st.s->n_pend)
                end_word(&st);
            /* [UNK] is not the character: its chars entry is 0 */
            id = lookup_single(t, cp);
            emit_char(&st, id < 0 ? t->unk : id, i, i + n, id < 0 ? 0 : cp);
        } else if (f & TOK_CC_CJK) {
            end_word(&st);
            feed(&st, cp, i, i + n);
            end_word(&st);
        } else {
            feed(&st, cp, i, i + n);
        }
        i += n;
    }
    if (st.rc == 0)
        end_word(&st);
    if (st.rc < 0) {
        e->n = n_start;
        return tok_err_set(err, st.rc, "%s", tok_strerror(st.rc));
    }
    return 0;
}

int
tok_encode(const struct tok_tokenizer *t, const char *text, size_t len,
           struct tok_encoding *e, struct tok_err *err)
{
    return encode(t, text, len, e, err, true);
}

int
tok_encode_reference(const struct tok_tokenizer *t, const char *text,
                     size_t len, struct tok_encoding *e, struct tok_err *err)
{
    return encode(t, text, len, e, err, false);
}

/* ------------------------------------------------------------------------ */
/* Objects                                                                   */

void
tok_opts_init(struct tok_opts *o, enum tok_flavor flavor)
{
    o->flavor = flavor;
    o->lowercase = 1;
    o->max_chars_per_word = 100;
    o->split_special = 1;
}

int
tok_tokenizer_new(struct tok_tokenizer **out, const struct tok_vocab *vocab,
                  const struct tok_opts *opts, struct tok_err *err)
{
    static const char *const names[TOK_SPECIAL_COUNT] = { "[PAD]", "[UNK]",
                                                          "[CLS]", "[SEP]",
                                                          "[MASK]" };
    struct tok_tokenizer *t;

    *out = NULL;
    if (vocab == NULL || opts == NULL ||
        (opts->flavor != TOK_FLAVOR_ERNIE && opts->flavor != TOK_FLAVOR_BERT))
        return tok_err_set(err, TOK_EINVAL, "invalid tokenizer options");
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        goto nomem;
    t->vocab = vocab;
    t->opts = *opts;
    t->cc = tok_cc_table();
    t->direct_whole = malloc(TOK_DIRECT_MAX * sizeof(*t->direct_whole));
    t->cjk_run = malloc(TOK_CJK_RUN_N * sizeof(*t->cjk_run));
    if (t->cc == NULL || t->direct_whole == NULL || t->cjk_run == NULL)
        goto nomem;
    t->split_mask = TOK_CC_PUNCT;
    if (opts->flavor == TOK_FLAVOR_ERNIE)
        t->split_mask |= TOK_CC_SYMBOL;
    t->unk = tok_vocab_special(vocab, TOK_SPECIAL_UNK);
    /* One-character tokens, straight from the vocab's entries.  Entry ids
     * are the tokens' final ids (a repeated token keeps its last). */
    memset(t->direct_whole, 0xFF, TOK_DIRECT_MAX * sizeof(*t->direct_whole));
    for (size_t i = 0; i < vocab->n_entries; i++) {
        const struct tok_entry *en = &vocab->entries[i];
        uint32_t cp;

        if (en->len <= 4 &&
            tok_utf8_decode(vocab->arena + en->off, en->len, &cp) == en->len &&
            cp < TOK_DIRECT_MAX)
            t->direct_whole[cp] = en->id;
    }
    /* The characters tok_encode() takes in runs: those its CJK branch
     * would take (not dropped, not space, not changed by normalization)
     * and the vocab has (the rest become [UNK] on the general path). */
    for (uint32_t k = 0; k < TOK_CJK_RUN_N; k++) {
        uint32_t cp = TOK_CJK_RUN_LO + k;
        uint8_t f = tok_cc_class(t->cc, cp);
        tok_id id = t->direct_whole[cp];

        if (id >= 0 && (f & TOK_CC_CJK) &&
            !(f & (TOK_CC_DROP | TOK_CC_SPACE | TOK_CC_NORM | TOK_CC_MN)))
            t->cjk_run[k] = id;
        else
            t->cjk_run[k] = TOK_CJK_RUN_NO;
    }
    /* The ASCII characters the general path only appends to a piece
     * (lowered if A-Z): not dropped, not space, not split off. */
    for (unsigned c = 0; c < 128; c++) {
        uint8_t f = tok_cc_class(t->cc, c);

        t->ascii_in_word[c] = !(f & (TOK_CC_DROP | TOK_CC_SPACE | TOK_CC_CJK |
                                     TOK_CC_MN | t->split_mask)) &&
                              (!(f & TOK_CC_NORM) || (c >= 'A' && c <= 'Z'));
    }
    /* PaddleNLP splits the text on its five special tokens whether or not
     * the vocab has them; HF adds only those the vocab has. */
    for (int k = 0; k < TOK_SPECIAL_COUNT; k++) {
        bool use = opts->flavor == TOK_FLAVOR_ERNIE ||
                   tok_vocab_special(vocab, (enum tok_special)k) >= 0;

        t->special_str[k] = names[k];
        t->special_len[k] = use ? strlen(names[k]) : 0;
    }
    *out = t;
    return 0;
nomem:
    tok_tokenizer_free(t);
    return tok_err_set(err, TOK_ENOMEM, "cannot create tokenizer: %s",
                       tok_strerror(TOK_ENOMEM));
}

void
tok_tokenizer_free(struct tok_tokenizer *t)
{
    if (t == NULL)
        return;
    free(t->direct_whole);
    free(t->cjk_run);
    free(t);
}

/* Resize *p to cap elements of elem bytes (allocate it if wanted or
 * already there).  Returns 0 or TOK_ENOMEM. */
static int
resize_if(void **p, bool want, size_t cap, size_t elem)
{
    void *q;

    if (!want && *p == NULL)
        return 0;
    if ((q = realloc(*p, cap * elem)) == NULL)
        return TOK_ENOMEM;
    *p = q;
    return 0;
}

int
tok_encoding_grow(struct tok_encoding *e)
{
    size_t cap = e->cap;

    if (e->n == e->cap) {
        tok_id *ids;

        cap = e->cap ? e->cap * 2 : 256;
        if ((ids = realloc(e->ids, cap * sizeof(*ids))) == NULL)
            return TOK_ENOMEM;
        e->ids = ids;
    }
    /* The optional arrays follow ids's capacity; one switched on after
     * the others were sized is allocated here too. */
    if ((cap != e->cap || e->starts == NULL) &&
        resize_if((void **)&e->starts, e->want_offsets, cap,
                  sizeof(*e->starts)) < 0)
        return TOK_ENOMEM;
    if ((cap != e->cap || e->ends == NULL) &&
        resize_if((void **)&e->ends, e->want_offsets, cap, sizeof(*e->ends)) <
            0)
        return TOK_ENOMEM;
    if ((cap != e->cap || e->chars == NULL) &&
        resize_if((void **)&e->chars, e->want_chars, cap, sizeof(*e->chars)) <
            0)
        return TOK_ENOMEM;
    e->cap = cap;
    return 0;
}

void
tok_encoding_init(struct tok_encoding *e)
{
    memset(e, 0, sizeof(*e));
}

void
tok_encoding_clear(struct tok_encoding *e)
{
    e->n = 0;
}

void
tok_encoding_release(struct tok_encoding *e)
{
    struct scratch *s = e->scratch;

    if (s) {
        free(s->piece);
        free(s->pend);
        free(s->bytes);
        free(s->boff);
        free(s->hash);
        free(s);
    }
    free(e->ids);
    free(e->starts);
    free(e->ends);
    free(e->chars);
    tok_encoding_init(e);
}
