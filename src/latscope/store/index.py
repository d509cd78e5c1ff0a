"""summary.parquet: the index of a run's figures, one row per timed column (the figures of
`summary.STATS`, the run id, benchmark, parameters, creation time and suite tags).

The rows come from `Run.summary()`, computed when the run is made (`runner`); the store only
writes and reads them.  Queries across runs (`latscope ls`, `latscope history`) read these
files with DuckDB (`Store.summaries`) and never touch the samples.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files import atomic_write
from ..summary import summary_columns

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
    schema = {name: dtypes[t] for name, t in SUMMARY_COLUMNS}
    return pl.DataFrame(rows, schema=schema)


def write(df: pl.DataFrame, target: Path) -> None:
    """Write summary rows to ``target`` atomically (files.atomic_write)."""
    with atomic_write(target) as f:
        df.write_parquet(f)


def outdated(target: Path) -> bool:
    """Whether a summary.parquet lacks columns of `SUMMARY_COLUMNS` (written by an older
    latscope); a damaged file is not outdated (`Store.summaries` finds and rebuilds it)."""
    import polars as pl

    try:
        have = set(pl.read_parquet_schema(target))
    except Exception:  # damaged: `summaries` finds it and rebuilds it
        return False
    return any(name not in have for name, _ in SUMMARY_COLUMNS)
