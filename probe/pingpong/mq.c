/* latscope-probe: message-queue ping-pong: POSIX message queues (mq_open) and System V
 * message queues (msgget). */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

/* ------------------------------------------------------------------ posix_mq */

/* Two queues, one per direction, named /latscope-<pid>-posix_mq-<random>-{a,b} and created
 * with O_EXCL: a name someone else made first is never opened, nor removed, and the pair is
 * tried again under new names.  Both are opened in setup (the descriptors survive fork) and
 * unlinked at once, so no name exists during the measurement; the clean-up list unlinks a
 * queue this process created if setup stops in between. */
static void mq_unlink_cb(void *arg) { mq_unlink((const char *)arg); }

struct posix_mq_state {
    char names[2][160];
};

#define MQ_ATTEMPTS 5

static void posix_mq_setup(struct pp_ctx *pp) {
    char(*names)[160] = ((struct posix_mq_state *)pp->state)->names;
    struct mq_attr attr = {.mq_flags = 0, .mq_maxmsg = 1, .mq_msgsize = (long)pp->size};
    for (int i = 0; i < 2; i++) {
        mqd_t q = (mqd_t)-1;
        int e = 0;
        for (int attempt = 0; attempt < MQ_ATTEMPTS; attempt++) {
            if (attempt) pp_new_name(pp);
            snprintf(names[i], sizeof names[i], "/%s-%c", pp->name, 'a' + i);
            q = mq_open(names[i], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &attr);
            e = errno;
            if (q != (mqd_t)-1 || e != EEXIST) break;
        }
        if (q == (mqd_t)-1) {
            if (e == ENOSYS)
                die(EXIT_UNSUPPORTED, "POSIX message queues are not available in this kernel "
                    "(CONFIG_POSIX_MQUEUE)");
            if (e == EINVAL || e == EMFILE || e == ENOMEM || e == ENOSPC)
                die(EXIT_UNSUPPORTED, "mq_open %s (maxmsg 1, msgsize %zu): %s; the limits are "
                    "in /proc/sys/fs/mqueue (msgsize_max, queues_max) and RLIMIT_MSGQUEUE",
                    names[i], pp->size, strerror(e));
            if (e == EEXIST)
                die(EXIT_FAIL, "mq_open: %d names in a row were taken (the last %s); something "
                    "is creating queues under latscope's names", MQ_ATTEMPTS, names[i]);
            die(EXIT_FAIL, "mq_open %s: %s", names[i], strerror(e));
        }
        /* created by this process: its name is this process's to remove */
        int h = cleanup_push(mq_unlink_cb, names[i]);
        pp->fd[i] = (int)q;
        mq_unlink(names[i]);
        cleanup_cancel(h);
    }
}

static int posix_mq_send(struct pp_ctx *pp, int side) {
    while (mq_send((mqd_t)pp->fd[side], (const char *)pp->buf[side], pp->size, 0) != 0)
        if (errno != EINTR) return pp_err(pp, side, "mq_send failed: %s", strerror(errno));
    return 0;
}

static int posix_mq_recv(struct pp_ctx *pp, int side) {
    for (;;) {
        /* the buffer has size + 64 bytes; mq_receive wants at least mq_msgsize */
        ssize_t r = mq_receive((mqd_t)pp->fd[1 - side], (char *)pp->buf[side], pp->size + 64,
                               NULL);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return pp_err(pp, side, "mq_receive failed: %s", strerror(errno));
        if ((size_t)r != pp->size)
            return pp_err(pp, side, "mq_receive: %zd bytes, expected %zu", r, pp->size);
        return 0;
    }
}

static void posix_mq_teardown(struct pp_ctx *pp) {
    for (int i = 0; i < 2; i++)
        if (pp->fd[i] >= 0) {
            mq_close((mqd_t)pp->fd[i]);
            pp->fd[i] = -1;
        }
}

static const struct pp_mech mech_posix_mq = {
    .name = "posix_mq",
    .state_size = sizeof(struct posix_mq_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 8192,
    .setup = posix_mq_setup,
    .send = posix_mq_send,
    .recv = posix_mq_recv,
    .teardown = posix_mq_teardown,
    .timed = "rtt: mq_send(size bytes) to queue A, mq_receive from queue B, with the "
             "responder's mq_receive from A and mq_send to B in between (queues opened with "
             "maxmsg 1 and msgsize = size, and unlinked, before the first iteration)",
};

PINGPONG_BENCH(posix_mq, mech_posix_mq,
               "POSIX message queue ping-pong (size up to fs.mqueue.msgsize_max, 8192)");

/* ------------------------------------------------------------------ sysv_mq */

/* One queue (IPC_PRIVATE), two message types: 1 to the responder, 2 to the initiator.
 * Removed (IPC_RMID) by the teardown, which the clean-up list runs on every path. */
struct sysv_msg {
    long mtype;
    char mtext[];
};
struct sysv_mq_state {
    int msqid; /* -1: none */
    int rec;   /* its leftovers record */
    struct sysv_msg *msg[2]; /* each side's message buffer */
};

static void sysv_mq_setup(struct pp_ctx *pp) {
    struct sysv_mq_state *st = pp->state;
    st->msqid = -1;
    st->rec = -1;
    for (int s = 0; s < 2; s++) {
        st->msg[s] = xcalloc(1, sizeof(struct sysv_msg) + pp->size + 64);
        st->msg[s]->mtype = s + 1;
        memset(st->msg[s]->mtext, 'm', pp->size);
    }
    st->msqid = msgget(IPC_PRIVATE, IPC_CREAT | IPC_EXCL | 0600);
    if (st->msqid < 0)
        die(errno == ENOSPC ? EXIT_UNSUPPORTED : EXIT_FAIL, "msgget(IPC_PRIVATE): %s",
            strerror(errno));
    /* a queue has no name to remove early: recorded until it is removed (leftovers) */
    st->rec = leftovers_sysv(LO_SYSV_MSG, st->msqid);
}

static int sysv_mq_send(struct pp_ctx *pp, int side) {
    struct sysv_mq_state *st = pp->state;
    st->msg[side]->mtype = side + 1;
    while (msgsnd(st->msqid, st->msg[side], pp->size, 0) != 0)
        if (errno != EINTR) return pp_err(pp, side, "msgsnd failed: %s", strerror(errno));
    return 0;
}

static int sysv_mq_recv(struct pp_ctx *pp, int side) {
    struct sysv_mq_state *st = pp->state;
    for (;;) {
        ssize_t r = msgrcv(st->msqid, st->msg[side], pp->size, 2 - side, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return pp_err(pp, side, "msgrcv failed: %s", strerror(errno));
        if ((size_t)r != pp->size)
            return pp_err(pp, side, "msgrcv: %zd bytes, expected %zu", r, pp->size);
        return 0;
    }
}

static void sysv_mq_teardown(struct pp_ctx *pp) {
    struct sysv_mq_state *st = pp->state;
    if (st->msqid >= 0) {
        if (msgctl(st->msqid, IPC_RMID, NULL) == 0 || errno == EINVAL || errno == EIDRM)
            leftovers_release(st->rec);
        st->msqid = -1;
    }
    /* the buffers: only once nobody uses them (on other paths the process is about to end) */
    for (int s = 0; s < 2 && pp->finished; s++) {
        free(st->msg[s]);
        st->msg[s] = NULL;
    }
}

static const struct pp_mech mech_sysv_mq = {
    .name = "sysv_mq",
    .state_size = sizeof(struct sysv_mq_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 8192,
    .setup = sysv_mq_setup,
    .send = sysv_mq_send,
    .recv = sysv_mq_recv,
    .teardown = sysv_mq_teardown,
    .timed = "rtt: msgsnd(type 1, size bytes) and msgrcv(type 2) on one System V queue "
             "(msgget IPC_PRIVATE), with the responder's msgrcv(type 1) and msgsnd(type 2) in "
             "between",
};

PINGPONG_BENCH(sysv_mq, mech_sysv_mq,
               "System V message queue ping-pong (size up to kernel.msgmax, 8192)");
