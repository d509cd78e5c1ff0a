/* latscope-probe: the registry of benchmarks, built from benchmarks.def (in `--list` order). */
#include <string.h>

#include "core/bench.h"

/* the benchmarks this system builds: benchmarks.def, or the one meson names (Windows:
 * win/benchmarks.def) */
#ifndef BENCHMARKS_DEF
#define BENCHMARKS_DEF "benchmarks.def"
#endif

#define BENCH(name, source) extern const struct bench bench_##name;
#define SUBCOMMAND(name, source) extern const struct subcommand subcommand_##name;
#include BENCHMARKS_DEF
#undef BENCH
#undef SUBCOMMAND

const struct bench *const all_benches[] = {
#define BENCH(name, source) &bench_##name,
#define SUBCOMMAND(name, source)
#include BENCHMARKS_DEF
#undef BENCH
#undef SUBCOMMAND
    NULL,
};

const struct subcommand *const all_subcommands[] = {
#define BENCH(name, source)
#define SUBCOMMAND(name, source) &subcommand_##name,
#include BENCHMARKS_DEF
#undef BENCH
#undef SUBCOMMAND
    NULL,
};

const struct subcommand *find_subcommand(const char *name) {
    for (int i = 0; all_subcommands[i]; i++)
        if (!strcmp(all_subcommands[i]->name, name)) return all_subcommands[i];
    return NULL;
}

const struct bench *find_bench(const char *name) {
    for (int i = 0; all_benches[i]; i++)
        if (!strcmp(all_benches[i]->name, name)) return all_benches[i];
    return NULL;
}

long long bench_default_n(const struct bench *b, const struct pval *pv) {
    for (int k = 0; k < b->n_nrules; k++)
        if (pcond_holds(b, pv, &b->n_rules[k].when)) return b->n_rules[k].n;
    return b->default_n;
}
