/* latscope-probe: the syscall benchmark as Linux (bench/syscall.c) and Windows (win/syscall.c)
 * both run it; they differ only in the calls they time (op=) and how those are set up.  Here,
 * once: the parameters after op, the column, the check, the phases of a run (begin with the
 * warm-up, the blocks of timed calls, end with the batch figure and the header's "bench"
 * object).
 *
 * Included by exactly one file of a build (the statics below are that file's), after it
 * defines the calls, so that the timed loop inlines them as it would its own code:
 *     struct nullcall_state;                              what the calls need (a handle, ...)
 *     static inline long do_op(int op, struct nullcall_state *st);    one call, its result
 *     static inline int op_ok(int op, long r);            whether that result is a success
 *     __attribute__((noreturn)) static void op_failed(long r);        says why, exits 1
 * and, anywhere in the file, the set-up of the calls from the parameters and their undoing:
 *     static void nullcall_open(struct nullcall_run *r);  r->op, r->st, r->opname, r->timed
 *     static void nullcall_close(struct nullcall_run *r); */
#ifndef LATSCOPE_NULLCALL_H
#define LATSCOPE_NULLCALL_H

#include <stdlib.h>
#include <string.h>

#include "core/bench.h"

/* The parameters after op. */
#define NULLCALL_PARAMS                                                                      \
    {"batch", P_INT, "1000", "calls",                                                        \
     "calls timed together for the batch figure (per call = batch time / calls)", NULL, 1,   \
     10000000, NULL},                                                                        \
    {"batches", P_INT, "100", "batches", "number of batches for the batch figure", NULL, 1,  \
     100000, NULL},                                                                          \
    {"cpu", P_CPU, "none", "cpu", "pin the measuring thread to this CPU (none: unpinned)",   \
     NULL, 0, 0, NULL}

static const struct coldef syscall_columns[] = {
    {"call", "one system call, from the clock read before it to the clock read after it",
     "call", NULL},
};

static int syscall_check(const struct bench *b, const struct pval *pv, char *err,
                         size_t errlen) {
    return cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
}

static int nullcall_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A run: the calls ready (the thread pinned, st set up), the column. */
struct nullcall_run {
    struct runctx *ctx;
    int op, cpu;
    struct nullcall_state st;
    const char *opname, *timed;
    struct column *c;
    int64_t sink; /* where warm-up and discarded calls go */
};
static void nullcall_open(struct nullcall_run *r);
static void nullcall_close(struct nullcall_run *r);

/* One call as timed: the start read, the injected delay (if any), the call, the end read; a
 * failed call ends the run.  Returns the ticks; *start is the start read. */
static inline int64_t nullcall_timed(int op, struct nullcall_state *st, uint64_t *start) {
    uint64_t a = clk_start();
    inject_delay();
    long r = do_op(op, st);
    uint64_t b = clk_end();
    if (!op_ok(op, r)) op_failed(r);
    *start = a;
    return (int64_t)(b - a);
}

/* begin: pinned, the calls set up, the column, the warm-up (a loop of its own). */
static void *nullcall_begin(struct runctx *ctx) {
    struct nullcall_run *r = xcalloc(1, sizeof *r);
    r->ctx = ctx;
    r->cpu = (int)param(ctx, "cpu")->i;
    pin_or_die(r->cpu);
    ctx->cpu = r->cpu;
    nullcall_open(r);
    r->c = add_column(ctx, "call", syscall_columns[0].desc, "call", 0);
    add_t_start(ctx);
    touch_stack();
    uint64_t warm = (uint64_t)ctx->warmup, a;
    for (uint64_t i = 0; i < warm; i++) {
        stop_if_asked();
        r->sink = nullcall_timed(r->op, &r->st, &a);
        progress_set(ctx, i + 1);
    }
    return r;
}

/* A block: `discard` calls timed and dropped, then the recorded calls (every call timed
 * alone: the "call" column). */
static void nullcall_block(void *state, uint64_t from, uint64_t count, uint64_t discard) {
    struct nullcall_run *r = state;
    struct runctx *ctx = r->ctx;
    uint64_t done = ctx->progress, a;
    for (uint64_t i = 0; i < discard; i++) {
        stop_if_asked();
        r->sink = nullcall_timed(r->op, &r->st, &a);
        progress_set(ctx, done + i + 1);
    }
    if (!count) return;
    done += discard;
    int64_t *c = r->c->data + from, *ts = ctx->t_start + from;
    struct thread_usage u0;
    plat_thread_usage(&u0);
    uint64_t t0 = ctx->t0;
    int need_t0 = !ctx->t0_set;
    for (uint64_t i = 0; i < count; i++) {
        stop_if_asked();
        c[i] = nullcall_timed(r->op, &r->st, &a);
        if (need_t0) {
            t0 = a;
            need_t0 = 0;
        }
        ts[i] = (int64_t)(a - t0);
        progress_set(ctx, done + i + 1);
    }
    timed_loop_end(ctx, t0, 1, "main", &u0);
}

/* end: the batch figure (batch calls between two clock reads, no clock read between calls:
 * the clock-free cost to check the per-call samples against), then the header's "bench"
 * object, naming the op and the timed_region. */
static void nullcall_end(void *state) {
    struct nullcall_run *r = state;
    struct runctx *ctx = r->ctx;
    long long batch = param(ctx, "batch")->i, batches = param(ctx, "batches")->i;
    double *bv = xcalloc((size_t)batches, sizeof(double));
    for (long long k = 0; k < batches; k++) {
        stop_if_asked();
        int bad = 0;
        uint64_t a = clk_start();
        for (long long m = 0; m < batch; m++) bad |= !op_ok(r->op, do_op(r->op, &r->st));
        uint64_t b = clk_end();
        if (bad) die(EXIT_FAIL, "a system call in a batch failed");
        bv[k] = ((double)(b - a) * ctx->clk.ns_per_tick - ctx->clk.overhead_ns) / (double)batch;
    }
    double *sorted = xcalloc((size_t)batches, sizeof(double));
    memcpy(sorted, bv, (size_t)batches * sizeof(double));
    qsort(sorted, (size_t)batches, sizeof(double), nullcall_cmp);

    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "op", r->opname);
    jb_str(j, "timed_region", r->timed);
    jb_int(j, "cpu", r->cpu);
    jb_obj(j, "batch");
    jb_int(j, "calls_per_batch", batch);
    jb_int(j, "batches", batches);
    jb_num(j, "per_call_median_ns", sorted[batches / 2]);
    jb_num(j, "per_call_min_ns", sorted[0]);
    jb_num(j, "per_call_max_ns", sorted[batches - 1]);
    jb_str(j, "note", "per call = (batch time - clock overhead) / calls; no clock read "
                      "between calls, so it is the clock-free cost to check the per-call "
                      "samples against");
    jb_arr(j, "per_call_ns");
    for (long long k = 0; k < batches; k++) jb_num(j, NULL, bv[k]);
    jb_end_arr(j);
    jb_end_obj(j);
    jb_end_obj(j);
    free(bv);
    free(sorted);
    nullcall_close(r);
    free(r);
}

/* The bench struct's fields after .summary and .params: the same on every platform. */
#define NULLCALL_BENCH_FIELDS                                                                \
    .columns = syscall_columns, .ncolumns = COUNT(syscall_columns), .check = syscall_check,  \
    .run = bench_run_phases, .begin = nullcall_begin, .block = nullcall_block,               \
    .end = nullcall_end, .default_n = 100000, .kind = "syscall",                             \
    .scenarios = syscall_scenarios, .nscenarios = COUNT(syscall_scenarios),                  \
    .display = {.roles = {"main"},                                                           \
                .check_label = "batch figure",                                               \
                .check_value = "bench.batch.per_call_median_ns",                             \
                .check_column = "call",                                                      \
                .check_minus = "clock.overhead_ns",                                          \
                .check_detail = "{bench.batch.calls_per_batch} calls × {bench.batch.batches} " \
                                "batches, median"}

#endif
