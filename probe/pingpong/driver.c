/* latscope-probe: the ping-pong driver (see pingpong.h). */
#include "pingpong/pingpong.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
const int pp_nparams = PP_NPARAMS;

const struct coldef pp_columns[] = {
    {"rtt", "round trip: initiator sends, responder answers; timed by the initiator",
     "round_trip", NULL},
    {"oneway", "initiator to responder, from the shared clock (responder's receive time minus "
               "the initiator's start of the round trip)",
     "one_way_shared_clock", NULL},
};
const int pp_ncolumns = PP_NCOLUMNS;

int pp_err(struct pp_ctx *pp, int side, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pp->err[side], sizeof pp->err[side], fmt, ap);
    va_end(ap);
    return -1;
}

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

/* The responder's failure: tell the initiator through shared memory and stop. */
static void peer_fail(struct pp_ctx *pp, const char *what) {
    snprintf(pp->sh->errmsg, sizeof pp->sh->errmsg, "peer: %s", what);
    __atomic_store_n(&pp->sh->peer_failed, 1, __ATOMIC_SEQ_CST);
}

/* Runs the recorded round trips as a loop of their own (no test of the iteration number), then
 * the closing round trip (untimed), in which the responder takes its usage reading: outside
 * every timed region of the initiator. */
static void responder_loop(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    uint64_t n = (uint64_t)ctx->n, warm = (uint64_t)ctx->warmup;
    for (int i = 0; i < pp->m->prime_round_trips; i++)
        if (pp->m->recv(pp, 1) || pp->m->send(pp, 1)) goto fail;
    for (uint64_t i = 0; i < warm; i++) {
        if (pp->m->recv(pp, 1)) goto fail;
        (void)clk_stamp();
        if (pp->m->send(pp, 1)) goto fail;
    }
    struct thread_usage u0, u1;
    thread_usage_now(&u0);
    int64_t *at = pp->sh->recv_at;
    for (uint64_t i = 0; i < n; i++) {
        if (pp->m->recv(pp, 1)) goto fail;
        uint64_t t = clk_stamp();
        if (pp->m->send(pp, 1)) goto fail;
        at[i] = (int64_t)t;
    }
    if (pp->m->recv(pp, 1)) goto fail;
    thread_usage_now(&u1);
    thread_usage_delta(&pp->sh->responder_usage, &u0, &u1);
    if (pp->m->send(pp, 1)) goto fail;
    if (pp->m->responder_done) pp->m->responder_done(pp);
    return;
fail:
    peer_fail(pp, pp->err[1]);
}

/* Everything a side writes in its loop, written by that side now: after a fork, private pages
 * are shared copy-on-write and the shared map is not yet mapped in the child; either way the
 * first store would fault inside a timed region. */
static void touch_side(struct pp_ctx *pp, int side) {
    struct runctx *ctx = pp->run;
    size_t n = (size_t)ctx->n;
    touch_pages(pp->buf[side], pp->size + 64);
    touch_pages(pp->sh, sizeof *pp->sh);
    if (side == 1) {
        touch_pages(pp->sh->recv_at, n * sizeof(int64_t));
    } else {
        for (int c = 0; c < ctx->ncols; c++) touch_pages(ctx->cols[c].data, n * sizeof(int64_t));
        touch_pages(ctx->t_start, n * sizeof(int64_t));
        touch_pages((void *)ctx, sizeof *ctx);
        touch_pages(pp, sizeof *pp);
    }
    touch_stack();
}

static int responder_start(struct pp_ctx *pp) {
    if (pp->cpu[1] >= 0) {
        int e = pin_to_cpu(pp->cpu[1]);
        if (e) {
            char m[128];
            snprintf(m, sizeof m, "cannot pin the responder to CPU %d: %s", pp->cpu[1],
                     strerror(e));
            peer_fail(pp, m);
            return -1;
        }
    }
    if (pp->m->side_init) pp->m->side_init(pp, 1);
    if (pp->err[1][0]) {
        peer_fail(pp, pp->err[1]);
        return -1;
    }
    touch_side(pp, 1);
    return 0;
}

static void *responder_thread(void *arg) {
    struct pp_ctx *pp = arg;
    if (responder_start(pp) == 0) responder_loop(pp);
    return NULL;
}

/* A send or receive failed in the initiator.  When the peer died, the call's error (EOF,
 * EPIPE, ECONNRESET) is only a symptom: give the supervisor, which reaps the peer every 50 ms,
 * the chance to say so first. */
__attribute__((noreturn)) static void initiator_failed(struct pp_ctx *pp) {
    if (pp->processes && !pp->sh->peer_failed) usleep(200 * 1000);
    if (pp->sh->peer_failed) die(EXIT_FAIL, "%s; nothing was written", pp->sh->errmsg);
    die(EXIT_FAIL, "%s; nothing was written", pp->err[0]);
}

static void teardown_cb(void *arg) {
    struct pp_ctx *pp = arg;
    if (pp->m->teardown) pp->m->teardown(pp);
}

/* The size parameter, where the benchmark has one. */
static const struct pval *size_param(const struct runctx *ctx) {
    for (int k = 0; k < ctx->b->nparams; k++)
        if (!strcmp(ctx->b->params[k].name, "size")) return &ctx->pv[k];
    return NULL;
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

void pingpong_run(struct runctx *ctx, const struct pp_mech *m) {
    struct pp_ctx *pp = xcalloc(1, sizeof *pp);
    pp->m = m;
    pp->run = ctx;
    pp->processes = !strcmp(param(ctx, "mode")->s, "processes");
    pp->cpu[0] = param(ctx, "cpus")->cpu[0];
    pp->cpu[1] = param(ctx, "cpus")->cpu[1];
    const struct pval *sz = m->has_size ? size_param(ctx) : NULL;
    pp->size = sz ? (size_t)sz->i : m->payload;
    for (int i = 0; i < 8; i++) pp->fd[i] = -1;
    snprintf(pp->name, sizeof pp->name, "latscope-%d-%s", (int)getpid(), m->name);

    if (pp->processes && !m->processes_ok)
        die(EXIT_BADINPUT, "%s works between threads only; use -p mode=threads", m->name);
    if (!pp->processes && !m->threads_ok)
        die(EXIT_BADINPUT, "%s works between processes only; use -p mode=processes", m->name);
    if (m->has_size && pp->size > m->max_size)
        die(EXIT_BADINPUT, "parameter size=%zu: %s carries at most %zu bytes per message",
            pp->size, m->name, m->max_size);
    for (int s = 0; s < 2; s++) check_cpu_or_die(pp->cpu[s]);

    /* Everything the two sides share, allocated and touched before the first sample. */
    size_t shbytes = sizeof(struct pp_shared) + (size_t)ctx->n * sizeof(int64_t);
    void *map = mmap(NULL, shbytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) die(EXIT_FAIL, "cannot map %zu bytes of shared memory", shbytes);
    memset(map, 0, shbytes);
    pp->sh = map;
    for (int s = 0; s < 2; s++) {
        pp->buf[s] = xcalloc(1, pp->size + 64);
        memset(pp->buf[s], 's' + s, pp->size);
    }
    supervisor_peer_error(&pp->sh->peer_failed, pp->sh->errmsg);

    /* Context switches per direction: a blocking receiver is woken (one switch on its CPU,
     * more where helper threads relay); spinning peers switch only when they share a CPU. */
    int same = pp->cpu[0] >= 0 && pp->cpu[0] == pp->cpu[1];
    int pinned = pp->cpu[0] >= 0 && pp->cpu[1] >= 0;
    int way = m->blocking ? (m->switches_per_way > 0 ? m->switches_per_way : 1)
                          : (same ? 1 : (pinned ? 0 : -1));
    struct column *rtt =
        add_column(ctx, "rtt", pp_columns[0].desc, "round_trip", way < 0 ? -1 : 2 * way);
    add_column(ctx, "oneway", pp_columns[1].desc, "one_way_shared_clock", way);
    ctx->t_start = alloc_samples((size_t)ctx->n);

    /* The mechanism's teardown is on the clean-up list before its setup starts, so a setup
     * that stops half-way (die) is undone too. */
    int th = cleanup_push(teardown_cb, pp);
    pp->pid[0] = getpid();
    pp->thr[0] = pthread_self();
    if (m->setup) m->setup(pp);

    if (pp->cpu[0] >= 0) {
        int e = pin_to_cpu(pp->cpu[0]);
        if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", pp->cpu[0], strerror(e));
    }

    /* what the responder's read of the clock adds to a round trip (for the metadata) */
    double stamp_ns = clock_measure_stamp_ns(2001, &ctx->clk);

    pid_t child = 0;
    int kh = -1;
    if (pp->processes) {
        pid_t parent = getpid();
        child = fork();
        if (child < 0) die(EXIT_FAIL, "fork failed: %s", strerror(errno));
        if (child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(EXIT_FAIL);
            pp->pid[1] = getpid();
            pp->thr[1] = pthread_self();
            if (responder_start(pp) == 0) responder_loop(pp);
            _exit(pp->sh->peer_failed ? EXIT_FAIL : EXIT_OK);
        }
        pp->pid[1] = child;
        kh = cleanup_kill(child);
        supervisor_watch_peer(child, ctx->peer_timeout);
    } else {
        pp->pid[1] = pp->pid[0];
        if (pthread_create(&pp->thr[1], NULL, responder_thread, pp) != 0)
            die(EXIT_FAIL, "cannot start the responder thread");
        supervisor_watch_peer(0, ctx->peer_timeout);
    }
    if (m->side_init) m->side_init(pp, 0);
    if (pp->err[0][0]) {
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
        die(EXIT_FAIL, "%s", pp->err[0]);
    }

    touch_side(pp, 0);
    /* on one CPU every hand-over may preempt (a woken receiver preempts its waker); unpinned
     * peers may share a CPU at any time; helper threads (ZeroMQ's I/O threads, on the
     * measuring threads' CPUs) preempt them on every message */
    ctx->preempt_expected = same || !pinned || m->switches_per_way > 1;

    uint64_t n = (uint64_t)ctx->n, warm = (uint64_t)ctx->warmup;
    int64_t *rt = rtt->data, *ts = ctx->t_start;
    for (int i = 0; i < m->prime_round_trips; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        if (m->send(pp, 0) || m->recv(pp, 0)) initiator_failed(pp);
    }
    /* the warm-up is a loop of its own, so the recorded loop tests no iteration number */
    uint64_t a;
    for (uint64_t i = 0; i < warm; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        rt[0] = timed_round_trip(pp, &a);
        progress_set(ctx, i + 1);
    }
    struct thread_usage u0, u1;
    thread_usage_now(&u0);
    uint64_t t0 = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        rt[i] = timed_round_trip(pp, &a);
        if (i == 0) t0 = a;
        ts[i] = (int64_t)(a - t0);
        progress_set(ctx, warm + i + 1);
    }
    thread_usage_now(&u1);
    /* the closing round trip, untimed: the responder takes its usage reading in it */
    if (m->send(pp, 0) || m->recv(pp, 0)) initiator_failed(pp);
    ctx->t0 = t0;
    ctx->nroles = 2;
    ctx->roles[0].role = "initiator";
    thread_usage_delta(&ctx->roles[0].u, &u0, &u1);

    if (pp->processes) {
        int st = 0;
        if (!supervisor_unwatch_peer(&st)) {
            while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
            }
        }
        cleanup_cancel(kh);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            die(EXIT_FAIL, "%s", pp->sh->errmsg[0] ? pp->sh->errmsg : "the peer failed");
    } else {
        supervisor_unwatch_peer(NULL);
        pthread_join(pp->thr[1], NULL);
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
    }
    /* one-way from the shared clock: the responder's receive time minus the initiator's start
     * of the same round trip (t0 + t_start), both raw reads of the one clock */
    for (long long k = 0; k < ctx->n; k++)
        ctx->cols[1].data[k] = pp->sh->recv_at[k] - (int64_t)t0 - ctx->t_start[k];
    ctx->roles[1].role = "responder";
    ctx->roles[1].u = pp->sh->responder_usage;
    pp->finished = 1;
    cleanup_now(th); /* the teardown, under the clean-up list's lock */

    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "mechanism", m->name);
    jb_str(j, "mode", pp->processes ? "processes" : "threads");
    jb_arr(j, "cpus");
    jb_int(j, NULL, pp->cpu[0]);
    jb_int(j, NULL, pp->cpu[1]);
    jb_end_arr(j);
    const char *placement = pp->cpu[0] < 0 || pp->cpu[1] < 0 ? "unpinned"
                            : pp->cpu[0] == pp->cpu[1]     ? "same_cpu"
                                                           : "different_cpus";
    jb_str(j, "placement", placement);
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
    jb_num(j, "responder_read_ns", stamp_ns);
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
