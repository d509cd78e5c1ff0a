"""Adding runs to the store and removing them: a run is measured into a partial directory
(`Writer.begin`), made a run by one atomic rename (`Writer.commit`), removed when it fails
(`Writer.abandon`); `remove` and `remove_partials` take runs away.  Every write goes through
directories opened from the store's root without following a link, checked and held open
(safe.py): a store another user could redirect is refused for writing, with one line, before
anything is written, and a partial directory swapped meanwhile cannot redirect a commit.
`Store` (core.py) is a `Writer`."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import leftovers
from ..errors import BadInput, LatscopeError
from ..files import rename_noreplace, write_bytes, write_text
from ..leftovers import proc_start_ticks as _proc_start_ticks
from . import index, safe, space, table
from .layout import (
    OWNER_FILE,
    PARTIAL_PREFIX,
    REMOVING_PREFIX,
    RUN_FILE,
    RUN_FILES,
    SAMPLES_FILE,
    SUMMARY_FILE,
    Partial,
    Scan,
    _boot_id,
    bench_of_id,
    host_of,
)

if TYPE_CHECKING:
    import polars as pl


def _owner() -> dict[str, Any]:
    """A partial directory's owner file: this process (pid, its start time), boot and host."""
    return {
        "pid": os.getpid(),
        "start_ticks": _proc_start_ticks(os.getpid()),
        "boot_id": _boot_id(),
        "host": socket.gethostname(),
        "started_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


# ------------------------------------------------------------------------------- the store


class Writer:
    """The writing half of a store (`Store`): its root, and the partial directories being
    written (held open)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._held: dict[Path, safe.HeldDir] = {}  # partial directories being written
        self._done: set[Path] = set()  # those committed or abandoned: never opened again
        self._free: dict[Path, int | None] = {}  # bytes free before each run began

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    def scan(self, check: bool = True) -> Scan:
        raise NotImplementedError  # Store's

    def make_dir(self, name: str) -> Path:
        """The store's directory ``name`` (``reports``, ...), made where missing, checked
        (safe.py): a file written into it by path afterwards cannot be redirected by another
        user.  BadInput (one line) where it could."""
        with safe.held(self.root, (name,), create=True):
            return self.root / name

    def write_text(self, directory: str, name: str, text: str) -> Path:
        """Write a file of the store's own (``suites/ID.json``, ``trust/KEY.json``) into its
        directory ``directory`` (made where missing), atomically, through the directory held
        open and checked (safe.py).  BadInput (one line) where another user could redirect
        the write; OSError where it fails."""
        with safe.held(self.root, (directory,), create=True) as fd:
            return write_text(self.root / directory / name, text, dir_fd=fd)

    def ensure(self, *dirs: str) -> None:
        """Create the store where it is missing (its root and runs/, and the directories
        ``dirs`` a command will write into: ``suites``, ``reports``, ``trust``), checked to be
        a place latscope may write (safe.py); BadInput (one line) where it is not: before the
        work, not after it."""
        with safe.held(self.root, ("runs",), create=True) as runs:
            self._writable(runs)
        for name in dirs:
            self.make_dir(name)

    def _writable(self, runs: int) -> None:
        if not os.access(safe.fd_path(runs), os.W_OK | os.X_OK):
            raise space.not_writable(self.root)

    def writable(self) -> bool:
        """Whether the store exists and latscope may write into it (safe.py: no other user
        can redirect a write; not read-only): what a reader asks before it refreshes a cache
        (the summary table, a summary.parquet)."""
        try:
            with safe.held(self.root, ("runs",)) as runs:
                return os.access(safe.fd_path(runs), os.W_OK | os.X_OK)
        except (OSError, LatscopeError):
            return False

    # ---------------------------------------------------------------- writing

    def new_run_id(self, bench: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        return f"{stamp}-{bench}-{secrets.token_hex(2)}"

    def begin(self, bench: str) -> tuple[str, Path]:
        """A fresh partial directory for a run being measured, with an owner file naming this
        process (pid, its start time, boot id, host), so that `scan()` can tell a run still
        being measured from one that was killed.  It is held open, with runs/, until `commit`
        or `abandon`: both work through those descriptors (a directory swapped meanwhile
        cannot redirect them).  The store is checked first (safe.py)."""
        try:
            runs = safe.open_path(self.root, ("runs",), create=True)
        except BadInput:
            if space.read_only(self.root) or space.read_only(self.root.parent):
                raise space.not_writable(self.root) from None
            raise
        held: safe.HeldDir | None = None
        try:
            self._writable(runs)
            leftovers.sweep(runs, PARTIAL_PREFIX)  # what killed probes left (dead owners)
            free = space.free_bytes(self.root)
            for _ in range(100):
                run_id = self.new_run_id(bench)
                if os.path.exists(safe.fd_path(runs) / run_id):
                    continue
                name = f"{PARTIAL_PREFIX}{run_id}"
                try:
                    os.mkdir(name, safe.DIR_MODE, dir_fd=runs)
                except FileExistsError:
                    continue
                except OSError as e:
                    if e.errno in space.CACHE_ERRORS:
                        raise space.error(e, self.root, "no room for a new run") from None
                    raise BadInput(
                        f"cannot make a run directory in {self.runs_dir}: {e.strerror}"
                    ) from None
                partial = self.runs_dir / name
                held = safe.HeldDir(
                    runs, safe.open_dir(runs, name, partial, mine=True), name, partial
                )
                try:
                    write_text(partial / OWNER_FILE, json.dumps(_owner()), dir_fd=held.fd)
                except OSError as e:
                    raise space.error(e, self.root, "no room for a new run") from None
                self._held[partial] = held
                self._free[partial] = free
                self._done.discard(partial)
                return run_id, partial
            raise BadInput(f"cannot allocate a run directory in {self.runs_dir}")
        except BaseException:
            if held is None:
                os.close(runs)
            else:
                with contextlib.suppress(OSError):
                    held.remove()
                held.close()
            raise

    def _hold(self, partial: Path) -> safe.HeldDir:
        """The partial directory ``partial`` held open: as `begin` made it, else opened now
        (from the root, checked)."""
        held = self._held.get(partial)
        if held is None:
            runs = safe.open_path(self.root, ("runs",))
            try:
                fd = safe.open_dir(runs, partial.name, self.runs_dir / partial.name)
            except BaseException:
                os.close(runs)
                raise
            held = self._held[partial] = safe.HeldDir(runs, fd, partial.name, partial)
        return held

    def commit(
        self,
        run_id: str,
        partial: Path,
        meta: dict[str, Any],
        summary: pl.DataFrame | None = None,
        *,
        host: str | None = None,
        files: Mapping[str, str] | None = None,
    ) -> Path:
        """Write summary.parquet (rows from `index.summary_frame`) and run.json, then make the
        run visible with one atomic rename, and add its rows to the summary table (table.py;
        a failure there is left for the next read to mend: the run is committed).  ``host``:
        the host the run belongs to (an import's or a fleet's host tag), kept in run.json as
        ``host``; without it, the run's own environment says (`layout.host_of`).  Everything
        goes through the partial directory and runs/ held open (`begin`); a partial directory
        found swapped (for a link or another directory) is refused, nothing kept, and left
        for `abandon`.  ``files``: more files of the run, by name (facts.json), written
        before run.json."""
        if host is not None:
            meta = {**meta, "host": host}
        held = self._hold(partial)
        self._in_place(held, run_id)
        texts = {**(files or {}), RUN_FILE: json.dumps(meta, indent=1, sort_keys=False)}
        data = {k: v.encode("utf-8") for k, v in texts.items()}
        parquet = index.parquet_bytes(summary) if summary is not None else None
        added: list[table.Added] = []
        try:
            if parquet is not None:
                write_bytes(partial / SUMMARY_FILE, parquet, dir_fd=held.fd)
            for name, raw in data.items():  # run.json last
                write_bytes(partial / name, raw, dir_fd=held.fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(OWNER_FILE, dir_fd=held.fd)
            if summary is not None:  # the table's rows, before the run is visible
                self._index(partial, meta, summary, added)
            self._in_place(held, run_id)
            rename_noreplace(held.parent, held.name, run_id)
        except BaseException as e:
            table.remove(self.root, added)
            if not isinstance(e, OSError):
                raise
            if e.errno in space.CACHE_ERRORS:
                need = self._need(
                    held, meta, summary, [len(parquet or b""), *map(len, data.values())]
                )
                what = f"run {run_id} did not fit"
                raise space.error(e, self.root, what, need, self.free_before(partial)) from None
            raise BadInput(f"cannot commit run {run_id} in {self.runs_dir}: {e.strerror}") from None
        self._release(partial)
        table.tidy_up(self.root, [a.names[1:] for a in added])
        return self.runs_dir / run_id

    def free_before(self, partial: Path) -> int | None:
        """The bytes that were free on the store's file system before the run of ``partial``
        began (`begin`)."""
        return self._free.get(partial)

    @staticmethod
    def _need(
        held: safe.HeldDir, meta: dict[str, Any], summary: pl.DataFrame | None, sizes: list[int]
    ) -> int:
        """The space a run takes when kept: its files (``sizes``, and the sample file in
        ``held``), its owner file while it is made, and its rows in the summary table."""
        sizes = [*sizes, 4096]
        with contextlib.suppress(OSError):
            sizes.append(os.stat(SAMPLES_FILE, dir_fd=held.fd).st_size)
        if summary is not None:
            with contextlib.suppress(Exception):
                rows = table.rows_of(meta, index.normal(summary), host_of(meta), "-/-/-")
                sizes.append(len(table.part_bytes(rows)))
        return space.footprint(sizes)

    @staticmethod
    def _in_place(held: safe.HeldDir, run_id: str) -> None:
        if not held.in_place():
            raise BadInput(
                f"cannot commit run {run_id}: its directory {held.path} was replaced by "
                f"{held.what_is_there()} while the run was made; the run is not kept and "
                "nothing was written there"
            )

    def _index(
        self, d: Path, meta: dict[str, Any], summary: pl.DataFrame, added: list[table.Added]
    ) -> None:
        """Add a run's rows to the summary table (its files in ``d`` complete: the rows'
        fingerprint is theirs, and a rename of the directory changes none of it).  A table
        that cannot be written for a reason other than space (a link planted in it, a
        directory another user could redirect) is left for the next `ls` or `history` to
        mend; a full or read-only store is an OSError: the run is not kept."""
        try:
            rows = table.rows_of(
                meta, index.normal(summary), host_of(meta), table.fingerprint(d, RUN_FILES)
            )
            table.append(self.root, rows, tidy=False, added=added)
        except OSError as e:
            if e.errno in space.CACHE_ERRORS:
                raise
        except (LatscopeError, ValueError):
            pass  # the next `ls` or `history` finds the run without rows and adds them

    def abandon(self, partial: Path) -> None:
        """Remove a partial directory that is not to be committed: first what its probe left
        (a killed probe's System V objects and test files: `leftovers.clean_dir`), then the
        directory, both through the directory held open (`safe.HeldDir.remove`).  Clean-up:
        never raises; a partial directory this store abandoned or committed before (whatever
        is at its name now) is left alone."""
        if partial in self._done:
            return
        try:
            held = self._hold(partial)
        except (OSError, LatscopeError):
            return  # gone, or no place to write
        try:
            leftovers.clean_dir(safe.fd_path(held.fd))
            held.remove()
        finally:
            self._release(partial)

    def _release(self, partial: Path) -> None:
        held = self._held.pop(partial, None)
        self._free.pop(partial, None)
        if held is not None:
            held.close()
        self._done.add(partial)

    @contextmanager
    def transaction(self, bench: str, *, host: str | None = None) -> Iterator[Transaction]:
        """A run being added: a partial directory (`begin`) to write its files into, made a
        run by `Transaction.commit` (one atomic rename), removed when the block fails or ends
        without a commit.  The one way runs enter the store (measured or imported).
        ``host``: the host tag the run is kept with (`commit`)."""
        run_id, partial = self.begin(bench)
        t = Transaction(self, run_id, partial, host=host)
        try:
            yield t
        finally:
            if t.final is None:
                self.abandon(partial)

    def remove(self, d: Path) -> None:
        """Remove a run: first renamed out of sight (atomic), then deleted, so a half-deleted
        run never looks like a run; a leftover is cleaned by `remove_partials`.  A run that is
        a symbolic link is removed as the link (never followed).  Through runs/ held open."""
        try:
            runs = safe.open_path(self.root, ("runs",))
        except FileNotFoundError:
            return
        try:
            gone = f"{REMOVING_PREFIX}{d.name}-{secrets.token_hex(2)}"
            try:
                os.rename(d.name, gone, src_dir_fd=runs, dst_dir_fd=runs)
            except FileNotFoundError:
                return
            except OSError as e:
                if e.errno in space.DENIED:
                    raise space.not_writable(self.root, e) from None
                raise BadInput(f"cannot remove {d}: {e.strerror}") from None
            safe.remove_entry(runs, gone)
        finally:
            os.close(runs)
        self._forget(d.name)

    def _forget(self, run_id: str) -> None:
        """Drop a removed run's rows from the summary table: the partitions of its benchmark
        (named in its id) are compacted without it."""
        bench = bench_of_id(run_id)
        top = self.root / table.TABLE_DIR / f"benchmark={table.encode(bench or '')}"
        try:
            months = [m for m in os.listdir(top) if m.startswith("month=")]
        except OSError:
            return
        for m in months:
            try:
                table.compact(self.root, (top.name, m), drop={run_id})
            except (OSError, LatscopeError):
                pass

    def remove_partials(self) -> tuple[list[Partial], list[Partial]]:
        """Remove what killed runs and interrupted removals left; runs still being measured
        (their owner process is alive) are kept.  Returns (removed, kept)."""
        removed: list[Partial] = []
        kept: list[Partial] = []
        partials = self.scan(check=False).partials
        if not partials:
            return removed, kept
        with safe.held(self.root, ("runs",)) as runs:
            for p in partials:
                gone = p.state in ("killed", "removing") and _clear(runs, p.path.name)
                (removed if gone else kept).append(p)
        return removed, kept

    # ---------------------------------------------------------------- reading

    def keep_file(self, d: Path, name: str, text: str) -> None:
        """Write (or replace) a file of a kept run (its facts.json) through its directory
        held open and checked (safe.py), as `_keep_summary` does: BadInput where another user
        could redirect the write, OSError where it fails."""
        with safe.held(self.root, ("runs", d.name)) as fd:
            write_text(d / name, text, dir_fd=fd)

    def _keep_summary(self, d: Path, df: pl.DataFrame) -> None:
        """Write a run's summary.parquet through its directory held open and checked
        (safe.py): never into a store, or a run directory, that another user could redirect
        (BadInput), nor into one latscope cannot write (OSError)."""
        root, names = (
            (self.root, ("runs", d.name)) if d.parent == self.runs_dir else (d.parent, (d.name,))
        )
        with safe.held(root, names) as fd:
            index.write(df, d / SUMMARY_FILE, dir_fd=fd)


def _clear(runs: int, name: str) -> bool:
    """Remove the partial directory ``name`` of runs/ (held as ``runs``): what its probe left
    first (through the directory opened without following a link), then the directory, unless
    a maker of what it recorded still runs.  Whether it is gone."""
    try:
        fd = os.open(name, safe.DIR_FLAGS, dir_fd=runs)
    except OSError:
        fd = None  # a link an older rm renamed (removed as the link), or gone
    if fd is not None:
        try:
            here = safe.fd_path(fd)
            leftovers.clean_dir(here)
            if leftovers.makers_alive(here):
                return False  # a maker still runs: its record stays, and so the run
        finally:
            os.close(fd)
    safe.remove_entry(runs, name)
    return not safe.lexists(runs, name)


@dataclass
class Transaction:
    """A run being added to a store (`Store.transaction`): ``dir`` is its partial directory,
    ``final`` its run directory once committed."""

    store: Writer
    id: str
    dir: Path
    final: Path | None = None
    host: str | None = None  # the host tag the run is kept with

    @property
    def samples_path(self) -> Path:
        return self.dir / SAMPLES_FILE

    @contextmanager
    def writing(self, what: str = "the sample file") -> Iterator[None]:
        """A write of ``what`` into the partial directory: an OSError there (a full or
        read-only store) becomes one line (`space.error`); the transaction then removes
        the partial directory."""
        try:
            yield
        except OSError as e:
            what = f"{what} of run {self.id} did not fit"
            raise space.error(
                e, self.store.root, what, None, self.store.free_before(self.dir)
            ) from None

    def commit(
        self,
        meta: dict[str, Any],
        summary: pl.DataFrame | None = None,
        *,
        host: str | None = None,
        files: Mapping[str, str] | None = None,
    ) -> Path:
        """run.json (and summary.parquet, and ``files``: facts.json), then the rename that
        makes the run visible.  ``host``: the host tag (default: the transaction's)."""
        host = host if host is not None else self.host
        self.final = self.store.commit(self.id, self.dir, meta, summary, host=host, files=files)
        return self.final
