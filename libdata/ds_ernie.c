/* SPDX-License-Identifier: MIT */
/*
 * ds_ernie.c: ERNIE training samples, draw for draw as PaddleNLP's
 * ErnieDataset.__getitem__ (spec ernie-data.md §7.6): SOP segments,
 * truncation, [CLS] A [SEP] B [SEP], the "##<CJK>" -> bare character
 * mapping, whole-word n-gram masking, padding.
 *
 * The sample is never materialised before truncation: the segments are
 * sentence ranges, truncation only moves a front and a back cut, and just
 * the surviving tokens are read, straight into the caller's buffer.  The
 * candidates of whole-word masking are runs of positions (a "##" piece
 * joins the previous word, even across [SEP]); an n-gram of k words
 * starting at word j is positions cpos[coff[j] .. coff[min(j+k, C)]).
 * Masked positions are unique, so sorting them is a scan of loss_mask.
 * The draws are numpy's RandomState primitives of ds_rng.c.
 */
#include <math.h>
#include <stdlib.h>

#include "ds_int.h"

/* ------------------------------------------------------------------------ */
/* Context                                                                   */

#define CHN_KEEP (-2) /* not a "##<CJK>" piece: shown as stored */
#define CHN_MISS (-1) /* "##<CJK>" whose bare char is not in the vocab */

struct ds_ernie_ctx {
    struct ds_ernie_opts o;
    uint32_t n_tokens, n_base;
    uint8_t *is_cont; /* [n_tokens] the string starts with "##" */
    int32_t *chn;     /* [n_tokens] bare-char id, CHN_KEEP or CHN_MISS */
    double cdf[DS_ERNIE_MAX_NGRAMS]; /* choice()'s cdf of the n-gram sizes */
};

/* numpy's pairwise_sum for n <= 128 (one block): eight accumulators. */
static double
np_sum(const double *a, size_t n)
{
    double r[8], res;
    size_t i;

    if (n < 8) {
        res = 0.0;
        for (i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    for (i = 0; i < 8; i++)
        r[i] = a[i];
    for (i = 8; i < n - n % 8; i += 8)
        for (size_t k = 0; k < 8; k++)
            r[k] += a[i + k];
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++)
        res += a[i];
    return res;
}

/* pvals = 1/arange(1,N+1); pvals /= pvals.sum(); reversed if favoring
 * longer; choice() divides by the sum again, takes cumsum, and divides by
 * its last element. */
static void
make_cdf(double *cdf, uint32_t n, int favor_longer)
{
    double p[DS_ERNIE_MAX_NGRAMS] = { 0 }, q[DS_ERNIE_MAX_NGRAMS] = { 0 }, s;

    for (uint32_t i = 0; i < n; i++)
        p[i] = 1.0 / (double)(i + 1);
    s = np_sum(p, n);
    for (uint32_t i = 0; i < n; i++)
        p[i] /= s;
    for (uint32_t i = 0; i < n; i++)
        q[i] = favor_longer ? p[n - 1 - i] : p[i];
    s = np_sum(q, n);
    for (uint32_t i = 0; i < n; i++)
        q[i] /= s;
    s = 0.0;
    for (uint32_t i = 0; i < n; i++)
        cdf[i] = s += q[i];
    for (uint32_t i = 0; i < n; i++)
        cdf[i] /= s;
}

/* Python's re.findall("##[\u4E00-\u9FA5]", s) is not empty. */
static bool
has_cont_cjk(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p[0]; p++) {
        if (p[0] != '#' || p[1] != '#')
            continue;
        const unsigned char *c = p + 2;

        if ((c[0] & 0xf0) == 0xe0 && (c[1] & 0xc0) == 0x80 &&
            (c[2] & 0xc0) == 0x80) {
            uint32_t cp = (uint32_t)(c[0] & 0x0f) << 12 |
                          (uint32_t)(c[1] & 0x3f) << 6 | (c[2] & 0x3f);

            if (cp >= 0x4e00 && cp <= 0x9fa5)
                return true;
        }
    }
    return false;
}

struct tok_ref {
    const char *s;
    uint32_t id;
};

/* Ascending by string, then by id. */
static int
cmp_refs(const void *a, const void *b)
{
    const struct tok_ref *x = (const struct tok_ref *)a;
    const struct tok_ref *y = (const struct tok_ref *)b;
    int c = strcmp(x->s, y->s);

    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The highest id whose string is key, or -1. */
static int32_t
lookup(const struct tok_ref *refs, uint32_t n, const char *key)
{
    uint32_t lo = 0, hi = n; /* first string > key */

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (strcmp(refs[mid].s, key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && strcmp(refs[lo - 1].s, key) == 0)
        return (int32_t)refs[lo - 1].id;
    return -1;
}

int
ds_ernie_ctx_new(struct ds_ernie_ctx **out, const struct ds_ernie_opts *opts,
                 const char *const *tokens, size_t n_tokens, size_t n_base,
                 struct ds_err *err)
{
    struct ds_ernie_ctx *c;
    struct tok_ref *refs;
    const int32_t special[4] = { opts->cls_id, opts->sep_id, opts->mask_id,
                                 opts->pad_id };

    *out = NULL;
    if (opts->max_seq_len < 3 || opts->max_seq_len > INT32_MAX / 2)
        return ds_err_set(err, DS_EINVAL, "max_seq_len %u: must be in 3..%d",
                          opts->max_seq_len, INT32_MAX / 2);
    if (!(opts->masked_lm_prob >= 0.0 && opts->masked_lm_prob <= 1.0))
        return ds_err_set(err, DS_EINVAL,
                          "masked_lm_prob %g: must be in [0, 1]",
                          opts->masked_lm_prob);
    if (opts->max_ngrams < 1 || opts->max_ngrams > DS_ERNIE_MAX_NGRAMS)
        return ds_err_set(err, DS_EINVAL, "max_ngrams %u: must be in 1..%d",
                          opts->max_ngrams, DS_ERNIE_MAX_NGRAMS);
    if (n_base == 0 || n_base > n_tokens || n_tokens > INT32_MAX)
        return ds_err_set(err, DS_EINVAL,
                          "vocabulary of %zu tokens with %zu base tokens: "
                          "need 1 <= base <= tokens <= %d",
                          n_tokens, n_base, INT32_MAX);
    for (int k = 0; k < 4; k++)
        if (special[k] < 0 || (size_t)special[k] >= n_tokens)
            return ds_err_set(
                err, DS_EINVAL,
                "%s id %d is outside the vocabulary of %zu "
                "tokens",
                (const char *[]){ "[CLS]", "[SEP]", "[MASK]", "[PAD]" }[k],
                special[k], n_tokens);
    for (size_t i = 0; i < n_tokens; i++)
        if (tokens[i] == NULL)
            return ds_err_set(err, DS_EINVAL, "token string %zu is NULL", i);

    c = (struct ds_ernie_ctx *)calloc(1, sizeof(*c));
    refs = (struct tok_ref *)malloc(n_tokens * sizeof(*refs));
    if (c) {
        c->is_cont = (uint8_t *)malloc(n_tokens);
        c->chn = (int32_t *)malloc(n_tokens * sizeof(*c->chn));
    }
    if (!c || !refs || !c->is_cont || !c->chn) {
        free(refs);
        ds_ernie_ctx_free(c);
        return ds_err_nomem(err);
    }
    c->o = *opts;
    c->n_tokens = (uint32_t)n_tokens;
    c->n_base = (uint32_t)n_base;
    make_cdf(c->cdf, opts->max_ngrams, opts->favor_longer_ngram);

    for (size_t i = 0; i < n_tokens; i++) {
        refs[i].s = tokens[i];
        refs[i].id = (uint32_t)i;
    }
    qsort(refs, n_tokens, sizeof(*refs), cmp_refs);
    for (size_t i = 0; i < n_tokens; i++) {
        const char *s = tokens[i];

        c->is_cont[i] = s[0] == '#' && s[1] == '#';
        c->chn[i] = CHN_KEEP;
        if (c->is_cont[i] && has_cont_cjk(s)) {
            int32_t id = lookup(refs, (uint32_t)n_tokens, s + 2);

            c->chn[i] = id >= 0 ? id : CHN_MISS;
        }
    }
    free(refs);
    *out = c;
    return 0;
}

void
ds_ernie_ctx_free(struct ds_ernie_ctx *ctx)
{
    if (ctx == NULL)
        return;
    free(ctx->is_cont);
    free(ctx->chn);
    free(ctx);
}

/* ------------------------------------------------------------------------ */
/* Sample buffers                                                            */

struct work {
    uint32_t cap;     /* max_seq_len */
    uint32_t tgt;     /* the target length of the current sample */
    int32_t *orig;    /* [cap] ids after the ## mapping: the labels */
    uint32_t *cpos;   /* [cap] positions of the word pieces, in order */
    uint32_t *coff;   /* [cap + 1] word j is cpos[coff[j] .. coff[j+1]) */
    uint32_t *perm;   /* [cap] the shuffled word order (the n-gram list) */
    uint8_t *covered; /* [cap] */
};

int
ds_ernie_sample_init(struct ds_ernie_sample *s, const struct ds_ernie_ctx *ctx,
                     struct ds_err *err)
{
    size_t n = ctx->o.max_seq_len;
    struct work *w;

    memset(s, 0, sizeof(*s));
    s->input_ids = (int32_t *)malloc(n * sizeof(int32_t));
    s->token_type_ids = (int32_t *)malloc(n * sizeof(int32_t));
    s->masked_positions = (int32_t *)malloc(n * sizeof(int32_t));
    s->masked_labels = (int32_t *)malloc(n * sizeof(int32_t));
    s->loss_mask = (uint8_t *)malloc(n);
    s->work = w = (struct work *)calloc(1, sizeof(*w));
    if (w) {
        w->cap = (uint32_t)n;
        w->orig = (int32_t *)malloc(n * sizeof(int32_t));
        w->cpos = (uint32_t *)malloc(n * sizeof(uint32_t));
        w->coff = (uint32_t *)malloc((n + 1) * sizeof(uint32_t));
        w->perm = (uint32_t *)malloc(n * sizeof(uint32_t));
        w->covered = (uint8_t *)malloc(n);
    }
    if (!s->input_ids || !s->token_type_ids || !s->masked_positions ||
        !s->masked_labels || !s->loss_mask || !w || !w->orig || !w->cpos ||
        !w->coff || !w->perm || !w->covered) {
        ds_ernie_sample_release(s);
        return ds_err_nomem(err);
    }
    return 0;
}

void
ds_ernie_sample_release(struct ds_ernie_sample *s)
{
    struct work *w = (struct work *)s->work;

    if (w) {
        free(w->orig);
        free(w->cpos);
        free(w->coff);
        free(w->perm);
        free(w->covered);
        free(w);
    }
    free(s->input_ids);
    free(s->token_type_ids);
    free(s->masked_positions);
    free(s->masked_labels);
    free(s->loss_mask);
    memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------------ */
/* Sentences: from a dataset or from memory                                  */

struct src {
    const struct ds_dataset *d; /* or: */
    const int32_t *ids;
    const uint32_t *lens;
    uint64_t first; /* absolute index of sentence 0 (dataset) */
    size_t n_sent;
};

static uint64_t
src_len(const struct src *s, size_t i)
{
    return s->d ? ds_sentence_len(s->d, s->first + i) : s->lens[i];
}

/* Copy tokens [skip, skip + n) of the concatenation of sentences
 * [s0, s1) to dst. */
static int
src_read(const struct src *s, size_t s0, size_t s1, uint64_t skip, uint64_t n,
         int32_t *dst, struct ds_err *err)
{
    uint64_t mem_off = 0;

    if (!s->d)
        for (size_t i = 0; i < s0; i++)
            mem_off += s->lens[i];
    for (size_t i = s0; i < s1 && n > 0; i++) {
        uint64_t len = src_len(s, i), take;

        if (skip >= len) {
            skip -= len;
            mem_off += len;
            continue;
        }
        take = len - skip < n ? len - skip : n;
        if (s->d) {
            int rc = ds_read_tokens(
                s->d, ds_sentence_start(s->d, s->first + i) + skip,
                (size_t)take, dst, err);

            if (rc)
                return rc;
        } else {
            memcpy(dst, s->ids + mem_off + skip, (size_t)take * sizeof(*dst));
        }
        dst += take;
        n -= take;
        mem_off += len;
        skip = 0;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The sample                                                                */

/* Python's round() of a double: half to even. */
static double
round_half_even(double x)
{
    double f = floor(x), d = x - f;

    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        return f + 1.0;
    return f;
}

/* create_masked_lm_predictions with to_chinese_char: out->input_ids holds
 * the n tokens on entry and the model's input on return. */
static int
mask_tokens(const struct ds_ernie_ctx *c, struct ds_mt32 *rng, uint32_t n,
            struct ds_ernie_sample *out, struct ds_err *err)
{
    struct work *w = (struct work *)out->work;
    int32_t *tok = out->input_ids;
    const int32_t cls = c->o.cls_id, sep = c->o.sep_id, last = tok[n - 1];
    uint32_t n_words = 0, n_pieces = 0, n_masked = 0;
    double n_pred;

    /* 1. words, and 2. "##<CJK>" -> bare character (labels included) */
    for (uint32_t i = 0; i < n; i++) {
        int32_t t = tok[i];

        w->orig[i] = t;
        if (t == cls || t == sep)
            continue;
        if (t < 0 || (uint32_t)t >= c->n_tokens)
            return ds_err_set(err, DS_ERANGE,
                              "token id %d at position %u is outside the "
                              "vocabulary of %u tokens",
                              t, i, c->n_tokens);
        if (!c->is_cont[t] || n_words == 0)
            w->coff[n_words++] = n_pieces;
        w->cpos[n_pieces++] = i;
        if (c->is_cont[t] && c->chn[t] != CHN_KEEP)
            /* PaddleNLP falls back to its stale loop variable: the last
             * token of the sequence (spec §11.5) */
            w->orig[i] = c->chn[t] == CHN_MISS ? last : c->chn[t];
    }
    w->coff[n_words] = n_pieces;
    memcpy(tok, w->orig, n * sizeof(*tok));
    memset(out->loss_mask, 0, c->o.max_seq_len);
    out->n_masked = 0;
    if (c->o.masked_lm_prob == 0.0)
        return 0;

    n_pred = round_half_even((double)n * c->o.masked_lm_prob);
    if (n_pred < 1.0)
        n_pred = 1.0;
    if (c->o.masked_lm_prob * (double)w->tgt < n_pred)
        n_pred = c->o.masked_lm_prob * (double)w->tgt;

    for (uint32_t j = 0; j < n_words; j++)
        w->perm[j] = j;
    ds_rs_shuffle(rng, w->perm, n_words, sizeof(*w->perm));
    memset(w->covered, 0, n);
    for (uint32_t g = 0; g < n_words; g++) {
        uint32_t j = w->perm[g], k = 0, cnt, end;
        double u;
        bool hit = false;

        if ((double)n_masked >= n_pred)
            break;
        if (c->o.geometric_ngram) {
            int64_t x = ds_rs_geometric(rng, 0.2);

            k = x < (int64_t)c->o.max_ngrams ? (uint32_t)x : c->o.max_ngrams;
        } else {
            u = ds_rs_random(rng);
            while (k < c->o.max_ngrams - 1 && c->cdf[k] <= u)
                k++;
            k++; /* the n-gram size, 1..max_ngrams */
        }
        for (;;) {
            end = j + k < n_words ? j + k : n_words;
            cnt = w->coff[end] - w->coff[j];
            if (!((double)(n_masked + cnt) > n_pred) || k == 1)
                break;
            k--;
        }
        if ((double)(n_masked + cnt) > n_pred)
            continue;
        for (uint32_t p = w->coff[j]; p < w->coff[end]; p++)
            hit |= w->covered[w->cpos[p]];
        if (hit)
            continue;
        for (uint32_t p = w->coff[j]; p < w->coff[end]; p++) {
            uint32_t i = w->cpos[p];

            w->covered[i] = 1;
            if (ds_rs_random(rng) < 0.8)
                tok[i] = c->o.mask_id;
            else if (ds_rs_random(rng) < 0.5)
                ; /* kept */
            else
                tok[i] = (int32_t)ds_rs_bounded(rng, c->n_base - 1);
            n_masked++;
        }
    }
    /* PaddleNLP shuffles the n-gram list once more here; the generator is
     * not used afterwards, so those draws change nothing. */
    for (uint32_t i = 0; i < n; i++)
        if (w->covered[i]) {
            out->masked_positions[out->n_masked] = (int32_t)i;
            out->masked_labels[out->n_masked++] = w->orig[i];
            out->loss_mask[i] = 1;
        }
    return 0;
}

static int
build(const struct ds_ernie_ctx *c, const struct src *s, uint32_t tgt,
      uint64_t idx, struct ds_ernie_sample *out, struct ds_err *err)
{
    struct work *w = (struct work *)out->work;
    const uint32_t lmax = c->o.max_seq_len;
    struct ds_mt32 rng;
    size_t n = s->n_sent, a_end;
    size_t seg[2][2]; /* sentence ranges of the first and second segment */
    uint64_t len[2] = { 0, 0 },
             cut[2][2] = { { 0, 0 }, { 0, 0 } }; /* front, back */
    uint32_t pos;
    int rc;

    if (n == 0)
        return ds_err_set(err, DS_EINVAL, "sample %llu has no sentences",
                          (unsigned long long)idx);
    if (c->o.binary_head && n < 2)
        return ds_err_set(err, DS_EINVAL,
                          "sample %llu has 1 sentence; binary_head needs 2",
                          (unsigned long long)idx);
    if (tgt > lmax)
        return ds_err_set(err, DS_EINVAL,
                          "target length %u of sample %llu exceeds "
                          "max_seq_len %u",
                          tgt, (unsigned long long)idx, lmax);
    ds_mt32_init(&rng, (uint32_t)(c->o.seed + idx)); /* RandomState */
    w->tgt = tgt;

    /* (a) segments */
    out->is_random = 0;
    if (c->o.binary_head) {
        a_end = n == 2 ? 1 : 1 + (size_t)ds_rs_bounded(&rng, n - 2);
        seg[0][0] = 0, seg[0][1] = a_end;
        seg[1][0] = a_end, seg[1][1] = n;
        if (ds_rs_random(&rng) < 0.5) {
            seg[0][0] = a_end, seg[0][1] = n;
            seg[1][0] = 0, seg[1][1] = a_end;
            out->is_random = 1;
        }
    } else {
        seg[0][0] = 0, seg[0][1] = n;
        seg[1][0] = seg[1][1] = 0;
    }
    for (int k = 0; k < 2; k++)
        for (size_t i = seg[k][0]; i < seg[k][1]; i++)
            len[k] += src_len(s, i);
    if (len[0] == 0)
        return ds_err_set(err, DS_EINVAL,
                          "sample %llu: segment A is empty (empty sentences)",
                          (unsigned long long)idx);

    /* (b) truncation: the longer segment (B on ties) loses its first or
     * last token, one draw per token */
    out->truncated = len[0] + len[1] > tgt;
    while (len[0] + len[1] > tgt) {
        int v = len[0] > len[1] ? 0 : 1;

        len[v]--;
        cut[v][ds_rs_random(&rng) < 0.5 ? 0 : 1]++;
    }
    if (len[0] + len[1] + 2 + (len[1] > 0) > lmax)
        return ds_err_set(
            err, DS_ERANGE,
            "sample %llu has %llu tokens with [CLS] and [SEP]: "
            "more than max_seq_len %u (target length %u)",
            (unsigned long long)idx,
            (unsigned long long)(len[0] + len[1] + 2 + (len[1] > 0)), lmax,
            tgt);

    /* (c) [CLS] A [SEP] B [SEP] */
    pos = 0;
    out->input_ids[pos] = c->o.cls_id;
    out->token_type_ids[pos++] = 0;
    for (int k = 0; k < 2; k++) {
        if (k == 1 && len[1] == 0)
            break;
        rc = src_read(s, seg[k][0], seg[k][1], cut[k][0], len[k],
                      out->input_ids + pos, err);
        if (rc)
            return rc;
        for (uint64_t i = 0; i <= len[k]; i++)
            out->token_type_ids[pos + i] = k;
        pos += (uint32_t)len[k];
        out->input_ids[pos++] = c->o.sep_id;
    }
    out->n_tokens = pos;

    /* (d) masking */
    rc = mask_tokens(c, &rng, pos, out, err);
    if (rc)
        return rc;

    /* (e) padding: token types are padded with pad_id too */
    for (uint32_t i = pos; i < lmax; i++) {
        out->input_ids[i] = c->o.pad_id;
        out->token_type_ids[i] = c->o.pad_id;
    }
    return 0;
}

int
ds_ernie_sample_build(const struct ds_ernie_ctx *ctx,
                      const struct ds_dataset *d, uint64_t start, uint64_t end,
                      uint32_t target_seq_len, uint64_t idx,
                      struct ds_ernie_sample *out, struct ds_err *err)
{
    struct src s = { d, NULL, NULL, start, 0 };

    if (start > end || end > ds_dataset_n_sentences(d))
        return ds_err_set(err, DS_ERANGE,
                          "sample %llu: sentences [%llu, %llu) are not "
                          "within the dataset's %llu",
                          (unsigned long long)idx, (unsigned long long)start,
                          (unsigned long long)end,
                          (unsigned long long)ds_dataset_n_sentences(d));
    s.n_sent = (size_t)(end - start);
    return build(ctx, &s, target_seq_len, idx, out, err);
}

int
ds_ernie_sample_build_ids(const struct ds_ernie_ctx *ctx, const int32_t *ids,
                          const uint32_t *sent_lens, size_t n_sent,
                          uint32_t target_seq_len, uint64_t idx,
                          struct ds_ernie_sample *out, struct ds_err *err)
{
    struct src s = { NULL, ids, sent_lens, 0, n_sent };

    return build(ctx, &s, target_seq_len, idx, out, err);
}
