"""The store: concurrent writers, killed runs, damaged and foreign entries (reported, never
fatal), summary.parquet queried with DuckDB, `ls`, `rm`, `history`."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import procs_mentioning
from latscope.store import SUMMARY_FILE, Store
from synth import lognormal, make_run

# the runs are short (400 and 200 round trips, 1,500 and 800 before): what is asserted of two
# suites writing one store at once (every run kept, whole, listed) does not grow with them
SUITE = """
name = "{name}"
repeat = 2
n = 400
warmup = 50

[[scenario]]
name = "sys"
benchmark = "syscall"
[scenario.matrix]
op = ["getppid", "read0"]

[[scenario]]
name = "pipe"
benchmark = "pipe"
n = 200
"""


def test_two_suites_into_one_store_at_once(cli, store: Path, tmp_path: Path) -> None:
    files = []
    for name in ("alpha", "beta"):
        f = tmp_path / f"{name}.toml"
        f.write_text(SUITE.format(name=name))
        files.append(f)
    # two processes of their own: two writers of one store at the same time
    procs = [
        cli.popen(
            "suite",
            str(f),
            "--quiet",
            "--html",
            str(tmp_path / f"{f.stem}.html"),
            "--no-figures",
            "--paired-time",
            "0.2",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for f in files
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, out + err
    scan = Store(store).scan()
    assert not scan.skipped and not scan.partials
    # 2 suites x (3 scenarios x 2 repetitions + the syscall scenarios' paired run)
    assert len(scan.runs) == 14
    by_suite = {"alpha": 0, "beta": 0}
    for r in scan.runs:
        by_suite[r.meta["tags"]["suite"]] += 1
        assert (r.dir / SUMMARY_FILE).is_file()
    assert by_suite == {"alpha": 7, "beta": 7}
    ls = cli("ls", "--json")
    assert ls.returncode == 0, ls.stderr
    listed = json.loads(ls.stdout)
    assert {r["id"] for r in listed["runs"]} == {r.id for r in scan.runs}
    assert listed["partial"] == [] and listed["skipped"] == []


def test_suite_killed_halfway(cli, store: Path, tmp_path: Path) -> None:
    f = tmp_path / "long.toml"
    f.write_text(
        'repeat = 2\n[[scenario]]\nname = "s"\nbenchmark = "syscall"\nn = 2000\n'
        '[[scenario]]\nname = "p"\nbenchmark = "pipe"\nn = 50000000\n'
    )
    # a process of its own, killed with its process group (the probe and its peer)
    p = cli.popen(
        "suite",
        str(f),
        "--seed",
        "4",
        "--quiet",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    victims: list[int] = []
    while time.time() < deadline:
        victims = [
            x
            for x in procs_mentioning(f"{store}/runs/.partial-")
            if b"pipe" in Path(f"/proc/{x}/cmdline").read_bytes()
        ]
        if len(victims) >= 2:  # the probe and its forked peer
            break
        time.sleep(0.05)
    assert len(victims) >= 2, "the pipe probe and its peer did not start"
    time.sleep(0.3)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    # nothing of the probe or its peer survives (the peer follows by PR_SET_PDEATHSIG)
    deadline = time.time() + 10
    while time.time() < deadline and procs_mentioning(str(store)):
        time.sleep(0.1)
    assert not procs_mentioning(str(store))
    ls = cli("ls")
    assert ls.returncode == 0, ls.stderr
    assert "partial (killed)" in ls.stdout and "Traceback" not in ls.stderr
    scan = Store(store).scan()
    assert [x.state for x in scan.partials] == ["killed"]
    assert all(r.meta["benchmark"] == "syscall" for r in scan.runs)
    js = cli("ls", "--json")
    assert json.loads(js.stdout)["partial"][0]["status"] == "partial (killed)"
    rm = cli("rm", "--partial")
    assert rm.returncode == 0, rm.stderr
    assert "removed .partial-" in rm.stdout
    assert not [d for d in (store / "runs").iterdir() if d.name.startswith(".")]
    assert len(Store(store).scan().runs) == len(scan.runs)


def test_rm_partial_keeps_a_run_still_being_measured(store: Path) -> None:
    st = Store(store)
    run_id, partial = st.begin("syscall")  # owned by this (live) process
    assert st.scan().partials[0].state == "running"
    removed, kept = st.remove_partials()
    assert not removed and kept[0].path == partial and partial.is_dir()
    st.abandon(partial)


_made = itertools.count()


def _runs(store: Path, k: int, **params: str) -> list[str]:
    """k synthetic syscall runs of 500 samples, made one after the other (one second apart);
    their parameters as the probe resolves them (op=getppid unless given)."""
    out = []
    for _ in range(k):
        i = next(_made)
        out.append(
            make_run(
                store,
                {"call": lognormal(500, 100.0, seed=i)},
                bench="syscall",
                params={"op": "getppid", **params},
                created_utc=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
            ).id
        )
    return out


def test_damaged_and_foreign_entries_are_reported_and_skipped(cli, store: Path) -> None:
    good = _runs(store, 2)
    bad_json, truncated, bad_summary = _runs(store, 3)
    runs = store / "runs"
    (runs / bad_json / "run.json").write_text('{"id": "x", "created')
    s = runs / truncated / "samples.lss"
    s.write_bytes(s.read_bytes()[: s.stat().st_size // 2])
    (runs / bad_summary / SUMMARY_FILE).write_bytes(b"not parquet at all")
    (runs / "notes.txt").write_text("my notes")
    (runs / "junk").mkdir()
    r = cli("ls")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    for rid in good + [bad_summary]:  # a damaged summary is rebuilt from the samples
        assert rid in r.stdout
    for what in (bad_json, truncated, "notes.txt", "junk"):
        assert what not in r.stdout
        lines = [ln for ln in r.stderr.splitlines() if what in ln]
        assert len(lines) == 1 and "skipped" in lines[0], r.stderr
    assert "truncated" in r.stderr and "not a latscope run" in r.stderr
    h = cli("history", "syscall")
    assert h.returncode == 0, h.stderr
    for rid in good + [bad_summary]:
        assert rid in h.stdout
    assert truncated not in h.stdout and bad_json not in h.stdout
    assert truncated in h.stderr and "notes.txt" in h.stderr
    pl.read_parquet(runs / bad_summary / SUMMARY_FILE)  # rebuilt


def test_summary_parquet_and_duckdb(store: Path) -> None:
    (rid,) = _runs(store, 1, op="read0")
    df = pl.read_parquet(store / "runs" / rid / SUMMARY_FILE)
    row = df.row(0, named=True)
    assert row["run_id"] == rid and row["benchmark"] == "syscall" and row["column"] == "call"
    assert row["n"] == 500 and row["p50_ci_low_ns"] <= row["p50_ns"] <= row["p50_ci_high_ns"]
    assert json.loads(row["params"])["op"] == "read0" and row["ci_method"]
    import duckdb

    con = duckdb.connect()  # any tool reads the store's summaries straight from the files
    n = con.execute(f"SELECT count(*) FROM '{store}/runs/*/{SUMMARY_FILE}'").fetchall()
    assert n == [(1,)]


def test_history_in_time_order_with_plot(cli, store: Path, tmp_path: Path) -> None:
    ids = _runs(store, 2, op="getppid") + _runs(store, 1, op="read0") + _runs(store, 1)
    r = cli("history", "syscall")
    assert r.returncode == 0, r.stderr
    pos = [r.stdout.index(i) for i in ids]
    assert pos == sorted(pos)  # rows in time order
    assert "95% CI" in r.stdout and "p50" in r.stdout
    png = tmp_path / "h.png"
    f = cli("history", "syscall", "-p", "op=getppid", "--stat", "p99", "--plot", str(png))
    assert f.returncode == 0, f.stderr
    assert ids[2] not in f.stdout and ids[0] in f.stdout and ids[3] in f.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    j = cli("history", "syscall", "--json")
    rows = json.loads(j.stdout)["rows"]
    assert [x["run_id"] for x in rows] == ids
    assert cli("history", "syscall", "--column", "nope").returncode == 2
    assert cli("history", "pipe").returncode == 2
    assert cli("history", "syscall", "--stat", "p42").returncode == 2


def test_history_tags_injected_runs_and_leaves_them_out_of_vs_prev(cli, store: Path) -> None:
    """A run whose figures hold an injected delay is tagged and never a change from or to a
    real run; a run with arms (latscope ab) is no point of a history."""
    made = []
    for k, (med, tags) in enumerate(
        [(100.0, {}), (150.0, {"inject_ns": 50.0}), (110.0, {}), (100.0, {"ab": True})]
    ):
        made.append(
            make_run(
                store,
                {"call": np.full(500, med)},
                bench="syscall",
                params={"op": "getppid"},
                created_utc=f"2026-02-01T00:00:0{k}Z",
                tags=tags,
            ).id
        )
    r = cli("history", "syscall", "--wide")
    assert r.returncode == 0, r.stderr
    lines = {i: next(ln for ln in r.stdout.splitlines() if i in ln) for i in made[:3]}
    assert "injected +50 ns" in lines[made[1]] and "%" not in lines[made[1]].split("ns")[-1]
    assert "+10.0%" in lines[made[2]]  # against the first run, not the injected one
    assert made[3] not in r.stdout
    assert "left out of it" in " ".join(r.stdout.split())
    ls = cli("ls", "--wide")
    assert "injected +50 ns" in ls.stdout


def test_rm(cli, store: Path) -> None:
    a, b = _runs(store, 2)
    r = cli("rm", a)
    assert r.returncode == 0 and f"removed {a}" in r.stdout
    assert [m["id"] for m in Store(store).list_meta()] == [b]
    assert cli("rm", a).returncode == 2  # gone
    assert cli("rm").returncode == 2  # nothing named


@pytest.mark.parametrize("leftover", [".removing-20250101-000000-syscall-abcd-1234"])
def test_rm_partial_cleans_interrupted_removals(cli, store: Path, leftover: str) -> None:
    (store / "runs" / leftover).mkdir(parents=True)
    r = cli("rm", "--partial")
    assert r.returncode == 0 and leftover in r.stdout
    assert not (store / "runs" / leftover).exists()


@pytest.mark.parametrize(
    ("tags", "shown"),
    [
        ({"quick": True, "scenario": "pipe-same-cpu"}, "quick/pipe-same-cpu"),
        ({"suite": "seeds", "scenario": "cold", "repetition": 2}, "seeds/cold #2"),
    ],
)
def test_ls_names_the_plan_a_run_came_from(cli, store: Path, tags: dict, shown: str) -> None:
    run = make_run(store, {"call": lognormal(200, 1000.0, seed=5)})
    assert run.dir is not None
    f = run.dir / "run.json"
    meta = json.loads(f.read_text())
    meta["tags"] = tags
    f.write_text(json.dumps(meta))
    ls = cli("ls")
    assert ls.returncode == 0, ls.stderr
    assert shown in ls.stdout and "None" not in ls.stdout


@pytest.mark.parametrize("ref", ["", " "])
@pytest.mark.parametrize("cmd", [["rm"], ["show"], ["export", "--csv", "out.csv"]])
def test_an_empty_run_reference_is_refused(
    cli, store: Path, tmp_path: Path, cmd: list[str], ref: str
) -> None:
    """An unset shell variable (`latscope rm "$RUN"`) must not match, and remove, every run."""
    run = make_run(store, {"call": lognormal(200, 1000.0, seed=6)})
    args = [cmd[0], ref, *cmd[1:]]
    if cmd[0] == "export":
        args[-1] = str(tmp_path / "out.csv")
    r = cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "empty run reference" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert run.dir is not None and run.dir.is_dir()
    assert not (tmp_path / "out.csv").exists()


#: Text that must reach the terminal as text: markup, an escape sequence, a carriage return, a
#: newline, and a byte that is not UTF-8 (as Python reads it from a file name).
HOSTILE = "/tmp/q[/x] [bold]b \x1b[31mred\rcr\nnl \udcff"


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\r" not in text, repr(text)
    text.encode("utf-8")  # no lone surrogate: what is printed is valid UTF-8


def test_user_text_is_shown_as_text(cli, store: Path) -> None:
    """Parameters, labels, tags and paths are never markup and never raw control characters:
    ls, show, history, compare and the errors that echo input show them escaped."""
    ids = []
    for i, d in enumerate((HOSTILE, HOSTILE + "2")):
        run = make_run(
            store,
            {"call": lognormal(300, 100.0, seed=40 + i)},
            bench="syscall",
            # a sample file holds UTF-8 only (the probe writes a byte that is not as U+FFFD);
            # the parameters as given (run.json) keep the byte, as Python's argv has it
            params={"op": "getppid", "dir": d.replace("\udcff", "\ufffd")},
            created_utc=f"2026-01-02T00:00:0{i}Z",
        )
        assert run.dir is not None
        meta = json.loads((run.dir / "run.json").read_text())
        meta["params_given"] = {"dir": d}
        meta["tags"] = {"scenario": "[red]s\x1b]0;title\x07", "suite": "[/suite]"}
        (run.dir / "run.json").write_text(json.dumps(meta))
        ids.append(run.id)
    for args in (
        ["ls"],
        ["show", ids[0]],
        ["show", ids[0], "--full"],
        ["history", "syscall"],
        ["compare", ids[0], ids[1]],
    ):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
        _no_raw_controls(r.stdout + r.stderr)
        assert "[/x]" in r.stdout and "\\x1b[31mred" in r.stdout, (args, r.stdout)
        if args[0] != "history":  # history labels series by the parameters that differ
            assert "\\rcr\\nnl" in r.stdout, (args, r.stdout)
    # machine-readable: valid UTF-8 JSON whatever the names and parameters hold
    for args in (["ls", "--json"], ["history", "syscall", "--json"]):
        j = cli(*args)
        assert j.returncode == 0, j.stderr
        j.stdout.encode("ascii")
        got = json.loads(j.stdout)
        params = got["runs"][0]["params"] if args[0] == "ls" else got["rows"][0]["params"]
        # the value itself, escaped only as JSON escapes it
        assert params["dir"] == HOSTILE.replace("\udcff", "\ufffd")
    # errors that echo input
    for args in (["show", "\x1b[31mnope\r"], ["rm", "[/x]\x1b"], ["ls", "--bench", "x", "\x1b"]):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        _no_raw_controls(r.stdout + r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "\\x1b" in r.stderr, r.stderr


def test_ls_json_is_valid_utf8_from_a_store_with_undecodable_names(tmp_path: Path) -> None:
    """A store whose path and entries hold bytes that are not UTF-8 (Python reads them as lone
    surrogates): `ls --json` in its own process, in the C locale, prints ASCII JSON."""
    import subprocess
    import sys

    root = os.fsencode(tmp_path) + b"/st\xff"
    make_run(os.fsdecode(root), {"call": lognormal(200, 100.0, seed=50)}, bench="syscall")
    os.mkdir(root + b"/runs/foreign-\xfe")
    env = {
        **os.environ,
        "LC_ALL": "C",
        "PYTHONIOENCODING": "",
        "LATSCOPE_STORE": "",
        "COLUMNS": "200",  # the path whole on one line
    }
    out = subprocess.run(
        [sys.executable, "-m", "latscope.cli", "ls", "--json", "--store", root],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    out.stdout.decode("ascii")
    got = json.loads(out.stdout)
    assert os.fsencode(got["store"]) == root and len(got["runs"]) == 1
    assert [os.fsencode(s["path"]) for s in got["skipped"]] == [root + b"/runs/foreign-\xfe"]
    table = subprocess.run(
        [sys.executable, "-m", "latscope.cli", "ls", "--store", root],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert table.returncode == 0, table.stderr
    (table.stdout + table.stderr).decode("utf-8")
    assert b"\\xff" in table.stdout and b"foreign-\\xfe" in table.stderr


def test_rm_partial_keeps_a_killed_runs_record_while_its_maker_still_runs(store: Path) -> None:
    """A run whose latscope is gone but whose probe still exits (or runs): its record is not
    thrown away with the run directory, or the object it names would be left for good."""
    import subprocess

    from latscope import leftovers

    maker = subprocess.Popen(["sleep", "60"])
    try:
        pid = os.fork()
        if pid == 0:  # the run's owner, gone at once
            try:
                _, partial = Store(store).begin("syscall")
                start = leftovers.proc_start_ticks(maker.pid)
                line = f"sysv_msg {maker.pid}.1 {maker.pid} {start} 1 0 0\n"
                (partial / "samples.lss.leftovers.x").write_text(leftovers.HEAD + "\n" + line)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        st = Store(store)
        assert [p.state for p in st.scan().partials] == ["killed"]
        removed, kept = st.remove_partials()
        assert not removed and len(kept) == 1 and kept[0].path.is_dir()
    finally:
        maker.kill()
        maker.wait()
    removed, kept = Store(store).remove_partials()
    assert len(removed) == 1 and not kept
