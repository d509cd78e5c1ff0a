"""The analysis benchmark (bench/bench_analysis.py) at its smallest size, as a smoke test: it
runs, and finds the truths its synthetic samples were made with (a spike every 5,000
iterations, a 15% slowdown from 80% of the run on). Its timings are not asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_analysis.py"


def test_the_analysis_benchmark_runs_its_smallest_size_and_finds_its_truths() -> None:
    n = 10**6
    got = subprocess.run(
        [sys.executable, str(BENCH), "--one", str(n)], capture_output=True, text=True, timeout=300
    )
    assert got.returncode == 0, got.stderr
    r = json.loads(got.stdout)
    assert r["n"] == n and r["analysis_s"] > 0 and r["peak_mib"] >= r["input_peak_mib"]
    assert abs(r["period"] - 5000) <= 5, r["period"]
    assert any(abs(c - 0.8 * n) <= 0.01 * n for c in r["change_points"]), r["change_points"]
    assert "slowdown" in r["warnings"] and "periodic_spikes" in r["warnings"]
    low, high = r["median_ci"]
    assert low <= r["median"] <= high


def test_the_figures_benchmark_draws_each_figure_of_a_column() -> None:
    """bench/bench_figures.py's one size (in this process, at 20,000 samples): each figure
    drawn, its time given."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_figures", BENCH.with_name("bench_figures.py")
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.one(20_000)
    assert r["n"] == 20_000 and r["peak_mib"] > 0
    for k in ("sort_s", "histograms", "ecdf, tail", "box, violin", "time series"):
        assert r[k] > 0, k
