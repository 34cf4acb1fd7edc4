/* SPDX-License-Identifier: MIT */
/* peak_gpu.c: a GPU's dense peak for MFU (see peak.h). */
#include <stdio.h>
#include <string.h>

#include "peak.h"

/* Dense FLOPs a streaming multiprocessor does a cycle, by architecture
 * (compute capability major * 10 + minor): on the tensor cores for
 * bfloat16/float16 (with fp32 accumulation) and TF32, on the CUDA cores
 * for plain fp32 (an FMA is 2).  From NVIDIA's architecture whitepapers:
 * A100 (8.0) 1024 dense FP16 FMA/clk/SM, H100 (9.0) 2048. */
static const struct {
    int cc;
    int half, tf32, fp32;
} per_sm[] = {
    { 80, 2048, 1024, 128 }, /* A100, A30 */
    { 86, 1024, 512, 256 },  /* A40, A10, RTX 30 */
    { 87, 1024, 512, 256 },  /* Jetson Orin */
    { 89, 1024, 512, 256 },  /* L40S, L4, RTX 40 (fp16 with fp32 acc.) */
    { 90, 4096, 2048, 256 }, /* H100, H200, GH200 */
};

/* The datasheet's boost clock for the tensor-core peak, where it is below
 * the device's maximum clock (NVIDIA quotes H100 SXM's 989.4 TFLOP/s bf16
 * at 1830 MHz: 132 SMs x 1.83 GHz x 4096; the device reports 1980 MHz).
 * Matched on the device name the driver gives. */
static const struct {
    const char *name; /* a substring of cudaDeviceProp.name */
    int mhz;
} datasheet[] = {
    { "H100 NVL", 0 },     /* no quoted clock: the maximum */
    { "H100 PCIe", 1620 }, /* 756 TFLOP/s: 114 SMs */
    { "H100", 1830 },      /* "H100 80GB HBM3", "H100 SXM5 ..." */
    { "H200", 1830 },      /* H100's SMs and clocks, more memory */
    { "GH200", 1830 },     /* Grace Hopper's GPU */
    { "H800", 1830 },      /* H100 with less NVLink */
    { "A100", 1410 },      /* 312 TFLOP/s bf16: 108 SMs */
    { "A800", 1410 },      /* A100 with less NVLink */
};

int
peak_gpu(const char *name, int cc, int sms, int clock_khz, enum ops_dtype dtype,
         int tf32, struct gpu_peak *p)
{
    struct gpu_peak q;
    size_t i;

    memset(&q, 0, sizeof(q));
    for (i = 0; i < sizeof(per_sm) / sizeof(per_sm[0]); i++)
        if (per_sm[i].cc == cc)
            break;
    if (i == sizeof(per_sm) / sizeof(per_sm[0]) || sms <= 0)
        return -1;
    q.flops_per_cycle = dtype != OPS_F32 ? per_sm[i].half
                        : tf32           ? per_sm[i].tf32
                                         : per_sm[i].fp32;
    q.unit = dtype != OPS_F32 ? "tensor cores"
             : tf32           ? "tensor cores, TF32"
                              : "CUDA cores";
    q.sms = sms;
    q.ghz = clock_khz / 1e6;
    q.clock_from = "the device's maximum clock";
    /* The datasheet's clock applies to the tensor cores' figure; the CUDA
     * cores' fp32 peak is quoted at the maximum clock. */
    for (size_t k = 0; name && k < sizeof(datasheet) / sizeof(datasheet[0]);
         k++)
        if (strstr(name, datasheet[k].name) != NULL) {
            if (q.unit[0] == 't' && datasheet[k].mhz > 0) {
                q.ghz = datasheet[k].mhz / 1e3;
                q.clock_from = "the datasheet's boost clock";
            }
            break;
        }
    if (q.ghz <= 0)
        return -1;
    q.tflops = q.sms * q.ghz * q.flops_per_cycle / 1e3;
    *p = q;
    return 0;
}
