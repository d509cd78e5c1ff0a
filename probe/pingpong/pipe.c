/* latscope-probe: pipe and FIFO ping-pong (two pipes, one per direction). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

/* fd[0],fd[1]: initiator -> responder; fd[2],fd[3]: responder -> initiator */
static void pipe_setup(struct pp_ctx *pp) {
    if (pipe(&pp->fd[0]) || pipe(&pp->fd[2])) die(EXIT_FAIL, "pipe: %s", strerror(errno));
}

static void pipe_side_init(struct pp_ctx *pp, int side) {
    if (!pp->processes) return;
    /* Each process closes the ends it does not use, so a dead peer means EOF. */
    if (side == 0) {
        close(pp->fd[0]);
        close(pp->fd[3]);
        pp->fd[0] = pp->fd[3] = -1;
    } else {
        close(pp->fd[1]);
        close(pp->fd[2]);
        pp->fd[1] = pp->fd[2] = -1;
    }
}

static int pipe_send(struct pp_ctx *pp, int side) {
    int fd = side == 0 ? pp->fd[1] : pp->fd[3];
    if (write_full(fd, pp->buf[side], pp->size))
        return pp_err(pp, side, "pipe write failed: %s", strerror(errno));
    return 0;
}

static int pipe_recv(struct pp_ctx *pp, int side) {
    int fd = side == 0 ? pp->fd[2] : pp->fd[0];
    if (read_full(fd, pp->buf[side], pp->size))
        return pp_err(pp, side, errno == EPIPE ? "pipe closed by the other side (%s)"
                                               : "pipe read failed: %s",
                      strerror(errno));
    return 0;
}

static void pipe_teardown(struct pp_ctx *pp) {
    for (int i = 0; i < 4; i++) pp_close(pp, i);
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
    .timed = "rtt: write(size bytes) to pipe A, read(size bytes) from pipe B, with the "
             "responder's read from A and write to B in between",
};

/* in the quick plan: unpinned (as in the quick suite), and on one CPU and on two */
static const struct scenario pipe_scenarios[] = {
    {"pipe", NULL, 0, 0, 1, "pipe ping-pong between two processes, unpinned"},
    {"pipe-same-cpu", "cpus=0,0", 0, 0, 1, "both processes on CPU 0"},
    {"pipe-two-cpus", "cpus=0,1", 0, 0, 1, "initiator on CPU 0, responder on CPU 1"},
};

PINGPONG_BENCH(pipe, mech_pipe,
               "pipe ping-pong between two processes or threads (context switch cost)",
               .scenarios = pipe_scenarios, .nscenarios = COUNT(pipe_scenarios));

/* ------------------------------------------------------------------ fifo (named pipes)
 * Two FIFOs in a private directory, one per direction, with the same descriptor layout as
 * the pipes above: each side opens only its own ends (open blocks until the other side has
 * opened the other end).  Once both sides hold their descriptors the FIFOs and the directory
 * are removed, so nothing named exists during the measurement; the clean-up list removes
 * them on every other path. */
struct fifo_state {
    char dir[300];
    char path[2][320];
    int h[2]; /* clean-up handles of the two FIFOs */
};

static void fifo_remove(struct fifo_state *st) {
    for (int i = 0; i < 2; i++) {
        if (st->path[i][0]) {
            unlink(st->path[i]);
            cleanup_cancel(st->h[i]);
            st->path[i][0] = 0;
        }
    }
    if (st->dir[0]) {
        rmdir(st->dir); /* its own clean-up entry finds nothing left to do */
        st->dir[0] = 0;
    }
}

static void fifo_setup(struct pp_ctx *pp) {
    struct fifo_state *st = pp->state;
    pp_private_dir(pp, st->dir, sizeof st->dir);
    for (int i = 0; i < 2; i++) {
        snprintf(st->path[i], sizeof st->path[i], "%s/%s", st->dir,
                 i == 0 ? "to-responder" : "to-initiator");
        st->h[i] = cleanup_unlink(st->path[i]);
        if (mkfifo(st->path[i], 0600) != 0)
            die(EXIT_FAIL, "mkfifo %s: %s", st->path[i], strerror(errno));
    }
}

static void fifo_side_init(struct pp_ctx *pp, int side) {
    struct fifo_state *st = pp->state;
    /* Both sides open "to-responder" first, so neither waits for the other in a cycle. */
    int a = side == 0 ? 1 : 0, b = side == 0 ? 2 : 3;
    pp->fd[a] = open(st->path[0], (side == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (pp->fd[a] < 0) {
        pp_err(pp, side, "open FIFO %s: %s", st->path[0], strerror(errno));
        return;
    }
    pp->fd[b] = open(st->path[1], (side == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
    if (pp->fd[b] < 0) {
        pp_err(pp, side, "open FIFO %s: %s", st->path[1], strerror(errno));
        return;
    }
    /* The initiator's second open returns once the responder has opened both ends too. */
    if (side == 0) fifo_remove(st);
}

static const struct pp_mech mech_fifo = {
    .name = "fifo",
    .state_size = sizeof(struct fifo_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    .setup = fifo_setup,
    .side_init = fifo_side_init,
    .send = pipe_send,
    .recv = pipe_recv,
    .teardown = pipe_teardown, /* the FIFOs: removed in side_init, else by the clean-up list */
    .timed = "rtt: write(size bytes) to FIFO A, read(size bytes) from FIFO B, with the "
             "responder's read from A and write to B in between (FIFOs opened, and removed "
             "from the file system, before the first iteration)",
};

PINGPONG_BENCH(fifo, mech_fifo,
               "named pipe (FIFO) ping-pong between two processes or threads");
