/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_int.h: internals of the LAC engine (tok_lac_*.c); never
 * installed.  The model's parts as mapped (struct tok_lac_net, the
 * dictionaries), the tag table, the code-point tries, and the numeric
 * kernels, whose scalar versions define the arithmetic that every SIMD
 * path reproduces bit for bit.
 */
#ifndef TOK_LAC_INT_H
#define TOK_LAC_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "tok_int.h"

/* ------------------------------------------------------------------------ */
/* The networks                                                              */

/* The parameters of one network, as LAC names them: the embedding word_emb
 * [V][E]; layer l in {0, 1} runs a forward GRU on the projection fc_{2l}
 * and a backward one on fc_{2l+1} (gru_{2l}, gru_{2l+1}), each [in][3D]
 * with a bias of 3D; fc_4 [2D][L] gives the emissions, crfw [L+2][L] the
 * start (row 0), end (row 1) and transition scores (row 2 + j: from tag j).
 * A GRU's weight [D][3D] is stored as a D x 2D matrix (update and reset
 * gates) followed by a D x D one (candidate).  The `seg` network's first
 * projections are precomputed for every id (proj0, [V][6D]: fc_0 then
 * fc_1, each x W + b + the GRU's bias, summed in double and rounded once),
 * so it keeps no embedding; the `lac` network keeps emb and fc_0, fc_1. */
struct tok_lac_net {
    uint32_t V, E, D, L;
    const float *proj0;               /* [V][6D], or NULL (then emb) */
    const float *emb;                 /* [V][E] */
    const float *w_in[4], *b_in[4];   /* fc_0..fc_3 */
    const float *w_gru[4], *b_gru[4]; /* gru_0..gru_3 */
    float *b_gate[4];           /* heap: b_in[k] + b_gru[k] (in float, once) */
    const float *w_out, *b_out; /* fc_4 */
    const float *crf;           /* crfw */
};

/* Limits of a model's sizes (the kernels' padding rows hold 4096). */
#define TOK_LAC_MAX_D    1024
#define TOK_LAC_MAX_E    4096
#define TOK_LAC_MAX_L    256
#define TOK_LAC_MAX_WORD 255 /* characters of a small_seg.dic word */

/* Code points are mapped to ids through pages of 256: page[cp >> 8] is the
 * index of a page of ids[page][256] (page 0 all out-of-vocabulary). */
#define TOK_LAC_N_PAGES (0x110000 / 256)

/* A trie of code points: its edges (parent, cp) -> child in one
 * open-addressing table.  keys[i] is (parent << 21 | cp) + 1, 0 for an
 * empty slot; vals[i] the child's id, with TOK_LAC_TRIE_WORD set when the
 * child ends a word.  The root is node 0.  No search reads more than
 * max_probe slots from an edge's home. */
struct tok_lac_trie {
    uint64_t *keys;
    uint32_t *vals;
    size_t mask; /* slots - 1, slots a power of two */
    size_t max_probe;
    size_t n_nodes, n_edges;
};
#define TOK_LAC_TRIE_WORD 0x80000000u

static inline size_t
tok_lac_trie_home(uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 24);
}

/* The child of node by cp (its vals entry), or 0 if there is none. */
static inline uint32_t
tok_lac_trie_step(const struct tok_lac_trie *t, uint32_t node, uint32_t cp)
{
    uint64_t key = (((uint64_t)node << 21) | cp) + 1;
    size_t i = tok_lac_trie_home(key) & t->mask;

    for (size_t left = t->max_probe; left > 0; left--) {
        uint64_t k = t->keys[i];

        if (k == key)
            return t->vals[i];
        if (k == 0)
            return 0;
        i = (i + 1) & t->mask;
    }
    return 0;
}

/* tok_lac_trie_init/_release: an empty trie on the heap (for building). */
int tok_lac_trie_init(struct tok_lac_trie *t);
void tok_lac_trie_release(struct tok_lac_trie *t);

/* tok_lac_trie_insert: add cps[0..n) (n >= 1), marking its last node a
 * word; *node gets that node.  Returns 0, TOK_ENOMEM or TOK_ERANGE (more
 * than 2^31 nodes). */
int tok_lac_trie_insert(struct tok_lac_trie *t, const uint32_t *cps, size_t n,
                        uint32_t *node);

/* The `lac` network's pre-segmentation dictionary (small_seg.dic): a trie
 * of its words, log(total count) and log(len) of each word length. */
struct tok_lac_dict {
    struct tok_lac_trie trie;
    const double *logs; /* [0] = log(total), [k] = log(k), k <= max_len */
    size_t max_len;
};

/* The word ids of word.dic's entries of two characters or more, by their
 * UTF-8 bytes: slots[i] = { hash, pool offset, length, id }, hash 0 for an
 * empty slot. */
struct tok_lac_words_map {
    const uint32_t *slots; /* [n][4] */
    size_t mask;
    size_t max_probe;
    const char *pool;
    size_t pool_len;
};

uint32_t tok_lac_hash_bytes(const char *s, size_t len);

/* One network and its dictionaries as mapped. */
struct tok_lac_mode_data {
    bool present;
    struct tok_lac_net net;
    const uint32_t *char_page; /* [TOK_LAC_N_PAGES] */
    const uint32_t *char_ids;  /* [n_pages][256] */
    size_t n_pages;
    uint32_t *tag_of; /* heap: [L] tag-table entry of each output tag */
    bool has_dict;    /* the `lac` network: pre-segmentation, word ids */
    struct tok_lac_dict dict;
    struct tok_lac_words_map words;
};

/* The id of code point cp. */
static inline uint32_t
tok_lac_char_id(const struct tok_lac_mode_data *m, uint32_t cp)
{
    return m->char_ids[(size_t)m->char_page[cp >> 8] * 256 + (cp & 255)];
}

/* ------------------------------------------------------------------------ */
/* Tags                                                                      */

/* LAC handles tags as strings: the network's tag.dic names ("n-B", "O"),
 * and what its code makes of them: t[:-1] + "I" and t[:-1] + "B" (user
 * dictionaries), t[:-2] + "-I" (the characters of a word id), TAG + "-I"
 * (a user tag).  The tag table interns every string that can arise, with
 * those derivations precomputed; a word starts at a tag ending in B or S,
 * and is named by its last character's tag without the last two
 * characters. */
struct tok_lac_tag {
    char *s;
    uint32_t len;
    uint32_t to_i, to_b, to_dash_i; /* t[:-1]+"I", t[:-1]+"B", t[:-2]+"-I" */
    bool starts_word;
};

struct tok_lac_tags {
    struct tok_lac_tag *v;
    size_t n, cap;
    uint32_t *index; /* open addressing over v by string, UINT32_MAX empty */
    size_t index_mask;
};

/* tok_lac_tags_intern: the entry of s[0..len), added (with everything
 * derived from it) if new.  Returns 0 and sets *id, or TOK_ENOMEM. */
int tok_lac_tags_intern(struct tok_lac_tags *t, const char *s, size_t len,
                        uint32_t *id);
void tok_lac_tags_release(struct tok_lac_tags *t);

/* tok_lac_drop_last: the length of Python's s[:-k] of the UTF-8 string
 * s[0..len): all but its last k code points. */
size_t tok_lac_drop_last(const char *s, size_t len, size_t k);

/* ------------------------------------------------------------------------ */
/* User dictionaries (tok_lac_custom.c)                                      */

/* A phrase: its pieces, each with the character offset where it ends in
 * the phrase and its tag entry (TAG + "-I"), or NO_TAG to keep the tag
 * and only make it an I. */
#define TOK_LAC_NO_TAG UINT32_MAX

struct tok_lac_piece {
    uint32_t end;
    uint32_t tag;
};

struct tok_lac_custom {
    struct tok_lac_trie trie;
    uint32_t *phrase_of; /* per node: the phrase it ends, or UINT32_MAX */
    size_t phrase_of_cap;
    uint32_t *first; /* per phrase: its first piece in pieces */
    uint32_t *count; /* per phrase: its number of pieces */
    size_t n_phrases, cap_phrases;
    struct tok_lac_piece *pieces;
    size_t n_pieces, cap_pieces;
};

void tok_lac_custom_release(struct tok_lac_custom *c);

/* tok_lac_custom_apply: rewrite tags (tag-table entries, one a
 * character) of the text s[0..len) (valid UTF-8) as LAC's
 * parse_customization() does. */
void tok_lac_custom_apply(const struct tok_lac *l, const char *s, size_t len,
                          uint32_t *tags);

/* ------------------------------------------------------------------------ */
/* The model                                                                 */

struct tok_lac {
    void *map;
    size_t map_len;
    char *provenance; /* heap, NUL-terminated */
    struct tok_lac_mode_data mode[2];
    struct tok_lac_tags tags;
    struct tok_lac_custom *custom; /* NULL: no user dictionary */
};

/* ------------------------------------------------------------------------ */
/* Kernels (tok_lac_kernels.c)                                               */

/* The arithmetic that defines the engine, in its scalar form (the SIMD
 * forms compute the same operations lane by lane):
 *
 *   gemm:   C[i][j] = sum over k in order of fmaf(A[i][k], W[k][j], acc),
 *           acc starting at 0 (or at C[i][j] to continue a chain)
 *   exp:    tok_lac_expf(), one polynomial (1-2 ulp), its input clamped to
 *           [-87, 88]
 *   sigmoid(x) = 1 / (1 + exp(-min(max(x, -40), 13)))   (as Paddle)
 *   tanh(x)    = 2 / (1 + exp(-2x)) - 1
 *   GRU:    u, r = sigmoid(g + h W_ur); c = tanh(g_c + (r h) W_c);
 *           h' = (h - u h) + u c
 */
float tok_lac_expf(float x);
float tok_lac_sigmoid(float x);
float tok_lac_tanh(float x);

/* One implementation of the kernels. */
struct tok_lac_kernels {
    const char *name;
    /* C rows = A rows x W (M x K times K x N, W with row stride ldw),
     * accumulating onto C when acc (see above). */
    void (*gemm)(size_t M, size_t N, size_t K, const float *const *A,
                 const float *W, size_t ldw, float *const *C, bool acc);
    /* For each of M rows, with x = g + b (b NULL: g as it is): u =
     * sigmoid(x[0..D) + gur[0..D)), r = sigmoid(x[D..2D) + gur[D..2D)),
     * rh = r * h; gur NULL: zeros. */
    void (*gates_ur)(size_t M, size_t D, const float *const *g, const float *b,
                     const float *gur, const float *h, float *u, float *rh);
    /* For each of M rows: c = tanh(x[2D..3D) + gc), h = (h - u h) + u c;
     * gc NULL: zeros. */
    void (*gates_c)(size_t M, size_t D, const float *const *g, const float *b,
                    const float *gc, const float *u, float *h);
    /* One step of crf_decoding over L tags: alpha[i] = max over j of
     * (prev[j] + trans[j][i]) + e[i], the first j that reaches it into
     * track[i] (from -FLT_MAX: 0 if none is greater). */
    void (*viterbi)(size_t L, const float *prev, const float *trans,
                    const float *e, float *alpha, uint8_t *track);
};

/* tok_lac_kernels_best: the fastest implementation this CPU runs (chosen
 * once); tok_lac_kernels_all: every implementation this CPU runs, scalar
 * first, for the tests that compare them (*n gets the count). */
const struct tok_lac_kernels *tok_lac_kernels_best(void);
const struct tok_lac_kernels *const *tok_lac_kernels_all(size_t *n);

/* ------------------------------------------------------------------------ */
/* The networks on groups of texts (tok_lac_net.c)                           */

/* Working memory, grown as needed and kept for the next group. */
struct tok_lac_work {
    float *l0;      /* [pos][2D] layer 0's outputs (forward | backward) */
    float *em;      /* [pos][L] emissions */
    uint8_t *track; /* [pos][L] Viterbi back pointers */
    size_t l0_cap, em_cap, track_cap;
    float *h, *xp, *gur, *u, *rh, *gc; /* per row: D, 3D, 2D, D, D, D */
    const float **arows;
    float **crows;
    const float **grows;
    size_t *pos; /* per row: the window position of the step */
    size_t rows_cap;
    float *alpha;  /* 2L */
    double *best2; /* 4L: the margin's state */
    size_t alpha_cap, best2_cap;
};

int tok_lac_work_reserve(struct tok_lac_work *w, const struct tok_lac_net *net,
                         size_t rows, size_t pos);
void tok_lac_work_release(struct tok_lac_work *w);

/* A group: `rows` lanes, longest first; lane i runs len[i] steps over the
 * window positions base[i] .. base[i] + len[i] - 1, which hold its texts
 * one after another (so that every lane stays busy to the end whatever
 * the texts' lengths); ids[p] is the id at window position p, edge[p]
 * says whether a text starts or ends there. */
#define TOK_LAC_START 1
#define TOK_LAC_END   2

struct tok_lac_group {
    size_t rows;
    const size_t *base, *len;
    const uint32_t *ids;
    const uint8_t *edge;
};

/* tok_lac_run_passes: the four GRU passes over a group (working memory
 * reserved for its rows and positions), the emissions into w->em. */
void tok_lac_run_passes(const struct tok_lac_kernels *K,
                        const struct tok_lac_net *net, struct tok_lac_work *w,
                        const struct tok_lac_group *g);

/* tok_lac_decode: Viterbi over the emissions of window positions at ..
 * at + n - 1 (one text), its tags into tags[0..n); with margin (not NULL),
 * the text's Viterbi margin. */
void tok_lac_decode(const struct tok_lac_kernels *K,
                    const struct tok_lac_net *net, struct tok_lac_work *w,
                    size_t at, size_t n, uint8_t *tags, double *margin);

/* tok_lac_run_long: the same for one text of n positions, in windows of
 * W (working memory reserved for one row and W positions).  Returns 0 or
 * TOK_ENOMEM. */
int tok_lac_run_long(const struct tok_lac_kernels *K,
                     const struct tok_lac_net *net, struct tok_lac_work *w,
                     const uint32_t *ids, size_t n, size_t W, uint8_t *tags,
                     double *margin);

/* ------------------------------------------------------------------------ */
/* The model file (tok_lac_model.c), for the fuzzers and tests              */

/* tok_lac_tensor_parse: a Paddle LoDTensor file in memory: its dims (at
 * most 4) and its float32 data (n values at *data, little-endian, maybe
 * unaligned).  TOK_EFORMAT with `name` in the message. */
int tok_lac_tensor_parse(const void *bytes, size_t len, const char *name,
                         uint64_t *dims, size_t *rank,
                         const unsigned char **data, size_t *n,
                         struct tok_err *err);

/* tok_lac_open_mem: tok_lac_open() of a model in memory (data must stay
 * valid; l zeroed by the caller, freed with tok_lac_close() after setting
 * l->map to NULL). */
int tok_lac_open_mem(struct tok_lac *l, const void *data, size_t len,
                     const char *path, int modes, struct tok_err *err);

/* tok_lac_model_fix_checksums: recompute a model's checksums in place. */
void tok_lac_model_fix_checksums(unsigned char *data, size_t len);

/* ------------------------------------------------------------------------ */
/* The batch's internals, for tests                                          */

/* tok_lac_batch_set_limits: the most texts (rows) and positions a group of
 * the batch runs together, and the window of the long-text path (texts
 * longer than max_pos); 0 keeps a value.  For tests of the paths. */
void tok_lac_batch_set_limits(struct tok_lac_batch *b, size_t max_rows,
                              size_t max_pos);

/* tok_lac_batch_set_kernels: run with kernels k (NULL: the best). */
void tok_lac_batch_set_kernels(struct tok_lac_batch *b,
                               const struct tok_lac_kernels *k);

/* tok_lac_batch_want_margins: with on, a run also measures each text's
 * Viterbi margin: the score of the best tag path less that of the second
 * best (in double, from the same emissions), +inf with a single path. */
void tok_lac_batch_want_margins(struct tok_lac_batch *b, bool on);
double tok_lac_batch_margin(const struct tok_lac_batch *b, size_t i);

/* tok_lac_viterbi_margin: that margin for emissions em[n][L] under crf
 * [L+2][L]. */
double tok_lac_viterbi_margin(const float *em, size_t n, size_t L,
                              const float *crf);

#endif /* TOK_LAC_INT_H */
