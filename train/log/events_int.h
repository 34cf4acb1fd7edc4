/* SPDX-License-Identifier: MIT */
/*
 * events_int.h: what events.c (the front: --report_to, the directory, the
 * dispatch) shares with the two writers, tb_events.c (TensorBoard) and
 * vdl_records.c (VisualDL).
 */
#ifndef TRAIN_EVENTS_INT_H
#define TRAIN_EVENTS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "events.h"

/* One open record file: records are packed into buf and written to f by
 * event_file_flush().  failed: an earlier write failed (nothing more is
 * written). */
struct event_file {
    FILE *f;
    char *path;
    unsigned char *buf;
    size_t len, cap;
    int failed;
};

/* Seconds (and fraction) since the epoch. */
double events_wall_time(void);

/* The largest name in dir (strcmp order) containing mark, malloc'd into
 * *name (NULL if there is none).  Returns 0, or -1 with err. */
int events_newest(const char *dir, const char *mark, char **name, char *err,
                  size_t errlen);

/* Append n bytes to the file's buffer; returns 0 or -1 (out of memory,
 * with err). */
int event_file_put(struct event_file *ef, const void *p, size_t n, char *err,
                   size_t errlen);

/* Write the buffer to the file and fflush it; returns 0, or -1 with err
 * naming the file (ef->failed is then set). */
int event_file_flush(struct event_file *ef, char *err, size_t errlen);

/* Open path for writing ("wb", or "ab" to continue it) with an empty
 * buffer; returns 0 or -1 with err. */
int event_file_open(struct event_file *ef, const char *path, const char *mode,
                    char *err, size_t errlen);

/* Flush what is left (errors ignored) and free everything; ef may be
 * zeroed. */
void event_file_close(struct event_file *ef);

/* TensorBoard (tb_events.c): a new event file in dir, with the file
 * version and a SessionLog START at first_step; then one Event of the
 * scalars per tb_write(). */
int tb_open(struct event_file *ef, const char *dir, int64_t first_step,
            char *err, size_t errlen);
int tb_write(struct event_file *ef, int64_t step, double wall,
             const struct event_scalar *s, size_t n, char *err, size_t errlen);

/* VisualDL (vdl_records.c): see events_open(); one Record per scalar. */
int vdl_open(struct event_file *ef, const char *dir, int64_t first_step,
             char *err, size_t errlen);
int vdl_write(struct event_file *ef, int64_t step, double wall,
              const struct event_scalar *s, size_t n, char *err, size_t errlen);

#endif /* TRAIN_EVENTS_INT_H */
