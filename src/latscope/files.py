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

`read_bytes` reads a file a user named, with a one-line error for each way that fails.
"""

from __future__ import annotations

import contextlib
import os
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


def read_bytes(path: str | os.PathLike[str], what: str) -> bytes:
    """The contents of a file a user named; BadInput (one line) when it is missing, a
    directory ("is a directory, not ``what``") or not readable."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{p}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{p}: is a directory, not {what}") from None
    except PermissionError:
        raise BadInput(f"{p}: permission denied") from None


def write_text(target: str | os.PathLike[str], text: str, mode: int | None = None) -> Path:
    """Replace ``target`` with ``text`` (UTF-8) atomically (`atomic_write`)."""
    return write_bytes(target, text.encode("utf-8"), mode)
