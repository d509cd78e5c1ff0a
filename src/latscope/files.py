"""Writing a file so that it is never seen half-written, and never through a path someone
else could redirect: latscope runs as root.

`atomic_write(target)` gives a binary file that is a fresh temporary in the target's directory
(created with O_CREAT|O_EXCL|O_NOFOLLOW under an unpredictable name, so an existing file or a
symbolic link planted there is never opened), hidden by a leading dot (the store passes over
such names) and ending in ``.tmp``. The target's directory is opened once and the temporary is
made and renamed relative to that descriptor, so a directory swapped for a link meanwhile
cannot move the file elsewhere. When the block ends, the data is flushed and synced to disk,
the file gets the mode a new file would get (0666 less the umask, or ``mode``) and is renamed
over the target in one step; a link at the target is replaced, not followed. With
``replace=False`` the rename refuses a target that exists by then (``renameat2`` with
RENAME_NOREPLACE, else a hard link, which never replaces either): a file that appeared while
the work ran is never replaced. On any failure, an exception or a signal, the temporary is
removed and the target is left as it was. Every writer in latscope goes through it
(`write_bytes`, `write_text` for whole contents).

Destinations a user names (`export --csv`, `report --html`, `plot -o`, ...) follow one policy,
checked by `check_destination` before the long work begins and again by the final rename: an
existing file or symbolic link is replaced only when asked (``--force``; a link is then
replaced itself, never followed), and a directory, FIFO, device or socket is never written to.
A directory a user names for several files (`report --md DIR`) is checked by
`check_directory` and written through `output_directory`: it is created if missing, never
followed when it is a symbolic link, held open, and every file goes into it relative to that
descriptor, under the same policy for each file.

`read_bytes` reads a file a user named or a store holds, with a one-line error for each way
that fails: it refuses what is not a regular file (a FIFO would hang the reader, a device such
as ``/dev/zero`` never ends) and a file above a size limit, checked on the open descriptor
before a byte is read, so neither a swapped path nor a growing file gets past the check.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from .errors import BadInput

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: renameat2 flag: fail with EEXIST where the new name exists (linux/fs.h).
_RENAME_NOREPLACE = 1


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else by setting it back."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temporary(dfd: int, name: str) -> tuple[int, str]:
    """A new file ``.NAME.RANDOM.tmp`` in the directory ``dfd``, opened for writing: O_EXCL
    and O_NOFOLLOW, so nothing that exists there (a file, a link) is ever opened."""
    stem = name[:200]  # the temporary's name stays within NAME_MAX
    for _ in range(100):
        tmp = f".{stem}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dfd
            )
        except FileExistsError:
            continue
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no unused temporary name", name)


@lru_cache(maxsize=1)
def _renameat2() -> Any:
    """libc's renameat2 (glibc 2.28+), or None."""
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError, ImportError):
        return None
    import ctypes

    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def rename_noreplace(dfd: int, src: str, dst: str) -> None:
    """Rename ``src`` to ``dst`` (both in the directory ``dfd``) unless ``dst`` exists, in one
    step: FileExistsError where it does (a file, a directory or a link, never followed)."""
    fn = _renameat2()
    if fn is not None:
        import ctypes

        if fn(dfd, os.fsencode(src), dfd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), dst)
    if stat.S_ISDIR(os.stat(src, dir_fd=dfd, follow_symlinks=False).st_mode):
        # no RENAME_NOREPLACE, and a directory has no hard link: rename it unless dst exists
        # (a race then is one of writers of this directory: the caller's own)
        try:
            os.stat(dst, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(src, dst, src_dir_fd=dfd, dst_dir_fd=dfd)
            return
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
    # where the filesystem has no RENAME_NOREPLACE: link() never replaces what exists either
    os.link(src, dst, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
    os.unlink(src, dir_fd=dfd)


def exists_message(p: Path, st: os.stat_result | None = None) -> str:
    """The one line for a destination that exists: what to do about it."""
    if st is not None and stat.S_ISLNK(st.st_mode):
        return f"{p} exists (a symbolic link); --force replaces it"
    return f"{p} exists; --force replaces it"


@contextlib.contextmanager
def atomic_write(
    target: str | os.PathLike[str],
    mode: int | None = None,
    replace: bool = True,
    dir_fd: int | None = None,
) -> Iterator[BinaryIO]:
    """A binary file whose contents replace ``target`` atomically when the block ends without
    an exception (module docs). ``mode``: the permissions of the new file (default: 0666 less
    the umask, as for any new file). ``replace=False``: BadInput (one line) instead of
    replacing a target that exists when the file is complete. ``dir_fd``: an open directory
    to write into (``target``'s name is taken in it); by default ``target``'s directory."""
    p = Path(target)
    name = p.name
    if not name or name in (".", ".."):
        raise BadInput(f"{target}: give a file name")
    dfd = dir_fd
    if dfd is None:
        dfd = os.open(p.parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        fd, tmp = _temporary(dfd, name)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
                os.fchmod(f.fileno(), mode if mode is not None else 0o666 & ~_umask())
            if replace:
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            else:
                try:
                    rename_noreplace(dfd, tmp, name)
                except FileExistsError:
                    raise BadInput(exists_message(p)) from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        if dir_fd is None:
            os.close(dfd)


def write_bytes(
    target: str | os.PathLike[str],
    data: bytes,
    mode: int | None = None,
    replace: bool = True,
    dir_fd: int | None = None,
) -> Path:
    """Replace ``target`` with ``data`` atomically (`atomic_write`); returns the path."""
    with atomic_write(target, mode, replace, dir_fd) as f:
        f.write(data)
    return Path(target)


def write_text(
    target: str | os.PathLike[str],
    text: str,
    mode: int | None = None,
    replace: bool = True,
    dir_fd: int | None = None,
) -> Path:
    """Replace ``target`` with ``text`` (UTF-8) atomically (`atomic_write`)."""
    return write_bytes(target, text.encode("utf-8"), mode, replace, dir_fd)


# ------------------------------------------------------------------------------ destinations


def _kind(st: os.stat_result) -> str:
    m = st.st_mode
    if stat.S_ISFIFO(m):
        return "a FIFO"
    if stat.S_ISSOCK(m):
        return "a socket"
    if stat.S_ISCHR(m) or stat.S_ISBLK(m):
        return "a device"
    return "not a regular file"


def _lstat(p: Path, dir_fd: int | None = None) -> os.stat_result | None:
    """lstat of ``p`` (in ``dir_fd``), None where nothing is there; BadInput otherwise."""
    try:
        if dir_fd is None:
            return os.lstat(p)
        return os.stat(p.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise BadInput(f"{p.parent} is not a directory") from None
    except OSError as e:
        raise BadInput(f"{p}: {e.strerror or e}") from None


def _writable_parent(p: Path) -> None:
    parent = p.parent
    try:
        st = os.stat(parent)
    except FileNotFoundError:
        raise BadInput(f"{parent} does not exist") from None
    except OSError as e:
        raise BadInput(f"{parent}: {e.strerror or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write in {parent}: permission denied (or a read-only filesystem)")


def _check_file(p: Path, st: os.stat_result | None, force: bool) -> None:
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{p} is a directory; give a file name")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise BadInput(f"{p} is {_kind(st)}; latscope writes only regular files, even with --force")
    if not force:
        raise BadInput(exists_message(p, st))


def check_destination(target: str | os.PathLike[str], force: bool = False) -> Path:
    """Refuse, before any work, a file destination a user named that latscope may not write
    (BadInput, one line): an existing file or symbolic link unless ``force`` (the final rename
    then replaces it: a link itself, never what it points to); a directory, FIFO, device or
    socket even with ``force``; a parent directory that is missing or not writable. Returns
    the path. The write itself (``replace=force``) holds to the same rule if something
    appears meanwhile."""
    p = Path(target)
    if not p.name or p.name in (".", ".."):
        raise BadInput(f"{target}: give a file name")
    _check_file(p, _lstat(p), force)
    _writable_parent(p)
    return p


def check_directory(
    target: str | os.PathLike[str], names: Iterable[str] = (), force: bool = False
) -> Path:
    """Refuse, before any work, a directory a user named for several files (`report --md
    DIR`): a symbolic link (never followed, even with --force), something that is not a
    directory, or a missing one whose parent is missing; and, where it exists, any of the
    file ``names`` it will get that `check_destination` refuses. A missing one is created by
    `output_directory`. Returns the path."""
    p = Path(target)
    st = _lstat(p)
    if st is None:
        _writable_parent(p)
    elif stat.S_ISLNK(st.st_mode):
        raise BadInput(f"{p} is a symbolic link; give the directory itself")
    elif not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{p} exists and is not a directory")
    elif not os.access(p, os.W_OK | os.X_OK):
        raise BadInput(f"cannot write in {p}: permission denied (or a read-only filesystem)")
    else:
        for name in names:
            _check_file(p / name, _lstat(p / name), force)
    return p


class Folder:
    """A directory held open (`output_directory`): files are checked and written relative to
    its descriptor, so the directory cannot be swapped for another one meanwhile."""

    def __init__(self, path: Path, fd: int, created: bool) -> None:
        self.path = path
        self.fd = fd
        self.created = created
        self.written: list[str] = []

    def check(self, names: Iterable[str], force: bool = False) -> None:
        """`check_destination` for each of these names in the directory."""
        for name in names:
            p = self.path / name
            _check_file(p, _lstat(p, self.fd), force)

    def write_bytes(self, name: str, data: bytes, replace: bool = False) -> Path:
        write_bytes(self.path / name, data, replace=replace, dir_fd=self.fd)
        self.written.append(name)
        return self.path / name

    def write_text(self, name: str, text: str, replace: bool = False) -> Path:
        return self.write_bytes(name, text.encode("utf-8"), replace)


@contextlib.contextmanager
def output_directory(target: str | os.PathLike[str]) -> Iterator[Folder]:
    """The directory ``target`` (`check_directory`), created if missing (mkdir never follows
    a link planted there), opened with O_NOFOLLOW and held open for the block. When the block
    fails, a directory it created is removed with what was written into it."""
    p = check_directory(target)
    created = False
    try:
        os.mkdir(p)
        created = True
    except FileExistsError:
        pass
    except OSError as e:
        raise BadInput(f"cannot create {p}: {e.strerror or e}") from None
    try:
        fd = os.open(p, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped since the check
            raise BadInput(f"{p} is a symbolic link; give the directory itself") from None
        raise BadInput(f"cannot open {p}: {e.strerror or e}") from None
    folder = Folder(p, fd, created)
    try:
        yield folder
    except BaseException:
        if created:
            for name in folder.written:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
            with contextlib.suppress(OSError):
                os.rmdir(p)
        raise
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ reading


#: The largest file any reader takes unless it names its own limit (sample files: samples.py).
READ_LIMIT = 64 * 1024 * 1024


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def open_regular(
    path: str | os.PathLike[str], what: str, limit: int = READ_LIMIT, follow: bool = True
) -> BinaryIO:
    """A regular file of at most ``limit`` bytes, open for reading (the caller closes it);
    BadInput (one line) when it is missing, a directory, a FIFO, device or socket, larger than
    ``limit``, or unreadable. The file is opened non-blocking (so a FIFO cannot hang the open)
    and checked with fstat on the open descriptor, so a swapped path cannot get past the
    check. ``follow=False``: a symbolic link is refused too (O_NOFOLLOW; the store's own
    files). For readers that need part of a file; `read_bytes` reads all of it."""
    p = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise BadInput(f"{p}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{p}: is a directory, not {what}") from None
    except PermissionError:
        raise BadInput(f"{p}: permission denied") from None
    except OSError as e:
        if not follow and e.errno == errno.ELOOP:
            raise BadInput(f"{p}: a symbolic link, not {what}") from None
        raise BadInput(f"{p}: cannot open: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise BadInput(f"{p}: is a directory, not {what}")
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{p}: not a regular file (a FIFO, device or socket), not {what}")
        if st.st_size > limit:
            raise BadInput(f"{p}: {_size(st.st_size)}, larger than {what} may be ({_size(limit)})")
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def read_bytes(
    path: str | os.PathLike[str], what: str, limit: int = READ_LIMIT, follow: bool = True
) -> bytes:
    """The contents of a regular file of at most ``limit`` bytes (`open_regular`); at most
    ``limit`` bytes are ever read, even if it grows."""
    p = Path(path)
    with open_regular(p, what, limit, follow) as f:
        try:
            chunks, got = [], 0
            while True:
                b = f.read(min(1 << 20, limit + 1 - got))
                if not b:
                    break
                chunks.append(b)
                got += len(b)
                if got > limit:
                    raise BadInput(f"{p}: grew beyond {_size(limit)} while being read")
            return b"".join(chunks)
        except OSError as e:
            raise BadInput(f"{p}: cannot read: {e.strerror or e}") from None


def read_text(
    path: str | os.PathLike[str], what: str, limit: int = READ_LIMIT, follow: bool = True
) -> str:
    """`read_bytes` decoded as UTF-8; BadInput (one line) when it is not UTF-8."""
    raw = read_bytes(path, what, limit, follow)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte {e.start}), not {what}") from None
