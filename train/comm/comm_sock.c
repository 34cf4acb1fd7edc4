/* SPDX-License-Identifier: MIT */
/*
 * comm_sock.c: the TCP plumbing of the rendezvous, the TCP backend and
 * the watchdog's control channel (comm_int.h): listening, connecting
 * with a deadline, whole reads and writes, and the first host of a Slurm
 * host list.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm_int.h"

double
comm_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Milliseconds left until deadline, for poll() (at least 0; -1: none). */
static int
ms_left(double deadline)
{
    double left;

    if (deadline <= 0)
        return -1;
    left = deadline - comm_now();
    if (left <= 0)
        return 0;
    return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

void
sock_tune(int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int
sock_listen(int *port, char *err, size_t len)
{
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    struct sockaddr_storage got;
    socklen_t glen = sizeof(got);
    int one = 1, zero = 0, fd;

    /* One IPv6 socket takes IPv4 too (v4-mapped); without IPv6, IPv4. */
    fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        memset(&a6, 0, sizeof(a6));
        a6.sin6_family = AF_INET6;
        a6.sin6_addr = in6addr_any;
        a6.sin6_port = htons((uint16_t)*port);
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) != 0) {
            int e = errno;

            close(fd);
            fd = -1;
            if (e == EADDRINUSE || e == EACCES) {
                errno = e;
                goto fail;
            }
        }
    }
    if (fd < 0) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            goto fail;
        memset(&a4, 0, sizeof(a4));
        a4.sin_family = AF_INET;
        a4.sin_addr.s_addr = htonl(INADDR_ANY);
        a4.sin_port = htons((uint16_t)*port);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0)
            goto fail_close;
    }
    if (listen(fd, 4096) != 0 ||
        getsockname(fd, (struct sockaddr *)&got, &glen) != 0)
        goto fail_close;
    *port = ntohs(got.ss_family == AF_INET6
                      ? ((struct sockaddr_in6 *)&got)->sin6_port
                      : ((struct sockaddr_in *)&got)->sin_port);
    return fd;
fail_close : {
    int e = errno;

    close(fd);
    errno = e;
}
fail:
    snprintf(err, len, "cannot listen on port %d: %s", *port, strerror(errno));
    return -1;
}

int
sock_connect_addr(const struct sockaddr_storage *addr, double deadline,
                  char *err, size_t len)
{
    socklen_t alen = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                 : sizeof(struct sockaddr_in);
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), rc, e;
    char host[128];

    if (fd < 0)
        goto fail;
    /* Nonblocking for the connect only, so that it keeps the deadline. */
    fcntl(fd, F_SETFL, O_NONBLOCK);
    rc = connect(fd, (const struct sockaddr *)addr, alen);
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd p = { fd, POLLOUT, 0 };
        socklen_t elen = sizeof(e);

        rc = poll(&p, 1, ms_left(deadline));
        if (rc == 0) {
            errno = ETIMEDOUT;
            rc = -1;
        } else if (rc > 0) {
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen);
            errno = e;
            rc = e ? -1 : 0;
        }
    }
    if (rc != 0)
        goto fail;
    fcntl(fd, F_SETFL, 0);
    sock_tune(fd);
    return fd;
fail:
    e = errno;
    if (fd >= 0)
        close(fd);
    sock_addr_text(addr, host, sizeof(host));
    snprintf(err, len, "cannot connect to %s port %d: %s", host,
             ntohs(addr->ss_family == AF_INET6
                       ? ((const struct sockaddr_in6 *)addr)->sin6_port
                       : ((const struct sockaddr_in *)addr)->sin_port),
             strerror(e));
    errno = e;
    return -1;
}

int
sock_connect(const char *host, int port, double deadline,
             struct sockaddr_storage *addr, char *err, size_t len)
{
    struct addrinfo hints, *res, *ai;
    char service[16];
    int rc, fd = -1, e = ECONNREFUSED;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof(service), "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, len, "cannot resolve '%s': %s", host, gai_strerror(rc));
        errno = EHOSTUNREACH;
        return -1;
    }
    for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        struct sockaddr_storage a;

        if (ai->ai_addrlen > sizeof(a))
            continue;
        memset(&a, 0, sizeof(a));
        memcpy(&a, ai->ai_addr, ai->ai_addrlen);
        fd = sock_connect_addr(&a, deadline, err, len);
        if (fd >= 0 && addr != NULL)
            *addr = a;
        if (fd < 0)
            e = errno;
    }
    freeaddrinfo(res);
    errno = e;
    return fd;
}

int
sock_accept(int lfd, double deadline)
{
    struct pollfd p = { lfd, POLLIN, 0 };
    int rc, fd;

    do
        rc = poll(&p, 1, ms_left(deadline));
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        errno = ETIMEDOUT;
    if (rc <= 0)
        return -1;
    fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
        sock_tune(fd);
    return fd;
}

int
sock_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int
sock_read_all(int fd, void *p, size_t n, double deadline)
{
    char *c = p;

    while (n > 0) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t k;
        int rc = poll(&pf, 1, ms_left(deadline));

        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            errno = ETIMEDOUT;
        if (rc <= 0)
            return -1;
        k = recv(fd, c, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k == 0)
            errno = ECONNRESET;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int
sock_read_line(int fd, char *buf, size_t cap, double deadline)
{
    size_t n = 0;

    for (;;) {
        char ch;

        if (sock_read_all(fd, &ch, 1, deadline) < 0)
            return -1;
        if (ch == '\n')
            break;
        if (n + 1 >= cap) {
            errno = EMSGSIZE;
            return -1;
        }
        buf[n++] = ch;
    }
    buf[n] = '\0';
    return 0;
}

void
sock_addr_text(const struct sockaddr_storage *addr, char *host, size_t cap)
{
    socklen_t alen = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                 : sizeof(struct sockaddr_in);

    if (getnameinfo((const struct sockaddr *)addr, alen, host, (socklen_t)cap,
                    NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(host, cap, "?");
}

void
sock_set_port(struct sockaddr_storage *addr, int port)
{
    if (addr->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
}

int
comm_first_host(const char *list, char *out, size_t cap)
{
    size_t n = 0;
    const char *s = list;

    /* Up to the first comma outside brackets; each bracket contributes
     * the first number of its first range, as written ("07"). */
    while (*s != '\0' && *s != ',') {
        if (*s == '[') {
            s++;
            while (*s >= '0' && *s <= '9') {
                if (n + 1 >= cap)
                    return -1;
                out[n++] = *s++;
            }
            while (*s != '\0' && *s != ']')
                s++;
            if (*s != ']')
                return -1;
            s++;
            continue;
        }
        if (*s == ']' || n + 1 >= cap)
            return -1;
        out[n++] = *s++;
    }
    out[n] = '\0';
    return n > 0 ? 0 : -1;
}
