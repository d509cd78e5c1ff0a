/* latscope-probe: the registry of benchmarks, in the order `--list` shows them. */
#include "bench.h"

const struct bench *const all_benches[] = {
    &bench_syscall,
    &bench_file,
    &bench_pipe,
    NULL,
};
