"""The analysis commands of the CLI: report, compare, import and plot.

The CLI (cli/__init__.py) calls ``add_parsers(sub)`` while building its parser and merges
``COMMANDS`` into its own table; everything else about these commands lives here. Heavy
modules (matplotlib, scipy) are imported only when a command needs them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BadInput
from ..files import check_destination, check_directory
from ..units import shown
from .shared import (
    RAW,
    console,
    err_console,
    force_arg,
    host_arg,
    open_store,
    store_arg,
    value_error,
    wrap,
)

if TYPE_CHECKING:
    from ..record import Run

PLOT_KINDS = ("hist", "box", "violin", "time", "ecdf", "tail", "acf", "qq", "compare")
#: Show a progress bar for reports with at least this many runs or samples.
PROGRESS_RUNS = 3
PROGRESS_SAMPLES = 500_000

REPORT_EPILOG = """\
examples:
  latscope report last --html pipe.html
      one run: environment, clock, summary with intervals, fit, outliers, drift, figures
  latscope report RUN_A RUN_B RUN_C --html cmp.html
      several runs, each in full, then a comparison with the first (the baseline)
  latscope report last --md report/
      report/report.md and its PNG figures, e.g. for a Git repository
  latscope report last --latex tex/
      for a LaTeX lab report: tex/<run id>.tex (booktabs tables of the setup and the summary,
      a figure per plot, each with a caption and a label) and its figures as PDF files;
      \\input{tex/<run id>} with \\usepackage{graphicx,booktabs}; tex/example.tex compiles

The HTML file is self-contained (inline CSS, figures embedded, no scripts): it opens
without network access and can be mailed or archived as is. A FILE (or DIR/report.md, or a
figure in DIR) that exists is replaced only with --force; a symbolic link at FILE is then
replaced, never followed, and one at DIR is refused.
"""

COMPARE_EPILOG = """\
examples:
  latscope compare RUN_A RUN_B
      is B faster or slower than A, per common column, within ±2% noise?
  latscope compare RUN_A RUN_B RUN_C --noise 0.05 --column rtt/2
      B and C against the baseline A, one column, ±5% counts as the same
  latscope compare RUN_A RUN_B --plot shift.pdf
      also write the shift plot of the deciles (PNG, SVG or PDF by suffix)

the 95% CI of the ratio of medians includes the variation between worker processes (Welch t
on their log medians); a run measured in one process needs the variation known for its
scenario ('latscope trust', or earlier runs in the store).
verdicts: faster / slower when the CI excludes 1 and the change exceeds the noise threshold
(--noise, raised to the A/A range 'latscope trust' measured), same when the whole CI lies
within it, inconclusive otherwise (the output says what would settle it).
"""

IMPORT_EPILOG = """\
examples:
  latscope import pi-syscall.lss pi-file.lss
      sample files the static probe wrote on another machine (docs/ports.md)
  latscope import results.csv
      iteration,open_us,write_us,read_us,close_us: units from the header, iteration skipped
  latscope import windows.csv --unit us --name "Windows cached"
      Open,Write,Read,Close in microseconds (floats are fine)
  latscope import pingpong.csv --unit ns --time-column t
      with the start time of each iteration in column t (ns)

header units: a suffix _ns, _us, _µs, _ms, _s or (ns), [us], ... Values are kept exactly
(picosecond ticks). The imported run is an ordinary run: show, report, compare and export
work on it. A column with missing values, NaN or negative latencies is refused.

limits (CSV): a regular file of at most 256 MiB (UTF-8, UTF-16 with its BOM, or Windows-1252),
at most 256 columns and 100,000,000 rows; headers of at most 128 characters.
"""

PLOT_EPILOG = """\
examples:
  latscope plot last --kind hist -o hist.png     histogram up to p97 (--cut 100: all), with the fit
  latscope plot last --kind hist --log -o hist-log.svg    log-x histogram: the body, rest counted
  latscope plot last --kind hist --log-count --cut 100 -o tail.png   all, counts on a log axis
  latscope plot last --kind time --column rtt -o time.pdf  every sample, change points, spikes
  latscope plot last --kind box -o box.png                all columns of the run, log axis
  latscope plot RUN_A RUN_B --kind tail --column rtt -o tail.png   tails of two runs
  latscope plot RUN_A RUN_B --kind compare -o cmp.pdf     medians with CIs + boxes by column

kinds: hist, box, violin, time, ecdf, tail, acf, qq (one run or several), compare (runs
side by side, grouped by column). The suffix of -o chooses PNG, SVG or PDF; a FILE that
exists is replaced only with --force.
"""


def _noise(text: str) -> float:
    try:
        v = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number (e.g. 0.02 or 2%)") from None
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"{text}: give a fraction in [0, 1), e.g. 0.02 or 2%")
    return v


def _percent(text: str) -> float:
    try:
        v = float(text.lstrip("p"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentile (e.g. 97)") from None
    if not 0.0 < v <= 100.0:
        raise argparse.ArgumentTypeError(f"{text}: a percentile lies in (0, 100]")
    return v


def add_parsers(sub: Any) -> None:
    """Add report, compare, import and plot to the CLI's subparsers, and --full to show."""
    r = sub.add_parser(
        "report",
        help="the full analysis of runs as one HTML file (or Markdown, or LaTeX for a report)",
        description=wrap(
            "Write the full analysis of one or more runs: per run the environment, "
            "parameters, clock, summary with confidence intervals, distribution fit, outliers, "
            "spikes, drift, warnings and figures; with several runs a comparison with the first."
        ),
        formatter_class=RAW,
        epilog=REPORT_EPILOG,
    )
    r.add_argument("runs", nargs="+", metavar="RUN", help="run ids (or unique parts, or 'last')")
    r.add_argument("--html", metavar="FILE", help="write one self-contained HTML file")
    r.add_argument("--md", metavar="DIR", help="write DIR/report.md and its PNG figures")
    r.add_argument(
        "--latex",
        metavar="DIR",
        help="write LaTeX fragments (tables, figure environments) and PDF figures into DIR",
    )
    r.add_argument(
        "--noise",
        type=_noise,
        default=0.02,
        metavar="F",
        help="noise threshold of the comparison verdicts (default 0.02 = 2%%)",
    )
    r.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    r.add_argument("--no-figures", action="store_true", help="tables only (faster)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    force_arg(r)
    store_arg(r)

    c = sub.add_parser(
        "compare",
        help="is a run faster or slower than a baseline? ratios with CIs and verdicts",
        description=wrap(
            "Compare runs with the first (the baseline), per column they have in "
            "common: ratio of medians and of p99 with bootstrap CIs, Mann–Whitney p, and a verdict "
            "against a noise threshold."
        ),
        formatter_class=RAW,
        epilog=COMPARE_EPILOG,
    )
    c.add_argument("runs", nargs="+", metavar="RUN", help="baseline first, then the others")
    c.add_argument(
        "--noise",
        type=_noise,
        default=0.02,
        metavar="F",
        help="differences within ±F count as the same (default 0.02 = 2%%)",
    )
    c.add_argument(
        "--column", action="append", metavar="C", help="compare only this column; repeatable"
    )
    c.add_argument("--plot", metavar="FILE", help="write the shift plot (.png, .svg or .pdf)")
    c.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    c.add_argument(
        "--json",
        action="store_true",
        help="the comparisons as JSON (schema 1: per run and column, the medians, the ratio "
        "with its interval, the verdict and what would settle it), nothing else on stdout",
    )
    c.add_argument(
        "--fail-if",
        choices=["slower", "different"],
        help="exit 1 when a verdict is slower (or faster or slower: different), for CI "
        "pipelines; as 'latscope ab --fail-if'",
    )
    force_arg(c)
    host_arg(c, "runs of host NAME ('last': its latest)")
    store_arg(c)

    i = sub.add_parser(
        "import",
        help="bring sample files measured elsewhere, or CSVs of another program, into the store",
        description=wrap(
            "Import each FILE into the store as a run. A sample file (.lss, written by "
            "latscope-probe on any machine: a Raspberry Pi, a Windows PC) keeps its benchmark, "
            "clock and the environment its probe recorded; a file imported before (the same "
            "content) is refused. A CSV with one row per iteration and one column per timed "
            "operation becomes a run of benchmark 'imported'."
        ),
        formatter_class=RAW,
        epilog=IMPORT_EPILOG,
    )
    i.add_argument("file", nargs="+", metavar="FILE", help="a sample file (.lss) or a CSV file")
    i.add_argument(
        "--unit",
        metavar="UNIT",
        help="unit of columns whose header names none: ns, us (µs), ms or s",
    )
    i.add_argument("--name", metavar="NAME", help="a name for the run (default: a CSV's file name)")
    i.add_argument(
        "--time-column",
        metavar="COL",
        help="column with the start time of each iteration (default: one named t, time, "
        "timestamp or t_start, if it has a unit)",
    )
    i.add_argument("--quiet", action="store_true", help="print only the run id")
    host_arg(i, "keep the runs under host NAME (default: the host name the probe recorded)")
    store_arg(i)

    p = sub.add_parser(
        "plot",
        help="one figure of a run (or several runs) as PNG, SVG or PDF",
        description=wrap(
            "Draw one figure: histogram, box/violin, every sample over time, ECDF, "
            "tail, autocorrelation, Q–Q plot, or runs compared side by side."
        ),
        formatter_class=RAW,
        epilog=PLOT_EPILOG,
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="run ids (or unique parts, or 'last')")
    p.add_argument("--kind", required=True, choices=PLOT_KINDS, help="what to draw")
    p.add_argument(
        "--column",
        action="append",
        metavar="C",
        help="column to draw (default: the first; box/violin/compare: all); repeatable",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write")
    p.add_argument(
        "--cut",
        type=_percent,
        metavar="P",
        help="hist: draw only up to percentile P (default 97, the samples beyond counted on the "
        "figure; 100 draws every sample)",
    )
    p.add_argument("--log", action="store_true", help="hist: logarithmic latency axis")
    p.add_argument(
        "--log-count",
        action="store_true",
        help="hist: logarithmic latency axis and samples per decade on a logarithmic axis, "
        "where a tail of a few samples shows (with --cut 100: every sample)",
    )
    p.add_argument("--seconds", action="store_true", help="time: against time instead of iteration")
    force_arg(p)
    store_arg(p)


# ------------------------------------------------------------------------------- helpers


def _load_runs(args: argparse.Namespace) -> list[Run]:
    from ..measure.runner import load

    st = open_store(args)
    return [load(ref, st, host=getattr(args, "host", None)) for ref in args.runs]


# ------------------------------------------------------------------------------- commands


def cmd_report(args: argparse.Namespace) -> int:
    from .. import progress, report

    if not args.html and not args.md and not args.latex:
        raise BadInput("report: give --html FILE, --md DIR and/or --latex DIR")
    if args.html:
        report.check_target(Path(args.html), force=args.force)
    if args.md:
        report.check_target(Path(args.md), directory=True, force=args.force)
    if args.latex:  # its file names are known once the runs are analysed (write_latex)
        check_directory(args.latex, [], args.force)
    runs = _load_runs(args)
    big = len(runs) >= PROGRESS_RUNS or sum(r.n for r in runs) >= PROGRESS_SAMPLES
    figures = not args.no_figures
    with progress.steps(err_console, big and not args.quiet) as steps:
        steps.phase("analysing", sum(len(r.all_columns) for r in runs))
        analyses = value_error(lambda: report.analyse_runs(runs, seed=args.seed, progress=steps))
        written = []
        if args.html or args.md:
            doc = value_error(
                lambda: report.build(
                    runs, figures=figures, noise=args.noise, seed=args.seed, analyses=analyses
                )
            )
            if args.html:
                steps.phase("drawing figures", len(doc.images))
                written.append(report.write_html(doc, args.html, progress=steps, force=args.force))
            if args.md:
                steps.phase("drawing figures", len(doc.images))
                written.append(
                    report.write_markdown(doc, args.md, progress=steps, force=args.force)
                )
        if args.latex:
            frags = value_error(
                lambda: report.report_fragments(
                    analyses, noise=args.noise, seed=args.seed, figures=figures
                )
            )
            steps.phase("drawing figures", sum(len(f.images) for f in frags))
            title = "latscope report — " + ", ".join(a.label for a in analyses)
            paths = report.write_latex(frags, args.latex, title, progress=steps, force=args.force)
    n = f"{len(runs)} run{'s' if len(runs) > 1 else ''}"
    for w in written:
        console.print(f"wrote {shown(w)} ({n})")
    if args.latex:
        console.print(report.latex.written(paths, frags, n), markup=False)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..report import compare

    if len(args.runs) < 2:
        raise BadInput("compare: give at least two runs (the first is the baseline)")
    if args.plot:
        from .. import plots  # matplotlib: only when there is a figure to draw

        if not args.plot.lower().endswith(tuple(plots.FORMATS)):
            raise BadInput(f"--plot {args.plot}: write .png, .svg or .pdf")
        check_destination(args.plot, args.force)
    runs = _load_runs(args)
    _cols, rows = compare.compare_runs(
        runs, noise=args.noise, seed=args.seed, columns=args.column, store=open_store(args)
    )
    if args.json:
        sys.stdout.write(json.dumps(_compare_json(runs, rows, args.noise), indent=1) + "\n")
    else:
        compare.print_comparison(console, runs, rows)
    hosts = [r.host for r in runs]
    if not args.json and len({h for h in hosts if h is not None}) > 1:
        console.print(
            "[yellow]note:[/yellow] the runs are of different hosts ("
            + ", ".join(
                f"{shown(r.id)} on {shown(h or '?')}" for r, h in zip(runs, hosts, strict=True)
            )
            + "): each difference is between hosts too"
        )
    if args.plot:
        fig = compare.shift_figure(runs, rows)
        plots.save(fig, args.plot, replace=args.force)
        (err_console if args.json else console).print(f"wrote {shown(args.plot)}")
    if args.fail_if:
        bad = {"slower"} if args.fail_if == "slower" else {"slower", "faster"}
        failing = [
            f"{runs[r.other].id} {r.column}: {r.result.verdict}"
            for r in rows
            if r.result is not None and r.result.verdict in bad
        ]
        for line in failing:
            err_console.print(f"latscope: --fail-if {args.fail_if}: {shown(line)}", markup=False)
        return 1 if failing else 0
    return 0


#: The version of `latscope compare --json`.
COMPARE_SCHEMA = 1


def _compare_json(runs: Sequence[Any], rows: Sequence[Any], noise: float) -> dict[str, Any]:
    """`compare --json`: the runs, then per run after the baseline and column its comparison
    (unpaired: runs made at different times)."""
    out = []
    for r in rows:
        c = r.result
        item: dict[str, Any] = {
            "run": runs[r.other].id,
            "baseline": runs[r.baseline].id,
            "column": r.column,
        }
        if c is None:
            item["error"] = r.error
        else:
            m = c.median_ratio
            item |= {
                "median_ns": c.median_b,
                "baseline_median_ns": c.median_a,
                "ratio": m.estimate,
                "low": m.low,
                "high": m.high,
                "level": m.level,
                "verdict": c.verdict,
                "settle": r.settle,
                "p99_ratio": None if c.p99_ratio is None else c.p99_ratio.estimate,
            }
        out.append(item)
    return {
        "schema": COMPARE_SCHEMA,
        "paired": False,
        "noise": noise,
        "runs": [r.id for r in runs],
        "comparisons": out,
    }


def cmd_import(args: argparse.Namespace) -> int:
    from ..env import emulator
    from ..measure.runner import import_samples, is_sample_file

    csv_only = [o for o, v in (("--unit", args.unit), ("--time-column", args.time_column)) if v]
    if args.name is not None and len(args.file) > 1:
        raise BadInput("--name names one run: give one FILE with it")
    st = open_store(args)
    for f in args.file:
        if not is_sample_file(f):
            if args.host is not None:
                raise BadInput(f"--host is for sample files; {f} is a CSV file")
            _import_csv(args, f, st)
            continue
        if csv_only:
            raise BadInput(f"{csv_only[0]} is for CSV files; {f} is a sample file")
        name = args.name.strip() if args.name else None
        if args.name is not None and not name:
            raise BadInput("--name: give a non-empty name")
        host = args.host.strip() if args.host else None
        if args.host is not None and not host:
            raise BadInput("--host: give a non-empty name")
        run = import_samples(f, store=st, tags={"name": name} if name else None, host=host)
        if args.quiet:
            console.print(shown(run.id))
            continue
        env = run.env or {}
        machine = (env.get("kernel") or {}).get("machine") or "machine unknown"
        where = f"on {env.get('hostname') or 'a host it does not name'} ({machine})"
        if host:
            where += f", kept as host {host}"
        under = emulator(env)
        if under is not None:
            where += f" under emulation ({under})"
        store = f" --store {args.store}" if getattr(args, "store", None) else ""
        console.print(f"imported {shown(f)} as run [bold]{shown(run.id)}[/bold]")
        console.print(
            f"  {shown(run.benchmark)} n={run.n}, clock {shown(run.clock.get('name'))}, "
            f"measured {shown(where)}\n  see it with: latscope show {shown(run.id + store)}",
            highlight=False,
        )
    return 0


def _import_csv(args: argparse.Namespace, f: str, st: Any) -> None:
    from ..measure.importer import import_csv
    from ..report.text import print_run

    run, notes = import_csv(
        f, unit=args.unit, name=args.name, time_column=args.time_column, store=st
    )
    if args.quiet:
        console.print(shown(run.id))
        return
    for n in notes:
        console.print(f"[dim]note: {shown(n)}[/dim]")
    print_run(console, run)
    console.print(f"[dim]run {shown(run.id)} imported into {shown(st.root)}[/dim]")


def _columns_for(runs: Sequence[Run], wanted: Sequence[str] | None, all_default: bool) -> list[str]:
    from ..report.compare import common_columns

    common = common_columns(runs) if len(runs) > 1 else runs[0].all_columns
    if wanted:
        for c in wanted:
            if c not in common:
                where = "all the runs" if len(runs) > 1 else "the run"
                raise BadInput(
                    f"--column {c}: not a column of {where} (columns: {', '.join(common)})"
                )
        return list(wanted)
    if all_default and len(runs) == 1:
        return list(runs[0].columns) or common
    return common if all_default else common[:1]


def cmd_plot(args: argparse.Namespace) -> int:
    from .. import plots
    from ..report.text import unique_labels

    target = args.output
    if not target.lower().endswith(tuple(plots.FORMATS)):
        raise BadInput(f"-o {target}: write .png, .svg or .pdf (the suffix chooses the format)")
    check_destination(target, args.force)
    runs = _load_runs(args)
    labels = unique_labels(runs)
    kind = args.kind
    single = kind in ("hist", "time", "acf", "qq")
    if single and len(runs) > 1:
        raise BadInput(f"--kind {kind} draws one run; give one RUN (or use box, ecdf, tail)")
    cols = _columns_for(runs, args.column, kind in ("box", "violin", "compare"))
    if single and len(cols) > 1:
        raise BadInput(f"--kind {kind} draws one column; give one --column")
    if args.seconds and kind != "time":
        raise BadInput("--seconds is for --kind time")
    if (args.cut is not None or args.log or args.log_count) and kind != "hist":
        raise BadInput("--cut, --log and --log-count are for --kind hist")
    log = args.log or args.log_count
    run, label = runs[0], labels[0]
    col = cols[0]
    title = f"{col} — {label} [{run.id}]"

    def groups() -> dict[str, Any]:
        if len(runs) == 1:
            return {c: run.values(c) for c in cols}
        return {
            f"{lab}" + (f" {c}" if len(cols) > 1 else ""): r.values(c)
            for c in cols
            for r, lab in zip(runs, labels, strict=True)
        }

    gtitle = f"{label} [{run.id}]" if len(runs) == 1 else ", ".join(cols)

    def draw() -> Any:
        from ..stats import analyze_column, dependence, fit_shifted_lognormal

        if kind == "hist":
            x = run.values(col)
            return plots.histogram(
                x,
                label=title,
                fit=fit_shifted_lognormal(x),
                cut=args.cut if args.cut is not None or log else plots.HIST_CUT,
                log_x=log,
                log_count=args.log_count,
                step=run.column_step_ns(col),
            )
        if kind == "time":
            if args.seconds and not run.has_times:
                raise BadInput(f"run {run.id} has no start times (imported without a time column)")
            x = run.values(col)
            t = run.column_times_s(col) if run.has_times else None
            ca = analyze_column(
                x, t, step_ns=run.column_step_ns(col), segments=run.column_segments(col)
            )
            return plots.time_series(
                x,
                label=title,
                t=t if args.seconds else None,
                drift=ca.drift,
                spikes=ca.outliers.spike_indices,
            )
        if kind == "acf":
            return plots.acf(dependence(run.values(col)), label=title)
        if kind == "qq":
            return plots.qq(fit_shifted_lognormal(run.values(col)), label=title)
        if kind in ("box", "violin"):
            return plots.box(
                groups(),
                title=gtitle,
                violin=kind == "violin",
                xlabel="column" if len(runs) == 1 else "run",
            )
        if kind == "ecdf":
            return plots.ecdf(groups(), title=gtitle)
        if kind == "tail":
            return plots.tail(groups(), title=gtitle)
        from ..stats import confidence_intervals

        series = []
        for r, lab in zip(runs, labels, strict=True):
            for c in cols:
                x = r.values(c)
                iv = confidence_intervals(x).median
                series.append(plots.Series(lab, c, x, (iv.low, iv.high)))
        return plots.scenarios(series)

    fig = value_error(draw)
    plots.save(fig, target, replace=args.force)
    console.print(f"wrote {shown(target)}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "report": cmd_report,
    "compare": cmd_compare,
    "import": cmd_import,
    "plot": cmd_plot,
}
