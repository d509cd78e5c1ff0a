/* Unit tests of parameter parsing: values, defaults, and the one-line refusals. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "tests/check.h"

static void test_params(void) {
    char err[512];
    const struct bench *f = find_bench("file");
    CHECK(f != NULL);
    char *ok[] = {"size=64k", "cache=fadvise", "fsync=true"};
    struct pval *pv = params_parse_err(f, 3, ok, err, sizeof err);
    CHECK(pv != NULL);
    if (pv) {
        CHECK(pv[2].i == 65536);
        CHECK(!strcmp(pv[3].s, "fadvise"));
        CHECK(pv[5].i == 1);
        CHECK(!strcmp(pv[4].s, "create")); /* default filled in */
        free(pv);
    }
    char *unknown[] = {"colour=red"};
    CHECK(params_parse_err(f, 1, unknown, err, sizeof err) == NULL);
    CHECK(strstr(err, "no parameter 'colour'") != NULL);
    char *badenum[] = {"cache=lukewarm"};
    CHECK(params_parse_err(f, 1, badenum, err, sizeof err) == NULL);
    CHECK(strstr(err, "choose one of warm, drop, fadvise, direct") != NULL);
    char *badsize[] = {"size=0"};
    CHECK(params_parse_err(f, 1, badsize, err, sizeof err) == NULL);
    char *noeq[] = {"size"};
    CHECK(params_parse_err(f, 1, noeq, err, sizeof err) == NULL);
    char *twice[] = {"size=1", "size=2"};
    CHECK(params_parse_err(f, 2, twice, err, sizeof err) == NULL);
    const struct bench *p = find_bench("pipe");
    char *cpus[] = {"cpus=0,1"};
    pv = params_parse_err(p, 1, cpus, err, sizeof err);
    CHECK(pv && pv[1].cpu[0] == 0 && pv[1].cpu[1] == 1);
    free(pv);
    char *badcpus[] = {"cpus=0"};
    CHECK(params_parse_err(p, 1, badcpus, err, sizeof err) == NULL);
    char *badcpus2[] = {"cpus=a,b"};
    CHECK(params_parse_err(p, 1, badcpus2, err, sizeof err) == NULL);
    long long v;
    CHECK(parse_size("4KiB", &v) == 0 && v == 4096);
    CHECK(parse_size("1M", &v) == 0 && v == 1048576);
    CHECK(parse_size("12x", &v) == -1);
    CHECK(parse_size("-5", &v) == -1);
}

int main(void) {
    test_params();
    return check_report();
}
