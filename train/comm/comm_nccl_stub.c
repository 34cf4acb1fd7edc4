/* SPDX-License-Identifier: MIT */
/*
 * comm_nccl_stub.c: comm_nccl() in a build without NCCL or without the
 * CUDA backend (make config: HAVE_NCCL, HAVE_CUDA_BACKEND): it says so,
 * and `train --device cuda` on several ranks stops with that message.
 */
#include <stdio.h>

#include "comm.h"

struct comm *
comm_nccl(struct comm *boot, int device, void *stream, double timeout,
          char *err, size_t err_len)
{
    (void)device, (void)stream, (void)timeout;
    snprintf(err, err_len,
             "%d ranks on GPUs need NCCL, which this build has not (make "
             "config shows why)",
             boot->world);
    return NULL; /* (boot left to the caller, as comm_nccl's) */
}
