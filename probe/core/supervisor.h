/* latscope-probe: the supervisor thread and the signals it owns (core/supervisor.c). */
#ifndef LATSCOPE_SUPERVISOR_H
#define LATSCOPE_SUPERVISOR_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/probe.h"

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
    const char *progress_unit;   /* what progress counts, for messages (NULL: iterations) */
};
void signals_block_all(void); /* call first thing in main(), before any thread or fork */
/* The signals the user stops a run with (SIGINT, SIGTERM, SIGHUP). */
sigset_t stop_signals(void);
/* Real-time signals the signal benchmark sends (blocked in every thread by
 * signals_block_all, taken with sigwaitinfo): A to the responder, B to the initiator. */
#define PROBE_SIG_A (SIGRTMIN + 2)
#define PROBE_SIG_B (SIGRTMIN + 3)
void supervisor_start(struct supervisor *sv);
/* Watch a peer: a process (pid > 0), reaped here the moment it ends and its death reported,
 * or a thread (pid 0); while any peer is watched, no progress for its stall_timeout_s ends
 * the run.  Several at once (an arms run: one responder per arm, SV_MAX_PEERS); returns the
 * handle supervisor_unwatch_peer takes. */
#define SV_MAX_PEERS 16
int supervisor_watch_peer(pid_t pid, double stall_timeout_s);
/* Stop watching a peer: returns 1 if the supervisor already reaped it (exit status in
 * *status), 0 if the caller must reap it. */
int supervisor_unwatch_peer(int handle, int *status);
void supervisor_stop(void);
/* Where a peer reports its own failure (a flag and a message, e.g. in shared memory); one
 * place per peer, kept until the supervisor stops. */
void supervisor_peer_error(volatile int *failed, char *errmsg);
/* One more counter whose change is progress to the stall watch (not to the progress lines):
 * the iterations of each arm of an arms run, written by the measuring thread. */
void supervisor_add_activity(volatile uint64_t *counter);
extern volatile sig_atomic_t g_stop; /* set when the user asked us to stop */

/* Between iterations, never inside a timed region: a stop the user asked for (a signal)
 * ends the run there, with nothing written. */
static inline void stop_if_asked(void) {
    if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
}

#endif
