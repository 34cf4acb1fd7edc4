/* SPDX-License-Identifier: MIT */
/*
 * ds_file.c: the file plumbing of libdata: output files written through a
 * large buffer (the token file streams at disk speed), header patches and
 * read-backs with pwrite/pread, temporary names, and read-only mappings of
 * whole input files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_int.h"

char *
ds_path_cat(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = c ? strlen(c) : 0;
    char *s = malloc(la + lb + lc + 1);

    if (s == NULL)
        return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    if (lc)
        memcpy(s + la + lb, c, lc);
    s[la + lb + lc] = '\0';
    return s;
}

char *
ds_tmp_name(const char *path)
{
    char pid[32];

    snprintf(pid, sizeof(pid), ".tmp.%ld", (long)getpid());
    return ds_path_cat(path, pid, NULL);
}

/* ------------------------------------------------------------------------ */
/* Buffered output                                                           */

int
ds_wfile_open(struct ds_wfile *f, char *path, bool rw, size_t cap,
              struct ds_err *err)
{
    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->path = path;
    if (path == NULL)
        return ds_err_nomem(err);
    f->buf = malloc(cap);
    if (f->buf == NULL)
        return ds_err_nomem(err);
    f->cap = cap;
    f->fd = open(path, (rw ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC | O_CLOEXEC,
                 0666);
    if (f->fd < 0) {
        int rc = ds_err_set(err, DS_EIO, "cannot create '%s': %s", path,
                            strerror(errno));

        /* Not ours to remove: ds_wfile_discard() must not unlink it. */
        free(f->path);
        f->path = NULL;
        return rc;
    }
    return 0;
}

/* Every WRITEBACK_STEP bytes, the written ones are sent to the disk
 * (asynchronously, where the system can): the fsync of a completed file
 * then waits for its last few MB only, not for all that the page cache
 * held back (on a 31 MB token file, 10 ms of a 0.3 s run). */
#define WRITEBACK_STEP ((uint64_t)8 << 20)

static void
write_out(struct ds_wfile *f)
{
    const unsigned char *p = f->buf;
    size_t n = f->len;

    f->len = 0;
    if (f->err_no != 0)
        return;
    while (n > 0) {
        ssize_t w = write(f->fd, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            f->err_no = errno;
            return;
        }
        p += w;
        n -= (size_t)w;
        f->flushed += (uint64_t)w;
    }
#ifdef SYNC_FILE_RANGE_WRITE
    if (f->flushed - f->kicked >= WRITEBACK_STEP) {
        /* Only a hint: a failure shows again at fsync. */
        (void)sync_file_range(f->fd, (off_t)f->kicked,
                              (off_t)(f->flushed - f->kicked),
                              SYNC_FILE_RANGE_WRITE);
        f->kicked = f->flushed;
    }
#endif
}

unsigned char *
ds_wfile_space(struct ds_wfile *f, size_t n)
{
    if (f->cap - f->len < n)
        write_out(f);
    return f->buf + f->len;
}

void
ds_wfile_write(struct ds_wfile *f, const void *p, size_t n)
{
    const unsigned char *s = p;

    while (n > 0) {
        size_t k = f->cap - f->len;

        if (k == 0) {
            write_out(f);
            k = f->cap;
        }
        if (k > n)
            k = n;
        memcpy(f->buf + f->len, s, k);
        ds_wfile_advance(f, k);
        s += k;
        n -= k;
    }
}

static int
io_error(struct ds_wfile *f, const char *what, struct ds_err *err)
{
    return ds_err_set(err, DS_EIO, "cannot %s '%s': %s", what, f->path,
                      strerror(f->err_no ? f->err_no : EIO));
}

int
ds_wfile_flush(struct ds_wfile *f, struct ds_err *err)
{
    write_out(f);
    return f->err_no ? io_error(f, "write", err) : 0;
}

int
ds_wfile_pwrite(struct ds_wfile *f, const void *p, size_t n, uint64_t off,
                struct ds_err *err)
{
    const unsigned char *s = p;

    if (ds_wfile_flush(f, err) < 0)
        return DS_EIO;
    while (n > 0) {
        ssize_t w = pwrite(f->fd, s, n, (off_t)off);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            f->err_no = errno;
            return io_error(f, "write", err);
        }
        s += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int
ds_wfile_pread(struct ds_wfile *f, void *p, size_t n, uint64_t off,
               struct ds_err *err)
{
    unsigned char *d = p;

    if (ds_wfile_flush(f, err) < 0)
        return DS_EIO;
    while (n > 0) {
        ssize_t r = pread(f->fd, d, n, (off_t)off);

        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return ds_err_set(err, DS_EIO, "cannot read back '%s': %s", f->path,
                              r < 0 ? strerror(errno) : "short file");
        }
        d += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int
ds_wfile_close(struct ds_wfile *f, bool sync, struct ds_err *err)
{
    int rc = ds_wfile_flush(f, err);

    if (rc == 0 && sync && fsync(f->fd) < 0) {
        f->err_no = errno;
        rc = io_error(f, "sync", err);
    }
    if (close(f->fd) < 0 && rc == 0) {
        f->err_no = errno;
        rc = io_error(f, "close", err);
    }
    f->fd = -1;
    free(f->buf);
    f->buf = NULL;
    f->cap = f->len = 0;
    return rc;
}

void
ds_wfile_discard(struct ds_wfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->path != NULL)
        unlink(f->path);
    free(f->path);
    free(f->buf);
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

/* ------------------------------------------------------------------------ */
/* Input mappings                                                            */

int
ds_map_file(const char *path, struct ds_map *m, struct ds_err *err)
{
    struct stat st;
    void *p;
    int fd, rc;

    m->p = NULL;
    m->len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ds_err_set(err, DS_EIO, "cannot open '%s': %s", path,
                          strerror(errno));
    if (fstat(fd, &st) < 0) {
        rc = ds_err_set(err, DS_EIO, "cannot stat '%s': %s", path,
                        strerror(errno));
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ds_err_set(err, DS_EIO, "cannot map '%s': not a regular file",
                          path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return ds_err_set(err, DS_ENOMEM, "cannot map '%s': too large", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return ds_err_set(err, DS_EIO, "cannot map '%s': %s", path,
                          strerror(errno));
    m->p = p;
    m->len = (size_t)st.st_size;
    return 0;
}

void
ds_unmap(struct ds_map *m)
{
    if (m->p != NULL)
        munmap((void *)m->p, m->len);
    m->p = NULL;
    m->len = 0;
}

void
ds_fsync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;

    if (slash == NULL)
        dir = ds_path_cat(".", "", NULL);
    else if (slash == path)
        dir = ds_path_cat("/", "", NULL);
    else {
        dir = ds_path_cat(path, "", NULL);
        if (dir != NULL)
            dir[slash - path] = '\0';
    }
    if (dir == NULL)
        return;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}
