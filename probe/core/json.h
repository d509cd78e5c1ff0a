/* latscope-probe: a growable buffer that builds JSON (the catalogue, the sample-file header). */
#ifndef LATSCOPE_JSON_H
#define LATSCOPE_JSON_H

#include <stddef.h>

struct jbuf {
    char *s;
    size_t len, cap;
    int need_comma;
};
void jb_init(struct jbuf *b);
void jb_free(struct jbuf *b);
__attribute__((format(printf, 2, 3))) void jb_raw(struct jbuf *b, const char *fmt, ...);
void jb_obj(struct jbuf *b, const char *key);    /* "key": {   (key NULL: bare) */
void jb_arr(struct jbuf *b, const char *key);    /* "key": [   */
void jb_end_obj(struct jbuf *b);
void jb_end_arr(struct jbuf *b);
void jb_str(struct jbuf *b, const char *key, const char *val); /* NULL val -> null */
void jb_int(struct jbuf *b, const char *key, long long val);
void jb_num(struct jbuf *b, const char *key, double val); /* non-finite -> null */
void jb_bool(struct jbuf *b, const char *key, int val);
void jb_null(struct jbuf *b, const char *key);
void jb_json(struct jbuf *b, const char *key, const char *json); /* pre-built JSON value */

#endif
