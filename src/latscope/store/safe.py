"""The directories of a store that latscope writes into, reached so that no other user can
redirect a write: latscope often runs as root, and a store may sit where others can write
(docs/store.md, "A store other users can write to").

The rule (the classic "safe path" check, as ssh's StrictModes applies it to ~/.ssh):

- the store's root and every directory above it are owned by root or by the effective user
  and are not writable by group or others unless the sticky bit is set (as on /tmp); the path
  is walked from ``/`` one directory at a time, each opened without following a link, and a
  symbolic link on the way is followed only when it lies in such a directory and, in a sticky
  one, belongs to root or the effective user;
- every directory latscope writes into inside the store (runs/, runs/.partial-*, a run's
  directory, reports/, suites/, trust/, the summary table's) is opened relative to the one
  above with O_NOFOLLOW|O_DIRECTORY (a symbolic link there is refused, never followed), and
  must be owned by the effective user or root and not writable by group or others unless
  sticky; one latscope made itself (a run's partial directory) must be owned by the
  effective user.

Whatever fails is refused with one line saying which directory, why and what to do
(`BadInput`, exit 2), before anything is written.  Writes then go through the descriptors
held open (`held`, `HeldDir`): a directory swapped for a link meanwhile cannot move them.
Readers that would only refresh a cache (the summary table, a run's summary.parquet) ask
`Store.writable` first and write nothing into a store that fails the rule.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import shutil
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput

#: How a directory of the store is opened: never through a symbolic link.
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: The mode of a directory latscope makes (less the umask): never writable by others, so that
#: a umask of 002 cannot make a directory this module would then refuse.
DIR_MODE = 0o755
#: Symbolic links followed on the way to a store, at most (the kernel's limit).
_MAX_LINKS = 40


def fd_path(fd: int) -> Path:
    """A path naming the directory held open as ``fd`` (for code that takes paths: it reaches
    that directory whatever has been renamed or swapped since)."""
    return Path(f"/proc/self/fd/{fd}")


def _name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return str(uid)


def _who(uid: int) -> str:
    name = _name(uid)
    return f"uid {uid}" if name == str(uid) else f"{name} (uid {uid})"


def _whom(mode: int) -> str:
    return "every user" if mode & stat.S_IWOTH else "its group"


def problem(
    st: os.stat_result,
    path: Path,
    label: str | None = None,
    mine: bool = False,
    above: bool = False,
) -> str | None:
    """Why the directory ``path`` (its status ``st``) is no place for latscope to write, or
    None.  ``label``: how the message names it (default: its path; e.g. ``the store S``);
    ``mine``: latscope made it, so it must be the effective user's; ``above``: a directory
    above the store (the advice differs)."""
    me = os.geteuid()
    label = label or str(path)
    if mine and st.st_uid != me:
        return (
            f"{label} is owned by {_who(st.st_uid)} though latscope just made it: another "
            "user replaced it; nothing was written there"
        )
    if st.st_uid not in (0, me):
        fix = "" if above else f", or 'chown {_name(me)} {path}' if it is meant to be yours"
        return (
            f"{label} is owned by {_who(st.st_uid)}, not by you or root: that user could swap "
            f"what latscope writes there for a symbolic link; use a store of your own "
            f"(--store DIR){fix}"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
        fix = (
            f"'chmod go-w {path}' or 'chmod +t {path}', or keep the store elsewhere (--store DIR)"
            if above
            else f"'chmod go-w {path}', or 'chmod +t {path}' for a store shared on purpose "
            "(docs/store.md)"
        )
        return (
            f"{label} is writable by {_whom(mode)} (mode {mode:04o}): another user could swap "
            f"what latscope writes there for a symbolic link; {fix}"
        )
    return None


def _link_problem(path: Path) -> str:
    return (
        f"{path} is a symbolic link where the store keeps a directory of its own: latscope "
        "never writes through one (another user may have planted it); remove the link, and "
        "latscope makes the directory"
    )


def open_root(root: Path, create: bool = False) -> int:
    """The store's root directory, opened, with it and every directory above it checked
    (module docs); made where missing when ``create`` (as ``mkdir -p``, mode `DIR_MODE`).
    BadInput (one line) for a directory that fails the rule; FileNotFoundError for a missing
    one when not ``create``.  The caller closes the descriptor."""
    path = os.path.abspath(root)
    root = Path(path)  # as messages name it
    todo = [c for c in reversed(path.split("/")) if c]
    stack: list[tuple[int, Path]] = [(os.open("/", DIR_FLAGS), Path("/"))]
    links = 0
    try:
        _check(stack[0][0], stack[0][1], root, last=not todo)
        while todo:
            name = todo.pop()
            if name in (".", ""):
                continue
            if name == "..":
                if len(stack) > 1:
                    os.close(stack.pop()[0])
                continue
            cur, where = stack[-1]
            here = where / name
            st = _entry(cur, name, here, root, create)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > _MAX_LINKS:
                    raise BadInput(f"cannot reach the store {root}: too many symbolic links")
                sticky = os.fstat(cur).st_mode & stat.S_ISVTX
                if sticky and st.st_uid not in (0, os.geteuid()):
                    raise BadInput(
                        f"{here} is a symbolic link of {_who(st.st_uid)} in a directory every "
                        f"user can write to: latscope does not follow it to the store {root}; "
                        "give --store the directory it points to"
                    )
                target = os.readlink(name, dir_fd=cur)
                if target.startswith("/"):
                    while len(stack) > 1:
                        os.close(stack.pop()[0])
                todo.extend(c for c in reversed(target.split("/")) if c)
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise BadInput(f"cannot use the store {root}: {here} is not a directory")
            stack.append((os.open(name, DIR_FLAGS, dir_fd=cur), here))
            _check(stack[-1][0], here, root, last=not todo)
        return stack.pop()[0]
    except OSError as e:
        if isinstance(e, FileNotFoundError) and not create:
            raise
        raise BadInput(f"cannot use the store {root}: {e.strerror or e}") from None
    finally:
        for fd, _ in stack:
            os.close(fd)


def _entry(cur: int, name: str, here: Path, root: Path, create: bool) -> os.stat_result:
    """The status of ``name`` in ``cur`` (not following a link), made first when missing and
    ``create``."""
    try:
        return os.stat(name, dir_fd=cur, follow_symlinks=False)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, DIR_MODE, dir_fd=cur)
    except FileExistsError:
        pass
    except OSError as e:
        raise BadInput(f"cannot create the store {root}: {e.strerror or e} ({here})") from None
    return os.stat(name, dir_fd=cur, follow_symlinks=False)


def _check(fd: int, path: Path, root: Path, last: bool) -> None:
    label = f"the store {path}" if last else f"{path}, above the store {root},"
    why = problem(os.fstat(fd), path, label, above=not last)
    if why:
        raise BadInput(why)


def open_dir(parent: int, name: str, path: Path, create: bool = False, mine: bool = False) -> int:
    """The directory ``name`` of the store directory held as ``parent`` (``path``: its path,
    for messages), opened without following a link and checked (module docs); made first
    (mode `DIR_MODE`) when ``create`` and missing.  ``mine``: latscope made it, so it must be
    the effective user's (so must one made here).  BadInput (one line) for a link, something
    that is not a directory or a directory that fails the rule; FileNotFoundError for a
    missing one.  The caller closes the descriptor."""
    made = False
    if create:
        try:
            os.mkdir(name, DIR_MODE, dir_fd=parent)
            made = True
        except FileExistsError:
            pass
        except OSError as e:
            raise BadInput(f"cannot create {path}: {e.strerror or e}") from None
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                    raise BadInput(_link_problem(path)) from None
            raise BadInput(f"{path} is not a directory; latscope writes nothing there") from None
        raise BadInput(f"cannot open {path}: {e.strerror or e}") from None
    why = problem(os.fstat(fd), path, mine=mine or made)
    if why:
        os.close(fd)
        raise BadInput(why)
    return fd


def open_path(root: Path, names: Sequence[str] = (), create: bool = False) -> int:
    """``root/names[0]/names[1]/...``: the store's root (`open_root`), then each directory in
    it (`open_dir`), every one checked; the caller closes the descriptor."""
    fd = open_root(root, create)
    path = Path(os.path.abspath(root))
    try:
        for name in names:
            path = path / name
            sub = open_dir(fd, name, path, create)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def held(root: Path, names: Sequence[str] = (), create: bool = False) -> Iterator[int]:
    """`open_path` for a block: yields the descriptor of ``root/names...``."""
    fd = open_path(root, names, create)
    try:
        yield fd
    finally:
        os.close(fd)


def remove_entry(dfd: int, name: str) -> None:
    """Remove ``name`` from the directory held as ``dfd``: a directory with what it holds
    (`shutil.rmtree` relative to the descriptor, which never follows a link), anything else
    (a symbolic link, a file) by unlinking it.  Errors are left for the caller to see (the
    entry still exists)."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, ignore_errors=True, dir_fd=dfd)
    else:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)


def lexists(dfd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return False
    return True


@dataclass
class HeldDir:
    """A directory of the store held open (``fd``) with the directory holding it
    (``parent``) under ``name``: a run's partial directory in runs/, from its making to its
    commit (or its removal)."""

    parent: int
    fd: int
    name: str
    path: Path

    def in_place(self) -> bool:
        """Whether ``name`` in ``parent`` is still this directory (not swapped meanwhile for a
        link or another directory)."""
        try:
            st = os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except OSError:
            return False
        mine = os.fstat(self.fd)
        return stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

    def what_is_there(self) -> str:
        """What ``name`` in ``parent`` is now, for a message."""
        try:
            st = os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except OSError:
            return "nothing"
        if stat.S_ISLNK(st.st_mode):
            return "a symbolic link"
        return "another directory" if stat.S_ISDIR(st.st_mode) else "a file"

    def remove(self) -> None:
        """Remove the directory: by its name when it is still there, else (moved or swapped)
        what it holds, through its descriptor, and a link left at its name (unlinked, never
        followed)."""
        if self.in_place():
            remove_entry(self.parent, self.name)
            return
        with contextlib.suppress(OSError):
            for name in os.listdir(self.fd):
                remove_entry(self.fd, name)
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.stat(self.name, dir_fd=self.parent, follow_symlinks=False).st_mode):
                os.unlink(self.name, dir_fd=self.parent)

    def close(self) -> None:
        for fd in (self.fd, self.parent):
            with contextlib.suppress(OSError):
                os.close(fd)
