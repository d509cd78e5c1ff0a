import numpy as np
import pytest

from latscope.analysis import compare

from ._synth import lognormal_ar1


def test_identical_distributions_are_the_same():
    rng = np.random.default_rng(51)
    a = lognormal_ar1(50_000, rng)
    b = lognormal_ar1(50_000, rng)
    c = compare(a, b, seed=1)
    assert c.verdict == "same"
    assert c.median_ratio.low <= 1.0 <= c.median_ratio.high
    assert 0.98 <= c.median_ratio.low and c.median_ratio.high <= 1.02


def test_twenty_percent_shift_has_the_right_direction():
    rng = np.random.default_rng(52)
    a = lognormal_ar1(20_000, rng, phi=0.5)
    b = 1.2 * lognormal_ar1(20_000, rng, phi=0.5)
    slower = compare(a, b, seed=2)
    assert slower.verdict == "slower"
    assert slower.median_ratio.estimate == pytest.approx(1.2, rel=0.03)
    assert slower.median_ratio.low < slower.median_ratio.estimate < slower.median_ratio.high
    assert slower.p99_ratio is not None and slower.p99_ratio.estimate == pytest.approx(1.2, rel=0.1)
    assert slower.mannwhitney_p < 1e-6
    assert "slower" in slower.explanation
    faster = compare(b, a, seed=2)
    assert faster.verdict == "faster"
    assert faster.median_ratio.high < 0.98


def test_tiny_noisy_samples_are_inconclusive():
    rng = np.random.default_rng(53)
    a = rng.lognormal(7.0, 1.0, 20)
    b = 1.03 * rng.lognormal(7.0, 1.0, 20)
    c = compare(a, b, seed=3)
    assert c.verdict == "inconclusive"
    assert c.p99_ratio is None and c.p99_reason is not None


def test_shift_function_deciles():
    rng = np.random.default_rng(54)
    a = rng.lognormal(7.0, 0.5, 10_000)
    c = compare(a, 1.5 * a + 100.0)
    assert c.decile_probs.size == c.deciles_a.size == c.deciles_b.size == 9
    assert np.allclose(c.deciles_b, 1.5 * c.deciles_a + 100.0)
    assert np.allclose(c.decile_differences, 0.5 * c.deciles_a + 100.0)
    assert np.all(c.decile_ratios > 1.5)


def test_autocorrelated_runs_get_wider_intervals_than_independent_ones():
    rng = np.random.default_rng(55)
    ia, ib = lognormal_ar1(20_000, rng), lognormal_ar1(20_000, rng)
    da, db = lognormal_ar1(20_000, rng, phi=0.9), lognormal_ar1(20_000, rng, phi=0.9)
    ci = compare(ia, ib, seed=4).median_ratio
    cd = compare(da, db, seed=4).median_ratio
    assert (cd.high - cd.low) > 2.0 * (ci.high - ci.low)
    assert "blocks a: " in cd.method


def test_compare_rejects_too_few_samples():
    with pytest.raises(ValueError):
        compare(np.arange(1.0, 4.0), np.arange(1.0, 40.0))
