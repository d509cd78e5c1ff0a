"""What a run's catalogue entry says to show (its display lines, filled from the header) and
the checks between two figures of one run that should agree: syscall's batch figure against
its per-call median (the catalogue's ``check_figure``), a measured one-way time against half
the round trip. The terminal (`show`, `run`) and the HTML/Markdown/LaTeX reports say them in
these words."""

from __future__ import annotations

import re
from typing import Any

from .. import probe
from ..env import of_header
from ..units import fmt

_FIELD = re.compile(r"\{([A-Za-z0-9_.]+)(?::(words|onoff))?\}")


def header_field(meta: dict[str, Any], path: str) -> Any:
    """The header field a catalogue path names (``bench.path``, ``clock.overhead_ns``);
    None where the run does not record it."""
    v: Any = meta
    for part in path.split("."):
        if not isinstance(v, dict):
            return None
        v = v.get(part)
    return v


def fill(template: str, meta: dict[str, Any]) -> str | None:
    """A catalogue display template filled from a run's header: ``{path}`` is the field's
    value (a list joined with commas, a float to six significant figures), ``{path:words}``
    the same with underscores as spaces, ``{path:onoff}`` a true/false as on/off; None where
    the run does not record a field the template names (an older run)."""
    missing = False

    def one(m: re.Match[str]) -> str:
        nonlocal missing
        v = header_field(meta, m.group(1))
        if v is None:
            missing = True
            return ""
        if isinstance(v, (list, tuple)):
            text = ",".join(str(x) for x in v)
        elif isinstance(v, bool):
            text = ("on" if v else "off") if m.group(2) == "onoff" else ("true" if v else "false")
        elif isinstance(v, float):
            text = f"{v:.6g}"  # 0.0001, not 9.999999999999999e-05
        else:
            text = str(v)
        return text.replace("_", " ") if m.group(2) == "words" else text

    out = _FIELD.sub(one, template)
    return None if missing else out


def display_lines(meta: dict[str, Any]) -> list[tuple[str, str | None]]:
    """The catalogue's display lines of a run (``display.lines``: what was measured, between
    which ends), filled from its header, with their styles; those naming a field the run does
    not record are left out."""
    # the environment in its one schema, also for runs recorded before it was shared
    filled = {**meta, "env": of_header(meta) or meta.get("env")}
    out: list[tuple[str, str | None]] = []
    for ln in display(meta).get("lines") or []:
        text = fill(str(ln.get("template") or ""), filled)
        if text:
            out.append((text, ln.get("style")))
    return out


def display(meta: dict[str, Any]) -> dict[str, Any]:
    """How the lab shows a run of this benchmark (catalogue ``display``: roles,
    faults_expected_when, switches_column, lines, check_figure); empty for a benchmark the
    probe does not know (an import, another probe's run)."""
    d = (probe.entry(str(meta.get("benchmark") or "")) or {}).get("display")
    return d if isinstance(d, dict) else {}


def check_figure(run: Any, summ: Any, check: dict[str, Any]) -> tuple[str, bool, str] | None:
    """The catalogue's clock-free check of a column (``display.check_figure``: syscall's batch
    figure against the per-call median minus the clock's read cost), whether the two
    disagree beyond the median's interval, and the disagreement in one line; None where the
    run does not record what it needs."""
    meta = run.meta
    per = header_field(meta, str(check.get("value")))
    minus = header_field(meta, str(check.get("minus"))) if check.get("minus") else 0.0
    col = str(check.get("column"))
    if not isinstance(per, (int, float)) or not isinstance(minus, (int, float)) or not per:
        return None
    rows = summ.filter(summ["column"] == col)
    if rows.height == 0:
        return None
    r = rows.row(0, named=True)
    # an injected wait is in every timed region but not in the batch figure: taken out too
    inj = float(getattr(run, "inject_ns", 0.0) or 0.0)
    if inj and (run.column_meta(col) or {}).get("holds_inject") is False:
        inj = 0.0
    minus = minus + inj
    net = r["p50_ns"] - minus
    detail = fill(str(check.get("detail") or ""), meta)
    minus_words = str(check.get("minus") or "").replace(".", " ").removesuffix("_ns")
    what = f"median minus {minus_words.replace('_', ' ')}" if check.get("minus") else "median"
    if inj:
        what += f" and the injected {fmt(inj)}"
    line = (
        f"{check.get('label')}: {fmt(per)} per call"
        + (f" ({detail})" if detail else "")
        + f"; {col} {what}: {fmt(net)} (ratio {net / per:.2f})"
    )
    lo, hi = r["p50_ci_low_ns"], r["p50_ci_high_ns"]
    disagree = lo is not None and hi is not None and not (lo - minus <= per <= hi - minus)
    if disagree:
        workers = len(run.segments)
        pooled = f"pools {workers} worker processes" if workers > 1 else "is another process's"
        line += (
            f". They disagree beyond the median's 95% interval ({fmt(lo - minus)}–"
            f"{fmt(hi - minus)} net): the {check.get('label')} is one process's, measured at "
            f"one moment, while the {col} median {pooled}, at other moments: on a host that "
            "changes speed (latscope env --check) the two see different speeds. Quote the "
            "median with its interval."
        )
    short = f"{check.get('label')} {fmt(per)} per call, {col} median {fmt(net)} net: they disagree"
    return line, disagree, short


#: The latency kind of half a round trip (the catalogue's ``derived_columns``: rtt/2).
RTT_HALF = "one_way_rtt_half"


def one_way_checks(run: Any, summ: Any) -> list[tuple[str, str]]:
    """Where a run measures a one-way time (a column whose latency is a one-way kind, such as
    ping-pong's ``oneway`` from the shared clock) and the lab derives half the round trip
    (``rtt/2``), the two estimate the same time when both directions cost the same: a warning
    for each pair whose medians' 95% intervals do not overlap, with its likely cause; none
    where they agree or the run lacks an interval. Each as (text, its one-line form)."""
    out = []
    rows = {r["column"]: r for r in summ.iter_rows(named=True)}
    for half in run.derived_columns:
        if run.column_meta(half).get("latency") != RTT_HALF or half not in rows:
            continue
        for col in run.columns:
            lat = str(run.column_meta(col).get("latency") or "")
            if not lat.startswith("one_way") or lat == RTT_HALF or col not in rows:
                continue
            a, b = rows[col], rows[half]
            ivs = (a["p50_ci_low_ns"], a["p50_ci_high_ns"], b["p50_ci_low_ns"], b["p50_ci_high_ns"])
            if any(v is None for v in ivs) or not (ivs[1] < ivs[2] or ivs[3] < ivs[0]):
                continue
            ratio = a["p50_ns"] / b["p50_ns"] if b["p50_ns"] else float("nan")
            why = (
                "the return trip costs more than the forward one (it holds the responder's "
                "read of the clock and, on a shared CPU, its loop back to its receive)"
                if ratio < 1
                else "the forward trip costs more than the return one (a sleeper woken "
                "differently in each direction)"
            )
            out.append(
                (
                    f"{col} and {half} disagree: {col}'s median {fmt(a['p50_ns'])} "
                    f"({fmt(ivs[0])}–{fmt(ivs[1])}) is {ratio:.2f} of {half}'s "
                    f"{fmt(b['p50_ns'])} ({fmt(ivs[2])}–{fmt(ivs[3])}): {why}. Quote {col} as "
                    "the one-way time.",
                    f"{col} ({fmt(a['p50_ns'])}) and {half} ({fmt(b['p50_ns'])}) disagree: "
                    f"quote {col}",
                )
            )
    return out


#: A column is at the scheduler tick when at least this share of its samples lie within
#: `TICK_REACH` of one, two or three ticks (1/HZ) ...
TICK_SHARE = 0.5
TICK_REACH = 0.05
TICK_MULTIPLES = (1, 2, 3)
#: ... unless a note already says the figure is the scheduler's (notes.py).
TICK_NOTES = ("spin-one-cpu",)


def tick_checks(run: Any, hz: int | None, notes: list[str]) -> list[tuple[str, str, str]]:
    """Columns whose samples sit at the scheduler tick (at least `TICK_SHARE` of them within
    `TICK_REACH` of 1, 2 or 3 times 1/HZ, the kernel's ``CONFIG_HZ``): the figure is then the
    scheduler's (a wait that ends at a timer tick: a busy-waiting party preempted there, a
    sleep or a Python thread's switch rounded up to it), not the cost of the mechanism. Each
    as (column, text, its one-line form); none without HZ, or where a note says it already."""
    import numpy as np

    if not hz or hz <= 0 or any(n in TICK_NOTES for n in notes):
        return []
    tick = 1e9 / hz
    out = []
    for col in run.columns:
        x = np.asarray(run.values(col), dtype=np.float64)
        if x.size == 0:
            continue
        near = np.zeros(x.size, dtype=bool)
        for k in TICK_MULTIPLES:
            near |= np.abs(x - k * tick) <= TICK_REACH * k * tick
        share = float(near.mean())
        if share < TICK_SHARE:
            continue
        med = float(np.median(x))
        out.append(
            (
                col,
                f"{col}: {100 * share:.0f}% of the samples lie within {100 * TICK_REACH:g}% of "
                f"one, two or three scheduler ticks (1/HZ = {fmt(tick)} at HZ={hz}; median "
                f"{fmt(med)}): the figure is the scheduler's, a wait that ends at a timer tick "
                "(a busy-waiting party preempted there, or a sleep or a thread switch rounded "
                "up to it), not the cost of the mechanism. Put the parties on two CPUs, or let "
                "them block instead of spinning, to measure the mechanism.",
                f"{col} sits at the scheduler tick ({fmt(tick)}, HZ={hz}): the scheduler's "
                "figure, not the mechanism's",
            )
        )
    return out
