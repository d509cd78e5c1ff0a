"""The shared derived arrays of ``Prepared`` and the helpers that read them instead of
partitioning or copying a column again: each gives numpy's numbers exactly (what they replace),
and ``analyze_column`` gives the same results whether or not its dependence test runs beside
the other stages."""

import numpy as np
import pytest

from latscope.stats import _common, analyze, analyze_column, dependence
from latscope.stats._common import (
    Prepared,
    mad_sorted,
    median,
    median_sorted,
    quantile_sorted,
    sorted_under,
    sums_of,
    window_stats,
)
from latscope.stats.distribution import _few_distinct
from latscope.stats.intervals import grouped_cdf_share
from latscope.stats.levels import median_and_robust_sd, refine
from synth import lognormal_ar1


def _columns(rng: np.random.Generator):
    """Short columns of every shape the helpers meet: continuous, ties, few distinct values,
    negative values, odd and even lengths."""
    for n in (1, 2, 3, 4, 7, 8, 50, 51, 1000, 1001):
        yield rng.lognormal(7.0, 1.0, n)
        yield np.round(rng.lognormal(3.0, 0.5, n))  # ties
        yield rng.integers(0, 3, n).astype(np.float64)  # few distinct values
        yield rng.standard_normal(n) * 1e-3 - 0.5  # all negative


def test_median_and_mad_of_the_sorted_copy_are_numpys() -> None:
    rng = np.random.default_rng(1)
    for x in _columns(rng):
        xs = np.sort(x)
        med = float(np.median(x))
        assert median_sorted(xs) == med
        # about the median, and about centres elsewhere (the summary's grouped median)
        for mid in (med, float(x[0]), float(xs[0]) - 1.0, float(xs[-1]) + 1.0, 0.123):
            assert mad_sorted(xs, mid) == float(np.median(np.abs(x - mid))), (x.size, mid)


def test_the_one_partition_median_is_numpys() -> None:
    """Bit for bit, sign of zero and NaN included, copied or in place."""
    rng = np.random.default_rng(2)
    zeros = [np.array([-0.0]), np.array([-0.0, -0.0]), np.array([-0.0, 0.0, -0.0, 1.0])]
    odd = [np.array([1.0, np.nan, 2.0]), np.array([np.inf, -np.inf, 3.0, 4.0])]
    for x in [*_columns(rng), *zeros, *odd]:
        want = np.median(x)
        for got in (median(x), median(x.copy(), overwrite=True)):
            assert np.array_equal(got, want, equal_nan=True), (x, got, want)
            assert np.signbit(got) == np.signbit(want), x


def test_median_and_mad_of_a_monotone_function_of_the_sorted_copy() -> None:
    rng = np.random.default_rng(2)
    for x in _columns(rng):
        if x.min() <= 0.0:
            continue
        xs = np.sort(x)
        assert sorted_under(xs, np.log, chunk=16)  # across the chunks' edges
        mid, sd = median_and_robust_sd(np.log(x))
        assert median_sorted(xs, np.log) == mid
        assert _common.MAD_SCALE * mad_sorted(xs, mid, np.log) == sd


def test_sorted_under_finds_a_function_that_does_not_keep_the_order() -> None:
    xs = np.linspace(0.0, 10.0, 1000)
    assert sorted_under(xs, np.sqrt, chunk=100)
    assert not sorted_under(xs, np.sin, chunk=100)
    assert not sorted_under(xs, np.negative, chunk=1000)


def test_fewer_than_three_distinct_values_are_found_without_a_pass() -> None:
    rng = np.random.default_rng(7)
    for _ in range(2000):
        xs = np.sort(rng.integers(-2, 3, int(rng.integers(1, 8))).astype(np.float64))
        xs[xs == 0.0] = -0.0 if rng.random() < 0.5 else 0.0
        assert _few_distinct(xs) == (np.count_nonzero(np.diff(xs)) < 2), xs


def test_the_sorted_copy_gives_numpys_quantiles_and_is_made_once() -> None:
    x = np.random.default_rng(3).lognormal(7.0, 0.5, 10_001)
    prep = Prepared(x)
    for p in (0.0, 0.01, 0.25, 0.5, 0.9, 0.999, 1.0):
        assert quantile_sorted(prep.sorted, p) == pytest.approx(np.quantile(x, p), rel=1e-15)
    assert quantile_sorted(prep.sorted, 0.5) == np.median(x)
    sorted_once = prep.sorted
    dependence(prep)  # made the ranks and scores it needed, and freed them
    assert "order" not in prep.__dict__ and "normal_scores" not in prep.__dict__
    assert prep.sorted is sorted_once  # kept for the stages after it


@pytest.mark.parametrize("n, w", [(1000, 50), (1037, 50), (50, 50), (30, 50), (100_003, 999)])
def test_window_medians_and_robust_sds_are_those_of_each_window(n: int, w: int) -> None:
    x = np.round(np.random.default_rng(n).lognormal(5.0, 0.7, n))  # ties: zero MADs too
    starts, med, sd = window_stats(x, w)
    edges = np.append(starts, n)
    assert edges[0] == 0 and np.all(np.diff(edges) >= min(w, n))
    for j in range(starts.size):
        assert (med[j], sd[j]) == median_and_robust_sd(x[edges[j] : edges[j + 1]])
    prep = Prepared(x)
    assert prep.windows(w) is prep.windows(w)  # made once


def test_sums_of_batches_are_numpys_reduceat() -> None:
    """The batch sums made a chunk at a time are bit for bit those of np.add.reduceat over an
    array of all the values, for chunks that cut the batches anywhere."""
    rng = np.random.default_rng(4)
    for trial in range(60):
        n = int(rng.integers(1, 40_000))
        x = rng.lognormal(7.0, 0.5, n)
        q = float(np.quantile(x, rng.random()))
        step = (None, 1.0, 10.0, 0.3)[trial % 4]
        cuts = np.unique(rng.integers(1, n, size=int(rng.integers(0, 20)))) if n > 1 else []
        bounds = np.array([0, *cuts, n], dtype=np.int64)
        whole = grouped_cdf_share(x, q, step, np.empty(n))
        want = np.add.reduceat(whole, bounds[:-1])

        def make(a, b, out, x=x, q=q, step=step):
            return grouped_cdf_share(x[a:b], q, step, out)

        for chunk in (2**16, 1000, 129, 128, 1):
            assert np.array_equal(sums_of(make, bounds, chunk), want), (n, step, chunk)


@pytest.mark.parametrize("shift", [1.0, -3000.0])  # the logarithms, and the values themselves
def test_a_change_point_refined_from_the_sorted_copy_lands_where_it_did(shift: float) -> None:
    rng = np.random.default_rng(5)
    n, w = 40_000, 200
    x = lognormal_ar1(n, rng, phi=0.5) * np.where(np.arange(n) < 23_456, 1.0, 1.2) + shift
    bounds = [0, 23_400, n]
    assert refine(x, bounds, w, np.sort(x)) == refine(x, bounds, w)
    two = [0, 10_000, 23_400, n]  # stretches short of the whole column: no sorted copy used
    assert refine(x, two, w, np.sort(x)) == refine(x, two, w)


def test_analysis_beside_the_dependence_test_is_the_analysis_one_stage_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(6)
    n = 30_000
    x = lognormal_ar1(n, rng, phi=0.7)
    x[rng.integers(0, n, 40)] *= 20.0
    x[int(0.7 * n) :] *= 1.2
    t = np.cumsum(x) * 1e-9
    monkeypatch.setattr(analyze, "PARALLEL_MIN", 0)
    beside = analyze_column(x, t, step_ns=1.0, seed=2).to_dict()
    monkeypatch.setattr(analyze, "PARALLEL_MAX", 0)
    alone = analyze_column(x, t, step_ns=1.0, seed=2).to_dict()
    assert beside == alone


def test_outliers_as_the_last_stage_free_the_sorted_copy_and_find_the_same() -> None:
    from latscope.stats import outliers

    rng = np.random.default_rng(8)
    x = lognormal_ar1(20_000, rng, phi=0.5)
    x[::500] *= 30.0
    kept = Prepared(x, step=1.0)
    freed = Prepared(x, step=1.0)
    assert outliers(freed, last=True).to_dict() == outliers(kept).to_dict()
    assert "sorted" in kept.__dict__ and "sorted" not in freed.__dict__


def test_sums_of_holds_no_reference_to_the_values_once_done() -> None:
    """Nothing of a call outlives it: a column its ``make`` reads is freed when the caller
    lets it go, without waiting for the cycle collector (a recursive closure kept two columns
    of a keep alive through its later analyses)."""
    import gc
    import weakref

    from latscope.stats._common import sums_of

    def reading(n: int) -> tuple[object, weakref.ref[np.ndarray]]:
        x = np.arange(n, dtype=np.float64)
        return (lambda i, j, out: np.multiply(x[i:j], 1.0, out=out)), weakref.ref(x)

    make, alive = reading(5_000)
    gc.disable()
    try:
        got = sums_of(make, np.array([0, 3_000, 5_000]), 256)  # type: ignore[arg-type]
        assert got.tolist() == np.add.reduceat(np.arange(5_000.0), [0, 3_000]).tolist()
        del make
        assert alive() is None
    finally:
        gc.enable()
