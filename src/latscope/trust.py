"""How far this machine can be trusted for one benchmark: ``latscope trust``, and what
``compare`` knows about the variation between runs of a scenario.

A *scenario* is a benchmark with its (resolved) parameters and clock; its key is
``scenario_key``. ``latscope trust BENCH [-p k=v ...]`` measures, in ``--pairs`` rounds:

1. a reference run first, whose median (first column) sizes the injected delays;
2. per round, in a shuffled order: two runs of the scenario (an A/A pair) and, per injected
   size ``f`` (``--inject 10%,25%``), one run with a busy-wait of ``f`` x the reference
   median in every timed region (probe ``--inject-ns``; the A/B pair is that run against the
   round's first run).

Every pair is compared as ``latscope compare`` would (``compare_cmd.compare_runs``, the
default noise threshold). The result, per column:

- ``run_cv``: coefficient of variation of the medians of the runs without injection (runs as
  ``latscope run`` makes them: several worker processes by default) — the between-run
  variation;
- ``process_cv``: the typical (median) CV of the worker medians within those runs, the
  variation between single processes (equal to ``run_cv`` when the runs had one process
  each); ``compare`` uses it when a side of a comparison ran in a single process;
- ``noise``: ``z(0.975) * sqrt(2) * run_cv``, the range within which 95% of A/A ratios of two
  runs fall; ``compare`` raises its noise threshold to it;
- the A/A false-difference rate (pairs called faster or slower), the detection rate of every
  injected size, and the smallest injected size detected in at least 90% of the pairs.

The record is kept as ``STORE/trust/<benchmark>-<hash of the key>.json`` (written atomically).
Without a record, ``known_variation`` falls back to the history of the scenario: the runs in
the store with the same key, several worker processes and no injection (the last
``HISTORY_RUNS``, leaving out the runs being compared), whose worker-median CVs give
``process_cv`` and, with at least ``HISTORY_RUNS_FOR_NOISE`` of them, whose typical medians'
CV gives ``noise`` as above. Workers run one after another within a second or two, so they
can share a state of the host that the next run no longer finds: the spread of separate runs
is the between-run variation a comparison of two runs must clear.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console

    from .runs import Run
    from .store import Store

FORMAT = "latscope-trust"
FORMAT_VERSION = 1
TRUST_DIR = "trust"
HISTORY_RUNS = 20
#: Earlier runs of a scenario needed before their spread sets compare's noise threshold.
HISTORY_RUNS_FOR_NOISE = 3
#: An injected size counts as detected when at least this share of its pairs say "slower".
DETECTED = 0.9
#: The A/A range of two runs' ratio: z(0.975) * sqrt(2) coefficients of variation.
AA_RANGE = float(stats.norm.ppf(0.975)) * math.sqrt(2.0)


def scenario_key(benchmark: str, params: Mapping[str, Any] | None, clock: str | None) -> str:
    """The key of a scenario: benchmark, resolved parameters (sorted) and clock."""
    p = " ".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
    return f"{benchmark} {p} clock={clock or '?'}".replace("  ", " ")


def key_of_run(run: Run) -> str:
    return scenario_key(run.benchmark, run.meta.get("params"), run.clock.get("name"))


def record_path(store: Store, key: str) -> Path:
    bench = "".join(c if c.isalnum() or c in "_-" else "_" for c in key.split(" ", 1)[0])
    h = hashlib.sha256(key.encode()).hexdigest()[:16]
    return store.root / TRUST_DIR / f"{bench}-{h}.json"


def read_record(store: Store, key: str) -> dict[str, Any] | None:
    """The trust record of a scenario, or None (absent, damaged or of another scenario)."""
    p = record_path(store, key)
    try:
        rec = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT or rec.get("key") != key:
        return None
    if not isinstance(rec.get("columns"), dict):
        return None
    return rec


def write_record(store: Store, rec: dict[str, Any]) -> Path:
    from .store import write_atomic

    p = record_path(store, rec["key"])
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(p, json.dumps(rec, indent=1).encode())
    except OSError as e:
        raise BadInput(f"cannot write the trust record {p}: {e.strerror}") from None
    return p


# ------------------------------------------------------------------------------- variation


@dataclass(frozen=True)
class Variation:
    """What is known about the variation between runs of a scenario, for one column."""

    process_cv: float | None  # CV of single-process medians
    noise: float | None  # A/A range of two runs' ratio (trust record only)
    source: str  # where it comes from, for the user


def _cv(x: Sequence[float]) -> float | None:
    a = np.asarray([v for v in x if v > 0], dtype=float)
    if a.size < 2:
        return None
    return float(a.std(ddof=1) / a.mean())


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 else None


def known_variation(
    store: Store | None, run: Run, column: str, exclude: Sequence[str] = ()
) -> Variation | None:
    """The trust record's figures for the run's scenario, else its history (module docs),
    leaving out the runs in ``exclude`` (those being compared) and ``run`` itself."""
    if store is None or run.imported:
        return None
    key = key_of_run(run)
    rec = read_record(store, key)
    col = (rec or {}).get("columns", {}).get(column)
    if isinstance(col, dict) and _num(col.get("process_cv")) is not None:
        return Variation(
            _num(col.get("process_cv")),
            _num(col.get("noise")),
            f"latscope trust of {rec.get('created_utc', '?')[:10]} ({rec.get('pairs')} pairs)",
        )
    return _from_history(store, key, column, {*exclude, run.id})


def _from_history(store: Store, key: str, column: str, exclude: set[str]) -> Variation | None:
    from .analysis.between import segment_medians, typical_median
    from .runs import Run

    metas = [
        m
        for m in store.list_meta()
        if m.get("id") not in exclude
        and scenario_key(m.get("benchmark", "?"), m.get("params"), m.get("clock")) == key
    ][-HISTORY_RUNS:]
    cvs = []
    typical = []
    for m in metas:
        try:
            run = Run(store.runs_dir / m["id"])
            if (
                len(run.segments) < 2
                or run.inject_ns
                or column not in run.columns + run.derived_columns
            ):
                continue
            x, step = run.values(column), run.column_step_ns(column)
            cv = _cv(segment_medians(x, run.segments, step).medians)
            med = typical_median(x, run.segments, step)
        except Exception:  # a damaged run in the history is skipped, never fatal
            continue
        if cv is not None:
            cvs.append(cv)
            typical.append(med)
    if len(cvs) < 2:
        return None
    run_cv = _cv(typical) if len(typical) >= HISTORY_RUNS_FOR_NOISE else None
    src = f"history: {len(cvs)} earlier runs of this scenario"
    if run_cv is not None:
        src += f", whose medians vary by {100 * run_cv:.2g}% (CV)"
    return Variation(float(np.median(cvs)), AA_RANGE * run_cv if run_cv is not None else None, src)


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
    from .compare_cmd import compare_runs
    from .runs import measure as measure_run

    if plan.pairs < 2:
        raise BadInput(f"--pairs {plan.pairs}: give at least 2 pairs")
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
    cols = ref.columns + ref.derived_columns
    from .analysis.between import typical_median

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
    from .analysis.between import segment_medians, typical_median
    from .analysis.compare import verdict

    for c in cols:
        meds = [typical_median(r.values(c), r.segments, r.column_step_ns(c)) for r in plain]
        run_cv = _cv(meds)

        wcv = [
            _cv(segment_medians(r.values(c), r.segments, r.column_step_ns(c)).medians)
            for r in plain
        ]
        wcv = [v for v in wcv if v is not None]
        process_cv = float(np.median(wcv)) if wcv else run_cv
        noise = AA_RANGE * run_cv if run_cv is not None else None
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
        "host": (ref.meta.get("env") or {}).get("hostname"),
        "kernel": (ref.meta.get("env") or {}).get("release"),
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
        f"{pct(first['noise'])} for {next(iter(rec['columns']))} (1.96·√2·CV between runs), "
        "which compare now uses as its noise threshold for this scenario. Detected: share of "
        f"A/B pairs called slower; smallest detected: in at least {DETECTED:.0%} of the pairs."
        "[/dim]"
    )
    if path is not None:
        console.print(f"[dim]kept in {path}[/dim]")


def cli_trust(args: Any, params: dict[str, Any], console: Console, err_console: Console) -> int:
    """`latscope trust BENCH ...`: measure the plan with a progress bar, print, keep."""
    from contextlib import ExitStack

    from . import _probe, progress
    from .store import Store

    _probe.benchmark(args.bench)
    injections = parse_injections(args.inject)
    if args.pairs < 2:
        raise BadInput(f"--pairs {args.pairs}: give at least 2 pairs")
    st = Store(args.store)
    plan = Plan(
        args.bench, params, args.pairs, injections, args.n, args.repeat, args.clock, args.seed
    )
    console.print(
        f"[bold]trust[/bold] {args.bench} {' '.join(f'{k}={v}' for k, v in params.items())}: "
        f"{plan.total_runs} runs ({plan.pairs} rounds of an A/A pair and "
        f"{', '.join(f'+{f:.0%}' for f in injections)} injected), interleaved"
    )
    with ExitStack() as stack:
        prog = None
        if not args.quiet and err_console.is_terminal:
            prog = stack.enter_context(progress.bar(err_console))
        task = prog.add_task("trust", total=plan.total_runs) if prog else None

        def run_progress(i: int) -> Callable[[int, int], None] | None:
            if prog is None:
                return None

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=i + (done / total if total else 0.0))

            return cb

        def on_step(i: int, label: str, run: Run | None) -> None:
            if prog is not None:
                prog.update(task, completed=i, description=label)

        rec = measure(plan, st, on_step=on_step, progress=run_progress)
    path = write_record(st, rec)
    print_record(console, rec, path)
    return 0
