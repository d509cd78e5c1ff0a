/* What the file benchmark's two builds declare alike: bench/file.c (POSIX) and win/file.c
 * (Windows) take the same parameters; those whose meaning does not depend on the system are
 * declared once, here. */
#ifndef LATSCOPE_BENCH_FILE_H
#define LATSCOPE_BENCH_FILE_H

#include "core/bench.h"

static const char *const open_choices[] = {"create", "existing", NULL};
static const char *const order_choices[] = {"wr", "rw", NULL};

#define FILE_PARAM_FILE                                                                        \
    {"file", P_STR, "", NULL,                                                                  \
     "name of the test file inside dir (default: latscope-PID-RANDOM.dat); it must not "      \
     "exist, and is removed afterwards",                                                       \
     NULL, 0, 0, NULL}
#define FILE_PARAM_SIZE                                                                        \
    {"size", P_SIZE, "4096", "bytes", "bytes written and read per iteration", NULL, 1,        \
     1LL << 30, NULL}
#define FILE_PARAM_CPU                                                                         \
    {"cpu", P_CPU, "none", "cpu", "pin the measuring thread to this CPU (none: unpinned)",    \
     NULL, 0, 0, NULL}

#endif
