/* latscope-probe: shared definitions (errors, exit codes, clean-up, supervisor, JSON). */
#ifndef LATSCOPE_COMMON_H
#define LATSCOPE_COMMON_H

/* built with -D_GNU_SOURCE (meson.build, Makefile) */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBE_VERSION "0.1.0"
#define SAMPLE_FORMAT_VERSION 1
#define CATALOGUE_VERSION 1

enum exit_code {
    EXIT_OK = 0,
    EXIT_FAIL = 1,        /* a measurement failed (a timed call returned an error, a peer died) */
    EXIT_BADINPUT = 2,    /* the command line or a parameter is wrong */
    EXIT_UNSUPPORTED = 3, /* not supported or not permitted on this machine */
    EXIT_INTERRUPTED = 130
};

/* Print "latscope-probe: error: <msg>" (one line), run the clean-up list, exit with code. */
__attribute__((noreturn, format(printf, 2, 3))) void die(int code, const char *fmt, ...);
/* Same, but from a thread other than main: never returns, _exit()s after clean-up. */
__attribute__((noreturn, format(printf, 2, 3))) void die_async(int code, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warnmsg(const char *fmt, ...);

/* Clean-up registry: run by die(), on a signal, and by cleanup_run() at the normal end.
 * Entries are run once, last registered first. */
typedef void (*cleanup_fn)(void *arg);
int cleanup_push(cleanup_fn fn, void *arg);  /* returns a handle */
void cleanup_cancel(int handle);              /* the resource was released normally */
void cleanup_now(int handle); /* run one entry now (if still active), under the list's lock */
void cleanup_run(void);
/* Convenience: unlink a path / remove a directory / kill and reap a child on clean-up.
 * The path string is copied. */
int cleanup_unlink(const char *path);
int cleanup_rmdir(const char *path);
int cleanup_kill(pid_t pid);

/* Supervisor thread: owns SIGINT/SIGTERM/SIGHUP (blocked in every other thread), reports
 * progress on a file descriptor at most 4 times a second, and watches peers for death and
 * stalls.  Nothing it does runs inside a timed region of the measuring thread. */
struct supervisor {
    volatile uint64_t *progress; /* iterations done (incl. warm-up), written by the measurer */
    uint64_t progress_base;      /* iterations done before this process (earlier workers) */
    uint64_t total;              /* iterations to do (incl. warm-up) */
    int progress_fd;             /* -1: none */
    double stall_timeout_s;      /* 0: no stall detection */
    pid_t peer;                  /* 0: no peer process to watch */
};
void signals_block_all(void); /* call first thing in main(), before any thread or fork */
/* Real-time signals the signal benchmark sends (blocked in every thread by
 * signals_block_all, taken with sigwaitinfo): A to the responder, B to the initiator. */
#define PROBE_SIG_A (SIGRTMIN + 2)
#define PROBE_SIG_B (SIGRTMIN + 3)
void supervisor_start(struct supervisor *sv);
void supervisor_watch_peer(pid_t pid, double stall_timeout_s);
/* Stop watching the peer: returns 1 if the supervisor already reaped it (exit status in
 * *status), 0 if the caller must reap it. */
int supervisor_unwatch_peer(int *status);
void supervisor_stop(void);
/* Where a peer reports its own failure (a flag and a message, e.g. in shared memory). */
void supervisor_peer_error(volatile int *failed, char *errmsg);
extern volatile sig_atomic_t g_stop; /* set when the user asked us to stop */

/* Resource usage of the calling thread (getrusage(RUSAGE_THREAD)): what a timed loop's
 * measuring thread went through (page faults, context switches). */
struct thread_usage {
    long minflt, majflt, nvcsw, nivcsw;
};
void thread_usage_now(struct thread_usage *u);
/* *d = b - a */
void thread_usage_delta(struct thread_usage *d, const struct thread_usage *a,
                        const struct thread_usage *b);
/* Write every page of [p, p + len) (keeping its contents), so that the calling process owns
 * them: after a fork, a private page is copied on its first write and a shared one is mapped
 * on its first access; doing it before the timed loop keeps those faults out of it. */
void touch_pages(void *p, size_t len);
/* The same for the next bytes of the calling thread's stack. */
void touch_stack(void);

/* A growable string buffer used to build JSON. */
struct jbuf {
    char *s;
    size_t len, cap;
    int need_comma;
};
void jb_init(struct jbuf *b);
void jb_free(struct jbuf *b);
__attribute__((format(printf, 2, 3))) void jb_raw(struct jbuf *b, const char *fmt, ...);
void jb_obj(struct jbuf *b, const char *key);    /* "key": {   (key NULL: bare) */
void jb_arr(struct jbuf *b, const char *key);    /* "key": [   */
void jb_end_obj(struct jbuf *b);
void jb_end_arr(struct jbuf *b);
void jb_str(struct jbuf *b, const char *key, const char *val); /* NULL val -> null */
void jb_int(struct jbuf *b, const char *key, long long val);
void jb_num(struct jbuf *b, const char *key, double val); /* non-finite -> null */
void jb_bool(struct jbuf *b, const char *key, int val);
void jb_null(struct jbuf *b, const char *key);
void jb_json(struct jbuf *b, const char *key, const char *json); /* pre-built JSON value */

/* Small helpers */
char *xstrdup(const char *s);
void *xcalloc(size_t n, size_t sz);
/* Write / read exactly len bytes on a blocking fd, retrying after EINTR; 0, or -1 with errno
 * (EPIPE when read meets end of file first). */
int write_full(int fd, const void *buf, size_t len);
int read_full(int fd, void *buf, size_t len);
/* Read the first line of a small file into buf (newline stripped); 0 on success. */
int read_line_file(const char *path, char *buf, size_t len);
/* Allocate n int64 and touch every page, so no page fault lands inside a timed region. */
int64_t *alloc_samples(size_t n);
/* Pin the calling thread to one CPU (cpu < 0: leave unpinned). Returns 0 or errno. */
int pin_to_cpu(int cpu);
int cpu_exists(int cpu);
/* Exit 2 if the CPU does not exist here (one line saying how many there are). */
void check_cpu_or_die(int cpu);
/* check_cpu_or_die, then pin the calling thread (cpu < 0: leave unpinned). */
void pin_or_die(int cpu);
int cpu_count_conf(void);

#endif
