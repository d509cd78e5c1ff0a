"""Finding and running the measurement engine `latscope-probe`, and stopping it.

The probe's command line and its `--list` catalogue are the contract between the engine and
the lab (docs/probe-cli.md): nothing about benchmarks or parameters is declared here.

Signals (`stop_signals`, the one place): in every command SIGINT (Ctrl-C), SIGTERM and SIGHUP
take one path. The signal raises `Stopped` in the main thread; a probe that is running gets
the same signal and is waited for (it stops its peers and removes its files itself; after
`STOP_WAIT_S` it is killed), the run being made is not kept (its partial directory is
removed), and the command ends with one line and exit status 128 + the signal's number: 130
(SIGINT), 143 (SIGTERM), 129 (SIGHUP). A signal the process was started ignoring (SIGHUP under
``nohup``) stays ignored. While the probe is being started or stopped, or a run committed, a
signal is held (`held_signals`) and acted on right after, so neither the probe nor half a run
is left behind.

Tests: ``LATSCOPE_PAUSE_AT=STAGE`` makes the lab wait for a signal at a stage (`pause_point`):
``probe`` (the run's partial directory made, the probe not started), ``commit`` (the sample
file written; the summary and the commit follow).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from .children import error_line as _error_line
from .children import run_bounded
from .errors import BadInput, Interrupted, LatscopeError, MeasurementFailed, Unsupported

PROBE_NAME = "latscope-probe"
#: The Python runtime engine (docs/python-runtime.md): run by path under the interpreter a run
#: names (``-p python=...``; default: the one running latscope), never imported by the lab.
PYPROBE_DIR = Path(__file__).resolve().parent / "pyprobe"


def probe_path() -> str:
    """The probe executable: $LATSCOPE_PROBE, the one shipped in the package, or on PATH."""
    env = os.environ.get("LATSCOPE_PROBE")
    if env:
        if not os.access(env, os.X_OK):
            raise Unsupported(f"LATSCOPE_PROBE={env} is not an executable file")
        return env
    shipped = Path(__file__).resolve().parent / "_bin" / PROBE_NAME
    if shipped.is_file() and os.access(shipped, os.X_OK):
        return str(shipped)
    found = shutil.which(PROBE_NAME)
    if found:
        return found
    raise Unsupported(
        "latscope-probe was not found: install latscope with 'pip install .' (it builds the "
        "probe) or set LATSCOPE_PROBE to its path"
    )


@lru_cache(maxsize=4)
def _catalogue_for(path: str) -> dict[str, Any]:
    try:
        out = subprocess.run([path, "--list"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise Unsupported(f"cannot run {path}: {e.strerror}") from None
    if out.returncode != 0:
        raise Unsupported(f"{path} --list failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


@lru_cache(maxsize=4)
def _python_catalogue(interpreter: str) -> dict[str, Any] | None:
    """The Python runtime engine's catalogue under ``interpreter``; None where it cannot run."""
    try:
        out = subprocess.run(
            [interpreter, str(PYPROBE_DIR), "--list"], capture_output=True, text=True, timeout=60
        )
        return dict(json.loads(out.stdout)) if out.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


@lru_cache(maxsize=4)
def _merged(path: str, interpreter: str) -> dict[str, Any]:
    cat = dict(_catalogue_for(path))
    py = _python_catalogue(interpreter)
    if py is not None:
        cat["benchmarks"] = [*cat["benchmarks"], *py["benchmarks"]]
        cat["engines"] = {"python": {k: v for k, v in py.items() if k != "benchmarks"}}
    return cat


def catalogue() -> dict[str, Any]:
    """The JSON catalogue of benchmarks, parameters, columns and clocks: the probe's, and the
    Python runtime engine's benchmarks after them (``engine: "python"``, names ``py_*``)."""
    return _merged(probe_path(), sys.executable)


def engine_command(bench: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """The engine that runs ``bench``: the probe, or the Python runtime engine under the
    interpreter ``params["python"]`` names (default: the one running latscope)."""
    b = entry(bench)
    if b is None or b.get("engine") != "python":
        return [probe_path()]
    want = str((params or {}).get("python") or "") or sys.executable
    interp = shutil.which(want) or want
    if not (os.path.isfile(interp) and os.access(interp, os.X_OK)):
        raise BadInput(f"python={want}: no such interpreter (give its path)")
    return [interp, str(PYPROBE_DIR)]


def benchmark(name: str) -> dict[str, Any]:
    for b in catalogue()["benchmarks"]:
        if b["name"] == name:
            return b
    known = ", ".join(b["name"] for b in catalogue()["benchmarks"])
    raise BadInput(f"unknown benchmark '{name}' (known: {known}); see 'latscope list'")


def environment(path: str | None = None) -> dict[str, Any]:
    """The environment as the probe records it in a sample file's header (`env`), with the
    filesystem holding ``path`` when given (``latscope-probe --env [DIR]``)."""
    args = [probe_path(), "--env"] + ([path] if path is not None else [])
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise Unsupported(f"cannot run {args[0]}: {e.strerror}") from None
    if out.returncode == 2:
        raise BadInput(_error_line(out.stderr))
    if out.returncode != 0:
        raise Unsupported(f"{args[0]} --env failed: {_error_line(out.stderr)}")
    env: dict[str, Any] = json.loads(out.stdout)
    return env


def catalogue_or_none() -> dict[str, Any] | None:
    """The catalogue, or None where no probe can be run: views of stored runs go on without
    one, with what the runs recorded."""
    try:
        return catalogue()
    except LatscopeError:
        return None


def entry(name: str) -> dict[str, Any] | None:
    """The catalogue entry of benchmark ``name``; None where the probe does not know it (an
    import, a benchmark of another probe) or no probe can be run."""
    for b in (catalogue_or_none() or {}).get("benchmarks", []):
        if b.get("name") == name:
            return b
    return None


def clock_choices() -> list[str]:
    """What ``--clock`` takes (catalogue ``clock_choices``: auto, then every clock)."""
    cat = catalogue()
    return list(cat.get("clock_choices") or ["auto"] + [c["name"] for c in cat["clocks"]])


def latency_label(kind: str | None) -> str:
    """The short label of a latency kind (catalogue ``latencies``); the kind itself where the
    catalogue does not name it."""
    lat = ((catalogue_or_none() or {}).get("latencies") or {}).get(kind or "")
    return str(lat["label"]) if isinstance(lat, dict) and lat.get("label") else (kind or "")


def derived_columns(benchmark: str, columns: list[str]) -> list[dict[str, Any]]:
    """The columns the lab computes from recorded ones (catalogue ``derived_columns``: name,
    from, divide_by, formula, latency, ...; minus and divide_by_param for a difference such
    as ctx's switch) that a run of ``benchmark`` with these recorded
    ``columns`` has: the benchmark's own; for a benchmark this probe does not know (an import,
    a run of another probe), those of any benchmark whose source column the run has."""
    cat = catalogue_or_none()
    if cat is None:
        return []
    b = entry(benchmark)
    if b is not None:
        ds = list(b.get("derived_columns") or [])
    else:
        seen: dict[str, dict[str, Any]] = {}
        for other in cat.get("benchmarks", []):
            for d in other.get("derived_columns") or []:
                seen.setdefault(str(d.get("name")), d)
        ds = list(seen.values())
    return [
        d
        for d in ds
        if d.get("from") in columns
        and d.get("minus", None) in (None, *columns)
        and d.get("name") not in columns
        and (d.get("divide_by") or d.get("divide_by_param"))
    ]


def placement(cpus: Any) -> str:
    """Where the two parties of a ping-pong run are (the catalogue's placements): same_cpu,
    different_cpus or unpinned, for a cpus value as given ("A,B", "none") or as a header
    records it ([A, B])."""
    if isinstance(cpus, (list, tuple)) and len(cpus) == 2:
        a, b = (str(x) for x in cpus)
    elif isinstance(cpus, str) and "," in cpus:
        a, b = (x.strip() for x in cpus.split(",", 1))
    else:
        return "unpinned"
    if a in ("", "-1") or b in ("", "-1"):
        return "unpinned"
    return "same_cpu" if a == b else "different_cpus"


def spell(bench: str, key: str, value: Any) -> str:
    """A parameter value as the catalogue and a user write it, whatever form a header or a
    store recorded: booleans true/false, an unpinned CPU (-1, [-1, -1], "-1,-1") "none", a
    placement "A,B", anything else as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    ptype = next(
        (p.get("type") for p in (entry(bench) or {}).get("params", []) if p.get("name") == key),
        None,
    )
    cpu_like = ptype in ("cpu", "cpus") or (ptype is None and key in ("cpu", "cpus"))
    if cpu_like:
        parts = [str(x).strip() for x in value] if isinstance(value, (list, tuple)) else None
        if parts is None and isinstance(value, str) and "," in value:
            parts = [x.strip() for x in value.split(",")]
        if parts is None:
            parts = [str(value).strip()]
        if all(x in ("-1", "", "none") for x in parts):
            return "none"
        return ",".join(parts)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def param_words(bench: str, params: Mapping[str, Any]) -> list[str]:
    """``key=value`` of each parameter that has a value, spelt as the catalogue does
    (`spell`)."""
    return [f"{k}={spell(bench, k, v)}" for k, v in params.items() if v not in ("", None)]


def params_text(bench: str, params: Mapping[str, Any], sep: str = " ") -> str:
    """`param_words` joined by ``sep``."""
    return sep.join(param_words(bench, params))


def holds(cond: Mapping[str, Any] | None, params: Mapping[str, Any]) -> bool:
    """Whether a catalogue condition (``default_n_rules[].when``,
    ``display.faults_expected_when``: ``param`` and one of ``equals``, ``not_equals`` or
    ``placement``) holds for these parameters; a null condition never does."""
    if not cond or "param" not in cond:
        return False
    v = params.get(str(cond["param"]))
    if "placement" in cond:
        return placement(v) == cond["placement"]
    text = ("true" if v else "false") if isinstance(v, bool) else str(v)
    if "equals" in cond:
        return text == str(cond["equals"])
    if "not_equals" in cond:
        return v is not None and text != str(cond["not_equals"])
    return False


def rule_n(bench: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
    """The ``n`` of the first of the benchmark's ``default_n_rules`` that holds for
    ``params`` (spin on one CPU: 500), None where none does."""
    for r in bench.get("default_n_rules") or []:
        if holds(r.get("when"), params) and isinstance(r.get("n"), int):
            return int(r["n"])
    return None


@lru_cache(maxsize=512)
def _check_for(cmd: tuple[str, ...], args: tuple[str, ...]) -> tuple[int, str]:
    # under limits: the Python engine runs under an interpreter the user named (children.py)
    out = run_bounded([*cmd, *args], timeout=20, what=cmd[0])
    if out.returncode == 0:
        return 0, out.stdout
    return out.returncode, _error_line(out.stderr)


def check(
    bench: str,
    params: Mapping[str, Any] | None = None,
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
) -> dict[str, Any]:
    """``latscope-probe BENCH --check``: the run's settings resolved by the probe (params with
    defaults filled in and typed as in the sample file's header, n, warmup, workers, clock),
    nothing measured; the probe's refusal as BadInput (exit 2) or Unsupported (exit 3), one
    line.  One probe call per distinct question in a process."""
    params = dict(params or {})
    args = [bench, "--check", *_settings(_engine_params(bench, params), n, warmup, clock)]
    cmd = tuple(engine_command(bench, params))
    rc, out = _check_for(cmd, tuple(args))
    if rc == 0:
        try:
            got = json.loads(out)
        except ValueError:
            got = None
        if not isinstance(got, dict):
            raise Unsupported(
                f"{cmd[0]} did not answer as latscope's engine does (no settings came back); "
                "is it a Python 3 interpreter (python=) or latscope's probe?"
            )
        return dict(got)
    exc = _EXIT.get(rc)
    if exc is None:
        raise LatscopeError(f"latscope-probe ended with status {rc}: {out}", 1)
    raise exc(out)


def clocks() -> list[dict[str, Any]]:
    """Step (granularity) and read cost of every clock on this machine (runs the probe)."""
    out = subprocess.run([probe_path(), "--clocks"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise Unsupported(out.stderr.strip() or "latscope-probe --clocks failed")
    return json.loads(out.stdout)


_EXIT = {1: MeasurementFailed, 2: BadInput, 3: Unsupported}


def _engine_params(bench: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters an engine is given: ``python`` names the interpreter the Python
    runtime engine runs under, resolved to its path (the engine checks that it is its own)."""
    out = dict(params)
    if out.get("python"):
        out["python"] = engine_command(bench, params)[0]
    return out


def _settings(
    params: Mapping[str, Any], n: int | None, warmup: int | None, clock: str | None
) -> list[str]:
    """The probe options a run and its --check share: -p, -n, --warmup, --clock."""
    args: list[str] = []
    for k, v in params.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        args += ["-p", f"{k}={v}"]
    if n is not None:
        args += ["-n", str(n)]
    if warmup is not None:
        args += ["--warmup", str(warmup)]
    if clock is not None:
        args += ["--clock", clock]
    return args


def probe_args(
    bench: str,
    params: Mapping[str, Any],
    out: str | os.PathLike[str],
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    peer_timeout: float | None = None,
    workers: int | str | None = None,
    inject_ns: float | None = None,
    sched: str | None = None,
    mlock: bool = False,
) -> list[str]:
    """The probe's command line. ``workers``: a number, or "auto" (the probe decides: up to
    10, at least 200 iterations each); None or 1 gives a single process. ``sched``
    (``fifo:P`` or ``rr:P``) and ``mlock``: real-time scheduling and locked memory for the
    measuring threads and their peers (the probe checks them)."""
    args = [
        *engine_command(bench, params),
        bench,
        *_settings(_engine_params(bench, params), n, warmup, clock),
    ]
    if peer_timeout is not None:
        # the probe's own words and limits; nan and inf never pass a comparison, so say it
        if not (math.isfinite(peer_timeout) and 0.1 <= peer_timeout <= 3600):
            raise BadInput(f"--peer-timeout {peer_timeout}: give seconds between 0.1 and 3600")
        args += ["--peer-timeout", repr(float(peer_timeout))]
    if workers == "auto" or (isinstance(workers, int) and workers > 1):
        args += ["--workers", str(workers)]
    if inject_ns:
        args += ["--inject-ns", str(int(round(inject_ns)))]
    args += [*(["--sched", sched] if sched else []), *(["--mlock"] if mlock else [])]
    return [*args, "-o", str(out)]


# ------------------------------------------------------------------------------- signals

#: The signals that stop a command: Ctrl-C, kill's default, a terminal that went away.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: How long a stopped probe may take to clean up before it is killed.
STOP_WAIT_S = 5.0
#: How long a `pause_point` waits for a signal before it goes on.
PAUSE_S = 60.0


class Stopped(KeyboardInterrupt):
    """One of STOP_SIGNALS arrived (raised in the main thread by `stop_signals`' handler).
    A KeyboardInterrupt, so that every path Ctrl-C takes, SIGTERM and SIGHUP take too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def signum_of(exc: BaseException) -> int:
    """The signal a KeyboardInterrupt or Interrupted stands for (plain Ctrl-C: SIGINT)."""
    return int(getattr(exc, "signum", signal.SIGINT))


class _Signals:
    depth = 0  # stop_signals blocks entered
    held = 0  # held_signals blocks entered
    pending: int | None = None  # a signal that arrived while held


def _on_signal(signum: int, frame: Any) -> None:
    if _Signals.held:
        if _Signals.pending is None:
            _Signals.pending = signum
        return
    raise Stopped(signum)


@contextmanager
def stop_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `Stopped` in the block (module docs); the handlers
    before it come back after. Nested blocks and other threads than the main one leave the
    handlers as they are."""
    if _Signals.depth or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}
    for s in STOP_SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:  # nohup: SIGHUP stays ignored
            old[s] = signal.signal(s, _on_signal)
    _Signals.depth, _Signals.held, _Signals.pending = 1, 0, None
    try:
        yield
    finally:
        _Signals.depth, _Signals.held, _Signals.pending = 0, 0, None
        for s, h in old.items():
            signal.signal(s, h)


def _release(drop: bool = False, failed: BaseException | None = None) -> None:
    """End a held block: a signal that arrived meanwhile raises `Stopped` now, unless a stop
    is already under way (``drop``, or ``failed`` is one; an Interrupted by the probe's own
    SIGINT then takes the lab's signal)."""
    _Signals.held -= 1
    if _Signals.held:
        return
    pending, _Signals.pending = _Signals.pending, None
    if pending is None or drop:
        return
    if isinstance(failed, Interrupted):
        failed.retitle(pending)
    elif not isinstance(failed, KeyboardInterrupt):
        raise Stopped(pending)


@contextmanager
def held_signals(drop: bool = False, during: BaseException | None = None) -> Iterator[None]:
    """A block a stop signal must not cut short (stopping the probe, committing a run or
    removing it): a signal that arrives meanwhile is acted on when the block ends
    (`_release`). ``during``: the exception being handled, if the block is clean-up."""
    _Signals.held += 1
    try:
        yield
    except BaseException as e:
        _release(drop, e)
        raise
    _release(drop, during)


def pause_point(stage: str) -> None:
    """With ``LATSCOPE_PAUSE_AT=stage``: say so on stderr and wait for a signal (at most
    PAUSE_S seconds), so that a test can stop the lab at this stage (module docs)."""
    if os.environ.get("LATSCOPE_PAUSE_AT") != stage:
        return
    sys.stderr.write(f"latscope: paused at {stage} (pid {os.getpid()})\n")
    sys.stderr.flush()
    end = time.monotonic() + PAUSE_S
    while time.monotonic() < end:
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[str], signum: int) -> int:
    """Pass the signal on to the probe and wait for it to clean up (killed after
    STOP_WAIT_S); its exit status."""
    if proc.poll() is None:
        try:
            proc.send_signal(signum)
            return proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def run_probe(
    args: list[str],
    progress: Callable[[int, int], None] | None = None,
    pass_fds: tuple[int, ...] = (),
    wrapped: bool = False,
) -> list[str]:
    """Run the probe; report progress; map its exit code to an exception.

    Returns the probe's warning lines. A stop signal (`stop_signals`: SIGINT, SIGTERM, SIGHUP)
    is passed on to the probe, which cleans up its peers and files itself, and waited for;
    then Interrupted is raised, carrying the signal. ``pass_fds``: more descriptors it
    inherits; ``wrapped``: ``args`` run the probe as a child (a tracer that passes its exit
    status on), and the probe dies with that program, not with this process.
    """
    rfd, wfd = os.pipe()
    full = [*args, "--progress-fd", str(wfd)]
    # the probe ends with its parent (parent-death signal); naming it closes the race of a
    # parent that dies before the probe has arranged that
    env = {k: v for k, v in os.environ.items() if k != "LATSCOPE_PROBE_PARENT"}
    env.update({} if wrapped else {"LATSCOPE_PROBE_PARENT": str(os.getpid())})
    stderr_chunks: list[str] = []
    _Signals.held += 1  # a signal while the probe starts is acted on once it can be passed on
    try:
        proc = subprocess.Popen(
            full,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=(wfd, *pass_fds),
            env=env,
        )
    except BaseException as e:
        os.close(rfd)
        os.close(wfd)
        _release(drop=True)
        if isinstance(e, OSError):
            raise Unsupported(f"cannot start the probe: {e.strerror}") from None
        raise
    os.close(wfd)

    def pump_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr_chunks.append(line)

    t = threading.Thread(target=pump_stderr, daemon=True)
    stopped: int | None = None
    released = False
    try:
        t.start()
        with os.fdopen(rfd, "r") as pf:
            released = True
            _release()  # from here a signal stops the probe (below)
            for line in pf:
                parts = line.split()
                if progress and len(parts) == 3 and parts[0] == "progress":
                    progress(int(parts[1]), int(parts[2]))
        rc = proc.wait()
    except KeyboardInterrupt as e:
        stopped = signum_of(e)
        with held_signals(drop=True):  # a second signal does not cut the clean-up short
            if not released:
                _release(drop=True)
            rc = _stop(proc, stopped)
    except BaseException:
        with held_signals(drop=True):
            if not released:
                _release(drop=True)
            _stop(proc, signal.SIGTERM)
        raise
    t.join(timeout=2)
    stderr = "".join(stderr_chunks)
    if stopped is not None:
        raise Interrupted(signum=stopped)
    if rc in (130, -signal.SIGINT, -signal.SIGTERM, -signal.SIGHUP):
        raise Interrupted(signum=-rc if rc < 0 else signal.SIGINT)
    if rc != 0:
        exc = _EXIT.get(rc)
        if exc is None:
            raise LatscopeError(f"latscope-probe ended with status {rc}: {_error_line(stderr)}", 1)
        raise exc(_error_line(stderr))
    return [
        ln.split("warning: ", 1)[1]
        for ln in stderr.splitlines()
        if "warning: " in ln and ln.startswith(("latscope-probe", "latscope-pyprobe"))
    ]
