"""Reading and writing sample files (format: docs/sample-format.md).

A file is: a magic line, one line of JSON (the header), a DATA line, the samples as
little-endian int64 in clock ticks (one column after another), and an END line with the row
count and a CRC-32 of the samples.  A file without its END line was cut short and is refused.
The probe writes them; `write` writes the same format for samples imported from elsewhere.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BadInput
from .files import atomic_write, read_bytes

if TYPE_CHECKING:  # numpy is imported where samples are read or written: `check` needs none
    import numpy as np
    import numpy.typing as npt

MAGIC = b"LATSCOPE-SAMPLES "
SUPPORTED_VERSIONS = (1,)


class SampleFormatError(BadInput):
    """The file is not a complete latscope sample file."""


@dataclass
class SampleFile:
    path: Path
    header: dict[str, Any]
    ticks: dict[str, np.ndarray]  # column name -> int64 ticks (t_start included)

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


def _lines(head: bytes) -> tuple[int, int, int] | None:
    """Where the first three lines (magic, header, DATA) of a sample file end, or None."""
    nl1 = head.find(b"\n")
    nl2 = head.find(b"\n", nl1 + 1) if nl1 >= 0 else -1
    nl3 = head.find(b"\n", nl2 + 1) if nl2 >= 0 else -1
    return (nl1, nl2, nl3) if nl3 >= 0 else None


def _data_shape(head: bytes, nl2: int, nl3: int) -> tuple[int, int] | None:
    """(columns, rows) from the DATA line, or None when it is not one."""
    data = head[nl2 + 1 : nl3].split()
    if len(data) != 3 or data[0] != b"DATA":
        return None
    try:
        return int(data[1]), int(data[2])
    except ValueError:
        return None


def _trailer_len(nrows: int) -> int:
    return len(f"\nEND {nrows} 00000000\n")


def check(path: str | os.PathLike[str]) -> str | None:
    """Why a sample file is not complete, or None.  Reads the lines before the samples and the
    trailer only (no sample, no checksum): the END line must be there and the file exactly as
    long as its DATA line says.  `load` verifies the checksum when it reads the samples."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(1 << 20)
            lines = _lines(head)
            if not head.startswith(MAGIC) or lines is None:
                return f"{p.name} is not a complete sample file (damaged header)"
            shape = _data_shape(head, lines[1], lines[2])
            if shape is None:
                return f"{p.name} is damaged (no DATA line)"
            ncols, nrows = shape
            trailer_len = _trailer_len(nrows)
            expected = lines[2] + 1 + ncols * nrows * 8 + trailer_len
            if size < expected:
                return f"{p.name} is truncated ({size} of {expected} bytes)"
            f.seek(expected - trailer_len)
            if size != expected or not f.read(trailer_len).startswith(b"\nEND "):
                return f"{p.name} is damaged (no END line where the DATA line puts it)"
    except FileNotFoundError:
        return f"{p.name} is missing"
    except (OSError, ValueError) as e:
        return f"{p.name} cannot be read ({e})"
    return None


def load(path: str | os.PathLike[str]) -> SampleFile:
    p = Path(path)
    raw = read_bytes(p, "a sample file")
    if not raw.startswith(MAGIC):
        raise _fail(p, "not a latscope sample file (no LATSCOPE-SAMPLES line)")
    lines = _lines(raw)
    nl1 = raw.find(b"\n")
    try:
        version = int(raw[len(MAGIC) : nl1])
    except ValueError:
        raise _fail(p, "damaged first line") from None
    if version not in SUPPORTED_VERSIONS:
        raise _fail(p, f"sample format version {version}; this latscope reads {SUPPORTED_VERSIONS}")
    nl2 = raw.find(b"\n", nl1 + 1)
    if nl2 < 0:
        raise _fail(p, "truncated in the header")
    try:
        header = json.loads(raw[nl1 + 1 : nl2])
    except json.JSONDecodeError:
        raise _fail(p, "damaged header (not JSON)") from None
    shape = _data_shape(raw, nl2, lines[2]) if lines else None
    if shape is None:
        raise _fail(p, "truncated or damaged before the samples")
    ncols, nrows = shape
    start = lines[2] + 1
    nbytes = ncols * nrows * 8
    end = start + nbytes
    trailer = raw[end:]
    if len(raw) < end or not trailer.startswith(b"\nEND ") or not trailer.endswith(b"\n"):
        raise _fail(p, "truncated: the END line is missing (the run did not finish writing)")
    parts = trailer[1:].split()
    if len(parts) != 3 or int(parts[1]) != nrows:
        raise _fail(p, "damaged END line")
    crc = zlib.crc32(raw[start:end]) & 0xFFFFFFFF
    if f"{crc:08x}" != parts[2].decode():
        raise _fail(p, "checksum mismatch: the samples were altered or damaged")
    cols = header.get("columns", [])
    if len(cols) != ncols:
        raise _fail(p, f"header names {len(cols)} columns but the data has {ncols}")
    order = "<" if header.get("byte_order", "little") == "little" else ">"
    import numpy as np

    data = np.frombuffer(raw, dtype=np.dtype(f"{order}i8"), count=ncols * nrows, offset=start)
    data = data.reshape(ncols, nrows)
    ticks = {c["name"]: data[i] for i, c in enumerate(cols)}
    return SampleFile(path=p, header=header, ticks=ticks)


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
    ``byte_order`` are filled in. The file is written atomically (`files.atomic_write`), so a
    file with the final name is always whole; an existing file is refused unless
    ``overwrite``."""
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
    hdr = {
        "format": "latscope-samples",
        "format_version": SUPPORTED_VERSIONS[-1],
        **header,
        "n": nrows,
        "byte_order": "little",
    }
    hdr["format_version"] = SUPPORTED_VERSIONS[-1]
    head = json.dumps(hdr, allow_nan=False, separators=(",", ":"))
    if not overwrite and p.exists():
        raise BadInput(f"{p} exists; not overwriting it")
    crc = 0
    with atomic_write(p) as f:
        f.write(MAGIC + f"{hdr['format_version']}\n".encode())
        f.write(head.encode() + b"\n")
        f.write(f"DATA {len(arrays)} {nrows}\n".encode())
        for a in arrays:
            buf = np.ascontiguousarray(a).tobytes()
            crc = zlib.crc32(buf, crc)
            f.write(buf)
        f.write(f"\nEND {nrows} {crc & 0xFFFFFFFF:08x}\n".encode())
    return p
