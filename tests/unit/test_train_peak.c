/* SPDX-License-Identifier: MIT */
/*
 * test_train_peak.c: unit tests of the CPU's FP32 peak that train reports
 * MFU against (train/log/peak.c): /proc/cpuinfo texts of the processors it
 * tells apart (Zen 5, Zen 4, Zen, Skylake-SP, Haswell, Sandy Bridge, an
 * SSE-only CPU, an Arm server), where the clock comes from, the failure
 * without a clock, and this machine's peak twice (the same figure: no
 * timing in it); a GPU's dense peak (peak_gpu.c) against NVIDIA's figures.
 */
#include <math.h>
#include <string.h>

#include "../harness.h"
#include "log/peak.h"

#define CLOSE(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

/* A /proc/cpuinfo entry of one processor. */
static void
cpuinfo(char *out, size_t len, const char *vendor, int family, int model,
        const char *name, const char *mhz, const char *flags)
{
    snprintf(out, len,
             "processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\n"
             "model\t\t: %d\nmodel name\t: %s\nstepping\t: 1\n"
             "cpu MHz\t\t: %s\ncache size\t: 1024 KB\nflags\t\t: %s\n"
             "bogomips\t: 5192.19\n\n",
             vendor, family, model, name, mhz, flags);
}

static const char avx512[] = "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2 "
                             "avx512f avx512dq avx512bw avx512vl";
static const char avx2[] = "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx avx2";

static void
test_peak_zen5_vm(void)
{
    char t[1024];
    struct cpu_peak p;

    /* This project's machines: a KVM guest of an EPYC (family 0x1a). */
    cpuinfo(t, sizeof(t), "AuthenticAMD", 26, 2, "AMD EPYC", "2596.096",
            avx512);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 2, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 64);
    CHECK_EQ_INT(p.cores, 2);
    CHECK(CLOSE(p.ghz, 2.596096));
    CHECK(CLOSE(p.gflops, 2 * 2.596096 * 64));
    CHECK_EQ_STR(p.clock_from, "cpu MHz of /proc/cpuinfo");
    CHECK(strstr(p.isa, "AVX-512") != NULL);
}

static void
test_peak_zen4_and_zen(void)
{
    char t[1024];
    struct cpu_peak p;

    cpuinfo(t, sizeof(t), "AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core",
            "2400.000", avx512);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 96, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 32); /* 512-bit ops on 256-bit pipes */
    CHECK(CLOSE(p.gflops, 96 * 2.4 * 32));
    cpuinfo(t, sizeof(t), "AuthenticAMD", 23, 1, "AMD EPYC 7601 32-Core",
            "2200.000", avx2);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 32, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 16); /* Zen: 2 x 128-bit FMA */
    cpuinfo(t, sizeof(t), "AuthenticAMD", 23, 49, "AMD EPYC 7742 64-Core",
            "2250.000", avx2);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 64, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 32); /* Zen 2 */
}

static void
test_peak_intel(void)
{
    char t[1024];
    struct cpu_peak p;

    /* The model name's base clock, not the current (turbo) one. */
    cpuinfo(t, sizeof(t), "GenuineIntel", 6, 85,
            "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "3100.000", avx512);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 3.7, 20, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 64);
    CHECK(CLOSE(p.ghz, 2.4));
    CHECK(CLOSE(p.gflops, 20 * 2.4 * 64));
    CHECK_EQ_STR(p.clock_from, "the model name");
    /* cpufreq's base_frequency first. */
    CHECK_EQ_INT(peak_cpu_parse(t, 2.2, 3.7, 20, &p), 0);
    CHECK(CLOSE(p.ghz, 2.2));
    CHECK_EQ_STR(p.clock_from, "cpufreq base_frequency");
    cpuinfo(t, sizeof(t), "GenuineIntel", 6, 63,
            "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz", "1200.000", avx2);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 12, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 32);
    cpuinfo(t, sizeof(t), "GenuineIntel", 6, 45,
            "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "2600.000",
            "fpu sse sse2 ssse3 sse4_1 sse4_2 avx");
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 8, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 16);
    cpuinfo(t, sizeof(t), "GenuineIntel", 6, 23, "Intel(R) Core(TM)2 Duo",
            "2000.000", "fpu sse sse2 ssse3 sse4_1 avx512_fake");
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 0, 2, &p), 0);
    CHECK_EQ_INT(p.flops_per_cycle, 8); /* "avx512_fake" is no avx512f */
}

static void
test_peak_clock_sources(void)
{
    char t[1024];
    struct cpu_peak p, q;

    /* No GHz in the name: cpufreq's maximum before the current clock. */
    cpuinfo(t, sizeof(t), "AuthenticAMD", 26, 2, "AMD EPYC 9B45", "1500.000",
            avx512);
    CHECK_EQ_INT(peak_cpu_parse(t, 0, 3.1, 4, &p), 0);
    CHECK(CLOSE(p.ghz, 3.1));
    CHECK_EQ_STR(p.clock_from, "cpufreq cpuinfo_max_freq");
    /* No clock anywhere: an error, p untouched. */
    memset(&q, 0x5a, sizeof(q));
    p = q;
    CHECK_EQ_INT(
        peak_cpu_parse("processor\t: 0\nFeatures\t: fp asimd\n", 0, 0, 4, &p),
        -1);
    CHECK_EQ_MEM(&p, &q, sizeof(p));
    /* Arm: NEON, with cpufreq's clock. */
    CHECK_EQ_INT(peak_cpu_parse("processor\t: 0\nFeatures\t: fp asimd "
                                "evtstrm aes\nCPU implementer\t: 0x41\n",
                                0, 3.0, 64, &p),
                 0);
    CHECK_EQ_INT(p.flops_per_cycle, 16);
    CHECK(CLOSE(p.gflops, 64 * 3.0 * 16));
}

static void
test_peak_this_machine(void)
{
    struct cpu_peak a, b;

    if (peak_cpu(0, &a) < 0)
        SKIP("no clock in /proc/cpuinfo");
    CHECK(a.gflops > 0 && a.cores >= 1 && a.flops_per_cycle >= 8);
    CHECK_EQ_INT(peak_cpu(0, &b), 0);
    CHECK(a.gflops == b.gflops); /* the same every time */
    CHECK_EQ_INT(peak_cpu(1, &b), 0);
    CHECK_EQ_INT(b.cores, 1); /* one thread: one core's peak */
    CHECK(CLOSE(b.gflops, a.gflops / a.cores));
}

/* GPUs: NVIDIA's datasheet figures (dense, TFLOP/s) from the SMs, the
 * clocks and the per-SM rates; the device names as the driver gives
 * them, their maximum clocks as cudaDevAttrClockRate reports them. */
static void
test_peak_gpu(void)
{
    struct gpu_peak p, q;

    /* H100 SXM, bf16: 989.4 (the 989). */
    CHECK_EQ_INT(
        peak_gpu("NVIDIA H100 80GB HBM3", 90, 132, 1980000, OPS_BF16, 0, &p),
        0);
    CHECK(fabs(p.tflops - 989.4) < 0.05);
    CHECK_EQ_INT(p.flops_per_cycle, 4096);
    CHECK(strcmp(p.clock_from, "the datasheet's boost clock") == 0);
    /* The same in float16; H200 is H100 SXM's compute. */
    CHECK_EQ_INT(
        peak_gpu("NVIDIA H100 80GB HBM3", 90, 132, 1980000, OPS_F16, 0, &q), 0);
    CHECK(q.tflops == p.tflops);
    CHECK_EQ_INT(peak_gpu("NVIDIA H200", 90, 132, 1980000, OPS_BF16, 0, &q), 0);
    CHECK(q.tflops == p.tflops);
    /* fp32 on the CUDA cores at the maximum clock: 66.9 (datasheet 67);
     * TF32: 494.7. */
    CHECK_EQ_INT(
        peak_gpu("NVIDIA H100 80GB HBM3", 90, 132, 1980000, OPS_F32, 0, &q), 0);
    CHECK(fabs(q.tflops - 66.9) < 0.05);
    CHECK(strcmp(q.unit, "CUDA cores") == 0);
    CHECK_EQ_INT(
        peak_gpu("NVIDIA H100 80GB HBM3", 90, 132, 1980000, OPS_F32, 1, &q), 0);
    CHECK(fabs(q.tflops - 494.7) < 0.05);
    /* H100 PCIe: 756.5; A100: 312 (bf16), 156 (TF32), 19.5 (fp32). */
    CHECK_EQ_INT(
        peak_gpu("NVIDIA H100 PCIe", 90, 114, 1755000, OPS_BF16, 0, &q), 0);
    CHECK(fabs(q.tflops - 756.5) < 0.1); /* 1513 sparse / 2 */
    CHECK_EQ_INT(
        peak_gpu("NVIDIA A100-SXM4-80GB", 80, 108, 1410000, OPS_BF16, 0, &q),
        0);
    CHECK(fabs(q.tflops - 311.9) < 0.05);
    CHECK_EQ_INT(
        peak_gpu("NVIDIA A100-SXM4-80GB", 80, 108, 1410000, OPS_F32, 1, &q), 0);
    CHECK(fabs(q.tflops - 155.9) < 0.05);
    CHECK_EQ_INT(
        peak_gpu("NVIDIA A100-SXM4-80GB", 80, 108, 1410000, OPS_F32, 0, &q), 0);
    CHECK(fabs(q.tflops - 19.5) < 0.05);
    /* A name it does not list: the device's maximum clock. */
    CHECK_EQ_INT(peak_gpu("NVIDIA H100 NVL", 90, 132, 1785000, OPS_BF16, 0, &q),
                 0);
    CHECK(CLOSE(q.tflops, 132 * 1.785 * 4096 / 1e3));
    CHECK(strcmp(q.clock_from, "the device's maximum clock") == 0);
    /* An architecture it does not know: -1, p untouched. */
    q = p;
    CHECK_EQ_INT(peak_gpu("NVIDIA B200", 100, 148, 1965000, OPS_BF16, 0, &q),
                 -1);
    CHECK_EQ_MEM(&q, &p, sizeof(p));
}

TESTS(test_train_peak, TEST(test_peak_zen5_vm), TEST(test_peak_zen4_and_zen),
      TEST(test_peak_intel), TEST(test_peak_clock_sources),
      TEST(test_peak_this_machine), TEST(test_peak_gpu))
