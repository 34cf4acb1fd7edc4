/* SPDX-License-Identifier: MIT */
/*
 * cuda_stub.c: ops_cuda() in a build without the CUDA backend (mk/cuda.mk
 * builds this file only when make config found no CUDA toolkit, cuBLASLt
 * or cuDNN): it says so, and --device cuda stops with that message.
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
