/* latscope-probe on Windows: the output (-o), as core/output.c does it on POSIX systems: the
 * samples are written into a temporary of an unpredictable name in -o's directory, created
 * only if no such file exists (CREATE_NEW), then renamed with MoveFileEx without
 * MOVEFILE_REPLACE_EXISTING, which never replaces a file that appeared at -o meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <string.h>

#include "core/bench.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

static char out_dir[MAX_PATH], out_full[MAX_PATH + 8], out_tmp[MAX_PATH + 64];
static const char *out_path;
static int out_fd = -1, out_handle = -1;

static const char *last_error(void) {
    static char buf[256];
    DWORD e = GetLastError();
    if (!FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0,
                        buf, sizeof buf, NULL))
        snprintf(buf, sizeof buf, "error %lu", e);
    for (char *p = buf; *p; p++)
        if (*p == '\r' || *p == '\n') *p = ' ';
    for (size_t n = strlen(buf); n && (buf[n - 1] == ' ' || buf[n - 1] == '.'); n--) buf[n - 1] = 0;
    return buf;
}

/* -o's directory and name; exits 2 for a name that is no file's, a directory that is not
 * one, or a file that exists. */
static void open_dir(const char *out) {
    const char *slash = strrchr(out, '/'), *bslash = strrchr(out, '\\');
    if (bslash && (!slash || bslash > slash)) slash = bslash;
    const char *name = slash ? slash + 1 : out;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        die(EXIT_BADINPUT, "-o %s: give the name of a file to write, not a directory", out);
    if (!slash)
        snprintf(out_dir, sizeof out_dir, ".");
    else if (slash == out)
        snprintf(out_dir, sizeof out_dir, "\\");
    else if ((size_t)(slash - out) >= sizeof out_dir)
        die(EXIT_BADINPUT, "-o %s: the path is too long", out);
    else
        snprintf(out_dir, sizeof out_dir, "%.*s", (int)(slash - out), out);
    if (strlen(out) >= sizeof out_full) die(EXIT_BADINPUT, "-o %s: the path is too long", out);
    snprintf(out_full, sizeof out_full, "%s", out);
    out_path = out;
    DWORD a = GetFileAttributesA(out_dir);
    if (a == INVALID_FILE_ATTRIBUTES)
        die(EXIT_BADINPUT, "-o %s: the directory %s: %s", out, out_dir, last_error());
    if (!(a & FILE_ATTRIBUTE_DIRECTORY))
        die(EXIT_BADINPUT, "-o %s: %s is not a directory", out, out_dir);
    if (GetFileAttributesA(out) != INVALID_FILE_ATTRIBUTES ||
        GetLastError() != ERROR_FILE_NOT_FOUND)
        die(EXIT_BADINPUT, "-o %s: the file exists; latscope-probe never overwrites results",
            out);
}

/* A new file of an unpredictable name beside -o (CREATE_NEW: never an existing one). */
static HANDLE create_tmp(const char *out, DWORD flags) {
    HANDLE h = INVALID_HANDLE_VALUE;
    for (int attempt = 0; attempt < 5 && h == INVALID_HANDLE_VALUE; attempt++) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(out_tmp, sizeof out_tmp, "%s.tmp.%s", out_full, rnd);
        h = CreateFileA(out_tmp, GENERIC_WRITE | DELETE, 0, NULL, CREATE_NEW, flags, NULL);
        if (h == INVALID_HANDLE_VALUE && GetLastError() != ERROR_FILE_EXISTS) break;
    }
    if (h == INVALID_HANDLE_VALUE) {
        DWORD e = GetLastError();
        if (e == ERROR_ACCESS_DENIED || e == ERROR_WRITE_PROTECT)
            die(EXIT_BADINPUT, "-o %s: the directory %s is not writable (%s)", out, out_dir,
                last_error());
        die(EXIT_BADINPUT, "-o %s: cannot create a file in %s: %s", out, out_dir, last_error());
    }
    return h;
}

void output_check(const char *out) {
    open_dir(out);
    CloseHandle(create_tmp(out, FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE));
}

static void remove_tmp(void *arg) {
    (void)arg;
    if (out_fd >= 0) {
        close(out_fd);
        out_fd = -1;
    }
    DeleteFileA(out_tmp);
}

void output_begin(const char *out) {
    open_dir(out);
    HANDLE h = create_tmp(out, FILE_ATTRIBUTE_NORMAL);
    out_fd = _open_osfhandle((intptr_t)h, _O_BINARY);
    if (out_fd < 0) die(EXIT_FAIL, "cannot write the sample file %s", out);
    _setmode(out_fd, _O_BINARY); /* bytes as written: never \r\n for \n */
    out_handle = cleanup_push(remove_tmp, NULL);
}

int output_fd(void) { return out_fd; }

void output_commit(void) {
    if (_commit(out_fd) != 0)
        die(EXIT_FAIL, "cannot write the sample file %s: %s", out_path, strerror(errno));
    if (close(out_fd) != 0)
        die(EXIT_FAIL, "cannot write the sample file %s: %s", out_path, strerror(errno));
    out_fd = -1;
    if (!MoveFileExA(out_tmp, out_full, MOVEFILE_WRITE_THROUGH)) {
        DWORD e = GetLastError();
        if (e == ERROR_ALREADY_EXISTS || e == ERROR_FILE_EXISTS)
            die(EXIT_FAIL, "-o %s: a file appeared there during the run; latscope-probe never "
                "replaces one, so the samples were discarded", out_path);
        die(EXIT_FAIL, "cannot rename the sample file to %s: %s", out_path, last_error());
    }
    cleanup_cancel(out_handle);
}
