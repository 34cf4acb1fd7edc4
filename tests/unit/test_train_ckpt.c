/* SPDX-License-Identifier: MIT */
/*
 * test_train_ckpt.c: unit tests of the trainer's checkpoint directories:
 * round trips of a tiny ERNIE and a tiny GPT (weights, AdamW moments and
 * training state bit for bit, the arguments and the vocabulary), the
 * files written one tensor at a time (st_write()'s bytes, a few tensors
 * of host memory at most), the backup rotation, ckpt_exists, and the
 * refusals: truncated files, a
 * missing, misshapen or extra tensor, another config, a corrupt
 * trainer_state.json, and saves that fail without leaving a temporary
 * directory or touching the old checkpoint.  Files go to a fresh
 * directory under $TMPDIR (default /tmp), removed at the end.
 */
#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness.h"
#include "../harness_files.h"
#include "ckpt/checkpoint.h"
#include "model/config.h"
#include "model/model.h"
#include "ops.h"
#include "optim/optim.h"
#include "ckpt/paddle_export.h"
#include "ckpt/pdparams.h"
#include "ckpt/safetensors.h"
#include "util/tr_util.h"

static int
exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

/* A tiny model of type with hidden size C, parameters from seed. */
static struct model *
tiny_model_bh(enum model_type type, int C, uint64_t seed, int binary_head)
{
    struct model_config c;
    struct model *m = NULL;
    char err[256];

    config_defaults(&c, type);
    c.vocab_size = 40;
    c.hidden_size = C;
    c.num_layers = 2;
    c.num_heads = 2;
    c.intermediate_size = 4 * C;
    c.max_position = 16;
    c.binary_head = binary_head;
    if (model_create(&m, &c, ops_cpu(1, OPS_F32), 2, 8, 4, err, sizeof(err)) <
            0 ||
        model_init_params(m, seed) < 0) {
        fprintf(stderr, "tiny_model: %s\n", err);
        exit(1);
    }
    return m;
}

static struct model *
tiny_model(enum model_type type, int C, uint64_t seed)
{
    return tiny_model_bh(type, C, seed, 1);
}

/* Two AdamW steps on made-up gradients, so the moments are not zero. */
static void
fake_steps(struct model *m, struct optimizer *o)
{
    const struct param_table *pt = model_table(m);
    const struct ops *ops = model_ops(m);
    struct adamw_params ap = { 0.9, 0.999, 1e-8, 0.01, 1.0 };
    float *g = malloc(pt->total * sizeof(float));
    uint64_t x = 42;

    if (g == NULL || optim_create(o, ops, pt) < 0) {
        fprintf(stderr, "fake_steps: out of memory\n");
        exit(1);
    }
    for (int step = 0; step < 2; step++) {
        /* (Random on the parameters; 0 on the pads, as a backward leaves
         * them, so the pads stay 0 as files need.) */
        memset(g, 0, pt->total * sizeof(float));
        for (size_t i = 0; i < pt->n; i++)
            for (size_t k = 0; k < pt->t[i].numel; k++)
                if (params_global_index(&pt->t[i], 1, 0, k) >= 0)
                    g[pt->t[i].offset + k] =
                        (float)((int64_t)(ops_splitmix64(x++) >> 40) -
                                (1 << 23)) *
                        (1.0f / (1 << 23));
        ops->upload(model_grads(m), g, pt->total * sizeof(float));
        CHECK_EQ_INT(optim_step(o, model_params(m), model_compute_params(m),
                                model_grads(m), 1e-3, &ap, NULL),
                     0);
    }
    free(g);
}

static const struct train_state state0 = {
    .global_step = 2,
    .optimizer_step = 2,
    .consumed_samples = 17179869184ULL,
    .seed = 18446744073709551557ULL, /* above INT64_MAX */
    .global_batch_size = 512,
    .micro_batch_size = 8,
    .learning_rate = 0.1 * 0.003, /* 0.00030000000000000003 */
};

/* Download n floats at a (backend memory) and b and compare their bits. */
static int
same_buffers(const struct ops *ops, const float *a, const float *b, size_t n)
{
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    int same;

    ops->download(x, a, n * sizeof(float));
    ops->download(y, b, n * sizeof(float));
    same = memcmp(x, y, n * sizeof(float)) == 0;
    free(x);
    free(y);
    return same;
}

/* Save a checkpoint of a fresh tiny model of type to dir at global_step
 * step. */
static void
save_tiny(const char *dir, enum model_type type, int C, int64_t step,
          int keep_backup)
{
    struct model *m = tiny_model(type, C, 1);
    struct optimizer o;
    struct train_state s = state0;
    char err[512] = "";

    fake_steps(m, &o);
    s.global_step = step;
    CHECK_EQ_INT(
        ckpt_save(dir, m, &o, &s, NULL, NULL, keep_backup, err, sizeof(err)),
        0);
    if (err[0])
        fprintf(stderr, "save_tiny: %s\n", err);
    optim_release(&o);
    model_free(m);
}

/* The global_step of the checkpoint in dir, or -1. */
static int64_t
step_of(const char *dir, enum model_type type, int C)
{
    struct model *m = tiny_model(type, C, 2);
    struct train_state s;
    char err[512];
    int64_t step = -1;

    if (ckpt_load(dir, m, NULL, &s, err, sizeof(err)) == 0)
        step = s.global_step;
    else
        fprintf(stderr, "step_of: %s\n", err);
    model_free(m);
    return step;
}

/* Load dir into a fresh tiny model; expect failure with sub in the
 * message. */
#define CHECK_LOAD_FAILS(dir, type, C, sub)                                 \
    do {                                                                    \
        struct model *m_ = tiny_model((type), (C), 3);                      \
        struct optimizer o_;                                                \
        struct train_state s_;                                              \
        char e_[512] = "";                                                  \
        memset(&s_, 0x5a, sizeof(s_));                                      \
        CHECK_EQ_INT(optim_create(&o_, model_ops(m_), model_table(m_)), 0); \
        CHECK_EQ_INT(ckpt_load((dir), m_, &o_, &s_, e_, sizeof(e_)), -1);   \
        CHECK_MSG_STR(e_, (sub));                                           \
        CHECK_EQ_INT(s_.global_step, 0x5a5a5a5a5a5a5a5aLL); /* untouched */ \
        optim_release(&o_);                                                 \
        model_free(m_);                                                     \
    } while (0)

/* ------------------------------------------------------------- tests */

static void
roundtrip(enum model_type type, const char *name)
{
    const char *root = test_dir(name);
    const char *dir = path_of(root, "model_last");
    const char *vocab = path_of(root, "vocab_src.txt");
    static const char vocab_text[] = "[PAD]\n[UNK]\n\xe4\xb8\xad\nab\n";
    static const char args[] =
        "{\"max_steps\": 100, \"output_dir\": \"/out/x\", "
        "\"data\": [\"a\", 0.5], \"nested\": {\"k\": null}}";
    struct model *m = tiny_model(type, 16, 1), *m2 = tiny_model(type, 16, 9);
    const struct param_table *pt = model_table(m);
    struct optimizer o, o2;
    struct train_state s;
    struct json_object *j, *args_obj, *v;
    unsigned char *buf;
    size_t len;
    char err[512] = "";
    int n_tmp;

    write_file(vocab, vocab_text, sizeof(vocab_text) - 1);
    fake_steps(m, &o);
    CHECK_EQ_INT(ckpt_exists(dir), 0);
    CHECK_EQ_INT(
        ckpt_save(dir, m, &o, &state0, args, vocab, 1, err, sizeof(err)), 0);
    CHECK_EQ_STR(err, "");
    CHECK_EQ_INT(ckpt_exists(dir), 1);
    CHECK(exists(path_of(dir, "config.json")));
    CHECK(!exists(path_of(root, "model_last_bak")));
    CHECK_EQ_INT(count_files(root, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 5);
    CHECK_EQ_INT(n_tmp, 0);

    /* vocab.txt is a byte copy */
    buf = read_file(path_of(dir, "vocab.txt"), &len);
    CHECK_EQ_INT(len, sizeof(vocab_text) - 1);
    CHECK(buf != NULL && memcmp(buf, vocab_text, len) == 0);
    free(buf);

    /* the state as JSON, with the arguments as a nested object */
    j = json_object_from_file(path_of(dir, "trainer_state.json"));
    CHECK(j != NULL);
    CHECK(json_object_object_get_ex(j, "format", &v) &&
          strcmp(json_object_get_string(v), "erniekit-trainer-state") == 0);
    CHECK(json_object_object_get_ex(j, "model_type", &v) &&
          strcmp(json_object_get_string(v),
                 type == MODEL_GPT ? "gpt" : "ernie") == 0);
    CHECK(json_object_object_get_ex(j, "args", &args_obj) &&
          json_object_is_type(args_obj, json_type_object));
    CHECK(json_object_object_get_ex(args_obj, "output_dir", &v) &&
          strcmp(json_object_get_string(v), "/out/x") == 0);
    CHECK(json_object_object_get_ex(args_obj, "nested", &v) &&
          json_object_is_type(v, json_type_object));
    json_object_put(j);

    /* the metadata transformers wants */
    {
        struct st_file *f = NULL;
        struct st_err se;

        CHECK_EQ_INT(st_open(&f, path_of(dir, "model.safetensors"), &se), 0);
        CHECK(f != NULL && st_meta(f, "format") != NULL &&
              strcmp(st_meta(f, "format"), "pt") == 0);
        CHECK(f != NULL && st_count(f) == pt->n);
        st_close(f);
        CHECK_EQ_INT(st_open(&f, path_of(dir, "optimizer.safetensors"), &se),
                     0);
        CHECK(f != NULL && st_count(f) == 2 * pt->n);
        if (type == MODEL_GPT && f != NULL) { /* Conv1D: [in, out] */
            const struct st_tensor *a =
                st_find(f, "exp_avg.transformer.h.1.mlp.c_fc.weight");
            const struct st_tensor *b =
                st_find(f, "exp_avg_sq.transformer.h.1.mlp.c_fc.weight");

            CHECK(a != NULL && b != NULL);
            if (a != NULL && b != NULL) {
                CHECK_EQ_INT(a->shape[0], 16);
                CHECK_EQ_INT(a->shape[1], 64);
                CHECK_EQ_INT(b->shape[0], 16);
                CHECK_EQ_INT(b->shape[1], 64);
            }
        }
        st_close(f);
    }

    /* everything comes back bit for bit */
    CHECK_EQ_INT(optim_create(&o2, model_ops(m2), model_table(m2)), 0);
    CHECK(!same_buffers(model_ops(m), model_params(m), model_params(m2),
                        pt->total));
    CHECK_EQ_INT(ckpt_load(dir, m2, &o2, &s, err, sizeof(err)), 0);
    CHECK_EQ_STR(err, "");
    CHECK(same_buffers(model_ops(m), model_params(m), model_params(m2),
                       pt->total));
    CHECK(same_buffers(model_ops(m), o.m, o2.m, pt->total));
    CHECK(same_buffers(model_ops(m), o.v, o2.v, pt->total));
    CHECK_EQ_INT(o2.t, o.t);
    CHECK_EQ_INT(s.global_step, state0.global_step);
    CHECK_EQ_INT(s.optimizer_step, o.t);
    CHECK(s.consumed_samples == state0.consumed_samples);
    CHECK(s.seed == state0.seed);
    CHECK_EQ_INT(s.global_batch_size, state0.global_batch_size);
    CHECK_EQ_INT(s.micro_batch_size, state0.micro_batch_size);
    CHECK_EQ_MEM(&s.learning_rate, &state0.learning_rate, sizeof(double));

    /* a trailing slash names the same directory */
    {
        char slash[4500];

        snprintf(slash, sizeof(slash), "%s/", dir);
        CHECK_EQ_INT(
            ckpt_save(slash, m, &o, &state0, NULL, NULL, 0, err, sizeof(err)),
            0);
        CHECK_EQ_INT(count_files(root, &n_tmp), 2);
        CHECK_EQ_INT(n_tmp, 0);
        CHECK(!exists(path_of(dir, "vocab.txt")));
    }
    optim_release(&o);
    optim_release(&o2);
    model_free(m);
    model_free(m2);
}

static void
test_ckpt_roundtrip_ernie(void)
{
    roundtrip(MODEL_ERNIE, "ernie");
}

static void
test_ckpt_roundtrip_gpt(void)
{
    roundtrip(MODEL_GPT, "gpt");
}

static void
test_ckpt_keep_backup(void)
{
    const char *root = test_dir("backup");
    const char *dir = path_of(root, "model_last");
    const char *bak = path_of(root, "model_last_bak");
    int n_tmp;

    save_tiny(dir, MODEL_ERNIE, 16, 1, 1);
    CHECK(!exists(bak));
    save_tiny(dir, MODEL_ERNIE, 16, 2, 1);
    CHECK_EQ_INT(step_of(dir, MODEL_ERNIE, 16), 2);
    CHECK_EQ_INT(step_of(bak, MODEL_ERNIE, 16), 1);
    save_tiny(dir, MODEL_ERNIE, 16, 3, 1);
    CHECK_EQ_INT(step_of(dir, MODEL_ERNIE, 16), 3);
    CHECK_EQ_INT(step_of(bak, MODEL_ERNIE, 16), 2);
    /* without keep_backup the old one goes, an older backup stays */
    save_tiny(dir, MODEL_ERNIE, 16, 4, 0);
    CHECK_EQ_INT(step_of(dir, MODEL_ERNIE, 16), 4);
    CHECK_EQ_INT(step_of(bak, MODEL_ERNIE, 16), 2);
    CHECK_EQ_INT(count_files(root, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);
    CHECK_EQ_INT(count_files(dir, &n_tmp), 4); /* no vocab.txt */
    CHECK_EQ_INT(n_tmp, 0);
}

static void
test_ckpt_exists(void)
{
    const char *root = test_dir("exists");
    const char *dir = path_of(root, "c");

    CHECK_EQ_INT(ckpt_exists(dir), 0);
    CHECK_EQ_INT(ckpt_exists(root), 0);
    save_tiny(dir, MODEL_GPT, 16, 1, 0);
    CHECK_EQ_INT(ckpt_exists(dir), 1);
    unlink(path_of(dir, "config.json"));
    CHECK_EQ_INT(ckpt_exists(dir), 1);
    unlink(path_of(dir, "optimizer.safetensors"));
    CHECK_EQ_INT(ckpt_exists(dir), 0);
}

static void
test_ckpt_truncated_files(void)
{
    const char *root = test_dir("truncated");
    const char *dir = path_of(root, "c");
    static const char *const files[] = { "model.safetensors",
                                         "optimizer.safetensors" };

    for (int i = 0; i < 2; i++) {
        unsigned char *buf;
        size_t len;

        save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
        buf = read_file(path_of(dir, files[i]), &len);
        CHECK(buf != NULL && len > 100);
        write_file(path_of(dir, files[i]), buf, len / 2);
        CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, files[i]);
        write_file(path_of(dir, files[i]), buf, 5);
        CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, files[i]);
        free(buf);
        unlink(path_of(dir, files[i]));
        CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, files[i]);
    }
}

/* Rewrite dir/file without the tensor named drop, with the tensor named
 * reshape given a wrong shape, or with an extra tensor. */
static void
rewrite(const char *dir, const char *file, const char *drop,
        const char *reshape, int add_extra)
{
    char path[4500];
    struct st_file *f = NULL;
    struct st_err se;
    struct st_tensor *t;
    size_t n = 0;
    static const float one = 1.0f;

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    CHECK_EQ_INT(st_open(&f, path, &se), 0);
    if (f == NULL)
        return;
    t = calloc(st_count(f) + 1, sizeof(*t));
    for (size_t i = 0; i < st_count(f); i++) {
        const struct st_tensor *s = st_at(f, i);

        if (drop && strcmp(s->name, drop) == 0)
            continue;
        t[n] = *s;
        if (reshape && strcmp(s->name, reshape) == 0) {
            /* [a, b] -> [b, a], [a] -> [1, a]: same bytes, wrong shape */
            if (s->ndim == 2) {
                t[n].shape[0] = s->shape[1];
                t[n].shape[1] = s->shape[0];
            } else {
                t[n].ndim = 2;
                t[n].shape[1] = s->shape[0];
                t[n].shape[0] = 1;
            }
        }
        n++;
    }
    if (add_extra) {
        t[n].name = "ernie.encoder.layer.7.output.dense.bias";
        t[n].dtype = ST_F32;
        t[n].ndim = 1;
        t[n].shape[0] = 1;
        t[n].data = &one;
        t[n].nbytes = sizeof(one);
        n++;
    }
    /* st_write writes a temp file and renames it, so f's mapping stays */
    CHECK_EQ_INT(st_write(path, t, n, NULL, &se), 0);
    free(t);
    st_close(f);
}

static void
test_ckpt_tensor_mismatch(void)
{
    const char *root = test_dir("tensors");
    const char *dir = path_of(root, "c");
    const char *name = "ernie.encoder.layer.1.attention.self.key.weight";

    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    rewrite(dir, "model.safetensors", name, NULL, 0);
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "model.safetensors");
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, name);
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "missing");

    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    rewrite(dir, "model.safetensors", NULL, "ernie.pooler.dense.bias", 0);
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "'ernie.pooler.dense.bias'");
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "shape");

    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    rewrite(dir, "model.safetensors", NULL, NULL, 1);
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "model.safetensors");
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "1 tensor");

    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    rewrite(dir, "optimizer.safetensors",
            "exp_avg_sq.cls.predictions.transform.dense.weight", NULL, 0);
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "optimizer.safetensors");
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16,
                     "'exp_avg_sq.cls.predictions.transform.dense.weight'");

    /* binary_head is in no config.json: the pooler's and the SOP head's
     * tensors tell */
    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    for (int bh = 0; bh < 2; bh++) {
        struct model *m = tiny_model_bh(MODEL_ERNIE, 16, 3, 0), *m1;
        struct optimizer o;
        struct train_state s;
        char err[512] = "";

        if (bh == 1) { /* saved without the head, loaded with it */
            CHECK_EQ_INT(optim_create(&o, model_ops(m), model_table(m)), 0);
            CHECK_EQ_INT(
                ckpt_save(dir, m, &o, &state0, NULL, NULL, 0, err, sizeof(err)),
                0);
            optim_release(&o);
        }
        m1 = bh ? tiny_model(MODEL_ERNIE, 16, 3) : m;
        CHECK_EQ_INT(ckpt_load(dir, m1, NULL, &s, err, sizeof(err)), -1);
        CHECK_MSG_STR(err, "model.safetensors");
        CHECK_MSG_STR(err, bh ? "'ernie.pooler.dense.weight' is missing"
                              : "4 tensors");
        if (m1 != m)
            model_free(m1);
        model_free(m);
    }
}

static void
test_ckpt_config_mismatch(void)
{
    const char *root = test_dir("config");
    const char *dir = path_of(root, "c");

    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 32,
                     "was made for hidden_size 16, this run has 32");
    CHECK_LOAD_FAILS(dir, MODEL_GPT, 16, "model_type ernie, this run has gpt");
    /* without config.json the tensors' shapes still catch it */
    unlink(path_of(dir, "config.json"));
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 32, "model.safetensors");
    CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 32, "shape");
}

static void
test_ckpt_corrupt_state(void)
{
    static const struct {
        const char *text, *sub;
    } cases[] = {
        { "", "trainer_state.json" },
        { "{\"format\": \"erniekit-trainer-state\", \"version\": 1",
          "unexpected end" },
        { "[1, 2]", "not a JSON object" },
        { "{} {}", "at byte 3" },
        { "{\"format\": \"erniekit-trainer-state\", \"version\": 1} x",
          "at byte" },
        { "{\"format\": \"other\"}", "\"format\"" },
        { "{\"format\": \"erniekit-trainer-state\", \"version\": 2}",
          "version" },
        { "{\"format\": \"erniekit-trainer-state\", \"version\": \"1\"}",
          "version" },
    };
    /* A valid state with field k replaced by bad value v. */
    static const struct {
        const char *key, *value, *sub;
    } fields[] = {
        { "global_step", "-1", "\"global_step\" is negative" },
        { "global_step", "1.5", "\"global_step\" is not an integer" },
        { "global_step", "9223372036854775808", "out of range" },
        /* beyond 64 bits (json-c reads 2^64 - 1 and says nothing) */
        { "consumed_samples", "99999999999999999999",
          "\"consumed_samples\" is out of range" },
        { "seed", "18446744073709551616", "\"seed\" is out of range" },
        { "consumed_samples", "\"7\"", "\"consumed_samples\" is not" },
        { "optimizer_step", "null", "\"optimizer_step\" is not" },
        { "global_batch_size", "true", "\"global_batch_size\" is not" },
        { "micro_batch_size", "-8", "\"micro_batch_size\" is negative" },
        { "seed", "[]", "\"seed\" is not" },
        { "learning_rate", "\"0.1\"", "\"learning_rate\"" },
        { "learning_rate", "-0.5", "\"learning_rate\"" },
        { "args", "[]", "\"args\"" },
        { "model_type", "\"bert\"", "model_type bert, this run has ernie" },
        { "model_type", "3", "\"model_type\"" },
    };
    static const char *const keys[] = {
        "model_type",     "global_step",       "consumed_samples",
        "optimizer_step", "global_batch_size", "micro_batch_size",
        "seed",           "learning_rate",     "args",
    };
    static const char *const good[] = {
        "\"ernie\"", "3", "96", "3", "32", "8", "1234", "0.0001", "{}",
    };
    const char *root = test_dir("state");
    const char *dir = path_of(root, "c");
    const char *path = path_of(dir, "trainer_state.json");
    char text[2048];

    save_tiny(dir, MODEL_ERNIE, 16, 1, 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_file(path, cases[i].text, strlen(cases[i].text));
        CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, "trainer_state.json");
        CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, cases[i].sub);
    }
    /* each field bad, and each field missing */
    for (size_t i = 0; i <= sizeof(fields) / sizeof(fields[0]); i++)
        for (size_t drop = 0; drop <= sizeof(keys) / sizeof(keys[0]); drop++) {
            size_t n = (size_t)snprintf(
                text, sizeof(text),
                "{\"format\": \"erniekit-trainer-state\", \"version\": 1");
            int bad = i < sizeof(fields) / sizeof(fields[0]);

            if (bad && drop < sizeof(keys) / sizeof(keys[0]))
                continue; /* one fault at a time */
            for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
                const char *v = good[k];

                if (k == drop)
                    continue;
                if (bad && strcmp(keys[k], fields[i].key) == 0)
                    v = fields[i].value;
                n += (size_t)snprintf(text + n, sizeof(text) - n,
                                      ", \"%s\": %s", keys[k], v);
            }
            snprintf(text + n, sizeof(text) - n, "}\n");
            write_file(path, text, strlen(text));
            if (bad) {
                CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, fields[i].sub);
            } else if (drop < sizeof(keys) / sizeof(keys[0])) {
                CHECK_LOAD_FAILS(dir, MODEL_ERNIE, 16, keys[drop]);
            } else { /* nothing wrong: it loads */
                struct model *m = tiny_model(MODEL_ERNIE, 16, 3);
                struct train_state s;
                char err[512] = "";

                CHECK_EQ_INT(ckpt_load(dir, m, NULL, &s, err, sizeof(err)), 0);
                CHECK_EQ_STR(err, "");
                CHECK_EQ_INT(s.global_step, 3);
                CHECK(s.consumed_samples == 96 && s.seed == 1234);
                CHECK(s.learning_rate == 0.0001);
                model_free(m);
            }
        }
}

static void
test_ckpt_failed_save(void)
{
    const char *root = test_dir("failed");
    const char *dir = path_of(root, "c");
    const char *file = path_of(root, "plain");
    char bad_parent[4500], err[512];
    struct model *m = tiny_model(MODEL_GPT, 16, 1);
    struct optimizer o;
    int n_tmp;

    fake_steps(m, &o);
    /* the parent does not exist */
    snprintf(bad_parent, sizeof(bad_parent), "%s/no/such/dir", root);
    err[0] = '\0';
    CHECK_EQ_INT(
        ckpt_save(bad_parent, m, &o, &state0, NULL, NULL, 1, err, sizeof(err)),
        -1);
    CHECK_MSG_STR(err, "no/such/dir.tmp.");
    CHECK_MSG_STR(err, "No such file or directory");
    CHECK_EQ_INT(count_files(root, &n_tmp), 0);

    /* failures after the temp dir exists leave the old checkpoint */
    save_tiny(dir, MODEL_GPT, 16, 7, 1);
    CHECK_EQ_INT(ckpt_save(dir, m, &o, &state0, NULL,
                           path_of(root, "no-vocab.txt"), 1, err, sizeof(err)),
                 -1);
    CHECK_MSG_STR(err, "no-vocab.txt");
    CHECK_EQ_INT(
        ckpt_save(dir, m, &o, &state0, "[1]", NULL, 1, err, sizeof(err)), -1);
    CHECK_MSG_STR(err, "not a JSON object");
    CHECK_EQ_INT(
        ckpt_save(dir, m, &o, &state0, "{\"a\": ", NULL, 1, err, sizeof(err)),
        -1);
    CHECK_MSG_STR(err, "trainer_state.json");
    {
        struct train_state s = state0;

        s.global_step = -1;
        CHECK_EQ_INT(ckpt_save(dir, m, &o, &s, NULL, NULL, 1, err, sizeof(err)),
                     -1);
        CHECK_MSG_STR(err, "negative");
    }
    CHECK_EQ_INT(count_files(root, &n_tmp), 1);
    CHECK_EQ_INT(n_tmp, 0);
    CHECK_EQ_INT(step_of(dir, MODEL_GPT, 16), 7);
    CHECK(!exists(path_of(root, "c_bak")));

    /* dir is a file */
    write_file(file, "x", 1);
    CHECK_EQ_INT(
        ckpt_save(file, m, &o, &state0, NULL, NULL, 1, err, sizeof(err)), -1);
    CHECK_MSG_STR(err, "not a directory");
    CHECK_EQ_INT(count_files(root, &n_tmp), 2);
    CHECK_EQ_INT(n_tmp, 0);
    optim_release(&o);
    model_free(m);
}

/* The tensors of buffer buf (backend memory, laid out as pt) under
 * prefix + name as the writer's st_tensor entries, in Hugging Face's
 * layout, all in host memory at once (data in *host, freed by the
 * caller): the file the checkpoint writer wrote before it streamed. */
static struct st_tensor *
all_at_once(const struct param_table *pt, const struct ops *ops,
            const float *buf, const char *prefix, char *names, float **host)
{
    struct st_tensor *t = calloc(pt->n, sizeof(*t));
    float *h = malloc(pt->total * sizeof(float));
    float *tr = malloc(pt->total * sizeof(float));

    CHECK(t != NULL && h != NULL && tr != NULL);
    ops->download(h, buf, pt->total * sizeof(float));
    for (size_t i = 0; i < pt->n; i++) {
        const struct param_tensor *p = &pt->t[i];
        int64_t r = p->shape[0], c = p->shape[1];
        int64_t saved = params_rows_saved(p); /* no vocabulary pad rows */

        snprintf(names + i * 128, 128, "%s%s", prefix, p->name);
        t[i].name = names + i * 128;
        t[i].dtype = ST_F32;
        t[i].ndim = p->ndim;
        t[i].shape[0] = p->hf_transposed ? c : saved;
        t[i].shape[1] = p->hf_transposed ? r : c;
        t[i].data = h + p->offset;
        t[i].nbytes =
            (size_t)saved * (size_t)(p->ndim == 2 ? c : 1) * sizeof(float);
        if (p->hf_transposed) {
            for (int64_t y = 0; y < r; y++)
                for (int64_t x = 0; x < c; x++)
                    tr[p->offset + x * r + y] = h[p->offset + y * c + x];
            t[i].data = tr + p->offset;
        }
    }
    host[0] = h;
    host[1] = tr;
    return t;
}

/* A save streams the tensors one at a time: model.safetensors and
 * optimizer.safetensors are byte for byte the files of st_write() with
 * every tensor in memory at once, yet the save stages at most two of the
 * largest tensor in host memory (it and its transpose) and the load one,
 * for a GPT of 12 layers 20 times its largest tensor. */
static void
test_ckpt_streams(void)
{
    static const char *const meta[] = { "format", "pt", NULL };
    const char *dir = test_dir("streams");
    struct model_config c;
    struct model *m = NULL, *m2 = NULL;
    struct optimizer o, o2;
    struct train_state s = state0, s2;
    const struct param_table *pt;
    size_t largest = 0, len_a, len_b;
    char err[512] = "", *names = malloc(3 * 400 * 128);
    float *host[6];
    struct st_tensor *t[3], *both;
    unsigned char *a, *b;

    config_defaults(&c, MODEL_GPT);
    c.vocab_size = 40;
    c.hidden_size = 16;
    c.num_layers = 12;
    c.num_heads = 2;
    c.intermediate_size = 64;
    c.max_position = 16;
    CHECK(names != NULL);
    CHECK_EQ_INT(
        model_create(&m, &c, ops_cpu(1, OPS_F32), 2, 8, 0, err, sizeof(err)),
        0);
    CHECK_EQ_INT(model_init_params(m, 3), 0);
    fake_steps(m, &o);
    pt = model_table(m);
    for (size_t i = 0; i < pt->n; i++)
        largest = pt->t[i].numel > largest ? pt->t[i].numel : largest;
    largest *= sizeof(float);
    CHECK(pt->total * sizeof(float) > 20 * largest);

    CHECK_EQ_INT(ckpt_save(path_of(dir, "ck"), m, &o, &s, NULL, NULL, 0, err,
                           sizeof(err)),
                 0);
    CHECK(tr_stage_peak() > 0 && tr_stage_peak() <= 2 * largest);

    t[0] = all_at_once(pt, model_ops(m), model_params(m), "", names, host);
    t[1] = all_at_once(pt, model_ops(m), o.m, "exp_avg.", names + 400 * 128,
                       host + 2);
    t[2] = all_at_once(pt, model_ops(m), o.v, "exp_avg_sq.",
                       names + 2 * 400 * 128, host + 4);
    CHECK(pt->n <= 400);
    CHECK_EQ_INT(st_write(path_of(dir, "model.ref"), t[0], pt->n, meta, NULL),
                 0);
    both = calloc(2 * pt->n, sizeof(*both));
    CHECK(both != NULL);
    memcpy(both, t[1], pt->n * sizeof(*both));
    memcpy(both + pt->n, t[2], pt->n * sizeof(*both));
    CHECK_EQ_INT(
        st_write(path_of(dir, "optim.ref"), both, 2 * pt->n, meta, NULL), 0);
    a = read_file(path_of(dir, "model.ref"), &len_a);
    b = read_file(path_of(dir, "ck/model.safetensors"), &len_b);
    CHECK(a != NULL && b != NULL && len_a == len_b && len_a > 0 &&
          memcmp(a, b, len_a) == 0);
    free(a);
    free(b);
    a = read_file(path_of(dir, "optim.ref"), &len_a);
    b = read_file(path_of(dir, "ck/optimizer.safetensors"), &len_b);
    CHECK(a != NULL && b != NULL && len_a == len_b && len_a > 0 &&
          memcmp(a, b, len_a) == 0);
    free(a);
    free(b);

    /* Loading: the transposed tensors go through one buffer. */
    CHECK_EQ_INT(
        model_create(&m2, &c, ops_cpu(1, OPS_F32), 2, 8, 0, err, sizeof(err)),
        0);
    CHECK_EQ_INT(optim_create(&o2, model_ops(m2), model_table(m2)), 0);
    CHECK_EQ_INT(ckpt_load(path_of(dir, "ck"), m2, &o2, &s2, err, sizeof(err)),
                 0);
    CHECK(tr_stage_peak() > 0 && tr_stage_peak() <= largest);
    CHECK(same_buffers(model_ops(m), model_params(m), model_params(m2),
                       pt->total));
    CHECK(same_buffers(model_ops(m), o.m, o2.m, pt->total));
    CHECK(same_buffers(model_ops(m), o.v, o2.v, pt->total));
    CHECK_EQ_INT(o2.t, o.t);

    for (int k = 0; k < 3; k++)
        free(t[k]);
    for (int k = 0; k < 6; k++)
        free(host[k]);
    free(both);
    free(names);
    optim_release(&o);
    optim_release(&o2);
    model_free(m);
    model_free(m2);
}

/* Sharding's pieces: three optimizers owning ranges that cut tensors
 * (sizes 1/3 each, an empty one too) step the same bits as one owning the
 * whole table, given the summed norm; and a ranged optimizer is refused
 * by the checkpoint writer and reader. */
static void
test_optim_ranges(void)
{
    struct model *a = tiny_model(MODEL_GPT, 8, 5),
                 *b = tiny_model(MODEL_GPT, 8, 5);
    const struct param_table *pt = model_table(a);
    const struct ops *ops = model_ops(a);
    struct adamw_params ap = { 0.9, 0.999, 1e-8, 0.01, 0.5 };
    struct optimizer whole, part[4];
    size_t n = pt->total,
           off[5] = { 0, n / 3 + 1, n / 3 + 1, 2 * n / 3 + 7, n };
    float *g = malloc(n * sizeof(float));
    char err[256];
    uint64_t x = 7;

    CHECK(g != NULL);
    CHECK_EQ_INT(optim_create(&whole, ops, pt), 0);
    for (int k = 0; k < 4; k++)
        CHECK_EQ_INT(optim_create_range(&part[k], ops, pt, off[k], off[k + 1]),
                     0);
    for (int step = 0; step < 3; step++) {
        double ss = 0, norm;

        for (size_t i = 0; i < n; i++)
            g[i] = (float)((int64_t)(ops_splitmix64(x++) >> 40) - (1 << 23)) *
                   (1.0f / (1 << 23));
        ops->upload(model_grads(a), g, n * sizeof(float));
        ops->upload(model_grads(b), g, n * sizeof(float));
        CHECK_EQ_INT(optim_step(&whole, model_params(a),
                                model_compute_params(a), model_grads(a), 1e-3,
                                &ap, &norm),
                     0);
        /* (A ranged optimizer takes its range's buffers.  The CPU
         * backend's memory is the host's: ss is a backend buffer too.) */
        for (int k = 0; k < 4; k++)
            optim_grad_sumsq(&part[k], model_grads(b) + off[k], &ss);
        CHECK(fabs(sqrt(ss) - norm) <= 1e-12 * norm);
        for (int k = 0; k < 4; k++) {
            ops->upload(&part[k].st->sumsq, &ss, sizeof(ss));
            optim_prepare(&part[k], &ap, NULL);
            optim_apply(&part[k], model_params(b) + off[k],
                        (char *)model_compute_params(b) +
                            off[k] * ops_dtype_size(ops->dtype),
                        model_grads(b) + off[k], 1e-3, &ap);
        }
    }
    CHECK(same_buffers(ops, model_params(a), model_params(b), n));
    for (int k = 0; k < 4; k++)
        CHECK(same_buffers(ops, whole.m + off[k], part[k].m,
                           off[k + 1] - off[k]));
    {
        struct train_state st = state0;

        CHECK_EQ_INT(ckpt_save(path_of(test_dir("ranged"), "ck"), b, &part[1],
                               &st, NULL, NULL, 0, err, sizeof(err)),
                     -1);
        CHECK(strstr(err, "range") != NULL);
    }
    for (int k = 0; k < 4; k++)
        optim_release(&part[k]);
    optim_release(&whole);
    free(g);
    model_free(a);
    model_free(b);
}

/* model_state.pdparams: a protocol-4 pickle of a dict whose arrays' bytes
 * follow their opcodes as they are (tests/train/check_paddle.py reads it
 * with pickle, paddle.load and PaddleNLP); shapes and names checked, the
 * file never overwritten. */
static void
test_pdparams_write(void)
{
    const char *dir = test_dir("pdparams");
    float a[6] = { 0, 1, 2, 3, 4, 5 }, b[300];
    struct pd_tensor t[2] = { { "ernie.a.weight", 2, { 2, 3 }, a },
                              { "b", 1, { 300, 0 }, b } };
    char err[512] = "", *path = path_of(dir, "model_state.pdparams");
    unsigned char *f;
    size_t len;

    for (int i = 0; i < 300; i++)
        b[i] = (float)i / 7.0f;
    CHECK_EQ_INT(pdparams_write(path, t, 2, err, sizeof(err)), 0);
    f = read_file(path, &len);
    CHECK(f != NULL && len > 2 * 1200 / 2);
    if (f == NULL)
        return;
    /* PROTO 4, EMPTY_DICT, MARK ... SETITEMS, STOP */
    CHECK(f[0] == 0x80 && f[1] == 4 && f[2] == '}' && f[3] == '(');
    CHECK(f[len - 2] == 'u' && f[len - 1] == '.');
    /* Each name as SHORT_BINUNICODE, the data after SHORT_BINBYTES (24
     * bytes) and BINBYTES (1200, little-endian), in the order given. */
    {
        const unsigned char *n = memmem(f, len,
                                        "\x8c\x0e"
                                        "ernie.a.weight",
                                        16);
        const unsigned char *da = memmem(f, len, a, sizeof(a));
        const unsigned char *db = memmem(f, len, b, sizeof(b));

        CHECK(n != NULL && da != NULL && db != NULL && n < da && da < db);
        CHECK(da != NULL && da[-2] == 'C' && da[-1] == 24);
        CHECK(db != NULL && db[-5] == 'B' && db[-4] == 0xb0 && db[-3] == 4 &&
              db[-2] == 0 && db[-1] == 0);
    }
    free(f);
    CHECK_EQ_INT(pdparams_write(path, t, 2, err, sizeof(err)), -1);
    CHECK(strstr(err, "cannot create") != NULL);
    t[1].name = "ernie.a.weight";
    CHECK_EQ_INT(pdparams_write(path_of(dir, "dup"), t, 2, err, sizeof(err)),
                 -1);
    CHECK(strstr(err, "tensor 'ernie.a.weight' given twice") != NULL);
    CHECK(!exists(path_of(dir, "dup")));
    t[1].name = "b";
    t[1].ndim = 3;
    CHECK_EQ_INT(pdparams_write(path_of(dir, "3d"), t, 2, err, sizeof(err)),
                 -1);
    CHECK(strstr(err, "tensor 'b' has 3 dimensions") != NULL);
}

/* paddle_export: the files, the tensors of ERNIE (with and without the SOP
 * head) and GPT, an earlier export replaced only when asked, anything else
 * in the way never touched, and GPT-2's gelu_new refused. */
static void
test_paddle_export(void)
{
    const char *dir = test_dir("export");
    struct paddle_export_info info;
    char err[1024] = "";
    struct model *m;
    struct optimizer o;
    struct train_state s = state0;
    char src[4300], gpt[4300], dst[4300]; /* (path_of()'s buffers rotate) */

    snprintf(src, sizeof(src), "%s/ernie", dir);
    snprintf(gpt, sizeof(gpt), "%s/gpt", dir);
    snprintf(dst, sizeof(dst), "%s/pd", dir);
    m = tiny_model(MODEL_ERNIE, 8, 3);
    fake_steps(m, &o);
    CHECK_EQ_INT(ckpt_save(src, m, &o, &s, NULL, NULL, 0, err, sizeof(err)), 0);
    optim_release(&o);
    model_free(m);
    CHECK_EQ_INT(paddle_export(src, dst, 0, &info, err, sizeof(err)), 0);
    CHECK_EQ_STR(info.architecture, "ErnieForPretraining");
    /* 6 embeddings + 2 x 16 layers + 2 pooler + 7 MLM head + 2 SOP */
    CHECK_EQ_INT((int)info.n_tensors, 49);
    CHECK_EQ_INT(info.has_tokenizer, 0);
    CHECK(exists(path_of(dst, "model_state.pdparams")) &&
          exists(path_of(dst, "config.json")) &&
          !exists(path_of(dst, "vocab.txt")));
    CHECK_EQ_INT(paddle_export(src, dst, 0, &info, err, sizeof(err)), -1);
    CHECK(strstr(err, "is not empty (an earlier export: -f replaces it)"));
    CHECK_EQ_INT(paddle_export(src, dst, 1, &info, err, sizeof(err)), 0);
    /* A directory of something else is never replaced. */
    mkdir(path_of(dir, "keep"), 0777);
    write_file(path_of(dir, "keep/precious"), "x", 1);
    CHECK_EQ_INT(
        paddle_export(src, path_of(dir, "keep"), 1, &info, err, sizeof(err)),
        -1);
    CHECK(strstr(err, "exists and is not empty; give a new directory"));
    CHECK(exists(path_of(dir, "keep/precious")));
    /* Without the SOP head: ErnieForMaskedLM. */
    m = tiny_model_bh(MODEL_ERNIE, 8, 3, 0);
    fake_steps(m, &o);
    CHECK_EQ_INT(ckpt_save(path_of(dir, "mlm"), m, &o, &s, NULL, NULL, 0, err,
                           sizeof(err)),
                 0);
    optim_release(&o);
    model_free(m);
    CHECK_EQ_INT(paddle_export(path_of(dir, "mlm"), path_of(dir, "pd-mlm"), 0,
                               &info, err, sizeof(err)),
                 0);
    CHECK_EQ_STR(info.architecture, "ErnieForMaskedLM");
    CHECK_EQ_INT((int)info.n_tensors, 45);
    /* GPT-2 with its tanh GELU (the default): refused, nothing made. */
    m = tiny_model(MODEL_GPT, 8, 3);
    fake_steps(m, &o);
    CHECK_EQ_INT(ckpt_save(gpt, m, &o, &s, NULL, NULL, 0, err, sizeof(err)), 0);
    optim_release(&o);
    model_free(m);
    CHECK_EQ_INT(
        paddle_export(gpt, path_of(dir, "pd-gpt"), 0, &info, err, sizeof(err)),
        -1);
    CHECK(strstr(err, "the activation is the tanh GELU (gelu_new)") != NULL);
    CHECK(!exists(path_of(dir, "pd-gpt")));
    /* A missing tensor is named. */
    CHECK_EQ_INT(
        paddle_export(dir, path_of(dir, "pd-x"), 0, &info, err, sizeof(err)),
        -1);
    CHECK(strstr(err, "model.safetensors") != NULL);
}

TESTS(test_train_ckpt, TEST(test_ckpt_roundtrip_ernie),
      TEST(test_ckpt_roundtrip_gpt), TEST(test_ckpt_keep_backup),
      TEST(test_ckpt_exists), TEST(test_ckpt_truncated_files),
      TEST(test_ckpt_tensor_mismatch), TEST(test_ckpt_config_mismatch),
      TEST(test_ckpt_corrupt_state), TEST(test_ckpt_failed_save),
      TEST(test_optim_ranges), TEST(test_ckpt_streams),
      TEST(test_pdparams_write), TEST(test_paddle_export))
