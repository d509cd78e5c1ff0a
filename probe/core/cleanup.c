/* latscope-probe: the clean-up list and the fatal-error path (die) that runs it. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/probe.h"

/* ---------------------------------------------------------------- clean-up registry */

#define MAX_CLEANUP 256 /* an arms run: up to 8 arms, each with its own entries */
struct cleanup_entry {
    cleanup_fn fn;
    void *arg;
    pid_t owner; /* the process that registered it: the only one that runs it */
    int active;
};
static struct cleanup_entry cleanups[MAX_CLEANUP];
static int ncleanups = 0;
static pthread_mutex_t cleanup_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_dying = 0;

/* fork(): the list's lock is taken across it, so the child's copy is consistent and free, and
 * the child starts undying (a parent thread on its way out does not stop the child's own
 * error from being reported).  Entries keep their owner: the child skips its parent's. */
static void fork_prepare(void) { pthread_mutex_lock(&cleanup_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&cleanup_lock); }
static void fork_child(void) {
    pthread_mutex_unlock(&cleanup_lock);
    __atomic_store_n(&g_dying, 0, __ATOMIC_SEQ_CST);
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void atfork_register(void) { plat_atfork(fork_prepare, fork_parent, fork_child); }

int cleanup_push(cleanup_fn fn, void *arg) {
    pthread_once(&atfork_once, atfork_register);
    pthread_mutex_lock(&cleanup_lock);
    if (ncleanups >= MAX_CLEANUP) {
        pthread_mutex_unlock(&cleanup_lock);
        fprintf(stderr, "latscope-probe: error: too many clean-up entries\n");
        _exit(EXIT_FAIL);
    }
    int h = ncleanups++;
    cleanups[h].fn = fn;
    cleanups[h].arg = arg;
    cleanups[h].owner = getpid();
    cleanups[h].active = 1;
    pthread_mutex_unlock(&cleanup_lock);
    return h;
}

void cleanup_cancel(int handle) {
    pthread_mutex_lock(&cleanup_lock);
    if (handle >= 0 && handle < ncleanups) cleanups[handle].active = 0;
    pthread_mutex_unlock(&cleanup_lock);
}

/* Under the lock: run entry i if it is active and this process's. */
static void run_entry(int i, pid_t me) {
    if (cleanups[i].active && cleanups[i].owner == me) {
        cleanups[i].active = 0;
        cleanups[i].fn(cleanups[i].arg);
    }
}

void cleanup_now(int handle) {
    pthread_mutex_lock(&cleanup_lock);
    if (handle >= 0 && handle < ncleanups) run_entry(handle, getpid());
    pthread_mutex_unlock(&cleanup_lock);
}

void cleanup_run(void) {
    pid_t me = getpid();
    pthread_mutex_lock(&cleanup_lock);
    for (int i = ncleanups - 1; i >= 0; i--) run_entry(i, me);
    pthread_mutex_unlock(&cleanup_lock);
}

static void do_unlink(void *arg) { unlink((const char *)arg); }
static void do_rmdir(void *arg) { rmdir((const char *)arg); }
static void do_kill(void *arg) { plat_kill_wait((pid_t)(intptr_t)arg); }
int cleanup_unlink(const char *path) { return cleanup_push(do_unlink, xstrdup(path)); }
int cleanup_rmdir(const char *path) { return cleanup_push(do_rmdir, xstrdup(path)); }
int cleanup_kill(pid_t pid) { return cleanup_push(do_kill, (void *)(intptr_t)pid); }

/* ---------------------------------------------------------------- errors */

/* Only the first thread that dies prints and cleans up; any other waits to be ended. */
static void claim_death(void) {
    if (__atomic_exchange_n(&g_dying, 1, __ATOMIC_SEQ_CST))
        for (;;) sleep(60);
}

static void vmsg(const char *kind, const char *fmt, va_list ap) {
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    /* one line only */
    for (char *p = buf; *p; p++)
        if (*p == '\n') *p = ' ';
    fprintf(stderr, "latscope-probe: %s: %s\n", kind, buf);
    fflush(stderr);
}

/* What every fatal error does before the process ends: claim the death, say it in one line,
 * run the clean-up list. */
static void dying(const char *fmt, va_list ap) {
    claim_death();
    vmsg("error", fmt, ap);
    cleanup_run();
}

void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dying(fmt, ap);
    va_end(ap);
    exit(code);
}

void die_async(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dying(fmt, ap);
    va_end(ap);
    _exit(code);
}

void warnmsg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning", fmt, ap);
    va_end(ap);
}
