"""The probe's arms (docs/probe-cli.md, "Arms"; the file: docs/sample-format.md, version 3):
two to eight scenarios measured in one probe process, alternating short blocks in shuffled
balanced rounds.  What a run records is checked against its own header (every row's arm,
block and round; each round every arm once, in the order the header gives; each block as long
as its arm's block_iterations; the arms' n adding up), never a timing figure: the runs are
short (--time 0.2, the least the probe takes, where what is asserted holds in any number of
rounds; 0.5 where it needs several) and the machine may be busy."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import children, run_probe, sysv_objects, unexpected_stderr
from fuzz import base_header, written
from latscope import samples

ROOT = Path(__file__).resolve().parent.parent
TWO_CPUS = (os.cpu_count() or 1) >= 2 and sys.platform == "linux"


def one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("latscope-probe: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def arms_args(*words: str, out: Path | None = None, time_s: str = "0.2", **kw: str) -> list[str]:
    args: list[str] = []
    for w in words:
        args += ["--arm", w]
    args += ["--time", time_s]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", v]
    if out is not None:
        args += ["-o", str(out)]
    return args


def checked(path: Path, narms: int) -> samples.SampleFile:
    """An arms run's file, read by the lab (every check of the format) and checked against
    its own header: the rows of each worker in rounds of every arm once, in the header's
    order, each block as long as its arm's block_iterations, block numbers counting on across
    the file and rounds within each worker."""
    f = samples.load(path)
    h = f.header
    assert f.version == samples.ARMS_FORMAT_VERSION == h["format_version"] == 3
    assert f.index_columns == ["arm", "block", "round"]
    assert [c["name"] for c in h["columns"]][-3:] == ["arm", "block", "round"]
    assert all(c["kind"] == "index" for c in h["columns"][-3:])
    assert "arm" not in f.ticks and "arm" not in f.duration_columns
    with pytest.raises(ValueError):
        f.ns("block")  # whole numbers, never ticks
    n = h["n"]
    arm, blk, rnd = f.index("arm"), f.index("block"), f.index("round")
    assert arm.dtype == np.int64 and arm.size == blk.size == rnd.size == n  # every row
    arms = h["arms"]
    assert len(arms) == narms and f.arms == arms
    assert sum(a["n"] for a in arms) == n  # the arms' n add up to the total
    assert [int(x) for x in np.bincount(arm, minlength=narms)] == [a["n"] for a in arms]
    assert (np.diff(f.ticks["t_start"]) >= 0).all() and f.ticks["t_start"][0] == 0
    il = h["interleave"]
    ws = h["workers"]
    assert len(il["rounds"]) == len(il["order"]) == len(ws)
    every = list(range(narms))
    seg = np.cumsum([0] + [w["n"] for w in ws])
    next_block = 0
    for w in range(len(ws)):
        a_w, b_w, r_w = (x[seg[w] : seg[w + 1]] for x in (arm, blk, rnd))
        starts = np.flatnonzero(np.diff(b_w, prepend=-1))
        sizes = np.diff(np.append(starts, b_w.size))
        blocks, block_arm, block_round = b_w[starts], a_w[starts], r_w[starts]
        # a block is one run of rows: one arm, one round, numbers counting on
        assert (blocks == np.arange(next_block, next_block + blocks.size)).all()
        assert (a_w == np.repeat(block_arm, sizes)).all()
        assert (r_w == np.repeat(block_round, sizes)).all()
        next_block += blocks.size
        rounds = il["rounds"][w]
        assert rounds >= 1 and blocks.size == rounds * narms
        order = il["order"][w]
        assert len(order) == rounds
        for r in range(rounds):
            assert sorted(order[r]) == every  # each round holds each arm exactly once
            assert list(block_arm[r * narms : (r + 1) * narms]) == order[r]
            assert (block_round[r * narms : (r + 1) * narms] == r).all()
        for k in every:  # each block as long as its arm's calibrated block
            assert (sizes[block_arm == k] == arms[k]["block_iterations"][w]).all()
    for a in arms:
        assert len(a["block_iterations"]) == len(a["discard_per_block"]) == len(ws)
        assert all(b >= 1 for b in a["block_iterations"])
        assert all(d >= 2 for d in a["discard_per_block"])  # the switch iterations, dropped
        assert a["n"] == sum(
            r * b for r, b in zip(il["rounds"], a["block_iterations"], strict=True)
        )
        assert isinstance(a["bench"], dict) and a["columns"]
        assert {c["name"] for c in a["columns"]} == set(f.duration_columns)
    assert h["benchmark"] == arms[0]["benchmark"] and h["params"] == arms[0]["params"]
    return f


def faults(f: samples.SampleFile) -> list[int]:
    """Each arm's page faults in its timed iterations, over every worker and role."""
    return [
        sum(u["minflt"] + u["majflt"] for roles in a["timed_rusage"] for u in roles.values())
        for a in f.arms or []
    ]


def measured(probe: str, tmp_path: Path, *words: str, **kw: str) -> samples.SampleFile:
    """An arms run that took no page fault in any arm's timed iterations.  A page the probe
    forgot to touch faults in every run; the kernel may also fault a touched page once
    (reclaim, compaction under load), which does not recur: a run with faults is repeated,
    at most twice (counts from getrusage, never timings)."""
    seen = []
    for attempt in range(3):
        out = tmp_path / f"arms{attempt}.lss"
        r = run_probe(probe, *arms_args(*words, out=out, **kw))
        assert r.returncode == 0, r.stderr
        f = checked(out, len(words))
        seen.append(faults(f))
        if not any(seen[-1]):
            assert unexpected_stderr(r.stderr) == [], r.stderr
            return f
    pytest.fail(f"page faults in the arms' timed iterations in each of 3 runs: {seen}")


def orders(f: samples.SampleFile) -> list[list[list[int]]]:
    return f.header["interleave"]["order"]


def test_syscall_arms(probe: str, tmp_path: Path) -> None:
    # 0.5 s: rounds enough that both orders of two arms come up (a busy machine fits fewer)
    f = measured(
        probe, tmp_path, "syscall", "syscall op=read0 inject_ns=20", seed="11", time_s="0.5"
    )
    h = f.header
    assert [a["benchmark"] for a in h["arms"]] == ["syscall", "syscall"]
    assert [a["params"]["op"] for a in h["arms"]] == ["getppid", "read0"]
    assert [a["inject_ns"] for a in h["arms"]] == [0, 20]
    assert [a["word"] for a in h["arms"]] == ["syscall", "syscall op=read0 inject_ns=20"]
    assert h["arms"][1]["given"] == ["op"]
    assert [a["bench"]["op"] for a in h["arms"]] == ["getppid", "read0"]
    assert h["interleave"]["seed"] == 11 and h["interleave"]["time_s"] == 0.5
    assert len(h["workers"]) == 2  # --workers auto: one per second of --time, at least 2
    assert all(set(w["timed_rusage"]) == {"main"} for w in h["workers"])
    # the orders differ between rounds
    rounds = [tuple(o) for w in orders(f) for o in w]
    assert len(set(rounds)) == 2, rounds


@pytest.mark.parametrize(
    ("time_s", "workers"), [("5", 4), ("30", 4), ("3", 3), ("0.5", 2), ("0.2", 2)]
)
def test_workers_auto_is_one_per_second_of_time(probe: str, time_s: str, workers: int) -> None:
    """More workers average out more of the layouts' effect on a ratio: one per second of the
    budget, 2 to 4."""
    r = run_probe(probe, *arms_args("syscall", "syscall", time_s=time_s), "--check")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["workers"] == workers


def test_a_ping_pong_arms_wait_is_its_own_responders(probe: str, tmp_path: Path) -> None:
    """Threads share the wait's setting: the responder of the arm that runs answers with
    that arm's wait, never another's (B's every round trip holds its 10 µs; A's do not).  (The
    wait is calibrated before the run in 2,001 regions that hold it per step of a bisection:
    10 µs, twice a pipe's round trip on a busy machine under AddressSanitizer, cost half the
    CPU time 20 µs did.)"""
    f = measured(
        probe, tmp_path, "pipe cpus=0,0 mode=threads",
        "pipe cpus=0,0 mode=threads inject_ns=10000", seed="5",
    )  # fmt: skip
    arm, rtt = f.index("arm"), f.ns("rtt")
    assert (rtt[arm == 1] > 9000).all()
    assert (rtt[arm == 0] < 9000).mean() > 0.5
    assert (rtt[arm == 1] - f.ns("oneway")[arm == 1] > 9000).mean() > 0.9


def test_max_samples_bounds_each_arm_and_keeps_the_rounds(probe: str, tmp_path: Path) -> None:
    """A fast arm would record millions of samples in a second: --max-samples bounds each
    arm's (all workers together), by shortening its blocks so that the samples still fall
    into many rounds, and the run ends when the bound is reached (no warning: by design)."""
    out = tmp_path / "capped.lss"
    r = run_probe(probe, *arms_args("syscall", "syscall", out=out, time_s="5", max_samples="4000"))
    assert r.returncode == 0, r.stderr
    assert unexpected_stderr(r.stderr) == [], r.stderr
    f = checked(out, 2)
    h = f.header
    assert h["interleave"]["max_samples"] == 4000
    for a in h["arms"]:
        assert a["n"] <= 4000
        # the blocks were shortened: 200 rounds per worker (400 in all) hold them
        assert all(b <= 4000 // 2 // 200 for b in a["block_iterations"])
    assert sum(h["interleave"]["rounds"]) >= 2 * (4000 // 2 // 10) // 10
    assert f.header["n"] == sum(a["n"] for a in h["arms"])


def test_the_seed_gives_the_orders(probe: str, tmp_path: Path) -> None:
    """The same --seed gives the same order in every round (as far as both runs went: how
    many rounds fit in the time is the machine's); another gives others."""
    runs = []
    for i, seed in enumerate(("5", "5", "6")):
        out = tmp_path / f"s{i}.lss"
        words = ("syscall", "syscall op=read0", "syscall cpu=0")
        # 0.5 s: four rounds or more in each run, on a busy machine too
        r = run_probe(probe, *arms_args(*words, out=out, seed=seed, block_ms="1", time_s="0.5"))
        assert r.returncode == 0, r.stderr
        runs.append(orders(checked(out, 3)))
    for w in range(2):
        a, b, c = (x[w] for x in runs)
        m = min(len(a), len(b))
        assert a[:m] == b[:m]
        m = min(len(a), len(c))
        assert m >= 4 and a[:m] != c[:m]


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_pipe_and_eventfd_arms(probe: str, tmp_path: Path, mode: str) -> None:
    f = measured(probe, tmp_path, f"pipe cpus=0,0 mode={mode}", f"eventfd cpus=0,0 mode={mode}")
    h = f.header
    assert f.duration_columns == ["rtt", "oneway"]
    assert [a["benchmark"] for a in h["arms"]] == ["pipe", "eventfd"]
    for a in h["arms"]:
        assert a["bench"]["mode"] == mode and a["bench"]["placement"] == "same_cpu"
        assert all(set(r) == {"initiator", "responder"} for r in a["timed_rusage"])
        assert [c["context_switches"] for c in a["columns"]] == [2, 1]
    # each arm's own columns and bench; the header's are the baseline's
    assert h["bench"]["mechanism"] == "pipe" and h["arms"][1]["bench"]["mechanism"] == "eventfd"
    # each one-way time is the responder's stamp of the same round trip: read after the
    # initiator's start read and before its end read (one CPU, one clock)
    assert ((f.ticks["oneway"] > 0) & (f.ticks["oneway"] < f.ticks["rtt"])).all()


@pytest.mark.skipif(not TWO_CPUS, reason="needs CPUs 0 and 1")
def test_arms_on_other_cpus(probe: str, tmp_path: Path) -> None:
    """Arms may differ in placement and in threads or processes: the measuring thread moves
    between blocks (pinned again before each, or unpinned).  Its page faults are not asserted
    here: a process that moves between CPUs can take a stray fault on a touched page (the
    probe's runs of one benchmark do too, now and then, on two CPUs); the other tests hold
    every arm to none."""
    words = ("futex cpus=0,1 mode=threads", "futex cpus=1,1", "futex cpus=none")
    out = tmp_path / "cpus.lss"
    r = run_probe(probe, *arms_args(*words, out=out))
    assert r.returncode == 0, r.stderr
    f = checked(out, 3)
    assert [a["bench"]["placement"] for a in f.arms or []] == [
        "different_cpus",
        "same_cpu",
        "unpinned",
    ]
    assert [a["bench"]["cpus"] for a in f.arms or []] == [[0, 1], [1, 1], [-1, -1]]


def test_file_arms(probe: str, tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    f = measured(probe, tmp_path, f"file dir={d} size=4096", f"file dir={d} size=16384")
    h = f.header
    assert f.duration_columns == ["open", "write", "read", "close"]
    assert [a["params"]["size"] for a in h["arms"]] == [4096, 16384]
    assert [a["bench"]["size_bytes"] for a in h["arms"]] == [4096, 16384]
    assert all(a["filesystem"]["path"] for a in h["arms"])
    assert list(d.iterdir()) == []  # the test files are gone


def test_check_prints_the_arms_resolved(probe: str, tmp_path: Path) -> None:
    r = run_probe(
        probe,
        *arms_args("pipe cpus=0,0 size=64", "eventfd cpus=0,0 inject_ns=130", seed="3"),
        "--check",
    )
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    assert set(c) >= {"arms", "workers", "warmup", "clock", "time_s", "block_ms", "seed"}
    a, b = c["arms"]
    assert a["benchmark"] == "pipe" and a["params"]["size"] == 64 and a["params"]["cpus"] == "0,0"
    assert a["params"]["mode"] == "processes" and a["given"] == ["cpus", "size"]
    assert a["inject_ns"] == 0 and b["inject_ns"] == 130 and b["benchmark"] == "eventfd"
    assert c["workers"] == 2 and c["warmup"] >= 10 and c["clock"] != "auto"
    assert c["time_s"] == 0.2 and c["block_ms"] == 5 and c["seed"] == 3
    r = run_probe(probe, *arms_args("syscall", "syscall"), "--check")
    assert json.loads(r.stdout)["seed"] is None  # a run draws one and records it
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "words,says",
    [
        (["syscall", "pipe cpus=0,0"], "--arm 'syscall' and --arm 'pipe cpus=0,0' record"),
        (["file", "file fsync=true"], "record different columns"),
        (["spin cpus=0,1", "pipe cpus=0,0"], "spin cannot be an arm"),
        (["pipe", "yield"], "yield cannot be an arm"),
        (["syscall"], "2 to 8 --arm words (1 given)"),
        (["syscall"] * 9, "2 to 8 --arm words (9 given)"),
        (["syscall inject_ns=abc", "syscall"], "inject_ns=abc"),
        (["syscall inject_ns=-1", "syscall"], "inject_ns=-1"),
        (["syscall inject_ns=20000000", "syscall"], "inject_ns=20000000"),
        (["syscall", "syscall nope=1"], "no parameter 'nope'"),
        (["", "syscall"], "give a benchmark"),
        (["tcp_remote host=127.0.0.1 port=9", "tcp"], "tcp_remote cannot be an arm"),
    ],
)
def test_refusals_are_one_line(probe: str, tmp_path: Path, words: list[str], says: str) -> None:
    out = tmp_path / "x.lss"
    r = run_probe(probe, *arms_args(*words, out=out))
    assert r.returncode == 2, r.stderr
    assert says in one_error_line(r)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args,says",
    [
        (["-n", "100"], "-n"),
        (["-p", "size=8"], "-p"),
        (["--inject-ns", "10"], "--inject-ns"),
        (["--time", "0.1"], "--time 0.1"),
        (["--block-ms", "0.1"], "--block-ms 0.1"),
        (["--seed", "-1"], "--seed -1"),
        (["--workers", "10", "--time", "0.5"], "--workers 10"),
    ],
)
def test_options_an_arms_run_refuses(
    probe: str, tmp_path: Path, args: list[str], says: str
) -> None:
    out = tmp_path / "x.lss"
    r = run_probe(probe, "--arm", "syscall", "--arm", "syscall", *args, "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert says in one_error_line(r)
    r = run_probe(probe, "pipe", "--arm", "syscall", "--arm", "syscall", "-o", str(out))
    assert r.returncode == 2 and "--arm" in one_error_line(r)
    assert list(tmp_path.iterdir()) == []


def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        for c in children(todo.pop()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _rounds_begun(rfd: int, deadline: float) -> None:
    """Read the run's progress lines (milliseconds of --time spent in the rounds) until one
    says the rounds have begun, or the run ends, or the deadline passes; closes ``rfd``."""
    with os.fdopen(rfd, "rb", buffering=0) as f:
        buf = b""
        while time.monotonic() < deadline:
            if not select.select([f], [], [], 0.5)[0]:
                continue
            chunk = f.read(4096)
            if not chunk:
                return  # the run ended: the test's own assertion says how
            buf += chunk
            *lines, buf = buf.split(b"\n")
            if any(ln.startswith(b"progress ") and int(ln.split()[1]) > 0 for ln in lines):
                return


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stopping_an_arms_run_leaves_nothing(tmp_path: Path, probe: str, sig: int) -> None:
    """Ctrl-C (or SIGTERM) while the arms run: exit 130, one line, and every arm's peers,
    System V objects and files gone (the private temporary directories in $TMPDIR, the
    output's temporary and its leftovers record beside it)."""
    tmpdir, outdir = tmp_path / "tmp", tmp_path / "out"
    tmpdir.mkdir()
    outdir.mkdir()
    before = set(sysv_objects())
    words = ["sysv_sem cpus=0,0", "sysv_mq cpus=0,0 mode=threads", "fifo cpus=0,0"]
    rfd, wfd = os.pipe()
    args = [probe, *arms_args(*words, out=outdir / "x.lss", time_s="30")]
    args += ["--progress-fd", str(wfd)]
    env = {**os.environ, "TMPDIR": str(tmpdir), "ASAN_OPTIONS": "detect_leaks=0"}
    p = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True, pass_fds=(wfd,))
    os.close(wfd)
    seen: set[int] = set()
    deadline = time.monotonic() + 30
    # until the worker has started its responders (two processes: sysv_sem and fifo)
    while time.monotonic() < deadline and p.poll() is None:
        seen |= _descendants(p.pid)
        if len(seen) >= 3:
            break
        time.sleep(0.05)
    _rounds_begun(rfd, deadline)
    seen |= _descendants(p.pid)
    assert p.poll() is None, p.stderr.read() if p.stderr else ""
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("latscope-probe: error: interrupted"), err
    assert len(seen) >= 3, seen  # a worker and its two responder processes were seen
    time.sleep(0.2)
    assert not [c for c in seen if _alive(c)], "a worker or peer is still running"
    assert list(outdir.iterdir()) == [] and list(tmpdir.iterdir()) == []
    pids = seen | {p.pid}
    left = {k for k, users in sysv_objects().items() if k not in before and users & pids}
    assert not left, f"System V IPC objects left: {left}"


EXE = ROOT / "build" / "cross" / "x86_64-w64-mingw32" / "latscope-probe.exe"
WINE_RUN = ROOT / "scripts" / "wine-run"


@pytest.mark.skipif(not EXE.exists(), reason=f"no Windows probe: {EXE} (make cross-windows)")
def test_the_windows_probe_refuses_arms(tmp_path: Path) -> None:
    if subprocess.run([WINE_RUN, "--version"], capture_output=True).returncode != 0:
        pytest.skip("wine64 is not installed")
    r = subprocess.run(
        [WINE_RUN, EXE, "--arm", "syscall", "--arm", "syscall", "-o", "x.lss"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 3, r.stderr
    assert "runs no arms" in one_error_line(r)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ the lab's reader


def arms_file(rounds: tuple[int, ...] = (2, 1), bi: tuple[int, int] = (3, 2)) -> tuple[dict, dict]:
    """A synthetic arms run of two arms (the header and the columns `samples.write` takes):
    workers with these many rounds, each arm's blocks of bi rows."""
    order = [[[0, 1], [1, 0]][: rounds[0]], [[1, 0]][: rounds[1]]]
    arm, blk, rnd, b = [], [], [], 0
    for w, rs in enumerate(order):
        for r, o in enumerate(rs):
            for k in o:
                arm += [k] * bi[k]
                blk += [b] * bi[k]
                rnd += [r] * bi[k]
                b += 1
        del w
    n = len(arm)
    h = base_header(["rtt"], n)
    per_w = [sum(bi) * r for r in rounds]
    h["workers"] = [
        {"n": k, "warmup": 3, "pid": 7 + i, "timed_rusage": {}} for i, k in enumerate(per_w)
    ]
    h["arms"] = [
        {
            "benchmark": "fuzz",
            "params": {"size": 8},
            "given": [],
            "word": "fuzz",
            "inject_ns": 0,
            "n": sum(rounds) * bi[k],
            "block_iterations": [bi[k]] * len(rounds),
            "discard_per_block": [2] * len(rounds),
            "timed_rusage": [{"main": {"minflt": 0}}] * len(rounds),
            "columns": [{"name": "rtt", "kind": "duration"}],
            "bench": {},
        }
        for k in range(2)
    ]
    h["interleave"] = {
        "seed": 1,
        "time_s": 0.5,
        "block_ms": 5,
        "rounds": list(rounds),
        "order": order,
    }
    h["columns"] += [
        {"name": x, "unit": "index", "kind": "index"} for x in ("arm", "block", "round")
    ]
    cols = {
        "t_start": np.arange(n) * 10,
        "rtt": np.full(n, 100),
        "arm": np.array(arm),
        "block": np.array(blk),
        "round": np.array(rnd),
    }
    return h, cols


def test_the_reader_keeps_index_columns_apart(tmp_path: Path) -> None:
    h, cols = arms_file()
    p = samples.write(tmp_path / "a.lss", h, cols)
    assert p.read_bytes().startswith(b"LATSCOPE-SAMPLES 3\n")
    f = samples.load(p)
    assert f.version == 3 and f.index_columns == ["arm", "block", "round"]
    assert list(f.ticks) == ["t_start", "rtt"] and f.duration_columns == ["rtt"]
    assert f.index("arm").dtype == np.int64 and list(f.index("round")) == list(cols["round"])
    assert f.arms == h["arms"] and f.interleave == h["interleave"]
    with pytest.raises(ValueError, match="index column"):
        f.ns("arm")
    with pytest.raises(KeyError):
        f.index("worker")
    # a run of one benchmark: as before
    plain = base_header(["rtt"], 4)
    q = samples.write(tmp_path / "b.lss", plain, {"t_start": np.arange(4), "rtt": np.ones(4, int)})
    g = samples.load(q)
    assert g.version == 2 and g.index_columns == [] and g.arms is None and g.interleave is None


def _raw(h: dict, cols: dict) -> bytes:
    h["format_version"] = 3
    return written(h, np.vstack(list(cols.values())), 3)


def _bad_arm(h: dict, cols: dict) -> None:
    cols["arm"][0] = 2


def _negative_block(h: dict, cols: dict) -> None:
    cols["block"][0] = -1


def _negative_round(h: dict, cols: dict) -> None:
    cols["round"][-1] = -3


def _counts(h: dict, cols: dict) -> None:
    cols["arm"][0] = 1 - cols["arm"][0]


def _arms_n(h: dict, cols: dict) -> None:
    h["arms"][0]["n"] += 1


def _order(h: dict, cols: dict) -> None:
    h["interleave"]["order"][0][0] = [0, 0]


def _no_arms(h: dict, cols: dict) -> None:
    del h["arms"]


def _index_first(h: dict, cols: dict) -> None:
    h["columns"][1], h["columns"][-1] = h["columns"][-1], h["columns"][1]


def _index_names(h: dict, cols: dict) -> None:
    h["columns"][-1]["name"] = "lap"


@pytest.mark.parametrize(
    "damage,says",
    [
        (_bad_arm, "arm index outside"),
        (_negative_block, "negative block"),
        (_negative_round, "negative round"),
        (_counts, "holds"),
        (_arms_n, "arms' n add up"),
        (_order, "every arm once"),
        (_no_arms, "arms must be a list"),
        (_index_first, "index column before a duration"),
        (_index_names, "arm, block, round"),
    ],
)
def test_the_reader_refuses_a_damaged_arms_file(tmp_path: Path, damage: Any, says: str) -> None:
    h, cols = arms_file()
    damage(h, cols)
    p = tmp_path / "bad.lss"
    p.write_bytes(_raw(h, cols))
    with pytest.raises(samples.SampleFormatError, match=says):
        samples.load(p)


def test_index_columns_need_version_3(tmp_path: Path) -> None:
    h, cols = arms_file()
    h["format_version"] = 2
    p = tmp_path / "v2.lss"
    p.write_bytes(written(h, np.vstack(list(cols.values())), 2))
    with pytest.raises(samples.SampleFormatError, match="kind must be duration"):
        samples.load(p)
