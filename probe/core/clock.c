/* latscope-probe: clock selection, TSC calibration, overhead and resolution. */
#include "core/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/probe.h"
#if HAVE_TSC
#include <cpuid.h>
#endif
#if HAVE_CNTVCT
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

enum clock_kind g_clock = CLK_MONO_RAW;

#if HAVE_QPC
const enum clock_kind clock_list[] = {CLK_TSC, CLK_MONO_RAW, CLK_MONO, CLK_QPC};
#elif HAVE_CNTVCT
const enum clock_kind clock_list[] = {CLK_TSC, CLK_MONO_RAW, CLK_MONO, CLK_CNTVCT};
#else
const enum clock_kind clock_list[] = {CLK_TSC, CLK_MONO_RAW, CLK_MONO};
#endif
const int clock_list_len = (int)(sizeof clock_list / sizeof clock_list[0]);

const char *clock_name(enum clock_kind k) {
    switch (k) {
    case CLK_TSC: return "tsc";
    case CLK_MONO_RAW: return "mono_raw";
    case CLK_CNTVCT: return "cntvct";
    case CLK_QPC: return "qpc";
    default: return "mono";
    }
}

const char *clock_description(enum clock_kind k) {
    switch (k) {
    case CLK_TSC:
        return "time-stamp counter (rdtsc/rdtscp with lfence), calibrated against "
               "CLOCK_MONOTONIC_RAW; needs an invariant TSC";
    case CLK_QPC:
        return "QueryPerformanceCounter, raw ticks of QueryPerformanceFrequency";
    case CLK_CNTVCT:
        return "the ARM generic timer's virtual counter (CNTVCT, isb before and after), at the "
               "frequency of CNTFRQ; needs the kernel to let programs read it";
    case CLK_MONO_RAW:
        return HAVE_QPC ? "clock_gettime(CLOCK_MONOTONIC) of winpthreads (no _RAW on Windows): "
                          "QueryPerformanceCounter in ns, not slewed"
                        : "clock_gettime(CLOCK_MONOTONIC_RAW): not slewed by NTP";
    default:
        return HAVE_QPC ? "clock_gettime(CLOCK_MONOTONIC) of winpthreads: "
                          "QueryPerformanceCounter in ns"
                        : "clock_gettime(CLOCK_MONOTONIC): slewed by NTP";
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
    return plat_tsc_invariant();
#else
    return 0;
#endif
}

/* Whether this process may read the counter: a read is tried once, in a child, so that a
 * kernel which traps it (SIGILL, user access off) ends the child and not the probe. */
const char *cntvct_unusable(void) {
#if HAVE_CNTVCT
    static int known;
    static const char *why;
    if (known) return why;
    known = 1;
    pid_t pid = fork();
    if (pid == 0) {
        /* a trap leaves no core file behind, and an emulator's word on it goes nowhere */
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2);
        (void)cntvct_stamp();
        _exit(cntfrq_read() ? 0 : 1);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        why = "cannot try a read of the ARM generic timer's counter (fork failed); "
              "use --clock mono_raw";
    else if (WIFSIGNALED(st))
        why = "this system does not let programs read the ARM generic timer's counter "
              "(CNTVCT traps: user access is off); use --clock mono_raw";
    else if (WEXITSTATUS(st) != 0)
        why = "the ARM generic timer's frequency register (CNTFRQ) reads 0: the firmware did "
              "not set it; use --clock mono_raw";
    return why;
#else
    return "clock cntvct is the ARM generic timer's counter, not on this CPU architecture; "
           "use --clock mono_raw";
#endif
}

void clock_check(enum clock_kind k) {
    const char *why = k == CLK_CNTVCT ? cntvct_unusable() : NULL;
    if (why) die(EXIT_UNSUPPORTED, "%s", why);
}

int clock_parse(const char *s, enum clock_kind *out) {
    if (!strcmp(s, "auto")) {
        /* Windows: QueryPerformanceCounter, the clock Windows programs measure with */
        *out = HAVE_QPC ? CLK_QPC : (HAVE_TSC && tsc_invariant()) ? CLK_TSC : CLK_MONO_RAW;
        if (HAVE_CNTVCT && !cntvct_unusable()) *out = CLK_CNTVCT;
        return 0;
    }
    if (!strcmp(s, "tsc")) *out = CLK_TSC;
    else if (HAVE_CNTVCT && !strcmp(s, "cntvct")) *out = CLK_CNTVCT;
    else if (HAVE_QPC && !strcmp(s, "qpc")) *out = CLK_QPC;
    else if (!strcmp(s, "mono_raw")) *out = CLK_MONO_RAW;
    else if (!strcmp(s, "mono")) *out = CLK_MONO;
    else return -1;
    return 0;
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

/* The median of values on a grid of spacing step (ticks, not necessarily whole), estimated
 * within the step: the grouped-data median L + (N/2 - F) / f * step, where the median value's
 * class [k*step - step/2, k*step + step/2) holds f values and F lie below it.  So the figure
 * moves smoothly with the distribution instead of jumping by whole steps between runs. */
double clock_grouped_median(const uint64_t *sorted, size_t n, double step) {
    if (n == 0) return 0;
    if (!(step > 0)) step = 1;
    double k = floor((double)sorted[n / 2] / step + 0.5);
    double lo = (k - 0.5) * step, hi = (k + 0.5) * step;
    size_t below = 0, in = 0;
    for (size_t i = 0; i < n; i++) {
        double v = (double)sorted[i];
        if (v < lo) below++;
        else if (v < hi) in++;
    }
    if (in == 0) return (double)sorted[n / 2];
    double med = lo + ((double)n / 2.0 - (double)below) / (double)in * step;
    return med < 0 ? 0 : med;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

double clock_measure_overhead(int reps, double step_ticks) {
    uint64_t *d = xcalloc((size_t)reps, sizeof(uint64_t));
    for (int i = 0; i < reps; i++) {
        uint64_t a = clk_start();
        uint64_t b = clk_end();
        d[i] = b - a;
    }
    qsort(d, (size_t)reps, sizeof(uint64_t), cmp_u64);
    double med = clock_grouped_median(d, (size_t)reps, step_ticks);
    free(d);
    return med; /* ticks */
}

double clock_measure_stamp_ns(int reps, const struct clock_info *ci) {
    uint64_t *d = xcalloc((size_t)reps, sizeof(uint64_t));
    for (int i = 0; i < reps; i++) {
        uint64_t a = clk_start();
        (void)clk_stamp();
        uint64_t b = clk_end();
        d[i] = b - a;
    }
    qsort(d, (size_t)reps, sizeof(uint64_t), cmp_u64);
    double step = ci->step_ns / ci->ns_per_tick;
    double ns = clock_grouped_median(d, (size_t)reps, step) * ci->ns_per_tick - ci->overhead_ns;
    free(d);
    return ns > 0 ? ns : 0;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The clock's step (ticks; not always whole: this VM's TSC advances by ~24.5 ticks) from a set
 * of deltas between reads.  Method:
 *  1. the distinct non-zero delta values; where there are many samples, values seen only once
 *     are dropped (an occasional off-grid delta);
 *  2. runs of adjacent values (differing by one tick) form clusters (a step that is not a whole
 *     number of ticks, or jitter of a tick, lands on two neighbouring values); a cluster four
 *     or more ticks wide means the values are dense: the step is 1 tick;
 *  3. otherwise the clusters' centres sit on the grid k * step: a first step is the median gap
 *     between neighbouring centres, each centre gets its k = round(centre / step), the step is
 *     the least-squares slope through the origin, and centres off the grid by more than a
 *     quarter step are dropped before a second fit.
 * Never 0: with nothing to go by it is 1 tick. */
double clock_step_from_deltas(const uint64_t *deltas, size_t n) {
    uint64_t *v = xcalloc(n ? n : 1, sizeof(uint64_t));
    size_t nv = 0;
    for (size_t i = 0; i < n; i++)
        if (deltas[i] > 0) v[nv++] = deltas[i];
    qsort(v, nv, sizeof(uint64_t), cmp_u64);
    /* distinct values with counts */
    uint64_t *dv = xcalloc(nv ? nv : 1, sizeof(uint64_t));
    size_t *cnt = xcalloc(nv ? nv : 1, sizeof(size_t));
    size_t nd = 0;
    for (size_t i = 0; i < nv; i++) {
        if (nd && dv[nd - 1] == v[i]) cnt[nd - 1]++;
        else {
            dv[nd] = v[i];
            cnt[nd++] = 1;
        }
    }
    if (nv >= 100) { /* drop the singletons, if enough values remain */
        size_t keep = 0;
        for (size_t i = 0; i < nd; i++) keep += cnt[i] > 1;
        if (keep >= 3) {
            size_t m = 0;
            for (size_t i = 0; i < nd; i++)
                if (cnt[i] > 1) {
                    dv[m] = dv[i];
                    cnt[m++] = cnt[i];
                }
            nd = m;
        }
    }
    double step = 1;
    double *ctr = xcalloc(nd ? nd : 1, sizeof(double));
    size_t nc = 0;
    int dense = 0;
    for (size_t i = 0; i < nd;) {
        size_t j = i;
        double sum = 0, w = 0;
        while (1) {
            sum += (double)dv[j] * (double)cnt[j];
            w += (double)cnt[j];
            if (j + 1 < nd && dv[j + 1] - dv[j] <= 1) j++;
            else break;
        }
        if (dv[j] - dv[i] >= 3) dense = 1;
        ctr[nc++] = sum / w;
        i = j + 1;
    }
    if (!dense && nc == 1) step = ctr[0]; /* one value only: it is a multiple of the step */
    if (!dense && nc >= 2) {
        double *gap = xcalloc(nc - 1, sizeof(double));
        for (size_t i = 0; i + 1 < nc; i++) gap[i] = ctr[i + 1] - ctr[i];
        qsort(gap, nc - 1, sizeof(double), cmp_dbl);
        double s0 = gap[(nc - 1) / 2];
        /* the smallest centre is a multiple too: a first step no larger than it */
        if (ctr[0] < s0 * 0.75) s0 = ctr[0];
        free(gap);
        for (int pass = 0; pass < 2 && s0 > 0; pass++) {
            double sxy = 0, sxx = 0;
            for (size_t i = 0; i < nc; i++) {
                double k = floor(ctr[i] / s0 + 0.5);
                if (k < 1) continue;
                if (pass == 1 && fabs(ctr[i] - k * s0) > 0.25 * s0) continue;
                sxy += ctr[i] * k;
                sxx += k * k;
            }
            if (sxx > 0) s0 = sxy / sxx;
        }
        if (s0 >= 1) step = s0;
    }
    free(ctr);
    free(dv);
    free(cnt);
    free(v);
    return step;
}

/* Back-to-back reads with a varying amount of work between them (0 to ~300 simple loop
 * iterations), so the deltas spread over many values of the clock's grid; plus, for a coarse
 * clock whose back-to-back reads mostly agree, the first change seen while spinning. */
double clock_measure_step(int reps) {
    uint64_t *d = xcalloc((size_t)reps * 2, sizeof(uint64_t));
    size_t nd = 0;
    for (int i = 0; i < reps; i++) {
        volatile unsigned sink = 0;
        unsigned k = (unsigned)(i % 97) * 3u;
        uint64_t a = clk_start();
        for (unsigned j = 0; j < k; j++) sink = sink + j;
        uint64_t b = clk_start();
        d[nd++] = b - a;
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < nd; i++) nonzero += d[i] > 0;
    if (nonzero < (size_t)reps / 2) {
        for (int i = 0; i < reps / 10 + 1; i++) {
            uint64_t a = clk_start(), b;
            int spins = 0;
            do {
                b = clk_start();
            } while (b == a && ++spins < 1000000);
            d[nd++] = b - a;
        }
    }
    double s = clock_step_from_deltas(d, nd);
    free(d);
    return s; /* ticks */
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
    } else if (k == CLK_CNTVCT) {
        clock_check(k);
        info->frequency_hz = (double)cntfrq_read();
        info->ns_per_tick = 1e9 / info->frequency_hz;
    } else if (k == CLK_QPC) {
        /* one tick of the counter: its resolution as Windows states it */
        uint64_t f = qpc_frequency();
        if (!HAVE_QPC || f == 0) die(EXIT_UNSUPPORTED, "clock qpc is not available here");
        info->ns_per_tick = 1e9 / (double)f;
        info->getres_ns = info->ns_per_tick;
        info->invariant = HAVE_TSC ? tsc_invariant() : 0;
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
    double step = clock_measure_step(20000);
    info->step_ns = step * info->ns_per_tick;
    info->resolution_ns = info->step_ns; /* the old name, for older readers */
    info->overhead_ns = clock_measure_overhead(20001, step) * info->ns_per_tick;
}

/* ---------------------------------------------------------------- --inject-ns */

uint64_t g_inject_on = 0;
/* A wait: the bulk a spin on the run's clock (ticks), the fine part a counted empty loop
 * (iters).  `own` starts its spin at a read of its own (a timed region's wait); `from` at a
 * mark the caller took (a responder's receive stamp, inject_delay_from). */
struct inject_wait {
    uint64_t ticks, iters;
};
static struct inject_wait inj_own, inj_from;

/* The wait is a spin on the clock for its bulk, then a counted empty loop for the rest, then a
 * fence, so that nothing after it starts before it ends.  A spin on the clock holds its length in
 * time where the CPU's speed varies (a VM's host), but it can only end at a read of the clock:
 * its length moves in steps of one read (~20 ns), and a correction that assumes it moves
 * smoothly settled 13 ns short of a 60 ns wait.  The loop fills in below one step: where the
 * host's speed varies, only that part varies with it.  Without the fence a loop before a system
 * call overlaps with it (55 ns calibrated in an empty region added about 20 ns to a pipe's round
 * trip).  A wait shorter than one read is the loop alone, without the fence (which costs
 * several ns itself: a 3 ns wait with it added 9 ns), calibrated where a system call follows.
 * A wait anchored at a mark (`from`) ends at a time fixed by that mark: what delays the start
 * of the wait (a responder's first instructions after a context switch, whose cold caches
 * and branch predictors made an own-read wait of 60 ns add about 85 ns to a pipe's round
 * trip) is absorbed in it. */
static inline __attribute__((always_inline)) void spin_wait(const struct inject_wait *w,
                                                            uint64_t s) {
    if (w->ticks) {
        while (clk_end() - s < w->ticks) {
        }
    }
    for (uint64_t i = w->iters; i > 0; i--) __asm__ __volatile__("" ::: "memory");
    if (!w->ticks) return; /* a wait shorter than the fence itself: the loop alone */
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("lfence" ::: "memory");
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("isb" ::: "memory");
#endif
}

__attribute__((noinline)) void inject_spin(void) {
    spin_wait(&inj_own, inj_own.ticks ? clk_end() : 0);
}

__attribute__((noinline)) void inject_spin_from(uint64_t mark) { spin_wait(&inj_from, mark); }

/* The work of the calibration's regions: the cheapest system call, as a benchmark's timed region
 * has one after the wait (a send, a call, an open). */
#if HAVE_QPC
static __attribute__((noinline)) void calib_work(void) { __asm__ __volatile__("" ::: "memory"); }
#else
#include <sys/syscall.h>
#include <unistd.h>
static __attribute__((noinline)) void calib_work(void) { (void)syscall(SYS_getppid); }
#endif

/* What the wait adds to a timed region that holds one system call (calib_work): the median of
 * `reps` regions with it minus the median of `reps` without, measured alternately (so both see
 * the same speed of the host: a read cost measured at another moment may differ by more than a
 * short wait), in ns.  `from`: the wait anchored at a mark taken in both regions, as a
 * responder takes its receive stamp.  d holds 2 x reps. */
static double inject_measure(const struct clock_info *ci, int from, int reps, uint64_t *d) {
    uint64_t *e = d + reps;
    for (int i = 0; i < reps; i++) {
        uint64_t a0, b0, a, b;
        if (from) {
            a0 = clk_start();
            (void)clk_stamp();
            calib_work();
            b0 = clk_end();
            a = clk_start();
            uint64_t m = clk_stamp();
            inject_delay_from(m);
            calib_work();
            b = clk_end();
        } else {
            a0 = clk_start();
            calib_work();
            b0 = clk_end();
            a = clk_start();
            inject_delay();
            calib_work();
            b = clk_end();
        }
        e[i] = b0 - a0;
        d[i] = b - a;
    }
    qsort(d, (size_t)reps, sizeof(uint64_t), cmp_u64);
    qsort(e, (size_t)reps, sizeof(uint64_t), cmp_u64);
    return ((double)d[reps / 2] - (double)e[reps / 2]) * ci->ns_per_tick;
}

/* The loop's speed: the fastest of five loops of about 1 ms, ns per iteration. */
static double loop_ns(const struct clock_info *ci) {
    uint64_t probe_iters = 1000000;
    double per_iter = 0;
    struct inject_wait keep = inj_own;
    inj_own.ticks = 0;
    for (int k = 0; k < 5; k++) {
        inj_own.iters = probe_iters;
        uint64_t a = clk_start();
        inject_spin();
        uint64_t b = clk_end();
        double v = (double)(b - a) * ci->ns_per_tick / (double)probe_iters;
        if (k == 0 || v < per_iter) per_iter = v;
    }
    inj_own = keep;
    return per_iter > 0 ? per_iter : 1;
}

/* Calibrate one wait (`from` or not): the bulk is the longest spin target whose wait
 * (measured as a benchmark sees it, inject_measure) is not longer than ns, found by bisection
 * over the target (the wait grows in steps with it); then the loop's count is set from its
 * speed for the rest and corrected twice against the measured wait.  A wait shorter than one
 * spin's step is the loop alone. */
static void calibrate_wait(const struct clock_info *ci, struct inject_wait *w, int from,
                           double ns, double per_iter, int reps, uint64_t *d) {
    w->ticks = w->iters = 0;
    double bulk = 0; /* the wait of the spin alone, ns */
    if (ns >= ci->overhead_ns) {
        uint64_t lo = 0, hi = (uint64_t)(ns / ci->ns_per_tick) + 1; /* spin targets, ticks */
        while (hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2;
            w->ticks = mid;
            double got = inject_measure(ci, from, reps, d);
            if (got <= ns) {
                lo = mid;
                bulk = got;
            } else {
                hi = mid;
            }
        }
        /* lo is the edge of a step, where the number of reads the spin makes (and so its
         * wait) flips with the reads' jitter: back off half a read into the step's plateau,
         * and let the loop fill what that leaves */
        uint64_t half = (uint64_t)(0.5 * ci->overhead_ns / ci->ns_per_tick);
        w->ticks = lo > half ? lo - half : 0;
        bulk = w->ticks ? inject_measure(ci, from, reps, d) : 0;
        if (bulk > ns) bulk = ns;
    }
    double iters = (ns - bulk) / per_iter;
    for (int pass = 0; pass < 2; pass++) {
        w->iters = iters >= 1 ? (uint64_t)(iters + 0.5) : 0;
        double added = inject_measure(ci, from, reps, d);
        iters += (ns - added) / per_iter;
    }
    w->iters = iters >= 1 ? (uint64_t)(iters + 0.5) : 0;
    if (!w->ticks && !w->iters) w->iters = 1;
}

void inject_calibrate(const struct clock_info *ci, double ns) {
    g_inject_on = 0;
    inj_own = inj_from = (struct inject_wait){0, 0};
    if (!(ns > 0)) return;
    int reps = (int)(0.2e9 / (ns + 300));
    if (reps > 2001) reps = 2001;
    if (reps < 11) reps = 11;
    uint64_t *d = xcalloc(2 * (size_t)reps, sizeof(uint64_t));
    g_inject_on = 1;
    double per_iter = loop_ns(ci);
    calibrate_wait(ci, &inj_own, 0, ns, per_iter, reps, d);
    calibrate_wait(ci, &inj_from, 1, ns, per_iter, reps, d);
    free(d);
}

void inject_get(struct inject_setting *s) {
    s->on = g_inject_on;
    s->iters = inj_own.iters;
    s->ticks = inj_own.ticks;
    s->from_iters = inj_from.iters;
    s->from_ticks = inj_from.ticks;
}

void inject_set(const struct inject_setting *s) {
    inj_own = (struct inject_wait){s->ticks, s->iters};
    inj_from = (struct inject_wait){s->from_ticks, s->from_iters};
    g_inject_on = s->on;
}
