/* Unit tests of the sample-file writer: layout, the CRC trailer over the whole file, the
 * limits a reader accepts, never overwriting. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "core/json.h"
#include "tests/check.h"

static char dir[] = "/tmp/latscope-ctest-XXXXXX";

static size_t slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return 0;
    size_t len = fread(buf, 1, cap, f);
    fclose(f);
    return len;
}

static void test_sample_file(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/s.lss", dir);
    int64_t a[3] = {1, 2, 3}, b[3] = {-4, 5, 1LL << 40};
    int64_t *cols[2] = {a, b};
    CHECK(sfile_write_raw(path, "{\"x\":1}", 2, cols, 3) == 0);
    /* never overwrites */
    CHECK(sfile_write_raw(path, "{}", 2, cols, 3) == -1 && errno == EEXIST);
    char buf[512];
    size_t len = slurp(path, buf, sizeof buf);
    const char *expect_head = "LATSCOPE-SAMPLES 2\n{\"x\":1}\nDATA 2 3\n";
    CHECK(SAMPLE_FORMAT_VERSION == 2);
    CHECK(len > strlen(expect_head) && !memcmp(buf, expect_head, strlen(expect_head)));
    size_t off = strlen(expect_head);
    int64_t got[6];
    memcpy(got, buf + off, sizeof got);
    CHECK(got[0] == 1 && got[2] == 3 && got[3] == -4 && got[5] == (1LL << 40));
    /* version 2: the CRC covers every byte before the END line, the header included */
    uint32_t crc = crc32_update(0, buf, off + sizeof got);
    CHECK(crc != crc32_update(0, buf + off, sizeof got));
    char trailer[64];
    snprintf(trailer, sizeof trailer, "\nEND 3 %08x\n", crc);
    CHECK(len == off + sizeof got + strlen(trailer));
    CHECK(!memcmp(buf + off + sizeof got, trailer, strlen(trailer)));
    /* the CRC-32 of "123456789" is cbf43926, and it can be computed in pieces */
    CHECK(crc32_update(0, "123456789", 9) == 0xcbf43926u);
    CHECK(crc32_update(crc32_update(0, "1234", 4), "56789", 5) == 0xcbf43926u);
    unlink(path);
}

static void test_zero_rows(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/z.lss", dir);
    int64_t a[1] = {0};
    int64_t *cols[1] = {a};
    CHECK(sfile_write_raw(path, "{}", 1, cols, 0) == 0);
    char buf[256];
    size_t len = slurp(path, buf, sizeof buf);
    const char *head = "LATSCOPE-SAMPLES 2\n{}\nDATA 1 0\n";
    char want[256];
    snprintf(want, sizeof want, "%s\nEND 0 %08x\n", head, crc32_update(0, head, strlen(head)));
    CHECK(len == strlen(want) && !memcmp(buf, want, len));
    unlink(path);
}

/* What a reader would refuse is never written: no file is left either. */
static void test_limits(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/l.lss", dir);
    int64_t a[1] = {0};
    int64_t *cols[1] = {a};
    CHECK(sfile_write_raw(path, "", 1, cols, 1) == -1 && errno == EINVAL);
    CHECK(sfile_write_raw(path, "{\n}", 1, cols, 1) == -1 && errno == EINVAL);
    CHECK(sfile_write_raw(path, "{}", 0, cols, 1) == -1 && errno == EINVAL);
    CHECK(sfile_write_raw(path, "{}", SAMPLE_MAX_COLUMNS + 1, cols, 1) == -1 && errno == EINVAL);
    CHECK(sfile_write_raw(path, "{}", 1, cols, SAMPLE_MAX_ROWS + 1) == -1 && errno == EINVAL);
    size_t big = SAMPLE_MAX_HEADER + 1;
    char *h = malloc(big + 1);
    CHECK(h != NULL);
    if (h) {
        memset(h, ' ', big);
        h[0] = '{';
        h[big - 1] = '}';
        h[big] = 0;
        CHECK(sfile_write_raw(path, h, 1, cols, 1) == -1 && errno == EINVAL);
        h[big - 2] = '}';
        h[big - 1] = 0; /* exactly the limit */
        CHECK(sfile_write_raw(path, h, 1, cols, 1) == 0);
        free(h);
    }
    unlink(path);
    CHECK(access(path, F_OK) != 0);
}

/* The header is valid UTF-8 whatever bytes a path or an argument holds: a byte that does
 * not start a valid sequence becomes U+FFFD; valid sequences pass; control bytes are escaped. */
static void test_header_strings_are_utf8(void) {
    struct jbuf j;
    jb_init(&j);
    jb_str(&j, NULL, "a\xff\xc3\xa9\xed\xa0\x80\xf0\x9f\x98\x80\x7f\xe2\x82");
    const char *want =
        "\"a\\ufffd\xc3\xa9\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80\\u007f\\ufffd\\ufffd\"";
    CHECK(strcmp(j.s, want) == 0);
    jb_free(&j);
}

int main(void) {
    CHECK(mkdtemp(dir) != NULL);
    test_sample_file();
    test_zero_rows();
    test_limits();
    test_header_strings_are_utf8();
    rmdir(dir);
    return check_report();
}
