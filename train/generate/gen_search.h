/* SPDX-License-Identifier: MIT */
/*
 * gen_search.h: generating text with a GPT decoder (gen_gpt.h) as
 * transformers 4.46's generate() does: greedy search, sampling (the
 * processors of gen_logits.h, a seeded stream per sequence) and beam
 * search (gen_beam.h), for a batch of prompts of any lengths at once,
 * each prompt giving the tokens it would give alone.  A sequence ends at
 * the eos token (kept as its last token), after max_new_tokens, or when
 * the model's context is full.
 */
#ifndef TRAIN_GEN_SEARCH_H
#define TRAIN_GEN_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "gen_logits.h"

struct gen_gpt;

enum gen_strategy { GEN_SAMPLING, GEN_GREEDY, GEN_BEAM };

struct gen_params {
    enum gen_strategy strategy;
    /* The processors; filter.sample is set from the strategy. */
    struct gen_filter filter;
    int max_new_tokens; /* >= 1 */
    int num_return;     /* sequences per prompt (beam: <= num_beams) */
    int num_beams;      /* beam search, 1..GEN_BEAMS_MAX */
    double length_penalty;
    int early_stopping;
    uint64_t seed; /* sampling */
};

/* A prompt: its ids and the key of its sequences' random streams (its
 * index in the input, so that a prompt samples the same tokens whatever
 * batch it is in). */
struct gen_prompt {
    const int32_t *ids;
    int n;
    uint64_t key;
};

enum gen_finish { GEN_FINISH_EOS, GEN_FINISH_LENGTH, GEN_FINISH_CONTEXT };

/* One generated sequence. */
struct gen_output {
    int32_t *ids; /* the new tokens, the eos included (malloc'd) */
    int n;
    enum gen_finish finish;
    double score; /* beam search: the hypothesis' score; else 0 */
};

/* Called with each new token of sequence seq of prompt p as it is chosen
 * (greedy search and sampling), for streaming. */
typedef void (*gen_token_fn)(void *ctx, int p, int seq, int32_t token);

/* gen_slots_needed: the decoder slots a batch of n_prompts takes. */
int gen_slots_needed(const struct gen_params *p, int n_prompts);

/* gen_run: generate for prompts[0..n_prompts) (each 1 .. ctx - 1 tokens)
 * into out[p * num_return + j], the j-th sequence of prompt p (beam
 * search: the best first).  on_token may be NULL.  Returns 0, or -1 with
 * err (the decoder's failure, out of memory); out then holds nothing to
 * release. */
int gen_run(struct gen_gpt *g, const struct gen_params *p,
            const struct gen_prompt *prompts, int n_prompts,
            struct gen_output *out, gen_token_fn on_token, void *ctx, char *err,
            size_t errlen);

/* gen_outputs_release: free the ids of out[0..n). */
void gen_outputs_release(struct gen_output *out, size_t n);

#endif /* TRAIN_GEN_SEARCH_H */
