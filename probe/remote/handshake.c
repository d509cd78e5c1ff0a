/* latscope-probe: the protocol's shared parts (handshake.h). */
#include "remote/handshake.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/probe.h"

/* ---------------------------------------------------------------- the token */

static int token_check(struct token *t, const char *where, char *err, size_t errlen) {
    if (t->len && t->b[t->len - 1] == '\n') t->len--;
    if (t->len && t->b[t->len - 1] == '\r') t->len--;
    for (size_t i = 0; i < t->len; i++)
        if (t->b[i] == 0 || t->b[i] == '\n' || t->b[i] == '\r') {
            snprintf(err, errlen, "%s: the token holds a NUL or a line break; give one line",
                     where);
            return EXIT_BADINPUT;
        }
    if (t->len < SERVE_TOKEN_MIN) {
        snprintf(err, errlen, "%s: the token has %zu bytes, fewer than %d; make a random one "
                 "(e.g. head -c 32 /dev/urandom | base64)", where, t->len, SERVE_TOKEN_MIN);
        return EXIT_BADINPUT;
    }
    return 0;
}

int token_load(const char *file, const char *what, struct token *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    char where[512];
    if (!file || !*file) {
        const char *v = getenv(SERVE_TOKEN_ENV);
        if (!v || !*v) {
            snprintf(err, errlen, "no token: give %s FILE (mode 600), or set %s", what,
                     SERVE_TOKEN_ENV);
            return EXIT_BADINPUT;
        }
        size_t len = strlen(v);
        if (len > SERVE_TOKEN_MAX) {
            snprintf(err, errlen, "%s: the token is longer than %d bytes", SERVE_TOKEN_ENV,
                     SERVE_TOKEN_MAX);
            return EXIT_BADINPUT;
        }
        memcpy(t->b, v, len);
        t->len = len;
        return token_check(t, SERVE_TOKEN_ENV, err, errlen);
    }
    snprintf(where, sizeof where, "%s %s", what, file);
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", where,
                 errno == ELOOP ? "a symbolic link; give the file itself" : strerror(errno));
        return EXIT_BADINPUT;
    }
    struct stat st;
    const char *why = NULL;
    char mode[96];
    if (fstat(fd, &st) != 0) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if (st.st_uid != geteuid() && st.st_uid != 0) why = "owned by another user";
    else if (st.st_mode & 077) {
        snprintf(mode, sizeof mode, "other users may read or write it (mode %04o); chmod 600 it",
                 (unsigned)(st.st_mode & 07777));
        why = mode;
    } else if (st.st_size > SERVE_TOKEN_MAX + 2) why = "larger than a token (4 KiB)";
    if (why) {
        close(fd);
        snprintf(err, errlen, "%s: %s", where, why);
        return EXIT_BADINPUT;
    }
    ssize_t r;
    do r = read(fd, t->b, sizeof t->b);
    while (r < 0 && errno == EINTR);
    int e = errno;
    /* one more byte would mean it grew past a token since fstat */
    unsigned char extra[3];
    ssize_t more = r >= 0 ? read(fd, extra, sizeof extra) : 0;
    close(fd);
    wipe(extra, sizeof extra);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", where, strerror(e));
        return EXIT_BADINPUT;
    }
    t->len = (size_t)r;
    if (more > 0 && t->len + (size_t)more > SERVE_TOKEN_MAX + 2) {
        wipe(t, sizeof *t);
        snprintf(err, errlen, "%s: larger than a token (4 KiB)", where);
        return EXIT_BADINPUT;
    }
    return token_check(t, where, err, errlen);
}

/* ---------------------------------------------------------------- proofs */

void serve_proof(const struct token *t, const char *role, const char *first, const char *second,
                 char out[SERVE_HEX + 1]) {
    char msg[256];
    unsigned char mac[SHA256_LEN];
    int n = snprintf(msg, sizeof msg, "latscope-serve %d %s %s %s", SERVE_PROTOCOL, role, first,
                     second);
    hmac_sha256(t->b, t->len, msg, (size_t)n, mac);
    hex_encode(mac, sizeof mac, out);
    wipe(mac, sizeof mac);
}

double serve_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int serve_nonce(char out[SERVE_HEX + 1]) {
    unsigned char n[SERVE_NONCE];
    if (plat_random(n, sizeof n) != 0) return -1;
    hex_encode(n, sizeof n, out);
    return 0;
}

/* ---------------------------------------------------------------- addresses */

int serve_parse_bind(const char *text, struct sockaddr_storage *sa, socklen_t *len, char *err,
                     size_t errlen) {
    char host[128];
    const char *colon, *hs = text;
    size_t hl;
    memset(sa, 0, sizeof *sa);
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':') goto bad;
        hs = text + 1;
        hl = (size_t)(close - hs);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (!colon || memchr(text, ':', (size_t)(colon - text))) goto bad;
        hl = (size_t)(colon - text);
    }
    if (hl == 0 || hl >= sizeof host) goto bad;
    memcpy(host, hs, hl);
    host[hl] = 0;
    long long port;
    const char *end;
    if (parse_digits(colon + 1, &port, &end) || *end || port > 65535) goto bad;
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    if (text[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return 0;
    }
    if (text[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return 0;
    }
bad:
    snprintf(err, errlen, "--bind %s: give a numeric address and a port, e.g. 10.0.0.2:7300 or "
             "[fd00::2]:7300 (port 0: any free one)", text);
    return -1;
}

void serve_addr_text(const struct sockaddr *sa, char *out, size_t len) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = serve_addr_port(sa);
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
        if (port) snprintf(out, len, "%s:%d", host, port);
        else snprintf(out, len, "%s", host);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
        if (port) snprintf(out, len, "[%s]:%d", host, port);
        else snprintf(out, len, "%s", host);
    } else {
        snprintf(out, len, "(address family %d)", sa->sa_family);
    }
}

int serve_addr_port(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    if (sa->sa_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return 0;
}

void serve_addr_set_port(struct sockaddr *sa, int port) {
    if (sa->sa_family == AF_INET) ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
    if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
}

int serve_same_addr(const struct sockaddr *a, const struct sockaddr *b, int with_port) {
    if (a->sa_family != b->sa_family) return 0;
    if (with_port && serve_addr_port(a) != serve_addr_port(b)) return 0;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
    return 0;
}

/* ---------------------------------------------------------------- the server's JSON */

struct jscan {
    const unsigned char *p, *end;
    int depth;
};

static void ws(struct jscan *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int lit(struct jscan *s, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n)) return 0;
    s->p += n;
    return 1;
}

/* One UTF-8 character (not a surrogate, not over U+10FFFF, shortest form). */
static int utf8(struct jscan *s) {
    unsigned c = *s->p;
    int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : -1;
    if (c < 0xc2 || c > 0xf4 || more < 0 || s->end - s->p <= more) return 0;
    unsigned cp = c & (0x3f >> more);
    for (int i = 1; i <= more; i++) {
        if ((s->p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s->p[i] & 0x3f);
    }
    if ((more == 2 && cp < 0x800) || (more == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    s->p += more + 1;
    return 1;
}

static int string(struct jscan *s) {
    if (s->p >= s->end || *s->p != '"') return 0;
    s->p++;
    while (s->p < s->end) {
        unsigned c = *s->p;
        if (c == '"') {
            s->p++;
            return 1;
        }
        if (c < 0x20) return 0;
        if (c == '\\') {
            if (s->end - s->p < 2) return 0;
            unsigned e = s->p[1];
            if (e == 'u') {
                if (s->end - s->p < 6) return 0;
                unsigned char u[2];
                char h[5] = {(char)s->p[2], (char)s->p[3], (char)s->p[4], (char)s->p[5], 0};
                if (hex_decode(h, u, 2)) return 0;
                unsigned cp = (unsigned)u[0] << 8 | u[1];
                if (cp >= 0xd800 && cp <= 0xdfff) return 0; /* no surrogates: the lab's rule */
                s->p += 6;
            } else if (strchr("\"\\/bfnrt", (int)e) && e) {
                s->p += 2;
            } else {
                return 0;
            }
        } else if (c < 0x80) {
            s->p++;
        } else if (!utf8(s)) {
            return 0;
        }
    }
    return 0;
}

static int number(struct jscan *s) {
    const unsigned char *start = s->p;
    if (s->p < s->end && *s->p == '-') s->p++;
    if (s->p >= s->end) return 0;
    if (*s->p == '0') s->p++;
    else if (*s->p >= '1' && *s->p <= '9')
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    else return 0;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') return 0;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9') return 0;
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    }
    return s->p - start <= 40;
}

static int value(struct jscan *s) {
    ws(s);
    if (s->p >= s->end) return 0;
    unsigned c = *s->p;
    if (c == '{' || c == '[') {
        if (++s->depth > 16) return 0;
        unsigned close = c == '{' ? '}' : ']';
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
            s->depth--;
            return 1;
        }
        for (;;) {
            if (c == '{') {
                ws(s);
                if (!string(s)) return 0;
                ws(s);
                if (s->p >= s->end || *s->p != ':') return 0;
                s->p++;
            }
            if (!value(s)) return 0;
            ws(s);
            if (s->p >= s->end) return 0;
            if (*s->p == ',') {
                s->p++;
                continue;
            }
            if (*s->p != close) return 0;
            s->p++;
            s->depth--;
            return 1;
        }
    }
    if (c == '"') return string(s);
    if (c == 't') return lit(s, "true");
    if (c == 'f') return lit(s, "false");
    if (c == 'n') return lit(s, "null");
    return number(s);
}

int serve_json_object(const char *text, size_t len) {
    struct jscan s = {(const unsigned char *)text, (const unsigned char *)text + len, 0};
    ws(&s);
    if (s.p >= s.end || *s.p != '{' || !value(&s)) return 0;
    ws(&s);
    return s.p == s.end;
}
