"""Figures: every kind written as PNG, SVG and PDF from synthetic data; units on the axes; no
pyplot state left behind; big series drawn as an envelope that keeps the spikes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from latscope import plots
from latscope.errors import BadInput
from latscope.stats import analyze_column, compare
from latscope.units import fmt

SIGNATURES = {".png": b"\x89PNG\r\n\x1a\n", ".svg": b"<svg", ".pdf": b"%PDF"}


def _data(n: int = 5000, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 2000.0 + np.exp(rng.normal(7.0, 0.5, n))
    x[::97] *= 20.0  # periodic spikes
    x[n // 2 :] *= 1.3  # a slowdown half-way
    return x


@pytest.fixture(scope="module")
def analysed() -> tuple[np.ndarray, np.ndarray, object]:
    x = _data()
    t = np.cumsum(x) / 1e9
    return x, t, analyze_column(x, t, step_ns=20.0)


def _kinds(x: np.ndarray, t: np.ndarray, a: object) -> dict[str, Callable[[], Figure]]:
    fit = a.distribution.lognormal  # type: ignore[attr-defined]
    c = compare(x, x * 1.2)
    lab = "rtt — run test"
    return {
        "hist": lambda: plots.histogram(x, label=lab, fit=fit),
        "hist-p97": lambda: plots.histogram(x, label=lab, fit=fit, cut=97),
        "hist-log": lambda: plots.histogram(x, label=lab, fit=fit, log_x=True),
        "hist-log-count": lambda: plots.histogram(
            x, label=lab, fit=fit, cut=100, log_x=True, log_count=True
        ),
        "box": lambda: plots.box({"open": x, "read": x / 50}, title="run test"),
        "violin": lambda: plots.box({"open": x, "read": x / 50}, title="run test", violin=True),
        "time": lambda: plots.time_series(
            x,
            label=lab,
            drift=a.drift,  # type: ignore[attr-defined]
            spikes=a.outliers.spike_indices,  # type: ignore[attr-defined]
        ),
        "time-seconds-envelope": lambda: plots.time_series(
            x,
            label=lab,
            t=t,
            drift=a.drift,
            max_points=1000,  # type: ignore[attr-defined]
        ),
        "ecdf": lambda: plots.ecdf({"a": x, "b": x * 1.2}, title="test"),
        "tail": lambda: plots.tail({"a": x, "b": x * 1.2}, title="test"),
        "acf": lambda: plots.acf(a.dependence, label=lab),  # type: ignore[attr-defined]
        "acf-from-samples": lambda: plots.acf(x, label=lab),
        "qq": lambda: plots.qq(fit, label=lab),
        "qq-from-samples": lambda: plots.qq(x, label=lab),
        "scenarios": lambda: plots.scenarios(
            [
                plots.Series("cached", "open", x, (900.0, 1100.0)),
                plots.Series("cached", "read", x / 100),
                plots.Series("cold", "open", x * 2),
                plots.Series("cold", "read", x / 50),
            ]
        ),
        "shift": lambda: plots.shift({"rtt": [("B", c)], "oneway": [("B", c)]}, baseline="A"),
    }


KINDS = [
    "hist",
    "hist-p97",
    "hist-log",
    "hist-log-count",
    "box",
    "violin",
    "time",
    "time-seconds-envelope",
    "ecdf",
    "tail",
    "acf",
    "acf-from-samples",
    "qq",
    "qq-from-samples",
    "scenarios",
    "shift",
]


class Drawn(NamedTuple):
    """A kind of figure drawn once for the checks that look at it as drawn (`drawn`)."""

    kind: str
    screen: Figure  # as the HTML report shows it: written as PNG at 100 dpi, its own dpi
    png: bytes  # ... those bytes
    paper: Figure  # drawn for print (`plots.printed`), on its canvas


@pytest.fixture(scope="module", params=KINDS)
def drawn(request: pytest.FixtureRequest, analysed) -> Drawn:
    """Each kind drawn once on screen and once for print, shared by the checks of tick labels,
    text sizes and image sizes (each drew the figure again, for the same pixels). A
    UserWarning while drawing (a layout that collapsed) is an error."""
    import warnings

    x, t, a = analysed
    make = _kinds(x, t, a)[request.param]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        screen = make()
        assert screen.dpi == 100  # to_bytes below draws it as its canvas does
        png = plots.to_bytes(screen, "png", dpi=100)
        with plots.printed():
            paper = make()
        paper.canvas.draw()
    return Drawn(request.param, screen, png, paper)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_in_every_format(kind: str, analysed, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    rc = dict(matplotlib.rcParams)
    x, t, a = analysed
    fig = _kinds(x, t, a)[kind]()
    assert isinstance(fig, Figure)
    for suffix, sig in SIGNATURES.items():
        out = plots.save(fig, tmp_path / f"{kind}{suffix}")
        data = out.read_bytes()
        assert sig in data[:400], (kind, suffix)
        assert len(data) > 1000
    assert not list(tmp_path.glob(".*tmp*"))
    # units on every latency axis, a title on every visible plot; panels sharing a y axis
    # (scenarios side by side) label it once, on the first of a row
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        shared = [o for o in ax.get_shared_y_axes().get_siblings(ax) if o.get_visible()]
        assert ax.get_xlabel() and any(o.get_ylabel() for o in shared), (kind, ax.get_title())
        assert ax.get_title() or fig.get_suptitle()
    assert plt.get_fignums() == before  # nothing registered with pyplot
    assert dict(matplotlib.rcParams) == rc  # no global style changes


def test_latency_axes_carry_units(analysed) -> None:
    x, t, a = analysed
    fig = plots.histogram(x, label="x")
    assert "(µs)" in fig.axes[0].get_xlabel()
    fig = plots.time_series(x, t=t)
    assert "(s)" in fig.axes[0].get_xlabel() and "µs" in fig.axes[0].get_ylabel()
    fig = plots.box({"a": x / 1000})
    assert "(ns" in fig.axes[0].get_ylabel()


def _said(ax) -> str:  # noqa: ANN001
    """Every word an Axes shows: its texts and its legend's (the notes sit in the legend,
    below the axes, never over the data)."""
    legend = ax.get_legend()
    parts = [t.get_text() for t in ax.texts]
    parts += [t.get_text() for t in legend.get_texts()] if legend is not None else []
    return " ".join(parts)


def test_histogram_cut_says_what_is_not_shown(analysed) -> None:
    x, _, _ = analysed
    fig = plots.histogram(x, cut=97)
    texts = _said(fig.axes[0])
    legend = fig.axes[0].get_legend()
    assert legend is not None
    # below the axes, over no bar
    fig.canvas.draw()
    box = legend.get_window_extent()
    assert box.y1 <= fig.axes[0].get_window_extent().y0
    beyond = int(np.count_nonzero(x > np.percentile(x, 97)))
    assert f"{beyond:,} samples" in texts and "p97" in texts


def test_a_differences_histogram_cuts_its_negative_tail_too() -> None:
    """A difference of two timings (ctx's switch) with a few samples far below zero (an
    interrupt in the part subtracted): cut at p3 below as at p97 above, and said; a duration
    (nothing below zero) keeps its minimum."""
    rng = np.random.default_rng(3)
    x = 2400.0 + rng.normal(0.0, 100.0, 5000)
    x[:20] = -15_000.0
    ax = plots.histogram(x, cut=97).axes[0]
    lo = ax.get_xlim()[0] * 1000.0  # µs on the axis
    assert lo > 1000.0, lo  # the body, not -15 µs
    texts = _said(ax)
    assert "below p3" in texts and "min -15.00 µs" in texts
    y = np.abs(x)  # a duration: its minimum is part of the picture
    assert "below p3" not in _said(plots.histogram(y, cut=97).axes[0])


def test_big_time_series_is_an_envelope_keeping_spikes() -> None:
    from matplotlib.collections import FillBetweenPolyCollection, PolyCollection

    n = 2_000_000
    x = np.full(n, 1000.0)
    x[1_234_567] = 1e6  # one spike among two million samples
    fig = plots.time_series(x, label="big")
    ax = fig.axes[0]
    polys = [
        c for c in ax.collections if isinstance(c, (PolyCollection, FillBetweenPolyCollection))
    ]
    assert polys, "expected a min-max envelope"
    top = max(float(np.max(p.get_paths()[0].vertices[:, 1])) for p in polys)
    assert top == pytest.approx(1e6 / 1e3)  # the spike survives decimation (in µs)
    assert all(len(line.get_xdata()) < 10_000 for line in ax.lines)


def test_save_refuses_unknown_suffix(tmp_path: Path) -> None:
    fig = plots.ecdf({"a": np.arange(1.0, 100.0)})
    with pytest.raises(BadInput, match="png, .svg or .pdf"):
        plots.save(fig, tmp_path / "x.gif")
    with pytest.raises(BadInput, match="does not exist"):
        plots.save(fig, tmp_path / "nope" / "x.png")


def test_bad_samples_are_refused() -> None:
    with pytest.raises(BadInput):
        plots.histogram(np.array([]))
    with pytest.raises(BadInput):
        plots.histogram(np.array([1.0, np.nan]))


@pytest.mark.parametrize("log_x", [False, True])
def test_histogram_of_quantised_samples_has_no_comb(log_x) -> None:
    """Samples on a 10.015 ns grid: every bin edge lies halfway between grid values, no bin in
    the body is empty, and the bars integrate to one like the fitted density."""
    from latscope.stats import fit_shifted_lognormal

    step = 10.015
    rng = np.random.default_rng(5)
    x = np.round((600.0 + rng.lognormal(np.log(60.0), 0.4, 50_000)) / step) * step
    fig = plots.histogram(x, fit=fit_shifted_lognormal(x), log_x=log_x, step=step)
    heights, edges, _ = fig.axes[0].patches[0].get_data()
    # the axis is in ns for these values
    frac = (edges - x.min()) / step % 1.0
    assert np.allclose(frac, 0.5, atol=1e-6)
    body = (edges[:-1] >= np.percentile(x, 1)) & (edges[1:] <= np.percentile(x, 99))
    assert body.sum() >= 5 and np.all(heights[body] > 0)
    if not log_x:
        widths = np.diff(edges)
        assert np.allclose(widths / step, np.round(widths / step))
        assert float(np.sum(heights * widths)) == pytest.approx(1.0)
        # the fitted density meets the bars near the median (not 4x below them)
        med = np.median(x)
        i = int(np.searchsorted(edges, med)) - 1
        line = fig.axes[0].lines[0]
        gx, gy = line.get_data()
        assert 0.6 < np.interp(med, gx, gy) / heights[i] < 1.6


# ------------------------------------------------------------------------------- readability


def _label_overlaps(fig: Figure, draw: bool = True) -> list[tuple[str, str, str]]:
    """Pairs of tick labels, major or minor, (axis, text, text) whose boxes overlap, after an
    Agg draw (``draw=False``: ``fig`` was just drawn at its own dpi, e.g. written as PNG)."""
    import itertools

    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    bad = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            tol = 1e-9 * max(abs(lo), abs(hi))
            ticks = axis.get_major_ticks()[: len(axis.get_majorticklocs())]
            ticks += axis.get_minor_ticks()[: len(axis.get_minorticklocs())]
            labels = [
                t.label1
                for t in ticks
                if lo - tol <= t.get_loc() <= hi + tol
                and t.label1.get_visible()
                and t.label1.get_text()
            ]
            boxes = [(lab.get_text(), lab.get_window_extent(renderer)) for lab in labels]
            for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
                if ba.overlaps(bb):
                    bad.append((axis.axis_name, a, b))
    return bad


def _log_axes(fig: Figure) -> list:
    return [
        axis
        for ax in fig.axes
        if ax.get_visible()
        for axis in (ax.xaxis, ax.yaxis)
        if axis.get_scale() == "log"
    ]


def test_tick_labels_never_overlap(drawn: Drawn) -> None:
    """Every figure kind, alone and as one of two panels in a figure the report's width: no
    two tick labels overlap, and the minor ticks of log axes carry no label."""
    kind, fig = drawn.kind, drawn.screen
    assert _label_overlaps(fig, draw=False) == [], kind
    for axis in _log_axes(fig):
        assert not any(lab.get_text() for lab in axis.get_minorticklabels()), kind
        shown = [lab.get_text() for lab in axis.get_majorticklabels() if lab.get_text()]
        assert len(shown) >= 2, (kind, shown)


def _texts(fig: Figure, draw: bool = True) -> list:
    from matplotlib.text import Text

    if draw:
        fig.canvas.draw()
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (t.axes is None or t.axes.get_visible())
    ]


@pytest.mark.filterwarnings("error::UserWarning")  # a layout that collapsed (also `drawn`)
def test_text_is_readable_on_screen_and_in_print(drawn: Drawn) -> None:
    """Every text of every figure is at least 9 pt, on screen (shown at its size) and drawn
    for print (at the width of a 10 pt article's text, where LaTeX places it); in print the
    panels of a row are stacked, no tick labels collide, and no legend lies over the axis
    label above it."""
    kind, screen, paper = drawn.kind, drawn.screen, drawn.paper
    assert paper.get_figwidth() == pytest.approx(plots.PRINT_WIDTH)
    assert len({round(ax.get_position().x0, 3) for ax in paper.axes if ax.get_visible()}) == 1
    assert _label_overlaps(paper, draw=False) == [], kind
    for fig in (screen, paper):
        small = {t.get_fontsize() for t in _texts(fig, draw=False)}
        small = sorted(size for size in small if size < plots.SMALL)
        assert small == [], (kind, small)
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None and ax.xaxis.label.get_text():
                assert not legend.get_window_extent(renderer).overlaps(
                    ax.xaxis.label.get_window_extent(renderer)
                ), kind
    assert not plots.common._PRINTED.get()  # the context is left as it was


def test_a_log_count_histogram_shows_every_sample_and_its_tail() -> None:
    """Log-x, log-count (cut at p100): the bars hold every sample (their counts sum to n), a
    single sample in the far tail is a bar of its own above the axis's floor, and a log count
    needs a log latency axis."""
    rng = np.random.default_rng(9)
    x = 1000.0 + rng.lognormal(np.log(500.0), 0.3, 20_000)
    x[7] = 400_000.0  # one sample 250x the median
    fig = plots.histogram(x, cut=100, log_x=True, log_count=True)
    ax = fig.axes[0]
    heights, edges, _ = ax.patches[0].get_data()
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    assert float(heights.sum()) == x.size
    assert heights[-1] == 1.0 and heights[-1] > ax.get_ylim()[0]
    assert "log count" in ax.get_title()
    with pytest.raises(BadInput, match="log_x"):
        plots.histogram(x, log_count=True)


# (a width of 10 was drawn too: two panels of 10 inches make a figure of 20, which new_figure
# narrows to MAX_WIDTH, so it drew the figure of width 5 again)
@pytest.mark.parametrize("span", [1.15, 1.6, 4.0, 40.0, 1e4, 1e7])
@pytest.mark.parametrize("width", [2.5, 5.0])
def test_log_axis_labels_fit_any_span_and_width(span: float, width: float) -> None:
    """Latencies spanning a factor of 1.15 to 10⁷ on log axes of panels 2.5 and 5 inches wide
    (the half panels of the report; a figure is at most `plots.MAX_WIDTH` wide): labels never
    overlap, at least two are shown on an axis of 3.5 inches or more, and they are plain
    numbers in the axis' unit, or whole powers of ten (never 2×10² or 3×10¹, which smear)."""
    rng = np.random.default_rng(2)
    x = 1000.0 * np.exp(rng.uniform(0.0, np.log(span), 4000))
    fig = plots.new_figure(ncols=2, size=(width * 2, 3.6))
    plots.ecdf({"a": x}, ax=fig.axes[0])
    plots.tail({"a": x}, ax=fig.axes[1])
    assert _label_overlaps(fig) == []
    for axis in _log_axes(fig):
        shown = [lab.get_text() for lab in axis.get_majorticklabels() if lab.get_text()]
        if width >= 3.5 or axis.axis_name == "y":
            assert len(shown) >= 2, (span, width, shown)
        for s in shown:
            assert "×" not in s, s
            assert s.replace(".", "").isdigit() or s.startswith("10") and "$" not in s, s


def test_log_tick_labels() -> None:
    from latscope.plots.ticks import tick_labels

    assert tick_labels([10.0, 20.0, 50.0, 100.0, 200.0]) == ["10", "20", "50", "100", "200"]
    assert tick_labels([0.001, 0.01, 0.1]) == ["0.001", "0.01", "0.1"]
    assert tick_labels([1e-4, 1e-2, 1.0]) == ["10⁻⁴", "10⁻²", "10⁰"]  # text, not mathtext
    assert tick_labels([1.0, 1.005, 1.01]) == ["1", "1.005", "1.01"]  # digits enough to differ
    assert tick_labels([0.30000000000000004, 3.0]) == ["0.3", "3"]


def _heavy_tail(n: int = 20_000, seed: int = 4) -> np.ndarray:
    """A narrow body near 15 µs (σ of log 0.05), 2% on a plateau near 300 µs and 0.1% of
    spikes up to 1 ms: on an axis from the minimum to the maximum the body is a spike."""
    rng = np.random.default_rng(seed)
    x = 15_000.0 * np.exp(0.05 * rng.standard_normal(n))
    k = rng.random(n)
    x[k < 0.02] = rng.normal(300_000.0, 20_000.0, int(np.sum(k < 0.02)))
    x[k < 0.001] = rng.uniform(400_000.0, 1_000_000.0, int(np.sum(k < 0.001)))
    return x


@pytest.mark.parametrize("step", [None, 10.0])
def test_log_histogram_shows_the_body_of_a_heavy_tail(step: float | None) -> None:
    """The body fills the axis: the bins holding 98% of the samples drawn are many, the
    central 90% of the samples span at least a third of the axis; every sample is drawn or
    counted in the figure's note, none dropped silently."""
    x = _heavy_tail()
    if step:
        x = np.round(x / step) * step
    fig = plots.histogram(x, log_x=True, step=step)
    ax = fig.axes[0]
    heights, edges, _ = ax.patches[0].get_data()
    unit = 1e3  # µs
    counts = np.rint(heights * np.diff(np.log10(edges)) * x.size).astype(np.int64)
    drawn = int(counts.sum())
    # the fewest bins that hold 98% of the drawn samples: not a spike of one or two
    top = np.sort(counts)[::-1]
    assert int(np.searchsorted(np.cumsum(top), 0.98 * drawn)) + 1 >= 15
    lo, hi = (np.log10(v) for v in ax.get_xlim())
    p5, p95 = np.log10(np.percentile(x / unit, [5, 95]))
    assert (p95 - p5) / (hi - lo) >= 1 / 3
    # the rest is counted: the note says how many lie beyond the axis, and the numbers add up
    note = _said(ax)
    beyond = x.size - drawn
    assert beyond > 0 and f"not shown: {beyond:,} samples" in note
    assert f"max {fmt(float(x.max()), ('µs', 1e3))}" in note
    if step:  # bins never narrower than the clock's step
        assert float(np.min(np.diff(edges))) * unit >= step * (1 - 1e-9)


def test_log_histogram_of_a_light_tail_shows_everything() -> None:
    """A log-normal without outliers: the whole range is drawn, nothing is left out."""
    x = np.random.default_rng(1).lognormal(np.log(5000.0), 0.4, 5000)
    fig = plots.histogram(x, log_x=True)
    heights, edges, _ = fig.axes[0].patches[0].get_data()
    counts = np.rint(heights * np.diff(np.log10(edges)) * x.size)
    assert int(counts.sum()) == x.size
    assert "not shown" not in _said(fig.axes[0])


def _many_scenarios(x: np.ndarray, runs: int = 9, cols: int = 4) -> list:
    names = [f"r00{i}-orwc-cold-{'fadvise' if i % 2 else 'drop'}-tmpfs" for i in range(runs)]
    return [
        plots.Series(name, f"col{c}", x * (1 + i) / (1 + c), (900.0 * (1 + i), 1500.0 * (1 + i)))
        for i, name in enumerate(names)
        for c in range(cols)
    ]


def test_many_scenarios_wrap_into_rows_of_bounded_width() -> None:
    """Nine scenarios with long names × four columns (the file benchmark of the seeds suite,
    3,480 px wide before): panels wrap into rows, the figure stays within 1,000 px at the
    report's 100 dpi and grows in height instead; its text stays at least 7 pt, and no tick
    labels overlap."""
    import matplotlib.image as mpimg

    x = _data(2000)
    fig = plots.scenarios(_many_scenarios(x), title="file")
    png = plots.to_bytes(fig, "png", dpi=100)
    import io

    img = mpimg.imread(io.BytesIO(png))
    h, w = img.shape[:2]
    assert w <= 1000 and 400 <= h <= 1000, (w, h)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4 and len({round(ax.get_position().x0, 3) for ax in visible}) == 2
    assert fig.dpi == 100 and _label_overlaps(fig, draw=False) == []  # drawn as the PNG, above
    for ax in visible:
        for lab in ax.get_yticklabels() + ax.get_xticklabels():
            assert lab.get_fontsize() >= 7


def _laid_out_by_matplotlib(fig: Figure) -> Figure:
    """``fig`` (not drawn yet) as matplotlib lays it out: its own Figure with the constrained
    layout engine, laid out in a draw of its own before it is written."""
    fig.__class__ = Figure
    fig.set_layout_engine("constrained")
    return fig


def test_a_figure_laid_out_in_its_draw_is_the_one_matplotlib_lays_out() -> None:
    """Figures are laid out in the draw that renders them (`common.LaidOutFigure`: savefig's
    draw with nothing drawn is spared): the same PNG as matplotlib's own constrained layout
    gives, for a panel with a legend below it and for panels in rows under a title and a
    legend of the figure's."""
    x = _data(2000)
    makers = (
        lambda: plots.histogram(x, label="x", log_x=True, cut=97),
        lambda: plots.scenarios(_many_scenarios(x, runs=1, cols=3), title="file"),  # 2 rows
    )
    for make in makers:
        fig = make()
        assert isinstance(fig, plots.common.LaidOutFigure)
        assert fig.get_layout_engine() is None  # savefig draws it once
        assert plots.to_bytes(fig) == plots.to_bytes(_laid_out_by_matplotlib(make()))


def test_scenario_intervals_stay_inside_the_axes() -> None:
    """Intervals far wider than the samples (three repetitions that disagree), or with no upper
    end: every interval, whisker and the body of the samples (p0.1 to p99.9) lies inside its
    panel's limits."""
    rng = np.random.default_rng(3)
    a = rng.lognormal(np.log(40_000.0), 0.2, 3000)
    b = rng.lognormal(np.log(80_000.0), 0.2, 3000)
    series = [
        plots.Series("zmq-threads", "oneway", a, (5_000.0, 2_000_000.0)),
        plots.Series("zmq-processes", "oneway", a * 1.2, (30_000.0, float("inf"))),
        plots.Series("zmq-threads", "rtt", b, (70_000.0, 9_000_000.0)),
        plots.Series("zmq-processes", "rtt", b * 1.2, None),
    ]
    fig = plots.scenarios(series, title="zmq_tcp")
    fig.canvas.draw()
    for ax, col in zip(fig.axes, ("oneway", "rtt"), strict=True):
        lo, hi = ax.get_xlim()
        for s in series:
            if s.column != col:
                continue
            ends = [float(q) for q in np.quantile(s.values, (0.001, 0.999))]
            if s.median_ci:
                ends += [e for e in s.median_ci if np.isfinite(e)]
            for e in ends:
                assert lo < e / 1e3 < hi, (col, s.run, e, (lo, hi))
        for line in ax.lines:
            xs = np.asarray(line.get_xdata(), dtype=float)
            assert np.all((xs >= lo) & (xs <= hi)), col


def test_a_scenario_panel_holds_the_body_and_counts_what_lies_beyond() -> None:
    """6.65 µs against 8.2 µs with one sample of 20 ms each (a box plot once spanned 1 to
    20,000 µs for them): the axis ends near the body, not at 20 ms, and the samples beyond
    are counted at the edge of their row with the largest."""
    rng = np.random.default_rng(4)
    a = rng.lognormal(np.log(6650.0), 0.05, 5000)
    b = rng.lognormal(np.log(8200.0), 0.05, 5000)
    a[100] = b[200] = 20_000_000.0
    series = [plots.Series("A", "rtt", a, (6600.0, 6700.0)), plots.Series("B", "rtt", b, None)]
    fig = plots.scenarios(series, title="pipe")
    fig.canvas.draw()
    (ax,) = [x for x in fig.axes if x.get_visible()]
    lo, hi = ax.get_xlim()
    assert hi < 20.0 and lo > 4.0, (lo, hi)  # µs: the body, 5.5 to 9.5 µs or so
    assert ax.get_xscale() == "linear"  # a body within a factor of 8
    said = [t.get_text() for t in ax.texts]
    beyond = [t for t in said if t.endswith(" beyond → max 20000 µs")]
    assert len(beyond) == 2, said  # one per row, each with its largest sample
    n_out = sum(int(t.split()[0].replace(",", "")) for t in beyond)
    assert n_out == int(np.sum(a > hi * 1e3) + np.sum(b > hi * 1e3))


def test_every_kind_decodes_within_size_bounds(drawn: Drawn) -> None:
    """Each figure as the HTML report embeds it (PNG, 100 dpi): at most 1,000 px wide (the
    report's page is 1,180 px), and neither a thin strip nor taller than wide."""
    import io

    import matplotlib.image as mpimg

    kind = drawn.kind
    img = mpimg.imread(io.BytesIO(drawn.png))
    h, w = img.shape[:2]
    assert 300 <= w <= 1000, (kind, w, h)
    assert 0.2 <= h / w <= 1.0, (kind, w, h)


def test_plot_hist_is_cut_at_p97_unless_told(store: Path, tmp_path: Path, monkeypatch) -> None:
    """Without --cut, one slow sample stretched the axis to the maximum and the body became one
    bar: the linear histogram is cut where the report cuts it, --cut 100 draws everything, and
    the log axis needs no cut."""
    import numpy as np

    from latscope.cli import main
    from synth import lognormal, make_run

    x = lognormal(2000, 2000.0, seed=5)
    x[7] = 44_000_000.0
    run = make_run(store, {"call": x})
    seen: list[float | None] = []
    real = plots.histogram

    def spy(*a, **k):  # noqa: ANN002, ANN003, ANN202
        seen.append(k.get("cut"))
        return real(*a, **k)

    monkeypatch.setattr(plots, "histogram", spy)
    base = ["plot", run.id, "--kind", "hist", "--store", str(store), "--force"]
    for extra in ([], ["--cut", "100"], ["--log"]):
        assert main([*base, *extra, "-o", str(tmp_path / "h.png")]) == 0
    assert seen == [plots.HIST_CUT, 100.0, None]
    assert np.isfinite(plots.HIST_CUT) and 90 <= plots.HIST_CUT < 100


def test_a_log_histogram_cut_at_p100_holds_every_sample() -> None:
    """--cut 100 means every sample, on a log axis too (its tail is why one draws it): the
    bars hold all of them and nothing is said to be left out."""
    rng = np.random.default_rng(9)
    x = rng.lognormal(np.log(5000.0), 0.2, 20_000)
    x[::50] *= 60.0  # a tail two decades out, 2% of the samples
    fig = plots.histogram(x, log_x=True, cut=100.0)
    heights, edges, _ = fig.axes[0].patches[0].get_data()
    counts = np.rint(heights * np.diff(np.log10(edges)) * x.size)
    assert int(counts.sum()) == x.size
    assert "not shown" not in _said(fig.axes[0])


def test_dollar_signs_are_text_not_mathtext(tmp_path: Path) -> None:
    """A column, scenario or run named with dollar signs (``$x_$_us``, which mathtext cannot
    parse) is drawn as written, in every format."""
    from matplotlib.text import Text

    rng = np.random.default_rng(3)
    x = 1000.0 + rng.lognormal(6.0, 0.5, 2000)
    nasty = "$x_$_us"
    figs = [
        plots.histogram(x, label=nasty),
        plots.box({nasty: x, "$a$": x * 2}, title=nasty),
        plots.scenarios([plots.Series(nasty, "$c_$", x), plots.Series("b", "$c_$", x * 1.1)]),
        plots.ecdf({nasty: x}, title=nasty),
    ]
    for k, fig in enumerate(figs):
        assert plots.to_bytes(fig).startswith(b"\x89PNG")
        plots.save(fig, tmp_path / f"f{k}.svg")
        shown = [t.get_text() for t in fig.findobj(Text)]
        assert any(nasty in s for s in shown)
        assert all(not t.get_parse_math() for t in fig.findobj(Text))


def test_a_poor_fit_is_drawn_dashed_and_said_to_be_poor() -> None:
    """Three modes, one shifted log-normal: the fit is poor (KS D above 0.05), so its curve is
    dashed and its label says it describes nothing; a log-normal sample's fit stays solid."""
    from latscope.stats import fit_shifted_lognormal

    rng = np.random.default_rng(3)
    modes = np.concatenate(
        [rng.normal(2850, 40, 7100), rng.normal(3230, 40, 900), rng.normal(4270, 120, 2000)]
    )
    one = 2600 + rng.lognormal(np.log(400), 0.4, 10_000)
    for x, poor in ((modes, True), (one, False)):
        fit = fit_shifted_lognormal(x)
        assert fit is not None and (fit.fit_quality == "poor") is poor, fit.ks_statistic
        for log_x in (False, True):
            fig = plots.histogram(x, fit=fit, cut=97, log_x=log_x)
            (line,) = [ln for ln in fig.axes[0].get_lines() if "log-normal" in ln.get_label()]
            assert (line.get_linestyle() == "--") is poor
            assert ("a poor fit" in line.get_label()) is poor
