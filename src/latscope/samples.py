"""Reading and writing sample files (format: docs/sample-format.md).

A file is: a magic line with the format version, one line of JSON (the header), a DATA line,
the samples as little-endian int64 in clock ticks (one column after another), and an END line
with the row count and a CRC-32. In version 2 the CRC covers every byte before the END line,
the header included; in version 1 (files kept by earlier versions, still read) it covers the
samples only. A file without its END line was cut short and is refused.

`load` reads a file through the one guarded reader (`files.open_regular`: no FIFO, device or
file above `FILE_LIMIT`), checks its layout against its DATA line, its checksum, then its
header against the format's schema (`header_problem`: types, ranges, ``n`` and the columns
against the data, bounded strings and nesting) before any figure can be computed. Every way
a file can be wrong ends in `SampleFormatError` (BadInput, exit 2): one line naming the file
and what is wrong. The probe writes the files; `write` writes the same format for samples
imported from elsewhere, checked against the same schema.
"""

from __future__ import annotations

import json
import math
import os
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BadInput
from .files import atomic_write, open_regular

if TYPE_CHECKING:  # numpy is imported where samples are read or written: `check` needs none
    import numpy as np
    import numpy.typing as npt

MAGIC = b"LATSCOPE-SAMPLES "
#: The version `write` (and the probe) writes; version 1 is still read.
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)

# The limits of the format (docs/sample-format.md, "Limits"; the probe's are in probe.h).
#: The header line, in bytes (the probe writes a few KiB).
MAX_HEADER_BYTES = 1 << 20
#: Columns, t_start included (the probe records at most 9).
MAX_COLUMNS = 64
#: Rows: the probe's largest -n.
MAX_ROWS = 100_000_000
#: The largest sample file read: the probe's largest (10^8 rows of 9 columns, 7.2 GB) and its
#: header.
FILE_LIMIT = 8 * 2**30
#: Nesting of the header's JSON (the probe's is 4 deep), and the length of one string in it.
MAX_DEPTH = 32
MAX_STRING = 1 << 16
#: Nanoseconds per tick: from a femtosecond to a second.
NS_PER_TICK_RANGE = (1e-6, 1e9)

_INT64 = 2**63
_FIRST = re.compile(rb"LATSCOPE-SAMPLES (0|[1-9][0-9]{0,8})\n")
_DATA = re.compile(rb"DATA ([1-9][0-9]{0,8}) (0|[1-9][0-9]{0,18})\n")
_END = re.compile(rb"\nEND (0|[1-9][0-9]{0,18}) ([0-9a-f]{8})\n")
#: Names the lab shows and matches: benchmark, clock, a column's kind, unit and latency.
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,63}")
#: Characters a column name never holds (beside whitespace and non-printing ones): they are
#: markup or escapes in the terminal, LaTeX and shells.
NAME_FORBIDDEN = frozenset("[]\\{}\"'`")
MAX_NAME = 64
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]{1,40}")


class SampleFormatError(BadInput):
    """The file is not a complete latscope sample file."""


@dataclass
class SampleFile:
    path: Path
    header: dict[str, Any]
    ticks: dict[str, np.ndarray]  # column name -> int64 ticks (t_start included)
    version: int = FORMAT_VERSION

    @property
    def header_checksummed(self) -> bool:
        """Whether the checksum covers the header (version 2 on), or the samples only."""
        return self.version >= 2

    @property
    def ns_per_tick(self) -> float:
        return float(self.header["clock"]["ns_per_tick"])

    @property
    def duration_columns(self) -> list[str]:
        return [c["name"] for c in self.header["columns"] if c.get("kind") == "duration"]

    def ns(self, name: str) -> np.ndarray:
        """A column converted to nanoseconds (float64)."""
        import numpy as np

        return self.ticks[name].astype(np.float64) * self.ns_per_tick


def _fail(path: Path, why: str) -> SampleFormatError:
    return SampleFormatError(f"{path}: {why}")


# ---------------------------------------------------------------------------- the layout


@dataclass
class _Layout:
    version: int
    header: tuple[int, int]  # the header line's bytes, [start, end)
    start: int  # the first sample byte
    ncols: int
    nrows: int

    @property
    def end(self) -> int:
        """Where the samples end and the END line starts."""
        return self.start + self.ncols * self.nrows * 8

    @property
    def size(self) -> int:
        """The size of the whole file, as its DATA line says."""
        return self.end + len(f"\nEND {self.nrows} 00000000\n")


def _layout(head: bytes, size: int) -> _Layout | str:
    """Where the parts of a file of ``size`` bytes are, from its first bytes ``head`` (at least
    `MAX_HEADER_BYTES` + 64 of them, or all), or why it is not a sample file."""
    if not head.startswith(MAGIC):
        return "not a latscope sample file (no LATSCOPE-SAMPLES line)"
    m = _FIRST.match(head)
    if m is None:
        cut = b"\n" not in head[: len(MAGIC) + 12] and len(head) == size
        return "truncated in the first line" if cut else "damaged first line"
    version = int(m.group(1))
    if version not in SUPPORTED_VERSIONS:
        known = " and ".join(str(v) for v in SUPPORTED_VERSIONS)
        return f"sample format version {version}; this latscope reads versions {known}"
    hstart = m.end()
    nl = head.find(b"\n", hstart, hstart + MAX_HEADER_BYTES + 1)
    if nl < 0:
        if len(head) - hstart > MAX_HEADER_BYTES:
            return f"the header line is longer than {MAX_HEADER_BYTES} bytes"
        return "truncated in the header"
    d = _DATA.match(head, nl + 1)
    if d is None:
        rest = head[nl + 1 : nl + 40]
        if len(head) == size and b"\n" not in rest and b"DATA ".startswith(rest[:5]):
            return "truncated before the samples (no whole DATA line)"
        return "damaged DATA line (it must be 'DATA <columns> <rows>')"
    ncols, nrows = int(d.group(1)), int(d.group(2))
    if ncols > MAX_COLUMNS:
        return f"the DATA line declares {ncols} columns; the format allows {MAX_COLUMNS}"
    if nrows > MAX_ROWS:
        return f"the DATA line declares {nrows} rows; the format allows {MAX_ROWS}"
    return _Layout(version, (hstart, nl), d.end(), ncols, nrows)


def _size_problem(lay: _Layout, size: int) -> str | None:
    if size < lay.size:
        return (
            f"truncated ({size} of {lay.size} bytes): the END line is missing "
            "(the run did not finish writing)"
        )
    if size > lay.size:
        return f"damaged: {size} bytes where its DATA line says {lay.size}"
    return None


def check(path: str | os.PathLike[str]) -> str | None:
    """Why a sample file is not complete, or None.  Reads the lines before the samples and the
    trailer only (no sample, no checksum, no header schema): the END line must be there and
    the file exactly as long as its DATA line says.  `load` verifies the rest."""
    p = Path(path)
    if not os.path.lexists(p):
        return f"{p.name} is missing"
    try:
        with open_regular(p, "a sample file", FILE_LIMIT) as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(MAX_HEADER_BYTES + 64) or b""
            lay = _layout(head, size)
            if isinstance(lay, str):
                return f"{p.name}: {lay}"
            why = _size_problem(lay, size)
            if why:
                return f"{p.name} is {why}" if why.startswith("truncated") else f"{p.name}: {why}"
            f.seek(lay.end)
            if not _END.fullmatch(f.read(lay.size - lay.end) or b""):
                return f"{p.name} is damaged (no END line where the DATA line puts it)"
    except BadInput as e:
        return f"{p.name}: {e.message.split(': ', 1)[-1]}"
    except (OSError, ValueError) as e:
        return f"{p.name} cannot be read ({e})"
    return None


# ---------------------------------------------------------------------------- the header


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _tree_problem(v: Any, where: str = "header", depth: int = 0) -> str | None:
    """What is wrong with a JSON value anywhere in the header: nesting deeper than
    `MAX_DEPTH`, a string that is not UTF-8 (a lone surrogate escape) or longer than
    `MAX_STRING`, a number that is not finite or an integer beyond 64 bits; or None."""
    if depth > MAX_DEPTH:
        return f"header: nested more than {MAX_DEPTH} deep"
    if isinstance(v, str):
        if len(v) > MAX_STRING:
            return f"{where}: a string of {len(v)} characters (at most {MAX_STRING})"
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where}: a string that is not UTF-8 (a lone surrogate)"
    elif isinstance(v, float):
        if not math.isfinite(v):
            return f"{where}: a number that is not finite"
    elif isinstance(v, int) and not isinstance(v, bool):
        if not -_INT64 <= v < _INT64:
            return f"{where}: an integer beyond 64 bits"
    elif isinstance(v, dict):
        for k, x in v.items():
            at = f"{where}.{k if _PLAIN_KEY.fullmatch(k) else json.dumps(k)[:40]}"
            why = _tree_problem(k, where, depth + 1) or _tree_problem(x, at, depth + 1)
            if why:
                return why
    elif isinstance(v, list):
        for i, x in enumerate(v):
            why = _tree_problem(x, f"{where}[{i}]", depth + 1)
            if why:
                return why
    return None


def column_name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a column (it is shown, matched and used in file and frame
    column names): not a string of 1 to `MAX_NAME` printing characters without whitespace and
    without any of ``[]\\{}"'` ``; or None."""
    if not isinstance(name, str) or not name:
        return "a column name must be a non-empty string"
    if len(name) > MAX_NAME:
        return f"column name '{name[:20]}…' is longer than {MAX_NAME} characters"
    bad = [c for c in name if c in NAME_FORBIDDEN or c.isspace() or not c.isprintable()]
    if bad:
        return f"column name {name!r} holds {bad[0]!r}, which a column name may not"
    return None


def _typed(h: Mapping[str, Any], key: str, ok: Any, what: str, where: str = "") -> str | None:
    """A problem when ``h[key]`` is present (and not null) but ``ok(value)`` is false."""
    v = h.get(key)
    if v is None or ok(v):
        return None
    return f"{where}{key} must be {what} (it is {json.dumps(v)[:40]})"


def _nonneg(v: Any) -> bool:
    return _is_num(v) and v >= 0


def _obj(v: Any) -> bool:
    return isinstance(v, dict)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _params(v: Any) -> bool:
    """An object of values: texts, numbers, true/false or null (the probe's parameters)."""
    return _obj(v) and all(x is None or isinstance(x, (str, int, float)) for x in v.values())


def _texts(v: Any) -> bool:
    return _obj(v) and all(x is None or _text(x) for x in v.values())


def _token(v: Any) -> bool:
    return isinstance(v, str) and _TOKEN.fullmatch(v) is not None


def _columns_problem(cols: Any, ncols: int) -> str | None:
    if not isinstance(cols, list):
        return "columns must be a list"
    if len(cols) != ncols:
        return f"the header names {len(cols)} columns but the data has {ncols}"
    seen: set[str] = set()
    for i, c in enumerate(cols):
        if not isinstance(c, dict):
            return f"columns[{i}] must be an object"
        why = column_name_problem(c.get("name"))
        if why:
            return f"columns[{i}]: {why}"
        name = c["name"]
        if name in seen:
            return f"columns[{i}]: column '{name}' appears twice"
        seen.add(name)
        kind = c.get("kind")
        if i == 0 and (name != "t_start" or kind != "time"):
            return "columns[0] must be t_start, of kind time"
        if i > 0 and kind != "duration":
            return f"columns[{i}] ({name}): kind must be duration"
        for key, ok, what in (
            ("unit", _token, "a name"),
            ("latency", _token, "a name"),
            ("context_switches", lambda v: _is_int(v) and v >= 0, "a count"),
            ("description", lambda v: isinstance(v, str), "text"),
        ):
            why = _typed(c, key, ok, what, f"columns[{i}].")
            if why:
                return why
    if ncols < 2:
        return "no timed columns (only t_start)"
    return None


def _clock_problem(clk: Any) -> str | None:
    if not isinstance(clk, dict):
        return "clock must be an object"
    if not _token(clk.get("name")):
        return "clock.name must be a name"
    npt = clk.get("ns_per_tick")
    lo, hi = NS_PER_TICK_RANGE
    if not _is_num(npt) or not lo <= npt <= hi:
        shown = json.dumps(npt)[:40]
        return f"clock.ns_per_tick must be a number from {lo:g} to {hi:g} (it is {shown})"
    for key in ("step_ns", "overhead_ns", "resolution_ns", "getres_ns", "calibration_ms"):
        why = _typed(clk, key, _nonneg, "a number ≥ 0", "clock.")
        if why:
            return why
    for key, ok, what in (
        ("calibration_ppm", _is_num, "a number"),
        ("tsc_invariant", lambda v: isinstance(v, bool), "true or false"),
        ("resolution_guessed", lambda v: isinstance(v, bool), "true or false"),
        ("calibrated_against", lambda v: isinstance(v, str), "text"),
        ("resolution_note", lambda v: isinstance(v, str), "text"),
    ):
        why = _typed(clk, key, ok, what, "clock.")
        if why:
            return why
    return None


def _workers_problem(ws: Any, n: int) -> str | None:
    if not isinstance(ws, list) or not ws:
        return "workers must be a non-empty list"
    for i, w in enumerate(ws):
        if not isinstance(w, dict):
            return f"workers[{i}] must be an object"
        if not (_is_int(w.get("n")) and w["n"] >= 0):
            return f"workers[{i}].n must be a count"
        for key, ok, what in (
            ("warmup", lambda v: _is_int(v) and v >= 0, "a count"),
            ("pid", _is_int, "an integer"),
            ("timed_rusage", lambda v: isinstance(v, dict), "an object"),
        ):
            why = _typed(w, key, ok, what, f"workers[{i}].")
            if why:
                return why
        for role, counts in (w.get("timed_rusage") or {}).items():
            if not isinstance(counts, dict) or not all(
                v is None or _is_int(v) for v in counts.values()
            ):
                role = json.dumps(role)[:40]
                return f"workers[{i}].timed_rusage.{role} must map counters to integers"
    total = sum(w["n"] for w in ws)
    if total != n:
        return f"the workers' n add up to {total}, not the header's n ({n})"
    return None


def header_problem(
    header: Any, ncols: int, nrows: int, version: int = FORMAT_VERSION
) -> str | None:
    """What is wrong with a sample file's header against the format's schema
    (docs/sample-format.md, "Header fields"), for data of ``ncols`` columns of ``nrows`` rows
    in a file of format ``version``; None when nothing is. Fields the lab reads are checked
    for their type and range; others (bench, env, source) must be JSON objects; unknown
    fields are allowed. Nothing anywhere may nest deeper than `MAX_DEPTH`, hold a string
    longer than `MAX_STRING` or a number that is not finite."""
    if not isinstance(header, dict):
        return "the header must be a JSON object"
    why = _tree_problem(header)
    if why:
        return why
    if header.get("format") != "latscope-samples":
        return "format must be 'latscope-samples'"
    if header.get("format_version") != version or isinstance(header["format_version"], bool):
        return f"format_version must be {version}, as the first line says"
    if not _token(header.get("benchmark")):
        return "benchmark must be a name (letters, digits, _ . + -; at most 64)"
    n = header.get("n")
    if not _is_int(n) or n < 0:
        return f"n must be a count (it is {json.dumps(n)[:40]})"
    if n != nrows:
        return f"the header's n is {n} but the data holds {nrows} rows"
    if n == 0:
        return "no samples (n is 0): there is nothing to compute a figure from"
    if not _params(header.get("params")):
        return f"params must be an object of values (it is {json.dumps(header.get('params'))[:40]})"
    why = _columns_problem(header.get("columns"), ncols) or _clock_problem(header.get("clock"))
    if why:
        return why
    if header.get("workers") is not None:
        why = _workers_problem(header["workers"], n)
        if why:
            return why
    for key, ok, what in (
        ("warmup", lambda v: _is_int(v) and v >= 0, "a count"),
        ("inject_ns", _nonneg, "a number ≥ 0"),
        ("bench", _obj, "an object"),
        ("env", _obj, "an object"),
        ("source", _obj, "an object"),
        ("probe", _texts, "an object of texts"),
        ("argv", lambda v: isinstance(v, list) and all(_text(x) for x in v), "a list of texts"),
        ("started_utc", _text, "text"),
        ("finished_utc", _text, "text"),
        ("name", _text, "text"),
        ("times", _text, "text"),
        ("byte_order", lambda v: v in ("little", "big"), "'little' or 'big'"),
    ):
        why = _typed(header, key, ok, what)
        if why:
            return why
    return None


class _HeaderError(ValueError):
    """What is wrong with the header's JSON, as the message says it."""


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _HeaderError(f"the key {json.dumps(k)[:40]} appears twice in one object")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise _HeaderError(f"the header holds {name}, which is not a number JSON allows")


def _parse_header(line: bytes, version: int) -> Any:
    """The header's JSON; ValueError (with the reason) when it is not UTF-8 or not JSON.
    Version 1 files of probes that wrote a path's bytes as they were are read with each
    byte that is not UTF-8 as U+FFFD, as version 2 probes write them."""
    try:
        text = line.decode("utf-8", "strict" if version >= 2 else "replace")
    except UnicodeDecodeError as e:
        raise ValueError(f"the header is not UTF-8 (byte {e.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except _HeaderError:
        raise
    except RecursionError:
        raise ValueError(f"the header is nested more than {MAX_DEPTH} deep") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"the header is not JSON ({e.msg} at byte {e.pos})") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ValueError(
            "the header is not JSON we read (a number of thousands of digits)"
        ) from None


# ---------------------------------------------------------------------------- reading


def _read(p: Path) -> bytearray:
    """The whole file, through the guarded open (`files.open_regular`), into one buffer."""
    try:
        f = open_regular(p, "a sample file", FILE_LIMIT)
    except BadInput as e:
        raise SampleFormatError(e.message) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        buf = bytearray(size + 1)
        view = memoryview(buf)
        got = 0
        try:
            while got <= size:
                k = f.readinto(view[got:])
                if not k:
                    break
                got += k
        except OSError as e:
            raise _fail(p, f"cannot read: {e.strerror or e}") from None
        finally:
            view.release()
        if got > size:
            raise _fail(p, "the file grew while being read")
        del buf[got:]
        return buf


def load(path: str | os.PathLike[str]) -> SampleFile:
    """A sample file, checked whole (module docs); SampleFormatError (one line) otherwise."""
    p = Path(path)
    raw = _read(p)
    lay = _layout(bytes(raw[: MAX_HEADER_BYTES + 64]), len(raw))
    if isinstance(lay, str):
        raise _fail(p, lay)
    why = _size_problem(lay, len(raw))
    if why:
        raise _fail(p, why)
    end = _END.fullmatch(raw, lay.end)
    if end is None:
        raise _fail(p, "damaged END line")
    if int(end.group(1)) != lay.nrows:
        raise _fail(p, f"damaged: the END line says {int(end.group(1))} rows, DATA {lay.nrows}")
    covered = (
        memoryview(raw)[: lay.end] if lay.version >= 2 else memoryview(raw)[lay.start : lay.end]
    )
    crc = zlib.crc32(covered) & 0xFFFFFFFF
    covered.release()
    if f"{crc:08x}".encode() != end.group(2):
        what = "the header or the samples were" if lay.version >= 2 else "the samples were"
        raise _fail(p, f"checksum mismatch: {what} altered or damaged")
    try:
        header = _parse_header(bytes(raw[lay.header[0] : lay.header[1]]), lay.version)
    except ValueError as e:
        raise _fail(p, str(e)) from None
    why = header_problem(header, lay.ncols, lay.nrows, lay.version)
    if why:
        raise _fail(p, f"bad header: {why}")
    import numpy as np

    order = "<" if header.get("byte_order", "little") == "little" else ">"
    data = np.frombuffer(
        raw, dtype=np.dtype(f"{order}i8"), count=lay.ncols * lay.nrows, offset=lay.start
    )
    data = data.reshape(lay.ncols, lay.nrows)
    ticks = {c["name"]: data[i] for i, c in enumerate(header["columns"])}
    return SampleFile(path=p, header=header, ticks=ticks, version=lay.version)


# ---------------------------------------------------------------------------- writing


def write(
    path: str | os.PathLike[str],
    header: dict[str, Any],
    columns: Mapping[str, npt.ArrayLike],
    *,
    overwrite: bool = False,
) -> Path:
    """Write a sample file in the probe's format (docs/sample-format.md) and return its path.

    ``header["columns"]`` lists the columns in file order (``name``, ``kind``, ...); ``columns``
    maps each name to its integer ticks (int64). ``format``, ``format_version``, ``n`` and
    ``byte_order`` are filled in, and ``params`` (empty) when the header has none. The header
    must pass the format's schema (`header_problem`; ValueError otherwise), so what is written
    can be read back. The file is written atomically (`files.atomic_write`), so a file with
    the final name is always whole; an existing file is refused unless ``overwrite``."""
    import numpy as np

    p = Path(path)
    names = [c["name"] for c in header.get("columns", [])]
    if not names:
        raise ValueError("header['columns'] must name at least one column")
    if sorted(names) != sorted(columns):
        raise ValueError(f"header names columns {names} but data was given for {sorted(columns)}")
    arrays = []
    for name in names:
        a = np.asarray(columns[name])
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"column {name}: need a one-dimensional integer array of ticks")
        arrays.append(a.astype("<i8", copy=False))
    nrows = int(arrays[0].size)
    if any(a.size != nrows for a in arrays):
        raise ValueError("all columns must have the same number of rows")
    if nrows > MAX_ROWS or len(arrays) > MAX_COLUMNS:
        raise ValueError(f"at most {MAX_ROWS} rows of {MAX_COLUMNS} columns")
    hdr = {
        "format": "latscope-samples",
        "params": {},
        **header,
        "format_version": FORMAT_VERSION,
        "n": nrows,
        "byte_order": "little",
    }
    why = header_problem(hdr, len(arrays), nrows)
    if why:
        raise ValueError(f"not a valid sample file header: {why}")
    head = json.dumps(hdr, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()
    if len(head) > MAX_HEADER_BYTES:
        raise ValueError(f"the header takes {len(head)} bytes; at most {MAX_HEADER_BYTES}")
    if not overwrite and p.exists():
        raise BadInput(f"{p} exists; not overwriting it")
    with atomic_write(p) as f:
        crc = 0
        for part in (MAGIC + f"{FORMAT_VERSION}\n".encode(), head + b"\n"):
            crc = zlib.crc32(part, crc)
            f.write(part)
        part = f"DATA {len(arrays)} {nrows}\n".encode()
        crc = zlib.crc32(part, crc)
        f.write(part)
        for a in arrays:
            buf = np.ascontiguousarray(a).tobytes()
            crc = zlib.crc32(buf, crc)
            f.write(buf)
        f.write(f"\nEND {nrows} {crc & 0xFFFFFFFF:08x}\n".encode())
    return p
