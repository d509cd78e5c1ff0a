"""Store commands: `latscope ls`, `latscope rm`, `latscope history` (docs/store.md).

Hooked into the CLI (cli/__init__.py) by `add_parsers(sub)` and `COMMANDS`.  None of them
fails because of what it finds in the store: damaged runs and foreign entries are reported one
line each (on stderr) and skipped.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
from typing import Any

from ..errors import BadInput, LatscopeError
from ..files import check_destination
from ..units import fmt_bare, pick_unit, shown
from .shared import (
    RAW,
    console,
    err_console,
    force_arg,
    host_arg,
    open_store,
    params_arg,
    parse_params,
    store_arg,
    wrap,
)

EPILOG_LS = """\
examples:
  latscope ls                       every run, oldest first
  latscope ls --bench file          the runs of one benchmark
  latscope ls --suite seeds         the runs of a suite (name or suite run id)
  latscope ls --json                machine-readable
"""
EPILOG_RM = """\
examples:
  latscope rm 20250101-120000-pipe-ab12     one run (id, unique part of it, or 'last')
  latscope rm --partial                     what killed runs left behind
"""
EPILOG_HISTORY = """\
examples:
  latscope history pipe                         p50 of the first column over time
  latscope history file --column read -p cache=warm --stat p99
  latscope history syscall --plot syscall.png   also a plot (95% CI bars for p50)
"""


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "ls",
        help="list the runs in the store",
        description=wrap(
            "List the runs in the store: id, created, benchmark, parameters, n and the "
            "brief figures of the summary (median and tail percentiles; '—' where too few "
            "samples lie above a percentile) of the first column, status.  Partial runs "
            "(killed, or still running) are listed as partial; damaged and foreign entries "
            "are reported and skipped."
        ),
        epilog=EPILOG_LS,
        formatter_class=RAW,
    )
    p.add_argument("--bench", metavar="B", help="only runs of benchmark B")
    p.add_argument("--suite", metavar="S", help="only runs of suite S (name or suite run id)")
    host_arg(p)
    p.add_argument(
        "--wide",
        action="store_true",
        help="every column (creation time, benchmark, p99.9), whatever the terminal's width",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    store_arg(p)

    p = sub.add_parser(
        "store",
        help="keep the store's runs current: 'latscope store upgrade'",
        description=wrap(
            "upgrade: give every run kept by an older latscope the facts this one keeps with a "
            "run (facts.json: its summary, findings and the catalogue's entry as it was), "
            "computed once from its samples, so that show, ls and the reports read them "
            "instead of computing them.  A run is otherwise upgraded when it is first shown; "
            "one that cannot be (damaged samples) is named with the reason."
        ),
        epilog="example:\n  latscope store upgrade --store ~/runs\n",
        formatter_class=RAW,
    )
    p.add_argument("action", choices=("upgrade",), help="what to do: upgrade")
    store_arg(p)

    p = sub.add_parser(
        "rm",
        help="remove runs from the store",
        description=wrap(
            "Remove runs (each is renamed out of sight first, then deleted).  "
            "--partial removes what killed runs left; runs still being measured are kept."
        ),
        epilog=EPILOG_RM,
        formatter_class=RAW,
    )
    p.add_argument("runs", nargs="*", metavar="RUN", help="run id, unique part of it, or 'last'")
    p.add_argument("--partial", action="store_true", help="remove the leftovers of killed runs")
    store_arg(p)

    p = sub.add_parser(
        "history",
        help="one figure of a benchmark over time, across runs",
        description=wrap(
            "A figure (default: the median) of one benchmark column across the runs "
            "in the store, oldest first, as a table and optionally a plot with CI bars."
        ),
        epilog=EPILOG_HISTORY,
        formatter_class=RAW,
    )
    p.add_argument("bench", metavar="BENCH", help="benchmark name")
    p.add_argument("--column", metavar="C", help="timed column (default: the first)")
    p.add_argument(
        "--stat",
        default="p50",
        metavar="STAT",
        help="a figure of the run table: p50 (default), p99, p99.9, mean, ess, ...; "
        "an unknown name lists them all",
    )
    params_arg(p, "only runs with this parameter value; repeatable")
    host_arg(p)
    p.add_argument("--plot", metavar="FILE", help="also write a plot (.png, .svg, .pdf)")
    p.add_argument(
        "--wide",
        action="store_true",
        help="every column (creation time, tags, n), whatever the terminal's width",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    force_arg(p)
    store_arg(p)


def _report_skipped(skipped: list[Any]) -> None:
    for s in skipped:
        err_console.print(f"[yellow]latscope: {shown(s.line())}[/yellow]", soft_wrap=True)


def _params_str(meta: dict[str, Any]) -> str:
    given = meta.get("params_given") or {}
    return " ".join(f"{k}={v}" for k, v in given.items())


def _brief_stats() -> list[Any]:
    """The figures `ls` shows of a run's first column (summary.STATS, brief)."""
    from ..summary import STATS

    return [s for s in STATS if s.brief and s.key != "n"]


def _status(tags: dict[str, Any], status: str | None) -> str:
    """What `ls` says of a complete run: its suite and scenario, or its repetition."""
    status = status or "complete"
    if tags.get("scenario"):  # complete, from a suite or latscope quick
        group = tags.get("suite") or ("quick" if tags.get("quick") else None)
        status = "/".join(str(x) for x in (group, tags["scenario"]) if x)
        if tags.get("repetition") is not None:
            status += f" #{tags['repetition']}"
    elif tags.get("repeat_group"):
        status = f"repetition {tags.get('repetition')}/{tags.get('repeat')}"
    elif tags.get("ab"):
        status = "ab (arms)"
    from ..store.history import injected_ns

    inj = injected_ns(tags)
    if inj:
        status += f", injected +{inj:,.0f} ns"
    return status


def _utc_text(t: Any) -> str:
    """A creation time as run.json writes it (microseconds where it has them)."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if t.microsecond else "%Y-%m-%dT%H:%M:%SZ")


def _report_indexed(st: Any, n: int) -> None:
    if n:
        err_console.print(
            f"latscope: indexed {n} runs into the summary table "
            f"({shown(st.root / 'summary')}): read from their directories once",
            soft_wrap=True,
            highlight=False,
        )


def cmd_ls(args: argparse.Namespace) -> int:
    import polars as pl

    from ..store.catalog import catalog
    from ..store.history import row_tags
    from ..summary import WITHHELD_LEGEND, value, withheld, withheld_reason
    from ..tables import Column, fit, show

    st = open_store(args)
    exists = st.exists()  # a path that is not a store: one line, exit 2
    cat = catalog(st, benchmark=args.bench, host=args.host)
    rows = cat.rows.filter(pl.col("column_index") == 0)
    if args.suite:
        rows = rows.filter((pl.col("suite") == args.suite) | (pl.col("suite_run") == args.suite))
    keep = {"run_id", "created_utc", "benchmark", "host", "params", "params_given", "n", "column"}
    keep |= {"tags", "status"} | {c for s in _brief_stats() for c in (s.column, s.beyond_column)}
    first = rows.select([c for c in rows.columns if c in keep]).to_dicts()
    skipped = cat.skipped
    partials = cat.partials
    if args.suite or args.host:
        partials = []  # a partial run's tags are not written yet
    figures = _brief_stats()
    if args.json:

        def figs(row: dict[str, Any]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for s in figures:
                out[s.column] = value(row, s)
                why = withheld_reason(row, s)
                if why:
                    out.setdefault("withheld", {})[s.key] = why
            return out

        out = {
            "store": str(st.root),
            "hosts": cat.hosts,
            "runs": [
                {
                    "id": r["run_id"],
                    "created_utc": _utc_text(r["created_utc"]),
                    "benchmark": r["benchmark"],
                    "host": r["host"],
                    "params": json.loads(r["params"] or "{}")
                    or json.loads(r["params_given"] or "{}"),
                    "n": r["n"],
                    "column": r["column"],
                    **figs(r),
                    "tags": row_tags(r),
                    "status": r["status"] or "complete",
                }
                for r in first
            ],
            "partial": [
                {
                    "id": p.run_id,
                    "benchmark": p.benchmark,
                    "created_utc": p.created_utc,
                    "status": p.status,
                    "path": str(p.path),
                }
                for p in partials
            ],
            "skipped": [{"path": str(s.path), "why": s.why} for s in skipped],
        }
        _report_indexed(st, cat.indexed)
        # ASCII JSON: valid UTF-8 whatever bytes names and parameters hold
        console.print_json(json.dumps(out), ensure_ascii=True)
        return 0
    _report_indexed(st, cat.indexed)
    _report_skipped(skipped)
    # at 80 columns: id (it carries the date and the benchmark), params, n, the first column
    # and its figures; 'created' and 'benchmark' repeat the id and go first, then p99.9, status
    drop = {"p99.9": 3}
    cols = [
        Column("id"),
        Column("created (UTC)", drop=5),
        Column("benchmark", drop=4),
        Column("params", wrap=True),
        Column("n", justify="right"),
        Column("column"),
        *(Column(s.label, justify="right", drop=drop.get(s.label)) for s in figures),
        Column("status", wrap=True, drop=2),  # the suite and scenario; ls --suite selects by it
    ]
    # runs of several hosts: one table for each host (grouped by host), oldest first in each
    hosts = sorted({r["host"] or "" for r in first})
    text = functools.lru_cache(maxsize=4096)(shown)  # benchmarks, columns, statuses repeat
    plain = re.compile(r"[\w.-]*\Z", re.ASCII)  # a run id as latscope makes them: as it is
    grouped = len(hosts) > 1
    by_host: dict[str, list[list[str]]] = {h: [] for h in hosts}
    held: set[str] = set()
    for row in first:
        vals = [value(row, s) for s in figures]
        held.update(s.label for s in figures if withheld(row, s))
        unit = pick_unit([row.get("p50_ns")])
        try:
            given = json.loads(row["params_given"] or "{}")
        except ValueError:
            given = {}
        by_host[row["host"] or ""].append(
            [
                row["run_id"] if plain.match(row["run_id"]) else shown(row["run_id"]),
                row["created_utc"].strftime("%Y-%m-%d %H:%M:%S"),
                text(row["benchmark"]),
                text(" ".join(f"{k}={v}" for k, v in given.items())),
                str(row["n"]),
                f"{text(row['column'])} ({unit[0]})",
                *(fmt_bare(v, unit) for v in vals),
                text(_status(row_tags(row), row["status"])),
            ]
        )
    prows: list[list[str]] = []
    for p in partials:
        prows.append(
            [
                shown(p.run_id),
                (p.created_utc or "").replace("T", " ").rstrip("Z"),
                shown(p.benchmark or "?"),
                "",
                "",
                "",
                *("" for _ in figures),
                f"[yellow]{p.status}[/yellow]",
            ]
        )
    left_out: list[str] = []
    tables = [(h, r) for h, r in by_host.items()] if grouped else [("", sum(by_host.values(), []))]
    if prows:
        if grouped:
            tables.append((None, prows))
        else:
            tables[0][1].extend(prows)
    for h, trows in tables:
        title = f"runs in {shown(st.root)}"
        if grouped:
            title = (
                f"partial runs in {shown(st.root)}"
                if h is None
                else f"runs of host {shown(h or '(unknown)')} in {shown(st.root)}"
            )
        elif args.host:
            title = f"runs of host {shown(args.host)} in {shown(st.root)}"
        t, out_here = fit(console, cols, trows, wide=args.wide, long=True, title=title)
        show(console, t, args.wide)
        left_out += [c for c in out_here if c not in left_out]
    extra = ""
    if grouped:
        extra += f" on {len(hosts)} hosts"
    if any(p.state in ("killed", "removing") for p in partials):
        extra += "; 'latscope rm --partial' removes the leftovers of killed runs"
    if held - set(left_out):
        extra += f"; {WITHHELD_LEGEND} ('latscope show RUN' says why)"
    if left_out:
        extra += f"; {', '.join(left_out)}: 'latscope ls --wide'"
    if args.host and not first and cat.hosts:
        extra += f"; no runs of host {shown(args.host)} (hosts: {shown(', '.join(cat.hosts))})"
    if not exists:
        extra += f"; no store at {shown(st.root)} yet (a run made with it creates it)"
    console.print(
        f"[dim]{len(first)} runs, {len(partials)} partial, {len(skipped)} skipped{extra}[/dim]"
    )
    return 0


def cmd_store(args: argparse.Namespace) -> int:
    """``store upgrade``: facts.json for every run that lacks current ones."""
    from .. import facts
    from ..record import Run

    st = open_store(args)
    if not st.exists():
        raise BadInput(f"the store {st.root} has no runs yet")
    if not st.writable():
        raise BadInput(f"the store {st.root} cannot be written: nothing upgraded")
    skipped: list[Any] = []
    dirs = list(st.run_dirs(skipped))
    done = current = 0
    failed: list[str] = []
    for i, d in enumerate(dirs):
        got = facts.kept(d)
        if got is not None and got.get("id") == d.name:
            current += 1
            continue
        try:
            _ = Run(d).facts  # built from the samples and kept
        except (LatscopeError, OSError, ValueError) as e:
            why = e.message if isinstance(e, LatscopeError) else str(e)
            failed.append(f"{d.name}: {why}")
            continue
        if facts.kept(d) is None:
            failed.append(f"{d.name}: its facts could not be written")
            continue
        done += 1
        if done % 50 == 0:
            err_console.print(f"[dim]{i + 1} of {len(dirs)} runs read[/dim]")
    _report_skipped(skipped)
    for line in failed:
        err_console.print(f"[yellow]latscope: not upgraded: {shown(line)}[/yellow]", soft_wrap=True)
    console.print(
        f"{done} runs upgraded, {current} already current"
        + (f", {len(failed)} could not be (above)" if failed else "")
        + f" in {shown(st.root)}",
        highlight=False,
    )
    return 1 if failed else 0


def cmd_rm(args: argparse.Namespace) -> int:
    st = open_store(args)
    if not args.runs and not args.partial:
        raise BadInput("rm: name the runs to remove (ids, or 'last'), or give --partial")
    targets = []
    for ref in args.runs:
        d = st.resolve(ref, any_entry=True)  # a damaged run, a link: removed, never followed
        if d.parent.resolve() != st.runs_dir.resolve():
            raise BadInput(f"{ref}: not a run of the store {st.root}")
        targets.append(d)
    for d in dict.fromkeys(targets):
        st.remove(d)
        console.print(f"removed {shown(d.name)}")
    if args.partial:
        removed, kept = st.remove_partials()
        for p in removed:
            console.print(f"removed {shown(p.path.name)} ({p.status})")
        for p in kept:
            err_console.print(f"latscope: kept {shown(p.path.name)}: {p.status}")
        if not removed:
            console.print("no leftovers of killed runs")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from ..store import history
    from ..tables import Column, fit, show

    if args.plot:
        check_destination(args.plot, args.force)
    st = open_store(args)
    h = history.query(
        st, args.bench, args.column, args.stat, parse_params(args.params), host=args.host
    )
    if args.plot:
        target = history.plot(h, args.plot, replace=args.force)
    if args.json:
        console.print_json(
            json.dumps(
                {
                    "benchmark": h.bench,
                    "column": h.column,
                    "stat": h.stat,
                    "rows": [
                        {
                            "run_id": r["run_id"],
                            "created_utc": r["created_utc"].isoformat() + "Z",
                            "params": json.loads(r["params"] or "{}"),
                            "value": h.value(r),
                            "withheld": h.withheld(r),
                            "p50_ci_ns": [r["p50_ci_low_ns"], r["p50_ci_high_ns"]],
                            "n": r["n"],
                            "host": r["host"],
                            "suite": r["suite"],
                            "scenario": r["scenario"],
                        }
                        for r in h.rows
                    ],
                    "skipped": [{"path": str(s.path), "why": s.why} for s in h.skipped],
                    "environment_differences": h.env_notes,
                },
                default=str,
            ),
            ensure_ascii=True,
        )
        return 0
    _report_indexed(st, h.indexed)
    _report_skipped(h.skipped)
    unit = pick_unit([h.value(r) for r in h.rows]) if h.is_time else ("", 1.0)
    keys = history.differing_params(h.rows)
    # at 80 columns: #, run id (it carries the date), the figure with its interval and the
    # change; 'created' repeats the id and goes first, then tags, then n
    cols = [Column("#", justify="right"), Column("created (UTC)", drop=5), Column("run id")]
    if keys:
        cols.append(Column("params", wrap=True))
    cols += [Column("tags", wrap=True, drop=3), Column("n", justify="right", drop=2)]
    cols.append(
        Column(f"{h.stat} ({unit[0]})" if unit[0] else h.stat, justify="right", style="bold")
    )
    if h.stat == "p50":
        cols.append(Column("95% CI", justify="right"))
    cols.append(Column("vs prev", justify="right"))
    # runs of several hosts: one table for each host, its own changes (grouped by host)
    grouped = len(h.hosts) > 1
    tables: dict[str, list[list[str]]] = {host: [] for host in h.hosts}
    prev: dict[tuple[str, str], float | None] = {}  # per host and series (same parameters)
    reasons: list[str] = []
    injected = 0
    for i, r in enumerate(h.rows, 1):
        v = h.value(r)
        series = (r["host"] or "", history.series_label(r, keys))
        tags = ""
        if r.get("scenario"):
            tags = f"{r.get('suite')}/{r['scenario']} #{r.get('repetition')}"
        elif r.get("repeat_group"):
            tags = f"repetition {r.get('repetition')}"
        inj = history.injected_ns(history.row_tags(r))
        if inj:
            tags = f"{tags} injected +{inj:,.0f} ns".strip()
            injected += 1
        cells = [str(i), r["created_utc"].strftime("%Y-%m-%d %H:%M:%S"), shown(r["run_id"])]
        if keys:
            cells.append(shown(series[1]))
        cells += [shown(tags), str(r["n"])]
        if v is None or unit[0]:
            cells.append(fmt_bare(v, unit))
        else:
            cells.append(f"{int(v):,}" if h.figure.kind == "count" else f"{v:,.0f}")
        why = h.withheld(r)
        if why:
            reasons.append(f"#{i} {h.stat} — {why}")
        if h.stat == "p50":
            lo, hi = r["p50_ci_low_ns"], r["p50_ci_high_ns"]
            cells.append(f"{fmt_bare(lo, unit)}–{fmt_bare(hi, unit)}" if lo is not None else "—")
        before = prev.get(series)
        if inj:  # its figures hold a known delay: no change from, or to, a real run
            cells.append("")
        else:
            cells.append(f"{100 * (v / before - 1):+.1f}%" if before and v is not None else "")
            prev[series] = v
        tables[series[0]].append(cells)
    left_out: list[str] = []
    title = f"{shown(h.bench)} {shown(h.column)}: {h.stat} over time ({len(h.rows)} runs)"
    if args.host:
        title = f"{shown(h.bench)} {shown(h.column)} on {shown(args.host)}: {h.stat} over time"
        title += f" ({len(h.rows)} runs)"
    for host, rows in tables.items():
        if grouped:
            title = f"{shown(h.bench)} {shown(h.column)} on {shown(host or '(unknown host)')}: "
            title += f"{h.stat} over time ({len(rows)} runs)"
        t, out_here = fit(console, cols, rows, wide=args.wide, long=True, title=title)
        show(console, t, args.wide)
        left_out += [c for c in out_here if c not in left_out]
    legend = "vs prev: change from the previous run with the same parameters"
    if grouped:
        legend += " on the same host"
    if injected:
        legend += " (runs with an injected delay, tagged, are left out of it)"
    if left_out:
        legend += f"; {', '.join(left_out)}: 'latscope history --wide'"
    console.print(f"[dim]{legend}[/dim]")
    for why in reasons:
        console.print(f"[dim]{shown(why)}[/dim]")
    for n in h.env_notes:
        console.print(f"[yellow]note:[/yellow] {shown(n)}")
    if args.plot:
        console.print(f"plot written to {shown(target)}")
    return 0


COMMANDS = {"ls": cmd_ls, "rm": cmd_rm, "history": cmd_history, "store": cmd_store}
