/* latscope-probe: the supervisor thread: the user's signals, progress, peers' death and stalls. */
#include "core/supervisor.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/probe.h"

volatile sig_atomic_t g_stop = 0;

static char *sv_peer_errmsg = NULL;
static volatile int *sv_peer_failed = NULL;
/* ---------------------------------------------------------------- supervisor */

static struct supervisor *sv_cfg;
static pthread_t sv_thread;
static int sv_running = 0;
static volatile int sv_quit = 0;
static pthread_mutex_t sv_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t sv_peer = 0;
static int sv_peer_reaped = 0;
static int sv_peer_status = 0;
static double sv_stall = 0;
static unsigned sv_watch_gen = 0; /* bumped when a peer starts being watched */

/* supervisor_stop wakes the supervisor with it, instead of letting it sleep out its tick */
#define SV_WAKE SIGUSR2

sigset_t stop_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    return set;
}

static sigset_t owned_signals(void) {
    sigset_t set = stop_signals();
    sigaddset(&set, SV_WAKE);
    return set;
}

void signals_block_all(void) {
    sigset_t set = owned_signals();
    /* The signal benchmark's real-time signals: blocked in every thread (the supervisor
     * too), so they stay pending until the thread that waits for them takes them. */
    sigaddset(&set, PROBE_SIG_A);
    sigaddset(&set, PROBE_SIG_B);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_mutex_t sv_start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sv_start_cv = PTHREAD_COND_INITIALIZER;
static int sv_started = 0;

static void *sv_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&sv_start_lock);
    sv_started = 1;
    pthread_cond_signal(&sv_start_cv);
    pthread_mutex_unlock(&sv_start_lock);
    sigset_t set = owned_signals();
    double last_report = 0, stop_at = 0, last_change = mono_s();
    uint64_t last_progress = (uint64_t)-1;
    unsigned watch_gen = 0;
    while (!sv_quit) {
        int sig = plat_wait_signal(&set, 0.05);
        double now = mono_s();
        if (sig == SV_WAKE) continue; /* sv_quit is set: leave at once */
        if (sig > 0) {
            if (!g_stop) {
                g_stop = sig;
                stop_at = now;
            } else {
                die_async(EXIT_INTERRUPTED, "interrupted (signal %d), stopped at once", sig);
            }
        }
        /* The measuring thread checks g_stop between iterations; if it is blocked (a peer
         * that will never answer), give it one second and then clean up from here. */
        if (g_stop && now - stop_at > 1.0)
            die_async(EXIT_INTERRUPTED, "interrupted (signal %d); nothing was written", g_stop);
        uint64_t p = sv_cfg && sv_cfg->progress ? sv_cfg->progress_base + *sv_cfg->progress : 0;
        unsigned gen = __atomic_load_n(&sv_watch_gen, __ATOMIC_ACQUIRE);
        if (p != last_progress || gen != watch_gen) {
            /* progress, or a peer newly watched: the stall clock starts again (set-up before
             * the first iteration is not a stall) */
            last_progress = p;
            last_change = now;
            watch_gen = gen;
        }
        if (sv_peer_failed && *sv_peer_failed)
            die_async(EXIT_FAIL, "%s; nothing was written",
                      sv_peer_errmsg && *sv_peer_errmsg ? sv_peer_errmsg : "the peer failed");
        pthread_mutex_lock(&sv_lock);
        if (sv_peer > 0 && !sv_peer_reaped) {
            int st;
            pid_t r = waitpid(sv_peer, &st, WNOHANG);
            if (r == sv_peer) {
                sv_peer_reaped = 1;
                sv_peer_status = st;
                int normal = WIFEXITED(st) && WEXITSTATUS(st) == 0;
                if (!normal) {
                    pthread_mutex_unlock(&sv_lock);
                    if (sv_peer_errmsg && *sv_peer_errmsg)
                        die_async(EXIT_FAIL, "%s; nothing was written", sv_peer_errmsg);
                    if (WIFSIGNALED(st))
                        die_async(EXIT_FAIL, "the peer process died (killed by signal %d) "
                                  "after %llu iterations; nothing was written",
                                  WTERMSIG(st), (unsigned long long)p);
                    die_async(EXIT_FAIL, "the peer process exited with status %d after %llu "
                              "iterations; nothing was written",
                              WEXITSTATUS(st), (unsigned long long)p);
                }
            }
        }
        double stall = sv_stall;
        pthread_mutex_unlock(&sv_lock);
        if (stall > 0 && sv_cfg && p < sv_cfg->total && now - last_change > stall)
            die_async(EXIT_FAIL, "the peer stalled: no round trip completed in %.1f s "
                      "(after %llu iterations); nothing was written", stall,
                      (unsigned long long)p);
        if (sv_cfg && sv_cfg->progress_fd >= 0 && now - last_report >= 0.25) {
            char line[64];
            int len = snprintf(line, sizeof line, "progress %llu %llu\n",
                               (unsigned long long)p, (unsigned long long)sv_cfg->total);
            if (write(sv_cfg->progress_fd, line, (size_t)len) < 0) sv_cfg->progress_fd = -1;
            last_report = now;
        }
    }
    return NULL;
}

void supervisor_start(struct supervisor *sv) {
    sv_cfg = sv;
    sv_quit = 0;
    if (pthread_create(&sv_thread, NULL, sv_main, NULL) != 0)
        die(EXIT_FAIL, "cannot start the supervisor thread");
    /* Return only once the thread runs: a fork() while its start-up is still under way
     * would hand the child whatever lock that start-up held at the instant (seen with
     * AddressSanitizer's allocator: a forked peer hung on its first malloc in a new thread). */
    pthread_mutex_lock(&sv_start_lock);
    while (!sv_started) pthread_cond_wait(&sv_start_cv, &sv_start_lock);
    pthread_mutex_unlock(&sv_start_lock);
    sv_running = 1;
}

void supervisor_peer_error(volatile int *failed, char *errmsg) {
    sv_peer_failed = failed;
    sv_peer_errmsg = errmsg;
}

void supervisor_watch_peer(pid_t pid, double stall_timeout_s) {
    pthread_mutex_lock(&sv_lock);
    sv_peer = pid;
    sv_peer_reaped = 0;
    sv_stall = stall_timeout_s;
    __atomic_add_fetch(&sv_watch_gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sv_lock);
}

int supervisor_unwatch_peer(int *status) {
    pthread_mutex_lock(&sv_lock);
    int reaped = sv_peer_reaped;
    if (status) *status = sv_peer_status;
    sv_peer = 0;
    sv_stall = 0;
    pthread_mutex_unlock(&sv_lock);
    return reaped;
}

void supervisor_stop(void) {
    if (!sv_running) return;
    if (sv_cfg && sv_cfg->progress_fd >= 0 && sv_cfg->progress) {
        char line[64];
        int len = snprintf(line, sizeof line, "progress %llu %llu\n",
                           (unsigned long long)(sv_cfg->progress_base + *sv_cfg->progress),
                           (unsigned long long)sv_cfg->total);
        if (write(sv_cfg->progress_fd, line, (size_t)len) < 0) {
        }
    }
    sv_quit = 1;
    pthread_kill(sv_thread, SV_WAKE); /* blocked everywhere: only its wait takes it */
    pthread_join(sv_thread, NULL);
    sv_running = 0;
}
