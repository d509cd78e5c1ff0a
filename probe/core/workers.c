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

/* An arms run's worker hands over its part (struct arms_worker), its rounds' orders and
 * each arm's "bench" object after the samples. */
static int arms_send(int fd, const struct runctx *ctx, int w) {
    const struct arms *A = ctx->arms;
    const struct arms_worker *aw = &A->w[w];
    int bad = write_full(fd, aw, sizeof *aw) ||
              write_full(fd, A->order[w], (size_t)(aw->rounds * A->narms));
    for (int k = 0; k < A->narms && !bad; k++)
        bad = write_full(fd, A->meta[k], aw->arm[k].metalen);
    return bad;
}

/* In the worker: its run, as the probe would do it alone (an arms run: its rounds), then its
 * results down the pipe. */
__attribute__((noreturn)) static void worker_main(struct runctx *ctx, int fd, long long n_w,
                                                  uint64_t done_before, int w, int nw) {
    /* the parent's run context, with nothing of an earlier worker's run in it */
    ctx->n = n_w;
    ctx->progress = 0;
    ctx->ncols = 0;
    memset(ctx->cols, 0, sizeof ctx->cols);
    memset(&ctx->meta, 0, sizeof ctx->meta);
    ctx->t0 = 0;
    ctx->t0_set = 0;
    ctx->nroles = 0;
    memset(ctx->roles, 0, sizeof ctx->roles);
    ctx->preempt_expected = 0;
    ctx->have_fs = 0;
    realtime_apply(ctx->rt_policy, ctx->rt_prio, ctx->rt_lock);
    struct supervisor sv = {.progress = &ctx->progress, .progress_base = done_before,
                            .total = ctx->total, .progress_fd = ctx->progress_fd,
                            .stall_timeout_s = 0, .peer = 0,
                            .progress_unit = ctx->arms ? "ms of the run" : NULL};
    supervisor_start(&sv);
    if (ctx->arms)
        arms_worker_run(ctx, w, nw);
    else
        ctx->b->run(ctx);
    supervisor_stop();
    stop_if_asked();
    n_w = ctx->n;
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
    if (!bad && ctx->arms) bad = arms_send(fd, ctx, w);
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

/* The gathered samples grown to hold n rows (an arms run: its workers' rows are known only
 * when each hands them over). */
static void grow(struct runctx *ctx, long long n) {
    ctx->t_start = realloc(ctx->t_start, (size_t)(n ? n : 1) * sizeof(int64_t));
    for (int c = 0; c < ctx->ncols && ctx->t_start; c++)
        if (!(ctx->cols[c].data = realloc(ctx->cols[c].data, (size_t)(n ? n : 1) * 8))) break;
    for (int c = 0; c < ctx->ncols; c++)
        if (!ctx->cols[c].data) die(EXIT_FAIL, "out of memory for %lld samples", n);
    if (!ctx->t_start) die(EXIT_FAIL, "out of memory for %lld samples", n);
}

/* An arms run's worker's part, its rounds' orders and (the first's) each arm's "bench". */
static void arms_receive(struct runctx *ctx, int fd, int sigfd, int w, int nw, pid_t pid);

/* --workers W: fork W workers one after another from this process, with the clock set up and
 * calibrated here once; gather their samples into ctx (t_start counting on across workers).
 * An arms run's workers each run for their share of the time, and say how many rows. */
void run_workers(struct runctx *ctx, int nw) {
    long long n = ctx->n;
    sigset_t set = stop_signals();
    int sigfd = plat_signal_fd_open(&set);
    if (sigfd < 0) die(EXIT_FAIL, "cannot watch for signals: %s", strerror(errno));
    cleanup_push(worker_cleanup, NULL);
    ctx->nworkers = nw;
    ctx->workers = xcalloc((size_t)nw, sizeof *ctx->workers);
    ctx->t_start = xcalloc((size_t)(ctx->arms ? 1 : n), sizeof(int64_t));
    long long off = 0;
    uint64_t t0_first = 0;
    pid_t parent = getpid();
    for (int w = 0; w < nw; w++) {
        long long n_w = n / nw + (w < n % nw ? 1 : 0);
        /* progress before this worker: iterations, or an arms run's milliseconds */
        uint64_t before = ctx->arms ? (uint64_t)w * (ctx->total / (uint64_t)nw)
                                    : (uint64_t)(off + (long long)w * ctx->warmup);
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
            worker_main(ctx, pfd[1], n_w, before, w, nw);
        }
        g_worker = pid;
        close(pfd[1]);
        struct worker_msg m;
        from_worker(pfd[0], sigfd, &m, sizeof m, w, nw, pid);
        if ((ctx->arms ? m.n < 0 || m.n > (long long)SAMPLE_MAX_ROWS - off : m.n != n_w) ||
            m.ncols < 0 || m.ncols > MAX_COLS || m.nroles < 0 || m.nroles > 2)
            die(EXIT_FAIL, "worker %d of %d handed over a malformed result", w + 1, nw);
        n_w = m.n;
        if (w == 0) {
            ctx->ncols = m.ncols;
            for (int c = 0; c < m.ncols; c++) {
                ctx->cols[c] = m.cols[c];
                ctx->cols[c].data = xcalloc((size_t)(ctx->arms ? 1 : n), sizeof(int64_t));
            }
            t0_first = m.t0;
        } else if (m.ncols != ctx->ncols) {
            die(EXIT_FAIL, "worker %d of %d recorded %d columns, the first %d", w + 1, nw,
                m.ncols, ctx->ncols);
        }
        if (ctx->arms) grow(ctx, off + n_w);
        size_t bytes = (size_t)n_w * sizeof(int64_t);
        from_worker(pfd[0], sigfd, ctx->t_start + off, bytes, w, nw, pid);
        for (int c = 0; c < m.ncols; c++)
            from_worker(pfd[0], sigfd, ctx->cols[c].data + off, bytes, w, nw, pid);
        char *meta = xcalloc(m.metalen + 1, 1);
        if (m.metalen) from_worker(pfd[0], sigfd, meta, m.metalen, w, nw, pid);
        if (ctx->arms) arms_receive(ctx, pfd[0], sigfd, w, nw, pid);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        g_worker = 0;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) worker_failed(w, nw, pid, st);
        close(pfd[0]);
        /* t_start counts on from the first worker's first recorded iteration (one clock) */
        int64_t shift = (int64_t)(m.t0 - t0_first);
        for (long long k = 0; k < n_w; k++) ctx->t_start[off + k] += shift;
        if (ctx->arms) arms_gathered(ctx, w, off, n_w);
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
    if (ctx->arms) ctx->n = off;
    close(sigfd);
}

static void arms_receive(struct runctx *ctx, int fd, int sigfd, int w, int nw, pid_t pid) {
    struct arms *A = ctx->arms;
    struct arms_worker *aw = &A->w[w];
    from_worker(fd, sigfd, aw, sizeof *aw, w, nw, pid);
    int bad = aw->rounds < 0 || aw->rounds > aw->max_rounds || aw->blocks < 0;
    for (int k = 0; k < A->narms && !bad; k++)
        bad = aw->arm[k].metalen > SAMPLE_MAX_HEADER || aw->arm[k].ncols < 0 ||
              aw->arm[k].ncols > MAX_COLS || aw->arm[k].nroles < 0 || aw->arm[k].nroles > 2;
    if (bad) die(EXIT_FAIL, "worker %d of %d handed over a malformed result", w + 1, nw);
    size_t bytes = (size_t)(aw->rounds * A->narms);
    A->order[w] = xcalloc(bytes ? bytes : 1, 1);
    if (bytes) from_worker(fd, sigfd, A->order[w], bytes, w, nw, pid);
    for (int k = 0; k < A->narms; k++) {
        char *meta = xcalloc(aw->arm[k].metalen + 1, 1);
        if (aw->arm[k].metalen) from_worker(fd, sigfd, meta, aw->arm[k].metalen, w, nw, pid);
        if (w == 0) A->meta[k] = meta; /* the benchmark's own metadata: the first worker's */
        else free(meta);
    }
}

void worker_record_self(struct runctx *ctx) {
    ctx->nworkers = 1;
    ctx->workers = xcalloc(1, sizeof *ctx->workers);
    worker_record(ctx, &ctx->workers[0], (long)getpid());
}
