"""An explained run's "where the time goes" (`latscope explain`, measure/explain.py), as text
lines that fit 80 columns: the parts of the traced loop's time, largest first, with the
blocking stacks under "blocked", the switches, and what the tracer cost."""

from __future__ import annotations

import textwrap
from typing import Any

from ..units import fmt

#: What each part is, in a reader's words (at most 32 characters).
MEANING = {
    "user": "on CPU, in user space",
    "blocked": "asleep in the kernel",
    "run queue, woken": "woken, waiting for its CPU",
    "run queue, preempted": "runnable, its CPU given away",
    "interrupts": "interrupt handlers, its CPU",
    "softirqs": "softirqs, its CPU",
    "other": "parts under 0.1% each",
}
#: Parts smaller than this share are summed as "other".
SMALL_SHARE = 0.001


def _meaning(part: str) -> str:
    if part.startswith("syscall "):
        return "on CPU, in the kernel for it"
    return MEANING.get(part, "")


def _row(name: str, ns: Any, share: Any, what: str, indent: int = 2) -> str:
    return f"{' ' * indent}{name[:26]:<26} {fmt(ns):>10} {100 * float(share or 0):5.1f}%  {what}"


def lines(rec: dict[str, Any]) -> list[str]:
    """The explanation as lines of at most 80 characters."""
    total = rec.get("traced_ns_per_iteration")
    out = [
        f"where the time goes ({rec.get('tracer', 'perf')}): the measuring thread, "
        f"{rec.get('rounds')} traced rounds",
        f"  of {rec.get('n'):,} iterations, {fmt(total)} per iteration traced",
        f"  {'part':<26} {'per iter':>10} {'share':>6}  what",
    ]
    small_ns = small_share = 0.0
    for p in rec.get("parts") or []:
        name = str(p.get("part"))
        if float(p.get("share") or 0) < SMALL_SHARE:
            small_ns += float(p.get("ns_per_iteration") or 0)
            small_share += float(p.get("share") or 0)
            continue
        out.append(_row(name, p.get("ns_per_iteration"), p.get("share"), _meaning(name)))
        if name == "blocked":
            for s in rec.get("blocked_stacks") or []:
                share = 100 * float(s.get("share") or 0)
                head = f"    {fmt(s.get('ns_per_iteration')):>10} {share:5.1f}%  "
                text = textwrap.wrap(str(s.get("stack")), 80 - len(head), break_on_hyphens=False)
                out.append(head + (text[0] if text else ""))
                out += [" " * len(head) + t for t in text[1:]]
    if small_share > 0:
        out.append(_row("other", small_ns, small_share, MEANING["other"]))
    lost = rec.get("lost_events")
    if isinstance(lost, int) and lost > 0:
        out.append(f"  warning: perf lost {lost:,} events (the machine was busy): the time around ")
        out.append("  them is left out, and a part may be short; explain again when it is quiet")
    sw = rec.get("switches_per_iteration") or {}
    out.append(
        f"  switches per iteration: {float(sw.get('voluntary') or 0):.2f} voluntary (asleep), "
        f"{float(sw.get('involuntary') or 0):.2f} involuntary"
    )
    for sentence in cost(rec):
        out += textwrap.wrap(sentence, 78, initial_indent="  ", subsequent_indent="  ")
    return out


def cost(rec: dict[str, Any]) -> list[str]:
    """What the tracer cost, as sentences (the terminal wraps them, a report prints them):
    the first column's median and the loop's time per iteration, untraced and traced."""
    ov = rec.get("overhead") or {}
    u, t = ov.get("untraced_p50_ns"), ov.get("traced_p50_ns")
    lu, lt = ov.get("untraced_loop_ns"), ov.get("traced_loop_ns")
    out = []
    if isinstance(u, (int, float)) and isinstance(t, (int, float)) and u > 0:
        out.append(
            f"The tracer's cost: {ov.get('column')} median {fmt(u)} untraced, {fmt(t)} traced "
            f"({t / u:.2f}x)."
        )
    if isinstance(lu, (int, float)) and isinstance(lt, (int, float)):
        out.append(
            f"The loop per iteration: {fmt(lu)} untraced, {fmt(lt)} traced (interleaved); the "
            "tracer's own time lies mostly right after each event it records: in 'user' after "
            "a call's exit, in the run-queue parts after a switch."
        )
    return out


def stacked_bar(rec: dict[str, Any]) -> Any:
    """The traced iteration as one horizontal bar, a segment per part (largest first), each
    labelled with its share where it is wide enough."""
    from ..plots import COLORS, new_figure
    from ..plots.common import _style, legend_below, set_title

    parts = [p for p in rec.get("parts") or [] if float(p.get("share") or 0) >= SMALL_SHARE]
    fig = new_figure(size=(7.0, 1.9), extra_height=0.6)
    ax = fig.axes[0]
    total = float(rec.get("traced_ns_per_iteration") or 0) or 1.0
    unit = 1e3 if total >= 1e3 else 1.0
    left = 0.0
    handles = []
    for i, p in enumerate(parts):
        w = float(p.get("ns_per_iteration") or 0) / unit
        h = ax.barh([0], [w], left=left, color=COLORS[i % len(COLORS)], height=0.6)
        if float(p.get("share") or 0) >= 0.08:
            ax.text(left + w / 2, 0, f"{100 * float(p['share']):.0f}%", ha="center",
                    va="center", fontsize=9, color="white")  # fmt: skip
        handles.append(h)
        left += w
    ax.set_yticks([])
    ax.set_xlabel(f"per traced iteration ({'µs' if unit == 1e3 else 'ns'})")
    _style(ax)
    set_title(ax, "where the time of the timed loop goes", f"traced with {rec.get('tracer')}")
    legend_below(ax, handles, [str(p.get("part")) for p in parts], ncols=3)
    return fig


def blocks(rec: dict[str, Any], anchor: str, figures: bool = True) -> list[Any]:
    """The explanation in a report (HTML, Markdown, LaTeX): a heading, the parts as a table,
    the blocking stacks, the switches and the tracer's cost as text, and the stacked bar."""
    from .document import Heading, Image, Table, Text

    rows = [
        [str(p.get("part")), fmt(p.get("ns_per_iteration")),
         f"{100 * float(p.get('share') or 0):.1f}%", _meaning(str(p.get("part")))]
        for p in rec.get("parts") or []
    ]  # fmt: skip
    out: list[Any] = [
        Heading("Where the time goes", 3, f"{anchor}-explain", toc="explain"),
        Table(
            f"Parts of the traced loop ({rec.get('rounds')} rounds of {rec.get('n'):,} "
            f"iterations, {fmt(rec.get('traced_ns_per_iteration'))} per iteration traced)",
            ["part", "per iteration", "share", "what"],
            rows,
            align="lrrl",
            note="The measuring thread's traced time, split into parts that sum to it "
            "(docs/explain.md).",
        ),
    ]
    stacks = rec.get("blocked_stacks") or []
    if stacks:
        out.append(
            Text(
                "Asleep in: "
                + "; ".join(
                    f"{s.get('stack')} ({fmt(s.get('ns_per_iteration'))}, "
                    f"{100 * float(s.get('share') or 0):.1f}%)"
                    for s in stacks
                )
            )
        )
    out += [Text(sentence, "dim") for sentence in cost(rec)]
    if figures:
        out.append(Image(f"{anchor}-explain", "Where the time of the timed loop goes, traced "
                         "(largest part first).", lambda: stacked_bar(rec)))  # fmt: skip
    return out


def sentence(rec: dict[str, Any], parts: int = 3) -> str:
    """The explanation in one sentence: its largest parts with their shares, the largest
    blocking stack named."""
    said = []
    stacks = rec.get("blocked_stacks") or []
    for p in (rec.get("parts") or [])[:parts]:
        name = str(p.get("part"))
        share = f"{100 * float(p.get('share') or 0):.0f}%"
        if name == "blocked" and stacks:
            said.append(f"{share} asleep in {stacks[0].get('stack')}")
        else:
            said.append(f"{share} {name}")
    return (
        f"Where the time goes (traced with {rec.get('tracer')}, the tracer's cost said in the "
        f"run's section): {'; '.join(said)}"
    )


def difference(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Which parts of the traced iteration differ between two explanations: per part, A's
    and B's time per iteration, B - A, and its share of the whole difference (largest
    change first)."""
    pa = {str(p.get("part")): float(p.get("ns_per_iteration") or 0) for p in a.get("parts") or []}
    pb = {str(p.get("part")): float(p.get("ns_per_iteration") or 0) for p in b.get("parts") or []}
    total = float(b.get("traced_ns_per_iteration") or 0) - float(
        a.get("traced_ns_per_iteration") or 0
    )
    rows = [
        {
            "part": k,
            "a_ns": pa.get(k, 0.0),
            "b_ns": pb.get(k, 0.0),
            "change_ns": pb.get(k, 0.0) - pa.get(k, 0.0),
            "share_of_change": (pb.get(k, 0.0) - pa.get(k, 0.0)) / total if total else None,
        }
        for k in {*pa, *pb}
    ]
    return sorted(rows, key=lambda r: -abs(r["change_ns"]))


def difference_lines(a: dict[str, Any], b: dict[str, Any], top: int = 6) -> list[str]:
    """The parts that differ most between A and B, as lines of at most 80 characters."""
    ta = float(a.get("traced_ns_per_iteration") or 0)
    tb = float(b.get("traced_ns_per_iteration") or 0)
    out = [
        f"what differs, B - A per traced iteration: {fmt(ta)} -> {fmt(tb)} "
        f"({'+' if tb >= ta else '-'}{fmt(abs(tb - ta))})",
        f"  {'part':<26} {'A':>10} {'B':>10} {'B - A':>11} {'of it':>6}",
    ]
    for r in difference(a, b)[:top]:
        ch = r["change_ns"]
        sh = r["share_of_change"]
        out.append(
            f"  {r['part'][:26]:<26} {fmt(r['a_ns']):>10} {fmt(r['b_ns']):>10} "
            f"{('+' if ch >= 0 else '-') + fmt(abs(ch)):>11} "
            f"{'' if sh is None else f'{100 * sh:5.0f}%':>6}"
        )
    sa = (a.get("blocked_stacks") or [{}])[0].get("stack")
    sb = (b.get("blocked_stacks") or [{}])[0].get("stack")
    if sa != sb:
        out.append(f"  asleep in, A: {sa or 'nowhere'}"[:80])
        out.append(f"             B: {sb or 'nowhere'}"[:80])
    out.append("  (both traced: the tracer's cost above is in both)")
    return out
