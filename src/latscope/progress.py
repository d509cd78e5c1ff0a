"""The progress bar every long command shows on standard error (rich): what it is doing, a
bar, done/total, the elapsed time and the time left at the pace so far; it disappears when
the work is done.  `bar` is the one
constructor; `probe_task`, `cells` and `steps` are the shapes the CLI's commands use.
Nothing is shown with ``quiet`` or when standard error is not a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def bar(console: Console, *, note: bool = False) -> Progress:
    """A transient progress bar on ``console``; ``note``: a column for a per-task
    ``note`` field (e.g. the scenario a suite is measuring)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if note:
        cols.append(TextColumn("{task.fields[note]}"))
    # the time so far, and what is left at the pace so far (once there is a pace)
    cols += [TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("[dim]left")]
    return Progress(*cols, console=console, transient=True)


@contextmanager
def probe_task(
    console: Console, label: str, quiet: bool = False
) -> Iterator[Callable[[int, int], None] | None]:
    """A bar fed by the probe's progress lines (outside its timed regions), which says when
    the measuring is done and the analysis runs: yields the callback for `runner.measure`, or
    None when nothing is shown."""
    if quiet or not console.is_terminal:
        yield None
        return
    with bar(console) as prog:
        task = prog.add_task(label, total=None)

        def cb(done: int, total: int) -> None:
            # measured: what is left is the lab's analysis of the samples, said as a phase
            said = f"{label}: analysing the samples" if total and done >= total else label
            prog.update(task, completed=done, total=total, description=said)

        yield cb


@contextmanager
def cells(console: Console, total: int, quiet: bool = False) -> Iterator[tuple[Any, Any] | None]:
    """A bar over ``total`` cells (runs of a matrix or a sweep): yields (progress, task), or
    None when nothing is shown."""
    if quiet or not console.is_terminal:
        yield None
        return
    with bar(console) as prog:
        task = prog.add_task("cells", total=total)
        yield (prog, task)


def over_cells(
    console: Console,
    total: int,
    quiet: bool,
    describe: Callable[[Any], str],
    run: Callable[[Callable[[int, Any], None] | None], Any],
) -> Any:
    """``run(on_cell)`` under a bar of ``total`` cells (`cells`; none with ``quiet``), each
    finished cell ``i`` described by ``describe(cell)``: a matrix, a sweep, a grid."""
    with cells(console, total, quiet) as pt:
        on_cell: Callable[[int, Any], None] | None = None
        if pt:
            prog, task = pt

            def on_cell(i: int, c: Any) -> None:
                prog.update(task, completed=i + 1, description=describe(c))

        return run(on_cell)


class Steps:
    """A bar fed one step at a time, in phases (``latscope report``: analysing, then drawing
    figures); does nothing without a bar."""

    def __init__(self, prog: Progress | None) -> None:
        self.prog = prog
        self.task: Any = None

    def phase(self, name: str, total: int) -> None:
        if self.prog is None:
            return
        if self.task is not None:
            self.prog.remove_task(self.task)
        self.task = self.prog.add_task(name, total=total)

    def __call__(self, what: str) -> None:
        if self.prog is not None and self.task is not None:
            self.prog.update(self.task, advance=1, description=what[:60])


@contextmanager
def steps(console: Console, enabled: bool = True) -> Iterator[Steps]:
    """`Steps` on a bar on ``console``, or without one (not ``enabled``, not a terminal)."""
    if not enabled or not console.is_terminal:
        yield Steps(None)
        return
    with bar(console) as prog:
        yield Steps(prog)
