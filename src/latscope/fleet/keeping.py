"""A sample file measured on another host, kept in the store as a run tagged with that host."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..measure.runner import import_samples

if TYPE_CHECKING:
    from ..record import Run
    from ..store import Store


def import_fetched(
    store: str | os.PathLike[str] | Store | None,
    path: str | os.PathLike[str],
    host: str,
    tags: Mapping[str, Any] | None = None,
    warnings: Sequence[str] = (),
    probe_command: str | None = None,
) -> Run:
    """Keep the sample file ``path``, fetched from ``host``, as a run in ``store``: the one
    import path (`runner.import_samples`: the file checked whole, copied into a new run and
    checked again, kept by `runner.keep`), kept under ``host`` (the inventory hostname; also
    among its ``tags``); the environment is the probe's record in the file's header (the
    host's, not this machine's). ``warnings``: the probe's warning lines on the host;
    ``probe_command``: its command line there. BadInput (one line) when the file is not a
    complete sample file."""
    return import_samples(
        path,
        store,
        tags={**dict(tags or {}), "host": host},
        host=host,
        warnings=warnings,
        probe_command=probe_command,
    )
