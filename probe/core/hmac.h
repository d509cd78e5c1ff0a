/* latscope-probe: SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the handshake of
 * `latscope-probe serve` and its clients: a keyed proof of a shared token, so that the token
 * itself never crosses the wire.  Small and dependency-free; test vectors from FIPS 180-2 and
 * RFC 4231 in probe/tests/test_hmac.c. */
#ifndef LATSCOPE_HMAC_H
#define LATSCOPE_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_BLOCK 64

struct sha256 {
    uint32_t h[8];
    uint64_t bytes;              /* message length so far */
    unsigned char buf[SHA256_BLOCK];
    size_t used;                 /* bytes in buf */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);
void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);

/* HMAC-SHA-256 of msg under key (any length: a key longer than a block is hashed first). */
void hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                 unsigned char out[SHA256_LEN]);

/* 1 if the len bytes at a and b are equal, in a time that does not depend on where they
 * differ; else 0. */
int equal_ct(const void *a, const void *b, size_t len);

/* len bytes as 2*len lower-case hex digits and a NUL into out; parse exactly 2*len hex digits
 * (either case) from hex into out: 0, or -1 (not such digits; out is then unspecified). */
void hex_encode(const unsigned char *in, size_t len, char *out);
int hex_decode(const char *hex, unsigned char *out, size_t len);

/* Overwrite len bytes in a way the compiler keeps (a secret that is no longer needed). */
void wipe(void *p, size_t len);

#endif
