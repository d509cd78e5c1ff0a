"""The terminal summary of a run (rich), rendered from its facts (`latscope.facts`): nothing
here asks the probe's catalogue or computes a statistic."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from ..facts.wording import injected_line, run_label
from ..summary import (
    P50_CI_HIGH,
    P50_CI_LABEL,
    P50_CI_LOW,
    STATS,
    WITHHELD_LEGEND,
    value,
)
from ..units import fmt_bare, pick_unit, shown

#: A terminal at least this wide gets every figure of the run table; a narrower one the brief
#: set (summary.STATS brief, and max), whole.
WIDE_TABLE = 120


def facts_of(run: Any) -> dict[str, Any]:
    """A run's facts: ``run`` itself when it is facts (a dict), else its `facts`."""
    return run if isinstance(run, dict) else run.facts


def print_run(console: Console, run: Any, details: bool = False) -> None:
    """A run's summary (``run``: a `Run`, or its facts): what was measured, the table of its
    figures, how the intervals were made, the catalogue's lines, its notes and warnings;
    ``details``: why figures are withheld, and where it was measured."""
    f = facts_of(run)
    warm = (
        f"after {f['warmup']} warm-up iterations"
        if f["warmup"] is not None
        else ("warm-up unknown")
    )
    console.print(
        f"[bold]{shown(f['benchmark'])}[/bold] {shown(f['params_text'])}  —  n={f['n']} {warm}"
    )
    console.print(f"clock [bold]{shown(f['clock']['name'])}[/bold]: {shown(f['clock']['line'])}")
    if f["caveat"]:
        console.print(f"[yellow]caveat:[/yellow] {shown(f['caveat'])}")
    if f["inject_ns"]:
        console.print(f"[yellow]injected:[/yellow] {injected_line(f['inject_ns'])}")
    if not f["header_checksummed"]:
        console.print(
            "[dim]sample file format 1: its checksum covers the samples, not this header "
            "(format 2 and later cover both)[/dim]"
        )
    # a narrow terminal gets the figures that matter (n, p50 with its interval, the tail, max)
    # whole, never cut; the rest at WIDE_TABLE columns or more, or in 'show --full'
    wide = console.width >= WIDE_TABLE
    t = Table(
        title=f"run {shown(f['id'])}",
        title_justify="left",
        box=None if not wide else box.HEAVY_HEAD,
        pad_edge=wide,
    )
    t.add_column("column", style="bold", no_wrap=True)
    if wide:
        t.add_column("latency")
    figures = [  # ESS: in the line under the table
        s for s in STATS if s.kind != "number" and (wide or s.brief or s.key == "max")
    ]
    for s in figures:
        if s.kind == "count":
            t.add_column(s.label, justify="right", no_wrap=True)
            t.add_column("unit", no_wrap=True)
            continue
        t.add_column(
            s.label, justify="right", style="bold" if s.key == "p50" else None, no_wrap=True
        )
        if s.key == "p50":
            t.add_column(P50_CI_LABEL, justify="right", no_wrap=True)
    labels = {c["name"]: c["latency_label"] for c in f["columns"]}
    narrow_latency: list[str] = []
    for row in f["summary"]:
        c = row["column"]
        unit = pick_unit([row.get("p50_ns")])
        cells = [shown(c), shown(labels.get(c, ""))] if wide else [shown(c)]
        if not wide:
            narrow_latency.append(f"{shown(c)}: {shown(labels.get(c, ''))}")
        for s in figures:
            v = value(row, s)
            if s.kind == "count":
                cells += [str(row.get(s.column)), unit[0]]
                continue
            cells.append(fmt_bare(v, unit))
            if s.key == "p50":
                lo, hi = row.get(P50_CI_LOW), row.get(P50_CI_HIGH)
                cells.append(
                    f"{fmt_bare(lo, unit)}–{fmt_bare(hi, unit)}" if lo is not None else "—"
                )
        t.add_row(*cells)
    console.print(t)
    if not wide:
        console.print(
            f"[dim]{'; '.join(narrow_latency)}. min, mean, std and p95: in a terminal of "
            f"{WIDE_TABLE} columns or more, or 'latscope show RUN --full'[/dim]",
            highlight=False,
        )
    if f["withheld"] and details:
        for line in f["withheld"]:
            console.print(f"[dim]{shown(line)}[/dim]")
    elif f["withheld"]:
        console.print(f"[dim]{WITHHELD_LEGEND} ('latscope show RUN' says why)[/dim]")
    if f["ci_line"]:
        console.print(f"[dim]{shown(f['ci_line'])}[/dim]")
    if f["check"]:
        bad = f["check"].get("disagree")
        console.print(
            shown(f["check"]["text"], markup=False),
            style="yellow" if bad else None,
            markup=False,
            highlight=False,
        )
    for ln in f["display"]:
        text, style = shown(ln["text"]), ln.get("style")  # the user's paths, never markup
        console.print(f"[{style}]{text}[/{style}]" if style else text, highlight=False)
    for note in f["notes"]:
        console.print(f"[dim]note ({shown(note['key'])}): {shown(note['text'])}[/dim]")
    if f["usage"]:
        console.print(shown(f"timed loop ({f['usage']['scope']}): {f['usage']['detail']}"))
    for w in f["findings"]:
        if w["level"] == "warning":
            console.print(f"[yellow]warning:[/yellow] {shown(w['text'])}")
    if details and (f.get("imported") or f.get("measured")):
        console.print(f"[dim]{shown(f.get('imported') or f.get('measured'))}[/dim]")


def unique_labels(runs: list[Any]) -> list[str]:
    """run_label of each run, with the end of the run id added where two would be equal."""
    labels = [run_label(r) for r in runs]
    out = []
    for r, lab in zip(runs, labels, strict=True):
        if labels.count(lab) > 1:
            lab = f"{lab} [{r.id.rsplit('-', 1)[-1]}]"
        out.append(lab)
    if len(set(out)) < len(out):  # the same run twice, or equal id endings
        out = [f"{lab} #{i + 1}" for i, lab in enumerate(out)]
    return out
