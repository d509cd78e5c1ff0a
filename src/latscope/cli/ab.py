"""`latscope ab`: scenarios measured interleaved in one probe process (latscope.measure.ab), their
paired comparison printed (report.ab) or given as JSON."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import progress
from ..errors import BadInput
from ..units import shown
from .shared import (
    RAW,
    clock_arg,
    console,
    err_console,
    open_store,
    params_arg,
    parse_params,
    record_on_stdout,
    store_arg,
    wrap,
)


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "ab",
        help="A and B interleaved in one process: ratios, intervals and verdicts",
        description=wrap(
            "Compare scenarios measured together: one probe process runs them as arms, "
            "alternating blocks of a few milliseconds in rounds shuffled afresh each round, "
            "so that every arm sees the same state of the machine (a host that switches "
            "speed, a neighbour, a timer).  The verdict comes from the per-round ratios of "
            "each arm's block median to the baseline's (the first scenario): faster or "
            "slower only when the interval excludes 1 and the change exceeds --noise, same "
            "when the interval lies within it.  A scenario is one quoted word, 'BENCH "
            "key=value ...'; inject_ns=N adds a known delay to that arm (validation); "
            "sched=fifo:P and mlock=true run it as 'run --sched --mlock' do.  The "
            "run is kept in the store; 'latscope show' and 'latscope report' read it."
        ),
        formatter_class=RAW,
        epilog="examples:\n"
        "  latscope ab 'pipe cpus=0,0' 'eventfd cpus=0,0'\n"
        "  latscope ab 'pipe cpus=0,0' 'pipe cpus=0,1' 'socketpair cpus=0,0'\n"
        "  latscope ab 'file dir=/var/tmp' 'file dir=/dev/shm'\n"
        "  latscope ab 'syscall' 'syscall inject_ns=10'     can a 10 ns change be seen here?\n"
        "  latscope ab 'pipe cpus=0,0' 'pipe cpus=0,0 sched=fifo:80'   the scheduler's share\n"
        "  latscope ab 'pipe cpus=0,0' 'pipe cpus=0,1' --json --fail-if slower   for CI\n"
        "exit status: 0 whatever the verdicts, unless --fail-if: then 1 when a comparison\n"
        "is slower (slower) or slower or faster (different)\n",
    )
    p.add_argument(
        "scenarios",
        nargs="+",
        metavar="SCENARIO",
        help="'BENCH key=value ...'; the first is the baseline",
    )
    p.add_argument(
        "--time",
        type=float,
        default=5.0,
        metavar="S",
        help="time budget in seconds, all arms and workers together (default 5, at most 10 "
        "without --long)",
    )
    p.add_argument("--long", action="store_true", help="allow --time above 10 s")
    p.add_argument(
        "--block-ms",
        type=float,
        default=5.0,
        metavar="MS",
        help="length of one arm's block of iterations (default 5 ms)",
    )
    p.add_argument(
        "--noise",
        type=_fraction,
        default=0.01,
        metavar="F",
        help="the smallest change that matters: 1%% (default), 0.5%%, or 0.02",
    )
    p.add_argument(
        "--repeat",
        type=int,
        metavar="R",
        help="worker processes, one after another, each running every arm (default: one per "
        "second of --time, 2 to 4)",
    )
    p.add_argument("--seed", type=int, metavar="N", help="the seed of the rounds' orders")
    p.add_argument(
        "--max-samples",
        type=int,
        metavar="N",
        help="samples one arm records, at most (default 1000000: a fast arm's blocks are "
        "shortened and the run ends early)",
    )
    p.add_argument("--warmup", type=int, metavar="W", help="warm-up iterations per arm and worker")
    p.add_argument("--clock", type=clock_arg, metavar="C", help="clock (default auto)")
    p.add_argument("--json", action="store_true", help="the verdicts as JSON (docs/ab.md)")
    p.add_argument(
        "--fail-if",
        choices=["slower", "different"],
        help="exit 1 when an arm is slower (or different: slower or faster) than the baseline",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print only the run's id (no progress bar, no comparison; --fail-if still applies)",
    )
    store_arg(p)

    tr = sub.add_parser(
        "trust",
        help="what 'latscope ab' resolves on this machine: A/A and injected A/B pairs",
        description=wrap(
            "Measure, with 'latscope ab' (the scenario's arms interleaved in one process), "
            "A/A comparisons (the scenario against itself) and A/B ones (against itself with a "
            "known delay injected into every timed region of the second arm, sized from the "
            "scenario's median), in shuffled rounds, and print the A/A false-difference rate, "
            "the detection rate per injected size and the smallest size found in at least 90% "
            "of the rounds: the difference 'latscope ab' resolves here.  The record is kept in "
            "the store; 'latscope compare' of runs made at different times uses its variation "
            "between runs."
        ),
        formatter_class=RAW,
        epilog="examples:\n"
        "  latscope trust pipe -p cpus=0,0                 10 rounds, +1%, +2% and +5% injected\n"
        "  latscope trust syscall --pairs 20 --inject 0.5%,1%,2%\n",
    )
    tr.add_argument("bench", metavar="BENCH", help="benchmark name (see 'latscope list')")
    params_arg(tr)
    tr.add_argument(
        "--pairs", type=int, default=10, metavar="N", help="rounds of A/A and A/B pairs (10)"
    )
    tr.add_argument(
        "--inject",
        default="1%,2%,5%",
        metavar="SIZES",
        help="delays injected into B, as fractions of A's median (default 1%%,2%%,5%%)",
    )
    tr.add_argument(
        "--time",
        type=float,
        default=5.0,
        metavar="S",
        help="time budget of each latscope ab (default 5 s)",
    )
    tr.add_argument(
        "--repeat", type=int, metavar="R", help="worker processes per ab (default: as 'ab')"
    )
    tr.add_argument(
        "--clock", type=clock_arg, metavar="C", help="clock (auto, or one 'latscope clocks' lists)"
    )
    tr.add_argument("--seed", type=int, default=0, help="seed of the order and the bootstrap")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    tr.add_argument(
        "--json",
        action="store_true",
        help="the trust record as JSON on standard output (what is kept in STORE/trust), the "
        "rest on standard error",
    )
    store_arg(tr)


def _fraction(text: str) -> float:
    """'1%' or '0.01' as 0.01 (argparse type)."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text}: give a fraction (0.01) or percent (1%)"
        ) from None
    if not (0.0 < v < 1.0):
        raise argparse.ArgumentTypeError(f"{text}: give a fraction between 0 and 1, or a percent")
    return v


def cmd_ab(args: argparse.Namespace) -> int:
    """`latscope ab A B ...`: the arms measured interleaved, kept, and their comparison."""
    import json as _json

    from ..measure import ab
    from ..measure import arms as armsmod
    from ..report.ab import print_ab

    arms = [armsmod.parse_arm(w) for w in args.scenarios]
    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat {args.repeat}: must be 1 or more")
    st = open_store(args)
    label = f"ab: {len(arms)} arms"
    quiet = args.quiet or args.json
    with progress.probe_task(err_console, label, quiet) as cb:
        run = ab.measure(
            arms,
            time_s=args.time,
            block_ms=args.block_ms,
            seed=args.seed,
            workers=args.repeat,
            clock=args.clock,
            warmup=args.warmup,
            noise=args.noise,
            long=args.long,
            max_samples=args.max_samples,
            store=st,
            progress=cb,
        )
    f = run.meta["run"]["ab"]
    if args.json:
        console.print_json(_json.dumps({"run_id": run.id, "store": str(st.root), **f}))
    elif args.quiet:
        console.print(run.id, markup=False, highlight=False)
    else:
        print_ab(console, f)
        console.print(f"[dim]run {shown(run.id)} kept in {shown(st.root)}[/dim]")
    failing = ab.fail_if(f, args.fail_if)
    for line in failing:
        err_console.print(f"latscope: --fail-if {args.fail_if}: {shown(line)}", markup=False)
    return 1 if failing else 0


def cmd_trust(args: argparse.Namespace) -> int:
    """`latscope trust BENCH ...`: measure the plan with a progress bar, print, keep (with
    --json, the record alone on standard output)."""
    with record_on_stdout(args.json) as emit:
        return _trust(args, emit)


def _trust(args: argparse.Namespace, emit: Callable[[str], None]) -> int:
    from contextlib import ExitStack

    from .. import probe
    from ..measure.trust import Plan, measure, parse_injections, print_record, write_record

    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat {args.repeat}: must be 1 or more")
    given = parse_params(args.params)
    probe.benchmark(args.bench)
    injections = parse_injections(args.inject)
    if args.pairs < 2:
        raise BadInput(f"--pairs {args.pairs}: give at least 2 pairs")
    st = open_store(args)
    if not (0.2 <= args.time <= 60):
        raise BadInput(f"--time {args.time:g}: give seconds between 0.2 and 60")
    plan = Plan(
        args.bench,
        given,
        args.pairs,
        injections,
        time_s=args.time,
        workers=args.repeat,
        clock=args.clock,
        seed=args.seed,
    )
    console.print(
        f"[bold]trust[/bold] {args.bench} {shown(' '.join(f'{k}={v}' for k, v in given.items()))}: "
        f"{plan.total_runs} runs of latscope ab ({plan.pairs} rounds of an A/A pair and "
        f"{', '.join(f'+{f:.0%}' for f in injections)} injected, shuffled), about "
        f"{plan.total_runs * (plan.time_s + 2):.0f} s"
    )
    with ExitStack() as stack:
        prog = None
        if not args.quiet and err_console.is_terminal:
            prog = stack.enter_context(progress.bar(err_console))
        task = prog.add_task("trust", total=plan.total_runs) if prog else None

        def run_progress(i: int) -> Callable[[int, int], None] | None:
            if prog is None:
                return None

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=i + (done / total if total else 0.0))

            return cb

        def on_step(i: int, label: str, run: Any) -> None:
            if prog is not None:
                prog.update(task, completed=i, description=label)

        rec = measure(plan, st, on_step=on_step, progress=run_progress)
        path = write_record(st, rec)
        print_record(console, rec, path)
        emit(Path(path).read_text())
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"ab": cmd_ab, "trust": cmd_trust}
