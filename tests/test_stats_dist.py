"""stats/dist.py gives scipy.stats's answers (its formulas, on scipy.special) on random inputs:
the analysis no longer imports scipy.stats (a second at start-up), and must not change a
figure for it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal, stats

from latscope.stats import dist


def test_the_distributions_are_scipy_stats() -> None:
    rng = np.random.default_rng(7)
    for q in rng.uniform(0.001, 0.999, 50):
        df = float(rng.uniform(1, 200))
        assert dist.t_ppf(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-12)
        assert dist.norm_ppf(q) == pytest.approx(stats.norm.ppf(q), rel=1e-12)
        x = float(rng.uniform(0, 30))
        assert dist.chi2_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-10, abs=1e-300)
        assert dist.f_sf(x / 10, 3, df) == pytest.approx(stats.f.sf(x / 10, 3, df), rel=1e-10)
        assert dist.norm_cdf(x - 15) == pytest.approx(stats.norm.cdf(x - 15), rel=1e-12)
    for _ in range(200):
        n = int(rng.integers(1, 5000))
        p = float(rng.uniform(0.001, 0.999))
        q = float(rng.uniform(0, 1))
        assert dist.binom_ppf(q, n, p) == int(stats.binom.ppf(q, n, p))
        k = np.arange(-2, n + 3)
        np.testing.assert_allclose(dist.binom_sf(k, n, p), stats.binom.sf(k, n, p), rtol=1e-12)
        np.testing.assert_allclose(dist.binom_cdf(k, n, p), stats.binom.cdf(k, n, p), rtol=1e-12)
        one = [dist.binom_sf1(int(j), n, p) for j in k[:: max(1, n // 50)]]
        assert one == dist.binom_sf(k[:: max(1, n // 50)], n, p).tolist()  # the same numbers
    assert dist.binom_ppf(0.0, 10, 0.5) == int(stats.binom.ppf(0.0, 10, 0.5)) == -1
    assert dist.binom_ppf(1.0, 10, 0.5) == int(stats.binom.ppf(1.0, 10, 0.5)) == 10


def test_ranks_kde_peaks_and_slopes_are_scipys() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 20, 300).astype(float)  # many ties
    np.testing.assert_array_equal(dist.rankdata(a), stats.rankdata(a))
    x = np.log(rng.lognormal(7, 0.4, 2000))
    grid = np.linspace(x.min(), x.max(), 512)
    for factor in (None, 0.05, 0.3):
        ours = dist.gaussian_kde(x, factor)(grid)
        theirs = stats.gaussian_kde(x, bw_method=factor)(grid)
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-15)
    dens = stats.gaussian_kde(np.concatenate([x, x[:300] + 1.5]), 0.08)(grid)
    dens[100:104] = dens[101]  # a plateau
    for prom in (0.0, 0.01, 0.05):
        got, proms = dist.find_peaks(dens, prom * dens.max())
        want, props = signal.find_peaks(dens, prominence=prom * dens.max())
        np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(proms, props["prominences"], rtol=1e-12)
    t = np.arange(40.0)
    y = 3.0 + 0.5 * t + rng.normal(0, 2, 40)
    y[5] = y[6]  # ties in y
    ts = dist.theil_sen(y, t, 0.95)
    ref = stats.theilslopes(y, t, alpha=0.95)
    assert ts == pytest.approx((ref.slope, ref.intercept, ref.low_slope, ref.high_slope))


def test_the_mann_whitney_test_is_scipys() -> None:
    """Continuous and tied samples, even and uneven sizes, equal and shifted, a small sample
    with ties (the normal approximation) and without (scipy's exact distribution), all values
    equal: the p-value scipy.stats.mannwhitneyu gives."""
    rng = np.random.default_rng(8)
    cases = [
        (rng.lognormal(5, 0.3, 2000), rng.lognormal(5, 0.3, 1500)),
        (rng.lognormal(5, 0.3, 3000), rng.lognormal(5.02, 0.3, 3000)),
        (rng.integers(0, 20, 500).astype(float), rng.integers(0, 21, 700).astype(float)),
        (rng.normal(0, 1, 9), rng.normal(0.5, 1, 12)),
        (np.array([1.0, 2.0, 2.0, 3.0]), rng.integers(0, 5, 30).astype(float)),
        (rng.normal(0, 1, 5), rng.normal(1, 1, 40)),
        (np.full(50, 7.0), np.full(60, 7.0)),
        (np.arange(100.0), np.arange(100.0) + 1000.0),
    ]
    for a, b in cases:
        want = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        assert dist.mannwhitneyu_p(a, b) == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_goodness_of_fit_statistics_are_scipys() -> None:
    rng = np.random.default_rng(5)
    v = 1000.0 + rng.lognormal(6, 0.5, 3000)
    sigma, loc, scale = 0.48, 990.0, float(np.exp(6.02))
    model = stats.lognorm(sigma, loc=loc, scale=scale)
    grid = np.linspace(900, 5000, 300)
    np.testing.assert_allclose(
        dist.lognorm_cdf(grid, sigma, loc, scale), model.cdf(grid), atol=1e-14
    )
    np.testing.assert_allclose(
        dist.lognorm_pdf(grid, sigma, loc, scale), model.pdf(grid), rtol=1e-10
    )
    q = np.linspace(0.001, 0.999, 99)
    np.testing.assert_allclose(dist.lognorm_ppf(q, sigma, loc, scale), model.ppf(q), rtol=1e-12)
    ks = dist.ks_statistic(v, lambda s: dist.lognorm_cdf(s, sigma, loc, scale))
    assert ks == pytest.approx(stats.kstest(v, model.cdf).statistic, rel=1e-12)
    y = np.log(v - loc)
    ad = stats.anderson(y, "norm", method="interpolate").statistic
    assert dist.anderson_normal(y) == pytest.approx(ad, rel=1e-10)


def test_the_analysis_and_a_comparison_do_not_import_scipy_stats() -> None:
    import subprocess
    import sys

    code = (
        "import sys, numpy as np; import latscope.measure.runner, latscope.report.full; "
        "import latscope.measure.ab; "
        "from latscope.stats import analyze_column; from latscope.stats.compare import compare; "
        "rng = np.random.default_rng(1); analyze_column(rng.lognormal(7, 0.3, 5000)); "
        "compare(rng.lognormal(7, 0.3, 3000), rng.lognormal(7, 0.3, 3000)); "
        "print('scipy.stats' in sys.modules, 'scipy.signal' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stderr
