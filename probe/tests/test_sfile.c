/* Unit tests of the sample-file writer: layout, CRC trailer, never overwriting. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "tests/check.h"

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

int main(void) {
    test_sample_file();
    return check_report();
}
