"""Benchmark: ``analyze_column`` on 10 million synthetic samples.

The samples are a shifted log-normal (floor 200 ns, median excess 1 µs, sigma 0.5) whose log
scale follows an AR(1) with phi = 0.7, with a 30x spike every ~5,000 iterations (jittered), 0.05%
random 10x spikes and a 15% slowdown over the last fifth of the run. Prints the wall time of the
analysis and the peak resident memory of the process (``ru_maxrss``; it includes the ~240 MB of
generated input). A benchmark, not a test: the figures belong to the machine it runs on.

    PYTHONPATH=src python bench/bench_analysis.py [n]
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
from scipy import signal

from latscope.stats import analyze_column


def synthetic(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    phi = 0.7
    e = rng.standard_normal(n + 1) * np.sqrt(1.0 - phi**2)
    e[0] = rng.standard_normal()
    y = signal.lfilter([1.0], [1.0, -phi], e)[1:]
    x = 200.0 + np.exp(np.log(1000.0) + 0.5 * y)
    del y, e
    period = 5000
    pos = np.arange(period // 2, n, period)
    pos = np.clip(pos + rng.integers(-100, 101, size=pos.size), 0, n - 1)
    x[pos] *= 30.0
    x[rng.random(n) < 5e-4] *= 10.0
    x[int(0.8 * n) :] *= 1.15
    t = np.cumsum(x) * 1e-9  # start times if the iterations ran back to back
    t -= t[0]
    return x, t


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    t0 = time.perf_counter()
    x, t = synthetic(n)
    gen = time.perf_counter() - t0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    t0 = time.perf_counter()
    res = analyze_column(x, t, step_ns=1.0, seed=0)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    iv = res.intervals
    print(f"samples                 {n:,}")
    print(f"generation              {gen:.2f} s")
    print(f"analyze_column          {elapsed:.2f} s")
    print(f"peak RSS before         {rss_before:.0f} MiB (after generating the input)")
    print(f"peak RSS overall        {peak:.0f} MiB")
    print(f"median                  {res.summary.median:.1f} ns  [{iv.median.low:.1f}, "
          f"{iv.median.high:.1f}]  ({iv.median.method})")  # fmt: skip
    dep = res.dependence
    trunc = " (truncated: lower bound on tau)" if dep.tau_truncated else ""
    print(f"ESS                     {dep.ess:,.0f} (tau {dep.tau:.1f}{trunc})")
    per = res.outliers.periodicity
    print(f"spike period            {per.period_iterations} iterations, {per.period_seconds} s")
    print(f"change points           {[c.index for c in res.drift.change_points]}")
    print(f"warnings                {[w.code for w in res.warnings]}")


if __name__ == "__main__":
    main()
