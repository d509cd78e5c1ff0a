"""Reading and writing sample files (format: docs/sample-format.md).

A file is: a magic line with the format version, one line of JSON (the header), a DATA line,
the samples as little-endian int64 in clock ticks (one column after another), and an END line
with the row count and a CRC-32. In version 2 the CRC covers every byte before the END line,
the header included; in version 1 (files kept by earlier versions, still read) it covers the
samples only. A file without its END line was cut short and is refused. Version 3 is the
same layout for an arms run (several scenarios interleaved in one probe process): after the
durations, three index columns (`arm`, `block`, `round`: whole numbers, never ticks), which
`SampleFile.index` gives apart from the timed columns, and the header's ``arms`` and
``interleave``.

`load` reads a file through the one guarded reader (`files.open_regular`: no FIFO, device or
file above `FILE_LIMIT`), checks its layout against its DATA line, its checksum, then its
header against the format's schema (`schema.header_problem`: types, ranges, ``n`` and the
columns against the data, bounded strings and nesting) before any figure can be computed. Every way
a file can be wrong ends in `SampleFormatError` (BadInput, exit 2): one line naming the file
and what is wrong. The samples are read once for the check and not kept: a column is read
again when asked for (`Columns`: one column in memory at a time, refused in one line when
the file changed since). The probe writes the files; `write` writes the same format for
samples imported from elsewhere, checked against the same schema.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ..errors import BadInput
from ..files import atomic_write, open_regular
from .schema import (
    INDEX_COLUMNS,
    MAX_DEPTH,
    MAX_NAME,
    MAX_STRING,
    NAME_FORBIDDEN,
    NS_PER_TICK_RANGE,
    column_name_problem,
    header_problem,
    index_columns,
    index_problem,
    parse_header,
)

if TYPE_CHECKING:  # numpy is imported where samples are read or written: `check` needs none
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "ARMS_FORMAT_VERSION",
    "FILE_LIMIT",
    "FORMAT_VERSION",
    "INDEX_COLUMNS",
    "MAGIC",
    "MAX_COLUMNS",
    "MAX_DEPTH",
    "MAX_HEADER_BYTES",
    "MAX_NAME",
    "MAX_ROWS",
    "MAX_STRING",
    "NAME_FORBIDDEN",
    "NS_PER_TICK_RANGE",
    "SUPPORTED_VERSIONS",
    "Columns",
    "SampleFile",
    "SampleFormatError",
    "check",
    "column_name_problem",
    "header_problem",
    "index_problem",
    "load",
    "write",
]

MAGIC = b"LATSCOPE-SAMPLES "
#: The version `write` (and the probe) writes for a run of one benchmark; version 1 is still
#: read.
FORMAT_VERSION = 2
#: The version of an arms run's file (`INDEX_COLUMNS` after the durations; the header's
#: ``arms`` and ``interleave``), which `write` writes when the columns hold them.
ARMS_FORMAT_VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)

# The limits of the format (docs/sample-format.md, "Checked before any figure"; the probe's
# are in probe.h).
#: The header line, in bytes (the probe writes a few KiB).
MAX_HEADER_BYTES = 1 << 20
#: Columns, t_start included (the probe records at most 9).
MAX_COLUMNS = 64
#: Rows: the probe's largest -n.
MAX_ROWS = 100_000_000
#: The largest sample file read: the probe's largest (10^8 rows of 9 columns, 7.2 GB) and its
#: header.
FILE_LIMIT = 8 * 2**30

_FIRST = re.compile(rb"LATSCOPE-SAMPLES (0|[1-9][0-9]{0,8})\n")
_DATA = re.compile(rb"DATA ([1-9][0-9]{0,8}) (0|[1-9][0-9]{0,18})\n")
_END = re.compile(rb"\nEND (0|[1-9][0-9]{0,18}) ([0-9a-f]{8})\n")


class SampleFormatError(BadInput):
    """The file is not a complete latscope sample file."""


@dataclass
class SampleFile:
    path: Path
    header: dict[str, Any]
    #: column name -> int64 ticks (t_start and the durations): a `Columns` of a file read by
    #: `load`, which reads a column from the file when it is asked for (one at a time)
    ticks: Mapping[str, np.ndarray]
    version: int = FORMAT_VERSION
    #: An arms run's index columns (arm, block, round) -> int64 whole numbers, never ticks;
    #: empty for a run of one benchmark (`index`, `index_columns`).
    index_data: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def header_checksummed(self) -> bool:
        """Whether the checksum covers the header (version 2 on), or the samples only."""
        return self.version >= 2

    @property
    def index_columns(self) -> list[str]:
        """The index columns, in file order: ``["arm", "block", "round"]`` in an arms run's
        file, ``[]`` otherwise."""
        return list(self.index_data)

    def index(self, name: str) -> np.ndarray:
        """An index column (int64): ``arm`` (into `arms`), ``block`` (counted across the
        file) or ``round`` (counted within its worker) of every row; KeyError when the file
        has none of that name."""
        if name not in self.index_data:
            raise KeyError(f"{self.path} has no index column '{name}'")
        return self.index_data[name]

    @property
    def arms(self) -> list[dict[str, Any]] | None:
        """An arms run's arms (the header's ``arms``: benchmark, params, n, columns, ...), in
        the order the ``arm`` column counts them; None for a run of one benchmark."""
        a = self.header.get("arms")
        return a if self.index_data and isinstance(a, list) else None

    @property
    def interleave(self) -> dict[str, Any] | None:
        """An arms run's rounds (the header's ``interleave``: seed, time_s, block_ms, rounds
        and the order of every round, per worker); None for a run of one benchmark."""
        il = self.header.get("interleave")
        return il if self.index_data and isinstance(il, dict) else None

    @property
    def ns_per_tick(self) -> float:
        return float(self.header["clock"]["ns_per_tick"])

    @property
    def duration_columns(self) -> list[str]:
        return [c["name"] for c in self.header["columns"] if c.get("kind") == "duration"]

    def in_memory(self) -> SampleFile:
        """This file with every column read into memory (a dict of arrays, as `ticks` was
        before it read a column when asked for): for a small file about to go (a probe
        process's block, read and removed), whose columns are used after it is gone."""
        return replace(self, ticks={name: self.ticks[name] for name in self.ticks})

    def ns(self, name: str) -> np.ndarray:
        """A column converted to nanoseconds (float64); ValueError for an index column,
        which holds no time. A column of a file read by `load` is converted as it is read,
        a block of rows at a time (no whole column of ticks besides it)."""
        if name in self.index_data:
            raise ValueError(f"{name} is an index column (whole numbers), not a time")
        if isinstance(self.ticks, Columns):
            return self.ticks.ns(name, self.ns_per_tick)
        import numpy as np

        out = self.ticks[name].astype(np.float64)
        out *= self.ns_per_tick  # in place: one array of the column's size, not two
        return out


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


# ---------------------------------------------------------------------------- reading


def _fill(p: Path, f: BinaryIO, buf: memoryview) -> int:
    """``buf`` filled from ``f``'s position on; how many bytes it got (fewer at the end)."""
    got = 0
    try:
        while got < len(buf):
            k = f.readinto(buf[got:])
            if not k:
                break
            got += k
    except OSError as e:
        raise _fail(p, f"cannot read: {e.strerror or e}") from None
    return got


def _part(p: Path, f: BinaryIO, n: int) -> bytes:
    """At most ``n`` bytes of ``f`` from its position on (fewer at its end)."""
    buf = bytearray(n)
    with memoryview(buf) as view:
        got = _fill(p, f, view)
    del buf[got:]
    return bytes(buf)


#: Rows read at a time where a column is checked or converted (8 MiB of int64).
BLOCK_ROWS = 1 << 20


@dataclass(frozen=True)
class _Column:
    offset: int  # its first byte in the file
    crc_before: int  # the running CRC-32 where it starts
    crc_after: int  # ... and where it ends
    zero: bool  # only zeros (an import without times)


@dataclass(frozen=True)
class _Seen:
    """A file as `load` checked it: what a column read again must come from."""

    path: Path  # as given: the messages name it so
    where: str  # the absolute path, read again from there
    identity: tuple[int, ...]  # device, inode, size, modification time (`_identity`)
    nrows: int
    dtype: str  # the samples in the header's byte order


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Columns(Mapping[str, "np.ndarray"]):
    """The columns of a file `load` checked, each read from the file again when it is asked
    for: a column's ticks (``columns[name]``, int64) or its nanoseconds (`ns`, float64, made
    a block of rows at a time), one column in memory where the caller holds one. No
    descriptor is kept between reads: each opens the file again (`files.open_regular`) and
    refuses it, one line, when it is no longer the file checked (another device, inode, size
    or modification time: replaced, cut short or rewritten) or when the column's bytes no
    longer give the checksum's value they gave (written to in place)."""

    def __init__(self, seen: _Seen, columns: dict[str, _Column]) -> None:
        self._seen = seen
        self._columns = columns

    def __getitem__(self, name: str) -> np.ndarray:
        return self._read(self._columns[name], None)

    def __contains__(self, name: object) -> bool:
        return name in self._columns  # without reading it

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __repr__(self) -> str:
        return f"<columns {', '.join(self._columns)} of {self._seen.path}>"

    def ns(self, name: str, ns_per_tick: float) -> np.ndarray:
        """Column ``name`` in nanoseconds: its ticks (as their byte order reads them)
        converted to float64 and multiplied by ``ns_per_tick``, value by value as
        ``ticks.astype(float64) * ns_per_tick``, a block of rows at a time."""
        return self._read(self._columns[name], ns_per_tick)

    def _changed(self) -> SampleFormatError:
        return _fail(self._seen.path, "changed since it was read (replaced, cut or written to)")

    def _read(self, c: _Column, scale: float | None) -> np.ndarray:
        import numpy as np

        s = self._seen
        if c.zero:  # the zero pages the system maps: no memory until written
            if scale is not None:
                return np.zeros(s.nrows, dtype=np.float64)
            return np.zeros(s.nrows, dtype=np.int64).view(s.dtype)
        try:
            f = open_regular(s.where, "a sample file", FILE_LIMIT)
        except BadInput as e:
            why = e.message.removeprefix(f"{s.where}: ")
            raise _fail(s.path, f"cannot be read again: {why}") from None
        with f:
            if _identity(os.fstat(f.fileno())) != s.identity:
                raise self._changed()
            f.seek(c.offset)
            crc, rows = c.crc_before, s.nrows
            out = np.empty(rows, dtype=np.int64 if scale is None else np.float64)
            buf = out if scale is None else np.empty(min(rows, BLOCK_ROWS), dtype=np.int64)
            for i in range(0, rows, BLOCK_ROWS):
                k = min(BLOCK_ROWS, rows - i)
                part = buf[i : i + k] if scale is None else buf[:k]
                with memoryview(part).cast("B") as view:
                    if _fill(s.path, f, view) < len(view):
                        raise self._changed()
                    crc = zlib.crc32(view, crc)
                if scale is not None:
                    into = out[i : i + k]
                    into[:] = part.view(s.dtype)
                    into *= scale  # in place, as ns() did over the whole column
        if crc != c.crc_after:
            raise self._changed()
        return out.view(s.dtype) if scale is None else out


def _scan(p: Path, f: BinaryIO, lay: _Layout, head: bytes) -> tuple[list[_Column], int]:
    """Where each column of ``f`` (its first bytes ``head``) lies, with the CRC-32 the
    format computes over the samples: the columns read a block of rows at a time into one
    buffer (none is kept), the checksum's value recorded where each column starts and ends
    (`Columns` checks a column read again against it) and whether it holds only zeros (an
    import without times: given as the zero pages the system maps, never read again)."""
    import numpy as np

    f.seek(lay.start)
    crc = zlib.crc32(head[: lay.start] if lay.version >= 2 else b"")
    out = []
    buf = np.empty(min(lay.nrows, BLOCK_ROWS), dtype=np.int64)
    for i in range(lay.ncols):
        before, zero, left = crc, True, lay.nrows
        while left:
            k = min(left, buf.size)
            with memoryview(buf[:k]).cast("B") as view:
                if _fill(p, f, view) < len(view):
                    raise _fail(p, "the file shrank while being read")
                crc = zlib.crc32(view, crc)
            zero = zero and not buf[:k].any()
            left -= k
        out.append(_Column(lay.start + 8 * i * lay.nrows, before, crc, zero))
    return out, crc & 0xFFFFFFFF


def load(path: str | os.PathLike[str]) -> SampleFile:
    """A sample file, checked whole (module docs); SampleFormatError (one line) otherwise.
    Its lines before the samples are read first, then its END line, then its samples
    (`_scan`: their checksum, no column kept), through the one guarded open
    (`files.open_regular`). Its columns are read again one at a time when asked for
    (`Columns`), each checked against what was checked here."""
    p = Path(path)
    try:
        f = open_regular(p, "a sample file", FILE_LIMIT)
    except BadInput as e:
        raise SampleFormatError(e.message) from None
    with f:
        st = os.fstat(f.fileno())
        size = st.st_size
        head = _part(p, f, min(size, MAX_HEADER_BYTES + 64))
        lay = _layout(head, size)
        if isinstance(lay, str):
            raise _fail(p, lay)
        why = _size_problem(lay, size)
        if why:
            raise _fail(p, why)
        f.seek(lay.end)
        tail = _part(p, f, lay.size - lay.end + 1)
        if len(tail) != lay.size - lay.end:
            changed = "grew" if len(tail) > lay.size - lay.end else "shrank"
            raise _fail(p, f"the file {changed} while being read")
        end = _END.fullmatch(tail)
        if end is None:
            raise _fail(p, "damaged END line")
        if int(end.group(1)) != lay.nrows:
            raise _fail(p, f"damaged: the END line says {int(end.group(1))} rows, DATA {lay.nrows}")
        columns, crc = _scan(p, f, lay, head)
    if f"{crc:08x}".encode() != end.group(2):
        what = "the header or the samples were" if lay.version >= 2 else "the samples were"
        raise _fail(p, f"checksum mismatch: {what} altered or damaged")
    try:
        header = parse_header(head[lay.header[0] : lay.header[1]], lay.version)
    except ValueError as e:
        raise _fail(p, str(e)) from None
    why = header_problem(header, lay.ncols, lay.nrows, lay.version)
    if why:
        raise _fail(p, f"bad header: {why}")
    # the samples as the header's byte order reads them
    order = "<" if header.get("byte_order", "little") == "little" else ">"
    seen = _Seen(p, os.path.abspath(p), _identity(st), lay.nrows, f"{order}i8")
    named = {c["name"]: columns[i] for i, c in enumerate(header["columns"])}
    index_names = index_columns(header)
    ticks = Columns(seen, {k: v for k, v in named.items() if k not in index_names})
    index = {name: Columns(seen, {name: named[name]})[name] for name in index_names}
    why = index_problem(header, index)
    if why:
        raise _fail(p, f"bad index columns: {why}")
    return SampleFile(path=p, header=header, ticks=ticks, version=lay.version, index_data=index)


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
    can be read back. An arms run's file (columns of kind ``index``: arm, block, round, and
    the header's ``arms`` and ``interleave``) is written as `ARMS_FORMAT_VERSION`, any other
    as `FORMAT_VERSION`. The file is written atomically (`files.atomic_write`), so a file with
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
    kinds = [c.get("kind") if isinstance(c, dict) else None for c in header["columns"]]
    version = ARMS_FORMAT_VERSION if "index" in kinds or "arms" in header else FORMAT_VERSION
    hdr = {
        "format": "latscope-samples",
        "params": {},
        **header,
        "format_version": version,
        "n": nrows,
        "byte_order": "little",
    }
    why = header_problem(hdr, len(arrays), nrows, version)
    if not why:
        named = dict(zip(names, arrays, strict=True))
        why = index_problem(hdr, {n: named[n] for n in index_columns(hdr)})
    if why:
        raise ValueError(f"not a valid sample file header: {why}")
    head = json.dumps(hdr, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()
    if len(head) > MAX_HEADER_BYTES:
        raise ValueError(f"the header takes {len(head)} bytes; at most {MAX_HEADER_BYTES}")
    if not overwrite and p.exists():
        raise BadInput(f"{p} exists; not overwriting it")
    with atomic_write(p) as f:
        crc = 0
        for part in (MAGIC + f"{version}\n".encode(), head + b"\n"):
            crc = zlib.crc32(part, crc)
            f.write(part)
        part = f"DATA {len(arrays)} {nrows}\n".encode()
        crc = zlib.crc32(part, crc)
        f.write(part)
        for a in arrays:  # written from the arrays' memory, not a copy of it
            buf = memoryview(np.ascontiguousarray(a)).cast("B")
            crc = zlib.crc32(buf, crc)
            f.write(buf)
        f.write(f"\nEND {nrows} {crc & 0xFFFFFFFF:08x}\n".encode())
    return p
