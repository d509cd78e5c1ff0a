"""Making runs: one benchmark measured by the probe and kept in the store, with its summary
computed once, when the run is made; reading a kept run back; the store as the lab opens it.

A run enters the store in one transaction (`Store.transaction`): its sample file is written
into a partial directory, its summary is computed from it (`Run.summary`) and kept beside it as
summary.parquet with the run's metadata, and one rename makes the run visible (`keep`). The
store computes no summaries; the lab's `LabStore` (here) computes the summary of a run kept
without a current one (by an older latscope) the same way, from its samples.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import probe
from . import store as _store
from ._version import __version__
from .errors import BadInput, Interrupted
from .store.index import summary_frame

if TYPE_CHECKING:
    import polars as pl

    from .runs import Run


class LabStore(_store.Store):
    """The store as the lab opens it: a run kept without a current summary.parquet has its
    summary computed from its samples (`summary_rows`), as when a run is made."""

    def summarize(self, run: _store.StoredRun) -> pl.DataFrame:
        from .runs import Run

        return summary_rows(Run(run.dir), run.meta)


def open_store(store: str | os.PathLike[str] | _store.Store | None = None) -> _store.Store:
    """``store`` itself when it is a store, else the lab's `LabStore` at that path (None: the
    default location)."""
    return store if isinstance(store, _store.Store) else LabStore(store)


def summary_rows(run: Run, meta: Mapping[str, Any]) -> pl.DataFrame:
    """The rows of summary.parquet for ``run`` with its run.json ``meta``: `Run.summary()`
    with the run's identity and tags (`store.summary_frame`)."""
    m = dict(meta)
    m.setdefault("params", run.meta.get("params"))
    m.setdefault("clock", (run.meta.get("clock") or {}).get("name"))
    return summary_frame(m, run.summary())


def keep(t: _store.Transaction, meta: dict[str, Any], measured: Run | None = None) -> Run:
    """Commit a run whose sample file is written in ``t``'s partial directory (``measured``:
    that file, read): its summary computed now, kept with ``meta`` (run.json) by one rename;
    the run read back, its summary already known."""
    from .runs import Run

    if measured is None:
        measured = Run(t.samples_path)
    summary = measured.summary()
    rows = summary_rows(measured, meta)
    with probe.held_signals():  # a run is committed whole; a signal meanwhile comes after
        final = t.commit(meta, summary=rows)
    run = Run(final)
    run._summaries[0.95] = summary
    return run


def command_line() -> str:
    """The command this process was started with, as a shell would read it."""
    return " ".join(shlex.quote(a) for a in [os.path.basename(sys.argv[0])] + sys.argv[1:])


def _now_utc() -> str:
    # microseconds: runs made within one second still sort in the order they were made
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def measure(
    bench: str,
    params: Mapping[str, Any] | None = None,
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    store: str | os.PathLike[str] | _store.Store | None = None,
    progress: Callable[[int, int], None] | None = None,
    tags: Mapping[str, Any] | None = None,
    env: Mapping[str, Any] | None = None,
    workers: int | None = None,
    inject_ns: float | None = None,
) -> Run:
    """Run one benchmark in the probe and keep the result in the store.

    ``workers``: worker processes (None: the probe's ``--workers auto``, up to 10 with at least
    200 iterations each, decided where each benchmark's default n is known; 1: a single
    process). ``inject_ns``: a known busy-wait added to every timed region (validation, `trust`).
    ``env``: an environment the caller captured (None: captured here, the load averages before
    the run, the rest after it); either way the probe's record of the environment, in the
    sample file's header, is merged in and the merge is kept in run.json."""
    params = dict(params or {})
    probe.benchmark(bench)  # unknown benchmark: a clear error before anything is created
    if n is not None and n <= 0:
        raise BadInput(f"-n {n}: the number of iterations must be positive")
    if warmup is not None and warmup < 0:
        raise BadInput(f"--warmup {warmup}: must be 0 or more")
    if workers is not None and workers < 1:
        raise BadInput(f"--repeat {workers}: must be 1 or more")
    if inject_ns is not None and inject_ns < 0:
        raise BadInput(f"--inject-ns {inject_ns:g}: must be 0 or more")
    if workers is not None and n is not None and workers > n:
        raise BadInput(f"--repeat {workers}: more worker processes than iterations (-n {n})")
    w: int | str = workers if workers is not None else "auto"
    from . import env as envmod

    st = open_store(store)
    load = envmod.load_now() if env is None else None  # before the run, which would count
    with ExitStack() as stack:
        with probe.held_signals():  # the partial directory is made whole, then a signal acts
            t = stack.enter_context(st.transaction(bench))
        try:
            args = probe.probe_args(
                bench, params, t.samples_path, n, warmup, clock, workers=w, inject_ns=inject_ns
            )
            probe.pause_point("probe")
            created = _now_utc()
            warnings = probe.run_probe(args, progress=progress)
            probe.pause_point("commit")
            from .runs import Run  # polars and numpy: once there is something to read

            measured = Run(t.samples_path)  # the complete sample file, in the partial directory
            # one environment: the probe's record (its header) and what the lab adds to it
            record = envmod.of_header(measured.meta)
            if env is None:
                env = envmod.capture(probe_env=record or {}, load=load)  # cheap: no load sampling
            else:
                env = envmod.merge(dict(env), record)
            meta = {
                "id": t.id,
                "created_utc": created,
                "benchmark": bench,
                "params": measured.meta.get("params"),
                "params_given": {k: str(v) for k, v in params.items()},
                "clock": measured.clock.get("name"),
                "command": command_line(),
                "probe_command": " ".join(shlex.quote(a) for a in args[1:]),
                "latscope_version": __version__,
                "probe_warnings": warnings,
                "tags": dict(tags or {}),
                "env": env,
                "status": "complete",
            }
            return keep(t, meta, measured)
        except BaseException as e:
            # a stop (or a failure): the partial directory goes; a second signal waits for it
            with probe.held_signals(during=e):
                if t.final is None:
                    st.abandon(t.dir)
            if isinstance(e, KeyboardInterrupt) and t.final is None:
                raise Interrupted(signum=probe.signum_of(e)) from None
            raise


def load(
    ref: str | os.PathLike[str],
    store: str | os.PathLike[str] | _store.Store | None = None,
    host: str | None = None,
) -> Run:
    """A run by id (or unique prefix, or 'last') from the store, or from a path: a sample
    file (anything there but a directory is read as one, so a FIFO or a device is refused
    as what it is).  ``host``: a run of that host (`Store.resolve`)."""
    from .runs import Run

    p = Path(ref)
    if os.path.lexists(p) and not p.is_dir():
        return Run(p)
    return Run(open_store(store).resolve(str(ref), host=host))
