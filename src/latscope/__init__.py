"""latscope: measure what operating-system primitives cost, and tell the truth about the numbers.

>>> import latscope
>>> r = latscope.run("pipe", cpus="0,1", n=10000)
>>> r.summary()          # polars DataFrame, one row per timed column
>>> r.samples            # polars DataFrame, one row per iteration (ns)
>>> r.meta["clock"]      # dict: the clock, its overhead and resolution, ...
>>> latscope.runs()      # polars DataFrame: every kept run's summary, one row per column
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .record import Run
    from .store import Store

__all__ = ["__version__", "run", "load", "runs", "benchmarks", "Run"]


def run(
    bench: str,
    params: dict[str, Any] | None = None,
    *,
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    progress: Callable[[int, int], None] | None = None,
    **kw: Any,
) -> Run:
    """Run benchmark `bench` (parameters as a dict and/or keywords) and keep it in the store.

    Raises latscope.errors.LatscopeError (with .exit_code) on bad input or failure."""
    from .measure.runner import measure

    return measure(
        bench,
        {**(params or {}), **kw},
        n=n,
        warmup=warmup,
        clock=clock,
        store=store,
        progress=progress,
    )


def load(ref: str | os.PathLike[str], store: str | os.PathLike[str] | Store | None = None) -> Run:
    """A kept run by id (or unique part of it, or 'last'), or a sample file by path."""
    from .measure.runner import load as _load

    return _load(ref, store)


def runs(
    store: str | os.PathLike[str] | Store | None = None,
    benchmark: str | None = None,
    host: str | None = None,
) -> Any:
    """Every kept run of the store (``benchmark``, ``host``: only those) as one polars
    DataFrame, one row per run and column: the run id, when it was made, the benchmark, the
    host, its parameters (given and resolved) and tags, n and the summary's figures (ns), from
    the store's summary table (docs/store.md), in the order the runs were made."""
    from .measure.runner import open_store
    from .store.catalog import catalog

    return catalog(open_store(store), benchmark=benchmark, host=host).rows


def benchmarks() -> list[dict[str, Any]]:
    """The probe's catalogue of benchmarks (parameters, defaults, units, columns)."""
    from . import probe

    return list(probe.catalogue()["benchmarks"])


def __dir__() -> list[str]:
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    if name == "Run":
        from .record import Run

        return Run
    raise AttributeError(name)
