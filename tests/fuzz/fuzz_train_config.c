/* SPDX-License-Identifier: MIT */
/*
 * fuzz_train_config.c: the trainer's model config reader
 * (config_read_json: PaddleNLP's and Hugging Face's config.json) on
 * arbitrary bytes.  Byte 0 picks the model type (bit 0: GPT, else ERNIE);
 * the rest is the file.  A refusal names the file and leaves the config
 * as it was.  A config read and consistent (config_check) must survive
 * config_write_json() and a second read into the type's defaults with
 * every field the file carries for that type unchanged; one that is not
 * consistent must not be written.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "model/config.h"

static char path[FUZZ_PATH_MAX], again[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_tmp_path(path, sizeof(path), "config.json");
    fuzz_tmp_path(again, sizeof(again), "again.json");
    return 0;
}

/* Do a and b agree on what a config.json of their type says? */
static int
same(const struct model_config *a, const struct model_config *b)
{
    if (a->type != b->type || a->vocab_size != b->vocab_size ||
        a->hidden_size != b->hidden_size || a->num_layers != b->num_layers ||
        a->num_heads != b->num_heads ||
        a->intermediate_size != b->intermediate_size ||
        a->max_position != b->max_position || a->hidden_act != b->hidden_act ||
        a->hidden_dropout != b->hidden_dropout ||
        a->attention_dropout != b->attention_dropout ||
        a->embedding_dropout != b->embedding_dropout ||
        a->initializer_range != b->initializer_range ||
        a->layer_norm_eps != b->layer_norm_eps)
        return 0;
    if (a->type == MODEL_GPT)
        return a->bos_token_id == b->bos_token_id &&
               a->eos_token_id == b->eos_token_id;
    return a->type_vocab_size == b->type_vocab_size &&
           a->task_type_vocab_size == b->task_type_vocab_size &&
           a->use_task_id == b->use_task_id && a->task_id == b->task_id &&
           a->pad_token_id == b->pad_token_id;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum model_type type;
    struct model_config c, start, back;
    struct config_err e;

    if (size == 0)
        return 0;
    type = (data[0] & 1) ? MODEL_GPT : MODEL_ERNIE;
    fuzz_write_file(path, data + 1, size - 1);
    config_defaults(&c, type);
    start = c;
    e.msg[0] = '\0';
    if (config_read_json(&c, path, &e) < 0) {
        if (memcmp(&c, &start, sizeof(c)) != 0 || strstr(e.msg, path) == NULL)
            abort();
        return 0;
    }
    if (c.type != type)
        abort();
    if (config_check(&c, &e) < 0) {
        if (config_write_json(&c, again, &e) == 0)
            abort();
        return 0;
    }
    config_defaults(&back, type);
    if (config_write_json(&c, again, &e) < 0 ||
        config_read_json(&back, again, &e) < 0 || !same(&c, &back) ||
        config_check(&back, &e) < 0)
        abort();
    return 0;
}
