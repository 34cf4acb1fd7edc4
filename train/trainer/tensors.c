/* SPDX-License-Identifier: MIT */
/*
 * tensors.c: the model's tensors whole, one at a time, between the ranks
 * that hold their parts and a checkpoint (ckpt_save_tensors(),
 * ckpt_load_tensors()), so that a model that fits only when split never
 * has to be whole on one device or in host memory.
 *
 * Saving, tensor by tensor in the files' order, on every rank: the
 * pipeline stage that holds the tensor assembles it in a backend buffer
 * of one tensor: each rank of a sharding group of the first data-parallel
 * replica copies in what its range holds and the group all-gathers the
 * ranges (sharded moments; stage 3's parameters); the tensor-parallel
 * group all-gathers its parts; that stage's first rank sends it to rank 0
 * over the pipeline group, and rank 0 downloads it into one host buffer,
 * puts the parts in their places and hands it to the file.  Every rank
 * makes the same calls in the same order (the writer's ckpt_save_tensors()
 * with write 1, the others' with write 0), so the collectives match.
 *
 * Loading (and initialising), on every rank: each whole tensor, read from
 * the mapped file, is cut to this rank's tensor-parallel part, of which
 * it uploads what its buffers hold (zero_buffer()).  These are the fp32
 * master weights and moments; the caller refreshes the compute copy after
 * (zero_params_ready()).
 */
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "trainer.h"
#include "util/tr_util.h"
#include "zero/zero.h"

/* The pipeline stage that holds the tensor t of the whole table (the
 * first stage the tied word embeddings: the last holds a copy). */
static int
stage_of(const struct run *r, const struct param_tensor *t)
{
    int L = r->cfg.num_layers;

    if (t->layer == PARAM_PRE)
        return 0;
    if (t->layer == PARAM_POST)
        return r->pp - 1;
    for (int s = 0; s < r->pp; s++)
        if (t->layer < (s + 1) * L / r->pp)
            return s;
    return r->pp - 1;
}

/* This rank's tensor of that name, not a tied copy; NULL if none. */
static const struct param_tensor *
own_tensor(const struct run *r, const char *name)
{
    const struct param_table *pt = model_table(r->m);

    for (size_t i = 0; i < pt->n; i++)
        if (!pt->t[i].tied_copy && strcmp(pt->t[i].name, name) == 0)
            return &pt->t[i];
    return NULL;
}

/* lt's elements of buffer b into dst (backend memory, lt->numel floats):
 * copied from this rank's buffer, and where the sharding ranks hold
 * pieces of it, all-gathered over the group. */
static int
fill_part(struct run *r, int b, const struct param_tensor *lt, float *dst,
          struct st_err *err)
{
    const struct ops *op = model_ops(r->m);
    size_t lo, hi, a = lt->offset, e = a + lt->numel;
    size_t pa, pb;
    const float *buf = zero_buffer(r, b, &lo, &hi);

    if (lo == 0 && hi == model_table(r->m)->total) {
        op->copy(dst, buf + a, lt->numel * sizeof(float));
        return 0;
    }
    pa = a > lo ? a : lo;
    pb = e < hi ? e : hi;
    if (pa < pb)
        op->copy(dst + (pa - a), buf + (pa - lo), (pb - pa) * sizeof(float));
    if (r->comm->all_gather_ranges(r->comm, dst, zero_clip(r, a, e), COMM_F32,
                                   COMM_SHARDING) < 0) {
        snprintf(err->msg, sizeof(err->msg), "gathering '%s': %s", lt->name,
                 r->comm->error);
        return -1;
    }
    return 0;
}

/* weights_get_fn: buffer b's tensor t whole, gathered as the top of this
 * file says; host is rank 0's, NULL elsewhere. */
static int
io_get(void *ctx, int b, const struct param_tensor *t, float *host,
       struct st_err *err)
{
    struct tensor_io *io = ctx;
    struct run *r = io->r;
    struct comm *c = r->comm;
    const struct param_tensor *pt = &io->parts.t[t - io->whole.t];
    size_t n = pt->numel;
    int split = r->tp > 1 && pt->tp != TP_REPLICATED;
    int owner = stage_of(r, t);
    size_t bytes = (split ? (size_t)r->tp : 1) * n * sizeof(float);

    if (r->pp_rank == owner && r->dp_rank == 0 && (split || r->tp_rank == 0)) {
        const struct param_tensor *lt = own_tensor(r, t->name);
        float *mine = io->dev + (split ? (size_t)r->tp_rank * n : 0);

        if (lt == NULL || lt->numel != n) {
            snprintf(err->msg, sizeof(err->msg),
                     "tensor '%s' is not where the layout puts it", t->name);
            return -1;
        }
        if (fill_part(r, b, lt, mine, err) < 0)
            return -1;
        if ((split && r->sh_rank == 0 &&
             c->all_gather(c, io->dev, mine, n, COMM_F32, COMM_TP) < 0) ||
            (owner != 0 && r->sh_rank == 0 && r->tp_rank == 0 &&
             c->send(c, io->dev, bytes, 0, COMM_PP) < 0)) {
            snprintf(err->msg, sizeof(err->msg), "gathering '%s': %s", t->name,
                     c->error);
            return -1;
        }
    }
    if (host == NULL) /* not the writer */
        return 0;
    if (owner != 0 && c->recv(c, io->dev, bytes, owner, COMM_PP) < 0) {
        snprintf(err->msg, sizeof(err->msg), "gathering '%s': %s", t->name,
                 c->error);
        return -1;
    }
    if (model_ops(r->m)->download(split ? io->host : host, io->dev, bytes) <
        0) {
        snprintf(err->msg, sizeof(err->msg), "gathering '%s': %s", t->name,
                 model_ops(r->m)->error());
        return -1;
    }
    if (!split)
        return 0;
    for (int k = 0; k < r->tp; k++)
        params_part_to_whole(pt, r->tp, k, io->host + (size_t)k * n, host);
    return 0;
}

/* lt's values part (host, lt->numel floats) into what this rank's buffer
 * b holds of them. */
static void
store_part(struct run *r, int b, const struct param_tensor *lt,
           const float *part)
{
    size_t lo, hi, a = lt->offset, e = a + lt->numel, pa, pb;
    float *buf = zero_buffer(r, b, &lo, &hi);

    pa = a > lo ? a : lo;
    pb = e < hi ? e : hi;
    if (pa < pb)
        model_ops(r->m)->upload(buf + (pa - lo), part + (pa - a),
                                (pb - pa) * sizeof(float));
}

/* weights_put_fn: this rank's part of buffer b's tensor t (whole in host),
 * into every tensor of that name it holds (a tied copy too). */
static int
io_put(void *ctx, int b, const struct param_tensor *t, const float *host,
       struct st_err *err)
{
    struct tensor_io *io = ctx;
    struct run *r = io->r;
    const struct param_table *pt = model_table(r->m);

    (void)err;
    for (size_t i = 0; i < pt->n; i++) {
        const struct param_tensor *lt = &pt->t[i];
        const float *part = host;

        if (strcmp(lt->name, t->name) != 0)
            continue;
        if (r->tp > 1) {
            params_part_from_whole(lt, r->tp, r->tp_rank, io->host, host);
            part = io->host;
        }
        store_part(r, b, lt, part);
    }
    return 0;
}

void
tensors_open(struct tensor_io *io, struct run *r, int saving)
{
    char err[512];
    size_t most = 0;

    memset(io, 0, sizeof(*io));
    io->r = r;
    if (model_table_build(&r->cfg, 1, 0, &io->whole, err, sizeof(err)) < 0 ||
        model_table_build(&r->cfg, r->tp, r->tp_rank, &io->parts, err,
                          sizeof(err)) < 0)
        fatal("%s", err);
    for (size_t i = 0; i < io->parts.n; i++) {
        if (strcmp(io->parts.t[i].name, io->whole.t[i].name) != 0)
            fatal("the tensor tables of tp 1 and tp %d differ at '%s'", r->tp,
                  io->whole.t[i].name);
        most = io->parts.t[i].numel > most ? io->parts.t[i].numel : most;
    }
    /* Saving: the backend buffer where a tensor's parts meet, on the ranks
     * that gather; rank 0's host buffer for them (not needed for one
     * part).  Loading: one part. */
    if (saving && r->dp_rank == 0 &&
        (io->dev = model_ops(r->m)->alloc((size_t)r->tp * most * sizeof(float),
                                          "checkpoint staging")) == NULL)
        fatal("out of memory for a checkpoint's staging buffer (%.1f MB)",
              (double)r->tp * (double)most * sizeof(float) / 1e6);
    if (r->tp > 1 && (!saving || r->comm->rank == 0) &&
        (io->host = tr_stage_alloc((saving ? (size_t)r->tp : 1) * most *
                                   sizeof(float))) == NULL)
        fatal("out of memory for a checkpoint's staging buffer");
    io->ct.table = &io->whole;
    io->ct.get = io_get;
    io->ct.put = io_put;
    io->ct.ctx = io;
}

void
tensors_close(struct tensor_io *io)
{
    if (io->dev)
        model_ops(io->r->m)->release(io->dev);
    tr_stage_free(io->host);
    params_release(&io->whole);
    params_release(&io->parts);
}

void
tensors_init(struct run *r, uint64_t seed)
{
    const struct param_table *pt = model_table(r->m);
    size_t most = 0;
    float *host;

    for (size_t i = 0; i < pt->n; i++)
        most = pt->t[i].numel > most ? pt->t[i].numel : most;
    host = tr_stage_alloc((most ? most : 1) * sizeof(float));
    if (host == NULL)
        fatal("out of memory initialising the model");
    for (size_t i = 0; i < pt->n; i++) {
        params_fill_tensor(pt, &pt->t[i], seed, host);
        store_part(r, CKPT_WEIGHTS, &pt->t[i], host);
    }
    tr_stage_free(host);
}
