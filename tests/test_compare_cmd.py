"""latscope compare: synthetic runs with a known shift get the right verdict in the right
direction, identical distributions are the same, runs without a common column are refused, and
different environments are warned about (not refused)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from latscope.errors import BadInput
from latscope.report.compare import compare_runs, env_differences
from synth import lognormal, make_run

N = 20_000
W = 10


def workers_run(store: Path, median: float, seed: int, between: float = 0.03):
    """A synthetic run in W worker processes whose medians vary by ``between`` (log sd)."""
    rng = np.random.default_rng(seed)
    per = N // W
    x = np.concatenate(
        [
            median * np.exp(between * rng.standard_normal() + 0.3 * rng.standard_normal(per))
            for _ in range(W)
        ]
    )
    return make_run(store, {"call": x}, segments=[per] * W)


@pytest.fixture()
def three(store: Path):
    base = workers_run(store, 1000.0, seed=1)
    slower = workers_run(store, 1300.0, seed=2)  # +30%
    same = workers_run(store, 1000.0, seed=3, between=0.002)  # same distribution
    return base, slower, same


def test_verdicts_api(three) -> None:
    base, slower, same = three
    cols, rows = compare_runs([base, slower, same], noise=0.05, seed=0)
    assert cols == ["call"]
    by = {r.other: r.result for r in rows}
    assert by[1] is not None and by[1].verdict == "slower"
    assert by[1].median_ratio.low > 1.1 and by[1].median_ratio.high < 1.5
    assert "Welch" in by[1].median_ratio.method
    assert by[2] is not None and by[2].verdict in ("same", "inconclusive")
    assert by[2].median_ratio.low <= 1.0 <= by[2].median_ratio.high
    # the other direction
    _, rows = compare_runs([slower, base], noise=0.02)
    assert rows[0].result is not None and rows[0].result.verdict == "faster"


def test_compare_cli_table_and_plot(cli, three, tmp_path: Path) -> None:
    base, slower, same = three
    png = tmp_path / "shift.png"
    r = cli("compare", base.id, slower.id, same.id, "--plot", str(png))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for word in (
        "baseline",
        "ratio of medians",
        "Mann–Whitney",
        "slower",
        "% slower",
        "10 processes",
    ):
        assert word in out, word
    assert png.read_bytes().startswith(b"\x89PNG")
    r = cli("compare", slower.id, base.id, "--noise", "5%")
    assert r.returncode == 0 and "faster" in r.stdout and "±5%" in r.stdout


def test_single_process_runs_need_the_known_variation(cli, store: Path) -> None:
    """One segment per side: inconclusive (with the command that settles it) until the store
    knows the scenario's between-run variation; then a difference beyond it is called."""
    from latscope.measure import trust
    from latscope.store import Store

    params = {"op": "getppid"}
    a = make_run(store, {"call": lognormal(N, 1000.0, seed=1)}, params=params)
    b = make_run(store, {"call": lognormal(N, 1300.0, seed=2)}, params=params)
    _, rows = compare_runs([a, b], store=Store(store))
    (row,) = rows
    assert row.result is not None and row.result.verdict == "inconclusive"
    assert row.settle is not None and "latscope trust synthetic" in row.settle
    key = trust.key_of_run(a)
    col = {"process_cv": 0.05, "run_cv": 0.02, "noise": 0.06}
    trust.write_record(
        Store(store),
        {
            "format": trust.FORMAT,
            "key": key,
            "pairs": 10,
            "created_utc": "2026-01-01",
            "columns": {"call": col},
        },
    )
    _, rows = compare_runs([a, b], store=Store(store))
    (row,) = rows
    assert row.result is not None and row.result.verdict == "slower"
    assert row.result.run_noise == 0.06  # the trust record's A/A range gates the verdict
    assert row.source is not None and "latscope trust" in row.source
    # a 30% change is not beyond a 20% variation between single processes
    col["process_cv"] = 0.2
    trust.write_record(
        Store(store),
        {"format": trust.FORMAT, "key": key, "pairs": 10, "columns": {"call": col}},
    )
    _, rows = compare_runs([a, b], store=Store(store))
    assert rows[0].result is not None and rows[0].result.verdict == "inconclusive"
    r = cli("compare", a.id, b.id)
    assert r.returncode == 0 and "inconclusive" in r.stdout and "single process" in r.stdout


def test_inconclusive_with_few_samples(store: Path) -> None:
    a = make_run(store, {"call": lognormal(200, 1000.0, sigma=0.5, seed=4)}, segments=[50] * 4)
    b = make_run(store, {"call": lognormal(200, 1030.0, sigma=0.5, seed=5)}, segments=[50] * 4)
    _, rows = compare_runs([a, b], noise=0.02)
    assert rows[0].result is not None and rows[0].result.verdict == "inconclusive"
    assert rows[0].settle is not None and "--repeat 20" in rows[0].settle


def test_no_common_column_is_refused(cli, store: Path) -> None:
    a = make_run(store, {"open": lognormal(100, 1000.0)})
    b = make_run(store, {"rtt": lognormal(100, 1000.0)})
    r = cli("compare", a.id, b.id)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("latscope: error: ")
    assert "no column in common" in lines[0] and "Traceback" not in r.stderr
    with pytest.raises(BadInput):
        compare_runs([a, b])


def test_only_common_columns_are_compared(store: Path) -> None:
    a = make_run(store, {"open": lognormal(500, 1e5), "read": lognormal(500, 900.0, seed=2)})
    b = make_run(store, {"read": lognormal(500, 900.0, seed=3), "close": lognormal(500, 1e4)})
    cols, rows = compare_runs([a, b])
    assert cols == ["read"] and [r.column for r in rows] == ["read"]
    with pytest.raises(BadInput, match="--column open"):
        compare_runs([a, b], columns=["open"])


def test_bad_arguments(cli, three) -> None:
    base, slower, _ = three
    for args, words in (
        ((base.id,), "at least two runs"),
        ((base.id, slower.id, "--noise", "1.5"), "--noise"),
        ((base.id, slower.id, "--plot", "x.gif"), ".png, .svg or .pdf"),
        ((base.id, "no-such-run"), "no run"),
    ):
        r = cli("compare", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_different_environments_warn_but_compare(cli, store: Path) -> None:
    a = make_run(store, {"call": lognormal(2000, 1000.0, seed=1)})
    other_env = {"release": "6.9.0", "machine": "x86_64", "cpu_model": "Other CPU"}
    b = make_run(store, {"call": lognormal(2000, 1000.0, seed=2)}, env=other_env)
    diffs = env_differences(a, b)
    assert any("kernel" in d for d in diffs) and any("CPU" in d for d in diffs)
    r = cli("compare", a.id, b.id)
    assert r.returncode == 0, r.stderr
    assert "Different kernel" in r.stdout and "warning" in r.stdout


def test_captured_environments_use_env_compatible(store: Path) -> None:
    env_a = {"kernel": {"release": "6.1", "machine": "x86_64"}, "cpu": {"model": "A"}}
    env_b = {"kernel": {"release": "6.1", "machine": "x86_64"}, "cpu": {"model": "B"}}
    a = make_run(store, {"call": lognormal(100, 1000.0)}, run_env=env_a)
    b = make_run(store, {"call": lognormal(100, 1000.0)}, run_env=env_b)
    assert env_differences(a, b) == ["Different CPU: A vs B."]
    c = make_run(store, {"call": lognormal(100, 1000.0)}, run_env=env_a)
    assert env_differences(a, c) == []


def test_a_comparison_and_a_report_without_figures_draw_in_nothing(tmp_path: Path) -> None:
    """`compare` without --plot and `report --no-figures` import neither matplotlib nor
    scipy.stats (a second each to import, for nothing drawn and one Mann-Whitney p-value)."""
    store = tmp_path / "store"
    a = make_run(store, {"call": lognormal(3000, 300.0, seed=1)}).id
    b = make_run(
        store, {"call": lognormal(3000, 330.0, seed=2)}, created_utc="2026-01-01T00:00:02Z"
    ).id
    code = (
        "import sys; from latscope.cli import main; rc = main(sys.argv[1:]); "
        "print(sorted(m for m in ('matplotlib', 'scipy.stats') if m in sys.modules))"
    )
    for args in (
        ["compare", a, b],
        ["report", a, b, "--md", str(tmp_path / "r"), "--no-figures", "--quiet"],
    ):
        r = subprocess.run(
            [sys.executable, "-c", code, *args, "--store", str(store)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[-1] == "[]", (args, r.stdout[-300:])
