/* SPDX-License-Identifier: MIT */
/*
 * ops_cuda_stub.c: ops_cuda() in a build without the CUDA backend
 * (train/cuda/ is built only where `make config` finds the CUDA toolkit):
 * it says so, and ops_open() turns that into --device cuda's error or
 * --device auto's reason for the CPU.
 */
#include <stdio.h>

#include "ops.h"

const struct ops *
ops_cuda(const struct ops_request *r, char *err, size_t errlen)
{
    (void)r;
    snprintf(err, errlen,
             "this build has no CUDA backend (make config shows why)");
    return NULL;
}
