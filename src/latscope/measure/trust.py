"""How far this machine can be trusted for one benchmark: ``latscope trust``, which asks
what ``latscope ab`` resolves here.

``latscope trust BENCH [-p k=v ...]`` measures, with ``latscope ab`` (A and B interleaved in
one probe process, the paired statistic, the one verdict function):

1. a reference: an A/A ``ab`` of the scenario, whose baseline median (first column) sizes the
   injected delays;
2. ``--pairs`` rounds, each in a shuffled order: one A/A ``ab`` (the scenario against itself)
   and, per injected size ``f`` (``--inject 1%,2%,5%``), one ``ab`` of the scenario against
   itself with a busy-wait of ``f`` x the reference median in every timed region of the second
   arm (``inject_ns``). Each is what a user's ``latscope ab`` of two scenarios is: two arms,
   the default time budget (``--time``).

The result, per column: the A/A false-difference rate (A/A ``ab`` runs called faster or
slower), the detection rate of every injected size (called slower; "faster" counted apart),
and the smallest injected size detected in at least ``DETECTED`` (90%) of the rounds: the
difference ``ab`` resolves on this machine. Beside them, for ``latscope compare`` of runs made
at different times (unpaired), the variation between runs of the scenario, from the baseline
arm of every ``ab`` run: ``run_cv`` (CV of the runs' typical medians), ``process_cv`` (the
typical CV of the worker medians within a run) and ``noise`` (``aa_range``: the range within
which 95% of the A/A ratios of two runs fall), which ``compare`` uses as its known variation.

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

from ..errors import BadInput
from ..units import fmt
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

    from ..record import Run
    from ..store import Store

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
    time_s: float = 5.0
    workers: int | None = None
    clock: str | None = None
    seed: int = 0

    @property
    def total_runs(self) -> int:
        return 1 + self.pairs * (1 + len(self.injections))

    def arm(self, inject_ns: float = 0.0) -> Any:
        from .ab import Arm

        return Arm(self.benchmark, {k: str(v) for k, v in self.params.items()}, inject_ns)


def _typical(run: Run, column: str) -> tuple[float, float | None]:
    """The baseline arm's typical median (over its worker medians) and their CV."""
    from ..stats.between import segment_medians, typical_median

    col = f"A:{column}"
    x, seg, step = run.values(col), run.column_segments(col), run.column_step_ns(col)
    return typical_median(x, seg, step), _cv(segment_medians(x, seg, step).medians)


def measure(
    plan: Plan,
    store: Store,
    on_step: Callable[[int, str, Run | None], None] | None = None,
    progress: Callable[[int], Callable[[int, int], None] | None] | None = None,
) -> dict[str, Any]:
    """Run the plan (module docs) and return the trust record (not yet written)."""
    from . import ab

    if plan.pairs < 2:
        raise BadInput(f"--pairs {plan.pairs}: give at least 2 pairs")
    store.ensure(TRUST_DIR)  # where the record goes: checked before the first run
    rng = random.Random(plan.seed)
    step = 0
    group = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")

    def one(label: str, inject_ns: float, tags: dict[str, Any]) -> Run:
        nonlocal step
        run = ab.measure(
            [plan.arm(), plan.arm(inject_ns)],
            time_s=plan.time_s,
            workers=plan.workers,
            clock=plan.clock,
            store=store,
            progress=progress(step) if progress else None,
            tags={"trust": group, **tags},
        )
        step += 1
        if on_step:
            on_step(step, label, run)
        return run

    ref = one("reference (A/A)", 0.0, {"trust_role": "reference"})
    cols = list(ref.base_columns)
    ref_median = _typical(ref, cols[0])[0]
    inject_ns = {f: max(1.0, round(f * ref_median)) for f in plan.injections}
    rounds: list[dict[str, Run]] = []
    for i in range(plan.pairs):
        jobs: list[tuple[str, float]] = [("A/A", 0.0)] + [
            (f"+{f:.0%}", inject_ns[f]) for f in plan.injections
        ]
        rng.shuffle(jobs)
        rounds.append(
            {
                label: one(
                    f"round {i + 1}: {label}", inj, {"trust_role": label, "trust_round": i + 1}
                )
                for label, inj in jobs
            }
        )

    def comparison(run: Run, column: str) -> dict[str, Any]:
        f = run.meta["run"]["ab"]
        return next(c for c in f["comparisons"] if c["column"] == column)

    columns: dict[str, Any] = {}
    every = [ref] + [r for got in rounds for r in got.values()]
    for c in cols:
        typical = [_typical(r, c) for r in every]
        meds = [m for m, _ in typical]
        wcv = [v for _, v in typical if v is not None]
        aa = [comparison(got["A/A"], c) for got in rounds]
        # a column the injected wait is not in (ping-pong's oneway: the responder answers
        # late) has no truth to find: its injected comparisons are not counted
        holds = ref.column_meta(f"A:{c}").get("holds_inject") is not False
        inj = []
        for f in plan.injections if holds else ():
            res = [comparison(got[f"+{f:.0%}"], c) for got in rounds]
            inj.append(
                {
                    "size": f,
                    "inject_ns": inject_ns[f],
                    "pairs": len(res),
                    "slower": sum(x["verdict"] == "slower" for x in res),
                    "faster": sum(x["verdict"] == "faster" for x in res),
                    "median_ratio": float(np.median([x["ratio"] for x in res])),
                }
            )
        detected = [d["size"] for d in inj if d["pairs"] and d["slower"] >= DETECTED * d["pairs"]]
        columns[c] = {
            "median_ns": float(np.median(meds)),
            "run_cv": _cv(meds),
            "process_cv": float(np.median(wcv)) if wcv else _cv(meds),
            "noise": aa_range(meds),
            "aa_pairs": len(aa),
            "aa_false": sum(x["verdict"] in ("faster", "slower") for x in aa),
            "aa_same": sum(x["verdict"] == "same" for x in aa),
            "injected": inj,
            "smallest_detected": min(detected) if detected else None,
            "holds_inject": holds,
        }
    env = (ref.meta.get("run") or {}).get("env") or {}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "method": "ab",
        "key": key_of_run(ref),
        "benchmark": ref.benchmark,
        "params": ref.meta.get("params"),
        "clock": ref.clock.get("name"),
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": (ref.env or {}).get("hostname"),
        "kernel": ((ref.env or {}).get("kernel") or {}).get("release"),
        "env_captured": bool(env),
        "pairs": plan.pairs,
        "time_s": plan.time_s,
        "n": int(ref.arms[0].get("n") or 0),
        "workers": len(ref.segments),
        "seed": plan.seed,
        "reference_median_ns": ref_median,
        "trust_group": group,
        "runs": [r.id for r in every],
        "columns": columns,
    }


def _rate(k: int, n: int) -> str:
    return f"{k}/{n}" if n else "—"


def print_record(console: Console, rec: dict[str, Any], path: Path | None = None) -> None:
    """What ``latscope ab`` resolves here, per column, and what compare will use."""
    from ..tables import Column, fit
    from ..units import pct

    cols = [
        Column("column"),
        Column("median", justify="right"),
        Column("A/A: faster\nor slower", justify="right"),
        Column("injected: called slower", wrap=True),
        Column("ab\nresolves", justify="right"),
    ]
    rows = []
    for c, d in rec["columns"].items():
        det = ", ".join(
            f"+{x['size']:.0%}: {_rate(x['slower'], x['pairs'])}"
            + (f" ({x['faster']} faster!)" if x["faster"] else "")
            for x in d["injected"]
        )
        if d.get("holds_inject") is False:
            det = "the wait is not in this column"
        rows.append(
            [
                c,
                fmt(d["median_ns"]),
                _rate(d["aa_false"], d["aa_pairs"]),
                det,
                "—" if d["smallest_detected"] is None else f"+{d['smallest_detected']:.0%}",
            ]
        )
    t, _ = fit(
        console,
        cols,
        rows,
        title=f"trust: {rec['key']} — {rec['pairs']} rounds of latscope ab, "
        f"{rec.get('time_s', '?')} s and {rec['workers']} worker processes each",
    )
    console.print(t)
    first = next(iter(rec["columns"].values()))
    console.print(
        "[dim]A/A: latscope ab of the scenario against itself; injected: against itself with a "
        "known delay in the second arm; ab resolves: the smallest injected size called slower "
        f"in at least {DETECTED:.0%} of the rounds. For 'latscope compare' of runs made at "
        f"different times (unpaired): between runs CV {pct(first['run_cv'])}, between "
        f"processes CV {pct(first['process_cv'])}, A/A range of two runs "
        f"±{pct(first['noise'])} ({next(iter(rec['columns']))}).[/dim]"
    )
    if path is not None:
        console.print(f"[dim]kept in {path}[/dim]")
