/* SPDX-License-Identifier: MIT */
/*
 * datasets.c: the run's data: the vocabulary ERNIE's samples are masked
 * with, the datasets' sidecars checked against the run, the corpus of
 * --input_dir, and the loaders of its splits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_meta.h"
#include "datasets.h"
#include "ds.h"
#include "tok.h"

static int32_t
vocab_special(const struct vocab *vc, const char *path, const char *t)
{
    tok_id id = tok_vocab_find(vc->v, t, strlen(t));

    if (id < 0)
        fatal("vocab '%s' has no %s token", path, t);
    return (int32_t)id;
}

void
vocab_open(struct vocab *vc, const char *path)
{
    struct tok_err e;

    if (tok_vocab_load(&vc->v, path, &e) < 0)
        fatal("%s", e.msg);
    vc->n_base = tok_vocab_n_ids(vc->v);
    /* The "##<CJK>" ids PaddleNLP's tokenizer adds (the samples map them
     * back to their characters). */
    if (tok_vocab_extend_chinese(vc->v, &e) < 0)
        fatal("%s: %s", path, e.msg);
    vc->n_tokens = tok_vocab_n_ids(vc->v);
    vc->tokens = calloc(vc->n_tokens, sizeof(*vc->tokens));
    if (vc->tokens == NULL)
        fatal("out of memory");
    for (size_t i = 0; i < vc->n_tokens; i++) {
        const char *t = tok_vocab_token(vc->v, (tok_id)i, NULL);

        vc->tokens[i] = t ? t : "";
    }
    vc->cls = vocab_special(vc, path, "[CLS]");
    vc->sep = vocab_special(vc, path, "[SEP]");
    vc->mask = vocab_special(vc, path, "[MASK]");
    vc->pad = vocab_special(vc, path, "[PAD]");
}

void
check_data_meta(const struct run *r)
{
    const struct train_args *a = &r->a;
    char msg[1024];
    int rc =
        data_meta_check(a->input_dir, r->cfg.type == MODEL_GPT, r->vocab_path,
                        a->tokenizer_name_or_path ? a->tokenizer_name_or_path
                                                  : a->model_name_or_path,
                        r->cfg.vocab_size, msg, sizeof(msg));

    if (rc < 0)
        fatal("%s", msg);
    if (rc > 0)
        log_info("note: %s", msg);
}

void
open_data(struct run *r)
{
    struct ds_corpus_opts o;
    struct ds_err e;
    const struct train_args *a = &r->a;

    memset(&o, 0, sizeof(o));
    o.kind = r->cfg.type == MODEL_GPT ? DS_CORPUS_GPT : DS_CORPUS_ERNIE;
    o.split = a->split;
    o.max_seq_len = (uint32_t)a->max_seq_len;
    o.seed = (uint64_t)a->seed;
    o.short_seq_prob = a->short_seq_prob;
    /* ernie-data.md 8.3: T = gbs * max_steps; the valid and test counts
     * from the evaluation cadence. */
    o.n_samples[0] = (uint64_t)r->gbs * (uint64_t)a->max_steps;
    o.n_samples[1] = (uint64_t)r->gbs *
                     (uint64_t)(a->max_steps / a->eval_freq + 1) *
                     (uint64_t)a->eval_iters;
    o.n_samples[2] = (uint64_t)r->gbs * 10 * (uint64_t)a->eval_iters;
    o.cache_dir = a->cache_dir;
    if (o.kind == DS_CORPUS_ERNIE) {
        o.ernie.masked_lm_prob = a->masked_lm_prob;
        o.ernie.max_ngrams = (uint32_t)a->max_ngrams;
        o.ernie.favor_longer_ngram = a->favor_longer_ngram;
        o.ernie.geometric_ngram = a->geometric_ngram;
        o.ernie.binary_head = a->binary_head;
        o.ernie.cls_id = r->vocab.cls;
        o.ernie.sep_id = r->vocab.sep;
        o.ernie.mask_id = r->vocab.mask;
        o.ernie.pad_id = r->vocab.pad;
    }
    if (ds_corpus_open(&r->corpus, a->input_dir, &o,
                       o.kind == DS_CORPUS_ERNIE ? r->vocab.tokens : NULL,
                       r->vocab.n_tokens, r->vocab.n_base, &e) < 0)
        fatal("%s", e.msg);
    log_info("data: %llu train, %llu valid, %llu test samples (%zu index "
             "file(s) built)",
             (unsigned long long)ds_corpus_n_samples(r->corpus, DS_SPLIT_TRAIN),
             (unsigned long long)ds_corpus_n_samples(r->corpus, DS_SPLIT_VALID),
             (unsigned long long)ds_corpus_n_samples(r->corpus, DS_SPLIT_TEST),
             ds_corpus_n_built(r->corpus));
    if (ds_corpus_n_stale(r->corpus) > 0)
        log_info("data: removed %zu lock and temporary file(s) that "
                 "interrupted index builds had left",
                 ds_corpus_n_stale(r->corpus));
}

struct loader *
open_loader(struct run *r, enum ds_split split)
{
    struct loader *l =
        loader_new(r->corpus, split, r->cfg.type, r->a.micro_batch_size,
                   r->a.max_seq_len, max_masked(&r->a));

    l->dp_rank = (uint32_t)r->replica;
    l->dp_world = (uint32_t)r->replicas;
    return l;
}
