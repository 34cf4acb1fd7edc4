/* SPDX-License-Identifier: MIT */
/*
 * comm_staged.c: a CPU communicator (MPI or TCP) for buffers in the
 * compute backend's memory, each collective's data copied to the host
 * and back (`train --comm_backend host`).  Torch's gloo does the same
 * with CUDA tensors.  It is slower than NCCL (the host waits for the
 * compute queue at each collective, and the bytes cross PCIe twice) but
 * it lets several ranks share one GPU, which NCCL refuses: the one-GPU
 * machine runs every parallel layout on --device cuda this way, and a
 * CPU run takes the same path with plain copies (tests/comm/test_comm.c
 * checks that no device byte is touched but through the copies).
 *
 * Only the bytes a collective reads go down and only those it writes go
 * up (an all-gather of ranges downloads this rank's range, uploads the
 * whole); a started collective keeps its host copy until wait_all()
 * uploads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

/* A host buffer that grows to the largest size asked of it. */
struct host_buf {
    void *p;
    size_t cap;
};

/* A started collective: the host copy of dev[0..bytes). */
struct started {
    void *dev;
    size_t bytes;
};

struct comm_staged {
    struct comm base; /* first: the interface */
    struct comm *cpu; /* the communicator of host buffers, taken over */
    struct comm_copy copy;
    char name[64];
    struct host_buf a, b; /* the blocking collectives' copies */
    /* The started collectives' copies: pool[i] for started[i]. */
    struct host_buf *pool;
    struct started *started;
    size_t n_started, cap_started;
};

static void *
host(struct host_buf *h, size_t bytes)
{
    if (bytes > h->cap) {
        void *p = realloc(h->p, bytes);

        if (p == NULL)
            return NULL;
        h->p = p;
        h->cap = bytes;
    }
    /* (A real pointer for a size of 0: the CPU backends want one.) */
    if (h->p == NULL && (h->p = malloc(1)) != NULL)
        h->cap = 1;
    return h->p;
}

static int
oom(struct comm_staged *s, const char *what, size_t bytes)
{
    snprintf(s->base.error, sizeof(s->base.error),
             "%s: out of host memory for a copy of %zu bytes", what, bytes);
    return -1;
}

/* The bytes the CPU communicator counted, moved to ours (the caller may
 * reset ours). */
static void
take_sent(struct comm_staged *s)
{
    for (int g = 0; g < COMM_N_GROUPS; g++) {
        s->base.sent[g] += s->cpu->sent[g];
        s->cpu->sent[g] = 0;
    }
}

/* The CPU communicator's result rc, its message ours on failure. */
static int
done(struct comm_staged *s, int rc)
{
    take_sent(s);
    if (rc < 0)
        snprintf(s->base.error, sizeof(s->base.error), "%s", s->cpu->error);
    return rc;
}

static int
down(struct comm_staged *s, void *h, const void *dev, size_t bytes,
     const char *what, enum comm_group g)
{
    if (bytes == 0 || s->copy.download(h, dev, bytes) == 0)
        return 0;
    snprintf(s->base.error, sizeof(s->base.error),
             "%s over the %s group: copying %zu bytes to the host: %.150s",
             what, comm_group_name(g), bytes, s->copy.error());
    return -1;
}

static void
up(struct comm_staged *s, void *dev, const void *h, size_t bytes)
{
    /* (A failed upload is the backend's error: its next sync says it.) */
    if (bytes > 0)
        s->copy.upload(dev, h, bytes);
}

static int
st_group_size(const struct comm *c, enum comm_group g)
{
    const struct comm_staged *s = (const struct comm_staged *)c;

    return s->cpu->group_size(s->cpu, g);
}

static int
st_group_rank(const struct comm *c, enum comm_group g)
{
    const struct comm_staged *s = (const struct comm_staged *)c;

    return s->cpu->group_rank(s->cpu, g);
}

/* Ranks outside the group: the CPU communicator's message, before any
 * copy. */
static int
outside(struct comm_staged *s, const char *what, enum comm_group g)
{
    if (s->cpu->group_size(s->cpu, g) > 0)
        return 0;
    return comm_not_in_group(&s->base, what, g);
}

static int
all_reduce_with(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                enum comm_group g, int max)
{
    struct comm_staged *s = (struct comm_staged *)c;
    size_t bytes = n * comm_dtype_size(t);
    void *h;

    if (outside(s, "all-reduce", g) < 0)
        return -1;
    if ((h = host(&s->a, bytes)) == NULL)
        return oom(s, "all-reduce", bytes);
    if (down(s, h, buf, bytes, "all-reduce", g) < 0)
        return -1;
    if (done(s, max ? s->cpu->all_reduce_max(s->cpu, h, n, t, g)
                    : s->cpu->all_reduce_sum(s->cpu, h, n, t, g)) < 0)
        return -1;
    up(s, buf, h, bytes);
    return 0;
}

static int
st_all_reduce_sum(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                  enum comm_group g)
{
    return all_reduce_with(c, buf, n, t, g, 0);
}

static int
st_all_reduce_max(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                  enum comm_group g)
{
    return all_reduce_with(c, buf, n, t, g, 1);
}

/* A host copy for one more started collective over dev[0..bytes). */
static void *
start_copy(struct comm_staged *s, void *dev, size_t bytes, const char *what)
{
    if (s->n_started == s->cap_started) {
        size_t cap = s->cap_started ? 2 * s->cap_started : 16;
        struct host_buf *p = realloc(s->pool, cap * sizeof(*p));

        if (p == NULL) {
            oom(s, what, cap * sizeof(*p));
            return NULL;
        }
        s->pool = p;
        memset(p + s->cap_started, 0, (cap - s->cap_started) * sizeof(*p));
        struct started *st = realloc(s->started, cap * sizeof(*st));

        if (st == NULL) {
            oom(s, what, cap * sizeof(*st));
            return NULL;
        }
        s->started = st;
        s->cap_started = cap;
    }
    void *h = host(&s->pool[s->n_started], bytes);

    if (h == NULL) {
        oom(s, what, bytes);
        return NULL;
    }
    s->started[s->n_started].dev = dev;
    s->started[s->n_started].bytes = bytes;
    return h;
}

static int
st_all_reduce_sum_start(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                        enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    size_t bytes = n * comm_dtype_size(t);
    void *h;

    if (outside(s, "all-reduce", g) < 0 ||
        (h = start_copy(s, buf, bytes, "all-reduce")) == NULL ||
        down(s, h, buf, bytes, "all-reduce", g) < 0 ||
        done(s, s->cpu->all_reduce_sum_start(s->cpu, h, n, t, g)) < 0)
        return -1;
    s->n_started++;
    return 0;
}

static int
st_test_all(struct comm *c)
{
    struct comm_staged *s = (struct comm_staged *)c;

    return done(s, s->cpu->test_all(s->cpu));
}

static int
st_wait_all(struct comm *c)
{
    struct comm_staged *s = (struct comm_staged *)c;
    size_t n = s->n_started;

    s->n_started = 0;
    if (done(s, s->cpu->wait_all(s->cpu)) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        up(s, s->started[i].dev, s->pool[i].p, s->started[i].bytes);
    return 0;
}

static int
st_reduce_scatter_sum(struct comm *c, void *out, const void *in, size_t n,
                      enum comm_dtype t, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    size_t es = comm_dtype_size(t),
           size = (size_t)s->cpu->group_size(s->cpu, g);
    void *hi, *ho;

    if (outside(s, "reduce-scatter", g) < 0)
        return -1;
    if ((hi = host(&s->a, n * size * es)) == NULL ||
        (ho = host(&s->b, n * es)) == NULL)
        return oom(s, "reduce-scatter", n * size * es);
    if (down(s, hi, in, n * size * es, "reduce-scatter", g) < 0 ||
        done(s, s->cpu->reduce_scatter_sum(s->cpu, ho, hi, n, t, g)) < 0)
        return -1;
    up(s, out, ho, n * es);
    return 0;
}

static int
st_all_gather(struct comm *c, void *out, const void *in, size_t n,
              enum comm_dtype t, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    size_t es = comm_dtype_size(t),
           size = (size_t)s->cpu->group_size(s->cpu, g);
    size_t mine = (size_t)s->cpu->group_rank(s->cpu, g) * n * es;
    char *ho;

    if (outside(s, "all-gather", g) < 0)
        return -1;
    if ((ho = host(&s->a, n * size * es)) == NULL)
        return oom(s, "all-gather", n * size * es);
    /* In place on the host too (this rank's piece already there): the
     * CPU communicators' in-place path. */
    if (down(s, ho + mine, in, n * es, "all-gather", g) < 0 ||
        done(s, s->cpu->all_gather(s->cpu, ho, ho + mine, n, t, g)) < 0)
        return -1;
    up(s, out, ho, n * size * es);
    return 0;
}

/* Ranges (sharding): in bytes, where this rank's range starts, its
 * length, and the whole buffer's. */
struct span {
    size_t at, n, all;
};

static struct span
my_range(struct comm_staged *s, const size_t *off, enum comm_dtype t,
         enum comm_group g)
{
    size_t es = comm_dtype_size(t);
    int size = s->cpu->group_size(s->cpu, g),
        me = s->cpu->group_rank(s->cpu, g);
    struct span r = { off[me] * es, (off[me + 1] - off[me]) * es,
                      off[size] * es };

    return r;
}

static int
st_reduce_scatter_ranges(struct comm *c, void *buf, const size_t *off,
                         enum comm_dtype t, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    struct span r;
    char *h;

    if (outside(s, "reduce-scatter", g) < 0)
        return -1;
    r = my_range(s, off, t, g);
    if ((h = host(&s->a, r.all)) == NULL)
        return oom(s, "reduce-scatter", r.all);
    if (down(s, h, buf, r.all, "reduce-scatter", g) < 0 ||
        done(s, s->cpu->reduce_scatter_ranges(s->cpu, h, off, t, g)) < 0)
        return -1;
    up(s, (char *)buf + r.at, h + r.at, r.n);
    return 0;
}

static int
st_all_gather_ranges(struct comm *c, void *buf, const size_t *off,
                     enum comm_dtype t, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    struct span r;
    char *h;

    if (outside(s, "all-gather", g) < 0)
        return -1;
    r = my_range(s, off, t, g);
    if ((h = host(&s->a, r.all)) == NULL)
        return oom(s, "all-gather", r.all);
    if (down(s, h + r.at, (const char *)buf + r.at, r.n, "all-gather", g) < 0 ||
        done(s, s->cpu->all_gather_ranges(s->cpu, h, off, t, g)) < 0)
        return -1;
    up(s, buf, h, r.all);
    return 0;
}

static int
st_all_gather_ranges_start(struct comm *c, void *buf, const size_t *off,
                           enum comm_dtype t, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    struct span r;
    char *h;

    if (outside(s, "all-gather", g) < 0)
        return -1;
    r = my_range(s, off, t, g);
    if ((h = start_copy(s, buf, r.all, "all-gather")) == NULL ||
        down(s, h + r.at, (const char *)buf + r.at, r.n, "all-gather", g) < 0 ||
        done(s, s->cpu->all_gather_ranges_start(s->cpu, h, off, t, g)) < 0)
        return -1;
    s->n_started++;
    return 0;
}

static int
st_reduce_sum(struct comm *c, void *buf, size_t n, enum comm_dtype t, int root,
              enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    size_t bytes = n * comm_dtype_size(t);
    void *h;

    if (outside(s, "reduce", g) < 0)
        return -1;
    if ((h = host(&s->a, bytes)) == NULL)
        return oom(s, "reduce", bytes);
    if (down(s, h, buf, bytes, "reduce", g) < 0 ||
        done(s, s->cpu->reduce_sum(s->cpu, h, n, t, root, g)) < 0)
        return -1;
    if (s->cpu->group_rank(s->cpu, g) == root)
        up(s, buf, h, bytes);
    return 0;
}

static int
st_broadcast(struct comm *c, void *buf, size_t bytes, int root,
             enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    int am_root;
    void *h;

    if (outside(s, "broadcast", g) < 0)
        return -1;
    am_root = s->cpu->group_rank(s->cpu, g) == root;
    if ((h = host(&s->a, bytes)) == NULL)
        return oom(s, "broadcast", bytes);
    if ((am_root && down(s, h, buf, bytes, "broadcast", g) < 0) ||
        done(s, s->cpu->broadcast(s->cpu, h, bytes, root, g)) < 0)
        return -1;
    if (!am_root)
        up(s, buf, h, bytes);
    return 0;
}

static int
st_send(struct comm *c, const void *buf, size_t bytes, int peer,
        enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    void *h;

    if (outside(s, "send", g) < 0)
        return -1;
    if ((h = host(&s->a, bytes)) == NULL)
        return oom(s, "send", bytes);
    if (down(s, h, buf, bytes, "send", g) < 0)
        return -1;
    return done(s, s->cpu->send(s->cpu, h, bytes, peer, g));
}

static int
st_recv(struct comm *c, void *buf, size_t bytes, int peer, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    void *h;

    if (outside(s, "receive", g) < 0)
        return -1;
    if ((h = host(&s->a, bytes)) == NULL)
        return oom(s, "receive", bytes);
    if (done(s, s->cpu->recv(s->cpu, h, bytes, peer, g)) < 0)
        return -1;
    up(s, buf, h, bytes);
    return 0;
}

static int
st_sendrecv(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
            size_t rbytes, int peer, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;
    void *hs, *hr;

    if (outside(s, "send-receive", g) < 0)
        return -1;
    if ((hs = host(&s->a, sbytes)) == NULL ||
        (hr = host(&s->b, rbytes)) == NULL)
        return oom(s, "send-receive", sbytes + rbytes);
    if (down(s, hs, sbuf, sbytes, "send-receive", g) < 0 ||
        done(s, s->cpu->sendrecv(s->cpu, hs, sbytes, hr, rbytes, peer, g)) < 0)
        return -1;
    up(s, rbuf, hr, rbytes);
    return 0;
}

static int
st_barrier(struct comm *c, enum comm_group g)
{
    struct comm_staged *s = (struct comm_staged *)c;

    return done(s, s->cpu->barrier(s->cpu, g));
}

static void
st_destroy(struct comm *c)
{
    struct comm_staged *s = (struct comm_staged *)c;

    if (s == NULL)
        return;
    s->cpu->destroy(s->cpu);
    free(s->a.p);
    free(s->b.p);
    for (size_t i = 0; i < s->cap_started; i++)
        free(s->pool[i].p);
    free(s->pool);
    free(s->started);
    free(s);
}

struct comm *
comm_staged(struct comm *cpu, const struct comm_copy *copy, char *err,
            size_t len)
{
    struct comm_staged *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        snprintf(err, len, "out of memory");
        return NULL;
    }
    s->cpu = cpu;
    s->copy = *copy;
    snprintf(s->name, sizeof(s->name), "%s through host memory", cpu->name);
    s->base = *cpu; /* rank, world, layout, launcher, note, watch */
    memset(s->base.sent, 0, sizeof(s->base.sent));
    s->base.name = s->name;
    s->base.error[0] = '\0';
    s->base.group_size = st_group_size;
    s->base.group_rank = st_group_rank;
    s->base.all_reduce_sum = st_all_reduce_sum;
    s->base.all_reduce_max = st_all_reduce_max;
    s->base.all_reduce_sum_start = st_all_reduce_sum_start;
    s->base.test_all = st_test_all;
    s->base.wait_all = st_wait_all;
    s->base.reduce_scatter_sum = st_reduce_scatter_sum;
    s->base.all_gather = st_all_gather;
    s->base.reduce_scatter_ranges = st_reduce_scatter_ranges;
    s->base.all_gather_ranges = st_all_gather_ranges;
    s->base.all_gather_ranges_start = st_all_gather_ranges_start;
    s->base.reduce_sum = st_reduce_sum;
    s->base.broadcast = st_broadcast;
    s->base.send = st_send;
    s->base.recv = st_recv;
    s->base.sendrecv = st_sendrecv;
    s->base.barrier = st_barrier;
    s->base.destroy = st_destroy;
    return &s->base;
}
