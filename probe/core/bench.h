/* latscope-probe: benchmark and parameter declarations (the catalogue's source). */
#ifndef LATSCOPE_BENCH_H
#define LATSCOPE_BENCH_H

#include "core/clock.h"
#include "core/probe.h"

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

struct coldef {
    const char *name;
    const char *desc;
    const char *latency; /* "call", "round_trip", "one_way_shared_clock", ... */
    const char *when;    /* NULL: always; else a human condition ("fsync=true") */
};

#define MAX_COLS 8
struct column {
    const char *name;
    const char *desc;
    const char *latency;
    int context_switches; /* -1 unknown / not applicable */
    int64_t *data;
};

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

struct bench;
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
    int faults_expected;  /* the timed calls themselves may fault (a cold page cache) */
    int preempt_expected; /* involuntary switches are part of the mechanism (spinning on one
                           * CPU, unpinned spinning) */
    /* set by main: */
    int nworkers;
    struct worker_rec *workers;
    double inject_ns;
};



struct pp_mech;
struct bench {
    const char *name;
    const char *summary;
    const struct pdef *params;
    int nparams;
    const struct coldef *columns;
    int ncolumns;
    const char *needs;              /* e.g. "root for cache=drop"; NULL */
    int (*available)(const char **why); /* NULL: always available */
    void (*run)(struct runctx *ctx);
    long long default_n;                  /* -n when not given */
    long long (*default_n_for)(const struct bench *b, const struct pval *pv); /* or NULL */
    const char *default_n_note;           /* e.g. "200 when cache=drop" */
    const char *kind;                     /* "syscall", "file", "ipc" */
    const struct pp_mech *mech;           /* ping-pong benchmarks */
};

extern const struct bench bench_syscall, bench_file, bench_pipe;
/* communication mechanisms (docs/mechanisms.md), one file per family: ipc_pipe.c,
 * ipc_socket.c, ipc_sync.c, ipc_shm.c, ipc_mq.c, ipc_signal.c, ipc_zmq.c, ipc_netns.c */
extern const struct bench bench_fifo, bench_unix_stream, bench_unix_dgram, bench_socketpair,
    bench_tcp, bench_udp, bench_eventfd, bench_futex, bench_posix_sem, bench_sysv_sem,
    bench_condvar, bench_spin, bench_spin_pause, bench_yield, bench_posix_mq, bench_sysv_mq,
    bench_signal, bench_zmq_inproc, bench_zmq_ipc, bench_zmq_tcp, bench_tcp_netns;
extern const struct bench *const all_benches[];

/* Parameter access by name; aborts (programming error) on an unknown name. */
const struct pval *param(const struct runctx *ctx, const char *name);
/* Parse "key=value" settings against the benchmark; exits 2 with a clear line on error. */
struct pval *params_parse(const struct bench *b, int nsets, char **sets);
/* For tests: parse without exiting; returns NULL and fills err on error. */
struct pval *params_parse_err(const struct bench *b, int nsets, char **sets, char *err,
                              size_t errlen);
int parse_size(const char *s, long long *out);

/* Add a column (allocates and touches n samples). */
struct column *add_column(struct runctx *ctx, const char *name, const char *desc,
                          const char *latency, int ctxsw);
/* Report progress: call between iterations (one store, no system call). */
static inline void progress_set(struct runctx *ctx, uint64_t i) { ctx->progress = i; }

/* Write the sample file (temp name, then rename).  Returns 0 or exits. */
void sfile_write(struct runctx *ctx, const char *path, int argc, char **argv,
                 const char *started_utc);
/* For tests: write to a path, no rename logic; returns 0 or -1 (errno set). */
int sfile_write_raw(const char *path, const char *header_json, int ncols, int64_t **cols,
                    uint64_t nrows);
uint32_t crc32_update(uint32_t crc, const void *data, size_t len);

#endif
