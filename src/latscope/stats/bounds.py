"""Intervals that respect the data: what ``intervals.confidence_intervals`` does after its
methods, so that no interval claims what the samples make impossible.

- A quantile's interval holds its estimate and stays within ``data_range``: the smallest to the
  largest sample, half a clock step further either side when the clock is quantised (a reading
  stands for its step), and never below 0 when no sample is negative (a duration). A Woodruff
  interval whose ``p + t se`` exceeds 1 ends at the largest sample, and its method says that
  the run does not bound it from above.
- The intervals of the median and the upper percentiles are monotone in the percentile: the
  lower bounds by a running maximum from the median up, the upper bounds by a running minimum
  from p99.9 down (an isotonic adjustment). If every interval covers its true quantile
  ``xi_i``, the adjusted ones do too (``xi_i <= xi_j <= high_j`` and ``low_i <= xi_i <= xi_j``
  for ``i < j``), so the chance that all of them hold is unchanged, each interval can only
  shrink, and none becomes empty (the estimates are monotone and inside). Without it a run
  showed p90's interval up to its maximum (24.6 ms) next to p95's of 2.89-4.06 us: the batch
  shares of each percentile vary on their own. A joint bootstrap of the percentiles would
  order them too, but would give up the exact order-statistic intervals and the batches that
  keep regime data honest (``intervals.py``, "Why batches").
- The mean is never below what the data make impossible: for a duration, ``mean = integral
  of Q(u) du >= sum_i (p_{i+1} - p_i) low_i`` over the quantiles with an interval
  (``p_{K+1} = 1``, and ``Q >= 0`` below the median), e.g. at least half the median's lower
  bound; so at least 0. The t interval of batch means is symmetric, and a few stalls (24.6 ms
  in a 3 us call) made it reach far below zero (-7.9 to 27.4 us). The bound ignores the lower
  half of the distribution and does not bind on ordinary data; the clock's read cost is not
  known here and is not used.

The functions take and return ``intervals.Interval`` objects (any frozen dataclass with
``estimate``, ``low``, ``high`` and ``method``), keyed by name, with ``names`` the (name,
probability) pairs of the quantiles.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Protocol, TypeVar

from ._common import Prepared


class Bounded(Protocol):
    """What these functions read of an interval."""

    @property
    def estimate(self) -> float: ...
    @property
    def low(self) -> float | None: ...
    @property
    def high(self) -> float | None: ...
    @property
    def method(self) -> str: ...


IV = TypeVar("IV", bound=Bounded)


def _replace(iv: IV, **changes: Any) -> IV:
    out: IV = dataclasses.replace(iv, **changes)  # type: ignore[type-var]
    return out


def data_range(prep: Prepared) -> tuple[float, float]:
    """The values the samples speak for: ``[min, max]``; with a clock step, each reading stands
    for its step, so half a step either side (never below 0 for durations, as in
    ``_common.grouped_position``)."""
    xs = prep.sorted
    lo, hi = float(xs[0]), float(xs[-1])
    if prep.step is None:
        return lo, hi
    half = 0.5 * prep.step
    return (max(lo - half, 0.0) if lo >= 0.0 else lo - half), hi + half


def respect_the_data(
    prep: Prepared, results: dict[str, IV], names: tuple[tuple[str, float], ...]
) -> dict[str, IV]:
    """Quantile intervals that the data allow (see the module docstring): each contains its
    estimate, stays within ``data_range``, and the intervals are monotone in the probability
    (lower bounds by a running maximum from the lowest probability up, upper bounds by a
    running minimum from the highest down)."""
    lo_r, hi_r = data_range(prep)
    out = dict(results)
    order = [nm for nm, _ in sorted(names, key=lambda np_: np_[1])]
    have = [nm for nm in order if out[nm].low is not None and out[nm].high is not None]
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    for nm in have:
        iv = out[nm]
        assert iv.low is not None and iv.high is not None
        lows[nm] = min(max(min(iv.low, iv.estimate), lo_r), hi_r)
        highs[nm] = max(min(max(iv.high, iv.estimate), hi_r), lo_r)
    run = -math.inf
    for nm in have:
        run = max(run, lows[nm])
        lows[nm] = run
    run = math.inf
    for nm in reversed(have):
        run = min(run, highs[nm])
        highs[nm] = run
    for nm in have:
        iv = out[nm]
        if (lows[nm], highs[nm]) == (iv.low, iv.high) and highs[nm] < hi_r:
            continue
        method = iv.method
        if highs[nm] >= hi_r and lows[nm] < hi_r and iv.method.startswith("batch"):
            method += "; reaches the largest sample: the run does not bound it from above"
        out[nm] = _replace(iv, low=lows[nm], high=highs[nm], method=method)
    return out


def mean_floor(
    prep: Prepared,
    mean_iv: IV,
    results: dict[str, IV],
    names: tuple[tuple[str, float], ...],
) -> IV:
    """A duration's mean is never below what its quantiles' lower bounds imply: for data that
    cannot be negative, ``mean = integral of Q(u) du >= sum_i (p_{i+1} - p_i) low_i`` over the
    quantiles with an interval (``p_{K+1} = 1``; below the lowest, ``Q >= 0``); at least 0.
    The interval also holds its estimate (a constant column's resamples can round below it)."""
    if mean_iv.low is None or mean_iv.high is None:
        return mean_iv
    if not mean_iv.low <= mean_iv.estimate <= mean_iv.high:  # rounding: a constant column
        mean_iv = _replace(
            mean_iv,
            low=min(mean_iv.low, mean_iv.estimate),
            high=max(mean_iv.high, mean_iv.estimate),
        )
    if prep.sorted[0] < 0.0:
        return mean_iv
    pts = sorted((p, results[nm].low) for nm, p in names if results[nm].low is not None)
    floor = 0.0
    for i, (p, low) in enumerate(pts):
        assert low is not None
        floor += ((pts[i + 1][0] if i + 1 < len(pts) else 1.0) - p) * max(low, 0.0)
    floor = min(floor, mean_iv.estimate)
    if mean_iv.low >= floor:
        return mean_iv
    what = "0 (a duration)" if floor == 0.0 else f"{floor:.4g} ns"
    return _replace(
        mean_iv,
        low=floor,
        method=mean_iv.method + f"; lower end raised to {what}, the least mean that the "
        "quantiles' lower bounds allow",
    )
