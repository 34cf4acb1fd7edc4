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
#include <string.h>
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

/* One line on stderr in one write: the ranks share the terminal or the
 * log file, and a line written in pieces would interleave with theirs. */
static void
say_line(const char *prefix, const char *fmt, va_list ap, const char *suffix)
{
    char line[4096];
    int n = snprintf(line, sizeof(line), "%s", prefix);

    if (n >= 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    n = (int)strlen(line);
    /* (A message too long for the line keeps its end: the suffix.) */
    if ((size_t)n + strlen(suffix) + 1 >= sizeof(line))
        n = (int)(sizeof(line) - strlen(suffix) - 2);
    snprintf(line + n, sizeof(line) - (size_t)n, "%s\n", suffix);
    fflush(stderr);
    if (write(STDERR_FILENO, line, strlen(line)) < 0)
        return; /* (nowhere left to say it) */
}

void
fatal(const char *fmt, ...)
{
    char prefix[32];
    va_list ap;

    comm_exiting(); /* the other ranks learn of it without our watchdog */
    if (g_world > 1)
        snprintf(prefix, sizeof(prefix), "train: rank %d: ", g_rank);
    else
        snprintf(prefix, sizeof(prefix), "train: ");
    va_start(ap, fmt);
    say_line(prefix, fmt, ap, "");
    va_end(ap);
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
        va_start(ap, fmt);
        say_line("train: ", fmt, ap, " (see train --help)");
        va_end(ap);
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
