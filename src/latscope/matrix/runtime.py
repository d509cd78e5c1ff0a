"""The Python runtime beside the C probe (`latscope matrix --runtime python`).

Each Python mechanism of the catalogue (``engine: "python"``) is measured beside the C
probe's benchmark its catalogue entry names as ``counterpart`` (``py_pipe`` beside ``pipe``,
``py_semaphore`` beside ``posix_sem``, ``py_zmq_pair`` beside ``zmq_tcp``, ...), between
threads and between processes, on one CPU and on two; the ratio of the medians is the
interpreter's share.  Every cell is a run of its own, kept in the store and tagged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import probe
from ..errors import LatscopeError, Unsupported
from ..measure.runner import measure
from ..store import Store
from ..units import fmt, fmt_ratio
from .ipc import Cell, _fill, cell_n, chosen

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


@dataclass
class Pair:
    """One row-cell: a Python mechanism and its C counterpart under one mode and placement."""

    py: Cell
    c: Cell | None  # None where the C probe has no counterpart (asyncio.Queue)

    @property
    def ratio(self) -> float | None:
        if self.c is None or self.py.p50_ns is None or not self.c.p50_ns:
            return None
        return self.py.p50_ns / self.c.p50_ns


def python_benchmarks() -> list[dict[str, Any]]:
    return [b for b in probe.catalogue()["benchmarks"] if b.get("engine") == "python"]


def counterpart(b: dict[str, Any], params: dict[str, Any]) -> tuple[str, dict[str, str]] | None:
    """The C probe's benchmark beside Python mechanism ``b`` and the parameters it takes there
    (catalogue ``counterpart``, a template of its parameters: ``zmq_{transport}``, with
    ``key=value`` words after the name: ``zmq_{transport} pattern=pubsub``)."""
    tpl = b.get("counterpart")
    if not tpl:
        return None
    defaults = {p["name"]: p["default"] for p in b.get("params", [])}
    name, *words = str(tpl).format(**{**defaults, **params}).split()
    extra = dict(w.split("=", 1) for w in words if "=" in w)
    return (name, extra) if probe.entry(name) is not None else None


def runtime_plan(
    mechanisms: list[str] | None = None,
    modes: tuple[str, ...] = ("threads", "processes"),
) -> list[tuple[dict[str, Any], str, str]]:
    """(Python benchmark, mode, cpus) for every row-cell, in table order."""
    benches = chosen(
        python_benchmarks(),
        mechanisms,
        "a Python runtime mechanism",
        "see 'latscope list', the py_* benchmarks",
    )
    two = (os.cpu_count() or 1) >= 2
    plan = []
    for b in benches:
        for mode in (*modes, "tasks"):
            if not b["mechanism"].get(mode):
                continue
            plan.append((b, mode, "0,0"))
            if two and mode != "tasks":  # tasks share one thread: one CPU only
                plan.append((b, mode, "0,1"))
    return plan


def _cell(
    bench: dict[str, Any],
    params: dict[str, Any],
    n: int,
    store: Store,
    tags: dict[str, Any],
    progress: Callable[[int, int], None] | None,
) -> Cell:
    cell = Cell(bench["name"], str(params["mode"]), str(params["cpus"]))
    if not bench["available"]:
        cell.problem = bench.get("unavailable_reason") or "unavailable"
        return cell
    try:
        r = measure(
            bench["name"],
            params,
            n=cell_n(bench, params, n),
            store=store,
            tags=tags,
            progress=progress,
        )
    except Unsupported as e:
        cell.problem = e.message
        return cell
    except LatscopeError as e:
        if e.exit_code == 130:
            raise
        cell.problem = f"failed: {e.message}"
        return cell
    _fill(cell, r)
    if bench.get("engine") == "python":
        cell.interpreter = interpreter_text(r.meta.get("interpreter"))
    return cell


def interpreter_text(it: Any) -> str | None:
    """ "pypy 3.9.16 (/usr/bin/pypy3), GIL on, switch interval 5 ms" from a sample header's
    ``interpreter``; None where it says nothing."""
    if not isinstance(it, dict):
        return None
    name = f"{it.get('implementation', '?')} {it.get('version', '?')}"
    exe = it.get("executable")
    gil = it.get("gil")
    parts = [f"{name} ({exe})" if exe else name]
    if gil is not None:
        parts.append("GIL on" if gil else "GIL off (free-threaded)")
    si = it.get("switchinterval")
    if isinstance(si, (int, float)) and not isinstance(si, bool):
        parts.append(f"switch interval {si * 1e3:g} ms")
    return ", ".join(parts)


def run_runtime(
    plan: list[tuple[dict[str, Any], str, str]],
    n: int,
    store: Store,
    python: str | None = None,
    on_cell: Callable[[int, Pair], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Pair]:
    """Measure every row-cell: the Python mechanism under ``python`` (None: the interpreter
    running latscope), then its C counterpart (between threads where the Python side ran as
    tasks of one event loop)."""
    tags = {"matrix": "runtime"}
    pairs = []
    for i, (b, mode, cpus) in enumerate(plan):
        params: dict[str, Any] = {"mode": mode, "cpus": cpus}
        if python:
            params["python"] = python
        py = _cell(b, params, n, store, tags, progress)
        c = None
        got = counterpart(b, {"mode": mode})
        if got is not None:
            cb = probe.benchmark(got[0])
            cmode = mode if cb["mechanism"].get(mode) else "threads"
            c = _cell(cb, {"mode": cmode, "cpus": cpus, **got[1]}, n, store, tags, progress)
        pairs.append(Pair(py, c))
        if on_cell:
            on_cell(i, pairs[-1])
    return pairs


def runtime_table(console: Console, pairs: list[Pair]) -> tuple[Table, list[str]]:
    """One row per Python mechanism, mode and placement (one CPU, two): its median round
    trip, its C counterpart's and the ratio, each figure with its own unit (they span
    nanoseconds to milliseconds); and one line per cell that could not be measured. Long
    rather than wide, so that it fits 80 columns."""
    from ..tables import Column, fit

    cols = [
        Column("Python", style="bold"),
        Column("mode"),
        Column("CPUs", justify="right"),
        Column("C probe"),
        Column("Python", justify="right"),
        Column("C", justify="right"),
        Column("×", justify="right"),
    ]
    placements = {"0,0": "1", "0,1": "2"}
    rows: list[list[str]] = []
    problems: list[str] = []
    for p in pairs:
        rows.append(
            [
                p.py.mechanism,
                p.py.mode,
                placements.get(p.py.cpus, p.py.cpus),
                p.c.mechanism if p.c else "—",
                fmt(p.py.p50_ns) if p.py.p50_ns is not None else "n/a",
                (fmt(p.c.p50_ns) if p.c.p50_ns is not None else "n/a") if p.c else "—",
                fmt_ratio(p.ratio) if p.ratio is not None else "",
            ]
        )
        for cell in (p.py, p.c):
            if cell is not None and cell.problem:
                problems.append(f"{cell.mechanism} {cell.mode} cpus={p.py.cpus}: {cell.problem}")
    t, _ = fit(console, cols, rows, title="median round trip: Python beside C, and the ratio (×)")
    return t, problems


#: The names a free-threaded CPython build installs as (PEP 703: the "t" suffix).
FREE_THREADED_NAMES = ("python3.13t", "python3.14t", "python3.15t", "python3t")


def runtime_note_items(pairs: list[Pair]) -> list[tuple[str, str, dict[str, Any]]]:
    """The (name, benchmark, params) the notes of the table are asked for (notes.grouped_notes):
    each Python row under its mechanism and mode, its CPUs in the params (a busy-wait on one CPU
    gets the spin note too), and a C row only where a note depends on it: on one CPU."""
    items: list[tuple[str, str, dict[str, Any]]] = []
    for p in pairs:
        py = p.py
        items.append(
            (f"{py.mechanism} {py.mode}", py.mechanism, {"mode": py.mode, "cpus": py.cpus})
        )
        if p.c is not None and p.c.cpus == "0,0":
            items.append((f"{p.c.mechanism} cpus=0,0", p.c.mechanism, {"cpus": "0,0"}))
    return items


def free_threaded_interpreters() -> list[str]:
    """The free-threaded CPython builds on PATH (none on a stock Debian 12)."""
    import shutil

    found = (shutil.which(n) for n in FREE_THREADED_NAMES)
    return sorted({os.path.realpath(f) for f in found if f})


def free_threaded_note() -> str:
    """One line for the runtime matrix: which free-threaded CPython to compare, or that none
    is installed."""
    ft = free_threaded_interpreters()
    if ft:
        return (
            "free-threaded CPython here: " + ", ".join(ft) + f" — compare it with -p python={ft[0]}"
        )
    return (
        "no free-threaded CPython here (" + ", ".join(FREE_THREADED_NAMES[:2]) + " not on "
        "PATH): install one (python.org's installers offer it) and name it with -p python=PATH "
        "to compare the same mechanisms without the GIL"
    )
