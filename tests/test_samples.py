"""The sample-file loader: complete files load; truncated, altered, malformed or foreign ones
are refused in one line (MALFORMED: each kind through `latscope show FILE`); version 1 files
are still read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fuzz
from conftest import run_probe
from latscope import samples


@pytest.fixture(scope="module")
def good(probe: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("s") / "p.lss"
    r = run_probe(probe, "pipe", "-n", "200", "-p", "mode=threads", "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_roundtrip(good: Path) -> None:
    sf = samples.load(good)
    assert sf.header["format"] == "latscope-samples"
    assert list(sf.ticks) == ["t_start", "rtt", "oneway"]
    ns = sf.ns("rtt")
    assert ns.dtype == np.float64
    np.testing.assert_allclose(ns, sf.ticks["rtt"] * sf.ns_per_tick)


def test_columns_are_read_into_arrays_of_their_own(good: Path, tmp_path: Path) -> None:
    """Each column in memory of its own (a column kept alone keeps no other); a column of
    zeros (an import's t_start without times) reads as zeros; a big-endian file reads as the
    same values."""
    header, data = parts(good.read_bytes())
    cols = np.frombuffer(data, dtype="<i8").reshape(3, 200).copy()
    cols[0] = 0
    little = tmp_path / "zeros.lss"
    little.write_bytes(sealed(header, cols.tobytes(), 3, 200))
    big = tmp_path / "big.lss"
    big.write_bytes(sealed({**header, "byte_order": "big"}, cols.astype(">i8").tobytes(), 3, 200))
    for p in (little, big):
        sf = samples.load(p)
        assert [sf.ticks[c].tolist() for c in ("t_start", "rtt", "oneway")] == cols.tolist()
        assert not np.shares_memory(sf.ticks["rtt"], sf.ticks["oneway"])
        assert sf.ns("t_start").tolist() == [0.0] * 200


@pytest.mark.parametrize("cut", [10, 200, -30, -1])
def test_truncated(good: Path, tmp_path: Path, cut: int) -> None:
    raw = good.read_bytes()
    p = tmp_path / "cut.lss"
    p.write_bytes(raw[:cut] if cut > 0 else raw[: len(raw) + cut])
    with pytest.raises(samples.SampleFormatError):
        samples.load(p)


def test_altered_sample_is_detected(good: Path, tmp_path: Path) -> None:
    raw = bytearray(good.read_bytes())
    start = raw.find(b"\nDATA ") + 1
    start = raw.find(b"\n", start) + 1
    raw[start + 100] ^= 0xFF
    p = tmp_path / "flip.lss"
    p.write_bytes(bytes(raw))
    with pytest.raises(samples.SampleFormatError, match="checksum"):
        samples.load(p)


def test_foreign_and_future(tmp_path: Path) -> None:
    p = tmp_path / "f.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(samples.SampleFormatError, match="not a latscope sample file"):
        samples.load(p)
    q = tmp_path / "v9.lss"
    q.write_bytes(b"LATSCOPE-SAMPLES 9\n{}\n")
    with pytest.raises(samples.SampleFormatError, match="version 9"):
        samples.load(q)
    with pytest.raises(Exception, match="no such file"):
        samples.load(tmp_path / "missing.lss")


# ---------------------------------------------------------------------------- version 2


def parts(raw: bytes) -> tuple[dict, bytes]:
    """The header and the sample bytes of a file."""
    m = fuzz._LINES.match(raw)
    assert m is not None
    ncols, nrows = int(m.group(3)), int(m.group(4))
    return json.loads(m.group(2)), raw[m.end() : m.end() + ncols * nrows * 8]


def sealed(header: dict | bytes, data: bytes, ncols: int, nrows: int, version: int = 2) -> bytes:
    """A file of these parts, its CRC right (fuzz.seal), the header given as JSON or bytes."""
    hb = header if isinstance(header, bytes) else json.dumps(header).encode()
    return fuzz.seal(version, hb, ncols, nrows, data)


def as_version_1(raw: bytes) -> bytes:
    """A version 2 file as version 1 wrote it: the same parts, the CRC of the samples only."""
    header, data = parts(raw)
    header["format_version"] = 1
    return sealed(header, data, len(header["columns"]), header["n"], version=1)


def flip_in_ns_per_tick(raw: bytes) -> bytes:
    """One bit flipped in the header's ns_per_tick: a digit that stays a digit."""
    i = raw.index(b'"ns_per_tick":') + len(b'"ns_per_tick":')
    while not (raw[i : i + 1].isdigit() and raw[i] ^ 0x04 in range(0x30, 0x3A)):
        i += 1
    return raw[:i] + bytes([raw[i] ^ 0x04]) + raw[i + 1 :]


def test_the_probe_writes_version_2_whose_crc_covers_the_header(good: Path) -> None:
    raw = good.read_bytes()
    assert raw.startswith(b"LATSCOPE-SAMPLES 2\n")
    sf = samples.load(good)
    assert sf.version == 2 and sf.header_checksummed and sf.header["format_version"] == 2
    end = raw.rindex(b"\nEND ")
    assert raw[end:].split()[2].decode() == f"{zlib.crc32(raw[:end]):08x}"


def test_a_flipped_bit_in_ns_per_tick_is_refused(good: Path, tmp_path: Path) -> None:
    """The issue's case: one bit in ns_per_tick changed every figure without a warning."""
    p = tmp_path / "flip.lss"
    p.write_bytes(flip_in_ns_per_tick(good.read_bytes()))
    with pytest.raises(samples.SampleFormatError, match="checksum mismatch: the header"):
        samples.load(p)


def test_version_1_files_are_still_read(good: Path, tmp_path: Path) -> None:
    """Version 1 (kept by earlier versions): the samples' CRC is checked, and the header
    against the schema, which refuses an impossible value but cannot see a plausible one."""
    v1 = as_version_1(good.read_bytes())
    p = tmp_path / "v1.lss"
    p.write_bytes(v1)
    sf = samples.load(p)
    assert sf.version == 1 and not sf.header_checksummed
    np.testing.assert_array_equal(sf.ticks["rtt"], samples.load(good).ticks["rtt"])
    p.write_bytes(flip_in_ns_per_tick(v1))  # not covered in version 1: read, figures wrong
    assert samples.load(p).ns_per_tick != sf.ns_per_tick
    header, data = parts(v1)
    header["clock"]["ns_per_tick"] = 0
    p.write_bytes(sealed(header, data, 3, header["n"], version=1))
    with pytest.raises(samples.SampleFormatError, match="ns_per_tick"):
        samples.load(p)
    data_flip = bytearray(v1)
    data_flip[v1.index(b"\nDATA ") + 20] ^= 1
    p.write_bytes(bytes(data_flip))
    with pytest.raises(samples.SampleFormatError, match="checksum mismatch: the samples"):
        samples.load(p)


def test_show_says_a_version_1_header_is_not_checksummed(cli, good: Path, tmp_path: Path) -> None:
    p = tmp_path / "v1.lss"
    p.write_bytes(as_version_1(good.read_bytes()))
    r = cli("show", str(p))
    assert r.returncode == 0, r.stderr
    assert "sample file format 1: its checksum covers the samples, not its header" in r.stdout
    r = cli("show", str(good))
    assert r.returncode == 0 and "sample file format 1" not in r.stdout


def test_a_version_1_header_of_raw_path_bytes_is_read(good: Path, tmp_path: Path) -> None:
    """Probes before version 2 wrote a path's bytes as they were: read as U+FFFD."""
    header, data = parts(good.read_bytes())
    header["format_version"] = 1
    hb = json.dumps({**header, "argv": ["x"]}).encode().replace(b'["x"]', b'["a\xffb"]')
    p = tmp_path / "raw.lss"
    p.write_bytes(sealed(hb, data, 3, header["n"], version=1))
    assert samples.load(p).header["argv"] == ["a\ufffdb"]
    p.write_bytes(sealed(hb.replace(b'"format_version":1', b'"format_version":2'), data, 3, 200))
    with pytest.raises(samples.SampleFormatError, match="not UTF-8"):
        samples.load(p)


def test_the_probe_writes_a_directory_of_any_bytes_as_utf8(probe: str, tmp_path: Path) -> None:
    d = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(d)
    out = tmp_path / "f.lss"
    r = run_probe(probe, "file", "-n", "20", "-p", b"dir=" + d, "-o", str(out))  # type: ignore[arg-type]
    assert r.returncode == 0, r.stderr
    sf = samples.load(out)
    assert sf.header["params"]["dir"].endswith("caf\ufffd")


def test_the_writer_refuses_what_the_loader_would(tmp_path: Path) -> None:
    t = np.zeros(3, dtype=np.int64)
    base = fuzz.base_header(["a"], 3)
    for change, words in (
        ({"clock": {"name": "c", "ns_per_tick": 0}}, "ns_per_tick"),
        ({"benchmark": "a b"}, "benchmark"),
        ({"params": {"x": [1]}}, "params"),
        ({"columns": base["columns"][:1] + [{"name": "a\n", "kind": "duration"}]}, "column name"),
    ):
        header = {**base, **change}
        data = {c["name"]: t for c in header["columns"]}
        with pytest.raises(ValueError, match=words):
            samples.write(tmp_path / "w.lss", header, data)
    assert list(tmp_path.iterdir()) == []


def test_check_never_blocks_and_agrees_with_load(good: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in (samples.check(fifo) or "")
    assert samples.check(good) is None
    cut = tmp_path / "cut.lss"
    cut.write_bytes(good.read_bytes()[:-5])
    assert "truncated" in (samples.check(cut) or "")
    assert samples.check(tmp_path / "nope.lss") == "nope.lss is missing"


# ---------------------------------------------------------------------------- malformed files

MIB = 1 << 20


def _edit(change: Callable[[dict], object]) -> Callable[[bytes], bytes]:
    """A file whose header was changed by ``change`` (in place), its CRC right."""

    def make(raw: bytes) -> bytes:
        header, data = parts(raw)
        change(header)
        return sealed(header, data, len(data) // 8 // 200, 200)

    return make


def _header_text(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    """A file whose header's text had ``old`` replaced by ``new``, its CRC right."""

    def make(raw: bytes) -> bytes:
        header, data = parts(raw)
        hb = json.dumps(header).encode()
        assert old in hb
        return sealed(hb.replace(old, new, 1), data, len(data) // 8 // 200, 200)

    return make


def _set(path: str, value: object) -> Callable[[bytes], bytes]:
    def change(h: dict) -> None:
        *up, last = path.split(".")
        node: Any = h
        for k in up:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[int(last) if isinstance(node, list) else last] = value

    return _edit(change)


def _drop(path: str) -> Callable[[bytes], bytes]:
    def change(h: dict) -> None:
        *up, last = path.split(".")
        node: Any = h
        for k in up:
            node = node[int(k)] if isinstance(node, list) else node[k]
        del node[last]

    return _edit(change)


def _cut(at: Callable[[bytes], int]) -> Callable[[bytes], bytes]:
    return lambda raw: raw[: at(raw)]


def _data_line(line: bytes, resealed: bool = True) -> Callable[[bytes], bytes]:
    def make(raw: bytes) -> bytes:
        m = fuzz._LINES.match(raw)
        assert m is not None
        out = raw[: m.start(3) - 5] + line + raw[m.end() - 1 :]
        return fuzz.reseal(out) if resealed else out

    return make


def _flip(at: Callable[[bytes], int]) -> Callable[[bytes], bytes]:
    def make(raw: bytes) -> bytes:
        i = at(raw)
        return raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1 :]

    return make


def _samples_start(raw: bytes) -> int:
    return raw.index(b"\n", raw.index(b"\nDATA ") + 1) + 1


def _header_start(raw: bytes) -> int:
    return raw.index(b"\n") + 1


def _deep(depth: int) -> Callable[[bytes], bytes]:
    def make(raw: bytes) -> bytes:
        header, data = parts(raw)
        hb = json.dumps(header).encode()
        hb = hb[:-1] + b',"deep":' + b"[" * depth + b"]" * depth + b"}"
        return sealed(hb, data, 3, 200)

    return make


def _no_samples(raw: bytes) -> bytes:
    header, _ = parts(raw)
    header.pop("workers")
    return sealed({**header, "n": 0}, b"", 3, 0)


#: (name, the malformed file made from a good one, words the one line holds)
MALFORMED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("empty", lambda raw: b"", "not a latscope sample file"),
    ("bad magic", lambda raw: b"LATSCOPE-SAMPLEZ" + raw[16:], "not a latscope sample file"),
    ("foreign text", lambda raw: b"time,rtt\n1,2\n", "not a latscope sample file"),
    ("future version", lambda raw: raw.replace(b"SAMPLES 2", b"SAMPLES 9", 1), "version 9"),
    ("version 0", lambda raw: raw.replace(b"SAMPLES 2", b"SAMPLES 0", 1), "version 0"),
    ("version not a number", lambda raw: raw.replace(b"SAMPLES 2", b"SAMPLES x", 1), "first line"),
    ("version +2", lambda raw: raw.replace(b"SAMPLES 2", b"SAMPLES +2", 1), "first line"),
    ("cut in the magic", _cut(lambda raw: 9), "not a latscope sample file"),
    ("cut after the magic", _cut(lambda raw: 17), "truncated in the first line"),
    ("cut after the first line", _cut(_header_start), "truncated in the header"),
    ("cut in the header", _cut(lambda raw: 300), "truncated in the header"),
    ("cut after the header", _cut(lambda raw: raw.index(b"\nDATA ") + 1), "truncated before"),
    ("cut in the DATA line", _cut(lambda raw: raw.index(b"\nDATA ") + 6), "truncated before"),
    ("cut after the DATA line", _cut(_samples_start), "truncated"),
    ("cut in the samples", _cut(lambda raw: _samples_start(raw) + 100), "truncated"),
    ("cut before END", _cut(lambda raw: raw.rindex(b"\nEND ")), "truncated"),
    ("cut in END", _cut(lambda raw: len(raw) - 5), "truncated"),
    ("last byte missing", _cut(lambda raw: len(raw) - 1), "truncated"),
    ("bytes after END", lambda raw: raw + b"junk\n", "damaged: "),
    ("END line damaged", lambda raw: raw[:-14] + b"XXXXXXXXXXXXX\n", "damaged END line"),
    ("END rows differ", lambda raw: raw.replace(b"\nEND 200 ", b"\nEND 201 "), "damaged"),
    (
        "CRC wrong",
        lambda raw: raw[:-9] + (b"0" if raw[-9:-8] != b"0" else b"1") + raw[-8:],
        "checksum mismatch",
    ),  # fmt: skip
    (
        "CRC in capitals",
        # always capitals (the file's own CRC may hold no letter at all to raise)
        lambda raw: raw[:-9] + b"ABCDEF12\n",
        "damaged END line",
    ),  # fmt: skip
    ("bit flipped in ns_per_tick", flip_in_ns_per_tick, "checksum mismatch: the header"),
    ("bit flipped in the magic line", _flip(lambda raw: 3), "not a latscope sample file"),
    ("bit flipped in the header", _flip(lambda raw: 200), "checksum mismatch"),
    ("bit flipped in the DATA line", _flip(lambda raw: raw.index(b"\nDATA ") + 2), "DATA line"),
    ("bit flipped in a sample", _flip(lambda raw: _samples_start(raw) + 999), "checksum mismatch"),
    ("DATA line damaged", _data_line(b"DATA x y"), "damaged DATA line"),
    ("DATA +3 rows", _data_line(b"DATA +3 200"), "damaged DATA line"),
    ("DATA 0 columns", _data_line(b"DATA 0 200"), "damaged DATA line"),
    (
        "DATA huge rows",
        _data_line(b"DATA 3 1000000000000000000"),
        "declares 1000000000000000000 rows",
    ),
    ("DATA huge columns", _data_line(b"DATA 100000 200"), "declares 100000 columns"),
    ("DATA more rows than the file", _data_line(b"DATA 3 100000000"), "truncated"),
    ("DATA fewer rows, resealed", _data_line(b"DATA 3 199"), "the data holds 199 rows"),
    ("DATA fewer rows than the file", _data_line(b"DATA 3 199", resealed=False), "damaged: "),
    ("header not JSON", _header_text(b'"n": 200', b'"n": 200,,'), "not JSON"),
    ("header a JSON list", lambda raw: sealed(b"[1, 2]", parts(raw)[1], 3, 200), "JSON object"),
    ("header not UTF-8", _header_text(b'"pipe"', b'"pi\xffe"'), "not UTF-8"),
    ("header with NaN", _header_text(b'"n": 200', b'"n": NaN'), "NaN"),
    ("header with 1e999", _header_text(b'"n": 200', b'"x": 1e999, "n": 200'), "not finite"),
    (
        "header with 5000 digits",
        _header_text(b'"n": 200', b'"x": 1' + b"0" * 5000 + b', "n": 200'),
        "not JSON",
    ),  # fmt: skip
    ("header with an integer beyond 64 bits", _set("bench.x", 2**64), "beyond 64 bits"),
    ("header with a lone surrogate", _set("bench.x", "\ud800"), "lone surrogate"),
    ("header with a string of 70,000", _set("bench.x", "x" * 70_000), "a string of 70000"),
    ("header nested 40 deep", _deep(40), "nested more than 32"),
    ("header nested 100,000 deep", _deep(100_000), "nested more than 32"),
    ("header key twice", _header_text(b'"n": 200', b'"n": 200, "n": 200'), "appears twice"),
    ("header line over 1 MiB", lambda raw: raw.replace(b"{", b"{" + b" " * MIB, 1), "1048576"),
    ("no format", _drop("format"), "format must be"),
    ("format_version not the first line's", _set("format_version", 1), "format_version"),
    ("format_version true", _set("format_version", True), "format_version"),
    ("benchmark a number", _set("benchmark", 7), "benchmark must be"),
    ("benchmark markup", _set("benchmark", "[/x]"), "benchmark must be"),
    ("no benchmark", _drop("benchmark"), "benchmark must be"),
    ("n a string", _set("n", "200"), "n must be a count"),
    ("n true", _set("n", True), "n must be a count"),
    ("n negative", _set("n", -1), "n must be a count"),
    ("n not the data's", _set("n", 199), "the header's n is 199 but the data holds 200"),
    ("no n", _drop("n"), "n must be a count"),
    ("no samples", _no_samples, "no samples (n is 0)"),
    ("columns an object", _set("columns", {"a": 1}), "columns must be a list"),
    (
        "one column too few",
        _edit(lambda h: h["columns"].pop()),
        "names 2 columns but the data has 3",
    ),
    ("a column a string", _set("columns.1", "rtt"), "columns[1] must be an object"),
    ("a column without a name", _drop("columns.1.name"), "column name"),
    ("a column name a number", _set("columns.1.name", 5), "column name"),
    ("a column name with a newline", _set("columns.1.name", "r\ntt"), "column name"),
    ("a column name of markup", _set("columns.1.name", "[/x]"), "column name"),
    ("a column name of 65", _set("columns.1.name", "r" * 65), "longer than 64"),
    ("a column twice", _set("columns.2.name", "rtt"), "appears twice"),
    ("t_start not first", _set("columns.0.name", "t0"), "columns[0] must be t_start"),
    ("a column of kind time", _set("columns.1.kind", "time"), "kind must be duration"),
    ("a column's latency a list", _set("columns.1.latency", [1]), "columns[1].latency"),
    ("context_switches negative", _set("columns.1.context_switches", -2), "context_switches"),
    (
        "only t_start",
        lambda raw: sealed(
            {**parts(raw)[0], "columns": parts(raw)[0]["columns"][:1]},
            parts(raw)[1][: 200 * 8],
            1,
            200,
        ),
        "no timed columns",
    ),  # fmt: skip
    ("clock a string", _set("clock", "tsc"), "clock must be an object"),
    ("no clock", _drop("clock"), "clock must be an object"),
    ("clock name markup", _set("clock.name", "[b]"), "clock.name"),
    ("ns_per_tick 0", _set("clock.ns_per_tick", 0), "ns_per_tick"),
    ("ns_per_tick negative", _set("clock.ns_per_tick", -0.4), "ns_per_tick"),
    ("ns_per_tick huge", _set("clock.ns_per_tick", 1e300), "ns_per_tick"),
    ("ns_per_tick tiny", _set("clock.ns_per_tick", 1e-300), "ns_per_tick"),
    ("ns_per_tick a string", _set("clock.ns_per_tick", "0.4"), "ns_per_tick"),
    ("ns_per_tick true", _set("clock.ns_per_tick", True), "ns_per_tick"),
    ("ns_per_tick NaN", _header_text(b'"ns_per_tick": ', b'"ns_per_tick": NaN, "x": '), "NaN"),
    ("no ns_per_tick", _drop("clock.ns_per_tick"), "ns_per_tick"),
    ("overhead negative", _set("clock.overhead_ns", -5), "clock.overhead_ns"),
    ("no params", _drop("params"), "params must be"),
    ("params a list", _set("params", [1, 2]), "params must be"),
    ("a param an object", _set("params.size", {"v": 8}), "params must be"),
    ("warmup a string", _set("warmup", "30"), "warmup must be a count"),
    ("workers an object", _set("workers", {"n": 200}), "workers must be a non-empty list"),
    ("a worker's n a string", _set("workers.0.n", "200"), "workers[0].n must be a count"),
    ("workers' n not n", _set("workers.0.n", 150), "add up to 150"),
    ("rusage not counts", _set("workers.0.timed_rusage.initiator", {"nvcsw": "x"}), "timed_rusage"),
    ("bench a list", _set("bench", [1]), "bench must be an object"),
    ("env a string", _set("env", "linux"), "env must be an object"),
    ("argv of numbers", _set("argv", [1, 2]), "argv must be a list of texts"),
    ("byte_order middle", _set("byte_order", "middle"), "byte_order"),
    ("inject_ns negative", _set("inject_ns", -1), "inject_ns"),
]


@pytest.mark.parametrize("name,make,words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_gets_one_line(
    cli, good: Path, tmp_path: Path, name: str, make: Callable[[bytes], bytes], words: str
) -> None:
    """Each kind of malformed file: `latscope show FILE` says what is wrong, naming the file,
    in one line, and exits 2 (the loader raises nothing but SampleFormatError)."""
    p = tmp_path / "bad.lss"
    p.write_bytes(make(good.read_bytes()))
    r = cli("show", str(p))
    one_error_line(r, str(p), words)
    with pytest.raises(samples.SampleFormatError):
        samples.load(p)


def test_not_a_regular_file_or_too_large(
    cli, good: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo.lss"
    os.mkfifo(fifo)
    for p in (str(fifo), "/dev/zero", "/dev/null"):
        one_error_line(cli("show", p, timeout=30), p, "not a regular file")
    with pytest.raises(samples.SampleFormatError, match="is a directory"):
        samples.load(tmp_path)
    with pytest.raises(samples.SampleFormatError, match="no such file"):
        samples.load(tmp_path / "missing.lss")
    monkeypatch.setattr(samples, "FILE_LIMIT", 1000)
    one_error_line(cli("show", str(good)), str(good), "larger than a sample file may be")


def one_error_line(r: subprocess.CompletedProcess[str], path: str, words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"latscope: error: {path}: "), lines[0]
    assert words in lines[0], (words, lines[0])
    assert "Traceback" not in r.stderr + r.stdout and r.stdout == ""


def test_an_accepted_file_shows(cli, good: Path, tmp_path: Path) -> None:
    """The edits above start from a file that shows: what they change is what is refused."""
    p = tmp_path / "same.lss"
    p.write_bytes(_set("bench.x", 1)(good.read_bytes()))
    r = cli("show", str(p))
    assert r.returncode == 0, r.stderr
    assert "pipe" in r.stdout


def test_the_limits_are_the_documented_ones_and_the_probes() -> None:
    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "sample-format.md").read_text()
    assert samples.MAX_HEADER_BYTES == 2**20 and "**1 MiB**" in doc
    assert samples.FILE_LIMIT == 8 * 2**30 and "**8 GiB**" in doc
    assert samples.MAX_ROWS == 10**8 and "**10⁸**" in doc
    assert f"**{samples.MAX_COLUMNS}**" in doc
    assert f"# The sample file format (version {samples.ARMS_FORMAT_VERSION})" in doc
    h = (root / "probe" / "core" / "probe.h").read_text()
    defs = dict(re.findall(r"#define (SAMPLE_\w+) (\S+)", h))
    assert defs["SAMPLE_FORMAT_VERSION"] == str(samples.FORMAT_VERSION)
    assert defs["SAMPLE_FORMAT_VERSION_ARMS"] == str(samples.ARMS_FORMAT_VERSION)
    assert defs["SAMPLE_MAX_HEADER"] == "(1u" and "(1u << 20)" in h
    assert defs["SAMPLE_MAX_COLUMNS"] == str(samples.MAX_COLUMNS)
    assert defs["SAMPLE_MAX_ROWS"] == f"{samples.MAX_ROWS}ull"


@pytest.mark.parametrize(
    ("key", "value"),
    [("step_ns", 1e308), ("overhead_ns", 2e9), ("resolution_ns", 1e300), ("calibration_ms", 1e9)],
)
def test_a_clock_beyond_belief_is_refused(good: Path, tmp_path: Path, key: str, value: float):
    """A header whose clock step, read cost or resolution exceeds a second (or calibration an
    hour) is damaged: refused when read (its CRC made right, as a forger would), with the
    field and its value, never an overflow in the figures worked out from it (a step of
    1e308 ns overflowed the clock finding); the writer refuses to write one."""
    raw = good.read_bytes()
    m = fuzz._LINES.match(raw)
    assert m is not None
    header = json.loads(m.group(2))
    header["clock"][key] = value
    bad = tmp_path / "bad.lss"
    bad.write_bytes(fuzz.reseal(raw[: m.start(2)] + json.dumps(header).encode() + raw[m.end(2) :]))
    with pytest.raises(samples.SampleFormatError, match=f"clock.{key} must be a number from 0"):
        samples.load(bad)
