/* latscope-probe: tcp_remote and udp_remote: the round trip to `latscope-probe serve` on
 * another host (remote/serve.c) and back.
 *
 * This side is the initiator, with the ping-pong driver's timed region (clock, send, receive,
 * clock) and its socket calls (pingpong/socket.c); the responder is the server's echo thread,
 * on the far host.  Before the first iteration: the TCP control connection, the handshake
 * (remote/handshake.h: this side proves it holds the token, then the server proves it does,
 * and sends what it records of itself, kept in the header as bench.peer), for udp a socket
 * bound to the control connection's local address and connected to the server's port.  Only
 * the round trip is measured: one-way times would need a clock both hosts share, which they
 * do not have (their clocks are synchronised at best to NTP's or PTP's accuracy, microseconds
 * apart, which is what a one-way time across a short link is), so there is no oneway column;
 * the lab derives rtt/2, which is the one-way time only where both directions cost the same. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "pingpong/socket.h"
#include "remote/handshake.h"

#define CONNECT_S 5.0
/* the whole handshake, with up to 10 s waiting for another client's session to end */
#define HANDSHAKE_S 15.0

#define REMOTE_PARAMS(maxsize)                                                                 \
    {"host", P_STR, "", NULL,                                                                  \
     "the server: a host name or a numeric address where latscope-probe serve listens",       \
     NULL, 0, 0, NULL},                                                                        \
        {"port", P_INT, "0", "port", "the server's port (its --bind ADDR:PORT)", NULL, 0,      \
         65535, NULL},                                                                         \
        PP_PARAM_SIZE(maxsize),                                                                \
        {"token_file", P_PATH, "", NULL,                                                       \
         "the file holding the token the server was given (mode 600); empty: the token "      \
         "from $" SERVE_TOKEN_ENV,                                                             \
         NULL, 0, 0, NULL},                                                                    \
    {                                                                                          \
        "cpu", P_CPU, "none", "cpu",                                                           \
            "the CPU this side's measuring thread is pinned to (none: unpinned); the "        \
            "server's echo thread is pinned with its --cpu",                                   \
            NULL, 0, 0, NULL                                                                   \
    }

static const struct pdef tcp_remote_params[] = {REMOTE_PARAMS(SERVE_MAX_TCP_MESSAGE)};
static const struct pdef udp_remote_params[] = {REMOTE_PARAMS(SERVE_MAX_DATAGRAM)};

static const struct coldef remote_columns[] = {
    {"rtt", "round trip: this side sends, latscope-probe serve on the far host echoes; timed "
            "by this side",
     "round_trip", NULL},
};

/* What a run holds, beyond the driver's context its socket calls use (fd[0]: the socket the
 * messages go over). */
/* Marks an address resolve() made itself (ai_canonname is never read). */
static const char NUMERIC_MARK[] = "numeric";

struct remote {
    struct pp_ctx pp;
    struct pp_mech mech; /* only its name, for the socket calls' messages */
    int udp, cfd, cpu;
    const char *host;
    int port;
    char server[80], local[80], udp_local[80], sid[RANDOM_HEX_LEN + 1];
    char *info; /* the server's JSON */
    size_t infolen;
};

/* The server's addresses for host (a name or a numeric address).  A static probe
 * (LATSCOPE_NO_RESOLVER, the cross builds) resolves no names: glibc's resolver would need the
 * shared libraries of the glibc it was linked with on the machine it runs on, so it takes a
 * numeric IPv4 or IPv6 address only.  release_addrs frees the result. */
static int resolve(const char *host, int port, int socktype, struct addrinfo **out, char *err,
                   size_t errlen) {
    struct numeric {
        struct addrinfo ai;
        struct sockaddr_storage sa;
    };
    struct numeric *n = xcalloc(1, sizeof *n);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&n->sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&n->sa;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        n->ai.ai_addrlen = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        n->ai.ai_addrlen = sizeof *v6;
    } else {
        free(n);
#if LATSCOPE_NO_RESOLVER
        snprintf(err, errlen, "host=%s: give the server's IP address (this static probe "
                 "resolves no names; 'getent hosts %s' gives it)", host, host);
        return EXIT_BADINPUT;
#else
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = socktype,
                                 .ai_flags = AI_NUMERICSERV};
        char ps[16];
        snprintf(ps, sizeof ps, "%d", port);
        int e = getaddrinfo(host, ps, &hints, out);
        if (e) {
            snprintf(err, errlen, "host=%s: %s", host, e == EAI_SYSTEM ? strerror(errno)
                                                                        : gai_strerror(e));
            return EXIT_BADINPUT;
        }
        return 0;
#endif
    }
    n->ai.ai_family = n->sa.ss_family;
    n->ai.ai_socktype = socktype;
    n->ai.ai_addr = (struct sockaddr *)&n->sa;
    n->ai.ai_canonname = (char *)NUMERIC_MARK;
    *out = &n->ai;
    return 0;
}

static void release_addrs(struct addrinfo *ai) {
    if (ai && ai->ai_canonname == NUMERIC_MARK) free(ai); /* the struct numeric above */
#if !LATSCOPE_NO_RESOLVER
    else if (ai) freeaddrinfo(ai);
#endif
}

static int remote_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen) {
    const char *host = param_of(b, pv, "host")->s;
    int port = (int)param_of(b, pv, "port")->i;
    if (!*host) {
        snprintf(err, errlen, "%s needs the server: -p host=NAME_OR_ADDRESS, where "
                 "latscope-probe serve listens", b->name);
        return EXIT_BADINPUT;
    }
    if (port == 0) {
        snprintf(err, errlen, "%s needs the server's port: -p port=N (as latscope-probe serve "
                 "--bind gave it)", b->name);
        return EXIT_BADINPUT;
    }
    struct addrinfo *ai;
    int code = resolve(host, port, SOCK_STREAM, &ai, err, errlen);
    if (code) return code;
    release_addrs(ai);
    struct token t;
    code = token_load(param_of(b, pv, "token_file")->s, "token_file=", &t, err, errlen);
    wipe(&t, sizeof t);
    if (code) return code;
    return cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
}

/* ---------------------------------------------------------------- the handshake */

__attribute__((noreturn, format(printf, 2, 3))) static void fail(struct remote *r,
                                                                 const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the address, and the name it was given as where that is not the address itself */
    size_t hl = strlen(r->host);
    int named = strncmp(r->server, r->host, hl) || (r->server[hl] != ':' && r->server[hl]);
    if (named) die(EXIT_FAIL, "%s: the server %s (%s): %s", r->mech.name, r->server, r->host, msg);
    die(EXIT_FAIL, "%s: the server %s: %s", r->mech.name, r->server, msg);
}

/* Wait until fd can be read (events POLLIN) or written (POLLOUT), up to the deadline. */
static int wait_fd(int fd, short events, double deadline) {
    for (;;) {
        stop_if_asked();
        double left = deadline - serve_now();
        if (left <= 0) return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1; /* looks at g_stop in between */
        int r = poll(&p, 1, ms);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static void send_line(struct remote *r, const char *line) {
    if (write_full(r->cfd, line, strlen(line)) != 0)
        fail(r, "the connection broke during the handshake: %s", strerror(errno));
}

/* Exactly len bytes, within the deadline: 0, or -1 (end of file first). */
static int read_exact(struct remote *r, char *buf, size_t len, double deadline, const char *step) {
    size_t got = 0;
    while (got < len) {
        if (wait_fd(r->cfd, POLLIN, deadline))
            fail(r, "no answer within %.0f s (%s)", HANDSHAKE_S, step);
        ssize_t n = recv(r->cfd, buf + got, len - got, 0);
        if (n == 0) return -1;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            fail(r, "the connection broke during the handshake (%s): %s", step, strerror(errno));
        if (n > 0) got += (size_t)n;
    }
    return 0;
}

/* One line (without its newline) into buf; -1 at end of file. */
static int read_line(struct remote *r, char *buf, size_t cap, double deadline, const char *step) {
    size_t n = 0;
    for (;;) {
        if (read_exact(r, buf + n, 1, deadline, step)) return -1;
        if (buf[n] == '\n') break;
        if (++n == cap - 1) fail(r, "a line longer than the protocol allows (%s)", step);
    }
    buf[n] = 0;
    return 0;
}

static void connect_server(struct remote *r) {
    struct addrinfo *ai, *a;
    char err[600];
    int code = resolve(r->host, r->port, SOCK_STREAM, &ai, err, sizeof err);
    if (code) die(code, "%s: %s", r->mech.name, err);
    int e = 0;
    for (a = ai; a; a = a->ai_next) {
        r->cfd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (r->cfd < 0) {
            e = errno;
            continue;
        }
        serve_addr_text(a->ai_addr, r->server, sizeof r->server);
        if (connect(r->cfd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
            socklen_t el = sizeof e;
            if (wait_fd(r->cfd, POLLOUT, serve_now() + CONNECT_S)) e = ETIMEDOUT;
            else if (getsockopt(r->cfd, SOL_SOCKET, SO_ERROR, &e, &el)) e = errno;
            if (!e) break;
        } else {
            e = errno;
        }
        close(r->cfd);
        r->cfd = -1;
    }
    release_addrs(ai);
    if (r->cfd < 0)
        die(EXIT_FAIL, "%s: cannot connect to %s port %d: %s (is latscope-probe serve listening "
            "there?)", r->mech.name, r->host, r->port, strerror(e));
    fcntl(r->cfd, F_SETFL, fcntl(r->cfd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(r->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    if (getsockname(r->cfd, (struct sockaddr *)&sa, &sl) == 0)
        serve_addr_text((struct sockaddr *)&sa, r->local, sizeof r->local);
}

/* udp: a socket on the control connection's local address (so the server knows it as the
 * admitted client's), any port, connected to the server's address and port. */
static int udp_socket(struct remote *r) {
    struct sockaddr_storage me, srv;
    socklen_t ml = sizeof me, sl = sizeof srv;
    if (getsockname(r->cfd, (struct sockaddr *)&me, &ml) ||
        getpeername(r->cfd, (struct sockaddr *)&srv, &sl))
        fail(r, "getsockname: %s", strerror(errno));
    serve_addr_set_port((struct sockaddr *)&me, 0);
    int fd = socket(me.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&me, ml) ||
        connect(fd, (struct sockaddr *)&srv, sl) || getsockname(fd, (struct sockaddr *)&me, &ml))
        fail(r, "cannot make the udp socket: %s", strerror(errno));
    r->pp.fd[0] = fd;
    serve_addr_text((struct sockaddr *)&me, r->udp_local, sizeof r->udp_local);
    return serve_addr_port((struct sockaddr *)&me);
}

static void handshake(struct remote *r, const struct token *tok, size_t size) {
    double deadline = serve_now() + HANDSHAKE_S;
    char line[SERVE_LINE_MAX], cnonce[SERVE_HEX + 1], want[SERVE_HEX + 1], proof[SERVE_HEX + 1];
    if (serve_nonce(cnonce)) die(EXIT_FAIL, "no randomness for a nonce: %s", strerror(errno));
    snprintf(line, sizeof line, "LATSCOPE-SERVE %d HELLO %s\n", SERVE_PROTOCOL, cnonce);
    send_line(r, line);
    char prefix[64];
    int plen = snprintf(prefix, sizeof prefix, "LATSCOPE-SERVE %d CHALLENGE ", SERVE_PROTOCOL);
    unsigned char nb[SERVE_NONCE];
    if (read_line(r, line, sizeof line, deadline, "its challenge"))
        fail(r, "closed the connection at once: not latscope-probe serve, one that speaks "
             "another protocol version than %d, or one at its session limit (its log says "
             "which)", SERVE_PROTOCOL);
    if (strncmp(line, prefix, (size_t)plen) || hex_decode(line + plen, nb, sizeof nb))
        fail(r, "did not answer as latscope-probe serve (protocol %d) does", SERVE_PROTOCOL);
    char snonce[SERVE_HEX + 1];
    snprintf(snonce, sizeof snonce, "%s", line + plen);
    serve_proof(tok, "client", snonce, cnonce, proof);
    snprintf(line, sizeof line, "PROOF %s\n", proof);
    send_line(r, line);
    wipe(proof, sizeof proof);
    wipe(line, sizeof line);
    if (read_line(r, line, sizeof line, deadline, "its welcome"))
        fail(r, "refused this client: the token differs from the server's, or it has started "
             "its last session (its log says which)");
    char *w[5], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " ", &save); t && n < 5; t = strtok_r(NULL, " ", &save))
        w[n++] = t;
    long long len = -1;
    const char *end;
    unsigned char got[SERVE_NONCE], exp[SERVE_NONCE];
    if (n != 4 || strcmp(w[0], "WELCOME") || hex_decode(w[1], got, sizeof got) ||
        strlen(w[2]) != RANDOM_HEX_LEN || parse_digits(w[3], &len, &end) || *end ||
        len > SERVE_INFO_MAX)
        fail(r, "sent a welcome this probe does not understand");
    serve_proof(tok, "server", cnonce, snonce, want);
    hex_decode(want, exp, sizeof exp);
    wipe(want, sizeof want);
    if (!equal_ct(got, exp, sizeof got))
        fail(r, "did not prove that it holds the token: it is not the server meant");
    snprintf(r->sid, sizeof r->sid, "%s", w[2]);
    r->info = xcalloc(1, (size_t)len + 1);
    r->infolen = (size_t)len;
    if (read_exact(r, r->info, (size_t)len, deadline, "its description"))
        fail(r, "closed the connection during the handshake");
    if (!serve_json_object(r->info, r->infolen))
        fail(r, "described itself in something other than a JSON object");
    if (r->udp)
        snprintf(line, sizeof line, "START udp %zu %d\n", size, udp_socket(r));
    else
        snprintf(line, sizeof line, "START tcp %zu\n", size);
    send_line(r, line);
    if (read_line(r, line, sizeof line, deadline, "the start of the session"))
        fail(r, "closed the connection before the session began");
    if (!strcmp(line, "BUSY"))
        fail(r, "is busy: another client's session ran on for 10 s; run again when it is done");
    if (!strncmp(line, "REFUSED ", 8)) fail(r, "refused the session: %.200s", line + 8);
    if (strcmp(line, "READY")) fail(r, "sent something else than READY");
    if (!r->udp) r->pp.fd[0] = r->cfd;
}

/* ---------------------------------------------------------------- the run */

static void remote_meta(struct remote *r) {
    struct jbuf *j = &r->pp.run->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "transport", r->udp ? "udp" : "tcp");
    jb_obj(j, "server");
    jb_str(j, "host", r->host);
    jb_int(j, "port", r->port);
    jb_str(j, "address", r->server);
    jb_str(j, "session", r->sid);
    jb_end_obj(j);
    jb_str(j, "client_address", r->local);
    if (r->udp) jb_str(j, "client_udp_address", r->udp_local);
    jb_int(j, "cpu", r->cpu);
    char pin[32] = "unpinned";
    if (r->cpu >= 0) snprintf(pin, sizeof pin, "CPU %d", r->cpu);
    jb_str(j, "pinning", pin);
    jb_int(j, "message_bytes", (long long)r->pp.size);
    jb_str(j, "timed_region",
           r->udp ? "rtt: send() of one size-byte UDP datagram to the server (a socket bound to "
                    "the control connection's local address, connected to the server's port) "
                    "and recv() of its echo, with the network both ways and the server's "
                    "recvfrom and sendto in between"
                  : "rtt: send(size bytes) and recv(size bytes) on the TCP connection to the "
                    "server (TCP_NODELAY both ends; the handshake's connection), with the "
                    "network both ways and the server's recv and send in between");
    jb_str(j, "timed_region_frame",
           "rtt: from this side's start read of the clock (lfence; rdtsc; lfence for tsc) to "
           "its end read (rdtscp; lfence): the calls above and everything between them on both "
           "hosts and the wire.  Outside every timed region: the store of the sample, the "
           "progress counter and the check for a stop request; the handshake.  Each sample "
           "holds one clock read cost (clock.overhead_ns), not subtracted; with --inject-ns "
           "the busy-wait follows the start read");
    jb_obj(j, "latencies");
    jb_str(j, "rtt", "round trip (this host -> the server -> this host), timed by this host");
    jb_end_obj(j);
    jb_str(j, "one_way", "not measured: the two hosts share no clock (synchronised at best to "
                         "NTP's or PTP's accuracy, as far apart as a one-way time itself); the "
                         "lab's rtt/2 is the estimate, right only where both ways cost the same");
    jb_str(j, "context_switches", "unknown: on this side the measuring thread sleeps in its "
                                  "receive each round trip; the server's echo thread does the "
                                  "same on its host");
    jb_json(j, "peer", r->info);
    jb_end_obj(j);
}

static void remote_measure(struct remote *r) {
    struct runctx *ctx = r->pp.run;
    struct pp_ctx *pp = &r->pp;
    uint64_t n = (uint64_t)ctx->n, warm = (uint64_t)ctx->warmup;
    int64_t *rt = ctx->cols[0].data, *ts = ctx->t_start;
    touch_pages(pp->buf[0], pp->size + 64);
    touch_stack();
    /* a server that stops answering (or a datagram lost) ends the run after --peer-timeout */
    int watch = supervisor_watch_peer(0, ctx->peer_timeout);
    uint64_t a, b, t0 = 0;
    for (uint64_t i = 0; i < warm; i++) {
        stop_if_asked();
        a = clk_start();
        inject_delay();
        if (pp->m->send(pp, 0) || pp->m->recv(pp, 0))
            die(EXIT_FAIL, "%s; nothing was written", pp->err[0]);
        b = clk_end();
        rt[0] = (int64_t)(b - a);
        progress_set(ctx, i + 1);
    }
    struct thread_usage u0;
    plat_thread_usage(&u0);
    for (uint64_t i = 0; i < n; i++) {
        stop_if_asked();
        a = clk_start();
        inject_delay();
        if (pp->m->send(pp, 0) || pp->m->recv(pp, 0))
            die(EXIT_FAIL, "%s; nothing was written", pp->err[0]);
        b = clk_end();
        if (i == 0) t0 = a;
        rt[i] = (int64_t)(b - a);
        ts[i] = (int64_t)(a - t0);
        progress_set(ctx, warm + i + 1);
    }
    timed_loop_end(ctx, t0, 1, "initiator", &u0);
    supervisor_unwatch_peer(watch, NULL);
}

static void remote_run(struct runctx *ctx, int udp) {
    struct remote *r = xcalloc(1, sizeof *r);
    r->udp = udp;
    r->mech.name = ctx->b->name;
    r->mech.send = udp ? sock_dgram_send : sock_stream_send;
    r->mech.recv = udp ? sock_dgram_recv : sock_stream_recv;
    r->pp.m = &r->mech;
    r->pp.run = ctx;
    for (int i = 0; i < 8; i++) r->pp.fd[i] = -1;
    r->cfd = -1;
    r->host = param(ctx, "host")->s;
    r->port = (int)param(ctx, "port")->i;
    r->cpu = (int)param(ctx, "cpu")->i;
    r->pp.size = (size_t)param(ctx, "size")->i;
    r->pp.buf[0] = xcalloc(1, r->pp.size + 64);
    memset(r->pp.buf[0], 'r', r->pp.size);
    add_column(ctx, "rtt", remote_columns[0].desc, "round_trip", -1);
    add_t_start(ctx);

    struct token tok;
    char err[768];
    int code = token_load(param(ctx, "token_file")->s, "token_file=", &tok, err, sizeof err);
    if (code) die(code, "%s: %s", r->mech.name, err);
    connect_server(r);
    handshake(r, &tok, r->pp.size);
    wipe(&tok, sizeof tok);
    if (r->cpu >= 0) {
        int e = plat_pin_thread(r->cpu);
        if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", r->cpu, strerror(e));
    }
    remote_measure(r);
    /* the end of the session: the server sees the control connection close */
    if (r->udp) close(r->pp.fd[0]);
    close(r->cfd);
    remote_meta(r);
    free(r->info);
    free(r->pp.buf[0]);
    free(r);
}

static void run_tcp_remote(struct runctx *ctx) { remote_run(ctx, 0); }
static void run_udp_remote(struct runctx *ctx) { remote_run(ctx, 1); }

static const struct scenario tcp_remote_scenarios[] = {
    {"tcp_remote", NULL, 0, 0, 0,
     "needs latscope-probe serve on the far host: -p host= -p port= and the token "
     "(token_file= or $" SERVE_TOKEN_ENV ")"},
};
static const struct scenario udp_remote_scenarios[] = {
    {"udp_remote", NULL, 0, 0, 0,
     "needs latscope-probe serve on the far host: -p host= -p port= and the token "
     "(token_file= or $" SERVE_TOKEN_ENV ")"},
};

#define REMOTE_DISPLAY                                                                        \
    {.roles = {"initiator", NULL},                                                            \
     .lines = {"this side {bench.client_address} ({bench.pinning}) to {bench.server.address}: " \
               "{bench.peer.env.hostname}, kernel {bench.peer.env.kernel.release}, "         \
               "latscope-probe {bench.peer.probe_version}, echo thread "                      \
               "{bench.peer.pinning}; {bench.message_bytes} B messages"},                     \
     .dim_lines = {"no one-way column: the two hosts share no clock; rtt/2 estimates the "    \
                   "one-way time where both ways cost the same"}}

#define REMOTE_BENCH(ident, summ, local)                                           \
    const struct bench bench_##ident = {                                                      \
        .name = #ident,                                                                       \
        .summary = summ,                                                                      \
        .params = ident##_params,                                                             \
        .nparams = COUNT(ident##_params),                                                     \
        .columns = remote_columns,                                                            \
        .ncolumns = COUNT(remote_columns),                                                    \
        .derived = pp_derived,                                                                \
        .nderived = 1,                                                                        \
        .needs = "latscope-probe serve on the far host, and the token it was given",          \
        .counterpart = local,                                                                 \
        .check = remote_check,                                                                \
        .run = run_##ident,                                                                   \
        .arm_refusal = #ident " cannot be an arm: its far side is a server on another host, "   \
                       "which serves one session at a time and whose host the other arms do "  \
                       "not share; run it alone (latscope-probe " #ident " ...) and compare "  \
                       "whole runs",                                                          \
        .default_n = 10000,                                                                   \
        .kind = "network",                                                                    \
        .scenarios = ident##_scenarios,                                                       \
        .nscenarios = COUNT(ident##_scenarios),                                               \
        .display = REMOTE_DISPLAY,                                                            \
    }

REMOTE_BENCH(tcp_remote, "TCP round trip to latscope-probe serve on another host", "tcp");
REMOTE_BENCH(udp_remote, "UDP round trip to latscope-probe serve on another host", "udp");
