/* SPDX-License-Identifier: MIT */
/*
 * config.c: model configurations: the defaults of transformers'
 * ErnieConfig and GPT2Config, reading a config.json (PaddleNLP's ERNIE
 * keys, Hugging Face's BERT/ERNIE and GPT-2 keys, read with json-c), the
 * consistency checks, and writing a config.json that transformers loads.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "banned.h"
#include "config.h"

/* A config.json larger than this is not a config. */
#define MAX_CONFIG_BYTES (16 << 20)

static int fail(struct config_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(struct config_err *err, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL) {
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return -1;
}

void
config_defaults(struct model_config *c, enum model_type type)
{
    memset(c, 0, sizeof(*c));
    c->type = type;
    c->hidden_size = 768;
    c->num_layers = 12;
    c->num_heads = 12;
    c->hidden_dropout = 0.1f;
    c->attention_dropout = 0.1f;
    c->embedding_dropout = 0.1f;
    c->initializer_range = 0.02f;
    c->bos_token_id = c->eos_token_id = -1; /* (GPT2Config: 50256) */
    if (type == MODEL_GPT) {
        /* GPT2Config: n_inner None (4 * n_embd), "gelu_new". */
        c->vocab_size = 50257;
        c->intermediate_size = 4 * 768;
        c->max_position = 1024;
        c->hidden_act = OPS_ACT_GELU_TANH;
        c->layer_norm_eps = 1e-5f;
        c->pad_token_id = -1; /* none: no padding_idx */
        return;
    }
    /* ErnieConfig, with PaddleNLP's use_task_id. */
    c->vocab_size = 30522;
    c->intermediate_size = 3072;
    c->max_position = 512;
    c->hidden_act = OPS_ACT_GELU;
    c->layer_norm_eps = 1e-12f;
    c->type_vocab_size = 2;
    c->task_type_vocab_size = 3;
    c->use_task_id = 1;
    c->task_id = 0;
    c->pad_token_id = 0;
    c->binary_head = 1;
}

/* ------------------------------------------------------------ reading */

enum kind { K_INT, K_FLOAT, K_ACT, K_BOOL };

/* The fields a config.json sets, each under one or more keys. */
enum field {
    F_VOCAB,
    F_HIDDEN,
    F_LAYERS,
    F_HEADS,
    F_INTER,
    F_MAXPOS,
    F_ACT,
    F_HDROP,
    F_ADROP,
    F_EDROP,
    F_INIT,
    F_EPS,
    F_TYPES,
    F_TASKS,
    F_USETASK,
    F_TASKID,
    F_PAD,
    F_BOS,
    F_EOS,
    N_FIELDS
};

static const struct {
    enum kind kind;
    double min, max; /* ints: inclusive; floats: see float_ok() */
} fields[N_FIELDS] = {
    [F_VOCAB] = { K_INT, 1, INT_MAX },   [F_HIDDEN] = { K_INT, 1, INT_MAX },
    [F_LAYERS] = { K_INT, 1, INT_MAX },  [F_HEADS] = { K_INT, 1, INT_MAX },
    [F_INTER] = { K_INT, 0, INT_MAX },   [F_MAXPOS] = { K_INT, 1, INT_MAX },
    [F_ACT] = { K_ACT, 0, 0 },           [F_HDROP] = { K_FLOAT, 0, 1 },
    [F_ADROP] = { K_FLOAT, 0, 1 },       [F_EDROP] = { K_FLOAT, 0, 1 },
    [F_INIT] = { K_FLOAT, 0, INFINITY }, [F_EPS] = { K_FLOAT, 0, 1 },
    [F_TYPES] = { K_INT, 1, INT_MAX },   [F_TASKS] = { K_INT, 0, INT_MAX },
    [F_USETASK] = { K_BOOL, 0, 1 },      [F_TASKID] = { K_INT, 0, INT_MAX },
    [F_PAD] = { K_INT, 0, INT_MAX },     [F_BOS] = { K_INT, 0, INT_MAX },
    [F_EOS] = { K_INT, 0, INT_MAX },
};

/* Every key read, in the order checked; later aliases of a field must
 * agree with earlier ones. */
static const struct {
    const char *key;
    enum field field;
} keys[] = {
    { "vocab_size", F_VOCAB },
    { "hidden_size", F_HIDDEN },
    { "n_embd", F_HIDDEN },
    { "num_hidden_layers", F_LAYERS },
    { "n_layer", F_LAYERS },
    { "num_attention_heads", F_HEADS },
    { "n_head", F_HEADS },
    { "intermediate_size", F_INTER },
    { "n_inner", F_INTER },
    { "max_position_embeddings", F_MAXPOS },
    { "n_positions", F_MAXPOS },
    { "hidden_act", F_ACT },
    { "activation_function", F_ACT },
    { "hidden_dropout_prob", F_HDROP },
    { "resid_pdrop", F_HDROP },
    { "attention_probs_dropout_prob", F_ADROP },
    { "attn_pdrop", F_ADROP },
    { "embd_pdrop", F_EDROP },
    { "initializer_range", F_INIT },
    { "layer_norm_eps", F_EPS },
    { "layer_norm_epsilon", F_EPS },
    { "type_vocab_size", F_TYPES },
    { "sent_type_vocab_size", F_TYPES },
    { "task_type_vocab_size", F_TASKS },
    { "use_task_id", F_USETASK },
    { "task_id", F_TASKID },
    { "pad_token_id", F_PAD },
    { "bos_token_id", F_BOS },
    { "eos_token_id", F_EOS },
};

static const struct {
    const char *name;
    enum ops_act act;
} acts[] = {
    { "gelu", OPS_ACT_GELU },
    { "relu", OPS_ACT_RELU },
    { "gelu_new", OPS_ACT_GELU_TANH },
    { "gelu_pytorch_tanh", OPS_ACT_GELU_TANH },
};

/* One value read: ints, bools and activations in i, floats in f. */
struct value {
    bool set;
    const char *key;
    long long i;
    float f;
};

static bool
float_ok(enum field fd, double v)
{
    if (!isfinite(v))
        return false;
    if (fd == F_INIT)
        return v >= 0;
    if (fd == F_EPS)
        return v > 0 && v < 1;
    return v >= 0 && v < 1; /* dropout */
}

static const char *
float_range(enum field fd)
{
    return fd == F_INIT  ? "at least 0"
           : fd == F_EPS ? "in (0, 1)"
                         : "in [0, 1)";
}

/* Read the value of key (field fd) from o into v.  A JSON null leaves v
 * unset where the formats use it (GPT-2's n_inner: 4 * hidden, and
 * pad_token_id, bos_token_id, eos_token_id: none given); elsewhere it is
 * an error. */
static int
read_value(const char *path, const char *key, enum field fd,
           struct json_object *o, struct value *v, struct config_err *err)
{
    enum json_type t = json_object_get_type(o);
    double d;

    v->key = key;
    if (t == json_type_null) {
        if (fd == F_INTER) {
            v->set = true;
            v->i = 0;
            return 0;
        }
        if (fd == F_PAD || fd == F_BOS || fd == F_EOS)
            return 0;
        return fail(err, "'%s': '%s' is null", path, key);
    }
    switch (fields[fd].kind) {
    case K_ACT:
        if (t != json_type_string)
            return fail(err, "'%s': '%s' must be a string, not %s", path, key,
                        json_type_to_name(t));
        for (size_t k = 0; k < sizeof(acts) / sizeof(acts[0]); k++)
            if (strcmp(json_object_get_string(o), acts[k].name) == 0) {
                v->set = true;
                v->i = acts[k].act;
                return 0;
            }
        return fail(err,
                    "'%s': '%s' is '%.100s', an unknown activation (gelu, "
                    "relu, gelu_new, gelu_pytorch_tanh)",
                    path, key, json_object_get_string(o));
    case K_BOOL:
        if (t == json_type_boolean) {
            v->set = true;
            v->i = json_object_get_boolean(o) ? 1 : 0;
            return 0;
        }
        /* 0 and 1 are accepted too */
        /* fall through */
    case K_INT:
        if (t == json_type_int) {
            /* json-c saturates past int64; the range check catches it. */
            v->i = json_object_get_int64(o);
        } else if (t == json_type_double) {
            d = json_object_get_double(o);
            if (!isfinite(d) || d != floor(d))
                return fail(err, "'%s': '%s' is %g, not an integer", path, key,
                            d);
            if (d < fields[fd].min || d > fields[fd].max)
                return fail(err, "'%s': '%s' is %g, out of range [%.0f, %.0f]",
                            path, key, d, fields[fd].min, fields[fd].max);
            v->i = (long long)d;
        } else {
            return fail(err, "'%s': '%s' must be an integer, not %s", path, key,
                        json_type_to_name(t));
        }
        if (v->i < (long long)fields[fd].min ||
            v->i > (long long)fields[fd].max)
            return fail(err, "'%s': '%s' is %lld, out of range [%.0f, %.0f]",
                        path, key, v->i, fields[fd].min, fields[fd].max);
        v->set = true;
        return 0;
    case K_FLOAT:
        if (t != json_type_double && t != json_type_int)
            return fail(err, "'%s': '%s' must be a number, not %s", path, key,
                        json_type_to_name(t));
        d = json_object_get_double(o);
        if (!float_ok(fd, d) || !float_ok(fd, (float)d))
            return fail(err, "'%s': '%s' is %g, must be %s", path, key, d,
                        float_range(fd));
        v->set = true;
        v->f = (float)d;
        return 0;
    }
    return 0;
}

/* The whole file into a NUL-terminated buffer (caller frees). */
static char *
slurp(const char *path, size_t *len, struct config_err *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;

    if (f == NULL) {
        fail(err, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        size_t got;

        if (cap - n < 4096) {
            char *b;

            cap = cap ? 2 * cap : 8192;
            if (cap > MAX_CONFIG_BYTES + (size_t)8192) {
                fail(err, "'%s': larger than %d bytes: not a config.json", path,
                     MAX_CONFIG_BYTES);
                goto fail;
            }
            b = (char *)realloc(buf, cap);
            if (b == NULL) {
                fail(err, "'%s': out of memory", path);
                goto fail;
            }
            buf = b;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        fail(err, "cannot read '%s': %s", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

/* Parse text as one JSON object, nothing but white space after it. */
static struct json_object *
parse_object(const char *path, const char *text, size_t len,
             struct config_err *err)
{
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o;
    enum json_tokener_error je;
    size_t end;

    if (tok == NULL) {
        fail(err, "'%s': out of memory", path);
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                    JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, text, (int)len);
    je = json_tokener_get_error(tok);
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (o == NULL || je != json_tokener_success) {
        json_object_put(o);
        fail(err, "'%s': not valid JSON at byte %zu: %s", path, end,
             je == json_tokener_continue  ? "unexpected end of file"
             : je == json_tokener_success ? "null, not an object"
                                          : json_tokener_error_desc(je));
        return NULL;
    }
    while (end < len && (text[end] == ' ' || text[end] == '\t' ||
                         text[end] == '\n' || text[end] == '\r'))
        end++;
    if (end < len) {
        json_object_put(o);
        fail(err, "'%s': not valid JSON at byte %zu: text after the object",
             path, end);
        return NULL;
    }
    if (!json_object_is_type(o, json_type_object)) {
        fail(err, "'%s': the JSON is %s, not an object", path,
             json_type_to_name(json_object_get_type(o)));
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* "model_type", if present, names a model of c's type. */
static int
check_model_type(const char *path, struct json_object *root,
                 const struct model_config *c, struct config_err *err)
{
    struct json_object *o;
    const char *s;

    if (!json_object_object_get_ex(root, "model_type", &o) ||
        json_object_is_type(o, json_type_null))
        return 0;
    if (!json_object_is_type(o, json_type_string))
        return fail(err, "'%s': 'model_type' must be a string, not %s", path,
                    json_type_to_name(json_object_get_type(o)));
    s = json_object_get_string(o);
    if (c->type == MODEL_GPT
            ? strcmp(s, "gpt2") == 0
            : strcmp(s, "ernie") == 0 || strcmp(s, "bert") == 0)
        return 0;
    return fail(err,
                "'%s': 'model_type' is '%.100s', not %s model (%s): is "
                "the model type right?",
                path, s, c->type == MODEL_GPT ? "a GPT" : "an ERNIE",
                c->type == MODEL_GPT ? "gpt2" : "ernie, bert");
}

struct json_object *
config_json_object(const char *path, struct config_err *err)
{
    struct json_object *root;
    size_t len;
    char *text;

    text = slurp(path, &len, err);
    if (text == NULL)
        return NULL;
    root = parse_object(path, text, len, err);
    free(text);
    return root;
}

int
config_read_json(struct model_config *c, const char *path,
                 struct config_err *err)
{
    struct value v[N_FIELDS];
    struct model_config n = *c; /* c is changed only on success */
    struct json_object *root;
    int rc = -1;

    root = config_json_object(path, err);
    if (root == NULL)
        return -1;
    if (check_model_type(path, root, c, err) < 0)
        goto out;
    memset(v, 0, sizeof(v));
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        struct json_object *o;
        struct value w;
        enum field fd = keys[k].field;

        if (!json_object_object_get_ex(root, keys[k].key, &o))
            continue;
        memset(&w, 0, sizeof(w));
        if (read_value(path, keys[k].key, fd, o, &w, err) < 0)
            goto out;
        if (!w.set)
            continue;
        if (v[fd].set && (v[fd].i != w.i || v[fd].f != w.f)) {
            fail(err, "'%s': '%s' and '%s' disagree", path, v[fd].key, w.key);
            goto out;
        }
        v[fd] = w;
    }

#define INT_FIELD(fd, member)        \
    do {                             \
        if (v[fd].set)               \
            n.member = (int)v[fd].i; \
    } while (0)
#define FLOAT_FIELD(fd, member) \
    do {                        \
        if (v[fd].set)          \
            n.member = v[fd].f; \
    } while (0)
    INT_FIELD(F_VOCAB, vocab_size);
    INT_FIELD(F_HIDDEN, hidden_size);
    INT_FIELD(F_LAYERS, num_layers);
    INT_FIELD(F_HEADS, num_heads);
    INT_FIELD(F_INTER, intermediate_size);
    INT_FIELD(F_MAXPOS, max_position);
    if (v[F_ACT].set)
        n.hidden_act = (enum ops_act)v[F_ACT].i;
    FLOAT_FIELD(F_HDROP, hidden_dropout);
    FLOAT_FIELD(F_ADROP, attention_dropout);
    FLOAT_FIELD(F_EDROP, embedding_dropout);
    FLOAT_FIELD(F_INIT, initializer_range);
    FLOAT_FIELD(F_EPS, layer_norm_eps);
    INT_FIELD(F_TYPES, type_vocab_size);
    INT_FIELD(F_TASKS, task_type_vocab_size);
    INT_FIELD(F_USETASK, use_task_id);
    INT_FIELD(F_TASKID, task_id);
    INT_FIELD(F_PAD, pad_token_id);
    INT_FIELD(F_BOS, bos_token_id);
    INT_FIELD(F_EOS, eos_token_id);
#undef INT_FIELD
#undef FLOAT_FIELD
    /* ERNIE's embeddings use the hidden dropout (it has no embd_pdrop). */
    if (n.type == MODEL_ERNIE)
        n.embedding_dropout = n.hidden_dropout;
    /* An intermediate size of 0 (GPT-2's n_inner null) is 4 * hidden, and
     * so is a GPT-2 file without n_inner: GPT2Config's None. */
    if (n.intermediate_size == 0 || (n.type == MODEL_GPT && !v[F_INTER].set)) {
        if (n.hidden_size > INT_MAX / 4) {
            fail(err, "'%s': 4 * hidden size %d is too large", path,
                 n.hidden_size);
            goto out;
        }
        n.intermediate_size = 4 * n.hidden_size;
    }
    *c = n;
    rc = 0;
out:
    json_object_put(root);
    return rc;
}

/* ------------------------------------------------------------ checking */

static bool
dropout_ok(float p)
{
    return p >= 0 && p < 1; /* false for NaN */
}

int
config_check(const struct model_config *c, struct config_err *err)
{
    if (c->type != MODEL_ERNIE && c->type != MODEL_GPT)
        return fail(err, "model type %d is neither ERNIE nor GPT",
                    (int)c->type);
    if (c->vocab_size < 1 || c->hidden_size < 1 || c->num_layers < 1 ||
        c->num_heads < 1 || c->max_position < 1)
        return fail(err,
                    "sizes must be positive: vocab_size %d, hidden_size %d, "
                    "num_layers %d, num_heads %d, max_position %d",
                    c->vocab_size, c->hidden_size, c->num_layers, c->num_heads,
                    c->max_position);
    if (c->hidden_size % c->num_heads != 0)
        return fail(err, "hidden_size %d is not divisible by num_heads %d",
                    c->hidden_size, c->num_heads);
    if (c->intermediate_size < 1)
        return fail(err, "intermediate_size %d must be positive",
                    c->intermediate_size);
    if (c->hidden_act != OPS_ACT_GELU && c->hidden_act != OPS_ACT_GELU_TANH &&
        c->hidden_act != OPS_ACT_RELU)
        return fail(err, "hidden_act %d is not gelu, gelu_new or relu",
                    (int)c->hidden_act);
    if (!dropout_ok(c->hidden_dropout) || !dropout_ok(c->attention_dropout) ||
        !dropout_ok(c->embedding_dropout))
        return fail(err,
                    "dropouts must be in [0, 1): hidden %g, attention %g, "
                    "embedding %g",
                    c->hidden_dropout, c->attention_dropout,
                    c->embedding_dropout);
    if (!(c->initializer_range >= 0) || !isfinite(c->initializer_range))
        return fail(err, "initializer_range %g must be finite and at least 0",
                    c->initializer_range);
    if (!(c->layer_norm_eps > 0 && c->layer_norm_eps < 1))
        return fail(err, "layer_norm_eps %g must be in (0, 1)",
                    c->layer_norm_eps);
    if (c->type == MODEL_GPT)
        return 0;
    /* Segment A and B of every ERNIE sample have token types 0 and 1. */
    if (c->type_vocab_size < 2)
        return fail(err,
                    "type_vocab_size %d: ERNIE needs at least 2 (sentences "
                    "A and B)",
                    c->type_vocab_size);
    if (c->pad_token_id < 0 || c->pad_token_id >= c->vocab_size)
        return fail(err, "pad_token_id %d is not in [0, vocab_size %d)",
                    c->pad_token_id, c->vocab_size);
    if (c->use_task_id != 0 && c->use_task_id != 1)
        return fail(err, "use_task_id %d is neither 0 nor 1", c->use_task_id);
    if (c->use_task_id &&
        (c->task_id < 0 || c->task_id >= c->task_type_vocab_size))
        return fail(err, "task_id %d is not in [0, task_type_vocab_size %d)",
                    c->task_id, c->task_type_vocab_size);
    if (c->binary_head != 0 && c->binary_head != 1)
        return fail(err, "binary_head %d is neither 0 nor 1", c->binary_head);
    return 0;
}

/* ------------------------------------------------------------ writing */

void
config_format_double(char *buf, size_t cap, double x)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

/* The shortest decimal that reads back as exactly x. */
static void
float_str(char buf[32], float x)
{
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, 32, "%.*g", prec, (double)x);
        if (strtof(buf, NULL) == x)
            return;
    }
    snprintf(buf, 32, "%.9g", (double)x); /* reads back exactly */
}

void
config_format_float(char buf[32], float x)
{
    float_str(buf, x);
}

static const char *
act_name(enum ops_act a)
{
    switch (a) {
    case OPS_ACT_GELU:
        return "gelu";
    case OPS_ACT_RELU:
        return "relu";
    default:
        return "gelu_new";
    }
}

/* The JSON text of c, into f. */
/* "key": id, or null when unknown (transformers would otherwise take
 * GPT2Config's 50256). */
static void
token_id(FILE *f, const char *key, int id)
{
    if (id >= 0)
        fprintf(f, "  \"%s\": %d,\n", key, id);
    else
        fprintf(f, "  \"%s\": null,\n", key);
}

static void
write_json(FILE *f, const struct model_config *c)
{
    char hd[32], ad[32], ed[32], ir[32], eps[32];
    int inter = c->intermediate_size;

    float_str(hd, c->hidden_dropout);
    float_str(ad, c->attention_dropout);
    float_str(ed, c->embedding_dropout);
    float_str(ir, c->initializer_range);
    float_str(eps, c->layer_norm_eps);
    if (c->type == MODEL_GPT) {
        fprintf(f, "{\n");
        fprintf(f, "  \"architectures\": [\"GPT2LMHeadModel\"],\n");
        fprintf(f, "  \"model_type\": \"gpt2\",\n");
        fprintf(f, "  \"vocab_size\": %d,\n", c->vocab_size);
        fprintf(f, "  \"n_embd\": %d,\n", c->hidden_size);
        fprintf(f, "  \"n_layer\": %d,\n", c->num_layers);
        fprintf(f, "  \"n_head\": %d,\n", c->num_heads);
        if ((long long)inter == 4LL * c->hidden_size)
            fprintf(f, "  \"n_inner\": null,\n");
        else
            fprintf(f, "  \"n_inner\": %d,\n", inter);
        fprintf(f, "  \"n_positions\": %d,\n", c->max_position);
        fprintf(f, "  \"activation_function\": \"%s\",\n",
                act_name(c->hidden_act));
        fprintf(f, "  \"resid_pdrop\": %s,\n", hd);
        fprintf(f, "  \"embd_pdrop\": %s,\n", ed);
        fprintf(f, "  \"attn_pdrop\": %s,\n", ad);
        fprintf(f, "  \"layer_norm_epsilon\": %s,\n", eps);
        fprintf(f, "  \"initializer_range\": %s,\n", ir);
        token_id(f, "bos_token_id", c->bos_token_id);
        token_id(f, "eos_token_id", c->eos_token_id);
        fprintf(f, "  \"tie_word_embeddings\": true\n");
        fprintf(f, "}\n");
        return;
    }
    fprintf(f, "{\n");
    fprintf(f, "  \"architectures\": [\"ErnieForPreTraining\"],\n");
    fprintf(f, "  \"model_type\": \"ernie\",\n");
    fprintf(f, "  \"vocab_size\": %d,\n", c->vocab_size);
    fprintf(f, "  \"hidden_size\": %d,\n", c->hidden_size);
    fprintf(f, "  \"num_hidden_layers\": %d,\n", c->num_layers);
    fprintf(f, "  \"num_attention_heads\": %d,\n", c->num_heads);
    fprintf(f, "  \"intermediate_size\": %d,\n", inter);
    fprintf(f, "  \"hidden_act\": \"%s\",\n", act_name(c->hidden_act));
    fprintf(f, "  \"hidden_dropout_prob\": %s,\n", hd);
    fprintf(f, "  \"attention_probs_dropout_prob\": %s,\n", ad);
    fprintf(f, "  \"max_position_embeddings\": %d,\n", c->max_position);
    fprintf(f, "  \"type_vocab_size\": %d,\n", c->type_vocab_size);
    fprintf(f, "  \"task_type_vocab_size\": %d,\n", c->task_type_vocab_size);
    fprintf(f, "  \"use_task_id\": %s,\n", c->use_task_id ? "true" : "false");
    fprintf(f, "  \"task_id\": %d,\n", c->task_id);
    fprintf(f, "  \"initializer_range\": %s,\n", ir);
    fprintf(f, "  \"layer_norm_eps\": %s,\n", eps);
    fprintf(f, "  \"pad_token_id\": %d\n", c->pad_token_id);
    fprintf(f, "}\n");
}

int
config_write_json(const struct model_config *c, const char *path,
                  struct config_err *err)
{
    char *tmp;
    size_t tmp_len = strlen(path) + 32;
    FILE *f;
    int rc = -1;

    if (config_check(c, err) < 0)
        return -1;
    tmp = (char *)malloc(tmp_len);
    if (tmp == NULL)
        return fail(err, "cannot write '%s': out of memory", path);
    snprintf(tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) {
        fail(err, "cannot create '%s': %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    write_json(f, c);
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        fail(err, "cannot write '%s': %s", tmp, strerror(errno));
        fclose(f);
        goto out;
    }
    if (fclose(f) != 0) {
        fail(err, "cannot write '%s': %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        fail(err, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}
