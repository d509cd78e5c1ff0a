/* latscope-probe: the sample file writer (format: docs/sample-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/bench.h"

uint32_t crc32_update(uint32_t crc, const void *data, size_t len) {
    static uint32_t table[256];
    static int init = 0;
    if (!init) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        init = 1;
    }
    const unsigned char *p = data;
    crc = ~crc;
    while (len--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* Write all of buf and add it to the running CRC: the checksum of format version 2 covers
 * every byte before the END line (magic, header, DATA line and samples). */
static int put(int fd, uint32_t *crc, const void *buf, size_t len) {
    *crc = crc32_update(*crc, buf, len);
    return write_full(fd, buf, len);
}

int sfile_write_fd(int fd, const char *header_json, int ncols, int64_t **cols,
                   uint64_t nrows) {
    return sfile_write_fd_v(fd, SAMPLE_FORMAT_VERSION, header_json, ncols, cols, nrows);
}

int sfile_write_fd_v(int fd, int version, const char *header_json, int ncols, int64_t **cols,
                     uint64_t nrows) {
    size_t hlen = strlen(header_json);
    /* what a reader accepts (docs/sample-format.md, "Limits"): one line of at most
     * SAMPLE_MAX_HEADER bytes, 1..SAMPLE_MAX_COLUMNS columns, at most SAMPLE_MAX_ROWS rows */
    if (hlen == 0 || hlen > SAMPLE_MAX_HEADER || memchr(header_json, '\n', hlen) || ncols < 1 ||
        ncols > SAMPLE_MAX_COLUMNS || nrows > SAMPLE_MAX_ROWS) {
        errno = EINVAL;
        return -1;
    }
    char line[128];
    int len;
    uint32_t crc = 0;
    len = snprintf(line, sizeof line, "LATSCOPE-SAMPLES %d\n", version);
    if (put(fd, &crc, line, (size_t)len)) goto fail;
    if (put(fd, &crc, header_json, hlen) || put(fd, &crc, "\n", 1)) goto fail;
    len = snprintf(line, sizeof line, "DATA %d %llu\n", ncols, (unsigned long long)nrows);
    if (put(fd, &crc, line, (size_t)len)) goto fail;
    for (int c = 0; c < ncols; c++) {
        /* little-endian int64, column after column (x86_64 and aarch64 are little-endian) */
        if (put(fd, &crc, cols[c], (size_t)nrows * sizeof(int64_t))) goto fail;
    }
    len = snprintf(line, sizeof line, "\nEND %llu %08x\n", (unsigned long long)nrows, crc);
    if (write_full(fd, line, (size_t)len)) goto fail;
    return 0;
fail:
    return -1;
}

/* Windows (MinGW): no links to refuse in a new name, no exec to close on, and binary mode,
 * never text; _commit is its fsync. */
#ifdef _WIN32
#define RAW_FLAGS O_BINARY
#define fsync _commit
#else
#define RAW_FLAGS (O_NOFOLLOW | O_CLOEXEC)
#endif

int sfile_write_raw(const char *path, const char *header_json, int ncols, int64_t **cols,
                    uint64_t nrows) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | RAW_FLAGS, 0644);
    if (fd < 0) return -1;
    if (sfile_write_fd(fd, header_json, ncols, cols, nrows) != 0 ||
        (fsync(fd) != 0 && errno != EINVAL)) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    return close(fd);
}

static void iso_utc(char *buf, size_t len) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *or_null(const char *s) { return s && *s ? s : NULL; }

/* The CPU architecture this probe was built for. */
#if defined(__x86_64__)
#define BUILT_FOR "x86_64"
#elif defined(__i386__)
#define BUILT_FOR "i386"
#elif defined(__aarch64__)
#define BUILT_FOR "aarch64"
#elif defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH == 7
#define BUILT_FOR "armv7"
#elif defined(__arm__)
#define BUILT_FOR "arm"
#else
#define BUILT_FOR NULL
#endif

/* The environment as this process sees it, in the schema of docs/store.md ("The
 * environment"): the facts the probe records, under the names the lab uses for them; the lab
 * adds the rest.  fs: the directory the benchmark worked in, or NULL. */
void env_json(struct jbuf *j, const char *key, const struct fsinfo *fs) {
    struct plat_os os;
    plat_os(&os);
    char buf[512];
    jb_obj(j, key);
    jb_int(j, "schema", ENV_SCHEMA);
    jb_str(j, "hostname", or_null(os.hostname));
    jb_obj(j, "kernel");
    jb_str(j, "sysname", or_null(os.sysname));
    jb_str(j, "release", or_null(os.release));
    jb_str(j, "version", or_null(os.version));
    jb_str(j, "machine", or_null(os.machine));
    jb_end_obj(j);
    jb_obj(j, "cpu");
    jb_str(j, "model", plat_cpu_model(buf, sizeof buf) == 0 ? buf : NULL);
    int online = plat_cpus_online();
    if (online > 0)
        jb_int(j, "online_count", online);
    else
        jb_null(j, "online_count");
    jb_end_obj(j);
    jb_obj(j, "clocksource");
    jb_str(j, "current", plat_clocksource(buf, sizeof buf) == 0 ? buf : NULL);
    jb_end_obj(j);
    struct emulation em;
    int emulated = plat_emulation(&em);
    jb_obj(j, "emulation");
    jb_bool(j, "emulated", emulated);
    jb_str(j, "emulator", emulated ? em.emulator : NULL);
    jb_str(j, "evidence", emulated ? em.evidence : NULL);
    jb_str(j, "built_for", BUILT_FOR);
    jb_end_obj(j);
    jb_obj(j, "process");
    jb_int(j, "pid", getpid());
    if (os.uid >= 0)
        jb_int(j, "uid", os.uid);
    else
        jb_null(j, "uid");
    if (os.euid >= 0)
        jb_int(j, "euid", os.euid);
    else
        jb_null(j, "euid");
    jb_end_obj(j);
    if (fs) fs_json(j, "filesystem", fs);
    jb_end_obj(j);
}

void fs_json(struct jbuf *j, const char *key, const struct fsinfo *fs) {
    jb_obj(j, key);
    jb_str(j, "path", fs->path);
    jb_str(j, "fstype", or_null(fs->fstype));
    jb_str(j, "source", or_null(fs->source));
    jb_str(j, "mount_point", or_null(fs->mount_point));
    jb_str(j, "mount_options", or_null(fs->mount_options));
    jb_str(j, "super_options", or_null(fs->super_options));
    char magic[32];
    snprintf(magic, sizeof magic, "0x%llx", fs->magic);
    jb_str(j, "statfs_magic", fs->magic ? magic : NULL);
    /* the block device behind it, where there is one: what a flush or a discard reaches */
    jb_str(j, "device", or_null(fs->device));
    jb_str(j, "write_cache", or_null(fs->write_cache));
    jb_str(j, "scheduler", or_null(fs->scheduler));
    if (fs->rotational >= 0)
        jb_bool(j, "rotational", fs->rotational);
    else
        jb_null(j, "rotational");
    jb_end_obj(j);
}

void sfile_write(struct runctx *ctx, int fd, int argc, char **argv, const char *started_utc) {
    struct jbuf j;
    jb_init(&j);
    char finished[64];
    iso_utc(finished, sizeof finished);
    int version = ctx->arms ? SAMPLE_FORMAT_VERSION_ARMS : SAMPLE_FORMAT_VERSION;
    jb_obj(&j, NULL);
    jb_str(&j, "format", "latscope-samples");
    jb_int(&j, "format_version", version);
    jb_obj(&j, "probe");
    jb_str(&j, "version", PROBE_VERSION);
#ifdef __VERSION__
    jb_str(&j, "compiler", __VERSION__);
#endif
    jb_end_obj(&j);
    jb_str(&j, "benchmark", ctx->b->name);
    params_json(&j, "params", ctx->b, ctx->pv);
    jb_int(&j, "n", ctx->n);
    jb_int(&j, "warmup", ctx->warmup);
    jb_num(&j, "inject_ns", ctx->inject_ns);
    if (ctx->rt_policy || ctx->rt_lock) { /* --sched, --mlock */
        jb_obj(&j, "realtime");
        jb_str(&j, "policy", ctx->rt_policy == PLAT_RT_FIFO ? "fifo"
                             : ctx->rt_policy == PLAT_RT_RR ? "rr" : "normal");
        jb_int(&j, "priority", ctx->rt_policy ? ctx->rt_prio : 0);
        jb_bool(&j, "mlock", ctx->rt_lock);
        jb_end_obj(&j);
    }
    jb_arr(&j, "workers");
    for (int w = 0; w < ctx->nworkers; w++) {
        const struct worker_rec *wr = &ctx->workers[w];
        jb_obj(&j, NULL);
        jb_int(&j, "n", wr->n);
        jb_int(&j, "warmup", wr->warmup);
        jb_int(&j, "pid", wr->pid);
        jb_obj(&j, "timed_rusage");
        for (int r = 0; r < wr->nroles && r < 2; r++) {
            const struct thread_usage *u = &wr->roles[r].u;
            jb_obj(&j, wr->roles[r].role);
            jb_int(&j, "minflt", u->minflt);
            jb_int(&j, "majflt", u->majflt);
            jb_int(&j, "nvcsw", u->nvcsw);
            jb_int(&j, "nivcsw", u->nivcsw);
            jb_end_obj(&j);
        }
        jb_end_obj(&j);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    jb_obj(&j, "clock");
    jb_str(&j, "name", ctx->clk.name);
    jb_num(&j, "ns_per_tick", ctx->clk.ns_per_tick);
    jb_num(&j, "step_ns", ctx->clk.step_ns);
    jb_num(&j, "overhead_ns", ctx->clk.overhead_ns);
    jb_num(&j, "resolution_ns", ctx->clk.resolution_ns);
    jb_num(&j, "getres_ns", ctx->clk.getres_ns);
    jb_bool(&j, "tsc_invariant", ctx->clk.invariant);
    if (ctx->clk.kind == CLK_TSC) {
        jb_num(&j, "calibration_ms", ctx->clk.calib_ms);
        jb_num(&j, "calibration_ppm", ctx->clk.calib_ppm);
        jb_str(&j, "calibrated_against", "CLOCK_MONOTONIC_RAW");
    }
    if (ctx->clk.kind == CLK_CNTVCT) {
        jb_num(&j, "frequency_hz", ctx->clk.frequency_hz);
        jb_str(&j, "frequency_from", "CNTFRQ");
    }
    jb_end_obj(&j);
    jb_arr(&j, "columns");
    jb_obj(&j, NULL);
    jb_str(&j, "name", "t_start");
    jb_str(&j, "unit", "ticks");
    jb_str(&j, "kind", "time");
    jb_str(&j, "description", "start of the iteration, since the start of the first recorded one");
    jb_end_obj(&j);
    for (int c = 0; c < ctx->ncols; c++) {
        jb_obj(&j, NULL);
        jb_str(&j, "name", ctx->cols[c].name);
        if (ctx->cols[c].kind) { /* an index column (arm, block, round): no time at all */
            jb_str(&j, "unit", "index");
            jb_str(&j, "kind", ctx->cols[c].kind);
            jb_str(&j, "description", ctx->cols[c].desc);
            jb_end_obj(&j);
            continue;
        }
        jb_str(&j, "unit", "ticks");
        jb_str(&j, "kind", "duration");
        jb_str(&j, "latency", ctx->cols[c].latency);
        if (ctx->cols[c].context_switches >= 0)
            jb_int(&j, "context_switches", ctx->cols[c].context_switches);
        else
            jb_null(&j, "context_switches");
        jb_bool(&j, "holds_inject", !ctx->cols[c].inject_free);
        jb_str(&j, "description", ctx->cols[c].desc);
        jb_end_obj(&j);
    }
    jb_end_arr(&j);
    jb_json(&j, "bench", ctx->meta.len ? ctx->meta.s : "{}");
    if (ctx->arms) arms_header(&j, ctx, ctx->nworkers);
    env_json(&j, "env", ctx->have_fs ? &ctx->fs : NULL);
    jb_str(&j, "started_utc", started_utc);
    jb_str(&j, "finished_utc", finished);
    jb_arr(&j, "argv");
    for (int i = 0; i < argc; i++) jb_str(&j, NULL, argv[i]);
    jb_end_arr(&j);
    jb_str(&j, "byte_order", "little");
    jb_end_obj(&j);

    int64_t *cols[MAX_COLS + 1];
    cols[0] = ctx->t_start;
    for (int c = 0; c < ctx->ncols; c++) cols[c + 1] = ctx->cols[c].data;

    if (sfile_write_fd_v(fd, version, j.s, ctx->ncols + 1, cols, (uint64_t)ctx->n) != 0)
        die(EXIT_FAIL, "cannot write the sample file: %s", strerror(errno));
    jb_free(&j);
}

void iso_utc_now(char *buf, size_t len) { iso_utc(buf, len); }
