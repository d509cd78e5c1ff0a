/* latscope-probe: arms: two to eight scenarios measured in one worker process, alternating
 * short blocks in shuffled balanced rounds, so that every arm sees the same state of the
 * machine (docs/probe-cli.md, "Arms"; the sample file: docs/sample-format.md, version 3).
 *
 * In each worker: every arm is set up and its peers started (its begin: the arms that fork
 * first), then, after the last fork, each measuring side started and warmed up (its ready);
 * then each arm's block is calibrated to about block_ms (untimed pilots after the warm-up:
 * iterations per block, at least 1, and the switch iterations discarded at the start of each
 * block); the samples are sized and touched; then round after round, each running every arm
 * once in an order freshly shuffled (Fisher-Yates, from a generator seeded by --seed and the
 * worker's index), until the worker's share of --time is used; then every arm ends.  Before
 * each block, outside every timed region: the measuring thread pinned to the arm's CPU (when
 * it differs) and the arm's busy-wait (inject_ns) made the active one; the block then runs
 * its discarded switch iterations and its recorded ones (struct bench's block).  Every arm's
 * recorded iterations write into the worker's one set of columns, in time order, with the
 * arm, block and round of each row beside them. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"

/* The shortest iteration a block is sized for: a block holds at most block_ms / this many
 * iterations (an arm's responder keeps two blocks of receive stamps), however fast the arm. */
#define ARMS_MIN_ITER_NS 100.0
#define ARMS_MAX_BLOCK_CAP (1LL << 22)
/* The header holds every round's order: what it may take of the header, in bytes. */
#define ARMS_ORDER_BYTES (640LL * 1024)

/* ---------------------------------------------------------------- the arms, as given */

#define WORD_SPACE " \t\n\r\f\v"

int arm_parse(const char *text, struct arm_spec *a, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->text = text;
    /* the words stay: the parameters' values point into them */
    char *buf = xstrdup(text), *save = NULL;
    char **sets = xcalloc(strlen(text) / 2 + 2, sizeof(char *));
    int nsets = 0, have_inject = 0, code = 0;
    char *name = strtok_r(buf, WORD_SPACE, &save);
    if (!name) {
        snprintf(err, errlen, "--arm '%s': give a benchmark and its parameters, e.g. --arm "
                 "'pipe cpus=0,0'", text);
        code = EXIT_BADINPUT;
        goto out;
    }
    a->b = find_bench(name);
    if (!a->b) {
        snprintf(err, errlen, "--arm '%s': unknown benchmark '%s' (latscope-probe --list "
                 "names them)", text, name);
        code = EXIT_BADINPUT;
        goto out;
    }
    for (char *w = strtok_r(NULL, WORD_SPACE, &save); w; w = strtok_r(NULL, WORD_SPACE, &save)) {
        if (strncmp(w, "inject_ns=", 10)) {
            sets[nsets++] = w;
            continue;
        }
        long long v;
        const char *end;
        if (have_inject) {
            snprintf(err, errlen, "--arm '%s': inject_ns given twice", text);
            code = EXIT_BADINPUT;
            goto out;
        }
        if (parse_digits(w + 10, &v, &end) || *end || v > MAX_INJECT_NS) {
            snprintf(err, errlen, "--arm '%s': %s: give whole nanoseconds between 0 and %lld "
                     "(digits only)", text, w, MAX_INJECT_NS);
            code = EXIT_BADINPUT;
            goto out;
        }
        a->inject_ns = v;
        have_inject = 1;
    }
    char perr[768];
    a->pv = params_parse_err(a->b, nsets, sets, perr, sizeof perr);
    if (!a->pv) {
        snprintf(err, errlen, "--arm '%s': %s", text, perr);
        code = EXIT_BADINPUT;
    }
out:
    free(sets);
    if (code) free(buf);
    return code;
}

/* The columns an arm records, as names joined for a message. */
static int arm_columns(const struct arm_spec *a, const char *names[MAX_COLS]) {
    int idx[MAX_COLS], n = bench_columns(a->b, a->pv, idx);
    for (int k = 0; k < n; k++) names[k] = a->b->columns[idx[k]].name;
    return n;
}

static void join_names(char *out, size_t len, const char *const *names, int n) {
    out[0] = 0;
    for (int k = 0; k < n; k++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", k ? ", " : "", names[k]);
}

int arms_check(const struct arms *A, char *err, size_t errlen) {
    for (int k = 0; k < A->narms; k++) {
        const struct arm_spec *a = &A->arm[k];
        const struct bench *b = a->b;
        const char *why = NULL;
        if (b->available && !b->available(&why)) {
            snprintf(err, errlen, "--arm '%s': %s", a->text, why);
            return EXIT_UNSUPPORTED;
        }
        if (!b->begin) {
            if (b->arm_refusal)
                snprintf(err, errlen, "--arm '%s': %s", a->text, b->arm_refusal);
            else
                snprintf(err, errlen, "--arm '%s': %s cannot be an arm; run it alone", a->text,
                         b->name);
            return EXIT_BADINPUT;
        }
        if (b->family && b->family->spins && b->family->spins(b)) {
            snprintf(err, errlen, "--arm '%s': %s cannot be an arm: its waiting side spins "
                     "instead of sleeping, so while another arm is measured its responder "
                     "would keep a CPU busy and disturb it (an idle arm must block); run %s "
                     "alone, or use a blocking mechanism (futex, eventfd, pipe, ...) as an arm",
                     a->text, b->name, b->name);
            return EXIT_BADINPUT;
        }
    }
    const char *n0[MAX_COLS];
    int c0 = arm_columns(&A->arm[0], n0);
    for (int k = 1; k < A->narms; k++) {
        const char *nk[MAX_COLS];
        int ck = arm_columns(&A->arm[k], nk), same = ck == c0;
        for (int i = 0; i < ck && same; i++) {
            int found = 0;
            for (int j = 0; j < c0; j++) found |= !strcmp(nk[i], n0[j]);
            same = found;
        }
        if (!same) {
            char s0[256], sk[256];
            join_names(s0, sizeof s0, n0, c0);
            join_names(sk, sizeof sk, nk, ck);
            snprintf(err, errlen, "--arm '%s' and --arm '%s' record different columns (%s; %s): "
                     "the arms of one run must record the same columns (one benchmark, or "
                     "ping-pong mechanisms only)", A->arm[0].text, A->arm[k].text, s0, sk);
            return EXIT_BADINPUT;
        }
    }
    for (int k = 0; k < A->narms; k++) {
        const struct arm_spec *a = &A->arm[k];
        if (!a->b->check) continue;
        char e2[768];
        int code = a->b->check(a->b, a->pv, e2, sizeof e2);
        if (code) {
            snprintf(err, errlen, "--arm '%s': %s", a->text, e2);
            return code;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- one worker's rounds */

struct arm_run {
    const struct arm_spec *spec;
    struct runctx *ctx;     /* the arm's own run context */
    void *state;            /* its begin's */
    uint64_t bi, discard;   /* recorded and discarded iterations per block */
    double iter_ns;         /* an iteration, as the pilot found it */
    int colmap[MAX_COLS];   /* its column c is the worker's column colmap[c] */
};

/* splitmix64: a small, well-mixed generator; the same seed and worker give the same orders */
static uint64_t next_random(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A round's order: every arm once, shuffled (Fisher-Yates). */
static void shuffle(unsigned char *perm, int n, uint64_t *rng) {
    for (int i = 0; i < n; i++) perm[i] = (unsigned char)i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_random(rng) % (uint64_t)(i + 1));
        unsigned char t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Whether an arm's begin forks (a ping-pong responder in a process of its own). */
static int arm_forks(const struct arm_spec *a) {
    const struct family *f = a->b->family;
    return f && f->forks && f->forks(a->b, a->pv);
}

/* Before an arm's block (between blocks, never in a timed region): the measuring thread on
 * the arm's CPU (or unpinned again), the arm's busy-wait the active one. */
static void arm_switch(const struct arm_run *a, int *cur) {
    int cpu = a->ctx->cpu;
    if (cpu != *cur) {
        int e = cpu >= 0 ? plat_pin_thread(cpu) : plat_affinity_restore();
        if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", cpu, strerror(e));
        *cur = cpu;
    }
    inject_set(&a->spec->inject);
}

static double elapsed_ns(const struct clock_info *clk, uint64_t since) {
    return (double)(clk_end() - since) * clk->ns_per_tick;
}

/* One pilot: p iterations run as a block that keeps none; their time, in ns. */
static double pilot(struct arm_run *a, uint64_t p, const struct clock_info *clk) {
    stop_if_asked();
    uint64_t t = clk_start();
    a->ctx->b->block(a->state, 0, 0, p);
    return elapsed_ns(clk, t);
}

/* The arm's block sized to about block_ns: a pilot of untimed iterations doubled until it
 * takes a quarter of a block, then four more of that length; the fastest of the five gives an
 * iteration's time (other work on the machine only ever makes a pilot slower); then the
 * switch iterations discarded at the start of every block: 5% of it, at least 2. */
static void calibrate(struct arm_run *a, double block_ns, uint64_t cap,
                      const struct clock_info *clk) {
    uint64_t p = 4;
    double ns;
    for (;;) {
        ns = pilot(a, p, clk);
        if (ns >= block_ns / 4 || p >= cap) break;
        p = 2 * p < cap ? 2 * p : cap;
    }
    for (int k = 0; k < 4; k++) ns = fmin(ns, pilot(a, p, clk));
    a->iter_ns = ns > 0 ? ns / (double)p : 1;
    double want = block_ns / a->iter_ns;
    uint64_t bi = want >= 1 ? (uint64_t)(want + 0.5) : 1;
    uint64_t d = bi / 20 > 2 ? bi / 20 : 2;
    while (bi + d > cap && bi > 1) {
        bi = bi > cap ? cap : bi - (bi + d - cap);
        d = bi / 20 > 2 ? bi / 20 : 2;
    }
    a->bi = bi;
    a->discard = d;
}

/* Every arm writes its samples into the worker's columns (each of its columns the one of the
 * same name) and t_start. */
static void arms_samples(struct runctx *top, struct arm_run *ar, int K) {
    for (int k = 0; k < K; k++) {
        struct runctx *c = ar[k].ctx;
        c->t_start = top->t_start;
        for (int j = 0; j < c->ncols; j++) c->cols[j].data = top->cols[ar[k].colmap[j]].data;
    }
}

/* A sample array grown from had to now entries, the new pages written (between rounds). */
static int64_t *grow_samples(int64_t *p, size_t had, size_t now) {
    p = realloc(p, now * sizeof(int64_t));
    if (!p) die(EXIT_FAIL, "out of memory for %zu samples", now);
    for (size_t i = had; i < now; i++) p[i] = 0;
    return p;
}

static const char *const index_desc[3] = {
    "the arm of the row: an index into the header's arms",
    "the block of the row, counted across the whole file",
    "the round of the row, counted within its worker",
};
static const char *const index_name[3] = {"arm", "block", "round"};

void arms_worker_run(struct runctx *top, int w, int nw) {
    struct arms *A = top->arms;
    int K = A->narms;
    const struct clock_info *clk = &top->clk;
    double block_ns = A->block_ms * 1e6, share_ns = A->time_s / nw * 1e9;
    long long cap = (long long)ceil(block_ns / ARMS_MIN_ITER_NS);
    if (cap < 64) cap = 64;
    if (cap > ARMS_MAX_BLOCK_CAP) cap = ARMS_MAX_BLOCK_CAP;
    int e = plat_affinity_save();
    if (e) die(EXIT_UNSUPPORTED, "cannot read this thread's CPU affinity: %s", strerror(e));
    struct arm_run *ar = xcalloc((size_t)K, sizeof *ar);

    /* every arm begun (set up, its peers started), with its own busy-wait, from an unpinned
     * start: first those whose responder is a forked process, then the others, each in the
     * order given, so that no fork follows a started thread (after a fork, a thread's first
     * write to each of its private pages, its stack, faults: the copy on write) */
    int begin_order[ARMS_MAX], nb = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < K; k++)
            if (arm_forks(&A->arm[k]) == !pass) begin_order[nb++] = k;
    for (int x = 0; x < K; x++) {
        int k = begin_order[x];
        struct arm_run *a = &ar[k];
        struct runctx *c = a->ctx = xcalloc(1, sizeof *a->ctx);
        a->spec = &A->arm[k];
        c->b = a->spec->b;
        c->pv = a->spec->pv;
        c->warmup = top->warmup;
        c->clk = top->clk;
        c->peer_timeout = top->peer_timeout;
        c->progress_fd = -1;
        c->inject_ns = (double)a->spec->inject_ns;
        c->is_arm = 1;
        c->block_cap = (uint64_t)cap;
        c->cpu = -1;
        supervisor_add_activity(&c->progress);
        e = plat_affinity_restore();
        if (e) die(EXIT_UNSUPPORTED, "cannot unpin the measuring thread: %s", strerror(e));
        inject_set(&a->spec->inject);
        a->state = c->b->begin(c);
    }
    /* then, after the last fork, each measuring side's own start and warm-up */
    for (int x = 0; x < K; x++) {
        struct arm_run *a = &ar[begin_order[x]];
        if (!a->ctx->b->ready) continue;
        int cpu = a->ctx->cpu;
        e = cpu >= 0 ? plat_pin_thread(cpu) : plat_affinity_restore();
        if (e) die(EXIT_UNSUPPORTED, "cannot pin to CPU %d: %s", cpu, strerror(e));
        inject_set(&a->spec->inject);
        a->ctx->b->ready(a->state);
    }
    /* the worker's columns: the first arm's, then the index columns; each arm's by name */
    struct runctx *c0 = ar[0].ctx;
    top->ncols = 0;
    for (int j = 0; j < c0->ncols; j++) top->cols[top->ncols++] = c0->cols[j];
    for (int x = 0; x < 3; x++)
        top->cols[top->ncols++] = (struct column){.name = index_name[x], .desc = index_desc[x],
                                                  .context_switches = -1, .kind = "index"};
    for (int k = 0; k < K; k++) {
        struct runctx *c = ar[k].ctx;
        if (c->ncols != c0->ncols)
            die(EXIT_FAIL, "internal error: --arm '%s' recorded %d columns, the first %d",
                ar[k].spec->text, c->ncols, c0->ncols);
        for (int j = 0; j < c->ncols; j++) {
            ar[k].colmap[j] = -1;
            for (int i = 0; i < c0->ncols; i++)
                if (!strcmp(c->cols[j].name, c0->cols[i].name)) ar[k].colmap[j] = i;
            if (ar[k].colmap[j] < 0)
                die(EXIT_FAIL, "internal error: --arm '%s' recorded a column '%s' the first "
                    "did not", ar[k].spec->text, c->cols[j].name);
        }
    }

    /* each arm's block, calibrated on its CPU with its busy-wait */
    int cur = -2;
    double round_ns = 0;
    long long per_round = 0;
    /* --max-samples: each arm's share in this worker, spread over the rounds a run aims at
     * (a fast arm's blocks are shortened, never its rounds made fewer than that) */
    long long cap_w = A->max_samples / nw > 1 ? A->max_samples / nw : 1;
    long long want_rounds = ARMS_TARGET_ROUNDS / nw > 10 ? ARMS_TARGET_ROUNDS / nw : 10;
    uint64_t bi_max = cap_w / want_rounds > 1 ? (uint64_t)(cap_w / want_rounds) : 1;
    long long by_samples = LLONG_MAX;
    for (int k = 0; k < K; k++) {
        arm_switch(&ar[k], &cur);
        calibrate(&ar[k], block_ns, (uint64_t)cap, clk);
        if (ar[k].bi > bi_max) {
            ar[k].bi = bi_max;
            ar[k].discard = bi_max / 20 > 2 ? bi_max / 20 : 2;
        }
        if (cap_w / (long long)ar[k].bi < by_samples) by_samples = cap_w / (long long)ar[k].bi;
        round_ns += (double)(ar[k].bi + ar[k].discard) * ar[k].iter_ns;
        per_round += (long long)ar[k].bi;
    }

    /* the samples: room for the rounds the time should hold and a quarter more, grown
     * between rounds if the arms run faster than calibrated, up to what the file, its header
     * (every round's order) and the memory allow */
    if (round_ns < 1) round_ns = 1;
    long long max_rounds = (long long)(SAMPLE_MAX_ROWS / (unsigned long long)nw) / per_round;
    long long by_header = ARMS_ORDER_BYTES / nw / (2 * K + 2);
    if (max_rounds > by_header) max_rounds = by_header;
    long long avail = plat_available_memory();
    long long row_bytes = (long long)(top->ncols + 1) * 8 * 2; /* here and in the probe */
    if (avail > 0 && max_rounds * per_round * row_bytes > avail / 2)
        max_rounds = avail / 2 / row_bytes / per_round;
    int limited_by_samples = 0;
    if (by_samples < max_rounds) {
        max_rounds = by_samples > 1 ? by_samples : 1;
        limited_by_samples = 1;
    }
    if (max_rounds < 1)
        die(EXIT_BADINPUT, "one round of these arms records %lld samples, more than a sample "
            "file or this machine's memory holds; use a shorter --block-ms", per_round);
    long long room = (long long)ceil(share_ns / round_ns * 1.25) + 2;
    if (room > max_rounds) room = max_rounds;
    top->t_start = alloc_samples((size_t)(room * per_round));
    for (int j = 0; j < top->ncols; j++)
        top->cols[j].data = alloc_samples((size_t)(room * per_round));
    unsigned char *order = xcalloc((size_t)(max_rounds * K), 1);
    touch_pages(order, (size_t)(max_rounds * K));
    arms_samples(top, ar, K);
    uint64_t origin = clk_start();
    for (int k = 0; k < K; k++) {
        ar[k].ctx->t0 = origin; /* one timeline for every arm */
        ar[k].ctx->t0_set = 1;
    }

    /* the rounds, until the worker's share of the time is used */
    uint64_t rng = A->seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(w + 1));
    uint64_t share_ms = (uint64_t)(share_ns / 1e6);
    long long r, row = 0, blk = 0;
    touch_stack();
    uint64_t t_begin = clk_end();
    double used = 0;
    for (r = 0; r < max_rounds;) {
        if (r == room) { /* between rounds: more room, allocated and touched */
            long long more = room + room / 2 + 2 < max_rounds ? room + room / 2 + 2 : max_rounds;
            size_t had = (size_t)(room * per_round), now = (size_t)(more * per_round);
            top->t_start = grow_samples(top->t_start, had, now);
            for (int j = 0; j < top->ncols; j++)
                top->cols[j].data = grow_samples(top->cols[j].data, had, now);
            arms_samples(top, ar, K);
            room = more;
        }
        int64_t *col_arm = top->cols[top->ncols - 3].data;
        int64_t *col_block = top->cols[top->ncols - 2].data;
        int64_t *col_round = top->cols[top->ncols - 1].data;
        unsigned char *perm = order + r * K;
        shuffle(perm, K, &rng);
        for (int j = 0; j < K; j++) {
            struct arm_run *a = &ar[perm[j]];
            stop_if_asked();
            arm_switch(a, &cur);
            a->ctx->b->block(a->state, (uint64_t)row, a->bi, a->discard);
            for (long long i = row; i < row + (long long)a->bi; i++) {
                col_arm[i] = perm[j];
                col_block[i] = blk;
                col_round[i] = r;
            }
            row += (long long)a->bi;
            blk++;
            used = elapsed_ns(clk, t_begin);
            uint64_t ms = (uint64_t)(used / 1e6);
            top->progress = ms < share_ms ? ms : share_ms;
        }
        r++;
        if (used >= share_ns) break;
    }
    top->progress = share_ms;

    /* every arm ended (its closing round trip, its peers joined, its metadata) */
    inject_set(&(struct inject_setting){0}); /* every wait off, whatever fields it has */
    for (int k = 0; k < K; k++) {
        e = plat_affinity_restore();
        if (e) die(EXIT_UNSUPPORTED, "cannot unpin the measuring thread: %s", strerror(e));
        ar[k].ctx->b->end(ar[k].state);
    }

    /* one timeline: t_start from the worker's first recorded iteration */
    int64_t first = row ? top->t_start[0] : 0;
    for (long long i = 0; i < row; i++) top->t_start[i] -= first;
    top->t0 = origin + (uint64_t)first;
    top->n = row;

    /* what the worker hands over */
    struct arms_worker *aw = &A->w[w];
    memset(aw, 0, sizeof *aw);
    aw->rounds = r;
    aw->max_rounds = max_rounds;
    aw->by_samples = limited_by_samples;
    aw->blocks = blk;
    aw->elapsed_s = used / 1e9;
    A->order[w] = order;
    top->nroles = c0->nroles;
    memset(top->roles, 0, sizeof top->roles);
    top->preempt_expected = 0;
    for (int k = 0; k < K; k++) {
        struct runctx *c = ar[k].ctx;
        struct arm_part *p = &aw->arm[k];
        p->n = r * (long long)ar[k].bi;
        p->block_iterations = (long long)ar[k].bi;
        p->discard = (long long)ar[k].discard;
        p->block_cap = cap;
        p->nroles = c->nroles;
        for (int x = 0; x < c->nroles && x < 2; x++) {
            p->roles[x] = c->roles[x];
            top->roles[x].role = c->roles[x].role;
            top->roles[x].u.minflt += c->roles[x].u.minflt;
            top->roles[x].u.majflt += c->roles[x].u.majflt;
            top->roles[x].u.nvcsw += c->roles[x].u.nvcsw;
            top->roles[x].u.nivcsw += c->roles[x].u.nivcsw;
        }
        p->ncols = c->ncols;
        for (int j = 0; j < c->ncols; j++) {
            p->cols[j] = c->cols[j];
            p->cols[j].data = NULL;
        }
        p->preempt_expected = c->preempt_expected;
        top->preempt_expected |= c->preempt_expected;
        p->have_fs = c->have_fs;
        p->fs = c->fs;
        A->meta[k] = xstrdup(c->meta.len ? c->meta.s : "{}");
        p->metalen = strlen(A->meta[k]);
        jb_free(&c->meta);
        /* the context itself stays: the supervisor watches its progress until it stops */
    }
    top->have_fs = aw->arm[0].have_fs;
    top->fs = aw->arm[0].fs;
    jb_init(&top->meta);
    jb_raw(&top->meta, "%s", A->meta[0]);
    free(ar);
}

void arms_gathered(struct runctx *ctx, int w, long long off, long long n) {
    long long before = 0;
    for (int v = 0; v < w; v++) before += ctx->arms->w[v].blocks;
    int64_t *blk = ctx->cols[ctx->ncols - 2].data;
    for (long long i = off; i < off + n; i++) blk[i] += before;
}

/* ---------------------------------------------------------------- the header */

static void usage_json(struct jbuf *j, const struct role_usage *roles, int nroles) {
    jb_obj(j, NULL);
    for (int x = 0; x < nroles && x < 2; x++) {
        const struct thread_usage *u = &roles[x].u;
        jb_obj(j, roles[x].role);
        jb_int(j, "minflt", u->minflt);
        jb_int(j, "majflt", u->majflt);
        jb_int(j, "nvcsw", u->nvcsw);
        jb_int(j, "nivcsw", u->nivcsw);
        jb_end_obj(j);
    }
    jb_end_obj(j);
}

void arms_header(struct jbuf *j, const struct runctx *ctx, int nw) {
    const struct arms *A = ctx->arms;
    int K = A->narms;
    jb_arr(j, "arms");
    for (int k = 0; k < K; k++) {
        const struct arm_spec *a = &A->arm[k];
        const struct arm_part *p0 = &A->w[0].arm[k];
        long long n = 0;
        for (int w = 0; w < nw; w++) n += A->w[w].arm[k].n;
        jb_obj(j, NULL);
        jb_str(j, "benchmark", a->b->name);
        params_json(j, "params", a->b, a->pv);
        jb_arr(j, "given");
        for (int x = 0; x < a->b->nparams; x++)
            if (a->pv[x].given) jb_str(j, NULL, a->b->params[x].name);
        jb_end_arr(j);
        jb_str(j, "word", a->text);
        jb_int(j, "inject_ns", a->inject_ns);
        jb_int(j, "n", n);
        jb_int(j, "warmup", ctx->warmup);
        jb_json(j, "bench", A->meta[k] ? A->meta[k] : "{}");
        jb_arr(j, "columns");
        for (int c = 0; c < p0->ncols; c++) {
            const struct column *col = &p0->cols[c];
            jb_obj(j, NULL);
            jb_str(j, "name", col->name);
            jb_str(j, "unit", "ticks");
            jb_str(j, "kind", "duration");
            jb_str(j, "latency", col->latency);
            if (col->context_switches >= 0) jb_int(j, "context_switches", col->context_switches);
            else jb_null(j, "context_switches");
            jb_bool(j, "holds_inject", !col->inject_free);
            jb_str(j, "description", col->desc);
            jb_end_obj(j);
        }
        jb_end_arr(j);
        jb_arr(j, "block_iterations");
        for (int w = 0; w < nw; w++) jb_int(j, NULL, A->w[w].arm[k].block_iterations);
        jb_end_arr(j);
        jb_arr(j, "discard_per_block");
        for (int w = 0; w < nw; w++) jb_int(j, NULL, A->w[w].arm[k].discard);
        jb_end_arr(j);
        jb_arr(j, "timed_rusage");
        for (int w = 0; w < nw; w++) usage_json(j, A->w[w].arm[k].roles, A->w[w].arm[k].nroles);
        jb_end_arr(j);
        if (p0->have_fs) fs_json(j, "filesystem", &p0->fs);
        jb_end_obj(j);
    }
    jb_end_arr(j);
    jb_obj(j, "interleave");
    jb_int(j, "seed", (long long)A->seed);
    jb_num(j, "time_s", A->time_s);
    jb_num(j, "time_per_worker_s", A->time_s / nw);
    jb_num(j, "block_ms", A->block_ms);
    jb_int(j, "max_samples", A->max_samples);
    jb_int(j, "block_cap", A->w[0].arm[0].block_cap);
    jb_arr(j, "rounds");
    for (int w = 0; w < nw; w++) jb_int(j, NULL, A->w[w].rounds);
    jb_end_arr(j);
    jb_arr(j, "max_rounds");
    for (int w = 0; w < nw; w++) jb_int(j, NULL, A->w[w].max_rounds);
    jb_end_arr(j);
    jb_arr(j, "elapsed_s");
    for (int w = 0; w < nw; w++) jb_num(j, NULL, A->w[w].elapsed_s);
    jb_end_arr(j);
    jb_arr(j, "order");
    for (int w = 0; w < nw; w++) {
        jb_arr(j, NULL);
        for (long long r = 0; r < A->w[w].rounds; r++) {
            jb_arr(j, NULL);
            for (int x = 0; x < K; x++) jb_int(j, NULL, A->order[w][r * K + x]);
            jb_end_arr(j);
        }
        jb_end_arr(j);
    }
    jb_end_arr(j);
    jb_end_obj(j);
}
