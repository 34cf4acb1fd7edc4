/* SPDX-License-Identifier: MIT */
/*
 * comm_watch.c: the watchdog of the CPU backends (comm_int.h).  A thread
 * per rank watches the collective this rank waits in; through a control
 * connection to rank 0 (the hub) it tells the hub its last collective a
 * few times a second, in lines of text:
 *
 *   rank -> hub   P seq busy group size ms what   (progress)
 *                 S line                          (stuck past the timeout)
 *                 B                               (goodbye: finished)
 *   hub -> rank   A reason                        (abort)
 *                 B                               (the hub finished)
 *
 * A collective that waits past the timeout, or a connection that closes
 * without a goodbye (a rank killed, crashed or ended on an error), makes
 * the hub print the last collective of every rank, ranks in the same
 * state together, and stop them all (exit status 1): no rank hangs for
 * a launcher (srun) that would let the others run.  A rank that loses
 * the hub stops too.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_int.h"

/* Seconds between progress lines, and a stuck rank's wait for the hub's
 * report before it reports alone. */
#define PROGRESS_EVERY 0.25
#define HUB_GRACE      10.0

static _Atomic int exiting; /* comm_exiting(): say nothing more */

/* What runs before the watch stops this rank (comm_watch_on_stop()). */
static void (*_Atomic stop_fn)(void *);
static void *_Atomic stop_arg;

void
comm_watch_on_stop(void (*fn)(void *), void *arg)
{
    atomic_store(&stop_arg, arg);
    atomic_store(&stop_fn, fn);
}

/* The process ends now (exit status 1), after the hook. */
static void
stop_now(void)
{
    void (*fn)(void *) = atomic_load(&stop_fn);

    if (fn != NULL)
        fn(atomic_load(&stop_arg));
    _exit(1);
}

void
comm_exiting(void)
{
    atomic_store(&exiting, 1);
}

/* One rank as the hub sees it, or (elsewhere) the hub's connection. */
struct peer {
    int fd;        /* -1: closed */
    char in[1024]; /* a partial line */
    size_t n_in;
    int bye, heard;
    unsigned long long seq;
    int busy, group, size;
    double since; /* this clock's time the state began */
    char what[48];
};

struct comm_watch {
    int rank, world;
    double timeout;
    struct peer *peers; /* hub: world; else one (the hub) */
    int n_peers;
    /* This rank's state, written by the collectives. */
    _Atomic unsigned long long seq;
    _Atomic int busy, group, size;
    _Atomic double since; /* comm_now() when the state began */
    const char *_Atomic what;
    /* Progress not yet sent (non-hub ranks). */
    char out[2048];
    size_t n_out;
    unsigned long long sent_seq;
    int sent_busy;
    double sent_at, stuck_at;
    pthread_t thread;
    _Atomic int stop;
};

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

/* Everything of the line, best effort, never blocking long: the peer
 * may be the one that hangs. */
static void
send_now(int fd, const char *s, size_t n)
{
    double deadline = comm_now() + 2;

    while (n > 0 && fd >= 0 && comm_now() < deadline) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (k > 0) {
            s += k;
            n -= (size_t)k;
        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
            return;
        } else {
            usleep(1000);
        }
    }
}

/* Queue a line for the hub (dropped if the queue is full: progress is
 * sent again). */
static void
queue(struct comm_watch *w, const char *line)
{
    size_t n = strlen(line);

    if (w->n_out + n <= sizeof(w->out)) {
        memcpy(w->out + w->n_out, line, n);
        w->n_out += n;
    }
}

static void
flush_queue(struct comm_watch *w)
{
    int fd = w->peers[0].fd;

    while (w->n_out > 0 && fd >= 0) {
        ssize_t k = send(fd, w->out, w->n_out, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (k <= 0)
            return;
        memmove(w->out, w->out + k, w->n_out - (size_t)k);
        w->n_out -= (size_t)k;
    }
}

/* Write the text to stderr in one call and leave: the watch has decided
 * that this rank stops. */
static void
die(const char *text)
{
    ssize_t k;

    if (atomic_load(&exiting))
        return; /* the process ends on its own, saying why */
    k = write(STDERR_FILENO, text, strlen(text));
    (void)k;
    stop_now();
}

/* ------------------------------------------------------------------------ */
/* The report                                                                */

/* The state of rank r: the hub's own, or what r last said. */
static void
state_of(const struct comm_watch *w, int r, struct peer *s)
{
    if (r == w->rank) {
        memset(s, 0, sizeof(*s));
        s->heard = 1;
        s->fd = 0;
        s->seq = atomic_load(&w->seq);
        s->busy = atomic_load(&w->busy);
        s->group = atomic_load(&w->group);
        s->size = atomic_load(&w->size);
        s->since = atomic_load(&w->since);
        snprintf(s->what, sizeof(s->what), "%s",
                 atomic_load(&w->what) ? atomic_load(&w->what) : "");
    } else {
        *s = w->peers[r];
    }
}

/* One rank's state in words. */
static void
describe(const struct peer *s, double now, char *out, size_t cap)
{
    if (!s->heard)
        snprintf(out, cap, "no collective reported yet");
    else if (s->seq == 0)
        snprintf(out, cap, "no collective yet");
    else
        snprintf(out, cap, "#%llu %s over the %s group, %s %.1f s%s%s", s->seq,
                 s->what, comm_group_name((enum comm_group)s->group),
                 s->busy ? "waiting for" : "done", now - s->since,
                 s->busy ? "" : " ago", s->bye ? "; finished" : "");
    if (s->fd < 0 && !s->bye)
        snprintf(out + strlen(out), cap - strlen(out), "; gone");
}

/* Append "r" or ",r" or the end of a range "-r" to list. */
static void
add_rank(char *list, size_t cap, int r, int *prev, int *run_start)
{
    size_t n = strlen(list);

    if (*prev >= 0 && r == *prev + 1) {
        *prev = r;
        return;
    }
    if (*prev >= 0 && *prev != *run_start)
        n += (size_t)snprintf(list + n, n < cap ? cap - n : 0, "-%d", *prev);
    if (n < cap)
        snprintf(list + n, cap - n, "%s%d", n ? "," : "", r);
    *prev = *run_start = r;
}

/* The hub's report: the first line (why), then every rank's last
 * collective, ranks in the same state on one line; to stderr at once. */
static void
report(struct comm_watch *w, const char *first)
{
    size_t cap = 4096 + (size_t)w->world * 160, n = 0;
    char *text = malloc(cap), *done = calloc((size_t)w->world, 1);
    double now = comm_now();

    if (text == NULL || done == NULL) {
        free(text);
        free(done);
        die(first);
        return;
    }
    n += (size_t)snprintf(text, cap,
                          "%strain: rank %d: the last collective "
                          "of each rank:\n",
                          first, w->rank);
    for (int r = 0; r < w->world && n < cap; r++) {
        struct peer a, b;
        char list[256] = "", what[256];
        int prev = -1, start = -1, count = 0;

        if (done[r])
            continue;
        state_of(w, r, &a);
        for (int q = r; q < w->world; q++) {
            state_of(w, q, &b);
            if (done[q] || b.heard != a.heard || b.seq != a.seq ||
                b.busy != a.busy || b.group != a.group ||
                strcmp(b.what, a.what) != 0 || (b.fd < 0) != (a.fd < 0) ||
                b.bye != a.bye)
                continue;
            done[q] = 1;
            count++;
            add_rank(list, sizeof(list), q, &prev, &start);
        }
        if (prev >= 0 && prev != start)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "-%d",
                     prev);
        describe(&a, now, what, sizeof(what));
        n += (size_t)snprintf(text + n, cap - n, "train:   rank%s %s: %s\n",
                              count > 1 ? "s" : "", list, what);
    }
    {
        ssize_t k = write(STDERR_FILENO, text, n < cap ? n : cap - 1);

        (void)k;
    }
    free(text);
    free(done);
}

/* The hub stops every rank: the report, then "A reason" to each. */
static void
hub_abort(struct comm_watch *w, const char *first, const char *reason)
{
    char line[512];

    if (atomic_load(&exiting))
        return;
    report(w, first);
    snprintf(line, sizeof(line), "A %s\n", reason);
    for (int r = 1; r < w->world; r++)
        if (w->peers[r].fd >= 0 && !w->peers[r].bye)
            send_now(w->peers[r].fd, line, strlen(line));
    stop_now();
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* A line from peer p (rank r on the hub; the hub elsewhere). */
static void
take_line(struct comm_watch *w, int r, struct peer *p, char *line)
{
    char text[600];

    if (w->rank != 0) {
        if (line[0] == 'A') {
            snprintf(text, sizeof(text), "train: rank %d: stopping: %s\n",
                     w->rank, line + (line[1] ? 2 : 1));
            die(text);
        }
        if (line[0] == 'B')
            p->bye = 1;
        return;
    }
    if (line[0] == 'P') {
        unsigned long long seq;
        int busy, group, size, ms, off = 0;

        if (sscanf(line, "P %llu %d %d %d %d %n", &seq, &busy, &group, &size,
                   &ms, &off) == 5 &&
            off > 0) {
            p->heard = 1;
            p->seq = seq;
            p->busy = busy;
            p->group = group >= 0 && group < COMM_N_GROUPS ? group : 0;
            p->size = size;
            p->since = comm_now() - ms / 1000.0;
            snprintf(p->what, sizeof(p->what), "%s", line + off);
        }
    } else if (line[0] == 'S') {
        char reason[300];

        snprintf(text, sizeof(text), "%s\n", line + (line[1] ? 2 : 1));
        snprintf(reason, sizeof(reason),
                 "rank %d waited in a collective past --comm_timeout "
                 "(rank 0 reports the last collective of each rank)",
                 r);
        hub_abort(w, text, reason);
    } else if (line[0] == 'B') {
        p->bye = 1;
    }
}

/* What arrived on p's connection; -1 once it has closed. */
static int
read_peer(struct comm_watch *w, int r, struct peer *p)
{
    for (;;) {
        ssize_t k;
        char *nl;

        if (p->n_in == sizeof(p->in) - 1)
            p->n_in = 0; /* a line this long is no line of ours */
        k = recv(p->fd, p->in + p->n_in, sizeof(p->in) - 1 - p->n_in,
                 MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (k <= 0) {
            close(p->fd);
            p->fd = -1;
            return -1;
        }
        p->n_in += (size_t)k;
        p->in[p->n_in] = '\0';
        while ((nl = strchr(p->in, '\n')) != NULL) {
            *nl = '\0';
            take_line(w, r, p, p->in);
            p->n_in -= (size_t)(nl + 1 - p->in);
            memmove(p->in, nl + 1, p->n_in + 1);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The thread                                                                */

static void
stuck_line(struct comm_watch *w, char *out, size_t cap)
{
    const char *what = atomic_load(&w->what);

    snprintf(out, cap,
             "train: rank %d: %s over the %s group (%d ranks) has waited "
             "more than %.0f s (--comm_timeout): a rank died, hangs or took "
             "another path; stopping every rank",
             w->rank, what ? what : "?",
             comm_group_name((enum comm_group)atomic_load(&w->group)),
             atomic_load(&w->size), w->timeout);
}

static void
hub_round(struct comm_watch *w, struct pollfd *pf)
{
    int n = 0;

    for (int r = 1; r < w->world; r++)
        if (w->peers[r].fd >= 0) {
            pf[n].fd = w->peers[r].fd;
            pf[n].events = POLLIN;
            pf[n].revents = 0;
            n++;
        }
    if (n == 0 || poll(pf, (nfds_t)n, 100) <= 0) {
        if (n == 0)
            usleep(100000);
        return;
    }
    for (int r = 1; r < w->world; r++) {
        struct peer *p = &w->peers[r];

        if (p->fd < 0 || read_peer(w, r, p) == 0 || p->bye)
            continue;
        if (!atomic_load(&w->stop) && !atomic_load(&exiting)) {
            char first[300], reason[300];

            snprintf(first, sizeof(first),
                     "train: rank %d: rank %d ended before the others "
                     "(killed, crashed or stopped on an error: its own "
                     "message, if any, is above); stopping every rank\n",
                     w->rank, r);
            snprintf(reason, sizeof(reason),
                     "rank %d ended before the others (rank 0 reports the "
                     "last collective of each rank)",
                     r);
            hub_abort(w, first, reason);
        }
    }
}

static void
rank_round(struct comm_watch *w)
{
    struct peer *hub = &w->peers[0];
    unsigned long long seq = atomic_load(&w->seq);
    int busy = atomic_load(&w->busy);
    double now = comm_now();

    if (hub->fd < 0) {
        usleep(100000);
        return;
    }
    if ((seq != w->sent_seq || busy != w->sent_busy) &&
        now - w->sent_at >= PROGRESS_EVERY) {
        const char *what = atomic_load(&w->what);
        char line[160];

        snprintf(line, sizeof(line), "P %llu %d %d %d %d %.40s\n", seq, busy,
                 atomic_load(&w->group), atomic_load(&w->size),
                 (int)((now - atomic_load(&w->since)) * 1000),
                 what ? what : "?");
        queue(w, line);
        w->sent_seq = seq;
        w->sent_busy = busy;
        w->sent_at = now;
    }
    flush_queue(w);
    {
        struct pollfd pf = { hub->fd, POLLIN, 0 };

        if (poll(&pf, 1, 100) <= 0 || read_peer(w, 0, hub) == 0 || hub->bye)
            return;
    }
    if (!atomic_load(&w->stop)) {
        char text[300];

        snprintf(text, sizeof(text),
                 "train: rank %d: rank 0 ended before the others (killed, "
                 "crashed or stopped on an error: see its message); "
                 "stopping\n",
                 w->rank);
        die(text);
    }
}

static void *
watch_main(void *arg)
{
    struct comm_watch *w = arg;
    struct pollfd *pf = calloc((size_t)w->world, sizeof(*pf));

    while (!atomic_load(&w->stop)) {
        double since = atomic_load(&w->since);

        if (atomic_load(&exiting)) { /* the process says why itself */
            usleep(100000);
            continue;
        }
        if (w->timeout > 0 && atomic_load(&w->busy) &&
            comm_now() - since > w->timeout) {
            char line[400], text[420];

            stuck_line(w, line, sizeof(line));
            snprintf(text, sizeof(text), "%s\n", line);
            if (w->rank == 0)
                hub_abort(w, text,
                          "rank 0 waited in a collective past "
                          "--comm_timeout (it reports the last collective "
                          "of each rank)");
            if (w->n_peers == 0 || w->peers[0].fd < 0)
                die(text);
            if (w->stuck_at == 0) { /* the hub reports and stops all */
                char s[420];

                snprintf(s, sizeof(s), "S %s\n", line);
                queue(w, s);
                w->stuck_at = comm_now();
            } else if (comm_now() - w->stuck_at > HUB_GRACE) {
                die(text);
            }
        }
        if (w->n_peers == 0 || pf == NULL)
            usleep(100000);
        else if (w->rank == 0)
            hub_round(w, pf);
        else
            rank_round(w);
    }
    free(pf);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The interface                                                             */

struct comm_watch *
comm_watch_start(int rank, int world, int *ctl, double timeout, char *err,
                 size_t len)
{
    struct comm_watch *w = calloc(1, sizeof(*w));
    int n = ctl == NULL ? 0 : rank == 0 ? world : 1;

    if (w == NULL ||
        (w->peers = calloc(n ? (size_t)n : 1, sizeof(*w->peers))) == NULL) {
        free(w);
        snprintf(err, len, "out of memory");
        return NULL;
    }
    w->rank = rank;
    w->world = world;
    w->timeout = timeout;
    w->n_peers = n;
    for (int i = 0; i < n; i++)
        w->peers[i].fd = ctl[i];
    if (rank == 0 && n > 0)
        w->peers[0].fd = -1;
    atomic_store(&w->since, comm_now());
    if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
        snprintf(err, len, "cannot start the watchdog thread: %s",
                 strerror(errno));
        free(w->peers);
        free(w);
        return NULL;
    }
    return w;
}

void
comm_watch_busy(struct comm_watch *w, const char *what, enum comm_group g,
                int size)
{
    if (w == NULL)
        return;
    atomic_store(&w->what, what);
    atomic_store(&w->group, (int)g);
    atomic_store(&w->size, size);
    atomic_store(&w->since, comm_now());
    atomic_fetch_add(&w->seq, 1);
    atomic_store(&w->busy, 1);
}

void
comm_watch_idle(struct comm_watch *w)
{
    if (w == NULL)
        return;
    atomic_store(&w->busy, 0);
    atomic_store(&w->since, comm_now());
}

void
comm_watch_stop(struct comm_watch *w)
{
    if (w == NULL)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    for (int i = 0; i < w->n_peers; i++)
        if (w->peers[i].fd >= 0) {
            if (w->rank != 0) /* the rest of the queue, whole lines */
                send_now(w->peers[i].fd, w->out, w->n_out);
            if (!w->peers[i].bye || w->rank != 0)
                send_now(w->peers[i].fd, "B\n", 2);
            close(w->peers[i].fd);
        }
    free(w->peers);
    free(w);
}

/* ------------------------------------------------------------------------ */
/* The channel where MPI connects the ranks                                  */

/* The card: "token port host ...": a random token, the port, rank 0's
 * host name, then loopback (ranks on its node).  A rank tries each host
 * until rank 0 answers "OK" to its token. */
int
comm_ctl_listen(int *lfd, char *card, size_t cap, char *err, size_t len)
{
    char host[256];
    unsigned long long token;
    int port = 0;
    size_t n;
    FILE *ur = fopen("/dev/urandom", "rb");

    if (ur == NULL || fread(&token, sizeof(token), 1, ur) != 1) {
        if (ur)
            fclose(ur);
        snprintf(err, len, "cannot read /dev/urandom");
        return -1;
    }
    fclose(ur);
    *lfd = sock_listen(&port, err, len);
    if (*lfd < 0)
        return -1;
    n = (size_t)snprintf(card, cap, "%016llx %d", token, port);
    if (gethostname(host, sizeof(host)) == 0 && n < cap)
        n += (size_t)snprintf(card + n, cap - n, " %s", host);
    if (n < cap)
        snprintf(card + n, cap - n, " 127.0.0.1");
    return 0;
}

int
comm_ctl_connect(const char *card, int rank, double deadline, char *err,
                 size_t len)
{
    char token[32], hosts[1024], *save = NULL, *h;
    int port, off = 0, fd = -1;

    if (sscanf(card, "%31s %d %n", token, &port, &off) != 2 || off == 0) {
        snprintf(err, len, "a malformed watchdog address '%s'", card);
        return -1;
    }
    snprintf(hosts, sizeof(hosts), "%s", card + off);
    for (h = strtok_r(hosts, " ", &save); h != NULL && fd < 0;
         h = strtok_r(NULL, " ", &save)) {
        double d = comm_now() + 5;

        fd = sock_connect(h, port, d < deadline ? d : deadline, NULL, err, len);
    }
    if (fd >= 0) {
        char hello[64];

        char ok[8];

        snprintf(hello, sizeof(hello), "%s %d\n", token, rank);
        if (sock_write_all(fd, hello, strlen(hello)) < 0 ||
            sock_read_line(fd, ok, sizeof(ok), comm_now() + 10) < 0 ||
            strcmp(ok, "OK") != 0) {
            snprintf(err, len, "rank 0's watchdog at %s does not answer",
                     card + off);
            close(fd);
            fd = -1;
        }
    }
    return fd;
}

int
comm_ctl_accept(int lfd, const char *card, int world, int *ctl, double deadline,
                char *err, size_t len)
{
    char token[32];
    int joined = 0;

    sscanf(card, "%31s", token);
    for (int r = 0; r < world; r++)
        ctl[r] = -1;
    while (joined < world - 1) {
        int fd = sock_accept(lfd, deadline), rank;
        char line[64], got[32];

        if (fd < 0) {
            snprintf(err, len, "%d of %d ranks reached rank 0's watchdog: %s",
                     joined + 1, world, strerror(errno));
            goto fail;
        }
        if (sock_read_line(fd, line, sizeof(line), comm_now() + 5) < 0 ||
            sscanf(line, "%31s %d", got, &rank) != 2 ||
            strcmp(got, token) != 0 || rank < 1 || rank >= world ||
            ctl[rank] >= 0) {
            close(fd); /* not one of ours */
            continue;
        }
        if (sock_write_all(fd, "OK\n", 3) < 0) {
            close(fd);
            continue;
        }
        ctl[rank] = fd;
        joined++;
    }
    return 0;
fail:
    for (int r = 0; r < world; r++)
        if (ctl[r] >= 0)
            close(ctl[r]);
    return -1;
}
