"""One figure of one benchmark over time, across the runs in the store.

The rows come from the runs' summary.parquet files, each read and checked (no sample is
read); damaged or foreign entries are reported and skipped (`Store.scan`).  The plot shows the
figure against the runs' creation time, one series per distinct parameter set, with the
confidence interval of the median as error bars (the other figures have no interval).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput, LatscopeError
from ..files import atomic_write
from ..summary import STATS, Stat, withheld_reason
from ..summary import stat as find_stat
from ..summary import value as stat_value
from ..units import pick_unit
from .core import Store
from .layout import Skipped


@dataclass
class History:
    bench: str
    column: str
    stat: str
    rows: list[dict[str, Any]]  # summary.parquet rows, oldest first
    skipped: list[Skipped]
    columns: list[str]  # the columns the runs have
    env_notes: list[str]
    hosts: list[str] = field(default_factory=list)  # the hosts of the rows ("": unknown)
    indexed: int = 0  # runs the read added to the summary table

    @property
    def figure(self) -> Stat:
        return find_stat(self.stat)

    @property
    def is_time(self) -> bool:
        return self.figure.is_time

    def value(self, row: dict[str, Any]) -> float | None:
        """The figure of one run; None when withheld (tail rule) or unknown."""
        return stat_value(row, self.figure)

    def withheld(self, row: dict[str, Any]) -> str | None:
        """Why the figure of one run is withheld, or None."""
        return withheld_reason(row, self.figure)


def _text(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def resolve_filters(bench: str, filters: dict[str, str]) -> dict[str, Any]:
    """The filters as the probe resolves them (``--check``: sizes in bytes, booleans as
    booleans, ``none`` as the header writes it), so that size=4k finds runs of size=4096;
    as given where the probe cannot resolve them (a benchmark it does not know, a value not
    possible here)."""
    if not filters:
        return {}
    from .. import probe

    try:
        resolved = probe.check(bench, filters)["params"]
    except LatscopeError:
        return dict(filters)
    return {k: resolved.get(k, v) for k, v in filters.items()}


def _matches(row: dict[str, Any], filters: dict[str, Any]) -> bool:
    """A run whose resolved parameters (else those given) hold every filter's value."""
    try:
        params = json.loads(row.get("params") or "{}")
        given = json.loads(row.get("params_given") or "{}")
    except json.JSONDecodeError:
        return False
    for k, want in filters.items():
        have = params.get(k, given.get(k))
        if have is None or _text(have) != _text(want):
            return False
    return True


def query(
    store: Store,
    bench: str,
    column: str | None = None,
    stat: str = "p50",
    filters: dict[str, str] | None = None,
    host: str | None = None,
) -> History:
    """The rows of one column of ``bench`` (``host``: of that host's runs only), from the
    summary table (`catalog`: only the benchmark's partitions are read)."""
    from .catalog import catalog

    if stat not in [s.key for s in STATS]:
        raise BadInput(f"--stat {stat}: choose one of {', '.join(s.key for s in STATS)}")
    cat = catalog(store, benchmark=bench, host=host)
    skipped = list(cat.skipped)
    # an interleaved run's columns are its arms' (A:rtt, B:rtt): not a point of a history
    rows = [r for r in cat.dicts() if not row_tags(r).get("ab")]
    if not rows:
        if host is not None and cat.hosts:
            raise BadInput(
                f"no runs of '{bench}' from host {host} in the store {store.root} "
                f"(its runs of {bench} are from: {', '.join(cat.hosts)})"
            )
        everything = catalog(store).rows
        known = sorted(everything["benchmark"].unique().to_list())
        raise BadInput(
            f"no runs of '{bench}' in the store {store.root}"
            + (f" (it has: {', '.join(known)})" if known else "")
        )
    columns: list[str] = []
    for r in sorted(rows, key=lambda r: r["column_index"]):
        if r["column"] not in columns:
            columns.append(r["column"])
    if column is None:
        firsts = [r["column"] for r in rows if r["column_index"] == 0]
        column = firsts[-1] if firsts else (columns[0] if columns else "")
    if column not in columns:
        raise BadInput(f"--column {column}: the runs of {bench} have {', '.join(columns)}")
    wanted = resolve_filters(bench, filters or {})
    picked = [r for r in rows if r["column"] == column and _matches(r, wanted)]
    if not picked:
        raise BadInput(
            f"no run of {bench} matches " + " ".join(f"{k}={v}" for k, v in (filters or {}).items())
        )
    h = History(bench, column, stat, picked, skipped, columns, [])
    h.env_notes = _env_notes(store, picked)
    h.hosts = sorted({r["host"] or "" for r in picked})
    h.indexed = cat.indexed
    return h


def row_tags(row: dict[str, Any]) -> dict[str, Any]:
    """A summary-table row's tags (its JSON ``tags``; {} where unreadable)."""
    try:
        tags = json.loads(row.get("tags") or "{}")
    except ValueError:
        return {}
    return tags if isinstance(tags, dict) else {}


def injected_ns(tags: dict[str, Any]) -> float:
    """The known delay a run's figures hold, from its tags (``run --inject-ns``; 0: none)."""
    v = tags.get("inject_ns")
    return float(v) if isinstance(v, (int, float)) and v > 0 else 0.0


def _env_notes(store: Store, rows: list[dict[str, Any]]) -> list[str]:
    """Environment differences between the runs shown (env.compatible against the first),
    within each host: runs of several hosts are shown apart (by host), and differ in their
    hosts' environments as a matter of course.  The environments are the summary table's
    briefs (`env_brief`: what compatible reads), each distinct one compared once; a row
    without one (written by an older latscope) has its run.json read."""
    from .meta import BadFile

    envs: list[tuple[str | None, str, dict[str, Any]]] = []
    seen: set[tuple[str | None, str]] = set()
    for row in rows:
        text = row.get("env_brief")
        if text is not None:
            if (row["host"], text) in seen:
                continue  # compared already: it says what its first run says
            seen.add((row["host"], text))
            env = json.loads(text)
        else:
            try:
                env = store.read_meta(store.runs_dir / row["run_id"]).get("env")
            except BadFile:
                continue  # changed since it was listed: said when it is read
        if isinstance(env, dict):
            envs.append((row["host"], row["run_id"], env))
    notes: dict[str, str] = {}
    for host in sorted({h or "" for h, _, _ in envs}):
        notes.update(_differences([(i, e) for h, i, e in envs if (h or "") == host]))
    return [f"{d} (first seen in {rid})" for d, rid in notes.items()]


def _differences(envs: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    from ..env import compatible

    if len(envs) < 2:
        return {}
    first_id, first = envs[0]
    notes: dict[str, str] = {}
    for rid, e in envs[1:]:
        for d in compatible(first, e):
            notes.setdefault(d, f"{rid}, against {first_id}")
    return notes


def differing_params(rows: list[dict[str, Any]]) -> list[str]:
    """Parameter names whose values differ between the rows (to label series)."""
    vals: dict[str, set[str]] = {}
    for r in rows:
        for k, v in json.loads(r.get("params") or "{}").items():
            vals.setdefault(k, set()).add(json.dumps(v))
    keys = {k for k, v in vals.items() if len(v) > 1}
    for r in rows:  # a key missing from some rows differs too
        keys |= set(vals) - set(json.loads(r.get("params") or "{}"))
    return sorted(keys)


def series_label(row: dict[str, Any], keys: list[str]) -> str:
    p = json.loads(row.get("params") or "{}")
    return " ".join(f"{k}={p.get(k, '?')}" for k in keys) or "all runs"


def plot(h: History, target: str | os.PathLike[str], replace: bool = True) -> Path:
    """The figure over time as an image (format from the file name, e.g. .png, .svg);
    ``replace=False``: a file that exists is not replaced (`files.atomic_write`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = Path(target)
    if target.is_dir():
        raise BadInput(f"--plot {target}: is a directory; give a file name such as history.png")
    if not target.parent.exists():
        raise BadInput(f"--plot {target}: {target.parent} does not exist")
    ext = target.suffix.lower().lstrip(".")
    if ext not in plt.gcf().canvas.get_supported_filetypes():
        plt.close("all")
        raise BadInput(f"--plot {target}: unknown image format '{ext}' (use .png, .svg or .pdf)")
    plt.close("all")
    vals = [h.value(r) for r in h.rows]
    unit = pick_unit(vals) if h.is_time else ("", 1.0)
    keys = differing_params(h.rows)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in h.rows:
        label = series_label(r, keys)
        if len(h.hosts) > 1:
            label = f"{r['host'] or '?'}: {label}"
        groups.setdefault(label, []).append(r)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    for label, rs in groups.items():
        xs = [r["created_utc"] for r in rs]
        ys = [(h.value(r) or float("nan")) / unit[1] for r in rs]
        yerr = None
        if h.stat == "p50":
            lo = [
                max(0.0, y - r["p50_ci_low_ns"] / unit[1]) if r["p50_ci_low_ns"] is not None else 0
                for y, r in zip(ys, rs, strict=True)
            ]
            hi = [
                max(0.0, r["p50_ci_high_ns"] / unit[1] - y)
                if r["p50_ci_high_ns"] is not None
                else 0
                for y, r in zip(ys, rs, strict=True)
            ]
            yerr = [lo, hi]
        ax.errorbar(xs, ys, yerr=yerr, fmt="o-", capsize=3, label=label, markersize=4)
    ax.set_title(f"{h.bench} {h.column}: {h.stat} over time ({len(h.rows)} runs)")
    ax.set_ylabel(f"{h.stat} ({unit[0]})" if h.is_time else h.stat)
    ax.set_xlabel("run created (UTC)")
    if h.stat == "p50":
        ax.text(
            0.01,
            0.01,
            "error bars: 95% CI of each run's median (within-run)",
            transform=ax.transAxes,
            fontsize=8,
            color="0.4",
        )
    if len(groups) > 1 or keys:
        ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.autofmt_xdate()
    fig.tight_layout()
    try:
        with atomic_write(target, replace=replace) as f:
            fig.savefig(f, dpi=120, format=ext)
    except OSError as e:
        raise BadInput(f"--plot {target}: cannot write: {e.strerror}") from None
    finally:
        plt.close(fig)
    return target
