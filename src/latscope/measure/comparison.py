"""The comparison of an interleaved run (`latscope ab`, or a sample file with arms imported):
for each arm after the baseline and each recorded column, the paired ratio to the baseline
with its interval (`stats.paired`), the verdict, what would settle it and the order effect,
and each arm's median with its one interval; computed once, when the run is kept, and kept in
run.json as ``ab`` (docs/ab.md, "--json")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import BadInput
from ..record import ARM_LETTERS

if TYPE_CHECKING:
    from ..record import Run
    from .arms import Arm

#: The version of the ``ab`` facts in run.json and of ``latscope ab --json`` (docs/ab.md).
AB_SCHEMA = 1
#: The threshold of a practical difference, as a fraction (1%).
DEFAULT_NOISE = 0.01
LETTERS = ARM_LETTERS


def facts(
    run: Run,
    arms: Sequence[Arm] | None = None,
    *,
    noise: float = DEFAULT_NOISE,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The comparison of an interleaved run, as stored (run.json ``ab``) and printed: for each
    arm after the baseline and each recorded column, the paired ratio to the baseline with its
    interval, the verdict, what would settle it and the order effect; each arm's median with
    its interval (the run's summary, the one interval every view prints)."""
    from ..stats.paired import block_table, paired

    info = run.meta.get("interleave") or {}
    # alternating processes: every block is its own layout, inside the rounds' variation
    worker_sd = 0.0 if info.get("mode") == "processes" else None
    header_arms = run.arms
    words = [a.word for a in arms] if arms is not None else [_word_of(a) for a in header_arms]
    idx = run.index_columns()
    worker = run.worker_index()
    comparisons: list[dict[str, Any]] = []
    for col in run.base_columns:
        try:
            table = block_table(
                run.base_values(col),
                idx["arm"],
                idx["block"],
                idx["round"],
                worker,
                step=run.column_step_ns(col),
            )
        except ValueError as e:  # a duration of 0 ticks (a clock too coarse), a damaged file
            raise BadInput(f"run {run.id}: {col}: no paired comparison: {e}") from None
        for k in range(1, len(header_arms)):
            p = paired(
                table, arm=k, baseline=0, noise=noise, level=level, seed=seed, worker_sd=worker_sd
            )
            oe = p.order_effect
            comparisons.append(
                {
                    "arm": LETTERS[k],
                    "column": col,
                    "ratio": p.estimate,
                    "low": p.low,
                    "high": p.high,
                    "verdict": p.verdict,
                    "settle": p.settle,
                    "rounds": p.rounds,
                    "workers": p.workers,
                    "per_worker": [float(x) for x in p.per_worker],
                    "method": p.method,
                    "order_effect": None
                    if oe is None
                    else {
                        "ratio": oe.estimate,
                        "low": oe.low,
                        "high": oe.high,
                        "rounds_first": oe.rounds_first,
                        "rounds_second": oe.rounds_second,
                    },
                    "order_warning": p.order_warning,
                }
            )
    summary = run.summary()
    medians = []
    for row in summary.iter_rows(named=True):
        letter, _, col = str(row["column"]).partition(":")
        medians.append(
            {
                "arm": letter,
                "column": col,
                "median_ns": row.get("p50_ns"),
                "low_ns": row.get("p50_ci_low_ns"),
                "high_ns": row.get("p50_ci_high_ns"),
                "n": row.get("n"),
            }
        )
    return {
        "schema": AB_SCHEMA,
        "noise": noise,
        "level": level,
        "baseline": "A",
        "time_s": info.get("time_s"),
        "block_ms": info.get("block_ms"),
        "seed": info.get("seed"),
        "workers": len(run.segments),
        "rounds": info.get("rounds"),
        "mode": info.get("mode") or "arms",
        "apart": info.get("why"),
        "arms": [
            {
                "arm": LETTERS[i],
                "scenario": words[i],
                "benchmark": a.get("benchmark"),
                "params": a.get("params"),
                "inject_ns": a.get("inject_ns") or 0,
                "n": a.get("n"),
            }
            for i, a in enumerate(header_arms)
        ],
        "columns": list(run.base_columns),
        "comparisons": comparisons,
        "medians": medians,
    }


def _word_of(a: Mapping[str, Any]) -> str:
    """An arm as a user writes it, from the header (the probe records it as ``word``)."""
    if isinstance(a.get("word"), str):
        return str(a["word"])
    params = a.get("params") or {}
    given = a.get("given") or []
    parts = [str(a.get("benchmark")), *(f"{k}={params.get(k)}" for k in given)]
    if a.get("inject_ns"):
        parts.append(f"inject_ns={int(a['inject_ns'])}")
    return " ".join(parts)
