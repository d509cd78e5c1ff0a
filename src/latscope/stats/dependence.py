"""Serial dependence of a latency column: ACF, Ljung–Box test, effective sample size, block length.

Consecutive latency samples are rarely independent: caches, frequency scaling, interrupts and
scheduler decisions last longer than one iteration. Standard confidence intervals assume
independence and are too narrow on such data, so latscope measures the dependence first.

Transform. Everything here is computed on the **normal scores** of the samples
(van der Waerden scores ``Phi^-1((midrank - 0.5) / n)``), not on the raw nanoseconds. Latency
data are heavy-tailed: on the raw scale, a handful of 100x spikes dominate every sum of squares
and the ACF mostly measures where the spikes are. Normal scores are invariant under any monotone
transform of the data, bounded in their influence, and for log-normal data they reproduce the
Gaussian series on the log scale, so an AR(1) with coefficient ``phi`` on the log scale shows an
ACF of ``phi**k``. Ties (coarse clocks) get mid-ranks, hence equal scores, so they cannot create
spurious correlation. The price is that dependence that lives only in the extreme tail (e.g.
clustered spikes) is understated here; ``outliers.py`` looks at spikes separately.

ACF. Computed with one real FFT of the whole series, zero-padded to at least ``n + max_lag``
(exact for the lags returned, no wrap-around), with the usual biased divisor ``n``. The reported
ACF goes up to ``max_lag`` (default ``min(100, n // 4)``); ESS and block length look further.

Ljung–Box. ``Q = n (n + 2) sum_{k=1..h} rho_k^2 / (n - k)`` with ``h = min(20, n // 5)``,
p-value from the chi-squared distribution with ``h`` degrees of freedom (``scipy.stats.chi2``).

Effective sample size. ``ESS = n / tau`` with the integrated autocorrelation time
``tau = 1 + 2 sum_k rho_k`` estimated by Geyer's (1992) initial monotone sequence estimator:
sums of adjacent pairs ``Gamma_m = rho_{2m} + rho_{2m+1}`` are accumulated until the first
non-positive pair, and forced to be non-increasing. ESS is the number of independent samples that
would carry the same information about the mean of the scores; for an AR(1) it is
``n (1 - phi) / (1 + phi)``. For anti-correlated series (``phi < 0``, or a strict alternation
of two levels) that formula exceeds ``n``; latscope caps the ESS at ``n`` (``tau >= 1``). An ESS
above ``n`` would promise more precision than independent samples give, which holds only for the
mean of a perfectly anti-correlated series and not for quantiles; and "ESS 665 of 500" reads as a
mistake. So ``ESS <= n`` always, and ``tau = n / ESS >= 1``.
The sequence may run over the first ``n // 4`` lags (one FFT gives them all), at most
``LONG_MAX_LAG`` (about four million) in a column of more than ``BLOCKWISE_MIN`` samples, whose ACF
is summed block by block (each ``BLOCK`` samples' spectrum once, its cross-spectrum with
itself and the next block accumulated: one transform of the whole column would need four
times the column's memory); if it has not ended there
(non-stationary data: a level shift keeps the ACF positive at all lags), ``tau_truncated`` is set
and the ESS is an upper bound. Either way a small ESS says the same
thing: the run does not average out its own variation.

Independence rule. The column is treated as independent when the Ljung–Box p-value is at least
``INDEPENDENCE_P`` (0.01) **and** ``ESS / n >= INDEPENDENCE_ESS_RATIO`` (0.5). With millions of
samples Ljung–Box detects even harmless correlations, and the dependence-aware intervals stay
valid for independent data, so erring towards "dependent" costs only a little width.

Block length. The Politis & White (2004) automatic block length for the circular block
bootstrap, with the correction of Patton, Politis & White (2009): flat-top lag window, bandwidth
``2 m`` where ``m`` is the smallest lag after which ``K_n = max(5, log10 n)`` consecutive
autocorrelations are insignificant (``|rho| < 2 sqrt(log10(n) / n)``). ``intervals.py`` uses it
as a lower bound of its batch length, ``compare.py`` for its block bootstrap.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt
import scipy.fft as sfft

from ._common import FloatArray, IntArray, Prepared, Result, as_prepared
from .dist import chi2_sf

#: Reported ACF lags: ``min(DEFAULT_MAX_LAG, n // 4)`` unless given.
DEFAULT_MAX_LAG = 100
#: Ljung–Box uses ``h = min(LJUNG_BOX_LAG, n // 5)`` lags.
LJUNG_BOX_LAG = 20
#: Independence requires a Ljung–Box p-value at least this large ...
INDEPENDENCE_P = 0.01
#: ... and ESS / n at least this large.
INDEPENDENCE_ESS_RATIO = 0.5
#: Columns of more samples than this have their ACF summed block by block (`_blockwise`).
BLOCKWISE_MIN = 2**24
#: ... over at most this many lags (Geyer's sequence: a longer one is truncated, and said so).
LONG_MAX_LAG = 2**22
#: ... in blocks of this many samples.
BLOCK = 2**22


@dataclasses.dataclass(frozen=True, eq=False)
class Dependence(Result):
    n: int
    acf: FloatArray  # autocorrelation of the normal scores at lags 0..max_lag
    lags: IntArray
    ljung_box_q: float | None
    ljung_box_p: float | None
    ljung_box_lag: int
    ess: float
    tau: float  # integrated autocorrelation time, n / ess
    tau_lags: int  # how many lags Geyer's sequence summed
    tau_truncated: bool  # Geyer's sequence still positive at the last lag: tau is a lower bound
    independent: bool
    block_length: float  # Politis-White circular-bootstrap block length (no floor applied)
    transform: str
    rule: str


def autocorrelation(z: npt.ArrayLike, max_lag: int) -> FloatArray:
    """ACF of ``z`` at lags ``0..max_lag`` by FFT (biased divisor ``n``, mean removed).

    A constant series returns 1 at lag 0 and 0 elsewhere."""
    return _autocorrelation([np.asarray(z, dtype=np.float64)], max_lag)


def _autocorrelation(held: list[np.ndarray], max_lag: int) -> FloatArray:
    """`autocorrelation` of the one array in ``held``, taken out of it: where the caller
    keeps no other reference, the series is freed once it is copied into the transform's
    input, before the transform's own arrays are made (the largest of a column's analysis)."""
    a = held.pop()
    n = a.size
    max_lag = int(max(0, min(max_lag, n - 1)))
    if n > BLOCKWISE_MIN and max_lag <= LONG_MAX_LAG:
        return _blockwise(a, max_lag)
    nfft = sfft.next_fast_len(n + max_lag, real=True)
    padded = np.zeros(nfft)  # the series less its mean, zero-padded in place (no copy of it)
    np.subtract(a, a.mean(), out=padded[:n])
    del a
    f = sfft.rfft(padded, nfft, workers=-1)
    del padded
    # the power spectrum in f's own memory, as complex numbers with no imaginary part: the
    # inverse transform takes them as they are (a real array would be copied to complex)
    re, im = f.real, f.imag
    np.square(re, out=re)
    np.square(im, out=im)
    re += im
    im[...] = 0.0
    del re, im
    acov = sfft.irfft(f, nfft, workers=-1)
    del f
    return _acf(acov[: max_lag + 1])


def _blockwise(a: np.ndarray, max_lag: int, block: int | None = None) -> FloatArray:
    """The ACF of ``a`` at lags ``0..max_lag`` (mean removed, divisor ``n``) summed over blocks
    of ``B = max(block, max_lag)`` samples (``block`` None: ``BLOCK``, read when called): each
    block's spectrum ``F_j`` (``2 B`` points, the block zero-padded) once, and the
    cross-spectrum of a block with itself and the next one (shifted by ``B``: a sign
    ``(-1)^f``) accumulated, ``S = sum_j conj(F_j) (F_j + (-1)^f F_{j+1})``; one inverse
    transform of ``S`` gives every sum ``z_i z_{i+k}`` with ``k <= B``, as one transform of
    the whole series would (to rounding), in the memory of a few blocks instead of four
    columns."""
    n = a.size
    mean = float(a.mean())
    b = max(BLOCK if block is None else block, max_lag, 1)
    nfft = 2 * b
    buf = np.zeros(nfft)

    def spectrum(start: int) -> np.ndarray:
        stop = min(n, start + b)
        buf[stop - start :] = 0.0
        np.subtract(a[start:stop], mean, out=buf[: stop - start])
        return sfft.rfft(buf, workers=-1)

    sign = np.ones(b + 1)
    sign[1::2] = -1.0
    total = np.zeros(b + 1, dtype=np.complex128)
    cur = spectrum(0)
    for start in range(0, n, b):
        both = cur.copy()
        if start + b < n:
            nxt = spectrum(start + b)
            both += sign * nxt
        else:
            nxt = None
        np.conjugate(cur, out=cur)
        both *= cur
        total += both
        del both
        cur = nxt  # type: ignore[assignment]
    return _acf(sfft.irfft(total, nfft, workers=-1)[: max_lag + 1])


def _acf(acov: np.ndarray) -> FloatArray:
    """Autocovariances as autocorrelations; a constant series (no variance): 1 at lag 0, 0
    elsewhere."""
    out = np.zeros(acov.size)
    out[0] = 1.0
    if acov[0] > 0.0:
        out[:] = acov / acov[0]
    return out


def geyer_tau(acf: FloatArray) -> tuple[float, int, bool]:
    """Integrated autocorrelation time by Geyer's initial monotone sequence estimator.

    Returns ``(tau, lags_used, terminated)``; ``terminated`` is False when the ACF given was too
    short for the sequence to reach a non-positive pair (then ``tau`` is a lower bound)."""
    m = acf.size // 2
    if m == 0:
        return 1.0, 0, False
    pairs = acf[: 2 * m : 2] + acf[1 : 2 * m : 2]
    nonpos = np.flatnonzero(pairs <= 0.0)
    terminated = nonpos.size > 0
    k = int(nonpos[0]) if terminated else m
    if k == 0:
        return 1.0, 1, True  # rho_1 <= -1: degenerate; treat as independent
    gam = np.minimum.accumulate(pairs[:k])
    tau = float(-1.0 + 2.0 * gam.sum())
    return tau, 2 * k, terminated


def politis_white_block_length(acf: FloatArray, n: int) -> float:
    """Politis–White (2004) / Patton–Politis–White (2009) optimal block length for the circular
    block bootstrap, computed from autocorrelations (the result is scale-free). ``acf`` must
    reach lag ``ceil(sqrt(n)) + max(5, log10 n)`` for the full rule; shorter is used as is."""
    if n < 8:
        return 1.0
    kn = max(5, int(math.ceil(math.log10(n))))
    m_max = min(int(math.ceil(math.sqrt(n))) + kn, acf.size - 1)
    b_max = math.ceil(min(3.0 * math.sqrt(n), n / 3.0))
    crit = 2.0 * math.sqrt(math.log10(n) / n)
    insignificant = np.abs(acf[1 : m_max + 1]) < crit  # index j <-> lag j + 1
    m_hat = m_max
    for m in range(0, max(0, m_max - kn) + 1):
        if insignificant[m : m + kn].all():
            m_hat = m
            break
    big_m = min(max(2 * m_hat, 1), m_max)
    if big_m < 1:
        return 1.0
    k = np.arange(1, big_m + 1)
    s = k / big_m
    lam = np.where(s <= 0.5, 1.0, 2.0 * (1.0 - s))
    rho = acf[1 : big_m + 1]
    g_sum = 2.0 * float(np.sum(lam * k * rho))
    g0 = 1.0 + 2.0 * float(np.sum(lam * rho))
    if g0 <= 0.0:
        return 1.0
    d_cb = 4.0 / 3.0 * g0**2
    b = (2.0 * g_sum**2 / d_cb) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    return float(min(max(b, 1.0), b_max))


def ljung_box(acf: FloatArray, n: int, h: int) -> tuple[float, float]:
    """Ljung–Box ``Q`` and p-value from autocorrelations at lags ``1..h``."""
    k = np.arange(1, h + 1)
    q = float(n * (n + 2) * np.sum(acf[1 : h + 1] ** 2 / (n - k)))
    return q, chi2_sf(q, h)


def _constant(prep: Prepared) -> bool:
    """Whether all samples are equal (from the sorted ones where they are made: no sort)."""
    xs = prep.__dict__.get("sorted")
    return bool(xs[0] == xs[-1]) if xs is not None else bool(prep.x.min() == prep.x.max())


def dependence(x: npt.ArrayLike | Prepared, *, max_lag: int | None = None) -> Dependence:
    """Measure serial dependence of latencies ``x`` (ns, iteration order) on normal scores."""
    prep = as_prepared(x)
    n = prep.n
    if max_lag is None:
        max_lag = min(DEFAULT_MAX_LAG, n // 4)
    max_lag = max(0, min(int(max_lag), n - 1))
    rule = f"independent if Ljung-Box p >= {INDEPENDENCE_P} and ESS/n >= {INDEPENDENCE_ESS_RATIO}"
    # The ranks and scores the caller had not made are freed before the transform (whose
    # arrays are the largest of a column's analysis), the scores once copied into it; the
    # sorted copy stays, for the stages after this one (one sort of the column in all), up to
    # `BLOCKWISE_MIN` samples.
    had = {k: k in prep.__dict__ for k in ("order", "normal_scores")}
    if n < 3 or _constant(prep):
        acf = np.zeros(max_lag + 1)
        acf[0] = 1.0
        return Dependence(
            n=n,
            acf=acf,
            lags=np.arange(max_lag + 1, dtype=np.int64),
            ljung_box_q=None,
            ljung_box_p=None,
            ljung_box_lag=0,
            ess=float(n),
            tau=1.0,
            tau_lags=0,
            tau_truncated=False,
            independent=True,
            block_length=1.0,
            transform="normal scores (mid-ranks)",
            rule=rule + " (too few distinct samples to test: treated as independent)",
        )

    held = [prep.normal_scores]
    for k in had:
        if not had[k]:
            prep.release(k)
    if prep is not x or n > BLOCKWISE_MIN:
        # made here: no later stage reads its sorted copy; or a column so long that its
        # copy, alive through the transform, would be the analysis's peak (a column more:
        # 0.8 GB at 10^8 samples): the stages after sort it again (2-4 s there)
        prep.release("sorted")
    pw_lags = int(math.ceil(math.sqrt(n))) + max(5, int(math.ceil(math.log10(n)))) + 1
    long_lags = min(n - 1, max(max_lag, pw_lags, LJUNG_BOX_LAG, n // 4))
    if n > BLOCKWISE_MIN:  # summed block by block (module docstring)
        long_lags = min(long_lags, max(max_lag, pw_lags, LONG_MAX_LAG))
    acf_long = _autocorrelation(held, long_lags)
    tau, tau_lags, done = geyer_tau(acf_long)
    # Anti-correlation (tau < 1) would give ESS > n: capped at n (see the module docstring).
    tau = max(tau, 1.0)
    ess = n / tau

    h = min(LJUNG_BOX_LAG, n // 5)
    q: float | None = None
    p: float | None = None
    if h >= 1:
        q, p = ljung_box(acf_long, n, h)
    independent = (p is None or p >= INDEPENDENCE_P) and ess / n >= INDEPENDENCE_ESS_RATIO
    return Dependence(
        n=n,
        acf=acf_long[: max_lag + 1].copy(),
        lags=np.arange(max_lag + 1, dtype=np.int64),
        ljung_box_q=q,
        ljung_box_p=p,
        ljung_box_lag=h,
        ess=float(ess),
        tau=float(tau),
        tau_lags=tau_lags,
        tau_truncated=not done,
        independent=bool(independent),
        block_length=politis_white_block_length(acf_long, n),
        transform="normal scores (mid-ranks)",
        rule=rule,
    )
