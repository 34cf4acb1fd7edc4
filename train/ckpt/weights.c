/* SPDX-License-Identifier: MIT */
/* weights.c: model buffers <-> safetensors (see weights.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
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

int
weights_save_buffer(const struct param_table *table, const struct ops *ops,
                    const float *buf, const char *prefix, const char *path,
                    const struct st_tensor *extra, size_t n_extra,
                    const char *const *meta, struct st_err *err)
{
    size_t n = table->n + n_extra, plen = strlen(prefix);
    float *host = malloc(table->total * sizeof(float));
    float *tmp = malloc(table->total * sizeof(float));
    struct st_tensor *t = calloc(n ? n : 1, sizeof(*t));
    char *names = malloc(table->n * (PARAM_NAME_MAX + plen) + 1);
    int rc = -1;

    if (host == NULL || tmp == NULL || t == NULL || names == NULL) {
        set_err(err, "%s: out of memory", path);
        goto out;
    }
    if (ops->download(host, buf, table->total * sizeof(float)) < 0) {
        set_err(err, "%s: %s", path, ops->error());
        goto out;
    }
    for (size_t i = 0; i < table->n; i++) {
        const struct param_tensor *p = &table->t[i];
        char *name = names + i * (PARAM_NAME_MAX + plen);
        float *data = host + p->offset;

        snprintf(name, PARAM_NAME_MAX + plen, "%s%s", prefix, p->name);
        t[i].name = name;
        t[i].dtype = ST_F32;
        t[i].ndim = p->ndim;
        t[i].shape[0] = params_rows_saved(p); /* no vocabulary pad rows */
        t[i].shape[1] = p->shape[1];
        if (p->hf_transposed) {
            transpose(tmp + p->offset, data, p->shape[0], p->shape[1]);
            data = tmp + p->offset;
            t[i].shape[0] = p->shape[1];
            t[i].shape[1] = p->shape[0];
        }
        t[i].data = data;
        t[i].nbytes = (size_t)t[i].shape[0] *
                      (size_t)(p->ndim == 2 ? t[i].shape[1] : 1) *
                      sizeof(float);
    }
    for (size_t i = 0; i < n_extra; i++)
        t[table->n + i] = extra[i];
    rc = st_write(path, t, n, meta, err);
out:
    free(host);
    free(tmp);
    free(t);
    free(names);
    return rc;
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
weights_load_buffer(const struct param_table *table, const struct ops *ops,
                    float *buf, const char *prefix, const struct st_file *f,
                    size_t *n_unused, struct st_err *err)
{
    /* (calloc: the pads, and a vocabulary's pad rows, stay zero.) */
    float *host = calloc(table->total ? table->total : 1, sizeof(float));
    size_t plen = strlen(prefix), used = 0;
    char name[PARAM_NAME_MAX + 64];
    int rc = -1;

    if (host == NULL) {
        set_err(err, "weights: out of memory");
        return -1;
    }
    for (size_t i = 0; i < table->n; i++) {
        const struct param_tensor *p = &table->t[i];
        const struct st_tensor *s;
        int64_t rows = params_rows_saved(p);
        int64_t d0 = p->hf_transposed ? p->shape[1] : rows;
        int64_t d1 = p->hf_transposed ? rows : p->shape[1];

        if (plen >= 64) {
            set_err(err, "prefix %s too long", prefix);
            goto out;
        }
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
        if (p->hf_transposed)
            transpose(host + p->offset, s->data, d0, d1);
        else
            memcpy(host + p->offset, s->data,
                   (size_t)rows * (size_t)(p->ndim == 2 ? p->shape[1] : 1) *
                       sizeof(float));
        used++;
    }
    ops->upload(buf, host, table->total * sizeof(float));
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
    free(host);
    return rc;
}
