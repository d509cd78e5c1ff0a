"""`latscope matrix` and `latscope run MECH --sweep cpus` (see ipc_matrix.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from rich.table import Table

from .notes import grouped_notes
from .units import fmt

EPILOG_MATRIX = """\
examples:
  latscope matrix                         every mechanism, threads and processes, 1 and 2 CPUs
  latscope matrix -n 20000                more iterations per cell
  latscope matrix -m pipe -m futex -m tcp only these mechanisms
"""


def add_parsers(sub: Any) -> None:
    from .cli import _store_arg

    p = sub.add_parser(
        "matrix",
        help="round trip of every IPC mechanism × threads/processes × same/different CPUs",
        description="Median and p99 of the round trip of every communication mechanism in the "
        "catalogue, between threads and between processes, on the same CPU (cpus=0,0) and on "
        "different CPUs (cpus=0,1). Each cell is a run of its own, kept in the store.",
        epilog=EPILOG_MATRIX,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "-n",
        type=int,
        default=5000,
        metavar="N",
        help="iterations per cell (default 5000; spinning peers on one CPU: 100)",
    )
    p.add_argument(
        "-m", "--mechanism", action="append", metavar="MECH", help="only this mechanism; repeatable"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _store_arg(p)


def _progress(quiet: bool, total: int) -> Any:
    from contextlib import contextmanager

    from . import progress
    from .cli import err_console

    @contextmanager
    def cm() -> Any:
        if quiet or not err_console.is_terminal:
            yield None
            return
        with progress.bar(err_console) as prog:
            task = prog.add_task("cells", total=total)
            yield (prog, task)

    return cm()


def _cell_text(c: Any) -> tuple[str, str]:
    if c.p50_ns is None:
        return "—", "—"
    return fmt(c.p50_ns), fmt(c.p99_ns)


def cmd_matrix(args: argparse.Namespace) -> int:
    from .cli import console, err_console
    from .errors import BadInput
    from .ipc_matrix import SPIN_SAME_CPU_N, matrix_plan, run_matrix
    from .store import Store

    if args.n <= 0:
        raise BadInput(f"-n {args.n}: the number of iterations must be positive")
    plan = matrix_plan(args.mechanism)
    st = Store(args.store)
    console.print(
        f"[bold]latscope matrix[/bold]: {len(plan)} cells, n={args.n} each "
        f"(round trip), kept in {st.root}"
    )
    with _progress(args.quiet, len(plan)) as pt:
        on_cell: Callable[[int, Any], None] | None = None
        if pt:
            prog, task = pt

            def on_cell(i: int, c: Any) -> None:
                prog.update(task, completed=i + 1, description=f"{c.mechanism} {c.mode}")

        cells = run_matrix(plan, args.n, st, on_cell=on_cell)
    by = {(c.mechanism, c.mode, c.cpus): c for c in cells}
    t = Table(title="round trip (rtt): median / p99", title_justify="left")
    t.add_column("mechanism", style="bold")
    t.add_column("mode")
    for h in ("same CPU p50", "same CPU p99", "2 CPUs p50", "2 CPUs p99"):
        t.add_column(h, justify="right")
    problems = []
    seen = []
    for c in cells:
        key = (c.mechanism, c.mode)
        if key in seen:
            continue
        seen.append(key)
        same = by.get((c.mechanism, c.mode, "0,0"))
        diff = by.get((c.mechanism, c.mode, "0,1"))
        row = [c.mechanism, c.mode]
        for cell in (same, diff):
            if cell is None:
                row += ["n/a", "n/a"]
            else:
                row += list(_cell_text(cell))
                if cell.problem:
                    problems.append(
                        f"{cell.mechanism} {cell.mode} cpus={cell.cpus}: {cell.problem}"
                    )
        t.add_row(*row)
    console.print(t)
    console.print(
        "[dim]round trip = initiator → responder → initiator; blocking mechanisms "
        "hold 2 context switches (wake-ups) per round trip; spinning ones none on "
        f"2 CPUs (n={SPIN_SAME_CPU_N} for spinning peers on one CPU). 'latscope ls' lists "
        "every cell's run.[/dim]"
    )
    items = [
        (f"{c.mechanism} {c.mode} cpus={c.cpus}", c.mechanism, {"cpus": c.cpus}) for c in cells
    ]
    for names, note in grouped_notes(items):
        console.print(f"[dim]note ({note.key}) — {names}: {note.text}[/dim]", highlight=False)
    if any(c.p50_ns is not None and c.p99_ns is None for c in cells):
        from .summary import WITHHELD_LEGEND

        console.print(f"[dim]{WITHHELD_LEGEND}[/dim]")
    for p in problems:
        err_console.print(f"[yellow]not measured:[/yellow] {p}")
    return 0


def cmd_sweep(args: argparse.Namespace, params: dict[str, Any]) -> int:
    from .cli import console
    from .ipc_matrix import online_cpus, relation, run_sweep, sweep_plan
    from .store import Store

    cpus = online_cpus()
    pairs = sweep_plan(cpus)
    st = Store(args.store)
    console.print(
        f"[bold]{args.bench}[/bold] between every ordered pair of {len(cpus)} CPUs "
        f"({len(pairs)} runs), kept in {st.root}"
    )
    with _progress(getattr(args, "quiet", False), len(pairs)) as pt:
        on_cell = None
        if pt:
            prog, task = pt

            def on_cell(i: int, c: Any) -> None:
                prog.update(task, completed=i + 1, description=f"cpus={c.cpus}")

        cells = run_sweep(args.bench, params, args.n, st, pairs, on_cell=on_cell)
    by = {c.cpus: c for c in cells}
    t = Table(
        title=f"{args.bench}: median round trip, initiator CPU (rows) → responder CPU (columns)",
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
    console.print(t)
    console.print("[dim]dim: same CPU; cyan: SMT siblings (one core); plain: other cores[/dim]")
    for c in cells:
        if c.problem:
            console.print(f"[yellow]not measured:[/yellow] cpus={c.cpus}: {c.problem}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"matrix": cmd_matrix}
