"""The README's examples are what latscope prints (scripts/readme_examples.py writes them):
every command in them still runs, and what it prints has the shape the README shows."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location(
        "readme_examples", ROOT / "scripts/readme_examples.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["readme_examples"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_every_example_block_holds_commands_with_their_output() -> None:
    rx = _script()
    blocks = list(rx.examples(rx.README.read_text()))
    assert len(blocks) >= 6
    for _, exs in blocks:
        assert exs and all(ex.command.startswith("latscope ") for ex in exs)
        assert all(ex.output for ex in exs), [ex.command for ex in exs if not ex.output]


def test_the_shape_ignores_figures_ids_and_paths_but_not_layout() -> None:
    rx = _script()
    a = [
        "syscall op=getppid · n=20,000 in 10 workers",
        "column  n  unit  p50",
        "run 20261128-080611-pipe-508e · x",
    ]
    b = [
        "syscall op=getppid · n=2,000 in 4 workers",
        "column  n  unit  p50",
        "run 20261201-101010-pipe-00af · x",
    ]
    assert rx.shape(a) == rx.shape(b)
    assert rx.shape(a) != rx.shape([a[0], "column  n  p50", a[2]])
    assert rx.fewer(["latscope", "run", "pipe"])[-2:] == ["-n", str(rx.CHECK_N)]
    assert rx.fewer(["latscope", "matrix", "-n", "3000"])[-1] == str(rx.CHECK_GIVEN_N)


def test_every_readme_command_still_runs_and_prints_the_shape_shown() -> None:
    rx = _script()
    assert rx.check(rx.README.read_text()) == []
