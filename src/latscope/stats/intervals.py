"""Confidence intervals for the median, the headline percentiles and the mean.

The method depends on the serial dependence measured by ``dependence.py`` (on normal scores):

**Independent** (Ljung–Box p >= 0.01 and ESS/n >= 0.5):

- Quantiles (median, p90, p95, p99, p99.9): the exact distribution-free order-statistic
  interval. The number of samples below the true quantile ``xi_p`` is Binomial(n, p), so
  ``[X_(l), X_(u)]`` with ``l = Binom.ppf(alpha/2)`` and ``u = Binom.ppf(1 - alpha/2) + 1``
  (1-based) covers ``xi_p`` with probability at least ``level`` for any continuous distribution
  (``scipy.stats.binom``). No normality, no symmetry.
- Mean: studentized bootstrap (bootstrap-t: the quantiles of each resample's mean less the
  estimate over the resample's own standard error), which follows the skew of a mean of
  skewed latencies to second order. On independent log-normal latencies with 1% 10x spikes
  it covered the true mean in 93.1% of 1,000 runs of 1,000 samples, where the BCa bootstrap
  covered 91.9% and Student's t 91.8% (``bench/coverage_intervals.py``). For speed the
  resampling units are contiguous batches of ``ceil(n / 1000)`` samples (single samples when
  ``n <= 1000``): for independent data a batch is a sum of independent values, so resampling
  batches reproduces the variance and skewness of the mean at ``O(n + B * 1000)`` cost
  instead of ``O(n * B)``.

**Dependent** (otherwise): non-overlapping batches, ``b`` of them, each about ``n / b`` long.

- Quantiles: a Woodruff interval with a batch-means variance. The share of samples at or below
  the estimate ``q`` is computed per batch; its long-run standard error is
  ``se = sd(batch shares) / sqrt(b)``, and ``[Q(p - t se), Q(p + t se)]`` is the interval, with
  ``t`` the Student quantile with ``b - 1`` degrees of freedom and ``Q`` the (grouped) quantile
  function. The share of a quantised sample is the part of its step-wide interval below ``q``
  (the grouped CDF), so the shares vary smoothly with ``q``. ``O(n)`` per quantile.
- Mean: batch means with the same batches, Student t with ``b - 1`` degrees of freedom.
- Batches: as many as fit ``BATCH_TAUS`` (20) autocorrelation times ``tau`` (from
  ``dependence.py``, Geyer's estimate on normal scores) or the Politis–White block length,
  whichever is longer, into the run, between ``MIN_BATCHES`` (4) and ``MAX_BATCHES`` (100).
  Why batches rather than a block bootstrap: on a noisy VM the level switches between regimes
  that last hundreds to thousands of iterations. A block bootstrap needs many blocks, each far
  longer than a regime, and with blocks shorter than the regimes it reproduces only the noise
  within them: its median interval covered the true median 65% of the time on such data at
  n = 5,000. With a handful of long batches the t quantile (3.18 with 3 df) pays for the little
  that a short run knows about its own variation, and the interval stays honest (about 93%;
  ``bench/coverage_intervals.py``). When the run holds fewer than ``MIN_BATCHES`` batches of
  the length wanted, the interval carries a caveat (``short_run`` warning): batches shorter
  than the dependence make it too narrow.
- Level shifts. A run that switches between levels lasting hundreds of iterations shows too
  few of them for its autocorrelation to measure the dependence: in runs of 1,000 with
  regimes of ~400 iterations (``tests/synth.regimes``), Geyer's ``tau`` came out between 2 and
  140 (10th and 90th percentiles; median 62) where the truth is about 300, the batches (mostly
  four of 250) cut through the regimes, and their shares, correlated from one batch to the
  next, made the median's interval cover the true median in 76% of the runs. So when
  ``drift.drift`` finds change points (shifts of at least 5% of the median, beyond the
  dependent noise of its window medians), the batches are the stretches between them: the
  levels are the dependence, and each stretch is one draw of a level. Batches of unequal
  length enter with their weights ``w_j`` (share of the samples): ``se^2 = c sum_j w_j^2
  (s_j - s)^2`` (the ratio estimator of cluster sampling, ``c`` what makes it unbiased for
  these weights: `_batch_se`; ``sd^2 / b`` for equal batches), t with ``b - 1`` df; with
  two stretches (t = 12.7) the interval spans the levels seen, as it should. Fewer than
  ``MIN_TRUSTED_STRETCHES`` (8) stretches carry a caveat. ``analyze_column`` passes drift's
  change points (``shifts``), else they are found here.

**Quantised clocks.** With the clock's ``step`` known, estimates are grouped quantiles
(``_common.quantile_sorted``), the order-statistic endpoints are read from the grouped
distribution at count positions ``l - 1/2`` and ``u - 1/2``, and the batch shares are grouped
too. The grouped estimate assumes that the samples of one value spread evenly over its step,
which the data cannot confirm within a step, so each interval is widened by a margin ``m`` on
both sides. Let ``c0`` be the count of the step holding the estimate, ``c-`` and ``c+`` those of
the steps either side. When both neighbours hold at least ``RESOLVED_NEIGHBOUR_SHARE`` (half) of
``c0``, the clock resolves the distribution there; a density that is locally linear plus
quadratic moves the quantile by at most about ``step (|c+ - c-| / 16 + |c+ + c- - 2 c0| / 32) /
c0``, which is ``m`` (negligible for a distribution many steps wide). Otherwise (most samples in
one or two steps: a 170 ns call on a 10 ns clock) the shape within the step is unknown and ``m``
is half a step: the interval is at least one step wide and says so in its method. A zero-width
interval such as "170.3–170.3 ns" cannot occur.

**What the data allow** (``bounds.py``, after the methods above): a quantile's interval holds
its estimate and stays within the range of the samples (never below 0 for a duration); the
intervals of the median and the upper percentiles are monotone in the percentile (an isotonic
adjustment that keeps the chance that all of them hold); the mean's is never below what the
quantiles' lower bounds imply (at least half the median's lower bound, at least 0).

A tail percentile with fewer than ``summary.MIN_BEYOND`` samples beyond it gets no interval
(``low = high = None``) and a ``reason``. Every interval carries its ``method`` and the ``ess``
of the column. Resampling (the bootstrap-t mean) uses ``numpy.random.default_rng(seed)``: same
seed, same numbers; the dependent methods use no random numbers.

Coverage of the 95% intervals (``bench/coverage_intervals.py``: quantised to a 10.015 ns step;
1,000, 600 and 60 runs at n = 1,000, 5,000 and 100,000), median / mean:

    process                       n = 1,000        5,000          100,000
    AR(1), phi 0.8 (log scale)    94.5 / 93.6%     94.5 / 93.2%   98.3 / 98.3%
    log-normal, 1% 10x spikes     96.2 / 92.0%     95.7 / 94.2%   96.7 / 96.7%
    regime switching              88.3 / 87.6%     97.7 / 97.5%   95.0 / 95.0%

(p90, p95 and p99: 93.2-97.1% but on the regimes at n = 1,000, 74-86%.) At n = 1,000 the
regime-switching runs hold two or three regimes of ~400 iterations, and 8% of them never leave
their first: those are independent samples of one level, and no interval right for
independent data covers the long-run median from them (``bench/synthetic_truth.py`` prints
that bound: the levels a run visited straddle the true median in 78% of the runs).

The delete-one-stretch jackknife instead of the ratio estimator (it allows for the leverage of
one long stretch) gave 88.0% and 98.0% on the regimes at 1,000 and 5,000, so it is not used.

Caveats: batch means assume batches long enough to be nearly independent. A run that never
leaves its first regime holds independent samples of one level, and no interval that is right
for independent data reaches the long-run median from it: with regimes of ~400 iterations, one
run of 1,000 in twelve does so, which caps the coverage there near 92% for any such method;
on the runs that saw the level move the interval keeps its level. With fewer than ~100 samples
per batch Woodruff's interval is coarse.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._common import (
    FloatArray,
    IntArray,
    Prepared,
    Result,
    as_prepared,
    grouped_position,
    sums_of,
)
from .bounds import mean_floor, respect_the_data
from .dependence import Dependence, dependence
from .dist import binom_cdf, binom_ppf, t_ppf
from .drift import drift
from .resample import MAX_BLOCKS, block_sums, multinomial_weights
from .summary import MIN_BEYOND, count_beyond, percentile_side, too_few_beyond

DEFAULT_LEVEL = 0.95
#: Bootstrap resamples (the bootstrap-t mean; compare.py).
N_BOOT = 2000
#: Headline percentiles that get intervals besides the median.
HEADLINE: tuple[tuple[str, float], ...] = (
    ("p90", 0.90),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p99.9", 0.999),
)
#: Fewer samples than this: no intervals at all.
MIN_SAMPLES = 5
#: The clock resolves the distribution at an estimate when both neighbouring steps hold at least
#: this share of the estimate's step's samples (see the module docstring).
RESOLVED_NEIGHBOUR_SHARE = 0.5
#: Dependent data: batches should be at least this many autocorrelation times long ...
BATCH_TAUS = 20.0
#: ... but there are never fewer batches than this (t with 3 degrees of freedom) ...
MIN_BATCHES = 4
#: ... nor more than this.
MAX_BATCHES = 100
#: Dependent data with level shifts: fewer stretches between them than this carry a caveat.
MIN_TRUSTED_STRETCHES = 8


@dataclasses.dataclass(frozen=True)
class Interval(Result):
    name: str
    estimate: float
    low: float | None
    high: float | None
    level: float
    method: str
    ess: float
    n_beyond: int | None  # for percentiles: samples beyond the estimate (see summary.py)
    reason: str | None  # why there is no interval, or a caveat about it


@dataclasses.dataclass(frozen=True)
class Intervals(Result):
    median: Interval
    mean: Interval
    percentiles: tuple[Interval, ...]
    level: float
    independent: bool
    block_length: int | None  # batch length (dependent data); None for the independent methods
    n_blocks: int | None  # number of batches
    ess: float
    rule: str
    seed: int
    level_shifts: tuple[int, ...] = ()  # where the batches were cut at level shifts (dependent)

    def percentile(self, name: str) -> Interval:
        if name in ("p50", "median"):
            return self.median
        for iv in self.percentiles:
            if iv.name == name:
                return iv
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["percentiles"] = {iv.name: iv.to_dict() for iv in self.percentiles}
        return d


# --- independent data -----------------------------------------------------------------------


def order_statistic_interval(
    sorted_x: npt.ArrayLike, p: float, level: float = DEFAULT_LEVEL, step: float | None = None
) -> tuple[float | None, float | None, float]:
    """Exact distribution-free interval for quantile ``p`` of i.i.d. data from sorted samples.

    Returns ``(low, high, coverage)``; ``low``/``high`` is None when the order statistic needed
    does not exist (too few samples), ``coverage`` is the exact binomial coverage achieved
    (>= level when both ends exist). With ``step``, the order statistics ``X_(l)`` and ``X_(u)``
    are read from the grouped distribution, at count positions ``l - 1/2`` and ``u - 1/2``."""
    xs = np.asarray(sorted_x, dtype=np.float64)
    n = xs.size
    alpha = 1.0 - level
    lo_k = binom_ppf(alpha / 2.0, n, p)  # 1-based order statistic, 0 = none
    hi_k = binom_ppf(1.0 - alpha / 2.0, n, p) + 1  # 1-based, n + 1 = none
    coverage = float(binom_cdf(hi_k - 1, n, p) - binom_cdf(lo_k - 1, n, p))
    if step is not None:
        lo_v, hi_v = grouped_position(xs, [lo_k - 0.5, hi_k - 0.5], step)
        low = float(lo_v) if lo_k >= 1 else None
        high = float(hi_v) if hi_k <= n else None
        return low, high, coverage
    low = float(xs[lo_k - 1]) if lo_k >= 1 else None
    high = float(xs[hi_k - 1]) if hi_k <= n else None
    return low, high, coverage


def _boot_t_mean(
    prep: Prepared, level: float, n_boot: int, rng: np.random.Generator
) -> tuple[float, float, str]:
    """The mean's studentized bootstrap interval (bootstrap-t): each resample's mean less the
    estimate, over the resample's own standard error, gives the quantiles of ``t``; the
    interval is ``[mean - t_hi se, mean - t_lo se]``. Batches as the module docs say; a
    batch's standard error is that of a ratio estimator (its sums about the mean)."""
    n = prep.n
    ell = max(1, math.ceil(n / MAX_BLOCKS))
    nb = math.ceil(n / ell)
    sums, lens = block_sums(prep.x, ell, nb)
    weights = multinomial_weights(nb, n_boot, rng)
    wl = weights @ lens
    reps = (weights @ sums) / wl
    theta = float(prep.x.mean())
    # each resample's variance of its mean: sum_j w_j (s_j - m l_j)^2 / (sum_j w_j l_j)^2,
    # expanded so that no (resamples x batches) array is made beyond the weights
    var = (weights @ (sums * sums) - 2.0 * reps * (weights @ (sums * lens))) + reps**2 * (
        weights @ (lens * lens)
    )
    se_b = np.sqrt(np.maximum(var, 0.0)) / wl
    dev = sums - theta * lens
    se = math.sqrt(float(np.dot(dev, dev)) * nb / max(nb - 1, 1)) / float(lens.sum())
    ok = se_b > 0.0
    if not se > 0.0 or int(ok.sum()) < max(10, n_boot // 2):  # a constant column
        return theta, theta, "all samples equal"
    t = (reps[ok] - theta) / se_b[ok]
    alpha = 1.0 - level
    t_hi, t_lo = np.quantile(t, [1.0 - alpha / 2.0, alpha / 2.0])
    unit = f" of {nb} batches of {ell}" if ell > 1 else ""
    return (
        theta - float(t_hi) * se,
        theta - float(t_lo) * se,
        (f"bootstrap-t{unit} ({n_boot} resamples)"),
    )


# --- dependent data -------------------------------------------------------------------------


def batch_plan(n: int, dep: Dependence) -> tuple[int, int, str | None]:
    """Batch length and number of batches for dependent data (see the module docstring), plus a
    caveat when the run is too short for the dependence measured."""
    wanted = max(1, math.ceil(max(BATCH_TAUS * dep.tau, dep.block_length)))
    b = min(MAX_BATCHES, n // wanted)
    caveat = None
    if b < MIN_BATCHES:
        b = min(MIN_BATCHES, n)
        caveat = (
            f"dependence reaches further than the run allows (wanted batches of {wanted:,}, "
            f"used {n // b:,}); the interval may be too narrow: measure more iterations"
        )
    elif dep.tau_truncated:
        caveat = (
            "the autocorrelation had not died out at lag n/4 (a level shift or drift?), so the "
            "batches may be shorter than the dependence"
        )
    return n // b, b, caveat


def _batch_bounds(n: int, b: int) -> IntArray:
    return np.linspace(0, n, b + 1).round().astype(np.int64)


def grouped_cdf_share(x: FloatArray, q: float, step: float | None, out: FloatArray) -> FloatArray:
    """Each sample's share at or below ``q``, made in ``out``: 0 or 1 for continuous data; with
    a clock step, the part of the sample's step-wide interval ``[x - step/2, x + step/2]`` that
    lies below ``q`` (the grouped CDF of ``_common.quantile_sorted``)."""
    if step is None:
        return np.less_equal(x, q, out=out)  # True and False made 1.0 and 0.0
    np.subtract(q, x, out=out)
    out /= step
    out += 0.5
    return np.clip(out, 0.0, 1.0, out=out)


def batch_quantile_interval(
    prep: Prepared, p: float, est: float, level: float, bounds: IntArray
) -> tuple[float, float]:
    """Woodruff interval for quantile ``p`` with a batch-means variance: the share of samples at
    or below the estimate is averaged per batch, its standard error is ``sd(batch shares) /
    sqrt(b)``, and ``p -+ t_{b-1} * se`` is mapped back through the (grouped) quantile
    function. The shares are summed a cache's worth at a time (``_common.sums_of``: the
    sums of an array of them all)."""
    b = bounds.size - 1
    x, step = prep.x, prep.step
    sums = sums_of(lambda i, j, out: grouped_cdf_share(x[i:j], est, step, out), bounds)
    se = _se_of_means(sums / np.diff(bounds).astype(np.float64), bounds)
    h = t_ppf(0.5 + level / 2.0, b - 1) * se
    lo_p, hi_p = max(0.0, p - h), min(1.0, p + h)
    return prep.quantile(lo_p), prep.quantile(hi_p)


def _batch_se(values: FloatArray, bounds: IntArray) -> float:
    """Standard error of the mean of ``values`` from the batches ``[bounds[j], bounds[j+1])``,
    taken as independent units (`_se_of_means` of their means)."""
    lens = np.diff(bounds).astype(np.float64)
    return _se_of_means(np.add.reduceat(values, bounds[:-1]) / lens, bounds)


def _se_of_means(means: FloatArray, bounds: IntArray) -> float:
    """Standard error of the mean of values whose batches ``[bounds[j], bounds[j+1])`` have
    the means ``means``, taken as independent units: ``sqrt(c * sum_j w_j^2 (m_j - m)^2)``
    with ``w_j`` the batch's share of the samples, ``m_j`` its mean and ``m`` the overall mean
    (the ratio estimator of cluster sampling), and ``c = S2 / (S2 - 2 S3 + S2^2)``, ``Sk =
    sum_j w_j^k``, what makes it unbiased when the batch means are independent draws of one
    variance: ``b / (b - 1)`` for equal batches (then it is ``sd(batch means) / sqrt(b)``),
    more for the unequal stretches between level shifts, where ``b / (b - 1)`` fell short
    (the p90 and p95 of a regime-switching process at n = 5,000 covered 92.3%; now
    93.5-93.8%)."""
    lens = np.diff(bounds).astype(np.float64)
    w = lens / lens.sum()
    m = float(np.sum(w * means))
    s2, s3 = float(np.sum(w**2)), float(np.sum(w**3))
    unbiased = s2 / max(s2 - 2.0 * s3 + s2 * s2, 1e-300)
    return math.sqrt(unbiased * float(np.sum(w**2 * (means - m) ** 2)))


def quantisation_margin(xs: FloatArray, est: float, step: float | None) -> float:
    """How far the grouped estimate ``est`` may sit from the truth because it assumes the samples
    of one value spread evenly over its step (see the module docstring). 0 without a step."""
    if step is None:
        return 0.0
    n = xs.size
    i = int(np.searchsorted(xs, est))
    cands = [xs[j] for j in (i - 1, i) if 0 <= j < n]
    v = float(min(cands, key=lambda c: abs(c - est)))
    cuts = np.searchsorted(xs, v + step * np.array([-1.5, -0.5, 0.5, 1.5]))
    c_minus, c0, c_plus = (float(c) for c in np.diff(cuts))
    if c0 <= 0.0 or min(c_minus, c_plus) < RESOLVED_NEIGHBOUR_SHARE * c0:
        return 0.5 * step
    slope = abs(c_plus - c_minus) / 16.0
    curvature = abs(c_plus + c_minus - 2.0 * c0) / 32.0
    return min(0.5 * step, step * (slope + curvature) / c0)


def widen_for_step(
    xs: FloatArray, est: float, low: float, high: float, step: float | None
) -> tuple[float, float, str]:
    """``[low - m, high + m]`` with ``m = quantisation_margin``; and a note for the method."""
    m = quantisation_margin(xs, est, step)
    if step is None or m <= 0.0:
        return low, high, ""
    # durations (no negative sample) are never negative: the widened interval stops at 0
    floor = 0.0 if xs.size and xs[0] >= 0.0 else -math.inf
    lo_w = max(low - m, floor)
    if m >= 0.5 * step - 1e-12:
        return lo_w, high + m, "; widened by half a clock step each side (step unresolved)"
    if m < 0.05 * step:
        return lo_w, high + m, ""
    return lo_w, high + m, f"; widened by {m:.2g} ns each side (even spread within the step)"


def _batch_means_mean(
    prep: Prepared, bounds: IntArray, level: float, units: str | None = None
) -> tuple[float, float, str]:
    b = bounds.size - 1
    se = _batch_se(prep.x, bounds)
    tq = t_ppf(0.5 + level / 2.0, b - 1)
    m = float(prep.x.mean())
    ell = prep.n // b
    units = units or f"{b} batches of {ell:,}"
    return m - tq * se, m + tq * se, f"batch means, {units} (t, {b - 1} df)"


# --- public entry point ---------------------------------------------------------------------


def confidence_intervals(
    x: npt.ArrayLike | Prepared,
    *,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    dep: Dependence | None = None,
    n_boot: int = N_BOOT,
    percentiles: tuple[tuple[str, float], ...] = HEADLINE,
    step: float | None = None,
    shifts: Sequence[int] | None = None,
) -> Intervals:
    """Confidence intervals for the median, the ``percentiles`` (name, probability in 0..1;
    default p90, p95, p99, p99.9) and the mean of ``x`` (ns).

    ``dep`` is the column's ``Dependence``, ``shifts`` the iterations where its level moves
    (``drift``'s change points; both computed when not given). The method is chosen by the
    independence rule documented in ``dependence.py``; see the module docstring."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    prep = as_prepared(x, step=step)
    n = prep.n
    if dep is None:
        dep = dependence(prep)
    rng = np.random.default_rng(seed)
    xs = prep.sorted
    mean = float(prep.x.mean())
    ess = dep.ess
    names = (("median", 0.5),) + tuple(percentiles)

    if n < MIN_SAMPLES:
        why = f"only {n} samples; at least {MIN_SAMPLES} are needed for an interval"
        ivs = [
            Interval(nm, prep.quantile(p), None, None, level, "none", ess, None, why)
            for nm, p in names
        ]
        mean_iv = Interval("mean", mean, None, None, level, "none", ess, None, why)
        return Intervals(
            ivs[0], mean_iv, tuple(ivs[1:]), level, dep.independent, None, None, ess, dep.rule, seed
        )

    step = prep.step
    estimates = {nm: prep.quantile(p) for nm, p in names}
    beyond = {nm: count_beyond(xs, estimates[nm], percentile_side(100 * p)) for nm, p in names}
    # The tail rule is for tail percentiles; the median only needs its order statistics.
    enough = {nm: nm == "median" or beyond[nm] >= MIN_BEYOND for nm, _ in names}
    usable = [(nm, p) for nm, p in names if enough[nm]]

    results: dict[str, Interval] = {}
    for nm, p in names:
        if not enough[nm]:
            why = too_few_beyond(nm, p, beyond[nm], percentile_side(100 * p))
            results[nm] = Interval(
                nm, estimates[nm], None, None, level, "none", ess, beyond[nm], why
            )

    block_length: int | None = None
    n_blocks: int | None = None
    shifted: tuple[int, ...] = ()
    if dep.independent:
        for nm, p in usable:
            low, high, cov = order_statistic_interval(xs, p, level, step)
            reason = None
            method = f"order statistics (exact binomial, coverage {cov:.3f})"
            if step is not None:
                method = (
                    f"order statistics, grouped within the {step:.4g} ns step "
                    f"(binomial coverage {cov:.3f})"
                )
            if low is None or high is None:
                reason = "too few samples for an order-statistic interval at this level"
                low = high = None
                method = "order statistics"
            else:
                low, high, note = widen_for_step(xs, estimates[nm], low, high, step)
                method += note
            results[nm] = Interval(
                nm,
                estimates[nm],
                low,
                high,
                level,
                method,
                ess,
                beyond[nm],
                reason,
            )
        m_low, m_high, m_method = _boot_t_mean(prep, level, n_boot, rng)
        mean_iv = Interval("mean", mean, m_low, m_high, level, m_method, ess, None, None)
    else:
        ell, nb, caveat = batch_plan(n, dep)
        bounds = _batch_bounds(n, nb)
        units = f"{nb} batches of {ell:,}"
        if shifts is None:  # drift's change points: where the run's level moved
            shifts = drift(prep).shifts
        cuts = sorted({int(c) for c in shifts if 0 < int(c) < n})
        if cuts:
            # the level moved: the stretches between its shifts are the batches
            bounds = np.array([0, *cuts, n], dtype=np.int64)
            nb = bounds.size - 1
            ell = n // nb
            shifted = tuple(cuts)
            units = f"{nb} stretches between level shifts"
            caveat = None
            if nb < MIN_TRUSTED_STRETCHES:
                caveat = (
                    f"the level shifted {nb - 1} time{'s' if nb > 2 else ''} during the run, "
                    f"and the interval can only treat the {nb} stretches between the shifts as "
                    "its independent units: a run that saw few of the levels may still miss the "
                    "long-run median; measure more iterations"
                )
        block_length, n_blocks = ell, nb
        grouped = f", grouped within the {step:.4g} ns step" if step is not None else ""
        for nm, p in usable:
            low, high = batch_quantile_interval(prep, p, estimates[nm], level, bounds)
            low, high, note = widen_for_step(xs, estimates[nm], low, high, step)
            method = f"batch shares, {units} (Woodruff, t with {nb - 1} df{grouped})" + note
            results[nm] = Interval(
                nm, estimates[nm], low, high, level, method, ess, beyond[nm], caveat
            )
        m_low, m_high, m_method = _batch_means_mean(prep, bounds, level, units)
        mean_iv = Interval("mean", mean, m_low, m_high, level, m_method, ess, None, caveat)

    results = respect_the_data(prep, results, names)
    mean_iv = mean_floor(prep, mean_iv, results, names)

    return Intervals(
        median=results["median"],
        mean=mean_iv,
        percentiles=tuple(results[nm] for nm, _ in percentiles),
        level=level,
        independent=dep.independent,
        block_length=block_length,
        n_blocks=n_blocks,
        ess=ess,
        rule=dep.rule,
        seed=seed,
        level_shifts=shifted,
    )
