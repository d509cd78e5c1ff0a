"""Measuring from the command line: `latscope list`, `clocks`, `run` (and `run --sweep
cpus`), `trust` and `quick`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table

from .. import progress
from ..errors import BadInput, Interrupted, LatscopeError, Unsupported
from ..units import fmt, shown
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
    sub.add_parser(
        "list",
        help="the benchmarks, their parameters and columns",
        description=wrap(
            "Every benchmark the probe knows: what it measures, its parameters with their "
            "defaults and limits, and the columns (timed regions) it records.  The same "
            "catalogue validates 'run -p' and suite files."
        ),
        formatter_class=RAW,
        epilog="examples:\n  latscope list\n  latscope run --help        how to run one\n",
    )
    sub.add_parser(
        "clocks",
        help="each clock's overhead and resolution on this machine",
        description=wrap(
            "Each clock the probe can time with (tsc, mono_raw, mono): its read cost "
            "(overhead: the time between two back-to-back reads), its step (the smallest "
            "difference it can show) and, for the TSC, its calibration against "
            "CLOCK_MONOTONIC_RAW.  A latency close to the step cannot be resolved; the "
            "overhead is part of every sample and is not subtracted."
        ),
        formatter_class=RAW,
        epilog="examples:\n  latscope clocks\n  latscope run syscall --clock mono_raw   time "
        "with another clock\n",
    )

    r = sub.add_parser(
        "run",
        help="run one benchmark and print its summary",
        description=wrap(
            "Measure one benchmark with one set of parameters: the probe records every "
            "iteration with a calibrated clock, split over worker processes so the interval "
            "of the median includes the variation between processes; the run is kept in the "
            "store and its summary printed (p50 with its 95% interval, the tail, max, and "
            "what the figures cannot say).  'latscope list' shows every benchmark and "
            "parameter."
        ),
        formatter_class=RAW,
        epilog="recipes:\n"
        "  latscope run syscall -p op=getppid          a null system call\n"
        "  latscope run file -p size=64k -n 5000       open/write/read/close, warm cache\n"
        "  latscope run file -p cache=drop -p order=rw -p open=existing\n"
        "      a truly cold read (root): the file exists, the caches are dropped\n"
        "      before every iteration, and the read comes before any write\n"
        "  latscope run file -p dir=/mnt/usb           on another filesystem\n"
        "  latscope run pipe -p cpus=0,0               pipe round trip, both on CPU 0\n"
        "  latscope run pipe -p cpus=0,1 -p mode=threads    two threads, two CPUs\n"
        "  latscope run pipe -p cpus=0,1 -p mode=processes  two processes: compare\n"
        "  latscope run futex --sweep cpus             every ordered pair of CPUs\n"
        "  latscope run ctx --sweep procs=2,4,8 --sweep size=0,16k,64k --plot ctx.png\n"
        "      context switches as lmbench's lat_ctx sweeps them\n"
        "  latscope run pipe -p cpus=0,0 --repeat 20   20 worker processes\n"
        "  latscope run pipe -p cpus=0,1 --sched fifo:80 --mlock\n"
        "      as rt-tests run: SCHED_FIFO at 80, memory locked (root)\n"
        "then:\n"
        "  latscope show last --full                   the whole analysis\n"
        "  latscope report last --html r.html          a report with figures\n"
        "  latscope compare RUN1 RUN2                  is one faster, with an interval\n\n"
        "SIGINT (Ctrl-C), SIGTERM, SIGHUP: the probe is stopped and waited for, the run is not\n"
        "kept, exit 130, 143, 129\n",
    )
    r.add_argument("bench", metavar="BENCH", help="benchmark name (see 'latscope list')")
    params_arg(r)
    r.add_argument("-n", type=int, metavar="N", help="recorded iterations (default: per benchmark)")
    r.add_argument(
        "--warmup",
        type=int,
        metavar="W",
        help="iterations run and discarded first (default: n/10, 10..1000)",
    )
    r.add_argument(
        "--clock",
        type=clock_arg,
        metavar="C",
        help="clock (default auto: tsc where invariant, else mono_raw)",
    )
    r.add_argument(
        "--repeat",
        type=int,
        metavar="R",
        help="measure in R separate worker processes, n split between them (default: up to "
        "10 per benchmark, at least 200 samples each); 1: a single process, whose interval "
        "does not include between-run variation",
    )
    r.add_argument(
        "--inject-ns",
        type=float,
        metavar="NS",
        help="validation aid: add a calibrated busy-wait of NS ns to every timed region, a "
        "known difference for 'latscope compare' to find",
    )
    r.add_argument(
        "--sched",
        metavar="fifo:P",
        help="run the measuring threads and their peers under SCHED_FIFO (rr:P: SCHED_RR) at "
        "priority P (1-99), as rt-tests do, to keep the scheduler's other work out of the "
        "figure (root, CAP_SYS_NICE or RLIMIT_RTPRIO; else exit 3)",
    )
    r.add_argument(
        "--mlock",
        action="store_true",
        help="lock their memory (mlockall): no page fault from paging lands in a timed region "
        "(root or RLIMIT_MEMLOCK; else exit 3)",
    )
    r.add_argument(
        "--sweep",
        action="append",
        metavar="cpus|KEY=V1,V2",
        help="cpus: run a communication benchmark between every ordered pair of CPUs and "
        "show the matrix of medians; KEY=V1,V2,... (repeatable, up to 3): a run for every "
        "combination of the values, shown as a table and drawn with --plot",
    )
    r.add_argument(
        "--plot",
        metavar="FILE",
        help="with --sweep KEY=...: draw the medians against the first swept parameter "
        "(.png, .svg or .pdf)",
    )
    r.add_argument(
        "--column",
        metavar="C",
        help="with --sweep KEY=...: the column whose interval is shown and drawn (default: "
        "the benchmark's headline, e.g. ctx's switch)",
    )
    r.add_argument(
        "--quiet",
        action="store_true",
        help="print only the new run's id (no progress bar, no summary), as import --quiet",
    )
    r.add_argument(
        "--json",
        action="store_true",
        help="print the run's facts as JSON instead of the summary (docs/store.md, 'A run's "
        "facts'; no progress bar)",
    )
    store_arg(r)

    q = sub.add_parser(
        "quick",
        help="a default set of benchmarks, summaries printed",
        description=wrap(
            "Run the catalogue's quick plan, one short scenario per benchmark family (system "
            "call, file, pipes, sockets, futex, semaphores, message queues, signals, spin, "
            "ZeroMQ where built), keep every run in the store and print one table of "
            "medians and p99s: a first look at this machine in about a minute."
        ),
        formatter_class=RAW,
        epilog="examples:\n  latscope quick\n  latscope ls                 the runs it kept\n"
        "  latscope suite quick        the same scenarios as a suite, with an HTML report\n",
    )
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    store_arg(q)


# ------------------------------------------------------------------------------- commands


def cmd_list(args: argparse.Namespace) -> int:
    from .. import probe

    cat = probe.catalogue()
    feats = cat.get("features", {})
    console.print(
        f"[bold]latscope-probe {cat['probe_version']}[/bold] — sample format "
        f"{cat['sample_format_version']}; ZeroMQ: "
        f"{'built in' if feats.get('zmq') else 'not built with ZeroMQ'}"
    )
    t = Table(show_lines=True, title="benchmarks", expand=True)
    # fold, never cut: a value such as switchinterval=0.005 is longer than its column at 80
    t.add_column("benchmark", style="bold", overflow="fold")
    t.add_column("what it measures", overflow="fold", ratio=3)
    # the parameters column at least as wide as its longest name=default, so that a value
    # such as switchinterval=0.005 stays on one line (the description column gives way)
    longest = max(
        (
            len(f"{p['name']}={p['default'] or 'auto'}")
            for b in cat["benchmarks"]
            for p in b["params"]
        ),
        default=0,
    )
    t.add_column("parameters (default)", overflow="fold", width=max(min(longest, 24), 16))
    t.add_column("columns", overflow="fold", ratio=2)
    for b in cat["benchmarks"]:
        mech = b.get("mechanism") or {}
        ps = []
        for p in b["params"]:
            d = p["default"] if p["default"] != "" else "auto"
            choices = p.get("choices") or []
            if p["name"] == "mode" and mech:  # the modes are the mechanism's (inproc: threads)
                choices = [
                    m for m in choices or ("threads", "processes", "tasks") if mech.get(m) is True
                ]
            extra = f" \\[{', '.join(choices)}]" if len(choices) > 1 else ""
            unit = f" {p['unit']}" if p.get("unit") and p["type"] in ("int", "size") else ""
            ps.append(shown(f"{p['name']}={d}{unit}") + extra)
        what = shown(b["summary"])
        if not b["available"]:
            what += f"\n[red]unavailable: {shown(b['unavailable_reason'])}[/red]"
        if b.get("needs"):
            what += f"\n[dim]needs {shown(b['needs'])}[/dim]"
        cols = ", ".join(
            c["name"] + (f" (if {c['when']})" if c.get("when") else "") for c in b["columns"]
        )
        n_note = (
            f"\n[dim]n={b['default_n']}"
            + (f", {b['default_n_note']}" if b.get("default_n_note") else "")
            + "[/dim]"
        )
        t.add_row(b["name"], what, "\n".join(ps) + n_note, cols)
    console.print(t)
    console.print(
        "clocks: "
        + ", ".join(
            c["name"]
            + (" (default)" if c["default"] else "")
            + ("" if c["available"] else " (unavailable)")
            for c in cat["clocks"]
        )
    )
    console.print(
        "[dim]details of a parameter: latscope-probe --list (JSON; installed beside latscope)[/dim]"
    )
    return 0


def cmd_clocks(args: argparse.Namespace) -> int:
    from .. import probe

    t = Table(
        title="clocks on this machine",
        caption="step: the spacing of the clock's values (its granularity)\n"
        "read cost: median of back-to-back start/end reads (an empty timed region)",
        caption_justify="left",
    )
    for c in ("clock", "step", "read cost", "clock_getres", "tick"):
        t.add_column(c, justify="right" if c != "clock" else "left")
    for c in probe.clocks():
        step = c.get("step_ns", c.get("resolution_ns"))
        t.add_row(
            c["name"],
            fmt(step),
            fmt(c["overhead_ns"]),
            fmt(c["getres_ns"]) if c["getres_ns"] else "—",
            f"{c['ns_per_tick']:.4g} ns",
        )
    console.print(t)
    return 0


def run_and_print(
    bench: str, params: dict[str, Any], args: argparse.Namespace, n: int | None = None
) -> Any:
    """Measure (in worker processes: the probe's `--workers auto` unless --repeat), then the
    brief summary (`report.text.print_run`) and where it was kept."""
    from ..measure.runner import measure

    st = open_store(args)
    label = shown(f"{bench} {_pstr(params)}")
    as_json = bool(getattr(args, "json", False))
    with progress.probe_task(err_console, label, getattr(args, "quiet", False) or as_json) as cb:
        run = measure(
            bench,
            params,
            n=n if n is not None else getattr(args, "n", None),
            warmup=getattr(args, "warmup", None),
            clock=getattr(args, "clock", None),
            store=st,
            progress=cb,
            workers=getattr(args, "repeat", None),
            inject_ns=getattr(args, "inject_ns", None),
            sched=getattr(args, "sched", None),
            mlock=bool(getattr(args, "mlock", False)),
        )
    if as_json:
        from ..facts import dumps

        sys.stdout.write(dumps(run.facts) + "\n")
        return run
    if getattr(args, "quiet", False):
        sys.stdout.write(run.id + "\n")
        return run
    from ..report.text import print_run

    print_run(console, run, kept_in=str(st.root))
    return run


def _pstr(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def cmd_run(args: argparse.Namespace) -> int:
    if args.json and args.sweep:
        raise BadInput("--json does not go with --sweep")
    if (args.plot or args.column) and not (args.sweep and args.sweep != ["cpus"]):
        raise BadInput("--plot and --column go with --sweep KEY=V1,V2,...")
    if args.sweep:
        if args.repeat is not None or args.inject_ns is not None or args.sched or args.mlock:
            raise BadInput("--sweep does not go with --repeat, --inject-ns, --sched or --mlock")
        if args.sweep == ["cpus"]:
            return _sweep(args, parse_params(args.params))
        if "cpus" in args.sweep:
            raise BadInput("--sweep cpus goes alone (every ordered pair of CPUs)")
        return _grid(args, parse_params(args.params))
    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat {args.repeat}: must be 1 or more")
    run_and_print(args.bench, parse_params(args.params), args)
    return 0


def _sweep(args: argparse.Namespace, given: dict[str, Any]) -> int:
    """`latscope run MECH --sweep cpus`: the mechanism between every ordered pair of CPUs."""
    from ..matrix.ipc import online_cpus, run_sweep, sweep_plan, sweep_table

    cpus = online_cpus()
    pairs = sweep_plan(cpus)
    st = open_store(args)
    console.print(
        f"[bold]{args.bench}[/bold] between every ordered pair of {len(cpus)} CPUs "
        f"({len(pairs)} runs), kept in {shown(st.root)}"
    )
    cells = progress.over_cells(
        err_console, len(pairs), getattr(args, "quiet", False), lambda c: f"cpus={c.cpus}",
        lambda on_cell: run_sweep(args.bench, given, args.n, st, pairs, on_cell=on_cell),
    )  # fmt: skip
    console.print(sweep_table(args.bench, cpus, cells))
    console.print("[dim]dim: same CPU; cyan: SMT siblings (one core); plain: other cores[/dim]")
    for c in cells:
        if c.problem:
            console.print(f"[yellow]not measured:[/yellow] cpus={c.cpus}: {shown(c.problem)}")
    return 0


def _grid(args: argparse.Namespace, given: dict[str, Any]) -> int:
    """`latscope run BENCH --sweep KEY=V1,V2 ...`: a run for every combination (matrix/grid)."""
    from ..matrix.grid import (
        grid_figure,
        grid_plan,
        grid_table,
        headline_column,
        parse_axes,
        run_grid,
    )
    from ..plots import FORMATS, save

    axes = parse_axes(args.sweep, args.bench, given)
    column = args.column or headline_column(args.bench)
    if args.plot:  # said before the runs, not after them
        if not args.plot.lower().endswith(tuple(FORMATS)):
            raise BadInput(f"--plot {args.plot}: write .png, .svg or .pdf (the suffix chooses)")
        if not Path(args.plot).resolve().parent.is_dir():
            raise BadInput(f"--plot {args.plot}: its folder does not exist")
    plan = grid_plan(axes)
    st = open_store(args)
    console.print(
        f"[bold]{args.bench}[/bold] over {' x '.join(k for k, _ in axes)} "
        f"({len(plan)} runs), kept in {shown(st.root)}"
    )
    cells = progress.over_cells(
        err_console, len(plan), getattr(args, "quiet", False),
        lambda c: shown(" ".join(f"{k}={v}" for k, v in c.given.items())),
        lambda on_cell: run_grid(args.bench, given, plan, column, args.n, st, on_cell=on_cell),
    )  # fmt: skip
    console.print(grid_table(args.bench, axes, cells, column))
    for c in cells:
        if c.problem:
            words = " ".join(f"{k}={v}" for k, v in c.given.items())
            console.print(f"[yellow]not measured:[/yellow] {shown(words)}: {shown(c.problem)}")
    if args.plot:
        path = save(grid_figure(args.bench, axes, cells, column), args.plot)
        console.print(f"wrote {shown(str(path))}")
    return 0


def cmd_quick(args: argparse.Namespace) -> int:
    """`latscope quick`: the probe's quick plan (the built-in suite "quick"), each scenario
    run once in catalogue order, then one table and what to do next."""
    from .. import scenarios
    from ..measure.runner import measure
    from ..notes import grouped_notes

    suite = scenarios.quick()
    st = open_store(args)
    console.print(
        f"[bold]latscope quick[/bold]: {len(suite.scenarios)} runs, one per scenario of the "
        "probe's quick plan (the built-in suite 'quick'); kept in "
        f"{shown(st.root)}"
    )
    done: list[tuple[Any, Any, str | None]] = []  # (scenario, run or None, why not)
    with progress.cells(err_console, len(suite.scenarios), args.quiet) as pt:
        for i, sc in enumerate(suite.scenarios):
            if pt:
                pt[0].update(pt[1], completed=i, description=sc.name)
            try:
                run = measure(
                    sc.benchmark,
                    sc.params,
                    n=sc.n,
                    warmup=sc.warmup,
                    store=st,
                    tags={"quick": True, "scenario": sc.name},
                )
            except Interrupted:
                raise
            except Unsupported as e:
                done.append((sc, None, f"not possible here: {e.message}"))
            except LatscopeError as e:
                done.append((sc, None, f"failed: {e.message}"))
            else:
                done.append((sc, run, None))
    console.print(quick_table(done))
    for k in suite.skipped:
        console.print(f"[yellow]not run:[/yellow] {k.name}: {k.why}")
    for sc, _, why in done:
        if why:
            console.print(f"[yellow]not measured:[/yellow] {sc.name}: {shown(why)}")
    items = [(sc.name, sc.benchmark, sc.params) for sc, run, _ in done if run is not None]
    for names, note in grouped_notes(items):
        console.print(f"[dim]note ({note.key}) — {names}: {note.text}[/dim]")
    kept = sum(run is not None for _, run, _ in done)
    console.print(f"{kept} of {len(suite.scenarios)} runs kept in {shown(st.root)}; next:")
    for cmd, what in NEXT_AFTER_QUICK:
        console.print(f"  {cmd:<22} {what}", highlight=False)
    return 0 if kept else 1


NEXT_AFTER_QUICK = (
    ("latscope ls", "the runs, newest last"),
    ("latscope show RUN", "one run's answer; --full: everything, with its analysis"),
    ("latscope suite quick", "this plan again, compared, with an HTML report"),
    ("latscope list", "every benchmark and its parameters"),
)


def quick_table(done: list[tuple[Any, Any, str | None]]) -> Table:
    """One row per scenario of `latscope quick`: its first column's median and p99 (withheld:
    —), and what that column's latency is."""
    from ..facts import latency_of
    from ..summary import stat, value

    t = Table(title="medians and p99 of each scenario's first column", title_justify="left")
    for h in ("scenario", "column", "p50", "p99", "latency"):
        t.add_column(h, justify="right" if h in ("p50", "p99") else "left", no_wrap=h != "latency")
    for sc, run, _ in done:
        if run is None:
            t.add_row(sc.name, "", "—", "—", "not measured")
            continue
        row = run.summary().row(0, named=True)
        p50, p99 = value(row, stat("p50")), value(row, stat("p99"))
        t.add_row(
            sc.name,
            str(row["column"]),
            fmt(p50) if p50 is not None else "—",
            fmt(p99) if p99 is not None else "—",
            latency_of(run.facts, str(row["column"])),
        )
    return t


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list,
    "clocks": cmd_clocks,
    "run": cmd_run,
    "quick": cmd_quick,
}
