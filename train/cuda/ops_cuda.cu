/* SPDX-License-Identifier: MIT */
/*
 * ops_cuda.cu: the CUDA backend's object (ops.h): ops_cuda() picks the GPU
 * (local rank modulo the GPUs visible) and sets up one compute stream, a
 * copy stream with its events, cuBLASLt with a fixed workspace and, for
 * bf16/f16, cuDNN; then the status, memory and copy entries of the table.
 * The layers' ops live in the other files of this folder (README.md).
 *
 * Errors: nothing here exits or prints.  The first failure (a bad
 * argument, a failed CUDA/cuBLAS/cuDNN call, out of memory, a kernel
 * fault found at a sync) is recorded with what failed and where, every
 * later op is a no-op, and sync()/download() return -1.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

struct cuda_backend cuda_g;
static struct ops cuda_ops;

/* cuBLASLt's workspace: llm.c's 32 MiB, enough for Hopper's kernels. */
#define LT_WORKSPACE (32u << 20)

/* ------------------------------------------------------------ status */

/* Errors that a kernel leaves behind (sticky: every later call returns
 * them), so whichever call sees one did not cause it. */
static int
is_kernel_fault(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
        return 1;
    default:
        return 0;
    }
}

int
cuda_ok(cudaError_t e, const char *expr, const char *file, int line)
{
    if (e == cudaSuccess)
        return 1;
    if (is_kernel_fault(e))
        cuda_status_async(&cuda_g.st, cudaGetErrorString(e));
    else
        cuda_status_call(&cuda_g.st, expr, cudaGetErrorString(e), file, line);
    /* Clear a non-sticky error, so the next launch check does not see it
     * again. */
    (void)cudaGetLastError();
    return 0;
}

int
cublas_ok(cublasStatus_t s, const char *expr, const char *file, int line)
{
    char why[160];

    if (s == CUBLAS_STATUS_SUCCESS)
        return 1;
    snprintf(why, sizeof(why), "%s (%s)", cublasLtGetStatusString(s),
             cublasLtGetStatusName(s));
    cuda_status_call(&cuda_g.st, expr, why, file, line);
    return 0;
}

int
cuda_bad_arg(const char *fmt, ...)
{
    char msg[CUDA_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return cuda_status_fail(&cuda_g.st, "%s: %s",
                            cuda_g.st.op != NULL ? cuda_g.st.op : "?", msg);
}

void
cuda_notice(const char *fmt, ...)
{
    va_list ap;

    if (cuda_g.notice_unread)
        return;
    va_start(ap, fmt);
    vsnprintf(cuda_g.notice, sizeof(cuda_g.notice), fmt, ap);
    va_end(ap);
    cuda_g.notice_unread = 1;
}

static int
cuda_sync(void)
{
    if (cuda_g.st.failed || !cuda_g.open)
        return -1;
    cuda_g.st.op = "sync";
    CUDA_OK(cudaStreamSynchronize(cuda_g.copy_stream)) &&
        CUDA_OK(cudaStreamSynchronize(cuda_g.stream));
    return cuda_g.st.failed ? -1 : 0;
}

static const char *
cuda_error(void)
{
    return cuda_g.st.msg;
}

static const char *
cuda_notice_take(void)
{
    if (!cuda_g.notice_unread)
        return NULL;
    cuda_g.notice_unread = 0;
    return cuda_g.notice;
}

static void
cuda_mem_info(size_t *free_bytes, size_t *total_bytes, size_t *peak_bytes)
{
    size_t f = 0, t = 0;

    if (cuda_g.stream == NULL || cudaMemGetInfo(&f, &t) != cudaSuccess) {
        (void)cudaGetLastError();
        f = t = 0;
    }
    if (free_bytes != NULL)
        *free_bytes = f;
    if (total_bytes != NULL)
        *total_bytes = t;
    if (peak_bytes != NULL)
        *peak_bytes = cuda_g.peak;
}

static void
cuda_device_info(struct ops_device_info *d)
{
    struct cudaDeviceProp prop;
    int khz = 0;

    memset(d, 0, sizeof(*d));
    if (cudaGetDeviceProperties(&prop, cuda_g.device) != cudaSuccess ||
        cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, cuda_g.device) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(d->name, sizeof(d->name), "GPU %d", cuda_g.device);
        d->cc = cuda_g.sm;
        d->sms = cuda_g.n_sm;
        return;
    }
    snprintf(d->name, sizeof(d->name), "%s", prop.name);
    d->cc = prop.major * 10 + prop.minor;
    d->sms = prop.multiProcessorCount;
    d->clock_khz = khz;
    d->tf32 = cuda_g.tf32;
}

/* ------------------------------------------------------------ memory */

void *
cuda_malloc_tracked(size_t bytes, const char *what)
{
    size_t ask = (bytes + 255) / 256 * 256;
    void *p = NULL;
    cudaError_t e;

    if (ask == 0)
        ask = 256;
    e = cudaMalloc(&p, ask);
    if (e == cudaErrorMemoryAllocation) {
        char msg[CUDA_MSG_MAX];
        size_t f = 0, t = 0;

        (void)cudaGetLastError();
        cuda_mem_info(&f, &t, NULL);
        cuda_oom_message(msg, sizeof(msg), ask, what, f, t);
        cuda_status_fail(&cuda_g.st, "%s", msg);
        return NULL;
    }
    if (!CUDA_OK(e))
        return NULL;
    if (cuda_ptr_map_put(&cuda_g.allocs, p, ask) != 0) {
        cudaFree(p);
        cuda_status_fail(&cuda_g.st, "out of host memory for the allocation "
                                     "table");
        return NULL;
    }
    cuda_g.in_use += ask;
    if (cuda_g.in_use > cuda_g.peak)
        cuda_g.peak = cuda_g.in_use;
    return p;
}

void
cuda_free_tracked(void *p)
{
    size_t size;

    if (p == NULL)
        return;
    if (cuda_ptr_map_take(&cuda_g.allocs, p, &size) == 0)
        cuda_g.in_use -= size;
    else
        cuda_status_fail(&cuda_g.st,
                         "release: %p was not allocated by this "
                         "backend",
                         p);
    /* cudaFree waits for the device; a kernel fault may surface here. */
    CUDA_OK(cudaFree(p));
}

void *
cuda_scratch(size_t bytes, const char *what)
{
    size_t want;

    if (bytes <= cuda_g.scratch_bytes && cuda_g.scratch != NULL)
        return cuda_g.scratch;
    /* Queued ops may still use the old buffer. */
    if (cuda_g.scratch != NULL) {
        if (!CUDA_OK(cudaStreamSynchronize(cuda_g.stream)))
            return NULL;
        cuda_free_tracked(cuda_g.scratch);
        cuda_g.scratch = NULL;
        cuda_g.scratch_bytes = 0;
    }
    /* Half as much again, so that a few growing shapes settle quickly. */
    want = bytes + bytes / 2;
    want = (want + (1u << 20) - 1) / (1u << 20) * (1u << 20);
    cuda_g.scratch = cuda_malloc_tracked(want, what);
    if (cuda_g.scratch == NULL)
        return NULL;
    cuda_g.scratch_bytes = want;
    return cuda_g.scratch;
}

static void *
cuda_alloc(size_t bytes, const char *what)
{
    void *p;

    if (cuda_op_begin("alloc") != 0)
        return NULL;
    p = cuda_malloc_tracked(bytes, what);
    if (p != NULL && !CUDA_OK(cudaMemsetAsync(p, 0, bytes, cuda_g.stream)))
        return NULL;
    return p;
}

static void
cuda_release(void *p)
{
    /* Also after a failure: the caller's cleanup frees what it holds (but
     * after close() everything is freed already). */
    if (!cuda_g.open)
        return;
    cuda_g.st.op = "release";
    cuda_free_tracked(p);
}

/* Pinned memory; a failure is not sticky (the caller may do without) and
 * returns NULL. */
static void *
cuda_host_alloc(size_t bytes)
{
    void *p = NULL;

    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

static void
cuda_host_release(void *p)
{
    if (p != NULL && cudaFreeHost(p) != cudaSuccess)
        (void)cudaGetLastError();
}

static int
cuda_download(void *host_dst, const void *src, size_t bytes)
{
    if (cuda_g.st.failed || !cuda_g.open)
        return -1;
    cuda_g.st.op = "download";
    if (bytes > 0 &&
        !CUDA_OK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost,
                                 cuda_g.stream)))
        return -1;
    CUDA_OK(cudaStreamSynchronize(cuda_g.stream));
    return cuda_g.st.failed ? -1 : 0;
}

/* Synchronous: the host may reuse host_src on return (pinned memory
 * included, for which an asynchronous copy would still be reading it). */
static void
cuda_upload(void *dst, const void *host_src, size_t bytes)
{
    if (cuda_g.st.failed || !cuda_g.open || bytes == 0)
        return;
    cuda_g.st.op = "upload";
    CUDA_OK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice,
                            cuda_g.stream)) &&
        CUDA_OK(cudaStreamSynchronize(cuda_g.stream));
}

static void
cuda_upload_async(void *dst, const void *pinned_src, size_t bytes)
{
    if (cuda_op_begin("upload_async") != 0 || bytes == 0)
        return;
    /* After the compute work queued before the last upload_wait() (ops.h):
     * a never-recorded event is no wait at all. */
    CUDA_OK(cudaStreamWaitEvent(cuda_g.copy_stream, cuda_g.compute_mark, 0)) &&
        CUDA_OK(cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice,
                                cuda_g.copy_stream));
}

/* Marks the compute work queued so far (the next upload_async() waits
 * for it), orders the compute stream after the uploads so far, and waits
 * on the host for those queued before the previous call (ops.h: their
 * pinned memory may then be written again). */
static void
cuda_upload_wait(void)
{
    cudaEvent_t now = cuda_g.copy_done[cuda_g.n_waits % 2];
    cudaEvent_t before = cuda_g.copy_done[(cuda_g.n_waits + 1) % 2];

    if (cuda_op_begin("upload_wait") != 0)
        return;
    if (cuda_g.n_waits > 0 && !CUDA_OK(cudaEventSynchronize(before)))
        return;
    if (CUDA_OK(cudaEventRecord(cuda_g.compute_mark, cuda_g.stream)) &&
        CUDA_OK(cudaEventRecord(now, cuda_g.copy_stream)) &&
        CUDA_OK(cudaStreamWaitEvent(cuda_g.stream, now, 0)))
        cuda_g.n_waits++;
}

static void
cuda_copy(void *dst, const void *src, size_t bytes)
{
    if (cuda_op_begin("copy") != 0 || bytes == 0)
        return;
    if (dst == NULL || src == NULL) {
        cuda_bad_arg("%s is NULL", dst == NULL ? "dst" : "src");
        return;
    }
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                            cuda_g.stream));
}

static void
cuda_zero(void *p, size_t bytes)
{
    if (cuda_op_begin("zero") != 0 || bytes == 0)
        return;
    if (p == NULL) {
        cuda_bad_arg("p is NULL");
        return;
    }
    CUDA_OK(cudaMemsetAsync(p, 0, bytes, cuda_g.stream));
}

static void *
cuda_queue(void)
{
    return (void *)cuda_g.stream;
}

/* ------------------------------------------------------------ open, close */

/* Frees what cuda_g holds (a partial setup included) and forgets it. */
static void
teardown(void)
{
    if (cuda_g.stream != NULL) {
        (void)cudaStreamSynchronize(cuda_g.stream);
        (void)cudaStreamSynchronize(cuda_g.copy_stream);
    }
    cuda_sdpa_close();
    cuda_matmul_release();
    if (cuda_g.lt != NULL)
        cublasLtDestroy(cuda_g.lt);
    /* Whatever the caller did not release, the scratch and the workspace
     * included. */
    for (size_t i = 0; i < cuda_g.allocs.cap; i++)
        if (cuda_g.allocs.keys[i] > 1)
            (void)cudaFree((void *)cuda_g.allocs.keys[i]);
    cuda_ptr_map_release(&cuda_g.allocs);
    for (int i = 0; i < 2; i++)
        if (cuda_g.copy_done[i] != NULL)
            cudaEventDestroy(cuda_g.copy_done[i]);
    if (cuda_g.compute_mark != NULL)
        cudaEventDestroy(cuda_g.compute_mark);
    if (cuda_g.copy_stream != NULL)
        cudaStreamDestroy(cuda_g.copy_stream);
    if (cuda_g.stream != NULL)
        cudaStreamDestroy(cuda_g.stream);
    (void)cudaGetLastError();
    memset(&cuda_g, 0, sizeof(cuda_g));
}

static void
cuda_close(void)
{
    if (cuda_g.open)
        teardown();
}

static void
fill_table(void)
{
    struct ops *o = &cuda_ops;

    memset(o, 0, sizeof(*o));
    o->name = "cuda";
    o->dtype = cuda_g.dtype;
    o->device = cuda_g.device;
    o->sync = cuda_sync;
    o->error = cuda_error;
    o->notice = cuda_notice_take;
    o->mem_info = cuda_mem_info;
    o->device_info = cuda_device_info;
    o->alloc = cuda_alloc;
    o->release = cuda_release;
    o->host_alloc = cuda_host_alloc;
    o->host_release = cuda_host_release;
    o->download = cuda_download;
    o->upload = cuda_upload;
    o->upload_async = cuda_upload_async;
    o->upload_wait = cuda_upload_wait;
    o->copy = cuda_copy;
    o->zero = cuda_zero;
    o->cast = cuda_cast;
    o->queue = cuda_queue;
    o->linear_fwd = cuda_linear_fwd;
    o->linear_act_fwd = cuda_linear_act_fwd;
    o->linear_bwd = cuda_linear_bwd;
    o->embed_fwd = cuda_embed_fwd;
    o->embed_bwd = cuda_embed_bwd;
    o->layernorm_fwd = cuda_layernorm_fwd;
    o->residual_layernorm_fwd = cuda_residual_layernorm_fwd;
    o->layernorm_bwd = cuda_layernorm_bwd;
    o->act_fwd = cuda_act_fwd;
    o->act_bwd = cuda_act_bwd;
    o->add = cuda_add;
    o->accumulate = cuda_accumulate;
    o->scale = cuda_scale;
    o->accumulate_f32 = cuda_accumulate_f32;
    o->scale_f32 = cuda_scale_f32;
    o->dropout_fwd = cuda_dropout_fwd;
    o->dropout_bwd = cuda_dropout_bwd;
    o->attention_state_bytes = cuda_attention_state_bytes_op;
    o->attention_scratch_bytes = cuda_attention_scratch_bytes_op;
    o->attention_fwd = cuda_attention_fwd;
    o->attention_bwd = cuda_attention_bwd;
    o->attention_kv_fwd = cuda_attention_kv_fwd;
    o->xent = cuda_xent;
    o->xent_max = cuda_xent_max;
    o->xent_partial = cuda_xent_partial;
    o->xent_finish = cuda_xent_finish;
    o->gather_rows = cuda_gather_rows;
    o->scatter_add_rows = cuda_scatter_add_rows;
    o->sum_acc = cuda_sum_acc;
    o->sumsq_acc = cuda_sumsq_acc;
    o->loss_check = cuda_loss_check;
    o->step_prepare = cuda_step_prepare;
    o->adamw = cuda_adamw;
    o->step_finish = cuda_step_finish;
    o->close = cuda_close;
}

static int open_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
open_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Which GPU, and whether it can run this build; 0 or -1 with err set. */
static int
pick_device(const struct ops_request *r, char *err, size_t errlen)
{
    int driver = 0, n = 0, dev;
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    struct cudaDeviceProp prop;
    cudaError_t e;

    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
        (void)cudaGetLastError();
        return open_fail(err, errlen,
                         "no GPU is visible: no NVIDIA driver is installed "
                         "(libcuda.so was not found)");
    }
    e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver) {
        (void)cudaGetLastError();
        return open_fail(err, errlen,
                         "the NVIDIA driver supports CUDA %d.%d, older than "
                         "the CUDA %d.%d this build was made with "
                         "(cudaGetDeviceCount: %s): update the driver",
                         driver / 1000, driver % 1000 / 10,
                         CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
                         cudaGetErrorString(e));
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        (void)cudaGetLastError();
        return open_fail(err, errlen,
                         "no GPU is visible (cudaGetDeviceCount: "
                         "%s)%s%s",
                         cudaGetErrorString(cudaErrorNoDevice),
                         vis != NULL ? "; CUDA_VISIBLE_DEVICES is " : "",
                         vis != NULL ? vis : "");
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return open_fail(err, errlen,
                         "cannot count the GPUs "
                         "(cudaGetDeviceCount: %s)",
                         cudaGetErrorString(e));
    }
    dev = (r->local_rank > 0 ? r->local_rank : 0) % n;
    e = cudaGetDeviceProperties(&prop, dev);
    if (e == cudaSuccess)
        e = cudaSetDevice(dev);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return open_fail(err, errlen, "cannot use GPU %d: %s", dev,
                         cudaGetErrorString(e));
    }
    if (prop.major < 8)
        return open_fail(err, errlen,
                         "GPU %d (%s) has compute capability %d.%d; this "
                         "backend needs 8.0 or newer (Ampere, Hopper)",
                         dev, prop.name, prop.major, prop.minor);
    cuda_g.device = dev;
    cuda_g.sm = prop.major * 10 + prop.minor;
    cuda_g.n_sm = prop.multiProcessorCount;
    cuda_g.smem_optin = prop.sharedMemPerBlockOptin;
    return 0;
}

/* On success err says what was opened, for ops_open()'s log line: "NVIDIA
 * H100 80GB HBM3, compute capability 9.0, 79.1 GiB; bfloat16; CUDA 13.0
 * (driver 13.0), cuDNN 9.19.0". */
static void
describe(char *err, size_t errlen)
{
    struct cudaDeviceProp prop;
    int runtime = 0, driver = 0;
    char total[32], cudnn[48] = "";

    if (err == NULL || errlen == 0)
        return;
    if (cudaGetDeviceProperties(&prop, cuda_g.device) != cudaSuccess) {
        (void)cudaGetLastError();
        err[0] = '\0';
        return;
    }
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    if (cuda_g.cudnn != NULL)
        snprintf(cudnn, sizeof(cudnn), ", cuDNN %ld.%ld.%ld",
                 cuda_g.cudnn_version / 10000, cuda_g.cudnn_version / 100 % 100,
                 cuda_g.cudnn_version % 100);
    snprintf(err, errlen,
             "%s, compute capability %d.%d, %s; %s%s; CUDA %d.%d (driver "
             "%d.%d)%s",
             prop.name, prop.major, prop.minor,
             cuda_format_bytes(total, sizeof(total), prop.totalGlobalMem),
             cuda_g.dtype == OPS_BF16  ? "bfloat16"
             : cuda_g.dtype == OPS_F16 ? "float16"
                                       : "float32",
             cuda_g.dtype == OPS_F32 && cuda_g.tf32 ? " (TF32 GEMMs)" : "",
             runtime / 1000, runtime % 1000 / 10, driver / 1000,
             driver % 1000 / 10, cudnn);
}

const struct ops *
ops_cuda(const struct ops_request *r, char *err, size_t errlen)
{
    if (r == NULL ||
        (r->dtype != OPS_F32 && r->dtype != OPS_BF16 && r->dtype != OPS_F16)) {
        open_fail(err, errlen, "an unknown compute dtype was asked for");
        return NULL;
    }
    if (cuda_g.open) {
        open_fail(err, errlen,
                  "the CUDA backend is open already (one per "
                  "process)");
        return NULL;
    }
    memset(&cuda_g, 0, sizeof(cuda_g));
    if (pick_device(r, err, errlen) != 0) {
        memset(&cuda_g, 0, sizeof(cuda_g));
        return NULL;
    }
    cuda_g.dtype = r->dtype;
    cuda_g.deterministic = r->deterministic;
    cuda_g.tf32 = r->tf32 && r->dtype == OPS_F32;
    cuda_g.st.op = "setup";
    if (CUDA_OK(
            cudaStreamCreateWithFlags(&cuda_g.stream, cudaStreamNonBlocking)) &&
        CUDA_OK(cudaStreamCreateWithFlags(&cuda_g.copy_stream,
                                          cudaStreamNonBlocking)) &&
        CUDA_OK(cudaEventCreateWithFlags(&cuda_g.copy_done[0],
                                         cudaEventDisableTiming)) &&
        CUDA_OK(cudaEventCreateWithFlags(&cuda_g.copy_done[1],
                                         cudaEventDisableTiming)) &&
        CUDA_OK(cudaEventCreateWithFlags(&cuda_g.compute_mark,
                                         cudaEventDisableTiming)) &&
        CUBLAS_OK(cublasLtCreate(&cuda_g.lt))) {
        cuda_g.lt_ws = cuda_malloc_tracked(LT_WORKSPACE, "cuBLASLt workspace");
        cuda_g.lt_ws_bytes = LT_WORKSPACE;
    }
    if (!cuda_g.st.failed && cuda_g.dtype != OPS_F32)
        cuda_sdpa_open();
    if (cuda_g.st.failed) {
        /* The message without its "cuda: " (ops_open() says which
         * device was asked for). */
        const char *m = cuda_g.st.msg;

        open_fail(err, errlen, "%s", strncmp(m, "cuda: ", 6) == 0 ? m + 6 : m);
        teardown();
        return NULL;
    }
    cuda_g.st.op = cuda_g.st.queued = NULL;
    cuda_g.open = 1;
    fill_table();
    describe(err, errlen);
    return &cuda_ops;
}
