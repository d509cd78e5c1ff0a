"""Synthetic truth for the intervals and the periods (issue 22): what latscope says against what
is known to be true.

1. Coverage of the 95% interval of the median on three processes whose true median is known,
   each quantised to a 10.015 ns clock step and analysed with that step (``tests/synth.py``):
   a log-normal whose log scale is an AR(1) with phi = 0.8; independent log-normal latencies
   with 1% 10x spikes; a level that switches between three values in regimes of ~400
   iterations. At n = 1,000, 5,000 and 100,000, with the replications given. For the regimes,
   coverage is also split by whether the run ever left its first regime: a run that never did
   holds independent samples of one level, and no interval that is right for independent data
   can cover the long-run median from it (unless the level happens to lie next to it).
2. The period of spikes: every 4,096 iterations (12 recurrences in 50,000 samples) among random
   spikes in an AR(1) body (``synth.periodic_spikes``), exactly and with a jitter of +-10, and
   among 4x as many random spikes; and the same runs without the periodic spikes, plus bursts
   of 1 to 10 spikes at random onsets: no period may be claimed there. A claim is "true" within
   0.5% of 4,096, "harmonic" if it is a multiple or divisor of it (their ratio within 0.02 of
   an integer up to 16), else "wrong": 4,096 / 29 = 141.2 is no period of anything here.

A statistics check, not a timing benchmark. With ``--baseline REV`` the same study also runs
on the ``src/latscope`` of git revision ``REV`` (extracted with ``git archive`` into a
temporary directory; the repository is not changed), and both are printed side by side.

    PYTHONPATH=src python bench/synthetic_truth.py [--baseline HEAD] [--reps 1000,600,150]
        [--period-reps 200] [--jobs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

SIZES = (1_000, 5_000, 100_000)
PROCESSES = ("AR(1) phi 0.8", "log-normal + 1% 10x spikes", "regime switching")
PERIOD = 4096
#: A claim is a multiple or divisor of the period when their ratio is near 2 .. this.
MAX_HARMONIC = 16
PERIOD_CASES = {
    "period 4,096, exact, 1/1,000 random": dict(period=PERIOD, jitter=0, random_rate=1e-3),
    "period 4,096, +-10, 1/1,000 random": dict(period=PERIOD, jitter=10, random_rate=1e-3),
    "period 4,096, exact, 1/250 random": dict(period=PERIOD, jitter=0, random_rate=4e-3),
}
NULL_CASES = {
    "no period, 1/1,000 random": dict(period=0, random_rate=1e-3),
    "no period, 1/250 random": dict(period=0, random_rate=4e-3),
    "no period, bursts of 1-10": dict(period=0, random_rate=0.0, bursts=True),
}


# ---------------------------------------------------------------- one replication (in a worker)


def _coverage_one(args: tuple[str, int, int]) -> tuple[bool, float, bool]:
    from latscope.stats import Prepared, confidence_intervals
    from synth import (
        STEP,
        lognormal_ar1,
        quantise,
        regimes_median,
        regimes_with_states,
        spiky,
        spiky_median,
    )

    name, n, seed = args
    rng = np.random.default_rng(seed)
    left = True
    if name == PROCESSES[0]:
        x, truth = lognormal_ar1(n, rng, phi=0.8), 1200.0
    elif name == PROCESSES[1]:
        x, truth = spiky(n, rng), spiky_median()
    else:
        x, state = regimes_with_states(n, rng)
        truth = regimes_median()
        left = bool(np.any(state != state[0]))
    iv = confidence_intervals(
        Prepared(quantise(x), step=STEP), seed=seed, percentiles=(), n_boot=200
    ).median
    assert iv.low is not None and iv.high is not None
    return bool(iv.low <= truth <= iv.high), float(iv.high - iv.low), left


def regime_bound(n: int, reps: int = 4000, reach: float = 0.01) -> tuple[float, float, float]:
    """What the regime-switching process allows at ``n``, before any analysis: the share of
    runs whose visited regimes' own levels (known exactly: an oracle no interval has) straddle
    the true median; the share in which they do once stretched by ``reach`` (1%) beyond the
    lowest and highest level visited; and the share of runs that never left their first
    regime. A run whose visited levels, so stretched, miss the true median holds no sample
    that says where it is: an interval that covers it there reaches past everything the run
    showed."""
    from synth import REGIME_LEVELS, regimes_median, regimes_with_states

    truth = regimes_median()
    levels = np.asarray(REGIME_LEVELS)
    straddle = near = stayed = 0
    for i in range(reps):
        _, state = regimes_with_states(n, np.random.default_rng(5_000_011 + i))
        seen = levels[np.unique(state)]
        straddle += bool(seen.min() <= truth <= seen.max())
        near += bool(seen.min() * (1 - reach) <= truth <= seen.max() * (1 + reach))
        stayed += bool(np.all(state == state[0]))
    return straddle / reps, near / reps, stayed / reps


def _period_one(args: tuple[str, int]) -> float | None:
    from latscope.stats import outliers
    from synth import bursts, periodic_spikes

    name, seed = args
    case = {**PERIOD_CASES, **NULL_CASES}[name]
    n = 50_000
    rng = np.random.default_rng(seed)
    opts = {k: v for k, v in case.items() if k != "bursts"}
    x = periodic_spikes(n, rng, **opts)
    if case.get("bursts"):
        x[bursts(n, 2e-3, 1, 10, rng)] *= 20.0
    return outliers(x).periodicity.period_iterations


def _kind(found: float | None) -> str:
    if found is None:
        return "none"
    if abs(found - PERIOD) <= 0.005 * PERIOD:
        return "true"
    ratio = found / PERIOD if found > PERIOD else PERIOD / found
    if abs(ratio - round(ratio)) <= 0.02 and round(ratio) <= MAX_HARMONIC:
        return "harmonic"
    return "wrong"


# ---------------------------------------------------------------------------- one source tree


def study(reps: tuple[int, ...], period_reps: int, jobs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"coverage": {}, "periods": {}}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for name in PROCESSES:
            for n, r in zip(SIZES, reps, strict=True):
                t0 = time.perf_counter()
                jobs_ = [(name, n, 1_000_003 * n + i) for i in range(r)]
                res = list(pool.map(_coverage_one, jobs_, chunksize=8))
                hits = sum(h for h, _, _ in res)
                stay = [h for h, _, left in res if not left]
                moved = [h for h, _, left in res if left]
                out["coverage"][f"{name}|{n}"] = {
                    "reps": r,
                    "hits": hits,
                    "width": float(np.median([w for _, w, _ in res])),
                    "stayed": [len(stay), int(sum(stay))],
                    "moved": [len(moved), int(sum(moved))],
                    "seconds": time.perf_counter() - t0,
                }
                print(f"  {name} n={n:,}: {hits}/{r}", file=sys.stderr, flush=True)
        for name in (*PERIOD_CASES, *NULL_CASES):
            jobs_ = [(name, 7_000_001 + i) for i in range(period_reps)]
            found = list(pool.map(_period_one, jobs_, chunksize=8))
            kinds = [_kind(f) for f in found]
            out["periods"][name] = {
                "reps": period_reps,
                **{k: kinds.count(k) for k in ("true", "harmonic", "wrong", "none")},
                "claimed": sorted({round(f, 1) for f in found if f is not None})[:8],
            }
            print(f"  {name}: {out['periods'][name]}", file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------------- printing


def _cp(hits: int, reps: int) -> tuple[float, float]:
    lo = stats.beta.ppf(0.025, hits, reps - hits + 1) if hits else 0.0
    hi = stats.beta.ppf(0.975, hits + 1, reps - hits) if hits < reps else 1.0
    return float(lo), float(hi)


def _cov_cell(c: dict[str, Any]) -> str:
    lo, hi = _cp(c["hits"], c["reps"])
    return f"{c['hits'] / c['reps']:6.1%} [{lo:.3f}, {hi:.3f}] {c['width']:6.1f} ns"


def show(results: list[tuple[str, dict[str, Any]]]) -> None:
    labels = [lab for lab, _ in results]
    print("Coverage of the 95% median interval (Clopper-Pearson 95% range; median width)")
    head = f"{'process':<28} {'n':>8} {'reps':>5}  " + "  ".join(f"{lab:<34}" for lab in labels)
    print(head)
    print("-" * len(head))
    first = results[0][1]["coverage"]
    for key in first:
        name, n = key.split("|")
        cells = "  ".join(f"{_cov_cell(r['coverage'][key]):<34}" for _, r in results)
        print(f"{name:<28} {int(n):>8,} {first[key]['reps']:>5}  {cells}")
    print()
    print("Regime switching, split by whether the run ever left its first regime:")
    for key in first:
        if not key.startswith(PROCESSES[2]):
            continue
        n = int(key.split("|")[1])
        parts = []
        for lab, r in results:
            c = r["coverage"][key]
            (s_n, s_h), (m_n, m_h) = c["stayed"], c["moved"]
            stayed = f"{s_h}/{s_n}" if s_n else "-"
            moved = f"{m_h / m_n:.1%} of {m_n}" if m_n else "-"
            parts.append(f"{lab}: stayed (independent data) covered {stayed}, moved {moved}")
        print(f"  n = {n:,}: " + "; ".join(parts))
        straddle, near, stayed = regime_bound(n)
        print(
            f"    before any analysis: the levels a run visited straddle the true median in "
            f"{straddle:.1%} of runs, {near:.1%} when stretched 1% past the lowest and highest; "
            f"{stayed:.1%} never left their first regime"
        )
    print()
    print(f"Period of spikes, n = 50,000, true period {PERIOD:,} (12 recurrences)")
    head = f"{'scenario':<38} {'reps':>5}  " + "  ".join(
        f"{lab + ': true/harmonic/wrong/none':<44}" for lab in labels
    )
    print(head)
    print("-" * len(head))
    for name in results[0][1]["periods"]:
        cells = []
        for _, r in results:
            p = r["periods"][name]
            cell = f"{p['true']}/{p['harmonic']}/{p['wrong']}/{p['none']}"
            if p["wrong"] or p["harmonic"]:
                cell += f" (claimed {', '.join(f'{v:g}' for v in p['claimed'])})"
            cells.append(f"{cell:<44}")
        print(f"{name:<38} {results[0][1]['periods'][name]['reps']:>5}  " + "  ".join(cells))


# -------------------------------------------------------------------------------------- main


def _baseline_src(rev: str, into: Path) -> Path:
    """``src/latscope`` of ``rev``, extracted (read-only git) into ``into``; its path."""
    tar = into / "src.tar"
    with open(tar, "wb") as fh:
        subprocess.run(["git", "archive", rev, "src/latscope"], cwd=ROOT, stdout=fh, check=True)
    with tarfile.open(tar) as tf:
        tf.extractall(into, filter="data")
    return into / "src"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="also run the study on this git revision (before)")
    ap.add_argument("--reps", default="1000,600,150", help="replications at each n")
    ap.add_argument("--period-reps", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one tree, as JSON
    a = ap.parse_args()
    reps = tuple(int(r) for r in a.reps.split(","))
    if a.json:
        print(json.dumps(study(reps, a.period_reps, a.jobs)))
        return
    results: list[tuple[str, dict[str, Any]]] = []
    if a.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            src = _baseline_src(a.baseline, Path(tmp))
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT / "tests")])}
            cmd = [sys.executable, __file__, "--json", "--reps", a.reps]
            cmd += ["--period-reps", str(a.period_reps), "--jobs", str(a.jobs)]
            print(f"before ({a.baseline}):", file=sys.stderr, flush=True)
            done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=True, text=True)
            results.append((f"before ({a.baseline})", json.loads(done.stdout)))
    print("after (working tree):", file=sys.stderr, flush=True)
    results.append(("after" if a.baseline else "working tree", study(reps, a.period_reps, a.jobs)))
    show(results)


if __name__ == "__main__":
    main()
