import json

import numpy as np

from latscope.stats import ColumnAnalysis, analyze_column
from synth import lognormal_ar1, periodic_positions


def synthetic(n: int = 60_000, seed: int = 61):
    rng = np.random.default_rng(seed)
    x = lognormal_ar1(n, rng, phi=0.6)
    x[periodic_positions(n, 800, 40, rng)] *= 25
    x[: n // 50] *= 1.6  # unfinished warm-up
    t = np.cumsum(x) * 1e-9
    return x, t - t[0]


def test_analyze_column_runs_everything_and_serialises():
    x, t = synthetic()
    a = analyze_column(x, t, step_ns=1.0, seed=3)
    assert isinstance(a, ColumnAnalysis) and a.n == x.size
    d = a.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["summary"]["n"] == x.size
    assert set(d) >= {"summary", "dependence", "intervals", "distribution", "outliers", "drift"}
    codes = [w.code for w in a.warnings]
    assert "periodic_spikes" in codes and "warmup" in codes
    assert "timer_too_coarse" not in codes
    assert a.outliers.periodicity.period_iterations is not None
    assert abs(a.outliers.periodicity.period_iterations - 800) < 4
    assert not a.intervals.independent
    assert a.intervals.median.low <= a.summary.median <= a.intervals.median.high


def test_analyze_column_is_deterministic_for_a_seed():
    x, t = synthetic(20_000, seed=62)
    one = analyze_column(x, t, seed=5).to_dict()
    two = analyze_column(x, t, seed=5).to_dict()
    assert one == two


def test_start_times_made_when_the_drift_needs_them_give_the_same_analysis(monkeypatch):
    """``t`` given as a function (the report's: a run's times read from its file) is called
    once, after the dependence test, and the analysis is the one of the times given."""
    import latscope.stats.analyze as analyze

    x, t = synthetic(20_000, seed=64)
    calls: list[bool] = []
    dep = analyze.dependence

    def spied(prep, *a, **k):
        calls.append(False)  # the dependence test: no times made yet
        assert prep._make_t is not None
        return dep(prep, *a, **k)

    def times():
        calls.append(True)
        return t.copy()

    monkeypatch.setattr(analyze, "dependence", spied)
    lazy = analyze_column(x, times, step_ns=1.0, seed=5, segments=[10_000] * 2).to_dict()
    assert calls == [False, True]
    monkeypatch.undo()
    assert lazy == analyze_column(x, t, step_ns=1.0, seed=5, segments=[10_000] * 2).to_dict()


def test_coarse_timer_and_tail_warnings():
    rng = np.random.default_rng(63)
    x = np.round(rng.lognormal(np.log(40.0), 0.2, 5000) / 25.0) * 25.0  # 25 ns ticks
    a = analyze_column(x, step_ns=25.0)
    codes = [w.code for w in a.warnings]
    assert codes[0] == "timer_too_coarse"
    assert "tail_too_few" in codes
    json.dumps(a.to_dict(), allow_nan=False)


def test_tiny_inputs_do_not_crash():
    for n in (1, 2, 3, 10):
        a = analyze_column(np.arange(1.0, n + 1.0))
        json.dumps(a.to_dict(), allow_nan=False)


def test_the_hosts_two_speeds_are_said_once_not_again_as_two_modes():
    """Samples from a host that switches between two speeds have two modes, and they are those
    speeds: the finding is `levels`, once; two modes mixed at random stay `multimodal`."""
    rng = np.random.default_rng(81)
    x = lognormal_ar1(20_000, rng, phi=0.3, sigma=0.05)
    slow = np.zeros(x.size, dtype=bool)
    for a in range(1_000, 20_000, 4_000):
        slow[a : a + 1_500] = True
    x[slow] *= 1.6
    codes = [w.code for w in analyze_column(x, segments=[2000] * 10).warnings]
    assert "levels" in codes and "multimodal" not in codes
    mixed = rng.permutation(x)
    codes = [w.code for w in analyze_column(mixed, segments=[2000] * 10).warnings]
    assert "multimodal" in codes and "levels" not in codes
