"""Shared fixtures: the probe binary, a private store, and a CLI runner (in this process, or
a process of its own where only that shows the behaviour)."""

from __future__ import annotations

import _signal
import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

# One BLAS thread per test process: the tests' arrays are small, and BLAS threads spinning
# against each other (or against tests in parallel) cost more than they give. Set before
# numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The tests send SIGINT, SIGTERM and SIGHUP to the processes they start. A test run started
# under nohup, or in the background of a script, has SIGHUP (or SIGINT) ignored, and every
# process it starts inherits that; latscope then rightly keeps ignoring it (nohup's meaning),
# and the tests would wait in vain. The test processes take the defaults back, so what they
# start does too.
if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _installed_probe() -> str:
    from latscope import probe as _probe

    return _probe.probe_path()


@pytest.fixture(scope="session")
def probe() -> str:
    """The probe under test: the sanitizer build when the Makefile provides one."""
    san = os.environ.get("LATSCOPE_SAN_PROBE")
    if san and os.access(san, os.X_OK):
        return san
    return _installed_probe()


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "store"
    monkeypatch.setenv("LATSCOPE_STORE", str(d))
    return d


COLUMNS = 200


class CLITimeout(BaseException):
    """An in-process command ran out of time (a BaseException, so that no `except Exception`
    in the command can swallow it)."""


#: module name -> (the module, the consoles it held when it was looked at)
_CONSOLES_OF: dict[str, tuple[Any, list[Any]]] = {}


def _module_consoles() -> list[Any]:
    """The rich consoles latscope's modules keep at module level (the CLI's `console` and
    `err_console`, wherever the package keeps them). A module is looked through once (its
    consoles are made when it is imported); a module imported since, or again, is looked at
    now: looking through every module at each call cost 4 ms of the in-process CLI's 25."""
    from rich.console import Console

    found: dict[int, Any] = {}
    for name in [n for n in list(sys.modules) if n.startswith("latscope")]:
        mod = sys.modules.get(name)
        if mod is None or not (name == "latscope" or name.startswith("latscope.")):
            continue
        seen = _CONSOLES_OF.get(name)
        if seen is None or seen[0] is not mod:
            seen = (mod, [v for v in list(vars(mod).values()) if isinstance(v, Console)])
            _CONSOLES_OF[name] = seen
        for v in seen[1]:
            found[id(v)] = v
    return list(found.values())


@contextlib.contextmanager
def reaped(p: subprocess.Popen[Any]) -> Iterator[subprocess.Popen[Any]]:
    """``p``, killed and waited for at the end if it is still running (an assertion failed
    or a wait timed out first), so that no test leaves a process behind."""
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@contextlib.contextmanager
def _consoles_on(out: io.StringIO, err: io.StringIO, width: int) -> Iterator[None]:
    """Module-level consoles write to the captured streams, `width` columns wide, without
    colour, as they would in a fresh `latscope` process with COLUMNS=width and pipes; their
    own settings come back afterwards."""
    keys = ("_file", "_width", "_color_system")
    saved = []
    for c in _module_consoles():
        saved.append((c, {k: vars(c)[k] for k in keys if k in vars(c)}))
        c.file = err if c.stderr else out
        c.width = width
        c._color_system = None  # a pipe: no colour codes (fixed when the console was made)
    try:
        yield
    finally:
        for c, attrs in saved:
            vars(c).update(attrs)


#: The signals whose handlers a call may change (`_signals_kept`), as plain numbers.
_SIGNALS = [int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]


@contextlib.contextmanager
def _signals_kept(timeout: float, what: str) -> Iterator[None]:
    """Every signal handler and the signal mask as they were (the CLI may install its own,
    e.g. SIGTERM during a suite); meanwhile SIGALRM ends the call after `timeout` seconds.
    The handlers are read with `_signal.getsignal`, the same objects `signal.getsignal`
    gives but SIG_DFL and SIG_IGN as numbers: a tenth of its cost (63 signals a call)."""
    handlers = {s: _signal.getsignal(s) for s in _SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])

    def expired(signum: int, frame: Any) -> None:
        raise CLITimeout(f"{what} did not finish within {timeout:g} s")

    signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for s, h in handlers.items():
            if h is not None and _signal.getsignal(s) is not h:
                signal.signal(s, h)


@contextlib.contextmanager
def _environment(env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    """os.environ, the working directory and sys.argv for one call, restored afterwards (the
    variables that differ: clearing and setting every one of them cost more than the rest of
    the call's set-up)."""
    old_env, old_cwd, old_argv = dict(os.environ), os.getcwd(), sys.argv
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
        now = dict(os.environ)
        for k in now.keys() - old_env.keys():
            del os.environ[k]
        for k, v in old_env.items():
            if now.get(k) != v:
                os.environ[k] = v


@contextlib.contextmanager
def _warnings_to(err: io.StringIO) -> Iterator[None]:
    """Warnings printed to the captured stderr, filtered as a plain interpreter does (so a
    warning a user would see fails a test that wants stderr clean)."""

    def show(message: Any, category: Any, filename: str, lineno: int, *_: Any) -> None:
        err.write(warnings.formatwarning(message, category, filename, lineno))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for cat in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", cat)
        warnings.showwarning = show
        yield


def _exit_code(code: object, err: io.StringIO) -> int:
    """The status an interpreter exits with for `SystemExit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    err.write(f"{code}\n")
    return 1


class CLI:
    """`latscope ARGS` against the test's private store (LATSCOPE_STORE), with COLUMNS=200.

    ``cli(*args)`` calls ``latscope.cli.main`` in this process and returns what
    ``subprocess.run`` would: exit status, stdout and stderr. For the call the environment,
    working directory (``cwd=``), sys.argv and signal handlers are set and restored after; the
    module-level rich consoles write to the captured streams; argparse's SystemExit gives its
    code and an uncaught exception a traceback on stderr and status 1, as in a process.

    ``cli.popen(*args, **popen_kwargs)`` starts ``python -m latscope.cli`` instead, for what
    only a process of its own shows: a signal to it or its process group, being killed, two
    writers at once."""

    def __init__(self, store: Path) -> None:
        self.store = store

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a `latscope` process: ours, the store, COLUMNS, `extra`."""
        return {
            **os.environ,
            "LATSCOPE_STORE": str(self.store),
            "COLUMNS": str(COLUMNS),
            **(extra or {}),
        }

    def __call__(
        self,
        *args: str,
        timeout: float = 300,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        from latscope.cli import main

        out, err = io.StringIO(), io.StringIO()
        what = "latscope " + " ".join(args)
        call_env = {"LATSCOPE_STORE": str(self.store), "COLUMNS": str(COLUMNS), **(env or {})}
        with contextlib.ExitStack() as stack:
            stack.enter_context(_environment(call_env, cwd))
            sys.argv = ["latscope", *args]
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(err))
            stack.enter_context(_consoles_on(out, err, int(call_env["COLUMNS"])))
            stack.enter_context(_warnings_to(err))
            stack.enter_context(_signals_kept(timeout, what))
            try:
                rc = _exit_code(main(list(args)), err)
            except SystemExit as e:
                rc = _exit_code(e.code, err)
            except CLITimeout as e:
                pytest.fail(str(e))
            except Exception:
                traceback.print_exc(file=err)
                rc = 1
        return subprocess.CompletedProcess(["latscope", *args], rc, out.getvalue(), err.getvalue())

    @staticmethod
    def argv(*args: str) -> list[str]:
        return [sys.executable, "-m", "latscope.cli", *args]

    def popen(
        self, *args: str, env: Mapping[str, str] | None = None, **kwargs: Any
    ) -> subprocess.Popen[str]:
        """`latscope ARGS` started as a process of its own (kwargs go to Popen)."""
        return subprocess.Popen(self.argv(*args), text=True, env=self.env(env), **kwargs)


@pytest.fixture()
def cli(store: Path) -> CLI:
    return CLI(store)


@pytest.fixture()
def short_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """`latscope ab` run by `cli` (in this process) with arms that alternate as processes:
    each process times 5 ms of iterations (an arms run's block in one process, --block-ms),
    not 100 (arms.PROCESS_BLOCK_MS). A run makes its 12 rounds (arms.MIN_ROUNDS) whatever its
    --time, 26 processes, and two spinning parties spent 0.2 s of CPU time in each; what the
    tests assert of such a run (one block of one arm in each process, the rounds, the arms
    and their comparison) does not depend on how long a block is."""
    from latscope.measure import arms

    monkeypatch.setattr(arms, "PROCESS_BLOCK_MS", 5.0)


PREEMPTED = "latscope-probe: warning: the measuring threads were preempted"


def unexpected_stderr(stderr: str) -> list[str]:
    """The probe's stderr lines but its warning that other work preempted the measuring
    threads: on a busy machine (tests in parallel, other load) the probe rightly says so, and
    that says nothing against the probe."""
    return [ln for ln in stderr.splitlines() if not ln.startswith(PREEMPTED)]


def probe_error_line(stderr: str) -> str:
    """The probe's one error line (its warnings aside): exactly one, and an error."""
    lines = [ln for ln in stderr.strip().splitlines() if "warning:" not in ln]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("latscope-probe: error: "), stderr
    return lines[0]


def run_probe(probe: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    return subprocess.run([probe, *args], capture_output=True, text=True, timeout=timeout, env=env)


is_root = os.geteuid() == 0


def children(pid: int) -> list[int]:
    """The direct children of every thread of process `pid` (from /proc); none once it has
    ended, never an error: the processes looked at come and go while we look."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").glob("*/children"))
    except OSError:  # the process (or one of its threads) ended while we looked
        return out
    for task in tasks:
        try:
            out += [int(x) for x in task.read_text().split()]
        except (OSError, ValueError):
            pass
    return out


def procs_mentioning(text: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `text`."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (p / "status").read_text()
        except OSError:
            continue
        if text in cmd and "zombie" not in state:
            out.append(int(p.name))
    return out


SEM_GETPID = 11  # semctl command: the process that did the last semop on a semaphore


def sysv_objects() -> dict[tuple[str, str], set[int]]:
    """Every System V IPC object with the processes the kernel records for it (shm: creator
    and last user; msg: last sender and receiver; sem: each semaphore's last semop)."""
    """Every System V semaphore set, message queue and shared memory segment on this
    machine, with the processes that made or last used it (from /proc/sysvipc)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    out: dict[tuple[str, str], set[int]] = {}
    for kind, id_key in (("sem", "semid"), ("msg", "msqid"), ("shm", "shmid")):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        head = lines[0].split()
        for line in lines[1:]:
            f = dict(zip(head, line.split(), strict=False))
            if id_key not in f:
                continue
            pids = {int(f[k]) for k in ("cpid", "lpid", "lspid", "lrpid") if k in f}
            if kind == "sem":
                for i in range(int(f.get("nsems", 0))):
                    pids.add(max(0, libc.semctl(int(f[id_key]), i, SEM_GETPID)))
            out[(kind, f[id_key])] = pids - {0}
    return out


@pytest.fixture(scope="session")
def mqueue_dir() -> Iterator[Path | None]:
    """Where POSIX message queues can be listed: /dev/mqueue, or a private mount (root)."""
    if Path("/dev/mqueue").is_dir() and os.path.ismount("/dev/mqueue"):
        yield Path("/dev/mqueue")
        return
    if os.geteuid() != 0:
        yield None  # the queues' names are checked one by one instead (no_queue_named)
        return
    d = Path(tempfile.mkdtemp(prefix="ls-mq-"))
    r = subprocess.run(["mount", "-t", "mqueue", "none", str(d)], capture_output=True)
    if r.returncode != 0:
        d.rmdir()
        yield None
        return
    yield d
    subprocess.run(["umount", str(d)])
    d.rmdir()


@pytest.fixture()
def fleet_hosts(tmp_path: Path) -> Iterator[Any]:
    """``fleet_hosts(n)``: n namespace hosts with their own sshd and an inventory
    (tests/hosts.py), all removed when the test ends; skipped where they cannot be made."""
    import hosts

    why = hosts.unavailable()
    if why:
        pytest.skip(why)
    with contextlib.ExitStack() as stack:
        yield lambda n: stack.enter_context(hosts.fleet(n, tmp_path))
