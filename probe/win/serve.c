/* latscope-probe serve on Windows: not ported (remote/serve.c is POSIX sockets and poll);
 * the far side of tcp_remote and udp_remote runs on a Linux host (docs/windows.md). */
#include "core/bench.h"
#include "core/probe.h"

static int serve_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    die(EXIT_UNSUPPORTED, "serve is not available in the Windows probe: run latscope-probe "
        "serve on a Linux host (docs/probe-cli.md)");
}

const struct subcommand subcommand_serve = {
    .name = "serve",
    .usage = "serve  (not in the Windows probe: run it on a Linux host)",
    .main = serve_main,
};
