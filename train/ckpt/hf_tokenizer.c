/* SPDX-License-Identifier: MIT */
/* hf_tokenizer.c: Hugging Face tokenizer files for checkpoints (see
 * hf_tokenizer.h). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hf_tokenizer.h"
#include "util/tr_util.h"
#include "banned.h"

/* A vocabulary file larger than this is refused. */
#define VOCAB_MAX_BYTES (256u << 20)

/* Keep p (malloc'd) until release; returns p, or NULL (and frees p) when
 * there is no room or p is NULL. */
static char *
own(struct hf_tokenizer *t, char *p)
{
    for (size_t i = 0; p && i < sizeof(t->owned) / sizeof(t->owned[0]); i++)
        if (t->owned[i] == NULL)
            return t->owned[i] = p;
    free(p);
    return NULL;
}

static void
add_file(struct hf_tokenizer *t, const char *name, const char *src,
         const char *text)
{
    struct ckpt_file f = { name, src, text };

    t->files[t->n_files++] = f;
}

/* The whole file, NUL-terminated (caller frees). */
static char *
slurp(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL) {
        tr_fail(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        tr_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        fclose(f);
        return NULL;
    }
    if ((unsigned long)n > VOCAB_MAX_BYTES) {
        tr_fail(err, errlen, "'%s' is larger than %u bytes", path,
                VOCAB_MAX_BYTES);
        fclose(f);
        return NULL;
    }
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        if (buf)
            tr_fail(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        else
            tr_fail(err, errlen, "'%s': out of memory", path);
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* obj as pretty JSON text with a final newline (malloc'd), and frees obj. */
static char *
json_text(struct json_object *obj)
{
    const char *s = json_object_to_json_string_ext(
        obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                 JSON_C_TO_STRING_NOSLASHESCAPE);
    char *out = NULL;

    if (s == NULL || asprintf(&out, "%s\n", s) < 0)
        out = NULL;
    json_object_put(obj);
    return out;
}

static void
set_str(struct json_object *o, const char *key, const char *v)
{
    json_object_object_add(o, key, v ? json_object_new_string(v) : NULL);
}

/* tokenizer_config.json and special_tokens_map.json: the class, the
 * special tokens names[i] = tokens[i] (a NULL token: none), settings. */
static int
add_configs(struct hf_tokenizer *t, const char *cls, const char *const *names,
            const char *const *tokens, size_t n, struct json_object *settings,
            int model_max_length, char *err, size_t errlen)
{
    struct json_object *map = json_object_new_object();
    char *cfg, *sp;

    if (map == NULL || settings == NULL) {
        json_object_put(map);
        json_object_put(settings);
        return tr_fail(err, errlen, "out of memory");
    }
    set_str(settings, "tokenizer_class", cls);
    for (size_t i = 0; i < n; i++) {
        set_str(settings, names[i], tokens[i]);
        if (tokens[i])
            set_str(map, names[i], tokens[i]);
    }
    json_object_object_add(settings, "model_max_length",
                           json_object_new_int(model_max_length));
    cfg = own(t, json_text(settings));
    sp = own(t, json_text(map));
    if (cfg == NULL || sp == NULL)
        return tr_fail(err, errlen, "out of memory");
    add_file(t, "tokenizer_config.json", NULL, cfg);
    add_file(t, "special_tokens_map.json", NULL, sp);
    return 0;
}

int
hf_tokenizer_wordpiece(struct hf_tokenizer *t, const char *vocab_txt,
                       int model_max_length, char *err, size_t errlen)
{
    static const char *const names[] = { "unk_token", "sep_token", "pad_token",
                                         "cls_token", "mask_token" };
    static const char *const specials[] = { "[UNK]", "[SEP]", "[PAD]", "[CLS]",
                                            "[MASK]" };
    const char *have[5] = { NULL, NULL, NULL, NULL, NULL };
    size_t len, n_lines = 0, k = 0;
    char *text, *out, **by_id = NULL, *p;
    int tabbed, rc = -1;
    struct json_object *settings;

    memset(t, 0, sizeof(*t));
    t->eos_id = -1;
    if ((text = slurp(vocab_txt, &len, err, errlen)) == NULL)
        return -1;
    for (size_t i = 0; i < len; i++)
        n_lines += text[i] == '\n' || (i + 1 == len);
    tabbed = strcspn(text, "\n") > strcspn(text, "\t");
    by_id = calloc(n_lines ? n_lines : 1, sizeof(*by_id));
    out = malloc(len + 2);
    if (by_id == NULL || out == NULL) {
        tr_fail(err, errlen, "out of memory");
        goto done;
    }
    /* Cut the lines in place: each token NUL-terminated, CR dropped. */
    p = text;
    for (size_t line = 0; line < n_lines; line++) {
        char *nl = strchr(p, '\n'), *tab;
        size_t id = line;

        if (nl)
            *nl = '\0';
        if (*p && p[strlen(p) - 1] == '\r')
            p[strlen(p) - 1] = '\0';
        if (tabbed) {
            char *end;

            if ((tab = strchr(p, '\t')) == NULL ||
                (id = strtoul(tab + 1, &end, 10), *end) || id >= n_lines ||
                by_id[id]) {
                tr_fail(err, errlen, "vocab '%s' line %zu: not 'token<TAB>id'",
                        vocab_txt, line + 1);
                goto done;
            }
            *tab = '\0';
        }
        by_id[id] = p;
        for (size_t s = 0; s < 5; s++)
            if (strcmp(p, specials[s]) == 0)
                have[s] = specials[s];
        p = nl ? nl + 1 : p + strlen(p);
    }
    /* One token a line, in id order, as BertTokenizer reads vocab.txt. */
    for (size_t id = 0; id < n_lines; id++) {
        size_t n = by_id[id] ? strlen(by_id[id]) : 0;

        memcpy(out + k, by_id[id] ? by_id[id] : "", n);
        k += n;
        out[k++] = '\n';
    }
    out[k] = '\0';
    if (own(t, out) == NULL) {
        out = NULL;
        tr_fail(err, errlen, "out of memory");
        goto done;
    }
    add_file(t, "vocab.txt", NULL, out);
    out = NULL;
    t->n_tokens = n_lines;
    /* ERNIE's tokenizers lower-case (and drop accents), as uncased BERT. */
    settings = json_object_new_object();
    if (settings) {
        json_object_object_add(settings, "do_lower_case",
                               json_object_new_boolean(1));
        json_object_object_add(settings, "tokenize_chinese_chars",
                               json_object_new_boolean(1));
        json_object_object_add(settings, "strip_accents", NULL);
    }
    rc = add_configs(t, "BertTokenizer", names, have, 5, settings,
                     model_max_length, err, errlen);
done:
    free(out);
    free(by_id);
    free(text);
    if (rc < 0)
        hf_tokenizer_release(t);
    return rc;
}

int
hf_tokenizer_bpe(struct hf_tokenizer *t, const char *path, int model_max_length,
                 char *err, size_t errlen)
{
    static const char *const names[] = { "bos_token", "eos_token",
                                         "unk_token" };
    const char *tokens[3] = { NULL, NULL, NULL };
    struct stat st;
    char *vocab, *merges, *dir, *slash;
    struct json_object *j, *settings;
    int64_t max_id = -1;
    int rc;

    memset(t, 0, sizeof(*t));
    t->eos_id = -1;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (asprintf(&vocab, "%s/vocab.json", path) < 0 ||
            own(t, vocab) == NULL ||
            asprintf(&merges, "%s/merges.txt", path) < 0 ||
            own(t, merges) == NULL)
            goto nomem;
    } else {
        if ((dir = strdup(path)) == NULL || own(t, dir) == NULL)
            goto nomem;
        slash = strrchr(dir, '/');
        if (slash)
            slash[1] = '\0';
        if ((vocab = own(t, strdup(path))) == NULL ||
            asprintf(&merges, "%smerges.txt", slash ? dir : "") < 0 ||
            own(t, merges) == NULL)
            goto nomem;
    }
    if (access(merges, R_OK) != 0) {
        tr_fail(err, errlen,
                "cannot read '%s': %s (a byte-level BPE needs "
                "vocab.json and merges.txt)",
                merges, strerror(errno));
        goto fail;
    }
    j = json_object_from_file(vocab);
    if (j == NULL || !json_object_is_type(j, json_type_object)) {
        tr_fail(err, errlen, "cannot read '%s': %s", vocab,
                j ? "not a JSON object" : json_util_get_last_err());
        json_object_put(j);
        goto fail;
    }
    json_object_object_foreach(j, key, val)
    {
        int64_t id = json_object_get_int64(val);

        if (!json_object_is_type(val, json_type_int) || id < 0 ||
            id > INT32_MAX) {
            tr_fail(err, errlen, "'%s': the id of '%.60s' is not an id", vocab,
                    key);
            json_object_put(j);
            goto fail;
        }
        if (id > max_id)
            max_id = id;
        if (strcmp(key, HF_TOKENIZER_EOS) == 0)
            t->eos_id = (int32_t)id;
    }
    json_object_put(j);
    t->n_tokens = (size_t)(max_id + 1);
    add_file(t, "vocab.json", vocab, NULL);
    add_file(t, "merges.txt", merges, NULL);
    /* GPT-2's one special token, when the vocabulary has it. */
    if (t->eos_id >= 0)
        tokens[0] = tokens[1] = tokens[2] = HF_TOKENIZER_EOS;
    settings = json_object_new_object();
    if (settings) {
        json_object_object_add(settings, "add_prefix_space",
                               json_object_new_boolean(0));
        set_str(settings, "errors", "replace");
    }
    rc = add_configs(t, "GPT2Tokenizer", names, tokens, 3, settings,
                     model_max_length, err, errlen);
    if (rc == 0)
        return 0;
    goto fail;
nomem:
    tr_fail(err, errlen, "out of memory");
fail:
    hf_tokenizer_release(t);
    return -1;
}

void
hf_tokenizer_release(struct hf_tokenizer *t)
{
    for (size_t i = 0; i < sizeof(t->owned) / sizeof(t->owned[0]); i++)
        free(t->owned[i]);
    memset(t, 0, sizeof(*t));
    t->eos_id = -1;
}
