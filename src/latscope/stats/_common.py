"""Shared plumbing for the analysis modules: input validation, cached derived arrays, results.

Every analysis takes a one-dimensional array of latencies in nanoseconds, in iteration order, and
optionally an array of iteration start times in seconds. Several analyses need the same expensive
derived arrays (the sort permutation, the sorted values, rank-based normal scores). ``Prepared``
computes each of them at most once; ``analyze_column`` passes one ``Prepared`` to every analysis,
while a caller who only wants one figure can pass a plain array.

Results are frozen dataclasses deriving from ``Result``, whose ``to_dict()`` returns plain Python
values that ``json.dumps`` accepts (arrays become lists, non-finite floats become ``None``).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Scale factor turning a MAD into a standard-deviation estimate for normal data.
MAD_SCALE = 1.4826


def jsonable(value: Any) -> Any:
    """Convert a result value into plain JSON-serialisable Python objects."""
    if isinstance(value, Result):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


class Result:
    """Mixin for frozen result dataclasses: ``to_dict()`` gives JSON-serialisable values."""

    def to_dict(self) -> dict[str, Any]:
        assert dataclasses.is_dataclass(self)
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class AnalysisWarning(Result):
    """A reason not to trust a figure. ``code`` is stable and machine-readable; ``message`` is
    one or two sentences for a person: what is wrong and what to do about it."""

    code: str
    message: str


def as_float_array(x: npt.ArrayLike, name: str = "x") -> FloatArray:
    """Validate a sample column: one-dimensional, non-empty, all finite. Returns float64."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty: there are no samples to analyse")
    if not np.isfinite(a).all():
        bad = int(np.count_nonzero(~np.isfinite(a)))
        raise ValueError(
            f"{name} holds {bad} non-finite value(s) (NaN or inf); a failed measurement must be "
            "an error, never a sample: fix the input"
        )
    return np.ascontiguousarray(a)


class Prepared:
    """Validated samples plus lazily computed, cached derived arrays.

    ``order`` is the sort permutation (``x[order]`` is sorted), ``sorted`` the sorted values and
    ``normal_scores`` the van der Waerden scores ``Phi^-1((midrank - 0.5) / n)``. Tied values get
    the same score (mid-ranks), so a coarse clock that produces many equal readings does not create
    spurious autocorrelation through the order in which ties happen to be broken.
    """

    def __init__(
        self,
        x: npt.ArrayLike,
        t: npt.ArrayLike | Callable[[], npt.ArrayLike] | None = None,
        step: float | None = None,
    ) -> None:
        self.x: FloatArray = as_float_array(x, "x")
        #: the clock's granularity in the units of x (None: unknown, treat as continuous)
        self.step: float | None = float(step) if step and step > 0 else None
        self.n: int = int(self.x.size)
        self._t: FloatArray | None = None
        self._make_t = t if callable(t) else None
        if t is not None and self._make_t is None:
            self._t = self._checked_t(t)
        self._sorting = threading.Lock()  # two threads that ask for `sorted` get one sort

    def _checked_t(self, t: npt.ArrayLike) -> FloatArray:
        tt = as_float_array(t, "t")
        if tt.size != self.n:
            raise ValueError(
                f"t has {tt.size} start times but x has {self.n} samples; they must match"
            )
        return tt

    @property
    def t(self) -> FloatArray | None:
        """The iteration start times (s), or None. Given as a function, they are made when
        first asked for (by the drift): the steps before it do without them in memory."""
        if self._make_t is not None:
            make, self._make_t = self._make_t, None
            self._t = self._checked_t(make())
        return self._t

    @cached_property
    def order(self) -> IntArray:
        return np.argsort(self.x).astype(np.int64, copy=False)

    @cached_property
    def sorted(self) -> FloatArray:
        with self._sorting:  # (another thread may have made it while this one waited)
            if "sorted" not in self.__dict__:
                xs = self.x[self.order] if "order" in self.__dict__ else np.sort(self.x)
                self.__dict__["sorted"] = xs
            return self.__dict__["sorted"]  # type: ignore[no-any-return]

    @cached_property
    def normal_scores(self) -> FloatArray:
        n = self.n
        # the sorted values find the ties, and are kept for the stages after the dependence
        # test (which frees the order and scores it made before its transform needs the room)
        if n > PACKED_MIN and "order" not in self.__dict__:
            # a long column: ranked by one sort of packed keys (`packed_order`) and its sorted
            # copy (asked for second: `analyze_column` makes it in the meantime)
            keys = packed_order(self.x)
            return _scores_in_chunks(self.sorted, keys)
        order = self.order
        xs = self.sorted  # kept: the stages after the dependence test read it
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(xs[1:], xs[:-1], out=new[1:])
        del xs
        starts = np.flatnonzero(new)
        del new
        if starts.size == n:  # no ties: the scores only depend on n, and are antisymmetric
            del starts
            half = (n + 1) // 2
            scores_sorted = np.empty(n)
            scores_sorted[:half] = special.ndtri((np.arange(half, dtype=np.float64) + 0.5) / n)
            scores_sorted[n - half :] = -scores_sorted[:half][::-1]
        else:
            ends = np.append(starts[1:], n)
            midrank = (starts + 1 + ends) / 2.0  # 1-based mean rank of each tie group
            scores_sorted = np.repeat(special.ndtri((midrank - 0.5) / n), ends - starts)
            del starts, ends, midrank
        scores = np.empty(n, dtype=np.float64)
        scores[order] = scores_sorted
        return scores

    def quantile(self, p: float) -> float:
        """Quantile ``p`` (0..1); grouped within the clock's step when it is known (see
        ``quantile_sorted``)."""
        return quantile_sorted(self.sorted, p, self.step)

    def windows(self, w: int) -> tuple[IntArray, FloatArray, FloatArray]:
        """The starts, medians and robust SDs (``MAD_SCALE`` x the median absolute deviation
        from the window's median) of consecutive windows of ``w`` samples, the last one also
        taking the remainder: made once for the drift's and the outliers' windows (the same
        windows from 200,000 samples on)."""
        key = f"_windows_{w}"
        if key not in self.__dict__:
            self.__dict__[key] = window_stats(self.x, w)
        return self.__dict__[key]  # type: ignore[no-any-return]

    def release(self, name: str) -> None:
        """Forget a cached derived array (``"normal_scores"``, ...) to free its memory."""
        self.__dict__.pop(name, None)


#: A monotone function of the samples, applied one element at a time (``np.log``): the
#: statistics of ``median_sorted`` and ``mad_sorted`` are then those of ``of(x)``.
Monotone = Callable[[FloatArray], FloatArray]


def _reader(xs: FloatArray, of: Monotone | None) -> Callable[[int], np.float64]:
    """The ``i``-th value of ``of(xs)`` (of ``xs`` itself without ``of``), made alone: numpy's
    elementwise functions give an element the same number in an array of any length."""
    if of is None:
        return xs.__getitem__  # type: ignore[no-any-return]
    return lambda i: of(xs[i : i + 1])[0]  # type: ignore[no-any-return]


def median(a: FloatArray, overwrite: bool = False) -> float:
    """``np.median`` of a one-dimensional float array (NaN when it holds one): the same number
    from one partition (of ``a`` itself with ``overwrite``), without np.median's generality,
    which costs several times the partition on the short arrays of the drift and its
    levels."""
    n = a.size
    if n == 0:
        return float(np.median(a))
    h = n // 2
    kth = (h, n - 1) if n % 2 else (h - 1, h, n - 1)  # the last: a NaN sorts there
    if overwrite:
        a.partition(kth)
        p = a
    else:
        p = np.partition(a, kth)
    if math.isnan(p[-1]):
        return math.nan
    if n % 2:  # np.median's mean of the middle one or two (a sum: -0.0 comes out 0.0)
        return float(p[h : h + 1].sum())
    return float(p[h - 1 : h + 1].sum() / 2)


def median_sorted(xs: FloatArray, of: Monotone | None = None) -> float:
    """``np.median`` of sorted ``xs`` (of ``of(xs)``, which must then be sorted too: see
    `sorted_under`): the middle value, or the mean of the middle two."""
    n = xs.size
    h = n // 2
    get = _reader(xs, of)
    if n % 2:
        return float(get(h))
    return float((get(h - 1) + get(h)) / 2.0)


def mad_sorted(xs: FloatArray, mid: float, of: Monotone | None = None) -> float:
    """``np.median(np.abs(xs - mid))`` of sorted ``xs`` (of ``of(xs)``, as in `median_sorted`)
    in ``O(log n)``: the deviations are two sorted runs, ``mid - xs[i]`` leftwards from
    ``mid`` and ``xs[i] - mid`` rightwards (the same numbers as ``|x - mid|``: a rounded
    difference changes sign exactly), and their middle one or two are found by bisection."""
    n = xs.size
    h = n // 2
    get = _reader(xs, of)
    if of is None:
        c = int(np.searchsorted(xs, mid, side="left"))
    else:  # the first index at or above mid, by bisection
        c, top = 0, n
        while c < top:
            i = (c + top) // 2
            c, top = (i + 1, top) if get(i) < mid else (c, i)
    if n % 2:
        return float(_kth_deviation(get, n, c, mid, h))
    return float((_kth_deviation(get, n, c, mid, h - 1) + _kth_deviation(get, n, c, mid, h)) / 2.0)


def sorted_under(xs: FloatArray, of: Monotone, chunk: int = 2**18) -> bool:
    """Whether ``of(xs)`` of sorted ``xs`` is sorted too (a correctly rounded monotone function
    is; an approximation within an ulp need not be), made a chunk at a time (no array of its
    size)."""
    for a in range(0, xs.size, chunk):
        v = of(xs[a : a + chunk + 1])
        if bool(np.any(v[1:] < v[:-1])):
            return False
    return True


def _kth_deviation(
    get: Callable[[int], np.float64], n: int, c: int, mid: float, k: int
) -> np.float64:
    """The ``k``-th smallest (0-based) of ``|v - mid|``, ``v`` sorted (``v[i] = get(i)``, ``c``
    the first index at or above ``mid``): ``a`` deviations from the left run (``mid - v[c -
    1], mid - v[c - 2], ...``) and ``k + 1 - a`` from the right run (``v[c] - mid, ...``), ``a``
    the largest count whose last left deviation is no larger than the next right one."""
    m = np.float64(mid)
    inf = np.float64(np.inf)

    def left(j: int) -> np.float64:  # the j-th (0-based) deviation of the left run
        return m - get(c - 1 - j) if j < c else inf

    def right(j: int) -> np.float64:
        return get(c + j) - m if j < n - c else inf

    lo, hi = max(0, k + 1 - (n - c)), min(k + 1, c)
    while lo < hi:  # the largest a in [lo, hi] with left(a - 1) <= right(k + 1 - a)
        a = (lo + hi + 1) // 2
        if left(a - 1) <= right(k + 1 - a):
            lo = a
        else:
            hi = a - 1
    a = lo
    best = np.float64(-np.inf)
    if a > 0:
        best = left(a - 1)
    if k + 1 - a > 0:
        best = max(best, right(k - a))
    return best


def window_stats(x: FloatArray, w: int) -> tuple[IntArray, FloatArray, FloatArray]:
    """`Prepared.windows` of ``x``: the windows' rows copied once (``np.median`` would copy
    each again), partitioned for their medians, then made their absolute deviations in place
    and partitioned again for their MADs: the numbers of ``np.median`` on each window."""
    n = x.size
    w = max(1, min(int(w), n))
    nw = max(1, n // w)
    starts = np.arange(nw, dtype=np.int64) * w
    med = np.empty(nw)
    mad = np.empty(nw)
    if nw > 1:
        rows = x[: (nw - 1) * w].reshape(nw - 1, w).copy()
        med[:-1] = np.median(rows, axis=1, overwrite_input=True)
        rows -= med[:-1, None]
        np.abs(rows, out=rows)
        mad[:-1] = np.median(rows, axis=1, overwrite_input=True)
        del rows
    last = x[(nw - 1) * w :].copy()
    med[-1] = np.median(last, overwrite_input=True)
    last -= med[-1]
    np.abs(last, out=last)
    mad[-1] = np.median(last, overwrite_input=True)
    mad *= MAD_SCALE
    return starts, med, mad


#: `sums_of` makes the values a run of at most this many at a time (512 KiB: in a CPU's cache).
SUM_CHUNK = 2**16


def sums_of(
    make: Callable[[int, int, FloatArray], FloatArray], bounds: IntArray, chunk: int = SUM_CHUNK
) -> FloatArray:
    """``np.add.reduceat(v, bounds[:-1])`` of values ``v[a:b] = make(a, b, out)`` (``out`` a
    buffer of ``b - a`` to make them in), batches ``[bounds[j], bounds[j + 1])`` each at least
    one long, without an array of them all: each batch's sum is numpy's (its first value plus
    the pairwise sum of the rest, halves cut at multiples of 8), its runs of up to ``chunk``
    values made in the buffer and summed by ``np.add.reduce``, which sums a run as the whole
    array's pairwise sum sums that part of it. The same numbers, from a cache's worth of
    memory instead of passes over a column-sized array."""
    chunk = max(chunk, 128)  # numpy sums up to 128 values in one block, never halved
    buf = np.empty(max(1, min(chunk, int(np.max(np.diff(bounds))))))
    out = np.empty(bounds.size - 1)
    for j in range(out.size):
        a, b = int(bounds[j]), int(bounds[j + 1])
        first = make(a, a + 1, buf[:1])[0]
        out[j] = first + _pairwise(make, buf, chunk, a + 1, b - a - 1) if b - a > 1 else first
    return out


def _pairwise(
    make: Callable[[int, int, FloatArray], FloatArray], buf: FloatArray, chunk: int, a: int, m: int
) -> np.float64:
    """numpy's pairwise sum of the ``m`` values from ``a`` (`sums_of`). A function of the
    module, not a closure that calls itself: that is a reference cycle, which held ``make``
    and through it the caller's column until the cycle collector ran (it counts objects, not
    bytes: two columns of a keep's earlier analyses, 1.6 GB at 10^8, lived through the
    later ones)."""
    if m <= chunk:
        return np.add.reduce(make(a, a + m, buf[:m]))  # type: ignore[no-any-return]
    h = m // 2
    h -= h % 8
    return _pairwise(make, buf, chunk, a, h) + _pairwise(make, buf, chunk, a + h, m - h)


def _scores_in_chunks(xs: FloatArray, order: IntArray) -> FloatArray:
    """The normal scores of the values whose sorted copy is ``xs`` and which ``order`` ranks
    (mid-ranks for ties), made a chunk of ``SCORE_CHUNK`` ranks at a time: no array of the
    column's size but the scores themselves. A tie group cut by a chunk's edge is found whole
    in ``xs`` (two binary searches per chunk)."""
    n = xs.size
    scores = np.empty(n, dtype=np.float64)
    for a in range(0, n, SCORE_CHUNK):
        b = min(n, a + SCORE_CHUNK)
        seg = xs[a:b]
        new = np.empty(b - a, dtype=bool)
        new[0] = True
        np.not_equal(seg[1:], seg[:-1], out=new[1:])
        if new.all() and (a == 0 or xs[a - 1] != seg[0]) and (b == n or xs[b] != seg[-1]):
            # no ties: rank r has the mid-rank r + 1, the score of (r + 0.5) / n (the same
            # numbers as below)
            ranks = np.arange(a, b, dtype=np.float64)
            ranks += 0.5
            ranks /= n
            scores[order[a:b]] = special.ndtri(ranks)
            continue
        first = np.flatnonzero(new)  # each tie group's first rank in the chunk
        del new
        last = np.append(first[1:], b - a)
        sizes = last - first
        starts, ends = first + a, last + a
        starts[0] = np.searchsorted(xs, seg[0], side="left")  # the group begun before a
        ends[-1] = np.searchsorted(xs, seg[-1], side="right")  # ... and ended after b
        midrank = (starts + 1 + ends) / 2.0  # 1-based mean rank of each tie group
        score = special.ndtri((midrank - 0.5) / n)
        scores[order[a:b]] = np.repeat(score, sizes)
    return scores


#: Columns of more samples than this are ranked for their normal scores by `packed_order`.
PACKED_MIN = 2**23
PACK_CHUNK = 2**20
SCORE_CHUNK = 2**18


def packed_order(x: FloatArray) -> IntArray:
    """An order that sorts ``x`` but for values within a relative 2^-(52 - b) of each other
    (``b`` the bits of an index, 27 at 10^8 samples: 3e-8), which keep their order in ``x``:
    each value's bit pattern, made to sort as the value, has its lowest ``b`` bits replaced by
    its index, and the keys are sorted in place (a vectorised sort: ten times faster than
    argsort at 10^8 samples, and no more memory than the keys). The normal scores of a long
    column rank by it: two values that close are one clock tick apart at 30 ms and more, and
    swapping their ranks moves each score by one rank in ``n``. Values must not be NaN."""
    n = x.size
    bits = max(1, int(n - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    sign = np.uint64(1 << 63)
    keys = np.empty(n, dtype=np.uint64)
    for a in range(0, n, PACK_CHUNK):  # in chunks: no temporary of the column's size
        b = min(n, a + PACK_CHUNK)
        k = x[a:b].view(np.uint64)
        flip = k >> np.uint64(63)  # 1 for a negative value
        np.negative(flip, out=flip)  # ... all ones: every bit flipped (reversed order)
        flip |= sign  # a positive value only gains the sign bit: above every negative
        out = keys[a:b]
        np.bitwise_xor(k, flip, out=out)
        out &= ~low
        out |= np.arange(a, b, dtype=np.uint64)
    keys.sort()
    keys &= low
    return keys.view(np.int64)


def as_prepared(
    x: npt.ArrayLike | Prepared, t: npt.ArrayLike | None = None, step: float | None = None
) -> Prepared:
    """Return ``x`` if it is already ``Prepared`` (``t`` and ``step`` must then be None or the
    same), else validate and wrap it."""
    if isinstance(x, Prepared):
        if (t is not None and x.t is None) or (step is not None and x.step is None):
            return Prepared(x.x, t if t is not None else x.t, step if step is not None else x.step)
        return x
    return Prepared(x, t, step)


def subsample(a: FloatArray, max_points: int, rng: np.random.Generator) -> FloatArray:
    """A uniformly random subset (without replacement, in original order) of at most
    ``max_points`` values; ``a`` itself when it is small enough."""
    if a.size <= max_points:
        return a
    idx = np.sort(rng.choice(a.size, size=max_points, replace=False))
    return a[idx]


def quantile_sorted(xs: FloatArray, p: float, step: float | None = None) -> float:
    """Quantile ``p`` (0..1) of already-sorted data.

    Without ``step``: numpy's default "linear" method (Hyndman & Fan type 7), the value at
    fractional order-statistic position ``p * (n - 1)``.

    With ``step`` (the clock's granularity, data quantised to it): the quantile of the *grouped*
    distribution, ``grouped_position(xs, p * n, step)``. Each distinct value ``v`` stands for the
    interval ``[v - step/2, v + step/2]`` (clipped at the midpoint to a neighbouring distinct
    value closer than a step, so unquantised data stay well defined), its samples spread evenly
    over it; the grouped CDF rises linearly across that interval, and the quantile is where it
    reaches ``p``. For the median of ``c`` samples equal to ``v`` with ``below`` samples under
    ``v``: ``v - step/2 + step * (n/2 - below) / c``. Unlike an order statistic this moves
    continuously (by ``step / c`` per sample that changes sides) instead of jumping a whole step."""
    if step is None or not step > 0.0:
        n = xs.size
        h = p * (n - 1)
        lo = int(math.floor(h))
        hi = min(lo + 1, n - 1)
        frac = h - lo
        return float(xs[lo] + frac * (xs[hi] - xs[lo]))
    return float(grouped_position(xs, np.array([p * xs.size]), step)[0])


def grouped_position(xs: FloatArray, pos: npt.ArrayLike, step: float) -> FloatArray:
    """The grouped-CDF inverse of sorted, quantised data (see ``quantile_sorted``) at count
    positions ``pos`` (0..n: how many samples lie below the point). ``O(log n)`` per position.
    Data with no negative value (durations) are taken to be non-negative: the interval of the
    smallest value does not reach below 0."""
    n = xs.size
    t = np.clip(np.asarray(pos, dtype=np.float64), 0.0, float(n))
    k = np.clip(np.ceil(t).astype(np.int64) - 1, 0, n - 1)
    v = xs[k]
    lo = np.searchsorted(xs, v, side="left")
    hi = np.searchsorted(xs, v, side="right")
    half = 0.5 * step
    left = xs[np.maximum(lo - 1, 0)]
    right = xs[np.minimum(hi, n - 1)]
    h_lo = np.where(lo > 0, np.minimum(half, 0.5 * (v - left)), half)
    if xs[0] >= 0.0:
        # durations: a reading of 0 (or of less than half a step) stands for [0, v + step/2],
        # never for negative time
        h_lo = np.minimum(h_lo, np.maximum(v, 0.0))
    h_hi = np.where(hi < n, np.minimum(half, 0.5 * (right - v)), half)
    frac = (t - lo) / (hi - lo)
    return v - h_lo + (h_lo + h_hi) * frac
