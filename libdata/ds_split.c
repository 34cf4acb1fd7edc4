/* SPDX-License-Identifier: MIT */
/*
 * ds_split.c: the train/valid/test document split of --split
 * (ernie-data.md 7.2), as PaddleNLP's get_train_valid_test_split_: Python
 * float() per weight, Python round() (half to even) per boundary.
 */
#include <math.h>
#include <stdlib.h>

#include "ds_int.h"

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

/* Python float() of s[0..len): surrounding white space allowed. */
static int
parse_weight(const char *s, size_t len, double *out, const char *all,
             struct ds_err *err)
{
    char buf[64], *end;

    while (len > 0 && is_space(*s))
        s++, len--;
    while (len > 0 && is_space(s[len - 1]))
        len--;
    if (len == 0 || len >= sizeof(buf))
        return ds_err_set(err, DS_EINVAL,
                          "split '%s': a weight is empty or too long", all);
    memcpy(buf, s, len);
    buf[len] = '\0';

    *out = strtod(buf, &end);
    if (*end != '\0' || !isfinite(*out))
        return ds_err_set(err, DS_EINVAL,
                          "split '%s': '%s' is not a finite number", all, buf);
    if (*out < 0)
        return ds_err_set(err, DS_EINVAL, "split '%s': weight %s is negative",
                          all, buf);
    return 0;
}

int
ds_split_indices(const char *s, int64_t n_docs, int64_t out[4],
                 struct ds_err *err)
{
    double w[3] = { 0, 0, 0 }, sum = 0;
    size_t n = 0;
    char sep = strchr(s, ',') ? ',' : strchr(s, '/') ? '/' : '\0';
    const char *p = s;
    int64_t diff;

    if (n_docs < 0)
        return ds_err_set(err, DS_EINVAL, "split: %lld documents",
                          (long long)n_docs);
    for (;;) {
        const char *q = sep ? strchr(p, sep) : NULL;
        size_t len = q ? (size_t)(q - p) : strlen(p);
        double v = 0;
        int rc = parse_weight(p, len, &v, s, err);

        if (rc < 0)
            return rc;
        if (n < 3)
            w[n++] = v; /* Python keeps splits[:3] */
        if (q == NULL)
            break;
        p = q + 1;
    }
    for (int i = 0; i < 3; i++)
        sum += w[i];
    if (!(sum > 0))
        return ds_err_set(err, DS_EINVAL,
                          "split '%s': the weights sum to 0; give at least "
                          "one positive weight, e.g. 949,50,1",
                          s);
    out[0] = 0;
    for (int i = 0; i < 3; i++) {
        /* nearbyint in the default rounding mode is Python's round(). */
        double f = w[i] / sum;

        out[i + 1] = out[i] + (int64_t)nearbyint(f * (double)n_docs);
    }
    diff = out[3] - n_docs;
    for (int i = 1; i < 4; i++)
        out[i] -= diff;
    for (int i = 1; i < 4; i++)
        if (out[i] < 0)
            return ds_err_set(err, DS_ERANGE,
                              "split '%s' of %lld documents: boundary %d "
                              "comes out as %lld",
                              s, (long long)n_docs, i, (long long)out[i]);
    return 0;
}
