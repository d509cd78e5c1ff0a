/* latscope-probe: parameters: parsing (shared by every benchmark), conditions on them, and
 * their JSON form. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"

/* Numbers as the lab writes them (parse_digits): digits only, so "+5", " 1", "1 ", "0x10",
 * "010" and "" are refused, as the suite's checks refuse them. */
int parse_size(const char *s, long long *out) {
    long long v;
    const char *end;
    if (parse_digits(s, &v, &end)) return -1;
    long long mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "B")) mul = 1;
    else if (!strcmp(end, "k") || !strcmp(end, "K") || !strcmp(end, "KiB")) mul = 1024;
    else if (!strcmp(end, "M") || !strcmp(end, "MiB")) mul = 1024 * 1024;
    else if (!strcmp(end, "G") || !strcmp(end, "GiB")) mul = 1024LL * 1024 * 1024;
    else return -1;
    if (v > LLONG_MAX / mul) return -1;
    *out = v * mul;
    return 0;
}

static int parse_int(const char *s, long long *out) {
    const char *end;
    return parse_digits(s, out, &end) || *end ? -1 : 0;
}

static int parse_one(const struct pdef *d, const char *val, struct pval *pv, char *err,
                     size_t errlen) {
    pv->s = val;
    switch (d->type) {
    case P_INT:
    case P_SIZE: {
        long long v;
        int bad = d->type == P_INT ? parse_int(val, &v) : parse_size(val, &v);
        if (bad) {
            snprintf(err, errlen, "parameter %s=%s: not a %s", d->name, val,
                     d->type == P_INT ? "whole number" : "size (bytes, or with k/M/G)");
            return -1;
        }
        if (v < d->min || v > d->max) {
            snprintf(err, errlen, "parameter %s=%s: must be between %lld and %lld %s", d->name,
                     val, d->min, d->max, d->unit ? d->unit : "");
            return -1;
        }
        pv->i = v;
        return 0;
    }
    case P_BOOL:
        if (!strcmp(val, "true") || !strcmp(val, "1") || !strcmp(val, "yes")) pv->i = 1;
        else if (!strcmp(val, "false") || !strcmp(val, "0") || !strcmp(val, "no")) pv->i = 0;
        else {
            snprintf(err, errlen, "parameter %s=%s: use true or false", d->name, val);
            return -1;
        }
        return 0;
    case P_ENUM:
        for (const char *const *c = d->choices; *c; c++)
            if (!strcmp(*c, val)) return 0;
        {
            char list[256] = "";
            for (const char *const *c = d->choices; *c; c++) {
                strncat(list, *c, sizeof list - strlen(list) - 1);
                if (c[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            snprintf(err, errlen, "parameter %s=%s: choose one of %s", d->name, val, list);
        }
        return -1;
    case P_STR:
    case P_PATH:
        return 0;
    case P_CPU: {
        long long v;
        if (!*val || !strcmp(val, "none")) {
            pv->i = -1;
            return 0;
        }
        if (parse_int(val, &v) || v < 0 || v > 4095) {
            snprintf(err, errlen, "parameter %s=%s: a CPU number, or none", d->name, val);
            return -1;
        }
        pv->i = v;
        return 0;
    }
    case P_CPUS: {
        pv->cpu[0] = pv->cpu[1] = -1;
        if (!*val || !strcmp(val, "none")) return 0;
        const char *comma = strchr(val, ',');
        char a[32], b[32];
        long long x, y;
        if (!comma || (size_t)(comma - val) >= sizeof a || strlen(comma + 1) >= sizeof b) {
            snprintf(err, errlen, "parameter %s=%s: give two CPUs as A,B (e.g. 0,1), or none",
                     d->name, val);
            return -1;
        }
        memcpy(a, val, (size_t)(comma - val));
        a[comma - val] = 0;
        strcpy(b, comma + 1);
        if (parse_int(a, &x) || parse_int(b, &y) || x < 0 || y < 0 || x > 4095 || y > 4095) {
            snprintf(err, errlen, "parameter %s=%s: give two CPUs as A,B (e.g. 0,1), or none",
                     d->name, val);
            return -1;
        }
        pv->cpu[0] = (int)x;
        pv->cpu[1] = (int)y;
        return 0;
    }
    }
    return 0;
}

struct pval *params_parse_err(const struct bench *b, int nsets, char **sets, char *err,
                              size_t errlen) {
    struct pval *pv = xcalloc((size_t)b->nparams + 1, sizeof *pv);
    for (int i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq || eq == sets[i]) {
            snprintf(err, errlen, "parameter '%s': write it as key=value", sets[i]);
            free(pv);
            return NULL;
        }
        size_t klen = (size_t)(eq - sets[i]);
        int found = -1;
        for (int k = 0; k < b->nparams; k++)
            if (strlen(b->params[k].name) == klen && !strncmp(b->params[k].name, sets[i], klen))
                found = k;
        if (found < 0) {
            char names[512] = "";
            for (int k = 0; k < b->nparams; k++) {
                strncat(names, b->params[k].name, sizeof names - strlen(names) - 1);
                if (k + 1 < b->nparams) strncat(names, ", ", sizeof names - strlen(names) - 1);
            }
            snprintf(err, errlen, "benchmark %s has no parameter '%.*s' (it has: %s)", b->name,
                     (int)klen, sets[i], b->nparams ? names : "none");
            free(pv);
            return NULL;
        }
        if (pv[found].given) {
            snprintf(err, errlen, "parameter %s given twice", b->params[found].name);
            free(pv);
            return NULL;
        }
        if (parse_one(&b->params[found], eq + 1, &pv[found], err, errlen)) {
            free(pv);
            return NULL;
        }
        pv[found].given = 1;
    }
    for (int k = 0; k < b->nparams; k++) {
        if (pv[k].given) continue;
        if (parse_one(&b->params[k], b->params[k].def, &pv[k], err, errlen)) {
            free(pv);
            return NULL;
        }
    }
    return pv;
}

struct pval *params_parse(const struct bench *b, int nsets, char **sets) {
    char err[768];
    struct pval *pv = params_parse_err(b, nsets, sets, err, sizeof err);
    if (!pv) die(EXIT_BADINPUT, "%s", err);
    return pv;
}

const struct pval *param_of(const struct bench *b, const struct pval *pv, const char *name) {
    for (int k = 0; k < b->nparams; k++)
        if (!strcmp(b->params[k].name, name)) return &pv[k];
    die(EXIT_FAIL, "internal error: benchmark %s has no parameter %s", b->name, name);
}

const struct pval *param(const struct runctx *ctx, const char *name) {
    return param_of(ctx->b, ctx->pv, name);
}

enum placement placement_of(const int cpu[2]) {
    if (cpu[0] < 0 || cpu[1] < 0) return PL_UNPINNED;
    return cpu[0] == cpu[1] ? PL_SAME_CPU : PL_DIFFERENT_CPUS;
}

const char *placement_name(enum placement p) {
    switch (p) {
    case PL_SAME_CPU: return "same_cpu";
    case PL_DIFFERENT_CPUS: return "different_cpus";
    default: return "unpinned";
    }
}

int pcond_holds(const struct bench *b, const struct pval *pv, const struct pcond *c) {
    if (!c->param) return 0;
    const struct pval *v = param_of(b, pv, c->param);
    if (c->placement) return !strcmp(placement_name(placement_of(v->cpu)), c->placement);
    if (c->equals) return !strcmp(v->s, c->equals);
    if (c->not_equals) return strcmp(v->s, c->not_equals) != 0;
    return 0;
}

const char *param_type_name(enum ptype t) {
    switch (t) {
    case P_INT: return "int";
    case P_SIZE: return "size";
    case P_ENUM: return "enum";
    case P_STR: return "string";
    case P_PATH: return "path";
    case P_CPUS: return "cpus";
    case P_CPU: return "cpu";
    case P_BOOL: return "bool";
    }
    return "string";
}

void params_json(struct jbuf *j, const char *key, const struct bench *b, const struct pval *pv) {
    jb_obj(j, key);
    for (int k = 0; k < b->nparams; k++) {
        const struct pdef *d = &b->params[k];
        const struct pval *v = &pv[k];
        switch (d->type) {
        case P_INT:
        case P_SIZE:
        case P_CPU: jb_int(j, d->name, v->i); break;
        case P_BOOL: jb_bool(j, d->name, (int)v->i); break;
        default: jb_str(j, d->name, v->s);
        }
    }
    jb_end_obj(j);
}

