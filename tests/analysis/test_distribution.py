import numpy as np
import pytest
from scipy import stats

from latscope.stats import Prepared, describe_distribution, find_modes, fit_shifted_lognormal


@pytest.mark.parametrize(
    ("sigma", "mu", "loc"),
    [(0.5, np.log(1000.0), 200.0), (0.8, np.log(300.0), 1000.0), (0.3, np.log(5000.0), 0.0)],
)
def test_shifted_lognormal_fit_recovers_parameters(sigma, mu, loc):
    rng = np.random.default_rng(21)
    x = loc + np.exp(mu + sigma * rng.standard_normal(50_000))
    f = fit_shifted_lognormal(x, seed=1)
    assert f is not None and f.note is None
    assert f.sigma == pytest.approx(sigma, rel=0.05)
    assert f.mu == pytest.approx(mu, abs=0.05)
    assert f.loc == pytest.approx(loc, abs=0.05 * np.exp(mu))
    assert f.loc < x.min()
    assert f.median == pytest.approx(loc + np.exp(mu), rel=0.02)
    assert f.ks_statistic < 0.01 and f.fit_quality == "good"
    # Q-Q: at most 1000 points, both sides increasing and close to each other in the body.
    assert f.qq_theoretical.size == f.qq_sample.size <= 1000
    assert np.all(np.diff(f.qq_sample) >= 0) and np.all(np.diff(f.qq_theoretical) > 0)
    body = (f.qq_probabilities > 0.05) & (f.qq_probabilities < 0.95)
    assert np.allclose(f.qq_sample[body], f.qq_theoretical[body], rtol=0.03)


def test_fit_uses_a_subsample_and_bad_model_shows_in_ks():
    rng = np.random.default_rng(22)
    good = 200 + np.exp(7.0 + 0.5 * rng.standard_normal(300_000))
    f = fit_shifted_lognormal(good, max_points=50_000)
    assert f.n_fit == 50_000 and "50,000 of 300,000" in f.method
    bimodal = np.concatenate(
        [
            np.exp(7.0 + 0.1 * rng.standard_normal(7000)),
            np.exp(8.1 + 0.1 * rng.standard_normal(3000)),
        ]
    )
    g = fit_shifted_lognormal(bimodal)
    assert g.ks_statistic > 5 * f.ks_statistic and g.ks_statistic > 0.05
    assert g.fit_quality == "poor"


@pytest.mark.parametrize(("low_share", "spread"), [(0.5, 0.1), (0.3, 0.3), (0.4, 0.3)])
def test_two_levels_keep_loc_in_zero_to_min_and_fit_flagged_poor(low_share, spread):
    """Two levels (around 5 µs and 15 µs) are no shifted log-normal. Without the bound, the
    30/70 and 40/60 mixtures put loc below zero (about -10 µs and -0.4 µs)."""
    rng = np.random.default_rng(27)
    n = 100_000
    k = int(low_share * n)
    x = np.concatenate(
        [
            5000 * np.exp(spread * rng.standard_normal(k)),
            15000 * np.exp(spread * rng.standard_normal(n - k)),
        ]
    )
    rng.shuffle(x)
    f = fit_shifted_lognormal(x)
    assert 0.0 <= f.loc < x.min()
    assert f.ks_statistic > 0.05 and f.fit_quality == "poor"
    if low_share < 0.5:
        assert f.loc == 0.0 and "held at 0" in f.note and "below zero" in f.note
    # The reported goodness of fit is that of the reported (held) model, on all the samples.
    assert f.n_fit == n
    model = stats.lognorm(f.sigma, loc=f.loc, scale=f.scale)
    assert f.ks_statistic == pytest.approx(stats.kstest(x, model.cdf).statistic, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_unshifted_lognormal_held_at_zero_without_a_note(seed):
    """A log-normal without shift: the likelihood often peaks a little below zero; the fit is
    then held at loc = 0 with no note, and still recovers mu and sigma."""
    rng = np.random.default_rng(700 + seed)
    x = np.exp(np.log(5000.0) + 0.3 * rng.standard_normal(50_000))
    f = fit_shifted_lognormal(x, seed=1)
    assert 0.0 <= f.loc < 0.05 * 5000 and f.note is None
    assert f.sigma == pytest.approx(0.3, rel=0.05) and f.mu == pytest.approx(np.log(5000), abs=0.05)
    assert f.fit_quality == "good"


def test_two_modes_found_with_locations_and_masses():
    rng = np.random.default_rng(23)
    x = np.concatenate(
        [
            1000 * np.exp(0.1 * rng.standard_normal(70_000)),
            3000 * np.exp(0.1 * rng.standard_normal(30_000)),
        ]
    )
    rng.shuffle(x)
    m = find_modes(x)
    assert m.multimodal and m.locations.size == 2
    assert m.locations[0] == pytest.approx(1000, rel=0.05)
    assert m.locations[1] == pytest.approx(3000, rel=0.05)
    assert m.masses[0] == pytest.approx(0.7, abs=0.05) and m.masses[1] == pytest.approx(
        0.3, abs=0.05
    )
    assert m.n_kde == 20_000


def test_unimodal_with_rare_spikes_is_not_multimodal():
    rng = np.random.default_rng(24)
    x = 200 + np.exp(7.0 + 0.5 * rng.standard_normal(100_000))
    x[rng.choice(x.size, 300, replace=False)] *= 50  # 0.3% spikes: too few for a mode
    m = find_modes(x)
    assert not m.multimodal and m.locations.size == 1
    assert m.locations[0] == pytest.approx(200 + np.exp(7.0), rel=0.1)


def test_small_mode_below_mass_threshold_is_merged():
    rng = np.random.default_rng(25)
    x = np.concatenate(
        [
            1000 * np.exp(0.1 * rng.standard_normal(99_000)),
            5000 * np.exp(0.05 * rng.standard_normal(1000)),
        ]
    )
    assert not find_modes(x).multimodal  # 1% of the samples: below the 3% mass threshold


def test_non_positive_samples_and_degenerate_input():
    rng = np.random.default_rng(26)
    x = rng.lognormal(3.0, 0.5, 10_000) - 15.0  # some samples negative
    assert (x <= 0).any()
    d = describe_distribution(x)
    assert d.lognormal is not None and d.lognormal.loc < x.min()
    assert "<= 0" in d.lognormal.note  # no lower bound of 0 for such samples
    assert d.modes is not None and d.modes.locations.size >= 1
    const = describe_distribution(np.full(100, 7.0))
    assert const.lognormal is None and const.lognormal_reason is not None
    assert const.modes is None


STEP = 10.015


def _on_grid(x: np.ndarray, s: float = STEP) -> np.ndarray:
    return np.round(x / s) * s


def test_two_levels_one_step_apart_are_one_mode():
    """A warm read on a 10 ns clock: half the samples read 661 ns, half 671 ns. That is rounding
    of one level, not two code paths."""
    rng = np.random.default_rng(21)
    x = _on_grid(rng.choice([66.0, 67.0], size=20_000) * STEP + rng.normal(0.0, 0.2, 20_000))
    x[rng.random(x.size) < 0.02] += 5 * STEP  # a thin tail, as on real runs
    m = find_modes(Prepared(x, step=STEP))
    assert m is not None and not m.multimodal
    assert m.bandwidth_log >= STEP / np.median(x) * 0.999
    assert "clock step" in m.method


def test_modes_twenty_steps_apart_are_still_found_on_a_quantised_clock():
    rng = np.random.default_rng(22)
    n = 20_000
    low = rng.normal(60 * STEP, 1.5 * STEP, n // 2)
    high = rng.normal(80 * STEP, 1.5 * STEP, n // 2)
    x = _on_grid(np.concatenate([low, high]))
    rng.shuffle(x)
    m = find_modes(Prepared(x, step=STEP))
    assert m is not None and m.multimodal and m.locations.size == 2
    assert m.locations[0] == pytest.approx(60 * STEP, rel=0.03)
    assert m.locations[1] == pytest.approx(80 * STEP, rel=0.03)
