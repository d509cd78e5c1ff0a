import numpy as np
import pytest

from latscope.analysis import outliers, spike_periodicity

from ._synth import lognormal_ar1, periodic_positions


def test_tukey_classes_counted_on_both_sides_never_dropped():
    rng = np.random.default_rng(31)
    x = np.concatenate([rng.normal(1000, 10, 1000), [930, 800, 1070, 1200, 1300, 2000]])
    o = outliers(x)
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    assert o.iqr == pytest.approx(iqr)
    assert o.n_low_extreme == np.count_nonzero(x < q1 - 3 * iqr)
    assert o.n_low_mild == np.count_nonzero((x >= q1 - 3 * iqr) & (x < q1 - 1.5 * iqr))
    assert o.n_high_mild == np.count_nonzero((x > q3 + 1.5 * iqr) & (x <= q3 + 3 * iqr))
    assert o.n_high_extreme == np.count_nonzero(x > q3 + 3 * iqr)
    assert o.n_low_extreme >= 1 and o.n_high_extreme >= 3


def test_spike_indices_are_exactly_the_injected_ones():
    rng = np.random.default_rng(32)
    x = rng.normal(1000, 10, 50_000)
    where = np.sort(rng.choice(x.size, 40, replace=False))
    x[where] = 5000
    o = outliers(x)
    assert np.array_equal(o.spike_indices, where)
    assert o.n_spikes == 40 and o.spike_fraction == pytest.approx(40 / 50_000)
    mad = np.median(np.abs(x - np.median(x)))
    assert o.spike_threshold == pytest.approx(np.median(x) + 5 * 1.4826 * mad)


def test_zero_mad_falls_back_to_value_gap():
    x = np.array([100.0] * 90 + [101.0] * 5 + [1000.0] * 5)
    o = outliers(x)
    assert o.spike_scale == 1.0 and "smallest gap" in o.spike_scale_source
    assert o.n_spikes == 5 and np.array_equal(o.spike_indices, np.arange(95, 100))


@pytest.mark.parametrize(("period", "jitter"), [(1000, 50), (997, 150), (37, 3), (5000, 500)])
def test_periodic_spikes_give_their_period(period, jitter):
    rng = np.random.default_rng(period)
    n = 300_000
    x = lognormal_ar1(n, rng, phi=0.3, sigma=0.3)
    x[periodic_positions(n, period, jitter, rng)] *= 20
    t = np.arange(n) * 2e-6  # 2 µs per iteration
    p = outliers(x, t).periodicity
    assert p.confident and p.p_value < 1e-3
    assert p.period_iterations == pytest.approx(period, rel=0.005)
    assert p.period_seconds == pytest.approx(period * 2e-6, rel=0.005)
    assert p.strength > 0.2


@pytest.mark.parametrize("seed", range(5))
def test_random_spikes_have_no_confident_period(seed):
    rng = np.random.default_rng(100 + seed)
    n = 300_000
    x = lognormal_ar1(n, rng, phi=0.3, sigma=0.3)
    x[rng.random(n) < 1 / 1000] *= 20  # Poisson spikes at the same rate as above
    p = outliers(x).periodicity
    assert not p.confident and p.period_iterations is None and p.period_seconds is None
    assert p.p_value > 1e-3 and p.reason is not None


def test_too_few_spikes_for_a_period():
    p = spike_periodicity(np.array([10, 20, 30]), 1000)
    assert not p.confident and "at least" in p.reason


@pytest.mark.parametrize("seed", range(3))
def test_clustered_random_spikes_have_no_confident_period(seed):
    """Disturbances that hit a few consecutive iterations make the spike train non-Bernoulli;
    the background-normalised periodogram must not mistake that for a period."""
    rng = np.random.default_rng(200 + seed)
    n = 200_000
    x = lognormal_ar1(n, rng, phi=0.3, sigma=0.3)
    starts = np.flatnonzero(rng.random(n) < 5e-4)
    lengths = rng.geometric(0.3, size=starts.size)
    hit = np.concatenate([s + np.arange(k) for s, k in zip(starts, lengths, strict=True)])
    x[np.clip(hit, 0, n - 1)] *= 20
    p = outliers(x).periodicity
    assert not p.confident and p.period_iterations is None
