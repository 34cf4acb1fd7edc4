/* SPDX-License-Identifier: MIT */
/*
 * test_comm_nccl.c: the NCCL communicator (train/comm_nccl.c) on GPU
 * buffers, one rank per GPU under mpirun (`make test-gpu`): every
 * collective of comm.h against the values computed on the host, the
 * groups of a data-parallel layout, the bytes counted as sent.  Works on
 * one GPU (the world is then one rank: the collectives must still leave
 * the data right) and on several.  Ends with "test_comm_nccl: N passed,
 * N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "comm.h"

static int passed, failed, world_rank;

static void
check(int ok, const char *what)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "rank %d: FAIL %s\n", world_rank, what);
    }
}

static void *
dev(size_t bytes)
{
    void *p = NULL;

    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", bytes);
        exit(1);
    }
    return p;
}

static void
put(void *d, const void *h, size_t bytes)
{
    if (cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        exit(1);
}

static void
get(void *h, const void *d, size_t bytes)
{
    if (cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        exit(1);
}

/* Values exact in float: small integers. */
static float
val(int rank, size_t i)
{
    return (float)(rank + 1) + (float)(i % 7);
}

int
main(int argc, char **argv)
{
    struct comm_layout l = { 1, 1, 0, 1 };
    char err[512];
    struct comm *c = comm_nccl(&argc, &argv, &l, 60, err, sizeof(err));
    size_t n = 1000003, m = 1000;
    float *h, *d;
    int N, r, ok;

    if (c == NULL) {
        fprintf(stderr, "test_comm_nccl: %s\n", err);
        return 1;
    }
    N = c->world;
    r = world_rank = c->rank;
    check(c->group_size(c, COMM_DP) == N && c->group_size(c, COMM_TP) == 1 &&
              c->group_rank(c, COMM_DP) == r,
          "data-parallel layout groups");
    h = malloc(n * sizeof(float));
    d = dev(n * sizeof(float));

    /* all-reduce, blocking, then two nonblocking ones */
    for (size_t i = 0; i < n; i++)
        h[i] = val(r, i);
    put(d, h, n * sizeof(float));
    c->sent[COMM_DP] = 0;
    check(c->all_reduce_sum(c, d, n, COMM_F32, COMM_DP) == 0, c->error);
    check(fabs(c->sent[COMM_DP] - 2.0 * (N - 1) / N * n * 4) < 1e-6,
          "all-reduce bytes counted as a ring sends them");
    get(h, d, n * sizeof(float));
    ok = 1;
    for (size_t i = 0; i < n; i++) {
        double want = 0;

        for (int k = 0; k < N; k++)
            want += val(k, i);
        ok &= h[i] == (float)want;
    }
    check(ok, "all-reduce (f32) sums every rank's values");
    for (size_t i = 0; i < n; i++)
        h[i] = val(r, i);
    put(d, h, n * sizeof(float));
    check(c->all_reduce_sum_start(c, d, n / 2, COMM_F32, COMM_DP) == 0 &&
              c->all_reduce_sum_start(c, d + n / 2, n - n / 2, COMM_F32,
                                      COMM_DP) == 0 &&
              c->test_all(c) == 0 && c->wait_all(c) == 0,
          "nonblocking all-reduce in two pieces");
    get(h, d, n * sizeof(float));
    ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= h[i] == (float)(N * (N + 1) / 2 + N * (int)(i % 7));
    check(ok, "nonblocking all-reduce sums every rank's values");

    /* ranges of unequal lengths: reduce-scatter, then all-gather */
    {
        size_t *off = calloc((size_t)N + 1, sizeof(*off));

        for (int k = 0; k <= N; k++)
            off[k] = m * (size_t)k * (size_t)k / ((size_t)N * (size_t)N);
        for (size_t i = 0; i < m; i++)
            h[i] = val(r, i);
        put(d, h, m * sizeof(float));
        check(c->reduce_scatter_ranges(c, d, off, COMM_F32, COMM_DP) == 0,
              c->error);
        get(h, d, m * sizeof(float));
        ok = 1;
        for (size_t i = off[r]; i < off[r + 1]; i++)
            ok &= h[i] == (float)(N * (N + 1) / 2 + N * (int)(i % 7));
        check(ok, "reduce-scatter of ranges: this rank's range is the sum");
        for (size_t i = off[r]; i < off[r + 1]; i++)
            h[i] = (float)(1000 * r) + (float)i;
        put(d, h, m * sizeof(float));
        check(c->all_gather_ranges(c, d, off, COMM_F32, COMM_DP) == 0,
              c->error);
        get(h, d, m * sizeof(float));
        ok = 1;
        for (int k = 0; k < N; k++)
            for (size_t i = off[k]; i < off[k + 1]; i++)
                ok &= h[i] == (float)(1000 * k) + (float)i;
        check(ok, "all-gather of ranges: every rank's range everywhere");
        free(off);
    }

    /* broadcast, and equal-count all-gather */
    {
        double x[3] = { 1.5 + r, 2.5, 3.5 }, *dx = dev(sizeof(x));

        put(dx, x, sizeof(x));
        check(c->broadcast(c, dx, sizeof(x), 0, COMM_WORLD) == 0, c->error);
        get(x, dx, sizeof(x));
        check(x[0] == 1.5 && x[2] == 3.5, "broadcast from rank 0");
        cudaFree(dx);
        for (size_t i = 0; i < m; i++)
            h[i] = (float)r;
        put(d + (size_t)r * m, h, m * sizeof(float));
        check(c->all_gather(c, d, d + (size_t)r * m, m, COMM_F32, COMM_WORLD) ==
                  0,
              c->error);
        get(h, d, (size_t)N * m * sizeof(float));
        ok = 1;
        for (int k = 0; k < N; k++)
            ok &= h[(size_t)k * m] == (float)k &&
                  h[(size_t)k * m + m - 1] == (float)k;
        check(ok, "all-gather in place");
    }

    /* a ring of sends (several GPUs only) */
    if (N > 1) {
        float *s = dev(m * sizeof(float)), *q = dev(m * sizeof(float));

        for (size_t i = 0; i < m; i++)
            h[i] = (float)r;
        put(s, h, m * sizeof(float));
        /* Even ranks send first: blocking point-to-point must pair up. */
        if (r % 2 == 0)
            check(c->send(c, s, m * 4, (r + 1) % N, COMM_WORLD) == 0 &&
                      c->recv(c, q, m * 4, (r + N - 1) % N, COMM_WORLD) == 0,
                  c->error);
        else
            check(c->recv(c, q, m * 4, (r + N - 1) % N, COMM_WORLD) == 0 &&
                      c->send(c, s, m * 4, (r + 1) % N, COMM_WORLD) == 0,
                  c->error);
        get(h, q, m * sizeof(float));
        check(h[0] == (float)((r + N - 1) % N), "send and receive in a ring");
        cudaFree(s);
        cudaFree(q);
    }
    check(c->barrier(c, COMM_WORLD) == 0, "barrier");
    cudaFree(d);
    free(h);
    printf("test_comm_nccl (rank %d of %d): %d passed, %d failed\n", r, N,
           passed, failed);
    c->destroy(c);
    return failed ? 1 : 0;
}
