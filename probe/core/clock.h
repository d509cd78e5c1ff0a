/* latscope-probe: clocks.  Samples are raw ticks; ns_per_tick converts them. */
#ifndef LATSCOPE_CLOCK_H
#define LATSCOPE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum clock_kind { CLK_TSC = 0, CLK_MONO_RAW = 1, CLK_MONO = 2, CLK_QPC = 4 };
/* The clocks of this system, in the catalogue's order (clock.c): Linux tsc, mono_raw, mono;
 * Windows adds qpc (its default). */
extern const enum clock_kind clock_list[];
extern const int clock_list_len;
const char *clock_description(enum clock_kind k);

struct clock_info {
    enum clock_kind kind;
    const char *name;
    double ns_per_tick;   /* 1.0 for the POSIX clocks */
    double overhead_ns;   /* read cost: median of back-to-back start/end reads, within the step */
    double step_ns;       /* granularity: the spacing of the clock's values (clock_measure_step) */
    double resolution_ns; /* = step_ns, kept for older readers */
    double getres_ns;     /* clock_getres() (POSIX clocks), 0 for tsc */
    double calib_ppm;     /* TSC: estimated calibration uncertainty, parts per million */
    double calib_ms;      /* TSC: calibration interval */
    int invariant;        /* TSC: invariant (constant + nonstop) */
};

extern enum clock_kind g_clock;

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_TSC 1
static inline uint64_t tsc_start(void) {
    uint32_t lo, hi;
    /* lfence before: earlier instructions have completed; after: later ones wait. */
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t tsc_end(void) {
    uint32_t lo, hi, aux;
    /* rdtscp waits for earlier instructions; lfence keeps later ones from starting. */
    __asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
#else
#define HAVE_TSC 0
static inline uint64_t tsc_start(void) { return 0; }
static inline uint64_t tsc_end(void) { return 0; }
#endif

/* Windows: QueryPerformanceCounter, raw ticks (its frequency gives ns_per_tick); its
 * clock_gettime (winpthreads) has no CLOCK_MONOTONIC_RAW: its CLOCK_MONOTONIC, which is
 * QueryPerformanceCounter in ns, slewed by nothing, stands in (the catalogue says so). */
#ifdef _WIN32
#define HAVE_QPC 1
uint64_t qpc_frequency(void);
union _LARGE_INTEGER; /* windows.h: LARGE_INTEGER; not included here (it defines much) */
__declspec(dllimport) int __stdcall QueryPerformanceCounter(union _LARGE_INTEGER *count);
static inline uint64_t qpc_now(void) {
    long long c;
    QueryPerformanceCounter((union _LARGE_INTEGER *)(void *)&c);
    return (uint64_t)c;
}
#ifndef CLOCK_MONOTONIC_RAW
#define CLOCK_MONOTONIC_RAW CLOCK_MONOTONIC
#endif
#else
#define HAVE_QPC 0
static inline uint64_t qpc_frequency(void) { return 0; }
static inline uint64_t qpc_now(void) { return 0; }
#endif

static inline uint64_t posix_now(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if HAVE_TSC
/* A time stamp that waits for earlier instructions (rdtscp) but, unlike tsc_end, does not hold
 * back later ones: for a reading kept as a mark (the responder's receive time), not for closing
 * a timed region. */
static inline uint64_t tsc_stamp(void) {
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
#else
static inline uint64_t tsc_stamp(void) { return 0; }
#endif

/* Read the chosen clock at the start / end of a timed region. */
static inline uint64_t clk_start(void) {
    switch (g_clock) {
    case CLK_TSC: return tsc_start();
    case CLK_QPC: return qpc_now();
    case CLK_MONO_RAW: return posix_now(CLOCK_MONOTONIC_RAW);
    default: return posix_now(CLOCK_MONOTONIC);
    }
}
static inline uint64_t clk_end(void) {
    switch (g_clock) {
    case CLK_TSC: return tsc_end();
    case CLK_QPC: return qpc_now();
    case CLK_MONO_RAW: return posix_now(CLOCK_MONOTONIC_RAW);
    default: return posix_now(CLOCK_MONOTONIC);
    }
}

/* --inject-ns: a calibrated busy-wait inside every timed region (0: none).  The test costs one
 * load and a never-taken branch when nothing is injected. */
extern uint64_t g_inject_on;
void inject_spin(void);
static inline void inject_delay(void) {
    if (__builtin_expect(g_inject_on != 0, 0)) inject_spin();
}
/* Calibrate the busy-wait so that a timed region grows by ~ns; call after clock_setup. */
void inject_calibrate(const struct clock_info *ci, double ns);

/* Read the chosen clock as a mark inside someone else's timed region (tsc_stamp). */
static inline uint64_t clk_stamp(void) {
    switch (g_clock) {
    case CLK_TSC: return tsc_stamp();
    case CLK_QPC: return qpc_now();
    case CLK_MONO_RAW: return posix_now(CLOCK_MONOTONIC_RAW);
    default: return posix_now(CLOCK_MONOTONIC);
    }
}

const char *clock_name(enum clock_kind k);
int clock_parse(const char *s, enum clock_kind *out); /* "auto" picks the default; -1 bad */
int tsc_invariant(void);     /* 1 if the CPU says the TSC is invariant */
/* Select, calibrate and characterise a clock; exits 3 if tsc is asked for and unusable. */
void clock_setup(enum clock_kind k, struct clock_info *info);
/* Exposed for tests. */
double clock_tsc_calibrate(double interval_ms, double *ppm);
double clock_measure_overhead(int reps, double step_ticks); /* ticks */
double clock_measure_step(int reps);                         /* ticks */
double clock_step_from_deltas(const uint64_t *deltas, size_t n);
/* What one clk_stamp() adds to a timed region around it (ns): a grouped median of
 * start/stamp/end minus the read cost. */
double clock_measure_stamp_ns(int reps, const struct clock_info *ci);
double clock_grouped_median(const uint64_t *sorted, size_t n, double step);

#endif
