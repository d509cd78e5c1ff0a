"""How fast the lab answers: whole-process wall times of the commands a user types most.

    python bench/lab_speed.py [--reps 5] [--runs 1000] [--store DIR]

Each command is a new process (the `latscope` this Python runs, output to a pipe at 80
columns), repeated ``--reps`` times; the minimum and the median are printed, in seconds:

- ``latscope run syscall``: the defaults, in a fresh store (probe, analysis and keeping);
- ``latscope show last``: the run just made;
- ``latscope report last --html``: the same run, one HTML page with its figures;
- ``latscope ls``: a store of ``--runs`` runs (bench/store_scale.py makes it; the first
  read, which may index it, is not timed).

Goals (issue 23, a quiet 2-CPU VM): show <= 0.3 s, ls (1,000 runs) <= 0.5 s, report <= 3 s,
run syscall <= 2.5 s. The load average is printed: figures taken under load are not goals'.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(args: list[str], reps: int) -> list[float]:
    env = {**os.environ, "COLUMNS": "80"}
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from latscope._entry import main; "
                "sys.argv[0] = 'latscope'; sys.exit(main())",
                *args,
            ],
            capture_output=True,
            env=env,
            check=False,
        )
        out.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"latscope {' '.join(args)} failed: {r.stderr.decode()[-800:]}")
    return out


def line(name: str, goal: float, times: list[float]) -> str:
    lo, med = min(times), statistics.median(times)
    ok = "met" if med <= goal else "NOT met"
    return f"{name:34s} min {lo:6.2f} s  median {med:6.2f} s  goal {goal:.1f} s: {ok}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="processes per command (default 5)")
    ap.add_argument("--runs", type=int, default=1000, help="runs in the store ls reads")
    ap.add_argument("--store", type=Path, help="an existing store for ls (else one is made)")
    ap.add_argument("--only", choices=("run", "show", "report", "ls"), action="append")
    a = ap.parse_args()
    only = set(a.only or ("run", "show", "report", "ls"))
    tmp = Path(tempfile.mkdtemp(prefix="latscope-speed-"))
    lines = []
    try:
        store = tmp / "store"
        if only & {"run", "show", "report"}:
            reps = a.reps
            t = timed(["run", "syscall", "--store", str(store)], reps)
            if "run" in only:
                lines.append(line("latscope run syscall", 2.5, t))
        if "show" in only:
            t = timed(["show", "last", "--store", str(store)], a.reps)
            lines.append(line("latscope show last", 0.3, t))
        if "report" in only:
            t = timed(
                ["report", "last", "--store", str(store), "--html", str(tmp / "r.html"), "--force"],
                max(2, a.reps // 2 + 1),
            )
            lines.append(line("latscope report last --html", 3.0, t))
        if "ls" in only:
            big = a.store
            if big is None:
                sys.path.insert(0, str(HERE))
                from store_scale import make_store

                big = tmp / "big"
                print(f"making a store of {a.runs} runs ...", flush=True)
                make_store(big, a.runs)
            timed(["ls", "--store", str(big)], 1)  # the first read may index it
            t = timed(["ls", "--store", str(big)], a.reps)
            lines.append(line(f"latscope ls ({a.runs:,} runs)", 0.5, t))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for x in lines:
        print(x)
    print(f"load average (1 min) {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
