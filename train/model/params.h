/* SPDX-License-Identifier: MIT */
/*
 * params.h: the tensor table.  Parameters, gradients and optimizer moments
 * live in flat buffers (one allocation each); the table says where each
 * named tensor sits, its shape, how tensor and pipeline parallelism would
 * split it, whether weight decay applies and how it is initialised.  It
 * drives allocation, initialisation, checkpoints and the decay mask.
 *
 * Offsets are multiples of OPS_ALIGN elements (vectorised kernels), but
 * for a tensor that continues the one before (params_add_adjacent()): the
 * pads between tensors are zero in every buffer and never saved.  A
 * vocabulary (TP_VOCAB) is padded to a multiple of OPS_VOCAB_ALIGN rows on
 * each rank (Megatron's rule); its pad rows are zero, never saved, and the
 * losses ignore their logits.
 */
#ifndef TRAIN_PARAMS_H
#define TRAIN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* How tensor parallelism (Megatron) splits a tensor. */
enum tp_split {
    TP_REPLICATED, /* layer norms, biases of row-parallel layers, heads */
    TP_COLUMN,     /* the output dimension (rows of [out, in]; a bias) */
    TP_ROW,        /* the input dimension (columns of [out, in]) */
    TP_VOCAB,      /* rows of an embedding table (vocab-parallel), the
                      vocab padded to a multiple of OPS_VOCAB_ALIGN x the
                      ranks */
    TP_COLUMN_QKV, /* GPT-2's fused c_attn [3C, C] (and its bias): each
                      rank takes its heads' rows of q, of k and of v */
};

enum param_init {
    INIT_NORMAL, /* normal(0, std) */
    INIT_ZEROS,
    INIT_ONES,
};

/* Pipeline placement: a transformer layer's index, or one of these. */
#define PARAM_PRE      (-1) /* embeddings: the first stage */
#define PARAM_POST     (-2) /* final norm and heads: the last stage */

#define PARAM_NAME_MAX 96

struct param_tensor {
    char name[PARAM_NAME_MAX]; /* the Hugging Face name */
    int ndim;                  /* 1 or 2 */
    int64_t shape[2];          /* ours: a linear weight is [out, in] */
    int64_t gshape[2];         /* the whole tensor's (shape is this rank's part,
                          padded rows of a vocabulary included) */
    size_t offset;             /* in elements, into the flat buffers (a multiple
                          of OPS_ALIGN) */
    size_t numel;
    enum tp_split tp;
    int layer;         /* layer index, PARAM_PRE or PARAM_POST */
    int decay;         /* AdamW weight decay applies (ndim 2) */
    int hf_transposed; /* Hugging Face stores it [in, out] (GPT-2 Conv1D) */
    enum param_init init;
    float std;        /* INIT_NORMAL */
    int64_t zero_row; /* a row set to 0 at init (padding_idx), or -1 */
    /* A copy of a tensor another pipeline stage owns (the last stage's
     * tied word embeddings): kept equal to it, neither saved from here
     * nor counted twice in the gradient norm. */
    int tied_copy;
};

struct param_table {
    struct param_tensor *t;
    size_t n, cap;
    size_t total; /* elements, all tensors and the pads between them (a
                     multiple of OPS_ALIGN) */
    /* Tensor parallelism: the tensors are rank tp_rank's parts of tp_size
     * (1: whole).  Set before adding tensors (params_init_tp). */
    int tp_size, tp_rank;
};

void params_init(struct param_table *pt);
void params_init_tp(struct param_table *pt, int tp_size, int tp_rank);
void params_release(struct param_table *pt);

/* params_add: append a tensor (offset = the running total, aligned) of
 * whole shape [d0, d1], of which this rank keeps its part under tp
 * (dimensions that split must divide by tp_size; TP_VOCAB pads d0 up to a
 * multiple of OPS_VOCAB_ALIGN x tp_size).  A 1-D tensor has d1 == 0.
 * Returns its index, or -1 when out of memory or the name does not
 * fit. */
long params_add(struct param_table *pt, const char *name, int64_t d0,
                int64_t d1, enum tp_split tp, int layer, enum param_init init,
                float std);

/* params_count: the parameters this table holds, pads not counted. */
size_t params_count(const struct param_table *pt);

/* params_rows_saved: the rows of a whole table's tensor t that files
 * hold: all but a vocabulary's pad rows (the last ones). */
int64_t params_rows_saved(const struct param_tensor *t);

/* params_add_adjacent: params_add(), but the tensor goes right after the
 * one before, with no pad between (its offset unaligned), so that the two
 * read as one: ERNIE's query, key and value as one fused linear. */
long params_add_adjacent(struct param_table *pt, const char *name, int64_t d0,
                         int64_t d1, enum tp_split tp, int layer,
                         enum param_init init, float std);

/* params_find: the tensor of that name, or NULL. */
const struct param_tensor *params_find(const struct param_table *pt,
                                       const char *name);

/* params_fill_init: write every tensor's initial values into host[0..total)
 * from seed.  Element i of the whole tensor named s gets the i-th normal
 * draw of a counter-based generator keyed by (seed, s): the values depend
 * neither on the table's order nor on any parallel layout (a rank's part
 * gets the draws of its elements' places in the whole; vocab pads 0). */
void params_fill_init(const struct param_table *pt, uint64_t seed, float *host);

/* params_fill_tensor: the same for one tensor t of pt, into
 * host[0..t->numel). */
void params_fill_tensor(const struct param_table *pt,
                        const struct param_tensor *t, uint64_t seed,
                        float *host);

/* params_global_index: where element k of rank `rank`'s part of t sits in
 * the whole tensor (row-major, our [out, in] layout), or -1 for a pad row
 * of the vocab. */
int64_t params_global_index(const struct param_tensor *t, int tp_size, int rank,
                            size_t k);

/* params_to_global: copy what tensor-parallel rank `rank` owns of the
 * tensors of `part` (host, laid out as `part`, a table of that rank and
 * of one pipeline stage) into their places in `whole` (host, laid out as
 * the whole table `wt`; tensors matched by name): its part of the split
 * tensors, the replicated ones only if rank is 0, no tied copy.  The rest
 * of `whole` is left as it was, so zeroed buffers of every rank sum to
 * the whole.  params_from_global: the reverse, every tensor of part (pads
 * become 0). */
void params_to_global(const struct param_table *part, int rank,
                      const float *host_part, const struct param_table *wt,
                      float *host_whole);
void params_from_global(const struct param_table *part, int rank,
                        float *host_part, const struct param_table *wt,
                        const float *host_whole);

/* params_part_to_whole: tensor-parallel rank `rank`'s part of tensor t
 * (part[0..t->numel), t as that rank's table has it) into its places in
 * the whole tensor (whole, laid out as t->gshape; the rest untouched);
 * params_part_from_whole: the part cut from the whole (pads 0). */
void params_part_to_whole(const struct param_tensor *t, int tp_size, int rank,
                          const float *part, float *whole);
void params_part_from_whole(const struct param_tensor *t, int tp_size, int rank,
                            float *part, const float *whole);

/* The k-th standard normal draw of stream `key` (Box-Muller over two
 * splitmix64 uniforms). */
double params_normal(uint64_t key, uint64_t k);

/* A 64-bit FNV-1a hash of a string (the stream key of a tensor's name). */
uint64_t params_hash(const char *s, uint64_t seed);

#endif /* TRAIN_PARAMS_H */
