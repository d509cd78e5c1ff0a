"""The parts of a run's report: what was measured and how (the measurement, the clock, the
environment, the columns), then per column the summary table, the serial dependence, the
distribution fit, the outliers and spikes, and the drift, as document blocks (document.py)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..facts import latency_of
from ..facts.wording import injected_line
from ..units import fmt, pick_unit
from .document import (
    Alert,
    Block,
    Cell,
    KeyValues,
    Table,
    Text,
)

if TYPE_CHECKING:
    from ..record import Run
    from ..stats import ColumnAnalysis, Interval


# ------------------------------------------------------------------------------ formatting


def _v(v: float | None, unit: tuple[str, float]) -> str:
    return "—" if v is None or not math.isfinite(v) else fmt(v, unit)


def _ci(iv: Interval, unit: tuple[str, float]) -> str:
    if iv.low is None or iv.high is None:
        return "—"
    return f"{fmt(iv.low, unit)} – {fmt(iv.high, unit)}"


def _method(iv: Interval) -> str:
    m = iv.method if iv.low is not None else "none"
    return f"{m}; {iv.reason}" if iv.reason else m


def _flat(v: Any) -> str:
    """A header value as a reader reads it: yes/no, a number to four figures, a list or a
    mapping one line."""
    if isinstance(v, bool):  # before int: True is an int
        return "yes" if v else "no"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_flat(x)}" for k, x in v.items() if x not in (None, ""))
    if isinstance(v, (list, tuple)):
        return ", ".join(_flat(x) for x in v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return "—" if v is None else str(v)


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 1e-15" if p < 1e-15 else f"= {p:.2g}"


# ------------------------------------------------------------------------------ run parts


def _measurement(run: Run) -> list[Block]:
    meta, rmeta = run.meta, run.meta.get("run") or {}
    rows: list[tuple[str, str | Cell]] = [
        ("run id", run.id),
        ("benchmark", str(meta.get("benchmark"))),
        (
            "parameters",
            ", ".join(run.facts["params"]) or "—",
        ),
        ("iterations recorded", f"{run.n:,}"),
        (
            "warm-up iterations",
            f"{meta['warmup']:,} (run and discarded)"
            if meta.get("warmup") is not None
            else "unknown",
        ),
    ]
    if run.inject_ns:
        rows.append(("injected delay", Cell(injected_line(run.inject_ns), "warn")))
    if meta.get("started_utc"):
        rows.append(("measured (UTC)", f"{meta.get('started_utc')} – {meta.get('finished_utc')}"))
    if rmeta.get("created_utc"):
        rows.append(("kept (UTC)", str(rmeta["created_utc"])))
    if rmeta.get("command"):
        rows.append(("command", str(rmeta["command"])))
    if rmeta.get("probe_command"):
        rows.append(("probe command", str(rmeta["probe_command"])))
    made_by = meta.get("probe") or {}
    if made_by:
        rows.append(("probe", f"{made_by.get('version')} (compiler {made_by.get('compiler')})"))
    rows.append(("latscope", str(rmeta.get("latscope_version") or __version__)))
    if rmeta.get("tags"):
        rows.append(("tags", _flat(rmeta["tags"])))
    bench = dict(meta.get("bench") or {})
    if isinstance(bench.get("open_flags_names"), str):  # the names, not the number
        bench["open_flags"] = bench.pop("open_flags_names")
    for k, v in bench.items():
        rows.append((str(k).replace("_", " "), _flat(v)))
    usage = run.facts["usage"]
    if usage is not None:
        rows.append(("timed loop", f"{usage['scope']} — {usage['detail']}"))
    out: list[Block] = [KeyValues("What was measured", rows)]
    out += [
        Alert(w["text"], code="timed-rusage")
        for w in run.facts["findings"]
        if w["key"] == "timed-loop"
    ]
    src = meta.get("source")
    if src:
        srows: list[tuple[str, str | Cell]] = [
            ("file", str(src.get("path"))),
            ("sha256", str(src.get("sha256"))),
            ("rows", f"{src.get('rows'):,}"),
            (
                "columns",
                ", ".join(
                    f"{k} ← '{c.get('header')}' ({c.get('unit')})"
                    for k, c in (src.get("columns") or {}).items()
                ),
            ),
            ("start times", str(meta.get("times"))),
        ]
        for s in src.get("skipped") or []:
            srows.append(("skipped", f"'{s.get('column')}': {s.get('why')}"))
        out.append(KeyValues("Imported from", srows))
        out.append(
            Text(
                "Imported samples were measured by another program: its clock, warm-up and "
                "environment are unknown to latscope.",
                "note",
            )
        )
    facts = run.facts  # the probe's warnings and the notes, as kept with the run
    out.extend(Alert(w["text"], code="probe") for w in facts["findings"] if w["key"] == "probe")
    out.extend(Alert(n["text"], code=n["key"], severity="info") for n in facts["notes"])
    return out


def _per_tick(npt: Any) -> str:
    """ns per tick, and for a counter (tsc, qpc, cntvct: anything but 1 ns per tick) the
    frequency it counts at: '100 (a 10 MHz counter)'."""
    if not isinstance(npt, (int, float)) or isinstance(npt, bool) or not npt > 0:
        return "not recorded"
    if npt == 1:
        return "1"
    hz = 1e9 / npt
    unit, scale = next(
        (u, k)
        for u, k in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3), ("Hz", 1.0))
        if hz >= k or k == 1.0
    )
    return f"{npt:.6g} (a {hz / scale:.6g} {unit} counter)"


def _clock(run: Run) -> list[Block]:
    clk = run.clock
    rows: list[tuple[str, str | Cell]] = [
        ("clock", str(clk.get("name"))),
        ("ns per tick", _per_tick(clk.get("ns_per_tick"))),
    ]
    if clk.get("overhead_ns") is None:
        rows.append(("overhead", Cell("unknown (imported)", "dim")))
    else:
        rows.append(
            (
                "overhead",
                f"{fmt(clk['overhead_ns'])}: median of back-to-back reads, what an empty timed "
                "region measures; not subtracted from the samples",
            )
        )
    res = clk.get("resolution_ns")
    if clk.get("step_ns") is not None:
        rows.append(
            (
                "step",
                f"{fmt(clk['step_ns'])}: the clock's granularity, the spacing of its values "
                "(measured apart from the read cost)",
            )
        )
    elif res is None:
        rows.append(("step", "unknown"))
    elif clk.get("resolution_guessed"):
        rows.append(
            ("step", f"{fmt(res)} — {clk.get('resolution_note') or 'a guess from the data'}")
        )
    else:
        rows.append(("step", f"{fmt(res)}: smallest non-zero step between reads (older probe)"))
    if clk.get("getres_ns"):
        rows.append(("clock_getres", fmt(clk["getres_ns"])))
    if clk.get("frequency_hz"):
        rows.append(
            ("frequency", f"{clk['frequency_hz'] / 1e6:.6g} MHz (from {clk.get('frequency_from')})")
        )
    if clk.get("tsc_invariant") is not None:
        rows.append(("invariant TSC", "yes" if clk["tsc_invariant"] else "no"))
    if clk.get("calibration_ms"):
        rows.append(
            (
                "calibration",
                f"{clk['calibration_ms']} ms against {clk.get('calibrated_against')}, "
                f"uncertainty {clk.get('calibration_ppm', float('nan')):.3g} ppm",
            )
        )
    return [KeyValues("Clock", rows)]


def _environment(run: Run) -> list[Block]:
    from .. import env as envmod

    if run.imported:
        return [Text("Environment: unknown (samples imported from another program).", "dim")]
    full = (run.meta.get("run") or {}).get("env")
    out: list[Block] = []
    if isinstance(full, dict):
        out.append(KeyValues("Environment", list(envmod.summary_rows(full))))
        for fd in envmod.check(full):
            out.append(Alert(f"{fd.message} {fd.advice}", code=fd.code, severity=fd.severity))
        return out
    e = run.env or {}
    k, c, p = e.get("kernel") or {}, e.get("cpu") or {}, e.get("process") or {}

    def v(x: Any) -> str:  # a fact the probe could not know on its system (Windows: uid)
        return "not recorded" if x is None else str(x)

    rows: list[tuple[str, str | Cell]] = [
        ("host", v(e.get("hostname"))),
        ("kernel", f"{v(k.get('sysname'))} {v(k.get('release'))} ({v(k.get('version'))})"),
        ("architecture", v(k.get("machine"))),
        ("CPU", f"{v(c.get('model'))}, {v(c.get('online_count'))} CPUs online"),
        ("clock source", v((e.get("clocksource") or {}).get("current"))),
    ]
    if p.get("uid") is not None or p.get("euid") is not None:
        rows.append(("user", f"uid {v(p.get('uid'))}, euid {v(p.get('euid'))}"))
    who = envmod.emulator(e)
    if who is not None:
        rows.append(("emulation", f"{who}: {(e.get('emulation') or {}).get('evidence')}"))
    out.append(KeyValues("Environment (as recorded by the probe)", rows))
    return out


def _columns_table(run: Run) -> Table:
    rows: list[list[str | Cell]] = []
    for c in run.all_columns:
        m = run.column_meta(c)
        if c in run.derived_columns:
            rows.append([c, latency_of(run.facts, c), "—", str(m.get("formula") or "")])
            continue
        cs = m.get("context_switches")
        rows.append(
            [
                c,
                latency_of(run.facts, c) or "—",
                "—" if cs is None else str(cs),
                m.get("description", ""),
            ]
        )
    return Table("Columns", ["column", "latency", "context switches", "what"], rows, "llrl")


def _summary_table(ca: ColumnAnalysis, col: str, row: dict[str, Any]) -> Table:
    """The column's figures: those of the run table (`summary.STATS`, from `row`, the column's
    row of `Run.summary()`, so that they agree with `latscope run`/`show`/`ls`/`history`: the
    same values, the same withheld tails, the same interval of the median), then the other
    percentiles and spread figures of the analysis."""
    from ..stats import MAD_SCALE
    from ..summary import CI_METHOD, P50_CI_HIGH, P50_CI_LOW, STATS, shown_percentile, value

    s, ivs = ca.summary, ca.intervals
    table = {st.key: st for st in STATS}
    unit = pick_unit([s.median])
    ess = f"{ivs.ess:,.0f}"

    def fig(key: str, fallback: float | None) -> float | None:
        return value(row, table[key]) if key in table else fallback

    rows: list[list[str | Cell]] = [["n", f"{s.n:,}", "", "", "", ""]]
    rows.append(["min", _v(fig("min", s.min), unit), "", "", "", ""])
    for p in s.percentiles:
        try:
            iv = ivs.percentile(p.name)
        except KeyError:
            iv = None
        beyond = f"{p.n_beyond:,} {p.side}"
        name = "p50 (median)" if p.name == "p50" else p.name
        v = fig(p.name, shown_percentile(p))
        val: str | Cell = _v(v, unit) if v is not None else Cell("—", "dim")
        if p.name == "p50":
            val = Cell(_v(v, unit), "bold")
            lo, hi = row.get(P50_CI_LOW), row.get(P50_CI_HIGH)
            ci = "—" if lo is None or hi is None else f"{fmt(lo, unit)} – {fmt(hi, unit)}"
            rows.append([name, val, beyond, ci, str(row.get(CI_METHOD) or "none"), ess])
        elif iv is not None:
            rows.append([name, val, beyond, _ci(iv, unit), _method(iv), ess])
        else:
            rows.append([name, val, beyond, "", "", ""])
    rows.append(["max", _v(fig("max", s.max), unit), "", "", "", ""])
    m = ivs.mean
    rows.append(["mean", _v(fig("mean", s.mean), unit), "", _ci(m, unit), _method(m), ess])
    rows.append(["std", _v(fig("std", s.std), unit), "", "", "", ""])
    scaled = f"(× {MAD_SCALE:g} = {_v(s.mad_scaled, unit)})"
    rows.append(["MAD", f"{_v(s.mad, unit)} {scaled}", "", "", "", ""])
    rows.append(["IQR", _v(s.iqr, unit), "", "", "", ""])
    rows.append(["CV (std / mean)", "—" if s.cv is None else f"{s.cv:.3g}", "", "", "", ""])
    rows.append(["geometric mean", _v(s.geometric_mean, unit), "", "", "", ""])
    return Table(
        f"Summary of {col}",
        ["statistic", "value", "samples\nbeyond", f"{100 * ca.level:.0f}% CI", "CI method", "ESS"],
        rows,
        align="lrrrlr",
        small={4},
        drop={4: 2},
        note=(
            f"A tail percentile is withheld (—) when fewer than {s.min_beyond} samples lie "
            "beyond it. ESS: effective sample size, the number of independent samples carrying "
            f"the same information as the {s.n:,} correlated ones. {ivs.rule}."
        ),
    )


def _dependence(ca: ColumnAnalysis) -> KeyValues:
    d, ivs = ca.dependence, ca.intervals
    tau = f"{d.tau:.3g} iterations"
    if d.tau_truncated:
        tau += " (the ACF stays positive: non-stationary data, τ is a lower bound)"
    rows: list[tuple[str, str | Cell]] = [
        ("effective sample size", f"{d.ess:,.0f} of {d.n:,} ({d.ess / max(d.n, 1):.1%})"),
        ("autocorrelation time τ", tau),
        (
            "Ljung–Box",
            f"Q = {d.ljung_box_q:.4g} over {d.ljung_box_lag} lags, p {_p(d.ljung_box_p)}"
            if d.ljung_box_q is not None
            else "not computed (too few samples)",
        ),
        (
            "treated as",
            "independent: exact order-statistic intervals"
            if ivs.independent
            else f"dependent: {len(ivs.level_shifts) + 1} stretches between level shifts "
            "(a ratio estimator over unequal stretches, t)"
            if ivs.level_shifts
            else f"dependent: {ivs.n_blocks} batches of {ivs.block_length:,} (batch shares and "
            "batch means, t)",
        ),
        ("rule", d.rule),
        ("computed on", d.transform),
    ]
    return KeyValues("Serial dependence", rows)


def _ks_reading(d: float) -> Cell:
    if d < 0.02:
        return Cell(f"{d:.4f} — good for plots and rough tail estimates", "good")
    if d <= 0.05:
        return Cell(f"{d:.4f} — rough", "warn")
    return Cell(f"{d:.4f} — poor: do not use the model for tails", "bad")


def _distribution(ca: ColumnAnalysis) -> KeyValues:
    dist = ca.distribution
    f = dist.lognormal
    rows: list[tuple[str, str | Cell]] = []
    if f is None:
        rows.append(("shifted log-normal", f"not fitted: {dist.lognormal_reason}"))
    else:
        unit = pick_unit([f.median])
        rows += [
            ("model", "x = loc + exp(μ + σ·Z), Z standard normal"),
            ("loc (floor)", fmt(f.loc, unit)),
            ("median of the model (loc + e^μ)", fmt(f.median, unit)),
            ("σ (log-scale spread)", f"{f.sigma:.4g}"),
            ("e^μ (typical excess over loc)", fmt(f.scale, unit)),
            ("Kolmogorov–Smirnov D", _ks_reading(f.ks_statistic)),
            ("Anderson–Darling A² (of log(x − loc))", f"{f.ad_statistic:.4g}"),
            ("fitted on", f"{f.n_fit:,} samples; {f.method}"),
        ]
        if f.note:
            rows.append(("note", Cell(f.note, "warn")))
    m = dist.modes
    if m is None:
        rows.append(("modes", f"not computed: {dist.modes_reason}"))
    else:
        unit = pick_unit(list(m.locations))
        where = ", ".join(
            f"{fmt(loc, unit)} ({100 * mass:.0f}%)"
            for loc, mass in zip(m.locations, m.masses, strict=True)
        )
        tone = "warn" if m.multimodal else ""
        rows.append(("modes", Cell(f"{len(m.locations)}: {where}", tone)))
        rows.append(("modes method", m.method))
    return KeyValues("Distribution", rows)


def _outliers(ca: ColumnAnalysis) -> list[Block]:
    o, n = ca.outliers, ca.n
    unit = pick_unit([ca.summary.median])

    def share(k: int) -> str:
        return f"{100 * k / n:.2g}%"

    rows: list[list[str | Cell]] = [
        ["low extreme", f"< {_v(o.low_extreme_fence, unit)}", f"{o.n_low_extreme:,}"],
        [
            "low mild",
            f"{_v(o.low_extreme_fence, unit)} … {_v(o.low_mild_fence, unit)}",
            f"{o.n_low_mild:,}",
        ],
        [
            "high mild",
            f"{_v(o.high_mild_fence, unit)} … {_v(o.high_extreme_fence, unit)}",
            f"{o.n_high_mild:,}",
        ],
        ["high extreme", f"> {_v(o.high_extreme_fence, unit)}", f"{o.n_high_extreme:,}"],
    ]
    counts = [o.n_low_extreme, o.n_low_mild, o.n_high_mild, o.n_high_extreme]
    for r, k in zip(rows, counts, strict=True):
        r.append(share(k))
    table = Table(
        "Outliers by class",
        ["class", "range", "samples", "share"],
        rows,
        align="lrrr",
        note="Tukey fences: mild between 1.5 and 3 IQR beyond the quartiles, extreme beyond "
        "3 IQR. Outliers are reported, never dropped; high mild ones are normal for latencies.",
    )
    per = o.periodicity
    if per.confident and per.period_iterations is not None:
        when = f" ({fmt(per.period_seconds * 1e9)})" if per.period_seconds else ""
        period: str | Cell = Cell(
            f"every {per.period_iterations:,.1f} iterations{when}; strength "
            f"{per.strength or 0:.2f}, p {_p(per.p_value)}",
            "warn",
        )
    else:
        period = f"none found: {per.reason}" if per.reason else "none found"
    spikes = KeyValues(
        "Spikes",
        [
            (
                "threshold",
                f"> {_v(o.spike_threshold, unit)} (median + {o.spike_k:g} × "
                f"{o.spike_scale_source} = {_v(o.spike_scale, unit)})",
            ),
            ("spikes", f"{o.n_spikes:,} ({100 * o.spike_fraction:.2g}% of the samples)"),
            ("period of the spikes", period),
            ("method", per.method),
        ],
    )
    return [table, spikes]


def _drift(ca: ColumnAnalysis) -> list[Block]:
    d = ca.drift
    unit = pick_unit([ca.summary.median])
    rows: list[tuple[str, str | Cell]] = [("method", d.method)]
    if d.reason:
        rows.append(("not analysed", d.reason))
    if d.noise is not None:
        rows.append(("noise of the window medians", _v(d.noise, unit)))
    med = ca.summary.median

    def signed(v: float) -> str:
        return ("+" if v > 0 else "") + _v(v, unit)

    def share(v: float) -> str:
        return f" ({100 * v / med:+.2g}% of the median)" if med else ""

    if d.slope_ns_per_minute is not None and d.window_times is not None:
        span_s = float(d.window_times[-1] - d.window_times[0])
        total = d.slope_ns_per_minute / 60.0 * span_s
        ci = d.slope_ci_ns_per_minute
        cis = f", 95% CI {signed(ci[0])} … {signed(ci[1])}" if ci else ""
        rows.append(
            (
                "trend (Theil–Sen)",
                f"{signed(total)} over {span_s:.3g} s{share(total)}; slope "
                f"{signed(d.slope_ns_per_minute)} per minute{cis}",
            )
        )
    elif d.slope_ns_per_iteration is not None and d.window_starts.size > 1:
        span_it = int(d.window_starts[-1] - d.window_starts[0])
        total = d.slope_ns_per_iteration * span_it
        rows.append(
            (
                "trend (Theil–Sen)",
                f"{signed(total)} over {span_it:,} iterations{share(total)}; slope "
                f"{signed(d.slope_ns_per_iteration)} per iteration",
            )
        )
    rows.append(
        (
            "warm-up left in the samples",
            f"{d.warmup_iterations:,} iterations" if d.warmup_iterations else "none detected",
        )
    )
    lv = d.levels
    rows.append(
        (
            "speeds of the host",
            "one"
            if lv is None
            else f"two, {lv.ratio:.2f}x apart: {_v(lv.fast_ns, unit)} and {_v(lv.slow_ns, unit)} "
            f"(median at each), {lv.switches} switches, {100 * lv.slow_share:.0f}% of the "
            "samples at the slow one",
        )
    )
    rows.append(
        (
            "change points" + (" (beyond the two speeds)" if lv is not None else ""),
            str(len(d.change_points)) if d.change_points else "none",
        )
    )
    out: list[Block] = [KeyValues("Drift", rows)]
    if d.change_points:
        cps: list[list[str | Cell]] = []
        for i, cp in enumerate(d.change_points, 1):
            tone = (
                "bad" if cp.relative_change >= 0.1 else "warn" if cp.relative_change <= -0.1 else ""
            )
            cps.append(
                [
                    str(i),
                    f"{cp.index:,}",
                    "—" if cp.time_s is None else f"{cp.time_s:.4g} s",
                    _v(cp.median_before, unit),
                    _v(cp.median_after, unit),
                    Cell(f"{100 * cp.relative_change:+.1f}%", tone),
                ]
            )
        out.append(
            Table(
                "Change points",
                ["#", "from iteration", "at time", "median before", "median after", "change"],
                cps,
                align="rrrrrr",
            )
        )
    return out
