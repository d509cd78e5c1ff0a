"""Shared fixtures: the probe binary, a private store, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _installed_probe() -> str:
    from latscope import probe as _probe

    return _probe.probe_path()


@pytest.fixture(scope="session")
def probe() -> str:
    """The probe under test: the sanitizer build when the Makefile provides one."""
    san = os.environ.get("LATSCOPE_SAN_PROBE")
    if san and os.access(san, os.X_OK):
        return san
    return _installed_probe()


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "store"
    monkeypatch.setenv("LATSCOPE_STORE", str(d))
    return d


class CLI:
    def __init__(self, store: Path) -> None:
        self.store = store

    def __call__(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LATSCOPE_STORE": str(self.store), "COLUMNS": "200"}
        return subprocess.run(
            [sys.executable, "-m", "latscope.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )


@pytest.fixture()
def cli(store: Path) -> CLI:
    return CLI(store)


def run_probe(probe: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    return subprocess.run([probe, *args], capture_output=True, text=True, timeout=timeout, env=env)


is_root = os.geteuid() == 0


def children(pid: int) -> list[int]:
    """The direct children of every thread of process `pid` (from /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            out += [int(x) for x in task.read_text().split()]
        except OSError:
            pass
    return out


def procs_mentioning(text: str) -> list[int]:
    """Live (not zombie) processes whose command line contains `text`."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (p / "status").read_text()
        except OSError:
            continue
        if text in cmd and "zombie" not in state:
            out.append(int(p.name))
    return out
