/* latscope-probe: the ping-pong driver (see pingpong.h).  pingpong_run is the sequence; each
 * step below does one job. */
#include "pingpong/pingpong.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

void pp_private_dir(struct pp_ctx *pp, char *dir, size_t len) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(dir, len, "%s/latscope-%d-%s-XXXXXX", base, (int)getpid(), pp->m->name);
    if (!mkdtemp(dir))
        die(EXIT_FAIL, "cannot create a private directory in %s: %s (set TMPDIR to a "
            "writable directory)", base, strerror(errno));
    cleanup_rmdir(dir);
}

void pp_close(struct pp_ctx *pp, int i) {
    if (pp->fd[i] >= 0) {
        close(pp->fd[i]);
        pp->fd[i] = -1;
    }
}

/* ---------------------------------------------------------------- the steps of a run */

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
    return pp;
}

/* Everything the two sides share, and their message buffers, allocated and written before the
 * first sample; the supervisor learns where the responder reports its failure. */
static void pp_share(struct pp_ctx *pp) {
    pp->sh_bytes = sizeof(struct pp_shared) + (size_t)pp->run->n * sizeof(int64_t);
    void *map =
        mmap(NULL, pp->sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) die(EXIT_FAIL, "cannot map %zu bytes of shared memory", pp->sh_bytes);
    memset(map, 0, pp->sh_bytes);
    pp->sh = map;
    for (int s = 0; s < 2; s++) {
        pp->buf[s] = xcalloc(1, pp->size + 64);
        memset(pp->buf[s], 's' + s, pp->size);
    }
    supervisor_peer_error(&pp->sh->peer_failed, pp->sh->errmsg);
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
    add_column(ctx, "oneway", pp_columns[1].desc, "one_way_shared_clock", pp->way);
    ctx->t_start = alloc_samples((size_t)ctx->n);
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
    /* what the responder's read of the clock adds to a round trip (for the metadata) */
    pp->stamp_ns = clock_measure_stamp_ns(2001, &pp->run->clk);
}

/* ---------------------------------------------------------------- the responder */

static void *responder_thread(void *arg) {
    struct pp_ctx *pp = arg;
    if (pp_responder_start(pp) == 0) pp_responder_loop(pp);
    return NULL;
}

/* The responder, as a forked process or a thread, watched by the supervisor.  A forked child
 * runs only what it registers on the clean-up list itself (none here): its parent's entries
 * are marked as the parent's (core/cleanup.c), so an error in it never undoes them. */
static void pp_start_responder(struct pp_ctx *pp) {
    if (pp->processes) {
        pid_t parent = getpid();
        pid_t child = fork();
        if (child < 0) die(EXIT_FAIL, "fork failed: %s", strerror(errno));
        if (child == 0) {
            plat_die_with_parent(SIGKILL);
            if (getppid() != parent) _exit(EXIT_FAIL);
            pp->pid[1] = getpid();
            pp->thr[1] = pthread_self();
            if (pp_responder_start(pp) == 0) pp_responder_loop(pp);
            _exit(pp->sh->peer_failed ? EXIT_FAIL : EXIT_OK);
        }
        pp->pid[1] = child;
        pp->kill_handle = cleanup_kill(child);
        supervisor_watch_peer(child, pp->run->peer_timeout);
    } else {
        pp->pid[1] = pp->pid[0];
        if (pthread_create(&pp->thr[1], NULL, responder_thread, pp) != 0)
            die(EXIT_FAIL, "cannot start the responder thread");
        supervisor_watch_peer(0, pp->run->peer_timeout);
    }
}

/* ---------------------------------------------------------------- the initiator */

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

/* One round trip of the initiator, as timed: the start read, the injected delay (if any), the
 * mechanism's send and receive, the end read.  Returns the ticks; *start is the start read. */
static inline int64_t timed_round_trip(struct pp_ctx *pp, uint64_t *start) {
    uint64_t a = clk_start();
    inject_delay();
    if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
    uint64_t b = clk_end();
    *start = a;
    return (int64_t)(b - a);
}

static void untimed_round_trip(struct pp_ctx *pp) {
    if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
}

/* The initiator's loops: priming, warm-up (a loop of its own, so the recorded loop tests no
 * iteration number), the recorded round trips, and the closing round trip, untimed, in which
 * the responder takes its usage reading. */
static void pp_measure(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    uint64_t n = (uint64_t)ctx->n, warm = (uint64_t)ctx->warmup;
    int64_t *rt = ctx->cols[0].data, *ts = ctx->t_start;
    for (int i = 0; i < pp->m->prime_round_trips; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        untimed_round_trip(pp);
    }
    uint64_t a;
    for (uint64_t i = 0; i < warm; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        rt[0] = timed_round_trip(pp, &a);
        progress_set(ctx, i + 1);
    }
    struct thread_usage u0, u1;
    plat_thread_usage(&u0);
    uint64_t t0 = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        rt[i] = timed_round_trip(pp, &a);
        if (i == 0) t0 = a;
        ts[i] = (int64_t)(a - t0);
        progress_set(ctx, warm + i + 1);
    }
    plat_thread_usage(&u1);
    untimed_round_trip(pp);
    ctx->t0 = t0;
    ctx->nroles = 2;
    ctx->roles[0].role = "initiator";
    thread_usage_delta(&ctx->roles[0].u, &u0, &u1);
}

/* ---------------------------------------------------------------- after the run */

/* The responder has finished: reap the process (or join the thread) and stop on its error. */
static void pp_join_responder(struct pp_ctx *pp) {
    if (pp->processes) {
        int st = 0;
        if (!supervisor_unwatch_peer(&st)) {
            while (waitpid(pp->pid[1], &st, 0) < 0 && errno == EINTR) {
            }
        }
        cleanup_cancel(pp->kill_handle);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            die(EXIT_FAIL, "%s", pp->sh->errmsg[0] ? pp->sh->errmsg : "the peer failed");
    } else {
        supervisor_unwatch_peer(NULL);
        pthread_join(pp->thr[1], NULL);
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
    }
}

/* One-way from the shared clock: the responder's receive time minus the initiator's start of
 * the same round trip (t0 + t_start), both raw reads of the one clock; and the responder's
 * usage. */
static void pp_oneway(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    for (long long k = 0; k < ctx->n; k++)
        ctx->cols[1].data[k] = pp->sh->recv_at[k] - (int64_t)ctx->t0 - ctx->t_start[k];
    ctx->roles[1].role = "responder";
    ctx->roles[1].u = pp->sh->responder_usage;
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
           "system call.  Each sample holds one clock read cost (clock.overhead_ns) and one "
           "responder read (responder_read_ns); neither is subtracted.  With --inject-ns the "
           "busy-wait (header inject_ns) follows the start read.  oneway: from the "
           "initiator's start read to the responder's read right after its receive returned "
           "(the subtraction is done after the run)");
    jb_num(j, "responder_read_ns", pp->stamp_ns);
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

void pingpong_run(struct runctx *ctx, const struct pp_mech *m) {
    struct pp_ctx *pp = pp_new(ctx, m);
    pp_share(pp);
    pp_columns_add(pp);
    pp_setup(pp);
    pp_start_responder(pp);
    pp_initiator_start(pp);
    pp_measure(pp);
    pp_join_responder(pp);
    pp_oneway(pp);
    pp_meta(pp);
    pp_free(pp);
}
