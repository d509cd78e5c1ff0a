import math

import numpy as np
import pytest

from latscope.stats import outliers, spike_periodicity
from latscope.stats.periodicity import Z2_CHUNK, _fold, _z2, decluster
from synth import bursts, lognormal_ar1, periodic_positions

STEP = 10.0  # ns, a clock step like this VM's TSC


def quantised(x, step=STEP):
    return np.round(x / step) * step


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
    # Stationary data: the local (windowed) thresholds scatter around the global rule; here
    # the practical floor (2 x the median) is above median + 5 x 1.4826 MAD.
    assert o.spike_threshold == pytest.approx(2 * np.median(x), rel=0.01)
    assert o.spike_threshold_min <= o.spike_threshold <= o.spike_threshold_max
    assert o.spike_threshold_max < 1.05 * o.spike_threshold_min
    assert o.spike_window == 1000 and "windows of 1,000" in o.spike_scale_source


def test_spike_threshold_follows_a_level_shift():
    """With one global median and MAD, a slower last 30% would be all spikes."""
    rng = np.random.default_rng(33)
    n = 100_000
    x = rng.normal(1000, 10, n)
    x[70_500:] = rng.normal(3000, 30, n - 70_500)  # the step is inside a window
    where = np.sort(rng.choice(n, 60, replace=False))
    x[where] += 5000
    o = outliers(x)
    assert np.array_equal(o.spike_indices, where)
    assert o.spike_threshold_min == pytest.approx(2 * 1000, rel=0.01)
    assert o.spike_threshold_max == pytest.approx(2 * 3000, rel=0.01)


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


def test_decluster_groups_near_consecutive_spikes():
    onsets, spans = decluster(np.array([1, 2, 4, 10, 14, 15, 30]))
    assert onsets.tolist() == [1, 10, 14, 30]  # gaps <= 3 join, a gap of 4 splits
    assert spans.tolist() == [4, 1, 2, 1]
    empty, _ = decluster(np.array([], dtype=np.int64))
    assert empty.size == 0


@pytest.mark.parametrize("seed", range(4))
def test_bursty_random_spikes_have_no_confident_period(seed):
    """Poisson burst onsets, each burst 1 to 10 consecutive spikes: bursts, not a period."""
    rng = np.random.default_rng(300 + seed)
    n = 200_000
    x = lognormal_ar1(n, rng, phi=0.3, sigma=0.3)
    x[bursts(n, 2e-3, 1, 10, rng)] *= 20
    p = outliers(x).periodicity
    assert not p.confident and p.period_iterations is None and p.period_seconds is None
    assert p.p_value > 1e-3 and p.reason is not None
    assert p.n_events < 0.5 * p.n_spikes  # declustered: about 5.5 spikes per burst
    assert p.burst_iterations >= 8 and p.min_period >= 3 * (8 + 3)


@pytest.mark.parametrize("seed", range(3))
def test_dense_episodes_of_spikes_have_no_confident_period(seed):
    """A few long episodes with a spike every few iterations: their spectrum rises steeply at
    the lowest frequencies, which one block-mean background mistook for a long period."""
    rng = np.random.default_rng(400 + seed)
    n = 200_000
    idx = []
    for start in np.flatnonzero(rng.random(n) < 5e-5):
        pos, end = start, start + rng.integers(1000, 5000)
        while pos < min(n, end):
            idx.append(pos)
            pos += rng.integers(1, 20)
    p = spike_periodicity(np.array(idx), n)
    assert p.n_events >= 10
    assert not p.confident and p.period_iterations is None


def test_periodic_bursts_give_their_period():
    """A burst of 3 spikes every 500 iterations (jitter +-20) among random bursts."""
    rng = np.random.default_rng(500)
    n = 200_000
    x = lognormal_ar1(n, rng, phi=0.3, sigma=0.3)
    pos = periodic_positions(n, 500, 20, rng)
    x[np.clip(pos[:, None] + np.arange(3), 0, n - 1).ravel()] *= 20
    x[bursts(n, 5e-4, 1, 10, rng)] *= 20
    t = np.arange(n) * 2e-6
    p = outliers(x, t).periodicity
    assert p.confident and p.p_value < 1e-3
    assert p.period_iterations == pytest.approx(500, rel=0.005)
    assert p.period_seconds == pytest.approx(500 * 2e-6, rel=0.005)
    assert p.n_events < p.n_spikes / 2  # each periodic burst is one event


@pytest.mark.parametrize("shift_at", [0.5, 0.6, 0.7])
def test_level_shift_without_spikes_gives_few_spikes_and_no_period(shift_at):
    """3 x slower from ``shift_at`` of the run on; no spikes at all. A global threshold made
    the whole slower part spikes when it was less than half of the run (60,000 spikes and a
    confident 'period' of 4 iterations at 0.7)."""
    rng = np.random.default_rng(600)
    n = 200_001
    x = lognormal_ar1(n, rng, phi=0.5, sigma=0.1)
    x[int(shift_at * n) :] *= 3
    o = outliers(x)
    assert o.n_spikes < n / 1000
    assert not o.periodicity.confident and o.periodicity.period_iterations is None
    assert o.spike_threshold_max > 2.5 * o.spike_threshold_min  # one threshold per level


def test_quantised_run_has_no_spikes_a_user_would_not_care_about():
    """A warm write run: a median of 1 us, a MAD of two clock steps. median + 5 x 1.4826 MAD
    was 15% above the median and made hundreds of 'spikes'; a spike must now be at least
    twice the median (and 10 clock steps above it)."""
    rng = np.random.default_rng(700)
    x = lognormal_ar1(10_000, rng, phi=0.5, sigma=0.03, mu=np.log(800.0))
    slow = rng.random(x.size) < 0.04
    x[slow] *= rng.uniform(1.1, 1.5, np.count_nonzero(slow))  # a tail of slower writes
    x = quantised(x)
    mad = np.median(np.abs(x - np.median(x)))
    assert mad <= 3 * STEP
    assert np.count_nonzero(x > np.median(x) + 5 * 1.4826 * mad) > 100  # the old rule's spikes
    o = outliers(x, step=STEP)
    assert o.n_spikes == 0
    where = np.sort(rng.choice(x.size, 30, replace=False))
    x[where] *= 3
    assert np.array_equal(outliers(x, step=STEP).spike_indices, where)


def test_fast_call_spikes_need_several_clock_steps():
    """A 30 ns call on a 10 ns clock: 2 x the median is 60 ns, one more step is noise; the
    threshold is median + 10 steps = 130 ns."""
    rng = np.random.default_rng(701)
    x = 30.0 + STEP * rng.choice([-1, 0, 0, 0, 0, 0, 1, 2, 6, 9], 20_000)
    o = outliers(x, step=STEP)
    assert o.spike_threshold == pytest.approx(130.0)
    assert o.n_spikes == np.count_nonzero(x > 130.0) == 0
    assert "2 x median" in o.spike_rule and "10 clock steps (100 ns)" in o.spike_rule


def _period_case(rng, n, period, two_per_cycle=False):
    """Quantised body, periodic 3 x spikes (jitter +-10), random bursts of 1-4 3 x spikes."""
    x = quantised(lognormal_ar1(n, rng, phi=0.5, sigma=0.05))
    if period:
        pos = periodic_positions(n, period, 10, rng)
        if two_per_cycle:  # a second event 0.4 periods later: lines at 2/P, 3/P beat 1/P
            pos = np.concatenate([pos, np.clip(pos + int(0.4 * period), 0, n - 1)])
        x[pos] *= 3
    x[bursts(n, 2e-3, 1, 4, rng)] *= 3
    return outliers(x, step=STEP).periodicity


@pytest.mark.parametrize("two_per_cycle", [False, True])
def test_period_among_random_spikes_is_the_true_one_never_a_submultiple(two_per_cycle):
    found = 0
    for r in range(10):
        p = _period_case(np.random.default_rng(710 + r), 20_000, 700, two_per_cycle)
        if p.period_iterations is not None:
            assert p.period_iterations == pytest.approx(700, rel=0.01)  # never 350, 233, 140
            found += 1
    assert found >= 5  # measured: 6 of 10 (one event per cycle), 10 of 10 (two)


def test_period_needs_ten_recurrences_and_random_spikes_have_none():
    for r in range(10):
        rng = np.random.default_rng(730 + r)
        assert _period_case(rng, 20_000, 2500).period_iterations is None  # 8 cycles
        assert _period_case(rng, 20_000, 0).period_iterations is None


def _z2_one_frequency_at_a_time(times, freqs, harmonics, background, integer_times, min_freq):
    """The Z^2 statistic as first written, one trial frequency and harmonic at a time."""
    m = times.size
    z2, r1 = np.zeros(freqs.size), np.zeros(freqs.size)
    rel = times - times[0]
    for i, f in enumerate(freqs):
        ang = rel * f
        ang -= np.floor(ang)
        ang *= 2.0 * math.pi
        cos1, sin1 = np.cos(ang), np.sin(ang)
        ch, sh = cos1, sin1
        for h in range(1, harmonics + 1):
            if h > 1:
                ch, sh = ch * cos1 - sh * sin1, sh * cos1 + ch * sin1
            fh = _fold(h * float(f)) if integer_times else h * float(f)
            c, s = float(ch.sum()), float(sh.sum())
            if h == 1:
                r1[i] = math.sqrt(c * c + s * s) / m
            if integer_times and fh < min_freq:
                continue
            z2[i] += 2.0 * (c * c + s * s) / m / float(background(np.array([fh]))[0])
    return z2, r1


def test_the_z2_of_all_frequencies_at_once_is_that_of_each_alone() -> None:
    """Few and many events (several chunks of frequencies), integer times with harmonics
    folded and skipped, a background that varies: the same statistic to the last bit."""
    rng = np.random.default_rng(15)
    freqs = np.concatenate([np.linspace(1e-4, 0.3, 81), [0.5, 0.75, 0.999]])
    for m in (3, 60, Z2_CHUNK // 40):  # the last: 40 frequencies a chunk, three chunks
        times = np.sort(rng.choice(200_000, m, replace=False)).astype(np.float64)
        for integer_times, min_freq in ((False, 0.0), (True, 1e-3)):
            for harmonics in (1, 2):
                for bg in (lambda f: np.ones(f.shape), lambda f: 1.0 + 3.0 * f):
                    args = (times, freqs, harmonics, bg, integer_times, min_freq)
                    want = _z2_one_frequency_at_a_time(*args)
                    got = _z2(*args)
                    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
