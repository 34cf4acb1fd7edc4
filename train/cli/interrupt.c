/* SPDX-License-Identifier: MIT */
/*
 * interrupt.c: the trainer's signal handlers (see interrupt.h).  The
 * handlers use async-signal-safe calls only: SIGTERM and SIGUSR1 set a
 * flag; SIGINT lists the protected directory with the raw getdents64
 * system call (opendir() allocates), unlinks its files, removes it, and
 * re-raises SIGINT with the default action.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interrupt.h"
#include "banned.h"

static volatile sig_atomic_t pending;   /* SIGTERM or SIGUSR1, or 0 */
static volatile sig_atomic_t protected; /* protect_path is set */
static char protect_path[4096];

/* The records of getdents64(2). */
struct dirent64_rec {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void
on_stop(int sig)
{
    pending = sig;
}

static void
remove_protected(void)
{
    static char buf[8192];
    int fd = open(protect_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));

        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64_rec *d = (struct dirent64_rec *)(buf + off);

            if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
                unlinkat(fd, d->d_name, 0);
            off += d->d_reclen;
        }
    }
    close(fd);
    rmdir(protect_path);
}

static void
on_int(int sig)
{
    int saved = errno;

    if (protected)
        remove_protected();
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

int
interrupt_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_stop;
    if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGUSR1, &sa, NULL) < 0)
        return -1;
    sa.sa_handler = on_int;
    return sigaction(SIGINT, &sa, NULL);
}

int
interrupt_pending(void)
{
    return pending;
}

void
interrupt_protect(const char *dir)
{
    size_t n = strlen(dir);

    protected = 0;
    if (n >= sizeof(protect_path))
        return;
    memcpy(protect_path, dir, n + 1);
    protected = 1;
}

void
interrupt_release(void)
{
    protected = 0;
}
