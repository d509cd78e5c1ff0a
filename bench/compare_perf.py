#!/usr/bin/env python3
"""latscope beside `perf bench`, in one run.

* syscall: latscope's per-call getppid median (clock overhead subtracted) beside latscope's
  batch figure (calls timed back to back, no clock between them) and `perf bench syscall basic`
  (10 million getppid calls, total time / calls).
* pipe: latscope's round-trip median between two processes beside `perf bench sched pipe`
  (each "op" is one round trip between two processes), on one CPU (`taskset -c 0` for perf,
  `cpus=0,0` for latscope) and unpinned.

Needs `perf` (Debian: linux-perf) and `taskset` (util-linux).  Usage:
    python bench/compare_perf.py [--n 200000] [--loops 200000]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import latscope


def perf_usecs_per_op(cmd: list[str]) -> float:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"([0-9.]+)\s+usecs/op", out)
    if not m:
        raise SystemExit(f"cannot read usecs/op from: {' '.join(cmd)}\n{out}")
    return float(m.group(1)) * 1000.0  # ns


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=200_000, help="latscope iterations (default 200000)")
    ap.add_argument(
        "--loops", type=int, default=200_000, help="perf bench sched pipe loops (default 200000)"
    )
    args = ap.parse_args()
    for tool in ("perf", "taskset"):
        if not shutil.which(tool):
            print(
                f"compare_perf: {tool} is not installed (Debian: "
                f"{'linux-perf' if tool == 'perf' else 'util-linux'})",
                file=sys.stderr,
            )
            return 3
    store = tempfile.mkdtemp(prefix="latscope-bench-")
    rows: list[tuple[str, str, float, str, float]] = []

    r = latscope.run("syscall", op="getppid", n=args.n, store=store)
    over = r.meta["clock"]["overhead_ns"]
    per_call = float(np.median(r.values("call"))) - over
    batch = r.meta["bench"]["batch"]["per_call_median_ns"]
    perf_sys = perf_usecs_per_op(["perf", "bench", "syscall", "basic"])
    rows.append(
        (
            "getppid, per call − clock overhead",
            f"latscope ({r.meta['clock']['name']})",
            per_call,
            "perf bench syscall basic",
            perf_sys,
        )
    )
    rows.append(
        (
            "getppid, batch of back-to-back calls",
            "latscope batch figure",
            batch,
            "perf bench syscall basic",
            perf_sys,
        )
    )

    for label, cpus, prefix in (
        ("pipe round trip, one CPU", "0,0", ["taskset", "-c", "0"]),
        ("pipe round trip, unpinned", "none", []),
    ):
        p = latscope.run("pipe", cpus=cpus, mode="processes", n=args.n // 2, store=store)
        rtt = float(np.median(p.values("rtt")))
        perf_pipe = perf_usecs_per_op(
            prefix + ["perf", "bench", "sched", "pipe", "-l", str(args.loops)]
        )
        rows.append(
            (
                label,
                "latscope rtt median",
                rtt,
                f"{' '.join(prefix) + ' ' if prefix else ''}perf bench sched pipe",
                perf_pipe,
            )
        )

    w = max(len(x[0]) for x in rows)
    print(f"{'what':<{w}}  {'latscope':>12}  {'perf bench':>12}  {'ratio':>6}  sources")
    for what, src_a, a, src_b, b in rows:
        print(f"{what:<{w}}  {a:>9.1f} ns  {b:>9.1f} ns  {a / b:>6.2f}  {src_a} / {src_b}")
    print(
        "\nperf bench reports a mean (total time / operations); latscope a median of every "
        "sample.\nclock overhead on this run: "
        f"{over:.1f} ns ({r.meta['clock']['name']}); store {store}"
    )
    shutil.rmtree(store, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
