"""Synthetic data for tests, no probe needed: latency series whose true properties are known
(for the statistics), and complete runs written with ``samples.write`` into a store (for
analysis, rendering and the store). Values are in ns; runs store them as integer ticks of
``ns_per_tick``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy import signal

from latscope import samples
from latscope.runs import Run
from latscope.store import SAMPLES_FILE, Store, summary_frame


def lognormal(n: int, median_ns: float, sigma: float = 0.3, seed: int = 0) -> np.ndarray:
    """Independent log-normal latencies with the given median (ns)."""
    rng = np.random.default_rng(seed)
    return median_ns * np.exp(sigma * rng.standard_normal(n))


def make_run(
    store: Path | str,
    columns: dict[str, np.ndarray],
    *,
    bench: str = "synthetic",
    ns_per_tick: float = 0.001,
    env: dict[str, Any] | None = None,
    run_env: dict[str, Any] | None = None,
    resolution_ns: float = 1.0,
    segments: list[int] | None = None,
    params: dict[str, Any] | None = None,
    header: dict[str, Any] | None = None,
    created_utc: str = "2026-01-01T00:00:01Z",
    host: str | None = None,
) -> Run:
    """A complete run in ``store`` with the given duration columns (ns, equal lengths);
    ``segments``: samples per worker process (the header's ``workers``); ``header``: entries
    added to (or replacing) the sample file's header; ``created_utc``: when the store says it
    was made (runs are listed in this order); ``host``: the host tag it is added with."""
    n = len(next(iter(columns.values())))
    ticks = {
        name: np.rint(np.asarray(v) / ns_per_tick).astype(np.int64) for name, v in columns.items()
    }
    t = np.cumsum(np.concatenate([[0.0], np.sum(list(columns.values()), axis=0)[:-1]]))
    ticks = {"t_start": np.rint(t / ns_per_tick).astype(np.int64), **ticks}
    header = {
        "probe": {"version": "test", "compiler": "none"},
        "benchmark": bench,
        "params": params if params is not None else {"kind": "synthetic"},
        "warmup": 0,
        "clock": {
            "name": "mono_raw",
            "ns_per_tick": ns_per_tick,
            "overhead_ns": 20.0,
            "resolution_ns": resolution_ns,
            "getres_ns": 1,
        },
        "columns": [{"name": "t_start", "unit": "ticks", "kind": "time"}]
        + [
            {"name": c, "unit": "ticks", "kind": "duration", "latency": "call", "description": c}
            for c in columns
        ],
        "bench": {},
        "env": env
        or {
            "schema": 2,
            "hostname": "test",
            "kernel": {"sysname": "Linux", "release": "6.1.0", "machine": "x86_64"},
            "cpu": {"model": "Test CPU", "online_count": 2},
            "clocksource": {"current": "tsc"},
        },
        "started_utc": "2026-01-01T00:00:00Z",
        "finished_utc": "2026-01-01T00:00:01Z",
        **(header or {}),
    }
    if segments is not None:
        header["workers"] = [
            {"n": k, "warmup": 0, "pid": 1000 + i, "timed_rusage": {}}
            for i, k in enumerate(segments)
        ]
    st = Store(store)
    run_id, partial = st.begin(bench)
    samples.write(partial / SAMPLES_FILE, header, ticks)
    meta = {
        "id": run_id,
        "created_utc": created_utc,
        "benchmark": bench,
        "params": header["params"],
        "params_given": {},
        "clock": "mono_raw",
        "latscope_version": "test",
        "probe_warnings": [],
        "tags": {},
        "env": run_env,
        "status": "complete",
    }
    # the summary is made with the run, as the runner does
    summary = summary_frame(meta, Run(partial / SAMPLES_FILE).summary())
    final = st.commit(run_id, partial, meta, summary=summary, host=host)
    run = Run(final)
    assert run.n == n
    return run


def make_suite_run(store: Path | str, medians: dict[str, list[float]], seed: int = 0) -> Any:
    """A finished SuiteRun of synthetic runs: per scenario, one run per given repetition
    median (each run 4 worker processes of 500 samples around it)."""
    from latscope.scenarios import Scenario, Step, Suite
    from latscope.suite import StepResult, SuiteRun

    rng = np.random.default_rng(seed)
    scs = [Scenario(name, "synthetic", {}, repeat=len(m)) for name, m in medians.items()]
    suite = Suite("synthetic", Path("synthetic.toml"), None, scs)
    sr = SuiteRun(suite, "test", 0, [], Store(store))
    i = 0
    for sc in scs:
        for rep, med in enumerate(medians[sc.name], 1):
            x = med * np.exp(0.01 * rng.standard_normal() + 0.3 * rng.standard_normal(2000))
            run = make_run(store, {"call": x}, segments=[500] * 4)
            sr.results.append(StepResult(Step(i, sc, rep), "ok", run=run))
            i += 1
    return sr


# ------------------------------------------------------------------ series with known properties


def ar1(n: int, phi: float, rng: np.random.Generator) -> np.ndarray:
    """Stationary Gaussian AR(1) with unit variance: y_t = phi y_{t-1} + sqrt(1-phi^2) e_t."""
    e = rng.standard_normal(n + 1) * np.sqrt(1.0 - phi**2)
    e[0] = rng.standard_normal()
    return signal.lfilter([1.0], [1.0, -phi], e)[1:]


def lognormal_ar1(
    n: int,
    rng: np.random.Generator,
    *,
    phi: float = 0.0,
    sigma: float = 0.5,
    mu: float = float(np.log(1000.0)),
    loc: float = 200.0,
) -> np.ndarray:
    """Shifted log-normal latencies (ns) whose log scale is an AR(1): median loc + exp(mu)."""
    return loc + np.exp(mu + sigma * ar1(n, phi, rng))


def periodic_positions(n: int, period: int, jitter: int, rng: np.random.Generator) -> np.ndarray:
    """Positions k * period + uniform jitter in [-jitter, jitter] (jitter does not accumulate)."""
    base = np.arange(period // 2, n, period)
    pos = base + rng.integers(-jitter, jitter + 1, size=base.size)
    return pos[(pos >= 0) & (pos < n)]


def bursts(
    n: int, rate: float, shortest: int, longest: int, rng: np.random.Generator
) -> np.ndarray:
    """Sorted, distinct positions of bursts: onsets at Poisson times (probability ``rate`` per
    iteration), each burst ``shortest`` to ``longest`` (uniform) consecutive positions."""
    starts = np.flatnonzero(rng.random(n) < rate)
    lengths = rng.integers(shortest, longest + 1, size=starts.size)
    hit = np.repeat(starts, lengths) + (
        np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    )
    return np.unique(hit[hit < n])


#: A TSC on a VM: every duration is a whole number of these steps (ns).
STEP = 10.015


def quantise(x: np.ndarray, step: float = STEP) -> np.ndarray:
    """Round latencies to whole clock steps, as a quantised clock does."""
    return np.round(x / step) * step


def spiky(
    n: int, rng: np.random.Generator, *, sigma: float = 0.5, share: float = 0.01
) -> np.ndarray:
    """Independent shifted log-normal latencies (median 200 + 1000 ns) with a share of 10x
    spikes at random positions."""
    x = 200.0 + rng.lognormal(np.log(1000.0), sigma, n)
    x[rng.random(n) < share] *= 10.0
    return x


def spiky_median(sigma: float = 0.5, share: float = 0.01) -> float:
    """Exact median of ``spiky``: ``(1 - share) F(x) + share F(x / 10) = 1/2``."""
    from scipy import optimize, stats

    def cdf(v: float) -> float:
        f = stats.lognorm(sigma, loc=200.0, scale=1000.0).cdf
        return (1.0 - share) * f(v) + share * f(v / 10.0) - 0.5

    return float(optimize.brentq(cdf, 300.0, 5000.0, xtol=1e-10))


#: Regime levels (ns), within-regime log-scale spread and mean regime length (iterations).
REGIME_LEVELS = (1000.0, 1080.0, 1200.0)
REGIME_SIGMA = 0.06
REGIME_MEAN_LENGTH = 400.0


def regimes(n: int, rng: np.random.Generator) -> np.ndarray:
    """What a noisy VM does: the latency level switches between ``REGIME_LEVELS``; each regime
    lasts a geometric number of iterations (mean ``REGIME_MEAN_LENGTH``: hundreds to a few
    thousands), then jumps to one of the other levels at random; within a regime the samples are
    independent log-normal around the level. Stationary: the level is uniform over the levels,
    and the chain starts there."""
    k = len(REGIME_LEVELS)
    m = int(n / REGIME_MEAN_LENGTH * 2) + 10
    while True:
        lengths = rng.geometric(1.0 / REGIME_MEAN_LENGTH, size=m)
        if lengths.sum() >= n:
            break
        m *= 2
    jumps = rng.integers(1, k, size=m)
    states = (rng.integers(0, k) + np.cumsum(jumps) - jumps[0]) % k
    level = np.repeat(np.asarray(REGIME_LEVELS)[states], lengths)[:n]
    return level * np.exp(REGIME_SIGMA * rng.standard_normal(n))


def regimes_median() -> float:
    """Exact median of the stationary distribution of ``regimes``."""
    from scipy import optimize, stats

    def cdf(v: float) -> float:
        return float(
            np.mean([stats.lognorm(REGIME_SIGMA, scale=lv).cdf(v) for lv in REGIME_LEVELS]) - 0.5
        )

    return float(optimize.brentq(cdf, 500.0, 3000.0, xtol=1e-10))
