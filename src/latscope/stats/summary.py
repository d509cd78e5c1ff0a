"""Descriptive statistics of one latency column.

Percentiles use numpy's default ``"linear"`` method (Hyndman & Fan type 7: linear interpolation
between the order statistics at fractional position ``p * (n - 1)``), computed from one sort of
the data. When the clock's ``step`` is known the data are quantised to it, and percentiles are
those of the grouped distribution instead (each distinct value stands for an interval one step
wide centred on it, the grouped CDF is interpolated linearly across it; see
``_common.quantile_sorted``), so a median moves smoothly with the data rather than in whole
steps; the IQR uses the same rule.

Each percentile also reports how many samples lie *beyond* it: above it for p50 and the
upper percentiles, below it for p1, p5, p10 and p25. A percentile is only as trustworthy as the
number of samples that define its tail, so when fewer than ``MIN_BEYOND`` samples lie beyond a
percentile its ``value`` is ``None`` (the report prints "—"): with 1,000 samples, "p99.9" would be
the maximum in disguise.

The spread figures are the classical ones (``std`` with ``ddof=1``, ``cv = std / mean``) next to
robust ones (MAD, IQR); latency data are skewed and heavy-tailed, so the robust figures are the
ones to read. ``mad_scaled`` is ``1.4826 * MAD``, which estimates the standard deviation for
normal data. The geometric mean is only defined when every sample is positive (``None``
otherwise; samples can be zero or negative after subtracting the timer overhead).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ._common import MAD_SCALE, Prepared, Result, as_prepared, mad_sorted, quantile_sorted

#: A percentile needs at least this many samples beyond it to be reported.
MIN_BEYOND = 10

#: (name, probability in percent) of the percentiles in every summary.
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p1", 1.0),
    ("p5", 5.0),
    ("p10", 10.0),
    ("p25", 25.0),
    ("p50", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("p99.99", 99.99),
)


@dataclasses.dataclass(frozen=True)
class Percentile(Result):
    """One percentile. ``value`` is None when fewer than ``MIN_BEYOND`` samples lie beyond it;
    ``raw_value`` is the number numpy would give regardless (for plots, never for reports)."""

    name: str
    percent: float
    value: float | None
    raw_value: float
    n_beyond: int
    side: str  # "above" or "below": which side "beyond" means


@dataclasses.dataclass(frozen=True)
class Summary(Result):
    n: int
    min: float
    max: float
    mean: float
    std: float | None  # ddof=1; None for a single sample
    median: float
    mad: float
    mad_scaled: float
    iqr: float
    cv: float | None  # None when the mean is zero or std is undefined
    geometric_mean: float | None
    percentiles: tuple[Percentile, ...]
    min_beyond: int = MIN_BEYOND

    def percentile(self, name: str) -> Percentile:
        for p in self.percentiles:
            if p.name == name:
                return p
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["percentiles"] = {p.name: p.to_dict() for p in self.percentiles}
        return d


def count_beyond(xs: npt.NDArray[np.float64], value: float, side: str) -> int:
    """Number of samples strictly above (``side="above"``) or below ``value`` in sorted ``xs``."""
    if side == "above":
        return int(xs.size - np.searchsorted(xs, value, side="right"))
    return int(np.searchsorted(xs, value, side="left"))


def percentile_side(percent: float) -> str:
    return "above" if percent >= 50.0 else "below"


def too_few_beyond(name: str, p: float, beyond: int, side: str) -> str:
    """Why the percentile ``name`` (probability ``p``) is withheld: only ``beyond`` samples
    lie on its ``side``, fewer than `MIN_BEYOND`; and how many iterations would do."""
    # rounded first: 10 / (1 - 0.999) is 10000.000000000009 in binary floating point
    share = (1.0 - p) if side == "above" else p
    need = math.ceil(round(MIN_BEYOND / share, 6))
    return (
        f"only {beyond} {'sample lies' if beyond == 1 else 'samples lie'} {side} {name}; "
        f"at least {MIN_BEYOND} are needed "
        f"(measure at least {need:,} iterations)"
    )


def summarize(x: npt.ArrayLike | Prepared, step: float | None = None) -> Summary:
    """Descriptive statistics of latencies ``x`` (ns). See the module docstring for the rules.
    ``step``: the clock's granularity (ns), when known."""
    prep = as_prepared(x, step=step)
    xs = prep.sorted
    n = prep.n
    mean = float(np.mean(prep.x))
    std = float(np.std(prep.x, ddof=1)) if n > 1 else None
    step = prep.step
    median = quantile_sorted(xs, 0.5, step)
    mad = mad_sorted(xs, median)  # from the sorted copy: no array of the column's size
    q1 = quantile_sorted(xs, 0.25, step)
    q3 = quantile_sorted(xs, 0.75, step)
    cv = std / mean if (std is not None and mean != 0.0) else None
    gmean: float | None = None
    if xs[0] > 0.0:
        gmean = float(np.exp(np.mean(np.log(prep.x))))

    pcts = []
    for name, percent in PERCENTILES:
        raw = quantile_sorted(xs, percent / 100.0, step)
        side = percentile_side(percent)
        beyond = count_beyond(xs, raw, side)
        pcts.append(
            Percentile(
                name=name,
                percent=percent,
                value=raw if beyond >= MIN_BEYOND else None,
                raw_value=raw,
                n_beyond=beyond,
                side=side,
            )
        )
    return Summary(
        n=n,
        min=float(xs[0]),
        max=float(xs[-1]),
        mean=mean,
        std=std if std is None or math.isfinite(std) else None,
        median=median,
        mad=mad,
        mad_scaled=MAD_SCALE * mad,
        iqr=q3 - q1,
        cv=cv,
        geometric_mean=gmean,
        percentiles=tuple(pcts),
    )
