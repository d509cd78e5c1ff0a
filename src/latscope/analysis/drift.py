"""Drift over the run: windowed medians, change points, trend, warm-up and slowdown warnings.

Windows. The run is cut into consecutive windows of ``w = max(MIN_WINDOW, n // 200)`` samples
(about 200 windows; at least 50 samples each); the last window also takes the remainder. Each
window is summarised by its median, which ignores the spikes that ``outliers.py`` deals with.

Change points. ``ruptures.Pelt`` with the ``"l2"`` cost (a change in mean) on the window medians,
minimum segment of ``MIN_SEGMENT_WINDOWS`` = 2 windows. The penalty is scaled to the noise of the
window medians: ``pen = PENALTY_FACTOR * sigma^2 * ln(windows)`` with ``PENALTY_FACTOR = 3`` (BIC
would be 2; a little stricter because neighbouring windows are not quite independent) and
``sigma = 1.4826 MAD(diff(medians)) / sqrt(2)``, a noise estimate from successive differences
that a level shift or a slow drift does not inflate. ``sigma`` is floored at 0.1% of the overall
median so that a perfectly quantised series (coarse clock) does not turn every step into a
change. Change points are reported as the first iteration (and start time) of the new segment,
with the medians of the raw samples before and after.

Trend. Theil–Sen slope (``scipy.stats.theilslopes``, 95% interval) of the window medians
against the window mid times (against the window mid iterations without times), in ns per minute
and as % of the overall median per minute. The slope interval assumes independent window
medians: read it as indicative.

Warnings (code: meaning):

- ``warmup``: the first window(s) are more than ``WARMUP_THRESHOLD`` (10%) slower than the
  median of the other windows and more than 4 sigma above it;
- ``slowdown``: a change point after which the median is at least ``SLOWDOWN_THRESHOLD`` (10%)
  higher; ``level_shift``: one after which it is that much lower (other than the end of warm-up);
- ``oscillation``: at least three consecutive changes of at least 5% alternating in direction
  (the signature of thermal or power throttling);
- ``trend``: no step explains it, but the Theil–Sen interval excludes zero and the fitted drift
  over the whole run is at least ``TREND_THRESHOLD`` (10%) of the median;
- ``timer_too_coarse`` (``timer_too_coarse()``): the median is shorter than 10 clock ticks.

The warm-up check looks at window granularity only: with 10 million samples a window is 50,000
samples, and a warm-up shorter than half a window does not move its median.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt
import ruptures as rpt
from scipy import stats

from ._common import (
    AnalysisWarning,
    FloatArray,
    IntArray,
    Prepared,
    Result,
    as_prepared,
    fmt_ns,
    quantile_sorted,
)

MIN_WINDOW = 50
TARGET_WINDOWS = 200
MIN_WINDOWS = 4
MIN_SEGMENT_WINDOWS = 2
PENALTY_FACTOR = 3.0
NOISE_FLOOR = 1e-3
WARMUP_THRESHOLD = 0.10
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
    noise: float | None  # robust SD of the window medians, ns
    penalty: float | None
    change_points: tuple[ChangePoint, ...]
    slope_ns_per_iteration: float | None
    slope_ns_per_minute: float | None
    slope_percent_per_minute: float | None
    slope_ci_ns_per_minute: tuple[float, float] | None
    warmup_iterations: int
    warnings: tuple[AnalysisWarning, ...]
    method: str
    reason: str | None


def timer_too_coarse(median_ns: float, resolution_ns: float | None) -> AnalysisWarning | None:
    """A warning when the operation (median) lasts fewer than ``TIMER_TICKS`` clock ticks."""
    if resolution_ns is None or not resolution_ns > 0.0:
        return None
    if median_ns >= TIMER_TICKS * resolution_ns:
        return None
    ticks = median_ns / resolution_ns
    return AnalysisWarning(
        "timer_too_coarse",
        f"The median ({fmt_ns(median_ns)}) is only {ticks:.1f} ticks of the clock "
        f"({fmt_ns(resolution_ns)} resolution); single timings are quantised and biased. Time "
        f"batches of at least {math.ceil(TIMER_TICKS * resolution_ns / max(median_ns, 1e-9))} "
        "calls per sample or use a finer clock.",
    )


def _windows(x: FloatArray, w: int) -> tuple[IntArray, FloatArray]:
    n = x.size
    nw = max(1, n // w)
    starts = np.arange(nw, dtype=np.int64) * w
    med = np.empty(nw)
    if nw > 1:
        med[:-1] = np.median(x[: (nw - 1) * w].reshape(nw - 1, w), axis=1)
    med[-1] = np.median(x[(nw - 1) * w :])
    return starts, med


def _where(index: int, t: FloatArray | None) -> str:
    s = f"iteration {index:,}"
    if t is not None:
        s += f" (t = {t[index] - t[0]:.3g} s)"
    return s


def drift(
    x: npt.ArrayLike | Prepared,
    t: npt.ArrayLike | None = None,
    *,
    window: int | None = None,
    penalty_factor: float = PENALTY_FACTOR,
) -> Drift:
    """Windowed medians, change points, trend and drift warnings of ``x`` (ns); ``t`` are
    iteration start times in seconds (optional)."""
    prep = as_prepared(x, t)
    n, xv, tv = prep.n, prep.x, prep.t
    w = int(window) if window is not None else max(MIN_WINDOW, n // TARGET_WINDOWS)
    w = max(1, min(w, n))
    starts, med = _windows(xv, w)
    nw = med.size
    ends = np.append(starts[1:], n)
    times = None
    if tv is not None:
        times = 0.5 * (tv[starts] + tv[ends - 1])
    overall = quantile_sorted(prep.sorted, 0.5)
    method = (
        f"medians of {nw} windows of {w}; ruptures Pelt (l2, min {MIN_SEGMENT_WINDOWS} windows, "
        f"penalty {penalty_factor:g} sigma^2 ln windows); Theil-Sen slope"
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

    diffs = np.diff(med)
    sigma = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs)))) / math.sqrt(2.0)
    sigma = max(sigma, NOISE_FLOOR * abs(overall), 1e-12)
    pen = penalty_factor * sigma**2 * math.log(nw)
    algo = rpt.Pelt(model="l2", min_size=MIN_SEGMENT_WINDOWS, jump=1).fit(med.reshape(-1, 1))
    bkps = [int(b) for b in algo.predict(pen=pen)][:-1]
    bounds = [0] + [int(starts[b]) for b in bkps] + [n]
    seg_med = [float(np.median(xv[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
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

    # Trend.
    xaxis = times if times is not None else (starts + ends - 1) / 2.0
    slope_it = slope_min = slope_pct = None
    slope_ci = None
    ts = stats.theilslopes(med, xaxis, alpha=0.95)
    if times is not None and times[-1] > times[0]:
        slope_min = float(ts.slope) * 60.0
        slope_ci = (float(ts.low_slope) * 60.0, float(ts.high_slope) * 60.0)
        slope_pct = 100.0 * slope_min / overall if overall != 0 else None
        slope_it = float(ts.slope) * float(tv[-1] - tv[0]) / (n - 1) if tv is not None else None
        ci_excludes_zero = ts.low_slope > 0 or ts.high_slope < 0
        total_change = float(ts.slope) * float(times[-1] - times[0])
    else:
        slope_it = float(ts.slope)
        ci_excludes_zero = ts.low_slope > 0 or ts.high_slope < 0
        total_change = float(ts.slope) * float(xaxis[-1] - xaxis[0])

    warnings: list[AnalysisWarning] = []
    # Warm-up: leading windows clearly above the rest.
    rest = float(np.median(med[1:]))
    warmup = 0
    if med[0] > rest * (1.0 + WARMUP_THRESHOLD) and med[0] > rest + 4.0 * sigma:
        k = 1
        while k < nw - 1 and med[k] > rest * (1.0 + WARMUP_THRESHOLD):
            k += 1
        warmup = int(ends[k - 1])
        ratio = float(np.median(xv[:warmup])) / rest - 1.0
        warnings.append(
            AnalysisWarning(
                "warmup",
                f"The first {warmup:,} iterations ({100.0 * warmup / n:.1f}% of the run) are "
                f"{100.0 * ratio:.0f}% slower than the rest: warm-up was not finished. Raise the "
                f"warm-up to at least {warmup:,} iterations.",
            )
        )
    stepped = False
    for cp in cps:
        where = _where(cp.index, tv)
        if cp.relative_change >= SLOWDOWN_THRESHOLD:
            stepped = True
            warnings.append(
                AnalysisWarning(
                    "slowdown",
                    f"The median rose by {100.0 * cp.relative_change:.0f}% at {where} "
                    f"({fmt_ns(cp.median_before)} -> {fmt_ns(cp.median_after)}). Look for "
                    "throttling, frequency scaling, growing caches or files, or background "
                    "load; fix the CPU governor to 'performance' and re-run.",
                )
            )
        elif cp.relative_change <= -SLOWDOWN_THRESHOLD and cp.index > warmup + 2 * w:
            stepped = True
            warnings.append(
                AnalysisWarning(
                    "level_shift",
                    f"The median fell by {-100.0 * cp.relative_change:.0f}% at {where} "
                    f"({fmt_ns(cp.median_before)} -> {fmt_ns(cp.median_after)}): the conditions "
                    "changed during the run; one median does not describe it. Find out what "
                    "changed (other load, frequency, caches) and re-run.",
                )
            )
    big = [cp.relative_change for cp in cps if abs(cp.relative_change) >= OSCILLATION_THRESHOLD]
    flips = sum(1 for a, b in zip(big[:-1], big[1:], strict=True) if (a > 0) != (b > 0))
    if flips >= 2:
        warnings.append(
            AnalysisWarning(
                "oscillation",
                f"The median switches between levels {len(big)} times: typical of thermal or "
                "power throttling or frequency scaling. Fix the CPU frequency, check cooling "
                "and power, and re-run.",
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
            else f" ({fmt_ns(slope_it or 0.0)} per iteration)"
        )
        warnings.append(
            AnalysisWarning(
                "trend",
                f"The median drifts by {100.0 * total_change / overall:+.0f}% over the run"
                f"{per}: the system was not in a steady state. Check for throttling, growing "
                "files or caches and background load, and re-run.",
            )
        )
    return Drift(
        window_size=w,
        window_starts=starts,
        window_medians=med,
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
    )
