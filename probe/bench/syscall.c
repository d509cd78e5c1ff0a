/* latscope-probe: the cost of a (nearly) null system call, timed per call and in batches. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/bench.h"

static const char *const op_choices[] = {"getppid", "read0", NULL};

static const struct pdef syscall_params[] = {
    {"op", P_ENUM, "getppid", NULL,
     "getppid: the raw getppid system call (nothing cached by libc); read0: read() of 0 bytes "
     "from an open file",
     op_choices, 0, 0, NULL},
    {"batch", P_INT, "1000", "calls",
     "calls timed together for the batch figure (per call = batch time / calls)", NULL, 1,
     10000000, NULL},
    {"batches", P_INT, "100", "batches", "number of batches for the batch figure", NULL, 1,
     100000, NULL},
    {"cpu", P_CPU, "none", "cpu", "pin the measuring thread to this CPU (none: unpinned)", NULL,
     0, 0, NULL},
};

static const struct coldef syscall_columns[] = {
    {"call", "one system call, from the clock read before it to the clock read after it",
     "call", NULL},
};

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline long do_op(int op, int fd, char *buf) {
    if (op == 0) return syscall(SYS_getppid);
    return read(fd, buf, 0);
}

static int syscall_check(const struct bench *b, const struct pval *pv, char *err,
                         size_t errlen) {
    return cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
}

static void run_syscall(struct runctx *ctx) {
    int op = !strcmp(param(ctx, "op")->s, "read0");
    long long batch = param(ctx, "batch")->i, batches = param(ctx, "batches")->i;
    int cpu = (int)param(ctx, "cpu")->i;
    pin_or_die(cpu);
    char buf[1];
    int fd = -1;
    if (op == 1) {
        char tmpl[] = "/tmp/latscope-read0-XXXXXX";
        fd = mkstemp(tmpl);
        if (fd < 0) die(EXIT_UNSUPPORTED, "cannot create a file in /tmp: %s", strerror(errno));
        unlink(tmpl); /* nothing to clean up, whatever happens */
    }
    struct column *c = add_column(ctx, "call", syscall_columns[0].desc, "call", 0);
    ctx->t_start = alloc_samples((size_t)ctx->n);
    double *bv = xcalloc((size_t)batches, sizeof(double));

    uint64_t total = (uint64_t)(ctx->n + ctx->warmup), warm = (uint64_t)ctx->warmup, t0 = 0;
    touch_stack();
    struct thread_usage u0 = {0}, u1;
    for (uint64_t i = 0; i < total; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        if (i == warm) plat_thread_usage(&u0);
        uint64_t a = clk_start();
        inject_delay();
        long r = do_op(op, fd, buf);
        uint64_t b = clk_end();
        if (r < 0 || (op == 1 && r != 0))
            die(EXIT_FAIL, "the timed system call failed: %s", strerror(errno));
        if (i >= warm) {
            if (i == warm) t0 = a;
            c->data[i - warm] = (int64_t)(b - a);
            ctx->t_start[i - warm] = (int64_t)(a - t0);
        }
        progress_set(ctx, i + 1);
    }
    plat_thread_usage(&u1);
    ctx->t0 = t0;
    ctx->nroles = 1;
    ctx->roles[0].role = "main";
    thread_usage_delta(&ctx->roles[0].u, &u0, &u1);
    /* The batch figure: K calls back to back, one pair of clock reads. */
    for (long long k = 0; k < batches; k++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        long bad = 0;
        uint64_t a = clk_start();
        for (long long m = 0; m < batch; m++) bad |= do_op(op, fd, buf) < 0;
        uint64_t b = clk_end();
        if (bad) die(EXIT_FAIL, "a system call in a batch failed");
        bv[k] = ((double)(b - a) * ctx->clk.ns_per_tick - ctx->clk.overhead_ns) / (double)batch;
    }
    if (fd >= 0) close(fd);
    double *sorted = xcalloc((size_t)batches, sizeof(double));
    memcpy(sorted, bv, (size_t)batches * sizeof(double));
    qsort(sorted, (size_t)batches, sizeof(double), cmp_d);

    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "op", op ? "read0" : "getppid");
    jb_str(j, "timed_region", op ? "read(fd, buf, 0) on an open, unlinked file in /tmp"
                                 : "syscall(SYS_getppid)");
    jb_int(j, "cpu", cpu);
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
}

static const struct scenario syscall_scenarios[] = {
    {"syscall", "op=getppid", 20000, 0, 1, "a nearly null system call"},
    {"syscall-read0", "op=read0", 20000, 0, 1, "read() of 0 bytes from an open file"},
};

const struct bench bench_syscall = {
    .name = "syscall",
    .summary = "a nearly null system call (getppid, or read of 0 bytes), per call and batched",
    .params = syscall_params,
    .nparams = COUNT(syscall_params),
    .columns = syscall_columns,
    .ncolumns = COUNT(syscall_columns),
    .check = syscall_check,
    .run = run_syscall,
    .default_n = 100000,
    .kind = "syscall",
    .scenarios = syscall_scenarios,
    .nscenarios = COUNT(syscall_scenarios),
    .display = {.roles = {"main"},
                .check_label = "batch figure",
                .check_value = "bench.batch.per_call_median_ns",
                .check_column = "call",
                .check_minus = "clock.overhead_ns",
                .check_detail = "{bench.batch.calls_per_batch} calls × {bench.batch.batches} "
                                "batches, median"},
};
