"""summary.parquet: the index of a run's figures, one row per timed column (the figures of
`summary.STATS`, the run id, benchmark, parameters, creation time and suite tags).

The rows come from `Run.summary()`, computed when the run is made (`runner`); the store only
writes and reads them.  Queries across runs (`latscope ls`, `latscope history`) read these
files (`Store.summaries`, each checked by `read`) and never touch the samples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BadInput
from ..files import atomic_write, read_bytes
from ..summary import summary_columns
from .meta import parse_utc

if TYPE_CHECKING:
    import polars as pl

# 2: the figures of summary.STATS, tail percentiles null where withheld, with their counts of
# samples above (<figure>_n_beyond).  Files of version 1 are recomputed when read.
SUMMARY_SCHEMA_VERSION = 2


#: The columns of summary.parquet, in order (polars dtypes by name): the run's identity, then
#: the figures of `summary.STATS` (each tail percentile followed by the count of samples above
#: it; null where withheld), then the tags.
SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("schema_version", "Int32"),
    ("run_id", "Utf8"),
    ("created_utc", "Datetime"),
    ("benchmark", "Utf8"),
    ("params", "Utf8"),  # JSON: every parameter, defaults filled in (from the sample file)
    ("params_given", "Utf8"),  # JSON: the parameters the user gave
    ("column", "Utf8"),
    ("column_index", "Int32"),
    *summary_columns(),
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


def dtypes(utc: bool) -> dict[str, pl.DataType]:
    """The polars types of the names `SUMMARY_COLUMNS` uses; ``utc``: times with the UTC zone
    (as written), else naive in UTC (as read)."""
    import polars as pl

    return {
        "Int32": pl.Int32,
        "Int64": pl.Int64,
        "Float64": pl.Float64,
        "Utf8": pl.Utf8,
        "Datetime": pl.Datetime("us", "UTC") if utc else pl.Datetime("us"),
    }


def _int_or_none(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def run_columns(meta: dict[str, Any]) -> dict[str, Any]:
    """The columns of summary.parquet that say which run a row is of (the same in each of its
    rows), from its run.json ``meta``: identity, parameters, clock, tags, host name."""
    tags = meta.get("tags") or {}
    env = meta.get("env") or {}
    return {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_id": meta["id"],
        "created_utc": parse_utc(meta.get("created_utc")),
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


def summary_frame(meta: dict[str, Any], summary: pl.DataFrame) -> pl.DataFrame:
    """The rows of summary.parquet for one run: `summary` is `Run.summary()`, `meta` the run's
    run.json (id, created_utc, benchmark, params, params_given, tags, ...)."""
    import polars as pl

    figures = summary_columns()
    common = run_columns(meta)
    rows = []
    for i, r in enumerate(summary.iter_rows(named=True)):
        row = dict(common)
        row["column"] = r["column"]
        row["column_index"] = i
        for name, _ in figures:
            row[name] = r.get(name)
        rows.append(row)
    kinds = dtypes(utc=True)
    schema = {name: kinds[t] for name, t in SUMMARY_COLUMNS}
    return pl.DataFrame(rows, schema=schema)


def normal(df: pl.DataFrame) -> pl.DataFrame:
    """Summary rows as `read` gives them: times naive, in UTC."""
    import polars as pl

    return df.with_columns(
        pl.col(n).dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        for n, t in df.schema.items()
        if isinstance(t, pl.Datetime) and t.time_zone
    )


def parquet_bytes(df: pl.DataFrame, **options: Any) -> bytes:
    """``df`` as the bytes of a Parquet file, made in memory: a file is then written with
    plain writes, whose failure (a full file system) is an OSError with its errno, never one
    of polars' errors that names none."""
    import io

    buf = io.BytesIO()
    df.write_parquet(buf, **options)
    return buf.getvalue()


def write(df: pl.DataFrame, target: Path, dir_fd: int | None = None) -> None:
    """Write summary rows to ``target`` atomically (files.atomic_write); ``dir_fd``: its
    directory, held open (the name of ``target`` is taken in it).  OSError where it fails
    (the temporary is removed)."""
    data = parquet_bytes(df)
    with atomic_write(target, dir_fd=dir_fd) as f:
        f.write(data)


#: The largest summary.parquet the store reads (one row per timed column: kilobytes).
SUMMARY_LIMIT = 16 * 2**20

#: The columns a summary.parquet must have to be read at all (others may be missing: null).
REQUIRED = ("run_id", "created_utc", "benchmark", "column", "column_index")


def fits(have: pl.DataType, want: str) -> bool:
    """Whether a column of type ``have`` holds what `SUMMARY_COLUMNS` declares as ``want``."""
    import polars as pl

    if have == pl.Null:
        return True
    if want in ("Int32", "Int64"):
        return have.is_integer()
    if want == "Float64":
        return have.is_numeric()
    if want == "Utf8":
        return have == pl.Utf8
    if want == "Datetime":
        return isinstance(have, pl.Datetime)
    return False


def read(target: Path, run_id: str) -> tuple[pl.DataFrame, bool]:
    """A run's summary.parquet, read through the guarded reader (a regular file, never through
    a link, at most `SUMMARY_LIMIT` bytes) and checked: parquet, the `REQUIRED` columns, every
    column of `SUMMARY_COLUMNS` it has of its declared type, at least one row, every row of
    run ``run_id`` with a column name and index and a creation time.  Returns the rows in the
    types and order of `SUMMARY_COLUMNS` (created_utc naive, in UTC), a column the file lacks
    null, and whether it had every column (False: written by an older latscope).  BadFile
    (meta.py) when it cannot be used."""
    import io

    import polars as pl
    from polars.exceptions import PanicException

    from .meta import BadFile, loads

    try:
        raw = read_bytes(target, "a summary (summary.parquet)", SUMMARY_LIMIT, follow=False)
    except BadInput as e:
        prefix = f"{target}: "
        raise BadFile(target, e.message.removeprefix(prefix)) from None
    try:
        df = pl.read_parquet(io.BytesIO(raw))
    except (Exception, PanicException) as e:  # polars' errors, and its panics on bad input
        raise BadFile(target, f"not a readable parquet file ({type(e).__name__})") from None
    for name in REQUIRED:
        if name not in df.columns:
            raise BadFile(target, f"no column '{name}'")
    types = dict(SUMMARY_COLUMNS)
    for name, dtype in df.schema.items():
        if name in types and not fits(dtype, types[name]):
            raise BadFile(target, f"column '{name}' is {dtype}, not {types[name]}")
    if df.height == 0:
        raise BadFile(target, "no rows")
    for name in ("run_id", "column", "column_index", "created_utc"):
        if df[name].null_count():
            raise BadFile(target, f"column '{name}' has empty values")
    others = df.filter(pl.col("run_id") != run_id)["run_id"]
    if others.len():
        raise BadFile(target, f"holds the summary of another run ({others[0]!r})")
    for name in ("params", "params_given"):
        if name in df.columns:
            for text in df[name].drop_nulls():
                if not isinstance(loads(text, target), dict):
                    raise BadFile(target, f"column '{name}' holds JSON that is not an object")
    kinds = dtypes(utc=False)
    cols = []
    for name, t in SUMMARY_COLUMNS:
        if name not in df.columns:
            cols.append(pl.lit(None, kinds[t]).alias(name))
        elif t == "Datetime":
            c = pl.col(name)
            if df.schema[name] == pl.Null:
                cols.append(c.cast(kinds[t]))
            elif getattr(df.schema[name], "time_zone", None):
                cols.append(c.dt.convert_time_zone("UTC").dt.replace_time_zone(None).cast(kinds[t]))
            else:
                cols.append(c.cast(kinds[t]))
        else:
            cols.append(pl.col(name).cast(kinds[t], strict=False))
    complete = all(name in df.columns for name, _ in SUMMARY_COLUMNS)
    return df.select(cols), complete
