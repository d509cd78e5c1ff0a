"""A program the lab runs for an answer is bounded: a sleeper is stopped at the time-out with
every process it started, a flood at the output limit, and one that answers wrongly is one
line; the Python engine's named interpreter (python=) goes through it, for checks and runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import procs_mentioning
from latscope.children import run_bounded
from latscope.errors import Unsupported


def _script(tmp_path: Path, name: str, body: str) -> str:
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def test_a_program_that_never_answers_is_stopped_with_its_children(tmp_path: Path) -> None:
    sleeper = _script(tmp_path, "sleeper", "sleep 60 & sleep 60")
    t0 = time.monotonic()
    with pytest.raises(Unsupported, match="gave no answer within 1 s; it was stopped"):
        run_bounded([sleeper], timeout=1.0)
    assert time.monotonic() - t0 < 5.0
    time.sleep(0.2)
    assert procs_mentioning(str(tmp_path)) == [] and not [
        pid for pid in os.listdir("/proc") if pid.isdigit() and _is_sleep_of(pid, tmp_path)
    ]


def _is_sleep_of(pid: str, tmp_path: Path) -> bool:
    try:
        return str(tmp_path) in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def test_a_flood_is_stopped_at_the_limit_and_an_answer_comes_whole(tmp_path: Path) -> None:
    flood = _script(tmp_path, "flood", "yes")
    with pytest.raises(Unsupported, match="wrote more than 1 MiB"):
        run_bounded([flood], timeout=20.0, limit=1 << 20)
    ok = run_bounded(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10.0)
    assert (ok.returncode, ok.stdout, ok.stderr) == (3, "out\n", "err\n")
    with pytest.raises(Unsupported, match="cannot run /no/such/program"):
        run_bounded(["/no/such/program"])


def test_a_named_interpreter_that_is_not_one_is_one_line(cli, store: Path, tmp_path: Path):
    for prog, words in (
        ("/bin/true", "did not answer as latscope's engine does"),
        (_script(tmp_path, "flood", "yes"), "wrote more than 4 MiB"),
    ):
        r = cli("run", "py_spin", "-p", f"python={prog}", "-n", "20")
        assert r.returncode == 3, r.stderr
        assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not list((store / "runs").glob("*")) if (store / "runs").exists() else True
