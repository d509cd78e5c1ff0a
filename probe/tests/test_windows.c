/* Unit tests of the Windows port (run under Wine by meson test): the platform layer's answers,
 * the clock (QueryPerformanceCounter), the one-process run and the file benchmark's refusal
 * of sizes FILE_FLAG_NO_BUFFERING cannot take. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"
#include "tests/check.h"

static void test_platform(void) {
    struct plat_os os;
    plat_os(&os);
    CHECK(!strcmp(os.sysname, "Windows"));
    CHECK(os.release[0] != 0 && os.version[0] != 0);
    CHECK(!strcmp(os.machine, "x86_64"));
    CHECK(os.uid == -1 && os.euid == -1);
    struct emulation em; /* the tests run under Wine */
    CHECK(plat_emulation(&em) == 1 && !strncmp(em.emulator, "wine ", 5));
    CHECK(plat_cpus_online() >= 1 && plat_cpu_usable(0) && !plat_cpu_usable(4095));
    CHECK(plat_page_size() >= 4096);
    CHECK(plat_available_memory() > 0);
    unsigned char a[16] = {0}, b[16] = {0};
    CHECK(plat_random(a, sizeof a) == 0 && plat_random(b, sizeof b) == 0);
    CHECK(memcmp(a, b, sizeof a) != 0);
    struct fsinfo fs;
    CHECK(plat_fsinfo(".", &fs) == 0 && fs.mount_point[0] != 0 && fs.path[0] != 0);
    CHECK(plat_fd_valid(1) && !plat_fd_valid(9999));
    CHECK(plat_pin_thread(0) == 0);
}

static void test_qpc(void) {
    enum clock_kind k;
    CHECK(clock_parse("auto", &k) == 0 && k == CLK_QPC);
    CHECK(clock_parse("qpc", &k) == 0 && k == CLK_QPC);
    CHECK(qpc_frequency() > 0);
    struct clock_info ci;
    clock_setup(CLK_QPC, &ci);
    CHECK(!strcmp(ci.name, "qpc"));
    CHECK(fabs(ci.ns_per_tick - 1e9 / (double)qpc_frequency()) < 1e-9);
    CHECK(ci.step_ns >= ci.ns_per_tick && ci.overhead_ns > 0);
    uint64_t t0 = clk_start(), t1 = clk_end();
    CHECK(t1 >= t0);
    CHECK(AUTO_WORKERS == 1);
}

static void test_file_check(void) {
    const struct bench *f = find_bench("file");
    char err[512], *direct4[] = {"cache=direct", "size=4"}, *direct8k[] = {"cache=direct",
                                                                          "size=8k"};
    struct pval *pv = params_parse_err(f, 2, direct4, err, sizeof err);
    CHECK(pv && f->check(f, pv, err, sizeof err) == EXIT_BADINPUT);
    CHECK(strstr(err, "multiple of 4096") != NULL);
    free(pv);
    pv = params_parse_err(f, 2, direct8k, err, sizeof err);
    CHECK(pv && f->check(f, pv, err, sizeof err) == 0);
    free(pv);
    char *slash[] = {"file=a\\b"};
    pv = params_parse_err(f, 1, slash, err, sizeof err);
    CHECK(pv && f->check(f, pv, err, sizeof err) == EXIT_BADINPUT);
    free(pv);
}

int main(void) {
    test_platform();
    test_qpc();
    test_file_check();
    return check_report();
}
