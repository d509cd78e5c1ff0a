"""A column's samples sorted once, for every figure of its distribution.

A histogram, an ECDF, a tail plot or a box of 10^8 samples made a dozen passes over the whole
column each (a copy and a partition for every percentile, masks and copies for what is shown,
a logarithm of every sample): about 2 s a figure at 10^7 samples, 20 s at 10^8. None of
these figures needs the iteration order, so the report sorts a column once
(`sorted_samples`) and hands the sorted copy to each: a percentile is then two elements and an
interpolation, a count or a range a binary search, a histogram a binary search per bin edge.

Each operation gives exactly what the whole-array one gives (`percentile` numpy's default
"linear" method, to the last bit; `counts` `numpy.histogram`'s bins, the last one closed), so
a figure drawn from the sorted copy is the figure drawn from the samples (tested), but for two
things that do not change what it shows: a violin's KDE is made from evenly spaced order
statistics instead of a random draw, and a box's mean is summed in another order. Arrays that
are not a `SortedSamples` take the whole-array path, as before."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import BadInput


@dataclass(frozen=True)
class SortedSamples:
    """Samples in ns (float64, finite), sorted ascending (`sorted_samples`)."""

    values: np.ndarray

    @property
    def size(self) -> int:
        return int(self.values.size)


def _ns(x: npt.ArrayLike) -> np.ndarray:
    """Samples as a flat float64 array; BadInput (one line) for none, NaN or inf."""
    a = np.asarray(x, dtype=np.float64).ravel()
    if a.size == 0:
        raise BadInput("nothing to plot: no samples")
    if not np.isfinite(a).all():
        raise BadInput("cannot plot non-finite samples (NaN or inf)")
    return a


def sorted_samples(x: npt.ArrayLike) -> SortedSamples:
    """``x`` (ns) sorted once, for the figures of its distribution (module docs)."""
    return SortedSamples(np.sort(_ns(x)))


def samples(x: npt.ArrayLike | SortedSamples) -> tuple[np.ndarray, bool]:
    """The samples as float64 ns, and whether they are sorted (a `SortedSamples`)."""
    if isinstance(x, SortedSamples):
        if x.values.size == 0:
            raise BadInput("nothing to plot: no samples")
        return x.values, True
    return _ns(x), False


Transform = Callable[[np.ndarray], np.ndarray]


def percentile(v: np.ndarray, q: Any, srt: bool, f: Transform | None = None) -> Any:
    """``np.percentile(f(v), q)`` (f: a non-decreasing function such as log10 of positive
    samples, or none); from two elements per percentile when ``v`` is sorted, the same value
    to the last bit (numpy's "linear" method: its virtual index, neighbours and
    interpolation)."""
    if not srt:
        return np.percentile(f(v) if f is not None else v, q)
    n = v.size
    scalar = np.ndim(q) == 0
    virtual = (n - 1) * np.true_divide(np.atleast_1d(np.asarray(q, dtype=np.float64)), 100)
    # the neighbours numpy takes: both the last element from n - 1 on (both the first below 0)
    prev = np.clip(np.floor(virtual), 0, n - 1)
    nxt = np.clip(prev + 1, 0, n - 1)
    prev[virtual >= n - 1] = n - 1
    gamma = virtual - np.floor(virtual)  # (its neighbours equal where it was clipped)
    a, b = v[prev.astype(np.intp)], v[nxt.astype(np.intp)]
    if f is not None:
        a, b = f(a), f(b)
    diff = b - a
    out = np.add(a, diff * gamma)
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out[0] if scalar else out


def median(v: np.ndarray, srt: bool) -> float:
    """``np.median(v)``: the middle element, or the mean of the middle two."""
    if not srt:
        return float(np.median(v))
    n = v.size
    m = n // 2
    return float(v[m]) if n % 2 else float(np.mean(v[m - 1 : m + 1]))


def lowest(v: np.ndarray, srt: bool) -> float:
    return float(v[0] if srt else v.min())


def highest(v: np.ndarray, srt: bool) -> float:
    return float(v[-1] if srt else v.max())


def above(v: np.ndarray, x: float, srt: bool) -> int:
    """How many samples are greater than ``x``."""
    if not srt:
        return int(np.count_nonzero(v > x))
    return int(v.size - np.searchsorted(v, x, side="right"))


def below(v: np.ndarray, x: float, srt: bool) -> int:
    """How many samples are less than ``x``."""
    if not srt:
        return int(np.count_nonzero(v < x))
    return int(np.searchsorted(v, x, side="left"))


def within(v: np.ndarray, lo: float, hi: float, srt: bool) -> np.ndarray:
    """The samples in [lo, hi], in their order (sorted: a view, no copy)."""
    if not srt:
        keep = (v >= lo) & (v <= hi)
        return v if keep.all() else v[keep]  # every sample: no copy of a column of 10^8
    return v[np.searchsorted(v, lo, side="left") : np.searchsorted(v, hi, side="right")]


def positive(v: np.ndarray, srt: bool) -> np.ndarray:
    """The samples above 0, in their order (sorted, or all of them: no copy)."""
    if srt:
        return v[np.searchsorted(v, 0.0, side="right") :]
    keep = v > 0
    return v if keep.all() else v[keep]


def outside(v: np.ndarray, lo: float, hi: float, srt: bool) -> np.ndarray:
    """The samples below ``lo`` or above ``hi``, in their order."""
    if not srt:
        return v[(v < lo) | (v > hi)]
    a, b = np.searchsorted(v, lo, side="left"), np.searchsorted(v, hi, side="right")
    return np.concatenate([v[:a], v[b:]])


def counts(v: np.ndarray, edges: np.ndarray, srt: bool) -> np.ndarray:
    """``np.histogram(v, bins=edges)[0]``: samples in [e_i, e_i+1), the last bin closed."""
    if not srt:
        return np.histogram(v, bins=edges)[0]
    e = np.asarray(edges, dtype=np.float64)
    cum = np.concatenate(
        [np.searchsorted(v, e[:-1], side="left"), np.searchsorted(v, e[-1:], side="right")]
    )
    return np.diff(cum).astype(np.intp)


def uniform_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """The edges `numpy.histogram` makes for ``bins`` equal bins over (lo, hi)."""
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, bins + 1, endpoint=True, dtype=np.float64)
