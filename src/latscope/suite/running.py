"""Running a suite: every (scenario x repetition) run in the planned, interleaved order, then
the comparison of the scenarios (docs/suites.md).

Each run is an ordinary run in the store, tagged with the suite's name, the suite run id, the
scenario, the repetition and its position in the order.  A scenario the probe refuses here
(exit 3: not permitted or unsupported, e.g. cache=drop without root) is reported and its
remaining repetitions skipped; a failed measurement (exit 1) is reported and the suite goes
on.  SIGINT (Ctrl-C), SIGTERM or SIGHUP stops after the current probe has cleaned up
(`probe.stop_signals`); the runs that finished stay in the store.  The suite's record (plan,
seed, outcome of every step, comparison) is kept as `STORE/suites/<suite run id>.json`.

After the runs, the scenarios of each benchmark are measured once more together, as the arms
of one interleaved run (paired.py: `latscope ab`); the ratio and verdict against the baseline
come from it where there is one.

The comparison (comparison.py), per scenario and column:

- the median of the repetition medians, the typical within-run interval, the spread between
  repetitions and the interval over repetitions (`stats.between.between`);
- against the suite's first scenario with the same benchmark (the baseline; same column):
  the paired run's ratio, interval and verdict (`stats.paired`), and, always, the unpaired
  comparison of the repetitions: `stats.compare` with the repetitions as the upper level (the
  pooled samples of all repetitions of each side with one segment per repetition, so the
  interval of the ratio of medians is the hull of Welch's t interval on the log repetition
  medians and the block bootstrap of the pooled samples; with one repetition per side, the
  segments are that run's worker processes instead), whose noise threshold is raised to the
  A/A range that `latscope trust` measured for the scenario, where there is a record.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .. import probe
from ..errors import Interrupted, LatscopeError, StoreFull, Unsupported
from ..scenarios import Scenario, Step, Suite
from ..units import fmt_bare, pick_unit, shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..record import Run
    from ..store import Store


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_suite_run_id(name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{safe}-s{secrets.token_hex(2)}"


@dataclass
class StepResult:
    step: Step
    status: str  # "ok" | "skipped" | "failed"
    run: Run | None = None
    why: str | None = None


@dataclass
class PairedRun:
    """One interleaved run of a suite: its scenarios (the first the baseline), the run when it
    was made, else why not."""

    scenarios: list[str]
    benchmark: str
    run: Run | None = None
    why: str | None = None

    def comparisons(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(scenario, column) -> its paired comparison with the baseline (run.json ``ab``)."""
        if self.run is None:
            return {}
        from ..measure.comparison import LETTERS  # the suite's first use of the comparison

        facts = self.run.meta["run"].get("ab") or {}
        name = {LETTERS[i]: s for i, s in enumerate(self.scenarios)}
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for c in facts.get("comparisons") or []:
            if c.get("arm") in name:
                out[(name[c["arm"]], str(c["column"]))] = {
                    **c,
                    "run_id": self.run.id,
                    "baseline": self.scenarios[0],
                }
        return out


@dataclass
class SuiteRun:
    suite: Suite
    suite_run: str
    seed: int
    steps: list[Step]
    store: Store
    results: list[StepResult] = field(default_factory=list)
    started_utc: str = field(default_factory=_now)
    finished_utc: str | None = None
    interrupted: bool = False
    signum: int | None = None  # the signal that stopped it (probe.stop_signals)
    paired: list[PairedRun] = field(default_factory=list)  # the paired runs (paired.py)

    def runs_of(self, scenario: str) -> list[Run]:
        return [
            r.run for r in self.results if r.run is not None and r.step.scenario.name == scenario
        ]

    def note_items(self) -> list[tuple[str, str, dict[str, Any], Any]]:
        """Each scenario as `notes.grouped_notes` takes it: with its first run's metadata,
        where the file system it ran on is recorded."""
        out = []
        for sc in self.suite.scenarios:
            runs = self.runs_of(sc.name)
            out.append((sc.name, sc.benchmark, sc.params, runs[0].meta if runs else None))
        return out

    @property
    def failed(self) -> list[StepResult]:
        return [r for r in self.results if r.status == "failed"]

    def skipped_scenarios(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for r in self.results:
            if r.status == "skipped" and r.why:
                out.setdefault(r.step.scenario.name, r.why)
        return out


# ------------------------------------------------------------------------------- running


def execute(
    suite: Suite,
    steps: list[Step],
    seed: int,
    store: Store,
    console: Console,
    err_console: Console,
    quiet: bool = False,
) -> SuiteRun:
    """Run the steps in order (see the module docs for what is skipped and what stops)."""
    from contextlib import ExitStack

    from .. import progress
    from ..measure.runner import measure

    sr = SuiteRun(suite, new_suite_run_id(suite.name), seed, steps, store)
    store.ensure()
    total = len(steps)
    refused: dict[str, str] = {}
    with ExitStack() as stack:
        stack.enter_context(probe.stop_signals())  # as the CLI does; nothing if it has
        prog = None
        if not quiet and err_console.is_terminal:
            prog = stack.enter_context(progress.bar(err_console, note=True))
        out = prog.console if prog else console
        # one bar for the whole suite, naming the run under way (a bar per scenario filled a
        # terminal: 29 lines for the quick suite)
        overall = prog.add_task("[bold]suite", total=total, note="") if prog else None
        done_runs = 0
        try:
            for step in steps:
                sc = step.scenario
                if sc.name in refused:
                    sr.results.append(StepResult(step, "skipped", why=refused[sc.name]))
                    done_runs += 1
                    if prog:
                        prog.update(overall, completed=done_runs)
                    continue

                def cb(
                    done: int, tot: int, sc: Scenario = sc, step: Step = step, base: int = done_runs
                ) -> None:
                    if prog is None:
                        return
                    frac = done / tot if tot else 0.0
                    prog.update(
                        overall,
                        completed=base + frac,
                        note=shown(f"{sc.name} rep {step.repetition}/{sc.repeat}"),
                    )

                tags = {
                    "suite": suite.name,
                    "suite_run": sr.suite_run,
                    "suite_file": str(suite.path),
                    "suite_seed": seed,
                    "scenario": sc.name,
                    "repetition": step.repetition,
                    "repeat": sc.repeat,
                    "order": step.index,
                }
                head = (
                    f"[{step.index + 1}/{total}] {shown(sc.name)} rep {step.repetition}/{sc.repeat}"
                )
                try:
                    run = measure(
                        sc.benchmark,
                        sc.params,
                        n=sc.n,
                        warmup=sc.warmup,
                        clock=sc.clock,
                        store=store,
                        progress=cb if prog else None,
                        tags=tags,
                    )
                except (Interrupted, KeyboardInterrupt) as e:
                    sr.interrupted = True
                    sr.signum = probe.signum_of(e)
                    break
                except StoreFull as e:  # the next runs would not fit either: stop here
                    sr.results.append(StepResult(step, "failed", why=e.message))
                    out.print(f"{head}: [red]failed[/red]: {shown(e.message)}")
                    out.print("[red]the store is full: the suite stops here[/red]")
                    break
                except Unsupported as e:
                    refused[sc.name] = e.message
                    sr.results.append(StepResult(step, "skipped", why=e.message))
                    out.print(
                        f"{head}: [yellow]skipped[/yellow] (not possible here): {shown(e.message)}"
                    )
                except LatscopeError as e:
                    sr.results.append(StepResult(step, "failed", why=e.message))
                    out.print(f"{head}: [red]failed[/red]: {shown(e.message)}")
                else:
                    sr.results.append(StepResult(step, "ok", run=run))
                    s = run.summary().row(0, named=True)
                    unit = pick_unit([s["p50_ns"]])
                    out.print(
                        f"{head}: run {shown(run.id)}  {shown(s['column'])} p50 "
                        f"{fmt_bare(s['p50_ns'], unit)} "
                        f"{unit[0]}"
                    )
                done_runs += 1
                if prog:
                    prog.update(overall, completed=done_runs)
        except KeyboardInterrupt as e:  # a signal between two runs (probe.stop_signals)
            sr.interrupted = True
            sr.signum = probe.signum_of(e)
    sr.finished_utc = _now()
    return sr
