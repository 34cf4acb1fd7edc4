/* SPDX-License-Identifier: MIT */
/*
 * drv_train.c: the C side of tests/conformance/train_torch_run.py, which
 * checks the trainer's model and optimizer against PyTorch (transformers'
 * ErnieForPreTraining and GPT2LMHeadModel).
 *
 *   drv_train init CONFIG.json SEED OUT.safetensors
 *       initialise a model from a Hugging Face config and write its
 *       weights under Hugging Face names
 *   drv_train run CONFIG.json WEIGHTS BATCH OUT [--steps N] [--max-lr X]
 *       [--min-lr X] [--warmup-steps W] [--decay-steps D]
 *       [--schedule linear|cosine] [--weight-decay X] [--grad-clip X]
 *       [--beta1 X] [--beta2 X] [--eps X] [--threads N]
 *       [--device cpu|cuda]
 *       load WEIGHTS, compute loss and gradients on BATCH (dropout off),
 *       then N AdamW steps on it, on the CPU or (--device cuda) the GPU in
 *       float32 with TF32 off; OUT holds loss, lm_loss, sop_loss,
 *       grad.<name>, losses [N] and param.<name>
 */
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/model.h"
#include "ops.h"
#include "optim/optim.h"
#include "ckpt/safetensors.h"
#include "ckpt/weights.h"

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "drv_train: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void
read_config(const char *path, struct model_config *c)
{
    struct json_object *j = json_object_from_file(path), *mt;
    struct config_err ce;
    enum model_type type = MODEL_ERNIE;

    if (j == NULL)
        die("cannot read %s", path);
    if (json_object_object_get_ex(j, "model_type", &mt) &&
        strcmp(json_object_get_string(mt), "gpt2") == 0)
        type = MODEL_GPT;
    json_object_put(j);
    config_defaults(c, type);
    if (config_read_json(c, path, &ce) < 0)
        die("%s", ce.msg);
}

static const int32_t *
i32(const struct st_file *f, const char *name, size_t want, int *n_out)
{
    const struct st_tensor *t = st_find(f, name);
    size_t n = 1;

    if (t == NULL || t->dtype != ST_I32)
        die("batch: no I32 tensor '%s'", name);
    for (int i = 0; i < t->ndim; i++)
        n *= (size_t)t->shape[i];
    if (want && n != want)
        die("batch: '%s' has the wrong size", name);
    if (n_out)
        *n_out = (int)n;
    return t->data;
}

static int
cmd_init(int argc, char **argv)
{
    struct model_config c;
    struct model *m;
    struct st_err se;
    char err[256];

    if (argc != 5)
        die("usage: %s init CONFIG SEED OUT", argv[0]);
    read_config(argv[2], &c);
    if (model_create(&m, &c, ops_cpu(0, OPS_F32), 1, 1, 1, err, sizeof(err)) <
        0)
        die("%s", err);
    if (model_init_params(m, strtoull(argv[3], NULL, 10)) < 0)
        die("%s", "out of memory");
    if (weights_save_buffer(model_table(m), model_ops(m), model_params(m), "",
                            argv[4], NULL, 0, NULL, &se) < 0)
        die("%s", se.msg);
    model_free(m);
    return 0;
}

static double
opt(int argc, char **argv, const char *name, double dflt)
{
    for (int i = 6; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return strtod(argv[i + 1], NULL);
    return dflt;
}

/* The losses of a forward of b (their sums through backend memory). */
static void
forward(struct model *m, const struct batch *b, const struct forward_opts *fo,
        struct losses *L)
{
    const struct ops *op = model_ops(m);
    double *sums = op->alloc(2 * sizeof(double), "losses"), host[2];
    char err[256];

    if (sums == NULL)
        die("%s", op->error());
    if (model_forward(m, b, fo, sums, err, sizeof(err)) < 0)
        die("%s", err);
    if (op->download(host, sums, sizeof(host)) < 0)
        die("%s", op->error());
    model_losses(m, b->B, b->T, b->M, host, L);
    op->release(sums);
}

/* The backend of `run`: --device cpu (the default) or cuda, in float32
 * with TF32 off and deterministic algorithms (the tolerances of
 * train_torch_run.py are fp32's). */
static const struct ops *
open_backend(int argc, char **argv)
{
    struct ops_request r;
    const struct ops *op;
    char err[512];

    memset(&r, 0, sizeof(r));
    r.device = "cpu";
    for (int i = 6; i + 1 < argc; i++)
        if (strcmp(argv[i], "--device") == 0)
            r.device = argv[i + 1];
    r.dtype = OPS_F32;
    r.threads = (int)opt(argc, argv, "--threads", 0);
    r.deterministic = 1;
    r.tf32 = 0;
    op = ops_open(&r, err, sizeof(err));
    if (op == NULL)
        die("%s", err);
    return op;
}

static int
cmd_run(int argc, char **argv)
{
    struct model_config c;
    struct model *m;
    struct st_file *wf, *bf;
    struct st_err se;
    struct batch b;
    struct losses L;
    struct forward_opts fo = { 0, 0, 1.0f, NULL };
    struct optimizer o;
    struct lr_params lp;
    struct adamw_params ap;
    const struct st_tensor *ids;
    char err[256];
    int steps, M = 0;
    float *losses, scal[3];
    const struct ops *op;

    if (argc < 6)
        die("usage: %s run CONFIG WEIGHTS BATCH OUT [options]", argv[0]);
    read_config(argv[2], &c);
    op = open_backend(argc, argv);
    steps = (int)opt(argc, argv, "--steps", 0);
    lp.kind = LR_LINEAR;
    for (int i = 6; i + 1 < argc; i++)
        if (strcmp(argv[i], "--schedule") == 0)
            lp.kind =
                strcmp(argv[i + 1], "cosine") == 0 ? LR_COSINE : LR_LINEAR;
    lp.max_lr = opt(argc, argv, "--max-lr", 1e-3);
    lp.min_lr = opt(argc, argv, "--min-lr", 0);
    lp.warmup_steps = opt(argc, argv, "--warmup-steps", 0);
    lp.decay_steps = opt(argc, argv, "--decay-steps", steps);
    ap.beta1 = opt(argc, argv, "--beta1", 0.9);
    ap.beta2 = opt(argc, argv, "--beta2", 0.999);
    ap.eps = opt(argc, argv, "--eps", 1e-8);
    ap.weight_decay = opt(argc, argv, "--weight-decay", 0);
    ap.grad_clip = opt(argc, argv, "--grad-clip", 0);

    if (st_open(&bf, argv[4], &se) < 0)
        die("%s", se.msg);
    ids = st_find(bf, "input_ids");
    if (ids == NULL || ids->ndim != 2)
        die("%s: no input_ids [B, T]", argv[4]);
    memset(&b, 0, sizeof(b));
    b.B = (int)ids->shape[0];
    b.T = (int)ids->shape[1];
    b.input_ids = i32(bf, "input_ids", 0, NULL);
    if (c.type == MODEL_GPT) {
        b.labels = i32(bf, "labels", (size_t)b.B * b.T, NULL);
    } else {
        b.token_type_ids = i32(bf, "token_type_ids", (size_t)b.B * b.T, NULL);
        b.attention_mask = i32(bf, "attention_mask", (size_t)b.B * b.T, NULL);
        b.masked_positions = i32(bf, "masked_positions", 0, &M);
        b.masked_labels = i32(bf, "masked_labels", (size_t)M, NULL);
        b.M = M;
        if (c.binary_head)
            b.sop_labels = i32(bf, "sop_labels", (size_t)b.B, NULL);
    }
    if (model_create(&m, &c, op, b.B, b.T, M, err, sizeof(err)) < 0)
        die("%s", err);
    if (st_open(&wf, argv[3], &se) < 0)
        die("%s", se.msg);
    if (weights_load_buffer(model_table(m), op, model_params(m), "", wf, NULL,
                            &se) < 0)
        die("%s", se.msg);
    st_close(wf);
    model_params_changed(m, 0, model_table(m)->total);

    model_zero_grad(m);
    forward(m, &b, &fo, &L);
    model_backward(m);
    scal[0] = (float)L.loss;
    scal[1] = (float)L.lm_loss;
    scal[2] = (float)L.sop_loss;

    losses = calloc((size_t)(steps > 0 ? steps : 1), sizeof(float));
    if (losses == NULL || optim_create(&o, op, model_table(m)) < 0)
        die("%s", "out of memory");
    {
        /* Save the first gradients before the steps overwrite them. */
        char gpath[4096];

        snprintf(gpath, sizeof(gpath), "%s.grads", argv[5]);
        if (weights_save_buffer(model_table(m), op, model_grads(m), "grad.",
                                gpath, NULL, 0, NULL, &se) < 0)
            die("%s", se.msg);
    }
    for (int s = 0; s < steps; s++) {
        if (s > 0) {
            model_zero_grad(m);
            forward(m, &b, &fo, &L);
            model_backward(m);
        }
        losses[s] = (float)L.loss;
        if (optim_step(&o, model_params(m), model_compute_params(m),
                       model_grads(m), lr_at(&lp, s + 1), &ap, NULL) < 0)
            die("%s", "gradient norm is not finite");
    }
    {
        /* OUT = scalars + grads (from the side file) + losses + params. */
        struct st_file *gf;
        size_t ng, n = 0;
        struct st_tensor *extra;
        char gpath[4096];

        snprintf(gpath, sizeof(gpath), "%s.grads", argv[5]);
        if (st_open(&gf, gpath, &se) < 0)
            die("%s", se.msg);
        ng = st_count(gf);
        extra = calloc(ng + 4, sizeof(*extra));
        if (extra == NULL)
            die("%s", "out of memory");
        {
            static const char *const sn[3] = { "loss", "lm_loss", "sop_loss" };
            for (int i = 0; i < 3; i++) {
                extra[n].name = sn[i];
                extra[n].dtype = ST_F32;
                extra[n].ndim = 1;
                extra[n].shape[0] = 1;
                extra[n].data = &scal[i];
                extra[n].nbytes = sizeof(float);
                n++;
            }
        }
        extra[n].name = "losses";
        extra[n].dtype = ST_F32;
        extra[n].ndim = 1;
        extra[n].shape[0] = steps;
        extra[n].data = losses;
        extra[n].nbytes = (size_t)steps * sizeof(float);
        n++;
        for (size_t i = 0; i < ng; i++)
            extra[n++] = *st_at(gf, i);
        if (weights_save_buffer(model_table(m), op, model_params(m), "param.",
                                argv[5], extra, n, NULL, &se) < 0)
            die("%s", se.msg);
        st_close(gf);
        remove(gpath);
        free(extra);
    }
    free(losses);
    optim_release(&o);
    model_free(m);
    st_close(bf);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "init") == 0)
        return cmd_init(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return cmd_run(argc, argv);
    fprintf(stderr, "usage: drv_train init|run ...\n");
    return 2;
}
