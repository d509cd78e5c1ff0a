"""Shape of the latency distribution: a shifted log-normal model and a count of its modes.

Shifted (three-parameter) log-normal. ``x = loc + exp(mu + sigma * Z)``: ``loc`` is the floor
that no call can beat (in ns), ``exp(mu)`` the typical excess over it (so the model median is
``loc + exp(mu)``), ``sigma`` the spread of the excess on the log scale. It is fitted by maximum
likelihood on a uniformly random subsample of at most ``FIT_MAX_POINTS`` (100,000) samples, by
profiling: for a fixed ``loc``, the MLE of ``mu`` and ``sigma`` are the mean and standard
deviation of ``log(x - loc)``, so only ``loc`` is searched numerically (a log-spaced grid of
``min(x) - loc`` plus the quantile-matching starting value
``loc0 = (q10 q90 - q50^2) / (q10 + q90 - 2 q50)``, then a bounded scalar refinement around the
best grid point). The likelihood of this model is unbounded as ``loc`` approaches ``min(x)``;
the search keeps to the interior local maximum and says so in ``note`` when the best fit sits at
an edge (shift not identified). ``loc`` is kept below the minimum of *all* samples.

``loc`` is a floor of positive latencies, so it is also kept at or above zero: when the minimum is
positive, ``loc`` is searched in ``[0, min(x))`` (the grid is cut at ``loc = 0``, which is added as
its last point). When the profile likelihood still rises at ``loc = 0``, that end is the
(constrained) maximum and the model is a plain two-parameter log-normal. A sample of a true
log-normal without shift lands there about half of the time, harmlessly; but a distribution that is
not a shifted log-normal at all can drag an unconstrained ``loc`` far below zero (two levels, 30% of
the samples near 5 µs and 70% near 15 µs: about -10 µs; -22.7 µs in a real run with two levels),
which is meaningless for a floor. So the likelihood is also profiled down to ``LOC_BELOW_ZERO_SPAN``
(10^4) spreads below zero, and when twice its gain over ``loc = 0`` exceeds ``LOC_BOUND_LR`` (10.83,
the chi-squared(1) 0.1% point) ``note`` says that the fit was held at zero and where the likelihood
wanted the floor. Held or not, the goodness of fit below is computed for the fit that is reported,
so a poor model stays visibly poor. When some samples are zero or negative (e.g. after subtracting
the timer overhead), there is no such bound: ``loc`` is only kept below ``min(x)``, and ``note``
says so.

Goodness of fit, on the same subsample: the Kolmogorov–Smirnov statistic ``D`` (the largest
vertical distance between the empirical and the fitted CDF, in probability) and the
Anderson–Darling statistic ``A^2`` of ``log(x - loc)`` against a normal (weights the tails). No
p-values: the parameters were estimated from the same data, and with 100,000 points any real
data set "fails"; read ``D`` as an effect size (below ~0.02 the model is good for plotting and
rough tail estimates, above ~0.05 it is not): ``fit_quality`` is "good" for
``D < GOOD_FIT_KS`` (0.02), "rough" up to ``POOR_FIT_KS`` (0.05) and "poor" above. The Q–Q
arrays (at most ``QQ_POINTS`` = 1000) pair fitted and empirical quantiles from *all* samples at
probabilities evenly spaced on the normal-score scale, so the tails get as many points as the
body.

Modes. A Gaussian KDE (``scipy.stats.gaussian_kde``) of ``log(x)`` on a random subsample of at
most ``KDE_MAX_POINTS`` (20,000), bandwidth by Silverman's robust rule
``0.9 min(sd, IQR / 1.34) m^(-1/5)`` so that far spikes do not widen the kernel, evaluated on
512 points between the 0.1 and 99.9 percentiles. A peak (``scipy.signal.find_peaks``) counts as
a mode when its prominence is at least ``MODE_MIN_PROMINENCE`` (5%) of the highest density and
its basin (the samples between the density minima that separate it from its neighbours) holds
at least ``MODE_MIN_MASS`` (3%) of the samples; smaller peaks are merged into a neighbour. The
mode locations are peaks of the density of ``log(x)``, i.e. what a histogram with logarithmic
bins shows (for a log-normal that is its median, not the mode of the linear-scale density). If
some samples are zero or negative (e.g. after subtracting the timer overhead), ``log(x - min(x)
+ delta)`` is used instead, with ``delta`` 1% of the IQR, and the mode locations are mapped
back to ns.

Quantised clocks. When the clock's step is known (``Prepared.step``), every sample is a multiple
of it and the raw values form a comb. Two rules keep the comb from being read as structure: the
KDE bandwidth is at least one step at the median (``step / median`` on the log scale; a Gaussian
kernel as wide as the comb's spacing leaves a ripple below 10^-7 of the density), and two peaks
closer than ``MODE_MIN_SEPARATION_STEPS`` (3) steps are one mode: the less prominent is merged
into its neighbour. Two levels one step apart (661 and 671 ns on a 10 ns clock) are rounding of
one level, not two code paths.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt
from scipy import special

from ._common import FloatArray, Prepared, Result, as_prepared, quantile_sorted, subsample
from .dist import (
    anderson_normal,
    find_peaks,
    gaussian_kde,
    ks_statistic,
    lognorm_cdf,
    lognorm_ppf,
)

FIT_MAX_POINTS = 100_000
KDE_MAX_POINTS = 20_000
QQ_POINTS = 1000
KDE_GRID_POINTS = 512
MODE_MIN_PROMINENCE = 0.05
MODE_MIN_MASS = 0.03
#: Peaks closer than this many clock steps are one mode (quantisation, not two code paths).
MODE_MIN_SEPARATION_STEPS = 3.0
#: Goodness of fit by the KS distance D: "good" below, "rough" up to POOR_FIT_KS, then "poor".
GOOD_FIT_KS = 0.02
POOR_FIT_KS = 0.05
#: A fit held at loc = 0 is noted when 2 x the log-likelihood gain of a negative shift exceeds
#: this (the chi-squared(1) 0.1% point) ...
LOC_BOUND_LR = 10.83
#: ... within this many times the data's spread below zero.
LOC_BELOW_ZERO_SPAN = 1e4


@dataclasses.dataclass(frozen=True, eq=False)
class LogNormalFit(Result):
    sigma: float
    mu: float  # log-scale location of the excess over loc (ln ns)
    loc: float  # shift, ns
    scale: float  # exp(mu), ns
    median: float  # loc + exp(mu), ns
    n_fit: int
    ks_statistic: float
    ad_statistic: float
    fit_quality: str  # "good" (D < 0.02), "rough" (D <= 0.05) or "poor"
    qq_probabilities: FloatArray
    qq_theoretical: FloatArray
    qq_sample: FloatArray
    method: str
    note: str | None


@dataclasses.dataclass(frozen=True, eq=False)
class Modes(Result):
    locations: FloatArray  # ns, ascending
    masses: FloatArray  # share of samples in each mode's basin
    prominences: FloatArray  # relative to the highest density
    multimodal: bool
    bandwidth_log: float
    n_kde: int
    grid: FloatArray  # ns, where the density was evaluated (log-spaced)
    density: FloatArray  # KDE density of the log-transformed samples on that grid
    method: str


@dataclasses.dataclass(frozen=True, eq=False)
class Distribution(Result):
    lognormal: LogNormalFit | None
    lognormal_reason: str | None
    modes: Modes | None
    modes_reason: str | None


def _few_distinct(xs: FloatArray) -> bool:
    """Whether sorted ``xs`` take fewer than 3 distinct values: none lies strictly between the
    smallest and the largest (two binary searches, not a pass over the column)."""
    return bool(
        np.searchsorted(xs, xs[0], side="right") >= np.searchsorted(xs, xs[-1], side="left")
    )


def _quality(ks: float) -> str:
    if ks < GOOD_FIT_KS:
        return "good"
    return "rough" if ks <= POOR_FIT_KS else "poor"


def _profile_loglik(v: FloatArray, loc: float) -> float:
    y = np.log(v - loc)
    s = float(np.std(y))
    if not s > 0.0:
        return -math.inf
    return float(-np.sum(y) - y.size * math.log(s))


def _note_at_zero(v: FloatArray, xmin: float, spread: float, ll_zero: float) -> str | None:
    """Note for a fit held at ``loc = 0``, if the likelihood really wants a negative shift: the
    best profile likelihood for ``loc`` in ``[-LOC_BELOW_ZERO_SPAN * spread, 0)`` gains more than
    ``LOC_BOUND_LR / 2`` over ``loc = 0`` (a likelihood-ratio test at about 0.1%)."""
    log_d = np.linspace(math.log(xmin), math.log(xmin + LOC_BELOW_ZERO_SPAN * spread), 40)
    ll = np.array([_profile_loglik(v, xmin - math.exp(t)) for t in log_d])
    i = int(np.argmax(ll))
    if 2.0 * (float(ll[i]) - ll_zero) <= LOC_BOUND_LR:
        return None
    if i == log_d.size - 1:
        want = "keeps rising as the floor goes below zero (the samples look nearly normal)"
    else:
        want = f"puts the floor at about {xmin - math.exp(float(log_d[i])):.4g} ns, below zero"
    return (
        f"loc held at 0: the likelihood {want}, and no latency can have a negative floor; the "
        "samples are not a shifted log-normal (see the goodness of fit)"
    )


def fit_shifted_lognormal(
    x: npt.ArrayLike | Prepared, *, seed: int = 0, max_points: int = FIT_MAX_POINTS
) -> LogNormalFit | None:
    """Fit ``x = loc + exp(mu + sigma Z)`` by profile maximum likelihood (see module docstring).

    Returns None when the samples take fewer than 3 distinct values."""
    prep = as_prepared(x)
    xs = prep.sorted
    if prep.n < 3 or _few_distinct(xs):
        return None
    rng = np.random.default_rng(seed)
    v = subsample(prep.x, max_points, rng)
    xmin = float(xs[0])
    q10, q50, q90 = (quantile_sorted(xs, p) for p in (0.1, 0.5, 0.9))
    spread = max(q50 - xmin, q90 - q10, 1e-9 * max(abs(q50), 1.0))
    if spread <= 0.0:
        return None

    # Search over d = xmin - loc > 0 on a log grid, plus the quantile-matching start. Latencies
    # are positive, so with a positive minimum the shift is kept in [0, xmin): d <= xmin.
    bounded = xmin > 0.0
    d_lo, d_hi = spread * 1e-5, spread * 1e4
    at_zero = bounded and d_hi >= xmin  # the grid ends at loc = 0
    if at_zero:
        d_lo = min(d_lo, 1e-3 * xmin)
    log_d = np.linspace(math.log(d_lo), math.log(d_hi), 90)
    if at_zero:  # the same grid up to xmin (loc = 0), which is added
        log_d = np.append(log_d[log_d < math.log(xmin)], math.log(xmin))
        d_hi = xmin
    denom = q10 + q90 - 2.0 * q50
    if denom > 0.0:
        loc0 = (q10 * q90 - q50 * q50) / denom
        if loc0 < xmin and d_lo < xmin - loc0 < d_hi:
            log_d = np.sort(np.append(log_d, math.log(xmin - loc0)))
    ll = np.array([_profile_loglik(v, xmin - math.exp(t)) for t in log_d])
    # Interior local maxima; the singular edge d -> 0 is never one by construction. With the
    # grid ending at loc = 0, that end is a (constrained) maximum when the likelihood still
    # rises towards it.
    interior = [i for i in range(1, log_d.size - 1) if ll[i] >= ll[i - 1] and ll[i] >= ll[i + 1]]
    last = log_d.size - 1
    if at_zero and ll[last] >= ll[last - 1]:
        interior.append(last)
    note = None
    if interior:
        best = max(interior, key=lambda i: ll[i])
        hi = log_d[best + 1] if best < last else log_d[best]
        from scipy import optimize  # here: importing it costs more memory than a big run's column

        res = optimize.minimize_scalar(
            lambda t: -_profile_loglik(v, xmin - math.exp(t)),
            bounds=(log_d[best - 1], hi),
            method="bounded",
            options={"xatol": 1e-6},
        )
        t_best = float(res.x) if -res.fun >= ll[best] else float(log_d[best])
        if best == last:
            note = _note_at_zero(v, xmin, spread, float(ll[best]))
    else:
        best = int(np.argmax(ll))
        t_best = float(log_d[best])
        where = "minimum of the data" if best == 0 else "far below the data (nearly normal)"
        note = f"shift not identified: the best fit puts loc at the edge of its range ({where})"
    if not bounded:
        unbounded = "some samples are <= 0, so loc is not held >= 0"
        note = unbounded if note is None else f"{note}; {unbounded}"
    loc = max(0.0, xmin - math.exp(t_best)) if bounded else xmin - math.exp(t_best)
    y = np.log(v - loc)
    mu, sigma = float(np.mean(y)), float(np.std(y))
    scale = math.exp(mu)
    ks = ks_statistic(v, lambda s: lognorm_cdf(s, sigma, loc, scale))
    ad = anderson_normal(y)

    n = prep.n
    if n <= QQ_POINTS:
        probs = (np.arange(n) + 0.5) / n
        sample_q = xs.copy()
    else:
        z = np.linspace(special.ndtri(0.5 / n), special.ndtri(1.0 - 0.5 / n), QQ_POINTS)
        probs = special.ndtr(z)
        idx = np.clip(np.rint(probs * n - 0.5).astype(np.int64), 0, n - 1)
        sample_q = xs[idx]
    theo_q = lognorm_ppf(probs, sigma, loc, scale)
    method = (
        f"profile maximum likelihood on {v.size:,} of {n:,} samples; "
        "KS D and Anderson-Darling A^2 of log(x - loc), no p-values (parameters estimated)"
    )
    return LogNormalFit(
        sigma=sigma,
        mu=mu,
        loc=loc,
        scale=scale,
        median=loc + scale,
        n_fit=int(v.size),
        ks_statistic=ks,
        ad_statistic=ad,
        fit_quality=_quality(ks),
        qq_probabilities=probs,
        qq_theoretical=theo_q,
        qq_sample=sample_q,
        method=method,
        note=note,
    )


def _basins(dens: FloatArray, peaks: list[int]) -> list[tuple[int, int]]:
    """Grid-index ranges [lo, hi) of each peak's basin, split at the density minimum between
    neighbouring peaks."""
    cuts = [0]
    for a, b in zip(peaks[:-1], peaks[1:], strict=True):
        cuts.append(a + int(np.argmin(dens[a : b + 1])))
    cuts.append(dens.size)
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def find_modes(
    x: npt.ArrayLike | Prepared, *, seed: int = 0, max_points: int = KDE_MAX_POINTS
) -> Modes | None:
    """Modes of the distribution of ``log(x)`` (see module docstring). None when the samples
    take fewer than 3 distinct values."""
    prep = as_prepared(x)
    xs = prep.sorted
    if prep.n < 3 or _few_distinct(xs):
        return None
    rng = np.random.default_rng(seed)
    v = np.sort(subsample(prep.x, max_points, rng))
    shift = 0.0
    if xs[0] <= 0.0:
        iqr = quantile_sorted(xs, 0.75) - quantile_sorted(xs, 0.25)
        delta = 0.01 * iqr if iqr > 0 else 0.01 * (float(xs[-1]) - float(xs[0]))
        shift = -float(xs[0]) + delta
    lv = np.log(v + shift)
    m = lv.size
    sd = float(np.std(lv, ddof=1))
    iqr_l = quantile_sorted(lv, 0.75) - quantile_sorted(lv, 0.25)
    spread = min(sd, iqr_l / 1.34) if iqr_l > 0 else sd
    if not spread > 0.0:
        return None
    bw = 0.9 * spread * m ** (-0.2)
    step = prep.step
    floor_note = ""
    if step is not None:
        bw_floor = step / max(quantile_sorted(v, 0.5) + shift, 1e-300)
        if bw < bw_floor:
            bw = bw_floor
            floor_note = ", raised to one clock step"
    kde = gaussian_kde(lv, bw / sd)
    lo = quantile_sorted(lv, 0.001) - 3.0 * bw
    hi = quantile_sorted(lv, 0.999) + 3.0 * bw
    grid = np.linspace(lo, hi, KDE_GRID_POINTS)
    dens = kde(grid)
    top = float(dens.max())
    found, prominences = find_peaks(dens, MODE_MIN_PROMINENCE * top)
    prom = {int(p): float(q) / top for p, q in zip(found, prominences, strict=True)}
    peaks = [int(p) for p in found] or [int(np.argmax(dens))]
    prom.setdefault(peaks[0], 1.0)
    if step is not None:
        min_sep = MODE_MIN_SEPARATION_STEPS * step
        while len(peaks) >= 2:
            locs = np.exp(grid[peaks]) - shift
            gaps = np.diff(locs)
            i = int(np.argmin(gaps))
            if gaps[i] >= min_sep:
                break
            a, b = peaks[i], peaks[i + 1]
            peaks.remove(a if prom.get(a, 0.0) < prom.get(b, 0.0) else b)
    while True:
        basins = _basins(dens, peaks)
        edges = [grid[a] if a > 0 else -math.inf for a, _ in basins]
        counts = np.diff(np.searchsorted(lv, np.append(edges, math.inf)))
        masses = counts / m
        if len(peaks) == 1 or masses.min() >= MODE_MIN_MASS:
            break
        peaks.pop(int(np.argmin(masses)))
    locations = np.exp(grid[peaks]) - shift
    return Modes(
        locations=locations,
        masses=np.asarray(masses, dtype=np.float64),
        prominences=np.array([prom.get(p, 0.0) for p in peaks]),
        multimodal=len(peaks) >= 2,
        bandwidth_log=bw,
        n_kde=m,
        grid=np.exp(grid) - shift,
        density=dens,
        method=(
            f"Gaussian KDE of log(x) on {m:,} samples (Silverman robust bandwidth {bw:.3g}"
            f"{floor_note}); modes need prominence >= {MODE_MIN_PROMINENCE:.0%} of the top and "
            f">= {MODE_MIN_MASS:.0%} of the samples"
            + (
                f", and lie at least {MODE_MIN_SEPARATION_STEPS:g} clock steps apart"
                if step is not None
                else ""
            )
        ),
    )


def describe_distribution(x: npt.ArrayLike | Prepared, *, seed: int = 0) -> Distribution:
    """Shifted log-normal fit and modes of ``x`` (ns)."""
    prep = as_prepared(x)
    fit = fit_shifted_lognormal(prep, seed=seed)
    modes = find_modes(prep, seed=seed)
    why = "fewer than 3 distinct values" if fit is None else None
    return Distribution(
        lognormal=fit,
        lognormal_reason=why,
        modes=modes,
        modes_reason="fewer than 3 distinct values" if modes is None else None,
    )
