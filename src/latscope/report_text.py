"""The terminal summary of a run (rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from .notes import run_notes
from .units import fmt, fmt_bare, pick_unit

LATENCY_NAMES = {
    "call": "per call",
    "round_trip": "round trip",
    "one_way_shared_clock": "one-way, shared clock",
    "one_way_rtt_half": "one-way est. = RTT/2",
}


def latency_label(col: dict[str, Any]) -> str:
    name = LATENCY_NAMES.get(col.get("latency") or "", col.get("latency") or "")
    cs = col.get("context_switches")
    if cs is not None and col.get("latency") != "call":
        name += f", {cs} ctx sw"
    return name


def _pval(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def params_line(meta: dict[str, Any]) -> str:
    return " ".join(f"{k}={_pval(v)}" for k, v in meta["params"].items() if v not in ("", None))


def clock_line(clk: dict[str, Any]) -> str:
    """Overhead and resolution of a run's clock, saying what is unknown or guessed."""
    if clk.get("overhead_ns") is None:
        over = "overhead unknown (imported)"
    else:
        over = f"overhead {fmt(clk['overhead_ns'])} (not subtracted below)"
    res = clk.get("resolution_ns")
    if res is None:
        return f"{over}, resolution unknown"
    guess = (
        " (a guess from the data: the smallest step between values)"
        if clk.get("resolution_guessed")
        else ""
    )
    return f"{over}, resolution {fmt(res)}{guess}"


def print_run(console: Console, run: Any, details: bool = False) -> None:
    meta = run.meta
    clk = meta["clock"]
    warm = (
        f"after {meta['warmup']} warm-up iterations"
        if meta.get("warmup") is not None
        else "warm-up unknown"
    )
    console.print(f"[bold]{meta['benchmark']}[/bold] {params_line(meta)}  —  n={meta['n']} {warm}")
    console.print(f"clock [bold]{clk['name']}[/bold]: {clock_line(clk)}")
    summ = run.summary()
    cols = {c["name"]: c for c in meta["columns"]}
    t = Table(title=f"run {run.id}", title_justify="left")
    t.add_column("column", style="bold")
    t.add_column("latency")
    t.add_column("n", justify="right")
    t.add_column("unit")
    for h in ("min", "p50", "95% CI of p50", "mean", "std", "p95", "p99", "p99.9", "max"):
        t.add_column(h, justify="right", style="bold" if h == "p50" else None)
    warnings: list[str] = []
    for row in summ.iter_rows(named=True):
        c = row["column"]
        colmeta = cols.get(c, {"latency": "one_way_rtt_half"} if c == "rtt/2" else {})
        unit = pick_unit([row["p50_ns"]])
        ci = (
            f"{fmt_bare(row['p50_ci_low_ns'], unit)}–{fmt_bare(row['p50_ci_high_ns'], unit)}"
            if row["p50_ci_low_ns"] is not None
            else "—"
        )
        t.add_row(
            c,
            latency_label(colmeta),
            str(row["n"]),
            unit[0],
            fmt_bare(row["min_ns"], unit),
            fmt_bare(row["p50_ns"], unit),
            ci,
            fmt_bare(row["mean_ns"], unit),
            fmt_bare(row["std_ns"], unit),
            fmt_bare(row["p95_ns"], unit),
            fmt_bare(row["p99_ns"], unit),
            fmt_bare(row["p99.9_ns"], unit),
            fmt_bare(row["max_ns"], unit),
        )
        if clk.get("resolution_ns") and row["p50_ns"] < 10 * clk["resolution_ns"]:
            warnings.append(
                f"{c}: the median ({fmt(row['p50_ns'])}) is shorter than 10× the clock's "
                f"resolution ({fmt(clk['resolution_ns'])}); read its distribution with care, "
                "or time batches (see the batch figure)"
            )
        if row["min_ns"] < 0:
            warnings.append(
                f"{c}: negative values: the two CPUs' clocks disagree; use --clock mono_raw "
                "or pin both parties to one CPU"
            )
    console.print(t)
    # the interval's method family per column (details: latscope show RUN --full)
    families: dict[str, list[str]] = {}
    for r in summ.iter_rows(named=True):
        if r["ci_method"] and r["column"] != "rtt/2":
            fam = r["ci_method"].split(",")[0].split(" (")[0]
            ess_txt = f"{r['column']} (ESS {r['ess']:,.0f} of {r['n']:,})"
            families.setdefault(fam, []).append(ess_txt)
    if families:
        parts = [f"{fam}: {', '.join(cols)}" for fam, cols in families.items()]
        console.print(
            "[dim]95% CI of p50 by "
            + "; ".join(parts)
            + " — ESS: effective sample size after autocorrelation; batch shares where "
            "samples are autocorrelated, exact order statistics where independent[/dim]"
        )
    bench = meta.get("bench", {})
    batch = bench.get("batch")
    if batch and clk.get("overhead_ns") is not None:
        med = summ.filter(summ["column"] == "call")["p50_ns"][0]
        per = batch["per_call_median_ns"]
        console.print(
            f"batch figure: {fmt(per)} per call ({batch['calls_per_batch']} calls × "
            f"{batch['batches']} batches, median); per-call median minus clock overhead: "
            f"{fmt(med - clk['overhead_ns'])} (ratio {(med - clk['overhead_ns']) / per:.2f})"
        )
    if "placement" in bench:
        console.print(
            f"placement: {bench['placement'].replace('_', ' ')} (cpus "
            f"{','.join(str(c) for c in bench['cpus'])}), {bench['mode']}, "
            f"{bench['message_bytes']} B messages; rtt/2 is an estimate of the one-way time"
        )
    fs = bench.get("filesystem")
    if fs:
        console.print(
            f"file: {bench['path']} on {fs.get('type')} ({fs.get('source')} at "
            f"{fs.get('mountpoint')}), {bench['size_bytes']} bytes, cache={bench['cache']}"
        )
        console.print(f"[dim]{bench.get('note')}[/dim]")
    for note in run_notes(meta):
        console.print(f"[dim]note ({note.key}): {note.text}[/dim]")
    for w in meta.get("run", {}).get("probe_warnings", []) or []:
        warnings.append(w)
    for w in warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if details and meta.get("source"):
        src = meta["source"]
        console.print(
            f"[dim]imported {meta['run'].get('created_utc', '')} from {src.get('path')} "
            f"(sha256 {str(src.get('sha256'))[:16]}…, {src.get('rows')} rows); measured "
            "elsewhere: environment and clock unknown[/dim]"
        )
    elif details:
        env = meta.get("env") or {}
        console.print(
            f"[dim]measured {meta.get('started_utc')} on {env.get('hostname')}: "
            f"{env.get('cpu_model')}, {env.get('cpus_online')} CPUs, kernel "
            f"{env.get('release')}, clocksource {env.get('clocksource')}; probe "
            f"{(meta.get('probe') or {}).get('version')}[/dim]"
        )


def run_label(run: Any) -> str:
    """A short human name for a run: its --name / tag for imports and named runs, else the
    benchmark and the parameters the user gave."""
    meta = run.meta
    tags = (meta.get("run") or {}).get("tags") or {}
    if tags.get("name"):
        return str(tags["name"])
    if meta.get("benchmark") == "imported":
        return str(meta.get("name") or (meta.get("params") or {}).get("file") or run.id)
    given = (meta.get("run") or {}).get("params_given")
    params = given if given else meta.get("params") or {}
    ps = " ".join(f"{k}={v}" for k, v in params.items() if v not in ("", None))
    return f"{meta['benchmark']} {ps}".strip()


def unique_labels(runs: list[Any]) -> list[str]:
    """run_label of each run, with the end of the run id added where two would be equal."""
    labels = [run_label(r) for r in runs]
    out = []
    for r, lab in zip(runs, labels, strict=True):
        if labels.count(lab) > 1:
            lab = f"{lab} [{r.id.rsplit('-', 1)[-1]}]"
        out.append(lab)
    if len(set(out)) < len(out):  # the same run twice, or equal id endings
        out = [f"{lab} #{i + 1}" for i, lab in enumerate(out)]
    return out
