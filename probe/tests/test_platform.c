/* Unit tests of the platform layer: mountinfo parsing and the file system of a path. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "tests/check.h"

static void test_mountinfo(void) {
    char mnt[256], type[64], src[256], opts[256];
    const char *line = "36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime master:1 - ext4 /dev/sda1 "
                       "rw,errors=continue\n";
    CHECK(plat_fsinfo_parse_line(line, mnt, sizeof mnt, type, sizeof type, src, sizeof src, opts,
                            sizeof opts) == 0);
    CHECK(!strcmp(mnt, "/mnt/my disk"));
    CHECK(!strcmp(type, "ext4"));
    CHECK(!strcmp(src, "/dev/sda1"));
    CHECK(strstr(opts, "noatime") && strstr(opts, "errors=continue"));
    CHECK(plat_fsinfo_parse_line("garbage", mnt, sizeof mnt, type, sizeof type, src, sizeof src, opts,
                            sizeof opts) == -1);
    struct fsinfo fi;
    CHECK(plat_fsinfo("/", &fi) == 0 && fi.fstype[0] != 0 && !strcmp(fi.mountpoint, "/"));
    if (access("/dev/shm", F_OK) == 0) {
        CHECK(plat_fsinfo("/dev/shm", &fi) == 0 && !strcmp(fi.fstype, "tmpfs"));
    }
}

int main(void) {
    test_mountinfo();
    return check_report();
}
