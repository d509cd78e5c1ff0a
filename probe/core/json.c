/* latscope-probe: a tiny JSON writer. */
#include "core/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/probe.h"

void jb_init(struct jbuf *b) {
    b->cap = 1024;
    b->s = xcalloc(1, b->cap);
    b->len = 0;
    b->need_comma = 0;
}

void jb_free(struct jbuf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

static void jb_vraw(struct jbuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n >= b->cap - b->len) {
        while ((size_t)n >= b->cap - b->len) b->cap *= 2;
        char *ns = realloc(b->s, b->cap);
        if (!ns) die(EXIT_FAIL, "out of memory");
        b->s = ns;
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap2);
    }
    va_end(ap2);
    b->len += (size_t)n;
}

void jb_raw(struct jbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jb_vraw(b, fmt, ap);
    va_end(ap);
}

/* The length of the valid UTF-8 sequence at p (1..4), or 0 when it is not one (a stray
 * continuation byte, an overlong form, a surrogate, a code point above U+10FFFF, a cut-short
 * sequence). */
static int utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    int n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int k = 2; k < n; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return n;
}

/* A JSON string: valid UTF-8 whatever the bytes (a path or an argument may hold any): each
 * byte that does not start a valid UTF-8 sequence is written as U+FFFD. */
static void jb_escaped(struct jbuf *b, const char *s) {
    jb_raw(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': jb_raw(b, "\\\""); break;
        case '\\': jb_raw(b, "\\\\"); break;
        case '\n': jb_raw(b, "\\n"); break;
        case '\r': jb_raw(b, "\\r"); break;
        case '\t': jb_raw(b, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                jb_raw(b, "\\u%04x", *p);
            else if (*p < 0x80)
                jb_raw(b, "%c", *p);
            else {
                int n = utf8_len(p);
                if (n == 0)
                    jb_raw(b, "\\ufffd");
                else {
                    jb_raw(b, "%.*s", n, (const char *)p);
                    p += n - 1;
                }
            }
        }
    }
    jb_raw(b, "\"");
}

static void jb_key(struct jbuf *b, const char *key) {
    if (b->need_comma) jb_raw(b, ",");
    if (key) {
        jb_escaped(b, key);
        jb_raw(b, ":");
    }
    b->need_comma = 1;
}

void jb_obj(struct jbuf *b, const char *key) {
    jb_key(b, key);
    jb_raw(b, "{");
    b->need_comma = 0;
}
void jb_arr(struct jbuf *b, const char *key) {
    jb_key(b, key);
    jb_raw(b, "[");
    b->need_comma = 0;
}
void jb_end_obj(struct jbuf *b) {
    jb_raw(b, "}");
    b->need_comma = 1;
}
void jb_end_arr(struct jbuf *b) {
    jb_raw(b, "]");
    b->need_comma = 1;
}
void jb_str(struct jbuf *b, const char *key, const char *val) {
    jb_key(b, key);
    if (val)
        jb_escaped(b, val);
    else
        jb_raw(b, "null");
}
void jb_int(struct jbuf *b, const char *key, long long val) {
    jb_key(b, key);
    jb_raw(b, "%lld", val);
}
void jb_num(struct jbuf *b, const char *key, double val) {
    jb_key(b, key);
    if (isfinite(val))
        jb_raw(b, "%.17g", val);
    else
        jb_raw(b, "null");
}
void jb_bool(struct jbuf *b, const char *key, int val) {
    jb_key(b, key);
    jb_raw(b, val ? "true" : "false");
}
void jb_null(struct jbuf *b, const char *key) {
    jb_key(b, key);
    jb_raw(b, "null");
}
void jb_json(struct jbuf *b, const char *key, const char *json) {
    jb_key(b, key);
    jb_raw(b, "%s", json);
}
