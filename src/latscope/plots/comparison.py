"""Runs and scenarios side by side: medians with their intervals and box plots grouped by
column, and the shift plot of a comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from ..errors import BadInput

if TYPE_CHECKING:
    from ..stats import Comparison
from .common import (
    COLORS,
    _box_stats,
    _ns,
    _style,
    new_figure,
    unit_for,
)

# ------------------------------------------------------------------------------- comparisons


@dataclass(frozen=True)
class Series:
    """One column of one run in a comparison figure."""

    run: str  # the run's label (scenario)
    column: str
    values: np.ndarray  # ns
    median_ci: tuple[float | None, float | None] | None = None  # ns


def scenarios(series: Sequence[Series], *, title: str = "") -> Figure:
    """Runs (scenarios) side by side, grouped by column, like the figures of lab reports that
    compare e.g. cached vs. uncached file operations: left the median of each with its
    confidence interval as error bar, right box plots on a log axis."""
    if not series:
        raise BadInput("nothing to compare")
    runs = list(dict.fromkeys(s.run for s in series))
    cols = list(dict.fromkeys(s.column for s in series))
    fig = new_figure(ncols=2, size=(max(10.0, 1.1 * len(runs) * len(cols) + 4.0), 3.8))
    ax_bar, ax_box = fig.axes
    unit = unit_for(*(s.values for s in series))
    by = {(s.run, s.column): s for s in series}
    width = 0.8 / len(runs)
    rng = np.random.default_rng(0)
    positive = all(float(np.min(s.values)) > 0 for s in series)
    meds_all = []
    box_stats, box_pos, box_colors = [], [], []
    for ri, run in enumerate(runs):
        xs, meds, err_lo, err_hi = [], [], [], []
        for ci, col in enumerate(cols):
            s = by.get((run, col))
            if s is None:
                continue
            v = _ns(s.values)
            pos = ci - 0.4 + width * (ri + 0.5)
            med = float(np.median(v))
            lo, hi = s.median_ci if s.median_ci else (None, None)
            xs.append(pos)
            meds.append(med / unit[1])
            err_lo.append(max(0.0, med - lo) / unit[1] if lo is not None else 0.0)
            err_hi.append(max(0.0, hi - med) / unit[1] if hi is not None else 0.0)
            meds_all.append(med)
            box_stats.append(_box_stats(v / unit[1], "", rng))
            box_pos.append(pos)
            box_colors.append(COLORS[ri % len(COLORS)])
        color = COLORS[ri % len(COLORS)]
        ax_bar.bar(xs, meds, width=width * 0.92, color=color, alpha=0.75, label=run)
        ax_bar.errorbar(
            xs, meds, yerr=[err_lo, err_hi], fmt="none", ecolor="black", capsize=3, lw=1
        )
    spread = max(meds_all) / min(meds_all) if meds_all and min(meds_all) > 0 else 1.0
    if spread > 30:
        ax_bar.set_yscale("log")
    ax_bar.set_ylabel(f"median ({unit[0]}{', log scale' if spread > 30 else ''})")
    ax_bar.set_title("Median with 95% CI by column" + (f" — {title}" if title else ""))
    bp = ax_box.bxp(
        box_stats,
        positions=box_pos,
        widths=width * 0.8,
        patch_artist=True,
        showmeans=False,
        flierprops={"marker": ".", "markersize": 2, "alpha": 0.4, "rasterized": True},
        medianprops={"color": "black", "linewidth": 1.2},
    )
    for patch, color in zip(bp["boxes"], box_colors, strict=True):
        patch.set_facecolor(color)
        patch.set_alpha(0.6)
    if positive:
        ax_box.set_yscale("log")
    ax_box.set_ylabel(f"latency ({unit[0]}{', log scale' if positive else ''})")
    ax_box.set_title("Distribution by column" + (f" — {title}" if title else ""))
    for ax in (ax_bar, ax_box):
        ax.set_xticks(range(len(cols)), cols)
        ax.set_xlim(-0.6, len(cols) - 0.4)
        ax.set_xlabel("column")
        _style(ax)
    ax_bar.legend(fontsize=7, frameon=False, loc="upper left")
    return fig


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
    fig = new_figure(ncols=ncols, nrows=nrows, size=(max(5.0, 4.2 * ncols), 3.6))
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
                        fontsize=7,
                        xytext=(2, 3),
                        textcoords="offset points",
                        color="#555555",
                    )
        ax.set_xlabel(f"decile of {baseline or 'the baseline'} ({unit[0]})")
        ax.set_ylabel(f"difference, other − baseline ({unit[0]})")
        ax.set_title(f"Shift of deciles — {col}")
        ax.legend(fontsize=7, frameon=False)
        _style(ax)
    fig.suptitle(f"Shift of the deciles against the baseline {baseline}".strip(), fontsize=11)
    return fig
