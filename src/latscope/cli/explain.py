"""`latscope explain`: where the time of a timed region goes, from a kernel trace
(measure/explain.py; docs/explain.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from .. import progress
from ..errors import Interrupted
from ..units import shown
from .shared import (
    RAW,
    clock_arg,
    console,
    err_console,
    open_store,
    params_arg,
    parse_params,
    store_arg,
    wrap,
)


def add_parsers(sub: Any) -> None:
    x = sub.add_parser(
        "explain",
        help="where the time of a timed region goes, from a kernel trace (perf; root)",
        description=wrap(
            "Measure the scenario as 'run' does (the run is kept), then in single-process "
            "rounds, alternately untraced and under perf: the scheduler's switches with the "
            "kernel stack where the measuring thread slept, its wake-ups, its system calls, "
            "interrupts and softirqs, over the recorded iterations only.  Prints where the "
            "loop's time goes (on CPU in user space and in each system call, asleep by kernel "
            "stack, waiting in the run queue after a wake-up or a preemption, interrupts), "
            "and what the tracer itself cost; 'latscope show' of the run prints it again.  "
            "With --vs, a second scenario is explained too and the parts that differ are "
            "set side by side.  Needs perf (Debian: linux-perf) and root (else exit 3)."
        ),
        formatter_class=RAW,
        epilog="examples:\n"
        "  latscope explain pipe -p cpus=0,0              the round trip on one CPU\n"
        "  latscope explain file -p open=create -p dir=/var/tmp    why an open blocks\n"
        "  latscope explain pipe -p cpus=0,0 --vs 'pipe cpus=0,1'  which part differs\n"
        "  latscope explain syscall --rounds 3\n",
    )
    x.add_argument("bench", metavar="BENCH", help="benchmark name (see 'latscope list')")
    params_arg(x)
    x.add_argument(
        "--vs",
        metavar="'BENCH k=v ...'",
        help="a second scenario, one quoted word as 'latscope ab' takes it: both explained, "
        "the parts that differ set side by side",
    )
    x.add_argument(
        "-n",
        type=int,
        metavar="N",
        help="iterations of the kept run (default: per benchmark); each traced round takes "
        "at most 20,000",
    )
    x.add_argument("--warmup", type=int, metavar="W", help="warm-up iterations per process")
    x.add_argument("--clock", type=clock_arg, metavar="C", help="clock (default auto)")
    x.add_argument(
        "--rounds",
        type=int,
        default=2,
        metavar="R",
        help="untraced and traced rounds, alternately (default 2 of each)",
    )
    x.add_argument("--quiet", action="store_true", help="no progress bar, no run summary")
    x.add_argument("--json", action="store_true", help="the explanation as JSON")
    store_arg(x)


def _one(
    args: argparse.Namespace, bench: str, given: dict[str, Any], quiet: bool, summary: bool
) -> tuple[Any, dict[str, Any]]:
    """One scenario: the kept run (its summary unless quiet or not ``summary``), then its
    explanation, kept with it."""
    from ..measure import explain
    from ..measure.runner import measure

    st = open_store(args)
    label = shown(" ".join([bench, *(f"{k}={v}" for k, v in given.items())]))
    with progress.probe_task(err_console, label, quiet) as cb:
        run = measure(
            bench, given, n=args.n, warmup=args.warmup, clock=args.clock, store=st, progress=cb
        )
    if summary and not quiet:
        from ..report.text import print_run

        print_run(console, run, kept_in=str(st.root))
    status = err_console.status("tracing", spinner="dots") if not quiet else None
    update: Callable[[str], None] | None = (
        (lambda what: status.update(f"tracing {label}: {what}")) if status else None
    )
    try:
        with status if status is not None else nullcontext():
            rec = explain.explain(
                bench, given, args.n, args.warmup, args.clock, rounds=args.rounds,
                progress=update,
            )  # fmt: skip
    except Interrupted as e:  # the run stays; what the stop cut short is its explanation
        raise e.retitle(what=f"run {run.id} was kept, without its explanation") from None
    explain.save(st, run, rec)
    return run, rec


def cmd_explain(args: argparse.Namespace) -> int:
    """`latscope explain BENCH [--vs SCENARIO]`: each scenario's kept run, its traced and
    untraced rounds, its parts; with --vs, what differs."""
    from .. import probe
    from ..measure import explain
    from ..measure.arms import parse_arm
    from ..report.explain import cost, difference, lines

    given = parse_params(args.params)
    explain.check_rights()  # before anything is measured: one line, exit 3
    explain.perf_path()
    probe.check(args.bench, dict(given), args.n, args.warmup, args.clock)
    other = parse_arm(args.vs) if args.vs else None
    if other is not None:
        probe.check(other.bench, dict(other.params), args.n, args.warmup, args.clock)
    quiet = bool(args.quiet or args.json)
    # one scenario: its run's summary, then its explanation; two: one screen, what differs
    done = [_one(args, args.bench, given, quiet, summary=other is None)]
    if other is not None:
        done.append(_one(args, other.bench, dict(other.params), quiet, summary=False))
    if args.json:
        out: dict[str, Any] = {"run_id": done[0][0].id, **done[0][1]}
        if other is not None:
            out = {
                "a": out,
                "b": {"run_id": done[1][0].id, **done[1][1]},
                "difference": difference(done[0][1], done[1][1]),
            }
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
        return 0
    if other is None:
        for line in lines(done[0][1]):
            console.print(line, markup=False, highlight=False)
    else:
        from ..report.explain import difference_lines

        for k, (run, rec) in enumerate(done):
            console.print(f"[bold]{'AB'[k]}[/bold]: {shown(run.facts['label'])} (run {run.id})")
            for sentence in cost(rec)[:1]:
                console.print(f"   {sentence}", markup=False, highlight=False)
        for line in difference_lines(done[0][1], done[1][1]):
            console.print(line, markup=False, highlight=False)
    if args.quiet:
        sys.stdout.write(" ".join(r.id for r, _ in done) + "\n")
    else:
        ids = " ".join(r.id for r, _ in done)
        console.print(f"[dim]kept with run {ids}: latscope show RUN prints it whole[/dim]")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"explain": cmd_explain}
