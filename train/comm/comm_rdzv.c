/* SPDX-License-Identifier: MIT */
/*
 * comm_rdzv.c: how ranks started without MPI find each other: the
 * launcher's environment (comm_launch_env(): srun's, or torchrun's RANK,
 * WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and the TCP rendezvous at rank
 * 0 (comm_rdzv_run()), which leaves a connection between every two
 * ranks and each rank's control connection to rank 0.
 *
 * The rendezvous, in lines of text on the connection to rank 0:
 *
 *   rank -> 0   ERNIEKIT-RDZV 1 token rank world port tp sh dp pp placement
 *   0 -> rank   HI                      (the token is this run's)
 *               GO nonce, then "r host port" for every rank, when all came
 *               ERR usage message       (or a layout that differs, a rank
 *                                        twice, a rendezvous past the time)
 *
 * then each rank connects to every lower rank's data port and sends the
 * nonce and its rank.  No file is shared and no port is fixed: under
 * srun without MASTER_PORT, rank 0 takes the first free port of a range
 * derived from the job and step ids, and a rank tries the range until a
 * listener answers with its token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm_int.h"

#define RDZV_MAGIC "ERNIEKIT-RDZV"
#define MESH_MAGIC 0x31304853454d4b45ULL /* "EKMESH01" */
/* Under srun without MASTER_PORT: ports [20000, 30000), in blocks of 8
 * (below Linux's ephemeral ports, which start at 32768). */
#define SLURM_PORT_BASE   20000
#define SLURM_PORT_BLOCKS 1250
#define SLURM_PORT_SCAN   8

/* ------------------------------------------------------------------------ */
/* The environment                                                           */

/* An integer variable in [lo, hi]: 1 and *v, 0 if unset, -1 if bad. */
static int
env_int(const char *name, long lo, long hi, long *v, char *err, size_t len)
{
    const char *s = getenv(name);
    char *end;

    if (s == NULL || *s == '\0')
        return 0;
    errno = 0;
    *v = strtol(s, &end, 10);
    if (*end != '\0' || errno != 0 || *v < lo || *v > hi) {
        snprintf(err, len, "%s='%s': not a number in [%ld, %ld]", name, s, lo,
                 hi);
        return -1;
    }
    return 1;
}

static int
from_torchrun(struct comm_launch *l, char *err, size_t len)
{
    const char *addr = getenv("MASTER_ADDR"),
               *id = getenv("TORCHELASTIC_RUN_ID");
    long rank, world, port, local;

    if (env_int("WORLD_SIZE", 1, 1 << 20, &world, err, len) < 0 ||
        env_int("RANK", 0, world - 1, &rank, err, len) < 0)
        return -1;
    if (world == 1)
        return 0;
    l->launcher = id != NULL ? "torchrun" : "the launcher (RANK, WORLD_SIZE)";
    if (addr == NULL || *addr == '\0' ||
        env_int("MASTER_PORT", 1, 65535, &port, err, len) <= 0) {
        if (addr == NULL || *addr == '\0' || getenv("MASTER_PORT") == NULL)
            snprintf(err, len,
                     "RANK and WORLD_SIZE are set (rank %ld of %ld) but not "
                     "MASTER_ADDR and MASTER_PORT: where rank 0 listens",
                     rank, world);
        return -1;
    }
    if (env_int("LOCAL_RANK", 0, 1 << 20, &local, err, len) < 0)
        return -1;
    l->local_rank = getenv("LOCAL_RANK") ? (int)local : -1;
    l->rank = (int)rank;
    l->world = (int)world;
    snprintf(l->host, sizeof(l->host), "%s", addr);
    l->host_from = "MASTER_ADDR";
    l->port = (int)port;
    l->ports = 1;
    if (id != NULL)
        snprintf(l->token, sizeof(l->token), "torchrun/%.100s/%ld", id, world);
    else
        snprintf(l->token, sizeof(l->token), "env/%.100s:%ld/%ld", addr, port,
                 world);
    return 1;
}

static int
from_slurm(struct comm_launch *l, char *err, size_t len)
{
    const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
    const char *addr = getenv("MASTER_ADDR"), *list;
    long rank, world, local, port;
    int rc;

    /* A batch script has SLURM_PROCID too, but no step: srun makes one. */
    if (step == NULL || getenv("SLURM_PROCID") == NULL)
        return 0;
    rc = env_int("SLURM_STEP_NUM_TASKS", 1, 1 << 20, &world, err, len);
    if (rc == 0)
        rc = env_int("SLURM_NTASKS", 1, 1 << 20, &world, err, len);
    if (rc <= 0) {
        if (rc == 0)
            snprintf(err, len,
                     "srun gave SLURM_PROCID but not "
                     "SLURM_STEP_NUM_TASKS or SLURM_NTASKS");
        return -1;
    }
    if (env_int("SLURM_PROCID", 0, world - 1, &rank, err, len) < 0)
        return -1;
    if (world == 1)
        return 0;
    l->launcher = "srun";
    l->rank = (int)rank;
    l->world = (int)world;
    rc = env_int("SLURM_LOCALID", 0, 1 << 20, &local, err, len);
    if (rc < 0)
        return -1;
    l->local_rank = rc ? (int)local : -1;
    if (addr != NULL && *addr != '\0') {
        snprintf(l->host, sizeof(l->host), "%s", addr);
        l->host_from = "MASTER_ADDR";
    } else {
        static const char *const lists[] = { "SLURM_STEP_NODELIST",
                                             "SLURM_JOB_NODELIST",
                                             "SLURM_NODELIST" };

        for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
            if ((list = getenv(lists[i])) != NULL) {
                if (comm_first_host(list, l->host, sizeof(l->host)) < 0) {
                    snprintf(err, len, "%s='%.200s': not a Slurm host list",
                             lists[i], list);
                    return -1;
                }
                l->host_from = lists[i];
                break;
            }
        if (l->host_from == NULL) {
            snprintf(err, len,
                     "srun gave no SLURM_STEP_NODELIST: set "
                     "MASTER_ADDR to rank 0's host");
            return -1;
        }
    }
    rc = env_int("MASTER_PORT", 1, 65535, &port, err, len);
    if (rc < 0)
        return -1;
    if (rc) {
        l->port = (int)port;
        l->ports = 1;
    } else { /* the job's and step's own range */
        unsigned long h = strtoul(job ? job : "0", NULL, 10) * 1000003UL +
                          strtoul(step, NULL, 10);

        l->port =
            SLURM_PORT_BASE + (int)(h % SLURM_PORT_BLOCKS) * SLURM_PORT_SCAN;
        l->ports = SLURM_PORT_SCAN;
    }
    snprintf(l->token, sizeof(l->token), "slurm/%.60s.%.60s/%ld",
             job ? job : "?", step, world);
    return 1;
}

int
comm_launch_env(struct comm_launch *l, char *err, size_t err_len)
{
    memset(l, 0, sizeof(*l));
    l->local_rank = -1;
    /* torchrun's variables win: they describe the processes even when
     * torchrun itself runs under srun. */
    if (getenv("RANK") != NULL && getenv("WORLD_SIZE") != NULL)
        return from_torchrun(l, err, err_len);
    return from_slurm(l, err, err_len);
}

/* ------------------------------------------------------------------------ */
/* The rendezvous                                                            */

struct member {
    int fd; /* the control connection (rank 0: -1) */
    int port;
    char host[128];
};

static void
layout_text(const struct comm_layout *l, char *out, size_t cap)
{
    snprintf(out, cap, "tp %d x sharding %d x dp %d x pp %d (%s)", l->tp,
             l->sharding, l->dp, l->pp,
             l->placement == COMM_INTRA_FIRST ? "intra_first" : "inter_first");
}

/* Ranks missing from the table, as "2,5-7". */
static void
missing_ranks(const struct member *m, int world, char *out, size_t cap)
{
    size_t n = 0;

    out[0] = '\0';
    for (int r = 1; r < world && n + 16 < cap; r++) {
        int e = r;

        if (m[r].fd >= 0)
            continue;
        while (e + 1 < world && m[e + 1].fd < 0)
            e++;
        n += (size_t)snprintf(out + n, cap - n, "%s%d", n ? "," : "", r);
        if (e > r)
            n += (size_t)snprintf(out + n, cap - n, "-%d", e);
        r = e;
    }
}

/* The error line for a rank: "ERR usage message". */
static void
send_error(int fd, int usage, const char *msg)
{
    char line[700];

    snprintf(line, sizeof(line), "ERR %d %s\n", usage, msg);
    sock_write_all(fd, line, strlen(line));
}

/* Tell every rank that came the error. */
static void
tell_error(const struct member *m, int world, int usage, const char *msg)
{
    for (int r = 1; r < world; r++)
        if (m[r].fd >= 0)
            send_error(m[r].fd, usage, msg);
}

/* Rank 0: the listener on the first free port of the range. */
static int
hub_listen(const struct comm_launch *env, int *port, char *err, size_t len)
{
    for (int i = 0; i < env->ports; i++) {
        int fd;

        *port = env->port + i;
        fd = sock_listen(port, err, len);
        if (fd >= 0)
            return fd;
    }
    if (env->ports == 1)
        snprintf(err + strlen(err), len - strlen(err),
                 " (MASTER_PORT): choose a free port");
    else
        snprintf(err, len, "no free port in %d-%d for the rendezvous",
                 env->port, env->port + env->ports - 1);
    return -1;
}

/* One newcomer's hello, checked against rank 0's: its rank, or -1 (not
 * of this run: told so and closed), or -2 with err (usage). */
static int
hub_hello(const struct comm_launch *env, const struct comm_layout *l,
          struct member *m, int fd, char *err, size_t len)
{
    char line[512], magic[32], token[sizeof(env->token)], mine[128],
        theirs[128];
    int ver, rank, world, port;
    struct comm_layout o;
    int placement;

    if (sock_read_line(fd, line, sizeof(line), comm_now() + 5) < 0 ||
        sscanf(line, "%31s %d %159s %d %d %d %d %d %d %d %d", magic, &ver,
               token, &rank, &world, &port, &o.tp, &o.sharding, &o.dp, &o.pp,
               &placement) != 11 ||
        strcmp(magic, RDZV_MAGIC) != 0 || ver != 1 ||
        strcmp(token, env->token) != 0) {
        sock_write_all(fd, "NO\n", 3);
        close(fd);
        return -1;
    }
    o.placement = (enum comm_placement)placement;
    sock_write_all(fd, "HI\n", 3);
    if (world != env->world) {
        snprintf(err, len,
                 "rank %d was started as one of %d ranks, rank 0 as one of "
                 "%d: every rank must come from the same launch",
                 rank, world, env->world);
        return -2;
    }
    if (rank < 1 || rank >= world || m[rank].fd >= 0) {
        snprintf(err, len,
                 "two processes say they are rank %d: every rank must have "
                 "its own RANK (SLURM_PROCID)",
                 rank);
        return -2;
    }
    if (o.tp != l->tp || o.sharding != l->sharding || o.dp != l->dp ||
        o.pp != l->pp || o.placement != l->placement) {
        layout_text(&o, theirs, sizeof(theirs));
        layout_text(l, mine, sizeof(mine));
        snprintf(err, len,
                 "rank %d was started with the layout %s, rank 0 with %s: "
                 "give every rank the same flags",
                 rank, theirs, mine);
        return -2;
    }
    m[rank].fd = fd;
    m[rank].port = port;
    {
        struct sockaddr_storage a;
        socklen_t alen = sizeof(a);

        if (getpeername(fd, (struct sockaddr *)&a, &alen) == 0)
            sock_addr_text(&a, m[rank].host, sizeof(m[rank].host));
        else
            snprintf(m[rank].host, sizeof(m[rank].host), "?");
    }
    return rank;
}

/* Rank 0: every other rank's hello, then the table and the nonce to
 * each. */
static int
hub(const struct comm_launch *env, const struct comm_layout *l, double timeout,
    struct member *m, unsigned long long *nonce, int *usage, char *err,
    size_t len)
{
    double deadline = timeout > 0 ? comm_now() + timeout : 0;
    int port, joined = 1, lfd = hub_listen(env, &port, err, len);

    if (lfd < 0)
        return -1;
    while (joined < env->world) {
        int fd = sock_accept(lfd, deadline), rank;
        char why[600];

        if (fd < 0 && errno != ETIMEDOUT)
            continue;
        if (fd < 0 && *usage)
            break; /* the few seconds for late ranks to hear it are over */
        if (fd < 0) {
            char miss[256];

            missing_ranks(m, env->world, miss, sizeof(miss));
            snprintf(err, len,
                     "rendezvous at %s port %d: %d of %d ranks came within "
                     "%.0f s (--comm_timeout); missing: rank%s %s (not "
                     "started, or they cannot reach %s: check %s)",
                     env->host, port, joined, env->world, timeout,
                     strpbrk(miss, ",-") ? "s" : "", miss, env->host,
                     env->host_from);
            tell_error(m, env->world, 0, err);
            close(lfd);
            return -1;
        }
        rank = hub_hello(env, l, m, fd, why, sizeof(why));
        if (rank == -1)
            continue; /* not of this run */
        if (*usage) { /* a late rank hears the error too */
            send_error(fd, 1, err);
            if (rank < 0)
                close(fd);
            continue;
        }
        if (rank == -2) { /* tell everyone, wait a little for the rest */
            snprintf(err, len, "%s", why);
            send_error(fd, 1, err);
            close(fd);
            tell_error(m, env->world, 1, err);
            *usage = 1;
            deadline = comm_now() + 5;
            continue;
        }
        joined++;
    }
    close(lfd);
    if (*usage)
        return -1;
    if (getrandom(nonce, sizeof(*nonce), 0) != sizeof(*nonce))
        *nonce = (unsigned long long)time(NULL) ^
                 ((unsigned long long)getpid() << 32);
    for (int r = 1; r < env->world; r++) {
        size_t cap = 64 + (size_t)env->world * 160, n = 0;
        char *go = malloc(cap);
        int rc;

        if (go == NULL) {
            snprintf(err, len, "out of memory");
            return -1;
        }
        n += (size_t)snprintf(go, cap, "GO %016llx\n", *nonce);
        for (int q = 0; q < env->world; q++)
            n += (size_t)snprintf(go + n, cap - n, "%d %s %d\n", q,
                                  q == 0 ? "-" : m[q].host, m[q].port);
        rc = sock_write_all(m[r].fd, go, n);
        free(go);
        if (rc < 0) {
            snprintf(err, len, "rendezvous: rank %d is gone: %s", r,
                     strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* A rank: the hub, found at env's host and ports; its control
 * connection (m[0].fd), the table and the nonce.  *reached: the hub's
 * address. */
static int
join(const struct comm_launch *env, const struct comm_layout *l, double timeout,
     int data_port, struct member *m, unsigned long long *nonce,
     struct sockaddr_storage *reached, int *usage, char *err, size_t len)
{
    double deadline = timeout > 0 ? comm_now() + timeout : 0;
    char hello[512], line[700], ports[48], last[300] = "nobody listens";
    int fd = -1, port = 0;

    snprintf(hello, sizeof(hello), "%s 1 %s %d %d %d %d %d %d %d %d\n",
             RDZV_MAGIC, env->token, env->rank, env->world, data_port, l->tp,
             l->sharding, l->dp, l->pp, (int)l->placement);
    if (env->ports > 1)
        snprintf(ports, sizeof(ports), "ports %d-%d", env->port,
                 env->port + env->ports - 1);
    else
        snprintf(ports, sizeof(ports), "port %d", env->port);
    /* Each port of the range in turn until a listener knows the token;
     * nobody there yet is worth another round. */
    while (fd < 0) {
        for (int i = 0; i < env->ports && fd < 0; i++) {
            double d = comm_now() + 5;

            port = env->port + i;
            fd = sock_connect(env->host, port,
                              deadline > 0 && deadline < d ? deadline : d,
                              reached, last, sizeof(last));
            if (fd < 0)
                continue;
            if (sock_write_all(fd, hello, strlen(hello)) < 0 ||
                sock_read_line(fd, line, sizeof(line), comm_now() + 5) < 0 ||
                strcmp(line, "HI") != 0) {
                snprintf(last, sizeof(last),
                         "port %d answers, but not as this run's rank 0", port);
                close(fd);
                fd = -1;
            }
        }
        if (fd >= 0)
            break;
        if (deadline > 0 && comm_now() >= deadline) {
            snprintf(err, len,
                     "rendezvous: rank 0 at %s (%s) %s did not answer within "
                     "%.0f s (--comm_timeout): %s; is rank 0 running, and "
                     "is that its address?",
                     env->host, env->host_from, ports, timeout, last);
            return -1;
        }
        usleep(200000);
    }
    /* Rank 0 answers once every rank came: by its deadline, or a little
     * later with its word on it. */
    if (sock_read_line(fd, line, sizeof(line),
                       deadline > 0 ? deadline + 15 : 0) < 0) {
        snprintf(err, len,
                 "rendezvous: rank 0 at %s port %d %s (%.0f s, "
                 "--comm_timeout)",
                 env->host, port,
                 errno == ETIMEDOUT ? "did not gather the ranks in time"
                                    : "ended before the ranks were gathered",
                 timeout);
        close(fd);
        return -1;
    }
    if (strncmp(line, "ERR ", 4) == 0 && line[4] != '\0' && line[5] == ' ') {
        *usage = line[4] == '1';
        snprintf(err, len, "%s", line + 6);
        close(fd);
        return -1;
    }
    if (sscanf(line, "GO %llx", nonce) != 1) {
        snprintf(err, len, "rendezvous: rank 0 said '%.100s'", line);
        close(fd);
        return -1;
    }
    for (int q = 0; q < env->world; q++) {
        int r, p;
        char host[128];

        if (sock_read_line(fd, line, sizeof(line), comm_now() + 30) < 0 ||
            sscanf(line, "%d %127s %d", &r, host, &p) != 3 || r != q) {
            snprintf(err, len, "rendezvous: a malformed table from rank 0");
            close(fd);
            return -1;
        }
        if (q > 0)
            snprintf(m[q].host, sizeof(m[q].host), "%s", host);
        m[q].port = p;
    }
    m[0].fd = fd;
    return 0;
}

struct mesh_hello {
    unsigned long long magic, nonce;
    int rank, pad;
};

/* Every two ranks connected: to the lower ones, then from the higher. */
static int
mesh(const struct comm_launch *env, double timeout, int dfd,
     const struct member *m, unsigned long long nonce,
     const struct sockaddr_storage *hub_addr, int *fds, char *err, size_t len)
{
    double deadline = timeout > 0 ? comm_now() + timeout : 0;
    int me = env->rank, left = env->world - 1 - me;

    for (int j = 0; j < me; j++) {
        struct mesh_hello h = { MESH_MAGIC, nonce, me, 0 };
        int fd;

        if (j == 0) {
            struct sockaddr_storage a = *hub_addr;

            sock_set_port(&a, m[0].port);
            fd = sock_connect_addr(&a, deadline, err, len);
        } else {
            fd = sock_connect(m[j].host, m[j].port, deadline, NULL, err, len);
        }
        if (fd < 0 || sock_write_all(fd, &h, sizeof(h)) < 0) {
            char why[300];

            snprintf(why, sizeof(why), "%s", err);
            snprintf(err, len, "connecting to rank %d: %s", j, why);
            if (fd >= 0)
                close(fd);
            return -1;
        }
        fds[j] = fd;
    }
    while (left > 0) {
        struct mesh_hello h;
        int fd = sock_accept(dfd, deadline);

        if (fd < 0) {
            snprintf(err, len,
                     "rank %d: %d higher ranks did not connect within "
                     "%.0f s (--comm_timeout): %s",
                     me, left, timeout, strerror(errno));
            return -1;
        }
        if (sock_read_all(fd, &h, sizeof(h), comm_now() + 10) < 0 ||
            h.magic != MESH_MAGIC || h.nonce != nonce || h.rank <= me ||
            h.rank >= env->world || fds[h.rank] >= 0) {
            close(fd); /* not of this run */
            continue;
        }
        fds[h.rank] = fd;
        left--;
    }
    return 0;
}

int
comm_rdzv_run(const struct comm_launch *env, const struct comm_layout *l,
              double timeout, struct comm_rdzv *out, int *usage, char *err,
              size_t len)
{
    int world = env->world, data_port = 0, dfd, rc;
    struct member *m = calloc((size_t)world, sizeof(*m));
    struct sockaddr_storage hub_addr;
    unsigned long long nonce = 0;

    *usage = 0;
    out->mesh = calloc((size_t)world, sizeof(int));
    out->ctl = calloc(env->rank == 0 ? (size_t)world : 1, sizeof(int));
    if (m == NULL || out->mesh == NULL || out->ctl == NULL) {
        free(m);
        snprintf(err, len, "out of memory");
        comm_rdzv_release(out, world);
        return -1;
    }
    for (int r = 0; r < world; r++)
        m[r].fd = out->mesh[r] = -1;
    out->ctl[0] = -1;
    memset(&hub_addr, 0, sizeof(hub_addr));
    dfd = sock_listen(&data_port, err, len);
    if (dfd < 0)
        goto fail;
    m[0].port = data_port;
    rc = env->rank == 0 ? hub(env, l, timeout, m, &nonce, usage, err, len)
                        : join(env, l, timeout, data_port, m, &nonce, &hub_addr,
                               usage, err, len);
    if (rc < 0)
        goto fail;
    if (mesh(env, timeout, dfd, m, nonce, &hub_addr, out->mesh, err, len) < 0)
        goto fail;
    close(dfd);
    if (env->rank == 0)
        for (int r = 1; r < world; r++)
            out->ctl[r] = m[r].fd;
    else
        out->ctl[0] = m[0].fd;
    free(m);
    return 0;
fail:
    if (dfd >= 0)
        close(dfd);
    for (int r = 0; r < world; r++)
        if (m[r].fd >= 0)
            close(m[r].fd);
    free(m);
    for (int r = 0; r < world; r++)
        if (out->mesh[r] >= 0)
            close(out->mesh[r]);
    free(out->mesh);
    free(out->ctl);
    out->mesh = out->ctl = NULL;
    return -1;
}

void
comm_rdzv_release(struct comm_rdzv *r, int world)
{
    (void)world;
    free(r->mesh);
    free(r->ctl);
    r->mesh = r->ctl = NULL;
}
