"""Samples in their order: every sample over time (or iteration) with the window medians,
change points and spikes, and the autocorrelation function."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure

from ..errors import BadInput
from ..units import pick_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stats import Dependence, Drift
from .common import (
    COLORS,
    ENVELOPE_BINS,
    MAX_POINTS,
    MAX_SPIKES,
    SMALL,
    WIDE,
    _axes,
    _fig,
    _note,
    _style,
    legend_below,
    set_title,
)
from .sorted import _ns

# ------------------------------------------------------------------------------- time series


def time_series(
    x: npt.ArrayLike,
    *,
    label: str = "",
    t: npt.ArrayLike | None = None,
    drift: Drift | None = None,
    spikes: npt.ArrayLike | None = None,
    log_y: bool | None = None,
    max_points: int = MAX_POINTS,
    ax: Axes | None = None,
) -> Figure:
    """Every sample over the run: against the iteration number, or against time when ``t``
    (iteration start times, s) is given. Draws the median of consecutive windows (from
    ``drift`` when given), the change points of ``drift`` (dashed lines, with the change in
    %), and the ``spikes`` (indices) in red. With more than ``max_points`` samples the samples
    are drawn as a min-max envelope per column. ``log_y``: default when the tail reaches more
    than 5x the median."""
    v = _ns(x)
    n = v.size
    ax = _axes(ax, size=WIDE)
    med = float(np.median(v))  # one pass each for the median and the extremes, at 10^8 too
    v_min, v_max = float(v.min()), float(v.max())
    unit = pick_unit([med])
    # the x and y of the samples drawn, taken where they are drawn: no array of every
    # sample's (a column of 10^8 is 0.8 GB), each value as the whole array would hold it
    if t is not None:
        tt = np.asarray(t, dtype=np.float64)
        if tt.size != n:
            raise BadInput(f"{tt.size} start times for {n} samples")
        t0 = tt[0]

        def xs(i: Any) -> Any:  # time since the first iteration
            return tt[i] - t0

        xlabel = "time since the first iteration (s)"
    else:

        def xs(i: Any) -> Any:  # the iteration number (-1: the last)
            if isinstance(i, slice):
                return np.arange(n, dtype=np.float64)[i]
            return (np.asarray(i, dtype=np.int64) % n).astype(np.float64)[()]

        xlabel = "iteration"
    if log_y is None:
        log_y = bool(v_min > 0 and med > 0 and v_max > 5 * med)
    log_y = log_y and v_min > 0
    if n <= max_points:
        ax.plot(
            xs(slice(None)),
            v / unit[1],
            linestyle="",
            marker=".",
            markersize=1.5,
            alpha=0.5,
            color=COLORS[0],
            rasterized=True,
            label=f"samples (n={n:,})",
        )
    else:
        nb = min(ENVELOPE_BINS, n)
        edges = np.linspace(0, n, nb + 1).astype(np.int64)
        starts = edges[:-1]
        # (a division by the unit keeps the order: the extremes of the column divided)
        lo = np.minimum.reduceat(v, starts) / unit[1]
        hi = np.maximum.reduceat(v, starts) / unit[1]
        mid = xs(np.minimum((edges[:-1] + edges[1:]) // 2, n - 1))
        ax.fill_between(
            mid,
            lo,
            hi,
            step="mid",
            color=COLORS[0],
            alpha=0.35,
            linewidth=0,
            rasterized=True,
            label=f"min-max of {n:,} samples ({nb:,} columns of ~{n // nb:,})",
        )
    if spikes is not None:
        si = np.asarray(spikes, dtype=np.int64)
        if si.size > MAX_SPIKES:
            si = np.sort(si[np.argsort(v[si])[-MAX_SPIKES:]])
        if si.size:
            ax.plot(
                xs(si),
                v[si] / unit[1],
                linestyle="",
                marker="o",
                markersize=2.2,
                color=COLORS[1],
                alpha=0.8,
                rasterized=True,
                label=f"spikes ({np.asarray(spikes).size:,})",
            )
    if drift is not None and drift.window_medians.size:
        wstarts, wmed, w = drift.window_starts, drift.window_medians, drift.window_size
    else:
        w = max(50, n // 200)
        from ..stats import window_medians

        wstarts, wmed = window_medians(v, w)
    wmid = np.minimum(wstarts + w // 2, n - 1)
    ax.plot(
        xs(wmid),
        wmed / unit[1],
        color="black",
        lw=1.2,
        label=f"median of windows of {w:,}",
    )
    if drift is not None:
        last_note = -math.inf
        span = float(xs(-1) - xs(0)) or 1.0
        for i, cp in enumerate(drift.change_points):
            xc = xs(min(cp.index, n - 1))
            ax.axvline(
                xc,
                color=COLORS[3],
                ls="--",
                lw=1.0,
                alpha=0.8,
                label="change points" if i == 0 else None,
            )
            if abs(cp.relative_change) < 0.05 or xc - last_note < 0.04 * span:
                continue
            last_note = xc
            ax.annotate(
                f"{100 * cp.relative_change:+.0f}%",
                (xc, 1.0),
                xycoords=("data", "axes fraction"),
                ha="left",
                va="top",
                fontsize=SMALL,
                color=COLORS[3],
                xytext=(2, -2),
                textcoords="offset points",
            )
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"latency ({unit[0]}{', log scale' if log_y else ''})")
    first, last = xs(0), xs(-1)
    ax.set_xlim(float(first), float(last) if last > first else float(first) + 1.0)
    set_title(ax, "Every sample over the run", label)
    legend_below(ax, *ax.get_legend_handles_labels(), ncols=4)
    _style(ax)
    return _fig(ax)


# ------------------------------------------------------------------------------- ACF, Q-Q


def acf(
    data: Dependence | npt.ArrayLike,
    *,
    label: str = "",
    level: float = 0.95,
    ax: Axes | None = None,
) -> Figure:
    """Autocorrelation of the samples' normal scores by lag, with the band inside which
    independent samples stay with probability ``level`` (±z/√n), and the effective sample size
    and Ljung–Box test. ``data``: a ``Dependence`` (from the analysis) or the samples (ns)."""
    from ..stats import Dependence, dependence
    from ..stats.dist import norm_ppf

    dep = data if isinstance(data, Dependence) else dependence(_ns(data))
    ax = _axes(ax)
    lags, r = dep.lags[1:], dep.acf[1:]
    if lags.size == 0:
        _note(ax, "too few samples for an autocorrelation", "upper left")
    else:
        ax.vlines(lags, 0, r, color=COLORS[0], lw=1.2)
        ax.plot(lags, r, linestyle="", marker="o", markersize=2.5, color=COLORS[0])
    z = float(norm_ppf(0.5 + level / 2.0))
    band = z / math.sqrt(max(dep.n, 1))
    hi_lag = float(lags[-1]) + 1 if lags.size else 1.0
    ax.fill_between([0, hi_lag], -band, band, color="#999999", alpha=0.25, linewidth=0)
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xlim(0, hi_lag)
    top = max(0.2, float(np.max(np.abs(r))) * 1.15 if r.size else 0.2, band * 1.5)
    ax.set_ylim(-min(1.05, top), min(1.05, top))
    ax.set_xlabel("lag (iterations)")
    ax.set_ylabel("autocorrelation of normal scores (−1…1)")
    if dep.ljung_box_p is None:
        lb = ", Ljung–Box not computed"
    elif dep.ljung_box_p < 1e-15:
        lb = ", Ljung–Box p < 1e-15"
    else:
        lb = f", Ljung–Box p {dep.ljung_box_p:.2g}"
    _note(
        ax,
        f"ESS ≈ {dep.ess:,.0f} of {dep.n:,} (τ {dep.tau:.3g}){lb}\n"
        f"band: {100 * level:.0f}% for independent samples",
    )
    set_title(ax, "Autocorrelation", label)
    _style(ax)
    return _fig(ax)
