/* latscope-probe: ping-pong through synchronisation objects: eventfd, POSIX semaphores,
 * System V semaphores, a pthread mutex with condition variables.  Nothing but the wake-up
 * crosses (eventfd carries its 8-byte counter). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

/* ------------------------------------------------------------------ eventfd */

/* fd[0]: to the responder, fd[1]: to the initiator.  Both survive fork. */
static void eventfd_setup(struct pp_ctx *pp) {
    for (int i = 0; i < 2; i++) {
        pp->fd[i] = eventfd(0, EFD_CLOEXEC);
        if (pp->fd[i] < 0) die(EXIT_UNSUPPORTED, "eventfd: %s", strerror(errno));
    }
}

static int eventfd_send(struct pp_ctx *pp, int side) {
    uint64_t one = 1;
    for (;;) {
        ssize_t w = write(pp->fd[side], &one, sizeof one);
        if (w == (ssize_t)sizeof one) return 0;
        if (w < 0 && errno == EINTR) continue;
        return pp_err(pp, side, "eventfd write failed: %s", w < 0 ? strerror(errno) : "short");
    }
}

static int eventfd_recv(struct pp_ctx *pp, int side) {
    uint64_t v;
    for (;;) {
        ssize_t r = read(pp->fd[1 - side], &v, sizeof v);
        if (r == (ssize_t)sizeof v) return 0;
        if (r < 0 && errno == EINTR) continue;
        return pp_err(pp, side, "eventfd read failed: %s", r < 0 ? strerror(errno) : "short");
    }
}

static void fds_teardown(struct pp_ctx *pp) {
    for (int i = 0; i < 8; i++) pp_close(pp, i);
}

static const struct pp_mech mech_eventfd = {
    .name = "eventfd",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .payload = 8,
    .setup = eventfd_setup,
    .send = eventfd_send,
    .recv = eventfd_recv,
    .teardown = fds_teardown,
    .timed = "rtt: write(8-byte 1) to eventfd A, read(8 bytes) from eventfd B (blocking), with "
             "the responder's read of A and write to B in between",
};

PINGPONG_BENCH_NOSIZE(eventfd, mech_eventfd, "eventfd ping-pong (two eventfds, one per way)");

/* ------------------------------------------------------------------ posix_sem */

/* Two unnamed semaphores in the shared scratch area: pshared between processes. */
static sem_t *psem(struct pp_ctx *pp, int s) {
    return (sem_t *)(void *)(pp->sh->scratch + 64 * s);
}
struct psem_state {
    int ready; /* both initialised */
};

static void posix_sem_setup(struct pp_ctx *pp) {
    struct psem_state *st = pp->state;
    for (int i = 0; i < 2; i++)
        if (sem_init(psem(pp, i), pp->processes, 0) != 0)
            die(EXIT_UNSUPPORTED, "sem_init(pshared=%d): %s", pp->processes, strerror(errno));
    st->ready = 1;
}

static int posix_sem_send(struct pp_ctx *pp, int side) {
    if (sem_post(psem(pp, side)) != 0)
        return pp_err(pp, side, "sem_post failed: %s", strerror(errno));
    return 0;
}

static int posix_sem_recv(struct pp_ctx *pp, int side) {
    while (sem_wait(psem(pp, 1 - side)) != 0)
        if (errno != EINTR) return pp_err(pp, side, "sem_wait failed: %s", strerror(errno));
    return 0;
}

static void posix_sem_teardown(struct pp_ctx *pp) {
    struct psem_state *st = pp->state;
    /* Only once nobody waits any more: on other paths the process is about to end. */
    if (pp->finished && st->ready) {
        for (int i = 0; i < 2; i++) sem_destroy(psem(pp, i));
        st->ready = 0;
    }
}

static const struct pp_mech mech_posix_sem = {
    .name = "posix_sem",
    .state_size = sizeof(struct psem_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .setup = posix_sem_setup,
    .send = posix_sem_send,
    .recv = posix_sem_recv,
    .teardown = posix_sem_teardown,
    .timed = "rtt: sem_post(A), sem_wait(B) on unnamed POSIX semaphores in shared memory "
             "(sem_init with pshared=1 between processes, 0 between threads), with the "
             "responder's sem_wait(A) and sem_post(B) in between",
};

PINGPONG_BENCH_NOSIZE(posix_sem, mech_posix_sem,
                      "POSIX semaphore (sem_post/sem_wait) ping-pong");

/* ------------------------------------------------------------------ sysv_sem */

/* One set of two semaphores, IPC_PRIVATE; removed (IPC_RMID) by the teardown, which the
 * clean-up list runs on every path. */
struct sysv_sem_state {
    int semid; /* -1: none */
    int rec;   /* its leftovers record */
};

static void sysv_sem_setup(struct pp_ctx *pp) {
    struct sysv_sem_state *st = pp->state;
    st->rec = -1;
    st->semid = semget(IPC_PRIVATE, 2, IPC_CREAT | IPC_EXCL | 0600);
    if (st->semid < 0)
        die(errno == ENOSPC ? EXIT_UNSUPPORTED : EXIT_FAIL,
            "semget(IPC_PRIVATE, 2): %s", strerror(errno));
    unsigned short zero[2] = {0, 0};
    if (semctl(st->semid, 0, SETALL, zero) != 0)
        die(EXIT_FAIL, "semctl SETALL: %s", strerror(errno));
    /* a set has no name to remove early: recorded (after SETALL, which sets its change time)
     * until it is removed (leftovers) */
    st->rec = leftovers_sysv(LO_SYSV_SEM, st->semid);
}

static int sysv_semop(struct pp_ctx *pp, int side, unsigned short num, short op) {
    struct sysv_sem_state *st = pp->state;
    struct sembuf sb = {.sem_num = num, .sem_op = op, .sem_flg = 0};
    while (semop(st->semid, &sb, 1) != 0)
        if (errno != EINTR) return pp_err(pp, side, "semop(%+d) failed: %s", op, strerror(errno));
    return 0;
}

static int sysv_sem_send(struct pp_ctx *pp, int side) {
    return sysv_semop(pp, side, (unsigned short)side, 1);
}
static int sysv_sem_recv(struct pp_ctx *pp, int side) {
    return sysv_semop(pp, side, (unsigned short)(1 - side), -1);
}

static void sysv_sem_teardown(struct pp_ctx *pp) {
    struct sysv_sem_state *st = pp->state;
    if (st->semid >= 0) {
        if (semctl(st->semid, 0, IPC_RMID) == 0 || errno == EINVAL || errno == EIDRM)
            leftovers_release(st->rec);
        st->semid = -1;
    }
}

static const struct pp_mech mech_sysv_sem = {
    .name = "sysv_sem",
    .state_size = sizeof(struct sysv_sem_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .setup = sysv_sem_setup,
    .send = sysv_sem_send,
    .recv = sysv_sem_recv,
    .teardown = sysv_sem_teardown,
    .timed = "rtt: semop(+1) on semaphore A, semop(-1) on semaphore B of one System V set "
             "(semget IPC_PRIVATE), with the responder's semop(-1) on A and semop(+1) on B in "
             "between",
};

PINGPONG_BENCH_NOSIZE(sysv_sem, mech_sysv_sem, "System V semaphore (semop) ping-pong");

/* ------------------------------------------------------------------ condvar */

struct cv_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv[2];
    int flag[2]; /* message waiting in direction s (guarded by mu) */
};
struct cv_state {
    int ready; /* the mutex and condition variables are initialised */
};

static struct cv_shared *cvs(struct pp_ctx *pp) {
    return (struct cv_shared *)(void *)pp->sh->scratch;
}

static void condvar_setup(struct pp_ctx *pp) {
    _Static_assert(sizeof(struct cv_shared) <= PP_SCRATCH, "scratch too small");
    struct cv_shared *c = cvs(pp);
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    int pshared = pp->processes ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
    int e = pthread_mutexattr_init(&ma);
    if (!e) e = pthread_mutexattr_setpshared(&ma, pshared);
    if (!e) e = pthread_mutex_init(&c->mu, &ma);
    if (!e) e = pthread_condattr_init(&ca);
    if (!e) e = pthread_condattr_setpshared(&ca, pshared);
    for (int i = 0; i < 2 && !e; i++) e = pthread_cond_init(&c->cv[i], &ca);
    if (e) die(EXIT_UNSUPPORTED, "process-shared mutex/condition variable: %s", strerror(e));
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_destroy(&ca);
    ((struct cv_state *)pp->state)->ready = 1;
}

static int condvar_send(struct pp_ctx *pp, int side) {
    struct cv_shared *c = cvs(pp);
    int e = pthread_mutex_lock(&c->mu);
    if (e) return pp_err(pp, side, "pthread_mutex_lock failed: %s", strerror(e));
    c->flag[side] = 1;
    e = pthread_cond_signal(&c->cv[side]);
    pthread_mutex_unlock(&c->mu);
    if (e) return pp_err(pp, side, "pthread_cond_signal failed: %s", strerror(e));
    return 0;
}

static int condvar_recv(struct pp_ctx *pp, int side) {
    struct cv_shared *c = cvs(pp);
    int d = 1 - side, e = pthread_mutex_lock(&c->mu);
    if (e) return pp_err(pp, side, "pthread_mutex_lock failed: %s", strerror(e));
    while (!c->flag[d] && !e) e = pthread_cond_wait(&c->cv[d], &c->mu);
    c->flag[d] = 0;
    pthread_mutex_unlock(&c->mu);
    if (e) return pp_err(pp, side, "pthread_cond_wait failed: %s", strerror(e));
    return 0;
}

static void condvar_teardown(struct pp_ctx *pp) {
    struct cv_state *st = pp->state;
    /* pthread_cond_destroy waits for waiters: only once nobody waits any more. */
    if (pp->finished && st->ready) {
        struct cv_shared *c = cvs(pp);
        pthread_cond_destroy(&c->cv[0]);
        pthread_cond_destroy(&c->cv[1]);
        pthread_mutex_destroy(&c->mu);
        st->ready = 0;
    }
}

static const struct pp_mech mech_condvar = {
    .name = "condvar",
    .state_size = sizeof(struct cv_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .setup = condvar_setup,
    .send = condvar_send,
    .recv = condvar_recv,
    .teardown = condvar_teardown,
    .timed = "rtt: lock, set flag A, pthread_cond_signal(A), unlock; then lock, "
             "pthread_cond_wait(B) until flag B is set, clear it, unlock (one mutex, two "
             "condition variables in shared memory; PTHREAD_PROCESS_SHARED between processes), "
             "with the responder doing the mirror image in between",
};

PINGPONG_BENCH_NOSIZE(condvar, mech_condvar,
                      "pthread mutex + condition variable ping-pong");
