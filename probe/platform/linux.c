/* latscope-probe: the platform layer for Linux (platform.h): affinity, /proc and /sys, prctl,
 * signalfd, getrusage per thread, getrandom, renameat2, mountinfo and statfs, drop_caches. */
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- CPUs and memory */

int plat_pin_thread(int cpu) {
    if (cpu < 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return errno;
    return 0;
}

static int relock_children = 0;

/* In a forked child: memory locks are not inherited (mlockall(2)), so lock again. */
static void relock(void) {
    if (relock_children) (void)mlockall(MCL_CURRENT | MCL_FUTURE);
}

int plat_realtime(int policy, int prio, int lock) {
    static int registered = 0;
    if (lock) {
        if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) return errno;
        relock_children = 1;
        if (!registered) {
            plat_atfork(NULL, NULL, relock);
            registered = 1;
        }
    }
    if (policy != PLAT_RT_NONE) {
        struct sched_param sp = {.sched_priority = prio};
        if (sched_setscheduler(0, policy == PLAT_RT_FIFO ? SCHED_FIFO : SCHED_RR, &sp) != 0)
            return errno;
    }
    return 0;
}

void plat_realtime_undo(void) {
    struct sched_param sp = {.sched_priority = 0};
    (void)sched_setscheduler(0, SCHED_OTHER, &sp);
    (void)munlockall();
    relock_children = 0;
}

int plat_realtime_max(void) {
    int m = sched_get_priority_max(SCHED_FIFO);
    return m > 0 ? m : 0;
}

static cpu_set_t saved_affinity;
static int have_saved_affinity = 0;

int plat_affinity_save(void) {
    if (sched_getaffinity(0, sizeof saved_affinity, &saved_affinity) != 0) return errno;
    have_saved_affinity = 1;
    return 0;
}

int plat_affinity_restore(void) {
    if (!have_saved_affinity) return 0;
    if (sched_setaffinity(0, sizeof saved_affinity, &saved_affinity) != 0) return errno;
    return 0;
}

int plat_cpu_usable(int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_ISSET(cpu, &set);
}

int plat_cpus_configured(void) { return (int)sysconf(_SC_NPROCESSORS_CONF); }
int plat_cpus_online(void) { return (int)sysconf(_SC_NPROCESSORS_ONLN); }

long long plat_available_memory(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* ---------------------------------------------------------------- system facts */

static int first_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

int plat_cpu_model(char *buf, size_t len) {
    buf[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[1024];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10) || !strncmp(line, "Model", 5)) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 2;
                colon[strcspn(colon, "\n")] = 0;
                snprintf(buf, len, "%s", colon);
                found = 0;
                break;
            }
        }
    }
    fclose(f);
    return found;
}

int plat_clocksource(char *buf, size_t len) {
    buf[0] = 0;
    return first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", buf,
                      len);
}

int plat_tsc_invariant(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc") &&
                 strstr(line, " rdtscp");
            break;
        }
    }
    fclose(f);
    return ok;
}

int plat_emulation(struct emulation *out) {
    memset(out, 0, sizeof *out);
    char self[1024], thread[1024];
    ssize_t a = readlink("/proc/self/exe", self, sizeof self - 1);
    ssize_t b = readlink("/proc/thread-self/exe", thread, sizeof thread - 1);
    if (a > 0 && b > 0) {
        self[a] = thread[b] = 0;
        const char *base = strrchr(thread, '/');
        base = base ? base + 1 : thread;
        if (strcmp(self, thread) != 0 && strncmp(base, "qemu-", 5) == 0) {
            snprintf(out->emulator, sizeof out->emulator, "qemu-user");
            snprintf(out->evidence, sizeof out->evidence,
                     "the kernel runs %.200s for this program (/proc/thread-self/exe)", thread);
            return 1;
        }
    }
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[1024], vendor[128] = "";
    int x86 = 0, arm = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "vendor_id", 9) && !x86) {
            x86 = 1;
            const char *colon = strchr(line, ':');
            snprintf(vendor, sizeof vendor, "%s", colon ? colon + 1 + (colon[1] == ' ') : "");
            vendor[strcspn(vendor, "\n")] = 0;
        }
        if (!strncmp(line, "CPU implementer", 15) || !strncmp(line, "CPU architecture", 16))
            arm = 1;
    }
    fclose(f);
#if defined(__aarch64__) || defined(__arm__)
    int other = x86 && !arm;
    const char *what = "an x86 CPU";
#elif defined(__x86_64__) || defined(__i386__)
    int other = arm && !x86;
    const char *what = "an ARM CPU";
#else
    int other = 0;
    const char *what = "";
#endif
    if (!other) return 0;
    snprintf(out->emulator, sizeof out->emulator, "a user-mode emulator");
    snprintf(out->evidence, sizeof out->evidence, "/proc/cpuinfo describes %s%s%s%s", what,
             *vendor ? " (" : "", vendor, *vendor ? ")" : "");
    return 1;
}

/* ---------------------------------------------------------------- processes and signals */

int plat_die_with_parent(int sig) { return prctl(PR_SET_PDEATHSIG, sig) == 0 ? 0 : -1; }

unsigned long long plat_proc_start(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) return 0;
    buf[len] = 0;
    /* pid (comm) state ppid ...: the command may hold spaces and parentheses, so count the
     * fields after the last ")": starttime is field 22, the 20th after it (state is the 1st) */
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p++;
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p) return 0;
    }
    return strtoull(p + 1, NULL, 10);
}

int plat_wait_signal(const sigset_t *set, double timeout_s) {
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

int plat_signal_fd_open(const sigset_t *set) { return signalfd(-1, set, SFD_CLOEXEC); }

int plat_signal_fd_read(int fd) {
    struct signalfd_siginfo si;
    if (read(fd, &si, sizeof si) != (ssize_t)sizeof si) return -1;
    return (int)si.ssi_signo;
}

void plat_thread_usage(struct thread_usage *u) {
    struct rusage r;
    memset(&r, 0, sizeof r);
    getrusage(RUSAGE_THREAD, &r);
    u->minflt = r.ru_minflt;
    u->majflt = r.ru_majflt;
    u->nvcsw = r.ru_nvcsw;
    u->nivcsw = r.ru_nivcsw;
}

/* ---------------------------------------------------------------- randomness */

int plat_random(void *buf, size_t len) {
    unsigned char *p = buf;
    while (len) {
        ssize_t r = getrandom(p, len, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

/* ---------------------------------------------------------------- file systems */

int plat_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname) {
    if (renameat2(olddirfd, oldname, newdirfd, newname, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    /* a file system without RENAME_NOREPLACE: linkat refuses an existing name as well */
    if (linkat(olddirfd, oldname, newdirfd, newname, 0) != 0) return -1;
    unlinkat(olddirfd, oldname, 0);
    return 0;
}

int plat_drop_caches_open(void) { return open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC); }

int plat_drop_caches(int fd) {
    sync();
    return pwrite(fd, "3", 1, 0) == 1 ? 0 : -1;
}

/* which file system a path is on: /proc/self/mountinfo and statfs(2) */
void plat_fsinfo_unescape(char *s) {
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

static void copy(char *dst, size_t len, const char *src) {
    snprintf(dst, len, "%s", src ? src : "");
}

int plat_fsinfo_parse_line(const char *line, struct fsinfo *out) {
    /* id parent major:minor root mountpoint options [optional...] - type source superopts */
    char *dup = strdup(line);
    if (!dup) return -1;
    dup[strcspn(dup, "\n")] = 0;
    char *save = NULL, *tok[8] = {0};
    int n = 0;
    char *t = strtok_r(dup, " ", &save);
    while (t && n < 6) {
        tok[n++] = t;
        t = strtok_r(NULL, " ", &save);
    }
    while (t && strcmp(t, "-") != 0) t = strtok_r(NULL, " ", &save);
    if (n < 6 || !t) {
        free(dup);
        return -1;
    }
    char *ftype = strtok_r(NULL, " ", &save);
    char *fsrc = strtok_r(NULL, " ", &save);
    char *super = strtok_r(NULL, " ", &save);
    if (!ftype) {
        free(dup);
        return -1;
    }
    copy(out->mount_point, sizeof out->mount_point, tok[4]);
    plat_fsinfo_unescape(out->mount_point);
    copy(out->fstype, sizeof out->fstype, ftype);
    copy(out->source, sizeof out->source, fsrc);
    plat_fsinfo_unescape(out->source);
    copy(out->mount_options, sizeof out->mount_options, tok[5]);
    copy(out->super_options, sizeof out->super_options, super);
    free(dup);
    return 0;
}

static int is_prefix(const char *mnt, const char *path) {
    size_t l = strlen(mnt);
    if (!strcmp(mnt, "/")) return 1;
    return strncmp(mnt, path, l) == 0 && (path[l] == '/' || path[l] == 0);
}

int plat_fsinfo_mount(FILE *f, const char *real, struct fsinfo *out) {
    char line[4096];
    size_t best = 0;
    int found = 0;
    struct fsinfo m;
    while (fgets(line, sizeof line, f)) {
        memset(&m, 0, sizeof m);
        if (plat_fsinfo_parse_line(line, &m)) continue;
        /* the last of equally long matches wins: it is mounted over the earlier ones */
        if (is_prefix(m.mount_point, real) && strlen(m.mount_point) >= best) {
            best = strlen(m.mount_point);
            copy(out->mount_point, sizeof out->mount_point, m.mount_point);
            copy(out->fstype, sizeof out->fstype, m.fstype);
            copy(out->source, sizeof out->source, m.source);
            copy(out->mount_options, sizeof out->mount_options, m.mount_options);
            copy(out->super_options, sizeof out->super_options, m.super_options);
            found = 1;
        }
    }
    return found ? 0 : -1;
}

/* One line of a sysfs file under dir, newline stripped, into buf ("" where unreadable). */
static void sys_line(const char *dir, const char *name, char *buf, size_t len) {
    char p[PATH_MAX];
    buf[0] = 0;
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, name) >= sizeof p) return;
    FILE *f = fopen(p, "r");
    if (!f) return;
    if (!fgets(buf, (int)len, f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
}

/* The block device behind the file system of path, its queue's facts: /sys/dev/block/M:m,
 * or its parent for a partition. */
static void fs_device(const char *real, struct fsinfo *out) {
    struct stat st;
    char dir[PATH_MAX], base[PATH_MAX], line[128];
    if (stat(real, &st) != 0 || major(st.st_dev) == 0) return; /* tmpfs, overlay, ...: none */
    snprintf(dir, sizeof dir, "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
    if (!realpath(dir, base)) return;
    sys_line(base, "partition", line, sizeof line);
    if (line[0]) { /* a partition: the queue is its disk's */
        char *slash = strrchr(base, '/');
        if (slash) *slash = 0;
    }
    const char *name = strrchr(base, '/');
    snprintf(out->device, sizeof out->device, "%.63s", name ? name + 1 : base);
    char q[PATH_MAX + 8];
    snprintf(q, sizeof q, "%s/queue", base);
    sys_line(q, "write_cache", out->write_cache, sizeof out->write_cache);
    sys_line(q, "scheduler", line, sizeof line); /* "none [mq-deadline] kyber": the current */
    char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
    if (a && b) {
        *b = 0;
        snprintf(out->scheduler, sizeof out->scheduler, "%.31s", a + 1);
    } else {
        snprintf(out->scheduler, sizeof out->scheduler, "%.31s", line);
    }
    sys_line(q, "rotational", line, sizeof line);
    out->rotational = line[0] == '0' ? 0 : line[0] == '1' ? 1 : -1;
}

int plat_fsinfo(const char *path, struct fsinfo *out) {
    memset(out, 0, sizeof *out);
    out->rotational = -1;
    copy(out->path, sizeof out->path, path);
    char real[PATH_MAX];
    if (!realpath(path, real)) return -1;
    copy(out->path, sizeof out->path, real);
    struct statfs sf;
    if (statfs(real, &sf) == 0) out->magic = (unsigned long long)sf.f_type;
    fs_device(real, out);
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return -1;
    int r = plat_fsinfo_mount(f, real, out);
    fclose(f);
    return r;
}
