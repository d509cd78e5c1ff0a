"""The store's directories: one per run, made visible by an atomic rename once everything in
it is written, so two processes can add runs to one store at the same time and a run killed
half-way never looks complete; `scan()`, the health check; summaries read across runs.  The
layout is in layout.py, summary.parquet in index.py, the checked reading of run.json and the
other JSON files in meta.py."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import leftovers, samples
from ..errors import BadInput, LatscopeError
from ..files import write_text
from ..leftovers import proc_start_ticks as _proc_start_ticks
from . import index, table
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

if TYPE_CHECKING:
    import polars as pl

# A partial directory without an owner file is taken for a dead one after this long.
_OWNERLESS_GRACE_S = 60.0


# ------------------------------------------------------------------------------- helpers


def delete(p: Path) -> None:
    """Remove a store entry: a directory with what it holds, anything else (a symbolic link, a
    file) by unlinking it; a link is never followed.  Errors are left for the caller to see
    (the entry still exists)."""
    try:
        st = p.lstat()
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(p, ignore_errors=True)
    else:
        try:
            p.unlink()
        except OSError:
            pass


# ------------------------------------------------------------------------------- the store


class Store:
    """The runs under ``root`` (default: `default_location()`): adding them (`transaction`),
    finding them (`scan`, `resolve`), removing them, and their summaries across runs
    (`summaries`).  The store keeps files and indexes; it computes no summary: a run's
    summary.parquet is written with the rows the runner computed when the run was made, and
    one missing or outdated (runs kept by an older latscope) is rebuilt by `summarize`, which
    the runner's store (`runner.LabStore`) provides."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_location()

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    def ensure(self) -> None:
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BadInput(f"cannot create the store {self.root}: {e.strerror}") from None
        if not os.access(self.runs_dir, os.W_OK):
            raise BadInput(f"the store {self.root} is not writable; use --store DIR")

    # ---------------------------------------------------------------- writing

    def new_run_id(self, bench: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        return f"{stamp}-{bench}-{secrets.token_hex(2)}"

    def begin(self, bench: str) -> tuple[str, Path]:
        """A fresh partial directory for a run being measured, with an owner file naming this
        process (pid, its start time, boot id, host), so that `scan()` can tell a run still
        being measured from one that was killed."""
        self.ensure()
        leftovers.sweep(self.runs_dir, PARTIAL_PREFIX)  # what killed probes left (dead owners)
        for _ in range(100):
            run_id = self.new_run_id(bench)
            if (self.runs_dir / run_id).exists():
                continue
            partial = self.runs_dir / f"{PARTIAL_PREFIX}{run_id}"
            try:
                partial.mkdir()
            except FileExistsError:
                continue
            owner = {
                "pid": os.getpid(),
                "start_ticks": _proc_start_ticks(os.getpid()),
                "boot_id": _boot_id(),
                "host": socket.gethostname(),
                "started_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            write_text(partial / OWNER_FILE, json.dumps(owner))
            return run_id, partial
        raise BadInput(f"cannot allocate a run directory in {self.runs_dir}")

    def commit(
        self,
        run_id: str,
        partial: Path,
        meta: dict[str, Any],
        summary: pl.DataFrame | None = None,
        *,
        host: str | None = None,
    ) -> Path:
        """Write summary.parquet (rows from `index.summary_frame`) and run.json, then make the
        run visible with one atomic rename, and add its rows to the summary table (table.py;
        a failure there is left for the next read to mend: the run is committed).  ``host``:
        the host the run belongs to (an import's or a fleet's host tag), kept in run.json as
        ``host``; without it, the run's own environment says (`layout.host_of`)."""
        if host is not None:
            meta = {**meta, "host": host}
        if summary is not None:
            index.write(summary, partial / SUMMARY_FILE)
        write_text(partial / RUN_FILE, json.dumps(meta, indent=1, sort_keys=False))
        (partial / OWNER_FILE).unlink(missing_ok=True)
        final = self.runs_dir / run_id
        try:
            os.rename(partial, final)
        except OSError as e:
            raise BadInput(f"cannot commit run {run_id} in {self.runs_dir}: {e.strerror}") from None
        if summary is not None:
            self._index(final, meta, summary)
        return final

    def _index(self, final: Path, meta: dict[str, Any], summary: pl.DataFrame) -> None:
        try:
            rows = table.rows_of(
                meta, index.normal(summary), host_of(meta), table.fingerprint(final, RUN_FILES)
            )
            table.append(self.root, rows)
        except (OSError, LatscopeError, ValueError):
            pass  # the next `ls` or `history` finds the run without rows and adds them

    def abandon(self, partial: Path) -> None:
        leftovers.clean_dir(partial)  # a killed probe's System V objects and test files
        shutil.rmtree(partial, ignore_errors=True)

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
        a symbolic link is removed as the link (never followed)."""
        gone = self.runs_dir / f"{REMOVING_PREFIX}{d.name}-{secrets.token_hex(2)}"
        try:
            os.rename(d, gone)
        except FileNotFoundError:
            return
        except OSError as e:
            raise BadInput(f"cannot remove {d}: {e.strerror}") from None
        delete(gone)
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
        removed, kept = [], []
        for p in self.scan(check=False).partials:
            if p.state in ("killed", "removing"):
                leftovers.clean_dir(p.path)
                if leftovers.makers_alive(p.path):
                    kept.append(p)  # a maker still runs: its record stays, and so the run
                    continue
                delete(p.path)
                if not os.path.lexists(p.path):
                    removed.append(p)
                    continue
            kept.append(p)
        return removed, kept

    # ---------------------------------------------------------------- reading

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
        withheld by every view (`summary.value`).  BadInput (or OSError) when there is no
        summary and none can be made."""
        target = run.dir / SUMMARY_FILE
        try:
            rows, complete = index.read(target, run.id)
        except BadFile:
            rows, complete = None, False
        if rows is not None and complete:
            return rows
        try:
            fresh = self.summarize(run)
            index.write(fresh, target)
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
        raise LatscopeError("this store computes no summaries (latscope.runner.LabStore does)")

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


@dataclass
class Transaction:
    """A run being added to a store (`Store.transaction`): ``dir`` is its partial directory,
    ``final`` its run directory once committed."""

    store: Store
    id: str
    dir: Path
    final: Path | None = None
    host: str | None = None  # the host tag the run is kept with

    @property
    def samples_path(self) -> Path:
        return self.dir / SAMPLES_FILE

    def commit(
        self, meta: dict[str, Any], summary: pl.DataFrame | None = None, *, host: str | None = None
    ) -> Path:
        """run.json (and summary.parquet), then the rename that makes the run visible.
        ``host``: the host tag (default: the transaction's)."""
        host = host if host is not None else self.host
        self.final = self.store.commit(self.id, self.dir, meta, summary, host=host)
        return self.final
