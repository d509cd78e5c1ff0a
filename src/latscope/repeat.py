"""Repetitions: one benchmark measured in R separate probe processes, and what varies between
them.

One run's confidence interval for the median describes the sampling error *within* that run:
how well its samples pin down the median of that process, on that boot, with that memory
layout and CPU placement.  A second process can land elsewhere (another physical page colour,
another CPU, another frequency), and its median can differ by more than the first run's
interval allows.  Repeating the run in fresh processes shows that between-run variation.

For each timed column, `between()` reports:

- the median of each repetition, with its within-run interval;
- the median of those medians (the figure to quote);
- the spread between repetitions: their range (max - min, relative to the median of medians)
  and coefficient of variation (sd / mean of the repetition medians);
- an interval that accounts for both kinds of variation, from the repetition medians alone
  (each one already carries its run's sampling error plus the run-to-run variation): for
  R >= 3 a Student t interval on the logarithms of the repetition medians (R - 1 degrees of
  freedom), transformed back, i.e. an interval for the geometric mean of the run medians.
  Logarithms because run-to-run differences are multiplicative (a slower page colour slows
  every call by a factor) and the interval then stays positive.  With R = 3 the t quantile is
  4.3, so the interval is honest and wide; with R < 3 no interval is given (the range only).
  If a median is not positive (a one-way time from skewed clocks), the t interval is taken on
  the medians themselves.
- a note when the repetition medians differ by more than their within-run intervals allow:
  the run-to-run variation then dominates, and one run's interval understates the
  uncertainty.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from .units import fmt, fmt_bare, pick_unit

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from .runs import Run
    from .store import Store

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

    @property
    def r(self) -> int:
        return len(self.reps)


def between(column: str, reps: Sequence[Rep], level: float = LEVEL) -> Between:
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
    if r >= MIN_REPS_FOR_INTERVAL:
        tq = float(stats.t.ppf(0.5 + level / 2, r - 1))
        if (med > 0).all():
            logs = np.log(med)
            m, h = float(logs.mean()), tq * float(logs.std(ddof=1)) / math.sqrt(r)
            interval, center = (math.exp(m - h), math.exp(m + h)), math.exp(m)
            method = (
                f"{level:.0%} Student t interval over the {r} repetition medians, on their "
                f"logarithms ({r - 1} df): geometric mean of the run medians"
            )
        else:
            m, h = float(med.mean()), tq * float(med.std(ddof=1)) / math.sqrt(r)
            interval, center = (m - h, m + h), m
            method = f"{level:.0%} Student t interval over the {r} repetition medians ({r - 1} df)"
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
    return Between(
        column, tuple(reps), mom, lo, hi, spread, cv, within, interval, center, method, note
    )


def reps_of(runs: Sequence[Run], column: str) -> list[Rep]:
    out = []
    for run in runs:
        s = run.summary()
        row = s.filter(s["column"] == column)
        if row.height == 0:
            continue
        d = row.row(0, named=True)
        out.append(Rep(run.id, d["p50_ns"], d["p50_ci_low_ns"], d["p50_ci_high_ns"]))
    return out


def between_runs(runs: Sequence[Run], level: float = LEVEL) -> list[Between]:
    """`between()` for every timed (and derived) column of the runs, in their order."""
    if not runs:
        return []
    cols = runs[0].columns + runs[0].derived_columns
    return [between(c, reps_of(runs, c), level) for c in cols if reps_of(runs, c)]


def pct(x: float | None, sign: str = "") -> str:
    """A fraction as a percentage with two significant digits (never in e-notation)."""
    if x is None or not math.isfinite(x):
        return "—"
    v = 100 * x
    return f"{sign}{v:.0f}%" if abs(v) >= 10 else f"{sign}{v:.2g}%"


def table(bets: Sequence[Between], title: str | None = None) -> Table:
    """A rich table: one row per column, within-run and between-run variation side by side."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    t.add_column("column", style="bold")
    t.add_column("R", justify="right")
    t.add_column("unit")
    t.add_column("repetition medians", justify="right")
    t.add_column("median of medians", justify="right", style="bold")
    t.add_column("within-run CI", justify="right")
    t.add_column("between runs: range (CV)", justify="right")
    t.add_column("95% interval over reps", justify="right")
    for b in bets:
        unit = pick_unit([b.median_of_medians])
        meds = " ".join(fmt_bare(x.p50, unit) for x in b.reps)
        rng = (
            f"{fmt_bare(b.lowest, unit)}–{fmt_bare(b.highest, unit)} ({pct(b.cv)})"
            if b.r >= 2
            else "—"
        )
        iv = (
            f"{fmt_bare(b.interval[0], unit)}–{fmt_bare(b.interval[1], unit)}"
            if b.interval
            else "—"
        )
        t.add_row(
            b.column,
            str(b.r),
            unit[0],
            meds,
            fmt_bare(b.median_of_medians, unit),
            pct(b.within_rel, "±"),
            rng,
            iv,
        )
    return t


def print_between(console: Console, bets: Sequence[Between], title: str | None = None) -> None:
    console.print(table(bets, title))
    if bets:
        console.print(f"[dim]interval over repetitions: {bets[0].method}[/dim]")
    for b in bets:
        if b.note:
            console.print(f"[yellow]note:[/yellow] {b.note}")


# ------------------------------------------------------------------------------- measuring


def new_group_id(bench: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{bench}-x{secrets.token_hex(2)}"


def measure_repeated(
    bench: str,
    params: Mapping[str, Any],
    repeat: int,
    *,
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    store: str | Store | None = None,
    tags: Mapping[str, Any] | None = None,
    progress: Callable[[int], Callable[[int, int], None] | None] | None = None,
    on_run: Callable[[int, Run], None] | None = None,
) -> list[Run]:
    """Run the benchmark `repeat` times, each in its own probe process, one after the other.

    Every run is tagged with `repeat_group` (shared), `repetition` (1..R) and `repeat` (R).
    progress(i) gives the progress callback of repetition i; on_run(i, run) is called as each
    one is kept.  Ctrl-C stops after the current probe has cleaned up; kept runs stay."""
    from .errors import BadInput
    from .runs import measure
    from .store import Store as _Store

    if repeat < 1:
        raise BadInput(f"--repeat {repeat}: must be 1 or more")
    st = store if isinstance(store, _Store) else _Store(store)
    group = new_group_id(bench)
    runs: list[Run] = []
    for i in range(1, repeat + 1):
        run = measure(
            bench,
            params,
            n=n,
            warmup=warmup,
            clock=clock,
            store=st,
            progress=progress(i) if progress else None,
            tags={**(tags or {}), "repeat_group": group, "repetition": i, "repeat": repeat},
        )
        runs.append(run)
        if on_run:
            on_run(i, run)
    return runs


def cli_run(args: Any, params: dict[str, Any], console: Console, err_console: Console) -> int:
    """`latscope run BENCH --repeat R`: R probe processes, then within- and between-run
    variation per column."""
    from contextlib import ExitStack

    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    from .report_text import params_line
    from .store import Store

    st = Store(args.store)
    r = args.repeat
    pstr = " ".join(f"{k}={v}" for k, v in params.items())
    console.print(
        f"[bold]{args.bench}[/bold] {pstr + ' ' if pstr else ''}— {r} repetitions, each in its "
        "own process"
    )
    with ExitStack() as stack:
        prog = None
        if not getattr(args, "quiet", False) and err_console.is_terminal:
            prog = stack.enter_context(
                Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    TaskProgressColumn(),
                    TimeElapsedColumn(),
                    console=err_console,
                    transient=True,
                )
            )
        task = prog.add_task(f"{args.bench} {pstr}", total=r) if prog else None

        def progress(i: int) -> Callable[[int, int], None] | None:
            if prog is None:
                return None

            def cb(done: int, total: int) -> None:
                prog.update(
                    task,
                    completed=i - 1 + (done / total if total else 0),
                    description=f"repetition {i}/{r}",
                )

            return cb

        def on_run(i: int, run: Run) -> None:
            s = run.summary().row(0, named=True)
            console.print(
                f"repetition {i}/{r}: run {run.id}  {s['column']} p50 {fmt(s['p50_ns'])}"
                + (
                    f" [{fmt(s['p50_ci_low_ns'])} – {fmt(s['p50_ci_high_ns'])}]"
                    if s["p50_ci_low_ns"] is not None
                    else ""
                )
            )

        runs = measure_repeated(
            args.bench,
            params,
            r,
            n=args.n,
            warmup=args.warmup,
            clock=args.clock,
            store=st,
            progress=progress,
            on_run=on_run,
        )
    first = runs[0].meta
    console.print(
        f"[dim]{first['benchmark']} {params_line(first)} — n={first['n']} per repetition after "
        f"{first['warmup']} warm-up iterations; clock {first['clock']['name']}[/dim]"
    )
    print_between(
        console, between_runs(runs), title=f"within- and between-run variation, {r} repetitions"
    )
    warnings = sorted({w for run in runs for w in run.meta["run"].get("probe_warnings") or []})
    for w in warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")
    console.print(
        f"[dim]runs {', '.join(x.id for x in runs)} kept in {st.root} "
        f"(repeat group {runs[0].meta['run']['tags']['repeat_group']})[/dim]"
    )
    return 0
