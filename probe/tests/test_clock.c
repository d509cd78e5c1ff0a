/* Unit tests of the clocks: TSC calibration, the read cost, the step finder, the grouped
 * median.  Built with the sanitizers in the sanitizer build (meson test). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "tests/check.h"

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

/* The ARM generic timer's counter: where it can be read, measured as the TSC is and advancing
 * like CLOCK_MONOTONIC_RAW at CNTFRQ; where it cannot, auto chooses mono_raw. */
static void test_cntvct(void) {
    enum clock_kind k;
    CHECK(clock_parse("auto", &k) == 0);
    if (!HAVE_CNTVCT) {
        CHECK(clock_parse("cntvct", &k) == -1); /* x86 takes the clocks it always took */
        CHECK(cntvct_unusable() != NULL);
        return;
    }
    CHECK(clock_parse("cntvct", &k) == 0 && k == CLK_CNTVCT);
    CHECK(!strcmp(clock_name(CLK_CNTVCT), "cntvct"));
    if (cntvct_unusable()) {
        CHECK(clock_parse("auto", &k) == 0 && k == CLK_MONO_RAW);
        return;
    }
    CHECK(clock_parse("auto", &k) == 0 && k == CLK_CNTVCT);
    struct clock_info ci;
    clock_setup(CLK_CNTVCT, &ci);
    CHECK(ci.frequency_hz >= 1e6 && ci.frequency_hz <= 1e10);
    CHECK(fabs(ci.ns_per_tick * ci.frequency_hz - 1e9) < 1e-3);
    CHECK(ci.overhead_ns > 0 && ci.step_ns >= ci.ns_per_tick * 0.99);
    uint64_t t0 = cntvct_start(), m0 = posix_now(CLOCK_MONOTONIC_RAW);
    usleep(20000);
    uint64_t t1 = cntvct_end(), m1 = posix_now(CLOCK_MONOTONIC_RAW);
    double dt = (double)(t1 - t0) * ci.ns_per_tick, dm = (double)(m1 - m0);
    CHECK(fabs(dt - dm) / dm < 0.02);
    clock_setup(CLK_MONO_RAW, &ci); /* back to the default of the other tests */
}

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

int main(void) {
    test_clock_calibration();
    test_cntvct();
    test_clock_step();
    return check_report();
}
