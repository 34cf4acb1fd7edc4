/* SPDX-License-Identifier: MIT */
/*
 * peak.h: the FP32 peak that MFU is reported against on the CPU, from the
 * processor's description rather than a timing, so that it is the same
 * from run to run: cores x clock x FP32 FLOPs a core can do a cycle (SIMD
 * lanes x 2 for a fused multiply-add x the FMA units), the instruction
 * set read from /proc/cpuinfo's flags and family.
 */
#ifndef TRAIN_PEAK_H
#define TRAIN_PEAK_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif /* TRAIN_PEAK_H */
