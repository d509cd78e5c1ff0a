"""Every communication mechanism side by side, and the placement sweep of one mechanism.

* `latscope matrix`: median and p99 of the round trip for every ping-pong mechanism in the
  probe's catalogue × (threads, processes) × (same CPU, different CPUs), one table.
* `latscope run MECH --sweep cpus`: the mechanism between every ordered pair of CPUs, as a
  matrix of medians, marking the same CPU, SMT siblings and other cores (as core-to-core
  latency tools do for cache lines).

Every cell is its own probe run, kept in the store and tagged, so any cell can be shown,
reported or compared afterwards.  A cell that this machine does not permit (exit 3, e.g. the
network-namespace benchmarks without CAP_NET_ADMIN) is shown with the probe's reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import probe
from ..errors import BadInput, Interrupted, LatscopeError, Unsupported
from ..measure.runner import measure
from ..store import Store
from ..units import fmt, fmt_bare, pick_unit

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


@dataclass
class Cell:
    mechanism: str
    mode: str
    cpus: str
    p50_ns: float | None = None
    p99_ns: float | None = None
    n: int = 0
    run_id: str | None = None
    problem: str | None = None
    interpreter: str | None = None  # a Python engine's cell: what ran it (matrix/runtime.py)


def ipc_benchmarks() -> list[dict[str, Any]]:
    """The C probe's ping-pong benchmarks (the Python runtime's: matrix/runtime.py)."""
    return [
        b
        for b in probe.catalogue()["benchmarks"]
        if b.get("mechanism") and b.get("engine") != "python"
    ]


def _one(
    bench: dict[str, Any],
    mode: str,
    cpus: str,
    n: int,
    store: Store,
    tags: dict[str, Any],
    progress: Callable[[int, int], None] | None,
) -> Cell:
    cell = Cell(bench["name"], mode, cpus)
    if not bench["available"]:
        cell.problem = bench.get("unavailable_reason") or "unavailable"
        return cell
    params: dict[str, Any] = {"mode": mode, "cpus": cpus}
    n = cell_n(bench, params, n)
    try:
        r = measure(bench["name"], params, n=n, store=store, tags=tags, progress=progress)
    except Unsupported as e:
        cell.problem = e.message
        return cell
    except Interrupted:
        raise
    except LatscopeError as e:
        cell.problem = f"failed: {e.message}"
        return cell
    _fill(cell, r)
    return cell


@contextmanager
def _stops_say_what_was_kept(cells: list[Cell], total: int) -> Iterator[None]:
    """A stop (a signal: probe.stop_signals) of a matrix or sweep says which cells it kept."""
    try:
        yield
    except (Interrupted, KeyboardInterrupt) as e:
        kept = sum(c.run_id is not None for c in cells)
        what = (
            f"{kept} of {total} cells were measured and stay in the store ('latscope ls')"
            if kept
            else f"none of the {total} cells was kept"
        )
        if isinstance(e, Interrupted):
            raise e.retitle(what=what) from None
        raise Interrupted(what, probe.signum_of(e)) from None


def cell_n(bench: dict[str, Any], params: dict[str, Any], n: int) -> int:
    """A cell's iterations: ``n``, or fewer where one of the benchmark's ``default_n_rules``
    holds (spinning peers on one CPU hand over only at a scheduler tick: notes.SPIN_ONE_CPU)."""
    r = probe.rule_n(bench, params)
    return min(n, r) if r is not None else n


def _fill(cell: Cell, run: Any) -> None:
    """A cell's figures: the round trip's p50 and p99 from the run's summary (so p99 is
    withheld, None, where too few samples lie above it, as in every other view)."""
    import polars as pl

    from ..summary import stat, value

    row = run.summary().filter(pl.col("column") == "rtt").row(0, named=True)
    cell.p50_ns = value(row, stat("p50"))
    cell.p99_ns = value(row, stat("p99"))
    cell.n, cell.run_id = run.n, run.id


def chosen(
    benches: list[dict[str, Any]], names: list[str] | None, what: str, where: str
) -> list[dict[str, Any]]:
    """The catalogue entries ``names`` selects (all without names); BadInput naming those that
    are not among them: "not {what}: NAMES ({where})"."""
    if not names:
        return benches
    known = {b["name"] for b in benches}
    unknown = [m for m in names if m not in known]
    if unknown:
        raise BadInput(f"not {what}: {', '.join(unknown)} ({where})")
    return [b for b in benches if b["name"] in names]


def matrix_plan(
    mechanisms: list[str] | None = None, modes: tuple[str, ...] = ("threads", "processes")
) -> list[tuple[dict[str, Any], str, str]]:
    """(benchmark, mode, cpus) for every cell, in table order."""
    benches = chosen(
        ipc_benchmarks(), mechanisms, "a communication mechanism", "see 'latscope list'"
    )
    two = (os.cpu_count() or 1) >= 2
    plan = []
    for b in benches:
        for mode in modes:
            if not b["mechanism"].get(mode):
                continue
            plan.append((b, mode, "0,0"))
            places = b["mechanism"].get("placements") or ["different_cpus"]
            if two and "different_cpus" in places:  # yield: one CPU only
                plan.append((b, mode, "0,1"))
    return plan


def run_matrix(
    plan: list[tuple[dict[str, Any], str, str]],
    n: int,
    store: Store,
    on_cell: Callable[[int, Cell], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Cell]:
    tags = {"matrix": True}
    cells: list[Cell] = []
    with _stops_say_what_was_kept(cells, len(plan)):
        for i, (b, mode, cpus) in enumerate(plan):
            c = _one(b, mode, cpus, n, store, tags, progress)
            cells.append(c)
            if on_cell:
                on_cell(i, c)
    return cells


#: A column whose values span more than this factor gives each cell its own unit.
SPAN_PER_CELL = 100.0


def matrix_table(console: Console, cells: list[Cell]) -> tuple[Table, list[str]]:
    """The matrix as a table that fits ``console`` (mechanism × mode rows, same CPU and 2 CPUs
    columns, each column in one unit, or each cell in its own where the column spans more
    than `SPAN_PER_CELL`), and one line per cell that could not be measured."""
    from ..tables import Column, fit

    by = {(c.mechanism, c.mode, c.cpus): c for c in cells}
    keys: list[tuple[str, str]] = []
    for c in cells:
        if (c.mechanism, c.mode) not in keys:
            keys.append((c.mechanism, c.mode))
    # (header, cpus, figure) of the four columns; each gets the unit that suits its values
    spec = [
        ("same CPU\np50", "0,0", "p50_ns"),
        ("same CPU\np99", "0,0", "p99_ns"),
        ("2 CPUs\np50", "0,1", "p50_ns"),
        ("2 CPUs\np99", "0,1", "p99_ns"),
    ]
    cols = [Column("mechanism", style="bold"), Column("mode")]
    units: list[tuple[str, float] | None] = []
    for head, cpus, fig in spec:
        vals = [getattr(by[(m, mo, cpus)], fig) for m, mo in keys if (m, mo, cpus) in by]
        pos = [v for v in vals if v and v > 0]
        if pos and max(pos) / min(pos) > SPAN_PER_CELL:  # spins at a tick beside µs pipes
            units.append(None)
            cols.append(Column(head, justify="right"))
            continue
        unit = pick_unit(vals)
        units.append(unit)
        cols.append(Column(f"{head} ({unit[0]})", justify="right"))
    rows: list[list[str]] = []
    problems = []
    for m, mo in keys:
        row = [m, mo]
        for (_, cpus, fig), unit in zip(spec, units, strict=True):
            cell = by.get((m, mo, cpus))
            if cell is None:
                row.append("n/a")
            else:  # a column that spans orders of magnitude: each cell in its own unit
                v = getattr(cell, fig)
                row.append(fmt(v) if unit is None else fmt_bare(v, unit))
        for cpus in ("0,0", "0,1"):
            cell = by.get((m, mo, cpus))
            if cell is not None and cell.problem:
                problems.append(f"{m} {mo} cpus={cpus}: {cell.problem}")
        rows.append(row)
    t, _ = fit(console, cols, rows, title="round trip (rtt): median and p99")
    return t, problems


# ----------------------------------------------------------------------------- the sweep


def online_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def smt_siblings(cpu: int, root: str = "/") -> set[int]:
    """CPUs sharing a core with `cpu` (itself included), from sysfs; {cpu} when unknown."""
    from ..env import parse_cpulist

    p = Path(root) / f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    try:
        got = parse_cpulist(p.read_text().strip())
        return set(got) if got else {cpu}
    except OSError:
        return {cpu}


def relation(a: int, b: int) -> str:
    if a == b:
        return "same CPU"
    if b in smt_siblings(a):
        return "SMT sibling"
    return "other core"


def sweep_plan(cpus: list[int] | None = None) -> list[tuple[int, int]]:
    cs = cpus if cpus is not None else online_cpus()
    return [(a, b) for a in cs for b in cs]


def run_sweep(
    bench: str,
    params: dict[str, Any],
    n: int | None,
    store: Store,
    pairs: list[tuple[int, int]],
    on_cell: Callable[[int, Cell], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Cell]:
    b = probe.benchmark(bench)
    if not b.get("mechanism"):
        raise BadInput(
            f"--sweep cpus needs a communication benchmark (two parties); {bench} has one"
        )
    if "cpus" in params:
        raise BadInput("--sweep cpus sets cpus=A,B itself; drop -p cpus=")
    cells: list[Cell] = []
    with _stops_say_what_was_kept(cells, len(pairs)):
        for i, (a, c) in enumerate(pairs):
            cell = Cell(bench, str(params.get("mode", "processes")), f"{a},{c}")
            try:
                r = measure(
                    bench,
                    {**params, "cpus": f"{a},{c}"},
                    n=n,
                    store=store,
                    tags={"sweep": "cpus"},
                    progress=progress,
                )
                _fill(cell, r)
            except Interrupted:
                raise
            except LatscopeError as e:
                if e.exit_code == 2:
                    raise
                cell.problem = e.message
            cells.append(cell)
            if on_cell:
                on_cell(i, cell)
    return cells


def sweep_table(bench: str, cpus: list[int], cells: list[Cell]) -> Table:
    """The sweep as a matrix of medians, initiator CPU (rows) → responder CPU (columns): dim
    on the same CPU, cyan between SMT siblings, plain between other cores."""
    from rich.table import Table

    by = {c.cpus: c for c in cells}
    t = Table(
        title=f"{bench}: median round trip, initiator CPU (rows) → responder CPU (columns)",
        title_justify="left",
    )
    t.add_column("from \\ to", style="bold")
    for b in cpus:
        t.add_column(f"CPU {b}", justify="right")
    style = {"same CPU": "dim", "SMT sibling": "cyan", "other core": ""}
    for a in cpus:
        row = [f"CPU {a}"]
        for b in cpus:
            c = by[f"{a},{b}"]
            txt = fmt(c.p50_ns) if c.p50_ns is not None else "—"
            s = style[relation(a, b)]
            row.append(f"[{s}]{txt}[/{s}]" if s else txt)
        t.add_row(*row)
    return t
