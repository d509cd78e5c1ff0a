"""A run's facts (latscope.facts, docs/store.md "A run's facts"): computed once when a run is
kept, stored as facts.json, rendered by `show` without the probe, the samples or the
statistics; a run kept without them (by an older latscope) is upgraded on first read or by
`latscope store upgrade`; damaged or foreign facts are rebuilt, never trusted."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from latscope import facts
from latscope.record import Run
from latscope.units import fmt_bare, pick_unit
from synth import lognormal, make_run


def _show(
    store: Path, env: dict[str, str] | None = None, *args: str
) -> subprocess.CompletedProcess:
    """`latscope show last` in a new process (no catalogue cached from this one)."""
    code = (
        "import sys; from latscope._entry import main; sys.argv[0] = 'latscope'; "
        "rc = main(); "
        "heavy = sorted(m for m in ('numpy', 'polars', 'scipy', 'matplotlib') "
        "if m in sys.modules); "
        "print('imported:', ','.join(heavy) or 'none', file=sys.stderr); sys.exit(rc)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "show", "last", "--store", str(store), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100", **(env or {})},
        timeout=120,
        check=False,
    )


def test_a_kept_run_is_shown_from_its_facts_alone(
    tmp_path: Path, probe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run measured by the probe has its facts kept with it; `show` prints the same with the
    probe gone (not on PATH, LATSCOPE_PROBE naming nothing): rtt/2 and every line, and it
    imports neither numpy, polars, scipy nor matplotlib."""
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    from latscope.measure.runner import measure

    store = tmp_path / "store"
    run = measure("pipe", {"cpus": "0,0"}, n=400, warmup=10, store=store, workers=2)
    assert (run.dir / facts.FACTS_FILE).is_file()
    kept = facts.kept(run.dir)
    assert kept is not None and kept["id"] == run.id
    assert [c["name"] for c in kept["columns"]] == ["rtt", "oneway", "rtt/2"]
    with_probe = _show(store, {"LATSCOPE_PROBE": probe})
    assert with_probe.returncode == 0, with_probe.stderr
    gone = tmp_path / "no-probe"  # not an executable: any use of the catalogue would fail
    without = _show(store, {"LATSCOPE_PROBE": str(gone), "PATH": "/nonexistent"})
    assert without.returncode == 0, without.stderr
    assert without.stdout == with_probe.stdout
    assert "rtt/2" in without.stdout and "imported: none" in without.stderr
    # the catalogue's lines, as they were, for the full view
    assert any(d["text"].startswith("placement: same cpu") for d in kept["display"])


def test_a_run_without_facts_is_upgraded_on_first_read(store: Path) -> None:
    """A run kept by an older latscope (no facts.json): the first read builds its facts from
    the samples, equal to the summary computed from them, and keeps them."""
    made = make_run(store, {"rtt": lognormal(3000, 2000.0, seed=4)}, segments=[1000] * 3)
    assert not (made.dir / facts.FACTS_FILE).exists()
    fresh = Run(made.dir).summary().row(0, named=True)
    got = Run(made.dir).facts
    assert (made.dir / facts.FACTS_FILE).is_file()
    row = got["summary"][0]
    for key in ("n", "p50_ns", "p50_ci_low_ns", "p50_ci_high_ns", "p99_ns", "max_ns"):
        assert row[key] == pytest.approx(fresh[key]), key
    again = Run(made.dir)
    assert again._kept_facts is not None  # read, not rebuilt
    assert again.summary().row(0, named=True)["p50_ns"] == pytest.approx(fresh["p50_ns"])


@pytest.mark.parametrize(
    "damage",
    [
        "not json {",
        json.dumps({"schema": facts.SCHEMA, "id": "x"}),  # fields missing
        "<wrong id>",
        json.dumps({"schema": 999}),  # another version
        "<summary is a string>",
        "<a figure that is text>",
        "<a count that is a fraction>",
    ],
)
def test_damaged_or_foreign_facts_are_rebuilt(store: Path, damage: str) -> None:
    made = make_run(store, {"call": lognormal(2000, 300.0, seed=1)})
    good = Run(made.dir).facts
    path = made.dir / facts.FACTS_FILE
    if damage == "<wrong id>":
        text = facts.dumps({**good, "id": "20260101-000000-other-0000"})
    elif damage == "<summary is a string>":
        text = facts.dumps({**good, "summary": "p50 1 ns"})
    elif damage == "<a figure that is text>":
        text = facts.dumps({**good, "summary": [{**good["summary"][0], "p50_ns": "fast"}]})
    elif damage == "<a count that is a fraction>":
        text = facts.dumps({**good, "summary": [{**good["summary"][0], "n": 1.5}]})
    else:
        text = damage
    path.write_text(text)
    assert facts.kept(made.dir) is None or facts.kept(made.dir)["id"] != made.id
    again = Run(made.dir).facts
    assert again["summary"] == good["summary"]
    assert facts.kept(made.dir)["id"] == made.id  # kept again, whole


def test_facts_text_is_shown_never_acted_on(store: Path) -> None:
    """Text in a facts.json is the store's, and a store may be hostile: markup and control
    characters are printed as they are."""
    made = make_run(store, {"call": lognormal(2000, 300.0, seed=1)})
    good = Run(made.dir).facts
    hostile = {
        **good,
        "label": "x",
        "findings": [
            {"level": "warning", "key": "probe", "column": None, "text": "[red]boom[/red]\x1b[2J"}
        ],
        "display": [{"text": "[bold]d[/bold]", "style": "dim"}],
    }
    (made.dir / facts.FACTS_FILE).write_text(facts.dumps(hostile))
    r = _show(store)  # the brief view: the warning on one line
    assert r.returncode == 0, r.stderr
    assert "[red]boom[/red]\\x1b[2J" in r.stdout
    r = _show(store, None, "--full")  # every line the facts hold
    assert r.returncode == 0, r.stderr
    assert "[red]boom[/red]\\x1b[2J" in r.stdout and "[bold]d[/bold]" in r.stdout


def test_a_store_that_cannot_be_written_is_shown_not_written(store: Path) -> None:
    made = make_run(store, {"call": lognormal(2000, 300.0, seed=2)})
    os.chmod(made.dir, 0o555)
    try:
        if os.access(made.dir, os.W_OK) and os.geteuid() != 0:
            pytest.skip("this user can write a directory without write permission")
        os.chmod(store, 0o700)
        os.chmod(store, 0o777)  # others could redirect a write: never written (safe.py)
        r = _show(store)
        assert r.returncode == 0, r.stderr
        assert "call" in r.stdout
        assert not (made.dir / facts.FACTS_FILE).exists()
    finally:
        os.chmod(made.dir, 0o755)
        os.chmod(store, 0o755)


def test_store_upgrade_builds_every_missing_facts_and_names_what_it_cannot(
    cli, store: Path
) -> None:  # noqa: ANN001
    a = make_run(
        store, {"call": lognormal(1000, 300.0, seed=1)}, created_utc="2026-01-01T00:00:01Z"
    )
    b = make_run(
        store, {"call": lognormal(1000, 310.0, seed=2)}, created_utc="2026-01-01T00:00:02Z"
    )
    c = make_run(
        store, {"call": lognormal(1000, 320.0, seed=3)}, created_utc="2026-01-01T00:00:03Z"
    )
    assert Run(a.dir).facts["id"] == a.id  # already current
    samples = c.dir / "samples.lss"
    samples.write_bytes(samples.read_bytes()[:-40])  # damaged: cannot be rebuilt
    r = cli("store", "upgrade")
    assert r.returncode == 1
    assert "1 runs upgraded, 1 already current, 1 could not be" in r.stdout
    assert c.id in r.stderr
    assert (b.dir / facts.FACTS_FILE).is_file() and not (c.dir / facts.FACTS_FILE).exists()
    r = cli("store", "upgrade")
    assert "0 runs upgraded, 2 already current, 1 could not be" in r.stdout


def test_negative_values_are_worded_once_for_show_and_the_report(store: Path) -> None:
    """One finding in the facts (negative durations: two clocks that disagree), said in those
    words by `show` and by the report's section of the column."""
    from rich.console import Console

    from latscope.report import analyse, run_blocks
    from latscope.report.document import Alert
    from latscope.report.text import print_run

    x = lognormal(2000, 300.0, seed=6)
    x[::50] = -40.0  # a receive stamped before its send
    made = make_run(store, {"oneway": x, "rtt": lognormal(2000, 600.0, seed=7)})
    run = Run(made.dir)
    said = [w for w in run.facts["findings"] if w["key"] == "negative-values"]
    assert [w["column"] for w in said] == ["oneway"]
    out = io.StringIO()
    print_run(Console(file=out, width=300, color_system=None), run)
    assert said[0]["text"] in out.getvalue()
    alerts = [
        b.message
        for b in run_blocks(analyse(run, "r"), figures=False)
        if isinstance(b, Alert) and b.code == "negative-values"
    ]
    assert alerts == [said[0]["text"]]


def test_a_report_says_the_runs_warnings_in_shows_words_and_each_once(store: Path) -> None:
    """The report's glance opens with the warnings `latscope show` opens with (the facts'
    short words: one process, a clock too coarse), and the run's section says them in full
    (show --full's words); a warning the facts say is not said again by the analysis."""
    from latscope.report import analyse, run_blocks
    from latscope.report.document import Alert
    from latscope.report.glance import glance_blocks

    clock = {
        "name": "mono_raw",
        "ns_per_tick": 1.0,
        "overhead_ns": 20.0,
        "resolution_ns": 100.0,
        "step_ns": 100.0,
        "getres_ns": 1,
    }
    x = np.round(lognormal(3000, 300.0, seed=8) / 100.0) * 100.0  # 3 steps of a 100 ns clock
    run = Run(make_run(store, {"call": x}, ns_per_tick=1.0, header={"clock": clock}).dir)
    said = [w for w in run.facts["findings"] if w["level"] == "warning"]
    assert {w["key"] for w in said} >= {"single-process", "timer-coarse"}
    ra = analyse(run, "r")
    assert any(w.code == "timer_too_coarse" for w in ra.columns["call"].warnings)
    glance = [b for b in glance_blocks([ra], figures=False) if isinstance(b, Alert)]
    for w in said:
        assert [b.code for b in glance if b.message == (w["short"] or w["text"])] == [w["key"]]
    assert not [b for b in glance if b.code == "timer_too_coarse"]
    blocks = [b for b in run_blocks(ra, figures=False) if isinstance(b, Alert)]
    for w in said:
        assert [b.code for b in blocks if b.message == w["text"]] == [w["key"]]
    assert not [b for b in blocks if b.code == "timer_too_coarse"]


def test_the_interval_line_names_what_each_interval_was_made_of(store: Path) -> None:
    """Over worker medians, the line gives what the medians are worth, not the pooled
    samples' ESS (which the interval did not use); within one process, the ESS."""
    rng = np.random.default_rng(3)
    workers = np.concatenate([lognormal(1000, 300.0 * (1 + 0.02 * k), seed=k) for k in range(6)])
    several = Run(make_run(store, {"call": workers}, segments=[1000] * 6).dir).facts["ci_line"]
    assert "worker medians" in several and "ESS" not in several
    assert "worth" in several or "(the medians independent)" in several
    one = Run(make_run(store, {"call": rng.lognormal(6, 0.3, 2000)}).dir).facts["ci_line"]
    assert "(ESS " in one and "effective sample size" in one


@pytest.mark.parametrize("bad", [{"from": "nope"}, {"divide_by": "two"}, {"divide_by": 0}])
def test_a_derived_column_the_facts_cannot_compute_is_the_catalogues(
    store: Path, bad: dict
) -> None:
    """rtt/2 as a hostile facts.json describes it (from a column the run lacks, divided by
    text or zero) is never computed so: the catalogue's entry is used."""
    made = make_run(store, {"rtt": lognormal(2000, 3000.0, seed=8)}, bench="pipe")
    good = Run(made.dir).facts
    assert "rtt/2" in [c["name"] for c in good["columns"]], "the catalogue's rtt/2"
    cols = [
        {**c, "meta": {**c["meta"], **bad}} if c["name"] == "rtt/2" else c for c in good["columns"]
    ]
    (made.dir / facts.FACTS_FILE).write_text(facts.dumps({**good, "columns": cols}))
    run = Run(made.dir)
    assert run.derived_columns == ["rtt/2"]
    assert np.allclose(run.values("rtt/2"), run.values("rtt") / 2)


def _printed(run_or_facts, width: int = 80, details: bool = False) -> list[str]:
    from rich.console import Console

    from latscope.report.text import print_run

    buf = io.StringIO()
    print_run(Console(file=buf, width=width, color_system=None), run_or_facts, details=details)
    return buf.getvalue().splitlines()


def test_the_brief_view_gives_the_answer_in_a_few_lines_of_80_columns(store: Path) -> None:
    """What was measured, each column's median with its one interval, the warnings one line
    each, the run and where the rest is: at most 15 lines, none wider than 80; the worker
    table and the interval's method are the full view's."""
    x = {c: lognormal(4000, 1000.0, seed=k) for k, c in enumerate(("rtt", "oneway", "other"))}
    run = make_run(store, x, segments=[1000] * 4)
    f = run.facts
    lines = _printed(f)
    assert len(lines) <= 15 and max(len(ln) for ln in lines) <= 80, "\n".join(lines)
    assert lines[0].startswith("synthetic kind=synthetic · n=4,000 in 4 workers")
    row = next(ln for ln in lines if ln.split()[:1] == ["rtt"])
    r = next(r for r in f["summary"] if r["column"] == "rtt")
    unit = pick_unit([r["p50_ns"]])
    lo, hi = fmt_bare(r["p50_ci_low_ns"], unit), fmt_bare(r["p50_ci_high_ns"], unit)
    assert f"{lo}–{hi}" in row  # the one interval, as the facts hold it
    assert lines[-1] == f"the rest: latscope show {run.id} --full"
    text = "\n".join(lines)
    assert "between runs" not in text and "95% CI of p50 by" not in text
    full = "\n".join(_printed(f, details=True))
    assert "between runs: 4 worker processes" in full and "95% CI of p50 by" in full


def test_a_warning_is_one_line_in_the_brief_view_and_whole_in_the_full_one(store: Path) -> None:
    run = make_run(store, {"call": lognormal(2000, 500.0)}, segments=[2000])
    f = run.facts
    (w,) = [w for w in f["findings"] if w["key"] == "single-process"]
    assert w["level"] == "warning"
    brief = [ln for ln in _printed(f, width=60) if ln.startswith("warning:")]
    assert len(brief) == 1 and len(brief[0]) <= 60 and brief[0].endswith("…")
    full = " ".join(" ".join(_printed(f, width=60, details=True)).split())
    assert w["text"] in full


@pytest.mark.parametrize(("load1", "said"), [(0.4, False), (2.5, False), (3.5, True)])
def test_a_busy_machine_is_said_from_the_load_the_run_began_with(
    store: Path, load1: float, said: bool
) -> None:
    env = {"load": {"1m": load1, "5m": 1.0, "15m": 1.0}, "cpu": {"logical": 2}}
    run = make_run(store, {"call": lognormal(2000, 500.0)}, segments=[1000] * 2, run_env=env)
    keys = [w["key"] for w in run.facts["findings"]]
    assert ("load" in keys) is said
    if said:
        assert any(ln.startswith("warning: the machine was busy") for ln in _printed(run.facts))


def test_the_hosts_two_speeds_are_one_finding(store: Path) -> None:
    """Samples that switch between two speeds 1.4x apart, in bouts of ~1,500 iterations,
    worker after worker: the samples' finding (`levels`), said once; the workers' own
    two-level finding, which would say it again, is left out."""
    rng = np.random.default_rng(6)
    n = 40_000
    state = np.repeat(rng.integers(0, 2, size=n // 1500 + 1), 1500)[:n]
    x = np.where(state == 1, 1400.0, 1000.0) * np.exp(0.03 * rng.standard_normal(n))
    run = make_run(store, {"call": x}, segments=[4000] * 10)
    keys = [w["key"] for w in run.facts["findings"]]
    assert keys.count("levels") == 1 and "two-levels" not in keys


def test_run_and_show_give_the_facts_as_json(cli, store: Path) -> None:
    """`run --json` prints the new run's facts and nothing else on stdout; `show --json` the
    same facts, read back (schema, id, the summary with its one interval)."""
    r = cli("run", "syscall", "-n", "500", "--json")
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    assert made["schema"] == facts.SCHEMA and made["benchmark"] == "syscall"
    (row,) = made["summary"]
    assert row["column"] == "call" and row["p50_ci_low_ns"] <= row["p50_ns"]
    s = cli("show", made["id"], "--json")
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout) == made
    bad = cli("run", "syscall", "--sweep", "cpus", "--json")
    assert bad.returncode == 2 and "--json does not go with --sweep" in bad.stderr


def test_summaries_of_several_runs_stack_with_their_runs(store: Path) -> None:
    """`Run.summary()` names the run on every row (id, benchmark, parameters), so that the
    summaries of several runs are one frame; the facts keep the figures alone."""
    import polars as pl

    a = make_run(store, {"call": lognormal(500, 100.0, seed=1)}, params={"op": "getppid"})
    b = make_run(store, {"call": lognormal(500, 200.0, seed=2)}, params={"op": "read0"})
    both = pl.concat([a.summary(), b.summary()])
    assert both.columns[:4] == ["run_id", "benchmark", "params", "column"]
    assert both["run_id"].to_list() == [a.id, b.id]
    assert both["params"].to_list() == ["op=getppid", "op=read0"]
    assert "run_id" not in a.facts["summary"][0]


def test_samples_at_the_scheduler_tick_are_said_to_be_the_schedulers(store: Path) -> None:
    """A blocking hand-over whose samples sit at 4 ms and 8 ms on an HZ=250 kernel (suite
    gil's semaphore at a short switch interval): the figure is the scheduler's, said once per
    column, in one line in the brief view; a broad distribution around 4 ms, an unknown HZ,
    or a run whose note already says it (spinning peers on one CPU) get nothing."""
    rng = np.random.default_rng(12)
    at = (
        4e6
        * rng.choice([1.0, 2.0], size=3000, p=[0.8, 0.2])
        * (1 + 0.01 * rng.standard_normal(3000))
    )
    env = {"kernel": {"config_hz": 250}}
    run = make_run(store, {"rtt": at}, segments=[1000] * 3, run_env=env)
    said = [w for w in run.facts["findings"] if w["key"] == "at-tick"]
    assert len(said) == 1 and said[0]["column"] == "rtt"
    assert "scheduler tick" in said[0]["short"] and "HZ=250" in said[0]["text"]
    assert "100% of the samples" in said[0]["text"]
    brief = " ".join(_printed(run.facts))
    assert "sits at the scheduler tick" in brief
    broad = lognormal(3000, 4e6, sigma=0.5, seed=3)
    for r in (
        make_run(store, {"rtt": broad}, segments=[1000] * 3, run_env=env),
        make_run(store, {"rtt": at}, segments=[1000] * 3, run_env={"kernel": {}}),
        make_run(
            store,
            {"rtt": at},
            segments=[1000] * 3,
            run_env=env,
            bench="spin",
            params={"cpus": "0,0"},
        ),
    ):
        assert "at-tick" not in [w["key"] for w in r.facts["findings"]]


@pytest.mark.parametrize(("share", "said"), [(None, False), (0.004, False), (0.073, True)])
def test_the_hosts_steal_during_the_run_is_said_with_the_result(
    store: Path, share: float | None, said: bool
) -> None:
    """/proc/stat's steal counter before and after the probe ran: 7.3% of the CPUs' time
    kept by the hypervisor is a finding, first, in one line of the brief view; 0.4% or none
    recorded is not."""
    env = {"steal": {"share": share, "cpu_seconds": 4.2}} if share is not None else {}
    run = make_run(store, {"call": lognormal(2000, 500.0)}, segments=[1000] * 2, run_env=env)
    keys = [w["key"] for w in run.facts["findings"]]
    assert ("steal" in keys) is said
    if said:
        assert keys[0] == "steal"
        assert any("the host took 7.3% of the CPUs' time" in ln for ln in _printed(run.facts))


def test_steal_between_two_readings_of_proc_stat(tmp_path: Path) -> None:
    from latscope.env import cpu_times, steal_between

    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "stat").write_text("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    before = cpu_times(str(tmp_path))
    assert before == (40, 1000)
    assert steal_between(before, (90, 2000)) == {"share": 0.05, "cpu_seconds": 10.0}
    assert steal_between(before, before) is None and steal_between(None, before) is None
    (proc / "stat").write_text("cpu  x y\n")
    assert cpu_times(str(tmp_path)) is None
