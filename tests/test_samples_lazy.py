"""A sample file's columns read one at a time: `load` checks the whole file and keeps no
column; a column asked for is read again from the file (ticks, or nanoseconds made a block of
rows at a time), the same values as the file checked, or one line when the file is no longer
that file (replaced, cut short, written to in place, removed). No descriptor is kept."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import fuzz
from latscope import samples
from latscope.record import Run
from test_samples import parts

ROWS = 10_000


def header() -> dict:
    return {
        "probe": {"version": "test", "compiler": "none"},
        "benchmark": "synthetic",
        "params": {},
        "warmup": 0,
        "clock": {"name": "tsc", "ns_per_tick": 0.434782608695652, "overhead_ns": 20.0},
        "columns": [
            {"name": "t_start", "unit": "ticks", "kind": "time"},
            {"name": "rtt", "unit": "ticks", "kind": "duration", "latency": "call"},
            {"name": "oneway", "unit": "ticks", "kind": "duration", "latency": "call"},
        ],
        "started_utc": "2026-01-01T00:00:00Z",
    }


def columns(rows: int = ROWS, seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rtt = rng.integers(1, 2**40, rows)
    return {"t_start": np.cumsum(rtt) - rtt[0], "rtt": rtt, "oneway": rtt // 2 + 1}


@pytest.fixture()
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 1,000 rows: a column is checked and converted in several."""
    monkeypatch.setattr(samples, "BLOCK_ROWS", 1000)


@pytest.fixture()
def file(tmp_path: Path) -> Path:
    return samples.write(tmp_path / "s.lss", header(), columns())


def test_a_column_read_again_is_the_one_checked(small_blocks: None, file: Path) -> None:
    cols = columns()
    sf = samples.load(file)
    assert isinstance(sf.ticks, samples.Columns)
    assert list(sf.ticks) == ["t_start", "rtt", "oneway"] and len(sf.ticks) == 3
    assert "rtt" in sf.ticks and "arm" not in sf.ticks
    for name, want in cols.items():
        got = sf.ticks[name]
        assert got.dtype == np.dtype("<i8") and np.array_equal(got, want)
        # the nanoseconds as the whole column converted at once gave them, bit for bit
        whole = want.astype(np.float64)
        whole *= sf.ns_per_tick
        ns = sf.ns(name)
        assert ns.dtype == np.float64 and np.array_equal(ns.view(np.int64), whole.view(np.int64))
    assert not np.shares_memory(sf.ticks["rtt"], sf.ticks["rtt"])  # a new array each time
    with pytest.raises(KeyError):
        sf.ticks["nothing"]


def test_big_endian_and_zero_columns(small_blocks: None, tmp_path: Path) -> None:
    """A big-endian file reads as the same values; a column of zeros (an import without
    times) is known from the check and given as zeros without a read."""
    cols = columns()
    cols["t_start"][:] = 0
    little = samples.write(tmp_path / "l.lss", header(), cols)
    raw = little.read_bytes()
    sf = samples.load(little)
    assert sf.ns("t_start").tolist() == [0.0] * ROWS
    assert np.array_equal(sf.ticks["t_start"], cols["t_start"])
    # the same file as big-endian (its header says so), resealed
    hdr, data = parts(raw)
    hdr["byte_order"] = "big"
    swapped = np.frombuffer(data, "<i8").astype(">i8").tobytes()
    big = tmp_path / "b.lss"
    big.write_bytes(fuzz.seal(2, json.dumps(hdr).encode(), 3, ROWS, swapped))
    sb = samples.load(big)
    for name in cols:
        assert np.array_equal(sb.ticks[name], cols[name])
        assert np.array_equal(sb.ns(name), sf.ns(name))


def test_load_keeps_no_column(tmp_path: Path) -> None:
    """Loading a file of 3 columns of 200,000 rows (4.8 MB) takes the memory of one block
    at most, not the columns; one column in ns takes its own array and one block."""
    rows = 200_000
    p = samples.write(tmp_path / "m.lss", header(), columns(rows))
    tracemalloc.start()
    try:
        sf = samples.load(p)
        _, peak = tracemalloc.get_traced_memory()
        assert peak < 8 * samples.BLOCK_ROWS + 2**20 and peak < 3 * 8 * rows
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        x = sf.ns("rtt")
        _, peak = tracemalloc.get_traced_memory()
        assert peak - base <= x.nbytes + min(x.nbytes, 8 * samples.BLOCK_ROWS) + 2**16
    finally:
        tracemalloc.stop()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_no_descriptor_is_kept(file: Path) -> None:
    before = _fds()
    runs = [Run(file) for _ in range(20)]
    assert _fds() == before
    for r in runs:
        r.values("rtt/2" if "rtt/2" in r.all_columns else "rtt")
    assert _fds() == before


def _same_times(p: Path, st: os.stat_result) -> None:
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_written_to_in_place_after_the_check_is_refused(file: Path) -> None:
    """A sample changed in place, the size and modification time put back: the column's
    bytes no longer give the checksum's value; the other columns still read."""
    sf = samples.load(file)
    st = file.stat()
    raw = bytearray(file.read_bytes())
    at = raw.index(b"\nDATA ") + 1
    at = raw.index(b"\n", at) + 1 + 8 * ROWS + 8 * 17  # a row of rtt
    raw[at] ^= 0x01
    with open(file, "r+b") as f:  # the same inode
        f.write(raw)
    _same_times(file, st)
    assert file.stat().st_ino == st.st_ino
    with pytest.raises(samples.SampleFormatError, match=r"s\.lss: changed since it was read"):
        sf.ns("rtt")
    with pytest.raises(samples.SampleFormatError, match="changed since it was read"):
        sf.ticks["rtt"]
    assert np.array_equal(sf.ticks["oneway"], columns()["oneway"])


@pytest.mark.parametrize("how", ["replaced", "cut", "appended", "removed", "touched"])
def test_a_file_changed_after_the_check_is_refused(file: Path, tmp_path: Path, how: str) -> None:
    run = Run(file)
    if how == "replaced":  # another complete file under the name: another inode
        other = samples.write(tmp_path / "o.lss", header(), columns(seed=4))
        os.replace(other, file)
    elif how == "cut":
        with open(file, "r+b") as f:
            f.truncate(file.stat().st_size - 100)
    elif how == "appended":
        with open(file, "ab") as f:
            f.write(b"x")
    elif how == "removed":
        file.unlink()
    else:
        os.utime(file, ns=(0, 10**9))
    why = "no such file" if how == "removed" else "changed since it was read"
    with pytest.raises(samples.SampleFormatError, match=why) as e:
        run.values("rtt")
    assert "\n" not in str(e.value) and str(file) in str(e.value)


def test_in_memory_outlives_its_file(small_blocks: None, file: Path) -> None:
    """A file read whole (`in_memory`: a probe process's block, removed once read) gives the
    same ticks and nanoseconds after it is gone."""
    sf = samples.load(file)
    held = sf.in_memory()
    want = {name: sf.ns(name) for name in sf.ticks}
    file.unlink()
    assert not isinstance(held.ticks, samples.Columns)
    assert held.header == sf.header and list(held.ticks) == list(sf.ticks)
    for name, ns in want.items():
        assert np.array_equal(held.ticks[name], columns()[name])
        assert np.array_equal(held.ns(name).view(np.int64), ns.view(np.int64))
    with pytest.raises(samples.SampleFormatError, match="cannot be read again: no such file"):
        sf.ns("rtt")
