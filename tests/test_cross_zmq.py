"""The ARM probes with ZeroMQ (make cross: build/cross/TRIPLET-zmq/latscope-probe, dynamically
linked against Debian's libzmq for that architecture, unpacked by scripts/cross-zmq-sysroot)
under qemu-user: their catalogue has the ZeroMQ benchmarks, zmq_tcp and zmq_ipc run and write a
sample file that `latscope import` keeps as a run measured under emulation; the static probe
beside each says what it was built without and how to get its twin (docs/ports.md).

Each test of a probe that is not built skips, saying why and how to build it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_probe
from latscope import samples
from latscope.record import Run
from test_cross import CROSS, TARGETS, WARNING, catalogue, cross_probe, one_line

ZMQ = ["zmq_inproc", "zmq_ipc", "zmq_tcp"]
#: triplet: Debian's name of its architecture (cross/TRIPLET.ini's deb_arch)
DEB_ARCH = {"aarch64-linux-gnu": "arm64", "arm-linux-gnueabihf": "armhf"}


def zmq_probe(triplet: str) -> str:
    """The ``triplet`` probe with ZeroMQ under its emulator (make cross writes the wrapper)."""
    d = CROSS / f"{triplet}-zmq"
    if not (d / "latscope-probe").is_file() or not (d / "latscope-probe-run").is_file():
        pytest.skip(
            f"the {triplet} probe with ZeroMQ is not built here: make cross builds it where apt "
            f"can fetch Debian's {DEB_ARCH[triplet]} packages (as root: scripts/system-deps cross)"
        )
    return str(d / "latscope-probe-run")


@pytest.mark.parametrize("triplet", TARGETS)
def test_catalogue_has_zeromq(triplet: str) -> None:
    cat = catalogue(zmq_probe(triplet))
    assert cat["features"]["zmq"] is True
    benches = {b["name"]: b for b in cat["benchmarks"]}
    for name in ZMQ:
        assert benches[name]["available"] is True, benches[name]
    # the same catalogue as its static twin's, whose ZeroMQ benchmarks are unavailable
    twin = catalogue(cross_probe(triplet))
    assert [b["name"] for b in twin["benchmarks"]] == list(benches)
    assert twin["features"]["zmq"] is False


@pytest.mark.parametrize("triplet", TARGETS)
def test_static_twin_says_how_to_get_zeromq(triplet: str, tmp_path: Path) -> None:
    """Not 'install libzmq's development files and rebuild': what this probe was built without
    and which build has it."""
    static = cross_probe(triplet)
    how = f"make cross builds its twin with ZeroMQ, build/cross/{triplet}-zmq/latscope-probe"
    reasons = {b["name"]: b.get("unavailable_reason", "") for b in catalogue(static)["benchmarks"]}
    for name in ZMQ:
        assert reasons[name].startswith("not built with ZeroMQ (this static ARM probe")
        assert how in reasons[name] and "libzmq5" in reasons[name]
        assert "libzmq3-dev" not in reasons[name]
    r = run_probe(static, "zmq_tcp", "-n", "40", "-o", str(tmp_path / "z.lss"))
    one_line(r, 3, how)
    assert f"Debian {DEB_ARCH[triplet]} packages" in r.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("bench", "params"),
    [("zmq_tcp", ["pattern=pair"]), ("zmq_tcp", ["pattern=pubsub"]), ("zmq_ipc", [])],
)
@pytest.mark.parametrize("triplet", TARGETS)
def test_zeromq_runs_under_qemu_and_imports(
    triplet: str, bench: str, params: list[str], tmp_path: Path, cli: Any
) -> None:
    probe = zmq_probe(triplet)
    arch, emulator = TARGETS[triplet]
    # threads: qemu-user (7.2) aborts a forked child that starts a thread while its parent's
    # run (test_processes_mode_or_the_emulators_abort)
    args = ["-p", "mode=threads", *[a for p in params for a in ("-p", p)]]
    check = run_probe(probe, bench, "--check", "-n", "200", *args)
    assert check.returncode == 0, check.stderr
    resolved = json.loads(check.stdout)
    out = tmp_path / f"{triplet}-{bench}.lss"
    r = run_probe(probe, bench, "-n", "200", "-o", str(out), *args)
    assert r.returncode == 0, r.stderr
    assert [ln for ln in r.stderr.splitlines() if not ln.startswith(WARNING)] == []
    h = samples.load(out).header
    assert h["benchmark"] == bench and h["n"] == 200
    assert h["params"]["pattern"] == resolved["params"]["pattern"]
    em = h["env"]["emulation"]
    assert em["emulated"] is True and em["built_for"] == arch and emulator in em["evidence"]
    (rtt,) = Run(out).summary().filter(column="rtt").iter_rows(named=True)
    assert 0 < rtt["p50_ns"] <= rtt["max_ns"]
    # the lab keeps it as a run measured there, under emulation
    imp = cli("import", str(out))
    assert imp.returncode == 0, imp.stderr
    assert f"{bench} n=200" in imp.stdout and "under emulation (qemu-user)" in imp.stdout
    (run_dir,) = [p for p in cli.store.rglob("run.json")]
    meta = json.loads(run_dir.read_text())
    assert meta["imported_from"]["file"] == out.name


@pytest.mark.parametrize("triplet", TARGETS)
def test_processes_mode_or_the_emulators_abort(triplet: str, tmp_path: Path) -> None:
    """Between processes the peer is forked while the probe's own thread runs, and starts
    ZeroMQ's I/O thread: qemu-user 7.2 aborts such a child (an assertion of its own, whatever
    the program); a qemu without that fault runs it."""
    probe = zmq_probe(triplet)
    out = tmp_path / "p.lss"
    r = run_probe(probe, "zmq_tcp", "-p", "mode=processes", "-n", "200", "-o", str(out))
    if r.returncode != 0 and "assertion failed" in r.stderr and "cpu_exec" in r.stderr:
        one_line_of_probe = [ln for ln in r.stderr.splitlines() if "latscope-probe:" in ln]
        assert one_line_of_probe and "peer process exited" in one_line_of_probe[-1]
        assert not out.exists()
        fault = next(ln for ln in r.stderr.splitlines() if "assertion failed" in ln)
        pytest.skip(f"qemu-user aborts a forked child that starts a thread: {fault}")
    assert r.returncode == 0, r.stderr
    assert samples.load(out).header["params"]["mode"] == "processes"
