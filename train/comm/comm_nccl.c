/* SPDX-License-Identifier: MIT */
/*
 * comm_nccl.c: the communicator over NCCL, for GPU buffers.  A CPU
 * communicator starts the job and carries the bootstrap (comm_mpi, or
 * comm_tcp's rendezvous where srun or torchrun started the ranks: the
 * layout, rank 0's ncclUniqueId broadcast to every rank, barriers); each group of the
 * layout is a communicator split from the world one with the colors of
 * comm_layout_split().  Collectives run on the GPU and stream the compute
 * backend hands over (ops->device, ops->queue(): after the ops queued
 * before them; else the local rank's GPU and a stream of its own) and
 * return once done; the nonblocking all-reduce is enqueued and waited for
 * by wait_all().  Ranges (sharding) are one grouped ncclReduce or
 * ncclBroadcast per owner, so they may differ in length.
 *
 * The wait polls the stream: past the timeout, or on an asynchronous
 * NCCL error, it aborts the communicators and ends the rank with the
 * collective and the group named; the boot communicator's watchdog
 * (or mpirun) sees that rank go and ends the others.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "comm.h"

struct comm_nccl {
    struct comm base;  /* first: the interface */
    struct comm *boot; /* the CPU communicator that started the job */
    ncclComm_t group[COMM_N_GROUPS];
    int size[COMM_N_GROUPS], coord[COMM_N_GROUPS];
    cudaStream_t stream;
    int own_stream; /* made here (else the compute backend's) */
    double timeout;
    enum comm_group pending_group; /* of the enqueued nonblocking ones */
    int pending;
};

static double
now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static ncclDataType_t
nccl_type(enum comm_dtype t)
{
    return t == COMM_F32   ? ncclFloat32
           : t == COMM_F64 ? ncclFloat64
           : t == COMM_B16 ? ncclFloat16 /* (moved, never reduced) */
                           : ncclInt64;
}

static void
abort_all(struct comm_nccl *n)
{
    for (int g = 0; g < COMM_N_GROUPS; g++)
        if (n->group[g] != NULL)
            ncclCommAbort(n->group[g]);
}

/* Wait for the stream, watching the clock and NCCL's asynchronous errors
 * (a dead peer shows up as one, or as a wait that never ends). */
static int
wait_stream(struct comm_nccl *n, const char *what, enum comm_group g)
{
    double t0 = now_s();

    for (;;) {
        cudaError_t ce = cudaStreamQuery(n->stream);
        ncclResult_t async = ncclSuccess;

        if (ce == cudaSuccess)
            return 0;
        if (ce != cudaErrorNotReady) {
            snprintf(n->base.error, sizeof(n->base.error),
                     "%s over the %s group: %s", what, comm_group_name(g),
                     cudaGetErrorString(ce));
            return -1;
        }
        ncclCommGetAsyncError(n->group[g], &async);
        if (async != ncclSuccess && async != ncclInProgress) {
            fprintf(stderr,
                    "train: rank %d: %s over the %s group (%d ranks) failed: "
                    "%s; stopping every rank\n",
                    n->base.rank, what, comm_group_name(g), n->size[g],
                    ncclGetErrorString(async));
            abort_all(n);
            _exit(1);
        }
        if (n->timeout > 0 && now_s() - t0 > n->timeout) {
            comm_report_stuck(&n->base, what, g, n->size[g], n->timeout);
            abort_all(n);
            _exit(1);
        }
        usleep(20);
    }
}

/* The group's communicator, or NULL with the error set. */
static ncclComm_t
group_of(struct comm_nccl *n, enum comm_group g, const char *what)
{
    if ((int)g < 0 || g >= COMM_N_GROUPS || n->group[g] == NULL) {
        comm_not_in_group(&n->base, what, g);
        return NULL;
    }
    return n->group[g];
}

static int
check(struct comm_nccl *n, ncclResult_t rc, const char *what, enum comm_group g)
{
    if (rc == ncclSuccess)
        return 0;
    snprintf(n->base.error, sizeof(n->base.error), "%s over the %s group: %s",
             what, comm_group_name(g), ncclGetErrorString(rc));
    return -1;
}

/* Run one enqueued operation to its end. */
static int
finish(struct comm_nccl *n, ncclResult_t rc, const char *what,
       enum comm_group g)
{
    if (check(n, rc, what, g) < 0)
        return -1;
    return wait_stream(n, what, g);
}

static int
nccl_group_size(const struct comm *c, enum comm_group g)
{
    const struct comm_nccl *n = (const struct comm_nccl *)c;

    return (int)g >= 0 && g < COMM_N_GROUPS ? n->size[g] : 0;
}

static int
nccl_group_rank(const struct comm *c, enum comm_group g)
{
    const struct comm_nccl *n = (const struct comm_nccl *)c;

    return (int)g >= 0 && g < COMM_N_GROUPS ? n->coord[g] : -1;
}

/* An all-reduce with op; start: only enqueued (wait_all() waits for the
 * stream), else waited for. */
static int
nccl_all_reduce_op(struct comm *c, void *buf, size_t count, enum comm_dtype t,
                   enum comm_group g, ncclRedOp_t op, int start)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "all-reduce");
    ncclResult_t rc;

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "all-reduce", (double)(count * comm_dtype_size(t)), n->size[g]);
    rc = ncclAllReduce(buf, buf, count, nccl_type(t), op, nc, n->stream);
    if (!start)
        return finish(n, rc, "all-reduce", g);
    if (!n->pending)
        n->pending_group = g;
    n->pending = 1;
    return check(n, rc, "all-reduce", g);
}

static int
nccl_all_reduce(struct comm *c, void *buf, size_t count, enum comm_dtype t,
                enum comm_group g)
{
    return nccl_all_reduce_op(c, buf, count, t, g, ncclSum, 0);
}

static int
nccl_all_reduce_max(struct comm *c, void *buf, size_t count, enum comm_dtype t,
                    enum comm_group g)
{
    return nccl_all_reduce_op(c, buf, count, t, g, ncclMax, 0);
}

static int
nccl_all_reduce_start(struct comm *c, void *buf, size_t count,
                      enum comm_dtype t, enum comm_group g)
{
    return nccl_all_reduce_op(c, buf, count, t, g, ncclSum, 1);
}

static int
nccl_test_all(struct comm *c)
{
    (void)c; /* the GPU moves the enqueued work on its own */
    return 0;
}

static int
nccl_wait_all(struct comm *c)
{
    struct comm_nccl *n = (struct comm_nccl *)c;

    if (!n->pending)
        return 0;
    n->pending = 0;
    return wait_stream(n, "all-reduce (overlapped)", n->pending_group);
}

static int
nccl_reduce_scatter(struct comm *c, void *out, const void *in, size_t count,
                    enum comm_dtype t, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "reduce-scatter");

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "reduce-scatter", (double)(count * comm_dtype_size(t)) * n->size[g],
        n->size[g]);
    return finish(
        n,
        ncclReduceScatter(in, out, count, nccl_type(t), ncclSum, nc, n->stream),
        "reduce-scatter", g);
}

static int
nccl_all_gather(struct comm *c, void *out, const void *in, size_t count,
                enum comm_dtype t, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "all-gather");
    size_t es = comm_dtype_size(t);

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "all-gather", (double)(count * es) * n->size[g], n->size[g]);
    /* (In place when in is this rank's place in out: NCCL sees it.) */
    return finish(n, ncclAllGather(in, out, count, nccl_type(t), nc, n->stream),
                  "all-gather", g);
}

/* One grouped call per owner: reduce-to or broadcast-from rank r of its
 * range, so the ranges may differ in length. */
static int
ranges(struct comm_nccl *n, void *buf, const size_t *off, enum comm_dtype t,
       enum comm_group g, int reduce, const char *what, int start)
{
    ncclComm_t nc = group_of(n, g, what);
    size_t es = comm_dtype_size(t);
    ncclResult_t rc = ncclSuccess;

    if (nc == NULL)
        return -1;
    n->base.sent[g] +=
        comm_ring_bytes(what, (double)(off[n->size[g]] * es), n->size[g]);
    if ((rc = ncclGroupStart()) != ncclSuccess)
        return check(n, rc, what, g);
    for (int r = 0; r < n->size[g] && rc == ncclSuccess; r++) {
        char *p = (char *)buf + off[r] * es;
        size_t k = off[r + 1] - off[r];

        rc = reduce
                 ? ncclReduce(p, p, k, nccl_type(t), ncclSum, r, nc, n->stream)
                 : ncclBroadcast(p, p, k, nccl_type(t), r, nc, n->stream);
    }
    if (rc != ncclSuccess) {
        ncclGroupEnd();
        return check(n, rc, what, g);
    }
    if (start) { /* enqueued; wait_all() waits for the stream */
        if (!n->pending)
            n->pending_group = g;
        n->pending = 1;
        return check(n, ncclGroupEnd(), what, g);
    }
    return finish(n, ncclGroupEnd(), what, g);
}

static int
nccl_reduce_scatter_ranges(struct comm *c, void *buf, const size_t *off,
                           enum comm_dtype t, enum comm_group g)
{
    return ranges((struct comm_nccl *)c, buf, off, t, g, 1, "reduce-scatter",
                  0);
}

static int
nccl_all_gather_ranges(struct comm *c, void *buf, const size_t *off,
                       enum comm_dtype t, enum comm_group g)
{
    return ranges((struct comm_nccl *)c, buf, off, t, g, 0, "all-gather", 0);
}

static int
nccl_all_gather_ranges_start(struct comm *c, void *buf, const size_t *off,
                             enum comm_dtype t, enum comm_group g)
{
    return ranges((struct comm_nccl *)c, buf, off, t, g, 0, "all-gather", 1);
}

static int
nccl_reduce(struct comm *c, void *buf, size_t count, enum comm_dtype t,
            int root, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "reduce");

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "reduce-scatter", (double)(count * comm_dtype_size(t)), n->size[g]);
    return finish(
        n,
        ncclReduce(buf, buf, count, nccl_type(t), ncclSum, root, nc, n->stream),
        "reduce", g);
}

static int
nccl_broadcast(struct comm *c, void *buf, size_t bytes, int root,
               enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "broadcast");

    if (nc == NULL)
        return -1;
    c->sent[g] += n->coord[g] == root ? (double)bytes : 0;
    return finish(
        n, ncclBroadcast(buf, buf, bytes, ncclUint8, root, nc, n->stream),
        "broadcast", g);
}

static int
nccl_send(struct comm *c, const void *buf, size_t bytes, int peer,
          enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "send");

    if (nc == NULL)
        return -1;
    c->sent[g] += (double)bytes;
    return finish(n, ncclSend(buf, bytes, ncclUint8, peer, nc, n->stream),
                  "send", g);
}

static int
nccl_recv(struct comm *c, void *buf, size_t bytes, int peer, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "recv");

    if (nc == NULL)
        return -1;
    return finish(n, ncclRecv(buf, bytes, ncclUint8, peer, nc, n->stream),
                  "recv", g);
}

static int
nccl_sendrecv(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
              size_t rbytes, int peer, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "sendrecv");
    ncclResult_t rc, rc2;

    if (nc == NULL)
        return -1;
    c->sent[g] += (double)sbytes;
    /* One group: NCCL runs the pair together, neither waits for the
     * other's completion. */
    rc = ncclGroupStart();
    if (rc == ncclSuccess && sbytes)
        rc = ncclSend(sbuf, sbytes, ncclUint8, peer, nc, n->stream);
    if (rc == ncclSuccess && rbytes)
        rc = ncclRecv(rbuf, rbytes, ncclUint8, peer, nc, n->stream);
    rc2 = ncclGroupEnd();
    return finish(n, rc != ncclSuccess ? rc : rc2, "sendrecv", g);
}

static int
nccl_barrier(struct comm *c, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;

    if (wait_stream(n, "barrier", g) < 0)
        return -1;
    if (n->boot->barrier(n->boot, g) < 0) {
        snprintf(c->error, sizeof(c->error), "%s", n->boot->error);
        return -1;
    }
    return 0;
}

static void
nccl_destroy(struct comm *c)
{
    struct comm_nccl *n = (struct comm_nccl *)c;

    if (n == NULL)
        return;
    if (n->stream)
        cudaStreamSynchronize(n->stream);
    for (int g = 0; g < COMM_N_GROUPS; g++)
        if (n->group[g] != NULL)
            ncclCommDestroy(n->group[g]);
    if (n->stream && n->own_stream)
        cudaStreamDestroy(n->stream);
    if (n->boot)
        n->boot->destroy(n->boot); /* MPI_Finalize, or the sockets */
    free(n);
}

static struct comm *
fail(struct comm_nccl *n, char *err, size_t err_len, const char *what,
     const char *why)
{
    snprintf(err, err_len, "NCCL backend: %s: %s", what, why);
    nccl_destroy(&n->base);
    return NULL;
}

struct comm *
comm_nccl(struct comm *boot, int device, void *stream, double timeout,
          char *err, size_t err_len)
{
    struct comm_nccl *n = calloc(1, sizeof(*n));
    int color[COMM_N_GROUPS], key[COMM_N_GROUPS], devices = 0;
    ncclUniqueId id;
    ncclResult_t rc;
    cudaError_t ce;

    if (n == NULL) {
        snprintf(err, err_len, "out of memory");
        boot->destroy(boot);
        return NULL;
    }
    /* (Boot's watchdog sees only boot's own collectives and the ranks
     * that go; this one watches the GPU's waits.) */
    n->boot = boot;
    n->base = *n->boot; /* rank, world, local rank */
    memset(n->base.sent, 0, sizeof(n->base.sent));
    n->base.name = "nccl";
    n->timeout = timeout;
    if ((ce = cudaGetDeviceCount(&devices)) != cudaSuccess || devices < 1)
        return fail(n, err, err_len, "no GPU",
                    ce != cudaSuccess ? cudaGetErrorString(ce)
                                      : "cudaGetDeviceCount found none");
    if ((ce = cudaSetDevice(device >= 0 ? device
                                        : n->base.local_rank % devices)) !=
        cudaSuccess)
        return fail(n, err, err_len, "GPU setup", cudaGetErrorString(ce));
    n->stream = (cudaStream_t)stream;
    if (n->stream == NULL) {
        if ((ce = cudaStreamCreateWithFlags(
                 &n->stream, cudaStreamNonBlocking)) != cudaSuccess)
            return fail(n, err, err_len, "GPU setup", cudaGetErrorString(ce));
        n->own_stream = 1;
    }
    if (n->base.rank == 0 && (rc = ncclGetUniqueId(&id)) != ncclSuccess)
        return fail(n, err, err_len, "ncclGetUniqueId", ncclGetErrorString(rc));
    if (n->boot->broadcast(n->boot, &id, sizeof(id), 0, COMM_WORLD) < 0)
        return fail(n, err, err_len, "sending the NCCL id", n->boot->error);
    if ((rc = ncclCommInitRank(&n->group[COMM_WORLD], n->base.world, id,
                               n->base.rank)) != ncclSuccess)
        return fail(n, err, err_len, "ncclCommInitRank",
                    ncclGetErrorString(rc));
    /* The layout and placement of boot's groups. */
    comm_layout_split(&n->boot->layout, n->base.rank, color, key);
    for (int g = 0; g < COMM_N_GROUPS; g++) {
        n->size[g] = n->boot->group_size(n->boot, (enum comm_group)g);
        n->coord[g] = n->boot->group_rank(n->boot, (enum comm_group)g);
        if (g == COMM_WORLD)
            continue;
        rc = ncclCommSplit(n->group[COMM_WORLD],
                           color[g] < 0 ? NCCL_SPLIT_NOCOLOR : color[g], key[g],
                           &n->group[g], NULL);
        if (rc != ncclSuccess)
            return fail(n, err, err_len, "ncclCommSplit",
                        ncclGetErrorString(rc));
    }
    n->base.group_size = nccl_group_size;
    n->base.group_rank = nccl_group_rank;
    n->base.all_reduce_sum = nccl_all_reduce;
    n->base.all_reduce_max = nccl_all_reduce_max;
    n->base.all_reduce_sum_start = nccl_all_reduce_start;
    n->base.test_all = nccl_test_all;
    n->base.wait_all = nccl_wait_all;
    n->base.reduce_scatter_sum = nccl_reduce_scatter;
    n->base.all_gather = nccl_all_gather;
    n->base.reduce_scatter_ranges = nccl_reduce_scatter_ranges;
    n->base.all_gather_ranges = nccl_all_gather_ranges;
    n->base.all_gather_ranges_start = nccl_all_gather_ranges_start;
    n->base.reduce_sum = nccl_reduce;
    n->base.broadcast = nccl_broadcast;
    n->base.send = nccl_send;
    n->base.recv = nccl_recv;
    n->base.sendrecv = nccl_sendrecv;
    n->base.barrier = nccl_barrier;
    n->base.destroy = nccl_destroy;
    return &n->base;
}
