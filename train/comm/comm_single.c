/* SPDX-License-Identifier: MIT */
/*
 * comm_single.c: the one-rank communicator: the identity for every
 * collective, so the training loop is written with its collectives in
 * place from the start.
 */
#include <stdio.h>
#include <string.h>

#include "comm.h"

size_t
comm_dtype_size(enum comm_dtype t)
{
    return t == COMM_B16 ? 2 : t == COMM_F32 ? 4 : 8;
}

double
comm_ring_bytes(const char *what, double S, int n)
{
    if (n <= 1)
        return 0;
    if (strcmp(what, "all-reduce") == 0)
        return 2.0 * (n - 1) / n * S;
    return (double)(n - 1) / n * S; /* reduce-scatter, all-gather */
}

void
comm_layout_split(const struct comm_layout *l, int rank,
                  int color[COMM_N_GROUPS], int key[COMM_N_GROUPS])
{
    int tp = l->tp, sh = l->sharding, dp = l->dp, pp = l->pp;
    int r_tp = rank % tp, r_sh, r_dp, r_pp, rest = rank / tp;

    /* inter_first: rank = r_tp + tp (r_sh + sh (r_dp + dp r_pp));
     * intra_first: rank = r_tp + tp (r_pp + pp (r_sh + sh r_dp)). */
    if (l->placement == COMM_INTRA_FIRST) {
        r_pp = rest % pp, r_sh = rest / pp % sh, r_dp = rest / (pp * sh);
    } else {
        r_sh = rest % sh, r_dp = rest / sh % dp, r_pp = rest / (sh * dp);
    }
    /* A group's color: the coordinates its members share, in one number
     * (the same for every placement). */
    color[COMM_WORLD] = 0, key[COMM_WORLD] = rank;
    color[COMM_TP] = r_sh + sh * (r_dp + dp * r_pp), key[COMM_TP] = r_tp;
    color[COMM_SHARDING] = r_tp + tp * (r_dp + dp * r_pp);
    key[COMM_SHARDING] = r_sh;
    color[COMM_DP] = r_tp + tp * (r_sh + sh * r_pp), key[COMM_DP] = r_dp;
    color[COMM_PP] = r_tp + tp * (r_sh + sh * r_dp), key[COMM_PP] = r_pp;
    color[COMM_EMBEDDING] = r_pp == 0 || r_pp == pp - 1 ? color[COMM_PP] : -1;
    key[COMM_EMBEDDING] = r_pp;
}

int
comm_layout_resolve(struct comm_layout *l, int world, const char *launcher,
                    char *err, size_t err_len)
{
    int tp = l->tp, sh = l->sharding, dp = l->dp, pp = l->pp;

    if (dp == 0 && tp > 0 && sh > 0 && pp > 0 && world % (tp * sh * pp) == 0)
        dp = world / (tp * sh * pp);
    if (tp < 1 || sh < 1 || dp < 1 || pp < 1 ||
        (long long)tp * sh * dp * pp != world) {
        snprintf(err, err_len,
                 "the layout tp %d x sharding %d x dp %d x pp %d does not "
                 "make the %d ranks %s started",
                 l->tp, l->sharding, l->dp, l->pp, world, launcher);
        return -1;
    }
    l->dp = dp;
    return 0;
}

const char *
comm_group_name(enum comm_group g)
{
    static const char *const names[COMM_N_GROUPS] = {
        "world", "dp", "tp", "pp", "sharding", "embedding",
    };

    return (int)g >= 0 && g < COMM_N_GROUPS ? names[g] : "?";
}

int
comm_not_in_group(struct comm *c, const char *what, enum comm_group g)
{
    snprintf(c->error, sizeof(c->error), "%s: rank %d is not in the %s group",
             what, c->rank, comm_group_name(g));
    return -1;
}

void
comm_report_stuck(const struct comm *c, const char *what, enum comm_group g,
                  int size, double timeout)
{
    fprintf(stderr,
            "train: rank %d: %s over the %s group (%d ranks) has waited "
            "more than %.0f s (--comm_timeout): a rank died, hangs or took "
            "another path; stopping every rank\n",
            c->rank, what, comm_group_name(g), size, timeout);
    fflush(stderr);
}

double
comm_sent_total(const struct comm *c)
{
    double s = 0;

    for (int g = 0; g < COMM_N_GROUPS; g++)
        s += c->sent[g];
    return s;
}

static int
single_group_size(const struct comm *c, enum comm_group g)
{
    (void)c;
    (void)g;
    return 1;
}

static int
single_group_rank(const struct comm *c, enum comm_group g)
{
    (void)c;
    (void)g;
    return 0;
}

static int
single_all_reduce(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                  enum comm_group g)
{
    (void)c;
    (void)buf;
    (void)n;
    (void)t;
    (void)g;
    return 0;
}

static int
single_copy(struct comm *c, void *out, const void *in, size_t n,
            enum comm_dtype t, enum comm_group g)
{
    (void)c;
    (void)g;
    if (out != in)
        memmove(out, in, n * comm_dtype_size(t));
    return 0;
}

static int
single_none(struct comm *c)
{
    (void)c;
    return 0;
}

static int
single_reduce(struct comm *c, void *buf, size_t n, enum comm_dtype t, int root,
              enum comm_group g)
{
    (void)buf;
    (void)n;
    (void)t;
    (void)g;
    if (root != 0) {
        snprintf(c->error, sizeof(c->error),
                 "reduce to rank %d of a one-rank group", root);
        return -1;
    }
    return 0;
}

static int
single_ranges(struct comm *c, void *buf, const size_t *off, enum comm_dtype t,
              enum comm_group g)
{
    (void)c;
    (void)buf;
    (void)off;
    (void)t;
    (void)g;
    return 0; /* one rank owns everything */
}

static int
single_broadcast(struct comm *c, void *buf, size_t bytes, int root,
                 enum comm_group g)
{
    (void)buf;
    (void)bytes;
    (void)g;
    if (root != 0) {
        snprintf(c->error, sizeof(c->error),
                 "broadcast from rank %d of a one-rank group", root);
        return -1;
    }
    return 0;
}

static int
single_p2p(struct comm *c, int peer, const char *what)
{
    snprintf(c->error, sizeof(c->error), "%s with rank %d: one rank only", what,
             peer);
    return -1;
}

static int
single_send(struct comm *c, const void *buf, size_t bytes, int peer,
            enum comm_group g)
{
    (void)buf;
    (void)bytes;
    (void)g;
    return single_p2p(c, peer, "send");
}

static int
single_recv(struct comm *c, void *buf, size_t bytes, int peer,
            enum comm_group g)
{
    (void)buf;
    (void)bytes;
    (void)g;
    return single_p2p(c, peer, "recv");
}

static int
single_sendrecv(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
                size_t rbytes, int peer, enum comm_group g)
{
    (void)sbuf;
    (void)sbytes;
    (void)rbuf;
    (void)rbytes;
    (void)g;
    return single_p2p(c, peer, "sendrecv");
}

static int
single_barrier(struct comm *c, enum comm_group g)
{
    (void)c;
    (void)g;
    return 0;
}

static void
single_destroy(struct comm *c)
{
    (void)c;
}

static struct comm the_single = {
    .name = "single",
    .launcher = "nothing",
    .layout = { 1, 1, 1, 1, COMM_INTER_FIRST },
    .rank = 0,
    .world = 1,
    .group_size = single_group_size,
    .group_rank = single_group_rank,
    .all_reduce_sum = single_all_reduce,
    .all_reduce_sum_start = single_all_reduce,
    .all_reduce_max = single_all_reduce,
    .test_all = single_none,
    .wait_all = single_none,
    .reduce_scatter_sum = single_copy,
    .all_gather = single_copy,
    .reduce_scatter_ranges = single_ranges,
    .all_gather_ranges = single_ranges,
    .all_gather_ranges_start = single_ranges,
    .reduce_sum = single_reduce,
    .broadcast = single_broadcast,
    .send = single_send,
    .recv = single_recv,
    .sendrecv = single_sendrecv,
    .barrier = single_barrier,
    .destroy = single_destroy,
};

struct comm *
comm_single(void)
{
    int local = comm_local_rank_env();

    the_single.local_rank = local > 0 ? local : 0;
    return &the_single;
}
