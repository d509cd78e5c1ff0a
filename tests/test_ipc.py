"""The communication mechanisms of latscope-probe (docs/mechanisms.md).

Every mechanism runs in every mode it supports, on one CPU and on two, and writes a complete
sample file; what cannot run here is asserted to say so (exit 3, one line).  A peer killed
mid-run, a stalled peer and Ctrl-C end the run at once and leave nothing behind: no process,
no System V object, no POSIX queue, no /dev/shm entry, no FIFO, socket file or temporary
directory, no network namespace or link, and no sample file.

The probe under test: $LATSCOPE_SAN_PROBE (the Makefile's ASan/UBSan build), else
$LATSCOPE_PROBE, else the installed one (meson built it with the wheel's options).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import (
    _installed_probe,
    children,
    probe_error_line,
    sysv_objects,
    unexpected_stderr,
)
from latscope import samples

REPO = Path(__file__).resolve().parent.parent
IS_ROOT = os.geteuid() == 0
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2 and {0, 1} <= os.sched_getaffinity(0)

# A run's round trips: what check_run asserts of the file (every sample, the medians) holds
# for 50 as for 200, and each costs a peer's wake-up (a message of 1 MB a millisecond each way
# under AddressSanitizer); the page faults' own test runs 2,000, which cross pages.
N = 50
WARMUP = 20


# ------------------------------------------------------------------------- the probe under test


def _probe_under_test() -> str:
    for var in ("LATSCOPE_SAN_PROBE", "LATSCOPE_PROBE"):
        p = os.environ.get(var)
        if p:
            assert os.access(p, os.X_OK), f"${var}={p} is not an executable"
            return p
    return _installed_probe()


def _env(tmpdir: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


def _list(probe: str) -> dict:
    r = subprocess.run([probe, "--list"], capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# The mechanisms, from the catalogue of the probe under test (read when the tests are collected,
# so that every mechanism it has is run): name -> (threads, processes, blocking), and where
# its two parties may be placed.
PROBE = _probe_under_test()
CATALOGUE = _list(PROBE)
MECHS: dict[str, tuple[bool, bool, bool]] = {
    b["name"]: (m["threads"], m["processes"], m["blocking"])
    for b in CATALOGUE["benchmarks"]
    if (m := b.get("mechanism"))
}
PLACEMENTS = {
    b["name"]: set(b["mechanism"]["placements"])
    for b in CATALOGUE["benchmarks"]
    if b.get("mechanism")
}
ZMQ = {b["name"] for b in CATALOGUE["benchmarks"] if b.get("needs") == "libzmq"}


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def ipc_probe() -> str:
    return PROBE


@pytest.fixture(scope="session")
def catalogue() -> dict[str, dict]:
    return {b["name"]: b for b in CATALOGUE["benchmarks"]}


@pytest.fixture()
def tmpdir_env() -> Iterator[Path]:
    """A short private TMPDIR for the probe's own temporary objects (socket paths are
    limited to 107 bytes, pytest's directories are long)."""
    d = Path(tempfile.mkdtemp(prefix="ls-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _unavailable(catalogue: dict[str, dict], name: str) -> str | None:
    b = catalogue[name]
    return None if b["available"] else b["unavailable_reason"]


# ------------------------------------------------------------------------------ the state


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _ours() -> set[int]:
    """This test process and every process below it (a probe's leftovers are reparented here:
    `Reaper` makes this process their subreaper)."""
    out, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children(pid)
    return out


def _netns_inodes(pids: set[int] | None = None) -> set[str]:
    """Every network namespace some process holds (its own, or an open descriptor); with
    ``pids``, those these processes hold (other tests, in other workers, make namespaces of
    their own: the fleet's hosts, a suite's tcp_netns)."""
    out = set()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or (pids is not None and int(p.name) not in pids):
            continue
        try:
            out.add(os.readlink(p / "ns/net"))
            for fd in (p / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("net:["):
                    out.add(link)
        except OSError:
            pass
    return out


def _links() -> set[str]:
    """The network interfaces of this process's namespace, as `ip link` lists them (read from
    /proc/net/dev: no process started, four of them a test before)."""
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    return {line.split(":", 1)[0].strip() for line in lines}


def _netns_names() -> set[str]:
    """The named network namespaces, as `ip netns list` lists them (its directory)."""
    d = Path("/var/run/netns")
    return set(os.listdir(d)) if d.is_dir() else set()


def _named_for(name: str, pids: set[int]) -> bool:
    """Whether a name in a namespace every process shares (/dev/shm, /dev/mqueue, ip netns,
    links) can be this test's probe's: the probe names its objects latscope-<pid>-... (links
    ls<pid>...) after its own pid; other names, or another pid's, are some other process's."""
    m = re.search(r"latscope-(\d+)", name) or re.fullmatch(r"ls(\d+)h?[ab]", name)
    if m:
        return int(m.group(1)) in pids
    return "latscope" in name


class State:
    """What a probe run could leave behind, taken before and compared after. Only what can be
    this test's counts (other processes, another latscope among them, may come and go
    meanwhile): names made from the probe's pid (`_named_for`), and System V objects that no
    live process but the test's own has used."""

    def __init__(self, tmpdir: Path, mqdir: Path | None) -> None:
        self.tmpdir = tmpdir
        self.mqdir = mqdir
        self.shm = set(os.listdir("/dev/shm")) if Path("/dev/shm").is_dir() else set()
        self.mq = set(os.listdir(mqdir)) if mqdir else set()
        self.sysv = set(sysv_objects())
        self.net = _netns_names()
        self.links = _links()

    def _sysv_left(self, pids: set[int]) -> set[tuple[str, str]]:
        return {
            k
            for k, users in sysv_objects().items()
            if k not in self.sysv and not any(_alive(u) and u not in pids for u in users)
        }

    def assert_clean(self, probe_pid: int, *peers: int) -> None:
        """`probe_pid`: the probe's pid (its objects are named after it); `peers`: the pids of
        its peers where the test knows them."""
        pids = {probe_pid, *peers}

        def new(names: set[str], before: set[str]) -> set[str]:
            return {x for x in names - before if _named_for(x, pids)}

        assert list(self.tmpdir.iterdir()) == [], "temporary files or directories left"
        if Path("/dev/shm").is_dir():
            left = new(set(os.listdir("/dev/shm")), self.shm)
            assert not left, f"/dev/shm entries left: {left}"
        if self.mqdir:
            left = new(set(os.listdir(self.mqdir)), self.mq)
            assert not left, f"POSIX message queues left: {left}"
        no_queue_named(f"/latscope-{probe_pid}-posix_mq-a")
        no_queue_named(f"/latscope-{probe_pid}-posix_mq-b")
        sysv = self._sysv_left(pids)
        if sysv:  # one that another process has only just made has no users yet: look again
            time.sleep(0.5)
            sysv &= self._sysv_left(pids)
        assert not sysv, f"System V IPC objects left (ipcs): {sysv}"
        left = new(_netns_names(), self.net)
        assert not left, f"network namespaces left (ip netns list): {left}"
        left = new(_links(), self.links)
        assert not left, f"links left: {left}"


def no_queue_named(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "mq_unlink"):
        return
    rc = libc.mq_unlink(name.encode())
    assert rc == -1 and ctypes.get_errno() == 2, f"POSIX message queue {name} was left behind"


class Reaper:
    """Makes this process the subreaper of the probe's descendants for one test: a peer the
    probe failed to reap would stay here as a zombie (instead of being reaped by init)."""

    PR_SET_CHILD_SUBREAPER = 36

    def __enter__(self) -> Reaper:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.prctl(self.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        return self

    def orphans(self) -> list[int]:
        return children(os.getpid())

    def __exit__(self, *exc: object) -> None:
        self.libc.prctl(self.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid in self.orphans():  # do not leave any behind for the next test
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


# ------------------------------------------------------------------------------ catalogue


def test_catalogue(catalogue: dict[str, dict]) -> None:
    assert len(MECHS) >= 22 and {"pipe", "futex", "spin", "yield", "tcp_netns"} <= MECHS.keys()
    assert {"zmq_inproc", "zmq_ipc", "zmq_tcp"} == ZMQ
    for name, (threads, processes, _) in MECHS.items():
        b = catalogue[name]
        m = b["mechanism"]
        assert threads or processes
        assert b["kind"] == "ipc" and m["timed_region"]
        params = {p["name"]: p for p in b["params"]}
        assert {"mode", "cpus"} <= params.keys()
        if m["message_size"]:
            assert params["size"]["max"] == m["max_message_bytes"]
        else:
            assert "size" not in params
        if name in ZMQ and not b["available"]:
            assert b["unavailable_reason"].startswith("not built with ZeroMQ")
        # the lab's one-way estimate, as data: rtt / 2
        assert [(d["name"], d["from"], d["divide_by"]) for d in b["derived_columns"]] == [
            ("rtt/2", "rtt", 2)
        ]
        # the default placement is one the mechanism accepts
        cpus = params["cpus"]["default"]
        default = "unpinned" if cpus == "none" else "same_cpu"
        assert default in PLACEMENTS[name]
        assert PLACEMENTS[name] <= {"same_cpu", "different_cpus", "unpinned"}
        assert (PLACEMENTS[name] == {"same_cpu"}) == bool(m["placement_note"])
    assert PLACEMENTS["yield"] == {"same_cpu"}
    assert catalogue["tcp_netns"]["needs"] and "CAP_NET_ADMIN" in catalogue["tcp_netns"]["needs"]


def test_docs_describe_every_benchmark() -> None:
    """docs/mechanisms.md names every benchmark of the catalogue, and has a row for each
    mechanism that gives the modes the catalogue gives."""
    text = (REPO / "docs" / "mechanisms.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z0-9_]+)` \| ([^|]+) \|", text, re.M))
    for b in CATALOGUE["benchmarks"]:
        assert f"`{b['name']}`" in text, f"docs/mechanisms.md does not name {b['name']}"
    for name, (threads, processes, _) in MECHS.items():
        assert name in rows, f"docs/mechanisms.md has no row for the mechanism {name}"
        modes = {w.strip() for w in rows[name].split(",")}
        want = {mode for mode, ok in (("threads", threads), ("processes", processes)) if ok}
        assert modes == want, f"docs/mechanisms.md: {name} runs with {want}, not {modes}"
    assert set(rows) <= MECHS.keys(), "docs/mechanisms.md has a row for no mechanism"


# ------------------------------------------------------------------------------ runs


class Result:
    def __init__(self, pid: int, returncode: int, stderr: str) -> None:
        self.pid, self.returncode, self.stderr = pid, returncode, stderr


def run_probe(
    probe: str,
    out: Path,
    tmpdir: Path,
    bench: str,
    *params: str,
    n: int = N,
    warmup: int = WARMUP,
) -> Result:
    args = [probe, bench, "-n", str(n), "--warmup", str(warmup), "-o", str(out)]
    for p in params:
        args += ["-p", p]
    with subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(tmpdir)
    ) as p:
        _, err = p.communicate(timeout=120)
    return Result(p.pid, p.returncode, err)


def check_run(
    probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir: Path,
    mqdir: Path | None,
    bench: str,
    mode: str,
    cpus: str,
    *extra: str,
) -> samples.SampleFile:
    """Run `bench` and check its sample file and that nothing is left. Where it cannot run
    here (no ZeroMQ in this build; tcp_netns without root) the probe must say so (exit 3, one
    line, no file), and the test is skipped with that reason."""
    out = tmp_path / "s.lss"
    before = State(tmpdir, mqdir)
    n, warmup = N, WARMUP
    if bench.startswith("spin") and cpus == "0,0":
        # spinning on one CPU: every hand-over waits for the scheduler (milliseconds), and
        # both spin meanwhile: 8 round trips and 2 to warm up show the file and the checks
        # below as N would
        n, warmup = 8, 2
    r = run_probe(
        probe, out, tmpdir, bench, f"mode={mode}", f"cpus={cpus}", *extra, n=n, warmup=warmup
    )
    why = _unavailable(catalogue, bench)
    if why:  # not built with ZeroMQ: said so, exit 3
        assert r.returncode == 3, r.stderr
        assert probe_error_line(r.stderr).endswith(why)
        assert not out.exists()
        pytest.skip(f"{bench} cannot run here: {why} (exit 3 with that line checked)")
    if bench == "tcp_netns" and r.returncode == 3 and not IS_ROOT:
        assert "CAP_NET_ADMIN" in probe_error_line(r.stderr)
        assert not out.exists()
        pytest.skip("tcp_netns needs CAP_NET_ADMIN (root) (exit 3 with that line checked)")
    assert r.returncode == 0, r.stderr
    assert unexpected_stderr(r.stderr) == [], r.stderr
    sf = samples.load(out)
    h = sf.header
    assert [c["name"] for c in h["columns"]] == ["t_start", "rtt", "oneway"]
    assert h["benchmark"] == bench and h["n"] == n and h["warmup"] == warmup
    for c in ("t_start", "rtt", "oneway"):
        assert sf.ticks[c].shape == (n,)
    assert (sf.ticks["rtt"] > 0).all()
    assert (np.diff(sf.ticks["t_start"]) > 0).all()
    # the one-way time is part of the round trip, on the same clock (across two CPUs only as
    # well as their clocks agree: docs/mechanisms.md)
    if cpus == "0,0":
        assert (sf.ticks["oneway"] > 0).all()
    assert np.median(sf.ns("oneway")) < np.median(sf.ns("rtt"))
    b = h["bench"]
    assert b["mechanism"] == bench and b["mode"] == mode
    assert b["cpus"] == [int(x) for x in cpus.split(",")]
    assert b["placement"] == ("same_cpu" if cpus == "0,0" else "different_cpus")
    assert b["timed_region"] == catalogue[bench]["mechanism"]["timed_region"]
    cols = {c["name"]: c for c in h["columns"]}
    assert cols["rtt"]["latency"] == "round_trip"
    assert cols["oneway"]["latency"] == "one_way_shared_clock"
    cs = cols["rtt"]["context_switches"]
    if b["blocking"]:
        assert cs >= 2
    else:
        assert cs == (2 if cpus == "0,0" else 0)
    before.assert_clean(r.pid)
    return sf


def _matrix() -> list[tuple[str, str, str]]:
    out = []
    for name, (threads, processes, _) in MECHS.items():
        for mode, ok in (("threads", threads), ("processes", processes)):
            for cpus, placement in (("0,0", "same_cpu"), ("0,1", "different_cpus")):
                if not ok or placement not in PLACEMENTS[name]:
                    continue
                out.append((name, mode, cpus))
    return out


@pytest.mark.parametrize("bench,mode,cpus", _matrix())
def test_mechanism(
    ipc_probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir_env: Path,
    mqueue_dir: Path | None,
    bench: str,
    mode: str,
    cpus: str,
) -> None:
    if cpus == "0,1" and not TWO_CPUS:
        pytest.fail("this test needs CPUs 0 and 1 (placement on two CPUs)")
    check_run(ipc_probe, catalogue, tmp_path, tmpdir_env, mqueue_dir, bench, mode, cpus)


@pytest.mark.parametrize(
    "bench,mode,extra",
    [
        ("socketpair", "processes", ("type=dgram",)),
        ("socketpair", "threads", ("type=seqpacket", "size=4096")),
        ("tcp_netns", "processes", ("path=bridge",)),
        ("tcp_netns", "threads", ("path=bridge", "size=64k")),
        ("zmq_inproc", "threads", ("pattern=reqrep",)),
        ("zmq_ipc", "processes", ("pattern=reqrep", "size=1000")),
        ("zmq_tcp", "processes", ("pattern=reqrep",)),
        # report 002's publish/subscribe: a PUB -> SUB channel each way
        ("zmq_inproc", "threads", ("pattern=pubsub",)),
        ("zmq_ipc", "processes", ("pattern=pubsub", "size=1000")),
        ("zmq_tcp", "threads", ("pattern=pubsub",)),
        ("pipe", "processes", ("size=1M",)),
        ("tcp", "threads", ("size=100000",)),
        ("udp", "processes", ("size=65507",)),
        ("unix_dgram", "threads", ("size=65536",)),
        ("posix_mq", "processes", ("size=8192",)),
        ("sysv_mq", "threads", ("size=8192",)),
    ],
)
def test_parameters(
    ipc_probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir_env: Path,
    mqueue_dir: Path | None,
    bench: str,
    mode: str,
    extra: tuple[str, ...],
) -> None:
    sf = check_run(
        ipc_probe, catalogue, tmp_path, tmpdir_env, mqueue_dir, bench, mode, "0,1", *extra
    )
    for e in extra:
        k, v = e.split("=")
        got = sf.header["params"][k]
        if k == "size":
            assert got == sf.header["bench"]["message_bytes"]
        else:
            assert got == v


@pytest.mark.parametrize(
    "bench,params,words",
    [
        ("yield", ("cpus=0,1",), "needs both parties on one CPU"),
        ("yield", ("cpus=none",), "needs both parties on one CPU"),
        ("posix_mq", ("size=8193",), "at most 8192 bytes"),
        ("udp", ("size=65508",), "at most 65507 bytes"),
        ("socketpair", ("type=dgram", "size=100000"), "at most 65536 bytes"),
        ("zmq_inproc", ("mode=processes",), "between threads only"),
        ("futex", ("size=8",), "no parameter 'size'"),
        ("tcp_netns", ("path=wormhole",), "choose one of veth, bridge"),
    ],
)
def test_refused(
    ipc_probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir_env: Path,
    bench: str,
    params: tuple[str, ...],
    words: str,
) -> None:
    out = tmp_path / "s.lss"
    r = run_probe(ipc_probe, out, tmpdir_env, bench, *params)
    why = _unavailable(catalogue, bench)
    if why and "no parameter" not in words and "choose one" not in words:
        assert r.returncode == 3 and probe_error_line(r.stderr).endswith(why)
    else:
        assert r.returncode == 2, r.stderr
        assert words in probe_error_line(r.stderr)
    assert not out.exists()
    assert list(tmpdir_env.iterdir()) == []


def test_netns_needs_privilege(ipc_probe: str, tmp_path: Path) -> None:
    """Without CAP_NET_ADMIN tcp_netns exits 3 and says what it needs."""
    if IS_ROOT:
        if shutil.which("setpriv") is None:
            pytest.fail("setpriv (util-linux) is needed to drop root for this test")
        d = Path(tempfile.mkdtemp(prefix="ls-np-"))
        d.chmod(0o777)
        probe = shutil.copy(ipc_probe, d / "latscope-probe")
        os.chmod(probe, 0o755)
        args = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", probe]
    else:
        d = Path(tempfile.mkdtemp(prefix="ls-np-"))
        args = [ipc_probe]
    try:
        out = d / "x.lss"
        r = subprocess.run(
            [*args, "tcp_netns", "-n", "10", "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(d),
        )
        assert r.returncode == 3, r.stderr
        line = probe_error_line(r.stderr)
        assert "CAP_NET_ADMIN" in line and "root" in line
        assert not out.exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------------------ a clean timed loop


@pytest.fixture(scope="session")
def plain_probe() -> str:
    """A probe built without sanitizers, for counting page faults: AddressSanitizer's shadow
    memory and allocator fault on their own, inside the timed loop, which says nothing about
    the probe's own page touching.  $LATSCOPE_PROBE where given, else the installed one: meson
    built it from these sources with the wheel's options when the package was installed (a
    build of its own here cost seconds of compiling for the same binary)."""
    return _installed_probe()


def _fault_matrix() -> list[tuple[str, str]]:
    return [
        (name, mode)
        for name, (threads, processes, _) in MECHS.items()
        for mode, ok in (("threads", threads), ("processes", processes))
        if ok
    ]


@pytest.mark.parametrize("bench,mode", _fault_matrix())
def test_timed_loop_takes_no_page_faults(
    plain_probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir_env: Path,
    bench: str,
    mode: str,
) -> None:
    """Each side touches every page it writes after the fork or thread start, so neither
    measuring thread faults in its timed loop (counts from getrusage, not timings)."""
    why = _unavailable(catalogue, bench)
    if why:
        pytest.skip(why)
    # spinning peers on one CPU hand over only when the scheduler switches: two CPUs for them
    cpus = "0,1" if bench.startswith("spin") else "0,0"
    if cpus == "0,1" and not TWO_CPUS:
        pytest.skip("spinning peers need CPUs 0 and 1")
    # A page the probe forgot to touch faults in every run (2,000 iterations cross several
    # pages of every array). The kernel can also fault a touched page once, asynchronously
    # (khugepaged collapsing it into a huge page, reclaim, compaction under load): such a
    # stray fault does not recur, so a run with faults is repeated, at most twice.
    seen = []
    for attempt in range(3):
        out = tmp_path / f"s{attempt}.lss"
        r = run_probe(plain_probe, out, tmpdir_env, bench, f"mode={mode}", f"cpus={cpus}", n=2000)
        if bench == "tcp_netns" and r.returncode == 3 and not IS_ROOT:
            pytest.skip("tcp_netns needs CAP_NET_ADMIN (root)")
        assert r.returncode == 0, r.stderr
        h = samples.load(out).header
        assert [w["n"] for w in h["workers"]] == [2000]
        usage = h["workers"][0]["timed_rusage"]
        assert set(usage) == {"initiator", "responder"}
        faults = {role: u["minflt"] + u["majflt"] for role, u in usage.items()}
        seen.append(faults)
        if not any(faults.values()):
            assert "page fault" not in r.stderr
            return
    pytest.fail(f"page faults in the timed loop in each of 3 runs: {seen}")


def test_workers_split_and_count_on(ipc_probe: str, tmp_path: Path, tmpdir_env: Path) -> None:
    """--workers 3 over 1001 iterations: 334, 334, 333, each its own process with its own
    warm-up; t_start counts on across them; one file."""
    out = tmp_path / "w.lss"
    args = [ipc_probe, "pipe", "-n", "1001", "--warmup", "7", "--workers", "3"]
    args += ["-p", "cpus=0,0", "-o", str(out)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=_env(tmpdir_env))
    assert r.returncode == 0, r.stderr
    sf = samples.load(out)
    h = sf.header
    assert h["n"] == 1001 and h["inject_ns"] == 0
    ws = h["workers"]
    assert [w["n"] for w in ws] == [334, 334, 333]
    assert all(w["warmup"] == 7 for w in ws)
    assert len({w["pid"] for w in ws}) == 3 and h["env"]["process"]["pid"] not in {
        w["pid"] for w in ws
    }
    assert all(set(w["timed_rusage"]) == {"initiator", "responder"} for w in ws)
    assert (np.diff(sf.ticks["t_start"]) > 0).all()
    assert (sf.ticks["oneway"] > 0).all()


def _start_workers(args: list[str], tmpdir_env: Path) -> tuple[subprocess.Popen, list[int]]:
    """Start the probe with --workers and wait for its first worker to have a responder: the
    process and its children (the worker first)."""
    p = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(tmpdir_env)
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kids = children(p.pid)
        if kids and children(kids[0]):
            return p, kids
        time.sleep(0.05)
    p.kill()
    p.wait()
    pytest.fail("no worker with a responder appeared within 30 s")


def test_worker_killed(ipc_probe: str, tmp_path: Path, tmpdir_env: Path) -> None:
    """A worker killed mid-run ends the probe: exit 1, one line, no file, nothing left."""
    out = tmp_path / "k.lss"
    args = [ipc_probe, "pipe", "-n", "5000000", "--workers", "2", "-p", "cpus=0,0"]
    args += ["-o", str(out)]
    p, kids = _start_workers(args, tmpdir_env)
    worker = kids[0]
    responder = children(worker)[0]
    os.kill(worker, signal.SIGKILL)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 1, err
    assert "killed by signal 9" in probe_error_line(err)
    assert not out.exists()
    time.sleep(0.2)
    for pid in (worker, responder):
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_workers_ctrl_c(ipc_probe: str, tmp_path: Path, tmpdir_env: Path) -> None:
    """SIGINT to the probe while a worker runs: the worker is told and cleans up, exit 130, one
    line, no file, no process and nothing in the private TMPDIR left."""
    out = tmp_path / "c.lss"
    args = [ipc_probe, "fifo", "-n", "5000000", "--workers", "2", "-p", "cpus=0,0"]
    args += ["-o", str(out)]
    p, kids = _start_workers(args, tmpdir_env)
    worker, responder = kids[0], children(kids[0])[0]
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "interrupted" in probe_error_line(err)
    assert not out.exists()
    time.sleep(0.2)
    for pid in (worker, responder):
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
    assert not list(tmpdir_env.iterdir())


def test_workers_and_inject_refused(ipc_probe: str, tmp_path: Path) -> None:
    out = tmp_path / "x.lss"
    for extra, words in (
        (["--workers", "0"], "--workers 0"),
        (["-n", "5", "--workers", "6"], "more workers than"),
        (["--inject-ns", "-1"], "--inject-ns -1"),
        (["--inject-ns", "999999999999"], "--inject-ns"),
    ):
        r = subprocess.run(
            [ipc_probe, "syscall", *extra, "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(),
        )
        assert r.returncode == 2, r.stderr
        assert words in probe_error_line(r.stderr)
        assert not out.exists()


# ------------------------------------------------------------------------------ failures


class Running:
    """A probe started with an N it never reaches before the test stops it, running its
    measurement loop."""

    def __init__(
        self, probe: str, tmp_path: Path, tmpdir: Path, bench: str, mode: str, *extra: str
    ) -> None:
        self.out = tmp_path / "s.lss"
        rfd, wfd = os.pipe()
        # The probe reports its progress 50 ms into its run, then every 250 ms;
        # the test stops it at the first report past the warm-up.  The probe touches every
        # page of its sample arrays first: with a short N the first report finds it in its
        # timed loop (with 2 million it often did not, and the peers handed over for another
        # quarter of a second).  200,000 blocking hand-offs take seconds here, never less
        # than a quarter of one (a round trip between two CPUs that sleep and wake takes
        # microseconds); spinning peers on two CPUs go faster.
        warmup = 10
        n = "200000" if MECHS.get(bench, (0, 0, True))[2] else "2000000"
        args = [probe, bench, "-n", n, "--warmup", str(warmup), "-o", str(self.out)]
        args += ["--progress-fd", str(wfd), "-p", f"mode={mode}", "-p", "cpus=0,1"]
        for e in extra:
            args += ["-p", e]
        self.p = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(tmpdir),
            pass_fds=(wfd,),
        )
        os.close(wfd)
        self.rfd = rfd
        # progress counts the warm-up's round trips, then the timed ones
        self.wait_progress(warmup + 1)

    def wait_progress(self, at_least: int) -> None:
        deadline = time.monotonic() + 30
        buf = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.rfd], [], [], 0.5)
            if ready:
                chunk = os.read(self.rfd, 4096)
                assert chunk, f"the probe ended early: {self.p.wait()} {self.p.stderr.read()}"
                buf += chunk
                lines = buf.split(b"\n")
                for line in lines[:-1]:
                    if line.startswith(b"progress ") and int(line.split()[1]) >= at_least:
                        return
                buf = lines[-1]
        pytest.fail("the probe made no progress within 30 s")

    def peer(self) -> int:
        kids = children(self.p.pid)
        assert len(kids) == 1, kids
        return kids[0]

    def finish(self, timeout: float) -> tuple[int, str, float]:
        t0 = time.monotonic()
        _, err = self.p.communicate(timeout=timeout)
        os.close(self.rfd)
        return self.p.returncode, err, time.monotonic() - t0


KILLED = (
    "pipe fifo unix_stream futex posix_sem sysv_sem condvar spin posix_mq sysv_mq signal zmq_ipc "
    "tcp_netns"
).split()


@pytest.mark.parametrize("bench", KILLED)
def test_peer_killed(
    ipc_probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir_env: Path,
    mqueue_dir: Path | None,
    bench: str,
) -> None:
    why = _unavailable(catalogue, bench)
    if why:
        r = run_probe(ipc_probe, tmp_path / "s.lss", tmpdir_env, bench)
        assert r.returncode == 3 and probe_error_line(r.stderr).endswith(why)
        pytest.skip(f"{bench} cannot run here: {why} (exit 3 with that line checked)")
    if bench == "tcp_netns" and not IS_ROOT:
        r = run_probe(ipc_probe, tmp_path / "s.lss", tmpdir_env, bench)
        if r.returncode == 3:
            assert "CAP_NET_ADMIN" in probe_error_line(r.stderr)
            pytest.skip("tcp_netns needs CAP_NET_ADMIN (root) (exit 3 with that line checked)")
    before = State(tmpdir_env, mqueue_dir)
    ns_before = _netns_inodes() if bench == "tcp_netns" else set()
    with Reaper() as reaper:
        run = Running(ipc_probe, tmp_path, tmpdir_env, bench, "processes")
        peer = run.peer()
        if bench == "tcp_netns":  # the peer runs in a namespace of its own, not ours
            peer_ns = os.readlink(f"/proc/{peer}/ns/net")
            assert peer_ns != os.readlink("/proc/self/ns/net")
        os.kill(peer, signal.SIGKILL)
        rc, err, took = run.finish(timeout=10)
        assert rc == 1, err
        line = probe_error_line(err)
        assert "peer" in line and "nothing was written" in line
        assert took < 3.0
        assert not run.out.exists() and list(tmp_path.iterdir()) == []
        assert not Path(f"/proc/{peer}").exists(), "the peer was not reaped"
        assert reaper.orphans() == [], "the probe left processes behind"
    before.assert_clean(run.p.pid, peer)
    if bench == "tcp_netns":
        left = _netns_inodes(_ours()) - ns_before
        assert peer_ns not in _netns_inodes() and not left, f"namespaces left: {left}"


def test_peer_stalled(
    ipc_probe: str, tmp_path: Path, tmpdir_env: Path, mqueue_dir: Path | None
) -> None:
    """A peer that stops answering (SIGSTOP) ends the run after --peer-timeout (2 s)."""
    before = State(tmpdir_env, mqueue_dir)
    with Reaper() as reaper:
        run = Running(ipc_probe, tmp_path, tmpdir_env, "futex", "processes")
        peer = run.peer()
        os.kill(peer, signal.SIGSTOP)
        rc, err, took = run.finish(timeout=10)
        assert rc == 1, err
        assert "stalled" in probe_error_line(err)
        assert 1.5 < took < 4.0
        assert not Path(f"/proc/{peer}").exists()
        assert reaper.orphans() == []
    assert not run.out.exists()
    before.assert_clean(run.p.pid, peer)


@pytest.mark.parametrize(
    "bench,mode",
    [
        ("pipe", "processes"),
        ("fifo", "processes"),
        ("futex", "processes"),
        ("posix_sem", "threads"),
        ("sysv_sem", "processes"),
        ("sysv_mq", "threads"),
        ("posix_mq", "processes"),
        ("signal", "threads"),
        ("zmq_tcp", "processes"),
        ("unix_dgram", "processes"),
        ("spin", "threads"),
        ("tcp_netns", "processes"),
    ],
)
def test_ctrl_c(
    ipc_probe: str,
    catalogue: dict[str, dict],
    tmp_path: Path,
    tmpdir_env: Path,
    mqueue_dir: Path | None,
    bench: str,
    mode: str,
) -> None:
    if _unavailable(catalogue, bench) or (bench == "tcp_netns" and not IS_ROOT):
        r = run_probe(ipc_probe, tmp_path / "s.lss", tmpdir_env, bench, f"mode={mode}")
        if r.returncode == 3:  # covered by test_mechanism / test_netns_needs_privilege
            line = probe_error_line(r.stderr)
            pytest.skip(f"{bench} cannot run here: {line}")
    before = State(tmpdir_env, mqueue_dir)
    with Reaper() as reaper:
        run = Running(ipc_probe, tmp_path, tmpdir_env, bench, mode)
        peer = run.peer() if mode == "processes" else None
        run.p.send_signal(signal.SIGINT)
        rc, err, took = run.finish(timeout=10)
        assert rc == 130, err
        assert "interrupted" in probe_error_line(err)
        assert took < 2.5
        assert not run.out.exists() and list(tmp_path.iterdir()) == []
        if peer:
            assert not Path(f"/proc/{peer}").exists()
        assert reaper.orphans() == []
    before.assert_clean(run.p.pid, *([peer] if peer else []))
