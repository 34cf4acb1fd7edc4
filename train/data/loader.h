/* SPDX-License-Identifier: MIT */
/*
 * loader.h: the trainer's micro-batches from libdata's training datasets,
 * collated as PaddleNLP collates them (ernie-data.md 7.7).  Each
 * data-parallel rank reads its slice of every global chunk.  Part of the
 * program (run.h): an unreadable sample stops the run.
 */
#ifndef TRAIN_LOADER_H
#define TRAIN_LOADER_H

#include <stdint.h>

#include "ds.h"
#include "model/config.h"
#include "model/model.h"

struct train_args;

struct loader {
    const struct ds_corpus *c;
    uint32_t dp_rank, dp_world; /* this rank's slice of each global chunk */
    enum ds_split split;
    struct ds_position pos;
    int B, T, M_max;
    enum model_type type;
    struct ds_sample *s;
    uint64_t *idx;
    int32_t *ids, *types, *mask, *mpos, *mlab, *sop, *labels;
};

/* loader_new: a loader of split reading micro-batches of B sequences of T
 * tokens, ERNIE's with at most M_max masked slots; dp_rank 0 of 1, from
 * the split's start.  loader_free() frees it (NULL allowed). */
struct loader *loader_new(const struct ds_corpus *c, enum ds_split split,
                          enum model_type type, int B, int T, int M_max);
void loader_free(struct loader *l);

/* loader_next: the next micro-batch into b (valid until the next call).
 * ERNIE rows padded to max_seq_len, masked slots flattened to b*T +
 * position and padded to a multiple of 8 with (0, -1).  Returns 0, or 1
 * at the end of the split. */
int loader_next(struct loader *l, struct batch *b);

/* max_masked: the masked slots a micro-batch of the run's arguments can
 * hold, at most. */
int max_masked(const struct train_args *a);

#endif /* TRAIN_LOADER_H */
