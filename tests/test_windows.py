"""The Windows probe (docs/windows.md), run under Wine: its catalogue has the native probe's
shape, every benchmark writes a sample file the lab reads, the header says it ran under Wine,
and bad input gives one line and exit 2. `make test` builds the .exe first (mk/windows.mk);
without it, or without Wine, these tests skip. Wine starts slowly (about a second a run), so
the runs are few and small."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_probe
from latscope import samples
from latscope.env import emulation_caveat

ROOT = Path(__file__).resolve().parent.parent
EXE = ROOT / "build" / "cross" / "x86_64-w64-mingw32" / "latscope-probe.exe"
WINE_RUN = ROOT / "scripts" / "wine-run"


def _wine_ok() -> bool:
    return subprocess.run([WINE_RUN, "--version"], capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.skipif(not EXE.exists(), reason=f"no Windows probe: {EXE} (make cross-windows)"),
    pytest.mark.skipif(EXE.exists() and not _wine_ok(), reason="wine64 is not installed"),
]


def wine(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The Windows probe under Wine (relative paths: Wine maps the working directory)."""
    return subprocess.run(
        [WINE_RUN, EXE, *args], capture_output=True, text=True, timeout=300, cwd=cwd or ROOT
    )


@pytest.fixture(scope="module")
def catalogue() -> dict[str, Any]:
    r = wine("--list")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def keys(obj: Any) -> set[str]:
    return set(obj) if isinstance(obj, dict) else set()


def test_catalogue_has_the_native_shape(catalogue: dict[str, Any], probe: str) -> None:
    native = json.loads(run_probe(probe, "--list").stdout)
    assert keys(catalogue) == keys(native)
    assert catalogue["catalogue_version"] == native["catalogue_version"]
    assert catalogue["sample_format_version"] == native["sample_format_version"]
    assert [b["name"] for b in catalogue["benchmarks"]] == [
        "syscall",
        "file",
        "pipe",
        "event",
        "semaphore",
    ]
    by_kind = {b["kind"]: b for b in native["benchmarks"]}
    for b in catalogue["benchmarks"]:
        ref = by_kind[b["kind"]]
        assert keys(b) == keys(ref), b["name"]
        assert keys(b["display"]) == keys(ref["display"]), b["name"]
        for p in b["params"]:
            assert keys(p) <= keys(ref["params"][0]) | {"choices", "min", "max"}, p["name"]
        if b["kind"] == "ipc":  # a native mechanism with a message size, or without
            sized = b["mechanism"]["message_size"]
            ref = next(
                x
                for x in native["benchmarks"]
                if x.get("mechanism", {}).get("message_size") == sized
            )
            assert keys(b["mechanism"]) == keys(ref["mechanism"]), b["name"]
    # the file benchmark's columns are the Linux benchmark's, FlushFileBuffers as fsync
    win_file = next(b for b in catalogue["benchmarks"] if b["name"] == "file")
    lin_file = next(b for b in native["benchmarks"] if b["name"] == "file")
    assert [c["name"] for c in win_file["columns"]] == [c["name"] for c in lin_file["columns"]]
    # its clock is QueryPerformanceCounter; --workers auto means one process here
    clocks = {c["name"]: c for c in catalogue["clocks"]}
    assert clocks["qpc"]["default"] and clocks["qpc"]["available"]
    assert all(keys(c) == keys(native["clocks"][0]) for c in catalogue["clocks"])
    assert catalogue["workers_auto"]["max"] == 1


def test_version_and_clocks() -> None:
    r = wine("--version")
    assert r.returncode == 0 and r.stdout.startswith("latscope-probe ")
    assert r.stdout.endswith(")\n")  # binary stdout: \n, never \r\n
    r = wine("--clocks")
    assert r.returncode == 0, r.stderr
    clocks = {c["name"]: c for c in json.loads(r.stdout)}
    qpc = clocks["qpc"]
    assert qpc["ns_per_tick"] > 0 and qpc["getres_ns"] == qpc["ns_per_tick"]
    assert qpc["step_ns"] >= qpc["ns_per_tick"] and qpc["overhead_ns"] > 0


# one run of each benchmark (both modes of the ping-pong among them), small n
RUNS = [
    ("syscall", ["op=testalert", "batch=10", "batches=3"], ["call"]),
    ("syscall", ["op=read0", "batch=10", "batches=3"], ["call"]),
    ("file", ["open=existing", "size=4"], ["open", "write", "read", "close"]),
    ("file", ["cache=direct", "fsync=true"], ["open", "write", "fsync", "read", "close"]),
    ("pipe", ["mode=processes", "size=64"], ["rtt", "oneway"]),
    ("event", ["mode=threads"], ["rtt", "oneway"]),
    ("semaphore", ["mode=processes"], ["rtt", "oneway"]),
]


@pytest.mark.parametrize(("bench", "params", "columns"), RUNS)
def test_smoke_run(tmp_path: Path, bench: str, params: list[str], columns: list[str]) -> None:
    args = [bench, "-n", "50", "--warmup", "5", "-o", "out.lss"]
    for p in params:
        args += ["-p", p]
    r = wine(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sf = samples.load(tmp_path / "out.lss")  # the lab's reader: layout, CRC, schema
    h = sf.header
    assert h["benchmark"] == bench and h["n"] == 50 and h["warmup"] == 5
    assert sf.duration_columns == columns
    for c in columns:
        assert (sf.ns(c) >= 0).all()
    if bench != "syscall" and "oneway" not in columns:
        assert np.median(sf.ns("open")) > 0
    assert h["clock"]["name"] == "qpc" and h["clock"]["step_ns"] > 0
    env = h["env"]
    assert env["kernel"]["sysname"] == "Windows" and env["kernel"]["release"]
    em = env["emulation"]  # figures from Wine are not Windows figures: the header says so
    assert em["emulated"] is True and em["emulator"].startswith("wine ")
    assert "wine_get_version" in em["evidence"] and em["built_for"] == "x86_64"
    caveat = emulation_caveat(env)
    assert caveat and caveat.startswith("measured under Wine (wine ") and "Windows" in caveat
    assert env["process"]["uid"] is None
    if bench == "file":
        assert h["bench"]["cache"] == dict(p.split("=") for p in params).get("cache", "warm")
        assert env["filesystem"]["mount_point"]
    if columns[0] == "rtt":
        assert h["bench"]["mode"] == dict(p.split("=") for p in params)["mode"]
    # nothing left beside the output (the temporary renamed, the test file removed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.lss"]


def test_report_001s_experiment_is_imported_and_shown_with_its_caveat(
    cli, store: Path, tmp_path: Path
) -> None:
    """Report 001's run (an existing file, 4-byte write and read) from the Windows probe under
    Wine, brought into the store and shown: the qpc clock and the Wine caveat."""
    r = wine("file", "-p", "open=existing", "-p", "size=4", "-n", "100", "-o", "r001.lss",
             cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = cli("import", str(tmp_path / "r001.lss"))
    assert r.returncode == 0, r.stderr
    r = cli("show", "last", "--full")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "clock qpc" in out
    assert "caveat: measured under Wine (wine " in out
    # the machine line: Windows's version, and no clock source (Windows has none to record)
    assert re.search(r"on \S+: .*, kernel Windows \d", out), out
    assert "None" not in out and "clocksource" not in out


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "taken.lss").write_bytes(b"mine")
    for args, text in (
        (["nosuch", "-o", "x.lss"], "unknown benchmark 'nosuch'"),
        (["file", "-p", "size=lots", "-o", "x.lss"], "parameter size=lots"),
        (["syscall", "-n", "10", "-o", "taken.lss"], "the file exists"),
    ):
        r = wine(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("latscope-probe: error: "), lines
        assert text in lines[0]
    assert (tmp_path / "taken.lss").read_bytes() == b"mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.lss"]
