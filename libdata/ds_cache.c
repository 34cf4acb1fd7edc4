/* SPDX-License-Identifier: MIT */
/*
 * ds_cache.c: the locks that make one process of a node build an index
 * cache while the others wait (flock(2) on "<cache>.lock"), and the
 * cleaning of what interrupted builds leave behind: lock files nobody
 * holds and "<cache>.tmp.<pid>" temporaries of processes that are gone.
 * The lock files are removed by their holder, so they do not pile up
 * beside the data.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ds_int.h"

/* Give up locking (and go on unlocked) after this many lock files were
 * removed under us while we waited: it never takes more than a few. */
#define LOCK_TRIES 64

/* Whether fd is the file now at path. */
static bool
same_file(int fd, const char *path)
{
    struct stat a, b;

    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static int
open_lock(const char *name, bool create)
{
    int fd = open(name, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0644);

    if (fd < 0 && errno != ENOENT) /* another user's lock file: flock() */
        fd = open(name, O_RDONLY | O_CLOEXEC); /* needs no write access */
    return fd;
}

int
ds_cache_lock(const char *path)
{
    char *name = ds_path_cat(path, ".lock", NULL);
    int fd = -1;

    if (name == NULL)
        return -1;
    for (int tries = 0; tries < LOCK_TRIES; tries++) {
        struct stat st;

        if ((fd = open_lock(name, true)) < 0)
            break;
        while (flock(fd, LOCK_EX) < 0)
            if (errno != EINTR) { /* ENOLCK, EOPNOTSUPP: go on unlocked */
                close(fd);
                fd = -1;
                goto out;
            }
        if (same_file(fd, name) || (stat(name, &st) < 0 && errno != ENOENT))
            goto out;
        /* The holder we waited for removed the file: lock the new one. */
        close(fd);
        fd = -1;
    }
out:
    free(name);
    return fd;
}

void
ds_cache_unlock(int fd, const char *path)
{
    char *name;

    if (fd < 0)
        return;
    name = ds_path_cat(path, ".lock", NULL);
    /* Only the holder removes the file, so it is still ours; the next
     * process creates a new one (a waiter sees the change). */
    if (name != NULL && same_file(fd, name))
        unlink(name);
    free(name);
    close(fd); /* releases the flock */
}

/* ------------------------------------------------------------------------ */
/* Cleaning                                                                  */

/* Take the lock file `name` if nobody holds it: 1 with *fd (-1 when there
 * is no such file), 0 if it is held or cannot be tested. */
static int
take_if_free(const char *name, int *fd)
{
    *fd = open_lock(name, false);
    if (*fd < 0)
        return errno == ENOENT;
    if (flock(*fd, LOCK_EX | LOCK_NB) < 0 || !same_file(*fd, name)) {
        close(*fd);
        *fd = -1;
        return 0;
    }
    return 1;
}

/* Remove the lock file `name` held through fd, and release it. */
static void
drop_lock(int fd, const char *name, size_t *n_removed)
{
    if (fd < 0)
        return;
    if (same_file(fd, name) && unlink(name) == 0)
        (*n_removed)++;
    close(fd);
}

static bool
alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* name = target + ".lock" or target + ".tmp.<pid>": the length of target
 * and the pid (0 for a lock), or 0 if name is neither. */
static size_t
split_name(const char *name, long *pid)
{
    size_t n = strlen(name);
    const char *t;

    *pid = 0;
    if (n > 5 && strcmp(name + n - 5, ".lock") == 0)
        return n - 5;
    for (t = name + n; t > name && isdigit((unsigned char)t[-1]); t--)
        ;
    if (t == name + n || (size_t)(t - name) < 5 || memcmp(t - 5, ".tmp.", 5))
        return 0;
    *pid = strtol(t, NULL, 10);
    return (size_t)(t - name) - 5;
}

static const char *const gpt_files[] = { ".dsc", "_doc_idx.npy",
                                         "_sample_idx.npy",
                                         "_shuffle_idx.npy" };

/* Whether name[0..len) is a cache of ours; *lock_len gets the length of
 * the name its lock file adds ".lock" to (GPT: the .dsc). */
static bool
is_cache(const char *name, size_t len, const char *base, bool gpt,
         size_t *lock_len)
{
    size_t b = base ? strlen(base) : 0;

    if (base != NULL && len > b + 1 && memcmp(name, base, b) == 0 &&
        name[b] == '_' && len >= 4 && memcmp(name + len - 4, ".npy", 4) == 0) {
        for (size_t i = b; i + 10 <= len; i++)
            if (memcmp(name + i, "_indexmap_", 10) == 0) {
                *lock_len = len;
                return true;
            }
    }
    if (!gpt || len < 32)
        return false;
    for (size_t i = 0; i < 32; i++)
        if (!isxdigit((unsigned char)name[i]))
            return false;
    for (size_t k = 0; k < sizeof(gpt_files) / sizeof(*gpt_files); k++)
        if (len - 32 == strlen(gpt_files[k]) &&
            memcmp(name + 32, gpt_files[k], len - 32) == 0) {
            *lock_len = 32 + 4; /* "<md5>.dsc" */
            return true;
        }
    return false;
}

void
ds_cache_clean(const char *dir, const char *base, bool gpt, size_t *n_removed)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t len, lock_len;
        long pid;
        char *path, *lock;
        int fd;

        len = split_name(e->d_name, &pid);
        if (len == 0 || !is_cache(e->d_name, len, base, gpt, &lock_len))
            continue;
        if (pid == 0 && len != lock_len) /* GPT: only the .dsc has a lock */
            continue;
        if (pid != 0 && (pid == (long)getpid() || alive(pid)))
            continue;
        path = ds_path_cat(dir, "/", e->d_name);
        lock = ds_path_cat(dir, "/", e->d_name);
        if (path == NULL || lock == NULL) {
            free(path);
            free(lock);
            break;
        }
        /* lock = dir/<target up to lock_len>.lock */
        snprintf(lock + strlen(dir) + 1, lock_len + 1, "%s", e->d_name);
        {
            char *l = ds_path_cat(lock, ".lock", NULL);

            free(lock);
            lock = l;
        }
        if (lock != NULL && take_if_free(lock, &fd)) {
            if (pid != 0 && unlink(path) == 0)
                (*n_removed)++;
            drop_lock(fd, lock, n_removed);
        }
        free(path);
        free(lock);
    }
    closedir(d);
}
