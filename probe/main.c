/* latscope-probe: command line, catalogue (--list) and the run sequence.
 * The command line is a versioned contract with the lab: docs/probe-cli.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "pingpong.h"

#define MAX_N 100000000LL
#define MAX_WARMUP 10000000LL

extern const char *param_type_name(enum ptype t);
extern void iso_utc_now(char *buf, size_t len);


static const struct bench *find_bench(const char *name) {
    for (int i = 0; all_benches[i]; i++)
        if (!strcmp(all_benches[i]->name, name)) return all_benches[i];
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: latscope-probe BENCH [-p key=value ...] [-n N] [--warmup W] [--clock C] -o FILE\n"
            "       latscope-probe --list | --clocks | --version | --help\n"
            "\n"
            "Runs one benchmark with one set of parameters and writes every sample to FILE\n"
            "(format: docs/sample-format.md).  No statistics: that is the lab's job (latscope).\n"
            "\n"
            "options:\n"
            "  -p key=value      a benchmark parameter (see --list); repeatable\n"
            "  -n N              recorded iterations (default: per benchmark, see --list)\n"
            "  --warmup W        iterations run first and discarded (default: n/10, 10..1000)\n"
            "  --clock C         tsc | mono_raw | mono | auto (default auto: tsc where invariant)\n"
            "  -o FILE           the sample file to write (must not exist)\n"
            "  --progress-fd FD  write 'progress DONE TOTAL' lines there, at most 4 a second\n"
            "  --peer-timeout S  a peer silent this long ends the run (default 2 s)\n"
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
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "-p") || !strcmp(o, "-n") || !strcmp(o, "--warmup") ||
            !strcmp(o, "--clock") || !strcmp(o, "-o") || !strcmp(o, "--progress-fd") ||
            !strcmp(o, "--peer-timeout")) {
            if (!v) die(EXIT_BADINPUT, "option %s needs a value", o);
            i++;
        } else {
            die(EXIT_BADINPUT, "unknown option %s; see latscope-probe --help", o);
        }
        if (!strcmp(o, "-p")) sets[nsets++] = (char *)v;
        else if (!strcmp(o, "-n")) n = parse_count("-n", v, 1, MAX_N);
        else if (!strcmp(o, "--warmup")) warmup = parse_count("--warmup", v, 0, MAX_WARMUP);
        else if (!strcmp(o, "--clock")) clock_s = v;
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
    if (warmup < 0) warmup = n / 10 < 10 ? 10 : (n / 10 > 1000 ? 1000 : n / 10);
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
    ctx->total = (uint64_t)(n + warmup);
    ctx->peer_timeout = peer_timeout;
    ctx->progress_fd = progress_fd;
    clock_setup(ck, &ctx->clk);

    struct supervisor sv = {.progress = &ctx->progress, .total = ctx->total,
                            .progress_fd = progress_fd, .stall_timeout_s = 0, .peer = 0};
    supervisor_start(&sv);
    char started[64];
    iso_utc_now(started, sizeof started);
    b->run(ctx);
    supervisor_stop();
    if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
    sfile_write(ctx, out, argc, argv, started);
    cleanup_run();
    /* free everything, so a leak checker sees a clean run */
    for (int c = 0; c < ctx->ncols; c++) free(ctx->cols[c].data);
    free(ctx->t_start);
    jb_free(&ctx->meta);
    free(ctx);
    free(pv);
    free(sets);
    return EXIT_OK;
}
