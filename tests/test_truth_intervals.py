"""Intervals and periods against a known truth (issue 22, items 4 and 5).

- The 95% interval of the median covers the true median 93-97% of the time on the three kinds
  of hidden structure (AR(1), spikes, regime switching) at n = 1,000, 5,000 and 100,000
  (``bench/synthetic_truth.py`` runs more replications). A count is accepted when its 99%
  Clopper-Pearson range meets [0.93, 0.97].
- The intervals respect the data: never below 0 for a duration, never outside the range of the
  samples (half a clock step either side on a quantised clock), each holding its estimate, and
  monotone in the percentile (property tests on random data).
- A period that recurs 12 times among random spikes is found (>= 90% at n = 50,000, period
  4,096), never a period that is not a multiple or divisor of the true one, and no period is
  claimed in >= 95% of the same runs without it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from latscope.stats import Prepared, confidence_intervals, outliers
from latscope.stats.bounds import data_range
from synth import (
    STEP,
    bursts,
    lognormal_ar1,
    periodic_spikes,
    quantise,
    regimes,
    regimes_median,
    regimes_with_states,
    spiky,
    spiky_median,
)

LEVEL = 0.95
WINDOW = (0.93, 0.97)


def consistent(hits: int, reps: int, window: tuple[float, float] = WINDOW) -> bool:
    """Whether ``hits`` of ``reps`` is consistent with a coverage in ``window``: the 99%
    Clopper-Pearson range of the count meets it."""
    lo = stats.beta.ppf(0.005, hits, reps - hits + 1) if hits else 0.0
    hi = stats.beta.ppf(0.995, hits + 1, reps - hits) if hits < reps else 1.0
    return lo <= window[1] and hi >= window[0]


def _median_covers(x: np.ndarray, truth: float, seed: int) -> bool:
    iv = confidence_intervals(
        Prepared(quantise(x), step=STEP), seed=seed, percentiles=(), n_boot=200
    )
    m = iv.median
    assert m.low is not None and m.high is not None
    return m.low <= truth <= m.high


PROCESSES = {
    "ar1": (lambda n, rng: lognormal_ar1(n, rng, phi=0.8), lambda: 1200.0),
    "spiky": (spiky, spiky_median),
    "regimes": (regimes, regimes_median),
}
#: replications per size: fewer at n = 100,000 (the bench runs 150 there)
REPS = {1_000: 600, 5_000: 300, 100_000: 40}


@pytest.mark.parametrize("n", sorted(REPS))
@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_median_interval_covers_93_to_97_percent(name: str, n: int) -> None:
    gen, truth = PROCESSES[name]
    t = truth()
    reps = REPS[n]
    if name == "regimes" and n == 1_000:
        # Regimes last ~400 iterations: one run in twelve never leaves its first regime and
        # holds independent samples of one level, from which no interval that is right for
        # independent data can reach the long-run median (it covers ~1 in 8 of them, when the
        # level is the middle one). So the window is asked of the runs that saw the level move;
        # over all runs the ceiling is about 92% (bench/synthetic_truth.py).
        moved = [0, 0]
        stayed = [0, 0]
        for r in range(reps):
            x, state = regimes_with_states(n, np.random.default_rng(40_000 + r))
            hit = _median_covers(x, t, r)
            cell = moved if np.any(state != state[0]) else stayed
            cell[0] += hit
            cell[1] += 1
        assert consistent(*moved), moved
        assert stayed[1] < 0.15 * reps
        assert (moved[0] + stayed[0]) / reps >= 0.85
        return
    hits = sum(_median_covers(gen(n, np.random.default_rng(40_000 + r)), t, r) for r in range(reps))
    assert consistent(hits, reps), (hits, reps)


def test_short_regime_runs_say_their_interval_may_be_too_narrow() -> None:
    """A run of 1,000 that saw the level move two or three times cuts its batches at the shifts
    and says that few stretches were seen."""
    for r in range(40):
        x, state = regimes_with_states(1_000, np.random.default_rng(50_000 + r))
        ivs = confidence_intervals(Prepared(quantise(x), step=STEP), percentiles=())
        if ivs.level_shifts:
            m = ivs.median
            assert "stretches between level shifts" in m.method
            assert ivs.n_blocks == len(ivs.level_shifts) + 1
            if ivs.n_blocks < 8:
                assert m.reason is not None and "shifted" in m.reason
            return
    pytest.fail("no level shift found in 40 runs of regimes")


# --------------------------------------------------------------------- intervals the data allow


@st.composite
def columns(draw: st.DrawFn) -> tuple[np.ndarray, float | None]:
    """Latency columns of many shapes: i.i.d., heavy-tailed, dependent, switching, with huge
    stalls, quantised, with zeros, constant, and (differences of clocks) negative."""
    n = draw(st.sampled_from([5, 9, 30, 120, 700, 3_000]))
    kind = draw(
        st.sampled_from(
            ["lognormal", "pareto", "ar1", "regimes", "stalls", "zeros", "constant", "negative"]
        )
    )
    seed = draw(st.integers(0, 2**31 - 1))
    quantised = draw(st.booleans())
    rng = np.random.default_rng(seed)
    if kind == "lognormal":
        x = rng.lognormal(7.0, draw(st.sampled_from([0.05, 0.5, 1.5])), n)
    elif kind == "pareto":
        x = 100.0 * (1.0 + rng.pareto(draw(st.sampled_from([0.8, 1.5, 3.0])), n))
    elif kind == "ar1":
        x = lognormal_ar1(n, rng, phi=draw(st.sampled_from([0.5, 0.9, 0.99])), sigma=0.4)
    elif kind == "regimes":
        x = regimes(n, rng)
    elif kind == "stalls":  # a few stalls 10,000 x the typical call, as in the issue
        x = lognormal_ar1(n, rng, phi=0.97, sigma=0.2, mu=math.log(3000.0), loc=0.0)
        x[rng.choice(n, max(1, n // 300), replace=False)] = 24.6e6
    elif kind == "zeros":  # a coarse clock: most readings are 0 ticks
        x = np.where(rng.random(n) < 0.6, 0.0, 1000.0 * rng.integers(1, 4, n))
    elif kind == "constant":
        x = np.full(n, 170.0)
    else:
        x = rng.normal(0.0, 50.0, n) + 20.0
    step = None
    if quantised:
        step = 10.015
        x = np.round(x / step) * step
    return x, step


ORDER = ("median", "p90", "p95", "p99", "p99.9")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(columns())
def test_intervals_respect_the_data(col: tuple[np.ndarray, float | None]) -> None:
    x, step = col
    prep = Prepared(x, step=step)
    ivs = confidence_intervals(prep, n_boot=200)
    lo_r, hi_r = data_range(prep)
    duration = bool(x.min() >= 0.0)
    assert lo_r <= x.min() and hi_r >= x.max()
    if duration:
        assert lo_r >= 0.0
    present = [ivs.percentile(nm) for nm in ORDER]
    present = [iv for iv in present if iv.low is not None and iv.high is not None]
    for iv in present:
        assert iv.low is not None and iv.high is not None
        assert lo_r <= iv.low <= iv.estimate <= iv.high <= hi_r, iv
    for a, b in zip(present, present[1:], strict=False):  # monotone in the percentile
        assert a.low <= b.low and a.high <= b.high, (a, b)  # type: ignore[operator]
    m = ivs.mean
    if m.low is not None and m.high is not None:
        assert m.low <= m.estimate <= m.high
        if duration:
            assert m.low >= 0.0
            # never below what the quantiles' lower bounds imply
            med = ivs.median
            if med.low is not None:
                assert m.low >= min(0.5 * med.low, m.estimate) - 1e-9


def test_a_stalled_run_gets_a_mean_above_zero_and_monotone_tails() -> None:
    """The issue's run: a mean's interval of -7.9 to 27.4 us, a p90 interval up to the
    maximum (24.6 ms) next to a p95 interval of 2.89-4.06 us. Dependent samples around 3 us
    with a stall and a slow episode in a run of 1,000."""
    rng = np.random.default_rng(5)
    x = lognormal_ar1(1_000, rng, phi=0.97, sigma=0.2, mu=math.log(3000.0), loc=0.0)
    x[[100, 101, 102]] = 24.6e6 / 3
    x[700:760] *= 30
    ivs = confidence_intervals(x)
    m = ivs.mean
    assert m.low is not None and m.low > 0.5 * ivs.median.low > 0.0  # type: ignore[operator]
    assert "lower end raised" in m.method
    highs = [ivs.percentile(nm).high for nm in ORDER if ivs.percentile(nm).high is not None]
    assert highs == sorted(highs)
    top = [ivs.percentile(nm) for nm in ORDER if ivs.percentile(nm).high == x.max()]
    assert all("does not bound it from above" in iv.method for iv in top)


# ------------------------------------------------------------------------------------ periods

N_PERIOD = 50_000
PERIOD = 4_096


def _period(seed: int, **kw: float) -> float | None:
    x = periodic_spikes(N_PERIOD, np.random.default_rng(seed), **kw)
    return outliers(x).periodicity.period_iterations


def _harmonic(found: float, true: float) -> bool:
    """A multiple or divisor (up to 16 x): 4,096 / 29 = 141.2, claimed before, is neither."""
    ratio = found / true if found > true else true / found
    return abs(ratio - round(ratio)) <= 0.02 and round(ratio) <= 16


@pytest.mark.parametrize(
    "kw",
    [
        {"jitter": 0, "random_rate": 1e-3},
        {"jitter": 10, "random_rate": 1e-3},
        {"jitter": 0, "random_rate": 4e-3},
    ],
    ids=["exact", "jitter10", "dense-random"],
)
def test_a_period_of_twelve_recurrences_is_found(kw: dict[str, float]) -> None:
    """Spikes every 4,096 iterations, 12 of them in 50,000 samples, among 50 (or 200) random
    spikes in an AR(1) body: before, never found, and 49, 141, 178 were claimed."""
    reps = 30
    found = [_period(60_000 + r, period=PERIOD, **kw) for r in range(reps)]
    claimed = [f for f in found if f is not None]
    assert all(_harmonic(f, PERIOD) for f in claimed), claimed
    true = sum(abs(f - PERIOD) <= 0.005 * PERIOD for f in claimed)
    assert true >= 0.9 * reps, found


def test_no_period_is_claimed_without_one() -> None:
    reps = 40
    claims = [_period(70_000 + r, period=0, random_rate=1e-3) for r in range(reps)]
    claims += [_period(71_000 + r, period=0, random_rate=4e-3) for r in range(reps)]
    for r in range(reps):  # bursts of 1 to 10 spikes at random onsets
        rng = np.random.default_rng(72_000 + r)
        x = periodic_spikes(N_PERIOD, rng, period=0, random_rate=0.0)
        x[bursts(N_PERIOD, 2e-3, 1, 10, rng)] *= 20.0
        claims.append(outliers(x).periodicity.period_iterations)
    wrong = [c for c in claims if c is not None]
    assert len(wrong) <= 0.05 * len(claims), wrong
