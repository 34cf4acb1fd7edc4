/* SPDX-License-Identifier: MIT */
/*
 * ops_compare_memory.c: the cases of memory (copy, zero, the uploads,
 * mem_info) and casts, and the out-of-memory case that runs last.
 * The tolerances' rules are at the top of ops_compare.h.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_compare.h"

/* ------------------------------------------------------------ memory */

/* copy, zero, upload and download at odd offsets and sizes (ops.h counts
 * them in bytes), pinned uploads on the copy queue ordered by
 * upload_wait, mem_info, queue: all exact. */
void
oc_case_memory(struct oc *c, const struct oc_model *m)
{
    const size_t n = 1000003; /* odd: no vector width divides it */
    unsigned char *src = oc_xmalloc(n), *out[OC_RUNS][4];
    size_t bad[4] = { 0 }, info_bad = 0;

    (void)m;
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(oc_next(c) & 0xff);
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);
        unsigned char *a = oc_put(c, src, n, "memory a");
        unsigned char *b = oc_blank(c, n, "memory b");
        unsigned char *pin = o->host_alloc(n);
        size_t fr = 0, tot = 0, peak = 0;

        if (pin == NULL) {
            fprintf(stderr, "ops_compare: host_alloc of %zu bytes failed\n", n);
            exit(1);
        }
        for (int k = 0; k < 4; k++)
            out[r][k] = oc_xmalloc(n);
        o->copy(b + 1, a + 3, n - 7);
        oc_sync(c, "copy");
        oc_get(c, out[r][0], b, n, "copy");
        o->zero(b + 5, 1001);
        oc_get(c, out[r][1], b, n, "zero");
        o->upload(b + 7, src + 11, n - 20);
        oc_get(c, out[r][2], b, n, "upload");
        memcpy(pin, src, n);
        o->upload_async(a + 2, pin + 1, n - 9);
        o->upload_wait();
        o->zero(b, n);
        o->copy(b, a, n); /* ordered after the upload by upload_wait */
        oc_sync(c, "upload_async");
        oc_get(c, out[r][3], b, n, "upload_async");
        o->host_release(pin);
        o->mem_info(&fr, &tot, &peak);
        if (!(tot > 0 && fr <= tot))
            info_bad++;
        if (strcmp(o->name, "cpu") == 0 && o->queue() != NULL)
            info_bad++; /* CUDA's may be any stream, the default's too */
        oc_pool_free(c);
    }
    /* What each must hold, from src alone. */
    for (int r = 0; r < OC_RUNS; r++) {
        unsigned char *w = oc_xmalloc(n);

        memset(w, 0, n);
        memcpy(w + 1, src + 3, n - 7);
        for (size_t i = 0; i < n; i++)
            bad[0] += out[r][0][i] != w[i];
        memset(w + 5, 0, 1001);
        for (size_t i = 0; i < n; i++)
            bad[1] += out[r][1][i] != w[i];
        memcpy(w + 7, src + 11, n - 20);
        for (size_t i = 0; i < n; i++)
            bad[2] += out[r][2][i] != w[i];
        memcpy(w, src, n);
        memcpy(w + 2, src + 1, n - 9);
        for (size_t i = 0; i < n; i++)
            bad[3] += out[r][3][i] != w[i];
        free(w);
        for (int k = 0; k < 4; k++)
            free(out[r][k]);
    }
    oc_check_count(c, "copy", "1000003 bytes, offsets", bad[0], n * 3,
                   "bytes differ");
    oc_check_count(c, "zero", "1001 of 1000003", bad[1], n * 3, "bytes differ");
    oc_check_count(c, "upload.download", "odd offsets", bad[2], n * 3,
                   "bytes differ");
    oc_check_count(c, "upload_async.upload_wait", "pinned, odd offsets", bad[3],
                   n * 3, "bytes differ");
    oc_check_count(c, "mem_info.queue", "free <= total; queue", info_bad,
                   2 * OC_RUNS, "wrong");
    free(src);
}

/* ------------------------------------------------------------ cast */

/* The special values every conversion must get right, then random ones
 * over the whole exponent range. */
static float *
cast_inputs(struct oc *c, size_t n)
{
    static const float special[] = {
        0.0f,
        -0.0f,
        1.0f,
        -1.0f,
        1.00390625f /* bf16 tie */,
        1.01171875f,
        65504.0f,
        65519.0f,
        65520.0f /* f16 overflow */,
        FLT_MAX,
        -FLT_MAX,
        1e-40f /* subnormal */,
        1.4e-45f,
        6e-8f,
        5.9604645e-08f /* f16 min subnormal */,
        2.9802322e-08f /* tie */,
        3.3961775e38f,
        1.1754944e-38f,
    };
    float *x = oc_xmalloc(n * sizeof(float));
    size_t k = sizeof(special) / sizeof(special[0]);

    for (size_t i = 0; i < n; i++) {
        if (i < k) {
            x[i] = special[i];
        } else if (i < k + 3) {
            x[i] = i == k ? INFINITY : i == k + 1 ? -INFINITY : NAN;
        } else {
            uint32_t u = (uint32_t)oc_next(c);

            memcpy(&x[i], &u, sizeof(u)); /* any bit pattern */
            if (isnan(x[i]))
                x[i] = 0.5f;
        }
    }
    return x;
}

static size_t
bits_differ16(const uint16_t *a, const uint16_t *b, size_t n, int bf16)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++) {
        float fa = bf16 ? oc_bf16_to_f32(a[i]) : oc_f16_to_f32(a[i]);
        float fb = bf16 ? oc_bf16_to_f32(b[i]) : oc_f16_to_f32(b[i]);

        if (isnan(fa) && isnan(fb))
            continue;
        bad += a[i] != b[i];
    }
    return bad;
}

static size_t
bits_differ32(const float *a, const float *b, size_t n)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; i++)
        if (!(isnan(a[i]) && isnan(b[i])))
            bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return bad;
}

/* cast: every side against the host's round to nearest even, bit for bit
 * (NaN for NaN). */
void
oc_case_cast(struct oc *c, const struct oc_model *m)
{
    const size_t n = 100003;
    float *x = cast_inputs(c, n);
    uint16_t *want16 = oc_xmalloc(n * 2), *got16 = oc_xmalloc(n * 2);
    uint16_t *in16 = oc_xmalloc(n * 2);
    float *want32 = oc_xmalloc(n * 4), *got32 = oc_xmalloc(n * 4);
    size_t bad[4] = { 0 };

    (void)m;
    for (int r = 0; r < OC_RUNS; r++) {
        const struct ops *o = oc_side(c, r);

        for (int bf = 0; bf < 2; bf++) {
            enum ops_dtype t = bf ? OPS_BF16 : OPS_F16;
            void *d32 = oc_put(c, x, n * 4, "cast in"), *d16;

            for (size_t i = 0; i < n; i++)
                want16[i] = bf ? oc_f32_to_bf16(x[i]) : oc_f32_to_f16(x[i]);
            d16 = oc_blank(c, n * 2, "cast out");
            o->cast(d16, t, d32, OPS_F32, n);
            oc_sync(c, "cast");
            oc_get(c, got16, d16, n * 2, "cast");
            bad[bf ? 0 : 2] += bits_differ16(got16, want16, n, bf);
            /* Back: every 16-bit pattern's float. */
            for (size_t i = 0; i < n; i++)
                in16[i] = (uint16_t)(i & 0xffff);
            for (size_t i = 0; i < n; i++)
                want32[i] =
                    bf ? oc_bf16_to_f32(in16[i]) : oc_f16_to_f32(in16[i]);
            o->upload(d16, in16, n * 2);
            o->cast(d32, OPS_F32, d16, t, n);
            oc_sync(c, "cast");
            oc_get(c, got32, d32, n * 4, "cast");
            bad[bf ? 1 : 3] += bits_differ32(got32, want32, n);
        }
        oc_pool_free(c);
    }
    oc_check_count(c, "cast.f32>bf16", "100003 + specials", bad[0], n * OC_RUNS,
                   "differ from RNE");
    oc_check_count(c, "cast.bf16>f32", "every pattern", bad[1], n * OC_RUNS,
                   "differ");
    oc_check_count(c, "cast.f32>f16", "100003 + specials", bad[2], n * OC_RUNS,
                   "differ from RNE");
    oc_check_count(c, "cast.f16>f32", "every pattern", bad[3], n * OC_RUNS,
                   "differ");
    free(x);
    free(want16);
    free(got16);
    free(in16);
    free(want32);
    free(got32);
}

/* ------------------------------------------------------------ OOM */

/* Out of memory: alloc returns NULL, error() names the buffer, and the
 * failure is sticky (sync() returns -1).  Last: the backend stays
 * failed. */
void
oc_case_oom(struct oc *c)
{
    const struct ops *o = c->test;
    const char *what = "an impossible 1 PiB buffer";
    void *p = o->alloc((size_t)1 << 50, what);
    const char *e = o->error();

    oc_check_count(c, "alloc.oom.null", "1 PiB", p != NULL, 1,
                   "allocations succeeded");
    if (p != NULL)
        o->release(p);
    oc_check_count(c, "alloc.oom.message", "names the buffer",
                   e == NULL || strstr(e, what) == NULL, 1,
                   "messages without the buffer's name");
    if (!c->quiet)
        printf("     message: %s\n", e != NULL ? e : "(null)");
    oc_check_count(c, "alloc.oom.sticky", "sync() after", o->sync() != -1, 1,
                   "syncs returned 0");
}
