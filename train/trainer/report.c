/* SPDX-License-Identifier: MIT */
/*
 * report.c: what the run says about itself: its layout and memory at the
 * start, a line every logging_freq steps (losses, speed, MFU against the
 * peak, ETA) with its records in train_log.jsonl and the event files
 * (TensorBoard, VisualDL), and the scalars of evaluations.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "log/events.h"
#include "log/runlog.h"
#include "trainer.h"

/* ------------------------------------------------------------------------ */
/* At the start                                                              */

static void
log_peak(const struct run *r)
{
    const struct cpu_peak *p = &r->cpu_peak;

    const struct gpu_peak *g = &r->gpu_peak;
    const char *dt = r->ops->dtype == OPS_BF16  ? "bfloat16"
                     : r->ops->dtype == OPS_F16 ? "float16"
                     : r->dev.tf32              ? "TF32"
                                                : "float32";

    if (r->a.peak_gflops > 0)
        log_info("MFU peak: %.1f GFLOP/s (--peak_gflops)", r->peak_gflops);
    else if (r->ops->device >= 0 && r->peak_gflops <= 0)
        log_info("MFU peak: unknown for %s (compute capability %d.%d): no "
                 "MFU; --peak_gflops sets one",
                 r->dev.name, r->dev.cc / 10, r->dev.cc % 10);
    else if (r->ops->device >= 0)
        log_info("MFU peak: %.1f TFLOP/s, the %s's dense %s peak: %d SMs x "
                 "%.3f GHz (%s) x %d FLOPs a cycle (%s); --peak_gflops "
                 "sets another",
                 g->tflops, r->dev.name, dt, g->sms, g->ghz, g->clock_from,
                 g->flops_per_cycle, g->unit);
    else
        log_info("MFU peak: %.1f GFLOP/s, this CPU's FP32 peak: %d core(s) x "
                 "%.3f GHz (%s) x %d FLOPs a cycle (%s); --peak_gflops "
                 "sets another",
                 r->peak_gflops, p->cores, p->ghz, p->clock_from,
                 p->flops_per_cycle, p->isa);
}

/* Backend memory per rank, by use, as allocated: the model's flat
 * buffers (the fp32 master weights, their compute copy, the gradients)
 * and activations, zero/'s buffers (stages 2 and 3), the optimizer's
 * moments and scalars, the step's scalars and losses (setup.c); and what
 * the backend counted itself. */
static void
report_memory(const struct run *r)
{
    const struct ops *op = model_ops(r->m);
    /* Stage 3's master weights: its range's, in fp32 (the rest of pmem
     * is the compute copy). */
    size_t master = model_param_bytes(r->m) +
                    (r->stage3 ? (r->opt.hi - r->opt.lo) * sizeof(float) : 0);
    size_t p = model_param_bytes(r->m) + model_compute_param_bytes(r->m) +
               r->pmem.range + r->pmem.ends + r->pmem.layers;
    size_t g =
        model_grad_bytes(r->m) + r->gmem.range + r->gmem.ends + r->gmem.layers;
    size_t act = model_activation_bytes(r->m), peak = 0;
    size_t sc = RUN_SCALARS * sizeof(double) + sizeof(*r->norm_check) +
                r->train_losses.cap * 2 * sizeof(double);
    char params[128];

    if (op->dtype != OPS_F32) /* (the 16-bit compute copy) */
        snprintf(params, sizeof(params),
                 "%.1f MB (fp32 master weights) + %.1f MB (%s compute copy)",
                 master / 1e6, (p - master) / 1e6, ops_dtype_name(op->dtype));
    else
        snprintf(params, sizeof(params), "%.1f MB", p / 1e6);
    op->mem_info(NULL, NULL, &peak);
    log_info("memory per rank: parameters %s, gradients %.1f MB, optimizer "
             "%.1f MB, activations %.1f MB, losses and scalars %.1f MB; %.1f "
             "MB in all, as allocated (the %s backend has held %.1f MB at "
             "most)",
             params, g / 1e6, r->opt.bytes / 1e6, act / 1e6, sc / 1e6,
             (p + g + r->opt.bytes + act + sc) / 1e6, op->name, peak / 1e6);
    if (r->stage3)
        log_info("sharding stage 3: parameters = this rank's range %.2f MB + "
                 "embeddings and heads %.2f MB + 2 layer buffers %.2f MB",
                 r->pmem.range / 1e6, r->pmem.ends / 1e6, r->pmem.layers / 1e6);
    if (r->stage2)
        log_info("sharding stage %d: gradients = this rank's range %.2f MB + "
                 "embeddings and heads %.2f MB + 2 layer buckets %.2f MB",
                 r->stage3 ? 3 : 2, r->gmem.range / 1e6, r->gmem.ends / 1e6,
                 r->gmem.layers / 1e6);
}

void
report_start(const struct run *r)
{
    log_info("%s", "----------- Configuration Arguments -----------");
    if (g_rank == 0)
        args_print(&r->a, stderr, "");
    for (const char *n = r->a.notes; n && *n;) { /* aliases with no effect */
        const char *nl = strchr(n, '\n');

        log_info("note: %.*s", (int)(nl ? nl - n : (long)strlen(n)), n);
        n = nl ? nl + 1 : n + strlen(n);
    }
    log_info("device: %s, compute dtype %s (%s)", r->ops->name,
             ops_dtype_name(r->ops->dtype), r->device_why);
    log_info("model: %s, %zu parameters (%zu with their pads), %.1f MB of "
             "activations; accumulate %d micro-batches",
             r->cfg.type == MODEL_GPT ? "gpt" : "ernie",
             params_count(model_table(r->m)), model_table(r->m)->total,
             model_activation_bytes(r->m) / 1e6, r->accumulate);
    log_peak(r);
    {
        char how[160];

        if (g_world > 1)
            snprintf(how, sizeof(how), "%s, started by %s, %s placement",
                     r->comm->name, r->comm->launcher,
                     r->comm->layout.placement == COMM_INTRA_FIRST
                         ? "intra_first"
                         : "inter_first");
        else
            snprintf(how, sizeof(how), "%s", r->comm->name);
        log_info("ranks: %d (%s); tensor parallel %d x sharding %d (stage "
                 "%d) x data parallel %d x pipeline %d, this rank's data "
                 "slice %d",
                 g_world, how, r->tp, r->sh, r->a.sharding_stage, r->dp, r->pp,
                 r->replica);
    }
    if (r->pp > 1) /* the idle share of 1F1B: (p - 1) / (m + p - 1) */
        log_info("pipeline: %d stages, %d micro-batches a step (1F1B): "
                 "bubble fraction %.3f",
                 r->pp, r->accumulate,
                 (double)(r->pp - 1) / (r->accumulate + r->pp - 1));
    report_memory(r);
}

/* ------------------------------------------------------------------------ */
/* The records: train_log.jsonl and the event files                         */

/* Rank 0: the event files in --logging_dir (default output_dir/runs). */
static void
open_events(struct run *r)
{
    char err[1024], *dir;
    const char *tb, *vdl;

    if (r->event_targets == 0)
        return;
    if (r->a.logging_dir ? (dir = strdup(r->a.logging_dir)) == NULL
                         : asprintf(&dir, "%s/runs", r->a.output_dir) < 0)
        fatal("out of memory");
    if (events_open(&r->events, r->event_targets, dir, r->st.global_step + 1,
                    err, sizeof(err)) < 0)
        fatal("%s", err);
    tb = events_path(r->events, EVENTS_TENSORBOARD);
    vdl = events_path(r->events, EVENTS_VISUALDL);
    log_info("event files (tensorboard or visualdl --logdir %s):%s%s%s%s", dir,
             tb ? " TensorBoard " : "", tb ? tb : "", vdl ? " VisualDL " : "",
             vdl ? vdl : "");
    free(dir);
}

/* A step's scalars to the event files; a file that cannot be written is
 * reported once and left (training goes on). */
static void
report(struct run *r, int64_t step, const struct event_scalar *s, size_t n)
{
    char err[1024];

    if (events_write(r->events, step, s, n, err, sizeof(err)) < 0)
        fprintf(stderr, "train: warning: %s; no more events go to it\n", err);
}

/* The scalars of an evaluation of split `name` ("valid", "test"). */
void
report_eval(struct run *r, const char *name, const struct losses *mean)
{
    char tags[3][64];
    struct event_scalar s[3];
    size_t n = 0;

    snprintf(tags[0], sizeof(tags[0]), "%s/loss", name);
    snprintf(tags[1], sizeof(tags[1]), "%s/lm_loss", name);
    snprintf(tags[2], sizeof(tags[2]), "%s/sop_loss", name);
    s[n++] = (struct event_scalar){ tags[0], mean->loss };
    if (r->cfg.type == MODEL_ERNIE)
        s[n++] = (struct event_scalar){ tags[1], mean->lm_loss };
    if (r->cfg.type == MODEL_ERNIE && r->cfg.binary_head)
        s[n++] = (struct event_scalar){ tags[2], mean->sop_loss };
    report(r, r->st.global_step, s, n);
}

void
open_records(struct run *r)
{
    char *log_path, err[1024];

    if (asprintf(&log_path, "%s/train_log.jsonl", r->a.output_dir) < 0)
        fatal("out of memory");
    if (g_rank == 0) { /* the log of the run, as rank 0 sees it */
        size_t dropped;

        /* It goes on from the step resumed, as if never interrupted. */
        if (runlog_trim(log_path, r->st.global_step, &dropped, err,
                        sizeof(err)) < 0)
            fatal("%s", err);
        if (dropped > 0)
            log_info("%s: dropped %zu record%s after global step %lld, "
                     "written by the interrupted run",
                     log_path, dropped, dropped == 1 ? "" : "s",
                     (long long)r->st.global_step);
        r->jsonl = fopen(log_path, "a");
        if (r->jsonl == NULL)
            fatal("cannot open %s: %s", log_path, strerror(errno));
        open_events(r);
    }
    free(log_path);
}

/* ------------------------------------------------------------------------ */
/* The log line of the steps                                                 */

/* Sum losses x[0..n) over every replica (the data-parallel and sharding
 * ranks) and the pipeline stages (only the last has them): through the
 * backend's scalars buffer, where the collectives' buffers live. */
void
replicas_sum(struct run *r, double *x, size_t n, int64_t step)
{
    double *d = r->scalars;

    if (r->replicas == 1 && r->pp == 1)
        return;
    if (n > RUN_SCALARS)
        fatal("replicas_sum: %zu values, room for %d", n, RUN_SCALARS);
    r->ops->upload(d, x, n * sizeof(double));
    if ((r->dp > 1 &&
         r->comm->all_reduce_sum(r->comm, d, n, COMM_F64, COMM_DP) < 0) ||
        (r->sh > 1 &&
         r->comm->all_reduce_sum(r->comm, d, n, COMM_F64, COMM_SHARDING) < 0) ||
        (r->pp > 1 &&
         r->comm->all_reduce_sum(r->comm, d, n, COMM_F64, COMM_PP) < 0))
        fatal("global step %lld: %s", (long long)step, r->comm->error);
    if (r->ops->download(x, d, n * sizeof(double)) < 0)
        fatal("global step %lld: %s", (long long)step, r->ops->error());
}

void
report_step(struct run *r, int64_t step, double lr, double norm,
            double comm_sent, struct losses *acc, int logged, double dt)
{
    const struct train_args *a = &r->a;
    double n = (double)logged * r->accumulate;
    double sums[3] = { acc->loss, acc->lm_loss, acc->sop_loss };

    /* The losses averaged over the replicas. */
    replicas_sum(r, sums, 3, step);
    acc->loss = sums[0] / r->replicas;
    acc->lm_loss = sums[1] / r->replicas;
    acc->sop_loss = sums[2] / r->replicas;
    double speed = logged / dt, ips = speed * r->gbs;
    double tps = ips * a->max_seq_len;
    double mfu =
        r->peak_gflops > 0 ? r->flops / dt / (r->peak_gflops * 1e9) : 0;
    char eta[32], scaling[96] = "", norm_json[32] = "null", mem[64] = "";
    double mem_mb = -1;

    /* The steps left at the recent step time (evaluation and
     * saving not counted). */
    fmt_duration(eta, sizeof(eta), (a->max_steps - step) / speed);
    /* float16: the loss scale after this step, and the steps skipped so
     * far (their gradients were not finite: the norm is too). */
    if (r->loss_scale != NULL)
        snprintf(scaling, sizeof(scaling),
                 ", loss_scale: %g, skipped_steps: %d", r->last.loss_scale,
                 r->last.n_skipped);
    /* On a GPU: the most device memory held so far (the backend's
     * buffers, as torch's max_memory_allocated). */
    if (r->ops->device >= 0) {
        size_t peak = 0;

        r->ops->mem_info(NULL, NULL, &peak);
        mem_mb = peak / 1048576.0;
        snprintf(mem, sizeof(mem), ", max_memory_allocated: %.0f MB", mem_mb);
    }
    if (isfinite(norm))
        snprintf(norm_json, sizeof(norm_json), "%.9g", norm);
    else if (isnan(norm))
        norm = NAN; /* (not "-nan") */
    if (r->cfg.type == MODEL_ERNIE && r->cfg.binary_head)
        log_info("global step %lld, loss: %.6f, lm_loss: %.6f, "
                 "sop_loss: %.6f, speed: %.2f steps/s, ips: %.2f "
                 "seqs/s, learning rate: %.5e, tokens/s: %.0f, "
                 "mfu: %.1f%%, grad_norm: %.4f%s%s, eta: %s",
                 (long long)step, acc->loss / n, acc->lm_loss / n,
                 acc->sop_loss / n, speed, ips, lr, tps, 100 * mfu, norm,
                 scaling, mem, eta);
    else
        log_info("global step %lld, loss: %.6f, speed: %.2f steps/s, "
                 "ips: %.2f seqs/s, learning rate: %.5e, tokens/s: "
                 "%.0f, mfu: %.1f%%, grad_norm: %.4f%s%s, eta: %s",
                 (long long)step, acc->loss / n, speed, ips, lr, tps, 100 * mfu,
                 norm, scaling, mem, eta);
    if (r->events) {
        struct event_scalar sc[] = {
            { "train/loss", acc->loss / n },
            { "train/learning_rate", lr },
            { "train/grad_norm", norm },
            { "train/steps_per_second", speed },
            { "train/samples_per_second", ips },
            { "train/tokens_per_second", tps },
            { "train/mfu", mfu },
            { "train/lm_loss", acc->lm_loss / n },
            { "train/sop_loss", acc->sop_loss / n },
        };
        size_t k = r->cfg.type == MODEL_GPT ? 7 : r->cfg.binary_head ? 9 : 8;

        report(r, step, sc, k);
        if (r->loss_scale != NULL) {
            struct event_scalar ls = { "train/loss_scale", r->last.loss_scale };

            report(r, step, &ls, 1);
        }
        if (mem_mb >= 0) {
            struct event_scalar ms = { "train/max_memory_allocated", mem_mb };

            report(r, step, &ms, 1);
        }
    }
    if (r->jsonl) {
        fprintf(r->jsonl,
                "{\"global_step\": %lld, \"loss\": %.9g, "
                "\"lm_loss\": %.9g, \"sop_loss\": %.9g, "
                "\"learning_rate\": %.9g, \"steps_per_second\": %.6g, "
                "\"samples_per_second\": %.6g, \"tokens_per_second\": "
                "%.6g, \"mfu\": %.6g, \"grad_norm\": %s, "
                "\"consumed_samples\": %llu, \"comm_bytes\": %.17g",
                (long long)step, acc->loss / n, acc->lm_loss / n,
                acc->sop_loss / n, lr, speed, ips, tps, mfu, norm_json,
                (unsigned long long)r->st.consumed_samples, comm_sent);
        if (r->loss_scale != NULL)
            fprintf(r->jsonl, ", \"loss_scale\": %.9g, \"skipped_steps\": %d",
                    r->last.loss_scale, r->last.n_skipped);
        if (mem_mb >= 0)
            fprintf(r->jsonl, ", \"max_memory_allocated\": %.1f", mem_mb);
        fprintf(r->jsonl, "}\n");
        fflush(r->jsonl);
    }
}
