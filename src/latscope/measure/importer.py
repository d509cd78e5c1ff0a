"""Importing samples measured by another program (a CSV file) as a regular run.

The CSV has one row per iteration and one column per timed operation, like the files of the
lab reports: ``iteration,open_us,write_us,read_us,close_us`` or ``Open,Write,Read,Close``.

- **Units.** Each column's unit is read from its header (a suffix ``_ns``, ``_us``, ``_µs``,
  ``_ms``, ``_s`` or a bracketed ``(ns)``/``[µs]``) or given for all columns with ``unit``
  (``--unit``). A column without either is refused: guessing units is how ns become µs. A
  header unit that contradicts ``--unit`` is refused too.
- **Names.** A column is named after its header without the unit, in lower case with spaces
  as underscores (``Open`` and ``open_us`` both become ``open``), so runs imported from
  different programs can be compared.
- **Skipped columns.** A column of labels (mostly non-numeric), an index or iteration counter
  (by name, or because it counts 0, 1, 2, ... or 1, 2, 3, ...) is skipped, with a note.
- **Time column.** A column named like ``t_start``, ``time`` or ``timestamp`` with a unit (or
  ``time_column``) gives the start of each iteration; without one, the run has no times
  (``meta["times"] == "unknown"``) and plots use the iteration number.
- **Refused input** (one line each, nothing stored): an empty file, a FIFO or device, a file
  above `CSV_LIMIT` (256 MiB), text that is not UTF-8, UTF-16 with its byte-order mark or
  Windows-1252, NUL bytes, rows with more fields than the header, no numeric columns, a
  missing unit, missing values, NaN or infinite values, negative latencies, values too large
  for their unit, a time column that goes backwards, more rows or columns than a sample file
  holds (`samples.MAX_ROWS`, `samples.MAX_COLUMNS`), a column header that appears twice.
  Text from the file is quoted in messages with control characters escaped.

Values are stored as int64 picosecond ticks (``ns_per_tick = 0.001``), so fractional
microseconds survive exactly. The clock is unknown: ``overhead_ns`` is null and
``resolution_ns`` is a guess, the smallest non-zero difference between distinct values (the
header says so in ``resolution_guessed``).
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import heap, probe, samples
from .._version import __version__
from ..errors import BadInput
from ..files import open_regular
from ..record import Run
from ..store import Store
from . import csvread
from .runner import command_line, keep, open_store

_shown = csvread.shown

NS_PER_TICK = 0.001  # picosecond ticks
#: The largest CSV file imported: some 20 million rows of four columns.
CSV_LIMIT = 256 * 2**20
#: Columns read from a CSV, and the length of a column's header.
MAX_CSV_COLUMNS = 256
MAX_HEADER_CHARS = 128
#: Unit spellings accepted in headers and by --unit, to (canonical name, ns per unit).
UNITS: dict[str, tuple[str, float]] = {
    "ns": ("ns", 1.0),
    "us": ("µs", 1e3),
    "µs": ("µs", 1e3),  # micro sign
    "μs": ("µs", 1e3),  # Greek mu
    "usec": ("µs", 1e3),
    "ms": ("ms", 1e6),
    "msec": ("ms", 1e6),
    "s": ("s", 1e9),
    "sec": ("s", 1e9),
}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
_BRACKETED = re.compile(rf"^(?P<name>.*?)\s*[\(\[]\s*(?P<unit>{_UNIT_RE})\s*[\)\]]\s*$", re.I)
_SUFFIXED = re.compile(rf"^(?P<name>.*?)[_\-. ](?P<unit>{_UNIT_RE})$", re.I)
_INDEX_NAME = re.compile(
    r"^(#|i|idx|index|iter|iters|iteration|iterations|n|nr|no|num|number|run|sample|samples|"
    r"row|id|step|round|lfd\.?\s*nr\.?|unnamed:\s*\d+|)"
    r"([\s_\-.]*(no|nr|num|number|#|id|idx|index))?$",
    re.I,
)
_TIME_NAME = re.compile(
    r"^(t|ts|time|timestamp|t_start|tstart|start|start_time|elapsed|t0)$",
    re.I,
)
#: Largest magnitude in picosecond ticks that int64 holds with margin (about 100 days).
_MAX_TICKS = 2**62


@dataclass
class ImportedColumn:
    name: str  # name in the run
    header: str  # as written in the CSV
    unit: str  # canonical unit name
    ns: float  # ns per unit
    ticks: np.ndarray  # int64 picoseconds


@dataclass
class ParsedCSV:
    path: Path
    rows: int
    columns: list[ImportedColumn]
    times: ImportedColumn | None
    notes: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    delimiter: str = ","
    sha256: str = ""


def parse_unit(text: str) -> tuple[str, float]:
    """'us' -> ('µs', 1000.0); a one-line error for anything else."""
    u = UNITS.get(text.strip()) or UNITS.get(text.strip().lower())
    if u is None:
        raise BadInput(f"--unit {text}: give one of ns, us (µs), ms, s")
    return u


def split_unit(header: str) -> tuple[str, tuple[str, float] | None]:
    """'open_us' -> ('open', ('µs', 1e3)); 'Open (ns)' -> ('Open', ('ns', 1.0)); 'Open' ->
    ('Open', None)."""
    h = header.strip()
    for rx in (_BRACKETED, _SUFFIXED):
        m = rx.match(h)
        if m and m.group("name").strip():
            u = UNITS.get(m.group("unit")) or UNITS.get(m.group("unit").lower())
            if u is not None:
                return m.group("name").strip(), u
    return h, None


def _sniff_delimiter(first_line: str) -> str:
    counts = {d: first_line.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _line_of(row: int) -> int:
    """File line of a 0-based data row (line 1 is the header)."""
    return row + 2


def _scan(p: Path, frames: csvread.Frames) -> tuple[list[str], dict[str, csvread.ColumnScan]]:
    """Every block of the file parsed (`csvread.Frames`) and its columns gathered; then the
    checks of the file's shape, in the order the whole file has them (a block polars cannot
    read anywhere comes first)."""
    headers: list[str] = []
    scans: dict[str, csvread.ColumnScan] = {}
    comma = frames.delimiter != ","
    gather = True
    for df, offset in frames.blocks():
        if not headers:
            headers = [str(c) for c in df.columns]
            # refused whatever the values hold: their columns are not gathered
            gather = df.width <= MAX_CSV_COLUMNS and all(
                len(h) <= MAX_HEADER_CHARS for h in headers
            )
            scans = {h: csvread.ColumnScan(comma) for h in headers} if gather else {}
        if offset + df.height > samples.MAX_ROWS:
            gather, scans = False, {}
        for h in scans:
            scans[h].add(df[h], offset)
        del df
    frames.finish()
    rows = frames.rows
    if '"' not in frames.header and "\r" not in frames.header:
        seen: set[str] = set()
        for h in next(csv.reader([frames.header], delimiter=frames.delimiter), []):
            if h in seen:
                raise BadInput(f"{p}: column '{_shown(h)}' appears twice in the header")
            seen.add(h)
    if rows == 0:
        raise BadInput(f"{p}: a header but no rows of samples")
    if rows > samples.MAX_ROWS:
        raise BadInput(f"{p}: {rows} rows; a run holds at most {samples.MAX_ROWS}")
    if len(headers) > MAX_CSV_COLUMNS:
        raise BadInput(f"{p}: {len(headers)} columns; at most {MAX_CSV_COLUMNS} are read")
    for h in headers:
        if len(h) > MAX_HEADER_CHARS:
            raise BadInput(
                f"{p}: the column header '{_shown(h)}' is longer than {MAX_HEADER_CHARS} characters"
            )
    assert gather
    return headers, scans


def read_csv(
    path: str | os.PathLike[str],
    unit: str | None = None,
    time_column: str | None = None,
) -> ParsedCSV:
    """Read and check a CSV of latencies (see the module docstring). Raises BadInput with one
    line for every problem; nothing is written. The file is read in blocks of rows
    (`csvread`): its text once, then its rows, each column's values kept as 8 bytes a row."""
    p = Path(path)
    with open_regular(p, "a CSV file", CSV_LIMIT) as f:
        text = csvread.survey(p, f, CSV_LIMIT)
        if text.blank:
            raise BadInput(f"{p}: the file is empty")
        if text.nul:
            raise BadInput(f"{p}: not a text file (NUL bytes; CSV expected)")
        frames = csvread.Frames(p, f, CSV_LIMIT, text, _sniff_delimiter)
        headers, scans = _scan(p, frames)
    delim = frames.delimiter
    given_unit = parse_unit(unit) if unit else None
    parsed = ParsedCSV(path=p, rows=frames.rows, columns=[], times=None, delimiter=delim)
    parsed.sha256 = text.sha256
    if time_column is not None and time_column not in headers:
        stripped = {split_unit(h)[0]: h for h in headers}
        if time_column not in stripped:
            raise BadInput(
                f"--time-column {_shown(time_column)}: {p.name} has no such column "
                f"(it has: {', '.join(_shown(h) for h in headers[:20])})"
            )
        time_column = stripped[time_column]
    with np.errstate(over="ignore", invalid="ignore"):  # huge values are refused, not warned
        _columns(parsed, scans, headers, given_unit, time_column)
    return parsed


def _columns(
    parsed: ParsedCSV,
    scans: dict[str, csvread.ColumnScan],
    headers: list[str],
    given_unit: tuple[str, float] | None,
    time_column: str | None,
) -> None:
    """The numeric columns of the file into ``parsed``: labels and indexes skipped, units
    and values checked (module docs)."""
    p = parsed.path

    numeric: list[tuple[str, csvread.ColumnScan]] = []
    for h in headers:
        sc = scans[h]
        if sc.bad[sc.parse]:
            bad = sc.first_bad[sc.parse]
            assert bad is not None
            if h == time_column or sc.numeric > parsed.rows // 2:
                raise BadInput(
                    f"{p}: column '{_shown(h)}' line {_line_of(bad[0])}: "
                    f"'{_shown(bad[1])}' is not a number"
                )
            parsed.skipped.append({"column": h, "why": "not numeric (labels)"})
            parsed.notes.append(f"column '{_shown(h)}' is not numeric (labels): skipped")
            continue
        numeric.append((h, sc))
    if not numeric:
        shown = ", ".join(_shown(h) for h in headers[:20])
        raise BadInput(f"{p}: no numeric columns (columns: {shown})")

    kept: list[tuple[str, csvread.ColumnScan]] = []
    for h, sc in numeric:
        if h == time_column:
            kept.append((h, sc))
            continue
        name, hunit = split_unit(h)
        if _INDEX_NAME.match(name.strip()) and hunit is None:
            parsed.skipped.append({"column": h, "why": "an index or iteration number"})
            parsed.notes.append(f"column '{_shown(h)}' is an index or iteration number: skipped")
            continue
        if hunit is None and sc.counts_up():
            parsed.skipped.append({"column": h, "why": "counts 0, 1, 2, ... (an index)"})
            parsed.notes.append(f"column '{_shown(h)}' counts up by one (an index): skipped")
            continue
        kept.append((h, sc))

    if time_column is None:
        for h, _v in kept:
            name, hunit = split_unit(h)
            if _TIME_NAME.match(name) and (hunit is not None or given_unit is not None):
                time_column = h
                parsed.notes.append(
                    f"column '{_shown(h)}' taken as the start time of each iteration"
                )
                break

    without_unit = [h for h, _ in kept if split_unit(h)[1] is None]
    if without_unit and given_unit is None:
        raise BadInput(
            f"{p}: no unit for column{'s' if len(without_unit) > 1 else ''} "
            f"{', '.join(_shown(h) for h in without_unit[:20])}; pass --unit ns|us|ms|s "
            "(or name them like open_us)"
        )
    if given_unit is not None:
        for h, _ in kept:
            hu = split_unit(h)[1]
            if hu is not None and hu[0] != given_unit[0]:
                raise BadInput(
                    f"{p}: column '{_shown(h)}' says {hu[0]} in its header but --unit "
                    f"{given_unit[0]} was given; drop --unit or fix the header"
                )

    names_seen: set[str] = set()
    reserved = _reserved_names()
    for h, sc in kept:
        name, hu = split_unit(h)
        u = hu or given_unit
        assert u is not None
        _check_values(p, h, sc, u, h == time_column)
        scale = u[1] / NS_PER_TICK
        start = sc.first() * scale if h == time_column else 0.0
        if sc.max_abs(scale, start) >= _MAX_TICKS:
            raise BadInput(
                f"{p}: column '{_shown(h)}' holds values too large for {u[0]}; check --unit"
            )
        col = ImportedColumn(
            name=_column_name(name or h), header=h, unit=u[0], ns=u[1], ticks=sc.ticks(scale, start)
        )
        if h == time_column:
            parsed.times = col
            continue
        base, k = col.name, len(parsed.columns) + 1
        while col.name in names_seen or col.name in reserved:
            col.name, k = f"{base}_{k}", k + 1
        names_seen.add(col.name)
        parsed.columns.append(col)
        if len(parsed.columns) >= samples.MAX_COLUMNS:
            raise BadInput(
                f"{p}: more than {samples.MAX_COLUMNS - 1} columns of latencies; a run holds "
                "at most that many"
            )
    if not parsed.columns:
        raise BadInput(f"{p}: no columns of latencies left after skipping indexes and labels")


def _check_values(
    p: Path, h: str, sc: csvread.ColumnScan, u: tuple[str, float], is_time: bool
) -> None:
    """A column's values refused, in this order: missing ones, ones that are no finite
    number, a time going backwards or a negative latency."""
    what = "time column" if is_time else "column"
    if sc.nulls:
        raise BadInput(
            f"{p}: {what} '{_shown(h)}' has {sc.nulls} missing value(s), the first "
            f"on line "
            f"{_line_of(sc.first_null or 0)}; a failed measurement must be an error, never a "
            "sample: remove those rows"
        )
    if sc.first_nonfinite is not None:
        i, v, text = sc.first_nonfinite
        if np.isinf(v) and "inf" not in text.lower():  # a number beyond float64
            raise BadInput(
                f"{p}: {what} '{_shown(h)}' line {_line_of(i)}: '{_shown(text)}' is too "
                "large for a number"
            )
        raise BadInput(
            f"{p}: {what} '{_shown(h)}' line {_line_of(i)} is {np.float64(v)!s} "
            f"({sc.nonfinite} such values); a failed measurement must be an error, never a "
            "sample: remove those rows"
        )
    if is_time:
        back = sc.first_backwards()
        if back is not None:
            raise BadInput(
                f"{p}: time column '{_shown(h)}' goes backwards on line {_line_of(back)}; "
                "it must hold the start time of each iteration, in order"
            )
        return
    neg = sc.first_negative()
    if neg is not None:
        raise BadInput(
            f"{p}: column '{_shown(h)}' line {_line_of(neg[0])} is negative ({neg[1]:g} {u[0]}); "
            "latencies cannot be negative: check the clock and the column"
        )


def _column_name(header: str) -> str:
    """A column's name in the run, from its header without the unit: lower case, whitespace
    and characters a column name may not hold (`samples.column_name_problem`) as ``_``, at
    most 56 characters (room for a suffix that tells two alike apart)."""
    clean = re.sub(r"\s+", "_", header.strip()).lower()
    clean = "".join(
        "_" if (c in samples.NAME_FORBIDDEN or not c.isprintable()) else c for c in clean
    )
    clean = clean[:56] or "column"
    assert samples.column_name_problem(clean) is None, clean
    return clean


def _reserved_names() -> set[str]:
    """Names an imported column cannot take: the time column's and every column the lab
    derives (the catalogue's ``derived_columns``, e.g. rtt/2)."""
    cat = probe.catalogue_or_none() or {}
    derived = [d for b in cat.get("benchmarks", []) for d in b.get("derived_columns") or []]
    return {"t_start"} | {str(d.get("name")) for d in derived}


def guess_resolution_ns(columns: list[ImportedColumn]) -> float | None:
    """The smallest non-zero difference between distinct values of any column, in ns."""
    best: int | None = None
    for c in columns:
        u = np.unique(c.ticks)
        if u.size > 1:
            d = int(np.diff(u).min())
            best = d if best is None else min(best, d)
    return None if best is None else best * NS_PER_TICK


def _now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def header_for(parsed: ParsedCSV, name: str) -> dict[str, Any]:
    units = {c.unit for c in parsed.columns}
    unit = (
        units.pop() if len(units) == 1 else ", ".join(f"{c.name}={c.unit}" for c in parsed.columns)
    )
    res = guess_resolution_ns(parsed.columns)
    cols: list[dict[str, Any]] = [
        {
            "name": "t_start",
            "unit": "ticks",
            "kind": "time",
            "description": (
                f"start of the iteration, from column '{parsed.times.header}'"
                if parsed.times
                else "unknown (the CSV has no time column): all zero"
            ),
        }
    ]
    for c in parsed.columns:
        cols.append(
            {
                "name": c.name,
                "unit": "ticks",
                "kind": "duration",
                "latency": None,
                "context_switches": None,
                "description": f"imported from column '{c.header}' of {parsed.path.name} "
                f"({c.unit})",
            }
        )
    return {
        "benchmark": "imported",
        "name": name,
        "params": {"file": parsed.path.name, "unit": unit},
        "warmup": None,
        "clock": {
            "name": "imported",
            "ns_per_tick": NS_PER_TICK,
            "overhead_ns": None,
            "resolution_ns": res,
            "resolution_guessed": True,
            "resolution_note": "a guess: the smallest non-zero difference between distinct "
            "values in the file; the program's real clock may be coarser or finer",
        },
        "columns": cols,
        "times": f"column {parsed.times.header}" if parsed.times else "unknown",
        "bench": {},
        "env": None,
        "probe": None,
        "source": {
            "kind": "csv",
            "path": str(parsed.path.resolve()),
            "file": parsed.path.name,
            "sha256": parsed.sha256,
            "rows": parsed.rows,
            "delimiter": parsed.delimiter,
            "columns": {c.name: {"header": c.header, "unit": c.unit} for c in parsed.columns},
            "skipped": parsed.skipped,
            "notes": parsed.notes,
        },
        "started_utc": None,
        "finished_utc": None,
        "argv": None,
    }


def import_csv(
    path: str | os.PathLike[str],
    *,
    unit: str | None = None,
    name: str | None = None,
    time_column: str | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    tags: dict[str, Any] | None = None,
) -> tuple[Run, list[str]]:
    """Import a CSV of latencies into the store as a run of benchmark ``imported``. Returns
    the run and the notes (skipped columns, the time column found)."""
    parsed = read_csv(path, unit=unit, time_column=time_column)
    if name is not None and not name.strip():
        raise BadInput("--name: give a non-empty name")
    label = name.strip() if name else parsed.path.stem
    header = header_for(parsed, label)
    data: dict[str, np.ndarray] = {
        "t_start": parsed.times.ticks
        if parsed.times is not None
        else np.zeros(parsed.rows, dtype=np.int64),
        # (a comprehension: no loop variable outlives it holding the last column's ticks)
        **{c.name: c.ticks for c in parsed.columns},
    }
    notes = list(parsed.notes)
    del parsed  # the samples are written, then read back for the analysis: one copy at a time
    with open_store(store).transaction("imported") as t:
        with t.writing():
            samples.write(t.samples_path, header, data)
        data.clear()
        heap.give_back()  # what the blocks of the CSV left free in the heap, before the analysis
        meta: dict[str, Any] = {
            "id": t.id,
            "created_utc": _now_utc(),
            "benchmark": "imported",
            "params_given": {"file": header["params"]["file"]},
            "command": command_line(),
            "latscope_version": __version__,
            "probe_warnings": [],
            "tags": {"name": label, **(tags or {})},
            "env": None,
            "status": "complete",
        }
        run = keep(t, meta)
    return run, notes
