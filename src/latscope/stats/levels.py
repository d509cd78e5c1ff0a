"""The host's two speeds and the warm-up: what drift.py takes out of a run's windows before it
looks for change points and a trend.

Two speeds of the host (``levels``). A cloud VM often runs at one of two speeds, about 1.3x
apart, for seconds at a time; a run on it is stationary apart from that, and its change points
would only report the host switching, again and again. So before change points are looked
for, the window medians are split in two groups (the best two-group split of their
logarithms); when the groups are at least ``LEVEL_MIN_RATIO`` (10%) apart, their gap at least
``LEVEL_SEPARATION`` (3.5) robust SDs of the windows around their own group (one unimodal
spread split in two gives about 2.5), each holds at least ``LEVEL_MIN_SHARE`` of the windows
and the windows (each the majority of itself and its neighbours) switch between them at least
twice, that is one finding, ``levels``: how far apart, how often, what share of the samples at
the slow one, with advice that fits (``latscope ab``, more workers, a quieter machine). The
slow windows are then divided by the ratio, the windows beside a switch (partly at each
speed) take their neighbour's level, and change points, trend and the samples' refinement work
on what remains: only changes the two speeds do not explain are change points. Where the
run's level moved (`Drift.shifts`: the change points and the switches) is what the intervals
cut their batches at. A real step on top of the two speeds is found, but not separated from
them exactly: more change points may come with it. Checked by simulation (``tests``): a host
switching between two speeds 1.33x apart every 2,000 iterations on average gives the
``levels`` finding and nothing else in 10 of 10 runs of 20,000 samples.

Warm-up (``warmup``) is judged first, on the samples as measured, within each worker process
where the workers are known (``segments``): a worker's first windows against the rest of the
same worker, and a warning only when at least half of the workers judged had one (each worker
warms up on its own; a first worker that ran at the host's slow speed throughout is not a
warm-up). The warm-up windows take no part in the speeds and take the level after them for
the change points.

Warm-up thresholds: the first window(s) must be more than ``WARMUP_THRESHOLD`` (10%) slower
than the median of the other windows (of that worker) and more than 4 robust SDs of the window
medians' differences above it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..units import fmt
from ._common import (
    MAD_SCALE,
    AnalysisWarning,
    FloatArray,
    IntArray,
    Result,
    mad_sorted,
    median,
    median_sorted,
    sorted_under,
)

#: Fewest windows a run (or a worker) needs for its windows to be judged.
MIN_WINDOWS = 4
#: A change point is refined to the sample within this many windows of its window.
REFINE_WINDOWS = 3
WARMUP_THRESHOLD = 0.10
#: A change must hold at least this many windows to be a change point: a bout that returns
#: to the level before it sooner is an excursion (the host slowed for a moment), not a change.
MIN_LASTING = 10
#: ... and, where the samples' times are known, at least this long (s): a bout shorter than a
#: few of the time slices a host's scheduler or hypervisor hands out (4-30 ms) is the host
#: taking its CPU back for a moment, not a change of the conditions of the run.
MIN_LASTING_S = 0.1
#: Two speed levels of the host (`levels`): at least this far apart (ratio - 1) ...
LEVEL_MIN_RATIO = 0.10
#: ... their gap at least this many robust SDs of the windows around their own level ...
LEVEL_SEPARATION = 3.5
#: ... each level holding at least this share of the windows (and 2 windows) ...
LEVEL_MIN_SHARE = 0.03
#: ... and the windows switching between them at least this many times.
LEVEL_MIN_SWITCHES = 2
#: ... and fewer switches than half of what windows classified at random would make (a
#: mixture of two modes in every window gives two groups of window medians too, but they
#: alternate at random: the host's speeds last).
LEVEL_MAX_SWITCH_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class Levels(Result):
    """Two speed levels the run switched between (the host's state: a cloud VM that runs at
    one of two speeds for seconds at a time, steal, a neighbour in bouts): found in the window
    medians, reported once instead of as change points."""

    fast_ns: float  # median of the samples in windows at the fast level
    slow_ns: float  # ... at the slow level
    ratio: float  # slow_ns / fast_ns
    switches: int  # changes of level between consecutive windows
    slow_share: float  # share of the samples in windows at the slow level
    switch_indices: tuple[int, ...]  # first iteration of each window where the level changed


def window_medians(x: FloatArray, w: int) -> tuple[IntArray, FloatArray]:
    """The starts and medians of consecutive windows of ``w`` samples (the last one also takes
    the remainder)."""
    n = x.size
    nw = max(1, n // w)
    starts = np.arange(nw, dtype=np.int64) * w
    med = np.empty(nw)
    if nw > 1:  # partitioned in a copy of their own (np.median would copy it again)
        med[:-1] = np.median(
            x[: (nw - 1) * w].reshape(nw - 1, w).copy(), axis=1, overwrite_input=True
        )
    med[-1] = median(x[(nw - 1) * w :])
    return starts, med


def robust_sd(r: FloatArray) -> float:
    """The median absolute deviation of ``r`` scaled to a normal SD."""
    return median_and_robust_sd(r)[1]


def median_and_robust_sd(r: FloatArray) -> tuple[float, float]:
    """The median of ``r`` and `robust_sd` of it (in one array of its own: this runs on a
    whole column)."""
    mid = median(r)
    d = np.subtract(r, mid)
    np.abs(d, out=d)
    return mid, MAD_SCALE * median(d, overwrite=True)


def refine(x: FloatArray, bounds: list[int], w: int, xs: FloatArray | None = None) -> list[int]:
    """Each change point moved to the sample within ``REFINE_WINDOWS`` windows of it that best
    splits the samples between its neighbours into two levels (least squares on the
    logarithms of positive samples, on the values otherwise, winsorised at 3 robust SDs so
    that one spike cannot pull a change point to itself), never leaving a segment shorter
    than half a window: a level lasts; a single slow sample is a spike, not two changes.
    ``xs``, the sorted copy of ``x``, gives the median and robust SD of a stretch that is all
    of ``x`` (one change point) without a partition of it: the same numbers."""
    out = list(bounds)
    keep = max(1, w // 2)
    for i in range(1, len(out) - 1):
        a, b = out[i - 1], bounds[i + 1]
        seg = x[a:b]
        whole = xs if xs is not None and a == 0 and b == x.size else None
        positive = float(seg.min() if whole is None else whole[0]) > 0.0
        y = np.log(seg) if positive else seg.copy()  # one array, worked in place
        mid, sd = _median_and_robust_sd(y, whole, np.log if positive else None)
        if sd > 0.0:
            np.clip(y, mid - 3.0 * sd, mid + 3.0 * sd, out=y)
        y -= float(np.mean(y))
        c1 = np.cumsum(y, out=y)
        del y
        m = c1.size
        lo = max(keep, out[i] - a - REFINE_WINDOWS * w)
        hi = min(m - keep, out[i] - a + REFINE_WINDOWS * w)
        if hi <= lo:
            continue
        k = np.arange(lo, hi + 1)
        gain = c1[k - 1] ** 2 / k + c1[k - 1] ** 2 / (m - k)  # between-level sum of squares
        out[i] = a + int(k[int(np.argmax(gain))])
    return out


def _median_and_robust_sd(
    y: FloatArray, xs: FloatArray | None, of: Callable[[FloatArray], FloatArray] | None
) -> tuple[float, float]:
    """`median_and_robust_sd` of ``y = of(x)``; read from ``x``'s sorted copy ``xs`` where it is
    given and ``of`` keeps it sorted (`_common.sorted_under`)."""
    if xs is None or (of is not None and not sorted_under(xs, of)):
        return median_and_robust_sd(y)
    mid = median_sorted(xs, of)
    return mid, MAD_SCALE * mad_sorted(xs, mid, of)


def levels(
    x: FloatArray,
    starts: IntArray,
    med: FloatArray,
    min_windows: int = 20,
    exclude: npt.NDArray[np.bool_] | None = None,
) -> tuple[Levels, npt.NDArray[np.bool_]] | None:
    """Two speed levels the window medians switch between, and which windows are at the slow
    one; None when there are not two. The split is the best two-group split of the sorted
    logarithms of the window medians (each group at least ``LEVEL_MIN_SHARE`` of them and 2);
    it is two levels when the groups' medians are at least ``LEVEL_MIN_RATIO`` apart, their gap
    at least ``LEVEL_SEPARATION`` robust SDs of the windows around their own group's median
    (one spread-out level split in two gives about 2.5), and the windows change group at least
    ``LEVEL_MIN_SWITCHES`` times (one change is a level shift: a change point) but fewer than
    ``LEVEL_MAX_SWITCH_SHARE`` of what a random order would make, a window's
    level being the majority of itself and its two neighbours (a window whose median lies
    near the threshold by chance is not a switch). Windows in ``exclude`` (a warm-up) take no
    part and are at neither level."""
    nw = med.size
    use = np.ones(nw, dtype=bool) if exclude is None else ~exclude
    if int(use.sum()) < min_windows or not float(med.min()) > 0.0:
        return None
    y = np.log(med)
    srt = np.sort(y[use])
    nw = srt.size
    k0 = max(2, math.ceil(LEVEL_MIN_SHARE * nw))
    if nw < 2 * k0:
        return None
    c1 = np.concatenate([[0.0], np.cumsum(srt)])
    c2 = np.concatenate([[0.0], np.cumsum(srt * srt)])
    k = np.arange(k0, nw - k0 + 1)
    within = (c2[k] - c1[k] ** 2 / k) + ((c2[nw] - c2[k]) - (c1[nw] - c1[k]) ** 2 / (nw - k))
    cut = int(k[int(np.argmin(within))])
    lo, hi = median(srt[:cut]), median(srt[cut:])
    raw = y >= 0.5 * (srt[cut - 1] + srt[cut])
    res = np.where(raw, y - hi, y - lo)[use]
    sd = robust_sd(res)
    gap = hi - lo
    if math.expm1(gap) < LEVEL_MIN_RATIO or not gap >= LEVEL_SEPARATION * max(sd, 1e-12):
        return None
    # the majority of each window and its neighbours (among the windows used)
    idx = np.flatnonzero(use)
    r = raw[idx].astype(np.int64)
    q = float(r.mean())
    at_random = 2.0 * q * (1.0 - q) * (r.size - 1)
    if int(np.count_nonzero(r[1:] != r[:-1])) > LEVEL_MAX_SWITCH_SHARE * at_random:
        return None  # the groups alternate as if at random: two modes, not two speeds
    pad = np.concatenate([r[:1], r, r[-1:]])
    maj = (pad[:-2] + pad[1:-1] + pad[2:]) >= 2
    slow = np.zeros(med.size, dtype=bool)
    slow[idx] = maj
    changed = idx[np.flatnonzero(maj[1:] != maj[:-1]) + 1]
    if changed.size < LEVEL_MIN_SWITCHES:
        return None
    in_slow = np.zeros(x.size, dtype=bool)
    in_fast = np.zeros(x.size, dtype=bool)
    window = np.repeat(np.arange(med.size), np.diff(np.append(starts, x.size)))  # per sample
    in_slow[starts[0] :], in_fast[starts[0] :] = (use & slow)[window], (use & ~slow)[window]
    fast_ns, slow_ns = median(x[in_fast]), median(x[in_slow])
    return (
        Levels(
            fast_ns=fast_ns,
            slow_ns=slow_ns,
            ratio=slow_ns / fast_ns if fast_ns > 0 else math.inf,
            switches=int(changed.size),
            slow_share=float(in_slow.sum() / max(1, int((in_slow | in_fast).sum()))),
            switch_indices=tuple(int(starts[i]) for i in changed),
        ),
        slow,
    )


def warmup_by_worker(
    x: FloatArray, segments: list[int], w: int
) -> tuple[list[int], list[float], int, list[int]]:
    """Warm-up judged within each worker process: its first windows against the rest of that
    worker (`warmup_windows` on its own window medians). Returns the warm-up iterations and the
    slowdown of each worker that had one, the number of workers judged (those with at least
    ``MIN_WINDOWS`` windows) and where each worker that had one starts."""
    found: list[int] = []
    ratios: list[float] = []
    at: list[int] = []
    judged = 0
    a = 0
    for size in segments:
        seg = x[a : a + size]
        first = a
        a += size
        wk = max(10, min(w, seg.size // 8))
        if seg.size < MIN_WINDOWS * wk:
            continue
        judged += 1
        st, md = window_medians(seg, wk)
        got = warmup_windows(seg, st, md)
        if got is not None:
            found.append(got[0])
            ratios.append(got[1])
            at.append(first)
    return found, ratios, judged, at


def warmup_windows(x: FloatArray, starts: IntArray, med: FloatArray) -> tuple[int, float] | None:
    """Leading windows clearly above the rest (more than ``WARMUP_THRESHOLD`` and 4 robust
    SDs of the window medians' differences): (warm-up iterations, how much slower they are)."""
    nw = med.size
    rest = median(med[1:])
    sd = robust_sd(np.diff(med[1:])) / math.sqrt(2.0) if nw > 3 else 0.0
    if not (med[0] > rest * (1.0 + WARMUP_THRESHOLD) and med[0] > rest + 4.0 * sd):
        return None
    ends = np.append(starts[1:], x.size)
    k = 1
    while k < nw - 1 and med[k] > rest * (1.0 + WARMUP_THRESHOLD):
        k += 1
    warm = int(ends[k - 1])
    return warm, median(x[:warm]) / rest - 1.0


def levels_warning(lv: Levels) -> AnalysisWarning:
    """The one finding of the host's two speeds, with the advice that fits."""
    return AnalysisWarning(
        "levels",
        f"This machine changed between two speeds about {lv.ratio:.2f}x apart "
        f"{lv.switches} time{'s' if lv.switches != 1 else ''} during the run, "
        f"{100.0 * lv.slow_share:.0f}% of the samples at the slow one (median "
        f"{fmt(lv.slow_ns)} against {fmt(lv.fast_ns)}): the host's state (a virtual "
        "machine's host, steal, a neighbour), not the benchmark's; one median describes the "
        "mixture. To compare scenarios, run them together with 'latscope ab'; for one "
        "figure, use more worker processes (--repeat) or a quieter machine.",
    )


def segment_median(x: FloatArray, a: int, b: int, memo: dict[tuple[int, int], float]) -> float:
    """The median of ``x[a:b]``, kept in ``memo`` (partitioned in a copy of its own)."""
    if (a, b) not in memo:
        memo[(a, b)] = median(x[a:b])
    return memo[(a, b)]


def lasting(
    x: FloatArray,
    bounds: list[int],
    bkps: list[int],
    w: int,
    practical: float,
    t: FloatArray | None = None,
    memo: dict[tuple[int, int], float] | None = None,
) -> tuple[list[int], list[int], list[int]]:
    """The change points of changes that last: a bout of segments together shorter than
    ``MIN_LASTING`` windows, or (with the samples' start times ``t``, s) than
    ``MIN_LASTING_S``, between two segments whose medians agree within ``practical`` is an
    excursion (its change points go); between two that do not, the level moved on, and the
    bout's first change point stays alone; a bout at either end of the run goes (a change
    cannot be shown to last there). Returns the bounds, the window breakpoints and the sample
    indices of the change points that went. ``memo`` keeps the segments' medians (each made
    once, for the caller too)."""
    bounds, bkps = list(bounds), list(bkps)
    windows = MIN_LASTING * w
    gone: list[int] = []

    def brief(a: int, b: int) -> bool:
        """Is the stretch of samples a..b-1 too short to be a lasting level?"""
        if b - a < windows:
            return True
        return t is not None and float(t[b - 1] - t[a]) < MIN_LASTING_S

    memo = {} if memo is None else memo

    def medians() -> list[float]:
        return [segment_median(x, a, b, memo) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    changed = True
    while changed and len(bounds) > 2:
        changed = False
        med = medians()
        last = len(med) - 1
        if brief(bounds[0], bounds[1]):  # a bout at the start
            gone.append(bounds.pop(1))
            del bkps[0]
            changed = True
            continue
        if brief(bounds[-2], bounds[-1]):  # a bout at the end
            gone.append(bounds.pop(-2))
            del bkps[-1]
            changed = True
            continue
        for i in range(1, last):
            if not brief(bounds[i], bounds[i + 1]):
                continue
            j = i  # the bout: segments i..j, together too short to last
            while j + 1 < last and brief(bounds[i], bounds[j + 2]):
                j += 1
            before, after = med[i - 1], med[j + 1]
            if before and abs(after / before - 1.0) < practical:
                gone += bounds[i : j + 2]  # back where it was: an excursion
                del bounds[i : j + 2]
                del bkps[i - 1 : j + 1]
            else:  # the level moved on: one change point, where the bout began
                gone += bounds[i + 1 : j + 2]
                del bounds[i + 1 : j + 2]
                del bkps[i : j + 1]
            changed = True
            break
    # what merging left must still be large enough to matter: the smallest change goes first
    while len(bounds) > 2:
        med = medians()
        rel = [abs(b / a - 1.0) if a else math.inf for a, b in zip(med[:-1], med[1:], strict=True)]
        k = int(np.argmin(rel))
        if rel[k] >= practical:
            break
        gone.append(bounds.pop(k + 1))
        del bkps[k]
    return bounds, bkps, sorted(gone)
