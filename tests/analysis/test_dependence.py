import numpy as np
import pytest

from latscope.stats import autocorrelation, dependence
from synth import ar1


def test_iid_is_independent_and_ess_is_n():
    rng = np.random.default_rng(11)
    x = rng.lognormal(7.0, 0.5, 20_000)
    d = dependence(x)
    assert d.ljung_box_p is not None and d.ljung_box_p > 0.01
    assert 0.85 < d.ess / d.n < 1.15
    assert d.independent
    assert d.lags[0] == 0 and d.acf[0] == 1.0 and d.acf.size == 101


@pytest.mark.parametrize("phi", [0.5, 0.8])
def test_ar1_ess_matches_theory(phi):
    rng = np.random.default_rng(12)
    n = 50_000
    d = dependence(np.exp(ar1(n, phi, rng)))
    expected = n * (1 - phi) / (1 + phi)
    assert d.ess == pytest.approx(expected, rel=0.25)
    assert d.acf[1] == pytest.approx(phi, abs=0.03)
    assert d.acf[2] == pytest.approx(phi**2, abs=0.03)
    assert d.ljung_box_p < 1e-6
    assert not d.independent
    assert d.block_length > 1.0


def test_robust_transform_ignores_spikes_and_monotone_maps():
    rng = np.random.default_rng(13)
    y = ar1(30_000, 0.8, rng)
    x = 200.0 + np.exp(7.0 + 0.5 * y)
    spiky = x.copy()
    spiky[rng.choice(x.size, 60, replace=False)] = 1e7  # 60 spikes at 10 ms
    raw_acf1 = np.corrcoef(spiky[:-1], spiky[1:])[0, 1]
    assert raw_acf1 < 0.3  # on the raw scale the spikes hide the dependence
    d = dependence(spiky)
    assert d.acf[1] == pytest.approx(0.8, abs=0.03)
    # Invariance: the normal scores of y and of exp(y) are identical.
    assert np.allclose(dependence(y).acf, dependence(np.exp(y)).acf)


def test_ties_from_a_coarse_clock_create_no_dependence():
    rng = np.random.default_rng(14)
    x = np.round(rng.lognormal(0.0, 0.3, 20_000))  # values 0..4 "ticks", heavy ties
    assert np.unique(x).size < 8
    d = dependence(x)
    assert d.ljung_box_p > 0.01
    assert 0.85 < d.ess / d.n < 1.15


def test_fft_acf_equals_direct_sum():
    rng = np.random.default_rng(15)
    z = rng.standard_normal(500)
    c = z - z.mean()
    direct = np.array([np.dot(c[: c.size - k], c[k:]) for k in range(21)]) / np.dot(c, c)
    assert np.allclose(autocorrelation(z, 20), direct)


def test_tiny_and_constant_inputs():
    d = dependence(np.array([1.0, 2.0]))
    assert d.independent and d.ljung_box_p is None
    d = dependence(np.full(100, 5.0))
    assert d.independent and d.ess == 100


@pytest.mark.parametrize("kind", ["alternating", "antithetic"])
def test_anticorrelated_series_ess_is_capped_at_n(kind):
    """A strict alternation (or an AR(1) with phi = -0.6) would give ESS > n by the formula; the
    ESS is capped at n, and such a series is not called independent."""
    rng = np.random.default_rng(13)
    n = 500
    if kind == "alternating":
        x = np.where(np.arange(n) % 2 == 0, 661.0, 671.0) + rng.normal(0.0, 1.0, n)
    else:
        x = 1000.0 + 50.0 * ar1(n, -0.6, rng)
    d = dependence(x)
    assert d.ess <= d.n and d.ess == pytest.approx(d.n)
    assert d.tau >= 1.0
    assert not d.independent
    iid = dependence(rng.lognormal(7.0, 0.5, n))
    assert iid.ess <= iid.n
