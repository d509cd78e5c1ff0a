"""The period of recurring spikes: declustered into events, found in the events' onsets.

Events. One disturbance often hits several consecutive iterations (a burst), and the spikes of
a burst are not independent: their phases against any trial period are not the independent
uniforms the periodicity test below assumes, and a run whose spikes came in bursts (a quarter of
the gaps one iteration long) gave a confident "period" of 4.5 iterations that shuffling the
samples made vanish. So spikes are *declustered* first: a spike at most ``DECLUSTER_GAP`` (3)
iterations after the previous spike belongs to that spike's event (so gaps of 1, 2 or 3
iterations, i.e. up to two calm iterations, do not split a burst); an event is represented by
its first spike (its onset), and its span is last minus first spike plus one. The period is
looked for in the event onsets only.

Periodicity of events. Recurring disturbances (timer interrupts, a daemon waking up, a periodic
flush) are found from the onset indicator series ``s_t = 1{an event starts at t}``. It needs at
least ``MIN_EVENTS_FOR_PERIOD`` (10) events, and the period must be clearly longer than the
bursts: at least ``P_min = BURST_FACTOR * (L + DECLUSTER_GAP)`` iterations with
``BURST_FACTOR = 3`` and ``L`` the 90th percentile of the event spans (``P_min`` is 12 for
isolated spikes, 36 for bursts of up to 10 spikes). Two onsets are at least
``L + DECLUSTER_GAP`` apart by construction, and that dead time alone makes the onsets of random
bursts quasi-regular at that scale; shorter periods are not searched at all, so an artefact of
the burst shape cannot hide a real, longer period either.

1. The periodogram of ``s`` (one real FFT of length n). A period is a *line* in this spectrum;
   random onsets have a *continuous* spectrum that need not be flat (the dead time; episodes
   in which many events follow each other), and the textbook chi-squared calibration (which
   assumes Bernoulli noise) then finds "periods" often (in 41% of simulated runs whose spikes
   came in pairs, at p < 0.001, without declustering). So every ordinate is divided by the
   local background level: the mean of its block of ``BACKGROUND_BINS`` = 256 bins,
   interpolated between block centres. Below ``LOW_BLOCKS`` (2) blocks, where the spectrum of
   events that come in episodes rises several times within one block (the previous version,
   with one block mean and no declustering, found a "period" of 10 to 25 cycles in up to 60%
   of simulated runs with a few episodes of dense spikes), the background of bin ``k`` is
   instead the mean of the bins within ``+-min(W / 2, max(GUARD_BINS + 4, k / 2))`` of it,
   leaving out ``k`` itself, ``GUARD_BINS`` (2) bins on each side (a line's leakage) and the DC
   bin. For a smooth background the ratio follows an F(2, 2W) distribution (W bins in the
   background estimate), which accounts for the noise of the background estimate itself. The
   strongest ratio between ``MIN_CYCLES / n`` (at least 10 periods in the run) and
   ``1 / P_min`` gives the candidate frequency ``f*``.
2. ``f*`` may be a harmonic of the true frequency (a regular comb of events has power at every
   multiple of ``1/P``), so ``f*/h`` for ``h = 8 .. 2`` is checked, largest period first: the
   first whose *new* frequencies ``j f*/h`` (``0 < j < 2h``, ``gcd(j, h) = 1``) carry
   significant power together becomes the candidate (``_fundamental``), and the check is
   repeated on it (up to ``FUNDAMENTAL_ROUNDS`` = 3 times: the 14th harmonic of a period of 700
   was the strongest line in one simulated run). Checking only ``f*/h`` itself reported half
   the period when two events per cycle sat 0.4 periods apart (their fundamental line is weak)
   and a seventh of it when ``f*`` was the 14th harmonic.
3. The frequency is refined on a fine grid within one periodogram bin, maximising the
   ``Z^2_2`` statistic of the onset phases ``phi_j = 2 pi f t_j`` (Buccheri et al. 1983:
   ``Z^2_m = (2 / M) sum_{h=1..m} |sum_j exp(i h phi_j)|^2``), each harmonic's term divided by
   the background at its frequency; ``Z^2_2 / 4`` is then approximately F(4, 2W), with the
   smaller W of the two harmonics. Onsets are integers, so a harmonic above 1/2 aliases; it is
   folded back, and skipped (with one degree of freedom pair less) when it folds onto DC.
4. Confidence: ``p = min(1, 2 K * F(4, 2W).sf(Z^2_2 / 4))``, a Bonferroni correction for the
   ``K`` periodogram bins searched (about ``n / P_min``, oversampled about 2 x by the
   refinement). The period is reported only when ``p < PERIOD_ALPHA = 0.0001`` (at 0.001,
   one of 200 simulated runs of 50 random spikes claimed a period of 16.9; at 0.0001 none,
   and a period of 4,096 among them is still found in 199 or 200 of 200) and the events
   locked to it (within a quarter period of their mean phase) fall into at least
   ``MIN_CYCLES`` distinct cycles: a handful of dense episodes can line up with a long trial
   period, but a disturbance that recurs shows up cycle after cycle. Otherwise
   ``period_iterations`` is None and the best candidate is still shown with its p-value.
   ``strength`` is the mean resultant length ``|mean_j exp(i phi_j)|`` in 0..1: the share of
   events locked to the period, discounted by their jitter.

With more than ``REFINE_MAX_SPIKES`` (20,000) events, every k-th event is kept (in order) for
all of the above: a periodic train stays periodic when thinned that way.

Few recurrences: the folding (comb) test of ``comb.py``. A period that fits only 10 to a few
dozen times into the run leaves lines too weak for a periodogram (12 events every 4,096
iterations among 50 random ones in 50,000 samples: never found before, and 4,096 / h for some
large h, e.g. 141 and 178 iterations, claimed when a few events lined up with it). The comb
test counts the teeth ``a + k P`` of a comb that hold an event, against the chance that events
placed at random within their cycles would, corrected for every period, phase and tooth width
searched.

Choice. The periodogram's and the comb's candidates are each confident or not by their own
rules; of the confident ones (else of all) the smaller p-value wins and is doubled (two
tests). When both are confident and the comb's period is a multiple of the periodogram's, the
shorter period wins if it recurs on its own comb (the comb's search starts at 64 cycles, so
it finds a short period through a multiple); otherwise the comb's (a few events in step with a
long period make a periodogram line at its h-th harmonic).

Checked by simulation (n = 200,000, 200 runs per scenario). Without a period: i.i.d. spikes
(0.1% and 10% of the samples), pairs, geometric bursts, bursts of 1 to 10 consecutive spikes
at Poisson onsets (1, 10 and 30 per 1,000 iterations), bursts of 1 to 3 (50 per 1,000), five
kinds of episodes (a spike every 1 to 19 iterations for hundreds to thousands of iterations),
and, through ``outliers``, log-normal bodies with a level shift (x 2 or x 3 for the last 30 or
40%), with random bursts, and with AR(1) phi = 0.7 and sigma 0.5: 3 confident periods in
3,600 runs (one in the 10% i.i.d. spikes, two in the AR(1) body), none in 5,800 more runs of
spike-free AR(1) bodies (phi 0.3 to 0.9), i.e. about the nominal 0.1%. With a burst of 3 spikes
every 500 iterations (jitter +-20), alone, among random bursts or across a level shift: found,
at 500, in 600 of 600 runs. (These figures predate the spike floors and the harmonic check on new
frequencies; the tests repeat the main cases on quantised data with a 10 ns clock step: no
confident period among random bursts in 10 of 10 runs, none with only 8 cycles in 10 of 10,
and the true period of 700 iterations, never 350, 233 or 140, when one is found.) With the comb
test: no period claimed in 1,305 runs without one (n = 20,000, 50,000 and 200,000: random
spikes at 0.01% to 3% of the samples, bursts of 1 to 10 and of 1 to 3, episodes, quantised
bursts, an AR(1) body with phi = 0.9 and sigma 0.5); a period of 4,096 among random spikes in
50,000 samples (12 recurrences) found in 200 of 200 runs, exact or with a jitter of +-10
(``bench/synthetic_truth.py``, ``tests/test_truth_intervals.py``); the quantised period of 700
among random bursts of ``tests/analysis/test_outliers.py`` in 10 of 10 runs with one event per
cycle (the periodogram alone: 6 of 10) and with two.

When start times are given, the period in seconds is found by maximising ``Z^2_2`` of the onset
*times* within one frequency bin (``1 / duration``) of ``period_iterations x`` the mean
iteration duration (``(t[-1] - t[0]) / (n - 1)``); its significance is the one above. For a
comb's period it is the slope of the start times of the events on its teeth against the tooth
number (least squares).

Two spike sets are searched: all spikes, and the *strong* ones above
``median_j + STRONG_FACTOR * k * scale_j`` (4 x as far out, smoothed the same way). Periodic
disturbances (a timer tick adds microseconds to a sub-microsecond call) are usually strong,
while the natural right tail of the distribution contributes many mild, random "spikes" that
drown a period in the full set. Each set is declustered on its own. The set with the smaller
p-value wins, and that p-value is doubled (Bonferroni for two sets).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import scipy.fft as sfft

from ._common import FloatArray, IntArray, Prepared, Result
from .comb import (
    COMB_DIVISOR_WIDTHS,
    COMB_MAX_CYCLES,
    COMB_MAX_EVENTS,
    COMB_MIN_OCCUPANCY,
    best_comb,
    comb_tail,
    comb_teeth,
    recurs,
)
from .dist import f_sf

#: A spike at most this many iterations after the previous one belongs to the same event.
DECLUSTER_GAP = 3
#: Fewer events than this: no period is looked for.
MIN_EVENTS_FOR_PERIOD = 10
#: The shortest period searched is this many times (burst length + DECLUSTER_GAP).
BURST_FACTOR = 3.0
#: Quantile of the event spans taken as "the burst length".
BURST_QUANTILE = 0.9
#: A period must fit at least this many times into the run.
MIN_CYCLES = 10
#: Largest harmonic number checked when looking for the fundamental.
MAX_HARMONIC = 8
#: Significance of the harmonic check (Bonferroni over the harmonic numbers tried).
FUNDAMENTAL_ALPHA = 1e-2
#: Rounds of the harmonic check (each may divide the frequency by up to MAX_HARMONIC).
FUNDAMENTAL_ROUNDS = 3
#: Harmonics in the Z^2 statistic.
Z2_HARMONICS = 2
#: Global significance level for reporting a period.
PERIOD_ALPHA = 1e-4
#: Frequencies tried within +-1 periodogram bin during refinement.
REFINE_POINTS = 81
#: Phase statistics use at most this many (evenly chosen) events.
REFINE_MAX_SPIKES = 20_000
#: Periodogram bins per block for the background level (fewer for short runs).
BACKGROUND_BINS = 256
#: Below this many background blocks (in bins), the background is a guarded local mean.
LOW_BLOCKS = 2
#: Bins on each side of a low-frequency bin left out of its background.
GUARD_BINS = 2
#: The Z^2 statistic's phases are made this many (frequency, event) pairs at a time.
Z2_CHUNK = 2**16
#: The periodogram's power is made this many bins at a time.
POWER_CHUNK = 2**16


@dataclasses.dataclass(frozen=True)
class Periodicity(Result):
    period_iterations: float | None  # None unless confident
    period_seconds: float | None
    candidate_iterations: float | None  # best candidate even when not confident
    p_value: float | None  # global, Bonferroni over the frequencies searched
    strength: float | None  # mean resultant length of event phases, 0..1
    n_spikes: int  # spikes in the set searched
    confident: bool
    method: str
    reason: str | None
    threshold: float | None = None  # typical spike threshold of the set searched (ns), if known
    n_events: int = 0  # events (declustered spikes) in the set searched
    burst_iterations: float | None = None  # 90th percentile of the event spans
    min_period: float | None = None  # shortest period searched (iterations)


Background = Callable[[FloatArray], FloatArray]


def _flat(f: FloatArray) -> FloatArray:
    return np.ones(f.shape)


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
) -> tuple[FloatArray, FloatArray]:
    """Z^2_m statistic (each harmonic divided by the background at its frequency) and the
    first-harmonic mean resultant length for each trial frequency. With integer times, a
    harmonic that aliases to below ``min_freq`` (e.g. the 2nd harmonic of period 2, which is
    DC) carries no information and is skipped."""
    m = times.size
    sums = np.empty((2, harmonics, freqs.size))  # sums of cos(h phi_j), sin(h phi_j)
    # Phases modulo 1 (cycles) in float64 from times relative to the first spike (``v -
    # floor(v)``: ``np.mod(v, 1.0)`` exactly, for a tenth of its time), Z2_CHUNK at a time.
    rel = times - times[0]
    per = max(1, Z2_CHUNK // max(m, 1))
    for a in range(0, freqs.size, per):
        ang = freqs[a : a + per, None] * rel
        ang -= np.floor(ang)
        ang *= 2.0 * math.pi
        cos1, sin1 = np.cos(ang), np.sin(ang)
        ch, sh = cos1, sin1
        for h in range(harmonics):
            if h:  # angle addition: cos(h a), sin(h a) from the previous harmonic
                ch, sh = ch * cos1 - sh * sin1, sh * cos1 + ch * sin1
            sums[0, h, a : a + per], sums[1, h, a : a + per] = ch.sum(axis=1), sh.sum(axis=1)
    power = sums[0] * sums[0] + sums[1] * sums[1]
    z2 = np.zeros(freqs.size)
    for h in range(1, harmonics + 1):
        fh = h * freqs % 1.0 if integer_times else h * freqs
        fh = np.where(fh > 0.5, 1.0 - fh, fh) if integer_times else fh  # _fold
        term = 2.0 * power[h - 1] / m / background(fh)
        z2 += np.where(fh < min_freq, 0.0, term) if integer_times else term
    return z2, np.sqrt(power[0]) / m


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
    z2, r1 = _z2(times, freqs, Z2_HARMONICS, background, integer_times, min_freq)
    i = int(np.argmax(z2))
    f = float(freqs[i])
    skip = [integer_times and _fold(h * f) < min_freq for h in range(1, Z2_HARMONICS + 1)]
    return f, float(z2[i]), float(r1[i]), skip.count(False)


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


class _Background:
    """Local background level of a periodogram and the degrees of freedom of its estimate.

    Above ``LOW_BLOCKS`` blocks (in bins), the block means of ``_background_grid`` interpolated
    between block centres (``2 W`` degrees of freedom). Below, where the spectrum of clustered
    events can change by several times within one block, the mean of the bins within about
    +-50% of the frequency (``+-min(W / 2, max(GUARD_BINS + 4, k / 2))`` bins, never the DC bin),
    leaving out the bin itself and ``GUARD_BINS`` on each side (a line's leakage)."""

    def __init__(self, power: FloatArray, n: int) -> None:
        self.n = n
        self.centres, self.block_levels, w = _background_grid(power)
        self.block_dof = 2 * w
        k_end = min(LOW_BLOCKS * w, power.size)
        cs = np.concatenate([[0.0], np.cumsum(power[: min(power.size, k_end + w)])])
        top = cs.size - 2  # highest bin the prefix sums cover
        k = np.arange(k_end)
        half = np.maximum(GUARD_BINS + 4, np.minimum(w // 2, k // 2))
        lo, hi = np.maximum(1, k - half), np.minimum(top, k + half)
        glo, ghi = np.maximum(lo, k - GUARD_BINS), np.minimum(hi, k + GUARD_BINS)
        guard = np.where(ghi >= glo, cs[np.maximum(ghi, glo) + 1] - cs[glo], 0.0)
        count = (hi - lo + 1) - np.maximum(0, ghi - glo + 1)
        self.k_end = k_end
        self.low_levels = np.maximum((cs[hi + 1] - cs[lo] - guard) / np.maximum(count, 1), 1e-12)
        self.low_dof = 2 * np.maximum(count, 1)

    def levels(self, bins: FloatArray) -> FloatArray:
        out = np.interp(bins, self.centres, self.block_levels)
        low = bins < self.k_end - 1
        if low.any():
            out[low] = np.interp(bins[low], np.arange(self.k_end), self.low_levels)
        return out

    def level(self, f: FloatArray) -> FloatArray:
        return self.levels(f * self.n)

    def dof(self, f: float) -> int:
        b = f * self.n
        if b < self.k_end - 1:
            i = int(b)
            return int(min(self.low_dof[i], self.low_dof[i + 1]))
        return self.block_dof


def decluster(spike_indices: npt.ArrayLike, gap: int = DECLUSTER_GAP) -> tuple[IntArray, IntArray]:
    """Group sorted spike indices into events: a spike at most ``gap`` iterations after the
    previous spike joins its event. Returns (onsets: first index of each event, spans: last
    minus first index plus one)."""
    idx = np.asarray(spike_indices, dtype=np.int64)
    if idx.size == 0:
        return idx.copy(), idx.copy()
    new = np.empty(idx.size, dtype=bool)
    new[0] = True
    np.greater(np.diff(idx), gap, out=new[1:])
    starts = np.flatnonzero(new)
    onsets = idx[starts]
    ends = idx[np.append(starts[1:], idx.size) - 1]
    return onsets, ends - onsets + 1


def _fundamental(times: FloatArray, f: float, bg: _Background) -> float:
    """The fundamental of which ``f`` is a harmonic: ``f / h`` for the largest ``h`` in
    ``MAX_HARMONIC .. 2`` whose *new* frequencies ``j f / h`` (``0 < j < 2h`` with
    ``gcd(j, h) = 1``: those that no shorter period ``h' / f``, ``h'`` dividing ``h``,
    explains) carry significant power together, else ``f``. Their background-normalised
    ``Z^2`` terms sum to about ``2 phi(h) F(2 phi(h), 2W)`` when the events recur with period
    ``1 / f`` (those frequencies then fall between its lines); significance
    ``FUNDAMENTAL_ALPHA / (MAX_HARMONIC - 1)``. The background of a short period's comb of
    lines contains lines, so this level is looser than ``PERIOD_ALPHA``; a longer period chosen
    wrongly must still pass ``PERIOD_ALPHA`` itself. One event per cycle, and two events per
    cycle at uneven offsets (whose fundamental line is weaker than its 2nd and 3rd
    harmonics), are both found at their true period."""
    f_min = MIN_CYCLES / bg.n
    for h in range(MAX_HARMONIC, 1, -1):
        fh = f / h
        if fh < f_min:
            continue
        js = [j for j in range(1, 2 * h) if math.gcd(j, h) == 1]
        z = sum(_z2(times, np.array(js) * fh, 1, bg.level, True, f_min)[0].tolist())
        dfn = 2 * len(js)
        dof = min(bg.dof(_fold(j * fh)) for j in js)
        if f_sf(z / dfn, dfn, dof) < FUNDAMENTAL_ALPHA / (MAX_HARMONIC - 1):
            return fh
    return f


def _locked_cycles(times: FloatArray, f: float) -> int:
    """Distinct cycles of frequency ``f`` holding an event within a quarter period of the mean
    phase (cycles are centred on the mean phase)."""
    cyc = (times - times[0]) * f
    ang = 2.0 * math.pi * np.mod(cyc, 1.0)
    mean = math.atan2(float(np.sin(ang).sum()), float(np.cos(ang).sum()))
    locked = np.cos(ang - mean) > 0.0
    centred = np.floor(cyc[locked] - mean / (2.0 * math.pi) + 0.5)
    return int(np.unique(centred).size)


def spike_periodicity(
    spike_indices: npt.ArrayLike, n: int, t: npt.ArrayLike | None = None
) -> Periodicity:
    """Look for a period in spike positions, declustered into events (see module docstring)."""
    idx = np.unique(np.asarray(spike_indices, dtype=np.int64))
    m = int(idx.size)
    onsets, spans = decluster(idx)
    ne = int(onsets.size)
    burst = float(np.quantile(spans, BURST_QUANTILE)) if ne else None
    p_min = BURST_FACTOR * (burst + DECLUSTER_GAP) if burst is not None else None
    method = (
        f"spikes declustered into events (gaps <= {DECLUSTER_GAP}); periods >= "
        f"{BURST_FACTOR:g} x (burst length + {DECLUSTER_GAP}); periodogram of the event onsets "
        f"over its local background, harmonic check, Z^2_{Z2_HARMONICS} refinement; and a "
        f"folding (comb) test for periods of {MIN_CYCLES} to {COMB_MAX_CYCLES} cycles; "
        f"confident if Bonferroni p < {PERIOD_ALPHA:g}"
    )

    def result(
        reason: str | None,
        cand: float | None = None,
        p: float | None = None,
        r: float | None = None,
        period_s: float | None = None,
    ) -> Periodicity:
        ok = reason is None
        return Periodicity(
            period_iterations=cand if ok else None,
            period_seconds=period_s if ok else None,
            candidate_iterations=cand,
            p_value=p,
            strength=r,
            n_spikes=m,
            confident=ok,
            method=method,
            reason=reason,
            n_events=ne,
            burst_iterations=burst,
            min_period=p_min,
        )

    if ne < MIN_EVENTS_FOR_PERIOD:
        return result(
            f"only {ne} events (from {m} spikes); at least {MIN_EVENTS_FOR_PERIOD} are needed"
        )
    if m > n // 2:
        return result("more than half the samples are spikes; no period looked for")
    assert p_min is not None
    k_min = MIN_CYCLES
    k_max = min(n // 2, int(math.floor(n / p_min)))
    if k_max <= k_min:
        return result(
            f"too few samples for {MIN_CYCLES} periods of at least {p_min:.4g} iterations "
            f"({BURST_FACTOR:g} x (burst length {burst:.3g} + {DECLUSTER_GAP}))"
        )
    tt = np.asarray(t, dtype=np.float64) if t is not None else None
    spec = _periodogram_period(onsets, n, p_min, k_min, k_max, tt)
    comb = _comb_period(onsets, n, p_min, tt)
    found = [c for c in (spec, comb) if c is not None and c.reason is None]
    pool = found or [c for c in (spec, comb) if c is not None]
    best = min(pool, key=lambda c: c.p)
    if len(found) == 2 and comb is not None and _multiple(comb.period, spec.period):
        # The comb's search starts at n / COMB_MAX_CYCLES, so it finds a short period through
        # a multiple; the periodogram finds a long one's harmonic when few events line up with
        # it. The shorter period holds when its own teeth are filled.
        teeth = comb_teeth(comb.anchor, spec.period, n)
        width = min(comb.width, spec.period / COMB_DIVISOR_WIDTHS)
        hits, _, _ = comb_tail(onsets.astype(np.float64), teeth, spec.period, width, n)
        if recurs(hits, teeth.size, MIN_CYCLES):
            best = spec
    p = min(1.0, 2.0 * best.p) if comb is not None else best.p  # two tests
    reason = best.reason
    if reason is None and p >= PERIOD_ALPHA:
        reason = f"no significant period (best candidate {best.period:.4g} iterations, p = {p:.2g})"
    elif reason is not None and reason.startswith("no significant period"):
        reason = f"no significant period (best candidate {best.period:.4g} iterations, p = {p:.2g})"
    return result(reason, best.period, p, best.strength, best.period_s)


def _multiple(long: float, short: float) -> bool:
    """Whether ``long`` is an integer multiple (2 or more) of ``short``, within 1% of it."""
    h = round(long / short)
    return h >= 2 and abs(long - h * short) <= 0.01 * short


@dataclasses.dataclass(frozen=True)
class _Candidate:
    period: float
    p: float  # corrected for the search of its own test
    strength: float
    reason: str | None  # None: confident (before the correction for two tests)
    period_s: float | None = None
    anchor: float = 0.0  # comb: the position of one tooth
    width: float = 1.0  # comb: the width of its teeth


def _periodogram_period(
    onsets: IntArray, n: int, p_min: float, k_min: int, k_max: int, tt: FloatArray | None
) -> _Candidate:
    """Steps 1 to 4 of the module docstring: the strongest line of the onsets' periodogram
    over its background, its fundamental, refined by Z^2."""
    ne = onsets.size
    sel = onsets[:: max(1, math.ceil(ne / REFINE_MAX_SPIKES))]
    ms = sel.size
    s = np.zeros(n, dtype=np.float32)
    s[sel] = 1.0
    s -= np.float32(ms / n)
    spec = sfft.rfft(s, workers=-1)
    del s
    power = np.empty(spec.size)  # made a cache's worth at a time: no temporary of its size
    im = np.empty(min(spec.size, POWER_CHUNK))
    for a in range(0, spec.size, POWER_CHUNK):
        out, part = power[a : a + POWER_CHUNK], spec[a : a + POWER_CHUNK]
        np.square(part.real, out=out, dtype=np.float64)
        sq = np.square(part.imag, out=im[: out.size], dtype=np.float64)
        out += sq
    del spec, im
    power /= ms * (1.0 - ms / n)
    bg = _Background(power, n)

    ks = np.arange(k_min, k_max + 1)
    norm = power[k_min : k_max + 1] / bg.levels(ks.astype(np.float64))
    k_star = k_min + int(np.argmax(norm))
    del norm, ks
    f_star = k_star / n

    times = sel.astype(np.float64)
    f_min = MIN_CYCLES / n
    cand_f = _refine(times, f_star, 1.0 / n, bg.level, True, f_min)[0]
    for _ in range(FUNDAMENTAL_ROUNDS):  # a high harmonic (h > MAX_HARMONIC) takes two steps
        lower = _fundamental(times, cand_f, bg)
        if lower == cand_f:
            break
        cand_f = _refine(times, lower, 1.0 / n, bg.level, True, f_min)[0]
    f_best, z2, strength, used = _refine(times, cand_f, 1.0 / n, bg.level, True, f_min)
    dfn = 2 * max(used, 1)
    harm = [_fold(h * f_best) for h in range(1, Z2_HARMONICS + 1)]
    dof = min(bg.dof(fh) for fh in harm if fh >= f_min)  # the least certain background used
    trials = 2 * (k_max - k_min + 1)  # bins searched, oversampled about 2 x by the refinement
    p = min(1.0, trials * f_sf(z2 / dfn, dfn, dof))
    period = 1.0 / f_best
    if p >= PERIOD_ALPHA:
        return _Candidate(
            period,
            p,
            strength,
            f"no significant period (best candidate {period:.4g} iterations, p = {p:.2g})",
        )
    cycles = _locked_cycles(times, f_best)
    if cycles < MIN_CYCLES:
        return _Candidate(
            period,
            p,
            strength,
            f"no recurring period: the best candidate ({period:.4g} iterations, p = {p:.2g}) "
            f"shows in only {cycles} cycles (at least {MIN_CYCLES} are needed); the events "
            "come in clusters",
        )
    period_s = None
    if tt is not None:
        dt = (tt[-1] - tt[0]) / (n - 1) if n > 1 else 0.0
        span = tt[-1] - tt[0]
        if dt > 0 and span > 0:
            f_s, _, _, _ = _refine(tt[sel], 1.0 / (period * dt), 1.0 / span)
            period_s = 1.0 / f_s
    return _Candidate(period, p, strength, None, period_s)


def _comb_period(
    onsets: IntArray, n: int, p_min: float, tt: FloatArray | None
) -> _Candidate | None:
    """The folding (comb) test of ``comb.py``; None when it does not apply."""
    if onsets.size > COMB_MAX_EVENTS:
        return None
    times = onsets.astype(np.float64)
    best, cells = best_comb(times, n, p_min, MIN_CYCLES)
    if best is None:
        return None
    p = min(1.0, cells * best.p_raw)
    teeth = comb_teeth(best.anchor, best.period, n)
    _, _, on = comb_tail(times, teeth, best.period, best.width, n)
    strength = float(_z2(times, np.array([1.0 / best.period]), 1)[1][0])
    period = best.period
    reason = None
    if p >= PERIOD_ALPHA:
        reason = f"no significant period (best candidate {period:.4g} iterations, p = {p:.2g})"
    elif not recurs(best.hits, best.cycles, MIN_CYCLES):
        reason = (
            f"no recurring period: the best candidate ({period:.4g} iterations, p = {p:.2g}) "
            f"shows in {best.hits} of its {best.cycles} cycles (at least {MIN_CYCLES} and "
            f"{100 * COMB_MIN_OCCUPANCY:g}% are needed)"
        )
    period_s = None
    if reason is None and tt is not None and on.size >= 2:
        k = np.round((times[on] - best.anchor) / period)
        if np.ptp(k) > 0:
            period_s = float(np.polyfit(k, tt[onsets[on]], 1)[0])
            if not period_s > 0:
                period_s = None
    return _Candidate(period, p, strength, reason, period_s, best.anchor, best.width)


def best_period(
    prep: Prepared, spikes: IntArray, threshold: float, strong_idx: IntArray, strong: float
) -> Periodicity:
    """Search all spikes and the strong ones; keep the more significant, p doubled."""
    found = dataclasses.replace(spike_periodicity(spikes, prep.n, prep.t), threshold=threshold)
    if strong_idx.size < spikes.size and decluster(strong_idx)[0].size >= MIN_EVENTS_FOR_PERIOD:
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
