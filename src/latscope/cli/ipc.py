"""`latscope matrix`: every communication mechanism side by side (matrix/ipc.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import progress
from ..errors import BadInput
from ..units import shown
from .shared import RAW, console, err_console, open_store, store_arg

EPILOG_MATRIX = """\
examples:
  latscope matrix                         every mechanism, threads and processes, 1 and 2 CPUs
  latscope matrix -n 20000                more iterations per cell
  latscope matrix -m pipe -m futex -m tcp only these mechanisms
  latscope matrix --runtime python        each Python mechanism beside its C counterpart
  latscope matrix --runtime python -p python=pypy3 -m py_pipe

SIGINT (Ctrl-C), SIGTERM, SIGHUP: the current cell's probe is stopped and waited for; the
cells measured before stay in the store; exit 130, 143, 129
"""


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "matrix",
        help="round trip of every IPC mechanism × threads/processes × same/different CPUs",
        description="Median and p99 of the round trip of every communication mechanism in the "
        "catalogue, between threads and between processes, on the same CPU (cpus=0,0) and on "
        "different CPUs (cpus=0,1). Each cell is a run of its own, kept in the store.",
        epilog=EPILOG_MATRIX,
        formatter_class=RAW,
    )
    p.add_argument(
        "-n",
        type=int,
        default=5000,
        metavar="N",
        help="iterations per cell (default 5000; fewer where the catalogue's default_n_rules "
        "give fewer: spinning peers on one CPU)",
    )
    p.add_argument(
        "-m", "--mechanism", action="append", metavar="MECH", help="only this mechanism; repeatable"
    )
    p.add_argument(
        "--runtime",
        choices=("c", "python"),
        default="c",
        help="python: each Python runtime mechanism (py_*) beside its C probe counterpart, "
        "with the ratio of the medians (docs/python-runtime.md)",
    )
    p.add_argument(
        "-p",
        dest="python",
        metavar="python=PATH",
        help="with --runtime python: the interpreter (default: the one running latscope)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    store_arg(p)


def _print_notes(items: list[tuple[str, str, dict[str, Any]]]) -> None:
    """The notes (notes.py) that explain the cells' figures, each once with its cells."""
    # here, not at the top: notes loads the environment's package, 20 ms of every command
    from ..notes import grouped_notes

    for names, note in grouped_notes(items):
        console.print(f"[dim]note ({note.key}) — {names}: {note.text}[/dim]", highlight=False)


def cmd_runtime(args: argparse.Namespace) -> int:
    from ..matrix.runtime import (
        free_threaded_note,
        run_runtime,
        runtime_note_items,
        runtime_plan,
        runtime_table,
    )

    python = None
    if args.python:
        key, _, python = args.python.partition("=")
        if key != "python" or not python:
            raise BadInput(f"-p {args.python}: matrix takes -p python=PATH only")
    plan = runtime_plan(args.mechanism)
    st = open_store(args)
    console.print(
        f"[bold]latscope matrix --runtime python[/bold]: {len(plan)} cells, each beside its "
        f"C counterpart, n={args.n} each (round trip), kept in {shown(st.root)}"
    )
    pairs = progress.over_cells(
        err_console,
        len(plan),
        args.quiet,
        lambda c: f"{c.py.mechanism} {c.py.mode}",
        lambda on_cell: run_runtime(plan, args.n, st, python=python, on_cell=on_cell),
    )
    t, problems = runtime_table(console, pairs)
    console.print(t)
    ran = sorted({p.py.interpreter for p in pairs if p.py.interpreter})
    if ran:
        console.print("Python side: " + shown("; ".join(ran)))
    if not any("free-threaded" in x for x in ran):
        console.print(f"[dim]{shown(free_threaded_note())}[/dim]")
    _print_notes(runtime_note_items(pairs))
    console.print(
        "[dim]×: the Python median over the C median, the interpreter's share; between threads "
        "the Python parties share the GIL (docs/python-runtime.md). asyncio tasks stand beside "
        "C threads.[/dim]"
    )
    for p in problems:
        err_console.print(f"[yellow]not measured:[/yellow] {shown(p)}")
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    from ..matrix.ipc import matrix_plan, matrix_table, run_matrix

    if args.n <= 0:
        raise BadInput(f"-n {args.n}: the number of iterations must be positive")
    if args.runtime == "python":
        return cmd_runtime(args)
    if args.python:
        raise BadInput("-p python=...: only with --runtime python")
    plan = matrix_plan(args.mechanism)
    st = open_store(args)
    console.print(
        f"[bold]latscope matrix[/bold]: {len(plan)} cells, n={args.n} each "
        f"(round trip), kept in {shown(st.root)}"
    )
    cells = progress.over_cells(
        err_console,
        len(plan),
        args.quiet,
        lambda c: f"{c.mechanism} {c.mode}",
        lambda on_cell: run_matrix(plan, args.n, st, on_cell=on_cell),
    )
    t, problems = matrix_table(console, cells)
    console.print(t)
    console.print(
        "[dim]round trip = initiator → responder → initiator; blocking mechanisms "
        "hold 2 context switches (wake-ups) per round trip; spinning ones none on "
        "2 CPUs (fewer iterations for spinning peers on one CPU, as the catalogue's "
        "default_n_rules say). 'latscope ls' lists "
        "every cell's run.[/dim]"
    )
    items = [
        (f"{c.mechanism} {c.mode} cpus={c.cpus}", c.mechanism, {"cpus": c.cpus}) for c in cells
    ]
    _print_notes(items)
    if any(c.p50_ns is not None and c.p99_ns is None for c in cells):
        from ..summary import WITHHELD_LEGEND

        console.print(f"[dim]{WITHHELD_LEGEND}[/dim]")
    for p in problems:
        err_console.print(f"[yellow]not measured:[/yellow] {shown(p)}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"matrix": cmd_matrix}
