/* latscope-probe: what every part of the probe shares: exit codes, errors, the clean-up list
 * and small helpers (core/cleanup.c, core/util.c). */
#ifndef LATSCOPE_PROBE_H
#define LATSCOPE_PROBE_H

/* built with -D_GNU_SOURCE (meson.build) */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "platform/platform.h"

#define PROBE_VERSION "0.1.0"
/* The sample file (docs/sample-format.md): version 2 checksums the whole file, header
 * included; the limits are what the lab's reader accepts. */
#define SAMPLE_FORMAT_VERSION 2
/* An arms run's file (several scenarios interleaved, with arm, block and round columns) is
 * version 3; a run of one benchmark is written as version 2, as before. */
#define SAMPLE_FORMAT_VERSION_ARMS 3
#define SAMPLE_MAX_HEADER (1u << 20) /* bytes of the header line */
#define SAMPLE_MAX_COLUMNS 64
#define SAMPLE_MAX_ROWS 100000000ull
#define CATALOGUE_VERSION 1

enum exit_code {
    EXIT_OK = 0,
    EXIT_FAIL = 1,        /* a measurement failed (a timed call returned an error, a peer died) */
    EXIT_BADINPUT = 2,    /* the command line or a parameter is wrong */
    EXIT_UNSUPPORTED = 3, /* not supported or not permitted on this machine */
    EXIT_INTERRUPTED = 130
};

/* ---------------------------------------------------------------- errors (core/cleanup.c) */

/* Print "latscope-probe: error: <msg>" (one line), run the clean-up list, exit with code. */
__attribute__((noreturn, format(printf, 2, 3))) void die(int code, const char *fmt, ...);
/* Same, but from a thread other than main: never returns, _exit()s after clean-up. */
__attribute__((noreturn, format(printf, 2, 3))) void die_async(int code, const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warnmsg(const char *fmt, ...);

/* ---------------------------------------------------------------- clean-up (core/cleanup.c) */

/* Clean-up registry: run by die(), on a signal, and by cleanup_run() at the normal end.
 * Entries are run once, last registered first.  Each entry belongs to the process that
 * registered it: a forked child (a ping-pong responder, a worker) inherits the list but runs
 * only the entries it registered itself, so a fatal error in it never undoes its parent's
 * objects (fork() marks the child: the list's lock and the dying flag are reset there). */
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

/* ---------------------------------------------------------------- helpers (core/util.c) */

char *xstrdup(const char *s);
void *xcalloc(size_t n, size_t sz);
/* Write / read exactly len bytes on a blocking fd, retrying after EINTR; 0, or -1 with errno
 * (EPIPE when read meets end of file first). */
int write_full(int fd, const void *buf, size_t len);
int read_full(int fd, void *buf, size_t len);
/* *d = b - a */
void thread_usage_delta(struct thread_usage *d, const struct thread_usage *a,
                        const struct thread_usage *b);
/* Write every page of [p, p + len) (keeping its contents), so that the calling process owns
 * them: after a fork, a private page is copied on its first write and a shared one is mapped
 * on its first access; doing it before the timed loop keeps those faults out of it. */
void touch_pages(void *p, size_t len);
/* The same for the next bytes of the calling thread's stack. */
void touch_stack(void);
/* Allocate n int64 and touch every page, so no page fault lands inside a timed region. */
int64_t *alloc_samples(size_t n);
/* The one-line complaint about a CPU that is not there (exit 2), into err; 0 if it is (or
 * cpu < 0: unpinned). */
int cpu_check(int cpu, char *err, size_t errlen);
/* Pin the calling thread (cpu < 0: leave unpinned); exits 2 for a CPU that is not there, 3
 * if the system refuses. */
void pin_or_die(int cpu);
/* 16 random hex digits and a NUL into out (17 bytes): the part of a name others cannot
 * guess (exits 1 if the system gives no randomness). */
#define RANDOM_HEX_LEN 16
void random_hex(char out[RANDOM_HEX_LEN + 1]);
/* A whole number as the lab writes one: decimal digits only, no sign, space or leading zero
 * ("0" itself is one); *end: the first character after the digits.  0, or -1 (not such a
 * number, or above LLONG_MAX). */
int parse_digits(const char *s, long long *out, const char **end);

/* ---------------------------------------------------------------- leftovers (core/leftovers.c)
 *
 * What a SIGKILL of the probe would leave behind is recorded, before it is used, in a file
 * beside the output (-o's directory, named OUTPUT.leftovers.RANDOM; format:
 * docs/probe-cli.md): System V objects, which have no name to remove early, and the file
 * benchmark's test file and private directory.  Each record names its creator (pid and that
 * process's start time), so that a cleaner (the probe's own clean-up at its end, the lab's
 * `latscope rm --partial` and the start of its next run) removes only what a dead process
 * left.  On a clean end the file is removed.  Without an output (--check, the C unit tests)
 * nothing is recorded. */
enum leftover_kind { LO_SYSV_SEM, LO_SYSV_MSG, LO_FILE, LO_DIR };
/* Create the record file in dirfd (beside output name); 0, or -1 with errno. */
int leftovers_open(int dirfd, const char *outname);
/* Record a System V object (after its set-up, before its first use); returns a handle for
 * leftovers_release (-1: nothing recorded).  Exits 1 if the record cannot be written. */
int leftovers_sysv(enum leftover_kind kind, int id);
/* Record entry `name` (a file, or a directory) of directory dirfd, opened as dirpath. */
int leftovers_entry(enum leftover_kind kind, int dirfd, const char *dirpath, const char *name);
/* The recorded object is gone (removed by its creator). */
void leftovers_release(int handle);

/* --trace-ctl CTL,ACK (latscope explain): a tracer (perf record --control fd:...) listens on
 * CTL and answers each command on ACK.  trace_mark(1) before a run's recorded iterations and
 * trace_mark(0) after them, outside every timed region: "enable" / "disable", each waited for
 * until the tracer acknowledges it, so that the trace holds the timed loop and nothing else
 * (no set-up, no warm-up).  Without --trace-ctl it does nothing. */
extern int g_trace_ctl, g_trace_ack;
void trace_mark(int on);

/* --sched and --mlock (plat_realtime) for this process, a worker or the probe with one
 * worker, before it measures: its threads and the peers it forks take them on (they were
 * tried before the run: a failure here is exit 3 all the same). */
void realtime_apply(int policy, int prio, int lock);

#endif
