"""The Python runtime engine (src/latscope/pyprobe, docs/python-runtime.md): every mechanism
runs briefly between threads, processes or tasks under the project's Python and under PyPy
where installed, and writes a sample file the lab reads; its catalogue has the C probe's
shape; bad input gets one line and exit 2 or 3; Ctrl-C and a responder that dies leave no
process, file or shared memory behind.  No timing figure is asserted."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import children
from latscope import probe as lab_probe
from latscope import samples

ENGINE = str(lab_probe.PYPROBE_DIR)
PYPY = shutil.which("pypy3")
INTERPRETERS = [
    pytest.param(sys.executable, id="project-python"),
    pytest.param(PYPY or "pypy3", id="pypy3"),
]


def _interp(python: str) -> str:
    if python == "pypy3" or not os.access(python, os.X_OK):
        pytest.skip("pypy3 is not installed here (apt-get install pypy3)")
    return python


def engine(python: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, ENGINE, *args], capture_output=True, text=True, timeout=timeout)


@functools.cache
def catalogue(python: str) -> dict[str, Any]:
    """The engine's catalogue under ``python``, read once (an interpreter's start and the
    engine's imports: 60 ms under CPython, three times that under PyPy)."""
    r = engine(python, "--list")
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


CAT = catalogue(sys.executable)
# A run of a handful of round trips: the file, its header and every sample are checked as
# with more, and the busy-waiting pairs (py_spin, py_spinlock, py_semlock) pay a GIL switch
# interval or more for each hand-off, spinning meanwhile (py_spinlock: tens of milliseconds
# a round trip on a busy machine).
RUN = ("-n", "5", "--warmup", "1")
CASES = [
    (b["name"], mode)
    for b in CAT["benchmarks"]
    for mode in ("threads", "processes", "tasks")
    if b["mechanism"].get(mode)
]


@pytest.mark.parametrize("python", INTERPRETERS)
@pytest.mark.parametrize(("bench", "mode"), CASES, ids=[f"{b}-{m}" for b, m in CASES])
def test_every_mechanism_writes_a_sample_file_the_lab_reads(
    python: str, bench: str, mode: str, tmp_path: Path
) -> None:
    python = _interp(python)
    entry = next(b for b in catalogue(python)["benchmarks"] if b["name"] == bench)
    out = tmp_path / "s.lsamp"
    # a short switch interval: the busy-waiting pairs hand over at every switch
    r = engine(
        python, bench, "-p", f"mode={mode}", "-p", "switchinterval=0.0005", *RUN, "-o", str(out)
    )
    if not entry["available"]:
        assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
        assert entry["unavailable_reason"] in r.stderr
        assert not out.exists()
        return
    assert r.returncode == 0, r.stderr
    s = samples.load(out)
    h = s.header
    assert h["benchmark"] == bench and h["params"]["mode"] == mode and h["n"] == int(RUN[1])
    assert h["clock"]["name"] == "perf_counter_ns" and h["clock"]["ns_per_tick"] == 1
    assert h["clock"]["step_ns"] > 0 and h["clock"]["overhead_ns"] > 0
    assert h["interpreter"]["executable"] == python or os.path.realpath(
        h["interpreter"]["executable"]
    ) == os.path.realpath(python)
    assert h["interpreter"]["switchinterval"] == pytest.approx(0.0005)
    assert s.duration_columns == ["rtt", "oneway"]
    assert (s.ticks["rtt"] > 0).all() and (s.ticks["oneway"] > 0).all()
    assert (s.ticks["oneway"] <= s.ticks["rtt"]).all()  # one clock: the answer follows it
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left
    if bench.startswith("py_zmq_"):
        # the default transport (tcp) and the C probe's counterpart over it, for pub/sub the
        # same pattern (test_zeromq_over_every_transport: the other transports)
        assert h["params"]["transport"] == "tcp"
        extra = " pattern=pubsub" if bench == "py_zmq_pubsub" else ""
        assert h["bench"]["counterpart"] == f"zmq_tcp{extra}"
    # the context switches each latency contains, as the C probe records them: the round trip
    # holds both ways (it once said 1 for a blocking round trip)
    per_way = entry["mechanism"]["context_switches_per_way"]
    switches = {c["name"]: c.get("context_switches") for c in h["columns"] if c["kind"] != "time"}
    assert switches == (
        {"rtt": None, "oneway": None}
        if per_way is None
        else {"rtt": 2 * per_way, "oneway": per_way}
    )


def test_the_catalogue_has_the_probes_shape(probe: str) -> None:
    c = json.loads(subprocess.run([probe, "--list"], capture_output=True, text=True).stdout)
    spin = next(b for b in c["benchmarks"] if b["name"] == "spin")
    assert set(CAT) >= set(c) - {"features"} | {"engine"}
    for b in CAT["benchmarks"]:
        assert b["name"].startswith("py_") and b["engine"] == "python"
        assert set(b) >= set(spin), set(spin) - set(b)
        assert set(b["mechanism"]) >= set(spin["mechanism"])
        assert [c["name"] for c in b["columns"]] == ["rtt", "oneway"]
        assert [d["name"] for d in b["derived_columns"]] == ["rtt/2"]
        assert {p["name"] for p in b["params"]} >= {"mode", "switchinterval", "python"}
    assert CAT["exit_codes"] == c["exit_codes"]
    assert CAT["sample_format_version"] == c["sample_format_version"]  # one format, two writers


def test_the_lab_lists_and_checks_the_engines_benchmarks(probe: str, monkeypatch) -> None:
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    names = [b["name"] for b in lab_probe.catalogue()["benchmarks"]]
    assert "spin" in names and "py_spin" in names  # one catalogue, both engines
    got = lab_probe.check("py_pipe", {"mode": "threads"}, n=50)
    assert got["params"]["mode"] == "threads" and got["n"] == 50
    assert got["params"]["python"] == sys.executable


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["py_nothing", "-o", "x"], 2, "unknown benchmark"),
        (["py_pipe", "-p", "size=8", "--check"], 2, "has no parameter size"),
        (["py_pipe", "-p", "mode=fibres", "--check"], 2, "choose one of"),
        (["py_pipe", "-p", "switchinterval=soon", "--check"], 2, "not a number"),
        (["py_pipe", "-p", "switchinterval=5", "--check"], 2, "between"),
        (["py_pipe", "-n", "0", "--check"], 2, "-n 0"),
        (["py_pipe", "--clock", "tsc", "--check"], 2, "one clock"),
        (["py_pipe", "--frobnicate"], 2, "unknown option"),
        (["py_pipe", "-p", "cpus=0,4096", "--check"], 3, "not available"),
        (["py_pipe", "-p", "python=/nonexistent/python", "--check"], 2, "no such interpreter"),
        (["py_zmq_pair", "-p", "mode=processes", "-p", "transport=inproc", "--check"], 2,
         "inproc"),
        (["py_asyncio_queue", "-p", "cpus=0,1", "--check"], 2, "one thread, on one CPU"),
    ],
)  # fmt: skip
def test_bad_input_gets_one_line_and_exit_2_or_3(args: list[str], code: int, words: str) -> None:
    r = engine(sys.executable, *args)
    assert r.returncode == code, r.stderr
    assert r.stderr.count("\n") == 1 and words in r.stderr, r.stderr
    assert r.stderr.startswith("latscope-pyprobe: error: ") and "Traceback" not in r.stderr


@pytest.mark.parametrize("python", INTERPRETERS)
def test_a_pinned_run_works_under_every_interpreter(python: str, tmp_path: Path) -> None:
    python = _interp(python)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("pinning to two CPUs needs two usable CPUs")
    a, b = sorted(os.sched_getaffinity(0))[:2]
    out = tmp_path / "s.lsamp"
    r = engine(python, "py_pipe", "-p", f"cpus={a},{b}", *RUN, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert samples.load(out).header["params"]["cpus"] == f"{a},{b}"


def test_threads_are_pinned_where_the_os_module_cannot_pin() -> None:
    """PyPy 3.9's os has no sched_setaffinity: the engine pins through libc instead."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable CPUs to tell a pinned thread from an unpinned one")
    cpu = max(os.sched_getaffinity(0))
    script = f"""
import os, sys, threading
sys.path.insert(0, {ENGINE!r})
del os.sched_setaffinity, os.sched_getaffinity
import lp_driver
print(sorted(lp_driver.usable_cpus()))
def f():
    lp_driver.pin({cpu})
    status = open("/proc/thread-self/status").read().splitlines()
    print([x.split()[1] for x in status if x.startswith("Cpus_allowed_list")][0])
t = threading.Thread(target=f); t.start(); t.join()
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    usable, pinned = r.stdout.split("\n")[:2]
    assert usable == str(sorted(os.sched_getaffinity(0)))
    assert pinned == str(cpu)


def test_an_existing_output_file_is_never_replaced(tmp_path: Path) -> None:
    out = tmp_path / "s.lsamp"
    out.write_text("keep me")
    r = engine(sys.executable, "py_pipe", "-n", "10", "-o", str(out))
    assert r.returncode == 2 and "already exists" in r.stderr
    assert out.read_text() == "keep me"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _start(bench: str, mode: str, out: Path) -> tuple[subprocess.Popen[str], int]:
    """The engine on a run it does not end before the test stops it: two million round trips
    take the fastest pair (py_spin between processes, under a microsecond each) more than a
    second, and the test stops it at its first progress line.  (The engine allocates its
    sample lists first: 10 million took a third of a second.)"""
    rfd, wfd = os.pipe()
    p = subprocess.Popen(
        [sys.executable, ENGINE, bench, "-p", f"mode={mode}", "-n", "2000000",
         "--warmup", "0", "--progress-fd", str(wfd), "-o", str(out)],
        stderr=subprocess.PIPE, text=True, pass_fds=(wfd,),
    )  # fmt: skip
    os.close(wfd)
    return p, rfd


def _wait_for_progress(rfd: int) -> None:
    with os.fdopen(rfd) as f:
        for line in f:
            if line.startswith("progress") and int(line.split()[1]) > 0:
                return
    pytest.fail("the engine reported no progress")


def _shm() -> set[str]:
    d = Path("/dev/shm")
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


@pytest.mark.parametrize(
    ("bench", "mode"),
    [("py_pipe", "processes"), ("py_spin", "processes"), ("py_asyncio_tcp", "processes"),
     ("py_lock", "threads")],
)  # fmt: skip
def test_ctrl_c_leaves_no_process_file_or_memory(bench: str, mode: str, tmp_path: Path) -> None:
    out = tmp_path / "s.lsamp"
    before = _shm()
    p, rfd = _start(bench, mode, out)
    _wait_for_progress(rfd)
    kids = set(children(p.pid))
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert err.count("\n") == 1 and "interrupted" in err
    deadline = time.monotonic() + 5
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [k for k in kids if _alive(k)]
    assert list(tmp_path.iterdir()) == []
    assert not {n for n in _shm() - before if n.startswith(("psm_", "wnsm_"))}


@pytest.mark.parametrize("bench", ["py_pipe", "py_spin", "py_semaphore"])
def test_a_responder_that_dies_ends_the_run_with_one_line(bench: str, tmp_path: Path) -> None:
    out = tmp_path / "s.lsamp"
    p, rfd = _start(bench, "processes", out)
    _wait_for_progress(rfd)
    # the responder, not multiprocessing's resource tracker (which shared memory starts)
    kids = {k for k in children(p.pid) if b"resource_tracker" not in _cmdline(k)}
    assert kids, "no responder process"
    for k in kids:
        os.kill(k, signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 1, err
    assert err.count("\n") == 1 and "responder" in err, err
    assert list(tmp_path.iterdir()) == []


def test_lab_run_keeps_a_python_run(cli, store: Path, probe: str, monkeypatch) -> None:
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    # ten round trips: each a scheduler tick or more of spinning on a busy machine
    r = cli("run", "py_spin", "-p", "mode=threads", "-p", "switchinterval=0.0005", "-n", "10")
    assert r.returncode == 0, r.stderr
    assert "py_spin" in r.stdout and "perf_counter_ns" in r.stdout
    r = cli("show", "last", "--full")
    assert r.returncode == 0, r.stderr
    assert "cpython" in r.stdout or "pypy" in r.stdout


def test_lab_runs_the_engine_under_the_interpreter_it_is_given(
    cli, store: Path, probe: str, monkeypatch
) -> None:
    python = _interp(PYPY or "pypy3")
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    r = cli("run", "py_pipe", "-p", "mode=processes", "-p", f"python={python}", "-n", "200")
    assert r.returncode == 0, r.stderr
    assert "pypy" in r.stdout


@pytest.mark.parametrize("python", INTERPRETERS)
def test_runtime_matrix_sets_each_python_cell_beside_its_c_counterpart(
    python: str, cli, store: Path, probe: str, monkeypatch
) -> None:
    python = _interp(python)
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    r = cli("matrix", "--runtime", "python", "-p", f"python={python}", "-m", "py_pipe",
            "-n", "200", "--quiet", "--store", str(store))  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.split()[:1] == ["py_pipe"]]
    # one row per mode and placement: Python, mode, CPUs, C probe, Python, C (value and unit
    # each), ×
    assert sorted((row[1], row[2]) for row in rows) == [
        ("processes", "1"), ("processes", "2"), ("threads", "1"), ("threads", "2"),
    ]  # fmt: skip
    scale = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}
    for row in rows:
        assert row[3] == "pipe" and len(row) == 9, row
        py = float(row[4].replace(",", "")) * scale[row[5]]
        c = float(row[6].replace(",", "")) * scale[row[7]]
        assert float(row[8].replace(",", "")) == pytest.approx(py / c, rel=0.01)
    impl = "pypy" if "pypy" in python else "cpython"
    side = [ln for ln in r.stdout.splitlines() if ln.startswith("Python side: ")]
    assert len(side) == 1 and side[0].startswith(f"Python side: {impl} ") and "GIL on" in side[0]


def test_the_runtime_matrix_sets_pubsub_beside_the_probes_pubsub() -> None:
    """py_zmq_pubsub's C counterpart is zmq_<transport> with pattern=pubsub, so that the two
    cells of its row measure the same pattern."""
    from latscope import probe
    from latscope.matrix.runtime import counterpart

    pub = probe.benchmark("py_zmq_pubsub")
    pair = probe.benchmark("py_zmq_pair")
    if probe.entry("zmq_tcp") is None:
        pytest.skip("this probe was built without ZeroMQ")
    assert counterpart(pub, {"mode": "threads"}) == ("zmq_tcp", {"pattern": "pubsub"})
    assert counterpart(pub, {"transport": "ipc"}) == ("zmq_ipc", {"pattern": "pubsub"})
    assert counterpart(pair, {"mode": "threads"}) == ("zmq_tcp", {})


def test_tasks_of_one_loop_get_one_cell_on_one_cpu_in_the_runtime_matrix() -> None:
    from latscope.matrix.runtime import runtime_plan

    plan = [(b["name"], mode, cpus) for b, mode, cpus in runtime_plan()]
    tasks = [(b, cpus) for b, mode, cpus in plan if mode == "tasks"]
    assert sorted(tasks) == [("py_asyncio_queue", "0,0"), ("py_asyncio_tcp", "0,0")]
    if (os.cpu_count() or 1) >= 2:  # threads and processes on one CPU and on two
        assert ("py_pipe", "threads", "0,1") in plan and ("py_pipe", "processes", "0,1") in plan


def _python_with_zmq() -> str:
    for p in (sys.executable, "/usr/bin/python3"):
        if os.access(p, os.X_OK):
            if subprocess.run([p, "-c", "import zmq"], capture_output=True).returncode == 0:
                return p
    pytest.skip("no interpreter here has pyzmq (pip install pyzmq, or apt-get install python3-zmq)")


# tcp, the default transport, is run under the project's interpreter by
# test_every_mechanism_writes_a_sample_file_the_lab_reads (its counterpart checked there);
# here too where that interpreter has no pyzmq (and another one here has)
ZMQ_HERE = next(b for b in CAT["benchmarks"] if b["name"] == "py_zmq_pair")["available"]
ZMQ = [
    (b, m, t)
    for b in ("py_zmq_pair", "py_zmq_pubsub")
    for m in ("threads", "processes")
    for t in ("inproc", "ipc", *(() if ZMQ_HERE else ("tcp",)))
    if not (t == "inproc" and m == "processes")
]


@pytest.mark.parametrize(("bench", "mode", "transport"), ZMQ)
def test_zeromq_over_every_transport(bench: str, mode: str, transport: str, tmp_path: Path) -> None:
    python = _python_with_zmq()
    out = tmp_path / "s.lsamp"
    r = engine(
        python, bench, "-p", f"mode={mode}", "-p", f"transport={transport}", *RUN, "-o", str(out)
    )
    assert r.returncode == 0, r.stderr
    s = samples.load(out)
    # the C probe's counterpart: the same transport, and for pub/sub the same pattern
    extra = " pattern=pubsub" if bench == "py_zmq_pubsub" else ""
    assert s.header["bench"]["counterpart"] == f"zmq_{transport}{extra}"
    assert (s.ticks["oneway"] <= s.ticks["rtt"]).all()
    assert list(tmp_path.iterdir()) == [out]


def test_a_free_threaded_cpython_on_path_is_named_and_its_absence_said(
    tmp_path: Path, monkeypatch
) -> None:
    from latscope.matrix.runtime import free_threaded_interpreters, free_threaded_note

    monkeypatch.setenv("PATH", str(tmp_path))
    assert free_threaded_interpreters() == []
    assert free_threaded_note().startswith("no free-threaded CPython here")
    exe = tmp_path / "python3.13t"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert free_threaded_interpreters() == [str(exe)]
    assert f"-p python={exe}" in free_threaded_note()
