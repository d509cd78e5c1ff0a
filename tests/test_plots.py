"""Figures: every kind written as PNG, SVG and PDF from synthetic data; units on the axes; no
pyplot state left behind; big series drawn as an envelope that keeps the spikes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from latscope import plots
from latscope.errors import BadInput
from latscope.stats import analyze_column, compare

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
    # units on every latency axis, a title on every visible plot
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        assert ax.get_xlabel() and ax.get_ylabel(), (kind, ax.get_title())
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


def test_histogram_cut_says_what_is_not_shown(analysed) -> None:
    x, _, _ = analysed
    fig = plots.histogram(x, cut=97)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    beyond = int(np.count_nonzero(x > np.percentile(x, 97)))
    assert f"{beyond:,} samples" in texts and "p97" in texts


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
