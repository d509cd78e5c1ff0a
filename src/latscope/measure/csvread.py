"""A CSV file read in blocks of rows (importer.read_csv): its text checked in a first pass, then
parsed by polars a block at a time, each column's values gathered with what the importer's
checks need to know of them (`ColumnScan`).

The first pass (`survey`) reads the raw bytes once, in blocks: which encoding the text is in
(UTF-8, a byte-order mark dropped; UTF-16 with its byte-order mark; else Windows-1252),
whether it is blank, holds NUL bytes or any line feed (without one, lines end with a carriage
return alone), and the file's SHA-256. The second pass (`frames`) reads it again, as UTF-8,
cut after whole records (a line feed outside quotes), and parses each block as a frame of
strings under the header as the first block had it: the same frame, row for row, as the whole
file parsed at once. The file's digest is taken again on the way; a file that changed between
the passes is refused. Memory: one block of text and its frame at a time, plus each numeric
column's values (8 bytes a row) until they are checked and written.
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from ..errors import BadInput
from ..files import _size

#: Bytes read at a time. Tests make it small, to cut files into many blocks.
BLOCK = 8 * 2**20


def shown(text: str, limit: int = 40) -> str:
    """Text from the file as a message quotes it: at most ``limit`` characters, control and
    other non-printing characters escaped (a message stays one line)."""
    t = text if len(text) <= limit else text[:limit] + "…"
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in t)


def first_line(text: str) -> str:
    """The first line that is not blank (the header), found without splitting the whole."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end].strip():
            return text[start:end]
        start = end + 1
    return ""


def _raw(p: Path, f: BinaryIO, limit: int) -> Iterator[bytes]:
    """The file's bytes from its start, `BLOCK` at a time; at most ``limit`` of them."""
    f.seek(0)
    got = 0
    size = max(BLOCK, 4)  # the first block holds any byte-order mark whole
    while True:
        try:
            b = f.read(min(size, limit + 1 - got))
        except OSError as e:
            raise BadInput(f"{p}: cannot read: {e.strerror or e}") from None
        if not b:
            return
        got += len(b)
        if got > limit:
            raise BadInput(f"{p}: grew beyond {_size(limit)} while being read")
        yield b


def _encoding(first: bytes) -> str:
    return "utf-16" if first[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"


class Text:
    """What the first pass found (`survey`)."""

    def __init__(self, encoding: str, blank: bool, nul: bool, lf: bool, sha256: str) -> None:
        self.encoding, self.blank, self.nul, self.lf, self.sha256 = (
            encoding,
            blank,
            nul,
            lf,
            sha256,
        )


def _decode_pass(p: Path, f: BinaryIO, limit: int, encoding: str | None) -> Text:
    """One pass over the file decoding it (``encoding`` None: by its byte-order mark);
    UnicodeDecodeError when it is not that text."""
    h = hashlib.sha256()
    dec = None
    blank, nul, lf = True, False, False
    for raw in _raw(p, f, limit):
        h.update(raw)
        if dec is None:
            encoding = encoding or _encoding(raw)
            dec = codecs.getincrementaldecoder(encoding)()
        text = dec.decode(raw)
        blank = blank and not text.strip()
        nul = nul or "\x00" in text
        lf = lf or "\n" in text
    if dec is not None:
        tail = dec.decode(b"", final=True)
        blank, nul = blank and not tail.strip(), nul or "\x00" in tail
    return Text(encoding or "utf-8-sig", blank, nul, lf, h.hexdigest())


def survey(p: Path, f: BinaryIO, limit: int) -> Text:
    """The first pass (module docs); one line for a file that is no text."""
    try:
        return _decode_pass(p, f, limit, None)
    except UnicodeDecodeError as e:
        if e.encoding.replace("_", "-").startswith("utf-16"):
            raise BadInput(f"{p}: not a text file (damaged UTF-16; CSV expected)") from None
    try:
        return _decode_pass(p, f, limit, "cp1252")
    except UnicodeDecodeError:
        raise BadInput(f"{p}: not a text file (CSV expected)") from None


def _utf8(p: Path, f: BinaryIO, limit: int, text: Text, digest: hashlib._Hash) -> Iterator[bytes]:
    """The second pass: the file's text as UTF-8, a block at a time (lines ended by a carriage
    return alone ended by a line feed)."""
    dec = None if text.encoding == "utf-8-sig" else codecs.getincrementaldecoder(text.encoding)()
    start = True
    for raw in _raw(p, f, limit):
        digest.update(raw)
        if dec is not None:
            try:
                out = dec.decode(raw).encode("utf-8")
            except UnicodeError:
                raise BadInput(f"{p}: the file changed while it was read") from None
        else:
            out = raw[3:] if start and raw.startswith(codecs.BOM_UTF8) else raw
        start = False
        yield out if text.lf else out.replace(b"\r", b"\n")


def _cut(buf: bytes) -> int:
    """Where the last whole record of ``buf`` ends (after a line feed outside quotes, counting
    from a record's start), or 0."""
    if b'"' not in buf:
        return buf.rfind(b"\n") + 1
    a = np.frombuffer(buf, dtype=np.uint8)
    inside = np.bitwise_xor.accumulate((a == ord('"')).view(np.uint8))
    ends = np.flatnonzero((a == ord("\n")) & (inside == 0))
    return int(ends[-1]) + 1 if ends.size else 0


def _records(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The text in blocks of whole records; the first block holds the first line that is not
    blank (the header), whole."""
    pending: list[bytes] = []
    first = True
    for chunk in chunks:
        pending.append(chunk)
        buf = b"".join(pending) if len(pending) > 1 else chunk
        k = _cut(buf)
        if k == 0 or (first and not first_line(buf[:k].decode("utf-8", "replace")).strip()):
            pending = [buf]
            continue
        first = False
        yield buf[:k]
        pending = [buf[k:]] if k < len(buf) else []
    rest = b"".join(pending)
    if rest or first:
        yield rest


def parse(p: Path, data: bytes, delim: str) -> pl.DataFrame:
    """A block of CSV text (with its header) as a frame of strings; one line when polars
    cannot read it."""
    from polars.exceptions import PanicException

    try:
        return pl.read_csv(
            data,
            separator=delim,
            infer_schema=False,
            truncate_ragged_lines=False,
            raise_if_empty=True,
        )
    except (pl.exceptions.PolarsError, ValueError, OSError, PanicException) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"{p}: not a readable CSV file ({shown(msg, 80)})") from None


def _header_line(columns: list[str], delim: str) -> bytes | None:
    """A header line that polars reads as ``columns`` (quoted where it must be), or None when
    there is none: the file is then read as one block."""
    line = pl.DataFrame(schema={c: pl.String for c in columns}).write_csv(separator=delim)
    data = b"\n" + line.encode("utf-8")
    try:
        back = pl.read_csv(data, separator=delim, infer_schema=False).columns
    except Exception:  # noqa: BLE001 (any failure: read as one block)
        return None
    return data if back == columns and len(set(columns)) == len(columns) else None


class Frames:
    """The second pass (module docs): `blocks()` yields each block's frame and the index of
    its first row; `header` is the first line that is not blank, `delimiter` the one it
    uses. `finish()` refuses a file that changed since `survey`."""

    def __init__(self, p: Path, f: BinaryIO, limit: int, text: Text, sniff) -> None:  # noqa: ANN001
        self.p, self.text = p, text
        self.digest = hashlib.sha256()
        self._records = _records(_utf8(p, f, limit, text, self.digest))
        self._first = next(self._records)
        self.header = first_line(self._first.decode("utf-8", "replace")).rstrip("\r")
        self.delimiter: str = sniff(self.header)
        self.rows = 0

    def blocks(self) -> Iterator[tuple[pl.DataFrame, int]]:
        first, self._first = self._first, b""
        df = parse(self.p, b"\n" + first, self.delimiter)
        columns = [str(c) for c in df.columns]
        head = _header_line(columns, self.delimiter)
        if head is None:  # the header cannot be written again: the file is one block
            rest = b"".join(self._records)
            if rest:
                df = parse(self.p, b"\n" + first + rest, self.delimiter)
            yield df, 0
            self.rows = df.height
            return
        del first
        for block in self._records:
            yield df, self.rows
            self.rows += df.height
            df = parse(self.p, head + block, self.delimiter)
            if [str(c) for c in df.columns] != columns:
                raise BadInput(f"{self.p}: not a readable CSV file (its header changed)")
        yield df, self.rows
        self.rows += df.height

    def finish(self) -> None:
        if self.digest.hexdigest() != self.text.sha256:
            raise BadInput(f"{self.p}: the file changed while it was read")


class ColumnScan:
    """One column of the file, gathered block by block (`add`): what the importer's checks
    need to know of all of it, and its values (float64, a missing one as 0) while they may
    still be kept, in the blocks they came in.

    A value is parsed as a number as the whole column would be (text stripped; with a ``;``
    or tab delimiter a decimal comma too, where that reads more values): `bad` counts the
    values that are no number ([0]: read with a decimal point, [1]: with a decimal comma
    where the point failed), `first_bad` the first of each (row, text)."""

    def __init__(self, comma: bool) -> None:
        self.comma = comma
        self.rows = 0
        self.bad = [0, 0]
        self.first_bad: list[tuple[int, str] | None] = [None, None]
        self.numeric = 0  # values read as numbers with a decimal point
        self.nulls = 0
        self.first_null: int | None = None
        self.nonfinite = 0
        self.first_nonfinite: tuple[int, float, str] | None = None
        self.chunks: list[np.ndarray] | None = []

    @property
    def parse(self) -> int:
        """Which reading the column takes: 1 (decimal comma) where it reads more values."""
        return 1 if self.comma and self.bad[0] and self.bad[1] < self.bad[0] else 0

    def add(self, s: pl.Series, offset: int) -> None:
        if len(s) == 0:  # a block of the header alone, or of nothing
            return
        st = s.cast(pl.String).str.strip_chars()
        present = st.is_not_null() & (st != "")
        f = st.cast(pl.Float64, strict=False)
        self.numeric += int(f.is_not_null().sum())
        self.rows += len(s)
        for k in (0, 1):
            bad = f.is_null() & present
            nb = int(bad.sum())
            if nb and self.first_bad[k] is None:
                i = int(bad.arg_max() or 0)
                self.first_bad[k] = (offset + i, str(st[i]))
            self.bad[k] += nb
            if not (nb and self.comma) or k == 1:
                break
            f = st.str.replace(",", ".", literal=True).cast(pl.Float64, strict=False)
        if self.bad[1 if self.comma else 0]:  # no number in places, whichever way it is read
            self.chunks = None
        if self.chunks is None:
            return
        nulls = f.is_null()
        k = int(nulls.sum())
        if k and self.first_null is None:
            self.first_null = offset + int(nulls.arg_max() or 0)
        self.nulls += k
        # numpy's own copy: polars' buffers go back to its allocator with the block
        v = np.array(f.fill_null(0.0).to_numpy(), dtype=np.float64, copy=True)
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.argmax(bad))
            if self.first_nonfinite is None:
                self.first_nonfinite = (offset + i, float(v[i]), str(s[i]).strip())
            self.nonfinite += int(bad.sum())
        self.chunks.append(v)

    def _parts(self) -> Iterator[tuple[int, np.ndarray]]:
        offset = 0
        for c in self.chunks or []:
            yield offset, c
            offset += c.size

    def first(self) -> float:
        return float(self.chunks[0][0]) if self.chunks else 0.0

    def counts_up(self) -> bool:
        """Whether the column counts 0, 1, 2, ... or 1, 2, 3, ... (an index)."""
        if self.rows < 2 or self.nulls or self.nonfinite or self.first() not in (0.0, 1.0):
            return False
        last = None
        for _, v in self._parts():
            if not np.all(v == np.round(v)) or not np.all(np.diff(v) == 1.0):
                return False
            if last is not None and v[0] - last != 1.0:
                return False
            last = v[-1]
        return True

    def first_negative(self) -> tuple[int, float] | None:
        for o, v in self._parts():
            neg = v < 0
            if neg.any():
                i = int(np.argmax(neg))
                return o + i, float(v[i])
        return None

    def first_backwards(self) -> int | None:
        """The first row whose value is below the one before it."""
        last = None
        for o, v in self._parts():
            if last is not None and v[0] - last < 0:
                return o
            back = np.diff(v) < 0
            if back.any():
                return o + int(np.argmax(back)) + 1
            last = v[-1]
        return None

    def max_abs(self, scale: float, start: float) -> float:
        """The largest magnitude of ``value * scale - start``."""
        return max(
            (float(np.max(np.abs(v * scale - start))) for _, v in self._parts() if v.size),
            default=0.0,
        )

    def ticks(self, scale: float, start: float) -> np.ndarray:
        """``value * scale - start`` rounded to int64, the blocks freed on the way."""
        out = np.empty(self.rows, dtype=np.int64)
        chunks, self.chunks = self.chunks or [], None
        offset = 0
        while chunks:
            v = chunks.pop(0)
            out[offset : offset + v.size] = np.rint(v * scale - start)
            offset += v.size
        return out
