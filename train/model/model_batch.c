/* SPDX-License-Identifier: MIT */
/*
 * model_batch.c: a micro-batch's ids and masks on their way to the
 * backend.  The host checks them and writes them, with what the model
 * derives from them (positions, the ids of this rank's shard of the
 * vocabulary, the additive attention mask), into a pinned buffer laid out
 * as the backend's batch buffer; one upload_async() takes it up.  Two
 * pinned buffers and two backend buffers per activation slot are taken in
 * turn (ops.h: upload_async), so a micro-batch goes up while the one
 * before it computes, and a slot's ids stay in place for its backward.
 */
#include <string.h>

#include "model_int.h"
#include "util/tr_util.h"

/* Carve n elements of size `size` from *at (a running byte count from
 * base, NULL: only count), each array on a 256-byte line. */
static void *
take(char *base, size_t *at, size_t n, size_t size)
{
    void *p = base ? base + *at : NULL;

    *at += (n * size + 255) & ~(size_t)255;
    return p;
}

size_t
model_batch_layout(const struct model *m, void *base, struct batch_bufs *bb)
{
    size_t BT = (size_t)m->max_B * (size_t)m->max_T, at = 0;
    size_t M = (size_t)m->max_M, B = (size_t)m->max_B;
    char *p = base;

    memset(bb, 0, sizeof(*bb));
    bb->ids = take(p, &at, BT, sizeof(int32_t));
    bb->vids = m->tp.size > 1 ? take(p, &at, BT, sizeof(int32_t)) : bb->ids;
    bb->pos_ids = take(p, &at, BT, sizeof(int32_t));
    if (m->cfg.type == MODEL_GPT) {
        bb->labels = take(p, &at, BT, sizeof(int32_t));
        return at;
    }
    bb->type_ids = take(p, &at, BT, sizeof(int32_t));
    bb->task_ids = take(p, &at, BT, sizeof(int32_t));
    bb->key_bias = take(p, &at, BT, sizeof(float));
    bb->mpos = take(p, &at, M, sizeof(int32_t));
    bb->mlab = take(p, &at, M, sizeof(int32_t));
    bb->cls_rows = take(p, &at, B, sizeof(int32_t));
    bb->sop_lab = take(p, &at, B, sizeof(int32_t));
    return at;
}

/* The slot's batch buffer number `set` in backend memory. */
static char *
dev_buffer(const struct model *m, int slot, int set)
{
    return (char *)m->batch_dev +
           (2 * (size_t)slot + (size_t)set) * m->batch_bytes;
}

void
model_batch_select(struct model *m)
{
    model_batch_layout(
        m, dev_buffer(m, m->slot, m->slot_state[m->slot].batch_set), &m->bb);
}

/* dst[0..n) = src after checking each against [lo, hi). */
static int
put_ids(int32_t *dst, const int32_t *src, size_t n, int32_t lo, int32_t hi,
        const char *what, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (src[i] < lo || src[i] >= hi)
            return tr_fail(err, errlen, "%s[%zu] = %d is outside [%d, %d)",
                           what, i, src[i], lo, hi);
    memcpy(dst, src, n * sizeof(int32_t));
    return 0;
}

/* ERNIE's arrays of b into the pinned buffer h. */
static int
stage_ernie(const struct model *m, const struct batch *b, struct batch_bufs *h,
            char *err, size_t errlen)
{
    const struct model_config *k = &m->cfg;
    size_t BT = (size_t)b->B * (size_t)b->T;

    if (put_ids(h->type_ids, b->token_type_ids, BT, 0, k->type_vocab_size,
                "token_type_ids", err, errlen) < 0 ||
        put_ids(h->mpos, b->masked_positions, (size_t)b->M, 0, (int32_t)BT,
                "masked_positions", err, errlen) < 0 ||
        put_ids(h->mlab, b->masked_labels, (size_t)b->M, -1, k->vocab_size,
                "masked_labels", err, errlen) < 0)
        return -1;
    if (k->binary_head && put_ids(h->sop_lab, b->sop_labels, (size_t)b->B, 0, 2,
                                  "sop_labels", err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < BT; i++)
        h->task_ids[i] = k->task_id;
    for (int i = 0; i < b->B; i++)
        h->cls_rows[i] = i * b->T;
    /* The additive key mask of PaddleNLP's input_mask: -1e4 on padding. */
    for (size_t i = 0; i < BT; i++)
        h->key_bias[i] =
            b->attention_mask && !b->attention_mask[i] ? -10000.0f : 0.0f;
    return 0;
}

int
model_batch_upload(struct model *m, const struct batch *b, char *err,
                   size_t errlen)
{
    const struct model_config *k = &m->cfg;
    size_t BT = (size_t)b->B * (size_t)b->T;
    void *pinned = m->batch_host[m->host_next];
    struct slot_state *s = &m->slot_state[m->slot];
    struct batch_bufs h;

    model_batch_layout(m, pinned, &h);
    if (put_ids(h.ids, b->input_ids, BT, 0, k->vocab_size, "input_ids", err,
                errlen) < 0)
        return -1;
    if (k->type == MODEL_GPT ? put_ids(h.labels, b->labels, BT, -1,
                                       k->vocab_size, "labels", err, errlen)
                             : stage_ernie(m, b, &h, err, errlen))
        return -1;
    for (size_t i = 0; i < BT; i++)
        h.pos_ids[i] = (int32_t)(i % (size_t)b->T);
    /* Tensor parallelism: the ids as rows of this rank's shard of the
     * vocab, -1 for the other shards'. */
    if (m->tp.size > 1)
        for (size_t i = 0; i < BT; i++)
            h.vids[i] = h.ids[i] >= m->v0 && h.ids[i] < m->v0 + m->V_valid
                            ? h.ids[i] - m->v0
                            : -1;
    /* Into the slot's other buffer: the one in use may still be read by
     * the ops queued before (ops.h: upload_async). */
    s->batch_set ^= 1;
    m->ops->upload_async(dev_buffer(m, m->slot, s->batch_set), pinned,
                         m->batch_bytes);
    m->ops->upload_wait();
    m->host_next ^= 1;
    model_batch_select(m);
    return 0;
}
