/* latscope-probe on Windows: the ping-pong driver (pingpong.h; pingpong/driver.c is the POSIX
 * one).  The same sequence, columns and metadata: the initiator times the round trip, the
 * responder reads the clock after each receive (one-way from the shared clock).  The
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
    if (!b || !b->mech) ExitProcess(EXIT_FAIL);
    static struct runctx run;
    static struct pp_ctx pp;
    run.b = b;
    run.n = h->n;
    run.warmup = h->warmup;
    g_clock = (enum clock_kind)h->clock;
    pp.m = b->mech;
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

static void teardown_cb(void *arg) {
    struct pp_ctx *pp = arg;
    if (pp->m->teardown) pp->m->teardown(pp);
}

/* The shared section: the responder's header, then struct pp_shared with its recv_at[]. */
static void pp_share(struct pp_ctx *pp) {
    size_t bytes = HDR_BYTES + sizeof(struct pp_shared) + (size_t)pp->run->n * sizeof(int64_t);
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

static void start_responder(struct pp_ctx *pp) {
    if (!pp->processes) {
        pp->pid[1] = pp->pid[0];
        g_thread = CreateThread(NULL, 0, responder_thread, pp, 0, NULL);
        if (!g_thread) die(EXIT_FAIL, "cannot start the responder thread");
        supervisor_watch_peer(0, pp->run->peer_timeout);
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
    supervisor_watch_peer(pp->pid[1], pp->run->peer_timeout);
}

__attribute__((noreturn)) static void initiator_failed(struct pp_ctx *pp) {
    if (pp->processes && !pp->sh->peer_failed) Sleep(200);
    if (pp->sh->peer_failed) die(EXIT_FAIL, "%s; nothing was written", pp->sh->errmsg);
    die(EXIT_FAIL, "%s; nothing was written", pp->err[0]);
}

static inline int64_t timed_round_trip(struct pp_ctx *pp, uint64_t *start) {
    uint64_t a = clk_start();
    inject_delay();
    if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
    uint64_t b = clk_end();
    *start = a;
    return (int64_t)(b - a);
}

static void measure(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    uint64_t n = (uint64_t)ctx->n, warm = (uint64_t)ctx->warmup, a, t0 = 0;
    int64_t *rt = ctx->cols[0].data, *ts = ctx->t_start;
    for (int i = 0; i < pp->m->prime_round_trips; i++)
        if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
    for (uint64_t i = 0; i < warm; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        rt[0] = timed_round_trip(pp, &a);
        progress_set(ctx, i + 1);
    }
    for (uint64_t i = 0; i < n; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        rt[i] = timed_round_trip(pp, &a);
        if (i == 0) t0 = a;
        ts[i] = (int64_t)(a - t0);
        progress_set(ctx, warm + i + 1);
    }
    if (pp->m->send(pp, 0) || pp->m->recv(pp, 0)) initiator_failed(pp);
    ctx->t0 = t0;
    ctx->nroles = 2;
    ctx->roles[0].role = "initiator";
    ctx->roles[1].role = "responder";
}

static void join_responder(struct pp_ctx *pp) {
    if (pp->processes) {
        int code = 0;
        if (!supervisor_unwatch_peer(&code)) {
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
        supervisor_unwatch_peer(NULL);
        WaitForSingleObject(g_thread, INFINITE);
        CloseHandle(g_thread);
        g_thread = NULL;
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
    }
}

static void meta(struct pp_ctx *pp) {
    const struct pp_mech *m = pp->m;
    struct jbuf *j = &pp->run->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "mechanism", m->name);
    jb_str(j, "mode", pp->processes ? "processes" : "threads");
    jb_arr(j, "cpus");
    jb_int(j, NULL, pp->cpu[0]);
    jb_int(j, NULL, pp->cpu[1]);
    jb_end_arr(j);
    jb_str(j, "placement", placement_name(placement_of(pp->cpu)));
    jb_int(j, "message_bytes", (long long)pp->size);
    jb_bool(j, "message_size_parameter", m->has_size);
    jb_bool(j, "blocking", m->blocking);
    jb_int(j, "priming_round_trips", m->prime_round_trips);
    jb_str(j, "timed_region", m->timed);
    jb_str(j, "timed_region_frame",
           "rtt: from the initiator's start read of the clock to its end read: the "
           "mechanism's send and receive (above) and, on the responder's side between its "
           "receive and its answer, one read of the clock kept as its receive time "
           "(responder_read_ns).  Outside every timed region: the initiator's stores of the "
           "sample, its progress counter and its check for a stop request.  oneway: from the "
           "initiator's start read to the responder's read right after its receive returned "
           "(the subtraction is done after the run)");
    jb_num(j, "responder_read_ns", pp->stamp_ns);
    jb_str(j, "responder",
           pp->processes ? "a process: the probe itself, started with CreateProcess, the "
                           "handles inherited"
                         : "a thread of the probe (CreateThread)");
    jb_obj(j, "latencies");
    jb_str(j, "rtt", "round trip (initiator -> responder -> initiator), timed by the initiator");
    jb_str(j, "oneway", "one-way initiator -> responder from the shared clock; "
                        "the rtt/2 estimate is derived by the lab");
    jb_end_obj(j);
    char cs[256];
    snprintf(cs, sizeof cs, "rtt: 2, oneway: 1 (each direction wakes a waiting receiver)");
    jb_str(j, "context_switches", cs);
    jb_end_obj(j);
}

void pingpong_run(struct runctx *ctx, const struct pp_mech *m) {
    struct pp_ctx *pp = xcalloc(1, sizeof *pp);
    pp->m = m;
    pp->run = ctx;
    pp->processes = !strcmp(param(ctx, "mode")->s, "processes");
    pp->cpu[0] = param(ctx, "cpus")->cpu[0];
    pp->cpu[1] = param(ctx, "cpus")->cpu[1];
    pp->size = m->has_size ? (size_t)param(ctx, "size")->i : m->payload;
    for (int i = 0; i < 8; i++) pp->fd[i] = -1;
    pp->kill_handle = -1;
    pp_share(pp);
    /* columns: a blocking receiver is woken once per direction */
    pp->way = m->switches_per_way > 0 ? m->switches_per_way : 1;
    add_column(ctx, "rtt", pp_columns[0].desc, "round_trip", 2 * pp->way);
    add_column(ctx, "oneway", pp_columns[1].desc, "one_way_shared_clock", pp->way);
    ctx->t_start = alloc_samples((size_t)ctx->n);
    ctx->preempt_expected = placement_of(pp->cpu) != PL_DIFFERENT_CPUS;
    pp->teardown_handle = cleanup_push(teardown_cb, pp);
    pp->pid[0] = getpid();
    if (m->setup) m->setup(pp);
    pin_or_die(pp->cpu[0]);
    pp->stamp_ns = clock_measure_stamp_ns(2001, &ctx->clk);
    start_responder(pp);
    if (m->side_init) m->side_init(pp, 0);
    if (pp->err[0][0]) die(EXIT_FAIL, "%s", pp->err[0]);
    pp_touch_side(pp, 0);
    measure(pp);
    join_responder(pp);
    for (long long k = 0; k < ctx->n; k++)
        ctx->cols[1].data[k] = pp->sh->recv_at[k] - (int64_t)ctx->t0 - ctx->t_start[k];
    meta(pp);
    pp->finished = 1;
    cleanup_now(pp->teardown_handle);
    free(pp->buf[0]);
    free(pp->buf[1]);
    free(pp);
}
