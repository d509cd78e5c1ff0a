"""The summary of a run: one table of statistics (`STATS`) from which every view derives.

`STATS` says, for each figure, its name on the command line (`key`, e.g. ``--stat p99.9``), its
label, its kind, the column it has in `Run.summary()` and in the store's summary.parquet (the
same name in both), how it is computed and whether the tail rule applies. The run table
(`latscope run`, `latscope show`), `latscope ls`, summary.parquet (`store.SUMMARY_COLUMNS`),
`latscope history` and the reports read this table; none lists the figures itself.

How the figures are computed (`column_summary`): everything comes from
`stats.summarize(x, step=...)` (min, max, mean, std and the percentiles, numpy's "linear"
method) and `stats.confidence_intervals(x, level, step=...)` (the interval of the median
and the effective sample size), with the clock's step passed on, so quantisation-aware
estimates reach every view. With several worker processes (`segments`) the headline interval
of the median comes from `stats.between.median_over_runs` and includes the variation between
processes.

The tail rule is `stats.summary`'s, applied once, by `column_summary` (through
`summarize`): a tail percentile (p95, p99, p99.9) with fewer than `MIN_BEYOND` samples above it
is withheld: `None` in `Run.summary()`, null in summary.parquet, "—" wherever it is printed,
and the number of samples above it is kept next to it (``<column>_n_beyond``) so that every
view can say why (`withheld_reason`). The views read the null; they do not apply the rule
again. The median is not a tail figure: it is always given (it has its interval instead).

Importing this module does not import the analysis (numpy, scipy): `latscope ls` reads the
table without paying for it; the percentiles' probabilities and the rule's threshold are looked
up in `stats.summary` when used.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import polars as pl


@dataclasses.dataclass(frozen=True)
class Stat:
    """One figure of the summary.

    key: its name on the command line and in JSON ("p99.9"); label: its column header;
    kind: "count" (n), "time" (ns, not a percentile), "percentile" (ns) or "number" (ess);
    column: its column in `Run.summary()` and summary.parquet; tail: whether the tail rule
    withholds it; brief: shown in the compact views (`latscope ls`); doc: how it is computed.
    `percent` (percentiles) is the probability `stats.summary.PERCENTILES` gives the key."""

    key: str
    label: str
    kind: str
    column: str
    doc: str
    tail: bool = False
    brief: bool = False

    @property
    def percent(self) -> float | None:
        if self.kind != "percentile":
            return None
        from .stats.summary import PERCENTILES

        return dict(PERCENTILES)[self.key]

    @property
    def is_time(self) -> bool:
        """A duration in ns (printed with a unit)."""
        return self.kind in ("time", "percentile")

    @property
    def beyond_column(self) -> str | None:
        """The column counting the samples above a tail percentile (None for other figures)."""
        return f"{self.column.removesuffix('_ns')}_n_beyond" if self.tail else None


def _pct(key: str, *, brief: bool = False) -> Stat:
    median = key == "p50"
    return Stat(
        key=key,
        label=key,
        kind="percentile",
        column=f"{key.replace('.', '')}_ns",
        doc=(
            "median (numpy 'linear' percentile)"
            if median
            else f"{key[1:]}th percentile (numpy 'linear'); withheld with too few samples "
            "above it (stats.summary.MIN_BEYOND)"
        ),
        tail=not median,
        brief=brief,
    )


#: The figures of every summary, in the order they are shown.
STATS: tuple[Stat, ...] = (
    Stat("n", "n", "count", "n", "samples recorded", brief=True),
    Stat("min", "min", "time", "min_ns", "smallest sample"),
    _pct("p50", brief=True),
    Stat("mean", "mean", "time", "mean_ns", "arithmetic mean"),
    Stat("std", "std", "time", "std_ns", "standard deviation (ddof=1); none for one sample"),
    _pct("p95"),
    _pct("p99", brief=True),
    _pct("p99.9", brief=True),
    Stat("max", "max", "time", "max_ns", "largest sample"),
    Stat(
        "ess",
        "ESS",
        "number",
        "ess",
        "effective sample size: independent samples carrying the information of the n "
        "(autocorrelated) ones",
    ),
)

#: The interval of the median: columns of `Run.summary()` and summary.parquet besides STATS.
P50_CI_LOW = "p50_ci_low_ns"
P50_CI_HIGH = "p50_ci_high_ns"
CI_METHOD = "ci_method"
#: The run table's header for the interval of the median (at the default level).
P50_CI_LABEL = "95% CI of p50"


def stat(key: str) -> Stat:
    """The figure called `key` ("p99.9"); KeyError for an unknown one."""
    for s in STATS:
        if s.key == key:
            return s
    raise KeyError(key)


def summary_columns() -> list[tuple[str, str]]:
    """(column, polars dtype name) of the figures in `Run.summary()` and summary.parquet, in
    order: each figure, a tail percentile's count of samples above it right after it, the
    interval of the median after the median."""
    out: list[tuple[str, str]] = []
    for s in STATS:
        out.append((s.column, "Int64" if s.kind == "count" else "Float64"))
        if s.beyond_column:
            out.append((s.beyond_column, "Int64"))
        if s.key == "p50":
            out += [(P50_CI_LOW, "Float64"), (P50_CI_HIGH, "Float64"), (CI_METHOD, "Utf8")]
    return out


# ------------------------------------------------------------------------------- reading rows


def value(row: Mapping[str, Any], s: Stat) -> float | None:
    """A figure of a summary row (`Run.summary()` or summary.parquet), None when withheld or
    unknown. A tail percentile whose count of samples above is missing (a summary kept by an
    older latscope that could not be recomputed) is withheld too: its rule cannot be checked."""
    v = row.get(s.column)
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return None
    if s.tail and row.get(s.beyond_column or "") is None:
        return None
    return float(v)


def withheld(row: Mapping[str, Any], s: Stat) -> bool:
    """Whether a tail percentile of a row with samples is withheld (printed as "—")."""
    return s.tail and row.get("n") is not None and value(row, s) is None


def withheld_reason(row: Mapping[str, Any], s: Stat) -> str | None:
    """Why a tail percentile of a summary row is withheld ("withheld: only 2 samples lie
    above p99.9; ..."), or None when it is given (or the figure has no tail rule)."""
    if not withheld(row, s):
        return None
    k = row.get(s.beyond_column or "")
    if k is None:
        return (
            f"withheld: this run's summary has no count of samples above {s.key} (kept by an "
            "older latscope, and it could not be recomputed from the samples)"
        )
    from .stats.summary import too_few_beyond

    return "withheld: " + too_few_beyond(s.key, (s.percent or 0.0) / 100.0, int(k), "above")


def withheld_notes(rows: list[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One line per withheld tail figure and reason, with the labels of the rows it holds
    for: "open, write, read, close p99.9 — withheld: only 5 samples lie above ..."."""
    by: dict[tuple[str, str], list[str]] = {}
    for label, row in rows:
        for s in STATS:
            why = withheld_reason(row, s)
            if why:
                by.setdefault((s.key, why), []).append(label)
    return [
        f"{', '.join(x for x in labels if x)} {key} — {why}".strip()
        for (key, why), labels in by.items()
    ]


#: The short legend printed under tables that show "—" for a withheld figure.
WITHHELD_LEGEND = "—: withheld, too few samples lie above the percentile"


# ------------------------------------------------------------------------------- computing


def column_summary(
    x: np.ndarray,
    confidence: float = 0.95,
    *,
    step_ns: float | None = None,
    segments: list[int] | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """The figures of STATS for one column (keys: `summary_columns()`).

    `step_ns`: the clock's granularity (quantisation-aware estimates); `segments`: samples
    per worker process (the headline interval then includes between-run variation);
    `overwrite`: ``x`` (float64) is the caller's to give up: the samples aligned across the
    workers are made in its memory, not in a second array of its size (the same figures)."""
    from .stats import confidence_intervals, summarize
    from .stats.between import aligned, median_over_runs, segment_medians

    summ = summarize(x, step=step_ns)
    iv = confidence_intervals(x, level=confidence, step=step_ns)
    floor = (iv.median.low, iv.median.high)
    meds = None
    if segments and len(segments) >= 2:
        # the within-run part of the interval: the workers' level differences are the
        # between-run part, which the t interval over their medians carries
        meds = segment_medians(x, segments, step_ns).medians  # before x is aligned
        al = aligned(x, segments, step_ns, medians=meds, in_place=overwrite)
        within = confidence_intervals(al, level=confidence, step=step_ns, percentiles=()).median
        # ... unless it reaches the samples' extremes: too few stretches between level
        # shifts within the workers (t with 1 or 2 df) bound nothing, and a floor of the
        # smallest to the largest sample would hide what the workers' medians do say
        bounded = within.low > float(al.min()) and within.high < float(al.max())
        floor = (within.low, within.high) if bounded else None
    over = median_over_runs(x, segments, confidence, floor=floor, step=step_ns, medians=meds)
    plain = {"n": summ.n, "min": summ.min, "mean": summ.mean, "std": summ.std, "max": summ.max}
    out: dict[str, Any] = {}
    for s in STATS:
        if s.key == "ess":
            out[s.column] = float(iv.ess)
        elif s.kind == "percentile":
            p = summ.percentile(s.key)
            # the median is no tail figure: given even where summarize would withhold it
            out[s.column] = p.value if s.tail else p.raw_value
            if s.beyond_column:
                out[s.beyond_column] = int(p.n_beyond)
        else:
            v = plain[s.key]
            out[s.column] = int(v) if s.kind == "count" else (None if v is None else float(v))
        if s.key == "p50":
            out[P50_CI_LOW] = over[0] if over else iv.median.low
            out[P50_CI_HIGH] = over[1] if over else iv.median.high
            out[CI_METHOD] = over[2] if over else iv.median.method
    return out


def shown_percentile(p: Any) -> float | None:
    """The value the summary gives for an `stats.Percentile` (the report's table uses it,
    so that it agrees with the run table): the median always, tail percentiles by the rule."""
    return p.raw_value if p.percent == 50.0 else p.value


#: The columns `Run.summary` starts with: which run each row is of (so that the summaries
#: of several runs stack into one frame).
IDENTITY = ("run_id", "benchmark", "params")


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """`Run.summary()`: one row per column ("column", then `summary_columns()`), typed, so
    that a figure withheld in every row is still a Float64 column of nulls."""
    import polars as pl

    dtypes = {"Int64": pl.Int64, "Float64": pl.Float64, "Utf8": pl.Utf8}
    schema = {"column": pl.Utf8, **{c: dtypes[t] for c, t in summary_columns()}}
    return pl.DataFrame(rows, schema=schema)
