/* SPDX-License-Identifier: MIT */
/*
 * events.h: the run's scalars (losses, learning rate, speed, ...) as
 * TensorBoard event files and VisualDL record files, for `tensorboard
 * --logdir` and `visualdl --logdir`.  Both go into one directory (by
 * default output_dir/runs), which holds one run: a resumed run starts a
 * new TensorBoard file whose SessionLog START makes TensorBoard drop the
 * older files' points from that step on, and continues VisualDL's newest
 * file without its records from that step on.  Records are packed with
 * protobuf-c from our own .proto files (tb_event.proto, vdl_record.proto)
 * and buffered; events_write() writes one batch and flushes it.
 */
#ifndef TRAIN_EVENTS_H
#define TRAIN_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EVENTS_TENSORBOARD 1u
#define EVENTS_VISUALDL    2u

/* events_parse_targets: --report_to, a comma-separated list of
 * "tensorboard", "visualdl", "all" (both) and "none", into a set of
 * EVENTS_* bits (0 for none).  Returns 0, or -1 with err naming the word
 * that is none of these. */
int events_parse_targets(const char *report_to, unsigned *targets, char *err,
                         size_t errlen);

struct events;

/* events_open: start writing the targets' files in dir (made with its
 * parents if missing) for a run whose first step is first_step (1 for a
 * fresh run, k + 1 when resuming after global step k).  TensorBoard: a
 * new file "events.out.tfevents.<seconds>.<host>.<pid>", named to sort
 * after every event file already in dir, holding the file version and a
 * SessionLog START at first_step.  VisualDL: when resuming, dir's newest
 * "vdlrecords.*.log" (the one VisualDL shows) is rewritten without its
 * records at first_step or later and continued; otherwise a new file
 * "vdlrecords.<seconds>.log" starts with VisualDL's meta record.  Returns
 * 0 with *ev (events_close() frees it; NULL when targets is 0), or -1
 * with err naming the file and what failed. */
int events_open(struct events **ev, unsigned targets, const char *dir,
                int64_t first_step, char *err, size_t errlen);

/* The path of a target's file (EVENTS_TENSORBOARD or EVENTS_VISUALDL),
 * or NULL if ev does not write it; owned by ev. */
const char *events_path(const struct events *ev, unsigned target);

/* One scalar: its tag ("train/loss") and value (written as fp32, as both
 * formats store scalars). */
struct event_scalar {
    const char *tag;
    double value;
};

/* events_write: append the scalars s[0..n) of one step, stamped with the
 * current time, to every file of ev, and flush them.  ev may be NULL (no
 * effect).  Returns 0, or -1 with err naming the file (the other target
 * is still written; a target that failed writes nothing more). */
int events_write(struct events *ev, int64_t step, const struct event_scalar *s,
                 size_t n, char *err, size_t errlen);

/* events_close: flush and close the files; NULL is allowed. */
void events_close(struct events *ev);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_EVENTS_H */
