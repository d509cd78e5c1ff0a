"""The store's directories: one per run, made visible by an atomic rename once everything in
it is written, so two processes can add runs to one store at the same time and a run killed
half-way never looks complete; `scan()`, the health check; summaries read across runs.  The
layout is in layout.py, adding and removing runs in writing.py (through directories checked by
safe.py), summary.parquet in index.py, the checked reading of run.json and the other JSON files
in meta.py."""

from __future__ import annotations

import os
import socket
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import samples
from ..errors import BadInput, LatscopeError
from ..leftovers import proc_start_ticks as _proc_start_ticks
from . import index, space
from .layout import (
    OWNER_FILE,
    PARTIAL_PREFIX,
    REMOVING_PREFIX,
    RUN_FILE,
    SAMPLES_FILE,
    SUMMARY_FILE,
    Partial,
    Scan,
    Skipped,
    StoredRun,
    _boot_id,
    _file_problem,
    _iso_mtime,
    _kind,
    bench_of_id,
    default_location,
    host_of,
)
from .meta import OWNER_LIMIT, OWNER_SPEC, BadFile, read_json, read_run
from .writing import Writer

if TYPE_CHECKING:
    import polars as pl

# A partial directory without an owner file is taken for a dead one after this long.
_OWNERLESS_GRACE_S = 60.0


class Store(Writer):
    """The runs under ``root`` (default: `default_location()`): adding them (`transaction`),
    finding them (`scan`, `resolve`), removing them, and their summaries across runs
    (`summaries`).  The store keeps files and indexes; it computes no summary: a run's
    summary.parquet is written with the rows the runner computed when the run was made, and
    one missing or outdated (runs kept by an older latscope) is rebuilt by `summarize`, which
    the runner's store (`runner.LabStore`) provides.  Every write goes through directories
    opened from the root without following a link and checked (safe.py): a store another
    user could redirect is refused for writing (one line), and read without writing."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        super().__init__(Path(root).expanduser() if root else default_location())

    def exists(self) -> bool:
        """Whether the store exists (False: not yet, nothing to read); BadInput (one line) when
        its path names something that is not a store: a file, a runs/ that is not a
        directory, or a directory with other things in it but none a store has."""
        try:
            st = self.root.stat()
            if not stat.S_ISDIR(st.st_mode):
                raise BadInput(f"the store {self.root} is not a directory; give --store DIR")
            names = set(os.listdir(self.root))
        except FileNotFoundError:
            return False
        except OSError as e:
            raise BadInput(f"cannot read the store {self.root}: {e.strerror}") from None
        if "runs" not in names:
            if names and not names & {"suites", "reports", "trust"}:
                raise BadInput(
                    f"{self.root} is not a latscope store (it has no runs/ directory); "
                    "give --store DIR"
                )
            return False
        if not self.runs_dir.is_dir():
            raise BadInput(f"{self.runs_dir} is not a directory: {self.root} is not a store")
        return True

    def _entries(self) -> list[tuple[Path, os.stat_result | None]]:
        """Every entry of runs/ with its lstat (None: gone meanwhile), sorted by name."""
        if not self.exists():
            return []
        try:
            names = sorted(os.listdir(self.runs_dir))
        except OSError as e:
            raise BadInput(f"cannot read the store {self.root}: {e.strerror}") from None
        out = []
        for name in names:
            d = self.runs_dir / name
            try:
                out.append((d, d.lstat()))
            except OSError:
                out.append((d, None))
        return out

    def run_dirs(self, skipped: list[Skipped] | None = None) -> Iterator[Path]:
        """The directories of runs/ that look like runs (a run.json that is a file), by name;
        partial runs and foreign entries are added to ``skipped``."""
        for d, st in self._entries():
            if d.name.startswith(PARTIAL_PREFIX):
                if skipped is not None:
                    skipped.append(Skipped(d, "partial run (killed or still running)"))
                continue
            if d.name.startswith("."):
                continue
            why = self._not_a_run(d, st)
            if why:
                if skipped is not None:
                    skipped.append(Skipped(d, why))
                continue
            yield d

    @staticmethod
    def _not_a_run(d: Path, st: os.stat_result | None) -> str | None:
        """Why an entry of runs/ is not a run directory (a file, a link, no run.json), or None."""
        if st is None:
            return "removed while being read"
        kind = _kind(st)
        if kind == "a symbolic link":
            return (
                "a symbolic link, not a run directory (the store reads no run through a link; "
                f"'latscope rm {d.name}' removes the link)"
            )
        if kind:
            return f"not a latscope run ({kind}, not a run directory)"
        try:
            (d / RUN_FILE).lstat()
        except FileNotFoundError:
            return "not a latscope run (no run.json)"
        except OSError as e:
            return f"cannot be read ({e.strerror})"
        return None

    def read_meta(self, d: Path) -> dict[str, Any]:
        """A run's run.json, checked (meta.RUN_SPEC, and its id is the directory's name);
        BadFile (one line) when it cannot be used."""
        return read_run(d)

    def list_meta(self, skipped: list[Skipped] | None = None) -> list[dict[str, Any]]:
        out = []
        for d in self.run_dirs(skipped):
            try:
                out.append(self.read_meta(d))
            except BadFile as e:
                if skipped is not None:
                    skipped.append(Skipped(d, f"{RUN_FILE}: {e.problem}"))
        out.sort(key=lambda m: (m["created_utc"], m["id"]))
        return out

    def _partial(self, d: Path) -> Partial:
        if d.name.startswith(REMOVING_PREFIX):
            rid = d.name[len(REMOVING_PREFIX) :].rsplit("-", 1)[0]
            return Partial(d, rid, bench_of_id(rid), "removing", None, _iso_mtime(d))
        rid = d.name[len(PARTIAL_PREFIX) :]
        owner: dict[str, Any] | None
        try:
            owner = read_json(d / OWNER_FILE, "an owner file (owner.json)", OWNER_SPEC, OWNER_LIMIT)
            pid: int | None = owner["pid"]
        except BadInput:
            owner, pid = None, None
        created = owner.get("started_utc") if owner else None
        if created is None or index.parse_utc(created) is None:
            created = _iso_mtime(d)
        if owner is None or pid is None or pid <= 0:
            try:
                age = time.time() - d.stat().st_mtime
            except OSError:
                age = 0.0
            state = "killed" if age > _OWNERLESS_GRACE_S else "unknown"
        elif owner.get("host") not in (None, socket.gethostname()):
            state = "unknown"
        elif owner.get("boot_id") and owner.get("boot_id") != _boot_id():
            state = "killed"  # measured before the last reboot
        else:
            start = _proc_start_ticks(pid)
            alive = start is not None and (
                owner.get("start_ticks") is None or start == owner.get("start_ticks")
            )
            state = "running" if alive else "killed"
        return Partial(d, rid, bench_of_id(rid), state, pid, created)

    def scan(self, check: bool = True) -> Scan:
        """Everything under runs/: complete runs (sorted by creation time), partial runs and
        entries that are skipped, each with a reason.  Never raises for what it finds (only
        for a store path that is not a store: `exists`).
        check: also verify that each samples.lss is complete (header and trailer only)."""
        out = Scan()
        for d, st in self._entries():
            name = d.name
            if name.startswith(PARTIAL_PREFIX) or name.startswith(REMOVING_PREFIX):
                if st is None:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    out.partials.append(self._partial(d))
                elif name.startswith(REMOVING_PREFIX):  # a link an older rm renamed
                    out.partials.append(self._partial(d))
                else:
                    out.skipped.append(Skipped(d, f"not a partial run ({_kind(st)})"))
                continue
            if name.startswith("."):
                continue  # temporary files of our own writers
            meta, why = self.checked_run(d, st, check)
            if why is not None:
                out.skipped.append(Skipped(d, why))
                continue
            out.runs.append(StoredRun(d, meta))
        out.runs.sort(key=lambda r: (r.meta["created_utc"], r.id))
        return out

    def checked_run(
        self, d: Path, st: os.stat_result | None, check: bool = True
    ) -> tuple[dict[str, Any], None] | tuple[None, str]:
        """A run directory's record, or why it is skipped: not a run directory, a run.json
        that cannot be read, or (``check``) a sample file that is missing or damaged."""
        why = self._not_a_run(d, st)
        if why:
            return None, why
        try:
            meta = self.read_meta(d)
        except BadFile as e:
            return None, f"{RUN_FILE}: {e.problem}"
        if check:
            why = _file_problem(d / SAMPLES_FILE, "a sample file") or samples.check(
                d / SAMPLES_FILE
            )
            if why:
                return None, why
        return meta, None

    def summary(self, run: StoredRun) -> pl.DataFrame:
        """The rows of a run's summary.parquet, checked (`index.read`): a file that is
        missing or damaged is rebuilt by `summarize` (it is a cache of figures the samples
        define); one written by an older latscope (lacking columns of
        `index.SUMMARY_COLUMNS`, e.g. the counts of samples above the tail percentiles) is
        rebuilt too, and where that fails (samples damaged, store read-only) the old rows are
        used as they are, and their tail percentiles, whose rule cannot be checked, are
        withheld by every view (`summary.value`).  A store another user could redirect a
        write into (safe.py) is never written: the rebuilt rows are used as they are.
        BadInput (or OSError) when there is no summary and none can be made."""
        target = run.dir / SUMMARY_FILE
        try:
            rows, complete = index.read(target, run.id)
        except BadFile:
            rows, complete = None, False
        if rows is not None and complete:
            return rows
        try:
            fresh = self.summarize(run)
            try:
                self._keep_summary(run.dir, fresh)
            except BadInput:  # a store another user could redirect: read, never written
                return rows if rows is not None else index.normal(fresh)
            except OSError as e:  # a full or read-only store: the rows computed, not kept
                if e.errno not in space.CACHE_ERRORS:
                    raise
                return index.normal(fresh)
            return index.read(target, run.id)[0]
        except (LatscopeError, OSError, ValueError):
            if rows is not None:
                return rows
            raise

    def ensure_summary(self, run: StoredRun) -> Path:
        """The path of a run's summary.parquet, rebuilt first where it is missing, damaged
        or outdated (`summary`)."""
        self.summary(run)
        return run.dir / SUMMARY_FILE

    def summarize(self, run: StoredRun) -> pl.DataFrame:
        """The rows of summary.parquet for a kept run (`index.summary_frame`).  The store
        computes no summary; the runner's store does (`runner.LabStore`)."""
        raise LatscopeError(
            "this store computes no summaries (latscope.measure.runner.LabStore does)"
        )

    def summaries(
        self,
        runs: Sequence[StoredRun],
        skipped: list[Skipped],
        where: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of the runs' summary.parquet files (`summary`: each read through the guarded
        reader and checked), ordered by creation time, run id and column; ``where``: only the
        rows whose columns have these values (e.g. ``{"column_index": 0}``).  A run whose
        summary cannot be read or rebuilt is added to `skipped` and left out.  Every column of
        SUMMARY_COLUMNS is in every row (null where a file lacks it); created_utc is a naive
        datetime in UTC."""
        import polars as pl

        frames = []
        for r in runs:
            try:
                frames.append(self.summary(r))
            except (LatscopeError, OSError, ValueError) as e:
                if isinstance(e, BadFile):
                    why = f"{SUMMARY_FILE}: {e.problem}"
                elif isinstance(e, OSError):
                    why = f"cannot write {SUMMARY_FILE}: {e.strerror or e}"
                else:
                    why = e.message if isinstance(e, LatscopeError) else str(e)
                skipped.append(Skipped(r.dir, f"no summary and none can be computed ({why})"))
        if not frames:
            return []
        df = pl.concat(frames, how="vertical")
        for k, v in (where or {}).items():
            df = df.filter(pl.col(k) == v)
        return df.sort(["created_utc", "run_id", "column_index"]).to_dicts()

    def resolve(self, ref: str, any_entry: bool = False, host: str | None = None) -> Path:
        """A run directory from an id, a unique id prefix, 'last', or a path. An empty
        reference (an unset shell variable) is an error, never a match of every run.  A
        directory of runs/ named exactly is found even when it is damaged (what is wrong is
        said when it is read; `rm` removes it); ``any_entry``: any entry of runs/ named
        exactly, a symbolic link or a file too (for `rm`, which removes it, never following
        a link), else such an entry is refused.  ``host``: a run of that host (`host_of`):
        'last' is its latest, a part of an id matches its runs only."""
        if host is not None:
            return self._resolve_on(ref, host)
        if not ref.strip():
            raise BadInput(
                "an empty run reference: give a run id, a unique part of one, or 'last' "
                "('latscope ls' lists the runs)"
            )
        exact = self.runs_dir / ref
        inside = "/" not in ref and ref not in (".", "..") and not ref.startswith(".")
        try:
            st = exact.lstat() if inside else None
        except (OSError, ValueError):  # ValueError: a NUL in the name
            st = None
        kind = _kind(st) if st is not None else None
        if kind and not any_entry:
            raise BadInput(
                f"{ref}: {kind} in the store {self.root}, not a run directory "
                f"('latscope rm {ref}' removes it)"
            )
        if st is not None and (kind is None or any_entry):
            return exact
        p = Path(ref)
        if p.is_dir() and (p / RUN_FILE).is_file():
            return p
        if ref in ("last", "latest"):
            metas = self.list_meta()
            if not metas:
                raise BadInput(f"the store {self.root} has no runs yet")
            return self.runs_dir / metas[-1]["id"]
        matches = [d for d in self.run_dirs() if d.name.startswith(ref) or ref in d.name]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise BadInput(f"no run '{ref}' in the store {self.root}; 'latscope ls' lists the runs")
        names = ", ".join(d.name for d in matches[:5])
        raise BadInput(f"'{ref}' matches {len(matches)} runs ({names}...); give more of the id")

    def _resolve_on(self, ref: str, host: str) -> Path:
        """`resolve` among the runs of one host."""
        if ref in ("last", "latest"):
            metas = [m for m in self.list_meta() if host_of(m) == host]
            if not metas:
                raise BadInput(f"the store {self.root} has no runs of host {host}")
            return self.runs_dir / metas[-1]["id"]
        try:
            d = self.resolve(ref)
        except BadInput as e:
            if "matches" not in e.message:
                raise
            d = None
        if d is not None:
            theirs = host_of(self.read_meta(d))
            if theirs != host:
                raise BadInput(f"run {d.name} is of host {theirs or 'unknown'}, not {host}")
            return d
        matches = []
        for d in self.run_dirs():
            if ref in d.name:
                try:
                    if host_of(self.read_meta(d)) == host:
                        matches.append(d)
                except BadFile:
                    continue
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise BadInput(f"no run '{ref}' of host {host} in the store {self.root}")
        names = ", ".join(d.name for d in matches[:5])
        raise BadInput(f"'{ref}' matches {len(matches)} runs of host {host} ({names}...)")
