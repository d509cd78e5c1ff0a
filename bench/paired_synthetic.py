"""The paired statistic of ``latscope ab`` on synthetic interleaved arms whose truth is known.

``tests/synth.interleaved`` simulates two arms alternating in 5 ms blocks in shuffled rounds,
in W worker processes sharing 5 s, on a host that switches between two speed levels 1.33x
apart (every few seconds, sometimes within tens of ms), with AR(1) log-normal noise, rare 20x
spikes and a layout offset per worker and arm. For each true ratio (1.00: A/A, then +1%, +2%,
+5%) it runs ``--runs`` simulations through ``stats.paired`` (``block_table`` then
``paired``, default noise 1%) and prints how often the 95% interval covers the truth (with
its Clopper–Pearson interval), how often each verdict came out, and the median interval
width. Then: the order-effect warning without and with 3% carry-over, a check that the
block-level simulation (used here for speed) matches the per-sample one, and the per-worker
precision of the median against the Hodges–Lehmann estimate (the choice of estimator).
On the same +2% runs, two alternatives for the between-worker level: a two-stage bootstrap
(workers with replacement, then rounds) and a Student t interval on the worker estimates
(``W - 1`` degrees of freedom). ``--sweep`` adds the coverage at +2% for 2, 3 and 5 workers
over layout spreads from 0.25% to 1% per arm. A statistics check, not a timing benchmark.

    PYTHONPATH=src python bench/paired_synthetic.py [--runs 400] [--workers 3] [--layout 0.005]
    PYTHONPATH=src python bench/paired_synthetic.py --runs 200 --sweep
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from latscope.stats.paired import BlockTable, block_table, paired  # noqa: E402
from synth import interleaved  # noqa: E402


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = 1.0 - level
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


def table(
    truth: float,
    seed: int,
    args: argparse.Namespace,
    carry: float = 0.0,
    workers: int | None = None,
    layout: float | None = None,
) -> BlockTable:
    sim = interleaved(
        (1.0, truth),
        workers=args.workers if workers is None else workers,
        seconds=args.seconds,
        layout_sd=args.layout if layout is None else layout,
        carry_over=carry,
        per_sample=False,
        seed=seed,
    )
    return block_table(*sim)


def one(truth: float, seed: int, args: argparse.Namespace, carry: float = 0.0):
    return paired(table(truth, seed, args, carry), 1, n_boot=args.n_boot, seed=seed)


def worker_ratios(t: BlockTable) -> list[np.ndarray]:
    """Each worker's round log ratios of arm 1 against arm 0."""
    out = []
    for w in np.unique(t.worker):
        s = t.worker == w
        a, b = s & (t.arm == 1), s & (t.arm == 0)
        _, ia, ib = np.intersect1d(t.round[a], t.round[b], return_indices=True)
        out.append(np.log(t.median[a][ia] / t.median[b][ib]))
    return out


def alternatives(truth: float, seed0: int, args: argparse.Namespace) -> tuple[int, int, int, int]:
    """Coverage and 'slower' counts of a two-stage bootstrap and of a t(W - 1) interval."""
    rng = np.random.default_rng(0)
    cov_b = pow_b = cov_t = pow_t = 0
    target, gate = math.log(truth), math.log(1.01)
    for r in range(args.runs):
        ds = worker_ratios(table(truth, seed0 + r, args))
        w = len(ds)
        boot = np.array(  # 1000 bootstrap medians per worker (the rounds are independent here)
            [np.median(d[rng.integers(0, d.size, (1000, d.size))], axis=1) for d in ds]
        )
        pick = rng.integers(0, w, (1000, w))
        reps = boot[pick, rng.integers(0, 1000, (1000, w))].mean(axis=1)
        y = np.array([np.median(d) for d in ds])
        lo, hi = np.quantile(reps, [0.025, 0.975])
        cov_b += lo <= target <= hi
        pow_b += lo > 0 and y.mean() > gate
        h = float(stats.t.ppf(0.975, w - 1)) * y.std(ddof=1) / math.sqrt(w)
        cov_t += abs(y.mean() - target) <= h
        pow_t += y.mean() - h > 0 and y.mean() > gate
    return cov_b, pow_b, cov_t, pow_t


def hodges_lehmann(d: np.ndarray) -> float:
    i, j = np.triu_indices(d.size)
    return float(np.median(0.5 * (d[i] + d[j])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--layout", type=float, default=0.005, help="layout sd per worker and arm")
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--sweep", action="store_true", help="coverage over workers and layouts")
    args = ap.parse_args()
    t0 = time.time()
    print(
        f"{args.runs} simulated runs per row: 2 arms, {args.workers} workers, "
        f"{args.seconds:g} s, layout sd {100 * args.layout:.2g}% per arm, noise 1%, 95% level"
    )
    print(
        f"{'truth':>6} {'covered':>16} {'coverage CI':>13} {'slower':>7} {'faster':>7} "
        f"{'same':>5} {'inconcl.':>8} {'width':>7}"
    )
    cov_all = n_all = 0
    for j, truth in enumerate((1.00, 1.01, 1.02, 1.05)):
        verdicts: dict[str, int] = {"slower": 0, "faster": 0, "same": 0, "inconclusive": 0}
        covered = 0
        widths = []
        for r in range(args.runs):
            p = one(truth, 100_000 * (j + 1) + r, args)
            verdicts[p.verdict] += 1
            covered += p.low <= truth <= p.high
            widths.append(100 * (p.high / p.low - 1))
        cov_all += covered
        n_all += args.runs
        lo, hi = clopper_pearson(covered, args.runs)
        print(
            f"{truth:6.2f} {covered:5d}/{args.runs:<4d} {100 * covered / args.runs:5.1f}% "
            f"{100 * lo:5.1f}-{100 * hi:5.1f}% {verdicts['slower']:7d} {verdicts['faster']:7d} "
            f"{verdicts['same']:5d} {verdicts['inconclusive']:8d} {np.median(widths):6.2f}%"
        )
    lo, hi = clopper_pearson(cov_all, n_all)
    print(
        f"coverage, all rows: {cov_all}/{n_all} = {100 * cov_all / n_all:.1f}% "
        f"(95% CI {100 * lo:.1f}-{100 * hi:.1f}%)"
    )

    cb, pb, ct, pt = alternatives(1.02, 300_000, args)
    print(
        f"alternatives at +2% ({args.runs} runs): two-stage bootstrap covers {cb}, "
        f"slower {pb}; t({args.workers - 1}) on the workers covers {ct}, slower {pt}"
    )

    n_order = max(50, args.runs // 4)
    for carry in (0.0, 0.03):
        warned = 0
        for r in range(n_order):
            p = one(1.02, 900_000 + r, args, carry=carry)
            warned += p.order_warning is not None
        print(f"order warning with {100 * carry:.0f}% carry-over: {warned}/{n_order} runs")

    # the block-level route against the per-sample one (round log ratios)
    stats_of = {}
    for per_sample in (True, False):
        meds, mads, tails = [], [], []
        for r in range(20):
            sim = interleaved((1.0, 1.02), layout_sd=0.0, per_sample=per_sample, seed=r)
            t = block_table(*sim)
            d = np.concatenate(worker_ratios(t))
            meds.append(np.median(d))
            mads.append(1.4826 * np.median(np.abs(d - np.median(d))))
            tails.append(np.mean(np.abs(d - np.median(d)) > 0.05))
        stats_of[per_sample] = (np.mean(meds), np.mean(mads), np.mean(tails))
    for per_sample, (m, s, tl) in stats_of.items():
        route = "per-sample " if per_sample else "block-level"
        print(
            f"{route} route, round log ratios (20 runs, true 0.0198): median {m:.4f}, "
            f"sd (MAD) {100 * s:.2f}%, share beyond 5%: {100 * tl:.2f}%"
        )

    # the estimator: median vs Hodges-Lehmann per worker (no layout offset: truth known)
    est_m, est_hl = [], []
    for r in range(200):
        sim = interleaved((1.0, 1.02), layout_sd=0.0, per_sample=False, seed=500_000 + r)
        for d in worker_ratios(block_table(*sim)):
            est_m.append(np.median(d) - math.log(1.02))
            est_hl.append(hodges_lehmann(d) - math.log(1.02))
    rm, rh = (math.sqrt(np.mean(np.square(e))) for e in (est_m, est_hl))
    print(
        f"per-worker estimate, RMS error (600 workers): median {100 * rm:.3f}%, "
        f"Hodges-Lehmann {100 * rh:.3f}% (layout sd between workers here: "
        f"{100 * math.sqrt(2) * args.layout:.2f}%)"
    )
    if args.sweep:
        print(f"coverage at +2% ({args.runs} runs each), by workers and layout sd per arm:")
        layouts = (0.0025, 0.005, 0.0075, 0.01)
        print("workers " + " ".join(f"{100 * lay:>7.2g}%" for lay in layouts))
        for w in (2, 3, 5):
            row = []
            for lay in layouts:
                cov = 0
                for r in range(args.runs):
                    t = table(1.02, 700_000 + r, args, workers=w, layout=lay)
                    p = paired(t, 1, n_boot=args.n_boot, seed=r)
                    cov += p.low <= 1.02 <= p.high
                row.append(f"{100 * cov / args.runs:7.1f}%")
            print(f"{w:7d} " + " ".join(row))
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
