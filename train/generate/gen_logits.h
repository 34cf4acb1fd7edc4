/* SPDX-License-Identifier: MIT */
/*
 * gen_logits.h: what generation does to a row of next-token logits on the
 * host, each step as transformers 4.46's logits processors do it, in
 * their order (RepetitionPenaltyLogitsProcessor,
 * MinNewTokensLengthLogitsProcessor, then for sampling
 * TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper), in fp32
 * as they run in torch; the greedy choice (torch.argmax), the log-softmax
 * of beam search, and a seeded draw from the filtered distribution.
 * Filtered-out tokens get -INFINITY (transformers' filter_value).
 */
#ifndef TRAIN_GEN_LOGITS_H
#define TRAIN_GEN_LOGITS_H

#include <stddef.h>
#include <stdint.h>

/* The settings of the processors; 0 / 1 / -1 where one is off. */
struct gen_filter {
    float repetition_penalty; /* 1: none; else > 0 */
    int min_new_tokens;       /* eos is forbidden before this many new */
    int32_t eos_id;           /* -1: none (then min_new_tokens is moot) */
    int sample;               /* 1: the three warpers below apply */
    float temperature;        /* > 0; 1: none */
    int top_k;                /* 0: none */
    float top_p;              /* (0, 1]; 1: none */
};

/* Scratch for the filters, sized for a vocabulary of V; one per thread.
 * gen_scratch_new returns NULL when out of memory. */
struct gen_scratch;
struct gen_scratch *gen_scratch_new(int V);
void gen_scratch_free(struct gen_scratch *s);

/* gen_repetition_penalty: every distinct token of hist[0..n) (the prompt
 * and what was generated) has its score divided by penalty, or
 * multiplied when it is negative. */
void gen_repetition_penalty(float *scores, int V, const int32_t *hist, size_t n,
                            float penalty, struct gen_scratch *s);

/* gen_top_k: scores below the k-th largest become -inf (ties with it are
 * kept). */
void gen_top_k(float *scores, int V, int k, struct gen_scratch *s);

/* gen_top_p: with the scores sorted ascending and their softmax summed
 * cumulatively (fp32 probabilities, summed in double), tokens whose sum
 * is <= 1 - p become -inf, the largest always kept. */
void gen_top_p(float *scores, int V, float p, struct gen_scratch *s);

/* gen_filter_apply: the processors of f in transformers' order on one
 * row, of a sequence with hist[0..n_hist) so far of which n_new were
 * generated. */
void gen_filter_apply(float *scores, int V, const struct gen_filter *f,
                      const int32_t *hist, size_t n_hist, int n_new,
                      struct gen_scratch *s);

/* gen_argmax: the first index of the largest score (torch.argmax). */
int32_t gen_argmax(const float *scores, int V);

/* gen_log_softmax: scores[i] - max - log(sum exp(scores - max)), in place,
 * fp32 as torch's log_softmax (the sum in double). */
void gen_log_softmax(float *scores, int V);

/* A stream of uniform draws, one per sequence: splitmix64 seeded from the
 * run's seed and the sequence's key (its prompt's index and its number
 * among the prompt's sequences), so a sequence draws the same numbers
 * whatever else is generated with it. */
struct gen_rng {
    uint64_t state;
};
void gen_rng_seed(struct gen_rng *r, uint64_t seed, uint64_t prompt,
                  uint64_t seq);
/* A uniform double in [0, 1) (53 bits). */
double gen_rng_uniform(struct gen_rng *r);

/* gen_sample: a token drawn from softmax(scores) (-inf: probability 0) by
 * inverting its cumulative sum, in double, at u in [0, 1). */
int32_t gen_sample(const float *scores, int V, double u);

#endif /* TRAIN_GEN_LOGITS_H */
