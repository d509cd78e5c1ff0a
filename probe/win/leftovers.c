/* latscope-probe on Windows: no leftovers record (core/leftovers.c).  What a killed run leaves
 * is the output's temporary (OUTPUT.tmp.RANDOM) and the file benchmark's test file, named in
 * its private directory under %TEMP%: docs/windows.md says so; the benchmarks here create no
 * object that outlives its handles. */
#include "core/probe.h"

int leftovers_open(int dirfd, const char *outname) {
    (void)dirfd, (void)outname;
    return 0;
}
int leftovers_sysv(enum leftover_kind kind, int id) {
    (void)kind, (void)id;
    return -1;
}
int leftovers_entry(enum leftover_kind kind, int dirfd, const char *dirpath, const char *name) {
    (void)kind, (void)dirfd, (void)dirpath, (void)name;
    return -1;
}
void leftovers_release(int handle) { (void)handle; }
