"""Benchmark: ``analyze_column`` on 10^6, 10^7 and 10^8 synthetic samples.

The samples are a shifted log-normal (floor 200 ns, median excess 1 µs, sigma 0.5) whose log
scale follows an AR(1) with phi = 0.7, with a 30x spike every ~5,000 iterations (jittered), 0.05%
random 10x spikes and a 15% slowdown over the last fifth of the run. Each size runs in a process
of its own and prints the wall time of the analysis and the peak resident memory of that process
(``ru_maxrss``: it includes the generated input, 16 bytes a sample, whose own peak is printed
too). A benchmark, not a test: the figures belong to the machine it runs on.

    python bench/bench_analysis.py [N ...]     (default: 1000000 10000000 100000000)
    python bench/bench_analysis.py --one N     (one size, in this process, with its findings)

Issue goals on a 2-CPU VM: 10^7 in under 3 s, 10^8 in under 60 s and 4 GB.
"""

from __future__ import annotations

import json
import resource
import subprocess
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
    del e
    y *= 0.5
    y += np.log(1000.0)
    x = np.exp(y, out=y)
    x += 200.0
    period = 5000
    pos = np.arange(period // 2, n, period)
    pos = np.clip(pos + rng.integers(-100, 101, size=pos.size), 0, n - 1)
    x[pos] *= 30.0
    x[rng.random(n) < 5e-4] *= 10.0
    x[int(0.8 * n) :] *= 1.15
    t = np.cumsum(x)  # start times if the iterations ran back to back
    t -= t[0]
    t *= 1e-9
    return x, t


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def one(n: int) -> dict[str, object]:
    t0 = time.perf_counter()
    x, t = synthetic(n)
    gen = time.perf_counter() - t0
    input_peak = _peak_mib()
    t0 = time.perf_counter()
    res = analyze_column(x, t, step_ns=1.0, seed=0)
    elapsed = time.perf_counter() - t0
    iv = res.intervals
    dep = res.dependence
    per = res.outliers.periodicity
    return {
        "n": n,
        "generation_s": gen,
        "analysis_s": elapsed,
        "input_peak_mib": input_peak,
        "peak_mib": _peak_mib(),
        "median": res.summary.median,
        "median_ci": [iv.median.low, iv.median.high],
        "ess": dep.ess,
        "tau": dep.tau,
        "period": per.period_iterations,
        "change_points": [c.index for c in res.drift.change_points],
        "warnings": [w.code for w in res.warnings],
    }


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--one"]:
        print(json.dumps(one(int(float(args[1])))))
        return
    sizes = [int(float(a)) for a in args] or [10**6, 10**7, 10**8]
    print(f"{'samples':>13}  {'analysis':>9}  {'peak RSS':>9}  {'of it input':>11}  findings")
    for n in sizes:
        got = subprocess.run(
            [sys.executable, __file__, "--one", str(n)], capture_output=True, text=True
        )
        if got.returncode != 0:
            print(f"{n:>13,}  failed: {got.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(got.stdout)
        print(
            f"{n:>13,}  {r['analysis_s']:>7.2f} s  {r['peak_mib']:>5.0f} MiB  "
            f"{r['input_peak_mib']:>7.0f} MiB  median {r['median']:.1f} ns, ESS "
            f"{r['ess']:,.0f}, period {r['period'] and round(r['period'])}, "
            f"{len(r['change_points'])} change points"
        )


if __name__ == "__main__":
    main()
