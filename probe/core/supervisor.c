/* latscope-probe: errors, clean-up, the supervisor thread, a tiny JSON writer. */
#include "core/probe.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t g_stop = 0;

/* ---------------------------------------------------------------- clean-up registry */

#define MAX_CLEANUP 64
struct cleanup_entry {
    cleanup_fn fn;
    void *arg;
    int active;
};
static struct cleanup_entry cleanups[MAX_CLEANUP];
static int ncleanups = 0;
static pthread_mutex_t cleanup_lock = PTHREAD_MUTEX_INITIALIZER;

int cleanup_push(cleanup_fn fn, void *arg) {
    pthread_mutex_lock(&cleanup_lock);
    if (ncleanups >= MAX_CLEANUP) {
        pthread_mutex_unlock(&cleanup_lock);
        fprintf(stderr, "latscope-probe: error: too many clean-up entries\n");
        _exit(EXIT_FAIL);
    }
    int h = ncleanups++;
    cleanups[h].fn = fn;
    cleanups[h].arg = arg;
    cleanups[h].active = 1;
    pthread_mutex_unlock(&cleanup_lock);
    return h;
}

void cleanup_cancel(int handle) {
    pthread_mutex_lock(&cleanup_lock);
    if (handle >= 0 && handle < ncleanups) cleanups[handle].active = 0;
    pthread_mutex_unlock(&cleanup_lock);
}

void cleanup_now(int handle) {
    pthread_mutex_lock(&cleanup_lock);
    if (handle >= 0 && handle < ncleanups && cleanups[handle].active) {
        cleanups[handle].active = 0;
        cleanups[handle].fn(cleanups[handle].arg);
    }
    pthread_mutex_unlock(&cleanup_lock);
}

void cleanup_run(void) {
    pthread_mutex_lock(&cleanup_lock);
    for (int i = ncleanups - 1; i >= 0; i--) {
        if (cleanups[i].active) {
            cleanups[i].active = 0;
            cleanups[i].fn(cleanups[i].arg);
        }
    }
    pthread_mutex_unlock(&cleanup_lock);
}

static void do_unlink(void *arg) { unlink((const char *)arg); }
static void do_rmdir(void *arg) { rmdir((const char *)arg); }
static void do_kill(void *arg) {
    pid_t pid = (pid_t)(intptr_t)arg;
    if (pid > 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
}
int cleanup_unlink(const char *path) { return cleanup_push(do_unlink, xstrdup(path)); }
int cleanup_rmdir(const char *path) { return cleanup_push(do_rmdir, xstrdup(path)); }
int cleanup_kill(pid_t pid) { return cleanup_push(do_kill, (void *)(intptr_t)pid); }

/* ---------------------------------------------------------------- errors */

static int g_dying = 0;
static char *sv_peer_errmsg = NULL;
static volatile int *sv_peer_failed = NULL;

/* Only the first thread that dies prints and cleans up; any other waits to be ended. */
static void claim_death(void) {
    if (__atomic_exchange_n(&g_dying, 1, __ATOMIC_SEQ_CST))
        for (;;) pause();
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

void die(int code, const char *fmt, ...) {
    claim_death();
    va_list ap;
    va_start(ap, fmt);
    vmsg("error", fmt, ap);
    va_end(ap);
    cleanup_run();
    exit(code);
}

void die_async(int code, const char *fmt, ...) {
    claim_death();
    va_list ap;
    va_start(ap, fmt);
    vmsg("error", fmt, ap);
    va_end(ap);
    cleanup_run();
    _exit(code);
}

void warnmsg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning", fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- supervisor */

static struct supervisor *sv_cfg;
static pthread_t sv_thread;
static int sv_running = 0;
static volatile int sv_quit = 0;
static pthread_mutex_t sv_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t sv_peer = 0;
static int sv_peer_reaped = 0;
static int sv_peer_status = 0;
static double sv_stall = 0;
static unsigned sv_watch_gen = 0; /* bumped when a peer starts being watched */

/* supervisor_stop wakes the supervisor with it, instead of letting it sleep out its tick */
#define SV_WAKE SIGUSR2

static sigset_t owned_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SV_WAKE);
    return set;
}

void signals_block_all(void) {
    sigset_t set = owned_signals();
    /* The signal benchmark's real-time signals: blocked in every thread (the supervisor
     * too), so they stay pending until the thread that waits for them takes them. */
    sigaddset(&set, PROBE_SIG_A);
    sigaddset(&set, PROBE_SIG_B);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_mutex_t sv_start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sv_start_cv = PTHREAD_COND_INITIALIZER;
static int sv_started = 0;

static void *sv_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&sv_start_lock);
    sv_started = 1;
    pthread_cond_signal(&sv_start_cv);
    pthread_mutex_unlock(&sv_start_lock);
    sigset_t set = owned_signals();
    struct timespec tick = {0, 50 * 1000 * 1000};
    double last_report = 0, stop_at = 0, last_change = mono_s();
    uint64_t last_progress = (uint64_t)-1;
    unsigned watch_gen = 0;
    while (!sv_quit) {
        int sig = sigtimedwait(&set, NULL, &tick);
        double now = mono_s();
        if (sig == SV_WAKE) continue; /* sv_quit is set: leave at once */
        if (sig > 0) {
            if (!g_stop) {
                g_stop = sig;
                stop_at = now;
            } else {
                die_async(EXIT_INTERRUPTED, "interrupted (signal %d), stopped at once", sig);
            }
        }
        /* The measuring thread checks g_stop between iterations; if it is blocked (a peer
         * that will never answer), give it one second and then clean up from here. */
        if (g_stop && now - stop_at > 1.0)
            die_async(EXIT_INTERRUPTED, "interrupted (signal %d); nothing was written", g_stop);
        uint64_t p = sv_cfg && sv_cfg->progress ? sv_cfg->progress_base + *sv_cfg->progress : 0;
        unsigned gen = __atomic_load_n(&sv_watch_gen, __ATOMIC_ACQUIRE);
        if (p != last_progress || gen != watch_gen) {
            /* progress, or a peer newly watched: the stall clock starts again (set-up before
             * the first iteration is not a stall) */
            last_progress = p;
            last_change = now;
            watch_gen = gen;
        }
        if (sv_peer_failed && *sv_peer_failed)
            die_async(EXIT_FAIL, "%s; nothing was written",
                      sv_peer_errmsg && *sv_peer_errmsg ? sv_peer_errmsg : "the peer failed");
        pthread_mutex_lock(&sv_lock);
        if (sv_peer > 0 && !sv_peer_reaped) {
            int st;
            pid_t r = waitpid(sv_peer, &st, WNOHANG);
            if (r == sv_peer) {
                sv_peer_reaped = 1;
                sv_peer_status = st;
                int normal = WIFEXITED(st) && WEXITSTATUS(st) == 0;
                if (!normal) {
                    pthread_mutex_unlock(&sv_lock);
                    if (sv_peer_errmsg && *sv_peer_errmsg)
                        die_async(EXIT_FAIL, "%s; nothing was written", sv_peer_errmsg);
                    if (WIFSIGNALED(st))
                        die_async(EXIT_FAIL, "the peer process died (killed by signal %d) "
                                  "after %llu iterations; nothing was written",
                                  WTERMSIG(st), (unsigned long long)p);
                    die_async(EXIT_FAIL, "the peer process exited with status %d after %llu "
                              "iterations; nothing was written",
                              WEXITSTATUS(st), (unsigned long long)p);
                }
            }
        }
        double stall = sv_stall;
        pthread_mutex_unlock(&sv_lock);
        if (stall > 0 && sv_cfg && p < sv_cfg->total && now - last_change > stall)
            die_async(EXIT_FAIL, "the peer stalled: no round trip completed in %.1f s "
                      "(after %llu iterations); nothing was written", stall,
                      (unsigned long long)p);
        if (sv_cfg && sv_cfg->progress_fd >= 0 && now - last_report >= 0.25) {
            char line[64];
            int len = snprintf(line, sizeof line, "progress %llu %llu\n",
                               (unsigned long long)p, (unsigned long long)sv_cfg->total);
            if (write(sv_cfg->progress_fd, line, (size_t)len) < 0) sv_cfg->progress_fd = -1;
            last_report = now;
        }
    }
    return NULL;
}

void supervisor_start(struct supervisor *sv) {
    sv_cfg = sv;
    sv_quit = 0;
    if (pthread_create(&sv_thread, NULL, sv_main, NULL) != 0)
        die(EXIT_FAIL, "cannot start the supervisor thread");
    /* Return only once the thread runs: a fork() while its start-up is still under way
     * would hand the child whatever lock that start-up held at the instant (seen with
     * AddressSanitizer's allocator: a forked peer hung on its first malloc in a new thread). */
    pthread_mutex_lock(&sv_start_lock);
    while (!sv_started) pthread_cond_wait(&sv_start_cv, &sv_start_lock);
    pthread_mutex_unlock(&sv_start_lock);
    sv_running = 1;
}

void supervisor_peer_error(volatile int *failed, char *errmsg) {
    sv_peer_failed = failed;
    sv_peer_errmsg = errmsg;
}

void supervisor_watch_peer(pid_t pid, double stall_timeout_s) {
    pthread_mutex_lock(&sv_lock);
    sv_peer = pid;
    sv_peer_reaped = 0;
    sv_stall = stall_timeout_s;
    __atomic_add_fetch(&sv_watch_gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sv_lock);
}

int supervisor_unwatch_peer(int *status) {
    pthread_mutex_lock(&sv_lock);
    int reaped = sv_peer_reaped;
    if (status) *status = sv_peer_status;
    sv_peer = 0;
    sv_stall = 0;
    pthread_mutex_unlock(&sv_lock);
    return reaped;
}

void supervisor_stop(void) {
    if (!sv_running) return;
    if (sv_cfg && sv_cfg->progress_fd >= 0 && sv_cfg->progress) {
        char line[64];
        int len = snprintf(line, sizeof line, "progress %llu %llu\n",
                           (unsigned long long)(sv_cfg->progress_base + *sv_cfg->progress),
                           (unsigned long long)sv_cfg->total);
        if (write(sv_cfg->progress_fd, line, (size_t)len) < 0) {
        }
    }
    sv_quit = 1;
    pthread_kill(sv_thread, SV_WAKE); /* blocked everywhere: only its sigtimedwait takes it */
    pthread_join(sv_thread, NULL);
    sv_running = 0;
}

/* ---------------------------------------------------------------- JSON */

void jb_init(struct jbuf *b) {
    b->cap = 1024;
    b->s = xcalloc(1, b->cap);
    b->len = 0;
    b->need_comma = 0;
}

void jb_free(struct jbuf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

static void jb_vraw(struct jbuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n >= b->cap - b->len) {
        while ((size_t)n >= b->cap - b->len) b->cap *= 2;
        char *ns = realloc(b->s, b->cap);
        if (!ns) die(EXIT_FAIL, "out of memory");
        b->s = ns;
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
    }
    va_end(ap2);
    b->len += (size_t)n;
}

void jb_raw(struct jbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jb_vraw(b, fmt, ap);
    va_end(ap);
}

static void jb_escaped(struct jbuf *b, const char *s) {
    jb_raw(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': jb_raw(b, "\\\""); break;
        case '\\': jb_raw(b, "\\\\"); break;
        case '\n': jb_raw(b, "\\n"); break;
        case '\r': jb_raw(b, "\\r"); break;
        case '\t': jb_raw(b, "\\t"); break;
        default:
            if (*p < 0x20)
                jb_raw(b, "\\u%04x", *p);
            else
                jb_raw(b, "%c", *p);
        }
    }
    jb_raw(b, "\"");
}

static void jb_key(struct jbuf *b, const char *key) {
    if (b->need_comma) jb_raw(b, ",");
    if (key) {
        jb_escaped(b, key);
        jb_raw(b, ":");
    }
    b->need_comma = 1;
}

void jb_obj(struct jbuf *b, const char *key) {
    jb_key(b, key);
    jb_raw(b, "{");
    b->need_comma = 0;
}
void jb_arr(struct jbuf *b, const char *key) {
    jb_key(b, key);
    jb_raw(b, "[");
    b->need_comma = 0;
}
void jb_end_obj(struct jbuf *b) {
    jb_raw(b, "}");
    b->need_comma = 1;
}
void jb_end_arr(struct jbuf *b) {
    jb_raw(b, "]");
    b->need_comma = 1;
}
void jb_str(struct jbuf *b, const char *key, const char *val) {
    jb_key(b, key);
    if (val)
        jb_escaped(b, val);
    else
        jb_raw(b, "null");
}
void jb_int(struct jbuf *b, const char *key, long long val) {
    jb_key(b, key);
    jb_raw(b, "%lld", val);
}
void jb_num(struct jbuf *b, const char *key, double val) {
    jb_key(b, key);
    if (isfinite(val))
        jb_raw(b, "%.17g", val);
    else
        jb_raw(b, "null");
}
void jb_bool(struct jbuf *b, const char *key, int val) {
    jb_key(b, key);
    jb_raw(b, val ? "true" : "false");
}
void jb_null(struct jbuf *b, const char *key) {
    jb_key(b, key);
    jb_raw(b, "null");
}
void jb_json(struct jbuf *b, const char *key, const char *json) {
    jb_key(b, key);
    jb_raw(b, "%s", json);
}

/* ---------------------------------------------------------------- helpers */

char *xstrdup(const char *s) {
    char *d = strdup(s ? s : "");
    if (!d) die(EXIT_FAIL, "out of memory");
    return d;
}

void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) die(EXIT_FAIL, "out of memory (%zu x %zu bytes)", n, sz);
    return p;
}

int write_full(int fd, const void *buf, size_t len) {
    const unsigned char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int read_full(int fd, void *buf, size_t len) {
    unsigned char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) {
            errno = EPIPE;
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

int read_line_file(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(buf, (int)len, f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

void thread_usage_now(struct thread_usage *u) {
    struct rusage r;
    memset(&r, 0, sizeof r);
    getrusage(RUSAGE_THREAD, &r);
    u->minflt = r.ru_minflt;
    u->majflt = r.ru_majflt;
    u->nvcsw = r.ru_nvcsw;
    u->nivcsw = r.ru_nivcsw;
}

void thread_usage_delta(struct thread_usage *d, const struct thread_usage *a,
                        const struct thread_usage *b) {
    d->minflt = b->minflt - a->minflt;
    d->majflt = b->majflt - a->majflt;
    d->nvcsw = b->nvcsw - a->nvcsw;
    d->nivcsw = b->nivcsw - a->nivcsw;
}

void touch_pages(void *p, size_t len) {
    if (!p || !len) return;
    long pg = sysconf(_SC_PAGESIZE);
    size_t step = (size_t)(pg > 0 ? pg : 4096);
    volatile unsigned char *c = p;
    for (size_t i = 0; i < len; i += step) c[i] = c[i];
    c[len - 1] = c[len - 1];
}

__attribute__((noinline)) void touch_stack(void) {
    volatile unsigned char pad[64 * 1024];
    for (size_t i = 0; i < sizeof pad; i += 512) pad[i] = 0;
}

int64_t *alloc_samples(size_t n) {
    int64_t *p = xcalloc(n, sizeof(int64_t));
    /* calloc may hand out untouched zero pages: write every page. */
    long page = sysconf(_SC_PAGESIZE);
    size_t step = (size_t)(page > 0 ? page : 4096) / sizeof(int64_t);
    for (size_t i = 0; i < n; i += step) p[i] = -1;
    for (size_t i = 0; i < n; i++) p[i] = 0;
    return p;
}

int pin_to_cpu(int cpu) {
    if (cpu < 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return errno;
    return 0;
}

int cpu_exists(int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_ISSET(cpu, &set);
}

int cpu_count_conf(void) { return (int)sysconf(_SC_NPROCESSORS_CONF); }

void check_cpu_or_die(int cpu) {
    if (cpu >= 0 && !cpu_exists(cpu))
        die(EXIT_BADINPUT, "CPU %d does not exist or is not available to this process "
            "(this machine has %d CPUs, numbered from 0)", cpu, cpu_count_conf());
}

void pin_or_die(int cpu) {
    if (cpu < 0) return;
    check_cpu_or_die(cpu);
    int e = pin_to_cpu(cpu);
    if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", cpu, strerror(e));
}
