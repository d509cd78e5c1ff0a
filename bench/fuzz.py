#!/usr/bin/env python3
"""Fuzz the sample-file loader and the CSV importer for minutes (the targets: tests/fuzz.py).

The property: for any input the reader returns a valid result or the project's error in one
line (LatscopeError), never another exception, and answers within fuzz.TIME_BOUND seconds.
Inputs come from hypothesis in chunks, each chunk under its own seed (printed with a failure,
so it can be run again); a failing input is shrunk by hypothesis and shown. Prints, per target,
how long it ran, how many inputs it tried (how many were read and how many refused) and the
number of distinct failures (by exception type and the line that raised it): 0 expected.
An input that takes longer than fuzz.TIME_BOUND is a failure (`fuzz.Hang`); one stuck in
native code, where that alarm cannot interrupt it, for twice as long ends the run (exit 3)
with the input printed. Exit status: 0 without failures, 1 with.

    PYTHONPATH=src nice -n 19 python bench/fuzz.py --minutes 10 --target all

The probe's own files are among the seeds of the loader: --probe, else $LATSCOPE_PROBE, else
the one installed with the latscope package (without one, the Python writer's files only).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

import fuzz  # noqa: E402

SRC = str(Path(fuzz.__file__).resolve().parent.parent / "src")


def probe_seeds(probe: str | None, d: Path) -> list[bytes]:
    """Files of the real probe: a ping-pong, a syscall and a file run (none without a probe)."""
    if probe is None:
        try:
            from latscope import probe as _probe

            probe = _probe.probe_path()
        except Exception as e:  # no probe here: the Python writer's seeds only
            print(f"no probe ({e}); seeds: the Python writer's files only")
            return []
    out = []
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0"}
    for bench, params in (
        ("pipe", ["-p", "mode=threads"]),
        ("syscall", []),
        ("file", ["-p", f"dir={d}"]),
    ):
        f = d / f"{bench}.lss"
        r = subprocess.run(
            [probe, bench, "-n", "40", *params, "-o", str(f)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        if r.returncode == 0:
            out.append(f.read_bytes())
        else:
            print(f"probe {bench} failed ({r.stderr.strip()[:100]}); not a seed")
    return out


def where(e: BaseException) -> str:
    """The innermost line of latscope or the targets that the exception passed through."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frames if f.filename.startswith(SRC) or f.filename == fuzz.__file__]
    f = (ours or frames or [None])[-1]
    return f"{Path(f.filename).name}:{f.lineno}" if f else "?"


class Target:
    """One target: its strategy, the call on one input, and what came of them."""

    def __init__(self, name: str, strategy: Any, call: Any) -> None:
        self.name, self.strategy, self.call = name, strategy, call
        self.tried = 0
        self.outcomes: Counter[str] = Counter()
        self.failures: dict[tuple[str, str], str] = {}
        self.current: tuple[float, Any] | None = None  # the input being tried, since when

    def watch(self) -> None:
        """A thread that ends the process when one input runs past twice fuzz.TIME_BOUND: a
        hang inside native code, which the SIGALRM of fuzz.time_bound cannot interrupt."""

        def watchdog() -> None:
            while True:
                time.sleep(1.0)
                cur = self.current
                if cur is not None and time.monotonic() - cur[0] > 2 * fuzz.TIME_BOUND:
                    print(f"\n{self.name}: HANG (no answer in {2 * fuzz.TIME_BOUND:g} s) on")
                    print(repr(cur[1])[:3000], flush=True)
                    os._exit(3)

        threading.Thread(target=watchdog, daemon=True).start()

    def chunk(self, chunk_seed: int, examples: int) -> None:
        @settings(
            max_examples=examples,
            database=None,
            deadline=None,
            derandomize=False,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink],
        )
        @seed(chunk_seed)
        @given(self.strategy)
        def one(x: Any) -> None:
            self.tried += 1
            self.current = (time.monotonic(), x)
            try:
                self.outcomes[self.call(x)] += 1
            finally:
                self.current = None

        try:
            one()
        except Exception as e:
            key = (type(e).__name__, where(e))
            if key not in self.failures:
                notes = "\n".join(getattr(e, "__notes__", []))
                self.failures[key] = f"seed {chunk_seed}: {type(e).__name__}: {e}\n{notes}"
                print(f"\n{self.name}: FAILURE {key[0]} at {key[1]} (seed {chunk_seed})")
                print(self.failures[key][:3000], flush=True)

    def run(self, seconds: float, examples: int, first_seed: int) -> float:
        start = time.monotonic()
        s = first_seed
        while time.monotonic() - start < seconds:
            self.chunk(s, examples)
            s += 1
        return time.monotonic() - start

    def line(self, elapsed: float) -> str:
        return (
            f"{self.name}: {elapsed / 60:.1f} min, {self.tried:,} inputs tried "
            f"({self.outcomes['ok']:,} read, {self.outcomes['refused']:,} refused), "
            f"{len(self.failures)} distinct failures"
        )


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--minutes", type=float, default=1.0, help="per target (default 1)")
    ap.add_argument("--target", choices=["samples", "csv", "all"], default="all")
    ap.add_argument("--probe", help="the probe whose files seed the loader's inputs")
    ap.add_argument("--chunk", type=int, default=500, help="inputs per hypothesis seed")
    ap.add_argument("--seed", type=int, default=0, help="the first chunk's seed")
    args = ap.parse_args()
    if not args.minutes > 0:
        ap.error("--minutes: give a positive number")

    with tempfile.TemporaryDirectory(
        prefix="latscope-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    ) as tmp:
        d = Path(tmp)
        f_lss, f_csv, out = d / "f.lss", d / "f.csv", d / "imported.lss"

        def load_one(raw: bytes) -> str:
            f_lss.write_bytes(raw)
            return fuzz.load_target(f_lss)

        def csv_one(case: tuple[bytes, str | None, str | None]) -> str:
            f_csv.write_bytes(case[0])
            return fuzz.csv_target(f_csv, case[1], case[2], out)

        targets = []
        if args.target in ("samples", "all"):
            seeds = probe_seeds(args.probe or os.environ.get("LATSCOPE_PROBE"), d)
            seeds += fuzz.python_seeds()
            for raw in seeds:  # the seeds themselves must be read
                assert load_one(raw) == "ok"
            targets.append(Target("samples", fuzz.sample_inputs(seeds), load_one))
        if args.target in ("csv", "all"):
            targets.append(Target("csv", fuzz.csv_inputs(), csv_one))
        results = []
        for t in targets:
            t.watch()
            print(f"{t.name}: fuzzing for {args.minutes:g} min ...", flush=True)
            results.append((t, t.run(args.minutes * 60, args.chunk, args.seed)))
    print()
    for t, elapsed in results:
        print(t.line(elapsed))
    return 1 if any(t.failures for t, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
