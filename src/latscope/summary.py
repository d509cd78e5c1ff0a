"""The per-column summary printed after a run: the median and its interval lead.

The interval's method follows the data (analysis/intervals.py): exact order statistics when
the samples are close to independent, a block bootstrap when they are autocorrelated; the
effective sample size is reported beside it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def column_summary(
    x: np.ndarray,
    confidence: float = 0.95,
    *,
    step_ns: float | None = None,
    segments: list[int] | None = None,
) -> dict[str, Any]:
    """`step_ns`: the clock's granularity (quantisation-aware estimates); `segments`: samples
    per worker process (the headline interval then includes between-run variation)."""
    from .analysis.between import median_over_runs
    from .analysis.intervals import confidence_intervals

    q = np.percentile(x, [50, 95, 99, 99.9])
    iv = confidence_intervals(x, level=confidence)
    over = median_over_runs(x, segments, confidence, floor=(iv.median.low, iv.median.high))
    return {
        "n": int(x.size),
        "min_ns": float(x.min()),
        "p50_ns": float(q[0]),
        "mean_ns": float(x.mean()),
        "std_ns": float(x.std(ddof=1)) if x.size > 1 else float("nan"),
        "p95_ns": float(q[1]),
        "p99_ns": float(q[2]),
        "p99.9_ns": float(q[3]),
        "max_ns": float(x.max()),
        "p50_ci_low_ns": over[0] if over else iv.median.low,
        "p50_ci_high_ns": over[1] if over else iv.median.high,
        "ci_method": over[2] if over else iv.median.method,
        "ess": float(iv.ess),
    }
