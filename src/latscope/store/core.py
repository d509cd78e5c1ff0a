"""Where runs are kept: one directory per run under a store directory.

Layout (docs/store.md):

    STORE/runs/<run id>/run.json       what was run, when, where (metadata, environment)
    STORE/runs/<run id>/samples.lss    the probe's sample file, untouched
    STORE/runs/.partial-<run id>/      a run being measured; renamed when complete

A run directory appears by an atomic rename once everything in it is written, so two
processes can add runs to one store at the same time, and a run killed half-way never
looks complete.  Files that are not runs are reported and skipped, never fatal.

Each committed run also holds `summary.parquet` (one row per timed column: the figures of the
summary table, the run id, benchmark, parameters, creation time and suite tags), written before
the rename like everything else.  Queries across runs (`latscope ls`, `latscope history`) read
those files with DuckDB and never touch the samples.  `scan()` is the store's health check: it
reads every run.json, checks each samples.lss for its END line and exact size (no sample is
read), and sorts what it finds into runs, partial runs (with their owner: still running or
killed) and entries it skips with a reason.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

from .errors import BadInput, LatscopeError

RUN_FILE = "run.json"
SAMPLES_FILE = "samples.lss"
SUMMARY_FILE = "summary.parquet"
OWNER_FILE = "owner.json"
PARTIAL_PREFIX = ".partial-"
REMOVING_PREFIX = ".removing-"
# 2: the figures of summary.STATS, tail percentiles null where withheld, with their counts of
# samples above (<figure>_n_beyond).  Files of version 1 are recomputed when read.
SUMMARY_SCHEMA_VERSION = 2
# A partial directory without an owner file is taken for a dead one after this long.
_OWNERLESS_GRACE_S = 60.0


def default_location() -> Path:
    env = os.environ.get("LATSCOPE_STORE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "latscope"


@dataclass
class Skipped:
    path: Path
    why: str

    def line(self) -> str:
        return f"skipped {self.path}: {self.why}"


@dataclass
class StoredRun:
    """A complete run found by `Store.scan()`: its directory and its run.json."""

    dir: Path
    meta: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.meta["id"])


@dataclass
class Partial:
    """A run directory that was never committed: still being measured, or left by a run that
    was killed (or by an interrupted `rm`)."""

    path: Path
    run_id: str
    benchmark: str | None
    state: str  # "running" | "killed" | "removing" | "unknown"
    pid: int | None
    created_utc: str | None

    @property
    def status(self) -> str:
        if self.state == "running":
            return f"partial (running, pid {self.pid})"
        if self.state == "removing":
            return "partial (left by an interrupted rm)"
        if self.state == "unknown":
            return "partial (owner on another host or just starting)"
        return "partial (killed)"


@dataclass
class Scan:
    runs: list[StoredRun] = field(default_factory=list)
    partials: list[Partial] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


# ------------------------------------------------------------------------------- helpers


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _proc_start_ticks(pid: int) -> int | None:
    """The start time of a process (clock ticks since boot): with the pid, it names the
    process uniquely, so a recycled pid is not taken for the owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return None


def _iso_mtime(p: Path) -> str | None:
    try:
        t = p.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def bench_of_id(run_id: str) -> str | None:
    """The benchmark named in a run id (YYYYmmdd-HHMMSS-<bench>-<hex>)."""
    parts = run_id.split("-")
    if len(parts) < 4:
        return None
    return "-".join(parts[2:-1]) or None


def check_samples(path: Path) -> str | None:
    """Why a sample file is not complete, or None.  Reads the header lines and the trailer
    only (no sample, no checksum): the END line must be there and the file exactly as long as
    its DATA line says.  `latscope show` verifies the checksum when it reads the samples."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(1 << 20)
            nl1 = head.find(b"\n")
            nl2 = head.find(b"\n", nl1 + 1) if nl1 >= 0 else -1
            nl3 = head.find(b"\n", nl2 + 1) if nl2 >= 0 else -1
            if not head.startswith(b"LATSCOPE-SAMPLES ") or nl3 < 0:
                return "samples.lss is not a complete sample file (damaged header)"
            data = head[nl2 + 1 : nl3].split()
            if len(data) != 3 or data[0] != b"DATA":
                return "samples.lss is damaged (no DATA line)"
            ncols, nrows = int(data[1]), int(data[2])
            trailer_len = len(f"\nEND {nrows} 00000000\n")
            expected = nl3 + 1 + ncols * nrows * 8 + trailer_len
            if size < expected:
                return f"samples.lss is truncated ({size} of {expected} bytes)"
            f.seek(expected - trailer_len)
            if size != expected or not f.read(trailer_len).startswith(b"\nEND "):
                return "samples.lss is damaged (no END line where the DATA line puts it)"
    except FileNotFoundError:
        return "samples.lss is missing"
    except (OSError, ValueError) as e:
        return f"samples.lss cannot be read ({e})"
    return None


# ------------------------------------------------------------------------------- summary.parquet


def _summary_columns() -> tuple[tuple[str, str], ...]:
    from .summary import summary_columns

    head = (
        ("schema_version", "Int32"),
        ("run_id", "Utf8"),
        ("created_utc", "Datetime"),
        ("benchmark", "Utf8"),
        ("params", "Utf8"),  # JSON: every parameter, defaults filled in (from the sample file)
        ("params_given", "Utf8"),  # JSON: the parameters the user gave
        ("column", "Utf8"),
        ("column_index", "Int32"),
    )
    tail = (
        ("clock", "Utf8"),
        ("suite", "Utf8"),
        ("suite_run", "Utf8"),
        ("scenario", "Utf8"),
        ("repetition", "Int32"),
        ("order_index", "Int32"),
        ("repeat_group", "Utf8"),
        ("hostname", "Utf8"),
        ("latscope_version", "Utf8"),
    )
    return head + tuple(summary_columns()) + tail


def __getattr__(name: str) -> Any:
    """`SUMMARY_COLUMNS`: the columns of summary.parquet, in order (polars dtypes by name): the
    run's identity, then the figures of `summary.STATS` (each tail percentile followed by the
    count of samples above it; null where withheld), then the tags.  Resolved on first use
    (the table lives with the analysis, which is not needed to list a store's runs)."""
    if name == "SUMMARY_COLUMNS":
        return _summary_columns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parse_utc(s: Any) -> datetime | None:
    if not isinstance(s, str) or not s:
        return None
    for f in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(s, f).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


def _int_or_none(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def summary_frame(meta: dict[str, Any], summary: pl.DataFrame) -> pl.DataFrame:
    """The rows of summary.parquet for one run: `summary` is `Run.summary()`, `meta` the run's
    run.json (id, created_utc, benchmark, params, params_given, tags, ...)."""
    import polars as pl

    from .summary import summary_columns

    figures = summary_columns()
    tags = meta.get("tags") or {}
    env = meta.get("env") or {}
    common = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_id": meta["id"],
        "created_utc": _parse_utc(meta.get("created_utc")),
        "benchmark": meta.get("benchmark"),
        "params": json.dumps(meta.get("params") or {}, sort_keys=True),
        "params_given": json.dumps(meta.get("params_given") or {}, sort_keys=True),
        "clock": meta.get("clock"),
        "suite": tags.get("suite"),
        "suite_run": tags.get("suite_run"),
        "scenario": tags.get("scenario"),
        "repetition": _int_or_none(tags.get("repetition")),
        "order_index": _int_or_none(tags.get("order")),
        "repeat_group": tags.get("repeat_group"),
        "hostname": env.get("hostname"),
        "latscope_version": meta.get("latscope_version"),
    }
    rows = []
    for i, r in enumerate(summary.iter_rows(named=True)):
        row = dict(common)
        row["column"] = r["column"]
        row["column_index"] = i
        for name, _ in figures:
            row[name] = r.get(name)
        rows.append(row)
    dtypes = {
        "Int32": pl.Int32,
        "Int64": pl.Int64,
        "Float64": pl.Float64,
        "Utf8": pl.Utf8,
        "Datetime": pl.Datetime("us", "UTC"),
    }
    schema = {name: dtypes[t] for name, t in _summary_columns()}
    return pl.DataFrame(rows, schema=schema)


def _write_atomic_parquet(df: pl.DataFrame, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp.{os.getpid()}.{secrets.token_hex(2)}")
    try:
        df.write_parquet(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_atomic(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically: a fresh file with an unpredictable name
    (O_EXCL|O_NOFOLLOW) in the same directory, then renamed over the target."""
    tmp = target.with_name(f".{target.name}.tmp.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


# ------------------------------------------------------------------------------- the store


class Store:
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
            (partial / OWNER_FILE).write_text(json.dumps(owner))
            return run_id, partial
        raise BadInput(f"cannot allocate a run directory in {self.runs_dir}")

    def commit(
        self,
        run_id: str,
        partial: Path,
        meta: dict[str, Any],
        summary: pl.DataFrame | None = None,
    ) -> Path:
        """Write summary.parquet (rows from `summary_frame`) and run.json, then make the run
        visible with one atomic rename."""
        if summary is not None:
            _write_atomic_parquet(summary, partial / SUMMARY_FILE)
        tmp = partial / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=False))
        os.replace(tmp, partial / RUN_FILE)
        (partial / OWNER_FILE).unlink(missing_ok=True)
        final = self.runs_dir / run_id
        try:
            os.rename(partial, final)
        except OSError as e:
            raise BadInput(f"cannot commit run {run_id} in {self.runs_dir}: {e.strerror}") from None
        return final

    def abandon(self, partial: Path) -> None:
        shutil.rmtree(partial, ignore_errors=True)

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
                why = check_samples(d / SAMPLES_FILE)
                if why:
                    out.skipped.append(Skipped(d, why))
                    continue
            out.runs.append(StoredRun(d, meta))
        out.runs.sort(key=lambda r: (str(r.meta.get("created_utc", "")), r.id))
        return out

    def ensure_summary(self, run: StoredRun) -> Path:
        """summary.parquet of a run, computed from its samples if missing (runs kept by older
        versions): it is a cache of figures the samples define.  A file written by an older
        latscope (lacking columns of `SUMMARY_COLUMNS`, e.g. the counts of samples above the
        tail percentiles) is recomputed too; where that fails (samples damaged, store
        read-only) the old file is used as it is, and its tail percentiles, whose rule cannot
        be checked, are withheld by every view (`summary.value`)."""
        target = run.dir / SUMMARY_FILE
        if target.is_file():
            if not self._summary_outdated(target):
                return target
            try:
                self._write_summary(run, target)
            except (LatscopeError, OSError, ValueError):
                pass
            return target
        self._write_summary(run, target)
        return target

    @staticmethod
    def _summary_outdated(target: Path) -> bool:
        import polars as pl

        try:
            have = set(pl.read_parquet_schema(target))
        except Exception:  # damaged: `summaries` finds it and rebuilds it
            return False
        return any(name not in have for name, _ in _summary_columns())

    @staticmethod
    def _write_summary(run: StoredRun, target: Path) -> None:
        from .runs import Run

        r = Run(run.dir)
        meta = dict(run.meta)
        meta.setdefault("params", r.meta.get("params"))
        meta.setdefault("clock", (r.meta.get("clock") or {}).get("name"))
        _write_atomic_parquet(summary_frame(meta, r.summary()), target)

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
        """A run directory from an id, a unique id prefix, 'last', or a path."""
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
