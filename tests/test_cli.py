"""The latscope CLI and Python API: runs kept in the store, found by id, exported; bad input
gets one line and a non-zero exit, never a traceback; Ctrl-C leaves nothing behind."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import latscope
from conftest import children
from latscope.errors import BadInput
from latscope.store import Store
from synth import lognormal, make_run


def one_error_line(r: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("latscope: error: ")
    assert words in lines[0]
    assert "Traceback" not in r.stderr + r.stdout


def test_list(cli) -> None:
    r = cli("list")
    assert r.returncode == 0, r.stderr
    for name in ("syscall", "file", "pipe", "cache=warm", "clocks:"):
        assert name in r.stdout
    # the choices are shown (rich once took "[warm|drop|...]" for markup and dropped it), and
    # the modes of a mechanism, the Python engine's tasks among them
    params = _cells(r.stdout, 2)
    assert "cache=warm [warm, drop, fadvise, direct]" in params["file"]
    assert "mode=tasks [tasks, processes]" in params["py_asyncio_tcp"]
    # inproc joins sockets of one process: threads only, no choice to offer
    assert params["zmq_inproc"].startswith("mode=threads cpus=")


def _cells(table: str, column: int) -> dict[str, str]:
    """A boxed rich table's ``column`` (0-based), its lines joined, by the first column."""
    out: dict[str, list[str]] = {}
    name = ""
    for ln in table.splitlines():
        if not ln.startswith("│"):
            continue
        fields = [f.strip() for f in ln.split("│")[1:-1]]
        name = fields[0] or name
        out.setdefault(name, []).append(fields[column])
    return {k: " ".join(x for x in v if x) for k, v in out.items()}


def test_list_fits_80_columns_with_every_default_whole(cli) -> None:
    r = cli("list", env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in r.stdout
    rows = [ln for ln in lines if ln.startswith(("┃", "│"))]
    assert all(ln.rstrip()[-1] in "┃│" for ln in rows), r.stdout  # the right edge, not cropped
    assert "switchinterval=0.005" in r.stdout  # one line, not folded


def test_the_in_process_runner_gives_what_a_process_gives(cli) -> None:
    """The `cli` fixture runs latscope in the test process: it returns the output, errors and
    exit status a latscope process gives (a table, a version, a usage error, the help)."""
    for args in (("list",), ("--version",), ("--frobnicate",), ()):
        here = cli(*args)
        p = cli.popen(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate(timeout=120)
        assert (here.returncode, here.stdout, here.stderr) == (p.returncode, out, err), args


def test_run_show_export(cli, store: Path, tmp_path: Path) -> None:
    r = cli("run", "syscall", "-n", "3000", "-p", "op=read0")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for word in ("syscall", "op=read0", "clock", "p50", "95% CI of p50", "p99.9"):
        assert word in out, word
    runs = Store(store).list_meta()
    assert len(runs) == 1
    rid = runs[0]["id"]
    assert f"run {rid}" in out and f"kept in {store}" in out
    assert f"latscope show {rid} --full" in out  # where the rest is
    s = cli("show", rid[:17], "--full")
    assert s.returncode == 0 and rid in s.stdout
    for word in (
        "kernel",
        "overhead",
        "step",
        "batch figure",
        "worker medians",  # how the interval was made (several workers: over their medians)
    ):
        assert word in s.stdout, word
    csv = tmp_path / "s.csv"
    e = cli("export", "last", "--csv", str(csv))
    assert e.returncode == 0, e.stderr
    df = pl.read_csv(csv)
    assert df.columns == ["iteration", "t_start_s", "worker", "call_ns"] and df.height == 3000
    workers = df["worker"].to_list()  # the worker processes in the order they ran
    assert workers == sorted(workers) and set(workers) == set(range(workers[-1] + 1))
    assert df["call_ns"].dtype == pl.Int64  # whole ns, not 17-digit floats
    exact = tmp_path / "exact.csv"
    assert cli("export", "last", "--csv", str(exact), "--exact").returncode == 0
    fl = pl.read_csv(exact)["call_ns"]
    assert fl.dtype == pl.Float64 and (fl - df["call_ns"]).abs().max() <= 0.5
    pq = tmp_path / "s.parquet"
    assert cli("export", rid, "--parquet", str(pq)).returncode == 0
    assert pl.read_parquet(pq).height == 3000
    # '-': the rows to standard output, nothing else there, no file named '-' (in this
    # process, run where such a file would be made; the pipe itself is the process below's)
    d = cli("export", rid, "--csv", "-", cwd=tmp_path)
    assert d.returncode == 0, d.stderr
    lines = d.stdout.splitlines()
    assert lines[0] == "iteration,t_start_s,worker,call_ns" and len(lines) == 3001
    assert not (tmp_path / "-").exists()
    # a reader that leaves early (| head -3): status 0, no traceback
    head = cli.popen("export", rid, "--csv", "-", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert head.stdout is not None
    head.stdout.readline()
    head.stdout.close()
    assert head.wait(timeout=120) == 0 and "Traceback" not in head.stderr.read()


def test_pipe_summary_names_latencies(cli) -> None:
    r = cli("run", "pipe", "-n", "2000", "-p", "cpus=0,0")
    assert r.returncode == 0, r.stderr
    r = cli("show", "last", "--full")
    for word in ("round trip", "one-way, shared clock", "RTT/2", "same cpu"):
        assert word in r.stdout, word


@pytest.mark.parametrize(
    "args,code,words",
    [
        (("run", "nosuch"), 2, "unknown benchmark 'nosuch'"),
        (("run", "syscall", "-p", "bogus=1"), 2, "no parameter 'bogus'"),
        (("run", "syscall", "-p", "novalue"), 2, "key=value"),
        (("run", "syscall", "-n", "0"), 2, "-n 0"),
        (("run", "syscall", "-n", "many"), 2, "invalid int value"),
        (("run", "file", "-p", "dir=/nonexistent/dir"), 2, "dir=/nonexistent/dir"),
        (("run", "pipe", "-p", "cpus=0,512"), 2, "CPU 512 does not exist"),
        (("show", "no-such-run"), 2, "no run 'no-such-run'"),
        (("export", "no-such-run", "--csv", "x.csv"), 2, "no run"),
    ],
)
def test_bad_input_one_line(cli, store: Path, args: tuple[str, ...], code: int, words: str) -> None:
    r = cli(*args)
    one_error_line(r, code, words)
    partial = [p for p in (store / "runs").glob(".partial-*")] if (store / "runs").exists() else []
    assert partial == []


def test_show_a_truncated_or_foreign_file(cli, tmp_path: Path) -> None:
    f = tmp_path / "foreign.lss"
    f.write_text("hello\n")
    one_error_line(cli("show", str(f)), 2, "not a latscope sample file")


def test_export_refuses_a_directory(cli, store: Path, tmp_path: Path) -> None:
    make_run(store, {"call": lognormal(100, 100.0)})
    one_error_line(cli("export", "last", "--csv", str(tmp_path)), 2, "is a directory")


def test_api(store: Path) -> None:
    r = latscope.run("pipe", cpus="0,0", mode="threads", n=500, store=store)
    assert isinstance(r.samples, pl.DataFrame)
    assert r.samples.columns == ["iteration", "t_start_s", "worker", "rtt_ns", "oneway_ns"]
    s = r.summary()
    assert s["column"].to_list() == ["rtt", "oneway", "rtt/2"]
    row = s.row(0, named=True)
    assert row["p50_ci_low_ns"] <= row["p50_ns"] <= row["p50_ci_high_ns"]
    assert row["min_ns"] <= row["p50_ns"] <= row["max_ns"]
    assert r.meta["benchmark"] == "pipe" and r.meta["clock"]["overhead_ns"] > 0
    again = latscope.load(r.id, store=store)
    assert again.n == 500 and again.meta["run"]["id"] == r.id
    with pytest.raises(BadInput):
        latscope.run("pipe", n=-1, store=store)
    names = [b["name"] for b in latscope.benchmarks()]
    assert "pipe" in names


def test_ctrl_c_leaves_nothing(cli, store: Path, tmp_path: Path) -> None:
    # a process of its own: Ctrl-C goes to its process group, the probe is its child
    p = cli.popen(
        "run",
        "pipe",
        "-n",
        "50000000",
        "--quiet",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    # wait until the probe and its peer are running
    deadline = time.time() + 30
    probe_pid = None
    while time.time() < deadline:
        kids = children(p.pid)
        if kids and children(kids[0]):
            probe_pid = kids[0]
            break
        time.sleep(0.1)
    assert probe_pid, "the probe did not start"
    peer = children(probe_pid)[0]
    os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert (
        not Path(f"/proc/{probe_pid}").exists()
        or "zombie" in Path(f"/proc/{probe_pid}/status").read_text()
    )
    assert not Path(f"/proc/{peer}").exists()
    assert list((store / "runs").iterdir()) == []


def test_markup_in_a_parameter_is_text(cli, tmp_path: Path) -> None:
    """A directory named like rich markup ('[/x]' is a legal path) is shown, never parsed:
    run, ls, show and show --full print it and exit 0."""
    d = tmp_path / "q[" / "x]"
    d.mkdir(parents=True)
    r = cli("run", "file", "-p", f"dir={d}", "-n", "50")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and f"dir={d}" in r.stdout
    for args in (["ls"], ["show", "last"], ["show", "last", "--full"]):
        out = cli(*args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)
        assert "q[/x]" in out.stdout, args
    q = cli("run", "syscall", "-n", "50", "--quiet")  # only the new run's id
    assert q.returncode == 0 and q.stdout.strip() == Store(cli.store).list_meta()[-1]["id"]


def test_a_reader_that_leaves_early_ends_every_command_quietly_with_status_0(cli) -> None:
    """`latscope list | head -1`, and the same of both engines: no traceback, no error line,
    status 0 (rich's own choice was 1, and the Python engine printed 'error: Broken pipe')."""
    import os

    from latscope import probe as lab_probe

    engines = [
        [os.environ.get("LATSCOPE_PROBE") or lab_probe.probe_path(), "--list"],
        [sys.executable, str(lab_probe.PYPROBE_DIR), "--list"],
    ]
    for kind, argv in [("lab", None), *(("engine", a) for a in engines)]:
        kw: dict = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        p = cli.popen("list", **kw) if argv is None else subprocess.Popen(argv, text=True, **kw)
        assert p.stdout is not None and p.stdout.read(20)
        p.stdout.close()  # the reader leaves while the writer has more to say
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, (kind, argv, err)
        assert err == "", (kind, argv, err)


@pytest.mark.parametrize(("oneway_ns", "disagree"), [(1500.0, False), (1000.0, True)])
def test_a_one_way_time_and_half_the_round_trip_say_when_they_disagree(
    store: Path, oneway_ns: float, disagree: bool
) -> None:
    """A ping-pong run whose round trips have a median of 3 µs and whose one-way times from
    the shared clock have one of 1.5 µs (both directions cost the same: nothing said) or of
    1 µs (the return trip is twice the forward: said, with the figures and what to quote)."""
    from latscope.facts.checks import one_way_checks
    from synth import lognormal, make_run

    def col(name: str, latency: str) -> dict:
        return {"name": name, "unit": "ticks", "kind": "duration", "latency": latency}

    cols = [{"name": "t_start", "unit": "ticks", "kind": "time"}]
    cols += [col("rtt", "round_trip"), col("oneway", "one_way_shared_clock")]
    run = make_run(
        store,
        {"rtt": lognormal(4000, 3000.0, 0.05, 1), "oneway": lognormal(4000, oneway_ns, 0.05, 2)},
        bench="pipe",
        params={"mode": "processes", "cpus": "0,0", "size": 8},
        segments=[1000] * 4,
        header={"columns": cols},
    )
    assert "rtt/2" in run.derived_columns
    pairs = one_way_checks(run, run.summary())
    said = [text for text, _ in pairs]
    assert len(said) == int(disagree)
    if disagree:
        assert said[0].startswith("oneway and rtt/2 disagree")
        assert "is 0.67 of rtt/2's" in said[0] and "the return trip costs more" in said[0]
        assert said[0].endswith("Quote oneway as the one-way time.")
        assert pairs[0][1].startswith("oneway (") and pairs[0][1].endswith("quote oneway")
    from latscope.facts import disagreements

    assert disagreements(run.facts) == said


@pytest.mark.parametrize(
    ("batch_ns", "inject", "disagree"), [(80.0, 0, False), (60.0, 0, True), (60.0, 20, False)]
)
def test_the_batch_figure_and_the_median_say_when_they_disagree(
    store: Path, batch_ns: float, inject: int, disagree: bool
) -> None:
    """A per-call median of 100 ns with a 20 ns clock read cost, against a batch figure of
    80 ns (agreeing) or 60 ns (beyond the median's interval: said, with its likely cause);
    with an injected wait of 20 ns in every call (never in the batch figure), 60 ns agrees."""
    from latscope.facts.checks import check_figure
    from synth import lognormal, make_run

    batch = {"bench": {"batch": {"per_call_median_ns": batch_ns, "calls_per_batch": 100}}}
    run = make_run(
        store,
        {"call": lognormal(4000, 100.0, sigma=0.05, seed=3)},
        bench="syscall",
        segments=[1000] * 4,
        header={**batch, "inject_ns": inject},
    )
    check = {
        "label": "batch figure",
        "value": "bench.batch.per_call_median_ns",
        "column": "call",
        "minus": "clock.overhead_ns",
        "detail": "",
    }
    got = check_figure(run, run.summary(), check)
    assert got is not None
    line, said, short = got
    assert "ratio" in line and said is disagree
    assert short.startswith("batch figure ") and short.endswith("they disagree")
    assert ("and the injected" in line) is bool(inject)
    assert ("They disagree" in line) is disagree
    if disagree:
        assert "pools 4 worker processes" in line
    # the report says the same where it opens, and only when they disagree
    from latscope.facts import disagreements

    assert disagreements(run.facts) == ([line] if disagree else [])


def test_the_probe_is_a_command_beside_latscope_and_minus_v_its_version(cli) -> None:
    """`latscope-probe` (installed with latscope) runs the probe latscope runs, with its own
    command line; `latscope -V` is --version."""
    import shutil

    exe = Path(sys.executable).parent / "latscope-probe"
    if not exe.exists():
        exe = Path(shutil.which("latscope-probe") or "latscope-probe")
    if not exe.exists():
        pytest.skip("latscope is not installed with its scripts here")
    done = subprocess.run([str(exe), "--list"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"benchmarks"' in done.stdout
    bad = subprocess.run([str(exe), "nosuch"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("latscope-probe: error: unknown")
    v = cli("-V")
    assert v.returncode == 0 and v.stdout.startswith("latscope ")


def test_compare_fail_if_exits_1_only_when_a_verdict_says_so(cli, store: Path) -> None:
    """Two synthetic runs, the second twice as slow: `--fail-if slower` fails on it and not
    the other way round; `--fail-if different` fails both ways; without it, status 0."""
    from synth import lognormal, make_run

    fast = make_run(
        store, {"call": lognormal(4000, 1000.0, 0.05, 1)}, bench="syscall", segments=[1000] * 4
    )
    slow = make_run(
        store,
        {"call": lognormal(4000, 2000.0, 0.05, 2)},
        bench="syscall",
        segments=[1000] * 4,
        created_utc="2026-01-01T00:00:02Z",
    )
    assert cli("compare", fast.id, slow.id).returncode == 0
    r = cli("compare", fast.id, slow.id, "--fail-if", "slower")
    assert r.returncode == 1 and f"--fail-if slower: {slow.id} call: slower" in r.stderr
    assert cli("compare", slow.id, fast.id, "--fail-if", "slower").returncode == 0
    assert cli("compare", slow.id, fast.id, "--fail-if", "different").returncode == 1
    # --json: the comparison alone on stdout, the ratio of the two medians it gives
    j = cli("compare", fast.id, slow.id, "--json")
    assert j.returncode == 0, j.stderr
    got = json.loads(j.stdout)
    assert got["schema"] == 1 and got["paired"] is False and got["runs"] == [fast.id, slow.id]
    (c,) = got["comparisons"]
    assert (c["run"], c["baseline"], c["column"], c["verdict"]) == (
        slow.id,
        fast.id,
        "call",
        "slower",
    )
    assert c["ratio"] == pytest.approx(c["median_ns"] / c["baseline_median_ns"])
    assert c["low"] <= c["ratio"] <= c["high"]


def test_completion_scripts_complete_commands_options_and_benchmarks(cli, tmp_path: Path) -> None:
    """`latscope completion bash` is a script bash reads whole, completing the commands, a
    command's options and, for `run`, the catalogue's benchmarks; zsh's loads bash's through
    bashcompinit."""
    import shutil

    r = cli("completion", "bash")
    assert r.returncode == 0, r.stderr
    f = tmp_path / "latscope.bash"
    f.write_text(r.stdout)
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    probe = (
        f"source {f}; "
        'COMP_WORDS=(latscope ru); COMP_CWORD=1; _latscope; echo "1:${COMPREPLY[*]}"; '
        'COMP_WORDS=(latscope run pi); COMP_CWORD=2; _latscope; echo "2:${COMPREPLY[*]}"; '
        "COMP_WORDS=(latscope run pipe --rep); COMP_CWORD=3; _latscope; "
        'echo "3:${COMPREPLY[*]}"'
    )
    done = subprocess.run([bash, "--norc", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1:run", "2:pipe", "3:--repeat"]
    z = cli("completion", "zsh")
    assert z.returncode == 0 and z.stdout.startswith("autoload -U +X bashcompinit")
    assert cli("completion", "fish").returncode == 2


def test_export_of_values_beyond_int64_is_one_line(cli, store: Path, tmp_path: Path) -> None:
    """Durations past 9.2e18 ns (a clock of 1 s per tick, at the int64 extreme of ticks) are
    no whole number of ns: the CSV export says so in one line and points at --exact, which
    writes them."""
    import numpy as np

    from synth import make_run

    x = np.full(200, 1e19)
    x[::2] = 1e3
    run = make_run(store, {"call": x}, ns_per_tick=1e9)
    r = cli("export", run.id, "--csv", str(tmp_path / "a.csv"))
    assert r.returncode == 2 and "beyond ±9.2e18 ns" in r.stderr and "--exact" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "a.csv").exists()
    r = cli("export", run.id, "--csv", str(tmp_path / "b.csv"), "--exact")
    assert r.returncode == 0, r.stderr
    assert "1e+19" in (tmp_path / "b.csv").read_text()


def test_out_of_memory_is_one_line_and_exit_1(monkeypatch, capsys) -> None:
    """A command that runs out of memory (numpy's _ArrayMemoryError is a MemoryError: a run
    of 10^8 samples under a 4 GB limit) ends in one line and exit 1, not a traceback."""
    import latscope.cli as cli_mod

    def too_big(args):  # noqa: ANN001, ANN202
        raise MemoryError("Unable to allocate 7.45 GiB for an array")

    monkeypatch.setattr(cli_mod, "commands", lambda: {"ls": too_big})
    assert cli_mod.main(["ls"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("latscope: error: out of memory") and err.count("\n") == 1
    assert "Traceback" not in err


def _subparsers(ap: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in ap._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_a_command_lines_parser_is_that_commands_alone_and_the_same() -> None:
    """Built for the command a command line names, the parser holds that command alone, with
    the help and the parse of the whole parser's; without a command, or with a name that is
    none, every command is there (the list in --help, the error for a wrong name)."""
    from latscope.cli import build_parser, commands

    whole = _subparsers(build_parser())
    assert set(whole) == set(commands())
    for name in commands():
        one = _subparsers(build_parser(name))
        assert set(one) == ({name} if name != "completion" else set(whole))
        assert one[name].format_help() == whole[name].format_help()
    for argv in (["show", "last", "--full", "--store", "/x"], ["run", "pipe", "-p", "cpus=0,0"]):
        parsed = [vars(b.parse_args(argv)) for b in (build_parser(argv[0]), build_parser())]
        for p in parsed:
            del p["root_parser"]
        assert parsed[0] == parsed[1]
    assert set(_subparsers(build_parser("shwo"))) == set(whole)
    assert set(_subparsers(build_parser(None))) == set(whole)
