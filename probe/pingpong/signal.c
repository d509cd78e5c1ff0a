/* latscope-probe: real-time signal ping-pong: sigqueue (processes) or pthread_sigqueue
 * (threads), taken with sigwaitinfo.  The two signals (PROBE_SIG_A to the responder,
 * PROBE_SIG_B to the initiator) are blocked in every thread of the probe from the start
 * (signals_block_all), so they stay queued until the waiting thread takes them and never run
 * a handler or their default action. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

static void signal_setup(struct pp_ctx *pp) {
    (void)pp;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    if (!sigismember(&cur, PROBE_SIG_A) || !sigismember(&cur, PROBE_SIG_B))
        die(EXIT_FAIL, "internal error: the signal benchmark's signals are not blocked");
}

static int signal_send(struct pp_ctx *pp, int side) {
    int sig = side == 0 ? PROBE_SIG_A : PROBE_SIG_B;
    union sigval v = {.sival_int = side};
    int e;
    if (pp->processes)
        e = sigqueue(pp->pid[1 - side], sig, v) == 0 ? 0 : errno;
    else
        e = pthread_sigqueue(pp->thr[1 - side], sig, v);
    if (e) return pp_err(pp, side, "%s failed: %s", pp->processes ? "sigqueue" : "pthread_sigqueue",
                         strerror(e));
    return 0;
}

static int signal_recv(struct pp_ctx *pp, int side) {
    sigset_t set;
    siginfo_t info;
    sigemptyset(&set);
    sigaddset(&set, side == 0 ? PROBE_SIG_B : PROBE_SIG_A);
    while (sigwaitinfo(&set, &info) < 0)
        if (errno != EINTR) return pp_err(pp, side, "sigwaitinfo failed: %s", strerror(errno));
    if (info.si_code != SI_QUEUE || info.si_value.sival_int != 1 - side)
        return pp_err(pp, side, "signal %d came from somewhere else (si_code %d, pid %d)",
                      info.si_signo, info.si_code, (int)info.si_pid);
    return 0;
}

static const struct pp_mech mech_signal = {
    .name = "signal",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .payload = sizeof(union sigval),
    .setup = signal_setup,
    .send = signal_send,
    .recv = signal_recv,
    .timed = "rtt: queue real-time signal A to the responder (sigqueue to its pid between "
             "processes, pthread_sigqueue to its thread between threads), then sigwaitinfo for "
             "signal B (both blocked, no handler), with the responder's sigwaitinfo and "
             "sigqueue in between",
};

PINGPONG_BENCH_NOSIZE(signal, mech_signal,
                      "real-time signal ping-pong (sigqueue + sigwaitinfo)");
