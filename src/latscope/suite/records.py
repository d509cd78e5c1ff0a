"""The suite's record: plan, seed, every step's outcome and the comparison, kept as
`STORE/suites/<suite run id>.json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .claims import Verdict
    from .comparison import Row  # scipy: not for the record of a suite stopped at once
    from .running import SuiteRun

# ------------------------------------------------------------------------------- the record


def record(sr: SuiteRun, rows: list[Row], claims: list[Verdict] | None = None) -> dict[str, Any]:
    """The suite's record (JSON-ready): plan, seed, every step's outcome, the comparison."""
    s = sr.suite
    return {
        "format": "latscope-suite-run",
        "format_version": 1,
        "suite": s.name,
        "suite_run": sr.suite_run,
        "file": str(s.path),
        "builtin": s.builtin,
        "description": s.description,
        "seed": sr.seed,
        "interleave": s.interleave,
        "started_utc": sr.started_utc,
        "finished_utc": sr.finished_utc,
        "interrupted": sr.interrupted,
        "store": str(sr.store.root),
        "scenarios": [
            {
                "name": sc.name,
                "benchmark": sc.benchmark,
                "params": sc.params,
                "n": sc.n,
                "warmup": sc.warmup,
                "clock": sc.clock,
                "repeat": sc.repeat,
                "note": sc.note,
            }
            for sc in s.scenarios
        ],
        "not_in_catalogue": [
            {"name": k.name, "benchmark": k.benchmark, "why": k.why} for k in s.skipped
        ],
        "skipped_here": sr.skipped_scenarios(),
        "steps": [
            {
                "index": r.step.index,
                "scenario": r.step.scenario.name,
                "repetition": r.step.repetition,
                "status": r.status,
                "run_id": r.run.id if r.run else None,
                "why": r.why,
            }
            for r in sr.results
        ],
        "paired_runs": [
            {
                "benchmark": p.benchmark,
                "scenarios": p.scenarios,
                "run_id": p.run.id if p.run else None,
                "why": p.why,
            }
            for p in sr.paired
        ],
        "comparison": [r.to_dict() for r in rows],
        "claims": [v.to_dict() for v in claims or []],
    }


def write_record(sr: SuiteRun, rows: list[Row], claims: list[Verdict] | None = None) -> Path:
    text = json.dumps(record(sr, rows, claims), indent=1, default=str)
    return sr.store.write_text("suites", f"{sr.suite_run}.json", text)
