/* SPDX-License-Identifier: MIT */
/*
 * fuzz_trainer_state.c: the reader of a checkpoint's trainer_state.json
 * (ckpt_read_state, what ckpt_load() reads before the weights) on
 * arbitrary bytes, for an ERNIE and a GPT run.  A refusal names the file
 * or the checkpoint; a state accepted holds the counts and learning rate
 * the file says (read again here with json-c), and is accepted for the
 * model type the file names only.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "fuzz.h"

static char dir[FUZZ_PATH_MAX], path[FUZZ_PATH_MAX + 64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_tmp_path(dir, sizeof(dir), "checkpoint");
    if (mkdir(dir, 0700) != 0)
        abort();
    snprintf(path, sizeof(path), "%s/trainer_state.json", dir);
    return 0;
}

/* The non-negative integer under key, as json-c reads it. */
static uint64_t
count(struct json_object *j, const char *key)
{
    struct json_object *v;

    if (!json_object_object_get_ex(j, key, &v) ||
        !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
        abort();
    return json_object_get_uint64(v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct train_state s[2];
    char err[2][1024];
    int rc[2];

    fuzz_write_file(path, data, size);
    for (int t = 0; t < 2; t++) {
        err[t][0] = '\0';
        rc[t] = ckpt_read_state(dir, t ? MODEL_GPT : MODEL_ERNIE, &s[t], err[t],
                                sizeof(err[t]));
        if (rc[t] < 0 && strstr(err[t], dir) == NULL)
            abort();
    }
    if (rc[0] == 0 && rc[1] == 0)
        abort(); /* one "model_type" */
    for (int t = 0; t < 2; t++) {
        struct json_object *j, *v;

        if (rc[t] != 0)
            continue;
        {
            struct json_tokener *tok = json_tokener_new();

            if (tok == NULL)
                abort();
            j = json_tokener_parse_ex(tok, (const char *)data, (int)size);
            json_tokener_free(tok);
        }
        if (j == NULL || !json_object_object_get_ex(j, "learning_rate", &v))
            abort();
        if ((uint64_t)s[t].global_step != count(j, "global_step") ||
            s[t].consumed_samples != count(j, "consumed_samples") ||
            (uint64_t)s[t].optimizer_step != count(j, "optimizer_step") ||
            (uint64_t)s[t].global_batch_size != count(j, "global_batch_size") ||
            (uint64_t)s[t].micro_batch_size != count(j, "micro_batch_size") ||
            s[t].seed != count(j, "seed") || s[t].global_step < 0 ||
            s[t].optimizer_step < 0 || s[t].global_batch_size < 0 ||
            s[t].micro_batch_size < 0 || !isfinite(s[t].learning_rate) ||
            s[t].learning_rate < 0 ||
            s[t].learning_rate != json_object_get_double(v))
            abort();
        json_object_put(j);
    }
    return 0;
}
