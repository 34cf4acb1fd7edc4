/* SPDX-License-Identifier: MIT */
/*
 * datasets.h: the run's data: the vocabulary ERNIE's samples are masked
 * with, the datasets' sidecars checked against the run, the corpus of
 * --input_dir, and the loaders of its splits (loader.h).
 */
#ifndef TRAIN_DATASETS_H
#define TRAIN_DATASETS_H

#include "ds.h"
#include "loader.h"
#include "run/run.h"

/* vocab_open: a vocab.txt with the "##<CJK>" ids PaddleNLP's tokenizer
 * adds, and its four special tokens. */
void vocab_open(struct vocab *vc, const char *path);

/* check_data_meta: the datasets' sidecars against the run's model and
 * vocab, before anything is built (ds-meta(5)). */
void check_data_meta(const struct run *r);

/* open_data: the corpus of --input_dir, its three splits sized by the
 * run (ernie-data.md 8.3). */
void open_data(struct run *r);

/* open_loader: a loader of split reading this rank's slice of each
 * global batch (loader_free() frees it). */
struct loader *open_loader(struct run *r, enum ds_split split);

#endif /* TRAIN_DATASETS_H */
