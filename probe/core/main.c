/* latscope-probe: command line, catalogue (--list) and the run sequence.
 * The command line is a versioned contract with the lab: docs/probe-cli.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/bench.h"
#include "pingpong/pingpong.h"

#define MAX_N 100000000LL
#define MAX_WARMUP 10000000LL
#define MAX_WORKERS 1000LL
#define AUTO_WORKERS 10LL
#define AUTO_MIN_PER_WORKER 200LL
#define MAX_INJECT_NS 10000000LL /* 10 ms */

extern const char *param_type_name(enum ptype t);
extern void iso_utc_now(char *buf, size_t len);


static const struct bench *find_bench(const char *name) {
    for (int i = 0; all_benches[i]; i++)
        if (!strcmp(all_benches[i]->name, name)) return all_benches[i];
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: latscope-probe BENCH [-p key=value ...] [-n N] [--warmup W] [--clock C]\n"
            "                      [--workers W] [--inject-ns N] -o FILE\n"
            "       latscope-probe --list | --clocks | --version | --help\n"
            "\n"
            "Runs one benchmark with one set of parameters and writes every sample to FILE\n"
            "(format: docs/sample-format.md).  No statistics: that is the lab's job (latscope).\n"
            "\n"
            "options:\n"
            "  -p key=value      a benchmark parameter (see --list); repeatable\n"
            "  -n N              recorded iterations (default: per benchmark, see --list)\n"
            "  --warmup W        iterations run first and discarded, per worker (default:\n"
            "                    n/10 in 10..1000, shared between the workers, at least 10 each)\n"
            "  --clock C         tsc | mono_raw | mono | auto (default auto: tsc where invariant)\n"
            "  -o FILE           the sample file to write (must not exist)\n"
            "  --progress-fd FD  write 'progress DONE TOTAL' lines there, at most 4 a second\n"
            "  --peer-timeout S  a peer silent this long ends the run (default 2 s)\n"
            "  --workers W|auto  split the n iterations over W worker processes, run one after\n"
            "                    another, each with its own set-up and warm-up (default 1);\n"
            "                    auto: up to 10, with at least 200 iterations each\n"
            "  --inject-ns N     validation aid: busy-wait N ns on the clock inside every timed\n"
            "                    region (default 0), so a known difference can be injected\n"
            "\n"
            "exit codes: 0 ok, 1 measurement failed, 2 bad input, 3 unsupported or not\n"
            "permitted here, 130 interrupted.  Errors are one line on stderr.\n"
            "\n"
            "examples:\n"
            "  latscope-probe --list\n"
            "  latscope-probe syscall -p op=getppid -n 100000 -o getppid.lss\n"
            "  latscope-probe file -p cache=fadvise -p dir=/var/tmp -o file.lss\n"
            "  latscope-probe pipe -p cpus=0,1 -p mode=threads -o pipe.lss\n");
}

static void print_catalogue(void) {
    struct jbuf j;
    jb_init(&j);
    jb_obj(&j, NULL);
    jb_int(&j, "catalogue_version", CATALOGUE_VERSION);
    jb_int(&j, "sample_format_version", SAMPLE_FORMAT_VERSION);
    jb_str(&j, "probe_version", PROBE_VERSION);
    jb_obj(&j, "features");
    jb_bool(&j, "tsc", HAVE_TSC && tsc_invariant());
#ifdef HAVE_ZMQ
    jb_bool(&j, "zmq", 1);
#else
    jb_bool(&j, "zmq", 0);
#endif
    jb_end_obj(&j);
    /* --workers auto: what a run without an explicit worker count gets */
    jb_obj(&j, "workers_auto");
    jb_int(&j, "max", AUTO_WORKERS);
    jb_int(&j, "min_per_worker", AUTO_MIN_PER_WORKER);
    jb_end_obj(&j);
    enum clock_kind def;
    clock_parse("auto", &def);
    jb_arr(&j, "clocks");
    const char *descr[] = {"time-stamp counter (rdtsc/rdtscp with lfence), calibrated against "
                           "CLOCK_MONOTONIC_RAW; needs an invariant TSC",
                           "clock_gettime(CLOCK_MONOTONIC_RAW): not slewed by NTP",
                           "clock_gettime(CLOCK_MONOTONIC): slewed by NTP"};
    for (int k = 0; k < 3; k++) {
        jb_obj(&j, NULL);
        jb_str(&j, "name", clock_name((enum clock_kind)k));
        jb_bool(&j, "available", k != CLK_TSC || (HAVE_TSC && tsc_invariant()));
        jb_bool(&j, "default", (int)def == k);
        jb_str(&j, "description", descr[k]);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    jb_obj(&j, "exit_codes");
    jb_str(&j, "0", "ok");
    jb_str(&j, "1", "measurement failed");
    jb_str(&j, "2", "bad input");
    jb_str(&j, "3", "unsupported or not permitted here");
    jb_str(&j, "130", "interrupted");
    jb_end_obj(&j);
    jb_arr(&j, "benchmarks");
    for (int i = 0; all_benches[i]; i++) {
        const struct bench *b = all_benches[i];
        const char *why = NULL;
        int avail = b->available ? b->available(&why) : 1;
        jb_obj(&j, NULL);
        jb_str(&j, "name", b->name);
        jb_str(&j, "kind", b->kind);
        jb_str(&j, "summary", b->summary);
        jb_bool(&j, "available", avail);
        jb_str(&j, "unavailable_reason", avail ? NULL : why);
        jb_str(&j, "needs", b->needs);
        jb_int(&j, "default_n", b->default_n);
        jb_str(&j, "default_n_note", b->default_n_note);
        if (b->mech) {
            jb_obj(&j, "mechanism");
            jb_bool(&j, "threads", b->mech->threads_ok);
            jb_bool(&j, "processes", b->mech->processes_ok);
            jb_bool(&j, "blocking", b->mech->blocking);
            jb_bool(&j, "message_size", b->mech->has_size);
            if (b->mech->has_size)
                jb_int(&j, "max_message_bytes", (long long)b->mech->max_size);
            else
                jb_int(&j, "message_bytes", (long long)b->mech->payload);
            /* spinning: 0 on two CPUs, 1 on one (null: it depends on the placement) */
            if (b->mech->blocking)
                jb_int(&j, "context_switches_per_way",
                       b->mech->switches_per_way > 0 ? b->mech->switches_per_way : 1);
            else
                jb_null(&j, "context_switches_per_way");
            jb_str(&j, "timed_region", b->mech->timed);
            jb_end_obj(&j);
        }
        jb_arr(&j, "params");
        for (int k = 0; k < b->nparams; k++) {
            const struct pdef *d = &b->params[k];
            jb_obj(&j, NULL);
            jb_str(&j, "name", d->name);
            jb_str(&j, "type", param_type_name(d->type));
            jb_str(&j, "default", d->def);
            jb_str(&j, "unit", d->unit);
            jb_str(&j, "help", d->help);
            if (d->type == P_ENUM) {
                jb_arr(&j, "choices");
                for (const char *const *c = d->choices; *c; c++) jb_str(&j, NULL, *c);
                jb_end_arr(&j);
            }
            if (d->type == P_INT || d->type == P_SIZE) {
                jb_int(&j, "min", d->min);
                long long max = d->max;
                /* a message size: at most what this mechanism carries */
                if (b->mech && b->mech->has_size && !strcmp(d->name, "size") &&
                    (long long)b->mech->max_size < max)
                    max = (long long)b->mech->max_size;
                jb_int(&j, "max", max);
            }
            jb_str(&j, "needs_root_when", d->root_value);
            jb_end_obj(&j);
        }
        jb_end_arr(&j);
        jb_arr(&j, "columns");
        for (int k = 0; k < b->ncolumns; k++) {
            jb_obj(&j, NULL);
            jb_str(&j, "name", b->columns[k].name);
            jb_str(&j, "description", b->columns[k].desc);
            jb_str(&j, "latency", b->columns[k].latency);
            jb_str(&j, "when", b->columns[k].when);
            jb_end_obj(&j);
        }
        jb_end_arr(&j);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    jb_end_obj(&j);
    printf("%s\n", j.s);
    jb_free(&j);
}

static void print_clocks(void) {
    struct jbuf j;
    jb_init(&j);
    jb_arr(&j, NULL);
    for (int k = 0; k < 3; k++) {
        if (k == CLK_TSC && !(HAVE_TSC && tsc_invariant())) continue;
        struct clock_info ci;
        clock_setup((enum clock_kind)k, &ci);
        jb_obj(&j, NULL);
        jb_str(&j, "name", ci.name);
        jb_num(&j, "ns_per_tick", ci.ns_per_tick);
        jb_num(&j, "step_ns", ci.step_ns);
        jb_num(&j, "overhead_ns", ci.overhead_ns);
        jb_num(&j, "resolution_ns", ci.resolution_ns);
        jb_num(&j, "getres_ns", ci.getres_ns);
        if (k == CLK_TSC) jb_num(&j, "calibration_ppm", ci.calib_ppm);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    printf("%s\n", j.s);
    jb_free(&j);
}

static long long parse_count(const char *opt, const char *s, long long min, long long max) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s)
        die(EXIT_BADINPUT, "%s %s: not a whole number", opt, s);
    if (v < min || v > max)
        die(EXIT_BADINPUT, "%s %s: must be between %lld and %lld", opt, s, min, max);
    return v;
}

static void check_output(const char *out) {
    struct stat st;
    if (lstat(out, &st) == 0)
        die(EXIT_BADINPUT, "-o %s: the file exists; latscope-probe never overwrites results",
            out);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (slash == dir) dir[1] = 0;
    else if (slash) *slash = 0;
    else strcpy(dir, ".");
    if (stat(dir, &st) != 0)
        die(EXIT_BADINPUT, "-o %s: the directory %s: %s", out, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) die(EXIT_BADINPUT, "-o %s: %s is not a directory", out, dir);
    if (access(dir, W_OK) != 0)
        die(EXIT_BADINPUT, "-o %s: the directory %s is not writable", out, dir);
}

static long long available_memory_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* ---------------------------------------------------------------- workers (--workers W) */

static void worker_record(const struct runctx *ctx, struct worker_rec *w, long pid) {
    w->n = ctx->n;
    w->warmup = ctx->warmup;
    w->pid = pid;
    w->nroles = ctx->nroles;
    for (int r = 0; r < ctx->nroles && r < 2; r++) w->roles[r] = ctx->roles[r];
}

/* What a worker sends its parent after its run, then its columns and its "bench" JSON.  The
 * worker is a fork of this very program, so the column and role names (string literals) are
 * valid in the parent as they are. */
struct worker_msg {
    long long n;
    uint64_t t0;
    int ncols, nroles, faults_expected, preempt_expected;
    struct column cols[MAX_COLS];
    struct role_usage roles[2];
    size_t metalen;
};

/* In the worker: its run, as the probe would do it alone, then its results down the pipe. */
__attribute__((noreturn)) static void worker_main(struct runctx *ctx, int fd, long long n_w,
                                                  uint64_t done_before) {
    /* the parent's run context, with nothing of an earlier worker's run in it */
    ctx->n = n_w;
    ctx->progress = 0;
    ctx->ncols = 0;
    memset(ctx->cols, 0, sizeof ctx->cols);
    memset(&ctx->meta, 0, sizeof ctx->meta);
    ctx->t0 = 0;
    ctx->nroles = 0;
    ctx->faults_expected = ctx->preempt_expected = 0;
    struct supervisor sv = {.progress = &ctx->progress, .progress_base = done_before,
                            .total = ctx->total, .progress_fd = ctx->progress_fd,
                            .stall_timeout_s = 0, .peer = 0};
    supervisor_start(&sv);
    ctx->b->run(ctx);
    supervisor_stop();
    if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
    struct worker_msg m;
    memset(&m, 0, sizeof m);
    m.n = ctx->n;
    m.t0 = ctx->t0;
    m.ncols = ctx->ncols;
    m.nroles = ctx->nroles;
    m.faults_expected = ctx->faults_expected;
    m.preempt_expected = ctx->preempt_expected;
    memcpy(m.cols, ctx->cols, sizeof m.cols);
    memcpy(m.roles, ctx->roles, sizeof m.roles);
    m.metalen = ctx->meta.len;
    size_t bytes = (size_t)n_w * sizeof(int64_t);
    int bad = write_full(fd, &m, sizeof m) || write_full(fd, ctx->t_start, bytes);
    for (int c = 0; c < ctx->ncols && !bad; c++) bad = write_full(fd, ctx->cols[c].data, bytes);
    if (!bad && m.metalen) bad = write_full(fd, ctx->meta.s, m.metalen);
    if (bad) die(EXIT_FAIL, "worker: cannot hand its samples to the probe: %s", strerror(errno));
    close(fd);
    cleanup_run();
    _exit(EXIT_OK);
}

static pid_t g_worker = 0; /* the running worker, for the clean-up list */

/* Stop the running worker: SIGTERM, so that it cleans up after itself (its peers, IPC objects,
 * files), then, after 3 s, SIGKILL.  Returns its wait status. */
static int stop_worker(pid_t pid) {
    int st = 0;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return st;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}

static void worker_cleanup(void *arg) {
    (void)arg;
    if (g_worker > 0) stop_worker(g_worker);
    g_worker = 0;
}

/* The worker ended or failed: end the probe the way it did.  A worker that exited with an
 * error has printed its one line; one killed by a signal has not. */
__attribute__((noreturn)) static void worker_failed(int w, int nw, pid_t pid, int st) {
    g_worker = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        cleanup_run();
        exit(WEXITSTATUS(st));
    }
    if (WIFSIGNALED(st))
        die(EXIT_FAIL, "worker %d of %d (pid %d) was killed by signal %d; nothing was written",
            w + 1, nw, (int)pid, WTERMSIG(st));
    die(EXIT_FAIL, "worker %d of %d (pid %d) ended without handing over its samples; nothing "
        "was written", w + 1, nw, (int)pid);
}

/* Read exactly len bytes from the worker, watching for the user's signals meanwhile. */
static void from_worker(int fd, int sigfd, void *buf, size_t len, int w, int nw, pid_t pid) {
    char *p = buf;
    while (len) {
        struct pollfd pfd[2] = {{fd, POLLIN, 0}, {sigfd, POLLIN, 0}};
        int r = poll(pfd, 2, -1);
        if (r < 0) {
            if (errno == EINTR) continue;
            die(EXIT_FAIL, "poll failed: %s", strerror(errno));
        }
        if (pfd[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof si) > 0) g_stop = (int)si.ssi_signo;
            int st = stop_worker(pid);
            g_worker = 0;
            if (!(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_INTERRUPTED))
                die(EXIT_INTERRUPTED, "interrupted (signal %d); nothing was written", g_stop);
            cleanup_run();
            exit(EXIT_INTERRUPTED);
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = read(fd, p, len);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                int st = 0;
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
                }
                worker_failed(w, nw, pid, st);
            }
            p += got;
            len -= (size_t)got;
        }
    }
}

/* --workers W: fork W workers one after another from this process, with the clock set up and
 * calibrated here once; gather their samples into ctx (t_start counting on across workers). */
static void run_workers(struct runctx *ctx, int nw) {
    long long n = ctx->n;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    int sigfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sigfd < 0) die(EXIT_FAIL, "signalfd failed: %s", strerror(errno));
    cleanup_push(worker_cleanup, NULL);
    ctx->nworkers = nw;
    ctx->workers = xcalloc((size_t)nw, sizeof *ctx->workers);
    ctx->t_start = xcalloc((size_t)n, sizeof(int64_t));
    long long off = 0;
    uint64_t t0_first = 0;
    pid_t parent = getpid();
    for (int w = 0; w < nw; w++) {
        long long n_w = n / nw + (w < n % nw ? 1 : 0);
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) != 0) die(EXIT_FAIL, "pipe failed: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0) die(EXIT_FAIL, "fork failed: %s", strerror(errno));
        if (pid == 0) {
            close(pfd[0]);
            close(sigfd);
            /* the probe killed: the worker is told, and cleans up after itself */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent) _exit(EXIT_FAIL);
            free(ctx->workers);
            free(ctx->t_start);
            ctx->workers = NULL;
            ctx->t_start = NULL;
            worker_main(ctx, pfd[1], n_w, (uint64_t)(off + (long long)w * ctx->warmup));
        }
        g_worker = pid;
        close(pfd[1]);
        struct worker_msg m;
        from_worker(pfd[0], sigfd, &m, sizeof m, w, nw, pid);
        if (m.n != n_w || m.ncols < 0 || m.ncols > MAX_COLS || m.nroles < 0 || m.nroles > 2)
            die(EXIT_FAIL, "worker %d of %d handed over a malformed result", w + 1, nw);
        if (w == 0) {
            ctx->ncols = m.ncols;
            for (int c = 0; c < m.ncols; c++) {
                ctx->cols[c] = m.cols[c];
                ctx->cols[c].data = xcalloc((size_t)n, sizeof(int64_t));
            }
            t0_first = m.t0;
        } else if (m.ncols != ctx->ncols) {
            die(EXIT_FAIL, "worker %d of %d recorded %d columns, the first %d", w + 1, nw,
                m.ncols, ctx->ncols);
        }
        size_t bytes = (size_t)n_w * sizeof(int64_t);
        from_worker(pfd[0], sigfd, ctx->t_start + off, bytes, w, nw, pid);
        for (int c = 0; c < m.ncols; c++)
            from_worker(pfd[0], sigfd, ctx->cols[c].data + off, bytes, w, nw, pid);
        char *meta = xcalloc(m.metalen + 1, 1);
        if (m.metalen) from_worker(pfd[0], sigfd, meta, m.metalen, w, nw, pid);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        g_worker = 0;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) worker_failed(w, nw, pid, st);
        close(pfd[0]);
        /* t_start counts on from the first worker's first recorded iteration (one clock) */
        int64_t shift = (int64_t)(m.t0 - t0_first);
        for (long long k = 0; k < n_w; k++) ctx->t_start[off + k] += shift;
        if (w == 0) { /* the benchmark's own metadata: the first worker's */
            jb_init(&ctx->meta);
            jb_raw(&ctx->meta, "%s", meta);
        }
        free(meta);
        ctx->faults_expected |= m.faults_expected;
        ctx->preempt_expected |= m.preempt_expected;
        struct worker_rec *wr = &ctx->workers[w];
        wr->n = n_w;
        wr->warmup = ctx->warmup;
        wr->pid = (long)pid;
        wr->nroles = m.nroles;
        memcpy(wr->roles, m.roles, sizeof wr->roles);
        off += n_w;
    }
    close(sigfd);
}

/* An AddressSanitizer build writes shadow memory for every stack frame, and after a fork
 * those pages fault on their own: its fault counts say nothing about the probe's page
 * touching (they are still recorded in the header). */
#if defined(__SANITIZE_ADDRESS__)
#define FAULTS_OWN_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULTS_OWN_SANITIZER 1
#endif
#endif
#ifndef FAULTS_OWN_SANITIZER
#define FAULTS_OWN_SANITIZER 0
#endif

/* Page faults or preemption inside the timed loop: say so, and what to do. */
static void warn_timed_usage(const struct runctx *ctx) {
    const char *names[2] = {NULL, NULL};
    long per_role[2] = {0, 0}, faults = 0, preempt = 0, iters = 0;
    for (int w = 0; w < ctx->nworkers; w++) {
        const struct worker_rec *wr = &ctx->workers[w];
        iters += wr->n;
        for (int r = 0; r < wr->nroles && r < 2; r++) {
            const struct thread_usage *u = &wr->roles[r].u;
            names[r] = wr->roles[r].role;
            per_role[r] += u->minflt + u->majflt;
            faults += u->minflt + u->majflt;
            preempt += u->nivcsw;
        }
    }
    if (faults > 0 && !ctx->faults_expected && !FAULTS_OWN_SANITIZER) {
        char who[128] = "";
        for (int r = 0; r < 2; r++)
            if (names[r] && per_role[r])
                snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s: %ld",
                         *who ? ", " : "", names[r], per_role[r]);
        warnmsg("the timed loop took %ld page faults (%s), each inside a timed region, so "
                "those samples are slow; rerun, and if it stays, look for memory pressure "
                "(swap, a memory limit) on this machine", faults, who);
    }
    /* more than 1 preemption per 100 iterations (and over 50) where the benchmark needs none:
     * a busy machine, not the odd timer tick */
    long limit = iters / 100 > 50 ? iters / 100 : 50;
    if (!ctx->preempt_expected && preempt > limit)
        warnmsg("the measuring threads were preempted %ld times in %ld iterations (involuntary "
                "context switches): other work competes for their CPUs; pin them to idle CPUs "
                "(cpu= or cpus=) and stop other load", preempt, iters);
}

int main(int argc, char **argv) {
    signals_block_all();
    if (argc < 2) {
        usage(stderr);
        return EXIT_BADINPUT;
    }
    const char *a1 = argv[1];
    if (!strcmp(a1, "--help") || !strcmp(a1, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(a1, "--version")) {
        printf("latscope-probe %s (sample format %d, catalogue %d)\n", PROBE_VERSION,
               SAMPLE_FORMAT_VERSION, CATALOGUE_VERSION);
        return 0;
    }
    if (!strcmp(a1, "--list")) {
        print_catalogue();
        return 0;
    }
    if (!strcmp(a1, "--clocks")) {
        print_clocks();
        return 0;
    }
    if (a1[0] == '-') die(EXIT_BADINPUT, "unknown option %s; see latscope-probe --help", a1);
    const struct bench *b = find_bench(a1);
    if (!b) {
        char names[1024] = "";
        for (int i = 0; all_benches[i]; i++) {
            strncat(names, all_benches[i]->name, sizeof names - strlen(names) - 1);
            if (all_benches[i + 1]) strncat(names, ", ", sizeof names - strlen(names) - 1);
        }
        die(EXIT_BADINPUT, "unknown benchmark '%s' (known: %s)", a1, names);
    }
    char **sets = xcalloc((size_t)argc, sizeof(char *));
    int nsets = 0;
    long long n = -1, warmup = -1;
    const char *clock_s = "auto", *out = NULL;
    int progress_fd = -1;
    double peer_timeout = 2.0;
    long long workers = 1, inject_ns = 0;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-p") || !strcmp(o, "-n") || !strcmp(o, "--warmup") ||
            !strcmp(o, "--clock") || !strcmp(o, "-o") || !strcmp(o, "--progress-fd") ||
            !strcmp(o, "--peer-timeout") || !strcmp(o, "--workers") ||
            !strcmp(o, "--inject-ns")) {
            if (!v) die(EXIT_BADINPUT, "option %s needs a value", o);
            i++;
        } else {
            die(EXIT_BADINPUT, "unknown option %s; see latscope-probe --help", o);
        }
        if (!strcmp(o, "-p")) sets[nsets++] = (char *)v;
        else if (!strcmp(o, "-n")) n = parse_count("-n", v, 1, MAX_N);
        else if (!strcmp(o, "--warmup")) warmup = parse_count("--warmup", v, 0, MAX_WARMUP);
        else if (!strcmp(o, "--clock")) clock_s = v;
        else if (!strcmp(o, "--workers"))
            workers = !strcmp(v, "auto") ? -1 : parse_count("--workers", v, 1, MAX_WORKERS);
        else if (!strcmp(o, "--inject-ns"))
            inject_ns = parse_count("--inject-ns", v, 0, MAX_INJECT_NS);
        else if (!strcmp(o, "-o")) out = v;
        else if (!strcmp(o, "--progress-fd"))
            progress_fd = (int)parse_count("--progress-fd", v, 0, 65535);
        else if (!strcmp(o, "--peer-timeout")) {
            char *end;
            peer_timeout = strtod(v, &end);
            if (*end || peer_timeout < 0.1 || peer_timeout > 3600)
                die(EXIT_BADINPUT, "--peer-timeout %s: give seconds between 0.1 and 3600", v);
        }
    }
    if (b->available) {
        const char *why = NULL;
        if (!b->available(&why)) die(EXIT_UNSUPPORTED, "%s", why);
    }
    struct pval *pv = params_parse(b, nsets, sets);
    if (!out) die(EXIT_BADINPUT, "no output file: give -o FILE");
    check_output(out);
    if (progress_fd >= 0 && fcntl(progress_fd, F_GETFD) < 0)
        die(EXIT_BADINPUT, "--progress-fd %d is not an open file descriptor", progress_fd);
    enum clock_kind ck;
    if (clock_parse(clock_s, &ck))
        die(EXIT_BADINPUT, "--clock %s: choose tsc, mono_raw, mono or auto", clock_s);
    if (n < 0) n = b->default_n_for ? b->default_n_for(b, pv) : b->default_n;
    /* auto: as many workers as give each at least AUTO_MIN_PER_WORKER iterations, at most
     * AUTO_WORKERS (the lab's default: between-run variation in every run) */
    if (workers < 0) {
        workers = n / AUTO_MIN_PER_WORKER;
        if (workers > AUTO_WORKERS) workers = AUTO_WORKERS;
        if (workers < 1) workers = 1;
    }
    /* the single-process warm-up, shared between the workers so that a run in W processes
     * costs about what one did; each worker still warms its own caches and predictors */
    if (warmup < 0) {
        long long total = n / 10 < 10 ? 10 : (n / 10 > 1000 ? 1000 : n / 10);
        warmup = total / workers < 10 ? 10 : total / workers;
    }
    if (workers > n)
        die(EXIT_BADINPUT, "--workers %lld: more workers than the %lld recorded iterations (-n); "
            "use at most %lld", workers, n, n);
    long long need = n * (MAX_COLS + 2) * 8;
    long long avail = available_memory_bytes();
    if (avail > 0 && need > avail / 2)
        die(EXIT_BADINPUT, "-n %lld needs up to %lld MiB for samples, more than half of the "
            "%lld MiB available; use a smaller -n", n, need >> 20, avail >> 20);

    struct runctx *ctx = xcalloc(1, sizeof *ctx);
    ctx->b = b;
    ctx->pv = pv;
    ctx->n = n;
    ctx->warmup = warmup;
    ctx->total = (uint64_t)(n + warmup * workers);
    ctx->peer_timeout = peer_timeout;
    ctx->progress_fd = progress_fd;
    ctx->inject_ns = (double)inject_ns;
    clock_setup(ck, &ctx->clk);
    inject_calibrate(&ctx->clk, (double)inject_ns);

    char started[64];
    iso_utc_now(started, sizeof started);
    if (workers == 1) {
        struct supervisor sv = {.progress = &ctx->progress, .total = ctx->total,
                                .progress_fd = progress_fd, .stall_timeout_s = 0, .peer = 0};
        supervisor_start(&sv);
        b->run(ctx);
        supervisor_stop();
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        ctx->nworkers = 1;
        ctx->workers = xcalloc(1, sizeof *ctx->workers);
        worker_record(ctx, &ctx->workers[0], (long)getpid());
    } else {
        run_workers(ctx, (int)workers);
    }
    warn_timed_usage(ctx);
    sfile_write(ctx, out, argc, argv, started);
    cleanup_run();
    /* free everything, so a leak checker sees a clean run */
    for (int c = 0; c < ctx->ncols; c++) free(ctx->cols[c].data);
    free(ctx->t_start);
    free(ctx->workers);
    jb_free(&ctx->meta);
    free(ctx);
    free(pv);
    free(sets);
    return EXIT_OK;
}
