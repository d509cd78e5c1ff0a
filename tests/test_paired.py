"""The paired statistic of interleaved arms (stats/paired.py) on synthetic runs whose truth is
known (``synth.interleaved``: a host switching between two speed levels 1.33x apart, AR(1)
log-normal noise, rare spikes, a layout offset per worker and arm)."""

from __future__ import annotations

import json
import math
from functools import cache

import numpy as np
import pytest
from scipy import stats

from latscope.stats._common import quantile_sorted
from latscope.stats.between import combine_workers
from latscope.stats.compare import verdict
from latscope.stats.paired import (
    _CHUNK,
    DEFAULT_PAIRED_NOISE,
    MIN_ROUNDS,
    SETTLE_FEW_ROUNDS,
    SETTLE_NEAR,
    SETTLE_ROUNDS,
    SETTLE_WORKERS,
    BlockTable,
    Paired,
    _cbb_variances,
    block_table,
    paired,
)
from synth import ar1, interleaved

#: resamples in the many-run tests (a variance, not a tail quantile, comes from them)
N_BOOT = 300


@cache
def block_level_runs(truth: float, runs: int, seed0: int, carry: float = 0.0) -> list[Paired]:
    """``runs`` simulated 5 s runs (3 workers, block-level route) of arm 1 against arm 0."""
    out = []
    for r in range(runs):
        sim = interleaved((1.0, truth), carry_over=carry, per_sample=False, seed=seed0 + r)
        out.append(paired(block_table(*sim), 1, n_boot=N_BOOT, seed=r))
    return out


def round_log_ratios(t: BlockTable) -> np.ndarray:
    ds = []
    for w in np.unique(t.worker):
        s = t.worker == w
        a, b = s & (t.arm == 1), s & (t.arm == 0)
        _, ia, ib = np.intersect1d(t.round[a], t.round[b], return_indices=True)
        ds.append(np.log(t.median[a][ia] / t.median[b][ib]))
    return np.concatenate(ds)


def finite_everywhere(p: Paired) -> bool:
    def walk(v: object) -> bool:
        if isinstance(v, dict):
            return all(walk(x) for x in v.values())
        if isinstance(v, list):
            return all(walk(x) for x in v)
        if isinstance(v, float):
            return math.isfinite(v)
        return True

    d = p.to_dict()
    json.dumps(d)
    return walk(d) and all(
        math.isfinite(getattr(p, f)) for f in ("estimate", "low", "high", "noise", "level")
    )


# ------------------------------------------------------------------------------ block_table


def test_block_table_has_one_row_per_block_with_median_count_and_position() -> None:
    # worker 0: round 0 runs arm 1 then arm 0; round 1 runs arm 0 then arm 1
    values = [5.0, 1.0, 3.0, 10.0, 20.0, 30.0, 40.0, 7.0, 8.0, 9.0]
    arm = [1, 1, 1, 0, 0, 0, 0, 0, 1, 1]
    block = [0, 0, 0, 1, 1, 1, 1, 2, 3, 3]
    rnd = [0, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    t = block_table(values, arm, block, rnd, [0] * 10)
    assert len(t) == 4
    assert t.arm.tolist() == [1, 0, 0, 1]
    assert t.round.tolist() == [0, 0, 1, 1]
    assert t.position.tolist() == [0, 1, 0, 1]
    assert t.count.tolist() == [3, 4, 1, 2]
    assert t.median.tolist() == [3.0, 25.0, 7.0, 8.5]


def test_block_table_matches_a_plain_loop_and_does_not_need_contiguous_blocks() -> None:
    values, arm, block, rnd, worker = interleaved(seconds=0.6, workers=2, seed=4)
    t = block_table(values, arm, block, rnd, worker)
    for i in range(0, len(t), 17):
        s = (worker == t.worker[i]) & (rnd == t.round[i]) & (arm == t.arm[i])
        assert t.median[i] == np.median(values[s])
        assert t.count[i] == s.sum()
    p = np.random.default_rng(0).permutation(values.size)
    u = block_table(values[p], arm[p], block[p], rnd[p], worker[p])
    for f in ("worker", "round", "arm", "median", "count", "position"):
        assert np.array_equal(getattr(t, f), getattr(u, f)), f


def test_block_table_with_a_clock_step_gives_grouped_medians() -> None:
    rng = np.random.default_rng(1)
    counts = rng.integers(1, 40, size=30)
    values = np.round(rng.lognormal(np.log(170.0), 0.05, counts.sum()) / 10.0) * 10.0
    block = np.repeat(np.arange(counts.size), counts)
    t = block_table(values, block % 2, block, block // 2, np.zeros_like(block), step=10.0)
    edges = np.concatenate([[0], np.cumsum(counts)])
    want = [
        quantile_sorted(np.sort(values[edges[i] : edges[i + 1]]), 0.5, 10.0)
        for i in range(counts.size)
    ]
    assert np.allclose(t.median, want)


@pytest.mark.parametrize("bad", [0.0, -5.0, float("nan"), float("inf")])
def test_block_table_refuses_values_that_are_not_positive_durations(bad: float) -> None:
    values = np.array([100.0, 110.0, bad, 120.0])
    with pytest.raises(ValueError):
        block_table(values, [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0])


def test_block_table_refuses_inconsistent_input() -> None:
    with pytest.raises(ValueError, match="one entry per sample"):
        block_table([1.0, 2.0], [0], [0, 0], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="more than one arm"):
        block_table([1.0, 2.0], [0, 1], [0, 0], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="more than one block"):
        block_table([1.0, 2.0], [0, 0], [0, 1], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="empty"):
        block_table([], [], [], [], [])


# ---------------------------------------------------------------------- the simulator itself


def test_the_block_level_simulation_matches_the_per_sample_one() -> None:
    """The coverage tests draw block medians directly; on the round log ratios (what the
    statistic sees) that route agrees with simulating every sample."""
    found = {}
    for per_sample in (True, False):
        d = [
            round_log_ratios(
                block_table(*interleaved(layout_sd=0.0, per_sample=per_sample, seed=s))
            )
            for s in range(8)
        ]
        med = np.mean([np.median(x) for x in d])
        mad = np.mean([1.4826 * np.median(np.abs(x - np.median(x))) for x in d])
        gross = np.mean([np.mean(np.abs(x - np.median(x)) > 0.05) for x in d])
        found[per_sample] = (med, mad, gross)
    (m1, s1, g1), (m2, s2, g2) = found[True], found[False]
    assert abs(m1 - math.log(1.02)) < 0.002 and abs(m2 - math.log(1.02)) < 0.002
    assert s2 == pytest.approx(s1, rel=0.1)  # round-to-round sd ~1.9% either way
    assert g1 < 0.05 and g2 < 0.05  # level switches inside a block: rare gross errors


# ----------------------------------------------------------------------- coverage and power


def test_the_interval_covers_the_true_ratio_95_percent_of_the_time() -> None:
    runs = block_level_runs(1.02, 400, 10_000)
    covered = sum(p.low <= 1.02 <= p.high for p in runs)
    # binomial sd of a 95% coverage over 400 runs: 1.1 points; 2 sd either side
    sd = math.sqrt(0.95 * 0.05 / 400)
    assert 0.95 - 2 * sd <= covered / 400 <= 0.95 + 2 * sd, covered
    assert all(p.workers == 3 and p.rounds >= 490 for p in runs)


def test_aa_pairs_are_rarely_called_faster_or_slower() -> None:
    runs = block_level_runs(1.0, 200, 20_000)
    wrong = sum(p.verdict in ("faster", "slower") for p in runs)
    assert wrong <= 0.05 * len(runs), wrong
    assert sum(p.verdict in ("faster", "slower") for p in runs[:40]) <= 2  # the goal
    covered = sum(p.low <= 1.0 <= p.high for p in runs)
    assert covered / len(runs) >= 0.93
    # no carry-over: no order warning in at least 95% of runs
    assert sum(p.order_warning is not None for p in runs) <= 0.05 * len(runs)


def test_an_injected_2_percent_is_found_slower_and_1_percent_is_reported() -> None:
    """Every sample simulated, as ``latscope ab`` would record them: 40 runs of 5 s."""
    verdicts = {1.02: [], 1.01: []}
    for truth in verdicts:
        for r in range(40 if truth == 1.02 else 20):
            sim = interleaved((1.0, truth), seed=30_000 + r)
            verdicts[truth].append(paired(block_table(*sim), 1, n_boot=N_BOOT, seed=r).verdict)
    two, one = verdicts[1.02], verdicts[1.01]
    assert two.count("slower") >= 36 and two.count("faster") == 0, two
    # +1% sits on the threshold: found about a third of the time, never the wrong way
    print(f"+1%: {one.count('slower')}/{len(one)} slower; +2%: {two.count('slower')}/40")
    assert one.count("faster") == 0 and one.count("slower") >= 1


def ar1_table(rng: np.random.Generator, phi: float, shuffle: bool = False) -> BlockTable:
    """3 workers of 200 rounds whose round log ratios drift: AR(1) of ``phi``, sd 1%, around
    log 1.02; the host's level (1 or 1.33) is common to both blocks of a round."""
    cols: list[list[np.ndarray]] = [[], [], [], [], []]
    r = 200
    for w in range(3):
        level = np.where(rng.random(r) < 0.5, 1.0, 1.33)
        e = 0.01 * ar1(r, phi, rng)
        if shuffle:
            e = rng.permutation(e)
        first = rng.random(r) < 0.5
        for a, med in ((0, 1000.0 * level), (1, 1020.0 * level * np.exp(e))):
            pos = np.where(first == (a == 1), 0, 1)
            new = (np.full(r, w), np.arange(r), np.full(r, a), med, pos)
            for c, v in zip(cols, new, strict=True):
                c.append(v)
    w_, r_, a_, m_, p_ = (np.concatenate(c) for c in cols)
    return BlockTable(w_, r_, a_, m_, np.full(m_.size, 1000), p_)


def test_rounds_that_drift_together_are_not_counted_as_independent() -> None:
    """Within-worker variation only (``worker_sd=0``): the block bootstrap over rounds widens
    the interval for serially dependent rounds and keeps its coverage near the level."""
    covered, ratios = 0, []
    for i in range(40):
        dep = paired(ar1_table(np.random.default_rng(i), 0.7), 1, worker_sd=0.0, n_boot=N_BOOT)
        ind = paired(
            ar1_table(np.random.default_rng(i), 0.7, shuffle=True), 1, worker_sd=0.0, n_boot=N_BOOT
        )
        covered += dep.low <= 1.02 <= dep.high
        ratios.append(math.log(dep.high / dep.low) / math.log(ind.high / ind.low))
    assert covered >= 32, covered  # ~89% of 40 expected: a block bootstrap is a bit short
    assert np.median(ratios) > 1.4, np.median(ratios)


# ----------------------------------------------------------------------------- order effect


def test_carry_over_is_reported_as_an_order_effect_with_a_warning() -> None:
    runs = block_level_runs(1.02, 20, 40_000, carry=0.03)
    for p in runs:
        assert p.order_effect is not None and p.order_warning is not None
        # the arm running second costs 3% more: the ratio is exp(-2 log 1.03) when it runs first
        assert p.order_effect.high < 1.0
        assert p.order_effect.low <= 1.03**-2 <= p.order_effect.high * 1.01
        assert "carry-over" in p.order_warning
        assert p.order_effect.rounds_first + p.order_effect.rounds_second == p.rounds


# ------------------------------------------------------------------------------ edge cases


def test_one_worker_gets_the_layout_spread_from_the_prior() -> None:
    sim = interleaved((1.0, 1.05), workers=1, seed=5)
    p = paired(block_table(*sim), 1, n_boot=N_BOOT)
    assert p.workers == 1 and len(p.per_worker) == 1
    assert p.low < p.estimate < p.high
    # one process cannot know its layout: the interval is wider than the rounds alone say
    q = paired(block_table(*sim), 1, n_boot=N_BOOT, worker_sd=0.0)
    assert q.high / q.low < (p.high / p.low) ** 0.5
    assert p.verdict == "slower" and finite_everywhere(p) and finite_everywhere(q)


@pytest.mark.parametrize("seconds", [0.01, 0.02])
def test_a_run_of_one_or_two_rounds_is_inconclusive_with_a_settle_message(
    seconds: float,
) -> None:
    sim = interleaved((1.0, 1.02), workers=1, seconds=seconds, seed=6)
    p = paired(block_table(*sim), 1)
    assert p.rounds < MIN_ROUNDS
    assert p.verdict == "inconclusive" and p.settle == SETTLE_FEW_ROUNDS
    assert p.low <= p.estimate <= p.high and p.order_effect is None
    assert finite_everywhere(p)


def test_short_workers_borrow_the_others_variance() -> None:
    sim = interleaved((1.0, 1.02), workers=4, seconds=0.2, seed=7)  # 5 rounds per worker
    p = paired(block_table(*sim), 1, n_boot=N_BOOT)
    assert p.rounds >= MIN_ROUNDS and p.workers == 4
    assert p.low < p.estimate < p.high and finite_everywhere(p)


def test_rounds_where_an_arm_is_missing_are_dropped() -> None:
    values, arm, block, rnd, worker = interleaved((1.0, 1.02), seed=8)
    # arm 1's block is lost in every third round; the incomplete last rounds go too
    keep = ~((arm == 1) & (rnd % 3 == 0))
    t = block_table(values[keep], arm[keep], block[keep], rnd[keep], worker[keep])
    p = paired(t, 1, n_boot=N_BOOT)
    full = paired(block_table(values, arm, block, rnd, worker), 1, n_boot=N_BOOT)
    assert p.rounds < full.rounds
    complete = sum(
        np.intersect1d(
            t.round[(t.worker == w) & (t.arm == 0)], t.round[(t.worker == w) & (t.arm == 1)]
        ).size
        for w in range(3)
    )
    assert p.rounds == complete
    assert p.low < 1.02 < p.high and finite_everywhere(p)


def test_three_arms_each_against_the_baseline() -> None:
    sim = interleaved((1.0, 1.0, 1.05), seconds=6.0, seed=9)
    t = block_table(*sim)
    assert set(t.position.tolist()) == {0, 1, 2}
    same, slower = paired(t, 1, n_boot=N_BOOT), paired(t, 2, n_boot=N_BOOT)
    assert same.verdict in ("same", "inconclusive")
    assert slower.verdict == "slower" and slower.low < 1.05 < slower.high
    back = paired(t, 0, baseline=2, n_boot=N_BOOT)
    assert back.verdict == "faster"
    assert back.estimate == pytest.approx(1.0 / slower.estimate, rel=0.01)


def test_the_verdict_is_compare_verdict() -> None:
    for p in block_level_runs(1.02, 400, 10_000)[:50] + block_level_runs(1.0, 200, 20_000)[:50]:
        assert p.verdict == verdict(p.low, p.high, p.estimate, p.noise)
        assert p.noise == DEFAULT_PAIRED_NOISE
        assert (p.settle is None) == (p.verdict != "inconclusive")


def test_an_inconclusive_verdict_says_what_would_settle_it() -> None:
    # one worker, a change within the threshold: the layout prior makes the interval wide
    one = paired(block_table(*interleaved((1.0, 1.004), workers=1, seed=12)), 1, n_boot=N_BOOT)
    assert one.verdict == "inconclusive"
    assert one.settle == SETTLE_NEAR + SETTLE_WORKERS, one.settle
    # a short run with the layouts taken as known: the rounds decide the width
    short = paired(
        block_table(*interleaved((1.0, 1.02), workers=2, seconds=0.25, sigma=0.6, seed=13)),
        1,
        n_boot=N_BOOT,
        worker_sd=0.0,
    )
    assert short.verdict == "inconclusive" and short.low < 1.0 < short.high, short
    assert short.settle == SETTLE_ROUNDS, short.settle


def test_paired_refuses_bad_arguments() -> None:
    t = block_table(*interleaved(seconds=0.5, seed=10))
    with pytest.raises(ValueError, match="no block"):
        paired(t, 5)
    with pytest.raises(ValueError, match="same arm"):
        paired(t, 1, baseline=1)
    with pytest.raises(ValueError, match="noise"):
        paired(t, 1, noise=-0.1)
    with pytest.raises(ValueError, match="worker_sd"):
        paired(t, 1, worker_sd=-1.0)
    apart = block_table([1.0, 2.0], [0, 1], [0, 1], [0, 1], [0, 0])
    with pytest.raises(ValueError, match="same round"):
        paired(apart, 1)


def test_the_same_seed_gives_the_same_numbers() -> None:
    t = block_table(*interleaved(seconds=2.0, seed=11))
    a, b = paired(t, 1, seed=3, n_boot=N_BOOT), paired(t, 1, seed=3, n_boot=N_BOOT)
    assert a.to_dict() == b.to_dict()


def test_combining_workers_agrees_with_the_normal_theory_when_the_layout_is_known() -> None:
    # fixed effect (no layout spread): the inverse-variance weighted mean and its z interval
    y, v = np.array([0.01, 0.02, 0.03]), np.array([1e-4, 4e-4, 1e-4])
    mu, lo, hi, share = combine_workers(y, v, 0.0, 0.95)
    w = 1.0 / v
    m = float(np.sum(w * y) / np.sum(w))
    h = float(stats.norm.ppf(0.975)) / math.sqrt(float(np.sum(w)))
    assert (mu, lo, hi) == pytest.approx((m, m - h, m + h), abs=1e-9)
    assert share == 0.0
    # workers that disagree far beyond their own noise widen the interval past the fixed one
    tight = np.full(3, 1e-6)
    _, lo1, hi1, _ = combine_workers(np.array([0.0, 0.03, 0.06]), tight, 0.0, 0.95)
    mu2, lo2, hi2, share2 = combine_workers(np.array([0.0, 0.03, 0.06]), tight, 0.01, 0.95)
    assert lo2 < mu2 < hi2 and hi2 - lo2 > 10 * (hi1 - lo1) and share2 > 0.95


def _cbb_by_sorting_values(
    d: np.ndarray, first: np.ndarray, ell: int, n_boot: int, rng: np.random.Generator
) -> tuple[float, float | None]:
    """The block bootstrap as first written: every resample of the values sorted again for
    each order's median (the reference for _cbb_variances' sorted ranks)."""

    def masked_median(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
        srt = np.sort(np.where(mask, a, np.inf), axis=1)
        k = mask.sum(axis=1)
        lo = np.take_along_axis(srt, np.maximum((k - 1) // 2, 0)[:, None], axis=1)[:, 0]
        hi = np.take_along_axis(srt, np.maximum(k // 2, 0)[:, None], axis=1)[:, 0]
        with np.errstate(invalid="ignore"):
            return np.where(k > 0, 0.5 * (lo + hi), np.nan)

    n, reps, contrast, done = d.size, [], [], 0
    while done < n_boot:
        m = min(_CHUNK, n_boot - done)
        nb = -(-n // ell)
        starts = rng.integers(0, n, size=(m, nb, 1))
        idx = ((starts + np.arange(ell)) % n).reshape(m, nb * ell)[:, :n]
        reps.append(np.median(d[idx], axis=1))
        contrast.append(masked_median(d[idx], first[idx]) - masked_median(d[idx], ~first[idx]))
        done += m
    c = np.concatenate(contrast)
    c = c[np.isfinite(c)]
    v_c = float(np.var(c, ddof=1)) if c.size >= max(10, n_boot // 2) else None
    return float(np.var(np.concatenate(reps), ddof=1)), v_c


def test_the_bootstrap_of_sorted_ranks_gives_the_medians_of_sorted_values() -> None:
    """Odd and even rounds, ties, one order nearly absent (resamples without it), blocks of 1
    to 7, two chunks: the same variances to the last bit."""
    rng = np.random.default_rng(14)
    for n in (10, 11, 40, 57):
        for ties in (False, True):
            d = rng.standard_normal(n)
            d = np.round(d * 3) / 3 if ties else d
            for share in (0.5, 0.08):
                first = rng.random(n) < share
                first[0] = True
                for ell in (1, 3, 7):
                    want = _cbb_by_sorting_values(d, first, ell, 300, np.random.default_rng(n))
                    got = _cbb_variances(d, first, ell, 300, np.random.default_rng(n), True)
                    assert got == want, (n, ties, share, ell)
