import json

import numpy as np
import pytest

from latscope.stats import MIN_BEYOND, summarize


def test_counts_beyond_and_withheld_tails_on_hand_made_array():
    s = summarize(np.arange(1.0, 101.0))  # 1, 2, ..., 100
    assert s.n == 100 and s.min == 1.0 and s.max == 100.0
    assert s.median == 50.5
    p = {q.name: q for q in s.percentiles}
    # p90 = 90.1 (linear): 91..100 lie above it -> exactly MIN_BEYOND, reported.
    assert p["p90"].raw_value == pytest.approx(90.1)
    assert p["p90"].n_beyond == 10 and p["p90"].value == pytest.approx(90.1)
    # p95 = 95.05: 96..100 above -> 5 < 10 -> withheld.
    assert p["p95"].n_beyond == 5 and p["p95"].value is None
    assert p["p99"].n_beyond == 1 and p["p99"].value is None
    # Lower percentiles count below: p10 = 10.9 has 1..10 below it.
    assert p["p10"].side == "below" and p["p10"].n_beyond == 10
    assert p["p10"].value == pytest.approx(10.9)
    assert p["p5"].n_beyond == 5 and p["p5"].value is None
    assert p["p25"].n_beyond == 25 and p["p50"].n_beyond == 50
    assert s.mad == 25.0 and s.mad_scaled == pytest.approx(1.4826 * 25.0)
    assert s.iqr == pytest.approx(75.25 - 25.75)
    assert MIN_BEYOND == 10


def test_counts_beyond_with_ties_are_strict():
    x = np.array([5.0] * 20 + [7.0] * 15 + [9.0] * 12)
    s = summarize(x)
    p99 = s.percentile("p99")
    assert p99.raw_value == 9.0
    assert p99.n_beyond == 0 and p99.value is None  # nothing lies strictly above 9
    p50 = s.percentile("p50")
    assert p50.raw_value == 7.0 and p50.n_beyond == 12


def test_percentiles_match_numpy_linear_and_tail_rule():
    rng = np.random.default_rng(0)
    x = rng.lognormal(7.0, 0.5, 10_000)
    s = summarize(x)
    for q in s.percentiles:
        assert q.raw_value == pytest.approx(np.percentile(x, q.percent), rel=1e-12)
        if q.side == "above":
            assert q.n_beyond == np.count_nonzero(x > q.raw_value)
        else:
            assert q.n_beyond == np.count_nonzero(x < q.raw_value)
    assert s.percentile("p99.9").n_beyond == 10 and s.percentile("p99.9").value is not None
    assert s.percentile("p99.99").n_beyond == 1 and s.percentile("p99.99").value is None
    assert s.mean == pytest.approx(x.mean())
    assert s.std == pytest.approx(x.std(ddof=1))
    assert s.cv == pytest.approx(x.std(ddof=1) / x.mean())
    assert s.geometric_mean == pytest.approx(np.exp(np.log(x).mean()))


def test_geometric_mean_needs_positive_samples_and_to_dict_is_json():
    s = summarize(np.array([0.0, 1.0, 2.0, 3.0]))
    assert s.geometric_mean is None
    d = s.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["percentiles"]["p99.99"]["value"] is None
    one = summarize(np.array([42.0]))
    assert one.std is None and one.cv is None
    json.dumps(one.to_dict(), allow_nan=False)


@pytest.mark.parametrize(
    "bad",
    [np.array([]), np.array([1.0, np.nan]), np.array([1.0, np.inf]), np.ones((2, 2))],
)
def test_bad_input_is_a_clear_error(bad):
    with pytest.raises(ValueError):
        summarize(bad)


def _quantised(x: np.ndarray, s: float) -> np.ndarray:
    return np.round(x / s) * s


def test_grouped_median_within_the_step_and_continuous_in_a_shift():
    """Data rounded to a grid of step s: the grouped median sits within a small fraction of s of
    the true median and follows a shift of the data smoothly; the order-statistic median jumps
    whole steps (what made a per-call figure read 130.2, 140.2 or 150.2 ns)."""
    s = 10.0
    rng = np.random.default_rng(11)
    base = 600.0 + rng.lognormal(np.log(40.0), 0.3, 50_000)  # spread of a few steps
    shifts = np.linspace(0.0, 2 * s, 41)
    grouped, plain, true = [], [], []
    for d in shifts:
        q = _quantised(base + d, s)
        grouped.append(summarize(q, step=s).median)
        plain.append(summarize(q).median)
        true.append(float(np.median(base + d)))
    grouped, plain, true = map(np.asarray, (grouped, plain, true))
    assert np.max(np.abs(grouped - true)) < 0.1 * s
    assert np.max(np.abs(np.diff(grouped))) < 0.15 * s  # shift steps are s / 20
    # The old method: a step function of the shift, off by up to half a step.
    assert np.max(np.abs(np.diff(plain))) == pytest.approx(s)
    assert np.max(np.abs(plain - true)) > 0.3 * s


def test_grouped_percentiles_rule_on_a_hand_made_array():
    # 10 x 100, 30 x 110, 60 x 120; step 10: the median is in the 120 group (40 below, 60 in it)
    x = np.repeat([100.0, 110.0, 120.0], [10, 30, 60])
    s = summarize(x, step=10.0)
    assert s.median == pytest.approx(115.0 + 10.0 * (50 - 40) / 60)
    assert s.percentile("p25").raw_value == pytest.approx(105.0 + 10.0 * (25 - 10) / 30)
    # Without the step: the order statistic (type 7).
    assert summarize(x).median == 120.0
    # Unquantised data with a step: neighbours closer than a step clip the intervals.
    y = np.array([1.0, 2.0, 3.0, 4.0])
    assert summarize(y, step=10.0).median == pytest.approx(2.5)


def test_interval_over_workers_never_wider_than_their_medians() -> None:
    """Workers in two blocks (6 at one level, 4 at another, 23% apart) are worth about two
    independent ones: the t interval (1 df) would span 0.7-8 us; it is capped at the range
    of the worker medians, which still contains both levels."""
    from latscope.stats.between import median_over_runs

    rng = np.random.default_rng(4)
    levels = [2740.0] * 6 + [2110.0] * 4
    x = np.concatenate([lv * np.exp(0.01 * rng.standard_normal(1000)) for lv in levels])
    low, high, method = median_over_runs(x, [1000] * 10)
    assert 2050 < low <= 2115 and 2735 <= high < 2800
    assert "capped at the range of the worker medians" in method
