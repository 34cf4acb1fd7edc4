/* SPDX-License-Identifier: MIT */
/*
 * runlog.h: the trainer's JSON log (output_dir/train_log.jsonl, one
 * object a line) across interruptions: a resumed run continues it as if
 * the run had never stopped.
 */
#ifndef TRAIN_RUNLOG_H
#define TRAIN_RUNLOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* runlog_trim: make the log at path end where a run resumed at global
 * step `step` (0: a fresh start) takes it up: drop the records of later
 * steps (a "global_step", "valid_step" or other "<kind>_step" above step;
 * a "test_step" of step or above, since a test record ends a run), and
 * every line that is not a whole JSON object (a record cut short by the
 * interruption).  Records without a step are kept.  The file is rewritten
 * through "<path>.tmp.<pid>" and a rename, only when something is
 * dropped; a missing file is no error.  *dropped (may be NULL) gets the
 * number of lines dropped.  Returns 0, or -1 with err naming the file. */
int runlog_trim(const char *path, int64_t step, size_t *dropped, char *err,
                size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_RUNLOG_H */
