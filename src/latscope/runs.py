"""Runs: measuring one benchmark with the probe, keeping it in the store, reading it back."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from . import __version__, _probe, samples
from .errors import BadInput
from .store import RUN_FILE, SAMPLES_FILE, Store, summary_frame


class Run:
    """One benchmark run: its samples (polars), its summary (polars) and its metadata (dict).

    `samples` has one row per recorded iteration: `iteration`, `t_start_s` (seconds since the
    first recorded iteration; null for imported samples without times) and one `<column>_ns`
    per timed column, in nanoseconds.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        if p.is_dir():
            self.dir: Path | None = p
            self.sample_path = p / SAMPLES_FILE
            run_meta = json.loads((p / RUN_FILE).read_text()) if (p / RUN_FILE).exists() else {}
        else:
            self.dir = None
            self.sample_path = p
            run_meta = {}
        self._file = samples.load(self.sample_path)
        self.id: str = run_meta.get("id") or self.sample_path.stem
        self.meta: dict[str, Any] = {**self._file.header, "run": run_meta}
        self._summaries: dict[float, pl.DataFrame] = {}

    def __repr__(self) -> str:
        return f"<latscope.Run {self.id} {self.benchmark} n={self.n}>"

    @property
    def benchmark(self) -> str:
        return str(self.meta["benchmark"])

    @property
    def n(self) -> int:
        return int(self.meta["n"])

    @property
    def columns(self) -> list[str]:
        """The timed columns (durations), in the order they were measured."""
        return self._file.duration_columns

    @property
    def derived_columns(self) -> list[str]:
        """Columns computed by the lab: rtt/2, the one-way estimate of a round trip."""
        return ["rtt/2"] if "rtt" in self.columns else []

    @property
    def clock(self) -> dict[str, Any]:
        return dict(self.meta["clock"])

    @property
    def step_ns(self) -> float | None:
        """The clock's granularity (its step) in ns, from the probe's header; None where it
        was not measured (older files, imports that do not state it)."""
        clk = self.meta.get("clock", {})
        v = clk.get("step_ns")
        if v is None and clk.get("resolution_guessed"):
            v = clk.get("resolution_ns")  # imports: the smallest difference between values
        return float(v) if isinstance(v, (int, float)) and v > 0 else None

    def column_step_ns(self, column: str) -> float | None:
        """The step of one column's values: the clock's, halved for rtt/2."""
        s = self.step_ns
        return s / 2.0 if (s and column == "rtt/2") else s

    @property
    def segments(self) -> list[int]:
        """Samples per worker process, in order (the probe's ``workers``); one segment for a
        run measured in a single process."""
        ws = self.meta.get("workers")
        if isinstance(ws, list) and ws:
            sizes = [w.get("n") if isinstance(w, dict) else None for w in ws]
            if all(isinstance(k, int) and k > 0 for k in sizes) and sum(sizes) == self.n:
                return [int(k) for k in sizes]
        return [self.n]

    @property
    def inject_ns(self) -> float:
        """The known delay the probe added to every timed region (0: none; `trust`)."""
        v = self.meta.get("inject_ns")
        return float(v) if isinstance(v, (int, float)) and v > 0 else 0.0

    def values(self, column: str) -> np.ndarray:
        """One timed column in nanoseconds (float64), in iteration order."""
        if column == "rtt/2" and "rtt" in self.columns:
            return self._file.ns("rtt") / 2.0
        if column not in self.columns:
            raise BadInput(
                f"run {self.id} has no column '{column}' (it has: {', '.join(self.columns)})"
            )
        return self._file.ns(column)

    @property
    def has_times(self) -> bool:
        """False for imported samples without iteration start times (t_start is then 0)."""
        return self.meta.get("times", "measured") != "unknown"

    @property
    def imported(self) -> bool:
        return self.benchmark == "imported"

    def times_s(self) -> np.ndarray:
        """Start of each iteration, seconds since the first recorded one (all zero when
        `has_times` is False)."""
        return self._file.ns("t_start") / 1e9

    @cached_property
    def samples(self) -> pl.DataFrame:
        data: dict[str, Any] = {
            "iteration": np.arange(self.n, dtype=np.int64),
            "t_start_s": self.times_s()
            if self.has_times
            else pl.repeat(None, self.n, dtype=pl.Float64, eager=True),
        }
        for c in self.columns:
            data[f"{c}_ns"] = self.values(c)
        return pl.DataFrame(data)

    def summary(self, confidence: float = 0.95) -> pl.DataFrame:
        """One row per timed column: n, min, p50, mean, std, p95, p99, p99.9, max (ns) and
        the confidence interval of the median, with its method and effective sample size."""
        from .summary import column_summary, frame

        if confidence not in self._summaries:
            rows = [
                {
                    "column": c,
                    **column_summary(
                        self.values(c),
                        confidence=confidence,
                        step_ns=self.column_step_ns(c),
                        segments=self.segments,
                    ),
                }
                for c in self.columns + self.derived_columns
            ]
            self._summaries[confidence] = frame(rows)
        return self._summaries[confidence]


def _now_utc() -> str:
    # microseconds: runs made within one second still sort in the order they were made
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def measure(
    bench: str,
    params: Mapping[str, Any] | None = None,
    n: int | None = None,
    warmup: int | None = None,
    clock: str | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    progress: Callable[[int, int], None] | None = None,
    tags: Mapping[str, Any] | None = None,
    env: Mapping[str, Any] | None = None,
    workers: int | None = None,
    inject_ns: float | None = None,
) -> Run:
    """Run one benchmark in the probe and keep the result in the store.

    ``workers``: worker processes (None: the probe's ``--workers auto``, up to 10 with at least
    200 iterations each, decided where each benchmark's default n is known; 1: a single
    process). ``inject_ns``: a known busy-wait added to every timed region (validation, `trust`)."""
    params = dict(params or {})
    _probe.benchmark(bench)  # unknown benchmark: a clear error before anything is created
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
    st = store if isinstance(store, Store) else Store(store)
    if env is None:
        from . import env as envmod

        env = envmod.capture(path=env_path(bench, params))  # cheap: no load sampling
    run_id, partial = st.begin(bench)
    ok = False
    try:
        out = partial / SAMPLES_FILE
        args = _probe.probe_args(
            bench, params, out, n=n, warmup=warmup, clock=clock, workers=w, inject_ns=inject_ns
        )
        created = _now_utc()
        warnings = _probe.run_probe(args, progress=progress)
        measured = Run(out)  # the complete sample file, still in the partial directory
        meta = {
            "id": run_id,
            "created_utc": created,
            "benchmark": bench,
            "params": measured.meta.get("params"),
            "params_given": {k: str(v) for k, v in params.items()},
            "clock": measured.clock.get("name"),
            "command": " ".join(
                shlex.quote(a) for a in [os.path.basename(sys.argv[0])] + sys.argv[1:]
            ),
            "probe_command": " ".join(shlex.quote(a) for a in args[1:]),
            "latscope_version": __version__,
            "probe_warnings": warnings,
            "tags": dict(tags or {}),
            "env": dict(env) if env else None,
            "status": "complete",
        }
        summary = measured.summary()
        final = st.commit(run_id, partial, meta, summary=summary_frame(meta, summary))
        ok = True
    finally:
        if not ok:
            st.abandon(partial)
    run = Run(final)
    run._summaries[0.95] = summary
    return run


def env_path(bench: str, params: Mapping[str, Any]) -> str | None:
    """The directory whose filesystem a run's environment records: the value of the
    benchmark's `path` parameter (file: `dir`), or the probe's default for it ($TMPDIR or
    /tmp) when not given; None for benchmarks without a path parameter."""
    for p in _probe.benchmark(bench).get("params", []):
        if p.get("type") == "path":
            v = params.get(p["name"])
            return str(v) if v not in (None, "") else os.environ.get("TMPDIR") or "/tmp"
    return None


def load(ref: str | os.PathLike[str], store: str | os.PathLike[str] | Store | None = None) -> Run:
    """A run by id (or unique prefix, or 'last') from the store, or from a path."""
    p = Path(ref)
    if p.is_file():
        return Run(p)
    st = store if isinstance(store, Store) else Store(store)
    return Run(st.resolve(str(ref)))
