/* latscope-probe: the one ping-pong driver shared by every communication mechanism.
 *
 * Side 0 (the initiator) reads the clock, sends, waits for the answer and reads the clock
 * again: that is the round trip.  Side 1 (the responder) receives, reads the clock, answers
 * and keeps that reading; after the run the driver subtracts the initiator's start read from
 * it: that is the one-way time from the shared clock.  Inside the round trip: the mechanisms'
 * calls, the clock reads and, on one CPU, the responder's store of its reading (the header's
 * bench.timed_region_frame says it exactly).  Placement, warm-up, timing, peer watching and
 * clean-up live here; a mechanism only says how to set up, send, receive and tear down.
 *
 * Adding a mechanism: a file with its struct pp_mech and PINGPONG_BENCH(...), and one line in
 * probe/benchmarks.def (docs/mechanisms.md describes it; a test checks that it does). */
#ifndef LATSCOPE_PINGPONG_H
#define LATSCOPE_PINGPONG_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/bench.h"

#define PP_SCRATCH 4096

struct pp_shared {
    volatile int peer_failed;
    char errmsg[256];
    /* the responder's usage over its timed loop, stored by it after its last recorded answer */
    struct thread_usage responder_usage;
    /* The blocks (pp_responder_loop), written by the initiator only, never in a block: how
     * many round trips the next block holds (a normal run: n, set before the responder
     * starts; an arm: set before each block's first message) and where in recv_at its stamps
     * go; stop, set before the closing round trip; ring, the entries of recv_at. */
    _Alignas(64) volatile uint64_t block_len;
    volatile uint64_t block_base;
    volatile int stop;
    uint64_t ring;
    _Alignas(64) unsigned char scratch[PP_SCRATCH]; /* mechanism's shared objects */
    /* the responder's clock read right after each receive (raw ticks), by the round trip's
     * place in its block; written only by the responder, read by the initiator after the
     * block (a normal run: after the run): no shared store in any timed region */
    _Alignas(64) int64_t recv_at[];
};

struct pp_ctx;
struct pp_mech {
    const char *name;
    int threads_ok, processes_ok;
    int blocking;   /* the receiver sleeps until woken (1) or spins (0) */
    int has_size;   /* a message size applies (the benchmark then takes size=) */
    size_t max_size;
    size_t payload; /* !has_size: the bytes each message carries (e.g. 8 for eventfd) */
    /* Context switches a blocking mechanism makes per direction (0 means 1: the receiver
     * is woken).  More where helper threads relay the message (ZeroMQ's I/O threads). */
    int switches_per_way;
    const char *switches_note; /* how those switches come about, for the metadata (or NULL) */
    /* The placements it runs in (enum placement bits; 0: all), and why others are refused. */
    unsigned placements;
    const char *placement_refusal;
    /* Its own state for one run, in pp->state (zeroed; set up by setup()): never file-scope
     * statics.  A forked responder has its copy, as it has of everything else. */
    size_t state_size;
    /* Checks of its own beyond the driver's (mode, size, placement, CPUs): 0, or an exit code
     * with one line in err (as struct bench's check).  NULL: none. */
    int (*check)(const struct bench *b, const struct pval *pv, char *err, size_t errlen);
    /* In the initiator before the peer exists: create objects, register clean-up.  Its first
     * job is to mark in pp->state what is not yet there (e.g. descriptors at -1), so that a
     * teardown after it stopped half-way knows. */
    void (*setup)(struct pp_ctx *pp);
    /* In each side once the peer exists (side 0: initiator, 1: responder). */
    void (*side_init)(struct pp_ctx *pp, int side);
    /* One message from this side to the other; 0 on success, else fills pp->err. */
    int (*send)(struct pp_ctx *pp, int side);
    int (*recv)(struct pp_ctx *pp, int side);
    /* In the responder after its last answer (optional): make sure the answer leaves before
     * the responder ends (ZeroMQ queues it for an I/O thread). */
    void (*responder_done)(struct pp_ctx *pp);
    /* In the initiator after the peer has finished, and from the clean-up list on every
     * other path (an error, Ctrl-C, a dead peer: then possibly while the measuring thread is
     * still blocked, and with pp->finished == 0).  Must be idempotent, must cope with a
     * setup() that stopped half-way, and must never call die(), block, or touch the clean-up
     * list (it runs under the list's lock). */
    void (*teardown)(struct pp_ctx *pp);
    const char *timed; /* what lies inside the timed region, for the metadata */
    /* Untimed round trips before the warm-up (not counted in it): where the mechanism's own
     * allocations settle only after that many messages (ZeroMQ's queue chunks).  0: none. */
    int prime_round_trips;
};

struct pp_ctx {
    const struct pp_mech *m;
    struct runctx *run;
    int processes;
    int cpu[2];
    size_t size;
    unsigned char *buf[2];
    struct pp_shared *sh;
    size_t sh_bytes;
    int fd[8];
    void *state;    /* the mechanism's (m->state_size bytes) */
    char name[128]; /* name for named objects: latscope-PID-MECHANISM-RANDOM (pp_new_name) */
    char err[2][200];
    pid_t pid[2];      /* processes: initiator's and responder's pid (responder's set in the
                        * initiator once forked; the responder knows both) */
    pthread_t thr[2];  /* threads: initiator's and responder's thread */
    int finished;      /* the run completed normally: teardown may wait for and free things */
    /* the driver's own */
    int way;              /* context switches per direction; -1 unknown */
    int teardown_handle;  /* the teardown's clean-up entry */
    int kill_handle;      /* processes: the responder's clean-up entry */
    int watch;            /* the supervisor's handle of the responder */
    double stamp_ns;      /* what the responder's clock read adds to a round trip */
    uint64_t ring;        /* entries of sh->recv_at: n, or an arm's two blocks */
    int64_t sink;         /* where warm-up and discarded round trips go */
    uint64_t blocks;      /* an arm's blocks so far (they alternate between recv_at's halves) */
    /* the last block's receive stamps, not yet turned into oneway samples (pp_copy_out) */
    int pending;
    uint64_t pend_from, pend_count, pend_base;
};

/* Record a failing call in side's error buffer; returns -1 for "return pp_err(...)". */
__attribute__((format(printf, 3, 4))) int pp_err(struct pp_ctx *pp, int side, const char *fmt,
                                                 ...);

/* A run's phases (struct bench's begin, block and end; the run is bench_run_phases). */
void *pingpong_begin(struct runctx *ctx);
void pingpong_ready(void *state);
void pingpong_block(void *state, uint64_t from, uint64_t count, uint64_t discard);
void pingpong_end(void *state);
/* The driver's checks for every mechanism (struct bench's check). */
int pp_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen);

/* The spin-wait hint: x86 pause, arm64 yield, else a compiler barrier. */
static inline void pp_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* The parameters every ping-pong benchmark takes: mode, cpus and (where it applies) size.
 * A benchmark with parameters of its own builds its array from the PP_PARAM_* entries. */
extern const char *const pp_mode_choices[];
#define PP_PARAM_MODE(defmode)                                                                 \
    {"mode", P_ENUM, defmode, NULL,                                                            \
     "the two parties: two processes (fork) or two threads of one process", pp_mode_choices,  \
     0, 0, NULL}
#define PP_PARAM_CPUS(defcpus)                                                                 \
    {"cpus", P_CPUS, defcpus, "cpu",                                                           \
     "placement A,B: initiator on CPU A, responder on CPU B (A=B: same CPU); none: unpinned", \
     NULL, 0, 0, NULL}
#define PP_PARAM_SIZE(maxbytes)                                                                \
    {"size", P_SIZE, "8", "bytes", "message size, each way", NULL, 1, maxbytes, NULL}

#define PP_NPARAMS 3
#define PP_NPARAMS_NOSIZE 2
#define PP_NCOLUMNS 2
extern const struct family pp_family;        /* the core's hooks (core/bench.h) */
extern const struct pdef pp_params[];        /* mode, cpus, size */
extern const struct pdef pp_params_nosize[]; /* mode, cpus */
extern const struct coldef pp_columns[];
extern const struct derived_col pp_derived[]; /* rtt/2 */

/* How the lab shows a ping-pong run (struct display). */
#define PP_DISPLAY                                                                            \
    {.roles = {"initiator", "responder"},                                                     \
     .switches_column = "rtt",                                                                \
     .lines = {"placement: {bench.placement:words} (cpus={params.cpus}), {bench.mode}, "      \
               "{bench.message_bytes} B messages; rtt/2 is an estimate of the one-way time"}}

/* Defines bench_<ident>, the benchmark of mechanism mechvar; after the summary, designated
 * initializers that differ from the defaults (.params, .needs, .available, .scenarios, ...). */
#if defined(__clang__)
#define PP_OVERRIDES_OK _Pragma("clang diagnostic ignored \"-Winitializer-overrides\"")
#else
#define PP_OVERRIDES_OK _Pragma("GCC diagnostic ignored \"-Woverride-init\"")
#endif
#define PINGPONG_BENCH(ident, mechvar, summ, ...)                                             \
    _Pragma("GCC diagnostic push") PP_OVERRIDES_OK                                           \
    const struct bench bench_##ident = {                                                     \
        .name = #ident, .summary = summ, .params = pp_params, .nparams = PP_NPARAMS,        \
        .columns = pp_columns, .ncolumns = PP_NCOLUMNS, .derived = pp_derived,               \
        .nderived = 1, .check = pp_check, .run = bench_run_phases,                           \
        .begin = pingpong_begin, .ready = pingpong_ready, .block = pingpong_block,           \
        .end = pingpong_end,                                                                 \
        .default_n = 100000, .kind = "ipc", .family = &pp_family, .member = &mechvar,       \
        .display = PP_DISPLAY,                                                               \
        __VA_ARGS__};                                                                        \
    _Pragma("GCC diagnostic pop")
/* The same for a mechanism that carries no message of a chosen size (no size parameter). */
#define PINGPONG_BENCH_NOSIZE(ident, mechvar, summ, ...)                                      \
    PINGPONG_BENCH(ident, mechvar, summ, .params = pp_params_nosize,                         \
                   .nparams = PP_NPARAMS_NOSIZE, __VA_ARGS__)

/* Helpers several mechanisms share (driver.c). */
/* A private directory for named objects: $TMPDIR or /tmp, removed on every path.  Fills
 * dir (at least 256 bytes); registers its removal (after everything registered later). */
void pp_private_dir(struct pp_ctx *pp, char *dir, size_t len);
/* A new pp->name, with a new unpredictable part (a name that was taken is tried again under
 * another: mechanisms create named objects with O_EXCL and never remove one they did not
 * create). */
void pp_new_name(struct pp_ctx *pp);
/* Close fd[i] if open and mark it closed. */
void pp_close(struct pp_ctx *pp, int i);

/* The responder's side, the same in every driver (pingpong/common.c): its failure, told to the
 * initiator through shared memory; every page a side writes in its loop, written by that side
 * before the first timed iteration; its start (pinned, side_init, pages touched: 0, or -1
 * after pp_peer_fail) and its loop (warm-up, the blocks of round trips with the clock read
 * after each receive, then the closing round trip with its usage reading). */
void pp_peer_fail(struct pp_ctx *pp, const char *what);
void pp_touch_side(struct pp_ctx *pp, int side);
int pp_responder_start(struct pp_ctx *pp);
void pp_responder_loop(struct pp_ctx *pp);

/* What each driver does its own way (pingpong/driver.c, win/pingpong.c), called by the run's
 * sequence (pingpong_run, pingpong/common.c): the memory both sides share (pp->sh, the
 * message buffers; the supervisor told where the responder reports its failure); the
 * responder started, as a process or a thread, and watched; its end waited for (its failure
 * reported); and what the responder is, for the header. */
void pp_driver_share(struct pp_ctx *pp);
void pp_driver_start_responder(struct pp_ctx *pp);
void pp_driver_join_responder(struct pp_ctx *pp);
const char *pp_driver_responder(const struct pp_ctx *pp);

#endif
