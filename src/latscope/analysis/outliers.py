"""Outliers and spikes: classified and located, never dropped.

Tukey fences. With quartiles ``Q1``, ``Q3`` (numpy "linear") and ``IQR = Q3 - Q1``: *mild*
outliers lie between the inner fence (``Q1 - 1.5 IQR`` / ``Q3 + 1.5 IQR``) and the outer fence
(``Q1 - 3 IQR`` / ``Q3 + 3 IQR``), *extreme* ones beyond the outer fence; the classes do not
overlap (like criterion.rs' mild/severe). Counted for the low and the high side. Latency
distributions are right-skewed, so "high mild" outliers are expected in healthy data: they are
reported, not warned about.

Spikes. A sample is a spike when ``x > median + k * 1.4826 * MAD`` with ``k = SPIKE_K = 5``:
1.4826 MAD estimates the standard deviation of the body of the distribution without being
inflated by the spikes themselves, and ``k = 5`` puts the threshold where a normal body would
exceed it once in 3.5 million samples; a log-normal body with sigma 0.5 still exceeds it in
about 0.7% of the samples, so spikes are "unusually slow", not "certainly disturbed". If the MAD is
zero (a coarse clock: more than half the samples equal), the scale falls back to ``IQR / 1.349``
and then to the smallest gap between distinct values. The indices of all spikes are kept.

Periodicity of spikes. Recurring spikes (timer interrupts, a daemon waking up, a periodic flush)
are found from the spike indicator series ``s_t = 1{t is a spike}``:

1. Its periodogram (one real FFT of length n). A period is a *line* in this spectrum; spikes
   at random but clustered positions (one disturbance hitting several consecutive iterations,
   bursts) have a *continuous* spectrum that is far from flat, and the textbook chi-squared
   calibration (which assumes Bernoulli noise) then finds "periods" often (in 41% of simulated
   runs whose spikes came in pairs, at p < 0.001). So every
   ordinate is divided by the local background level: the mean of its block of
   ``BACKGROUND_BINS`` = 256 bins, interpolated between block centres. For a smooth background
   the ratio follows an F(2, 2W) distribution (W bins per block), which accounts for the noise
   of the background estimate itself. The strongest ratio between ``MIN_CYCLES / n`` (at least
   10 periods in the run) and 1/2 (period 2) gives the candidate frequency ``f*``.
2. ``f*`` may be a harmonic of the true frequency (a regular comb of spikes has power at every
   multiple of ``1/P``), so ``f*/h`` for ``h = 8 .. 2`` is checked, largest period first: the
   first whose normalised power is significant at ``0.001 / 8`` becomes the candidate.
3. The frequency is refined on a fine grid within one periodogram bin, maximising the
   ``Z^2_2`` statistic of the spike phases ``phi_j = 2 pi f t_j`` (Buccheri et al. 1983:
   ``Z^2_m = (2 / M) sum_{h=1..m} |sum_j exp(i h phi_j)|^2``), each harmonic's term divided by
   the background at its frequency; ``Z^2_2 / 4`` is then approximately F(4, 2W). Spike
   positions are integers, so a harmonic above 1/2 aliases; it is folded back, and skipped
   (with one degree of freedom pair less) when it folds onto DC, as the 2nd harmonic of period 2
   does.
4. Confidence: ``p = min(1, n * F(4, 2W).sf(Z^2_2 / 4))``, a Bonferroni correction for having
   searched about ``n`` frequencies (``n / 2`` bins, oversampled by the refinement). The period
   is reported only when ``p < PERIOD_ALPHA = 0.001``; otherwise ``period_iterations`` is None
   and the best candidate is still shown with its p-value. ``strength`` is the mean resultant
   length ``|mean_j exp(i phi_j)|`` in 0..1: the share of spikes locked to the period,
   discounted by their jitter.

With more than ``REFINE_MAX_SPIKES`` (20,000) spikes, every k-th spike is kept (in order) for
all of the above: a periodic spike train stays periodic when thinned that way. Checked by
simulation (n = 100,000): i.i.d., paired, geometric-burst, burst-window and half-run spike
trains gave no p < 0.001 in 150 to 400 runs each; the test is conservative.

When start times are given, the period in seconds is found by maximising ``Z^2_2`` of the spike
*times* within one frequency bin (``1 / duration``) of ``period_iterations x`` the mean
iteration duration (``(t[-1] - t[0]) / (n - 1)``); its significance is the one above.

Two spike sets are searched: all spikes, and the *strong* ones above
``median + STRONG_FACTOR * k * scale`` (4 x as far out). Periodic disturbances (a timer tick
adds microseconds to a sub-microsecond call) are usually strong, while the natural right tail
of the distribution contributes many mild, random "spikes" that drown a period in the full set.
The set with the smaller p-value wins, and that p-value is doubled (Bonferroni for two sets).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import scipy.fft as sfft
from scipy import stats

from ._common import FloatArray, IntArray, Prepared, Result, as_prepared, quantile_sorted

TUKEY_MILD = 1.5
TUKEY_EXTREME = 3.0
SPIKE_K = 5.0
#: Fewer spikes than this: no period is looked for.
MIN_SPIKES_FOR_PERIOD = 8
#: A period must fit at least this many times into the run.
MIN_CYCLES = 10
#: Largest harmonic number checked when looking for the fundamental.
MAX_HARMONIC = 8
#: Harmonics in the Z^2 statistic.
Z2_HARMONICS = 2
#: Global significance level for reporting a period.
PERIOD_ALPHA = 1e-3
#: Frequencies tried within +-1 periodogram bin during refinement.
REFINE_POINTS = 81
#: Phase statistics use at most this many (evenly chosen) spikes.
REFINE_MAX_SPIKES = 20_000
#: Periodogram bins per block for the background level (fewer for short runs).
BACKGROUND_BINS = 256
#: Strong spikes lie this many times further out than the spike threshold.
STRONG_FACTOR = 4.0


@dataclasses.dataclass(frozen=True)
class Periodicity(Result):
    period_iterations: float | None  # None unless confident
    period_seconds: float | None
    candidate_iterations: float | None  # best candidate even when not confident
    p_value: float | None  # global, Bonferroni over ~n frequencies
    strength: float | None  # mean resultant length of spike phases, 0..1
    n_spikes: int  # spikes in the set searched
    confident: bool
    method: str
    reason: str | None
    threshold: float | None = None  # spike threshold of the set searched (ns), if known


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
    spike_scale: float
    spike_scale_source: str
    spike_threshold: float
    spike_indices: IntArray
    n_spikes: int
    spike_fraction: float
    periodicity: Periodicity


Background = Callable[[float], float]


def _flat(_f: float) -> float:
    return 1.0


def _fold(f: float) -> float:
    """Alias a frequency (cycles per iteration) into [0, 1/2]: spike positions are integers."""
    f = f % 1.0
    return 1.0 - f if f > 0.5 else f


def _z2(
    times: FloatArray,
    freqs: FloatArray,
    harmonics: int,
    background: Background = _flat,
    integer_times: bool = False,
    min_freq: float = 0.0,
) -> tuple[FloatArray, FloatArray, int]:
    """Z^2_m statistic (each harmonic divided by the background at its frequency), the
    first-harmonic mean resultant length for each trial frequency, and the number of harmonics
    used at the last frequency. With integer times, a harmonic that aliases to below
    ``min_freq`` (e.g. the 2nd harmonic of period 2, which is DC) carries no information and is
    skipped."""
    m = times.size
    z2 = np.zeros(freqs.size)
    r1 = np.zeros(freqs.size)
    used = 0
    # Phases modulo 1 (cycles) are computed in float64 from times relative to the first spike.
    rel = times - times[0]
    for i, f in enumerate(freqs):
        ang = (2.0 * math.pi) * np.mod(rel * f, 1.0)
        cos1, sin1 = np.cos(ang), np.sin(ang)
        ch, sh = cos1, sin1
        used = 0
        for h in range(1, harmonics + 1):
            if h > 1:  # angle addition: cos(h a), sin(h a) from the previous harmonic
                ch, sh = ch * cos1 - sh * sin1, sh * cos1 + ch * sin1
            fh = _fold(h * float(f)) if integer_times else h * float(f)
            c, s = float(ch.sum()), float(sh.sum())
            if h == 1:
                r1[i] = math.sqrt(c * c + s * s) / m
            if integer_times and fh < min_freq:
                continue
            z2[i] += 2.0 * (c * c + s * s) / m / background(fh)
            used += 1
    return z2, r1, used


def _refine(
    times: FloatArray,
    f0: float,
    half_width: float,
    background: Background = _flat,
    integer_times: bool = False,
    min_freq: float = 0.0,
) -> tuple[float, float, float, int]:
    """Best frequency near ``f0`` by Z^2; returns (frequency, Z^2, strength, harmonics used)."""
    freqs = np.linspace(max(f0 - half_width, 1e-12), f0 + half_width, REFINE_POINTS)
    z2, r1, _ = _z2(times, freqs, Z2_HARMONICS, background, integer_times, min_freq)
    i = int(np.argmax(z2))
    _, _, used = _z2(times, freqs[i : i + 1], Z2_HARMONICS, background, integer_times, min_freq)
    return float(freqs[i]), float(z2[i]), float(r1[i]), used


def _background_grid(power: FloatArray) -> tuple[FloatArray, FloatArray, int]:
    """Local background level of a periodogram: means of blocks of ``W`` bins (the last block
    takes the remainder) at the block centres (in bins). Returns (centres, levels, W)."""
    w = max(8, min(BACKGROUND_BINS, power.size // 4))
    nblk = max(1, power.size // w)
    edges = np.append(np.arange(nblk) * w, power.size)
    sums = np.add.reduceat(power, edges[:-1])
    levels = sums / np.diff(edges)
    centres = (edges[:-1] + edges[1:] - 1) / 2.0
    return centres, np.maximum(levels, 1e-12), w


def spike_periodicity(
    spike_indices: npt.ArrayLike, n: int, t: npt.ArrayLike | None = None
) -> Periodicity:
    """Look for a period in spike positions (see module docstring)."""
    idx = np.asarray(spike_indices, dtype=np.int64)
    m = int(idx.size)
    method = (
        f"periodogram of the spike indicator over its local background, harmonic check, "
        f"Z^2_{Z2_HARMONICS} refinement; confident if Bonferroni p < {PERIOD_ALPHA:g}"
    )

    def none(
        reason: str, cand: float | None = None, p: float | None = None, r: float | None = None
    ) -> Periodicity:
        return Periodicity(None, None, cand, p, r, m, False, method, reason)

    if m < MIN_SPIKES_FOR_PERIOD:
        return none(f"only {m} spikes; at least {MIN_SPIKES_FOR_PERIOD} are needed")
    if m > n // 2:
        return none("more than half the samples are spikes; no period looked for")
    if n < 2 * MIN_CYCLES:
        return none("too few samples")

    sel = idx[:: max(1, math.ceil(m / REFINE_MAX_SPIKES))]
    ms = sel.size
    s = np.zeros(n, dtype=np.float32)
    s[sel] = 1.0
    s -= np.float32(ms / n)
    spec = sfft.rfft(s, workers=-1)
    del s
    power = (spec.real.astype(np.float64) ** 2 + spec.imag.astype(np.float64) ** 2) / (
        ms * (1.0 - ms / n)
    )
    del spec
    k_min = MIN_CYCLES
    if power.size <= k_min + 1:
        return none("too few samples")
    centres, levels, w = _background_grid(power)
    dof = 2 * w

    def background(f: float) -> float:
        return float(np.interp(f * n, centres, levels))

    norm = power[k_min:] / np.interp(np.arange(k_min, power.size), centres, levels)
    k_star = k_min + int(np.argmax(norm))
    del norm
    f_star = k_star / n

    times = sel.astype(np.float64)
    cand_f = f_star
    f_min = MIN_CYCLES / n
    # Z^2_1 = 2 x normalised power ~ 2 F(2, dof).
    local_thr = 2.0 * float(stats.f.isf(PERIOD_ALPHA / MAX_HARMONIC, 2, dof))
    for h in range(MAX_HARMONIC, 1, -1):
        fh = f_star / h
        if fh < f_min:
            continue
        z2h, _, _ = _z2(times, np.array([fh]), 1, background, True, f_min)
        if z2h[0] > local_thr:
            cand_f = fh
            break
    f_best, z2, strength, used = _refine(times, cand_f, 1.0 / n, background, True, f_min)
    dfn = 2 * max(used, 1)
    p = min(1.0, n * float(stats.f.sf(z2 / dfn, dfn, dof)))
    period = 1.0 / f_best
    if p >= PERIOD_ALPHA:
        return none(
            f"no significant period (best candidate {period:.4g} iterations, p = {p:.2g})",
            period,
            p,
            strength,
        )
    period_s = None
    if t is not None:
        tt = np.asarray(t, dtype=np.float64)
        dt = (tt[-1] - tt[0]) / (n - 1) if n > 1 else 0.0
        span = tt[-1] - tt[0]
        if dt > 0 and span > 0:
            f_s, _, _, _ = _refine(tt[sel], 1.0 / (period * dt), 1.0 / span)
            period_s = 1.0 / f_s
    return Periodicity(period, period_s, period, p, strength, ms, True, method, None)


def _best_period(prep: Prepared, spikes: IntArray, threshold: float, strong: float) -> Periodicity:
    """Search all spikes and the strong ones; keep the more significant, p doubled."""
    found = dataclasses.replace(spike_periodicity(spikes, prep.n, prep.t), threshold=threshold)
    strong_idx = spikes[prep.x[spikes] > strong]
    if MIN_SPIKES_FOR_PERIOD <= strong_idx.size < spikes.size:
        other = spike_periodicity(strong_idx, prep.n, prep.t)
        other = dataclasses.replace(other, threshold=strong)
        if (other.p_value if other.p_value is not None else 1.0) < (
            found.p_value if found.p_value is not None else 1.0
        ):
            found = other
    if found.p_value is None:
        return found
    p = min(1.0, 2.0 * found.p_value)
    if found.confident and p >= PERIOD_ALPHA:
        return dataclasses.replace(
            found,
            period_iterations=None,
            period_seconds=None,
            confident=False,
            reason=f"no significant period (best candidate {found.candidate_iterations:.4g} "
            f"iterations, p = {p:.2g})",
            p_value=p,
        )
    return dataclasses.replace(found, p_value=p)


def outliers(
    x: npt.ArrayLike | Prepared, t: npt.ArrayLike | None = None, *, k: float = SPIKE_K
) -> Outliers:
    """Tukey classes, MAD spikes (indices kept) and the period of recurring spikes in ``x``."""
    prep = as_prepared(x, t)
    xs = prep.sorted
    q1, q3 = quantile_sorted(xs, 0.25), quantile_sorted(xs, 0.75)
    iqr = q3 - q1
    lo_ext, lo_mild = q1 - TUKEY_EXTREME * iqr, q1 - TUKEY_MILD * iqr
    hi_mild, hi_ext = q3 + TUKEY_MILD * iqr, q3 + TUKEY_EXTREME * iqr

    def below(v: float) -> int:
        return int(np.searchsorted(xs, v, side="left"))

    def above(v: float) -> int:
        return int(xs.size - np.searchsorted(xs, v, side="right"))

    median = quantile_sorted(xs, 0.5)
    mad = float(np.median(np.abs(prep.x - median)))
    scale, source = 1.4826 * mad, "1.4826 MAD"
    if scale <= 0.0 and iqr > 0.0:
        scale, source = iqr / 1.349, "IQR / 1.349 (MAD is zero)"
    if scale <= 0.0:
        gaps = np.diff(xs)
        gaps = gaps[gaps > 0]
        if gaps.size:
            scale, source = float(gaps.min()), "smallest gap between values (MAD and IQR are zero)"
        else:
            source = "all samples equal"
    threshold = median + k * scale
    spikes = np.flatnonzero(prep.x > threshold).astype(np.int64)
    period = _best_period(prep, spikes, threshold, median + STRONG_FACTOR * k * scale)
    return Outliers(
        q1=q1,
        q3=q3,
        iqr=iqr,
        low_extreme_fence=lo_ext,
        low_mild_fence=lo_mild,
        high_mild_fence=hi_mild,
        high_extreme_fence=hi_ext,
        n_low_extreme=below(lo_ext),
        n_low_mild=below(lo_mild) - below(lo_ext),
        n_high_mild=above(hi_mild) - above(hi_ext),
        n_high_extreme=above(hi_ext),
        spike_k=k,
        spike_scale=scale,
        spike_scale_source=source,
        spike_threshold=threshold,
        spike_indices=spikes,
        n_spikes=int(spikes.size),
        spike_fraction=spikes.size / prep.n,
        periodicity=period,
    )
