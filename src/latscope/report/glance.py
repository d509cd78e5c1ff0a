"""The answer first: what a report opens with, before any table of how it was measured.

For each run, one sentence per timed column: its latency with the median's 95% interval,
p99 (or why it is withheld), max and the number of samples; then what a reader must know
before quoting it: the warnings `latscope show` opens with, in its words (the run's facts),
the analysis's two most serious others (in the order `PRIORITY` gives), and the first
sentence of each note on what the figure holds (the machine's, the parameters'); then one
figure (one run: the first column's histogram; several: the runs side by side). With
several runs, the comparison's verdicts come right after the sentences. Everything else (the
environment, the clock, the full tables) follows in the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..env import emulation_caveat
from ..facts import latency_of, said_codes, warnings_of
from ..facts.wording import injected_line
from ..measure.trace import load_explained
from ..summary import P50_CI_HIGH, P50_CI_LOW, stat, value, withheld_reason
from ..units import fmt, pick_unit
from .document import Alert, Block, Heading, Image, Text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .run import RunAnalysis

#: The warnings a reader must see first, most serious first; others follow in this order.
PRIORITY = (
    "timer_too_coarse",
    "levels",
    "oscillation",
    "level_shift",
    "multimodal",
    "warmup",
    "drift",
    "trend",
    "short_run",
    "autocorrelated",
    "spikes",
    "periodic_spikes",
    "tail_too_few",
)
#: Columns of one run described in the sentences (the rest are in the run's section).
MAX_COLUMNS = 4
#: Warnings shown per run at the top.
MAX_WARNINGS = 2


def _rank(code: str) -> int:
    return PRIORITY.index(code) if code in PRIORITY else len(PRIORITY)


def column_sentence(ra: RunAnalysis, col: str, row: dict[str, Any]) -> str:
    """``rtt (round trip, 2 ctx sw): median 6.306 µs (95% CI 6.215–7.476 µs), p99 11.31 µs,
    max 107.1 µs; 5,000 samples``."""
    unit = pick_unit([row.get("p50_ns")])
    lat = latency_of(ra.run.facts, col)
    p50 = fmt(row.get("p50_ns"), unit)
    lo, hi = row.get(P50_CI_LOW), row.get(P50_CI_HIGH)
    ci = f" (95% CI {fmt(lo, unit)} – {fmt(hi, unit)})" if lo is not None else ""
    p99s = stat("p99")
    why = withheld_reason(row, p99s)
    p99 = "p99 withheld (too few samples above it)" if why else f"p99 {fmt(value(row, p99s), unit)}"
    mx = fmt(row.get("max_ns"), unit)
    return f"{col} ({lat}): median {p50}{ci}, {p99}, max {mx}; {int(row['n']):,} samples"


def top_warnings(ra: RunAnalysis) -> list[tuple[str, str, str]]:
    """The analysis's most serious warnings (column, code, message), one per code,
    `MAX_WARNINGS` of them, but those the run's facts say already (`said_codes`)."""
    found: list[tuple[int, int, str, str, str]] = []
    seen: set[str] = said_codes(ra.run.facts)
    for ci, (col, ca) in enumerate(ra.columns.items()):
        for w in ca.warnings:
            if w.code not in seen:
                seen.add(w.code)
                found.append((_rank(w.code), ci, col, w.code, w.message))
    found.sort()
    return [(col, code, msg) for _, _, col, code, msg in found[:MAX_WARNINGS]]


def glance_blocks(
    analyses: Sequence[RunAnalysis],
    *,
    verdicts: Sequence[str] = (),
    figure: Image | None = None,
    figures: bool = True,
) -> list[Block]:
    """The report's opening section (module docs)."""
    out: list[Block] = [Heading("At a glance", 2, "glance")]
    out.extend(Text(v) for v in verdicts)  # with several runs, the answer is the comparison
    several = len(analyses) > 1
    for ra in analyses:
        summ = ra.run.summary()
        rows = {r["column"]: r for r in summ.iter_rows(named=True)}
        # the figure the run exists for first (ctx's switch), then the others in their order
        cols = [c for c in ra.run.all_columns if c in rows]
        cols = sorted(cols, key=lambda c: c != ra.run.headline)[:MAX_COLUMNS]
        head = f"{ra.label}: " if several else ""
        caveat = emulation_caveat(ra.run.env)
        if caveat:  # first: every figure below is the emulator's
            out.append(Alert(f"{head}{caveat}", code="emulated"))
        if ra.run.inject_ns:  # and every figure below holds the injected delay
            out.append(Alert(f"{head}{injected_line(ra.run.inject_ns)}", code="injected"))
        for c in cols:
            out.append(Text(head + column_sentence(ra, c, rows[c]) + "."))
        more = len(ra.run.all_columns) - len(cols)
        if more > 0:
            out.append(Text(f"… and {more} more columns in the run's section.", "dim"))
        facts = ra.run.facts
        check = facts["check"]
        if check and check.get("disagree"):  # the batch figure against the per-call median
            out.append(Alert(f"{head}{check.get('short') or check['text']}", code="disagree"))
        # the warnings and notes `latscope show` opens with, in its words (the facts'), then
        # the analysis's most serious ones
        said = warnings_of(facts, placed=True)  # (the timed loop's too: all that show says)
        out.extend(Alert(head + (w["short"] or w["text"]), code=w["key"]) for w in said)
        top = top_warnings(ra)
        for col, code, msg in top:
            out.append(Alert(f"{head}{col}: {msg}", code=code))
        out.extend(
            Alert(head + n["text"].split(". ", 1)[0] + ".", code=n["key"], severity="info")
            for n in facts["notes"]
        )
        rec = load_explained(ra.run.dir)  # latscope explain
        if rec is not None:
            from .explain import sentence

            out.append(Text(head + sentence(rec) + "."))
        if not (said or top or (check and check.get("disagree"))):
            out.append(Text(f"{head}no warnings: nothing in the analysis says to distrust it."))
    if not figures:
        return out
    if figure is not None:
        out.append(figure)
    elif not several and analyses and analyses[0].columns:
        ra = analyses[0]
        col = ra.run.headline if ra.run.headline in ra.columns else next(iter(ra.columns))
        ca = ra.columns[col]

        def hist() -> Figure:
            from .. import plots  # matplotlib: when the figure is drawn

            return plots.histogram(
                plots.sorted_samples(ra.run.values(col)),
                label=f"{col} — {ra.label}",
                fit=ca.distribution.lognormal,
                cut=plots.HIST_CUT,
                step=ra.run.column_step_ns(col),
            )

        out.append(
            Image(
                f"{ra.run.id}-glance",
                f"{col}: histogram of the samples (up to the cut the run's section names), "
                "with the fitted shifted log-normal density — " + ra.label,
                hist,
                wide=False,
            )
        )
    if not several and analyses and (rec := load_explained(analyses[0].run.dir)) is not None:
        from .explain import stacked_bar

        out.append(
            Image(
                f"{analyses[0].run.id}-explain",
                "Where the time of the timed loop goes, traced (largest part first)",
                lambda: stacked_bar(rec),
            )
        )
    return out
