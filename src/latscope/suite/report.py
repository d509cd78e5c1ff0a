"""The suite's report as a document (report/document.py): the comparison and figures of the
scenarios side by side first, then folded the plan and its outcome, the order of the runs,
and the full analysis of each scenario's representative repetition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..notes import grouped_notes
from ..units import fmt_bare, pick_unit

if TYPE_CHECKING:
    from ..record import Run
from .._version import __version__
from .comparison import Row, row_text, verdict_legend
from .running import SuiteRun, _now

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


def document(
    sr: SuiteRun,
    rows: list[Row],
    *,
    details: bool = True,
    figures: bool = True,
    pages_dir: str = "runs",
    claims: list[Any] | None = None,
) -> Any:
    """The suite's report as a document (report/document.py), rendered by report.write_html and
    report.write_markdown: first the comparison table and per benchmark a figure of its
    scenarios side by side, with what went wrong; then, folded, the plan and the order the
    runs were made in; with ``details``, per scenario a link to a page of its own (in the
    folder ``pages_dir`` beside the report: `Document.pages`) with the full analysis
    (report/run.py, tables) of its representative repetition."""
    from .. import report
    from ..report.document import (
        Alert,
        Cell,
        Document,
        Heading,
        Image,
        KeyValues,
        Links,
        Table,
        Text,
        folded,
        slug,
    )

    s = sr.suite
    ok = [r for r in sr.results if r.status == "ok"]
    doc = Document(
        f"latscope suite {s.name} — {sr.suite_run}",
        f"generated {_now().replace('T', ' ').rstrip('Z')} UTC by latscope {__version__}",
    )
    plan: list[Any] = []
    plan.append(
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
        plan.append(Text(s.description.strip()))
    plan.append(
        Text(
            "Every scenario ran in each round once, in a fresh random order (interleave = "
            "rounds), so drift over the session falls on all scenarios alike instead of "
            "passing for a difference between them."
            if s.interleave == "rounds"
            else "All (scenario × repetition) runs ran in one random order (interleave = shuffle).",
            "note",
        )
    )
    alerts: list[Any] = []
    for k in s.skipped:
        alerts.append(Alert(f"{k.name} not run: {k.why}", code="not-in-catalogue", severity="info"))
    for name, why in sr.skipped_scenarios().items():
        alerts.append(Alert(f"{name} skipped here: {why}", code="not-permitted"))
    for r in sr.failed:
        alerts.append(
            Alert(
                f"{r.step.scenario.name} repetition {r.step.repetition} failed: {r.why}",
                code="failed",
            )
        )
    if sr.interrupted:
        alerts.append(Alert("The suite was interrupted; the figures cover the runs that finished."))
    plan.append(
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
    for names, n in grouped_notes(sr.note_items()):
        plan.append(Alert(f"{names}: {n.text}", code=n.key, severity="info"))

    doc.add(Heading("Comparison", 2, "comparison"))
    baselines = {r.baseline for r in rows if r.baseline}
    paired_any = any(r.paired is not None for r in rows)
    legend = verdict_legend(rows)
    trows: list[list[Any]] = []
    for r in rows:
        x = row_text(r, baselines, paired_any)
        tone = {"faster": "good", "slower": "bad", "inconclusive": "warn"}.get(x.tone, "")
        trows.append(
            [
                r.scenario,
                r.column,
                str(r.between.r),
                Cell(x.median, "bold"),
                x.within,
                x.medians,
                x.cv,
                x.interval,
                r.baseline or "",
                x.ratio,
                Cell(x.verdict, tone) if x.tone else x.verdict,
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
            "(R ≥ 3); it covers within- and between-run variation. "
            + legend[:1].upper()
            + legend[1:],
        )
    )
    if claims:  # the suite's [[claim]]s, checked on these runs (suite/claims.py)
        tones = {"holds": "good", "contradicted": "bad", "inconclusive": "warn"}
        doc.add(
            Table(
                "What the scenarios should show, checked on these runs",
                ["report", "claim", "figure [95% CI]", "verdict"],
                [
                    [
                        v.claim.report or "",
                        v.claim.says,
                        v.figures(),
                        Cell(v.verdict, tones[v.verdict]) if v.verdict in tones else v.verdict,
                    ]
                    for v in claims
                ],
                align="llrl",
                note="Holds: the figure's whole 95% interval satisfies the claim; contradicted: "
                "its whole interval satisfies the opposite; inconclusive: it straddles the bound. "
                "A ratio's interval: a t interval over the repetitions paired in time (†: too few "
                "to pair, the conservative one from the two medians' intervals).",
            )  # fmt: skip
        )
    if figures:
        from .. import plots  # matplotlib: only for the figures

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
                    f"{bench}: the scenarios side by side, one panel per column — box plots of "
                    "all repetitions' samples on a log axis, under each box the median with the "
                    "95% interval over repetitions",
                    fig,
                )
            )

    doc.extend(alerts)
    doc.extend(
        folded(
            f"The plan: {len(s.scenarios)} scenarios, {len(sr.steps)} runs, "
            f"{s.interleave} with seed {sr.seed}",
            plan,
        )
    )
    order: list[Any] = [Heading("Order of the runs", 2, "order")]
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
    order.append(
        Table(
            "Runs in the order they were made",
            ["#", "scenario", "repetition", "run id", "status", "p50 (first column)"],
            order_rows,
            align="rllllr",
        )
    )
    doc.extend(folded(f"The {len(sr.results)} runs in the order they were made", order))
    if details:
        links = []
        doc.pages_dir = pages_dir
        for sc in s.scenarios:
            run = representative(sr, sc.name)
            if run is None:
                continue
            others = [x.id for x in sr.runs_of(sc.name) if x.id != run.id]
            ra = report.analyse(run, sc.name, seed=sr.seed)
            page = Document(f"{sc.name}: run {run.id} of suite {s.name} ({sr.suite_run})")
            page.extend(report.run_blocks(ra, figures=False, anchor="run"))
            if others:
                page.blocks.insert(2, Text(f"other repetitions: {', '.join(others)}", "dim"))
            name = f"{slug(run.id)}.html"
            doc.pages[name] = page
            how = f"latscope report {run.id} --html FILE"
            links.append((f"{sc.name}: run {run.id}", f"{pages_dir}/{name}", how))
        doc.add(Heading("Each scenario's run", 2, "scenarios"))
        doc.add(
            Links(
                "The full analysis of each scenario's representative repetition (the one whose "
                "median, of the first column, is the median of the repetition medians), a page "
                "each; its figures: latscope report RUN --html FILE",
                links,
            )
        )
    return doc
