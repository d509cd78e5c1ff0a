"""The progress bar every long command shows on standard error (rich): what it is doing, a
bar, done/total and the elapsed time; it disappears when the work is done."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def bar(console: Console, *, note: bool = False) -> Progress:
    """A transient progress bar on ``console``; ``note``: a column for a per-task
    ``note`` field (e.g. the scenario a suite is measuring)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if note:
        cols.append(TextColumn("{task.fields[note]}"))
    cols.append(TimeElapsedColumn())
    return Progress(*cols, console=console, transient=True)
