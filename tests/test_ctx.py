"""ctx, lmbench's lat_ctx in the probe: a token around a ring of processes on one CPU, the cost
of passing it without a switch measured beside it, the switch derived per sample; and
`run --sweep KEY=V1,V2,...`, the grid of runs it is swept with."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import latscope
from conftest import children, probe_error_line, run_probe
from latscope.matrix.grid import GridCell, grid_figure, grid_plan, parse_axes


def test_switch_is_ring_less_pass_per_process_sample_by_sample(cli, store: Path) -> None:
    r = cli("run", "ctx", "-p", "procs=3", "-p", "size=4k", "-n", "400", "--repeat", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    run = latscope.load(r.stdout.strip(), store=store)
    assert run.columns == ["ring", "pass"] and run.derived_columns == ["switch"]
    ring, pas, sw = run.values("ring"), run.values("pass"), run.values("switch")
    assert sw.size == 400
    np.testing.assert_allclose(sw, (ring - pas) / 3.0)
    meta = run.column_meta("switch")
    assert meta["formula"] == "(ring - pass) / procs" and meta["divide_by_param"] == "procs"
    assert run.column_meta("ring")["context_switches"] == 3
    assert run.meta["bench"]["procs"] == 3 and run.meta["bench"]["size_bytes"] == 4096
    # the ring holds the pass's work and the switches: slower in nearly every iteration
    assert float(np.mean(ring > pas)) > 0.9
    # shown with its own figures (not "those of ring divided by ...")
    shown = cli("show", run.id)
    assert shown.returncode == 0, shown.stderr
    assert "switch" in shown.stdout and "negative values" not in shown.stdout + shown.stderr


def test_a_process_of_the_ring_that_dies_ends_the_run_in_one_line(
    probe: str, tmp_path: Path
) -> None:
    out = tmp_path / "ctx.lss"
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    p = subprocess.Popen(
        [probe, "ctx", "-p", "procs=4", "-n", "50000000", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while len(children(p.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        kids = children(p.pid)
        assert len(kids) == 3, kids
        os.kill(kids[1], signal.SIGKILL)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1, err
    line = probe_error_line(err)
    assert "ring" in line or "peer" in line, line
    assert not out.exists()
    time.sleep(0.3)
    for pid in kids:
        assert not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text()


def test_ctx_is_compared_as_alternating_processes_and_says_why(cli) -> None:
    """ctx cannot be an arm inside one process (its ring is its own): `ab` alternates whole
    probe processes instead, and says why."""
    r = cli("ab", "ctx", "ctx procs=3", "--time", "1")
    assert r.returncode == 0, r.stderr
    assert "not in one process: ctx runs a ring of processes of its own" in r.stdout
    assert "B    ring" in r.stdout


def test_the_probe_refuses_a_ring_out_of_bounds(probe: str) -> None:
    for bad in ("procs=1", "procs=65", "size=-1"):
        r = run_probe(probe, "ctx", "-p", bad, "--check")
        assert r.returncode == 2, (bad, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


# ------------------------------------------------------------------------- the sweep


def test_a_sweep_keeps_a_run_per_cell_prints_them_and_draws_them(
    cli, store: Path, tmp_path: Path
) -> None:
    png = tmp_path / "ctx.png"
    r = cli(
        "run",
        "ctx",
        "--sweep",
        "procs=2,3",
        "--sweep",
        "size=0,8k",
        "-n",
        "200",
        "--plot",
        str(png),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    runs = latscope.runs(store=store)
    kept = sorted({(p) for p in runs["params"].to_list()})
    assert len(set(runs["run_id"].to_list())) == 4, kept
    rows = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("│")]
    assert len(rows) == 4
    assert [ln.split("│")[1:3] for ln in rows][0][0].strip() == "2"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for line in r.stdout.splitlines():  # the table (the store's and the figure's paths aside)
        assert "kept in" in line or line.startswith("wrote ") or len(line) <= 80, line


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (["--sweep", "nosuch=1,2"], "has no parameter 'nosuch'"),
        (["--sweep", "procs=2,2"], "given twice"),
        (["--sweep", "procs=2,,3"], "a value is empty"),
        (["--sweep", "procs"], "write KEY=V1,V2"),
        (["--sweep", "procs=2,3", "--sweep", "procs=4"], "swept twice"),
        (["--sweep", "procs=2,3", "-p", "procs=4"], "also given with -p"),
        (
            [
                "--sweep",
                "procs=" + ",".join(str(k) for k in range(2, 13)),
                "--sweep",
                "size=" + ",".join(f"{k}k" for k in range(10)),
            ],
            "at most 100",
        ),
        (["--sweep", "procs=2,3", "--plot", "x.jpg"], "write .png, .svg or .pdf"),
        (["--plot", "x.png"], "go with --sweep"),
        (["--sweep", "cpus", "--sweep", "procs=2"], "goes alone"),
    ],
)
def test_a_wrong_sweep_is_one_line_before_any_run(cli, store: Path, words, says) -> None:
    r = cli("run", "ctx", *words)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert not store.exists() or not list(store.glob("runs/*"))


def test_the_grid_is_every_combination_the_first_axis_slowest() -> None:
    plan = grid_plan([("procs", ["2", "4"]), ("size", ["0", "16k", "64k"])])
    assert plan == [{"procs": p, "size": s} for p in ("2", "4") for s in ("0", "16k", "64k")]
    assert parse_axes(["procs=2,4", "size=0,16k"], "ctx", {}) == [
        ("procs", ["2", "4"]),
        ("size", ["0", "16k"]),
    ]


def test_the_sweeps_figure_puts_each_cell_where_its_values_say() -> None:
    """Synthetic cells whose medians are known: one line per size, x at the recorded procs
    (log scale, 2 to 16 spans 8x), tick labels as the user wrote the values."""
    axes = [("procs", ["2", "4", "16"]), ("size", ["0", "64k"])]
    cells = []
    for p in (2, 4, 16):
        for s, base in (("0", 1000.0), ("64k", 3000.0)):
            c = GridCell(
                {"procs": str(p), "size": s}, {"procs": p, "size": 0 if s == "0" else 65536}
            )
            c.p50 = {"switch": base * p}
            c.ci = (base * p * 0.9, base * p * 1.1)
            c.run_id = f"r{p}{s}"
            cells.append(c)
    fig = grid_figure("ctx", axes, cells, "switch")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "4", "16"]
    lines = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]  # not the error caps
    ys = sorted(tuple(np.round(np.asarray(ln.get_ydata(), float), 6)) for ln in lines)
    assert ys == [(2.0, 4.0, 16.0), (6.0, 12.0, 48.0)]  # µs
    assert "µs" in ax.get_ylabel()


def test_the_public_runs_stays_a_function_once_a_run_is_loaded(cli, store: Path) -> None:
    """``latscope.runs()`` after ``latscope.load()``: the module a run is read with must not
    take the public function's name in the package (it did: 'module' object is not
    callable)."""
    r = cli("run", "syscall", "-n", "200", "--repeat", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    latscope.load(r.stdout.strip(), store=store)
    import importlib

    for m in ("latscope.record", "latscope.measure.runner", "latscope.matrix.grid"):
        importlib.import_module(m)
    assert callable(latscope.runs)
    assert latscope.runs(store=store)["run_id"].to_list() == [r.stdout.strip()]


def test_a_file_run_can_pause_before_every_iteration(probe: str, tmp_path: Path) -> None:
    """pause=US idles before every iteration, untimed: the iterations' starts lie at least that
    far apart, and the header says it."""
    from latscope import samples

    out = tmp_path / "p.lss"
    r = run_probe(probe, "file", "-p", f"dir={tmp_path}", "-p", "pause=20000", "-n", "5",
                  "--warmup", "0", "-o", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    f = samples.load(out)
    assert f.header["bench"]["pause_us"] == 20000
    starts = f.ns("t_start")
    assert float(np.diff(starts).min()) >= 20e6
    bad = run_probe(probe, "file", "-p", "pause=-1", "--check")
    assert bad.returncode == 2 and "pause" in bad.stderr


def test_an_injected_wait_lands_in_the_ring_not_in_the_pass(probe: str, tmp_path: Path) -> None:
    """--inject-ns: the ring's trip holds the wait (once per trip, so the switch rises by it
    / procs), the pass never; the header says which column is free of it."""
    from latscope import samples

    out = tmp_path / "i.lss"
    r = run_probe(probe, "ctx", "-n", "200", "--inject-ns", "5000", "-o", str(out))
    assert r.returncode == 0, r.stderr
    f = samples.load(out)
    holds = {c["name"]: c.get("holds_inject") for c in f.header["columns"] if "holds_inject" in c}
    assert holds == {"ring": True, "pass": False}, holds
    assert f.header["inject_ns"] == 5000
    # a busy-wait of 5 µs is in every trip: no ring shorter than it
    assert float(f.ns("ring").min()) >= 5000.0


def test_a_report_of_a_ctx_run_opens_with_the_switch(cli, store: Path, tmp_path: Path) -> None:
    r = cli("run", "ctx", "-n", "300", "--repeat", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    run = latscope.load(r.stdout.strip(), store=store)
    assert run.headline == "switch"
    md = cli("report", run.id, "--md", str(tmp_path / "md"))
    assert md.returncode == 0, md.stderr
    text = (tmp_path / "md" / "report.md").read_text()
    glance = text[text.index("At a glance") :]
    assert glance.index("switch (per switch)") < glance.index("ring (ring trip")
    assert "Histogram, cut at p97 — switch" in text or "switch: histogram" in text
