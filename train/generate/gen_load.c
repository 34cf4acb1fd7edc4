/* SPDX-License-Identifier: MIT */
/*
 * gen_load.c: a checkpoint directory for inference (gen_load.h): the model
 * type from config.json's "model_type", the config read as train reads
 * it, the weights mapped and checked, the tokenizer files loaded through
 * libtok, and the model built and filled.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/hf_tokenizer.h"
#include "ckpt/safetensors.h"
#include "ckpt/weights.h"
#include "gen_load.h"
#include "model/model.h"
#include "model/params.h"
#include "tok.h"
#include "util/tr_util.h"

/* dir/name into path; -1 if too long. */
static int
path_in(char path[PATH_MAX], const char *dir, const char *name)
{
    int n = snprintf(path, PATH_MAX, "%s/%s", dir, name);

    return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* 1 if dir/name is a regular file (following links). */
static int
has_file(const char *dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;

    return path_in(path, dir, name) == 0 && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* The model type named by config.json's "model_type" (or, without one,
 * by GPT-2's keys). */
static int
read_type(const char *path, enum model_type *type, int *bert, char *err,
          size_t errlen)
{
    struct config_err ce;
    struct json_object *root = config_json_object(path, &ce), *o;
    const char *s;
    int rc = 0;

    if (root == NULL)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (json_object_object_get_ex(root, "model_type", &o) &&
        json_object_is_type(o, json_type_string)) {
        s = json_object_get_string(o);
        if (strcmp(s, "gpt2") == 0)
            *type = MODEL_GPT;
        else if (strcmp(s, "ernie") == 0 || strcmp(s, "bert") == 0)
            *type = MODEL_ERNIE;
        else
            rc = tr_fail(err, errlen,
                         "'%s': model_type '%.100s' is neither gpt2 nor "
                         "ernie (or bert)",
                         path, s);
    } else {
        *type = json_object_object_get_ex(root, "n_embd", &o) ? MODEL_GPT
                                                              : MODEL_ERNIE;
    }
    *bert = rc == 0 && json_object_object_get_ex(root, "model_type", &o) &&
            json_object_is_type(o, json_type_string) &&
            strcmp(json_object_get_string(o), "bert") == 0;
    json_object_put(root);
    return rc;
}

/* ERNIE's tokenizer_config.json: lower-casing (default on) and whose
 * tokenizer (PaddleNLP's ErnieTokenizer isolates symbols, BERT's does
 * not). */
static int
read_wordpiece_opts(const char *dir, struct tok_opts *o, char *err,
                    size_t errlen)
{
    char path[PATH_MAX];
    struct config_err ce;
    struct json_object *root, *v;

    tok_opts_init(o, TOK_FLAVOR_BERT);
    if (!has_file(dir, "tokenizer_config.json"))
        return 0;
    if (path_in(path, dir, "tokenizer_config.json") < 0)
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if ((root = config_json_object(path, &ce)) == NULL)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (json_object_object_get_ex(root, "tokenizer_class", &v) &&
        json_object_is_type(v, json_type_string) &&
        strcmp(json_object_get_string(v), "ErnieTokenizer") == 0)
        tok_opts_init(o, TOK_FLAVOR_ERNIE);
    if (json_object_object_get_ex(root, "do_lower_case", &v) &&
        json_object_is_type(v, json_type_boolean))
        o->lowercase = json_object_get_boolean(v);
    json_object_put(root);
    return 0;
}

static int
open_tokenizer(struct gen_checkpoint *c, char *err, size_t errlen)
{
    char a[PATH_MAX], b[PATH_MAX];
    struct tok_err te;

    if (c->cfg.type == MODEL_GPT) {
        const char *missing = !has_file(c->dir, "vocab.json")   ? "vocab.json"
                              : !has_file(c->dir, "merges.txt") ? "merges.txt"
                                                                : NULL;

        if (missing)
            return tr_fail(err, errlen,
                           "checkpoint '%s' has no tokenizer: '%s' is missing "
                           "(a GPT checkpoint needs vocab.json and merges.txt; "
                           "train writes them when it has "
                           "--tokenizer_name_or_path)",
                           c->dir, missing);
        if (path_in(a, c->dir, "vocab.json") < 0 ||
            path_in(b, c->dir, "merges.txt") < 0)
            return tr_fail(err, errlen, "'%s': path too long", c->dir);
        if (tok_bpe_load(&c->bpe, a, b, &te) < 0)
            return tr_fail(err, errlen, "%s", te.msg);
        c->endoftext =
            tok_bpe_find(c->bpe, HF_TOKENIZER_EOS, strlen(HF_TOKENIZER_EOS));
        return 0;
    }
    if (!has_file(c->dir, "vocab.txt"))
        return tr_fail(err, errlen,
                       "checkpoint '%s' has no tokenizer: 'vocab.txt' is "
                       "missing (train writes it when it has "
                       "--tokenizer_name_or_path)",
                       c->dir);
    {
        struct tok_opts o;

        if (read_wordpiece_opts(c->dir, &o, err, errlen) < 0)
            return -1;
        if (path_in(a, c->dir, "vocab.txt") < 0)
            return tr_fail(err, errlen, "'%s': path too long", c->dir);
        if (tok_vocab_load(&c->vocab, a, &te) < 0 ||
            tok_tokenizer_new(&c->wordpiece, c->vocab, &o, &te) < 0)
            return tr_fail(err, errlen, "%s", te.msg);
    }
    if ((int64_t)tok_vocab_n_ids(c->vocab) > c->cfg.vocab_size)
        return tr_fail(err, errlen,
                       "'%s/vocab.txt' has %zu ids, more than the model's "
                       "vocabulary of %d",
                       c->dir, tok_vocab_n_ids(c->vocab), c->cfg.vocab_size);
    return 0;
}

int
gen_checkpoint_open(struct gen_checkpoint *c, const char *dir, char *err,
                    size_t errlen)
{
    char path[PATH_MAX];
    struct config_err ce;
    struct st_err se;
    struct stat st;
    enum model_type type = MODEL_GPT;
    int bert = 0;

    memset(c, 0, sizeof(*c));
    c->endoftext = -1;
    if (stat(dir, &st) < 0)
        return tr_fail(err, errlen, "cannot open checkpoint '%s': %s", dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tr_fail(err, errlen,
                       "'%s' is not a directory: give a checkpoint directory "
                       "(config.json, model.safetensors, tokenizer files)",
                       dir);
    if ((c->dir = strdup(dir)) == NULL)
        return tr_fail(err, errlen, "out of memory");
    if (path_in(path, dir, "config.json") < 0)
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (!has_file(dir, "config.json"))
        return tr_fail(err, errlen, "checkpoint '%s' has no config.json", dir);
    if (read_type(path, &type, &bert, err, errlen) < 0)
        return -1;
    config_defaults(&c->cfg, type);
    if (bert) /* BertConfig has no task embeddings */
        c->cfg.use_task_id = 0;
    if (config_read_json(&c->cfg, path, &ce) < 0 ||
        config_check(&c->cfg, &ce) < 0)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (path_in(path, dir, "model.safetensors") < 0)
        return tr_fail(err, errlen, "'%s': path too long", dir);
    if (!has_file(dir, "model.safetensors"))
        return tr_fail(err, errlen,
                       "checkpoint '%s' has no model.safetensors (the "
                       "weights, F32)",
                       dir);
    if (st_open(&c->weights, path, &se) < 0)
        return tr_fail(err, errlen, "%s", se.msg);
    /* config.json does not say whether ERNIE has its SOP head: the
     * weights do (ErnieForMaskedLM's have neither it nor the pooler). */
    if (type == MODEL_ERNIE) {
        c->cfg.binary_head =
            st_find(c->weights, "cls.seq_relationship.weight") != NULL;
        /* BertForMaskedLM's names: "bert." where ERNIE's are "ernie.". */
        c->bert_names =
            st_find(c->weights, "bert.embeddings.word_embeddings.weight") !=
            NULL;
    }
    return open_tokenizer(c, err, errlen);
}

void
gen_checkpoint_close(struct gen_checkpoint *c)
{
    st_close(c->weights);
    tok_bpe_free(c->bpe);
    tok_tokenizer_free(c->wordpiece);
    tok_vocab_free(c->vocab);
    free(c->dir);
    memset(c, 0, sizeof(*c));
}

/* The model's table under BERT's names: a copy whose "ernie." names read
 * "bert.".  Returns 0, or -1 when out of memory. */
static int
bert_table(const struct param_table *pt, struct param_table *alt)
{
    *alt = *pt;
    alt->t = malloc((pt->n ? pt->n : 1) * sizeof(*alt->t));
    if (alt->t == NULL)
        return -1;
    memcpy(alt->t, pt->t, pt->n * sizeof(*alt->t));
    for (size_t i = 0; i < pt->n; i++)
        if (strncmp(alt->t[i].name, "ernie.", 6) == 0)
            snprintf(alt->t[i].name, sizeof(alt->t[i].name), "bert.%s",
                     pt->t[i].name + 6);
    return 0;
}

int
gen_checkpoint_model(struct gen_checkpoint *c, const struct ops *ops, int max_B,
                     int max_T, int max_M, struct model **out, char *err,
                     size_t errlen)
{
    struct model *m;
    struct param_table alt;
    struct st_err se;
    int rc;

    *out = NULL;
    if (model_create(&m, &c->cfg, ops, max_B, max_T, max_M, err, errlen) < 0)
        return -1;
    if (c->bert_names && bert_table(model_table(m), &alt) < 0) {
        model_free(m);
        return tr_fail(err, errlen, "out of memory");
    }
    /* Tensors the model does not have (a pooler without the SOP head,
     * the buffers transformers saves) are left unread. */
    rc = weights_load_buffer(c->bert_names ? &alt : model_table(m), ops,
                             model_params(m), "", c->weights, NULL, &se);
    if (c->bert_names)
        free(alt.t);
    if (rc < 0) {
        model_free(m);
        return tr_fail(err, errlen, "'%s/model.safetensors': %s", c->dir,
                       se.msg);
    }
    model_params_changed(m, 0, model_table(m)->total);
    if (ops->sync() < 0) {
        model_free(m);
        return tr_fail(err, errlen, "%s", ops->error());
    }
    *out = m;
    return 0;
}

/* ids[n..) += the ids of e, growing ids; -1 when out of memory. */
static int
append_ids(int32_t **ids, size_t *n, size_t *cap, const int32_t *add,
           size_t n_add)
{
    if (n_add == 0)
        return 0;
    if (*n + n_add > *cap) {
        size_t want = (*n + n_add) * 2 + 16;
        int32_t *p = realloc(*ids, want * sizeof(int32_t));

        if (p == NULL)
            return -1;
        *ids = p;
        *cap = want;
    }
    memcpy(*ids + *n, add, n_add * sizeof(int32_t));
    *n += n_add;
    return 0;
}

int
gen_encode(const struct gen_checkpoint *c, const char *text, size_t len,
           int32_t **ids, size_t *n_ids, char *err, size_t errlen)
{
    static const char eot[] = HF_TOKENIZER_EOS;
    struct tok_encoding e;
    struct tok_err te;
    size_t cap = 0;
    int rc = 0;

    *ids = NULL;
    *n_ids = 0;
    tok_encoding_init(&e);
    while (rc == 0) {
        /* "<|endoftext|>" is a special token of GPT2Tokenizer: its own
         * id wherever it stands; WordPiece matches its specials itself. */
        const char *at = c->bpe && c->endoftext >= 0
                             ? memmem(text, len, eot, sizeof(eot) - 1)
                             : NULL;
        size_t part = at ? (size_t)(at - text) : len;

        tok_encoding_clear(&e);
        if (part > 0 &&
            (c->bpe ? tok_bpe_encode(c->bpe, text, part, &e, &te)
                    : tok_encode(c->wordpiece, text, part, &e, &te)) < 0)
            rc = tr_fail(err, errlen, "%s", te.msg);
        else if (append_ids(ids, n_ids, &cap, e.ids, e.n) < 0 ||
                 (at && append_ids(ids, n_ids, &cap, &c->endoftext, 1) < 0))
            rc = tr_fail(err, errlen, "out of memory");
        if (at == NULL)
            break;
        len -= part + sizeof(eot) - 1;
        text = at + sizeof(eot) - 1;
    }
    tok_encoding_release(&e);
    if (rc < 0) {
        free(*ids);
        *ids = NULL;
        *n_ids = 0;
    }
    return rc;
}

int
gen_decode(const struct gen_checkpoint *c, const int32_t *ids, size_t n,
           int skip_special, struct tok_buf *out, char *err, size_t errlen)
{
    struct tok_err te;

    if (c->wordpiece != NULL) {
        if (tok_decode(c->wordpiece, ids, n, out, &te) < 0)
            return tr_fail(err, errlen, "%s", te.msg);
        return 0;
    }
    {
        struct tok_buf raw;
        int rc = 0;

        tok_buf_init(&raw);
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (skip_special &&
                (ids[i] == c->endoftext || ids[i] == c->cfg.eos_token_id))
                continue;
            /* An id past the tokenizer's vocabulary (a model's larger
             * one) has no text: left out, as HF tokenizers' decode(). */
            if (tok_bpe_token(c->bpe, ids[i], NULL) == NULL)
                continue;
            if (tok_bpe_decode(c->bpe, &ids[i], 1, &raw, &te) < 0)
                rc = tr_fail(err, errlen, "%s", te.msg);
        }
        if (rc == 0 && tok_utf8_sanitize(raw.data ? raw.data : "", raw.len,
                                         TOK_UTF8_REPLACE, out, NULL, &te) < 0)
            rc = tr_fail(err, errlen, "%s", te.msg);
        tok_buf_release(&raw);
        return rc;
    }
}
