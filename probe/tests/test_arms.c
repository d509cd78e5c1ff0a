/* Unit tests of arms (core/arms.c): an --arm word parsed, the refusals (an arm that cannot be
 * one, arms that record different columns), the columns a file run records, a busy-wait kept
 * and made active again, and one worker's interleaved rounds run in this process (syscall arms,
 * and ping-pong arms with a responder thread): every round holds every arm once, the rows are
 * in time order with their arm, block and round, each block holds its arm's calibrated count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"
#include "tests/check.h"

static void test_parse(void) {
    char err[1024];
    struct arm_spec a;
    CHECK(arm_parse("  pipe\tcpus=0,0   size=64 inject_ns=130 ", &a, err, sizeof err) == 0);
    CHECK(a.b == find_bench("pipe"));
    CHECK(a.inject_ns == 130);
    CHECK(param_of(a.b, a.pv, "size")->i == 64 && param_of(a.b, a.pv, "size")->given);
    CHECK(param_of(a.b, a.pv, "cpus")->cpu[0] == 0 && param_of(a.b, a.pv, "cpus")->cpu[1] == 0);
    CHECK(!param_of(a.b, a.pv, "mode")->given);
    CHECK(arm_parse("syscall", &a, err, sizeof err) == 0 && a.inject_ns == 0);
    CHECK(arm_parse("", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "give a benchmark") != NULL);
    CHECK(arm_parse("   ", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(arm_parse("nosuch x=1", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "unknown benchmark 'nosuch'") != NULL);
    CHECK(arm_parse("syscall inject_ns=abc", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "inject_ns=abc") != NULL && !strchr(err, '\n'));
    CHECK(arm_parse("syscall inject_ns=-5", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(arm_parse("syscall inject_ns=010", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(arm_parse("syscall inject_ns=10000001", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(arm_parse("syscall inject_ns=1 inject_ns=2", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "twice") != NULL);
    CHECK(arm_parse("syscall colour=red", &a, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "--arm 'syscall colour=red'") == err);
}

static int check_of(const char *w0, const char *w1, char *err, size_t len) {
    struct arms A;
    memset(&A, 0, sizeof A);
    A.narms = 2;
    if (arm_parse(w0, &A.arm[0], err, len) || arm_parse(w1, &A.arm[1], err, len)) return -1;
    return arms_check(&A, err, len);
}

static void test_check(void) {
    char err[1024];
    CHECK(check_of("pipe cpus=0,0", "eventfd cpus=0,0 mode=threads", err, sizeof err) == 0);
    CHECK(check_of("syscall", "syscall op=read0", err, sizeof err) == 0);
    CHECK(check_of("syscall", "pipe", err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "--arm 'syscall' and --arm 'pipe' record different columns") != NULL);
    CHECK(check_of("spin cpus=0,1", "pipe", err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "spin cannot be an arm") != NULL);
    CHECK(check_of("pipe", "yield", err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "yield cannot be an arm") != NULL);
    CHECK(check_of("pipe", "spin_pause cpus=0,1", err, sizeof err) == EXIT_BADINPUT);
    CHECK(check_of("tcp_remote host=127.0.0.1 port=9", "tcp", err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "tcp_remote cannot be an arm") != NULL);
    /* the same columns in another order (order=rw reads first) are the same columns */
    CHECK(check_of("file", "file order=rw open=existing", err, sizeof err) == 0);
    CHECK(check_of("file", "file fsync=true", err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "(open, write, read, close; open, write, fsync, read, close)") != NULL);
    /* each arm's own check: a CPU that is not there */
    CHECK(check_of("syscall", "syscall cpu=4000", err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "--arm 'syscall cpu=4000': CPU 4000") != NULL);
}

static void test_columns(void) {
    char err[512];
    const struct bench *f = find_bench("file");
    char *rw[] = {"order=rw", "open=existing", "fsync=true"};
    struct pval *pv = params_parse_err(f, 3, rw, err, sizeof err);
    int idx[MAX_COLS], n = bench_columns(f, pv, idx);
    CHECK(n == 5);
    const char *want[] = {"open", "read", "write", "fsync", "close"};
    for (int k = 0; k < n && k < 5; k++) CHECK(!strcmp(f->columns[idx[k]].name, want[k]));
    free(pv);
    const struct bench *p = find_bench("pipe");
    pv = params_parse_err(p, 0, NULL, err, sizeof err);
    n = bench_columns(p, pv, idx);
    CHECK(n == 2 && !strcmp(p->columns[idx[0]].name, "rtt"));
    free(pv);
}

static void test_inject(void) {
    struct clock_info ci;
    clock_setup(CLK_MONO_RAW, &ci);
    struct inject_setting off, on, back;
    inject_get(&off);
    CHECK(off.on == 0);
    inject_calibrate(&ci, 500);
    inject_get(&on);
    CHECK(on.on == 1 && (on.iters || on.ticks));
    inject_set(&off);
    CHECK(g_inject_on == 0);
    inject_set(&on);
    inject_get(&back);
    CHECK(back.on == on.on && back.iters == on.iters && back.ticks == on.ticks);
    inject_set(&off);
}

/* One worker's rounds, in this process, and what they recorded. */
static void run_arms(const char *w0, const char *w1, const char *w2, int nroles) {
    char err[1024];
    struct arms *A = xcalloc(1, sizeof *A);
    const char *words[3] = {w0, w1, w2};
    A->narms = w2 ? 3 : 2;
    for (int k = 0; k < A->narms; k++) CHECK(arm_parse(words[k], &A->arm[k], err, sizeof err) == 0);
    CHECK(arms_check(A, err, sizeof err) == 0);
    A->time_s = 0.2;
    A->block_ms = 2;
    A->seed = 7;
    A->w = xcalloc(1, sizeof *A->w);
    A->order = xcalloc(1, sizeof *A->order);
    struct runctx *ctx = xcalloc(1, sizeof *ctx);
    ctx->b = A->arm[0].b;
    ctx->pv = A->arm[0].pv;
    ctx->warmup = 20;
    ctx->total = 200;
    ctx->peer_timeout = 5;
    ctx->progress_fd = -1;
    ctx->arms = A;
    clock_setup(CLK_MONO_RAW, &ctx->clk);
    struct supervisor sv = {.progress = &ctx->progress, .total = ctx->total, .progress_fd = -1};
    supervisor_start(&sv);
    arms_worker_run(ctx, 0, 1);
    supervisor_stop();

    const struct arms_worker *aw = &A->w[0];
    int K = A->narms;
    CHECK(aw->rounds >= 1 && aw->rounds <= aw->max_rounds);
    CHECK(aw->blocks == aw->rounds * K);
    CHECK(ctx->ncols >= 4);
    CHECK(!strcmp(ctx->cols[ctx->ncols - 3].name, "arm"));
    CHECK(!strcmp(ctx->cols[ctx->ncols - 1].kind, "index"));
    const int64_t *arm = ctx->cols[ctx->ncols - 3].data, *blk = ctx->cols[ctx->ncols - 2].data,
                  *rnd = ctx->cols[ctx->ncols - 1].data;
    long long n = 0;
    for (int k = 0; k < K; k++) {
        const struct arm_part *p = &aw->arm[k];
        CHECK(p->block_iterations >= 1 && p->discard >= 2);
        CHECK(p->n == aw->rounds * p->block_iterations);
        CHECK(p->nroles == nroles);
        n += p->n;
    }
    CHECK(ctx->n == n);
    CHECK(ctx->t_start[0] == 0);
    /* rows in time order, block by block; each round every arm once, as the order says */
    long long row = 0, bad = 0;
    for (long long r = 0; r < aw->rounds; r++) {
        int seen[ARMS_MAX] = {0};
        for (int j = 0; j < K; j++) {
            int k = A->order[0][r * K + j];
            seen[k]++;
            long long b = r * K + j, len = aw->arm[k].block_iterations;
            for (long long i = row; i < row + len; i++) {
                bad += arm[i] != k || blk[i] != b || rnd[i] != r;
                if (i) bad += ctx->t_start[i] < ctx->t_start[i - 1];
                bad += ctx->cols[0].data[i] < 0; /* a duration */
            }
            row += len;
        }
        for (int k = 0; k < K; k++) CHECK(seen[k] == 1);
    }
    CHECK(row == ctx->n);
    CHECK(bad == 0);
    /* the timed calls took no page fault (an AddressSanitizer build's own shadow pages
     * aside: counts, not timings) */
#if !defined(__SANITIZE_ADDRESS__)
    for (int k = 0; k < K; k++) CHECK(aw->arm[k].roles[0].u.majflt == 0);
#endif
}

int main(void) {
    signals_block_all();
    test_parse();
    test_check();
    test_columns();
    test_inject();
    run_arms("syscall", "syscall op=read0", NULL, 1);
    run_arms("eventfd mode=threads", "pipe mode=threads size=64", "futex mode=threads", 2);
    return check_report();
}
