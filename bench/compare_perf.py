#!/usr/bin/env python3
"""latscope beside `perf bench`, as alternating pairs.

Each comparison runs the two tools one after the other, A B A B ... (`--pairs`, default 8), so
that a change in the machine's state (a neighbour's load, frequency, the host) reaches both
sides alike; it prints the ratio latscope / perf of every pair and the median of the ratios.

* syscall: latscope's per-call getppid median minus the clock's read cost beside `perf bench
  syscall basic` (total time / calls of getppid).
* pipe: latscope's round-trip median between two processes beside `perf bench sched pipe`
  (each "op" is one round trip between two processes), on one CPU (`taskset -c 0` for perf,
  `cpus=0,0` for latscope) and unpinned.  The latscope figure is the raw median: it holds one
  clock read cost and the responder's read of the clock (header `bench.responder_read_ns`),
  which perf does not have; both are printed.

perf reports a mean (total time / operations), latscope a median of every sample; on a
skewed distribution the median sits below the mean.

Needs `perf` (Debian: linux-perf) and `taskset` (util-linux); without them it says so and
exits 0 (skipped).  Usage:
    python bench/compare_perf.py [--pairs 8] [--n 100000] [--loops 100000]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from latscope import probe as _probe
from latscope import samples


def perf_ns_per_op(cmd: list[str]) -> float:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"([0-9.]+)\s+usecs/op", out)
    if not m:
        raise SystemExit(f"compare_perf: cannot read usecs/op from: {' '.join(cmd)}\n{out}")
    return float(m.group(1)) * 1000.0


def latscope_run(tmp: Path, bench: str, params: dict[str, str], n: int) -> samples.SampleFile:
    out = tmp / f"{bench}-{len(list(tmp.iterdir()))}.lss"
    _probe.run_probe(_probe.probe_args(bench, params, out, n=n))
    return samples.load(out)


def pairs(label: str, npairs: int, a, b) -> None:
    """Run a() and b() alternately; print each pair's ratio and the median ratio."""
    print(f"\n{label}")
    print(f"  {'pair':>4}  {'latscope':>12}  {'perf bench':>12}  {'ratio':>6}")
    ratios = []
    for i in range(npairs):
        x = a()
        y = b()
        ratios.append(x / y)
        print(f"  {i + 1:>4}  {x:>9.1f} ns  {y:>9.1f} ns  {x / y:>6.3f}")
    r = np.asarray(ratios)
    print(f"  median ratio {np.median(r):.3f} (min {r.min():.3f}, max {r.max():.3f})")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--pairs", type=int, default=8, help="A/B pairs per comparison (default 8)")
    ap.add_argument("--n", type=int, default=100_000, help="latscope iterations per run")
    ap.add_argument("--loops", type=int, default=100_000, help="perf bench sched pipe loops")
    args = ap.parse_args()
    for tool in ("perf", "taskset"):
        if not shutil.which(tool):
            pkg = "linux-perf" if tool == "perf" else "util-linux"
            print(f"compare_perf: skipped: {tool} is not installed (Debian: {pkg})")
            return 0
    probe = subprocess.run(["perf", "bench", "sched", "pipe", "-l", "10"], capture_output=True)
    if probe.returncode != 0:
        print("compare_perf: skipped: perf bench does not run here (perf_event_paranoid?)")
        return 0
    with tempfile.TemporaryDirectory(prefix="latscope-bench-") as d:
        tmp = Path(d)
        last: dict[str, float] = {}

        def syscall() -> float:
            sf = latscope_run(tmp, "syscall", {"op": "getppid"}, args.n)
            last["overhead"] = sf.header["clock"]["overhead_ns"]
            return float(np.median(sf.ns("call"))) - last["overhead"]

        pairs(
            "getppid per call (latscope median − clock read cost / perf bench syscall basic)",
            args.pairs,
            syscall,
            lambda: perf_ns_per_op(["perf", "bench", "syscall", "basic", "-l", str(args.n)]),
        )
        for label, cpus, prefix in (
            ("pipe round trip, one CPU (cpus=0,0 / taskset -c 0)", "0,0", ["taskset", "-c", "0"]),
            ("pipe round trip, unpinned", "none", []),
        ):

            def pipe(cpus: str = cpus) -> float:
                sf = latscope_run(tmp, "pipe", {"cpus": cpus, "mode": "processes"}, args.n)
                last["overhead"] = sf.header["clock"]["overhead_ns"]
                last["responder"] = sf.header["bench"].get("responder_read_ns", 0.0)
                return float(np.median(sf.ns("rtt")))

            pairs(
                f"{label}: latscope rtt median / perf bench sched pipe",
                args.pairs,
                pipe,
                lambda prefix=prefix: perf_ns_per_op(
                    [*prefix, "perf", "bench", "sched", "pipe", "-l", str(args.loops)]
                ),
            )
            print(
                f"  inside each latscope sample: clock read cost {last['overhead']:.1f} ns, "
                f"responder's clock read {last['responder']:.1f} ns"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
