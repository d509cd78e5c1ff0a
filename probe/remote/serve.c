/* latscope-probe serve: the far side of tcp_remote and udp_remote (docs/probe-cli.md, "serve").
 *
 * One thread watches everything in one poll loop: the stop signals, the TCP listener, every
 * connection still in its handshake (each a small state machine with a deadline, so a slow or
 * silent one holds up nobody), the UDP socket between UDP sessions (whatever arrives there is
 * dropped and counted), and the end of the running session.  One session runs at a time, in
 * a thread of its own that only echoes (remote/echo.c, pinned with --cpu).  The protocol:
 * remote/handshake.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/bench.h"
#include "remote/echo.h"
#include "remote/handshake.h"

#define MAX_PENDING 64           /* connections in their handshake at once */
#define SESSION_WAIT_S 10.0      /* an admitted client waits this long for the running session */
#define DEFAULT_SESSIONS 10
#define DEFAULT_MAX_TIME 600

enum cstate { C_HELLO, C_PROOF, C_START, C_WAIT };

/* A connection before its session: the handshake, then waiting for the running session. */
struct conn {
    int fd;
    enum cstate st;
    double deadline;
    struct sockaddr_storage peer;
    char addr[80];
    char in[SERVE_LINE_MAX];
    size_t inlen;
    char cnonce[SERVE_HEX + 1], snonce[SERVE_HEX + 1];
    char sid[RANDOM_HEX_LEN + 1];
    int udp, udp_port;
    size_t size;
};

struct server {
    struct token tok;
    int lfd, ufd, sigfd, done[2];
    char where[80];
    long long max_sessions, started, ended, refused;
    double max_time, t_end;
    int cpu;
    struct conn *conns[MAX_PENDING];
    struct session s;
    struct jbuf info;
};

/* ---------------------------------------------------------------- connections */

static void conn_close(struct server *sv, int i) {
    struct conn *c = sv->conns[i];
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    wipe(c, sizeof *c);
    free(c);
    sv->conns[i] = NULL;
}

/* A client refused: logged with the reason, given nothing, closed. */
static void refuse(struct server *sv, int i, const char *why) {
    slog("refused %s: %s", sv->conns[i]->addr, why);
    sv->refused++;
    conn_close(sv, i);
}

static int send_all(int fd, const char *p, size_t len) {
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1; /* a full socket buffer at handshake time: not a client */
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static void session_start(struct server *sv, int i) {
    struct conn *c = sv->conns[i];
    struct session *s = &sv->s;
    memset(s, 0, sizeof *s);
    s->udp = c->udp;
    s->size = c->size;
    s->fd = c->fd;
    s->ufd = sv->ufd;
    s->cpu = sv->cpu;
    s->done_fd = sv->done[1];
    s->client = c->peer;
    serve_addr_set_port((struct sockaddr *)&s->client, c->udp_port);
    memcpy(s->sid, c->sid, sizeof s->sid);
    memcpy(s->addr, c->addr, sizeof s->addr);
    int fl = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    if (!s->udp) {
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        echo_timeouts(c->fd);
    }
    c->fd = -1; /* the session's now */
    conn_close(sv, i);
    if (send_all(s->fd, "READY\n", 6) != 0) {
        slog("session %s: the client %s left before it began", s->sid, s->addr);
        close(s->fd);
        return;
    }
    sv->started++;
    if (pthread_create(&s->thr, NULL, echo_thread, s) != 0) {
        slog("session %s: cannot start its thread; closed", s->sid);
        close(s->fd);
        sv->ended++;
        return;
    }
    s->active = 1;
    char pin[32] = "unpinned";
    if (s->cpu >= 0) snprintf(pin, sizeof pin, "on CPU %d", s->cpu);
    if (s->udp) {
        char ua[80];
        serve_addr_text((struct sockaddr *)&s->client, ua, sizeof ua);
        slog("session %s started (%lld of %lld): udp echo of %zu-byte datagrams from %s only, "
             "echo thread %s", s->sid, sv->started, sv->max_sessions, s->size, ua, pin);
    } else {
        slog("session %s started (%lld of %lld): tcp echo of %zu-byte messages on the "
             "connection from %s, echo thread %s", s->sid, sv->started, sv->max_sessions,
             s->size, s->addr, pin);
    }
}

/* The session has ended (its thread said so, or it is being stopped). */
static void session_join(struct server *sv) {
    struct session *s = &sv->s;
    if (!s->active) return;
    pthread_join(s->thr, NULL);
    s->active = 0;
    close(s->fd);
    sv->ended++;
    char extra[96] = "";
    if (s->bad_size)
        snprintf(extra, sizeof extra, ", %lld of its datagrams of another size dropped",
                 s->bad_size);
    slog("session %s ended: %lld round trips%s; %s", s->sid, s->round_trips, extra,
         s->why_end ? s->why_end : "ended");
}

static void start_waiting(struct server *sv) {
    for (int i = 0; i < MAX_PENDING && !sv->s.active; i++)
        if (sv->conns[i] && sv->conns[i]->st == C_WAIT) {
            if (sv->started >= sv->max_sessions) {
                send_all(sv->conns[i]->fd, "BUSY\n", 5);
                refuse(sv, i, "the session limit is reached");
            } else {
                session_start(sv, i);
            }
        }
}

/* Split "a b c" into at most max words (in place); their number. */
static int words(char *line, char **w, int max) {
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (n == max) return max + 1;
        w[n++] = t;
    }
    return n;
}

/* A nonce or a proof as the protocol writes them: SERVE_HEX lower-case hex digits (anything
 * else is refused at once, not left to time out). */
static int is_hex(const char *s) {
    if (strlen(s) != SERVE_HEX) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
    return 1;
}

static int count_of(const char *s, long long min, long long max, long long *out) {
    const char *end;
    return parse_digits(s, out, &end) == 0 && !*end && *out >= min && *out <= max;
}

/* One line from connection i.  0: go on; -1: the connection is gone. */
static int conn_line(struct server *sv, int i, char *line) {
    struct conn *c = sv->conns[i];
    char *w[6];
    char out[SERVE_LINE_MAX];
    int n = words(line, w, 5);
    long long v;
    switch (c->st) {
    case C_HELLO:
        if (n != 4 || strcmp(w[0], "LATSCOPE-SERVE") || strcmp(w[2], "HELLO") ||
            !count_of(w[1], 0, 999999, &v) || !is_hex(w[3])) {
            refuse(sv, i, "not a latscope hello");
            return -1;
        }
        if (v != SERVE_PROTOCOL) {
            snprintf(out, sizeof out, "protocol version %lld (this server speaks %d)", v,
                     SERVE_PROTOCOL);
            refuse(sv, i, out);
            return -1;
        }
        snprintf(c->cnonce, sizeof c->cnonce, "%s", w[3]);
        if (serve_nonce(c->snonce) != 0) {
            refuse(sv, i, "no randomness for a nonce");
            return -1;
        }
        snprintf(out, sizeof out, "LATSCOPE-SERVE %d CHALLENGE %s\n", SERVE_PROTOCOL, c->snonce);
        if (send_all(c->fd, out, strlen(out))) {
            refuse(sv, i, "gone during the handshake");
            return -1;
        }
        c->st = C_PROOF;
        return 0;
    case C_PROOF: {
        unsigned char got[SERVE_NONCE], want[SERVE_NONCE];
        char expect[SERVE_HEX + 1];
        if (n != 2 || strcmp(w[0], "PROOF") || !is_hex(w[1])) {
            refuse(sv, i, "not a proof");
            return -1;
        }
        serve_proof(&sv->tok, "client", c->snonce, c->cnonce, expect);
        hex_decode(expect, want, sizeof want);
        hex_decode(w[1], got, sizeof got);
        int ok = equal_ct(got, want, sizeof got);
        wipe(expect, sizeof expect);
        wipe(want, sizeof want);
        if (!ok) {
            refuse(sv, i, "wrong token (its proof does not match)");
            return -1;
        }
        if (sv->started >= sv->max_sessions) {
            refuse(sv, i, "the session limit is reached");
            return -1;
        }
        random_hex(c->sid);
        serve_proof(&sv->tok, "server", c->cnonce, c->snonce, expect);
        snprintf(out, sizeof out, "WELCOME %s %s %zu\n", expect, c->sid, sv->info.len);
        wipe(expect, sizeof expect);
        slog("admitted %s as session %s", c->addr, c->sid);
        if (send_all(c->fd, out, strlen(out)) || send_all(c->fd, sv->info.s, sv->info.len)) {
            refuse(sv, i, "gone during the handshake");
            return -1;
        }
        c->st = C_START;
        c->deadline = serve_now() + SERVE_HANDSHAKE_S;
        return 0;
    }
    case C_START: {
        long long size, port = 0;
        int udp = n >= 2 && !strcmp(w[1], "udp");
        const char *why = NULL;
        if (n < 3 || strcmp(w[0], "START") || (!udp && strcmp(w[1], "tcp")) ||
            n != (udp ? 4 : 3))
            why = "not a START line";
        else if (!count_of(w[2], 1, udp ? SERVE_MAX_DATAGRAM : SERVE_MAX_TCP_MESSAGE, &size))
            why = udp ? "size must be 1 to 65507 bytes" : "size must be 1 to 1048576 bytes";
        else if (udp && !count_of(w[3], 1, 65535, &port))
            why = "the udp port must be 1 to 65535";
        else if (c->inlen)
            why = "data before READY";
        if (why) {
            snprintf(out, sizeof out, "REFUSED %s\n", why);
            send_all(c->fd, out, strlen(out));
            slog("session %s from %s refused: %s", c->sid, c->addr, why);
            conn_close(sv, i);
            return -1;
        }
        c->udp = udp;
        c->size = (size_t)size;
        c->udp_port = (int)port;
        c->st = C_WAIT;
        c->deadline = serve_now() + SESSION_WAIT_S;
        if (!sv->s.active) start_waiting(sv);
        else slog("session %s waits for session %s to end", c->sid, sv->s.sid);
        return -1; /* started or waiting: no more lines */
    }
    case C_WAIT:
        refuse(sv, i, "data before READY");
        return -1;
    }
    return -1;
}

/* Connection i is readable: take what is there, act on each whole line. */
static void conn_read(struct server *sv, int i) {
    struct conn *c = sv->conns[i];
    ssize_t r = recv(c->fd, c->in + c->inlen, sizeof c->in - c->inlen, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK)) {
        refuse(sv, i, c->st == C_WAIT ? "left while waiting for its session"
                                      : "closed the connection during the handshake");
        return;
    }
    if (r < 0) return;
    c->inlen += (size_t)r;
    for (;;) {
        char *nl = memchr(c->in, '\n', c->inlen);
        if (!nl) {
            if (c->inlen == sizeof c->in) refuse(sv, i, "a line too long");
            return;
        }
        size_t len = (size_t)(nl - c->in);
        char line[SERVE_LINE_MAX];
        memcpy(line, c->in, len);
        line[len] = 0;
        memmove(c->in, nl + 1, c->inlen - len - 1);
        c->inlen -= len + 1;
        if (memchr(line, 0, len)) {
            refuse(sv, i, "not a latscope hello");
            return;
        }
        if (conn_line(sv, i, line) != 0) return;
    }
}

static int unproven(const struct conn *c) { return c && (c->st == C_HELLO || c->st == C_PROOF); }

/* Every handshake slot taken: the address holding the most connections that have not proved
 * they hold the token loses the one of them that has waited longest, so that idle
 * connections from someone without the token, however many, cannot keep a client with it
 * out; a client that proved itself keeps its place. The slot made free, or -1. */
static int make_room(struct server *sv) {
    int slot = -1, most = 0;
    for (int i = 0; i < MAX_PENDING; i++) {
        const struct conn *c = sv->conns[i];
        if (!unproven(c)) continue;
        int same = 0;
        for (int k = 0; k < MAX_PENDING; k++)
            if (unproven(sv->conns[k]) &&
                serve_same_addr((const struct sockaddr *)&c->peer,
                                (const struct sockaddr *)&sv->conns[k]->peer, 0))
                same++;
        if (same > most || (same == most && c->deadline < sv->conns[slot]->deadline)) {
            most = same;
            slot = i;
        }
    }
    if (slot >= 0) refuse(sv, slot, "pushed out by a newer connection before its proof");
    return slot;
}

static void conn_accept(struct server *sv) {
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd = accept4(sv->lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; /* EAGAIN, or the client gave up already */
        char addr[80];
        serve_addr_text((struct sockaddr *)&sa, addr, sizeof addr);
        int slot = -1;
        for (int i = 0; i < MAX_PENDING && slot < 0; i++)
            if (!sv->conns[i]) slot = i;
        if (slot < 0) slot = make_room(sv);
        const char *why = sv->started >= sv->max_sessions ? "the session limit is reached"
                          : slot < 0 ? "too many handshakes under way"
                                     : NULL;
        if (why) {
            slog("refused %s: %s", addr, why);
            sv->refused++;
            close(fd);
            continue;
        }
        struct conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->st = C_HELLO;
        c->deadline = serve_now() + SERVE_HANDSHAKE_S;
        c->peer = sa;
        memcpy(c->addr, addr, sizeof addr);
        sv->conns[slot] = c;
    }
}

/* The UDP socket between UDP sessions: nobody is admitted to it; drop what came. */
static void udp_drain(struct server *sv) {
    unsigned char buf[64];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t r = recvfrom(sv->ufd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from,
                             &fl);
        if (r < 0) return;
        log_foreign((struct sockaddr *)&from,
                    sv->s.active ? "the running session is tcp" : "no session is running");
    }
}

/* ---------------------------------------------------------------- set-up */

static void usage(FILE *f) {
    fprintf(f,
            "usage: latscope-probe serve --bind ADDR:PORT [--token-file FILE] [--sessions N]\n"
            "                            [--max-time S] [--cpu N]\n"
            "\n"
            "The far side of tcp_remote and udp_remote: echoes their messages over TCP, and\n"
            "their datagrams over UDP, on ADDR:PORT (both), to clients that prove they hold\n"
            "the token; logs one line per event on stderr.  Protocol: docs/probe-cli.md.\n"
            "\n"
            "options:\n"
            "  --bind ADDR:PORT  the one address to listen on (numeric: 10.0.0.2:7300,\n"
            "                    [fd00::2]:7300; port 0: a free one, logged)\n"
            "  --token-file FILE the shared token (mode 600); without it, $%s\n"
            "  --sessions N      exit after N sessions (default %d; one per worker process\n"
            "                    of a lab run)\n"
            "  --max-time S      exit after S seconds, whole (default %d)\n"
            "  --cpu N           pin the echo thread to CPU N (default: unpinned)\n"
            "\n"
            "exit codes: 0 done (the limits, or SIGINT/SIGTERM/SIGHUP), 2 bad input, 3 cannot\n"
            "listen there.\n",
            SERVE_TOKEN_ENV, DEFAULT_SESSIONS, DEFAULT_MAX_TIME);
}

static long long serve_count(const char *opt, const char *v, long long min, long long max) {
    long long x;
    if (!count_of(v, min, max, &x))
        die(EXIT_BADINPUT, "%s %s: give a whole number from %lld to %lld", opt, v, min, max);
    return x;
}

/* Listen on the address, TCP and UDP on one port (port 0: a free one for both). */
static void serve_listen(struct server *sv, const char *bind_text) {
    struct sockaddr_storage sa;
    socklen_t len;
    char err[256];
    if (serve_parse_bind(bind_text, &sa, &len, err, sizeof err)) die(EXIT_BADINPUT, "%s", err);
    int want = serve_addr_port((struct sockaddr *)&sa);
    for (int attempt = 0; attempt < 20; attempt++) {
        int one = 1, e;
        const char *what;
        sv->lfd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sv->ufd = socket(sa.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (sv->lfd < 0 || sv->ufd < 0) die(EXIT_FAIL, "socket: %s", strerror(errno));
        if (sa.ss_family == AF_INET6) {
            setsockopt(sv->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
            setsockopt(sv->ufd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        }
        setsockopt(sv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        serve_addr_set_port((struct sockaddr *)&sa, want);
        what = "tcp";
        if (bind(sv->lfd, (struct sockaddr *)&sa, len) == 0 && listen(sv->lfd, 16) == 0) {
            socklen_t l = len;
            getsockname(sv->lfd, (struct sockaddr *)&sa, &l);
            what = "udp";
            if (bind(sv->ufd, (struct sockaddr *)&sa, len) == 0) {
                echo_timeouts(sv->ufd); /* the echo thread looks at its stop flag */
                serve_addr_text((struct sockaddr *)&sa, sv->where, sizeof sv->where);
                return;
            }
        }
        e = errno;
        close(sv->lfd);
        close(sv->ufd);
        if (want == 0 && e == EADDRINUSE) continue; /* that free tcp port is taken for udp */
        serve_addr_text((struct sockaddr *)&sa, err, sizeof err);
        die(e == EADDRNOTAVAIL || e == EINVAL ? EXIT_BADINPUT : EXIT_UNSUPPORTED,
            "cannot listen on %s (%s): %s%s", err, what, strerror(e),
            e == EADDRNOTAVAIL ? "; give an address of this host" : "");
    }
    die(EXIT_UNSUPPORTED, "cannot find a port free for both tcp and udp on %s", bind_text);
}

/* What a client records of this side: the protocol, the probe, its pinning, the environment. */
static void serve_info(struct server *sv) {
    jb_init(&sv->info);
    jb_obj(&sv->info, NULL);
    jb_int(&sv->info, "protocol", SERVE_PROTOCOL);
    jb_str(&sv->info, "probe_version", PROBE_VERSION);
    jb_int(&sv->info, "cpu", sv->cpu);
    char pin[32] = "unpinned";
    if (sv->cpu >= 0) snprintf(pin, sizeof pin, "CPU %d", sv->cpu);
    jb_str(&sv->info, "pinning", pin);
    jb_str(&sv->info, "listening", sv->where);
    env_json(&sv->info, "env", NULL);
    jb_end_obj(&sv->info);
}

/* ---------------------------------------------------------------- the loop */

static int serve_loop(struct server *sv) {
    const char *stop = NULL;
    char why[96];
    while (!stop) {
        struct pollfd pf[MAX_PENDING + 5];
        int idx[MAX_PENDING + 5], n = 0;
        double now = serve_now(), next = sv->t_end;
        pf[n] = (struct pollfd){.fd = sv->sigfd, .events = POLLIN};
        idx[n++] = -1;
        pf[n] = (struct pollfd){.fd = sv->lfd, .events = POLLIN};
        idx[n++] = -2;
        pf[n] = (struct pollfd){.fd = sv->done[0], .events = POLLIN};
        idx[n++] = -3;
        if (!(sv->s.active && sv->s.udp)) {
            pf[n] = (struct pollfd){.fd = sv->ufd, .events = POLLIN};
            idx[n++] = -4;
        } else if (!sv->s.stop) {
            pf[n] = (struct pollfd){.fd = sv->s.fd, .events = POLLIN}; /* the udp session's mark */
            idx[n++] = -5;
        }
        for (int i = 0; i < MAX_PENDING; i++)
            if (sv->conns[i]) {
                if (sv->conns[i]->deadline < next) next = sv->conns[i]->deadline;
                pf[n] = (struct pollfd){.fd = sv->conns[i]->fd, .events = POLLIN};
                idx[n++] = i;
            }
        int ms = next <= now ? 0 : (int)((next - now) * 1000) + 1;
        if (poll(pf, (nfds_t)n, ms) < 0 && errno != EINTR) {
            snprintf(why, sizeof why, "poll failed: %s", strerror(errno));
            stop = why;
            break;
        }
        for (int k = 0; k < n && !stop; k++) {
            if (!pf[k].revents) continue;
            if (idx[k] == -1) {
                int sig = plat_signal_fd_read(sv->sigfd);
                snprintf(why, sizeof why, "signal %d (%s)", sig, sig > 0 ? strsignal(sig) : "?");
                stop = why;
            } else if (idx[k] == -2) {
                conn_accept(sv);
            } else if (idx[k] == -3) {
                char b;
                if (read(sv->done[0], &b, 1) == 1) session_join(sv);
                if (sv->ended >= sv->max_sessions) {
                    snprintf(why, sizeof why, "%lld sessions served (--sessions)", sv->ended);
                    stop = why;
                } else {
                    start_waiting(sv);
                }
            } else if (idx[k] == -4) {
                udp_drain(sv);
            } else if (idx[k] == -5) {
                char b[64];
                if (sv->s.active && recv(sv->s.fd, b, sizeof b, MSG_DONTWAIT) >= 0) {
                    sv->s.client_gone = 1; /* closed (or spoke): the udp session is over */
                    sv->s.stop = 1;
                }
            } else if (sv->conns[idx[k]]) {
                conn_read(sv, idx[k]);
            }
        }
        now = serve_now();
        for (int i = 0; i < MAX_PENDING && !stop; i++) {
            struct conn *c = sv->conns[i];
            if (!c || c->deadline > now) continue;
            if (c->st == C_WAIT) {
                send_all(c->fd, "BUSY\n", 5);
                refuse(sv, i, "another session still runs");
            } else {
                refuse(sv, i, "no answer within the handshake time");
            }
        }
        if (!stop && now >= sv->t_end) {
            snprintf(why, sizeof why, "--max-time %.0f s reached", sv->max_time);
            stop = why;
        }
    }
    slog("stopping: %s", stop);
    return 0;
}

static int serve_main(int argc, char **argv) {
    struct server *sv = xcalloc(1, sizeof *sv);
    const char *bind_text = NULL, *token_file = NULL;
    sv->max_sessions = DEFAULT_SESSIONS;
    sv->max_time = DEFAULT_MAX_TIME;
    sv->cpu = -1;
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage(stdout);
            free(sv);
            return 0;
        }
        if (strcmp(opt, "--bind") && strcmp(opt, "--token-file") && strcmp(opt, "--sessions") &&
            strcmp(opt, "--max-time") && strcmp(opt, "--cpu"))
            die(EXIT_BADINPUT, "serve: unknown option %s; see latscope-probe serve --help", opt);
        if (!v) die(EXIT_BADINPUT, "serve: option %s needs a value", opt);
        i++;
        if (!strcmp(opt, "--bind")) bind_text = v;
        else if (!strcmp(opt, "--token-file")) token_file = v;
        else if (!strcmp(opt, "--sessions")) sv->max_sessions = serve_count(opt, v, 1, 1000000);
        else if (!strcmp(opt, "--max-time")) sv->max_time = (double)serve_count(opt, v, 1, 604800);
        else sv->cpu = (int)serve_count(opt, v, 0, 4095);
    }
    if (!bind_text)
        die(EXIT_BADINPUT, "serve: give --bind ADDR:PORT, the one address to listen on");
    char err[768];
    int code = token_load(token_file, "--token-file", &sv->tok, err, sizeof err);
    if (code) die(code, "serve: %s", err);
    code = cpu_check(sv->cpu, err, sizeof err);
    if (code) die(code, "serve: --cpu: %s", err);

    sigset_t set = stop_signals();
    sv->sigfd = plat_signal_fd_open(&set);
    if (sv->sigfd < 0) die(EXIT_FAIL, "serve: cannot watch for signals: %s", strerror(errno));
    if (pipe2(sv->done, O_CLOEXEC) != 0) die(EXIT_FAIL, "serve: pipe: %s", strerror(errno));
    serve_listen(sv, bind_text);
    serve_info(sv);
    sv->t_end = serve_now() + sv->max_time;
    char pin[32] = "unpinned";
    if (sv->cpu >= 0) snprintf(pin, sizeof pin, "on CPU %d", sv->cpu);
    slog("listening on %s (tcp and udp), pid %d: at most %lld sessions, %.0f s; echo thread %s",
         sv->where, (int)getpid(), sv->max_sessions, sv->max_time, pin);
    serve_loop(sv);

    /* the end: the running session is told and joined, every connection closed */
    if (sv->s.active) {
        sv->s.stop = 1;
        session_join(sv);
    }
    for (int i = 0; i < MAX_PENDING; i++)
        if (sv->conns[i]) {
            slog("closed %s: the server is stopping", sv->conns[i]->addr);
            conn_close(sv, i);
        }
    close(sv->lfd);
    close(sv->ufd);
    close(sv->sigfd);
    close(sv->done[0]);
    close(sv->done[1]);
    slog("done: %lld sessions served, %lld clients refused, %lld udp datagrams dropped",
         sv->ended, sv->refused, echo_dropped());
    wipe(&sv->tok, sizeof sv->tok);
    jb_free(&sv->info);
    free(sv);
    return EXIT_OK;
}

const struct subcommand subcommand_serve = {
    .name = "serve",
    .usage = "serve --bind ADDR:PORT ...  (see latscope-probe serve --help)",
    .main = serve_main,
};
