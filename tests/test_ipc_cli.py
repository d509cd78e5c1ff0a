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
