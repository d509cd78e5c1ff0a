/* latscope-probe: ZeroMQ ping-pong: zmq_inproc (threads of one process, one context),
 * zmq_ipc (a Unix-domain socket file in a private directory) and zmq_tcp (loopback, an
 * ephemeral port), with pattern=pair (ZMQ_PAIR both ends), pattern=reqrep (ZMQ_REQ in the
 * initiator, ZMQ_REP in the responder) or pattern=pubsub (a ZMQ_PUB -> ZMQ_SUB channel each
 * way, as report 002 used: the responder binds both of its sockets, the initiator connects;
 * the subscriptions are known to have arrived once a hello went each way, see side_init).
 * Compiled only with libzmq (HAVE_ZMQ); without it the
 * benchmarks stay in the catalogue as unavailable and exit 3 when asked for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pingpong/pingpong.h"

#ifdef HAVE_ZMQ
#include <zmq.h>
#endif

static const char *const zmq_patterns[] = {"pair", "reqrep", "pubsub", NULL};
#define ZMQ_PATTERN_PARAM                                                                     \
    {"pattern", P_ENUM, "pair", NULL,                                                         \
     "ZeroMQ socket pattern: pair (ZMQ_PAIR at both ends), reqrep (ZMQ_REQ in the "           \
     "initiator, ZMQ_REP in the responder) or pubsub (ZMQ_PUB to ZMQ_SUB each way)",          \
     zmq_patterns, 0, 0, NULL}

static const struct pdef zmq_thread_params[] = {
    PP_PARAM_MODE("threads"),
    PP_PARAM_CPUS("none"),
    PP_PARAM_SIZE(1 << 20),
    ZMQ_PATTERN_PARAM,
};
static const struct pdef zmq_params[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
    PP_PARAM_SIZE(1 << 20),
    ZMQ_PATTERN_PARAM,
};

/* How to get a probe with ZeroMQ: a build names it (meson.build: a cross file's zmq_missing,
 * for an ARM probe its twin with ZeroMQ); a native build is rebuilt with libzmq. */
#ifndef LATSCOPE_ZMQ_MISSING
#define LATSCOPE_ZMQ_MISSING \
    "install libzmq's development files, e.g. libzmq3-dev, and rebuild"
#endif

static int zmq_available(const char **why) {
#ifdef HAVE_ZMQ
    (void)why;
    return 1;
#else
    *why = "not built with ZeroMQ (" LATSCOPE_ZMQ_MISSING ")";
    return 0;
#endif
}

#ifdef HAVE_ZMQ

enum ztransport { Z_INPROC, Z_IPC, Z_TCP };

/* The responder publishes its bound endpoint (zmq_tcp: the port it got) here. */
struct zmq_shared {
    volatile int ready;
    char endpoint[400];
    char endpoint2[400]; /* pubsub: the responder's SUB socket (the initiator's PUB connects) */
};

struct zmq_state {
    enum ztransport tr;
    int reqrep, pubsub;
    void *ctx[2]; /* zmq_inproc: one context, ctx[0] == ctx[1]; else one per side */
    void *sock[2];  /* each side's socket; pubsub: the one it sends on (ZMQ_PUB) */
    void *sub[2];   /* pubsub: the one it receives on (ZMQ_SUB) */
    char dir[300], path[360], path2[360];
    int path_h, path2_h;
};

static struct zmq_shared *zsh(struct pp_ctx *pp) {
    return (struct zmq_shared *)(void *)pp->sh->scratch;
}

static void zmq_setup_common(struct pp_ctx *pp, enum ztransport tr) {
    struct zmq_state *z = pp->state;
    z->tr = tr;
    z->reqrep = !strcmp(param(pp->run, "pattern")->s, "reqrep");
    z->pubsub = !strcmp(param(pp->run, "pattern")->s, "pubsub");
    struct zmq_shared *s = zsh(pp);
    if (tr == Z_INPROC) {
        z->ctx[0] = z->ctx[1] = zmq_ctx_new();
        if (!z->ctx[0]) die(EXIT_FAIL, "zmq_ctx_new: %s", zmq_strerror(errno));
        snprintf(s->endpoint, sizeof s->endpoint, "inproc://%s", pp->name);
        snprintf(s->endpoint2, sizeof s->endpoint2, "inproc://%s-back", pp->name);
    } else if (tr == Z_IPC) {
        pp_private_dir(pp, z->dir, sizeof z->dir);
        snprintf(z->path, sizeof z->path, "%s/zmq", z->dir);
        if (strlen(z->path) > 100)
            die(EXIT_BADINPUT, "the temporary directory %s is too long for a socket path; set "
                "TMPDIR to a shorter one", z->dir);
        z->path_h = cleanup_unlink(z->path); /* the responder's bind creates it */
        snprintf(s->endpoint, sizeof s->endpoint, "ipc://%s", z->path);
        snprintf(z->path2, sizeof z->path2, "%s/zmq-back", z->dir);
        z->path2_h = cleanup_unlink(z->path2);
        snprintf(s->endpoint2, sizeof s->endpoint2, "ipc://%s", z->path2);
    }
}

/* pubsub: a SUB socket for `side`, subscribed to every message */
static void *zmq_sub_socket(struct pp_ctx *pp, int side) {
    struct zmq_state *z = pp->state;
    void *sk = zmq_socket(z->ctx[side], ZMQ_SUB);
    if (!sk || zmq_setsockopt(sk, ZMQ_SUBSCRIBE, "", 0) != 0) {
        pp_err(pp, side, "zmq_socket(ZMQ_SUB): %s", zmq_strerror(errno));
        return NULL;
    }
    int linger = 0;
    zmq_setsockopt(sk, ZMQ_LINGER, &linger, sizeof linger);
    return z->sub[side] = sk;
}

/* pubsub's handshake. A subscription reaches a publisher some time after the connection is
 * made, and a message published before it is dropped: so the initiator says hello (an empty
 * message) every 5 ms until the responder's answer comes back, which shows that both
 * channels carry messages; then it sends "G" and reads, past the answers to hellos still on
 * their way, until the responder's own "G". Nothing of the handshake is left in a queue when
 * the first timed message goes. */
static int zmq_pubsub_handshake(struct pp_ctx *pp, int side) {
    struct zmq_state *z = pp->state;
    void *out = z->sock[side], *in = z->sub[side];
    char m[8];
    if (side == 1) {
        for (;;) {
            int r = zmq_recv(in, m, sizeof m, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
            int go = r == 1 && m[0] == 'G';
            if (zmq_send(out, go ? "G" : "", go ? 1 : 0, 0) < 0)
                return pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
            if (go) return 0;
        }
    }
    for (int tries = 0;; tries++) {
        if (pp->sh->peer_failed) return pp_err(pp, side, "the responder failed in the handshake");
        if (tries > 2000) return pp_err(pp, side, "ZeroMQ handshake: no answer in 10 s");
        if (zmq_send(out, "", 0, 0) < 0)
            return pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
        zmq_pollitem_t it = {.socket = in, .events = ZMQ_POLLIN};
        if (zmq_poll(&it, 1, 5) > 0) break;
    }
    if (zmq_send(out, "G", 1, 0) < 0)
        return pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
    for (;;) {
        int r = zmq_recv(in, m, sizeof m, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
        if (r == 1 && m[0] == 'G') return 0;
    }
}

static void zmq_inproc_setup(struct pp_ctx *pp) { zmq_setup_common(pp, Z_INPROC); }
static void zmq_ipc_setup(struct pp_ctx *pp) { zmq_setup_common(pp, Z_IPC); }
static void zmq_tcp_setup(struct pp_ctx *pp) { zmq_setup_common(pp, Z_TCP); }

static void zmq_side_init(struct pp_ctx *pp, int side) {
    struct zmq_state *z = pp->state;
    struct zmq_shared *s = zsh(pp);
    if (!z->ctx[side]) {
        /* one context per side, created in that side's thread after any fork, so its I/O
         * thread starts there and inherits that side's CPU */
        z->ctx[side] = zmq_ctx_new();
        if (!z->ctx[side]) {
            pp_err(pp, side, "zmq_ctx_new: %s", zmq_strerror(errno));
            return;
        }
    }
    int type = z->pubsub ? ZMQ_PUB : !z->reqrep ? ZMQ_PAIR : side == 0 ? ZMQ_REQ : ZMQ_REP;
    void *sk = zmq_socket(z->ctx[side], type);
    if (!sk) {
        pp_err(pp, side, "zmq_socket: %s", zmq_strerror(errno));
        return;
    }
    z->sock[side] = sk;
    /* the responder waits (at most 2 s) for its last answer to leave at the end */
    int linger = side == 1 ? 2000 : 0;
    zmq_setsockopt(sk, ZMQ_LINGER, &linger, sizeof linger);
    if (z->pubsub && !zmq_sub_socket(pp, side)) return;
    if (side == 1) {
        /* pubsub: the responder's SUB is bound too, at endpoint2 */
        for (int k = 0; k < 1 + z->pubsub; k++) {
            void *b = k ? z->sub[1] : sk;
            char *ep_out = k ? s->endpoint2 : s->endpoint;
            size_t cap = k ? sizeof s->endpoint2 : sizeof s->endpoint;
            const char *ep = z->tr == Z_TCP ? "tcp://127.0.0.1:*" : ep_out;
            if (zmq_bind(b, ep) != 0) {
                pp_err(pp, side, "zmq_bind %s: %s", ep, zmq_strerror(errno));
                return;
            }
            if (z->tr == Z_TCP && zmq_getsockopt(b, ZMQ_LAST_ENDPOINT, ep_out, &cap) != 0) {
                pp_err(pp, side, "zmq_getsockopt ZMQ_LAST_ENDPOINT: %s", zmq_strerror(errno));
                return;
            }
        }
        __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
        if (z->pubsub) {
            zmq_pubsub_handshake(pp, side);
            return;
        }
        /* the handshake (see below) */
        if (zmq_recv(sk, pp->buf[1], pp->size + 64, 0) < 0 || zmq_send(sk, "", 0, 0) < 0)
            pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
        return;
    }
    /* the initiator connects once the responder is bound (the supervisor ends the wait if
     * the responder fails or dies) */
    while (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE)) {
        if (pp->sh->peer_failed) {
            pp_err(pp, side, "the responder failed before binding");
            return;
        }
        usleep(200);
    }
    /* pubsub: the initiator's SUB connects to the responder's PUB, its PUB to its SUB */
    if (zmq_connect(z->pubsub ? z->sub[0] : sk, s->endpoint) != 0 ||
        (z->pubsub && zmq_connect(sk, s->endpoint2) != 0)) {
        pp_err(pp, side, "zmq_connect %s: %s", s->endpoint, zmq_strerror(errno));
        return;
    }
    /* One untimed exchange: the connection exists once it is done, so the ipc socket file
     * and its directory can go now rather than at the end. */
    if (z->pubsub) {
        if (zmq_pubsub_handshake(pp, side)) return;
    } else if (zmq_send(sk, "", 0, 0) < 0 || zmq_recv(sk, pp->buf[0], pp->size + 64, 0) < 0) {
        pp_err(pp, side, "ZeroMQ handshake: %s", zmq_strerror(errno));
        return;
    }
    if (z->tr == Z_IPC) {
        unlink(z->path);
        cleanup_cancel(z->path_h);
        if (z->pubsub) {
            unlink(z->path2);
            cleanup_cancel(z->path2_h);
        }
        rmdir(z->dir);
    }
}

static int zmq_pp_send(struct pp_ctx *pp, int side) {
    struct zmq_state *z = pp->state;
    while (zmq_send(z->sock[side], pp->buf[side], pp->size, 0) < 0)
        if (errno != EINTR) return pp_err(pp, side, "zmq_send: %s", zmq_strerror(errno));
    return 0;
}

static int zmq_pp_recv(struct pp_ctx *pp, int side) {
    struct zmq_state *z = pp->state;
    for (;;) {
        int r = zmq_recv(z->pubsub ? z->sub[side] : z->sock[side], pp->buf[side], pp->size + 64,
                         0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return pp_err(pp, side, "zmq_recv: %s", zmq_strerror(errno));
        if ((size_t)r != pp->size)
            return pp_err(pp, side, "zmq_recv: a message of %d bytes, expected %zu", r,
                          pp->size);
        return 0;
    }
}

/* The responder, after its last answer: close (lingering until the answer has left) and end
 * its context; between processes the child exits right after. */
static void zmq_responder_done(struct pp_ctx *pp) {
    struct zmq_state *z = pp->state;
    if (z->tr == Z_INPROC || !z->sock[1]) return; /* the initiator's teardown closes it */
    zmq_close(z->sock[1]);
    z->sock[1] = NULL;
    if (z->sub[1]) zmq_close(z->sub[1]);
    z->sub[1] = NULL;
    zmq_ctx_term(z->ctx[1]);
    z->ctx[1] = NULL;
}

static void zmq_teardown(struct pp_ctx *pp) {
    struct zmq_state *z = pp->state;
    /* zmq_ctx_term waits for every socket of the context to close: only on the normal path.
     * On every other path the process is about to end and the kernel closes everything;
     * the ipc socket file and its directory are on the clean-up list. */
    if (!pp->finished) return;
    for (int s = 0; s < 2; s++) {
        if (z->sock[s]) {
            int linger = 0;
            zmq_setsockopt(z->sock[s], ZMQ_LINGER, &linger, sizeof linger);
            zmq_close(z->sock[s]);
            z->sock[s] = NULL;
        }
        if (z->sub[s]) zmq_close(z->sub[s]);
        z->sub[s] = NULL;
    }
    if (z->ctx[0]) zmq_ctx_term(z->ctx[0]);
    if (z->ctx[1] && z->ctx[1] != z->ctx[0]) zmq_ctx_term(z->ctx[1]);
    z->ctx[0] = z->ctx[1] = NULL;
}

#define ZMQ_FUNCS(setupfn)                                                                     \
    .state_size = sizeof(struct zmq_state), .setup = setupfn, .side_init = zmq_side_init, .send = zmq_pp_send, .recv = zmq_pp_recv,   \
    .responder_done = zmq_responder_done, .teardown = zmq_teardown

#else /* no ZeroMQ: the catalogue entries remain; running one exits 3 (zmq_available) */

#define ZMQ_FUNCS(setupfn) .setup = NULL

#endif

/* ZeroMQ's message queues grow by chunks of 256 messages; the first chunks are allocated (and
 * their pages first touched) only after a few hundred messages have gone through.  This many
 * untimed round trips before the warm-up take those faults out of the timed loop. */
#define ZMQ_PRIME 1024

/* ipc:// and tcp:// messages pass through an I/O thread on each side */
#define ZMQ_IO_THREAD_SWITCHES                                                                \
    .switches_per_way = 3,                                                                    \
    .switches_note = "each way: the sender's ZeroMQ I/O thread is woken, then the receiver's " \
                     "I/O thread, then the receiving thread"

static const struct pp_mech mech_zmq_inproc = {
    .prime_round_trips = ZMQ_PRIME,
    .name = "zmq_inproc",
    .threads_ok = 1,
    .processes_ok = 0,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    ZMQ_FUNCS(zmq_inproc_setup),
    .timed = "rtt: zmq_send(size bytes) and zmq_recv on an inproc:// socket (pattern pair, "
             "req/rep or pub/sub, one context, connected and one untimed exchange done before "
             "the first "
             "iteration), with the responder's zmq_recv and zmq_send in between; no I/O thread "
             "on the path",
};
static const struct pp_mech mech_zmq_ipc = {
    .prime_round_trips = ZMQ_PRIME,
    .name = "zmq_ipc",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    ZMQ_IO_THREAD_SWITCHES,
    ZMQ_FUNCS(zmq_ipc_setup),
    .timed = "rtt: zmq_send(size bytes) and zmq_recv over an ipc:// endpoint (a Unix-domain "
             "socket in a private directory, removed once connected; pattern pair, req/rep or "
             "pub/sub; "
             "one context and I/O thread per side; connected, and one untimed exchange done, "
             "before the first iteration), with the responder's zmq_recv and zmq_send in "
             "between",
};
static const struct pp_mech mech_zmq_tcp = {
    .prime_round_trips = ZMQ_PRIME,
    .name = "zmq_tcp",
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    ZMQ_IO_THREAD_SWITCHES,
    ZMQ_FUNCS(zmq_tcp_setup),
    .timed = "rtt: zmq_send(size bytes) and zmq_recv over tcp://127.0.0.1 (an ephemeral port; "
             "pattern pair, req/rep or pub/sub; one context and I/O thread per side; connected "
             "and one "
             "untimed exchange done before the first iteration), with the responder's zmq_recv "
             "and zmq_send in between",
};

PINGPONG_BENCH(zmq_inproc, mech_zmq_inproc,
               "ZeroMQ inproc:// ping-pong between two threads (pair, req/rep or pub/sub)",
               .params = zmq_thread_params, .nparams = COUNT(zmq_thread_params),
               .needs = "libzmq", .available = zmq_available);
PINGPONG_BENCH(zmq_ipc, mech_zmq_ipc,
               "ZeroMQ ipc:// ping-pong (Unix-domain socket; pair, req/rep or pub/sub)",
               .params = zmq_params, .nparams = COUNT(zmq_params), .needs = "libzmq",
               .available = zmq_available);
PINGPONG_BENCH(zmq_tcp, mech_zmq_tcp,
               "ZeroMQ tcp:// ping-pong over loopback (pair, req/rep or pub/sub)",
               .params = zmq_params, .nparams = COUNT(zmq_params), .needs = "libzmq",
               .available = zmq_available);
