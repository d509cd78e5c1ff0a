/* latscope-probe: the catalogue (--list) and the clocks (--clocks), as JSON.  The catalogue is
 * the one definition of everything the lab knows about benchmarks (docs/probe-cli.md): keys
 * are only ever added. */
#include <stdio.h>
#include <string.h>

#include "core/bench.h"

/* the quick plan's defaults */
#define QUICK_N 3000
#define QUICK_WARMUP 300

/* Whether clock k can be used here. */
static int clock_available(enum clock_kind k) {
    if (k == CLK_TSC) return HAVE_TSC && tsc_invariant();
    if (k == CLK_CNTVCT) return HAVE_CNTVCT && !cntvct_unusable();
    return 1;
}

static void cond_json(struct jbuf *j, const char *key, const struct pcond *c) {
    if (!c->param) {
        jb_null(j, key);
        return;
    }
    jb_obj(j, key);
    jb_str(j, "param", c->param);
    if (c->equals) jb_str(j, "equals", c->equals);
    if (c->not_equals) jb_str(j, "not_equals", c->not_equals);
    if (c->placement) jb_str(j, "placement", c->placement);
    jb_end_obj(j);
}

/* "k=v k=v" as {"k": "v", ...} */
static void scenario_params(struct jbuf *j, const char *params) {
    jb_obj(j, "params");
    for (const char *p = params; p && *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, " ");
        const char *eq = memchr(p, '=', len);
        if (len && eq) {
            char key[64], val[128];
            snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
            snprintf(val, sizeof val, "%.*s", (int)(len - (size_t)(eq - p) - 1), eq + 1);
            jb_str(j, key, val);
        }
        p += len;
    }
    jb_end_obj(j);
}

static void scenarios_json(struct jbuf *j, const struct bench *b) {
    static const struct scenario plain = {NULL, NULL, 0, 0, 1, NULL};
    int n = b->scenarios ? b->nscenarios : 1;
    jb_arr(j, "scenarios");
    for (int k = 0; k < n; k++) {
        const struct scenario *s = b->scenarios ? &b->scenarios[k] : &plain;
        jb_obj(j, NULL);
        jb_str(j, "name", s->name ? s->name : b->name);
        scenario_params(j, s->params);
        if (s->n) jb_int(j, "n", s->n);
        else jb_null(j, "n");
        if (s->warmup) jb_int(j, "warmup", s->warmup);
        else jb_null(j, "warmup");
        jb_bool(j, "quick", s->quick);
        jb_str(j, "note", s->note);
        jb_end_obj(j);
    }
    jb_end_arr(j);
}

static void display_json(struct jbuf *j, const struct display *d) {
    jb_obj(j, "display");
    jb_arr(j, "roles");
    for (int r = 0; r < 2; r++)
        if (d->roles[r]) jb_str(j, NULL, d->roles[r]);
    jb_end_arr(j);
    cond_json(j, "faults_expected_when", &d->faults_expected);
    jb_str(j, "switches_column", d->switches_column);
    jb_arr(j, "lines");
    for (int k = 0; k < 2; k++)
        if (d->lines[k]) {
            jb_obj(j, NULL);
            jb_str(j, "template", d->lines[k]);
            jb_null(j, "style");
            jb_end_obj(j);
        }
    for (int k = 0; k < 1; k++)
        if (d->dim_lines[k]) {
            jb_obj(j, NULL);
            jb_str(j, "template", d->dim_lines[k]);
            jb_str(j, "style", "dim");
            jb_end_obj(j);
        }
    jb_end_arr(j);
    if (d->check_label) {
        jb_obj(j, "check_figure");
        jb_str(j, "label", d->check_label);
        jb_str(j, "value", d->check_value);
        jb_str(j, "column", d->check_column);
        jb_str(j, "minus", d->check_minus);
        jb_str(j, "detail", d->check_detail);
        jb_end_obj(j);
    } else {
        jb_null(j, "check_figure");
    }
    jb_end_obj(j);
}

static void param_json(struct jbuf *j, const struct bench *b, const struct pdef *d) {
    jb_obj(j, NULL);
    jb_str(j, "name", d->name);
    jb_str(j, "type", param_type_name(d->type));
    jb_str(j, "default", d->def);
    jb_str(j, "unit", d->unit);
    jb_str(j, "help", d->help);
    if (d->type == P_ENUM) {
        jb_arr(j, "choices");
        for (const char *const *c = d->choices; *c; c++) jb_str(j, NULL, *c);
        jb_end_arr(j);
    }
    if (d->type == P_INT || d->type == P_SIZE) {
        jb_int(j, "min", d->min);
        long long max = d->max;
        if (b->family && b->family->param_max) max = b->family->param_max(b, d);
        jb_int(j, "max", max);
    }
    jb_str(j, "needs_root_when", d->root_value);
    jb_end_obj(j);
}

static void bench_json(struct jbuf *j, const struct bench *b) {
    const char *why = NULL;
    int avail = b->available ? b->available(&why) : 1;
    jb_obj(j, NULL);
    jb_str(j, "name", b->name);
    jb_str(j, "kind", b->kind);
    jb_str(j, "summary", b->summary);
    jb_bool(j, "available", avail);
    jb_str(j, "unavailable_reason", avail ? NULL : why);
    jb_str(j, "needs", b->needs);
    jb_str(j, "counterpart", b->counterpart);
    jb_int(j, "default_n", b->default_n);
    jb_str(j, "default_n_note", b->default_n_note);
    jb_arr(j, "default_n_rules");
    for (int k = 0; k < b->n_nrules; k++) {
        jb_obj(j, NULL);
        cond_json(j, "when", &b->n_rules[k].when);
        jb_int(j, "n", b->n_rules[k].n);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    if (b->family && b->family->catalogue) b->family->catalogue(j, b);
    jb_arr(j, "params");
    for (int k = 0; k < b->nparams; k++) param_json(j, b, &b->params[k]);
    jb_end_arr(j);
    jb_arr(j, "columns");
    for (int k = 0; k < b->ncolumns; k++) {
        jb_obj(j, NULL);
        jb_str(j, "name", b->columns[k].name);
        jb_str(j, "description", b->columns[k].desc);
        jb_str(j, "latency", b->columns[k].latency);
        jb_str(j, "latency_label", latency_label(b->columns[k].latency));
        jb_str(j, "when", b->columns[k].when);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    jb_arr(j, "derived_columns");
    for (int k = 0; k < b->nderived; k++) {
        const struct derived_col *d = &b->derived[k];
        char formula[128], by[48];
        if (d->divide_by_param)
            snprintf(by, sizeof by, "%s", d->divide_by_param);
        else
            snprintf(by, sizeof by, "%d", d->divide_by);
        if (d->minus)
            snprintf(formula, sizeof formula, "(%s - %s) / %s", d->from, d->minus, by);
        else
            snprintf(formula, sizeof formula, "%s / %s", d->from, by);
        jb_obj(j, NULL);
        jb_str(j, "name", d->name);
        jb_str(j, "from", d->from);
        if (d->divide_by_param)
            jb_null(j, "divide_by");
        else
            jb_int(j, "divide_by", d->divide_by);
        jb_str(j, "minus", d->minus);
        jb_str(j, "divide_by_param", d->divide_by_param);
        jb_str(j, "formula", formula);
        jb_str(j, "description", d->desc);
        jb_str(j, "latency", d->latency);
        jb_str(j, "latency_label", latency_label(d->latency));
        jb_end_obj(j);
    }
    jb_end_arr(j);
    scenarios_json(j, b);
    display_json(j, &b->display);
    jb_end_obj(j);
}

void print_catalogue(void) {
    struct jbuf j;
    int tsc = clock_available(CLK_TSC);
    jb_init(&j);
    jb_obj(&j, NULL);
    jb_int(&j, "catalogue_version", CATALOGUE_VERSION);
    jb_int(&j, "sample_format_version", SAMPLE_FORMAT_VERSION);
    jb_str(&j, "probe_version", PROBE_VERSION);
    jb_obj(&j, "features");
    jb_bool(&j, "tsc", tsc);
#if HAVE_CNTVCT
    jb_bool(&j, "cntvct", clock_available(CLK_CNTVCT));
#endif
#ifdef HAVE_ZMQ
    jb_bool(&j, "zmq", 1);
#else
    jb_bool(&j, "zmq", 0);
#endif
    /* --arm: scenarios interleaved in one process (their file: sample format version 3) */
#ifdef _WIN32
    jb_bool(&j, "arms", 0);
#else
    jb_bool(&j, "arms", 1);
#endif
    jb_end_obj(&j);
    /* --workers auto: what a run without an explicit worker count gets */
    jb_obj(&j, "workers_auto");
    jb_int(&j, "max", AUTO_WORKERS);
    jb_int(&j, "min_per_worker", AUTO_MIN_PER_WORKER);
    jb_end_obj(&j);
    enum clock_kind def;
    clock_parse("auto", &def);
    jb_arr(&j, "clocks");
    for (int i = 0; i < clock_list_len; i++) {
        enum clock_kind k = clock_list[i];
        jb_obj(&j, NULL);
        jb_str(&j, "name", clock_name(k));
        jb_bool(&j, "available", clock_available(k));
        jb_bool(&j, "default", def == k);
        jb_str(&j, "description", clock_description(k));
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    /* what --clock takes: auto, then every clock */
    jb_arr(&j, "clock_choices");
    jb_str(&j, NULL, "auto");
    for (int i = 0; i < clock_list_len; i++) jb_str(&j, NULL, clock_name(clock_list[i]));
    jb_end_arr(&j);
    jb_obj(&j, "latencies");
    for (int k = 0; latency_kinds[k].kind; k++) {
        jb_obj(&j, latency_kinds[k].kind);
        jb_str(&j, "label", latency_kinds[k].label);
        jb_str(&j, "description", latency_kinds[k].desc);
        jb_end_obj(&j);
    }
    jb_end_obj(&j);
    /* the quick plan: every scenario marked quick; n and warmup where a scenario says none */
    jb_obj(&j, "quick");
    jb_int(&j, "n", QUICK_N);
    jb_int(&j, "warmup", QUICK_WARMUP);
    jb_end_obj(&j);
    jb_obj(&j, "exit_codes");
    jb_str(&j, "0", "ok");
    jb_str(&j, "1", "measurement failed");
    jb_str(&j, "2", "bad input");
    jb_str(&j, "3", "unsupported or not permitted here");
    jb_str(&j, "130", "interrupted");
    jb_end_obj(&j);
    jb_arr(&j, "benchmarks");
    for (int i = 0; all_benches[i]; i++) bench_json(&j, all_benches[i]);
    jb_end_arr(&j);
    jb_end_obj(&j);
    printf("%s\n", j.s);
    jb_free(&j);
}

void print_clocks(void) {
    struct jbuf j;
    jb_init(&j);
    jb_arr(&j, NULL);
    for (int i = 0; i < clock_list_len; i++) {
        enum clock_kind k = clock_list[i];
        if (!clock_available(k)) continue;
        struct clock_info ci;
        clock_setup(k, &ci);
        jb_obj(&j, NULL);
        jb_str(&j, "name", ci.name);
        jb_num(&j, "ns_per_tick", ci.ns_per_tick);
        jb_num(&j, "step_ns", ci.step_ns);
        jb_num(&j, "overhead_ns", ci.overhead_ns);
        jb_num(&j, "resolution_ns", ci.resolution_ns);
        jb_num(&j, "getres_ns", ci.getres_ns);
        if (k == CLK_TSC) jb_num(&j, "calibration_ppm", ci.calib_ppm);
        if (k == CLK_CNTVCT) jb_num(&j, "frequency_hz", ci.frequency_hz);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    printf("%s\n", j.s);
    jb_free(&j);
}
