"""`latscope matrix` and `latscope run MECH --sweep cpus`: every cell is a kept run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from latscope.matrix.ipc import matrix_plan, relation, sweep_plan
from latscope.store import Store


def test_matrix_table(cli, store: Path) -> None:
    r = cli("matrix", "-n", "200", "-m", "pipe", "-m", "futex", "-m", "yield", "--quiet")
    assert r.returncode == 0, r.stderr
    for word in ("pipe", "futex", "yield", "threads", "processes", "same CPU", "2 CPUs", "p99"):
        assert word in r.stdout, word
    cells = Store(store).list_meta()
    two = (os.cpu_count() or 1) >= 2
    # pipe and futex: 2 modes × 2 placements; yield: 2 modes on one CPU only
    assert len(cells) == (2 * 2 * 2 if two else 2 * 2) + 2
    assert all(m["tags"].get("matrix") for m in cells)


def test_matrix_plan_covers_every_mechanism() -> None:
    plan = matrix_plan()
    names = {b["name"] for b, _, _ in plan}
    assert {"pipe", "futex", "posix_sem", "tcp", "signal", "spin"} <= names
    assert all(cpus == "0,0" for b, _, cpus in plan if b["name"] == "yield")
    modes = {(b["name"], m) for b, m, _ in plan}
    assert ("pipe", "threads") in modes and ("pipe", "processes") in modes


def test_matrix_unknown_mechanism(cli) -> None:
    r = cli("matrix", "-m", "carrier-pigeon")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "latscope: error: not a communication mechanism: carrier-pigeon (see 'latscope list')"
    ]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU")
def test_sweep(cli, store: Path) -> None:
    r = cli("run", "pipe", "--sweep", "cpus", "-n", "200", "-p", "mode=threads", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "CPU 0" in r.stdout and "CPU 1" in r.stdout and "same CPU" in r.stdout
    n = len(os.sched_getaffinity(0))
    assert len(Store(store).list_meta()) == n * n
    assert relation(0, 0) == "same CPU"
    assert sweep_plan([0, 1]) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_sweep_refuses_a_one_party_benchmark(cli) -> None:
    r = cli("run", "syscall", "--sweep", "cpus")
    assert r.returncode == 2 and "needs a communication benchmark" in r.stderr


def test_a_matrix_column_that_spans_orders_of_magnitude_gives_each_cell_its_unit() -> None:
    """Spinning peers on one CPU (16 ms, a scheduler tick) beside a pipe (8 us) in one column:
    each cell in its own unit ("16.01 ms", "8.114 µs"), never 16010 in a µs column or
    0.008114 in an ms one; a column of similar values keeps one unit, in its header."""
    import io

    from rich.console import Console

    from latscope.matrix.ipc import Cell, matrix_table

    cells = [
        Cell("pipe", "threads", "0,0", 8114.0, 9000.0),
        Cell("spin", "threads", "0,0", 16.01e6, 20e6),
        Cell("pipe", "threads", "0,1", 9000.0, 12000.0),
        Cell("spin", "threads", "0,1", 200.0, 400.0),
    ]
    console = Console(file=io.StringIO(), width=80, color_system=None)
    t, problems = matrix_table(console, cells)
    console.print(t)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "16.01 ms" in out and "8.114 µs" in out and "16010" not in out
    assert "0.008" not in out
    assert max(len(ln) for ln in out.splitlines()) <= 80 and problems == []
