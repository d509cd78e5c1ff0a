"""The comparison of a suite's scenarios (see running.py for the method): one row per
scenario and column, and the table the terminal shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..notes import grouped_notes
from ..scenarios import Scenario
from ..stats.between import Between, Rep, between
from ..units import fmt_bare, fmt_ratio, pct, pick_unit, shown

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..record import Run
    from ..stats.compare import Comparison
    from ..tables import Grouped
from .running import SuiteRun

# ------------------------------------------------------------------------------- comparing


@dataclass
class Row:
    scenario: str
    benchmark: str
    column: str
    between: Between
    baseline: str | None = None  # the scenario compared against (None: this is a baseline)
    comparison: Comparison | None = None  # unpaired: the repetitions, made apart in time
    note: str | None = None  # why no comparison
    paired: dict[str, Any] | None = None  # the paired run's comparison (paired.py), if any

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
            "paired": None
            if self.paired is None
            else {
                k: self.paired.get(k)
                for k in (
                    "run_id",
                    "ratio",
                    "low",
                    "high",
                    "verdict",
                    "settle",
                    "rounds",
                    "workers",
                    "method",
                    "order_effect",
                    "order_warning",
                )
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
    from ..measure.variation import known_variation
    from ..stats.compare import DEFAULT_NOISE, compare

    rows: list[Row] = []
    paired: dict[tuple[str, str], dict[str, Any]] = {}
    for pr in sr.paired:
        paired.update(pr.comparisons())
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
                p = paired.get((sc.name, col))
                if p is not None and p["baseline"] == base.scenario:
                    row.paired = p
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


@dataclass(frozen=True)
class RowText:
    """A comparison row's figures as text: the terminal table and the report show the same."""

    unit: tuple[str, float]
    median: str  # median of the repetition medians, with its unit
    within: str  # typical within-run half width, ±%
    medians: str  # the repetition medians
    cv: str  # CV of the repetition medians († when they disagree)
    interval: str  # the interval over repetitions
    ratio: str  # ratio to the baseline [CI], "baseline", or "—"
    verdict: str  # the comparison's verdict, or why there is none
    tone: str  # the verdict, when there is one (faster, slower, same, inconclusive)


#: The mark of a verdict from the repetitions alone, in a suite whose other rows are paired.
UNPAIRED_MARK = " ‡"


def row_text(r: Row, baselines: set[str | None], paired_any: bool = False) -> RowText:
    """The row's figures as text; its ratio and verdict from its paired run when it has one,
    else from the repetitions (marked `UNPAIRED_MARK` when ``paired_any``: other rows are
    paired)."""
    b, c = r.between, r.comparison
    unit = pick_unit([b.median_of_medians])
    tone = ""
    if r.baseline is None:
        ratio, verdict = ("baseline" if r.scenario in baselines else ""), ""
    elif r.paired is not None:
        p = r.paired
        ratio = f"{fmt_ratio(p['ratio'])} [{fmt_ratio(p['low'])}–{fmt_ratio(p['high'])}]"
        verdict = tone = str(p["verdict"])
    elif c is None:
        ratio, verdict = "—", r.note or ""
    else:
        mr = c.median_ratio
        ratio = f"{fmt_ratio(mr.estimate)} [{fmt_ratio(mr.low)}–{fmt_ratio(mr.high)}]"
        verdict = tone = c.verdict
        if paired_any:
            verdict += UNPAIRED_MARK
    return RowText(
        unit=unit,
        median=f"{fmt_bare(b.median_of_medians, unit)} {unit[0]}",
        within=_pct(b.within_rel),
        medians=" ".join(fmt_bare(x.p50, unit) for x in b.reps) + f" {unit[0]}",
        cv="—" if b.cv is None else pct(b.cv) + (" †" if b.note else ""),
        interval=f"{fmt_bare(b.interval[0], unit, 3)}–{fmt_bare(b.interval[1], unit, 3)} {unit[0]}"
        if b.interval
        else "—",
        ratio=ratio,
        verdict=verdict,
        tone=tone,
    )


def comparison_table(
    console: Console, rows: list[Row], title: str | None = None, wide: bool = False
) -> tuple[Table | Grouped, list[str]]:
    """The suite's comparison as a rich table that fits ``console`` (columns explained by
    `print_comparison`), and the headings it left out for width (`tables.fit`): where the
    scenarios' names do not fit whole in a column, each is a line above its rows."""
    from ..tables import Column, Long, fit

    reps = any(r.between.r > 1 for r in rows)  # between-run columns only when there are reps
    baselines = {r.baseline for r in rows if r.baseline}
    paired_any = any(r.paired is not None for r in rows)
    cols = [
        Column("scenario", group=True),
        Column("column"),
        Column("R", justify="right", drop=2),
        Column("median of\nmedians" if reps else "median", justify="right", style="bold"),
        Column("within-\nrun CI", justify="right", drop=4),
    ]
    if reps:
        cols += [
            Column("between\nruns: CV", justify="right", drop=3),
            Column("95% interval\nover reps", justify="right"),
        ]
    if baselines:
        cols += [Column("ratio to baseline\n[95% CI]", justify="right"), Column("verdict")]
    out: list[list[str]] = []
    last = None
    for r in rows:
        x = row_text(r, baselines, paired_any)
        style = {"faster": "green", "slower": "red"}.get(x.tone)
        cells = [shown(r.scenario) if r.scenario != last else "", shown(r.column)]
        cells += [str(r.between.r), x.median, x.within]
        if reps:
            cells += [x.cv, x.interval]
        if baselines:
            verdict = shown(x.verdict)
            cells += [x.ratio, f"[{style}]{verdict}[/{style}]" if style else verdict]
        out.append(cells)
        last = r.scenario
    t, left = fit(console, cols, out, wide=wide, title=title)
    assert not isinstance(t, Long)  # a group column is never laid out as a Long
    return t, left


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


def paired_runs(rows: list[Row]) -> list[str]:
    """The ids of the paired runs the rows' ratios come from, in order."""
    out: list[str] = []
    for r in rows:
        if r.paired is not None and r.paired["run_id"] not in out:
            out.append(str(r.paired["run_id"]))
    return out


def verdict_legend(rows: list[Row]) -> str:
    """What the ratio and the verdict of a suite's rows are (terminal and report alike)."""
    unpaired = (
        "of the medians of the repetitions, 95% interval from the repetitions (Welch t on the "
        "log repetition medians, never narrower than the block bootstrap of the pooled "
        "samples); verdict: slower/faster when the interval excludes 1 and the change exceeds "
        "the noise threshold (±2%, or the A/A range 'latscope trust' measured), same when the "
        "interval lies within it, else inconclusive."
    )
    from ..measure.comparison import DEFAULT_NOISE

    ids = paired_runs(rows)
    if not ids:
        return "ratio: " + unpaired
    noise = f"{100 * DEFAULT_NOISE:g}%"
    text = (
        "ratio and verdict: paired. Each benchmark's scenarios were measured once more as "
        "arms of one interleaved run (as 'latscope ab': blocks of a few ms alternated in "
        "shuffled rounds), so that both sides saw the same state of the machine: the ratio is "
        "that run's paired estimate (per-round ratios of block medians), its 95% interval a "
        f"bootstrap over rounds; slower/faster when it excludes 1 and the change exceeds {noise}, "
        f"same when it lies within ±{noise}, else inconclusive. Paired runs: "
        + ", ".join(ids)
        + " (latscope show RUN)."
    )
    if any(r.baseline and r.paired is None for r in rows):
        text += f" {UNPAIRED_MARK.strip()} no paired run: ratio " + unpaired
    return text


def print_comparison(
    console: Console,
    sr: SuiteRun,
    rows: list[Row],
    *,
    host: str | None = None,
    legend: bool = True,
) -> None:
    """The suite's comparison table and what its columns mean; ``host``: the table is that
    host's (a fleet's); ``legend``: False leaves the meaning out (said under another host's)."""
    on = f" on {shown(host)}" if host is not None else ""
    table, left_out = comparison_table(
        console,
        rows,
        title=f"suite {shown(sr.suite.name)}{on} — run {shown(sr.suite_run)} (seed {sr.seed})",
    )
    console.print(table)
    if left_out:
        console.print(
            f"[dim]left out at this width: {', '.join(left_out)} (a wider terminal, or "
            "the suite's HTML report, shows them)[/dim]"
        )
    for r in rows:
        if r.paired is not None and r.paired.get("order_warning"):
            console.print(
                f"[yellow]{shown(r.scenario)} {shown(r.column)}: "
                f"{shown(r.paired['order_warning'])}[/yellow]"
            )
    if not legend:
        return
    base = baselines_line(rows)
    if base:
        console.print(
            f"baselines (ratio = scenario / baseline, same column): {shown(base)}",
            highlight=False,
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
        parts.append(verdict_legend(rows))
    console.print(f"[dim]{' '.join(parts)}[/dim]")
    for names, n in grouped_notes(sr.note_items()):
        console.print(f"[dim]note ({n.key}) — {shown(names)}: {n.text}[/dim]", highlight=False)
    noted = [f"{r.scenario}:{r.column}" for r in rows if r.between.note]
    if noted:
        console.print(
            f"[yellow]†[/yellow] in {len(noted)} of {len(rows)} rows the repetition medians "
            "differ by more than their within-run intervals allow: run-to-run variation "
            "dominates there, so one run's interval understates the uncertainty; quote the "
            "interval over repetitions, and repeat more rather than measuring longer."
        )
