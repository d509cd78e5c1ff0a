/* latscope-probe: the registry of benchmarks, built from benchmarks.def (in `--list` order). */
#include <string.h>

#include "core/bench.h"

/* the benchmarks this system builds: benchmarks.def, or the one meson names (Windows:
 * win/benchmarks.def) */
#ifndef BENCHMARKS_DEF
#define BENCHMARKS_DEF "benchmarks.def"
#endif

#define BENCH(name, source) extern const struct bench bench_##name;
#include BENCHMARKS_DEF
#undef BENCH

const struct bench *const all_benches[] = {
#define BENCH(name, source) &bench_##name,
#include BENCHMARKS_DEF
#undef BENCH
    NULL,
};

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
