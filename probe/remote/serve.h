/* latscope-probe serve (remote/serve.c): the far side of tcp_remote and udp_remote. */
#ifndef LATSCOPE_SERVE_H
#define LATSCOPE_SERVE_H

/* `latscope-probe serve ...`: argv[1] is "serve"; returns the exit code. */
int serve_main(int argc, char **argv);

#endif
