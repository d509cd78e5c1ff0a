/* latscope-probe on Windows: the ping-pong driver's own part (pingpong.h; pingpong/driver.c
 * is the POSIX one; the sequence, the initiator's side, the columns and the metadata are
 * pingpong/common.c's): the shared section, the responder started and waited for.  The
 * responder is a thread, or a process: the probe itself, started with CreateProcess and the
 * run's handles inherited (the shared section, the mechanism's objects), which finds its part
 * of the run at the start of the section (struct win_pp_hdr) and runs from a constructor,
 * before main.  The mechanisms (win/mechanisms.c) keep their handles in the shared scratch
 * area, so the responder process sees the same values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#define RESPONDER_ARG "--pingpong-responder"

/* The run as the responder process needs it. */
struct win_pp_hdr {
    char bench[64];
    long long n, warmup;
    unsigned long long size;
    int cpu1, clock, prime;
    unsigned long parent_pid;
};
#define HDR_BYTES ((sizeof(struct win_pp_hdr) + 63) & ~(size_t)63)

static HANDLE g_section; /* the shared section (inheritable) */

void pp_close(struct pp_ctx *pp, int i) {
    if (pp->fd[i] >= 0) {
        close(pp->fd[i]);
        pp->fd[i] = -1;
    }
}

void pp_private_dir(struct pp_ctx *pp, char *dir, size_t len) {
    (void)pp, (void)dir, (void)len;
    die(EXIT_FAIL, "internal error: no private directories on Windows");
}

/* ---------------------------------------------------------------- shared by both sides */

static void alloc_bufs(struct pp_ctx *pp) {
    for (int s = 0; s < 2; s++) {
        pp->buf[s] = xcalloc(1, pp->size + 64);
        memset(pp->buf[s], 's' + s, pp->size);
    }
}

/* ---------------------------------------------------------------- the responder */

static DWORD WINAPI responder_thread(void *arg) {
    struct pp_ctx *pp = arg;
    if (pp_responder_start(pp) == 0) pp_responder_loop(pp);
    return 0;
}

/* The responder process ends with the probe: a thread waits for the parent to end. */
static DWORD WINAPI watch_parent(void *arg) {
    WaitForSingleObject((HANDLE)arg, INFINITE);
    ExitProcess(EXIT_FAIL);
}

/* The probe started as a responder process ("latscope-probe --pingpong-responder SECTION"):
 * run the responder's part and exit, before main. */
__attribute__((constructor)) static void responder_process(void) {
    if (__argc != 3 || strcmp(__argv[1], RESPONDER_ARG)) return;
    HANDLE section = (HANDLE)(uintptr_t)strtoull(__argv[2], NULL, 10);
    unsigned char *base = MapViewOfFile(section, FILE_MAP_ALL_ACCESS, 0, 0, 0);
    if (!base) ExitProcess(EXIT_FAIL);
    struct win_pp_hdr *h = (struct win_pp_hdr *)base;
    HANDLE parent = OpenProcess(SYNCHRONIZE, FALSE, h->parent_pid);
    if (!parent || !CreateThread(NULL, 0, watch_parent, parent, 0, NULL)) ExitProcess(EXIT_FAIL);
    const struct bench *b = find_bench(h->bench);
    if (!b || !b->member) ExitProcess(EXIT_FAIL);
    static struct runctx run;
    static struct pp_ctx pp;
    run.b = b;
    run.n = h->n;
    run.warmup = h->warmup;
    g_clock = (enum clock_kind)h->clock;
    pp.m = b->member;
    pp.run = &run;
    pp.processes = 1;
    pp.cpu[0] = -1;
    pp.cpu[1] = h->cpu1;
    pp.size = (size_t)h->size;
    pp.sh = (struct pp_shared *)(base + HDR_BYTES);
    for (int i = 0; i < 8; i++) pp.fd[i] = -1;
    alloc_bufs(&pp);
    if (pp_responder_start(&pp) == 0) pp_responder_loop(&pp);
    ExitProcess(pp.sh->peer_failed ? EXIT_FAIL : EXIT_OK);
}

/* ---------------------------------------------------------------- the initiator */

/* The shared section: the responder's header, then struct pp_shared with its recv_at[]. */
void pp_driver_share(struct pp_ctx *pp) {
    size_t bytes = HDR_BYTES + sizeof(struct pp_shared) + (size_t)pp->ring * sizeof(int64_t);
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    g_section = CreateFileMappingA(INVALID_HANDLE_VALUE, &sa, PAGE_READWRITE,
                                   (DWORD)((uint64_t)bytes >> 32), (DWORD)bytes, NULL);
    unsigned char *base = g_section ? MapViewOfFile(g_section, FILE_MAP_ALL_ACCESS, 0, 0, 0)
                                    : NULL;
    if (!base) die(EXIT_FAIL, "cannot map %zu bytes of shared memory", bytes);
    memset(base, 0, bytes);
    struct win_pp_hdr *h = (struct win_pp_hdr *)base;
    snprintf(h->bench, sizeof h->bench, "%s", pp->run->b->name);
    h->n = pp->run->n;
    h->warmup = pp->run->warmup;
    h->size = pp->size;
    h->cpu1 = pp->cpu[1];
    h->clock = (int)g_clock;
    h->parent_pid = GetCurrentProcessId();
    pp->sh = (struct pp_shared *)(base + HDR_BYTES);
    pp->sh_bytes = bytes;
    alloc_bufs(pp);
    supervisor_peer_error(&pp->sh->peer_failed, pp->sh->errmsg);
}

static HANDLE g_child, g_thread; /* the responder: a process, or a thread */

static void kill_child(void *arg) {
    (void)arg;
    if (g_child) {
        TerminateProcess(g_child, EXIT_FAIL);
        WaitForSingleObject(g_child, INFINITE);
    }
}

void pp_driver_start_responder(struct pp_ctx *pp) {
    if (!pp->processes) {
        pp->pid[1] = pp->pid[0];
        g_thread = CreateThread(NULL, 0, responder_thread, pp, 0, NULL);
        if (!g_thread) die(EXIT_FAIL, "cannot start the responder thread");
        pp->watch = supervisor_watch_peer(0, pp->run->peer_timeout);
        return;
    }
    char exe[MAX_PATH], cmd[MAX_PATH + 64];
    if (!GetModuleFileNameA(NULL, exe, sizeof exe))
        die(EXIT_FAIL, "cannot find the probe's own program file");
    snprintf(cmd, sizeof cmd, "\"%s\" %s %llu", exe, RESPONDER_ARG,
             (unsigned long long)(uintptr_t)g_section);
    STARTUPINFOA si = {.cb = sizeof si};
    PROCESS_INFORMATION pi;
    if (!CreateProcessA(exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi))
        die(EXIT_FAIL, "cannot start the responder process (CreateProcess error %lu)",
            GetLastError());
    CloseHandle(pi.hThread);
    g_child = pi.hProcess;
    pp->pid[1] = (pid_t)pi.dwProcessId;
    pp->kill_handle = cleanup_push(kill_child, NULL);
    pp->watch = supervisor_watch_peer(pp->pid[1], pp->run->peer_timeout);
}

void pp_driver_join_responder(struct pp_ctx *pp) {
    if (pp->processes) {
        int code = 0;
        if (!supervisor_unwatch_peer(pp->watch, &code)) {
            DWORD c = 1;
            WaitForSingleObject(g_child, INFINITE);
            GetExitCodeProcess(g_child, &c);
            code = (int)c;
        }
        cleanup_cancel(pp->kill_handle);
        CloseHandle(g_child);
        g_child = NULL;
        if (code != 0)
            die(EXIT_FAIL, "%s", pp->sh->errmsg[0] ? pp->sh->errmsg : "the peer failed");
    } else {
        supervisor_unwatch_peer(pp->watch, NULL);
        WaitForSingleObject(g_thread, INFINITE);
        CloseHandle(g_thread);
        g_thread = NULL;
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
    }
}

const char *pp_driver_responder(const struct pp_ctx *pp) {
    return pp->processes ? "a process: the probe itself, started with CreateProcess, the "
                           "handles inherited"
                         : "a thread of the probe (CreateThread)";
}
