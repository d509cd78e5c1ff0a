"""Functional tests of latscope-probe: every benchmark with a small N, structure and sanity,
and every kind of bad input: one clear line, exit 2 or 3, nothing left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import is_root, run_probe, unexpected_stderr
from latscope import samples


def measure(
    probe: str,
    tmp_path: Path,
    bench: str,
    *params: str,
    n: int = 300,
    warmup: int | None = 17,
    clock: str | None = None,
) -> samples.SampleFile:
    out = tmp_path / f"{bench}-{len(list(tmp_path.iterdir()))}.lss"
    args = [bench, "-n", str(n), "-o", str(out)]
    if warmup is not None:
        args += ["--warmup", str(warmup)]
    if clock:
        args += ["--clock", clock]
    for p in params:
        args += ["-p", p]
    r = run_probe(probe, *args)
    assert r.returncode == 0, r.stderr
    assert unexpected_stderr(r.stderr) == [], r.stderr
    sf = samples.load(out)
    # structure every benchmark shares
    h = sf.header
    assert h["benchmark"] == bench
    assert h["n"] == n
    if warmup is not None:
        assert h["warmup"] == warmup
    assert h["clock"]["overhead_ns"] > 0 and h["clock"]["resolution_ns"] > 0
    # the step (granularity) is measured apart from the read cost, never 0
    assert h["clock"]["step_ns"] > 0 and h["clock"]["resolution_ns"] == h["clock"]["step_ns"]
    assert h["inject_ns"] == 0
    # one segment: the probe ran the benchmark itself
    assert [w["n"] for w in h["workers"]] == [n]
    for role, u in h["workers"][0]["timed_rusage"].items():
        assert role in ("main", "initiator", "responder")
        assert set(u) == {"minflt", "majflt", "nvcsw", "nivcsw"} and min(u.values()) >= 0
    assert h["columns"][0]["name"] == "t_start"
    for key in ("probe", "params", "env", "started_utc", "finished_utc", "argv", "bench"):
        assert key in h, key
    assert h["env"]["kernel"]["release"] and h["env"]["cpu"]["model"]
    for c in sf.duration_columns:
        assert sf.ticks[c].shape == (n,)
        assert (sf.ticks[c] > 0).all(), c
    t = sf.ticks["t_start"]
    assert t[0] == 0 and (np.diff(t) > 0).all()
    assert not [p for p in tmp_path.iterdir() if ".tmp." in p.name or ".leftovers." in p.name]
    return sf


def test_catalogue_is_the_single_source(probe: str) -> None:
    r = run_probe(probe, "--list")
    assert r.returncode == 0
    cat = json.loads(r.stdout)
    names = {b["name"] for b in cat["benchmarks"]}
    assert {"syscall", "file", "pipe"} <= names
    for b in cat["benchmarks"]:
        assert b["summary"] and b["columns"] and "default_n" in b
        for p in b["params"]:
            assert {"name", "type", "default", "unit", "help"} <= p.keys()
            if p["type"] == "enum":
                assert p["default"] in p["choices"]
    file = next(b for b in cat["benchmarks"] if b["name"] == "file")
    cache = next(p for p in file["params"] if p["name"] == "cache")
    assert cache["needs_root_when"] == "drop"
    assert {c["name"] for c in cat["clocks"]} == {"tsc", "mono_raw", "mono"}


@pytest.mark.parametrize("op", ["getppid", "read0"])
@pytest.mark.parametrize("clock", ["mono_raw", "mono", None])
def test_syscall(probe: str, tmp_path: Path, op: str, clock: str | None) -> None:
    sf = measure(probe, tmp_path, "syscall", f"op={op}", "batch=100", "batches=10", clock=clock)
    assert sf.duration_columns == ["call"]
    b = sf.header["bench"]["batch"]
    assert b["calls_per_batch"] == 100 and len(b["per_call_ns"]) == 10
    assert b["per_call_median_ns"] > 0
    if clock:
        assert sf.header["clock"]["name"] == clock


def test_warmup_default_and_pinning(probe: str, tmp_path: Path) -> None:
    sf = measure(probe, tmp_path, "syscall", "cpu=0", n=500, warmup=None)
    assert sf.header["warmup"] == 50  # n/10 within 10..1000
    assert sf.header["params"]["cpu"] == 0


@pytest.mark.parametrize(
    "params,cols",
    [
        ((), ["open", "write", "read", "close"]),
        (("fsync=true",), ["open", "write", "fsync", "read", "close"]),
        (("open=existing", "order=rw"), ["open", "read", "write", "close"]),
        (("cache=fadvise", "size=64k"), ["open", "write", "read", "close"]),
    ],
)
def test_file_variants(
    probe: str, tmp_path: Path, params: tuple[str, ...], cols: list[str]
) -> None:
    d = tmp_path / "target"
    d.mkdir()
    sf = measure(probe, tmp_path, "file", f"dir={d}", *params, n=50, warmup=3)
    assert sf.duration_columns == cols
    fs = sf.header["env"]["filesystem"]
    assert fs["fstype"] and fs["mount_point"] and fs["path"] == os.path.realpath(d)
    assert list(d.iterdir()) == []  # the test file is removed


def test_file_default_dir_is_private_and_removed(
    probe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    sf = measure(probe, tmp_path, "file", n=20, warmup=2)
    assert sf.header["bench"]["dir_is_private_temporary"] is True
    assert list(tmpdir.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this system")
def test_file_on_tmpfs(probe: str, tmp_path: Path) -> None:
    sf = measure(probe, tmp_path, "file", "dir=/dev/shm", n=20, warmup=2)
    assert sf.header["env"]["filesystem"]["fstype"] == "tmpfs"
    # tmpfs has O_DIRECT since Linux 6.6; before, the probe must refuse it with one line
    r = run_probe(
        probe,
        "file",
        "-p",
        "dir=/dev/shm",
        "-p",
        "cache=direct",
        "-n",
        "5",
        "-o",
        str(tmp_path / "x.lss"),
    )
    if r.returncode == 3:
        assert "does not support O_DIRECT" in r.stderr
        assert not (tmp_path / "x.lss").exists()
    else:
        assert r.returncode == 0, r.stderr
        samples.load(tmp_path / "x.lss")


def test_direct_needs_aligned_size(probe: str, tmp_path: Path) -> None:
    bad(
        probe,
        tmp_path,
        "file",
        "-p",
        "cache=direct",
        "-p",
        "size=1000",
        "-n",
        "5",
        words="multiple of 4096",
    )


def test_file_direct_on_a_disk_filesystem(probe: str, tmp_path: Path) -> None:
    d = tmp_path / "direct"
    d.mkdir()
    out = tmp_path / "d.lss"
    r = run_probe(probe, "file", "-p", f"dir={d}", "-p", "cache=direct", "-n", "20", "-o", str(out))
    if r.returncode == 3:  # the filesystem under tmp_path has no O_DIRECT: said clearly
        assert "O_DIRECT" in r.stderr and len(r.stderr.strip().splitlines()) == 1
        pytest.skip(f"no O_DIRECT under {tmp_path} (exit 3 with one line checked)")
    assert r.returncode == 0, r.stderr
    assert samples.load(out).header["params"]["cache"] == "direct"


@pytest.mark.skipif(
    not is_root,
    reason="cache=drop needs root; the non-root path is tested in test_drop_without_root",
)
def test_file_drop_as_root(probe: str, tmp_path: Path) -> None:
    # two iterations, no warm-up: each drops the whole machine's page cache
    sf = measure(probe, tmp_path, "file", "cache=drop", n=2, warmup=0)
    assert sf.header["params"]["cache"] == "drop"


@pytest.mark.parametrize("mode", ["processes", "threads"])
@pytest.mark.parametrize("cpus", ["0,0", "0,1", "none"])
def test_pipe(probe: str, tmp_path: Path, mode: str, cpus: str) -> None:
    if cpus == "0,1" and (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU only")
    sf = measure(probe, tmp_path, "pipe", f"mode={mode}", f"cpus={cpus}", n=500)
    assert sf.duration_columns == ["rtt", "oneway"]
    b = sf.header["bench"]
    assert b["mode"] == mode and b["mechanism"] == "pipe"
    assert b["placement"] == {"0,0": "same_cpu", "0,1": "different_cpus", "none": "unpinned"}[cpus]
    rtt, one = sf.ns("rtt"), sf.ns("oneway")
    # one-way is part of the round trip (same clock on both sides)
    assert np.median(one) < np.median(rtt)
    kinds = {c["name"]: c.get("latency") for c in sf.header["columns"]}
    assert kinds["rtt"] == "round_trip" and kinds["oneway"] == "one_way_shared_clock"


# ------------------------------------------------------------------------------ bad input


def bad(probe: str, tmp_path: Path, *args: str, code: int = 2, words: str = "") -> str:
    out = tmp_path / "out.lss"
    before = set(tmp_path.iterdir())
    r = run_probe(probe, *args, "-o", str(out))
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("latscope-probe: error: ")
    assert words in lines[0]
    assert set(tmp_path.iterdir()) == before  # nothing left behind
    return lines[0]


def test_bad_benchmark(probe: str, tmp_path: Path) -> None:
    bad(probe, tmp_path, "sycsall", words="unknown benchmark 'sycsall'")


def test_bad_parameter(probe: str, tmp_path: Path) -> None:
    bad(probe, tmp_path, "file", "-p", "colour=red", words="no parameter 'colour'")
    bad(probe, tmp_path, "file", "-p", "cache=tepid", words="choose one of")
    bad(probe, tmp_path, "file", "-p", "size=-3", words="size")


@pytest.mark.parametrize("n", ["0", "-5", "1000000000000", "ten"])
def test_bad_n(probe: str, tmp_path: Path, n: str) -> None:
    bad(probe, tmp_path, "syscall", "-n", n, words="-n")


def test_missing_dir(probe: str, tmp_path: Path) -> None:
    bad(
        probe,
        tmp_path,
        "file",
        "-p",
        f"dir={tmp_path}/nope",
        "-n",
        "5",
        words="No such file or directory",
    )


def test_readonly_dir(probe: str, tmp_path: Path) -> None:
    d = tmp_path / "ro"
    d.mkdir()
    if is_root:
        if shutil.which("mount") is None:
            pytest.skip("no mount command")
        m = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "none", str(d)], capture_output=True
        )
        if m.returncode != 0:
            pytest.skip("cannot mount a read-only tmpfs here")
        try:
            line = bad(probe, tmp_path, "file", "-p", f"dir={d}", "-n", "5", code=3)
        finally:
            subprocess.run(["umount", str(d)])
    else:
        d.chmod(0o555)
        line = bad(probe, tmp_path, "file", "-p", f"dir={d}", "-n", "5", code=2)
    assert "not writable" in line


def test_symlink_instead_of_test_file(probe: str, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (d / "t.dat").symlink_to(victim)
    bad(
        probe,
        tmp_path,
        "file",
        "-p",
        f"dir={d}",
        "-p",
        "file=t.dat",
        "-n",
        "5",
        words="symbolic link",
    )
    assert victim.read_text() == "precious"
    (d / "t.dat").unlink()
    (d / "t.dat").write_text("mine")
    bad(
        probe,
        tmp_path,
        "file",
        "-p",
        f"dir={d}",
        "-p",
        "file=t.dat",
        "-n",
        "5",
        words="will not overwrite",
    )
    assert (d / "t.dat").read_text() == "mine"


def test_drop_without_root(probe: str, tmp_path: Path) -> None:
    if is_root:
        # a directory an unprivileged user can reach (pytest's own is private to root)
        tmp_path = Path(tempfile.mkdtemp(prefix="latscope-test-", dir="/tmp"))
        tmp_path.chmod(0o777)
        # a copy the unprivileged user can execute wherever the build lives
        bindir = Path(tempfile.mkdtemp(prefix="latscope-bin-", dir="/tmp"))
        bindir.chmod(0o755)
        probe = shutil.copy(probe, bindir / "latscope-probe")
    args = [probe, "file", "-p", "cache=drop", "-n", "3", "-o", str(tmp_path / "x.lss")]
    if is_root:
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv is needed to drop root for this test")
        args = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *args]
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 3, r.stderr
    assert "needs root" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
    if is_root:
        tmp_path.rmdir()
        shutil.rmtree(bindir)


def test_cpu_that_does_not_exist(probe: str, tmp_path: Path) -> None:
    bad(probe, tmp_path, "pipe", "-p", "cpus=0,4000", "-n", "5", words="CPU 4000 does not exist")
    bad(probe, tmp_path, "syscall", "-p", "cpu=999", "-n", "5", words="CPU 999")


def test_output_exists_is_never_overwritten(probe: str, tmp_path: Path) -> None:
    out = tmp_path / "out.lss"
    out.write_text("keep")
    r = run_probe(probe, "syscall", "-n", "5", "-o", str(out))
    assert r.returncode == 2 and "exists" in r.stderr
    assert out.read_text() == "keep"


def test_unknown_option_and_clock(probe: str, tmp_path: Path) -> None:
    bad(probe, tmp_path, "syscall", "--frobnicate", "1", words="unknown option")
    bad(probe, tmp_path, "syscall", "--clock", "sundial", words="--clock")


def test_clocks_step_and_read_cost(probe: str) -> None:
    r = run_probe(probe, "--clocks")
    assert r.returncode == 0, r.stderr
    for c in json.loads(r.stdout):
        assert c["step_ns"] > 0 and c["overhead_ns"] > 0
        assert c["resolution_ns"] == c["step_ns"]


@pytest.mark.parametrize("bench,params", [("syscall", []), ("file", ["size=512"])])
def test_workers_segments(probe: str, tmp_path: Path, bench: str, params: list[str]) -> None:
    """--workers 4 over 301 iterations: 76, 75, 75, 75, each with its own warm-up."""
    out = tmp_path / "w.lss"
    args = [bench, "-n", "301", "--warmup", "5", "--workers", "4", "-o", str(out)]
    for p in params:
        args += ["-p", p]
    r = run_probe(probe, *args)
    assert r.returncode == 0, r.stderr
    sf = samples.load(out)
    ws = sf.header["workers"]
    assert [w["n"] for w in ws] == [76, 75, 75, 75] and sf.header["n"] == 301
    assert all(w["warmup"] == 5 and set(w["timed_rusage"]) == {"main"} for w in ws)
    assert (np.diff(sf.ticks["t_start"]) > 0).all()
    assert not list(tmp_path.glob("*.tmp.*"))


# The injected wait of these tests: the probe calibrates it before the run, in regions that
# hold it (2,001 of them per step of a bisection over its length), so the calibration's time
# grows with it: 5 µs took a quarter of the CPU time 20 µs did, and is still several times
# what a system call or a pipe's round trip takes without it.
INJECT_NS = 5000


def test_inject_ns(probe: str, tmp_path: Path) -> None:
    """An injected busy-wait is recorded and every sample holds at least (about) that long."""
    out = tmp_path / "i.lss"
    r = run_probe(probe, "syscall", "-n", "200", "--inject-ns", str(INJECT_NS), "-o", str(out))
    assert r.returncode == 0, r.stderr
    sf = samples.load(out)
    assert sf.header["inject_ns"] == INJECT_NS
    # the spin cannot end before the clock has advanced by ~N (the calibration takes off at
    # most its own reads, well under 10%)
    assert (sf.ns("call") > 0.9 * INJECT_NS).all()


@pytest.mark.parametrize("mode", ["processes", "threads"])
def test_inject_ns_is_the_responders_late_answer(probe: str, tmp_path: Path, mode: str) -> None:
    """In ping-pong the wait is the responder's, between its receive time and its answer:
    every round trip holds it, the one-way time (initiator's start to the responder's receive)
    does not."""
    out = tmp_path / "pp.lss"
    r = run_probe(
        probe, "pipe", "-p", "cpus=0,0", "-p", f"mode={mode}", "-n", "300",
        "--inject-ns", str(INJECT_NS), "-o", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    sf = samples.load(out)
    assert sf.header["inject_ns"] == INJECT_NS
    rtt, oneway = sf.ns("rtt"), sf.ns("oneway")
    assert (rtt > 0.9 * INJECT_NS).all()
    assert (rtt - oneway > 0.9 * INJECT_NS).mean() > 0.9, np.median(rtt - oneway)


# ------------------------------------------------------------------------------ --check


def check(probe: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_probe(probe, args[0], "--check", *args[1:])


def test_check_prints_the_resolved_run(probe: str, tmp_path: Path) -> None:
    """--check fills in the defaults and the rules a run would apply, and measures nothing."""
    r = check(probe, "spin", "-p", "cpus=0,0")
    assert r.returncode == 0 and r.stderr == ""
    got = json.loads(r.stdout)
    assert got["benchmark"] == "spin" and got["given"] == ["cpus"]
    assert got["params"] == {"mode": "processes", "cpus": "0,0"}
    assert got["n"] == 500 and got["workers"] == 1  # the rule for spinning on one CPU
    r = check(probe, "file", "-p", "size=64k", "-p", "fsync=yes", "-n", "1000", "--workers", "auto")
    got = json.loads(r.stdout)
    assert got["params"]["size"] == 65536 and got["params"]["fsync"] is True
    assert got["params"]["cache"] == "warm" and got["params"]["cpu"] == -1
    assert got["n"] == 1000 and got["workers"] == 5 and got["warmup"] == 20
    assert got["clock"] in ("tsc", "mono_raw")
    assert list(tmp_path.iterdir()) == []


def test_check_header_params_agree(probe: str, tmp_path: Path) -> None:
    """The parameters --check prints are those the sample file's header records."""
    sf = measure(probe, tmp_path, "syscall", "op=read0", "batch=10", "batches=5", n=50)
    r = check(probe, "syscall", "-p", "op=read0", "-p", "batch=10", "-p", "batches=5")
    assert json.loads(r.stdout)["params"] == sf.header["params"]


@pytest.mark.parametrize(
    "args,words",
    [
        (("yield", "-p", "cpus=0,1"), "needs both parties on one CPU"),
        (("file", "-p", "order=rw"), "order=rw needs open=existing"),
        (("file", "-p", "colour=red"), "no parameter 'colour'"),
        (("file", "-p", "dir=/nonexistent-latscope"), "dir=/nonexistent-latscope"),
        (("pipe", "-p", "cpus=0,4000"), "CPU 4000 does not exist"),
        (("socketpair", "-p", "type=dgram", "-p", "size=100000"), "at most 65536 bytes"),
        (("syscall", "-n", "0"), "-n 0"),
        (("syscall", "--clock", "sundial"), "--clock"),
    ],
)
def test_check_refuses_as_a_run_does(
    probe: str, tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    """--check refuses with the run's own line and exit code, and nothing on stdout."""
    r = check(probe, *args)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    line = bad(probe, tmp_path, *args, words=words)
    assert r.stderr.strip() == line


def test_a_killed_probes_leftovers_go_with_the_next_run_in_its_directory(
    probe: str, tmp_path: Path
) -> None:
    """A bare probe killed outright (SIGKILL: no clean-up runs) leaves its record, its output
    temporary and its System V semaphore; the next probe run with its output in that
    directory removes all three, and keeps its own sample file."""
    import signal
    import time

    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    # two million round trips: seconds, never reached before the kill (the probe touches the
    # pages of its sample arrays first: 20 million were half a gigabyte)
    p = subprocess.Popen(
        [probe, "sysv_sem", "-n", "2000000", "-o", str(tmp_path / "x.lss")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 30
    record: list[Path] = []
    while time.monotonic() < deadline:
        record = list(tmp_path.glob("x.lss.leftovers.*"))
        if record and "sysv_sem" in record[0].read_text():
            break
        time.sleep(0.05)
    assert record, "the probe recorded nothing"
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    time.sleep(0.2)  # its workers die with it (PR_SET_PDEATHSIG)
    line = next(ln for ln in record[0].read_text().splitlines() if ln.startswith("sysv_sem"))
    sem = int(line.split()[4])
    assert list(tmp_path.glob("x.lss.tmp.*"))
    assert sem in _semaphores()
    r = run_probe(probe, "syscall", "-n", "50", "-o", str(tmp_path / "y.lss"))
    assert r.returncode == 0, r.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["y.lss"]
    assert sem not in _semaphores()


def _semaphores() -> set[int]:
    ids = set()
    for ln in Path("/proc/sysvipc/sem").read_text().splitlines()[1:]:
        f = ln.split()
        if len(f) > 1:
            ids.add(int(f[1]))
    return ids
