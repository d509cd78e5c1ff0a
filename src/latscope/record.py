"""A run read back: its samples, summary and metadata, from a run directory of the store or a
sample file.  Measuring and keeping runs is the runner's (measure/runner.py)."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from . import facts as _facts
from . import heap, probe, samples
from .errors import BadInput
from .store.layout import RUN_FILE, SAMPLES_FILE
from .store.meta import read_run
from .summary import column_summary, frame

#: The letters of an interleaved run's arms: A, the baseline, then B, C, ...
ARM_LETTERS = "ABCDEFGH"


def headline(columns: list[str], derived: list[dict[str, Any]]) -> str | None:
    """The figure a benchmark exists for: a column derived as a difference (ctx's switch =
    (ring - pass) / procs) where it has one, else its first column; None without columns."""
    for d in derived:
        if d.get("minus") and d.get("name"):
            return str(d["name"])
    return columns[0] if columns else None


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
            # run.json checked (store.meta): a damaged one is one line, never a TypeError later
            run_meta = read_run(p) if os.path.lexists(p / RUN_FILE) else {}
            if self.sample_path.is_symlink():  # the store reads no run's files through a link
                raise BadInput(f"{self.sample_path}: a symbolic link, not a sample file")
        else:
            self.dir = None
            self.sample_path = p
            run_meta = {}
        self._file = samples.load(self.sample_path)
        self.id: str = run_meta.get("id") or self.sample_path.stem
        self.meta: dict[str, Any] = {**self._file.header, "run": run_meta}
        self._summaries: dict[float, pl.DataFrame] = {}

    @property
    def host(self) -> str | None:
        """The host the run belongs to: its host tag (an import's, a fleet's), else the name
        of the host that measured it (docs/store.md)."""
        from .store.layout import host_of

        return host_of(self.meta["run"]) or host_of({"env": self.env})

    def __repr__(self) -> str:
        return f"<latscope.Run {self.id} {self.benchmark} n={self.n}>"

    @property
    def benchmark(self) -> str:
        return str(self.meta["benchmark"])

    @property
    def n(self) -> int:
        return int(self.meta["n"])

    @property
    def header_checksummed(self) -> bool:
        """Whether the sample file's checksum covers its header too (format 2 on)."""
        return self._file.header_checksummed

    @property
    def columns(self) -> list[str]:
        """The timed columns (durations), in the order they were measured; for a run with
        arms (`arms`), each arm's columns qualified by its letter: ``A:rtt``, ``B:rtt``."""
        if self.arms:
            return [
                f"{ARM_LETTERS[i]}:{c}" for i in range(len(self.arms)) for c in self.base_columns
            ]
        return self._file.duration_columns

    @property
    def base_columns(self) -> list[str]:
        """The sample file's timed columns, unqualified (every arm records the same ones)."""
        return self._file.duration_columns

    @cached_property
    def arms(self) -> list[dict[str, Any]]:
        """The arms of an interleaved run (`latscope ab`): the header's ``arms``, one object per
        arm (benchmark, params, given, inject_ns, n, ...), arm 0 the baseline; empty for a run
        of one scenario."""
        a = self.meta.get("arms")
        if not isinstance(a, list) or not a or "arm" not in self._file.index_columns:
            return []
        return [x if isinstance(x, dict) else {} for x in a]

    def index_columns(self) -> dict[str, np.ndarray]:
        """An interleaved run's ``arm``, ``block`` and ``round`` of every sample (int64)."""
        return {k: self._file.index(k) for k in ("arm", "block", "round")}

    def worker_index(self) -> np.ndarray:
        """The worker process of every sample (0, 1, ...), from the header's ``workers``."""
        seg = self.segments
        return np.repeat(np.arange(len(seg), dtype=np.int64), seg)

    def _arm_of(self, column: str) -> tuple[int, str] | None:
        """(arm index, base column) of an arm-qualified column (``B:rtt``), else None."""
        if not self.arms:
            return None
        letter, sep, base = column.partition(":")
        if not sep or letter not in ARM_LETTERS[: len(self.arms)]:
            return None
        return ARM_LETTERS.index(letter), base

    def _arm_mask(self, arm: int) -> np.ndarray:
        return self._file.index("arm") == arm

    def base_values(self, column: str) -> np.ndarray:
        """One of the sample file's timed columns in ns, every arm's samples in time order."""
        return self._file.ns(column)

    @cached_property
    def _kept_facts(self) -> dict[str, Any] | None:
        """The facts kept with the run (facts.json) when they are current and its own."""
        if self.dir is None:
            return None
        got = _facts.kept(self.dir)
        return got if got is not None and got.get("id") == self.id else None

    @cached_property
    def facts(self) -> dict[str, Any]:
        """Everything a view shows of the run (`latscope.facts`): those kept with it, else
        built now from its samples and kept where the store allows (a run kept by an older
        latscope is upgraded on first read)."""
        if self._kept_facts is not None:
            return self._kept_facts
        from .facts.build import build_facts

        got = build_facts(self)
        if self.dir is not None:  # kept where the store allows (facts.put checks)
            _facts.put(self.dir, got)
        return got

    @cached_property
    def _derived(self) -> dict[str, dict[str, Any]]:
        kept = self._kept_facts  # the catalogue's entry as it was when the run was kept
        if kept is not None:
            out = {c["name"]: dict(c["meta"]) for c in kept["columns"] if c["derived"]}
            if all(self._derivable(d) for d in out.values()):
                return out  # else a damaged or foreign facts.json: the catalogue says
        ds = probe.derived_columns(self.benchmark, self.columns)
        return {str(d["name"]): d for d in ds if self._derivable(d)}

    def _derivable(self, d: dict[str, Any]) -> bool:
        """Whether a derived column's entry can be computed here: from the run's recorded
        columns (``from``, less ``minus`` where it has one), divided by a positive number."""
        minus = d.get("minus")
        return (
            d.get("from") in self.base_columns
            and (minus is None or (minus in self.base_columns and minus != d.get("from")))
            and self._divisor(d) is not None
        )

    def _divisor(self, d: dict[str, Any]) -> float | None:
        """What a derived column is divided by: its ``divide_by``, or the run's value of the
        parameter its ``divide_by_param`` names (ctx's procs); None where neither is a
        positive number."""
        by = d.get("divide_by")
        name = d.get("divide_by_param")
        if name is not None:
            by = (self.meta.get("params") or {}).get(str(name))
        if isinstance(by, (int, float)) and not isinstance(by, bool) and by > 0:
            return float(by)
        return None

    @property
    def derived_columns(self) -> list[str]:
        """Columns computed by the lab from a recorded one, as the probe's catalogue defines
        them (``derived_columns``: rtt/2 = rtt / 2, the one-way estimate of a round trip)."""
        return list(self._derived)

    @property
    def headline(self) -> str | None:
        """The column the run exists for (`headline`): what a report shows first."""
        return headline(self.all_columns, list(self._derived.values()))

    @property
    def all_columns(self) -> list[str]:
        """The timed columns, then the derived ones (rtt/2)."""
        return self.columns + self.derived_columns

    def column_meta(self, column: str) -> dict[str, Any]:
        """What the run says about a column: the header's entry of a timed column; for a
        derived one its catalogue entry (name, from, divide_by, formula, latency, ...)."""
        if column in self._derived:
            return dict(self._derived[column])
        a = self._arm_of(column)
        if a is not None:
            k, column = a
            for c in self.arms[k].get("columns") or []:
                if isinstance(c, dict) and c.get("name") == column:
                    return dict(c)
        for c in self.meta.get("columns") or []:
            if isinstance(c, dict) and c.get("name") == column:
                return dict(c)
        return {}

    @property
    def env(self) -> dict[str, Any] | None:
        """The environment the run was measured in, in the one schema (docs/store.md): run.json's
        (the probe's record and the lab's capture), else the sample file's own record; None
        when neither records one (imported CSV)."""
        from .env import of_run

        return of_run(self.meta.get("run"), self.meta)

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
        """The step of one column's values: the clock's, divided as the column is (a derived
        column's ``divide_by``: halved for rtt/2)."""
        s = self.step_ns
        d = self._derived.get(column)
        return s / (self._divisor(d) or 1.0) if (s and d) else s

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
        """One timed column in nanoseconds (float64), in iteration order (an arm's column:
        that arm's samples, in time order)."""
        a = self._arm_of(column)
        if a is not None:
            if a[1] not in self.base_columns:
                raise BadInput(f"run {self.id} has no column '{column}'")
            return self._file.ns(a[1])[self._arm_mask(a[0])]
        d = self._derived.get(column)
        if d is not None:  # made in place: one array of the column's size, and the one read
            v = self._file.ns(str(d["from"]))
            if d.get("minus") is not None:
                v -= self._file.ns(str(d["minus"]))
            v /= self._divisor(d) or 1.0
            return v
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

    @property
    def measured_here(self) -> bool:
        """Whether `latscope run` on this machine measures this run's scenario again: not a
        CSV import, not a sample file brought in by `latscope import` or the fleet (another
        machine, another probe), not a run under an emulator or Wine."""
        from .env import emulator

        if self.imported or self.meta["run"].get("imported_from"):
            return False
        return emulator(self.env) is None

    def column_segments(self, column: str) -> list[int]:
        """Samples per worker process of one column: `segments`, or an arm's share of each."""
        a = self._arm_of(column)
        if a is None:
            return self.segments
        counts = np.bincount(
            self.worker_index()[self._arm_mask(a[0])], minlength=len(self.segments)
        )
        return [int(k) for k in counts if k > 0]

    def column_times_s(self, column: str) -> np.ndarray:
        """Start of each of a column's iterations, s since the first recorded one (an arm's
        column: its samples' times on the run's one timeline)."""
        a = self._arm_of(column)
        t = self.times_s()
        return t if a is None else t[self._arm_mask(a[0])]

    def times_s(self) -> np.ndarray:
        """Start of each iteration, seconds since the first recorded one (all zero when
        `has_times` is False)."""
        t = self._file.ns("t_start")
        t /= 1e9  # in place: one array of the column's size
        return t

    @cached_property
    def samples(self) -> pl.DataFrame:
        data: dict[str, Any] = {
            "iteration": np.arange(self.n, dtype=np.int64),
            "t_start_s": self.times_s()
            if self.has_times
            else pl.repeat(None, self.n, dtype=pl.Float64, eager=True),
        }
        data["worker"] = self.worker_index()  # the intervals are made over the workers
        if self.arms:
            idx = self.index_columns()
            data["arm"] = np.array(list(ARM_LETTERS))[idx["arm"]]
            data["block"], data["round"] = idx["block"], idx["round"]
            for c in self.base_columns:
                data[f"{c}_ns"] = self.base_values(c)
            return pl.DataFrame(data)
        for c in self.columns:
            data[f"{c}_ns"] = self.values(c)
        return pl.DataFrame(data)

    def summary(self, confidence: float = 0.95) -> pl.DataFrame:
        """One row per timed column: the run (`summary.IDENTITY`: its id, benchmark and
        parameters, so that the summaries of several runs stack into one frame), then the
        column's n, min, p50, mean, std, p95, p99, p99.9, max (ns) and the confidence interval
        of the median, with its method and effective sample size."""
        import polars as pl

        figures = self._figures(confidence)
        params = " ".join(f"{k}={v}" for k, v in (self.meta.get("params") or {}).items())
        return figures.select(
            pl.lit(self.id, dtype=pl.Utf8).alias("run_id"),
            pl.lit(str(self.benchmark), dtype=pl.Utf8).alias("benchmark"),
            pl.lit(params, dtype=pl.Utf8).alias("params"),
            pl.all(),
        )

    def _figures(self, confidence: float = 0.95) -> pl.DataFrame:
        """`summary` without the run's identity (computed once per confidence level)."""
        kept = self._kept_facts
        if confidence == 0.95 and confidence not in self._summaries and kept is not None:
            self._summaries[confidence] = frame(kept["summary"])  # computed when kept
        if confidence not in self._summaries:
            rows = []
            for c in self.all_columns:
                figures = column_summary(
                    self.values(c),  # read for this call alone: its memory serves the analysis
                    confidence=confidence,
                    step_ns=self.column_step_ns(c),
                    segments=self.column_segments(c),
                    overwrite=True,
                )
                rows.append({"column": c, **figures})
                heap.give_back()  # what the column's analysis left free, before the next one
            self._summaries[confidence] = frame(rows)
        return self._summaries[confidence]
