/* latscope-probe: the socket helpers that the socket mechanisms share (ipc_socket.c).
 * Layout: pp->fd[0] is the initiator's connected socket, pp->fd[1] the responder's. */
#ifndef LATSCOPE_IPC_SOCKET_H
#define LATSCOPE_IPC_SOCKET_H

#include "pingpong/pingpong.h"

/* Processes: each side closes the other's socket (a dead peer then means EOF). */
void sock_side_init(struct pp_ctx *pp, int side);
/* Byte streams: send/recv until size bytes have gone through. */
int sock_stream_send(struct pp_ctx *pp, int side);
int sock_stream_recv(struct pp_ctx *pp, int side);
/* Datagrams: one send and one recv of exactly size bytes. */
int sock_dgram_send(struct pp_ctx *pp, int side);
int sock_dgram_recv(struct pp_ctx *pp, int side);
void sock_teardown(struct pp_ctx *pp);
/* A connected TCP pair over IPv4: listener on addr:0 (an ephemeral port) in the current
 * network namespace of the thread that created lfd; the client socket cfd connects; the
 * accepted one goes to fd[1], the client to fd[0]; TCP_NODELAY on both.  Returns 0 or -1
 * with a message in err. */
int sock_tcp_connect_pair(struct pp_ctx *pp, int lfd, int cfd, const char *addr, char *err,
                          size_t errlen);

#endif
