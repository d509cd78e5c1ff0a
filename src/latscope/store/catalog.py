"""The runs of a store with their summary rows, read from the summary table (table.py) and
checked against the run directories: what `latscope ls` and `latscope history` show.

A run's rows in the table are used as they are when its files (run.json, samples.lss,
summary.parquet) are those they were written with (`table.fingerprint`); any other run (kept
by an older latscope, whose store has no table yet; changed or damaged since; added while a
table write failed) is read and checked as `Store.scan` does (run.json against its spec, the
sample file's END line and length, summary.parquet, rebuilt from the samples where needed)
and its rows are written to the table, so the next read finds them: a store in the layout of
an older latscope is indexed once, by its first `ls` or `history`, which says so in one line.
Rows of runs that are gone are never shown; a damaged part file is one line, and its runs are
indexed again from their directories.  A read-only store, or one another user could redirect
a write into (safe.py, `Store.writable`), is read the same way, its table left as it is.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import BadInput, LatscopeError
from . import rowcache, table
from .core import Store
from .layout import (
    PARTIAL_PREFIX,
    REMOVING_PREFIX,
    RUN_FILES,
    SUMMARY_FILE,
    Partial,
    Skipped,
    StoredRun,
    bench_of_id,
    host_of,
)
from .meta import BadFile

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Catalog:
    rows: pl.DataFrame  # table.ROW_COLUMNS, by creation time, run id and column
    partials: list[Partial] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    indexed: int = 0  # runs whose rows this read wrote to the table
    hosts: list[str] = field(default_factory=list)  # every host of the runs read, sorted

    def dicts(self) -> list[dict[str, Any]]:
        return self.rows.to_dicts()


def _host_rows(store: Store, d: Any, meta: dict[str, Any]) -> pl.DataFrame:
    summary = store.summary(StoredRun(d, meta))
    return table.rows_of(meta, summary, host_of(meta), table.fingerprint(d, RUN_FILES))


def catalog(
    store: Store,
    benchmark: str | None = None,
    host: str | None = None,
    write: bool = True,
) -> Catalog:
    """The complete runs of ``store`` (``benchmark``, ``host``: only those) with their summary
    rows, the partial runs, and the entries skipped with a reason (`Store.scan`'s, and damaged
    parts of the table).  ``write``: runs found without current rows are added to the table."""
    import polars as pl

    out = Catalog(table.frame([]))
    entries = _entries(store)  # a path that is not a store: one line, exit 2
    t = (
        rowcache.table_rows(store.root, benchmark, writable=lambda: write and store.writable())
        if entries
        else table.Table(table.frame([]), {}, [])
    )
    out.skipped.extend(t.damaged)
    known: dict[str, str] = {}
    if t.rows.height:
        firsts = t.rows.unique("run_id", keep="first")
        known = dict(zip(firsts["run_id"].to_list(), firsts["fingerprint"].to_list(), strict=True))
    trusted: list[str] = []
    fresh: list[pl.DataFrame] = []
    present: set[str] = set()
    for name, path, is_dir in entries:
        if name.startswith((PARTIAL_PREFIX, REMOVING_PREFIX)):
            d = store.runs_dir / name
            st = _lstat(d)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode) or name.startswith(REMOVING_PREFIX):
                p = store._partial(d)
                if benchmark is None or p.benchmark == benchmark:
                    out.partials.append(p)
            else:
                out.skipped.append(Skipped(d, f"not a partial run ({_kind(st)})"))
            continue
        if name.startswith("."):
            continue
        present.add(name)
        if is_dir and name in known and known[name] == table.fingerprint(path, RUN_FILES):
            trusted.append(name)
            continue
        other = bench_of_id(name)
        if benchmark is not None and name not in known and other not in (None, benchmark):
            continue  # another benchmark's run (its id names it), read when that one is
        d = store.runs_dir / name
        meta, why = store.checked_run(d, _lstat(d))
        if why is not None:
            out.skipped.append(Skipped(d, why))
            continue
        try:
            fresh.append(_host_rows(store, d, meta))
        except (LatscopeError, OSError, ValueError) as e:
            out.skipped.append(Skipped(d, f"no summary and none can be computed ({_reason(e)})"))
    write = write and bool(fresh or t.mend or set(known) - present) and store.writable()
    if fresh and write:
        out.indexed = _index(store, pl.concat(fresh, how="vertical"), t.partitions)
    if t.mend and write:
        for names in t.mend:  # a damaged part file goes: its runs were indexed again above
            try:
                table.compact(store.root, names)
            except (OSError, LatscopeError):
                pass
    rows = t.rows.filter(pl.col("run_id").is_in(trusted))
    if fresh:
        rows = pl.concat([rows, *fresh], how="vertical")
    gone = set(known) - present
    if gone and write:
        _forget(store, gone, t.partitions)
    if benchmark is not None:
        rows = rows.filter(pl.col("benchmark") == benchmark)
    out.hosts = sorted(h for h in rows["host"].unique().to_list() if h is not None)
    if host is not None:
        rows = rows.filter(pl.col("host") == host)
    out.rows = rows.sort(["created_utc", "run_id", "column_index"])
    return out


def _entries(store: Store) -> list[tuple[str, str, bool]]:
    """Every entry of runs/: its name, path and whether it is a directory (not a link), by
    name."""

    if not store.exists():
        return []
    try:
        with os.scandir(store.runs_dir) as it:
            out = [(e.name, e.path, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError as e:
        raise BadInput(f"cannot read the store {store.root}: {e.strerror}") from None
    return sorted(out)


def _lstat(p: Any) -> os.stat_result | None:
    try:
        return os.lstat(p)
    except OSError:
        return None


def _kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    return "a file" if stat.S_ISREG(st.st_mode) else "a FIFO, device or socket"


def _reason(e: Exception) -> str:
    if isinstance(e, BadFile):
        return f"{SUMMARY_FILE}: {e.problem}"
    if isinstance(e, OSError):
        return f"cannot write {SUMMARY_FILE}: {e.strerror or e}"
    return e.message if isinstance(e, LatscopeError) else str(e)


def _index(store: Store, rows: pl.DataFrame, where: dict[str, list[tuple[str, str]]]) -> int:
    """Write rows found without current ones to the table; the partitions that held older
    rows of these runs are compacted (one set per run).  The number of runs written (0 when
    the store cannot be written: it is read the same way next time)."""
    ids = rows["run_id"].unique().to_list()
    try:
        written = table.append(store.root, rows)
        stale = {p for rid in ids for p in where.get(rid, [])} - set(written)
        for names in set(written) | stale:
            if any(names in where.get(rid, []) for rid in ids):
                table.compact(store.root, names)
    except (OSError, LatscopeError):
        return 0
    return len(ids)


def _forget(store: Store, gone: set[str], where: dict[str, list[tuple[str, str]]]) -> None:
    """Drop the rows of runs no longer in the store (removed by hand, or by an older
    latscope) from the partitions that hold them.  A run that appeared meanwhile (committed
    after the listing) is kept; if its rows are dropped in a race, it is indexed again."""
    gone = {rid for rid in gone if not os.path.lexists(store.runs_dir / rid)}
    if not gone:
        return
    for names in {p for rid in gone for p in where.get(rid, [])}:
        try:
            table.compact(store.root, names, drop=gone)
        except (OSError, LatscopeError):
            pass
