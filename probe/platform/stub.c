/* latscope-probe: the platform layer for a system without a port yet (platform.h).
 *
 * A new port (macOS, FreeBSD) starts from this file: every call is here, answering with plain
 * POSIX where it can and "not known here" or ENOSYS where it cannot, so that the probe builds
 * and runs what does not depend on the answer.  meson compiles linux.c on Linux, windows.c on
 * Windows and this file elsewhere (with posix.c, what the core needs of every POSIX system);
 * on Linux it is compiled too (never linked), so that it keeps up with platform.h. */
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- CPUs and memory */

int plat_pin_thread(int cpu) { return cpu < 0 ? 0 : ENOSYS; }  /* e.g. thread_policy_set */
int plat_realtime(int policy, int prio, int lock) {
    (void)prio;
    return policy || lock ? ENOSYS : 0;
}
void plat_realtime_undo(void) {}
int plat_realtime_max(void) { return 0; }
int plat_affinity_save(void) { return 0; }     /* nothing pinned, nothing to give back */
int plat_affinity_restore(void) { return 0; }
int plat_cpu_usable(int cpu) { return cpu >= 0 && cpu < plat_cpus_configured(); }
int plat_cpus_configured(void) { return (int)sysconf(_SC_NPROCESSORS_CONF); }
int plat_cpus_online(void) { return (int)sysconf(_SC_NPROCESSORS_ONLN); }
long long plat_available_memory(void) { return -1; }  /* e.g. host_statistics64 */

/* ---------------------------------------------------------------- system facts */

int plat_cpu_model(char *buf, size_t len) {  /* e.g. sysctl machdep.cpu.brand_string */
    if (len) buf[0] = 0;
    return -1;
}
int plat_clocksource(char *buf, size_t len) {
    if (len) buf[0] = 0;
    return -1;
}
int plat_tsc_invariant(void) { return 0; }  /* e.g. sysctl machdep.tsc.invariant */
int plat_emulation(struct emulation *out) {  /* e.g. sysctl sysctl.proc_translated */
    memset(out, 0, sizeof *out);
    return 0;
}

/* ---------------------------------------------------------------- processes and signals */

int plat_die_with_parent(int sig) {  /* e.g. kqueue EVFILT_PROC NOTE_EXIT on the parent */
    (void)sig;
    errno = ENOSYS;
    return -1;
}

unsigned long long plat_proc_start(pid_t pid) {  /* e.g. sysctl KERN_PROC_PID p_starttime */
    (void)pid;
    return 0;
}

int plat_wait_signal(const sigset_t *set, double timeout_s) {
    /* without sigtimedwait: sleep out the timeout, then take a pending signal if any */
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (double)(time_t)timeout_s) * 1e9)};
    nanosleep(&ts, NULL);
    sigset_t pending;
    sigpending(&pending);
    for (int s = 1; s < 32; s++)
        if (sigismember(set, s) == 1 && sigismember(&pending, s) == 1) {
            int got = 0;
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, s);
            if (sigwait(&one, &got) == 0) return got;
        }
    return 0;
}

int plat_signal_fd_open(const sigset_t *set) {  /* e.g. kqueue EVFILT_SIGNAL */
    (void)set;
    errno = ENOSYS;
    return -1;
}
int plat_signal_fd_read(int fd) {
    (void)fd;
    return -1;
}

void plat_thread_usage(struct thread_usage *u) { memset(u, 0, sizeof *u); }  /* e.g. thread_info */

/* ---------------------------------------------------------------- randomness */

int plat_random(void *buf, size_t len) {  /* e.g. getentropy, arc4random_buf */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    unsigned char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            close(fd);
            if (r == 0) errno = EIO;
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    close(fd);
    return 0;
}

/* ---------------------------------------------------------------- file systems */

int plat_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname) {
    /* e.g. renameatx_np(RENAME_EXCL); plain POSIX: a hard link refuses an existing name */
    if (linkat(olddirfd, oldname, newdirfd, newname, 0) != 0) return -1;
    unlinkat(olddirfd, oldname, 0);
    return 0;
}

int plat_fsinfo(const char *path, struct fsinfo *out) {  /* e.g. statfs f_fstypename */
    memset(out, 0, sizeof *out);
    out->rotational = -1; /* unknown */
    snprintf(out->path, sizeof out->path, "%s", path);
    return -1;
}
void plat_fsinfo_unescape(char *s) { (void)s; }
int plat_fsinfo_parse_line(const char *line, struct fsinfo *out) {
    (void)line, (void)out;
    return -1;
}
int plat_fsinfo_mount(FILE *mountinfo, const char *real, struct fsinfo *out) {
    (void)mountinfo, (void)real, (void)out;
    return -1;
}

int plat_drop_caches_open(void) {  /* e.g. purge(8) */
    errno = ENOSYS;
    return -1;
}
int plat_drop_caches(int fd) {
    (void)fd;
    errno = ENOSYS;
    return -1;
}
