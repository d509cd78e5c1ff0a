"""How long a big CSV takes to import and show, and how much memory each command needs.

    python bench/big_import.py [--rows 5000000] [--store DIR] [--csv FILE] [--keep] [--no-report]

Writes a synthetic CSV of ``--rows`` rows (an ``iteration`` counter, which the importer skips,
``open_us`` with three decimals and ``read_ns`` as whole nanoseconds: log-normal latencies with
a few slow outliers), then runs, each as a process of its own, into a fresh store:

- ``latscope import FILE.csv``
- ``latscope show last``
- ``latscope show last --full``
- ``latscope report last --html FILE`` (unless ``--no-report``)

and prints each command's wall time and peak resident memory (the child's own, from
``os.wait4``). The figures belong to this machine at this moment: run it twice before
believing a difference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl


def write_csv(path: Path, rows: int, seed: int = 1) -> None:
    """A CSV of ``rows`` rows in chunks of a million (the writer's memory stays small)."""
    rng = np.random.default_rng(seed)
    chunk = 1_000_000
    with open(path, "wb") as f:
        for start in range(0, rows, chunk):
            k = min(chunk, rows - start)
            open_us = np.round(rng.lognormal(np.log(2.5), 0.3, k), 3)
            open_us[rng.random(k) < 1e-4] *= 40.0  # rare slow calls
            read_ns = np.rint(rng.lognormal(np.log(800.0), 0.2, k)).astype(np.int64)
            df = pl.DataFrame(
                {
                    "iteration": np.arange(start, start + k, dtype=np.int64),
                    "open_us": open_us,
                    "read_ns": read_ns,
                }
            )
            df.write_csv(f, include_header=start == 0, float_precision=3)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit status, last line of stderr) of one command."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read() if p.stderr else b""
    _pid, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return wall, usage.ru_maxrss / 1024.0, p.returncode, last[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--store", help="the store to import into (default: a new temporary one)")
    ap.add_argument("--csv", help="the CSV to write (or reuse, when it exists)")
    ap.add_argument("--keep", action="store_true", help="keep the CSV and the store")
    ap.add_argument("--no-report", action="store_true", help="skip report --html")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="big-import-"))
    csv = Path(args.csv) if args.csv else work / f"latencies-{args.rows}.csv"
    store = Path(args.store) if args.store else work / "store"
    try:
        if not csv.exists():
            t0 = time.perf_counter()
            write_csv(csv, args.rows)
            print(
                f"wrote {csv.name}: {args.rows} rows, {csv.stat().st_size / 2**20:.0f} MiB "
                f"in {time.perf_counter() - t0:.1f} s"
            )
        env = {**os.environ, "LATSCOPE_STORE": str(store), "COLUMNS": "100"}
        exe = shutil.which("latscope") or "latscope"
        steps = [
            ("import", [exe, "import", str(csv)]),
            ("show last", [exe, "show", "last"]),
            ("show last --full", [exe, "show", "last", "--full"]),
        ]
        if not args.no_report:
            steps.append(
                ("report last --html", [exe, "report", "last", "--html", str(work / "report.html")])
            )
        print(f"{'command':<22} {'wall s':>8} {'peak RSS MiB':>13}")
        failed = 0
        for label, argv in steps:
            wall, rss, rc, last = timed(argv, env)
            note = "" if rc == 0 else f"  exit {rc}: {last}"
            failed += rc != 0
            print(f"{label:<22} {wall:>8.2f} {rss:>13.0f}{note}", flush=True)
        return 1 if failed else 0
    finally:
        if args.keep:
            print(f"kept: {csv} and {store}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
