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

PINGPONG_BENCH(pipe, mech_pipe,
               "pipe ping-pong between two processes or threads (context switch cost)");

/* ------------------------------------------------------------------ fifo (named pipes)
 * Two FIFOs in a private directory, one per direction, with the same descriptor layout as
 * the pipes above: each side opens only its own ends (open blocks until the other side has
 * opened the other end).  Once both sides hold their descriptors the FIFOs and the directory
 * are removed, so nothing named exists during the measurement; the clean-up list removes
 * them on every other path. */
static struct {
    char path[2][320];
    int h[2]; /* clean-up handles of the two FIFOs */
} fifo;
static char fifo_dir[300];

static void fifo_remove(void) {
    for (int i = 0; i < 2; i++) {
        if (fifo.path[i][0]) {
            unlink(fifo.path[i]);
            cleanup_cancel(fifo.h[i]);
            fifo.path[i][0] = 0;
        }
    }
    if (fifo_dir[0]) {
        rmdir(fifo_dir); /* its own clean-up entry finds nothing left to do */
        fifo_dir[0] = 0;
    }
}

static void fifo_setup(struct pp_ctx *pp) {
    pp_private_dir(pp, fifo_dir, sizeof fifo_dir);
    for (int i = 0; i < 2; i++) {
        snprintf(fifo.path[i], sizeof fifo.path[i], "%s/%s", fifo_dir,
                 i == 0 ? "to-responder" : "to-initiator");
        fifo.h[i] = cleanup_unlink(fifo.path[i]);
        if (mkfifo(fifo.path[i], 0600) != 0)
            die(EXIT_FAIL, "mkfifo %s: %s", fifo.path[i], strerror(errno));
    }
}

static void fifo_side_init(struct pp_ctx *pp, int side) {
    /* Both sides open "to-responder" first, so neither waits for the other in a cycle. */
    int a = side == 0 ? 1 : 0, b = side == 0 ? 2 : 3;
    pp->fd[a] = open(fifo.path[0], (side == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (pp->fd[a] < 0) {
        pp_err(pp, side, "open FIFO %s: %s", fifo.path[0], strerror(errno));
        return;
    }
    pp->fd[b] = open(fifo.path[1], (side == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
    if (pp->fd[b] < 0) {
        pp_err(pp, side, "open FIFO %s: %s", fifo.path[1], strerror(errno));
        return;
    }
    /* The initiator's second open returns once the responder has opened both ends too. */
    if (side == 0) fifo_remove();
}

static const struct pp_mech mech_fifo = {
    .name = "fifo",
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
