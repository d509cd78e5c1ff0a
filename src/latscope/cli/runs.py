"""A kept run from the command line: `latscope show` (with --full, the full analysis) and
`latscope export`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..files import atomic_write, check_destination
from ..units import shown
from .shared import (
    RAW,
    console,
    force_arg,
    host_arg,
    open_store,
    store_arg,
    value_error,
    wrap,
)


def add_parsers(sub: Any) -> None:
    s = sub.add_parser(
        "show",
        help="a kept run's summary and metadata",
        description=wrap(
            "A kept run's summary (p50 with its 95% interval, the tail, max), its clock and "
            "where it was measured, with what the figures cannot say; --full adds the whole "
            "analysis: every percentile with its interval, serial dependence, the fitted "
            "distribution, outliers, spikes and drift."
        ),
        formatter_class=RAW,
        epilog="examples:\n  latscope show last\n  latscope show 172353 --full      by a "
        "unique part of its id\n  latscope show last --json        its facts, for a program\n"
        "  latscope ls                       the run ids\n",
    )
    s.add_argument("run", metavar="RUN", help="run id (or unique part of it, or 'last')")
    host_arg(s, "a run of host NAME ('last': its latest)")
    store_arg(s)
    s.add_argument(
        "--full",
        action="store_true",
        help="the full analysis: intervals, fit, outliers, spikes, drift, warnings",
    )
    s.add_argument(
        "--json",
        action="store_true",
        help="the run's facts as JSON (docs/store.md, 'A run's facts'; with an interleaved "
        "run's comparison as 'ab')",
    )

    e = sub.add_parser(
        "export",
        help="write a run's samples to CSV or Parquet",
        description=wrap(
            "Write every sample of a kept run, one row per iteration: the iteration, its start "
            "time in seconds, the worker process it was measured in and each timed column in "
            "nanoseconds, for analysis elsewhere (pandas, R, a spreadsheet)."
        ),
        formatter_class=RAW,
        epilog="examples:\n  latscope export last --csv pipe.csv\n"
        "  latscope export last --csv - | head -3     to standard output\n\n"
        "a FILE that exists is replaced only with --force\n",
    )
    e.add_argument("run", metavar="RUN", help="run id (or unique part of it, or 'last')")
    g = e.add_mutually_exclusive_group(required=True)
    g.add_argument(
        "--csv",
        metavar="FILE",
        help="write CSV (- : standard output): one row per iteration, durations in whole ns "
        "(the clocks' resolution is coarser), t_start_s in s to the ns",
    )
    g.add_argument("--parquet", metavar="FILE", help="write Parquet (durations as exact floats)")
    e.add_argument(
        "--exact",
        action="store_true",
        help="CSV: every digit of the durations as the clock's ticks give them (float ns)",
    )
    force_arg(e)
    store_arg(e)


def cmd_show(args: argparse.Namespace) -> int:
    """``show``, plus the full analysis with --full."""
    from ..measure.runner import load, load_facts
    from ..report.text import print_run

    # the run's facts, kept with it: no samples read, no statistic computed (latscope.facts)
    facts, meta = load_facts(args.run, open_store(args), host=args.host)
    ab = meta.get("ab")
    if getattr(args, "json", False):
        from ..facts import dumps

        sys.stdout.write(dumps({**facts, **({"ab": ab} if isinstance(ab, dict) else {})}) + "\n")
        return 0
    if isinstance(ab, dict):  # an interleaved run: its comparison first (latscope ab)
        from ..report.ab import print_ab

        print_ab(console, ab)
    full = bool(getattr(args, "full", False))
    print_run(console, facts, details=full, table=full or not isinstance(ab, dict))
    tag = meta.get("host")
    if tag:  # a host tag (an import's, a fleet's): the host the run belongs to
        console.print(f"[dim]host {shown(tag)} (the host tag it was added with)[/dim]")
    if not os.path.lexists(args.run):  # a kept run: its explanation (latscope explain)
        from ..measure.trace import load_explained as explained
        from ..report.explain import lines

        st = open_store(args)
        rec = explained(st.runs_dir / str(facts.get("id")))
        for line in lines(rec) if rec else []:
            console.print(line, markup=False, highlight=False)
    if not full:
        return 0
    from ..report import analyse, run_blocks
    from ..report.document import render_rich

    run = load(args.run, open_store(args), host=args.host)
    ra = value_error(lambda: analyse(run, facts["label"]))
    render_rich(run_blocks(ra, figures=False), console)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..measure.runner import load

    to_stdout = args.csv == "-"
    target = None if to_stdout else check_destination(Path(args.csv or args.parquet), args.force)
    run = load(args.run, open_store(args))
    frame = run.samples
    if args.csv and not args.exact:  # whole ns: what a person reads, no 17-digit floats
        import polars as pl

        ns = [c for c in frame.columns if c.endswith("_ns")]
        whole = frame.with_columns(pl.col(c).round(0).cast(pl.Int64, strict=False) for c in ns)
        for c in ns:  # beyond int64 (292 years of ns): no whole ns to write
            if whole[c].null_count() != frame[c].null_count():
                raise BadInput(
                    f"run {run.id}: {c} holds values beyond ±9.2e18 ns, which are no whole "
                    "number of ns; export them with --exact"
                )
        frame = whole.with_columns(pl.col("t_start_s").round(9))
    if to_stdout:  # the rows alone, for a pipe; a reader that leaves early ends it quietly
        try:
            sys.stdout.flush()
            frame.write_csv(sys.stdout)
            sys.stdout.flush()
        except OSError as e:  # polars says EPIPE as an OSError of its own
            if not isinstance(e, BrokenPipeError) and "Broken pipe" not in str(e):
                raise BadInput(f"cannot write the CSV to standard output: {e}") from None
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    assert target is not None
    try:
        with atomic_write(target, replace=args.force) as f:
            if args.csv:
                frame.write_csv(f)
            else:
                frame.write_parquet(f)
    except OSError as e:
        raise BadInput(f"cannot write {target}: {e.strerror}") from None
    console.print(
        f"wrote {run.n} rows × {len(frame.columns)} columns "
        f"(durations in {'ns' if args.exact or not args.csv else 'whole ns'}, t_start_s in s) "
        f"to {shown(target)}"
    )
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "show": cmd_show,
    "export": cmd_export,
}
