"""Compare two latency columns: is ``b`` faster or slower than ``a``, or the same within noise?

A run is one draw from the machine: a second process of the same command lands on other
physical pages, another CPU, another moment of the host, and its median differs by more than
the sampling noise within one process (Kalibera & Jones). So the interval of the ratio must
include the variation *between* processes, which only repetitions reveal; the samples of one
process, however many, cannot. Runs are measured in several worker processes (segments,
``Run.segments``) for that reason.

Ratio. The headline is the ratio of medians (> 1: ``b`` is slower), next to the ratio of p99s:
``median(b) / median(a)`` of the pooled samples, the medians every view prints for the two
runs, so that the ratio printed beside two medians is their ratio. (The pooled median of a
run whose processes fall into two modes jumps with the share of processes in each; the
interval below holds that, through the variation between the process medians.)

Interval of the ratio of medians, two-level:

1. *Within processes*: independent bootstraps of the two sides' pooled samples, each with the
   dependence-aware scheme of ``intervals.py`` (non-overlapping block bootstrap, Politis–White
   block length when autocorrelated; no resample materialised, all samples used); the
   percentile interval of the ratio of the replicates.
2. *Between processes*, when both sides have at least two segments: Welch's t interval for the
   difference of the means of the logarithms of the segment medians (Welch–Satterthwaite
   degrees of freedom), transformed back. Segments run one after another, so each side's
   medians count as ``between.effective_count`` independent ones (lag-1 autocorrelation):
   neighbouring workers that share the host's state of the moment are not credited as
   independent draws. Logarithms because run-to-run differences are
   multiplicative. The reported interval is the hull of 1 and 2: never narrower than the
   within-process interval, and as wide as the repetitions say.
3. When a side has a single segment (an older run, ``--repeat 1``), the repetitions are
   missing and the between-process variation must come from elsewhere: ``between_cv``, the
   coefficient of variation of single-process medians known for this benchmark on this
   machine (``latscope trust`` or the history of the scenario, see ``trust.py``). The
   bootstrap interval's half width on the log scale is then combined in quadrature with
   ``z * sqrt(cv_a^2 + cv_b^2)``, where a side with several segments contributes its own
   ``var(log medians) / r`` and a single-segment side ``between_cv^2``. Without a known
   ``between_cv`` no such interval can be honest: the verdict is "inconclusive" and
   ``settle`` says what to do.

Verdict, against a noise threshold ``noise`` (the change that matters, default 2%) and the
between-run range ``run_noise`` (the A/A range of two runs' medians known for the scenario from
a trust record or the store's history, 0 when unknown):

- ``"slower"``: the interval lies wholly above 1 **and** the ratio exceeds
  ``1 + max(noise, run_noise)``: a change two separate runs of one command rarely show;
- ``"faster"``: the interval lies wholly below 1 **and** the ratio is below
  ``1 - max(noise, run_noise)``;
- ``"same"``: the whole interval lies within ``[1 - noise, 1 + noise]`` (the between-run range
  never makes a difference "the same");
- ``"inconclusive"``: anything else; ``settle`` says what would settle it (more workers, a
  trust record).

Mann–Whitney U (``scipy.stats.mannwhitneyu``, two-sided) is reported as a secondary figure, on a
uniformly random subsample of at most ``MWU_MAX_POINTS`` (200,000) per side. It assumes
independent samples, so on autocorrelated runs its p-value is too small; the verdict never
uses it.

Shift function (Doksum 1974): the deciles of both runs and their differences ``b - a`` (and
ratios), to plot how the whole distribution moved, not just its middle.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..units import fmt_ratio
from ._common import FloatArray, Prepared, Result, as_prepared, quantile_sorted, subsample
from .between import MIN_SEGMENTS, effective_count, segment_medians
from .dependence import Dependence, dependence
from .dist import mannwhitneyu_p, norm_ppf, t_ppf
from .intervals import DEFAULT_LEVEL, N_BOOT
from .resample import MAX_BLOCKS, block_bootstrap_quantiles, block_plan, multinomial_weights
from .summary import MIN_BEYOND, count_beyond

DEFAULT_NOISE = 0.02
MWU_MAX_POINTS = 200_000
MIN_SAMPLES = 5
DECILES = np.arange(1, 10) / 10.0


@dataclasses.dataclass(frozen=True)
class RatioInterval(Result):
    name: str  # "median" or "p99"
    estimate: float  # statistic(b) / statistic(a)
    low: float
    high: float
    level: float
    method: str


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison(Result):
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    median_ratio: RatioInterval
    p99_ratio: RatioInterval | None
    p99_reason: str | None
    mannwhitney_p: float
    mannwhitney_method: str
    verdict: str  # "faster" | "slower" | "same" | "inconclusive" (b relative to a)
    explanation: str
    noise: float
    level: float
    decile_probs: FloatArray
    deciles_a: FloatArray
    deciles_b: FloatArray
    decile_differences: FloatArray  # b - a, ns
    decile_ratios: FloatArray  # b / a
    seed: int
    levels: Levels | None = None
    settle: str | None = None  # inconclusive: what is missing ("interval too wide", ...)
    run_noise: float = 0.0  # the between-run range that gated faster/slower (0: unknown)


def _block_length(prep: Prepared, dep: Dependence) -> int:
    if dep.independent:
        return max(1, math.ceil(prep.n / MAX_BLOCKS))
    ell, _, _ = block_plan(prep.n, dep.block_length)
    return ell


def _replicates(
    prep: Prepared, probs: tuple[float, ...], n_boot: int, rng: np.random.Generator
) -> tuple[FloatArray, int]:
    ell = _block_length(prep, dependence(prep))
    nb = math.ceil(prep.n / ell)
    weights = multinomial_weights(nb, n_boot, rng)
    return block_bootstrap_quantiles(prep, probs, ell, weights), ell


def verdict(low: float, high: float, estimate: float, noise: float, run_noise: float = 0.0) -> str:
    """The verdict of a ratio interval against the noise threshold and the between-run range
    (module docstring)."""
    if low >= 1.0 - noise and high <= 1.0 + noise:
        return "same"
    gate = max(noise, run_noise)
    if low > 1.0 and estimate > 1.0 + gate:
        return "slower"
    if high < 1.0 and estimate < 1.0 - gate:
        return "faster"
    return "inconclusive"


@dataclasses.dataclass(frozen=True)
class Levels(Result):
    """How the interval of the ratio of medians was built (the two levels)."""

    segments_a: int
    segments_b: int
    within: tuple[float, float]  # the block-bootstrap interval of the pooled samples alone
    between: tuple[float, float] | None  # from the segment medians or the known variation
    between_method: str
    between_cv: float | None  # the known single-process variation used, if any


def _welch_log(ma: np.ndarray, mb: np.ndarray, level: float) -> tuple[float, float, float]:
    """(centre, half width, df) of Welch's t interval for mean(log mb) - mean(log ma), each
    side's medians counted as ``between.effective_count`` independent ones."""
    la, lb = np.log(ma), np.log(mb)
    ra, rb = effective_count(la), effective_count(lb)
    va, vb = float(la.var(ddof=1)) / ra, float(lb.var(ddof=1)) / rb
    d = float(lb.mean() - la.mean())
    se2 = va + vb
    if se2 <= 0.0:
        return d, 0.0, ra + rb - 2.0
    df = se2**2 / (va**2 / (ra - 1.0) + vb**2 / (rb - 1.0))
    return d, t_ppf(0.5 + level / 2.0, df) * math.sqrt(se2), float(df)


def compare(
    a: npt.ArrayLike | Prepared,
    b: npt.ArrayLike | Prepared,
    *,
    segments_a: Sequence[int] | None = None,
    segments_b: Sequence[int] | None = None,
    between_cv: float | None = None,
    noise: float = DEFAULT_NOISE,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    n_boot: int = N_BOOT,
    run_noise: float = 0.0,
    step_a: float | None = None,
    step_b: float | None = None,
) -> Comparison:
    """Compare latencies ``b`` against the baseline ``a`` (both ns), each given as its pooled
    samples with ``segments_*`` (samples per worker process, in order; None: one process).
    ``between_cv``: the CV of single-process medians known for this benchmark, used when a
    side has one segment. ``step_*``: each side's clock step (quantisation-aware medians).
    See the module docstring."""
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must lie in [0, 1), got {noise}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    pa, pb = as_prepared(a, step=step_a), as_prepared(b, step=step_b)
    if min(pa.n, pb.n) < MIN_SAMPLES:
        raise ValueError(
            f"need at least {MIN_SAMPLES} samples on each side to compare, got {pa.n} and {pb.n}"
        )
    rng = np.random.default_rng(seed)
    med_a, med_b = quantile_sorted(pa.sorted, 0.5), quantile_sorted(pb.sorted, 0.5)
    if med_a <= 0.0 or med_b <= 0.0:
        raise ValueError("medians must be positive to form ratios (are these latencies in ns?)")
    p99_ok = all(
        count_beyond(p.sorted, quantile_sorted(p.sorted, 0.99), "above") >= MIN_BEYOND
        for p in (pa, pb)
    )
    probs = (0.5, 0.99) if p99_ok else (0.5,)
    reps_a, ell_a = _replicates(pa, probs, n_boot, rng)
    reps_b, ell_b = _replicates(pb, probs, n_boot, rng)
    alpha = 1.0 - level
    boot_method = (
        f"block bootstrap of each run (blocks a: {ell_a}, b: {ell_b}; {n_boot} resamples; "
        f"all {pa.n:,} + {pb.n:,} samples), percentile interval of the ratio"
    )

    def ratio(i: int, name: str, est: float) -> RatioInterval:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = reps_b[:, i] / reps_a[:, i]
        r = r[np.isfinite(r)]
        lo, hi = np.quantile(r, [alpha / 2.0, 1.0 - alpha / 2.0])
        return RatioInterval(name, est, float(lo), float(hi), level, boot_method)

    within = ratio(0, "median", med_b / med_a)
    sma = segment_medians(pa.x, segments_a, pa.step)
    smb = segment_medians(pb.x, segments_b, pb.step)
    ma, mb = np.asarray(sma.medians), np.asarray(smb.medians)
    positive = bool((ma > 0).all() and (mb > 0).all())
    est = within.estimate
    low, high = within.low, within.high
    between_iv: tuple[float, float] | None = None
    settle: str | None = None
    if sma.r >= MIN_SEGMENTS and smb.r >= MIN_SEGMENTS and positive:
        d, h, df = _welch_log(ma, mb, level)
        between_iv = (math.exp(d - h), math.exp(d + h))
        # the estimate stays the ratio of the two medians printed beside it; the interval
        # is widened to hold the between-process one
        low, high = min(low, between_iv[0]), max(high, between_iv[1])
        bmethod = f"Welch t on the log worker medians ({sma.r} + {smb.r} processes, {df:.1f} df)"
        method = (
            f"two-level interval: hull of the {bmethod} and the {boot_method}; the ratio is "
            "that of the two runs' medians"
        )
    elif between_cv is not None and positive and between_cv >= 0.0:
        var = 0.0
        for m in (ma, mb):
            if m.size >= MIN_SEGMENTS:
                var += float(np.log(m).var(ddof=1)) / m.size
            else:
                var += math.log1p(between_cv) ** 2
        z = float(norm_ppf(0.5 + level / 2.0))
        h_between = z * math.sqrt(var)
        h_within = max(math.log(est / within.low), math.log(within.high / est))
        h = math.sqrt(h_within**2 + h_between**2)
        between_iv = (est * math.exp(-h_between), est * math.exp(h_between))
        low, high = est * math.exp(-h), est * math.exp(h)
        bmethod = (
            f"between-process variation known for this benchmark (CV {100 * between_cv:.2g}% "
            "of one process's median)"
        )
        method = (
            f"{boot_method}, widened (in quadrature, log scale) by the {bmethod}, since a side "
            "was measured in a single process"
        )
    else:
        bmethod = "unknown: a side was measured in a single process"
        method = f"{boot_method} (within-process variation only)"
        settle = "between-run variation unknown"
    med_ratio = RatioInterval("median", est, float(low), float(high), level, method)
    levels = Levels(sma.r, smb.r, (within.low, within.high), between_iv, bmethod, between_cv)
    p99_ratio = None
    p99_reason = None
    if p99_ok:
        p99a, p99b = quantile_sorted(pa.sorted, 0.99), quantile_sorted(pb.sorted, 0.99)
        if p99a > 0:
            p99_ratio = ratio(1, "p99", p99b / p99a)
        else:
            p99_reason = "p99 of a is not positive"
    else:
        p99_reason = f"fewer than {MIN_BEYOND} samples above p99 in one of the runs"

    sa = subsample(pa.x, MWU_MAX_POINTS, rng)
    sb = subsample(pb.x, MWU_MAX_POINTS, rng)
    mwu_p = mannwhitneyu_p(sa, sb)
    mwu_method = (
        f"Mann-Whitney U, two-sided, on {sa.size:,} + {sb.size:,} samples "
        "(assumes independent samples)"
    )

    v = "inconclusive" if settle else verdict(med_ratio.low, med_ratio.high, est, noise, run_noise)
    if v == "inconclusive" and settle is None:
        if med_ratio.low <= 1.0 <= med_ratio.high:
            settle = "interval too wide"
        elif abs(est - 1.0) <= noise:
            settle = "difference within the noise threshold"
        else:
            settle = "difference within the between-run range"
    pct = 100.0 * (est - 1.0)
    ci = f"{100 * level:.0f}% CI {fmt_ratio(med_ratio.low)}-{fmt_ratio(med_ratio.high)}"
    band = f"noise threshold ±{100 * noise:.3g}%" + (
        f", between-run range ±{100 * run_noise:.3g}%" if run_noise > noise else ""
    )
    explanation = {
        "same": f"b is the same as a within the {band} (median ratio {fmt_ratio(est)}, {ci})",
        "slower": f"b is {pct:.1f}% slower than a (median ratio {fmt_ratio(est)}, {ci}, {band})",
        "faster": f"b is {-pct:.1f}% faster than a (median ratio {fmt_ratio(est)}, {ci}, {band})",
        "inconclusive": f"cannot tell: the median ratio {fmt_ratio(est)} has a {ci} against the "
        f"{band} ({settle})",
    }[v]
    dec_a = np.array([quantile_sorted(pa.sorted, p) for p in DECILES])
    dec_b = np.array([quantile_sorted(pb.sorted, p) for p in DECILES])
    with np.errstate(divide="ignore", invalid="ignore"):
        dec_ratio = np.where(dec_a != 0, dec_b / dec_a, np.nan)
    return Comparison(
        n_a=pa.n,
        n_b=pb.n,
        median_a=med_a,
        median_b=med_b,
        median_ratio=med_ratio,
        p99_ratio=p99_ratio,
        p99_reason=p99_reason,
        mannwhitney_p=mwu_p,
        mannwhitney_method=mwu_method,
        verdict=v,
        explanation=explanation,
        noise=noise,
        run_noise=run_noise,
        level=level,
        decile_probs=DECILES.copy(),
        deciles_a=dec_a,
        deciles_b=dec_b,
        decile_differences=dec_b - dec_a,
        decile_ratios=dec_ratio,
        seed=seed,
        levels=levels,
        settle=settle if v == "inconclusive" else None,
    )
