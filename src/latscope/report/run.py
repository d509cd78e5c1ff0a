"""The report of one run: the full analysis of every column (``analyse``) and the blocks that
present it (``run_blocks``): the parts (parts.py), then per column the figures."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import heap
from ..env import emulation_caveat
from ..facts import said_codes, warnings_of
from ..measure.trace import load_explained
from .document import (
    Alert,
    Block,
    Heading,
    Image,
    Progress,
    Text,
    slug,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..record import Run
    from ..stats import ColumnAnalysis
from .parts import (
    _clock,
    _columns_table,
    _dependence,
    _distribution,
    _drift,
    _environment,
    _measurement,
    _outliers,
    _summary_table,
)

# plots.HIST_CUT: the report's linear histograms are cut there; the log-x one shows everything


@dataclass
class RunAnalysis:
    run: Run
    label: str
    columns: dict[str, ColumnAnalysis] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def analyse(
    run: Run,
    label: str,
    *,
    seed: int = 0,
    level: float = 0.95,
    progress: Progress | None = None,
) -> RunAnalysis:
    """Run the full analysis on every column of ``run`` (``rtt/2`` included)."""
    from ..stats import analyze_column

    ra = RunAnalysis(run, label)
    for col in run.all_columns:
        if progress:
            progress(f"analysing {label}: {col}")
        try:
            ra.columns[col] = analyze_column(
                run.values(col),
                # the start times read when the analysis needs them (its drift), not before
                functools.partial(run.column_times_s, col) if run.has_times else None,
                step_ns=run.column_step_ns(col),
                seed=seed,
                level=level,
                segments=run.column_segments(col),
            )
        except ValueError as e:
            ra.errors[col] = str(e)
        heap.give_back()  # what the column's analysis left free, before the next one
    return ra


class _Columns(Mapping[str, Any]):
    """A run's timed columns, each read when asked for (`Run.values`): a figure of every
    column (`plots.box`) holds one of them at a time, not all."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def __getitem__(self, column: str) -> Any:
        if column not in self.run.columns:
            raise KeyError(column)
        return self.run.values(column)

    def __iter__(self) -> Iterator[str]:
        return iter(self.run.columns)

    def __len__(self) -> int:
        return len(self.run.columns)


def _two(
    draw_left: Callable[[Axes], object], draw_right: Callable[[Axes], object], title: str
) -> Figure:
    """Two plots side by side under one title (the panels' own titles stay short)."""
    from .. import plots

    fig = plots.new_figure(ncols=2)
    draw_left(fig.axes[0])
    draw_right(fig.axes[1])
    fig.suptitle(title, fontsize=11)
    return fig


def _every_sample(x: Any, fit: Any, step: float | None, **kw: Any) -> Figure:
    """The histogram of every sample on a log axis with counts on a log axis: the tail is the
    point (a few samples far out show as plainly as the body)."""
    from .. import plots

    return plots.histogram(x, fit=fit, cut=100.0, log_x=True, log_count=True, step=step, **kw)


def _column_figures(ra: RunAnalysis, col: str, ca: ColumnAnalysis) -> list[Block]:
    from .. import plots

    run, label = ra.run, ra.label
    title = f"{col} — {label}"
    fit = ca.distribution.lognormal
    key = f"{run.id}-{slug(col)}"

    def values() -> Any:
        return run.values(col)

    def hist() -> Figure:
        x = plots.sorted_samples(values())  # once for both panels (plots.sorted)
        step = run.column_step_ns(col)
        return _two(
            lambda ax: plots.histogram(x, fit=fit, cut=plots.HIST_CUT, step=step, ax=ax),
            lambda ax: _every_sample(x, fit, step, ax=ax),
            title,
        )

    def series() -> Figure:
        return plots.time_series(
            values(),
            label=title,
            t=run.column_times_s(col) if run.has_times else None,
            drift=ca.drift,
            spikes=ca.outliers.spike_indices,
        )

    def dist() -> Figure:
        x = {col: plots.sorted_samples(values())}
        return _two(
            lambda ax: plots.ecdf(x, ax=ax),
            lambda ax: plots.tail(x, ax=ax),
            title,
        )

    def dep() -> Figure:
        return _two(
            lambda ax: plots.acf(ca.dependence, level=ca.level, ax=ax),
            lambda ax: plots.qq(fit, ax=ax),
            title,
        )

    axis = "time" if run.has_times else "iteration number"
    return [
        Image(
            f"{key}-hist",
            f"{col}: histogram up to p{plots.HIST_CUT:g} (left) and of every sample on a log axis, "
            "counts on a log axis too (right), with the fitted shifted log-normal — " + label,
            hist,
        ),
        Image(
            f"{key}-time",
            f"{col}: every sample against {axis}, the median of consecutive windows, change "
            "points (dashed) and spikes (red) — " + label,
            series,
        ),
        Image(
            f"{key}-ecdf",
            f"{col}: empirical CDF (left) and tail, 1 − p on a log scale (right) — {label}",
            dist,
        ),
        Image(
            f"{key}-acf",
            f"{col}: autocorrelation with the band for independent samples (left) and Q–Q plot "
            f"against the shifted log-normal (right) — {label}",
            dep,
        ),
    ]


def tail_histogram(ra: RunAnalysis, col: str) -> Image:
    """One column's histogram of every sample on a log axis, counts on a log axis too (the
    tail is the point): the one figure per column of a lab report's answer (LaTeX)."""

    run, ca = ra.run, ra.columns[col]

    def draw() -> Figure:
        from .. import plots

        fit, step = ca.distribution.lognormal, run.column_step_ns(col)
        x = plots.sorted_samples(run.values(col))
        return _every_sample(x, fit, step, label=f"{col} — {ra.label}")

    return Image(
        f"{run.id}-{slug(col)}-tail",
        f"{col}: histogram of every sample, on a log axis with counts on a log axis, and the "
        f"fitted shifted log-normal — {ra.label}",
        draw,
    )


def summary_rows(run: Run, level: float) -> dict[str, dict[str, Any]]:
    """The rows of `Run.summary(level)` by column (cached by the run)."""
    return {r["column"]: r for r in run.summary(level).iter_rows(named=True)}


def run_blocks(ra: RunAnalysis, *, figures: bool = True, anchor: str | None = None) -> list[Block]:
    """Everything about one run."""
    run = ra.run
    anchor = anchor or f"run-{slug(run.id)}"
    out: list[Block] = [
        Heading(f"Run {ra.label}", 2, anchor),
        Text(
            f"{run.id} — {run.benchmark}, {run.n:,} iterations; how it was measured (parameters, "
            "clock, environment) follows its columns",
            "dim",
        ),
        _columns_table(run),
        # what was measured, between which ends (the catalogue's lines, as `show` prints them)
        *(Text(d["text"], "dim" if d["style"] else "") for d in run.facts["display"]),
    ]
    caveat = emulation_caveat(run.env)
    if caveat:
        out.insert(2, Alert(caveat, code="emulated"))
    ab = (run.meta.get("run") or {}).get("ab")
    if isinstance(ab, dict):  # an interleaved run: its comparison first (latscope ab)
        from .ab import ab_blocks

        out[2:2] = ab_blocks(ab)
    # the run's warnings of no one column, in full (`latscope show --full`'s words)
    out += [Alert(w["text"], code=w["key"]) for w in warnings_of(run.facts) if w["column"] is None]
    rec = load_explained(run.dir)  # latscope explain: where the time goes
    if rec is not None:
        from .explain import blocks as explain_blocks

        out += explain_blocks(rec, anchor, figures)
    for col in run.all_columns:
        out.append(Heading(f"{col} — {ra.label}", 3, f"{anchor}-{slug(col)}", toc=col))
        if col in ra.errors:
            out.append(Alert(f"not analysed: {ra.errors[col]}", code="error"))
            continue
        ca = ra.columns[col]
        # the column's warnings: the run's facts' (worded once, facts/build.py), then the
        # analysis's that they do not say already
        said = [w for w in warnings_of(run.facts) if w["column"] == col]
        out.extend(Alert(w["text"], code=w["key"]) for w in said)
        skip = said_codes(run.facts, col)
        out.extend(Alert(w.message, code=w.code) for w in ca.warnings if w.code not in skip)
        if not said and not ca.warnings:
            out.append(Text("No warnings: nothing in the analysis says to distrust the figures."))
        out.append(_summary_table(ca, col, summary_rows(run, ca.level)[col]))
        out.append(_dependence(ca))
        out.append(_distribution(ca))
        out += _outliers(ca)
        out += _drift(ca)
        if figures:
            d = run.column_meta(col) if col in run.derived_columns else None
            if d is not None and not d.get("minus"):
                out.append(
                    Text(
                        f"{col} is {d.get('formula')}: its figures are those of {d.get('from')} "
                        f"with the latency axis divided by {d.get('divide_by')}.",
                        "note",
                    )
                )
            else:
                out += _column_figures(ra, col, ca)
    if figures and len(run.columns) > 0:

        def boxes() -> Figure:  # each column read when the box needs it (one at a time)
            from .. import plots  # matplotlib: when the figure is drawn

            groups = _Columns(run)
            return _two(
                lambda ax: plots.box(groups, ax=ax),
                lambda ax: plots.box(groups, violin=True, ax=ax),
                f"all columns — {ra.label}",
            )

        out.append(
            Image(
                f"{run.id}-box",
                f"All columns of {ra.label}: box plots (left; whiskers at 1.5 IQR, ◇ mean) and "
                "violins (right), log axis",
                boxes,
            )
        )
    how = "how it was measured"
    out.append(Heading(f"How {ra.label} was measured", 3, f"{anchor}-how", toc=how))
    out += _measurement(run)
    out += _clock(run)
    out += _environment(run)
    return out
