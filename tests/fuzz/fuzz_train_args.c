/* SPDX-License-Identifier: MIT */
/*
 * fuzz_train_args.c: the trainer's flag parser (args_parse: the flags
 * table, PaddleNLP's and Megatron's aliases, --config files) on arbitrary
 * command lines.  The input is one argument a line; a line "---" ends
 * them, and what follows is the file that a --config value "@" names (a
 * value "." names a directory, any other a missing file, so no file
 * outside the target's scratch directory is read).  Inputs that are not
 * UTF-8, or that ask for --help, are skipped.  A refusal must say why;
 * arguments accepted must be in their ranges, and args_to_json() of them,
 * given back as the only --config, must parse to the same arguments.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "fuzz.h"
#include "tok.h"

#define MAX_ARGS 64

static char config_path[FUZZ_PATH_MAX], absent_path[FUZZ_PATH_MAX],
    json_path[FUZZ_PATH_MAX];
static FILE *devnull;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_tmp_path(config_path, sizeof(config_path), "config.json");
    fuzz_tmp_path(absent_path, sizeof(absent_path), "absent.json");
    fuzz_tmp_path(json_path, sizeof(json_path), "args.json");
    if ((devnull = fopen("/dev/null", "w")) == NULL)
        abort();
    return 0;
}

static int
one_of(const char *s, const char *const *choices)
{
    for (; s != NULL && *choices != NULL; choices++)
        if (strcmp(s, *choices) == 0)
            return 1;
    return 0;
}

/* Ranges and choices of the accepted arguments (args.c's table). */
static void
check_ranges(const struct train_args *a)
{
    static const char *const types[] = { "ernie", "gpt", NULL };
    static const char *const devices[] = { "cpu", "cuda", "auto", NULL };
    static const char *const styles[] = { "linear", "cosine", "auto", NULL };
    static const char *const grains[] = { "full", "core_attn", NULL };

    if (!one_of(a->model_type, types) || a->model_name_or_path == NULL ||
        a->input_dir == NULL || a->output_dir == NULL ||
        !one_of(a->device, devices) || !one_of(a->lr_decay_style, styles) ||
        !one_of(a->recompute_granularity, grains) || a->max_seq_len < 4 ||
        a->micro_batch_size < 1 || a->max_steps < 1 || a->tp < 1 || a->pp < 1 ||
        a->dp < 0 || a->sharding_degree < 1 || a->sharding_stage < 1 ||
        a->sharding_stage > 3 || !(a->adam_beta1 >= 0 && a->adam_beta1 < 1) ||
        !(a->adam_beta2 >= 0 && a->adam_beta2 < 1) ||
        !(a->warmup_rate >= 0 && a->warmup_rate <= 1) ||
        !(a->hidden_dropout_prob < 1) ||
        !(a->attention_probs_dropout_prob < 1) || !isfinite(a->max_lr) ||
        !isfinite(a->min_lr) || a->max_lr < 0 || a->min_lr < 0 ||
        (a->per_device_eval_batch_size != 0 &&
         a->per_device_eval_batch_size != a->micro_batch_size))
        abort();
}

/* Do two args_to_json() texts hold the same values (numbers compared as
 * numbers: -0 is read back as 0)? */
static int
same_json(const char *x, const char *y)
{
    struct json_object *a = json_tokener_parse(x), *b = json_tokener_parse(y);
    int ok = a != NULL && b != NULL &&
             json_object_object_length(a) == json_object_object_length(b);

    if (ok) {
        json_object_object_foreach(a, key, va)
        {
            struct json_object *vb;
            enum json_type t = json_object_get_type(va);

            if (!json_object_object_get_ex(b, key, &vb) ||
                (t == json_type_null) !=
                    json_object_is_type(vb, json_type_null))
                ok = 0;
            else if (t == json_type_double || t == json_type_int)
                ok = ok &&
                     json_object_get_double(va) == json_object_get_double(vb);
            else if (t != json_type_null)
                ok = ok && strcmp(json_object_get_string(va),
                                  json_object_get_string(vb)) == 0;
        }
    }
    json_object_put(a);
    json_object_put(b);
    return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text, *argv[MAX_ARGS + 2], *p, err[1024];
    char *again_argv[] = { (char *)"train", (char *)"--config", json_path,
                           NULL };
    struct train_args a, b;
    int argc = 1, rc;

    if (tok_utf8_check((const char *)data, size) != size ||
        memchr(data, '\0', size) != NULL)
        return 0;
    if ((text = malloc(size + 1)) == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    argv[0] = (char *)"train";
    for (p = text; argc < MAX_ARGS + 1;) {
        char *nl = strchr(p, '\n');

        if (nl != NULL)
            *nl = '\0';
        if (strcmp(p, "---") == 0) {
            p = nl ? nl + 1 : p + strlen(p);
            break;
        }
        argv[argc++] = p;
        if (nl == NULL) {
            p += strlen(p);
            break;
        }
        p = nl + 1;
    }
    argv[argc] = NULL;
    fuzz_write_file(config_path, p, strlen(p));
    /* The values of --config: "@" the file above, "." a directory, "" as
     * it is, anything else a missing file. */
    for (int i = 1; i < argc; i++) {
        char *v = NULL;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            free(text);
            return 0;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            v = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            v = argv[i] + 9;
        if (v == NULL || v[0] == '\0')
            continue;
        if (v == argv[i]) {
            argv[i] = strcmp(v, "@") == 0   ? config_path
                      : strcmp(v, ".") == 0 ? (char *)fuzz_tmp_dir()
                                            : absent_path;
        } else {
            static char eq[3][FUZZ_PATH_MAX + 64];
            int k = strcmp(v, "@") == 0 ? 0 : strcmp(v, ".") == 0 ? 1 : 2;

            snprintf(eq[k], sizeof(eq[k]), "--config=%s",
                     k == 0   ? config_path
                     : k == 1 ? fuzz_tmp_dir()
                              : absent_path);
            argv[i] = eq[k];
        }
    }
    err[0] = '\0';
    rc = args_parse(&a, argc, argv, err, sizeof(err));
    if (rc == ARGS_ERROR) {
        if (err[0] == '\0')
            abort();
    } else if (rc == ARGS_EMPTY) {
        if (argc > 1)
            abort();
    } else if (rc != ARGS_OK) {
        abort();
    } else {
        char *json = args_to_json(&a), *json_b;

        check_ranges(&a);
        args_print(&a, devnull, "");
        if (json == NULL)
            abort();
        fuzz_write_file(json_path, json, strlen(json));
        if (args_parse(&b, 3, again_argv, err, sizeof(err)) != ARGS_OK) {
            fprintf(stderr, "fuzz_train_args: %s\n%s\n", err, json);
            abort();
        }
        json_b = args_to_json(&b);
        if (json_b == NULL || !same_json(json, json_b)) {
            fprintf(stderr, "fuzz_train_args: %s\nread back as\n%s\n", json,
                    json_b ? json_b : "(null)");
            abort();
        }
        free(json);
        free(json_b);
        args_release(&b);
    }
    args_release(&a);
    free(text);
    return 0;
}
