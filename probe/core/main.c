/* latscope-probe: the command line and the run sequence.
 * The command line is a versioned contract with the lab: docs/probe-cli.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bench.h"

#define MAX_N 100000000LL
#define MAX_WARMUP 10000000LL

static void usage(FILE *f) {
    fprintf(f,
            "usage: latscope-probe BENCH [-p key=value ...] [-n N] [--warmup W] [--clock C]\n"
            "                      [--workers W] [--inject-ns N] [--sched fifo:P|rr:P] [--mlock]\n"
            "                      -o FILE\n"
            "       latscope-probe BENCH --check [-p key=value ...] [-n N] [--workers W] ...\n"
            "       latscope-probe --arm 'BENCH key=value ...' --arm ... [--time S] [--block-ms M]\n"
            "                      [--seed N] [--max-samples N] [--workers W] [--warmup W]\n"
            "                      [--clock C] -o FILE\n"
            "       latscope-probe --env [DIR]\n"
            );
    for (int i = 0; all_subcommands[i]; i++)
        fprintf(f, "       latscope-probe %s\n", all_subcommands[i]->usage);
    fprintf(f,
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
            "  --clock C         " CLOCK_USAGE "\n"
            "  -o FILE           the sample file to write (must not exist)\n"
            "  --progress-fd FD  write 'progress DONE TOTAL' lines there, at most 4 a second\n"
            "  --peer-timeout S  a peer silent this long ends the run (default 2 s)\n"
            "  --workers W|auto  split the n iterations over W worker processes, run one after\n"
            "                    another, each with its own set-up and warm-up (default 1);\n"
            "                    auto: up to 10, with at least 200 iterations each\n"
            "  --inject-ns N     validation aid: busy-wait N ns on the clock inside every timed\n"
            "                    region (default 0), so a known difference can be injected\n"
            "  --sched fifo:P    run the measuring threads (and their peers) under SCHED_FIFO\n"
            "                    (rr:P: SCHED_RR) at priority P (1-99), as rt-tests do (Linux;\n"
            "                    root, CAP_SYS_NICE or RLIMIT_RTPRIO, else exit 3)\n"
            "  --mlock           lock their memory (mlockall), so no page fault of paging\n"
            "                    lies in a timed region (root or RLIMIT_MEMLOCK, else exit 3)\n"
            "  --trace-ctl C,A   a tracer's control and answer descriptors (perf record\n"
            "                    --control fd:C,A): 'enable' before the recorded iterations,\n"
            "                    'disable' after them, each acknowledged (latscope explain)\n"
            "  --arm 'BENCH k=v' an arms run: 2 to 8 scenarios (one benchmark, or ping-pong\n"
            "                    mechanisms) measured in one process, alternating blocks of\n"
            "                    --block-ms (default 5) in shuffled rounds for --time seconds\n"
            "                    (default 5); inject_ns=N in a word is that arm's busy-wait;\n"
            "                    --seed N the rounds' orders (default: random, recorded);\n"
            "                    --max-samples N per arm (default 1000000: a fast arm's\n"
            "                    blocks are shortened, its run ends early);\n"
            "                    --workers auto: one per second of --time, 2 to 4\n"
            "                    (docs/probe-cli.md, \"Arms\")\n"
            "  --check           check the parameters as a run would, print them resolved (JSON)\n"
            "                    and exit 0, or exit 2 or 3 with one line; nothing is measured\n"
            "  --env [DIR]       print the environment a sample file records (JSON), with the\n"
            "                    file system of DIR when given\n"
            "\n"
            "exit codes: 0 ok, 1 measurement failed, 2 bad input, 3 unsupported or not\n"
            "permitted here, 130 interrupted.  Errors are one line on stderr.\n"
            "\n"
            "examples:\n"
            "  latscope-probe --list\n"
            "  latscope-probe syscall -p op=getppid -n 100000 -o getppid.lss\n"
            "  latscope-probe file -p cache=fadvise -p dir=/var/tmp -o file.lss\n"
            "  latscope-probe pipe -p cpus=0,1 -p mode=threads -o pipe.lss\n"
            "  latscope-probe spin --check -p cpus=0,0\n"
            "  latscope-probe --arm 'pipe cpus=0,0' --arm 'eventfd cpus=0,0' --time 5 -o ab.lss\n");
}

/* A count as the lab writes one: digits only (no sign, space, leading zero or hex). */
static long long parse_count(const char *opt, const char *s, long long min, long long max) {
    long long v;
    const char *end;
    if (parse_digits(s, &v, &end) || *end)
        die(EXIT_BADINPUT, "%s %s: not a whole number", opt, s);
    if (v < min || v > max)
        die(EXIT_BADINPUT, "%s %s: must be between %lld and %lld", opt, s, min, max);
    return v;
}

/* Seconds as digits with an optional decimal fraction (no sign, exponent, nan or inf). */
static double parse_seconds(const char *opt, const char *s, double min, double max) {
    long long whole;
    const char *p;
    if (parse_digits(s, &whole, &p) == 0) {
        if (*p == '.' && p[1] >= '0' && p[1] <= '9')
            for (p++; *p >= '0' && *p <= '9'; p++) {
            }
        double v = strtod(s, NULL);
        if (!*p && isfinite(v) && v >= min && v <= max) return v;
    }
    die(EXIT_BADINPUT, "%s %s: give seconds between %g and %g", opt, s, min, max);
}

/* The probe ends with the process that started it (the lab): the kernel sends SIGTERM, which
 * stops the run as the user's would, with its clean-up.  A parent that ended before that was
 * arranged is seen in getppid(), compared with the parent at exec time (the lab names itself
 * in LATSCOPE_PROBE_PARENT; else the parent seen first here). */
static void die_with_parent(void) {
    long long parent = plat_parent_pid();
    const char *given = getenv("LATSCOPE_PROBE_PARENT"), *end;
    long long v;
    if (given && parse_digits(given, &v, &end) == 0 && !*end && v > 0) parent = v;
    if (plat_die_with_parent(SIGTERM) != 0) return; /* not here: the run goes on alone */
    if (plat_parent_pid() != parent)
        die(EXIT_INTERRUPTED, "the process that started latscope-probe (pid %lld) has ended; "
            "nothing was measured", parent);
}

/* The command line, as given. */
struct options {
    const struct bench *b;
    char **sets;
    int nsets;
    long long n, warmup, workers, inject_ns; /* -1: not given (workers -1: auto) */
    const char *clock, *out;
    int progress_fd, check;
    double peer_timeout;
    int rt_policy, rt_prio, rt_lock; /* --sched, --mlock */
};

/* --sched fifo:P | rr:P */
static void parse_sched(const char *v, struct options *o) {
    int max = plat_realtime_max();
    const char *colon = strchr(v, ':');
    size_t k = colon ? (size_t)(colon - v) : strlen(v);
    if (k == 4 && !strncmp(v, "fifo", 4)) o->rt_policy = PLAT_RT_FIFO;
    else if (k == 2 && !strncmp(v, "rr", 2)) o->rt_policy = PLAT_RT_RR;
    else die(EXIT_BADINPUT, "--sched %s: give fifo:PRIORITY or rr:PRIORITY, e.g. fifo:80", v);
    if (!colon || !colon[1])
        die(EXIT_BADINPUT, "--sched %s: give the priority after the colon, e.g. fifo:80", v);
    o->rt_prio = (int)parse_count("--sched's priority", colon + 1, 1, max > 0 ? max : 99);
}

/* --trace-ctl CTL,ACK: two open descriptors, the tracer's command and answer pipes. */
static void parse_trace_ctl(const char *v) {
    const char *comma = strchr(v, ',');
    char first[24];
    if (!comma || (size_t)(comma - v) >= sizeof first)
        die(EXIT_BADINPUT, "--trace-ctl %s: give two descriptors, CTL,ACK", v);
    memcpy(first, v, (size_t)(comma - v));
    first[comma - v] = 0;
    int c = (int)parse_count("--trace-ctl", first, 0, 65535);
    int a = (int)parse_count("--trace-ctl", comma + 1, 0, 65535);
    if (!plat_fd_valid(c) || !plat_fd_valid(a))
        die(EXIT_BADINPUT, "--trace-ctl %s: not open file descriptors", v);
    g_trace_ctl = c;
    g_trace_ack = a;
}

/* --sched and --mlock tried once, here, before anything is made: without the right, one line
 * and exit 3 (the workers apply them for real: realtime_apply). */
static void realtime_check(const struct options *o) {
    if (!o->rt_policy && !o->rt_lock) return;
    int e = plat_realtime(o->rt_policy, o->rt_prio, o->rt_lock);
    plat_realtime_undo();
    if (e == ENOSYS)
        die(EXIT_UNSUPPORTED, "--sched and --mlock are not supported on this system");
    if (e && o->rt_policy && e == EPERM)
        die(EXIT_UNSUPPORTED, "--sched: real-time scheduling is not permitted here (%s): run "
            "as root, or give the user CAP_SYS_NICE or an RLIMIT_RTPRIO of at least %d "
            "(ulimit -r)", strerror(e), o->rt_prio);
    if (e)
        die(EXIT_UNSUPPORTED, "--mlock: locking memory failed (%s): run as root, or raise "
            "RLIMIT_MEMLOCK (ulimit -l unlimited)", strerror(e));
}

static void parse_options(int argc, char **argv, struct options *o) {
    const char *a1 = argv[1];
    if (a1[0] == '-') die(EXIT_BADINPUT, "unknown option %s; see latscope-probe --help", a1);
    o->b = find_bench(a1);
    if (!o->b) {
        char names[1024] = "";
        for (int i = 0; all_benches[i]; i++) {
            strncat(names, all_benches[i]->name, sizeof names - strlen(names) - 1);
            if (all_benches[i + 1]) strncat(names, ", ", sizeof names - strlen(names) - 1);
        }
        die(EXIT_BADINPUT, "unknown benchmark '%s' (known: %s)", a1, names);
    }
    o->sets = xcalloc((size_t)argc, sizeof(char *));
    o->nsets = 0;
    o->n = o->warmup = -1;
    o->workers = 1;
    o->inject_ns = 0;
    o->clock = "auto";
    o->out = NULL;
    o->progress_fd = -1;
    o->check = 0;
    o->peer_timeout = 2.0;
    o->rt_policy = PLAT_RT_NONE;
    o->rt_prio = o->rt_lock = 0;
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(opt, "--check")) {
            o->check = 1;
            continue;
        }
        if (!strcmp(opt, "--mlock")) {
            o->rt_lock = 1;
            continue;
        }
        if (!strcmp(opt, "-p") || !strcmp(opt, "-n") || !strcmp(opt, "--warmup") ||
            !strcmp(opt, "--clock") || !strcmp(opt, "-o") || !strcmp(opt, "--progress-fd") ||
            !strcmp(opt, "--peer-timeout") || !strcmp(opt, "--workers") ||
            !strcmp(opt, "--inject-ns") || !strcmp(opt, "--sched") ||
            !strcmp(opt, "--trace-ctl")) {
            if (!v) die(EXIT_BADINPUT, "option %s needs a value", opt);
            i++;
        } else {
            die(EXIT_BADINPUT, "unknown option %s; see latscope-probe --help", opt);
        }
        if (!strcmp(opt, "-p")) o->sets[o->nsets++] = (char *)v;
        else if (!strcmp(opt, "-n")) o->n = parse_count("-n", v, 1, MAX_N);
        else if (!strcmp(opt, "--warmup")) o->warmup = parse_count("--warmup", v, 0, MAX_WARMUP);
        else if (!strcmp(opt, "--clock")) o->clock = v;
        else if (!strcmp(opt, "--workers"))
            o->workers = !strcmp(v, "auto") ? -1 : parse_count("--workers", v, 1, MAX_WORKERS);
        else if (!strcmp(opt, "--inject-ns"))
            o->inject_ns = parse_count("--inject-ns", v, 0, MAX_INJECT_NS);
        else if (!strcmp(opt, "--sched")) parse_sched(v, o);
        else if (!strcmp(opt, "--trace-ctl")) parse_trace_ctl(v);
        else if (!strcmp(opt, "-o")) o->out = v;
        else if (!strcmp(opt, "--progress-fd"))
            o->progress_fd = (int)parse_count("--progress-fd", v, 0, 65535);
        else if (!strcmp(opt, "--peer-timeout"))
            o->peer_timeout = parse_seconds("--peer-timeout", v, 0.1, 3600);
    }
}

/* What a run will do: every check a run makes before it measures (the same for --check). */
struct resolved {
    struct pval *pv;
    enum clock_kind clock;
    long long n, warmup, workers;
};

/* What every run checks of -o, --progress-fd and --clock (an arms run too). */
static void resolve_output_clock(const char *out, int check, int progress_fd, const char *clock,
                                 enum clock_kind *ck) {
    if (!out && !check) die(EXIT_BADINPUT, "no output file: give -o FILE");
    if (out && check) output_check(out);
    if (progress_fd >= 0 && !plat_fd_valid(progress_fd))
        die(EXIT_BADINPUT, "--progress-fd %d is not an open file descriptor", progress_fd);
    if (clock_parse(clock, ck)) {
        char names[128] = ""; /* this system's clocks: tsc, mono_raw, mono (Windows: qpc too) */
        for (int i = 0; i < clock_list_len; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     i ? ", " : "", clock_name(clock_list[i]));
        die(EXIT_BADINPUT, "--clock %s: choose %s or auto", clock, names);
    }
    clock_check(*ck);
}

/* The warm-up of a run that does not give --warmup: the single-process one, n/10 in 10..1000,
 * shared between the workers so that a run in W processes costs about what one did (at least
 * 10 each; each worker still warms its own caches and predictors). */
static long long default_warmup(long long n, long long workers) {
    long long total = n / 10 < 10 ? 10 : (n / 10 > 1000 ? 1000 : n / 10);
    return total / workers < 10 ? 10 : total / workers;
}

static void resolve(const struct options *o, struct resolved *r) {
    const struct bench *b = o->b;
    if (b->available) {
        const char *why = NULL;
        if (!b->available(&why)) die(EXIT_UNSUPPORTED, "%s", why);
    }
    r->pv = params_parse(b, o->nsets, o->sets);
    if (b->check) {
        char err[768];
        int code = b->check(b, r->pv, err, sizeof err);
        if (code) die(code, "%s", err);
    }
    resolve_output_clock(o->out, o->check, o->progress_fd, o->clock, &r->clock);
    if (o->rt_policy && b->family && b->family->spins && b->family->spins(b)) {
        /* busy-waiting parties on one CPU under a real-time policy: the one spinning is never
         * preempted for the other (no tick hands the CPU over at one priority) */
        for (int k = 0; k < b->nparams; k++)
            if (!strcmp(b->params[k].name, "cpus") &&
                placement_of(r->pv[k].cpu) == PL_SAME_CPU)
                die(EXIT_BADINPUT, "--sched with %s's busy-waiting parties on one CPU: under a "
                    "real-time policy the one spinning is never preempted for the other; pin "
                    "them to two CPUs (-p cpus=0,1)", b->name);
    }
    realtime_check(o);
    long long n = o->n >= 0 ? o->n : bench_default_n(b, r->pv);
    long long workers = o->workers;
    if (workers < 0) {
        workers = n / AUTO_MIN_PER_WORKER;
        if (workers > AUTO_WORKERS) workers = AUTO_WORKERS;
        if (workers < 1) workers = 1;
    }
    long long warmup = o->warmup >= 0 ? o->warmup : default_warmup(n, workers);
    if (workers > n)
        die(EXIT_BADINPUT, "--workers %lld: more workers than the %lld recorded iterations (-n); "
            "use at most %lld", workers, n, n);
    long long need = n * (MAX_COLS + 2) * 8;
    long long avail = plat_available_memory();
    if (avail > 0 && need > avail / 2)
        die(EXIT_BADINPUT, "-n %lld needs up to %lld MiB of memory for its samples, more than half "
            "of the %lld MiB this machine has available (MemAvailable); use a smaller -n", n, need >> 20, avail >> 20);
    r->n = n;
    r->warmup = warmup;
    r->workers = workers;
}

/* --check: the run's settings, resolved, as JSON on stdout. */
static void print_check(const struct options *o, const struct resolved *r) {
    struct jbuf j;
    jb_init(&j);
    jb_obj(&j, NULL);
    jb_str(&j, "benchmark", o->b->name);
    params_json(&j, "params", o->b, r->pv);
    jb_arr(&j, "given");
    for (int k = 0; k < o->b->nparams; k++)
        if (r->pv[k].given) jb_str(&j, NULL, o->b->params[k].name);
    jb_end_arr(&j);
    jb_int(&j, "n", r->n);
    jb_int(&j, "warmup", r->warmup);
    jb_int(&j, "workers", r->workers);
    jb_str(&j, "clock", clock_name(r->clock));
    jb_end_obj(&j);
    printf("%s\n", j.s);
    jb_free(&j);
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
    struct emulation em;
    int emulated = plat_emulation(&em) == 1;
    if (faults > 0 && !ctx->faults_expected && !FAULTS_OWN_SANITIZER && emulated) {
        /* the emulator's own faults (its code cache, its shadow of the guest's memory) land
         * in the timed region: expected there, and not the target's */
        warnmsg("the timed loop took %ld page fault%s under emulation (%s): the emulator's own, "
                "not a real machine's", faults, faults == 1 ? "" : "s", em.emulator);
    } else if (faults > 0 && !ctx->faults_expected && !FAULTS_OWN_SANITIZER) {
        char who[128] = "";
        for (int r = 0; r < 2; r++)
            if (names[r] && per_role[r])
                snprintf(who + strlen(who), sizeof who - strlen(who), "%s%s: %ld",
                         *who ? ", " : "", names[r], per_role[r]);
        warnmsg("the timed loop took %ld page fault%s (%s), each inside a timed region, so "
                "those samples are slow; rerun, and if it stays, look for memory pressure "
                "(swap, a memory limit) on this machine", faults, faults == 1 ? "" : "s", who);
    }
    /* more than 1 preemption per 100 iterations (and over 50) where the benchmark needs none:
     * a busy machine, not the odd timer tick */
    long limit = iters / 100 > 50 ? iters / 100 : 50;
    if (!ctx->preempt_expected && preempt > limit)
        warnmsg("the measuring threads were preempted %ld times in %ld iterations (involuntary "
                "context switches): other work competes for their CPUs; pin them to idle CPUs "
                "(cpu= or cpus=) and stop other load", preempt, iters);
}

/* ---------------------------------------------------------------- arms (docs/probe-cli.md) */

#ifndef _WIN32
/* An arms run's command line, as given. */
struct arm_options {
    const char *arm[ARMS_MAX + 1];
    int narms;
    long long workers, warmup, seed; /* -1: not given (workers -1: auto) */
    long long max_samples;
    double time_s, block_ms;
    const char *clock, *out;
    int progress_fd, check;
    double peer_timeout;
};

static void parse_arm_options(int argc, char **argv, struct arm_options *o) {
    memset(o, 0, sizeof *o);
    o->workers = o->warmup = o->seed = -1;
    o->time_s = 5;
    o->block_ms = 5;
    o->max_samples = ARMS_MAX_SAMPLES;
    o->clock = "auto";
    o->progress_fd = -1;
    o->peer_timeout = 2.0;
    int narms = 0;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(opt, "--check")) {
            o->check = 1;
            continue;
        }
        if (!strcmp(opt, "-p"))
            die(EXIT_BADINPUT, "-p: an arm's parameters go in its --arm word, e.g. --arm "
                "'pipe cpus=0,0'");
        if (!strcmp(opt, "-n"))
            die(EXIT_BADINPUT, "-n: an arms run is given a time (--time S), not a number of "
                "iterations");
        if (!strcmp(opt, "--inject-ns"))
            die(EXIT_BADINPUT, "--inject-ns: in an arms run each arm has its own: give "
                "inject_ns=N in its --arm word");
        if (opt[0] != '-')
            die(EXIT_BADINPUT, "'%s': in an arms run every benchmark goes in an --arm word "
                "('BENCH key=value ...')", opt);
        if (strcmp(opt, "--arm") && strcmp(opt, "--time") && strcmp(opt, "--block-ms") &&
            strcmp(opt, "--seed") && strcmp(opt, "--workers") && strcmp(opt, "--warmup") &&
            strcmp(opt, "--clock") && strcmp(opt, "-o") && strcmp(opt, "--progress-fd") &&
            strcmp(opt, "--peer-timeout") && strcmp(opt, "--max-samples"))
            die(EXIT_BADINPUT, "unknown option %s; see latscope-probe --help", opt);
        if (!v) die(EXIT_BADINPUT, "option %s needs a value", opt);
        i++;
        if (!strcmp(opt, "--arm")) {
            if (narms < ARMS_MAX + 1) o->arm[narms] = v;
            narms++;
        } else if (!strcmp(opt, "--time")) {
            o->time_s = parse_seconds("--time", v, 0.2, 3600);
        } else if (!strcmp(opt, "--block-ms")) {
            o->block_ms = parse_seconds("--block-ms", v, 0.5, 1000);
        } else if (!strcmp(opt, "--seed")) {
            o->seed = parse_count("--seed", v, 0, LLONG_MAX);
        } else if (!strcmp(opt, "--max-samples")) {
            o->max_samples = parse_count("--max-samples", v, ARMS_MAX_SAMPLES_RANGE_LO,
                                         ARMS_MAX_SAMPLES_RANGE_HI);
        } else if (!strcmp(opt, "--workers")) {
            o->workers = !strcmp(v, "auto") ? -1 : parse_count("--workers", v, 1, MAX_WORKERS);
        } else if (!strcmp(opt, "--warmup")) {
            o->warmup = parse_count("--warmup", v, 0, MAX_WARMUP);
        } else if (!strcmp(opt, "--clock")) {
            o->clock = v;
        } else if (!strcmp(opt, "-o")) {
            o->out = v;
        } else if (!strcmp(opt, "--progress-fd")) {
            o->progress_fd = (int)parse_count("--progress-fd", v, 0, 65535);
        } else {
            o->peer_timeout = parse_seconds("--peer-timeout", v, 0.1, 3600);
        }
    }
    if (narms < ARMS_MIN || narms > ARMS_MAX)
        die(EXIT_BADINPUT, "an arms run takes %d to %d --arm words (%d given): one per "
            "scenario to compare, e.g. --arm 'pipe cpus=0,0' --arm 'eventfd cpus=0,0'",
            ARMS_MIN, ARMS_MAX, narms);
    o->narms = narms;
}

/* What an arms run will do: every check it makes before it measures (the same for --check). */
struct arms_resolved {
    struct arms *A;
    enum clock_kind clock;
    long long workers, warmup;
};

static void resolve_arms(const struct arm_options *o, struct arms_resolved *r) {
    struct arms *A = r->A = xcalloc(1, sizeof *A);
    char err[1024];
    A->narms = o->narms;
    for (int k = 0; k < o->narms; k++) {
        int code = arm_parse(o->arm[k], &A->arm[k], err, sizeof err);
        if (code) die(code, "%s", err);
    }
    int code = arms_check(A, err, sizeof err);
    if (code) die(code, "%s", err);
    resolve_output_clock(o->out, o->check, o->progress_fd, o->clock, &r->clock);
    long long workers = o->workers;
    if (workers < 0) {
        workers = (long long)o->time_s;
        if (workers > ARMS_AUTO_WORKERS_MAX) workers = ARMS_AUTO_WORKERS_MAX;
        if (workers < ARMS_AUTO_WORKERS_MIN) workers = ARMS_AUTO_WORKERS_MIN; /* --time >= 0.2 */
    }
    if (o->time_s / (double)workers < 0.1)
        die(EXIT_BADINPUT, "--workers %lld: each worker's share of --time %g s would be under "
            "0.1 s; use fewer workers or a longer --time", workers, o->time_s);
    /* per arm and worker: a normal run's, the smallest of the arms' (the one of their default
     * -n), so that no arm warms up longer than it would alone */
    long long warmup = o->warmup;
    for (int k = 0; k < A->narms && o->warmup < 0; k++) {
        long long wk = default_warmup(bench_default_n(A->arm[k].b, A->arm[k].pv), workers);
        if (warmup < 0 || wk < warmup) warmup = wk;
    }
    A->time_s = o->time_s;
    A->block_ms = o->block_ms;
    A->max_samples = o->max_samples;
    if (o->seed >= 0) {
        A->seed = (unsigned long long)o->seed;
    } else { /* a random one, recorded: 53 bits, exact in every JSON reader */
        unsigned char b[8];
        if (plat_random(b, sizeof b) != 0)
            die(EXIT_FAIL, "no random bytes from the system: %s", strerror(errno));
        for (int i = 0; i < 8; i++) A->seed = A->seed << 8 | b[i];
        A->seed &= (1ull << 53) - 1;
    }
    r->workers = workers;
    r->warmup = warmup;
}

/* --check with --arm: the run's settings, resolved, as JSON on stdout. */
static void print_arms_check(const struct arm_options *o, const struct arms_resolved *r) {
    struct jbuf j;
    jb_init(&j);
    jb_obj(&j, NULL);
    jb_arr(&j, "arms");
    for (int k = 0; k < r->A->narms; k++) {
        const struct arm_spec *a = &r->A->arm[k];
        jb_obj(&j, NULL);
        jb_str(&j, "benchmark", a->b->name);
        params_json(&j, "params", a->b, a->pv);
        jb_arr(&j, "given");
        for (int x = 0; x < a->b->nparams; x++)
            if (a->pv[x].given) jb_str(&j, NULL, a->b->params[x].name);
        jb_end_arr(&j);
        jb_int(&j, "inject_ns", a->inject_ns);
        jb_str(&j, "word", a->text);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    jb_int(&j, "workers", r->workers);
    jb_int(&j, "warmup", r->warmup);
    jb_str(&j, "clock", clock_name(r->clock));
    jb_num(&j, "time_s", r->A->time_s);
    jb_num(&j, "block_ms", r->A->block_ms);
    jb_int(&j, "max_samples", r->A->max_samples);
    if (o->seed >= 0) jb_int(&j, "seed", o->seed);
    else jb_null(&j, "seed"); /* a run draws one, and records it */
    jb_end_obj(&j);
    printf("%s\n", j.s);
    jb_free(&j);
}

/* An arms run: resolved, each distinct inject_ns calibrated once, the workers' rounds (always
 * in worker processes), one sample file of format version 3. */
static int arms_main(int argc, char **argv) {
    struct arm_options o;
    struct arms_resolved r;
    parse_arm_options(argc, argv, &o);
    resolve_arms(&o, &r);
    if (o.check) {
        print_arms_check(&o, &r);
        return EXIT_OK;
    }
    output_begin(o.out);
    struct arms *A = r.A;
    const struct arm_spec *a0 = &A->arm[0];
    struct runctx *ctx = xcalloc(1, sizeof *ctx);
    ctx->b = a0->b;
    ctx->pv = a0->pv;
    ctx->warmup = r.warmup;
    ctx->total = (uint64_t)(A->time_s * 1000); /* progress: milliseconds of --time */
    ctx->peer_timeout = o.peer_timeout;
    ctx->progress_fd = o.progress_fd;
    ctx->inject_ns = (double)a0->inject_ns;
    ctx->arms = A;
    for (int k = 0; k < A->narms; k++)
        ctx->faults_expected |= pcond_holds(A->arm[k].b, A->arm[k].pv,
                                            &A->arm[k].b->display.faults_expected);
    clock_setup(r.clock, &ctx->clk);
    for (int k = 0; k < A->narms; k++) {
        int same = -1;
        for (int i = 0; i < k && same < 0; i++)
            if (A->arm[i].inject_ns == A->arm[k].inject_ns) same = i;
        if (same >= 0) {
            A->arm[k].inject = A->arm[same].inject;
            continue;
        }
        inject_calibrate(&ctx->clk, (double)A->arm[k].inject_ns);
        inject_get(&A->arm[k].inject);
    }
    inject_calibrate(&ctx->clk, 0);
    A->w = xcalloc((size_t)r.workers, sizeof *A->w);
    A->order = xcalloc((size_t)r.workers, sizeof *A->order);

    char started[64];
    iso_utc_now(started, sizeof started);
    run_workers(ctx, (int)r.workers);
    if (ctx->n < 1) die(EXIT_FAIL, "the arms recorded no sample; nothing was written");
    for (int w = 0; w < r.workers; w++)
        if (A->w[w].rounds >= A->w[w].max_rounds && !A->w[w].by_samples &&
            A->w[w].elapsed_s < A->time_s / r.workers)
            warnmsg("worker %d of %lld stopped after %lld rounds, %.2f s into its %.2f s: the "
                    "most a sample file holds (its rows, and every round's order in its "
                    "header); use a longer --block-ms or a shorter --time",
                    w + 1, r.workers, A->w[w].rounds, A->w[w].elapsed_s,
                    A->time_s / r.workers);
    warn_timed_usage(ctx);
    sfile_write(ctx, output_fd(), argc, argv, started);
    output_commit();
    cleanup_run();
    return EXIT_OK;
}
#endif

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
    if (!strcmp(a1, "--env")) {
        if (argc > 3) die(EXIT_BADINPUT, "--env takes at most one directory");
        struct fsinfo fs;
        if (argc == 3 && access(argv[2], F_OK) != 0)
            die(EXIT_BADINPUT, "--env %s: %s", argv[2], strerror(errno));
        if (argc == 3) plat_fsinfo(argv[2], &fs);
        struct jbuf j;
        jb_init(&j);
        env_json(&j, NULL, argc == 3 ? &fs : NULL);
        printf("%s\n", j.s);
        jb_free(&j);
        return 0;
    }
    const struct subcommand *sub = find_subcommand(a1);
    if (sub) return sub->main(argc, argv);
    int arms = 0;
    for (int i = 1; i < argc; i++) arms |= !strcmp(argv[i], "--arm");
#ifdef _WIN32
    if (arms)
        die(EXIT_UNSUPPORTED, "--arm: the Windows probe runs no arms (docs/windows.md); run "
            "each scenario alone and compare the runs");
#else
    if (arms && a1[0] != '-')
        die(EXIT_BADINPUT, "%s and --arm: in an arms run every benchmark goes in an --arm word "
            "(--arm '%s key=value ...')", a1, a1);
#endif
    die_with_parent();
#ifndef _WIN32
    if (arms) return arms_main(argc, argv);
#endif
    struct options o;
    struct resolved r;
    parse_options(argc, argv, &o);
    resolve(&o, &r);
    if (o.check) {
        print_check(&o, &r);
        free(r.pv);
        free(o.sets);
        return EXIT_OK;
    }
    /* the output's temporary and the leftovers record: made now, so that an output that
     * cannot be written is refused before anything is measured */
    output_begin(o.out);

    const struct bench *b = o.b;
    struct runctx *ctx = xcalloc(1, sizeof *ctx);
    ctx->b = b;
    ctx->pv = r.pv;
    ctx->n = r.n;
    ctx->warmup = r.warmup;
    ctx->total = (uint64_t)(r.n + r.warmup * r.workers);
    ctx->peer_timeout = o.peer_timeout;
    ctx->progress_fd = o.progress_fd;
    ctx->inject_ns = (double)o.inject_ns;
    ctx->rt_policy = o.rt_policy;
    ctx->rt_prio = o.rt_prio;
    ctx->rt_lock = o.rt_lock;
    ctx->faults_expected = pcond_holds(b, r.pv, &b->display.faults_expected);
    clock_setup(r.clock, &ctx->clk);
    inject_calibrate(&ctx->clk, (double)o.inject_ns);

    char started[64];
    iso_utc_now(started, sizeof started);
    if (r.workers == 1) {
        struct supervisor sv = {.progress = &ctx->progress, .total = ctx->total,
                                .progress_fd = o.progress_fd, .stall_timeout_s = 0, .peer = 0};
        realtime_apply(ctx->rt_policy, ctx->rt_prio, ctx->rt_lock);
        supervisor_start(&sv);
        b->run(ctx);
        supervisor_stop();
        stop_if_asked();
        worker_record_self(ctx);
    } else {
        run_workers(ctx, (int)r.workers);
    }
    warn_timed_usage(ctx);
    sfile_write(ctx, output_fd(), argc, argv, started);
    output_commit();
    cleanup_run();
    /* free everything, so a leak checker sees a clean run */
    for (int c = 0; c < ctx->ncols; c++) free(ctx->cols[c].data);
    free(ctx->t_start);
    free(ctx->workers);
    jb_free(&ctx->meta);
    free(ctx);
    free(r.pv);
    free(o.sets);
    return EXIT_OK;
}
