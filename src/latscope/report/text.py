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
from ..units import fmt_bare, pct, pick_unit, shown

#: A terminal at least this wide gets every figure of the run table; a narrower one the brief
#: set (summary.STATS brief, and max), whole.
WIDE_TABLE = 120
#: A sample file of format 1: what its checksum does not cover.
V1_NOTE = "sample file format 1: its checksum covers the samples, not its header"


def facts_of(run: Any) -> dict[str, Any]:
    """A run's facts: ``run`` itself when it is facts (a dict), else its `facts`."""
    return run if isinstance(run, dict) else run.facts


def print_run(
    console: Console,
    run: Any,
    details: bool = False,
    table: bool = True,
    kept_in: str | None = None,
) -> None:
    """A run's summary (``run``: a `Run`, or its facts). Brief (the default, about ten lines
    at 80 columns): what was measured, each column's median with its one interval and its
    tail, the warnings one line each, and where the rest is. ``details`` (`show --full`):
    everything the facts hold: the clock, how the intervals were made, the catalogue's lines,
    the timed loop, the worker processes, every finding in full, where it was measured.
    ``table``: False leaves the brief table out (an interleaved run's comparison, printed
    before, gives every arm's median); ``kept_in``: the store a new run was kept in."""
    f = facts_of(run)
    if not details:
        _brief(console, f, table, kept_in)
        return
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
        console.print(f"[dim]{V1_NOTE} (format 2 and later cover both)[/dim]")
    console.print(_table(console, f, title=f"run {shown(f['id'])}"))
    if console.width < WIDE_TABLE:
        labels = "; ".join(f"{shown(c['name'])}: {shown(c['latency_label'])}" for c in f["columns"])
        console.print(
            f"[dim]{labels}. min, mean, std and p95: in a terminal of {WIDE_TABLE} columns or "
            "more[/dim]",
            highlight=False,
        )
    for line in f["withheld"]:
        console.print(f"[dim]{shown(line)}[/dim]")
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
    if f.get("workers"):
        _workers(console, f["workers"])
    for w in f["findings"]:
        tag = "[yellow]warning:[/yellow]" if w["level"] == "warning" else "[dim]note:[/dim]"
        console.print(f"{tag} {shown(w['text'])}")
    if f.get("imported") or f.get("measured"):
        console.print(f"[dim]{shown(f.get('imported') or f.get('measured'))}[/dim]")


def _brief(console: Console, f: dict[str, Any], table: bool, kept_in: str | None) -> None:
    """The answer first (`print_run`'s default)."""
    if table:
        workers = (f.get("workers") or {}).get("count") or 1
        who = f"{workers} workers" if workers > 1 else "one process"
        head = f"{f['benchmark']} {f['params_text']} · n={f['n']:,} in {who}"
        clock = f" · clock {f['clock']['name']}"
        if len(head) + len(clock) <= console.width:
            head += clock
        console.print(
            f"[bold]{shown(f['benchmark'])}[/bold]{shown(head[len(f['benchmark']) :])}",
            highlight=False,
        )
        console.print(_table(console, f, brief=True))
    lines = []
    if not f["header_checksummed"]:
        lines.append(
            "[dim]sample file format 1: its checksum covers the samples, not its header[/dim]"
        )
    if f["caveat"]:
        lines.append(f"[yellow]caveat:[/yellow] {shown(f['caveat'])}")
    if f["inject_ns"]:
        lines.append(f"[yellow]injected:[/yellow] {injected_line(f['inject_ns'])}")
    if f["check"] and f["check"].get("disagree"):
        said = f["check"].get("short") or f["check"]["text"]
        lines.append(f"[yellow]warning:[/yellow] {shown(said)}")
    lines += [
        f"[yellow]warning:[/yellow] {shown(w.get('short') or w['text'])}"
        for w in f["findings"]
        if w["level"] == "warning"
    ]
    # what the figure measures under these parameters and this machine (notes.py): its
    # first sentence, in one line; the whole note in the full view
    lines += [f"[cyan]note:[/cyan] {shown(note['text'].split('. ', 1)[0])}" for note in f["notes"]]
    if f["withheld"]:
        lines.append(f"[dim]{WITHHELD_LEGEND}[/dim]")
    for ln in lines:
        console.print(_one_line(ln, console.width), highlight=False)
    run = f"run {f['id']}" + (f" kept in {kept_in}" if kept_in else "")
    more = f"the rest: latscope show {f['id']} --full"
    sep = " · " if len(run) + 3 + len(more) <= console.width else "\n"
    console.print(f"[dim]{shown(run)}{sep}{shown(more)}[/dim]", highlight=False)


def _one_line(text: str, width: int) -> str:
    """``text`` (rich markup) cut at a word to fit one line of ``width``, with '…'."""
    from rich.text import Text

    plain = Text.from_markup(text).plain
    if len(plain) <= width:
        return text
    cut = plain[: width - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    head = plain.split(" ", 1)[0]  # the tag ('warning:'): its colour kept
    styled = text.split(" ", 1)[0]
    return styled + shown(cut[len(head) :])  # the plain text, its markup escaped again


def _table(console: Console, f: dict[str, Any], title: str | None = None, brief: bool = False):
    """The run's figures: every one at `WIDE_TABLE` columns or more (not ``brief``), else the
    brief set (summary.STATS brief, and max), whole, never cut."""
    wide = console.width >= WIDE_TABLE and not brief
    t = Table(
        title=title,
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
    for row in f["summary"]:
        c = row["column"]
        unit = pick_unit([row.get("p50_ns")])
        cells = [shown(c), shown(labels.get(c, ""))] if wide else [shown(c)]
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
    return t


def _workers(console: Console, w: dict[str, Any]) -> None:
    """The worker processes among themselves: per column the range and CV of their medians
    and the typical half width of one worker's interval, then each column's medians."""
    t = Table(
        title=f"between runs: {w['count']} worker processes",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name, justify in (("column", "left"), ("worker medians", "right"), ("CV", "right")):
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    t.add_column("within", justify="right")
    for c in w["columns"]:
        meds = c["medians_ns"]
        unit = pick_unit([sorted(meds)[len(meds) // 2]])
        t.add_row(
            shown(c["column"]),
            f"{fmt_bare(min(meds), unit)}–{fmt_bare(max(meds), unit)} {unit[0]}",
            pct(c["cv"]) + (" †" if c["disagree"] else ""),
            pct(c["within"], "±"),
        )
    console.print(t)
    for c in w["columns"]:
        meds = c["medians_ns"]
        unit = pick_unit([sorted(meds)[len(meds) // 2]])
        console.print(
            f"[dim]{shown(c['column'])} worker medians ({unit[0]}): "
            f"{' '.join(fmt_bare(x, unit) for x in meds)}[/dim]"
        )
    console.print(
        "[dim]worker medians: lowest–highest; CV: their coefficient of variation; within: "
        "typical half width of one worker's interval for its median; † the medians differ by "
        "more than those intervals allow (below)[/dim]"
    )


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
