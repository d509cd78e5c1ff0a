"""The sample-file loader: complete files load; truncated, altered or foreign ones are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
