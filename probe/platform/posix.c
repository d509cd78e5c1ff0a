/* latscope-probe: what the portable core needs from the system (platform.h, "the portable
 * core's needs"), for every POSIX system: compiled with linux.c or stub.c (Windows has these
 * in windows.c). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/platform.h"

long plat_page_size(void) {
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? pg : 4096;
}

int plat_fd_valid(int fd) { return fcntl(fd, F_GETFD) >= 0; }

long long plat_parent_pid(void) { return (long long)getppid(); }

void plat_kill_wait(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

void plat_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
    pthread_atfork(prepare, parent, child);
}

void plat_os(struct plat_os *o) {
    memset(o, 0, sizeof *o);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(o->hostname, sizeof o->hostname, "%s", u.nodename);
        snprintf(o->sysname, sizeof o->sysname, "%s", u.sysname);
        snprintf(o->release, sizeof o->release, "%s", u.release);
        snprintf(o->version, sizeof o->version, "%s", u.version);
        snprintf(o->machine, sizeof o->machine, "%s", u.machine);
    }
    o->uid = (long long)getuid();
    o->euid = (long long)geteuid();
}
