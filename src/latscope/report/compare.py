"""Comparing runs: ``latscope compare A B [...]`` and the comparison section of the report.

The first run is the baseline. For every column the runs have in common (``rtt/2`` included),
each other run is compared with the baseline by ``stats.compare``: the ratio of medians with
a two-level interval (between worker processes and within them; see its docstring), the ratio
of p99s, the Mann–Whitney p-value, and a verdict against the noise threshold (faster, slower,
same, inconclusive).

What the store knows about the scenario (``variation.known_variation``: a ``latscope trust``
record, else the history of the scenario) enters twice: the noise threshold is raised to the
A/A range of run medians that ``trust`` measured, and a run measured in a single process is
compared using the known variation between single processes. An inconclusive verdict comes with
the command that would settle it (``settle_command``). Runs without a column in
common are refused. Runs measured in different environments are compared, with a warning that
says what differs (``env.compatible`` when both runs carry a captured environment, else the
kernel, CPU and clock source the probe recorded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import BadInput
from ..units import fmt, fmt_ratio, pick_unit, shown
from .document import Alert, Block, Cell, Table, Text
from .text import unique_labels

if TYPE_CHECKING:
    from rich.console import Console

    from ..record import Run
    from ..stats import Comparison
    from ..store import Store

VERDICT_TONE = {"faster": "good", "slower": "bad", "same": "", "inconclusive": "warn"}


@dataclass
class Row:
    column: str
    baseline: int  # index into the runs
    other: int
    result: Comparison | None
    error: str | None = None
    settle: str | None = None  # inconclusive: the command that would settle it
    source: str | None = None  # where the known between-run variation came from


def common_columns(runs: Sequence[Run], labels: Sequence[str] | None = None) -> list[str]:
    """The columns of the baseline (runs[0]) that every other run has too; refuses with one
    line when a run shares none with the baseline."""
    labels = list(labels) if labels is not None else unique_labels(list(runs))
    base = runs[0].all_columns
    common = list(base)
    for r, lab in zip(runs[1:], labels[1:], strict=True):
        cols = r.all_columns
        if not set(base) & set(cols):
            raise BadInput(
                f"run {lab} ({r.id}) has no column in common with the baseline {labels[0]} "
                f"(baseline: {', '.join(base)}; {lab}: {', '.join(cols)})"
            )
        common = [c for c in common if c in cols]
    if not common:
        raise BadInput(
            "no column is common to all runs ("
            + "; ".join(
                f"{lab}: {', '.join(r.all_columns)}" for r, lab in zip(runs, labels, strict=True)
            )
            + "); compare fewer runs at a time"
        )
    return common


def env_differences(a: Run, b: Run) -> list[str]:
    """Why the results of runs a and b may not be comparable; empty when nothing is known to
    differ."""
    from .. import env as envmod

    if b.imported or a.imported:
        both = a.imported and b.imported
        return [
            f"{'both runs were' if both else 'one run was'} imported from a CSV file: the "
            "environment and the clock are unknown, so differences may come from the machine, "
            "not the code."
        ]
    out = list(envmod.compatible(a.env or {}, b.env or {}))
    ca, cb = a.clock, b.clock
    if ca.get("name") != cb.get("name"):
        out.append(
            f"Different clocks: {ca.get('name')} (overhead {fmt(ca.get('overhead_ns'))}) vs "
            f"{cb.get('name')} (overhead {fmt(cb.get('overhead_ns'))})."
        )
    return out


def compare_runs(
    runs: Sequence[Run],
    *,
    noise: float = 0.02,
    seed: int = 0,
    columns: Sequence[str] | None = None,
    level: float = 0.95,
    store: Store | None = None,
) -> tuple[list[str], list[Row]]:
    """Compare every run with runs[0] on each common column (or on ``columns``). Returns the
    columns and one row per (column, other run). ``store``: where the scenario's known
    between-run variation is looked up (None: nothing is known)."""
    from ..measure.variation import known_variation
    from ..stats import compare

    if len(runs) < 2:
        raise BadInput("give at least two runs to compare (the first is the baseline)")
    if not 0.0 <= noise < 1.0:
        raise BadInput(f"--noise {noise:g}: give a fraction in [0, 1), e.g. 0.02 for 2%")
    labels = unique_labels(list(runs))
    common = common_columns(runs, labels)
    if columns:
        missing = [c for c in columns if c not in common]
        if missing:
            raise BadInput(
                f"--column {missing[0]}: not a column common to all runs "
                f"(common: {', '.join(common)})"
            )
        common = list(columns)
    rows: list[Row] = []
    base = runs[0]
    for col in common:
        a = base.values(col)
        compared = [r.id for r in runs]
        # what was known when the later of the runs compared was made: the verdict never
        # depends on runs kept (or a trust record made) after it
        until = max(str((r.meta.get("run") or {}).get("created_utc") or "") for r in runs) or None
        kv = known_variation(store, base, col, compared, until)
        for j in range(1, len(runs)):
            other = runs[j]
            kvo = known_variation(store, other, col, compared, until) if store is not None else None
            cvs = [v.process_cv for v in (kv, kvo) if v is not None and v.process_cv is not None]
            noises = [v.noise for v in (kv, kvo) if v is not None and v.noise is not None]
            run_noise = min(max(noises), 0.99) if noises else 0.0
            try:
                res = compare(
                    a,
                    other.values(col),
                    segments_a=base.segments,
                    segments_b=other.segments,
                    step_a=base.column_step_ns(col),
                    step_b=other.column_step_ns(col),
                    between_cv=max(cvs) if cvs else None,
                    noise=noise,
                    run_noise=run_noise,
                    level=level,
                    seed=seed,
                )
            except ValueError as e:
                rows.append(Row(col, 0, j, None, str(e)))
                continue
            src = next((v.source for v in (kv, kvo) if v is not None), None)
            row = Row(col, 0, j, res, source=src)
            if res.verdict == "inconclusive":
                row.settle = settle_command(base, other, res)
            rows.append(row)
    return common, rows


def _run_command(run: Run, workers: int | None = None) -> str | None:
    """The `latscope run` command that measures the run's scenario again (None for a run
    measured elsewhere: `Run.measured_here`)."""
    if not run.measured_here:
        return None
    given = (run.meta.get("run") or {}).get("params_given") or {}
    parts = ["latscope run", run.benchmark]
    parts += [f"-p {k}={v}" for k, v in given.items()]
    parts += [f"-n {run.n}"]
    if workers:
        parts += [f"--repeat {workers}"]
    return " ".join(parts)


def settle_command(base: Run, other: Run, c: Comparison) -> str:
    """What would settle an inconclusive comparison, as something to type."""
    from .. import probe

    w = max(len(base.segments), len(other.segments))
    if c.settle == "between-run variation unknown" and not (
        base.measured_here and other.measured_here
    ):
        return (
            "a side ran in a single process and was measured elsewhere: measure both again "
            "there with several worker processes (the probe's --workers N, where its system "
            "has them: the Windows probe runs in one process) and import those runs"
        )
    if c.settle == "between-run variation unknown":
        cmd = _run_command(base)
        trust = (
            f"'latscope trust {base.benchmark}"
            + "".join(
                f" -p {k}={v}"
                for k, v in ((base.meta.get("run") or {}).get("params_given") or {}).items()
            )
            + "'"
        )
        again = f" or measure both again in several processes ('{cmd}')" if cmd else ""
        return f"a side ran in a single process: run {trust} once on this machine{again}"
    auto = int(probe.catalogue()["workers_auto"]["max"])
    more = max(2 * w, 2 * auto)
    cmd = _run_command(other, more)
    if c.settle == "difference within the noise threshold":
        return (
            f"the change is smaller than the ±{100 * c.noise:.3g}% noise threshold; to resolve "
            f"it, measure both with more worker processes"
            + (f" ('{cmd}')" if cmd else "")
            + " on a quieter machine"
        )
    if c.settle == "difference within the between-run range":
        return (
            f"two runs of this command on this machine differ by up to ±{100 * c.run_noise:.3g}%"
            " (the store's history or a trust record), more than this change; compare several "
            "interleaved repetitions of each side instead: a suite with repeat = 5 "
            "(latscope suite FILE.toml, see docs/suites.md)"
        )
    return "measure both with more worker processes" + (f": '{cmd}'" if cmd else "")


def _ratio(est: float, lo: float, hi: float) -> str:
    return f"{fmt_ratio(est)} ({fmt_ratio(lo)}–{fmt_ratio(hi)})"


def _p(p: float) -> str:
    if not math.isfinite(p):
        return "—"
    return "< 1e-300" if p == 0 else f"{p:.2g}"


def explain(row: Row, labels: Sequence[str]) -> str:
    """One sentence: how the other run relates to the baseline on this column."""
    other, base = labels[row.other], labels[row.baseline]
    c = row.result
    if c is None:
        return f"{row.column}: {other} vs {base}: not compared ({row.error})"
    r = c.median_ratio
    pct = 100.0 * (r.estimate - 1.0)
    ci = (
        f"ratio of medians {fmt_ratio(r.estimate)}, {100 * c.level:.0f}% CI "
        f"{fmt_ratio(r.low)}–{fmt_ratio(r.high)}"
    )
    band = f"±{100 * c.noise:.3g}%" + (
        f", between-run range ±{100 * c.run_noise:.3g}%" if c.run_noise > c.noise else ""
    )
    slower = (
        f"{other} is {pct:.1f}% slower than {base}"
        if pct < 100
        else f"{other} is slower than {base}: {fmt_ratio(r.estimate)}× its median"
    )
    text = {
        "slower": f"{slower} ({ci})",
        "faster": f"{other} is {-pct:.1f}% faster than {base} ({ci})",
        "same": f"{other} is the same as {base} within {band} ({ci})",
        "inconclusive": f"cannot tell whether {other} differs from {base} ({ci}, noise "
        f"threshold {band}): {row.settle or 'measure more'}",
    }[c.verdict]
    return f"{row.column}: {text}"


#: What a comparison of kept runs is, said with it: runs made one after the other saw
#: different states of the machine; `latscope ab` pairs them in time.
UNPAIRED = (
    "unpaired: made at different times; on a machine whose speed varies between runs only a "
    "large difference shows; 'latscope ab' measures scenarios interleaved and resolves a few "
    "percent"
)


def comparison_blocks(
    runs: Sequence[Run], rows: Sequence[Row], labels: Sequence[str] | None = None
) -> list[Block]:
    """The comparison as document blocks: environment warnings, the table, the sentences."""
    labels = list(labels) if labels is not None else unique_labels(list(runs))
    out: list[Block] = [Text(UNPAIRED)]
    for j in range(1, len(runs)):
        for d in env_differences(runs[0], runs[j]):
            out.append(Alert(f"{labels[j]} vs {labels[0]}: {d}", code="environment"))
    trs: list[list[str | Cell]] = []
    for row in rows:
        c = row.result
        if c is None:
            trs.append([row.column, labels[row.other], "—", "—", "—", "—", "—", Cell("n/a", "dim")])
            continue
        unit = pick_unit([c.median_a])  # the baseline's unit, as its own summary shows it
        p99 = (
            _ratio(c.p99_ratio.estimate, c.p99_ratio.low, c.p99_ratio.high)
            if c.p99_ratio is not None
            else "—"
        )
        trs.append(
            [
                row.column,
                labels[row.other],
                fmt(c.median_a, unit),
                fmt(c.median_b, unit),
                _ratio(c.median_ratio.estimate, c.median_ratio.low, c.median_ratio.high),
                p99,
                _p(c.mannwhitney_p),
                Cell(c.verdict, VERDICT_TONE.get(c.verdict, "")),
            ]
        )
    first = next((r.result for r in rows if r.result is not None), None)
    note = ""
    if first is not None:
        src = next((r.source for r in rows if r.source), None)
        note = (
            f"Baseline: {labels[0]} ({runs[0].id}). Ratios are other / baseline (> 1: slower) "
            f"with {100 * first.level:.0f}% CIs: {first.median_ratio.method}. Verdict: "
            f"'slower'/'faster' when the CI of the median ratio excludes 1 and the change "
            f"exceeds the ±{100 * first.noise:.3g}% noise threshold and the range within which "
            "two runs of one command differ (where the store knows it), 'same' when the whole "
            "CI lies within the noise threshold, else 'inconclusive'. "
            + (f"Known between-run variation: {src}. " if src else "")
            + "The Mann–Whitney p assumes independent samples (too small on autocorrelated "
            "runs) and is not used for the verdict. p99 ratios need at least 10 samples above "
            "p99."
        )
    out.append(
        Table(
            "Comparison with the baseline",
            [
                "column",
                "run",
                "baseline\nmedian",
                "median",
                "ratio of\nmedians (CI)",
                "ratio of\np99 (CI)",
                "Mann–Whitney\np",
                "verdict",
            ],
            trs,
            align="llrrrrrl",
            note=note,
            drop={6: 2, 2: 1},
            group=True,
        )
    )
    out.extend(Text(explain(r, labels)) for r in rows)
    return out


def print_comparison(console: Console, runs: Sequence[Run], rows: Sequence[Row]) -> None:
    from .document import render_rich

    labels = unique_labels(list(runs))

    def what(r: Run) -> str:
        w = len(r.segments)
        return f"n={r.n:,}, " + (f"{w} processes" if w > 1 else "single process")

    console.print(
        "[bold]compare[/bold]: baseline "
        + f"[bold]{shown(labels[0])}[/bold] ({shown(runs[0].id)}, {what(runs[0])}); "
        + ", ".join(
            f"{shown(lab)} ({shown(r.id)}, {what(r)})"
            for lab, r in zip(labels[1:], runs[1:], strict=True)
        )
    )
    render_rich(comparison_blocks(runs, rows, labels), console)


def shift_figure(runs: Sequence[Run], rows: Sequence[Row]) -> Any:
    """The shift plots of the comparison: one panel per column."""
    from .. import plots

    labels = unique_labels(list(runs))
    by_col: dict[str, list[tuple[str, Comparison]]] = {}
    for r in rows:
        if r.result is not None:
            by_col.setdefault(r.column, []).append((labels[r.other], r.result))
    if not by_col:
        raise BadInput("no comparison succeeded; nothing to plot")
    return plots.shift(by_col, baseline=labels[0])
