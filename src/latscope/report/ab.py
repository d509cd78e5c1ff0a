"""The terminal view of an interleaved run (`latscope ab`, `latscope show` of a run with arms):
it renders the comparison facts kept with the run (run.json ``ab``, made by
`latscope.measure.comparison.facts`) and computes nothing. First the answer, one line per arm and
column: the ratio to the baseline, its interval and the verdict; then each arm's median; then
what the run was."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ..units import fmt, fmt_ratio, pick_unit, shown
from . import document as doc

#: The tone of each verdict in documents (report.document.Cell).
_VERDICT_TONE = {"faster": "good", "slower": "bad", "same": "", "inconclusive": "warn"}

#: How each verdict reads, with the change in percent where there is one.
_VERDICT_STYLE = {
    "faster": "green",
    "slower": "red",
    "same": "cyan",
    "inconclusive": "yellow",
}


def ratio_text(r: float | None) -> str:
    """A paired ratio to the precision it resolves: three decimals between 0.1 and 10
    (1.032, 0.512), else three significant figures."""
    if isinstance(r, (int, float)) and 0.1 <= r < 10:
        return f"{r:.3f}"
    return fmt_ratio(r)


def verdict_text(c: Mapping[str, Any]) -> str:
    """``slower (+2.1%)``, ``faster (−48.8%)``, ``same (within ±1%)``, ``inconclusive``."""
    v = str(c["verdict"])
    r = c.get("ratio")
    if v in ("faster", "slower") and isinstance(r, (int, float)):
        pct = (r - 1.0) * 100.0
        return f"{v} ({'+' if pct >= 0 else '−'}{abs(pct):.1f}%)"
    return v


def comparison_table(f: Mapping[str, Any]) -> Table:
    """One row per arm after the baseline and per column: ratio, interval, verdict."""
    several = len(f.get("columns") or []) > 1
    t = Table(box=None, pad_edge=False, header_style="bold")
    t.add_column("arm")
    if several:
        t.add_column("column")
    t.add_column(f"ratio to {f.get('baseline', 'A')}", justify="right")
    t.add_column(f"{f.get('level', 0.95):.0%} CI", justify="right")
    t.add_column("verdict")
    for c in f["comparisons"]:
        style = _VERDICT_STYLE.get(str(c["verdict"]), "")
        row = [str(c["arm"])]
        if several:
            row.append(shown(c["column"]))
        row += [
            ratio_text(c["ratio"]),
            f"{ratio_text(c['low'])}–{ratio_text(c['high'])}",
            f"[{style}]{verdict_text(c)}[/{style}]" if style else verdict_text(c),
        ]
        t.add_row(*row)
    return t


def medians_table(f: Mapping[str, Any]) -> Table:
    """Each arm's median per column, with its interval and sample count, one unit per column."""
    several = len(f.get("columns") or []) > 1
    t = Table(box=None, pad_edge=False, header_style="bold")
    t.add_column("arm")
    if several:
        t.add_column("column")
    t.add_column("median", justify="right")
    t.add_column("95% CI", justify="right")
    t.add_column("n", justify="right")
    by_col: dict[str, list[Mapping[str, Any]]] = {}
    for m in f["medians"]:
        by_col.setdefault(str(m["column"]), []).append(m)
    for col, ms in by_col.items():
        unit = pick_unit([m["median_ns"] for m in ms if m.get("median_ns") is not None])
        for m in ms:
            row = [str(m["arm"])]
            if several:
                row.append(shown(col))
            lo, hi = m.get("low_ns"), m.get("high_ns")
            ci = f"{fmt(lo, unit).split()[0]}–{fmt(hi, unit)}" if lo is not None else "—"
            n = m.get("n")
            row += [fmt(m.get("median_ns"), unit), ci, f"{n:,}" if isinstance(n, int) else "—"]
            t.add_row(*row)
    return t


def headline(f: Mapping[str, Any]) -> str:
    """What the run was, in one line: arms, workers, rounds, blocks, time."""
    rounds = f.get("rounds")
    total = sum(rounds) if isinstance(rounds, list) else rounds
    if f.get("mode") == "processes":
        parts = [f"{len(f['arms'])} arms alternating as processes"]
    else:
        parts = [f"{len(f['arms'])} arms interleaved in one process"]
    w = f.get("workers")
    if isinstance(w, int):
        parts.append(f"{w} worker{'s' if w != 1 else ''}")
    if total:
        parts.append(f"{total:,} rounds of blocks up to {f.get('block_ms', 0):g} ms")
    if f.get("time_s"):
        parts.append(f"{f['time_s']:g} s")
    return ", ".join(parts)


def print_ab(console: Console, f: Mapping[str, Any], run_id: str | None = None) -> None:
    """The whole terminal view of an interleaved run's facts."""
    for a in f["arms"]:
        base = " (baseline)" if a["arm"] == f.get("baseline", "A") else ""
        console.print(f"[bold]{a['arm']}[/bold]: {shown(a['scenario'])}{base}")
    console.print(f"[dim]{headline(f)}; paired per-round ratios[/dim]")
    if f.get("apart"):
        console.print(f"[dim]not in one process: {shown(f['apart'])}[/dim]")
    console.print(comparison_table(f))
    console.print(medians_table(f))
    noise = float(f.get("noise", 0.01))
    console.print(
        f"[dim]verdict: faster/slower when the interval excludes 1 and the change exceeds "
        f"{noise:.0%}; same when the interval lies within ±{noise:.0%} (--noise)[/dim]"
    )
    for c in f["comparisons"]:
        if c.get("settle") and c["verdict"] == "inconclusive":
            console.print(
                f"[yellow]{c['arm']} {shown(c['column'])}: inconclusive: "
                f"{shown(c['settle'])}[/yellow]"
            )
        if c.get("order_warning"):
            console.print(
                f"[yellow]warning: {c['arm']} {shown(c['column'])}: "
                f"{shown(c['order_warning'])}[/yellow]"
            )
    shown_oe = [c for c in f["comparisons"] if c.get("order_effect")]
    if shown_oe:
        c = shown_oe[0]
        oe = c["order_effect"]
        console.print(
            f"[dim]order effect ({c['arm']} {shown(c['column'])}, first vs second in a round): "
            f"{ratio_text(oe['ratio'])} [{ratio_text(oe['low'])}–{ratio_text(oe['high'])}][/dim]"
        )
    if run_id:
        console.print(f"[dim]run {shown(run_id)}[/dim]")


def ab_sentences(f: Mapping[str, Any]) -> list[str]:
    """The answer of an interleaved run, one sentence per arm and column: what a report of
    it opens with."""
    scen = {a["arm"]: a["scenario"] for a in f["arms"]}
    return [
        f"{c['arm']} ({scen.get(c['arm'])}) against A ({scen.get('A')}), {c['column']}: "
        f"ratio {ratio_text(c['ratio'])} (95% CI {ratio_text(c['low'])}–"
        f"{ratio_text(c['high'])}), {verdict_text(c)}; paired in {c['rounds']} rounds"
        for c in f["comparisons"]
    ]


def ab_blocks(f: Mapping[str, Any]) -> list[doc.Block]:
    """The comparison of an interleaved run as document blocks (HTML, Markdown, LaTeX): what
    it was, the ratios with their intervals and verdicts, each arm's median."""
    several = len(f.get("columns") or []) > 1
    out: list[doc.Block] = [
        doc.Text(
            "; ".join(
                f"{a['arm']}: {a['scenario']}" + (" (baseline)" if a["arm"] == "A" else "")
                for a in f["arms"]
            )
        ),
        doc.Text(f"{headline(f)}; paired per-round ratios", "dim"),
    ]
    rows: list[list[Any]] = []
    for c in f["comparisons"]:
        row: list[Any] = [str(c["arm"])] + ([str(c["column"])] if several else [])
        row += [
            ratio_text(c["ratio"]),
            f"{ratio_text(c['low'])}–{ratio_text(c['high'])}",
            doc.Cell(verdict_text(c), _VERDICT_TONE.get(str(c["verdict"]), "")),
        ]
        rows.append(row)
    noise = float(f.get("noise", 0.01))
    out.append(
        doc.Table(
            "Paired comparison with the baseline",
            ["arm", *(["column"] if several else []), "ratio to A", "95% CI", "verdict"],
            rows,
            align="l" + ("l" if several else "") + "rrl",
            note=f"Faster or slower when the interval excludes 1 and the change exceeds "
            f"{noise:.0%}; the same when the interval lies within ±{noise:.0%}.",
        )
    )
    mrows: list[list[Any]] = []
    for m in f["medians"]:
        lo, hi = m.get("low_ns"), m.get("high_ns")
        mrows.append(
            [str(m["arm"])]
            + ([str(m["column"])] if several else [])
            + [
                fmt(m.get("median_ns")),
                f"{fmt(lo)}–{fmt(hi)}" if lo is not None else "—",
                f"{m['n']:,}" if isinstance(m.get("n"), int) else "—",
            ]
        )
    out.append(
        doc.Table(
            "Each arm's median",
            ["arm", *(["column"] if several else []), "median", "95% CI", "n"],
            mrows,
            align="l" + ("l" if several else "") + "rrr",
        )
    )
    for c in f["comparisons"]:
        if c.get("order_warning"):
            out.append(doc.Text(f"{c['arm']} {c['column']}: {c['order_warning']}", "note"))
    return out
