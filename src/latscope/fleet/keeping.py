"""A sample file measured on another host, kept in the store as a run tagged with that host."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .. import env as envmod
from .. import samples
from .._version import __version__
from ..errors import BadInput
from ..files import atomic_write, open_regular
from ..runner import command_line, keep, open_store

if TYPE_CHECKING:
    from ..runs import Run
    from ..store import Store


def _now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def import_fetched(
    store: str | os.PathLike[str] | Store | None,
    path: str | os.PathLike[str],
    host: str,
    tags: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
    probe_command: str | None = None,
) -> Run:
    """Keep the sample file ``path``, fetched from ``host``, as a run in ``store``: the file
    checked whole (`Run`), copied into a new run's partial directory, its summary computed and
    the run committed by the store's one path (`runner.keep`), with ``tags`` and
    ``host`` (the inventory hostname) among its tags; the environment is the probe's record
    in the file's header (the host's, not this machine's). ``warnings``: the probe's warning
    lines on the host; ``probe_command``: its command line there. BadInput (one line) when
    the file is not a complete sample file."""
    from ..runs import Run

    src = Run(path)  # the whole file checked before a run is begun
    st = open_store(store)
    with st.transaction(src.benchmark) as t:
        with (
            open_regular(path, "a sample file", samples.FILE_LIMIT, follow=False) as f,
            atomic_write(t.samples_path, replace=False) as out,
        ):
            shutil.copyfileobj(f, out, 1 << 20)
        measured = Run(t.samples_path)  # the copy, read back: the run kept is what was checked
        if measured.meta.get("benchmark") != src.benchmark:
            raise BadInput(f"{path}: changed while it was being kept")
        meta: dict[str, Any] = {
            "id": t.id,
            "created_utc": _now_utc(),
            "benchmark": measured.benchmark,
            "params": measured.meta.get("params"),
            "params_given": None,
            "clock": (measured.meta.get("clock") or {}).get("name"),
            "command": command_line(),
            "probe_command": probe_command,
            "latscope_version": __version__,
            "probe_warnings": list(warnings),
            "tags": {**dict(tags or {}), "host": host},
            "env": envmod.of_header(measured.meta),
            "status": "complete",
        }
        return keep(t, meta, measured)
