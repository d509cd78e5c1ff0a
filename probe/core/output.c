/* latscope-probe: the output (-o): its directory held open from the start, the samples written
 * into a temporary of an unpredictable name made there (O_EXCL), and a rename that never
 * replaces a file, so that nothing at -o (or planted beside it) is ever overwritten or
 * followed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/bench.h"

static int out_dirfd = -1, out_fd = -1, out_handle = -1, out_rec = -1;
static char out_dir[PATH_MAX], out_name[NAME_MAX + 1], out_tmp[NAME_MAX + 1];
static const char *out_path;
static struct stat out_st; /* the temporary's, to know it again */

/* -o's directory and file name; exits 2 for a name that is no file's. */
static void split(const char *out) {
    const char *slash = strrchr(out, '/');
    const char *name = slash ? slash + 1 : out;
    if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
        die(EXIT_BADINPUT, "-o %s: give the name of a file to write, not a directory", out);
    if (strlen(name) > NAME_MAX)
        die(EXIT_BADINPUT, "-o %s: the file name is longer than %d bytes", out, NAME_MAX);
    if (!slash)
        snprintf(out_dir, sizeof out_dir, ".");
    else if (slash == out)
        snprintf(out_dir, sizeof out_dir, "/");
    else if ((size_t)(slash - out) >= sizeof out_dir)
        die(EXIT_BADINPUT, "-o %s: the path is too long", out);
    else
        snprintf(out_dir, sizeof out_dir, "%.*s", (int)(slash - out), out);
    snprintf(out_name, sizeof out_name, "%s", name);
}

/* The directory, opened (a link given there is followed once, now); exits 2 when it cannot
 * be, or when the name is taken. */
static void open_dir(const char *out) {
    split(out);
    out_path = out;
    out_dirfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (out_dirfd < 0) {
        int e = errno;
        if (e == ENOTDIR) die(EXIT_BADINPUT, "-o %s: %s is not a directory", out, out_dir);
        die(EXIT_BADINPUT, "-o %s: the directory %s: %s", out, out_dir, strerror(e));
    }
    struct stat st;
    if (fstatat(out_dirfd, out_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        die(EXIT_BADINPUT, "-o %s: the file exists; latscope-probe never overwrites results",
            out);
}

void output_check(const char *out) {
    open_dir(out);
    if (faccessat(out_dirfd, ".", W_OK, AT_EACCESS) != 0)
        die(EXIT_BADINPUT, "-o %s: the directory %s is not writable (%s)", out, out_dir,
            strerror(errno));
    close(out_dirfd);
    out_dirfd = -1;
}

/* The temporary, removed on every path but the rename: only while it is still ours. */
static void remove_tmp(void *arg) {
    (void)arg;
    struct stat st;
    if (out_dirfd >= 0 && fstatat(out_dirfd, out_tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_dev == out_st.st_dev && st.st_ino == out_st.st_ino)
        unlinkat(out_dirfd, out_tmp, 0);
    leftovers_release(out_rec);
}

void output_begin(const char *out) {
    open_dir(out);
    for (int attempt = 0; attempt < 5 && out_fd < 0; attempt++) {
        char rnd[RANDOM_HEX_LEN + 1];
        random_hex(rnd);
        snprintf(out_tmp, sizeof out_tmp, "%.200s.tmp.%s", out_name, rnd);
        out_fd = openat(out_dirfd, out_tmp,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out_fd < 0 && errno != EEXIST) break;
    }
    if (out_fd < 0) {
        int e = errno;
        if (e == EACCES || e == EPERM || e == EROFS)
            die(EXIT_BADINPUT, "-o %s: the directory %s is not writable (%s)", out, out_dir,
                strerror(e));
        die(EXIT_BADINPUT, "-o %s: cannot create a file in %s: %s", out, out_dir, strerror(e));
    }
    fstat(out_fd, &out_st);
    out_handle = cleanup_push(remove_tmp, NULL);
    if (leftovers_open(out_dirfd, out_name) != 0)
        die(EXIT_BADINPUT, "-o %s: cannot create a file in %s: %s", out, out_dir,
            strerror(errno));
    /* a SIGKILL leaves the temporary: recorded, like everything else it would leave */
    out_rec = leftovers_entry(LO_FILE, out_dirfd, out_dir, out_tmp);
}

int output_fd(void) { return out_fd; }

void output_commit(void) {
    if (fsync(out_fd) != 0 && errno != EINVAL)
        die(EXIT_FAIL, "cannot write the sample file %s: %s", out_path, strerror(errno));
    if (close(out_fd) != 0)
        die(EXIT_FAIL, "cannot write the sample file %s: %s", out_path, strerror(errno));
    out_fd = -1;
    if (plat_rename_noreplace(out_dirfd, out_tmp, out_dirfd, out_name) != 0) {
        if (errno == EEXIST)
            die(EXIT_FAIL, "-o %s: a file appeared there during the run; latscope-probe never "
                "replaces one, so the samples were discarded", out_path);
        die(EXIT_FAIL, "cannot rename the sample file to %s: %s", out_path, strerror(errno));
    }
    cleanup_cancel(out_handle);
    leftovers_release(out_rec);
    fsync(out_dirfd); /* the new name on disk too */
}
