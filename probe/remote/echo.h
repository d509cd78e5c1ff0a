/* latscope-probe serve: its log, and the echo thread that runs a session (remote/echo.c).
 *
 * The echo thread only echoes: blocking receive and send, no clock read, no system call beyond
 * them.  Its sockets time out every 100 ms (echo_timeouts), when it looks at its stop flag and
 * ends a session silent for 10 s; then it writes one byte to done_fd. */
#ifndef LATSCOPE_ECHO_H
#define LATSCOPE_ECHO_H

#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>

#include "core/probe.h"

/* The running session: set by the main thread before the echo thread starts; the echo thread
 * writes only its counters and why_end, then one byte to done_fd. */
struct session {
    int active;
    pthread_t thr;
    int udp, fd, ufd, cpu, done_fd;
    size_t size;
    struct sockaddr_storage client; /* udp: the admitted address and port */
    char sid[RANDOM_HEX_LEN + 1], addr[80];
    volatile int stop, client_gone; /* client_gone: the udp session's connection closed */
    long long round_trips, bad_size;
    const char *why_end;
    char why_buf[128];
};

/* The session's thread (arg: its struct session). */
void *echo_thread(void *arg);
/* The 100 ms receive and send time-outs of a socket an echo thread uses. */
void echo_timeouts(int fd);
/* One line on stderr with one write: "latscope-probe serve: TIME what". */
__attribute__((format(printf, 1, 2))) void slog(const char *fmt, ...);
/* A datagram dropped: counted, and logged (the first 20). */
void log_foreign(const struct sockaddr *from, const char *why);
/* The datagrams dropped so far, by every thread. */
long long echo_dropped(void);

#endif
