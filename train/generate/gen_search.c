/* SPDX-License-Identifier: MIT */
/*
 * gen_search.c: the generation loop (gen_search.h).  Every sequence has a
 * slot of the decoder: prompt p's j-th sequence (or beam) is slot p * R +
 * j.  The prompts go through the decoder together, in chunks of columns
 * (each slot's tokens at their own positions; a slot whose prompt is
 * shorter computes padding past its end, which later writes overwrite
 * before anything reads it), and the logits after each prompt's last
 * token start its search.  Then each step feeds every slot its newest
 * token.  The host applies the processors and chooses: as transformers
 * does for one prompt alone, so a batch gives each prompt the tokens it
 * would get by itself (where the floats agree).
 */
#include <stdlib.h>
#include <string.h>

#include "gen_beam.h"
#include "gen_gpt.h"
#include "gen_search.h"
#include "util/tr_util.h"

/* The slots' state. */
struct run {
    struct gen_gpt *g;
    const struct gen_params *p;
    int S, V, ctx, cap;
    int32_t *hist; /* [S][cap]: prompt, then the new tokens */
    int *n_hist, *plen;
    float *logits;             /* [S][V] */
    int32_t *ids, *pos, *last; /* forward's arguments, [rows_max] / [S] */
    struct gen_scratch *scratch;
};

static void
run_release(struct run *r)
{
    free(r->hist);
    free(r->n_hist);
    free(r->plen);
    free(r->logits);
    free(r->ids);
    free(r->pos);
    free(r->last);
    gen_scratch_free(r->scratch);
}

static int
run_init(struct run *r, struct gen_gpt *g, const struct gen_params *p,
         const struct gen_prompt *prompts, int n_prompts, int per_prompt,
         char *err, size_t errlen)
{
    int max_len = 0;

    memset(r, 0, sizeof(*r));
    r->g = g;
    r->p = p;
    r->S = n_prompts * per_prompt;
    r->V = gen_gpt_vocab(g);
    r->ctx = gen_gpt_ctx(g);
    if (r->S > gen_gpt_slots(g))
        return tr_fail(err, errlen,
                       "%d prompts x %d sequences exceed the decoder's %d",
                       n_prompts, per_prompt, gen_gpt_slots(g));
    for (int i = 0; i < n_prompts; i++) {
        if (prompts[i].n < 1 || prompts[i].n >= r->ctx)
            return tr_fail(err, errlen,
                           "a prompt of %d tokens: the model's context of %d "
                           "positions takes 1 to %d",
                           prompts[i].n, r->ctx, r->ctx - 1);
        max_len = prompts[i].n > max_len ? prompts[i].n : max_len;
    }
    r->cap = max_len + p->max_new_tokens + 1;
    r->hist = malloc((size_t)r->S * (size_t)r->cap * sizeof(int32_t));
    r->n_hist = calloc((size_t)r->S, sizeof(int));
    r->plen = calloc((size_t)r->S, sizeof(int));
    r->logits = malloc((size_t)r->S * (size_t)r->V * sizeof(float));
    r->ids = malloc((size_t)gen_gpt_rows_max(g) * sizeof(int32_t));
    r->pos = malloc((size_t)r->S * sizeof(int32_t));
    r->last = malloc((size_t)r->S * sizeof(int32_t));
    r->scratch = gen_scratch_new(r->V);
    if (r->hist == NULL || r->n_hist == NULL || r->plen == NULL ||
        r->logits == NULL || r->ids == NULL || r->pos == NULL ||
        r->last == NULL || r->scratch == NULL) {
        run_release(r);
        return tr_fail(err, errlen, "out of memory");
    }
    for (int s = 0; s < r->S; s++) {
        const struct gen_prompt *pr = &prompts[s / per_prompt];

        memcpy(r->hist + (size_t)s * r->cap, pr->ids,
               (size_t)pr->n * sizeof(int32_t));
        r->n_hist[s] = r->plen[s] = pr->n;
    }
    return 0;
}

static int32_t *
hist_of(const struct run *r, int s)
{
    return r->hist + (size_t)s * (size_t)r->cap;
}

/* The prompts through the decoder, in chunks of columns; r->logits gets
 * each slot's logits after its last prompt token. */
static int
prefill(struct run *r, char *err, size_t errlen)
{
    int max_len = 0, w = gen_gpt_rows_max(r->g) / r->S;

    for (int s = 0; s < r->S; s++)
        max_len = r->plen[s] > max_len ? r->plen[s] : max_len;
    for (int c0 = 0; c0 < max_len; c0 += w) {
        int n = max_len - c0 < w ? max_len - c0 : w;

        for (int s = 0; s < r->S; s++) {
            const int32_t *h = hist_of(r, s);
            int end = r->plen[s] - 1 - c0;

            for (int i = 0; i < n; i++)
                r->ids[s * n + i] = c0 + i < r->plen[s] ? h[c0 + i] : 0;
            r->pos[s] = c0;
            r->last[s] = end >= 0 && end < n ? end : -1;
        }
        if (gen_gpt_forward(r->g, r->S, n, r->ids, r->pos, r->last, r->logits,
                            err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Each slot's newest token through the decoder; live[s] == 0: its logits
 * are not wanted. */
static int
step(struct run *r, const int *live, char *err, size_t errlen)
{
    for (int s = 0; s < r->S; s++) {
        int at = r->n_hist[s] - 1;

        r->ids[s] = hist_of(r, s)[at];
        r->pos[s] = at < r->ctx ? at : r->ctx - 1;
        r->last[s] = live[s] ? 0 : -1;
    }
    return gen_gpt_forward(r->g, r->S, 1, r->ids, r->pos, r->last, r->logits,
                           err, errlen);
}

static int
take_output(struct gen_output *o, const int32_t *ids, int n, int eos,
            int32_t eos_id, enum gen_finish finish, double score)
{
    o->ids = malloc((size_t)(n + 1) * sizeof(int32_t));
    if (o->ids == NULL)
        return -1;
    memcpy(o->ids, ids, (size_t)n * sizeof(int32_t));
    if (eos)
        o->ids[n++] = eos_id;
    o->n = n;
    o->finish = finish;
    o->score = score;
    return 0;
}

/* ------------------------------------------------------------ greedy, sampling */

static int
run_sampling(struct run *r, int n_prompts, const struct gen_prompt *prompts,
             struct gen_output *out, gen_token_fn on_token, void *ctx,
             char *err, size_t errlen)
{
    const struct gen_params *p = r->p;
    struct gen_filter f = p->filter;
    int R = p->num_return, S = r->S, n_live = S, rc = -1;
    int *live = malloc((size_t)S * sizeof(int));
    enum gen_finish *finish = malloc((size_t)S * sizeof(*finish));
    struct gen_rng *rng = malloc((size_t)S * sizeof(*rng));

    f.sample = p->strategy == GEN_SAMPLING;
    if (live == NULL || finish == NULL || rng == NULL) {
        tr_fail(err, errlen, "out of memory");
        goto out;
    }
    for (int s = 0; s < S; s++) {
        live[s] = 1;
        gen_rng_seed(&rng[s], p->seed, prompts[s / R].key, (uint64_t)(s % R));
    }
    if (prefill(r, err, errlen) < 0)
        goto out;
    while (n_live > 0) {
        for (int s = 0; s < S; s++) {
            float *row = r->logits + (size_t)s * (size_t)r->V;
            int32_t *h = hist_of(r, s), tok;
            int n_new = r->n_hist[s] - r->plen[s];

            if (!live[s])
                continue;
            gen_filter_apply(row, r->V, &f, h, (size_t)r->n_hist[s], n_new,
                             r->scratch);
            tok = f.sample ? gen_sample(row, r->V, gen_rng_uniform(&rng[s]))
                           : gen_argmax(row, r->V);
            h[r->n_hist[s]++] = tok;
            n_new++;
            if (on_token)
                on_token(ctx, s / R, s % R, tok);
            if (tok == f.eos_id)
                finish[s] = GEN_FINISH_EOS;
            else if (n_new >= p->max_new_tokens)
                finish[s] = GEN_FINISH_LENGTH;
            else if (r->n_hist[s] >= r->ctx)
                finish[s] = GEN_FINISH_CONTEXT;
            else
                continue;
            live[s] = 0;
            n_live--;
        }
        if (n_live > 0 && step(r, live, err, errlen) < 0)
            goto out;
    }
    for (int s = 0; s < S; s++)
        if (take_output(&out[s], hist_of(r, s) + r->plen[s],
                        r->n_hist[s] - r->plen[s], 0, f.eos_id, finish[s],
                        0.0) < 0) {
            gen_outputs_release(out, (size_t)s);
            tr_fail(err, errlen, "out of memory");
            goto out;
        }
    rc = 0;
out:
    free(live);
    free(finish);
    free(rng);
    (void)n_prompts;
    return rc;
}

/* ------------------------------------------------------------ beam search */

/* One step of prompt q's beams (slots q K .. q K + K - 1): the next beams
 * into nb[0..K) (the candidates that go on) and finished hypotheses into
 * b; bs holds the beams' scores. */
static int
beam_step(struct run *r, int q, struct gen_beams *b, float *bs, int n_new,
          struct gen_cand *cand, struct gen_cand *nb)
{
    const struct gen_params *p = r->p;
    int K = p->num_beams, V = r->V, s0 = q * K, k = 0;
    float *rows = r->logits + (size_t)s0 * (size_t)V;

    for (int j = 0; j < K; j++) {
        float *row = rows + (size_t)j * (size_t)V;
        int s = s0 + j;

        gen_log_softmax(row, V);
        gen_filter_apply(row, V, &p->filter, hist_of(r, s),
                         (size_t)r->n_hist[s], n_new, r->scratch);
        for (int i = 0; i < V; i++)
            row[i] = row[i] + bs[s];
    }
    gen_beams_top(rows, K, V, 2 * K, cand);
    for (int c = 0; c < 2 * K && k < K; c++) {
        int s = s0 + cand[c].beam;

        if (cand[c].token == p->filter.eos_id) {
            if (c >= K)
                continue; /* not among the K best: not a hypothesis */
            if (gen_beams_add(b, hist_of(r, s) + r->plen[s], n_new, 1,
                              (double)cand[c].score, n_new + 1) < 0)
                return -1;
        } else {
            nb[k++] = cand[c];
        }
    }
    b->done = b->done || gen_beams_is_done(b, (double)cand[0].score, n_new + 1);
    return 0;
}

static int
run_beams(struct run *r, int n_prompts, struct gen_output *out, char *err,
          size_t errlen)
{
    const struct gen_params *p = r->p;
    int K = p->num_beams, S = r->S, V = r->V, n_new = 0, rc = -1;
    int32_t eos = p->filter.eos_id;
    struct gen_beams *beams = calloc((size_t)n_prompts, sizeof(*beams));
    float *bs = malloc((size_t)S * sizeof(float));
    int *live = malloc((size_t)S * sizeof(int)), *max_new;
    int32_t *from = malloc((size_t)S * sizeof(int32_t));
    int32_t *tmp = malloc((size_t)S * (size_t)r->cap * sizeof(int32_t));
    struct gen_cand cand[2 * GEN_BEAMS_MAX], *nb;
    int n_done = 0;

    max_new = malloc((size_t)n_prompts * sizeof(int));
    nb = malloc((size_t)S * sizeof(*nb));
    if (beams == NULL || bs == NULL || live == NULL || from == NULL ||
        tmp == NULL || max_new == NULL || nb == NULL) {
        tr_fail(err, errlen, "out of memory");
        goto out;
    }
    for (int q = 0; q < n_prompts; q++) {
        if (gen_beams_init(&beams[q], K, p->length_penalty, p->early_stopping) <
            0) {
            tr_fail(err, errlen, "out of memory");
            goto out;
        }
        /* The context caps a long prompt's new tokens. */
        max_new[q] = r->ctx - r->plen[q * K];
        max_new[q] =
            p->max_new_tokens < max_new[q] ? p->max_new_tokens : max_new[q];
    }
    /* The first step's beams are copies: only the first one counts. */
    for (int s = 0; s < S; s++) {
        bs[s] = s % K == 0 ? 0.0f : -1e9f;
        live[s] = 1;
    }
    if (prefill(r, err, errlen) < 0)
        goto out;
    while (n_done < n_prompts) {
        for (int q = 0; q < n_prompts; q++) {
            int s0 = q * K;

            if (beams[q].done)
                continue;
            if (beam_step(r, q, &beams[q], bs, n_new, cand, nb + s0) < 0) {
                tr_fail(err, errlen, "out of memory");
                goto out;
            }
            /* The new beams: their parents' tokens and one more. */
            for (int j = 0; j < K; j++) {
                int s = s0 + j, from_s = s0 + nb[s].beam;

                memcpy(tmp + (size_t)s * r->cap, hist_of(r, from_s),
                       (size_t)r->n_hist[from_s] * sizeof(int32_t));
                from[s] = from_s;
            }
            for (int j = 0; j < K; j++) {
                int s = s0 + j;

                memcpy(hist_of(r, s), tmp + (size_t)s * r->cap,
                       (size_t)r->n_hist[s] * sizeof(int32_t));
                hist_of(r, s)[r->n_hist[s]++] = nb[s].token;
                bs[s] = nb[s].score;
            }
        }
        n_new++;
        for (int q = 0; q < n_prompts; q++) {
            if (beams[q].done)
                continue;
            if (n_new >= max_new[q]) { /* finalize(): the open beams too */
                for (int j = 0; j < K; j++) {
                    int s = q * K + j;

                    if (gen_beams_add(&beams[q], hist_of(r, s) + r->plen[s],
                                      n_new, 0, (double)bs[s], n_new) < 0) {
                        tr_fail(err, errlen, "out of memory");
                        goto out;
                    }
                }
                beams[q].done = 1;
            }
        }
        n_done = 0;
        for (int q = 0; q < n_prompts; q++) {
            n_done += beams[q].done;
            for (int j = 0; j < K; j++) {
                int s = q * K + j;

                live[s] = !beams[q].done;
                if (beams[q].done)
                    from[s] = s;
            }
        }
        if (n_done == n_prompts)
            break;
        {
            int len = 0;

            for (int s = 0; s < S; s++)
                len = r->n_hist[s] - 1 > len ? r->n_hist[s] - 1 : len;
            if (gen_gpt_reorder(r->g, from, S, len, err, errlen) < 0 ||
                step(r, live, err, errlen) < 0)
                goto out;
        }
    }
    for (int q = 0; q < n_prompts; q++)
        for (int j = 0; j < p->num_return; j++) {
            const struct gen_hyp *h =
                &beams[q].hyps[gen_beams_hyp_rank(&beams[q], j)];
            enum gen_finish fin = h->eos ? GEN_FINISH_EOS
                                  : max_new[q] < p->max_new_tokens
                                      ? GEN_FINISH_CONTEXT
                                      : GEN_FINISH_LENGTH;

            if (take_output(&out[q * p->num_return + j], h->ids, h->n, h->eos,
                            eos, fin, h->score) < 0) {
                gen_outputs_release(out, (size_t)(q * p->num_return + j));
                tr_fail(err, errlen, "out of memory");
                goto out;
            }
        }
    rc = 0;
out:
    for (int q = 0; beams && q < n_prompts; q++)
        gen_beams_release(&beams[q]);
    free(beams);
    free(bs);
    free(live);
    free(from);
    free(tmp);
    free(max_new);
    free(nb);
    (void)V;
    return rc;
}

/* ------------------------------------------------------------ entry */

int
gen_slots_needed(const struct gen_params *p, int n_prompts)
{
    return n_prompts * (p->strategy == GEN_BEAM ? p->num_beams : p->num_return);
}

int
gen_run(struct gen_gpt *g, const struct gen_params *p,
        const struct gen_prompt *prompts, int n_prompts, struct gen_output *out,
        gen_token_fn on_token, void *ctx, char *err, size_t errlen)
{
    struct run r;
    int rc;

    if (n_prompts < 1 || p->max_new_tokens < 1 || p->num_return < 1 ||
        (p->strategy == GEN_BEAM &&
         (p->num_beams < 1 || p->num_beams > GEN_BEAMS_MAX ||
          p->num_return > p->num_beams)))
        return tr_fail(err, errlen,
                       "bad generation settings: %d prompts, %d new tokens, "
                       "%d sequences, %d beams",
                       n_prompts, p->max_new_tokens, p->num_return,
                       p->num_beams);
    if (run_init(&r, g, p, prompts, n_prompts,
                 p->strategy == GEN_BEAM ? p->num_beams : p->num_return, err,
                 errlen) < 0)
        return -1;
    rc = p->strategy == GEN_BEAM ? run_beams(&r, n_prompts, out, err, errlen)
                                 : run_sampling(&r, n_prompts, prompts, out,
                                                on_token, ctx, err, errlen);
    run_release(&r);
    return rc;
}

void
gen_outputs_release(struct gen_output *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(out[i].ids);
        out[i].ids = NULL;
    }
}
