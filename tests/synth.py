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
from latscope.record import Run
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
    tags: dict[str, Any] | None = None,
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
        "tags": dict(tags or {}),
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


# ------------------------------------------------------------ interleaved arms (latscope ab)


def _sign_lrv_factor(phi: float, lags: int = 200) -> float:
    """Long-run variance factor of the signs of a Gaussian AR(1) around its median: the
    variance of a block median of ``n`` such samples is ``(pi / 2) sigma^2 / n`` times this
    (the signs' autocorrelation at lag k is ``(2 / pi) arcsin(phi^k)``)."""
    k = np.arange(1, lags + 1)
    return float(1.0 + 2.0 * np.sum(2.0 / np.pi * np.arcsin(phi**k)))


def interleaved(
    ratios: tuple[float, ...] | list[float] = (1.0, 1.02),
    *,
    seconds: float = 5.0,
    workers: int = 3,
    median_ns: float = 5000.0,
    block_ms: float = 5.0,
    sigma: float = 0.2,
    phi: float = 0.5,
    levels: tuple[float, float] = (1.0, 1.33),
    dwell_s: float = 3.0,
    fast_share: float = 0.3,
    fast_dwell_s: float = 0.05,
    spike_share: float = 0.001,
    spike_factor: float = 20.0,
    layout_sd: float = 0.005,
    carry_over: float = 0.0,
    per_sample: bool = True,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What ``latscope ab`` records: arms with true cost ratios ``ratios`` (arm 0 is the
    baseline, ratio 1 its cost of ``median_ns``) alternating in blocks of ``block_ms`` of
    simulated time, in rounds of every arm once in a freshly shuffled order, in ``workers``
    processes one after another that share ``seconds`` of simulated time. Returns per-sample
    arrays ``(values ns, arm, block, round, worker)``; block and round numbers count from 0 in
    each worker, and the time running out leaves the last round of a worker incomplete.

    The truth that pairing must see through:

    - the host: a two-state Markov process between the speed ``levels`` (every latency times
      the level), dwelling an exponential time of mean ``dwell_s``, or with probability
      ``fast_share`` of mean ``fast_dwell_s`` (fast switches), global over the workers; a block
      during which the level switches holds samples of both;
    - within a block: log-normal latencies whose log scale is an AR(1) (``phi``, sd ``sigma``,
      running on over the whole worker), with ``spike_share`` of samples ``spike_factor`` x;
    - layout: every (worker, arm) has its own log-normal cost offset (sd ``layout_sd``), so the
      ratio one process sees is off the truth by a random amount that only more processes
      average out;
    - ``carry_over``: an arm that does not run first in its round costs ``1 + carry_over``
      times more (the arm before it left something behind);
    - a block holds ``block_ms`` worth of its arm's samples at the level its block starts at.

    ``per_sample=False`` draws each block's median directly (one value per block, from the
    median's large-sample law: the mixture median of the levels in the block, plus a normal
    error of variance ``(pi / 2) sigma^2 / n`` times the AR(1) signs' long-run factor), which
    is a thousand times cheaper; ``tests/test_paired.py`` checks that both routes agree."""
    from scipy import special

    rng = np.random.default_rng(seed)
    ratios = np.asarray(ratios, dtype=np.float64)
    k = ratios.size
    block_s = block_ms * 1e-3
    # the host's level: switch times over the whole run
    m = 16
    while True:
        fast = rng.random(m) < fast_share
        dwell = np.where(fast, rng.exponential(fast_dwell_s, m), rng.exponential(dwell_s, m))
        if dwell.sum() > seconds + 1.0:
            break
        m *= 2
    switches = np.cumsum(dwell)
    state0 = int(rng.integers(0, 2))
    lv = np.log(np.asarray(levels, dtype=np.float64))

    def log_level(t: np.ndarray) -> np.ndarray:
        return lv[(state0 + np.searchsorted(switches, t, side="right")) % 2]

    layout = layout_sd * rng.standard_normal((workers, k))
    per_worker = seconds / workers
    n_blocks = int(per_worker / block_s)
    n_rounds = -(-n_blocks // k)
    xs: list[np.ndarray] = []
    parts: list[tuple[np.ndarray, ...]] = []  # per block: arm, block, round, worker, samples
    pending: list[tuple[np.ndarray, ...]] = []  # block level: the medians' laws, and a draw
    for w in range(workers):
        order = np.argsort(rng.random((n_rounds, k)), axis=1)
        arm = order.ravel()[:n_blocks].astype(np.int64)
        pos = np.tile(np.arange(k), n_rounds)[:n_blocks]
        rnd = np.repeat(np.arange(n_rounds), k)[:n_blocks].astype(np.int64)
        blk = np.arange(n_blocks, dtype=np.int64)
        start = w * per_worker + blk * block_s
        end = start + block_s
        base = (
            np.log(median_ns * ratios[arm])
            + layout[w, arm]
            + np.where(pos > 0, np.log1p(carry_over), 0.0)
        )
        lvl0 = log_level(start)
        count = np.maximum(1, np.rint(block_s * 1e9 / np.exp(base + lvl0))).astype(np.int64)
        if per_sample:
            # sample i of a block of c runs at t = start + (i + 0.5) / c * block_s; the level
            # is read per sample only in the blocks the host switches within (t rises through
            # a block: no switch between its first and last sample, none between)
            n = int(count.sum())
            ends = np.cumsum(count)
            t0 = start + 0.5 / count * block_s
            t1 = start + (count - 0.5) / count * block_s
            mixed = np.flatnonzero(
                np.searchsorted(switches, t0, side="right")
                != np.searchsorted(switches, t1, side="right")
            )
            log_x = np.repeat(base + log_level(t0), count)
            for b in mixed:
                t = start[b] + (np.arange(count[b]) + 0.5) / count[b] * block_s
                log_x[ends[b] - count[b] : ends[b]] = base[b] + log_level(t)
            x = np.exp(log_x + sigma * ar1(n, phi, rng))
            np.multiply(x, spike_factor, out=x, where=rng.random(n) < spike_share)
            xs.append(x)
            parts.append((arm, blk, rnd, np.full(n_blocks, w, dtype=np.int64), count))
            continue
        # one value per block: the median's large-sample law
        lvl1 = log_level(end - 1e-12)
        first = np.searchsorted(switches, start, side="right")
        cut = switches[np.minimum(first, switches.size - 1)]
        t1 = np.clip(cut - start, 0.0, block_s)
        # share of the block's samples at the first level (faster level: more samples/s)
        q = np.where(
            lvl0 == lvl1,
            1.0,
            (t1 / np.exp(lvl0)) / (t1 / np.exp(lvl0) + (block_s - t1) / np.exp(lvl1)),
        )
        pending.append((base, lvl0, lvl1, q, count, rng.standard_normal(n_blocks)))
        parts.append((arm, blk, rnd, np.full(n_blocks, w, dtype=np.int64), np.ones_like(blk)))
    if pending:  # every block median of all workers in one bisection (elementwise)
        base, lvl0, lvl1, q, count, z = (np.concatenate(c) for c in zip(*pending, strict=True))
        target = 0.5 / (1.0 - spike_share)  # spikes sit far above every median
        lo = np.minimum(lvl0, lvl1) - 5.0 * sigma
        hi = np.maximum(lvl0, lvl1) + 5.0 * sigma
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            cdf = q * special.ndtr((mid - lvl0) / sigma) + (1.0 - q) * special.ndtr(
                (mid - lvl1) / sigma
            )
            below = cdf < target
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        err = sigma * np.sqrt(np.pi / 2.0 * _sign_lrv_factor(phi) / count)
        xs.append(np.exp(base + 0.5 * (lo + hi) + err * z))
    # the columns per block, repeated over each block's samples once for all workers
    arm_b, blk_b, rnd_b, wrk_b, cnt = (np.concatenate(c) for c in zip(*parts, strict=True))
    arm_a, blk_a, rnd_a, wrk_a = (np.repeat(c, cnt) for c in (arm_b, blk_b, rnd_b, wrk_b))
    return np.concatenate(xs), arm_a, blk_a, rnd_a, wrk_a


# ------------------------------------------------- truths for intervals and periods (issue 22)


def regimes_with_states(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``regimes`` and the regime (0, 1, 2: the index into ``REGIME_LEVELS``) of each sample:
    the same draws from ``rng``, so ``regimes_with_states(n, rng)[0]`` equals ``regimes(n, rng)``
    for a generator in the same state."""
    k = len(REGIME_LEVELS)
    m = int(n / REGIME_MEAN_LENGTH * 2) + 10
    while True:
        lengths = rng.geometric(1.0 / REGIME_MEAN_LENGTH, size=m)
        if lengths.sum() >= n:
            break
        m *= 2
    jumps = rng.integers(1, k, size=m)
    states = (rng.integers(0, k) + np.cumsum(jumps) - jumps[0]) % k
    state = np.repeat(states, lengths)[:n]
    level = np.asarray(REGIME_LEVELS)[state]
    return level * np.exp(REGIME_SIGMA * rng.standard_normal(n)), state


def periodic_spikes(
    n: int,
    rng: np.random.Generator,
    *,
    period: int = 4096,
    jitter: int = 0,
    random_rate: float = 1e-3,
    factor: float = 20.0,
    phi: float = 0.5,
    sigma: float = 0.3,
) -> np.ndarray:
    """Log-normal latencies whose log scale is an AR(1) (``phi``, ``sigma``; median 1,200 ns),
    with spikes (``factor`` x) every ``period`` iterations (``periodic_positions``, +-``jitter``;
    none when ``period`` is 0) and at random iterations (probability ``random_rate`` each)."""
    x = lognormal_ar1(n, rng, phi=phi, sigma=sigma)
    if period:
        x[periodic_positions(n, period, jitter, rng)] *= factor
    x[rng.random(n) < random_rate] *= factor
    return x
