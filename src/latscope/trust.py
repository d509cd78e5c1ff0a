"""How far this machine can be trusted for one benchmark: ``latscope trust``.

``latscope trust BENCH [-p k=v ...]`` measures, in ``--pairs`` rounds:

1. a reference run first, whose median (first column) sizes the injected delays;
2. per round, in a shuffled order: two runs of the scenario (an A/A pair) and, per injected
   size ``f`` (``--inject 10%,25%``), one run with a busy-wait of ``f`` x the reference
   median in every timed region (probe ``--inject-ns``; the A/B pair is that run against the
   round's first run).

Every pair is compared as ``latscope compare`` would (``report.compare.compare_runs``, the
default noise threshold). The result, per column:

- ``run_cv``: coefficient of variation of the medians of the runs without injection (runs as
  ``latscope run`` makes them: several worker processes by default) — the between-run
  variation;
- ``process_cv``: the typical (median) CV of the worker medians within those runs, the
  variation between single processes (equal to ``run_cv`` when the runs had one process
  each); ``compare`` uses it when a side of a comparison ran in a single process;
- ``noise``: the range within which 95% of A/A ratios of two runs fall (``aa_range``:
  ``z(0.975) * sqrt(2) * run_cv``, or the 95th percentile of the ratios of every pair of
  those runs where that is wider); ``compare`` raises its noise threshold to it;
- the A/A false-difference rate (pairs called faster or slower), the detection rate of every
  injected size, and the smallest injected size detected in at least 90% of the pairs.

The record is kept in the store (variation.py: ``write_record``), where ``compare`` and suites
find it (``known_variation``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import BadInput
from .variation import (
    FORMAT,
    FORMAT_VERSION,
    TRUST_DIR,
    _cv,
    aa_range,
    key_of_run,
    known_variation,
    read_record,
    record_path,
    scenario_key,
    write_record,
)

if TYPE_CHECKING:
    from rich.console import Console

    from .runs import Run
    from .store import Store

__all__ = [
    "DETECTED",
    "FORMAT",
    "Plan",
    "key_of_run",
    "known_variation",
    "measure",
    "parse_injections",
    "print_record",
    "read_record",
    "record_path",
    "scenario_key",
    "write_record",
]

#: An injected size counts as detected when at least this share of its pairs say "slower".
DETECTED = 0.9


# ------------------------------------------------------------------------------- measuring


def parse_injections(text: str) -> list[float]:
    """'10%,25%' (or '0.1,0.25') -> [0.1, 0.25]; one-line BadInput otherwise."""
    out = []
    for part in text.split(","):
        t = part.strip()
        try:
            v = float(t.rstrip("%")) / (100.0 if t.endswith("%") else 1.0)
        except ValueError:
            raise BadInput(f"--inject {text}: write sizes as percentages, e.g. 10%,25%") from None
        if not 0.0 < v <= 10.0:
            raise BadInput(f"--inject {t}: a size must lie between 0% and 1000% of the median")
        out.append(v)
    if not out:
        raise BadInput("--inject: give at least one size, e.g. 10%,25%")
    return sorted(set(out))


@dataclass
class Plan:
    benchmark: str
    params: dict[str, Any]
    pairs: int
    injections: list[float]
    n: int | None = None
    workers: int | None = None
    clock: str | None = None
    seed: int = 0

    @property
    def total_runs(self) -> int:
        return 1 + self.pairs * (2 + len(self.injections))


def measure(
    plan: Plan,
    store: Store,
    on_step: Callable[[int, str, Run | None], None] | None = None,
    progress: Callable[[int], Callable[[int, int], None] | None] | None = None,
) -> dict[str, Any]:
    """Run the plan (module docs) and return the trust record (not yet written)."""
    from .report.compare import compare_runs
    from .runner import measure as measure_run

    if plan.pairs < 2:
        raise BadInput(f"--pairs {plan.pairs}: give at least 2 pairs")
    store.ensure(TRUST_DIR)  # where the record goes: checked before the first run
    rng = random.Random(plan.seed)
    step = 0

    def one(label: str, inject_ns: float | None, tags: dict[str, Any]) -> Run:
        nonlocal step
        run = measure_run(
            plan.benchmark,
            plan.params,
            n=plan.n,
            clock=plan.clock,
            store=store,
            workers=plan.workers,
            inject_ns=inject_ns,
            progress=progress(step) if progress else None,
            tags={"trust": group, **tags},
        )
        step += 1
        if on_step:
            on_step(step, label, run)
        return run

    group = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    ref = one("reference", None, {"trust_role": "reference"})
    cols = ref.all_columns
    from .stats.between import typical_median

    ref_median = typical_median(ref.values(cols[0]), ref.segments)
    inject_ns = {f: f * ref_median for f in plan.injections}
    rounds: list[dict[str, Any]] = []
    for i in range(plan.pairs):
        jobs: list[tuple[str, float | None]] = [("A", None), ("A'", None)] + [
            (f"B+{f:.0%}", f) for f in plan.injections
        ]
        rng.shuffle(jobs)
        got: dict[str, Run] = {}
        for label, f in jobs:
            got[label] = one(
                f"round {i + 1}: {label}",
                inject_ns[f] if f else None,
                {"trust_role": label, "trust_round": i + 1},
            )
        rounds.append(got)

    def verdicts(a: Run, b: Run) -> dict[str, Any]:
        _, rows = compare_runs([a, b], seed=plan.seed, store=None)
        return {r.column: r.result for r in rows if r.result is not None}

    columns: dict[str, Any] = {}
    per_pair = []
    for got in rounds:
        pair = {"A/A": verdicts(got["A"], got["A'"])}
        for f in plan.injections:
            pair[f"+{f:.0%}"] = verdicts(got["A"], got[f"B+{f:.0%}"])
        per_pair.append(pair)
    plain = [ref] + [r for got in rounds for r in (got["A"], got["A'"])]
    from .stats.between import segment_medians, typical_median
    from .stats.compare import verdict

    for c in cols:
        meds = [typical_median(r.values(c), r.segments, r.column_step_ns(c)) for r in plain]
        run_cv = _cv(meds)

        wcv = [
            _cv(segment_medians(r.values(c), r.segments, r.column_step_ns(c)).medians)
            for r in plain
        ]
        wcv = [v for v in wcv if v is not None]
        process_cv = float(np.median(wcv)) if wcv else run_cv
        noise = aa_range(meds)
        aa = [p["A/A"].get(c) for p in per_pair]
        aa = [x for x in aa if x is not None]
        false = sum(x.verdict in ("faster", "slower") for x in aa)

        false_thr = sum(
            verdict(
                x.median_ratio.low, x.median_ratio.high, x.median_ratio.estimate, 0.02, noise or 0
            )
            in ("faster", "slower")
            for x in aa
        )
        inj = []
        for f in plan.injections:
            res = [p[f"+{f:.0%}"].get(c) for p in per_pair]
            res = [x for x in res if x is not None]
            inj.append(
                {
                    "size": f,
                    "inject_ns": inject_ns[f],
                    "pairs": len(res),
                    "slower": sum(x.verdict == "slower" for x in res),
                    "faster": sum(x.verdict == "faster" for x in res),
                    "median_ratio": float(np.median([x.median_ratio.estimate for x in res]))
                    if res
                    else None,
                }
            )
        detected = [d["size"] for d in inj if d["pairs"] and d["slower"] >= DETECTED * d["pairs"]]
        columns[c] = {
            "median_ns": float(np.median(meds)),
            "run_cv": run_cv,
            "process_cv": process_cv,
            "noise": noise,
            "aa_pairs": len(aa),
            "aa_false": false,
            "aa_false_with_noise": false_thr,
            "injected": inj,
            "smallest_detected": min(detected) if detected else None,
        }
    env = (ref.meta.get("run") or {}).get("env") or {}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "key": key_of_run(ref),
        "benchmark": ref.benchmark,
        "params": ref.meta.get("params"),
        "clock": ref.clock.get("name"),
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": (ref.env or {}).get("hostname"),
        "kernel": ((ref.env or {}).get("kernel") or {}).get("release"),
        "env_captured": bool(env),
        "pairs": plan.pairs,
        "n": ref.n,
        "workers": len(ref.segments),
        "seed": plan.seed,
        "reference_median_ns": ref_median,
        "trust_group": group,
        "runs": [ref.id] + [r.id for got in rounds for r in got.values()],
        "columns": columns,
    }


def _rate(k: int, n: int) -> str:
    return f"{k}/{n}" if n else "—"


def print_record(console: Console, rec: dict[str, Any], path: Path | None = None) -> None:
    """The trust figures per column, one table, and what compare will do with them."""
    from rich import box
    from rich.table import Table

    from .repeat import pct
    from .units import fmt

    t = Table(
        title=f"trust: {rec['key']} — {rec['pairs']} pairs, {rec['workers']} worker processes "
        f"per run, n={rec['n']:,}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name, just in (
        ("column", "left"),
        ("median", "right"),
        ("between runs: CV", "right"),
        ("between processes: CV", "right"),
        ("A/A false", "right"),
        ("detected per injected size", "left"),
        ("smallest detected", "right"),
    ):
        t.add_column(name, justify=just)  # type: ignore[arg-type]
    for c, d in rec["columns"].items():
        det = ", ".join(
            f"+{x['size']:.0%}: {_rate(x['slower'], x['pairs'])}"
            + (f" ({x['faster']} faster!)" if x["faster"] else "")
            for x in d["injected"]
        )
        t.add_row(
            c,
            fmt(d["median_ns"]),
            pct(d["run_cv"]),
            pct(d["process_cv"]),
            f"{_rate(d['aa_false'], d['aa_pairs'])} ({d['aa_false_with_noise']})",
            det,
            "—" if d["smallest_detected"] is None else f"+{d['smallest_detected']:.0%}",
        )
    console.print(t)
    first = next(iter(rec["columns"].values()))
    console.print(
        f"[dim]A/A false: pairs of two runs of the same command that 'latscope compare' (±2% "
        "noise) called faster or slower; in brackets, how many against the A/A range of run "
        "medians, ±"
        f"{pct(first['noise'])} for {next(iter(rec['columns']))} (95% of A/A pairs of runs "
        "fall within it), "
        "which compare now uses as its noise threshold for this scenario. Detected: share of "
        f"A/B pairs called slower; smallest detected: in at least {DETECTED:.0%} of the pairs."
        "[/dim]"
    )
    if path is not None:
        console.print(f"[dim]kept in {path}[/dim]")
