"""Synthetic latency data whose true properties are known."""

from __future__ import annotations

import numpy as np
from scipy import signal


def ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    """Stationary Gaussian AR(1) with unit variance: y_t = phi y_{t-1} + sqrt(1-phi^2) e_t."""
    e = rng.standard_normal(n + 1) * np.sqrt(1.0 - phi**2)
    e[0] = rng.standard_normal()
    return signal.lfilter([1.0], [1.0, -phi], e)[1:]


def lognormal_ar1(
    n: int,
    rng: np.random.Generator,
    *,
    phi: float = 0.0,
    sigma: float = 0.5,
    mu: float = float(np.log(1000.0)),
    loc: float = 200.0,
) -> np.ndarray:
    """Shifted log-normal latencies (ns) whose log scale is an AR(1): median loc + exp(mu)."""
    return loc + np.exp(mu + sigma * ar1(n, phi, rng))


def periodic_positions(n: int, period: int, jitter: int, rng: np.random.Generator) -> np.ndarray:
    """Positions k * period + uniform jitter in [-jitter, jitter] (jitter does not accumulate)."""
    base = np.arange(period // 2, n, period)
    pos = base + rng.integers(-jitter, jitter + 1, size=base.size)
    return pos[(pos >= 0) & (pos < n)]


def bursts(
    n: int, rate: float, shortest: int, longest: int, rng: np.random.Generator
) -> np.ndarray:
    """Sorted, distinct positions of bursts: onsets at Poisson times (probability ``rate`` per
    iteration), each burst ``shortest`` to ``longest`` (uniform) consecutive positions."""
    starts = np.flatnonzero(rng.random(n) < rate)
    lengths = rng.integers(shortest, longest + 1, size=starts.size)
    hit = np.repeat(starts, lengths) + (
        np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    )
    return np.unique(hit[hit < n])
