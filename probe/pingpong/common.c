/* latscope-probe: what every ping-pong driver shares (the POSIX one, pingpong/driver.c, and
 * Windows's, win/pingpong.c): the parameters, columns and checks of every mechanism. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

const char *const pp_mode_choices[] = {"processes", "threads", NULL};

const struct pdef pp_params[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
    PP_PARAM_SIZE(1 << 20),
};
const struct pdef pp_params_nosize[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
};

const struct coldef pp_columns[] = {
    {"rtt", "round trip: initiator sends, responder answers; timed by the initiator",
     "round_trip", NULL},
    {"oneway", "initiator to responder, from the shared clock (responder's receive time minus "
               "the initiator's start of the round trip)",
     "one_way_shared_clock", NULL},
};

const struct derived_col pp_derived[] = {
    {"rtt/2", "rtt", 2, "one_way_rtt_half",
     "half the round trip, computed by the lab: the one-way time where both directions cost "
     "the same"},
};

int pp_err(struct pp_ctx *pp, int side, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pp->err[side], sizeof pp->err[side], fmt, ap);
    va_end(ap);
    return -1;
}

void pp_new_name(struct pp_ctx *pp) {
    char rnd[RANDOM_HEX_LEN + 1];
    random_hex(rnd);
    snprintf(pp->name, sizeof pp->name, "latscope-%d-%s-%s", (int)getpid(), pp->m->name, rnd);
}

/* ---------------------------------------------------------------- before the run: checks */

int pp_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen) {
    const struct pp_mech *m = b->mech;
    int processes = !strcmp(param_of(b, pv, "mode")->s, "processes");
    const int *cpu = param_of(b, pv, "cpus")->cpu;
    if (processes && !m->processes_ok) {
        snprintf(err, errlen, "%s works between threads only; use -p mode=threads", m->name);
        return EXIT_BADINPUT;
    }
    if (!processes && !m->threads_ok) {
        snprintf(err, errlen, "%s works between processes only; use -p mode=processes",
                 m->name);
        return EXIT_BADINPUT;
    }
    if (m->has_size) {
        size_t size = (size_t)param_of(b, pv, "size")->i;
        if (size > m->max_size) {
            snprintf(err, errlen, "parameter size=%zu: %s carries at most %zu bytes per message",
                     size, m->name, m->max_size);
            return EXIT_BADINPUT;
        }
    }
    if (m->placements && !(m->placements & placement_of(cpu))) {
        snprintf(err, errlen, "%s", m->placement_refusal);
        return EXIT_BADINPUT;
    }
    for (int s = 0; s < 2; s++) {
        int code = cpu_check(cpu[s], err, errlen);
        if (code) return code;
    }
    return m->check ? m->check(b, pv, err, errlen) : 0;
}

/* ---------------------------------------------------------------- the responder (both drivers) */

/* The responder's failure: tell the initiator through shared memory and stop. */
void pp_peer_fail(struct pp_ctx *pp, const char *what) {
    snprintf(pp->sh->errmsg, sizeof pp->sh->errmsg, "peer: %s", what);
    __atomic_store_n(&pp->sh->peer_failed, 1, __ATOMIC_SEQ_CST);
}

/* Everything a side writes in its loop, written by that side now: after a fork, private pages
 * are shared copy-on-write and the shared map is not yet mapped in the child; either way the
 * first store would fault inside a timed region. */
void pp_touch_side(struct pp_ctx *pp, int side) {
    struct runctx *ctx = pp->run;
    size_t n = (size_t)ctx->n;
    touch_pages(pp->buf[side], pp->size + 64);
    touch_pages(pp->sh, sizeof *pp->sh);
    if (side == 1) {
        touch_pages(pp->sh->recv_at, n * sizeof(int64_t));
    } else {
        for (int c = 0; c < ctx->ncols; c++) touch_pages(ctx->cols[c].data, n * sizeof(int64_t));
        touch_pages(ctx->t_start, n * sizeof(int64_t));
        touch_pages((void *)ctx, sizeof *ctx);
        touch_pages(pp, sizeof *pp);
    }
    if (pp->state) touch_pages(pp->state, pp->m->state_size);
    touch_stack();
}

int pp_responder_start(struct pp_ctx *pp) {
    if (pp->cpu[1] >= 0) {
        int e = plat_pin_thread(pp->cpu[1]);
        if (e) {
            char m[128];
            snprintf(m, sizeof m, "cannot pin the responder to CPU %d: %s", pp->cpu[1],
                     strerror(e));
            pp_peer_fail(pp, m);
            return -1;
        }
    }
    if (pp->m->side_init) pp->m->side_init(pp, 1);
    if (pp->err[1][0]) {
        pp_peer_fail(pp, pp->err[1]);
        return -1;
    }
    pp_touch_side(pp, 1);
    return 0;
}

/* Runs the recorded round trips as a loop of their own (no test of the iteration number), then
 * the closing round trip (untimed), in which the responder takes its usage reading: outside
 * every timed region of the initiator. */
void pp_responder_loop(struct pp_ctx *pp) {
    struct runctx *ctx = pp->run;
    uint64_t n = (uint64_t)ctx->n, warm = (uint64_t)ctx->warmup;
    for (int i = 0; i < pp->m->prime_round_trips; i++)
        if (pp->m->recv(pp, 1) || pp->m->send(pp, 1)) goto fail;
    for (uint64_t i = 0; i < warm; i++) {
        if (pp->m->recv(pp, 1)) goto fail;
        (void)clk_stamp();
        if (pp->m->send(pp, 1)) goto fail;
    }
    struct thread_usage u0, u1;
    plat_thread_usage(&u0);
    int64_t *at = pp->sh->recv_at;
    for (uint64_t i = 0; i < n; i++) {
        if (pp->m->recv(pp, 1)) goto fail;
        uint64_t t = clk_stamp();
        if (pp->m->send(pp, 1)) goto fail;
        at[i] = (int64_t)t;
    }
    if (pp->m->recv(pp, 1)) goto fail;
    plat_thread_usage(&u1);
    thread_usage_delta(&pp->sh->responder_usage, &u0, &u1);
    if (pp->m->send(pp, 1)) goto fail;
    if (pp->m->responder_done) pp->m->responder_done(pp);
    return;
fail:
    pp_peer_fail(pp, pp->err[1]);
}
