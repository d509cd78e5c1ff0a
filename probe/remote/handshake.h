/* latscope-probe: what `latscope-probe serve` (remote/serve.c) and its clients (tcp_remote,
 * udp_remote: pingpong/remote.c) share: the protocol's messages and limits, the token, the
 * proofs of it, addresses, and the check of the server's JSON.
 *
 * The protocol (version 1), on one TCP connection, lines of text up to SERVE_LINE_MAX bytes:
 *
 *   client  LATSCOPE-SERVE 1 HELLO <client nonce>
 *   server  LATSCOPE-SERVE 1 CHALLENGE <server nonce>
 *   client  PROOF <HMAC-SHA-256(token, "latscope-serve 1 client <server nonce> <client nonce>")>
 *   server  WELCOME <HMAC-SHA-256(token, "latscope-serve 1 server <client nonce> <server nonce>")>
 *                   <session id> <bytes>            then that many bytes of JSON: the server
 *   client  START tcp <size>  |  START udp <size> <the client's UDP port>
 *   server  READY  |  BUSY  |  REFUSED <why>
 *
 * Nonces are 32 random bytes and proofs 32 bytes, as 64 hex digits.  The server answers a
 * wrong, late or malformed step by closing the connection, saying nothing; it proves that it
 * holds the token only after the client has (so that nobody learns from it what to guess the
 * token against).  After READY: tcp, the client's messages of size bytes on this connection
 * are echoed; udp, datagrams of size bytes from the client's address and announced port to
 * the server's port are echoed, and this connection only marks the session: it ends when the
 * client closes it. */
#ifndef LATSCOPE_HANDSHAKE_H
#define LATSCOPE_HANDSHAKE_H

#include <stddef.h>
#include <sys/socket.h>

#include "core/hmac.h"

#define SERVE_PROTOCOL 1
#define SERVE_NONCE 32
#define SERVE_HEX (2 * SERVE_NONCE) /* a nonce's or a proof's hex digits */
#define SERVE_LINE_MAX 512
#define SERVE_INFO_MAX 65536        /* the server's JSON */
#define SERVE_TOKEN_MIN 16
#define SERVE_TOKEN_MAX 4096
#define SERVE_TOKEN_ENV "LATSCOPE_TOKEN"
#define SERVE_MAX_TCP_MESSAGE (1 << 20)
#define SERVE_MAX_DATAGRAM 65507
#define SERVE_HANDSHAKE_S 3.0       /* a connection has this long to prove itself */

struct token {
    unsigned char b[SERVE_TOKEN_MAX];
    size_t len;
};

/* The token from file (not NULL) or else the environment variable SERVE_TOKEN_ENV.  The file
 * is opened without following a link, must be a regular file of the user's (or root's) that
 * nobody else may read or write (mode 600, as ssh asks of a key), of at most SERVE_TOKEN_MAX
 * bytes; one trailing newline is dropped; at least SERVE_TOKEN_MIN bytes, no NUL or line
 * break.  `what` names the setting in messages ("--token-file", "token_file=").  0, or
 * EXIT_BADINPUT with one line in err. */
int token_load(const char *file, const char *what, struct token *t, char *err, size_t errlen);

/* HMAC-SHA-256(token, "latscope-serve 1 <role> <first> <second>") as hex (SERVE_HEX + 1). */
void serve_proof(const struct token *t, const char *role, const char *first, const char *second,
                 char out[SERVE_HEX + 1]);
/* CLOCK_MONOTONIC in seconds: the handshake's deadlines (never in a timed region). */
double serve_now(void);
/* SERVE_NONCE fresh random bytes as hex; 0, or -1 with errno. */
int serve_nonce(char out[SERVE_HEX + 1]);

/* "ADDR:PORT" (IPv4 "10.0.0.1:7300", IPv6 "[::1]:7300"), numeric only, port 0..65535: 0, or -1
 * with one line in err. */
int serve_parse_bind(const char *text, struct sockaddr_storage *sa, socklen_t *len, char *err,
                     size_t errlen);
/* An address as text: "10.0.0.1:7300", "[::1]:7300" (port 0: without it). */
void serve_addr_text(const struct sockaddr *sa, char *out, size_t len);
int serve_addr_port(const struct sockaddr *sa);
void serve_addr_set_port(struct sockaddr *sa, int port);
/* 1 if a and b are the same host address (and, with_port, the same port). */
int serve_same_addr(const struct sockaddr *a, const struct sockaddr *b, int with_port);

/* 1 if the len bytes at s are one JSON object (UTF-8, no control characters in strings,
 * nested at most 16 deep) and nothing after it but white space; else 0. */
int serve_json_object(const char *s, size_t len);

#endif
