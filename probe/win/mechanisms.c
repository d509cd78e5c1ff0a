/* latscope-probe on Windows: the ping-pong mechanisms (win/pingpong.c drives them): anonymous
 * pipes, events and semaphores, between two threads or two processes.  Their handles live in
 * the shared scratch area (struct win_objs), created inheritable, so that the responder
 * process, which inherits them, finds them under the same values. */
#include <stdio.h>
#include <string.h>

#include "pingpong/pingpong.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

struct win_objs {
    HANDLE h[4];
};
static struct win_objs *objs(struct pp_ctx *pp) { return (struct win_objs *)pp->sh->scratch; }

static void close_h(HANDLE *h) {
    if (*h) {
        CloseHandle(*h);
        *h = NULL;
    }
}

/* After the run only: on an error path a thread may still wait in ReadFile or
 * WaitForSingleObject on a handle, and closing a synchronous pipe handle under a blocked
 * read can block (teardown must never block): the process is ending, its handles close with
 * it, and the responder process is ended by the driver's clean-up. */
static void objs_teardown(struct pp_ctx *pp) {
    if (!pp->sh || !pp->finished) return;
    for (int i = 0; i < 4; i++) close_h(&objs(pp)->h[i]);
}

static SECURITY_ATTRIBUTES inherit = {sizeof(SECURITY_ATTRIBUTES), NULL, TRUE};

/* ------------------------------------------------------------------ pipe
 * h[0] read / h[1] write: initiator -> responder; h[2] read / h[3] write: back. */
static void pipe_setup(struct pp_ctx *pp) {
    struct win_objs *o = objs(pp);
    DWORD buf = (DWORD)pp->size < 4096 ? 4096 : (DWORD)pp->size;
    if (!CreatePipe(&o->h[0], &o->h[1], &inherit, buf) ||
        !CreatePipe(&o->h[2], &o->h[3], &inherit, buf))
        die(EXIT_FAIL, "CreatePipe failed (error %lu)", GetLastError());
}

/* Between processes each side closes the ends it does not use, so that a dead peer breaks
 * the pipe (the initiator's copies of the responder's ends, after the responder started). */
static void pipe_side_init(struct pp_ctx *pp, int side) {
    if (!pp->processes) return;
    struct win_objs *o = objs(pp);
    HANDLE mine[2] = {side == 0 ? o->h[0] : o->h[1], side == 0 ? o->h[3] : o->h[2]};
    for (int i = 0; i < 2; i++) CloseHandle(mine[i]);
}

static int pipe_send(struct pp_ctx *pp, int side) {
    HANDLE h = objs(pp)->h[side == 0 ? 1 : 3];
    const unsigned char *p = pp->buf[side];
    size_t left = pp->size;
    while (left) {
        DWORD w = 0;
        if (!WriteFile(h, p, (DWORD)left, &w, NULL))
            return pp_err(pp, side, "WriteFile on the pipe failed (error %lu)", GetLastError());
        p += w;
        left -= w;
    }
    return 0;
}

static int pipe_recv(struct pp_ctx *pp, int side) {
    HANDLE h = objs(pp)->h[side == 0 ? 2 : 0];
    unsigned char *p = pp->buf[side];
    size_t left = pp->size;
    while (left) {
        DWORD r = 0;
        if (!ReadFile(h, p, (DWORD)left, &r, NULL) || r == 0) {
            DWORD e = GetLastError();
            return pp_err(pp, side, e == ERROR_BROKEN_PIPE ? "pipe closed by the other side"
                                                           : "ReadFile on the pipe failed "
                                                             "(error %lu)", e);
        }
        p += r;
        left -= r;
    }
    return 0;
}

/* The pipe's ends in the initiator after the run (its own; the responder's are closed). */
static void pipe_teardown(struct pp_ctx *pp) {
    if (!pp->sh || !pp->finished) return; /* as objs_teardown */
    struct win_objs *o = objs(pp);
    if (pp->processes) {
        close_h(&o->h[1]);
        close_h(&o->h[2]);
        o->h[0] = o->h[3] = NULL; /* closed in side_init */
    } else {
        objs_teardown(pp);
    }
}

static const struct pp_mech mech_pipe = {
    .name = "pipe",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    .setup = pipe_setup,
    .side_init = pipe_side_init,
    .send = pipe_send,
    .recv = pipe_recv,
    .teardown = pipe_teardown,
    .timed = "rtt: WriteFile(size bytes) to anonymous pipe A, ReadFile(size bytes) from pipe "
             "B, with the responder's ReadFile from A and WriteFile to B in between",
};

static const struct scenario pipe_scenarios[] = {
    {"pipe", NULL, 0, 0, 1, "anonymous pipe ping-pong between two processes, unpinned"},
    {"pipe-threads", "mode=threads", 0, 0, 1, "between two threads of one process"},
};

PINGPONG_BENCH(pipe, mech_pipe,
               "anonymous pipe ping-pong between two processes or threads (CreatePipe, "
               "WriteFile, ReadFile)",
               .scenarios = pipe_scenarios, .nscenarios = COUNT(pipe_scenarios));

/* ------------------------------------------------------------------ event, semaphore
 * h[0]: the responder's object (the initiator sets it), h[1]: the initiator's. */
static void event_setup(struct pp_ctx *pp) {
    struct win_objs *o = objs(pp);
    for (int i = 0; i < 2; i++)
        if (!(o->h[i] = CreateEventA(&inherit, FALSE, FALSE, NULL)))
            die(EXIT_FAIL, "CreateEvent failed (error %lu)", GetLastError());
}

static void sem_setup(struct pp_ctx *pp) {
    struct win_objs *o = objs(pp);
    for (int i = 0; i < 2; i++)
        if (!(o->h[i] = CreateSemaphoreA(&inherit, 0, 1, NULL)))
            die(EXIT_FAIL, "CreateSemaphore failed (error %lu)", GetLastError());
}

static int event_send(struct pp_ctx *pp, int side) {
    if (!SetEvent(objs(pp)->h[side == 0 ? 0 : 1]))
        return pp_err(pp, side, "SetEvent failed (error %lu)", GetLastError());
    return 0;
}

static int sem_send(struct pp_ctx *pp, int side) {
    if (!ReleaseSemaphore(objs(pp)->h[side == 0 ? 0 : 1], 1, NULL))
        return pp_err(pp, side, "ReleaseSemaphore failed (error %lu)", GetLastError());
    return 0;
}

static int wait_recv(struct pp_ctx *pp, int side) {
    if (WaitForSingleObject(objs(pp)->h[side == 0 ? 1 : 0], INFINITE) != WAIT_OBJECT_0)
        return pp_err(pp, side, "WaitForSingleObject failed (error %lu)", GetLastError());
    return 0;
}

static const struct pp_mech mech_event = {
    .name = "event",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .payload = 0,
    .setup = event_setup,
    .send = event_send,
    .recv = wait_recv,
    .teardown = objs_teardown,
    .timed = "rtt: SetEvent on the responder's auto-reset event, WaitForSingleObject on the "
             "initiator's, with the responder's wait and SetEvent in between",
};

static const struct pp_mech mech_semaphore = {
    .name = "semaphore",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .payload = 0,
    .setup = sem_setup,
    .send = sem_send,
    .recv = wait_recv,
    .teardown = objs_teardown,
    .timed = "rtt: ReleaseSemaphore(1) on the responder's semaphore, WaitForSingleObject on "
             "the initiator's, with the responder's wait and release in between",
};

static const struct scenario event_scenarios[] = {
    {"event", "mode=threads", 0, 0, 1, "auto-reset event hand-off between two threads"},
    {"event-processes", NULL, 0, 0, 1, "between two processes (inherited handles)"},
};
static const struct scenario sem_scenarios[] = {
    {"semaphore", "mode=threads", 0, 0, 1, "semaphore hand-off between two threads"},
    {"semaphore-processes", NULL, 0, 0, 1, "between two processes (inherited handles)"},
};

PINGPONG_BENCH_NOSIZE(event, mech_event,
                      "auto-reset event hand-off between two threads or processes "
                      "(SetEvent, WaitForSingleObject)",
                      .scenarios = event_scenarios, .nscenarios = COUNT(event_scenarios));
PINGPONG_BENCH_NOSIZE(semaphore, mech_semaphore,
                      "semaphore hand-off between two threads or processes "
                      "(ReleaseSemaphore, WaitForSingleObject)",
                      .scenarios = sem_scenarios, .nscenarios = COUNT(sem_scenarios));
