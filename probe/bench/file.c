/* latscope-probe: open / write / read / close (and fsync) per call, warm or cold cache. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/file.h"
#include "core/bench.h"

static const char *const cache_choices[] = {"warm", "drop", "fadvise", "direct", NULL};

static const struct pdef file_params[] = {
    {"dir", P_PATH, "", NULL,
     "directory for the test file (default: a private temporary directory under $TMPDIR or "
     "/tmp); its filesystem type and mount are recorded",
     NULL, 0, 0, NULL},
    FILE_PARAM_FILE,
    FILE_PARAM_SIZE,
    {"cache", P_ENUM, "warm", NULL,
     "warm: page cache as it is; drop: sync + drop_caches=3 before every iteration (root); "
     "fadvise: fdatasync + posix_fadvise(DONTNEED) on the file before every iteration; "
     "direct: O_DIRECT, aligned buffers, size a multiple of 4096",
     cache_choices, 0, 0, "drop"},
    {"open", P_ENUM, "create", NULL,
     "create: open with O_CREAT|O_TRUNC, a new file every iteration; existing: open a file "
     "written beforehand, without truncating it",
     open_choices, 0, 0, NULL},
    {"fsync", P_BOOL, "false", NULL, "also time fsync() after the write, as its own column",
     NULL, 0, 0, NULL},
    {"pause", P_INT, "0", "us",
     "idle this long (nanosleep, untimed) before every iteration, the cache left as it is: the "
     "control that tells a pause from a sync or a drop (report 000's cold loop paused)",
     NULL, 0, 1000000, NULL},
    {"order", P_ENUM, "wr", NULL,
     "wr: write, lseek (not timed), read - the read then hits the page cache just written; "
     "rw: read first (needs open=existing), so a cold cache reaches the read",
     order_choices, 0, 0, NULL},
    FILE_PARAM_CPU,
};

static const struct coldef file_columns[] = {
    {"open", "openat() of the test file, relative to the directory held open", "call", NULL},
    {"write", "write() of size bytes at offset 0", "call", NULL},
    {"fsync", "fsync() after the write", "call", "fsync=true"},
    {"read", "read() of size bytes at offset 0 (after an untimed lseek)", "call", NULL},
    {"close", "close() of the file", "call", NULL},
};

/* The control of cache=drop, open (a descriptor), or the one line and exit code why not. */
static int drop_open(char *err, size_t errlen, int *code) {
    int fd = plat_drop_caches_open();
    if (fd >= 0) return fd;
    *code = EXIT_UNSUPPORTED;
    if (errno == EACCES || errno == EPERM)
        snprintf(err, errlen, "cache=drop needs root: it writes /proc/sys/vm/drop_caches before "
                 "every iteration; run as root, or use cache=fadvise (no root needed)");
    else
        snprintf(err, errlen, "cache=drop: cannot open /proc/sys/vm/drop_caches (%s; a "
                 "container?); use cache=fadvise", strerror(errno));
    return -1;
}

static int file_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen) {
    const char *dir = param_of(b, pv, "dir")->s, *fname = param_of(b, pv, "file")->s;
    const char *cache = param_of(b, pv, "cache")->s;
    int existing = !strcmp(param_of(b, pv, "open")->s, "existing");
    int rw = !strcmp(param_of(b, pv, "order")->s, "rw");
    if (rw && !existing) {
        snprintf(err, errlen, "order=rw needs open=existing (a truncated file has nothing to "
                 "read)");
        return EXIT_BADINPUT;
    }
    if (!strcmp(cache, "direct") && param_of(b, pv, "size")->i % 4096) {
        snprintf(err, errlen, "cache=direct needs size to be a multiple of 4096 bytes "
                 "(O_DIRECT)");
        return EXIT_BADINPUT;
    }
    if (strchr(fname, '/')) {
        snprintf(err, errlen, "file=%s: give a plain name; put the directory in dir=", fname);
        return EXIT_BADINPUT;
    }
    int code = cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
    if (code) return code;
    if (!strcmp(cache, "drop")) {
        int fd = drop_open(err, errlen, &code);
        if (fd < 0) return code;
        close(fd);
    }
    if (*dir) {
        struct stat st;
        if (stat(dir, &st) != 0) {
            if (errno == ENOENT)
                snprintf(err, errlen, "dir=%s does not exist (%s)", dir, strerror(errno));
            else
                snprintf(err, errlen, "dir=%s: %s", dir, strerror(errno));
            return EXIT_BADINPUT;
        }
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "dir=%s is not a directory", dir);
            return EXIT_BADINPUT;
        }
        if (access(dir, W_OK) != 0) {
            int e = errno;
            snprintf(err, errlen, "dir=%s is not writable (%s); choose a directory you can "
                     "write to", dir, strerror(e));
            return e == EROFS ? EXIT_UNSUPPORTED : EXIT_BADINPUT;
        }
    }
    return 0;
}

static void drop_caches(int fd) {
    if (plat_drop_caches(fd) != 0)
        die(EXIT_FAIL, "writing /proc/sys/vm/drop_caches failed: %s", strerror(errno));
}

/* The test file's directory, held open for the whole run: every open, create and unlink of
 * the test file is relative to this descriptor (openat, unlinkat), so that a dir= swapped for
 * a symbolic link (or renamed) during the run redirects nothing. */
struct file_dir {
    int fd;             /* dir=, or the private directory */
    char path[PATH_MAX]; /* as given (or made), for messages and the record */
    int parent;         /* the private directory's parent ($TMPDIR or /tmp), else -1 */
    char name[64];      /* the private directory's name in it */
};

/* Remove an entry of a held directory if it is still the one made (device and inode): never
 * through a link, never someone else's file put in its place.  Its record is released. */
struct made_entry {
    int dirfd, isdir, rec;
    dev_t dev;
    ino_t ino;
    char name[NAME_MAX + 1];
};
static void remove_made(void *arg) {
    struct made_entry *m = arg;
    struct stat st;
    int gone = fstatat(m->dirfd, m->name, &st, AT_SYMLINK_NOFOLLOW) != 0;
    if (!gone && st.st_dev == m->dev && st.st_ino == m->ino)
        gone = unlinkat(m->dirfd, m->name, m->isdir ? AT_REMOVEDIR : 0) == 0;
    if (gone) leftovers_release(m->rec);
}
static struct made_entry *made(int dirfd, const char *dirpath, const char *name, int isdir,
                               int *handle) {
    struct made_entry *m = xcalloc(1, sizeof *m);
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        die(EXIT_FAIL, "cannot stat %s/%s: %s", dirpath, name, strerror(errno));
    m->dirfd = dirfd;
    m->isdir = isdir;
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->rec = -1;
    *handle = cleanup_push(remove_made, m);
    m->rec = leftovers_entry(isdir ? LO_DIR : LO_FILE, dirfd, dirpath, name);
    return m;
}

/* Open dir= (a link given there is followed, once, now); without dir=, make a private
 * directory of an unpredictable name in $TMPDIR or /tmp, removed by the clean-up list. */
static void file_dir_open(struct file_dir *g_dir, const char *dir) {
    g_dir->fd = g_dir->parent = -1;
    if (*dir) {
        snprintf(g_dir->path, sizeof g_dir->path, "%s", dir);
        g_dir->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (g_dir->fd < 0)
            die(errno == ENOENT || errno == ENOTDIR ? EXIT_BADINPUT : EXIT_UNSUPPORTED,
                "dir=%s: %s", dir, strerror(errno));
        return;
    }
    const char *t = getenv("TMPDIR");
    const char *base = t && *t ? t : "/tmp";
    g_dir->parent = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    for (int attempt = 0; g_dir->parent >= 0 && attempt < 5; attempt++) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(g_dir->name, sizeof g_dir->name, "latscope-%d-%s", (int)getpid(), rnd);
        if (mkdirat(g_dir->parent, g_dir->name, 0700) == 0) break;
        e = errno;
        g_dir->name[0] = 0;
        if (e != EEXIST) break;
    }
    if (g_dir->parent < 0 || !g_dir->name[0])
        die(EXIT_UNSUPPORTED, "cannot create a temporary directory in %s: %s", base,
            strerror(e));
    int h;
    made(g_dir->parent, base, g_dir->name, 1, &h);
    snprintf(g_dir->path, sizeof g_dir->path, "%.3000s/%s", base, g_dir->name);
    g_dir->fd = openat(g_dir->parent, g_dir->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (g_dir->fd < 0)
        die(EXIT_FAIL, "cannot open the temporary directory %s: %s", g_dir->path,
            strerror(errno));
}

/* One timed read() of the whole file from its start (the caller seeks), in clock ticks. */
static inline int64_t timed_read(int fd, char *rbuf, long long size) {
    uint64_t a = clk_start();
    inject_delay();
    ssize_t r = read(fd, rbuf, (size_t)size);
    uint64_t b = clk_end();
    if (r != (ssize_t)size)
        die(EXIT_FAIL, "the timed read() returned %zd of %lld bytes: %s", r, size,
            r < 0 ? strerror(errno) : "short read");
    return (int64_t)(b - a);
}

/* The columns in the order the calls are made (indices into file_columns): open, then read
 * first with order=rw, write, fsync with fsync=true, read (order=wr), close. */
enum { FC_OPEN, FC_WRITE, FC_FSYNC, FC_READ, FC_CLOSE };
static int file_columns_of(const struct bench *b, const struct pval *pv, int idx[MAX_COLS]) {
    int rw = !strcmp(param_of(b, pv, "order")->s, "rw"), n = 0;
    idx[n++] = FC_OPEN;
    if (rw) idx[n++] = FC_READ;
    idx[n++] = FC_WRITE;
    if (param_of(b, pv, "fsync")->i) idx[n++] = FC_FSYNC;
    if (!rw) idx[n++] = FC_READ;
    idx[n++] = FC_CLOSE;
    return n;
}

/* A run: the parameters, the directory held open, the test file made, the buffers. */
struct file_run {
    struct runctx *ctx;
    struct file_dir dir;
    const char *fname, *cache;
    char defname[64];
    char path[PATH_MAX + NAME_MAX + 2];
    long long size;
    int existing, do_fsync, rw, cpu, drop, fadv, direct, flags, dropfd, file_h;
    long long pause_us;
    struct made_entry *tf;
    void *wbuf, *rbuf;
    struct column *col[5]; /* by FC_*: NULL for fsync without fsync=true */
    int64_t sink[5];        /* where warm-up and discarded iterations go */
};

/* One iteration: the untimed preparation (drop_caches, fadvise), then each call between two
 * clock reads, into d[FC_*]; *start: the open's start read (the iteration's start). */
static inline void file_iteration(struct file_run *r, int64_t *d, uint64_t *start) {
    int dfd = r->dir.fd, fd;
    long long size = r->size;
    if (r->pause_us > 0) { /* untimed: idle, the cache as it is */
        struct timespec ts = {r->pause_us / 1000000, (r->pause_us % 1000000) * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    if (r->drop) drop_caches(r->dropfd);
    if (r->fadv) {
        int f2 = openat(dfd, r->fname, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (f2 < 0 || fdatasync(f2) != 0 || posix_fadvise(f2, 0, 0, POSIX_FADV_DONTNEED))
            die(EXIT_FAIL, "fadvise preparation failed: %s", strerror(errno));
        close(f2);
    }
    uint64_t a = clk_start();
    inject_delay();
    fd = openat(dfd, r->fname, r->flags, 0600);
    uint64_t b = clk_end();
    if (fd < 0) die(EXIT_FAIL, "the timed open() of %s failed: %s", r->path, strerror(errno));
    d[FC_OPEN] = (int64_t)(b - a);
    /* untimed: still the file made (someone with write access to dir= could swap in
     * another; no byte is written to it) */
    struct stat fst;
    if (fstat(fd, &fst) != 0 || fst.st_dev != r->tf->dev || fst.st_ino != r->tf->ino)
        die(EXIT_FAIL, "the test file %s was replaced during the run; nothing was written "
            "to the replacement", r->path);
    *start = a;
    ssize_t w;
    if (r->rw) {
        d[FC_READ] = timed_read(fd, r->rbuf, size);
        if (lseek(fd, 0, SEEK_SET) != 0) die(EXIT_FAIL, "lseek failed: %s", strerror(errno));
    }
    a = clk_start();
    inject_delay();
    w = write(fd, r->wbuf, (size_t)size);
    b = clk_end();
    if (w != (ssize_t)size)
        die(EXIT_FAIL, "the timed write() returned %zd of %lld bytes: %s", w, size,
            w < 0 ? strerror(errno) : "short write (disk full?)");
    d[FC_WRITE] = (int64_t)(b - a);
    if (r->do_fsync) {
        a = clk_start();
        inject_delay();
        int fr = fsync(fd);
        b = clk_end();
        if (fr != 0) die(EXIT_FAIL, "the timed fsync() failed: %s", strerror(errno));
        d[FC_FSYNC] = (int64_t)(b - a);
    }
    if (!r->rw) {
        if (lseek(fd, 0, SEEK_SET) != 0) die(EXIT_FAIL, "lseek failed: %s", strerror(errno));
        d[FC_READ] = timed_read(fd, r->rbuf, size);
    }
    a = clk_start();
    inject_delay();
    int cr = close(fd);
    b = clk_end();
    if (cr != 0) die(EXIT_FAIL, "the timed close() failed: %s", strerror(errno));
    d[FC_CLOSE] = (int64_t)(b - a);
}

/* begin: pinned, the directory held open, the test file made (recorded as a leftover until it
 * is removed), the buffers aligned and touched, the columns, the warm-up. */
static void *file_begin(struct runctx *ctx) {
    struct file_run *r = xcalloc(1, sizeof *r);
    r->ctx = ctx;
    r->fname = param(ctx, "file")->s;
    r->cache = param(ctx, "cache")->s;
    r->size = param(ctx, "size")->i;
    r->existing = !strcmp(param(ctx, "open")->s, "existing");
    r->do_fsync = (int)param(ctx, "fsync")->i;
    r->rw = !strcmp(param(ctx, "order")->s, "rw");
    r->cpu = (int)param(ctx, "cpu")->i;
    r->pause_us = param(ctx, "pause")->i;
    r->drop = !strcmp(r->cache, "drop");
    r->fadv = !strcmp(r->cache, "fadvise");
    r->direct = !strcmp(r->cache, "direct");
    long long size = r->size;
    char err[256];
    pin_or_die(r->cpu);
    ctx->cpu = r->cpu;

    int code = 0;
    r->dropfd = -1;
    if (r->drop && (r->dropfd = drop_open(err, sizeof err, &code)) < 0) die(code, "%s", err);
    file_dir_open(&r->dir, param(ctx, "dir")->s);
    const char *dir = r->dir.path;
    int dfd = r->dir.fd;
    /* the default name has a part nobody can guess, so nobody can put anything there first */
    if (!*r->fname) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(r->defname, sizeof r->defname, "latscope-%d-%s.dat", (int)getpid(), rnd);
        r->fname = r->defname;
    }
    const char *fname = r->fname;
    if (strlen(fname) > NAME_MAX) die(EXIT_BADINPUT, "file=%s: the name is too long", fname);
    snprintf(r->path, sizeof r->path, "%s/%s", dir, fname);
    struct stat lst;
    if (fstatat(dfd, fname, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(lst.st_mode))
            die(EXIT_BADINPUT, "%s is a symbolic link; latscope never follows links to its test "
                "file: remove it or choose another file=", r->path);
        die(EXIT_BADINPUT, "%s exists; latscope will not overwrite it: remove it or choose "
            "another file=", r->path);
    }
    /* the file system of dir=, as opened (the environment's "filesystem") */
    plat_fsinfo(dir, &ctx->fs);
    ctx->have_fs = 1;

    /* Aligned, touched buffers. */
    size_t alloc = ((size_t)size + 4095) & ~(size_t)4095;
    if (posix_memalign(&r->wbuf, 4096, alloc) || posix_memalign(&r->rbuf, 4096, alloc))
        die(EXIT_FAIL, "out of memory for %lld-byte buffers", size);
    for (size_t i = 0; i < alloc; i++) ((unsigned char *)r->wbuf)[i] = (unsigned char)(i * 31 + 7);
    memset(r->rbuf, 0, alloc);

    /* Create the file ourselves (never through a link, never over a file), recorded as a
     * leftover until it is removed. */
    int fd = openat(dfd, fname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        die(e == EROFS || e == EACCES || e == EPERM ? EXIT_UNSUPPORTED : EXIT_BADINPUT,
            "cannot create %s: %s", r->path, strerror(e));
    }
    r->tf = made(dfd, dir, fname, 0, &r->file_h);
    if (write(fd, r->wbuf, (size_t)size) != (ssize_t)size)
        die(EXIT_FAIL, "cannot write %lld bytes to %s: %s", size, r->path, strerror(errno));
    if (fsync(fd) != 0 && errno != EINVAL)
        die(EXIT_FAIL, "fsync of %s failed: %s", r->path, strerror(errno));
    close(fd);
    r->flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (r->existing ? 0 : O_CREAT | O_TRUNC);
    if (r->direct) {
        r->flags |= O_DIRECT;
        fd = openat(dfd, fname, r->flags, 0600);
        if (fd < 0) {
            die(EXIT_UNSUPPORTED, "the %s filesystem at %s does not support O_DIRECT "
                "(cache=direct): %s; use cache=fadvise or cache=drop",
                ctx->fs.fstype[0] ? ctx->fs.fstype : "unknown", dir, strerror(errno));
        }
        close(fd);
    }

    /* Columns in the order the calls are made. */
    int idx[MAX_COLS], nc = file_columns_of(ctx->b, ctx->pv, idx);
    for (int k = 0; k < nc; k++)
        r->col[idx[k]] = add_column(ctx, file_columns[idx[k]].name, file_columns[idx[k]].desc,
                                    "call", 0);
    add_t_start(ctx);

    touch_stack();
    uint64_t warm = (uint64_t)ctx->warmup, a;
    for (uint64_t i = 0; i < warm; i++) {
        stop_if_asked();
        file_iteration(r, r->sink, &a);
        progress_set(ctx, i + 1);
    }
    return r;
}

/* A block: `discard` iterations run and dropped, then the recorded ones. */
static void file_block(void *state, uint64_t from, uint64_t count, uint64_t discard) {
    struct file_run *r = state;
    struct runctx *ctx = r->ctx;
    uint64_t done = ctx->progress, a;
    for (uint64_t i = 0; i < discard; i++) {
        stop_if_asked();
        file_iteration(r, r->sink, &a);
        progress_set(ctx, done + i + 1);
    }
    if (!count) return;
    done += discard;
    struct thread_usage u0;
    plat_thread_usage(&u0);
    uint64_t t0 = ctx->t0;
    int need_t0 = !ctx->t0_set;
    int64_t d[5] = {0, 0, 0, 0, 0};
    for (uint64_t i = 0; i < count; i++) {
        stop_if_asked();
        file_iteration(r, d, &a);
        uint64_t k = from + i;
        if (need_t0) {
            t0 = a;
            need_t0 = 0;
        }
        ctx->t_start[k] = (int64_t)(a - t0);
        for (int c = 0; c < 5; c++)
            if (r->col[c]) r->col[c]->data[k] = d[c];
        progress_set(ctx, done + i + 1);
    }
    timed_loop_end(ctx, t0, 1, "main", &u0);
}

/* end: the test file removed from the held directory, the header's "bench" object; the
 * private directory is removed by the clean-up list at exit, the held descriptors close
 * with the process. */
static void file_end(void *state) {
    struct file_run *r = state;
    struct runctx *ctx = r->ctx;
    if (r->dropfd >= 0) close(r->dropfd);
    cleanup_now(r->file_h);
    free(r->wbuf);
    free(r->rbuf);

    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "dir", r->dir.path);
    jb_bool(j, "dir_is_private_temporary", !*param(ctx, "dir")->s);
    jb_str(j, "path", r->path);
    jb_int(j, "size_bytes", r->size);
    jb_str(j, "cache", r->cache);
    jb_int(j, "pause_us", r->pause_us);
    jb_int(j, "open_flags", r->flags);
    {
        /* the flags as a person writes them (the number differs between architectures) */
        char names[160];
        snprintf(names, sizeof names, "O_RDWR|O_NOFOLLOW|O_CLOEXEC%s%s",
                 r->existing ? "" : "|O_CREAT|O_TRUNC", r->direct ? "|O_DIRECT" : "");
        jb_str(j, "open_flags_names", names);
    }
    jb_str(j, "timed_region", "each system call alone, between two clock reads; the "
                              "preparation (sync, drop_caches, fadvise) and lseek are not timed");
    jb_str(j, "note", r->rw ? "read comes first, so it sees the cache state the preparation left"
                            : "write then read: the read is served from the page cache that the "
                              "write just filled, unless cache=direct");
    jb_end_obj(j);
    free(r);
}

static const struct nrule file_n_rules[] = {{{"cache", "drop", NULL, NULL}, 200}};

static const struct scenario file_scenarios[] = {
    {"file", "cache=warm", 2000, 100, 1,
     "open/write/read/close, warm page cache, in $TMPDIR or /tmp"},
    {"file-fadvise", "cache=fadvise", 2000, 100, 1,
     "the file's pages dropped (fdatasync + fadvise DONTNEED) before every iteration"},
};

const struct bench bench_file = {
    .name = "file",
    .summary = "open / write / read / close of a file, per call, warm or cold page cache",
    .params = file_params,
    .nparams = COUNT(file_params),
    .columns = file_columns,
    .ncolumns = COUNT(file_columns),
    .needs = "root for cache=drop",
    .check = file_check,
    .run = bench_run_phases,
    .begin = file_begin,
    .block = file_block,
    .end = file_end,
    .columns_of = file_columns_of,
    .default_n = 10000,
    .n_rules = file_n_rules,
    .n_nrules = COUNT(file_n_rules),
    .default_n_note = "200 when cache=drop",
    .kind = "file",
    .scenarios = file_scenarios,
    .nscenarios = COUNT(file_scenarios),
    /* a cold page cache blocks and may fault in the timed calls; a warm one should not */
    .display = {.roles = {"main"},
                .faults_expected = {"cache", NULL, "warm", NULL},
                .lines = {"file: {bench.path} on {env.filesystem.fstype} "
                          "({env.filesystem.source} at {env.filesystem.mount_point}), "
                          "{bench.size_bytes} bytes, cache={bench.cache}"},
                .dim_lines = {"{bench.note}"}},
};
