/* latscope-probe on Windows: the supervisor (core/supervisor.h).  Ctrl-C, Ctrl-Break and the
 * console's closing stop a run as SIGINT/SIGTERM do on POSIX systems (the console handler sets
 * g_stop; the measuring thread checks it between iterations, and a thread blocked for more
 * than a second is ended from here, with the clean-up).  A thread reports progress on
 * --progress-fd and watches the peer process (its handle) for death and stalls. */
#include "core/supervisor.h"

#include <stdio.h>
#include <unistd.h>

#include "core/probe.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

volatile sig_atomic_t g_stop = 0;

static struct supervisor *sv_cfg;
static HANDLE sv_thread, sv_quit_ev;
static CRITICAL_SECTION sv_lock;
static HANDLE sv_peer;          /* the watched process, or NULL */
static int sv_peer_done, sv_peer_code;
static double sv_stall;
static volatile unsigned sv_watch_gen;
static volatile int *sv_peer_failed;
static char *sv_peer_errmsg;

static BOOL WINAPI on_console(DWORD type) {
    if (type == CTRL_C_EVENT || type == CTRL_BREAK_EVENT || type == CTRL_CLOSE_EVENT) {
        g_stop = type == CTRL_C_EVENT ? SIGINT : SIGTERM;
        return TRUE;
    }
    return FALSE;
}

sigset_t stop_signals(void) { return 0; }

void signals_block_all(void) {
    InitializeCriticalSection(&sv_lock);
    SetConsoleCtrlHandler(on_console, TRUE);
}

static double mono_s(void) { return (double)GetTickCount64() / 1000.0; }

static void report(uint64_t p) {
    if (!sv_cfg || sv_cfg->progress_fd < 0) return;
    char line[64];
    int len = snprintf(line, sizeof line, "progress %llu %llu\n", (unsigned long long)p,
                       (unsigned long long)sv_cfg->total);
    if (write(sv_cfg->progress_fd, line, (unsigned)len) < 0) sv_cfg->progress_fd = -1;
}

static DWORD WINAPI sv_main(void *arg) {
    (void)arg;
    double last_report = 0, stop_at = 0, last_change = mono_s();
    uint64_t last_progress = (uint64_t)-1;
    unsigned watch_gen = 0;
    while (WaitForSingleObject(sv_quit_ev, 50) == WAIT_TIMEOUT) {
        double now = mono_s();
        if (g_stop && !stop_at) stop_at = now;
        if (g_stop && now - stop_at > 1.0)
            die_async(EXIT_INTERRUPTED, "interrupted; nothing was written");
        uint64_t p = sv_cfg && sv_cfg->progress ? sv_cfg->progress_base + *sv_cfg->progress : 0;
        if (p != last_progress || sv_watch_gen != watch_gen) {
            last_progress = p;
            last_change = now;
            watch_gen = sv_watch_gen;
        }
        if (sv_peer_failed && *sv_peer_failed)
            die_async(EXIT_FAIL, "%s; nothing was written",
                      sv_peer_errmsg && *sv_peer_errmsg ? sv_peer_errmsg : "the peer failed");
        EnterCriticalSection(&sv_lock);
        if (sv_peer && !sv_peer_done && WaitForSingleObject(sv_peer, 0) == WAIT_OBJECT_0) {
            DWORD code = 1;
            GetExitCodeProcess(sv_peer, &code);
            sv_peer_done = 1;
            sv_peer_code = (int)code;
            if (code != 0) {
                LeaveCriticalSection(&sv_lock);
                if (sv_peer_errmsg && *sv_peer_errmsg)
                    die_async(EXIT_FAIL, "%s; nothing was written", sv_peer_errmsg);
                die_async(EXIT_FAIL, "the peer process exited with status %lu after %llu "
                          "iterations; nothing was written", code, (unsigned long long)p);
            }
        }
        double stall = sv_stall;
        LeaveCriticalSection(&sv_lock);
        if (stall > 0 && sv_cfg && p < sv_cfg->total && now - last_change > stall)
            die_async(EXIT_FAIL, "the peer stalled: no round trip completed in %.1f s "
                      "(after %llu iterations); nothing was written", stall,
                      (unsigned long long)p);
        if (now - last_report >= 0.25) {
            report(p);
            last_report = now;
        }
    }
    return 0;
}

void supervisor_start(struct supervisor *sv) {
    sv_cfg = sv;
    sv_quit_ev = CreateEventA(NULL, TRUE, FALSE, NULL);
    sv_thread = sv_quit_ev ? CreateThread(NULL, 0, sv_main, NULL, 0, NULL) : NULL;
    if (!sv_thread) die(EXIT_FAIL, "cannot start the supervisor thread");
}

void supervisor_peer_error(volatile int *failed, char *errmsg) {
    sv_peer_failed = failed;
    sv_peer_errmsg = errmsg;
}

/* The Windows probe runs no arms: their counters are never watched here. */
void supervisor_add_activity(volatile uint64_t *counter) { (void)counter; }

/* pid: the peer process (0: a thread, watched for stalls only).  One peer at a time here
 * (the Windows probe runs no arms): the handle is always 0. */
int supervisor_watch_peer(pid_t pid, double stall_timeout_s) {
    EnterCriticalSection(&sv_lock);
    sv_peer = pid ? OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE,
                                (DWORD)pid)
                  : NULL;
    sv_peer_done = 0;
    sv_stall = stall_timeout_s;
    sv_watch_gen++;
    LeaveCriticalSection(&sv_lock);
    return 0;
}

int supervisor_unwatch_peer(int handle, int *status) {
    (void)handle;
    EnterCriticalSection(&sv_lock);
    int done = sv_peer_done;
    if (status) *status = sv_peer_code;
    if (sv_peer) CloseHandle(sv_peer);
    sv_peer = NULL;
    sv_stall = 0;
    LeaveCriticalSection(&sv_lock);
    return done;
}

void supervisor_stop(void) {
    if (!sv_thread) return;
    if (sv_cfg && sv_cfg->progress) report(sv_cfg->progress_base + *sv_cfg->progress);
    SetEvent(sv_quit_ev);
    WaitForSingleObject(sv_thread, INFINITE);
    CloseHandle(sv_thread);
    CloseHandle(sv_quit_ev);
    sv_thread = NULL;
}
