"""The folding (comb) test: a period that recurs only ten or a few dozen times among events.

A period that fits only 10 to a few dozen times into the run leaves lines too weak for a
periodogram: 12 events every 4,096 iterations among 50 random ones in 50,000 samples put about
``12^2 / 62 = 2.3`` times the background into each of their harmonics, while the strongest of
the ~4,000 bins searched holds about ``ln 4000 = 8`` times it by chance; the periodogram alone
never found such a period, and claimed 4,096 / h for some large h (141 and 178 iterations:
h = 29, 23) when a few of the events lined up with it. The comb test looks at the onsets. A
*comb* of period ``P``, anchor ``a`` and tooth width ``w`` has teeth at ``a + k P`` within the
run; a tooth holds an event when one lies within ``w / 2`` of it, and the test counts the teeth
holding one (distinct cycles, so a burst counts once).

- Search: periods between ``max(P_min, n / COMB_MAX_CYCLES)`` (64 cycles) and
  ``n / min_cycles`` (``periodicity.MIN_CYCLES``, 10), tooth widths ``w = 1, 3, 9, ...`` up to
  ``P / COMB_WIDTH_FRACTION`` (32). Every pair of onsets that far apart is a candidate comb
  (the pair spans one cycle); each is screened on ``COMB_SCREEN_TEETH`` (16) teeth either side
  by the binomial tail of its hits at the run's overall event rate, and the
  ``COMB_CANDIDATES`` (8) best per width are refined: the line through the events on their
  teeth (least squares of position on tooth number) gives a new anchor and period, repeated
  ``COMB_REFINE_ROUNDS`` (4) times, so a jitter of the events does not make the later teeth
  drift off them.
- Null: the events are placed at random within their cycles. Conditioning on how many events
  each cycle holds (``m_k``; the cycle is the period centred on its tooth) keeps bursts of
  events, episodes and a rate that changes over the run from passing for a period: a tooth
  covering ``c_k`` of the cycle's ``L_k`` integer positions holds an event by chance with
  probability ``pi_k = 1 - (1 - c_k / L_k)^m_k``. The number of teeth holding an event is then
  a sum of independent Bernoulli variables, whose upper tail is bounded by the binomial tail
  with their mean probability (Hoeffding 1956, Theorem 4), which is ``p_raw``.
- Search correction: Bonferroni over the cells searched, ``sum_w 4 n (n / min_cycles - P_min)
  / w^2`` (periods resolved to ``w P / 2n``, phases to ``w / 2``): about ``10^9`` at n = 50,000,
  so ``p_raw`` must be below ``10^-12``. Twelve events on all twelve teeth, among about 100
  (50 random spikes and those of an AR(1) body), give ``p_raw`` near ``10^-32`` with teeth 1
  wide (an exact period) and ``10^-15`` with teeth 27 wide (a jitter of +-10).
- Recurrence: a comb's period is reported only when at least ``min_cycles`` teeth and
  ``COMB_MIN_OCCUPANCY`` (half) of its teeth hold an event; combs that recur are preferred to
  more significant ones that do not (two events per cycle 0.4 periods apart also fill every
  fifth tooth of a fifth of the period, half as densely).
- The fundamental: a comb of period ``P`` also fits ``P / h`` where the events fill the teeth
  in between. ``P / h`` for ``h`` up to ``COMB_MAX_DIVISOR`` (16) is tried with the same tooth
  width (up to ``P / (h COMB_DIVISOR_WIDTHS)``: a jitter of +-10 needs teeth 27 wide, which the
  search allows only from a period of 864 on, so a period of 700 is found through 1,400) and
  taken when it recurs and is more significant.
- Cost: ``O(pairs x 33)`` for the screening; the test runs on at most ``COMB_MAX_EVENTS``
  (1,000) events (about half a second then), and is skipped above.

``periodicity.spike_periodicity`` runs it beside the periodogram and chooses between them.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt

from ._common import FloatArray, IntArray
from .dist import binom_sf, binom_sf1

#: The folding (comb) test looks for periods that fit at most this many times into the run ...
COMB_MAX_CYCLES = 64
#: ... among at most this many events.
COMB_MAX_EVENTS = 1000
#: Tooth widths tried: 1, 3, 9, ... iterations, at most 1 / COMB_WIDTH_FRACTION of the period.
COMB_WIDTH_FRACTION = 32
#: A comb's period shows in at least this share of its cycles.
COMB_MIN_OCCUPANCY = 0.5
#: The comb's period divided by up to this is tried as its fundamental ...
COMB_MAX_DIVISOR = 16
#: ... with teeth at most 1 / COMB_DIVISOR_WIDTHS of that period.
COMB_DIVISOR_WIDTHS = 8
#: Candidate combs refined per tooth width.
COMB_CANDIDATES = 8
#: Rounds of the least-squares refinement of a comb.
COMB_REFINE_ROUNDS = 4
#: Candidate combs are screened on this many teeth either side of their first pair.
COMB_SCREEN_TEETH = 16
#: Candidate pairs screened at a time.
COMB_CHUNK = 4096


@dataclasses.dataclass(frozen=True)
class Comb:
    period: float
    anchor: float  # position of one tooth of the comb (iterations)
    width: float  # a tooth holds the events within width / 2 of it
    hits: int  # teeth (distinct cycles) holding an event
    cycles: int  # teeth within the run
    p_raw: float  # before the correction for the search


def comb_teeth(anchor: float, period: float, n: int) -> FloatArray:
    """Positions ``anchor + k * period`` within the run ``[-0.5, n - 0.5)``."""
    k_lo = math.ceil((-0.5 - anchor) / period)
    k_hi = math.floor((n - 0.5 - anchor) / period - 1e-12)
    return anchor + np.arange(k_lo, k_hi + 1, dtype=np.float64) * period


def _nearest(times: FloatArray, pos: npt.ArrayLike) -> tuple[FloatArray, IntArray]:
    """Distance from each position to the nearest event, and that event's index."""
    p = np.asarray(pos, dtype=np.float64)
    idx = np.searchsorted(times, p)  # 0 .. times.size
    lo = np.maximum(idx - 1, 0)
    hi = np.minimum(idx, times.size - 1)
    d_lo, d_hi = np.abs(p - times[lo]), np.abs(times[hi] - p)
    return np.minimum(d_lo, d_hi), np.where(d_lo <= d_hi, lo, hi)


def comb_tail(
    times: FloatArray, teeth: FloatArray, period: float, width: float, n: int
) -> tuple[int, float, IntArray]:
    """Teeth holding an event, and the probability of at least that many if the events were
    placed at random within their cycles (see the module docstring): cycle ``k`` (the
    ``period`` centred on its tooth, within the run) holds ``m_k`` events and ``L_k`` integer
    positions, its tooth ``c_k`` of them, so it holds an event by chance with probability
    ``pi_k = 1 - (1 - c_k / L_k)^m_k``; the tail of the sum of these Bernoulli variables is
    bounded by the binomial tail with their mean probability (Hoeffding 1956, Theorem 4)."""
    dist, which = _nearest(times, teeth)
    hit = dist <= 0.5 * width
    hits = int(np.count_nonzero(hit))
    c = teeth.size
    if hits == 0 or c == 0:
        return hits, 1.0, which[hit]
    lo_pos = np.maximum(np.ceil(teeth - 0.5 * period), 0.0)
    hi_pos = np.minimum(np.ceil(teeth + 0.5 * period) - 1.0, n - 1.0)  # [tooth - P/2, tooth + P/2)
    cyc_len = np.maximum(hi_pos - lo_pos + 1.0, 1.0)
    m = np.searchsorted(times, hi_pos, side="right") - np.searchsorted(times, lo_pos, side="left")
    tooth = np.minimum(np.floor(teeth + 0.5 * width), n - 1.0) - np.maximum(
        np.ceil(teeth - 0.5 * width), 0.0
    )
    share = np.clip((tooth + 1.0) / cyc_len, 0.0, 1.0)
    pi = 1.0 - (1.0 - share) ** m
    mean = float(pi.mean())
    if hits < c * mean + 1.0:  # Hoeffding's bound holds from the mean + 1 up
        return hits, 1.0, which[hit]
    return hits, binom_sf1(hits - 1, c, mean), which[hit]


def _comb_tails(
    times: FloatArray, anchor: float, periods: FloatArray, width: float, n: int
) -> tuple[FloatArray, IntArray, FloatArray]:
    """``comb_tail`` for several periods through one anchor at once: (hits, teeth within the
    run, tail probability) per period."""
    parts = [comb_teeth(anchor, float(per), n) for per in periods]
    sizes = np.array([t.size for t in parts])
    teeth = np.concatenate(parts)
    group = np.repeat(np.arange(periods.size), sizes)
    per = np.repeat(periods, sizes)
    dist, _ = _nearest(times, teeth)
    hits = np.bincount(group, weights=dist <= 0.5 * width, minlength=periods.size)
    lo_pos = np.maximum(np.ceil(teeth - 0.5 * per), 0.0)
    hi_pos = np.minimum(np.ceil(teeth + 0.5 * per) - 1.0, n - 1.0)
    cyc_len = np.maximum(hi_pos - lo_pos + 1.0, 1.0)
    m = np.searchsorted(times, hi_pos, side="right") - np.searchsorted(times, lo_pos, side="left")
    tooth = np.minimum(np.floor(teeth + 0.5 * width), n - 1.0) - np.maximum(
        np.ceil(teeth - 0.5 * width), 0.0
    )
    pi = 1.0 - (1.0 - np.clip((tooth + 1.0) / cyc_len, 0.0, 1.0)) ** m
    mean = np.bincount(group, weights=pi, minlength=periods.size) / np.maximum(sizes, 1)
    tail = binom_sf(hits - 1, sizes, mean)
    return hits, sizes, np.where((hits >= sizes * mean + 1.0) & (hits > 0), tail, 1.0)


def _refine(
    times: FloatArray, anchor: float, period: float, width: float, n: int
) -> tuple[float, float]:
    """Fit the comb through the events on its teeth (least squares of their positions on the
    tooth number) and repeat: a period taken from one pair of jittered events drifts off the
    later teeth."""
    fitted: tuple[FloatArray, FloatArray] | None = None
    for _ in range(COMB_REFINE_ROUNDS):
        teeth = comb_teeth(anchor, period, n)
        dist, which = _nearest(times, teeth)
        hit = dist <= 0.5 * width
        if np.count_nonzero(hit) < 3:
            break
        k = np.round((teeth[hit] - anchor) / period)
        tk = times[which[hit]]
        if fitted is not None and np.array_equal(k, fitted[0]) and np.array_equal(tk, fitted[1]):
            break  # the same events on the same teeth: the same line, which this comb is
        fitted = (k, tk)
        slope, icpt = np.polyfit(k, tk, 1)
        if not (np.isfinite(slope) and slope > 0):
            break
        if abs(slope - period) < 1e-9 * period and abs(icpt - anchor) < 1e-6:
            break
        anchor, period = float(icpt), float(slope)
    return anchor, period


def best_comb(
    times: FloatArray, n: int, p_min: float, min_cycles: int
) -> tuple[Comb | None, float]:
    """The strongest comb among the event onsets ``times`` (sorted), with a period between
    ``max(p_min, n / COMB_MAX_CYCLES)`` and ``n / min_cycles``, and the number of (period,
    phase, width) cells the search covered (see the module docstring)."""
    m = times.size
    p_hi = n / min_cycles
    p_lo = max(p_min, n / COMB_MAX_CYCLES)
    widths = []
    w = 1.0
    while w <= p_hi / COMB_WIDTH_FRACTION:
        widths.append(w)
        w *= 3.0
    cells = sum(4.0 * n * (p_hi - p_min) / (w * w) for w in widths)
    if m < min_cycles or p_lo > p_hi or not widths:
        return None, max(cells, 1.0)
    # Candidate combs: each pair of events between p_lo and p_hi apart spans one cycle.
    first = np.searchsorted(times, times + p_lo, side="left")
    last = np.searchsorted(times, times + p_hi, side="right")
    counts = last - first
    total = int(counts.sum())
    if total == 0:
        return None, cells
    ii = np.repeat(np.arange(m), counts)
    jj = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    anchors, periods = times[ii], times[jj] - times[ii]
    rate = m / n
    kk = np.arange(-COMB_SCREEN_TEETH, COMB_SCREEN_TEETH + 1, dtype=np.float64)
    # Onsets are whole iterations, and so are the teeth screened (pairs of them): where the
    # teeth outnumber the run's iterations, each iteration's distance to its nearest event is
    # made once and looked up (the same numbers as _nearest's, a tenth of the time).
    table = None
    if n <= total * kk.size and times[0] >= 0 and times[-1] < n:
        if bool((times == np.floor(times)).all()):
            # (iterations -1 and n, outside the run: no event near)
            table = np.append(_nearest(times, np.arange(n, dtype=np.float64))[0], np.inf)
    scores: dict[float, list[tuple[float, float, float]]] = {w: [] for w in widths}
    for s in range(0, total, COMB_CHUNK):
        a, per = anchors[s : s + COMB_CHUNK], periods[s : s + COMB_CHUNK]
        pos = a[:, None] + kk[None, :] * per[:, None]
        inside = (pos >= -0.5) & (pos < n - 0.5)
        if table is not None:
            dist = table[np.clip(pos, -1.0, n).astype(np.int64)]
        else:  # a tooth outside the run is never counted
            dist = np.where(inside, _nearest(times, pos)[0], np.inf)
        cyc = np.count_nonzero(inside, axis=1)
        for w in widths:
            ok = per >= COMB_WIDTH_FRACTION * w
            if not ok.any():
                continue
            hits = np.count_nonzero(dist <= 0.5 * w, axis=1)
            pi = 1.0 - math.exp(-rate * (w + 1.0))
            score = np.full(hits.size, np.inf)
            sel = ok & (hits >= 3)  # the tail of the others is never read
            score[sel] = np.log(binom_sf(hits[sel] - 1, cyc[sel], pi))
            top = np.argsort(score)[:COMB_CANDIDATES]
            scores[w].extend((float(score[i]), float(a[i]), float(per[i])) for i in top)
    best: Comb | None = None
    for w in widths:
        seen: set[tuple[int, int]] = set()
        for score, a0, per0 in sorted(scores[w])[:COMB_CANDIDATES]:
            if not math.isfinite(score):
                break
            key = (round(per0), round(a0 % per0))
            if key in seen:
                continue
            seen.add(key)
            a1, per1 = _refine(times, a0, per0, w, n)
            if not p_lo * 0.9 <= per1 <= p_hi * 1.1:
                continue
            teeth = comb_teeth(a1, per1, n)
            hits, p_raw, _ = comb_tail(times, teeth, per1, w, n)
            cand = Comb(per1, a1, w, hits, int(teeth.size), p_raw)
            if best is None or _rank(cand, min_cycles) < _rank(best, min_cycles):
                best = cand
    if best is None:
        return None, cells
    # The fundamental: a comb of period P also fits P / h wherever the events fill its other
    # teeth too; the teeth of P / h may be wider than the search allowed for that period (a
    # jitter of +-10 needs teeth of 27 iterations, allowed from a period of 864 on).
    while True:
        hs = np.arange(2, COMB_MAX_DIVISOR + 1, dtype=np.float64)
        hs = hs[
            (best.period / hs >= p_min) & (best.period / hs >= COMB_DIVISOR_WIDTHS * best.width)
        ]
        if hs.size == 0:
            break
        hits_h, sizes, p_h = _comb_tails(times, best.anchor, best.period / hs, best.width, n)
        p_h = np.where(recurs(hits_h, sizes, min_cycles), p_h, np.inf)
        i = int(np.argmin(p_h))
        if not p_h[i] < best.p_raw:
            break
        a1, per1 = _refine(times, best.anchor, best.period / float(hs[i]), best.width, n)
        teeth = comb_teeth(a1, per1, n)
        hits, p_raw, _ = comb_tail(times, teeth, per1, best.width, n)
        cand = Comb(per1, a1, best.width, hits, int(teeth.size), p_raw)
        if not _rank(cand, min_cycles) < _rank(best, min_cycles):
            break
        best = cand
    return best, cells


def recurs(hits: npt.ArrayLike, cycles: npt.ArrayLike, min_cycles: int) -> npt.NDArray[np.bool_]:
    """A comb's period recurs: events on at least ``min_cycles`` teeth and on at least
    ``COMB_MIN_OCCUPANCY`` of the teeth within the run."""
    h, c = np.asarray(hits), np.asarray(cycles)
    return (h >= min_cycles) & (h >= COMB_MIN_OCCUPANCY * c)


def _rank(c: Comb, min_cycles: int) -> tuple[bool, float]:
    """Combs whose period recurs (``recurs``, in scalars) first, then the more significant."""
    return (not (c.hits >= min_cycles and c.hits >= COMB_MIN_OCCUPANCY * c.cycles), c.p_raw)
