/* SPDX-License-Identifier: MIT */
/* weights.c: model tensors <-> safetensors, one at a time (see weights.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "util/tr_util.h"
#include "weights.h"

/* dst[c][r] = src[r][c] for a rows x cols matrix. */
static void
transpose(float *dst, const float *src, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
}

static void __attribute__((format(printf, 2, 3)))
set_err(struct st_err *err, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
}

/* The elements of t a file holds: its pad rows of the vocabulary left
 * out (params_rows_saved()). */
static size_t
saved_numel(const struct param_tensor *t)
{
    return (size_t)params_rows_saved(t) *
           (size_t)(t->ndim == 2 ? t->shape[1] : 1);
}

int
weights_save(const char *path, const struct param_table *table,
             const char *const *prefixes, const int *bufs, int n_bufs,
             weights_get_fn get, void *ctx, const struct st_tensor *extra,
             size_t n_extra, const char *const *meta, int write,
             struct st_err *err)
{
    size_t n = table->n * (size_t)(n_bufs > 0 ? n_bufs : 0), plen = 0;
    size_t most = 0, most_t = 0, stride;
    struct st_tensor *t = NULL;
    struct st_writer *w = NULL;
    float *host = NULL, *trans = NULL;
    char *names = NULL;
    int rc = -1;

    if (!write) { /* the same get() calls, for the writer's gathers */
        for (int k = 0; k < n_bufs; k++)
            for (size_t i = 0; i < table->n; i++)
                if (get(ctx, bufs[k], &table->t[i], NULL, err) < 0)
                    return -1;
        return 0;
    }
    for (int k = 0; k < n_bufs; k++)
        if (strlen(prefixes[k]) > plen)
            plen = strlen(prefixes[k]);
    for (size_t i = 0; i < table->n; i++) {
        const struct param_tensor *p = &table->t[i];

        most = p->numel > most ? p->numel : most;
        if (p->hf_transposed && p->numel > most_t)
            most_t = p->numel;
    }
    stride = PARAM_NAME_MAX + plen;
    t = calloc(n + n_extra + 1, sizeof(*t));
    names = malloc(n * stride + 1);
    host = tr_stage_alloc((most ? most : 1) * sizeof(float));
    trans = most_t ? tr_stage_alloc(most_t * sizeof(float)) : NULL;
    if (t == NULL || names == NULL || host == NULL ||
        (most_t && trans == NULL)) {
        set_err(err, "%s: out of memory", path);
        goto out;
    }
    for (size_t j = 0; j < n; j++) {
        const struct param_tensor *p = &table->t[j % table->n];
        int tr = p->hf_transposed;
        int64_t rows = params_rows_saved(p); /* no vocabulary pad rows */

        snprintf(names + j * stride, stride, "%s%s", prefixes[j / table->n],
                 p->name);
        t[j].name = names + j * stride;
        t[j].dtype = ST_F32;
        t[j].ndim = p->ndim;
        t[j].shape[0] = tr ? p->shape[1] : rows;
        t[j].shape[1] = tr ? rows : p->shape[1];
        t[j].nbytes = saved_numel(p) * sizeof(float);
    }
    for (size_t j = 0; j < n_extra; j++)
        t[n + j] = extra[j];
    if (st_writer_open(&w, path, t, n + n_extra, meta, err) < 0)
        goto out;
    for (size_t j = 0; j < n; j++) {
        const struct param_tensor *p = &table->t[j % table->n];
        const float *data = host;

        if (get(ctx, bufs[j / table->n], p, host, err) < 0)
            goto out;
        if (p->hf_transposed) {
            transpose(trans, host, p->shape[0], p->shape[1]);
            data = trans;
        }
        /* (A vocabulary's pad rows come last: left out.) */
        if (st_writer_put(w, data, saved_numel(p) * sizeof(float), err) < 0)
            goto out;
    }
    for (size_t j = 0; j < n_extra; j++)
        if (st_writer_put(w, extra[j].data, extra[j].nbytes, err) < 0)
            goto out;
    rc = st_writer_close(w, err);
    w = NULL;
out:
    st_writer_abort(w);
    free(t);
    free(names);
    tr_stage_free(host);
    tr_stage_free(trans);
    return rc;
}

/* A flat buffer in backend memory as a source and a sink of tensors. */
struct flat {
    const struct ops *ops;
    float *buf;
};

static int
flat_get(void *ctx, int b, const struct param_tensor *t, float *host,
         struct st_err *err)
{
    const struct flat *f = ctx;

    (void)b;
    if (host != NULL && f->ops->download(host, f->buf + t->offset,
                                         t->numel * sizeof(float)) < 0) {
        set_err(err, "%s", f->ops->error());
        return -1;
    }
    return 0;
}

static int
flat_put(void *ctx, int b, const struct param_tensor *t, const float *host,
         struct st_err *err)
{
    const struct flat *f = ctx;

    (void)b;
    (void)err;
    f->ops->upload(f->buf + t->offset, host, t->numel * sizeof(float));
    return 0;
}

int
weights_save_buffer(const struct param_table *table, const struct ops *ops,
                    const float *buf, const char *prefix, const char *path,
                    const struct st_tensor *extra, size_t n_extra,
                    const char *const *meta, struct st_err *err)
{
    struct flat f = { ops, (float *)buf };
    int b = 0;

    return weights_save(path, table, &prefix, &b, 1, flat_get, &f, extra,
                        n_extra, meta, 1, err);
}

/* Names a checkpoint may hold that are no tensor of ours: tied copies and
 * non-persistent buffers. */
static int
ignorable(const char *name)
{
    static const char *const suffix[] = {
        "cls.predictions.decoder.weight",
        "cls.predictions.decoder.bias",
        "lm_head.weight",
        "position_ids",
        ".attn.bias",
        ".attn.masked_bias",
    };
    size_t len = strlen(name);

    for (size_t i = 0; i < sizeof(suffix) / sizeof(*suffix); i++) {
        size_t s = strlen(suffix[i]);

        if (len >= s && strcmp(name + len - s, suffix[i]) == 0)
            return 1;
    }
    return 0;
}

int
weights_load(const struct st_file *f, const struct param_table *table,
             const char *prefix, int b, weights_put_fn put, void *ctx,
             size_t *n_unused, struct st_err *err)
{
    size_t plen = strlen(prefix), used = 0, most_t = 0;
    char name[PARAM_NAME_MAX + 64];
    float *trans = NULL;
    int rc = -1;

    if (plen >= 64) {
        set_err(err, "prefix %s too long", prefix);
        return -1;
    }
    /* One host buffer of a tensor, for those the file holds otherwise: a
     * transposed one, and a vocabulary without its pad rows. */
    for (size_t i = 0; i < table->n; i++) {
        const struct param_tensor *p = &table->t[i];

        if ((p->hf_transposed || saved_numel(p) < p->numel) &&
            p->numel > most_t)
            most_t = p->numel;
    }
    if (most_t && (trans = tr_stage_alloc(most_t * sizeof(float))) == NULL) {
        set_err(err, "weights: out of memory");
        return -1;
    }
    for (size_t i = 0; i < table->n; i++) {
        const struct param_tensor *p = &table->t[i];
        const struct st_tensor *s;
        const float *data;
        int64_t rows = params_rows_saved(p);
        int64_t d0 = p->hf_transposed ? p->shape[1] : rows;
        int64_t d1 = p->hf_transposed ? rows : p->shape[1];

        snprintf(name, sizeof(name), "%s%s", prefix, p->name);
        s = st_find(f, name);
        if (s == NULL && strncmp(p->name, "transformer.", 12) == 0) {
            snprintf(name, sizeof(name), "%s%s", prefix, p->name + 12);
            s = st_find(f, name);
        }
        if (s == NULL) {
            set_err(err, "tensor '%s%s' is missing", prefix, p->name);
            goto out;
        }
        if (s->dtype != ST_F32 || s->ndim != p->ndim || s->shape[0] != d0 ||
            (p->ndim == 2 && s->shape[1] != d1)) {
            char want[64];

            if (p->ndim == 2)
                snprintf(want, sizeof(want), "F32 [%lld, %lld]", (long long)d0,
                         (long long)d1);
            else
                snprintf(want, sizeof(want), "F32 [%lld]", (long long)d0);
            set_err(err, "tensor '%s' has the wrong dtype or shape (want %s)",
                    name, want);
            goto out;
        }
        data = s->data;
        if (p->hf_transposed) {
            transpose(trans, s->data, d0, d1);
            data = trans;
        } else if (saved_numel(p) < p->numel) { /* the pad rows zero */
            memcpy(trans, s->data, saved_numel(p) * sizeof(float));
            memset(trans + saved_numel(p), 0,
                   (p->numel - saved_numel(p)) * sizeof(float));
            data = trans;
        }
        if (put(ctx, b, p, data, err) < 0)
            goto out;
        used++;
    }
    if (n_unused) {
        size_t ign = 0, n = st_count(f);

        for (size_t i = 0; i < n; i++) {
            const char *nm = st_at(f, i)->name;

            if (strncmp(nm, prefix, plen) == 0 && ignorable(nm + plen))
                ign++;
            else if (strncmp(nm, prefix, plen) != 0)
                ign++; /* another prefix: not ours to count */
        }
        *n_unused = n - ign - used;
    }
    rc = 0;
out:
    tr_stage_free(trans);
    return rc;
}

int
weights_load_buffer(const struct param_table *table, const struct ops *ops,
                    float *buf, const char *prefix, const struct st_file *f,
                    size_t *n_unused, struct st_err *err)
{
    struct flat fl = { ops, buf };

    return weights_load(f, table, prefix, 0, flat_put, &fl, n_unused, err);
}
