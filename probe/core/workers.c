/* latscope-probe: --workers W: the run split over worker processes, forked one after another
 * from the probe (docs/probe-cli.md). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/bench.h"

static void worker_record(const struct runctx *ctx, struct worker_rec *w, long pid) {
    w->n = ctx->n;
    w->warmup = ctx->warmup;
    w->pid = pid;
    w->nroles = ctx->nroles;
    for (int r = 0; r < ctx->nroles && r < 2; r++) w->roles[r] = ctx->roles[r];
}

/* What a worker sends its parent after its run, then its columns and its "bench" JSON.  The
 * worker is a fork of this very program, so the column and role names (string literals) are
 * valid in the parent as they are. */
struct worker_msg {
    long long n;
    uint64_t t0;
    int ncols, nroles, preempt_expected;
    struct column cols[MAX_COLS];
    struct role_usage roles[2];
    int have_fs;
    struct fsinfo fs;
    size_t metalen;
};

/* In the worker: its run, as the probe would do it alone, then its results down the pipe. */
__attribute__((noreturn)) static void worker_main(struct runctx *ctx, int fd, long long n_w,
                                                  uint64_t done_before) {
    /* the parent's run context, with nothing of an earlier worker's run in it */
    ctx->n = n_w;
    ctx->progress = 0;
    ctx->ncols = 0;
    memset(ctx->cols, 0, sizeof ctx->cols);
    memset(&ctx->meta, 0, sizeof ctx->meta);
    ctx->t0 = 0;
    ctx->nroles = 0;
    ctx->preempt_expected = 0;
    ctx->have_fs = 0;
    struct supervisor sv = {.progress = &ctx->progress, .progress_base = done_before,
                            .total = ctx->total, .progress_fd = ctx->progress_fd,
                            .stall_timeout_s = 0, .peer = 0};
    supervisor_start(&sv);
    ctx->b->run(ctx);
    supervisor_stop();
    stop_if_asked();
    struct worker_msg m;
    memset(&m, 0, sizeof m);
    m.n = ctx->n;
    m.t0 = ctx->t0;
    m.ncols = ctx->ncols;
    m.nroles = ctx->nroles;
    m.preempt_expected = ctx->preempt_expected;
    memcpy(m.cols, ctx->cols, sizeof m.cols);
    memcpy(m.roles, ctx->roles, sizeof m.roles);
    m.have_fs = ctx->have_fs;
    m.fs = ctx->fs;
    m.metalen = ctx->meta.len;
    size_t bytes = (size_t)n_w * sizeof(int64_t);
    int bad = write_full(fd, &m, sizeof m) || write_full(fd, ctx->t_start, bytes);
    for (int c = 0; c < ctx->ncols && !bad; c++) bad = write_full(fd, ctx->cols[c].data, bytes);
    if (!bad && m.metalen) bad = write_full(fd, ctx->meta.s, m.metalen);
    if (bad) die(EXIT_FAIL, "worker: cannot hand its samples to the probe: %s", strerror(errno));
    close(fd);
    cleanup_run();
    _exit(EXIT_OK);
}

static pid_t g_worker = 0; /* the running worker, for the clean-up list */

/* Stop the running worker: SIGTERM, so that it cleans up after itself (its peers, IPC objects,
 * files), then, after 3 s, SIGKILL.  Returns its wait status. */
static int stop_worker(pid_t pid) {
    int st = 0;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return st;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}

static void worker_cleanup(void *arg) {
    (void)arg;
    if (g_worker > 0) stop_worker(g_worker);
    g_worker = 0;
}

/* The worker ended or failed: end the probe the way it did.  A worker that exited with an
 * error has printed its one line; one killed by a signal has not. */
__attribute__((noreturn)) static void worker_failed(int w, int nw, pid_t pid, int st) {
    g_worker = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        cleanup_run();
        exit(WEXITSTATUS(st));
    }
    if (WIFSIGNALED(st))
        die(EXIT_FAIL, "worker %d of %d (pid %d) was killed by signal %d; nothing was written",
            w + 1, nw, (int)pid, WTERMSIG(st));
    die(EXIT_FAIL, "worker %d of %d (pid %d) ended without handing over its samples; nothing "
        "was written", w + 1, nw, (int)pid);
}

/* Read exactly len bytes from the worker, watching for the user's signals meanwhile. */
static void from_worker(int fd, int sigfd, void *buf, size_t len, int w, int nw, pid_t pid) {
    char *p = buf;
    while (len) {
        struct pollfd pfd[2] = {{fd, POLLIN, 0}, {sigfd, POLLIN, 0}};
        int r = poll(pfd, 2, -1);
        if (r < 0) {
            if (errno == EINTR) continue;
            die(EXIT_FAIL, "poll failed: %s", strerror(errno));
        }
        if (pfd[1].revents & POLLIN) {
            int sig = plat_signal_fd_read(sigfd);
            if (sig > 0) g_stop = sig;
            int st = stop_worker(pid);
            g_worker = 0;
            if (!(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_INTERRUPTED))
                die(EXIT_INTERRUPTED, "interrupted (signal %d); nothing was written", g_stop);
            cleanup_run();
            exit(EXIT_INTERRUPTED);
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = read(fd, p, len);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                int st = 0;
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
                }
                worker_failed(w, nw, pid, st);
            }
            p += got;
            len -= (size_t)got;
        }
    }
}

/* --workers W: fork W workers one after another from this process, with the clock set up and
 * calibrated here once; gather their samples into ctx (t_start counting on across workers). */
void run_workers(struct runctx *ctx, int nw) {
    long long n = ctx->n;
    sigset_t set = stop_signals();
    int sigfd = plat_signal_fd_open(&set);
    if (sigfd < 0) die(EXIT_FAIL, "cannot watch for signals: %s", strerror(errno));
    cleanup_push(worker_cleanup, NULL);
    ctx->nworkers = nw;
    ctx->workers = xcalloc((size_t)nw, sizeof *ctx->workers);
    ctx->t_start = xcalloc((size_t)n, sizeof(int64_t));
    long long off = 0;
    uint64_t t0_first = 0;
    pid_t parent = getpid();
    for (int w = 0; w < nw; w++) {
        long long n_w = n / nw + (w < n % nw ? 1 : 0);
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) != 0) die(EXIT_FAIL, "pipe failed: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0) die(EXIT_FAIL, "fork failed: %s", strerror(errno));
        if (pid == 0) {
            close(pfd[0]);
            close(sigfd);
            /* the probe killed: the worker is told, and cleans up after itself */
            plat_die_with_parent(SIGTERM);
            if (getppid() != parent) _exit(EXIT_FAIL);
            free(ctx->workers);
            free(ctx->t_start);
            ctx->workers = NULL;
            ctx->t_start = NULL;
            worker_main(ctx, pfd[1], n_w, (uint64_t)(off + (long long)w * ctx->warmup));
        }
        g_worker = pid;
        close(pfd[1]);
        struct worker_msg m;
        from_worker(pfd[0], sigfd, &m, sizeof m, w, nw, pid);
        if (m.n != n_w || m.ncols < 0 || m.ncols > MAX_COLS || m.nroles < 0 || m.nroles > 2)
            die(EXIT_FAIL, "worker %d of %d handed over a malformed result", w + 1, nw);
        if (w == 0) {
            ctx->ncols = m.ncols;
            for (int c = 0; c < m.ncols; c++) {
                ctx->cols[c] = m.cols[c];
                ctx->cols[c].data = xcalloc((size_t)n, sizeof(int64_t));
            }
            t0_first = m.t0;
        } else if (m.ncols != ctx->ncols) {
            die(EXIT_FAIL, "worker %d of %d recorded %d columns, the first %d", w + 1, nw,
                m.ncols, ctx->ncols);
        }
        size_t bytes = (size_t)n_w * sizeof(int64_t);
        from_worker(pfd[0], sigfd, ctx->t_start + off, bytes, w, nw, pid);
        for (int c = 0; c < m.ncols; c++)
            from_worker(pfd[0], sigfd, ctx->cols[c].data + off, bytes, w, nw, pid);
        char *meta = xcalloc(m.metalen + 1, 1);
        if (m.metalen) from_worker(pfd[0], sigfd, meta, m.metalen, w, nw, pid);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        g_worker = 0;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) worker_failed(w, nw, pid, st);
        close(pfd[0]);
        /* t_start counts on from the first worker's first recorded iteration (one clock) */
        int64_t shift = (int64_t)(m.t0 - t0_first);
        for (long long k = 0; k < n_w; k++) ctx->t_start[off + k] += shift;
        if (w == 0) { /* the benchmark's own metadata: the first worker's */
            jb_init(&ctx->meta);
            jb_raw(&ctx->meta, "%s", meta);
            ctx->have_fs = m.have_fs;
            ctx->fs = m.fs;
        }
        free(meta);
        ctx->preempt_expected |= m.preempt_expected;
        struct worker_rec *wr = &ctx->workers[w];
        wr->n = n_w;
        wr->warmup = ctx->warmup;
        wr->pid = (long)pid;
        wr->nroles = m.nroles;
        memcpy(wr->roles, m.roles, sizeof wr->roles);
        off += n_w;
    }
    close(sigfd);
}

void worker_record_self(struct runctx *ctx) {
    ctx->nworkers = 1;
    ctx->workers = xcalloc(1, sizeof *ctx->workers);
    worker_record(ctx, &ctx->workers[0], (long)getpid());
}
