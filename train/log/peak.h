/* SPDX-License-Identifier: MIT */
/*
 * peak.h: the FP32 peak that MFU is reported against on the CPU, from the
 * processor's description rather than a timing, so that it is the same
 * from run to run: cores x clock x FP32 FLOPs a core can do a cycle (SIMD
 * lanes x 2 for a fused multiply-add x the FMA units), the instruction
 * set read from /proc/cpuinfo's flags and family.  On a GPU: its streaming
 * multiprocessors x clock x the dense FLOPs one does a cycle in the
 * compute dtype.
 */
#ifndef TRAIN_PEAK_H
#define TRAIN_PEAK_H

#include <stddef.h>

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cpu_peak {
    double gflops;          /* cores * ghz * flops_per_cycle */
    int cores;              /* physical cores counted */
    double ghz;             /* the clock */
    int flops_per_cycle;    /* FP32 FLOPs a core, a cycle */
    const char *isa;        /* how flops_per_cycle was found (static) */
    const char *clock_from; /* where the clock was read (static) */
};

/* peak_cpu_parse: the peak of `cores` cores of the processor that
 * cpuinfo (the text of /proc/cpuinfo) describes.  The clock is, the first
 * found: base_ghz (cpufreq's base_frequency; <= 0: none), the "@ x.xxGHz"
 * of the model name, max_ghz (cpufreq's cpuinfo_max_freq; <= 0: none),
 * the first "cpu MHz" (the current clock, fixed in a virtual machine).
 * Returns 0, or -1 when no clock is found (p untouched). */
int peak_cpu_parse(const char *cpuinfo, double base_ghz, double max_ghz,
                   int cores, struct cpu_peak *p);

/* peak_cpu: this machine's peak for a run on `threads` threads: the
 * physical cores among the CPUs this process may run on, at most threads
 * (two threads of one core share its FMA units), with /proc/cpuinfo and
 * cpu0's cpufreq files as peak_cpu_parse() reads them.  Returns 0, or -1
 * when it cannot tell (no /proc/cpuinfo, or no clock in it). */
int peak_cpu(int threads, struct cpu_peak *p);

struct gpu_peak {
    double tflops;          /* sms * ghz * flops_per_cycle / 1000 */
    int sms;                /* streaming multiprocessors */
    double ghz;             /* the clock */
    int flops_per_cycle;    /* dense FLOPs an SM does a cycle */
    const char *unit;       /* "tensor cores", "tensor cores, TF32" or
                               "CUDA cores" (static) */
    const char *clock_from; /* the datasheet's boost clock or the
                               device's maximum (static) */
};

/* peak_gpu: the dense peak of the GPU named name (cudaDeviceProp.name),
 * of compute capability cc (major * 10 + minor) with sms multiprocessors
 * and a maximum clock of clock_khz, for compute in dtype (OPS_F32 with
 * tf32: TF32 GEMMs): bfloat16 on an H100 SXM or H200, 132 x 1.83 GHz x
 * 4096 = 989.4 TFLOP/s, NVIDIA's figure.  The clock is the datasheet's
 * for the tensor cores of the GPUs it names (H100, H200, A100), else the
 * device's maximum.  Returns 0, or -1 for an architecture it does not
 * know (p untouched). */
int peak_gpu(const char *name, int cc, int sms, int clock_khz,
             enum ops_dtype dtype, int tf32, struct gpu_peak *p);

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_PEAK_H */
