#!/usr/bin/env python3
"""`latscope ab` against a known truth, on this machine (issue 21's check on real runs).

For each benchmark: PAIRS A/A comparisons (the same scenario twice: the truth is "no
difference"), and PAIRS comparisons whose second arm has a known delay injected into every
timed region (`inject_ns`), sized as a fraction of the baseline's median measured first. It
counts the verdicts (faster / slower / same / inconclusive) and prints the median wall time of
one `latscope ab`. With --stress, the A/A pipe comparisons run again while `stress-ng --cpu N`
loads every CPU.

    python bench/ab_truth.py                      # pipe and syscall, 40 of each, defaults
    python bench/ab_truth.py --pairs 10 --only pipe
    python bench/ab_truth.py --stress 20          # 20 A/A pipe comparisons under stress-ng
    python bench/ab_truth.py --only pipe --no-aa --fractions 0.04   # other injected sizes
    python bench/ab_truth.py --only pipe --no-aa --median-ns 2900     # waits sized from 2.9 us

Runs are kept in a temporary store (removed at the end). Run it on a machine with nothing else
running: it measures the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

#: (benchmark scenario, injected fractions of its median: the goal's size first)
PLANS = {
    "pipe": ("pipe cpus=0,0", (0.02, 0.01)),
    "syscall": ("syscall", (0.05, 0.02)),
}


def latscope() -> str:
    here = Path(sys.executable).parent / "latscope"
    return str(here) if here.exists() else (shutil.which("latscope") or "latscope")


def ab(store: str, *scenarios: str, extra: tuple[str, ...] = ()) -> tuple[dict, float]:
    t0 = time.monotonic()
    out = subprocess.run(
        [latscope(), "ab", *scenarios, "--json", "--store", store, *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = time.monotonic() - t0
    if out.returncode != 0:
        raise SystemExit(f"latscope ab failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout), wall


def verdicts(results: list[dict]) -> Counter:
    c: Counter = Counter()
    for f in results:
        first = [x for x in f["comparisons"] if x["column"] == f["columns"][0]]
        c[first[0]["verdict"]] += 1
    return c


def line(label: str, c: Counter, n: int) -> str:
    return (
        f"  {label:<34} slower {c['slower']:>2}  faster {c['faster']:>2}  same {c['same']:>2}"
        f"  inconclusive {c['inconclusive']:>2}   (of {n})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--pairs", type=int, default=40, help="comparisons per case (40)")
    ap.add_argument("--only", choices=sorted(PLANS), help="one benchmark only")
    ap.add_argument(
        "--stress",
        type=int,
        default=0,
        metavar="N",
        help="N A/A pipe comparisons under stress-ng --cpu (0: none)",
    )
    ap.add_argument(
        "--fractions",
        metavar="F,F",
        help="injected sizes as fractions of the median, instead of the plan's (0.04,0.02)",
    )
    ap.add_argument("--no-aa", action="store_true", help="no A/A comparisons")
    ap.add_argument(
        "--median-ns",
        type=float,
        help="size the injected waits from this median instead of the pilot's (a pilot that "
        "ran while the host was at its slow speed sizes them a third too large)",
    )
    args = ap.parse_args()
    chosen = [float(x) for x in args.fractions.split(",")] if args.fractions else None
    store = tempfile.mkdtemp(prefix="latscope-ab-truth-")
    walls: list[float] = []
    try:
        for name, (scenario, fractions) in PLANS.items():
            if args.only and name != args.only:
                continue
            pilot, w = ab(store, scenario, scenario)
            walls.append(w)
            col = pilot["columns"][0]
            median = next(
                m["median_ns"] for m in pilot["medians"] if m["arm"] == "A" and m["column"] == col
            )
            print(f"{name}: '{scenario}', {col} median {median:.1f} ns (pilot)", flush=True)
            if args.median_ns:
                median = args.median_ns
                print(f"  the waits sized from a median of {median:.1f} ns (--median-ns)")
            if not args.no_aa:
                aa = []
                for _ in range(args.pairs):
                    f, w = ab(store, scenario, scenario)
                    aa.append(f)
                    walls.append(w)
                print(line("A/A", verdicts(aa), len(aa)), flush=True)
            for frac in chosen or fractions:
                inj = max(1, round(frac * median))
                got = []
                for _ in range(args.pairs):
                    f, w = ab(store, scenario, f"{scenario} inject_ns={inj}")
                    got.append(f)
                    walls.append(w)
                label = f"+{frac:.0%} (inject_ns={inj})"
                print(line(label, verdicts(got), len(got)), flush=True)
                ratios = [
                    next(x["ratio"] for x in f["comparisons"] if x["column"] == col) for f in got
                ]
                # the truth of each comparison: its own baseline's median plus the wait (the
                # host may have changed speed since the pilot that sized the wait)
                truths = [
                    1 + inj / next(m["median_ns"] for m in f["medians"] if m["arm"] == "A"
                                   and m["column"] == col)
                    for f in got
                ]  # fmt: skip
                print(
                    f"  {'':<34} ratio median {statistics.median(ratios):.4f}, truth median "
                    f"{statistics.median(truths):.4f} ({min(truths):.4f}-{max(truths):.4f})",
                    flush=True,
                )
        if args.stress:
            if not shutil.which("stress-ng"):
                print("stress-ng is not installed: no stressed comparisons", file=sys.stderr)
            else:
                load = subprocess.Popen(
                    ["stress-ng", "--cpu", str(os.cpu_count() or 2), "--timeout", "3600"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                try:
                    time.sleep(2)
                    scenario = PLANS["pipe"][0]
                    got = [ab(store, scenario, scenario)[0] for _ in range(args.stress)]
                    print(line("A/A pipe under stress-ng --cpu", verdicts(got), len(got)))
                finally:
                    load.terminate()
                    load.wait()
        if walls:
            print(
                f"wall time of one latscope ab: median {statistics.median(walls):.2f} s, "
                f"max {max(walls):.2f} s ({len(walls)} runs)"
            )
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
