/* SPDX-License-Identifier: MIT */
/*
 * gen_beam.h: beam search's bookkeeping for one prompt, as transformers
 * 4.46's BeamSearchScorer and BeamHypotheses do it: the finished
 * hypotheses (at most num_beams, the worst dropped), their scores
 * (sum of log-probabilities / generated length ^ length_penalty), when the
 * search for a prompt is done, and one step's choice of the next beams
 * among the 2 x num_beams best candidates.
 */
#ifndef TRAIN_GEN_BEAM_H
#define TRAIN_GEN_BEAM_H

#include <stddef.h>
#include <stdint.h>

/* The most beams a prompt may have. */
#define GEN_BEAMS_MAX 64

struct gen_hyp {
    double score;
    int32_t *ids; /* the generated tokens, without the eos (malloc'd) */
    int n;
    int eos; /* ended by the eos token (not counted in n) */
};

struct gen_beams {
    int num_beams;
    double length_penalty;
    int early_stopping;
    struct gen_hyp *hyps; /* [num_beams + 1] */
    int n_hyps;
    double worst; /* the worst score kept (1e9 before any) */
    int done;
};

/* gen_beams_init: empty, for num_beams (<= GEN_BEAMS_MAX) beams; -1 when
 * out of memory. */
int gen_beams_init(struct gen_beams *b, int num_beams, double length_penalty,
                   int early_stopping);
void gen_beams_release(struct gen_beams *b);

/* gen_beams_add: a finished hypothesis of ids[0..n) (copied) whose
 * log-probabilities sum to sum_logprobs, generated_len tokens long (the
 * eos included when eos), kept if there is room or it beats the worst.
 * Returns 0, or -1 when out of memory. */
int gen_beams_add(struct gen_beams *b, const int32_t *ids, int n, int eos,
                  double sum_logprobs, int generated_len);

/* gen_beams_is_done: BeamHypotheses.is_done(best_sum_logprobs, cur_len)
 * with cur_len the generated length. */
int gen_beams_is_done(const struct gen_beams *b, double best_sum_logprobs,
                      int generated_len);

/* A candidate of a step: its score (the beam's plus the token's
 * log-probability, fp32) and where it comes from. */
struct gen_cand {
    float score;
    int32_t beam, token;
};

/* gen_beams_top: the n best of the num_beams x V scores (row k the
 * candidates of beam k), best first (torch.topk, sorted; ties by the lower
 * flat index), into out[0..n); n <= 2 x GEN_BEAMS_MAX. */
void gen_beams_top(const float *scores, int num_beams, int V, int n,
                   struct gen_cand *out);

/* gen_beams_hyp_rank: the index into b->hyps of the r-th best hypothesis
 * (r = 0 the best), as finalize() pops them from the scores sorted
 * ascending (stable). */
int gen_beams_hyp_rank(const struct gen_beams *b, int r);

#endif /* TRAIN_GEN_BEAM_H */
