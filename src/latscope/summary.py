"""The per-column summary printed after a run (median and its interval lead)."""

from __future__ import annotations

from typing import Any

import numpy as np


def column_summary(x: np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    from .analysis.intervals import quantile_interval

    q = np.percentile(x, [50, 95, 99, 99.9])
    ci = quantile_interval(x, 0.5, confidence=confidence)
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
        "p50_ci_low_ns": ci.low,
        "p50_ci_high_ns": ci.high,
        "ci_method": ci.method,
        "ess": ci.ess,
    }
