"""Figures of a big column without copies of it: a histogram of every sample, a time series
and the box plots of a run's columns hold at most one column besides the one given (a run of
10^8 samples: 0.8 GB a column). What they draw is unchanged (the report's bytes: tested with
the report)."""

from __future__ import annotations

import tracemalloc
import weakref
from collections.abc import Callable, Iterator, Mapping

import matplotlib.pyplot as plt
import numpy as np

from latscope import plots

N = 400_000


def _column(seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 1000.0 + np.exp(rng.normal(7.0, 0.4, N))
    x[::5000] *= 30.0
    return x


def _extra(draw: Callable[[], object]) -> float:
    """The most memory ``draw`` took beyond what was in use, in columns of N float64."""
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        fig = draw()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    plt.close(fig)  # type: ignore[arg-type]
    return (peak - base) / (8 * N)


def test_a_histogram_of_every_sample_copies_no_column() -> None:
    """Every sample kept (cut at p100, positive, all in range): no selection is copied; what
    remains is the transient of a percentile and the logarithms the bins are chosen from."""
    x = _column()
    assert _extra(lambda: plots.histogram(x, cut=100.0, log_x=True, log_count=True)) < 2.6


def test_a_time_series_makes_no_array_of_every_sample() -> None:
    """The times since the first and the latencies in the display unit are taken where
    drawn (the envelope's columns, the spikes, the windows), not made for every sample."""
    x = _column()
    t = np.cumsum(x) * 1e-9 + 5.0
    plt.close(plots.time_series(x[:1000]))  # the first figure's imports and caches: not x's
    assert _extra(lambda: plots.time_series(x, t=t, spikes=np.arange(0, N, 5000))) < 1.6
    assert _extra(lambda: plots.time_series(x)) < 1.6


class _OneAtATime(Mapping[str, np.ndarray]):
    """Columns read when asked for, each a new array; asking for one while an array given
    before is still alive is an error."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns
        self.given: list[weakref.ref[np.ndarray]] = []

    def __getitem__(self, name: str) -> np.ndarray:
        alive = [r for r in self.given if r() is not None]
        assert not alive, f"{name} asked for while another column is held"
        a = self.columns[name].copy()
        self.given.append(weakref.ref(a))
        return a

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)


def test_box_plots_hold_one_column_at_a_time() -> None:
    cols = {"rtt": _column(3), "oneway": _column(4) / 2.0, "rtt/2": _column(3) / 2.0}
    for violin in (False, True):
        lazy = _OneAtATime(cols)
        got = plots.box(lazy, violin=violin)
        assert len(lazy.given) == len(cols)  # each read once: its box, and the unit after
        want = plots.box(cols, violin=violin)
        assert plots.to_bytes(got, "png", dpi=60) == plots.to_bytes(want, "png", dpi=60)
        plt.close(got)
        plt.close(want)
