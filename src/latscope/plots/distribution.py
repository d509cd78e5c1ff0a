"""Figures of latency samples, for the HTML report, the CLI and LaTeX documents.

Every function takes latencies in nanoseconds (numpy arrays, iteration order) or analysis
results, returns a ``matplotlib.figure.Figure`` and never touches pyplot: figures are created
with ``Figure()`` on an Agg canvas, so nothing leaks into a global figure registry or changes
``rcParams``, and the functions are safe in threads and notebooks. ``save(fig, path)`` writes
PNG, SVG or PDF by the file's suffix (under a temporary name, then renamed).

Every function also accepts ``ax=``, an existing Axes to draw into (to compose several plots
in one figure), and returns that Axes' figure. Axes carry units: latencies are shown in the
unit in which their median reads between 1 and 1000 (ns, µs, ms, s). Titles say what is shown
and which run (``label``).

Big runs stay fast: scatter plots are rasterized (vector formats hold one image instead of
millions of markers), a time series of more than ``MAX_POINTS`` samples is drawn as a min-max
envelope per pixel column (every spike stays visible: a spike is the maximum of its column),
ECDF and tail plots use at most a few thousand points, box plots draw at most
``MAX_FLIERS`` outliers per box (the largest ones first) and violins use a KDE on a subsample.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .errors import BadInput
from .units import pick_unit

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .analysis import Comparison, Dependence, Drift, LogNormalFit

#: Time series with more samples than this are drawn as a min-max envelope.
MAX_POINTS = 100_000
#: Columns of the min-max envelope.
ENVELOPE_BINS = 2_000
#: At most this many outliers are drawn per box.
MAX_FLIERS = 1_000
#: Violins: KDE on at most this many samples.
VIOLIN_POINTS = 20_000
#: ECDF / tail plots: at most this many points per line.
CURVE_POINTS = 2_000
#: Spikes marked individually in a time series (the largest first).
MAX_SPIKES = 20_000

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
WIDE = (10.0, 3.6)
HALF = (5.0, 3.6)

Unit = tuple[str, float]


# ------------------------------------------------------------------------------- helpers


def new_figure(ncols: int = 1, nrows: int = 1, size: tuple[float, float] | None = None) -> Figure:
    """A figure on an Agg canvas (no pyplot) with ``nrows x ncols`` Axes, constrained layout."""
    w, h = size if size is not None else (WIDE if ncols > 1 else HALF)
    fig = Figure(figsize=(w, h * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    fig.subplots(nrows, ncols, squeeze=False)
    return fig


def _axes(ax: Axes | None, size: tuple[float, float] = HALF) -> Axes:
    if ax is not None:
        return ax
    fig = new_figure(size=size)
    return fig.axes[0]


def _fig(ax: Axes) -> Figure:
    fig = ax.figure
    assert isinstance(fig, Figure)
    return fig


def _ns(x: npt.ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64).ravel()
    if a.size == 0:
        raise BadInput("nothing to plot: no samples")
    if not np.isfinite(a).all():
        raise BadInput("cannot plot non-finite samples (NaN or inf)")
    return a


def unit_for(*arrays: npt.ArrayLike) -> Unit:
    """The display unit for latencies: the one in which the median of the medians reads
    between 1 and 1000."""
    meds = [float(np.median(np.asarray(a, dtype=np.float64))) for a in arrays if np.size(a)]
    return pick_unit(meds)


def _fmt(v: float, unit: Unit) -> str:
    return f"{v / unit[1]:.4g} {unit[0]}"


def _note(ax: Axes, text: str, loc: str = "upper right") -> None:
    x, ha = (0.98, "right") if "right" in loc else (0.02, "left")
    y, va = (0.97, "top") if "upper" in loc else (0.03, "bottom")
    ax.text(
        x,
        y,
        text,
        transform=ax.transAxes,
        ha=ha,
        va=va,
        fontsize=8,
        bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#bbbbbb", "alpha": 0.9},
    )


def set_title(ax: Axes, what: str, label: str = "") -> None:
    """``what — label``, wrapped to the width of the Axes."""
    import textwrap

    text = f"{what} — {label}" if label else what
    fig = ax.figure
    width_in = fig.get_figwidth() * ax.get_position().width if isinstance(fig, Figure) else 5.0
    chars = max(30, int(width_in * 12))
    ax.set_title("\n".join(textwrap.wrap(text, chars)) or text, fontsize=10)


def _style(ax: Axes) -> None:
    ax.grid(True, which="major", color="#e4e4e4", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(labelsize=8)
    ax.title.set_fontsize(10)
    ax.xaxis.label.set_fontsize(9)
    ax.yaxis.label.set_fontsize(9)


def _decimate_sorted(xs: np.ndarray, points: int = CURVE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Indices into sorted data for an ECDF: evenly spaced in probability, plus both ends."""
    n = xs.size
    if n <= points:
        return np.arange(n), xs
    idx = np.unique(np.linspace(0, n - 1, points).astype(np.int64))
    return idx, xs[idx]


def _lognormal_pdf(grid_ns: np.ndarray, fit: LogNormalFit) -> np.ndarray:
    from scipy import stats

    return np.asarray(
        stats.lognorm.pdf(grid_ns - fit.loc, s=fit.sigma, scale=fit.scale), dtype=np.float64
    )


def _bins(v: np.ndarray, lo: float, hi: float, max_bins: int = 200) -> int:
    """Freedman–Diaconis bin count, 10..max_bins."""
    if hi <= lo:
        return 10
    q1, q3 = np.percentile(v, [25, 75])
    iqr = q3 - q1
    if iqr <= 0:
        return 50
    width = 2.0 * iqr / v.size ** (1.0 / 3.0)
    return int(min(max_bins, max(10, math.ceil((hi - lo) / width))))


def _grid_edges(
    v: np.ndarray, lo: float, hi: float, step: float, max_bins: int = 200
) -> np.ndarray:
    """Bin edges for samples quantised to ``step``: every bin is a whole number of steps wide
    (the Freedman–Diaconis width rounded to whole steps, at least one step, and wide enough that
    there are at most ``max_bins`` bins), and every edge lies halfway between two grid values,
    so each bin holds whole grid values and none is an empty tooth of a comb."""
    q1, q3 = np.percentile(v, [25, 75])
    fd = 2.0 * (q3 - q1) / v.size ** (1.0 / 3.0)
    k = max(1, round(fd / step), math.ceil((hi - lo) / (max_bins * step)))
    width = k * step
    start = lo - 0.5 * step  # lo is a grid value: the first edge sits half a step below it
    nb = max(1, math.ceil((hi + 0.5 * step - start) / width - 1e-9))
    return start + width * np.arange(nb + 1)


def _snap_to_grid(edges: np.ndarray, origin: float, step: float) -> np.ndarray:
    """Move edges to the nearest midpoint between grid values ``origin + k * step`` and drop
    duplicates, so every bin holds at least one whole grid value."""
    k = np.round((edges - origin) / step - 0.5)
    return np.unique(origin + (k + 0.5) * step)


# ------------------------------------------------------------------------------- histograms


def histogram(
    x: npt.ArrayLike,
    *,
    label: str = "",
    fit: LogNormalFit | None = None,
    cut: float | None = None,
    log_x: bool = False,
    bins: int | None = None,
    step: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Histogram of latencies ``x`` (ns) with the fitted shifted log-normal density over it.

    ``step``: the clock's step (ns; ``Run.column_step_ns(col)``). Samples of a quantised clock
    are whole steps apart, and bins narrower than a step draw a comb of full and empty bins
    with the fitted density far below the full ones. With ``step``, linear bins are whole
    multiples of the step centred on grid values (edges halfway between them), and logarithmic
    bin edges are moved to the nearest midpoint between grid values (every bin at least one
    step wide); ``bins`` is then ignored. Bars are densities (count / (n x bin width)), the same
    scale as the fitted density, so the two agree whatever the bin widths.

    ``cut``: draw only samples up to this percentile (e.g. 97, like many lab reports) and say
    how many lie beyond. ``log_x``: logarithmic bins and axis (density per decade). The bar
    heights are densities relative to *all* samples, so the fitted density fits them even when
    the histogram is cut."""
    v = _ns(x)
    n = v.size
    ax = _axes(ax)
    unit = unit_for(v)
    lo, hi = float(v.min()), float(v.max())
    beyond = 0
    if cut is not None:
        if not 0.0 < cut <= 100.0:
            raise BadInput(f"cut at p{cut:g}: the percentile must lie in (0, 100]")
        hi = float(np.percentile(v, cut))
        beyond = int(np.count_nonzero(v > hi))
    shown = v[v <= hi]
    what = "Histogram"
    if log_x:
        pos = shown[shown > 0]
        dropped = shown.size - pos.size
        if pos.size == 0:
            raise BadInput("a logarithmic histogram needs positive samples")
        lo_l, hi_l = math.log10(float(pos.min())), math.log10(float(pos.max()))
        if hi_l <= lo_l:
            hi_l = lo_l + 0.01
        nb = bins or _bins(np.log10(pos), lo_l, hi_l)
        edges = np.logspace(lo_l, hi_l, nb + 1)
        if step:
            origin = float(pos.min())
            edges = _snap_to_grid(edges, origin, step)
            edges[0] = origin - 0.5 * step
            edges[-1] = max(edges[-1], float(pos.max()) + 0.5 * step)
            edges = edges[edges > 0.0]
            if edges.size < 2 or edges[0] > origin:
                edges = np.append(origin * (1.0 - 1e-9), edges[edges > origin])
        counts, _ = np.histogram(pos, bins=edges)
        widths_dec = np.diff(np.log10(edges))
        heights = counts / (n * widths_dec)
        ax.stairs(
            heights,
            edges / unit[1],
            fill=True,
            color=COLORS[0],
            alpha=0.55,
            label=f"samples (n={n:,})",
        )
        ax.set_xscale("log")
        ax.set_ylabel("share of samples per decade (1/decade)")
        if fit is not None:
            grid = np.logspace(lo_l, hi_l, 400)
            dens = _lognormal_pdf(grid, fit) * grid * math.log(10.0)
            ax.plot(grid / unit[1], dens, color=COLORS[1], lw=1.5, label=_fit_label(fit, unit))
        if dropped:
            _note(ax, f"{dropped:,} samples ≤ 0 not shown (log axis)", "upper left")
        what = "Histogram (log x)"
    else:
        if step:
            counts, edges = np.histogram(shown, bins=_grid_edges(shown, lo, hi, step))
        else:
            nb = bins or _bins(shown, lo, hi)
            counts, edges = np.histogram(shown, bins=nb, range=(lo, hi if hi > lo else lo + 1.0))
        width = np.diff(edges)
        heights = counts / (n * width / unit[1])
        ax.stairs(
            heights,
            edges / unit[1],
            fill=True,
            color=COLORS[0],
            alpha=0.55,
            label=f"samples (n={n:,})",
        )
        ax.set_ylabel(f"density (1/{unit[0]})")
        if fit is not None:
            grid = np.linspace(max(float(edges[0]), fit.loc), edges[-1], 400)
            dens = _lognormal_pdf(grid, fit) * unit[1]
            ax.plot(grid / unit[1], dens, color=COLORS[1], lw=1.5, label=_fit_label(fit, unit))
    if cut is not None and cut < 100.0:
        what += f", cut at p{cut:g}"
        _note(
            ax,
            f"not shown: {beyond:,} samples ({100.0 * beyond / n:.2g}%)\n"
            f"above p{cut:g} = {_fmt(hi, unit)} (max {_fmt(float(v.max()), unit)})",
        )
    ax.set_xlabel(f"latency ({unit[0]})")
    set_title(ax, what, label)
    ax.legend(fontsize=7, loc="upper left" if cut else "best", frameon=False)
    _style(ax)
    return _fig(ax)


def _fit_label(fit: LogNormalFit, unit: Unit) -> str:
    return (
        f"shifted log-normal fit\nloc {_fmt(fit.loc, unit)}, median {_fmt(fit.median, unit)}"
        f"\nσ {fit.sigma:.2f}, KS D {fit.ks_statistic:.3f}"
    )


# ------------------------------------------------------------------------------- box, violin


def _box_stats(v: np.ndarray, label: str, rng: np.random.Generator) -> dict[str, Any]:
    q1, med, q3 = (float(q) for q in np.percentile(v, [25, 50, 75]))
    iqr = q3 - q1
    lo_f, hi_f = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    inside = v[(v >= lo_f) & (v <= hi_f)]
    whislo = float(inside.min()) if inside.size else q1
    whishi = float(inside.max()) if inside.size else q3
    fl = v[(v < lo_f) | (v > hi_f)]
    if fl.size > MAX_FLIERS:
        srt = np.sort(fl)
        top = srt[-MAX_FLIERS // 4 :]
        rest = rng.choice(srt[: -MAX_FLIERS // 4], size=MAX_FLIERS - top.size, replace=False)
        fl = np.concatenate([rest, top])
    return {
        "label": label,
        "med": med,
        "q1": q1,
        "q3": q3,
        "whislo": whislo,
        "whishi": whishi,
        "fliers": fl,
        "mean": float(v.mean()),
    }


def box(
    groups: Mapping[str, npt.ArrayLike],
    *,
    title: str = "",
    violin: bool = False,
    log: bool = True,
    xlabel: str = "column",
    ax: Axes | None = None,
) -> Figure:
    """Box plots (or violins) of several columns or runs side by side, on a log axis.

    Boxes: quartiles, whiskers at the most extreme samples within 1.5 IQR (Tukey), outliers as
    dots (at most ``MAX_FLIERS`` per box: the largest quarter and a random sample of the rest),
    the mean as a diamond. Violins: density of log10 of the samples (KDE on at most
    ``VIOLIN_POINTS``), with the median and quartiles marked."""
    if not groups:
        raise BadInput("nothing to plot: no columns or runs")
    data = {k: _ns(v) for k, v in groups.items()}
    ax = _axes(ax, size=(max(4.0, 1.2 * len(data) + 2.0), 3.6))
    unit = unit_for(*data.values())
    positive = all(float(v.min()) > 0 for v in data.values())
    use_log = log and positive
    rng = np.random.default_rng(0)
    labels = list(data)
    if violin:
        from scipy import stats

        for i, v in enumerate(data.values()):
            vv = v if v.size <= VIOLIN_POINTS else rng.choice(v, VIOLIN_POINTS, replace=False)
            tv = np.log10(vv) if use_log else vv
            lo, hi = float(np.min(tv)), float(np.max(tv))
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            color = COLORS[i % len(COLORS)]
            if hi > lo and np.unique(tv).size > 2:
                kde = stats.gaussian_kde(tv)
                grid = np.linspace(lo, hi, 300)
                d = kde(grid)
                d = 0.4 * d / d.max()
                yy = (10.0**grid if use_log else grid) / unit[1]
                ax.fill_betweenx(yy, i - d, i + d, color=color, alpha=0.45, linewidth=0)
            ax.vlines(i, q1 / unit[1], q3 / unit[1], color="black", lw=3)
            ax.scatter([i], [med / unit[1]], color="white", edgecolor="black", zorder=3, s=18)
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.6, len(labels) - 0.4)
    else:
        st = [_box_stats(v / unit[1], k, rng) for k, v in data.items()]
        ax.bxp(
            st,
            showmeans=True,
            meanprops={
                "marker": "D",
                "markersize": 4,
                "markerfacecolor": "white",
                "markeredgecolor": "black",
            },
            flierprops={"marker": ".", "markersize": 2, "alpha": 0.4, "rasterized": True},
            medianprops={"color": COLORS[1], "linewidth": 1.5},
            patch_artist=True,
            boxprops={"facecolor": "#cfe0f1"},
        )
    if use_log:
        ax.set_yscale("log")
    ax.set_ylabel(f"latency ({unit[0]}{', log scale' if use_log else ''})")
    ax.set_xlabel(xlabel)
    set_title(ax, "Violin plot" if violin else "Box plot", title)
    if log and not positive:
        _note(ax, "linear axis: some samples are ≤ 0", "upper left")
    if len(labels) > 4 or max(len(s) for s in labels) > 12:
        ax.tick_params(axis="x", labelrotation=20)
    _style(ax)
    return _fig(ax)


# ------------------------------------------------------------------------------- time series


def _windowed_medians(v: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray]:
    nw = max(1, v.size // w)
    starts = np.arange(nw) * w
    med = np.empty(nw)
    if nw > 1:
        med[:-1] = np.median(v[: (nw - 1) * w].reshape(nw - 1, w), axis=1)
    med[-1] = np.median(v[(nw - 1) * w :])
    return starts, med


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
    unit = unit_for(v)
    if t is not None:
        xs = np.asarray(t, dtype=np.float64)
        if xs.size != n:
            raise BadInput(f"{xs.size} start times for {n} samples")
        xs = xs - xs[0]
        xlabel = "time since the first iteration (s)"
    else:
        xs = np.arange(n, dtype=np.float64)
        xlabel = "iteration"
    y = v / unit[1]
    med = float(np.median(v))
    if log_y is None:
        log_y = bool(float(v.min()) > 0 and med > 0 and float(v.max()) > 5 * med)
    log_y = log_y and float(v.min()) > 0
    if n <= max_points:
        ax.plot(
            xs,
            y,
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
        lo = np.minimum.reduceat(y, starts)
        hi = np.maximum.reduceat(y, starts)
        mid = xs[np.minimum((edges[:-1] + edges[1:]) // 2, n - 1)]
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
                xs[si],
                y[si],
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
        wstarts, wmed = _windowed_medians(v, w)
    wmid = np.minimum(wstarts + w // 2, n - 1)
    ax.plot(
        xs[wmid],
        wmed / unit[1],
        color="black",
        lw=1.2,
        label=f"median of windows of {w:,}",
    )
    if drift is not None:
        last_note = -math.inf
        span = float(xs[-1] - xs[0]) or 1.0
        for i, cp in enumerate(drift.change_points):
            xc = xs[min(cp.index, n - 1)]
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
                fontsize=7,
                color=COLORS[3],
                xytext=(2, -2),
                textcoords="offset points",
            )
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"latency ({unit[0]}{', log scale' if log_y else ''})")
    ax.set_xlim(float(xs[0]), float(xs[-1]) if xs[-1] > xs[0] else float(xs[0]) + 1.0)
    set_title(ax, "Every sample over the run", label)
    ax.legend(
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncols=4,
        frameon=False,
        markerscale=3,
    )
    _style(ax)
    return _fig(ax)


# ------------------------------------------------------------------------------- ECDF, tail


def ecdf(groups: Mapping[str, npt.ArrayLike], *, title: str = "", ax: Axes | None = None) -> Figure:
    """Empirical CDFs of several columns or runs (log latency axis when all are positive)."""
    data = {k: np.sort(_ns(v)) for k, v in groups.items()}
    if not data:
        raise BadInput("nothing to plot")
    ax = _axes(ax)
    unit = unit_for(*data.values())
    positive = all(float(v[0]) > 0 for v in data.values())
    for i, (k, xs) in enumerate(data.items()):
        idx, vals = _decimate_sorted(xs)
        p = (idx + 1) / xs.size
        ax.step(vals / unit[1], p, where="post", color=COLORS[i % len(COLORS)], lw=1.3, label=k)
    for q in (0.5, 0.99):
        ax.axhline(q, color="#999999", lw=0.7, ls=":")
        ax.annotate(
            f"p{100 * q:g}",
            (0.0, q),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            color="#666666",
            va="bottom",
            xytext=(2, 1),
            textcoords="offset points",
        )
    if positive:
        ax.set_xscale("log")
    ax.set_xlabel(f"latency ({unit[0]}{', log scale' if positive else ''})")
    ax.set_ylabel("share of samples ≤ x (0–1)")
    ax.set_ylim(0, 1.01)
    set_title(ax, "ECDF", title)
    ax.legend(fontsize=7, loc="lower right", frameon=False)
    _style(ax)
    return _fig(ax)


def tail(groups: Mapping[str, npt.ArrayLike], *, title: str = "", ax: Axes | None = None) -> Figure:
    """Tail plot: the share of samples above each latency, 1 − p, on a log scale, so that
    p99, p99.9 and p99.99 are evenly spaced and the tails of several runs can be compared."""
    data = {k: np.sort(_ns(v)) for k, v in groups.items()}
    if not data:
        raise BadInput("nothing to plot")
    ax = _axes(ax)
    unit = unit_for(*data.values())
    positive = all(float(v[0]) > 0 for v in data.values())
    nmax = max(v.size for v in data.values())
    for i, (k, xs) in enumerate(data.items()):
        n = xs.size
        surv = np.unique(np.concatenate([[1.0], np.logspace(0, -math.log10(n), CURVE_POINTS)]))
        idx = np.clip(np.rint(n * (1.0 - surv)).astype(np.int64), 0, n - 1)
        idx = np.unique(idx)
        s = 1.0 - idx / n
        ax.step(xs[idx] / unit[1], s, where="post", color=COLORS[i % len(COLORS)], lw=1.3, label=k)
    for q in (1e-2, 1e-3, 1e-4):
        if q * nmax >= 1:
            ax.axhline(q, color="#999999", lw=0.7, ls=":")
            ax.annotate(
                f"p{100 * (1 - q):g}",
                (0.0, q),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                color="#666666",
                va="bottom",
                xytext=(2, 1),
                textcoords="offset points",
            )
    ax.set_yscale("log")
    if positive:
        ax.set_xscale("log")
    ax.set_xlabel(f"latency ({unit[0]}{', log scale' if positive else ''})")
    ax.set_ylabel("share of samples above x, 1 − p (log)")
    set_title(ax, "Tail", title)
    ax.legend(fontsize=7, loc="lower left", frameon=False)
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
    from scipy import stats

    from .analysis import Dependence, dependence

    dep = data if isinstance(data, Dependence) else dependence(_ns(data))
    ax = _axes(ax)
    lags, r = dep.lags[1:], dep.acf[1:]
    if lags.size == 0:
        _note(ax, "too few samples for an autocorrelation", "upper left")
    else:
        ax.vlines(lags, 0, r, color=COLORS[0], lw=1.2)
        ax.plot(lags, r, linestyle="", marker="o", markersize=2.5, color=COLORS[0])
    z = float(stats.norm.ppf(0.5 + level / 2.0))
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


def qq(
    data: LogNormalFit | npt.ArrayLike | None,
    *,
    label: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Q–Q plot of the samples against the fitted shifted log-normal (log axes): points on
    the diagonal mean the model describes the data; a tail bending up means the data have a
    heavier tail than the model. ``data``: a ``LogNormalFit`` or the samples (ns)."""
    from .analysis import LogNormalFit, fit_shifted_lognormal

    fit = data if isinstance(data, LogNormalFit) or data is None else None
    if data is not None and not isinstance(data, LogNormalFit):
        fit = fit_shifted_lognormal(_ns(data))
    ax = _axes(ax)
    if fit is None:
        _note(ax, "no log-normal fit: fewer than 3 distinct values", "upper left")
        set_title(ax, "Q–Q plot", label)
        ax.set_xlabel("fitted quantile")
        ax.set_ylabel("sample quantile")
        return _fig(ax)
    th, sa = fit.qq_theoretical, fit.qq_sample
    unit = unit_for(sa)
    ax.plot(th / unit[1], sa / unit[1], linestyle="", marker=".", markersize=3, color=COLORS[0])
    lo = float(min(th.min(), sa.min()))
    hi = float(max(th.max(), sa.max()))
    ax.plot([lo / unit[1], hi / unit[1]], [lo / unit[1], hi / unit[1]], color=COLORS[1], lw=1)
    logs = lo > 0
    if logs:
        ax.set_xscale("log")
        ax.set_yscale("log")
    scale = ", log scale" if logs else ""
    ax.set_xlabel(f"shifted log-normal quantile ({unit[0]}{scale})")
    ax.set_ylabel(f"sample quantile ({unit[0]}{scale})")
    _note(
        ax,
        f"loc {_fmt(fit.loc, unit)}, σ {fit.sigma:.3g}\n"
        f"KS D {fit.ks_statistic:.3f}, A² {fit.ad_statistic:.3g}",
        "upper left",
    )
    set_title(ax, "Q–Q vs. shifted log-normal", label)
    _style(ax)
    return _fig(ax)


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


# ------------------------------------------------------------------------------- output


def save(fig: Figure, path: str | os.PathLike[str], dpi: int = 150) -> Path:
    """Write ``fig`` as PNG, SVG or PDF, chosen by the suffix of ``path``; under a temporary
    name, then renamed. Returns the path."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise BadInput(f"{p}: write .png, .svg or .pdf (the suffix chooses the format)")
    if p.is_dir():
        raise BadInput(f"{p} is a directory; give a file name")
    if not p.parent.is_dir():
        raise BadInput(f"{p.parent} does not exist")
    tmp = p.with_name(f".{p.name}.tmp.{os.getpid()}")
    metas: dict[str, dict[str, Any]] = {
        "png": {"Software": "latscope"},
        "svg": {"Date": None},
        "pdf": {"CreationDate": None, "Creator": "latscope"},
    }
    meta = metas[fmt]
    try:
        fig.savefig(tmp, format=fmt, dpi=dpi, metadata=meta)
        os.replace(tmp, p)
    except OSError as e:
        raise BadInput(f"cannot write {p}: {e.strerror}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


def to_bytes(fig: Figure, fmt: str = "png", dpi: int = 100) -> bytes:
    """The figure encoded as PNG or SVG bytes (for embedding in a report)."""
    import io

    buf = io.BytesIO()
    meta: dict[str, Any] = {"Software": "latscope"} if fmt == "png" else {"Date": None}
    fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta)
    return buf.getvalue()
