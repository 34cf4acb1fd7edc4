/* SPDX-License-Identifier: MIT */
/*
 * flops.h: the model FLOPs a training step does, the numerator of the MFU
 * the log reports (the denominator, the peak, is peak.h's or
 * --peak_gflops).
 */
#ifndef TRAIN_FLOPS_H
#define TRAIN_FLOPS_H

#include "model/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* train_flops: the model FLOPs of one training micro-batch of B sequences
 * of T tokens with M masked slots (ERNIE) of the whole model c: 3 x the
 * forward's matrix products (backward = 2 x forward; no recompute),
 * counting the MLM head on its M rows only and attention's two products
 * in full (not halved for the causal mask), as Megatron's 72 B s l h^2 (1
 * + s/6h + V/12lh) form does for GPT. */
double train_flops(const struct model_config *c, int B, int T, int M);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_FLOPS_H */
