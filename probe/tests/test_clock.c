/* Unit tests of the probe's building blocks: clock calibration, the sample-file writer,
 * argument parsing, mountinfo parsing.  Built with -fsanitize=address,undefined (Makefile). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "platform/platform.h"

static int failures = 0, passed = 0;
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failures++;                                                              \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
        }                                                                            \
    } while (0)

static void test_clock_calibration(void) {
    if (HAVE_TSC && tsc_invariant()) {
        double ppm = 0;
        double a = clock_tsc_calibrate(50, &ppm);
        double b = clock_tsc_calibrate(50, &ppm);
        CHECK(a > 0.01 && a < 100); /* between 10 GHz and 10 MHz */
        CHECK(fabs(a - b) / a < 0.01); /* two calibrations agree to 1% */
        CHECK(ppm > 0 && ppm < 10000);
        struct clock_info ci;
        clock_setup(CLK_TSC, &ci);
        CHECK(ci.ns_per_tick > 0);
        CHECK(ci.overhead_ns > 0);
        CHECK(ci.resolution_ns > 0);
        CHECK(ci.step_ns > 0 && ci.step_ns < ci.overhead_ns * 4);
        /* the TSC, converted, advances like CLOCK_MONOTONIC_RAW over 20 ms (within 2%) */
        uint64_t t0 = tsc_start(), m0 = posix_now(CLOCK_MONOTONIC_RAW);
        usleep(20000);
        uint64_t t1 = tsc_end(), m1 = posix_now(CLOCK_MONOTONIC_RAW);
        double dt = (double)(t1 - t0) * ci.ns_per_tick, dm = (double)(m1 - m0);
        CHECK(fabs(dt - dm) / dm < 0.02);
    }
    struct clock_info ci;
    clock_setup(CLK_MONO_RAW, &ci);
    CHECK(ci.ns_per_tick == 1.0);
    CHECK(ci.overhead_ns > 0 && ci.overhead_ns < 1e6);
    CHECK(ci.resolution_ns >= ci.getres_ns);
    CHECK(ci.step_ns >= 1.0 && ci.step_ns == ci.resolution_ns);
    enum clock_kind k;
    CHECK(clock_parse("mono", &k) == 0 && k == CLK_MONO);
    CHECK(clock_parse("sundial", &k) == -1);
}

/* The step finder on synthetic deltas whose spacing is known. */
static void test_clock_step(void) {
    uint64_t d[4000];
    unsigned seed = 12345;
    size_t n = 0;
    /* multiples of 26 ticks (1..40 steps), with 2% off-grid values */
    for (int i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t k = 1 + (seed >> 16) % 40;
        d[n++] = (i % 50 == 7) ? k * 26 + 2 + (seed >> 8) % 22 : k * 26;
    }
    CHECK(fabs(clock_step_from_deltas(d, n) - 26) < 0.2);
    /* the bulk at two steps (the read cost), fewer at one to twelve, one off-grid: 26, not 52 */
    n = 0;
    for (int i = 0; i < 1000; i++) d[n++] = 52;
    for (int r = 0; r < 3; r++)
        for (int k = 1; k <= 12; k++) d[n++] = 26 * (uint64_t)k;
    d[n++] = 61;
    CHECK(fabs(clock_step_from_deltas(d, n) - 26) < 0.2);
    /* a step that is not a whole number of ticks (this VM's TSC: ~24.5), values rounded and
     * jittered by a tick */
    n = 0;
    for (int i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        double k = (double)(1 + (seed >> 16) % 30);
        int jitter = (seed >> 4) % 4 == 0 ? 1 : 0;
        d[n++] = (uint64_t)floor(k * 24.5 + 0.5) + (uint64_t)jitter;
    }
    CHECK(fabs(clock_step_from_deltas(d, n) - 24.5) < 0.3);
    /* every whole number: step 1 */
    n = 0;
    for (int i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        d[n++] = 20 + (seed >> 16) % 300;
    }
    CHECK(clock_step_from_deltas(d, n) == 1);
    /* with zeros (equal reads) among them: zeros carry no spacing */
    for (int i = 0; i < 500; i++) d[i] = 0;
    CHECK(clock_step_from_deltas(d, n) == 1);
    /* a coarse clock: few values, their spacing */
    uint64_t coarse[] = {4000000, 4000000, 8000000, 4000000};
    CHECK(fabs(clock_step_from_deltas(coarse, 4) - 4000000) < 1);
    /* nothing to go by: never 0 */
    uint64_t zeros[] = {0, 0, 0};
    CHECK(clock_step_from_deltas(zeros, 3) == 1);
    CHECK(clock_step_from_deltas(NULL, 0) == 1);
    /* the grouped median moves within the step: 3 values at 26, 7 at 52 -> inside 52's class */
    uint64_t g[10] = {26, 26, 26, 52, 52, 52, 52, 52, 52, 52};
    double m = clock_grouped_median(g, 10, 26);
    CHECK(m > 39 && m < 65);
    CHECK(fabs(m - (39 + (5.0 - 3.0) / 7.0 * 26)) < 1e-9);
    uint64_t g2[10] = {26, 26, 26, 26, 26, 52, 52, 52, 52, 52};
    CHECK(clock_grouped_median(g2, 10, 26) == 39.0); /* half below the boundary: the boundary */
}

static const struct bench *find(const char *name) {
    for (int i = 0; all_benches[i]; i++)
        if (!strcmp(all_benches[i]->name, name)) return all_benches[i];
    return NULL;
}

static void test_params(void) {
    char err[512];
    const struct bench *f = find("file");
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
    const struct bench *p = find("pipe");
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

static void test_sample_file(void) {
    char dir[] = "/tmp/latscope-ctest-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/s.lss", dir);
    int64_t a[3] = {1, 2, 3}, b[3] = {-4, 5, 1LL << 40};
    int64_t *cols[2] = {a, b};
    CHECK(sfile_write_raw(path, "{\"x\":1}", 2, cols, 3) == 0);
    /* never overwrites */
    CHECK(sfile_write_raw(path, "{}", 2, cols, 3) == -1 && errno == EEXIST);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    char buf[512];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    const char *expect_head = "LATSCOPE-SAMPLES 1\n{\"x\":1}\nDATA 2 3\n";
    CHECK(len > strlen(expect_head) && !memcmp(buf, expect_head, strlen(expect_head)));
    size_t off = strlen(expect_head);
    int64_t got[6];
    memcpy(got, buf + off, sizeof got);
    CHECK(got[0] == 1 && got[2] == 3 && got[3] == -4 && got[5] == (1LL << 40));
    uint32_t crc = crc32_update(0, buf + off, sizeof got);
    char trailer[64];
    snprintf(trailer, sizeof trailer, "\nEND 3 %08x\n", crc);
    CHECK(len == off + sizeof got + strlen(trailer));
    CHECK(!memcmp(buf + off + sizeof got, trailer, strlen(trailer)));
    /* the CRC-32 of "123456789" is cbf43926 */
    CHECK(crc32_update(0, "123456789", 9) == 0xcbf43926u);
    unlink(path);
    rmdir(dir);
}

static void test_mountinfo(void) {
    char mnt[256], type[64], src[256], opts[256];
    const char *line = "36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime master:1 - ext4 /dev/sda1 "
                       "rw,errors=continue\n";
    CHECK(fsinfo_parse_line(line, mnt, sizeof mnt, type, sizeof type, src, sizeof src, opts,
                            sizeof opts) == 0);
    CHECK(!strcmp(mnt, "/mnt/my disk"));
    CHECK(!strcmp(type, "ext4"));
    CHECK(!strcmp(src, "/dev/sda1"));
    CHECK(strstr(opts, "noatime") && strstr(opts, "errors=continue"));
    CHECK(fsinfo_parse_line("garbage", mnt, sizeof mnt, type, sizeof type, src, sizeof src, opts,
                            sizeof opts) == -1);
    struct fsinfo fi;
    CHECK(fsinfo_for("/", &fi) == 0 && fi.fstype[0] != 0 && !strcmp(fi.mountpoint, "/"));
    if (access("/dev/shm", F_OK) == 0) {
        CHECK(fsinfo_for("/dev/shm", &fi) == 0 && !strcmp(fi.fstype, "tmpfs"));
    }
}

int main(void) {
    test_clock_calibration();
    test_clock_step();
    test_params();
    test_sample_file();
    test_mountinfo();
    printf("%d passed, %d failed\n", passed, failures);
    return failures ? 1 : 0;
}
