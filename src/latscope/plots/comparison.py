"""Runs and scenarios side by side: medians with their intervals and box plots grouped by
column, and the shift plot of a comparison."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from ..errors import BadInput
from ..units import fmt_bare

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stats import Comparison
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .common import (
    COLORS,
    MAX_WIDTH,
    SMALL,
    Unit,
    _box_stats,
    _style,
    new_figure,
    printing,
    unit_for,
)
from .sorted import _ns

# ------------------------------------------------------------------------------- comparisons


@dataclass(frozen=True)
class Series:
    """One column of one run in a comparison figure."""

    run: str  # the run's label (scenario)
    column: str
    values: np.ndarray  # ns
    median_ci: tuple[float | None, float | None] | None = None  # ns


def scenarios(series: Sequence[Series], *, title: str = "") -> Figure:
    """Runs (scenarios) side by side, like the figures of lab reports that compare e.g. cached
    vs. uncached file operations: one panel per column, panels wrapped two to a row (the
    figure keeps its width however many scenarios and columns there are, and grows in height:
    a row per scenario). In each panel every scenario is a horizontal box plot (quartiles,
    whiskers at 1.5 IQR, outliers as dots), over a black bar: the median with its confidence
    interval. The axis holds the body of the data (p0.1 to p99.9 of every scenario, every
    whisker and interval), on a log scale only where that spans more than `LOG_SPAN`; the
    samples beyond it are counted at the edge of their row, with the largest. An interval
    with an infinite end runs to the edge, marked with an arrow."""
    if not series:
        raise BadInput("nothing to compare")
    runs = list(dict.fromkeys(s.run for s in series))
    cols = list(dict.fromkeys(s.column for s in series))
    by = {(s.run, s.column): s for s in series}
    unit = unit_for(*(s.values for s in series))
    positive = all(float(np.min(s.values)) > 0 for s in series)
    ncols = min(2, len(cols))
    nrows = math.ceil(len(cols) / ncols)
    longest = max(len(r) for r in runs)
    width = min(MAX_WIDTH, max(6.0, 3.6 * ncols + 0.075 * longest + 0.8))
    row_h = 0.3 * len(runs) + 1.15
    fig = new_figure(ncols, nrows, size=(width, row_h), sharey=True, extra_height=0.55)
    for ax in fig.axes[len(cols) :]:
        ax.set_visible(False)
    rng = np.random.default_rng(0)
    for ax, col in zip(fig.axes, cols, strict=False):
        _scenario_panel(ax, col, runs, by, unit, positive, rng)
    for ax in fig.axes[::ncols]:
        ax.set_ylabel("scenario")
    what = "Scenarios side by side"
    fig.suptitle(f"{what} — {title}" if title else what, fontsize=11)
    fig.legend(
        handles=[
            Patch(facecolor="#bbbbbb", edgecolor="black", label="quartiles, whiskers ≤ 1.5 IQR"),
            Line2D(
                [],
                [],
                color="black",
                marker="D",
                markersize=4,
                lw=1.4,
                label="median with its 95% interval",
            ),
        ],
        loc="outside lower center",
        ncols=1 if printing() else 2,
        fontsize=SMALL,
        frameon=False,
    )
    return fig


#: The body of a panel: these quantiles of each scenario's samples (and every whisker and
#: interval); what lies beyond is counted at the edge.
BODY = (0.001, 0.999)
#: A panel whose body spans more than this factor is drawn on a log scale.
LOG_SPAN = 8.0


def _scenario_panel(
    ax: Axes,
    col: str,
    runs: list[str],
    by: Mapping[tuple[str, str], Series],
    unit: Unit,
    log: bool,
    rng: np.random.Generator,
) -> None:
    """One column of `scenarios`: a row per run."""
    ends: list[float] = []
    values: dict[int, np.ndarray] = {}
    stats, pos, colors = [], [], []
    intervals: list[tuple[float, float, float | None, float | None]] = []
    for ri, run in enumerate(runs):
        s = by.get((run, col))
        if s is None:
            ax.text(
                0.5,
                ri,
                f"no {col}",
                transform=ax.get_yaxis_transform(),
                ha="center",
                va="center",
                fontsize=SMALL,
                color="#888888",
            )
            continue
        v = _ns(s.values) / unit[1]
        st = _box_stats(v, run, rng)
        stats.append(st)
        pos.append(ri)
        colors.append(COLORS[ri % len(COLORS)])
        values[ri] = v
        lo_q, hi_q = (float(q) for q in np.quantile(v, BODY))
        ends += [st["whislo"], st["whishi"], lo_q, hi_q]
        med = float(np.median(v))
        lo, hi = s.median_ci if s.median_ci else (None, None)
        # an unknown end (None, NaN) draws no bar on its side; an infinite one is open: the
        # bar runs to the axis' edge
        lo_d = _end(lo, med, unit, min)
        hi_d = _end(hi, med, unit, max)
        ends += [e for e in (med, lo_d, hi_d) if e is not None]
        intervals.append((ri + 0.36, med, lo_d, hi_d))
    if stats:
        bp = ax.bxp(
            stats,
            positions=pos,
            widths=0.45,
            orientation="horizontal",
            patch_artist=True,
            showmeans=False,
            flierprops={"marker": ".", "markersize": 2, "alpha": 0.4, "rasterized": True},
            medianprops={"color": "black", "linewidth": 1.2},
        )
        for patch, color in zip(bp["boxes"], colors, strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
    ax.set_yticks(range(len(runs)), runs)
    ax.set_ylim(len(runs) - 0.4, -0.6)
    use_log = log and bool(ends) and min(ends) > 0 and max(ends) / min(ends) > LOG_SPAN
    if use_log:
        ax.set_xscale("log")
    left, right = _padded(min(ends), max(ends), use_log) if ends else (0.0, 1.0)
    ax.set_xlim(left, right)
    for y, med, lo_d, hi_d in intervals:
        a, b = lo_d if lo_d is not None else left, hi_d if hi_d is not None else right
        ax.errorbar(
            [med],
            [y],
            xerr=[[med - a], [b - med]],
            fmt="D",
            color="black",
            markersize=3.5,
            capsize=3,
            lw=1.4,
            zorder=4,
        )
        for end, open_, marker in ((a, lo_d is None, "<"), (b, hi_d is None, ">")):
            if open_:
                ax.plot([end], [y], marker=marker, color="black", markersize=5, clip_on=False)
    for ri, v in values.items():  # what lies beyond the body, counted at the edge of its row
        above, below = int(np.sum(v > right)), int(np.sum(v < left))
        top = f"{fmt_bare(float(v.max()) * unit[1], unit)} {unit[0]}"
        for n, x, ha, text in (
            (above, 1.0, "right", f"{above:,} beyond → max {top}"),
            (below, 0.0, "left", f"← {below:,} below"),
        ):
            if n:
                ax.text(
                    x,
                    ri - 0.3,
                    text,
                    transform=ax.get_yaxis_transform(),
                    ha=ha,
                    va="center",
                    fontsize=SMALL,
                    color="#555555",
                )
    ax.set_xlabel(f"latency ({unit[0]}{', log scale' if use_log else ''})")
    ax.set_title(col, fontsize=10)
    _style(ax)
    ax.grid(False, axis="y")


def _end(
    v: float | None, med: float, unit: Unit, side: Callable[[float, float], float]
) -> float | None:
    """An interval's end in display units, on its side of the median; None when infinite."""
    if v is None or math.isnan(v):
        return med
    return None if math.isinf(v) else side(med, v / unit[1])


def _padded(lo: float, hi: float, log: bool, pad: float = 0.04) -> tuple[float, float]:
    """Axis limits holding [lo, hi] with a margin of ``pad`` of the span on each side."""
    if log:
        a, b = math.log10(lo), math.log10(hi)
        d = (b - a) * pad or 0.05
        return 10.0 ** (a - d), 10.0 ** (b + d)
    d = (hi - lo) * pad or max(abs(hi) * 0.05, 1.0)
    return lo - d, hi + d


def shift(
    comparisons: Mapping[str, Sequence[tuple[str, Comparison]]],
    *,
    baseline: str = "",
) -> Figure:
    """Shift plot (Doksum): for each decile of the baseline, how much later (above 0) or
    earlier the same decile of each other run is; one panel per column. The shaded wedge is
    the noise threshold (± noise × decile): inside it the runs count as the same."""
    if not comparisons:
        raise BadInput("nothing to plot: no comparisons")
    cols = list(comparisons)
    ncols = min(3, len(cols))
    nrows = math.ceil(len(cols) / ncols)
    fig = new_figure(ncols=ncols, nrows=nrows, size=(min(MAX_WIDTH, max(5.0, 3.4 * ncols)), 3.6))
    for ax in fig.axes[len(cols) :]:
        ax.set_visible(False)
    for ax, col in zip(fig.axes, cols, strict=False):
        items = comparisons[col]
        da = np.concatenate([c.deciles_a for _, c in items])
        unit = unit_for(da)
        base = items[0][1]
        xa = base.deciles_a / unit[1]
        ax.fill_between(
            xa,
            -base.noise * xa,
            base.noise * xa,
            color="#999999",
            alpha=0.25,
            linewidth=0,
            label=f"±{100 * base.noise:g}% noise",
        )
        ax.axhline(0, color="black", lw=0.7)
        for i, (name, c) in enumerate(items):
            color = COLORS[(i + 1) % len(COLORS)]
            xx = c.deciles_a / unit[1]
            yy = c.decile_differences / unit[1]
            ax.plot(
                xx,
                yy,
                marker="o",
                markersize=3.5,
                color=color,
                lw=1.2,
                label=f"{name}: {c.verdict}",
            )
            for k, (px, py) in enumerate(zip(xx, yy, strict=True)):
                if i == 0 and k in (0, 4, 8):
                    ax.annotate(
                        f"d{k + 1}",
                        (px, py),
                        fontsize=SMALL,
                        xytext=(2, 3),
                        textcoords="offset points",
                        color="#555555",
                    )
        ax.set_xlabel(f"decile of {baseline or 'the baseline'} ({unit[0]})")
        ax.set_ylabel(f"difference, other − baseline ({unit[0]})")
        ax.set_title(f"Shift of deciles — {col}")
        ax.legend(fontsize=SMALL, frameon=False)
        _style(ax)
    fig.suptitle(f"Shift of the deciles against the baseline {baseline}".strip(), fontsize=11)
    return fig
