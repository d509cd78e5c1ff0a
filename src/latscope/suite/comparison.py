"""Running a suite: every (scenario x repetition) run in the planned, interleaved order, then
the comparison of the scenarios (docs/suites.md).

Each run is an ordinary run in the store, tagged with the suite's name, the suite run id, the
scenario, the repetition and its position in the order.  A scenario the probe refuses here
(exit 3: not permitted or unsupported, e.g. cache=drop without root) is reported and its
remaining repetitions skipped; a failed measurement (exit 1) is reported and the suite goes
on.  Ctrl-C (or SIGTERM) stops after the current probe has cleaned up; the runs that finished
stay in the store.  The suite's record (plan, seed, outcome of every step, comparison) is kept
as `STORE/suites/<suite run id>.json`.

The comparison, per scenario and column:

- the median of the repetition medians, the typical within-run interval, the spread between
  repetitions and the interval over repetitions (`repeat.between`);
- against the suite's first scenario with the same benchmark (the baseline; same column):
  `analysis.compare` with the repetitions as the upper level: the pooled samples of all
  repetitions of each side with one segment per repetition, so the interval of the ratio of
  medians is the hull of Welch's t interval on the log repetition medians and the block
  bootstrap of the pooled samples (with one repetition per side, the segments are that run's
  worker processes instead). Never from the pooled samples alone: the samples of a run, however
  many, do not show how much a second run differs. The noise threshold is raised to the A/A
  range that `latscope trust` measured for the scenario, where there is a record.
"""

from __future__ import annotations

import json
import secrets
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import Interrupted, LatscopeError, Unsupported
from .notes import grouped_notes
from .repeat import Between, Rep, between, pct
from .scenarios import Scenario, Step, Suite
from .units import fmt_bare, pick_unit

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from .analysis.compare import Comparison
    from .runs import Run
    from .store import Store


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_suite_run_id(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{safe}-s{secrets.token_hex(2)}"


@dataclass
class StepResult:
    step: Step
    status: str  # "ok" | "skipped" | "failed"
    run: Run | None = None
    why: str | None = None


@dataclass
class SuiteRun:
    suite: Suite
    suite_run: str
    seed: int
    steps: list[Step]
    store: Store
    results: list[StepResult] = field(default_factory=list)
    started_utc: str = field(default_factory=_now)
    finished_utc: str | None = None
    interrupted: bool = False

    def runs_of(self, scenario: str) -> list[Run]:
        return [
            r.run for r in self.results if r.run is not None and r.step.scenario.name == scenario
        ]

    @property
    def failed(self) -> list[StepResult]:
        return [r for r in self.results if r.status == "failed"]

    def skipped_scenarios(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for r in self.results:
            if r.status == "skipped" and r.why:
                out.setdefault(r.step.scenario.name, r.why)
        return out


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the same path as Ctrl-C: the probe cleans up, kept runs stay."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


# ------------------------------------------------------------------------------- running


def execute(
    suite: Suite,
    steps: list[Step],
    seed: int,
    store: Store,
    console: Console,
    err_console: Console,
    quiet: bool = False,
) -> SuiteRun:
    """Run the steps in order (see the module docs for what is skipped and what stops)."""
    from contextlib import ExitStack

    from . import progress
    from .runs import measure

    sr = SuiteRun(suite, new_suite_run_id(suite.name), seed, steps, store)
    store.ensure()
    total = len(steps)
    refused: dict[str, str] = {}
    with ExitStack() as stack:
        stack.enter_context(sigterm_as_interrupt())
        prog = None
        if not quiet and err_console.is_terminal:
            prog = stack.enter_context(progress.bar(err_console, note=True))
        out = prog.console if prog else console
        overall = prog.add_task("[bold]all runs", total=total, note="") if prog else None
        tasks = {}
        if prog:
            width = max(len(s.name) for s in suite.scenarios)
            for s in suite.scenarios:
                tasks[s.name] = prog.add_task(s.name.ljust(width), total=s.repeat, note="")
        done_runs = 0
        done_reps: dict[str, int] = {}
        for step in steps:
            sc = step.scenario
            if sc.name in refused:
                sr.results.append(StepResult(step, "skipped", why=refused[sc.name]))
                done_runs += 1
                if prog:
                    prog.update(overall, completed=done_runs)
                continue

            def cb(
                done: int, tot: int, sc: Scenario = sc, step: Step = step, base: int = done_runs
            ) -> None:
                if prog is None:
                    return
                frac = done / tot if tot else 0.0
                prog.update(
                    tasks[sc.name],
                    completed=done_reps.get(sc.name, 0) + frac,
                    note=f"rep {step.repetition}/{sc.repeat}",
                )
                prog.update(overall, completed=base + frac, note=f"{step.index + 1}/{total}")

            tags = {
                "suite": suite.name,
                "suite_run": sr.suite_run,
                "suite_file": str(suite.path),
                "suite_seed": seed,
                "scenario": sc.name,
                "repetition": step.repetition,
                "repeat": sc.repeat,
                "order": step.index,
            }
            head = f"[{step.index + 1}/{total}] {sc.name} rep {step.repetition}/{sc.repeat}"
            try:
                run = measure(
                    sc.benchmark,
                    sc.params,
                    n=sc.n,
                    warmup=sc.warmup,
                    clock=sc.clock,
                    store=store,
                    progress=cb if prog else None,
                    tags=tags,
                )
            except (Interrupted, KeyboardInterrupt):
                sr.interrupted = True
                break
            except Unsupported as e:
                refused[sc.name] = e.message
                sr.results.append(StepResult(step, "skipped", why=e.message))
                out.print(f"{head}: [yellow]skipped[/yellow] (not possible here): {e.message}")
            except LatscopeError as e:
                sr.results.append(StepResult(step, "failed", why=e.message))
                out.print(f"{head}: [red]failed[/red]: {e.message}")
            else:
                sr.results.append(StepResult(step, "ok", run=run))
                s = run.summary().row(0, named=True)
                unit = pick_unit([s["p50_ns"]])
                out.print(
                    f"{head}: run {run.id}  {s['column']} p50 {fmt_bare(s['p50_ns'], unit)} "
                    f"{unit[0]}"
                )
            done_runs += 1
            done_reps[sc.name] = done_reps.get(sc.name, 0) + 1
            if prog:
                prog.update(tasks[sc.name], completed=done_reps[sc.name])
                prog.update(overall, completed=done_runs)
    sr.finished_utc = _now()
    return sr


# ------------------------------------------------------------------------------- comparing


@dataclass
class Row:
    scenario: str
    benchmark: str
    column: str
    between: Between
    baseline: str | None = None  # the scenario compared against (None: this is a baseline)
    comparison: Comparison | None = None
    note: str | None = None  # why no comparison

    def to_dict(self) -> dict[str, Any]:
        b = self.between
        c = self.comparison
        return {
            "scenario": self.scenario,
            "benchmark": self.benchmark,
            "column": self.column,
            "repetitions": b.r,
            "run_ids": [x.run_id for x in b.reps],
            "repetition_medians_ns": [x.p50 for x in b.reps],
            "median_of_medians_ns": b.median_of_medians,
            "within_run_ci_rel": b.within_rel,
            "between_runs_range_ns": [b.lowest, b.highest],
            "between_runs_cv": b.cv,
            "interval_over_repetitions_ns": list(b.interval) if b.interval else None,
            "interval_method": b.method,
            "baseline": self.baseline,
            "comparison": None
            if c is None
            else {
                "median_ratio": c.median_ratio.estimate,
                "median_ratio_ci": [c.median_ratio.low, c.median_ratio.high],
                "verdict": c.verdict,
                "explanation": c.explanation,
                "method": c.median_ratio.method,
                "noise_threshold": c.noise,
            },
            "note": self.note,
        }


def _columns(sc: Scenario, run: Run) -> list[str]:
    """The scenario's `columns`, else every timed column (derived ones such as rtt/2 only
    when asked for)."""
    if sc.columns:
        return list(sc.columns)
    return list(run.columns)


def _levels(runs: list[Run], col: str) -> tuple[np.ndarray, list[int], float | None]:
    """A scenario's pooled samples of one column, its segments (one per repetition, or the
    worker processes of its only repetition) and the column's clock step."""
    vals = [r.values(col) for r in runs]
    step = runs[0].column_step_ns(col)
    if len(runs) == 1:
        return vals[0], runs[0].segments, step
    return np.concatenate(vals), [v.size for v in vals], step


def compare_rows(sr: SuiteRun) -> list[Row]:
    """One row per (scenario, column) with finished runs, in the suite's scenario order."""
    from .analysis.compare import DEFAULT_NOISE, compare
    from .trust import known_variation

    rows: list[Row] = []
    pooled: dict[tuple[str, str], tuple[np.ndarray, list[int], float | None]] = {}
    first_run: dict[str, Run] = {}
    first_of: dict[tuple[str, str], Row] = {}
    for sc in sr.suite.scenarios:
        runs = sr.runs_of(sc.name)
        if not runs:
            continue
        for col in _columns(sc, runs[0]):
            reps = []
            for run in runs:
                s = run.summary()
                hit = s.filter(s["column"] == col)
                if hit.height:
                    d = hit.row(0, named=True)
                    reps.append(Rep(run.id, d["p50_ns"], d["p50_ci_low_ns"], d["p50_ci_high_ns"]))
            if not reps:
                continue
            row = Row(sc.name, sc.benchmark, col, between(col, reps))
            key = (sc.benchmark, col)
            pooled[(sc.name, col)] = _levels(runs, col)
            first_run[sc.name] = runs[0]
            base = first_of.get(key)
            if base is None:
                first_of[key] = row
            else:
                row.baseline = base.scenario
                own = [x.run.id for x in sr.results if x.run is not None]
                known = [
                    known_variation(sr.store, first_run[name], col, own)
                    for name in (base.scenario, sc.name)
                ]
                cvs = [k.process_cv for k in known if k is not None and k.process_cv is not None]
                noises = [k.noise for k in known if k is not None and k.noise is not None]
                (xa, sa, ta), (xb, sb, tb) = pooled[(base.scenario, col)], pooled[(sc.name, col)]
                try:
                    row.comparison = compare(
                        xa,
                        xb,
                        segments_a=sa,
                        segments_b=sb,
                        step_a=ta,
                        step_b=tb,
                        between_cv=max(cvs) if cvs else None,
                        noise=DEFAULT_NOISE,
                        run_noise=min(max(noises), 0.99) if noises else 0.0,
                        seed=sr.seed,
                    )
                except ValueError as e:
                    row.note = str(e)
            rows.append(row)
    return rows


def _pct(x: float | None) -> str:
    return pct(x, "±")


def comparison_table(rows: list[Row], title: str | None = None) -> Table:
    """The suite's comparison as a rich table (columns explained by `print_comparison`)."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    reps = any(r.between.r > 1 for r in rows)  # between-run columns only when there are reps
    baselines = {r.baseline for r in rows if r.baseline}
    t.add_column("scenario", no_wrap=True)
    t.add_column("column", no_wrap=True)
    t.add_column("R", justify="right", no_wrap=True, min_width=1)
    t.add_column(
        "median of\nmedians" if reps else "median", justify="right", style="bold", no_wrap=True
    )
    t.add_column("within-\nrun CI", justify="right", no_wrap=True)
    if reps:
        t.add_column("between\nruns: CV", justify="right", no_wrap=True)
        t.add_column("95% interval\nover reps", justify="right", no_wrap=True)
    if baselines:
        t.add_column("ratio to baseline\n[95% CI]", justify="right", no_wrap=True)
        t.add_column("verdict", no_wrap=True)
    last = None
    for r in rows:
        b = r.between
        unit = pick_unit([b.median_of_medians])
        cv = "—" if b.cv is None else pct(b.cv) + (" †" if b.note else "")
        iv = (
            f"{fmt_bare(b.interval[0], unit, 3)}–{fmt_bare(b.interval[1], unit, 3)} {unit[0]}"
            if b.interval
            else "—"
        )
        c = r.comparison
        if r.baseline is None:
            ratio, verdict = ("baseline" if r.scenario in baselines else ""), ""
        elif c is None:
            ratio, verdict = "—", r.note or ""
        else:
            mr = c.median_ratio
            ratio = f"{mr.estimate:.3g} [{mr.low:.3g}–{mr.high:.3g}]"
            verdict = c.verdict
            verdict = {
                "faster": f"[green]{verdict}[/green]",
                "slower": f"[red]{verdict}[/red]",
            }.get(c.verdict, verdict)
        cells = [
            r.scenario if r.scenario != last else "",
            r.column,
            str(b.r),
            f"{fmt_bare(b.median_of_medians, unit)} {unit[0]}",
            _pct(b.within_rel),
        ]
        if reps:
            cells += [cv, iv]
        if baselines:
            cells += [ratio, verdict]
        t.add_row(*cells)
        last = r.scenario
    return t


def baselines_line(rows: list[Row]) -> str:
    """Which scenario each benchmark (and column) is compared against."""
    by_bench: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        if r.baseline:
            by_bench.setdefault(r.benchmark, {}).setdefault(r.baseline, [])
            if r.column not in by_bench[r.benchmark][r.baseline]:
                by_bench[r.benchmark][r.baseline].append(r.column)
    parts = []
    for bench, bases in by_bench.items():
        if len(bases) == 1:
            parts.append(f"{bench}: {next(iter(bases))}")
        else:
            parts.append(
                f"{bench}: " + ", ".join(f"{b} ({', '.join(cols)})" for b, cols in bases.items())
            )
    return "; ".join(parts)


def print_comparison(console: Console, sr: SuiteRun, rows: list[Row]) -> None:
    console.print(
        comparison_table(rows, title=f"suite {sr.suite.name} — run {sr.suite_run} (seed {sr.seed})")
    )
    base = baselines_line(rows)
    if base:
        console.print(
            f"baselines (ratio = scenario / baseline, same column): {base}", highlight=False
        )
    reps = any(r.between.r > 1 for r in rows)
    parts = []
    if reps:
        parts.append(
            "median of medians: over the repetitions. within-run CI: typical half width of a "
            "repetition's 95% interval for its median. between: CV of the repetition medians. "
            "interval over reps: Student t on the log repetition medians (R >= 3), covers "
            "within- and between-run variation."
        )
    else:
        parts.append(
            "one repetition each: within-run CI is the half width of the run's 95% interval "
            "for its median (over its worker processes); repeat (--repeat R) to see the "
            "run-to-run variation."
        )
    if base:
        parts.append(
            "ratio: of the medians, 95% interval from the repetitions (Welch t on the log "
            "repetition medians, never narrower than the block bootstrap of the pooled samples); "
            "verdict: slower/faster when the interval excludes 1 and the change exceeds the "
            "noise threshold (±2%, or the A/A range 'latscope trust' measured), same when the "
            "interval lies within it, else inconclusive."
        )
    console.print(f"[dim]{' '.join(parts)}[/dim]")
    for names, n in grouped_notes((sc.name, sc.benchmark, sc.params) for sc in sr.suite.scenarios):
        console.print(f"[dim]note ({n.key}) — {names}: {n.text}[/dim]", highlight=False)
    noted = [f"{r.scenario}:{r.column}" for r in rows if r.between.note]
    if noted:
        console.print(
            f"[yellow]†[/yellow] in {len(noted)} of {len(rows)} rows the repetition medians "
            "differ by more than their within-run intervals allow: run-to-run variation "
            "dominates there, so one run's interval understates the uncertainty; quote the "
            "interval over repetitions, and repeat more rather than measuring longer."
        )


# ------------------------------------------------------------------------------- the record


def record(sr: SuiteRun, rows: list[Row]) -> dict[str, Any]:
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
        "comparison": [r.to_dict() for r in rows],
    }


def write_record(sr: SuiteRun, rows: list[Row]) -> Path:
    d = sr.store.root / "suites"
    d.mkdir(parents=True, exist_ok=True)
    from .store import write_atomic

    target = d / f"{sr.suite_run}.json"
    write_atomic(target, json.dumps(record(sr, rows), indent=1, default=str).encode())
    return target


# ------------------------------------------------------------------------------- the report


def representative(sr: SuiteRun, scenario: str) -> Run | None:
    """The repetition whose first-column median is the median of the repetition medians (the
    lower middle one for an even count)."""
    runs = sr.runs_of(scenario)
    if not runs:
        return None
    meds = [float(r.summary()["p50_ns"][0]) for r in runs]
    order = sorted(range(len(runs)), key=lambda i: meds[i])
    return runs[order[(len(runs) - 1) // 2]]


def document(sr: SuiteRun, rows: list[Row], *, details: bool = True, figures: bool = True) -> Any:
    """The suite's report as a document (document.py), rendered by report.write_html and
    report.write_markdown: the plan and its outcome, the comparison table, per benchmark a
    figure of its scenarios side by side, the order the runs were made in, and per scenario
    the full analysis (report.py) of its representative repetition."""
    from . import __version__, plots, report
    from .document import Alert, Cell, Document, Heading, Image, KeyValues, Table, Text

    s = sr.suite
    ok = [r for r in sr.results if r.status == "ok"]
    doc = Document(
        f"latscope suite {s.name} — {sr.suite_run}",
        f"generated {_now().replace('T', ' ').rstrip('Z')} UTC by latscope {__version__}",
    )
    doc.add(
        KeyValues(
            "Suite",
            [
                ("file", f"{s.path}" + (" (built in)" if s.builtin else "")),
                ("suite run", sr.suite_run),
                ("order", f"{s.interleave}, seed {sr.seed} (latscope suite ... --seed {sr.seed})"),
                ("started / finished (UTC)", f"{sr.started_utc} / {sr.finished_utc}"),
                ("runs", f"{len(ok)} of {len(sr.steps)} kept in {sr.store.root}"),
            ],
        )
    )
    if s.description:
        doc.add(Text(s.description.strip()))
    doc.add(
        Text(
            "Every scenario ran in each round once, in a fresh random order (interleave = "
            "rounds), so drift over the session falls on all scenarios alike instead of "
            "passing for a difference between them."
            if s.interleave == "rounds"
            else "All (scenario × repetition) runs ran in one random order (interleave = shuffle).",
            "note",
        )
    )
    for k in s.skipped:
        doc.add(Alert(f"{k.name} not run: {k.why}", code="not-in-catalogue", severity="info"))
    for name, why in sr.skipped_scenarios().items():
        doc.add(Alert(f"{name} skipped here: {why}", code="not-permitted"))
    for r in sr.failed:
        doc.add(
            Alert(
                f"{r.step.scenario.name} repetition {r.step.repetition} failed: {r.why}",
                code="failed",
            )
        )
    if sr.interrupted:
        doc.add(Alert("The suite was interrupted; the figures cover the runs that finished."))
    doc.add(
        Table(
            "Scenarios",
            ["scenario", "benchmark", "parameters", "n", "warm-up", "R", "note"],
            [
                [
                    sc.name,
                    sc.benchmark,
                    " ".join(f"{k}={v}" for k, v in sc.params.items()),
                    str(sc.n or "default"),
                    str(sc.warmup if sc.warmup is not None else "default"),
                    str(sc.repeat),
                    sc.note or "",
                ]
                for sc in s.scenarios
            ],
            align="lllrrrl",
            small={6},
        )
    )
    for names, n in grouped_notes((sc.name, sc.benchmark, sc.params) for sc in s.scenarios):
        doc.add(Alert(f"{names}: {n.text}", code=n.key, severity="info"))

    doc.add(Heading("Comparison", 2, "comparison"))
    baselines = {r.baseline for r in rows if r.baseline}
    trows: list[list[Any]] = []
    for r in rows:
        b = r.between
        unit = pick_unit([b.median_of_medians])
        c = r.comparison
        if r.baseline is None:
            ratio: Any = "baseline" if r.scenario in baselines else ""
            verdict: Any = ""
        elif c is None:
            ratio, verdict = "—", r.note or ""
        else:
            mr = c.median_ratio
            ratio = f"{mr.estimate:.3g} [{mr.low:.3g}–{mr.high:.3g}]"
            tone = {"faster": "good", "slower": "bad", "inconclusive": "warn"}.get(c.verdict, "")
            verdict = Cell(c.verdict, tone)
        trows.append(
            [
                r.scenario,
                r.column,
                str(b.r),
                Cell(f"{fmt_bare(b.median_of_medians, unit)} {unit[0]}", "bold"),
                _pct(b.within_rel),
                " ".join(fmt_bare(x.p50, unit) for x in b.reps) + f" {unit[0]}",
                "—" if b.cv is None else pct(b.cv) + (" †" if b.note else ""),
                f"{fmt_bare(b.interval[0], unit, 3)}–{fmt_bare(b.interval[1], unit, 3)} {unit[0]}"
                if b.interval
                else "—",
                r.baseline or "",
                ratio,
                verdict,
            ]
        )
    doc.add(
        Table(
            "Scenarios compared (per column)",
            [
                "scenario",
                "column",
                "R",
                "median of medians",
                "within-run CI",
                "repetition medians",
                "between runs: CV",
                "95% interval over reps",
                "baseline",
                "ratio to baseline [95% CI]",
                "verdict",
            ],
            trows,
            align="llrrrrrrlrl",
            note="Median of medians: over the repetitions. Within-run CI: typical half width of "
            "a repetition's 95% interval for its median. Between runs: coefficient of variation "
            "of the repetition medians (†: they differ by more than their within-run intervals "
            "allow). Interval over reps: Student t on the logarithms of the repetition medians "
            "(R ≥ 3); it covers within- and between-run variation. Ratio: of the medians of each "
            "scenario against its baseline (the suite's first scenario with the same "
            "benchmark), its interval from the repetitions: Welch t on the log repetition "
            "medians, never narrower than the block bootstrap of the pooled samples. Verdict: "
            "slower/faster when the interval excludes 1 and the change exceeds the noise "
            "threshold (±2%, or the A/A range 'latscope trust' measured), same when the "
            "interval lies within it, else inconclusive.",
        )
    )
    if figures:
        by_bench: dict[str, list[Row]] = {}
        for r in rows:
            by_bench.setdefault(r.benchmark, []).append(r)
        for bench, brs in by_bench.items():
            series = []
            for r in brs:
                runs = sr.runs_of(r.scenario)
                vals = np.concatenate([x.values(r.column) for x in runs])
                series.append(plots.Series(r.scenario, r.column, vals, r.between.interval))

            def fig(series: list[Any] = series, bench: str = bench) -> Any:
                return plots.scenarios(series, title=bench)

            doc.add(
                Image(
                    f"suite-{bench}",
                    f"{bench}: the scenarios side by side, per column — median of all "
                    "repetitions' samples with the 95% interval over repetitions (left), box "
                    "plots on a log axis (right)",
                    fig,
                )
            )

    doc.add(Heading("Order of the runs", 2, "order"))
    order_rows = []
    for r in sr.results:
        first = ""
        if r.run is not None:
            d = r.run.summary().row(0, named=True)
            first = (
                f"{d['column']} {fmt_bare(d['p50_ns'], pick_unit([d['p50_ns']]))} "
                + (pick_unit([d["p50_ns"]])[0])
            )
        tone = {"ok": "", "skipped": "warn", "failed": "bad"}[r.status]
        order_rows.append(
            [
                str(r.step.index + 1),
                r.step.scenario.name,
                f"{r.step.repetition}/{r.step.scenario.repeat}",
                r.run.id if r.run else "",
                Cell(r.status if r.status == "ok" else f"{r.status}: {r.why}", tone),
                first,
            ]
        )
    doc.add(
        Table(
            "Runs in the order they were made",
            ["#", "scenario", "repetition", "run id", "status", "p50 (first column)"],
            order_rows,
            align="rllllr",
        )
    )
    if details:
        doc.add(Heading("Scenarios in detail", 2, "details"))
        doc.add(
            Text(
                "For each scenario, the full analysis of its representative repetition: the one "
                "whose median (of the first column) is the median of the repetition medians.",
                "note",
            )
        )
        for i, sc in enumerate(s.scenarios):
            run = representative(sr, sc.name)
            if run is None:
                continue
            others = [x.id for x in sr.runs_of(sc.name) if x.id != run.id]
            ra = report.analyse(run, sc.name, seed=sr.seed)
            blocks = report.run_blocks(ra, figures=False, anchor=f"scenario-{i + 1}")
            if others:
                blocks.insert(2, Text(f"other repetitions: {', '.join(others)}", "dim"))
            doc.extend(blocks)
    return doc
