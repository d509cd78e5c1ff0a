"""Between-run variation: a run measured in several worker processes (segments).

A run of latscope is, by default, several probe worker processes one after another (the
probe's ``--workers``); the sample file records how many samples each worker contributed
(``header.workers[i].n``, in order). One process is one draw from the machine: its placement,
its physical pages, the host's neighbours at that moment. The variation *between* workers is
usually larger than the sampling noise *within* one, so the headline interval of a run's median
is computed from the workers' medians, not from the pooled samples.

``median_over_runs`` gives the interval for the median of a run with ``R >= 2`` segments: a
Student t interval with ``R - 1`` degrees of freedom on the logarithms of the segment medians
(run-to-run differences are multiplicative), transformed back, and never narrower than the
pooled samples' own interval (``floor``). It is an interval for the typical (geometric-mean)
segment median, which is the figure a second run of the same command reproduces.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import Result, as_float_array

#: Fewer segments than this: no between-run interval (the run is labelled a single run).
MIN_SEGMENTS = 2


@dataclasses.dataclass(frozen=True)
class SegmentMedians(Result):
    """The median of each segment (worker process) of a run, in order."""

    medians: tuple[float, ...]
    sizes: tuple[int, ...]

    @property
    def r(self) -> int:
        return len(self.medians)


def split(x: npt.ArrayLike, segments: Sequence[int] | None) -> list[np.ndarray]:
    """The samples of each segment; the whole array as one segment when ``segments`` is
    None or does not add up to ``len(x)``."""
    a = as_float_array(x, "x")
    if not segments or sum(segments) != a.size or any(s <= 0 for s in segments):
        return [a]
    edges = np.cumsum([0, *segments])
    return [a[edges[i] : edges[i + 1]] for i in range(len(segments))]


def segment_medians(x: npt.ArrayLike, segments: Sequence[int] | None) -> SegmentMedians:
    parts = split(x, segments)
    return SegmentMedians(
        tuple(float(np.median(p)) for p in parts), tuple(int(p.size) for p in parts)
    )


def median_over_runs(
    x: npt.ArrayLike,
    segments: Sequence[int] | None,
    level: float = 0.95,
    floor: tuple[float, float] | None = None,
) -> tuple[float, float, str] | None:
    """(low, high, method) of the run's median including between-segment variation, or None
    with fewer than ``MIN_SEGMENTS`` segments. ``floor`` (low, high), the pooled samples'
    interval, bounds the result from inside: it is never narrower than that."""
    sm = segment_medians(x, segments)
    r = sm.r
    if r < MIN_SEGMENTS:
        return None
    med = np.asarray(sm.medians)
    tq = float(stats.t.ppf(0.5 + level / 2.0, r - 1))
    if (med > 0).all():
        logs = np.log(med)
        m, h = float(logs.mean()), tq * float(logs.std(ddof=1)) / math.sqrt(r)
        low, high = math.exp(m - h), math.exp(m + h)
        method = f"between runs: t interval over {r} worker medians (log scale, {r - 1} df)"
    else:
        m, h = float(med.mean()), tq * float(med.std(ddof=1)) / math.sqrt(r)
        low, high = m - h, m + h
        method = f"between runs: t interval over {r} worker medians ({r - 1} df)"
    if floor is not None and floor[0] is not None and floor[1] is not None:
        low, high = min(low, floor[0]), max(high, floor[1])
    return low, high, method


def typical_median(x: npt.ArrayLike, segments: Sequence[int] | None) -> float:
    """A run's typical process median: the geometric mean of its segment medians (with at
    least ``MIN_SEGMENTS`` positive ones), else the median of all samples. It is the centre of
    ``median_over_runs`` and the statistic ``compare`` forms ratios of."""
    sm = segment_medians(x, segments)
    med = np.asarray(sm.medians)
    if sm.r >= MIN_SEGMENTS and (med > 0).all():
        return float(np.exp(np.log(med).mean()))
    return float(np.median(as_float_array(x, "x")))
