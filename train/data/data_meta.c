/* SPDX-License-Identifier: MIT */
/*
 * data_meta.c: before a run builds anything, the sidecars of its datasets
 * (ds-meta(5), written by create-pretraining-data and merge) are compared
 * with the model and vocab it will train with, so that ids made with
 * another vocab or tokenizer fail at once with a clear error rather than
 * train a model on the wrong tokens.  Datasets without a sidecar
 * (PaddleNLP's, Megatron's) get a note.
 */
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data_meta.h"
#include "ds.h"
#include "tok.h"

struct check {
    struct ds_meta want; /* what the run reads */
    /* The SHA-256 of the run's vocab written in either format of
     * tok-vocab(5) (one token a line; token<TAB>id), with and without a
     * newline after the last line ("" if unknown): the same tokens with the
     * same ids, so the same vocabulary (a checkpoint's vocab.txt is the
     * one the run read, in the first form). */
    char same_vocab[4][DS_META_HEX];
    const char *vocab;   /* the files it was taken from, for messages */
    long model_vocab;    /* the model's vocab_size */
    size_t n, n_missing; /* datasets, and those without a record */
    char first_missing[512];
    char *msg;
    size_t len;
};

static int
is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* One dataset: 0 to go on, 1 to stop with c->msg set. */
static int
check_one(void *arg, const char *prefix)
{
    struct check *c = arg;
    struct ds_meta m;
    struct ds_err e;
    char diff[320];
    int rc = ds_meta_read(prefix, &m, &e);

    c->n++;
    if (rc < 0) {
        snprintf(c->msg, c->len, "%s", e.msg);
        return 1;
    }
    if (rc == 1 && ds_meta_stale(prefix, &m, &e) > 0)
        rc = 0;
    if (rc == 0) {
        if (c->n_missing++ == 0)
            snprintf(c->first_missing, sizeof(c->first_missing), "%s", prefix);
        return 0;
    }
    if (ds_meta_compare(&m, &c->want, DS_META_TOKENIZER, diff, sizeof(diff))) {
        snprintf(c->msg, c->len,
                 "dataset '%s' holds %s ids (its sidecar '%s.json'), but "
                 "%s reads %s ids: check --input_dir and the model",
                 prefix, m.tokenizer, prefix,
                 strcmp(c->want.tokenizer, "gpt2-bpe") ? "an ERNIE model"
                                                       : "a GPT model",
                 strcmp(c->want.tokenizer, "gpt2-bpe") ? "WordPiece"
                                                       : "gpt2-bpe");
        return 1;
    }
    for (int f = 0; f < 4; f++)
        if (c->same_vocab[f][0] && !strcmp(m.vocab_sha256, c->same_vocab[f]))
            snprintf(m.vocab_sha256, sizeof(m.vocab_sha256), "%s",
                     c->want.vocab_sha256);
    if (ds_meta_compare(&m, &c->want, DS_META_VOCAB, diff, sizeof(diff))) {
        snprintf(c->msg, c->len,
                 "dataset '%s' was made with another vocab than this run's "
                 "'%s' (%s, its sidecar '%s.json' vs the run's): train with "
                 "the vocab it was made with ('%s'), or remake the dataset",
                 prefix, c->vocab, diff, prefix, m.vocab[0] ? m.vocab : "?");
        return 1;
    }
    if (m.vocab_size > c->model_vocab &&
        strcmp(c->want.tokenizer, "gpt2-bpe") == 0) {
        snprintf(c->msg, c->len,
                 "dataset '%s' holds ids of a %lld-token vocab (its sidecar "
                 "'%s.json'), but the model has only %ld (vocab_size)",
                 prefix, (long long)m.vocab_size, prefix, c->model_vocab);
        return 1;
    }
    return 0;
}

/* hex = the SHA-256 of the vocab v written one token a line (tab 0) or
 * as token<TAB>id lines (tab 1), in id order, the last line ended by a
 * newline or not (last_nl). */
static void
vocab_form_sha256(const struct tok_vocab *v, int tab, int last_nl,
                  char hex[DS_META_HEX])
{
    static const char digits[] = "0123456789abcdef";
    uint8_t digest[SHA256_DIGEST_SIZE];
    struct sha256_ctx ctx;
    size_t n = tok_vocab_n_ids(v), n_rep;
    const struct tok_vocab_repeat *rep = tok_vocab_repeats(v, &n_rep);
    char id[24];

    sha256_init(&ctx);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *t = tok_vocab_token(v, (tok_id)i, &len);

        /* An id without a token is a line whose token a later line
         * repeats (ernie-3.0's vocab has "$" twice). */
        for (size_t k = 0; t == NULL && k < n_rep; k++)
            if (rep[k].dropped_id == (tok_id)i)
                t = tok_vocab_token(v, rep[k].id, &len);
        if (t != NULL)
            sha256_update(&ctx, len, (const uint8_t *)t);
        if (tab) {
            int w = snprintf(id, sizeof(id), "\t%zu", i);

            sha256_update(&ctx, (size_t)w, (const uint8_t *)id);
        }
        if (i + 1 < n || last_nl)
            sha256_update(&ctx, 1, (const uint8_t *)"\n");
    }
    sha256_digest(&ctx, sizeof(digest), digest);
    for (size_t i = 0; i < sizeof(digest); i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = '\0';
}

int
data_meta_check(const char *spec, int gpt, const char *vocab_path,
                const char *tokenizer, long model_vocab_size, char *msg,
                size_t len)
{
    struct check c;
    struct ds_err e;
    char json[4096], merges[4096];
    int rc;

    memset(&c, 0, sizeof(c));
    ds_meta_init(&c.want, NULL, NULL);
    c.model_vocab = model_vocab_size;
    c.msg = msg;
    c.len = len;
    snprintf(c.want.tokenizer, sizeof(c.want.tokenizer), "%s",
             gpt ? "gpt2-bpe" : "wordpiece");
    if (!gpt && vocab_path != NULL) {
        c.vocab = vocab_path;
        struct tok_vocab *v;
        struct tok_err te;

        if (ds_meta_file_sha256(vocab_path, c.want.vocab_sha256, &e) < 0) {
            snprintf(msg, len, "%s", e.msg);
            return -1;
        }
        if (tok_vocab_load(&v, vocab_path, &te) == 0) {
            for (int f = 0; f < 4; f++)
                vocab_form_sha256(v, f & 1, f >> 1, c.same_vocab[f]);
            tok_vocab_free(v);
        }
    } else if (gpt && tokenizer != NULL) {
        snprintf(json, sizeof(json), "%s/vocab.json", tokenizer);
        snprintf(merges, sizeof(merges), "%s/merges.txt", tokenizer);
        if (is_file(json) && is_file(merges)) {
            c.vocab = tokenizer;
            if (ds_meta_file_sha256(json, c.want.vocab_sha256, &e) < 0 ||
                ds_meta_file_sha256(merges, c.want.merges_sha256, &e) < 0) {
                snprintf(msg, len, "%s", e.msg);
                return -1;
            }
        }
    }
    rc = ds_corpus_each_prefix(spec, check_one, &c, &e);
    if (rc == 1)
        return -1;
    if (rc < 0) {
        snprintf(msg, len, "%s", e.msg);
        return -1;
    }
    if (c.n_missing == 0)
        return 0;
    snprintf(msg, len,
             "%zu of %zu datasets of --input_dir have no sidecar, or a stale "
             "one ('%s.json' the first; made by PaddleNLP or Megatron?): "
             "their vocab and tokenizer are not checked",
             c.n_missing, c.n, c.first_missing);
    return 1;
}
