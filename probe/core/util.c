/* latscope-probe: small helpers: allocation, whole reads and writes, page touching, pinning. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/probe.h"

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

void thread_usage_delta(struct thread_usage *d, const struct thread_usage *a,
                        const struct thread_usage *b) {
    d->minflt = b->minflt - a->minflt;
    d->majflt = b->majflt - a->majflt;
    d->nvcsw = b->nvcsw - a->nvcsw;
    d->nivcsw = b->nivcsw - a->nivcsw;
}

void touch_pages(void *p, size_t len) {
    if (!p || !len) return;
    size_t step = (size_t)plat_page_size();
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
    size_t step = (size_t)plat_page_size() / sizeof(int64_t);
    for (size_t i = 0; i < n; i += step) p[i] = -1;
    for (size_t i = 0; i < n; i++) p[i] = 0;
    return p;
}

int cpu_check(int cpu, char *err, size_t errlen) {
    if (cpu < 0 || plat_cpu_usable(cpu)) return 0;
    snprintf(err, errlen, "CPU %d does not exist or is not available to this process (this "
             "machine has %d CPUs, numbered from 0)", cpu, plat_cpus_configured());
    return EXIT_BADINPUT;
}

void pin_or_die(int cpu) {
    char err[256];
    if (cpu_check(cpu, err, sizeof err)) die(EXIT_BADINPUT, "%s", err);
    int e = plat_pin_thread(cpu);
    if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", cpu, strerror(e));
}

void random_hex(char out[RANDOM_HEX_LEN + 1]) {
    unsigned char b[RANDOM_HEX_LEN / 2];
    if (plat_random(b, sizeof b) != 0)
        die(EXIT_FAIL, "no random bytes from the system: %s", strerror(errno));
    for (size_t i = 0; i < sizeof b; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
    out[RANDOM_HEX_LEN] = 0;
}

int parse_digits(const char *s, long long *out, const char **end) {
    if (!s || *s < '0' || *s > '9') return -1;
    if (s[0] == '0' && s[1] >= '0' && s[1] <= '9') return -1; /* 010: octal or decimal? */
    long long v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        int d = *p - '0';
        if (v > (LLONG_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    if (end) *end = p;
    return 0;
}

void realtime_apply(int policy, int prio, int lock) {
    if (!policy && !lock) return;
    int e = plat_realtime(policy, prio, lock);
    if (e) die(EXIT_UNSUPPORTED, "--sched or --mlock could not be applied: %s", strerror(e));
}

int g_trace_ctl = -1, g_trace_ack = -1;

void trace_mark(int on) {
    if (g_trace_ctl < 0) return;
    const char *cmd = on ? "enable\n" : "disable\n";
    if (write_full(g_trace_ctl, cmd, strlen(cmd)) != 0)
        die(EXIT_FAIL, "the tracer went away (--trace-ctl): %s", strerror(errno));
    /* its answer, "ack\n" (perf adds a NUL), in one read as it is written, up to a newline */
    char buf[32];
    size_t got = 0;
    while (got < sizeof buf && !memchr(buf, '\n', got)) {
        ssize_t r = read(g_trace_ack, buf + got, sizeof buf - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            die(EXIT_FAIL, "the tracer did not acknowledge '%.*s' (--trace-ctl)",
                (int)strlen(cmd) - 1, cmd);
        got += (size_t)r;
    }
}
