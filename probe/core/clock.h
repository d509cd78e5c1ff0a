/* latscope-probe: clocks.  Samples are raw ticks; ns_per_tick converts them. */
#ifndef LATSCOPE_CLOCK_H
#define LATSCOPE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* CLK_CNTVCT: the ARM generic timer's virtual counter (HAVE_CNTVCT builds only); CLK_QPC:
 * Windows's QueryPerformanceCounter (HAVE_QPC builds only). */
enum clock_kind { CLK_TSC = 0, CLK_MONO_RAW = 1, CLK_MONO = 2, CLK_CNTVCT = 3, CLK_QPC = 4 };
/* The clocks of this system, in the catalogue's order (clock.c): tsc, mono_raw, mono; ARM
 * builds add cntvct, Windows qpc (its default). */
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
    double frequency_hz;  /* cntvct: the counter's frequency (CNTFRQ), else 0 */
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

/* The ARM generic timer's virtual counter (CNTVCT), read from user space where the kernel
 * allows it (CNTKCTL.EL0VCTEN; a Linux kernel does on aarch64, an ARMv7 one may not: the read
 * then traps, SIGILL).  Its frequency is the CNTFRQ register's, set by the firmware.  isb is to
 * the counter what lfence is to the TSC: before a read, earlier instructions have completed;
 * after it, later ones wait. */
#if defined(__aarch64__)
#define HAVE_CNTVCT 1
#define CNTVCT_READ(v) __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v)::"memory")
static inline uint64_t cntfrq_read(void) {
    uint64_t f;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
    return f;
}
#elif defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7
#define HAVE_CNTVCT 1
#define CNTVCT_READ(v) __asm__ __volatile__("mrrc p15, 1, %Q0, %R0, c14" : "=r"(v)::"memory")
static inline uint64_t cntfrq_read(void) {
    uint32_t f;
    __asm__ __volatile__("mrc p15, 0, %0, c14, c0, 0" : "=r"(f));
    return f;
}
#else
#define HAVE_CNTVCT 0
#endif
#if HAVE_CNTVCT
#define CNTVCT_ISB() __asm__ __volatile__("isb" ::: "memory")
static inline uint64_t cntvct_start(void) {
    uint64_t v;
    CNTVCT_ISB();
    CNTVCT_READ(v);
    CNTVCT_ISB();
    return v;
}
/* the end of a timed region reads as its start does; a mark (clk_stamp) holds nothing back */
static inline uint64_t cntvct_end(void) { return cntvct_start(); }
static inline uint64_t cntvct_stamp(void) {
    uint64_t v;
    CNTVCT_ISB();
    CNTVCT_READ(v);
    return v;
}
#else
static inline uint64_t cntfrq_read(void) { return 0; }
static inline uint64_t cntvct_start(void) { return 0; }
static inline uint64_t cntvct_end(void) { return 0; }
static inline uint64_t cntvct_stamp(void) { return 0; }
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
#if HAVE_CNTVCT
    case CLK_CNTVCT: return cntvct_start();
#endif
    case CLK_QPC: return qpc_now();
    case CLK_MONO_RAW: return posix_now(CLOCK_MONOTONIC_RAW);
    default: return posix_now(CLOCK_MONOTONIC);
    }
}
static inline uint64_t clk_end(void) {
    switch (g_clock) {
    case CLK_TSC: return tsc_end();
#if HAVE_CNTVCT
    case CLK_CNTVCT: return cntvct_end();
#endif
    case CLK_QPC: return qpc_now();
    case CLK_MONO_RAW: return posix_now(CLOCK_MONOTONIC_RAW);
    default: return posix_now(CLOCK_MONOTONIC);
    }
}

/* --inject-ns: a calibrated busy-wait inside every timed region (0: none).  The test costs one
 * load and a never-taken branch when nothing is injected. */
extern uint64_t g_inject_on;
void inject_spin(void);
void inject_spin_from(uint64_t mark);
static inline void inject_delay(void) {
    if (__builtin_expect(g_inject_on != 0, 0)) inject_spin();
}
/* The same wait anchored at a mark just taken (clk_stamp): it ends a calibrated time after the
 * mark, whatever delays its own start (a responder's, after its receive stamp). */
static inline void inject_delay_from(uint64_t mark) {
    if (__builtin_expect(g_inject_on != 0, 0)) inject_spin_from(mark);
}
/* Calibrate the busy-wait so that a timed region grows by ~ns; call after clock_setup.  It is
 * then the active one. */
void inject_calibrate(const struct clock_info *ci, double ns);
/* A calibrated busy-wait, kept (inject_get: the active one) and made active again
 * (inject_set), so that the arms of one run each have their own: calibrated once per distinct
 * value, switched between blocks, never inside a timed region. */
struct inject_setting {
    uint64_t on, iters, ticks;  /* the wait in a timed region (inject_delay) */
    uint64_t from_iters, from_ticks; /* the wait from a mark (inject_delay_from) */
};
void inject_get(struct inject_setting *s);
void inject_set(const struct inject_setting *s);

/* Read the chosen clock as a mark inside someone else's timed region (tsc_stamp). */
static inline uint64_t clk_stamp(void) {
    switch (g_clock) {
    case CLK_TSC: return tsc_stamp();
#if HAVE_CNTVCT
    case CLK_CNTVCT: return cntvct_stamp();
#endif
    case CLK_QPC: return qpc_now();
    case CLK_MONO_RAW: return posix_now(CLOCK_MONOTONIC_RAW);
    default: return posix_now(CLOCK_MONOTONIC);
    }
}

const char *clock_name(enum clock_kind k);
int clock_parse(const char *s, enum clock_kind *out); /* "auto" picks the default; -1 bad */
int tsc_invariant(void);     /* 1 if the CPU says the TSC is invariant */
/* Whether the generic timer's counter can be read here: NULL if so, else why not (one line).
 * The first call tries a read in a child process, which a trap (SIGILL) would end. */
const char *cntvct_unusable(void);
/* Exits 3 with one line if clock k is known to be unusable here (cntvct; the TSC's checks are
 * clock_setup's). */
void clock_check(enum clock_kind k);
/* What --help says --clock takes (the clocks themselves: clock_list). */
#if HAVE_CNTVCT
#define CLOCK_USAGE "tsc | mono_raw | mono | cntvct | auto (default auto: cntvct where\n" \
                    "                    the kernel lets programs read it)"
#elif HAVE_QPC
#define CLOCK_USAGE "tsc | mono_raw | mono | qpc | auto (default auto: qpc)"
#else
#define CLOCK_USAGE "tsc | mono_raw | mono | auto (default auto: tsc where invariant)"
#endif
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
