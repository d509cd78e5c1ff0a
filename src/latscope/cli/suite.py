"""`latscope suite` (scenario files, docs/suites.md) and `latscope env` (the environment and
what in it biases the figures).  Hooked into the CLI (cli/__init__.py) by `add_parsers(sub)`
and `COMMANDS`."""

from __future__ import annotations

import argparse
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BadInput, Interrupted, LatscopeError
from ..files import check_destination, check_directory
from ..scenarios import BUILTIN
from ..store import space
from ..units import shown
from .shared import (
    RAW,
    console,
    err_console,
    force_arg,
    open_store,
    record_on_stdout,
    store_arg,
    wrap,
)

EPILOG_SUITE = """\
examples:
  latscope suite quick                  one scenario per benchmark family, under a minute
  latscope suite seeds                  five student lab experiments, re-created
  latscope suite gil                    why Python threads saw 5 ms: the GIL switch interval
  latscope suite my.toml --dry-run      validate the file and print the plan; run nothing
  latscope suite my.toml --repeat 5 --seed 7 --html report.html
  latscope suite my.toml --latex tex/   also tex/<suite run>.tex and its PDF figures
  latscope suite my.toml --paired-time 0   verdicts from the repetitions alone (unpaired)

built-in suite names resolve before paths; the file format is in docs/suites.md
after the repetitions, each benchmark's scenarios run once more together, interleaved in
one process (--paired-time, 5 s each): the ratios and verdicts come from that paired run.
--html FILE and --md DIR are checked before the first run: a file that exists is replaced
only with --force. SIGINT, SIGTERM and SIGHUP stop after the current probe has cleaned up;
the finished runs stay (exit 130, 143, 129).
"""
EPILOG_ENV = """\
examples:
  latscope env                  kernel, CPU, frequency, clock source, virtualisation, ...
  latscope env --check          also what in this environment biases latency figures
  latscope env --path /mnt/data --json
"""


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "suite",
        help="run a suite of scenarios (TOML file, or built-in: " + ", ".join(BUILTIN) + ")",
        description=wrap(
            "Run every scenario of a suite R times, in an interleaved random order "
            "(recorded seed), then compare the scenarios and write a report.  The whole file is "
            "validated against the probe's catalogue before anything runs."
        ),
        epilog=EPILOG_SUITE,
        formatter_class=RAW,
    )
    p.add_argument(
        "suite",
        metavar="FILE|" + "|".join(BUILTIN),
        help="scenario file or built-in suite (gil: the GIL switch-interval sweep)",
    )
    p.add_argument("--repeat", type=int, metavar="R", help="repetitions of every scenario")
    p.add_argument("--seed", type=int, metavar="S", help="seed of the run order (default: random)")
    p.add_argument(
        "--paired-time",
        type=float,
        default=5.0,
        metavar="S",
        help="after the repetitions, each benchmark's scenarios are measured once more as arms "
        "of one interleaved run of S seconds (as 'latscope ab'), and the ratios and verdicts "
        "come from it (default 5; 0: none, the verdicts come from the repetitions alone)",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="HTML report (default: STORE/reports/<suite run id>.html)",
    )
    p.add_argument("--md", metavar="DIR", help="also write a Markdown report into DIR")
    p.add_argument(
        "--latex",
        metavar="DIR",
        help="also write a LaTeX fragment (tables, figure environments) and PDF figures into DIR",
    )
    p.add_argument("--no-figures", action="store_true", help="reports with tables only (faster)")
    p.add_argument("--dry-run", action="store_true", help="print the plan; run nothing")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--json",
        action="store_true",
        help="the suite's record as JSON on standard output (what is kept in STORE/suites: "
        "every scenario's figures and comparison), the rest on standard error",
    )
    force_arg(p)
    store_arg(p)

    p = sub.add_parser(
        "env",
        help="the environment measurements are taken in (and --check: what biases them)",
        description=wrap(
            "Print the environment every run records (kernel, CPU, frequency "
            "scaling, clock source, virtualisation, cgroup, mitigations, isolation, load, the "
            "filesystem of --path).  --check also samples the CPU load for a moment and lists "
            "what in this environment biases latency figures, with what to do about each."
        ),
        epilog=EPILOG_ENV,
        formatter_class=RAW,
    )
    p.add_argument("--check", action="store_true", help="list findings with advice")
    p.add_argument("--path", metavar="DIR", help="also record the filesystem holding DIR")
    p.add_argument("--json", action="store_true", help="print JSON")


# ------------------------------------------------------------------------------- env


def cmd_env(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .. import env

    if args.path is not None and not os.path.exists(args.path):
        raise BadInput(f"--path {args.path}: does not exist")
    e = env.capture(path=args.path, sample_load=args.check)
    findings = env.check(e) if args.check else None
    if args.json:
        out: dict[str, Any] = {"env": e}
        if findings is not None:
            out["findings"] = [asdict(f) for f in findings]
        console.print_json(json.dumps(out, default=str), ensure_ascii=True)
        return 0
    console.print(env.render(e, findings))
    if findings:
        w = sum(f.severity == "warning" for f in findings)
        console.print(
            f"[dim]{w} warning(s), {len(findings) - w} hint(s); every run records this "
            "environment in its run.json[/dim]"
        )
    return 0


# ------------------------------------------------------------------------------- suite


def _plan_table(suite: Any, steps: list[Any], seed: int) -> Any:
    from rich.table import Table

    t = Table(title=f"scenarios of {shown(suite.name)}", title_justify="left", show_lines=False)
    for h in ("scenario", "benchmark", "params", "n", "warmup", "clock", "R", "note"):
        t.add_column(h, justify="right" if h in ("n", "warmup", "R") else "left")
    root = os.geteuid() == 0 if hasattr(os, "geteuid") else False
    for s in suite.scenarios:
        note = shown(s.note or "")
        if s.needs_root and not root:
            note = (
                f"[yellow]needs root ({', '.join(s.needs_root)}): will be skipped[/yellow] " + note
            )
        t.add_row(
            shown(s.name),
            shown(s.benchmark),
            shown(" ".join(f"{k}={v}" for k, v in s.params.items())),
            str(s.n) if s.n else "default",
            str(s.warmup) if s.warmup is not None else "default",
            shown(s.clock or "auto"),
            str(s.repeat),
            note,
        )
    return t


def _print_plan(console: Any, suite: Any, steps: list[Any], seed: int) -> None:
    console.print(_plan_table(suite, steps, seed))
    for k in suite.skipped:
        console.print(f"[yellow]not run:[/yellow] {shown(k.name)}: {shown(k.why)}")
    order = "  ".join(f"{s.index + 1}.{s.scenario.name}#{s.repetition}" for s in steps)
    console.print(
        f"[bold]order[/bold] ({suite.interleave}, seed {seed}, {len(steps)} runs):", shown(order)
    )


def _write_reports(
    sr: Any, rows: list[Any], args: argparse.Namespace, console: Any, claims: list[Any]
) -> None:
    """The HTML report (with --md the Markdown one, with --latex a LaTeX fragment), rendered
    by report/full.py and report/latex.py."""
    from .. import report
    from ..suite import document

    html = Path(args.html) if args.html else sr.store.reports_dir / f"{sr.suite_run}.html"
    if not args.html:
        sr.store.make_dir("reports")  # checked: no other user can redirect the report
    # each scenario's full analysis: a page in the folder <report>-runs beside the report
    doc = document(
        sr, rows, figures=not args.no_figures, pages_dir=f"{html.stem}-runs", claims=claims
    )
    written = report.write_html(doc, html, force=args.force or not args.html)
    pages = f" (and a page per scenario in {doc.pages_dir}/ beside it)" if doc.pages else ""
    console.print(f"report: {shown(written)}{pages}")
    if args.md:
        md = report.write_markdown(doc, args.md, force=args.force)
        console.print(f"report (Markdown): {shown(md)}")
    if args.latex:
        brief = document(sr, rows, details=False, figures=not args.no_figures, claims=claims)
        frags = [report.suite_fragment(brief, sr.suite_run)]
        paths = report.write_latex(frags, args.latex, doc.title, force=args.force)
        console.print(
            "report (LaTeX): " + report.latex.written(paths, frags, f"suite {sr.suite.name}"),
            markup=False,
        )


def cmd_suite(args: argparse.Namespace) -> int:
    """`latscope suite ...` (with --json, the suite's record alone on standard output)."""
    with record_on_stdout(args.json) as emit:
        return _suite(args, emit)


def _suite(args: argparse.Namespace, emit: Callable[[str], None]) -> int:
    from .. import scenarios
    from ..suite import execute  # the comparison (scipy) is imported once the runs are done

    if args.paired_time and not (0.2 <= args.paired_time <= 3600):
        raise BadInput(
            f"--paired-time {args.paired_time:g}: give seconds between 0.2 and 3600, or 0 for "
            "no paired runs"
        )
    from ..suite import claims as _claims

    suite = scenarios.load(args.suite, repeat=args.repeat)
    claims = _claims.parse(suite)  # checked before anything runs
    seed = args.seed if args.seed is not None else suite.seed
    if seed is None:
        seed = scenarios.new_seed()
    steps = scenarios.plan(suite, seed)
    st = open_store(args)
    console.print(
        f"[bold]suite {shown(suite.name)}[/bold] ({shown(suite.path)}): "
        f"{len(suite.scenarios)} scenarios, {len(steps)} runs, order {suite.interleave} with "
        f"seed {seed}; store {shown(st.root)}"
    )
    if suite.description:
        console.print(f"[dim]{shown(suite.description.strip())}[/dim]")
    if args.dry_run:
        _print_plan(console, suite, steps, seed)
        console.print("[dim]dry run: nothing was run[/dim]")
        return 0
    if args.html:  # before the first run, not after the last
        check_destination(args.html, args.force)
    if args.md:
        check_directory(args.md, ["report.md"], args.force)  # as report.write_markdown
    if args.latex:
        check_directory(args.latex, [], args.force)
    st.ensure("suites", *(() if args.html else ("reports",)))  # checked before the first run
    for k in suite.skipped:
        console.print(f"[yellow]not run:[/yellow] {shown(k.name)}: {shown(k.why)}")
    sr = execute(suite, steps, seed, st, console, err_console, quiet=args.quiet)
    if args.paired_time and not sr.interrupted:
        from .. import probe
        from ..suite.paired import measure_pairs

        try:
            measure_pairs(sr, console, time_s=args.paired_time)
        except (Interrupted, KeyboardInterrupt) as e:
            sr.interrupted = True
            sr.signum = probe.signum_of(e)
    from ..suite import write_record

    rows: list[Any] = []
    verdicts: list[Any] = []
    if any(r.status == "ok" for r in sr.results):
        from ..suite import compare_rows, print_comparison

        rows = compare_rows(sr)
        if rows:
            print_comparison(console, sr, rows)
        verdicts = _claims.check(claims, rows)
        _claims.print_claims(console, verdicts)
    for name, why in sr.skipped_scenarios().items():
        console.print(f"[yellow]skipped here:[/yellow] {shown(name)}: {shown(why)}")
    ok = sum(r.status == "ok" for r in sr.results)
    kept = (
        f"the {ok} runs finished stay in the store (latscope ls --suite {sr.suite_run})"
        if ok
        else "no run was kept"
    )
    try:
        rec = write_record(sr, rows, verdicts)
    except OSError as e:
        if e.errno not in space.FULL:
            raise
        what = f"the record of suite run {sr.suite_run} did not fit"
        raise space.full(st.root, what, outcome=kept) from None
    console.print(f"[dim]suite record: {shown(rec)}[/dim]")
    emit(Path(rec).read_text())
    if sr.interrupted:
        what = (
            f"{ok} of {len(steps)} runs finished and stay in the store "
            f"(latscope ls --suite {sr.suite_run})"
            if ok
            else f"none of the {len(steps)} runs finished"
        )
        raise Interrupted(what, sr.signum or signal.SIGINT)
    if ok:
        try:
            _write_reports(sr, rows, args, console, verdicts)
        except (OSError, LatscopeError) as e:
            text = e.message if isinstance(e, LatscopeError) else (e.strerror or str(e))
            if not space.message_says_full(text) or not isinstance(e, (OSError, BadInput)):
                raise
            raise LatscopeError(
                f"the suite's report did not fit ({shown(text, markup=False)}); {kept}, "
                f"with the suite record {rec}: free some space, or write the report "
                "elsewhere (--html FILE)",
                1,
            ) from None
    console.print(
        f"{ok} of {len(steps)} runs kept (suite run {sr.suite_run}); "
        f"latscope ls --suite {sr.suite_run}"
    )
    return 1 if sr.failed else 0


COMMANDS = {"suite": cmd_suite, "env": cmd_env}
