/* SPDX-License-Identifier: MIT */
/*
 * comm_nccl.c: the communicator over NCCL, for GPU buffers.  A CPU
 * communicator starts the job and carries the bootstrap (comm_mpi, or
 * comm_tcp's rendezvous where srun or torchrun started the ranks: the
 * layout, rank 0's ncclUniqueId sent to every rank by comm_share_id(),
 * barriers); each group of the layout is a communicator split from the
 * world one with the colors of comm_layout_split().
 *
 * Ordering: the collectives run on a stream of their own on the rank's
 * GPU.  Each waits first for an event recorded on the compute stream
 * (ops->queue()) as it is enqueued, so it reads what the ops queued before
 * it wrote (the per-layer gradient all-reduce started during the backward
 * included); a blocking one then makes the compute stream wait for its
 * end, and wait_all() makes it wait for every started one: the ops queued
 * after see the result, and the host never waits inside the step (a
 * download syncs the compute stream, so it sees the result too).  Ranges
 * (sharding) are one grouped ncclReduce or ncclBroadcast per owner, so
 * they may differ in length.
 *
 * The watchdog: a thread follows the collectives in flight through their
 * start and end events and tells boot's watchdog (comm_watch.c) which one
 * the GPU waits in, so that --comm_timeout and a dead rank stop every rank
 * with the collective, the group and each rank's last collective named;
 * it polls ncclCommGetAsyncError() on every group, and whenever this rank
 * stops on such an error or by the watchdog, every NCCL communicator is
 * aborted (ncclCommAbort()) first.
 *
 * NOT YET RUN ON A GPU: built and linked here, reviewed against NCCL's
 * documentation; see docs/cluster.md.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "comm_int.h"

/* Collectives in flight at most; one more waits for the oldest. */
#define RING 1024

struct inflight {
    cudaEvent_t start, done; /* on the comm stream, around the collective */
    const char *what;
    enum comm_group g;
};

struct comm_nccl {
    struct comm base;  /* first: the interface */
    struct comm *boot; /* the CPU communicator that started the job */
    ncclComm_t group[COMM_N_GROUPS];
    int size[COMM_N_GROUPS], coord[COMM_N_GROUPS];
    int device;
    cudaStream_t stream;  /* the collectives' */
    cudaStream_t compute; /* the compute backend's (NULL: legacy default) */
    cudaEvent_t ready;    /* the compute work queued so far */
    cudaEvent_t mark;     /* the comm work queued so far (wait_all, barrier) */
    double timeout;
    int pending; /* started collectives not yet waited for */
    struct inflight ring[RING];
    /* ring[head % RING .. tail % RING): in flight; the main thread
     * enqueues at tail, the watch thread retires at head. */
    _Atomic unsigned long head, tail;
    pthread_t thread;
    int thread_started;
    _Atomic int stop;
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
abort_all(void *arg)
{
    struct comm_nccl *n = arg;

    for (int g = 0; g < COMM_N_GROUPS; g++)
        if (n->group[g] != NULL)
            ncclCommAbort(n->group[g]);
}

/* This rank stops: the message, every communicator aborted, exit 1 (the
 * others' watchdogs see this rank go). */
static void
stop_rank(struct comm_nccl *n, const char *msg)
{
    fprintf(stderr, "train: rank %d: %s; stopping every rank\n", n->base.rank,
            msg);
    comm_watch_on_stop(NULL, NULL);
    abort_all(n);
    _exit(1);
}

/* The watch thread: retire the collectives the GPU finished, tell boot's
 * watchdog what the GPU waits in, and watch NCCL's asynchronous errors
 * (a dead peer shows up as one, or as a wait that never ends). */
static void *
watch_main(void *arg)
{
    struct comm_nccl *n = arg;
    int busy = 0;
    double since = 0;
    char msg[512];

    cudaSetDevice(n->device);
    while (!atomic_load(&n->stop)) {
        unsigned long h = atomic_load(&n->head), t = atomic_load(&n->tail);
        struct inflight *f = &n->ring[h % RING];
        cudaError_t ce;

        for (int g = 0; g < COMM_N_GROUPS; g++) {
            ncclResult_t async = ncclSuccess;
            /* The collective in flight, else the group that failed. */
            enum comm_group in = h < t ? f->g : (enum comm_group)g;

            if (n->group[g] == NULL ||
                ncclCommGetAsyncError(n->group[g], &async) != ncclSuccess ||
                async == ncclSuccess || async == ncclInProgress)
                continue;
            snprintf(msg, sizeof(msg),
                     "%s over the %s group (%d ranks) failed: %s",
                     h < t ? f->what : "a collective", comm_group_name(in),
                     n->size[in], ncclGetErrorString(async));
            stop_rank(n, msg);
        }
        if (h == t) {
            usleep(1000);
            continue;
        }
        ce = cudaEventQuery(f->done);
        if (ce == cudaSuccess) {
            if (busy)
                comm_watch_idle(n->base.watch);
            busy = 0;
            atomic_store(&n->head, h + 1);
            continue;
        }
        if (ce == cudaErrorNotReady && !busy)
            ce = cudaEventQuery(f->start);
        if (ce == cudaSuccess) { /* the GPU now waits in it */
            comm_watch_busy(n->base.watch, f->what, f->g, n->size[f->g]);
            busy = 1;
            since = now_s();
        } else if (ce != cudaErrorNotReady) {
            snprintf(msg, sizeof(msg), "%s over the %s group (%d ranks): %s",
                     f->what, comm_group_name(f->g), n->size[f->g],
                     cudaGetErrorString(ce));
            stop_rank(n, msg);
        }
        /* Without boot's watchdog (none started), the timeout here. */
        if (n->base.watch == NULL && busy && n->timeout > 0 &&
            now_s() - since > n->timeout) {
            comm_report_stuck(&n->base, f->what, f->g, n->size[f->g],
                              n->timeout);
            comm_watch_on_stop(NULL, NULL);
            abort_all(n);
            _exit(1);
        }
        usleep(1000);
    }
    return NULL;
}

static int
cuda_failed(struct comm_nccl *n, cudaError_t ce, const char *what,
            enum comm_group g)
{
    snprintf(n->base.error, sizeof(n->base.error), "%s over the %s group: %s",
             what, comm_group_name(g), cudaGetErrorString(ce));
    return -1;
}

/* Before enqueueing collective `what`: the comm stream waits for the
 * compute work queued so far, and the slot of the ring it will take gets
 * its start event; *slot, or -1 (a CUDA error). */
static int
begin(struct comm_nccl *n, const char *what, enum comm_group g,
      struct inflight **slot)
{
    unsigned long t = atomic_load(&n->tail);
    struct inflight *f = &n->ring[t % RING];
    cudaError_t ce;

    /* A full ring: the oldest must end first (the watch thread retires
     * it; a hang there is the watchdog's). */
    while (t - atomic_load(&n->head) >= RING)
        usleep(100);
    if ((ce = cudaEventRecord(n->ready, n->compute)) != cudaSuccess ||
        (ce = cudaStreamWaitEvent(n->stream, n->ready, 0)) != cudaSuccess ||
        (ce = cudaEventRecord(f->start, n->stream)) != cudaSuccess)
        return cuda_failed(n, ce, what, g);
    f->what = what;
    f->g = g;
    *slot = f;
    return 0;
}

/* After enqueueing: its end event, the slot handed to the watch thread;
 * a blocking one (start 0) makes the compute stream wait for its end. */
static int
end(struct comm_nccl *n, struct inflight *f, ncclResult_t rc, int start)
{
    cudaError_t ce = cudaEventRecord(f->done, n->stream);

    if (ce != cudaSuccess)
        return cuda_failed(n, ce, f->what, f->g);
    atomic_store(&n->tail, atomic_load(&n->tail) + 1);
    if (rc != ncclSuccess) {
        snprintf(n->base.error, sizeof(n->base.error),
                 "%s over the %s group: %s", f->what, comm_group_name(f->g),
                 ncclGetErrorString(rc));
        return -1;
    }
    if (start)
        n->pending = 1;
    else if ((ce = cudaStreamWaitEvent(n->compute, f->done, 0)) != cudaSuccess)
        return cuda_failed(n, ce, f->what, f->g);
    return 0;
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

/* An all-reduce with op; start: only enqueued (wait_all() orders the
 * compute stream after it). */
static int
nccl_all_reduce_op(struct comm *c, void *buf, size_t count, enum comm_dtype t,
                   enum comm_group g, ncclRedOp_t op, int start)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "all-reduce");
    struct inflight *f;

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "all-reduce", (double)(count * comm_dtype_size(t)), n->size[g]);
    if (begin(n, start ? "all-reduce (overlapped)" : "all-reduce", g, &f) < 0)
        return -1;
    return end(n, f,
               ncclAllReduce(buf, buf, count, nccl_type(t), op, nc, n->stream),
               start);
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

/* The compute stream waits for every started collective (the comm stream
 * runs them in order: its work so far covers them); the host does not. */
static int
nccl_wait_all(struct comm *c)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    cudaError_t ce;

    if (!n->pending)
        return 0;
    n->pending = 0;
    if ((ce = cudaEventRecord(n->mark, n->stream)) != cudaSuccess ||
        (ce = cudaStreamWaitEvent(n->compute, n->mark, 0)) != cudaSuccess)
        return cuda_failed(n, ce, "waiting for the started collectives",
                           COMM_WORLD);
    return 0;
}

static int
nccl_reduce_scatter(struct comm *c, void *out, const void *in, size_t count,
                    enum comm_dtype t, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "reduce-scatter");
    struct inflight *f;

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "reduce-scatter", (double)(count * comm_dtype_size(t)) * n->size[g],
        n->size[g]);
    if (begin(n, "reduce-scatter", g, &f) < 0)
        return -1;
    return end(
        n, f,
        ncclReduceScatter(in, out, count, nccl_type(t), ncclSum, nc, n->stream),
        0);
}

static int
nccl_all_gather(struct comm *c, void *out, const void *in, size_t count,
                enum comm_dtype t, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "all-gather");
    struct inflight *f;
    size_t es = comm_dtype_size(t);

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "all-gather", (double)(count * es) * n->size[g], n->size[g]);
    /* (In place when in is this rank's place in out: NCCL sees it.) */
    if (begin(n, "all-gather", g, &f) < 0)
        return -1;
    return end(n, f, ncclAllGather(in, out, count, nccl_type(t), nc, n->stream),
               0);
}

/* One grouped call per owner: reduce-to or broadcast-from rank r of its
 * range, so the ranges may differ in length. */
static ncclResult_t
ranges_group(struct comm_nccl *n, ncclComm_t nc, void *buf, const size_t *off,
             enum comm_dtype t, enum comm_group g, int reduce)
{
    size_t es = comm_dtype_size(t);
    ncclResult_t rc = ncclGroupStart(), rc2;

    if (rc != ncclSuccess)
        return rc;
    for (int r = 0; r < n->size[g] && rc == ncclSuccess; r++) {
        char *p = (char *)buf + off[r] * es;
        size_t k = off[r + 1] - off[r];

        rc = reduce
                 ? ncclReduce(p, p, k, nccl_type(t), ncclSum, r, nc, n->stream)
                 : ncclBroadcast(p, p, k, nccl_type(t), r, nc, n->stream);
    }
    rc2 = ncclGroupEnd();
    return rc != ncclSuccess ? rc : rc2;
}

static int
ranges(struct comm_nccl *n, void *buf, const size_t *off, enum comm_dtype t,
       enum comm_group g, int reduce, const char *what, int start)
{
    ncclComm_t nc = group_of(n, g, what);
    struct inflight *f;

    if (nc == NULL)
        return -1;
    n->base.sent[g] += comm_ring_bytes(
        what, (double)(off[n->size[g]] * comm_dtype_size(t)), n->size[g]);
    if (begin(n, what, g, &f) < 0)
        return -1;
    return end(n, f, ranges_group(n, nc, buf, off, t, g, reduce), start);
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
    struct inflight *f;

    if (nc == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes(
        "reduce-scatter", (double)(count * comm_dtype_size(t)), n->size[g]);
    if (begin(n, "reduce", g, &f) < 0)
        return -1;
    return end(
        n, f,
        ncclReduce(buf, buf, count, nccl_type(t), ncclSum, root, nc, n->stream),
        0);
}

static int
nccl_broadcast(struct comm *c, void *buf, size_t bytes, int root,
               enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "broadcast");
    struct inflight *f;

    if (nc == NULL)
        return -1;
    c->sent[g] += n->coord[g] == root ? (double)bytes : 0;
    if (begin(n, "broadcast", g, &f) < 0)
        return -1;
    return end(n, f,
               ncclBroadcast(buf, buf, bytes, ncclUint8, root, nc, n->stream),
               0);
}

static int
nccl_send(struct comm *c, const void *buf, size_t bytes, int peer,
          enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "send");
    struct inflight *f;

    if (nc == NULL)
        return -1;
    c->sent[g] += (double)bytes;
    if (begin(n, "send", g, &f) < 0)
        return -1;
    return end(n, f, ncclSend(buf, bytes, ncclUint8, peer, nc, n->stream), 0);
}

static int
nccl_recv(struct comm *c, void *buf, size_t bytes, int peer, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "recv");
    struct inflight *f;

    if (nc == NULL)
        return -1;
    if (begin(n, "recv", g, &f) < 0)
        return -1;
    return end(n, f, ncclRecv(buf, bytes, ncclUint8, peer, nc, n->stream), 0);
}

/* One group: NCCL runs the pair together, neither waits for the other's
 * completion. */
static ncclResult_t
sendrecv_group(struct comm_nccl *n, ncclComm_t nc, const void *sbuf,
               size_t sbytes, void *rbuf, size_t rbytes, int peer)
{
    ncclResult_t rc = ncclGroupStart(), rc2;

    if (rc != ncclSuccess)
        return rc;
    if (sbytes)
        rc = ncclSend(sbuf, sbytes, ncclUint8, peer, nc, n->stream);
    if (rc == ncclSuccess && rbytes)
        rc = ncclRecv(rbuf, rbytes, ncclUint8, peer, nc, n->stream);
    rc2 = ncclGroupEnd();
    return rc != ncclSuccess ? rc : rc2;
}

static int
nccl_sendrecv(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
              size_t rbytes, int peer, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    ncclComm_t nc = group_of(n, g, "sendrecv");
    struct inflight *f;

    if (nc == NULL)
        return -1;
    c->sent[g] += (double)sbytes;
    if (begin(n, "sendrecv", g, &f) < 0)
        return -1;
    return end(n, f, sendrecv_group(n, nc, sbuf, sbytes, rbuf, rbytes, peer),
               0);
}

/* The host waits here, outside the step: for this rank's collectives
 * (the watch thread times that wait), then for the group's ranks. */
static int
nccl_barrier(struct comm *c, enum comm_group g)
{
    struct comm_nccl *n = (struct comm_nccl *)c;
    cudaError_t ce;

    if ((ce = cudaEventRecord(n->mark, n->stream)) != cudaSuccess ||
        (ce = cudaEventSynchronize(n->mark)) != cudaSuccess)
        return cuda_failed(n, ce, "barrier", g);
    /* The watch thread has retired them (and told the watchdog), so that
     * boot's barrier below is the collective it reports. */
    while (atomic_load(&n->head) != atomic_load(&n->tail))
        usleep(100);
    if (n->boot->barrier(n->boot, g) < 0) {
        snprintf(c->error, sizeof(c->error), "%s", n->boot->error);
        return -1;
    }
    return 0;
}

/* Free what n holds.  ok: the end of a run (the communicators destroyed
 * once the stream is done, boot destroyed: MPI_Finalize, or the sockets'
 * goodbye); else a failed setup: the communicators aborted (peers may
 * wait for this rank in them) and boot left to the caller, who exits. */
static void
release(struct comm_nccl *n, int ok)
{
    if (ok && n->stream)
        cudaStreamSynchronize(n->stream);
    if (n->thread_started) {
        atomic_store(&n->stop, 1);
        pthread_join(n->thread, NULL);
    }
    comm_watch_on_stop(NULL, NULL);
    for (int g = 0; g < COMM_N_GROUPS; g++)
        if (n->group[g] != NULL)
            (ok ? ncclCommDestroy : ncclCommAbort)(n->group[g]);
    for (int i = 0; i < RING; i++) {
        if (n->ring[i].start)
            cudaEventDestroy(n->ring[i].start);
        if (n->ring[i].done)
            cudaEventDestroy(n->ring[i].done);
    }
    if (n->ready)
        cudaEventDestroy(n->ready);
    if (n->mark)
        cudaEventDestroy(n->mark);
    if (n->stream)
        cudaStreamDestroy(n->stream);
    if (ok && n->boot)
        n->boot->destroy(n->boot); /* MPI_Finalize, or the sockets */
    free(n);
}

static void
nccl_destroy(struct comm *c)
{
    if (c != NULL)
        release((struct comm_nccl *)c, 1);
}

/* A failed setup: err, and boot left as it is.  (Destroying it would
 * tell the other ranks that this one finished well (the watchdog's
 * goodbye) while they may wait for it in NCCL's init, and MPI_Finalize
 * may wait for them: the caller exits instead, and they learn of it
 * when its connections close, or from mpirun.) */
static struct comm *
fail(struct comm_nccl *n, char *err, size_t err_len, const char *what,
     const char *why)
{
    snprintf(err, err_len, "NCCL backend: %s: %s", what, why);
    release(n, 0);
    return NULL;
}

struct comm *
comm_nccl(struct comm *boot, int device, void *stream, double timeout,
          char *err, size_t err_len)
{
    struct comm_nccl *n = calloc(1, sizeof(*n));
    int color[COMM_N_GROUPS], key[COMM_N_GROUPS], devices = 0;
    char why[768];
    struct comm_gpu_place mine, *places;
    struct cudaDeviceProp prop;
    ncclUniqueId id;
    ncclResult_t rc;
    cudaError_t ce;

    if (n == NULL) {
        snprintf(err, err_len, "NCCL backend: out of memory");
        return NULL;
    }
    n->boot = boot;
    n->base = *n->boot; /* rank, world, local rank, boot's watchdog */
    memset(n->base.sent, 0, sizeof(n->base.sent));
    n->base.name = "nccl";
    n->timeout = timeout;
    if ((ce = cudaGetDeviceCount(&devices)) != cudaSuccess || devices < 1)
        return fail(n, err, err_len, "no GPU",
                    ce != cudaSuccess ? cudaGetErrorString(ce)
                                      : "cudaGetDeviceCount found none");
    /* The compute backend's GPU (ops_cuda(): the local rank's, modulo
     * the GPUs this rank sees: one each where the launcher binds a GPU
     * to every task). */
    n->device =
        device >= 0
            ? device
            : (n->base.local_rank > 0 ? n->base.local_rank : 0) % devices;
    if ((ce = cudaSetDevice(n->device)) != cudaSuccess)
        return fail(n, err, err_len, "GPU setup", cudaGetErrorString(ce));
    n->compute = (cudaStream_t)stream;
    if ((ce = cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking)) !=
            cudaSuccess ||
        (ce = cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming)) !=
            cudaSuccess ||
        (ce = cudaEventCreateWithFlags(&n->mark, cudaEventDisableTiming)) !=
            cudaSuccess)
        return fail(n, err, err_len, "GPU setup", cudaGetErrorString(ce));
    for (int i = 0; i < RING; i++)
        if ((ce = cudaEventCreateWithFlags(
                 &n->ring[i].start, cudaEventDisableTiming)) != cudaSuccess ||
            (ce = cudaEventCreateWithFlags(
                 &n->ring[i].done, cudaEventDisableTiming)) != cudaSuccess)
            return fail(n, err, err_len, "GPU setup", cudaGetErrorString(ce));
    /* One GPU per rank: NCCL refuses two ranks on one GPU, so say which
     * ranks share one, and why, before it does. */
    if ((ce = cudaGetDeviceProperties(&prop, n->device)) != cudaSuccess)
        return fail(n, err, err_len, "GPU setup", cudaGetErrorString(ce));
    memset(&mine, 0, sizeof(mine));
    if (gethostname(mine.host, sizeof(mine.host) - 1) != 0)
        snprintf(mine.host, sizeof(mine.host), "?");
    memcpy(mine.uuid, &prop.uuid, sizeof(mine.uuid));
    mine.device = n->device;
    if ((places = calloc((size_t)n->base.world, sizeof(*places))) == NULL)
        return fail(n, err, err_len, "GPU setup", "out of memory");
    if (comm_gpu_gather(n->boot, &mine, places, why, sizeof(why)) < 0 ||
        comm_gpu_unique(places, n->base.world, devices, why, sizeof(why)) < 0) {
        free(places);
        return fail(n, err, err_len, "one GPU per rank", why);
    }
    free(places);
    memset(&id, 0, sizeof(id));
    if (n->base.rank == 0 && (rc = ncclGetUniqueId(&id)) != ncclSuccess)
        return fail(n, err, err_len, "ncclGetUniqueId", ncclGetErrorString(rc));
    if (comm_share_id(n->boot, &id, sizeof(id), why, sizeof(why)) < 0)
        return fail(n, err, err_len, "the bootstrap", why);
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
    /* Whatever stops this rank aborts the communicators first. */
    comm_watch_on_stop(abort_all, n);
    if (pthread_create(&n->thread, NULL, watch_main, n) != 0)
        return fail(n, err, err_len, "the watch thread", "cannot start it");
    n->thread_started = 1;
    return &n->base;
}
