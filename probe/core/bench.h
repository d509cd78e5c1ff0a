/* latscope-probe: what a benchmark is: its parameters, columns, rules and display facts (the
 * catalogue's source), the run context it measures into, and the registry of them all. */
#ifndef LATSCOPE_BENCH_H
#define LATSCOPE_BENCH_H

#include "core/clock.h"
#include "core/json.h"
#include "core/probe.h"
#include "core/supervisor.h"

struct bench;

/* ---------------------------------------------------------------- parameters (core/params.c) */

enum ptype { P_INT, P_SIZE, P_ENUM, P_STR, P_PATH, P_CPUS, P_CPU, P_BOOL };

struct pdef {
    const char *name;
    enum ptype type;
    const char *def; /* default as text; "" means "none / automatic" */
    const char *unit;
    const char *help;
    const char *const *choices; /* P_ENUM: NULL-terminated */
    long long min, max;         /* P_INT, P_SIZE */
    const char *root_value;     /* this value needs root (e.g. cache=drop) */
};

struct pval {
    const char *s; /* the text (default or given) */
    long long i;   /* P_INT, P_SIZE, P_BOOL, P_CPU */
    int cpu[2];    /* P_CPUS: -1 = unpinned */
    int given;     /* given on the command line */
};

/* Where the two parties of a ping-pong run (a cpus parameter's value). */
enum placement { PL_SAME_CPU = 1, PL_DIFFERENT_CPUS = 2, PL_UNPINNED = 4 };
#define PL_ALL (PL_SAME_CPU | PL_DIFFERENT_CPUS | PL_UNPINNED)
enum placement placement_of(const int cpu[2]);
const char *placement_name(enum placement p);

/* A condition on a benchmark's parameters (data, so that the catalogue can state it): the
 * parameter equals a value, or differs from one, or (a cpus parameter) has a placement. */
struct pcond {
    const char *param;
    const char *equals, *not_equals, *placement; /* one of them */
};
int pcond_holds(const struct bench *b, const struct pval *pv, const struct pcond *c);

/* -n when not given, where it is not default_n (the first rule that holds). */
struct nrule {
    struct pcond when;
    long long n;
};

/* ---------------------------------------------------------------- columns (core/columns.c) */

struct coldef {
    const char *name;
    const char *desc;
    const char *latency; /* a latency kind: latency_kinds[] */
    const char *when;    /* NULL: always; else a human condition ("fsync=true") */
};

/* A column the lab computes from a recorded one: from / divide_by (rtt/2). */
struct derived_col {
    const char *name;
    const char *from;
    int divide_by;
    const char *latency;
    const char *desc;
};

/* What a latency contains, and its short label in tables. */
struct latency_kind {
    const char *kind, *label, *desc;
};
extern const struct latency_kind latency_kinds[];
const char *latency_label(const char *kind);

#define MAX_COLS 8
struct column {
    const char *name;
    const char *desc;
    const char *latency;
    int context_switches; /* -1 unknown / not applicable */
    int64_t *data;
};

/* ---------------------------------------------------------------- what the lab runs and shows */

/* A named set of parameters: the quick plan is every scenario marked quick, in catalogue
 * order.  n and warmup 0: the plan's defaults (CATALOGUE quick). */
struct scenario {
    const char *name;
    const char *params; /* "key=value key=value", or NULL: the defaults */
    long long n, warmup;
    int quick;
    const char *note;
};

/* How the lab shows a run of the benchmark (the catalogue's "display"). */
struct display {
    const char *roles[2];        /* measuring threads, as in the header's timed_rusage */
    struct pcond faults_expected; /* page faults in the timed loop are part of the benchmark
                                   * when this holds (param NULL: never) */
    const char *switches_column; /* its context_switches is what each iteration should show */
    /* lines about the run: templates over the header's "bench" object (docs/probe-cli.md) */
    const char *lines[2];
    const char *dim_lines[1];
    /* a clock-free figure to check a column against (syscall's batch figure) */
    const char *check_label, *check_value, *check_column, *check_minus, *check_detail;
};

/* ---------------------------------------------------------------- the run context */

/* A measuring thread's resource usage over the timed loop (recorded iterations only). */
struct role_usage {
    const char *role; /* "main", "initiator", "responder" */
    struct thread_usage u;
};

/* One worker process's part of the run (header "workers"). */
struct worker_rec {
    long long n, warmup;
    long pid;
    int nroles;
    struct role_usage roles[2];
};

struct runctx {
    const struct bench *b;
    struct pval *pv;
    long long n, warmup;
    struct clock_info clk;
    volatile uint64_t progress; /* iterations done including warm-up */
    uint64_t total;
    int ncols;
    struct column cols[MAX_COLS];
    int64_t *t_start;     /* start of each recorded iteration, ticks since the first */
    struct jbuf meta;     /* members of the "bench" object in the header */
    double peer_timeout;  /* seconds */
    int progress_fd;
    /* set by the benchmark's run: */
    uint64_t t0;          /* raw clock read at the start of the first recorded iteration */
    int nroles;           /* measuring threads, with their usage over the timed loop */
    struct role_usage roles[2];
    int preempt_expected; /* involuntary switches are part of the mechanism (spinning on one
                           * CPU, unpinned spinning) */
    int have_fs;          /* the benchmark worked in a directory (file): its file system, */
    struct fsinfo fs;     /* recorded as the environment's "filesystem" */
    /* set by main: */
    int faults_expected;  /* the timed calls themselves may fault (display.faults_expected) */
    int nworkers;
    struct worker_rec *workers;
    double inject_ns;
};

/* ---------------------------------------------------------------- a benchmark */

struct pp_mech;
struct bench {
    const char *name;
    const char *summary;
    const struct pdef *params;
    int nparams;
    const struct coldef *columns;
    int ncolumns;
    const struct derived_col *derived;
    int nderived;
    const char *needs;              /* e.g. "root for cache=drop"; NULL */
    /* The benchmark that measures the same on one host (tcp for tcp_remote), put beside
     * this one by the lab (the fleet's pairs); NULL: none. */
    const char *counterpart;
    int (*available)(const char **why); /* NULL: always available */
    /* Everything a run checks before measuring (beyond each parameter's own rules), so that
     * --check says what a run would: 0, or EXIT_BADINPUT / EXIT_UNSUPPORTED with one line in
     * err.  NULL: nothing more. */
    int (*check)(const struct bench *b, const struct pval *pv, char *err, size_t errlen);
    void (*run)(struct runctx *ctx);
    long long default_n;                  /* -n when not given */
    const struct nrule *n_rules;          /* ... unless one of these holds */
    int n_nrules;
    const char *default_n_note;           /* e.g. "200 when cache=drop" */
    const char *kind;                     /* "syscall", "file", "ipc" */
    const struct pp_mech *mech;           /* ping-pong benchmarks */
    const struct scenario *scenarios;     /* NULL: one, the defaults, quick */
    int nscenarios;
    struct display display;
};
#define COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

/* The registry (core/registry.c, from benchmarks.def): every benchmark, in catalogue order. */
extern const struct bench *const all_benches[];
const struct bench *find_bench(const char *name);
long long bench_default_n(const struct bench *b, const struct pval *pv);

/* Parameter access by name; aborts (programming error) on an unknown name. */
const struct pval *param(const struct runctx *ctx, const char *name);
const struct pval *param_of(const struct bench *b, const struct pval *pv, const char *name);
/* Parse "key=value" settings against the benchmark; exits 2 with a clear line on error. */
struct pval *params_parse(const struct bench *b, int nsets, char **sets);
/* For tests: parse without exiting; returns NULL and fills err on error. */
struct pval *params_parse_err(const struct bench *b, int nsets, char **sets, char *err,
                              size_t errlen);
int parse_size(const char *s, long long *out);
const char *param_type_name(enum ptype t);
/* The parameters as the sample file's header holds them: numbers as numbers, booleans as
 * booleans, the rest as text (--check prints the same object). */
void params_json(struct jbuf *j, const char *key, const struct bench *b, const struct pval *pv);

/* Add a column (allocates and touches n samples). */
/* The end of a benchmark's timed loop, right after its last timed iteration: the measuring
 * thread's usage since u0 (read again now) kept as role 0's, named role, with t0 (the first
 * recorded start read of the clock) and the number of roles (a second role fills its own). */
void timed_loop_end(struct runctx *ctx, uint64_t t0, int nroles, const char *role,
                    const struct thread_usage *u0);
struct column *add_column(struct runctx *ctx, const char *name, const char *desc,
                          const char *latency, int ctxsw);
/* Report progress: call between iterations (one store, no system call). */
static inline void progress_set(struct runctx *ctx, uint64_t i) { ctx->progress = i; }

/* ---------------------------------------------------------------- output */

/* --list, --clocks (core/catalogue.c). */
void print_catalogue(void);
void print_clocks(void);

/* Write the sample file to fd (the output's temporary: output_fd).  Returns or exits. */
void sfile_write(struct runctx *ctx, int fd, int argc, char **argv, const char *started_utc);
/* The file's bytes to fd; 0 or -1 (errno set). */
int sfile_write_fd(int fd, const char *header_json, int ncols, int64_t **cols, uint64_t nrows);
/* For tests: write a new file at path (never over one), synced; 0 or -1 (errno set). */
int sfile_write_raw(const char *path, const char *header_json, int ncols, int64_t **cols,
                    uint64_t nrows);

/* -o (core/output.c): the output's directory is opened once and everything in it is done
 * relative to that descriptor.  output_check: the refusals of a run, for --check (exit 2);
 * output_begin: before the run, the same, then a temporary of an unpredictable name created
 * there (O_EXCL) and the leftovers record beside it; output_fd: the temporary; output_commit:
 * synced, then renamed to -o unless a file appeared there meanwhile (exit 1, the temporary
 * removed). */
void output_check(const char *out);
void output_begin(const char *out);
int output_fd(void);
void output_commit(void);
uint32_t crc32_update(uint32_t crc, const void *data, size_t len);
void iso_utc_now(char *buf, size_t len);
/* The environment's schema version (docs/store.md), and its JSON under key (NULL: bare). */
#define ENV_SCHEMA 2
void env_json(struct jbuf *j, const char *key, const struct fsinfo *fs);

/* --workers auto: as many workers as give each at least AUTO_MIN_PER_WORKER iterations, at
 * most AUTO_WORKERS (the lab's default: between-run variation in every run) */
#ifdef _WIN32
#define AUTO_WORKERS 1LL /* Windows: the run in one process (win/workers.c) */
#else
#define AUTO_WORKERS 10LL
#endif
#define AUTO_MIN_PER_WORKER 200LL
/* --workers W (core/workers.c): run the benchmark in nw worker processes, one after another,
 * and gather their samples into ctx. */
void run_workers(struct runctx *ctx, int nw);
/* Record this process's run as the only worker. */
void worker_record_self(struct runctx *ctx);

#endif
