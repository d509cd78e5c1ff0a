/* latscope-probe serve: the log, and the echo thread of a session (echo.h). */
#include "remote/echo.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "remote/handshake.h"

#define IDLE_TICKS 100     /* a session silent for 100 x 100 ms ends */
#define TICK_MS 100
#define FOREIGN_LOG_MAX 20 /* dropped datagrams logged one by one, then counted only */

static long long g_foreign; /* datagrams dropped, by every thread (atomic) */

long long echo_dropped(void) { return __atomic_load_n(&g_foreign, __ATOMIC_RELAXED); }

/* ---------------------------------------------------------------- the log */

/* One line on stderr, with one write: "latscope-probe serve: TIME what". */
void slog(const char *fmt, ...) {
    char line[768];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "latscope-probe serve: %Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ ", ts.tv_nsec / 1000000);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : (size_t)(n + m) >= sizeof line - 1 ? (int)sizeof line - 2 : n + m;
    line[n++] = '\n';
    if (write(2, line, (size_t)n) < 0) {
    }
}

void log_foreign(const struct sockaddr *from, const char *why) {
    long long k = __atomic_add_fetch(&g_foreign, 1, __ATOMIC_RELAXED);
    char a[80];
    serve_addr_text(from, a, sizeof a);
    if (k <= FOREIGN_LOG_MAX)
        slog("dropped a udp datagram from %s: %s (%lld so far)%s", a, why, k,
             k == FOREIGN_LOG_MAX ? "; further ones are counted, not logged" : "");
}

/* ---------------------------------------------------------------- the echo thread */

static int quiet_tick(struct session *s, long long *seen, int *idle) {
    if (s->stop) {
        s->why_end = s->client_gone ? "the client closed its connection" : "the server is stopping";
        return 1;
    }
    if (s->round_trips != *seen) {
        *seen = s->round_trips;
        *idle = 0;
    } else if (++*idle >= IDLE_TICKS) {
        s->why_end = "no message for 10 s";
        return 1;
    }
    return 0;
}

static void echo_tcp(struct session *s, unsigned char *buf) {
    long long seen = 0;
    int idle = 0;
    for (;;) {
        size_t got = 0;
        while (got < s->size) {
            ssize_t r = recv(s->fd, buf + got, s->size - got, 0);
            if (r > 0) {
                got += (size_t)r;
            } else if (r == 0) {
                s->why_end = "the client closed the connection";
                return;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (quiet_tick(s, &seen, &idle)) return;
            } else if (errno != EINTR) {
                snprintf(s->why_buf, sizeof s->why_buf, "receive failed: %s", strerror(errno));
                s->why_end = s->why_buf;
                return;
            }
        }
        size_t sent = 0;
        while (sent < s->size) {
            ssize_t w = send(s->fd, buf + sent, s->size - sent, MSG_NOSIGNAL);
            if (w > 0) {
                sent += (size_t)w;
            } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (quiet_tick(s, &seen, &idle)) return;
            } else if (w < 0 && errno != EINTR) {
                snprintf(s->why_buf, sizeof s->why_buf, "send failed: %s", strerror(errno));
                s->why_end = s->why_buf;
                return;
            }
        }
        s->round_trips++;
    }
}

static double mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void echo_udp(struct session *s, unsigned char *buf) {
    long long seen = 0;
    int idle = 0;
    double last = mono_ms();
    for (;;) {
        /* a tick every TICK_MS whatever arrives: a trickle of datagrams from anyone else
         * (each sooner than the receive time-out) must not keep the session, or the server
         * past its --max-time and SIGTERM, alive */
        double now = mono_ms();
        if (now - last >= TICK_MS) {
            last = now;
            if (quiet_tick(s, &seen, &idle)) return;
        }
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t r = recvfrom(s->ufd, buf, s->size + 64, 0, (struct sockaddr *)&from, &fl);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                continue; /* the tick above */
            } else if (errno != EINTR) {
                snprintf(s->why_buf, sizeof s->why_buf, "receive failed: %s", strerror(errno));
                s->why_end = s->why_buf;
                return;
            }
            continue;
        }
        if (!serve_same_addr((struct sockaddr *)&from, (struct sockaddr *)&s->client, 1)) {
            log_foreign((struct sockaddr *)&from, "not the admitted client's address and port");
            continue;
        }
        if ((size_t)r != s->size) { /* the client's, but not a message of the session */
            s->bad_size++;
            continue;
        }
        for (;;) {
            ssize_t w = sendto(s->ufd, buf, s->size, MSG_NOSIGNAL, (struct sockaddr *)&from, fl);
            if (w >= 0 || errno != EINTR) break;
        }
        s->round_trips++;
    }
}

void *echo_thread(void *arg) {
    struct session *s = arg;
    if (s->cpu >= 0) {
        int e = plat_pin_thread(s->cpu);
        if (e) slog("session %s: cannot pin the echo thread to CPU %d: %s; it runs unpinned",
                    s->sid, s->cpu, strerror(e));
    }
    unsigned char *buf = malloc(s->size + 64);
    if (!buf) {
        s->why_end = "out of memory";
    } else {
        touch_pages(buf, s->size + 64);
        if (s->udp) echo_udp(s, buf);
        else echo_tcp(s, buf);
        free(buf);
    }
    char one = 1;
    if (write(s->done_fd, &one, 1) < 0) {
    }
    return NULL;
}

void echo_timeouts(int fd) {
    struct timeval tv = {.tv_sec = 0, .tv_usec = TICK_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}
