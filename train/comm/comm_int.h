/* SPDX-License-Identifier: MIT */
/*
 * comm_int.h: what the backends of comm.h share inside train/comm/: TCP
 * sockets (comm_sock.c), the rendezvous of ranks started without MPI
 * (comm_rdzv.c), and the watchdog with its control channel to rank 0
 * (comm_watch.c).  Not part of the interface.
 */
#ifndef TRAIN_COMM_INT_H
#define TRAIN_COMM_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "comm.h"

/* ------------------------------------------------------------------------ */
/* Sockets (comm_sock.c).  Errors go to err[0..len) as "what: why".          */

/* comm_now: seconds on the monotonic clock. */
double comm_now(void);

/* sock_listen: a TCP socket listening on every address (IPv6 and IPv4)
 * at *port (0: one the system picks; *port gets it).  The fd, or -1. */
int sock_listen(int *port, char *err, size_t len);

/* sock_connect: a connected socket to host:port (any of its addresses),
 * giving up at deadline (comm_now() seconds); *addr gets the address
 * reached (NULL: not wanted).  The fd, or -1 (errno ECONNREFUSED when
 * nobody listens: worth trying again). */
int sock_connect(const char *host, int port, double deadline,
                 struct sockaddr_storage *addr, char *err, size_t len);

/* sock_connect_addr: the same to one address. */
int sock_connect_addr(const struct sockaddr_storage *addr, double deadline,
                      char *err, size_t len);

/* sock_accept: the next connection on lfd, or -1 at deadline (errno
 * ETIMEDOUT) or on an error. */
int sock_accept(int lfd, double deadline);

/* sock_write_all: all of p[0..n) to the blocking socket fd (no SIGPIPE:
 * a peer gone is an error).  0, or -1 with errno. */
int sock_write_all(int fd, const void *p, size_t n);

/* sock_read_all: n bytes from fd by deadline.  0, or -1 with errno
 * (ETIMEDOUT; ECONNRESET for a peer that closed). */
int sock_read_all(int fd, void *p, size_t n, double deadline);

/* sock_read_line: one line (without its newline, NUL-terminated) of at
 * most cap - 1 bytes, read a byte at a time (the rendezvous' few lines;
 * nothing after the newline is consumed).  0, or -1 as sock_read_all. */
int sock_read_line(int fd, char *buf, size_t cap, double deadline);

/* sock_tune: TCP_NODELAY (the collectives' small messages go at once). */
void sock_tune(int fd);

/* sock_addr_text: the numeric host of addr ("10.0.0.7", "::1"). */
void sock_addr_text(const struct sockaddr_storage *addr, char *host,
                    size_t cap);

/* sock_set_port: addr with its port set to port. */
void sock_set_port(struct sockaddr_storage *addr, int port);

/* comm_first_host: the first host of a Slurm host list ("gpu[07-09,12],
 * login1" gives "gpu07"), its padding kept.  0, or -1 if it is not one. */
int comm_first_host(const char *list, char *out, size_t cap);

/* ------------------------------------------------------------------------ */
/* The watchdog (comm_watch.c)                                               */

/* A thread that watches this rank's collective in progress and, through
 * a control connection per rank to rank 0 (the hub), every rank's: each
 * rank tells the hub its last collective (a sequence number, what, the
 * group) a few times a second; a collective that waits longer than the
 * timeout, or a rank whose connection closes before it said goodbye
 * (killed, crashed, exited on an error), makes the hub print the last
 * collective of every rank and stop them all (exit status 1). */
struct comm_watch;

/* comm_watch_start: ctl = the control sockets, taken over: on the hub
 * (rank 0) ctl[r] is rank r's (ctl[0] unused), elsewhere ctl[0] is the
 * hub's; ctl NULL: no channel, this rank watches only its own waits.
 * timeout 0: collectives may wait forever (dead ranks still stop the
 * others).  NULL with err when the thread cannot start. */
struct comm_watch *comm_watch_start(int rank, int world, int *ctl,
                                    double timeout, char *err, size_t len);

/* comm_watch_busy: this rank now waits in collective `what` over group g
 * of size ranks (its next sequence number); comm_watch_idle: no more.
 * NULL w: nothing. */
void comm_watch_busy(struct comm_watch *w, const char *what, enum comm_group g,
                     int size);
void comm_watch_idle(struct comm_watch *w);

/* comm_watch_on_stop: fn(arg) runs when a watch stops this rank, just
 * before it exits (the NCCL backend aborts its communicators there, so
 * that no GPU kernel is left waiting for a peer); NULL: nothing.  One
 * hook per process. */
void comm_watch_on_stop(void (*fn)(void *), void *arg);

/* comm_watch_stop: say goodbye to the hub (or, on the hub, to every
 * rank), stop the thread, close the channel, free.  NULL: nothing. */
void comm_watch_stop(struct comm_watch *w);

/* The control channel where a launcher already connects the ranks (MPI):
 * rank 0 listens (comm_ctl_listen: lfd, and the addresses that reach it
 * with the port and a token, as text to hand the others); each other
 * rank connects (comm_ctl_connect: its socket to the hub); rank 0 takes
 * world - 1 of them (comm_ctl_accept: ctl[r] for each rank r).  -1 with
 * err on failure. */
int comm_ctl_listen(int *lfd, char *card, size_t cap, char *err, size_t len);
int comm_ctl_connect(const char *card, int rank, double deadline, char *err,
                     size_t len);
int comm_ctl_accept(int lfd, const char *card, int world, int *ctl,
                    double deadline, char *err, size_t len);

/* ------------------------------------------------------------------------ */
/* The rendezvous (comm_rdzv.c)                                              */

/* What the rendezvous leaves: mesh[r] a connected socket to every rank r
 * (mesh[rank] = -1), ctl the control channel for comm_watch_start(). */
struct comm_rdzv {
    int *mesh; /* world entries */
    int *ctl;  /* hub: world entries (ctl[0] -1); others: one */
};

/* comm_rdzv_run: rank 0 listens at env's port (the first free one of its
 * range) and waits for the others, who say the run's token, their rank,
 * the world size, their layout and the port of their data socket; rank 0
 * checks them all (a different layout, world size or a rank twice is a
 * usage error: *usage set), then sends every rank the others' addresses
 * and a random nonce, and the ranks connect to each other (higher to
 * lower), the nonce proving the run.  A rendezvous not complete within
 * timeout seconds (0: forever) fails, naming the missing ranks.  0, or
 * -1 with err. */
int comm_rdzv_run(const struct comm_launch *env, const struct comm_layout *l,
                  double timeout, struct comm_rdzv *out, int *usage, char *err,
                  size_t len);
void comm_rdzv_release(struct comm_rdzv *r, int world);

#endif /* TRAIN_COMM_INT_H */
