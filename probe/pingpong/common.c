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
