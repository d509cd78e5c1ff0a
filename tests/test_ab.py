"""`latscope ab`: scenarios as arms of one probe process, their comparison kept with the run
and rendered by every view. The statistic itself is tested on synthetic data in
test_paired.py; the probe's arms and sample file in test_probe_arms.py."""

from __future__ import annotations

import io
import json
import subprocess
from typing import Any

import pytest
from rich.console import Console

from latscope.errors import BadInput
from latscope.measure import ab, arms, comparison
from latscope.report.ab import comparison_table, print_ab, verdict_text


def _facts(verdicts: list[str], columns: tuple[str, ...] = ("rtt",)) -> dict[str, Any]:
    words = ["pipe cpus=0,0", *[f"eventfd cpus=0,{i}" for i in range(len(verdicts))]]
    comps = []
    for k, v in enumerate(verdicts, start=1):
        r = {"faster": 0.5, "slower": 1.25, "same": 1.001, "inconclusive": 1.02}[v]
        for c in columns:
            comps.append(
                {
                    "arm": comparison.LETTERS[k],
                    "column": c,
                    "ratio": r,
                    "low": r * 0.99,
                    "high": r * 1.01,
                    "verdict": v,
                    "settle": "more rounds: run longer (--time)" if v == "inconclusive" else None,
                    "rounds": 400,
                    "workers": 2,
                    "per_worker": [r, r],
                    "method": "test",
                    "order_effect": {"ratio": 1.0, "low": 0.99, "high": 1.01},
                    "order_warning": None,
                }
            )
    return {
        "schema": comparison.AB_SCHEMA,
        "noise": 0.01,
        "level": 0.95,
        "baseline": "A",
        "time_s": 5.0,
        "block_ms": 5.0,
        "seed": 1,
        "workers": 2,
        "rounds": [200, 200],
        "arms": [
            {"arm": comparison.LETTERS[i], "scenario": w, "benchmark": w.split()[0], "params": {}}
            for i, w in enumerate(words)
        ],
        "columns": list(columns),
        "comparisons": comps,
        "medians": [
            {
                "arm": comparison.LETTERS[i],
                "column": c,
                "median_ns": 6000.0 + i,
                "low_ns": 5990.0,
                "high_ns": 6010.0,
                "n": 100_000,
            }
            for i in range(len(words))
            for c in columns
        ],
    }


def _render(f: dict[str, Any], width: int = 80) -> str:
    out = io.StringIO()
    print_ab(Console(file=out, width=width, color_system=None), f, "20260101-000000-pipe-abcd")
    return out.getvalue()


# ------------------------------------------------------------------------------- scenarios


def test_a_scenario_is_a_benchmark_with_its_parameters_and_an_injected_delay() -> None:
    a = arms.parse_arm("pipe cpus=0,0 mode=threads inject_ns=130")
    assert (a.bench, a.params, a.inject_ns) == ("pipe", {"cpus": "0,0", "mode": "threads"}, 130)
    assert a.word == "pipe cpus=0,0 mode=threads inject_ns=130"
    assert arms.parse_arm("  syscall  ").word == "syscall"


@pytest.mark.parametrize(
    ("word", "says"),
    [
        ("", "empty scenario"),
        ("cpus=0,0 pipe", "starts with the benchmark"),
        ("nosuchbench", "nosuchbench"),
        ("pipe cpus", "key=value"),
        ("pipe cpus=0,0 cpus=1,1", "given twice"),
        ("pipe inject_ns=-5", "whole nanoseconds"),
        ("pipe inject_ns=1e3", "whole nanoseconds"),
    ],
)
def test_a_bad_scenario_is_one_line(word: str, says: str) -> None:
    with pytest.raises(BadInput) as e:
        arms.parse_arm(word)
    assert says in e.value.message and "\n" not in e.value.message


@pytest.mark.parametrize(
    ("count", "time_s", "block_ms", "long", "says"),
    [
        (1, 5.0, 5.0, False, "at least two"),
        (9, 5.0, 5.0, False, "at most 8"),
        (2, 0.1, 5.0, False, "between 0.2 and 3600"),
        (2, 30.0, 5.0, False, "--long"),
        (2, 5.0, 0.1, False, "--block-ms"),
    ],
)
def test_a_bad_plan_is_refused_before_anything_runs(
    count: int, time_s: float, block_ms: float, long: bool, says: str
) -> None:
    with pytest.raises(BadInput) as e:
        ab._validate([arms.Arm("syscall", {})] * count, time_s, block_ms, long)
    assert says in e.value.message


def test_the_probe_command_line_names_every_arm() -> None:
    args = ab.arms_args(
        [arms.parse_arm("pipe cpus=0,0"), arms.parse_arm("pipe cpus=0,0 inject_ns=10")],
        "/x/samples.lss",
        time_s=5.0,
        block_ms=5.0,
        seed=7,
        workers=3,
        clock="mono_raw",
        warmup=None,
    )
    assert args[1:5] == ["--arm", "pipe cpus=0,0", "--arm", "pipe cpus=0,0 inject_ns=10"]
    assert args[-2:] == ["-o", "/x/samples.lss"]
    for flag, v in (("--time", "5"), ("--seed", "7"), ("--workers", "3"), ("--clock", "mono_raw")):
        assert args[args.index(flag) + 1] == v


# ------------------------------------------------------------------------------- views


def test_the_answer_comes_first_one_line_per_arm_at_80_columns() -> None:
    text = _render(_facts(["faster", "slower", "same", "inconclusive"]))
    lines = text.splitlines()
    assert all(len(ln) <= 80 for ln in lines)
    verdict_rows = [ln for ln in lines if ln.split()[:1] in (["B"], ["C"], ["D"], ["E"])]
    # the comparison rows come before the medians (each arm appears twice: verdict, median)
    first = [ln.split()[0] for ln in verdict_rows[:4]]
    assert first == ["B", "C", "D", "E"]
    assert "faster (−50.0%)" in text and "slower (+25.0%)" in text
    assert "inconclusive: more rounds" in text
    assert "A: pipe cpus=0,0 (baseline)" in text


def test_several_columns_name_their_column() -> None:
    f = _facts(["slower"], columns=("open", "write", "read", "close"))
    t = comparison_table(f)
    assert [c.header for c in t.columns][:2] == ["arm", "column"]
    assert t.row_count == 4


def test_verdict_text_gives_the_change_only_with_a_direction() -> None:
    assert verdict_text({"verdict": "same", "ratio": 1.004}) == "same"
    assert verdict_text({"verdict": "slower", "ratio": 1.021}) == "slower (+2.1%)"


def test_fail_if_names_what_fails() -> None:
    f = _facts(["faster", "slower", "same"])
    assert ab.fail_if(f, None) == []
    assert [x.split()[0] for x in ab.fail_if(f, "slower")] == ["C"]
    assert [x.split()[0] for x in ab.fail_if(f, "different")] == ["B", "C"]


def test_the_facts_are_json() -> None:
    f = _facts(["same"])
    assert json.loads(json.dumps(f)) == f


# ------------------------------------------------------------------------------- end to end


# The runs below that assert no verdict measure for 0.2 s, the least --time takes: 20 rounds
# of 5 ms blocks, twice the rounds an interval needs, and what they assert (the run's shape,
# the views, the bound on the samples) holds in every round. Those that assert a verdict keep
# their 0.5-0.6 s: at 0.2 s a host loaded with other work (load average 12) left a 2 µs
# wait on a 0.2 µs call inconclusive.


def test_ab_keeps_one_run_with_arms_that_every_view_reads(cli, store) -> None:
    r = cli("ab", "syscall", "syscall inject_ns=200", "--time", "0.2", "--json", "--seed", "3")
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)
    assert f["schema"] == comparison.AB_SCHEMA and f["baseline"] == "A"
    assert [a["scenario"] for a in f["arms"]] == ["syscall", "syscall inject_ns=200"]
    (c,) = f["comparisons"]
    assert (c["arm"], c["column"]) == ("B", "call")
    assert c["verdict"] in ("faster", "slower", "same", "inconclusive")
    assert c["low"] <= c["ratio"] <= c["high"]
    assert {m["arm"] for m in f["medians"]} == {"A", "B"}

    from latscope.measure.runner import load

    run = load(f["run_id"], store)
    assert run.columns == ["A:call", "B:call"] and len(run.arms) == 2
    s = run.samples
    assert {"worker", "arm", "block", "round", "call_ns"} <= set(s.columns)
    assert set(s["arm"].unique()) == {"A", "B"}
    assert s.height == run.n == sum(a["n"] for a in run.arms)
    # the stored facts are what show prints, without measuring or recomputing
    shown_ = cli("show", f["run_id"])
    assert shown_.returncode == 0, shown_.stderr
    assert "A: syscall (baseline)" in shown_.stdout and "ratio to A" in shown_.stdout
    assert "B:call" not in shown_.stdout  # the comparison gives each arm's median once
    assert "B:call" in cli("show", f["run_id"], "--full").stdout


def test_an_interleaved_sample_file_imported_is_kept_with_its_comparison(
    cli, store, tmp_path
) -> None:
    """A file the probe wrote with arms (here, or on a fleet's host) becomes the same kind of
    run as `latscope ab` keeps: its paired comparison computed once, shown from the facts."""
    from latscope import probe

    out = tmp_path / "arms.lss"
    args = [probe.probe_path(), "--arm", "syscall", "--arm", "syscall inject_ns=2000"]
    done = subprocess.run([*args, "--time", "0.5", "-o", str(out)], capture_output=True)
    assert done.returncode == 0, done.stderr
    r = cli("import", str(out))
    assert r.returncode == 0, r.stderr
    (d,) = (store / "runs").iterdir()
    meta = json.loads((d / "run.json").read_text())
    assert meta["tags"]["ab"] is True
    (c,) = meta["ab"]["comparisons"]
    assert (c["arm"], c["column"], c["verdict"]) == ("B", "call", "slower")
    assert [a["scenario"] for a in meta["ab"]["arms"]] == ["syscall", "syscall inject_ns=2000"]
    shown_ = cli("show", d.name)
    assert shown_.returncode == 0 and "ratio to A" in shown_.stdout


def test_fail_if_exits_1_only_when_a_verdict_says_so(cli) -> None:
    r = cli("ab", "syscall", "syscall inject_ns=2000", "--time", "0.6", "--fail-if", "slower")
    assert r.returncode == 1, r.stderr  # +2 µs on a ~0.2 µs call: slower whatever the host
    assert "--fail-if slower: B call: slower" in r.stderr
    r = cli("ab", "syscall inject_ns=2000", "syscall", "--time", "0.6", "--fail-if", "slower")
    assert r.returncode == 0, r.stderr  # B is faster than the baseline: not a failure


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("ab", "syscall"), "at least two"),
        (("ab", "syscall", "pipe"), "columns"),
        (("ab", "syscall", "syscall", "--time", "99"), "--long"),
        (("ab", "syscall", "syscall", "--noise", "abc"), "--noise"),
    ],
)
def test_ab_refusals_are_one_line(cli, args: tuple[str, ...], says: str) -> None:
    r = cli(*args)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in r.stderr


def test_arms_that_cannot_share_a_process_alternate_as_processes(cli, short_processes) -> None:
    """A spinning mechanism's idle responder would spin while another arm runs: the probe
    refuses it as an arm, and the arms alternate as short processes in shuffled rounds."""
    r = cli("ab", "spin cpus=0,1", "spin cpus=0,1 inject_ns=300", "--time", "0.2", "--json")
    assert r.returncode == 0, r.stderr
    f = json.loads(r.stdout)
    assert f["mode"] == "processes" and "spin cannot be an arm" in f["apart"]
    assert f["workers"] == 1 and f["rounds"][0] >= 12
    from latscope.measure.runner import load

    run = load(f["run_id"], cli.store)
    # every block is a process of its own: no "one process" warning
    assert "single-process" not in {x["key"] for x in run.facts["findings"]}
    order = run.meta["interleave"]["order"][0]
    assert all(sorted(o) == [0, 1] for o in order)
    idx = run.index_columns()
    # every process is one block of one arm in one round
    for b in set(idx["block"].tolist()):
        sel = idx["block"] == b
        assert len(set(idx["arm"][sel].tolist())) == 1 and len(set(idx["round"][sel].tolist())) == 1


def test_a_report_of_an_interleaved_run_gives_its_comparison(cli, tmp_path) -> None:
    r = cli("ab", "syscall", "syscall inject_ns=500", "--time", "0.2", "--max-samples", "20000")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "rep"
    r = cli("report", "last", "--md", str(out), "--no-figures")
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert "A: syscall (baseline); B: syscall inject_ns=500" in md
    assert "**Paired comparison with the baseline**" in md and "**Each arm's median**" in md
    # it opens with its answer: the comparison is the first thing under "At a glance"
    glance = md.split("At a glance", 1)[1].lstrip("#\n ")
    assert glance.startswith("B (syscall inject_ns=500) against A (syscall), call: ratio "), glance[
        :200
    ]
    assert "paired in" in glance.splitlines()[0]
    # the samples stay within the bound asked for, each arm's
    from latscope.measure.runner import load

    run = load("last", cli.store)
    assert all(a["n"] <= 20000 for a in run.arms)
