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
from typing import Any

import numpy as np
import pytest

from conftest import procs_mentioning
from latscope import scenarios
from latscope.store import Store
from synth import make_suite_run

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


SYS = '[[scenario]]\nname = "a"\nbenchmark = "syscall"\n'
#: Every limit the probe enforces (its --check, with the scenario's n, warmup and clock), the
#: size of a plan (before a matrix is expanded), and a wrong type anywhere.
BAD += [
    (SYS + "n = 999999999999\n", ["scenario 'a'", "n:", "-n 999999999999", "between 1 and"]),
    (SYS + "warmup = 99999999999\n", ["scenario 'a'", "warmup:", "between 0 and"]),
    (SYS + "params = { cpu = 1023 }\n", ["scenario 'a'", "CPU 1023 does not exist"]),
    (SYS + "params = { batch = 0 }\n", ["scenario 'a'", "params.batch"]),
    (SYS + "[scenario.matrix]\nbatches = [1, 1000000000]\n", ["matrix.batches"]),
    ("repeat = 1000000000\n" + SYS, ["top level", "repeat = 1000000000", "at most 10,000"]),
    (SYS + "repeat = 10001\n", ["scenario 'a'", "at most 10,000"]),
    (
        SYS + "[scenario.matrix]\nop = ['getppid', 'read0']\n"
        "batch = [" + ", ".join(str(i) for i in range(1, 41)) + "]\n"
        "batches = [" + ", ".join(str(i) for i in range(1, 21)) + "]\n",
        ["scenario 'a'", "more than 1,000 scenarios"],
    ),
    (
        "repeat = 20\n" + SYS + "[scenario.matrix]\nop = ['getppid', 'read0']\n"
        "batch = [" + ", ".join(str(i) for i in range(1, 301)) + "]\n",
        ["scenario 'a'", "more than 10,000 runs"],
    ),
    ('clock = ["tsc"]\n' + SYS, ["top level", "clock = ['tsc']"]),
    (SYS + "clock = { name = 'tsc' }\n", ["scenario 'a'", "clock"]),
    ("name = { x = 1 }\n" + SYS, ["top level", "name must be"]),
    ("description = [1]\n" + SYS, ["top level", "description must be"]),
    ("interleave = ['rounds']\n" + SYS, ["top level", "interleave"]),
    ('seed = "7"\n' + SYS, ["top level", "seed"]),
    ('n = "big"\n' + SYS, ["top level", "n = 'big'"]),
    (SYS + "n = 1.5\n", ["scenario 'a'", "n = 1.5"]),
    (SYS + "repeat = true\n", ["scenario 'a'", "repeat = True"]),
    (SYS + "warmup = -1\n", ["scenario 'a'", "warmup = -1"]),
    ('[[scenario]]\nbenchmark = { name = "syscall" }\n', ["scenario #1", "benchmark ="]),
    ('[[scenario]]\nname = ["a"]\nbenchmark = "syscall"\n', ["name must be"]),
    (SYS + 'params = ["op", "read0"]\n', ["params must be a table"]),
    (SYS + 'matrix = "op"\n', ["matrix must be a table"]),
    (SYS + "[scenario.matrix]\nop = 5\n", ["matrix.op", "give a list"]),
    (SYS + "params = { op = { x = 1 } }\n", ["params.op", "not a string, number or boolean"]),
    (SYS + "[scenario.matrix]\nop = [[1]]\n", ["matrix.op", "not a string, number or boolean"]),
    (SYS + 'columns = "call"\n', ["columns must be a list"]),
    (SYS + "note = { a = 1 }\n", ["note must be a string"]),
    (SYS + 'optional = "yes"\n', ["optional must be true or false"]),
    ("scenario = 5\n", ["write scenarios as [[scenario]] tables"]),
    ("a = " + "[" * 5000 + "]" * 5000 + "\n" + SYS, ["not valid TOML", "nested too deep"]),
    ("a = " + "{ b = " * 3000 + "1" + " }" * 3000 + "\n" + SYS, ["not valid TOML"]),
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


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _huge(p: Path) -> None:
    with open(p, "wb") as f:
        f.truncate(scenarios.FILE_LIMIT + 1)


@pytest.mark.parametrize(
    "make,words",
    [
        (_fifo, ["not a regular file"]),
        (_huge, ["larger than a scenario file"]),
        (lambda p: p.write_bytes(b'[[scenario]]\nbenchmark = "\xff"\n'), ["not UTF-8"]),
        (lambda p: p.mkdir(), ["is a directory"]),
    ],
    ids=["fifo", "huge", "not-utf8", "directory"],
)
def test_a_suite_file_that_is_no_file_is_refused(
    cli, store: Path, tmp_path: Path, make, words: list[str]
) -> None:
    f = tmp_path / "s.toml"
    make(f)
    one_error_line(cli("suite", str(f), "--dry-run"), 2, *words)
    assert not store.exists()


def test_repeat_on_the_command_line_is_limited(cli, store: Path, tmp_path: Path) -> None:
    f = write(tmp_path, SYS)
    one_error_line(cli("suite", str(f), "--repeat", "1000000000", "--dry-run"), 2, "at most")


def test_names_in_a_suite_are_shown_as_text(cli, store: Path, tmp_path: Path) -> None:
    f = write(
        tmp_path,
        'name = "s[/x]"\ndescription = "[bold]d\\u001b[31m"\n[[scenario]]\n'
        'name = "a[/x]\\r"\nbenchmark = "syscall"\nnote = "[red]n\\u001b]0;t\\u0007"\n',
    )
    r = cli("suite", str(f), "--dry-run")
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    for text in ("suite s[/x]", "[bold]d\\x1b[31m", "a[/x]\\r", "[red]n\\x1b]0;t\\x07"):
        assert text in out, (text, out)


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
    tex = tmp_path / "tex"
    r = cli(
        "suite",
        str(f),
        "--seed",
        "9",
        "--html",
        str(html),
        "--md",
        str(tmp_path / "md"),
        "--latex",
        str(tex),
        "--paired-time",
        "0.2",  # the least it takes: the paired run and its verdicts are there at any length
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for w in ("median of", "ratio to baseline", "verdict", "sys-read0", "baselines", "report:"):
        assert w in out, w
    assert "[paired 1/1] syscall: sys-getppid, sys-read0" in out
    assert html.is_file() and html.read_text().startswith("<!DOCTYPE html")
    assert "<img" in html.read_text()  # the one suite report drawn with its figures
    # each scenario's full analysis: a page beside the report, linked from it
    pages = sorted(p.name for p in (tmp_path / "r-runs").iterdir())
    assert len(pages) == 3 and all(f'href="r-runs/{p}"' in html.read_text() for p in pages)
    assert (tmp_path / "md" / "report.md").is_file()
    fragment = [p for p in tex.glob("*.tex") if p.name != "example.tex"]
    assert len(fragment) == 1 and "Scenarios compared" in fragment[0].read_text()
    assert (tex / "example.tex").is_file() and list(tex.glob("suite-*.pdf"))
    assert "report (LaTeX)" in out
    every = Store(store).list_meta()
    assert len(every) == 7  # 3 scenarios x 2 repetitions, and the syscall scenarios paired
    paired = [m for m in every if m["tags"].get("paired")]
    runs = [m for m in every if not m["tags"].get("paired")]
    assert len(paired) == 1 and paired[0]["tags"]["scenario"] == "paired:sys-getppid,sys-read0"
    assert paired[0]["ab"]["arms"][1]["params"]["op"] == "read0"
    tags = [m["tags"] for m in every]
    assert {t["suite"] for t in tags} == {"small"}
    assert len({t["suite_run"] for t in tags}) == 1
    assert Counter(t["scenario"] for t in tags) == {
        "sys-getppid": 2,
        "sys-read0": 2,
        "pipe": 2,
        "paired:sys-getppid,sys-read0": 1,
    }
    tags = [m["tags"] for m in runs]
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
    assert [p["run_id"] for p in rec["paired_runs"]] == [paired[0]["id"]]
    read0 = [c for c in rec["comparison"] if c["scenario"] == "sys-read0"]
    assert read0 and all(c["paired"]["run_id"] == paired[0]["id"] for c in read0)
    assert all(c["comparison"] is not None for c in read0)  # the unpaired one stays
    assert not any(c["paired"] for c in rec["comparison"] if c["scenario"] == "pipe")
    ls = cli("ls", "--suite", tags[0]["suite_run"])
    assert ls.returncode == 0 and ls.stdout.count("small/") == 7
    again = cli("show", paired[0]["id"])
    assert again.returncode == 0 and "read0" in again.stdout


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
    assert "n=2,000 in 3 workers" in r.stdout
    r = cli("show", "last", "--full")
    for w in ("between runs: 3 worker processes", "worker medians", "over the 3 worker medians"):
        assert w in r.stdout, w
    # one interval of the median: the run's table gives it, the worker table does not again
    assert "95% CI over workers" not in r.stdout
    metas = Store(store).list_meta()
    assert len(metas) == 1  # one run, three processes
    from latscope.measure.runner import load

    run = load(metas[0]["id"], store)
    assert run.segments == [667, 667, 666]
    assert len({w["pid"] for w in run.meta["workers"]}) == 3


def test_run_repeat_one_is_labelled_a_single_process(cli) -> None:
    r = cli("run", "syscall", "-n", "500", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    assert "n=500 in one process" in r.stdout
    assert "one process: its interval holds no between-run variation" in r.stdout
    full = cli("show", "last", "--full").stdout
    assert "single process: the interval does not include between-run variation" in full


def test_between_workers_of_a_synthetic_run(store: Path) -> None:
    """The facts hold each worker's median, and the finding that they differ by more than
    their own intervals allow."""
    from synth import make_run

    rng = np.random.default_rng(5)
    meds = [1000.0, 1100.0, 1210.0, 1050.0]
    x = np.concatenate([m * np.exp(0.05 * rng.standard_normal(500)) for m in meds])
    run = make_run(store, {"call": x}, segments=[500] * 4)
    w = run.facts["workers"]
    assert w["count"] == 4
    (c,) = w["columns"]
    assert [round(m, -1) for m in c["medians_ns"]] == [1000.0, 1100.0, 1210.0, 1050.0]
    # 0.5% within-process intervals cannot explain a 20% spread
    assert c["disagree"] is True
    keys = [f["key"] for f in run.facts["findings"]]
    assert "workers-disagree" in keys and "single-process" not in keys


def test_run_repeat_rejects_zero(cli) -> None:
    one_error_line(cli("run", "syscall", "--repeat", "0"), 2, "--repeat 0")


def test_between_statistics_on_known_values() -> None:
    from latscope.stats.between import Rep, between

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
    assert "fad: cache=fadvise" in md
    # no note for pipe-1cpu (its full analysis is folded under its name)
    assert not [ln for ln in md.splitlines() if ln.startswith("> ") and "pipe-1cpu:" in ln]


# ------------------------------------------------------------------------------- comparison


@pytest.fixture(scope="module")
def five_repetitions(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A suite run of three scenarios of five repetitions each whose medians vary by ~5% run
    to run: b 4% slower than a, c 25% (its repetitions in another order than a's). Made once
    for the two tests that compare it (each made it for itself: fifteen runs summarised as
    they were kept, most of their time)."""
    spread = [0.95, 1.0, 1.05, 0.97, 1.03]  # run-to-run variation, CV 4%
    a = [1000.0 * f for f in spread]
    b = [1040.0 * f for f in spread[::-1]]  # a 4% difference between identical scenarios
    c = [1250.0 * f for f in spread[1:] + spread[:1]]
    return make_suite_run(tmp_path_factory.mktemp("five") / "store", {"a": a, "b": b, "c": c})


def test_suite_ratio_interval_comes_from_the_repetitions(five_repetitions) -> None:
    """Two identical scenarios whose repetitions vary by ~5% run to run: the pooled samples'
    interval excludes 1, the interval from the repetitions does not, and a 25% shift is
    still called."""
    from latscope.suite import compare_rows

    rows = {r.scenario: r for r in compare_rows(five_repetitions)}
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


def test_two_levels_of_worker_medians_are_named_and_noise_is_not() -> None:
    """Worker medians at two tight levels (a machine switching between states) are told
    apart from one log-normal spread of medians."""
    from latscope.stats.between import Rep, between, two_levels

    meds = [7.333, 7.399, 6.241, 6.262, 6.289, 6.264, 6.256, 6.261, 6.255, 6.275]
    reps = [Rep(str(i), m, m * 0.999, m * 1.001) for i, m in enumerate(meds)]
    lv = two_levels(reps)
    assert lv is not None and lv.high == (0, 1) and len(lv.low) == 8
    assert 0.17 < lv.step_rel < 0.18
    assert between("rtt", reps).levels == lv
    # one level: medians spread log-normally (CV 3%) around one value, 10 workers
    rng = np.random.default_rng(5)
    calls = 0
    for _ in range(500):
        m = 6.3 * np.exp(0.03 * rng.standard_normal(10))
        calls += (
            two_levels([Rep(str(i), x, x * 0.999, x * 1.001) for i, x in enumerate(m)]) is not None
        )
    assert calls <= 5  # at most 1% (0.2% expected)
    # too few workers to tell
    assert two_levels(reps[:7]) is None
    # wide within-run intervals: the gap is within what each run allows
    wide = [Rep(str(i), m, m * 0.85, m * 1.15) for i, m in enumerate(meds)]
    assert two_levels(wide) is None


# ------------------------------------------------------------------------------- paired


def _paired_facts(verdicts: dict[str, tuple[float, float, float, str]]) -> dict:
    """run.json ``ab`` facts with one comparison per arm (letter -> ratio, low, high, verdict)."""
    return {
        "comparisons": [
            {"arm": k, "column": "call", "ratio": r, "low": lo, "high": hi, "verdict": v}
            for k, (r, lo, hi, v) in verdicts.items()
        ]
    }


def test_paired_groups_put_the_baseline_first_and_chunk_by_arms(store: Path) -> None:
    """One paired run per benchmark (and clock) with two or more scenarios that ran, the
    baseline as arm A of each; more scenarios than arms are split; a lone scenario, or one
    without runs, is in none."""
    from dataclasses import replace

    from latscope.measure.ab import MAX_ARMS
    from latscope.suite.paired import groups

    names = [f"s{i}" for i in range(MAX_ARMS + 3)]
    sr = make_suite_run(store, {n: [1000.0] for n in [*names, "lone", "fine"]})
    scs = sr.suite.scenarios
    scs[-2] = replace(scs[-2], benchmark="other")  # alone in its benchmark
    scs[-1] = replace(scs[-1], clock="gettime")  # another clock: its own group (alone)
    sr.results = [x for x in sr.results if x.step.scenario.name != "s3"]  # s3 never ran
    got = groups(sr)
    ran = [n for n in names if n != "s3"]
    assert [b for b, _ in got] == ["synthetic", "synthetic"]
    assert got[0][1] == ran[:MAX_ARMS]
    assert got[1][1] == [ran[0], *ran[MAX_ARMS:]]
    assert all(len(g) <= MAX_ARMS for _, g in got)


def test_a_suites_verdicts_come_from_its_paired_run(five_repetitions) -> None:
    """The repetitions alone cannot resolve 4% between runs 5% apart; the paired run of the
    same scenarios can: its ratio, interval and verdict are the ones printed, the unpaired
    comparison stays in the record, and a scenario without a paired run is marked."""
    from dataclasses import replace
    from types import SimpleNamespace

    from latscope.suite import compare_rows
    from latscope.suite.comparison import UNPAIRED_MARK, row_text, verdict_legend
    from latscope.suite.paired import PairedRun
    from latscope.suite.records import record

    fake = SimpleNamespace(
        id="20261128-000000-synthetic-ab",
        meta={"run": {"ab": _paired_facts({"B": (1.041, 1.032, 1.050, "slower")})}},
    )
    paired = [PairedRun(["a", "b"], "synthetic", run=fake)]  # type: ignore[arg-type]
    sr = replace(five_repetitions, paired=paired)  # the module's suite run stays unpaired
    rows = {r.scenario: r for r in compare_rows(sr)}
    assert rows["b"].comparison is not None and rows["b"].comparison.verdict != "slower"
    assert rows["b"].paired is not None and rows["b"].paired["run_id"] == fake.id
    assert rows["c"].paired is None and rows["a"].paired is None
    base = {"a"}
    tb, tc = row_text(rows["b"], base, True), row_text(rows["c"], base, True)
    assert tb.verdict == "slower" and tb.ratio.startswith("1.04") and "1.03" in tb.ratio
    assert tc.verdict == "slower" + UNPAIRED_MARK
    legend = verdict_legend(list(rows.values()))
    assert fake.id in legend and UNPAIRED_MARK.strip() in legend
    d = rows["b"].to_dict()
    assert d["paired"]["verdict"] == "slower" and d["comparison"]["verdict"] != "slower"
    rec = record(sr, list(rows.values()))
    assert rec["paired_runs"] == [
        {"benchmark": "synthetic", "scenarios": ["a", "b"], "run_id": fake.id, "why": None}
    ]
    json.dumps(rec)


def test_a_paired_run_against_another_baseline_is_not_used(store: Path) -> None:
    """A paired comparison counts only against the row's own baseline."""
    from types import SimpleNamespace

    from latscope.suite import compare_rows
    from latscope.suite.paired import PairedRun

    sr = make_suite_run(store, {"a": [1000.0], "b": [1000.0], "c": [1100.0]})
    fake = SimpleNamespace(
        id="x", meta={"run": {"ab": _paired_facts({"B": (1.1, 1.09, 1.11, "slower")})}}
    )
    sr.paired = [PairedRun(["b", "c"], "synthetic", run=fake)]  # type: ignore[arg-type]
    rows = {r.scenario: r for r in compare_rows(sr)}
    assert rows["c"].baseline == "a" and rows["c"].paired is None


def test_suite_json_puts_its_record_alone_on_stdout(cli, tmp_path: Path) -> None:
    """--json: the suite's record (as kept in STORE/suites) is all standard output holds;
    what the suite says as it goes is on standard error."""
    text = """
name = "j"
[[scenario]]
name = "a"
benchmark = "syscall"
n = 200
[[scenario]]
name = "b"
benchmark = "syscall"
n = 200
params = { op = "read0" }
"""
    f = write(tmp_path, text)
    r = cli("suite", str(f), "--seed", "2", "--paired-time", "0", "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["format"] == "latscope-suite-run" and rec["suite"] == "j" and rec["seed"] == 2
    assert [sc["name"] for sc in rec["scenarios"]] == ["a", "b"]
    assert f"runs kept (suite run {rec['suite_run']})" in " ".join(r.stderr.split())
