/* latscope-probe: the one ping-pong driver shared by every communication mechanism.
 *
 * Side 0 (the initiator) reads the clock, stamps the shared clock value, sends, waits for
 * the answer and reads the clock again: that is the round trip.  Side 1 (the responder)
 * receives, reads the clock and subtracts the stamp: that is the one-way time from the
 * shared clock.  Placement, warm-up, timing, peer watching and clean-up live here; a
 * mechanism only says how to set up, send, receive and tear down. */
#ifndef LATSCOPE_PINGPONG_H
#define LATSCOPE_PINGPONG_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

#define PP_SCRATCH 4096

struct pp_shared {
    volatile uint64_t stamp;   /* initiator's clock at the start of the round trip */
    volatile uint64_t done;    /* iterations completed by the responder */
    volatile int peer_failed;
    char errmsg[256];
    _Alignas(64) unsigned char scratch[PP_SCRATCH]; /* mechanism's shared objects */
    _Alignas(64) int64_t oneway[];
};

struct pp_ctx;
struct pp_mech {
    const char *name;
    int threads_ok, processes_ok;
    int blocking;   /* the receiver sleeps until woken (1) or spins (0) */
    int has_size;   /* a message size applies */
    size_t max_size;
    /* In the initiator before the peer exists: create objects, register clean-up. */
    void (*setup)(struct pp_ctx *pp);
    /* In each side once the peer exists (side 0: initiator, 1: responder). */
    void (*side_init)(struct pp_ctx *pp, int side);
    /* One message from this side to the other; 0 on success, else fills pp->err. */
    int (*send)(struct pp_ctx *pp, int side);
    int (*recv)(struct pp_ctx *pp, int side);
    /* In the initiator after the peer has finished (also from clean-up). */
    void (*teardown)(struct pp_ctx *pp);
    const char *timed; /* what lies inside the timed region, for the metadata */
};

struct pp_ctx {
    const struct pp_mech *m;
    struct runctx *run;
    int processes;
    int cpu[2];
    size_t size;
    unsigned char *buf[2];
    struct pp_shared *sh;
    int fd[8];
    void *state;
    char name[128]; /* unique name for named objects (FIFO, queues, sockets) */
    char err[2][200];
};

/* Record a failing call in side's error buffer; returns -1 for "return pp_err(...)". */
__attribute__((format(printf, 3, 4))) int pp_err(struct pp_ctx *pp, int side, const char *fmt,
                                                 ...);
/* Read/write exactly len bytes (blocking fds); 0 or -1 with errno (EPIPE for EOF). */
int pp_read_full(int fd, void *buf, size_t len);
int pp_write_full(int fd, const void *buf, size_t len);

void pingpong_run(struct runctx *ctx, const struct pp_mech *m);

/* The parameters every ping-pong benchmark takes. */
#define PP_NPARAMS 3
#define PP_NCOLUMNS 2
extern const struct pdef pp_params[];
extern const int pp_nparams;
extern const struct coldef pp_columns[];
extern const int pp_ncolumns;

#define PINGPONG_BENCH(ident, mechvar, summ)                                                  \
    static void run_##ident(struct runctx *ctx) { pingpong_run(ctx, &mechvar); }             \
    const struct bench bench_##ident = {                                                     \
        .name = #ident, .summary = summ, .params = pp_params, .nparams = PP_NPARAMS,                  \
        .columns = pp_columns, .ncolumns = PP_NCOLUMNS, .needs = NULL, .available = NULL,              \
        .run = run_##ident, .default_n = 100000, .kind = "ipc", .mech = &mechvar}

#endif
