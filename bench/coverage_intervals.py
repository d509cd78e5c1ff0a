"""Coverage of the median's confidence interval on processes whose true median is known.

Three processes, each quantised to a 10.015 ns clock step (as on a VM's TSC) and analysed with
that step: a log-normal whose log scale is an AR(1) with phi = 0.8; independent log-normal
latencies with 1% 10x spikes; and a level that switches between three values in regimes lasting
hundreds to thousands of iterations (``tests/synth.py`` defines them and their exact
stationary medians). For each process at n = 5,000 and n = 100,000 it counts how often the 95%
interval of ``confidence_intervals`` covers the true median, and prints the coverage with its
95% binomial (Clopper-Pearson) interval and the median interval width. A statistics check, not a
timing benchmark.

    PYTHONPATH=src python bench/coverage_intervals.py [replications at 5,000] [at 100,000]
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from latscope.stats import Prepared, confidence_intervals  # noqa: E402
from synth import (  # noqa: E402
    STEP,
    lognormal_ar1,
    quantise,
    regimes,
    regimes_median,
    spiky,
    spiky_median,
)

PROCESSES = {
    "AR(1) phi 0.8": (lambda n, rng: lognormal_ar1(n, rng, phi=0.8), lambda: 1200.0),
    "log-normal + 1% 10x spikes": (spiky, spiky_median),
    "regime switching": (regimes, regimes_median),
}


def one(args: tuple[str, int, int]) -> tuple[bool, float]:
    name, n, seed = args
    gen, truth = PROCESSES[name]
    rng = np.random.default_rng(seed)
    x = quantise(gen(n, rng))
    iv = confidence_intervals(Prepared(x, step=STEP), seed=seed, percentiles=(), n_boot=200).median
    return bool(iv.low <= truth() <= iv.high), float(iv.high - iv.low)


def main() -> None:
    reps_small = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    reps_large = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    print(f"{'process':<28} {'n':>8} {'reps':>5} {'coverage':>9}  {'95% CI':<15} {'width':>8}")
    with ProcessPoolExecutor(max_workers=2) as pool:
        for name in PROCESSES:
            for n, reps in ((5_000, reps_small), (100_000, reps_large)):
                t0 = time.perf_counter()
                jobs = [(name, n, 1_000_003 * n + r) for r in range(reps)]
                res = list(pool.map(one, jobs, chunksize=8))
                hits = sum(h for h, _ in res)
                lo = stats.beta.ppf(0.025, hits, reps - hits + 1) if hits else 0.0
                hi = stats.beta.ppf(0.975, hits + 1, reps - hits) if hits < reps else 1.0
                width = float(np.median([w for _, w in res]))
                print(
                    f"{name:<28} {n:>8,} {reps:>5} {hits / reps:>9.3f}  "
                    f"[{lo:.3f}, {hi:.3f}]  {width:>6.1f} ns   ({time.perf_counter() - t0:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
