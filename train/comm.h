/* SPDX-License-Identifier: MIT */
/*
 * comm.h: the trainer's communication interface.  The training loop and
 * (later) the parallel layers talk to other ranks only through this table
 * of collectives over named groups; a backend fills it: single (one rank,
 * every collective the identity) now, MPI for CPU buffers and NCCL for GPU
 * buffers later.  Buffers live in the memory of the ops backend in use.
 *
 * Every rank of a group must issue the same collectives in the same order
 * (the classic hang otherwise).  Each returns 0, or -1 with a message the
 * caller can get from comm->error.
 */
#ifndef TRAIN_COMM_H
#define TRAIN_COMM_H

#include <stddef.h>

/* Groups, in Megatron's rank order: tensor parallel fastest, then data
 * parallel / sharding, then pipeline; EMBEDDING = the first and last
 * pipeline stages (tied embeddings). */
enum comm_group {
    COMM_WORLD,
    COMM_DP,
    COMM_TP,
    COMM_PP,
    COMM_SHARDING,
    COMM_EMBEDDING,
    COMM_N_GROUPS
};

enum comm_dtype { COMM_F32, COMM_F64, COMM_I64 };

struct comm {
    const char *name; /* "single" */
    int rank, world;  /* in COMM_WORLD */
    char error[256];

    /* The size of a group and this rank's place in it. */
    int (*group_size)(const struct comm *c, enum comm_group g);
    int (*group_rank)(const struct comm *c, enum comm_group g);
    /* buf[0..n) = the sum over the group's ranks, in place. */
    int (*all_reduce_sum)(struct comm *c, void *buf, size_t n,
                          enum comm_dtype t, enum comm_group g);
    /* out[0..n) = this rank's slice of the sum of in[0..n*size). */
    int (*reduce_scatter_sum)(struct comm *c, void *out, const void *in,
                              size_t n, enum comm_dtype t, enum comm_group g);
    /* out[0..n*size) = every rank's in[0..n), in rank order. */
    int (*all_gather)(struct comm *c, void *out, const void *in, size_t n,
                      enum comm_dtype t, enum comm_group g);
    int (*broadcast)(struct comm *c, void *buf, size_t bytes, int root,
                     enum comm_group g);
    /* Point to point within a group (pipeline stages). */
    int (*send)(struct comm *c, const void *buf, size_t bytes, int peer,
                enum comm_group g);
    int (*recv)(struct comm *c, void *buf, size_t bytes, int peer,
                enum comm_group g);
    int (*barrier)(struct comm *c, enum comm_group g);
    void (*destroy)(struct comm *c);
};

/* The element size of a comm_dtype. */
size_t comm_dtype_size(enum comm_dtype t);

/* comm_single: one rank; every group is {0}; collectives copy or do
 * nothing; send/recv to anyone is an error (no peer). */
struct comm *comm_single(void);

#endif /* TRAIN_COMM_H */
