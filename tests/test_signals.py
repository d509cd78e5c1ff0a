"""The kill matrix: SIGINT, SIGTERM, SIGHUP and SIGKILL sent to `latscope run`, `latscope
matrix` and `latscope suite` (to latscope's process alone, not its group: the probe must be
told by latscope), at three stages of a run:

- before: the run's partial directory made, the probe not yet started
  (``LATSCOPE_PAUSE_AT=probe``, probe.pause_point);
- during: the probe measuring a long run (its worker or peer process is there);
- after: the probe has written its sample file, the summary and the commit come next
  (``LATSCOPE_PAUSE_AT=commit``).

SIGINT, SIGTERM, SIGHUP: one line ("latscope: interrupted by SIGTERM; ..."), exit 128 + the
signal's number, the probe stopped and waited for, nothing of the run kept, no partial
directory. SIGKILL: latscope cannot answer; the probe dies with it (its parent-death signal),
the partial directory is marked killed, and `rm --partial` removes it.

Every case is then checked for what this test's own processes (latscope and every descendant
seen while it ran) left behind: a process still alive, a System V object only they used, a
POSIX queue or /dev/shm entry named after one of them, anything in their private TMPDIR, a
partial directory or a temporary file in the store. The four signals of a command and stage
run side by side, each with a store and TMPDIR of its own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import children, sysv_objects
from latscope.store import Store

SIGNALS = {
    "INT": signal.SIGINT,
    "TERM": signal.SIGTERM,
    "HUP": signal.SIGHUP,
    "KILL": signal.SIGKILL,
}
STAGES = ("before", "during", "after")
PAUSE = {"before": "probe", "after": "commit"}
COMMANDS = ("run", "matrix", "suite")
N_LONG = 2_000_000  # still measuring when the signal comes (never waited for to the end)
N_SHORT = 300
STAGE_TIMEOUT_S = 120.0  # a loaded machine starts Python slowly
EXIT_TIMEOUT_S = 60.0
GONE_TIMEOUT_S = 10.0
PR_SET_CHILD_SUBREAPER = 36


# ------------------------------------------------------------------------------ processes


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int, ticks: int | None) -> bool:
    """Whether the process seen as (pid, start time) still runs (a zombie does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    if "zombie" in status:
        return False
    return ticks is None or _start_ticks(pid) == ticks


def _descendants(pid: int) -> dict[int, int]:
    """Every descendant of ``pid`` with its depth (children 1)."""
    out: dict[int, int] = {}
    level, depth = [pid], 0
    while level:
        depth += 1
        nxt = []
        for p in level:
            for c in children(p):
                if c not in out:
                    out[c] = depth
                    nxt.append(c)
        level = nxt
    return out


def _reap(pid: int) -> None:
    """Reap ``pid`` if it is a zombie child of this process (an orphan it adopted)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


@pytest.fixture()
def subreaper() -> Iterator[None]:
    """This process adopts the orphans of the test's processes (a probe that outlives a
    killed latscope lands here, not with init), and none survives the test."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid in _descendants(os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children(os.getpid()):
            _reap(pid)


# ------------------------------------------------------------------------------ IPC objects


def _named_for(name: str, pids: set[int]) -> bool:
    """A name the probe made for one of ``pids`` (it names its objects latscope-<pid>-...)."""
    m = re.search(r"latscope-(\d+)", name)
    return bool(m) and int(m.group(1)) in pids


# ------------------------------------------------------------------------------ one case


def _suite_file(d: Path, n: int, bench: str) -> Path:
    p = d / "kill.toml"
    p.write_text(
        f'name = "kill"\nrepeat = 2\nn = {n}\n\n'
        f'[[scenario]]\nname = "one"\nbenchmark = "{bench}"\nparams = {{ mode = "processes" }}\n'
    )
    return p


def _available(bench: str) -> bool:
    from latscope import probe

    b = probe.entry(bench)
    return bool(b and b.get("available"))


def _command(command: str, stage: str, d: Path) -> list[str]:
    """The command line of a case: a System V semaphore ping-pong for `run`, FIFOs in the
    private TMPDIR for `matrix`, POSIX message queues for `suite` (pipes where missing)."""
    n = N_LONG if stage == "during" else N_SHORT
    if command == "run":
        bench = "sysv_sem" if _available("sysv_sem") else "pipe"
        return ["run", bench, "-p", "mode=processes", "-n", str(n), "--quiet"]
    if command == "matrix":
        mech = "fifo" if _available("fifo") else "pipe"
        return ["matrix", "-m", mech, "-n", str(n), "--quiet"]
    bench = "posix_mq" if _available("posix_mq") else "pipe"
    return ["suite", str(_suite_file(d, n, bench)), "--quiet", "--no-figures"]


class Case:
    """One latscope process: started, taken to its stage, signalled, checked."""

    def __init__(self, command: str, stage: str, sig: str, root: Path, probe: str) -> None:
        self.command, self.stage, self.sig = command, stage, sig
        self.signum = SIGNALS[sig]
        self.dir = root / sig
        self.dir.mkdir()
        self.store = self.dir / "store"
        self.tmpdir = Path(tempfile.mkdtemp(prefix="ls-k-"))  # short: socket paths
        env = {
            **os.environ,
            "LATSCOPE_STORE": str(self.store),
            "LATSCOPE_PROBE": probe,
            "TMPDIR": str(self.tmpdir),
            "ASAN_OPTIONS": "detect_leaks=0",
            "COLUMNS": "200",
        }
        env.pop("LATSCOPE_PAUSE_AT", None)
        if stage in PAUSE:
            env["LATSCOPE_PAUSE_AT"] = PAUSE[stage]
        self.argv = _command(command, stage, self.dir)
        self.p = subprocess.Popen(
            [sys.executable, "-m", "latscope.cli", *self.argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # nothing sent to the test's group reaches it
        )
        self.err: list[str] = []
        self.out: list[str] = []
        self.paused = threading.Event()
        self.seen: dict[int, int | None] = {}  # descendants: pid -> start time
        self.depth: dict[int, int] = {}
        self._threads = [
            threading.Thread(target=self._read, args=(self.p.stderr, self.err), daemon=True),
            threading.Thread(target=self._read, args=(self.p.stdout, self.out), daemon=True),
            threading.Thread(target=self._track, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.append(line)
            if line.startswith("latscope: paused at"):
                self.paused.set()

    def _track(self) -> None:
        """Every descendant of latscope while it runs (this test's processes)."""
        while self.p.poll() is None:
            for pid, depth in _descendants(self.p.pid).items():
                if pid not in self.seen:
                    self.seen[pid] = _start_ticks(pid)
                    self.depth[pid] = depth
            time.sleep(0.01)

    @property
    def label(self) -> str:
        return f"SIG{self.sig} {self.stage} latscope {self.command}"

    def at_stage(self) -> bool:
        """Whether latscope has reached the case's stage (an error if it ended before)."""
        if self.p.poll() is not None:
            raise AssertionError(
                f"{self.label}: latscope ended (status {self.p.returncode}) before the "
                f"stage: {''.join(self.err)[-2000:]}"
            )
        if self.stage in PAUSE:
            return self.paused.is_set()
        # during: the probe's worker or peer runs, it measures
        return max(self.depth.values(), default=0) >= 2

    def signal(self) -> None:
        os.kill(self.p.pid, self.signum)

    def finish(self) -> None:
        try:
            self.p.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
            raise AssertionError(
                f"{self.label}: latscope did not end: {''.join(self.err)}"
            ) from None
        for t in self._threads:
            t.join(timeout=10)

    def problems(self, mqdir: Path | None) -> list[str]:
        """What is wrong with this case: its output, and what its processes left behind."""
        bad: list[str] = []
        said = [ln.rstrip("\n") for ln in self.err if not ln.startswith("latscope: paused at")]
        if self.sig == "KILL":
            if self.p.returncode != -signal.SIGKILL:
                bad.append(f"status {self.p.returncode}, not killed")
        else:
            if self.p.returncode != 128 + self.signum:
                bad.append(f"status {self.p.returncode}, not {128 + self.signum}: {said}")
            if len(said) != 1 or not said[0].startswith(f"latscope: interrupted by SIG{self.sig}"):
                bad.append(f"not one line saying it was interrupted: {said}")
            if "Traceback" in "".join(self.err + self.out):
                bad.append("a traceback")
        # processes: latscope's descendants die with it (killed: by their parent-death signal)
        end = time.monotonic() + GONE_TIMEOUT_S
        alive = dict(self.seen)
        while alive and time.monotonic() < end:
            for pid in list(alive):
                _reap(pid)
                if not _alive(pid, alive[pid]):
                    del alive[pid]
            time.sleep(0.05)
        if alive:
            what = ", ".join(f"{pid} (depth {self.depth.get(pid)})" for pid in alive)
            bad.append(
                f"processes outlived latscope: {what}"
                + (
                    " (orphaned: the probe needs a parent-death signal)"
                    if self.sig == "KILL"
                    else ""
                )
            )
            for pid in alive:  # let them clean up, then make sure
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            time.sleep(1.0)
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                _reap(pid)
        # the store: no run of the stopped one; a killed one's partial goes with rm --partial
        st = Store(self.store)
        scan = st.scan(check=False)
        if scan.runs:
            bad.append(f"runs kept: {[r.id for r in scan.runs]}")
        if self.sig == "KILL":
            states = {p.path.name: p.state for p in scan.partials}
            if any(s != "killed" for s in states.values()):
                bad.append(f"partial directories not marked killed: {states}")
            removed, kept = st.remove_partials()
            if kept:
                bad.append(f"rm --partial kept {[p.path.name for p in kept]}")
        elif scan.partials:
            bad.append(f"partial directories left: {[p.path.name for p in scan.partials]}")
        if st.runs_dir.is_dir():
            hidden = [d.name for d in st.runs_dir.iterdir() if d.name.startswith(".")]
            if hidden:
                bad.append(f"left in the store after rm --partial: {hidden}")
        temps = [str(p) for p in self.store.rglob("*.tmp")] if self.store.exists() else []
        if temps:
            bad.append(f"temporary files left: {temps}")
        # the probe's private files, and IPC objects named after this case's processes
        end = time.monotonic() + GONE_TIMEOUT_S
        while list(self.tmpdir.iterdir()) and time.monotonic() < end:
            time.sleep(0.1)
        if list(self.tmpdir.iterdir()):
            bad.append(f"left in TMPDIR: {sorted(x.name for x in self.tmpdir.iterdir())}")
        pids = set(self.seen)
        for where in (Path("/dev/shm"), mqdir):
            if where is not None and where.is_dir():
                left = [x for x in os.listdir(where) if _named_for(x, pids)]
                if left:
                    bad.append(f"left in {where}: {left}")
        return bad

    def close(self) -> None:
        if self.p.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        for t in self._threads:
            t.join(timeout=10)
        for stream in (self.p.stdout, self.p.stderr):
            if stream is not None:
                stream.close()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def _sysv_left(before: set[tuple[str, str]], pids: set[int]) -> set[tuple[str, str]]:
    """System V objects made since ``before`` that no live process but these has used."""
    return {
        k
        for k, users in sysv_objects().items()
        if k not in before and not any(_alive(u, None) and u not in pids for u in users)
    }


# ------------------------------------------------------------------------------ the matrix


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("command", COMMANDS)
def test_kill_matrix(
    command: str,
    stage: str,
    tmp_path: Path,
    probe: str,
    subreaper: None,
    mqueue_dir: Path | None,
) -> None:
    """The four signals at one stage of one command (module docs), side by side."""
    sysv_before = set(sysv_objects())
    cases = [Case(command, stage, sig, tmp_path, probe) for sig in SIGNALS]
    try:
        # each signalled as soon as it is at its stage: a probe that measures meanwhile, while
        # the others catch up, only burns CPU time
        waiting, end = list(cases), time.monotonic() + STAGE_TIMEOUT_S
        while True:
            for c in [c for c in waiting if c.at_stage()]:
                c.signal()
                waiting.remove(c)
            if not waiting:
                break
            if time.monotonic() > end:
                late = waiting[0]
                raise AssertionError(
                    f"{late.label}: the stage was not reached: {''.join(late.err)}"
                )
            time.sleep(0.02)
        for c in cases:
            c.finish()
        problems = {c.label: c.problems(mqueue_dir) for c in cases}
        pids = {pid for c in cases for pid in c.seen} | {c.p.pid for c in cases}
        sysv = _sysv_left(sysv_before, pids)
        if sysv:  # one another process has only just made has no users yet: look again
            time.sleep(0.5)
            sysv &= _sysv_left(sysv_before, pids)
        if sysv:
            problems["System V objects"] = [f"left (ipcs): {sorted(sysv)}"]
        orphans = _descendants(os.getpid())
        if orphans:
            problems["this test"] = [f"processes left: {sorted(orphans)}"]
    finally:
        for c in cases:
            c.close()
    bad = {k: v for k, v in problems.items() if v}
    assert not bad, "\n".join(f"{k}: {'; '.join(v)}" for k, v in bad.items())
    for c in cases:  # what latscope said, for the record of a passing run
        said = [ln for ln in c.err if not ln.startswith("latscope: paused at")]
        print(c.label, c.p.returncode, "".join(said).strip())


def test_a_hangup_ignored_from_the_start_stays_ignored(tmp_path: Path, probe: str) -> None:
    """Under `nohup` (SIGHUP ignored when latscope starts) a hangup changes nothing; SIGTERM
    still stops it the same way."""
    if shutil.which("nohup") is None:
        pytest.skip("nohup is not installed")
    env = {
        **os.environ,
        "LATSCOPE_STORE": str(tmp_path / "store"),
        "LATSCOPE_PROBE": probe,
        "LATSCOPE_PAUSE_AT": "probe",
        "ASAN_OPTIONS": "detect_leaks=0",
    }
    p = subprocess.Popen(
        ["nohup", sys.executable, "-m", "latscope.cli", "run", "syscall", "-n", "200", "--quiet"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert p.stderr is not None
        line = p.stderr.readline()
        while line and not line.startswith("latscope: paused at"):
            line = p.stderr.readline()
        assert line, "latscope ended before it paused"
        p.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert p.poll() is None, "SIGHUP stopped a latscope started under nohup"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=EXIT_TIMEOUT_S)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 143, err
    assert err.strip() == "latscope: interrupted by SIGTERM; nothing was kept"
    assert not Store(tmp_path / "store").scan(check=False).partials


def test_ctrl_c_while_the_command_loads_is_one_line_and_130() -> None:
    """A Ctrl-C before the CLI's handlers are in place (while Python imports it) ends as a
    later one does: one line, status 130, no traceback (the entry point, latscope._entry)."""
    script = (
        "import sys, types\n"
        "fake = types.ModuleType('latscope.cli')\n"
        "def __getattr__(name):\n"
        "    raise KeyboardInterrupt\n"
        "fake.__getattr__ = __getattr__\n"
        "sys.modules['latscope.cli'] = fake\n"
        "from latscope._entry import main\n"
        "sys.exit(main())\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 130
    assert r.stderr == "latscope: interrupted by SIGINT\n"
