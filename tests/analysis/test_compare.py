import numpy as np
import pytest

from latscope.stats import compare
from synth import lognormal_ar1


def simulated_run(
    median: float,
    rng: np.random.Generator,
    workers: int = 10,
    per: int = 300,
    between: float = 0.06,
    within: float = 0.3,
) -> tuple[np.ndarray, list[int]]:
    """A run in ``workers`` processes: each process's median is ``median`` times a log-normal
    draw (sd ``between`` on the log scale, the run-to-run variation), its samples log-normal
    around it (sd ``within``)."""
    parts = [
        median * np.exp(between * rng.standard_normal() + within * rng.standard_normal(per))
        for _ in range(workers)
    ]
    return np.concatenate(parts), [per] * workers


def test_two_level_aa_pairs_rarely_differ_and_a_25_percent_shift_is_found() -> None:
    rng = np.random.default_rng(61)
    pairs, shifted = 300, 80
    called, excludes_one, found, wrong = 0, 0, 0, 0
    for i in range(pairs):
        a, sa = simulated_run(1000.0, rng)
        b, sb = simulated_run(1000.0, rng)
        c = compare(a, b, segments_a=sa, segments_b=sb, seed=i, n_boot=100)
        called += c.verdict in ("faster", "slower")
        excludes_one += not (c.median_ratio.low <= 1.0 <= c.median_ratio.high)
        if i < shifted:
            d, sd = simulated_run(1250.0, rng)
            s = compare(a, d, segments_a=sa, segments_b=sd, seed=i, n_boot=100)
            found += s.verdict == "slower"
            wrong += s.verdict == "faster"
    # 5% nominal; 7% leaves room for the binomial noise of 300 pairs (sd 1.3%)
    assert called <= 0.07 * pairs
    assert excludes_one <= 0.07 * pairs
    assert found >= 0.95 * shifted and wrong == 0


def test_pooled_interval_alone_would_call_aa_differences() -> None:
    """The reason for the two levels: the within-process interval ignores run-to-run
    variation, so it excludes 1 far more often than 5% of A/A pairs."""
    rng = np.random.default_rng(62)
    excl = 0
    for i in range(40):
        a, sa = simulated_run(1000.0, rng)
        b, sb = simulated_run(1000.0, rng)
        c = compare(a, b, segments_a=sa, segments_b=sb, seed=i, n_boot=200)
        assert c.levels is not None and c.levels.between is not None
        lo, hi = c.levels.within
        excl += not (lo <= 1.0 <= hi)
        assert c.median_ratio.low <= lo and c.median_ratio.high >= hi  # the hull
        assert "Welch" in c.median_ratio.method
    assert excl >= 8


def test_one_segment_needs_the_known_between_run_variation() -> None:
    rng = np.random.default_rng(63)
    a = lognormal_ar1(20_000, rng, phi=0.3)
    b = 1.3 * lognormal_ar1(20_000, rng, phi=0.3)
    unknown = compare(a, b, seed=1)
    assert unknown.verdict == "inconclusive"
    assert unknown.settle == "between-run variation unknown"
    # known variation of one process's median: 5% -> a 30% change is beyond it
    known = compare(a, b, seed=1, between_cv=0.05)
    assert known.verdict == "slower"
    assert known.levels is not None and known.levels.between_cv == 0.05
    # 20% variation between processes: a 30% change is not beyond it
    noisy = compare(a, b, seed=1, between_cv=0.2)
    assert noisy.verdict == "inconclusive"
    assert noisy.median_ratio.low < 1.0
    # A/A with a known small variation is the same within a 10% threshold
    c = lognormal_ar1(20_000, rng, phi=0.3)
    same = compare(a, c, seed=1, between_cv=0.01, noise=0.1)
    assert same.verdict == "same"


def test_twenty_percent_shift_has_the_right_direction():
    rng = np.random.default_rng(52)
    a, sa = simulated_run(1000.0, rng, per=2000)
    b, sb = simulated_run(1200.0, rng, per=2000)
    slower = compare(a, b, segments_a=sa, segments_b=sb, seed=2)
    assert slower.verdict == "slower"
    assert slower.median_ratio.estimate == pytest.approx(1.2, rel=0.05)
    assert slower.median_ratio.low < slower.median_ratio.estimate < slower.median_ratio.high
    assert slower.p99_ratio is not None and slower.p99_ratio.estimate == pytest.approx(1.2, rel=0.1)
    assert slower.mannwhitney_p < 1e-6
    assert "slower" in slower.explanation
    faster = compare(b, a, segments_a=sb, segments_b=sa, seed=2)
    assert faster.verdict == "faster"
    assert faster.median_ratio.high < 1.0


def test_verdict_rule() -> None:
    from latscope.stats.compare import verdict

    assert verdict(0.99, 1.01, 1.0, 0.02) == "same"
    assert verdict(1.01, 1.2, 1.1, 0.02) == "slower"  # excludes 1, change beyond 2%
    assert verdict(1.005, 1.03, 1.015, 0.02) == "inconclusive"  # excludes 1, change too small
    assert verdict(0.8, 0.9, 0.85, 0.02) == "faster"
    assert verdict(0.9, 1.2, 1.05, 0.02) == "inconclusive"


def test_tiny_noisy_samples_are_inconclusive():
    rng = np.random.default_rng(53)
    a = rng.lognormal(7.0, 1.0, 20)
    b = 1.03 * rng.lognormal(7.0, 1.0, 20)
    c = compare(a, b, seed=3, between_cv=0.01)
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


def test_between_run_range_gates_differences_but_never_makes_them_the_same() -> None:
    """A +10% ratio whose interval excludes 1: 'slower' against the 2% noise threshold alone,
    'inconclusive' when two runs of the command are known to differ by up to 18%, and never
    'same' because of that range; an interval within ±2% stays 'same'."""
    from latscope.stats.compare import verdict

    assert verdict(1.05, 1.15, 1.10, 0.02) == "slower"
    assert verdict(1.05, 1.15, 1.10, 0.02, run_noise=0.18) == "inconclusive"
    assert verdict(0.85, 0.95, 0.90, 0.02, run_noise=0.18) == "inconclusive"
    assert verdict(1.15, 1.35, 1.25, 0.02, run_noise=0.18) == "slower"
    assert verdict(0.99, 1.01, 1.00, 0.02, run_noise=0.18) == "same"
