"""Comparing runs: ``latscope compare A B [...]`` and the comparison section of the report.

The first run is the baseline. For every column the runs have in common (``rtt/2`` included),
each other run is compared with the baseline by ``analysis.compare``: the ratio of medians and
of p99s with block-bootstrap confidence intervals, the Mann–Whitney p-value, and a verdict
against the noise threshold (faster, slower, same, inconclusive). Runs without a column in
common are refused. Runs measured in different environments are compared, with a warning that
says what differs (``env.compatible`` when both runs carry a captured environment, else the
kernel, CPU and clock source the probe recorded).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .document import Alert, Block, Cell, Table, Text
from .errors import BadInput
from .report_text import unique_labels
from .units import fmt, pick_unit

if TYPE_CHECKING:
    from rich.console import Console

    from .analysis import Comparison
    from .runs import Run

VERDICT_TONE = {"faster": "good", "slower": "bad", "same": "", "inconclusive": "warn"}


@dataclass
class Row:
    column: str
    baseline: int  # index into the runs
    other: int
    result: Comparison | None
    error: str | None = None


def all_columns(run: Run) -> list[str]:
    return list(run.columns) + list(run.derived_columns)


def common_columns(runs: Sequence[Run], labels: Sequence[str] | None = None) -> list[str]:
    """The columns of the baseline (runs[0]) that every other run has too; refuses with one
    line when a run shares none with the baseline."""
    labels = list(labels) if labels is not None else unique_labels(list(runs))
    base = all_columns(runs[0])
    common = list(base)
    for r, lab in zip(runs[1:], labels[1:], strict=True):
        cols = all_columns(r)
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
                f"{lab}: {', '.join(all_columns(r))}" for r, lab in zip(runs, labels, strict=True)
            )
            + "); compare fewer runs at a time"
        )
    return common


def _header_env_diffs(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    out = []
    for key, what in (
        ("cpu_model", "CPU"),
        ("machine", "architecture"),
        ("release", "kernel"),
        ("clocksource", "clock source"),
    ):
        va, vb = a.get(key), b.get(key)
        if va is not None and vb is not None and va != vb:
            out.append(f"Different {what}: {va} vs {vb}.")
    return out


def env_differences(a: Run, b: Run) -> list[str]:
    """Why the results of runs a and b may not be comparable; empty when nothing is known to
    differ."""
    from . import env as envmod

    if b.imported or a.imported:
        both = a.imported and b.imported
        return [
            f"{'both runs were' if both else 'one run was'} imported from a CSV file: the "
            "environment and the clock are unknown, so differences may come from the machine, "
            "not the code."
        ]
    ea, eb = (a.meta.get("run") or {}).get("env"), (b.meta.get("run") or {}).get("env")
    if isinstance(ea, dict) and isinstance(eb, dict):
        out = list(envmod.compatible(ea, eb))
    else:
        out = _header_env_diffs(a.meta.get("env") or {}, b.meta.get("env") or {})
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
) -> tuple[list[str], list[Row]]:
    """Compare every run with runs[0] on each common column (or on ``columns``). Returns the
    columns and one row per (column, other run)."""
    from .analysis import compare

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
    for col in common:
        a = runs[0].values(col)
        for j in range(1, len(runs)):
            try:
                res = compare(a, runs[j].values(col), noise=noise, level=level, seed=seed)
                rows.append(Row(col, 0, j, res))
            except ValueError as e:
                rows.append(Row(col, 0, j, None, str(e)))
    return common, rows


def _ratio(est: float, lo: float, hi: float) -> str:
    return f"{est:.3f} ({lo:.3f}–{hi:.3f})"


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
    ci = f"ratio of medians {r.estimate:.3f}, {100 * c.level:.0f}% CI {r.low:.3f}–{r.high:.3f}"
    band = f"±{100 * c.noise:g}%"
    slower = (
        f"{other} is {pct:.1f}% slower than {base}"
        if pct < 100
        else f"{other} is slower than {base}: {r.estimate:.3g}× its median"
    )
    text = {
        "slower": f"{slower} ({ci})",
        "faster": f"{other} is {-pct:.1f}% faster than {base} ({ci})",
        "same": f"{other} is the same as {base} within {band} ({ci})",
        "inconclusive": f"cannot tell whether {other} differs from {base}: the interval "
        f"straddles the {band} threshold ({ci}); measure more iterations",
    }[c.verdict]
    return f"{row.column}: {text}"


def comparison_blocks(
    runs: Sequence[Run], rows: Sequence[Row], labels: Sequence[str] | None = None
) -> list[Block]:
    """The comparison as document blocks: environment warnings, the table, the sentences."""
    labels = list(labels) if labels is not None else unique_labels(list(runs))
    out: list[Block] = []
    for j in range(1, len(runs)):
        for d in env_differences(runs[0], runs[j]):
            out.append(Alert(f"{labels[j]} vs {labels[0]}: {d}", code="environment"))
    trs: list[list[str | Cell]] = []
    for row in rows:
        c = row.result
        if c is None:
            trs.append([row.column, labels[row.other], "—", "—", "—", "—", "—", Cell("n/a", "dim")])
            continue
        unit = pick_unit([c.median_a, c.median_b])
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
        note = (
            f"Baseline: {labels[0]} ({runs[0].id}). Ratios are other / baseline (> 1: slower) "
            f"with {100 * first.level:.0f}% CIs from a {first.median_ratio.method}. Verdict: "
            f"'same' when the whole CI of the median ratio lies within ±{100 * first.noise:g}%, "
            "'slower'/'faster' when it lies wholly outside, else 'inconclusive'. The "
            "Mann–Whitney p assumes independent samples (too small on autocorrelated runs) and "
            "is not used for the verdict. p99 ratios need at least 10 samples above p99."
        )
    out.append(
        Table(
            "Comparison with the baseline",
            [
                "column",
                "run",
                "baseline median",
                "median",
                "ratio of medians (CI)",
                "ratio of p99 (CI)",
                "Mann–Whitney p",
                "verdict",
            ],
            trs,
            align="llrrrrrl",
            note=note,
        )
    )
    out.extend(Text(explain(r, labels)) for r in rows)
    return out


def print_comparison(console: Console, runs: Sequence[Run], rows: Sequence[Row]) -> None:
    from .document import render_rich

    labels = unique_labels(list(runs))
    console.print(
        "[bold]compare[/bold]: baseline "
        + f"[bold]{labels[0]}[/bold] ({runs[0].id}, n={runs[0].n:,}); "
        + ", ".join(
            f"{lab} ({r.id}, n={r.n:,})" for lab, r in zip(labels[1:], runs[1:], strict=True)
        )
    )
    render_rich(comparison_blocks(runs, rows, labels), console)


def shift_figure(runs: Sequence[Run], rows: Sequence[Row]) -> Any:
    """The shift plots of the comparison: one panel per column."""
    from . import plots

    labels = unique_labels(list(runs))
    by_col: dict[str, list[tuple[str, Comparison]]] = {}
    for r in rows:
        if r.result is not None:
            by_col.setdefault(r.column, []).append((labels[r.other], r.result))
    if not by_col:
        raise BadInput("no comparison succeeded; nothing to plot")
    return plots.shift(by_col, baseline=labels[0])
