"""`latscope explain BENCH`: where the time of a timed region goes.

The scenario is measured as `latscope run` measures it (the run kept, its figures the usual
ones), then again in single-process rounds, alternately untraced and under perf (`perf
record` of the scheduler's switches with the kernel stack where the thread slept, its
wake-ups, the system calls, interrupts and softirqs). The probe enables the trace right
before its recorded iterations and disables it right after them (`--trace-ctl`, perf's
``--control``), so that the trace holds the timed loop and nothing else. `trace.attribute`
splits the traced loop's time of the thread that times the iterations into parts that sum to
it; the untraced rounds beside the traced ones say what the tracer itself costs.

The explanation is kept beside the run (``explain.json``, `EXPLAIN_FILE`) and shown by
`latscope show`. Tracing needs perf (Debian: linux-perf) and the right to read the kernel's
tracepoints (root, or CAP_PERFMON with kernel.perf_event_paranoid = -1): without either, one
line and exit 3.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import probe, samples
from ..errors import BadInput, Unsupported
from . import trace
from .trace import EXPLAIN_FILE, EXPLAIN_SCHEMA

if TYPE_CHECKING:
    from ..record import Run
    from ..store import Store

#: The events traced: the scheduler's switches with their kernel call chain, wake-ups, system
#: calls, interrupts and softirqs.
EVENTS = (
    "sched:sched_switch/call-graph=fp/",
    "sched:sched_wakeup",
    "raw_syscalls:sys_enter",
    "raw_syscalls:sys_exit",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_entry",
    "irq:softirq_exit",
)
#: perf's buffer per CPU (pages: 32 MiB), so that it keeps up with a loop of short calls
MMAP_PAGES = "8192"
#: Iterations of each traced or untraced round, at most (the trace of one is read whole).
MAX_TRACED_N = 20_000
#: Blocking stacks named in an explanation.
TOP_STACKS = 3


def perf_path() -> str:
    """perf, or Unsupported saying how to get it."""
    p = shutil.which("perf")
    if p is None:
        raise Unsupported(
            "latscope explain traces with perf, which is not installed here "
            "(Debian: apt-get install linux-perf)"
        )
    return p


def check_rights() -> None:
    """Unsupported (exit 3) where this user cannot read the kernel's tracepoints."""
    if os.geteuid() == 0:
        return
    try:
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        paranoid = 2
    if paranoid > -1:
        raise Unsupported(
            "latscope explain reads the scheduler's tracepoints: run it as root (or with "
            f"CAP_PERFMON and kernel.perf_event_paranoid = -1; it is {paranoid} here)"
        )


def _loop_ns(f: samples.SampleFile) -> float:
    """The loop's time per iteration (start to start), ns."""
    t = f.ns("t_start")
    return float(t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else float("nan")


def _round(
    bench: str,
    params: Mapping[str, Any],
    n: int,
    warmup: int | None,
    clock: str | None,
    d: Path,
    k: int,
    traced: bool,
) -> tuple[samples.SampleFile, str | None]:
    """One single-process run of the scenario into ``d``; traced: under perf, its trace as
    ``perf script`` text in a file (its path returned)."""
    out = d / f"{'t' if traced else 'u'}{k}.lss"
    args = probe.probe_args(bench, dict(params), out, n, warmup, clock, workers=1)
    if not traced:
        probe.run_probe(args)
        return samples.load(out).in_memory(), None  # used once its directory is gone
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    data = d / f"perf-{k}.data"
    try:
        perf = perf_path()
        events = [a for e in EVENTS for a in ("-e", e)]
        cmd = [
            *(["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []),
            perf, "record", "-q", "-m", MMAP_PAGES, "-D", "-1",
            "--control", f"fd:{ctl_r},{ack_w}",
            *events, "-o", str(data), "--",
            *args[:-2], "--trace-ctl", f"{ctl_w},{ack_r}", *args[-2:],
        ]  # fmt: skip
        try:
            probe.run_probe(cmd, pass_fds=(ctl_r, ctl_w, ack_r, ack_w), wrapped=True)
        except Unsupported:
            raise
        except BadInput as e:
            if "event syntax error" in e.message or "trace events" in e.message:
                raise Unsupported(
                    "perf cannot read the scheduler's tracepoints here: run as root"
                ) from None
            raise
    finally:
        for fd in (ctl_r, ctl_w, ack_r, ack_w):
            os.close(fd)
    text = d / f"perf-{k}.txt"
    with open(text, "w") as f:
        r = subprocess.run(
            [perf_path(), "script", "-i", str(data), "--ns", "--show-lost-events",
             "-F", "pid,tid,cpu,time,event,trace,ip,sym"],
            stdout=f, stderr=subprocess.PIPE, text=True, timeout=600,
        )  # fmt: skip
    data.unlink(missing_ok=True)
    if r.returncode != 0:
        raise Unsupported(f"perf script failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return samples.load(out).in_memory(), str(text)


def explain(
    bench: str,
    params: Mapping[str, Any],
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    rounds: int = 2,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The explanation of one scenario (see the module's text): rounds untraced and traced,
    alternately, of ``n`` iterations each (at most `MAX_TRACED_N`); the record `save` keeps."""
    b = probe.benchmark(bench)
    if b.get("engine") == "python":
        raise BadInput(
            f"latscope explain traces the C probe's benchmarks; {bench} runs in the Python "
            "engine, whose time is the interpreter's (docs/python-runtime.md)"
        )
    check_rights()
    perf_path()
    if not 1 <= rounds <= 10:
        raise BadInput(f"--rounds {rounds}: give 1 to 10")
    resolved = probe.check(bench, dict(params), n, warmup, clock)
    n = min(int(resolved["n"]), MAX_TRACED_N)
    names = trace.syscall_names()
    untraced: list[samples.SampleFile] = []
    traced: list[samples.SampleFile] = []
    parts: dict[str, float] = {}
    stacks: dict[str, float] = {}
    switches = {"voluntary": 0, "involuntary": 0}
    lost = 0
    total = 0.0
    iterations = 0
    with tempfile.TemporaryDirectory(prefix="latscope-explain-") as tmp:
        d = Path(tmp)
        for k in range(rounds):
            for is_traced in (False, True):
                if progress:
                    progress(f"round {k + 1} of {rounds}, {'traced' if is_traced else 'untraced'}")
                f, text = _round(bench, params, n, warmup, clock, d, k, is_traced)
                if not is_traced:
                    untraced.append(f)
                    continue
                traced.append(f)
                assert text is not None
                tid = _timing_tid(f)
                with open(text) as lines:
                    a = trace.attribute(trace.parse(lines), tid, names)
                os.unlink(text)
                if a.total_s <= 0:
                    raise Unsupported(
                        "the trace holds nothing of the measuring thread: perf recorded no "
                        "event of it (is the kernel's tracing turned off?)"
                    )
                for p, v in a.parts.items():
                    parts[p] = parts.get(p, 0.0) + v
                for s_, v in a.blocked_stacks.items():
                    stacks[s_] = stacks.get(s_, 0.0) + v
                for kk in switches:
                    switches[kk] += a.switches[kk]
                total += a.total_s
                lost += a.lost
                iterations += len(f.ns("t_start"))
    column = untraced[0].duration_columns[0]
    med = {
        "untraced": float(np.median(np.concatenate([f.ns(column) for f in untraced]))),
        "traced": float(np.median(np.concatenate([f.ns(column) for f in traced]))),
    }
    loop = {
        "untraced": float(np.mean([_loop_ns(f) for f in untraced])),
        "traced": float(np.mean([_loop_ns(f) for f in traced])),
    }
    per = 1e9 / iterations
    return {
        "schema": EXPLAIN_SCHEMA,
        "tracer": "perf " + _perf_version(),
        "events": list(EVENTS),
        "thread": "the thread that times the iterations",
        "rounds": rounds,
        "n": n,
        "traced_ns_per_iteration": total * per,
        "parts": [
            {"part": p, "ns_per_iteration": v * per, "share": v / total}
            for p, v in sorted(parts.items(), key=lambda kv: -kv[1])
        ],
        "blocked_stacks": [
            {"stack": s_, "ns_per_iteration": v * per, "share": v / total}
            for s_, v in sorted(stacks.items(), key=lambda kv: -kv[1])[:TOP_STACKS]
        ],
        "switches_per_iteration": {k: v / iterations for k, v in switches.items()},
        "lost_events": lost,
        "overhead": {
            "column": column,
            "untraced_p50_ns": med["untraced"],
            "traced_p50_ns": med["traced"],
            "untraced_loop_ns": loop["untraced"],
            "traced_loop_ns": loop["traced"],
        },
    }


def _timing_tid(f: samples.SampleFile) -> int:
    """The thread that timed the iterations: the one process of a single-process run (its
    main thread: the probe times on it)."""
    ws = f.header.get("workers") or []
    pid = ws[0].get("pid") if ws and isinstance(ws[0], dict) else None
    if not isinstance(pid, int) or pid <= 0:
        raise Unsupported("the probe did not record its process id: cannot follow its thread")
    return pid


def _perf_version() -> str:
    try:
        out = subprocess.run([perf_path(), "--version"], capture_output=True, text=True, timeout=20)
        return out.stdout.strip().removeprefix("perf version ").strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def save(store: Store, run: Run, record: dict[str, Any]) -> None:
    """Keep the explanation beside the run (through its directory held open and checked)."""
    assert run.dir is not None
    store.keep_file(run.dir, EXPLAIN_FILE, json.dumps(record, indent=1) + "\n")
