/* SPDX-License-Identifier: MIT */
/*
 * gen_gpt.h: GPT-2's forward pass for generation, with a key/value cache:
 * a decoder over a model's parameters (read through the model, never
 * copied) that holds the keys and values of up to `slots` sequences of up
 * to `ctx` positions, so each new token costs one row through the
 * network.  Written against struct ops, so it runs on every backend.
 */
#ifndef TRAIN_GEN_GPT_H
#define TRAIN_GEN_GPT_H

#include <stddef.h>
#include <stdint.h>

struct model;
struct gen_gpt;

/* gen_gpt_new: a decoder for m (a GPT-2 model of one rank, no tensor or
 * pipeline parallelism; it must outlive the decoder) with caches for
 * `slots` sequences of ctx positions (at most the model's), running at
 * most rows_max rows (sequences x tokens) a call.  Returns 0, or -1 with
 * err (bad sizes, out of memory: the backend's message). */
int gen_gpt_new(struct gen_gpt **out, struct model *m, int slots, int ctx,
                int rows_max, char *err, size_t errlen);
void gen_gpt_free(struct gen_gpt *g);

/* The vocabulary's size (the logits' columns) and the decoder's sizes. */
int gen_gpt_vocab(const struct gen_gpt *g);
int gen_gpt_slots(const struct gen_gpt *g);
int gen_gpt_ctx(const struct gen_gpt *g);
int gen_gpt_rows_max(const struct gen_gpt *g);

/* gen_gpt_forward: sequences 0..B-1 (slots, B <= slots) each add n tokens
 * ids[b * n .. b * n + n) at positions pos[b] .. pos[b] + n - 1 (B * n <=
 * rows_max, pos[b] + n <= ctx; the cache holds every position below
 * pos[b] from earlier calls).  logits[b * V .. b * V + V) receives the
 * next-token logits after token last[b] (0 <= last[b] < n) of sequence b,
 * fp32, V = gen_gpt_vocab(); sequences with last[b] < 0 are skipped
 * (their rows are left as they were).  ids, pos, last and logits are host
 * memory.  Returns 0, or -1 with err (an id outside the vocabulary, the
 * backend's failure). */
int gen_gpt_forward(struct gen_gpt *g, int B, int n, const int32_t *ids,
                    const int32_t *pos, const int32_t *last, float *logits,
                    char *err, size_t errlen);

/* gen_gpt_reorder: beam search's new beams: slot s takes the cache of slot
 * from[s] (s < n_slots), for positions 0 .. len - 1.  Returns 0, or -1
 * with err. */
int gen_gpt_reorder(struct gen_gpt *g, const int32_t *from, int n_slots,
                    int len, char *err, size_t errlen);

#endif /* TRAIN_GEN_GPT_H */
