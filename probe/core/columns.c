/* latscope-probe: columns: the latency kinds they name, and adding one to a run. */
#include <string.h>

#include "core/bench.h"

/* Every latency a column (or a derived column) can be; the catalogue lists them all. */
const struct latency_kind latency_kinds[] = {
    {"call", "per call",
     "one call: from the clock read before it to the clock read after it"},
    {"round_trip", "round trip",
     "initiator -> responder -> initiator, timed by the initiator on its own clock"},
    {"one_way_shared_clock", "one-way, shared clock",
     "initiator -> responder: the responder's clock read after its receive minus the "
     "initiator's start read of the same round trip (two CPUs' clocks where the parties are on "
     "two CPUs)"},
    {"one_way_rtt_half", "one-way est. = RTT/2",
     "half the round trip: right only when both directions cost the same"},
    {"ring", "ring trip",
     "one trip of a token around a ring of processes on one CPU: a switch per hand-over"},
    {"pass", "pass, no switch",
     "the ring's work done by one process alone: the token passed without a switch"},
    {"switch", "per switch",
     "one context switch: the ring's trip less the pass without switching, per hand-over"},
    {NULL, NULL, NULL},
};

const char *latency_label(const char *kind) {
    for (int k = 0; kind && latency_kinds[k].kind; k++)
        if (!strcmp(latency_kinds[k].kind, kind)) return latency_kinds[k].label;
    return kind;
}

struct column *add_column(struct runctx *ctx, const char *name, const char *desc,
                          const char *latency, int ctxsw) {
    if (ctx->ncols >= MAX_COLS) die(EXIT_FAIL, "internal error: too many columns");
    struct column *c = &ctx->cols[ctx->ncols++];
    c->name = name;
    c->desc = desc;
    c->latency = latency;
    c->context_switches = ctxsw;
    c->inject_free = 0;
    c->kind = NULL;
    c->data = ctx->is_arm ? NULL : alloc_samples((size_t)ctx->n);
    return c;
}

void add_t_start(struct runctx *ctx) {
    ctx->t_start = ctx->is_arm ? NULL : alloc_samples((size_t)ctx->n);
}

/* Added up: an arm's blocks each add their own recorded iterations' usage. */
void timed_loop_end(struct runctx *ctx, uint64_t t0, int nroles, const char *role,
                    const struct thread_usage *u0) {
    struct thread_usage u1, d;
    plat_thread_usage(&u1);
    ctx->t0 = t0;
    ctx->t0_set = 1;
    ctx->nroles = nroles;
    ctx->roles[0].role = role;
    thread_usage_delta(&d, u0, &u1);
    ctx->roles[0].u.minflt += d.minflt;
    ctx->roles[0].u.majflt += d.majflt;
    ctx->roles[0].u.nvcsw += d.nvcsw;
    ctx->roles[0].u.nivcsw += d.nivcsw;
}

int bench_columns(const struct bench *b, const struct pval *pv, int idx[MAX_COLS]) {
    if (b->columns_of) return b->columns_of(b, pv, idx);
    int n = b->ncolumns < MAX_COLS ? b->ncolumns : MAX_COLS;
    for (int k = 0; k < n; k++) idx[k] = k;
    return n;
}

void bench_run_phases(struct runctx *ctx) {
    const struct bench *b = ctx->b;
    void *st = b->begin(ctx);
    if (b->ready) b->ready(st);
    trace_mark(1);
    b->block(st, 0, (uint64_t)ctx->n, 0);
    trace_mark(0);
    b->end(st);
}
