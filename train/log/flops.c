/* SPDX-License-Identifier: MIT */
/*
 * flops.c: the model FLOPs of a training micro-batch (flops.h).
 */
#include "flops.h"

double
train_flops(const struct model_config *c, int B, int T, int M)
{
    double BT = (double)B * T, C = c->hidden_size, I = c->intermediate_size;
    double V = c->vocab_size;
    double layer = 2 * BT * C * (3 * C + C + 2 * I) + 4.0 * B * T * T * C;
    double head = c->type == MODEL_GPT
                      ? 2 * BT * C * V
                      : 2.0 * M * C * (C + V) +
                            (c->binary_head ? 2.0 * B * C * (C + 2) : 0);

    return 3 * (c->num_layers * layer + head);
}
