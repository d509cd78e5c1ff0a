/* latscope-probe: the supervisor thread: the user's signals, progress, peers' death and stalls. */
#include "core/supervisor.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/probe.h"

volatile sig_atomic_t g_stop = 0;

/* ---------------------------------------------------------------- supervisor */

static struct supervisor *sv_cfg;
static pthread_t sv_thread;
static int sv_running = 0;
static volatile int sv_quit = 0;
static pthread_mutex_t sv_lock = PTHREAD_MUTEX_INITIALIZER;
/* the watched peers (under sv_lock): a process (pid > 0) or a thread (pid 0) */
struct sv_peer {
    int used;
    pid_t pid;
    int reaped, status;
    double stall;
};
static struct sv_peer sv_peers[SV_MAX_PEERS];
static unsigned sv_watch_gen = 0; /* bumped when a peer starts being watched */
/* where peers report their own failure (set before the peers start, read by the thread) */
static struct {
    volatile int *failed;
    char *errmsg;
} sv_errs[SV_MAX_PEERS];
static int sv_nerrs = 0;
/* counters whose change is progress to the stall watch (an arms run's arms) */
#define SV_MAX_ACTIVITY 16
static volatile uint64_t *sv_activity[SV_MAX_ACTIVITY];
static int sv_nactivity = 0;

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
        const char *unit = sv_cfg && sv_cfg->progress_unit ? sv_cfg->progress_unit : "iterations";
        /* the stall watch's progress: the reported one and every activity counter */
        uint64_t act = p;
        int nact = __atomic_load_n(&sv_nactivity, __ATOMIC_ACQUIRE);
        for (int k = 0; k < nact; k++) act += *sv_activity[k];
        unsigned gen = __atomic_load_n(&sv_watch_gen, __ATOMIC_ACQUIRE);
        if (act != last_progress || gen != watch_gen) {
            /* progress, or a peer newly watched: the stall clock starts again (set-up before
             * the first iteration is not a stall) */
            last_progress = act;
            last_change = now;
            watch_gen = gen;
        }
        int nerrs = __atomic_load_n(&sv_nerrs, __ATOMIC_ACQUIRE);
        for (int k = 0; k < nerrs; k++)
            if (*sv_errs[k].failed)
                die_async(EXIT_FAIL, "%s; nothing was written",
                          *sv_errs[k].errmsg ? sv_errs[k].errmsg : "the peer failed");
        double stall = 0;
        pthread_mutex_lock(&sv_lock);
        for (int k = 0; k < SV_MAX_PEERS; k++) {
            struct sv_peer *pe = &sv_peers[k];
            if (!pe->used) continue;
            if (pe->stall > 0 && (stall == 0 || pe->stall < stall)) stall = pe->stall;
            if (pe->pid <= 0 || pe->reaped) continue;
            int st;
            pid_t r = waitpid(pe->pid, &st, WNOHANG);
            if (r != pe->pid) continue;
            pe->reaped = 1;
            pe->status = st;
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
            pthread_mutex_unlock(&sv_lock);
            /* the peer's own word first (any peer's: a process that failed says why) */
            for (int e = 0; e < nerrs; e++)
                if (*sv_errs[e].errmsg)
                    die_async(EXIT_FAIL, "%s; nothing was written", sv_errs[e].errmsg);
            if (WIFSIGNALED(st))
                die_async(EXIT_FAIL, "the peer process died (killed by signal %d) after %llu "
                          "%s; nothing was written", WTERMSIG(st), (unsigned long long)p,
                          unit);
            die_async(EXIT_FAIL, "the peer process exited with status %d after %llu %s; "
                      "nothing was written", WEXITSTATUS(st), (unsigned long long)p, unit);
        }
        pthread_mutex_unlock(&sv_lock);
        if (stall > 0 && sv_cfg && p < sv_cfg->total && now - last_change > stall)
            die_async(EXIT_FAIL, "the peer stalled: no round trip completed in %.1f s "
                      "(after %llu %s); nothing was written", stall, (unsigned long long)p,
                      unit);
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
    /* no peer, failure flag or activity counter of an earlier run (a worker's parent) */
    memset(sv_peers, 0, sizeof sv_peers);
    sv_nerrs = 0;
    sv_nactivity = 0;
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
    pthread_mutex_lock(&sv_lock);
    int k = sv_nerrs;
    if (k >= SV_MAX_PEERS) {
        pthread_mutex_unlock(&sv_lock);
        die(EXIT_FAIL, "internal error: more than %d peers", SV_MAX_PEERS);
    }
    sv_errs[k].failed = failed;
    sv_errs[k].errmsg = errmsg;
    __atomic_store_n(&sv_nerrs, k + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sv_lock);
}

void supervisor_add_activity(volatile uint64_t *counter) {
    pthread_mutex_lock(&sv_lock);
    int k = sv_nactivity;
    if (k >= SV_MAX_ACTIVITY) {
        pthread_mutex_unlock(&sv_lock);
        die(EXIT_FAIL, "internal error: more than %d activity counters", SV_MAX_ACTIVITY);
    }
    sv_activity[k] = counter;
    __atomic_store_n(&sv_nactivity, k + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sv_lock);
}

int supervisor_watch_peer(pid_t pid, double stall_timeout_s) {
    pthread_mutex_lock(&sv_lock);
    int h = -1;
    for (int k = 0; k < SV_MAX_PEERS && h < 0; k++)
        if (!sv_peers[k].used) h = k;
    if (h < 0) {
        pthread_mutex_unlock(&sv_lock);
        die(EXIT_FAIL, "internal error: more than %d peers", SV_MAX_PEERS);
    }
    sv_peers[h] = (struct sv_peer){.used = 1, .pid = pid, .stall = stall_timeout_s};
    __atomic_add_fetch(&sv_watch_gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sv_lock);
    return h;
}

int supervisor_unwatch_peer(int handle, int *status) {
    if (handle < 0 || handle >= SV_MAX_PEERS) return 0;
    pthread_mutex_lock(&sv_lock);
    int reaped = sv_peers[handle].reaped;
    if (status) *status = sv_peers[handle].status;
    sv_peers[handle].used = 0;
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
