"""The facts of a run (`build`), computed from its samples and header: once, when it is kept
(runner.keep), or when a run kept by an older latscope is first read.  The statistics and
the catalogue are asked here and nowhere at view time."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import probe
from .._version import __version__
from ..env import emulation_caveat, of_header
from ..notes import run_notes
from ..stats import quantile_sorted
from ..stats.between import LEVEL, Rep, between, split
from ..stats.intervals import order_statistic_interval
from ..summary import IDENTITY, withheld_notes
from ..units import pick_unit
from . import SCHEMA, plain
from .checks import check_figure, display, display_lines, one_way_checks, tick_checks
from .wording import clock_line, family_words, latency_label, params_line, run_label, timed_usage

#: A 1-minute load average this many times the CPUs is a busy machine (`_load`).
BUSY_LOAD = 1.5
#: What a run of one worker process cannot say.
SINGLE_PROCESS = (
    "single process: the interval does not include between-run variation (measure in "
    "several processes, the default, or with --repeat R)"
)
#: Display-line styles a view may apply (anything else in a facts.json is shown unstyled).
STYLES = frozenset({"dim", "yellow", "bold", "red", "green"})


def _finding(
    level: str, key: str, text: str, column: str | None = None, short: str | None = None
) -> dict[str, Any]:
    """A finding: ``text`` in full (show --full, the reports), ``short`` in one line of the
    brief view (None: the text, cut)."""
    return {"level": level, "key": key, "column": column, "text": text, "short": short}


def _ci_line(rows: list[dict[str, Any]], derived: list[str]) -> str | None:
    """How the median's interval of each recorded column was made, in one line: 'a t interval
    over the 10 worker medians: call (ESS 9,812 of 20,000)'."""
    families: dict[str, list[str]] = {}
    with_ess = False
    for r in rows:
        if r.get("ci_method") and r["column"] not in derived:
            method = str(r["ci_method"])
            fam = method.split(",")[0].split(" (")[0]
            worth = re.search(r"worth ([0-9.]+)", method)
            if fam.startswith("between runs:"):  # the interval's data are the worker medians
                what = (
                    f" (the medians worth {worth.group(1)} independent ones)"
                    if worth
                    else " (the medians independent)"
                )
            else:
                ess = r.get("ess")
                what = f" (ESS {ess:,.0f} of {r['n']:,})" if isinstance(ess, (int, float)) else ""
                with_ess = with_ess or bool(what)
            families.setdefault(fam, []).append(f"{r['column']}{what}")
    if not families:
        return None
    parts = [f"{family_words(fam)}: {', '.join(cols)}" for fam, cols in families.items()]
    why = [
        w
        for fam, w in (
            ("batch shares", "batch shares where samples are dependent"),
            ("order statistics", "exact order statistics where independent"),
        )
        if fam in families
    ]
    return (
        "95% CI of p50 by "
        + "; ".join(parts)
        + (" — ESS: effective sample size after autocorrelation" if with_ess else "")
        + "".join(f"; {w}" for w in why)
    )


def _worker_reps(run: Any, column: str) -> list[Rep]:
    """One Rep per worker process of the run: its median and order-statistic interval."""
    step = run.column_step_ns(column)
    out = []
    for i, part in enumerate(split(run.values(column), run.column_segments(column))):
        xs = np.sort(part)
        lo, hi, _ = order_statistic_interval(xs, 0.5, LEVEL, step=step)
        out.append(Rep(f"{run.id}#{i + 1}", quantile_sorted(xs, 0.5, step), lo, hi))
    return out


def _workers(run: Any) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The worker processes among themselves: each column's worker medians, their CV and the
    typical half width of one worker's interval (None for a run of one process), and the
    findings they call for: one process (its interval holds no between-run variation), the
    medians differing by more than their intervals allow, the medians at two levels."""
    w = len(run.segments)
    if w < 2 and run.meta.get("source"):  # another program's samples (a CSV): its own runs
        text = (
            "one run of another program: the interval holds no between-run variation; import "
            "several of its runs and compare their medians"
        )
        return None, [_finding("warning", "single-process", text, short=text.split(";")[0])]
    if w < 2 and (run.meta.get("interleave") or {}).get("mode") == "processes":
        # arms alternated as processes: every block is a process of its own, and the rounds'
        # variation, which the paired interval is made of, holds the processes' variation
        return None, []
    if w < 2:
        short = "one process: its interval holds no between-run variation (--repeat R)"
        return None, [_finding("warning", "single-process", SINGLE_PROCESS, short=short)]
    bets = [between(c, _worker_reps(run, c), LEVEL, "worker medians") for c in run.all_columns]
    cols = [
        {
            "column": b.column,
            "medians_ns": [x.p50 for x in b.reps],
            "cv": b.cv,
            "within": b.within_rel,
            "disagree": b.note is not None,
        }
        for b in bets
    ]
    findings = []
    noted = [b.column for b in bets if b.note]
    if noted:
        findings.append(
            _finding(
                "note",
                "workers-disagree",
                f"{', '.join(noted)}: the worker medians differ by more than their "
                "within-process intervals allow: variation between processes dominates (the "
                "median's interval is the one over the workers); add workers (--repeat) "
                "rather than samples",
            )
        )
    two = [b for b in bets if b.levels is not None]
    if two:
        b = two[0]
        assert b.levels is not None
        unit = pick_unit([b.median_of_medians])
        findings.append(
            _finding(
                "warning",
                "two-levels",
                f"{', '.join(x.column for x in two)}: the worker medians sit at two levels "
                f"({b.column}: {b.levels.describe(unit)}), each tight: the machine switched "
                "between two states during the run (on a virtual machine, often its host). "
                "The median depends on the share of workers at each; to compare scenarios, "
                "'latscope ab' measures them interleaved, so both see the same state",
                short=f"the worker medians sit at two levels ({b.column}: "
                f"{b.levels.describe(unit)})",
            )
        )
    return {"count": w, "columns": cols}, findings


def _levels(run: Any) -> list[dict[str, Any]]:
    """The host's two speeds (`stats.levels`), found in the run's first recorded column: a
    state of the machine, said once for the run. An interleaved run's arms share that state
    and are compared by rounds: nothing to say there."""
    from ..stats.drift import drift
    from ..stats.levels import levels_warning

    if run.arms or not run.columns:
        return []
    c = run.columns[0]
    try:
        lv = drift(run.values(c), segments=run.column_segments(c)).levels
    except ValueError:  # too few samples for windows: no speeds to tell apart
        return []
    if lv is None:
        return []
    short = (
        f"the host ran at two speeds {lv.ratio:.2f}x apart, {100.0 * lv.slow_share:.0f}% of "
        f"{c} at the slow one"
    )
    return [_finding("warning", "levels", f"{c}: {levels_warning(lv).message}", c, short)]


def _load(env: dict[str, Any] | None) -> dict[str, Any] | None:
    """A busy machine when the run began: a 1-minute load average of at least `BUSY_LOAD`
    times its CPUs (a run just before, latscope's own, counts in it too: at the CPUs alone
    a second run of a pair would always be called busy)."""
    env = env or {}
    load1 = (env.get("load") or {}).get("1m")
    cpus = (env.get("cpu") or {}).get("logical")
    if not isinstance(load1, (int, float)) or not isinstance(cpus, int) or cpus < 1:
        return None
    if load1 < BUSY_LOAD * cpus:
        return None
    return _finding(
        "warning",
        "load",
        f"the machine was busy: a 1-minute load average of {load1:.1f} on {cpus} CPUs when "
        "the run began; other work shares the CPUs and caches: measure on a quieter machine, "
        "or compare scenarios with 'latscope ab', which pairs them in time",
        short=f"the machine was busy: load {load1:.1f} on {cpus} CPUs when the run began",
    )


#: Steal worth saying: the hypervisor kept at least this share of the CPUs' time during the run.
STEAL_SHARE = 0.02


def _steal(env: dict[str, Any] | None) -> dict[str, Any] | None:
    """The host's share of the CPUs' time while the probe ran (``env.steal``, from
    /proc/stat's steal counter before and after), when it reaches `STEAL_SHARE`."""
    share = ((env or {}).get("steal") or {}).get("share")
    if not isinstance(share, (int, float)) or share < STEAL_SHARE:
        return None
    pct = f"{100.0 * share:.2g}%"
    return _finding(
        "warning",
        "steal",
        f"the hypervisor kept {pct} of the CPUs' time for itself while the probe ran (steal, "
        "/proc/stat): the figures hold waits for the host, not only the benchmark's cost; "
        "measure when the host is quieter, or compare scenarios with 'latscope ab', which "
        "pairs them in time",
        short=f"the host took {pct} of the CPUs' time during the run (steal)",
    )


def _measured(meta: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where the run was measured (one line), or where it was imported from."""
    if meta.get("source"):
        src = meta["source"]
        return None, (
            f"imported {(meta.get('run') or {}).get('created_utc', '')} from {src.get('path')} "
            f"(sha256 {str(src.get('sha256'))[:16]}…, {src.get('rows')} rows); measured "
            "elsewhere: environment and clock unknown"
        )
    env = of_header(meta) or {}
    cpu = env.get("cpu") or {}
    kernel = env.get("kernel") or {}
    source = (env.get("clocksource") or {}).get("current")
    parts = [
        f"{cpu.get('model') or 'CPU not recorded'}",
        f"{cpu.get('online_count') or '?'} CPUs",
        "kernel "
        + (
            " ".join(str(x) for x in (kernel.get("sysname"), kernel.get("release")) if x)
            or "not recorded"
        ),
    ]
    if source is not None:  # Linux only: Windows has none to record
        parts.append(f"clocksource {source}")
    return (
        f"measured {meta.get('started_utc')} on {env.get('hostname') or 'a host not recorded'}"
        f": {', '.join(parts)}; probe {(meta.get('probe') or {}).get('version')}"
    ), None


def build_facts(run: Any) -> dict[str, Any]:
    """Everything the views show of ``run`` (a `runs.Run`), as facts.json keeps it
    (`facts.FACTS_SPEC`)."""
    from ..stats.drift import timer_too_coarse

    meta = run.meta
    summ = run.summary()
    # the figures of each column (the run's identity is the facts' own)
    rows = [plain(r) for r in summ.drop(IDENTITY).iter_rows(named=True)]
    derived = list(run.derived_columns)
    columns = []
    findings: list[dict[str, Any]] = []
    for r in rows:
        c = r["column"]
        cm = run.column_meta(c)
        step = run.column_step_ns(c)
        columns.append(
            {
                "name": c,
                "derived": c in derived,
                "latency_label": latency_label(cm),
                "step_ns": step,
                "meta": plain(cm),
            }
        )
        coarse = timer_too_coarse(r["p50_ns"], step)
        if coarse is not None:
            findings.append(_finding("warning", "timer-coarse", f"{c}: {coarse.message}", c))
        # (a difference of two timings, ctx's switch, may fall below 0 in one sample)
        if r["min_ns"] is not None and r["min_ns"] < 0 and not cm.get("minus"):
            findings.append(
                _finding(
                    "warning",
                    "negative-values",
                    f"{c}: negative values: the two CPUs' clocks disagree, or the clock "
                    "stepped; use --clock mono_raw or pin both parties to one CPU",
                    c,
                )
            )
    usage = timed_usage(meta)
    if usage is not None:
        findings += [_finding("warning", "timed-loop", w) for w in usage.notes]
    for w in (meta.get("run") or {}).get("probe_warnings") or []:
        findings.append(_finding("warning", "probe", str(w)))
    findings += [_finding("warning", "one-way", w, short=s) for w, s in one_way_checks(run, summ)]
    notes = run_notes(meta)
    hz = ((run.env or {}).get("kernel") or {}).get("config_hz")
    findings += [
        _finding("warning", "at-tick", w, c, short=s)
        for c, w, s in tick_checks(run, hz if isinstance(hz, int) else None, [n.key for n in notes])
    ]
    speeds = _levels(run)
    findings += speeds
    workers, said = _workers(run)
    # the host's two speeds said once: the samples' finding holds the workers' one
    findings += [w for w in said if not (speeds and w["key"] == "two-levels")]
    for said_first in (_steal(run.env), _load(run.env)):
        if said_first is not None:
            findings.insert(0, said_first)
    check = None
    spec = display(meta).get("check_figure")
    if isinstance(spec, dict):
        got = check_figure(run, summ, spec)
        if got:
            check = {"text": got[0], "disagree": bool(got[1]), "short": got[2]}
    measured, imported = _measured(meta)
    warmup = meta.get("warmup")
    return {
        "schema": SCHEMA,
        "made_by": [f"latscope {__version__}"],
        "id": run.id,
        "benchmark": str(meta.get("benchmark")),
        "label": run_label(run),
        "params_text": params_line(meta),
        "params": probe.param_words(str(meta.get("benchmark")), meta.get("params") or {}),
        "n": int(meta["n"]),
        "warmup": warmup if isinstance(warmup, int) and not isinstance(warmup, bool) else None,
        "inject_ns": float(run.inject_ns),
        "header_checksummed": bool(run.header_checksummed),
        "clock": {"name": str((meta.get("clock") or {}).get("name")), "line": _clock(meta)},
        "caveat": emulation_caveat(run.env),
        "columns": columns,
        "summary": rows,
        "ci_line": _ci_line(rows, derived),
        "withheld": withheld_notes([(r["column"], r) for r in rows]),
        "check": check,
        "display": [
            {"text": t, "style": s if s in STYLES else None} for t, s in display_lines(meta)
        ],
        "notes": [{"key": n.key, "text": n.text} for n in notes],
        "usage": {"scope": usage.scope, "detail": usage.detail} if usage is not None else None,
        "workers": workers,
        "findings": findings,
        "measured": measured,
        "imported": imported,
    }


def _clock(meta: dict[str, Any]) -> str:
    return clock_line(meta.get("clock") or {})
