/* SPDX-License-Identifier: MIT */
/*
 * test_train_comm_gpu.c: the host side of the GPU communicator
 * (train/comm/comm_gpu.c), on any machine: which communicator a run gets
 * for its device, ranks and launcher; the check that no two ranks of a
 * node share a GPU and its error; the error of an exchange of NCCL's
 * unique id that fails.  Then comm_nccl() itself,
 * the real one or the stub as this build has it: without a GPU (or with
 * a bootstrap that fails) it returns NULL with a message and leaves the
 * CPU communicator it was given alone (the caller exits: a goodbye would
 * tell the other ranks this one finished well).  The exchanges themselves (the
 * unique id, the ranks' GPUs) over MPI and the TCP rendezvous are
 * tests/comm/test_comm.c's (tests/train/parallel).
 */
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "comm.h"

static void
test_select_by_device_world_launcher(void)
{
    /* CPU buffers: the launcher's communicator, whatever the world. */
    CHECK_EQ_INT(comm_select(0, 0, 1, -1, COMM_BACKEND_AUTO), COMM_KIND_SINGLE);
    CHECK_EQ_INT(comm_select(1, 0, 4, -1, COMM_BACKEND_AUTO), COMM_KIND_MPI);
    CHECK_EQ_INT(comm_select(0, 1, 4, -1, COMM_BACKEND_AUTO), COMM_KIND_TCP);
    CHECK_EQ_INT(comm_select(1, 1, 4, -1, COMM_BACKEND_AUTO),
                 COMM_KIND_MPI); /* MPI wins */
    /* One rank on a GPU needs no communicator of the GPU's. */
    CHECK_EQ_INT(comm_select(0, 0, 1, 0, COMM_BACKEND_AUTO), COMM_KIND_SINGLE);
    CHECK_EQ_INT(comm_select(1, 0, 1, 0, COMM_BACKEND_AUTO), COMM_KIND_MPI);
    CHECK_EQ_INT(comm_select(0, 1, 1, 3, COMM_BACKEND_AUTO), COMM_KIND_TCP);
    /* Several ranks on GPUs: NCCL, its id over what started them. */
    CHECK_EQ_INT(comm_select(1, 0, 2, 0, COMM_BACKEND_AUTO),
                 COMM_KIND_NCCL_MPI);
    CHECK_EQ_INT(comm_select(0, 1, 2, 1, COMM_BACKEND_AUTO),
                 COMM_KIND_NCCL_TCP);
    CHECK_EQ_INT(comm_select(1, 1, 8, 7, COMM_BACKEND_AUTO),
                 COMM_KIND_NCCL_MPI);
    CHECK(strstr(comm_kind_name(COMM_KIND_NCCL_TCP), "TCP rendezvous") != NULL);
    CHECK(strstr(comm_kind_name(COMM_KIND_NCCL_MPI), "MPI") != NULL);
    CHECK_EQ_STR(comm_kind_name(COMM_KIND_TCP), "tcp");
    /* --comm_backend nccl is auto's choice where it applies. */
    CHECK_EQ_INT(comm_select(1, 0, 2, 0, COMM_BACKEND_NCCL),
                 COMM_KIND_NCCL_MPI);
    CHECK_EQ_INT(comm_select(0, 1, 4, -1, COMM_BACKEND_NCCL), COMM_KIND_TCP);
    /* --comm_backend host: the CPU communicator staged through host
     * memory on several ranks, GPU or not; one rank needs none. */
    CHECK_EQ_INT(comm_select(1, 0, 2, 0, COMM_BACKEND_HOST), COMM_KIND_STAGED);
    CHECK_EQ_INT(comm_select(0, 1, 4, 0, COMM_BACKEND_HOST), COMM_KIND_STAGED);
    CHECK_EQ_INT(comm_select(0, 1, 4, -1, COMM_BACKEND_HOST), COMM_KIND_STAGED);
    CHECK_EQ_INT(comm_select(0, 0, 1, 0, COMM_BACKEND_HOST), COMM_KIND_SINGLE);
    CHECK_EQ_INT(comm_backend_parse("auto"), COMM_BACKEND_AUTO);
    CHECK_EQ_INT(comm_backend_parse("nccl"), COMM_BACKEND_NCCL);
    CHECK_EQ_INT(comm_backend_parse("host"), COMM_BACKEND_HOST);
    CHECK_EQ_INT(comm_backend_parse("gloo"), -1);
    CHECK_EQ_INT(comm_backend_parse(""), -1);
}

/* Rank r on node host with the GPU of UUID byte u, ordinal dev. */
static void
place(struct comm_gpu_place *p, const char *host, int u, int dev)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->host, sizeof(p->host), "%s", host);
    memset(p->uuid, u, sizeof(p->uuid));
    p->device = dev;
}

static void
test_one_gpu_per_rank(void)
{
    static const char shared_a[] =
        "ranks 0 and 4 share a GPU (GPU 0 of rank 0) on node a, which runs "
        "2 ranks (this rank sees 1 GPU, CUDA_VISIBLE_DEVICES=3)";
    struct comm_gpu_place all[5];
    char err[768] = "";

    unsetenv("CUDA_VISIBLE_DEVICES");
    /* Two nodes of two GPUs: the same ordinals, other GPUs. */
    place(&all[0], "gpu07", 1, 0);
    place(&all[1], "gpu07", 2, 1);
    place(&all[2], "gpu08", 3, 0);
    place(&all[3], "gpu08", 4, 1);
    CHECK_EQ_INT(comm_gpu_unique(all, 4, 2, err, sizeof(err)), 0);
    /* One GPU bound to each task (each sees it as GPU 0): fine. */
    place(&all[1], "gpu07", 2, 0);
    CHECK_EQ_INT(comm_gpu_unique(all, 4, 1, err, sizeof(err)), 0);
    /* The same GPU (UUID) on two nodes is two GPUs. */
    place(&all[2], "gpu08", 1, 0);
    CHECK_EQ_INT(comm_gpu_unique(all, 4, 2, err, sizeof(err)), 0);
    CHECK_EQ_STR(err, "");

    /* Three ranks on a node of two GPUs (local rank 2 wraps to GPU 0). */
    place(&all[0], "gpu07", 1, 0);
    place(&all[1], "gpu07", 2, 1);
    place(&all[2], "gpu07", 1, 0);
    place(&all[3], "gpu08", 3, 0);
    place(&all[4], "gpu08", 4, 1);
    CHECK_EQ_INT(comm_gpu_unique(all, 5, 2, err, sizeof(err)), -1);
    CHECK_EQ_STR(err, "ranks 0 and 2 share a GPU (GPU 0 of rank 0) on node "
                      "gpu07, which runs 3 ranks (this rank sees 2 GPUs): "
                      "NCCL needs a GPU of its own for every rank (it "
                      "refuses two ranks on one GPU); start at most as many "
                      "ranks per node as it has GPUs (srun "
                      "--ntasks-per-node, mpirun --map-by ppr:N:node, "
                      "torchrun --nproc-per-node), or give --comm_backend "
                      "host (the collectives through host memory: slower, "
                      "but ranks may share a GPU)");

    /* The first pair, whichever rank asks; CUDA_VISIBLE_DEVICES shown. */
    place(&all[0], "a", 9, 0);
    place(&all[1], "b", 7, 0);
    place(&all[2], "b", 8, 1);
    place(&all[3], "b", 7, 0);
    place(&all[4], "a", 9, 0);
    setenv("CUDA_VISIBLE_DEVICES", "3", 1);
    CHECK_EQ_INT(comm_gpu_unique(all, 5, 1, err, sizeof(err)), -1);
    CHECK(strncmp(err, shared_a, sizeof(shared_a) - 1) == 0);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK_EQ_INT(comm_gpu_unique(all, 1, 1, err, sizeof(err)), 0);
}

/* A CPU communicator of two ranks whose broadcast fails or copies a
 * "rank 0" id, and counts its destruction. */
static int fake_destroyed, fake_broadcast_fails;

static int
fake_broadcast(struct comm *c, void *buf, size_t bytes, int root,
               enum comm_group g)
{
    (void)root, (void)g;
    if (fake_broadcast_fails) {
        snprintf(c->error, sizeof(c->error), "rank 1 went away");
        return -1;
    }
    for (size_t i = 0; i < bytes; i++)
        ((unsigned char *)buf)[i] = (unsigned char)(i * 7 + 1);
    return 0;
}

static void
fake_destroy(struct comm *c)
{
    (void)c;
    fake_destroyed++;
}

static void
fake_comm(struct comm *c)
{
    memset(c, 0, sizeof(*c));
    c->name = "tcp";
    c->launcher = "torchrun";
    c->rank = 0;
    c->world = 2;
    c->layout = (struct comm_layout){ 1, 1, 2, 1, COMM_INTER_FIRST };
    c->broadcast = fake_broadcast;
    c->destroy = fake_destroy;
}

static void
test_share_id(void)
{
    struct comm c;
    unsigned char id[128] = { 0 };
    char err[512] = "";

    fake_comm(&c);
    fake_broadcast_fails = 0;
    CHECK_EQ_INT(comm_share_id(&c, id, sizeof(id), err, sizeof(err)), 0);
    CHECK_EQ_INT(id[0], 1);
    CHECK_EQ_INT(id[127], (127 * 7 + 1) & 255);

    fake_broadcast_fails = 1;
    CHECK_EQ_INT(comm_share_id(&c, id, sizeof(id), err, sizeof(err)), -1);
    CHECK_EQ_STR(err, "sending NCCL's unique id from rank 0 to the 2 ranks "
                      "over the tcp communicator (torchrun): rank 1 went "
                      "away");
}

/* No GPU here (or a bootstrap that fails where there is one): NULL, a
 * message, the CPU communicator not destroyed. */
static void
test_nccl_fails_cleanly(void)
{
    struct comm *boot = malloc(sizeof(*boot));
    char err[1024] = "";

    fake_comm(boot);
    fake_broadcast_fails = 1;
    fake_destroyed = 0;
    CHECK(comm_nccl(boot, -1, NULL, 0, err, sizeof(err)) == NULL);
    CHECK_EQ_INT(fake_destroyed, 0);
    CHECK(strstr(err, "NCCL") != NULL);
    free(boot);
}

TESTS(test_train_comm_gpu, TEST(test_select_by_device_world_launcher),
      TEST(test_one_gpu_per_rank), TEST(test_share_id),
      TEST(test_nccl_fails_cleanly))
