/* latscope-probe: which filesystem a path lives on (Linux: /proc/self/mountinfo). */
#ifndef LATSCOPE_FSINFO_H
#define LATSCOPE_FSINFO_H
#include <stddef.h>
struct fsinfo {
    char fstype[64];
    char source[512];
    char mountpoint[1024];
    char options[512];
    unsigned long long magic; /* statfs f_type */
};
/* 0 on success; fields are "" where unknown. */
int fsinfo_for(const char *path, struct fsinfo *out);
/* Decode mountinfo's octal escapes (\040 for a space) in place. For tests. */
void fsinfo_unescape(char *s);
/* Parse one mountinfo line into mount point, type, source, options; 0 on success. */
int fsinfo_parse_line(const char *line, char *mnt, size_t mntlen, char *type, size_t typelen,
                      char *src, size_t srclen, char *opts, size_t optslen);
#endif
