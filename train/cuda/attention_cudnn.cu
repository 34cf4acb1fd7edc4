/* SPDX-License-Identifier: MIT */
/*
 * attention_cudnn.cu: cuDNN 9's fused flash attention (SDPA) for bf16/f16,
 * built through the backend graph API (cudnn_graph.h; there is no
 * cudnn-frontend here).  The graphs are cudnn-frontend's composite SDPA
 * forward and backward nodes written out operation by operation, which
 * cuDNN's runtime fusion recognises as flash attention:
 *
 *   forward:  S = (Q . K^T) * scale [+ bias] [causal: -inf above the
 *             diagonal]; softmax as max, sub, exp, sum, div, with the
 *             statistics max + log(sum) (the log-sum-exp, our state
 *             [B,NH,T]); [dropout: * Bernoulli mask * 1/(1-p)]; O = P . V
 *   backward: sum_i = rowsum(dO * O) [* (1-p)]; P = exp(S - stats);
 *             dV = P'^T . dO; dS = P * (dP' - sum) [* 1/(1-p)] * scale with
 *             dP' = (dO . V^T) [* mask]; dK = dS^T . Q; dQ = dS . K
 *
 * Q, K and V are read in place from qkv [B,T,3C] (strides {3CT, D, 3C,
 * 1}); dQ, dK, dV are written to a [B,T,3C] part of the caller's scratch
 * and then added to dqkv (ops.h accumulates, cuDNN sets).
 *
 * Dropout: cuDNN draws its own mask from Philox with a seed and an offset
 * in device memory: we pass our seed (already particular to the step,
 * layer and site) and the first head's index h0 as the offset.  So the
 * masks are NOT the CPU's ops_dropout_uniform() bits, and a tensor-
 * parallel split draws other masks than one GPU (train(1) says so); the
 * keep probability and the 1/(1-p) scale are the same.
 *
 * Determinism: with a deterministic request the backward graph computes
 * dQ straight from dS . K (cudnn-frontend's is_deterministic_algorithm on
 * Hopper: no float dQ accumulator filled by atomics), and engines that
 * cuDNN marks CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC are skipped; else dQ
 * goes through a float accumulator (faster).
 *
 * When a graph cannot be built or no engine runs it (an unsupported head
 * size, sequence length or cuDNN version), the op falls back to the exact
 * kernel (attention.cu) and says so once through notice(); forward and
 * backward are decided together, so a layer never mixes cuDNN's forward
 * masks with the exact kernel's backward.
 */
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "cuda_common.cuh"

/* Deprecated in cuDNN 9.19, required by earlier 9.x: the handle of an
 * operation graph and of an execution plan (by number, so that the
 * deprecation warning does not fire; the values are stable). */
#define ATTR_OPERATIONGRAPH_HANDLE ((cudnnBackendAttributeName_t)800)
#define ATTR_EXECUTION_PLAN_HANDLE ((cudnnBackendAttributeName_t)400)

/* The non-virtual tensors' unique ids (virtual ones count up from 100). */
enum {
    UID_Q = 1,
    UID_K,
    UID_V,
    UID_O,
    UID_STATS,
    UID_BIAS,
    UID_SEED,
    UID_OFFSET,
    UID_SCALE,
    UID_NEG_INF,
    UID_DROP_SCALE,
    UID_DROP_KEEP,
    UID_ONE,
    UID_DO,
    UID_DQ,
    UID_DK,
    UID_DV,
    UID_SOFTMAX_SUM,
    UID_DQ_ACCUM,
};

/* What selects a graph. */
struct sdpa_key {
    int bwd, B, T, C, NH, causal, bias, dropout, det;
    uint32_t p_bits;
    enum ops_dtype dt;
};

struct sdpa_plan {
    struct sdpa_key key;
    int ok;
    std::vector<cudnnBackendDescriptor_t> descs; /* all, freed at close */
    cudnnBackendDescriptor_t plan;
    int64_t workspace;
    std::string why; /* when !ok */
};

struct sdpa_state {
    std::vector<sdpa_plan *> plans;
    int64_t *seed_offset; /* device: the Philox seed and offset */
    std::vector<const char *> said;
};

static struct sdpa_state *
state(void)
{
    return (struct sdpa_state *)cuda_g.sdpa;
}

static cudnnHandle_t
handle(void)
{
    return (cudnnHandle_t)cuda_g.cudnn;
}

/* Says a fallback reason once (reasons are static strings or kept in a
 * plan). */
static void
say_once(const char *why, const char *detail)
{
    struct sdpa_state *s = state();

    for (const char *w : s->said)
        if (w == why)
            return;
    s->said.push_back(why);
    cuda_notice("cuda: attention: cuDNN's fused attention is not used (%s%s%s)"
                ": the exact kernel computes it (slower; with dropout the "
                "masks are then the CPU backend's)",
                why, detail != NULL ? ": " : "", detail != NULL ? detail : "");
}

/* ------------------------------------------------------------ a graph */

/* Builds one operation graph with the backend API; the first failing call
 * is kept in err and makes the rest no-ops. */
class graph_builder
{
  public:
    std::vector<cudnnBackendDescriptor_t> descs, ops, scalars;
    std::vector<int64_t> scalar_uids;
    std::string err;
    int64_t next_uid = 100;
    cudnnDataType_t io;

    explicit graph_builder(cudnnDataType_t io_type) : io(io_type)
    {
    }

    bool ok(cudnnStatus_t s, const char *what)
    {
        if (s == CUDNN_STATUS_SUCCESS || !err.empty())
            return s == CUDNN_STATUS_SUCCESS && err.empty();
        char last[256] = "";

        cudnnGetLastErrorString(last, sizeof(last));
        err = std::string(what) + ": " + cudnnGetErrorString(s);
        if (last[0] != '\0')
            err += std::string(" (") + last + ")";
        return false;
    }

    cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t t,
                                    const char *what)
    {
        cudnnBackendDescriptor_t d = NULL;

        if (!err.empty() || !ok(cudnnBackendCreateDescriptor(t, &d), what))
            return NULL;
        descs.push_back(d);
        return d;
    }

    void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
             cudnnBackendAttributeType_t type, int64_t n, const void *v,
             const char *what)
    {
        if (err.empty() && d != NULL)
            ok(cudnnBackendSetAttribute(d, name, type, n, v), what);
    }

    void finalize(cudnnBackendDescriptor_t d, const char *what)
    {
        if (err.empty() && d != NULL)
            ok(cudnnBackendFinalize(d), what);
    }

    cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t t,
                                    const int64_t dim[4],
                                    const int64_t stride[4], bool virt,
                                    bool by_value = false)
    {
        cudnnBackendDescriptor_t d =
            create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
        int64_t align = 16;

        set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t,
            "tensor data type");
        set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim,
            "tensor dimensions");
        set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride,
            "tensor strides");
        set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid,
            "tensor id");
        set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align,
            "tensor alignment");
        if (virt) {
            bool v = true;

            set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v,
                "virtual tensor");
        }
        if (by_value) {
            bool v = true;

            set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &v,
                "by-value tensor");
        }
        finalize(d, "tensor");
        return d;
    }

    /* A virtual tensor of the given shape. */
    cudnnBackendDescriptor_t virt(cudnnDataType_t t, const int64_t dim[4],
                                  const int64_t stride[4])
    {
        return tensor(next_uid++, t, dim, stride, true);
    }

    /* A scalar passed by value (its host address goes in the variant
     * pack); one descriptor per id in a graph, however often it is used. */
    cudnnBackendDescriptor_t scalar(int64_t uid, cudnnDataType_t t)
    {
        static const int64_t one[4] = { 1, 1, 1, 1 };

        for (size_t i = 0; i < scalars.size(); i++)
            if (scalar_uids[i] == uid)
                return scalars[i];
        scalar_uids.push_back(uid);
        scalars.push_back(tensor(uid, t, one, one, false, true));
        return scalars.back();
    }

    void add_op(cudnnBackendDescriptor_t op, const char *what)
    {
        finalize(op, what);
        if (err.empty())
            ops.push_back(op);
    }

    /* y = mode(x[, b[, t]]), math in math; GEN_INDEX along axis. */
    void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math,
                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                   cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y,
                   int64_t axis = -1)
    {
        cudnnBackendDescriptor_t pw =
            create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
        cudnnBackendDescriptor_t op =
            create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                   "pointwise operation");
        float alpha = 1.0f;

        set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode,
            "pointwise mode");
        set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math,
            "pointwise precision");
        if (mode == CUDNN_POINTWISE_GEN_INDEX)
            set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis,
                "pointwise axis");
        finalize(pw, "pointwise");
        set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise descriptor");
        set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise x");
        if (b != NULL)
            set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "pointwise b");
        if (t != NULL)
            set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pointwise t");
        set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pointwise y");
        set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1,
            &alpha, "pointwise alpha1");
        set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1,
            &alpha, "pointwise alpha2");
        add_op(op, "pointwise operation");
    }

    void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                cudnnBackendDescriptor_t c)
    {
        cudnnBackendDescriptor_t mm =
            create(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
        cudnnBackendDescriptor_t op = create(
            CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
        cudnnDataType_t f = CUDNN_DATA_FLOAT;

        set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f,
            "matmul precision");
        finalize(mm, "matmul");
        set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "matmul a");
        set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "matmul b");
        set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "matmul c");
        set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
            1, &mm, "matmul descriptor");
        add_op(op, "matmul operation");
    }

    void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                   cudnnBackendDescriptor_t y)
    {
        cudnnBackendDescriptor_t rd =
            create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
        cudnnBackendDescriptor_t op =
            create(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
                   "reduction operation");
        cudnnDataType_t f = CUDNN_DATA_FLOAT;

        set(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f,
            "reduction precision");
        set(rd, CUDNN_ATTR_REDUCTION_OPERATOR,
            CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "reduction mode");
        finalize(rd, "reduction");
        set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "reduction descriptor");
        set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reduction x");
        set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reduction y");
        add_op(op, "reduction operation");
    }

    /* y = Bernoulli(keep) from Philox (seed, offset tensors). */
    void rng(double keep, cudnnBackendDescriptor_t seed,
             cudnnBackendDescriptor_t offset, cudnnBackendDescriptor_t y)
    {
        cudnnBackendDescriptor_t rd =
            create(CUDNN_BACKEND_RNG_DESCRIPTOR, "rng");
        cudnnBackendDescriptor_t op =
            create(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR, "rng operation");
        cudnnRngDistribution_t dist = CUDNN_RNG_DISTRIBUTION_BERNOULLI;

        set(rd, CUDNN_ATTR_RNG_DISTRIBUTION, CUDNN_TYPE_RNG_DISTRIBUTION, 1,
            &dist, "rng distribution");
        set(rd, CUDNN_ATTR_RNG_BERNOULLI_DIST_PROBABILITY, CUDNN_TYPE_DOUBLE, 1,
            &keep, "rng probability");
        finalize(rd, "rng");
        set(op, CUDNN_ATTR_OPERATION_RNG_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
            1, &y, "rng y");
        set(op, CUDNN_ATTR_OPERATION_RNG_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &rd, "rng descriptor");
        set(op, CUDNN_ATTR_OPERATION_RNG_SEED, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &seed, "rng seed");
        set(op, CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &offset, "rng offset");
        add_op(op, "rng operation");
    }

    void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y)
    {
        cudnnBackendDescriptor_t op = create(
            CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape operation");

        set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reshape x");
        set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reshape y");
        add_op(op, "reshape operation");
    }

    /* The graph's execution plan: the heuristics' engine configurations
     * (mode A, then the fallback list) tried in order, the first that
     * finalizes kept; deterministic: engines noted NONDETERMINISTIC are
     * skipped. */
    cudnnBackendDescriptor_t plan(int deterministic, int64_t *workspace)
    {
        cudnnHandle_t h = handle();
        cudnnBackendDescriptor_t graph =
            create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
        static const cudnnBackendHeurMode_t modes[2] = {
            CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK
        };

        set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
            (int64_t)ops.size(), ops.data(), "graph operations");
        set(graph, ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h,
            "graph handle");
        finalize(graph, "operation graph");
        for (int m = 0; m < 2 && err.empty(); m++) {
            cudnnBackendDescriptor_t heur = create(
                CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
            int64_t n = 0, got = 0;
            std::vector<cudnnBackendDescriptor_t> cfgs;

            set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph");
            set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                &modes[m], "heuristics mode");
            finalize(heur, "engine heuristics");
            if (!err.empty() ||
                !ok(cudnnBackendGetAttribute(
                        heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL),
                    "heuristics results"))
                return NULL;
            for (int64_t i = 0; i < n; i++)
                cfgs.push_back(create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                      "engine configuration"));
            if (n == 0 || !err.empty() ||
                !ok(cudnnBackendGetAttribute(
                        heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs.data()),
                    "heuristics results"))
                continue;
            for (int64_t i = 0; i < got; i++) {
                cudnnBackendDescriptor_t p;

                if (deterministic && !deterministic_engine(cfgs[(size_t)i]))
                    continue;
                if ((p = try_plan(cfgs[(size_t)i], workspace)) != NULL)
                    return p;
            }
        }
        if (err.empty())
            err = deterministic ? "no deterministic engine runs the graph"
                                : "no engine runs the graph";
        return NULL;
    }

  private:
    /* Whether the configuration's engine is deterministic (not noted
     * otherwise). */
    bool deterministic_engine(cudnnBackendDescriptor_t cfg)
    {
        cudnnBackendDescriptor_t engine = NULL;
        cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        int64_t n = 0, got = 0;
        bool det = false;

        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                                         &engine) != CUDNN_STATUS_SUCCESS)
            return false;
        if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                     &engine) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE,
                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                     notes) == CUDNN_STATUS_SUCCESS) {
            det = true;
            for (int64_t i = 0; i < n; i++)
                if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
                    det = false;
        }
        cudnnBackendDestroyDescriptor(engine);
        return det;
    }

    /* A plan of cfg, or NULL (that configuration does not run: the next
     * is tried, and the failure is not an error of the graph). */
    cudnnBackendDescriptor_t try_plan(cudnnBackendDescriptor_t cfg,
                                      int64_t *workspace)
    {
        cudnnHandle_t h = handle();
        cudnnBackendDescriptor_t p = NULL;
        int64_t count = 0;

        if (cudnnBackendCreateDescriptor(
                CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p) !=
            CUDNN_STATUS_SUCCESS)
            return NULL;
        if (cudnnBackendSetAttribute(p, ATTR_EXECUTION_PLAN_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1,
                                     &h) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &cfg) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendFinalize(p) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendGetAttribute(
                p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                1, &count, workspace) == CUDNN_STATUS_SUCCESS) {
            descs.push_back(p);
            return p;
        }
        cudnnBackendDestroyDescriptor(p);
        return NULL;
    }
};

/* ------------------------------------------------------------ the graphs */

/* Shapes of one (B, NH, T, D) problem. */
struct sdpa_dims {
    int64_t qkv[4], kt[4], o[4];         /* dims */
    int64_t s_qkv[4], s_kt[4], s_o[4];   /* strides */
    int64_t ss[4], s_ss[4];              /* [b,h,s,s] */
    int64_t st[4], s_st[4];              /* [b,h,s,1] */
    int64_t bias[4], s_bias[4];          /* [b,1,s,s], broadcast */
    int64_t sst[4], s_sst[4];            /* [b,h,s,s] transposed view */
    int64_t o_bhsd_virt[4], s_o_virt[4]; /* dO * O, as the frontend */
};

static void
set4(int64_t d[4], int64_t a, int64_t b, int64_t c, int64_t e)
{
    d[0] = a, d[1] = b, d[2] = c, d[3] = e;
}

static struct sdpa_dims
sdpa_dims(int B, int T, int C, int NH)
{
    struct sdpa_dims g;
    int64_t b = B, h = NH, s = T, d = C / NH, c3 = 3 * (int64_t)C;

    set4(g.qkv, b, h, s, d);
    set4(g.s_qkv, s * c3, d, c3, 1);
    set4(g.kt, b, h, d, s); /* K^T (and V^T): dims and strides 2, 3 swapped */
    set4(g.s_kt, s * c3, d, 1, c3);
    set4(g.o, b, h, s, d);
    set4(g.s_o, s * C, d, C, 1);
    set4(g.ss, b, h, s, s);
    set4(g.s_ss, h * s * s, s * s, s, 1);
    set4(g.st, b, h, s, 1);
    set4(g.s_st, h * s, s, 1, 1);
    /* The key bias [B,T] as [b,1,s,s] with a zero stride over the queries
     * (PyTorch's expand() of a [b,s] mask, which its cuDNN path passes). */
    set4(g.bias, b, 1, s, s);
    set4(g.s_bias, s, s, 0, 1);
    set4(g.sst, b, h, s, s);
    set4(g.s_sst, h * s * s, s * s, 1, s);
    set4(g.o_bhsd_virt, b, h, s, d);
    set4(g.s_o_virt, h * s * d, s * d, h * d, 1);
    return g;
}

/* The shared start of both graphs: S = (Q . K^T) * scale [+ bias], as
 * the virtual tensor returned. */
static cudnnBackendDescriptor_t
scores(graph_builder &g, const struct sdpa_key &k, const struct sdpa_dims &d,
       cudnnBackendDescriptor_t q, cudnnBackendDescriptor_t kt)
{
    cudnnDataType_t f = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t s = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t s2 = g.virt(f, d.ss, d.s_ss);

    g.matmul(q, kt, s);
    g.pointwise(CUDNN_POINTWISE_MUL, f, s, g.scalar(UID_SCALE, f), NULL, s2);
    if (k.bias) {
        cudnnBackendDescriptor_t s3 = g.virt(f, d.ss, d.s_ss);

        g.pointwise(CUDNN_POINTWISE_ADD, f, s2,
                    g.tensor(UID_BIAS, g.io, d.bias, d.s_bias, false), NULL,
                    s3);
        s2 = s3;
    }
    return s2;
}

/* x with -inf where the key comes after the query (row < column). */
static cudnnBackendDescriptor_t
causal_mask(graph_builder &g, const struct sdpa_dims &d,
            cudnnBackendDescriptor_t x)
{
    cudnnDataType_t f = CUDNN_DATA_FLOAT, i32 = CUDNN_DATA_INT32;
    cudnnDataType_t bl = CUDNN_DATA_BOOLEAN;
    cudnnBackendDescriptor_t row = g.virt(i32, d.ss, d.s_ss);
    cudnnBackendDescriptor_t col = g.virt(i32, d.ss, d.s_ss);
    cudnnBackendDescriptor_t keep = g.virt(bl, d.ss, d.s_ss);
    cudnnBackendDescriptor_t y = g.virt(f, d.ss, d.s_ss);

    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, i32, x, NULL, NULL, row, 2);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, i32, x, NULL, NULL, col, 3);
    g.pointwise(CUDNN_POINTWISE_CMP_GE, bl, row, col, NULL, keep);
    /* BINARY_SELECT: y = keep ? x : -inf */
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, f, x, g.scalar(UID_NEG_INF, f),
                keep, y);
    return y;
}

static cudnnBackendDescriptor_t
dropout_mask(graph_builder &g, const struct sdpa_key &k,
             const struct sdpa_dims &d)
{
    static const int64_t one[4] = { 1, 1, 1, 1 };
    cudnnBackendDescriptor_t mask = g.virt(CUDNN_DATA_FLOAT, d.ss, d.s_ss);
    float p;

    memcpy(&p, &k.p_bits, sizeof(p));
    g.rng(1.0 - (double)p,
          g.tensor(UID_SEED, CUDNN_DATA_INT64, one, one, false),
          g.tensor(UID_OFFSET, CUDNN_DATA_INT64, one, one, false), mask);
    return mask;
}

static void
build_fwd(graph_builder &g, const struct sdpa_key &k)
{
    struct sdpa_dims d = sdpa_dims(k.B, k.T, k.C, k.NH);
    cudnnDataType_t f = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t q = g.tensor(UID_Q, g.io, d.qkv, d.s_qkv, false);
    cudnnBackendDescriptor_t kt = g.tensor(UID_K, g.io, d.kt, d.s_kt, false);
    cudnnBackendDescriptor_t v = g.tensor(UID_V, g.io, d.qkv, d.s_qkv, false);
    cudnnBackendDescriptor_t o = g.tensor(UID_O, g.io, d.o, d.s_o, false);
    cudnnBackendDescriptor_t stats =
        g.tensor(UID_STATS, f, d.st, d.s_st, false);
    cudnnBackendDescriptor_t s = scores(g, k, d, q, kt);
    cudnnBackendDescriptor_t m = g.virt(f, d.st, d.s_st);
    cudnnBackendDescriptor_t sub = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t e = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t z = g.virt(f, d.st, d.s_st);
    cudnnBackendDescriptor_t logz = g.virt(f, d.st, d.s_st);
    /* The probabilities feed the second matmul in the io type (the
     * backend's requirement, as the frontend sets it). */
    cudnnBackendDescriptor_t p = g.virt(k.dropout ? f : g.io, d.ss, d.s_ss);

    if (k.causal)
        s = causal_mask(g, d, s);
    g.reduction(CUDNN_REDUCE_TENSOR_MAX, s, m);
    g.pointwise(CUDNN_POINTWISE_SUB, f, s, m, NULL, sub);
    g.pointwise(CUDNN_POINTWISE_EXP, f, sub, NULL, NULL, e);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
    g.pointwise(CUDNN_POINTWISE_LOG, f, z, NULL, NULL, logz);
    g.pointwise(CUDNN_POINTWISE_ADD, f, m, logz, NULL, stats);
    g.pointwise(CUDNN_POINTWISE_DIV, f, e, z, NULL, p);
    if (k.dropout) {
        cudnnBackendDescriptor_t mask = dropout_mask(g, k, d);
        cudnnBackendDescriptor_t p2 = g.virt(f, d.ss, d.s_ss);
        cudnnBackendDescriptor_t p3 = g.virt(g.io, d.ss, d.s_ss);

        g.pointwise(CUDNN_POINTWISE_MUL, f, p, mask, NULL, p2);
        g.pointwise(CUDNN_POINTWISE_MUL, f, p2, g.scalar(UID_DROP_SCALE, f),
                    NULL, p3);
        p = p3;
    }
    g.matmul(p, v, o);
}

static void
build_bwd(graph_builder &g, const struct sdpa_key &k)
{
    struct sdpa_dims d = sdpa_dims(k.B, k.T, k.C, k.NH);
    cudnnDataType_t f = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t q = g.tensor(UID_Q, g.io, d.qkv, d.s_qkv, false);
    cudnnBackendDescriptor_t kt = g.tensor(UID_K, g.io, d.kt, d.s_kt, false);
    cudnnBackendDescriptor_t vt = g.tensor(UID_V, g.io, d.kt, d.s_kt, false);
    cudnnBackendDescriptor_t o = g.tensor(UID_O, g.io, d.o, d.s_o, false);
    cudnnBackendDescriptor_t dout = g.tensor(UID_DO, g.io, d.o, d.s_o, false);
    cudnnBackendDescriptor_t stats =
        g.tensor(UID_STATS, f, d.st, d.s_st, false);
    cudnnBackendDescriptor_t dq = g.tensor(UID_DQ, g.io, d.qkv, d.s_qkv, false);
    cudnnBackendDescriptor_t dk = g.tensor(UID_DK, g.io, d.qkv, d.s_qkv, false);
    cudnnBackendDescriptor_t dv = g.tensor(UID_DV, g.io, d.qkv, d.s_qkv, false);
    cudnnBackendDescriptor_t mask = k.dropout ? dropout_mask(g, k, d) : NULL;
    cudnnBackendDescriptor_t t1 = g.virt(f, d.o_bhsd_virt, d.s_o_virt);
    cudnnBackendDescriptor_t t2 = g.virt(f, d.st, d.s_st);
    cudnnBackendDescriptor_t sum =
        g.tensor(UID_SOFTMAX_SUM, f, d.st, d.s_st, false);
    cudnnBackendDescriptor_t s, s3 = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t p = g.virt(f, d.ss, d.s_ss), pd = p, pt;
    cudnnBackendDescriptor_t dp = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t t3 = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t ds = g.virt(f, d.ss, d.s_ss);
    cudnnBackendDescriptor_t ds2 = g.virt(f, d.ss, d.s_ss), dst, kr;
    int64_t kr_dim[4], kr_stride[4];

    /* sum_i = rowsum(dO * O), times 1 - p with dropout. */
    g.pointwise(CUDNN_POINTWISE_MUL, f, dout, o, NULL, t1);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, t1, t2);
    g.pointwise(CUDNN_POINTWISE_MUL, f, t2,
                g.scalar(k.dropout ? UID_DROP_KEEP : UID_ONE, f), NULL, sum);

    /* P = exp(S - stats), masked. */
    s = scores(g, k, d, q, kt);
    g.pointwise(CUDNN_POINTWISE_SUB, f, s, stats, NULL, s3);
    if (k.causal)
        s3 = causal_mask(g, d, s3);
    g.pointwise(CUDNN_POINTWISE_EXP, f, s3, NULL, NULL, p);
    if (k.dropout) {
        cudnnBackendDescriptor_t p2 = g.virt(f, d.ss, d.s_ss);

        pd = g.virt(f, d.ss, d.s_ss);
        g.pointwise(CUDNN_POINTWISE_MUL, f, p, mask, NULL, p2);
        g.pointwise(CUDNN_POINTWISE_MUL, f, p2, g.scalar(UID_DROP_SCALE, f),
                    NULL, pd);
    }
    /* dV = P'^T . dO */
    pt = g.virt(g.io, d.sst, d.s_sst);
    g.reshape(pd, pt);
    g.matmul(pt, dout, dv);

    /* dS = P * (dP' - sum) [/ (1-p)] * scale */
    g.matmul(dout, vt, dp);
    if (k.dropout) {
        cudnnBackendDescriptor_t dpm = g.virt(f, d.ss, d.s_ss);

        g.pointwise(CUDNN_POINTWISE_MUL, f, dp, mask, NULL, dpm);
        dp = dpm;
    }
    g.pointwise(CUDNN_POINTWISE_SUB, f, dp, sum, NULL, t3);
    g.pointwise(CUDNN_POINTWISE_MUL, f, t3, p, NULL, ds);
    if (k.dropout) {
        cudnnBackendDescriptor_t ds1 = g.virt(f, d.ss, d.s_ss);

        g.pointwise(CUDNN_POINTWISE_MUL, f, ds, g.scalar(UID_DROP_SCALE, f),
                    NULL, ds1);
        ds = ds1;
    }
    g.pointwise(CUDNN_POINTWISE_MUL, f, ds, g.scalar(UID_SCALE, f), NULL, ds2);

    /* dK = dS^T . Q */
    dst = g.virt(g.io, d.sst, d.s_sst);
    g.reshape(ds2, dst);
    g.matmul(dst, q, dk);

    /* dQ = dS . K (K^T reshaped back to [b,h,s,d]) */
    set4(kr_dim, d.kt[0], d.kt[1], d.kt[3], d.kt[2]);
    set4(kr_stride, d.s_kt[0], d.s_kt[1], d.s_kt[3], d.s_kt[2]);
    kr = g.virt(f, kr_dim, kr_stride);
    g.reshape(kt, kr);
    if (k.det) {
        g.matmul(ds2, kr, dq);
    } else {
        int64_t acc_stride[4];
        cudnnBackendDescriptor_t acc;

        set4(acc_stride, d.qkv[1] * d.qkv[2] * d.qkv[3], d.qkv[2] * d.qkv[3],
             d.qkv[3], 1);
        acc = g.tensor(UID_DQ_ACCUM, f, d.qkv, acc_stride, false);
        g.matmul(ds2, kr, acc);
        g.pointwise(CUDNN_POINTWISE_IDENTITY, f, acc, NULL, NULL, dq);
    }
}

/* ------------------------------------------------------------ plans */

static bool
same_key(const struct sdpa_key &a, const struct sdpa_key &b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static cudnnDataType_t
io_type(enum ops_dtype dt)
{
    return dt == OPS_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

/* The plan of key, built the first time (a failed build is cached too). */
static struct sdpa_plan *
get_plan(const struct sdpa_key &key)
{
    struct sdpa_state *s = state();
    struct sdpa_plan *p;

    for (struct sdpa_plan *q : s->plans)
        if (same_key(q->key, key))
            return q;
    p = new sdpa_plan();
    p->key = key;
    p->ok = 0;
    p->plan = NULL;
    p->workspace = 0;
    {
        graph_builder g(io_type(key.dt));

        if (key.bwd)
            build_bwd(g, key);
        else
            build_fwd(g, key);
        if (g.err.empty())
            p->plan = g.plan(key.det, &p->workspace);
        p->ok = g.err.empty() && p->plan != NULL;
        p->why = g.err;
        p->descs.swap(g.descs);
    }
    s->plans.push_back(p);
    return p;
}

static struct sdpa_key
make_key(int bwd, int B, int T, int C, int NH, int causal, int bias, float p)
{
    struct sdpa_key k;

    memset(&k, 0, sizeof(k));
    k.bwd = bwd;
    k.B = B, k.T = T, k.C = C, k.NH = NH;
    k.causal = causal != 0;
    k.bias = bias;
    k.dropout = p > 0.0f;
    if (k.dropout)
        memcpy(&k.p_bits, &p, sizeof(p));
    k.det = cuda_g.deterministic != 0;
    k.dt = cuda_g.dtype;
    return k;
}

/* Whether cuDNN runs this attention (forward and backward both planned);
 * else the reason is said once and 0 returned. */
static int
usable(int B, int T, int C, int NH, int causal, int bias, float p)
{
    const char *why;
    struct sdpa_plan *f, *b;

    if (handle() == NULL) {
        say_once("no cuDNN handle", NULL);
        return 0;
    }
    why = cuda_sdpa_unsupported(cuda_g.dtype, T, C / NH, cuda_g.cudnn_version,
                                cuda_g.sm);
    if (why != NULL) {
        say_once(why, NULL);
        return 0;
    }
    f = get_plan(make_key(0, B, T, C, NH, causal, bias, p));
    b = get_plan(make_key(1, B, T, C, NH, causal, bias, p));
    if (!f->ok || !b->ok) {
        struct sdpa_plan *bad = !f->ok ? f : b;

        say_once(bad->why.c_str(), bad->key.bwd ? "backward" : "forward");
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ running */

__global__ void
set_seed_kernel(int64_t *so, uint64_t seed, int64_t offset)
{
    so[0] = (int64_t)seed;
    so[1] = offset;
}

template <typename T>
__global__ void
bias_cast_kernel(T *dst, const float *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = from_float<T>(src[i]);
}

/* The by-value scalars of one call (their host addresses go in the
 * variant pack: they must live until cudnnBackendExecute returns). */
struct sdpa_scalars {
    float scale, neg_inf, drop_scale, drop_keep, one;
};

static size_t
round256(size_t n)
{
    return (n + 255) / 256 * 256;
}

/* Runs plan with the pointers of uids; 0 or -1. */
static int
execute(struct sdpa_plan *p, const std::vector<int64_t> &uids,
        const std::vector<void *> &ptrs, void *workspace)
{
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t st;
    const char *what = "cudnnBackendCreateDescriptor(VARIANT_PACK)";

    st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                      &vp);
    if (st == CUDNN_STATUS_SUCCESS) {
        what = "variant pack";
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, (int64_t)ptrs.size(),
                                      ptrs.data());
    }
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                      CUDNN_TYPE_INT64, (int64_t)uids.size(),
                                      uids.data());
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                      CUDNN_TYPE_VOID_PTR, 1, &workspace);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendFinalize(vp);
    if (st == CUDNN_STATUS_SUCCESS) {
        what = "cudnnBackendExecute";
        st = cudnnBackendExecute(handle(), p->plan, vp);
    }
    if (vp != NULL)
        cudnnBackendDestroyDescriptor(vp);
    if (st != CUDNN_STATUS_SUCCESS) {
        char last[256] = "", why[400];

        cudnnGetLastErrorString(last, sizeof(last));
        snprintf(why, sizeof(why), "%s%s%s%s", cudnnGetErrorString(st),
                 last[0] != '\0' ? " (" : "", last, last[0] != '\0' ? ")" : "");
        cuda_status_call(&cuda_g.st, what, why, __FILE__, __LINE__);
        return -1;
    }
    return LAUNCH_OK() ? 0 : -1;
}

/* Queues the seed and the converted bias; the bias (or NULL) in
 * buf[0..), and the common pointers into uids/ptrs. */
static int
prepare(const float *key_bias, int B, int T, int C, int NH, int h0, int causal,
        uint64_t seed, float p, void *bias_buf, struct sdpa_scalars *sc,
        std::vector<int64_t> &uids, std::vector<void *> &ptrs)
{
    struct sdpa_state *s = state();

    sc->scale = 1.0f / sqrtf((float)(C / NH));
    /* Before 9.10 cuDNN's softmax wanted the lowest float, not -inf
     * (cudnn-frontend's get_negative_inf_value()). */
    sc->neg_inf = cuda_g.cudnn_version < 91000 ? -3.402823466e38f : -INFINITY;
    sc->drop_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    sc->drop_keep = 1.0f - p;
    sc->one = 1.0f;
    /* Only the graph's own tensors go in the variant pack. */
    if (causal)
        uids.push_back(UID_NEG_INF), ptrs.push_back(&sc->neg_inf);
    uids.push_back(UID_SCALE), ptrs.push_back(&sc->scale);
    if (key_bias != NULL) {
        size_t n = (size_t)B * (size_t)T;

        DISPATCH_DTYPE(cuda_g.dtype, T_,
                       bias_cast_kernel<T_>
                       <<<grid_for(n, THREADS), THREADS, 0, cuda_g.stream>>>(
                           (T_ *)bias_buf, key_bias, n));
        if (!LAUNCH_OK())
            return -1;
        uids.push_back(UID_BIAS), ptrs.push_back(bias_buf);
    }
    if (p > 0.0f) {
        set_seed_kernel<<<1, 1, 0, cuda_g.stream>>>(s->seed_offset, seed,
                                                    (int64_t)h0);
        if (!LAUNCH_OK())
            return -1;
        uids.push_back(UID_SEED), ptrs.push_back(s->seed_offset);
        uids.push_back(UID_OFFSET), ptrs.push_back(s->seed_offset + 1);
        uids.push_back(UID_DROP_SCALE), ptrs.push_back(&sc->drop_scale);
    }
    return 0;
}

/* Q, K and V: read in place from qkv [B,T,3C] at columns 0, C, 2C. */
static void
push_qkv(std::vector<int64_t> &uids, std::vector<void *> &ptrs, const void *qkv,
         int C)
{
    const char *qb = (const char *)qkv;
    size_t col = (size_t)C * dtype_bytes(cuda_g.dtype);

    uids.push_back(UID_Q), ptrs.push_back((void *)qb);
    uids.push_back(UID_K), ptrs.push_back((void *)(qb + col));
    uids.push_back(UID_V), ptrs.push_back((void *)(qb + 2 * col));
}

int
cuda_sdpa_fwd(void *out, float *lse, const void *qkv, const float *key_bias,
              int B, int T, int C, int NH, int h0, int causal, float p,
              uint64_t seed)
{
    struct sdpa_plan *pl;
    struct sdpa_scalars sc;
    std::vector<int64_t> uids;
    std::vector<void *> ptrs;
    size_t bias_bytes =
        key_bias != NULL ? round256((size_t)B * T * dtype_bytes(cuda_g.dtype))
                         : 0;
    char *buf;

    if (!usable(B, T, C, NH, causal, key_bias != NULL, p))
        return 0;
    cuda_g.st.op = "attention_fwd (cuDNN)";
    pl = get_plan(make_key(0, B, T, C, NH, causal, key_bias != NULL, p));
    buf = (char *)cuda_scratch(bias_bytes + round256((size_t)pl->workspace),
                               "cuDNN attention's workspace");
    if (buf == NULL || prepare(key_bias, B, T, C, NH, h0, causal, seed, p, buf,
                               &sc, uids, ptrs) != 0)
        return -1;
    push_qkv(uids, ptrs, qkv, C);
    uids.push_back(UID_O), ptrs.push_back(out);
    uids.push_back(UID_STATS), ptrs.push_back(lse);
    return execute(pl, uids, ptrs, buf + bias_bytes) == 0 ? 1 : -1;
}

int
cuda_sdpa_bwd(void *dqkv, void *scratch, const void *dout, const void *out,
              const void *qkv, const float *lse, const float *key_bias, int B,
              int T, int C, int NH, int h0, int causal, float p, uint64_t seed)
{
    struct sdpa_plan *pl;
    struct sdpa_scalars sc;
    std::vector<int64_t> uids;
    std::vector<void *> ptrs;
    size_t elt = dtype_bytes(cuda_g.dtype);
    size_t rows = (size_t)B * NH * T;
    size_t bias_bytes = key_bias != NULL ? round256((size_t)B * T * elt) : 0;
    size_t sum_bytes = round256(rows * sizeof(float));
    size_t acc_bytes =
        cuda_g.deterministic ? 0 : round256(rows * (C / NH) * sizeof(float));
    /* dq, dk, dv land in the caller's scratch after the [B,NH,T] floats
     * (cuda_attention_scratch_bytes()), in qkv's layout. */
    char *grad = (char *)scratch + round256(rows * sizeof(float));
    char *buf;

    if (!usable(B, T, C, NH, causal, key_bias != NULL, p))
        return 0;
    cuda_g.st.op = "attention_bwd (cuDNN)";
    pl = get_plan(make_key(1, B, T, C, NH, causal, key_bias != NULL, p));
    buf = (char *)cuda_scratch(bias_bytes + sum_bytes + acc_bytes +
                                   round256((size_t)pl->workspace),
                               "cuDNN attention's workspace");
    if (buf == NULL || prepare(key_bias, B, T, C, NH, h0, causal, seed, p, buf,
                               &sc, uids, ptrs) != 0)
        return -1;
    /* Before cuDNN 9.6 the dQ accumulator had to start at zero. */
    if (acc_bytes > 0 && !CUDA_OK(cudaMemsetAsync(buf + bias_bytes + sum_bytes,
                                                  0, acc_bytes, cuda_g.stream)))
        return -1;
    push_qkv(uids, ptrs, qkv, C);
    uids.push_back(UID_O), ptrs.push_back((void *)out);
    uids.push_back(UID_DO), ptrs.push_back((void *)dout);
    uids.push_back(UID_STATS), ptrs.push_back((void *)lse);
    uids.push_back(UID_DQ), ptrs.push_back(grad);
    uids.push_back(UID_DK), ptrs.push_back(grad + (size_t)C * elt);
    uids.push_back(UID_DV), ptrs.push_back(grad + 2 * (size_t)C * elt);
    uids.push_back(UID_SOFTMAX_SUM), ptrs.push_back(buf + bias_bytes);
    if (p > 0.0f)
        uids.push_back(UID_DROP_KEEP), ptrs.push_back(&sc.drop_keep);
    else
        uids.push_back(UID_ONE), ptrs.push_back(&sc.one);
    if (acc_bytes > 0)
        uids.push_back(UID_DQ_ACCUM),
            ptrs.push_back(buf + bias_bytes + sum_bytes);
    if (execute(pl, uids, ptrs, buf + bias_bytes + sum_bytes + acc_bytes) != 0)
        return -1;
    /* ops.h accumulates into dqkv; cuDNN set the gradient. */
    cuda_accumulate_launch(dqkv, grad, (size_t)B * T * 3 * C);
    return cuda_g.st.failed ? -1 : 1;
}

/* ------------------------------------------------------------ open, close */

void
cuda_sdpa_open(void)
{
    cudnnHandle_t h = NULL;
    struct sdpa_state *s;

    cuda_g.cudnn_version = (long)cudnnGetVersion();
    s = new sdpa_state();
    s->seed_offset = NULL;
    cuda_g.sdpa = s;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
        cuda_notice("cuda: cudnnCreate failed: attention runs the exact "
                    "kernel");
        return;
    }
    if (cudnnSetStream(h, cuda_g.stream) != CUDNN_STATUS_SUCCESS) {
        cudnnDestroy(h);
        cuda_notice("cuda: cudnnSetStream failed: attention runs the exact "
                    "kernel");
        return;
    }
    s->seed_offset =
        (int64_t *)cuda_malloc_tracked(2 * sizeof(int64_t), "cuDNN's seed");
    if (s->seed_offset == NULL) {
        cudnnDestroy(h);
        return;
    }
    cuda_g.cudnn = h;
}

void
cuda_sdpa_close(void)
{
    struct sdpa_state *s = state();

    if (s != NULL) {
        for (struct sdpa_plan *p : s->plans) {
            /* In reverse: a descriptor before those it refers to. */
            for (size_t i = p->descs.size(); i-- > 0;)
                cudnnBackendDestroyDescriptor(p->descs[i]);
            delete p;
        }
        delete s;
        cuda_g.sdpa = NULL;
    }
    if (cuda_g.cudnn != NULL) {
        cudnnDestroy(handle());
        cuda_g.cudnn = NULL;
    }
}
