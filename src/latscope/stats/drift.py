"""Drift over the run: windowed medians, change points, trend, warm-up and slowdown warnings.

Windows. The run is cut into consecutive windows of ``w = max(MIN_WINDOW, n // 200)`` samples
(about 200 windows; at least 50 samples each); the last window also takes the remainder. Each
window is summarised by its median, which ignores the spikes that ``outliers.py`` deals with.

The host's two speeds and the warm-up are found first (levels.py) and taken out of the windows
and samples before change points and trend are looked for. Given the worker processes
(``segments``), a change point within a window of a worker's start goes (a worker at its own
level is the between-worker variation the worker table gives, not a change during the run).
A change must last: a bout shorter than
``levels.MIN_LASTING`` (10) windows, or than ``levels.MIN_LASTING_S`` (0.1 s) where the samples'
times are known, that returns to its level is an excursion (``excursions``), not two change
points; a bout at an end of the run goes (levels.lasting). On a virtual machine the host takes
its CPU back for a few milliseconds at a time: ten identical runs of a 2 µs file operation
(20,000 iterations, 0.1 s in all) showed such bouts of 5-12% in 4 of 10 runs, each lasting
5-17 ms.

Change points. A change point is reported only when it is beyond the noise of the window
medians *given their serial dependence* and large enough to matter:

1. Segmentation: optimal partitioning (the exact minimum that ``ruptures.Pelt`` finds) of the
   logarithms of the window medians (of the medians themselves if any is <= 0), with the
   ``"l2"`` cost (a change in mean), segments of at least ``MIN_SEGMENT_WINDOWS`` = 2 windows
   and a penalty per change point of ``pen = PENALTY_FACTOR * F * sigma^2 * ln(windows)``,
   ``PENALTY_FACTOR = 3`` (BIC would be 2). On the log scale a change is relative, and the
   scatter of window medians of a skewed latency distribution is about symmetric.
2. Noise: ``sigma = 1.4826 MAD`` of the residuals from the current segments' medians, and
   ``F = (1 + rho) / (1 - rho)`` the long-run variance factor of an AR(1), ``rho`` the lag-1
   autocorrelation of those residuals (winsorised at 3 sigma, clipped to [0, 0.95]). The first
   segmentation uses ``sigma = 1.4826 MAD(diff) / sqrt(2)`` and ``F = 1`` (too many change
   points); then ``sigma``, ``F`` and the segmentation are re-estimated in turn until they
   repeat (at most ``LRV_ITERATIONS`` = 5 rounds). Adding a change point between segments of
   ``n1`` and ``n2`` windows pays when ``d^2 / (F sigma^2 (1/n1 + 1/n2)) > 3 ln(windows)``:
   a z-test of the difference ``d`` with the variance of a mean of dependent windows, at
   ``|z| > 4`` for 200 windows. Without ``F``, runs whose neighbouring windows were correlated
   (a warm 50 ns write: 15-20 changes of +-5% in a stationary run) were cut into many levels.
   ``sigma`` is floored at 0.1% of the overall median and at half a clock step (``step``).
3. Practical size: while the smallest jump between neighbouring segments (medians of their
   window medians) is below ``max(PRACTICAL_CHANGE x median, MIN_CHANGE_STEPS x step)`` =
   ``max(5% of the median, 3 clock steps)``, that change point is dropped and its segments
   merge.
4. Each remaining change point is moved to the sample, within ``levels.REFINE_WINDOWS`` = 3
   windows, that best splits the samples between its neighbours into two levels (least
   squares on their logarithms, winsorised at 3 robust SDs), never leaving a segment shorter
   than half a window: a single 3 ms sample in a 50 µs run is a spike (outliers.py), not two change
   points one iteration apart.

Change points are reported as the first iteration (and start time) of the new segment, with
the medians of the raw samples before and after. Checked by simulation (``tests``): stationary
log-normal runs whose log is an AR(1) with phi = 0.9 gave a change point or a drift warning in
0 of 100 runs of 10,000 samples and 0 of 40 of 100,000; Pareto (alpha 1.5) noise in 1 of 100;
quantised runs (a median of 50 clock steps) in 0 of 100. A 20% step in the same AR(1) noise
was found, as the only change point, in every run; within two windows of its place in 38 of 40
runs of 10,000 samples (log sigma 0.2) and all runs of 30,000 and 100,000.

Trend. Theil–Sen slope (``scipy.stats.theilslopes``, 95% interval) of the window medians
against the window mid times (against the window mid iterations without times), in ns per minute
and as % of the overall median per minute. The Theil-Sen interval assumes independent window
medians; its half widths are multiplied by ``sqrt(F)``, ``F`` the long-run variance factor (as
above) of the residuals from the fitted line.

Warnings (code: meaning):

- ``levels``: the host's two speeds (above), once;
- ``warmup``: the first window(s) (of at least half the workers) are more than
  ``WARMUP_THRESHOLD`` (10%) slower than the median of the other windows (of that worker) and
  more than 4 robust SDs of the window medians above it;
- ``slowdown``: a change point after which the median is at least ``SLOWDOWN_THRESHOLD`` (10%)
  higher; ``level_shift``: one after which it is that much lower (other than the end of warm-up);
- ``oscillation``: beyond the two speeds, at least three consecutive changes of at least 5%
  alternating in direction
  (load that comes and goes, migration between CPUs, or throttling where the system controls
  the frequency); it replaces the ``slowdown`` and ``level_shift`` warnings of those changes,
  so that a run that flips between two or three levels gets one warning, not dozens;
- ``trend``: no step explains it, but the Theil–Sen interval excludes zero and the fitted drift
  over the whole run is at least ``TREND_THRESHOLD`` (10%) of the median;
- ``timer_too_coarse`` (``timer_too_coarse()``): the median is shorter than 10 clock steps.

The advice in these warnings does not know the machine: it names the causes that apply
anywhere (load on the machine or, in a virtual machine, on its host; growing files or caches)
and says to repeat the run; what applies to this machine's CPU frequency is said by
``latscope env --check`` (``env.check``), which knows whether the system controls it.

The warm-up check looks at window granularity only (within a worker, windows of at most an
eighth of the worker): with 10 million samples a window is 50,000 samples, and a warm-up
shorter than half a window does not move its median.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt

from ..units import fmt
from ._common import (
    AnalysisWarning,
    FloatArray,
    IntArray,
    Prepared,
    Result,
    as_prepared,
    median,
    quantile_sorted,
)
from .dist import theil_sen
from .levels import (
    MIN_LASTING,
    MIN_LASTING_S,
    MIN_WINDOWS,
    Levels,
    lasting,
    levels,
    levels_warning,
    refine,
    robust_sd,
    segment_median,
    warmup_by_worker,
    warmup_windows,
    window_medians,
)

__all__ = ["ChangePoint", "Drift", "Levels", "drift", "timer_too_coarse", "window_medians"]

MIN_WINDOW = 50
TARGET_WINDOWS = 200
MIN_SEGMENT_WINDOWS = 2
PENALTY_FACTOR = 3.0
NOISE_FLOOR = 1e-3
#: Largest lag-1 autocorrelation of the window medians the long-run variance assumes.
MAX_RHO = 0.95
#: Up to this many windows, the segment costs of all (start, end) pairs are made at once.
COST_MATRIX_MAX = 1024
#: Rounds of (segment, estimate the long-run variance, segment again).
LRV_ITERATIONS = 5
#: A change point must move the median by at least this share of the overall median ...
PRACTICAL_CHANGE = 0.05
#: ... and by at least this many clock steps.
MIN_CHANGE_STEPS = 3
SLOWDOWN_THRESHOLD = 0.10
OSCILLATION_THRESHOLD = 0.05
TREND_THRESHOLD = 0.10
#: The median must be at least this many clock ticks.
TIMER_TICKS = 10


@dataclasses.dataclass(frozen=True)
class ChangePoint(Result):
    index: int  # first iteration of the new segment
    window: int
    time_s: float | None  # seconds since the first iteration, when times are given
    median_before: float
    median_after: float
    relative_change: float  # median_after / median_before - 1


@dataclasses.dataclass(frozen=True, eq=False)
class Drift(Result):
    window_size: int
    window_starts: IntArray
    window_medians: FloatArray
    window_times: FloatArray | None  # mid time of each window, s
    noise: float | None  # robust SD of the window medians around their segments, ns
    penalty: float | None  # per change point, in the units segmented (log medians if > 0)
    change_points: tuple[ChangePoint, ...]
    slope_ns_per_iteration: float | None
    slope_ns_per_minute: float | None
    slope_percent_per_minute: float | None
    slope_ci_ns_per_minute: tuple[float, float] | None
    warmup_iterations: int
    warnings: tuple[AnalysisWarning, ...]
    method: str
    reason: str | None
    levels: Levels | None = None  # two speed levels switched between, if found
    excursions: tuple[int, ...] = ()  # where bouts that did not last began and ended

    @property
    def shifts(self) -> list[int]:
        """Where the run's level moved: the change points, the excursions and the switches
        between levels (the intervals treat the stretches between them as batches)."""
        out = {cp.index for cp in self.change_points} | set(self.excursions)
        if self.levels is not None:
            out.update(self.levels.switch_indices)
        return sorted(out)


def timer_too_coarse(median_ns: float, step_ns: float | None) -> AnalysisWarning | None:
    """A warning when the operation (median) lasts fewer than ``TIMER_TICKS`` clock steps
    (``step_ns``: the clock's granularity, the smallest increment its values advance by)."""
    if step_ns is None or not step_ns > 0.0:
        return None
    if median_ns >= TIMER_TICKS * step_ns:
        return None
    ticks = median_ns / step_ns
    return AnalysisWarning(
        "timer_too_coarse",
        f"The median ({fmt(median_ns)}) is only {ticks:.1f} steps of the clock "
        f"({fmt(step_ns)} per step); single timings are quantised and biased. Use a finer "
        "clock ('latscope clocks' lists them), or time batches of at least "
        f"{math.ceil(TIMER_TICKS * step_ns / max(median_ns, 1e-9))} calls (a benchmark's "
        "batch figure, where it has one).",
    )


def _where(index: int, t: FloatArray | None) -> str:
    s = f"iteration {index:,}"
    if t is not None:
        s += f" (t = {t[index] - t[0]:.3g} s)"
    return s


def _segment_fit(med: FloatArray, bkps: list[int]) -> tuple[FloatArray, list[float]]:
    """Residuals of the window medians from their segments' medians, and those medians."""
    edges = [0, *bkps, med.size]
    res = np.empty_like(med)
    levels = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        lv = median(med[a:b])
        levels.append(lv)
        res[a:b] = med[a:b] - lv
    return res, levels


def _long_run_factor(res: FloatArray) -> float:
    """``(1 + rho) / (1 - rho)``: the long-run variance of an AR(1) over its variance, with
    ``rho`` the lag-1 autocorrelation of the residuals winsorised at 3 robust SDs, clipped to
    ``[0, MAX_RHO]`` (never below 1: a negative correlation is not trusted to help)."""
    sd = robust_sd(res)
    if res.size < 3 or not sd > 0.0:
        return 1.0
    r = np.clip(res - median(res), -3.0 * sd, 3.0 * sd)
    r = r - r.mean()
    den = float(np.dot(r, r))
    rho = float(np.dot(r[:-1], r[1:])) / den if den > 0.0 else 0.0
    rho = min(max(rho, 0.0), MAX_RHO)
    return (1.0 + rho) / (1.0 - rho)


def _segment_costs(med: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """The prefix sums of ``med`` less its mean and of their squares, and (up to
    ``COST_MATRIX_MAX`` windows) ``cost[t, s]``, the squared deviations of ``med[s:t]`` from
    its mean for ``s < t``: ``_segment``'s segment costs, made once for the several penalties
    it is run with."""
    n = med.size
    y = med - float(np.mean(med))
    c1 = np.concatenate([[0.0], np.cumsum(y)])
    c2 = np.concatenate([[0.0], np.cumsum(y * y)])
    if n > COST_MATRIX_MAX:
        return c1, c2, None
    r = np.arange(n + 1, dtype=np.float64)
    d = c1[:, None] - c1
    d *= d
    with np.errstate(divide="ignore", invalid="ignore"):  # s >= t: never read
        d /= r[:, None] - r
    cost = c2[:, None] - c2
    cost -= d
    return c1, c2, cost


def _segment(
    med: FloatArray,
    pen: float,
    min_size: int = MIN_SEGMENT_WINDOWS,
    costs: tuple[FloatArray, FloatArray, FloatArray | None] | None = None,
) -> list[int]:
    """Optimal partitioning (Jackson et al. 2005; what PELT computes, without its pruning):
    minimise the sum over segments of the squared deviations from the segment mean plus
    ``pen`` per change point, segments at least ``min_size`` long. O(windows^2), vectorised;
    the window medians are few (about 200). ``costs``: ``_segment_costs(med)``, when made.
    Returns the first window of each new segment."""
    n = med.size
    c1, c2, matrix = _segment_costs(med) if costs is None else costs
    best = np.full(n + 1, np.inf)
    best[0] = -pen
    last = np.zeros(n + 1, dtype=np.int64)
    for t in range(min_size, n + 1):
        # segments from s = 0 .. t - min_size; those from 0 < s < min_size follow no
        # segmentation (best inf), so they are never the least
        k = t - min_size + 1
        if matrix is not None:
            cost = matrix[t, :k]
        else:
            cost = (c2[t] - c2[:k]) - (c1[t] - c1[:k]) ** 2 / (t - np.arange(k))
        tot = best[:k] + cost
        tot += pen
        i = int(tot.argmin())
        best[t], last[t] = tot[i], i
    out: list[int] = []
    t = n
    while t > 0:
        t = int(last[t])
        if t > 0:
            out.append(t)
    return out[::-1]


def _change_points(
    med: FloatArray, overall: float, step: float | None, floor: float, factor: float
) -> tuple[list[int], float, float, float]:
    """Change points (window indices) that are beyond the dependent noise and large enough to
    matter; returns (breakpoints, sigma, long-run factor, penalty). See the module docstring."""
    nw = med.size
    y, fl, unit = med, floor, 1.0
    if overall > 0.0 and float(med.min()) > 0.0:  # relative changes: segment the logarithms
        y, fl, unit = np.log(med), floor / overall, overall
    sigma = max(robust_sd(np.diff(y)) / math.sqrt(2.0), fl)
    lrf, pen = 1.0, factor * sigma**2 * math.log(nw)
    costs = _segment_costs(y)
    bkps = _segment(y, pen, costs=costs)
    seen: set[tuple[int, ...]] = set()
    for _ in range(LRV_ITERATIONS):
        res, _ = _segment_fit(y, bkps)
        sigma = max(robust_sd(res), fl)
        lrf = _long_run_factor(res)
        pen = factor * lrf * sigma**2 * math.log(nw)
        new = _segment(y, pen, costs=costs)
        if tuple(new) in seen or new == bkps:
            bkps = new
            break
        seen.add(tuple(bkps))
        bkps = new
    # Practical size: drop the smallest change until every one is large enough to matter.
    need = max(PRACTICAL_CHANGE * abs(overall), MIN_CHANGE_STEPS * step if step else 0.0)
    while bkps:
        _, levels = _segment_fit(med, bkps)
        jumps = np.abs(np.diff(levels))
        i = int(np.argmin(jumps))
        if jumps[i] >= need:
            break
        del bkps[i]
    return bkps, sigma * unit, lrf, pen


def drift(
    x: npt.ArrayLike | Prepared,
    t: npt.ArrayLike | None = None,
    *,
    window: int | None = None,
    penalty_factor: float = PENALTY_FACTOR,
    segments: list[int] | None = None,
) -> Drift:
    """Windowed medians, change points, trend and drift warnings of ``x`` (ns); ``t`` are
    iteration start times in seconds (optional); ``segments`` the sizes of the worker
    processes in the order they ran (warm-up is judged within each)."""
    prep = as_prepared(x, t)
    n, xv, tv = prep.n, prep.x, prep.t
    w = int(window) if window is not None else max(MIN_WINDOW, n // TARGET_WINDOWS)
    w = max(1, min(w, n))
    starts, med, _ = prep.windows(w)  # with their robust SDs: the outliers' windows too
    nw = med.size
    ends = np.append(starts[1:], n)
    times = None
    if tv is not None:
        times = 0.5 * (tv[starts] + tv[ends - 1])
    overall = quantile_sorted(prep.sorted, 0.5)
    method = (
        f"medians of {nw} windows of {w}; optimal partitioning of their logarithms (l2, "
        f"min {MIN_SEGMENT_WINDOWS} windows, penalty {penalty_factor:g} x long-run variance x "
        f"ln windows), changes of at least {100 * PRACTICAL_CHANGE:g}% and "
        f"{MIN_CHANGE_STEPS} clock steps, lasting {MIN_LASTING} windows"
        + (f" and {MIN_LASTING_S:g} s" if tv is not None else "")
        + "; Theil-Sen slope"
    )
    if nw < MIN_WINDOWS:
        return Drift(
            window_size=w,
            window_starts=starts,
            window_medians=med,
            window_times=times,
            noise=None,
            penalty=None,
            change_points=(),
            slope_ns_per_iteration=None,
            slope_ns_per_minute=None,
            slope_percent_per_minute=None,
            slope_ci_ns_per_minute=None,
            warmup_iterations=0,
            warnings=(),
            method=method,
            reason=f"only {nw} windows of {w}; at least {MIN_WINDOWS} are needed",
        )

    step = prep.step
    floor = max(NOISE_FLOOR * abs(overall), 0.5 * step if step else 0.0, 1e-12)
    # Warm-up first, on the samples as measured: leading windows clearly above the rest,
    # judged within each worker process where the workers are known.
    warnings: list[AnalysisWarning] = []
    warm_ranges: list[tuple[int, int]] = []
    warmup = 0
    workers = list(segments) if segments is not None and sum(segments) == n else []
    if len(workers) > 1:
        warm, slower, judged, at = warmup_by_worker(xv, workers, w)
        if judged and len(warm) >= max(1, math.ceil(judged / 2)):
            warmup = int(max(warm))
            warm_ranges = [(a0, a0 + k) for a0, k in zip(at, warm, strict=True)]
            warnings.append(
                AnalysisWarning(
                    "warmup",
                    f"In {len(warm)} of {judged} worker processes the first iterations (up "
                    f"to {warmup:,}) are {100.0 * float(np.median(slower)):.0f}% slower than "
                    "the rest of that worker: warm-up was not finished. Raise the warm-up to "
                    f"at least {warmup:,} iterations (--warmup, per worker).",
                )
            )
    else:
        got = warmup_windows(xv, starts, med)
        if got is not None:
            warmup = got[0]
            warm_ranges = [(0, warmup)]
            warnings.append(
                AnalysisWarning(
                    "warmup",
                    f"The first {warmup:,} iterations ({100.0 * warmup / n:.1f}% of the run) "
                    f"are {100.0 * got[1]:.0f}% slower than the rest: warm-up was not "
                    f"finished. Raise the warm-up to at least {warmup:,} iterations.",
                )
            )
    in_warmup = np.zeros(nw, dtype=bool)
    for a0, b0 in warm_ranges:
        in_warmup |= (starts < b0) & (ends > a0)
    # Two speed levels (the host's state): found once, and taken out of the windows and
    # samples, as the warm-up is, before change points and trend are looked for.
    found = levels(xv, starts, med, exclude=in_warmup if in_warmup.any() else None)
    lv, xa, meda = None, xv, med
    if found is not None or in_warmup.any():
        meda, xa = med.copy(), xv.copy()
    if found is not None:
        lv, slow = found
        f = math.exp(median(np.log(med[slow])) - median(np.log(med[~slow & ~in_warmup])))
        for i in np.flatnonzero(slow):
            meda[i] /= f
            xa[starts[i] : ends[i]] /= f
    # A warm-up window takes the level after it; a window beside a switch of speed (partly
    # at each) the level of its neighbour on its own side.
    borrow = {int(i): int(i) + 1 for i in np.flatnonzero(in_warmup)}
    if lv is not None:
        switched = [int(c) for c in np.searchsorted(starts, lv.switch_indices)]
        edge = {i for c in switched for i in (c - 1, c)}
        for c in switched:
            for i, j in ((c - 1, c - 2), (c, c + 1)):
                if 0 <= j < nw and j not in edge and i not in borrow:
                    borrow[i] = j
    for i in sorted(borrow, reverse=True):
        j = borrow[i]
        if j < nw and meda[i] != 0:
            xa[starts[i] : ends[i]] *= meda[j] / meda[i]
            meda[i] = meda[j]
    bkps, sigma, lrv_factor, pen = _change_points(meda, overall, step, floor, penalty_factor)
    # (the whole run's median and robust SD read from its sorted copy where xa is the run)
    xs = prep.sorted if xa is xv else None
    bounds = refine(xa, [0] + [int(starts[b]) for b in bkps] + [n], w, xs)
    memo: dict[tuple[int, int], float] = {}  # the segments' medians, each made once
    bounds, bkps, passing = lasting(xa, bounds, bkps, w, PRACTICAL_CHANGE, tv, memo)
    if len(workers) > 1 and len(bounds) > 2:
        # Each worker process runs at its own level (its memory layout, its CPUs): a change at
        # the start of a worker is the between-worker variation the run's worker table gives,
        # not a change during the run.
        fresh = np.cumsum(workers)[:-1]
        at_worker = [abs(fresh - b).min() <= w for b in bounds[1:-1]]
        passing += [b for b, f in zip(bounds[1:-1], at_worker, strict=True) if f]
        bkps = [k for k, f in zip(bkps, at_worker, strict=True) if not f]
        bounds = [0, *(b for b, f in zip(bounds[1:-1], at_worker, strict=True) if not f), n]
        bounds, bkps, more = lasting(xa, bounds, bkps, w, PRACTICAL_CHANGE, tv, memo)
        passing += more
    seg_med = [segment_median(xa, a, b, memo) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    cps = tuple(
        ChangePoint(
            index=bounds[i + 1],
            window=b,
            time_s=float(tv[bounds[i + 1]] - tv[0]) if tv is not None else None,
            median_before=seg_med[i],
            median_after=seg_med[i + 1],
            relative_change=seg_med[i + 1] / seg_med[i] - 1.0 if seg_med[i] != 0 else math.inf,
        )
        for i, b in enumerate(bkps)
    )
    raw_med, med = med, meda

    # Trend.
    xaxis = times if times is not None else (starts + ends - 1) / 2.0
    slope_it = slope_min = slope_pct = None
    slope_ci = None
    ts = theil_sen(med, xaxis, 0.95)
    # The slope interval assumes independent window medians: widen it by the square root of
    # the long-run variance factor of the residuals from the fitted line.
    widen = math.sqrt(_long_run_factor(med - (ts.intercept + ts.slope * xaxis)))
    low = ts.slope - widen * (ts.slope - ts.low_slope)
    high = ts.slope + widen * (ts.high_slope - ts.slope)
    ci_excludes_zero = low > 0 or high < 0
    if times is not None and times[-1] > times[0]:
        slope_min = float(ts.slope) * 60.0
        slope_ci = (float(low) * 60.0, float(high) * 60.0)
        slope_pct = 100.0 * slope_min / overall if overall != 0 else None
        slope_it = float(ts.slope) * float(tv[-1] - tv[0]) / (n - 1) if tv is not None else None
        total_change = float(ts.slope) * float(times[-1] - times[0])
    else:
        slope_it = float(ts.slope)
        total_change = float(ts.slope) * float(xaxis[-1] - xaxis[0])

    if lv is not None:
        warnings.insert(0, levels_warning(lv))
    stepped = False
    for cp in cps:
        where = _where(cp.index, tv)
        if cp.relative_change >= SLOWDOWN_THRESHOLD:
            stepped = True
            warnings.append(
                AnalysisWarning(
                    "slowdown",
                    f"The median rose by {100.0 * cp.relative_change:.0f}% at {where} "
                    f"({fmt(cp.median_before)} -> {fmt(cp.median_after)}): the conditions "
                    "changed during the run (other load on this machine or its host, growing "
                    "caches or files, CPU frequency where the system controls it). Repeat the "
                    "run; 'latscope env --check' says what applies to this machine.",
                )
            )
        elif cp.relative_change <= -SLOWDOWN_THRESHOLD and cp.index > warmup + 2 * w:
            stepped = True
            warnings.append(
                AnalysisWarning(
                    "level_shift",
                    f"The median fell by {-100.0 * cp.relative_change:.0f}% at {where} "
                    f"({fmt(cp.median_before)} -> {fmt(cp.median_after)}): the conditions "
                    "changed during the run; one median does not describe it. Find out what "
                    "changed (other load on this machine or its host, caches) and repeat the "
                    "run.",
                )
            )
    big = [cp.relative_change for cp in cps if abs(cp.relative_change) >= OSCILLATION_THRESHOLD]
    flips = sum(1 for a, b in zip(big[:-1], big[1:], strict=True) if (a > 0) != (b > 0))
    if flips >= 2:
        # One warning for the whole back and forth instead of one per change point.
        warnings = [w for w in warnings if w.code not in ("slowdown", "level_shift")]
        seg_levels = [cps[0].median_before] + [cp.median_after for cp in cps]
        lo, hi = min(seg_levels), max(seg_levels)
        spread = (
            f" (segment medians {fmt(lo)} to {fmt(hi)}, "
            f"{100.0 * (lo / overall - 1.0):+.0f}% to {100.0 * (hi / overall - 1.0):+.0f}% "
            "of the median)"
            if overall > 0
            else ""
        )
        warnings.append(
            AnalysisWarning(
                "oscillation",
                f"The median switches between levels {len(big)} times{spread}: something "
                "else competes for the CPU in bouts (other load on this machine or, in a "
                "virtual machine, on its host), the process moves between CPUs, or the CPU "
                "frequency changes where the system controls it. One median describes the "
                "mixture only; repeat the run, pin it to a CPU (cpu=/cpus=), and see "
                "'latscope env --check'.",
            )
        )
    if (
        not stepped
        and ci_excludes_zero
        and overall != 0
        and abs(total_change) >= TREND_THRESHOLD * abs(overall)
    ):
        per = (
            f" ({slope_pct:+.2g}% per minute)"
            if slope_pct is not None
            else f" ({fmt(slope_it or 0.0)} per iteration)"
        )
        warnings.append(
            AnalysisWarning(
                "trend",
                f"The median drifts by {100.0 * total_change / overall:+.0f}% over the run"
                f"{per}: the system was not in a steady state. Check for growing files or "
                "caches and background load (on this machine or its host), and repeat the "
                "run; 'latscope env --check' says what applies to this machine.",
            )
        )
    return Drift(
        window_size=w,
        window_starts=starts,
        window_medians=raw_med,
        window_times=times,
        noise=sigma,
        penalty=pen,
        change_points=cps,
        slope_ns_per_iteration=slope_it,
        slope_ns_per_minute=slope_min,
        slope_percent_per_minute=slope_pct,
        slope_ci_ns_per_minute=slope_ci,
        warmup_iterations=warmup,
        warnings=tuple(warnings),
        method=method,
        reason=None,
        levels=lv,
        excursions=tuple(passing),
    )
