/* latscope-probe on Windows: the run in one process.  --workers W (core/workers.c forks them)
 * is refused; --workers auto means 1 here (AUTO_WORKERS). */
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
    w->nroles = ctx->nroles;
    for (int r = 0; r < ctx->nroles && r < 2; r++) w->roles[r] = ctx->roles[r];
}
