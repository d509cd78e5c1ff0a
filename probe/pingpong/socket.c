/* latscope-probe: socket ping-pong: Unix-domain stream and datagram sockets (bound to paths),
 * socketpair, TCP and UDP over loopback.  Every connection is made in setup, before the peer
 * exists; each side then uses its own end (ipc_socket.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pingpong/socket.h"

void sock_side_init(struct pp_ctx *pp, int side) {
    if (pp->processes) pp_close(pp, side == 0 ? 1 : 0);
}

int sock_stream_send(struct pp_ctx *pp, int side) {
    const unsigned char *p = pp->buf[side];
    size_t left = pp->size;
    while (left) {
        ssize_t w = send(pp->fd[side], p, left, 0);
        if (w < 0) {
            if (errno == EINTR) continue;
            return pp_err(pp, side, "%s: send failed: %s", pp->m->name, strerror(errno));
        }
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

int sock_stream_recv(struct pp_ctx *pp, int side) {
    unsigned char *p = pp->buf[side];
    size_t left = pp->size;
    while (left) {
        ssize_t r = recv(pp->fd[side], p, left, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return pp_err(pp, side, "%s: recv failed: %s", pp->m->name, strerror(errno));
        }
        if (r == 0) return pp_err(pp, side, "%s: connection closed by the other side",
                                  pp->m->name);
        p += r;
        left -= (size_t)r;
    }
    return 0;
}

int sock_dgram_send(struct pp_ctx *pp, int side) {
    for (;;) {
        ssize_t w = send(pp->fd[side], pp->buf[side], pp->size, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return pp_err(pp, side, "%s: send failed: %s", pp->m->name, strerror(errno));
        if ((size_t)w != pp->size)
            return pp_err(pp, side, "%s: sent %zd of %zu bytes", pp->m->name, w, pp->size);
        return 0;
    }
}

int sock_dgram_recv(struct pp_ctx *pp, int side) {
    for (;;) {
        /* the buffer has 64 spare bytes: a longer datagram would show as a wrong length */
        ssize_t r = recv(pp->fd[side], pp->buf[side], pp->size + 64, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return pp_err(pp, side, "%s: recv failed: %s", pp->m->name, strerror(errno));
        if ((size_t)r != pp->size)
            return pp_err(pp, side, "%s: received a datagram of %zd bytes, expected %zu",
                          pp->m->name, r, pp->size);
        return 0;
    }
}

void sock_teardown(struct pp_ctx *pp) {
    for (int i = 0; i < 8; i++) pp_close(pp, i);
}

static int set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int sock_tcp_connect_pair(struct pp_ctx *pp, int lfd, int cfd, const char *addr, char *err,
                          size_t errlen) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t len = sizeof sa;
    int one = 1;
    pp->fd[0] = cfd;
    inet_pton(AF_INET, addr, &sa.sin_addr);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&sa, &len)) {
        snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(errno));
        return -1;
    }
    if (connect(cfd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", addr, ntohs(sa.sin_port),
                 strerror(errno));
        return -1;
    }
    pp->fd[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (pp->fd[1] < 0) {
        snprintf(err, errlen, "accept on %s: %s", addr, strerror(errno));
        return -1;
    }
    if (set_nodelay(pp->fd[0]) || set_nodelay(pp->fd[1])) {
        snprintf(err, errlen, "setsockopt TCP_NODELAY: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ unix_stream */

/* unix_stream and unix_dgram: the private directory their socket paths are made in */
struct unix_state {
    char dir[300];
};

static void unix_addr(struct pp_ctx *pp, struct sockaddr_un *sa, const char *leaf) {
    const char *dir = ((struct unix_state *)pp->state)->dir;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path, sizeof sa->sun_path, "%s/%s", dir, leaf);
    if (n < 0 || (size_t)n >= sizeof sa->sun_path)
        die(EXIT_BADINPUT, "the temporary directory %s is too long for a socket path (%zu "
            "bytes at most); set TMPDIR to a shorter one", dir, sizeof sa->sun_path - 3);
}

/* Bound to a path in a private directory; the path is removed as soon as the connection
 * exists (the clean-up list removes it on every other path). */
static void unix_stream_setup(struct pp_ctx *pp) {
    struct unix_state *st = pp->state;
    pp_private_dir(pp, st->dir, sizeof st->dir);
    struct sockaddr_un sa;
    unix_addr(pp, &sa, "s");
    int h = cleanup_unlink(sa.sun_path);
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pp->fd[2] = lfd;
    pp->fd[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || pp->fd[0] < 0) die(EXIT_FAIL, "socket(AF_UNIX): %s", strerror(errno));
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) || listen(lfd, 1))
        die(EXIT_FAIL, "cannot listen on %s: %s", sa.sun_path, strerror(errno));
    if (connect(pp->fd[0], (struct sockaddr *)&sa, sizeof sa))
        die(EXIT_FAIL, "cannot connect to %s: %s", sa.sun_path, strerror(errno));
    pp->fd[1] = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (pp->fd[1] < 0) die(EXIT_FAIL, "accept on %s: %s", sa.sun_path, strerror(errno));
    pp_close(pp, 2);
    unlink(sa.sun_path);
    cleanup_cancel(h);
    rmdir(st->dir);
}

static const struct pp_mech mech_unix_stream = {
    .name = "unix_stream",
    .state_size = sizeof(struct unix_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    .setup = unix_stream_setup,
    .side_init = sock_side_init,
    .send = sock_stream_send,
    .recv = sock_stream_recv,
    .teardown = sock_teardown,
    .timed = "rtt: send(size bytes) and recv(size bytes) on a connected AF_UNIX SOCK_STREAM "
             "socket (bound to a path, connected and accepted before the first iteration), "
             "with the responder's recv and send in between",
};

PINGPONG_BENCH(unix_stream, mech_unix_stream,
               "Unix-domain stream socket (bound to a path) ping-pong");

/* ------------------------------------------------------------------ unix_dgram */

/* Two datagram sockets, each bound to its own path and connected to the other's; the paths
 * are removed once connected (a connected Unix datagram socket needs its peer's path only
 * to connect). */
static void unix_dgram_setup(struct pp_ctx *pp) {
    struct unix_state *st = pp->state;
    pp_private_dir(pp, st->dir, sizeof st->dir);
    struct sockaddr_un sa[2];
    int h[2];
    for (int i = 0; i < 2; i++) {
        unix_addr(pp, &sa[i], i == 0 ? "i" : "r");
        h[i] = cleanup_unlink(sa[i].sun_path);
        pp->fd[i] = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (pp->fd[i] < 0) die(EXIT_FAIL, "socket(AF_UNIX): %s", strerror(errno));
        if (bind(pp->fd[i], (struct sockaddr *)&sa[i], sizeof sa[i]))
            die(EXIT_FAIL, "cannot bind %s: %s", sa[i].sun_path, strerror(errno));
    }
    for (int i = 0; i < 2; i++)
        if (connect(pp->fd[i], (struct sockaddr *)&sa[1 - i], sizeof sa[1 - i]))
            die(EXIT_FAIL, "cannot connect to %s: %s", sa[1 - i].sun_path, strerror(errno));
    for (int i = 0; i < 2; i++) {
        unlink(sa[i].sun_path);
        cleanup_cancel(h[i]);
    }
    rmdir(st->dir);
}

static const struct pp_mech mech_unix_dgram = {
    .name = "unix_dgram",
    .state_size = sizeof(struct unix_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 65536,
    .setup = unix_dgram_setup,
    .side_init = sock_side_init,
    .send = sock_dgram_send,
    .recv = sock_dgram_recv,
    .teardown = sock_teardown,
    .timed = "rtt: send() of one size-byte datagram and recv() of the answer on AF_UNIX "
             "SOCK_DGRAM sockets (each bound to a path and connected to the other before the "
             "first iteration), with the responder's recv and send in between",
};

PINGPONG_BENCH(unix_dgram, mech_unix_dgram,
               "Unix-domain datagram sockets (bound to paths, connected) ping-pong");

/* ------------------------------------------------------------------ socketpair */

static const char *const sp_types[] = {"stream", "dgram", "seqpacket", NULL};
static const struct pdef socketpair_params[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
    PP_PARAM_SIZE(1 << 20),
    {"type", P_ENUM, "stream", NULL,
     "socket type: stream (SOCK_STREAM), dgram (SOCK_DGRAM) or seqpacket (SOCK_SEQPACKET); "
     "dgram and seqpacket carry at most 65536 bytes per message",
     sp_types, 0, 0, NULL},
};

struct sp_state {
    int stream; /* type=stream: a byte stream, else one message per send */
};

static int socketpair_check(const struct bench *b, const struct pval *pv, char *err,
                            size_t errlen) {
    const char *t = param_of(b, pv, "type")->s;
    long long size = param_of(b, pv, "size")->i;
    if (strcmp(t, "stream") && size > 65536) {
        snprintf(err, errlen, "parameter size=%lld: socketpair type=%s carries at most 65536 "
                 "bytes per message", size, t);
        return EXIT_BADINPUT;
    }
    return 0;
}

static void socketpair_setup(struct pp_ctx *pp) {
    struct sp_state *st = pp->state;
    const char *t = param(pp->run, "type")->s;
    int type = !strcmp(t, "dgram") ? SOCK_DGRAM
               : !strcmp(t, "seqpacket") ? SOCK_SEQPACKET
                                         : SOCK_STREAM;
    st->stream = type == SOCK_STREAM;
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pp->fd))
        die(EXIT_FAIL, "socketpair(AF_UNIX, %s): %s", t, strerror(errno));
}

static int socketpair_send(struct pp_ctx *pp, int side) {
    struct sp_state *st = pp->state;
    return st->stream ? sock_stream_send(pp, side) : sock_dgram_send(pp, side);
}
static int socketpair_recv(struct pp_ctx *pp, int side) {
    struct sp_state *st = pp->state;
    return st->stream ? sock_stream_recv(pp, side) : sock_dgram_recv(pp, side);
}

static const struct pp_mech mech_socketpair = {
    .name = "socketpair",
    .state_size = sizeof(struct sp_state),
    .check = socketpair_check,
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    .setup = socketpair_setup,
    .side_init = sock_side_init,
    .send = socketpair_send,
    .recv = socketpair_recv,
    .teardown = sock_teardown,
    .timed = "rtt: send(size bytes) and recv(size bytes) on one end of an anonymous "
             "socketpair(AF_UNIX, type), with the responder's recv and send on the other end "
             "in between",
};

PINGPONG_BENCH(socketpair, mech_socketpair,
               "anonymous Unix-domain socketpair ping-pong (stream, dgram or seqpacket)",
               .params = socketpair_params, .nparams = COUNT(socketpair_params));

/* ------------------------------------------------------------------ tcp (loopback) */

static void tcp_setup(struct pp_ctx *pp) {
    char err[256];
    pp->fd[2] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pp->fd[0] = cfd;
    if (pp->fd[2] < 0 || cfd < 0) die(EXIT_FAIL, "socket(AF_INET): %s", strerror(errno));
    if (sock_tcp_connect_pair(pp, pp->fd[2], cfd, "127.0.0.1", err, sizeof err))
        die(EXIT_FAIL, "tcp over loopback: %s", err);
    pp_close(pp, 2);
}

static const struct pp_mech mech_tcp = {
    .name = "tcp",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    .setup = tcp_setup,
    .side_init = sock_side_init,
    .send = sock_stream_send,
    .recv = sock_stream_recv,
    .teardown = sock_teardown,
    .timed = "rtt: send(size bytes) and recv(size bytes) on a TCP connection over loopback "
             "(127.0.0.1, ephemeral port, TCP_NODELAY, connected before the first iteration), "
             "with the responder's recv and send in between",
};

PINGPONG_BENCH(tcp, mech_tcp, "TCP ping-pong over loopback (TCP_NODELAY)");

/* ------------------------------------------------------------------ udp (loopback) */

static void udp_setup(struct pp_ctx *pp) {
    struct sockaddr_in sa[2];
    for (int i = 0; i < 2; i++) {
        socklen_t len = sizeof sa[i];
        memset(&sa[i], 0, sizeof sa[i]);
        sa[i].sin_family = AF_INET;
        sa[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        pp->fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (pp->fd[i] < 0) die(EXIT_FAIL, "socket(AF_INET, SOCK_DGRAM): %s", strerror(errno));
        if (bind(pp->fd[i], (struct sockaddr *)&sa[i], sizeof sa[i]) ||
            getsockname(pp->fd[i], (struct sockaddr *)&sa[i], &len))
            die(EXIT_FAIL, "cannot bind a UDP socket to 127.0.0.1: %s", strerror(errno));
    }
    for (int i = 0; i < 2; i++)
        if (connect(pp->fd[i], (struct sockaddr *)&sa[1 - i], sizeof sa[1 - i]))
            die(EXIT_FAIL, "cannot connect UDP sockets over loopback: %s", strerror(errno));
}

static const struct pp_mech mech_udp = {
    .name = "udp",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 65507,
    .setup = udp_setup,
    .side_init = sock_side_init,
    .send = sock_dgram_send,
    .recv = sock_dgram_recv,
    .teardown = sock_teardown,
    .timed = "rtt: send() of one size-byte UDP datagram and recv() of the answer over loopback "
             "(two sockets bound to 127.0.0.1 ephemeral ports and connected to each other "
             "before the first iteration), with the responder's recv and send in between",
};

PINGPONG_BENCH(udp, mech_udp, "UDP ping-pong over loopback");
