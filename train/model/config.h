/* SPDX-License-Identifier: MIT */
/*
 * config.h: model configurations, read from JSON (PaddleNLP's ERNIE
 * config.json, Hugging Face's BERT/ERNIE and GPT-2 config.json) and
 * overridden by flags.
 */
#ifndef TRAIN_CONFIG_H
#define TRAIN_CONFIG_H

#include <stddef.h>

#include "ops.h"

enum model_type { MODEL_ERNIE = 0, MODEL_GPT = 1 };

struct model_config {
    enum model_type type;
    int vocab_size;
    int hidden_size;
    int num_layers;
    int num_heads;
    int intermediate_size;   /* 0 in JSON (GPT-2 n_inner null): 4 * hidden */
    int max_position;        /* max_position_embeddings / n_positions */
    enum ops_act hidden_act; /* ERNIE gelu (exact) or relu; GPT gelu_new */
    float hidden_dropout;    /* hidden_dropout_prob / resid_pdrop */
    float attention_dropout; /* attention_probs_dropout_prob / attn_pdrop */
    float embedding_dropout; /* GPT embd_pdrop; ERNIE = hidden_dropout */
    float initializer_range; /* 0.02 */
    float layer_norm_eps;    /* ERNIE 1e-12 (as PaddleNLP); GPT 1e-5 */
    /* ERNIE only */
    int type_vocab_size;      /* type_vocab_size / sent_type_vocab_size */
    int task_type_vocab_size; /* 3 */
    int use_task_id;          /* 1: task type embeddings (ids all task_id) */
    int task_id;              /* 0 */
    int pad_token_id;         /* 0: torch padding_idx of word embeddings */
    int binary_head;          /* 1: SOP head and loss; 0: MLM only */
    /* GPT only: the ids of the first and last token of a text, -1 when
     * unknown (written null): "<|endoftext|>" of the run's tokenizer. */
    int bos_token_id, eos_token_id;
};

struct config_err {
    char msg[512];
};

/* config_defaults: ErnieConfig's / GPT2Config's defaults for type. */
void config_defaults(struct model_config *c, enum model_type type);

struct json_object;

/* config_json_object: the JSON object held by the file at path (strict
 * JSON, only white space after it, at most 16 MB).  Returns it (release
 * with json_object_put()) or NULL with err naming the file and what is
 * wrong: "cannot open 'x': No such file or directory", "cannot read 'x':
 * Is a directory", "'x': not valid JSON at byte N: ...", "'x': the JSON
 * is array, not an object". */
struct json_object *config_json_object(const char *path,
                                       struct config_err *err);

/* config_read_json: read a config.json into c (keys missing from the file
 * keep c's values).  Accepts PaddleNLP ERNIE keys (sent_type_vocab_size,
 * task_type_vocab_size, use_task_id, hidden_act "gelu"/"relu"), Hugging
 * Face BERT/ERNIE keys (type_vocab_size, layer_norm_eps, pad_token_id)
 * and GPT-2 keys (n_embd, n_layer, n_head, n_inner, n_positions,
 * activation_function, resid_pdrop, embd_pdrop, attn_pdrop,
 * layer_norm_epsilon, bos_token_id, eos_token_id).  Unknown keys are ignored.  Returns 0, or -1 with
 * err naming the file and the bad key (unreadable file, bad JSON, a value
 * of the wrong type or out of range, an unknown activation). */
int config_read_json(struct model_config *c, const char *path,
                     struct config_err *err);

/* config_check: the sizes are positive and consistent (hidden divisible
 * by heads, ...).  Returns 0 or -1 with err saying what is wrong. */
int config_check(const struct model_config *c, struct config_err *err);

/* config_format_double: the shortest decimal form of a finite x that
 * reads back as x ("%.17g" would print 0.9 as 0.90000000000000002), into
 * buf[0..cap) (32 bytes are enough). */
void config_format_double(char *buf, size_t cap, double x);

/* config_format_float: the same for an fp32 x, as config.json writes its
 * dropouts, ranges and epsilons ("0.1", not "0.10000000149011612"). */
void config_format_float(char buf[32], float x);

/* config_write_json: write c as a Hugging Face config.json that
 * transformers' ErnieConfig / GPT2Config load ("architectures",
 * "model_type" "ernie" / "gpt2", and every field above under its HF
 * name).  Returns 0 or -1 with err. */
int config_write_json(const struct model_config *c, const char *path,
                      struct config_err *err);

#endif /* TRAIN_CONFIG_H */
