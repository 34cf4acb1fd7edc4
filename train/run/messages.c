/* SPDX-License-Identifier: MIT */
/*
 * messages.c: what the program says on stderr: PaddleNLP's log lines (rank
 * 0 only), fatal errors naming the rank, usage errors; and the clock and
 * durations its lines show.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "run.h"

int g_rank, g_world = 1;

void
log_info(const char *fmt, ...)
{
    struct timeval tv;
    struct tm tm;
    char ts[32];
    va_list ap;

    if (g_rank != 0)
        return;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(stderr, "[%s,%03d] [    INFO] - ", ts, (int)(tv.tv_usec / 1000));
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void
fatal(const char *fmt, ...)
{
    va_list ap;

    comm_exiting(); /* the other ranks learn of it without our watchdog */
    if (g_world > 1)
        fprintf(stderr, "train: rank %d: ", g_rank);
    else
        fprintf(stderr, "train: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1); /* without MPI_Finalize: the watchdog of rank 0, or mpirun,
              * ends the other ranks */
}

void
usage_error(const char *fmt, ...)
{
    va_list ap;

    comm_exiting();
    /* Every rank checks the same arguments: one message is enough.  The
     * others wait a moment, so that mpirun (which ends the job at the
     * first exit) does not stop rank 0 before it has said why. */
    if (g_rank == 0) {
        fprintf(stderr, "train: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (see train --help)\n", stderr);
    } else {
        sleep(2);
    }
    exit(2);
}

double
now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void
fmt_duration(char *out, size_t len, double s)
{
    long long t;

    if (!(s >= 0) || s > 1e12) {
        snprintf(out, len, "?");
        return;
    }
    t = llround(s);
    snprintf(out, len, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
}
