"""Coverage of every 95% interval latscope gives (the median, p90, p95, p99 and the mean) on
three processes whose true values are known exactly.

The processes (``tests/synth.py``), each quantised to a 10.015 ns clock step (as on a VM's TSC)
and analysed with that step: a log-normal whose log scale is an AR(1) with phi = 0.8; independent
log-normal latencies with 1% 10x spikes; a level that switches between three values in regimes
of ~400 iterations. Their true quantiles are those of their stationary distributions (a shifted
log-normal; a mixture with its 10x copy; an equal mixture of three log-normals), found by root
finding on the exact distribution functions; their means in closed form.

For each process at n = 1,000, 5,000 and 100,000 it counts how often each interval covers the
truth, and prints the coverage with its 95% binomial (Clopper-Pearson) range and the median
width. A percentile with too few samples beyond it gets no interval from latscope (it is
withheld, "—" in its tables): those runs are counted apart ("withheld") and left out of that
percentile's coverage. A statistics check, not a timing benchmark.

    PYTHONPATH=src python bench/coverage_intervals.py [--reps 1000,600,60] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import cache

import numpy as np
from scipy import optimize, stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from latscope.stats import Prepared, confidence_intervals  # noqa: E402
from synth import (  # noqa: E402
    REGIME_LEVELS,
    REGIME_SIGMA,
    STEP,
    lognormal_ar1,
    quantise,
    regimes,
    spiky,
)

SIZES = (1_000, 5_000, 100_000)
FIGURES = ("median", "p90", "p95", "p99", "mean")
PROBS = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
AR1_SIGMA, SPIKY_SIGMA, SPIKE_SHARE = 0.5, 0.5, 0.01


def _ln(sigma: float, loc: float = 0.0, scale: float = 1000.0):  # noqa: ANN202
    return stats.lognorm(sigma, loc=loc, scale=scale)


def _root(cdf, p: float) -> float:  # noqa: ANN001
    return float(optimize.brentq(lambda v: cdf(v) - p, 1.0, 1e6, xtol=1e-9))


@cache
def truth(process: str, figure: str) -> float:
    """The exact value of ``figure`` for the stationary distribution of ``process``."""
    if process == "AR(1) phi 0.8":  # 200 + exp(ln 1000 + 0.5 z), z standard normal
        d = _ln(AR1_SIGMA, 200.0)
        return float(d.mean() if figure == "mean" else d.ppf(PROBS[figure]))
    if process == "log-normal + 1% 10x spikes":
        d = _ln(SPIKY_SIGMA, 200.0)
        if figure == "mean":
            return float(d.mean() * (1.0 - SPIKE_SHARE + 10.0 * SPIKE_SHARE))
        return _root(
            lambda v: (1.0 - SPIKE_SHARE) * d.cdf(v) + SPIKE_SHARE * d.cdf(v / 10.0),
            PROBS[figure],
        )
    ds = [_ln(REGIME_SIGMA, 0.0, lv) for lv in REGIME_LEVELS]
    if figure == "mean":
        return float(np.mean([d.mean() for d in ds]))
    return _root(lambda v: float(np.mean([d.cdf(v) for d in ds])), PROBS[figure])


PROCESSES = {
    "AR(1) phi 0.8": lambda n, rng: lognormal_ar1(n, rng, phi=0.8, sigma=AR1_SIGMA),
    "log-normal + 1% 10x spikes": lambda n, rng: spiky(n, rng, sigma=SPIKY_SIGMA),
    "regime switching": regimes,
}


def one(args: tuple[str, int, int]) -> dict[str, tuple[bool, float] | None]:
    """One replication: per figure (covered, width), or None where it was withheld."""
    name, n, seed = args
    x = quantise(PROCESSES[name](n, np.random.default_rng(seed)))
    ivs = confidence_intervals(
        Prepared(x, step=STEP),
        seed=seed,
        percentiles=tuple((f, PROBS[f]) for f in ("p90", "p95", "p99")),
        n_boot=200,
    )
    out: dict[str, tuple[bool, float] | None] = {}
    for f in FIGURES:
        iv = ivs.mean if f == "mean" else ivs.percentile(f)
        if iv.low is None or iv.high is None:
            out[f] = None
            continue
        t = truth(name, f)
        out[f] = (bool(iv.low <= t <= iv.high), float(iv.high - iv.low))
    return out


def clopper_pearson(hits: int, reps: int) -> tuple[float, float]:
    lo = stats.beta.ppf(0.025, hits, reps - hits + 1) if hits else 0.0
    hi = stats.beta.ppf(0.975, hits + 1, reps - hits) if hits < reps else 1.0
    return float(lo), float(hi)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", default="1000,600,60", help="replications at 1,000,5,000,100,000")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = ap.parse_args()
    reps = [int(r) for r in args.reps.split(",")]
    if len(reps) != len(SIZES) or min(reps) < 1:
        raise SystemExit("--reps: three positive counts, for n = 1,000, 5,000 and 100,000")
    print(
        f"{'process':<27} {'n':>7} {'figure':<6} {'truth':>9} {'coverage':>8}  "
        f"{'95% range':<15} {'width':>9} {'withheld':>8}"
    )
    t0 = time.perf_counter()
    outside = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name in PROCESSES:
            for n, r in zip(SIZES, reps, strict=True):
                jobs = [(name, n, 1_000_003 * n + k) for k in range(r)]
                res = list(pool.map(one, jobs, chunksize=8))
                for f in FIGURES:
                    got = [x[f] for x in res if x[f] is not None]
                    withheld = len(res) - len(got)
                    if not got:
                        print(
                            f"{name:<27} {n:>7,} {f:<6} {'':>9} {'—':>8}  {'':<15} "
                            f"{'':>9} {withheld:>8}"
                        )
                        continue
                    hits = sum(h for h, _ in got)
                    lo, hi = clopper_pearson(hits, len(got))
                    width = float(np.median([w for _, w in got]))
                    if not lo <= 0.95 <= hi and not 0.93 <= hits / len(got) <= 0.97:
                        outside.append(f"{name} n={n:,} {f}: {100 * hits / len(got):.1f}%")
                    print(
                        f"{name:<27} {n:>7,} {f:<6} {truth(name, f):>9.1f} "
                        f"{100 * hits / len(got):>7.1f}%  [{lo:.3f}, {hi:.3f}]  "
                        f"{width:>6.1f} ns {withheld:>8}",
                        flush=True,
                    )
    print(f"({time.perf_counter() - t0:.0f} s)")
    print(
        "outside 93-97% with 95% excluded from their range: "
        + ("; ".join(outside) if outside else "none")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
