/* SPDX-License-Identifier: MIT */
/*
 * whole.h: the parts that tensor and pipeline parallelism give each rank
 * put together into the whole model, and a whole model cut into a rank's
 * part.  Checkpoints hold whole tensors under their Hugging Face names
 * (global coordinates), so a run saved with one layout resumes with any
 * other: saving gathers the ranks' parts into a whole model (parameters
 * and AdamW moments) built beside the training one; loading reads into
 * such a whole model and keeps this rank's part.
 */
#ifndef TRAIN_WHOLE_H
#define TRAIN_WHOLE_H

#include <stddef.h>

#include "comm.h"
#include "model/model.h"
#include "optim/optim.h"

struct whole {
    struct model *m;      /* the whole model, for micro-batches of 1 x 1 */
    struct optimizer opt; /* its moments over the whole table */
};

/* whole_create: an empty whole model of part's config (same backend).
 * Returns 0, or -1 with err. */
int whole_create(struct whole *w, const struct model *part, char *err,
                 size_t errlen);
void whole_release(struct whole *w);

/* whole_gather: every rank of the tensor-parallel and pipeline groups
 * contributes its part (parameters, and the moments of o, an optimizer
 * over part's whole table; o may be NULL) and receives the whole into w.
 * Collective over COMM_TP, then COMM_PP.  Returns 0, or -1 with err. */
int whole_gather(struct whole *w, const struct model *part,
                 const struct optimizer *o, struct comm *c, char *err,
                 size_t errlen);

/* whole_scatter: this rank's part of w into part (and of w's moments
 * into o, when not NULL; o->t too).  Returns 0, or -1 with err. */
int whole_scatter(const struct whole *w, struct model *part,
                  struct optimizer *o, char *err, size_t errlen);

#endif /* TRAIN_WHOLE_H */
