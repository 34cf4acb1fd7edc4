/* SPDX-License-Identifier: MIT */
/*
 * tok_lac_net.c: the LAC networks on a group of texts: the two
 * bidirectional GRU layers, time step by time step over all the texts of
 * the group at once (each step's products become matrix products, through
 * tok_lac_kernels.c), the emissions, and CRF Viterbi decoding as Paddle's
 * crf_decoding does it (float32, the first maximum wins).
 *
 * A group's texts are sorted longest first, so the texts still running at
 * step t are the first rows; the backward direction runs each text from
 * its own end.  A text longer than the group's window runs alone through
 * the same passes window by window, with the GRU states at the window
 * edges kept (checkpoints) and the rest recomputed: memory stays bounded
 * by the window whatever the length, at about four times the work, and
 * the bits are those of a single pass.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tok_lac_int.h"

/* ------------------------------------------------------------------------ */
/* Working memory                                                            */

static int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
    void *q;

    if (need <= *cap)
        return 0;
    if ((q = realloc(*p, need * elem)) == NULL)
        return TOK_ENOMEM;
    *p = q;
    *cap = need;
    return 0;
}

int
tok_lac_work_reserve(struct tok_lac_work *w, const struct tok_lac_net *net,
                     size_t rows, size_t pos)
{
    size_t D = net->D, L = net->L;

    if (grow((void **)&w->l0, &w->l0_cap, pos * 2 * D, sizeof(float)) < 0 ||
        grow((void **)&w->track, &w->track_cap, pos * L, 1) < 0)
        return TOK_ENOMEM;
    if (pos * L > w->em_cap) {
        free(w->em);
        /* Zeroed: the long path's state-only passes read it unwritten. */
        if ((w->em = calloc(pos * L, sizeof(float))) == NULL) {
            w->em_cap = 0;
            return TOK_ENOMEM;
        }
        w->em_cap = pos * L;
    }
    if (rows > w->rows_cap) {
        free(w->h);
        free(w->xp);
        free(w->gur);
        free(w->u);
        free(w->rh);
        free(w->gc);
        free(w->arows);
        free(w->crows);
        free(w->grows);
        free(w->pos);
        w->h = calloc(rows * D, sizeof(float));
        w->xp = malloc(rows * 3 * D * sizeof(float));
        w->gur = malloc(rows * 2 * D * sizeof(float));
        w->u = malloc(rows * D * sizeof(float));
        w->rh = malloc(rows * D * sizeof(float));
        w->gc = malloc(rows * D * sizeof(float));
        w->arows = malloc(rows * sizeof(*w->arows));
        w->crows = malloc(rows * sizeof(*w->crows));
        w->grows = malloc(rows * sizeof(*w->grows));
        w->pos = malloc(rows * sizeof(*w->pos));
        w->rows_cap = rows;
        if (w->h == NULL || w->xp == NULL || w->gur == NULL || w->u == NULL ||
            w->rh == NULL || w->gc == NULL || w->arows == NULL ||
            w->crows == NULL || w->grows == NULL || w->pos == NULL) {
            w->rows_cap = 0;
            return TOK_ENOMEM;
        }
    }
    if (grow((void **)&w->alpha, &w->alpha_cap, 2 * L, sizeof(float)) < 0 ||
        grow((void **)&w->best2, &w->best2_cap, 4 * L, sizeof(double)) < 0)
        return TOK_ENOMEM;
    return 0;
}

void
tok_lac_work_release(struct tok_lac_work *w)
{
    free(w->l0);
    free(w->em);
    free(w->track);
    free(w->h);
    free(w->xp);
    free(w->gur);
    free(w->u);
    free(w->rh);
    free(w->gc);
    free(w->arows);
    free(w->crows);
    free(w->grows);
    free(w->pos);
    free(w->alpha);
    free(w->best2);
    memset(w, 0, sizeof(*w));
}

/* ------------------------------------------------------------------------ */
/* One direction of one layer                                                */

/* Run GRU k (layer * 2 + dir) over the lanes of group g: lane i runs
 * len[i] steps over window positions base[i]... (dir 0: forward; 1: from
 * its last position back), its state in row i of w->h, which is zeroed
 * where a text starts (dir 0) or ends (dir 1) and otherwise carried from
 * the caller.  Layer 0 writes its outputs into w->l0 (columns dir * D);
 * layer 1 adds them into the emission chain of w->em (dir 0 starts it,
 * dir 1 ends it with fc_4's bias).  A step where every row starts afresh
 * skips the products of the zero state, which are zeros: the same bits. */
static void
run_pass(const struct tok_lac_kernels *K, const struct tok_lac_net *net,
         struct tok_lac_work *w, const struct tok_lac_group *g, int layer,
         int dir)
{
    const size_t D = net->D, L = net->L, k = (size_t)(2 * layer + dir);
    const float *w_ur = net->w_gru[k], *w_c = net->w_gru[k] + D * 2 * D;
    const uint8_t reset = dir ? TOK_LAC_END : TOK_LAC_START;
    const bool table = layer == 0 && net->proj0 != NULL;
    size_t a = g->rows, steps = g->rows ? g->len[0] : 0;

    for (size_t t = 0; t < steps; t++) {
        size_t n_reset = 0;
        bool zero;

        while (a > 0 && g->len[a - 1] <= t)
            a--;
        for (size_t i = 0; i < a; i++) {
            size_t p = g->base[i] + (dir ? g->len[i] - 1 - t : t);

            w->pos[i] = p;
            if (g->edge[p] & reset) {
                memset(w->h + i * D, 0, D * sizeof(float));
                n_reset++;
            }
        }
        zero = n_reset == a;
        /* The gates' inputs. */
        for (size_t i = 0; i < a; i++) {
            size_t p = w->pos[i];

            if (table) {
                w->grows[i] = net->proj0 + (size_t)g->ids[p] * 6 * D +
                              (size_t)dir * 3 * D;
                continue;
            }
            w->arows[i] = layer == 0 ? net->emb + (size_t)g->ids[p] * net->E
                                     : w->l0 + p * 2 * D;
            w->crows[i] = w->xp + i * 3 * D;
            w->grows[i] = w->xp + i * 3 * D;
        }
        if (!table)
            K->gemm(a, 3 * D, layer == 0 ? net->E : 2 * D, w->arows,
                    net->w_in[k], 3 * D, w->crows, false);
        /* Update and reset gates, then the candidate and the new state. */
        if (!zero) {
            for (size_t i = 0; i < a; i++) {
                w->arows[i] = w->h + i * D;
                w->crows[i] = w->gur + i * 2 * D;
            }
            K->gemm(a, 2 * D, D, w->arows, w_ur, 2 * D, w->crows, false);
        }
        K->gates_ur(a, D, w->grows, table ? NULL : net->b_gate[k],
                    zero ? NULL : w->gur, w->h, w->u, w->rh);
        if (!zero) {
            for (size_t i = 0; i < a; i++) {
                w->arows[i] = w->rh + i * D;
                w->crows[i] = w->gc + i * D;
            }
            K->gemm(a, D, D, w->arows, w_c, D, w->crows, false);
        }
        K->gates_c(a, D, w->grows, table ? NULL : net->b_gate[k],
                   zero ? NULL : w->gc, w->u, w->h);
        /* The outputs. */
        for (size_t i = 0; i < a; i++) {
            size_t p = w->pos[i];

            if (layer == 0) {
                memcpy(w->l0 + p * 2 * D + (size_t)dir * D, w->h + i * D,
                       D * sizeof(float));
            } else {
                w->arows[i] = w->h + i * D;
                w->crows[i] = w->em + p * L;
            }
        }
        if (layer == 1) {
            K->gemm(a, L, D, w->arows, net->w_out + (size_t)dir * D * L, L,
                    w->crows, dir == 1);
            if (dir == 1)
                for (size_t i = 0; i < a; i++)
                    for (size_t j = 0; j < L; j++)
                        w->crows[i][j] = w->crows[i][j] + net->b_out[j];
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Viterbi                                                                   */

/* crf_decoding's recursion over em[0..n) (L tags): alpha in/out (L
 * floats; in: the alpha before em[0], or NULL at a text's start), and the
 * back pointers track[k][i], the best predecessor of tag i at k (for k = 0
 * only with alpha_in).  scratch holds L floats. */
static void
viterbi_forward(const struct tok_lac_kernels *K, const float *em, size_t n,
                size_t L, const float *crf, const float *alpha_in, float *alpha,
                float *scratch, uint8_t *track)
{
    const float *trans = crf + 2 * L;
    float *prev = scratch;

    for (size_t k = 0; k < n; k++) {
        const float *e = em + k * L;

        if (k == 0 && alpha_in == NULL) {
            for (size_t i = 0; i < L; i++)
                alpha[i] = crf[i] + e[i];
            continue;
        }
        memcpy(prev, k == 0 ? alpha_in : alpha, L * sizeof(float));
        K->viterbi(L, prev, trans, e, alpha, track + k * L);
    }
}

/* The last tag: the first maximum of alpha + the end scores. */
static size_t
viterbi_last(const float *alpha, size_t L, const float *crf)
{
    float best = -FLT_MAX;
    size_t arg = 0;

    for (size_t i = 0; i < L; i++) {
        float s = alpha[i] + crf[L + i];

        if (s > best) {
            best = s;
            arg = i;
        }
    }
    return arg;
}

/* Follow the back pointers from tag `last` at em position n - 1 down to 0,
 * writing tags[0..n); with before, returns the tag before position 0
 * (track[0], recorded when the recursion started from an alpha). */
static size_t
viterbi_back(const uint8_t *track, size_t n, size_t L, size_t last,
             uint8_t *tags, bool before)
{
    size_t cur = last;

    for (size_t k = n; k-- > 1;) {
        tags[k] = (uint8_t)cur;
        cur = track[k * L + cur];
    }
    tags[0] = (uint8_t)cur;
    return before ? track[cur] : 0;
}

/* The two best path scores, streamed: best2[2L] (top two per tag) and
 * `started`; then the margin at the end. */
static void
margin_step(double *b2, double *tmp, const float *e, size_t L, const float *crf,
            bool first)
{
    const float *trans = crf + 2 * L;

    for (size_t i = 0; i < L; i++) {
        double t1 = -INFINITY, t2 = -INFINITY;

        if (first) {
            tmp[2 * i] = (double)crf[i] + (double)e[i];
            tmp[2 * i + 1] = -INFINITY;
            continue;
        }
        for (size_t j = 0; j < L; j++)
            for (int r = 0; r < 2; r++) {
                double s = b2[2 * j + r] + (double)trans[j * L + i];

                if (s > t1) {
                    t2 = t1;
                    t1 = s;
                } else if (s > t2) {
                    t2 = s;
                }
            }
        tmp[2 * i] = t1 + (double)e[i];
        tmp[2 * i + 1] = t2 + (double)e[i];
    }
    memcpy(b2, tmp, 2 * L * sizeof(double));
}

static double
margin_end(const double *b2, size_t L, const float *crf)
{
    double t1 = -INFINITY, t2 = -INFINITY;

    for (size_t i = 0; i < L; i++)
        for (int r = 0; r < 2; r++) {
            double s = b2[2 * i + r] + (double)crf[L + i];

            if (s > t1) {
                t2 = t1;
                t1 = s;
            } else if (s > t2) {
                t2 = s;
            }
        }
    return t2 == -INFINITY ? INFINITY : t1 - t2;
}

double
tok_lac_viterbi_margin(const float *em, size_t n, size_t L, const float *crf)
{
    double *b2 = malloc(4 * L * sizeof(*b2)), m;

    if (b2 == NULL || n == 0) {
        free(b2);
        return NAN;
    }
    for (size_t k = 0; k < n; k++)
        margin_step(b2, b2 + 2 * L, em + k * L, L, crf, k == 0);
    m = margin_end(b2, L, crf);
    free(b2);
    return m;
}

/* ------------------------------------------------------------------------ */
/* Groups                                                                    */

void
tok_lac_run_passes(const struct tok_lac_kernels *K,
                   const struct tok_lac_net *net, struct tok_lac_work *w,
                   const struct tok_lac_group *g)
{
    for (int layer = 0; layer < 2; layer++)
        for (int dir = 0; dir < 2; dir++)
            run_pass(K, net, w, g, layer, dir);
}

void
tok_lac_decode(const struct tok_lac_kernels *K, const struct tok_lac_net *net,
               struct tok_lac_work *w, size_t at, size_t n, uint8_t *tags,
               double *margin)
{
    size_t L = net->L;
    const float *em = w->em + at * L;
    uint8_t *track = w->track + at * L;

    viterbi_forward(K, em, n, L, net->crf, NULL, w->alpha, w->alpha + L, track);
    viterbi_back(track, n, L, viterbi_last(w->alpha, L, net->crf), tags, false);
    if (margin)
        *margin = tok_lac_viterbi_margin(em, n, L, net->crf);
}

/* The long path: one text of n positions (ids[0..n)), in windows of W. */
struct long_run {
    const struct tok_lac_kernels *K;
    const struct tok_lac_net *net;
    struct tok_lac_work *w;
    const uint32_t *ids;
    uint8_t *edge; /* W zeros, but where the window holds a text's edge */
    size_t n, W, nb;
    float *ck[4]; /* states entering each window: l0 f, l0 b, l1 f, l1 b */
};

/* Run pass (layer, dir) over window b, its state in w->h from ck (D
 * floats; zeros where the text starts, or ends for dir 1, in the window),
 * leaving the end state in w->h. */
static void
pass_from(const struct long_run *r, size_t b, int layer, int dir,
          const float *ck)
{
    struct tok_lac_group g;
    size_t base = 0, len = (b + 1) * r->W <= r->n ? r->W : r->n - b * r->W;

    g.rows = 1;
    g.base = &base;
    g.len = &len;
    g.ids = r->ids + b * r->W;
    g.edge = r->edge;
    r->edge[0] = b == 0 ? TOK_LAC_START : 0;
    r->edge[len - 1] |= b == r->nb - 1 ? TOK_LAC_END : 0;
    memcpy(r->w->h, ck, r->net->D * sizeof(float));
    run_pass(r->K, r->net, r->w, &g, layer, dir);
    r->edge[0] = 0;
    r->edge[len - 1] = 0;
}

/* Layer 0's outputs of window b into w->l0, from the checkpoints. */
static void
layer0_window(const struct long_run *r, size_t b)
{
    size_t D = r->net->D;

    pass_from(r, b, 0, 0, r->ck[0] + b * D);
    pass_from(r, b, 0, 1, r->ck[1] + b * D);
}

/* The emissions of window b into w->em. */
static void
emissions_window(const struct long_run *r, size_t b)
{
    size_t D = r->net->D;

    layer0_window(r, b);
    pass_from(r, b, 1, 0, r->ck[2] + b * D);
    pass_from(r, b, 1, 1, r->ck[3] + b * D);
}

/* A sweep of pass (layer, dir) over every window in its direction,
 * recording the state entering each in ck[2 * layer + dir]. */
static void
sweep(struct long_run *r, int layer, int dir)
{
    size_t D = r->net->D;
    float *ck = r->ck[2 * layer + dir], *h = r->w->h;
    float *carry = ck + r->nb * D; /* one spare state */

    memset(carry, 0, D * sizeof(float));
    for (size_t s = 0; s < r->nb; s++) {
        size_t b = dir == 0 ? s : r->nb - 1 - s;

        memcpy(ck + b * D, carry, D * sizeof(float));
        if (layer == 1)
            layer0_window(r, b);
        pass_from(r, b, layer, dir, ck + b * D);
        memcpy(carry, h, D * sizeof(float));
    }
}

int
tok_lac_run_long(const struct tok_lac_kernels *K, const struct tok_lac_net *net,
                 struct tok_lac_work *w, const uint32_t *ids, size_t n,
                 size_t W, uint8_t *tags, double *margin)
{
    struct long_run r;
    size_t D = net->D, L = net->L;
    float *va = NULL, *alpha = w->alpha, *scratch = w->alpha + L;
    double *b2 = w->best2;
    size_t last = 0;
    int rc = 0;

    memset(&r, 0, sizeof(r));
    r.K = K;
    r.net = net;
    r.w = w;
    r.ids = ids;
    r.n = n;
    r.W = W;
    r.nb = (n + W - 1) / W;
    for (int k = 0; k < 4; k++)
        if ((r.ck[k] = malloc((r.nb + 1) * D * sizeof(float))) == NULL)
            rc = TOK_ENOMEM;
    if (rc == 0 && (va = malloc(r.nb * L * sizeof(float))) == NULL)
        rc = TOK_ENOMEM;
    if (rc == 0 && (r.edge = calloc(W, 1)) == NULL)
        rc = TOK_ENOMEM;
    if (rc < 0)
        goto out;
    sweep(&r, 0, 0);
    sweep(&r, 0, 1);
    sweep(&r, 1, 0);
    sweep(&r, 1, 1);
    /* Viterbi forward, window by window, keeping alpha at each edge. */
    for (size_t b = 0; b < r.nb; b++) {
        size_t len = (b + 1) * W <= n ? W : n - b * W;

        emissions_window(&r, b);
        if (b > 0)
            memcpy(va + b * L, alpha, L * sizeof(float));
        viterbi_forward(K, w->em, len, L, net->crf, b ? va + b * L : NULL,
                        alpha, scratch, w->track);
        if (margin)
            for (size_t k = 0; k < len; k++)
                margin_step(b2, b2 + 2 * L, w->em + k * L, L, net->crf,
                            b == 0 && k == 0);
    }
    last = viterbi_last(alpha, L, net->crf);
    if (margin)
        *margin = margin_end(b2, L, net->crf);
    /* Back, window by window from the last. */
    for (size_t b = r.nb; b-- > 0;) {
        size_t len = (b + 1) * W <= n ? W : n - b * W;

        emissions_window(&r, b);
        viterbi_forward(K, w->em, len, L, net->crf, b ? va + b * L : NULL,
                        alpha, scratch, w->track);
        last = viterbi_back(w->track, len, L, last, tags + b * W, b > 0);
    }
out:
    for (int k = 0; k < 4; k++)
        free(r.ck[k]);
    free(va);
    free(r.edge);
    return rc;
}
