/* latscope-probe: open / write / read / close (and fsync) per call, warm or cold cache. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bench.h"
#include "platform/platform.h"

static const char *const cache_choices[] = {"warm", "drop", "fadvise", "direct", NULL};
static const char *const open_choices[] = {"create", "existing", NULL};
static const char *const order_choices[] = {"wr", "rw", NULL};

static const struct pdef file_params[] = {
    {"dir", P_PATH, "", NULL,
     "directory for the test file (default: a private temporary directory under $TMPDIR or "
     "/tmp); its filesystem type and mount are recorded",
     NULL, 0, 0, NULL},
    {"file", P_STR, "", NULL,
     "name of the test file inside dir (default: latscope-PID.dat); it must not exist, and is "
     "removed afterwards",
     NULL, 0, 0, NULL},
    {"size", P_SIZE, "4096", "bytes", "bytes written and read per iteration", NULL, 1,
     1LL << 30, NULL},
    {"cache", P_ENUM, "warm", NULL,
     "warm: page cache as it is; drop: sync + drop_caches=3 before every iteration (root); "
     "fadvise: fdatasync + posix_fadvise(DONTNEED) on the file before every iteration; "
     "direct: O_DIRECT, aligned buffers, size a multiple of 4096",
     cache_choices, 0, 0, "drop"},
    {"open", P_ENUM, "create", NULL,
     "create: open with O_CREAT|O_TRUNC (report 000); existing: open a file written "
     "beforehand, without truncating it (report 001)",
     open_choices, 0, 0, NULL},
    {"fsync", P_BOOL, "false", NULL, "also time fsync() after the write, as its own column",
     NULL, 0, 0, NULL},
    {"order", P_ENUM, "wr", NULL,
     "wr: write, lseek (not timed), read - the read then hits the page cache just written; "
     "rw: read first (needs open=existing), so a cold cache reaches the read",
     order_choices, 0, 0, NULL},
    {"cpu", P_CPU, "none", "cpu", "pin the measuring thread to this CPU (none: unpinned)", NULL,
     0, 0, NULL},
};

static const struct coldef file_columns[] = {
    {"open", "open() of the test file", "call", NULL},
    {"write", "write() of size bytes at offset 0", "call", NULL},
    {"fsync", "fsync() after the write", "call", "fsync=true"},
    {"read", "read() of size bytes at offset 0 (after an untimed lseek)", "call", NULL},
    {"close", "close() of the file", "call", NULL},
};

static long long file_default_n(const struct bench *b, const struct pval *pv) {
    (void)b;
    /* pv[3] is cache */
    return !strcmp(pv[3].s, "drop") ? 200 : 10000;
}

static char g_tmpdir[PATH_MAX];
static char g_path[PATH_MAX];

static void drop_caches(int fd) {
    sync();
    if (pwrite(fd, "3", 1, 0) != 1)
        die(EXIT_FAIL, "writing /proc/sys/vm/drop_caches failed: %s", strerror(errno));
}

static void run_file(struct runctx *ctx) {
    const char *dir = param(ctx, "dir")->s, *fname = param(ctx, "file")->s;
    const char *cache = param(ctx, "cache")->s;
    long long size = param(ctx, "size")->i;
    int existing = !strcmp(param(ctx, "open")->s, "existing");
    int do_fsync = (int)param(ctx, "fsync")->i;
    int rw = !strcmp(param(ctx, "order")->s, "rw");
    int cpu = (int)param(ctx, "cpu")->i;
    int drop = !strcmp(cache, "drop"), fadv = !strcmp(cache, "fadvise");
    int direct = !strcmp(cache, "direct");

    if (rw && !existing)
        die(EXIT_BADINPUT, "order=rw needs open=existing (a truncated file has nothing to read)");
    if (direct && size % 4096)
        die(EXIT_BADINPUT, "cache=direct needs size to be a multiple of 4096 bytes (O_DIRECT)");
    if (strchr(fname, '/'))
        die(EXIT_BADINPUT, "file=%s: give a plain name; put the directory in dir=", fname);
    pin_or_die(cpu);

    int dropfd = -1;
    if (drop) {
        dropfd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
        if (dropfd < 0) {
            if (errno == EACCES || errno == EPERM)
                die(EXIT_UNSUPPORTED, "cache=drop needs root: it writes /proc/sys/vm/drop_caches "
                    "before every iteration; run as root, or use cache=fadvise (no root needed)");
            die(EXIT_UNSUPPORTED, "cache=drop: cannot open /proc/sys/vm/drop_caches (%s; "
                "a container?); use cache=fadvise", strerror(errno));
        }
    }

    if (!*dir) {
        const char *t = getenv("TMPDIR");
        snprintf(g_tmpdir, sizeof g_tmpdir, "%s/latscope-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(g_tmpdir))
            die(EXIT_UNSUPPORTED, "cannot create a temporary directory %s: %s", g_tmpdir,
                strerror(errno));
        cleanup_rmdir(g_tmpdir);
        dir = g_tmpdir;
    } else {
        struct stat st;
        if (stat(dir, &st) != 0)
            die(EXIT_BADINPUT, "dir=%s: %s", dir, strerror(errno));
        if (!S_ISDIR(st.st_mode)) die(EXIT_BADINPUT, "dir=%s is not a directory", dir);
        if (access(dir, W_OK) != 0)
            die(errno == EROFS ? EXIT_UNSUPPORTED : EXIT_BADINPUT,
                "dir=%s is not writable (%s); choose a directory you can write to", dir,
                strerror(errno));
    }
    char defname[64];
    if (!*fname) {
        snprintf(defname, sizeof defname, "latscope-%d.dat", (int)getpid());
        fname = defname;
    }
    if (strlen(dir) + strlen(fname) + 2 > sizeof g_path)
        die(EXIT_BADINPUT, "dir=%s: the path is too long", dir);
    snprintf(g_path, sizeof g_path, "%.2000s/%.2000s", dir, fname);
    struct stat lst;
    if (lstat(g_path, &lst) == 0) {
        if (S_ISLNK(lst.st_mode))
            die(EXIT_BADINPUT, "%s is a symbolic link; latscope never follows links to its test "
                "file: remove it or choose another file=", g_path);
        die(EXIT_BADINPUT, "%s exists; latscope will not overwrite it: remove it or choose "
            "another file=", g_path);
    }

    /* Aligned, touched buffers. */
    void *wbuf, *rbuf;
    size_t alloc = ((size_t)size + 4095) & ~(size_t)4095;
    if (posix_memalign(&wbuf, 4096, alloc) || posix_memalign(&rbuf, 4096, alloc))
        die(EXIT_FAIL, "out of memory for %lld-byte buffers", size);
    for (size_t i = 0; i < alloc; i++) ((unsigned char *)wbuf)[i] = (unsigned char)(i * 31 + 7);
    memset(rbuf, 0, alloc);

    /* Create the file ourselves (never through a link, never over a file). */
    int fd = open(g_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        die(e == EROFS || e == EACCES || e == EPERM ? EXIT_UNSUPPORTED : EXIT_BADINPUT,
            "cannot create %s: %s", g_path, strerror(e));
    }
    cleanup_unlink(g_path);
    if (write(fd, wbuf, (size_t)size) != (ssize_t)size)
        die(EXIT_FAIL, "cannot write %lld bytes to %s: %s", size, g_path, strerror(errno));
    if (fsync(fd) != 0 && errno != EINVAL)
        die(EXIT_FAIL, "fsync of %s failed: %s", g_path, strerror(errno));
    close(fd);
    int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (existing ? 0 : O_CREAT | O_TRUNC);
    if (direct) {
        flags |= O_DIRECT;
        fd = open(g_path, flags, 0600);
        if (fd < 0) {
            struct fsinfo fi;
            fsinfo_for(dir, &fi);
            die(EXIT_UNSUPPORTED, "the %s filesystem at %s does not support O_DIRECT "
                "(cache=direct): %s; use cache=fadvise or cache=drop",
                fi.fstype[0] ? fi.fstype : "unknown", dir, strerror(errno));
        }
        close(fd);
    }

    /* Columns in the order the calls are made. */
    struct column *c_open = add_column(ctx, "open", file_columns[0].desc, "call", 0);
    struct column *c_write = NULL, *c_fsync = NULL, *c_read = NULL;
    if (rw) c_read = add_column(ctx, "read", file_columns[3].desc, "call", 0);
    c_write = add_column(ctx, "write", file_columns[1].desc, "call", 0);
    if (do_fsync) c_fsync = add_column(ctx, "fsync", file_columns[2].desc, "call", 0);
    if (!rw) c_read = add_column(ctx, "read", file_columns[3].desc, "call", 0);
    struct column *c_close = add_column(ctx, "close", file_columns[4].desc, "call", 0);
    ctx->t_start = alloc_samples((size_t)ctx->n);

    uint64_t total = (uint64_t)(ctx->n + ctx->warmup), warm = (uint64_t)ctx->warmup, t0 = 0;
    touch_stack();
    struct thread_usage u0 = {0}, u1;
    for (uint64_t i = 0; i < total; i++) {
        if (g_stop) die(EXIT_INTERRUPTED, "interrupted; nothing was written");
        if (i == warm) thread_usage_now(&u0);
        /* untimed preparation */
        if (drop) drop_caches(dropfd);
        if (fadv) {
            int f2 = open(g_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
            if (f2 < 0 || fdatasync(f2) != 0 || posix_fadvise(f2, 0, 0, POSIX_FADV_DONTNEED))
                die(EXIT_FAIL, "fadvise preparation failed: %s", strerror(errno));
            close(f2);
        }
        int64_t d_open, d_write, d_fsync = 0, d_read = 0, d_close;
        uint64_t a = clk_start();
        inject_delay();
        fd = open(g_path, flags, 0600);
        uint64_t b = clk_end();
        if (fd < 0) die(EXIT_FAIL, "the timed open() of %s failed: %s", g_path, strerror(errno));
        d_open = (int64_t)(b - a);
        uint64_t it_start = a;
        ssize_t r;
        if (rw) {
            a = clk_start();
            inject_delay();
            r = read(fd, rbuf, (size_t)size);
            b = clk_end();
            if (r != (ssize_t)size)
                die(EXIT_FAIL, "the timed read() returned %zd of %lld bytes: %s", r, size,
                    r < 0 ? strerror(errno) : "short read");
            d_read = (int64_t)(b - a);
            if (lseek(fd, 0, SEEK_SET) != 0) die(EXIT_FAIL, "lseek failed: %s", strerror(errno));
        }
        a = clk_start();
        inject_delay();
        r = write(fd, wbuf, (size_t)size);
        b = clk_end();
        if (r != (ssize_t)size)
            die(EXIT_FAIL, "the timed write() returned %zd of %lld bytes: %s", r, size,
                r < 0 ? strerror(errno) : "short write (disk full?)");
        d_write = (int64_t)(b - a);
        if (do_fsync) {
            a = clk_start();
            inject_delay();
            int fr = fsync(fd);
            b = clk_end();
            if (fr != 0) die(EXIT_FAIL, "the timed fsync() failed: %s", strerror(errno));
            d_fsync = (int64_t)(b - a);
        }
        if (!rw) {
            if (lseek(fd, 0, SEEK_SET) != 0) die(EXIT_FAIL, "lseek failed: %s", strerror(errno));
            a = clk_start();
            inject_delay();
            r = read(fd, rbuf, (size_t)size);
            b = clk_end();
            if (r != (ssize_t)size)
                die(EXIT_FAIL, "the timed read() returned %zd of %lld bytes: %s", r, size,
                    r < 0 ? strerror(errno) : "short read");
            d_read = (int64_t)(b - a);
        }
        a = clk_start();
        inject_delay();
        int cr = close(fd);
        b = clk_end();
        if (cr != 0) die(EXIT_FAIL, "the timed close() failed: %s", strerror(errno));
        d_close = (int64_t)(b - a);
        if (i >= warm) {
            uint64_t k = i - warm;
            if (i == warm) t0 = it_start;
            ctx->t_start[k] = (int64_t)(it_start - t0);
            c_open->data[k] = d_open;
            c_write->data[k] = d_write;
            if (c_fsync) c_fsync->data[k] = d_fsync;
            c_read->data[k] = d_read;
            c_close->data[k] = d_close;
        }
        progress_set(ctx, i + 1);
    }
    thread_usage_now(&u1);
    ctx->t0 = t0;
    ctx->nroles = 1;
    ctx->roles[0].role = "main";
    thread_usage_delta(&ctx->roles[0].u, &u0, &u1);
    /* a cold page cache blocks and may fault in the timed calls; a warm one should not */
    ctx->faults_expected = !!strcmp(cache, "warm");
    if (dropfd >= 0) close(dropfd);
    unlink(g_path);
    free(wbuf);
    free(rbuf);

    struct fsinfo fi;
    int have = fsinfo_for(dir, &fi) == 0;
    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "dir", dir);
    jb_bool(j, "dir_is_private_temporary", !*param(ctx, "dir")->s);
    jb_str(j, "path", g_path);
    jb_obj(j, "filesystem");
    jb_str(j, "type", have ? fi.fstype : NULL);
    jb_str(j, "source", have ? fi.source : NULL);
    jb_str(j, "mountpoint", have ? fi.mountpoint : NULL);
    jb_str(j, "options", have ? fi.options : NULL);
    char magic[32];
    snprintf(magic, sizeof magic, "0x%llx", fi.magic);
    jb_str(j, "statfs_magic", magic);
    jb_end_obj(j);
    jb_int(j, "size_bytes", size);
    jb_str(j, "cache", cache);
    jb_int(j, "open_flags", flags);
    jb_str(j, "timed_region", "each system call alone, between two clock reads; the "
                              "preparation (sync, drop_caches, fadvise) and lseek are not timed");
    jb_str(j, "note", rw ? "read comes first, so it sees the cache state the preparation left"
                         : "write then read: the read is served from the page cache that the "
                           "write just filled, unless cache=direct");
    jb_end_obj(j);
    if (*param(ctx, "dir")->s == 0) {
        /* the private directory is removed by the clean-up list at exit */
    }
}

const struct bench bench_file = {
    .name = "file",
    .summary = "open / write / read / close of a file, per call, warm or cold page cache",
    .params = file_params,
    .nparams = sizeof file_params / sizeof file_params[0],
    .columns = file_columns,
    .ncolumns = 5,
    .needs = "root for cache=drop",
    .run = run_file,
    .default_n = 10000,
    .default_n_for = file_default_n,
    .default_n_note = "200 when cache=drop",
    .kind = "file",
};
