"""The fuzz targets (tests/fuzz.py), briefly and reproducibly: a fixed number of inputs each,
derandomized, so every run tries the same ones. bench/fuzz.py runs them for minutes.

The property: the sample-file loader, the CSV importer and the views of the files the loader
accepts (facts, the brief view, the export, a figure) return a valid result or the project's
error in one line, never another exception, and answer within fuzz.TIME_BOUND."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import fuzz
from conftest import run_probe

#: Inputs per target: a few seconds each.
EXAMPLES = 400
FIXED = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def seeds(probe: str, tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Valid files: the probe's (a ping-pong and a syscall run) and the Python writer's."""
    d = tmp_path_factory.mktemp("seeds")
    out = []
    for bench, params in (("pipe", ["-p", "mode=threads"]), ("syscall", [])):
        f = d / f"{bench}.lss"
        r = run_probe(probe, bench, "-n", "40", *params, "-o", str(f))
        assert r.returncode == 0, r.stderr
        out.append(f.read_bytes())
    return out + fuzz.python_seeds()


def test_the_seeds_are_valid(seeds: list[bytes], tmp_path: Path) -> None:
    f = tmp_path / "s.lss"
    for raw in seeds:
        f.write_bytes(raw)
        assert fuzz.load_target(f) == "ok"


def test_sample_file_loader(seeds: list[bytes], tmp_path: Path) -> None:
    f = tmp_path / "f.lss"
    outcomes: Counter[str] = Counter()

    @FIXED
    @given(fuzz.sample_inputs(seeds))
    def one(raw: bytes) -> None:
        f.write_bytes(raw)
        outcomes[fuzz.load_target(f)] += 1

    one()
    # the inputs reach past the checksum: some files are read, most are refused
    assert outcomes["ok"] > 0 and outcomes["refused"] > outcomes["ok"], outcomes


def test_the_views_of_accepted_files(seeds: list[bytes], tmp_path: Path) -> None:
    """Files the loader accepts (mutated seeds, resealed) through the views: facts, the brief
    view, the export and a figure; a refusal is one line, anything else a failure."""
    f = tmp_path / "v.lss"
    outcomes: Counter[str] = Counter()

    @settings(FIXED, max_examples=120)
    @given(fuzz.sample_inputs(seeds))
    def one(raw: bytes) -> None:
        f.write_bytes(raw)
        outcomes[fuzz.views_target(f)] += 1

    one()
    assert outcomes["ok"] > 0, outcomes


def test_csv_importer(tmp_path: Path) -> None:
    f, out = tmp_path / "f.csv", tmp_path / "imported.lss"
    outcomes: Counter[str] = Counter()

    @FIXED
    @given(fuzz.csv_inputs())
    def one(case: tuple[bytes, str | None, str | None]) -> None:
        raw, unit, time_column = case
        f.write_bytes(raw)
        outcomes[fuzz.csv_target(f, unit, time_column, out)] += 1

    one()
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0, outcomes


def test_a_hang_is_a_failure() -> None:
    with pytest.raises(fuzz.Hang), fuzz.time_bound(0.05):
        for _ in itertools.count():
            pass
