/* SPDX-License-Identifier: MIT */
/*
 * tr_util.h: the small helpers the trainer's files share, written once:
 * an error message into a caller's buffer, a whole buffer written to a
 * file descriptor, a directory made with its parents, a rename made
 * durable, and counted staging memory.  Library code: nothing here exits
 * or prints.
 */
#ifndef TRAIN_TR_UTIL_H
#define TRAIN_TR_UTIL_H

#include <limits.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* tr_fail: the message (printf's fmt and arguments) into err[0..errlen),
 * truncated to fit; err may be NULL or errlen 0 (no message).  Returns -1,
 * so that a failing function can end with `return tr_fail(...)`. */
int tr_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tr_write_all: the n bytes at p to fd, in pieces of at most 1 GiB,
 * retried on EINTR.  Returns 0, or -1 with errno set. */
int tr_write_all(int fd, const void *p, size_t n);

/* tr_make_dirs: mkdir -p path (mode 0777 less the umask); what exists
 * already is fine, a file included (the caller checks what it needs).
 * Returns 0, or -1 with errno set and in failed the directory that could
 * not be made (path itself when it is empty or too long). */
int tr_make_dirs(const char *path, char failed[PATH_MAX]);

/* tr_sync_parent: fsync the directory that holds path, so that a rename
 * into it survives a crash; failures are ignored (the rename is done,
 * only its durability is at stake). */
void tr_sync_parent(const char *path);

/* tr_stage_alloc, tr_stage_free: host memory staging tensors on their way
 * between a file and the buffers that own them (checkpoints: one tensor
 * at a time, never the model), counted: tr_stage_peak() is the most bytes
 * held at once since tr_stage_reset(), so tests can check the bound.
 * Not thread-safe: one save or load at a time.  tr_stage_alloc returns
 * NULL when out of memory; tr_stage_free(NULL) does nothing. */
void *tr_stage_alloc(size_t bytes);
void tr_stage_free(void *p);
void tr_stage_reset(void);
size_t tr_stage_peak(void);
/* tr_file_in_dir: dir/name when that is a regular file (caller frees),
 * else NULL (none, or out of memory). */
char *tr_file_in_dir(const char *dir, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_TR_UTIL_H */
