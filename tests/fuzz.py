"""Fuzz targets for the two readers of files users hand to latscope: the sample-file loader
(`samples.load`, with `samples.check`) and the CSV importer (`importer.read_csv`). Used by
tests/test_fuzz.py (briefly, derandomized) and bench/fuzz.py (for minutes).

The property of both: for any input the reader returns a valid result or raises the
project's error (`LatscopeError`) with a one-line message; never another exception, and
never more than `TIME_BOUND` seconds on one input.

Inputs for the loader: valid files (the probe's, the Python writer's, version 1 and 2)
mutated at the byte level (bit flips, byte changes, insertions, deletions, truncations,
splices of two files), with their checksum recomputed half of the time so the checks behind
it are reached; their header edited at the JSON level (a value anywhere replaced by any JSON
value or an awkward one, a key removed or added, the DATA line's counts changed), resealed;
and files whose header is generated whole. Inputs for the importer: generated CSVs (headers
with and without units, numbers written every way, NaN and infinities, negative and enormous
values, empty fields, ragged rows, quotes, four delimiters, three line endings, a byte-order
mark, four encodings) and byte-level mutations of them, with and without --unit and
--time-column.
"""

from __future__ import annotations

import json
import random
import re
import signal
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from latscope import samples
from latscope.errors import LatscopeError
from latscope.measure import importer

#: Seconds one input may take before it counts as a hang.
TIME_BOUND = 10.0


class Hang(Exception):
    """An input took longer than `TIME_BOUND` (a failure, as any exception but the project's)."""


@contextmanager
def time_bound(seconds: float = TIME_BOUND) -> Iterator[None]:
    """Raise `Hang` in the block when it runs longer than ``seconds`` (SIGALRM)."""

    def expired(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _one_line(e: LatscopeError) -> None:
    assert e.message and len(e.message.splitlines()) == 1, repr(e.message)


# ---------------------------------------------------------------------------- the targets


def load_target(path: Path) -> str:
    """The loader's property on one file: "ok" (a valid result) or "refused" (one line)."""
    with time_bound():
        why = samples.check(path)
        assert why is None or (isinstance(why, str) and len(why.splitlines()) == 1), why
        try:
            sf = samples.load(path)
        except LatscopeError as e:
            _one_line(e)
            return "refused"
        assert why is None, f"check says {why!r} of a file load reads"
        n = sf.header["n"]
        assert sf.duration_columns and list(sf.ticks)[0] == "t_start"
        for name, t in sf.ticks.items():
            assert t.shape == (n,) and t.dtype.kind == "i"
            assert np.all(np.isfinite(sf.ns(name)))
        return "ok"


def views_target(path: Path) -> str:
    """The views' property on one file the loader accepts: its facts built, the brief view at
    80 columns, the CSV export and a histogram drawn, or the project's error in one line;
    "skipped" for a file the loader refuses (load_target's business)."""
    import io

    from rich.console import Console

    from latscope import plots
    from latscope.record import Run
    from latscope.report.text import print_run

    with time_bound():
        try:
            samples.load(path)
        except LatscopeError:
            return "skipped"
        try:
            run = Run(path)
            assert run.facts["n"] == run.n
            print_run(Console(file=io.StringIO(), width=80, color_system=None), run)
            run.samples.write_csv(io.StringIO())
            col = run.columns[0]
            plots.to_bytes(plots.histogram(run.values(col), step=run.column_step_ns(col)))
        except LatscopeError as e:
            _one_line(e)
            return "refused"
        return "ok"


def csv_target(path: Path, unit: str | None, time_column: str | None, out: Path) -> str:
    """The importer's property on one CSV: refused in one line, or read into columns that
    the Python writer turns into a sample file the loader reads back, value for value."""
    with time_bound():
        try:
            parsed = importer.read_csv(path, unit=unit, time_column=time_column)
        except LatscopeError as e:
            _one_line(e)
            return "refused"
        assert parsed.columns and parsed.rows > 0
        header = importer.header_for(parsed, "fuzz")
        data = {"t_start": parsed.times.ticks if parsed.times else np.zeros(parsed.rows, "i8")}
        data |= {c.name: c.ticks for c in parsed.columns}
        out.unlink(missing_ok=True)
        samples.write(out, header, data)
        back = samples.load(out)
        for name, t in data.items():
            np.testing.assert_array_equal(back.ticks[name], t)
        return "ok"


# ---------------------------------------------------------------------------- sample files

_LINES = re.compile(rb"LATSCOPE-SAMPLES (\d+)\n([^\n]*)\nDATA (\d+) (\d+)\n")


def seal(version: int, header: bytes, ncols: int, nrows: int, data: bytes) -> bytes:
    """A sample file around these parts, its END line and CRC as a writer makes them."""
    head = b"LATSCOPE-SAMPLES %d\n%s\nDATA %d %d\n" % (version, header, ncols, nrows)
    crc = zlib.crc32(head + data if version >= 2 else data) & 0xFFFFFFFF
    return head + data + b"\nEND %d %08x\n" % (nrows, crc)


def reseal(raw: bytes) -> bytes:
    """``raw`` with its END line's CRC recomputed (where its first lines can be found), so a
    change reaches the checks behind the checksum."""
    m = _LINES.match(raw)
    if m is None or len(m.group(3)) > 4 or len(m.group(4)) > 7:
        return raw
    version, ncols, nrows = int(m.group(1)), int(m.group(3)), int(m.group(4))
    end = m.end() + ncols * nrows * 8
    if end > len(raw):
        return raw
    crc = zlib.crc32(raw[:end] if version >= 2 else raw[m.end() : end]) & 0xFFFFFFFF
    return raw[:end] + b"\nEND %d %08x\n" % (nrows, crc)


def base_header(names: list[str], nrows: int, version: int = samples.FORMAT_VERSION) -> dict:
    """A header as the Python writer writes it, for columns t_start + ``names``."""
    return {
        "format": "latscope-samples",
        "format_version": version,
        "benchmark": "fuzz",
        "params": {"size": 8, "mode": "threads", "on": True, "x": None},
        "n": nrows,
        "warmup": 3,
        "workers": [{"n": nrows, "warmup": 3, "pid": 7, "timed_rusage": {"main": {"nvcsw": 1}}}],
        "clock": {"name": "mono_raw", "ns_per_tick": 1.0, "overhead_ns": 20.0, "step_ns": 1.0},
        "columns": [{"name": "t_start", "unit": "ticks", "kind": "time"}]
        + [{"name": c, "unit": "ticks", "kind": "duration", "latency": "call"} for c in names],
        "bench": {"batch": 1},
        "env": {"schema": 2, "hostname": "h"},
        "argv": ["latscope-probe", "fuzz"],
        "byte_order": "little",
    }


def written(header: dict, ticks: np.ndarray, version: int = samples.FORMAT_VERSION) -> bytes:
    """The bytes of a file of this header and these ticks (columns × rows), laid out as
    `samples.write` lays them out, in any version."""
    hb = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    ncols, nrows = ticks.shape
    return seal(version, hb, ncols, nrows, ticks.astype("<i8").tobytes())


def python_seeds() -> list[bytes]:
    """Valid files of the Python writer (`samples.write`, version 2), and the same parts as
    version 1 files were written."""
    rng = np.random.default_rng(1)
    out = []
    with tempfile.TemporaryDirectory() as d:
        for names, nrows in ((["a"], 5), (["rtt", "oneway"], 40), (["call"], 1)):
            ticks = rng.integers(0, 10**6, size=(len(names) + 1, nrows))
            header = base_header(names, nrows)
            f = Path(d) / f"{len(out)}.lss"
            samples.write(f, header, dict(zip(["t_start", *names], ticks, strict=True)))
            out.append(f.read_bytes())
            out.append(written(base_header(names, nrows, 1), ticks, 1))
    return out


def _position(rng: random.Random, size: int) -> int:
    """A byte position: anywhere, in the first lines, or in the END line."""
    if size == 0:
        return 0
    where = rng.choice(["any", "head", "tail"])
    if where == "head":
        return rng.randint(0, min(size - 1, 1500))
    if where == "tail":
        return rng.randint(max(0, size - 40), size - 1)
    return rng.randint(0, size - 1)


def mutate(rng: random.Random, raw: bytes, seeds: list[bytes], ops: int) -> bytes:
    """``raw`` with ``ops`` byte-level changes: a bit flipped, a byte set, bytes inserted or
    deleted, the file cut, or its tail replaced by another file's."""
    b = bytearray(raw)
    for _ in range(ops):
        op = rng.choice(["flip", "set", "insert", "delete", "truncate", "splice"])
        i = _position(rng, len(b))
        if op == "flip" and b:
            b[i] ^= 1 << rng.randrange(8)
        elif op == "set" and b:
            b[i] = rng.choice([0, 0x0A, 0x0D, 0x20, 0x22, 0x2C, 0x7B, 0x7D, 0xFF, 0x30, 0x39])
        elif op == "insert":
            b[i:i] = rng.randbytes(rng.randint(1, 16))
        elif op == "delete":
            del b[i : i + rng.randint(1, 16)]
        elif op == "truncate":
            del b[i:]
        elif op == "splice" and seeds:
            other = rng.choice(seeds)
            b = b[:i] + other[rng.randint(0, max(0, len(other) - 1)) :]
    return bytes(b)


@st.composite
def byte_mutated(draw: Callable[..., Any], seeds: list[bytes]) -> bytes:
    """A seed with one to four byte-level changes; resealed half of the time."""
    raw = draw(st.sampled_from(seeds))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    out = mutate(rng, raw, seeds, draw(st.integers(1, 4)))
    return reseal(out) if draw(st.booleans()) else out


_AWKWARD = [
    0, -1, 1, -0.0, 1e-300, 1e308, float("nan"), float("inf"), -float("inf"), 2**63, 2**64,
    -(2**63) - 1, 10**30, True, False, None, "", "x" * 70, "a\x00b", "t_start", "duration",
    "time", [], {}, "[bold]", "[/x]", "\u2028", "é", "\ud800", [1, [2, [3]]], {"a": {"b": {}}},
    "call", "little", "big", "latscope-samples", 0.5, 1e-6, 1e9, "\r", "a b",
]  # fmt: skip


def rand_json(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value (and NaN, infinities and lone surrogates, which JSON has no room for)."""
    k = rng.randrange(10 if depth < 4 else 7)
    if k == 0:
        return rng.choice(_AWKWARD)
    if k == 1:
        return rng.randint(-(2**70), 2**70) if rng.random() < 0.2 else rng.randint(-9, 2000)
    if k == 2:
        return rng.choice([rng.uniform(-1e6, 1e6), rng.random(), 10 ** rng.uniform(-320, 308)])
    if k == 3:
        return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x10FFFF)]))
                       for _ in range(rng.randint(0, 10)))  # fmt: skip
    if k in (4, 5):
        return rng.choice([None, True, False, "", "x"])
    if k == 6:
        return rng.choice(_AWKWARD)
    if k in (7, 8):
        return {rand_key(rng): rand_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [rand_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def rand_key(rng: random.Random) -> str:
    keys = ["n", "name", "kind", "clock", "columns", "ns_per_tick", "workers", "params", "x"]
    return rng.choice(keys) if rng.random() < 0.5 else str(rand_json(rng, 9))[:10]


def edit(rng: random.Random, node: Any, depth: int = 0) -> Any:
    """``node`` with one change somewhere inside: a value replaced, a key removed or added."""
    if isinstance(node, dict) and node and depth < 5 and rng.randrange(3):
        key = rng.choice(sorted(node))
        op = rng.choice(["descend", "descend", "replace", "remove", "add"])
        out = dict(node)
        if op == "descend":
            out[key] = edit(rng, node[key], depth + 1)
        elif op == "replace":
            out[key] = rand_json(rng)
        elif op == "remove":
            del out[key]
        else:
            out[rand_key(rng)] = rand_json(rng)
        return out
    if isinstance(node, list) and node and depth < 5 and rng.randrange(2):
        i = rng.randrange(len(node))
        out_list = list(node)
        out_list[i] = edit(rng, node[i], depth + 1)
        return out_list
    return rand_json(rng)


def _header_bytes(rng: random.Random, header: Any) -> bytes:
    """The header's JSON as a writer might put it, or with a number of many digits."""
    text = json.dumps(header, ensure_ascii=rng.random() < 0.5, separators=(",", ":"))
    hb = text.encode("utf-8", "surrogatepass")
    if rng.randrange(10) == 0:
        hb = hb.replace(b"1", b"1" * rng.randint(2, 5000), 1)
    return hb


@st.composite
def header_edited(draw: Callable[..., Any], seeds: list[bytes]) -> bytes:
    """A seed whose header had one to three JSON-level changes (or its DATA line's counts
    changed), resealed; one in ten then changed at the byte level too."""
    raw = draw(st.sampled_from(seeds))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    m = _LINES.match(raw)
    assert m is not None
    version, ncols, nrows = int(m.group(1)), int(m.group(3)), int(m.group(4))
    header = json.loads(m.group(2))
    for _ in range(draw(st.integers(1, 3))):
        header = edit(rng, header)
    data = raw[m.end() : m.end() + ncols * nrows * 8]
    if rng.randrange(5) == 0:
        ncols = rng.choice([0, 1, ncols + 1, 65, 10**6])
    if rng.randrange(5) == 0:
        nrows = rng.choice([0, max(0, nrows - 1), nrows + 1, 10**9, 10**19])
    out = seal(version, _header_bytes(rng, header), ncols, nrows, data)
    return mutate(rng, out, seeds, 1) if rng.randrange(10) == 0 else out


_COLUMN_NAMES = ["a", "rtt", "call", "t_start", "x^2", "é", "a b", "[x]", "", "rtt/2", "µ"]


@st.composite
def generated_file(draw: Callable[..., Any]) -> bytes:
    """A file whose header is generated: the writer's header with awkward columns and
    numbers, or any JSON value at all; sealed with a correct CRC."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    nrows = draw(st.integers(0, 20))
    names = [
        rng.choice(_COLUMN_NAMES) if rng.random() < 0.7 else str(rand_json(rng, 9))[:70]
        for _ in range(draw(st.integers(0, 4)))
    ]
    header: Any = base_header(names, nrows)
    header["clock"]["ns_per_tick"] = rng.choice(
        [1.0, 0.4, 0.001, 0, -1.0, 1e-7, 1e9, 1e10, float("nan"), rand_json(rng)]
    )
    if rng.randrange(4) == 0:
        header = rand_json(rng)
    ticks = np.random.default_rng(rng.getrandbits(32)).integers(
        -(2**63), 2**63 - 1, size=(len(names) + 1, nrows), dtype=np.int64
    )
    version = rng.choice(samples.SUPPORTED_VERSIONS)
    hb = _header_bytes(rng, header)
    return seal(version, hb, len(names) + 1, nrows, ticks.astype("<i8").tobytes())


def sample_inputs(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    """Every kind of input for the loader (module docs)."""
    return st.one_of(
        byte_mutated(seeds), header_edited(seeds), generated_file(), st.binary(max_size=200)
    )


# ---------------------------------------------------------------------------- CSV files

_NAMES = [
    "open_us", "write_us", "read (ns)", "close [ms]", "t_s", "time_ns", "iteration", "idx",
    "Open", "x^2_us", "t_start", "rtt/2_ns", "a_parsec", "lat_µs", "lat_μs", "", " ", "a,b",
    '"q"_us', "label", "n", "t (s)", "open_us", "\x00_us", "é_ms", "[/x]_ns",
]  # fmt: skip
_GOOD_NAMES = [
    "open_us", "write_us", "read (ns)", "close [ms]", "t_s", "iteration", "rtt_ns", "x^2_us",
    "Open (µs)", "lat_µs", "é_ms", "[/x]_ns", "a b_us", "t_start_ns",
]  # fmt: skip
_CELLS = [
    "0", "1", "12", "12.5", "1e3", "1E-3", " 7 ", "1,5", "-1", "-0", "+3", ".5", "5.", "nan",
    "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "9" * 30, "9" * 400, "0x10", "1_000",
    "", "abc", "N/A", '"4"', '"1,5"', '"a\nb"', "true", "1e-400", "3.4028236e38",
]  # fmt: skip


def _cell(rng: random.Random) -> str:
    k = rng.randrange(8)
    if k < 3:
        return str(rng.randint(0, 10**6))
    if k < 5:
        return f"{rng.uniform(0, 1e6):.{rng.randint(0, 6)}f}"
    if k < 7:
        return rng.choice(_CELLS)
    return "".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(0, 6)))


def make_csv(rng: random.Random, ncols: int, nrows: int) -> bytes:
    """A CSV: a header, rows of cells (every way of writing a number, and not), a
    delimiter, a line ending, an encoding; a row ragged some of the time."""
    names = [
        rng.choice(_NAMES) if rng.random() < 0.8 else "".join(
            chr(rng.randint(1, 0x3FF)) for _ in range(rng.randint(0, 10))
        )
        for _ in range(ncols)
    ]  # fmt: skip
    clean = rng.random() < 0.5  # numbers only under headers with units: often a file that imports
    if clean:
        names = rng.sample(_GOOD_NAMES, ncols)
    rows = [
        [str(rng.randint(0, 10**6)) if clean else _cell(rng) for _ in range(ncols)]
        for _ in range(nrows)
    ]
    if rows and rng.randrange(5) == 0:
        i = rng.randrange(len(rows))
        rows[i] = rows[i][: rng.randint(0, ncols)] + [_cell(rng) for _ in range(rng.randint(0, 2))]
    delim = rng.choice([",", ";", "\t", "|"])
    eol = rng.choice(["\n", "\n", "\r\n", "\r"])
    text = eol.join(delim.join(r) for r in [names, *rows]) + rng.choice([eol, ""])
    enc = rng.choice(["utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "cp1252"])
    return text.encode(enc, "replace" if enc == "cp1252" else "surrogatepass")


@st.composite
def generated_csv(draw: Callable[..., Any]) -> bytes:
    """A generated CSV (`make_csv`), changed at the byte level one time in four."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    raw = make_csv(rng, draw(st.integers(1, 5)), draw(st.integers(0, 12)))
    return mutate(rng, raw, [], rng.randint(1, 3)) if rng.randrange(4) == 0 else raw


def csv_inputs() -> st.SearchStrategy[tuple[bytes, str | None, str | None]]:
    """A CSV's bytes, --unit and --time-column."""
    unit = st.sampled_from([None, None, "us", "ns", "s", "parsec"])
    time_column = st.sampled_from([None, None, None, "t", "t_s", "time_ns", "nope"])
    data = st.one_of(generated_csv(), generated_csv(), generated_csv(), st.binary(max_size=64))
    return st.tuples(data, unit, time_column)
