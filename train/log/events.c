/* SPDX-License-Identifier: MIT */
/*
 * events.c: the front of the scalar event writers (see events.h):
 * --report_to, the directory, and the buffered record files that
 * tb_events.c and vdl_records.c fill.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "events.h"
#include "events_int.h"
#include "util/tr_util.h"
#include "banned.h"

struct events {
    struct event_file tb, vdl;
    unsigned targets;
};

int
events_parse_targets(const char *report_to, unsigned *targets, char *err,
                     size_t errlen)
{
    const char *p = report_to ? report_to : "";
    unsigned t = 0;

    while (*p) {
        size_t n = strcspn(p, ", ");

        if (n == 11 && strncmp(p, "tensorboard", n) == 0)
            t |= EVENTS_TENSORBOARD;
        else if (n == 8 && strncmp(p, "visualdl", n) == 0)
            t |= EVENTS_VISUALDL;
        else if (n == 3 && strncmp(p, "all", n) == 0)
            t |= EVENTS_TENSORBOARD | EVENTS_VISUALDL;
        else if (n > 0 && !(n == 4 && strncmp(p, "none", n) == 0))
            return tr_fail(err, errlen,
                           "--report_to: unknown target '%.*s' (tensorboard, "
                           "visualdl, all or none)",
                           (int)n, p);
        p += n;
        p += strspn(p, ", ");
    }
    *targets = t;
    return 0;
}

double
events_wall_time(void)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int
events_newest(const char *dir, const char *mark, char **name, char *err,
              size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *best = NULL;

    if (d == NULL)
        return tr_fail(err, errlen, "cannot read directory '%s': %s", dir,
                       strerror(errno));
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, mark) == NULL ||
            (best && strcmp(e->d_name, best) <= 0))
            continue;
        free(best);
        if ((best = strdup(e->d_name)) == NULL) {
            closedir(d);
            return tr_fail(err, errlen, "out of memory");
        }
    }
    closedir(d);
    *name = best;
    return 0;
}

int
event_file_put(struct event_file *ef, const void *p, size_t n, char *err,
               size_t errlen)
{
    if (ef->len + n > ef->cap) {
        size_t cap = ef->cap ? ef->cap : 4096;
        unsigned char *b;

        while (cap < ef->len + n)
            cap *= 2;
        if ((b = realloc(ef->buf, cap)) == NULL)
            return tr_fail(err, errlen, "out of memory");
        ef->buf = b;
        ef->cap = cap;
    }
    memcpy(ef->buf + ef->len, p, n);
    ef->len += n;
    return 0;
}

int
event_file_flush(struct event_file *ef, char *err, size_t errlen)
{
    if (ef->failed)
        return -1;
    if ((ef->len && fwrite(ef->buf, 1, ef->len, ef->f) != ef->len) ||
        fflush(ef->f) != 0) {
        ef->failed = 1;
        return tr_fail(err, errlen, "cannot write '%s': %s", ef->path,
                       strerror(errno));
    }
    ef->len = 0;
    return 0;
}

int
event_file_open(struct event_file *ef, const char *path, const char *mode,
                char *err, size_t errlen)
{
    memset(ef, 0, sizeof(*ef));
    if ((ef->path = strdup(path)) == NULL)
        return tr_fail(err, errlen, "out of memory");
    if ((ef->f = fopen(path, mode)) == NULL) {
        tr_fail(err, errlen, "cannot create '%s': %s", path, strerror(errno));
        free(ef->path);
        ef->path = NULL;
        return -1;
    }
    return 0;
}

void
event_file_close(struct event_file *ef)
{
    if (ef->f) {
        if (!ef->failed)
            event_file_flush(ef, NULL, 0);
        fclose(ef->f);
    }
    free(ef->path);
    free(ef->buf);
    memset(ef, 0, sizeof(*ef));
}

/* mkdir -p */
static int
make_dirs(const char *dir, char *err, size_t errlen)
{
    char failed[PATH_MAX];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(failed))
        return tr_fail(err, errlen, "bad directory '%s'", dir);
    if (tr_make_dirs(dir, failed) < 0)
        return tr_fail(err, errlen, "cannot create '%s': %s", failed,
                       strerror(errno));
    return 0;
}

int
events_open(struct events **out, unsigned targets, const char *dir,
            int64_t first_step, char *err, size_t errlen)
{
    struct events *ev;

    *out = NULL;
    if (targets == 0)
        return 0;
    if (make_dirs(dir, err, errlen) < 0)
        return -1;
    if ((ev = calloc(1, sizeof(*ev))) == NULL)
        return tr_fail(err, errlen, "out of memory");
    if (((targets & EVENTS_TENSORBOARD) &&
         tb_open(&ev->tb, dir, first_step, err, errlen) < 0) ||
        ((targets & EVENTS_VISUALDL) &&
         vdl_open(&ev->vdl, dir, first_step, err, errlen) < 0)) {
        events_close(ev);
        return -1;
    }
    ev->targets = targets;
    *out = ev;
    return 0;
}

const char *
events_path(const struct events *ev, unsigned target)
{
    if (ev == NULL || !(ev->targets & target))
        return NULL;
    return target == EVENTS_TENSORBOARD ? ev->tb.path : ev->vdl.path;
}

int
events_write(struct events *ev, int64_t step, const struct event_scalar *s,
             size_t n, char *err, size_t errlen)
{
    double wall = events_wall_time();
    int rc = 0;

    if (ev == NULL)
        return 0;
    /* A file that failed once stays quiet: its error was reported. */
    if ((ev->targets & EVENTS_TENSORBOARD) && !ev->tb.failed &&
        (tb_write(&ev->tb, step, wall, s, n, err, errlen) < 0 ||
         event_file_flush(&ev->tb, err, errlen) < 0)) {
        ev->tb.failed = 1;
        rc = -1;
    }
    if ((ev->targets & EVENTS_VISUALDL) && !ev->vdl.failed &&
        (vdl_write(&ev->vdl, step, wall, s, n, err, errlen) < 0 ||
         event_file_flush(&ev->vdl, err, errlen) < 0)) {
        ev->vdl.failed = 1;
        rc = -1;
    }
    return rc;
}

void
events_close(struct events *ev)
{
    if (ev == NULL)
        return;
    event_file_close(&ev->tb);
    event_file_close(&ev->vdl);
    free(ev);
}
