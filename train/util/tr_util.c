/* SPDX-License-Identifier: MIT */
/*
 * tr_util.c: the helpers of tr_util.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tr_util.h"
#include "banned.h"

int
tr_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int
tr_write_all(int fd, const void *p, size_t n)
{
    const char *s = (const char *)p;

    while (n > 0) {
        ssize_t w = write(fd, s, n < ((size_t)1 << 30) ? n : (size_t)1 << 30);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int
tr_make_dirs(const char *path, char failed[PATH_MAX])
{
    size_t n = strlen(path);

    if (n == 0 || n >= PATH_MAX) {
        errno = n ? ENAMETOOLONG : ENOENT;
        snprintf(failed, PATH_MAX, "%s", path);
        return -1;
    }
    memcpy(failed, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (failed[i] != '/' && failed[i] != '\0')
            continue;
        failed[i] = '\0';
        if (mkdir(failed, 0777) < 0 && errno != EEXIST)
            return -1;
        if (i < n)
            failed[i] = '/';
    }
    return 0;
}

void
tr_sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;

    if (slash == NULL)
        dir = strdup(".");
    else
        dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
    if (dir == NULL)
        return;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Each staging block starts with its size (16 bytes keep malloc's
 * alignment). */
#define STAGE_HEADER 16
static size_t stage_held, stage_peak;

void *
tr_stage_alloc(size_t bytes)
{
    char *p;

    if (bytes > (size_t)-1 - STAGE_HEADER ||
        (p = malloc(STAGE_HEADER + bytes)) == NULL)
        return NULL;
    memcpy(p, &bytes, sizeof(bytes));
    stage_held += bytes;
    if (stage_held > stage_peak)
        stage_peak = stage_held;
    return p + STAGE_HEADER;
}

void
tr_stage_free(void *p)
{
    size_t bytes;

    if (p == NULL)
        return;
    memcpy(&bytes, (char *)p - STAGE_HEADER, sizeof(bytes));
    stage_held -= bytes;
    free((char *)p - STAGE_HEADER);
}

void
tr_stage_reset(void)
{
    stage_peak = stage_held;
}

size_t
tr_stage_peak(void)
{
    return stage_peak;
}

char *
tr_file_in_dir(const char *dir, const char *name)
{
    struct stat st;
    char *p;

    if (asprintf(&p, "%s/%s", dir, name) < 0)
        return NULL;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
        return p;
    free(p);
    return NULL;
}
