/* SPDX-License-Identifier: MIT */
/*
 * ops_select.c: the one place a backend of the compute interface is
 * chosen (ops_open(), from --device and the local rank), and what every
 * backend shares about element types.
 */
#include <stdio.h>
#include <string.h>

#include "ops.h"

size_t
ops_dtype_size(enum ops_dtype t)
{
    return t == OPS_F32 ? 4 : 2;
}

const char *
ops_dtype_name(enum ops_dtype t)
{
    switch (t) {
    case OPS_BF16:
        return "bfloat16";
    case OPS_F16:
        return "float16";
    case OPS_F32:
        break;
    }
    return "float32";
}

const struct ops *
ops_open(const struct ops_request *r, char *err, size_t errlen)
{
    const struct ops *o;
    char why[512];

    if (strcmp(r->device, "cpu") == 0) {
        snprintf(err, errlen, "--device cpu");
        return ops_cpu(r->threads, r->dtype);
    }
    if (strcmp(r->device, "cuda") != 0 && strcmp(r->device, "auto") != 0) {
        snprintf(err, errlen, "--device %s: not cpu, cuda or auto", r->device);
        return NULL;
    }
    why[0] = '\0';
    o = ops_cuda(r, why, sizeof(why));
    if (o != NULL) {
        snprintf(err, errlen, "--device %s: GPU %d (local rank %d)%s%s",
                 r->device, o->device, r->local_rank, why[0] ? ": " : "", why);
        return o;
    }
    if (strcmp(r->device, "cuda") == 0) {
        snprintf(err, errlen, "--device cuda: %s", why);
        return NULL;
    }
    snprintf(err, errlen, "--device auto: %s; the CPU", why);
    return ops_cpu(r->threads, r->dtype);
}
