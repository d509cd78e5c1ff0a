/* latscope-probe: the cost of a context switch, in lmbench's manner (lat_ctx): a ring of
 * `procs` processes on one CPU passing a token through pipes, each summing a working set of
 * `size` bytes of its own when it holds the token.
 *
 * Each iteration times two things, one right after the other, in the first process of the
 * ring (so that both see the same state of the machine):
 *   pass  the ring's work without a switch: procs times, sum its working set, write the
 *         token into a pipe of its own and read it back (lmbench's overhead);
 *   ring  one trip of the token around the ring: procs hand-overs, each a sum, a write, a
 *         switch to the next process and its read.
 * The lab's switch column is (ring - pass) / procs: the switch and what it costs the next
 * process to find its working set again (its cache state), without the passing itself.
 *
 * The ring's other processes are forked children that die with the probe; each closes every
 * pipe end it does not use, so a process that ends makes the next one read end-of-file and
 * end too, and the first process's read fails: one line, exit 1, never a hang. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/bench.h"

#define CTX_MAX_PROCS 64
#define CTX_STOP 0x7fffffff

static const struct pdef ctx_params[] = {
    {"procs", P_INT, "2", "processes",
     "processes in the ring (lat_ctx's N): each trip of the token makes this many switches",
     NULL, 2, CTX_MAX_PROCS, NULL},
    {"size", P_SIZE, "0", "bytes",
     "the working set each process sums when it holds the token (lat_ctx -s): 0, 16k, "
     "64k, ...",
     NULL, 0, 64LL << 20, NULL},
    {"cpu", P_CPU, "0", "cpu",
     "the CPU every process of the ring is pinned to (none: unpinned, then the token may "
     "cross CPUs and the figure is no longer a switch on one CPU)",
     NULL, 0, 0, NULL},
};

static const struct coldef ctx_columns[] = {
    {"ring", "one trip of the token around the ring: procs hand-overs, each a sum of the "
             "working set, a pipe write, a switch to the next process and its pipe read",
     "ring", NULL},
    {"pass", "the same work without a switch, in the first process alone: procs times a sum "
             "of its working set, a write into a pipe of its own and the read back",
     "pass", NULL},
};

static const struct derived_col ctx_derived[] = {
    {"switch", "ring", 0, "switch",
     "one context switch, with the cost of passing the token subtracted: (ring - pass) / "
     "procs, sample by sample",
     "pass", "procs"},
};

struct ctx_run {
    struct runctx *ctx;
    int procs, cpu;
    size_t words;
    uint64_t *ws;       /* the first process's working set */
    int ring[CTX_MAX_PROCS][2];  /* ring[k]: what process k reads its token from */
    int self[2];        /* the first process's own pipe (pass) */
    pid_t pid[CTX_MAX_PROCS];
    int kill[CTX_MAX_PROCS];
    int watch[CTX_MAX_PROCS];
    uint64_t sink;
};

/* Read every word of the working set: what a process does with the token (lat_ctx sums
 * its array). */
static inline uint64_t ws_sum(const uint64_t *ws, size_t words) {
    uint64_t s = 0;
    for (size_t i = 0; i < words; i++) s += ws[i];
    return s;
}

static uint64_t *ws_new(size_t words) {
    uint64_t *ws = xcalloc(words ? words : 1, sizeof *ws);
    for (size_t i = 0; i < words; i++) ws[i] = i * 2654435761u;
    return ws;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* The token, in and out (4 bytes; CTX_STOP ends a child). */
static int tok_write(int fd, int v) { return write(fd, &v, sizeof v) == (ssize_t)sizeof v; }
static int tok_read(int fd, int *v) { return read(fd, v, sizeof *v) == (ssize_t)sizeof *v; }

/* A child of the ring: process k reads from ring[k], sums, writes to ring[k+1]; it forwards
 * the stop token and ends, and ends on end-of-file (a process before it has gone). */
__attribute__((noreturn)) static void ctx_child(struct ctx_run *r, int k, pid_t parent) {
    plat_die_with_parent(SIGKILL);
    if (getppid() != parent) _exit(EXIT_FAIL);
    int in = r->ring[k][0], out = r->ring[(k + 1) % r->procs][1];
    for (int j = 0; j < r->procs; j++) {
        if (r->ring[j][0] != in) close_fd(&r->ring[j][0]);
        if (r->ring[j][1] != out) close_fd(&r->ring[j][1]);
    }
    close_fd(&r->self[0]);
    close_fd(&r->self[1]);
    free(r->ws);
    uint64_t *ws = ws_new(r->words);
    touch_stack();
    volatile uint64_t sink = 0;
    for (;;) {
        int v;
        if (!tok_read(in, &v)) _exit(EXIT_FAIL);
        if (v != CTX_STOP) sink += ws_sum(ws, r->words);
        if (!tok_write(out, v)) _exit(EXIT_FAIL);
        if (v == CTX_STOP) _exit(EXIT_OK);
    }
}

/* Everything the run holds, given back on every path (the clean-up list's entry): the pipes,
 * the children killed and reaped. */
static void ctx_teardown(void *arg) {
    struct ctx_run *r = arg;
    for (int k = 0; k < r->procs; k++) {
        close_fd(&r->ring[k][0]);
        close_fd(&r->ring[k][1]);
    }
    close_fd(&r->self[0]);
    close_fd(&r->self[1]);
}

/* One trip of the token, timed: the first process sums, writes to the next and waits for the
 * token to come back. */
static inline int64_t ctx_trip(struct ctx_run *r, uint64_t *start) {
    int v = 1;
    uint64_t a = clk_start();
    inject_delay(); /* --inject-ns: once per trip, so the lab's switch rises by it / procs */
    r->sink += ws_sum(r->ws, r->words);
    int ok = tok_write(r->ring[1][1], v) && tok_read(r->ring[0][0], &v);
    uint64_t b = clk_end();
    if (!ok) die(EXIT_FAIL, "a process of the ring ended: the token did not come back");
    *start = a;
    return (int64_t)(b - a);
}

/* The same work without a switch, timed. */
static inline int64_t ctx_pass(struct ctx_run *r) {
    int v = 1, ok = 1;
    uint64_t a = clk_start();
    for (int k = 0; k < r->procs; k++) {
        r->sink += ws_sum(r->ws, r->words);
        ok &= tok_write(r->self[1], v) && tok_read(r->self[0], &v);
    }
    uint64_t b = clk_end();
    if (!ok) die(EXIT_FAIL, "the pipe of the token's pass failed: %s", strerror(errno));
    return (int64_t)(b - a);
}

static void ctx_meta(struct ctx_run *r) {
    struct jbuf *j = &r->ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_int(j, "procs", r->procs);
    jb_int(j, "size_bytes", (long long)(r->words * sizeof(uint64_t)));
    jb_int(j, "cpu", r->cpu);
    jb_str(j, "timed_region",
           "pass, then ring, in the first process: pass is procs times (sum the working set, "
           "write 4 bytes into its own pipe, read them back); ring is one trip of the token: "
           "it sums, writes to the next process and reads the token back from the last, every "
           "other process having read it, summed its own working set and written it on");
    jb_str(j, "method", "lmbench lat_ctx: switch = (ring - pass) / procs");
    jb_str(j, "responder", "procs - 1 forked processes (fork, no exec), each with a working "
                           "set of its own");
    jb_str(j, "context_switches", "ring: procs (one per hand-over), pass: 0");
    jb_end_obj(j);
}

static void ctx_run(struct runctx *ctx) {
    struct ctx_run *r = xcalloc(1, sizeof *r);
    r->ctx = ctx;
    r->procs = (int)param(ctx, "procs")->i;
    r->cpu = (int)param(ctx, "cpu")->i;
    r->words = (size_t)param(ctx, "size")->i / sizeof(uint64_t);
    for (int k = 0; k < CTX_MAX_PROCS; k++) r->ring[k][0] = r->ring[k][1] = -1;
    r->self[0] = r->self[1] = -1;
    int td = cleanup_push(ctx_teardown, r);
    pin_or_die(r->cpu);
    ctx->cpu = r->cpu;
    for (int k = 0; k < r->procs; k++)
        if (pipe(r->ring[k]) != 0) die(EXIT_FAIL, "cannot create a pipe: %s", strerror(errno));
    if (pipe(r->self) != 0) die(EXIT_FAIL, "cannot create a pipe: %s", strerror(errno));
    pid_t parent = getpid();
    for (int k = 1; k < r->procs; k++) {
        pid_t c = fork();
        if (c < 0) die(EXIT_FAIL, "fork failed: %s", strerror(errno));
        if (c == 0) ctx_child(r, k, parent);
        r->pid[k] = c;
        r->kill[k] = cleanup_kill(c);
        r->watch[k] = k <= SV_MAX_PEERS / 2 ? supervisor_watch_peer(c, ctx->peer_timeout) : -1;
    }
    /* the first process keeps what it uses: its read end, the next one's write end */
    for (int k = 0; k < r->procs; k++) {
        if (k != 0) close_fd(&r->ring[k][0]);
        if (k != 1 % r->procs) close_fd(&r->ring[k][1]);
    }
    /* after the forks: a page the children share copy-on-write would fault on the first
     * process's first write to it, inside a timed region */
    struct column *ring = add_column(ctx, "ring", ctx_columns[0].desc, "ring", r->procs);
    struct column *pass = add_column(ctx, "pass", ctx_columns[1].desc, "pass", 0);
    pass->inject_free = 1; /* an injected wait is the ring's: the switch holds it / procs */
    add_t_start(ctx);
    touch_pages(r, sizeof *r);
    touch_pages(ctx, sizeof *ctx);
    r->ws = ws_new(r->words);
    /* a hand-over on one CPU: the woken process preempts the one that wrote to it */
    ctx->preempt_expected = 1;
    touch_stack();
    uint64_t a;
    for (long long i = 0; i < ctx->warmup; i++) {
        stop_if_asked();
        r->sink += (uint64_t)ctx_pass(r) + (uint64_t)ctx_trip(r, &a);
        progress_set(ctx, (uint64_t)i + 1);
    }
    trace_mark(1);
    struct thread_usage u0;
    plat_thread_usage(&u0);
    uint64_t t0 = 0;
    for (long long i = 0; i < ctx->n; i++) {
        stop_if_asked();
        pass->data[i] = ctx_pass(r);
        ring->data[i] = ctx_trip(r, &a);
        if (i == 0) t0 = a;
        ctx->t_start[i] = (int64_t)(a - t0);
        progress_set(ctx, (uint64_t)(ctx->warmup + i + 1));
    }
    timed_loop_end(ctx, t0, 1, "main", &u0);
    trace_mark(0);
    /* the stop token goes round, every child forwards it and ends; then they are reaped */
    int v = CTX_STOP;
    if (!tok_write(r->ring[1][1], v) || !tok_read(r->ring[0][0], &v))
        die(EXIT_FAIL, "a process of the ring ended before the end of the run");
    for (int k = 1; k < r->procs; k++) {
        int st = 0;
        if (r->watch[k] < 0 || !supervisor_unwatch_peer(r->watch[k], &st))
            while (waitpid(r->pid[k], &st, 0) < 0 && errno == EINTR) {
            }
        cleanup_cancel(r->kill[k]);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            die(EXIT_FAIL, "process %d of the ring failed", k);
    }
    ctx_meta(r);
    cleanup_now(td);
    free(r->ws);
    free(r);
}

static int ctx_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen) {
    return cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
}

static const struct scenario ctx_scenarios[] = {
    {"ctx", NULL, 0, 0, 0, "a context switch between two processes on one CPU"},
};

const struct bench bench_ctx = {
    .name = "ctx",
    .summary = "a context switch (lmbench lat_ctx): a token around a ring of processes on one "
               "CPU, the cost of passing it without a switch subtracted",
    .params = ctx_params,
    .nparams = COUNT(ctx_params),
    .columns = ctx_columns,
    .ncolumns = COUNT(ctx_columns),
    .derived = ctx_derived,
    .nderived = COUNT(ctx_derived),
    .check = ctx_check,
    .run = ctx_run,
    .arm_refusal = "ctx runs a ring of processes of its own, which cannot be an arm",
    .default_n = 5000,
    .kind = "ctx",
    .scenarios = ctx_scenarios,
    .nscenarios = COUNT(ctx_scenarios),
    .display = {.roles = {"main"},
                .lines = {"ctx: a ring of {bench.procs} processes on CPU {bench.cpu}, "
                          "{bench.size_bytes} bytes of working set each"}},
};
