"""Synthetic runs for tests: sample files written with ``samples.write`` into a store, no probe
needed. Values are in ns; they are stored as integer ticks of ``ns_per_tick``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from latscope import samples
from latscope.runs import Run
from latscope.store import SAMPLES_FILE, Store


def lognormal(n: int, median_ns: float, sigma: float = 0.3, seed: int = 0) -> np.ndarray:
    """Independent log-normal latencies with the given median (ns)."""
    rng = np.random.default_rng(seed)
    return median_ns * np.exp(sigma * rng.standard_normal(n))


def make_run(
    store: Path | str,
    columns: dict[str, np.ndarray],
    *,
    bench: str = "synthetic",
    ns_per_tick: float = 0.001,
    env: dict[str, Any] | None = None,
    run_env: dict[str, Any] | None = None,
    resolution_ns: float = 1.0,
    segments: list[int] | None = None,
    params: dict[str, Any] | None = None,
    header: dict[str, Any] | None = None,
) -> Run:
    """A complete run in ``store`` with the given duration columns (ns, equal lengths);
    ``segments``: samples per worker process (the header's ``workers``); ``header``: entries
    added to (or replacing) the sample file's header."""
    n = len(next(iter(columns.values())))
    ticks = {
        name: np.rint(np.asarray(v) / ns_per_tick).astype(np.int64) for name, v in columns.items()
    }
    t = np.cumsum(np.concatenate([[0.0], np.sum(list(columns.values()), axis=0)[:-1]]))
    ticks = {"t_start": np.rint(t / ns_per_tick).astype(np.int64), **ticks}
    header = {
        "probe": {"version": "test", "compiler": "none"},
        "benchmark": bench,
        "params": params if params is not None else {"kind": "synthetic"},
        "warmup": 0,
        "clock": {
            "name": "mono_raw",
            "ns_per_tick": ns_per_tick,
            "overhead_ns": 20.0,
            "resolution_ns": resolution_ns,
            "getres_ns": 1,
        },
        "columns": [{"name": "t_start", "unit": "ticks", "kind": "time"}]
        + [
            {"name": c, "unit": "ticks", "kind": "duration", "latency": "call", "description": c}
            for c in columns
        ],
        "bench": {},
        "env": env
        or {
            "sysname": "Linux",
            "release": "6.1.0",
            "machine": "x86_64",
            "hostname": "test",
            "cpu_model": "Test CPU",
            "cpus_online": 2,
            "clocksource": "tsc",
        },
        "started_utc": "2026-01-01T00:00:00Z",
        "finished_utc": "2026-01-01T00:00:01Z",
        **(header or {}),
    }
    if segments is not None:
        header["workers"] = [
            {"n": k, "warmup": 0, "pid": 1000 + i, "timed_rusage": {}}
            for i, k in enumerate(segments)
        ]
    st = Store(store)
    run_id, partial = st.begin(bench)
    samples.write(partial / SAMPLES_FILE, header, ticks)
    final = st.commit(
        run_id,
        partial,
        {
            "id": run_id,
            "created_utc": "2026-01-01T00:00:01Z",
            "benchmark": bench,
            "params": header["params"],
            "params_given": {},
            "clock": "mono_raw",
            "latscope_version": "test",
            "probe_warnings": [],
            "tags": {},
            "env": run_env,
            "status": "complete",
        },
    )
    run = Run(final)
    assert run.n == n
    return run
