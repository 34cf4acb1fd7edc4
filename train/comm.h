/* SPDX-License-Identifier: MIT */
/*
 * comm.h: the trainer's communication interface.  The training loop and
 * the parallel layers talk to other ranks only through this table of
 * collectives over named groups; a backend fills it: single (one rank,
 * every collective the identity), MPI or TCP sockets for CPU buffers
 * (the TCP one where the ranks were started without MPI: srun, torchrun),
 * NCCL for GPU buffers.  Buffers live in the memory of the ops backend in
 * use.
 *
 * Every rank of a group must issue the same collectives in the same order
 * (the classic hang otherwise).  Each returns 0, or -1 with a message the
 * caller can get from comm->error.
 */
#ifndef TRAIN_COMM_H
#define TRAIN_COMM_H

#include <stddef.h>

/* Groups.  With the default placement (COMM_INTER_FIRST), world rank =
 * tp_rank + tp * (sharding_rank + sharding * (dp_rank + dp * pp_rank)):
 * tensor parallel fastest (the ranks of a node share the most traffic),
 * then sharding, then data parallel, then pipeline (comm_layout).
 * EMBEDDING = the first and last pipeline stages (tied embeddings); the
 * middle stages are in no embedding group. */
enum comm_group {
    COMM_WORLD,
    COMM_DP,
    COMM_TP,
    COMM_PP,
    COMM_SHARDING,
    COMM_EMBEDDING,
    COMM_N_GROUPS
};

/* Element types.  COMM_B16: 16-bit elements (bfloat16, float16) moved as
 * they are: for the collectives that only move data (the all-gathers,
 * sharding stage 3's compute copy), never for a reduction. */
enum comm_dtype { COMM_F32, COMM_F64, COMM_I64, COMM_B16 };

/* Which degrees vary fastest after tensor parallel, as OneFlow's
 * strategies: INTER_FIRST (the default) puts the pipeline stages across
 * machines and data parallel inside them (tp, sharding, dp, pp from
 * fastest to slowest); INTRA_FIRST the stages inside a machine and data
 * parallel across machines (tp, pp, sharding, dp). */
enum comm_placement { COMM_INTER_FIRST, COMM_INTRA_FIRST };

/* The parallel layout: degrees whose product is the world size. */
struct comm_layout {
    int tp, sharding, dp, pp; /* dp 0: the world / (tp x sharding x pp) */
    enum comm_placement placement;
};

struct comm {
    const char *name;     /* "single", "mpi", "tcp", "nccl" */
    const char *launcher; /* what started the ranks, for messages: "mpirun",
                           * "srun", "torchrun", "the launcher (RANK,
                           * WORLD_SIZE)" */
    int rank, world;      /* in COMM_WORLD */
    struct comm_layout layout; /* resolved: dp > 0 */
    /* This rank's place among the ranks on its node (its GPU: ops_open()):
     * the launcher's (comm_local_rank_env()), else MPI's shared-memory
     * split, else 0. */
    int local_rank;
    char error[256];
    char note[256]; /* something for the log (rank 0 says it), or "" */
    /* The watchdog of the CPU backends (train/comm/comm_int.h), which a
     * communicator built over this one (NCCL) tells of its waits; NULL:
     * none. */
    struct comm_watch *watch;
    /* Bytes this rank sent, per group, as the ring algorithms send them
     * (what NCCL's tests call bus bytes): all-reduce 2 (n-1)/n x S,
     * reduce-scatter and all-gather (n-1)/n x S (S the whole buffer),
     * broadcast and send S; the caller resets them when it likes. */
    double sent[COMM_N_GROUPS];

    /* The size of a group and this rank's place in it. */
    int (*group_size)(const struct comm *c, enum comm_group g);
    int (*group_rank)(const struct comm *c, enum comm_group g);
    /* buf[0..n) = the sum over the group's ranks, in place. */
    int (*all_reduce_sum)(struct comm *c, void *buf, size_t n,
                          enum comm_dtype t, enum comm_group g);
    /* buf[0..n) = the element-wise maximum over the group's ranks (the
     * vocab-parallel cross-entropy's row maxima). */
    int (*all_reduce_max)(struct comm *c, void *buf, size_t n,
                          enum comm_dtype t, enum comm_group g);
    /* Nonblocking all-reduce: the sum lands in buf[0..n) once wait_all()
     * returns; buf must not be touched before.  test_all() lets the
     * started ones progress (MPI moves them only inside its calls). */
    int (*all_reduce_sum_start)(struct comm *c, void *buf, size_t n,
                                enum comm_dtype t, enum comm_group g);
    int (*test_all)(struct comm *c);
    int (*wait_all)(struct comm *c);
    /* out[0..n) = this rank's slice of the sum of in[0..n*size) (out and
     * in do not overlap). */
    int (*reduce_scatter_sum)(struct comm *c, void *out, const void *in,
                              size_t n, enum comm_dtype t, enum comm_group g);
    /* out[0..n*size) = every rank's in[0..n), in rank order; in place
     * when in is out + rank * n (this rank's piece already there). */
    int (*all_gather)(struct comm *c, void *out, const void *in, size_t n,
                      enum comm_dtype t, enum comm_group g);
    /* Ranges (sharding): rank r of the group owns buf[off[r]..off[r+1])
     * (off has size + 1 ascending entries from 0; ranges may differ in
     * length).  reduce_scatter_ranges: each rank's own range becomes the
     * group's sum of that range; the rest of buf is left undefined.
     * all_gather_ranges: every rank gets every rank's range. */
    int (*reduce_scatter_ranges)(struct comm *c, void *buf, const size_t *off,
                                 enum comm_dtype t, enum comm_group g);
    int (*all_gather_ranges)(struct comm *c, void *buf, const size_t *off,
                             enum comm_dtype t, enum comm_group g);
    /* Nonblocking all_gather_ranges (sharding stage 3's prefetch of the
     * next layer): complete once wait_all() returns; buf must not be
     * touched before; off may change after the call. */
    int (*all_gather_ranges_start)(struct comm *c, void *buf, const size_t *off,
                                   enum comm_dtype t, enum comm_group g);
    /* The group's sum of buf[0..n) into root's buf (the others' buf is
     * left as it was). */
    int (*reduce_sum)(struct comm *c, void *buf, size_t n, enum comm_dtype t,
                      int root, enum comm_group g);
    int (*broadcast)(struct comm *c, void *buf, size_t bytes, int root,
                     enum comm_group g);
    /* Point to point within a group (pipeline stages). */
    int (*send)(struct comm *c, const void *buf, size_t bytes, int peer,
                enum comm_group g);
    int (*recv)(struct comm *c, void *buf, size_t bytes, int peer,
                enum comm_group g);
    /* Send sbuf to peer and receive rbuf from it at once (pipeline
     * stages that pass activations one way and gradients the other,
     * where two blocking sends would wait for each other). */
    int (*sendrecv)(struct comm *c, const void *sbuf, size_t sbytes, void *rbuf,
                    size_t rbytes, int peer, enum comm_group g);
    int (*barrier)(struct comm *c, enum comm_group g);
    void (*destroy)(struct comm *c);
};

/* The element size of a comm_dtype. */
size_t comm_dtype_size(enum comm_dtype t);

/* The bytes a ring algorithm sends per rank for a collective of S bytes
 * over n ranks ("all-reduce", "reduce-scatter", "all-gather"). */
double comm_ring_bytes(const char *what, double S, int n);

/* The sum of c->sent over every group. */
double comm_sent_total(const struct comm *c);

/* What the backends share: a group's name ("dp"; "?" out of range);
 * c->error for a call on a group this rank is not in (returns -1); and
 * the message of a collective stuck past --comm_timeout, on stderr. */
const char *comm_group_name(enum comm_group g);
int comm_not_in_group(struct comm *c, const char *what, enum comm_group g);
void comm_report_stuck(const struct comm *c, const char *what,
                       enum comm_group g, int size, double timeout);

/* comm_single: one rank; every group is {0}; collectives copy or do
 * nothing; send/recv to anyone is an error (no peer). */
struct comm *comm_single(void);

/* comm_layout_resolve: l's dp when 0 (the ranks the other degrees
 * leave), then the check that the degrees make the world: 0, or -1 with
 * "the layout tp 1 x sharding 1 x dp 3 x pp 1 does not make the 2 ranks
 * <launcher> started" in err. */
int comm_layout_resolve(struct comm_layout *l, int world, const char *launcher,
                        char *err, size_t err_len);

/* comm_mpi: MPI_Init and the layout's groups, and the watchdog (see
 * comm_tcp) over a control connection of every rank to rank 0, whose
 * address goes round by MPI: a collective that waits longer than timeout
 * seconds (0: forever), or a rank that ends before the others, stops
 * every rank with a message naming the collective, its group and the
 * last collective of each rank.  Returns NULL with a message in err when
 * the layout does not fit the world, MPI fails, or the build has no MPI.
 * destroy() calls MPI_Finalize. */
struct comm *comm_mpi(int *argc, char ***argv, const struct comm_layout *l,
                      double timeout, char *err, size_t err_len);

/* How ranks started without MPI find each other: from the environment
 * of srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID; rank 0 on
 * the first node of SLURM_STEP_NODELIST) or of a torchrun-style launcher
 * (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; these win
 * over Slurm's, and MASTER_ADDR and MASTER_PORT under srun too). */
struct comm_launch {
    const char *launcher; /* "srun", "torchrun", "the launcher (RANK,
                           * WORLD_SIZE)" */
    int rank, world;
    int local_rank;        /* -1: not given */
    char host[256];        /* rank 0's host */
    const char *host_from; /* where host came from, for messages */
    /* Rank 0 listens on the first free port of [port, port + ports):
     * MASTER_PORT alone, or under srun a range derived from the job and
     * step ids (no fixed port: concurrent steps on a node differ). */
    int port, ports;
    /* The run's identity (the job and step, torchrun's run id, or the
     * address): a rank of another run that reaches the port is refused. */
    char token[160];
};

/* comm_launch_env: 1 and l filled when the environment says this process
 * is one of several ranks (srun's or torchrun's variables); 0 when not
 * (a world of one included); -1 with err when it is incomplete or
 * malformed (RANK without MASTER_ADDR, a rank outside the world). */
int comm_launch_env(struct comm_launch *l, char *err, size_t err_len);

/* comm_tcp: the communicator over TCP sockets for CPU buffers, for ranks
 * started without MPI: the rendezvous at rank 0's address (the layout
 * checked the same on every rank), then a connection between every two
 * ranks.  Collectives give the bits of the MPI backend on two ranks and
 * are deterministic on any number (each sum in the group's rank order).
 * The watchdog as comm_mpi's.  Returns NULL with err, *usage set when the
 * error is the user's layout (exit 2) rather than the run's. */
struct comm *comm_tcp(const struct comm_launch *env,
                      const struct comm_layout *l, double timeout, int *usage,
                      char *err, size_t err_len);

/* comm_exiting: this process is about to exit after saying why (a fatal
 * error, a usage error): the watchdog says nothing more and the other
 * ranks learn of it when its connections close. */
void comm_exiting(void);

/* comm_nccl: the NCCL backend (GPU buffers) over boot, a CPU
 * communicator (comm_mpi() or comm_tcp(): the layout and the bootstrap,
 * which carries NCCL's unique id: comm_share_id()) which it takes over
 * (its destroy() destroys boot).  On failure boot is left as it is: the
 * caller exits without destroying it (no goodbye to the watchdog, no
 * MPI_Finalize), so that the other ranks, which may wait for this one in
 * NCCL's init, are stopped by the watchdog or mpirun.  device: the GPU the
 * compute backend chose (ops->device; -1: boot's local rank modulo the
 * GPUs visible), which no other rank of the node may use
 * (comm_gpu_unique()); stream: the compute
 * backend's queue (ops->queue(); NULL: the legacy default stream): the
 * collectives run on a stream of their own, each after the compute work
 * queued before it (a CUDA event), and the compute work queued after a
 * collective, or after wait_all() for the started ones, waits for it
 * (an event again; the host does not wait).  The watchdog: a thread
 * follows the collectives' events and tells boot's watchdog (--comm_timeout
 * across ranks) what the GPU waits in, polls ncclCommGetAsyncError(), and
 * aborts every NCCL communicator (ncclCommAbort()) before the rank stops.
 * In builds with NCCL and the CUDA backend (train/comm/comm_nccl.c); else
 * train/comm/comm_nccl_stub.c, which says NCCL is not built.  Returns
 * NULL with a message in err on failure. */
struct comm *comm_nccl(struct comm *boot, int device, void *stream,
                       double timeout, char *err, size_t err_len);

/* comm_staged: the CPU communicator cpu (comm_mpi(), comm_tcp()), which
 * it takes over (its destroy() destroys cpu), for buffers in a compute
 * backend's memory: each collective copies what it reads to the host
 * (copy->download, which waits for the compute queue), runs over cpu, and
 * copies what it wrote back (copy->upload); a started one keeps its host
 * copy until wait_all().  Slower than NCCL, but ranks may share a GPU
 * (NCCL refuses them): `train --comm_backend host`.  NULL with err when
 * out of memory. */
struct comm_copy {
    int (*download)(void *host_dst, const void *src, size_t bytes);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    const char *(*error)(void); /* the last failure's message */
};
struct comm *comm_staged(struct comm *cpu, const struct comm_copy *copy,
                         char *err, size_t len);

/* What --comm_backend asks for on several ranks: AUTO, NCCL on GPUs and
 * the CPU communicator otherwise; NCCL (GPUs only); HOST, the CPU
 * communicator through host memory (comm_staged()), on any device (on
 * the CPU the copies are plain ones: the path checked without a GPU). */
enum comm_backend { COMM_BACKEND_AUTO, COMM_BACKEND_NCCL, COMM_BACKEND_HOST };

/* comm_backend_parse: "auto", "nccl", "host"; -1 for anything else. */
int comm_backend_parse(const char *s);

/* Which communicator a run gets (comm_select()): one rank; MPI (mpirun,
 * srun with PMIx) or TCP (srun, torchrun) for CPU buffers; NCCL for GPU
 * buffers on several ranks, its unique id carried by MPI or by the TCP
 * rendezvous; or the CPU one staged through host memory. */
enum comm_kind {
    COMM_KIND_SINGLE,
    COMM_KIND_MPI,
    COMM_KIND_TCP,
    COMM_KIND_NCCL_MPI,
    COMM_KIND_NCCL_TCP,
    COMM_KIND_STAGED
};

/* comm_select: by_mpi, whether MPI started the ranks
 * (comm_launched_by_mpi()); by_env, whether srun's or torchrun's
 * variables did (comm_launch_env() 1); world, the ranks; gpu_device, the
 * compute backend's GPU (-1: the CPU); want, --comm_backend. */
enum comm_kind comm_select(int by_mpi, int by_env, int world, int gpu_device,
                           enum comm_backend want);
const char *comm_kind_name(enum comm_kind k);

/* Where a rank computes: its node and its GPU (the GPU's UUID: the same
 * GPU whatever CUDA_VISIBLE_DEVICES numbers it), as comm_nccl() gathers
 * them from every rank.  Its size is even (moved as 16-bit elements). */
struct comm_gpu_place {
    char host[64];          /* gethostname(), NUL-padded */
    unsigned char uuid[16]; /* cudaDeviceProp.uuid */
    int device;             /* the ordinal this rank uses */
};

/* comm_gpu_gather: all[r] = rank r's place, for every rank of boot's
 * world (all has world entries; mine is this rank's).  0, or -1 with
 * err. */
int comm_gpu_gather(struct comm *boot, const struct comm_gpu_place *mine,
                    struct comm_gpu_place *all, char *err, size_t len);

/* comm_gpu_unique: 0 when no two ranks of all[0..world) use one GPU
 * of one node; else -1 with err naming the first two that do, their node
 * and its ranks, the gpus this rank sees, and the launcher options that
 * fix it (NCCL refuses two ranks on one GPU).  Every rank gets the same
 * answer. */
int comm_gpu_unique(const struct comm_gpu_place *all, int world, int gpus,
                    char *err, size_t len);

/* comm_share_id: world rank 0's bytes id[0..bytes) (NCCL's unique id) to
 * every rank over boot (MPI's broadcast, or the TCP rendezvous' mesh).
 * 0, or -1 with err. */
int comm_share_id(struct comm *boot, void *id, size_t bytes, char *err,
                  size_t len);

/* comm_layout_split: the groups of world rank `rank` in layout l (all
 * degrees resolved, dp > 0): for each group, the color shared by its
 * members (-1: rank is in no such group) and this rank's key (its place)
 * in it, as MPI_Comm_split and ncclCommSplit take them.  COMM_WORLD gets
 * color 0. */
void comm_layout_split(const struct comm_layout *l, int rank,
                       int color[COMM_N_GROUPS], int key[COMM_N_GROUPS]);

/* comm_launched_by_mpi: whether this process was started by mpirun, or by
 * srun with PMIx or PMI (their environment variables). */
int comm_launched_by_mpi(void);

/* comm_local_rank_env: this process's rank on its node as the launcher
 * gives it (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPICH's
 * MPI_LOCALRANKID, Slurm's SLURM_LOCALID, torchrun's LOCAL_RANK, in that
 * order), or -1 if none does. */
int comm_local_rank_env(void);

#endif /* TRAIN_COMM_H */
