/* latscope-probe: the record of what a SIGKILL of the probe would leave behind (core/probe.h,
 * format in docs/probe-cli.md "Leftovers"), the clean-up that removes what a dead process of
 * this run left, then the record itself, and at start the same for the records a probe killed
 * outright left beside the output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/probe.h"

#define LO_HEAD "latscope-leftovers 1\n"
#define LO_MAX_BYTES (1 << 20) /* the clean-up reads at most this much of its own record */

static int lo_fd = -1, lo_dirfd = -1;
static char lo_name[NAME_MAX + 1];
static int lo_seq = 0;
static const char *const kind_names[] = {"sysv_sem", "sysv_msg", "file", "dir"};

/* semctl's fourth argument (the caller defines it: POSIX) */
union lo_semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};

static void hex_of(char *out, const char *s) {
    for (; *s; s++, out += 2) snprintf(out, 3, "%02x", (unsigned char)*s);
    *out = 0;
}

static int unhex(char *out, size_t len, const char *h) {
    size_t n = strlen(h);
    if (n % 2 || n / 2 >= len) return -1;
    for (size_t i = 0; i < n; i += 2) {
        unsigned v;
        if (sscanf(h + i, "%2x", &v) != 1) return -1;
        out[i / 2] = (char)v;
    }
    out[n / 2] = 0;
    return 0;
}

/* One line, in one write on the O_APPEND descriptor: the processes of a run (the probe, its
 * workers) append to one file without mixing their lines. */
static void lo_append(const char *line) {
    size_t len = strlen(line);
    ssize_t w = write(lo_fd, line, len);
    if (w != (ssize_t)len)
        die(EXIT_FAIL, "cannot record a leftover in %s: %s", lo_name,
            w < 0 ? strerror(errno) : "short write");
}

static int next_handle(void) { return __atomic_add_fetch(&lo_seq, 1, __ATOMIC_SEQ_CST); }

int leftovers_sysv(enum leftover_kind kind, int id) {
    if (lo_fd < 0) return -1;
    uid_t cuid;
    long long ctime;
    if (kind == LO_SYSV_SEM) {
        struct semid_ds ds;
        union lo_semun u = {.buf = &ds};
        if (semctl(id, 0, IPC_STAT, u) != 0)
            die(EXIT_FAIL, "semctl IPC_STAT of set %d: %s", id, strerror(errno));
        cuid = ds.sem_perm.cuid;
        ctime = (long long)ds.sem_ctime;
    } else {
        struct msqid_ds ds;
        if (msgctl(id, IPC_STAT, &ds) != 0)
            die(EXIT_FAIL, "msgctl IPC_STAT of queue %d: %s", id, strerror(errno));
        cuid = ds.msg_perm.cuid;
        ctime = (long long)ds.msg_ctime;
    }
    int h = next_handle();
    pid_t me = getpid();
    char line[256];
    snprintf(line, sizeof line, "%s %d.%d %d %llu %d %u %lld\n", kind_names[kind], (int)me, h,
             (int)me, plat_proc_start(me), id, (unsigned)cuid, ctime);
    lo_append(line);
    return h;
}

int leftovers_entry(enum leftover_kind kind, int dirfd, const char *dirpath, const char *name) {
    if (lo_fd < 0) return -1;
    struct stat d, e;
    if (fstat(dirfd, &d) != 0 || fstatat(dirfd, name, &e, AT_SYMLINK_NOFOLLOW) != 0)
        die(EXIT_FAIL, "cannot record %s: %s", name, strerror(errno));
    char abs[PATH_MAX]; /* the directory's path made absolute, for a cleaner elsewhere */
    if (dirpath[0] == '/' || !getcwd(abs, sizeof abs))
        snprintf(abs, sizeof abs, "%s", dirpath);
    else if (strcmp(dirpath, "."))
        snprintf(abs + strlen(abs), sizeof abs - strlen(abs), "/%s", dirpath);
    size_t cap = 2 * strlen(abs) + 2 * strlen(name) + 256;
    char *line = xcalloc(cap, 1), *hdir = xcalloc(2 * strlen(abs) + 1, 1);
    char *hname = xcalloc(2 * strlen(name) + 1, 1);
    hex_of(hdir, abs);
    hex_of(hname, name);
    int h = next_handle();
    pid_t me = getpid();
    snprintf(line, cap, "%s %d.%d %d %llu %llu %llu %llu %s %s\n", kind_names[kind], (int)me, h,
             (int)me, plat_proc_start(me), (unsigned long long)d.st_dev,
             (unsigned long long)d.st_ino, (unsigned long long)e.st_ino, hdir, hname);
    lo_append(line);
    free(line);
    free(hdir);
    free(hname);
    return h;
}

void leftovers_release(int handle) {
    if (lo_fd < 0 || handle < 0) return;
    char line[64];
    snprintf(line, sizeof line, "released %d.%d\n", (int)getpid(), handle);
    /* from a clean-up entry: never dies; a lost line leaves the object to a later sweep,
     * which finds it gone */
    if (write(lo_fd, line, strlen(line)) < 0) {
    }
}

/* ---------------------------------------------------------------- the clean-up at the end */

static int owner_alive(int pid, unsigned long long start) {
    /* the caller is ending: what it recorded and did not release is left behind */
    if (pid == (int)getpid()) return 0;
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 0;
    unsigned long long now = plat_proc_start(pid);
    return !start || !now || now == start;
}

/* Remove a System V object if it is still the one recorded (its creator and creation time). */
static void remove_sysv(int sem, int id, unsigned cuid, long long ctime) {
    if (sem) {
        struct semid_ds ds;
        union lo_semun u = {.buf = &ds};
        if (semctl(id, 0, IPC_STAT, u) == 0 && ds.sem_perm.cuid == cuid &&
            (long long)ds.sem_ctime == ctime)
            semctl(id, 0, IPC_RMID);
    } else {
        struct msqid_ds ds;
        if (msgctl(id, IPC_STAT, &ds) == 0 && ds.msg_perm.cuid == cuid &&
            (long long)ds.msg_ctime == ctime)
            msgctl(id, IPC_RMID, NULL);
    }
}

/* Remove a directory entry if it is still the one recorded: its directory (device and inode)
 * opened by path, the entry (inode, type) looked at without following a link. */
static void remove_entry(int isdir, unsigned long long dev, unsigned long long dino,
                         unsigned long long ino, const char *hdir, const char *hname) {
    char dir[PATH_MAX], name[NAME_MAX + 1];
    if (unhex(dir, sizeof dir, hdir) || unhex(name, sizeof name, hname) || strchr(name, '/'))
        return;
    int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return;
    struct stat ds, es;
    if (fstat(d, &ds) == 0 && (unsigned long long)ds.st_dev == dev &&
        (unsigned long long)ds.st_ino == dino &&
        fstatat(d, name, &es, AT_SYMLINK_NOFOLLOW) == 0 && (unsigned long long)es.st_ino == ino &&
        (isdir ? S_ISDIR(es.st_mode) : S_ISREG(es.st_mode)))
        unlinkat(d, name, isdir ? AT_REMOVEDIR : 0);
    close(d);
}

/* The last entry of the probe's clean-up list: what a process of this run recorded and did not
 * release (a worker killed by a signal) is removed, newest first; then the record itself,
 * unless something of a live process is still listed. */
static int clean_record(int fd);

static void lo_finish(void *arg) {
    (void)arg;
    if (lo_fd < 0) return;
    struct stat st;
    int keep = clean_record(lo_fd);
    struct stat here;
    if (!keep && fstatat(lo_dirfd, lo_name, &here, AT_SYMLINK_NOFOLLOW) == 0 &&
        fstat(lo_fd, &st) == 0 && here.st_dev == st.st_dev && here.st_ino == st.st_ino)
        unlinkat(lo_dirfd, lo_name, 0);
    close(lo_fd);
    lo_fd = -1;
}

/* Remove what the record open at fd lists and no live process still holds (its lines are
 * read newest first, released ones skipped); 1 if something of a live process is listed. */
static int clean_record(int fd) {
    struct stat st;
    char *buf = NULL;
    int keep = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size <= LO_MAX_BYTES)
        buf = calloc((size_t)st.st_size + 1, 1);
    if (buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size) {
        int nlines = 0;
        for (char *p = buf; *p; p++) nlines += *p == '\n';
        char **lines = calloc((size_t)nlines + 1, sizeof *lines);
        int n = 0;
        for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l && lines;
             l = strtok_r(NULL, "\n", &save))
            lines[n++] = l;
        for (int i = n - 1; i >= 0 && lines; i--) {
            char kind[16], token[64], a[2 * PATH_MAX + 1], b[2 * NAME_MAX + 1];
            int pid;
            unsigned long long start, x, y, z;
            if (sscanf(lines[i], "%15s %63s %d %llu", kind, token, &pid, &start) != 4) continue;
            int released = 0;
            for (int k = i + 1; k < n && !released; k++)
                released = !strncmp(lines[k], "released ", 9) && !strcmp(lines[k] + 9, token);
            if (released) continue;
            if (owner_alive(pid, start)) {
                keep = 1;
                continue;
            }
            int id;
            unsigned cuid;
            long long ctime;
            int sem = !strcmp(kind, "sysv_sem");
            if ((sem || !strcmp(kind, "sysv_msg")) &&
                sscanf(lines[i], "%*s %*s %*d %*u %d %u %lld", &id, &cuid, &ctime) == 3)
                remove_sysv(sem, id, cuid, ctime);
            int isdir = !strcmp(kind, "dir");
            if ((isdir || !strcmp(kind, "file")) &&
                sscanf(lines[i], "%*s %*s %*d %*u %llu %llu %llu %8192s %510s", &x, &y, &z, a,
                       b) == 5)
                remove_entry(isdir, x, y, z, a, b);
        }
        free(lines);
    }
    free(buf);
    return keep;
}

/* Records beside the output that a probe killed outright (SIGKILL: no clean-up ran) left, with
 * what they list: each of this user's records whose makers are all dead is cleaned and
 * removed (a record of another user is left to that user, or to `latscope rm --partial`). */
static void sweep_dead_records(int dirfd) {
    int dup_fd = dup(dirfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".leftovers.")) continue;
        int fd = openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st, here;
        char head[sizeof LO_HEAD];
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            st.st_size <= LO_MAX_BYTES &&
            pread(fd, head, sizeof head - 1, 0) == (ssize_t)(sizeof head - 1) &&
            !memcmp(head, LO_HEAD, sizeof head - 1) && !clean_record(fd) &&
            fstatat(dirfd, e->d_name, &here, AT_SYMLINK_NOFOLLOW) == 0 &&
            here.st_dev == st.st_dev && here.st_ino == st.st_ino)
            unlinkat(dirfd, e->d_name, 0);
        close(fd);
    }
    closedir(d);
}

int leftovers_open(int dirfd, const char *outname) {
    sweep_dead_records(dirfd);
    for (int attempt = 0; attempt < 5; attempt++) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(lo_name, sizeof lo_name, "%.180s.leftovers.%s", outname, rnd);
        lo_fd = openat(dirfd, lo_name,
                       O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (lo_fd >= 0) break;
        if (errno != EEXIST) return -1;
    }
    if (lo_fd < 0) return -1;
    lo_dirfd = dirfd;
    cleanup_push(lo_finish, NULL);
    lo_append(LO_HEAD);
    return 0;
}
