/* SPDX-License-Identifier: MIT */
/*
 * setup.c: from the arguments to a run: the ranks and their groups, the
 * batch sizes, the model config, the vocabulary and tokenizer files, the
 * model in its parallel layout, the optimizer (over this rank's range:
 * zero/), the learning-rate schedule and the MFU peak; and the release of
 * it all at the end.
 */
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm.h"
#include "data/datasets.h"
#include "ds.h"
#include "log/events.h"
#include "log/peak.h"
#include "ops.h"
#include "step/step.h"
#include "tok.h"
#include "trainer.h"
#include "zero/zero.h"

int
launcher_rank(void)
{
    /* mpirun's, srun's with PMIx or PMI, torchrun's, srun's. */
    static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                        "PMI_RANK", "RANK", "SLURM_PROCID" };

    for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++) {
        const char *v = getenv(vars[i]);

        if (v == NULL || (i == 3 && getenv("WORLD_SIZE") == NULL) ||
            (i == 4 && getenv("SLURM_STEP_ID") == NULL))
            continue;
        return (int)strtol(v, NULL, 10);
    }
    return 0;
}

/* The ranks: one when started plainly; MPI under mpirun (or srun with
 * PMIx); TCP sockets where srun or torchrun started them without MPI
 * (comm_launch_env()); each cut into the layout's groups. */
static void
setup_comm(struct run *r)
{
    const struct train_args *a = &r->a;
    struct comm_layout l = { a->tp, a->sharding_degree, a->dp, a->pp,
                             strcmp(a->placement, "intra_first") == 0
                                 ? COMM_INTRA_FIRST
                                 : COMM_INTER_FIRST };
    struct comm_launch env;
    char err[1024];
    int rc, usage, by_mpi = comm_launched_by_mpi();

    g_rank = launcher_rank(); /* until the communicator says */
    rc = by_mpi ? 0 : comm_launch_env(&env, err, sizeof(err));
    if (rc < 0)
        usage_error("%s", err);
    /* The CPU communicator; a GPU one over it once the backend is open. */
    switch (comm_select(by_mpi, rc > 0, rc > 0 ? env.world : 1, -1,
                        COMM_BACKEND_AUTO)) {
    case COMM_KIND_MPI:
        r->comm = comm_mpi(NULL, NULL, &l, a->comm_timeout, err, sizeof(err));
        if (r->comm == NULL)
            usage_error("%s", err);
        break;
    case COMM_KIND_TCP:
        g_world = env.world;
        r->comm = comm_tcp(&env, &l, a->comm_timeout, &usage, err, sizeof(err));
        if (r->comm == NULL && usage)
            usage_error("%s", err);
        if (r->comm == NULL)
            fatal("%s", err);
        break;
    default: {
        int want = a->tp * a->pp * a->sharding_degree * (a->dp ? a->dp : 1);

        if (want != 1)
            usage_error("this layout needs %d ranks: start it with mpirun "
                        "-np %d, srun -n %d or torchrun --nproc-per-node %d "
                        "--no-python (or make train NP=%d)",
                        want, want, want, want, want);
        r->comm = comm_single();
    }
    }
    g_rank = r->comm->rank;
    g_world = r->comm->world;
    if (r->comm->note[0] != '\0')
        log_info("%s", r->comm->note);
    r->dp = r->comm->group_size(r->comm, COMM_DP);
    r->dp_rank = r->comm->group_rank(r->comm, COMM_DP);
    r->sh = r->comm->group_size(r->comm, COMM_SHARDING);
    r->sh_rank = r->comm->group_rank(r->comm, COMM_SHARDING);
    r->tp = r->comm->group_size(r->comm, COMM_TP);
    r->tp_rank = r->comm->group_rank(r->comm, COMM_TP);
    r->pp = r->comm->group_size(r->comm, COMM_PP);
    r->pp_rank = r->comm->group_rank(r->comm, COMM_PP);
    r->replicas = r->dp * r->sh;
    r->replica = r->sh_rank + r->sh * r->dp_rank;
}

static void
model_config_from_args(struct model_config *c, const struct train_args *a,
                       const char *config_path)
{
    struct config_err ce;

    config_defaults(c, strcmp(a->model_type, "gpt") == 0 ? MODEL_GPT
                                                         : MODEL_ERNIE);
    if (config_read_json(c, config_path, &ce) < 0)
        fatal("%s", ce.msg);
    if (a->hidden_dropout_prob >= 0) {
        c->hidden_dropout = (float)a->hidden_dropout_prob;
        c->embedding_dropout = (float)a->hidden_dropout_prob;
    }
    if (a->attention_probs_dropout_prob >= 0)
        c->attention_dropout = (float)a->attention_probs_dropout_prob;
    if (a->check_accuracy)
        c->hidden_dropout = c->attention_dropout = c->embedding_dropout = 0;
    c->binary_head = c->type == MODEL_ERNIE ? a->binary_head : 0;
    if (config_check(c, &ce) < 0)
        fatal("%s: %s", config_path, ce.msg);
}

/* The model's tensor-parallel all-reduce, over COMM_TP. */
static void
tp_all_reduce(void *ctx, void *buf, size_t n, enum model_reduce how)
{
    struct comm *c = ((struct run *)ctx)->comm;
    int rc = how == MODEL_MAX_F32
                 ? c->all_reduce_max(c, buf, n, COMM_F32, COMM_TP)
                 : c->all_reduce_sum(c, buf, n,
                                     how == MODEL_SUM_F64 ? COMM_F64 : COMM_F32,
                                     COMM_TP);

    if (rc < 0)
        fatal("tensor parallel: %s", c->error);
}

/* Whether path is a directory holding name. */
static int
dir_has(const char *path, const char *name)
{
    struct stat st;
    char *f;
    int yes;

    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    if (asprintf(&f, "%s/%s", path, name) < 0)
        fatal("out of memory");
    yes = access(f, F_OK) == 0;
    free(f);
    return yes;
}

/* The tokenizer files every checkpoint carries (hf_tokenizer.h): ERNIE's
 * vocabulary; GPT's byte-level BPE from --tokenizer_name_or_path or the
 * model's directory, whose "<|endoftext|>" is also the config's bos and
 * eos token. */
static void
tokenizer_files(struct run *r)
{
    const struct train_args *a = &r->a;
    struct model_config *c = &r->cfg;
    const char *bpe = a->tokenizer_name_or_path;
    char err[1024];

    if (c->type == MODEL_ERNIE) {
        if (hf_tokenizer_wordpiece(&r->tok, r->vocab_path, c->max_position, err,
                                   sizeof(err)) < 0)
            fatal("%s", err);
        return;
    }
    if (bpe == NULL && dir_has(a->model_name_or_path, "vocab.json"))
        bpe = a->model_name_or_path;
    if (bpe == NULL) {
        log_info("no tokenizer (give --tokenizer_name_or_path, the "
                 "directory of vocab.json and merges.txt): the checkpoints "
                 "will have no tokenizer files");
    } else {
        if (hf_tokenizer_bpe(&r->tok, bpe, c->max_position, err, sizeof(err)) <
            0)
            fatal("%s", err);
        if (r->tok.n_tokens > (size_t)c->vocab_size)
            fatal("vocab '%s' has %zu tokens but the model config '%s' only "
                  "%d (vocab_size)",
                  r->tok.files[0].src, r->tok.n_tokens, r->config_path,
                  c->vocab_size);
        if (r->tok.eos_id >= 0)
            c->bos_token_id = c->eos_token_id = r->tok.eos_id;
    }
    /* An id outside the vocabulary (GPT-2's 50256 in a small model's
     * config) is no token: written null. */
    if (c->bos_token_id >= c->vocab_size)
        c->bos_token_id = -1;
    if (c->eos_token_id >= c->vocab_size)
        c->eos_token_id = -1;
}

/* The compute backend, chosen by ops_open() from --device, in the compute
 * dtype, on this rank's GPU (its local rank); before anything is built,
 * so that a --device cuda without CUDA or a GPU is said at once.  On
 * several ranks the communicator then moves to the backend's memory
 * (comm_select()): NCCL, given the GPU and its queue, takes over the CPU
 * communicator; --comm_backend host wraps it instead, every collective
 * staged through host memory. */
static void
open_backend(struct run *r)
{
    const struct train_args *a = &r->a;
    struct ops_request rq;
    enum comm_kind kind;
    enum comm_backend want = comm_backend_parse(a->comm_backend);
    char err[1024];

    rq.device = a->device;
    rq.dtype = !a->use_amp                            ? OPS_F32
               : strcmp(a->amp_dtype, "float16") == 0 ? OPS_F16
                                                      : OPS_BF16;
    rq.local_rank = r->comm->local_rank;
    rq.threads = a->threads;
    rq.deterministic = 1;
    rq.tf32 = 0;
    r->ops = ops_open(&rq, r->device_why, sizeof(r->device_why));
    if (r->ops == NULL)
        fatal("%s", r->device_why);
    if (want == COMM_BACKEND_NCCL && r->ops->device < 0)
        usage_error("--comm_backend nccl needs a GPU (--device %s runs on "
                    "the CPU): give --device cuda, or --comm_backend auto",
                    a->device);
    kind = comm_select(strcmp(r->comm->name, "mpi") == 0,
                       strcmp(r->comm->name, "tcp") == 0, g_world,
                       r->ops->device, want);
    if (kind == COMM_KIND_NCCL_MPI || kind == COMM_KIND_NCCL_TCP) {
        /* Every group over NCCL, on this rank's GPU, after the compute
         * stream; the CPU communicator carries its unique id. */
        struct comm *nccl = comm_nccl(r->comm, r->ops->device, r->ops->queue(),
                                      a->comm_timeout, err, sizeof(err));

        /* (On failure the CPU one is left undestroyed: fatal() exits, and
         * the other ranks learn of it when its connections close.) */
        if (nccl == NULL)
            fatal("--device %s: %s", a->device, err);
        r->comm = nccl;
        log_info("%d ranks on GPUs: %s", g_world, comm_kind_name(kind));
    } else if (kind == COMM_KIND_STAGED) {
        struct comm_copy copy = { r->ops->download, r->ops->upload,
                                  r->ops->error };
        struct comm *staged = comm_staged(r->comm, &copy, err, sizeof(err));

        if (staged == NULL)
            fatal("--comm_backend host: %s", err);
        r->comm = staged;
    }
}

/* A step's scalars in backend memory (run.h): the collectives' buffer,
 * the norm's NaN check, the losses of a logging interval (read early past
 * 4096 micro-batches). */
static void
step_scalars(struct run *r)
{
    struct ops_step nc;
    size_t n = (size_t)r->a.logging_freq * (size_t)r->accumulate;

    r->scalars = r->ops->alloc(RUN_SCALARS * sizeof(double), "scalars");
    r->norm_check = r->ops->alloc(sizeof(*r->norm_check), "scalars");
    if (r->scalars == NULL || r->norm_check == NULL)
        fatal("%s", r->ops->error());
    memset(&nc, 0, sizeof(nc));
    nc.bad_step = -1;
    r->ops->upload(r->norm_check, &nc, sizeof(nc));
    loss_sums_init(r, &r->train_losses, n < 4096 ? n : 4096);
    /* float16: the loss is scaled (Paddle's GradScaler, as PaddleNLP
     * builds it from --scale_loss); bfloat16's range needs none. */
    if (r->ops->dtype == OPS_F16) {
        const struct train_args *a = &r->a;
        struct ops_step st;

        r->loss_scale = &r->opt.st->loss_scale;
        r->scaling.dynamic = a->use_dynamic_loss_scaling;
        r->scaling.incr_every = a->incr_every_n_steps;
        r->scaling.incr_ratio = (float)a->incr_ratio;
        r->scaling.decr_every = a->decr_every_n_nan_or_inf;
        r->scaling.decr_ratio = (float)a->decr_ratio;
        r->scaling.min_scale = 1.0f; /* (Paddle's update_loss_scaling op) */
        if (optim_state_get(&r->opt, &st) < 0)
            fatal("%s", r->ops->error());
        st.loss_scale = (float)a->scale_loss;
        optim_state_set(&r->opt, &st);
    }
}

void
setup(struct run *r)
{
    const struct train_args *a = &r->a;
    char err[1024];
    const struct ops *op;

    setup_comm(r);
    /* The flags' own ranges were checked as they were read (cli/args.c). */
    {
        long long per_step = (long long)a->micro_batch_size * r->replicas;

        if (a->gradient_accumulation_steps > 0 && a->global_batch_size > 0 &&
            a->global_batch_size != per_step * a->gradient_accumulation_steps)
            usage_error("--global_batch_size %d and "
                        "--gradient_accumulation_steps %d disagree: %d "
                        "accumulation steps of micro_batch_size %d x dp %d x "
                        "sharding %d make %lld",
                        a->global_batch_size, a->gradient_accumulation_steps,
                        a->gradient_accumulation_steps, a->micro_batch_size,
                        r->dp, r->sh,
                        per_step * a->gradient_accumulation_steps);
        if (per_step * (a->gradient_accumulation_steps > 0
                            ? a->gradient_accumulation_steps
                            : 1) >
            INT_MAX)
            usage_error("--micro_batch_size %d x %d ranks x %d accumulation "
                        "steps is too large",
                        a->micro_batch_size, r->replicas,
                        a->gradient_accumulation_steps);
        r->gbs = a->global_batch_size ? a->global_batch_size
                 : a->gradient_accumulation_steps > 0
                     ? (int)(per_step * a->gradient_accumulation_steps)
                     : (int)per_step;
    }
    if (r->gbs % (a->micro_batch_size * r->replicas))
        usage_error("global_batch_size %d is not a multiple of "
                    "micro_batch_size %d x dp %d x sharding %d",
                    r->gbs, a->micro_batch_size, r->dp, r->sh);
    r->accumulate = r->gbs / (a->micro_batch_size * r->replicas);
    open_backend(r);
    if (events_parse_targets(a->report_to, &r->event_targets, err,
                             sizeof(err)) < 0)
        usage_error("%s", err);

    r->config_path = file_in(
        a->config_name ? a->config_name : a->model_name_or_path, "config.json");
    model_config_from_args(&r->cfg, a, r->config_path);
    if (r->cfg.type == MODEL_ERNIE) {
        r->vocab_path =
            file_in(a->tokenizer_name_or_path ? a->tokenizer_name_or_path
                                              : a->model_name_or_path,
                    "vocab.txt");
        vocab_open(&r->vocab, r->vocab_path);
        if (r->vocab.n_base > (size_t)r->cfg.vocab_size)
            fatal("vocab '%s' has %zu tokens but the model config '%s' only "
                  "%d (vocab_size)",
                  r->vocab_path, r->vocab.n_base, r->config_path,
                  r->cfg.vocab_size);
    }
    tokenizer_files(r);
    if (a->max_seq_len > r->cfg.max_position)
        fatal("--max_seq_len %d exceeds the model's %d positions (%s)",
              a->max_seq_len, r->cfg.max_position, r->config_path);
    check_data_meta(r);
    /* The other paths, before a byte of the model is built. */
    check_paths(r);

    op = r->ops;
    {
        int sharded = r->sh > 1 ? a->sharding_stage : 0;
        /* Stages 2 and 3 hold their ranges, not the flat buffers (zero/). */
        struct model_par par = { { r->tp, r->tp_rank, tp_all_reduce, r },
                                 r->pp,
                                 r->pp_rank,
                                 1,
                                 sharded >= 2,
                                 sharded == 3 };

        /* 1F1B holds the activations of up to pp - stage micro-batches. */
        if (r->pp > 1)
            par.slots = r->pp - r->pp_rank < r->accumulate ? r->pp - r->pp_rank
                                                           : r->accumulate;
        r->slots = par.slots;
        if (r->pp > r->cfg.num_layers)
            usage_error("--pp %d: the model has only %d layers (%s); each "
                        "pipeline stage needs at least one",
                        r->pp, r->cfg.num_layers, r->config_path);

        if (r->tp > 1 &&
            (r->cfg.num_heads % r->tp || r->cfg.intermediate_size % r->tp))
            usage_error("--tp %d must divide the model's attention heads (%d) "
                        "and intermediate size (%d) (%s)",
                        r->tp, r->cfg.num_heads, r->cfg.intermediate_size,
                        r->config_path);
        if (model_create_par(&r->m, &r->cfg, op, a->micro_batch_size,
                             a->max_seq_len,
                             r->cfg.type == MODEL_ERNIE ? max_masked(a) : 0,
                             !a->use_recompute ? RECOMPUTE_NONE
                             : strcmp(a->recompute_granularity, "full") == 0
                                 ? RECOMPUTE_FULL
                                 : RECOMPUTE_CORE_ATTN,
                             &par, err, sizeof(err)) < 0)
            fatal("%s", err);
    }
    {
        /* The word embeddings (first stage) or their copy (last): the
         * tied pair whose gradients the embedding group sums. */
        const struct param_table *pt = model_table(r->m);

        for (size_t i = 0; i < pt->n; i++)
            if (pt->t[i].tp == TP_VOCAB && pt->t[i].ndim == 2) {
                r->tied_off = pt->t[i].offset;
                r->tied_n = pt->t[i].numel;
                break;
            }
    }
    zero_setup(r);
    step_scalars(r);
    r->lr.kind = strcmp(a->lr_decay_style, "cosine") == 0   ? LR_COSINE
                 : strcmp(a->lr_decay_style, "linear") == 0 ? LR_LINEAR
                 : r->cfg.type == MODEL_GPT                 ? LR_COSINE
                                                            : LR_LINEAR;
    r->lr.max_lr = a->max_lr;
    r->lr.min_lr = a->min_lr;
    r->lr.warmup_steps = a->warmup_steps > 0 ? (double)a->warmup_steps
                                             : a->warmup_rate * a->max_steps;
    r->lr.decay_steps = a->decay_steps ? a->decay_steps : a->max_steps;
    r->adam.beta1 = a->adam_beta1;
    r->adam.beta2 = a->adam_beta2;
    r->adam.eps = a->adam_epsilon;
    r->adam.weight_decay = a->weight_decay;
    r->adam.grad_clip = a->grad_clip;
    r->peak_gflops = a->peak_gflops;
    r->ops->device_info(&r->dev);
    if (r->peak_gflops > 0)
        return;
    /* The device's peak from its description (the same every run), not a
     * timing. */
    if (r->ops->device >= 0) {
        /* 0 if unknown: no MFU, said at the start. */
        if (peak_gpu(r->dev.name, r->dev.cc, r->dev.sms, r->dev.clock_khz,
                     r->ops->dtype, r->dev.tf32, &r->gpu_peak) == 0)
            r->peak_gflops = r->gpu_peak.tflops * 1e3;
    } else {
        if (peak_cpu(omp_get_max_threads(), &r->cpu_peak) < 0)
            fatal("cannot tell this CPU's peak from /proc/cpuinfo: give "
                  "--peak_gflops");
        r->peak_gflops = r->cpu_peak.gflops;
    }
}

void
run_release(struct run *r)
{
    if (r->jsonl)
        fclose(r->jsonl);
    events_close(r->events);
    loader_free(r->train);
    loader_free(r->valid);
    optim_release(&r->opt);
    zero_release(r);
    loss_sums_release(r, &r->train_losses);
    if (r->ops) {
        r->ops->release(r->scalars);
        r->ops->release(r->norm_check);
    }
    model_free(r->m);
    ds_corpus_close(r->corpus);
    free(r->args_json);
    tok_vocab_free(r->vocab.v);
    free(r->vocab.tokens);
    free(r->vocab_path);
    hf_tokenizer_release(&r->tok);
    free(r->config_path);
    args_release(&r->a);
    r->comm->destroy(r->comm);
}
