/* SPDX-License-Identifier: MIT */
/*
 * gen_beam.c: beam search's hypotheses and candidates (gen_beam.h), line
 * for line after transformers 4.46's generation/beam_search.py
 * (BeamHypotheses.add, is_done; BeamSearchScorer.finalize's ordering) and
 * torch.topk.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen_beam.h"

int
gen_beams_init(struct gen_beams *b, int num_beams, double length_penalty,
               int early_stopping)
{
    memset(b, 0, sizeof(*b));
    b->num_beams = num_beams;
    b->length_penalty = length_penalty;
    b->early_stopping = early_stopping;
    b->worst = 1e9;
    if (num_beams < 1 || num_beams > GEN_BEAMS_MAX)
        return -1;
    b->hyps = calloc((size_t)num_beams + 1, sizeof(*b->hyps));
    return b->hyps == NULL ? -1 : 0;
}

void
gen_beams_release(struct gen_beams *b)
{
    for (int i = 0; b->hyps && i < b->n_hyps; i++)
        free(b->hyps[i].ids);
    free(b->hyps);
    memset(b, 0, sizeof(*b));
}

int
gen_beams_add(struct gen_beams *b, const int32_t *ids, int n, int eos,
              double sum_logprobs, int generated_len)
{
    double score = sum_logprobs / pow((double)generated_len, b->length_penalty);
    struct gen_hyp *h;

    if (!(b->n_hyps < b->num_beams || score > b->worst))
        return 0;
    h = &b->hyps[b->n_hyps++];
    h->score = score;
    h->n = n;
    h->eos = eos;
    h->ids = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (h->ids == NULL) {
        b->n_hyps--;
        return -1;
    }
    memcpy(h->ids, ids, (size_t)n * sizeof(int32_t));
    if (b->n_hyps > b->num_beams) {
        /* sorted((s, idx)): drop the lowest score (the first of equal
         * ones), the next lowest is the new worst. */
        int lo = 0, next = -1;

        for (int i = 1; i < b->n_hyps; i++)
            if (b->hyps[i].score < b->hyps[lo].score)
                lo = i;
        for (int i = 0; i < b->n_hyps; i++)
            if (i != lo && (next < 0 || b->hyps[i].score < b->hyps[next].score))
                next = i;
        b->worst = b->hyps[next].score;
        free(b->hyps[lo].ids);
        memmove(&b->hyps[lo], &b->hyps[lo + 1],
                (size_t)(b->n_hyps - lo - 1) * sizeof(*b->hyps));
        b->n_hyps--;
    } else {
        b->worst = score < b->worst ? score : b->worst;
    }
    return 0;
}

int
gen_beams_is_done(const struct gen_beams *b, double best_sum_logprobs,
                  int generated_len)
{
    if (b->n_hyps < b->num_beams)
        return 0;
    if (b->early_stopping)
        return 1;
    return b->worst >=
           best_sum_logprobs / pow((double)generated_len, b->length_penalty);
}

/* a before b in topk's order: the larger score, then the lower index. */
static int
better(float sa, size_t ia, float sb, size_t ib)
{
    return sa > sb || (sa == sb && ia < ib);
}

void
gen_beams_top(const float *scores, int num_beams, int V, int n,
              struct gen_cand *out)
{
    size_t total = (size_t)num_beams * (size_t)V, at[2 * GEN_BEAMS_MAX];
    int have = 0;

    n = n < 2 * GEN_BEAMS_MAX ? n : 2 * GEN_BEAMS_MAX;
    /* Insertion into a sorted list of the n best so far: n is small. */
    for (size_t i = 0; i < total; i++) {
        float s = scores[i];
        int j;

        if (have == n && !better(s, i, scores[at[n - 1]], at[n - 1]))
            continue;
        j = have < n ? have++ : n - 1;
        while (j > 0 && better(s, i, scores[at[j - 1]], at[j - 1])) {
            at[j] = at[j - 1];
            j--;
        }
        at[j] = i;
    }
    for (int j = 0; j < have; j++) {
        out[j].score = scores[at[j]];
        out[j].beam = (int32_t)(at[j] / (size_t)V);
        out[j].token = (int32_t)(at[j] % (size_t)V);
    }
}

int
gen_beams_hyp_rank(const struct gen_beams *b, int r)
{
    /* sorted(key=score) is stable; pop() takes from the end: among equal
     * scores the one added last comes first. */
    int n = b->n_hyps, order[GEN_BEAMS_MAX + 1];

    for (int i = 0; i < n; i++) {
        int j = i;

        while (j > 0 && b->hyps[order[j - 1]].score > b->hyps[i].score) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return r >= 0 && r < n ? order[n - 1 - r] : -1;
}
