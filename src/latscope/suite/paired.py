"""A suite's paired comparisons: after the repetitions, the scenarios of each benchmark are
measured once more together, as the arms of one interleaved run (`latscope ab`: one probe
process alternating blocks of a few milliseconds in shuffled rounds, or short processes
alternated in the same rounds where they cannot share one), and the comparison of each
scenario with its baseline comes from that run's paired statistic (`stats.paired`).

The repetitions, made one after another, still give every scenario's own figures (median,
interval over repetitions) and the unpaired comparison kept in the suite's record; but two
runs made seconds apart on a host that switches speed differ by more than most effects, so
the ratio and verdict a suite prints come from the paired run wherever there is one
(comparison.py).

Scenarios are grouped by benchmark and clock; the baseline of a group is its first scenario
with finished runs (as in the unpaired comparison), and a group of more than `ab.MAX_ARMS`
scenarios is measured in several paired runs, each with the baseline as arm A.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import Interrupted, LatscopeError
from ..units import shown
from .running import PairedRun

if TYPE_CHECKING:
    from rich.console import Console

    from ..scenarios import Scenario
    from .running import SuiteRun

#: The time budget of one paired run (s): `latscope ab`'s default.
DEFAULT_TIME_S = 5.0


def groups(sr: SuiteRun) -> list[tuple[str, list[str]]]:
    """The paired runs to make: (benchmark, scenarios), the baseline first, at most
    `ab.MAX_ARMS` scenarios each; only scenarios with finished runs, only benchmarks with two
    or more of them (same clock as the baseline)."""
    return plan_groups([sc for sc in sr.suite.scenarios if sr.runs_of(sc.name)])


def plan_groups(scenarios: Sequence[Scenario]) -> list[tuple[str, list[str]]]:
    """The paired runs of ``scenarios`` (in the suite's order): (benchmark, names), grouped
    by benchmark and clock, the first of each group its baseline and arm A of every run of
    the group, at most `ab.MAX_ARMS` arms a run; a benchmark with one scenario has none."""
    from ..measure.ab import MAX_ARMS

    by_key: dict[tuple[str, str | None], list[str]] = {}
    for sc in scenarios:
        by_key.setdefault((sc.benchmark, sc.clock), []).append(sc.name)
    out = []
    for (bench, _clock), names in by_key.items():
        base, rest = names[0], names[1:]
        for i in range(0, len(rest), MAX_ARMS - 1):
            out.append((bench, [base, *rest[i : i + MAX_ARMS - 1]]))
    return out


def measure_pairs(
    sr: SuiteRun, console: Console, *, time_s: float = DEFAULT_TIME_S
) -> list[PairedRun]:
    """Make the suite's paired runs (`groups`), each kept in the store tagged with the suite
    run; one that the probe refuses or that fails is reported and the suite goes on. A
    signal stops them (Interrupted), the runs made so far kept."""
    from ..measure import ab as abmod
    from ..measure.arms import Arm

    scs = {sc.name: sc for sc in sr.suite.scenarios}
    plan = groups(sr)
    for k, (bench, names) in enumerate(plan, 1):
        pr = PairedRun(names, bench)
        sr.paired.append(pr)
        arms = [Arm(scs[n].benchmark, dict(scs[n].params)) for n in names]
        warmups = [scs[n].warmup for n in names if scs[n].warmup is not None]
        head = (
            f"\\[paired {k}/{len(plan)}] {shown(bench)}: {shown(', '.join(names))} "
            f"interleaved in one run ({time_s:g} s)"
        )
        console.print(head, highlight=False)
        try:
            pr.run = abmod.measure(
                arms,
                time_s=time_s,
                seed=sr.seed,
                clock=scs[names[0]].clock,
                warmup=max(warmups) if warmups else None,
                store=sr.store,
                long=True,
                tags={
                    "suite": sr.suite.name,
                    "suite_run": sr.suite_run,
                    "suite_file": str(sr.suite.path),
                    "suite_seed": sr.seed,
                    "scenario": "paired:" + ",".join(names),
                    "paired": True,
                },
            )
        except (Interrupted, KeyboardInterrupt):
            pr.why = "interrupted"
            raise
        except LatscopeError as e:
            pr.why = e.message
            console.print(f"  [yellow]not paired[/yellow]: {shown(e.message)}", highlight=False)
        else:
            console.print(f"  run {shown(pr.run.id)}", highlight=False)
    return sr.paired
