/* latscope-probe: the one ping-pong driver shared by every communication mechanism.
 *
 * Side 0 (the initiator) reads the clock, sends, waits for the answer and reads the clock
 * again: that is the round trip.  Side 1 (the responder) receives, reads the clock, answers
 * and keeps that reading; after the run the driver subtracts the initiator's start read from
 * it: that is the one-way time from the shared clock.  Inside the round trip: the mechanisms'
 * calls, the clock reads and, on one CPU, the responder's store of its reading (the header's
 * bench.timed_region_frame says it exactly).  Placement, warm-up, timing, peer watching and
 * clean-up live here; a mechanism only says how to set up, send, receive and tear down. */
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
    _Alignas(64) unsigned char scratch[PP_SCRATCH]; /* mechanism's shared objects */
    /* the responder's clock read right after each receive (raw ticks); written only by the
     * responder, read by the initiator after the run: no shared store in any timed region */
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
    /* In the initiator before the peer exists: create objects, register clean-up. */
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
    int fd[8];
    void *state;
    char name[128]; /* unique name for named objects (FIFO, queues, sockets) */
    char err[2][200];
    pid_t pid[2];      /* processes: initiator's and responder's pid (responder's set in the
                        * initiator once forked; the responder knows both) */
    pthread_t thr[2];  /* threads: initiator's and responder's thread */
    int finished;      /* the run completed normally: teardown may wait for and free things */
};

/* Record a failing call in side's error buffer; returns -1 for "return pp_err(...)". */
__attribute__((format(printf, 3, 4))) int pp_err(struct pp_ctx *pp, int side, const char *fmt,
                                                 ...);

void pingpong_run(struct runctx *ctx, const struct pp_mech *m);

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
extern const struct pdef pp_params[];        /* mode, cpus, size */
extern const struct pdef pp_params_nosize[]; /* mode, cpus */
extern const int pp_nparams;
extern const struct coldef pp_columns[];
extern const int pp_ncolumns;

#define PINGPONG_BENCH_FULL(ident, mechvar, summ, prm, nprm, needs_, avail_)                 \
    static void run_##ident(struct runctx *ctx) { pingpong_run(ctx, &mechvar); }             \
    const struct bench bench_##ident = {                                                     \
        .name = #ident, .summary = summ, .params = prm, .nparams = nprm,                     \
        .columns = pp_columns, .ncolumns = PP_NCOLUMNS, .needs = needs_,                     \
        .available = avail_, .run = run_##ident, .default_n = 100000, .kind = "ipc",         \
        .mech = &mechvar}
#define PINGPONG_BENCH(ident, mechvar, summ)                                                  \
    PINGPONG_BENCH_FULL(ident, mechvar, summ, pp_params, PP_NPARAMS, NULL, NULL)
#define PINGPONG_BENCH_NOSIZE(ident, mechvar, summ)                                           \
    PINGPONG_BENCH_FULL(ident, mechvar, summ, pp_params_nosize, PP_NPARAMS_NOSIZE, NULL, NULL)
#define PP_COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

/* Helpers several mechanisms share (pingpong.c). */
/* A private directory for named objects: $TMPDIR or /tmp, removed on every path.  Fills
 * dir (at least 256 bytes); registers its removal (after everything registered later). */
void pp_private_dir(struct pp_ctx *pp, char *dir, size_t len);
/* Close fd[i] if open and mark it closed. */
void pp_close(struct pp_ctx *pp, int i);

#endif
