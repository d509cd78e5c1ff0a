"""Compare two latency columns: is ``b`` faster or slower than ``a``, or the same within noise?

Ratios. The headline is the ratio of medians ``median(b) / median(a)`` (> 1: ``b`` is slower),
next to the ratio of p99s. Their confidence intervals come from independent bootstraps of the
two runs, each with the dependence-aware scheme of ``intervals.py``: a non-overlapping block
bootstrap whose block length is the Politis–White length (floor ``n^(1/3)``) when the run is
autocorrelated, and blocks of ``ceil(n / 1000)`` (i.e. the plain bootstrap for ``n <= 1000``)
when it is independent. Thanks to the counting trick in ``intervals.block_bootstrap_quantiles``
no resample is materialised, so **all** samples are used, however many (no subsampling). The
interval is the percentile interval of the ratio of the replicates.

Verdict, against a noise threshold (default 2%), criterion.rs-style but stricter, as an
equivalence test:

- ``"same"``: the whole interval of the median ratio lies within ``[1 - noise, 1 + noise]``;
- ``"slower"`` (``b`` slower than ``a``): the whole interval lies above ``1 + noise``;
- ``"faster"``: the whole interval lies below ``1 - noise``;
- ``"inconclusive"``: the interval straddles ``1 - noise`` or ``1 + noise``: more samples (or a
  quieter machine) are needed to tell.

Mann–Whitney U (``scipy.stats.mannwhitneyu``, two-sided) is reported as a secondary figure, on a
uniformly random subsample of at most ``MWU_MAX_POINTS`` (200,000) per side. It assumes
independent samples, so on autocorrelated runs its p-value is too small; with large runs it
rejects for differences far below any noise threshold. The verdict never uses it.

Shift function (Doksum 1974): the deciles of both runs and their differences ``b - a`` (and
ratios), to plot how the whole distribution moved, not just its middle.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._common import FloatArray, Prepared, Result, as_prepared, quantile_sorted, subsample
from .dependence import Dependence, dependence
from .intervals import (
    DEFAULT_LEVEL,
    MAX_BLOCKS,
    N_BOOT,
    block_bootstrap_quantiles,
    block_plan,
    multinomial_weights,
)
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


def _verdict(low: float, high: float, noise: float) -> str:
    if low >= 1.0 - noise and high <= 1.0 + noise:
        return "same"
    if low > 1.0 + noise:
        return "slower"
    if high < 1.0 - noise:
        return "faster"
    return "inconclusive"


def compare(
    a: npt.ArrayLike | Prepared,
    b: npt.ArrayLike | Prepared,
    *,
    noise: float = DEFAULT_NOISE,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> Comparison:
    """Compare latencies ``b`` against the baseline ``a`` (both ns). See the module docstring."""
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must lie in [0, 1), got {noise}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    pa, pb = as_prepared(a), as_prepared(b)
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
    method = (
        f"block bootstrap of each run (blocks a: {ell_a}, b: {ell_b}; {n_boot} resamples; "
        f"all {pa.n:,} + {pb.n:,} samples), percentile interval of the ratio"
    )

    def ratio(i: int, name: str, est: float) -> RatioInterval:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = reps_b[:, i] / reps_a[:, i]
        r = r[np.isfinite(r)]
        lo, hi = np.quantile(r, [alpha / 2.0, 1.0 - alpha / 2.0])
        return RatioInterval(name, est, float(lo), float(hi), level, method)

    med_ratio = ratio(0, "median", med_b / med_a)
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
    mwu = stats.mannwhitneyu(sa, sb, alternative="two-sided")
    mwu_method = (
        f"Mann-Whitney U, two-sided, on {sa.size:,} + {sb.size:,} samples "
        "(assumes independent samples)"
    )

    verdict = _verdict(med_ratio.low, med_ratio.high, noise)
    pct = 100.0 * (med_ratio.estimate - 1.0)
    ci = f"{100 * level:.0f}% CI {med_ratio.low:.3f}-{med_ratio.high:.3f}"
    band = f"noise threshold ±{100 * noise:.3g}%"
    explanation = {
        "same": f"b is the same as a within the {band} (median ratio "
        f"{med_ratio.estimate:.3f}, {ci})",
        "slower": f"b is {pct:.1f}% slower than a (median ratio {med_ratio.estimate:.3f}, {ci}, "
        f"{band})",
        "faster": f"b is {-pct:.1f}% faster than a (median ratio {med_ratio.estimate:.3f}, "
        f"{ci}, {band})",
        "inconclusive": f"cannot tell: the median ratio {med_ratio.estimate:.3f} has a {ci}, "
        f"which straddles the {band}; measure more samples",
    }[verdict]
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
        mannwhitney_p=float(mwu.pvalue),
        mannwhitney_method=mwu_method,
        verdict=verdict,
        explanation=explanation,
        noise=noise,
        level=level,
        decile_probs=DECILES.copy(),
        deciles_a=dec_a,
        deciles_b=dec_b,
        decile_differences=dec_b - dec_a,
        decile_ratios=dec_ratio,
        seed=seed,
    )
