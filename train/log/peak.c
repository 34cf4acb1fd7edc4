/* SPDX-License-Identifier: MIT */
/* peak.c: the CPU's FP32 peak for MFU (see peak.h). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peak.h"
#include "banned.h"

/* The value of the first line "key<blanks>: value" of text, copied into
 * out (empty if there is none). */
static void
field(const char *text, const char *key, char *out, size_t len)
{
    size_t k = strlen(key);

    out[0] = '\0';
    for (const char *l = text; l && *l;
         l = strchr(l, '\n'), l = l ? l + 1 : l) {
        const char *p = l + k, *end;

        if (strncmp(l, key, k) != 0)
            continue;
        p += strspn(p, " \t");
        if (*p != ':')
            continue;
        p += 1 + strspn(p + 1, " \t");
        end = strchr(p, '\n');
        if (end == NULL)
            end = p + strlen(p);
        snprintf(out, len, "%.*s", (int)(end - p), p);
        return;
    }
}

/* Whether the blank-separated list has the word. */
static int
has_word(const char *list, const char *word)
{
    size_t n = strlen(word);

    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

/* FP32 FLOPs per cycle of one core: SIMD lanes x 2 (FMA) x FMA units. */
static int
flops_per_cycle(const char *cpuinfo, const char **isa)
{
    char flags[8192], vendor[64], family[16], model[16], features[4096];
    int amd, fam, mod;

    field(cpuinfo, "flags", flags, sizeof(flags));
    field(cpuinfo, "vendor_id", vendor, sizeof(vendor));
    field(cpuinfo, "cpu family", family, sizeof(family));
    field(cpuinfo, "model", model, sizeof(model));
    amd = strcmp(vendor, "AuthenticAMD") == 0;
    fam = (int)strtol(family, NULL, 10);
    mod = (int)strtol(model, NULL, 10);
    if (flags[0] == '\0') { /* not x86: Arm's "Features" */
        field(cpuinfo, "Features", features, sizeof(features));
        if (has_word(features, "asimd")) {
            *isa = "NEON, 2 x 128-bit FMA";
            return 16;
        }
        *isa = "unknown: 4 lanes, 2 FLOPs a cycle each";
        return 8;
    }
    if (has_word(flags, "avx512f")) {
        if (amd && fam < 0x1a) { /* Zen 4: 512-bit ops on 256-bit pipes */
            *isa = "AVX-512 on Zen 4's 2 x 256-bit FMA";
            return 32;
        }
        *isa = "AVX-512, 2 x 512-bit FMA";
        return 64;
    }
    if (has_word(flags, "avx2") && has_word(flags, "fma")) {
        if (amd && fam == 0x17 && mod < 0x30) { /* Zen, Zen+ */
            *isa = "AVX2 on Zen's 2 x 128-bit FMA";
            return 16;
        }
        *isa = "AVX2, 2 x 256-bit FMA";
        return 32;
    }
    if (has_word(flags, "avx")) {
        *isa = "AVX, 256-bit add + multiply";
        return 16;
    }
    *isa = "SSE, 128-bit add + multiply";
    return 8;
}

/* "... @ 2.40GHz" in the model name: GHz, or 0. */
static double
model_name_ghz(const char *cpuinfo)
{
    char name[256];
    const char *at;
    double ghz;

    field(cpuinfo, "model name", name, sizeof(name));
    at = strrchr(name, '@');
    if (at && sscanf(at + 1, "%lfGHz", &ghz) == 1 && ghz > 0)
        return ghz;
    return 0;
}

int
peak_cpu_parse(const char *cpuinfo, double base_ghz, double max_ghz, int cores,
               struct cpu_peak *p)
{
    char mhz[64];
    struct cpu_peak q;

    memset(&q, 0, sizeof(q));
    if (base_ghz > 0) {
        q.ghz = base_ghz;
        q.clock_from = "cpufreq base_frequency";
    } else if ((q.ghz = model_name_ghz(cpuinfo)) > 0) {
        q.clock_from = "the model name";
    } else if (max_ghz > 0) {
        q.ghz = max_ghz;
        q.clock_from = "cpufreq cpuinfo_max_freq";
    } else {
        field(cpuinfo, "cpu MHz", mhz, sizeof(mhz));
        q.ghz = strtod(mhz, NULL) / 1000;
        q.clock_from = "cpu MHz of /proc/cpuinfo";
    }
    if (!(q.ghz > 0))
        return -1;
    q.cores = cores > 0 ? cores : 1;
    q.flops_per_cycle = flops_per_cycle(cpuinfo, &q.isa);
    q.gflops = q.cores * q.ghz * q.flops_per_cycle;
    *p = q;
    return 0;
}

/* A whole small text file, NUL-terminated, malloc'd; NULL if unreadable. */
static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t len = 0, cap = 0, n;
    char *s = NULL;

    if (f == NULL)
        return NULL;
    do {
        if (len + 4096 + 1 > cap) {
            char *t = realloc(s, cap = 2 * cap + 4096 + 1);

            if (t == NULL) {
                free(s);
                fclose(f);
                return NULL;
            }
            s = t;
        }
        n = fread(s + len, 1, 4096, f);
        len += n;
    } while (n > 0);
    fclose(f);
    s[len] = '\0';
    return s;
}

/* A number in a sysfs file (kHz for cpufreq), or -1. */
static long
sys_number(const char *path)
{
    char *s = slurp(path);
    long v = s ? strtol(s, NULL, 10) : -1;

    free(s);
    return v;
}

/* The physical cores among the CPUs this process may run on: distinct
 * (package, core) pairs of their topology; the CPUs if that is missing. */
static int
physical_cores(void)
{
    cpu_set_t set;
    long seen[CPU_SETSIZE][2];
    int n = 0, cpus = 0;

    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        char path[128];
        long pkg, core;
        int dup = 0;

        if (!CPU_ISSET(c, &set))
            continue;
        cpus++;
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id",
                 c);
        pkg = sys_number(path);
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu%d/topology/core_id", c);
        core = sys_number(path);
        if (pkg < 0 || core < 0)
            return CPU_COUNT(&set);
        for (int i = 0; i < n && !dup; i++)
            dup = seen[i][0] == pkg && seen[i][1] == core;
        if (!dup) {
            seen[n][0] = pkg;
            seen[n][1] = core;
            n++;
        }
    }
    return n > 0 ? n : (cpus > 0 ? cpus : 1);
}

int
peak_cpu(int threads, struct cpu_peak *p)
{
    char *info = slurp("/proc/cpuinfo");
    long base =
        sys_number("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
    long max =
        sys_number("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    int cores = physical_cores(), rc;

    if (info == NULL)
        return -1;
    if (threads > 0 && threads < cores)
        cores = threads;
    rc = peak_cpu_parse(info, base > 0 ? base / 1e6 : 0,
                        max > 0 ? max / 1e6 : 0, cores, p);
    free(info);
    return rc;
}
