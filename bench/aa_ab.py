#!/usr/bin/env python3
"""Do comparisons survive a second run? A/A and injected A/B pairs through the CLI.

For each benchmark (pipe with cpus=0,0, syscall), in ``--pairs`` rounds, each round in a
shuffled order: two runs of the same command (an A/A pair), and one run per injected size
with a known busy-wait of that fraction of the reference median in every timed region
(``latscope run --inject-ns``; the A/B pair is it against the round's first run). Every pair
is compared with ``latscope compare`` and its verdict counted. Then ``--suites`` times a suite
of two identical scenarios (5 repetitions each): how often the interval of their ratio
excludes 1, and its verdict.

Goals (the issue's must-show, on a quiet machine, ``--pairs 40``): A/A faster/slower in at
most 2 of 40 pairs; +25% found "slower" in at least 36 of 40 and never "faster"; +10%
reported. Everything runs as a user runs it: ``latscope`` in a subprocess, with defaults, in a
temporary store (kept with ``--store DIR``). It takes long: ~4 runs per round and benchmark.

    python bench/aa_ab.py --pairs 2 --suites 1          # a smoke run
    python bench/aa_ab.py                               # the full version (40 pairs)
    python bench/aa_ab.py --rejudge DIR                 # a kept store's pairs, judged again
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BENCHES = {"pipe": ["-p", "cpus=0,0"], "syscall": []}
VERDICTS = (
    (" slower than ", "slower"),
    (" faster than ", "faster"),
    (" the same as ", "same"),
    ("cannot tell", "inconclusive"),
)


def latscope(store: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "latscope.cli", *args, "--store", str(store)]
    env = {**os.environ, "COLUMNS": "250"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"aa_ab: {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def run(store: Path, bench: str, *extra: str) -> str:
    out = latscope(store, "run", bench, *BENCHES[bench], "--quiet", *extra)
    m = re.search(r"run (\S+) kept in", out)
    if not m:
        raise SystemExit(f"aa_ab: no run id in the output of 'latscope run {bench}'")
    return m.group(1)


def verdict(store: Path, a: str, b: str) -> str:
    """The verdict of the first column in `latscope compare a b` (its explanation line)."""
    out = latscope(store, "compare", a, b)
    for line in out.splitlines():
        if re.match(r"^\S+: ", line):
            for phrase, v in VERDICTS:
                if phrase in line:
                    return v
    raise SystemExit(f"aa_ab: no verdict in 'latscope compare {a} {b}'")


def median_ns(store: Path, run_id: str) -> float:
    from latscope.measure.runner import load

    return float(load(run_id, store).summary()["p50_ns"][0])


def pairs(store: Path, bench: str, n_pairs: int, sizes: list[float], seed: int) -> dict:
    rng = random.Random(seed)
    ref = median_ns(store, run(store, bench))
    counts: dict[str, Counter] = {"A/A": Counter(), **{f"+{s:.0%}": Counter() for s in sizes}}
    for i in range(n_pairs):
        jobs = [("A", 0.0), ("A'", 0.0)] + [(f"+{s:.0%}", s) for s in sizes]
        rng.shuffle(jobs)
        ids = {}
        for label, s in jobs:
            extra = ["--inject-ns", f"{s * ref:.0f}"] if s else []
            ids[label] = run(store, bench, *extra)
        counts["A/A"][verdict(store, ids["A"], ids["A'"])] += 1
        for s in sizes:
            counts[f"+{s:.0%}"][verdict(store, ids["A"], ids[f"+{s:.0%}"])] += 1
        print(
            f"  {bench} round {i + 1}/{n_pairs}: "
            + "; ".join(f"{k} {dict(v)}" for k, v in counts.items()),
            flush=True,
        )
    return {"reference_median_ns": ref, "counts": counts}


def rejudge(store: Path, bench: str, sizes: list[float]) -> dict:
    """The pairs of a kept store judged again by today's ``latscope compare`` (``--rejudge``):
    the store's runs of ``bench`` outside suites, in the order they were made, are the
    reference run and then, round by round, the two plain runs (A, A') and one run per
    injected size (smallest first). Each is compared as `pairs` did; the history compare
    reads is the store's as it is now (its last runs of the scenario)."""
    from latscope.record import Run

    kept = []
    for d in sorted((store / "runs").iterdir()):
        try:
            r = Run(d)
        except Exception:
            continue
        if r.benchmark == bench and not (r.meta.get("run") or {}).get("tags", {}).get("suite"):
            kept.append(r)
    per_round = 2 + len(sizes)
    rounds = [kept[1 + k : 1 + k + per_round] for k in range(0, len(kept) - 1, per_round)]
    counts: dict[str, Counter] = {"A/A": Counter(), **{f"+{s:.0%}": Counter() for s in sizes}}
    for i, got in enumerate(r for r in rounds if len(r) == per_round):
        plain = [r.id for r in got if not r.inject_ns]
        injected = [
            r.id for r in sorted((r for r in got if r.inject_ns), key=lambda r: r.inject_ns)
        ]
        if len(plain) != 2 or len(injected) != len(sizes):
            raise SystemExit(
                f"aa_ab: round {i + 1} of {bench} is not two plain runs and the injected"
            )
        counts["A/A"][verdict(store, plain[0], plain[1])] += 1
        for s, b in zip(sizes, injected, strict=True):
            counts[f"+{s:.0%}"][verdict(store, plain[0], b)] += 1
    print(f"  {bench}: {sum(counts['A/A'].values())} rounds judged again", flush=True)
    return {"counts": counts}


SUITE = """name = "aa"
repeat = 5
[[scenario]]
name = "a1"
benchmark = "{bench}"
params = {{ {params} }}
[[scenario]]
name = "a2"
benchmark = "{bench}"
params = {{ {params} }}
"""


def suites(store: Path, bench: str, n: int, tmp: Path) -> dict:
    params = ", ".join(f'{k} = "{v}"' for k, v in (p.split("=", 1) for p in BENCHES[bench][1::2]))
    f = tmp / f"aa-{bench}.toml"
    f.write_text(SUITE.format(bench=bench, params=params))
    excl, verdicts = 0, Counter()
    for i in range(n):
        before = set((store / "suites").glob("*.json")) if (store / "suites").exists() else set()
        latscope(store, "suite", str(f), "--seed", str(i + 1), "--quiet")
        (new,) = set((store / "suites").glob("*.json")) - before
        rec = json.loads(new.read_text())
        row = next(r for r in rec["comparison"] if r["scenario"] == "a2" and r["comparison"])
        lo, hi = row["comparison"]["median_ratio_ci"]
        excl += not (lo <= 1.0 <= hi)
        verdicts[row["comparison"]["verdict"]] += 1
        print(
            f"  {bench} suite {i + 1}/{n}: ratio {row['comparison']['median_ratio']:.3f} "
            f"[{lo:.3f}–{hi:.3f}] {row['comparison']['verdict']}",
            flush=True,
        )
    return {"suites": n, "excludes_1": excl, "verdicts": verdicts}


def limits(store: Path, bench: str) -> dict | None:
    """What single runs can tell apart here, from the plain runs (no injection) in the store.

    A/A pairs of single runs differ by the variation between runs; a verdict on one run per
    side can only be "slower" beyond the difference that two identical runs reach with 5%
    probability. This is the 95th percentile of |ratio - 1| over every pair of plain runs, with
    the runs' medians (the geometric mean of their worker medians) and the share of worker
    medians more than 15% above the run's fastest worker (the host's slow state, when any).
    """
    import numpy as np

    from latscope.record import Run
    from latscope.stats.between import segment_medians, typical_median

    meds, slow, workers = [], 0, 0
    for d in sorted((store / "runs").iterdir()):
        try:
            r = Run(d)
        except Exception:
            continue
        if r.benchmark != bench or r.inject_ns or len(r.segments) < 2:
            continue
        col = r.columns[0]
        x, step = r.values(col), r.column_step_ns(col)
        meds.append(typical_median(x, r.segments, step))
        w = np.asarray(segment_medians(x, r.segments, step).medians)
        slow += int(np.sum(w > 1.15 * w.min()))
        workers += len(w)
    if len(meds) < 3:
        return None
    m = np.asarray(meds)
    i, j = np.triu_indices(len(m), 1)
    diff = np.abs(m[j] / m[i] - 1)
    return {
        "runs": len(m),
        "median_quartiles_ns": [float(q) for q in np.percentile(m, [0, 25, 50, 75, 100])],
        "aa_95": float(np.percentile(diff, 95)),
        "slow_worker_share": slow / workers,
    }


def print_limits(bench: str, lim: dict | None) -> None:
    if lim is None:
        print(f"{bench:<10} fewer than 3 plain runs: no between-run figures")
        return
    q = " ".join(f"{v / 1000:.3g}" for v in lim["median_quartiles_ns"])
    print(
        f"{bench:<10} {lim['runs']} plain runs, medians min/q1/median/q3/max (µs): {q}; "
        f"{100 * lim['slow_worker_share']:.0f}% of worker medians >15% above their run's "
        f"fastest; two identical runs differ by up to ±{100 * lim['aa_95']:.1f}% "
        "(95% of pairs): the smallest change one run per side can show here"
    )


def print_summary(res: dict, n_pairs: int, what: str) -> None:
    """The verdict counts of every benchmark and pair against the goals."""
    print(f"\nsummary ({what})")
    print(
        f"{'benchmark':<10} {'pair':<6} {'faster':>6} {'slower':>6} {'same':>5} {'incon.':>6}  goal"
    )
    for b, r in res.items():
        for k, c in r["counts"].items():
            goal = {
                "A/A": f"faster+slower <= {n_pairs // 20}",
                "+25%": f"slower >= {int(0.9 * n_pairs)}, faster 0",
            }.get(k, "report")
            ok = {
                "A/A": c["faster"] + c["slower"] <= n_pairs // 20,
                "+25%": c["slower"] >= 0.9 * n_pairs and c["faster"] == 0,
            }.get(k)
            mark = "" if ok is None else ("  met" if ok else "  NOT MET")
            print(
                f"{b:<10} {k:<6} {c['faster']:>6} {c['slower']:>6} {c['same']:>5} "
                f"{c['inconclusive']:>6}  {goal}{mark}"
            )
        if "suite" in r:
            s = r["suite"]
            print(
                f"{b:<10} suite A/A: interval excludes 1 in {s['excludes_1']} of "
                f"{s['suites']} suites; verdicts {dict(s['verdicts'])}"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=40, help="rounds per benchmark (40)")
    ap.add_argument("--suites", type=int, default=10, help="A/A suites per benchmark (10)")
    ap.add_argument("--inject", default="10%,25%", help="injected sizes (10%%,25%%; none)")
    ap.add_argument("--bench", action="append", choices=list(BENCHES), help="only this one")
    ap.add_argument("--store", help="keep the runs here (default: a temporary store)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--analyse", metavar="STORE", help="only print the between-run figures of a kept store"
    )
    ap.add_argument(
        "--rejudge",
        metavar="STORE",
        help="judge the pairs of a kept store again with today's compare (same --inject)",
    )
    a = ap.parse_args()
    if a.analyse:
        for b in a.bench or list(BENCHES):
            print_limits(b, limits(Path(a.analyse), b))
        return 0
    sizes = [float(s.strip().rstrip("%")) / 100 for s in a.inject.split(",") if a.inject != "none"]
    benches = a.bench or list(BENCHES)
    if a.rejudge:
        res = {b: rejudge(Path(a.rejudge), b, sizes) for b in benches}
        n = sum(res[benches[0]]["counts"]["A/A"].values())
        print_summary(res, n, f"{n} pairs per row, judged again")
        return 0
    with tempfile.TemporaryDirectory(prefix="latscope-aa-") as tmpd:
        tmp = Path(tmpd)
        store = Path(a.store) if a.store else tmp / "store"
        t0 = time.monotonic()
        res = {}
        for b in benches:
            print(f"{b}: {a.pairs} rounds", flush=True)
            res[b] = pairs(store, b, a.pairs, sizes, a.seed)
            if a.suites:
                res[b]["suite"] = suites(store, b, a.suites, tmp)
        print_summary(res, a.pairs, f"{a.pairs} pairs per row, {time.monotonic() - t0:.0f} s")
        print("\nbetween runs (plain runs of each benchmark in this store)")
        for b in res:
            print_limits(b, limits(store, b))
        if a.store is None:
            print("(temporary store removed; keep the runs with --store DIR)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
