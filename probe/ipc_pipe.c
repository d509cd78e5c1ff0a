/* latscope-probe: pipe ping-pong (two pipes, one per direction). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "pingpong.h"

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
    if (pp_write_full(fd, pp->buf[side], pp->size))
        return pp_err(pp, side, "pipe write failed: %s", strerror(errno));
    return 0;
}

static int pipe_recv(struct pp_ctx *pp, int side) {
    int fd = side == 0 ? pp->fd[2] : pp->fd[0];
    if (pp_read_full(fd, pp->buf[side], pp->size))
        return pp_err(pp, side, errno == EPIPE ? "pipe closed by the other side (%s)"
                                               : "pipe read failed: %s",
                      strerror(errno));
    return 0;
}

static void pipe_teardown(struct pp_ctx *pp) {
    for (int i = 0; i < 4; i++)
        if (pp->fd[i] >= 0) {
            close(pp->fd[i]);
            pp->fd[i] = -1;
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
    .timed = "rtt: write(size bytes) to pipe A, read(size bytes) from pipe B, with the "
             "responder's read from A and write to B in between",
};

PINGPONG_BENCH(pipe, mech_pipe,
               "pipe ping-pong between two processes or threads (context switch cost)");
