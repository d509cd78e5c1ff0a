"""The facts of a run (`build`), computed from its samples and header: once, when it is kept
(runner.keep), or when a run kept by an older latscope is first read.  The statistics and
the catalogue are asked here and nowhere at view time."""

from __future__ import annotations

import re
from typing import Any

from .. import probe
from .._version import __version__
from ..env import emulation_caveat, of_header
from ..notes import run_notes
from ..summary import withheld_notes
from . import SCHEMA, plain
from .checks import check_figure, display, display_lines, one_way_checks
from .wording import clock_line, family_words, latency_label, params_line, run_label, timed_usage

#: Display-line styles a view may apply (anything else in a facts.json is shown unstyled).
STYLES = frozenset({"dim", "yellow", "bold", "red", "green"})


def _finding(level: str, key: str, text: str, column: str | None = None) -> dict[str, Any]:
    return {"level": level, "key": key, "column": column, "text": text}


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
    rows = [plain(r) for r in summ.iter_rows(named=True)]
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
        if r["min_ns"] is not None and r["min_ns"] < 0:
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
    findings += [_finding("warning", "one-way", w) for w in one_way_checks(run, summ)]
    check = None
    spec = display(meta).get("check_figure")
    if isinstance(spec, dict):
        got = check_figure(run, summ, spec)
        if got:
            check = {"text": got[0], "disagree": bool(got[1])}
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
        "notes": [{"key": n.key, "text": n.text} for n in run_notes(meta)],
        "usage": {"scope": usage.scope, "detail": usage.detail} if usage is not None else None,
        "findings": findings,
        "measured": measured,
        "imported": imported,
    }


def _clock(meta: dict[str, Any]) -> str:
    return clock_line(meta.get("clock") or {})
