/* latscope-probe: ping-pong on words in shared memory: futex (sleep in the kernel), spin and
 * spin_pause (busy-wait, no system call), yield (sched_yield on one CPU).  The words live in
 * the scratch area of struct pp_shared, a MAP_SHARED mapping both sides see. */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

/* Word s carries the messages side s sends; the two words sit on separate cache lines. */
static inline uint32_t *word32(struct pp_ctx *pp, int s) {
    return (uint32_t *)(void *)(pp->sh->scratch + 64 * s);
}
static inline uint64_t *word64(struct pp_ctx *pp, int s) {
    return (uint64_t *)(void *)(pp->sh->scratch + 128 + 64 * s);
}

/* ------------------------------------------------------------------ futex */

/* Between threads the futex is process-private (FUTEX_PRIVATE_FLAG, what a pthread mutex
 * uses); between processes it is shared (keyed by the shared mapping). */
static int futex_op(struct pp_ctx *pp, uint32_t *w, int op, uint32_t val) {
    if (!pp->processes) op |= FUTEX_PRIVATE_FLAG;
    return (int)syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static int futex_send(struct pp_ctx *pp, int side) {
    uint32_t *w = word32(pp, side);
    __atomic_store_n(w, 1, __ATOMIC_RELEASE);
    if (futex_op(pp, w, FUTEX_WAKE, 1) < 0)
        return pp_err(pp, side, "futex(FUTEX_WAKE) failed: %s", strerror(errno));
    return 0;
}

static int futex_recv(struct pp_ctx *pp, int side) {
    uint32_t *w = word32(pp, 1 - side);
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == 0) {
        if (futex_op(pp, w, FUTEX_WAIT, 0) < 0 && errno != EAGAIN && errno != EINTR)
            return pp_err(pp, side, "futex(FUTEX_WAIT) failed: %s", strerror(errno));
    }
    /* The next message this way comes only after a full round trip: clearing is safe. */
    __atomic_store_n(w, 0, __ATOMIC_RELAXED);
    return 0;
}

static const struct pp_mech mech_futex = {
    .name = "futex",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .setup = NULL,
    .send = futex_send,
    .recv = futex_recv,
    .timed = "rtt: store 1 to word A and futex(FUTEX_WAKE) it, then futex(FUTEX_WAIT) until "
             "word B is 1 (private futexes between threads, shared between processes), with "
             "the responder's wait on A and store+wake of B in between",
};

PINGPONG_BENCH_NOSIZE(futex, mech_futex,
                      "futex wait/wake ping-pong on two words in shared memory");

/* ------------------------------------------------------------------ spin, spin_pause, yield
 * Counters instead of flags: side s only ever increments its own word; the responder waits
 * until the initiator's word is ahead of its own, the initiator until the responder's word
 * has caught up with its own.  Nothing needs resetting, nothing is a system call. */

enum wait_kind { WAIT_SPIN, WAIT_PAUSE, WAIT_YIELD };

static inline int arrived(struct pp_ctx *pp, int side) {
    uint64_t mine = __atomic_load_n(word64(pp, side), __ATOMIC_RELAXED);
    uint64_t theirs = __atomic_load_n(word64(pp, 1 - side), __ATOMIC_ACQUIRE);
    return side == 1 ? theirs != mine : theirs == mine;
}

static int counter_send(struct pp_ctx *pp, int side) {
    uint64_t *w = word64(pp, side);
    __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    return 0;
}

static int spin_recv(struct pp_ctx *pp, int side) {
    while (!arrived(pp, side)) {
    }
    return 0;
}

static int pause_recv(struct pp_ctx *pp, int side) {
    while (!arrived(pp, side)) pp_cpu_relax();
    return 0;
}

static int yield_recv(struct pp_ctx *pp, int side) {
    while (!arrived(pp, side))
        if (sched_yield() != 0)
            return pp_err(pp, side, "sched_yield failed: %s", strerror(errno));
    return 0;
}

static const struct pp_mech mech_spin = {
    .name = "spin",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 0,
    .send = counter_send,
    .recv = spin_recv,
    .timed = "rtt: an atomic store (release) to counter A, then a busy loop of atomic loads "
             "(acquire) until counter B has caught up, with the responder's busy wait on A and "
             "its store to B in between; no system call, no pause instruction",
};

/* On one CPU every hand-over waits for the scheduler to preempt the spinning party (at the
 * tick: milliseconds), so the default number of iterations is smaller there: 500, enough for
 * two workers of 250 under --workers auto (between-run variation) and for a p95. */
static const struct nrule spin_n_rules[] = {{{"cpus", NULL, NULL, "same_cpu"}, 500}};
#define SPIN_BENCH(ident, mechvar, summ, ...)                                                  \
    PINGPONG_BENCH_NOSIZE(ident, mechvar, summ, .n_rules = spin_n_rules, .n_nrules = 1,       \
                          .default_n_note = "500 when both parties share a CPU (cpus=A,A)",  \
                          __VA_ARGS__)
static const struct scenario spin_scenarios[] = {
    {"spin", NULL, 0, 0, 1, "busy-waiting peers: needs two CPUs"},
};

SPIN_BENCH(spin, mech_spin, "busy-wait ping-pong on two counters in shared memory (atomics)",
           .scenarios = spin_scenarios, .nscenarios = COUNT(spin_scenarios));

static const struct pp_mech mech_spin_pause = {
    .name = "spin_pause",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 0,
    .send = counter_send,
    .recv = pause_recv,
    .timed = "rtt: as spin, with the pause instruction (x86 pause, arm64 yield) in every "
             "iteration of both busy loops",
};

SPIN_BENCH(spin_pause, mech_spin_pause,
           "busy-wait ping-pong with the pause instruction in the wait loop");

/* yield: both parties on one CPU; the waiting side gives the CPU away with sched_yield(), so
 * each hand-over is one voluntary context switch.  On two CPUs it would be a spin loop with
 * system calls in it, which measures nothing useful: refused (placements). */

static const struct pdef yield_params[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("0,0"),
};

static const struct pp_mech mech_yield = {
    .name = "yield",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 0,
    .placements = PL_SAME_CPU,
    .placement_refusal = "yield needs both parties on one CPU (sched_yield hands the CPU to the "
                         "other party only there): use -p cpus=A,A, e.g. cpus=0,0",
    .send = counter_send,
    .recv = yield_recv,
    .timed = "rtt: an atomic store to counter A, then sched_yield() until counter B has "
             "caught up, with the responder (on the same CPU) running in between: two "
             "voluntary context switches through the scheduler",
};

static const struct scenario yield_scenarios[] = {
    {"yield", NULL, 0, 0, 1, "both parties on CPU 0 (the benchmark's default)"},
};

PINGPONG_BENCH(yield, mech_yield,
               "sched_yield ping-pong between two parties on one CPU (cpus=A,A only)",
               .params = yield_params, .nparams = COUNT(yield_params),
               .needs = "both parties on one CPU", .scenarios = yield_scenarios,
               .nscenarios = COUNT(yield_scenarios));
