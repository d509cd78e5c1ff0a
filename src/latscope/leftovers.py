"""What a killed probe left behind, and its removal.

The probe records, before it uses them, what a SIGKILL would leave (docs/probe-cli.md,
"Leftovers"): System V semaphore sets and message queues, which have no name to remove early,
the `file` benchmark's test file and private directory, and its own output temporary. The
record is a file beside the output (``OUTPUT.leftovers.RANDOM``, in a run's partial directory
for the lab); each line names what was made and the process that made it (pid and that
process's start time). A clean end removes the record.

`clean_dir` removes what a record in a directory lists whose maker is dead (its pid gone, or
taken by a process that started at another time), each only if it is still the object
recorded: a System V object with the recorded id, creator and change time; a file or
directory with the recorded inode, in the directory with the recorded device and inode, looked
at without following a link and removed relative to that directory. A record written by
another user (its file's owner) removes only what that user owns. `latscope rm --partial`, the
abandoning of a failed run and the start of every run (`sweep`) call it, on directories
held open (``/proc/self/fd/N``), so that a directory swapped meanwhile is not the one cleaned.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from dataclasses import dataclass
from pathlib import Path

#: The record's first line; the name part that marks a record file.
HEAD = "latscope-leftovers 1"
MARK = ".leftovers."
#: A record larger than this is not the probe's: left alone.
_LIMIT = 1 << 20
_IPC_RMID = 0
#: /proc/PID/stat's flags: the process is exiting (a killed probe between its signal and its
#: becoming a zombie, a window that grows on a loaded machine).
_PF_EXITING = 0x4


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command (state first); None if there is no
    such process (or no /proc)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return text[text.rindex(")") + 2 :].split()
    except ValueError:
        return None


def proc_start_ticks(pid: int) -> int | None:
    """The start time of a process (clock ticks since boot): with the pid, it names the
    process uniquely, so a recycled pid is not taken for the one recorded."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields else None
    except (ValueError, IndexError):
        return None


def alive(pid: int, start: int | None) -> bool:
    """Whether process ``pid`` still runs and is the one that started at ``start`` (a zombie,
    or a process already exiting, runs no more)."""
    if pid <= 0:
        return False
    fields = _stat_fields(pid)
    if fields is None:
        if Path("/proc/self/stat").exists():
            return False
        try:  # no /proc here: only the pid can tell
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if fields[0] in ("Z", "X"):
        return False
    try:
        if int(fields[6]) & _PF_EXITING:
            return False  # killed and on its way out: it makes and removes nothing more
    except (ValueError, IndexError):
        pass
    return not start or proc_start_ticks(pid) == start


@dataclass
class Record:
    """One line of a record: what was made (``kind``: sysv_sem, sysv_msg, file, dir), its
    token, its maker, and the kind's own fields."""

    kind: str
    token: str
    pid: int
    start: int
    fields: list[str]

    def describe(self) -> str:
        if self.kind.startswith("sysv_"):
            return f"{self.kind} {self.fields[0]}"
        try:
            d = os.fsdecode(bytes.fromhex(self.fields[3]))
            n = os.fsdecode(bytes.fromhex(self.fields[4]))
        except (ValueError, IndexError):
            return self.kind
        return f"{self.kind} {d}/{n}"


def _read(path: Path) -> tuple[bytes, os.stat_result] | None:
    """A record file's contents and status: a regular file, never through a link, of at most
    _LIMIT bytes; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _LIMIT:
            return None
        return os.read(fd, _LIMIT + 1)[:_LIMIT], st
    except OSError:
        return None
    finally:
        os.close(fd)


def parse(text: str) -> list[Record]:
    """The records of a record file not released since, oldest first (malformed lines are
    passed over)."""
    lines = text.splitlines()
    if not lines or lines[0] != HEAD:
        return []
    released = {ln.split()[1] for ln in lines[1:] if ln.startswith("released ") and len(ln) > 9}
    out = []
    for ln in lines[1:]:
        parts = ln.split()
        if len(parts) < 4 or parts[0] not in ("sysv_sem", "sysv_msg", "file", "dir"):
            continue
        want = 3 if parts[0].startswith("sysv_") else 5
        if len(parts) != 4 + want or parts[1] in released:
            continue
        try:
            pid, start = int(parts[2]), int(parts[3])
        except ValueError:
            continue
        out.append(Record(parts[0], parts[1], pid, start, parts[4:]))
    return out


def _sysvipc(kind: str) -> dict[int, dict[str, int]]:
    """The System V objects of a kind (``sem``, ``msg``) from /proc/sysvipc, by id."""
    try:
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
    except OSError:
        return {}
    if not lines:
        return {}
    names = lines[0].split()
    idcol = "semid" if kind == "sem" else "msqid"
    out = {}
    for ln in lines[1:]:
        vals = ln.split()
        if len(vals) != len(names):
            continue
        try:
            row = {n: int(v) for n, v in zip(names, vals, strict=True)}
        except ValueError:
            continue
        out[row[idcol]] = row
    return out


def _remove_sysv(rec: Record, owner: int) -> None:
    kind = "sem" if rec.kind == "sysv_sem" else "msg"
    try:
        ident, cuid, ctime = (int(x) for x in rec.fields)
    except ValueError:
        return
    row = _sysvipc(kind).get(ident)
    if row is None or row.get("cuid") != cuid or row.get("ctime") != ctime:
        return  # gone, or another object under a recycled id
    if row.get("key") != 0 or (owner != 0 and cuid != owner):
        return  # not the probe's private object, or not the record's author's
    libc = ctypes.CDLL(None, use_errno=True)
    if kind == "sem":
        libc.semctl(ctypes.c_int(ident), ctypes.c_int(0), ctypes.c_int(_IPC_RMID))
    else:
        libc.msgctl(ctypes.c_int(ident), ctypes.c_int(_IPC_RMID), ctypes.c_void_p(None))


def _remove_entry(rec: Record, owner: int) -> None:
    try:
        dev, dino, ino = (int(x) for x in rec.fields[:3])
        dirpath = os.fsdecode(bytes.fromhex(rec.fields[3]))
        name = os.fsdecode(bytes.fromhex(rec.fields[4]))
    except ValueError:
        return
    if not name or "/" in name or name in (".", ".."):
        return
    try:
        dfd = os.open(dirpath, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(dfd)
        if (st.st_dev, st.st_ino) != (dev, dino):
            return  # the path names another directory now: nothing of ours there
        est = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        isdir = rec.kind == "dir"
        ok_type = stat.S_ISDIR(est.st_mode) if isdir else stat.S_ISREG(est.st_mode)
        if est.st_ino != ino or not ok_type or (owner != 0 and est.st_uid != owner):
            return
        if isdir:
            os.rmdir(name, dir_fd=dfd)
        else:
            os.unlink(name, dir_fd=dfd)
    except OSError:
        return
    finally:
        os.close(dfd)


def clean_file(path: Path) -> tuple[list[str], bool]:
    """Remove what record file ``path`` lists whose maker is dead, newest first, then the
    record itself unless a maker still runs.  Returns (what was handled, whether the record
    was removed)."""
    got = _read(path)
    if got is None:
        return [], False
    raw, st = got
    if not raw.startswith(HEAD.encode() + b"\n"):
        return [], False  # not a record of the probe's: left as it is
    recs = parse(raw.decode("utf-8", errors="replace"))
    handled, live = [], False
    for rec in reversed(recs):
        if alive(rec.pid, rec.start):
            live = True
            continue
        if rec.kind.startswith("sysv_"):
            _remove_sysv(rec, st.st_uid)
        else:
            _remove_entry(rec, st.st_uid)
        handled.append(rec.describe())
    if not live:
        with contextlib.suppress(OSError):
            now = os.stat(path, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                path.unlink()
    return handled, not live


def _record_files(d: Path) -> list[Path]:
    """The probe's record files in directory ``d``: regular files (never followed through a
    link) whose names carry its mark; none where ``d`` cannot be read."""
    try:
        entries = [e for e in os.scandir(d) if MARK in e.name]
    except OSError:
        return []
    out = []
    for e in entries:
        try:
            if e.is_file(follow_symlinks=False):
                out.append(Path(e.path))
        except OSError:
            continue
    return out


def clean_dir(d: Path) -> list[str]:
    """`clean_file` for every record file in directory ``d``; what was handled."""
    out: list[str] = []
    for f in _record_files(d):
        out += clean_file(f)[0]
    return out


def makers_alive(d: Path) -> bool:
    """Whether a record file of the probe's in directory ``d`` names a maker that still runs
    (what `clean_dir` leaves in place)."""
    for f in _record_files(d):
        got = _read(f)
        if got is None or not got[0].startswith(HEAD.encode() + b"\n"):
            continue
        recs = parse(got[0].decode("utf-8", errors="replace"))
        if any(alive(r.pid, r.start) for r in recs):
            return True
    return False


def sweep(runs_fd: int, prefix: str) -> list[str]:
    """`clean_dir` for every directory in the directory held open as ``runs_fd`` (the store's
    runs/) whose name starts with ``prefix`` (the store's partial runs): what killed probes
    left, whichever run they belonged to.  Each is opened relative to ``runs_fd`` without
    following a link and cleaned through that descriptor."""
    out: list[str] = []
    try:
        names = [n for n in os.listdir(runs_fd) if n.startswith(prefix)]
    except OSError:
        return out
    for name in names:
        try:
            fd = os.open(
                name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=runs_fd
            )
        except OSError:
            continue  # gone, a link or not a directory: nothing of a probe's
        try:
            out += clean_dir(Path(f"/proc/self/fd/{fd}"))
        finally:
            os.close(fd)
    return out
