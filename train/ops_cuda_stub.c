/* SPDX-License-Identifier: MIT */
/*
 * ops_cuda_stub.c: ops_cuda() in a build without the CUDA backend
 * (train/cuda/ is built only where `make config` finds CUDA, cuBLASLt and
 * cuDNN 9: HAVE_CUDA_BACKEND): it says so, and ops_open() turns that into
 * --device cuda's error or --device auto's reason for the CPU.
 */
#include <stdio.h>

#include "ops.h"

const struct ops *
ops_cuda(const struct ops_request *r, char *err, size_t errlen)
{
    (void)r;
    if (err != NULL && errlen > 0)
        snprintf(err, errlen,
                 "this build has no CUDA backend (CUDA, cuBLASLt or cuDNN "
                 "not found when it was built: make config)");
    return NULL;
}
