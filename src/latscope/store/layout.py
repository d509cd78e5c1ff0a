"""The store's layout: the names of its files and directories, and what `Store.scan()`
finds (complete runs, partial runs, entries it skips).

    STORE/runs/<run id>/run.json        what was run, when, where (metadata, environment)
    STORE/runs/<run id>/samples.lss     the probe's sample file, untouched
    STORE/runs/<run id>/summary.parquet the figures of the summary (index.py)
    STORE/runs/.partial-<run id>/       a run being measured; renamed when complete
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RUN_FILE = "run.json"
SAMPLES_FILE = "samples.lss"
SUMMARY_FILE = "summary.parquet"
OWNER_FILE = "owner.json"
PARTIAL_PREFIX = ".partial-"
REMOVING_PREFIX = ".removing-"
#: The files of a run whose state the summary table records (`table.fingerprint`).
RUN_FILES = (RUN_FILE, SAMPLES_FILE, SUMMARY_FILE)


def default_location() -> Path:
    env = os.environ.get("LATSCOPE_STORE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "latscope"


@dataclass
class Skipped:
    path: Path
    why: str

    def line(self) -> str:
        return f"skipped {self.path}: {self.why}"


@dataclass
class StoredRun:
    """A complete run found by `Store.scan()`: its directory and its run.json."""

    dir: Path
    meta: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.meta["id"])


@dataclass
class Partial:
    """A run directory that was never committed: still being measured, or left by a run that
    was killed (or by an interrupted `rm`)."""

    path: Path
    run_id: str
    benchmark: str | None
    state: str  # "running" | "killed" | "removing" | "unknown"
    pid: int | None
    created_utc: str | None

    @property
    def status(self) -> str:
        if self.state == "running":
            return f"partial (running, pid {self.pid})"
        if self.state == "removing":
            return "partial (left by an interrupted rm)"
        if self.state == "unknown":
            return "partial (owner on another host or just starting)"
        return "partial (killed)"


@dataclass
class Scan:
    runs: list[StoredRun] = field(default_factory=list)
    partials: list[Partial] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def host_of(meta: dict[str, Any]) -> str | None:
    """The host a run belongs to: the host tag it was added with (`Store.commit`'s ``host``:
    an import's or a fleet's), else the name of the host that measured it (its environment),
    else None."""
    host = meta.get("host")
    if host is None:
        env = meta.get("env")
        host = env.get("hostname") if isinstance(env, dict) else None
    return None if host is None or host == "" else str(host)


def bench_of_id(run_id: str) -> str | None:
    """The benchmark named in a run id (YYYYmmdd-HHMMSS-<bench>-<hex>)."""
    parts = run_id.split("-")
    if len(parts) < 4:
        return None
    return "-".join(parts[2:-1]) or None


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _iso_mtime(p: Path) -> str | None:
    try:
        t = p.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _kind(st: os.stat_result) -> str | None:
    """What a store entry is when it is not a directory, in words; None for a directory."""
    m = st.st_mode
    if stat.S_ISDIR(m):
        return None
    if stat.S_ISLNK(m):
        return "a symbolic link"
    if stat.S_ISREG(m):
        return "a file"
    if stat.S_ISFIFO(m):
        return "a FIFO"
    return "a device or socket"


def _file_problem(p: Path, what: str) -> str | None:
    """Why ``p`` (a file of a run, looked at without following a link) cannot be read as
    ``what``, or None: missing, a link, a FIFO, a directory."""
    try:
        st = p.lstat()
    except FileNotFoundError:
        return f"{p.name} is missing"
    except OSError as e:
        return f"{p.name} cannot be read ({e.strerror})"
    if stat.S_ISREG(st.st_mode):
        return None
    kind = _kind(st) or "a directory"
    return f"{p.name} is {kind}, not {what}"
