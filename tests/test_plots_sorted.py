"""The figures of a distribution drawn from a column sorted once (plots.sorted) are the figures
drawn from the samples: the same bars, edges, notes, whiskers, fliers and curves; and the
sorted operations give numpy's values to the last bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.patches import StepPatch

from latscope import plots
from latscope.plots import sorted as srt_


def _data(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "lognormal":
        x = 200.0 + rng.lognormal(np.log(1000.0), 0.5, n)
        x[rng.random(n) < 0.01] *= 40.0  # a tail
        return x
    if kind == "quantised":  # a 30 ns clock: ties, whole steps
        return np.round((500.0 + rng.lognormal(np.log(300.0), 0.4, n)) / 30.0) * 30.0
    if kind == "negative":  # a difference of two timings (ctx's switch)
        x = rng.normal(2000.0, 300.0, n)
        x[:: max(1, n // 50)] = -100.0
        return x
    if kind == "few":
        return rng.lognormal(3.0, 1.0, n)[:7]
    raise AssertionError(kind)


def _histogram_of(fig: Any) -> list[Any]:
    out: list[Any] = []
    for ax in fig.axes:
        for p in ax.patches:
            if isinstance(p, StepPatch):
                values, edges, _ = p.get_data()
                out += [np.asarray(values).tolist(), np.asarray(edges).tolist()]
        leg = ax.get_legend()
        out.append([t.get_text() for t in leg.get_texts()] if leg else [])
        out += [ax.get_xlim(), ax.get_ylim(), ax.get_xlabel(), ax.get_title()]
        out += [ln.get_xydata().tolist() for ln in ax.get_lines()]
    return out


CASES = [
    ("lognormal", {"cut": 97.0}),
    ("lognormal", {"log_x": True}),
    ("lognormal", {"cut": 100.0, "log_x": True, "log_count": True}),
    ("lognormal", {"cut": 97.0, "bins": 40}),
    ("quantised", {"cut": 97.0, "step": 30.0}),
    ("quantised", {"log_x": True, "step": 30.0}),
    ("quantised", {"cut": 100.0, "log_x": True, "log_count": True, "step": 30.0}),
    ("negative", {"cut": 97.0}),
    ("few", {"cut": 97.0}),
    ("few", {"log_x": True}),
]


@pytest.mark.parametrize(("kind", "kw"), CASES)
def test_a_histogram_from_the_sorted_column_is_the_histogram_of_the_samples(
    kind: str, kw: dict[str, Any]
) -> None:
    x = _data(kind, 20_000, seed=len(kind))
    want = _histogram_of(plots.histogram(x, label="c", **kw))
    got = _histogram_of(plots.histogram(plots.sorted_samples(x), label="c", **kw))
    assert got == want


def _box_of(fig: Any) -> list[Any]:
    out: list[Any] = []
    for ax in fig.axes:
        for ln in ax.get_lines():
            xy = ln.get_xydata()
            if ln.get_marker() == ".":  # the fliers: the same points, drawn in another order
                out.append(sorted(map(tuple, xy.tolist())))
            elif ln.get_marker() != "D":  # (the mean: summed in another order)
                out.append(xy.tolist())
        out += [ax.get_ylim(), ax.get_ylabel()]
    return out


@pytest.mark.parametrize("kind", ["lognormal", "quantised", "negative"])
def test_a_box_from_sorted_columns_is_the_box_of_the_samples(kind: str) -> None:
    cols = {"a": _data(kind, 30_000, 1), "b": 1.5 * _data(kind, 5_000, 2)}
    want = _box_of(plots.box(cols))
    got = _box_of(plots.box({k: plots.sorted_samples(v) for k, v in cols.items()}))
    assert got == want


def test_a_violin_from_a_sorted_column_shows_the_same_quartiles_and_span() -> None:
    x = _data("lognormal", 50_000, 3)
    figs = [plots.box({"a": v}, violin=True) for v in (x, plots.sorted_samples(x))]
    marks = [
        [c.get_offsets().tolist() for c in f.axes[0].collections if isinstance(c, PathCollection)]
        for f in figs
    ]
    assert marks[0] == marks[1]  # the median's mark
    spans = [f.axes[0].get_ylim() for f in figs]
    assert spans[0] == pytest.approx(spans[1], rel=0.05)


@pytest.mark.parametrize("which", ["ecdf", "tail"])
def test_curves_from_sorted_columns_are_the_curves_of_the_samples(which: str) -> None:
    cols = {"a": _data("lognormal", 20_000, 4), "b": _data("quantised", 3_000, 5)}
    draw = getattr(plots, which)
    want = [ln.get_xydata().tolist() for ln in draw(cols).axes[0].get_lines()]
    got = draw({k: plots.sorted_samples(v) for k, v in cols.items()})
    assert [ln.get_xydata().tolist() for ln in got.axes[0].get_lines()] == want


def test_the_sorted_operations_give_numpys_values_to_the_last_bit() -> None:
    rng = np.random.default_rng(7)
    qs = [0.0, 0.1, 1.0, 5.0, 25.0, 33.333, 50.0, 50.5, 75.0, 97.0, 99.9, 100.0]
    for t in range(400):
        n = int(rng.integers(1, 2_000))
        x = [
            rng.lognormal(3.0, 1.0, n),
            np.round(rng.lognormal(3.0, 1.0, n) * 3.0) / 3.0,
            rng.integers(0, 5, n).astype(np.float64),
            rng.normal(0.0, 1.0, n),
        ][t % 4]
        s = np.sort(x)
        assert np.array_equal(srt_.percentile(s, qs, True), np.percentile(x, qs))
        assert all(srt_.percentile(s, q, True) == np.percentile(x, q) for q in qs[::3])
        if t % 4 != 3:
            p = x[x > 0]
            if p.size:
                got = srt_.percentile(np.sort(p), qs, True, np.log10)
                assert np.array_equal(got, np.percentile(np.log10(p), qs))
        assert srt_.median(s, True) == np.median(x)
        hi = float(s[-1]) if s[-1] > s[0] else float(s[0]) + 1.0
        nb = int(rng.integers(1, 60))
        edges = srt_.uniform_edges(float(s[0]), hi, nb)
        counts, want_edges = np.histogram(x, bins=nb, range=(float(s[0]), hi))
        assert np.array_equal(edges, want_edges)
        assert np.array_equal(srt_.counts(s, edges, True), counts)
        cut = float(np.percentile(x, 60.0))
        assert srt_.above(s, cut, True) == np.count_nonzero(x > cut)
        assert srt_.below(s, cut, True) == np.count_nonzero(x < cut)
        assert np.array_equal(srt_.within(s, cut, hi, True), np.sort(x[(x >= cut) & (x <= hi)]))
