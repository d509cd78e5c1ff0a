/* Unit tests of the platform layer: mountinfo parsing and the file system of a path. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "tests/check.h"

static const char MOUNTINFO[] =
    "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "28 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
    "40 28 8:17 / /mnt rw,relatime shared:20 - ext4 /dev/sdb1 rw\n"
    "41 40 8:33 / /mnt/my\\040disk rw,noatime shared:21 - xfs /dev/sdc1 rw,attr2,inode64\n"
    "42 28 0:40 / /scratch rw,relatime shared:22 - ext4 /dev/sdd1 rw\n"
    "43 28 0:41 / /scratch rw,nosuid shared:23 - tmpfs tmpfs rw,size=1024k\n";

/* The mount of a resolved path in MOUNTINFO; its fields in fi. */
static int mount_of(const char *real, struct fsinfo *fi) {
    memset(fi, 0, sizeof *fi);
    FILE *f = fmemopen((void *)MOUNTINFO, sizeof MOUNTINFO - 1, "r");
    if (!f) return -2;
    int r = plat_fsinfo_mount(f, real, fi);
    fclose(f);
    return r;
}

static void test_mountinfo(void) {
    struct fsinfo fi;
    memset(&fi, 0, sizeof fi);
    const char *line = "36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime master:1 - ext4 /dev/sda1 "
                       "rw,errors=continue\n";
    CHECK(plat_fsinfo_parse_line(line, &fi) == 0);
    CHECK(!strcmp(fi.mount_point, "/mnt/my disk"));
    CHECK(!strcmp(fi.fstype, "ext4"));
    CHECK(!strcmp(fi.source, "/dev/sda1"));
    CHECK(!strcmp(fi.mount_options, "rw,noatime"));
    CHECK(!strcmp(fi.super_options, "rw,errors=continue"));
    CHECK(plat_fsinfo_parse_line("garbage", &fi) == -1);
    /* escapes in the source too */
    CHECK(plat_fsinfo_parse_line("36 35 98:0 /m /mnt/a\\011b rw shared:1 master:2 - ext3 "
                                 "/dev/x\\134y rw\n", &fi) == 0);
    CHECK(!strcmp(fi.mount_point, "/mnt/a\tb") && !strcmp(fi.source, "/dev/x\\y"));
}

static void test_mount_of_a_path(void) {
    struct fsinfo fi;
    /* the longest mount point that is the path or a parent of it */
    CHECK(mount_of("/mnt/my disk/data/run.bin", &fi) == 0);
    CHECK(!strcmp(fi.fstype, "xfs") && !strcmp(fi.source, "/dev/sdc1"));
    CHECK(!strcmp(fi.mount_point, "/mnt/my disk"));
    CHECK(!strcmp(fi.mount_options, "rw,noatime"));
    CHECK(!strcmp(fi.super_options, "rw,attr2,inode64"));
    /* a sibling whose name merely starts with the mount point is not inside it */
    CHECK(mount_of("/mnt/my diskette/x", &fi) == 0 && !strcmp(fi.mount_point, "/mnt"));
    CHECK(mount_of("/mnt", &fi) == 0 && !strcmp(fi.fstype, "ext4"));
    CHECK(mount_of("/home/u/f", &fi) == 0 && !strcmp(fi.mount_point, "/"));
    /* two mounts on one point: the later one lies on top */
    CHECK(mount_of("/scratch/f", &fi) == 0 && !strcmp(fi.fstype, "tmpfs"));
}

static void test_this_system(void) {
    struct fsinfo fi;
    CHECK(plat_fsinfo("/", &fi) == 0 && fi.fstype[0] != 0 && !strcmp(fi.mount_point, "/"));
    CHECK(!strcmp(fi.path, "/"));
    if (access("/dev/shm", F_OK) == 0) {
        CHECK(plat_fsinfo("/dev/shm", &fi) == 0 && !strcmp(fi.fstype, "tmpfs"));
    }
    CHECK(plat_fsinfo("/no/such/dir", &fi) == -1 && !strcmp(fi.path, "/no/such/dir"));
}

/* Run under an emulator (a cross build's tests: LATSCOPE_TEST_EMULATOR names it, from the
 * cross file), the probe sees it; elsewhere the answer is one of the two, described if 1. */
static void test_emulation(void) {
    struct emulation em;
    const char *expect = getenv("LATSCOPE_TEST_EMULATOR");
    int r = plat_emulation(&em);
    if (expect && *expect) {
        CHECK(r == 1 && !strcmp(em.emulator, expect) && em.evidence[0] != 0);
    } else {
        CHECK(r == 0 || r == 1);
        CHECK(r == 0 ? em.emulator[0] == 0 : em.emulator[0] != 0 && em.evidence[0] != 0);
    }
}

int main(void) {
    test_emulation();
    test_mountinfo();
    test_mount_of_a_path();
    test_this_system();
    return check_report();
}
