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
import hashlib
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .. import probe, samples
from .._version import __version__
from ..errors import BadInput
from ..files import read_bytes
from ..record import Run
from ..store import Store
from .runner import command_line, keep, open_store

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


def _to_float(s: pl.Series, delimiter: str) -> tuple[pl.Series | None, int | None, str | None]:
    """A column of text (`_frame` reads every column as text) as float64, or (None, first bad
    row, its text) when some values are not numbers. The text is stripped; with a ';' or tab
    delimiter a decimal comma is accepted."""
    st = s.cast(pl.String).str.strip_chars()
    present = st.is_not_null() & (st != "")
    f = st.cast(pl.Float64, strict=False)
    bad = f.is_null() & present
    if bad.any() and delimiter != ",":
        f2 = st.str.replace(",", ".", literal=True).cast(pl.Float64, strict=False)
        bad2 = f2.is_null() & present
        if int(bad2.sum()) < int(bad.sum()):
            f, bad = f2, bad2
    if bad.any():
        i = int(bad.arg_max() or 0)
        return None, i, str(st[i])
    return f, None, None


def _shown(text: str, limit: int = 40) -> str:
    """Text from the file as a message quotes it: at most ``limit`` characters, control and
    other non-printing characters escaped (a message stays one line)."""
    t = text if len(text) <= limit else text[:limit] + "…"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in t)


def _decode(p: Path, raw: bytes) -> str:
    """The text of a CSV file: UTF-8 (a byte-order mark is dropped), UTF-16 with its
    byte-order mark, else Windows-1252; BadInput for bytes no text holds."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise BadInput(f"{p}: not a text file (damaged UTF-16; CSV expected)") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return raw.decode("cp1252")
        except UnicodeDecodeError:
            raise BadInput(f"{p}: not a text file (CSV expected)") from None


def _first_line(text: str) -> str:
    """The first line that is not blank (the header), found without splitting the whole."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end].strip():
            return text[start:end]
        start = end + 1
    return ""


def _frame(p: Path, text: str, delim: str) -> pl.DataFrame:
    """The CSV as a frame of strings (numbers are parsed column by column, `_to_float`)."""
    from polars.exceptions import PanicException

    # A leading newline (polars passes over blank lines before the header): polars takes a
    # source that starts like a compressed stream for one ("x^" is a zlib header).
    data = b"\n" + text.encode("utf-8")
    try:
        df = pl.read_csv(
            data,
            separator=delim,
            infer_schema=False,
            truncate_ragged_lines=False,
            raise_if_empty=True,
        )
    except (pl.exceptions.PolarsError, ValueError, OSError, PanicException) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{p}: not a readable CSV file ({_shown(msg, 80)})") from None
    header = _first_line(text).rstrip("\r")
    if '"' not in header and "\r" not in header:
        seen: set[str] = set()
        for h in next(csv.reader([header], delimiter=delim), []):
            if h in seen:
                raise BadInput(f"{p}: column '{_shown(h)}' appears twice in the header")
            seen.add(h)
    return df


def read_csv(
    path: str | os.PathLike[str],
    unit: str | None = None,
    time_column: str | None = None,
) -> ParsedCSV:
    """Read and check a CSV of latencies (see the module docstring). Raises BadInput with one
    line for every problem; nothing is written."""
    p = Path(path)
    raw = read_bytes(p, "a CSV file", CSV_LIMIT)
    text = _decode(p, raw)
    if not text.strip():
        raise BadInput(f"{p}: the file is empty")
    if "\x00" in text:
        raise BadInput(f"{p}: not a text file (NUL bytes; CSV expected)")
    if "\n" not in text:
        text = text.replace("\r", "\n")  # lines ended by CR alone (classic Mac OS)
    delim = _sniff_delimiter(_first_line(text))
    df = _frame(p, text, delim)
    if df.height == 0:
        raise BadInput(f"{p}: a header but no rows of samples")
    if df.height > samples.MAX_ROWS:
        raise BadInput(f"{p}: {df.height} rows; a run holds at most {samples.MAX_ROWS}")
    if df.width > MAX_CSV_COLUMNS:
        raise BadInput(f"{p}: {df.width} columns; at most {MAX_CSV_COLUMNS} are read")
    headers = [str(c) for c in df.columns]
    for h in headers:
        if len(h) > MAX_HEADER_CHARS:
            raise BadInput(
                f"{p}: the column header '{_shown(h)}' is longer than {MAX_HEADER_CHARS} characters"
            )
    given_unit = parse_unit(unit) if unit else None
    parsed = ParsedCSV(path=p, rows=df.height, columns=[], times=None, delimiter=delim)
    parsed.sha256 = hashlib.sha256(raw).hexdigest()
    if time_column is not None and time_column not in headers:
        stripped = {split_unit(h)[0]: h for h in headers}
        if time_column not in stripped:
            raise BadInput(
                f"--time-column {_shown(time_column)}: {p.name} has no such column "
                f"(it has: {', '.join(_shown(h) for h in headers[:20])})"
            )
        time_column = stripped[time_column]
    with np.errstate(over="ignore", invalid="ignore"):  # huge values are refused, not warned
        _columns(parsed, df, headers, delim, given_unit, time_column)
    return parsed


def _columns(
    parsed: ParsedCSV,
    df: pl.DataFrame,
    headers: list[str],
    delim: str,
    given_unit: tuple[str, float] | None,
    time_column: str | None,
) -> None:
    """The numeric columns of ``df`` into ``parsed``: labels and indexes skipped, units and
    values checked (module docs)."""
    p = parsed.path

    numeric: list[tuple[str, pl.Series]] = []
    for h in headers:
        f, bad_row, bad_text = _to_float(df[h], delim)
        if f is None:
            assert bad_row is not None
            st = df[h].cast(pl.String).str.strip_chars()
            n_num = int(st.cast(pl.Float64, strict=False).is_not_null().sum())
            if h == time_column or n_num > df.height // 2:
                raise BadInput(
                    f"{p}: column '{_shown(h)}' line {_line_of(bad_row)}: "
                    f"'{_shown(str(bad_text))}' is not a number"
                )
            parsed.skipped.append({"column": h, "why": "not numeric (labels)"})
            parsed.notes.append(f"column '{_shown(h)}' is not numeric (labels): skipped")
            continue
        numeric.append((h, f))
    if not numeric:
        shown = ", ".join(_shown(h) for h in headers[:20])
        raise BadInput(f"{p}: no numeric columns (columns: {shown})")

    kept: list[tuple[str, pl.Series]] = []
    for h, f in numeric:
        if h == time_column:
            kept.append((h, f))
            continue
        v = f.to_numpy()
        name, hunit = split_unit(h)
        if _INDEX_NAME.match(name.strip()) and hunit is None:
            parsed.skipped.append({"column": h, "why": "an index or iteration number"})
            parsed.notes.append(f"column '{_shown(h)}' is an index or iteration number: skipped")
            continue
        finite = np.isfinite(v)
        if (
            hunit is None
            and v.size > 1
            and finite.all()
            and np.all(v == np.round(v))
            and v[0] in (0.0, 1.0)
            and np.all(np.diff(v) == 1.0)
        ):
            parsed.skipped.append({"column": h, "why": "counts 0, 1, 2, ... (an index)"})
            parsed.notes.append(f"column '{_shown(h)}' counts up by one (an index): skipped")
            continue
        kept.append((h, f))

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
    for h, f in kept:
        name, hu = split_unit(h)
        u = hu or given_unit
        assert u is not None
        what = "time column" if h == time_column else "column"
        nulls = f.is_null().to_numpy()
        v = f.fill_null(0.0).to_numpy()
        if nulls.any():
            i = int(np.argmax(nulls))
            raise BadInput(
                f"{p}: {what} '{_shown(h)}' has {int(nulls.sum())} missing value(s), the first "
                f"on line "
                f"{_line_of(i)}; a failed measurement must be an error, never a sample: "
                "remove those rows"
            )
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.argmax(bad))
            text = str(df[h][i]).strip()
            if np.isinf(v[i]) and "inf" not in text.lower():  # a number beyond float64
                raise BadInput(
                    f"{p}: {what} '{_shown(h)}' line {_line_of(i)}: '{_shown(text)}' is too "
                    "large for a number"
                )
            raise BadInput(
                f"{p}: {what} '{_shown(h)}' line {_line_of(i)} is {v[i]!s} ({int(bad.sum())} such "
                "values); a failed measurement must be an error, never a sample: remove those rows"
            )
        ticks_f = v * (u[1] / NS_PER_TICK)
        if h == time_column:
            ticks_f = ticks_f - ticks_f[0]
            back = np.diff(v) < 0
            if back.any():
                i = int(np.argmax(back)) + 1
                raise BadInput(
                    f"{p}: time column '{_shown(h)}' goes backwards on line {_line_of(i)}; "
                    "it must hold the start time of each iteration, in order"
                )
        elif (v < 0).any():
            i = int(np.argmax(v < 0))
            raise BadInput(
                f"{p}: column '{_shown(h)}' line {_line_of(i)} is negative ({v[i]:g} {u[0]}); "
                "latencies cannot be negative: check the clock and the column"
            )
        if float(np.max(np.abs(ticks_f))) >= _MAX_TICKS:
            raise BadInput(
                f"{p}: column '{_shown(h)}' holds values too large for {u[0]}; check --unit"
            )
        ticks = np.rint(ticks_f).astype(np.int64)
        col = ImportedColumn(
            name=_column_name(name or h), header=h, unit=u[0], ns=u[1], ticks=ticks
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
        else np.zeros(parsed.rows, dtype=np.int64)
    }
    for c in parsed.columns:
        data[c.name] = c.ticks
    with open_store(store).transaction("imported") as t:
        with t.writing():
            samples.write(t.samples_path, header, data)
        meta: dict[str, Any] = {
            "id": t.id,
            "created_utc": _now_utc(),
            "benchmark": "imported",
            "params_given": {"file": parsed.path.name},
            "command": command_line(),
            "latscope_version": __version__,
            "probe_warnings": [],
            "tags": {"name": label, **(tags or {})},
            "env": None,
            "status": "complete",
        }
        run = keep(t, meta)
    return run, list(parsed.notes)
