"""Distributions: histograms (with the fitted density), box plots and violins, ECDFs and
tails, and the Q–Q plot against the shifted log-normal fit."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..errors import BadInput

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stats import LogNormalFit
from ..units import fmt, pick_unit
from . import sorted as srt_
from .common import (
    COLORS,
    CURVE_POINTS,
    SMALL,
    VIOLIN_POINTS,
    Unit,
    _axes,
    _bins,
    _box_stats,
    _decimate_sorted,
    _fig,
    _grid_edges,
    _level,
    _lognormal_pdf,
    _note,
    _scaled,
    _snap_to_grid,
    _style,
    legend_below,
    set_title,
    unit_for,
)
from .sorted import SortedSamples, _ns, samples

# ------------------------------------------------------------------------------- histograms


#: Where a linear histogram is cut by default (the report's and ``latscope plot``'s): the
#: slowest 3% would stretch the axis to the maximum, often a thousand times the median, and
#: squeeze the body into one bar. The samples beyond are counted on the figure.
HIST_CUT = 97.0


def histogram(
    x: npt.ArrayLike | SortedSamples,
    *,
    label: str = "",
    fit: LogNormalFit | None = None,
    cut: float | None = None,
    log_x: bool = False,
    log_count: bool = False,
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
        how many lie beyond. ``log_x``: logarithmic bins and axis (density per decade); without a
        cut its range favours the body of the distribution (`log_range`, what lies beyond
        counted), with ``cut=100`` it holds every sample. ``log_count`` (with ``log_x``): the bars
    are samples per decade on a logarithmic axis, so that a tail of a few samples shows. The bar
        heights are densities relative to *all* samples, so the fitted density fits them even when
        the histogram is cut."""
    if log_count and not log_x:
        raise BadInput("a log-count histogram has a logarithmic latency axis (log_x)")
    v, srt = samples(x)  # `x` sorted once for several figures (plots.sorted): no whole pass
    n = v.size
    ax = _axes(ax)
    unit = pick_unit([srt_.median(v, srt)])
    lo, hi = srt_.lowest(v, srt), srt_.highest(v, srt)
    beyond = 0
    if cut is not None:
        if not 0.0 < cut <= 100.0:
            raise BadInput(f"cut at p{cut:g}: the percentile must lie in (0, 100]")
        hi = float(srt_.percentile(v, cut, srt))
        beyond = srt_.above(v, hi, srt)
    below_cut = 0
    if cut is not None and cut < 100.0 and lo < 0.0 and not log_x:
        # below zero: a difference of two timings (ctx's switch), whose rare negative samples
        # (an interrupt in the part subtracted) are a tail too: cut as far from the other end
        lo = float(srt_.percentile(v, 100.0 - cut, srt))
        below_cut = srt_.below(v, lo, srt)
    shown = srt_.within(v, lo, hi, srt)
    what = "Histogram"
    notes: list[str] = []
    if log_x:
        pos = srt_.positive(shown, srt)
        dropped = shown.size - pos.size
        if pos.size == 0:
            raise BadInput("a logarithmic histogram needs positive samples")
        # cut at p100: every sample, the tail being the point; else the body first
        p_lo, p_hi = srt_.lowest(pos, srt), srt_.highest(pos, srt)
        r_lo, r_hi = (p_lo, p_hi) if cut == 100.0 else log_range(pos, srt)
        inside = srt_.within(pos, r_lo, r_hi, srt)
        below, above = srt_.below(pos, r_lo, srt), srt_.above(pos, r_hi, srt)
        i_lo, i_hi = srt_.lowest(inside, srt), srt_.highest(inside, srt)
        lo_l, hi_l = math.log10(i_lo), math.log10(i_hi)
        if hi_l <= lo_l:
            hi_l = lo_l + 0.01
        nb = bins or _bins(inside, lo_l, hi_l, srt, np.log10)
        edges = np.logspace(lo_l, hi_l, nb + 1)
        edges[0], edges[-1] = i_lo, max(i_hi, edges[-1])
        if step:
            origin = i_lo
            edges = _snap_to_grid(edges, origin, step)
            edges[0] = origin - 0.5 * step
            edges[-1] = max(edges[-1], i_hi + 0.5 * step)
            edges = edges[edges > 0.0]
            if edges.size < 2 or edges[0] > origin:
                edges = np.append(origin * (1.0 - 1e-9), edges[edges > origin])
        counts = srt_.counts(inside, edges, srt)
        widths_dec = np.diff(np.log10(edges))
        # a share of the samples per decade, or (log_count) the samples in each bin on a log
        # axis, where a bin of one sample in the tail shows as plainly as the body
        _bars(ax, counts if log_count else counts / (n * widths_dec), edges / unit[1], n)
        ax.set_xscale("log")
        ax.set_xlim(float(edges[0]) / unit[1], float(edges[-1]) / unit[1])
        if log_count:
            ax.set_yscale("log")
            ax.set_ylim(bottom=0.5)  # one sample in a bin stands above the axis
            ax.set_ylabel("samples in each bin")
        else:
            ax.set_ylabel("share of samples per decade (1/decade)")
        if fit is not None:
            grid = np.logspace(math.log10(edges[0]), math.log10(edges[-1]), 400)
            dens = _lognormal_pdf(grid, fit) * grid * math.log(10.0)
            if log_count:  # the samples a bin of the typical width would hold
                dens = dens * n * float(np.median(widths_dec))
                grid, dens = grid[dens > 0.1], dens[dens > 0.1]
            _fit_line(ax, grid / unit[1], dens, fit, unit)
        if below:
            notes.append(
                f"not shown: {below:,} samples ({_share(below, n)})\n"
                f"below {fmt(r_lo, unit)} (min {fmt(p_lo, unit)})"
            )
        if above:
            notes.append(
                f"not shown: {above:,} samples ({_share(above, n)})\n"
                f"above {fmt(r_hi, unit)} (max {fmt(p_hi, unit)})"
            )
        if dropped:
            notes.append(f"{dropped:,} samples ≤ 0 not shown (log axis)")
        what = "Histogram (log x, log count)" if log_count else "Histogram (log x)"
    else:
        if step:
            # edges of whole steps; one that repeats (a step below the float's resolution at
            # these values) would make a bar of no width and infinite height
            grid = np.unique(_grid_edges(shown, lo, hi, step, srt))
            if grid.size < 2:
                grid = np.array([lo, hi if hi > lo else lo + 1.0])
            counts, edges = srt_.counts(shown, grid, srt), grid
        else:
            nb = bins or _bins(shown, lo, hi, srt)
            top = hi if hi > lo else lo + 1.0
            if srt:
                edges = srt_.uniform_edges(lo, top, nb)
                counts = srt_.counts(shown, edges, srt)
            else:
                counts, edges = np.histogram(shown, bins=nb, range=(lo, top))
        width = np.diff(edges)
        heights = counts / (n * width / unit[1])
        _bars(ax, heights, edges / unit[1], n)
        ax.set_ylabel(f"density (1/{unit[0]})")
        if fit is not None:
            grid = np.linspace(max(float(edges[0]), fit.loc), edges[-1], 400)
            dens = _lognormal_pdf(grid, fit) * unit[1]
            _fit_line(ax, grid / unit[1], dens, fit, unit)
    if cut is not None and cut < 100.0:
        what += f", cut at p{cut:g}"
        notes.insert(
            0,
            f"not shown: {beyond:,} samples ({100.0 * beyond / n:.2g}%)\n"
            f"above p{cut:g} = {fmt(hi, unit)} (max {fmt(srt_.highest(v, srt), unit)})",
        )
        if below_cut:
            notes.insert(
                1,
                f"not shown: {below_cut:,} samples ({100.0 * below_cut / n:.2g}%)\n"
                f"below p{100 - cut:g} = {fmt(lo, unit)} (min {fmt(srt_.lowest(v, srt), unit)})",
            )
    ax.set_xlabel(f"latency ({unit[0]})")
    set_title(ax, what, label)
    # below the axes, never over a bar: what is drawn, the fit, and what is not shown
    handles, labels = ax.get_legend_handles_labels()
    for note in notes:
        handles.append(Line2D([], [], linestyle="none"))
        labels.append(note)
    if handles:
        legend_below(ax, handles, labels)
    _style(ax)
    return _fig(ax)


def log_range(v: np.ndarray, srt: bool = False) -> tuple[float, float]:
    """The range a logarithmic histogram of the positive samples ``v`` draws, so that the body
    of the distribution fills the axis even under a tail several decades long: the central
    90% (p5 to p95, on the log axis) takes at least a third of the width. The upper end is the
    highest of max, p99.9, p99.5, p99, p98, p97, p96 that allows it (else p95), the lower end
    at most one body width below p5. The figure counts the samples beyond either end.
    ``srt``: ``v`` is sorted (plots.sorted: percentiles from two elements each)."""
    lv = v if srt else np.log10(v)
    log = np.log10 if srt else None
    p5, p95 = (float(q) for q in srt_.percentile(lv, [5, 95], srt, log))
    v_lo, v_hi = srt_.lowest(v, srt), srt_.highest(v, srt)
    l_lo, l_hi = (math.log10(v_lo), math.log10(v_hi)) if srt else (lv.min(), lv.max())
    body = p95 - p5
    if body <= 0.0:
        return v_lo, v_hi
    lo = max(float(l_lo), p5 - body)
    hi = p95
    for c in (100.0, 99.9, 99.5, 99.0, 98.0, 97.0, 96.0):
        q = float(srt_.percentile(lv, c, srt, log))
        if 3.0 * body >= q - lo:
            hi = q
            break
    return (v_lo if lo <= l_lo else 10.0**lo, v_hi if hi >= l_hi else 10.0**hi)


def _share(k: int, n: int) -> str:
    """``k`` of ``n`` as a percentage with two significant digits."""
    return f"{100.0 * k / n:.2g}%"


def _bars(ax: Axes, heights: np.ndarray, edges: np.ndarray, n: int) -> None:
    """The histogram's bars: ``heights`` between ``edges`` (display units), n samples."""
    ax.stairs(heights, edges, fill=True, color=COLORS[0], alpha=0.55, label=f"samples (n={n:,})")


def _fit_label(fit: LogNormalFit, unit: Unit) -> str:
    return (
        f"shifted log-normal fit\nloc {fmt(fit.loc, unit)}, median {fmt(fit.median, unit)}"
        f"\nσ {fit.sigma:.2f}, KS D {fit.ks_statistic:.3f}"
        + ("\na poor fit: no model of these samples" if fit.fit_quality == "poor" else "")
    )


def _fit_line(ax: Axes, xs: np.ndarray, ys: np.ndarray, fit: LogNormalFit, unit: Unit) -> None:
    """The fitted density over the bars: dashed where the fit is poor (``fit_quality``: KS D
    above ``POOR_FIT_KS``), whose curve would otherwise read as the samples' shape."""
    style = "--" if fit.fit_quality == "poor" else "-"
    ax.plot(xs, ys, color=COLORS[1], lw=1.5, ls=style, label=_fit_label(fit, unit))


# ------------------------------------------------------------------------------- box, violin


def box(
    groups: Mapping[str, npt.ArrayLike | SortedSamples],
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
    # each group read once (``groups`` may read each when asked: a run's columns, one at a
    # time), for what its box or violin needs, in ns; the unit (from the medians) after
    labels = list(groups)
    rng = np.random.default_rng(0)
    parts: list[Any] = []
    meds, positive = [], True
    for k in labels:
        v, srt = samples(groups[k])
        meds.append(srt_.median(v, srt))
        positive = positive and srt_.lowest(v, srt) > 0
        if not violin:
            parts.append(_box_stats(v, k, rng, srt))
        elif v.size <= VIOLIN_POINTS:
            parts.append((v, srt_.percentile(v, [25, 50, 75], srt)))
        else:  # sorted: evenly spaced order statistics, the distribution without a draw
            idx = np.linspace(0, v.size - 1, VIOLIN_POINTS).astype(np.intp)
            vv = v[idx] if srt else rng.choice(v, VIOLIN_POINTS, replace=False)
            parts.append((vv, srt_.percentile(v, [25, 50, 75], srt)))
        del v  # before the next group is read
    ax = _axes(ax, size=(max(4.0, 1.2 * len(labels) + 2.0), 3.6))
    unit = pick_unit(meds)
    use_log = log and positive
    if violin:
        from ..stats.dist import gaussian_kde

        for i, (vv, (q1, med, q3)) in enumerate(parts):
            tv = np.log10(vv) if use_log else vv
            lo, hi = float(np.min(tv)), float(np.max(tv))
            color = COLORS[i % len(COLORS)]
            if hi > lo and np.unique(tv).size > 2:
                kde = gaussian_kde(tv)
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
        st = [_scaled(b, unit[1]) for b in parts]
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


# ------------------------------------------------------------------------------- ECDF, tail


def _curves(
    groups: Mapping[str, npt.ArrayLike | SortedSamples], ax: Axes | None
) -> tuple[dict[str, np.ndarray], Axes, Unit, bool]:
    """What an ECDF or a tail plot starts from: each group's samples sorted, the axes, the
    display unit, and whether every sample is positive (a log latency axis)."""
    data = {
        k: v if srt else np.sort(v) for k, (v, srt) in ((k, samples(x)) for k, x in groups.items())
    }
    if not data:
        raise BadInput("nothing to plot")
    unit = pick_unit([srt_.median(v, True) for v in data.values()])  # (sorted: no pass)
    return data, _axes(ax), unit, all(float(v[0]) > 0 for v in data.values())


def ecdf(
    groups: Mapping[str, npt.ArrayLike | SortedSamples], *, title: str = "", ax: Axes | None = None
) -> Figure:
    """Empirical CDFs of several columns or runs (log latency axis when all are positive)."""
    data, ax, unit, positive = _curves(groups, ax)
    for i, (k, xs) in enumerate(data.items()):
        idx, vals = _decimate_sorted(xs)
        p = (idx + 1) / xs.size
        ax.step(vals / unit[1], p, where="post", color=COLORS[i % len(COLORS)], lw=1.3, label=k)
    for q in (0.5, 0.99):
        _level(ax, q, f"p{100 * q:g}")
    if positive:
        ax.set_xscale("log")
    ax.set_xlabel(f"latency ({unit[0]}{', log scale' if positive else ''})")
    ax.set_ylabel("share of samples ≤ x (0–1)")
    ax.set_ylim(0, 1.01)
    set_title(ax, "ECDF", title)
    ax.legend(fontsize=SMALL, loc="lower right", frameon=False)
    _style(ax)
    return _fig(ax)


def tail(
    groups: Mapping[str, npt.ArrayLike | SortedSamples], *, title: str = "", ax: Axes | None = None
) -> Figure:
    """Tail plot: the share of samples above each latency, 1 − p, on a log scale, so that
    p99, p99.9 and p99.99 are evenly spaced and the tails of several runs can be compared."""
    data, ax, unit, positive = _curves(groups, ax)
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
            _level(ax, q, f"p{100 * (1 - q):g}")
    ax.set_yscale("log")
    if positive:
        ax.set_xscale("log")
    ax.set_xlabel(f"latency ({unit[0]}{', log scale' if positive else ''})")
    ax.set_ylabel("share of samples above x, 1 − p (log)")
    set_title(ax, "Tail", title)
    ax.legend(fontsize=SMALL, loc="lower left", frameon=False)
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
    from ..stats import LogNormalFit, fit_shifted_lognormal

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
        f"loc {fmt(fit.loc, unit)}, σ {fit.sigma:.3g}\n"
        f"KS D {fit.ks_statistic:.3f}, A² {fit.ad_statistic:.3g}",
        "upper left",
    )
    set_title(ax, "Q–Q vs. shifted log-normal", label)
    _style(ax)
    return _fig(ax)
