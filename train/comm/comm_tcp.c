/* SPDX-License-Identifier: MIT */
/*
 * comm_tcp.c: the communicator over TCP sockets, for CPU ranks started
 * without MPI (srun without PMIx, torchrun, or RANK/WORLD_SIZE by hand).
 * comm_rdzv.c connects every two ranks; each collective is then one or
 * two rounds of direct exchanges, driven by poll() so that no pair waits
 * for the other to read:
 *
 *   all-reduce      each rank owns a 1/n slice; every rank sends each
 *                   owner its slice, the owner sums them in the group's
 *                   rank order, and sends the sum to every rank
 *   reduce-scatter  the first half of that; reduce the same to the root
 *   all-gather      every rank sends its part to every rank
 *   broadcast       the root sends to every rank
 *
 * Each rank sends (n-1)/n of the buffer per half, as a ring does, and
 * every sum has one order, so the results are deterministic whatever
 * the timing, bit for bit those of the MPI backend on two ranks (a + b
 * = b + a), and the same on every rank.  Reductions run in pieces of
 * PIECE bytes per peer, which bounds the scratch memory.
 *
 * Every message carries a header: what it is, the group, its size and
 * the sender's collective number, so ranks that took different paths
 * stop with both collectives named instead of reading each other's
 * data.  A connection that closes mid-collective names the rank that
 * went; the watchdog (comm_watch.c) catches the waits that never end.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_int.h"

#define PIECE     ((size_t)1 << 20)
#define HDR_MAGIC 0x454b4d47u /* "GMKE" */

enum op {
    OP_ALL_REDUCE,
    OP_REDUCE_SCATTER,
    OP_ALL_GATHER,
    OP_REDUCE,
    OP_BROADCAST,
    OP_SEND,
    OP_BARRIER
};

static const char *const op_names[] = { "all-reduce", "reduce-scatter",
                                        "all-gather", "reduce",
                                        "broadcast",  "send",
                                        "barrier" };

struct hdr {
    uint32_t magic;
    uint16_t op, group;
    uint64_t bytes, seq;
};

/* One peer's part of an exchange: something to send, to receive, or
 * both, each behind a header. */
struct xfer {
    int peer; /* world rank */
    const char *sbuf;
    size_t slen, sdone; /* sdone counts the header too */
    int sending;
    char *rbuf;
    size_t rlen, rdone;
    int receiving;
    struct hdr sh, rh;
};

struct comm_tcp {
    struct comm base; /* first: the interface */
    int coord[COMM_N_GROUPS], size[COMM_N_GROUPS];
    int *members[COMM_N_GROUPS]; /* world ranks by group rank; NULL: not in */
    int *fd;                     /* to every world rank; -1 to itself */
    struct comm_watch *watch;
    unsigned long long seq; /* this rank's collectives */
    char *tmp;              /* reduction scratch */
    size_t tmp_cap;
    /* Work arrays of world entries (a collective at a time). */
    struct xfer *x;
    char **parts;
    size_t *at, *k, *atb, *kb;
};

/* ------------------------------------------------------------------------ */
/* The exchange                                                              */

/* The error of collective `what` over g: "<what> over the <g> group:
 * <why>". */
static int fail(struct comm_tcp *t, const char *what, enum comm_group g,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
fail(struct comm_tcp *t, const char *what, enum comm_group g, const char *fmt,
     ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(t->base.error, sizeof(t->base.error), "%s over the %s group: %s",
             what, comm_group_name(g), msg);
    return -1;
}

/* A header that is not the one expected: the two ranks are in different
 * collectives. */
static int
mismatch(struct comm_tcp *t, const struct xfer *x, const struct hdr *want,
         const char *what, enum comm_group g)
{
    const struct hdr *h = &x->rh;

    if (h->magic != HDR_MAGIC)
        return fail(t, what, g, "rank %d sent what is not a message of ours",
                    x->peer);
    snprintf(t->base.error, sizeof(t->base.error),
             "this rank's collective #%llu, %s over the %s group (%llu "
             "bytes), met rank %d's #%llu, %s over the %s group (%llu bytes): "
             "the ranks took different paths",
             t->seq, what, comm_group_name(g), (unsigned long long)want->bytes,
             x->peer, (unsigned long long)h->seq,
             h->op <= OP_BARRIER ? op_names[h->op] : "?",
             comm_group_name((enum comm_group)h->group),
             (unsigned long long)h->bytes);
    return -1;
}

/* Run the exchanges x[0..n) to their end. */
static int
exchange(struct comm_tcp *t, struct xfer *x, int n, enum op op,
         enum comm_group g, const char *what)
{
    struct pollfd pf[64];
    struct hdr want = { HDR_MAGIC, (uint16_t)op, (uint16_t)g, 0, 0 };
    int left = 0;

    for (int i = 0; i < n; i++) {
        x[i].sh = want;
        x[i].sh.bytes = x[i].slen;
        x[i].sh.seq = t->seq;
        x[i].sdone = x[i].rdone = 0;
        left += x[i].sending + x[i].receiving;
    }
    while (left > 0) {
        int k = 0, base = 0;

        /* (At most 64 peers a poll; a bigger group takes turns.) */
        for (int i = 0; i < n && k < 64; i++) {
            if (!x[i].sending && !x[i].receiving)
                continue;
            if (k == 0)
                base = i;
            pf[k].fd = t->fd[x[i].peer];
            pf[k].events = (short)((x[i].sending ? POLLOUT : 0) |
                                   (x[i].receiving ? POLLIN : 0));
            pf[k].revents = 0;
            k++;
        }
        if (poll(pf, (nfds_t)k, 1000) < 0 && errno != EINTR)
            return fail(t, what, g, "poll: %s", strerror(errno));
        for (int i = base, j = 0; i < n && j < k; i++) {
            struct xfer *e = &x[i];
            short ev;
            ssize_t got;

            if (!e->sending && !e->receiving)
                continue;
            ev = pf[j++].revents;
            if (e->sending && (ev & (POLLOUT | POLLERR | POLLHUP))) {
                size_t hs = sizeof(e->sh);
                const char *p = e->sdone < hs ? (const char *)&e->sh + e->sdone
                                              : e->sbuf + (e->sdone - hs);
                size_t m =
                    e->sdone < hs ? hs - e->sdone : e->slen - (e->sdone - hs);

                got = send(t->fd[e->peer], p, m, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (got < 0 && errno != EAGAIN && errno != EINTR)
                    return fail(t, what, g,
                                "rank %d is gone (%s): it ended or died",
                                e->peer, strerror(errno));
                if (got > 0 && (e->sdone += (size_t)got) == hs + e->slen) {
                    e->sending = 0;
                    left--;
                }
            }
            if (e->receiving && (ev & (POLLIN | POLLERR | POLLHUP))) {
                size_t hs = sizeof(e->rh);
                char *p = e->rdone < hs ? (char *)&e->rh + e->rdone
                                        : e->rbuf + (e->rdone - hs);
                size_t m =
                    e->rdone < hs ? hs - e->rdone : e->rlen - (e->rdone - hs);

                got = recv(t->fd[e->peer], p, m, MSG_DONTWAIT);
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                    return fail(
                        t, what, g, "rank %d is gone (%s): it ended or died",
                        e->peer,
                        got == 0 ? "connection closed" : strerror(errno));
                if (got > 0 && e->rdone < hs && e->rdone + (size_t)got == hs) {
                    want.bytes = e->rlen;
                    if (e->rh.magic != HDR_MAGIC || e->rh.op != want.op ||
                        e->rh.group != want.group || e->rh.bytes != want.bytes)
                        return mismatch(t, e, &want, what, g);
                }
                if (got > 0 && (e->rdone += (size_t)got) == hs + e->rlen) {
                    e->receiving = 0;
                    left--;
                }
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Helpers of the collectives                                                */

/* Start collective `what` over g: its members' world ranks, *n of them,
 * this rank *me among them (NULL with the error if this rank is in no
 * such group); the watchdog told. */
static int *
begin(struct comm_tcp *t, const char *what, enum comm_group g, int *n, int *me)
{
    if ((int)g < 0 || g >= COMM_N_GROUPS || t->members[g] == NULL) {
        comm_not_in_group(&t->base, what, g);
        return NULL;
    }
    *n = t->size[g];
    *me = t->coord[g];
    t->seq++;
    comm_watch_busy(t->watch, what, g, *n);
    return t->members[g];
}

static int
end(struct comm_tcp *t, int rc)
{
    comm_watch_idle(t->watch);
    return rc;
}

static char *
scratch(struct comm_tcp *t, size_t bytes)
{
    if (bytes > t->tmp_cap) {
        char *p = realloc(t->tmp, bytes);

        if (p == NULL) {
            snprintf(t->base.error, sizeof(t->base.error),
                     "out of memory (%zu bytes of scratch)", bytes);
            return NULL;
        }
        t->tmp = p;
        t->tmp_cap = bytes;
    }
    return t->tmp;
}

/* dst[0..k) = the rank-ordered reduction of the n parts src[r] (each k
 * elements): ((s0 op s1) op s2) ... */
static void
reduce_parts(void *dst, char *const *src, int n, size_t k, enum comm_dtype d,
             int is_max)
{
    for (size_t i = 0; i < k; i++) {
        if (d == COMM_F32) {
            float a = ((const float *)src[0])[i];

            for (int r = 1; r < n; r++) {
                float b = ((const float *)src[r])[i];

                a = is_max ? (b > a ? b : a) : a + b;
            }
            ((float *)dst)[i] = a;
        } else if (d == COMM_F64) {
            double a = ((const double *)src[0])[i];

            for (int r = 1; r < n; r++) {
                double b = ((const double *)src[r])[i];

                a = is_max ? (b > a ? b : a) : a + b;
            }
            ((double *)dst)[i] = a;
        } else {
            int64_t a = ((const int64_t *)src[0])[i];

            for (int r = 1; r < n; r++) {
                int64_t b = ((const int64_t *)src[r])[i];

                a = is_max ? (b > a ? b : a) : a + b;
            }
            ((int64_t *)dst)[i] = a;
        }
    }
}

/* The reducing half, one piece: every group rank q sends me its
 * elements [at[me], at[me] + k[me]) of its buffer (in + ...), and I send
 * each q mine of [at[q], at[q] + k[q]); dst[0..k[me]) = the rank-ordered
 * reduction (dst may be my own elements).  at and k in elements. */
static int
reduce_piece(struct comm_tcp *t, const int *m, enum comm_group g,
             const char *in, void *dst, const size_t *at, const size_t *k,
             enum comm_dtype d, int is_max, enum op op, const char *what)
{
    int n = t->size[g], me = t->coord[g];
    size_t es = comm_dtype_size(d), km = k[me] * es;
    char *tmp = scratch(t, (size_t)n * (km ? km : 1));
    char **parts = t->parts;
    struct xfer *x = t->x;
    int nx = 0;

    if (tmp == NULL)
        return -1;
    for (int q = 0; q < n; q++) {
        parts[q] = tmp + (size_t)q * km;
        if (q == me) {
            memcpy(parts[q], in + at[me] * es, km);
            continue;
        }
        memset(&x[nx], 0, sizeof(x[nx]));
        x[nx].peer = m[q];
        x[nx].sbuf = in + at[q] * es;
        x[nx].slen = k[q] * es;
        x[nx].sending = 1;
        x[nx].rbuf = parts[q];
        x[nx].rlen = km;
        x[nx].receiving = 1;
        nx++;
    }
    if (exchange(t, x, nx, op, g, what) < 0)
        return -1;
    reduce_parts(dst, parts, n, k[me], d, is_max);
    return 0;
}

/* The gathering half: every group rank q sends its [at[q], at[q] +
 * k[q]) of buf (bytes) to every other, which puts it in the same place. */
static int
gather_bytes(struct comm_tcp *t, const int *m, enum comm_group g, char *buf,
             const size_t *at, const size_t *k, const char *what)
{
    int n = t->size[g], me = t->coord[g], nx = 0;
    struct xfer *x = t->x;

    for (int q = 0; q < n; q++) {
        if (q == me)
            continue;
        memset(&x[nx], 0, sizeof(x[nx]));
        x[nx].peer = m[q];
        x[nx].sbuf = buf + at[me];
        x[nx].slen = k[me];
        x[nx].sending = 1;
        x[nx].rbuf = buf + at[q];
        x[nx].rlen = k[q];
        x[nx].receiving = 1;
        nx++;
    }
    return exchange(t, x, nx, OP_ALL_GATHER, g, what);
}

/* ------------------------------------------------------------------------ */
/* The collectives                                                           */

static int
tcp_group_size(const struct comm *c, enum comm_group g)
{
    const struct comm_tcp *t = (const struct comm_tcp *)c;

    return (int)g >= 0 && g < COMM_N_GROUPS ? t->size[g] : 0;
}

static int
tcp_group_rank(const struct comm *c, enum comm_group g)
{
    const struct comm_tcp *t = (const struct comm_tcp *)c;

    return (int)g >= 0 && g < COMM_N_GROUPS ? t->coord[g] : -1;
}

/* An all-reduce in pieces of n slices of at most PIECE bytes: each
 * owner's slice reduced, then gathered. */
static int
all_reduce_op(struct comm *c, void *buf, size_t count, enum comm_dtype d,
              enum comm_group g, int is_max)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "all-reduce";
    int n, me, rc = 0, *m = begin(t, what, g, &n, &me);
    size_t es = comm_dtype_size(d), per = PIECE / es;

    if (m == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes("all-reduce", (double)(count * es), n);
    for (size_t off = 0; off < count && n > 1 && rc == 0;
         off += per * (size_t)n) {
        size_t len =
            count - off < per * (size_t)n ? count - off : per * (size_t)n;
        size_t *at = t->at, *k = t->k, *atb = t->atb, *kb = t->kb;
        char *p = (char *)buf + off * es;

        for (int q = 0; q < n; q++) {
            at[q] = len * (size_t)q / (size_t)n;
            k[q] = len * (size_t)(q + 1) / (size_t)n - at[q];
            atb[q] = at[q] * es;
            kb[q] = k[q] * es;
        }
        rc = reduce_piece(t, m, g, p, p + at[me] * es, at, k, d, is_max,
                          OP_ALL_REDUCE, what);
        if (rc == 0)
            rc = gather_bytes(t, m, g, p, atb, kb, what);
    }
    return end(t, rc);
}

static int
tcp_all_reduce(struct comm *c, void *buf, size_t count, enum comm_dtype d,
               enum comm_group g)
{
    return all_reduce_op(c, buf, count, d, g, 0);
}

static int
tcp_all_reduce_max(struct comm *c, void *buf, size_t count, enum comm_dtype d,
                   enum comm_group g)
{
    return all_reduce_op(c, buf, count, d, g, 1);
}

/* The nonblocking ones run at once: every rank issues the same
 * collectives in the same order, so finishing one early waits for
 * nobody who is not coming. */
static int
tcp_nothing(struct comm *c)
{
    (void)c;
    return 0;
}

static int
tcp_reduce_scatter(struct comm *c, void *out, const void *in, size_t count,
                   enum comm_dtype d, enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "reduce-scatter";
    int n, me, rc = 0, *m = begin(t, what, g, &n, &me);
    size_t es = comm_dtype_size(d), per = PIECE / es;

    if (m == NULL)
        return -1;
    c->sent[g] +=
        comm_ring_bytes("reduce-scatter", (double)(count * es) * n, n);
    if (n == 1 && out != in)
        memmove(out, in, count * es);
    for (size_t off = 0; off < count && n > 1 && rc == 0; off += per) {
        size_t k1 = count - off < per ? count - off : per;
        size_t *at = t->at, *k = t->k;

        for (int q = 0; q < n; q++) {
            at[q] = (size_t)q * count + off;
            k[q] = k1;
        }
        rc = reduce_piece(t, m, g, in, (char *)out + off * es, at, k, d, 0,
                          OP_REDUCE_SCATTER, what);
    }
    return end(t, rc);
}

static int
tcp_all_gather(struct comm *c, void *out, const void *in, size_t count,
               enum comm_dtype d, enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "all-gather";
    int n, me, rc, *m = begin(t, what, g, &n, &me);
    size_t es = comm_dtype_size(d);

    if (m == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes("all-gather", (double)(count * es) * n, n);
    if ((const char *)in != (char *)out + (size_t)me * count * es)
        memmove((char *)out + (size_t)me * count * es, in, count * es);
    {
        size_t *at = t->atb, *k = t->kb;

        for (int q = 0; q < n; q++) {
            at[q] = (size_t)q * count * es;
            k[q] = count * es;
        }
        rc = n > 1 ? gather_bytes(t, m, g, out, at, k, what) : 0;
    }
    return end(t, rc);
}

static int
tcp_reduce_scatter_ranges(struct comm *c, void *buf, const size_t *off,
                          enum comm_dtype d, enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "reduce-scatter";
    int n, me, rc = 0, *m = begin(t, what, g, &n, &me);
    size_t es = comm_dtype_size(d), per = PIECE / es, longest = 0;

    if (m == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes("reduce-scatter", (double)(off[n] * es), n);
    for (int q = 0; q < n; q++)
        if (off[q + 1] - off[q] > longest)
            longest = off[q + 1] - off[q];
    /* Piece p of every range at once (an empty piece is still a
     * message: both sides count the same pieces). */
    for (size_t p = 0; p * per < longest && n > 1 && rc == 0; p++) {
        size_t *at = t->at, *k = t->k;

        for (int q = 0; q < n; q++) {
            size_t len = off[q + 1] - off[q];

            at[q] = off[q] + (p * per < len ? p * per : len);
            k[q] =
                p * per < len ? (len - p * per < per ? len - p * per : per) : 0;
        }
        rc = reduce_piece(t, m, g, buf, (char *)buf + at[me] * es, at, k, d, 0,
                          OP_REDUCE_SCATTER, what);
    }
    return end(t, rc);
}

static int
tcp_all_gather_ranges(struct comm *c, void *buf, const size_t *off,
                      enum comm_dtype d, enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "all-gather";
    int n, me, rc, *m = begin(t, what, g, &n, &me);
    size_t es = comm_dtype_size(d);

    if (m == NULL)
        return -1;
    c->sent[g] += comm_ring_bytes("all-gather", (double)(off[n] * es), n);
    {
        size_t *at = t->atb, *k = t->kb;

        for (int q = 0; q < n; q++) {
            at[q] = off[q] * es;
            k[q] = (off[q + 1] - off[q]) * es;
        }
        rc = n > 1 ? gather_bytes(t, m, g, buf, at, k, what) : 0;
    }
    return end(t, rc);
}

static int
tcp_reduce(struct comm *c, void *buf, size_t count, enum comm_dtype d, int root,
           enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "reduce";
    int n, me, rc = 0, *m = begin(t, what, g, &n, &me);
    size_t es = comm_dtype_size(d), per = PIECE / es;

    if (m == NULL)
        return -1;
    if (root < 0 || root >= n)
        return end(t, fail(t, what, g, "root %d is no rank", root));
    c->sent[g] += comm_ring_bytes("reduce-scatter", (double)(count * es), n);
    for (size_t off = 0; off < count && n > 1 && rc == 0; off += per) {
        size_t k1 = count - off < per ? count - off : per;
        size_t *at = t->at, *k = t->k;
        char *p = (char *)buf + off * es;

        /* The root's slice is all of the piece; the others' empty. */
        for (int q = 0; q < n; q++) {
            at[q] = 0;
            k[q] = q == root ? k1 : 0;
        }
        if (me == root) {
            rc = reduce_piece(t, m, g, p, p, at, k, d, 0, OP_REDUCE, what);
        } else {
            struct xfer x;

            memset(&x, 0, sizeof(x));
            x.peer = m[root];
            x.sbuf = p;
            x.slen = k1 * es;
            x.sending = 1;
            /* (reduce_piece() at the root sends each rank its share of
             * the rank's own slice: nothing, but a header.) */
            x.rlen = 0;
            x.receiving = 1;
            rc = exchange(t, &x, 1, OP_REDUCE, g, what);
        }
    }
    return end(t, rc);
}

static int
tcp_broadcast(struct comm *c, void *buf, size_t bytes, int root,
              enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    const char *what = "broadcast";
    int n, me, nx = 0, rc, *m = begin(t, what, g, &n, &me);

    if (m == NULL)
        return -1;
    if (root < 0 || root >= n)
        return end(t, fail(t, what, g, "root %d is no rank", root));
    c->sent[g] += me == root ? (double)bytes : 0;
    {
        struct xfer *x = t->x;

        for (int q = 0; q < n; q++) {
            if (q == me || (me != root && q != root))
                continue;
            memset(&x[nx], 0, sizeof(x[nx]));
            x[nx].peer = m[q];
            if (me == root) {
                x[nx].sbuf = buf;
                x[nx].slen = bytes;
                x[nx].sending = 1;
            } else {
                x[nx].rbuf = buf;
                x[nx].rlen = bytes;
                x[nx].receiving = 1;
            }
            nx++;
        }
        rc = exchange(t, x, nx, OP_BROADCAST, g, what);
    }
    return end(t, rc);
}

/* Point to point: peer is a rank of group g. */
static int
p2p(struct comm *c, const void *sbuf, size_t sbytes, int do_send, void *rbuf,
    size_t rbytes, int do_recv, int peer, enum comm_group g, const char *what)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    int n, me, *m = begin(t, what, g, &n, &me);
    struct xfer x;

    if (m == NULL)
        return -1;
    if (peer < 0 || peer >= n || peer == me)
        return end(t, fail(t, what, g,
                           "peer %d is not another rank of the group", peer));
    c->sent[g] += do_send ? (double)sbytes : 0;
    memset(&x, 0, sizeof(x));
    x.peer = m[peer];
    x.sbuf = sbuf;
    x.slen = sbytes;
    x.sending = do_send;
    x.rbuf = rbuf;
    x.rlen = rbytes;
    x.receiving = do_recv;
    return end(t, exchange(t, &x, 1, OP_SEND, g, what));
}

static int
tcp_send(struct comm *c, const void *buf, size_t bytes, int peer,
         enum comm_group g)
{
    return p2p(c, buf, bytes, 1, NULL, 0, 0, peer, g, "send");
}

static int
tcp_recv(struct comm *c, void *buf, size_t bytes, int peer, enum comm_group g)
{
    return p2p(c, NULL, 0, 0, buf, bytes, 1, peer, g, "recv");
}

static int
tcp_sendrecv(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
             size_t rbytes, int peer, enum comm_group g)
{
    return p2p(c, sbuf, sbytes, 1, rbuf, rbytes, 1, peer, g, "sendrecv");
}

/* Everyone tells the group's rank 0, which then tells everyone. */
static int
tcp_barrier(struct comm *c, enum comm_group g)
{
    struct comm_tcp *t = (struct comm_tcp *)c;
    int n, me, rc = 0, *m = begin(t, "barrier", g, &n, &me);

    if (m == NULL)
        return -1;
    for (int round = 0; round < 2 && n > 1 && rc == 0; round++) {
        struct xfer *x = t->x;
        int nx = 0;

        for (int q = me == 0 ? 1 : 0; q < (me == 0 ? n : 1); q++) {
            memset(&x[nx], 0, sizeof(x[nx]));
            x[nx].peer = m[q];
            x[nx].sending = (me == 0) == (round == 1);
            x[nx].receiving = !x[nx].sending;
            nx++;
        }
        rc = exchange(t, x, nx, OP_BARRIER, g, "barrier");
    }
    return end(t, rc);
}

static void
tcp_destroy(struct comm *c)
{
    struct comm_tcp *t = (struct comm_tcp *)c;

    if (t == NULL)
        return;
    /* Nobody leaves (and closes its connections) before everyone came;
     * a rank gone by now has ended the run anyway. */
    tcp_barrier(c, COMM_WORLD);
    comm_watch_stop(t->watch);
    for (int r = 0; r < c->world; r++)
        if (t->fd[r] >= 0)
            close(t->fd[r]);
    for (int g = 0; g < COMM_N_GROUPS; g++)
        free(t->members[g]);
    free(t->fd);
    free(t->tmp);
    free(t->x);
    free(t->parts);
    free(t->at);
    free(t);
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                     */

/* Each group's members in rank order, from every rank's colors. */
static int
make_groups(struct comm_tcp *t, const struct comm_layout *l)
{
    int mine[COMM_N_GROUPS], key[COMM_N_GROUPS], color[COMM_N_GROUPS];

    comm_layout_split(l, t->base.rank, mine, key);
    for (int g = 0; g < COMM_N_GROUPS; g++) {
        t->coord[g] = mine[g] < 0 ? -1 : key[g];
        t->size[g] = 0;
        if (mine[g] >= 0 && (t->members[g] = calloc((size_t)t->base.world,
                                                    sizeof(int))) == NULL)
            return -1;
    }
    for (int r = 0; r < t->base.world; r++) {
        comm_layout_split(l, r, color, key);
        for (int g = 0; g < COMM_N_GROUPS; g++)
            if (mine[g] >= 0 && color[g] == mine[g]) {
                t->members[g][key[g]] = r;
                t->size[g]++;
            }
    }
    return 0;
}

struct comm *
comm_tcp(const struct comm_launch *env, const struct comm_layout *l,
         double timeout, int *usage, char *err, size_t err_len)
{
    struct comm_layout lay = *l;
    struct comm_rdzv rd = { NULL, NULL };
    struct comm_tcp *t;

    *usage = 0;
    if (comm_layout_resolve(&lay, env->world, env->launcher, err, err_len) <
        0) {
        *usage = 1;
        return NULL;
    }
    if (comm_rdzv_run(env, &lay, timeout, &rd, usage, err, err_len) < 0)
        return NULL;
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        goto oom;
    t->fd = rd.mesh;
    rd.mesh = NULL;
    t->base.name = "tcp";
    t->base.launcher = env->launcher;
    t->base.rank = env->rank;
    t->base.world = env->world;
    t->base.layout = lay;
    t->base.local_rank = env->local_rank >= 0 ? env->local_rank : 0;
    t->x = calloc((size_t)env->world, sizeof(*t->x));
    t->parts = calloc((size_t)env->world, sizeof(*t->parts));
    t->at = calloc((size_t)env->world * 4, sizeof(*t->at));
    if (t->x == NULL || t->parts == NULL || t->at == NULL ||
        make_groups(t, &lay) < 0)
        goto oom;
    t->k = t->at + env->world;
    t->atb = t->k + env->world;
    t->kb = t->atb + env->world;
    t->base.group_size = tcp_group_size;
    t->base.group_rank = tcp_group_rank;
    t->base.all_reduce_sum = tcp_all_reduce;
    t->base.all_reduce_max = tcp_all_reduce_max;
    t->base.all_reduce_sum_start = tcp_all_reduce;
    t->base.test_all = tcp_nothing;
    t->base.wait_all = tcp_nothing;
    t->base.reduce_scatter_sum = tcp_reduce_scatter;
    t->base.all_gather = tcp_all_gather;
    t->base.reduce_scatter_ranges = tcp_reduce_scatter_ranges;
    t->base.all_gather_ranges = tcp_all_gather_ranges;
    t->base.all_gather_ranges_start = tcp_all_gather_ranges;
    t->base.reduce_sum = tcp_reduce;
    t->base.broadcast = tcp_broadcast;
    t->base.send = tcp_send;
    t->base.recv = tcp_recv;
    t->base.sendrecv = tcp_sendrecv;
    t->base.barrier = tcp_barrier;
    t->base.destroy = tcp_destroy;
    t->watch =
        comm_watch_start(env->rank, env->world, rd.ctl, timeout, err, err_len);
    t->base.watch = t->watch;
    if (t->watch == NULL) {
        for (int r = 0; r < (env->rank == 0 ? env->world : 1); r++)
            if (rd.ctl[r] >= 0)
                close(rd.ctl[r]);
        comm_rdzv_release(&rd, env->world);
        t->base.destroy = NULL;
        goto fail;
    }
    comm_rdzv_release(&rd, env->world);
    return &t->base;
oom:
    snprintf(err, err_len, "out of memory");
fail:
    if (t != NULL) {
        for (int g = 0; g < COMM_N_GROUPS; g++)
            free(t->members[g]);
        if (t->fd != NULL)
            for (int r = 0; r < env->world; r++)
                if (t->fd[r] >= 0)
                    close(t->fd[r]);
        free(t->fd);
        free(t->x);
        free(t->parts);
        free(t->at);
        free(t);
    }
    if (rd.mesh != NULL)
        for (int r = 0; r < env->world; r++)
            if (rd.mesh[r] >= 0)
                close(rd.mesh[r]);
    comm_rdzv_release(&rd, env->world);
    return NULL;
}
