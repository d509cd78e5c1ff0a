/* latscope-probe on Windows: the run in one process.  --workers W (core/workers.c forks them)
 * is refused; --workers auto means 1 here (AUTO_WORKERS).  The run's record (header
 * "workers"): one worker, this process. */
#include <unistd.h>

#include "core/bench.h"

void run_workers(struct runctx *ctx, int nw) {
    (void)ctx;
    die(EXIT_UNSUPPORTED, "--workers %d: the Windows probe runs in one process (give "
        "--workers 1, or run it several times)", nw);
}

void worker_record_self(struct runctx *ctx) {
    ctx->nworkers = 1;
    ctx->workers = xcalloc(1, sizeof *ctx->workers);
    struct worker_rec *w = &ctx->workers[0];
    w->n = ctx->n;
    w->warmup = ctx->warmup;
    w->pid = (long)getpid();
    /* no roles: Windows counts no page faults and context switches per thread, so the
     * header's timed_rusage is empty (not known), never zeros that would read as "none" */
    w->nroles = 0;
}
