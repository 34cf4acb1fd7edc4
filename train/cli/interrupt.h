/* SPDX-License-Identifier: MIT */
/*
 * interrupt.h: how the trainer reacts to signals.  SIGTERM and SIGUSR1
 * (what clusters send before a preemption or the end of a time limit)
 * ask for a checkpoint at the next step boundary and a clean exit, as
 * Megatron-LM's --exit-signal-handler does; SIGINT still stops at once,
 * but first removes the checkpoint being written, so that nothing half
 * written is left behind.
 */
#ifndef TRAIN_INTERRUPT_H
#define TRAIN_INTERRUPT_H

#ifdef __cplusplus
extern "C" {
#endif

/* interrupt_install: catch SIGTERM and SIGUSR1 (recorded, see
 * interrupt_pending()) and SIGINT (the checkpoint being written is
 * removed, then the process dies of SIGINT as it would have).  Returns 0,
 * or -1 with errno set. */
int interrupt_install(void);

/* interrupt_pending: the number of the last SIGTERM or SIGUSR1 received,
 * or 0.  Async-signal-safe reads only: any thread may call it. */
int interrupt_pending(void);

/* interrupt_protect: dir is a temporary directory being written (no
 * subdirectories); a SIGINT until interrupt_release() removes it and its
 * files before the process dies.  dir is copied (at most 4095 bytes; a
 * longer one is not protected). */
void interrupt_protect(const char *dir);
void interrupt_release(void);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_INTERRUPT_H */
