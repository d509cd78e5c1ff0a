"""Writing a file so that it is never seen half-written, and never through a path someone
else could redirect: latscope runs as root.

`atomic_write(target)` gives a binary file that is a fresh temporary in the target's directory
(``tempfile.mkstemp``: created with O_EXCL under an unpredictable name, so an existing file or
a symbolic link planted there is never opened), hidden by a leading dot (the store passes over
such names) and ending in ``.tmp``. When the block ends, the data is flushed and synced to
disk, the file gets the mode a new file would get (0666 less the umask, or ``mode``) and is
renamed over the target in one step; a link at the target is replaced, not followed. On any
failure, an exception or Ctrl-C, the temporary is removed and the target is left as it was.
Every writer in latscope goes through it (`write_bytes`, `write_text` for whole contents).

`read_bytes` reads a file a user named or a store holds, with a one-line error for each way
that fails: it refuses what is not a regular file (a FIFO would hang the reader, a device such
as ``/dev/zero`` never ends) and a file above a size limit, checked on the open descriptor
before a byte is read, so neither a swapped path nor a growing file gets past the check.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import BadInput


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


@contextlib.contextmanager
def atomic_write(target: str | os.PathLike[str], mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file whose contents replace ``target`` atomically when the block ends without
    an exception (module docs). ``mode``: the permissions of the new file (default: 0666 less
    the umask, as for any new file)."""
    p = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), mode if mode is not None else 0o666 & ~_umask())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(target: str | os.PathLike[str], data: bytes, mode: int | None = None) -> Path:
    """Replace ``target`` with ``data`` atomically (`atomic_write`); returns the path."""
    with atomic_write(target, mode) as f:
        f.write(data)
    return Path(target)


#: The largest file any reader takes unless it names its own limit (sample files: samples.py).
READ_LIMIT = 64 * 1024 * 1024


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def open_regular(path: str | os.PathLike[str], what: str, limit: int = READ_LIMIT) -> BinaryIO:
    """A regular file of at most ``limit`` bytes, open for reading (the caller closes it);
    BadInput (one line) when it is missing, a directory, a FIFO, device or socket, larger than
    ``limit``, or unreadable. The file is opened non-blocking (so a FIFO cannot hang the open)
    and checked with fstat on the open descriptor, so a swapped path cannot get past the
    check. For readers that need part of a file; `read_bytes` reads all of it."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise BadInput(f"{p}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{p}: is a directory, not {what}") from None
    except PermissionError:
        raise BadInput(f"{p}: permission denied") from None
    except OSError as e:
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


def read_bytes(path: str | os.PathLike[str], what: str, limit: int = READ_LIMIT) -> bytes:
    """The contents of a regular file of at most ``limit`` bytes (`open_regular`); at most
    ``limit`` bytes are ever read, even if it grows."""
    p = Path(path)
    with open_regular(p, what, limit) as f:
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


def read_text(path: str | os.PathLike[str], what: str, limit: int = READ_LIMIT) -> str:
    """`read_bytes` decoded as UTF-8; BadInput (one line) when it is not UTF-8."""
    raw = read_bytes(path, what, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 text (byte {e.start}), not {what}") from None


def write_text(target: str | os.PathLike[str], text: str, mode: int | None = None) -> Path:
    """Replace ``target`` with ``text`` (UTF-8) atomically (`atomic_write`)."""
    return write_bytes(target, text.encode("utf-8"), mode)
