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

/* A column the lab computes from recorded ones, sample by sample: from / divide_by (rtt/2),
 * or (from - minus) / the value of parameter divide_by_param (ctx's switch: (ring - pass) /
 * procs; divide_by 0 then). */
struct derived_col {
    const char *name;
    const char *from;
    int divide_by;
    const char *latency;
    const char *desc;
    const char *minus;           /* NULL: nothing subtracted */
    const char *divide_by_param; /* NULL: divide_by */
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
    /* 1: an injected wait (--inject-ns, an arm's inject_ns) is not in this column (ping-pong's
     * oneway: the wait is the responder's late answer, after its receive time) */
    int inject_free;
    int64_t *data;
    /* NULL: a duration in ticks; "index": a whole number that is no time (an arms run's arm,
     * block and round columns, docs/sample-format.md) */
    const char *kind;
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
    int rt_policy, rt_prio, rt_lock; /* --sched (PLAT_RT_*, priority), --mlock */
    /* A run in blocks (struct bench's begin, block, end): */
    int t0_set;           /* t0 holds the origin of t_start (the first recorded start read, or
                           * an arms run's common origin, set before its first block) */
    int cpu;              /* the measuring thread's CPU, -1 unpinned (set by begin) */
    /* An arm of an arms run (core/arms.c): n is 0 at begin, the samples are sized once the
     * blocks are calibrated (the driver sets the columns' data and t_start, shared by every
     * arm of the worker); block_cap: the most iterations, recorded and discarded, one block
     * may hold (the responder's stamp array is sized for it). */
    int is_arm;
    uint64_t block_cap;
    struct arms *arms;    /* an arms run: its plan, and what its workers hand over */
};

/* ---------------------------------------------------------------- a benchmark */

/* What a family of benchmarks adds to the core's handling of its members (the ping-pong
 * mechanisms: pingpong/common.c's pp_family), through these hooks: the core asks them and
 * knows nothing of the family's own types.  Each hook may be NULL. */
struct jbuf;
struct family {
    /* the family's facts in a member's catalogue entry (--list): ping-pong's "mechanism" */
    void (*catalogue)(struct jbuf *j, const struct bench *b);
    /* the largest value of a numeric parameter for this member (at most the parameter's
     * own max): a message size is bounded by what the mechanism carries */
    long long (*param_max)(const struct bench *b, const struct pdef *d);
    /* whether the member's waiting side spins (it cannot be an arm: core/arms.c) */
    int (*spins)(const struct bench *b);
    /* whether its begin forks a process of its own with these parameters */
    int (*forks)(const struct bench *b, const struct pval *pv);
};

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
    /* A run in phases, which an arms run interleaves (core/arms.c): begin sets everything up
     * (fixtures, peers, the pinned measuring thread), declares the columns, runs the warm-up
     * and returns the run's state; block runs `discard` iterations exactly as timed ones and
     * keeps none (an arms run's switch iterations), then `count` recorded ones into samples
     * from .. from + count - 1 of the columns and t_start, the measuring thread's usage over
     * those added to its role's; end closes (the closing round trip, peers joined), completes
     * what is computed from the samples (oneway), writes the "bench" object and tears down.
     * Its run is then bench_run_phases: begin, block(0, n, 0), end — one code path.  NULL:
     * run only, and no arm (arm_refusal says why).  ready (NULL: none) is the rest of begin
     * that must follow every fork of the run: an arms run begins every arm (their peers
     * started, the forked ones first) before it makes any ready (the measuring side's own
     * start, its pages touched, its warm-up), so that no fork makes a touched page or a
     * library's thread of an arm copy-on-write again. */
    void *(*begin)(struct runctx *ctx);
    void (*ready)(void *state);
    void (*block)(void *state, uint64_t from, uint64_t count, uint64_t discard);
    void (*end)(void *state);
    const char *arm_refusal;
    /* The columns a run with these parameters records, in order, as indices into columns[]
     * (returns how many); NULL: every one of columns[]. */
    int (*columns_of)(const struct bench *b, const struct pval *pv, int idx[MAX_COLS]);
    long long default_n;                  /* -n when not given */
    const struct nrule *n_rules;          /* ... unless one of these holds */
    int n_nrules;
    const char *default_n_note;           /* e.g. "200 when cache=drop" */
    const char *kind;                     /* "syscall", "file", "ipc" */
    const struct family *family;          /* NULL: a benchmark of its own */
    const void *member;                   /* the family's own description of it (a pp_mech) */
    const struct scenario *scenarios;     /* NULL: one, the defaults, quick */
    int nscenarios;
    struct display display;
};
#define COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

/* A command of the probe besides running a benchmark (`latscope-probe serve ...`), defined by
 * its module (`const struct subcommand subcommand_<name>`) and registered by one SUBCOMMAND
 * line of benchmarks.def: the core calls it by name and knows nothing of what it does. */
struct subcommand {
    const char *name;
    const char *usage; /* its line in the probe's usage, after "latscope-probe " */
    int (*main)(int argc, char **argv); /* argv[1] is its name; returns the exit code */
};
extern const struct subcommand *const all_subcommands[];
const struct subcommand *find_subcommand(const char *name);

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

/* The end of a benchmark's timed loop (a block's recorded iterations), right after its last
 * timed iteration: the measuring thread's usage since u0 (read again now) added to role 0's,
 * named role, with t0 (the origin of t_start: the first recorded start read of the clock) and
 * the number of roles (a second role fills its own). */
void timed_loop_end(struct runctx *ctx, uint64_t t0, int nroles, const char *role,
                    const struct thread_usage *u0);
/* Add a column (allocates and touches n samples; none for an arm, whose driver gives it its
 * samples once they are sized). */
struct column *add_column(struct runctx *ctx, const char *name, const char *desc,
                          const char *latency, int ctxsw);
/* t_start: n samples, allocated and touched (none for an arm). */
void add_t_start(struct runctx *ctx);
/* The columns a benchmark records with these parameters (struct bench's columns_of). */
int bench_columns(const struct bench *b, const struct pval *pv, int idx[MAX_COLS]);
/* The run of a benchmark in phases: begin, ready, block(0, n, 0), end. */
void bench_run_phases(struct runctx *ctx);
/* Report progress: call between iterations (one store, no system call). */
static inline void progress_set(struct runctx *ctx, uint64_t i) { ctx->progress = i; }

/* ---------------------------------------------------------------- output */

/* --list, --clocks (core/catalogue.c). */
void print_catalogue(void);
void print_clocks(void);

/* Write the sample file to fd (the output's temporary: output_fd).  Returns or exits. */
void sfile_write(struct runctx *ctx, int fd, int argc, char **argv, const char *started_utc);
/* The file's bytes to fd; 0 or -1 (errno set).  _v: of a format version other than
 * SAMPLE_FORMAT_VERSION (an arms run's). */
int sfile_write_fd(int fd, const char *header_json, int ncols, int64_t **cols, uint64_t nrows);
int sfile_write_fd_v(int fd, int version, const char *header_json, int ncols, int64_t **cols,
                     uint64_t nrows);
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
/* The environment's "filesystem" object (a directory's file system) under key. */
void fs_json(struct jbuf *j, const char *key, const struct fsinfo *fs);

/* --workers auto: as many workers as give each at least AUTO_MIN_PER_WORKER iterations, at
 * most AUTO_WORKERS (the lab's default: between-run variation in every run) */
#ifdef _WIN32
#define AUTO_WORKERS 1LL /* Windows: the run in one process (win/workers.c) */
#else
#define AUTO_WORKERS 10LL
#endif
#define AUTO_MIN_PER_WORKER 200LL
#define MAX_WORKERS 1000LL
/* --inject-ns and an arm's inject_ns: at most 10 ms */
#define MAX_INJECT_NS 10000000LL
/* --workers W (core/workers.c): run the benchmark in nw worker processes, one after another,
 * and gather their samples into ctx (an arms run: ctx->arms, the interleaved rounds). */
void run_workers(struct runctx *ctx, int nw);

/* ---------------------------------------------------------------- arms (core/arms.c)
 *
 * An arms run (latscope-probe --arm 'BENCH k=v ...' --arm ... --time S): two to eight
 * scenarios measured in one worker process, in short blocks of about block_ms each, in rounds
 * that run every arm once in a freshly shuffled order, until the worker's share of the time
 * is used (docs/probe-cli.md, "Arms").  Not on Windows. */
#define ARMS_MIN 2
#define ARMS_MAX 8
/* --workers auto for arms: one worker per second of --time, ARMS_AUTO_WORKERS_MIN to
 * ARMS_AUTO_WORKERS_MAX.  The layout of a worker's memory moves the arms' ratio by a random
 * amount that only more workers average out: with 2 the lab's interval of a ratio is about
 * +-1% whatever the rounds, with 4 about +-0.5%. */
#define ARMS_AUTO_WORKERS_MIN 2LL
#define ARMS_AUTO_WORKERS_MAX 4LL
/* --max-samples: the recorded samples of one arm, all workers together (the default, and the
 * range): a fast arm (a system call of 150 ns) would record tens of millions in a few seconds,
 * which neither the file nor the analysis needs; its blocks are then shortened so that the
 * samples still fall into ARMS_TARGET_ROUNDS rounds, the paired statistic's unit. */
#define ARMS_MAX_SAMPLES 1000000LL
#define ARMS_MAX_SAMPLES_RANGE_LO 1000LL
#define ARMS_MAX_SAMPLES_RANGE_HI 100000000LL
#define ARMS_TARGET_ROUNDS 400LL
struct arm_spec {
    const struct bench *b;
    struct pval *pv;
    const char *text;              /* the --arm word, as given */
    long long inject_ns;
    struct inject_setting inject;  /* its busy-wait, calibrated (main) */
};
/* One arm's part of one worker's run, as the worker hands it over. */
struct arm_part {
    long long n, block_iterations, discard, block_cap;
    int nroles;
    struct role_usage roles[2];
    int ncols;
    struct column cols[MAX_COLS]; /* its columns (no data: the samples are the worker's) */
    int preempt_expected, have_fs;
    struct fsinfo fs;
    size_t metalen; /* its "bench" JSON, handed over after the record */
};
/* One worker's part of an arms run. */
struct arms_worker {
    long long rounds, max_rounds, blocks;
    int by_samples; /* max_rounds is --max-samples's (not the file's, header's or memory's) */
    double elapsed_s;
    struct arm_part arm[ARMS_MAX];
};
struct arms {
    int narms;
    struct arm_spec arm[ARMS_MAX];
    double time_s, block_ms;
    long long max_samples; /* per arm, all workers together (--max-samples) */
    unsigned long long seed;
    /* what the workers handed over (core/workers.c): */
    struct arms_worker *w; /* one per worker */
    unsigned char **order; /* per worker: the arm order, rounds x narms, round by round */
    char *meta[ARMS_MAX];  /* each arm's "bench" object (the first worker's) */
};
/* One --arm word ('BENCH key=value ...', inject_ns=N among them) into a; 0, or an exit code
 * with one line in err. */
int arm_parse(const char *text, struct arm_spec *a, char *err, size_t errlen);
/* Whether the arms can run together (each can be an arm, all record the same columns); 0, or
 * an exit code with one line in err. */
int arms_check(const struct arms *A, char *err, size_t errlen);
/* In worker w of nw: every arm set up and warmed up, its blocks calibrated, the rounds run
 * until the worker's share of the time is used, every arm ended; ctx then holds the worker's
 * rows in time order (t_start, the columns, arm, block and round), A->w[w], A->order[w] and
 * A->meta. */
void arms_worker_run(struct runctx *ctx, int w, int nw);
/* The probe has gathered worker w's rows at [off, off + n): its block numbers count on. */
void arms_gathered(struct runctx *ctx, int w, long long off, long long n);
/* The header's "arms" and "interleave" members. */
void arms_header(struct jbuf *j, const struct runctx *ctx, int nw);
/* Record this process's run as the only worker. */
void worker_record_self(struct runctx *ctx);


#endif
