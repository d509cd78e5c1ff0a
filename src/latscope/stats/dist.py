"""The few distributions, tests and estimators the analysis uses, without ``scipy.stats``.

Importing ``scipy.stats`` takes about a second (it builds the documentation of a hundred
distributions at import), more than everything `latscope run` computes; ``scipy.signal``
imports it too. These are the formulas scipy.stats itself evaluates, on the same
``scipy.special`` functions (Student's t, the normal, chi-squared, F and binomial
distributions), and short numpy versions of the estimators the analysis needs: average ranks,
the Mann-Whitney U test, a Gaussian kernel density (Scott's rule by default), peaks with their
prominence, the Theil–Sen slope with Sen's interval, the Kolmogorov–Smirnov and
Anderson–Darling statistics.
`tests/test_stats_dist.py` holds each to scipy.stats's answer on random inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import special

from ._common import FloatArray, median


def t_ppf(q: float, df: float) -> float:
    """Student's t quantile (``scipy.stats.t.ppf``)."""
    return float(special.stdtrit(df, q))


def norm_ppf(q: float | FloatArray) -> float | FloatArray:
    """The standard normal quantile (``scipy.stats.norm.ppf``)."""
    return special.ndtri(q)  # type: ignore[no-any-return]


def norm_cdf(x: float | FloatArray) -> float | FloatArray:
    """The standard normal distribution function (``scipy.stats.norm.cdf``)."""
    return special.ndtr(x)  # type: ignore[no-any-return]


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for chi-squared with ``df`` degrees of freedom (``scipy.stats.chi2.sf``)."""
    return float(special.chdtrc(df, x))


def f_sf(x: float, dfn: float, dfd: float) -> float:
    """P(X > x) for Fisher's F (``scipy.stats.f.sf``)."""
    return float(special.fdtrc(dfn, dfd, x))


def _binom(name: str) -> Callable[..., FloatArray]:
    """scipy's own binomial ufunc (the one scipy.stats.binom calls), else scipy.stats's."""
    try:
        from scipy.special import _ufuncs

        return getattr(_ufuncs, f"_binom_{name}")  # type: ignore[no-any-return]
    except (ImportError, AttributeError):  # another scipy: its scipy.stats, once
        from scipy import stats

        return getattr(stats.binom, name)  # type: ignore[no-any-return]


def binom_cdf(k: float | FloatArray, n: float | FloatArray, p: float | FloatArray) -> FloatArray:
    """P(X <= k), X binomial(n, p) (``scipy.stats.binom.cdf``)."""
    k, n, p = np.broadcast_arrays(np.floor(k), n, p)
    out = np.where(k < 0, 0.0, np.where(k >= n, 1.0, 0.0))
    mid = (k >= 0) & (k < n)
    out[mid] = _binom("cdf")(k[mid], n[mid], p[mid])
    return out


def binom_sf(k: float | FloatArray, n: float | FloatArray, p: float | FloatArray) -> FloatArray:
    """P(X > k), X binomial(n, p) (``scipy.stats.binom.sf``)."""
    k, n, p = np.broadcast_arrays(np.floor(k), n, p)
    out = np.where(k < 0, 1.0, 0.0)
    mid = (k >= 0) & (k < n)
    out[mid] = _binom("sf")(k[mid], n[mid], p[mid])
    return out


def binom_sf1(k: int, n: int, p: float) -> float:
    """`binom_sf` of one ``k``, ``n`` and ``p``: the same number, without its arrays (the comb
    test takes thousands of single tails)."""
    k = math.floor(k)
    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    return float(_binom("sf")(float(k), float(n), float(p)))


def binom_ppf(q: float, n: int, p: float) -> int:
    """The smallest k with P(X <= k) >= q, X binomial(n, p) (``scipy.stats.binom.ppf``:
    -1 for q = 0, n for q = 1)."""
    if q <= 0.0:
        return -1
    if q >= 1.0:
        return int(n)
    return int(min(max(_binom("ppf")(q, n, p), 0.0), n))


def rankdata(a: FloatArray) -> FloatArray:
    """Ranks 1..n, ties given their average rank (``scipy.stats.rankdata``)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    order = np.argsort(a, kind="mergesort")
    s = a[order]
    new = np.concatenate(([True], s[1:] != s[:-1]))
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], a.size)
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    out = np.empty(a.size, dtype=np.float64)
    out[order] = avg[group]
    return out


def mannwhitneyu_p(a: FloatArray, b: FloatArray) -> float:
    """The two-sided p-value of the Mann-Whitney U test (``scipy.stats.mannwhitneyu``'s
    default): the larger U against the normal approximation, with its tie and continuity
    corrections; where one sample has at most 8 values and none is tied, scipy's exact
    distribution (then scipy.stats is imported)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    n1, n2 = a.size, b.size
    xy = np.concatenate([a, b])
    ties = np.unique(xy, return_counts=True)[1].astype(np.float64)
    if min(n1, n2) <= 8 and not (ties > 1).any():
        from scipy import stats  # the exact distribution of small samples: rare here

        return float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    u1 = float(rankdata(xy)[:n1].sum()) - n1 * (n1 + 1) / 2.0
    u = max(u1, n1 * n2 - u1)
    n = n1 + n2
    tie_term = float(np.sum(ties**3 - ties))
    sd = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.float64(u - n1 * n2 / 2.0 - 0.5) / np.float64(sd)
    return float(np.clip(2.0 * special.ndtr(-z), 0.0, 1.0))


def gaussian_kde(
    data: FloatArray, factor: float | None = None
) -> Callable[[FloatArray], FloatArray]:
    """A one-dimensional Gaussian kernel density of ``data``: bandwidth ``factor`` times the
    data's standard deviation (ddof 1), Scott's n^-1/5 when None (``scipy.stats.gaussian_kde``
    with ``bw_method=factor``). Returns the density as a function of points."""
    x = np.asarray(data, dtype=np.float64).ravel()
    f = x.size ** (-0.2) if factor is None else float(factor)
    var = float(np.var(x, ddof=1)) * f * f
    norm = 1.0 / (x.size * math.sqrt(2.0 * math.pi * var))

    def density(points: FloatArray) -> FloatArray:
        pts = np.asarray(points, dtype=np.float64).ravel()
        out = np.empty(pts.size, dtype=np.float64)
        # points x samples a cache's worth at a time (1 MiB: each row's sum is the same)
        chunk = max(1, 2**17 // max(x.size, 1))
        for i in range(0, pts.size, chunk):
            d = pts[i : i + chunk, None] - x[None, :]
            out[i : i + chunk] = np.exp(-0.5 * d * d / var).sum(axis=1)
        return out * norm

    return density


def find_peaks(x: FloatArray, prominence: float) -> tuple[np.ndarray, FloatArray]:
    """The local maxima of ``x`` (a plateau's middle sample, as scipy.signal.find_peaks
    takes it) whose prominence is at least ``prominence``, and their prominences: the
    height of a peak above the higher of the lowest points between it and a higher sample
    (or the edge) on each side."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    peaks: list[int] = []
    i = 1
    while i < n - 1:
        if x[i - 1] < x[i]:
            ahead = i + 1
            while ahead < n - 1 and x[ahead] == x[i]:
                ahead += 1
            if x[ahead] < x[i]:
                peaks.append((i + ahead - 1) // 2)
                i = ahead
        i += 1
    kept, proms = [], []
    for pk in peaks:
        h = x[pk]
        j, left = pk, h
        while j >= 0 and x[j] <= h:
            left = min(left, x[j])
            j -= 1
        j, right = pk, h
        while j < n and x[j] <= h:
            right = min(right, x[j])
            j += 1
        prom = h - max(left, right)
        if prom >= prominence:
            kept.append(pk)
            proms.append(prom)
    return np.array(kept, dtype=np.int64), np.array(proms, dtype=np.float64)


def _repeats(v: FloatArray) -> list[int]:
    _, counts = np.unique(v, return_counts=True)
    return [int(c) for c in counts if c > 1]


class TheilSen(NamedTuple):
    slope: float
    intercept: float  # median(y) - slope * median(x)
    low_slope: float
    high_slope: float


def theil_sen(y: FloatArray, x: FloatArray, confidence: float = 0.95) -> TheilSen:
    """Theil–Sen slope of y against x with Sen's (1968) interval at ``confidence``
    (``scipy.stats.theilslopes``, its intercept the median of y less the slope times the
    median of x)."""
    y = np.asarray(y, dtype=np.float64).ravel()
    x = np.asarray(x, dtype=np.float64).ravel()
    dx = x[:, None] - x
    dy = y[:, None] - y
    pos = dx > 0
    slopes = np.sort(dy[pos] / dx[pos])
    if not slopes.size:
        return TheilSen(math.nan, math.nan, math.nan, math.nan)
    med = median(slopes)
    inter = float(median(y) - med * median(x))
    alpha = 1.0 - confidence if confidence > 0.5 else confidence
    z = float(special.ndtri(alpha / 2.0))
    ny, nt = y.size, slopes.size
    sigsq = (
        ny * (ny - 1) * (2 * ny + 5)
        - sum(k * (k - 1) * (2 * k + 5) for k in _repeats(x))
        - sum(k * (k - 1) * (2 * k + 5) for k in _repeats(y))
    ) / 18.0
    if not sigsq >= 0:
        return TheilSen(med, inter, math.nan, math.nan)
    sigma = math.sqrt(sigsq)
    hi_i = min(int(np.round((nt - z * sigma) / 2.0)), nt - 1)
    lo_i = max(int(np.round((nt + z * sigma) / 2.0)) - 1, 0)
    try:
        return TheilSen(med, inter, float(slopes[lo_i]), float(slopes[hi_i]))
    except IndexError:
        return TheilSen(med, inter, math.nan, math.nan)


def lognorm_cdf(x: FloatArray, sigma: float, loc: float, scale: float) -> FloatArray:
    """The shifted log-normal's distribution function (``scipy.stats.lognorm.cdf``)."""
    z = np.asarray(x, dtype=np.float64) - loc
    out = np.zeros(z.shape)
    pos = z > 0
    out[pos] = special.ndtr(np.log(z[pos] / scale) / sigma)
    return out


def lognorm_ppf(q: FloatArray, sigma: float, loc: float, scale: float) -> FloatArray:
    """The shifted log-normal's quantiles (``scipy.stats.lognorm.ppf``)."""
    return loc + scale * np.exp(sigma * special.ndtri(np.asarray(q, dtype=np.float64)))


def lognorm_pdf(x: FloatArray, sigma: float, loc: float, scale: float) -> FloatArray:
    """The shifted log-normal's density (``scipy.stats.lognorm.pdf``)."""
    z = np.asarray(x, dtype=np.float64) - loc
    out = np.zeros(z.shape)
    pos = z > 0
    u = np.log(z[pos] / scale) / sigma
    out[pos] = np.exp(-0.5 * u * u) / (sigma * z[pos] * math.sqrt(2.0 * math.pi))
    return out


def ks_statistic(v: FloatArray, cdf: Callable[[FloatArray], FloatArray]) -> float:
    """The two-sided Kolmogorov–Smirnov distance between the sample ``v`` and ``cdf``
    (``scipy.stats.kstest(v, cdf).statistic``)."""
    s = np.sort(np.asarray(v, dtype=np.float64))
    n = s.size
    c = cdf(s)
    d_plus = float(np.max(np.arange(1, n + 1) / n - c))
    d_minus = float(np.max(c - np.arange(n) / n))
    return max(d_plus, d_minus)


def anderson_normal(y: FloatArray) -> float:
    """The Anderson–Darling statistic of ``y`` against a normal of its own mean and
    standard deviation (ddof 1) (``scipy.stats.anderson(y, "norm").statistic``)."""
    s = np.sort(np.asarray(y, dtype=np.float64))
    n = s.size
    w = (s - s.mean()) / s.std(ddof=1)
    logcdf = special.log_ndtr(w)
    logsf = special.log_ndtr(-w)
    i = np.arange(1, n + 1)
    return float(-n - np.sum((2 * i - 1.0) / n * (logcdf + logsf[::-1])))
