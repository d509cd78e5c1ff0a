/* latscope-probe: the POSIX ping-pong driver (see pingpong.h): what differs from Windows's
 * (win/pingpong.c), the shared mapping, the responder as a forked process or a thread and
 * its end; the sequence and the initiator's side are pingpong/common.c's. */
#include "pingpong/pingpong.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

void pp_private_dir(struct pp_ctx *pp, char *dir, size_t len) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(dir, len, "%s/latscope-%d-%s-XXXXXX", base, (int)getpid(), pp->m->name);
    if (!mkdtemp(dir))
        die(EXIT_FAIL, "cannot create a private directory in %s: %s (set TMPDIR to a "
            "writable directory)", base, strerror(errno));
    cleanup_rmdir(dir);
}

void pp_close(struct pp_ctx *pp, int i) {
    if (pp->fd[i] >= 0) {
        close(pp->fd[i]);
        pp->fd[i] = -1;
    }
}

/* ---------------------------------------------------------------- the shared memory */

/* Everything the two sides share, and their message buffers, allocated and written before the
 * first sample; the supervisor learns where the responder reports its failure. */
void pp_driver_share(struct pp_ctx *pp) {
    pp->sh_bytes = sizeof(struct pp_shared) + (size_t)pp->ring * sizeof(int64_t);
    void *map =
        mmap(NULL, pp->sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) die(EXIT_FAIL, "cannot map %zu bytes of shared memory", pp->sh_bytes);
    memset(map, 0, pp->sh_bytes);
    pp->sh = map;
    for (int s = 0; s < 2; s++) {
        pp->buf[s] = xcalloc(1, pp->size + 64);
        memset(pp->buf[s], 's' + s, pp->size);
    }
    supervisor_peer_error(&pp->sh->peer_failed, pp->sh->errmsg);
}

/* ---------------------------------------------------------------- the responder */

static void *responder_thread(void *arg) {
    struct pp_ctx *pp = arg;
    if (pp_responder_start(pp) == 0) pp_responder_loop(pp);
    return NULL;
}

/* The responder, as a forked process or a thread, watched by the supervisor.  A forked child
 * runs only what it registers on the clean-up list itself (none here): its parent's entries
 * are marked as the parent's (core/cleanup.c), so an error in it never undoes them. */
void pp_driver_start_responder(struct pp_ctx *pp) {
    if (pp->processes) {
        pid_t parent = getpid();
        pid_t child = fork();
        if (child < 0) die(EXIT_FAIL, "fork failed: %s", strerror(errno));
        if (child == 0) {
            plat_die_with_parent(SIGKILL);
            if (getppid() != parent) _exit(EXIT_FAIL);
            pp->pid[1] = getpid();
            pp->thr[1] = pthread_self();
            if (pp_responder_start(pp) == 0) pp_responder_loop(pp);
            _exit(pp->sh->peer_failed ? EXIT_FAIL : EXIT_OK);
        }
        pp->pid[1] = child;
        pp->kill_handle = cleanup_kill(child);
        pp->watch = supervisor_watch_peer(child, pp->run->peer_timeout);
    } else {
        pp->pid[1] = pp->pid[0];
        if (pthread_create(&pp->thr[1], NULL, responder_thread, pp) != 0)
            die(EXIT_FAIL, "cannot start the responder thread");
        pp->watch = supervisor_watch_peer(0, pp->run->peer_timeout);
    }
}

/* ---------------------------------------------------------------- after the run */

/* The responder has finished: reap the process (or join the thread) and stop on its error. */
void pp_driver_join_responder(struct pp_ctx *pp) {
    if (pp->processes) {
        int st = 0;
        if (!supervisor_unwatch_peer(pp->watch, &st)) {
            while (waitpid(pp->pid[1], &st, 0) < 0 && errno == EINTR) {
            }
        }
        cleanup_cancel(pp->kill_handle);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            die(EXIT_FAIL, "%s", pp->sh->errmsg[0] ? pp->sh->errmsg : "the peer failed");
    } else {
        supervisor_unwatch_peer(pp->watch, NULL);
        pthread_join(pp->thr[1], NULL);
        if (pp->sh->peer_failed) die(EXIT_FAIL, "%s", pp->sh->errmsg);
    }
}

const char *pp_driver_responder(const struct pp_ctx *pp) {
    return pp->processes ? "a forked process (fork, no exec): the probe's own image"
                         : "a thread of the probe (pthread_create)";
}
