/* SPDX-License-Identifier: MIT */
/*
 * matmul.cu: the linear layer on cuBLASLt (ops.h linear_fwd,
 * linear_act_fwd, linear_bwd).  Row-major tensors are handed to cuBLASLt
 * as their column-major transposes (cuda_gemm_shape() in cuda_host.c,
 * unit-tested).  Compute type 32F (TF32 only when the request allows it,
 * in fp32), alpha 1; the input gradient accumulates in the compute dtype
 * (beta 1), the weight gradient in fp32 (A and B in the compute dtype, C
 * and D float: a combination cuBLASLt supports for bf16 and f16).
 *
 * Determinism: the algorithm of a GEMM is chosen once per shape, dtypes,
 * epilogue and operand alignment (cublasLtMatmulAlgoGetHeuristic, its
 * first answer) and cached, so every call with that key runs the same
 * algorithm in the same fixed workspace: the same bits run to run.  The
 * bias gradient is a column sum in double over fixed chunks of rows, the
 * chunks then added in order (no atomics), as the CPU's in double.
 *
 * Epilogues: BIAS where there is a bias.  GELU_AUX_BIAS (which also
 * stores the pre-activation for backward) computes GELU's tanh
 * approximation (cuBLASLt's documentation does not give the formula;
 * llm.c and Transformer Engine use it as GPT-2's gelu), so it serves
 * OPS_ACT_GELU_TANH, and only in bf16/f16, where even the largest gap
 * between the two GELUs (4e-4) is under the dtype's rounding.  In fp32
 * the activation runs as its own kernel with the CPU's formula (ops are
 * compared with the CPU's there), as do exact GELU (erf), ReLU and tanh
 * in every dtype.
 */
#include <string.h>

#include "cuda_common.cuh"

/* Rows per partial sum of the bias gradient. */
#define COLSUM_ROWS 128

static cudaDataType
lt_type(enum ops_dtype dt)
{
    switch (dt) {
    case OPS_BF16:
        return CUDA_R_16BF;
    case OPS_F16:
        return CUDA_R_16F;
    default:
        return CUDA_R_32F;
    }
}

/* One GEMM of a linear layer (see cuda_host.h): the buffers by role. */
struct gemm_call {
    enum cuda_gemm_kind kind;
    int M, K, N;
    const void *x, *w, *dy; /* the operands the kind uses */
    void *d;                /* C and D */
    cudaDataType ab_type, cd_type;
    float beta;
    cublasLtEpilogue_t epilogue;
    const void *bias; /* BIAS, GELU_AUX_BIAS */
    void *aux;        /* GELU_AUX(_BIAS): the pre-activation, ld = rows */
};

static const void *
operand(const struct gemm_call *g, enum cuda_gemm_operand o)
{
    switch (o) {
    case CUDA_OPND_X:
        return g->x;
    case CUDA_OPND_W:
        return g->w;
    default:
        return g->dy;
    }
}

/* The cached algorithm of this call's key, found by the heuristic the
 * first time; NULL after recording a failure. */
static const struct cuda_gemm_entry *
pick_algo(const struct cuda_gemm_key *key, cublasLtMatmulDesc_t op,
          cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
          cublasLtMatrixLayout_t lc, const unsigned align[4])
{
    const struct cuda_gemm_entry *e = cuda_gemm_cache_find(&cuda_g.gemms, key);
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    uint64_t ws = cuda_g.lt_ws_bytes;
    int found = 0;

    static_assert(sizeof(cublasLtMatmulAlgo_t) <= CUDA_GEMM_ALGO_BYTES,
                  "cuda_gemm_entry holds a cuBLASLt algorithm");
    if (e != NULL)
        return e;
    memset(&res, 0, sizeof(res));
    if (!CUBLAS_OK(cublasLtMatmulPreferenceCreate(&pref)))
        return NULL;
    if (CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws))) &&
        CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0],
            sizeof(align[0]))) &&
        CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1],
            sizeof(align[1]))) &&
        CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2],
            sizeof(align[2]))) &&
        CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[3],
            sizeof(align[3]))) &&
        CUBLAS_OK(cublasLtMatmulAlgoGetHeuristic(cuda_g.lt, op, la, lb, lc, lc,
                                                 pref, 1, &res, &found))) {
        if (found < 1 || res.state != CUBLAS_STATUS_SUCCESS)
            cuda_bad_arg("cuBLASLt has no algorithm for a GEMM of m = %d, n "
                         "= %d, k = %d (kind %d, epilogue %d, alignment code "
                         "%#x)",
                         key->m, key->n, key->k, key->kind, key->epilogue,
                         (unsigned)key->align);
        else if (cuda_gemm_cache_put(&cuda_g.gemms, key, &res.algo,
                                     res.workspaceSize) != 0)
            cuda_status_fail(&cuda_g.st, "out of host memory for the GEMM "
                                         "algorithm cache");
        else
            e = cuda_gemm_cache_find(&cuda_g.gemms, key);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    return e;
}

/* The alignment of the epilogue's vectors (bias, aux), which cuBLASLt's
 * choice depends on too: the smaller of the two. */
static unsigned
epilogue_align(const struct gemm_call *g)
{
    unsigned a = 256, b;

    if (g->bias != NULL && (b = cuda_ptr_align(g->bias)) < a)
        a = b;
    if (g->aux != NULL && (b = cuda_ptr_align(g->aux)) < a)
        a = b;
    return a;
}

/* Queues one GEMM; 0, or -1 after recording the failure. */
static int
gemm(const struct gemm_call *g)
{
    struct cuda_gemm_shape s;
    cublasComputeType_t compute =
        cuda_g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    int32_t ta, tb;
    uint32_t epi = (uint32_t)g->epilogue;
    const void *a, *b;
    unsigned align[4];
    struct cuda_gemm_key key;
    const struct cuda_gemm_entry *e;
    float alpha = 1.0f;
    int ok;

    cuda_gemm_shape(g->kind, g->M, g->K, g->N, &s);
    a = operand(g, s.a_is);
    b = operand(g, s.b_is);
    ta = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    tb = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    align[0] = cuda_ptr_align(a);
    align[1] = cuda_ptr_align(b);
    align[2] = align[3] = cuda_ptr_align(g->d);
    memset(&key, 0, sizeof(key));
    key.kind = g->kind;
    key.m = (int32_t)s.m;
    key.n = (int32_t)s.n;
    key.k = (int32_t)s.k;
    key.dtype_ab = g->ab_type;
    key.dtype_cd = g->cd_type;
    key.compute = compute;
    key.epilogue = (int32_t)epi;
    key.beta_one = g->beta != 0.0f;
    key.align = cuda_gemm_align_code(align[0], align[1], align[2], align[3],
                                     epilogue_align(g));

    ok = CUBLAS_OK(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F)) &&
         CUBLAS_OK(cublasLtMatmulDescSetAttribute(
             op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta))) &&
         CUBLAS_OK(cublasLtMatmulDescSetAttribute(
             op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb))) &&
         CUBLAS_OK(cublasLtMatmulDescSetAttribute(
             op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (ok && g->bias != NULL)
        ok = CUBLAS_OK(cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias, sizeof(g->bias)));
    if (ok && g->aux != NULL) {
        int64_t ld = s.ldd;

        ok = CUBLAS_OK(cublasLtMatmulDescSetAttribute(
                 op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g->aux,
                 sizeof(g->aux))) &&
             CUBLAS_OK(cublasLtMatmulDescSetAttribute(
                 op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    }
    ok = ok &&
         CUBLAS_OK(cublasLtMatrixLayoutCreate(
             &la, g->ab_type, (uint64_t)s.a_rows, (uint64_t)s.a_cols, s.lda)) &&
         CUBLAS_OK(cublasLtMatrixLayoutCreate(
             &lb, g->ab_type, (uint64_t)s.b_rows, (uint64_t)s.b_cols, s.ldb)) &&
         CUBLAS_OK(cublasLtMatrixLayoutCreate(&lc, g->cd_type, (uint64_t)s.m,
                                              (uint64_t)s.n, s.ldd));
    if (ok && (e = pick_algo(&key, op, la, lb, lc, align)) != NULL)
        CUBLAS_OK(
            cublasLtMatmul(cuda_g.lt, op, &alpha, a, la, b, lb, &g->beta, g->d,
                           lc, g->d, lc, (const cublasLtMatmulAlgo_t *)e->algo,
                           cuda_g.lt_ws, cuda_g.lt_ws_bytes, cuda_g.stream));
    if (lc != NULL)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb != NULL)
        cublasLtMatrixLayoutDestroy(lb);
    if (la != NULL)
        cublasLtMatrixLayoutDestroy(la);
    if (op != NULL)
        cublasLtMatmulDescDestroy(op);
    return cuda_g.st.failed ? -1 : 0;
}

void
cuda_matmul_release(void)
{
    cuda_gemm_cache_release(&cuda_g.gemms);
}

/* ------------------------------------------------------------ ops */

static int
check_ptrs(const void *y, const void *x, const void *w)
{
    if (y == NULL || x == NULL || w == NULL)
        return cuda_bad_arg("%s is NULL", y == NULL   ? "the output"
                                          : x == NULL ? "x"
                                                      : "w");
    return 0;
}

void
cuda_linear_fwd(void *y, const void *x, const void *w, const void *b, int M,
                int K, int N)
{
    struct gemm_call g;

    if (cuda_op_begin("linear_fwd") != 0 ||
        cuda_check_linear(&cuda_g.st, "linear_fwd", M, K, N) != 0 ||
        check_ptrs(y, x, w) != 0 || M == 0 || N == 0)
        return;
    memset(&g, 0, sizeof(g));
    g.kind = CUDA_GEMM_FWD;
    g.M = M, g.K = K, g.N = N;
    g.x = x, g.w = w, g.d = y;
    g.ab_type = g.cd_type = lt_type(cuda_g.dtype);
    g.epilogue = b != NULL ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    g.bias = b;
    gemm(&g);
}

void
cuda_linear_act_fwd(void *y, void *pre, const void *x, const void *w,
                    const void *b, int M, int K, int N, enum ops_act act)
{
    struct gemm_call g;

    if (cuda_op_begin("linear_act_fwd") != 0 ||
        cuda_check_linear(&cuda_g.st, "linear_act_fwd", M, K, N) != 0 ||
        check_ptrs(y, x, w) != 0 || M == 0 || N == 0)
        return;
    if (pre == NULL) {
        cuda_bad_arg("pre is NULL");
        return;
    }
    if (act != OPS_ACT_GELU && act != OPS_ACT_GELU_TANH &&
        act != OPS_ACT_RELU && act != OPS_ACT_TANH) {
        cuda_bad_arg("unknown activation %d", (int)act);
        return;
    }
    memset(&g, 0, sizeof(g));
    g.kind = CUDA_GEMM_FWD;
    g.M = M, g.K = K, g.N = N;
    g.x = x, g.w = w;
    g.ab_type = g.cd_type = lt_type(cuda_g.dtype);
    g.bias = b;
    /* The aux matrix's leading dimension (N) must be a multiple of 8. */
    if (act == OPS_ACT_GELU_TANH && cuda_g.dtype != OPS_F32 && pre != y &&
        N % 8 == 0) {
        g.d = y;
        g.aux = pre;
        g.epilogue = b != NULL ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                               : CUBLASLT_EPILOGUE_GELU_AUX;
        gemm(&g);
        return;
    }
    g.d = pre;
    g.epilogue = b != NULL ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (gemm(&g) == 0)
        cuda_act_launch(y, pre, (size_t)M * (size_t)N, act);
}

/* part[c, j] = the sum, in double, of dy[i, j] over the rows i of chunk c
 * (COLSUM_ROWS of them); grid (column blocks, chunks). */
template <typename T>
__global__ void
colsum_partial(double *part, const T *dy, int M, int N)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int r0 = blockIdx.y * COLSUM_ROWS;
    int r1 = min(M, r0 + COLSUM_ROWS);
    double acc = 0.0;

    if (j >= N)
        return;
    for (int r = r0; r < r1; r++)
        acc += (double)to_float(dy[(size_t)r * N + j]);
    part[(size_t)blockIdx.y * N + j] = acc;
}

/* db[j] += the chunks' sums, added in chunk order. */
__global__ void
colsum_finish(float *db, const double *part, int N, int n_chunks)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;

    if (j >= N)
        return;
    for (int c = 0; c < n_chunks; c++)
        acc += part[(size_t)c * N + j];
    db[j] += (float)acc;
}

void
cuda_linear_bwd(void *dx, float *dw, float *db, const void *dy, const void *x,
                const void *w, int M, int K, int N)
{
    struct gemm_call g;

    if (cuda_op_begin("linear_bwd") != 0 ||
        cuda_check_linear(&cuda_g.st, "linear_bwd", M, K, N) != 0 || M == 0 ||
        N == 0)
        return;
    if (dy == NULL || (dx != NULL && w == NULL) || (dw != NULL && x == NULL)) {
        cuda_bad_arg("%s is NULL", dy == NULL                ? "dy"
                                   : dx != NULL && w == NULL ? "w"
                                                             : "x");
        return;
    }
    memset(&g, 0, sizeof(g));
    g.M = M, g.K = K, g.N = N;
    g.x = x, g.w = w, g.dy = dy;
    g.ab_type = lt_type(cuda_g.dtype);
    g.beta = 1.0f;
    g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (dx != NULL) {
        g.kind = CUDA_GEMM_DX;
        g.d = dx;
        g.cd_type = g.ab_type;
        if (gemm(&g) != 0)
            return;
    }
    if (dw != NULL) {
        g.kind = CUDA_GEMM_DW;
        g.d = dw;
        g.cd_type = CUDA_R_32F;
        if (gemm(&g) != 0)
            return;
    }
    if (db != NULL) {
        int n_chunks = (M + COLSUM_ROWS - 1) / COLSUM_ROWS;
        double *part = (double *)cuda_scratch(
            (size_t)n_chunks * (size_t)N * sizeof(double), "bias gradient");
        dim3 grid((unsigned)((N + THREADS - 1) / THREADS), (unsigned)n_chunks);

        if (part == NULL)
            return;
        if (n_chunks > 65535) {
            cuda_bad_arg("M = %d rows (at most %d)", M, 65535 * COLSUM_ROWS);
            return;
        }
        DISPATCH_DTYPE(cuda_g.dtype, T,
                       colsum_partial<T><<<grid, THREADS, 0, cuda_g.stream>>>(
                           part, (const T *)dy, M, N));
        if (!LAUNCH_OK())
            return;
        colsum_finish<<<grid.x, THREADS, 0, cuda_g.stream>>>(db, part, N,
                                                             n_chunks);
        LAUNCH_OK();
    }
}
