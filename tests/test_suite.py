"""Scenario files and suites: validation before anything runs, matrices, the interleaved order
(reproducible from the seed), dry runs, tagging, skipping what is not permitted, Ctrl-C,
repetitions (`run --repeat`) and `latscope env --check`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import procs_mentioning
from latscope import scenarios
from latscope.store import Store

SMALL = """
name = "small"
repeat = 2
n = 1500
warmup = 50

[[scenario]]
name = "sys"
benchmark = "syscall"
[scenario.matrix]
op = ["getppid", "read0"]

[[scenario]]
name = "pipe"
benchmark = "pipe"
params = { cpus = "0,0" }
n = 1000
"""


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def one_error_line(r: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("latscope: error: ")
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in r.stderr + r.stdout
    return lines[0]


# ------------------------------------------------------------------------------- validation

BAD = [
    # (file text, words the one error line must contain)
    (
        '[[scenario]]\nname = "a"\nbenchmark = "nosuch"\n',
        ["scenario 'a'", "benchmark", "unknown benchmark 'nosuch'"],
    ),
    (
        '[[scenario]]\nname = "a"\nbenchmark = "file"\nparams = { cahce = "warm" }\n',
        ["scenario 'a'", "params.cahce", "unknown parameter 'cahce'"],
    ),
    (
        '[[scenario]]\nname = "a"\nbenchmark = "file"\n'
        '[scenario.matrix]\ncache = ["warm", "cold"]\n',
        ["scenario 'a'", "matrix.cache", "cold", "warm, drop, fadvise, direct"],
    ),
    (
        '[[scenario]]\nname = "a"\nbenchmark = "file"\nparams = { size = "12q" }\n',
        ["scenario 'a'", "params.size", "not a size"],
    ),
    (
        '[[scenario]]\nname = "a"\nbenchmark = "file"\nparams = { dir = "/no/such/dir" }\n',
        ["scenario 'a'", "params.dir", "does not exist"],
    ),
    (
        '[[scenario]]\nname = "a"\nbenchmark = "pipe"\nparams = { cpus = "0" }\n',
        ["scenario 'a'", "params.cpus", "two CPUs"],
    ),
    ('[[scenario]]\nname = "a"\nbenchmark = "syscall"\nn = 0\n', ["scenario 'a'", "n = 0"]),
    ('[[scenario]]\nname = "a"\nbenchmark = "syscall"\nbenchmrk = 1\n', ["unknown key 'benchmrk'"]),
    ('[[scenario]]\nname = "a"\nbenchmark = "syscall"\nclock = "sundial"\n', ["clock"]),
    ('reapet = 3\n[[scenario]]\nbenchmark = "syscall"\n', ["top level", "unknown key 'reapet'"]),
    ("[[scenario]\nname = 1\n", ["not valid TOML"]),
    ('name = "x"\n', ["no [[scenario]]"]),
    (
        '[[scenario]]\nname = "a"\nbenchmark = "syscall"\n[[scenario]]\nname = "a"\n'
        'benchmark = "syscall"\n',
        ["already defined"],
    ),
]


@pytest.mark.parametrize("text,words", BAD)
def test_validation_errors_are_one_line_and_run_nothing(
    cli, store: Path, tmp_path: Path, text: str, words: list[str]
) -> None:
    f = write(tmp_path, "# a later scenario is valid; nothing may run\n" + text)
    r = cli("suite", str(f))
    one_error_line(r, 2, str(f), *words)
    assert not store.exists()


def test_a_bad_scenario_late_in_the_file_stops_everything(cli, store: Path, tmp_path: Path) -> None:
    f = write(
        tmp_path,
        SMALL + '\n[[scenario]]\nname = "z"\nbenchmark = "file"\nparams = { cache = "x" }\n',
    )
    one_error_line(cli("suite", str(f)), 2, "scenario 'z'", "params.cache")
    assert not store.exists()


def test_missing_suite_file(cli, tmp_path: Path) -> None:
    one_error_line(cli("suite", str(tmp_path / "none.toml")), 2, "no such suite file")


# ------------------------------------------------------------------------------- matrices, order


def test_matrix_expansion(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        """
[[scenario]]
name = "orwc"
benchmark = "file"
params = { size = "1k" }
[scenario.matrix]
cache = ["warm", "fadvise"]
dir = { disk = "/var/tmp", shm = "/dev/shm" }
""",
    )
    s = scenarios.load(str(f))
    names = [x.name for x in s.scenarios]
    assert names == ["orwc-warm-disk", "orwc-warm-shm", "orwc-fadvise-disk", "orwc-fadvise-shm"]
    p = {x.name: x.params for x in s.scenarios}
    assert p["orwc-fadvise-shm"] == {"size": "1k", "cache": "fadvise", "dir": "/dev/shm"}
    assert all(x.entry == "orwc" for x in s.scenarios)


def test_interleaved_order_is_a_reproducible_permutation(tmp_path: Path) -> None:
    text = "repeat = 4\n" + "".join(
        f'[[scenario]]\nname = "s{i}"\nbenchmark = "syscall"\n' for i in range(5)
    )
    s = scenarios.load(str(write(tmp_path, text)))
    a = scenarios.plan(s, 123)
    # a permutation of all (scenario x repetition) pairs
    pairs = [(st.scenario.name, st.repetition) for st in a]
    assert sorted(pairs) == sorted((f"s{i}", r) for i in range(5) for r in range(1, 5))
    assert [st.index for st in a] == list(range(20))
    # rounds: every scenario once in each block of 5, so repetitions are interleaved
    for k in range(4):
        block = pairs[5 * k : 5 * k + 5]
        assert sorted(n for n, _ in block) == [f"s{i}" for i in range(5)]
        assert {r for _, r in block} == {k + 1}
    # never the same scenario twice in a row
    assert all(pairs[i][0] != pairs[i + 1][0] for i in range(19))
    # reproducible from the seed, different with another seed, not the file order
    assert [(x.scenario.name, x.repetition) for x in scenarios.plan(s, 123)] == pairs
    others = {tuple(x.scenario.name for x in scenarios.plan(s, seed)) for seed in range(10)}
    assert len(others) > 1
    assert tuple(n for n, _ in pairs[:5]) != ("s0", "s1", "s2", "s3", "s4") or len(others) > 1


def test_shuffle_mixes_all_runs(tmp_path: Path) -> None:
    text = 'repeat = 3\ninterleave = "shuffle"\n' + "".join(
        f'[[scenario]]\nname = "s{i}"\nbenchmark = "syscall"\n' for i in range(4)
    )
    s = scenarios.load(str(write(tmp_path, text)))
    a = [(x.scenario.name, x.repetition) for x in scenarios.plan(s, 7)]
    assert Counter(n for n, _ in a) == {f"s{i}": 3 for i in range(4)}
    assert a == [(x.scenario.name, x.repetition) for x in scenarios.plan(s, 7)]


def test_dry_run_prints_the_plan(cli, store: Path, tmp_path: Path) -> None:
    f = write(tmp_path, SMALL)
    r = cli("suite", str(f), "--dry-run", "--seed", "42")
    assert r.returncode == 0, r.stderr
    for w in ("sys-getppid", "sys-read0", "pipe", "seed 42", "6 runs", "dry run"):
        assert w in r.stdout, w
    again = cli("suite", str(f), "--dry-run", "--seed", "42")
    order = [ln for ln in r.stdout.splitlines() if "#1" in ln or "#2" in ln]
    assert order == [ln for ln in again.stdout.splitlines() if "#1" in ln or "#2" in ln]
    assert not store.exists()


@pytest.mark.parametrize("name", ["quick", "seeds", "gil"])
def test_builtin_suites_validate(cli, name: str) -> None:
    s = scenarios.load(name)
    assert s.builtin and s.scenarios
    r = cli("suite", name, "--dry-run")
    assert r.returncode == 0, r.stderr


def test_builtin_names_resolve_before_paths(cli, tmp_path: Path) -> None:
    (tmp_path / "quick").write_text("not toml [")
    r = cli("suite", "quick", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_optional_scenarios_of_absent_benchmarks_are_skipped_with_a_note(
    cli, tmp_path: Path
) -> None:
    f = write(
        tmp_path,
        '[[scenario]]\nname = "x"\nbenchmark = "carrier_pigeon"\noptional = true\n'
        '[[scenario]]\nname = "y"\nbenchmark = "syscall"\n',
    )
    s = scenarios.load(str(f))
    assert [x.name for x in s.scenarios] == ["y"]
    assert "carrier_pigeon" in s.skipped[0].why
    r = cli("suite", str(f), "--dry-run")
    assert r.returncode == 0 and "not run: x" in r.stdout


# ------------------------------------------------------------------------------- running


def test_suite_runs_tags_and_compares(cli, store: Path, tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    f = write(tmp_path, SMALL)
    r = cli("suite", str(f), "--seed", "9", "--html", str(html), "--md", str(tmp_path / "md"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for w in ("median of", "ratio to baseline", "verdict", "sys-read0", "baselines", "report:"):
        assert w in out, w
    assert html.is_file() and html.read_text().startswith("<!DOCTYPE html")
    assert "<img" in html.read_text()  # the one suite report drawn with its figures
    assert (tmp_path / "md" / "report.md").is_file()
    runs = Store(store).list_meta()
    assert len(runs) == 6
    tags = [m["tags"] for m in runs]
    assert {t["suite"] for t in tags} == {"small"}
    assert len({t["suite_run"] for t in tags}) == 1
    assert Counter(t["scenario"] for t in tags) == {"sys-getppid": 2, "sys-read0": 2, "pipe": 2}
    assert sorted(t["order"] for t in tags) == list(range(6))
    assert all(t["suite_seed"] == 9 for t in tags)
    # the runs were made in the planned order
    plan = scenarios.plan(scenarios.load(str(f)), 9)
    made = sorted(runs, key=lambda m: m["tags"]["order"])
    assert [m["tags"]["scenario"] for m in made] == [s.scenario.name for s in plan]
    assert [m["created_utc"] for m in made] == sorted(m["created_utc"] for m in made)
    # every run carries its environment
    assert all(m["env"]["kernel"]["release"] for m in runs)
    # the record of the suite run
    rec = json.loads(next((store / "suites").glob("*.json")).read_text())
    assert rec["seed"] == 9 and len(rec["steps"]) == 6 and rec["comparison"]
    ls = cli("ls", "--suite", tags[0]["suite_run"])
    assert ls.returncode == 0 and ls.stdout.count("small/") == 6


def test_not_permitted_scenario_is_skipped_and_the_suite_goes_on(
    cli, store: Path, tmp_path: Path, probe: str
) -> None:
    """A probe that refuses cache=drop the way it does without root (exit 3, one line)."""
    fake = tmp_path / "probe.sh"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *cache=drop*)\n'
        '  echo "latscope-probe: error: cache=drop needs root (it writes '
        '/proc/sys/vm/drop_caches); run as root or use cache=fadvise" >&2; exit 3;;\n'
        "esac\n"
        f'exec {probe} "$@"\n'
    )
    fake.chmod(0o755)
    f = write(
        tmp_path,
        'n = 300\nrepeat = 2\n[[scenario]]\nname = "cold"\nbenchmark = "file"\n'
        'params = { cache = "drop" }\n[[scenario]]\nname = "sys"\nbenchmark = "syscall"\n',
    )
    html = tmp_path / "r.html"
    r = cli("suite", str(f), "--html", str(html), "--no-figures", env={"LATSCOPE_PROBE": str(fake)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "<table" in html.read_text() and "<img" not in html.read_text()  # tables only
    assert "skipped" in r.stdout and "needs root" in r.stdout
    metas = Store(store).list_meta()
    assert [m["tags"]["scenario"] for m in metas] == ["sys", "sys"]
    rec = json.loads(next((store / "suites").glob("*.json")).read_text())
    assert "needs root" in rec["skipped_here"]["cold"]
    steps = [s for s in rec["steps"] if s["scenario"] == "cold"]
    assert [s["status"] for s in steps] == ["skipped", "skipped"]
    assert not [d for d in (store / "runs").iterdir() if d.name.startswith(".")]


def test_ctrl_c_stops_the_suite_and_keeps_finished_runs(cli, store: Path, tmp_path: Path) -> None:
    f = write(
        tmp_path,
        'repeat = 3\n[[scenario]]\nname = "s"\nbenchmark = "syscall"\nn = 2000\n'
        '[[scenario]]\nname = "p"\nbenchmark = "pipe"\nn = 50000000\n',
    )
    # a process of its own: Ctrl-C goes to its process group
    p = cli.popen(
        "suite",
        str(f),
        "--seed",
        "1",
        "--quiet",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not procs_mentioning(f"{store}/runs/.partial-"):
        time.sleep(0.05)
    # wait for the long pipe run (the syscall runs finish in a moment)
    while time.time() < deadline:
        procs = procs_mentioning(f"{store}/runs/.partial-")
        if procs and any(b"pipe" in Path(f"/proc/{x}/cmdline").read_bytes() for x in procs):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, out + err
    assert "interrupted" in err and "Traceback" not in err + out
    assert not procs_mentioning(str(store))
    runs = Store(store).list_meta()
    assert all(m["benchmark"] == "syscall" for m in runs)
    assert not [d for d in (store / "runs").iterdir() if d.name.startswith(".")]


# ------------------------------------------------------------------------------- repetitions


def test_run_repeat_three_worker_processes(cli, store: Path) -> None:
    r = cli("run", "syscall", "-n", "2000", "--repeat", "3")
    assert r.returncode == 0, r.stderr
    for w in ("between runs: 3 worker processes", "worker medians", "95% CI over", "Student t"):
        assert w in r.stdout, w
    metas = Store(store).list_meta()
    assert len(metas) == 1  # one run, three processes
    from latscope.runner import load

    run = load(metas[0]["id"], store)
    assert run.segments == [667, 667, 666]
    assert len({w["pid"] for w in run.meta["workers"]}) == 3


def test_run_repeat_one_is_labelled_a_single_process(cli) -> None:
    r = cli("run", "syscall", "-n", "500", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    assert "single process: the interval does not include between-run variation" in r.stdout


def test_between_workers_of_a_synthetic_run(store: Path) -> None:
    from latscope.repeat import between_segments
    from synth import make_run

    rng = np.random.default_rng(5)
    meds = [1000.0, 1100.0, 1210.0, 1050.0]
    x = np.concatenate([m * np.exp(0.05 * rng.standard_normal(500)) for m in meds])
    run = make_run(store, {"call": x}, segments=[500] * 4)
    (b,) = between_segments(run)
    assert b.r == 4
    assert [round(r.p50, -1) for r in b.reps] == [1000.0, 1100.0, 1210.0, 1050.0]
    assert b.interval is not None and b.interval[0] < 1000 < 1210 < b.interval[1]
    assert b.note is not None  # 0.5% within-process intervals cannot explain a 20% spread


def test_run_repeat_rejects_zero(cli) -> None:
    one_error_line(cli("run", "syscall", "--repeat", "0"), 2, "--repeat 0")


def test_between_statistics_on_known_values() -> None:
    from latscope.repeat import Rep, between

    b = between(
        "c",
        [
            Rep("a", 100.0, 99.0, 101.0),
            Rep("b", 110.0, 109.0, 111.0),
            Rep("c", 121.0, 120.0, 122.0),
        ],
    )
    assert b.median_of_medians == 110.0 and b.lowest == 100.0 and b.highest == 121.0
    assert b.interval is not None and b.interval[0] < 100.0 and b.interval[1] > 121.0
    assert abs(b.center - 110.0) < 0.1  # geometric mean of 100, 110, 121
    assert b.note is not None  # 1% within-run intervals cannot explain a 21% spread
    two = between("c", [Rep("a", 100.0, 90.0, 110.0), Rep("b", 101.0, 91.0, 111.0)])
    assert two.interval is None and two.note is None and "at least 3" in two.method


# ------------------------------------------------------------------------------- env


def test_env_check(cli) -> None:
    r = cli("env", "--check")
    assert r.returncode == 0, r.stderr
    assert "Environment" in r.stdout and "Kernel" in r.stdout
    assert "Findings" in r.stdout or "No problems found" in r.stdout
    j = cli("env", "--check", "--json", "--path", "/dev/shm")
    assert j.returncode == 0
    d = json.loads(j.stdout)
    assert d["env"]["filesystem"]["fstype"] == "tmpfs" and "findings" in d
    one_error_line(cli("env", "--path", "/no/such"), 2, "--path")


def test_suite_prints_and_reports_the_notes_of_its_scenarios(
    cli, store: Path, tmp_path: Path
) -> None:
    """Spinning peers on one CPU and cache=fadvise get their notes; a pipe gets none."""
    text = f"""
name = "noted"
warmup = 1

[[scenario]]
name = "spin-1cpu"
benchmark = "spin"
params = {{ cpus = "0,0" }}
n = 3

[[scenario]]
name = "fad"
benchmark = "file"
params = {{ cache = "fadvise", dir = "{tmp_path}" }}
n = 20

[[scenario]]
name = "pipe-1cpu"
benchmark = "pipe"
params = {{ cpus = "0,0" }}
n = 50
"""
    f = write(tmp_path, text)
    r = cli("suite", str(f), "--seed", "1", "--md", str(tmp_path / "md"), "--no-figures")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "note (spin-one-cpu) — spin-1cpu:" in out and "note (file-fadvise) — fad:" in out
    assert "pipe-1cpu:" not in out
    md = (tmp_path / "md" / "report.md").read_text()
    assert "spin-1cpu: Both parties busy-wait on one CPU" in md
    assert "fad: cache=fadvise" in md and "pipe-1cpu: " not in md


# ------------------------------------------------------------------------------- comparison


def _synthetic_suite(store: Path, medians: dict[str, list[float]], seed: int = 0):
    """A finished SuiteRun of synthetic runs: per scenario, one run per given repetition
    median (each run 4 worker processes of 500 samples around it)."""
    from latscope.scenarios import Scenario, Step, Suite
    from latscope.suite import StepResult, SuiteRun
    from synth import make_run

    rng = np.random.default_rng(seed)
    scs = [Scenario(name, "synthetic", {}, repeat=len(m)) for name, m in medians.items()]
    suite = Suite("synthetic", Path("synthetic.toml"), None, scs)
    sr = SuiteRun(suite, "test", 0, [], Store(store))
    i = 0
    for sc in scs:
        for rep, med in enumerate(medians[sc.name], 1):
            x = med * np.exp(0.01 * rng.standard_normal() + 0.3 * rng.standard_normal(2000))
            run = make_run(store, {"call": x}, segments=[500] * 4)
            sr.results.append(StepResult(Step(i, sc, rep), "ok", run=run))
            i += 1
    return sr


def test_suite_ratio_interval_comes_from_the_repetitions(store: Path) -> None:
    """Two identical scenarios whose repetitions vary by ~5% run to run: the pooled samples'
    interval excludes 1, the interval from the repetitions does not, and a 25% shift is
    still called."""
    from latscope.suite import compare_rows

    spread = [0.95, 1.0, 1.05, 0.97, 1.03]  # run-to-run variation, CV 4%
    a = [1000.0 * f for f in spread]
    b = [1040.0 * f for f in spread[::-1]]  # a 4% difference between identical scenarios
    c = [1250.0 * f for f in spread[1:] + spread[:1]]
    sr = _synthetic_suite(store, {"a": a, "b": b, "c": c})
    rows = {r.scenario: r for r in compare_rows(sr)}
    cmp_b = rows["b"].comparison
    assert cmp_b is not None and cmp_b.levels is not None
    assert cmp_b.levels.segments_a == cmp_b.levels.segments_b == 5  # repetitions, not workers
    lo, hi = cmp_b.levels.within
    assert not (lo <= 1.0 <= hi)  # pooled samples alone would call a difference
    assert cmp_b.median_ratio.low <= 1.0 <= cmp_b.median_ratio.high
    assert cmp_b.verdict not in ("faster", "slower")
    cmp_c = rows["c"].comparison
    assert cmp_c is not None and cmp_c.verdict == "slower"
    assert rows["b"].to_dict()["comparison"]["noise_threshold"] == 0.02


def test_workers_auto_keeps_the_time_budget(probe: str, tmp_path: Path) -> None:
    """The probe's --workers auto (what the lab passes): up to 10 workers with at least 200
    iterations each; the single-process warm-up (n/10, 10..1000) shared between them."""
    import json

    from conftest import run_probe

    def header(*args: str) -> dict:
        out = tmp_path / f"w{len(list(tmp_path.iterdir()))}.lss"
        r = run_probe(probe, "syscall", *args, "--workers", "auto", "-o", str(out))
        assert r.returncode == 0, r.stderr
        return json.loads(out.read_bytes().split(b"\n", 2)[1])

    h = header()  # the default n, 100000
    assert [w["n"] for w in h["workers"]] == [10_000] * 10 and h["warmup"] == 100
    h = header("-n", "1000")
    assert [w["n"] for w in h["workers"]] == [200] * 5 and h["warmup"] == 20
    h = header("-n", "150")
    assert len(h["workers"]) == 1 and h["warmup"] == 15
