"""`latscope run BENCH --sweep KEY=V1,V2,... [--sweep KEY=...]`: one benchmark over a grid
of parameter values (ctx's procs x size, as lmbench's lat_ctx is run).

Every cell is its own run, kept in the store and tagged ``sweep``, so any cell can be shown,
reported or compared afterwards. The grid is printed long (one row per cell, the median of
every column with the interval of the chosen one) so that it fits a terminal whatever its
axes, and drawn (``--plot FILE``): the chosen column's median against the first axis, one
line per value of the others, with its interval.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import probe
from ..errors import BadInput, Interrupted, LatscopeError
from ..measure.runner import measure
from ..record import headline
from ..store import Store
from ..units import fmt_bare, pick_unit
from .ipc import _stops_say_what_was_kept

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.table import Table

#: Cells one sweep may hold (each is a run of its own).
MAX_CELLS = 100
#: Axes of one sweep.
MAX_AXES = 3


@dataclass
class GridCell:
    given: dict[str, str]  # the swept values, as written
    recorded: dict[str, Any] = field(default_factory=dict)  # as the run records them
    p50: dict[str, float | None] = field(default_factory=dict)  # by column
    ci: tuple[float | None, float | None] = (None, None)  # the chosen column's
    run_id: str | None = None
    problem: str | None = None


def parse_axes(specs: list[str], bench: str, given: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The grid's axes from ``--sweep KEY=V1,V2,...`` words: each a parameter of the
    benchmark, named once, not also given with -p, with distinct values; at most `MAX_AXES`
    axes and `MAX_CELLS` cells. BadInput saying which word is wrong and why."""
    entry = probe.benchmark(bench)
    names = [str(p["name"]) for p in entry.get("params") or []]
    axes: list[tuple[str, list[str]]] = []
    for spec in specs:
        key, eq, vals = spec.partition("=")
        key = key.strip()
        if not eq or not key:
            raise BadInput(f"--sweep {spec}: write KEY=V1,V2,... (e.g. --sweep procs=2,4,8)")
        if key not in names:
            raise BadInput(
                f"--sweep {spec}: {bench} has no parameter '{key}' (it has: {', '.join(names)})"
            )
        if key in given:
            raise BadInput(f"--sweep {spec}: {key} is also given with -p; give it once")
        if any(k == key for k, _ in axes):
            raise BadInput(f"--sweep {spec}: {key} is swept twice; give its values once")
        values = [v.strip() for v in vals.split(",")]
        if not values or any(not v for v in values):
            raise BadInput(f"--sweep {spec}: a value is empty; write KEY=V1,V2,...")
        if len(set(values)) != len(values):
            raise BadInput(f"--sweep {spec}: a value is given twice")
        axes.append((key, values))
    if len(axes) > MAX_AXES:
        raise BadInput(f"--sweep: at most {MAX_AXES} parameters at once ({len(axes)} given)")
    cells = math.prod(len(v) for _, v in axes)
    if cells > MAX_CELLS:
        raise BadInput(
            f"--sweep: {cells} cells, each a run; at most {MAX_CELLS} (sweep fewer values)"
        )
    return axes


def grid_plan(axes: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """Every combination of the axes' values, the first axis varying slowest."""
    keys = [k for k, _ in axes]
    return [
        dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(v for _, v in axes))
    ]


def headline_column(bench: str) -> str:
    """The column a sweep of ``bench`` draws unless told (`record.headline`: ctx's switch)."""
    entry = probe.benchmark(bench)
    names = [str(c["name"]) for c in entry.get("columns") or []]
    col = headline(names, list(entry.get("derived_columns") or []))
    if col is None:
        raise BadInput(f"{bench} records no column")
    return col


def run_grid(
    bench: str,
    given: dict[str, Any],
    plan: list[dict[str, str]],
    column: str,
    n: int | None,
    store: Store,
    on_cell: Callable[[int, GridCell], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[GridCell]:
    """Each cell of ``plan`` measured and kept (tag ``sweep``: the swept parameters). A cell
    the machine refuses (exit 3) or that fails is kept as a problem; a wrong parameter value
    (exit 2) ends the sweep with its line, naming the cell."""
    cells: list[GridCell] = []
    tag = ",".join(plan[0]) if plan else ""
    with _stops_say_what_was_kept(cells, len(plan)):  # type: ignore[arg-type]
        for i, values in enumerate(plan):
            cell = GridCell(dict(values))
            try:
                r = measure(
                    bench,
                    {**given, **values},
                    n=n,
                    store=store,
                    tags={"sweep": tag},
                    progress=progress,
                )
                _fill(cell, r, column)
            except Interrupted:
                raise
            except LatscopeError as e:
                if e.exit_code == 2:
                    raise BadInput(f"{_words(values)}: {e.message}") from None
                cell.problem = e.message
            cells.append(cell)
            if on_cell:
                on_cell(i, cell)
    return cells


def _words(values: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def _fill(cell: GridCell, run: Any, column: str) -> None:
    from ..summary import stat, value

    rows = {r["column"]: r for r in run.summary().iter_rows(named=True)}
    if column not in rows:
        raise BadInput(
            f"--column {column}: {run.benchmark} has no column '{column}' "
            f"(it has: {', '.join(rows)})"
        )
    cell.p50 = {c: value(r, stat("p50")) for c, r in rows.items()}
    r = rows[column]
    cell.ci = (r.get("p50_ci_low_ns"), r.get("p50_ci_high_ns"))
    cell.recorded = dict(run.meta.get("params") or {})
    cell.run_id = run.id


def grid_table(
    bench: str, axes: list[tuple[str, list[str]]], cells: list[GridCell], column: str
) -> Table:
    """One row per cell: the swept values, the median of every column (in one unit per
    column), the chosen column's interval."""
    from rich.table import Table

    cols = next((list(c.p50) for c in cells if c.p50), [column])
    units = {c: pick_unit([x.p50.get(c) for x in cells]) for c in cols}
    t = Table(title=f"{bench}: median of each column, 95% CI of {column}'s", title_justify="left")
    for k, _ in axes:
        t.add_column(k, justify="right")
    for c in cols:
        t.add_column(f"{c} ({units[c][0]})", justify="right")
    t.add_column(f"{column} CI", justify="right")
    for x in cells:
        row = [x.given[k] for k, _ in axes]
        if x.problem:
            t.add_row(*row, *(["—"] * len(cols)), "—")
            continue
        row += [fmt_bare(x.p50.get(c), units[c]) for c in cols]
        lo, hi = x.ci
        u = units[column]
        row.append(f"{fmt_bare(lo, u)}–{fmt_bare(hi, u)}" if lo is not None else "—")
        t.add_row(*row)
    return t


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def grid_figure(
    bench: str, axes: list[tuple[str, list[str]]], cells: list[GridCell], column: str
) -> Figure:
    """The chosen column's median (with its interval) against the first axis (numeric where
    the runs record numbers, on a log scale when they span 8x or more), one line per value
    of the other axes."""
    from ..plots import COLORS, new_figure
    from ..plots.common import _style, legend_below, set_title

    fig = new_figure()
    ax = fig.axes[0]
    xkey = axes[0][0]
    done = [c for c in cells if c.run_id and c.p50.get(column) is not None]
    if not done:
        raise BadInput("no cell of the sweep was measured: nothing to draw")
    unit = pick_unit([c.p50.get(column) for c in done])
    xs_num = [_number(c.recorded.get(xkey)) for c in done]
    numeric = all(x is not None for x in xs_num)
    order = axes[0][1]
    handles, labels = [], []
    others = [k for k, _ in axes[1:]]
    groups: dict[tuple[str, ...], list[GridCell]] = {}
    for c in done:
        groups.setdefault(tuple(c.given[k] for k in others), []).append(c)
    for i, (key, group) in enumerate(groups.items()):
        group.sort(key=lambda c: order.index(c.given[xkey]))
        x = [
            (_number(c.recorded.get(xkey)) if numeric else order.index(c.given[xkey]))
            for c in group
        ]
        y = [c.p50[column] / unit[1] for c in group]  # type: ignore[operator]
        lo = [
            max(0.0, yy - (c.ci[0] / unit[1])) if c.ci[0] is not None else 0.0
            for yy, c in zip(y, group, strict=True)
        ]
        hi = [
            max(0.0, (c.ci[1] / unit[1]) - yy) if c.ci[1] is not None else 0.0
            for yy, c in zip(y, group, strict=True)
        ]
        color = COLORS[i % len(COLORS)]
        h = ax.errorbar(
            x, y, yerr=[lo, hi], marker="o", markersize=4, capsize=3, color=color, linewidth=1.2
        )
        handles.append(h)
        labels.append(_words(dict(zip(others, key, strict=True))) or bench)
    _style(ax)  # first: the ticks set below are the swept values, not log_ticks' choice
    if numeric:
        vals = [v for v in xs_num if v is not None and v > 0]
        if vals and max(vals) / min(vals) >= 8:
            ax.set_xscale("log", base=2)
        text = {_number(c.recorded.get(xkey)): c.given[xkey] for c in done}
        ticks = sorted(v for v in text if v is not None)
        ax.set_xticks(ticks)
        ax.set_xticklabels([text[v] for v in ticks])
        ax.minorticks_off()
    else:
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order)
    ax.set_xlabel(xkey)
    ax.set_ylabel(f"{column}, median ({unit[0]})")
    ax.set_ylim(bottom=0)
    set_title(ax, f"{bench}: {column} by {', '.join(k for k, _ in axes)}", "median with its 95% CI")
    if others:
        legend_below(ax, handles, labels, ncols=min(3, len(labels)))
    return fig
