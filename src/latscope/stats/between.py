"""Between-run variation: a run measured in several worker processes (segments).

A run of latscope is, by default, several probe worker processes one after another (the
probe's ``--workers``); the sample file records how many samples each worker contributed
(``header.workers[i].n``, in order). One process is one draw from the machine: its placement,
its physical pages, the host's neighbours at that moment. The variation *between* workers is
usually larger than the sampling noise *within* one, so the headline interval of a run's median
is computed from the workers' medians, not from the pooled samples.

``median_over_runs`` gives the interval for the median of a run with ``R >= 2`` segments: a
Student t interval on the logarithms of the segment medians (run-to-run differences are
multiplicative), transformed back, never wider than the range of the segment medians (with
few effective segments the t quantile explodes: 12.7 at one degree of freedom) and never
narrower than the pooled samples' own interval (``floor``). The workers run one after
another, so neighbouring ones may share the host's state of the moment: their medians count
as ``effective_count`` independent ones (lag-1 autocorrelation; ``R_eff - 1`` degrees of
freedom). It is an interval for the typical
(geometric-mean) segment median, which is the figure a second run of the same command
reproduces.

The same statistics describe any set of repetitions (worker processes of one run, or the runs
of a suite scenario): ``between`` gives, for one column, each repetition's median with its
within-process interval, the median of medians, their spread (range, CV), an interval over
them (``t_interval``, R >= 3), a note when they differ by more than their within-process
intervals allow (the variation between processes dominates, and one process's interval
understates the uncertainty) and ``two_levels``: medians that sit at two distinct levels.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from ..units import fmt_bare, pct
from ._common import Result, as_float_array, quantile_sorted
from .dist import t_ppf

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


def segment_medians(
    x: npt.ArrayLike, segments: Sequence[int] | None, step: float | None = None
) -> SegmentMedians:
    """The median of each segment; with ``step`` (the clock's granularity) read within the
    step from the grouped distribution (``_common.quantile_sorted``), so that a worker's median
    does not jump by whole clock steps."""
    parts = split(x, segments)
    return SegmentMedians(
        tuple(quantile_sorted(np.sort(p), 0.5, step) for p in parts),
        tuple(int(p.size) for p in parts),
    )


#: The largest serial correlation credited between consecutive segments (r_eff >= r / 19).
MAX_RHO = 0.9


def aligned(
    x: npt.ArrayLike,
    segments: Sequence[int] | None,
    step: float | None = None,
    *,
    medians: Sequence[float] | None = None,
    in_place: bool = False,
) -> np.ndarray:
    """The samples with each segment shifted so that its median is the pooled median, in the
    order they ran: what remains is the variation *within* the segments. The pooled samples'
    own interval of the median (the floor of ``median_over_runs``) is computed on these: on the
    raw samples the level differences between workers read as strong serial dependence, the
    effective sample size collapses, and the interval reaches from the smallest sample to the
    largest (seen: 276 ns to 47.6 µs around a median of 521 ns, worker medians 351–591 ns).

    ``medians``: the segments' medians (`segment_medians`), when already known; ``in_place``:
    the segments are shifted where they are (``x``, a float64 array, holds the result: no
    second array of its size), the same values as a new array would hold."""
    parts = split(x, segments)
    a = as_float_array(x, "x")
    if len(parts) < 2:
        return a
    centre = quantile_sorted(np.sort(a), 0.5, step)  # the segments make up the whole array
    meds = segment_medians(x, segments, step).medians if medians is None else medians
    if not in_place:
        return np.concatenate([p - (m - centre) for p, m in zip(parts, meds, strict=True)])
    for p, m in zip(parts, meds, strict=True):
        p -= m - centre
    return a


def effective_count(v: npt.ArrayLike) -> float:
    """How many independent segments ``v`` (their medians, in the order they ran) are worth:
    ``r (1 - rho) / (1 + rho)``, rho the lag-1 autocorrelation of ``v`` clipped to
    [0, ``MAX_RHO``]. Segments run one after another share the host's state of the moment
    (load of neighbours, frequency), so neighbouring ones can agree more than separate runs
    would; a negative estimate is not credited (r stays r). Fewer than 3 segments: r."""
    a = np.asarray(v, dtype=float)
    r = a.size
    if r < 3:
        return float(r)
    d = a - a.mean()
    den = float(np.dot(d, d))
    rho = float(np.dot(d[:-1], d[1:])) / den if den > 0 else 0.0
    rho = min(max(rho, 0.0), MAX_RHO)
    return max(2.0, r * (1.0 - rho) / (1.0 + rho))


@dataclasses.dataclass(frozen=True)
class TInterval(Result):
    """A Student t interval over segment (or repetition) medians."""

    low: float
    high: float
    center: float
    r: int
    r_eff: float
    log: bool  # on the logarithms of the medians (all positive), transformed back

    @property
    def df(self) -> float:
        return self.r_eff - 1.0

    def describe(self, what: str = "worker medians") -> str:
        scale = "log scale, " if self.log else ""
        eff = f", serial correlation: worth {self.r_eff:.1f}" if self.r_eff < self.r - 0.05 else ""
        return f"t interval over {self.r} {what} ({scale}{self.df:.3g} df{eff})"


def t_interval(medians: npt.ArrayLike, level: float = 0.95) -> TInterval | None:
    """The t interval for the typical median over ``r >= MIN_SEGMENTS`` medians: on their
    logarithms when all are positive (run-to-run differences are multiplicative; the centre
    is then their geometric mean), else on the medians; ``effective_count`` of them, with
    ``r_eff - 1`` degrees of freedom."""
    med = np.asarray(medians, dtype=float)
    r = med.size
    if r < MIN_SEGMENTS:
        return None
    log = bool((med > 0).all())
    v = np.log(med) if log else med
    r_eff = effective_count(v)
    tq = t_ppf(0.5 + level / 2.0, r_eff - 1.0)
    m, h = float(v.mean()), tq * float(v.std(ddof=1)) / math.sqrt(r_eff)
    if log:
        return TInterval(math.exp(m - h), math.exp(m + h), math.exp(m), r, r_eff, True)
    return TInterval(m - h, m + h, m, r, r_eff, False)


def median_over_runs(
    x: npt.ArrayLike,
    segments: Sequence[int] | None,
    level: float = 0.95,
    floor: tuple[float, float] | None = None,
    step: float | None = None,
    *,
    medians: Sequence[float] | None = None,
) -> tuple[float, float, str] | None:
    """(low, high, method) of the run's median including between-segment variation
    (``t_interval`` over the segment medians), or None with fewer than ``MIN_SEGMENTS``
    segments. ``floor`` (low, high), the pooled samples' interval, bounds the result from
    inside: it is never narrower than that. ``medians``: the segments' medians
    (`segment_medians`), when already known (``x`` is not read then)."""
    meds = segment_medians(x, segments, step).medians if medians is None else medians
    ti = t_interval(meds, level)
    if ti is None:
        return None
    low, high = ti.low, ti.high
    capped = ""
    if low < min(meds) or high > max(meds):
        # With few effective workers (a run whose workers fell into two blocks is worth about
        # two) the t quantile explodes: never claim more than the workers' own medians span.
        low, high = max(low, min(meds)), min(high, max(meds))
        capped = ", capped at the range of the worker medians"
    if floor is not None and floor[0] is not None and floor[1] is not None:
        low, high = min(low, floor[0]), max(high, floor[1])
    return low, high, f"between runs: {ti.describe()}{capped}"


def typical_median(
    x: npt.ArrayLike, segments: Sequence[int] | None, step: float | None = None
) -> float:
    """A run's typical process median: the geometric mean of its segment medians (with at
    least ``MIN_SEGMENTS`` positive ones), else the median of all samples. It is the centre of
    ``median_over_runs`` and the statistic ``compare`` forms ratios of."""
    sm = segment_medians(x, segments, step)
    med = np.asarray(sm.medians)
    if sm.r >= MIN_SEGMENTS and (med > 0).all():
        return float(np.exp(np.log(med).mean()))
    return quantile_sorted(np.sort(as_float_array(x, "x")), 0.5, step)


#: Points of the grid over the between-worker spread ``tau`` (`combine_workers`).
_TAU_GRID = 160


def combine_workers(
    y: npt.ArrayLike, v: npt.ArrayLike, scale: float, level: float
) -> tuple[float, float, float, float]:
    """Bayesian random-effects combination of worker estimates ``y`` (log scale) with
    within-worker variances ``v``: flat prior on the mean, half-normal prior of ``scale`` on
    the between-worker sd ``tau`` (0: fixed effect). Returns ``(median, low, high,
    layout_share)`` of the posterior of the mean, the central ``level`` interval, and the
    posterior mean share of the mean's variance that comes from ``tau``."""
    ya = np.asarray(y, dtype=np.float64)
    va = np.maximum(np.asarray(v, dtype=np.float64), 1e-18)
    if scale > 0.0:
        spread = float(ya.max() - ya.min()) if ya.size > 1 else 0.0
        top = max(6.0 * scale, 3.0 * spread, 4.0 * math.sqrt(float(va.max())))
        tau = np.linspace(0.0, top, _TAU_GRID)
        logprior = -0.5 * (tau / scale) ** 2
    else:
        tau = np.zeros(1)
        logprior = np.zeros(1)
    tot = va[None, :] + tau[:, None] ** 2  # (grid, W)
    w = 1.0 / tot
    sw = w.sum(axis=1)
    mu = (w * ya[None, :]).sum(axis=1) / sw
    var = 1.0 / sw
    loglik = (
        -0.5 * np.log(tot).sum(axis=1)
        - 0.5 * np.log(sw)
        - 0.5 * (w * (ya[None, :] - mu[:, None]) ** 2).sum(axis=1)
    )
    lp = loglik + logprior
    p = np.exp(lp - lp.max())
    p /= p.sum()
    sd = np.sqrt(var)
    alpha = 1.0 - level
    probs = np.array([0.5, alpha / 2.0, 1.0 - alpha / 2.0])
    lo = np.full(3, float((mu - 10.0 * sd).min()))
    hi = np.full(3, float((mu + 10.0 * sd).max()))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        cdf = (p[None, :] * special.ndtr((mid[:, None] - mu[None, :]) / sd[None, :])).sum(axis=1)
        below = cdf < probs
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    q = 0.5 * (lo + hi)
    # the layout's share: posterior mean of tau^2 / (tau^2 + mean within variance)
    vbar = float(np.mean(va))
    share = float(np.sum(p * tau**2 / (tau**2 + vbar)))
    return float(q[0]), float(q[1]), float(q[2]), share


# ------------------------------------------------------------ over repetitions

LEVEL = 0.95
MIN_REPS_FOR_INTERVAL = 3


@dataclass(frozen=True)
class Rep:
    """One repetition's median and its within-run interval (ns)."""

    run_id: str
    p50: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Between:
    column: str
    reps: tuple[Rep, ...]
    median_of_medians: float
    lowest: float
    highest: float
    spread_rel: float | None  # (highest - lowest) / median_of_medians
    cv: float | None  # sd / mean of the repetition medians (R >= 2)
    within_rel: float | None  # typical within-run half width / median (median over reps)
    interval: tuple[float, float] | None
    center: float | None  # the interval's centre (geometric mean of the medians)
    method: str
    note: str | None
    levels: Levels | None = None  # the medians at two distinct levels (`two_levels`)

    @property
    def r(self) -> int:
        return len(self.reps)


@dataclass(frozen=True)
class Levels:
    """Repetition (or worker) medians that sit at two distinct levels."""

    low: tuple[int, ...]  # indices of the repetitions at the lower level
    high: tuple[int, ...]
    low_median: float
    high_median: float

    @property
    def step_rel(self) -> float:
        return self.high_median / self.low_median - 1.0

    def describe(self, unit: tuple[str, float]) -> str:
        return (
            f"{len(self.low)} at {fmt_bare(self.low_median, unit)} {unit[0]}, "
            f"{len(self.high)} at {fmt_bare(self.high_median, unit)} {unit[0]} "
            f"(+{pct(self.step_rel)})"
        )


#: Two levels: the largest gap between sorted medians is at least this (relative) ...
LEVEL_GAP_MIN = 0.03
#: ... and at least this many times the typical within-run half width, and at least this
#: many times the larger spread inside either group.
LEVEL_GAP_WITHIN = 3.0
LEVEL_GAP_SPREAD = 2.0
LEVELS_MIN_REPS = 8


def two_levels(reps: Sequence[Rep]) -> Levels | None:
    """The medians split into two groups far apart compared with the spread inside each and
    with each run's own interval: a machine that switches between two states (on a virtual
    machine, often its host) rather than noise around one value. None when they do not, or
    with fewer than `LEVELS_MIN_REPS` medians (with fewer, one log-normal spread of medians
    calls two levels too often; with a CV of 3% between log-normal medians: 26% of the time at
    4, 1.6% at 8, 0.2% at 10, none at 20)."""
    if len(reps) < LEVELS_MIN_REPS:
        return None
    med = np.array([r.p50 for r in reps], dtype=float)
    if not np.all(np.isfinite(med)) or np.any(med <= 0):
        return None
    order = np.argsort(med, kind="stable")
    xs = med[order]
    gaps = xs[1:] / xs[:-1] - 1.0
    k = int(np.argmax(gaps))
    gap = float(gaps[k])
    lo_grp, hi_grp = xs[: k + 1], xs[k + 1 :]
    spread = max(lo_grp[-1] / lo_grp[0] - 1.0, hi_grp[-1] / hi_grp[0] - 1.0)
    halves = [
        (r.high - r.low) / 2 / r.p50
        for r in reps
        if r.low is not None and r.high is not None and r.p50 > 0
    ]
    within = float(np.median(halves)) if halves else 0.0
    if gap < LEVEL_GAP_MIN or gap < LEVEL_GAP_WITHIN * within or gap < LEVEL_GAP_SPREAD * spread:
        return None
    return Levels(
        tuple(int(i) for i in sorted(order[: k + 1])),
        tuple(int(i) for i in sorted(order[k + 1 :])),
        float(np.median(lo_grp)),
        float(np.median(hi_grp)),
    )


def between(
    column: str, reps: Sequence[Rep], level: float = LEVEL, what: str = "repetition medians"
) -> Between:
    """Within-run and between-run variation of one column over repetitions (module docs)."""
    if not reps:
        raise ValueError("no repetitions")
    med = np.array([r.p50 for r in reps], dtype=float)
    mom = float(np.median(med))
    lo, hi = float(med.min()), float(med.max())
    r = len(reps)
    spread = (hi - lo) / abs(mom) if r >= 2 and mom != 0 else None
    cv = float(med.std(ddof=1) / abs(med.mean())) if r >= 2 and med.mean() != 0 else None
    halves = [
        (x.high - x.low) / 2 / abs(x.p50)
        for x in reps
        if x.low is not None and x.high is not None and x.p50 != 0
    ]
    within = float(np.median(halves)) if halves else None
    interval: tuple[float, float] | None = None
    center: float | None = None
    ti = t_interval(med, level) if r >= MIN_REPS_FOR_INTERVAL else None
    if ti is not None:
        interval, center = (ti.low, ti.high), ti.center
        method = (
            f"{level:.0%} Student "
            + ti.describe(what)
            + (": geometric mean of the medians" if ti.log else "")
        )
    else:
        method = (
            f"no interval over repetitions: needs at least {MIN_REPS_FOR_INTERVAL} (range only)"
        )
    note = None
    lows = [x.low for x in reps if x.low is not None]
    highs = [x.high for x in reps if x.high is not None]
    if r >= 2 and len(lows) == r and len(highs) == r and max(lows) > min(highs):
        note = (
            f"{column}: the repetition medians differ by more than their within-run intervals "
            "allow: run-to-run variation dominates, so one run's interval understates the "
            "uncertainty; quote the interval over repetitions, and repeat more rather than "
            "measuring longer"
        )
    levels = two_levels(reps)
    return Between(
        column,
        tuple(reps),
        mom,
        lo,
        hi,
        spread,
        cv,
        within,
        interval,
        center,
        method,
        note,
        levels,
    )
