/* SPDX-License-Identifier: MIT */
/*
 * comm_mpi.c: the communicator over MPI (Open MPI from Debian), for CPU
 * buffers.  The world is cut into the layout's groups with MPI_Comm_split;
 * rank order: tensor parallel fastest, then sharding, then data parallel,
 * then pipeline (comm.h).  Counts above INT_MAX are sent in pieces.
 *
 * The watchdog (comm_watch.c) watches the collective in progress over a
 * control connection of every rank to rank 0, whose address goes round
 * by MPI: one that waits longer than the timeout (a dead or stuck peer, a
 * rank that took another branch), or a rank that ends before the others,
 * stops every rank with a message naming the collective, the group and
 * each rank's last collective; under srun, which may let the other ranks
 * run on, as under mpirun.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_int.h"

#ifdef HAVE_MPI
#    include <mpi.h>

/* Elements per MPI call: MPI counts are int. */
#    define PIECE ((size_t)1 << 30)

struct comm_mpi {
    struct comm base;         /* first: the interface */
    int coord[COMM_N_GROUPS]; /* this rank's place in each group */
    MPI_Comm group[COMM_N_GROUPS];
    int size[COMM_N_GROUPS];
    struct comm_watch *watch;
    /* Started nonblocking collectives, and the group of the first. */
    MPI_Request *req;
    size_t n_req, cap_req;
    enum comm_group req_group;
    /* Count and displacement arrays of started all-gathers, freed when
     * they complete. */
    int **keep;
    size_t n_keep, cap_keep;
};

static void
busy(struct comm_mpi *m, const char *what, enum comm_group g)
{
    comm_watch_busy(m->watch, what, g, m->size[g]);
}

static void
idle(struct comm_mpi *m)
{
    comm_watch_idle(m->watch);
}

static MPI_Datatype
mpi_type(enum comm_dtype t)
{
    return t == COMM_F32   ? MPI_FLOAT
           : t == COMM_F64 ? MPI_DOUBLE
           : t == COMM_B16 ? MPI_UINT16_T
                           : MPI_INT64_T;
}

/* The group's communicator, or NULL with an error (a group this rank is
 * not in: the embedding group of a middle pipeline stage). */
static MPI_Comm
group_of(struct comm_mpi *m, enum comm_group g, const char *what)
{
    if ((int)g < 0 || g >= COMM_N_GROUPS || m->group[g] == MPI_COMM_NULL) {
        comm_not_in_group(&m->base, what, g);
        return MPI_COMM_NULL;
    }
    return m->group[g];
}

static int
failed(struct comm_mpi *m, int rc, const char *what, enum comm_group g)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    idle(m);
    if (rc == MPI_SUCCESS)
        return 0;
    MPI_Error_string(rc, msg, &len);
    snprintf(m->base.error, sizeof(m->base.error),
             "%s over the %s group: %.180s", what, comm_group_name(g), msg);
    return -1;
}

static int
mpi_group_size(const struct comm *c, enum comm_group g)
{
    const struct comm_mpi *m = (const struct comm_mpi *)c;

    return (int)g >= 0 && g < COMM_N_GROUPS ? m->size[g] : 0;
}

static int
mpi_group_rank(const struct comm *c, enum comm_group g)
{
    const struct comm_mpi *m = (const struct comm_mpi *)c;

    return (int)g >= 0 && g < COMM_N_GROUPS ? m->coord[g] : -1;
}

static int
mpi_all_reduce_op(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                  enum comm_group g, MPI_Op op)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "all-reduce");
    size_t es = comm_dtype_size(t);
    int rc = MPI_SUCCESS;

    if (mc == MPI_COMM_NULL)
        return -1;
    busy(m, "all-reduce", g);
    m->base.sent[g] +=
        comm_ring_bytes("all-reduce", (double)(n * es), m->size[g]);
    for (size_t off = 0; off < n && rc == MPI_SUCCESS; off += PIECE) {
        size_t k = n - off < PIECE ? n - off : PIECE;

        rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * es, (int)k,
                           mpi_type(t), op, mc);
    }
    return failed(m, rc, "all-reduce", g);
}

static int
mpi_all_reduce(struct comm *c, void *buf, size_t n, enum comm_dtype t,
               enum comm_group g)
{
    return mpi_all_reduce_op(c, buf, n, t, g, MPI_SUM);
}

static int
mpi_all_reduce_max(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                   enum comm_group g)
{
    return mpi_all_reduce_op(c, buf, n, t, g, MPI_MAX);
}

/* Room for one more started request (and a kept array pair). */
static int
room_for_request(struct comm_mpi *m, const char *what)
{
    if (m->n_req == m->cap_req) {
        size_t cap = m->cap_req ? 2 * m->cap_req : 64;
        MPI_Request *r = realloc(m->req, cap * sizeof(*r));

        if (r == NULL)
            goto oom;
        m->req = r;
        m->cap_req = cap;
    }
    if (m->n_keep + 2 > m->cap_keep) {
        size_t cap = m->cap_keep ? 2 * m->cap_keep : 64;
        int **k = realloc(m->keep, cap * sizeof(*k));

        if (k == NULL)
            goto oom;
        m->keep = k;
        m->cap_keep = cap;
    }
    return 0;
oom:
    snprintf(m->base.error, sizeof(m->base.error), "%s: out of memory", what);
    return -1;
}

static int
mpi_all_reduce_start(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                     enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "all-reduce");
    size_t es = comm_dtype_size(t);
    int rc = MPI_SUCCESS;

    if (mc == MPI_COMM_NULL)
        return -1;
    if (m->n_req == 0)
        m->req_group = g;
    m->base.sent[g] +=
        comm_ring_bytes("all-reduce", (double)(n * es), m->size[g]);
    for (size_t off = 0; off < n && rc == MPI_SUCCESS; off += PIECE) {
        size_t k = n - off < PIECE ? n - off : PIECE;

        if (room_for_request(m, "all-reduce") < 0)
            return -1;
        rc = MPI_Iallreduce(MPI_IN_PLACE, (char *)buf + off * es, (int)k,
                            mpi_type(t), MPI_SUM, mc, &m->req[m->n_req]);
        if (rc == MPI_SUCCESS)
            m->n_req++;
    }
    return failed(m, rc, "all-reduce", g);
}

static int
mpi_test_all(struct comm *c)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    int done;

    if (m->n_req == 0)
        return 0;
    return failed(
        m, MPI_Testall((int)m->n_req, m->req, &done, MPI_STATUSES_IGNORE),
        "all-reduce", m->req_group);
}

static int
mpi_wait_all(struct comm *c)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    int rc;

    if (m->n_req == 0)
        return 0;
    busy(m, "all-reduce (overlapped)", m->req_group);
    rc = MPI_Waitall((int)m->n_req, m->req, MPI_STATUSES_IGNORE);
    m->n_req = 0;
    while (m->n_keep > 0)
        free(m->keep[--m->n_keep]);
    return failed(m, rc, "all-reduce", m->req_group);
}

static int
too_big(struct comm_mpi *m, const char *what, size_t n)
{
    snprintf(m->base.error, sizeof(m->base.error),
             "%s of %zu elements per rank: more than this backend sends at "
             "once (%d)",
             what, n, INT_MAX);
    return -1;
}

static int
mpi_reduce_scatter(struct comm *c, void *out, const void *in, size_t n,
                   enum comm_dtype t, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "reduce-scatter");

    if (mc == MPI_COMM_NULL)
        return -1;
    if (n > INT_MAX)
        return too_big(m, "reduce-scatter", n);
    busy(m, "reduce-scatter", g);
    m->base.sent[g] += comm_ring_bytes(
        "reduce-scatter", (double)(n * comm_dtype_size(t)) * m->size[g],
        m->size[g]);
    return failed(
        m, MPI_Reduce_scatter_block(in, out, (int)n, mpi_type(t), MPI_SUM, mc),
        "reduce-scatter", g);
}

static int
mpi_all_gather(struct comm *c, void *out, const void *in, size_t n,
               enum comm_dtype t, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "all-gather");

    if (mc == MPI_COMM_NULL)
        return -1;
    if (n > INT_MAX)
        return too_big(m, "all-gather", n);
    busy(m, "all-gather", g);
    m->base.sent[g] += comm_ring_bytes(
        "all-gather", (double)(n * comm_dtype_size(t)) * m->size[g],
        m->size[g]);
    return failed(
        m,
        MPI_Allgather((const char *)in ==
                              (const char *)out +
                                  (size_t)m->coord[g] * n * comm_dtype_size(t)
                          ? MPI_IN_PLACE
                          : in,
                      (int)n, mpi_type(t), out, (int)n, mpi_type(t), mc),
        "all-gather", g);
}

/* MPI's int counts and displacements of the group's ranges. */
static int
range_counts(struct comm_mpi *m, const size_t *off, int n, int **counts,
             int **displs, const char *what)
{
    *counts = malloc((size_t)n * sizeof(int));
    *displs = malloc((size_t)n * sizeof(int));
    if (*counts == NULL || *displs == NULL) {
        free(*counts);
        free(*displs);
        snprintf(m->base.error, sizeof(m->base.error), "%s: out of memory",
                 what);
        return -1;
    }
    if (off[n] > INT_MAX) {
        free(*counts);
        free(*displs);
        return too_big(m, what, off[n]);
    }
    for (int r = 0; r < n; r++) {
        (*counts)[r] = (int)(off[r + 1] - off[r]);
        (*displs)[r] = (int)off[r];
    }
    return 0;
}

static int
mpi_reduce_scatter_ranges(struct comm *c, void *buf, const size_t *off,
                          enum comm_dtype t, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "reduce-scatter");
    size_t es = comm_dtype_size(t);
    int *counts, *displs, rc, me;

    if (mc == MPI_COMM_NULL || range_counts(m, off, m->size[g], &counts,
                                            &displs, "reduce-scatter") < 0)
        return -1;
    busy(m, "reduce-scatter", g);
    m->base.sent[g] += comm_ring_bytes(
        "reduce-scatter", (double)(off[m->size[g]] * es), m->size[g]);
    /* In place, MPI leaves this rank's sum at the start of buf. */
    rc =
        MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts, mpi_type(t), MPI_SUM, mc);
    me = m->coord[g];
    if (rc == MPI_SUCCESS && off[me] > 0)
        memmove((char *)buf + off[me] * es, buf, (size_t)counts[me] * es);
    free(counts);
    free(displs);
    return failed(m, rc, "reduce-scatter", g);
}

static int
mpi_all_gather_ranges(struct comm *c, void *buf, const size_t *off,
                      enum comm_dtype t, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "all-gather");
    int *counts, *displs, rc;

    if (mc == MPI_COMM_NULL ||
        range_counts(m, off, m->size[g], &counts, &displs, "all-gather") < 0)
        return -1;
    busy(m, "all-gather", g);
    m->base.sent[g] += comm_ring_bytes(
        "all-gather", (double)(off[m->size[g]] * comm_dtype_size(t)),
        m->size[g]);
    rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs,
                        mpi_type(t), mc);
    free(counts);
    free(displs);
    return failed(m, rc, "all-gather", g);
}

static int
mpi_all_gather_ranges_start(struct comm *c, void *buf, const size_t *off,
                            enum comm_dtype t, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "all-gather");
    int *counts, *displs, rc;

    if (mc == MPI_COMM_NULL || room_for_request(m, "all-gather") < 0 ||
        range_counts(m, off, m->size[g], &counts, &displs, "all-gather") < 0)
        return -1;
    if (m->n_req == 0)
        m->req_group = g;
    m->base.sent[g] += comm_ring_bytes(
        "all-gather", (double)(off[m->size[g]] * comm_dtype_size(t)),
        m->size[g]);
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts,
                         displs, mpi_type(t), mc, &m->req[m->n_req]);
    /* MPI reads counts and displs until the gather completes. */
    m->keep[m->n_keep++] = counts;
    m->keep[m->n_keep++] = displs;
    if (rc == MPI_SUCCESS)
        m->n_req++;
    return failed(m, rc, "all-gather", g);
}

static int
mpi_reduce(struct comm *c, void *buf, size_t n, enum comm_dtype t, int root,
           enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "reduce");
    size_t es = comm_dtype_size(t);
    int rc = MPI_SUCCESS, me;

    if (mc == MPI_COMM_NULL)
        return -1;
    me = m->coord[g];
    busy(m, "reduce", g);
    m->base.sent[g] +=
        comm_ring_bytes("reduce-scatter", (double)(n * es), m->size[g]);
    for (size_t off = 0; off < n && rc == MPI_SUCCESS; off += PIECE) {
        size_t k = n - off < PIECE ? n - off : PIECE;
        char *p = (char *)buf + off * es;

        rc = MPI_Reduce(me == root ? MPI_IN_PLACE : p, me == root ? p : NULL,
                        (int)k, mpi_type(t), MPI_SUM, root, mc);
    }
    return failed(m, rc, "reduce", g);
}

static int
mpi_broadcast(struct comm *c, void *buf, size_t bytes, int root,
              enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "broadcast");
    int rc = MPI_SUCCESS;

    if (mc == MPI_COMM_NULL)
        return -1;
    busy(m, "broadcast", g);
    m->base.sent[g] += m->coord[g] == root ? (double)bytes : 0;
    for (size_t off = 0; off < bytes && rc == MPI_SUCCESS; off += PIECE) {
        size_t k = bytes - off < PIECE ? bytes - off : PIECE;

        rc = MPI_Bcast((char *)buf + off, (int)k, MPI_BYTE, root, mc);
    }
    return failed(m, rc, "broadcast", g);
}

static int
mpi_send(struct comm *c, const void *buf, size_t bytes, int peer,
         enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "send");
    int rc = MPI_SUCCESS;

    if (mc == MPI_COMM_NULL)
        return -1;
    busy(m, "send", g);
    m->base.sent[g] += (double)bytes;
    for (size_t off = 0; off < bytes && rc == MPI_SUCCESS; off += PIECE) {
        size_t k = bytes - off < PIECE ? bytes - off : PIECE;

        rc = MPI_Send((const char *)buf + off, (int)k, MPI_BYTE, peer, 0, mc);
    }
    return failed(m, rc, "send", g);
}

static int
mpi_recv(struct comm *c, void *buf, size_t bytes, int peer, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "recv");
    int rc = MPI_SUCCESS;

    if (mc == MPI_COMM_NULL)
        return -1;
    busy(m, "recv", g);
    for (size_t off = 0; off < bytes && rc == MPI_SUCCESS; off += PIECE) {
        size_t k = bytes - off < PIECE ? bytes - off : PIECE;

        rc = MPI_Recv((char *)buf + off, (int)k, MPI_BYTE, peer, 0, mc,
                      MPI_STATUS_IGNORE);
    }
    return failed(m, rc, "recv", g);
}

static int
mpi_sendrecv(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
             size_t rbytes, int peer, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "sendrecv");
    int rc = MPI_SUCCESS;

    if (mc == MPI_COMM_NULL)
        return -1;
    busy(m, "sendrecv", g);
    m->base.sent[g] += (double)sbytes;
    for (size_t off = 0; (off < sbytes || off < rbytes) && rc == MPI_SUCCESS;
         off += PIECE) {
        size_t ks = off < sbytes ? sbytes - off : 0;
        size_t kr = off < rbytes ? rbytes - off : 0;

        ks = ks < PIECE ? ks : PIECE;
        kr = kr < PIECE ? kr : PIECE;
        rc = MPI_Sendrecv((const char *)sbuf + (ks ? off : 0), (int)ks,
                          MPI_BYTE, peer, 1, (char *)rbuf + (kr ? off : 0),
                          (int)kr, MPI_BYTE, peer, 1, mc, MPI_STATUS_IGNORE);
    }
    return failed(m, rc, "sendrecv", g);
}

static int
mpi_barrier(struct comm *c, enum comm_group g)
{
    struct comm_mpi *m = (struct comm_mpi *)c;
    MPI_Comm mc = group_of(m, g, "barrier");

    if (mc == MPI_COMM_NULL)
        return -1;
    busy(m, "barrier", g);
    return failed(m, MPI_Barrier(mc), "barrier", g);
}

static void
mpi_destroy(struct comm *c)
{
    struct comm_mpi *m = (struct comm_mpi *)c;

    if (m == NULL)
        return;
    comm_watch_stop(m->watch);
    for (int g = 1; g < COMM_N_GROUPS; g++)
        if (m->group[g] != MPI_COMM_NULL)
            MPI_Comm_free(&m->group[g]);
    MPI_Finalize();
    free(m->req);
    while (m->n_keep > 0)
        free(m->keep[--m->n_keep]);
    free(m->keep);
    free(m);
}

/* Split the world into group g: ranks with the same color form one group,
 * ordered by key. */
static int
split(struct comm_mpi *m, enum comm_group g, int color, int key)
{
    int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, &m->group[g]);

    if (rc != MPI_SUCCESS)
        return -1;
    if (m->group[g] == MPI_COMM_NULL) {
        m->size[g] = 0;
        m->coord[g] = -1;
        return 0;
    }
    MPI_Comm_size(m->group[g], &m->size[g]);
    MPI_Comm_rank(m->group[g], &m->coord[g]);
    return 0;
}

/* The watchdog's control channel: rank 0 listens, its address goes round
 * by MPI, every rank connects.  Where that fails (a rank cannot reach
 * rank 0's host), every rank watches only its own waits, and m->base.note
 * says so. */
static int
start_watch(struct comm_mpi *m, double timeout, char *err, size_t len)
{
    int rank = m->base.rank, world = m->base.world, ok = 1, all_ok = 0;
    int lfd = -1, fd = -1, *ctl = NULL;
    char card[512] = "", why[256] = "";
    double deadline = comm_now() + 60;

    if (world > 1) {
        if (rank == 0)
            ok = comm_ctl_listen(&lfd, card, sizeof(card), why, sizeof(why)) ==
                 0;
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (ok) {
            MPI_Bcast(card, sizeof(card), MPI_CHAR, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                ctl = calloc((size_t)world, sizeof(int));
                ok = ctl != NULL &&
                     comm_ctl_accept(lfd, card, world, ctl, deadline, why,
                                     sizeof(why)) == 0;
                close(lfd);
            } else {
                fd = comm_ctl_connect(card, rank, deadline, why, sizeof(why));
                ok = fd >= 0;
            }
        }
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all_ok) {
            if (fd >= 0)
                close(fd);
            if (ctl != NULL && ok)
                for (int r = 1; r < world; r++)
                    close(ctl[r]);
            free(ctl);
            ctl = NULL;
            snprintf(m->base.note, sizeof(m->base.note),
                     "the watchdog's connections to rank 0 failed%s%s: each "
                     "rank watches only its own collectives",
                     why[0] ? ": " : "", why);
        }
    }
    m->watch = comm_watch_start(rank, world,
                                !all_ok     ? NULL
                                : rank == 0 ? ctl
                                            : &fd,
                                timeout, err, len);
    m->base.watch = m->watch;
    free(ctl);
    return m->watch != NULL ? 0 : -1;
}

struct comm *
comm_mpi(int *argc, char ***argv, const struct comm_layout *l, double timeout,
         char *err, size_t err_len)
{
    struct comm_mpi *m;
    struct comm_layout lay = *l;
    int rank, world;
    int color[COMM_N_GROUPS], key[COMM_N_GROUPS];
    /* srun --mpi=pmix starts MPI ranks too. */
    const char *launcher = getenv("SLURM_STEP_ID") ? "srun" : "mpirun";

    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        snprintf(err, err_len, "MPI_Init failed");
        return NULL;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (comm_layout_resolve(&lay, world, launcher, err, err_len) < 0) {
        MPI_Finalize();
        return NULL;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        snprintf(err, err_len, "out of memory");
        MPI_Finalize();
        return NULL;
    }
    for (int g = 1; g < COMM_N_GROUPS; g++)
        m->group[g] = MPI_COMM_NULL; /* until split (destroy frees them) */
    m->base.name = "mpi";
    m->base.launcher = launcher;
    m->base.rank = rank;
    m->base.world = world;
    m->base.layout = lay;
    m->base.local_rank = comm_local_rank_env();
    if (m->base.local_rank < 0) { /* the ranks sharing this node's memory */
        MPI_Comm node;

        m->base.local_rank = 0;
        if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                                MPI_INFO_NULL, &node) == MPI_SUCCESS) {
            MPI_Comm_rank(node, &m->base.local_rank);
            MPI_Comm_free(&node);
        }
    }
    m->base.group_size = mpi_group_size;
    m->base.group_rank = mpi_group_rank;
    m->base.all_reduce_sum = mpi_all_reduce;
    m->base.all_reduce_max = mpi_all_reduce_max;
    m->base.sendrecv = mpi_sendrecv;
    m->base.all_reduce_sum_start = mpi_all_reduce_start;
    m->base.test_all = mpi_test_all;
    m->base.wait_all = mpi_wait_all;
    m->base.reduce_scatter_sum = mpi_reduce_scatter;
    m->base.all_gather = mpi_all_gather;
    m->base.reduce_scatter_ranges = mpi_reduce_scatter_ranges;
    m->base.all_gather_ranges = mpi_all_gather_ranges;
    m->base.all_gather_ranges_start = mpi_all_gather_ranges_start;
    m->base.reduce_sum = mpi_reduce;
    m->base.broadcast = mpi_broadcast;
    m->base.send = mpi_send;
    m->base.recv = mpi_recv;
    m->base.barrier = mpi_barrier;
    m->base.destroy = mpi_destroy;
    comm_layout_split(&lay, rank, color, key);
    m->group[COMM_WORLD] = MPI_COMM_WORLD;
    m->size[COMM_WORLD] = world;
    m->coord[COMM_WORLD] = rank;
    for (int g = 1; g < COMM_N_GROUPS; g++)
        if (split(m, (enum comm_group)g,
                  color[g] < 0 ? MPI_UNDEFINED : color[g], key[g]) < 0) {
            snprintf(err, err_len, "MPI_Comm_split failed");
            mpi_destroy(&m->base);
            return NULL;
        }
    if (start_watch(m, timeout, err, err_len) < 0) {
        mpi_destroy(&m->base);
        return NULL;
    }
    return &m->base;
}

#else /* !HAVE_MPI */

struct comm *
comm_mpi(int *argc, char ***argv, const struct comm_layout *l, double timeout,
         char *err, size_t err_len)
{
    (void)argc;
    (void)argv;
    (void)l;
    (void)timeout;
    snprintf(err, err_len,
             "this build has no MPI (install libopenmpi-dev and openmpi-bin "
             "with scripts/install-deps, then make reconfigure && make)");
    return NULL;
}

#endif

int
comm_local_rank_env(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "SLURM_LOCALID",
                                        "LOCAL_RANK" };

    for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r;

        if (v == NULL || *v == '\0')
            continue;
        r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r < 1 << 20)
            return (int)r;
    }
    return -1;
}

int
comm_launched_by_mpi(void)
{
    /* Open MPI's mpirun, PMIx (srun --mpi=pmix), MPICH/PMI. */
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                                        "PMI_SIZE" };

    for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++)
        if (getenv(vars[i]) != NULL)
            return 1;
    return 0;
}
