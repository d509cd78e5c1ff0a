import numpy as np
import pytest
from scipy import signal

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


@pytest.mark.parametrize(("n", "block", "max_lag"), [(10_000, 1_000, 300), (9_999, 700, 1_500)])
def test_the_blockwise_acf_sums_what_one_transform_gives(n: int, block: int, max_lag: int) -> None:
    """A long column's ACF summed block by block (a last block shorter, lags longer than a
    block) is the one-transform ACF to rounding."""
    from latscope.stats.dependence import _blockwise

    rng = np.random.default_rng(5)
    z = np.empty(n)
    z[0] = rng.standard_normal()
    for i in range(1, n):
        z[i] = 0.9 * z[i - 1] + rng.standard_normal()
    z += 3.0  # the mean is removed by both
    got = _blockwise(z, max_lag, block=block)
    assert got.shape == (max_lag + 1,) and got[0] == 1.0
    np.testing.assert_allclose(got, autocorrelation(z, max_lag), rtol=0, atol=1e-12)


def test_a_long_column_sums_its_acf_in_blocks_over_bounded_lags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Above BLOCKWISE_MIN samples Geyer's sequence runs over at most LONG_MAX_LAG lags: an
    AR(1) whose sequence ends well inside them gets the tau of one transform; one that does
    not end there says its tau is truncated (a lower bound)."""
    import importlib

    dep = importlib.import_module("latscope.stats.dependence")

    rng = np.random.default_rng(6)
    n = 40_000

    def ar1(phi: float) -> np.ndarray:
        # x[0] drawn first, then x[i] = phi x[i - 1] + e[i]: the recursion as a filter (the
        # same numbers as the loop, to the last bit)
        x0 = rng.standard_normal()
        e = rng.standard_normal(n)
        e[0] = x0
        return np.exp(signal.lfilter([1.0], [1.0, -phi], e))

    short, long_ = ar1(0.5), ar1(0.9995)
    whole = [dep.dependence(short), dep.dependence(long_)]
    monkeypatch.setattr(dep, "BLOCKWISE_MIN", 10_000)
    monkeypatch.setattr(dep, "LONG_MAX_LAG", 1_000)
    monkeypatch.setattr(dep, "BLOCK", 4_096)
    blocked = [dep.dependence(short), dep.dependence(long_)]
    assert blocked[0].tau == pytest.approx(whole[0].tau, rel=1e-9)
    assert not blocked[0].tau_truncated and not whole[0].tau_truncated
    assert blocked[1].tau_truncated and blocked[1].tau_lags <= 1_000
    assert blocked[1].tau <= whole[1].tau


@pytest.mark.parametrize(
    "x",
    [
        np.random.default_rng(7).standard_normal(50_000),
        np.round(np.random.default_rng(8).standard_normal(50_000) * 5),  # ties
        np.array([0.0, -0.0, -1.5, 2.0, -np.inf, np.inf, 1e-300, -1e-300, 7.0, 7.0]),
    ],
    ids=["continuous", "ties", "signs and extremes"],
)
def test_packed_keys_sort_values_that_are_apart(x: np.ndarray) -> None:
    from latscope.stats._common import packed_order

    order = packed_order(x)
    assert order.dtype == np.int64 and np.array_equal(np.sort(order), np.arange(x.size))
    xs = x[order]
    assert np.all(xs[1:] >= xs[:-1])


def test_packed_keys_keep_the_run_order_of_values_closer_than_their_resolution() -> None:
    """Values within 2^-(52 - b) of each other (b: the bits of an index) rank in their order
    in the run: the documented approximation, and only that."""
    from latscope.stats._common import packed_order

    n = 1_000  # b = 10 bits: values fewer than 2^10 steps of the float apart
    x = np.full(n, 2000.0)  # whose 10 lowest bits are 0
    up = np.arange(n // 2, dtype=np.uint64)[::-1]  # decreasing by one step: too close
    x[: n // 2] = (np.full(n // 2, 2000.0).view(np.uint64) + up).view(np.float64)
    x[n // 2 :] = 3000.0 + np.arange(n // 2)  # far apart: sorted
    order = packed_order(x)
    assert np.array_equal(order[: n // 2], np.arange(n // 2))  # run order, not value order
    assert np.array_equal(order[n // 2 :], np.arange(n // 2, n))


@pytest.mark.parametrize("ties", [False, True])
def test_a_long_columns_normal_scores_are_the_exact_ones_when_values_are_apart(
    monkeypatch: pytest.MonkeyPatch, ties: bool
) -> None:
    import importlib

    common = importlib.import_module("latscope.stats._common")
    rng = np.random.default_rng(9)
    x = rng.lognormal(7.0, 0.5, 30_000)
    if ties:
        x = np.round(x / 100.0) * 100.0  # groups of hundreds of samples
    exact = common.Prepared(x).normal_scores
    monkeypatch.setattr(common, "PACKED_MIN", 1_000)
    monkeypatch.setattr(common, "SCORE_CHUNK", 777)  # tie groups cut by the chunks' edges
    packed = common.Prepared(x)
    np.testing.assert_allclose(packed.normal_scores, exact, rtol=0, atol=1e-12)
    assert "order" not in packed.__dict__  # the exact argsort was not made
    assert np.array_equal(packed.__dict__["sorted"], np.sort(x))
