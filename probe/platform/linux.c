/* latscope-probe: filesystem of a path, from /proc/self/mountinfo and statfs(2). */
#include "platform/platform.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

void fsinfo_unescape(char *s) {
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
}

static void copy(char *dst, size_t len, const char *src) {
    snprintf(dst, len, "%s", src ? src : "");
}

int fsinfo_parse_line(const char *line, char *mnt, size_t mntlen, char *type, size_t typelen,
                      char *src, size_t srclen, char *opts, size_t optslen) {
    /* id parent major:minor root mountpoint options [optional...] - type source superopts */
    char *dup = strdup(line);
    if (!dup) return -1;
    dup[strcspn(dup, "\n")] = 0;
    char *save = NULL, *tok[8] = {0};
    int n = 0;
    char *t = strtok_r(dup, " ", &save);
    while (t && n < 6) {
        tok[n++] = t;
        t = strtok_r(NULL, " ", &save);
    }
    while (t && strcmp(t, "-") != 0) t = strtok_r(NULL, " ", &save);
    if (n < 6 || !t) {
        free(dup);
        return -1;
    }
    char *ftype = strtok_r(NULL, " ", &save);
    char *fsrc = strtok_r(NULL, " ", &save);
    char *super = strtok_r(NULL, " ", &save);
    if (!ftype) {
        free(dup);
        return -1;
    }
    copy(mnt, mntlen, tok[4]);
    fsinfo_unescape(mnt);
    copy(type, typelen, ftype);
    copy(src, srclen, fsrc);
    fsinfo_unescape(src);
    char o[1024];
    snprintf(o, sizeof o, "%s%s%s", tok[5], super ? "," : "", super ? super : "");
    copy(opts, optslen, o);
    free(dup);
    return 0;
}

static int is_prefix(const char *mnt, const char *path) {
    size_t l = strlen(mnt);
    if (!strcmp(mnt, "/")) return 1;
    return strncmp(mnt, path, l) == 0 && (path[l] == '/' || path[l] == 0);
}

int fsinfo_for(const char *path, struct fsinfo *out) {
    memset(out, 0, sizeof *out);
    char real[PATH_MAX];
    if (!realpath(path, real)) return -1;
    struct statfs sf;
    if (statfs(real, &sf) == 0) out->magic = (unsigned long long)sf.f_type;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f) return -1;
    char line[4096];
    size_t best = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        char mnt[1024], type[64], src[512], opts[512];
        if (fsinfo_parse_line(line, mnt, sizeof mnt, type, sizeof type, src, sizeof src, opts,
                              sizeof opts))
            continue;
        /* the last of equally long matches wins: it is mounted over the earlier ones */
        if (is_prefix(mnt, real) && strlen(mnt) >= best) {
            best = strlen(mnt);
            copy(out->mountpoint, sizeof out->mountpoint, mnt);
            copy(out->fstype, sizeof out->fstype, type);
            copy(out->source, sizeof out->source, src);
            copy(out->options, sizeof out->options, opts);
            found = 1;
        }
    }
    fclose(f);
    return found ? 0 : -1;
}
