"""Outliers and spikes: classified and located, never dropped.

Tukey fences. With quartiles ``Q1``, ``Q3`` (numpy "linear") and ``IQR = Q3 - Q1``: *mild*
outliers lie between the inner fence (``Q1 - 1.5 IQR`` / ``Q3 + 1.5 IQR``) and the outer fence
(``Q1 - 3 IQR`` / ``Q3 + 3 IQR``), *extreme* ones beyond the outer fence; the classes do not
overlap (like criterion.rs' mild/severe). Counted for the low and the high side. Latency
distributions are right-skewed, so "high mild" outliers are expected in healthy data: they are
reported, not warned about.

Spikes. A sample is a spike when it lies above its window's threshold

    ``thr = max(median + k * scale, SPIKE_MIN_RATIO * median, median + SPIKE_MIN_STEPS * step)``

with ``k = SPIKE_K = 5``, ``scale = max(1.4826 MAD, step)``, ``SPIKE_MIN_RATIO = 2``,
``SPIKE_MIN_STEPS = 10`` and ``step`` the clock step (``Prepared.step``; the step terms drop
out when it is unknown), where the median and the MAD are *local*: those of the window the
sample lies in. 1.4826 MAD estimates the standard deviation of the body of the distribution
without being inflated by the spikes themselves, and ``k = 5`` puts the threshold where a
normal body would exceed it once in 3.5 million samples. The floors make a spike a sample that
is slow in a way a user would care about: at least twice the typical time, and at least ten
clock steps more. Without them, a warm 1 us write whose MAD was two clock steps (20 ns) had a
threshold 15% above its median and 327 "spikes" in 10,000 samples, most of them the ordinary
right tail. (For a log-normal body the floor of 2 x the median is the rule from a log sigma of
about 0.1 upwards: ``k`` x 1.4826 MAD is then larger.) ``spike_rule`` states the rule used.

The windows are ``w = max(SPIKE_WINDOW_MIN, n // SPIKE_WINDOWS)`` consecutive samples (1,000 up
to 200,000 samples, then 200 windows; fewer than ``2 SPIKE_WINDOW_MIN`` samples are one window,
the last window takes the remainder). Each window ``j`` gets its threshold ``thr_j`` by the rule
above from its ``median_j`` and ``MAD_j`` (deviations from ``median_j``), and then the running
median of
three consecutive ``thr_j`` (the first and last repeated). Why local: with one global median and
MAD, a level shift that lifts less than half of the run leaves the median and the MAD in the
lower level, and the whole higher level "spikes" (a run whose last 30% were 3 x slower gave
60,000 spikes and a confident "period" of 4 iterations). A step stays a step under the running
median, and a window that straddles the step (its MAD inflated by the two levels) takes the
higher of its neighbours' thresholds, so the step itself creates no spikes either; a window
whose median was lifted by a long burst takes its neighbours' threshold. Finding the windows'
medians and MADs is O(n) (selection, not sorting). If a window's MAD is zero (a coarse clock:
more than half its samples equal), the global scale is used for it: ``1.4826 MAD`` of all
samples, falling back to ``IQR / 1.349`` and then to the smallest gap between distinct values.
``spike_threshold`` and ``spike_scale`` report the median over the windows (for data without
drift, the global ``median + k * 1.4826 MAD`` within the noise of the window estimates),
``spike_threshold_min``/``_max`` their range. The indices of all spikes are kept.

The spikes and the strong spikes go to ``periodicity.best_period``, which looks for a period
in their recurrence (periodicity.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from ._common import (
    MAD_SCALE,
    FloatArray,
    IntArray,
    Prepared,
    Result,
    as_prepared,
    mad_sorted,
    median,
    quantile_sorted,
)
from .periodicity import Periodicity, best_period

TUKEY_MILD = 1.5
TUKEY_EXTREME = 3.0
SPIKE_K = 5.0
#: Local spike thresholds: windows of at least this many samples ...
SPIKE_WINDOW_MIN = 1000
#: ... and at most this many windows.
SPIKE_WINDOWS = 200
#: Strong spikes lie this many times further above the median than the spike threshold.
STRONG_FACTOR = 4.0
#: A spike is at least this many times the local median ...
SPIKE_MIN_RATIO = 2.0
#: ... and at least this many clock steps above it.
SPIKE_MIN_STEPS = 10


@dataclasses.dataclass(frozen=True, eq=False)
class Outliers(Result):
    q1: float
    q3: float
    iqr: float
    low_extreme_fence: float
    low_mild_fence: float
    high_mild_fence: float
    high_extreme_fence: float
    n_low_extreme: int
    n_low_mild: int
    n_high_mild: int
    n_high_extreme: int
    spike_k: float
    spike_scale: float  # median over the windows of 1.4826 MAD (or its fallback)
    spike_scale_source: str
    spike_threshold: float  # median over the windows of the local thresholds
    spike_threshold_min: float
    spike_threshold_max: float
    spike_window: int  # samples per window of the local thresholds (n: one window)
    spike_indices: IntArray
    n_spikes: int
    spike_fraction: float
    periodicity: Periodicity
    spike_rule: str = ""  # the threshold rule in words, with the floors


def _global_scale(prep: Prepared, iqr: float) -> tuple[float, str]:
    """1.4826 MAD of all samples, or its fallbacks (IQR / 1.349, smallest gap)."""
    xs = prep.sorted
    mad = mad_sorted(xs, quantile_sorted(xs, 0.5))
    if mad > 0.0:
        return MAD_SCALE * mad, f"{MAD_SCALE:g} MAD"
    if iqr > 0.0:
        return iqr / 1.349, "IQR / 1.349 (MAD is zero)"
    gaps = np.diff(xs)
    gaps = gaps[gaps > 0]
    if gaps.size:
        return float(gaps.min()), "smallest gap between values (MAD and IQR are zero)"
    return 0.0, "all samples equal"


def _median3(a: FloatArray) -> FloatArray:
    """Running median of three with the end values repeated (keeps steps, removes blips)."""
    if a.size < 3:
        return a.copy()
    p = np.concatenate([a[:1], a, a[-1:]])
    return np.median(np.stack([p[:-2], p[1:-1], p[2:]]), axis=0)


@dataclasses.dataclass(frozen=True)
class _Thresholds:
    edges: IntArray  # window boundaries, windows [edges[j], edges[j + 1])
    spike: FloatArray  # threshold of each window
    strong: FloatArray
    scale: float  # median over windows
    source: str


def _local_thresholds(prep: Prepared, k: float, iqr: float) -> _Thresholds:
    n = prep.n
    w = min(max(SPIKE_WINDOW_MIN, n // SPIKE_WINDOWS), n)
    starts, meds, scales = prep.windows(w)  # drift's windows too, from 200,000 samples on
    nwin = meds.size
    edges = np.append(starts, n)
    scales = scales.copy()  # the shared one stays as it was made
    what = f"{MAD_SCALE:g} MAD" + ("" if nwin == 1 else f" in windows of {w:,} samples (median)")
    zero = scales <= 0.0
    if zero.any():
        g_scale, g_source = _global_scale(prep, iqr)
        scales[zero] = g_scale
        if zero.all():
            what = g_source if nwin == 1 else f"{g_source} of all samples (local MADs are zero)"
        else:
            what += f"; {g_source} of all samples where a window's MAD is zero"
    step = prep.step
    if step is not None and bool((scales < step).any()):
        scales = np.maximum(scales, step)
        what += f", at least one clock step ({step:.4g} ns)"
    # The practical floor: a spike is slow in a way a user would care about.
    floor = np.maximum(SPIKE_MIN_RATIO * meds, meds + SPIKE_MIN_STEPS * (step or 0.0))
    floor = np.where(meds > 0.0, floor, meds)
    raw = np.maximum(meds + k * scales, floor)
    spike = _median3(raw)
    strong = _median3(meds + STRONG_FACTOR * (raw - meds))
    return _Thresholds(edges, spike, strong, median(scales), what)


def _spike_rule(k: float, step: float | None) -> str:
    steps = (
        f", median + {SPIKE_MIN_STEPS} clock steps ({SPIKE_MIN_STEPS * step:.4g} ns)"
        if step
        else ""
    )
    return f"above max(median + {k:g} x scale, {SPIKE_MIN_RATIO:g} x median{steps}) per window"


def _exceedances(x: FloatArray, edges: IntArray, thr: FloatArray) -> IntArray:
    parts = [
        np.flatnonzero(x[edges[j] : edges[j + 1]] > thr[j]) + edges[j] for j in range(thr.size)
    ]
    return np.concatenate(parts).astype(np.int64, copy=False)


def outliers(
    x: npt.ArrayLike | Prepared,
    t: npt.ArrayLike | None = None,
    *,
    k: float = SPIKE_K,
    step: float | None = None,
    last: bool = False,
) -> Outliers:
    """Tukey classes, spikes (indices kept) and the period of recurring spikes in ``x`` (ns);
    ``step`` is the clock step in ns (or ``Prepared.step``). ``last``: nothing reads the
    sorted copy after this (``analyze_column``'s last stage): it is freed once the fences are
    counted, before the spike periodograms need the room (a long column's peak)."""
    prep = as_prepared(x, t, step)
    xs = prep.sorted
    q1, q3 = quantile_sorted(xs, 0.25), quantile_sorted(xs, 0.75)
    iqr = q3 - q1
    lo_ext, lo_mild = q1 - TUKEY_EXTREME * iqr, q1 - TUKEY_MILD * iqr
    hi_mild, hi_ext = q3 + TUKEY_MILD * iqr, q3 + TUKEY_EXTREME * iqr
    below = np.searchsorted(xs, [lo_ext, lo_mild], side="left")
    above = xs.size - np.searchsorted(xs, [hi_mild, hi_ext], side="right")
    th = _local_thresholds(prep, k, iqr)
    if last:
        del xs
        prep.release("sorted")
    spikes = _exceedances(prep.x, th.edges, th.spike)
    win = np.minimum(np.searchsorted(th.edges, spikes, side="right") - 1, th.spike.size - 1)
    strong_idx = spikes[prep.x[spikes] > th.strong[win]]
    threshold = median(th.spike)
    period = best_period(prep, spikes, threshold, strong_idx, median(th.strong))
    return Outliers(
        q1=q1,
        q3=q3,
        iqr=iqr,
        low_extreme_fence=lo_ext,
        low_mild_fence=lo_mild,
        high_mild_fence=hi_mild,
        high_extreme_fence=hi_ext,
        n_low_extreme=int(below[0]),
        n_low_mild=int(below[1] - below[0]),
        n_high_mild=int(above[0] - above[1]),
        n_high_extreme=int(above[1]),
        spike_k=k,
        spike_scale=th.scale,
        spike_scale_source=th.source,
        spike_threshold=threshold,
        spike_threshold_min=float(th.spike.min()),
        spike_threshold_max=float(th.spike.max()),
        spike_window=int(th.edges[1] - th.edges[0]),
        spike_indices=spikes,
        n_spikes=int(spikes.size),
        spike_fraction=spikes.size / prep.n,
        periodicity=period,
        spike_rule=_spike_rule(k, prep.step),
    )
