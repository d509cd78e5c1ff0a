"""Run every analysis on one latency column, once, and collect the warnings.

``analyze_column`` validates the samples, computes the shared derived arrays once (``Prepared``:
one sort of the data, whose sorted copy every stage reads for its quantiles, medians and
counts; the windows' medians and robust SDs of the drift and the outliers) and runs
``dependence`` (it decides the interval methods), ``summarize``, ``drift`` (its change points
cut the interval batches of dependent data), ``confidence_intervals``, ``describe_distribution``
and ``outliers``. The normal scores are released after the dependence step to keep the peak
memory low (about 10 x 8 bytes per sample at the peak). From ``PARALLEL_MIN`` to
``PARALLEL_MAX`` samples the dependence test runs in a thread of its own beside
``summarize``, ``drift``, ``describe_distribution`` and ``outliers`` (the intervals wait for
it): the same numbers, in about 60% of the time on two CPUs (10^7 samples on a 2-CPU VM:
3.9 s one stage at a time, 2.3-2.5 s), for the arrays of both at once at the peak (900 MiB
instead of 730). Above ``PARALLEL_MAX`` the stages run one at a time, and the outliers, the
last, free the sorted copy before their spike periodograms: the peak is the dependence
test's ranking (10^8 samples: 3,936 MiB with the input).

Warnings, in the order a reader should act on them (each says what to do):

- ``timer_too_coarse``: the median is shorter than 10 clock steps (needs ``step_ns``, the step);
- the drift warnings: ``levels`` (two speeds of the host, once), ``warmup`` (within each
  worker process, given ``segments``), ``slowdown``, ``level_shift``, ``oscillation``, ``trend``;
- ``short_run``: the dependence reaches further than the run allows its interval batches to see;
- ``autocorrelated``: ESS below ``AUTOCORRELATED_ESS_RATIO`` (10%) of n;
- ``multimodal``: the log-scale density has two or more modes (not when they are the host's two
  speeds, which ``levels`` says);
- ``periodic_spikes``: spikes recur with a confident period;
- ``tail_too_few``: some upper percentiles are withheld for lack of samples beyond them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy.typing as npt

from ..units import fmt
from ._common import AnalysisWarning, Prepared, Result
from .dependence import Dependence, dependence
from .distribution import Distribution, describe_distribution
from .drift import Drift, drift, timer_too_coarse
from .intervals import DEFAULT_LEVEL, Intervals, confidence_intervals
from .outliers import Outliers, outliers
from .summary import MIN_BEYOND, Summary, summarize

#: Warn about autocorrelation when ESS / n falls below this.
AUTOCORRELATED_ESS_RATIO = 0.1
#: Columns of this many samples and more, up to ``PARALLEL_MAX``, have their dependence
#: test run beside the other stages (``analyze_column``); above it, one stage at a time, to
#: keep the peak memory of a long column (its transform is summed block by block there).
PARALLEL_MIN = 2**16
PARALLEL_MAX = 2**24


@dataclasses.dataclass(frozen=True, eq=False)
class ColumnAnalysis(Result):
    n: int
    summary: Summary
    dependence: Dependence
    intervals: Intervals
    distribution: Distribution
    outliers: Outliers
    drift: Drift
    warnings: tuple[AnalysisWarning, ...]
    step_ns: float | None
    level: float
    seed: int


#: Two modes this close (relative) to the host's two speeds are those speeds.
SPEEDS_MATCH = 0.10


def _the_speeds(dist: Distribution, dr: Drift) -> bool:
    """Whether the distribution's modes are the host's two speeds (``drift.levels``), already
    said once: two modes as far apart as the speeds, each near one of them."""
    lv, modes = dr.levels, dist.modes
    if lv is None or modes is None or len(modes.locations) != 2:
        return False
    lo, hi = sorted(modes.locations)
    return bool(
        lo > 0
        and abs(lo / lv.fast_ns - 1.0) < SPEEDS_MATCH
        and abs(hi / lv.slow_ns - 1.0) < SPEEDS_MATCH
    )


def _collect_warnings(
    n: int,
    summ: Summary,
    dep: Dependence,
    ivs: Intervals,
    dist: Distribution,
    outl: Outliers,
    dr: Drift,
    step_ns: float | None,
) -> list[AnalysisWarning]:
    out: list[AnalysisWarning] = []
    coarse = timer_too_coarse(summ.median, step_ns)
    if coarse is not None:
        out.append(coarse)
    out.extend(dr.warnings)
    if ivs.block_length is not None and ivs.median.reason is not None:
        out.append(
            AnalysisWarning(
                "short_run",
                f"Intervals may be too narrow: {ivs.median.reason}.",
            )
        )
    if dep.ess < AUTOCORRELATED_ESS_RATIO * n:
        out.append(
            AnalysisWarning(
                "autocorrelated",
                f"Consecutive samples are strongly correlated: the {n:,} samples carry about "
                f"as much information as {dep.ess:,.0f} independent ones (ESS). The intervals "
                "account for it; to narrow them, measure longer or space the calls out.",
            )
        )
    if dist.modes is not None and dist.modes.multimodal and not _the_speeds(dist, dr):
        locs = ", ".join(fmt(v) for v in dist.modes.locations)
        shares = ", ".join(f"{100 * m:.0f}%" for m in dist.modes.masses)
        out.append(
            AnalysisWarning(
                "multimodal",
                f"The distribution has {len(dist.modes.locations)} modes (at {locs}; "
                f"{shares} of the samples): one median or mean hides them. Look at the "
                "histogram; separate modes may come from separate code paths (cache hit or "
                "miss, CPU migration, page faults).",
            )
        )
    per = outl.periodicity
    if per.confident and per.period_iterations is not None:
        when = f" ({fmt(per.period_seconds * 1e9)})" if per.period_seconds else ""
        out.append(
            AnalysisWarning(
                "periodic_spikes",
                f"Spikes recur every {per.period_iterations:,.1f} iterations{when}: something "
                "periodic interrupts the measurement (timer tick, a daemon, a flush). Isolate "
                "the CPU (isolcpus/nohz_full, pinning) or report the spikes separately.",
            )
        )
    missing = [p.name for p in summ.percentiles if p.value is None and p.side == "above"]
    if missing:
        worst = next(p for p in summ.percentiles if p.name == missing[-1])
        need = int(round(MIN_BEYOND / (1.0 - worst.percent / 100.0)))
        out.append(
            AnalysisWarning(
                "tail_too_few",
                f"{', '.join(missing)} withheld: fewer than {MIN_BEYOND} samples lie above "
                f"{'it' if len(missing) == 1 else 'them'}. Measure at least {need:,} iterations "
                f"to report {missing[-1]}.",
            )
        )
    return out


def analyze_column(
    x: npt.ArrayLike,
    t: npt.ArrayLike | Callable[[], npt.ArrayLike] | None = None,
    step_ns: float | None = None,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    segments: list[int] | None = None,
) -> ColumnAnalysis:
    """Analyse one column of latencies ``x`` (ns, iteration order) with optional iteration start
    times ``t`` (s) and clock step (granularity) ``step_ns``. Deterministic for a given ``seed``.
    ``t`` may be a function that makes the times: it is called once, when the drift needs them,
    so that the dependence test, the costliest step in memory, runs without them."""
    prep = Prepared(x, t, step=step_ns)
    beside = PARALLEL_MIN <= prep.n <= PARALLEL_MAX
    if beside:
        # The dependence test (its ranks and its transform: a third of the work) runs in a
        # thread of its own beside the stages that do not need it; both read the sorted copy
        # (made once: `Prepared.sorted`). numpy and the transform release the GIL: on two
        # CPUs the two halves take about as long as one. Each stage computes what it did
        # alone: the same numbers.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(dependence, prep)
            summ = summarize(prep)
            dr = drift(prep, segments=segments)
            dist = describe_distribution(prep, seed=seed)
            outl = outliers(prep)
            dep = pending.result()
    else:
        dep = dependence(prep)  # frees the ranks and scores it makes (none is needed again)
        summ = summarize(prep)
        dr = drift(prep, segments=segments)
    ivs = confidence_intervals(prep, level=level, seed=seed, dep=dep, shifts=dr.shifts)
    if not beside:
        dist = describe_distribution(prep, seed=seed)
        outl = outliers(prep, last=True)  # frees the sorted copy before its periodograms
    warnings = _collect_warnings(prep.n, summ, dep, ivs, dist, outl, dr, step_ns)
    return ColumnAnalysis(
        n=prep.n,
        summary=summ,
        dependence=dep,
        intervals=ivs,
        distribution=dist,
        outliers=outl,
        drift=dr,
        warnings=tuple(warnings),
        step_ns=step_ns,
        level=level,
        seed=seed,
    )
