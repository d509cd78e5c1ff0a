"""The store's directories: one per run, made visible by an atomic rename once everything in
it is written, so two processes can add runs to one store at the same time and a run killed
half-way never looks complete; `scan()`, the health check; summaries read across runs with
DuckDB.  The layout is in layout.py, summary.parquet in index.py."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import leftovers, samples
from ..errors import BadInput, LatscopeError
from ..files import write_text
from ..leftovers import proc_start_ticks as _proc_start_ticks
from . import index
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
    bench_of_id,
    default_location,
)

if TYPE_CHECKING:
    import polars as pl

# A partial directory without an owner file is taken for a dead one after this long.
_OWNERLESS_GRACE_S = 60.0


# ------------------------------------------------------------------------------- helpers


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _iso_mtime(p: Path) -> str | None:
    try:
        t = p.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    ) -> Path:
        """Write summary.parquet (rows from `index.summary_frame`) and run.json, then make the
        run visible with one atomic rename."""
        if summary is not None:
            index.write(summary, partial / SUMMARY_FILE)
        write_text(partial / RUN_FILE, json.dumps(meta, indent=1, sort_keys=False))
        (partial / OWNER_FILE).unlink(missing_ok=True)
        final = self.runs_dir / run_id
        try:
            os.rename(partial, final)
        except OSError as e:
            raise BadInput(f"cannot commit run {run_id} in {self.runs_dir}: {e.strerror}") from None
        return final

    def abandon(self, partial: Path) -> None:
        leftovers.clean_dir(partial)  # a killed probe's System V objects and test files
        shutil.rmtree(partial, ignore_errors=True)

    @contextmanager
    def transaction(self, bench: str) -> Iterator[Transaction]:
        """A run being added: a partial directory (`begin`) to write its files into, made a
        run by `Transaction.commit` (one atomic rename), removed when the block fails or ends
        without a commit.  The one way runs enter the store (measured or imported)."""
        run_id, partial = self.begin(bench)
        t = Transaction(self, run_id, partial)
        try:
            yield t
        finally:
            if t.final is None:
                self.abandon(partial)

    def remove(self, d: Path) -> None:
        """Remove a run: first renamed out of sight (atomic), then deleted, so a half-deleted
        run never looks like a run; a leftover is cleaned by `remove_partials`."""
        gone = self.runs_dir / f"{REMOVING_PREFIX}{d.name}-{secrets.token_hex(2)}"
        try:
            os.rename(d, gone)
        except FileNotFoundError:
            return
        except OSError as e:
            raise BadInput(f"cannot remove {d}: {e.strerror}") from None
        shutil.rmtree(gone, ignore_errors=True)

    def remove_partials(self) -> tuple[list[Partial], list[Partial]]:
        """Remove what killed runs and interrupted removals left; runs still being measured
        (their owner process is alive) are kept.  Returns (removed, kept)."""
        removed, kept = [], []
        for p in self.scan(check=False).partials:
            if p.state in ("killed", "removing"):
                leftovers.clean_dir(p.path)
                shutil.rmtree(p.path, ignore_errors=True)
                if not p.path.exists():
                    removed.append(p)
                    continue
            kept.append(p)
        return removed, kept

    # ---------------------------------------------------------------- reading

    def run_dirs(self, skipped: list[Skipped] | None = None) -> Iterator[Path]:
        if not self.runs_dir.is_dir():
            return
        for d in sorted(self.runs_dir.iterdir()):
            if d.name.startswith(PARTIAL_PREFIX):
                if skipped is not None:
                    skipped.append(Skipped(d, "partial run (killed or still running)"))
                continue
            if d.name.startswith("."):
                continue
            if not d.is_dir() or not (d / RUN_FILE).is_file():
                if skipped is not None:
                    skipped.append(Skipped(d, "not a latscope run"))
                continue
            yield d

    def read_meta(self, d: Path) -> dict[str, Any]:
        try:
            meta = json.loads((d / RUN_FILE).read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadInput(f"{d / RUN_FILE}: unreadable run metadata ({e})") from None
        if not isinstance(meta, dict) or "id" not in meta:
            raise BadInput(f"{d / RUN_FILE}: not latscope run metadata")
        return meta

    def list_meta(self, skipped: list[Skipped] | None = None) -> list[dict[str, Any]]:
        out = []
        for d in self.run_dirs(skipped):
            try:
                out.append(self.read_meta(d))
            except BadInput as e:
                if skipped is not None:
                    skipped.append(Skipped(d, str(e)))
        out.sort(key=lambda m: (m.get("created_utc", ""), m["id"]))
        return out

    def _partial(self, d: Path) -> Partial:
        if d.name.startswith(REMOVING_PREFIX):
            rid = d.name[len(REMOVING_PREFIX) :].rsplit("-", 1)[0]
            return Partial(d, rid, bench_of_id(rid), "removing", None, _iso_mtime(d))
        rid = d.name[len(PARTIAL_PREFIX) :]
        try:
            owner = json.loads((d / OWNER_FILE).read_text())
            pid = int(owner["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            owner, pid = None, None
        created = owner.get("started_utc") if owner else _iso_mtime(d)
        if owner is None or pid is None:
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
        entries that are skipped, each with a reason.  Never raises for what it finds.
        check: also verify that each samples.lss is complete (header and trailer only)."""
        out = Scan()
        try:
            entries = sorted(self.runs_dir.iterdir()) if self.runs_dir.is_dir() else []
        except OSError as e:
            raise BadInput(f"cannot read the store {self.root}: {e.strerror}") from None
        for d in entries:
            name = d.name
            if name.startswith(PARTIAL_PREFIX) or name.startswith(REMOVING_PREFIX):
                if d.is_dir():
                    out.partials.append(self._partial(d))
                continue
            if name.startswith("."):
                continue  # temporary files of our own writers
            if not d.is_dir():
                out.skipped.append(Skipped(d, "not a latscope run (a file, not a run directory)"))
                continue
            if not (d / RUN_FILE).is_file():
                out.skipped.append(Skipped(d, "not a latscope run (no run.json)"))
                continue
            try:
                meta = self.read_meta(d)
            except BadInput as e:
                out.skipped.append(Skipped(d, e.message.split(": ", 1)[-1]))
                continue
            if check:
                why = samples.check(d / SAMPLES_FILE)
                if why:
                    out.skipped.append(Skipped(d, why))
                    continue
            out.runs.append(StoredRun(d, meta))
        out.runs.sort(key=lambda r: (str(r.meta.get("created_utc", "")), r.id))
        return out

    def ensure_summary(self, run: StoredRun) -> Path:
        """summary.parquet of a run, rebuilt by `summarize` if missing (runs kept by older
        versions): it is a cache of figures the samples define.  A file written by an older
        latscope (lacking columns of `index.SUMMARY_COLUMNS`, e.g. the counts of samples above
        the tail percentiles) is rebuilt too; where that fails (samples damaged, store
        read-only) the old file is used as it is, and its tail percentiles, whose rule cannot
        be checked, are withheld by every view (`summary.value`)."""
        target = run.dir / SUMMARY_FILE
        if target.is_file():
            if not index.outdated(target):
                return target
            try:
                index.write(self.summarize(run), target)
            except (LatscopeError, OSError, ValueError):
                pass
            return target
        index.write(self.summarize(run), target)
        return target

    def summarize(self, run: StoredRun) -> pl.DataFrame:
        """The rows of summary.parquet for a kept run (`index.summary_frame`).  The store
        computes no summary; the runner's store does (`runner.LabStore`)."""
        raise LatscopeError("this store computes no summaries (latscope.runner.LabStore does)")

    def summaries(
        self,
        runs: Sequence[StoredRun],
        skipped: list[Skipped],
        where: str = "",
        args: Iterable[Any] = (),
    ) -> list[dict[str, Any]]:
        """Rows of the runs' summary.parquet files, read together with DuckDB, ordered by
        creation time, run id and column.  `where` is an SQL condition on the columns of
        SUMMARY_COLUMNS with `?` placeholders bound to `args`.  A run whose summary cannot be
        read or rebuilt is added to `skipped` and left out; a column that an old file lacks is
        absent from its rows (or null, when other files have it)."""
        import duckdb

        files: dict[str, StoredRun] = {}
        for r in runs:
            try:
                files[str(self.ensure_summary(r))] = r
            except (LatscopeError, OSError, ValueError) as e:
                skipped.append(Skipped(r.dir, f"no summary and none can be computed ({e})"))
        # created_utc comes back as a naive datetime in UTC (no pytz needed)
        sql = (
            "SELECT * REPLACE (CAST(created_utc AS TIMESTAMP) AS created_utc) "
            "FROM read_parquet(?, union_by_name=true)"
            + (f" WHERE {where}" if where else "")
            + " ORDER BY created_utc, run_id, column_index"
        )
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        for attempt in range(2):
            if not files:
                return []
            try:
                cur = con.execute(sql, [list(files), *args])
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
            except duckdb.Error:
                if attempt:
                    raise
            # one file is bad (damaged, removed meanwhile): find it, rebuild or skip it
            for f, r in list(files.items()):
                try:
                    con.execute("SELECT count(*) FROM read_parquet(?)", [f]).fetchall()
                    continue
                except duckdb.Error:
                    pass
                try:
                    Path(f).unlink(missing_ok=True)
                    if r.dir.is_dir():
                        self.ensure_summary(r)
                        con.execute("SELECT count(*) FROM read_parquet(?)", [f]).fetchall()
                        continue
                    skipped.append(Skipped(r.dir, "removed while being read"))
                except (LatscopeError, OSError, ValueError, duckdb.Error) as e:
                    skipped.append(Skipped(r.dir, f"summary.parquet unreadable ({e})"))
                del files[f]
        return []

    def resolve(self, ref: str) -> Path:
        """A run directory from an id, a unique id prefix, 'last', or a path. An empty
        reference (an unset shell variable) is an error, never a match of every run."""
        if not ref.strip():
            raise BadInput(
                "an empty run reference: give a run id, a unique part of one, or 'last' "
                "('latscope ls' lists the runs)"
            )
        p = Path(ref)
        if p.is_dir() and (p / RUN_FILE).is_file():
            return p
        if ref in ("last", "latest"):
            metas = self.list_meta()
            if not metas:
                raise BadInput(f"the store {self.root} has no runs yet")
            return self.runs_dir / metas[-1]["id"]
        exact = self.runs_dir / ref
        if ref and not ref.startswith(".") and exact.is_dir() and (exact / RUN_FILE).is_file():
            return exact
        matches = [d for d in self.run_dirs() if d.name.startswith(ref) or ref in d.name]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise BadInput(f"no run '{ref}' in the store {self.root}; 'latscope ls' lists the runs")
        names = ", ".join(d.name for d in matches[:5])
        raise BadInput(f"'{ref}' matches {len(matches)} runs ({names}...); give more of the id")


@dataclass
class Transaction:
    """A run being added to a store (`Store.transaction`): ``dir`` is its partial directory,
    ``final`` its run directory once committed."""

    store: Store
    id: str
    dir: Path
    final: Path | None = None

    @property
    def samples_path(self) -> Path:
        return self.dir / SAMPLES_FILE

    def commit(self, meta: dict[str, Any], summary: pl.DataFrame | None = None) -> Path:
        """run.json (and summary.parquet), then the rename that makes the run visible."""
        self.final = self.store.commit(self.id, self.dir, meta, summary)
        return self.final
