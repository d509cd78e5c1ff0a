"""Where the time of a timed loop goes, from a kernel trace of it (`latscope explain`).

The trace is perf's (`perf record` of the scheduler's switches, with the kernel stack where a
thread left its CPU, its wake-ups, every system call's entry and exit, and the interrupts and
softirqs), enabled by the probe right before its recorded iterations and disabled right after
them (`--trace-ctl`), read back as ``perf script`` text. `attribute` follows one thread — the
one that times the iterations — through it and splits the loop's time, exactly, into:

* ``user``: on its CPU outside any system call (its clock reads, its stores, its loop);
* ``syscall NAME``: on its CPU inside a system call (the kernel's work for it);
* ``blocked``: off its CPU, asleep, by the kernel stack where it went to sleep;
* ``run queue, woken``: woken up, waiting for its CPU; ``run queue, preempted``: taken off
  its CPU while runnable (a higher-priority task, the end of its slice, a woken peer);
* ``interrupts`` and ``softirqs``: handlers that ran on its CPU while it was there.

The parts sum to the traced time, so that each is a share of the loop (and, divided by the
iterations, a part of the mean iteration). Pure functions of the text: tested on synthetic
traces whose answer is known.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The file beside a kept run that holds its explanation (written by measure/explain.py).
EXPLAIN_FILE = "explain.json"
#: Its layout's version.
EXPLAIN_SCHEMA = 1
#: Kernel frames that only say "the scheduler ran": a blocking stack is named by what lies
#: below them (the first frames that are not these).
SCHED_FRAMES = frozenset(
    {
        "__schedule",
        "schedule",
        "schedule_timeout",
        "schedule_hrtimeout_range",
        "schedule_hrtimeout_range_clock",
        "io_schedule",
        "io_schedule_timeout",
        "schedule_preempt_disabled",
        "preempt_schedule",
        "preempt_schedule_common",
        "__cond_resched",
        "do_syscall_64",
        "entry_SYSCALL_64_after_hwframe",
        "exit_to_user_mode_loop",
        "exit_to_user_mode_prepare",
        "syscall_exit_to_user_mode",
    }
)
#: Frames of a blocking stack kept in its name.
STACK_DEPTH = 3

_EVENT = re.compile(
    r"^\s*(?P<pid>\d+)/(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>\d+\.\d+):\s+"
    r"(?P<event>[\w:]+):\s?(?P<rest>.*)$"
)
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>\S+)")
_LOST = re.compile(
    r"^\s*(?P<pid>\d+)/(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>\d+\.\d+):\s+"
    r"PERF_RECORD_LOST lost (?P<lost>\d+)"
)
_KERNEL = re.compile(r"^ffff")


@dataclass
class Event:
    pid: int
    tid: int
    cpu: int
    t: float  # seconds
    name: str  # sched_switch, sched_wakeup, sys_enter, sys_exit, irq_entry, ...
    rest: str
    stack: list[str] = field(default_factory=list)  # kernel frames, innermost first


def parse(lines: Iterable[str]) -> Iterator[Event]:
    """Events of ``perf script -F pid,tid,cpu,time,event,trace,ip,sym --ns
    --show-lost-events`` text, in order, each with the kernel frames of its call chain (where
    recorded); perf's lost-events records as events named ``lost`` (their count in ``rest``).
    Lines that are not an event or a frame are skipped."""
    ev: Event | None = None
    for line in lines:
        lost = _LOST.match(line)
        if lost:  # perf could not keep up (--show-lost-events): events missing here
            if ev is not None:
                yield ev
            ev = Event(int(lost["pid"]), int(lost["tid"]), int(lost["cpu"]),
                       float(lost["time"]), "lost", lost["lost"])  # fmt: skip
            continue
        m = _EVENT.match(line)
        if m:
            if ev is not None:
                yield ev
            name = m["event"].rsplit(":", 1)[-1]
            rest = m["rest"]
            ev = Event(int(m["pid"]), int(m["tid"]), int(m["cpu"]), float(m["time"]), name, rest)
            # a single-frame event prints its ip and symbol on its own line
            continue
        f = _FRAME.match(line)
        if f and ev is not None and _KERNEL.match(f["ip"]):
            ev.stack.append(f["sym"])
    if ev is not None:
        yield ev


def _field(rest: str, key: str) -> str | None:
    m = re.search(rf"(?:^|\s){re.escape(key)}=(\S+)", rest)
    return m[1] if m else None


def _nr(rest: str) -> int | None:
    m = re.match(r"NR (-?\d+)", rest)
    return int(m[1]) if m else None


def stack_name(stack: list[str]) -> str:
    """A blocking stack named by its first frames below the scheduler's own, innermost
    first, joined by '<': ``anon_pipe_read < vfs_read < ksys_read``."""
    frames = [f for f in stack if f not in SCHED_FRAMES and not f.startswith("[")]
    return " < ".join(frames[:STACK_DEPTH]) or "(no kernel stack)"


@dataclass
class Attribution:
    """The traced time of one thread, split into parts that sum to it (seconds)."""

    tid: int
    total_s: float
    parts: dict[str, float]  # part -> seconds
    blocked_stacks: dict[str, float]  # stack name -> seconds asleep there
    switches: dict[str, int]  # voluntary, involuntary
    windows: int  # enabled stretches seen (one per worker and block)
    lost: int = 0  # events perf lost: the time around them is left out


def syscall_names(
    header: Path = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
) -> dict[int, str]:
    """System call numbers to names, from the kernel's header where it is installed (empty
    where it is not: then parts say ``syscall NR``)."""
    try:
        text = header.read_text()
    except OSError:
        return {}
    return {int(n): name for name, n in re.findall(r"#define __NR_(\w+)\s+(\d+)", text)}


def attribute(
    events: Iterable[Event], tid: int, names: dict[int, str] | None = None, gap_s: float = 0.05
) -> Attribution:
    """Split the traced time of thread ``tid`` (see the module's text). A silence of more than
    ``gap_s`` in the whole trace is the tracer disabled between two stretches (workers,
    blocks): nothing is counted across it."""
    names = names or {}
    parts: dict[str, float] = defaultdict(float)
    stacks: dict[str, float] = defaultdict(float)
    sw = {"voluntary": 0, "involuntary": 0}
    state: str | None = None  # None: not yet seen in this stretch
    since = 0.0
    in_call: str | None = None
    on_cpu: int | None = None  # its CPU while it runs
    nest: list[str] = []  # interrupt parts entered on its CPU while it runs
    blocked_key = ""
    last_t: float | None = None
    windows = 0
    lost = 0

    def charge(t: float, to: str | None = None) -> None:
        nonlocal since, state
        if state is not None and t > since:
            parts[state] += t - since
            if state == "blocked":
                stacks[blocked_key] += t - since
        since = t
        if to is not None:
            state = to

    def running() -> str:
        return nest[-1] if nest else (f"syscall {in_call}" if in_call else "user")

    for ev in events:
        if last_t is None:
            windows = 1
        elif ev.t - last_t > gap_s:
            # the tracer was off: close the stretch at its last event
            charge(last_t)
            state, nest, in_call = None, [], None
            windows += 1
        last_t = ev.t
        if ev.name == "lost":  # what happened meanwhile is unknown: nothing counted across it
            lost += int(ev.rest)
            charge(ev.t)
            state, nest, in_call, on_cpu = None, [], None, None
            continue
        mine = ev.tid == tid
        if ev.name == "sys_enter" and mine:
            nr = _nr(ev.rest)
            on_cpu = ev.cpu
            charge(ev.t, None)
            in_call = names.get(nr, f"NR {nr}") if nr is not None else "?"
            state = running()
        elif ev.name == "sys_exit" and mine:
            on_cpu = ev.cpu
            if state is None:  # first sight: inside a call since the stretch began
                state, since = running(), ev.t
            charge(ev.t, None)
            in_call = None
            state = running()
        elif ev.name == "sched_switch":
            prev = _field(ev.rest, "prev_pid")
            nxt = _field(ev.rest, "next_pid")
            if prev is not None and int(prev) == tid:
                st = _field(ev.rest, "prev_state") or "R"
                preempted = st.startswith("R")
                sw["involuntary" if preempted else "voluntary"] += 1
                if state is None:
                    since = ev.t
                blocked_key = stack_name(ev.stack)
                charge(ev.t, "run queue, preempted" if preempted else "blocked")
                on_cpu, nest = None, []
            if nxt is not None and int(nxt) == tid:
                if state is None:
                    since = ev.t
                on_cpu = ev.cpu
                charge(ev.t, None)
                state = running()
        elif ev.name == "sched_wakeup" or ev.name == "sched_waking":
            if _field(ev.rest, "pid") == str(tid) and state == "blocked":
                charge(ev.t, "run queue, woken")
        elif ev.name in ("irq_handler_entry", "softirq_entry"):
            if on_cpu is not None and ev.cpu == on_cpu and state is not None:
                charge(ev.t, None)
                nest.append("interrupts" if ev.name == "irq_handler_entry" else "softirqs")
                state = running()
        elif ev.name in ("irq_handler_exit", "softirq_exit"):
            if nest and on_cpu is not None and ev.cpu == on_cpu:
                charge(ev.t, None)
                nest.pop()
                state = running()
    if last_t is not None:
        charge(last_t)
    total = sum(parts.values())
    return Attribution(tid, total, dict(parts), dict(stacks), sw, windows, lost)


def main_tid(events: Iterable[Event]) -> int | None:
    """The thread that timed the iterations when the trace does not say: the one with the
    most events (it makes every system call of the loop's timed side)."""
    count: dict[int, int] = defaultdict(int)
    for ev in events:
        count[ev.tid] += 1
    return max(count, key=lambda k: count[k]) if count else None


def load_explained(d: Path | None) -> dict[str, Any] | None:
    """The explanation kept in run directory ``d``; None where it has none or it cannot be
    read as one (a damaged or foreign file is no explanation)."""
    if d is None:
        return None
    p = d / EXPLAIN_FILE
    try:
        if p.is_symlink() or p.stat().st_size > 1 << 20:
            return None
        rec = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("schema") != EXPLAIN_SCHEMA:
        return None
    if not isinstance(rec.get("parts"), list) or not isinstance(rec.get("overhead"), dict):
        return None
    return rec
