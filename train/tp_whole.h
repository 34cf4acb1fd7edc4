/* SPDX-License-Identifier: MIT */
/*
 * tp_whole.h: a tensor-parallel model's parts put together into the whole
 * model, and a whole model cut into a rank's part.  Checkpoints hold whole
 * tensors under their Hugging Face names (global coordinates), so a run
 * saved with one tensor-parallel degree resumes with any other: saving
 * gathers the ranks' parts into a whole model (parameters and AdamW
 * moments) built beside the training one; loading reads into such a whole
 * model and keeps this rank's part.
 */
#ifndef TRAIN_TP_WHOLE_H
#define TRAIN_TP_WHOLE_H

#include <stddef.h>

#include "comm.h"
#include "model.h"
#include "optim.h"

struct tp_whole {
    struct model *m;      /* the whole model, for micro-batches of 1 x 1 */
    struct optimizer opt; /* its moments over the whole table */
};

/* tp_whole_create: an empty whole model of part's config (same backend).
 * Returns 0, or -1 with err. */
int tp_whole_create(struct tp_whole *w, const struct model *part, char *err,
                    size_t errlen);
void tp_whole_release(struct tp_whole *w);

/* tp_whole_gather: every rank of the tensor-parallel group sends its part
 * (parameters, and the moments of o, an optimizer over part's whole
 * table; o may be NULL) and receives the whole into w.  Collective over
 * COMM_TP.  Returns 0, or -1 with err. */
int tp_whole_gather(struct tp_whole *w, const struct model *part,
                    const struct optimizer *o, struct comm *c, char *err,
                    size_t errlen);

/* tp_whole_scatter: this rank's part of w into part (and of w's moments
 * into o, when not NULL; o->t too).  Returns 0, or -1 with err. */
int tp_whole_scatter(const struct tp_whole *w, struct model *part,
                     struct optimizer *o, char *err, size_t errlen);

#endif /* TRAIN_TP_WHOLE_H */
