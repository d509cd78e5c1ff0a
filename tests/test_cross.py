"""The ARM probes (make cross: build/cross/TRIPLET/latscope-probe, static) under qemu-user:
their catalogue is the native probe's, every benchmark checks and runs with a small n and
writes a sample file the lab reads, its header says it was measured under emulation, bad input
gets one line and exit 2, and an unusable clock one line and exit 3 (docs/ports.md).

The probes are found in $LATSCOPE_CROSS (the Makefile's build/cross) or build/cross; each
test of a probe that is not built skips, saying how to build it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import run_probe
from latscope import samples
from latscope.record import Run
from test_remote import Server, token_file

ROOT = Path(__file__).resolve().parent.parent
CROSS = Path(os.environ.get("LATSCOPE_CROSS") or ROOT / "build" / "cross")
#: triplet: (the architecture the probe records it was built for, its emulator)
TARGETS = {
    "aarch64-linux-gnu": ("aarch64", "qemu-aarch64"),
    "arm-linux-gnueabihf": ("armv7", "qemu-arm"),
}
#: every benchmark of the registry (probe/benchmarks.def), known without running anything
BENCHMARKS = re.findall(r"^BENCH\((\w+),", (ROOT / "probe" / "benchmarks.def").read_text(), re.M)
WARNING = "latscope-probe: warning: "


def cross_probe(triplet: str) -> str:
    """The probe of ``triplet`` run under its emulator (make cross writes the wrapper)."""
    run = CROSS / triplet / "latscope-probe-run"
    if not (CROSS / triplet / "latscope-probe").is_file() or not os.access(run, os.X_OK):
        pytest.skip(f"the {triplet} probe is not built here: make cross builds it")
    return str(run)


def one_line(r: Any, code: int, words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("latscope-probe: error: "), r.stderr
    assert words in lines[0], lines[0]


def catalogue(probe: str) -> dict[str, Any]:
    r = run_probe(probe, "--list")
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


@pytest.fixture(scope="module")
def native(probe: str) -> dict[str, Any]:
    return catalogue(probe)


@pytest.mark.parametrize("triplet", TARGETS)
def test_catalogue_is_the_native_ones(triplet: str, native: dict[str, Any]) -> None:
    cat = catalogue(cross_probe(triplet))
    assert set(cat) == set(native)
    assert cat["catalogue_version"] == native["catalogue_version"]
    assert cat["sample_format_version"] == native["sample_format_version"]
    assert [b["name"] for b in cat["benchmarks"]] == [b["name"] for b in native["benchmarks"]]
    assert [b["name"] for b in cat["benchmarks"]] == BENCHMARKS
    for b, nb in zip(cat["benchmarks"], native["benchmarks"], strict=True):
        assert set(b) == set(nb), b["name"]
        assert [p["name"] for p in b["params"]] == [p["name"] for p in nb["params"]], b["name"]
        assert [c["name"] for c in b["columns"]] == [c["name"] for c in nb["columns"]]
    # the clocks: the native three (the TSC not available on ARM) and the generic timer
    clocks = {c["name"]: c for c in cat["clocks"]}
    assert list(clocks) == ["tsc", "mono_raw", "mono", "cntvct"]
    assert clocks["tsc"]["available"] is False
    assert cat["clock_choices"] == ["auto", "tsc", "mono_raw", "mono", "cntvct"]
    assert cat["features"]["zmq"] is False  # the static probes have no libzmq (test_cross_zmq)
    assert cat["features"]["cntvct"] is clocks["cntvct"]["available"]
    default = next(c["name"] for c in cat["clocks"] if c["default"])
    assert default == ("cntvct" if clocks["cntvct"]["available"] else "mono_raw")


@pytest.mark.parametrize("bench", BENCHMARKS)
@pytest.mark.parametrize("triplet", TARGETS)
def test_every_benchmark_runs_under_qemu(triplet: str, bench: str, tmp_path: Path) -> None:
    probe = cross_probe(triplet)
    arch, emulator = TARGETS[triplet]
    server = None
    remote: list[str] = []
    if bench in ("tcp_remote", "udp_remote"):
        # its far side: the same static probe's serve (a numeric address: it resolves no names)
        tok = token_file(tmp_path)
        server = Server(probe, tok, "--sessions", "1", "--max-time", "120")
        remote = [
            "-p", "host=127.0.0.1", "-p", f"port={server.port}", "-p", f"token_file={tok}",
        ]  # fmt: skip
        named = run_probe(probe, bench, "--check", "-p", "host=localhost", *remote[2:])
        one_line(named, 2, "resolves no names")
    try:
        _runs_under_qemu(probe, bench, arch, emulator, remote, tmp_path)
    finally:
        if server is not None:
            server.kill()


def _runs_under_qemu(
    probe: str, bench: str, arch: str, emulator: str, remote: list[str], tmp_path: Path
) -> None:
    check = run_probe(probe, bench, "--check", "-n", "40", *remote)
    if bench.startswith("zmq_"):
        # built without libzmq: the refusal names the twin that has it (test_cross_zmq)
        one_line(check, 3, "not built with ZeroMQ (this static ARM probe has no libzmq;")
        run = run_probe(probe, bench, "-n", "40", "-o", str(tmp_path / "z.lss"))
        one_line(run, 3, "make cross builds its twin with ZeroMQ")
        assert not list(tmp_path.iterdir())
    else:
        if check.returncode == 3:
            one_line(check, 3, "")
            pytest.skip(f"{bench} cannot run here under {emulator}: {check.stderr.strip()}")
        assert check.returncode == 0, check.stderr
        resolved = json.loads(check.stdout)
        assert resolved["benchmark"] == bench and resolved["n"] == 40
        out = tmp_path / f"{bench}.lss"
        r = run_probe(probe, bench, "-n", "40", "--warmup", "5", "-o", str(out), *remote)
        assert r.returncode == 0, r.stderr
        # under emulation page faults and preemption in the timed loop are the emulator's
        assert [ln for ln in r.stderr.splitlines() if not ln.startswith(WARNING)] == []
        sf = samples.load(out)
        h = sf.header
        assert h["benchmark"] == bench and h["n"] == 40
        assert h["clock"]["name"] == resolved["clock"]
        em = h["env"]["emulation"]
        assert em["emulated"] is True and em["emulator"] == "qemu-user", em
        assert em["built_for"] == arch and emulator in em["evidence"]
        assert h["env"]["kernel"]["machine"]
        run = Run(out)  # the lab reads it: every column summarised
        assert set(run.summary()["column"]) >= set(sf.duration_columns)


@pytest.mark.parametrize("triplet", TARGETS)
def test_the_counter_clock_or_its_refusal(triplet: str, tmp_path: Path) -> None:
    probe = cross_probe(triplet)
    clocks = {c["name"]: c for c in catalogue(probe)["clocks"]}
    if clocks["cntvct"]["available"]:
        out = tmp_path / "s.lss"
        r = run_probe(probe, "syscall", "--clock", "cntvct", "-n", "50", "-o", str(out))
        assert r.returncode == 0, r.stderr
        c = samples.load(out).header["clock"]
        assert c["name"] == "cntvct" and c["frequency_from"] == "CNTFRQ"
        assert c["frequency_hz"] > 0 and abs(c["ns_per_tick"] * c["frequency_hz"] - 1e9) < 1e-3
        assert c["step_ns"] >= c["ns_per_tick"] * 0.99 and c["overhead_ns"] > 0
    else:
        # qemu-arm traps an ARMv7 program's read of the counter, as a kernel without user
        # access does: one line, exit 3, nothing written; auto takes mono_raw
        out = tmp_path / "s.lss"
        r = run_probe(probe, "syscall", "--clock", "cntvct", "-n", "50", "-o", str(out))
        one_line(r, 3, "user access is off")
        assert not out.exists()
        one_line(run_probe(probe, "syscall", "--check", "--clock", "cntvct"), 3, "--clock mono_raw")
        check = run_probe(probe, "syscall", "--check")
        assert json.loads(check.stdout)["clock"] == "mono_raw"
    # the TSC is x86's: refused with one line
    r = run_probe(probe, "syscall", "--clock", "tsc", "-n", "50", "-o", str(tmp_path / "t.lss"))
    one_line(r, 3, "not available on this CPU architecture")


@pytest.mark.parametrize("triplet", TARGETS)
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["sundial"], "unknown benchmark 'sundial'"),
        (["syscall", "-n", "0", "-o", "x.lss"], "-n 0: must be between"),
        (["syscall", "-p", "op=nope", "-o", "x.lss"], "op"),
        (["syscall", "--clock", "sundial", "-o", "x.lss"], "cntvct or auto"),
        (["syscall", "--bogus"], "unknown option --bogus"),
    ],
)
def test_bad_input_is_one_line(triplet: str, args: list[str], words: str, tmp_path: Path) -> None:
    probe = cross_probe(triplet)
    r = run_probe(probe, *[str(tmp_path / a) if a == "x.lss" else a for a in args])
    one_line(r, 2, words)
    assert not list(tmp_path.iterdir())
