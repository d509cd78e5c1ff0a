/* Unit tests of the registry and what each benchmark declares: names, defaults that pass their
 * own checks, rules, scenarios and display facts that refer to what exists. */
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"
#include "pingpong/pingpong.h"
#include "tests/check.h"

#ifndef BENCHMARKS_DEF
#define BENCHMARKS_DEF "benchmarks.def"
#endif
/* the lines of the registry's file: every BENCH line is a benchmark, every SUBCOMMAND line
 * a command of the probe */
#define BENCH(name, source) +1
#define SUBCOMMAND(name, source)
static const int registry_lines = 0
#include BENCHMARKS_DEF
    ;
#undef BENCH
#undef SUBCOMMAND
#define BENCH(name, source)
#define SUBCOMMAND(name, source) +1
static const int subcommand_lines = 0
#include BENCHMARKS_DEF
    ;
#undef BENCH
#undef SUBCOMMAND

static int has_param(const struct bench *b, const char *name) {
    for (int k = 0; k < b->nparams; k++)
        if (!strcmp(b->params[k].name, name)) return 1;
    return 0;
}

static int has_column(const struct bench *b, const char *name) {
    for (int k = 0; k < b->ncolumns; k++)
        if (!strcmp(b->columns[k].name, name)) return 1;
    return 0;
}

static int known_latency(const char *kind) {
    for (int k = 0; latency_kinds[k].kind; k++)
        if (!strcmp(latency_kinds[k].kind, kind)) return 1;
    return 0;
}

/* "k=v k=v" split into sets (in buf) */
static int split(const char *params, char *buf, size_t len, char **sets) {
    int n = 0;
    snprintf(buf, len, "%s", params ? params : "");
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < 8;
         t = strtok_r(NULL, " ", &save))
        sets[n++] = t;
    return n;
}

static void test_each_benchmark(void) {
    char err[768];
    int count = 0;
    for (int i = 0; all_benches[i]; i++, count++) {
        const struct bench *b = all_benches[i];
        CHECK(find_bench(b->name) == b); /* names are unique */
        CHECK(b->summary && b->kind && b->run && b->default_n > 0 && b->ncolumns > 0);
        CHECK(!!b->member == !strcmp(b->kind, "ipc"));
        CHECK(!!b->family == !!b->member);
        for (int k = 0; k < b->ncolumns; k++) CHECK(known_latency(b->columns[k].latency));
        for (int k = 0; k < b->nderived; k++) {
            const struct derived_col *d = &b->derived[k];
            /* divided by a number, or by the value of a whole-number parameter */
            CHECK(has_column(b, d->from) && known_latency(d->latency));
            CHECK(d->divide_by_param ? d->divide_by == 0 && has_param(b, d->divide_by_param)
                                     : d->divide_by > 0);
            if (d->minus) CHECK(has_column(b, d->minus) && strcmp(d->minus, d->from));
        }
        for (int k = 0; k < b->n_nrules; k++) CHECK(has_param(b, b->n_rules[k].when.param));
        if (b->display.faults_expected.param) CHECK(has_param(b, b->display.faults_expected.param));
        if (b->display.switches_column) CHECK(has_column(b, b->display.switches_column));
        CHECK(b->display.roles[0] != NULL);
        /* the defaults are a valid run: they parse and pass the benchmark's checks; a
         * benchmark with a far side (kind network) has no default server, and says so */
        struct pval *pv = params_parse_err(b, 0, NULL, err, sizeof err);
        CHECK(pv != NULL);
        if (pv && b->check && strcmp(b->kind, "network"))
            CHECK(b->check(b, pv, err, sizeof err) == 0);
        if (pv && !strcmp(b->kind, "network"))
            CHECK(b->check(b, pv, err, sizeof err) == EXIT_BADINPUT && strstr(err, "host="));
        free(pv);
        /* every scenario's parameters are the benchmark's, with valid values */
        for (int s = 0; s < b->nscenarios; s++) {
            char buf[256], *sets[8];
            int n = split(b->scenarios[s].params, buf, sizeof buf, sets);
            pv = params_parse_err(b, n, sets, err, sizeof err);
            CHECK(pv != NULL);
            free(pv);
        }
    }
    CHECK(count == registry_lines);
    int subs = 0;
    for (int i = 0; all_subcommands[i]; i++, subs++) {
        const struct subcommand *c = all_subcommands[i];
        CHECK(find_subcommand(c->name) == c);   /* names are unique */
        CHECK(!find_bench(c->name));            /* and never a benchmark's */
        CHECK(c->main && c->usage && !strncmp(c->usage, c->name, strlen(c->name)));
    }
    CHECK(subs == subcommand_lines && find_subcommand("serve"));
    CHECK(!find_subcommand("nope"));
#ifndef _WIN32
    CHECK(count >= 24);
#endif
}

static void test_rules(void) {
    char err[768];
    const struct bench *spin = find_bench("spin"), *file = find_bench("file");
    char *same[] = {"cpus=2,2"}, *two[] = {"cpus=0,1"}, *drop[] = {"cache=drop"};
    struct pval *pv = params_parse_err(spin, 1, same, err, sizeof err);
    CHECK(pv && bench_default_n(spin, pv) == 500);
    free(pv);
    pv = params_parse_err(spin, 1, two, err, sizeof err);
    CHECK(pv && bench_default_n(spin, pv) == spin->default_n);
    free(pv);
    pv = params_parse_err(file, 1, drop, err, sizeof err);
    CHECK(pv && bench_default_n(file, pv) == 200);
    CHECK(pv && pcond_holds(file, pv, &file->display.faults_expected));
    free(pv);
    pv = params_parse_err(file, 0, NULL, err, sizeof err);
    CHECK(pv && !pcond_holds(file, pv, &file->display.faults_expected));
    free(pv);
    /* yield refuses two CPUs with its own words, from its placements */
    const struct bench *yield = find_bench("yield");
    pv = params_parse_err(yield, 1, two, err, sizeof err);
    CHECK(pv && yield->check(yield, pv, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "needs both parties on one CPU") != NULL);
    free(pv);
}

int main(void) {
    test_each_benchmark();
    if (find_bench("spin")) test_rules(); /* the rules of the Linux benchmarks */
    return check_report();
}
