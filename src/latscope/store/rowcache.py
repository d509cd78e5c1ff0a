"""Every row of the summary table in one file, for `ls` and `history` to read at once.

The table is many part files (a few per benchmark and month: table.py), and reading each costs
about 2.5 ms: a quarter of a second for 1,000 runs, more than everything else `ls` does. So
the rows a complete read found, with the partitions that hold each run, are kept in
``STORE/.summary-rows.parquet`` (beside the table, never in it: a tool that reads
``summary/**/*.parquet`` reads the table alone) together with the state of the part files
they were read from (`state`: every part file's partition, name, size, modification time and
inode, hashed). A
read whose state is the same uses that file; any part written, compacted or removed since
changes the state (part files are only ever created by a rename and unlinked, never changed in
place), and the table is read again. The file is a cache: written only after a read that found
nothing damaged, through the store's directory held open and checked (safe.py), atomically;
one that cannot be read, is of another layout or of another state is ignored and replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput
from ..files import atomic_write, read_bytes
from . import safe, table
from .index import dtypes, parquet_bytes

if TYPE_CHECKING:
    import polars as pl

CACHE_FILE = ".summary-rows.parquet"
_PARTS = "_partitions"  # JSON: the partitions holding the run's rows, [[benchmark=, month=]]
_STATE = "_state"


def state(root: Path) -> str | None:
    """The hash of the state of every part file of ``root``'s table; None when the table has
    none, or an entry cannot be looked at (the table is then read, never cached)."""
    h = hashlib.sha256()
    try:
        tfd = os.open(root / table.TABLE_DIR, safe.DIR_FLAGS)
    except OSError:
        return None
    seen = 0
    try:
        for bname in sorted(os.listdir(tfd)):
            if bname.startswith((".", "_")):
                continue
            bfd = table._open_dir(tfd, bname)  # noqa: SLF001 (the table's own opening)
            try:
                for mname in sorted(os.listdir(bfd)):
                    if mname.startswith((".", "_")):
                        continue
                    mfd = table._open_dir(bfd, mname)  # noqa: SLF001
                    try:
                        for name in sorted(os.listdir(mfd)):
                            st = os.stat(name, dir_fd=mfd, follow_symlinks=False)
                            kind = stat.S_IFMT(st.st_mode)
                            h.update(
                                f"{bname}/{mname}/{name}\0{kind}\0{st.st_size}\0"
                                f"{st.st_mtime_ns}\0{st.st_ino}\n".encode(
                                    "utf-8", "surrogateescape"
                                )
                            )
                            seen += 1
                    finally:
                        os.close(mfd)
            finally:
                os.close(bfd)
    except OSError:
        return None
    finally:
        os.close(tfd)
    return h.hexdigest() if seen else None


def _schema() -> pl.Schema:
    import polars as pl

    kinds = dtypes(utc=False)
    return pl.Schema(
        {**{n: kinds[t] for n, t in table.ROW_COLUMNS}, _PARTS: pl.Utf8, _STATE: pl.Utf8}
    )


def _load(root: Path, want: str) -> table.Table | None:
    """The cached rows when the cache is there, readable, of this layout and of state
    ``want``; else None."""
    import polars as pl
    from polars.exceptions import PanicException

    path = root / CACHE_FILE
    if not os.path.lexists(path):
        return None
    try:
        raw = read_bytes(path, "the summary table's cache", table.PART_LIMIT, follow=False)
        df = pl.read_parquet(io.BytesIO(raw))
    except (BadInput, Exception, PanicException):  # noqa: BLE001 (polars' errors: a cache)
        return None
    if df.schema != _schema() or df.height == 0 or df[_STATE][0] != want:
        return None
    where: dict[str, list[tuple[str, str]]] = {}
    for rid, parts in zip(df["run_id"].to_list(), df[_PARTS].to_list(), strict=True):
        if rid not in where:
            with contextlib.suppress(ValueError, TypeError):
                where[rid] = [(str(b), str(m)) for b, m in json.loads(parts)]
    return table.Table(df.drop(_PARTS, _STATE), where, [])


def _keep(root: Path, t: table.Table, now: str) -> None:
    import polars as pl

    parts = [json.dumps(t.partitions.get(rid, [])) for rid in t.rows["run_id"].to_list()]
    df = t.rows.with_columns(pl.Series(_PARTS, parts, pl.Utf8), pl.lit(now, pl.Utf8).alias(_STATE))
    try:
        with safe.held(root) as fd:
            data = parquet_bytes(df)
            with atomic_write(CACHE_FILE, replace=True, dir_fd=fd) as f:
                f.write(data)
    except (OSError, BadInput):
        pass  # a cache: the next read reads the table


def table_rows(root: Path, benchmark: str | None, writable: Callable[[], bool]) -> table.Table:
    """`table.read`, from the cache when no part file changed since it was written; a read of
    the whole table that found nothing damaged is cached where ``writable()`` allows."""
    import polars as pl

    now = state(root)
    got = _load(root, now) if now is not None else None
    if got is not None:
        if benchmark is None:
            return got
        rows = got.rows.filter(pl.col("benchmark") == benchmark)
        ids = set(rows["run_id"].to_list())
        return table.Table(rows, {r: p for r, p in got.partitions.items() if r in ids}, [])
    if benchmark is not None:  # one benchmark's partitions: read as they are
        return table.read(root, benchmark)
    t = table.read(root)
    if now is not None and not t.damaged and not t.mend and t.rows.height and writable():
        _keep(root, t, now)
    return t
