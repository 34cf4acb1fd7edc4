/* SPDX-License-Identifier: MIT */
/*
 * paddle_export.c: a checkpoint in PaddleNLP's layout (paddle_export.h).
 * Each of PaddleNLP's parameters is one of the checkpoint's tensors as it
 * is, transposed (a torch nn.Linear weight [out, in] into Paddle's [in,
 * out]) or a slice of its columns (GPT-2's fused c_attn into q_proj,
 * k_proj and v_proj), named as PaddleNLP's state_dict() names it and in
 * its order; the tied decoder of ERNIE's MLM head is written as PaddleNLP
 * writes it, under both names.  Every tensor of the checkpoint must find
 * its place but the tied copies and buffers transformers may add.
 */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "model/config.h"
#include "paddle_export.h"
#include "pdparams.h"
#include "safetensors.h"
#include "util/tr_util.h"

#define NAME_MAX_LEN 160

/* How a parameter comes from its tensor. */
enum how {
    AS_IS,     /* the same array */
    TRANSPOSE, /* [d0, d1] -> [d1, d0] */
    COLUMNS,   /* part `part` of `parts` equal slices of the last axis */
};

struct entry {
    char name[NAME_MAX_LEN];
    const struct st_tensor *src;
    float *own; /* the transformed copy, or NULL */
    struct pd_tensor out;
};

struct export
{
    struct st_file *f;
    char path[4096]; /* model.safetensors, for messages */
    struct entry *e;
    size_t n, cap;
    struct model_config c;
    char *err;
    size_t errlen;
};

/* ------------------------------------------------------------ tensors */

/* Append parameter `to` made from the tensor `from` (HF's layout, of
 * shape [d0] or [d0, d1]; d1 0 for one dimension): -1 with the error set
 * if it is missing (unless optional: 0, nothing added), of another dtype
 * or shape. */
static int
add(struct export *x, const char *to, const char *from, int64_t d0, int64_t d1,
    enum how how, int part, int parts, int optional)
{
    const struct st_tensor *t = st_find(x->f, from);
    int ndim = d1 > 0 ? 2 : 1;
    struct entry *e;

    if (t == NULL) {
        if (optional)
            return 0;
        return tr_fail(x->err, x->errlen, "'%s' has no tensor '%s'", x->path,
                       from);
    }
    if (t->dtype != ST_F32)
        return tr_fail(x->err, x->errlen,
                       "'%s': tensor '%s' is %s; only F32 is exported", x->path,
                       from, st_dtype_name(t->dtype));
    if (t->ndim != ndim || t->shape[0] != d0 ||
        (ndim == 2 && t->shape[1] != d1))
        return tr_fail(x->err, x->errlen,
                       "'%s': tensor '%s' is not of the shape [%lld%s%.0lld] "
                       "its config.json gives",
                       x->path, from, (long long)d0, ndim == 2 ? ", " : "",
                       (long long)(ndim == 2 ? d1 : 0));
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        struct entry *g = realloc(x->e, cap * sizeof(*g));

        if (g == NULL)
            return tr_fail(x->err, x->errlen, "out of memory");
        x->e = g;
        x->cap = cap;
    }
    e = &x->e[x->n];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", to);
    e->src = t;
    e->out.name = e->name;
    e->out.ndim = ndim;
    e->out.shape[0] = d0;
    e->out.shape[1] = d1;
    e->out.data = (const float *)t->data;
    if (how == TRANSPOSE) {
        const float *s = (const float *)t->data;

        e->own = malloc((size_t)(d0 * d1) * sizeof(float));
        if (e->own == NULL)
            return tr_fail(x->err, x->errlen, "out of memory");
        for (int64_t i = 0; i < d0; i++)
            for (int64_t j = 0; j < d1; j++)
                e->own[j * d0 + i] = s[i * d1 + j];
        e->out.shape[0] = d1;
        e->out.shape[1] = d0;
    } else if (how == COLUMNS) {
        const float *s = (const float *)t->data;
        int64_t rows = ndim == 2 ? d0 : 1, cols = ndim == 2 ? d1 : d0;
        int64_t w = cols / parts;

        e->own = malloc((size_t)(rows * w) * sizeof(float));
        if (e->own == NULL)
            return tr_fail(x->err, x->errlen, "out of memory");
        for (int64_t i = 0; i < rows; i++)
            memcpy(e->own + i * w, s + i * cols + part * w,
                   (size_t)w * sizeof(float));
        e->out.shape[ndim - 1] = w;
    }
    if (e->own != NULL)
        e->out.data = e->own;
    x->n++;
    return 0;
}

/* What transformers writes besides the parameters, and tied copies. */
static int
ignorable(const char *name)
{
    static const char *const whole[] = { "cls.predictions.decoder.weight",
                                         "cls.predictions.decoder.bias",
                                         "lm_head.weight" };
    static const char *const ends[] = { "position_ids", ".attn.bias",
                                        ".attn.masked_bias" };
    size_t n = strlen(name);

    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++)
        if (strcmp(name, whole[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
        size_t k = strlen(ends[i]);

        if (n >= k && strcmp(name + n - k, ends[i]) == 0)
            return 1;
    }
    return 0;
}

/* Every tensor of the file found its place. */
static int
all_used(struct export *x, const char *what)
{
    for (size_t i = 0; i < st_count(x->f); i++) {
        const struct st_tensor *t = st_at(x->f, i);
        int used = ignorable(t->name);

        for (size_t k = 0; k < x->n && !used; k++)
            used = x->e[k].src == t;
        if (!used)
            return tr_fail(x->err, x->errlen,
                           "'%s': tensor '%s' has no place in PaddleNLP's %s",
                           x->path, t->name, what);
    }
    return 0;
}

/* ------------------------------------------------------------- models */

/* ERNIE as PaddleNLP's ErnieForPretraining (ErnieForMaskedLM without the
 * pooler and SOP head), in the order of its state_dict(). */
static int
ernie_tensors(struct export *x, int *sop)
{
    const struct model_config *c = &x->c;
    int64_t C = c->hidden_size, I = c->intermediate_size, V = c->vocab_size;
    char to[NAME_MAX_LEN], from[NAME_MAX_LEN];
    static const char *const qkv[3][2] = { { "query", "q_proj" },
                                           { "key", "k_proj" },
                                           { "value", "v_proj" } };
    int rc = 0;

    *sop = st_find(x->f, "cls.seq_relationship.weight") != NULL;
    rc |= add(x, "ernie.embeddings.word_embeddings.weight",
              "ernie.embeddings.word_embeddings.weight", V, C, AS_IS, 0, 0, 0);
    rc |= add(x, "ernie.embeddings.position_embeddings.weight",
              "ernie.embeddings.position_embeddings.weight", c->max_position, C,
              AS_IS, 0, 0, 0);
    rc |= add(x, "ernie.embeddings.token_type_embeddings.weight",
              "ernie.embeddings.token_type_embeddings.weight",
              c->type_vocab_size, C, AS_IS, 0, 0, 0);
    if (c->use_task_id)
        rc |= add(x, "ernie.embeddings.task_type_embeddings.weight",
                  "ernie.embeddings.task_type_embeddings.weight",
                  c->task_type_vocab_size, C, AS_IS, 0, 0, 0);
    rc |= add(x, "ernie.embeddings.layer_norm.weight",
              "ernie.embeddings.LayerNorm.weight", C, 0, AS_IS, 0, 0, 0);
    rc |= add(x, "ernie.embeddings.layer_norm.bias",
              "ernie.embeddings.LayerNorm.bias", C, 0, AS_IS, 0, 0, 0);
    for (int l = 0; l < c->num_layers && rc == 0; l++) {
#define TO(s) (snprintf(to, sizeof(to), "ernie.encoder.layers.%d.%s", l, s), to)
#define FROM(s) \
    (snprintf(from, sizeof(from), "ernie.encoder.layer.%d.%s", l, s), from)
        for (int j = 0; j < 3; j++) {
            char a[64], b[64];

            snprintf(a, sizeof(a), "self_attn.%s.weight", qkv[j][1]);
            snprintf(b, sizeof(b), "attention.self.%s.weight", qkv[j][0]);
            rc |= add(x, TO(a), FROM(b), C, C, TRANSPOSE, 0, 0, 0);
            snprintf(a, sizeof(a), "self_attn.%s.bias", qkv[j][1]);
            snprintf(b, sizeof(b), "attention.self.%s.bias", qkv[j][0]);
            rc |= add(x, TO(a), FROM(b), C, 0, AS_IS, 0, 0, 0);
        }
        rc |= add(x, TO("self_attn.out_proj.weight"),
                  FROM("attention.output.dense.weight"), C, C, TRANSPOSE, 0, 0,
                  0);
        rc |= add(x, TO("self_attn.out_proj.bias"),
                  FROM("attention.output.dense.bias"), C, 0, AS_IS, 0, 0, 0);
        rc |= add(x, TO("linear1.weight"), FROM("intermediate.dense.weight"), I,
                  C, TRANSPOSE, 0, 0, 0);
        rc |= add(x, TO("linear1.bias"), FROM("intermediate.dense.bias"), I, 0,
                  AS_IS, 0, 0, 0);
        rc |= add(x, TO("linear2.weight"), FROM("output.dense.weight"), C, I,
                  TRANSPOSE, 0, 0, 0);
        rc |= add(x, TO("linear2.bias"), FROM("output.dense.bias"), C, 0, AS_IS,
                  0, 0, 0);
        rc |= add(x, TO("norm1.weight"),
                  FROM("attention.output.LayerNorm.weight"), C, 0, AS_IS, 0, 0,
                  0);
        rc |= add(x, TO("norm1.bias"), FROM("attention.output.LayerNorm.bias"),
                  C, 0, AS_IS, 0, 0, 0);
        rc |= add(x, TO("norm2.weight"), FROM("output.LayerNorm.weight"), C, 0,
                  AS_IS, 0, 0, 0);
        rc |= add(x, TO("norm2.bias"), FROM("output.LayerNorm.bias"), C, 0,
                  AS_IS, 0, 0, 0);
#undef TO
#undef FROM
    }
    if (*sop) {
        rc |= add(x, "ernie.pooler.dense.weight", "ernie.pooler.dense.weight",
                  C, C, TRANSPOSE, 0, 0, 0);
        rc |= add(x, "ernie.pooler.dense.bias", "ernie.pooler.dense.bias", C, 0,
                  AS_IS, 0, 0, 0);
    }
    /* The MLM head: its decoder is the word embeddings (PaddleNLP's
     * TransposedLinear keeps them [V, C]) and its bias is decoder_bias,
     * each written under both its names, as PaddleNLP writes them. */
    rc |= add(x, "cls.predictions.decoder_bias", "cls.predictions.bias", V, 0,
              AS_IS, 0, 0, 0);
    rc |=
        add(x, "cls.predictions.transform.weight",
            "cls.predictions.transform.dense.weight", C, C, TRANSPOSE, 0, 0, 0);
    rc |= add(x, "cls.predictions.transform.bias",
              "cls.predictions.transform.dense.bias", C, 0, AS_IS, 0, 0, 0);
    rc |=
        add(x, "cls.predictions.layer_norm.weight",
            "cls.predictions.transform.LayerNorm.weight", C, 0, AS_IS, 0, 0, 0);
    rc |= add(x, "cls.predictions.layer_norm.bias",
              "cls.predictions.transform.LayerNorm.bias", C, 0, AS_IS, 0, 0, 0);
    rc |= add(x, "cls.predictions.decoder.weight",
              "ernie.embeddings.word_embeddings.weight", V, C, AS_IS, 0, 0, 0);
    rc |= add(x, "cls.predictions.decoder.bias", "cls.predictions.bias", V, 0,
              AS_IS, 0, 0, 0);
    if (*sop) {
        rc |= add(x, "cls.seq_relationship.weight",
                  "cls.seq_relationship.weight", 2, C, TRANSPOSE, 0, 0, 0);
        rc |= add(x, "cls.seq_relationship.bias", "cls.seq_relationship.bias",
                  2, 0, AS_IS, 0, 0, 0);
    }
    if (rc)
        return -1;
    return all_used(x, *sop ? "ErnieForPretraining" : "ErnieForMaskedLM");
}

/* GPT-2 as PaddleNLP's GPTForCausalLM (its lm_head is the word
 * embeddings).  GPT-2's Conv1D weights are [in, out] already, Paddle's
 * layout. */
static int
gpt_tensors(struct export *x)
{
    const struct model_config *c = &x->c;
    int64_t C = c->hidden_size, V = c->vocab_size;
    int64_t I = c->intermediate_size ? c->intermediate_size : 4 * C;
    char to[NAME_MAX_LEN], from[NAME_MAX_LEN];
    int rc = 0;

    rc |= add(x, "gpt.embeddings.word_embeddings.weight",
              "transformer.wte.weight", V, C, AS_IS, 0, 0, 0);
    rc |= add(x, "gpt.embeddings.position_embeddings.weight",
              "transformer.wpe.weight", c->max_position, C, AS_IS, 0, 0, 0);
    for (int l = 0; l < c->num_layers && rc == 0; l++) {
#define TO(s) (snprintf(to, sizeof(to), "gpt.decoder.layers.%d.%s", l, s), to)
#define FROM(s) \
    (snprintf(from, sizeof(from), "transformer.h.%d.%s", l, s), from)
        static const char *const qkv[3] = { "q_proj", "k_proj", "v_proj" };

        for (int j = 0; j < 3; j++) {
            char a[64];

            snprintf(a, sizeof(a), "self_attn.%s.weight", qkv[j]);
            rc |= add(x, TO(a), FROM("attn.c_attn.weight"), C, 3 * C, COLUMNS,
                      j, 3, 0);
            snprintf(a, sizeof(a), "self_attn.%s.bias", qkv[j]);
            rc |= add(x, TO(a), FROM("attn.c_attn.bias"), 3 * C, 0, COLUMNS, j,
                      3, 0);
        }
        rc |= add(x, TO("self_attn.out_proj.weight"),
                  FROM("attn.c_proj.weight"), C, C, AS_IS, 0, 0, 0);
        rc |= add(x, TO("self_attn.out_proj.bias"), FROM("attn.c_proj.bias"), C,
                  0, AS_IS, 0, 0, 0);
        rc |= add(x, TO("linear1.weight"), FROM("mlp.c_fc.weight"), C, I, AS_IS,
                  0, 0, 0);
        rc |= add(x, TO("linear1.bias"), FROM("mlp.c_fc.bias"), I, 0, AS_IS, 0,
                  0, 0);
        rc |= add(x, TO("linear2.weight"), FROM("mlp.c_proj.weight"), I, C,
                  AS_IS, 0, 0, 0);
        rc |= add(x, TO("linear2.bias"), FROM("mlp.c_proj.bias"), C, 0, AS_IS,
                  0, 0, 0);
        rc |= add(x, TO("norm1.weight"), FROM("ln_1.weight"), C, 0, AS_IS, 0, 0,
                  0);
        rc |= add(x, TO("norm1.bias"), FROM("ln_1.bias"), C, 0, AS_IS, 0, 0, 0);
        rc |= add(x, TO("norm2.weight"), FROM("ln_2.weight"), C, 0, AS_IS, 0, 0,
                  0);
        rc |= add(x, TO("norm2.bias"), FROM("ln_2.bias"), C, 0, AS_IS, 0, 0, 0);
#undef TO
#undef FROM
    }
    rc |= add(x, "gpt.decoder.norm.weight", "transformer.ln_f.weight", C, 0,
              AS_IS, 0, 0, 0);
    rc |= add(x, "gpt.decoder.norm.bias", "transformer.ln_f.bias", C, 0, AS_IS,
              0, 0, 0);
    /* The tied head, under its own name too, as PaddleNLP writes it. */
    rc |= add(x, "lm_head.weight", "transformer.wte.weight", V, C, AS_IS, 0, 0,
              0);
    if (rc)
        return -1;
    return all_used(x, "GPTForCausalLM");
}

/* ------------------------------------------------------------- configs */

/* An fp32 setting, in the shortest form that reads back the same. */
static void
put_num(struct json_object *o, const char *key, float v)
{
    char buf[32];

    config_format_float(buf, v);
    json_object_object_add(o, key, json_object_new_double_s(v, buf));
}

static void
put_int(struct json_object *o, const char *key, int v)
{
    json_object_object_add(o, key, json_object_new_int(v));
}

static void
put_str(struct json_object *o, const char *key, const char *v)
{
    json_object_object_add(o, key, v ? json_object_new_string(v) : NULL);
}

/* config.json as PaddleNLP's ErnieConfig or GPTConfig reads it (its keys,
 * sorted as its save_pretrained() sorts them); a malloc'd string. */
static char *
paddle_config(const struct model_config *c, const char *arch)
{
    struct json_object *o = json_object_new_object(), *a;
    const char *act = c->hidden_act == OPS_ACT_RELU ? "relu" : "gelu";
    char *s;

    a = json_object_new_array();
    json_object_array_add(a, json_object_new_string(arch));
    json_object_object_add(o, "architectures", a);
    put_num(o, "attention_probs_dropout_prob", c->attention_dropout);
    if (c->type == MODEL_GPT) {
        if (c->bos_token_id >= 0)
            put_int(o, "bos_token_id", c->bos_token_id);
        if (c->eos_token_id >= 0)
            put_int(o, "eos_token_id", c->eos_token_id);
    } else {
        json_object_object_add(o, "fuse", json_object_new_boolean(0));
    }
    put_str(o, "hidden_act", act);
    if (c->type == MODEL_GPT) /* (what PaddleNLP's GPT layers read) */
        put_str(o, "hidden_activation", act);
    put_num(o, "hidden_dropout_prob", c->hidden_dropout);
    put_int(o, "hidden_size", c->hidden_size);
    put_num(o, "initializer_range", c->initializer_range);
    put_int(o, "intermediate_size",
            c->intermediate_size ? c->intermediate_size : 4 * c->hidden_size);
    if (c->type == MODEL_ERNIE)
        put_num(o, "layer_norm_eps", c->layer_norm_eps);
    put_int(o, "max_position_embeddings", c->max_position);
    put_str(o, "model_type", c->type == MODEL_GPT ? "gpt" : "ernie");
    put_int(o, "num_attention_heads", c->num_heads);
    put_int(o, "num_hidden_layers", c->num_layers);
    if (c->type == MODEL_ERNIE) {
        put_int(o, "pad_token_id", c->pad_token_id);
        put_str(o, "pool_act", "tanh");
        put_int(o, "task_id", c->task_id);
        put_int(o, "task_type_vocab_size", c->task_type_vocab_size);
        put_int(o, "type_vocab_size", c->type_vocab_size);
        json_object_object_add(o, "use_task_id",
                               json_object_new_boolean(c->use_task_id));
    } else {
        json_object_object_add(o, "tie_word_embeddings",
                               json_object_new_boolean(1));
    }
    put_int(o, "vocab_size", c->vocab_size);
    s = strdup(json_object_to_json_string_ext(
        o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
               JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return s;
}

/* ---------------------------------------------------------- tokenizer */

/* A special token of the checkpoint's tokenizer_config.json (a string
 * value of key), or dflt. */
static const char *
special(struct json_object *tc, const char *key, const char *dflt)
{
    struct json_object *v;

    if (tc != NULL && json_object_object_get_ex(tc, key, &v))
        return json_object_is_type(v, json_type_string)
                   ? json_object_get_string(v)
                   : NULL;
    return dflt;
}

/* The tokenizer's files: src's vocabulary copied, with PaddleNLP's
 * tokenizer_config.json (ErnieTokenizer, GPTTokenizer) and
 * special_tokens_map.json; n_files 0 when src has no vocabulary. */
struct tok_files {
    struct ckpt_file f[4];
    size_t n;
    char *owned[4];
};

static int
tokenizer_files(const char *src, const struct model_config *c,
                struct tok_files *t, char *err, size_t errlen)
{
    struct json_object *tc = NULL, *cfg = json_object_new_object();
    struct json_object *map = json_object_new_object();
    char *tc_path = tr_file_in_dir(src, "tokenizer_config.json");
    const char *keys[5], *toks[5];
    size_t n_keys = 0;
    int rc = 0;

    memset(t, 0, sizeof(*t));
    if (tc_path != NULL) {
        struct config_err ce;

        tc = config_json_object(tc_path, &ce);
        free(tc_path);
        if (tc == NULL) {
            rc = tr_fail(err, errlen, "%s", ce.msg);
            goto out;
        }
    }
    if (c->type == MODEL_ERNIE) {
        struct json_object *v;
        int lower = 1;

        if ((t->owned[0] = tr_file_in_dir(src, "vocab.txt")) == NULL)
            goto out;
        t->f[t->n++] = (struct ckpt_file){ "vocab.txt", t->owned[0], NULL };
        if (tc != NULL && json_object_object_get_ex(tc, "do_lower_case", &v))
            lower = json_object_get_boolean(v);
        json_object_object_add(cfg, "do_lower_case",
                               json_object_new_boolean(lower));
        keys[0] = "unk_token", toks[0] = special(tc, "unk_token", "[UNK]");
        keys[1] = "sep_token", toks[1] = special(tc, "sep_token", "[SEP]");
        keys[2] = "pad_token", toks[2] = special(tc, "pad_token", "[PAD]");
        keys[3] = "cls_token", toks[3] = special(tc, "cls_token", "[CLS]");
        keys[4] = "mask_token", toks[4] = special(tc, "mask_token", "[MASK]");
        n_keys = 5;
    } else {
        if ((t->owned[0] = tr_file_in_dir(src, "vocab.json")) == NULL ||
            (t->owned[1] = tr_file_in_dir(src, "merges.txt")) == NULL)
            goto out;
        t->f[t->n++] = (struct ckpt_file){ "vocab.json", t->owned[0], NULL };
        t->f[t->n++] = (struct ckpt_file){ "merges.txt", t->owned[1], NULL };
        keys[0] = "bos_token", toks[0] = special(tc, "bos_token", NULL);
        keys[1] = "eos_token", toks[1] = special(tc, "eos_token", NULL);
        keys[2] = "unk_token", toks[2] = special(tc, "unk_token", NULL);
        keys[3] = "pad_token", toks[3] = special(tc, "eos_token", NULL);
        n_keys = 4;
    }
    for (size_t i = 0; i < n_keys; i++)
        if (toks[i] != NULL) {
            put_str(cfg, keys[i], toks[i]);
            put_str(map, keys[i], toks[i]);
        }
    put_str(cfg, "tokenizer_class",
            c->type == MODEL_ERNIE ? "ErnieTokenizer" : "GPTTokenizer");
    if (c->type == MODEL_GPT)
        put_int(cfg, "model_max_length", c->max_position);
    if (asprintf(&t->owned[2], "%s\n",
                 json_object_to_json_string_ext(
                     cfg, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                              JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
        t->owned[2] = NULL;
    if (asprintf(&t->owned[3], "%s\n",
                 json_object_to_json_string_ext(
                     map, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                              JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
        t->owned[3] = NULL;
    if (t->owned[2] == NULL || t->owned[3] == NULL) {
        rc = tr_fail(err, errlen, "out of memory");
        goto out;
    }
    t->f[t->n++] =
        (struct ckpt_file){ "tokenizer_config.json", NULL, t->owned[2] };
    t->f[t->n++] =
        (struct ckpt_file){ "special_tokens_map.json", NULL, t->owned[3] };
out:
    json_object_put(tc);
    json_object_put(cfg);
    json_object_put(map);
    return rc;
}

/* ------------------------------------------------------------- export */

struct fill_ctx {
    struct export *x;
    const char *config;
};

static int
fill(const char *tmp, void *ctx, char *err, size_t errlen)
{
    const struct fill_ctx *f = ctx;
    struct pd_tensor *t = malloc(f->x->n * sizeof(*t));
    char path[4096];
    FILE *out;
    int rc;

    if (t == NULL)
        return tr_fail(err, errlen, "out of memory");
    for (size_t i = 0; i < f->x->n; i++)
        t[i] = f->x->e[i].out;
    snprintf(path, sizeof(path), "%s/model_state.pdparams", tmp);
    rc = pdparams_write(path, t, f->x->n, err, errlen);
    free(t);
    if (rc < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/config.json", tmp);
    out = fopen(path, "wx");
    if (out == NULL)
        return tr_fail(err, errlen, "cannot create '%s': %s", path,
                       strerror(errno));
    if (fputs(f->config, out) == EOF || fputc('\n', out) == EOF ||
        fflush(out) != 0 || fsync(fileno(out)) != 0) {
        int e = errno;

        fclose(out);
        return tr_fail(err, errlen, "cannot write '%s': %s", path, strerror(e));
    }
    if (fclose(out) != 0)
        return tr_fail(err, errlen, "cannot write '%s': %s", path,
                       strerror(errno));
    return 0;
}

/* The model type of src's config.json ("model_type"), else of its
 * tensors' names. */
static int
model_type_of(const char *config, const struct st_file *f,
              enum model_type *type, char *err, size_t errlen)
{
    struct config_err ce;
    struct json_object *o = config_json_object(config, &ce), *v;
    const char *mt = NULL;

    if (o == NULL)
        return tr_fail(err, errlen, "%s", ce.msg);
    if (json_object_object_get_ex(o, "model_type", &v) &&
        json_object_is_type(v, json_type_string))
        mt = json_object_get_string(v);
    *type = mt ? strcmp(mt, "gpt2") == 0
               : st_find(f, "transformer.wte.weight") != NULL;
    json_object_put(o);
    return 0;
}

/* Whether dir has no entry but . and .. (1), has some (0), or cannot be
 * read (-1). */
static int
empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int empty = 1;

    if (d == NULL)
        return -1;
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

/* dst may be written: missing, empty, or (replace) an earlier export. */
static int
dst_free(const char *dst, int replace, char *err, size_t errlen)
{
    struct stat st;
    char *p;
    int empty, earlier;

    if (stat(dst, &st) != 0)
        return errno == ENOENT ? 0
                               : tr_fail(err, errlen, "cannot stat '%s': %s",
                                         dst, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tr_fail(err, errlen, "'%s' exists and is not a directory", dst);
    if ((empty = empty_dir(dst)) < 0)
        return tr_fail(err, errlen, "cannot read '%s': %s", dst,
                       strerror(errno));
    if (empty)
        return 0;
    p = tr_file_in_dir(dst, "model_state.pdparams");
    earlier = p != NULL;
    free(p);
    if (replace && earlier)
        return 0;
    return tr_fail(err, errlen,
                   "'%s' exists and is not empty%s; give a new directory", dst,
                   earlier ? " (an earlier export: -f replaces it)" : "");
}

int
paddle_export(const char *src, const char *dst, int replace,
              struct paddle_export_info *info, char *err, size_t errlen)
{
    struct export x;
    struct fill_ctx fc;
    struct tok_files tf;
    struct config_err ce;
    enum model_type type = MODEL_ERNIE;
    char config[4096];
    int sop = 0, rc = -1;

    memset(&x, 0, sizeof(x));
    memset(&tf, 0, sizeof(tf));
    memset(info, 0, sizeof(*info));
    x.err = err;
    x.errlen = errlen;
    snprintf(config, sizeof(config), "%s/config.json", src);
    snprintf(x.path, sizeof(x.path), "%s/model.safetensors", src);
    fc.config = NULL;
    {
        struct st_err se;

        if (st_open(&x.f, x.path, &se) < 0)
            return tr_fail(err, errlen, "%s", se.msg);
    }
    if (model_type_of(config, x.f, &type, err, errlen) < 0)
        goto out;
    config_defaults(&x.c, type);
    if (config_read_json(&x.c, config, &ce) < 0 ||
        config_check(&x.c, &ce) < 0) {
        tr_fail(err, errlen, "%s", ce.msg);
        goto out;
    }
    if (x.c.hidden_act == OPS_ACT_GELU_TANH) {
        tr_fail(err, errlen,
                "'%s': the activation is the tanh GELU (gelu_new), which "
                "PaddleNLP's %s does not compute (its gelu is the exact "
                "one): the model would not give its outputs there",
                config, type == MODEL_GPT ? "GPT" : "ERNIE");
        goto out;
    }
    if (type == MODEL_ERNIE && x.c.layer_norm_eps != 1e-12f)
        snprintf(info->note, sizeof(info->note),
                 "PaddleNLP's ERNIE computes its LayerNorms with epsilon "
                 "1e-12, not this model's %g: its outputs differ a little",
                 (double)x.c.layer_norm_eps);
    if (type == MODEL_GPT && x.c.layer_norm_eps != 1e-5f)
        snprintf(info->note, sizeof(info->note),
                 "PaddleNLP's GPT computes its LayerNorms with epsilon 1e-5, "
                 "not this model's %g: its outputs differ a little",
                 (double)x.c.layer_norm_eps);
    if ((type == MODEL_GPT ? gpt_tensors(&x) : ernie_tensors(&x, &sop)) < 0)
        goto out;
    info->architecture = type == MODEL_GPT ? "GPTForCausalLM"
                         : sop             ? "ErnieForPretraining"
                                           : "ErnieForMaskedLM";
    info->n_tensors = x.n;
    if ((fc.config = paddle_config(&x.c, info->architecture)) == NULL) {
        tr_fail(err, errlen, "out of memory");
        goto out;
    }
    if (tokenizer_files(src, &x.c, &tf, err, errlen) < 0 ||
        dst_free(dst, replace, err, errlen) < 0)
        goto out;
    info->has_tokenizer = tf.n > 0;
    fc.x = &x;
    rc = ckpt_write_dir(dst, fill, &fc, tf.f, tf.n, 0, err, errlen);
out:
    for (size_t i = 0; i < x.n; i++)
        free(x.e[i].own);
    free(x.e);
    for (size_t i = 0; i < 4; i++)
        free(tf.owned[i]);
    free((char *)fc.config);
    st_close(x.f);
    return rc;
}
