"""Between-run variation of one run: its samples measured in W worker processes (segments),
and what varies between them.

One process's interval for the median describes the sampling error *within* that process: how
well its samples pin down the median of that process, with that memory layout and CPU
placement. Another process can land elsewhere (another physical page colour, another CPU,
another frequency), and its median can differ by more than the first one's interval allows.
A run is therefore measured in several worker processes by default (the probe's ``--workers auto``),
and this module shows what varies between them. The same statistics describe the repetitions
of a suite scenario (separate runs; ``suite/``).

For each timed column, `between()` reports:

- the median of each repetition (worker or run), with its within-process interval;
- the median of those medians;
- the spread between repetitions: their range (max - min, relative to the median of medians)
  and coefficient of variation (sd / mean of the repetition medians);
- an interval that accounts for both kinds of variation, from the repetition medians alone
  (each one already carries its process's sampling error plus the process-to-process
  variation): for R >= 3 a Student t interval on the logarithms of the repetition medians,
  transformed back, i.e. an interval for the geometric mean of the medians
  (``stats.between.t_interval``: medians of neighbouring repetitions that agree more than
  independent ones would count as fewer, ``effective_count``). Logarithms because run-to-run
  differences are multiplicative and the interval then stays positive. If a median is not
  positive (a one-way time from skewed clocks), the t interval is taken on the medians.
- a note when the repetition medians differ by more than their within-process intervals allow:
  the variation between processes then dominates, and one process's interval understates the
  uncertainty.

The within-process interval of a worker's median (``segment_reps``) is the distribution-free
order-statistic interval (binomial ranks around n/2): cheap, and enough to tell whether the
workers disagree by more than their own sampling noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..stats.between import t_interval
from ..units import fmt_bare, pick_unit

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..runs import Run

LEVEL = 0.95
MIN_REPS_FOR_INTERVAL = 3


@dataclass(frozen=True)
class Rep:
    """One repetition's median and its within-run interval (ns)."""

    run_id: str
    p50: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Between:
    column: str
    reps: tuple[Rep, ...]
    median_of_medians: float
    lowest: float
    highest: float
    spread_rel: float | None  # (highest - lowest) / median_of_medians
    cv: float | None  # sd / mean of the repetition medians (R >= 2)
    within_rel: float | None  # typical within-run half width / median (median over reps)
    interval: tuple[float, float] | None
    center: float | None  # the interval's centre (geometric mean of the medians)
    method: str
    note: str | None
    levels: Levels | None = None  # the medians at two distinct levels (`two_levels`)

    @property
    def r(self) -> int:
        return len(self.reps)


@dataclass(frozen=True)
class Levels:
    """Repetition (or worker) medians that sit at two distinct levels."""

    low: tuple[int, ...]  # indices of the repetitions at the lower level
    high: tuple[int, ...]
    low_median: float
    high_median: float

    @property
    def step_rel(self) -> float:
        return self.high_median / self.low_median - 1.0

    def describe(self, unit: tuple[str, float]) -> str:
        return (
            f"{len(self.low)} at {fmt_bare(self.low_median, unit)} {unit[0]}, "
            f"{len(self.high)} at {fmt_bare(self.high_median, unit)} {unit[0]} "
            f"(+{pct(self.step_rel)})"
        )


#: Two levels: the largest gap between sorted medians is at least this (relative) ...
LEVEL_GAP_MIN = 0.03
#: ... and at least this many times the typical within-run half width, and at least this
#: many times the larger spread inside either group.
LEVEL_GAP_WITHIN = 3.0
LEVEL_GAP_SPREAD = 2.0
LEVELS_MIN_REPS = 8


def two_levels(reps: Sequence[Rep]) -> Levels | None:
    """The medians split into two groups far apart compared with the spread inside each and
    with each run's own interval: a machine that switches between two states (on a virtual
    machine, often its host) rather than noise around one value. None when they do not, or
    with fewer than `LEVELS_MIN_REPS` medians (with fewer, one log-normal spread of medians
    calls two levels too often; with a CV of 3% between log-normal medians: 26% of the time at
    4, 1.6% at 8, 0.2% at 10, none at 20)."""
    if len(reps) < LEVELS_MIN_REPS:
        return None
    med = np.array([r.p50 for r in reps], dtype=float)
    if not np.all(np.isfinite(med)) or np.any(med <= 0):
        return None
    order = np.argsort(med, kind="stable")
    xs = med[order]
    gaps = xs[1:] / xs[:-1] - 1.0
    k = int(np.argmax(gaps))
    gap = float(gaps[k])
    lo_grp, hi_grp = xs[: k + 1], xs[k + 1 :]
    spread = max(lo_grp[-1] / lo_grp[0] - 1.0, hi_grp[-1] / hi_grp[0] - 1.0)
    halves = [
        (r.high - r.low) / 2 / r.p50
        for r in reps
        if r.low is not None and r.high is not None and r.p50 > 0
    ]
    within = float(np.median(halves)) if halves else 0.0
    if gap < LEVEL_GAP_MIN or gap < LEVEL_GAP_WITHIN * within or gap < LEVEL_GAP_SPREAD * spread:
        return None
    return Levels(
        tuple(int(i) for i in sorted(order[: k + 1])),
        tuple(int(i) for i in sorted(order[k + 1 :])),
        float(np.median(lo_grp)),
        float(np.median(hi_grp)),
    )


def between(
    column: str, reps: Sequence[Rep], level: float = LEVEL, what: str = "repetition medians"
) -> Between:
    """Within-run and between-run variation of one column over repetitions (module docs)."""
    if not reps:
        raise ValueError("no repetitions")
    med = np.array([r.p50 for r in reps], dtype=float)
    mom = float(np.median(med))
    lo, hi = float(med.min()), float(med.max())
    r = len(reps)
    spread = (hi - lo) / abs(mom) if r >= 2 and mom != 0 else None
    cv = float(med.std(ddof=1) / abs(med.mean())) if r >= 2 and med.mean() != 0 else None
    halves = [
        (x.high - x.low) / 2 / abs(x.p50)
        for x in reps
        if x.low is not None and x.high is not None and x.p50 != 0
    ]
    within = float(np.median(halves)) if halves else None
    interval: tuple[float, float] | None = None
    center: float | None = None
    ti = t_interval(med, level) if r >= MIN_REPS_FOR_INTERVAL else None
    if ti is not None:
        interval, center = (ti.low, ti.high), ti.center
        method = (
            f"{level:.0%} Student "
            + ti.describe(what)
            + (": geometric mean of the medians" if ti.log else "")
        )
    else:
        method = (
            f"no interval over repetitions: needs at least {MIN_REPS_FOR_INTERVAL} (range only)"
        )
    note = None
    lows = [x.low for x in reps if x.low is not None]
    highs = [x.high for x in reps if x.high is not None]
    if r >= 2 and len(lows) == r and len(highs) == r and max(lows) > min(highs):
        note = (
            f"{column}: the repetition medians differ by more than their within-run intervals "
            "allow: run-to-run variation dominates, so one run's interval understates the "
            "uncertainty; quote the interval over repetitions, and repeat more rather than "
            "measuring longer"
        )
    levels = two_levels(reps)
    return Between(
        column,
        tuple(reps),
        mom,
        lo,
        hi,
        spread,
        cv,
        within,
        interval,
        center,
        method,
        note,
        levels,
    )


def segment_reps(run: Run, column: str, level: float = LEVEL) -> list[Rep]:
    """One Rep per worker process of the run (its median and order-statistic interval)."""
    from ..stats import quantile_sorted
    from ..stats.between import split
    from ..stats.intervals import order_statistic_interval

    step = run.column_step_ns(column)
    out = []
    for i, part in enumerate(split(run.values(column), run.column_segments(column))):
        xs = np.sort(part)
        lo, hi, _ = order_statistic_interval(xs, 0.5, level, step=step)
        out.append(Rep(f"{run.id}#{i + 1}", quantile_sorted(xs, 0.5, step), lo, hi))
    return out


def between_segments(run: Run, level: float = LEVEL) -> list[Between]:
    """`between()` over the run's worker processes, for every timed (and derived) column."""
    return [
        between(c, segment_reps(run, c, level), level, "worker medians") for c in run.all_columns
    ]


def pct(x: float | None, sign: str = "") -> str:
    """A fraction as a percentage with two significant digits (never in e-notation)."""
    if x is None or not math.isfinite(x):
        return "—"
    v = 100 * x
    return f"{sign}{v:.0f}%" if abs(v) >= 10 else f"{sign}{v:.2g}%"


def table(bets: Sequence[Between], title: str | None = None, interval: bool = True) -> Table:
    """A compact rich table (fits 80 columns): per column the number of processes, the range
    and CV of their medians, and (``interval``) the interval over them. A run's own table
    already gives its median's one interval: beside it, ``interval=False``."""
    from rich import box
    from rich.table import Table

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("column", no_wrap=True)
    t.add_column("W", justify="right")
    t.add_column("worker medians", justify="right", no_wrap=True)
    t.add_column("CV", justify="right")
    t.add_column("within", justify="right")
    if interval:
        t.add_column("95% CI over workers", justify="right", no_wrap=True)
    for b in bets:
        unit = pick_unit([b.median_of_medians])
        rng = f"{fmt_bare(b.lowest, unit)}–{fmt_bare(b.highest, unit)} {unit[0]}"
        iv = (
            f"{fmt_bare(b.interval[0], unit)}–{fmt_bare(b.interval[1], unit)} {unit[0]}"
            if b.interval
            else "—"
        )
        row = [
            b.column,
            str(b.r),
            rng,
            pct(b.cv) + (" †" if b.note else ""),
            pct(b.within_rel, "±"),
        ]
        t.add_row(*row, *([iv] if interval else []))
    return t


def print_between(
    console: Console, bets: Sequence[Between], title: str | None = None, interval: bool = True
) -> None:
    """The table, each column's worker medians on one line, and the notes (one, shared);
    ``interval=False`` beside a run's table, which gives the median's one interval."""
    console.print(table(bets, title, interval))
    for b in bets:
        unit = pick_unit([b.median_of_medians])
        meds = " ".join(fmt_bare(x.p50, unit) for x in b.reps)
        console.print(f"[dim]{b.column} worker medians ({unit[0]}): {meds}[/dim]")
    if bets:
        r = bets[0].r
        legend = (
            "[dim]worker medians: lowest–highest; CV: their coefficient of variation; within: "
            "typical half width of one worker's interval for its median"
        )
        if interval and r >= MIN_REPS_FOR_INTERVAL:
            legend += f"; CI over workers: Student {bets[0].method.split('Student ', 1)[-1]}"
        elif interval:
            legend = f"[dim]{bets[0].method}"
        console.print(legend + "[/dim]")
    noted = [b.column for b in bets if b.note]
    if noted:
        console.print(
            f"[yellow]†[/yellow] {', '.join(noted)}: the worker medians differ by more than "
            "their within-process intervals allow: variation between processes dominates (the "
            "median's interval is the one over workers); add workers (--repeat) rather than "
            "samples."
        )
    two = [b for b in bets if b.levels is not None]
    if two:
        b = two[0]
        assert b.levels is not None
        unit = pick_unit([b.median_of_medians])
        console.print(
            f"[yellow]two levels:[/yellow] {', '.join(x.column for x in two)}: the worker "
            f"medians sit at two levels ({b.column}: {b.levels.describe(unit)}), each tight: "
            "the machine switched between two states during the run (on a virtual machine, "
            "often its host), not noise around one value. The median depends on the share of "
            "workers at each level: compare runs whose shares agree, or add workers "
            "(--repeat) so the share is measured; to compare scenarios, 'latscope ab' measures "
            "them interleaved, so both see the same state."
        )
