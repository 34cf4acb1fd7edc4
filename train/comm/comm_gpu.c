/* SPDX-License-Identifier: MIT */
/*
 * comm_gpu.c: the host-side decisions of the GPU communicator, in plain
 * C so that they are tested on machines without a GPU
 * (tests/unit/test_train_comm_gpu.c, tests/comm/test_comm.c): which
 * communicator a run gets; the check that no two ranks of a node share a
 * GPU (NCCL refuses them), from every rank's node and GPU gathered over
 * the CPU communicator that started the job; and the exchange of NCCL's
 * unique id over it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

int
comm_backend_parse(const char *s)
{
    return strcmp(s, "auto") == 0   ? COMM_BACKEND_AUTO
           : strcmp(s, "nccl") == 0 ? COMM_BACKEND_NCCL
           : strcmp(s, "host") == 0 ? COMM_BACKEND_HOST
                                    : -1;
}

enum comm_kind
comm_select(int by_mpi, int by_env, int world, int gpu_device,
            enum comm_backend want)
{
    if (want == COMM_BACKEND_HOST && world > 1)
        return COMM_KIND_STAGED;
    if (gpu_device >= 0 && world > 1)
        return by_mpi ? COMM_KIND_NCCL_MPI : COMM_KIND_NCCL_TCP;
    return by_mpi ? COMM_KIND_MPI : by_env ? COMM_KIND_TCP : COMM_KIND_SINGLE;
}

const char *
comm_kind_name(enum comm_kind k)
{
    switch (k) {
    case COMM_KIND_SINGLE:
        return "single";
    case COMM_KIND_MPI:
        return "mpi";
    case COMM_KIND_TCP:
        return "tcp";
    case COMM_KIND_NCCL_MPI:
        return "nccl (unique id over MPI)";
    case COMM_KIND_NCCL_TCP:
        return "nccl (unique id over the TCP rendezvous)";
    case COMM_KIND_STAGED:
        return "the CPU communicator, the buffers staged through host memory";
    }
    return "?";
}

/* (Gathered as 16-bit elements.) */
_Static_assert(sizeof(struct comm_gpu_place) % 2 == 0,
               "comm_gpu_place moves as 16-bit elements");

int
comm_gpu_unique(const struct comm_gpu_place *all, int world, int gpus,
                char *err, size_t len)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    char shown[96] = "";
    int on_node = 0;

    /* The first pair over the whole world, so that every rank stops
     * with the same message (none goes on to wait for the others). */
    for (int i = 0; i < world; i++)
        for (int j = i + 1; j < world; j++) {
            if (strncmp(all[i].host, all[j].host, sizeof(all[i].host)) != 0 ||
                memcmp(all[i].uuid, all[j].uuid, sizeof(all[i].uuid)) != 0)
                continue;
            for (int r = 0; r < world; r++)
                on_node +=
                    strncmp(all[r].host, all[i].host, sizeof(all[i].host)) == 0;
            if (vis != NULL)
                snprintf(shown, sizeof(shown), ", CUDA_VISIBLE_DEVICES=%.60s",
                         vis);
            snprintf(err, len,
                     "ranks %d and %d share a GPU (GPU %d of rank %d) on "
                     "node %.64s, which runs %d ranks (this rank sees %d "
                     "GPU%s%s): NCCL needs a GPU of its own for every rank "
                     "(it refuses two ranks on one GPU); start at most as "
                     "many ranks per node as it has GPUs (srun "
                     "--ntasks-per-node, mpirun --map-by ppr:N:node, "
                     "torchrun --nproc-per-node), or give --comm_backend "
                     "host (the collectives through host memory: slower, "
                     "but ranks may share a GPU)",
                     i, j, all[i].device, i, all[i].host, on_node, gpus,
                     gpus == 1 ? "" : "s", shown);
            return -1;
        }
    return 0;
}

int
comm_gpu_gather(struct comm *boot, const struct comm_gpu_place *mine,
                struct comm_gpu_place *all, char *err, size_t len)
{
    /* (Moved as 16-bit elements: the record is bytes, never reduced.) */
    memcpy(&all[boot->rank], mine, sizeof(*mine));
    if (boot->all_gather(boot, all, &all[boot->rank], sizeof(*mine) / 2,
                         COMM_B16, COMM_WORLD) < 0) {
        snprintf(err, len,
                 "gathering the ranks' GPUs over the %s communicator: %s",
                 boot->name, boot->error);
        return -1;
    }
    return 0;
}

int
comm_share_id(struct comm *boot, void *id, size_t bytes, char *err, size_t len)
{
    if (boot->broadcast(boot, id, bytes, 0, COMM_WORLD) < 0) {
        snprintf(err, len,
                 "sending NCCL's unique id from rank 0 to the %d ranks over "
                 "the %s communicator (%s): %s",
                 boot->world, boot->name, boot->launcher ? boot->launcher : "",
                 boot->error);
        return -1;
    }
    return 0;
}
