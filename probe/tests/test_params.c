/* Unit tests of parameter parsing: values, defaults, the one-line refusals, and numbers written
 * only as the lab writes them. */
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
    /* numbers as the lab writes them, and nothing else */
    const char *end;
    CHECK(parse_digits("0", &v, &end) == 0 && v == 0 && !*end);
    CHECK(parse_digits("1234", &v, &end) == 0 && v == 1234 && !*end);
    CHECK(parse_digits("12k", &v, &end) == 0 && v == 12 && !strcmp(end, "k"));
    CHECK(parse_digits("9223372036854775807", &v, &end) == 0 && v == 9223372036854775807LL);
    const char *refused[] = {"", "+5", "-5", " 1", "010", "00", "x", "9223372036854775808"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        CHECK(parse_digits(refused[i], &v, &end) == -1);
    CHECK(parse_digits("0x10", &v, &end) == 0 && !strcmp(end, "x10")); /* the caller refuses */
    CHECK(parse_size("1 ", &v) == -1 && parse_size(" 1", &v) == -1 && parse_size("+1", &v) == -1);
    CHECK(parse_size("0x10", &v) == -1 && parse_size("010", &v) == -1);
    CHECK(parse_size("0", &v) == 0 && v == 0);
    const struct bench *sc = find_bench("syscall");
    const char *badints[] = {"batch=+5", "batch= 5", "batch=5 ", "batch=", "batch=0x10",
                             "batch=010", "cpu=+0", "cpu=-1"};
    for (size_t i = 0; i < sizeof badints / sizeof *badints; i++) {
        char *one[] = {(char *)badints[i]};
        CHECK(params_parse_err(sc, 1, one, err, sizeof err) == NULL);
    }
}

static void test_random_hex(void) {
    char a[RANDOM_HEX_LEN + 1], b[RANDOM_HEX_LEN + 1];
    random_hex(a);
    random_hex(b);
    CHECK(strlen(a) == RANDOM_HEX_LEN && strspn(a, "0123456789abcdef") == RANDOM_HEX_LEN);
    CHECK(strcmp(a, b) != 0);
}

int main(void) {
    test_params();
    test_random_hex();
    return check_report();
}
