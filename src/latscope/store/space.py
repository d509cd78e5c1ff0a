"""What the store says when its file system refuses a write: full (ENOSPC, EDQUOT), read-only
(EROFS) or not this user's to write (EACCES, EPERM).  A write that fails so is one line (never
a traceback), and what it was writing is removed by the caller (a run is kept whole or not at
all: `Writer.commit`, `Writer.abandon`); the line says how much space the run needed and how
much is free, and what to do.  Readers that would only refresh a cache (the summary table, a
run's summary.parquet or facts.json) catch these errors and compute in memory instead."""

from __future__ import annotations

import errno
import getpass
import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import LatscopeError, StoreFull, StoreNotWritable

#: Errors that say the file system is out of space (or the user's quota is used up).
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
#: Errors that say the store may not be written here at all.
DENIED = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
#: Errors of a write that a store's cache (summary table, summary.parquet, facts.json) may
#: meet and pass over: computed in memory instead, kept next time.
CACHE_ERRORS = FULL | DENIED

_ADVICE = "free some space there, or keep runs elsewhere (--store DIR)"


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """The bytes an unprivileged writer may still use on the file system of ``path`` (or of
    the nearest directory above it that exists), None where that cannot be read."""
    p = Path(os.path.abspath(path))
    for d in (p, *p.parents):
        try:
            st = os.statvfs(d)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def read_only(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies on a file system mounted read-only."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def footprint(sizes: Iterable[int], block: int = 4096) -> int:
    """The space files of these sizes take on disk: each rounded up to whole blocks."""
    return sum(-(-max(s, 1) // block) * block for s in sizes)


def kb(n: int) -> str:
    return f"{-(-n // 1024)} KB"


def full(
    root: Path,
    what: str,
    need: int | None = None,
    free: int | None = None,
    outcome: str = "nothing was kept",
) -> StoreFull:
    """The one line for a store whose file system is full: ``what`` did not fit (e.g. "run
    ID did not fit"); ``need``: the bytes it needed, where known; ``free``: the bytes that
    were free before the run began (default: now); ``outcome``: what became of the work."""
    now = free is None
    free = free_bytes(root) if now else free
    parts = []
    if need:
        parts.append(f"it needs about {kb(need)}")
    if free is not None:
        were = "free" if now else "were free"
        when = "" if now else " when the run began"
        parts.append(f"{kb(free)} {were} on the file system of {root}{when}")
    detail = f" ({'; '.join(parts)})" if parts else f" ({root})"
    return StoreFull(f"the store's file system is full: {what}{detail}; {outcome}: {_ADVICE}")


def not_writable(root: Path, e: OSError | None = None) -> StoreNotWritable:
    """The one line for a store latscope may not write: read-only, or not this user's."""
    if (e is not None and e.errno == errno.EROFS) or read_only(root):
        return StoreNotWritable(
            f"the store {root} is on a read-only file system: nothing can be kept there "
            "(ls, history, show and report still read it); remount it read-write, or keep "
            "runs elsewhere (--store DIR)"
        )
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = f"uid {os.geteuid()}"
    return StoreNotWritable(
        f"the store {root} is not writable by {who} (permission denied): nothing was kept; "
        "use a store of your own (--store DIR)"
    )


def error(
    e: OSError, root: Path, what: str, need: int | None = None, free: int | None = None
) -> LatscopeError:
    """The one line for a write of the store that failed with ``e``: `full`, `not_writable`,
    or another failure (exit 1).  ``what``: what did not fit (``"run ID did not fit"``)."""
    if e.errno in FULL:
        return full(root, what, need, free)
    if e.errno in DENIED:
        return not_writable(root, e)
    return LatscopeError(
        f"cannot write to the store {root}: {e.strerror or e}; nothing was kept", 1
    )


def message_says_full(text: str) -> bool:
    """Whether an error line (the probe's, which names the C library's strerror) says the
    file system was full."""
    return any(os.strerror(n) in text for n in FULL)
