"""Where runs are kept: one directory per run under a store directory.

Layout (docs/store.md):

    STORE/runs/<run id>/run.json       what was run, when, where (metadata, environment)
    STORE/runs/<run id>/samples.lss    the probe's sample file, untouched
    STORE/runs/.partial-<run id>/      a run being measured; renamed when complete

A run directory appears by an atomic rename once everything in it is written, so two
processes can add runs to one store at the same time, and a run killed half-way never
looks complete.  Files that are not runs are reported and skipped, never fatal.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import BadInput

RUN_FILE = "run.json"
SAMPLES_FILE = "samples.lss"
PARTIAL_PREFIX = ".partial-"


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


class Store:
    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_location()

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    def ensure(self) -> None:
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BadInput(f"cannot create the store {self.root}: {e.strerror}") from None
        if not os.access(self.runs_dir, os.W_OK):
            raise BadInput(f"the store {self.root} is not writable; use --store DIR")

    # ---------------------------------------------------------------- writing

    def new_run_id(self, bench: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        return f"{stamp}-{bench}-{secrets.token_hex(2)}"

    def begin(self, bench: str) -> tuple[str, Path]:
        """A fresh partial directory for a run being measured."""
        self.ensure()
        for _ in range(100):
            run_id = self.new_run_id(bench)
            partial = self.runs_dir / f"{PARTIAL_PREFIX}{run_id}"
            try:
                partial.mkdir()
            except FileExistsError:
                continue
            return run_id, partial
        raise BadInput(f"cannot allocate a run directory in {self.runs_dir}")

    def commit(self, run_id: str, partial: Path, meta: dict[str, Any]) -> Path:
        """Write run.json and make the run visible (atomic rename)."""
        tmp = partial / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1, sort_keys=False))
        os.replace(tmp, partial / RUN_FILE)
        final = self.runs_dir / run_id
        os.rename(partial, final)
        return final

    def abandon(self, partial: Path) -> None:
        shutil.rmtree(partial, ignore_errors=True)

    # ---------------------------------------------------------------- reading

    def run_dirs(self, skipped: list[Skipped] | None = None) -> Iterator[Path]:
        if not self.runs_dir.is_dir():
            return
        for d in sorted(self.runs_dir.iterdir()):
            if d.name.startswith(PARTIAL_PREFIX):
                if skipped is not None:
                    skipped.append(Skipped(d, "partial run (killed or still running)"))
                continue
            if d.name.startswith("."):
                continue
            if not d.is_dir() or not (d / RUN_FILE).is_file():
                if skipped is not None:
                    skipped.append(Skipped(d, "not a latscope run"))
                continue
            yield d

    def read_meta(self, d: Path) -> dict[str, Any]:
        try:
            meta = json.loads((d / RUN_FILE).read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BadInput(f"{d / RUN_FILE}: unreadable run metadata ({e})") from None
        if not isinstance(meta, dict) or "id" not in meta:
            raise BadInput(f"{d / RUN_FILE}: not latscope run metadata")
        return meta

    def list_meta(self, skipped: list[Skipped] | None = None) -> list[dict[str, Any]]:
        out = []
        for d in self.run_dirs(skipped):
            try:
                out.append(self.read_meta(d))
            except BadInput as e:
                if skipped is not None:
                    skipped.append(Skipped(d, str(e)))
        out.sort(key=lambda m: (m.get("created_utc", ""), m["id"]))
        return out

    def resolve(self, ref: str) -> Path:
        """A run directory from an id, a unique id prefix, 'last', or a path."""
        p = Path(ref)
        if p.is_dir() and (p / RUN_FILE).is_file():
            return p
        if ref in ("last", "latest"):
            metas = self.list_meta()
            if not metas:
                raise BadInput(f"the store {self.root} has no runs yet")
            return self.runs_dir / metas[-1]["id"]
        exact = self.runs_dir / ref
        if ref and not ref.startswith(".") and exact.is_dir() and (exact / RUN_FILE).is_file():
            return exact
        matches = [d for d in self.run_dirs() if d.name.startswith(ref) or ref in d.name]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise BadInput(f"no run '{ref}' in the store {self.root}; 'latscope ls' lists the runs")
        names = ", ".join(d.name for d in matches[:5])
        raise BadInput(f"'{ref}' matches {len(matches)} runs ({names}...); give more of the id")
