"""latscope import of sample files measured elsewhere (a probe on a Raspberry Pi, under
qemu-user, on Windows): kept as runs with the environment their probe recorded, through the
store's one add path; a file imported before, a damaged or hostile file: one line, exit 2,
nothing in the store."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fuzz import base_header, mutate, python_seeds, reseal, written
from latscope import samples
from latscope.record import Run
from latscope.store import Store

EMULATED = {
    "emulated": True,
    "emulator": "qemu-user",
    "evidence": "the kernel runs /usr/bin/qemu-aarch64 for this program",
    "built_for": "aarch64",
}


def sample_file(
    path: Path, *, bench: str = "syscall", seed: int = 0, env: dict[str, Any] | None = None
) -> Path:
    """A complete sample file of ``bench`` (one column, call) with this environment record."""
    rng = np.random.default_rng(seed)
    header = base_header(["call"], 200)
    header["benchmark"] = bench
    header["params"] = {"op": "getppid"}
    header["env"] = {
        "schema": 2,
        "hostname": "pi",
        "kernel": {
            "sysname": "Linux",
            "release": "6.6.51+rpt",
            "version": "#1",
            "machine": "aarch64",
        },
        "cpu": {"model": "Cortex-A72", "online_count": 4},
        "emulation": EMULATED,
        **(env or {}),
    }
    ticks = np.vstack([np.arange(200) * 1000, 300 + rng.integers(0, 50, 200)])
    samples.write(path, header, {"t_start": ticks[0], "call": ticks[1]})
    return path


def error_line(r: Any, words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("latscope: error: "), r.stderr
    assert words in lines[0], lines[0]
    assert "Traceback" not in r.stdout + r.stderr


def store_is_empty(store: Path) -> None:
    """No run, and nothing partial left behind."""
    runs = store / "runs"
    assert Store(store).list_meta() == []
    assert not runs.exists() or list(runs.iterdir()) == []


def test_import_keeps_the_run_with_its_environment(cli: Any, store: Path, tmp_path: Path) -> None:
    f = sample_file(tmp_path / "pi-syscall.lss")
    r = cli("import", str(f))
    assert r.returncode == 0, r.stderr
    [meta] = Store(store).list_meta()
    rid = meta["id"]
    assert f"imported {f} as run {rid}" in r.stdout
    assert f"latscope show {rid}" in r.stdout
    assert "under emulation (qemu-user)" in r.stdout
    assert meta["benchmark"] == "syscall" and meta["status"] == "complete"
    assert meta["params"] == {"op": "getppid"}
    assert len(meta["imported_from"]["sha256"]) == 64
    # the kept samples are the file's, byte for byte; the summary is there, as for a run
    kept = Store(store).resolve(rid)
    run = Run(kept)
    # the environment is the probe's record, not this machine's
    assert meta["env"] is None
    assert run.env is not None
    assert run.env["hostname"] == "pi" and run.env["cpu"]["model"] == "Cortex-A72"
    assert run.env["emulation"] == EMULATED
    assert (kept / "samples.lss").read_bytes() == f.read_bytes()
    assert run.summary()["column"].to_list() == ["call"]
    show = cli("show", rid)
    assert show.returncode == 0, show.stderr
    assert (
        "caveat: measured under emulation (qemu-user): not the figures of a real aarch64 machine"
        in show.stdout
    )
    # the report says it first, in its opening section
    md = tmp_path / "md"
    r = cli("report", rid, "--md", str(md), "--no-figures")
    assert r.returncode == 0, r.stderr
    text = (md / "report.md").read_text()
    glance = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert "measured under emulation (qemu-user)" in glance


def test_a_native_run_has_no_caveat(cli: Any, store: Path, tmp_path: Path) -> None:
    native = {"emulated": False, "emulator": None, "evidence": None, "built_for": "x86_64"}
    f = sample_file(tmp_path / "x.lss", env={"emulation": native})
    assert cli("import", str(f)).returncode == 0
    show = cli("show", "last")
    assert show.returncode == 0 and "emulation" not in show.stdout


def test_several_files_and_quiet(cli: Any, store: Path, tmp_path: Path) -> None:
    a = sample_file(tmp_path / "a.lss", bench="pipe", seed=1)
    b = sample_file(tmp_path / "b.lss", bench="file", seed=2)
    r = cli("import", str(a), str(b), "--quiet")
    assert r.returncode == 0, r.stderr
    ids = r.stdout.split()
    assert len(ids) == 2 and sorted(m["id"] for m in Store(store).list_meta()) == sorted(ids)
    assert {m["benchmark"] for m in Store(store).list_meta()} == {"pipe", "file"}


def test_the_same_content_twice_is_refused(cli: Any, store: Path, tmp_path: Path) -> None:
    f = sample_file(tmp_path / "a.lss")
    assert cli("import", str(f)).returncode == 0
    [first] = Store(store).list_meta()
    copy = tmp_path / "copy-of-a.lss"
    copy.write_bytes(f.read_bytes())
    r = cli("import", str(copy))
    error_line(r, f"already in the store as run {first['id']} (the same content)")
    assert [m["id"] for m in Store(store).list_meta()] == [first["id"]]
    assert list((store / "runs").iterdir()) == [store / "runs" / first["id"]]


def test_csv_options_are_for_csv_files(cli: Any, store: Path, tmp_path: Path) -> None:
    f = sample_file(tmp_path / "a.lss")
    error_line(cli("import", str(f), "--unit", "us"), "--unit is for CSV files")
    error_line(cli("import", str(f), str(f), "--name", "x"), "--name names one run")
    store_is_empty(store)


def test_what_is_not_a_sample_file(cli: Any, store: Path, tmp_path: Path) -> None:
    error_line(cli("import", str(tmp_path / "missing.lss")), "no such file")
    error_line(cli("import", str(tmp_path)), "is a directory")
    fifo = tmp_path / "fifo.lss"
    os.mkfifo(fifo)
    error_line(cli("import", str(fifo)), "not a regular file")
    store_is_empty(store)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_files_are_refused_whole(cli: Any, store: Path, tmp_path: Path, seed: int) -> None:
    """A file cut, flipped or spliced (the fuzz helpers), resealed or not: one line and no run
    where the sample reader refuses it, else (a change it cannot tell) an ordinary import."""
    rng = random.Random(seed)
    good = sample_file(tmp_path / "good.lss").read_bytes()
    bad = mutate(rng, good, python_seeds(), rng.randint(1, 3))
    if seed % 2:
        bad = reseal(bad)
    if not bad.startswith(samples.MAGIC):
        bad = samples.MAGIC + bad  # a sample file by its look, so the sample reader judges it
    f = tmp_path / "bad.lss"
    f.write_bytes(bad)
    try:
        samples.load(f)
        valid = True
    except samples.SampleFormatError:
        valid = False
    r = cli("import", str(f))
    if valid:
        assert r.returncode == 0, r.stderr
        assert len(Store(store).list_meta()) == 1
    else:
        error_line(r, "bad.lss")
        store_is_empty(store)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"benchmark": "../../etc"}, "benchmark must be a name"),
        ({"env": {"schema": 2, "emulation": {"emulated": "yes"}}}, "emulated"),
        ({"env": {"schema": 2, "kernel": {"release": ["6.6"]}}}, "'env.kernel' holds a list"),
    ],
)
def test_hostile_headers_are_refused(
    cli: Any, store: Path, tmp_path: Path, change: dict[str, Any], words: str
) -> None:
    header = base_header(["call"], 3) | change
    f = tmp_path / "hostile.lss"
    f.write_bytes(written(header, np.array([[0, 1, 2], [5, 6, 7]])))
    error_line(cli("import", str(f)), words)
    store_is_empty(store)


def test_the_run_json_records_where_it_came_from(cli: Any, store: Path, tmp_path: Path) -> None:
    f = sample_file(tmp_path / "a.lss")
    assert cli("import", str(f)).returncode == 0
    [meta] = Store(store).list_meta()
    d = Store(store).resolve(meta["id"])
    kept = json.loads((d / "run.json").read_text())
    assert kept["imported_from"]["file"] == "a.lss"
    assert kept["imported_from"]["path"] == str(f.resolve())
    assert kept["probe_command"] == "fuzz"  # the header's argv, as the probe was run


def test_the_parameters_given_on_the_probes_command_line_are_kept(
    cli: Any, store: Path, tmp_path: Path
) -> None:
    """What `-p` gave the probe is the run's params_given (ls shows those), as for a run made
    here; a flag that names no parameter of the header, or has no value, is not."""
    f = tmp_path / "a.lss"
    header = base_header(["call"], 50)
    header["params"] = {"op": "getppid", "batch": 1}
    header["argv"] = ["./p", "syscall", "-p", "op=getppid", "-n", "50", "-p", "nope=1", "-p"]
    samples.write(f, header, {"t_start": np.arange(50), "call": np.full(50, 300)})
    assert cli("import", str(f)).returncode == 0
    [meta] = Store(store).list_meta()
    assert meta["params_given"] == {"op": "getppid"}
    r = cli("ls")
    assert "op=getppid" in r.stdout and "batch" not in r.stdout


def test_import_keeps_a_run_under_the_host_it_is_given(
    cli: Any, store: Path, tmp_path: Path
) -> None:
    a = sample_file(tmp_path / "a.lss", bench="pipe", seed=3)
    r = cli("import", str(a), "--host", "pi-2")
    assert r.returncode == 0, r.stderr
    assert "kept as host pi-2" in r.stdout
    r = cli("ls", "--host", "pi-2", "--json")
    assert r.returncode == 0, r.stderr
    assert [x["host"] for x in json.loads(r.stdout)["runs"]] == ["pi-2"]
    csv = tmp_path / "c.csv"
    csv.write_text("call_ns\n1\n2\n3\n")
    r = cli("import", str(csv), "--host", "pi-2")
    assert r.returncode == 2 and "--host is for sample files" in r.stderr


def test_runs_measured_elsewhere_are_never_to_be_measured_again_here(
    cli: Any, store: Path, tmp_path: Path
) -> None:
    """compare of two imported single-process runs (a Pi's, an emulator's) names what settles
    it there; 'latscope run' or 'trust' here would measure this machine's probe instead."""
    a = sample_file(tmp_path / "a.lss", seed=1)
    b = sample_file(tmp_path / "b.lss", seed=2)
    ids = cli("import", str(a), str(b), "--quiet").stdout.split()
    runs = [Run(Store(store).resolve(i)) for i in ids]
    assert [r.measured_here for r in runs] == [False, False]
    r = cli("compare", *ids)
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    if "inconclusive" in out:  # two draws of one distribution: most likely
        assert "measured elsewhere: measure both again there" in out
    assert "latscope run" not in out and "latscope trust" not in out


def test_a_run_measured_here_is_one_latscope_run_repeats(store: Path) -> None:
    from synth import make_run

    run = make_run(store, {"call": np.full(100, 1000.0)})
    assert run.measured_here
    run.meta["env"] = {"schema": 2, "emulation": EMULATED}  # a run under qemu-user
    assert not run.measured_here
