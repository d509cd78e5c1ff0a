"""The lab reads what the probe's catalogue defines and keeps no copy of it: the quick plan,
parameter spellings (--check), derived columns, latency labels, placements, iteration rules
and how a run is shown. Each test fails if a Python copy of the concept came back."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from latscope import probe as lab_probe
from latscope import scenarios
from synth import lognormal, make_run


@pytest.fixture()
def real(probe: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The catalogue of the probe under test."""
    monkeypatch.setenv("LATSCOPE_PROBE", probe)
    return lab_probe.catalogue()


@pytest.fixture()
def fake(real: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A copy of the real catalogue the test may change; the lab reads only it."""
    cat = copy.deepcopy(real)
    monkeypatch.setattr(lab_probe, "catalogue", lambda: cat)
    return cat


def entry(cat: dict[str, Any], name: str) -> dict[str, Any]:
    return next(b for b in cat["benchmarks"] if b["name"] == name)


def test_the_quick_plan_is_the_catalogues_quick_scenarios(real: dict[str, Any]) -> None:
    want = []
    for b in real["benchmarks"]:
        for sc in b["scenarios"]:
            if sc["quick"]:
                want.append(
                    (
                        sc["name"],
                        b["name"],
                        sc["params"],
                        sc["n"] or real["quick"]["n"],
                        sc["warmup"] if sc["warmup"] is not None else real["quick"]["warmup"],
                    )
                )
    s = scenarios.load("quick")
    assert s.builtin
    # every quick scenario of the catalogue, in its order: run, or skipped here with a reason
    assert sorted([x.name for x in s.scenarios] + [k.name for k in s.skipped]) == sorted(
        w[0] for w in want
    )
    got = [(x.name, x.benchmark, x.params, x.n, x.warmup) for x in s.scenarios]
    assert got == [w for w in want if w[0] in {x.name for x in s.scenarios}]
    assert not (Path(scenarios.__file__).parent / "suites" / "quick.toml").exists()


def test_a_new_quick_scenario_in_the_catalogue_joins_the_plan(fake: dict[str, Any]) -> None:
    entry(fake, "syscall")["scenarios"].append(
        {"name": "sys-new", "params": {"op": "read0"}, "n": 7, "warmup": 3, "quick": True}
    )
    entry(fake, "pipe")["scenarios"][0]["quick"] = False
    names = [s.name for s in scenarios.quick().scenarios]
    assert "sys-new" in names and names.index("sys-new") == 2 and "pipe" not in names
    new = next(s for s in scenarios.quick().scenarios if s.name == "sys-new")
    assert (new.n, new.warmup) == (7, 3)


def test_history_groups_size_spellings_through_the_probe(store: Path, real: dict) -> None:
    from latscope.store import Store, history

    for size in (4096, 8192):
        make_run(store, {"open": lognormal(50, 1000.0)}, bench="file", params={"size": size})
    h = history.query(Store(store), "file", filters={"size": "4k"})
    assert len(h.rows) == 1
    assert len(history.query(Store(store), "file", filters={"size": "8KiB"}).rows) == 1
    assert history.resolve_filters("file", {"size": "4k", "fsync": "yes"}) == {
        "size": 4096,
        "fsync": True,
    }


def test_derived_columns_follow_divide_by(store: Path, fake: dict[str, Any]) -> None:
    pipe = entry(fake, "pipe")
    pipe["derived_columns"] = [
        {**pipe["derived_columns"][0], "name": "rtt/4", "divide_by": 4, "formula": "rtt / 4"}
    ]
    x = lognormal(200, 4000.0)
    run = make_run(store, {"rtt": x}, bench="pipe", resolution_ns=8.0, header=STEP)
    assert run.derived_columns == ["rtt/4"] and run.all_columns == ["rtt", "rtt/4"]
    np.testing.assert_allclose(run.values("rtt/4"), run.values("rtt") / 4)
    assert run.column_step_ns("rtt/4") == pytest.approx(run.step_ns / 4)
    assert run.summary()["column"].to_list() == ["rtt", "rtt/4"]
    assert run.column_meta("rtt/4")["formula"] == "rtt / 4"
    # no derived columns for a benchmark whose catalogue entry has none
    pipe["derived_columns"] = []
    assert make_run(store, {"rtt": x}, bench="pipe").derived_columns == []


STEP = {
    "clock": {
        "name": "mono_raw",
        "ns_per_tick": 0.001,
        "overhead_ns": 20.0,
        "resolution_ns": 8.0,
        "step_ns": 8.0,
        "getres_ns": 1,
    }
}


def test_latency_labels_and_clock_choices_come_from_the_catalogue(fake: dict[str, Any]) -> None:
    from latscope.cli.shared import clock_arg
    from latscope.facts.wording import latency_label

    fake["latencies"]["round_trip"]["label"] = "there and back"
    assert latency_label({"latency": "round_trip", "context_switches": 2}) == (
        "there and back, 2 ctx sw"
    )
    fake["clock_choices"] = ["auto", "sundial"]
    assert clock_arg("sundial") == "sundial"
    with pytest.raises(Exception, match="sundial"):
        clock_arg("tsc")


def test_placements_and_n_rules_come_from_the_catalogue(fake: dict[str, Any]) -> None:
    from latscope.matrix.ipc import cell_n, matrix_plan
    from latscope.notes import notes_for

    spin = entry(fake, "spin")
    rule = spin["default_n_rules"][0]["n"]
    assert (
        cell_n(spin, {"cpus": "0,0"}, 5000) == rule and cell_n(spin, {"cpus": "0,1"}, 5000) == 5000
    )
    assert [n.key for n in notes_for("spin", {"cpus": "0,0"})] == ["spin-one-cpu"]
    spin["mechanism"]["blocking"] = True  # no longer spinning: no note
    assert notes_for("spin", {"cpus": "0,0"}) == []
    entry(fake, "pipe")["mechanism"]["placements"] = ["same_cpu"]
    cells = {(b["name"], cpus) for b, _, cpus in matrix_plan(["pipe"])}
    assert cells == {("pipe", "0,0")}


def test_display_templates_fill_from_header_paths() -> None:
    from latscope.facts.checks import fill

    meta = {"bench": {"placement": "different_cpus", "cpus": [0, 1], "mode": "threads"}}
    assert fill("{bench.placement:words} (cpus {bench.cpus}), {bench.mode}", meta) == (
        "different cpus (cpus 0,1), threads"
    )
    assert fill("{bench.message_bytes} B", meta) is None  # an older run: the line is left out
    gil = {"interpreter": {"gil": True}}
    assert fill("GIL {interpreter.gil:onoff}", gil) == "GIL on"  # not "GIL true"
    assert fill("GIL {interpreter.gil}", gil) == "GIL true"


def test_a_ping_pong_runs_placement_line_gives_its_cpus_parameter(real: dict[str, Any]) -> None:
    from latscope.facts.checks import display_lines

    # the probe records unpinned parties as cpus [-1, -1]; the line gives the parameter
    meta = {
        "benchmark": "pipe",
        "params": {"mode": "processes", "cpus": "none", "size": 8},
        "bench": {"placement": "unpinned", "cpus": [-1, -1], "mode": "processes",
                  "message_bytes": 8},
    }  # fmt: skip
    [(line, _)] = display_lines(meta)
    assert line.startswith("placement: unpinned (cpus=none), processes, 8 B messages"), line
    assert "-1" not in line


def test_scenario_values_are_checked_by_the_probe(fake: dict[str, Any], tmp_path: Path) -> None:
    """A value the catalogue's types allow but the probe refuses is refused: the rules are
    the probe's, not a copy (one probe call per scenario)."""
    f = tmp_path / "s.toml"
    f.write_text('[[scenario]]\nname = "y"\nbenchmark = "yield"\nparams = { cpus = "0,1" }\n')
    from latscope.errors import BadInput

    with pytest.raises(BadInput, match="one CPU|CPU 1"):
        scenarios.load(str(f))
