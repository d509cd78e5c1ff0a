/* latscope-probe: the cost of a (nearly) null system call, timed per call and in batches: the
 * Linux calls (the rest, shared with Windows: bench/nullcall.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/bench.h"

static const char *const op_choices[] = {"getppid", "read0", NULL};

struct nullcall_state {
    int fd;
    char buf[1];
};

static inline long do_op(int op, struct nullcall_state *st) {
    if (op == 0) return syscall(SYS_getppid);
    return read(st->fd, st->buf, 0);
}

static inline int op_ok(int op, long r) { return op == 0 ? r >= 0 : r == 0; }

__attribute__((noreturn)) static void op_failed(long r) {
    if (r < 0) die(EXIT_FAIL, "the timed system call failed: %s", strerror(errno));
    die(EXIT_FAIL, "the timed read() of 0 bytes returned %ld", r);
}

#include "bench/nullcall.h"

static const struct pdef syscall_params[] = {
    {"op", P_ENUM, "getppid", NULL,
     "getppid: the raw getppid system call (nothing cached by libc); read0: read() of 0 bytes "
     "from an open file",
     op_choices, 0, 0, NULL},
    NULLCALL_PARAMS,
};

/* The calls of op=, ready: read0's file is made, and unlinked at once (nothing to clean up,
 * whatever happens). */
static void nullcall_open(struct nullcall_run *r) {
    r->op = !strcmp(param(r->ctx, "op")->s, "read0");
    r->st.fd = -1;
    if (r->op == 1) {
        char tmpl[] = "/tmp/latscope-read0-XXXXXX";
        r->st.fd = mkstemp(tmpl);
        if (r->st.fd < 0)
            die(EXIT_UNSUPPORTED, "cannot create a file in /tmp: %s", strerror(errno));
        unlink(tmpl);
    }
    r->opname = r->op ? "read0" : "getppid";
    r->timed = r->op ? "read(fd, buf, 0) on an open, unlinked file in /tmp"
                     : "syscall(SYS_getppid)";
}

static void nullcall_close(struct nullcall_run *r) {
    if (r->st.fd >= 0) close(r->st.fd);
    r->st.fd = -1;
}

static const struct scenario syscall_scenarios[] = {
    {"syscall", "op=getppid", 20000, 0, 1, "a nearly null system call"},
    {"syscall-read0", "op=read0", 20000, 0, 1, "read() of 0 bytes from an open file"},
};

const struct bench bench_syscall = {
    .name = "syscall",
    .summary = "a nearly null system call (getppid, or read of 0 bytes), per call and batched",
    .params = syscall_params,
    .nparams = COUNT(syscall_params),
    NULLCALL_BENCH_FIELDS,
};
