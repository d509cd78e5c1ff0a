/* latscope-probe: TCP between two network namespaces.
 *
 * path=veth:   namespace A (the initiator) and namespace B (the responder) joined by one veth
 *              pair: A's end 10.200.0.1/30, B's end 10.200.0.2/30.
 * path=bridge: like Docker's default network: A and B each have a veth pair whose other end
 *              is a port of a Linux bridge in a third namespace H (standing in for the host's
 *              docker0); same addresses.
 *
 * Nothing is created in the probe's own network namespace: A, B and H are new, anonymous
 * namespaces (unshare(CLONE_NEWNET) in a short-lived helper thread, kept alive only by file
 * descriptors and by the sockets inside them), so no `ip netns` name exists, no link appears
 * outside them, and traffic cannot leave the machine: the namespaces have no route out.
 * The kernel removes them, with every link and the bridge in them, as soon as the probe's
 * descriptors and sockets are gone, which is on every path: normal end, error, Ctrl-C, a dead
 * peer, even SIGKILL of the probe.  The links are configured by running `ip` (iproute2) in
 * the namespace (fork, setns, exec), before the first iteration.  Link names carry the pid. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pingpong/socket.h"

enum { NS_A, NS_B, NS_H, NS_COUNT };

struct netns_state {
    int ns[NS_COUNT]; /* namespace descriptors, -1 when not open */
    int nns;          /* how many namespaces this path needs */
    int lfd, cfd;     /* listener (in B) and client (in A) made by the helper thread */
    int err;          /* errno of the helper thread's failure, 0 if none */
    const char *what; /* what failed there */
    char ip[256];     /* the ip executable */
};

static const char *const netns_paths[] = {"veth", "bridge", NULL};
static const struct pdef netns_params[] = {
    PP_PARAM_MODE("processes"),
    PP_PARAM_CPUS("none"),
    PP_PARAM_SIZE(1 << 20),
    {"path", P_ENUM, "veth", NULL,
     "veth: the two namespaces joined by one veth pair; bridge: each namespace joined by a "
     "veth pair to a Linux bridge in a third namespace, like Docker's default network",
     netns_paths, 0, 0, NULL},
};

static int find_ip(struct netns_state *nn) {
    const char *path = getenv("PATH");
    char buf[1024];
    snprintf(buf, sizeof buf, "%s:/usr/sbin:/sbin:/usr/bin:/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (!*d) continue;
        snprintf(nn->ip, sizeof nn->ip, "%s/ip", d);
        struct stat st;
        if (stat(nn->ip, &st) == 0 && S_ISREG(st.st_mode) && access(nn->ip, X_OK) == 0) return 0;
    }
    nn->ip[0] = 0;
    return -1;
}

/* The helper thread: new namespaces, and the two sockets created inside A and B.  Only this
 * thread ever changes its namespace during setup, and it ends here. */
static void *ns_thread(void *arg) {
    struct netns_state *nn = arg;
    for (int i = 0; i < nn->nns; i++) {
        if (unshare(CLONE_NEWNET) != 0) {
            nn->err = errno;
            nn->what = "unshare(CLONE_NEWNET)";
            return NULL;
        }
        nn->ns[i] = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (nn->ns[i] < 0) {
            nn->err = errno;
            nn->what = "open /proc/thread-self/ns/net";
            return NULL;
        }
    }
    if (setns(nn->ns[NS_B], CLONE_NEWNET) != 0) {
        nn->err = errno;
        nn->what = "setns";
        return NULL;
    }
    nn->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (setns(nn->ns[NS_A], CLONE_NEWNET) != 0) {
        nn->err = errno;
        nn->what = "setns";
        return NULL;
    }
    nn->cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (nn->lfd < 0 || nn->cfd < 0) {
        nn->err = errno;
        nn->what = "socket(AF_INET)";
    }
    return NULL;
}

/* Run `ip -batch -` inside namespace ns with these commands; 0, or -1 with ip's message. */
static int run_ip(struct netns_state *nn, int ns, const char *cmds, char *msg, size_t msglen) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
        snprintf(msg, msglen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(msg, msglen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        plat_die_with_parent(SIGKILL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (setns(ns, CLONE_NEWNET) != 0) {
            const char e[] = "setns failed\n";
            if (write(out[1], e, sizeof e - 1) < 0) _exit(126);
            _exit(126);
        }
        /* `netns /proc/self/fd/N` in the commands refers to these */
        for (int i = 0; i < nn->nns; i++) fcntl(nn->ns[i], F_SETFD, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(out[1], 2);
        execl(nn->ip, "ip", "-batch", "-", (char *)NULL);
        _exit(127);
    }
    int h = cleanup_kill(pid);
    close(in[0]);
    close(out[1]);
    int werr = write_full(in[1], cmds, strlen(cmds)) ? errno : 0;
    close(in[1]);
    size_t got = 0;
    for (;;) {
        ssize_t r = read(out[0], msg + got, msglen - 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
        if (got >= msglen - 1) break;
    }
    msg[got] = 0;
    close(out[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    cleanup_cancel(h);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !werr) return 0;
    /* ip's first line says what went wrong */
    msg[strcspn(msg, "\n")] = 0;
    if (!msg[0])
        snprintf(msg, msglen, "ip exited with %s %d", WIFEXITED(st) ? "status" : "signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return -1;
}

static void netns_ip(struct netns_state *nn, int ns, const char *cmds, const char *path) {
    char msg[512];
    if (run_ip(nn, ns, cmds, msg, sizeof msg) != 0)
        die(EXIT_UNSUPPORTED, "tcp_netns: setting up the %s path failed: %s", path, msg);
}

static void netns_setup(struct pp_ctx *pp) {
    struct netns_state *nn = pp->state;
    for (int i = 0; i < NS_COUNT; i++) nn->ns[i] = -1;
    nn->lfd = nn->cfd = -1;
    const char *path = param(pp->run, "path")->s;
    int bridge = !strcmp(path, "bridge");
    nn->nns = bridge ? 3 : 2;
    if (find_ip(nn) != 0)
        die(EXIT_UNSUPPORTED, "tcp_netns needs the ip command from iproute2 to set up the "
            "links; install iproute2");
    pthread_t t;
    if (pthread_create(&t, NULL, ns_thread, nn) != 0)
        die(EXIT_FAIL, "cannot start a thread");
    pthread_join(t, NULL);
    if (nn->err == EPERM || nn->err == EACCES)
        die(EXIT_UNSUPPORTED, "tcp_netns needs CAP_NET_ADMIN and CAP_SYS_ADMIN to create "
            "network namespaces (%s: %s): run it as root, or inside a user namespace where "
            "the kernel allows one (e.g. unshare --user --map-root-user latscope-probe ...)",
            nn->what, strerror(nn->err));
    if (nn->err)
        die(nn->err == EINVAL || nn->err == ENOSYS ? EXIT_UNSUPPORTED : EXIT_FAIL,
            "tcp_netns: %s: %s", nn->what, strerror(nn->err));

    int me = (int)getpid();
    char cmds[2048];
    if (!bridge) {
        snprintf(cmds, sizeof cmds,
                 "link set lo up\n"
                 "link add ls%da type veth peer name ls%db netns /proc/self/fd/%d\n"
                 "addr add 10.200.0.1/30 dev ls%da\n"
                 "link set ls%da up\n",
                 me, me, nn->ns[NS_B], me, me);
        netns_ip(nn, nn->ns[NS_A], cmds, path);
    } else {
        snprintf(cmds, sizeof cmds,
                 "link set lo up\n"
                 "link add ls%dbr type bridge\n"
                 "link set ls%dbr up\n"
                 "link add ls%dha type veth peer name ls%da netns /proc/self/fd/%d\n"
                 "link add ls%dhb type veth peer name ls%db netns /proc/self/fd/%d\n"
                 "link set ls%dha master ls%dbr\n"
                 "link set ls%dhb master ls%dbr\n"
                 "link set ls%dha up\n"
                 "link set ls%dhb up\n",
                 me, me, me, me, nn->ns[NS_A], me, me, nn->ns[NS_B], me, me, me, me, me, me);
        netns_ip(nn, nn->ns[NS_H], cmds, path);
        snprintf(cmds, sizeof cmds,
                 "link set lo up\n"
                 "addr add 10.200.0.1/30 dev ls%da\n"
                 "link set ls%da up\n",
                 me, me);
        netns_ip(nn, nn->ns[NS_A], cmds, path);
    }
    snprintf(cmds, sizeof cmds,
             "link set lo up\n"
             "addr add 10.200.0.2/30 dev ls%db\n"
             "link set ls%db up\n",
             me, me);
    netns_ip(nn, nn->ns[NS_B], cmds, path);

    char err[256];
    pp->fd[2] = nn->lfd;
    nn->lfd = -1;
    int cfd = nn->cfd;
    nn->cfd = -1;
    if (sock_tcp_connect_pair(pp, pp->fd[2], cfd, "10.200.0.2", err, sizeof err))
        die(EXIT_FAIL, "tcp_netns (%s): %s", path, err);
    pp_close(pp, 2);
}

/* Each side runs inside its own namespace (its socket already lives there). */
static void netns_side_init(struct pp_ctx *pp, int side) {
    struct netns_state *nn = pp->state;
    if (setns(nn->ns[side == 0 ? NS_A : NS_B], CLONE_NEWNET) != 0) {
        pp_err(pp, side, "setns into namespace %c: %s", side == 0 ? 'A' : 'B', strerror(errno));
        return;
    }
    sock_side_init(pp, side);
}

static void netns_teardown(struct pp_ctx *pp) {
    struct netns_state *nn = pp->state;
    sock_teardown(pp);
    if (nn->lfd >= 0) close(nn->lfd);
    if (nn->cfd >= 0) close(nn->cfd);
    nn->lfd = nn->cfd = -1;
    /* the last references: the kernel now removes the namespaces, their links and bridge */
    for (int i = 0; i < NS_COUNT; i++)
        if (nn->ns[i] >= 0) {
            close(nn->ns[i]);
            nn->ns[i] = -1;
        }
}

static const struct pp_mech mech_tcp_netns = {
    .name = "tcp_netns",
    .state_size = sizeof(struct netns_state),
    .threads_ok = 1,
    .processes_ok = 1,
    .blocking = 1,
    .has_size = 1,
    .max_size = 1 << 20,
    .setup = netns_setup,
    .side_init = netns_side_init,
    .send = sock_stream_send,
    .recv = sock_stream_recv,
    .teardown = netns_teardown,
    .timed = "rtt: send(size bytes) and recv(size bytes) on a TCP connection (TCP_NODELAY) "
             "from network namespace A (10.200.0.1) to namespace B (10.200.0.2) through a veth "
             "pair (path=veth) or through two veth pairs and a Linux bridge in a third "
             "namespace (path=bridge), with the responder's recv and send in B in between; "
             "namespaces, links and connection set up before the first iteration",
};

static const struct scenario netns_scenarios[] = {
    {"tcp_netns", NULL, 1000, 100, 1, "needs root (CAP_NET_ADMIN); skipped otherwise"},
};

PINGPONG_BENCH(tcp_netns, mech_tcp_netns,
               "TCP between two network namespaces over veth or a bridge (needs CAP_NET_ADMIN)",
               .params = netns_params, .nparams = COUNT(netns_params),
               .needs = "CAP_NET_ADMIN (root, or a user namespace) for its network namespaces",
               .scenarios = netns_scenarios, .nscenarios = COUNT(netns_scenarios));
