#!/usr/bin/env python3
"""Every kind of figure, rendered once, to look at: the standalone plots of ``latscope plot``
and the composite figures of the HTML report, as PNG at the report's 100 dpi, from synthetic
data with a narrow body and a heavy tail (always) and from stored runs and a suite's record
(when given). Prints each file with its size in pixels.

    python bench/plot_gallery.py OUT                                 # synthetic data only
    python bench/plot_gallery.py OUT --run ~/.local/share/latscope/runs/<id> --run ...
    python bench/plot_gallery.py OUT --suite STORE/suites/<suite run id>.json

A suite's figures are drawn from its record (the repetitions' runs and each scenario's
interval over repetitions) as the suite report draws them; the record's runs must be in the
store next to it (``STORE/runs``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from latscope import plots, report
from latscope.record import Run
from latscope.stats import analyze_column, compare


def synthetic(n: int = 20_000, seed: int = 3) -> dict[str, np.ndarray]:
    """Columns like a pipe round trip: a narrow body near 15 µs, a second mode at 23 µs (5%),
    a plateau near 300 µs (2%) and rare spikes to about 1 ms; a second column 10x faster."""
    rng = np.random.default_rng(seed)
    x = 13_000.0 + rng.lognormal(np.log(2_000.0), 0.25, n)
    k = rng.random(n)
    x[k < 0.05] = rng.normal(23_000.0, 1_500.0, int(np.sum(k < 0.05)))
    x[k < 0.02] = rng.normal(300_000.0, 20_000.0, int(np.sum(k < 0.02)))
    x[k < 0.001] = rng.uniform(400_000.0, 1_000_000.0, int(np.sum(k < 0.001)))
    step = 10.0
    x = np.round(x / step) * step
    return {"rtt": x, "oneway": np.round(x / 2 / step) * step}


def kinds(cols: dict[str, np.ndarray], label: str, step: float) -> dict[str, Callable[[], Figure]]:
    """The standalone figures (``latscope plot``) of the first column, and of all columns."""
    name, x = next(iter(cols.items()))
    t = np.cumsum(x) / 1e9
    a = analyze_column(x, t, step_ns=step)
    fit = a.distribution.lognormal
    lab = f"{name} — {label}"
    other = x * 1.07
    c = compare(x, other)
    return {
        "hist": lambda: plots.histogram(x, label=lab, fit=fit, step=step),
        "hist-p97": lambda: plots.histogram(x, label=lab, fit=fit, cut=97, step=step),
        "hist-log": lambda: plots.histogram(x, label=lab, fit=fit, log_x=True, step=step),
        "box": lambda: plots.box(cols, title=label),
        "violin": lambda: plots.box(cols, title=label, violin=True),
        "time": lambda: plots.time_series(
            x, label=lab, t=t, drift=a.drift, spikes=a.outliers.spike_indices
        ),
        "ecdf": lambda: plots.ecdf({"A": x, "B": other}, title=label),
        "tail": lambda: plots.tail({"A": x, "B": other}, title=label),
        "acf": lambda: plots.acf(a.dependence, label=lab),
        "qq": lambda: plots.qq(fit, label=lab),
        "shift": lambda: plots.shift({k: [("B", c)] for k in cols}, baseline="A"),
        "scenarios": lambda: plots.scenarios(
            [
                plots.Series(f"scenario-{i}-{'with-a-long-name' * (i % 2)}", k, v * (1 + i / 4))
                for i in range(9)
                for k, v in cols.items()
            ],
            title="nine scenarios",
        ),
    }


def report_figures(run: Run, label: str) -> dict[str, Callable[[], Figure]]:
    """The figures the HTML report of ``run`` shows, by their key."""
    ra = report.analyse(run, label)
    out: dict[str, Callable[[], Figure]] = {}
    for b in report.run_blocks(ra):
        make = getattr(b, "make", None)
        if make is not None:
            out[f"report-{b.key.removeprefix(run.id + '-')}"] = make
    return out


def _values(run: Run, column: str) -> np.ndarray:
    """A column of ``run``, or a derived one the suite made (``rtt/2``: rtt divided by 2)."""
    if column in run.all_columns or "/" not in column:
        return run.values(column)
    base, divisor = column.split("/", 1)
    return run.values(base) / float(divisor)


def suite_figures(record: Path) -> dict[str, Callable[[], Figure]]:
    """The suite report's figures of the scenarios side by side, one per benchmark."""
    d = json.loads(record.read_text())
    runs_dir = record.parent.parent / "runs"
    by_bench: dict[str, list[plots.Series]] = {}
    for row in d["comparison"]:
        vals = np.concatenate([_values(Run(runs_dir / i), row["column"]) for i in row["run_ids"]])
        iv = row.get("interval_over_repetitions_ns")
        by_bench.setdefault(row["benchmark"], []).append(
            plots.Series(row["scenario"], row["column"], vals, tuple(iv) if iv else None)
        )
    return {
        f"suite-{b}": (lambda s=s, b=b: plots.scenarios(s, title=b)) for b, s in by_bench.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="directory for the PNG files (created)")
    ap.add_argument("--run", action="append", default=[], help="a stored run's directory")
    ap.add_argument("--suite", type=Path, help="a suite's record, STORE/suites/<id>.json")
    ap.add_argument("--dpi", type=int, default=100, help="as the HTML report (100)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Callable[[], Figure]] = {}
    cols = synthetic()
    for k, f in kinds(cols, "synthetic", 10.0).items():
        figures[f"synthetic-{k}"] = f
    for i, path in enumerate(args.run):
        run = Run(path)
        pre = f"run{i + 1}-{run.benchmark}"
        step = run.column_step_ns(run.columns[0]) or 0.0
        vals = {c: run.values(c) for c in run.columns}
        for k, f in kinds(vals, run.benchmark, step).items():
            figures[f"{pre}-{k}"] = f
        for k, f in report_figures(run, run.benchmark).items():
            figures[f"{pre}-{k}"] = f
    if args.suite:
        figures.update(suite_figures(args.suite))
    for name, make in figures.items():
        fig = make()
        path = plots.save(fig, args.out / f"{name}.png", dpi=args.dpi)
        w, h = (round(v * args.dpi) for v in fig.get_size_inches())
        print(f"{path}  {w} x {h} px")


if __name__ == "__main__":
    main()
