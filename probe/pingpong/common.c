/* latscope-probe: what every ping-pong driver shares (the POSIX one, pingpong/driver.c, and
 * Windows's, win/pingpong.c): the parameters, columns and checks of every mechanism, the
 * responder's side, the initiator's side and the sequence of a run. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "pingpong/pingpong.h"

const char *const pp_mode_choices[] = {"processes", "threads", NULL};

const struct pdef pp_params[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
    PP_PARAM_SIZE(1 << 20),
};
const struct pdef pp_params_nosize[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
};

const struct coldef pp_columns[] = {
    {"rtt", "round trip: initiator sends, responder answers; timed by the initiator",
     "round_trip", NULL},
    {"oneway", "initiator to responder, from the shared clock (responder's receive time minus "
               "the initiator's start of the round trip)",
     "one_way_shared_clock", NULL},
};

const struct derived_col pp_derived[] = {
    {"rtt/2", "rtt", 2, "one_way_rtt_half",
     "half the round trip, computed by the lab: the one-way time where both directions cost "
     "the same", NULL, NULL},
};

int pp_err(struct pp_ctx *pp, int side, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pp->err[side], sizeof pp->err[side], fmt, ap);
    va_end(ap);
    return -1;
}

void pp_new_name(struct pp_ctx *pp) {
    char rnd[RANDOM_HEX_LEN + 1];
    random_hex(rnd);
    snprintf(pp->name, sizeof pp->name, "latscope-%d-%s-%s", (int)getpid(), pp->m->name, rnd);
}

/* ---------------------------------------------------------------- before the run: checks */

int pp_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen) {
    const struct pp_mech *m = b->member;
    int processes = !strcmp(param_of(b, pv, "mode")->s, "processes");
    const int *cpu = param_of(b, pv, "cpus")->cpu;
    if (processes && !m->processes_ok) {
        snprintf(err, errlen, "%s works between threads only; use -p mode=threads", m->name);
        return EXIT_BADINPUT;
    }
    if (!processes && !m->threads_ok) {
        snprintf(err, errlen, "%s works between processes only; use -p mode=processes",
                 m->name);
        return EXIT_BADINPUT;
    }
    if (m->has_size) {
        size_t size = (size_t)param_of(b, pv, "size")->i;
        if (size > m->max_size) {
            snprintf(err, errlen, "parameter size=%zu: %s carries at most %zu bytes per message",
                     size, m->name, m->max_size);
            return EXIT_BADINPUT;
        }
    }
    if (m->placements && !(m->placements & placement_of(cpu))) {
        snprintf(err, errlen, "%s", m->placement_refusal);
        return EXIT_BADINPUT;
    }
    for (int s = 0; s < 2; s++) {
        int code = cpu_check(cpu[s], err, errlen);
        if (code) return code;
    }
    return m->check ? m->check(b, pv, err, errlen) : 0;
}

/* ---------------------------------------------------------------- the responder (both drivers) */

/* The responder's failure: tell the initiator through shared memory and stop. */
void pp_peer_fail(struct pp_ctx *pp, const char *what) {
    snprintf(pp->sh->errmsg, sizeof pp->sh->errmsg, "peer: %s", what);
    __atomic_store_n(&pp->sh->peer_failed, 1, __ATOMIC_SEQ_CST);
}

/* Everything a side writes in its loop, written by that side now: after a fork, private pages
 * are shared copy-on-write and the shared map is not yet mapped in the child; either way the
 * first store would fault inside a timed region. */
void pp_touch_side(struct pp_ctx *pp, int side) {
    struct runctx *ctx = pp->run;
    size_t n = (size_t)ctx->n;
    touch_pages(pp->buf[side], pp->size + 64);
    touch_pages(pp->sh, sizeof *pp->sh);
    if (side == 1) {
        touch_pages(pp->sh->recv_at, (size_t)pp->sh->ring * sizeof(int64_t));
    } else {
        /* an arm's samples are allocated (and touched) by the arms driver, later */
        for (int c = 0; c < ctx->ncols; c++) touch_pages(ctx->cols[c].data, n * sizeof(int64_t));
        touch_pages(ctx->t_start, n * sizeof(int64_t));
        touch_pages((void *)ctx, sizeof *ctx);
        touch_pages(pp, sizeof *pp);
    }
    if (pp->state) touch_pages(pp->state, pp->m->state_size);
    touch_stack();
}

int pp_responder_start(struct pp_ctx *pp) {
    if (pp->cpu[1] >= 0) {
        int e = plat_pin_thread(pp->cpu[1]);
        if (e) {
            char m[128];
            snprintf(m, sizeof m, "cannot pin the responder to CPU %d: %s", pp->cpu[1],
                     strerror(e));
            pp_peer_fail(pp, m);
            return -1;
        }
    }
    if (pp->m->side_init) pp->m->side_init(pp, 1);
    if (pp->err[1][0]) {
        pp_peer_fail(pp, pp->err[1]);
        return -1;
    }
    pp_touch_side(pp, 1);
    return 0;
}

/* Runs the recorded round trips of each block as a loop of its own (no test of the
 * iteration number but the loop's), then the closing round trip (untimed), in which the
 * responder takes its usage reading: outside every timed region of the initiator.  It knows
 * nothing of blocks beyond what the initiator set in shared memory: a normal run is one block
 * of n, known before the responder starts; an arm's blocks each start with a discarded round
 * trip (an arms run's switch iterations), after whose receive the responder reads the block's
 * length and place, or the stop that the closing round trip brings. */
void pp_responder_loop(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    struct pp_shared *sh = pp->sh;
    uint64_t warm = (uint64_t)ctx->warmup;
    for (int i = 0; i < pp->m->prime_round_trips; i++)
        if (pp->m->recv(pp, 1) || pp->m->send(pp, 1)) goto fail;
    for (uint64_t i = 0; i < warm; i++) {
        if (pp->m->recv(pp, 1)) goto fail;
        inject_delay_from(clk_stamp());
        if (pp->m->send(pp, 1)) goto fail;
    }
    struct thread_usage u0, u1;
    plat_thread_usage(&u0);
    int64_t *ring = sh->recv_at;
    int64_t *at = ring + __atomic_load_n(&sh->block_base, __ATOMIC_ACQUIRE);
    uint64_t n = __atomic_load_n(&sh->block_len, __ATOMIC_ACQUIRE), i = 0;
    for (;;) {
        for (; i < n; i++) {
            if (pp->m->recv(pp, 1)) goto fail;
            uint64_t t = clk_stamp();
            inject_delay_from(t);
            if (pp->m->send(pp, 1)) goto fail;
            at[i] = (int64_t)t;
        }
        /* the next block's first round trip, or the closing one */
        if (pp->m->recv(pp, 1)) goto fail;
        if (__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) break;
        uint64_t t = clk_stamp();
        n = __atomic_load_n(&sh->block_len, __ATOMIC_ACQUIRE);
        at = ring + __atomic_load_n(&sh->block_base, __ATOMIC_ACQUIRE);
        if (n < 1 || at + n > ring + sh->ring) {
            pp_err(pp, 1, "internal error: a block of %llu round trips does not fit",
                   (unsigned long long)n);
            goto fail;
        }
        if (pp->m->send(pp, 1)) goto fail;
        at[0] = (int64_t)t;
        i = 1;
    }
    plat_thread_usage(&u1);
    thread_usage_delta(&sh->responder_usage, &u0, &u1);
    if (pp->m->send(pp, 1)) goto fail;
    if (pp->m->responder_done) pp->m->responder_done(pp);
    return;
fail:
    pp_peer_fail(pp, pp->err[1]);
}

/* ---------------------------------------------------------------- a run (both drivers) */

/* The run's context: parameters (checked by pp_check), names, the mechanism's state. */
static struct pp_ctx *pp_new(struct runctx *ctx, const struct pp_mech *m) {
    struct pp_ctx *pp = xcalloc(1, sizeof *pp);
    pp->m = m;
    pp->run = ctx;
    pp->processes = !strcmp(param(ctx, "mode")->s, "processes");
    pp->cpu[0] = param(ctx, "cpus")->cpu[0];
    pp->cpu[1] = param(ctx, "cpus")->cpu[1];
    pp->size = m->has_size ? (size_t)param(ctx, "size")->i : m->payload;
    for (int i = 0; i < 8; i++) pp->fd[i] = -1;
    pp_new_name(pp);
    pp->state = m->state_size ? xcalloc(1, m->state_size) : NULL;
    pp->kill_handle = -1;
    pp->watch = -1;
    /* the responder's stamps: every recorded round trip of a normal run; an arm's blocks
     * alternate between two halves (a block's stamps are read after the next block's first
     * round trip, by which time the responder has stored them all) */
    pp->ring = ctx->is_arm ? 2 * ctx->block_cap : (uint64_t)ctx->n;
    return pp;
}

/* The columns, with the context switches each contains: a blocking receiver is woken (one
 * switch on its CPU, more where helper threads relay); spinning peers switch only when they
 * share a CPU. */
static void pp_columns_add(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    const struct pp_mech *m = pp->m;
    enum placement pl = placement_of(pp->cpu);
    pp->way = m->blocking ? (m->switches_per_way > 0 ? m->switches_per_way : 1)
              : pl == PL_SAME_CPU     ? 1
              : pl == PL_DIFFERENT_CPUS ? 0
                                        : -1;
    add_column(ctx, "rtt", pp_columns[0].desc, "round_trip", pp->way < 0 ? -1 : 2 * pp->way);
    struct column *oneway =
        add_column(ctx, "oneway", pp_columns[1].desc, "one_way_shared_clock", pp->way);
    oneway->inject_free = 1; /* the injected wait is the responder's, after its receive time */
    add_t_start(ctx);
    /* on one CPU every hand-over may preempt (a woken receiver preempts its waker); unpinned
     * peers may share a CPU at any time; helper threads (ZeroMQ's I/O threads, on the
     * measuring threads' CPUs) preempt them on every message */
    ctx->preempt_expected = pl != PL_DIFFERENT_CPUS || m->switches_per_way > 1;
}

static void teardown_cb(void *arg) {
    struct pp_ctx *pp = arg;
    if (pp->m->teardown) pp->m->teardown(pp);
}

/* The mechanism's objects, with their teardown on the clean-up list before the setup starts
 * (a setup that stops half-way is undone too); then the initiator is pinned. */
static void pp_setup(struct pp_ctx *pp) {
    pp->teardown_handle = cleanup_push(teardown_cb, pp);
    pp->pid[0] = getpid();
    pp->thr[0] = pthread_self();
    if (pp->m->setup) pp->m->setup(pp);
    if (pp->cpu[0] >= 0) {
        int e = plat_pin_thread(pp->cpu[0]);
        if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", pp->cpu[0], strerror(e));
    }
    pp->run->cpu = pp->cpu[0];
    /* what the responder's read of the clock adds to a round trip (for the metadata) */
    pp->stamp_ns = clock_measure_stamp_ns(2001, &pp->run->clk);
}

/* A send or receive failed in the initiator.  When the peer died, the call's error (EOF,
 * EPIPE, ECONNRESET) is only a symptom: give the supervisor, which reaps the peer every 50 ms,
 * the chance to say so first. */
__attribute__((noreturn)) static void initiator_failed(struct pp_ctx *pp) {
    if (pp->processes && !pp->sh->peer_failed) usleep(200 * 1000);
    if (pp->sh->peer_failed) die(EXIT_FAIL, "%s; nothing was written", pp->sh->errmsg);
    die(EXIT_FAIL, "%s; nothing was written", pp->err[0]);
}

static void pp_initiator_start(struct pp_ctx *pp) {
    if (pp->m->side_init) pp->m->side_init(pp, 0);
    if (pp->err[0][0]) {
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
        die(EXIT_FAIL, "%s", pp->err[0]);
    }
    pp_touch_side(pp, 0);
}

/* One round trip of the initiator, as timed: the start read, the mechanism's send and receive,
 * the end read (an injected delay is the responder's: it answers late).  Returns the ticks;
 * *start is the start read. */
static inline int64_t timed_round_trip(struct pp_ctx *pp, uint64_t *start) {
    uint64_t a = clk_start();
    if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
    uint64_t b = clk_end();
    *start = a;
    return (int64_t)(b - a);
}

static void untimed_round_trip(struct pp_ctx *pp) {
    if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
}

/* The initiator's priming and warm-up (a loop of its own, so the recorded loop tests no
 * iteration number); a sample goes to pp->sink. */
static void pp_warm(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    uint64_t warm = (uint64_t)ctx->warmup;
    for (int i = 0; i < pp->m->prime_round_trips; i++) {
        stop_if_asked();
        untimed_round_trip(pp);
    }
    uint64_t a;
    for (uint64_t i = 0; i < warm; i++) {
        stop_if_asked();
        pp->sink = timed_round_trip(pp, &a);
        progress_set(ctx, i + 1);
    }
}

/* One-way from the shared clock: the responder's receive time minus the initiator's start of
 * the same round trip (t0 + t_start), both raw reads of the one clock, for the last block's
 * recorded round trips.  Called once the responder has stored their stamps: after the next
 * block's first round trip (an arm), or the closing one. */
static void pp_copy_out(struct pp_ctx *pp) {
    if (!pp->pending) return;
    struct runctx *ctx = pp->run;
    const int64_t *at = pp->sh->recv_at + pp->pend_base;
    const int64_t *ts = ctx->t_start + pp->pend_from;
    int64_t *ow = ctx->cols[1].data + pp->pend_from;
    for (uint64_t k = 0; k < pp->pend_count; k++) ow[k] = at[k] - (int64_t)ctx->t0 - ts[k];
    pp->pending = 0;
}

/* A block (struct bench's block): an arm first tells the responder the block's length and
 * where its stamps go; `discard` round trips timed as the recorded ones, kept nowhere (after
 * the first, the last block's stamps are complete: its oneway samples), then the recorded
 * round trips, a loop of their own. */
void pingpong_block(void *state, uint64_t from, uint64_t count, uint64_t discard) {
    struct pp_ctx *pp = state;
    struct runctx *ctx = pp->run;
    uint64_t base = 0, done = ctx->progress, a;
    if (ctx->is_arm) {
        if (discard < 1 || discard + count > ctx->block_cap)
            die(EXIT_FAIL, "internal error: a block of %llu + %llu round trips",
                (unsigned long long)discard, (unsigned long long)count);
        base = (pp->blocks++ & 1) ? ctx->block_cap : 0;
        __atomic_store_n(&pp->sh->block_base, base, __ATOMIC_RELAXED);
        __atomic_store_n(&pp->sh->block_len, discard + count, __ATOMIC_RELEASE);
    }
    for (uint64_t i = 0; i < discard; i++) {
        stop_if_asked();
        pp->sink = timed_round_trip(pp, &a);
        if (i == 0) pp_copy_out(pp);
        progress_set(ctx, done + i + 1);
    }
    if (!count) return;
    done += discard;
    int64_t *rt = ctx->cols[0].data + from, *ts = ctx->t_start + from;
    struct thread_usage u0;
    plat_thread_usage(&u0);
    uint64_t t0 = ctx->t0;
    int need_t0 = !ctx->t0_set;
    for (uint64_t i = 0; i < count; i++) {
        stop_if_asked();
        rt[i] = timed_round_trip(pp, &a);
        if (need_t0) {
            t0 = a;
            need_t0 = 0;
        }
        ts[i] = (int64_t)(a - t0);
        progress_set(ctx, done + i + 1);
    }
    timed_loop_end(ctx, t0, 2, "initiator", &u0);
    pp->pending = 1;
    pp->pend_from = from;
    pp->pend_count = count;
    pp->pend_base = base + discard;
}

/* The header's "bench" object: what was measured, and how. */
static void pp_meta(struct pp_ctx *pp) {
    const struct pp_mech *m = pp->m;
    struct jbuf *j = &pp->run->meta;
    int way = pp->way;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "mechanism", m->name);
    jb_str(j, "mode", pp->processes ? "processes" : "threads");
    jb_arr(j, "cpus");
    jb_int(j, NULL, pp->cpu[0]);
    jb_int(j, NULL, pp->cpu[1]);
    jb_end_arr(j);
    jb_str(j, "placement", placement_name(placement_of(pp->cpu)));
    jb_int(j, "message_bytes", (long long)pp->size);
    jb_bool(j, "message_size_parameter", m->has_size);
    jb_bool(j, "blocking", m->blocking);
    jb_int(j, "priming_round_trips", m->prime_round_trips);
    jb_str(j, "timed_region", m->timed);
    jb_str(j, "timed_region_frame",
           "rtt: from the initiator's start read of the clock (lfence; rdtsc; lfence for tsc) "
           "to its end read (rdtscp; lfence): the mechanism's send and receive (above) and, on "
           "the responder's side between its receive and its answer, one read of the clock "
           "kept as its receive time (responder_read_ns), and, after its answer, the store of "
           "that reading into its own (touched) array and its loop back to the receive, which "
           "lie in the round trip where the two sides share a CPU.  Outside every timed "
           "region: the initiator's stores of the sample, its progress counter and its check "
           "for a stop request; the warm-up test (the warm-up is a loop of its own); any "
           "system call; the responder's reads of the block's length and of the stop flag, "
           "which it makes only in a round trip that is never a sample (the closing one, and "
           "in an arms run the first of each block, which is discarded).  Each sample holds "
           "one clock read cost (clock.overhead_ns) and one "
           "responder read (responder_read_ns); neither is subtracted.  With --inject-ns the "
           "busy-wait (header inject_ns) is the responder's, between its receive time and "
           "its answer: it lengthens rtt, not oneway.  oneway: from the "
           "initiator's start read to the responder's read right after its receive returned "
           "(the subtraction is done after the block, outside every timed region)");
    jb_num(j, "responder_read_ns", pp->stamp_ns);
    jb_str(j, "responder", pp_driver_responder(pp));
    jb_obj(j, "latencies");
    jb_str(j, "rtt", "round trip (initiator -> responder -> initiator), timed by the initiator");
    jb_str(j, "oneway", "one-way initiator -> responder from the shared clock; "
                        "the rtt/2 estimate is derived by the lab");
    jb_end_obj(j);
    char cs[512];
    if (m->blocking)
        snprintf(cs, sizeof cs, "rtt: %d, oneway: %d (%s)", 2 * way, way,
                 m->switches_note ? m->switches_note
                                  : "each direction wakes a sleeping receiver: one switch on "
                                    "its CPU, whether the peers share a CPU or not");
    else if (way < 0)
        snprintf(cs, sizeof cs, "unknown: unpinned spinning peers switch only when the "
                                "scheduler puts them on one CPU");
    else if (way == 0)
        snprintf(cs, sizeof cs, "rtt: 0, oneway: 0 (both peers spin on their own CPU)");
    else
        snprintf(cs, sizeof cs, "rtt: 2, oneway: 1 (the peers share a CPU: each hand-over "
                                "needs the scheduler to switch to the other)");
    jb_str(j, "context_switches", cs);
    jb_end_obj(j);
}

/* The mechanism's teardown (under the clean-up list's lock), then the driver's own memory (the
 * shared mapping stays: the supervisor may still look at its failure flag until it stops). */
static void pp_free(struct pp_ctx *pp) {
    pp->finished = 1;
    cleanup_now(pp->teardown_handle);
    free(pp->buf[0]);
    free(pp->buf[1]);
    free(pp->state);
    free(pp);
}

/* The start of a run (struct bench's begin, then ready); each step does one job (the
 * driver's: pp_driver_*).  A normal run's one block is known to the responder before it
 * starts.  The initiator's own start (its side_init: ZeroMQ's context and I/O thread; its
 * pages touched) and its warm-up follow every fork of the run (ready). */
void *pingpong_begin(struct runctx *ctx) {
    struct pp_ctx *pp = pp_new(ctx, ctx->b->member);
    pp_driver_share(pp);
    pp->sh->ring = pp->ring;
    pp->sh->block_len = ctx->is_arm ? 0 : (uint64_t)ctx->n;
    pp_columns_add(pp);
    pp_setup(pp);
    pp_driver_start_responder(pp);
    return pp;
}

void pingpong_ready(void *state) {
    struct pp_ctx *pp = state;
    pp_initiator_start(pp);
    pp_warm(pp);
}

/* The end of a run (struct bench's end): the closing round trip, untimed, in which the
 * responder takes its usage reading (the stop set before it), the last block's oneway
 * samples, the responder joined, the metadata, the teardown. */
void pingpong_end(void *state) {
    struct pp_ctx *pp = state;
    struct runctx *ctx = pp->run;
    __atomic_store_n(&pp->sh->stop, 1, __ATOMIC_RELEASE);
    untimed_round_trip(pp);
    pp_copy_out(pp);
    pp_driver_join_responder(pp);
    ctx->roles[1].role = "responder";
    ctx->roles[1].u = pp->sh->responder_usage;
    pp_meta(pp);
    pp_free(pp);
}

/* ------------------------------------------------------- the family's hooks (core/bench.h) */

/* A mechanism's facts in its benchmark's catalogue entry (--list: "mechanism"). */
static void pp_catalogue(struct jbuf *j, const struct bench *b) {
    const struct pp_mech *m = b->member;
    jb_obj(j, "mechanism");
    jb_bool(j, "threads", m->threads_ok);
    jb_bool(j, "processes", m->processes_ok);
    jb_bool(j, "blocking", m->blocking);
    jb_bool(j, "message_size", m->has_size);
    if (m->has_size)
        jb_int(j, "max_message_bytes", (long long)m->max_size);
    else
        jb_int(j, "message_bytes", (long long)m->payload);
    /* spinning: 0 on two CPUs, 1 on one (null: it depends on the placement) */
    if (m->blocking)
        jb_int(j, "context_switches_per_way", m->switches_per_way > 0 ? m->switches_per_way : 1);
    else
        jb_null(j, "context_switches_per_way");
    jb_str(j, "timed_region", m->timed);
    unsigned pl = m->placements ? m->placements : PL_ALL;
    jb_arr(j, "placements");
    for (unsigned p = PL_SAME_CPU; p <= PL_UNPINNED; p <<= 1)
        if (pl & p) jb_str(j, NULL, placement_name((enum placement)p));
    jb_end_arr(j);
    jb_str(j, "placement_note", m->placement_refusal);
    jb_end_obj(j);
}

/* A message size is at most what the mechanism carries; every other bound is the
 * parameter's own. */
static long long pp_param_max(const struct bench *b, const struct pdef *d) {
    const struct pp_mech *m = b->member;
    if (m->has_size && !strcmp(d->name, "size") && (long long)m->max_size < d->max)
        return (long long)m->max_size;
    return d->max;
}

static int pp_spins(const struct bench *b) {
    const struct pp_mech *m = b->member;
    return !m->blocking;
}

static int pp_forks(const struct bench *b, const struct pval *pv) {
    return !strcmp(param_of(b, pv, "mode")->s, "processes");
}

const struct family pp_family = {
    .catalogue = pp_catalogue,
    .param_max = pp_param_max,
    .spins = pp_spins,
    .forks = pp_forks,
};
