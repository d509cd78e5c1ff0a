/* latscope-probe on Windows: CreateFile / WriteFile / ReadFile / CloseHandle (and
 * FlushFileBuffers) per call, as lab report 001 measured them, buffered or with
 * FILE_FLAG_NO_BUFFERING|FILE_FLAG_WRITE_THROUGH (the cold variant).  The parameters and
 * columns are those of the Linux file benchmark (bench/file.c) where they correspond. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/file.h"
#include "core/bench.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#define SECTOR 4096 /* NO_BUFFERING: sizes and buffers aligned to it (a multiple of any sector) */

static const char *const cache_choices[] = {"warm", "direct", NULL};

static const struct pdef file_params[] = {
    {"dir", P_PATH, "", NULL,
     "directory for the test file (default: a private temporary directory under %TEMP%); "
     "its volume and file system are recorded",
     NULL, 0, 0, NULL},
    FILE_PARAM_FILE,
    FILE_PARAM_SIZE,
    {"cache", P_ENUM, "warm", NULL,
     "warm: the file cache as it is; direct: FILE_FLAG_NO_BUFFERING|FILE_FLAG_WRITE_THROUGH "
     "(no file cache, every write to the disk), aligned buffers, size a multiple of 4096",
     cache_choices, 0, 0, NULL},
    {"open", P_ENUM, "create", NULL,
     "create: CreateFileA with CREATE_ALWAYS (the file emptied every iteration); existing: "
     "OPEN_EXISTING, a file written beforehand, not truncated",
     open_choices, 0, 0, NULL},
    {"fsync", P_BOOL, "false", NULL,
     "also time FlushFileBuffers() after the write, as its own column", NULL, 0, 0, NULL},
    {"order", P_ENUM, "wr", NULL,
     "wr: write, SetFilePointer (not timed), read - the read then hits the file cache just "
     "written; rw: read first (needs open=existing)",
     order_choices, 0, 0, NULL},
    FILE_PARAM_CPU,
};

static const struct coldef file_columns[] = {
    {"open", "CreateFileA() of the test file", "call", NULL},
    {"write", "WriteFile() of size bytes at offset 0", "call", NULL},
    {"fsync", "FlushFileBuffers() after the write", "call", "fsync=true"},
    {"read", "ReadFile() of size bytes at offset 0 (after an untimed SetFilePointer)", "call",
     NULL},
    {"close", "CloseHandle() of the file", "call", NULL},
};

static int file_check(const struct bench *b, const struct pval *pv, char *err, size_t errlen) {
    const char *dir = param_of(b, pv, "dir")->s, *fname = param_of(b, pv, "file")->s;
    int existing = !strcmp(param_of(b, pv, "open")->s, "existing");
    if (!strcmp(param_of(b, pv, "order")->s, "rw") && !existing) {
        snprintf(err, errlen, "order=rw needs open=existing (a truncated file has nothing to "
                 "read)");
        return EXIT_BADINPUT;
    }
    if (!strcmp(param_of(b, pv, "cache")->s, "direct") && param_of(b, pv, "size")->i % SECTOR) {
        snprintf(err, errlen, "cache=direct needs size to be a multiple of %d bytes "
                 "(FILE_FLAG_NO_BUFFERING reads and writes whole sectors)", SECTOR);
        return EXIT_BADINPUT;
    }
    if (strpbrk(fname, "/\\:")) {
        snprintf(err, errlen, "file=%s: give a plain name; put the directory in dir=", fname);
        return EXIT_BADINPUT;
    }
    int code = cpu_check((int)param_of(b, pv, "cpu")->i, err, errlen);
    if (code) return code;
    if (*dir) {
        DWORD a = GetFileAttributesA(dir);
        if (a == INVALID_FILE_ATTRIBUTES) {
            snprintf(err, errlen, "dir=%s does not exist", dir);
            return EXIT_BADINPUT;
        }
        if (!(a & FILE_ATTRIBUTE_DIRECTORY)) {
            snprintf(err, errlen, "dir=%s is not a directory", dir);
            return EXIT_BADINPUT;
        }
    }
    return 0;
}

/* The test file and the private directory, removed on every path (the clean-up list). */
static char g_path[MAX_PATH + 300], g_dir[MAX_PATH + 64];
static int g_made_dir;
static void remove_file(void *arg) {
    (void)arg;
    DeleteFileA(g_path);
}
static void remove_dir(void *arg) {
    (void)arg;
    if (g_made_dir) RemoveDirectoryA(g_dir);
}

/* dir=, or a new private directory of an unpredictable name under %TEMP%. */
static void file_dir(const char *dir) {
    if (*dir) {
        snprintf(g_dir, sizeof g_dir, "%s", dir);
        return;
    }
    char base[MAX_PATH];
    DWORD n = GetTempPathA(sizeof base, base);
    if (!n || n >= sizeof base) die(EXIT_UNSUPPORTED, "no temporary directory (%%TEMP%%)");
    for (int attempt = 0; attempt < 5 && !g_made_dir; attempt++) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(g_dir, sizeof g_dir, "%slatscope-%d-%s", base, (int)getpid(), rnd);
        if (CreateDirectoryA(g_dir, NULL)) g_made_dir = 1;
        else if (GetLastError() != ERROR_ALREADY_EXISTS) break;
    }
    if (!g_made_dir)
        die(EXIT_UNSUPPORTED, "cannot create a temporary directory in %s (error %lu)", base,
            GetLastError());
    cleanup_push(remove_dir, NULL);
}

/* The file's identity (volume and index), to know it again. */
static int same_file(HANDLE h, const BY_HANDLE_FILE_INFORMATION *ref) {
    BY_HANDLE_FILE_INFORMATION fi;
    return GetFileInformationByHandle(h, &fi) &&
           fi.dwVolumeSerialNumber == ref->dwVolumeSerialNumber &&
           fi.nFileIndexHigh == ref->nFileIndexHigh && fi.nFileIndexLow == ref->nFileIndexLow;
}

static inline int64_t timed_read(HANDLE h, char *rbuf, long long size) {
    DWORD r = 0;
    uint64_t a = clk_start();
    inject_delay();
    BOOL ok = ReadFile(h, rbuf, (DWORD)size, &r, NULL);
    uint64_t b = clk_end();
    if (!ok || r != (DWORD)size)
        die(EXIT_FAIL, "the timed ReadFile() returned %lu of %lld bytes (error %lu)", r, size,
            ok ? 0 : GetLastError());
    return (int64_t)(b - a);
}

static void rewind_file(HANDLE h) {
    if (SetFilePointer(h, 0, NULL, FILE_BEGIN) == INVALID_SET_FILE_POINTER)
        die(EXIT_FAIL, "SetFilePointer failed (error %lu)", GetLastError());
}

static void run_file(struct runctx *ctx) {
    const char *fname = param(ctx, "file")->s;
    const char *cache = param(ctx, "cache")->s;
    long long size = param(ctx, "size")->i;
    int existing = !strcmp(param(ctx, "open")->s, "existing");
    int do_flush = (int)param(ctx, "fsync")->i;
    int rw = !strcmp(param(ctx, "order")->s, "rw");
    int direct = !strcmp(cache, "direct");
    pin_or_die((int)param(ctx, "cpu")->i);
    file_dir(param(ctx, "dir")->s);
    char defname[64];
    if (!*fname) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(defname, sizeof defname, "latscope-%d-%s.dat", (int)getpid(), rnd);
        fname = defname;
    }
    snprintf(g_path, sizeof g_path, "%s\\%s", g_dir, fname);
    plat_fsinfo(g_dir, &ctx->fs);
    ctx->have_fs = 1;

    size_t alloc = ((size_t)size + SECTOR - 1) & ~(size_t)(SECTOR - 1);
    unsigned char *wbuf = _aligned_malloc(alloc, SECTOR), *rbuf = _aligned_malloc(alloc, SECTOR);
    if (!wbuf || !rbuf) die(EXIT_FAIL, "out of memory for %lld-byte buffers", size);
    for (size_t i = 0; i < alloc; i++) wbuf[i] = (unsigned char)(i * 31 + 7);
    memset(rbuf, 0, alloc);

    /* the file, made by us (CREATE_NEW: never over an existing file), written once */
    HANDLE h = CreateFileA(g_path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_NEW,
                           FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_FILE_EXISTS)
            die(EXIT_BADINPUT, "%s exists; latscope will not overwrite it: remove it or choose "
                "another file=", g_path);
        die(e == ERROR_ACCESS_DENIED || e == ERROR_WRITE_PROTECT ? EXIT_UNSUPPORTED
                                                                 : EXIT_BADINPUT,
            "cannot create %s (error %lu)", g_path, e);
    }
    int file_h = cleanup_push(remove_file, NULL);
    BY_HANDLE_FILE_INFORMATION made;
    DWORD w = 0;
    if (!GetFileInformationByHandle(h, &made) || !WriteFile(h, wbuf, (DWORD)size, &w, NULL) ||
        w != (DWORD)size || !FlushFileBuffers(h))
        die(EXIT_FAIL, "cannot write %lld bytes to %s (error %lu)", size, g_path,
            GetLastError());
    CloseHandle(h);

    DWORD disposition = existing ? OPEN_EXISTING : CREATE_ALWAYS;
    /* OPEN_REPARSE_POINT: a link put in the file's place is opened itself, never followed
     * (O_NOFOLLOW on Linux), so CREATE_ALWAYS never empties another file */
    DWORD flags = FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT |
                  (direct ? FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH : 0);
    DWORD access = GENERIC_READ | GENERIC_WRITE;

    struct column *c_open = add_column(ctx, "open", file_columns[0].desc, "call", 0);
    struct column *c_write = NULL, *c_flush = NULL, *c_read = NULL;
    if (rw) c_read = add_column(ctx, "read", file_columns[3].desc, "call", 0);
    c_write = add_column(ctx, "write", file_columns[1].desc, "call", 0);
    if (do_flush) c_flush = add_column(ctx, "fsync", file_columns[2].desc, "call", 0);
    if (!rw) c_read = add_column(ctx, "read", file_columns[3].desc, "call", 0);
    struct column *c_close = add_column(ctx, "close", file_columns[4].desc, "call", 0);
    ctx->t_start = alloc_samples((size_t)ctx->n);

    uint64_t total = (uint64_t)(ctx->n + ctx->warmup), warm = (uint64_t)ctx->warmup, t0 = 0;
    touch_stack();
    struct thread_usage u0 = {0};
    for (uint64_t i = 0; i < total; i++) {
        stop_if_asked();
        if (i == warm) plat_thread_usage(&u0);
        int64_t d_open, d_write, d_flush = 0, d_read = 0, d_close;
        uint64_t a = clk_start();
        inject_delay();
        h = CreateFileA(g_path, access, FILE_SHARE_READ, NULL, disposition, flags, NULL);
        uint64_t b = clk_end();
        if (h == INVALID_HANDLE_VALUE)
            die(EXIT_FAIL, "the timed CreateFileA() of %s failed (error %lu)", g_path,
                GetLastError());
        d_open = (int64_t)(b - a);
        /* untimed: still the file made (CREATE_ALWAYS keeps the file, emptied) */
        if (!same_file(h, &made))
            die(EXIT_FAIL, "the test file %s was replaced during the run; nothing was written "
                "to the replacement", g_path);
        uint64_t it_start = a;
        if (rw) {
            d_read = timed_read(h, (char *)rbuf, size);
            rewind_file(h);
        }
        a = clk_start();
        inject_delay();
        BOOL ok = WriteFile(h, wbuf, (DWORD)size, &w, NULL);
        b = clk_end();
        if (!ok || w != (DWORD)size)
            die(EXIT_FAIL, "the timed WriteFile() wrote %lu of %lld bytes (error %lu)", w, size,
                ok ? 0 : GetLastError());
        d_write = (int64_t)(b - a);
        if (do_flush) {
            a = clk_start();
            inject_delay();
            ok = FlushFileBuffers(h);
            b = clk_end();
            if (!ok) die(EXIT_FAIL, "the timed FlushFileBuffers() failed (error %lu)",
                         GetLastError());
            d_flush = (int64_t)(b - a);
        }
        if (!rw) {
            rewind_file(h);
            d_read = timed_read(h, (char *)rbuf, size);
        }
        a = clk_start();
        inject_delay();
        ok = CloseHandle(h);
        b = clk_end();
        if (!ok) die(EXIT_FAIL, "the timed CloseHandle() failed (error %lu)", GetLastError());
        d_close = (int64_t)(b - a);
        if (i >= warm) {
            uint64_t k = i - warm;
            if (i == warm) t0 = it_start;
            ctx->t_start[k] = (int64_t)(it_start - t0);
            c_open->data[k] = d_open;
            c_write->data[k] = d_write;
            if (c_flush) c_flush->data[k] = d_flush;
            c_read->data[k] = d_read;
            c_close->data[k] = d_close;
        }
        progress_set(ctx, i + 1);
    }
    timed_loop_end(ctx, t0, 1, "main", &u0);
    cleanup_now(file_h);
    _aligned_free(wbuf);
    _aligned_free(rbuf);

    struct jbuf *j = &ctx->meta;
    jb_init(j);
    jb_obj(j, NULL);
    jb_str(j, "dir", g_dir);
    jb_bool(j, "dir_is_private_temporary", g_made_dir);
    jb_str(j, "path", g_path);
    jb_int(j, "size_bytes", size);
    jb_str(j, "cache", cache);
    jb_int(j, "open_flags", (long long)flags);
    {
        char names[240];
        snprintf(names, sizeof names, "GENERIC_READ|GENERIC_WRITE, FILE_SHARE_READ, %s, "
                 "FILE_ATTRIBUTE_NORMAL|FILE_FLAG_OPEN_REPARSE_POINT%s",
                 existing ? "OPEN_EXISTING" : "CREATE_ALWAYS",
                 direct ? "|FILE_FLAG_NO_BUFFERING|FILE_FLAG_WRITE_THROUGH" : "");
        jb_str(j, "open_flags_names", names);
    }
    jb_str(j, "timed_region", "each Win32 call alone, between two clock reads; "
                              "SetFilePointer and the check of the file's identity are not "
                              "timed");
    jb_str(j, "note", rw ? "read comes first, so it sees the cache state the last "
                           "iteration left"
                         : "write then read: the read is served from the file cache that the "
                           "write just filled, unless cache=direct");
    jb_end_obj(j);
}

/* report 001's experiment: 4 bytes ("test") into an existing file, buffered */
static const struct scenario file_scenarios[] = {
    {"file", "cache=warm", 2000, 100, 1, "CreateFile/WriteFile/ReadFile/CloseHandle, cached"},
    {"file-report001", "open=existing size=4", 2000, 100, 0,
     "lab report 001: OPEN_EXISTING, 4 bytes written and read"},
    {"file-direct", "cache=direct", 2000, 100, 1,
     "FILE_FLAG_NO_BUFFERING|FILE_FLAG_WRITE_THROUGH: every write reaches the disk"},
};

const struct bench bench_file = {
    .name = "file",
    .summary = "CreateFile / WriteFile / ReadFile / CloseHandle of a file, per call, cached or "
               "NO_BUFFERING|WRITE_THROUGH",
    .params = file_params,
    .nparams = COUNT(file_params),
    .columns = file_columns,
    .ncolumns = COUNT(file_columns),
    .check = file_check,
    .run = run_file,
    .default_n = 10000,
    .kind = "file",
    .scenarios = file_scenarios,
    .nscenarios = COUNT(file_scenarios),
    .display = {.roles = {"main"},
                .faults_expected = {"cache", NULL, "warm", NULL},
                .lines = {"file: {bench.path} on {env.filesystem.fstype} "
                          "({env.filesystem.mount_point}), {bench.size_bytes} bytes, "
                          "cache={bench.cache}"},
                .dim_lines = {"{bench.note}"}},
};
