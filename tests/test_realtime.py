"""Real-time runs, as rt-tests make them: --sched fifo:P|rr:P and --mlock put the measuring
threads and their peers under a real-time policy with their memory locked; the run records
it and every view says it; without the right, one line and exit 3; a busy-waiting pair on one
CPU, which a real-time policy would never hand over, is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import _installed_probe, is_root, run_probe
from latscope import samples

needs_root = pytest.mark.skipif(not is_root, reason="real-time scheduling needs root here")


@pytest.fixture(scope="module")
def plain_probe() -> str:
    """The installed probe, not the sanitizer build: AddressSanitizer intercepts mlockall and
    makes it a no-op (it could not lock its shadow memory), so only a plain build locks."""
    return _installed_probe()


def _policies(pid_prefix: str) -> set[tuple[int, int, bool]]:
    """(policy, rt priority, memory locked) of every thread of every latscope-probe process
    whose command line starts with the probe's path (field 41 of /proc/PID/task/TID/stat is
    the policy, 40 the rt priority)."""
    seen = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            if cmd != pid_prefix:
                continue
            locked = any(
                ln.startswith("VmLck:") and int(ln.split()[1]) > 0
                for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
            )
            for tid in os.listdir(f"/proc/{pid}/task"):
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()  # from field 3 on
                seen.add((int(fields[41 - 3]), int(fields[40 - 3]), locked))
        except (OSError, ValueError, IndexError):
            continue
    return seen


@needs_root
def test_the_measuring_processes_run_real_time_with_locked_memory(
    plain_probe: str, tmp_path: Path
) -> None:
    """A pipe run between two processes under --sched rr:7 --mlock: while it runs, its worker
    and the peer it forked are SCHED_RR (2) at priority 7 with their memory locked (the probe
    that supervises them is not); the header records it."""
    probe = plain_probe
    out = tmp_path / "rt.lss"
    args = [probe, "pipe", "-p", "cpus=0,1", "-p", "mode=processes", "-n", "400000"]
    p = subprocess.Popen(
        [*args, "--workers", "2", "--sched", "rr:7", "--mlock", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[tuple[int, int, bool]] = set()
    deadline = time.monotonic() + 20
    while p.poll() is None and time.monotonic() < deadline:
        seen |= _policies(probe)
        if sum(1 for s in seen if s == (2, 7, True)) and (0, 0, False) in seen:
            break
        time.sleep(0.02)
    p.kill() if p.poll() is None else None
    p.wait(timeout=30)
    assert (2, 7, True) in seen, seen  # the measuring threads
    assert (0, 0, False) in seen, seen  # the supervising probe: as it was
    if out.exists():
        h = samples.read(out).header
        assert h["realtime"] == {"policy": "rr", "priority": 7, "mlock": True}


@needs_root
def test_a_real_time_run_records_and_says_it(cli, store: Path) -> None:
    r = cli("run", "pipe", "-p", "cpus=0,1", "-n", "300", "--sched", "fifo:50", "--mlock")
    assert r.returncode == 0, r.stderr
    assert "sched=fifo:50 mlock" in r.stdout
    r = cli("show", "last")
    assert "sched=fifo:50 mlock" in r.stdout


def test_bad_real_time_settings_are_one_line(probe: str, cli, store: Path, tmp_path: Path) -> None:
    for value, words in (
        ("fifo:0", "between 1 and 99"),
        ("fifo:100", "between 1 and 99"),
        ("idle:3", "give fifo:PRIORITY or rr:PRIORITY"),
        ("fifo", "give the priority after the colon"),
    ):
        r = run_probe(probe, "syscall", "-n", "5", "--sched", value, "-o", str(tmp_path / "x"))
        assert r.returncode == 2 and words in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    # spinning parties on one CPU would never hand over: the probe refuses, the lab says it
    r = run_probe(probe, "spin", "-p", "cpus=0,0", "--sched", "fifo:10", "--check")
    assert r.returncode == 2 and "pin them to two CPUs" in r.stderr
    r = cli("run", "spin", "-p", "cpus=0,0", "--sched", "fifo:10")
    assert r.returncode == 2 and "pin them to two CPUs" in r.stderr
    r = cli("run", "py_pipe", "-n", "10", "--mlock")
    assert r.returncode == 2 and "Python engine" in r.stderr
    r = cli("run", "futex", "--sweep", "cpus", "--mlock")
    assert r.returncode == 2 and "--sweep does not go with" in r.stderr
    assert not list(tmp_path.glob("x*"))  # the probe made nothing
    assert not list(store.glob("runs/*"))  # the lab kept nothing


def test_without_the_right_it_says_which_and_exits_3(plain_probe: str) -> None:
    if not is_root:
        pytest.skip("run as root: this test drops to uid 65534 itself")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to drop root for this test")
    out = Path(tempfile.mkdtemp(prefix="latscope-test-", dir="/tmp"))
    out.chmod(0o777)
    bindir = Path(tempfile.mkdtemp(prefix="latscope-bin-", dir="/tmp"))
    bindir.chmod(0o755)
    copy = shutil.copy(plain_probe, bindir / "latscope-probe")
    try:
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
        for opt, words in (
            (["--sched", "fifo:10"], "RLIMIT_RTPRIO"),
            (["--mlock"], "RLIMIT_MEMLOCK"),
        ):
            r = subprocess.run(
                ["prlimit", "--rtprio=0", "--memlock=65536", *drop, copy, "syscall"]
                + ["-n", "50", *opt, "-o", str(out / "x.lss")],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert r.returncode == 3, r.stderr
            assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert list(out.iterdir()) == []
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(bindir, ignore_errors=True)


def test_an_arm_names_its_real_time_policy_and_bad_ones_are_one_line() -> None:
    from latscope.errors import BadInput
    from latscope.measure.arms import parse_arm

    a = parse_arm("pipe cpus=0,0 sched=fifo:80 mlock=true")
    assert (a.params, a.sched, a.mlock, a.realtime) == ({"cpus": "0,0"}, "fifo:80", True, True)
    assert a.word == "pipe cpus=0,0 sched=fifo:80 mlock=true"
    assert not parse_arm("pipe cpus=0,0 mlock=no").realtime
    for bad, says in (
        ("pipe sched=fifo", "fifo:P or rr:P"),
        ("pipe sched=fifo:100", "fifo:P or rr:P"),
        ("pipe sched=batch:5", "fifo:P or rr:P"),
        ("pipe mlock=maybe", "true or false"),
        ("pipe sched=rr:5 sched=rr:6", "given twice"),
        ("pipe mlock=1 mlock=0", "given twice"),
    ):
        with pytest.raises(BadInput) as e:
            parse_arm(bad)
        assert says in e.value.message and "\n" not in e.value.message, bad


@needs_root
def test_ab_of_a_real_time_arm_against_a_normal_one(cli, store: Path, short_processes) -> None:
    """The scheduler's share, measured with `ab`: the real-time arm runs as processes of its
    own under SCHED_FIFO (its pilot's header says so), the normal one as usual, in shuffled
    rounds; the comparison names both."""
    import json

    from latscope.measure.runner import load

    # on the last CPU: the other tests pin their parties to CPU 0, and a real-time pair there
    # left them 5% of it for seconds (a remote test's peer stalled for 2 s)
    cpu = max(os.sched_getaffinity(0))
    pin = f"pipe cpus={cpu},{cpu}"
    r = cli("ab", pin, f"{pin} sched=fifo:40", "--time", "0.2", "--json")  # 12 rounds at least
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)
    assert f["mode"] == "processes" and "scheduling policy" in f["apart"]
    run = load(f["run_id"], store)
    a, b = run.arms
    assert a["sched"] is None and b["sched"] == "fifo:40"
    assert (a.get("realtime") or {}).get("policy") in (None, "other")
    assert (b.get("realtime") or {}).get("policy") == "fifo"
    assert b["word"] == f"{pin} sched=fifo:40"
    assert any(c["arm"] == "B" and c["column"] == "rtt" for c in f["comparisons"])
