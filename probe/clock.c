/* latscope-probe: clock selection, TSC calibration, overhead and resolution. */
#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#if HAVE_TSC
#include <cpuid.h>
#endif

enum clock_kind g_clock = CLK_MONO_RAW;

const char *clock_name(enum clock_kind k) {
    switch (k) {
    case CLK_TSC: return "tsc";
    case CLK_MONO_RAW: return "mono_raw";
    default: return "mono";
    }
}

int tsc_invariant(void) {
#if HAVE_TSC
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
        __get_cpuid(0x80000007u, &a, &b, &c, &d);
        if (d & (1u << 8)) return 1;
    }
    /* Hypervisors often hide the CPUID bit but the kernel knows: constant + nonstop. */
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc") &&
                 strstr(line, " rdtscp");
            break;
        }
    }
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

int clock_parse(const char *s, enum clock_kind *out) {
    if (!strcmp(s, "auto")) {
        *out = (HAVE_TSC && tsc_invariant()) ? CLK_TSC : CLK_MONO_RAW;
        return 0;
    }
    if (!strcmp(s, "tsc")) *out = CLK_TSC;
    else if (!strcmp(s, "mono_raw")) *out = CLK_MONO_RAW;
    else if (!strcmp(s, "mono")) *out = CLK_MONO;
    else return -1;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#if HAVE_TSC
/* One (tsc, mono_raw) pair, bracketed tightly: the pair with the shortest bracket of 16. */
static void tsc_pair(double *tsc, double *ns, double *width) {
    double best = INFINITY;
    *tsc = *ns = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t t1 = tsc_start();
        uint64_t m = posix_now(CLOCK_MONOTONIC_RAW);
        uint64_t t2 = tsc_end();
        double w = (double)(t2 - t1);
        if (w < best) {
            best = w;
            *tsc = ((double)t1 + (double)t2) / 2.0;
            *ns = (double)m;
        }
    }
    *width = best;
}
#endif

double clock_tsc_calibrate(double interval_ms, double *ppm) {
#if HAVE_TSC
    double t0 = 0, n0 = 0, w0 = 0, t1 = 0, n1 = 0, w1 = 0;
    tsc_pair(&t0, &n0, &w0);
    struct timespec req = {(time_t)(interval_ms / 1000.0),
                           (long)(fmod(interval_ms, 1000.0) * 1e6)};
    nanosleep(&req, NULL);
    tsc_pair(&t1, &n1, &w1);
    double ticks = t1 - t0, ns = n1 - n0;
    if (ticks <= 0 || ns <= 0) return 0;
    /* Uncertainty: both brackets' widths (in ticks) over the interval, plus 1 ns per read. */
    if (ppm) *ppm = ((w0 + w1) / ticks + 2.0 / ns) * 1e6;
    return ns / ticks;
#else
    (void)interval_ms;
    if (ppm) *ppm = 0;
    return 0;
#endif
}

double clock_measure_overhead(int reps) {
    double *d = xcalloc((size_t)reps, sizeof(double));
    for (int i = 0; i < reps; i++) {
        uint64_t a = clk_start();
        uint64_t b = clk_end();
        d[i] = (double)(b - a);
    }
    qsort(d, (size_t)reps, sizeof(double), cmp_double);
    double med = d[reps / 2];
    free(d);
    return med; /* ticks */
}

double clock_measure_resolution(int reps) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < reps; i++) {
        uint64_t a = clk_start(), b;
        int spins = 0;
        do {
            b = clk_start();
        } while (b == a && ++spins < 1000000);
        if (b > a && b - a < best) best = b - a;
    }
    return best == UINT64_MAX ? 0 : (double)best; /* ticks */
}

void clock_setup(enum clock_kind k, struct clock_info *info) {
    memset(info, 0, sizeof *info);
    info->kind = k;
    info->name = clock_name(k);
    if (k == CLK_TSC) {
        if (!HAVE_TSC)
            die(EXIT_UNSUPPORTED, "clock tsc is not available on this CPU architecture; "
                                  "use --clock mono_raw");
        if (!tsc_invariant())
            die(EXIT_UNSUPPORTED, "the TSC of this CPU is not invariant (no constant_tsc/"
                                  "nonstop_tsc), so its ticks are not time; use --clock mono_raw");
        info->invariant = 1;
        info->calib_ms = 100;
        info->ns_per_tick = clock_tsc_calibrate(info->calib_ms, &info->calib_ppm);
        if (info->ns_per_tick <= 0)
            die(EXIT_UNSUPPORTED, "TSC calibration against CLOCK_MONOTONIC_RAW failed; "
                                  "use --clock mono_raw");
    } else {
        clockid_t id = k == CLK_MONO_RAW ? CLOCK_MONOTONIC_RAW : CLOCK_MONOTONIC;
        struct timespec res;
        if (clock_getres(id, &res) != 0)
            die(EXIT_UNSUPPORTED, "clock %s is not available here", info->name);
        info->getres_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
        info->ns_per_tick = 1.0;
        info->invariant = HAVE_TSC ? tsc_invariant() : 0;
    }
    g_clock = k;
    info->overhead_ns = clock_measure_overhead(20001) * info->ns_per_tick;
    info->resolution_ns = clock_measure_resolution(2000) * info->ns_per_tick;
}
