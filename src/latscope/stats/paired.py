"""The paired statistic of interleaved arms (``latscope ab``): is an arm faster or slower than
the baseline arm measured in the same rounds, or the same within noise?

The probe runs several *arms* in one process: blocks of about 5 ms alternate between the arms
in balanced rounds (every arm once per round, in a freshly shuffled order), in ``W`` worker
processes one after another. The host moves between speed levels (this VM: two, 1.33x apart,
switching every few seconds or faster), so two whole runs made one after the other differ by
whatever the host did in between. Two blocks of one round are 5 ms apart and almost always
see the same level: their ratio cancels it.

Table. ``block_table`` reduces the samples to one row per (worker, round, arm): the block's
median, its sample count, and the arm's position in its round (0: ran first). With the clock's
``step`` known the block median is the grouped median (``_common.quantile_sorted``), so that a
quantised clock does not make block medians jump a whole step.

Per round, ``d = log(median of the arm's block / median of the baseline's block)``; a round
in which either arm has no block (a worker's last, incomplete round) is dropped.

Within a worker. The worker's estimate is the **median** of its ``d``. Round log ratios are
near-normal with rare gross errors (a block during which the host switched level is up to
``log 1.33`` off), so the candidates were the median and the Hodges–Lehmann estimate. In
``bench/paired_synthetic.py`` Hodges–Lehmann is the more precise per worker (RMS error 0.14%
against 0.17% over 166 rounds), but the interval of the effect is set by the between-worker
level (0.7% per worker there, below), where the two are indistinguishable, and only the
median's bootstrap is cheap (a resample's median, against a weighted median of ``n^2 / 2``
Walsh averages per resample). Its variance comes from a **circular block bootstrap**
(Politis & Romano 1992) of the worker's sequence of ``d`` in round order, blocks of the
Politis–White length (``dependence.politis_white_block_length`` on the normal scores of
``d``, so gross errors do not set it): rounds that share a slow drift of one arm's cost are
not counted as independent. A block bootstrap's variance falls short by about ``c / ell``
(``ell`` the block length) when the rounds are dependent, which with 200 rounds per worker
left a within-worker interval at 85–88% instead of 95%; so when ``ell > 1`` the variance is
also bootstrapped with blocks of ``2 ell`` and extrapolated, ``max(v_ell, 2 v_2ell - v_ell)``
(Richardson): 92% for an AR(1) of 0.5 on ``d``, 88% for 0.8 (90% with 1,000 rounds); with
independent rounds 94%. A worker with fewer than ``MIN_WORKER_ROUNDS`` rounds takes the
others' variance per round (or, with none long enough, the pooled variance of ``d`` times
``pi / 2``).

Between workers. Each worker process has its own memory layout, and a layout shifts the arms'
costs by different amounts (a fraction of a percent to a percent or more), so the ratio one
process sees is off the truth by a random ``u_w`` that no number of rounds removes; only more
processes average it out (Kalibera & Jones). The model is that of random-effects
meta-analysis: ``y_w ~ N(mu, v_w + tau^2)``, ``y_w`` the worker's estimate, ``v_w`` its
bootstrap variance, ``tau`` the layout spread. With 2–3 workers the data alone cannot
estimate ``tau``. A two-stage bootstrap (workers with replacement, then rounds) knows only 10
distinct worker resamples of 3 and understates their variance by a third: it covered 80% on
the simulated runs below. A Student interval on the worker estimates has ``W - 1 = 2``
degrees of freedom (4.3 standard errors): 95% coverage, but it found a 2% change in only 61%
of runs. So the combination is the Bayesian random-effects one recommended for meta-analyses
of two or three studies (Friede et al. 2017; Röver et al. 2021, weakly informative priors for
the heterogeneity): a flat prior on ``mu``, a half-normal prior of scale ``worker_sd`` on
``tau`` (default ``DEFAULT_WORKER_SD``, 1%, a prior median spread of 0.67%), and the
posterior of ``mu`` integrated over ``tau`` on a grid (a mixture of normals). The interval is
its central ``level`` credible interval and the estimate its median. Workers that disagree
more than the prior expects push ``tau`` up and widen the interval. One worker alone gets the
prior's spread: its interval never pretends the layout is known. A measured spread (the
between-worker sd of an A/A ``ab`` run, a trust record) can be passed as ``worker_sd``, and
``worker_sd=0`` treats all workers as one layout (fixed effect, within variation only).
Coverage on the two-level process of ``tests/synth.interleaved`` (3 workers, 5 s, layout sd
0.5% per arm, i.e. 0.7% on a ratio): 96% (``bench/paired_synthetic.py``). It depends on how
the true layout spread compares with the prior's (``--sweep``, 200 runs each): for a ratio's
spread of 0.35%, 0.7%, 1.06% and 1.4%, two workers covered 100%, 98%, 90% and 84.5%, three
99.5%, 95%, 90% and 87%, five 96%, 93%, 91% and 89.5%. No interval can be both right and
narrow at the larger spreads: with a 1.4% spread between workers, even a known ``tau`` leaves
three workers' mean 0.8% uncertain, and a 2% change is then found in about two runs of
three. How far apart the layouts of real arms put a ratio is for an A/A ``ab`` with many
workers to measure, and its figure belongs in ``worker_sd``.

Verdict. ``compare.verdict``, the one verdict function of latscope, on the interval of the
ratio against ``noise`` (default ``DEFAULT_PAIRED_NOISE``, 1%): "slower"/"faster" only when the
interval excludes 1 and the ratio exceeds the threshold, "same" when the whole interval lies
within ±``noise``, otherwise "inconclusive" with ``settle``, one sentence saying what would
settle it. Fewer than ``MIN_ROUNDS`` complete rounds give no interval (the range of the round
ratios stands in, and the verdict is "inconclusive").

Order effect. The rounds split by which of the two ran first. The order effect is the ratio
of the effect in the rounds where the arm ran first to that in the rounds where the baseline
did, with its interval from the same bootstrap (both medians from each resample of rounds) and
the same combination of workers (the layout cancels in this contrast, so the prior makes its
interval conservative: fewer false warnings). Shuffled rounds balance the order, so carry-over
(one arm's block leaves caches, pipes or a frequency behind for the next) hardly biases the
ratio; but then the arms cost different amounts depending on their neighbour, and the effect
is not that of the arm alone. ``order_warning`` says so when the order effect's interval
excludes 1 and the order effect is larger than the whole interval of the effect.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt
from scipy import special

from ..units import fmt_ratio
from ._common import FloatArray, IntArray, Result, median
from .between import combine_workers
from .compare import verdict as _verdict
from .dependence import autocorrelation, politis_white_block_length
from .dist import rankdata
from .intervals import DEFAULT_LEVEL, N_BOOT

#: The change that matters for paired arms: 1% (pairing in rounds resolves smaller changes than
#: two whole runs do, so the threshold is below ``compare.DEFAULT_NOISE``).
DEFAULT_PAIRED_NOISE = 0.01
#: Scale of the half-normal prior on the between-worker (layout) sd of a paired log ratio.
DEFAULT_WORKER_SD = 0.01
#: Fewer complete rounds than this in all workers together: no interval, "inconclusive".
MIN_ROUNDS = 10
#: A worker with fewer rounds than this gets the pooled within-worker variance (per round)
#: of the others instead of its own bootstrap's.
MIN_WORKER_ROUNDS = 10
#: Smallest sd of one round's log ratio assumed (identical block medians would otherwise
#: claim a zero-width interval).
MIN_ROUND_SD = 1e-4
#: Bootstrap resamples handled at once (memory: this many x rounds).
_CHUNK = 256

#: What would settle an inconclusive verdict (``Paired.settle``): too few rounds for an
#: interval, or an interval whose width comes mostly from the rounds ...
SETTLE_ROUNDS = "more rounds: run longer (--time)"
SETTLE_FEW_ROUNDS = SETTLE_ROUNDS
#: ... or mostly from the workers' layouts (the between-worker level)
SETTLE_WORKERS = "more worker processes: their layouts decide the interval (--repeat)"
#: the ratio lies within the threshold, its interval reaches past it (+ one of the above)
SETTLE_NEAR = "the ratio lies within the threshold but its interval reaches past it; "
#: a real difference (the interval excludes 1) smaller than the threshold
SETTLE_SMALL = (
    "the arms differ by less than the threshold: a smaller --noise calls the difference, "
    "a narrower interval (--time, --repeat) calls them the same"
)


@dataclasses.dataclass(frozen=True, eq=False)
class BlockTable(Result):
    """One row per (worker, round, arm), sorted by worker, round and position: the median of
    the arm's block in that round (ns), the block's sample count, and the arm's position in
    its round (0: it ran first)."""

    worker: IntArray
    round: IntArray
    arm: IntArray
    median: FloatArray
    count: IntArray
    position: IntArray

    def __len__(self) -> int:
        return int(self.median.size)


def _int_column(a: npt.ArrayLike, name: str, n: int) -> IntArray:
    x = np.asarray(a)
    if x.ndim != 1 or x.size != n:
        raise ValueError(f"{name} must be one-dimensional with one entry per sample ({n})")
    if x.size and not np.issubdtype(x.dtype, np.integer):
        xf = x.astype(np.float64)
        if not (np.isfinite(xf).all() and (xf == np.round(xf)).all()):
            raise ValueError(f"{name} must hold whole numbers")
    return np.ascontiguousarray(x, dtype=np.int64)


def _grouped_medians(rows: FloatArray, step: float) -> FloatArray:
    """``quantile_sorted(row, 0.5, step)`` of every row of ``rows`` (each row sorted, all of
    one length ``c``), vectorised: the grouped median of quantised data."""
    r, c = rows.shape
    t = 0.5 * c
    k = min(max(math.ceil(t) - 1, 0), c - 1)
    v = rows[:, k]
    lo = (rows < v[:, None]).sum(axis=1)
    hi = (rows <= v[:, None]).sum(axis=1)
    half = 0.5 * step
    at = np.arange(r)
    left = rows[at, np.maximum(lo - 1, 0)]
    right = rows[at, np.minimum(hi, c - 1)]
    h_lo = np.where(lo > 0, np.minimum(half, 0.5 * (v - left)), half)
    h_lo = np.minimum(h_lo, np.maximum(v, 0.0))  # durations: never below 0
    h_hi = np.where(hi < c, np.minimum(half, 0.5 * (right - v)), half)
    frac = (t - lo) / (hi - lo)
    return v - h_lo + (h_lo + h_hi) * frac


def _segment_medians(
    x: FloatArray, starts: IntArray, counts: IntArray, step: float | None
) -> FloatArray:
    """The median of every contiguous segment ``x[starts[i] : starts[i] + counts[i]]``,
    vectorised over the segments of equal length (np.partition for each such group)."""
    med = np.empty(starts.size)
    by_count = np.argsort(counts, kind="stable")
    sc = counts[by_count]
    bounds = np.flatnonzero(np.diff(sc)) + 1
    for grp in np.split(by_count, bounds):
        c = int(counts[grp[0]])
        # at most ~8 MB of gathered values at a time
        per = max(1, (1 << 20) // c)
        for j in range(0, grp.size, per):
            g = grp[j : j + per]
            rows = x[starts[g][:, None] + np.arange(c)]
            if step is not None:
                rows.sort(axis=1)
                med[g] = _grouped_medians(rows, step)
            else:
                hi = c // 2
                rows.partition(hi, axis=1)  # one kth: several are much slower
                low = rows[:, :hi].max(axis=1) if c % 2 == 0 else rows[:, hi]
                med[g] = 0.5 * (low + rows[:, hi])
    return med


def block_table(
    values: npt.ArrayLike,
    arm: npt.ArrayLike,
    block: npt.ArrayLike,
    round_: npt.ArrayLike,
    worker: npt.ArrayLike,
    *,
    step: float | None = None,
) -> BlockTable:
    """Reduce interleaved samples (``values`` in ns, positive; ``arm``, ``block``, ``round_``,
    ``worker`` whole numbers, one per sample) to one row per block (module docstring). A block
    is identified by (worker, block) and its samples need not be contiguous (the probe writes
    them so; otherwise they are sorted once). ``step``: the clock's granularity in ns (grouped
    block medians). Raises ValueError on bad input."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {x.shape}")
    n = x.size
    if n == 0:
        raise ValueError("values is empty: there are no samples to analyse")
    lo_x, hi_x = float(x.min()), float(x.max())  # NaN propagates through both
    if math.isnan(lo_x) or math.isinf(hi_x):
        raise ValueError("values hold NaN or infinite entries; a failed call is never a sample")
    if not lo_x > 0.0:
        bad = int(np.count_nonzero(x <= 0.0))
        raise ValueError(f"{bad} value(s) are zero or negative; durations must be positive")
    if step is not None and not (math.isfinite(step) and step > 0.0):
        step = None
    arm_a = _int_column(arm, "arm", n)
    blk = _int_column(block, "block", n)
    rnd = _int_column(round_, "round", n)
    wrk = _int_column(worker, "worker", n)
    b_min, b_span = int(blk.min()), int(blk.max()) - int(blk.min()) + 1
    w_min, w_span = int(wrk.min()), int(wrk.max()) - int(wrk.min()) + 1
    if b_span * w_span >= 1 << 62:
        raise ValueError("block or worker numbers out of range")
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(blk[1:], blk[:-1], out=change[1:])
    if w_span > 1:
        change[1:] |= wrk[1:] != wrk[:-1]
    starts = np.flatnonzero(change)
    ks = (wrk[starts] - w_min) * b_span + (blk[starts] - b_min)
    if not (ks[1:] > ks[:-1]).all() and np.unique(ks).size != ks.size:
        # a block's samples are not contiguous: sort by (worker, block) once, stably
        key = (wrk - w_min) * b_span + (blk - b_min)
        order = np.argsort(key, kind="stable")
        x, arm_a, rnd, key = x[order], arm_a[order], rnd[order], key[order]
        np.not_equal(key[1:], key[:-1], out=change[1:])
        starts = np.flatnonzero(change)
        ks = key[starts]
    for col in (arm_a, rnd):
        # a column may change only where a block starts
        if not np.isin(np.flatnonzero(col[1:] != col[:-1]) + 1, starts).all():
            raise ValueError("a block holds samples of more than one arm or round")
    counts = np.diff(np.append(starts, n))
    seg_key = ks
    seg_arm, seg_rnd = arm_a[starts], rnd[starts]
    seg_wrk, seg_blk = seg_key // b_span + w_min, seg_key % b_span + b_min
    med = _segment_medians(x, starts, counts, step)
    # rows in (worker, round, block) order; the position is the rank within the round
    order = np.lexsort((seg_blk, seg_rnd, seg_wrk))
    seg_arm, seg_rnd, seg_wrk = seg_arm[order], seg_rnd[order], seg_wrk[order]
    med, counts = med[order], counts[order]
    m = order.size
    new_round = np.empty(m, dtype=bool)
    new_round[0] = True
    new_round[1:] = (seg_rnd[1:] != seg_rnd[:-1]) | (seg_wrk[1:] != seg_wrk[:-1])
    first = np.maximum.accumulate(np.where(new_round, np.arange(m), 0))
    position = np.arange(m) - first
    round_id = np.cumsum(new_round) - 1
    a_min, a_span = int(seg_arm.min()), int(seg_arm.max()) - int(seg_arm.min()) + 1
    if np.unique(round_id * a_span + (seg_arm - a_min)).size != m:
        raise ValueError("an arm has more than one block in a round of a worker")
    return BlockTable(
        worker=seg_wrk,
        round=seg_rnd,
        arm=seg_arm,
        median=med,
        count=counts.astype(np.int64),
        position=position.astype(np.int64),
    )


@dataclasses.dataclass(frozen=True)
class OrderEffect(Result):
    """The effect (a ratio) in rounds where the arm ran before the baseline, divided by the
    effect in rounds where the baseline ran first; 1: no carry-over."""

    estimate: float
    low: float
    high: float
    level: float
    rounds_first: int  # rounds where the arm ran before the baseline
    rounds_second: int


@dataclasses.dataclass(frozen=True)
class Paired(Result):
    """The paired statistic of ``arm`` against ``baseline`` (module docstring)."""

    estimate: float  # ratio arm / baseline (exp of the log effect); > 1: the arm is slower
    low: float
    high: float
    level: float
    verdict: str  # "faster" | "slower" | "same" | "inconclusive" (the arm against the baseline)
    settle: str | None  # inconclusive: what would settle it
    rounds: int  # complete rounds used, all workers
    workers: int
    per_worker: tuple[float, ...]  # each worker's ratio (median of its round ratios)
    method: str
    order_effect: OrderEffect | None
    order_warning: str | None
    noise: float
    arm: int = 1
    baseline: int = 0
    worker_sd: float = DEFAULT_WORKER_SD  # the prior scale of the layout spread used
    layout_share: float = 0.0  # share of the effect's variance from the layout (between workers)


# --------------------------------------------------------------------------- within a worker


def _block_length(d: FloatArray) -> int:
    n = d.size
    if n < 8:
        return 1
    # normal scores of mid-ranks: ties (a quantised clock) must not pose as dependence
    ranks = special.ndtri((rankdata(d) - 0.5) / n)
    kn = max(5, int(math.ceil(math.log10(n))))
    lags = min(n - 1, int(math.ceil(math.sqrt(n))) + kn + 1)
    b = politis_white_block_length(autocorrelation(ranks, lags), n)
    return max(1, min(int(math.ceil(b)), n // 4 if n >= 4 else 1))


def _cbb_variances(
    d: FloatArray,
    first: npt.NDArray[np.bool_],
    ell: int,
    n_boot: int,
    rng: np.random.Generator,
    order: bool,
) -> tuple[float, float | None]:
    """Circular block bootstrap (blocks of ``ell``) variances of the median of ``d`` and, when
    ``order``, of the order contrast (median over the rounds where ``first`` holds minus
    median over the others; None when too few resamples hold both kinds). A resample is
    sorted as the ranks of its values in ``d`` (read from the ranks written twice: the circle
    without a modulo); for the contrast the ranks where ``first`` holds are raised by ``n``,
    so that one sort puts the other order's rounds before them."""
    n, nb = d.size, -(-d.size // ell)
    by_rank = np.argsort(d, kind="stable")
    srt = d[by_rank]
    rank = np.empty(n, dtype=np.int32 if 2 * n < 2**31 else np.int64)
    rank[by_rank] = np.arange(n)
    rank2 = np.tile(rank, 2)
    keyed = np.tile((rank + n * first).astype(rank.dtype), 2) if order else rank2
    reps = np.empty(n_boot)
    contrast = np.empty(n_boot) if order else None
    done = 0
    while done < n_boot:
        m = min(_CHUNK, n_boot - done)
        starts = rng.integers(0, n, size=(m, nb, 1))  # blocks of ell <= n: positions < 2n
        pos = (starts + np.arange(ell)).reshape(m, nb * ell)[:, :n]
        r = rank2[pos]
        r.sort(axis=1)
        reps[done : done + m] = _sorted_medians(srt, r, 0, n)
        if contrast is not None:
            r = keyed[pos]
            r.sort(axis=1)
            before = np.count_nonzero(r < n, axis=1)  # rounds where the baseline ran first
            contrast[done : done + m] = _sorted_medians(srt, r, before, n - before, n)
            contrast[done : done + m] -= _sorted_medians(srt, r, 0, before)
        done += m
    v_contrast = None
    if contrast is not None:
        contrast = contrast[np.isfinite(contrast)]
        if contrast.size >= max(10, n_boot // 2):
            v_contrast = float(np.var(contrast, ddof=1))
    return float(np.var(reps, ddof=1)), v_contrast


def _sorted_medians(
    srt: FloatArray, keys: IntArray, start: IntArray | int, count: IntArray | int, less: int = 0
) -> FloatArray:
    """The median of each row's ``count`` values from column ``start`` on, sorted as their
    ranks in ``srt`` plus ``less`` (NaN for none): the mean of its order statistics ``(count -
    1) // 2`` and ``count // 2``."""
    at, last = np.arange(keys.shape[0]), keys.shape[1] - 1
    lo = keys[at, np.minimum(start + np.maximum((count - 1) // 2, 0), last)] - less
    hi = keys[at, np.minimum(start + np.maximum(count // 2, 0), last)] - less
    with np.errstate(invalid="ignore"):
        med = 0.5 * (srt.take(lo, mode="clip") + srt.take(hi, mode="clip"))
    return np.where(np.asarray(count) > 0, med, np.nan)  # type: ignore[no-any-return]


def _boot_worker(
    d: FloatArray, first: npt.NDArray[np.bool_], n_boot: int, rng: np.random.Generator
) -> tuple[float, float | None, int]:
    """Variance of the worker's median of ``d``, that of its order contrast (None when
    either order has fewer than two rounds), and the block length (module docstring:
    circular block bootstrap, Richardson-extrapolated over the block length when the rounds
    are dependent)."""
    ell = _block_length(d)
    order = min(int(first.sum()), int((~first).sum())) >= 2
    v1, c1 = _cbb_variances(d, first, ell, n_boot, rng, order)
    if ell == 1:
        return v1, c1, ell
    # the block bootstrap's variance falls short by about c / ell: extrapolate from ell and
    # 2 ell to an infinitely long block, never below the ell estimate
    v2, c2 = _cbb_variances(d, first, min(2 * ell, max(1, d.size // 2)), n_boot, rng, order)
    v = max(v1, 2.0 * v2 - v1)
    c = None if c1 is None or c2 is None else max(c1, 2.0 * c2 - c1)
    return v, c, ell


# --------------------------------------------------------------------------------- paired


def _rounds(
    table: BlockTable, arm: int, baseline: int
) -> tuple[list[FloatArray], list[npt.NDArray[np.bool_]]]:
    """Per worker (in order): the round log ratios in round order and whether the arm ran
    before the baseline."""
    ds: list[FloatArray] = []
    firsts: list[npt.NDArray[np.bool_]] = []
    for w in np.unique(table.worker):
        sel = table.worker == w
        rnd, a, med, pos = table.round[sel], table.arm[sel], table.median[sel], table.position[sel]
        ia, ib = a == arm, a == baseline
        ra, rb = rnd[ia], rnd[ib]
        common, ka, kb = np.intersect1d(ra, rb, assume_unique=True, return_indices=True)
        if common.size == 0:
            continue
        d = np.log(med[ia][ka]) - np.log(med[ib][kb])
        ds.append(d)
        firsts.append(pos[ia][ka] < pos[ib][kb])
    return ds, firsts


def paired(
    table: BlockTable,
    arm: int,
    baseline: int = 0,
    noise: float = DEFAULT_PAIRED_NOISE,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    n_boot: int = N_BOOT,
    *,
    worker_sd: float | None = None,
) -> Paired:
    """The ratio of ``arm`` to ``baseline`` (> 1: the arm is slower) from a ``block_table``,
    with its interval, verdict and order effect (module docstring). ``worker_sd``: the
    between-worker sd of the log ratio, when known (None: ``DEFAULT_WORKER_SD`` as the scale
    of its prior). Raises ValueError when the arms never share a round."""
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must lie in [0, 1), got {noise}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    if arm == baseline:
        raise ValueError("the arm and the baseline are the same arm")
    if n_boot < 2:
        raise ValueError(f"n_boot must be at least 2, got {n_boot}")
    scale = DEFAULT_WORKER_SD if worker_sd is None else float(worker_sd)
    if not (math.isfinite(scale) and scale >= 0.0):
        raise ValueError(f"worker_sd must be a non-negative number, got {worker_sd}")
    present = set(np.unique(table.arm).tolist())
    for name, a in (("arm", arm), ("baseline", baseline)):
        if a not in present:
            raise ValueError(f"{name} {a} has no block in the table (arms: {sorted(present)})")
    if not (np.isfinite(table.median).all() and (table.median > 0).all()):
        raise ValueError("block medians must be positive and finite")
    ds, firsts = _rounds(table, arm, baseline)
    rounds = int(sum(d.size for d in ds))
    if rounds == 0:
        raise ValueError(f"arm {arm} and baseline {baseline} never ran in the same round")
    workers = len(ds)
    per_worker = tuple(math.exp(median(d)) for d in ds)
    if rounds < MIN_ROUNDS:
        allr = np.exp(np.concatenate(ds))
        est = math.exp(median(np.log(allr)))
        return Paired(
            estimate=est,
            low=float(min(allr.min(), est)),
            high=float(max(allr.max(), est)),
            level=level,
            verdict="inconclusive",
            settle=SETTLE_FEW_ROUNDS,
            rounds=rounds,
            workers=workers,
            per_worker=per_worker,
            method=f"only {rounds} complete rounds (fewer than {MIN_ROUNDS}): no interval, "
            "the range of the round ratios",
            order_effect=None,
            order_warning=None,
            noise=noise,
            arm=arm,
            baseline=baseline,
            worker_sd=scale,
        )
    rng = np.random.default_rng(seed)
    y = np.array([median(d) for d in ds])
    v = np.full(workers, np.nan)
    oy: list[float] = []
    ov: list[float] = []
    ells: list[int] = []
    for i, (d, f) in enumerate(zip(ds, firsts, strict=True)):
        if d.size < MIN_WORKER_ROUNDS:
            continue
        var, v_order, ell = _boot_worker(d, f, n_boot, rng)
        v[i] = max(var, MIN_ROUND_SD**2 / d.size)
        ells.append(ell)
        if v_order is not None:
            oy.append(median(d[f]) - median(d[~f]))
            ov.append(max(v_order, 2 * MIN_ROUND_SD**2 / d.size))
    sizes = np.array([d.size for d in ds], dtype=np.float64)
    own = np.isfinite(v)
    if own.any():
        per_round = median(v[own] * sizes[own])
    else:
        # no worker long enough for its own bootstrap: the pooled variance of the round log
        # ratios around their workers' means (not robust, so gross errors make it wider), times
        # pi/2 for a median
        ss = sum(float(np.sum((d - d.mean()) ** 2)) for d in ds)
        dof = rounds - workers
        if dof <= 0:
            allr = np.concatenate(ds)
            ss, dof = float(np.sum((allr - allr.mean()) ** 2)), rounds - 1
        per_round = math.pi / 2.0 * max(ss / dof, MIN_ROUND_SD**2)
    v = np.where(own, v, per_round / sizes)
    mu, lo, hi, share = combine_workers(y, v, scale, level)
    est, low, high = math.exp(mu), math.exp(lo), math.exp(hi)
    v_ = _verdict(low, high, est, noise)
    settle = None
    if v_ == "inconclusive":
        remedy = SETTLE_WORKERS if share > 0.5 else SETTLE_ROUNDS
        if not low <= 1.0 <= high:
            settle = SETTLE_SMALL
        elif abs(est - 1.0) > noise:
            settle = remedy
        else:
            settle = SETTLE_NEAR + remedy
    if ells:
        ell_txt = f"blocks of {min(ells)}" + (f"-{max(ells)}" if max(ells) != min(ells) else "")
        if max(ells) > 1:
            ell_txt += " extrapolated"
        boot = f"circular block bootstrap over rounds ({ell_txt}, {n_boot} resamples)"
    else:
        boot = "pooled variance (too few rounds per worker for a bootstrap)"
    combined = (
        f"{workers} worker(s) combined as a random effect, half-normal prior on the layout sd "
        f"(scale {100 * scale:.2g}%)"
        if scale > 0.0
        else f"{workers} worker(s) combined as one layout (fixed effect)"
    )
    method = f"median of the round log ratios per worker, {boot}; {combined}"
    order: OrderEffect | None = None
    warning: str | None = None
    if oy:
        omu, olo, ohi, _ = combine_workers(np.array(oy), np.array(ov), scale, level)
        n_first = int(sum(int(f.sum()) for f in firsts))
        order = OrderEffect(
            math.exp(omu), math.exp(olo), math.exp(ohi), level, n_first, rounds - n_first
        )
        if (olo > 0.0 or ohi < 0.0) and abs(omu) > math.log(high / low):
            warning = (
                f"order effect: the ratio is {fmt_ratio(order.estimate)}x as large when arm {arm} "
                f"runs before arm {baseline} ({100 * level:.0f}% CI {fmt_ratio(order.low)}-"
                f"{fmt_ratio(order.high)}), more than the effect's interval: carry-over between "
                "the arms, so the effect depends on the order they run in"
            )
    return Paired(
        estimate=est,
        low=low,
        high=high,
        level=level,
        verdict=v_,
        settle=settle,
        rounds=rounds,
        workers=workers,
        per_worker=per_worker,
        method=method,
        order_effect=order,
        order_warning=warning,
        noise=noise,
        arm=arm,
        baseline=baseline,
        worker_sd=scale,
        layout_share=share,
    )
