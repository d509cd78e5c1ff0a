"""The `latscope` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from . import __version__
from .errors import BadInput, Interrupted, LatscopeError


def _console(stderr: bool = False) -> Console:
    c = Console(stderr=stderr, highlight=False)
    if not c.is_terminal and c.width < 132:
        # logs and pipes: wide enough for the summary table without wrapping numbers
        c = Console(stderr=stderr, highlight=False, width=132)
    return c


console = _console()
err_console = _console(stderr=True)

EPILOG = """\
examples:
  latscope quick                              a default set of benchmarks, with summaries
  latscope list                               benchmarks, parameters, defaults, units
  latscope run syscall                        a null system call (getppid), per call
  latscope run file -p cache=drop -p dir=/var/tmp   cold page cache (needs root)
  latscope run pipe -p cpus=0,0 -n 100000     pipe ping-pong, both on CPU 0
  latscope trust pipe -p cpus=0,0             how far this machine can be trusted for it
  latscope show last                          the latest run again
  latscope export last --csv samples.csv      every sample, for your own tools

runs are kept in a store: $LATSCOPE_STORE, or --store DIR, or ~/.local/share/latscope
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        err_console.print(
            f"latscope: error: {message} (see 'latscope --help')", soft_wrap=True, markup=False
        )
        raise SystemExit(2)


def _params(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items or []:
        if "=" not in it or it.startswith("="):
            raise BadInput(f"-p {it}: write parameters as key=value")
        k, v = it.split("=", 1)
        if k in out:
            raise BadInput(f"-p {k}: given twice")
        out[k] = v
    return out


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="DIR",
        help="where runs are kept (default: $LATSCOPE_STORE or ~/.local/share/latscope)",
    )


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="latscope",
        description="Measure what operating-system primitives cost, with every sample "
        "recorded and honest statistics.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"latscope {__version__}")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)

    sub.add_parser("list", help="the benchmarks, their parameters and columns")
    sub.add_parser("clocks", help="each clock's overhead and resolution on this machine")

    r = sub.add_parser(
        "run",
        help="run one benchmark and print its summary",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  latscope run syscall -p op=read0\n"
        "  latscope run file -p cache=fadvise -p size=64k -n 5000\n"
        "  latscope run pipe -p mode=threads -p cpus=0,1\n"
        "  latscope run pipe -p cpus=0,0 --repeat 20   20 worker processes\n",
    )
    r.add_argument("bench", metavar="BENCH", help="benchmark name (see 'latscope list')")
    r.add_argument(
        "-p",
        dest="params",
        action="append",
        metavar="KEY=VALUE",
        help="a benchmark parameter; repeatable",
    )
    r.add_argument("-n", type=int, metavar="N", help="recorded iterations (default: per benchmark)")
    r.add_argument(
        "--warmup",
        type=int,
        metavar="W",
        help="iterations run and discarded first (default: n/10, 10..1000)",
    )
    r.add_argument(
        "--clock",
        choices=["auto", "tsc", "mono_raw", "mono"],
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
        "--sweep",
        choices=["cpus"],
        help="cpus: run a communication benchmark between every ordered pair of CPUs and "
        "show the matrix of medians",
    )
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    _store_arg(r)

    tr = sub.add_parser(
        "trust",
        help="how far this machine can be trusted for a benchmark: A/A and injected A/B pairs",
        description="Measure interleaved A/A pairs (the same command twice) and A/B pairs "
        "(B with a known delay injected into every timed region, sized from A's median), "
        "compare each pair as 'latscope compare' does, and print the between-run variation "
        "(CV of run medians), the A/A false-difference rate, the detection rate per injected "
        "size and the smallest difference detected. The result is kept in the store; "
        "'latscope compare' and suites then use it as the scenario's noise threshold and, for "
        "runs measured in a single process, as its known between-run variation.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  latscope trust pipe -p cpus=0,0                 10 rounds, +10% and +25% injected\n"
        "  latscope trust syscall --pairs 20 --inject 5%,10%,25%\n",
    )
    tr.add_argument("bench", metavar="BENCH", help="benchmark name (see 'latscope list')")
    tr.add_argument(
        "-p", dest="params", action="append", metavar="KEY=VALUE", help="a benchmark parameter"
    )
    tr.add_argument(
        "--pairs", type=int, default=10, metavar="N", help="rounds of A/A and A/B pairs (10)"
    )
    tr.add_argument(
        "--inject",
        default="10%,25%",
        metavar="SIZES",
        help="delays injected into B, as fractions of A's median (default 10%%,25%%)",
    )
    tr.add_argument("-n", type=int, metavar="N", help="iterations per run (default: per benchmark)")
    tr.add_argument(
        "--repeat", type=int, metavar="R", help="worker processes per run (default: as 'run')"
    )
    tr.add_argument("--clock", choices=["auto", "tsc", "mono_raw", "mono"], help="clock")
    tr.add_argument("--seed", type=int, default=0, help="seed of the order and the bootstrap")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    _store_arg(tr)

    q = sub.add_parser("quick", help="a default set of benchmarks, summaries printed")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    _store_arg(q)

    s = sub.add_parser("show", help="a kept run's summary and metadata")
    s.add_argument("run", metavar="RUN", help="run id (or unique part of it, or 'last')")
    _store_arg(s)

    e = sub.add_parser(
        "export",
        help="write a run's samples to CSV or Parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  latscope export last --csv pipe.csv\n",
    )
    e.add_argument("run", metavar="RUN", help="run id (or unique part of it, or 'last')")
    g = e.add_mutually_exclusive_group(required=True)
    g.add_argument("--csv", metavar="FILE", help="write CSV (one row per iteration, ns)")
    g.add_argument("--parquet", metavar="FILE", help="write Parquet")
    _store_arg(e)
    from . import cli_analysis, cli_ipc, cli_store, cli_suite

    # ls, rm, history; suite, env; report, compare, import, plot, show --full; matrix
    for mod in (cli_store, cli_suite, cli_analysis, cli_ipc):
        mod.add_parsers(sub)
    return ap


# ------------------------------------------------------------------------------- commands


def cmd_list(args: argparse.Namespace) -> int:
    from . import _probe

    cat = _probe.catalogue()
    feats = cat.get("features", {})
    console.print(
        f"[bold]latscope-probe {cat['probe_version']}[/bold] — sample format "
        f"{cat['sample_format_version']}; ZeroMQ: "
        f"{'built in' if feats.get('zmq') else 'not built with ZeroMQ'}"
    )
    t = Table(show_lines=True, title="benchmarks")
    t.add_column("benchmark", style="bold")
    t.add_column("what it measures")
    t.add_column("parameters (default)")
    t.add_column("columns")
    for b in cat["benchmarks"]:
        ps = []
        for p in b["params"]:
            d = p["default"] if p["default"] != "" else "auto"
            extra = f" [{'|'.join(p['choices'])}]" if p.get("choices") else ""
            unit = f" {p['unit']}" if p.get("unit") and p["type"] in ("int", "size") else ""
            ps.append(f"{p['name']}={d}{unit}{extra}")
        what = b["summary"]
        if not b["available"]:
            what += f"\n[red]unavailable: {b['unavailable_reason']}[/red]"
        if b.get("needs"):
            what += f"\n[dim]needs {b['needs']}[/dim]"
        mech = b.get("mechanism")
        if mech:
            modes = [m for m in ("threads", "processes") if mech.get(m)]
            what += f"\n[dim]between {' or '.join(modes)}[/dim]"
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
    console.print("[dim]details of a parameter: latscope-probe --list (JSON)[/dim]")
    return 0


def cmd_clocks(args: argparse.Namespace) -> int:
    from . import _probe
    from .units import fmt

    t = Table(
        title="clocks on this machine",
        caption="step: the spacing of the clock's values (its granularity)\n"
        "read cost: median of back-to-back start/end reads (an empty timed region)",
        caption_justify="left",
    )
    for c in ("clock", "step", "read cost", "clock_getres", "tick"):
        t.add_column(c, justify="right" if c != "clock" else "left")
    for c in _probe.clocks():
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


def _progress_runner(quiet: bool, label: str):
    """A rich progress bar fed by the probe's progress lines (outside its timed regions)."""
    from contextlib import contextmanager

    from . import progress

    @contextmanager
    def cm():
        if quiet or not err_console.is_terminal:
            yield None
            return
        with progress.bar(err_console) as prog:
            task = prog.add_task(label, total=None)

            def cb(done: int, total: int) -> None:
                prog.update(task, completed=done, total=total)

            yield cb

    return cm()


SINGLE_PROCESS = (
    "single process: the interval does not include between-run variation (measure in "
    "several processes, the default, or with --repeat R)"
)


def run_and_print(
    bench: str, params: dict[str, Any], args: argparse.Namespace, n: int | None = None
) -> Any:
    """Measure (in worker processes: the probe's `--workers auto` unless --repeat), then the
    summary, the between-workers table or the single-process label, and where it was kept."""
    from .repeat import between_segments, print_between
    from .report_text import print_run
    from .runs import measure
    from .store import Store

    st = Store(args.store)
    with _progress_runner(getattr(args, "quiet", False), f"{bench} {_pstr(params)}") as cb:
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
        )
    print_run(console, run)
    w = len(run.segments)
    if w > 1:
        print_between(
            console,
            between_segments(run),
            title=f"between runs: {w} worker processes, {run.n // w:,}+ samples each",
        )
    else:
        console.print(f"[yellow]{SINGLE_PROCESS}[/yellow]")
    if run.inject_ns:
        console.print(
            f"[dim]a known delay of {run.inject_ns:g} ns was injected into every timed region[/dim]"
        )
    console.print(f"[dim]run {run.id} kept in {st.root}[/dim]")
    return run


def _pstr(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def cmd_run(args: argparse.Namespace) -> int:
    if args.sweep:
        from . import cli_ipc

        if args.repeat is not None or args.inject_ns is not None:
            raise BadInput("--sweep does not go with --repeat or --inject-ns")
        return cli_ipc.cmd_sweep(args, _params(args.params))
    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat {args.repeat}: must be 1 or more")
    run_and_print(args.bench, _params(args.params), args)
    return 0


def cmd_trust(args: argparse.Namespace) -> int:
    from . import trust

    if args.repeat is not None and args.repeat < 1:
        raise BadInput(f"--repeat {args.repeat}: must be 1 or more")
    return trust.cli_trust(args, _params(args.params), console, err_console)


def cmd_quick(args: argparse.Namespace) -> int:
    from .store import Store

    plan: list[tuple[str, dict[str, Any], int]] = [
        ("syscall", {"op": "getppid"}, 100000),
        ("syscall", {"op": "read0"}, 100000),
        ("file", {"cache": "warm"}, 10000),
        ("file", {"cache": "fadvise"}, 2000),
        ("pipe", {"cpus": "0,0"}, 20000),
    ]
    if (os.cpu_count() or 1) >= 2:
        plan.append(("pipe", {"cpus": "0,1"}, 20000))
    console.print(
        f"[bold]latscope quick[/bold]: {len(plan)} runs, kept in {Store(args.store).root}"
    )
    for bench, params, n in plan:
        console.rule(f"{bench} {_pstr(params)}")
        run_and_print(bench, params, args, n=n)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .report_text import print_run
    from .runs import load
    from .store import Store

    run = load(args.run, Store(args.store))
    print_run(console, run, details=True)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .runs import load
    from .store import Store

    run = load(args.run, Store(args.store))
    target = Path(args.csv or args.parquet)
    if target.is_dir():
        raise BadInput(f"{target} is a directory; give a file name")
    if not target.parent.exists():
        raise BadInput(f"{target.parent} does not exist")
    tmp = target.with_name(f".{target.name}.tmp.{os.getpid()}")
    try:
        if args.csv:
            run.samples.write_csv(tmp)
        else:
            run.samples.write_parquet(tmp)
        os.replace(tmp, target)
    except OSError as e:
        raise BadInput(f"cannot write {target}: {e.strerror}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    console.print(
        f"wrote {run.n} rows × {len(run.samples.columns)} columns "
        f"(durations in ns, t_start_s in s) to {target}"
    )
    return 0


COMMANDS = {
    "list": cmd_list,
    "clocks": cmd_clocks,
    "run": cmd_run,
    "trust": cmd_trust,
    "quick": cmd_quick,
    "show": cmd_show,
    "export": cmd_export,
}


def _commands() -> dict[str, Any]:
    from . import cli_analysis, cli_ipc, cli_store, cli_suite

    return {
        **COMMANDS,
        **cli_store.COMMANDS,
        **cli_suite.COMMANDS,
        **cli_analysis.COMMANDS,
        **cli_ipc.COMMANDS,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.cmd:
        parser.print_help()
        return 2
    try:
        return _commands()[args.cmd](args)
    except Interrupted as e:
        err_console.print(f"latscope: {e.message}")
        return 130
    except KeyboardInterrupt:
        err_console.print("latscope: interrupted")
        return 130
    except LatscopeError as e:
        err_console.print(f"latscope: error: {e.message}", soft_wrap=True, markup=False)
        return e.exit_code
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
