/* SPDX-License-Identifier: MIT */
/*
 * cuda_host.c: the CUDA backend's host-side logic (cuda_host.h): status
 * messages, byte counts, the allocation map, the GEMM layouts and the
 * algorithm cache, shape checks and attention sizes.  Plain C with no CUDA
 * headers: built into the CUDA library, and into libtrain on machines
 * without CUDA so that its unit test runs everywhere.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_host.h"

/* ------------------------------------------------------------ status */

int
cuda_status_fail(struct cuda_status *st, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (st->failed)
        return -1;
    st->failed = 1;
    n = snprintf(st->msg, sizeof(st->msg), "cuda: ");
    va_start(ap, fmt);
    vsnprintf(st->msg + n, sizeof(st->msg) - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

int
cuda_status_call(struct cuda_status *st, const char *expr, const char *why,
                 const char *file, int line)
{
    return cuda_status_fail(st, "%s: %s: %s (%s:%d)",
                            st->op != NULL ? st->op : "setup", expr, why, file,
                            line);
}

int
cuda_status_async(struct cuda_status *st, const char *why)
{
    if (st->queued == NULL)
        return cuda_status_fail(st, "%s", why);
    return cuda_status_fail(st,
                            "%s (detected after %s; CUDA_LAUNCH_BLOCKING=1 "
                            "names the op that caused it)",
                            why, st->queued);
}

/* ------------------------------------------------------------ memory */

char *
cuda_format_bytes(char *buf, size_t len, size_t n)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)n;
    int u = -1;

    if (n < 1024) {
        snprintf(buf, len, "%zu bytes", n);
        return buf;
    }
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    /* Three significant digits; what rounds up to 1000 of a unit stays in
     * it ("1000 MiB" reads better than a jump to "0.98 GiB"). */
    if (v < 9.995)
        snprintf(buf, len, "%.2f %s", v, units[u]);
    else if (v < 99.95)
        snprintf(buf, len, "%.1f %s", v, units[u]);
    else
        snprintf(buf, len, "%.0f %s", v, units[u]);
    return buf;
}

void
cuda_oom_message(char *buf, size_t len, size_t asked, const char *what,
                 size_t free_bytes, size_t total_bytes)
{
    char a[32], f[32], t[32];

    snprintf(buf, len,
             "out of memory: alloc of %s (%s) with %s free of %s; a "
             "smaller --per_device_train_batch_size or --recompute needs "
             "less",
             cuda_format_bytes(a, sizeof(a), asked),
             what != NULL ? what : "unnamed",
             cuda_format_bytes(f, sizeof(f), free_bytes),
             cuda_format_bytes(t, sizeof(t), total_bytes));
}

#define SLOT_EMPTY   ((uintptr_t)0)
#define SLOT_DELETED ((uintptr_t)1)

/* Pointers from cudaMalloc are 256-byte aligned: the bits above those
 * make the hash (a multiplicative one, the table's size a power of 2). */
static size_t
ptr_slot(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)key >> 8) * 0x9E3779B97F4A7C15ULL >> 17) &
           (cap - 1);
}

static int
ptr_map_grow(struct cuda_ptr_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct cuda_ptr_map g = { 0 };

    /* Mostly deleted slots: rebuild at the same size. */
    if (m->cap && m->n * 4 < m->cap)
        cap = m->cap;
    g.keys = calloc(cap, sizeof(*g.keys));
    g.sizes = calloc(cap, sizeof(*g.sizes));
    if (g.keys == NULL || g.sizes == NULL) {
        free(g.keys);
        free(g.sizes);
        return -1;
    }
    g.cap = cap;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] > SLOT_DELETED) {
            size_t s = ptr_slot(m->keys[i], cap);

            while (g.keys[s] != SLOT_EMPTY)
                s = (s + 1) & (cap - 1);
            g.keys[s] = m->keys[i];
            g.sizes[s] = m->sizes[i];
            g.n++;
        }
    }
    g.used = g.n;
    free(m->keys);
    free(m->sizes);
    *m = g;
    return 0;
}

int
cuda_ptr_map_put(struct cuda_ptr_map *m, const void *p, size_t size)
{
    uintptr_t key = (uintptr_t)p;
    size_t s;

    if (key <= SLOT_DELETED)
        return -1;
    if ((m->used + 1) * 4 > m->cap * 3 && ptr_map_grow(m) != 0)
        return -1;
    /* Deleted slots are passed over, never reused: the empty slot the
     * probe ends on is taken (the next grow sweeps the deleted ones). */
    s = ptr_slot(key, m->cap);
    while (m->keys[s] != SLOT_EMPTY && m->keys[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (m->keys[s] == key) {
        m->sizes[s] = size;
        return 0;
    }
    m->used++;
    m->keys[s] = key;
    m->sizes[s] = size;
    m->n++;
    return 0;
}

int
cuda_ptr_map_take(struct cuda_ptr_map *m, const void *p, size_t *size)
{
    uintptr_t key = (uintptr_t)p;
    size_t s;

    if (m->cap == 0 || key <= SLOT_DELETED)
        return -1;
    s = ptr_slot(key, m->cap);
    while (m->keys[s] != SLOT_EMPTY) {
        if (m->keys[s] == key) {
            *size = m->sizes[s];
            m->keys[s] = SLOT_DELETED;
            m->n--;
            return 0;
        }
        s = (s + 1) & (m->cap - 1);
    }
    return -1;
}

void
cuda_ptr_map_release(struct cuda_ptr_map *m)
{
    free(m->keys);
    free(m->sizes);
    memset(m, 0, sizeof(*m));
}

unsigned
cuda_ptr_align(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    unsigned al = 1;

    if (a == 0)
        return 256;
    while (al < 256 && (a & al) == 0)
        al <<= 1;
    return al;
}

/* ------------------------------------------------------------ GEMMs */

void
cuda_gemm_shape(enum cuda_gemm_kind kind, int M, int K, int N,
                struct cuda_gemm_shape *s)
{
    memset(s, 0, sizeof(*s));
    switch (kind) {
    case CUDA_GEMM_FWD: /* D(N x M) = w^T(N x K) . x(K x M) */
        s->trans_a = 1;
        s->trans_b = 0;
        s->m = N;
        s->n = M;
        s->k = K;
        s->a_rows = K, s->a_cols = N, s->lda = K, s->a_is = CUDA_OPND_W;
        s->b_rows = K, s->b_cols = M, s->ldb = K, s->b_is = CUDA_OPND_X;
        s->ldd = N;
        break;
    case CUDA_GEMM_DX: /* D(K x M) = w(K x N) . dy(N x M) */
        s->trans_a = 0;
        s->trans_b = 0;
        s->m = K;
        s->n = M;
        s->k = N;
        s->a_rows = K, s->a_cols = N, s->lda = K, s->a_is = CUDA_OPND_W;
        s->b_rows = N, s->b_cols = M, s->ldb = N, s->b_is = CUDA_OPND_DY;
        s->ldd = K;
        break;
    case CUDA_GEMM_DW: /* D(K x N) = x(K x M) . dy^T(M x N) */
        s->trans_a = 0;
        s->trans_b = 1;
        s->m = K;
        s->n = N;
        s->k = M;
        s->a_rows = K, s->a_cols = M, s->lda = K, s->a_is = CUDA_OPND_X;
        s->b_rows = N, s->b_cols = M, s->ldb = N, s->b_is = CUDA_OPND_DY;
        s->ldd = K;
        break;
    }
}

static int32_t
log2u(unsigned v)
{
    int32_t l = 0;

    while (v > 1) {
        v >>= 1;
        l++;
    }
    return l;
}

int32_t
cuda_gemm_align_code(unsigned a, unsigned b, unsigned c, unsigned d,
                     unsigned extra)
{
    return log2u(a) | log2u(b) << 4 | log2u(c) << 8 | log2u(d) << 12 |
           log2u(extra) << 16;
}

/* FNV-1a over the key's bytes (all int32_t: no padding). */
static size_t
key_hash(const struct cuda_gemm_key *k)
{
    const unsigned char *p = (const unsigned char *)k;
    uint64_t h = 0xcbf29ce484222325ULL;

    for (size_t i = 0; i < sizeof(*k); i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return (size_t)h;
}

const struct cuda_gemm_entry *
cuda_gemm_cache_find(const struct cuda_gemm_cache *c,
                     const struct cuda_gemm_key *key)
{
    size_t s;

    if (c->cap == 0)
        return NULL;
    s = key_hash(key) & (c->cap - 1);
    while (c->e[s].used) {
        if (memcmp(&c->e[s].key, key, sizeof(*key)) == 0)
            return &c->e[s];
        s = (s + 1) & (c->cap - 1);
    }
    return NULL;
}

static void
cache_insert(struct cuda_gemm_entry *e, size_t cap,
             const struct cuda_gemm_entry *src)
{
    size_t s = key_hash(&src->key) & (cap - 1);

    while (e[s].used && memcmp(&e[s].key, &src->key, sizeof(src->key)) != 0)
        s = (s + 1) & (cap - 1);
    e[s] = *src;
    e[s].used = 1;
}

int
cuda_gemm_cache_put(struct cuda_gemm_cache *c, const struct cuda_gemm_key *key,
                    const void *algo, size_t workspace)
{
    struct cuda_gemm_entry ent;

    if ((c->n + 1) * 2 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct cuda_gemm_entry *e = calloc(cap, sizeof(*e));

        if (e == NULL)
            return -1;
        for (size_t i = 0; i < c->cap; i++)
            if (c->e[i].used)
                cache_insert(e, cap, &c->e[i]);
        free(c->e);
        c->e = e;
        c->cap = cap;
    }
    memset(&ent, 0, sizeof(ent));
    ent.key = *key;
    memcpy(ent.algo, algo, CUDA_GEMM_ALGO_BYTES);
    ent.workspace = workspace;
    if (cuda_gemm_cache_find(c, key) == NULL)
        c->n++;
    cache_insert(c->e, c->cap, &ent);
    return 0;
}

void
cuda_gemm_cache_release(struct cuda_gemm_cache *c)
{
    free(c->e);
    memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------ shapes */

static const char *
op_name(const char *op)
{
    return op != NULL ? op : "?";
}

int
cuda_check_rows(struct cuda_status *st, const char *op, long long n,
                long long C)
{
    if (n < 0 || C <= 0)
        return cuda_status_fail(st,
                                "%s: %lld rows of %lld columns (rows >= 0 "
                                "and columns > 0)",
                                op_name(op), n, C);
    return 0;
}

int
cuda_check_linear(struct cuda_status *st, const char *op, int M, int K, int N)
{
    if (M < 0 || K <= 0 || N < 0)
        return cuda_status_fail(st,
                                "%s: M = %d, K = %d, N = %d (M, N >= 0 and "
                                "K > 0)",
                                op_name(op), M, K, N);
    return 0;
}

int
cuda_check_dropout(struct cuda_status *st, const char *op, float p)
{
    if (!(p >= 0.0f && p < 1.0f))
        return cuda_status_fail(st,
                                "%s: dropout probability %g (must be in "
                                "[0, 1))",
                                op_name(op), (double)p);
    return 0;
}

int
cuda_check_attention(struct cuda_status *st, const char *op, int B, int T,
                     int C, int NH, int h0, int NH_all, float p)
{
    if (B < 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0)
        return cuda_status_fail(st,
                                "%s: B = %d, T = %d, C = %d, NH = %d (B >= "
                                "0, T, C, NH > 0, C a multiple of NH)",
                                op_name(op), B, T, C, NH);
    if (h0 < 0 || NH_all < NH || h0 + NH > NH_all)
        return cuda_status_fail(st, "%s: heads %d..%d of %d", op_name(op), h0,
                                h0 + NH - 1, NH_all);
    if (C / NH > CUDA_ATT_MAX_HEAD)
        return cuda_status_fail(st, "%s: head size %d (at most %d)",
                                op_name(op), C / NH, CUDA_ATT_MAX_HEAD);
    return cuda_check_dropout(st, op, p);
}

int
cuda_check_xent(struct cuda_status *st, const char *op, int n, int V,
                int V_valid, int v0)
{
    if (n < 0 || V <= 0 || V_valid < 0 || V_valid > V || v0 < 0)
        return cuda_status_fail(st,
                                "%s: n = %d, V = %d, V_valid = %d, v0 = %d "
                                "(n >= 0, 0 <= V_valid <= V, V > 0, v0 >= "
                                "0)",
                                op_name(op), n, V, V_valid, v0);
    return 0;
}

/* ------------------------------------------------------------ attention */

/* Buffers are handed out in multiples of 256 bytes (cudaMalloc's
 * alignment), so that parts carved from one stay aligned. */
static size_t
round256(size_t n)
{
    return (n + 255) / 256 * 256;
}

size_t
cuda_attention_state_bytes(int B, int T, int NH)
{
    return round256((size_t)B * (size_t)NH * (size_t)T * sizeof(float));
}

size_t
cuda_attention_scratch_bytes(int B, int T, int NH, int C, enum ops_dtype dt)
{
    size_t rows = round256((size_t)B * (size_t)NH * (size_t)T * sizeof(float));
    size_t elt = dt == OPS_F32 ? 4 : 2;

    if (dt == OPS_F32)
        return rows;
    return rows + round256((size_t)B * (size_t)T * 3 * (size_t)C * elt);
}

const char *
cuda_sdpa_unsupported(enum ops_dtype dt, int T, int D, long cudnn_version,
                      int sm)
{
    if (dt == OPS_F32)
        return "float32 attention is computed exactly, without cuDNN";
    if (cudnn_version < 90000)
        return "cuDNN 9 or newer is needed";
    if (sm < 80)
        return "cuDNN's fused attention needs compute capability 8.0";
    if (D % 8 != 0 || D > 128)
        return "cuDNN's fused attention needs a head size that is a multiple "
               "of 8, at most 128";
    /* Up to 9.15.0 the backward pass needs a padding mask (which we do
     * not build) when the keys are not a multiple of 128: cudnn-frontend
     * adds one as a workaround for those versions. */
    if (T % 128 != 0 && cudnn_version <= 91500)
        return "this cuDNN's fused attention needs a sequence length that "
               "is a multiple of 128";
    if (T < 2)
        return "cuDNN's fused attention needs at least 2 positions";
    return NULL;
}
